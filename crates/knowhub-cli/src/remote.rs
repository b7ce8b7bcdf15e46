//! `knowhub --server https://… --api-key …`: commands run against a team server over its
//! HTTP API (`knowhub-client`), under the permissions the server grants that key. The server
//! decides what the key may read; nothing is read from this machine's knowledge base.

use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use knowhub_client::{AskEvent, AskRequest, Client, ClientOptions, SearchMode, SearchRequest};

use crate::Command;

/// Where the team server is.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServerArgs {
    /// Run the command on a team server (https://host, or http:// on this computer) with
    /// your --api-key, instead of on this machine's knowledge base.
    #[arg(long, global = true, env = "KNOWHUB_SERVER")]
    pub server: Option<String>,
    /// A PEM file with the certificate authority to trust for --server (a company CA).
    #[arg(long, global = true, env = "KNOWHUB_SERVER_CA")]
    pub server_ca: Option<PathBuf>,
}

/// Runs `command` on the server at `server`.
pub(crate) fn run(
    server: &str,
    args: &ServerArgs,
    api_key: Option<&str>,
    command: Command,
    json: bool,
) -> Result<ExitCode> {
    let key = api_key.context(
        "--server needs your API key: --api-key or KNOWHUB_API_KEY (an administrator gives it)",
    )?;
    let client = Client::new(
        server,
        key,
        ClientOptions {
            ca_file: args.server_ca.clone(),
            ..ClientOptions::default()
        },
    )?;
    match command {
        Command::Search {
            query,
            limit,
            per_document,
            mode,
            from,
            since,
            until,
            ..
        } => {
            let mode = match mode.as_str() {
                "hybrid" => SearchMode::Hybrid,
                "keyword" => SearchMode::Keyword,
                "semantic" => SearchMode::Semantic,
                other => bail!("unknown mode {other:?}: hybrid, keyword or semantic"),
            };
            let hits = client.search(&SearchRequest {
                limit: Some(limit),
                max_per_document: Some(per_document),
                mode,
                from,
                since,
                until,
                ..SearchRequest::new(query)
            })?;
            if json {
                let shown: Vec<_> = hits
                    .iter()
                    .map(|h| {
                        serde_json::json!({
                            "rank": h.rank, "evidence_id": h.evidence_id, "score": h.score,
                            "document_id": h.document_id, "chunk_id": h.chunk_id, "path": h.path,
                            "title": h.title, "page_start": h.page_start, "page_end": h.page_end,
                            "heading_path": h.heading_path, "snippet": h.snippet,
                            "authors": h.meta.authors, "recipients": h.meta.recipients,
                            "date": h.meta.date,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&shown)?);
            } else if hits.is_empty() {
                println!("no passages match");
            } else {
                for h in &hits {
                    let page = h
                        .page_start
                        .map(|p| format!(", p. {p}"))
                        .unwrap_or_default();
                    println!("{}. {} ({}{page})", h.rank, h.title, h.path);
                    let from = (!h.meta.authors.is_empty())
                        .then(|| format!("From {}", h.meta.authors.join(", ")));
                    let byline: Vec<String> = from.into_iter().chain(h.meta.date.clone()).collect();
                    if !byline.is_empty() {
                        println!("   {}", byline.join(" · "));
                    }
                    println!("   {}", h.snippet.replace('\n', " "));
                }
            }
        }
        Command::Ask(a) => {
            let request = AskRequest {
                session: a.session.clone(),
                project: a.project.clone(),
                ..AskRequest::new(a.question.clone())
            };
            let live = !json && std::io::stdout().is_terminal();
            let mut written = String::new();
            let answer = client.ask_streaming(&request, |event| {
                if live {
                    match event {
                        AskEvent::Token(t) => {
                            print!("{t}");
                            written.push_str(&t);
                            let _ = std::io::stdout().flush();
                        }
                        AskEvent::Replace(_) => written.clear(),
                        AskEvent::Step { .. } => {}
                    }
                }
                ControlFlow::Continue(())
            })?;
            if json {
                let sources: Vec<_> = answer
                    .sources
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "number": s.number, "evidence_id": s.evidence_id, "title": s.title,
                            "page": s.page, "heading": s.heading, "uri": s.uri,
                        })
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "answer": answer.answer, "sources": sources, "route": answer.route,
                        "stop_reason": answer.stop_reason, "written_by": answer.written_by,
                        "session_id": answer.session_id, "trace_id": answer.trace_id,
                    }))?
                );
                return Ok(ExitCode::SUCCESS);
            }
            // What was streamed is kept when it is the answer; else the checked answer.
            if written.trim() != answer.answer.trim() {
                if !written.is_empty() {
                    println!();
                }
                println!("{}", answer.answer);
            } else {
                println!();
            }
            if !answer.sources.is_empty() {
                println!();
                for s in &answer.sources {
                    let page = s.page.map(|p| format!(", p. {p}")).unwrap_or_default();
                    println!("[{}] {}{page}", s.number, s.title);
                }
            }
            eprintln!(
                "{} in {} ms on {}; conversation {} (continue with --session)",
                answer.stop_reason,
                answer.total_ms,
                client.server(),
                answer.session_id.as_deref().unwrap_or("-")
            );
        }
        Command::Status => {
            println!("{}", serde_json::to_string_pretty(&client.status()?)?);
        }
        Command::List { folder, folders } => {
            let under = folder.map(|f| f.display().to_string());
            if folders {
                let sources = client.sources(None)?;
                for f in &sources.folders {
                    println!("{:>6}  {}", f.documents, f.path);
                }
            } else {
                let docs = client.documents(under.as_deref())?;
                if json {
                    let shown: Vec<_> = docs
                        .iter()
                        .map(|d| {
                            serde_json::json!({
                                "id": d.id, "path": d.path, "title": d.title, "status": d.status,
                                "chunks": d.chunk_count, "size": d.size,
                            })
                        })
                        .collect();
                    println!("{}", serde_json::to_string_pretty(&shown)?);
                } else {
                    for d in &docs {
                        println!("{:>6}  {:<10}  {}", d.id, d.status, d.path);
                    }
                }
            }
        }
        Command::Sessions => {
            for c in client.conversations(50)? {
                println!("{}  {}", c.id, c.title);
            }
        }
        Command::Trace { id: Some(id) } => {
            println!("{}", serde_json::to_string_pretty(&client.trace(&id)?)?);
        }
        _ => bail!(
            "with --server, knowhub runs search, ask, status, list, sessions and trace <id> so \
             far; run other commands on the server's machine (knowhub --database …) or through \
             its HTTP API"
        ),
    }
    Ok(ExitCode::SUCCESS)
}
