//! Semantic and hybrid retrieval through the engine, with a fake embedder whose notion of
//! meaning is a small concept table (so "holiday" and "annual leave" / "年假" are neighbours
//! although they share no keyword), and a fake reranker.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use knowhub_embed::{EmbedError, Embedder, Reranker};

use super::*;

const DIM: usize = 16;

/// Words → concept dimensions; other words hash into the remaining dimensions.
const CONCEPTS: &[(&str, usize)] = &[
    ("holiday", 0),
    ("vacation", 0),
    ("leave", 0),
    ("年假", 0),
    ("休假", 0),
    ("deploy", 1),
    ("rollout", 1),
    ("release", 1),
    ("发布", 1),
    ("salary", 2),
    ("pay", 2),
    ("工资", 2),
];

struct ConceptEmbedder {
    id: String,
    max_tokens: usize,
    passages_embedded: AtomicUsize,
}

impl ConceptEmbedder {
    fn new(id: &str) -> Arc<Self> {
        Arc::new(ConceptEmbedder {
            id: id.into(),
            max_tokens: 512,
            passages_embedded: AtomicUsize::new(0),
        })
    }

    fn vector(text: &str) -> Vec<f32> {
        let mut v = [0f32; DIM];
        let lower = text.to_lowercase();
        for (word, dim) in CONCEPTS {
            v[*dim] += lower.matches(word).count() as f32 * 3.0;
        }
        for w in lower.split_whitespace() {
            let h = w
                .bytes()
                .fold(7usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
            v[3 + h % (DIM - 3)] += 0.1;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter().map(|x| x / n).collect()
    }
}

impl Embedder for ConceptEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn dim(&self) -> usize {
        DIM
    }
    fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.passages_embedded
            .fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts.iter().map(|t| Self::vector(t)).collect())
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(Self::vector(text))
    }
    fn count_tokens(&self, text: &str) -> usize {
        2 + text.split_whitespace().count()
    }
    fn max_tokens(&self) -> usize {
        self.max_tokens
    }
}

/// Prefers shorter passages: an order no retriever would produce on its own.
struct ShortestFirst;

impl Reranker for ShortestFirst {
    fn model_id(&self) -> &str {
        "shortest-first"
    }
    fn score(&self, _query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Ok(passages.iter().map(|p| -(p.len() as f32)).collect())
    }
}

fn corpus() -> FakeFs {
    let fs = FakeFs::new();
    fs.write(
        "/kb/leave.md",
        "# Time off\n\nEvery employee gets fifteen days of annual leave per year.",
    );
    fs.write("/kb/leave-zh.md", "# 假期\n\n员工每年享有十五天年假。");
    fs.write(
        "/kb/deploy.md",
        "# Deployments\n\nA rollout goes to staging first, then production.",
    );
    fs.write(
        "/kb/pay.md",
        "# Compensation\n\nSalary is paid on the last working day of the month.",
    );
    fs
}

fn open(dir: &std::path::Path, fs: &FakeFs, models: ModelSet) -> Engine {
    Engine::open_with(EngineConfig::new(dir), Arc::new(fs.clone()), models).unwrap()
}

fn with(embedder: &Arc<ConceptEmbedder>) -> ModelSet {
    ModelSet {
        embedder: Some(Arc::clone(embedder) as Arc<dyn Embedder>),
        ..ModelSet::default()
    }
}

fn ingest(engine: &Engine) -> IngestReport {
    engine
        .ingest(
            &dev_context(),
            &[PathBuf::from("/kb")],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap()
}

fn paths(engine: &Engine, q: &str, options: &SearchOptions) -> Vec<String> {
    engine
        .search(&dev_context(), q, options)
        .unwrap()
        .into_iter()
        .map(|h| h.path)
        .collect()
}

fn mode(mode: RetrievalMode) -> SearchOptions {
    SearchOptions {
        mode,
        ..SearchOptions::default()
    }
}

#[test]
fn finds_by_meaning_when_no_keyword_matches() {
    let dir = tempfile::tempdir().unwrap();
    let fs = corpus();
    let e = ConceptEmbedder::new("concepts-v1");
    let engine = open(dir.path(), &fs, with(&e));
    let report = ingest(&engine);
    assert_eq!(report.embedded, 4, "{report:?}");

    // No document contains "holiday": keyword search finds nothing, hybrid finds both
    // leave documents (English and Chinese) first.
    assert!(paths(&engine, "holiday", &mode(RetrievalMode::Keyword)).is_empty());
    let hybrid = engine
        .retrieve(&dev_context(), "holiday", &SearchOptions::default())
        .unwrap();
    let top: Vec<&str> = hybrid
        .hits
        .iter()
        .take(2)
        .map(|h| h.path.as_str())
        .collect();
    assert!(
        top.contains(&"/kb/leave.md") && top.contains(&"/kb/leave-zh.md"),
        "{top:?}"
    );
    assert_eq!(hybrid.trace.keyword_candidates, 0);
    assert!(hybrid.trace.semantic_candidates >= 2);
    assert_eq!(hybrid.hits[0].semantic_rank, Some(1));
    assert_eq!(hybrid.hits[0].keyword_rank, None);
    assert!(
        hybrid
            .trace
            .skipped
            .iter()
            .any(|s| s.contains("no reranker")),
        "{:?}",
        hybrid.trace.skipped
    );

    // Both retrievers agree on an exact keyword: one candidate per chunk after fusion.
    let r = engine
        .retrieve(&dev_context(), "salary", &SearchOptions::default())
        .unwrap();
    assert_eq!(r.hits[0].path, "/kb/pay.md");
    assert_eq!(
        (r.hits[0].keyword_rank, r.hits[0].semantic_rank),
        (Some(1), Some(1))
    );
    let ids: std::collections::HashSet<_> = r.hits.iter().map(|h| h.chunk_id).collect();
    assert_eq!(ids.len(), r.hits.len(), "duplicate chunks in {:?}", r.hits);

    let status = engine.status(&dev_context()).unwrap();
    assert_eq!(status.embedder.as_deref(), Some("concepts-v1"));
    assert_eq!(status.embedded_chunks, 4);
}

#[test]
fn vectors_persist_and_a_model_change_reembeds() {
    let dir = tempfile::tempdir().unwrap();
    let fs = corpus();
    let e1 = ConceptEmbedder::new("concepts-v1");
    {
        let engine = open(dir.path(), &fs, with(&e1));
        ingest(&engine);
    }
    assert_eq!(e1.passages_embedded.load(Ordering::SeqCst), 4);

    // Reopening with the same model loads the stored vectors: nothing is embedded again.
    let engine = open(dir.path(), &fs, with(&e1));
    assert_eq!(
        engine.embed_pending(&dev_context(), &mut |_| {}).unwrap(),
        0
    );
    assert_eq!(e1.passages_embedded.load(Ordering::SeqCst), 4);
    assert_eq!(
        paths(&engine, "vacation", &mode(RetrievalMode::Semantic))[0..2].len(),
        2
    );
    drop(engine);

    // A different model: the old vectors go and every chunk is embedded again.
    let e2 = ConceptEmbedder::new("concepts-v2");
    let engine = open(dir.path(), &fs, with(&e2));
    assert_eq!(engine.status(&dev_context()).unwrap().embedded_chunks, 0);
    assert_eq!(
        engine.embed_pending(&dev_context(), &mut |_| {}).unwrap(),
        4
    );
    assert_eq!(engine.status(&dev_context()).unwrap().embedded_chunks, 4);
    let top = paths(&engine, "vacation", &mode(RetrievalMode::Semantic));
    assert!(top[0].starts_with("/kb/leave"), "{top:?}");
}

#[test]
fn updates_and_removals_reach_the_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let fs = corpus();
    let e = ConceptEmbedder::new("concepts-v1");
    let engine = open(dir.path(), &fs, with(&e));
    ingest(&engine);

    // The deploy document now talks about pay: a "release" query must not find it any more.
    fs.write("/kb/deploy.md", "# Notes\n\nPay slips are emailed.");
    let r = ingest(&engine);
    assert_eq!((r.updated, r.embedded), (1, 1), "{r:?}");
    let semantic = mode(RetrievalMode::Semantic);
    let hits = engine.search(&dev_context(), "release", &semantic).unwrap();
    assert!(
        hits.iter().all(|h| h.score < 0.5),
        "stale vector still matches: {hits:?}"
    );

    // A vanished file leaves the vectors too.
    fs.remove(std::path::Path::new("/kb/leave.md"));
    ingest(&engine);
    let top = paths(&engine, "vacation", &semantic);
    assert!(!top.contains(&"/kb/leave.md".to_string()), "{top:?}");
    assert_eq!(top[0], "/kb/leave-zh.md");

    engine
        .remove(&dev_context(), &[PathBuf::from("/kb/leave-zh.md")])
        .unwrap();
    let top = paths(&engine, "vacation", &semantic);
    assert!(!top.iter().any(|p| p.starts_with("/kb/leave")), "{top:?}");
}

#[test]
fn the_document_filter_applies_inside_both_scans() {
    let dir = tempfile::tempdir().unwrap();
    let fs = corpus();
    // Many allowed-but-weak and forbidden-but-strong matches: a post-filtered top-k would
    // come back short.
    for i in 0..30 {
        fs.write(
            format!("/kb/secret-{i}.md"),
            format!("# Secret {i}\n\nHoliday vacation leave plan number {i}."),
        );
    }
    let e = ConceptEmbedder::new("concepts-v1");
    let engine = open(dir.path(), &fs, with(&e));
    ingest(&engine);
    let allowed: Vec<u64> = engine
        .documents(&dev_context(), None)
        .unwrap()
        .into_iter()
        .filter(|d| !d.path.contains("secret"))
        .map(|d| d.id.0 as u64)
        .collect();
    assert_eq!(allowed.len(), 4);
    for m in [
        RetrievalMode::Keyword,
        RetrievalMode::Semantic,
        RetrievalMode::Hybrid,
    ] {
        let options = SearchOptions {
            mode: m,
            limit: 4,
            candidates: 5,
            filter: Some(DocFilter::allow_only(allowed.clone())),
            ..SearchOptions::default()
        };
        let r = engine
            .retrieve(&dev_context(), "holiday vacation leave", &options)
            .unwrap();
        assert!(
            r.hits.iter().all(|h| !h.path.contains("secret")),
            "{m:?}: {:?}",
            r.hits
        );
        if m != RetrievalMode::Keyword {
            // Semantic candidates are drawn from the allowed documents only, so all four
            // come back even though 30 forbidden ones score higher.
            assert_eq!(r.hits.len(), 4, "{m:?}: {:?}", r.hits);
        }
    }
}

#[test]
fn a_reranker_reorders_the_fused_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let fs = corpus();
    let e = ConceptEmbedder::new("concepts-v1");
    let models = ModelSet {
        embedder: Some(e as Arc<dyn Embedder>),
        reranker: Some(Arc::new(ShortestFirst)),
        ocr: None,
        notes: Vec::new(),
    };
    let engine = open(dir.path(), &fs, models);
    ingest(&engine);
    let r = engine
        .retrieve(&dev_context(), "leave", &SearchOptions::default())
        .unwrap();
    assert!(r.trace.reranked >= 2, "{:?}", r.trace);
    assert_eq!(r.trace.reranker.as_deref(), Some("shortest-first"));
    let lens: Vec<usize> = r.hits.iter().map(|h| h.text.len()).collect();
    let mut sorted = lens.clone();
    sorted.sort_unstable();
    assert_eq!(lens, sorted, "{:?}", r.hits);

    let off = SearchOptions {
        rerank_top: 0,
        ..SearchOptions::default()
    };
    let r = engine.retrieve(&dev_context(), "leave", &off).unwrap();
    assert_eq!(r.trace.reranked, 0);
    assert!(r.trace.skipped.iter().any(|s| s.contains("rerank")));
}

#[test]
fn chunks_fit_the_embedder_window() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FakeFs::new();
    let long: String = (0..2000).map(|i| format!("word{i} ")).collect();
    fs.write("/kb/long.txt", long);
    let e = Arc::new(ConceptEmbedder {
        id: "small-window".into(),
        max_tokens: 128,
        passages_embedded: AtomicUsize::new(0),
    });
    let engine = open(dir.path(), &fs, with(&e));
    ingest(&engine);
    let hits = engine
        .search(&dev_context(), "word1500", &mode(RetrievalMode::Keyword))
        .unwrap();
    assert!(!hits.is_empty());
    let doc = hits[0].document_id;
    let store = engine.store();
    let ids: Vec<knowhub_store::ChunkId> = store
        .index_entries(doc)
        .unwrap()
        .iter()
        .map(|e| e.chunk_id)
        .collect();
    assert!(ids.len() > 10);
    for c in store.chunks(&ids).unwrap() {
        // Room is left for the heading line and the special tokens.
        assert!(
            e.count_tokens(&c.text) <= 128 - 32,
            "{} tokens",
            c.token_count
        );
    }
}

#[test]
fn semantic_mode_without_an_embedder_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let fs = corpus();
    let models = ModelSet {
        ocr: None,
        notes: vec!["semantic search off: model not installed; run `knowhub models fetch`".into()],
        ..ModelSet::default()
    };
    let engine = open(dir.path(), &fs, models);
    ingest(&engine);
    let err = engine
        .search(&dev_context(), "holiday", &mode(RetrievalMode::Semantic))
        .unwrap_err()
        .to_string();
    assert!(err.contains("knowhub models fetch"), "{err}");
    // Hybrid falls back to keywords and says so in the trace.
    let r = engine
        .retrieve(&dev_context(), "leave", &SearchOptions::default())
        .unwrap();
    assert!(!r.hits.is_empty());
    assert!(r.trace.skipped.iter().any(|s| s.contains("models fetch")));
}
