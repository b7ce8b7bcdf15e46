//! `cargo bench -p knowhub-vector`: exact filtered dense search over 1M synthetic 384-d
//! vectors, printed as a table (a benchmark, not a timed test).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::Instant;

use knowhub_vector::{FlatIndex, synthetic_unit_vectors};

type Filter = dyn Fn(u64) -> bool + Sync;

fn main() {
    let n: usize = std::env::var("KNOWHUB_BENCH_VECTORS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dim = 384;
    let t = Instant::now();
    let mut index = FlatIndex::new(dim);
    let batch = 10_000;
    for start in (0..n).step_by(batch) {
        let vs = synthetic_unit_vectors(batch.min(n - start), dim, start as u64 + 1);
        for (doc, group) in vs.chunks(10).enumerate() {
            let base = start + doc * 10;
            let entries: Vec<(u64, Vec<f32>)> = group
                .iter()
                .enumerate()
                .map(|(j, v)| ((base + j) as u64, v.clone()))
                .collect();
            index.upsert_document((base / 10) as u64, &entries).unwrap();
        }
    }
    println!(
        "built {n} × {dim} in {:.1} s; vector memory {:.0} MB",
        t.elapsed().as_secs_f64(),
        index.memory_bytes() as f64 / 1e6
    );
    let queries = synthetic_unit_vectors(100, dim, 424_242);
    println!("| filter | k | p50 ms | p95 ms |");
    println!("|---|---|---|---|");
    let half = |d: u64| d.is_multiple_of(2);
    let one_percent = |d: u64| d.is_multiple_of(100);
    let filters: [(&str, Option<&Filter>); 3] = [
        ("none", None),
        ("50% of documents", Some(&half)),
        ("1% of documents", Some(&one_percent)),
    ];
    for (name, filter) in filters {
        let mut times: Vec<f64> = queries
            .iter()
            .map(|q| {
                let t = Instant::now();
                let hits = index.search(q, 10, filter).unwrap();
                assert!(!hits.is_empty());
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
        println!("| {name} | 10 | {:.1} | {:.1} |", pct(0.5), pct(0.95));
    }
}
