//! `knowhub bench ingest`: parse+index throughput on a folder, with poppler's `pdftotext` on
//! the same PDFs beside it. `knowhub bench search`: keyword search latency over a folder.
//! `knowhub bench retrieval`: the retrieval speed targets (embedding throughput, hybrid query
//! latency at 10k/100k chunks, exact dense search over 1M vectors) in one table.
//! Benchmarks that print tables, never timed tests.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Subcommand;
use knowhub_embed::{BertEmbedder, Device, Embedder};
use knowhub_engine::{
    DEFAULT_EMBEDDER, Engine, EngineConfig, IngestOptions, ModelSet, ParserBackend, RealFs,
    RequestContext, RetrievalMode, Role, SearchOptions, UserId, dev_context,
};
use knowhub_vector::{FlatIndex, synthetic_unit_vectors};
use serde::Serialize;

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Cold parse+chunk+index throughput of a folder (files/s, MB/s, pages/s), then PDFs only
    /// against `pdftotext` run with the same parallelism.
    Ingest {
        #[arg(default_value = "../shared/corpora/documents")]
        folder: PathBuf,
    },
    /// Search latency over an ingested folder (p50/p95 of the given queries, repeated).
    Search {
        folder: PathBuf,
        #[arg(long, num_args = 1.., default_values_t = ["annual leave".to_string(), "年假 试用期".to_string(), "deployment timeout".to_string()])]
        queries: Vec<String>,
        #[arg(long, default_value_t = 50)]
        rounds: usize,
    },
    /// The retrieval speed targets in one table: embedding throughput of the default models,
    /// hybrid query latency on generated corpora, and (with --dense-1m) exact dense search
    /// over 1M vectors.
    Retrieval(RetrievalArgs),
    /// Watched-folder scale: generate small mixed files, then time to fully indexed, peak
    /// memory, one edit → searchable with the watcher running, and a restart's reconcile.
    Watch(crate::bench_watch::WatchBenchArgs),
    /// `/api/v1/search` under load as a USER reading half the documents: local mode (SQLite)
    /// beside team mode (PostgreSQL + pgvector) with one and two replicas.
    Team(crate::bench_team::TeamBenchArgs),
    /// The models on the GPU against the CPU (builds with `--features cuda` or `metal`): do
    /// embeddings and greedy answers agree, and how fast is each device.
    Device(crate::bench_device::DeviceArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct RetrievalArgs {
    /// Corpus sizes (chunks, comma-separated) to measure hybrid query latency at.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000])]
    chunks: Vec<usize>,
    /// Queries per corpus size (each run as ROOT, then as a USER whose ACLs allow ~half).
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Also time exact dense search over 1M synthetic 384-d vectors (about 1.2 GB).
    #[arg(long)]
    dense_1m: bool,
    /// Passages for the embedding throughput (SciFact abstracts, else demo paragraphs);
    /// 0 skips the embedding rows.
    #[arg(long, default_value_t = 200)]
    embed_texts: usize,
    /// Timed embedding runs per model (the best and the median are reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Threads for the embedding throughput (a rayon pool of this size).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// The SciFact corpus (BEIR `corpus.jsonl`) the embedding passages come from.
    #[arg(
        long,
        env = "KNOWHUB_SCIFACT",
        default_value = "../shared/corpora/scifact/corpus.jsonl"
    )]
    scifact: PathBuf,
    /// Print the results as JSON instead of a Markdown table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(
    cmd: BenchCommand,
    models: &crate::ModelArgs,
    llm: &crate::ask::LlmArgs,
) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Ingest { folder } => ingest(&folder),
        BenchCommand::Search {
            folder,
            queries,
            rounds,
        } => search(&folder, &queries, rounds),
        BenchCommand::Retrieval(args) => retrieval(&args),
        BenchCommand::Watch(args) => crate::bench_watch::run(&args),
        BenchCommand::Device(args) => crate::bench_device::run(&args, models, llm),
        BenchCommand::Team(args) => crate::bench_team::run(&args),
    }
}

struct Run {
    files: usize,
    bytes: u64,
    pages: u64,
    chunks: usize,
    seconds: f64,
}

fn timed_ingest(inputs: &[PathBuf]) -> Result<Run> {
    let data = tempfile::tempdir()?;
    let engine = Engine::open(crate::engine_config(data.path().to_path_buf())?)?;
    let t = Instant::now();
    let report = engine.ingest(
        &dev_context(),
        inputs,
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let seconds = t.elapsed().as_secs_f64();
    let status = engine.status(&dev_context())?;
    Ok(Run {
        files: report.files,
        bytes: report.bytes,
        pages: status.store.pages,
        chunks: report.chunks,
        seconds,
    })
}

fn row(name: &str, r: &Run) {
    println!(
        "| {name} | {} | {:.1} | {} | {:.2} | {:.1} | {:.2} | {:.1} | {} |",
        r.files,
        r.bytes as f64 / 1e6,
        r.pages,
        r.seconds,
        r.files as f64 / r.seconds,
        r.bytes as f64 / 1e6 / r.seconds,
        r.pages as f64 / r.seconds,
        r.chunks
    );
}

fn ingest(folder: &Path) -> Result<ExitCode> {
    if !folder.is_dir() {
        eprintln!("skipped: folder {} not found", folder.display());
        return Ok(ExitCode::SUCCESS);
    }
    let workers = std::thread::available_parallelism()
        .map(|n| n.get().min(4))
        .unwrap_or(2);
    println!(
        "cold ingest (parse in {workers} sandboxed workers + chunk + SQLite + tantivy commit)\n"
    );
    println!("| run | files | MB | pages | seconds | files/s | MB/s | pages/s | chunks |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let all = timed_ingest(&[folder.to_path_buf()])?;
    row("all formats", &all);

    let mut pdfs: Vec<PathBuf> = walk_pdfs(folder);
    pdfs.sort();
    let ours = timed_ingest(&pdfs)?;
    row("PDF only, KnowHub", &ours);

    let have_poppler = std::process::Command::new("pdftotext")
        .arg("-v")
        .output()
        .is_ok();
    if !have_poppler {
        println!("\npdftotext not installed (Debian: poppler-utils); no comparison");
        return Ok(ExitCode::SUCCESS);
    }
    let t = Instant::now();
    let chunks: Vec<Vec<PathBuf>> = (0..workers)
        .map(|w| pdfs.iter().skip(w).step_by(workers).cloned().collect())
        .collect();
    std::thread::scope(|s| {
        for part in &chunks {
            s.spawn(move || {
                for pdf in part {
                    // Same bound as ours: a hostile file may not stall the comparison.
                    let _ = std::process::Command::new("timeout")
                        .args(["30", "pdftotext", "-q"])
                        .arg(pdf)
                        .arg("/dev/null")
                        .output();
                }
            });
        }
    });
    let poppler = Run {
        files: pdfs.len(),
        bytes: ours.bytes,
        pages: ours.pages,
        chunks: 0,
        seconds: t.elapsed().as_secs_f64(),
    };
    row("PDF only, pdftotext (text extraction only)", &poppler);
    println!(
        "\nKnowHub PDF throughput / pdftotext = {:.2} (higher is better; KnowHub also chunks, stores and indexes)",
        poppler.seconds / ours.seconds
    );
    Ok(ExitCode::SUCCESS)
}

fn walk_pdfs(folder: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![folder.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pdf")) {
                out.push(p);
            }
        }
    }
    out
}

fn search(folder: &Path, queries: &[String], rounds: usize) -> Result<ExitCode> {
    let data = tempfile::tempdir()?;
    let engine = Engine::open(crate::engine_config(data.path().to_path_buf())?)?;
    engine.ingest(
        &dev_context(),
        &[folder.to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let chunks = engine.status(&dev_context())?.indexed_chunks;
    let mut times = Vec::new();
    for _ in 0..rounds.max(1) {
        for q in queries {
            let t = Instant::now();
            let _ = engine.search(&dev_context(), q, &Default::default())?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    println!("| chunks | searches | p50 ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    println!(
        "| {chunks} | {} | {:.2} | {:.2} | {:.2} |",
        times.len(),
        pct(0.5),
        pct(0.95),
        pct(1.0)
    );
    Ok(ExitCode::SUCCESS)
}

// --- `knowhub bench retrieval` -----------------------------------------------------------------

/// Truncation of the embedding-throughput runs: the same as `scripts/bench_embed_pytorch.py`
/// and the embed crate's `embed_bench`, so the numbers compare.
const EMBED_MAX_TOKENS: usize = 256;
/// The second default embedder (English only, smaller and faster).
const MINILM: &str = "all-MiniLM-L6-v2";
/// The targets.
const HYBRID_TARGET_CHUNKS: usize = 100_000;
const HYBRID_P95_TARGET_MS: f64 = 30.0;
const DENSE_P95_TARGET_MS: f64 = 60.0;
const EMBED_RATIO_TARGET: f64 = 1.5;
/// Sections (each one chunk) per generated file.
pub(crate) const CHUNKS_PER_FILE: usize = 5;
/// Queries run before timing (not counted).
pub(crate) const WARMUP_QUERIES: usize = 10;
/// Query terms are drawn from ranks at or past this one (the top ranks act as stop words).
const QUERY_MIN_RANK: usize = 30;
/// Vocabulary sizes of the generated corpus (demo words first, then made-up ones).
const EN_VOCAB: usize = 20_000;
const ZH_VOCAB: usize = 10_000;
/// Exact dense search over 1M vectors (the shape of `crates/knowhub-vector/benches/flat.rs`).
const DENSE_VECTORS: usize = 1_000_000;
const DENSE_DIM: usize = 384;
const DENSE_VECTORS_PER_DOC: usize = 10;

#[derive(Debug, Default, Serialize)]
struct RetrievalReport {
    /// 1-minute load average when the benchmark started (the machine may be shared).
    load_avg_1m: Option<f64>,
    targets: Targets,
    embedding: Vec<EmbedRow>,
    hybrid: Vec<HybridRow>,
    dense_1m: Option<DenseReport>,
    /// Parts that did not run, with the reason.
    skipped: Vec<String>,
    notes: Vec<String>,
}

/// The speed targets, for the JSON.
#[derive(Debug, Serialize)]
struct Targets {
    hybrid_p95_ms: f64,
    hybrid_at_chunks: usize,
    dense_1m_p95_ms: f64,
    embedding_vs_pytorch: f64,
}

impl Default for Targets {
    fn default() -> Self {
        Targets {
            hybrid_p95_ms: HYBRID_P95_TARGET_MS,
            hybrid_at_chunks: HYBRID_TARGET_CHUNKS,
            dense_1m_p95_ms: DENSE_P95_TARGET_MS,
            embedding_vs_pytorch: EMBED_RATIO_TARGET,
        }
    }
}

#[derive(Debug, Serialize)]
struct EmbedRow {
    model: String,
    /// Where the passages came from.
    source: String,
    passages: usize,
    /// Tokens actually embedded (prefix and special tokens included, after truncation).
    tokens: usize,
    max_tokens: usize,
    threads: usize,
    runs: usize,
    best_s: f64,
    median_s: f64,
    tokens_per_s: f64,
    passages_per_s: f64,
    median_tokens_per_s: f64,
    /// VmRSS after loading minus before (MiB): an approximation of the model's resident memory.
    rss_delta_mib: Option<f64>,
    /// From the JSON `scripts/bench_embed_pytorch.py` writes, when present.
    pytorch: Option<PytorchRow>,
}

#[derive(Debug, Clone, Serialize)]
struct PytorchRow {
    tokens_per_s: f64,
    passages: Option<u64>,
    threads: Option<u64>,
    /// The 1-minute load average when PyTorch was measured.
    load_1m: Option<f64>,
    /// Our best tokens/s over PyTorch's.
    ratio: f64,
}

#[derive(Debug, Serialize)]
struct HybridRow {
    /// Chunks asked for with --chunks.
    target_chunks: usize,
    /// Chunks the engine stored (`status().store.chunks`).
    chunks: u64,
    documents: u64,
    embedded_chunks: u64,
    ingest_s: f64,
    queries: usize,
    /// Wall clock of `Engine::retrieve` (hybrid, no reranking, no filter).
    p50_ms: f64,
    p95_ms: f64,
    max_ms: f64,
    /// Medians of the retrieval trace's parts.
    keyword_p50_ms: f64,
    query_embed_p50_ms: f64,
    dense_p50_ms: f64,
    /// Medians of the candidates each retriever contributed.
    keyword_candidates_p50: f64,
    dense_candidates_p50: f64,
    /// Queries whose dense half returned nothing (should be 0).
    queries_without_dense: usize,
    /// The same queries as a USER whose folder ACLs allow about half the documents (the
    /// permission filter inside both scans, plus authorisation and the audit record).
    filter_allowed_documents: usize,
    filtered_p50_ms: f64,
    filtered_p95_ms: f64,
    /// Building that user's readable-document set after an ACL change (the cache miss).
    readable_set_ms: f64,
    /// Authorisation + audit record per query (wall time minus the retrieval's own total).
    access_p50_ms: f64,
    access_p95_ms: f64,
}

#[derive(Debug, Serialize)]
struct DenseReport {
    vectors: usize,
    dim: usize,
    k: usize,
    queries: usize,
    build_s: f64,
    /// `FlatIndex::memory_bytes`: int8 codes, scales, f16 copies and ids.
    memory_bytes: usize,
    rows: Vec<DenseRow>,
}

#[derive(Debug, Serialize)]
struct DenseRow {
    filter: String,
    p50_ms: f64,
    p95_ms: f64,
}

fn retrieval(args: &RetrievalArgs) -> Result<ExitCode> {
    let root = std::env::current_dir()
        .ok()
        .and_then(|cwd| knowhub_models::find_repo_root(&cwd))
        .unwrap_or_else(|| PathBuf::from("."));
    let mut report = RetrievalReport {
        load_avg_1m: load_avg(),
        ..Default::default()
    };
    let manifest = knowhub_models::Manifest::builtin()?;
    let models_dir = knowhub_models::default_models_dir();
    let locate = |name: &str| -> std::result::Result<PathBuf, String> {
        let dir = models_dir
            .as_deref()
            .ok_or("no models directory (set KNOWHUB_MODELS_DIR)")?;
        knowhub_models::require(&manifest, dir, name, knowhub_models::Depth::Quick)
            .map_err(|e| e.to_string())
    };

    embedding_section(args, &root, &locate, &mut report)?;

    if args.chunks.is_empty() {
        report
            .skipped
            .push("hybrid latency: no --chunks given".into());
    } else {
        match locate(DEFAULT_EMBEDDER) {
            Ok(dir) => {
                eprintln!("loading {DEFAULT_EMBEDDER} for query embedding…");
                let e5: Arc<dyn Embedder> = Arc::new(open_model(&dir)?);
                let vocab = Vocab::build(&root.join("assets/demo"));
                report.notes.push(format!("generated corpus vocabulary: {}", vocab.source));
                let mut queries = make_queries(&vocab, WARMUP_QUERIES + args.queries.max(1));
                let timed = queries.split_off(WARMUP_QUERIES);
                for &target in &args.chunks {
                    report
                        .hybrid
                        .push(hybrid_at(target, &queries, &timed, &e5, &vocab)?);
                }
            }
            Err(e) => report.skipped.push(format!(
                "hybrid latency: it embeds queries with {DEFAULT_EMBEDDER}, which is not installed ({e})"
            )),
        }
    }

    if args.dense_1m {
        report.dense_1m = Some(dense_1m(args.queries.max(1))?);
    }

    report.notes.extend([
        "Embedding: the models' own batching (length-sorted, 32 texts or 4096 tokens a batch), f32 \
         weights (e5's linear layers dequantized from Q4_0), on a rayon pool of the given threads."
            .to_string(),
        "Resident memory is the VmRSS difference across loading the model (/proc/self/status): an \
         approximation (allocator reuse, lazily touched mapped pages)."
            .to_string(),
        "PyTorch baseline: `scripts/bench_embed_pytorch.py --threads 2` (same texts, 256-token \
         truncation, batch 32) writes ~/.cache/knowhub/bench_embed_pytorch.json (or \
         $KNOWHUB_PYTORCH_BENCH), which this table reads for the ratio."
            .to_string(),
        format!(
            "Hybrid: generated bilingual pseudo-text (Zipf-distributed words), real chunking, \
             keyword index and query embedding (multilingual-e5-small); passage vectors are \
             deterministic pseudo-random unit vectors: {}, and the exact dense scan costs the \
             same whatever the values. No reranking; latency is the wall clock of the whole \
             `Engine::retrieve` call, after {WARMUP_QUERIES} warm-up queries.",
            real_embedding_time(&report)
        ),
        format!(
            "Threads: query embedding on rayon's global pool ({}), dense scan on up to 8 threads \
             ({} CPUs here).",
            rayon::current_num_threads(),
            std::thread::available_parallelism().map_or(1, |n| n.get())
        ),
    ]);
    if let Some(l) = report.load_avg_1m {
        report.notes.push(format!(
            "1-minute load average at the start: {l:.2} (on a shared machine the numbers vary with load)."
        ));
    }

    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_retrieval_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

// --- embedding throughput ------------------------------------------------------------------------

fn embedding_section(
    args: &RetrievalArgs,
    root: &Path,
    locate: &dyn Fn(&str) -> std::result::Result<PathBuf, String>,
    report: &mut RetrievalReport,
) -> Result<()> {
    if args.embed_texts == 0 {
        report
            .skipped
            .push("embedding throughput: --embed-texts 0".into());
        return Ok(());
    }
    let Some((texts, source)) = embedding_texts(&args.scifact, root, args.embed_texts) else {
        report
            .skipped
            .push("embedding throughput: no SciFact corpus and no demo texts".into());
        return Ok(());
    };
    // Every model is loaded before any runs, so each RSS delta measures the weights and not
    // freed activations the allocator hands out again.
    let mut loaded = Vec::new();
    for name in [DEFAULT_EMBEDDER, MINILM] {
        let dir = match locate(name) {
            Ok(dir) => dir,
            Err(e) => {
                report
                    .skipped
                    .push(format!("embedding throughput of {name}: {e}"));
                continue;
            }
        };
        eprintln!("loading {name}…");
        let before = vm_rss_mib();
        let model = open_model(&dir)?.with_max_tokens(EMBED_MAX_TOKENS);
        let delta = before.zip(vm_rss_mib()).map(|(b, a)| a - b);
        loaded.push((name, model, delta));
    }
    if loaded.is_empty() {
        return Ok(());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.max(1))
        .build()
        .context("cannot start the embedding thread pool")?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for (name, model, rss) in &loaded {
        eprintln!(
            "embedding {} passages with {name} on {} threads…",
            refs.len(),
            pool.current_num_threads()
        );
        let row = pool.install(|| -> Result<EmbedRow> {
            let tokens: usize = refs
                .iter()
                .map(|t| model.count_tokens(t).min(model.max_tokens()))
                .sum();
            model.embed_passages(&refs[..refs.len().min(8)])?; // warm-up
            let mut secs = Vec::new();
            for _ in 0..args.repeat.max(1) {
                let t = Instant::now();
                let v = model.embed_passages(&refs)?;
                secs.push(t.elapsed().as_secs_f64());
                anyhow::ensure!(v.len() == refs.len(), "{name}: wrong number of vectors");
            }
            secs.sort_by(f64::total_cmp);
            let (best, median) = (secs[0], secs[secs.len() / 2]);
            let tokens_per_s = tokens as f64 / best;
            Ok(EmbedRow {
                model: (*name).to_owned(),
                source: source.clone(),
                passages: refs.len(),
                tokens,
                max_tokens: model.max_tokens(),
                threads: rayon::current_num_threads(),
                runs: secs.len(),
                best_s: best,
                median_s: median,
                tokens_per_s,
                passages_per_s: refs.len() as f64 / best,
                median_tokens_per_s: tokens as f64 / median,
                rss_delta_mib: *rss,
                pytorch: pytorch_baseline(name, tokens_per_s),
            })
        })?;
        report.embedding.push(row);
    }
    Ok(())
}

/// An `E5S1` container (a `.bin` in the folder) or an HF BERT folder, as the engine loads them.
pub(crate) fn open_model(path: &Path) -> Result<BertEmbedder> {
    let bin = if path.is_file() {
        Some(path.to_path_buf())
    } else {
        std::fs::read_dir(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "bin"))
    };
    let model = match bin {
        Some(file) => BertEmbedder::from_e5s1(&file, Device::Cpu),
        None => BertEmbedder::from_hf_folder(path, Device::Cpu),
    };
    model.with_context(|| format!("cannot load the model at {}", path.display()))
}

/// The first `n` SciFact abstracts (`text` field, as the PyTorch script takes them), else the
/// demo documents' paragraphs (repeated up to `n`), with where they came from.
fn embedding_texts(scifact: &Path, root: &Path, n: usize) -> Option<(Vec<String>, String)> {
    if let Ok(file) = std::fs::File::open(scifact) {
        let texts: Vec<String> = std::io::BufReader::new(file)
            .lines()
            .map_while(std::result::Result::ok)
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
            .filter_map(|v| v.get("text")?.as_str().map(str::to_owned))
            .take(n)
            .collect();
        if !texts.is_empty() {
            let source = format!("SciFact abstracts ({})", scifact.display());
            return Some((texts, source));
        }
    }
    let paragraphs = demo_paragraphs(&root.join("assets/demo"));
    if paragraphs.is_empty() {
        return None;
    }
    let distinct = paragraphs.len();
    let texts: Vec<String> = paragraphs.into_iter().cycle().take(n).collect();
    Some((
        texts,
        format!("assets/demo paragraphs ({distinct} distinct, repeated; SciFact not found)"),
    ))
}

/// The paragraphs (40 characters or more) of the demo documents in `dir`.
pub(crate) fn demo_paragraphs(dir: &Path) -> Vec<String> {
    let mut paragraphs = Vec::new();
    for (_, text) in demo_texts(dir) {
        paragraphs.extend(
            text.split("\n\n")
                .map(str::trim)
                .filter(|p| p.chars().count() >= 40)
                .map(str::to_owned),
        );
    }
    paragraphs
}

/// tokens/s of `model` in the JSON written by `scripts/bench_embed_pytorch.py`, when present.
fn pytorch_baseline(model: &str, ours: f64) -> Option<PytorchRow> {
    let path = std::env::var_os("KNOWHUB_PYTORCH_BENCH")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/knowhub/bench_embed_pytorch.json"))
        })?;
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let r = v.get("results")?.get(model)?;
    let tokens_per_s = r.get("tokens_per_s")?.as_f64()?;
    Some(PytorchRow {
        tokens_per_s,
        passages: r.get("passages").and_then(serde_json::Value::as_u64),
        threads: r.get("threads").and_then(serde_json::Value::as_u64),
        load_1m: r.get("load_1m").and_then(serde_json::Value::as_f64),
        ratio: ours / tokens_per_s,
    })
}

/// The process's resident memory in MiB (Linux; `None` elsewhere).
fn vm_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

pub(crate) fn load_avg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

// --- hybrid latency on a generated corpus -------------------------------------------------------

/// The real model for queries and token counts (so chunking is the real one), deterministic
/// pseudo-random unit vectors for passages: the dense scan's cost does not depend on them.
pub(crate) struct SyntheticPassages {
    pub(crate) real: Arc<dyn Embedder>,
    pub(crate) id: String,
}

impl Embedder for SyntheticPassages {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.real.dim()
    }

    fn embed_passages(&self, texts: &[&str]) -> knowhub_embed::Result<Vec<Vec<f32>>> {
        let dim = self.dim();
        Ok(texts
            .iter()
            .map(|t| {
                let mut h = std::hash::DefaultHasher::new();
                t.hash(&mut h);
                synthetic_unit_vectors(1, dim, h.finish())
                    .pop()
                    .unwrap_or_else(|| vec![0.0; dim])
            })
            .collect())
    }

    fn embed_query(&self, text: &str) -> knowhub_embed::Result<Vec<f32>> {
        self.real.embed_query(text)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.real.count_tokens(text)
    }

    fn max_tokens(&self) -> usize {
        self.real.max_tokens()
    }
}

/// How long embedding the largest corpus for real would take at the measured e5 speed.
fn real_embedding_time(report: &RetrievalReport) -> String {
    let most = report.hybrid.iter().map(|h| h.chunks).max().unwrap_or(0);
    let e5 = report
        .embedding
        .iter()
        .find(|e| e.model == DEFAULT_EMBEDDER);
    match e5 {
        Some(e) if most > 0 && e.passages_per_s > 0.0 => format!(
            "embedding {} passages for real would take about {:.0} min at the {:.1} passages/s \
             measured above (longer at 512 tokens)",
            thousands(most),
            most as f64 / e.passages_per_s / 60.0,
            e.passages_per_s
        ),
        _ => "embedding 100k passages for real takes hours on 2 cores".to_string(),
    }
}

fn hybrid_at(
    target: usize,
    warmup: &[String],
    queries: &[String],
    e5: &Arc<dyn Embedder>,
    vocab: &Vocab,
) -> Result<HybridRow> {
    let tmp = tempfile::tempdir()?;
    let corpus = tmp.path().join("corpus");
    let files = target.div_ceil(CHUNKS_PER_FILE).max(1);
    eprintln!("writing {files} files (~{target} chunks)…");
    write_corpus(&corpus, files, vocab, target as u64)?;

    let mut config = EngineConfig::new(tmp.path().join("data"));
    config.parser = ParserBackend::InProcess;
    let models = ModelSet {
        embedder: Some(Arc::new(SyntheticPassages {
            id: format!("{}+synthetic-passages", e5.model_id()),
            real: Arc::clone(e5),
        })),
        reranker: None,
        ocr: None,
        notes: Vec::new(),
    };
    let engine = Engine::open_with(config, Arc::new(RealFs), models)?;
    eprintln!("ingesting (in-process parsing, synthetic passage vectors)…");
    let t = Instant::now();
    let ingested = engine.ingest(
        &dev_context(),
        std::slice::from_ref(&corpus),
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let ingest_s = t.elapsed().as_secs_f64();
    if ingested.failed > 0 {
        eprintln!(
            "warning: {} generated files failed to ingest",
            ingested.failed
        );
    }
    let status = engine.status(&dev_context())?;
    eprintln!(
        "{} documents, {} chunks ({} embedded) in {ingest_s:.1} s; {} queries…",
        status.store.documents,
        status.store.chunks,
        status.embedded_chunks,
        queries.len()
    );

    let options = SearchOptions {
        mode: RetrievalMode::Hybrid,
        rerank_top: 0,
        filter: None,
        ..SearchOptions::default()
    };
    for q in warmup {
        engine.retrieve(&dev_context(), q, &options)?;
    }
    let mut wall = Vec::with_capacity(queries.len());
    let (mut keyword, mut embed, mut dense) = (Vec::new(), Vec::new(), Vec::new());
    let (mut keyword_n, mut dense_n) = (Vec::new(), Vec::new());
    let mut without_dense = 0;
    let mut access = Vec::with_capacity(queries.len());
    for q in queries {
        let t = Instant::now();
        let r = engine
            .retrieve(&dev_context(), q, &options)
            .with_context(|| format!("query {q:?}"))?;
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        // What the call cost beyond retrieval itself: authorisation and the audit record.
        access.push(t.elapsed().as_secs_f64() * 1e3 - r.trace.total_ms);
        keyword.push(r.trace.keyword_ms);
        embed.push(r.trace.embed_ms);
        dense.push(r.trace.dense_ms);
        keyword_n.push(r.trace.keyword_candidates as f64);
        dense_n.push(r.trace.semantic_candidates as f64);
        if r.trace.semantic_candidates == 0 {
            without_dense += 1;
        }
    }

    // A user in team:bench; the corpus is shared with the team, every other part folder
    // is restricted to another team: about half the documents are readable.
    let admin = dev_context();
    let user = UserId::new("bench-user")?;
    engine.add_user(&admin, &user, "bench user", Role::User)?;
    engine.add_membership(&admin, &user, &"team:bench".parse()?)?;
    let parts: Vec<PathBuf> = std::fs::read_dir(&corpus)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    engine.set_folder_acl(&admin, &corpus, Some(&"team:bench".parse()?))?;
    let mut parts = parts;
    parts.sort();
    for part in parts.iter().skip(1).step_by(2) {
        engine.set_folder_acl(&admin, part, Some(&"team:other".parse()?))?;
    }
    let as_user = RequestContext {
        user: user.clone(),
        role: Role::User,
        ..dev_context()
    };
    let t = Instant::now();
    engine.authorize(&as_user)?;
    let readable_set_ms = t.elapsed().as_secs_f64() * 1e3;
    let filter_allowed_documents = engine.status(&as_user)?.store.documents as usize;
    let mut wall_filtered = Vec::with_capacity(queries.len());
    for q in queries {
        let t = Instant::now();
        engine
            .retrieve(&as_user, q, &options)
            .with_context(|| format!("query {q:?} as a user"))?;
        wall_filtered.push(t.elapsed().as_secs_f64() * 1e3);
    }

    let p = |v: &mut Vec<f64>, q: f64| percentile(v, q);
    Ok(HybridRow {
        target_chunks: target,
        chunks: status.store.chunks,
        documents: status.store.documents,
        embedded_chunks: status.embedded_chunks,
        ingest_s,
        queries: queries.len(),
        p50_ms: p(&mut wall, 0.5),
        p95_ms: p(&mut wall, 0.95),
        max_ms: p(&mut wall, 1.0),
        keyword_p50_ms: p(&mut keyword, 0.5),
        query_embed_p50_ms: p(&mut embed, 0.5),
        dense_p50_ms: p(&mut dense, 0.5),
        access_p50_ms: p(&mut access, 0.5),
        access_p95_ms: p(&mut access, 0.95),
        keyword_candidates_p50: p(&mut keyword_n, 0.5),
        dense_candidates_p50: p(&mut dense_n, 0.5),
        queries_without_dense: without_dense,
        filter_allowed_documents,
        filtered_p50_ms: p(&mut wall_filtered, 0.5),
        filtered_p95_ms: p(&mut wall_filtered, 0.95),
        readable_set_ms,
    })
}

/// Nearest-rank percentile (`q` in 0..=1); NaN for no samples.
pub(crate) fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// xorshift64*: deterministic, so every run generates the same corpus and queries.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Words with Zipf (s = 1) probabilities by rank.
struct Zipf {
    words: Vec<String>,
    cdf: Vec<f64>,
}

impl Zipf {
    /// `words` most frequent first; never empty.
    fn new(words: Vec<String>) -> Zipf {
        let mut acc = 0.0;
        let cdf = (0..words.len())
            .map(|r| {
                acc += 1.0 / (r as f64 + 1.0);
                acc
            })
            .collect();
        Zipf { words, cdf }
    }

    /// A word of rank `min_rank` or later (0-based), Zipf-distributed among those.
    fn sample(&self, rng: &mut Rng, min_rank: usize) -> &str {
        let total = self.cdf.last().copied().unwrap_or(0.0);
        let min_rank = min_rank.min(self.words.len().saturating_sub(1));
        let lo = match min_rank {
            0 => 0.0,
            r => self.cdf[r - 1],
        };
        let u = lo + rng.unit() * (total - lo);
        let i = self
            .cdf
            .partition_point(|&c| c < u)
            .max(min_rank)
            .min(self.words.len().saturating_sub(1));
        self.words.get(i).map_or("", String::as_str)
    }
}

/// English words and Chinese two-character words for the generated corpus.
pub(crate) struct Vocab {
    en: Zipf,
    zh: Zipf,
    source: String,
}

/// Fallback words when the demo documents are missing.
const BUILTIN_EN: &str = "the of and to in a is that for it as with on be by this are from or \
    at an employee leave annual policy days manager request approval security access password \
    deployment service timeout incident runbook release production database backup report team \
    project budget travel expense review contract customer support network server cluster \
    kubernetes monitoring alert latency error retry configuration document handbook training \
    probation salary benefit insurance holiday office meeting schedule quarter revenue";
const BUILTIN_ZH: &str = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同\
    工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制\
    机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看\
    原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入\
    常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干\
    做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收\
    证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话\
    米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿\
    千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院\
    查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严龙飞";

fn is_han(c: char) -> bool {
    ('\u{4E00}'..='\u{9FFF}').contains(&c)
}

/// Text files under `dir` (Markdown, plain text, HTML with its tags dropped).
fn demo_texts(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let ext = p
                .extension()
                .map(|x| x.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            let text = match ext.as_str() {
                "md" | "markdown" | "txt" => text,
                "html" | "htm" => strip_tags(&text),
                _ => continue,
            };
            out.push((p, text));
        }
    }
    out
}

fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Word frequencies of some texts, and the distinct Chinese characters in first-seen order.
#[derive(Default)]
struct WordCounts {
    en: HashMap<String, usize>,
    zh: HashMap<String, usize>,
    han: Vec<char>,
    seen_han: HashSet<char>,
}

impl WordCounts {
    /// Counts English words (2+ ASCII letters, lowercased) and Chinese runs cut into
    /// two-character words.
    fn add(&mut self, text: &str) {
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let start = i;
            if chars[i].is_ascii_alphabetic() {
                while i < chars.len() && chars[i].is_ascii_alphabetic() {
                    i += 1;
                }
                if i - start >= 2 {
                    let w: String = chars[start..i].iter().collect();
                    *self.en.entry(w.to_ascii_lowercase()).or_default() += 1;
                }
            } else if is_han(chars[i]) {
                while i < chars.len() && is_han(chars[i]) {
                    if self.seen_han.insert(chars[i]) {
                        self.han.push(chars[i]);
                    }
                    i += 1;
                }
                for pair in chars[start..i].chunks(2) {
                    *self.zh.entry(pair.iter().collect()).or_default() += 1;
                }
            } else {
                i += 1;
            }
        }
    }
}

impl Vocab {
    /// Words of the demo documents by frequency (English words; Chinese runs cut into
    /// two-character words), else a built-in list, then made-up words (English-like syllables,
    /// pairs of Chinese characters) up to [`EN_VOCAB`] and [`ZH_VOCAB`] for a long tail.
    pub(crate) fn build(demo: &Path) -> Vocab {
        let mut counts = WordCounts::default();
        let texts = demo_texts(demo);
        for (_, text) in &texts {
            counts.add(text);
        }
        let from_demo = counts.en.len() >= 50 && counts.zh.len() >= 50;
        if !from_demo {
            counts.add(BUILTIN_EN);
            counts.add(BUILTIN_ZH);
        }
        let WordCounts {
            en,
            zh,
            mut han,
            mut seen_han,
        } = counts;
        for c in BUILTIN_ZH.chars().filter(|c| is_han(*c)) {
            if seen_han.insert(c) {
                han.push(c);
            }
        }
        let ranked = |m: HashMap<String, usize>| -> Vec<String> {
            let mut v: Vec<(String, usize)> = m.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.into_iter().map(|(w, _)| w).collect()
        };
        let mut en_words = ranked(en);
        let mut zh_words = ranked(zh);
        let (real_en, real_zh) = (en_words.len(), zh_words.len());

        let mut rng = Rng::new(7);
        let mut taken: HashSet<String> = en_words.iter().cloned().collect();
        let consonants: Vec<char> = "bcdfghjklmnprstvwz".chars().collect();
        let vowels: Vec<char> = "aeiou".chars().collect();
        let mut attempts = 0;
        while en_words.len() < EN_VOCAB && attempts < EN_VOCAB * 20 {
            attempts += 1;
            let syllables = 2 + rng.below(2);
            let mut w = String::new();
            for _ in 0..syllables {
                w.push(consonants[rng.below(consonants.len())]);
                w.push(vowels[rng.below(vowels.len())]);
            }
            if rng.below(2) == 0 {
                w.push(consonants[rng.below(consonants.len())]);
            }
            if taken.insert(w.clone()) {
                en_words.push(w);
            }
        }
        let mut taken: HashSet<String> = zh_words.iter().cloned().collect();
        let mut attempts = 0;
        while zh_words.len() < ZH_VOCAB && !han.is_empty() && attempts < ZH_VOCAB * 20 {
            attempts += 1;
            let w: String = [han[rng.below(han.len())], han[rng.below(han.len())]]
                .iter()
                .collect();
            if taken.insert(w.clone()) {
                zh_words.push(w);
            }
        }
        if en_words.is_empty() {
            en_words.push("word".into());
        }
        if zh_words.is_empty() {
            zh_words.push("文字".into());
        }
        let source = format!(
            "{} English and {} Chinese words from {} ({} files), plus made-up words up to {} \
             and {} (Zipf, s = 1)",
            real_en,
            real_zh,
            if from_demo {
                "assets/demo"
            } else {
                "a built-in list"
            },
            texts.len(),
            en_words.len(),
            zh_words.len()
        );
        Vocab {
            en: Zipf::new(en_words),
            zh: Zipf::new(zh_words),
            source,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Lang {
    En,
    Zh,
    Mixed,
}

/// `n` words of `lang` as text: English separated by spaces, Chinese run together, sentences
/// ended every 8–15 words.
fn pseudo_text(rng: &mut Rng, vocab: &Vocab, lang: Lang, n: usize, min_rank: usize) -> String {
    let mut out = String::new();
    let mut prev_zh: Option<bool> = None;
    let mut sentence = 8 + rng.below(8);
    for i in 0..n {
        let zh = match lang {
            Lang::En => false,
            Lang::Zh => true,
            Lang::Mixed => rng.below(2) == 0,
        };
        let word = if zh {
            vocab.zh.sample(rng, min_rank)
        } else {
            vocab.en.sample(rng, min_rank)
        };
        if let Some(p) = prev_zh
            && !(p && zh)
        {
            out.push(' ');
        }
        out.push_str(word);
        prev_zh = Some(zh);
        sentence -= 1;
        if sentence == 0 && i + 1 < n {
            out.push(if zh { '。' } else { '.' });
            sentence = 8 + rng.below(8);
        }
    }
    out.push(if prev_zh == Some(true) { '。' } else { '.' });
    out
}

/// `files` Markdown files of a title and [`CHUNKS_PER_FILE`] `##` sections (a heading cuts a
/// chunk) of 100–180 English words or 70–130 Chinese words (about 150–350 tokens each).
pub(crate) fn write_corpus(dir: &Path, files: usize, vocab: &Vocab, seed: u64) -> Result<()> {
    let mut rng = Rng::new(seed);
    for f in 0..files {
        let sub = dir.join(format!("part{:03}", f / 1000));
        if f % 1000 == 0 {
            std::fs::create_dir_all(&sub)
                .with_context(|| format!("cannot create {}", sub.display()))?;
        }
        let doc_lang = match rng.below(10) {
            0..=4 => Lang::En,
            5..=7 => Lang::Zh,
            _ => Lang::Mixed,
        };
        let mut md = format!("# {}\n\n", pseudo_text(&mut rng, vocab, doc_lang, 4, 10));
        for _ in 0..CHUNKS_PER_FILE {
            let lang = match doc_lang {
                Lang::Mixed => [Lang::En, Lang::Zh, Lang::Mixed][rng.below(3)],
                l => l,
            };
            let words = match lang {
                Lang::Zh => 70 + rng.below(61),
                _ => 100 + rng.below(81),
            };
            md.push_str(&format!(
                "## {}\n\n{}\n\n",
                pseudo_text(&mut rng, vocab, lang, 3, 10),
                pseudo_text(&mut rng, vocab, lang, words, 0)
            ));
        }
        let path = sub.join(format!("doc{f:06}.md"));
        std::fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Short queries of 2–4 words past the stop-word ranks: half English, 30% Chinese (run
/// together, as typed), 20% mixed.
pub(crate) fn make_queries(vocab: &Vocab, n: usize) -> Vec<String> {
    let mut rng = Rng::new(4242);
    (0..n)
        .map(|_| {
            let lang = match rng.below(10) {
                0..=4 => Lang::En,
                5..=7 => Lang::Zh,
                _ => Lang::Mixed,
            };
            let words = 2 + rng.below(3);
            let text = pseudo_text(&mut rng, vocab, lang, words, QUERY_MIN_RANK);
            text.trim_end_matches(['.', '。']).replace(['.', '。'], " ")
        })
        .collect()
}

// --- exact dense search over 1M vectors ----------------------------------------------------------

fn dense_1m(queries: usize) -> Result<DenseReport> {
    eprintln!("building {DENSE_VECTORS} × {DENSE_DIM} synthetic vectors…");
    let t = Instant::now();
    let mut index = FlatIndex::new(DENSE_DIM);
    let batch = 10_000;
    for start in (0..DENSE_VECTORS).step_by(batch) {
        let vs = synthetic_unit_vectors(
            batch.min(DENSE_VECTORS - start),
            DENSE_DIM,
            start as u64 + 1,
        );
        for (doc, group) in vs.chunks(DENSE_VECTORS_PER_DOC).enumerate() {
            let base = start + doc * DENSE_VECTORS_PER_DOC;
            let entries: Vec<(u64, Vec<f32>)> = group
                .iter()
                .enumerate()
                .map(|(j, v)| ((base + j) as u64, v.clone()))
                .collect();
            index.upsert_document((base / DENSE_VECTORS_PER_DOC) as u64, &entries)?;
        }
    }
    let build_s = t.elapsed().as_secs_f64();
    // The candidates a hybrid retrieval asks the dense scan for.
    let k = SearchOptions::default().candidates;
    let qs = synthetic_unit_vectors(queries, DENSE_DIM, 424_242);
    type Filter = dyn Fn(u64) -> bool + Sync;
    let half = |d: u64| d.is_multiple_of(2);
    let one_percent = |d: u64| d.is_multiple_of(100);
    let filters: [(&str, Option<&Filter>); 3] = [
        ("none", None),
        ("50% of documents", Some(&half)),
        ("1% of documents", Some(&one_percent)),
    ];
    let mut rows = Vec::new();
    for (name, filter) in filters {
        eprintln!("dense search, filter {name}…");
        for q in qs.iter().take(3) {
            index.search(q, k, filter)?; // warm-up
        }
        let mut times = Vec::with_capacity(qs.len());
        for q in &qs {
            let t = Instant::now();
            let hits = index.search(q, k, filter)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            anyhow::ensure!(!hits.is_empty(), "dense search found nothing");
        }
        rows.push(DenseRow {
            filter: name.to_owned(),
            p50_ms: percentile(&mut times, 0.5),
            p95_ms: percentile(&mut times, 0.95),
        });
    }
    Ok(DenseReport {
        vectors: index.len(),
        dim: DENSE_DIM,
        k,
        queries: qs.len(),
        build_s,
        memory_bytes: index.memory_bytes(),
        rows,
    })
}

// --- the table -----------------------------------------------------------------------------------

/// `1234567` as `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn yes_no(ok: bool) -> &'static str {
    if ok { "yes" } else { "**no**" }
}

fn print_retrieval_table(r: &RetrievalReport) {
    println!("| area | measurement | result | target | met |");
    println!("|---|---|---|---|---|");
    for e in &r.embedding {
        let (target, met) = match &e.pytorch {
            Some(pt) => (
                format!(
                    "≥ {EMBED_RATIO_TARGET}× PyTorch ({:.0} tokens/s, {} passages, {} threads, \
                     load {})",
                    pt.tokens_per_s,
                    pt.passages.map_or("?".into(), |n| n.to_string()),
                    pt.threads.map_or("?".into(), |n| n.to_string()),
                    pt.load_1m.map_or("?".into(), |l| format!("{l:.2}")),
                ),
                format!(
                    "{} ({:.2}×)",
                    yes_no(pt.ratio >= EMBED_RATIO_TARGET),
                    pt.ratio
                ),
            ),
            None => (
                format!("≥ {EMBED_RATIO_TARGET}× PyTorch"),
                "? (run scripts/bench_embed_pytorch.py)".to_string(),
            ),
        };
        println!(
            "| embedding | {}: {} passages, {} tokens (max {}), {} threads, best (median) of {} | \
             {:.0} ({:.0}) tokens/s; {:.1} passages/s | {target} | {met} |",
            e.model,
            e.passages,
            thousands(e.tokens as u64),
            e.max_tokens,
            e.threads,
            e.runs,
            e.tokens_per_s,
            e.median_tokens_per_s,
            e.passages_per_s,
        );
        println!(
            "| embedding | {} resident memory (VmRSS delta across loading, approximate) | {} | — | — |",
            e.model,
            e.rss_delta_mib
                .map_or("n/a (no /proc)".into(), |m| format!("≈ {m:.0} MiB")),
        );
    }
    for h in &r.hybrid {
        let at_target = h.target_chunks >= HYBRID_TARGET_CHUNKS;
        let target = format!("p95 ≤ {HYBRID_P95_TARGET_MS:.0} ms at 100k chunks");
        let met = |p95: f64| {
            if at_target {
                yes_no(p95 <= HYBRID_P95_TARGET_MS).to_string()
            } else {
                "— (target is at 100k)".to_string()
            }
        };
        let setting = format!(
            "{} chunks ({} asked), {} documents; {} queries, no rerank",
            thousands(h.chunks),
            thousands(h.target_chunks as u64),
            thousands(h.documents),
            h.queries
        );
        println!(
            "| hybrid | {setting} | p50 {:.1} ms, p95 {:.1} ms (max {:.1}) | {target} | {} |",
            h.p50_ms,
            h.p95_ms,
            h.max_ms,
            met(h.p95_ms)
        );
        println!(
            "| hybrid | {} chunks: p50 of the trace's parts (median candidates: keyword {}, \
             dense {}) | keyword {:.1} ms · query embedding {:.1} ms · dense scan {:.1} ms | — | — |",
            thousands(h.chunks),
            h.keyword_candidates_p50,
            h.dense_candidates_p50,
            h.keyword_p50_ms,
            h.query_embed_p50_ms,
            h.dense_p50_ms
        );
        println!(
            "| hybrid | {} chunks, as a USER whose folder ACLs allow {} of {} documents | p50 {:.1} ms, \
             p95 {:.1} ms | {target} | {} |",
            thousands(h.chunks),
            thousands(h.filter_allowed_documents as u64),
            thousands(h.documents),
            h.filtered_p50_ms,
            h.filtered_p95_ms,
            met(h.filtered_p95_ms)
        );
        println!(
            "| permissions | per query (ROOT): authorisation + audit record | p50 {:.2} ms, p95 {:.2} ms \
             | — | — |",
            h.access_p50_ms, h.access_p95_ms
        );
        println!(
            "| permissions | {} documents: building a user's readable set after an ACL change \
             (cached per permission snapshot afterwards) | {:.1} ms | — | — |",
            thousands(h.documents),
            h.readable_set_ms
        );
    }
    if let Some(d) = &r.dense_1m {
        for row in &d.rows {
            println!(
                "| dense 1M | {} × {} exact (int8 scan + f16 re-score), k = {}, filter: {}, {} queries \
                 | p50 {:.1} ms, p95 {:.1} ms | p95 ≤ {DENSE_P95_TARGET_MS:.0} ms | {} |",
                thousands(d.vectors as u64),
                d.dim,
                d.k,
                row.filter,
                d.queries,
                row.p50_ms,
                row.p95_ms,
                yes_no(row.p95_ms <= DENSE_P95_TARGET_MS)
            );
        }
        println!(
            "| dense 1M | vector memory (`FlatIndex::memory_bytes`), build time | {} bytes \
             ({:.0} MB, {:.0} B/vector); built in {:.1} s | — | — |",
            thousands(d.memory_bytes as u64),
            d.memory_bytes as f64 / 1e6,
            d.memory_bytes as f64 / d.vectors.max(1) as f64,
            d.build_s
        );
    }
    for s in &r.skipped {
        println!("| skipped | {s} | — | — | — |");
    }
    for h in &r.hybrid {
        if h.queries_without_dense > 0 {
            println!(
                "\nwarning: at {} chunks, {} queries had no dense candidates",
                h.chunks, h.queries_without_dense
            );
        }
    }
    println!();
    for n in &r.notes {
        println!("- {n}");
    }
    for h in &r.hybrid {
        println!(
            "- {} chunks: generated and ingested in {:.1} s ({} chunks embedded with synthetic vectors).",
            thousands(h.chunks),
            h.ingest_s,
            thousands(h.embedded_chunks)
        );
    }
}
