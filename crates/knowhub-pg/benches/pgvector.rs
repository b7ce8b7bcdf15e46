//! `cargo bench -p knowhub-pg --bench pgvector`: filtered vector search in PostgreSQL
//! (pgvector HNSW, filter inside the scan) against the exact answer, beside the local
//! in-memory index, printed as a table (a benchmark, not a timed test).
//!
//! Data: synthetic, clustered 384-d unit vectors (real embeddings gather in clusters; uniform
//! random vectors would be a harder case than any corpus), 10 chunks per document; queries are
//! perturbed data vectors. Filters pick documents at random, independent of the clusters.
//!
//! Settings (environment): `KNOWHUB_BENCH_VECTORS` (100000), `KNOWHUB_BENCH_QUERIES` (200),
//! `KNOWHUB_BENCH_EF` (ef_search values, "40,100,200"),
//! `KNOWHUB_BENCH_FILTERS` (readable shares in %, "100,50,1"), `KNOWHUB_BENCH_M`,
//! `KNOWHUB_BENCH_EFC`, `KNOWHUB_BENCH_BUILD_MB` (the index build; defaults: `IndexOptions`), `KNOWHUB_BENCH_DATABASE` (a database
//! URL; default: a private cluster from `KNOWHUB_PG_BIN` / `.tools/postgres`).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::time::{Duration, Instant};

use knowhub_pg::{Database, IndexOptions, PgCluster, PgVectors, Plan, SearchOptions};
use knowhub_vector::FlatIndex;

const DIM: usize = 384;
const CHUNKS_PER_DOC: usize = 10;
const K: usize = 10;

struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Roughly normal (sum of uniforms), mean 0, variance 1.
    fn gauss(&mut self) -> f32 {
        (0..4)
            .map(|_| (self.next_u64() >> 11) as f32 / (1u64 << 53) as f32)
            .sum::<f32>()
            .mul_add(3f32.sqrt(), -2.0 * 3f32.sqrt())
    }
}

fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
}

/// `n` vectors around `n / 100` centroids (noise of about the centroid's own length).
fn clustered(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    let centroids: Vec<Vec<f32>> = (0..(n / 100).max(1))
        .map(|_| {
            let mut c: Vec<f32> = (0..DIM).map(|_| rng.gauss()).collect();
            normalise(&mut c);
            c
        })
        .collect();
    (0..n)
        .map(|_| {
            let c = &centroids[(rng.next_u64() % centroids.len() as u64) as usize];
            let mut v: Vec<f32> = c
                .iter()
                .map(|x| x + rng.gauss() / (DIM as f32).sqrt() * 0.9)
                .collect();
            normalise(&mut v);
            v
        })
        .collect()
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn main() {
    let n: usize = env_or("KNOWHUB_BENCH_VECTORS", 100_000);
    let nq: usize = env_or("KNOWHUB_BENCH_QUERIES", 200);
    let efs: Vec<usize> = std::env::var("KNOWHUB_BENCH_EF")
        .unwrap_or_else(|_| "40,100,200".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();

    let cluster;
    let url = match std::env::var("KNOWHUB_BENCH_DATABASE") {
        Ok(url) => url,
        Err(_) => {
            let bin = PgCluster::find_binaries()
                .expect("no PostgreSQL: set KNOWHUB_PG_BIN or KNOWHUB_BENCH_DATABASE");
            cluster = PgCluster::start(&bin).expect("private cluster");
            cluster.create_database("bench").unwrap()
        }
    };
    let db = Database::connect(&url).unwrap();
    let defaults = IndexOptions::default();
    let index = IndexOptions {
        m: env_or("KNOWHUB_BENCH_M", defaults.m),
        ef_construction: env_or("KNOWHUB_BENCH_EFC", defaults.ef_construction),
        build_memory_mb: env_or("KNOWHUB_BENCH_BUILD_MB", defaults.build_memory_mb),
    };
    let vectors = PgVectors::new(&db).with_index_options(index);
    let model = vectors
        .register_model(&format!("bench-{n}-{DIM}"), DIM)
        .unwrap();

    let t = Instant::now();
    let data = clustered(n, 7);
    let mut local = FlatIndex::new(DIM);
    for (doc, group) in data.chunks(CHUNKS_PER_DOC).enumerate() {
        let rows: Vec<(u64, Vec<f32>)> = group
            .iter()
            .enumerate()
            .map(|(j, v)| ((doc * CHUNKS_PER_DOC + j) as u64, v.clone()))
            .collect();
        local.upsert_document(doc as u64, &rows).unwrap();
    }
    println!(
        "generated {n} × {DIM} vectors in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    if vectors.count(&model).unwrap() != n as u64 {
        let t = Instant::now();
        vectors
            .load(
                &model,
                data.iter()
                    .enumerate()
                    .map(|(i, v)| (i as u64, (i / CHUNKS_PER_DOC) as u64, v.as_slice())),
            )
            .unwrap();
        println!("COPY into PostgreSQL: {:.1} s", t.elapsed().as_secs_f64());
    }
    let t = Instant::now();
    vectors.build_index(&model).unwrap();
    println!(
        "HNSW index (m={}, ef_construction={}, {} MB): {:.1} s",
        index.m,
        index.ef_construction,
        index.build_memory_mb,
        t.elapsed().as_secs_f64()
    );

    let mut rng = Rng(99);
    let queries: Vec<Vec<f32>> = (0..nq)
        .map(|_| {
            let base = &data[(rng.next_u64() % n as u64) as usize];
            let mut q: Vec<f32> = base.iter().map(|x| x + rng.gauss() * 0.03).collect();
            normalise(&mut q);
            q
        })
        .collect();
    let docs = n.div_ceil(CHUNKS_PER_DOC);
    let pick = |share: f64, seed: u64| -> Vec<u64> {
        let mut rng = Rng(seed);
        (0..docs as u64)
            .filter(|_| ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < share)
            .collect()
    };
    let filters: Vec<(String, Option<Vec<u64>>)> = std::env::var("KNOWHUB_BENCH_FILTERS")
        .unwrap_or_else(|_| "100,50,1".into())
        .split(',')
        .filter_map(|s| s.trim().parse::<f64>().ok())
        .map(|pct| match pct {
            100.0 => ("none".to_string(), None),
            _ => (format!("{pct}%"), Some(pick(pct / 100.0, pct.to_bits()))),
        })
        .collect();

    println!();
    println!("| chunks | filter | plan | ef_search | recall@{K} | p50 ms | p95 ms | p99 ms |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, filter) in &filters {
        let readable = filter.as_deref();
        let allowed: Option<HashSet<u64>> = filter.as_ref().map(|f| f.iter().copied().collect());
        let allow = allowed.as_ref().map(|set| move |d: u64| set.contains(&d));
        let mut exact = Vec::new();
        let mut times = Vec::new();
        for q in &queries {
            let t = Instant::now();
            let hits = vectors
                .search_with(Plan::Exact, &model, q, K, readable)
                .unwrap();
            times.push(t.elapsed());
            exact.push(hits.iter().map(|h| h.chunk_id).collect::<HashSet<_>>());
        }
        report(n, name, "exact (PostgreSQL)", "-", 1.0, &mut times);

        let mut times = Vec::new();
        let mut found = 0usize;
        for (q, truth) in queries.iter().zip(&exact) {
            let t = Instant::now();
            let hits = local
                .search(
                    q,
                    K,
                    allow.as_ref().map(|f| f as &(dyn Fn(u64) -> bool + Sync)),
                )
                .unwrap();
            times.push(t.elapsed());
            found += hits.iter().filter(|h| truth.contains(&h.chunk_id)).count();
        }
        let total: usize = exact.iter().map(HashSet::len).sum();
        report(
            n,
            name,
            "local FlatIndex",
            "-",
            found as f64 / total.max(1) as f64,
            &mut times,
        );

        let mut times = Vec::new();
        let mut found = 0usize;
        for (q, truth) in queries.iter().zip(&exact) {
            let t = Instant::now();
            let hits = vectors.search(&model, q, K, readable).unwrap();
            times.push(t.elapsed());
            found += hits.iter().filter(|h| truth.contains(&h.chunk_id)).count();
        }
        let plan = "**search (chosen plan)**";
        report(
            n,
            name,
            plan,
            &SearchOptions::default().ef_search.to_string(),
            found as f64 / total.max(1) as f64,
            &mut times,
        );

        for &ef in &efs {
            let hnsw = vectors.clone().with_options(SearchOptions {
                ef_search: ef,
                ..SearchOptions::default()
            });
            let mut times = Vec::new();
            let mut found = 0usize;
            for (q, truth) in queries.iter().zip(&exact) {
                let t = Instant::now();
                let hits = hnsw
                    .search_with(Plan::Index, &model, q, K, readable)
                    .unwrap();
                times.push(t.elapsed());
                found += hits.iter().filter(|h| truth.contains(&h.chunk_id)).count();
            }
            report(
                n,
                name,
                "HNSW, iterative",
                &ef.to_string(),
                found as f64 / total.max(1) as f64,
                &mut times,
            );
        }
    }
}

fn report(n: usize, filter: &str, plan: &str, ef: &str, recall: f64, times: &mut [Duration]) {
    times.sort();
    println!(
        "| {n} | {filter} | {plan} | {ef} | {recall:.4} | {:.2} | {:.2} | {:.2} |",
        percentile(times, 0.5),
        percentile(times, 0.95),
        percentile(times, 0.99)
    );
}
