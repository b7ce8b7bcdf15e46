//! `knowhub --server https://… --api-key …`: commands run against a team server over its
//! HTTP API (`knowhub-client`), under the permissions the server grants that key. The server
//! decides what the key may read; nothing is read from this machine's knowledge base.

use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use knowhub_client::{
    AskEvent, AskRequest, Client, ClientOptions, SearchMode, SearchRequest, UploadFile, UserKey,
};

use crate::Command;
use crate::access::{AclCommand, UserCommand};

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
        Command::Upload { paths, to } => return upload(&client, &paths, to.as_deref(), json),
        Command::Crawl(cmd) => return crate::crawl::remote(&client, cmd, json),
        Command::User(cmd) => return user(&client, cmd, json),
        Command::Acl(cmd) => return acl(&client, cmd, json),
        _ => bail!(
            "with --server, knowhub runs search, ask, status, list, sessions, trace <id>, \
             upload, crawl, user and acl so far; run other commands on the server's machine \
             (knowhub --database …) or through its HTTP API"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `knowhub --server … user …`: the caller's account's users (administrators).
fn user(client: &Client, cmd: UserCommand, json: bool) -> Result<ExitCode> {
    let account = client.me()?.account_id;
    let print_key = |key: &UserKey, what: &str| {
        if json {
            println!(
                "{}",
                serde_json::json!({"user": key.user_id, "api_key": key.user_key})
            );
        } else {
            println!("{what}");
            println!("API key (shown once): {}", key.user_key);
        }
    };
    match cmd {
        UserCommand::Add { id, role, name } => {
            let key = client.add_user(&account, &id, &role.to_lowercase(), name.as_deref())?;
            print_key(&key, &format!("added {id} ({})", role.to_uppercase()));
        }
        UserCommand::List => {
            let users = client.users(&account)?;
            if json {
                let rows: Vec<_> = users
                    .iter()
                    .map(|u| serde_json::json!({"id": u.user_id, "name": u.display_name, "role": u.role}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for u in &users {
                    println!("{:<20} {:<6} {}", u.user_id, u.role, u.display_name);
                }
                println!("{} user(s)", users.len());
            }
        }
        UserCommand::Remove { id } => {
            client.remove_user(&account, &id)?;
            println!("removed {id}; their API keys no longer work");
        }
        UserCommand::SetRole { id, role } => {
            client.set_role(&account, &id, &role.to_lowercase())?;
            println!("{id} is now {}", role.to_uppercase());
        }
        UserCommand::RotateKey { id } => {
            let key = client.rotate_key(&account, &id)?;
            print_key(
                &key,
                &format!("new API key for {id} (the old ones stopped working)"),
            );
        }
        UserCommand::Join { id, group } => {
            client.join_group(&account, &id, &group)?;
            println!("{id} joined {group}");
        }
        UserCommand::Leave { id, group } => {
            client.leave_group(&account, &id, &group)?;
            println!("{id} left {group}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `knowhub --server … acl …`: folders and documents by their paths on the server.
fn acl(client: &Client, cmd: AclCommand, json: bool) -> Result<ExitCode> {
    let on_server = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let changed = match cmd {
        AclCommand::Set { folder, scopes }
        | AclCommand::SetDocument {
            file: folder,
            scopes,
        } => client.set_acl(&on_server(&folder), Some(&scopes))?,
        AclCommand::Clear { folder } | AclCommand::ClearDocument { file: folder } => {
            client.set_acl(&on_server(&folder), None)?
        }
        // The server answers "who can see this" for a folder: each user's readable documents.
        AclCommand::Show { folder } => {
            let readers = client.readers(&on_server(&folder))?;
            if json {
                let rows: Vec<_> = readers
                    .readers
                    .iter()
                    .map(|r| serde_json::json!({"user": r.user_id, "role": r.role, "readable": r.readable}))
                    .collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "path": readers.path, "documents": readers.documents, "readers": rows,
                    }))?
                );
            } else {
                println!("{}: {} document(s)", readers.path, readers.documents);
                for r in &readers.readers {
                    println!(
                        "  {:<20} {:<6} reads {} of {}",
                        r.user_id, r.role, r.readable, readers.documents
                    );
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "path": changed.path, "kind": changed.kind, "explicit": changed.explicit,
                "effective": changed.effective, "inherited_from": changed.inherited_from,
            }))?
        );
    } else {
        let origin = match (&changed.explicit, &changed.inherited_from) {
            (Some(_), _) => format!("set on this {}", changed.kind),
            (None, Some(from)) if !from.is_empty() => format!("inherited from {from}/"),
            (None, _) => "inherited".to_owned(),
        };
        println!("{}: {} ({origin})", changed.path, changed.effective);
    }
    Ok(ExitCode::SUCCESS)
}

/// `knowhub --server … upload <files or folders> [--to COLLECTION]`: sends the files (a
/// folder's files, hidden ones left out; the server keeps file names, not folders) into the
/// caller's uploads on the server, where the server reads them.
fn upload(client: &Client, paths: &[PathBuf], to: Option<&str>, json: bool) -> Result<ExitCode> {
    let batches = UploadFile::batches(UploadFile::expand(paths)?)?;
    let mut sent = Vec::new();
    for batch in &batches {
        sent.extend(client.upload(batch, to)?.files);
    }
    let failed = sent.iter().filter(|f| f.outcome == "failed").count();
    if json {
        let rows: Vec<_> = sent
            .iter()
            .map(|f| {
                serde_json::json!({
                    "name": f.name, "path": f.path, "outcome": f.outcome,
                    "document_id": f.document_id, "error": f.error,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        for f in &sent {
            match &f.error {
                Some(why) => println!("{:<9} {} ({why})", f.outcome, f.path),
                None => println!("{:<9} {}", f.outcome, f.path),
            }
        }
        println!(
            "sent {} file(s) to {}, {failed} failed",
            sent.len(),
            client.server()
        );
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
