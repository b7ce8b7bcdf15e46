//! `knowhub memory …`: what the copilot remembers about you (seeds 001, 003) — commit a
//! conversation, list, show and delete memories. Your memories are yours alone; with
//! `--group` a commit also files shared conclusions in a group space and `list` shows them.
//! A commit uses the answer model (`--llm`, default the local one when installed) to find
//! what the rules miss and strategies from completed tasks; `--llm off` keeps to the rules.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use knowhub_agent::memory::LlmMemoryModel;
use knowhub_engine::{CommitMessage, CommitWith, GroupCommitOptions, MemoryModel, MemoryNode};

use crate::ask::LlmArgs;
use crate::{IdentityArgs, ModelArgs, open_session};

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Remember what you said about yourself in a conversation (`knowhub sessions` lists
    /// them), or in the given text with --text: preferences, habits, background, constraints.
    Commit {
        /// A conversation id.
        session: Option<String>,
        /// Messages to commit instead of a conversation, in order (`USER: text` marks who
        /// said it in a group conversation, `assistant: text` the assistant's reply).
        #[arg(long, conflicts_with = "session")]
        text: Vec<String>,
        /// The project the conversation was about: its memories apply there only.
        #[arg(long)]
        project: Option<String>,
        /// A group conversation: shared conclusions ("We decided…", "我们决定…") go to this
        /// group's space, personal facts to their speaker (yours only).
        #[arg(long, requires = "text")]
        group: Option<String>,
    },
    /// Your memories (or a group's shared memories), most confident first.
    List {
        #[arg(long)]
        group: Option<String>,
    },
    /// One memory by its ctx:// URI or id (L0 abstract, L1 overview, L2 content).
    Show { uri: String },
    /// Forget a memory.
    Delete { uri: String },
}

/// One `--text` message: `assistant: …` is the assistant's; in a group, `USER: …` names the
/// speaker; anything else is the caller's own.
fn message(text: &str, group: bool) -> CommitMessage {
    match text.split_once(": ") {
        Some((who, said)) if who.eq_ignore_ascii_case("assistant") => {
            CommitMessage::assistant(said)
        }
        Some((who, said)) if group && !who.contains(' ') => CommitMessage {
            content: said.to_owned(),
            user_id: Some(who.to_owned()),
            role: None,
        },
        _ => CommitMessage::mine(text),
    }
}

fn print_node(n: &MemoryNode) {
    println!("{}\n  {}\n  {}", n.uri, n.abstract_text, n.overview);
}

pub(crate) fn run(
    cmd: MemoryCommand,
    place: crate::Place,
    identity: &IdentityArgs,
    llm: &LlmArgs,
    as_json: bool,
) -> Result<ExitCode> {
    let s = open_session(place, &ModelArgs::keyword_only(), identity)?;
    let (engine, ctx) = (&s.engine, &s.ctx);
    match cmd {
        MemoryCommand::Commit {
            session,
            text,
            group,
            project,
        } => {
            if session.is_none() && text.is_empty() {
                anyhow::bail!("name a conversation, or give --text");
            }
            let model = llm.load()?.map(LlmMemoryModel::new);
            let options = group.as_deref().map(GroupCommitOptions::new);
            let with = CommitWith {
                group: options.as_ref(),
                project: project.as_deref(),
                model: model.as_ref().map(|m| m as &dyn MemoryModel),
            };
            let report = match session {
                Some(id) => engine.memory_commit_session(ctx, &id, &with)?,
                None => {
                    let messages: Vec<CommitMessage> =
                        text.iter().map(|t| message(t, group.is_some())).collect();
                    engine.memory_commit_with(ctx, &messages, "cli", &with)?
                }
            };
            if as_json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!(
                    "{} statement(s) found: {} new, {} confirmed ({} merged), {} not kept",
                    report.candidates,
                    report.created.len(),
                    report.confirmed.len(),
                    report.merged.len(),
                    report.skipped.len()
                );
                if let Some(e) = &report.model_error {
                    eprintln!("note: the language model could not be used ({e}); rules only");
                }
                for n in report.created.iter().chain(&report.confirmed) {
                    print_node(n);
                }
                for c in &report.skipped {
                    println!("not kept ({}): {}", c.reason, c.statement);
                }
            }
        }
        MemoryCommand::List { group } => {
            let nodes = match group {
                Some(g) => engine.group_memories(ctx, &g)?,
                None => engine.memories(ctx)?,
            };
            if as_json {
                println!("{}", serde_json::to_string_pretty(&nodes)?);
            } else if nodes.is_empty() {
                println!("no memories yet");
            } else {
                for n in &nodes {
                    print_node(n);
                }
            }
        }
        MemoryCommand::Show { uri } => {
            let n = engine.memory_node(ctx, &uri)?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&n)?);
            } else {
                print_node(&n);
                println!("\n{}", n.content);
            }
        }
        MemoryCommand::Delete { uri } => {
            engine.memory_delete(ctx, &uri)?;
            println!("forgot {uri}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
