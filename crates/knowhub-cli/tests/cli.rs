//! End-to-end tests of the `knowhub` binary: real worker processes, real files.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../..")
    .canonicalize()
    .unwrap()
}

fn knowhub(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn ingest_search_status_remove_round_trip() {
    let data = tempfile::tempdir().unwrap();
    let fixtures = repo().join("tests/fixtures");
    let fixtures = fixtures.to_str().unwrap();

    let report = json(&knowhub(data.path(), &["--json", "ingest", fixtures]));
    assert!(report["added"].as_u64().unwrap() >= 8, "{report}");
    assert_eq!(
        report["failed"].as_u64().unwrap(),
        4,
        "the four encrypted fixtures: {report}"
    );

    // English with stemming, Chinese by segmentation; page and heading path come back.
    let hits = json(&knowhub(
        data.path(),
        &["--json", "search", "sick leave certificate"],
    ));
    let top = &hits[0];
    assert!(
        top["path"].as_str().unwrap().ends_with("pdf/simple.pdf"),
        "{hits}"
    );
    assert_eq!(top["page_start"], 2);
    assert!(
        top["evidence_id"].as_str().unwrap().starts_with("doc:"),
        "{top}"
    );
    assert_eq!(top["heading_path"][0], "Sick Leave");
    let hits = json(&knowhub(data.path(), &["--json", "search", "带薪年假"]));
    assert!(
        hits[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("pdf/chinese.pdf"),
        "{hits}"
    );

    // Re-ingest is a no-op.
    let again = json(&knowhub(data.path(), &["--json", "ingest", fixtures]));
    assert_eq!(again["added"], 0);
    assert_eq!(again["updated"], 0);

    let status = json(&knowhub(data.path(), &["--json", "status"]));
    assert_eq!(status["chunks"], status["indexed_chunks"]);
    assert!(
        status["failures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["status"] == "password_required")
    );

    let simple = format!("{fixtures}/pdf/simple.pdf");
    let removed = json(&knowhub(data.path(), &["--json", "remove", &simple]));
    assert_eq!(removed["documents"], 1);
    let hits = json(&knowhub(
        data.path(),
        &["--json", "search", "sick leave certificate"],
    ));
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .all(|h| !h["path"].as_str().unwrap().ends_with("simple.pdf"))
    );

    // Text output names document, page and heading.
    let text = stdout(&knowhub(data.path(), &["search", "two weeks ahead"]));
    assert!(
        text.contains("p. ") || text.contains("no passages"),
        "{text}"
    );
}

#[test]
fn errors_are_one_line_with_nonzero_exit() {
    let data = tempfile::tempdir().unwrap();
    for args in [
        vec!["search", "   "],
        vec!["remove", "/definitely/not/stored.txt"],
        vec!["ingest", "/definitely/not/a/folder"],
    ] {
        let out = knowhub(data.path(), &args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: "), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn robustness_runner_over_project_fixtures() {
    let data = tempfile::tempdir().unwrap();
    let fixtures = repo().join("tests/fixtures");
    let out = knowhub(
        data.path(),
        &["--json", "eval", "robustness", fixtures.to_str().unwrap()],
    );
    let report = json(&out);
    assert_eq!(report["crashed"], 0, "{report}");
    assert_eq!(report["timed_out"], 0, "{report}");
    assert!(report["parsed"].as_u64().unwrap() >= 8);
}

/// The shared hostile corpus: every file parses or fails with a reason; none crashes the
/// parser or hangs. Skips when ../shared is absent (a user's fresh clone).
#[test]
fn robustness_over_shared_corpus() {
    let corpus = repo().join("../shared/corpora/documents");
    if !corpus.is_dir() {
        eprintln!("skipped: {} not found", corpus.display());
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let out = knowhub(
        data.path(),
        &[
            "--json",
            "eval",
            "robustness",
            corpus.to_str().unwrap(),
            "--timeout-secs",
            "60",
        ],
    );
    let report = json(&out);
    eprintln!("{report}");
    assert_eq!(report["crashed"], 0, "{report}");
    assert_eq!(report["timed_out"], 0, "{report}");
    assert!(report["parsed"].as_u64().unwrap() > 300, "{report}");
}

/// `knowhub chat` reads questions from standard input: answers carry citations, follow-ups
/// stay in one conversation, commands work, a bad command does not end the chat.
#[test]
fn chat_keeps_one_conversation_and_answers_commands() {
    use std::io::Write;
    let data = tempfile::tempdir().unwrap();
    let docs = data.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("leave.md"),
        "# Leave policy\n\nEmployees get fifteen days of annual leave per year.\n\n## 年假\n\n员工每年有十五天年假。",
    )
    .unwrap();
    let ingest = knowhub(
        data.path(),
        &["--embedder", "off", "ingest", docs.to_str().unwrap()],
    );
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["--embedder", "off", "--llm", "off", "chat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            "How many days of annual leave do employees get?\n/open 1\n/bogus\n年假有几天？\n/trace\n/quit\nnever asked\n"
                .as_bytes(),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("fifteen days") && text.contains("[1] Leave policy"),
        "{text}"
    );
    assert!(text.contains("十五天"), "{text}");
    assert!(text.contains("unknown command /bogus"), "{text}");
    assert!(text.contains("how this was answered"), "{text}");
    // Both answers belong to the same conversation; nothing after /quit was asked.
    let sessions: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split(" · session ").nth(1))
        .map(|rest| rest.split(' ').next().unwrap_or_default())
        .collect();
    assert_eq!(sessions.len(), 2, "{err}");
    assert_eq!(sessions[0], sessions[1], "{err}");
    assert!(!text.contains("never asked"));
}

/// `--device` reaches the answer model too: a GPU asked for where none is built in (or found)
/// is the CPU, never an error; a misspelled device is a clear error; `bench device` says why
/// it has nothing to compare.
#[test]
fn the_device_flag_covers_the_answer_model_and_falls_back_to_the_cpu() {
    let data = tempfile::tempdir().unwrap();
    let demo = repo().join("assets/demo");
    let report = json(&knowhub(
        data.path(),
        &[
            "--json",
            "--embedder",
            "off",
            "--device",
            "auto",
            "ingest",
            demo.to_str().unwrap(),
        ],
    ));
    assert!(report["added"].as_u64().unwrap() >= 5, "{report}");

    let smollm = repo().join("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    let llm = if smollm.exists() {
        smollm.to_str().unwrap().to_owned()
    } else {
        eprintln!("(SmolLM2 not installed: the extractive mode answers instead)");
        "off".to_owned()
    };
    let ask = knowhub(
        data.path(),
        &[
            "--embedder",
            "off",
            "--device",
            "auto",
            "--llm",
            &llm,
            "ask",
            "How many days of annual leave do new employees get?",
        ],
    );
    assert!(
        ask.status.success(),
        "{}",
        String::from_utf8_lossy(&ask.stderr)
    );
    assert!(
        stdout(&ask).contains("[1]"),
        "a cited answer: {}",
        stdout(&ask)
    );

    let bad = knowhub(
        data.path(),
        &["--device", "gpu9", "--llm", "off", "ask", "anything"],
    );
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("unknown device"), "{err}");

    if !cfg!(any(feature = "cuda", feature = "metal")) {
        let bench = knowhub(data.path(), &["bench", "device"]);
        assert_eq!(bench.status.code(), Some(1));
        let err = String::from_utf8_lossy(&bench.stderr);
        assert!(err.contains("no GPU support"), "{err}");
    }
}
