//! `knowhub eval retrieval`: retrieval quality on a BEIR-format dataset.
//!
//! The corpus (`corpus.jsonl`: `_id`, `title`, `text`) is written out as one Markdown file per
//! document (title as its heading) and ingested by the real engine — parser, chunker, tantivy,
//! embedder — into a work directory (throw-away unless `--work-dir` is given, in which case a
//! re-run reuses the stored vectors). Every query with judgements in the qrels file is run in
//! each mode; documents are ranked by their best passage (one passage per document).
//! Metrics follow BEIR / trec_eval: nDCG@10 with linear gains, Recall@k, MRR@10.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use knowhub_engine::{
    Engine, Fusion, IngestEvent, IngestOptions, ParserBackend, RetrievalMode, SearchOptions,
    dev_context,
};
use serde::Serialize;

use crate::ModelArgs;

/// Arguments of `knowhub eval retrieval`.
#[derive(Debug, clap::Args)]
pub(crate) struct RetrievalArgs {
    /// BEIR dataset folder: corpus.jsonl, queries.jsonl, qrels/*.tsv.
    #[arg(long)]
    dataset: PathBuf,
    /// Relevance judgements (TSV: query-id, corpus-id, score); default: qrels/test.tsv, else
    /// the only .tsv in qrels/.
    #[arg(long)]
    qrels: Option<PathBuf>,
    /// Keep the ingested corpus here and reuse it on the next run (vectors included).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Evaluate at most this many queries (the first ones in the qrels file).
    #[arg(long)]
    max_queries: Option<usize>,
    /// Extra hybrid rows with other fusion settings: `rrf:K[:KEYWORD_WEIGHT]` or
    /// `weighted:ALPHA` (weight of the dense score). Repeatable.
    #[arg(long)]
    fusion: Vec<String>,
    /// Evaluate team mode: records and vectors in this PostgreSQL database (fill it first with
    /// `knowhub migrate` from the `--work-dir`'s `kb` to reuse its vectors), the full-text index
    /// a replica's, in `<work dir>/kb-team`.
    #[arg(long, value_name = "URL")]
    team_database: Option<String>,
}

#[derive(Debug, Serialize)]
struct Row {
    system: String,
    queries: usize,
    ndcg_at_10: f64,
    recall_at_5: f64,
    recall_at_10: f64,
    recall_at_100: f64,
    mrr_at_10: f64,
    p50_ms: f64,
    p95_ms: f64,
    /// Why the row has no numbers.
    skipped: Option<String>,
}

#[derive(Debug, Serialize)]
struct Report {
    dataset: String,
    qrels: String,
    documents: usize,
    chunks: u64,
    embedder: Option<String>,
    reranker: Option<String>,
    /// `sqlite` (local mode) or `postgres` (team mode).
    store: String,
    ingest_seconds: f64,
    rows: Vec<Row>,
}

pub(crate) fn read_jsonl(path: &Path) -> Result<Vec<serde_json::Value>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{}: line {}", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line)
                .with_context(|| format!("{}: line {} is not JSON", path.display(), i + 1))?,
        );
    }
    Ok(out)
}

pub(crate) fn field<'a>(v: &'a serde_json::Value, name: &str) -> &'a str {
    v.get(name).and_then(|x| x.as_str()).unwrap_or("")
}

/// `_id` may be a string or a number in BEIR files.
pub(crate) fn id_of(v: &serde_json::Value) -> Option<String> {
    match v.get("_id")? {
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

type Qrels = Vec<(String, HashMap<String, u32>)>;

fn read_qrels(path: &Path) -> Result<Qrels> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut order: Vec<String> = Vec::new();
    let mut map: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').map(str::trim).collect();
        if cols.len() < 3 || (i == 0 && cols[2].parse::<f64>().is_err()) {
            continue; // header or blank
        }
        let score: f64 = cols[2]
            .parse()
            .with_context(|| format!("{}: line {}: bad score", path.display(), i + 1))?;
        let q = cols[0].to_owned();
        if !map.contains_key(&q) {
            order.push(q.clone());
        }
        map.entry(q)
            .or_default()
            .insert(cols[1].to_owned(), score.max(0.0) as u32);
    }
    Ok(order
        .into_iter()
        .filter_map(|q| map.remove(&q).map(|m| (q, m)))
        .collect())
}

fn default_qrels(dataset: &Path) -> Result<PathBuf> {
    let dir = dataset.join("qrels");
    let test = dir.join("test.tsv");
    if test.is_file() {
        return Ok(test);
    }
    let tsvs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("no qrels folder in {}", dataset.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tsv"))
        .collect();
    match tsvs.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!("no qrels/*.tsv in {}", dataset.display()),
        _ => bail!(
            "several qrels files in {}: choose one with --qrels",
            dir.display()
        ),
    }
}

fn parse_fusion(spec: &str) -> Result<Fusion> {
    let parts: Vec<&str> = spec.split(':').collect();
    let num = |s: &str| -> Result<f32> {
        s.parse::<f32>()
            .with_context(|| format!("bad number {s:?} in fusion {spec:?}"))
    };
    Ok(match parts.as_slice() {
        ["rrf"] => Fusion::Rrf {
            k: 60.0,
            keyword_weight: 1.0,
        },
        ["rrf", k] => Fusion::Rrf {
            k: num(k)?,
            keyword_weight: 1.0,
        },
        ["rrf", k, w] => Fusion::Rrf {
            k: num(k)?,
            keyword_weight: num(w)?,
        },
        ["weighted", a] => Fusion::Weighted { alpha: num(a)? },
        _ => bail!("unknown fusion {spec:?} (rrf:K[:W] or weighted:ALPHA)"),
    })
}

/// Graded nDCG@k with linear gains (trec_eval's ndcg_cut).
fn ndcg(ranked: &[&str], rels: &HashMap<String, u32>, k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, d)| f64::from(rels.get(*d).copied().unwrap_or(0)) / ((i + 2) as f64).log2())
        .sum();
    let mut ideal: Vec<u32> = rels.values().copied().filter(|r| *r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, r)| f64::from(*r) / ((i + 2) as f64).log2())
        .sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

fn recall(ranked: &[&str], rels: &HashMap<String, u32>, k: usize) -> f64 {
    let relevant = rels.values().filter(|r| **r > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|d| rels.get(**d).is_some_and(|r| *r > 0))
        .count();
    found as f64 / relevant as f64
}

fn mrr(ranked: &[&str], rels: &HashMap<String, u32>, k: usize) -> f64 {
    ranked
        .iter()
        .take(k)
        .position(|d| rels.get(*d).is_some_and(|r| *r > 0))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Writes the corpus as Markdown files (skipped when a previous run left the same set) and
/// returns the corpus id of every file stem.
pub(crate) fn write_corpus(dataset: &Path, dir: &Path) -> Result<Vec<String>> {
    let docs = read_jsonl(&dataset.join("corpus.jsonl"))?;
    let ids: Vec<String> = docs.iter().map(|d| id_of(d).unwrap_or_default()).collect();
    let manifest = dir.join("ids.json");
    let same = std::fs::read(&manifest)
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<String>>(&b).ok())
        .is_some_and(|old| old == ids);
    if same {
        return Ok(ids);
    }
    let files = dir.join("corpus");
    if files.exists() {
        std::fs::remove_dir_all(&files)?;
    }
    for (n, d) in docs.iter().enumerate() {
        let sub = files.join(format!("{:03}", n / 1000));
        if n % 1000 == 0 {
            std::fs::create_dir_all(&sub)?;
        }
        let title = field(d, "title").replace(['\n', '\r'], " ");
        let text = field(d, "text");
        let body = if title.trim().is_empty() {
            format!("{text}\n")
        } else {
            format!("# {}\n\n{text}\n", title.trim())
        };
        std::fs::write(sub.join(format!("{n}.md")), body)?;
    }
    std::fs::write(&manifest, serde_json::to_vec(&ids)?)?;
    Ok(ids)
}

pub(crate) fn run(args: RetrievalArgs, models: &ModelArgs, json: bool) -> Result<ExitCode> {
    let dataset = &args.dataset;
    if !dataset.join("corpus.jsonl").is_file() {
        bail!(
            "{} is not a BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/)",
            dataset.display()
        );
    }
    let qrels_path = match &args.qrels {
        Some(p) if p.is_file() => p.clone(),
        Some(p) if dataset.join("qrels").join(p).is_file() => dataset.join("qrels").join(p),
        Some(p) => bail!("qrels file {} not found", p.display()),
        None => default_qrels(dataset)?,
    };
    let mut qrels = read_qrels(&qrels_path)?;
    let queries: HashMap<String, String> = read_jsonl(&dataset.join("queries.jsonl"))?
        .iter()
        .filter_map(|q| Some((id_of(q)?, field(q, "text").to_owned())))
        .collect();
    qrels.retain(|(q, _)| queries.contains_key(q));
    if let Some(n) = args.max_queries {
        qrels.truncate(n);
    }
    if qrels.is_empty() {
        bail!("no query of {} has judgements", qrels_path.display());
    }
    let fusions: Vec<(String, Fusion)> = args
        .fusion
        .iter()
        .map(|s| Ok((s.clone(), parse_fusion(s)?)))
        .collect::<Result<_>>()?;

    let temp;
    let work = match &args.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let ids = write_corpus(dataset, &work)?;

    let mut config = match &args.team_database {
        Some(url) => {
            let mut config = crate::engine_config(work.join("kb-team"))?;
            config.team = Some(knowhub_engine::team::TeamConfig::new(url.clone()));
            config
        }
        None => crate::engine_config(work.join("kb"))?,
    };
    // The corpus is project-written Markdown: parse in-process, no sandbox needed.
    config.parser = ParserBackend::InProcess;
    config.models = models.config()?;
    // Measuring "dense" without the model would be meaningless: fail with the fetch command.
    config.models.require_embedder = true;
    let engine = Engine::open(config).context("cannot open the evaluation knowledge base")?;
    let started = Instant::now();
    let verbose = !json;
    let tty = std::io::stderr().is_terminal();
    let mut last = Instant::now();
    engine.ingest(
        &dev_context(),
        &[work.join("corpus")],
        &IngestOptions::default(),
        &mut |e| {
            if let IngestEvent::Embedded { done, total } = e
                && verbose
                && (last.elapsed().as_secs() >= 10 || done == total)
            {
                last = Instant::now();
                let end = if tty { "\r" } else { "\n" };
                eprint!("embedding: {done}/{total} chunks{end}");
                let _ = std::io::stderr().flush();
            }
        },
    )?;
    let ingest_seconds = started.elapsed().as_secs_f64();
    let status = engine.status(&dev_context())?;

    let doc_of_path = |path: &str| -> Option<&str> {
        let stem = Path::new(path).file_stem()?.to_str()?;
        ids.get(stem.parse::<usize>().ok()?).map(String::as_str)
    };

    let dense_skip = engine.embedder_id().is_none().then(|| {
        engine
            .model_notes()
            .first()
            .cloned()
            .unwrap_or_else(|| "no embedder (--embedder off)".to_owned())
    });
    let mut systems: Vec<(String, SearchOptions, Option<String>)> = Vec::new();
    let base = SearchOptions {
        limit: 100,
        max_per_document: 1,
        candidates: 200,
        rerank_top: 0,
        snippet_chars: 80,
        ..SearchOptions::default()
    };
    let with = |mode, fusion: Option<Fusion>, rerank| SearchOptions {
        mode,
        fusion: fusion.unwrap_or_default(),
        rerank_top: rerank,
        ..base.clone()
    };
    systems.push(("BM25".into(), with(RetrievalMode::Keyword, None, 0), None));
    systems.push((
        "dense".into(),
        with(RetrievalMode::Semantic, None, 0),
        dense_skip.clone(),
    ));
    systems.push((
        "hybrid".into(),
        with(RetrievalMode::Hybrid, None, 0),
        dense_skip.clone(),
    ));
    for (name, f) in &fusions {
        systems.push((
            format!("hybrid ({name})"),
            with(RetrievalMode::Hybrid, Some(*f), 0),
            dense_skip.clone(),
        ));
    }
    let rerank_skip = match (&dense_skip, engine.reranker_id()) {
        (Some(why), _) => Some(why.clone()),
        (None, None) => Some("no reranker configured (--reranker <folder>)".to_owned()),
        (None, Some(_)) => None,
    };
    systems.push((
        "hybrid + rerank".into(),
        with(RetrievalMode::Hybrid, None, 30),
        rerank_skip,
    ));

    let mut rows = Vec::new();
    for (name, options, skip) in &systems {
        if let Some(reason) = skip {
            rows.push(Row {
                system: name.clone(),
                queries: 0,
                ndcg_at_10: 0.0,
                recall_at_5: 0.0,
                recall_at_10: 0.0,
                recall_at_100: 0.0,
                mrr_at_10: 0.0,
                p50_ms: 0.0,
                p95_ms: 0.0,
                skipped: Some(reason.clone()),
            });
            continue;
        }
        let (mut n10, mut r5, mut r10, mut r100, mut m10) = (0.0, 0.0, 0.0, 0.0, 0.0);
        let mut times = Vec::with_capacity(qrels.len());
        for (qid, rels) in &qrels {
            let text = queries.get(qid).map(String::as_str).unwrap_or("");
            let t = Instant::now();
            let result = engine.retrieve(&dev_context(), text, options);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            let hits = match result {
                Ok(r) => r.hits,
                // A query without searchable words finds nothing by keyword: a miss, not a
                // failed evaluation.
                Err(knowhub_engine::EngineError::InvalidInput(_)) => Vec::new(),
                Err(e) => return Err(e.into()),
            };
            let mut seen = HashSet::new();
            let ranked: Vec<&str> = hits
                .iter()
                .filter_map(|h| doc_of_path(&h.path))
                .filter(|d| seen.insert(*d))
                .collect();
            n10 += ndcg(&ranked, rels, 10);
            r5 += recall(&ranked, rels, 5);
            r10 += recall(&ranked, rels, 10);
            r100 += recall(&ranked, rels, 100);
            m10 += mrr(&ranked, rels, 10);
        }
        times.sort_by(f64::total_cmp);
        let q = qrels.len() as f64;
        rows.push(Row {
            system: name.clone(),
            queries: qrels.len(),
            ndcg_at_10: n10 / q,
            recall_at_5: r5 / q,
            recall_at_10: r10 / q,
            recall_at_100: r100 / q,
            mrr_at_10: m10 / q,
            p50_ms: percentile(&times, 0.5),
            p95_ms: percentile(&times, 0.95),
            skipped: None,
        });
    }

    let report = Report {
        dataset: dataset.display().to_string(),
        qrels: qrels_path.display().to_string(),
        documents: ids.len(),
        chunks: status.store.chunks,
        embedder: engine.embedder_id().map(str::to_owned),
        reranker: engine.reranker_id().map(str::to_owned),
        store: if args.team_database.is_some() {
            "postgres"
        } else {
            "sqlite"
        }
        .to_owned(),
        ingest_seconds,
        rows,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{}: {} documents ({} chunks), {} queries judged in {}; embedder {}; store {}; ingest {:.0} s",
            report.dataset,
            report.documents,
            report.chunks,
            qrels.len(),
            report.qrels,
            report.embedder.as_deref().unwrap_or("none"),
            report.store,
            report.ingest_seconds
        );
        println!();
        println!(
            "| system | nDCG@10 | Recall@5 | Recall@10 | Recall@100 | MRR@10 | p50 ms | p95 ms |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for r in &report.rows {
            match &r.skipped {
                Some(why) => println!("| {} | skipped: {why} | | | | | | |", r.system),
                None => println!(
                    "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} |",
                    r.system,
                    r.ndcg_at_10,
                    r.recall_at_5,
                    r.recall_at_10,
                    r.recall_at_100,
                    r.mrr_at_10,
                    r.p50_ms,
                    r.p95_ms
                ),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rels(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
        pairs.iter().map(|(d, r)| ((*d).to_owned(), *r)).collect()
    }

    #[test]
    fn metrics_match_hand_computed_values() {
        let r = rels(&[("a", 1), ("b", 2)]);
        // Perfect order: b (gain 2) then a (gain 1).
        assert!((ndcg(&["b", "a"], &r, 10) - 1.0).abs() < 1e-12);
        // a at rank 1, b at rank 3: (1 + 2/log2(4)) / (2 + 1/log2(3)).
        let expected = (1.0 + 2.0 / 2.0) / (2.0 + 1.0 / 3f64.log2());
        assert!((ndcg(&["a", "x", "b"], &r, 10) - expected).abs() < 1e-12);
        assert_eq!(recall(&["x", "a"], &r, 1), 0.0);
        assert_eq!(recall(&["x", "a"], &r, 2), 0.5);
        assert_eq!(mrr(&["x", "y", "b"], &r, 10), 1.0 / 3.0);
        assert_eq!(mrr(&["x"], &r, 10), 0.0);
        assert_eq!(ndcg(&[], &rels(&[]), 10), 0.0);
    }

    #[test]
    fn fusion_specs_parse_or_fail_clearly() {
        assert_eq!(
            parse_fusion("rrf:20:0.5").unwrap(),
            Fusion::Rrf {
                k: 20.0,
                keyword_weight: 0.5
            }
        );
        assert_eq!(
            parse_fusion("weighted:0.7").unwrap(),
            Fusion::Weighted { alpha: 0.7 }
        );
        assert!(parse_fusion("max").is_err());
        assert!(parse_fusion("rrf:x").is_err());
    }

    #[test]
    fn qrels_skip_the_header_and_keep_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.tsv");
        std::fs::write(
            &p,
            "query-id\tcorpus-id\tscore\n2\td1\t1\n1\td2\t2\n2\td3\t0\n",
        )
        .unwrap();
        let q = read_qrels(&p).unwrap();
        assert_eq!(q[0].0, "2");
        assert_eq!(q[0].1.get("d3"), Some(&0));
        assert_eq!(q[1].1.get("d2"), Some(&2));
    }
}
