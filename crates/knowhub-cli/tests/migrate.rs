//! `knowhub migrate`: a data directory's knowledge base copied into an empty team database
//! through the real binary, then served from there; a second copy is refused.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Output};

use knowhub_pg::PgCluster;

fn knowhub(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .arg("--data-dir")
        .arg(data)
        .args(["--embedder", "off"])
        .args(args)
        .env_remove("KNOWHUB_DATABASE_URL")
        .env_remove("KNOWHUB_API_KEY")
        .env_remove("KNOWHUB_ACCOUNT")
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn migrate_copies_a_data_directory_into_an_empty_team_database() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let note = files.path().join("leave.md");
    std::fs::write(
        &note,
        "# Leave\n\nEvery employee has twenty days of paid leave a year.\n",
    )
    .unwrap();
    let ingest = knowhub(data.path(), &["ingest", note.to_str().unwrap()]);
    assert!(ingest.status.success(), "{:?}", text(&ingest));

    let url = pg.create_database("cli_migrate").unwrap();
    let out = knowhub(data.path(), &["migrate", "--to", &url]);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let documents = stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("documents"))
        .unwrap_or_else(|| panic!("no documents row: {stdout}"));
    assert_eq!(
        documents.split_whitespace().collect::<Vec<_>>(),
        ["documents", "documents", "1", "1", "ok"]
    );
    assert!(!stdout.contains("MISMATCH"), "{stdout}");
    assert!(stdout.contains("every count matches"), "{stdout}");

    // The team database serves what was copied.
    let listed = knowhub(data.path(), &["--database", &url, "--json", "list"]);
    let (stdout, stderr) = text(&listed);
    assert!(listed.status.success(), "{stderr}");
    assert!(stdout.contains("leave.md"), "{stdout}");

    // A second copy would merge into what is there: refused, nothing changed.
    let again = knowhub(data.path(), &["--database", &url, "migrate"]);
    let (stdout, stderr) = text(&again);
    assert!(!again.status.success(), "{stdout}");
    assert!(
        stderr.contains("the team database is not empty: "),
        "{stderr}"
    );

    // An account that does not exist is named.
    let missing = knowhub(
        data.path(),
        &["--account", "nobody", "migrate", "--to", &url],
    );
    let (_, stderr) = text(&missing);
    assert!(!missing.status.success());
    assert!(
        stderr.contains("no knowledge base for account 'nobody'"),
        "{stderr}"
    );
}
