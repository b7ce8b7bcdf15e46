//! `knowhub knowledge …`: knowledge items (seed 002) from the terminal — save, search, get,
//! update, batch, list, slim, delete — on this machine's knowledge base or, with `--server`, a
//! team server's. Thin: every rule (visibility, owner-only writes, ranking) is the engine's,
//! here or on the server; both print the same JSON.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use knowhub_agent::knowledge::LlmRewriter;
use knowhub_client::{Client, ItemFilter};
use knowhub_engine::{
    Engine, FeedbackCase, KnowledgeListOptions, KnowledgeQuery, KnowledgeSource, KnowledgeUpdate,
    NewKnowledge, RequestContext, Rewriter, SlimOptions,
};
use serde_json::Value;

use crate::{IdentityArgs, ModelArgs, ask::LlmArgs, open_session};

#[derive(Debug, Subcommand)]
pub(crate) enum KnowledgeCommand {
    /// Save a knowledge item you own (default scope: user:<you>).
    Save(SaveArgs),
    /// Find items: relevance candidates, ranked by quality (score + helpful − 2·harmful).
    Search {
        query: String,
        /// How many items (top_k).
        #[arg(long, short = 'n', default_value_t = 5)]
        limit: usize,
        /// Drop items scored below this.
        #[arg(long, default_value_t = 3)]
        min_score: u8,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Show one item (with --versions: its previous versions).
    Get {
        id: String,
        #[arg(long)]
        versions: bool,
    },
    /// Feedback or changes to an item you own.
    Update(UpdateArgs),
    /// Apply a JSON list of updates, each on its own: `[{"knowledge_id": "...", "is_helpful":
    /// true, "case": {...}}]` (seed 002) or `[{"id": "...", "update": {...}}]`; `-` reads stdin.
    Batch { file: PathBuf },
    /// Items you may see, newest first.
    List {
        #[arg(long, short = 'n', default_value_t = 10)]
        limit: usize,
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Only items of this owner.
        #[arg(long)]
        owner: Option<String>,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Merge near-duplicate items you may change (with --dry-run: only show the groups).
    Slim {
        /// Similarity threshold (default 0.92 with an embedder, 0.5 lexical without).
        #[arg(long)]
        threshold: Option<f64>,
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete an item you own.
    Delete { id: String },
}

#[derive(Debug, Args)]
pub(crate) struct FilterArgs {
    /// Knowledge type (repeat or comma-separate): user_profile, strategy, tool, usecase,
    /// definition, plan.
    #[arg(long = "type", value_delimiter = ',')]
    types: Vec<String>,
    /// Only items carrying this scope (repeatable).
    #[arg(long = "scope", value_delimiter = ',')]
    scopes: Vec<String>,
    /// key=value (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct SaveArgs {
    /// The content; `-` reads stdin.
    content: String,
    #[arg(long, default_value = "")]
    task: String,
    #[arg(long = "type", value_delimiter = ',', required = true)]
    types: Vec<String>,
    /// Who may read it (repeatable): user:<id>, agent:<id>, project:<id>, team:<id>, org:<id>,
    /// public.
    #[arg(long = "scope", value_delimiter = ',')]
    scopes: Vec<String>,
    /// key=value (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// 1–5.
    #[arg(long)]
    score: Option<u8>,
    #[arg(long)]
    confidence: Option<f64>,
    #[arg(long, default_value = "")]
    message_id: String,
    #[arg(long = "resource")]
    resource_ids: Vec<String>,
    #[arg(long, default_value = "")]
    source_name: String,
    #[arg(long, default_value = "exp")]
    source_category: String,
    #[arg(long = "url")]
    urls: Vec<String>,
    #[arg(long, default_value = "")]
    submitted_by: String,
}

#[derive(Debug, Args)]
pub(crate) struct UpdateArgs {
    id: String,
    /// Record a helpful case with this task description.
    #[arg(long)]
    helpful: Option<String>,
    /// Record a harmful case with this task description.
    #[arg(long)]
    harmful: Option<String>,
    /// The case's outcome.
    #[arg(long, default_value = "")]
    outcome: String,
    /// Why it was harmful.
    #[arg(long, default_value = "")]
    reason: String,
    #[arg(long)]
    score: Option<u8>,
    #[arg(long)]
    confidence: Option<f64>,
    #[arg(long)]
    task: Option<String>,
    #[arg(long)]
    content: Option<String>,
    #[arg(long = "type", value_delimiter = ',')]
    types: Vec<String>,
    /// New scopes (replace the old ones).
    #[arg(long = "scope", value_delimiter = ',')]
    scopes: Vec<String>,
    /// New tags (replace the old ones), key=value.
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Rewrite the content with the language model (--llm) from this feedback.
    #[arg(long)]
    evolve: Option<String>,
}

fn tags(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => bail!("a tag is key=value, not {p:?}"),
        })
        .collect()
}

fn read_text(arg: &str) -> Result<String> {
    if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read stdin")?;
        Ok(s)
    } else {
        Ok(arg.to_owned())
    }
}

/// The language model as a rewriter, when one is configured (`--llm off`: none).
fn rewriter(llm: &LlmArgs) -> Result<Option<LlmRewriter>> {
    Ok(llm.load()?.map(LlmRewriter::new))
}

fn print_item(item: &Value) {
    let text = |k: &str| item[k].as_str().unwrap_or_default().to_owned();
    let list = |k: &str| {
        item[k]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    };
    let eval = &item["eval"];
    println!("{}", text("id"));
    println!(
        "  types: {}   scopes: {}   owner: {}",
        list("types"),
        list("scopes"),
        text("owner")
    );
    println!(
        "  score {}  helpful {}  harmful {}  confidence {:.2}",
        eval["score"],
        eval["helpful"],
        eval["harmful"],
        eval["confidence"].as_f64().unwrap_or_default()
    );
    if !text("task").is_empty() {
        println!("  task: {}", text("task"));
    }
    if let Some(tags) = item["tags"].as_object().filter(|t| !t.is_empty()) {
        let t: Vec<String> = tags
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect();
        println!("  tags: {}", t.join(" "));
    }
    for line in text("content").lines() {
        println!("  | {line}");
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// One entry of a batch file, in either accepted form.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum BatchEntry {
    Seed {
        knowledge_id: String,
        is_helpful: bool,
        #[serde(default)]
        case: FeedbackCase,
    },
    Full {
        id: String,
        update: KnowledgeUpdate,
    },
}

/// Where the items are: this machine's knowledge base (as the signed-in caller; the local
/// language model rewrites) or a team server (under the key's permissions; its model rewrites).
enum Items<'a> {
    Here {
        engine: &'a Engine,
        ctx: &'a RequestContext,
        llm: &'a LlmArgs,
    },
    Server(&'a Client),
}

fn value(v: impl serde::Serialize) -> Result<Value> {
    Ok(serde_json::to_value(v)?)
}

fn values<T: serde::Serialize>(list: Vec<T>) -> Result<Vec<Value>> {
    list.into_iter().map(value).collect()
}

impl Items<'_> {
    fn save(&self, new: NewKnowledge) -> Result<Value> {
        match self {
            Items::Here { engine, ctx, .. } => value(engine.knowledge_save(ctx, new)?),
            Items::Server(c) => Ok(c.knowledge_save(&new)?),
        }
    }

    fn search(&self, query: &str, q: &KnowledgeQuery) -> Result<Vec<Value>> {
        match self {
            Items::Here { engine, ctx, .. } => values(engine.knowledge_search(ctx, query, q)?),
            Items::Server(c) => {
                let filter = ItemFilter {
                    types: q.types.clone(),
                    scopes: q.scopes.clone(),
                    tags: q.tags.clone(),
                    owner: None,
                };
                Ok(c.knowledge_search(query, q.limit, q.min_score, &filter)?)
            }
        }
    }

    fn get(&self, id: &str) -> Result<Value> {
        match self {
            Items::Here { engine, ctx, .. } => value(engine.knowledge_get(ctx, id)?),
            Items::Server(c) => Ok(c.knowledge_item(id)?),
        }
    }

    fn versions(&self, id: &str) -> Result<Vec<Value>> {
        match self {
            Items::Here { engine, ctx, .. } => values(engine.knowledge_versions(ctx, id)?),
            Items::Server(c) => Ok(c.knowledge_versions(id)?),
        }
    }

    fn update(&self, id: &str, update: &KnowledgeUpdate) -> Result<Value> {
        match self {
            Items::Here { engine, ctx, llm } => {
                let model = if update.evolve_feedback.is_some() {
                    rewriter(llm)?
                } else {
                    None
                };
                let rewriter = model.as_ref().map(|m| m as &dyn Rewriter);
                value(engine.knowledge_update(ctx, id, update, rewriter)?)
            }
            Items::Server(c) => Ok(c.knowledge_update(id, update)?),
        }
    }

    fn batch(&self, updates: &[(String, KnowledgeUpdate)]) -> Result<Vec<Value>> {
        match self {
            Items::Here { engine, ctx, llm } => {
                let model = if updates.iter().any(|(_, u)| u.evolve_feedback.is_some()) {
                    rewriter(llm)?
                } else {
                    None
                };
                let rewriter = model.as_ref().map(|m| m as &dyn Rewriter);
                values(engine.knowledge_batch_update(ctx, updates, rewriter)?)
            }
            Items::Server(c) => Ok(c.knowledge_batch_update(updates)?),
        }
    }

    fn list(&self, options: &KnowledgeListOptions) -> Result<Vec<Value>> {
        match self {
            Items::Here { engine, ctx, .. } => values(engine.knowledge_list(ctx, options)?),
            Items::Server(c) => {
                let filter = ItemFilter {
                    types: options.types.clone(),
                    scopes: options.scopes.clone(),
                    tags: options.tags.clone(),
                    owner: options.owner.clone(),
                };
                Ok(c.knowledge_list(&filter, options.limit, options.offset)?)
            }
        }
    }

    fn slim(&self, options: &SlimOptions) -> Result<Value> {
        match self {
            Items::Here { engine, ctx, llm } => {
                let model = if options.dry_run {
                    None
                } else {
                    rewriter(llm)?
                };
                let rewriter = model.as_ref().map(|m| m as &dyn Rewriter);
                value(engine.knowledge_slim(ctx, options, rewriter)?)
            }
            Items::Server(c) => Ok(c.knowledge_slim(options.threshold, options.dry_run)?),
        }
    }

    fn delete(&self, id: &str) -> Result<()> {
        match self {
            Items::Here { engine, ctx, .. } => Ok(engine.knowledge_delete(ctx, id)?),
            Items::Server(c) => Ok(c.knowledge_delete(id)?),
        }
    }
}

/// `knowhub knowledge …` on this machine's knowledge base.
pub(crate) fn run(
    cmd: KnowledgeCommand,
    place: crate::Place,
    models: &ModelArgs,
    identity: &IdentityArgs,
    llm: &LlmArgs,
    as_json: bool,
) -> Result<ExitCode> {
    // Only search and slim compare meanings; everything else opens without models.
    let wants_models = matches!(
        cmd,
        KnowledgeCommand::Search { .. } | KnowledgeCommand::Slim { .. }
    );
    let keyword = ModelArgs::keyword_only();
    let s = open_session(
        place,
        if wants_models { models } else { &keyword },
        identity,
    )?;
    let items = Items::Here {
        engine: &s.engine,
        ctx: &s.ctx,
        llm,
    };
    execute(cmd, &items, as_json)
}

/// `knowhub --server … knowledge …`: the same commands on a team server.
pub(crate) fn remote(client: &Client, cmd: KnowledgeCommand, as_json: bool) -> Result<ExitCode> {
    execute(cmd, &Items::Server(client), as_json)
}

fn execute(cmd: KnowledgeCommand, items: &Items<'_>, as_json: bool) -> Result<ExitCode> {
    match cmd {
        KnowledgeCommand::Save(a) => {
            let item = items.save(NewKnowledge {
                task: a.task,
                content: read_text(&a.content)?,
                types: a.types,
                tags: tags(&a.tags)?,
                scopes: a.scopes,
                message_id: a.message_id,
                resource_ids: a.resource_ids,
                source: KnowledgeSource {
                    name: a.source_name,
                    category: a.source_category,
                    urls: a.urls,
                    submitted_by: a.submitted_by,
                    ..Default::default()
                },
                score: a.score,
                confidence: a.confidence,
            })?;
            if as_json {
                json(&item)?;
            } else {
                println!("saved {}", item["id"].as_str().unwrap_or_default());
            }
        }
        KnowledgeCommand::Search {
            query,
            limit,
            min_score,
            filter,
        } => {
            let hits = items.search(
                &query,
                &KnowledgeQuery {
                    types: filter.types,
                    tags: tags(&filter.tags)?,
                    scopes: filter.scopes,
                    limit,
                    min_score,
                },
            )?;
            if as_json {
                json(&serde_json::json!({ "results": hits, "count": hits.len() }))?;
            } else {
                for h in &hits {
                    println!(
                        "[quality {:.1}]",
                        h["quality_score"].as_f64().unwrap_or_default()
                    );
                    print_item(h);
                }
                eprintln!("{} item(s)", hits.len());
            }
        }
        KnowledgeCommand::Get { id, versions } => {
            let item = items.get(&id)?;
            let history = if versions {
                items.versions(&id)?
            } else {
                Vec::new()
            };
            if as_json {
                if versions {
                    json(&serde_json::json!({ "item": item, "versions": history }))?;
                } else {
                    json(&item)?;
                }
            } else {
                print_item(&item);
                for v in &history {
                    println!(
                        "  -- previous ({}) --",
                        v["reason"].as_str().unwrap_or_default()
                    );
                    for line in v["content"].as_str().unwrap_or_default().lines() {
                        println!("  | {line}");
                    }
                }
            }
        }
        KnowledgeCommand::Update(a) => {
            let case = |task: String| FeedbackCase {
                task,
                outcome: a.outcome.clone(),
                reason: a.reason.clone(),
                ..Default::default()
            };
            let update = KnowledgeUpdate {
                add_helpful_case: a.helpful.clone().map(case),
                add_harmful_case: a.harmful.clone().map(case),
                update_score: a.score,
                confidence: a.confidence,
                task: a.task,
                content: a.content.as_deref().map(read_text).transpose()?,
                types: (!a.types.is_empty()).then_some(a.types),
                tags: if a.tags.is_empty() {
                    None
                } else {
                    Some(tags(&a.tags)?)
                },
                scopes: (!a.scopes.is_empty()).then_some(a.scopes),
                resource_ids: None,
                evolve_feedback: a.evolve,
            };
            let item = items.update(&a.id, &update)?;
            if as_json {
                json(&item)?;
            } else {
                print_item(&item);
            }
        }
        KnowledgeCommand::Batch { file } => {
            let text = if file.as_os_str() == "-" {
                read_text("-")?
            } else {
                std::fs::read_to_string(&file)
                    .with_context(|| format!("cannot read {}", file.display()))?
            };
            let value: Value = serde_json::from_str(&text).context("not JSON")?;
            // Seed 002 wraps the list as {"feedback_list": [...]}; a bare list works too.
            let list = value.get("feedback_list").cloned().unwrap_or(value);
            let entries: Vec<BatchEntry> =
                serde_json::from_value(list).context("not a list of updates")?;
            let updates: Vec<(String, KnowledgeUpdate)> = entries
                .into_iter()
                .map(|e| match e {
                    BatchEntry::Seed {
                        knowledge_id,
                        is_helpful,
                        case,
                    } => {
                        let mut u = KnowledgeUpdate::default();
                        if is_helpful {
                            u.add_helpful_case = Some(case);
                        } else {
                            u.add_harmful_case = Some(case);
                        }
                        (knowledge_id, u)
                    }
                    BatchEntry::Full { id, update } => (id, update),
                })
                .collect();
            let outcomes = items.batch(&updates)?;
            let failed = outcomes
                .iter()
                .filter(|o| o["ok"] != Value::Bool(true))
                .count();
            if as_json {
                json(&outcomes)?;
            } else {
                for o in &outcomes {
                    let id = o["id"].as_str().unwrap_or_default();
                    match o["error"].as_str() {
                        None => println!("ok      {id}"),
                        Some(e) => println!("failed  {id}: {e}"),
                    }
                }
            }
            if failed > 0 {
                return Ok(ExitCode::from(2));
            }
        }
        KnowledgeCommand::List {
            limit,
            offset,
            owner,
            filter,
        } => {
            let found = items.list(&KnowledgeListOptions {
                types: filter.types,
                scopes: filter.scopes,
                tags: tags(&filter.tags)?,
                owner,
                limit,
                offset,
            })?;
            if as_json {
                json(&found)?;
            } else {
                for item in &found {
                    print_item(item);
                }
                eprintln!("{} item(s)", found.len());
            }
        }
        KnowledgeCommand::Slim { threshold, dry_run } => {
            let plan = items.slim(&SlimOptions { threshold, dry_run })?;
            if as_json {
                json(&plan)?;
            } else {
                let groups = plan["groups"].as_array().cloned().unwrap_or_default();
                println!(
                    "{} group(s) among {} item(s) ({} similarity >= {})",
                    groups.len(),
                    plan["items_considered"],
                    plan["method"].as_str().unwrap_or_default(),
                    plan["threshold"]
                );
                for g in &groups {
                    let how = g["merged_by"].as_str().unwrap_or("planned");
                    let merged: Vec<&str> = g["merge"]
                        .as_array()
                        .map(|m| m.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    println!(
                        "  keep {} <- {} [{how}]",
                        g["keep"].as_str().unwrap_or_default(),
                        merged.join(", ")
                    );
                    if let Some(note) = g["note"].as_str() {
                        println!("    note: {note}");
                    }
                }
            }
        }
        KnowledgeCommand::Delete { id } => {
            items.delete(&id)?;
            if as_json {
                json(&serde_json::json!({ "deleted": id }))?;
            } else {
                println!("deleted {id}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
