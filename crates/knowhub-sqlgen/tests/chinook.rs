//! The template path over the Chinook sample database from `shared/corpora/sql/chinook`
//! (skipped with a message when the corpus is absent), scored by execution accuracy against
//! the DeepAgents text-to-SQL set's gold queries.
//! `cargo test -p knowhub-sqlgen --test chinook -- --nocapture` prints the counts.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use knowhub_sql::{Policy, execute, introspect, results_match, validate};
use knowhub_sqlgen::template_sql;
use serde::Deserialize;

#[derive(Deserialize)]
struct Gold {
    id: u32,
    question: String,
    gold_sql: String,
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
fn chinook_template_execution_accuracy() {
    let Some(dir) = corpus() else { return };
    let db = dir.join("Chinook_Sqlite.sqlite");
    let schema = introspect(&db, 5).unwrap();
    let golds: Vec<Gold> = serde_json::from_str(
        &std::fs::read_to_string(
            dir.join("deepagents_chinook_text2sql.gold_results__latest_db.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let wide = wide_policy();
    let (mut answered, mut matched) = (0, 0);
    for g in &golds {
        let Some(sql) = template_sql(&g.question, &schema) else {
            continue;
        };
        answered += 1;
        let got = validate(&sql, &schema, &wide)
            .and_then(|q| execute(&db, &q, &wide))
            .unwrap_or_else(|e| panic!("#{} template SQL {sql}: {e}", g.id));
        let gold = execute(&db, &validate(&g.gold_sql, &schema, &wide).unwrap(), &wide).unwrap();
        let ok = results_match(&gold, &got);
        matched += usize::from(ok);
        println!(
            "#{:<2} {} {:<60} → {sql}",
            g.id,
            if ok { "match   " } else { "MISMATCH" },
            g.question
        );
    }
    println!(
        "templates: answered {answered} of {} questions, {matched} match the gold result",
        golds.len()
    );
    assert!(
        answered >= 5,
        "the template path should answer the simple questions"
    );
    assert!(
        matched * 10 >= answered * 7,
        "most template answers should be right"
    );
}
