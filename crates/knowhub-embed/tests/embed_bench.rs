//! Throughput of both embedders on SciFact abstracts (an `#[ignore]`d test: run it in a
//! release build, on 2 threads, with the models and the corpus present):
//!
//! ```text
//! RAYON_NUM_THREADS=2 cargo test --release -p knowhub-embed --test embed_bench -- --ignored --nocapture
//! ```
//!
//! `KNOWHUB_SCIFACT` overrides the corpus path (`corpus.jsonl`, BEIR format), `KNOWHUB_BENCH_N`
//! the number of abstracts (200).

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Instant;

use knowhub_embed::{BertEmbedder, Device, Embedder};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
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

fn run(name: &str, model: &BertEmbedder, texts: &[&str]) {
    let tokens: usize = texts
        .iter()
        .map(|t| model.count_tokens(t).min(model.max_tokens()))
        .sum();
    let _ = model.embed_passages(&texts[..8]).expect("warm-up");
    let start = Instant::now();
    let v = model.embed_passages(texts).expect("embed");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(v.len(), texts.len());
    eprintln!(
        "{name}: {} passages, {tokens} tokens in {secs:.2} s: {:.0} tokens/s, {:.1} passages/s (threads {})",
        texts.len(),
        tokens as f64 / secs,
        texts.len() as f64 / secs,
        candle_core::utils::get_num_threads(),
    );
}

#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn bench_scifact() {
    let n = std::env::var("KNOWHUB_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let Some(texts) = abstracts(n) else {
        eprintln!("skipped: no SciFact corpus");
        return;
    };
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let minilm = repo().join("models/all-MiniLM-L6-v2");
    if minilm.join("model.safetensors").is_file() {
        let m = BertEmbedder::from_hf_folder(&minilm, Device::Cpu)
            .expect("minilm")
            .with_max_tokens(256);
        run("all-MiniLM-L6-v2", &m, &texts);
    }
    let e5 = repo().join("models/multilingual-e5-small/e5-small-q4.bin");
    if e5.is_file() {
        let m = BertEmbedder::from_e5s1(&e5, Device::Cpu)
            .expect("e5")
            .with_max_tokens(256);
        run("multilingual-e5-small", &m, &texts);
    }
}
