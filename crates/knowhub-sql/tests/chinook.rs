//! The Chinook sample database from `shared/corpora/sql/chinook` (skipped with a message when
//! the corpus is absent): introspection, every gold query of the DeepAgents text-to-SQL set
//! through `validate` + `execute`.
//! `cargo test -p knowhub-sql --test chinook -- --nocapture` prints the counts.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use knowhub_sql::{Policy, execute, introspect, validate};
use serde::Deserialize;

#[derive(Deserialize)]
struct Gold {
    id: u32,
    gold_sql: String,
    n_rows: usize,
    columns: Vec<String>,
}

fn corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../../../shared/corpora/sql/chinook");
    if dir.join("Chinook_Sqlite.sqlite").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: Chinook corpus not found at {} (it lives in the shared/ folder beside the workspace)",
            dir.display()
        );
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        None
    }
}

/// Room for the largest gold result (6,580 rows) so that row counts can be compared exactly.
fn wide_policy() -> Policy {
    Policy {
        limit: 10_000,
        max_result_bytes: 64 * 1024 * 1024,
        ..Policy::default()
    }
}

#[test]
fn chinook_introspection_and_gold_queries() {
    let Some(dir) = corpus() else { return };
    let db = dir.join("Chinook_Sqlite.sqlite");
    let schema = introspect(&db, 3).unwrap();
    let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Album",
            "Artist",
            "Customer",
            "Employee",
            "Genre",
            "Invoice",
            "InvoiceLine",
            "MediaType",
            "Playlist",
            "PlaylistTrack",
            "Track"
        ]
    );
    assert_eq!(schema.table("track").unwrap().row_count, Some(3503));

    let golds: Vec<Gold> = serde_json::from_str(
        &std::fs::read_to_string(
            dir.join("deepagents_chinook_text2sql.gold_results__latest_db.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let default = Policy::default();
    let wide = wide_policy();
    let (mut validated, mut executed, mut exact_rows, mut capped) = (0, 0, 0, 0);
    for g in &golds {
        let q = validate(&g.gold_sql, &schema, &default)
            .unwrap_or_else(|e| panic!("#{} {}: {e}", g.id, g.gold_sql));
        validated += 1;
        assert!(q.sql().contains(" LIMIT "), "#{}: {}", g.id, q.sql());
        let r = execute(&db, &q, &default).unwrap_or_else(|e| panic!("#{} {}: {e}", g.id, q.sql()));
        executed += 1;
        assert_eq!(r.rows.len(), g.n_rows.min(50), "#{} {}", g.id, q.sql());
        assert_eq!(r.columns, g.columns, "#{}", g.id);
        if g.n_rows > 50 {
            capped += 1;
            assert!(r.truncated, "#{}", g.id);
        }
        // Without the cap, the rewritten query returns exactly the gold row count.
        let q = validate(&g.gold_sql, &schema, &wide).unwrap();
        let r = execute(&db, &q, &wide).unwrap();
        assert_eq!(r.rows.len(), g.n_rows, "#{} {}", g.id, q.sql());
        exact_rows += 1;
    }
    println!(
        "gold queries: {} total, {validated} validated, {executed} executed under LIMIT 50 \
         ({capped} capped at 50), {exact_rows} with the exact gold row count under a wide limit",
        golds.len()
    );
    assert_eq!(golds.len(), 78);
    assert_eq!(validated, 78);
}
