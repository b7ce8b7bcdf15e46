//! `knowhub memory …`: what the copilot remembers about you (seeds 001, 003) — commit a
//! conversation, list, show and delete memories. Your memories are yours alone; with
//! `--group` a commit also files shared conclusions in a group space and `list` shows them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use knowhub_engine::{CommitMessage, GroupCommitOptions, MemoryNode};

use crate::{IdentityArgs, ModelArgs, open_session};

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Remember what you said about yourself in a conversation (`knowhub sessions` lists
    /// them), or in the given text with --text: preferences, habits, background, constraints.
    Commit {
        /// A conversation id.
        session: Option<String>,
        /// Statements to commit instead of a conversation (`USER: text` marks who said it
        /// in a group conversation).
        #[arg(long, conflicts_with = "session")]
        text: Vec<String>,
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

fn print_node(n: &MemoryNode) {
    println!("{}\n  {}\n  {}", n.uri, n.abstract_text, n.overview);
}

pub(crate) fn run(
    cmd: MemoryCommand,
    data_dir: Option<PathBuf>,
    identity: &IdentityArgs,
    as_json: bool,
) -> Result<ExitCode> {
    let s = open_session(data_dir, &ModelArgs::keyword_only(), identity)?;
    let (engine, ctx) = (&s.engine, &s.ctx);
    match cmd {
        MemoryCommand::Commit {
            session,
            text,
            group,
        } => {
            let report = match (session, group) {
                (Some(id), _) => engine.memory_commit_session(ctx, &id)?,
                (None, Some(group)) => {
                    let messages: Vec<CommitMessage> = text
                        .iter()
                        .map(|t| match t.split_once(": ") {
                            Some((who, said)) if !who.contains(' ') => CommitMessage {
                                content: said.to_owned(),
                                user_id: Some(who.to_owned()),
                            },
                            _ => CommitMessage {
                                content: t.clone(),
                                user_id: None,
                            },
                        })
                        .collect();
                    let options = GroupCommitOptions::new(&group);
                    engine.memory_commit_with(ctx, &messages, "cli", Some(&options))?
                }
                (None, None) if !text.is_empty() => engine.memory_commit(ctx, &text, "cli")?,
                (None, None) => anyhow::bail!("name a conversation, or give --text"),
            };
            if as_json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!(
                    "{} statement(s) found: {} new, {} confirmed, {} not kept",
                    report.candidates,
                    report.created.len(),
                    report.confirmed.len(),
                    report.skipped.len()
                );
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
