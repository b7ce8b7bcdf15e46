//! Workspace-level integration tests: the engine end to end on the bundled demo corpus
//! (`assets/demo`), the same files the README's first command ingests.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use knowhub_engine::{
    Engine, EngineConfig, IngestOptions, RetrievalMode, SearchOptions, dev_context,
};

fn demo() -> PathBuf {
    Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("assets/demo")
}

fn open(dir: &Path) -> Engine {
    Engine::open(EngineConfig::new(dir)).unwrap()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[test]
fn demo_corpus_answers_bilingual_questions_with_citations() {
    let data = tempfile::tempdir().unwrap();
    let engine = open(data.path());
    let report = engine
        .ingest(
            &dev_context(),
            &[demo()],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.failed, 0, "{:?}", report.failures);
    assert!(report.added >= 6, "{report:?}");

    // (query, expected top file, expected page, a heading on the path)
    let cases: &[(&str, &str, Option<u32>, &str)] = &[
        (
            "How many days of annual leave do new employees get?",
            "employee-handbook.md",
            None,
            "Leave",
        ),
        ("试用期多长", "员工手册.md", None, "试用期"),
        (
            "default maxSurge rolling update",
            "deployment-spec.html",
            None,
            "rolling-update",
        ),
        (
            "password rotation every 90 days",
            "security-policy.pdf",
            Some(2),
            "password",
        ),
        (
            "incident reporting within 24 hours",
            "security-policy.pdf",
            Some(3),
            "",
        ),
        ("哪些项目在 prod 环境", "projects.xlsx", None, "Projects"),
    ];
    for (query, file, page, heading) in cases {
        let hits = engine
            .search(&dev_context(), query, &SearchOptions::default())
            .unwrap();
        let top = hits.first().unwrap_or_else(|| panic!("no hit for {query}"));
        assert_eq!(
            file_name(&top.path),
            *file,
            "{query}: {:?}",
            hits.iter().map(|h| &h.path).collect::<Vec<_>>()
        );
        if let Some(page) = page {
            assert_eq!(top.page_start, Some(*page), "{query}");
        }
        let path = top.heading_path.join(" › ").to_lowercase();
        assert!(
            path.contains(&heading.to_lowercase()),
            "{query}: heading path {path}"
        );
        assert!(
            !top.snippet.is_empty() && !top.highlights.is_empty(),
            "{query}"
        );
    }

    // HTML comments and scripts are never indexed: no keyword match, and no passage (found by
    // any retriever — semantic search always returns nearest neighbours) contains them.
    for hidden in ["zzsecretcomment", "zzscriptmarker"] {
        let keyword = SearchOptions {
            mode: RetrievalMode::Keyword,
            ..SearchOptions::default()
        };
        assert!(
            engine
                .search(&dev_context(), hidden, &keyword)
                .unwrap()
                .is_empty(),
            "{hidden} leaked"
        );
        let hybrid = engine
            .search(&dev_context(), hidden, &SearchOptions::default())
            .unwrap();
        assert!(
            hybrid.iter().all(|h| !h.text.contains(hidden)),
            "{hidden} leaked"
        );
    }

    // Spreadsheets are also kept as typed tables for the SQL tool.
    let status = engine.status(&dev_context()).unwrap();
    assert!(status.store.tables >= 2, "{status:?}");
    assert_eq!(status.store.chunks, status.indexed_chunks);

    // Re-ingesting the same files is a no-op.
    let again = engine
        .ingest(
            &dev_context(),
            &[demo()],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(
        (again.added, again.updated, again.unchanged),
        (0, 0, report.added + report.no_text)
    );
}

#[test]
fn store_and_index_survive_reopen_and_a_lost_index() {
    let data = tempfile::tempdir().unwrap();
    {
        let engine = open(data.path());
        engine
            .ingest(
                &dev_context(),
                &[demo()],
                &IngestOptions::default(),
                &mut |_| {},
            )
            .unwrap();
    }
    // Losing the whole derived index (disk trouble, manual deletion) is repaired on open.
    let index_dir = knowhub_engine::DataPaths::new(
        data.path(),
        &knowhub_engine::AccountId::new("default").unwrap(),
    )
    .index;
    std::fs::remove_dir_all(&index_dir).unwrap();
    let engine = open(data.path());
    let hits = engine
        .search(&dev_context(), "annual leave", &SearchOptions::default())
        .unwrap();
    assert!(!hits.is_empty());
    let status = engine.status(&dev_context()).unwrap();
    assert_eq!(status.store.chunks, status.indexed_chunks);
}
