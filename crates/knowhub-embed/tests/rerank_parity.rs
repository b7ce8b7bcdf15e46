//! Parity of `CrossEncoder` with an independent numpy forward pass on two tiny, randomly
//! initialised rerankers (`make_tiny_rerankers.py` → `fixtures/tiny-{bert,xlmr}-reranker/`,
//! each with `expected_logits.json`): every logit within 1e-4 of the reference, for English,
//! Chinese and mixed pairs, a truncated passage, an empty passage and a query too long for
//! only-the-passage truncation. Each group is scored in one call, so pairs of different lengths
//! share a padded batch; scoring one pair at a time, across several batches, or from variant
//! checkpoints (no `bert.` prefix, a two-label head) must give the same numbers. Broken folders
//! must fail with an error naming the file.

#![allow(clippy::unwrap_used)] // test helpers

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use knowhub_embed::rerank::BATCH_SIZE;
use knowhub_embed::{CrossEncoder, EmbedError, Reranker};
use serde::Deserialize;

const TOLERANCE: f32 = 1e-4;
/// Batched vs one-at-a-time: only the summation order of padded matmuls may differ.
const PADDING_TOLERANCE: f32 = 1e-5;

#[derive(Deserialize)]
struct Fixture {
    model_type: String,
    max_tokens: usize,
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    query: String,
    passages: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    kind: String,
    text: String,
    tokens: usize,
    truncated: bool,
    strategy: String,
    logit: f32,
}

fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("tests/fixtures")
    .join(name)
}

fn fixture(name: &str) -> Fixture {
    let text = std::fs::read_to_string(fixture_dir(name).join("expected_logits.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn load(dir: &Path) -> CrossEncoder {
    CrossEncoder::from_hf_folder(dir, Device::Cpu)
        .unwrap_or_else(|e| panic!("load {}: {e}", dir.display()))
}

fn texts(g: &Group) -> Vec<&str> {
    g.passages.iter().map(|r| r.text.as_str()).collect()
}

/// Scores each group in one call and compares with the numpy logits.
fn check_parity(model: &dyn Reranker, fx: &Fixture, what: &str) {
    let mut failures = Vec::new();
    for g in &fx.groups {
        let got = model.score(&g.query, &texts(g)).unwrap();
        assert_eq!(got.len(), g.passages.len());
        for (row, &logit) in g.passages.iter().zip(&got) {
            let diff = (logit - row.logit).abs();
            if diff.is_nan() || diff > TOLERANCE {
                failures.push(format!(
                    "{what} {} ({} tokens, {}): got {logit}, numpy {}, diff {diff}",
                    row.kind, row.tokens, row.strategy, row.logit
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The fixture exercises what it claims to.
fn check_coverage(fx: &Fixture) {
    let rows: Vec<&Row> = fx.groups.iter().flat_map(|g| &g.passages).collect();
    assert!(rows.len() >= 10);
    assert!(
        rows.iter()
            .any(|r| r.truncated && r.strategy == "only_second")
    );
    assert!(rows.iter().any(|r| r.strategy == "longest_first"));
    assert!(rows.iter().any(|r| r.text.is_empty()));
    assert!(rows.iter().any(|r| r.kind == "zh") && rows.iter().any(|r| r.kind == "mixed"));
    assert!(rows.iter().all(|r| r.tokens <= fx.max_tokens));
    // Different lengths within a group: the batch really is padded.
    assert!(fx.groups.iter().any(|g| {
        let lens: Vec<usize> = g.passages.iter().map(|r| r.tokens).collect();
        lens.iter().min() != lens.iter().max()
    }));
}

fn parity(name: &str, model_type: &str) {
    let fx = fixture(name);
    assert_eq!(fx.model_type, model_type);
    check_coverage(&fx);
    let model = load(&fixture_dir(name));
    assert_eq!(model.model_id(), name);
    assert_eq!(model.max_tokens(), fx.max_tokens);
    assert_eq!(model.num_labels(), 1);
    check_parity(&model, &fx, name);
}

#[test]
fn bert_matches_numpy() {
    parity("tiny-bert-reranker", "bert");
}

#[test]
fn xlmr_matches_numpy() {
    parity("tiny-xlmr-reranker", "xlm-roberta");
}

/// Padding must not change a score: one pair per call, and several batches in one call (the
/// first group repeated past `BATCH_SIZE`, reversed), give the batched numbers.
fn padding_invariance(name: &str) {
    let fx = fixture(name);
    let model = load(&fixture_dir(name));
    for g in &fx.groups {
        let passages = texts(g);
        let batched = model.score(&g.query, &passages).unwrap();
        for (p, &b) in passages.iter().zip(&batched) {
            let single = model.score(&g.query, &[p]).unwrap();
            assert_eq!(single.len(), 1);
            assert!(
                (single[0] - b).abs() <= PADDING_TOLERANCE,
                "{name} {p:?}: alone {} vs batched {b}",
                single[0]
            );
        }
    }
    let g = &fx.groups[0];
    let base = model.score(&g.query, &texts(g)).unwrap();
    let n = g.passages.len();
    let reps = BATCH_SIZE / n + 2;
    let many: Vec<&str> = (0..reps * n)
        .rev()
        .map(|i| g.passages[i % n].text.as_str())
        .collect();
    assert!(many.len() > BATCH_SIZE);
    let got = model.score(&g.query, &many).unwrap();
    for (k, &logit) in got.iter().enumerate() {
        let i = (reps * n - 1 - k) % n;
        assert!(
            (logit - base[i]).abs() <= PADDING_TOLERANCE,
            "{name} repeat {k}: {logit} vs {}",
            base[i]
        );
    }
}

#[test]
fn bert_padding_does_not_change_scores() {
    padding_invariance("tiny-bert-reranker");
}

#[test]
fn xlmr_padding_does_not_change_scores() {
    padding_invariance("tiny-xlmr-reranker");
}

#[test]
fn empty_passages_give_empty_scores() {
    for name in ["tiny-bert-reranker", "tiny-xlmr-reranker"] {
        let model = load(&fixture_dir(name));
        assert!(model.score("anything", &[]).unwrap().is_empty());
    }
}

#[test]
fn max_tokens_is_clamped_and_shorter_truncation_works() {
    for name in ["tiny-bert-reranker", "tiny-xlmr-reranker"] {
        let fx = fixture(name);
        let model = load(&fixture_dir(name)).with_max_tokens(10_000);
        assert_eq!(model.max_tokens(), fx.max_tokens);
        let model = model.with_max_tokens(0);
        assert!(model.max_tokens() >= 5, "{}", model.max_tokens());
        let model = model.with_max_tokens(16);
        assert_eq!(model.max_tokens(), 16);
        for g in &fx.groups {
            let got = model.score(&g.query, &texts(g)).unwrap();
            assert_eq!(got.len(), g.passages.len());
            assert!(got.iter().all(|x| x.is_finite()));
        }
    }
}

/// Copies a fixture folder, rewriting its weights with `edit`.
fn variant(
    name: &str,
    edit: impl FnOnce(HashMap<String, Tensor>) -> HashMap<String, Tensor>,
) -> tempfile::TempDir {
    let src = fixture_dir(name);
    let tmp = tempfile::tempdir().unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(src.join(f), tmp.path().join(f)).unwrap();
    }
    let weights =
        candle_core::safetensors::load(src.join("model.safetensors"), &Device::Cpu).unwrap();
    candle_core::safetensors::save(&edit(weights), tmp.path().join("model.safetensors")).unwrap();
    tmp
}

#[test]
fn bert_without_prefix_loads_the_same() {
    let name = "tiny-bert-reranker";
    let tmp = variant(name, |w| {
        assert!(w.contains_key("bert.pooler.dense.weight"));
        w.into_iter()
            .map(|(k, v)| (k.strip_prefix("bert.").map(str::to_owned).unwrap_or(k), v))
            .collect()
    });
    check_parity(&load(tmp.path()), &fixture(name), "bert (no prefix)");
}

/// A two-label head whose last row is the original one scores like the original.
fn two_labels(name: &str, head: &str) {
    let tmp = variant(name, |mut w| {
        let weight = w.remove(&format!("{head}.weight")).unwrap();
        let bias = w.remove(&format!("{head}.bias")).unwrap();
        let other = (weight.neg().unwrap() * 3.0).unwrap();
        let weight = Tensor::cat(&[&other, &weight], 0).unwrap();
        let bias = Tensor::cat(&[&Tensor::new(&[5f32], &Device::Cpu).unwrap(), &bias], 0).unwrap();
        w.insert(format!("{head}.weight"), weight);
        w.insert(format!("{head}.bias"), bias);
        w
    });
    let model = load(tmp.path());
    assert_eq!(model.num_labels(), 2);
    check_parity(&model, &fixture(name), &format!("{name} (2 labels)"));
}

#[test]
fn bert_two_labels_scores_the_last() {
    two_labels("tiny-bert-reranker", "classifier");
}

#[test]
fn xlmr_two_labels_scores_the_last() {
    two_labels("tiny-xlmr-reranker", "classifier.out_proj");
}

fn load_err(dir: &Path) -> EmbedError {
    match CrossEncoder::from_hf_folder(dir, Device::Cpu) {
        Ok(m) => panic!("{} loaded: {m:?}", dir.display()),
        Err(e) => e,
    }
}

/// A fixture folder with some files left out and some replaced.
fn broken(name: &str, keep: &[&str], replace: &[(&str, &[u8])]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for f in keep {
        std::fs::copy(fixture_dir(name).join(f), tmp.path().join(f)).unwrap();
    }
    for (f, bytes) in replace {
        std::fs::write(tmp.path().join(f), bytes).unwrap();
    }
    tmp
}

#[test]
fn missing_files_are_named() {
    let name = "tiny-bert-reranker";
    let all = ["config.json", "tokenizer.json", "model.safetensors"];

    let err = load_err(&fixture_dir("no-such-reranker"));
    assert!(matches!(err, EmbedError::Io { .. }), "{err}");
    assert!(err.to_string().contains("config.json"), "{err}");

    for missing in all {
        let keep: Vec<&str> = all.iter().copied().filter(|f| *f != missing).collect();
        let tmp = broken(name, &keep, &[]);
        let err = load_err(tmp.path());
        assert!(matches!(err, EmbedError::Io { .. }), "{missing}: {err}");
        assert!(err.to_string().contains(missing), "{missing}: {err}");
    }
}

#[test]
fn corrupt_files_are_named() {
    for name in ["tiny-bert-reranker", "tiny-xlmr-reranker"] {
        let all = ["config.json", "tokenizer.json", "model.safetensors"];
        for corrupt in all {
            let keep: Vec<&str> = all.iter().copied().filter(|f| *f != corrupt).collect();
            let tmp = broken(name, &keep, &[(corrupt, b"\x00\x01 not what you think {")]);
            let err = load_err(tmp.path());
            assert!(err.to_string().contains(corrupt), "{name} {corrupt}: {err}");
        }
        // Truncated weights.
        let bytes = std::fs::read(fixture_dir(name).join("model.safetensors")).unwrap();
        let tmp = broken(
            name,
            &["config.json", "tokenizer.json"],
            &[("model.safetensors", &bytes[..bytes.len() / 2])],
        );
        let err = load_err(tmp.path());
        assert!(
            err.to_string().contains("model.safetensors"),
            "{name}: {err}"
        );
    }
}

#[test]
fn wrong_models_are_refused_clearly() {
    let name = "tiny-bert-reranker";
    let config = std::fs::read_to_string(fixture_dir(name).join("config.json")).unwrap();

    let gpt2 = config.replace("\"model_type\": \"bert\"", "\"model_type\": \"gpt2\"");
    assert_ne!(gpt2, config);
    let tmp = broken(
        name,
        &["tokenizer.json", "model.safetensors"],
        &[("config.json", gpt2.as_bytes())],
    );
    let err = load_err(tmp.path());
    assert!(
        err.to_string().contains("gpt2") && err.to_string().contains("config.json"),
        "{err}"
    );

    // An embedding model (no classifier head) is not a cross-encoder.
    let tmp = variant(name, |mut w| {
        w.retain(|k, _| !k.starts_with("classifier"));
        w
    });
    let err = load_err(tmp.path());
    assert!(err.to_string().contains("classifier.weight"), "{err}");

    // A tensor of the encoder missing.
    let tmp = variant("tiny-xlmr-reranker", |mut w| {
        w.remove("roberta.encoder.layer.1.output.dense.weight")
            .unwrap();
        w
    });
    let err = load_err(tmp.path());
    assert!(err.to_string().contains("model.safetensors"), "{err}");
}

#[test]
fn cross_encoder_is_a_shareable_reranker() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CrossEncoder>();
    let model: Box<dyn Reranker> = Box::new(load(&fixture_dir("tiny-xlmr-reranker")));
    assert_eq!(model.model_id(), "tiny-xlmr-reranker");
    let scores = model
        .score(
            "如何申请出差报销？",
            &["员工出差回来后应在三十天内提交报销单。"],
        )
        .unwrap();
    assert_eq!(scores.len(), 1);
}
