//! Engine tests over the in-memory file system.

use std::path::PathBuf;
use std::sync::Arc;

use super::*;

pub(crate) fn engine(fs: &FakeFs) -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open_with(
        EngineConfig::new(dir.path()),
        Arc::new(fs.clone()),
        ModelSet::none(),
    )
    .unwrap();
    (dir, engine)
}

fn ingest(engine: &Engine, paths: &[&str]) -> IngestReport {
    let inputs: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    engine
        .ingest(
            &dev_context(),
            &inputs,
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap()
}

fn top_paths(engine: &Engine, q: &str) -> Vec<String> {
    engine
        .search(&dev_context(), q, &SearchOptions::default())
        .unwrap()
        .into_iter()
        .map(|h| h.path)
        .collect()
}

#[test]
fn ingest_search_reingest_and_replace() {
    let fs = FakeFs::new();
    fs.write("/kb/handbook.md", "# Handbook\n\n## Leave\n\nEmployees get fifteen days of annual leave.\n\n## 年假\n\n新员工试用期为三个月。");
    fs.write(
        "/kb/deploy.txt",
        "Rolling updates use maxSurge 25% by default.",
    );
    fs.write("/kb/~$lock.docx", "junk");
    let (_dir, engine) = engine(&fs);

    let r = ingest(&engine, &["/kb"]);
    assert_eq!((r.added, r.failed, r.files), (2, 0, 2), "{r:?}");

    let hits = engine
        .search(&dev_context(), "annual leave", &SearchOptions::default())
        .unwrap();
    assert_eq!(hits[0].path, "/kb/handbook.md");
    assert_eq!(hits[0].heading_path, vec!["Handbook", "Leave"]);
    assert_eq!(top_paths(&engine, "试用期"), vec!["/kb/handbook.md"]);

    // Same content: a no-op.
    let r = ingest(&engine, &["/kb"]);
    assert_eq!((r.unchanged, r.added, r.updated), (2, 0, 0));

    // New content replaces the old everywhere.
    fs.write(
        "/kb/deploy.txt",
        "Blue-green deployments switch traffic at once.",
    );
    let r = ingest(&engine, &["/kb"]);
    assert_eq!(r.updated, 1);
    assert!(top_paths(&engine, "maxSurge").is_empty());
    assert_eq!(top_paths(&engine, "blue-green"), vec!["/kb/deploy.txt"]);

    // A file deleted from an ingested folder leaves the knowledge base on the next ingest.
    fs.write("/kb/old.txt", "obsolete zeppelin policy");
    ingest(&engine, &["/kb"]);
    assert_eq!(top_paths(&engine, "zeppelin"), vec!["/kb/old.txt"]);
    fs.remove(std::path::Path::new("/kb/old.txt"));
    let r = ingest(&engine, &["/kb"]);
    assert_eq!(r.removed, 1, "{r:?}");
    assert!(top_paths(&engine, "zeppelin").is_empty());

    // Remove.
    engine
        .remove(&dev_context(), &["/kb/deploy.txt".into()])
        .unwrap();
    assert!(top_paths(&engine, "blue-green").is_empty());
    assert_eq!(engine.status(&dev_context()).unwrap().store.documents, 1);
}

#[test]
fn bad_file_is_recorded_and_never_stops_the_batch_or_loses_the_previous_version() {
    let fs = FakeFs::new();
    fs.write("/kb/good.md", "# Good\n\nThe cafeteria opens at eight.");
    fs.write("/kb/bad.pdf", "this is not a pdf");
    let (_dir, engine) = engine(&fs);
    let r = ingest(&engine, &["/kb"]);
    assert_eq!((r.added, r.failed), (1, 1), "{r:?}");
    assert!(r.failures[0].1.contains("PDF"), "{:?}", r.failures);

    // A broken new version keeps the old searchable content.
    let pdf = std::fs::read(format!(
        "{}/../../tests/fixtures/pdf/simple.pdf",
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
    ))
    .unwrap();
    fs.write("/kb/spec.pdf", pdf);
    let r = ingest(&engine, &["/kb"]);
    assert_eq!(r.added, 1, "{r:?}");
    let before = top_paths(&engine, "information people team");
    assert_eq!(before, vec!["/kb/spec.pdf"]);
    fs.write("/kb/spec.pdf", "%PDF-1.7 truncated garbage");
    let r = ingest(&engine, &["/kb"]);
    assert_eq!(r.failed, 2, "{r:?}");
    assert_eq!(top_paths(&engine, "information people team"), before);
    let status = engine.status(&dev_context()).unwrap();
    assert!(status.failures.iter().any(|d| d.path == "/kb/bad.pdf"));
}

#[test]
fn missing_input_is_reported_not_fatal() {
    let fs = FakeFs::new();
    fs.write("/kb/a.txt", "alpha");
    let (_dir, engine) = engine(&fs);
    let r = ingest(&engine, &["/nope", "/kb/a.txt"]);
    assert_eq!((r.added, r.failed), (1, 1));
}

#[test]
fn crash_between_store_and_index_is_repaired_on_open() {
    let fs = FakeFs::new();
    fs.write("/kb/a.txt", "zebra crossing rules");
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = Engine::open_with(
            EngineConfig::new(dir.path()),
            Arc::new(fs.clone()),
            ModelSet::none(),
        )
        .unwrap();
        ingest(&engine, &["/kb"]);
        // Simulate a crash after a store write whose index commit never happened: the store
        // says "pending" and the index is wiped.
        engine.index.clear().unwrap();
        engine.index.commit().unwrap();
        let id = engine.store().documents(None).unwrap()[0].id;
        let source = engine.store().files_source().unwrap();
        engine
            .store()
            .replace_document(&knowhub_store::NewDocument {
                parent: None,
                source,
                folder: None,
                path: "/kb/a.txt",
                kind: "text",
                content_hash: "x",
                size: 1,
                mtime_ns: None,
                title: Some("a"),
                status: knowhub_store::DocumentStatus::Indexed,
                note: None,
                page_count: None,
                encoding: None,
                meta: &knowhub_store::NO_META,
                text: "zebra",
                chunks: &[knowhub_store::NewChunk {
                    ordinal: 0,
                    text: "zebra crossing rules".into(),
                    heading_path: vec![],
                    page_start: None,
                    page_end: None,
                    char_start: 0,
                    char_end: 5,
                    token_count: 3,
                    text_hash: "h".into(),
                }],
                tables: &[],
                original: None,
            })
            .unwrap();
        assert_eq!(engine.store().pending_index_documents().unwrap(), vec![id]);
    }
    let engine = Engine::open_with(
        EngineConfig::new(dir.path()),
        Arc::new(fs),
        ModelSet::none(),
    )
    .unwrap();
    assert_eq!(top_paths(&engine, "zebra"), vec!["/kb/a.txt"]);
    assert!(engine.store().pending_index_documents().unwrap().is_empty());
}

#[test]
fn empty_and_syntax_only_queries_are_clear_errors() {
    let fs = FakeFs::new();
    let (_dir, engine) = engine(&fs);
    for q in ["", "   ", "!!!", "\"\""] {
        let err = engine
            .search(&dev_context(), q, &SearchOptions::default())
            .unwrap_err();
        assert!(matches!(err, EngineError::InvalidInput(_)), "{q:?}: {err}");
    }
}

#[test]
fn a_second_process_can_search_while_the_first_writes() {
    let fs = FakeFs::new();
    fs.write("/kb/a.txt", "quarterly budget review");
    let dir = tempfile::tempdir().unwrap();
    let writer = Engine::open_with(
        EngineConfig::new(dir.path()),
        Arc::new(fs.clone()),
        ModelSet::none(),
    )
    .unwrap();
    ingest(&writer, &["/kb"]);
    // The writer still holds the index lock: a second engine opens read-only.
    let reader = Engine::open_with(
        EngineConfig::new(dir.path()),
        Arc::new(fs.clone()),
        ModelSet::none(),
    )
    .unwrap();
    assert!(reader.is_read_only());
    assert_eq!(top_paths(&reader, "budget"), vec!["/kb/a.txt"]);
    let err = reader
        .ingest(
            &dev_context(),
            &["/kb".into()],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap_err();
    assert!(matches!(err, EngineError::Busy), "{err}");
    assert!(matches!(
        reader.remove(&dev_context(), &["/kb/a.txt".into()]),
        Err(EngineError::Busy)
    ));
    drop(writer);
    drop(reader);
    let again = Engine::open_with(
        EngineConfig::new(dir.path()),
        Arc::new(fs),
        ModelSet::none(),
    )
    .unwrap();
    assert!(!again.is_read_only());
}
