//! Pictures in a knowledge base: with the OCR model installed their text is searchable and
//! cited at page 1; without it they are kept with a reason that names the command to run; a
//! corrupt picture fails alone, with its reason.
//!
//! Needs the `pp-ocrv6-small` model (`knowhub models fetch pp-ocrv6-small`, or
//! `KNOWHUB_MODELS_DIR`); skips without it on a developer machine, fails under `CI=true`.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use knowhub_engine::{
    EmbedderSpec, Engine, EngineConfig, ModelConfig, ModelSet, ParserBackend, RealFs,
    SearchOptions, dev_context,
};

/// A memo rendered for this test (English and Chinese lines on a white page).
const MEMO: &[u8] = include_bytes!("fixtures/scanned-memo.png");
/// Two scanned pages made for this test: page 1 a JPEG (English and Chinese), page 2 a 1-bit
/// bitmap (English); no text layer.
const POLICY: &[u8] = include_bytes!("fixtures/scanned-policy.pdf");

fn models_dir() -> PathBuf {
    std::env::var_os("KNOWHUB_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models"))
}

/// The models with OCR; `None` (after saying so) where the OCR model is missing, which fails
/// under `CI=true`.
fn with_ocr() -> Option<ModelSet> {
    let models = ModelSet::load(&ModelConfig {
        models_dir: Some(models_dir()),
        embedder: EmbedderSpec::Off,
        ..ModelConfig::default()
    })
    .unwrap();
    if models.ocr.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the OCR model is missing under CI=true: {:?}",
            models.notes
        );
        eprintln!("skipped: {:?}", models.notes);
        return None;
    }
    Some(models)
}

fn engine(data: &Path, models: ModelSet) -> Engine {
    let mut config = EngineConfig::new(data);
    config.parser = ParserBackend::InProcess;
    Engine::open_with(config, Arc::new(RealFs), models).unwrap()
}

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memo.png"), MEMO).unwrap();
    std::fs::write(dir.path().join("torn.png"), &MEMO[..MEMO.len() / 3]).unwrap();
    std::fs::write(dir.path().join("policy.pdf"), POLICY).unwrap();
    dir
}

fn ingest(engine: &Engine, folder: &Path) -> knowhub_engine::IngestReport {
    engine
        .ingest(
            &dev_context(),
            &[folder.to_path_buf()],
            &Default::default(),
            &mut |_| {},
        )
        .unwrap()
}

#[test]
fn pictures_are_read_searched_and_cited_at_their_page() {
    let Some(models) = with_ocr() else { return };
    let data = tempfile::tempdir().unwrap();
    let docs = folder();
    let engine = engine(data.path(), models);
    let admin = dev_context();
    let mut reading = Vec::new();
    let report = engine
        .ingest(
            &admin,
            &[docs.path().to_path_buf()],
            &Default::default(),
            &mut |e| {
                if let knowhub_engine::IngestEvent::Reading { path, done, pages } = e {
                    reading.push((path.clone(), *done, *pages));
                }
            },
        )
        .unwrap();
    assert_eq!((report.added, report.failed), (2, 1), "{report:?}");
    // The two-page scan says how far OCR got; a picture of one page does not.
    let policy: Vec<(u32, u32)> = reading
        .iter()
        .filter(|(path, ..)| path.ends_with("policy.pdf"))
        .map(|(_, done, pages)| (*done, *pages))
        .collect();
    assert_eq!(policy, [(0, 2), (2, 2)], "{reading:?}");
    assert!(
        reading
            .iter()
            .all(|(path, ..)| path.ends_with("policy.pdf"))
    );
    let (path, reason) = &report.failures[0];
    assert!(path.ends_with("torn.png"), "{path}");
    assert!(reason.contains("cannot read the image"), "{reason}");

    for query in ["director signature expense claims", "差旅报销"] {
        let hits = engine
            .search(&admin, query, &SearchOptions::default())
            .unwrap();
        let hit = hits.first().unwrap_or_else(|| panic!("no hit for {query}"));
        assert!(hit.path.ends_with("memo.png"), "{query}: {}", hit.path);
        assert_eq!(hit.page_start, Some(1), "{query}");
        assert_eq!(hit.kind.as_deref(), Some("image"), "{query}");
    }
    let memo = engine
        .documents(&admin, None)
        .unwrap()
        .into_iter()
        .find(|d| d.path.ends_with("memo.png"))
        .unwrap();
    assert_eq!(memo.status, "indexed", "{memo:?}");
    // A clean scan is not marked as read unsurely.
    assert_eq!(memo.error, None, "{memo:?}");
}

#[test]
fn a_picture_attached_to_a_mail_is_read_as_a_document_of_its_own() {
    use base64::Engine as _;
    let Some(models) = with_ocr() else { return };
    let picture = base64::engine::general_purpose::STANDARD.encode(MEMO);
    let lines: Vec<&str> = picture
        .as_bytes()
        .chunks(76)
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    let mail = format!(
        "From: hr@example.com\r\nSubject: Signed memo\r\n\
         Content-Type: multipart/mixed; boundary=\"m\"\r\n\r\n\
         --m\r\nContent-Type: text/plain\r\n\r\nThe signed memo is attached.\r\n\
         --m\r\nContent-Type: image/png; name=\"memo.png\"\r\n\
         Content-Disposition: attachment; filename=\"memo.png\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{}\r\n--m--\r\n",
        lines.join("\r\n")
    );
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(docs.path().join("memo.eml"), mail).unwrap();
    let data = tempfile::tempdir().unwrap();
    let engine = engine(data.path(), models);
    let report = ingest(&engine, docs.path());
    assert_eq!((report.added, report.failed), (1, 0), "{report:?}");
    let hits = engine
        .search(&dev_context(), "差旅报销", &SearchOptions::default())
        .unwrap();
    let hit = hits.first().expect("the attached picture's text is found");
    assert!(hit.path.ends_with("memo.eml/memo.png"), "{}", hit.path);
    assert_eq!(
        (hit.kind.as_deref(), hit.page_start),
        (Some("image"), Some(1))
    );
}

#[test]
fn without_the_model_a_picture_is_kept_with_the_command_that_reads_it() {
    let data = tempfile::tempdir().unwrap();
    let docs = folder();
    let engine = engine(data.path(), ModelSet::none());
    let admin = dev_context();
    let report = ingest(&engine, docs.path());
    // Without OCR nothing decodes the pictures, so the torn one is not told apart.
    assert_eq!(report.no_text, 3, "{report:?}");
    for doc in engine.documents(&admin, None).unwrap() {
        let note = doc.error.clone().unwrap_or_default();
        assert!(
            note.contains("knowhub models fetch pp-ocrv6-small"),
            "{doc:?}"
        );
        let what = if doc.path.ends_with(".pdf") {
            "scanned images"
        } else {
            "a picture"
        };
        assert!(note.contains(what), "{doc:?}");
    }
}
