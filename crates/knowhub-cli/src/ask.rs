//! `knowhub ask`, `chat`, `trace`, `sessions` and `sql`: the copilot from the terminal.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use knowhub_agent::providers::LlmChoice;
use knowhub_agent::{Agent, AgentEvent, AgentOptions, AskRequest};
use knowhub_engine::{Engine, RequestContext};
use knowhub_llm::Llm;

/// Which language model writes answers.
#[derive(Debug, Clone, Args)]
pub(crate) struct LlmArgs {
    /// `local` (the default local model when installed, else extractive answers), a model
    /// name from models/manifest.toml (e.g. qwen2.5-coder-1.5b-instruct, smollm2-135m-instruct),
    /// a path to a .gguf file, `openai` (an OpenAI-compatible server: --llm-url, --llm-model,
    /// KNOWHUB_LLM_API_KEY), or `off` (extractive answers: the best supporting sentences).
    #[arg(long, global = true, env = "KNOWHUB_LLM", default_value = "local")]
    pub llm: String,
    /// Base URL of the OpenAI-compatible server (Ollama: http://localhost:11434/v1).
    #[arg(long, global = true, env = "KNOWHUB_LLM_URL")]
    pub llm_url: Option<String>,
    /// Model name on that server.
    #[arg(long, global = true, env = "KNOWHUB_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// Where a local model runs: the global `--device` (copied in by `main`, so both flags
    /// cannot disagree); empty is the CPU.
    #[arg(skip)]
    pub device: String,
}

impl LlmArgs {
    /// Loads the configured model; `Ok(None)` = extractive mode (with a note when the user
    /// asked for the default model and it is not installed).
    pub(crate) fn load(&self) -> Result<Option<Arc<dyn Llm>>> {
        let choice = LlmChoice::parse(
            &self.llm,
            self.llm_url.clone(),
            self.llm_model.clone(),
            std::env::var("KNOWHUB_LLM_API_KEY").ok(),
        )?;
        let device = match self.device.as_str() {
            "" => knowhub_engine::DeviceChoice::Cpu,
            text => text.parse::<knowhub_engine::DeviceChoice>()?,
        };
        let loaded = choice.load(&device.device())?;
        if let Some(note) = loaded.note {
            eprintln!("note: {note}");
        }
        Ok(loaded.llm)
    }
}

/// `knowhub ask` arguments.
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    pub question: String,
    /// Continue a conversation (see `knowhub sessions`); default: a new one.
    #[arg(long)]
    pub session: Option<String>,
    /// The project the question is about: your memories of that project are used too.
    #[arg(long)]
    pub project: Option<String>,
    /// Also print how the answer was made (route, steps, evidence, SQL, stop reason).
    #[arg(long)]
    pub trace: bool,
    /// Answer with just the words of the evidence that answer (a name, number, date) and
    /// their citation, instead of cited sentences.
    #[arg(long)]
    pub brief: bool,
}

pub(crate) fn ask(
    engine: Arc<Engine>,
    ctx: &RequestContext,
    llm: &LlmArgs,
    args: &AskArgs,
    json: bool,
) -> Result<ExitCode> {
    let model = llm.load()?;
    let options = AgentOptions {
        brief_answers: args.brief,
        ..AgentOptions::default()
    };
    let agent = Agent::new(engine, model, options);
    let outcome = answer(
        &agent,
        ctx,
        &args.question,
        args.session.clone(),
        args.project.clone(),
        json,
    )?;
    if json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.trace {
        print_trace(&outcome.state);
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks one question, streaming the answer to stdout (unless `json`), then the checked
/// answer when the check changed its words, the sources, and a status line on stderr.
pub(crate) fn answer(
    agent: &Agent,
    ctx: &RequestContext,
    question: &str,
    session: Option<String>,
    project: Option<String>,
    json: bool,
) -> Result<knowhub_agent::AskOutcome> {
    let mut out = std::io::stdout();
    let mut streamed = false;
    let mut draft = String::new();
    let outcome = agent.ask(
        ctx,
        &AskRequest {
            question: question.to_owned(),
            session,
            ephemeral: false,
            project,
            cancel: Default::default(),
        },
        &mut |e| {
            if json {
                return;
            }
            match e {
                AgentEvent::Token(t) => {
                    streamed = true;
                    draft.push_str(t);
                    let _ = write!(out, "{t}");
                    let _ = out.flush();
                }
                AgentEvent::Replace(_) => {
                    if streamed {
                        let _ = writeln!(out, "\n[withdrawn: not supported by the evidence]");
                    }
                    streamed = false;
                    draft.clear();
                }
                AgentEvent::Step { .. } => {}
            }
        },
    )?;
    if json {
        return Ok(outcome);
    }
    let o = &outcome.state.output;
    if streamed {
        // The streamed draft may have lost sentences that failed the citation check, or a
        // note that only named the sources; markers moved onto the sentences they cite and
        // line breaks are not worth printing the answer twice; a marker the check added (to a
        // line copied whole from an item) is.
        if knowhub_agent::same_words(&draft, &o.final_answer)
            && knowhub_agent::same_citations(&draft, &o.final_answer)
        {
            println!();
        } else {
            println!("\n\n[checked answer]\n{}", o.final_answer);
        }
    } else {
        println!("{}", o.final_answer);
    }
    print_sources(&outcome.state);
    eprintln!(
        "\n{} · {} · {} ms · {} · session {} · trace {}",
        outcome.state.plan.route.as_str(),
        o.stop_reason.as_str(),
        outcome.total_ms,
        agent.llm_id().unwrap_or("extractive"),
        outcome.session_id.as_deref().unwrap_or("-"),
        outcome.trace_id
    );
    Ok(outcome)
}

fn print_sources(state: &knowhub_agent::AgentState) {
    let sources = &state.output.rendered_sources;
    if sources.is_empty() {
        return;
    }
    println!();
    for s in sources {
        let mut place = Vec::new();
        if let Some(p) = s.page {
            place.push(format!("p. {p}"));
        }
        if !s.heading.is_empty() {
            place.push(s.heading.join(" › "));
        }
        println!(
            "[{}] {}{}",
            s.number,
            s.title,
            if place.is_empty() {
                String::new()
            } else {
                format!(" ({})", place.join(", "))
            }
        );
    }
}

/// `knowhub chat` arguments.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// Continue a conversation (see `knowhub sessions`); default: a new one.
    #[arg(long)]
    pub session: Option<String>,
}

/// `knowhub chat` on this machine's copilot.
pub(crate) fn chat(
    engine: Arc<Engine>,
    ctx: &RequestContext,
    llm: &LlmArgs,
    args: &ChatArgs,
) -> Result<ExitCode> {
    let model = llm.load()?;
    let agent = Agent::new(Arc::clone(&engine), model, AgentOptions::default());
    let mut here = crate::chat::HereChat {
        engine: &engine,
        ctx,
        agent,
        last: None,
    };
    crate::chat::run(&mut here, args.session.clone())
}

/// `knowhub trace <id>`: one stored trace.
pub(crate) fn trace(
    engine: &Engine,
    ctx: &RequestContext,
    id: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let Some(id) = id else {
        for t in engine.traces(ctx, 20)? {
            crate::render::trace_line(&t.id, &t.route, &t.stop_reason, t.total_ms, &t.question);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let record = engine.trace(ctx, id)?;
    if json {
        println!("{}", record.state);
        return Ok(ExitCode::SUCCESS);
    }
    let state: knowhub_agent::AgentState =
        serde_json::from_str(&record.state).context("the stored trace is unreadable")?;
    println!("question: {}", record.question);
    println!(
        "answer:   {}",
        state.output.final_answer.replace('\n', "\n          ")
    );
    print_trace(&state);
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn print_trace(s: &knowhub_agent::AgentState) {
    println!("\n-- how this was answered (trace {})", s.trace_id);
    if let Some(summary) = &s.input.conversation_summary {
        println!(
            "earlier in the conversation: {}",
            summary.replace('\n', "\n                             ")
        );
    }
    if s.input.standalone_query != s.input.query {
        println!("follow-up rewritten: {}", s.input.standalone_query);
    }
    println!(
        "route: {} (by {}), stop reason: {}, permission snapshot: {}",
        s.plan.route.as_str(),
        s.plan.routed_by,
        s.output.stop_reason.as_str(),
        s.authz.perm_snapshot_id
    );
    for step in &s.trace_steps {
        println!(
            "  {} {:<17} {:<22} {:>6} ms  {}{}",
            step.step_id,
            step.node,
            step.action,
            step.timing_ms,
            step.status,
            step.err
                .as_ref()
                .map(|e| format!(" ({}: {})", e.kind, e.msg))
                .unwrap_or_default()
        );
        crate::render::read_for_meaning_lines(&step.out);
    }
    if let Some(sql) = &s.tools.sql
        && !sql.generated_sql.is_empty()
    {
        println!(
            "SQL ({} via {}): {}",
            sql.source, sql.generated_by, sql.generated_sql
        );
    }
    for e in &s.evidence_items {
        println!(
            "  evidence {} [{}] {}",
            e.evidence_id,
            e.authz.result,
            e.source.title.as_deref().unwrap_or("")
        );
    }
    if !s.draft.cut_sentences.is_empty() {
        println!(
            "cut (no valid citation): {}",
            s.draft.cut_sentences.join(" | ")
        );
    }
    if s.prompt_tokens + s.completion_tokens > 0 {
        println!(
            "LLM {}: {} prompt + {} generated tokens",
            s.llm.as_deref().unwrap_or("-"),
            s.prompt_tokens,
            s.completion_tokens
        );
    }
}

/// `knowhub sessions`: the caller's conversations.
pub(crate) fn sessions(engine: &Engine, ctx: &RequestContext, json: bool) -> Result<ExitCode> {
    let list = engine.sessions(ctx, 50)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        for s in &list {
            println!("{}  {}", s.id, s.title);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `knowhub sql` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum SqlCommand {
    /// Register a SQLite database the copilot may query (administrators).
    Add {
        name: String,
        path: PathBuf,
        /// Who may query it: scopes such as team:finance or public (comma-separated).
        #[arg(long, default_value = "")]
        scopes: String,
        /// Restrict every query to the caller's organisation in this column.
        #[arg(long)]
        tenant_column: Option<String>,
    },
    /// The sources you may query.
    List,
    /// Unregister a source (administrators).
    Remove { name: String },
}

pub(crate) fn sql(
    engine: &Engine,
    ctx: &RequestContext,
    cmd: SqlCommand,
    json: bool,
) -> Result<ExitCode> {
    match cmd {
        SqlCommand::Add {
            name,
            path,
            scopes,
            tenant_column,
        } => {
            let scopes: knowhub_engine::authz::ScopeSet = scopes
                .parse()
                .map_err(|e| anyhow::anyhow!("bad scopes: {e}"))?;
            let s = engine.add_sql_source(ctx, &name, &path, &scopes, tenant_column.as_deref())?;
            println!("registered {} ({})", s.name, s.path);
        }
        SqlCommand::List => {
            let data = engine.queryable_data(ctx)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&data)?);
            } else {
                for s in &data.sources {
                    crate::render::sql_source_line(
                        &s.name,
                        &s.path,
                        &s.scopes,
                        s.tenant_column.as_deref(),
                    );
                }
                for t in &data.tables {
                    crate::render::sheet_table_line(&t.sql_name, t.rows, &t.document_path);
                }
            }
        }
        SqlCommand::Remove { name } => {
            engine.remove_sql_source(ctx, &name)?;
            println!("removed {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
