//! `knowhub bench watch`: the watched-folder scale benchmark. Generates a folder of small mixed
//! files, then measures, in one table: time until everything is parsed and in the full-text
//! index (through the real queue: reconcile → jobs → sandboxed parsers), embeddings separately,
//! peak memory, how long one edit takes to become searchable while the watcher runs, and how
//! long a restart with nothing changed takes to reconcile.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use knowhub_engine::{
    Engine, ModelConfig, ProcessOptions, SearchOptions, SourceRules, WatchEvent, WatchOptions,
    WatchService, dev_context,
};

#[derive(Debug, clap::Args)]
pub(crate) struct WatchBenchArgs {
    /// Files to generate.
    #[arg(long, default_value_t = 10_000)]
    files: usize,
    /// Also time embedding every chunk with the default embedder (when installed).
    #[arg(long)]
    embed: bool,
    /// Edits timed while the watcher runs (the median is reported).
    #[arg(long, default_value_t = 5)]
    edits: usize,
    /// Keep the generated folder and data here instead of a temporary directory.
    #[arg(long)]
    keep: Option<PathBuf>,
}

/// Binary documents mixed in (copied from the bundled demo corpus).
const BINARIES: &[&str] = &[
    "assets/demo/policies/security-policy.pdf",
    "assets/demo/engineering/incident-runbook.docx",
    "assets/demo/data/projects.xlsx",
];

const WORDS: &[&str] = &[
    "budget",
    "roadmap",
    "incident",
    "contract",
    "invoice",
    "launch",
    "policy",
    "review",
    "customer",
    "release",
    "预算",
    "路线图",
    "事故",
    "合同",
    "发票",
    "发布",
    "制度",
    "评审",
];

pub(crate) fn run(args: &WatchBenchArgs) -> Result<ExitCode> {
    let temp = tempfile::tempdir()?;
    let base = args
        .keep
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    let corpus = base.join("corpus");
    let data = base.join("data");
    let t = Instant::now();
    let (bytes, binaries) = generate(&corpus, args.files)?;
    eprintln!(
        "generated {} files ({:.1} MB, {binaries} PDF/DOCX/XLSX) in {:.1} s",
        args.files,
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let ctx = dev_context();
    let mut rows: Vec<(String, String)> = Vec::new();

    // 1. Cold: everything parsed and in the full-text index, through the queue.
    let engine = Arc::new(open(&data, false)?);
    let t = Instant::now();
    engine.watch_folder(&ctx, &corpus, SourceRules::default())?;
    let queued = engine.queue(&ctx, 0)?.counts.queued;
    let scan = t.elapsed();
    let report = engine.drain_queue(&ProcessOptions::default(), None, &mut |_| {})?;
    let cold = t.elapsed();
    let status = engine.status(&ctx)?;
    rows.push((
        "reconcile scan of the new folder (walk + stat, jobs queued)".into(),
        format!("{:.2} s ({queued} jobs)", scan.as_secs_f64()),
    ));
    rows.push((
        "time to fully indexed (parse + chunk + BM25, via the queue)".into(),
        format!(
            "{:.1} s ({:.0} files/s; {} documents, {} chunks, {} failed)",
            cold.as_secs_f64(),
            args.files as f64 / cold.as_secs_f64(),
            status.store.documents,
            status.indexed_chunks,
            report.failed
        ),
    ));
    rows.push((
        "peak RSS of the KnowHub process after indexing (VmHWM)".into(),
        vm_hwm_mib().map_or("n/a".into(), |m| format!("{m:.0} MiB")),
    ));

    // 2. One edit while the watcher runs: until the new text is searchable.
    let service = WatchService::start(Arc::clone(&engine), &ctx, WatchOptions::default())?;
    let events = service.subscribe();
    wait_idle(&events, Duration::from_secs(120))?;
    let mut latencies = Vec::new();
    for i in 0..args.edits {
        let file = corpus.join(format!("d{}", i % 10)).join(format!("f{i}.md"));
        let token = format!("editmarker{i}x{}", std::process::id());
        let t = Instant::now();
        std::fs::write(
            &file,
            format!("# Edited\n\nThis file now mentions {token}."),
        )?;
        loop {
            let hits = engine.search(&ctx, &token, &SearchOptions::default())?;
            if !hits.is_empty() {
                break;
            }
            anyhow::ensure!(
                t.elapsed() < Duration::from_secs(60),
                "edit {i} not searchable after 60 s"
            );
            let _ = events.recv_timeout(Duration::from_millis(20));
        }
        latencies.push(t.elapsed());
    }
    service.stop();
    latencies.sort();
    if let Some(median) = latencies.get(latencies.len() / 2) {
        rows.push((
            "one edit → searchable, watcher running (median of edits)".into(),
            format!(
                "{:.2} s (min {:.2}, max {:.2}; includes 0.5 s debounce + 1 s settle)",
                median.as_secs_f64(),
                latencies[0].as_secs_f64(),
                latencies[latencies.len() - 1].as_secs_f64()
            ),
        ));
    }
    drop(engine);

    // 3. Restart with nothing changed.
    let t = Instant::now();
    let engine = open(&data, false)?;
    let opened = t.elapsed();
    let t = Instant::now();
    engine.recover_queue()?;
    let found = engine.reconcile_all()?;
    let reconciled = t.elapsed();
    let again = engine.drain_queue(&ProcessOptions::default(), None, &mut |_| {})?;
    rows.push((
        "restart, nothing changed: open + start-up reconcile".into(),
        format!(
            "{:.2} s + {:.2} s ({found} changed paths found, {} files re-read)",
            opened.as_secs_f64(),
            reconciled.as_secs_f64(),
            again.files
        ),
    ));
    drop(engine);

    // 4. Embeddings, separately.
    if args.embed {
        let engine = open(&data, true)?;
        match engine.embedder_id() {
            Some(model) => {
                let model = model.to_string();
                let t = Instant::now();
                let n = engine.embed_pending(&ctx, &mut |_| {})?;
                let s = t.elapsed().as_secs_f64();
                rows.push((
                    format!("embedding every chunk ({model})"),
                    format!("{s:.1} s ({n} chunks, {:.0} chunks/s)", n as f64 / s),
                ));
                rows.push((
                    "peak RSS including the embedder (VmHWM)".into(),
                    vm_hwm_mib().map_or("n/a".into(), |m| format!("{m:.0} MiB")),
                ));
            }
            None => rows.push((
                "embedding".into(),
                "skipped: the default embedder is not installed (knowhub models fetch)".into(),
            )),
        }
    }

    println!(
        "\n| watched folder, {} small mixed files | result |",
        args.files
    );
    println!("|---|---|");
    for (k, v) in &rows {
        println!("| {k} | {v} |");
    }
    println!(
        "\nMachine: {} cores. Parsing runs in sandboxed worker processes (not in the VmHWM above).",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    Ok(ExitCode::SUCCESS)
}

fn open(data: &Path, embed: bool) -> Result<Engine> {
    let mut config = crate::engine_config(data.to_path_buf())?;
    config.models = if embed {
        ModelConfig::default()
    } else {
        ModelConfig::keyword_only()
    };
    Engine::open(config).context("cannot open the benchmark knowledge base")
}

fn wait_idle(events: &crossbeam_channel::Receiver<WatchEvent>, limit: Duration) -> Result<()> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Ok(WatchEvent::Idle) = events.recv_timeout(Duration::from_millis(200)) {
            return Ok(());
        }
    }
    anyhow::bail!("the watcher did not become idle within {limit:?}")
}

/// Writes `n` files (about 95% text formats, 5% PDF/DOCX/XLSX) under 10 × 10 folders.
fn generate(root: &Path, n: usize) -> Result<(u64, usize)> {
    let repo = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../..");
    let binaries: Vec<(String, Vec<u8>)> = BINARIES
        .iter()
        .filter_map(|p| {
            let path = repo.join(p);
            let ext = path.extension()?.to_string_lossy().into_owned();
            Some((ext, std::fs::read(path).ok()?))
        })
        .collect();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut bytes = 0u64;
    let mut binary_count = 0;
    for i in 0..n {
        let dir = root
            .join(format!("d{}", i % 10))
            .join(format!("s{}", (i / 10) % 10));
        std::fs::create_dir_all(&dir)?;
        let mut words = String::new();
        for _ in 0..(40 + next() % 120) {
            words.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
            words.push(' ');
        }
        let (name, content): (String, Vec<u8>) = match i % 20 {
            19 if !binaries.is_empty() => {
                let (ext, b) = &binaries[(i / 20) % binaries.len()];
                binary_count += 1;
                (format!("f{i}.{ext}"), b.clone())
            }
            k if k % 4 == 0 => (
                format!("f{i}.html"),
                format!("<html><body><main><h1>Page {i}</h1><p>{words}</p></main></body></html>")
                    .into_bytes(),
            ),
            k if k % 4 == 1 => (
                format!("f{i}.txt"),
                format!("Note {i}. {words}").into_bytes(),
            ),
            k if k % 4 == 2 => (
                format!("f{i}.csv"),
                format!(
                    "id,topic,notes\n{i},{},{}\n",
                    WORDS[i % WORDS.len()],
                    words.trim()
                )
                .into_bytes(),
            ),
            _ => (
                format!("f{i}.md"),
                format!("# Note {i}\n\n{words}\n\n## More\n\n{words}").into_bytes(),
            ),
        };
        bytes += content.len() as u64;
        std::fs::write(dir.join(name), content)?;
    }
    // The edit benchmark rewrites f0.md … f9.md in d0 … d9.
    for i in 0..10 {
        let path = root.join(format!("d{i}")).join(format!("f{i}.md"));
        std::fs::write(&path, format!("# Note {i}\n\nTo be edited."))?;
    }
    Ok((bytes, binary_count))
}

/// The process's peak resident memory in MiB (Linux; `None` elsewhere).
fn vm_hwm_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
