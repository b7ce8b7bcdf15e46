//! `knowhub migrate`: a data directory's knowledge base (one account's SQLite store) copied
//! into an empty team database, then every table counted on both sides.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use knowhub_engine::authz::KeyHash;
use knowhub_engine::{AccountId, DEFAULT_ACCOUNT, DataPaths, EngineConfig};
use knowhub_pg::{Database, ImportOptions, ImportReport, PgError, import_sqlite};

use crate::Place;

#[derive(Debug, clap::Args)]
pub(crate) struct MigrateArgs {
    /// The team database to fill, which must be empty (postgres://user@host/database).
    /// Default: --database / KNOWHUB_DATABASE_URL.
    #[arg(long, value_name = "URL")]
    to: Option<String>,
}

/// Copies the account's store (`default` unless `--account`) and prints the count table; any
/// refusal or mismatch is an error (nothing is kept then).
pub(crate) fn run(
    args: &MigrateArgs,
    place: Place,
    account: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let to = args
        .to
        .clone()
        .or(place.database)
        .context("pass --to postgres://user@host/database: the empty team database to fill")?;
    let dir = match place.data_dir {
        Some(d) => d,
        None => EngineConfig::default_data_dir().context("no data directory: pass --data-dir")?,
    };
    let account = AccountId::new(account.unwrap_or(DEFAULT_ACCOUNT))?;
    let paths = DataPaths::new(&dir, &account);
    if !paths.store.is_file() {
        bail!(
            "no knowledge base for account '{account}' at {}",
            paths.store.display()
        );
    }
    // A store last opened by an older version lacks the newest columns the copy reads.
    paths
        .upgrade_store()
        .context("cannot bring the local knowledge base up to date")?;
    let options = ImportOptions {
        root_key_hash: root_key_hash(&dir)?,
    };
    if !json {
        eprintln!(
            "copying {} (account '{account}') into the team database…",
            paths.store.display()
        );
    }
    let db = Database::connect(&to).context("cannot open the team database")?;
    match import_sqlite(&db, &paths.store, &options) {
        Ok(report) => {
            render(&report, json)?;
            if !json {
                let rows: u64 = report
                    .checks
                    .iter()
                    .filter(|c| !c.table.contains('('))
                    .map(|c| c.postgres)
                    .sum();
                println!(
                    "copied {rows} row(s): every count matches. Serve it with `knowhub serve \
                     --database <URL>` (or KNOWHUB_DATABASE_URL)."
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(PgError::ImportMismatch(report)) => {
            render(&report, json)?;
            bail!(
                "the copy does not match the local store ({}): nothing was kept",
                report.mismatch_summary()
            )
        }
        Err(e) => Err(e).with_context(|| format!("cannot migrate {}", paths.store.display())),
    }
}

/// The root key's hash, where the hub keeps it for a data directory in production mode
/// (`system/root_key.sha256`), so the root key keeps signing in to the team servers.
fn root_key_hash(dir: &Path) -> Result<Option<String>> {
    let path = dir.join("system").join("root_key.sha256");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let hash = KeyHash::try_from(text.trim().to_owned())
                .with_context(|| format!("{}: not a root key hash", path.display()))?;
            Ok(Some(hash.to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The count table (or JSON), then the notes.
fn render(report: &ImportReport, json: bool) -> Result<()> {
    if json {
        let tables: Vec<serde_json::Value> = report
            .checks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "domain": c.domain,
                    "table": c.table,
                    "sqlite": c.sqlite,
                    "postgres": c.postgres,
                    "status": c.status(),
                })
            })
            .collect();
        let out = serde_json::json!({
            "ok": report.mismatches().next().is_none(),
            "tables": tables,
            "notes": report.notes,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let width = report
        .checks
        .iter()
        .map(|c| c.table.chars().count())
        .chain([5])
        .max()
        .unwrap_or(5);
    println!(
        "{:<10} {:<width$} {:>9} {:>10}  CHECK",
        "DOMAIN", "TABLE", "SQLITE", "POSTGRES"
    );
    for c in &report.checks {
        println!(
            "{:<10} {:<width$} {:>9} {:>10}  {}",
            c.domain,
            c.table,
            c.sqlite,
            c.postgres,
            c.status()
        );
    }
    for note in &report.notes {
        println!("note: {note}");
    }
    Ok(())
}
