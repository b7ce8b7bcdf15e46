//! `knowhub watch`, `unwatch`, `daemon`, `jobs`, `upload` and `check`: watched folders and the
//! background ingestion queue.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use knowhub_engine::{
    Engine, FileOutcome, IngestEvent, JobState, ProcessOptions, RequestContext, SourceRules,
    UploadTarget, WatchEvent, WatchOptions, WatchService,
};

/// `knowhub watch` arguments.
#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// Folders to watch (added once, remembered); none = the folders already watched.
    pub folders: Vec<PathBuf>,
    /// Only files matching these globs are documents (gitignore syntax; repeatable).
    #[arg(long)]
    pub include: Vec<String>,
    /// Leave out files and folders matching these globs (repeatable).
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Skip files larger than this many bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_size: Option<u64>,
    /// List the watched folders and exit.
    #[arg(long)]
    pub list: bool,
    /// Catch up (reconcile and process the queue) and exit instead of watching.
    #[arg(long)]
    pub once: bool,
}

/// `knowhub jobs` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum JobsCommand {
    /// Queue counts and the most recent jobs (the default).
    List {
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: usize,
        /// Only failed jobs, with their reasons.
        #[arg(long)]
        failed: bool,
    },
    /// Pause background ingestion (kept across restarts).
    Pause,
    /// Resume background ingestion.
    Resume,
    /// Cancel queued jobs (all, or at or under a path).
    Cancel { path: Option<PathBuf> },
    /// Queue failed jobs again (all, or at or under a path).
    Retry { path: Option<PathBuf> },
}

pub(crate) fn watch(
    engine: &Arc<Engine>,
    ctx: &RequestContext,
    args: WatchArgs,
    json: bool,
    progress: bool,
) -> Result<ExitCode> {
    let rules = SourceRules {
        include: args.include,
        exclude: args.exclude,
        max_file_bytes: args.max_size,
    };
    for folder in &args.folders {
        let w = engine.watch_folder(ctx, folder, rules.clone())?;
        if !json {
            eprintln!("watching {}", w.path);
        }
    }
    if args.list {
        let folders = engine.watched_folders(ctx)?;
        if json {
            println!("{}", serde_json::to_string_pretty(&folders)?);
        } else if folders.is_empty() {
            println!("no watched folders: knowhub watch <folder>");
        } else {
            for f in &folders {
                let mut rules = Vec::new();
                if !f.rules.include.is_empty() {
                    rules.push(format!("include {}", f.rules.include.join(" ")));
                }
                if !f.rules.exclude.is_empty() {
                    rules.push(format!("exclude {}", f.rules.exclude.join(" ")));
                }
                if let Some(max) = f.rules.max_file_bytes {
                    rules.push(format!("max {max} bytes"));
                }
                println!(
                    "{:>6}  {}{}",
                    f.documents,
                    f.path,
                    if rules.is_empty() {
                        String::new()
                    } else {
                        format!("  ({})", rules.join("; "))
                    }
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if engine.is_read_only() {
        anyhow::bail!(
            "another KnowHub process (the app or `knowhub daemon`) is already watching this \
             knowledge base; the folders were added and it picks them up"
        );
    }
    if args.once {
        return catch_up(engine, ctx, json, progress);
    }
    run_service(engine, ctx, json, progress)
}

/// Reconciles every watched folder and processes the queue until it is empty.
fn catch_up(
    engine: &Arc<Engine>,
    ctx: &RequestContext,
    json: bool,
    progress: bool,
) -> Result<ExitCode> {
    // The same permission the service needs.
    engine.check_watch_permission(ctx)?;
    engine.recover_queue()?;
    let queued = engine.reconcile_all()?;
    let bar = bar(progress);
    bar.set_length(engine.queue(ctx, 0)?.counts.queued);
    let started = std::time::Instant::now();
    let report = engine.drain_queue(
        &ProcessOptions::default(),
        Some(Duration::from_secs(600)),
        &mut |e| match e {
            IngestEvent::File { path, outcome, .. } => {
                bar.inc(1);
                bar.set_message(short(path));
                if !progress && !json {
                    println!("{:<9} {path}{}", outcome.label(), detail(outcome));
                }
            }
            IngestEvent::Embedded { done, total } => {
                bar.set_message(format!("embedding {done}/{total}"));
            }
            _ => {}
        },
    )?;
    bar.finish_and_clear();
    let counts = engine.queue(ctx, 0)?.counts;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "reconciled": queued, "report": report, "queue": counts,
                "elapsed_ms": started.elapsed().as_millis() as u64,
            })
        );
    } else {
        println!(
            "caught up in {:.1} s: {} path(s) found changed, {} job(s) done, {} failed, {} file(s) processed, {} chunk(s) embedded; {} still queued",
            started.elapsed().as_secs_f64(),
            queued,
            report.done,
            report.failed,
            report.files,
            report.embedded,
            counts.queued
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the watcher in the foreground until Ctrl-C (or SIGTERM).
fn run_service(
    engine: &Arc<Engine>,
    ctx: &RequestContext,
    json: bool,
    progress: bool,
) -> Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
            .context("cannot install the Ctrl-C handler")?;
    }
    let service = WatchService::start(Arc::clone(engine), ctx, WatchOptions::default())?;
    let events = service.subscribe();
    let bar = bar(progress);
    while !stop.load(Ordering::Relaxed) {
        let Ok(event) = events.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        if json {
            println!("{}", serde_json::to_string(&event)?);
            continue;
        }
        match &event {
            WatchEvent::Watching { folders } => {
                bar.suspend(|| {
                    eprintln!(
                        "watching {} folder(s): {}",
                        folders.len(),
                        folders.join(", ")
                    )
                });
            }
            WatchEvent::WatchFailed { folder, reason } => {
                bar.suspend(|| {
                    eprintln!("cannot watch {folder}: {reason} (scanned periodically instead)")
                });
            }
            WatchEvent::Reconciled { queued, elapsed_ms } if *queued > 0 => {
                bar.suspend(|| eprintln!("found {queued} changed path(s) in {elapsed_ms} ms"));
            }
            WatchEvent::File { path, outcome }
                if !matches!(outcome, FileOutcome::Unchanged | FileOutcome::Busy { .. }) =>
            {
                bar.suspend(|| println!("{:<9} {path}{}", outcome.label(), detail(outcome)));
            }
            WatchEvent::Progress(p) => {
                bar.set_length(p.done + p.queued + p.running);
                bar.set_position(p.done);
                let eta = p
                    .eta_secs
                    .map(|s| format!(", eta {s} s"))
                    .unwrap_or_default();
                let state = if p.paused { "paused" } else { "" };
                let reading = p
                    .reading
                    .map(|r| format!(" (OCR: {} of {} pages)", r.done, r.pages))
                    .unwrap_or_default();
                bar.set_message(format!(
                    "{} queued, {} failed{eta} {state} {}{reading}",
                    p.queued,
                    p.failed,
                    p.current.as_deref().map(short).unwrap_or_default()
                ));
            }
            WatchEvent::Idle => bar.set_message("up to date; watching for changes (Ctrl-C stops)"),
            WatchEvent::Warning { message } => bar.suspend(|| eprintln!("warning: {message}")),
            _ => {}
        }
    }
    bar.finish_and_clear();
    eprintln!("stopping after the file in progress…");
    service.stop();
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn jobs(
    engine: &Engine,
    ctx: &RequestContext,
    cmd: Option<JobsCommand>,
    json: bool,
) -> Result<ExitCode> {
    match cmd.unwrap_or(JobsCommand::List {
        limit: 20,
        failed: false,
    }) {
        JobsCommand::List { limit, failed } => {
            let mut view = engine.queue(ctx, if failed { 10_000 } else { limit })?;
            if failed {
                view.jobs.retain(|j| j.state == JobState::Failed);
                view.jobs.truncate(limit);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&view)?);
                return Ok(ExitCode::SUCCESS);
            }
            let c = view.counts;
            crate::render::queue_counts(
                c.queued,
                c.waiting,
                c.running,
                c.done,
                c.failed,
                c.cancelled,
                c.paused,
                "knowhub jobs resume",
            );
            for j in &view.jobs {
                crate::render::job_line(
                    j.id,
                    j.state.as_str(),
                    &j.path,
                    j.error.as_deref(),
                    j.outcome.as_deref(),
                );
            }
        }
        JobsCommand::Pause => {
            engine.set_queue_paused(ctx, true)?;
            println!("paused: files are still noticed and queued, but not processed");
        }
        JobsCommand::Resume => {
            engine.set_queue_paused(ctx, false)?;
            println!("resumed");
        }
        JobsCommand::Cancel { path } => {
            let n = engine.cancel_jobs(ctx, path.as_deref())?;
            println!("cancelled {n} job(s)");
        }
        JobsCommand::Retry { path } => {
            let n = engine.retry_failed(ctx, path.as_deref())?;
            println!("queued {n} failed job(s) again");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Copies files into the uploads area and processes them now (or leaves them to the running
/// app or daemon).
pub(crate) fn upload(
    engine: &Arc<Engine>,
    ctx: &RequestContext,
    paths: &[PathBuf],
    collection: Option<String>,
    json: bool,
    progress: bool,
) -> Result<ExitCode> {
    let copies = engine.upload_to(ctx, paths, &UploadTarget::Uploads { collection })?;
    if !json {
        for c in &copies {
            eprintln!("copied to {}", c.display());
        }
    }
    if engine.is_read_only() {
        println!(
            "queued {} upload(s): the running KnowHub processes them",
            copies.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    catch_up(engine, ctx, json, progress)
}

pub(crate) fn check(
    engine: &Engine,
    ctx: &RequestContext,
    deep: bool,
    json: bool,
) -> Result<ExitCode> {
    let report = engine.check(ctx, deep)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{} document(s), {} chunk(s) stored, {} indexed, {} vector(s); {} folder(s) with {} file(s); {} job(s) pending",
            report.documents,
            report.chunks,
            report.indexed_chunks,
            report.vectors,
            report.folders,
            report.files_on_disk,
            report.jobs_pending
        );
        if report.is_consistent() {
            println!("consistent: store, full-text index, vectors and folders agree");
        }
        for p in &report.problems {
            println!("problem: {p}");
        }
    }
    Ok(if report.is_consistent() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

fn bar(visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} files  {wide_msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn short(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

fn detail(outcome: &FileOutcome) -> String {
    if let Some(reason) = outcome.reason() {
        return format!(": {reason}");
    }
    match outcome {
        FileOutcome::Moved { from } => format!(" (from {from})"),
        FileOutcome::Added { chunks } | FileOutcome::Updated { chunks } => {
            format!(" ({chunks} chunks)")
        }
        _ => String::new(),
    }
}
