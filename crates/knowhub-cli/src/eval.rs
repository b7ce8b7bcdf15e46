//! `knowhub eval …`: extraction quality against reference texts, robustness runs over hostile
//! corpora, and retrieval quality ([`crate::eval_retrieval`]). All work on throw-away stores;
//! nothing touches the user's knowledge base.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Subcommand;
use knowhub_engine::{Engine, FileOutcome, IngestEvent, IngestOptions, dev_context};
use knowhub_parse::{DocKind, Limits};
use serde::Serialize;

#[derive(Debug, Subcommand)]
pub(crate) enum EvalCommand {
    /// Text extraction quality: word-sequence similarity of our PDF text to reference texts
    /// (and of poppler's `pdftotext`, when installed, for comparison).
    Extract {
        /// The shared corpus `documents/pdf` folder.
        #[arg(long, default_value = "../shared/corpora/documents/pdf")]
        corpus: PathBuf,
    },
    /// Ingests a folder of (hostile) documents into a throw-away store with the real sandbox
    /// and reports parsed / failed-with-reason / crashed / timed-out counts. Exits 1 if any
    /// file crashed the parser or timed out.
    Robustness {
        folder: PathBuf,
        /// Per-file parse timeout.
        #[arg(long, default_value_t = 30)]
        timeout_secs: u64,
        /// Parser worker address-space limit.
        #[arg(long, default_value_t = 2048)]
        memory_mb: u64,
    },
    /// Retrieval quality on a BEIR-format dataset (corpus.jsonl, queries.jsonl, qrels/*.tsv):
    /// nDCG@10, Recall@5/10/100, MRR@10 for BM25, dense, hybrid and hybrid + rerank.
    Retrieval(crate::eval_retrieval::RetrievalArgs),
    /// Text-to-SQL execution accuracy (the copilot's SQL tool: the configured LLM, or the
    /// templates with --llm off) against gold SQL, both run under the same safety policy.
    Sql(crate::eval_agent::SqlEvalArgs),
    /// Copilot answers on a QA set (CMRC 2018): exact match, character F1, whether the answer
    /// contains the gold span, and whether a citation points at the gold passage.
    Qa(crate::eval_agent::QaEvalArgs),
    /// The copilot end to end on a documentation set with gold strings and gold pages
    /// (`eval/debian-faq`): strict accuracy per language and kind of question, abstentions,
    /// refusals, and time to the first word and to the whole answer.
    Docs(crate::eval_docs::DocsEvalArgs),
    /// The router on a bilingual question table and on third-party question sets (Chinook
    /// text-to-SQL questions want SQL, CMRC reading questions want documents).
    Routing(crate::eval_agent::RoutingEvalArgs),
    /// Memory extraction on labelled bilingual conversations: precision and recall of the
    /// rules, and of the rules plus the language model (`--llm`).
    Memory(crate::eval_memory::MemoryEvalArgs),
}

pub(crate) fn run(
    cmd: EvalCommand,
    models: &crate::ModelArgs,
    llm: &crate::ask::LlmArgs,
    json: bool,
) -> Result<ExitCode> {
    match cmd {
        EvalCommand::Sql(args) => crate::eval_agent::sql(&args, llm, json),
        EvalCommand::Qa(args) => crate::eval_agent::qa(&args, models, llm, json),
        EvalCommand::Docs(args) => crate::eval_docs::docs(&args, models, llm, json),
        EvalCommand::Routing(args) => crate::eval_agent::routing(&args, llm, json),
        EvalCommand::Memory(args) => crate::eval_memory::memory(&args, llm, json),
        EvalCommand::Retrieval(args) => crate::eval_retrieval::run(args, models, json),
        EvalCommand::Extract { corpus } => extract(&corpus, json),
        EvalCommand::Robustness {
            folder,
            timeout_secs,
            memory_mb,
        } => robustness(&folder, timeout_secs, memory_mb, json),
    }
}

/// (PDF, reference text) pairs from the shared corpus, relative to `documents/pdf`.
const PAIRS: &[(&str, &str, &str)] = &[
    (
        "crazyones",
        "pypdf_resources/crazyones.pdf",
        "pypdf_resources/crazyones.txt",
    ),
    (
        "GeoTopo (117 pages)",
        "py-pdf_sample-files/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf",
        "py-pdf_benchmarks_ground_truth/GeoTopo-book.txt",
    ),
];

#[derive(Debug, Serialize)]
struct ExtractRow {
    name: String,
    ours: f64,
    pdftotext: Option<f64>,
    words_reference: usize,
    words_ours: usize,
}

fn extract(corpus: &Path, json: bool) -> Result<ExitCode> {
    if !corpus.is_dir() {
        eprintln!(
            "skipped: corpus folder {} not found (it ships beside the repository as ../shared)",
            corpus.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = Vec::new();
    for (name, pdf, reference) in PAIRS {
        let (pdf, reference) = (corpus.join(pdf), corpus.join(reference));
        let bytes = std::fs::read(&pdf).with_context(|| format!("reading {}", pdf.display()))?;
        let want = std::fs::read_to_string(&reference)
            .with_context(|| format!("reading {}", reference.display()))?;
        let doc = knowhub_parse::parse(DocKind::Pdf, &bytes, &Limits::default())
            .with_context(|| format!("parsing {}", pdf.display()))?;
        let ours = doc.plain_text();
        let poppler = pdftotext(&pdf);
        rows.push(ExtractRow {
            name: (*name).to_string(),
            ours: word_similarity(&ours, &want),
            pdftotext: poppler.map(|p| word_similarity(&p, &want)),
            words_reference: want.split_whitespace().count(),
            words_ours: ours.split_whitespace().count(),
        });
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        println!("| document | KnowHub | pdftotext | words (ref / ours) |");
        println!("|---|---|---|---|");
        for r in &rows {
            let p = r
                .pdftotext
                .map(|v| format!("{v:.3}"))
                .unwrap_or_else(|| "n/a".into());
            println!(
                "| {} | {:.3} | {p} | {} / {} |",
                r.name, r.ours, r.words_reference, r.words_ours
            );
        }
        println!(
            "\nsimilarity = 2·matches / (words_a + words_b) over word sequences (difflib ratio)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Text of a PDF by poppler's `pdftotext`, if installed.
pub(crate) fn pdftotext(pdf: &Path) -> Option<String> {
    let out = std::process::Command::new("pdftotext")
        .arg(pdf)
        .arg("-")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// difflib-style ratio over whitespace-separated words, ligatures normalised on both sides.
pub(crate) fn word_similarity(a: &str, b: &str) -> f64 {
    let norm = |s: &str| -> Vec<String> {
        s.replace('\u{fb01}', "fi")
            .replace('\u{fb02}', "fl")
            .replace('\u{fb00}', "ff")
            .replace('\u{fb03}', "ffi")
            .replace('\u{fb04}', "ffl")
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (norm(a), norm(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let ops =
        similar::capture_diff_slices_deadline(similar::Algorithm::Myers, &a, &b, Some(deadline));
    f64::from(similar::get_diff_ratio(&ops, a.len(), b.len()))
}

#[derive(Debug, Default, Serialize)]
struct RobustnessReport {
    files: usize,
    parsed: usize,
    parsed_without_text: usize,
    failed_with_reason: usize,
    crashed: usize,
    timed_out: usize,
    skipped_unsupported: usize,
    failure_reasons: BTreeMap<String, usize>,
    crashed_files: Vec<(String, String)>,
    timed_out_files: Vec<String>,
    elapsed_s: f64,
}

fn robustness(folder: &Path, timeout_secs: u64, memory_mb: u64, json: bool) -> Result<ExitCode> {
    if !folder.is_dir() {
        eprintln!("skipped: folder {} not found", folder.display());
        return Ok(ExitCode::SUCCESS);
    }
    let data = tempfile::tempdir()?;
    let mut config = crate::engine_config(data.path().to_path_buf())?;
    // Scanned pages and pictures go through OCR when its model is installed, as in ingestion.
    config.models.ocr = true;
    config.limits.timeout = Duration::from_secs(timeout_secs);
    config.limits.memory_bytes = memory_mb << 20;
    let engine = Engine::open(config)?;
    let visible = !json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let bar = crate::progress_bar(visible);
    let mut report = RobustnessReport::default();
    let started = std::time::Instant::now();
    engine.ingest(
        &dev_context(),
        &[folder.to_path_buf()],
        &IngestOptions::default(),
        &mut |e| {
            crate::on_event(&bar, e);
            if let IngestEvent::File { path, outcome, .. } = e {
                report.files += 1;
                match outcome {
                    FileOutcome::Added { .. }
                    | FileOutcome::Updated { .. }
                    | FileOutcome::Unchanged
                    | FileOutcome::Moved { .. } => report.parsed += 1,
                    FileOutcome::NoText { .. } => report.parsed_without_text += 1,
                    FileOutcome::Skipped { .. } => report.skipped_unsupported += 1,
                    FileOutcome::Removed | FileOutcome::Busy { .. } => {}
                    FileOutcome::Failed { code, reason } => match code.as_str() {
                        "crashed" => {
                            report.crashed += 1;
                            report.crashed_files.push((path.clone(), reason.clone()));
                        }
                        "timeout" => {
                            report.timed_out += 1;
                            report.timed_out_files.push(path.clone());
                        }
                        _ => {
                            report.failed_with_reason += 1;
                            *report.failure_reasons.entry(code.clone()).or_default() += 1;
                        }
                    },
                }
            }
        },
    )?;
    bar.finish_and_clear();
    report.elapsed_s = started.elapsed().as_secs_f64();
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "robustness run over {} ({} files, {:.1} s)",
            folder.display(),
            report.files,
            report.elapsed_s
        );
        println!("| outcome | files |");
        println!("|---|---|");
        println!("| parsed with text | {} |", report.parsed);
        println!(
            "| parsed, no text (empty / scanned) | {} |",
            report.parsed_without_text
        );
        println!("| failed with a reason | {} |", report.failed_with_reason);
        println!(
            "| crashed (panic/abort, caught by the sandbox) | {} |",
            report.crashed
        );
        println!("| timed out | {} |", report.timed_out);
        println!(
            "| skipped (not a document format) | {} |",
            report.skipped_unsupported
        );
        for (code, n) in &report.failure_reasons {
            println!("  reason {code}: {n}");
        }
        for (path, why) in &report.crashed_files {
            println!("  crashed: {path}: {why}");
        }
        for path in &report.timed_out_files {
            println!("  timed out: {path}");
        }
    }
    Ok(if report.crashed + report.timed_out == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::word_similarity;

    #[test]
    fn similarity_is_a_ratio() {
        assert_eq!(word_similarity("a b c", "a b c"), 1.0);
        assert_eq!(word_similarity("a b", "c d"), 0.0);
        assert!((word_similarity("a b c d", "a b x d") - 0.75).abs() < 1e-9);
        assert_eq!(word_similarity("ﬁne", "fine"), 1.0);
    }
}
