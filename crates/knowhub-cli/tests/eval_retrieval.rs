//! `knowhub eval retrieval` on a tiny BEIR-format dataset written by the test.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

fn write_dataset(dir: &Path) {
    let corpus = [
        (
            "d1",
            "Annual leave",
            "Employees receive fifteen days of paid vacation each year.",
        ),
        (
            "d2",
            "Deployment",
            "Rolling updates replace pods gradually, bounded by maxSurge.",
        ),
        (
            "d3",
            "报销",
            "员工出差回来后应在两周内提交报销单，并附上发票。",
        ),
        (
            "d4",
            "Security",
            "Report a lost or stolen laptop to the IT service desk within 24 hours.",
        ),
    ];
    let queries = [
        ("q1", "how many vacation days do I get"),
        ("q2", "报销单什么时候交"),
        ("q3", "my laptop was stolen"),
        ("q4", "no judgements for this one"),
    ];
    let mut c = String::new();
    for (id, title, text) in corpus {
        c += &serde_json::json!({"_id": id, "title": title, "text": text}).to_string();
        c += "\n";
    }
    std::fs::write(dir.join("corpus.jsonl"), c).unwrap();
    let mut q = String::new();
    for (id, text) in queries {
        q += &serde_json::json!({"_id": id, "text": text}).to_string();
        q += "\n";
    }
    std::fs::write(dir.join("queries.jsonl"), q).unwrap();
    std::fs::create_dir_all(dir.join("qrels")).unwrap();
    std::fs::write(
        dir.join("qrels/test.tsv"),
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\nq3\td4\t1\n",
    )
    .unwrap();
}

fn eval(dataset: &Path, embedder: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .args([
            "--json",
            "--embedder",
            embedder,
            "eval",
            "retrieval",
            "--dataset",
        ])
        .arg(dataset)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn row<'a>(report: &'a serde_json::Value, system: &str) -> &'a serde_json::Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["system"] == system)
        .unwrap_or_else(|| panic!("no row {system} in {report}"))
}

#[test]
fn keyword_only_scores_bm25_and_skips_the_dense_rows() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path());
    let report = eval(dir.path(), "off");
    assert_eq!(report["documents"], 4);
    let bm25 = row(&report, "BM25");
    // Three judged queries; the unjudged one is not evaluated.
    assert_eq!(bm25["queries"], 3);
    assert_eq!(bm25["ndcg_at_10"], 1.0, "{report}");
    assert_eq!(bm25["recall_at_5"], 1.0);
    assert_eq!(bm25["mrr_at_10"], 1.0);
    assert!(row(&report, "dense")["skipped"].is_string());
    assert!(row(&report, "hybrid + rerank")["skipped"].is_string());
}

#[test]
fn a_dataset_folder_without_a_corpus_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .args(["--embedder", "off", "eval", "retrieval", "--dataset"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a BEIR dataset folder"), "{err}");
}

#[test]
fn the_default_embedder_finds_paraphrases() {
    let models = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../../models/multilingual-e5-small");
    if !models.join("e5-small-q4.bin").is_file() {
        eprintln!("skipped: multilingual-e5-small not installed (knowhub models fetch)");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path());
    let report = eval(dir.path(), "default");
    assert_eq!(report["embedder"], "multilingual-e5-small");
    for system in ["dense", "hybrid"] {
        let r = row(&report, system);
        assert_eq!(r["recall_at_5"], 1.0, "{system}: {report}");
        assert!(
            r["ndcg_at_10"].as_f64().unwrap() > 0.9,
            "{system}: {report}"
        );
    }
}
