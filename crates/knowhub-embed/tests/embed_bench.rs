//! Throughput of the embedders on SciFact abstracts (an `#[ignore]`d test: run it in a release
//! build, with the models and the corpus present):
//!
//! ```text
//! RAYON_NUM_THREADS=2 cargo test --release -p knowhub-embed --test embed_bench -- --ignored --nocapture
//! ```
//!
//! Rows: all-MiniLM-L6-v2 (f32), multilingual-e5-small with f32 linear layers (the default)
//! and with Q4_0 `QMatMul`s. Each is timed `KNOWHUB_BENCH_REPEAT` times (3) after a warm-up;
//! the table gives the best and the median run, tokens per CPU-second over the runs (all
//! threads, spinning included: less sensitive to other processes than wall time), the 1-minute
//! load average before the first run (the machine may be shared: compare rows taken at similar
//! load), and the process's resident
//! memory (`VmRSS`) right after loading the model and after embedding, and its peak (`VmHWM`,
//! process-wide: meaningful with one model per run).
//!
//! Environment: `KNOWHUB_SCIFACT` (the corpus, `corpus.jsonl` in BEIR format),
//! `KNOWHUB_BENCH_N` (abstracts, 200), `KNOWHUB_BENCH_MODELS` (a comma list of `minilm`,
//! `e5`, `e5-q4`; all by default; run one per process for clean RSS numbers),
//! `KNOWHUB_PYTORCH_BENCH` (the JSON written by `scripts/bench_embed_pytorch.py --json`,
//! default `~/.cache/knowhub/bench_embed_pytorch.json`): when present, the table adds the
//! PyTorch (sentence-transformers) numbers measured there and the ratio.

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Instant;

use knowhub_embed::{BertEmbedder, Device, Embedder, Precision};

fn repo() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../..")
}

fn abstracts(n: usize) -> Option<Vec<String>> {
    let path = std::env::var_os("KNOWHUB_SCIFACT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/corpora/scifact/corpus.jsonl"));
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get("text")?.as_str().map(str::to_owned))
            .take(n)
            .collect(),
    )
}

/// A `/proc/self/status` field in MiB (Linux; None elsewhere).
fn status_mib(field: &str) -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// CPU time (user + system, all threads) of this process in seconds, from `/proc/self/stat`
/// (Linux clock ticks of 1/100 s).
fn cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn load_avg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// tokens/s of a model in the PyTorch bench's JSON, with the load it was measured at.
fn pytorch(model: &str) -> Option<(f64, f64, String)> {
    let path = std::env::var_os("KNOWHUB_PYTORCH_BENCH")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/knowhub/bench_embed_pytorch.json"))
        })?;
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let r = v.get("results")?.get(model)?;
    Some((
        r.get("tokens_per_s")?.as_f64()?,
        r.get("passages_per_s")?.as_f64()?,
        format!(
            "threads {}, load {}",
            r.get("threads")?,
            r.get("load_1m")
                .and_then(|l| l.as_f64())
                .unwrap_or(f64::NAN)
        ),
    ))
}

struct Row {
    name: String,
    tokens_per_s: (f64, f64),
    /// Tokens per CPU-second over all the timed runs (less sensitive to other load).
    tokens_per_cpu_s: Option<f64>,
    passages_per_s: (f64, f64),
    load: String,
    rss_loaded: Option<f64>,
    rss_after: Option<f64>,
    rss_peak: Option<f64>,
}

fn run(name: &str, model: &BertEmbedder, texts: &[&str], repeat: usize) -> Row {
    let rss_loaded = status_mib("VmRSS:");
    let tokens: usize = texts
        .iter()
        .map(|t| model.count_tokens(t).min(model.max_tokens()))
        .sum();
    let _ = model.embed_passages(&texts[..8]).expect("warm-up");
    let load = load_avg();
    let cpu0 = cpu_secs();
    let mut secs: Vec<f64> = (0..repeat.max(1))
        .map(|_| {
            let start = Instant::now();
            let v = model.embed_passages(texts).expect("embed");
            assert_eq!(v.len(), texts.len());
            start.elapsed().as_secs_f64()
        })
        .collect();
    let cpu = cpu_secs().zip(cpu0).map(|(b, a)| b - a);
    let runs = secs.len() as f64;
    secs.sort_by(f64::total_cmp);
    let (best, median) = (secs[0], secs[secs.len() / 2]);
    let row = Row {
        name: name.to_owned(),
        tokens_per_s: (tokens as f64 / best, tokens as f64 / median),
        tokens_per_cpu_s: cpu.filter(|&c| c > 0.0).map(|c| tokens as f64 * runs / c),
        passages_per_s: (texts.len() as f64 / best, texts.len() as f64 / median),
        load,
        rss_loaded,
        rss_after: status_mib("VmRSS:"),
        rss_peak: status_mib("VmHWM:"),
    };
    eprintln!(
        "{name}: {} passages, {tokens} tokens in {best:.2} s (best of {}): {:.0} tokens/s, {:.1} passages/s (threads {})",
        texts.len(),
        secs.len(),
        row.tokens_per_s.0,
        row.passages_per_s.0,
        candle_core::utils::get_num_threads(),
    );
    row
}

#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn bench_scifact() {
    let env = |k: &str| std::env::var(k).ok().filter(|s| !s.is_empty());
    let n = env("KNOWHUB_BENCH_N")
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let repeat = env("KNOWHUB_BENCH_REPEAT")
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let models = env("KNOWHUB_BENCH_MODELS").unwrap_or_else(|| "minilm,e5,e5-q4".into());
    let Some(texts) = abstracts(n) else {
        eprintln!("skipped: no SciFact corpus");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    };
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let minilm = repo().join("models/all-MiniLM-L6-v2");
    let e5 = repo().join("models/multilingual-e5-small/e5-small-q4.bin");
    let mut rows = Vec::new();
    for m in models.split(',').map(str::trim) {
        match m {
            "minilm" if minilm.join("model.safetensors").is_file() => {
                let model = BertEmbedder::from_hf_folder(&minilm, Device::Cpu)
                    .expect("minilm")
                    .with_max_tokens(256);
                rows.push(run("all-MiniLM-L6-v2", &model, &texts, repeat));
            }
            "e5" | "e5-q4" if e5.is_file() => {
                let precision = if m == "e5" {
                    Precision::F32
                } else {
                    Precision::Q4
                };
                let model = BertEmbedder::from_e5s1_with_precision(&e5, Device::Cpu, precision)
                    .expect("e5")
                    .with_max_tokens(256);
                let name = format!("multilingual-e5-small ({precision:?})");
                rows.push(run(&name, &model, &texts, repeat));
            }
            other => eprintln!("skipped {other}: unknown, or its model is absent"),
        }
    }
    let mib = |v: Option<f64>| v.map_or_else(|| "?".into(), |v| format!("{v:.0}"));
    eprintln!(
        "\n{} SciFact abstracts, max 256 tokens, threads {}, best (median) of {repeat}",
        texts.len(),
        candle_core::utils::get_num_threads()
    );
    eprintln!(
        "| model | tokens/s | passages/s | tokens/CPU-s | load 1m | RSS loaded / after / peak (MiB) | PyTorch tokens/s | ratio |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let key = if r.name.starts_with("all-MiniLM") {
            "all-MiniLM-L6-v2"
        } else {
            "multilingual-e5-small"
        };
        let (pt, ratio) = match pytorch(key) {
            Some((tps, pps, how)) => (
                format!("{tps:.0} ({pps:.1} passages/s; {how})"),
                format!("{:.2}×", r.tokens_per_s.0 / tps),
            ),
            None => ("-".into(), "-".into()),
        };
        eprintln!(
            "| {} | {:.0} ({:.0}) | {:.1} ({:.1}) | {} | {} | {} / {} / {} | {pt} | {ratio} |",
            r.name,
            r.tokens_per_s.0,
            r.tokens_per_s.1,
            r.passages_per_s.0,
            r.passages_per_s.1,
            r.tokens_per_cpu_s
                .map_or_else(|| "?".into(), |v| format!("{v:.0}")),
            r.load,
            mib(r.rss_loaded),
            mib(r.rss_after),
            mib(r.rss_peak),
        );
    }
}
