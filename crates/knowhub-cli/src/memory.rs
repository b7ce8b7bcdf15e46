//! `knowhub memory …`: what the copilot remembers about you (seeds 001, 003) — commit a
//! conversation, list, show and delete memories, here or (`--server`) on a team server. Your
//! memories are yours alone; with
//! `--group` a commit also files shared conclusions in a group space and `list` shows them.
//! A commit uses the answer model (`--llm`, default the local one when installed) to find
//! what the rules miss and strategies from completed tasks; `--llm off` keeps to the rules.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use knowhub_agent::memory::LlmMemoryModel;
use knowhub_client::{Client, MemoryCommitRequest, MemoryMessage};
use knowhub_engine::{CommitMessage, CommitWith, GroupCommitOptions, MemoryModel};
use serde_json::Value;

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

fn print_node(n: &Value) {
    let text = |k: &str| n[k].as_str().unwrap_or_default().to_owned();
    println!(
        "{}\n  {}\n  {}",
        text("uri"),
        text("abstract_text"),
        text("overview")
    );
}

/// What committing a conversation did (the engine's `MemoryCommit` as JSON, also the shape of
/// the server's answer to remembering a conversation).
fn print_commit(report: &Value) {
    let list = |k: &str| report[k].as_array().cloned().unwrap_or_default();
    println!(
        "{} statement(s) found: {} new, {} confirmed ({} merged), {} not kept",
        report["candidates"],
        list("created").len(),
        list("confirmed").len(),
        list("merged").len(),
        list("skipped").len()
    );
    if let Some(e) = report["model_error"].as_str() {
        eprintln!("note: the language model could not be used ({e}); rules only");
    }
    for n in list("created").iter().chain(&list("confirmed")) {
        print_node(n);
    }
    for c in &list("skipped") {
        println!(
            "not kept ({}): {}",
            c["reason"].as_str().unwrap_or_default(),
            c["statement"].as_str().unwrap_or_default()
        );
    }
}

fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
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
                print_json(&report)?;
            } else {
                print_commit(&serde_json::to_value(&report)?);
            }
        }
        MemoryCommand::List { group } => {
            let nodes = match group {
                Some(g) => engine.group_memories(ctx, &g)?,
                None => engine.memories(ctx)?,
            };
            list(&serde_json::to_value(nodes)?, as_json)?;
        }
        MemoryCommand::Show { uri } => {
            show(
                &serde_json::to_value(engine.memory_node(ctx, &uri)?)?,
                as_json,
            )?;
        }
        MemoryCommand::Delete { uri } => {
            engine.memory_delete(ctx, &uri)?;
            println!("forgot {uri}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn list(nodes: &Value, as_json: bool) -> Result<()> {
    let empty = Vec::new();
    let nodes = nodes.as_array().unwrap_or(&empty);
    if as_json {
        print_json(nodes)?;
    } else if nodes.is_empty() {
        println!("no memories yet");
    } else {
        for n in nodes {
            print_node(n);
        }
    }
    Ok(())
}

fn show(node: &Value, as_json: bool) -> Result<()> {
    if as_json {
        print_json(node)?;
    } else {
        print_node(node);
        println!("\n{}", node["content"].as_str().unwrap_or_default());
    }
    Ok(())
}

/// `knowhub --server … memory …`: the caller's memories on a team server, where the server's
/// language model (when it has one) helps commit them.
pub(crate) fn remote(client: &Client, cmd: MemoryCommand, as_json: bool) -> Result<ExitCode> {
    match cmd {
        MemoryCommand::Commit {
            session: Some(id),
            project,
            ..
        } => {
            let report = client.remember_conversation(&id, project.as_deref())?;
            if as_json {
                print_json(&report)?;
            } else {
                print_commit(&report);
            }
        }
        MemoryCommand::Commit {
            session: None,
            text,
            group,
            project,
        } => {
            if text.is_empty() {
                anyhow::bail!("name a conversation, or give --text");
            }
            let messages = text
                .iter()
                .map(|t| {
                    let m = message(t, group.is_some());
                    MemoryMessage {
                        role: m.role.unwrap_or_else(|| "user".into()),
                        content: m.content,
                        user_id: m.user_id,
                    }
                })
                .collect();
            let result = client.commit_memories(&MemoryCommitRequest {
                messages,
                project,
                group,
            })?;
            if as_json {
                print_json(&result)?;
            } else {
                let stats = &result["stats"];
                println!(
                    "{} statement(s) found: {} written, {} not kept",
                    stats["extracted"], stats["written"], stats["skipped"]
                );
                if let Some(e) = stats["model_error"].as_str() {
                    eprintln!(
                        "note: the server's language model could not be used ({e}); rules only"
                    );
                }
                for w in result["write_results"].as_array().into_iter().flatten() {
                    let text = |k: &str| w[k].as_str().unwrap_or_default().to_owned();
                    match text("action").as_str() {
                        "skipped" => {
                            println!("not kept ({}): {}", text("reason"), text("statement"))
                        }
                        action => println!("{action}: {}", text("uri")),
                    }
                }
            }
        }
        MemoryCommand::List { group } => {
            let folder = match group {
                Some(g) => format!(
                    "ctx://group/{}/memories",
                    client.group_space(&g)?.group_space
                ),
                None => format!("ctx://user/{}/memories", client.me()?.user_id),
            };
            list(&Value::Array(client.memories(&folder)?), as_json)?;
        }
        MemoryCommand::Show { uri } => show(&client.memory(&uri)?, as_json)?,
        MemoryCommand::Delete { uri } => {
            client.forget_memory(&uri)?;
            println!("forgot {uri}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
