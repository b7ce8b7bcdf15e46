//! `knowhub bench ingest`: parse+index throughput on a folder, with poppler's `pdftotext` on
//! the same PDFs beside it. A benchmark that prints a table, never a timed test.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::Subcommand;
use knowhub_engine::{Engine, IngestOptions};

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
}

pub(crate) fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Ingest { folder } => ingest(&folder),
        BenchCommand::Search {
            folder,
            queries,
            rounds,
        } => search(&folder, &queries, rounds),
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
    let report = engine.ingest(inputs, &IngestOptions::default(), &mut |_| {})?;
    let seconds = t.elapsed().as_secs_f64();
    let status = engine.status()?;
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
        &[folder.to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let chunks = engine.status()?.indexed_chunks;
    let mut times = Vec::new();
    for _ in 0..rounds.max(1) {
        for q in queries {
            let t = Instant::now();
            let _ = engine.search(q, &Default::default())?;
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
