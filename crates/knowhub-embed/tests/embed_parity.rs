//! Parity of `BertEmbedder` with an independent numpy BERT forward pass
//! (`make_reference_embeddings.py` → `fixtures/{e5,minilm}_embeddings.json`): cosine ≥ 0.999
//! for every sentence (English, Chinese, mixed, one short, one long, so batches mix lengths
//! and need the padding mask).
//!
//! The models are fetched, not committed: the tests look in `<repo>/models/` (or
//! `KNOWHUB_MODELS_DIR`) and skip with a message when they are absent.

#![allow(clippy::print_stderr)] // the skip notice and the per-sentence report are the point

use std::path::PathBuf;

use knowhub_embed::{BertEmbedder, Device, Embedder, Precision};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    sentences: Vec<Sentence>,
}

#[derive(Deserialize)]
struct Sentence {
    kind: String,
    text: String,
    tokens: usize,
    embedding: Vec<f32>,
}

fn models_dir() -> PathBuf {
    std::env::var_os("KNOWHUB_MODELS_DIR")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(
                std::env::var("CARGO_MANIFEST_DIR")
                    .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
            )
            .join("../../models")
        })
}

fn fixture(name: &str) -> Fixture {
    let path = PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("tests/fixtures")
    .join(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    serde_json::from_str(&text).expect("fixture json")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// Embeds passages as one call (so they are sorted and batched together) and queries one by
/// one, and checks each against the reference.
fn check(model: &BertEmbedder, fx: &Fixture, name: &str) {
    let passages: Vec<&Sentence> = fx
        .sentences
        .iter()
        .filter(|s| s.kind == "passage")
        .collect();
    let texts: Vec<&str> = passages.iter().map(|s| s.text.as_str()).collect();
    let got = model.embed_passages(&texts).expect("embed passages");
    let mut results: Vec<(&Sentence, Vec<f32>)> = passages.into_iter().zip(got).collect();
    for s in fx.sentences.iter().filter(|s| s.kind == "query") {
        results.push((s, model.embed_query(&s.text).expect("embed query")));
    }
    assert_eq!(results.len(), fx.sentences.len());
    let mut min = f32::MAX;
    for (s, v) in &results {
        assert_eq!(v.len(), model.dim());
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{name}: not normalised ({norm})");
        let c = cosine(v, &s.embedding);
        min = min.min(c);
        eprintln!("{name} cos={c:.6} tokens={} {:?}", s.tokens, s.text);
        if s.kind == "passage" {
            assert_eq!(
                model.count_tokens(&s.text),
                s.tokens,
                "{name}: {:?}",
                s.text
            );
        }
    }
    eprintln!(
        "{name}: min cosine {min:.6} over {} sentences",
        results.len()
    );
    // Retrieval sanity (independent of the reference): each query's best passage.
    let best = |query: &str| {
        let q = &results
            .iter()
            .find(|(s, _)| s.text == query)
            .expect("query")
            .1;
        results
            .iter()
            .filter(|(s, _)| s.kind == "passage")
            .max_by(|a, b| cosine(&a.1, q).total_cmp(&cosine(&b.1, q)))
            .map(|(s, _)| s.text.clone())
            .expect("passages")
    };
    assert!(
        best("how much protein should a female eat").contains("protein"),
        "{name}"
    );
    assert!(best("如何申请差旅报销？").contains("报销"), "{name}");
    for (s, v) in &results {
        let c = cosine(v, &s.embedding);
        assert!(c >= 0.999, "{name}: cosine {c} for {:?}", s.text);
    }
}

#[test]
fn e5_parity() {
    let path = models_dir().join("multilingual-e5-small/e5-small-q4.bin");
    if !path.is_file() {
        eprintln!("skipped: no {} (fetch the models first)", path.display());
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    let model = BertEmbedder::from_e5s1(&path, Device::Cpu).expect("load e5");
    assert_eq!(
        (model.model_id(), model.dim(), model.max_tokens()),
        ("multilingual-e5-small", 384, 512)
    );
    check(&model, &fixture("e5_embeddings.json"), "e5");
}

/// The quantized path (Q4_0 weights as candle `QMatMul`s, activations rounded to Q8_0 per
/// matmul) against the same reference: the extra activation rounding must stay within the
/// parity bound.
#[test]
fn e5_q4_parity() {
    let path = models_dir().join("multilingual-e5-small/e5-small-q4.bin");
    if !path.is_file() {
        eprintln!("skipped: no {} (fetch the models first)", path.display());
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    let model = BertEmbedder::from_e5s1_with_precision(&path, Device::Cpu, Precision::Q4)
        .expect("load e5 q4");
    assert_eq!(model.precision(), Precision::Q4);
    check(&model, &fixture("e5_embeddings.json"), "e5-q4");
}

#[test]
fn minilm_parity() {
    let dir = models_dir().join("all-MiniLM-L6-v2");
    if !dir.join("model.safetensors").is_file() {
        eprintln!("skipped: no {} (fetch the models first)", dir.display());
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    let model = BertEmbedder::from_hf_folder(&dir, Device::Cpu).expect("load minilm");
    assert_eq!((model.dim(), model.max_tokens()), (384, 512));
    check(&model, &fixture("minilm_embeddings.json"), "minilm");
}

#[test]
fn minilm_truncates_long_text_and_handles_empty_input() {
    let dir = models_dir().join("all-MiniLM-L6-v2");
    if !dir.join("model.safetensors").is_file() {
        eprintln!("skipped: no {} (fetch the models first)", dir.display());
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    let model = BertEmbedder::from_hf_folder(&dir, Device::Cpu)
        .expect("load minilm")
        .with_max_tokens(16);
    assert!(model.embed_passages(&[]).expect("empty").is_empty());
    let long = "word ".repeat(100);
    assert!(model.count_tokens(&long) > 100, "count is not truncated");
    let a = model.embed_passages(&[&long, ""]).expect("embed");
    // Truncation at 16 tokens: the same as the first 14 words.
    let short = "word ".repeat(14);
    let b = model.embed_query(&short).expect("embed");
    assert!(cosine(&a[0], &b) > 0.9999);
    assert_eq!(a[1].len(), 384);
}
