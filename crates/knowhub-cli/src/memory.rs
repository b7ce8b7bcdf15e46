//! `knowhub memory …`: what the copilot remembers about you (seeds 001, 003) — commit a
//! conversation, list, show and delete memories. Your memories are yours alone.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use knowhub_engine::MemoryNode;

use crate::{IdentityArgs, ModelArgs, open_session};

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Remember what you said about yourself in a conversation (`knowhub sessions` lists
    /// them), or in the given text with --text: preferences, habits, background, constraints.
    Commit {
        /// A conversation id.
        session: Option<String>,
        /// Statements to commit instead of a conversation.
        #[arg(long, conflicts_with = "session")]
        text: Vec<String>,
    },
    /// Your memories, most confident first.
    List,
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
        MemoryCommand::Commit { session, text } => {
            let report = match session {
                Some(id) => engine.memory_commit_session(ctx, &id)?,
                None if !text.is_empty() => engine.memory_commit(ctx, &text, "cli")?,
                None => anyhow::bail!("name a conversation, or give --text"),
            };
            if as_json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!(
                    "{} statement(s) about you: {} new, {} confirmed",
                    report.candidates,
                    report.created.len(),
                    report.confirmed.len()
                );
                for n in report.created.iter().chain(&report.confirmed) {
                    print_node(n);
                }
            }
        }
        MemoryCommand::List => {
            let nodes = engine.memories(ctx)?;
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
