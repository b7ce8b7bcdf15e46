//! `cargo bench -p knowhub-pg --bench follow`: lexical search in team mode, where each replica
//! keeps a tantivy index derived from the database's change log. Prints, per corpus of the
//! shared evaluation set (SciFact, CMRC 2018): writing the documents to PostgreSQL, a new
//! replica catching up, BM25 nDCG@10 and query latency of the replica's index beside an index
//! built directly (local mode), and the delay from a commit to the change being searchable on
//! a following replica. One chunk per document (title + text) on both sides: the comparison is
//! of the two paths to an index, not of chunking.
//!
//! Needs ../shared (or `KNOWHUB_SHARED`) and PostgreSQL (`KNOWHUB_PG_BIN` / `.tools/postgres`).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use knowhub_index::{ChunkEntry, SearchRequest, TantivyIndex, TextIndex};
use knowhub_pg::{Database, IndexFollower, PgCluster, PgDocuments, state_file};
use knowhub_store::{DocumentId, DocumentStatus, NewChunk, NewDocument, SourceId};
use serde_json::Value;

struct Corpus {
    name: &'static str,
    /// (external id, title, text)
    docs: Vec<(String, String, String)>,
    /// (query text, relevant external ids with grades)
    queries: Vec<(String, HashMap<String, u32>)>,
}

fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KNOWHUB_SHARED") {
        return PathBuf::from(dir);
    }
    let cwd = std::env::current_dir().unwrap();
    cwd.ancestors()
        .map(|a| a.join("shared"))
        .find(|p| p.join("corpora").is_dir())
        .expect("no ../shared/corpora: set KNOWHUB_SHARED")
}

fn load(dir: &Path, name: &'static str) -> Corpus {
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    let docs = read("corpus.jsonl")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (s("_id"), s("title"), s("text"))
        })
        .collect();
    let texts: HashMap<String, String> = read("queries.jsonl")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["_id"].as_str().unwrap().to_string(),
                v["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut rels: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for line in read("qrels/train.tsv").lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if let [q, d, score] = f[..] {
            rels.entry(q.to_string())
                .or_default()
                .insert(d.to_string(), score.parse().unwrap_or(1));
        }
    }
    let mut queries: Vec<(String, HashMap<String, u32>)> = rels
        .into_iter()
        .filter_map(|(q, r)| texts.get(&q).map(|t| (t.clone(), r)))
        .collect();
    queries.sort_by(|a, b| a.0.cmp(&b.0));
    Corpus {
        name,
        docs,
        queries,
    }
}

fn ndcg10(ranked: &[String], rels: &HashMap<String, u32>) -> f64 {
    let gain = |r: u32| 2f64.powi(r as i32) - 1.0;
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, d)| gain(rels.get(d).copied().unwrap_or(0)) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<u32> = rels.values().copied().collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, &r)| gain(r) / (i as f64 + 2.0).log2())
        .sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

fn evaluate(
    index: &TantivyIndex,
    corpus: &Corpus,
    ext: &HashMap<u64, String>,
) -> (f64, Vec<Duration>) {
    let mut total = 0.0;
    let mut times = Vec::new();
    for (text, rels) in &corpus.queries {
        let t = Instant::now();
        // A query with no searchable terms (one CMRC query is empty) finds nothing on either side.
        let hits = index
            .search(&SearchRequest::new(text.clone(), 10))
            .unwrap_or_default();
        times.push(t.elapsed());
        let ranked: Vec<String> = hits
            .iter()
            .filter_map(|h| ext.get(&h.doc_id).cloned())
            .collect();
        total += ndcg10(&ranked, rels);
    }
    times.sort();
    (total / corpus.queries.len().max(1) as f64, times)
}

fn ms(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn store(docs: &PgDocuments, source: SourceId, path: &str, title: &str, text: &str) -> DocumentId {
    let chunk = NewChunk {
        ordinal: 0,
        text: text.to_string(),
        heading_path: Vec::new(),
        page_start: None,
        page_end: None,
        char_start: 0,
        char_end: text.len(),
        token_count: 0,
        text_hash: String::new(),
    };
    docs.replace_document(&NewDocument {
        parent: None,
        source,
        folder: None,
        path,
        kind: "text",
        content_hash: "",
        size: text.len() as u64,
        mtime_ns: None,
        title: Some(title),
        status: DocumentStatus::Indexed,
        note: None,
        page_count: None,
        encoding: None,
        meta: &knowhub_store::NO_META,
        text,
        chunks: std::slice::from_ref(&chunk),
        tables: &[],
        original: None,
    })
    .unwrap()
}

fn main() {
    let shared = shared_dir();
    let bin = PgCluster::find_binaries().expect("no PostgreSQL: set KNOWHUB_PG_BIN");
    let pg = PgCluster::start(&bin).unwrap();
    let corpora = [
        load(&shared.join("corpora/scifact"), "SciFact"),
        load(&shared.join("corpora/cmrc2018_zh"), "CMRC 2018"),
    ];
    println!(
        "| corpus | documents | queries | write to PostgreSQL | new replica catch-up | nDCG@10 local | nDCG@10 replica | Δ | p50 / p95 ms local | p50 / p95 ms replica |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (n, corpus) in corpora.iter().enumerate() {
        let url = pg.create_database(&format!("c{n}")).unwrap();
        let db = Database::connect(&url).unwrap();
        let docs = PgDocuments::new(&db);
        let source = docs.folder_source("/bench", "bench").unwrap();

        let t = Instant::now();
        let mut ext = HashMap::new();
        let mut ids = Vec::new();
        for (id, title, text) in &corpus.docs {
            let doc = store(&docs, source, &format!("/bench/{id}"), title, text);
            ext.insert(doc.0 as u64, id.clone());
            ids.push(doc);
        }
        let write = t.elapsed();

        let dir = tempfile::tempdir().unwrap();
        let replica_dir = dir.path().join("replica");
        let t = Instant::now();
        let mut follower = IndexFollower::new(
            &db,
            TantivyIndex::open(&replica_dir).unwrap(),
            state_file(&replica_dir),
        )
        .unwrap();
        follower.catch_up().unwrap();
        let catch_up = t.elapsed();

        // Local mode: the same entries straight into an index.
        let local = TantivyIndex::open(dir.path().join("local")).unwrap();
        for chunk in PgDocuments::new(&db).index_entries(&ids).unwrap() {
            let entry = ChunkEntry {
                chunk_id: chunk.chunk_id.0 as u64,
                title: &chunk.title,
                heading: &chunk.heading,
                body: &chunk.text,
            };
            local
                .replace_document(chunk.document_id.0 as u64, &[entry])
                .unwrap();
        }
        local.commit().unwrap();

        let (fts_ndcg, fts_t) =
            postgres_fts(&db, corpus, if n == 0 { "english" } else { "simple" });
        let (local_ndcg, local_t) = evaluate(&local, corpus, &ext);
        let (replica_ndcg, replica_t) = evaluate(follower.index(), corpus, &ext);
        println!(
            "| {} | {} | {} | {:.1} s ({:.0} docs/s) | {:.1} s ({:.0} docs/s) | {local_ndcg:.4} | {replica_ndcg:.4} | {:+.4} | {:.2} / {:.2} | {:.2} / {:.2} |",
            corpus.name,
            corpus.docs.len(),
            corpus.queries.len(),
            write.as_secs_f64(),
            corpus.docs.len() as f64 / write.as_secs_f64(),
            catch_up.as_secs_f64(),
            corpus.docs.len() as f64 / catch_up.as_secs_f64(),
            replica_ndcg - local_ndcg,
            ms(&local_t, 0.5),
            ms(&local_t, 0.95),
            ms(&replica_t, 0.5),
            ms(&replica_t, 0.95),
        );
        println!(
            "|   PostgreSQL text search ({}) | | | | | | {fts_ndcg:.4} | {:+.4} | | {:.2} / {:.2} |",
            if n == 0 { "english" } else { "simple" },
            fts_ndcg - local_ndcg,
            ms(&fts_t, 0.5),
            ms(&fts_t, 0.95),
        );
        if n == 0 {
            delay(&db, source, follower);
        }
    }
}

/// The alternative to a tantivy index per replica: PostgreSQL's own text search (GIN index,
/// `ts_rank_cd`, the query's words OR-ed as BM25 does), for the decision in docs/measurements.md.
fn postgres_fts(db: &Database, corpus: &Corpus, config: &str) -> (f64, Vec<Duration>) {
    let mut client = db.client().unwrap();
    client
        .batch_execute(&format!(
            "CREATE TABLE fts AS SELECT d.path, to_tsvector('{config}', COALESCE(d.title, '') || ' ' || c.text) AS tsv
                 FROM chunks c JOIN documents d ON d.id = c.document_id;
             CREATE INDEX fts_tsv ON fts USING gin (tsv); ANALYZE fts;"
        ))
        .unwrap();
    let sql = format!(
        "WITH query AS (
             SELECT NULLIF(replace(plainto_tsquery('{config}', $1)::text, '&', '|'), '')::tsquery AS q)
         SELECT path FROM fts, query WHERE tsv @@ q ORDER BY ts_rank_cd(tsv, q) DESC LIMIT 10"
    );
    let mut total = 0.0;
    let mut times = Vec::new();
    for (text, rels) in &corpus.queries {
        let t = Instant::now();
        let rows = client
            .query(&sql, &[text])
            .unwrap_or_else(|e| panic!("{e:?}"));
        times.push(t.elapsed());
        let ranked: Vec<String> = rows
            .iter()
            .map(|r| {
                r.get::<_, String>(0)
                    .trim_start_matches("/bench/")
                    .to_string()
            })
            .collect();
        total += ndcg10(&ranked, rels);
    }
    times.sort();
    (total / corpus.queries.len().max(1) as f64, times)
}

/// Commit-to-searchable delay on a following replica, over writes spaced 100 ms apart.
fn delay(db: &Database, source: SourceId, mut follower: IndexFollower<TantivyIndex>) {
    let applied_at: Arc<Mutex<Vec<(i64, Instant)>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let thread = {
        let (applied_at, stop) = (applied_at.clone(), stop.clone());
        std::thread::spawn(move || {
            follower
                .follow(Duration::from_secs(1), |f| {
                    applied_at
                        .lock()
                        .unwrap()
                        .push((f.applied(), Instant::now()));
                    stop.load(std::sync::atomic::Ordering::Relaxed)
                })
                .unwrap();
        })
    };
    let docs = PgDocuments::new(db);
    let mut commits = Vec::new();
    for i in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        store(
            &docs,
            source,
            &format!("/bench/live-{i}"),
            "live",
            "fresh text",
        );
        let committed = Instant::now();
        commits.push((docs.last_change().unwrap(), committed));
    }
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    // The follower checks `stop` after its next wake-up (at most the 1 s poll).
    thread.join().unwrap();
    let applied = applied_at.lock().unwrap();
    let mut delays: Vec<Duration> = commits
        .iter()
        .filter_map(|(seq, at)| {
            applied
                .iter()
                .find(|(s, _)| s >= seq)
                .map(|(_, when)| when.saturating_duration_since(*at))
        })
        .collect();
    delays.sort();
    println!();
    println!("| writes | applied | delay p50 ms | p95 ms | max ms | poll (fallback) |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {:.1} | {:.1} | {:.1} | 1 s |",
        commits.len(),
        delays.len(),
        ms(&delays, 0.5),
        ms(&delays, 0.95),
        delays.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    );
}
