//! `knowhub eval memory`: memory extraction on a labelled set of bilingual conversations
//! (shipped with the project: `crates/knowhub-cli/eval/memory_conversations.json`, or
//! `--set FILE` of the same shape) — the rules alone, then the rules plus the configured
//! language model. A memory is right when its kind is the labelled one (preference and habit
//! count as one: people say either) and its statement contains the labelled words.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use knowhub_agent::memory::LlmMemoryModel;
use knowhub_engine::{CommitMessage, CommitWith, Engine, MemoryModel, dev_context};
use serde::Deserialize;

use crate::ask::LlmArgs;

/// The labelled set shipped with the project.
const SHIPPED_SET: &str = include_str!("../eval/memory_conversations.json");

#[derive(Debug, Args)]
pub(crate) struct MemoryEvalArgs {
    /// A labelled set of the same shape as the shipped one (default: the shipped one).
    #[arg(long)]
    pub set: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
struct Labelled {
    id: String,
    messages: Vec<LabelledMessage>,
    expect: Vec<Expected>,
}

#[derive(Debug, Deserialize)]
struct LabelledMessage {
    role: String,
    content: String,
}

#[derive(Debug, Deserialize)]
struct Expected {
    kind: String,
    words: String,
}

#[derive(Debug, Default, serde::Serialize)]
struct Totals {
    extractor: String,
    extracted: usize,
    right: usize,
    expected: usize,
    found_expected: usize,
    refused_proposals: usize,
    seconds_per_conversation: f64,
    misses: Vec<String>,
}

fn same_kind(a: &str, b: &str) -> bool {
    let family = |k: &str| if k == "habit" { "preference" } else { k }.to_owned();
    family(a) == family(b)
}

fn matches(kind: &str, statement: &str, e: &Expected) -> bool {
    same_kind(kind, &e.kind) && statement.to_lowercase().contains(&e.words.to_lowercase())
}

fn run_set(set: &[Labelled], name: &str, model: Option<&dyn MemoryModel>) -> Result<Totals> {
    let mut t = Totals {
        extractor: name.to_owned(),
        ..Totals::default()
    };
    let started = Instant::now();
    for conversation in set {
        // A fresh knowledge base per conversation: nothing confirms across them.
        let dir = tempfile::tempdir()?;
        let engine = Engine::open(crate::engine_config(dir.path().join("data"))?)?;
        let ctx = dev_context();
        let messages: Vec<CommitMessage> = conversation
            .messages
            .iter()
            .map(|m| {
                if m.role.eq_ignore_ascii_case("assistant") {
                    CommitMessage::assistant(m.content.clone())
                } else {
                    CommitMessage::mine(m.content.clone())
                }
            })
            .collect();
        let with = CommitWith {
            model,
            ..CommitWith::default()
        };
        let report = engine.memory_commit_with(&ctx, &messages, &conversation.id, &with)?;
        t.refused_proposals += report
            .skipped
            .iter()
            .filter(|s| s.reason == "ungrounded" || s.reason == "unknown_kind")
            .count();
        t.expected += conversation.expect.len();
        for n in &report.created {
            t.extracted += 1;
            if conversation
                .expect
                .iter()
                .any(|e| matches(&n.kind, &n.content, e))
            {
                t.right += 1;
            } else {
                t.misses.push(format!(
                    "{}: not expected {} {:?}",
                    conversation.id, n.kind, n.content
                ));
            }
        }
        for e in &conversation.expect {
            if report
                .created
                .iter()
                .any(|n| matches(&n.kind, &n.content, e))
            {
                t.found_expected += 1;
            } else {
                t.misses.push(format!(
                    "{}: missed {} {:?}",
                    conversation.id, e.kind, e.words
                ));
            }
        }
    }
    t.seconds_per_conversation = started.elapsed().as_secs_f64() / set.len().max(1) as f64;
    Ok(t)
}

pub(crate) fn memory(args: &MemoryEvalArgs, llm: &LlmArgs, json: bool) -> Result<ExitCode> {
    let text = match &args.set {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?,
        None => SHIPPED_SET.to_owned(),
    };
    let set: Vec<Labelled> =
        serde_json::from_str(&text).context("the labelled set is not valid")?;
    let mut rows = vec![run_set(&set, "rules", None)?];
    if let Some(llm) = llm.load()? {
        let name = format!("rules + {}", llm.model_id());
        let model = LlmMemoryModel::new(llm);
        rows.push(run_set(&set, &name, Some(&model))?);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} conversations, {} labelled memories",
        set.len(),
        rows[0].expected
    );
    println!(
        "| extractor | extracted | right | precision | recall | model proposals refused | s/conversation |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {} | {:.1} |",
            r.extractor,
            r.extracted,
            r.right,
            r.right as f64 / r.extracted.max(1) as f64,
            r.found_expected as f64 / r.expected.max(1) as f64,
            r.refused_proposals,
            r.seconds_per_conversation
        );
    }
    for r in &rows {
        for m in &r.misses {
            println!("{}: {m}", r.extractor);
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_set_reads_and_the_rules_score_it() {
        let set: Vec<Labelled> = serde_json::from_str(SHIPPED_SET).unwrap();
        assert!(set.len() >= 10);
        let t = run_set(&set, "rules", None).unwrap();
        assert_eq!(
            t.expected,
            set.iter().map(|c| c.expect.len()).sum::<usize>()
        );
        // The rules only take explicit statements: whatever they keep here is right.
        assert_eq!(t.right, t.extracted, "{:#?}", t.misses);
    }
}
