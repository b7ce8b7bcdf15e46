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
            if json {
                let answer = client.ask(&request)?;
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
            let answer = ask_printing(&client, &request)?;
            if a.trace {
                print_trace(&client.trace(&answer.trace_id)?);
            }
        }
        Command::Chat(args) => {
            let mut chat = crate::chat::ServerChat {
                client: &client,
                user: client.me()?.user_id,
                last: None,
            };
            return crate::chat::run(&mut chat, args.session);
        }
        Command::Trace { id: None } => {
            let traces = client.traces(20)?;
            if json {
                let rows: Vec<_> = traces
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "trace_id": t.trace_id, "conversation_id": t.conversation_id,
                            "user_id": t.user_id, "question": t.question, "route": t.route,
                            "stop_reason": t.stop_reason, "total_ms": t.total_ms,
                            "created_at_ms": t.created_at_ms,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for t in &traces {
                    crate::render::trace_line(
                        &t.trace_id,
                        &t.route,
                        &t.stop_reason,
                        t.total_ms,
                        &t.question,
                    );
                }
            }
        }
        Command::Knowledge(cmd) => return crate::knowledge::remote(&client, cmd, json),
        Command::Resource(cmd) => return crate::resource::remote(&client, cmd, json),
        Command::Memory(cmd) => return crate::memory::remote(&client, cmd, json),
        Command::Sql(cmd) => return sql(&client, cmd, json),
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
            let trace = client.trace(&id)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&trace)?);
            } else {
                println!(
                    "question: {}",
                    trace["question"].as_str().unwrap_or_default()
                );
                println!(
                    "answer:   {}",
                    trace["answer"]
                        .as_str()
                        .unwrap_or_default()
                        .replace('\n', "\n          ")
                );
                print_trace(&trace);
            }
        }
        Command::Upload { paths, to } => return upload(&client, &paths, to.as_deref(), json),
        Command::Crawl(cmd) => return crate::crawl::remote(&client, cmd, json),
        Command::User(cmd) => return user(&client, cmd, json),
        Command::Acl(cmd) => return acl(&client, cmd, json),
        Command::Ingest { paths, force } => return ingest(&client, &paths, force, json),
        Command::Remove { paths } => {
            let removed = client.remove(&server_paths(&paths))?;
            if json {
                println!("{}", serde_json::json!({ "removed": removed }));
            } else {
                println!("removed {removed} document(s) (the files on the server stay)");
            }
        }
        Command::Watch(args) => return watch(&client, args, json),
        Command::Unwatch { folder } => {
            let path = server_path(&folder);
            client.unwatch(&path)?;
            println!("no longer watching {path} (its documents stay; `remove` removes them)");
        }
        Command::Jobs { command } => return jobs(&client, command, json),
        Command::Group(cmd) => return crate::group::remote(&client, cmd, json),
        Command::Show { document, text } => return show(&client, &document, text, json),
        Command::Audit { limit } => {
            let records = client.audit(limit, None)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&records)?);
            } else {
                for r in records.iter().rev() {
                    let field = |k: &str| match &r[k] {
                        serde_json::Value::String(s) => s.clone(),
                        serde_json::Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    crate::render::audit_line(
                        &field("id"),
                        &field("user"),
                        &field("role"),
                        &field("action"),
                        &field("outcome"),
                        &field("allowed"),
                        &field("filtered"),
                        &field("snapshot"),
                        &field("target"),
                    );
                }
            }
        }
        // What remains works on this machine's files, indexes and models by nature: run it on
        // the server's machine.
        _ => bail!(
            "this command works on a knowledge base's own files, indexes or models: run it on \
             the server's machine (knowhub --database …); with --server, knowhub runs search, \
             ask, chat, status, list, sessions, trace, show, upload, ingest, remove, watch, \
             unwatch, jobs, audit, knowledge, resource, memory, sql, group, crawl, user and acl"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// A path on the server as typed (never resolved against this computer's folders).
fn server_path(path: &std::path::Path) -> String {
    path.to_string_lossy().into_owned()
}

fn server_paths(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| server_path(p)).collect()
}

/// `knowhub --server … show <document id or its path on the server> [--text]`: a document
/// the key may read, with its passages (the "open source" of a citation) or its whole text.
fn show(client: &Client, document: &str, whole_text: bool, json: bool) -> Result<ExitCode> {
    let id = match document.parse::<i64>() {
        Ok(id) => id,
        Err(_) => client
            .documents(Some(document))?
            .into_iter()
            .find(|d| d.path == document)
            .map(|d| d.id)
            .with_context(|| {
                format!("{document}: no document you may read has this path on the server")
            })?,
    };
    let view = client.preview(id)?;
    let passage_text = |start: usize, end: usize| -> String {
        view.text
            .chars()
            .skip(start)
            .take(end.saturating_sub(start))
            .collect()
    };
    let d = &view.document;
    if json {
        let passages: Vec<_> = view
            .passages
            .iter()
            .map(|p| {
                serde_json::json!({
                    "chunk_id": p.chunk_id, "ordinal": p.ordinal,
                    "page_start": p.page_start, "page_end": p.page_end,
                    "heading_path": p.heading_path,
                    "text": passage_text(p.char_start, p.char_end),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "id": d.id, "path": d.path, "title": d.title, "kind": d.kind,
                "page_count": d.page_count, "passages": passages,
                "text": whole_text.then_some(&view.text),
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    crate::render::document_header(
        if d.title.is_empty() {
            &d.path
        } else {
            &d.title
        },
        d.id,
        d.kind.as_deref(),
        view.passages.len(),
        d.page_count,
        &d.path,
    );
    if whole_text {
        println!("\n{}", view.text);
        return Ok(ExitCode::SUCCESS);
    }
    for p in &view.passages {
        crate::render::passage_line(
            p.ordinal,
            p.page_start,
            p.page_end,
            &p.heading_path,
            &passage_text(p.char_start, p.char_end),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `knowhub --server … ingest <paths on the server>`: the server reads them now (or queues
/// them for the process holding its index).
fn ingest(client: &Client, paths: &[PathBuf], force: bool, json: bool) -> Result<ExitCode> {
    let report = client.ingest(&server_paths(paths), force)?;
    if json {
        let files: Vec<_> = report
            .files
            .iter()
            .map(|f| serde_json::json!({"path": f.path, "outcome": f.outcome, "reason": f.reason}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "status": report.status, "files": files,
                "files_not_listed": report.files_not_listed, "queued": report.queued,
            }))?
        );
    } else {
        for f in &report.files {
            match &f.reason {
                Some(why) => println!("{:<9} {} ({why})", f.outcome, f.path),
                None => println!("{:<9} {}", f.outcome, f.path),
            }
        }
        if report.files_not_listed > 0 {
            println!("… and {} more file(s)", report.files_not_listed);
        }
        match &report.totals {
            Some(t) => println!(
                "{} files: {} added, {} updated, {} unchanged, {} without text, {} failed, {} \
                 skipped ({} passages, {} ms on the server)",
                t.files,
                t.added,
                t.updated,
                t.unchanged,
                t.no_text,
                t.failed,
                t.skipped,
                t.chunks,
                t.elapsed_ms
            ),
            None => println!(
                "queued {} path(s): the server's ingestion worker reads them",
                report.queued
            ),
        }
    }
    let failed = report.totals.as_ref().is_some_and(|t| t.failed > 0);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `knowhub --server … watch [folders on the server] [--include …] [--list]`: adds the folders
/// to the server's watched folders (its queue worker keeps them in sync); without folders, or
/// with --list, lists them.
fn watch(client: &Client, args: crate::watch::WatchArgs, json: bool) -> Result<ExitCode> {
    if args.once {
        bail!("--once catches up on this machine; the server's worker keeps its folders in sync");
    }
    let rules = knowhub_client::FolderRules {
        include: args.include,
        exclude: args.exclude,
        max_file_bytes: args.max_size,
    };
    for folder in &args.folders {
        let w = client.watch(&server_path(folder), Some(&rules))?;
        if !json {
            println!("watching {} on the server", w.path);
        }
    }
    if args.list || args.folders.is_empty() || json {
        let watches = client.watches()?;
        if json {
            let rows: Vec<_> = watches
                .iter()
                .map(|w| {
                    serde_json::json!({
                        "path": w.path, "owner": w.owner, "documents": w.documents,
                        "include": w.rules.include, "exclude": w.rules.exclude,
                        "max_file_bytes": w.rules.max_file_bytes,
                    })
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&rows)?);
        } else {
            for w in &watches {
                println!(
                    "{:>6}  {}  ({})",
                    w.documents,
                    w.path,
                    w.owner.as_deref().unwrap_or("-")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `knowhub --server … jobs [list|pause|resume|cancel|retry]`: the server's ingestion queue.
fn jobs(
    client: &Client,
    command: Option<crate::watch::JobsCommand>,
    json: bool,
) -> Result<ExitCode> {
    use crate::watch::JobsCommand;
    match command.unwrap_or(JobsCommand::List {
        limit: 20,
        failed: false,
    }) {
        JobsCommand::List { limit, failed } => {
            let mut queue = client.queue(if failed { 1000 } else { limit })?;
            if failed {
                queue.jobs.retain(|j| j.state == "failed");
                queue.jobs.truncate(limit);
            }
            if json {
                let rows: Vec<_> = queue
                    .jobs
                    .iter()
                    .map(|j| {
                        serde_json::json!({
                            "id": j.id, "path": j.path, "owner": j.owner, "state": j.state,
                            "attempts": j.attempts, "outcome": j.outcome, "error": j.error,
                        })
                    })
                    .collect();
                let c = &queue.counts;
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "counts": {
                            "queued": c.queued, "running": c.running, "done": c.done,
                            "failed": c.failed, "cancelled": c.cancelled,
                            "waiting": c.waiting, "paused": c.paused,
                        },
                        "jobs": rows,
                    }))?
                );
                return Ok(ExitCode::SUCCESS);
            }
            let c = &queue.counts;
            crate::render::queue_counts(
                c.queued,
                c.waiting,
                c.running,
                c.done,
                c.failed,
                c.cancelled,
                c.paused,
                "knowhub --server … jobs resume",
            );
            for j in &queue.jobs {
                crate::render::job_line(
                    j.id,
                    &j.state,
                    &j.path,
                    j.error.as_deref(),
                    j.outcome.as_deref(),
                );
            }
        }
        JobsCommand::Pause => {
            client.set_queue_paused(true)?;
            println!("paused: the server still notices and queues files, but does not read them");
        }
        JobsCommand::Resume => {
            client.set_queue_paused(false)?;
            println!("resumed");
        }
        JobsCommand::Cancel { path } => {
            let n = client.cancel_jobs(path.as_deref().map(server_path).as_deref())?;
            println!("cancelled {n} job(s)");
        }
        JobsCommand::Retry { path } => {
            let n = client.retry_failed(path.as_deref().map(server_path).as_deref())?;
            println!("queued {n} failed job(s) again");
        }
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

/// Asks on the server, printing the answer as the server writes it when stdout is a
/// terminal, then the checked answer (when the check changed the words), its sources, and a
/// status line on stderr.
pub(crate) fn ask_printing(
    client: &Client,
    request: &AskRequest,
) -> Result<knowhub_client::Answer> {
    let live = std::io::stdout().is_terminal();
    let mut written = String::new();
    let answer = client.ask_streaming(request, |event| {
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
    Ok(answer)
}

/// How an answer was made, from the server's trace (`GET /api/v1/traces/{id}`).
pub(crate) fn print_trace(t: &serde_json::Value) {
    let text = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    let list = |k: &str| t[k].as_array().cloned().unwrap_or_default();
    println!("\n-- how this was answered (trace {})", text(t, "trace_id"));
    if let Some(summary) = t["conversation_summary"].as_str() {
        println!("earlier in the conversation: {summary}");
    }
    if text(t, "standalone_question") != text(t, "question") {
        println!("follow-up rewritten: {}", text(t, "standalone_question"));
    }
    println!(
        "route: {} (by {}), stop reason: {}, permission snapshot: {}",
        text(t, "route"),
        text(t, "routed_by"),
        text(t, "stop_reason"),
        text(t, "perm_snapshot_id")
    );
    for step in &list("steps") {
        let error = step["error"]
            .as_str()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        println!(
            "  {:<17} {:<22} {:>6} ms  {}{error}",
            text(step, "node"),
            text(step, "action"),
            step["timing_ms"],
            text(step, "status"),
        );
        crate::render::read_for_meaning_lines(&step["out"]);
    }
    let sql = &t["sql"];
    if !text(sql, "sql").is_empty() {
        println!(
            "SQL ({} via {}): {}",
            text(sql, "source"),
            text(sql, "generated_by"),
            text(sql, "sql")
        );
    }
    for e in &list("evidence") {
        println!(
            "  evidence {} [{}] {}",
            text(e, "evidence_id"),
            text(e, "authz"),
            text(e, "title")
        );
    }
    let cut: Vec<String> = list("cut_sentences")
        .iter()
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect();
    if !cut.is_empty() {
        println!("cut (no valid citation): {}", cut.join(" | "));
    }
    if t["prompt_tokens"].as_u64().unwrap_or(0) + t["completion_tokens"].as_u64().unwrap_or(0) > 0 {
        println!(
            "LLM {}: {} prompt + {} generated tokens",
            t["model"].as_str().unwrap_or("-"),
            t["prompt_tokens"],
            t["completion_tokens"]
        );
    }
}

/// `knowhub --server … sql add|list|remove`: the server's SQL data sources (a database by its
/// path on the server; administrators register and remove them).
fn sql(client: &Client, cmd: crate::ask::SqlCommand, json: bool) -> Result<ExitCode> {
    use crate::ask::SqlCommand;
    match cmd {
        SqlCommand::Add {
            name,
            path,
            scopes,
            tenant_column,
        } => {
            let scopes: Vec<String> = scopes
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let s = client.add_sql_source(
                &name,
                &server_path(&path),
                &scopes,
                tenant_column.as_deref(),
            )?;
            println!("registered {} ({})", s.name, s.path);
        }
        SqlCommand::List => {
            let data = client.sql_sources()?;
            if json {
                let sources: Vec<_> = data
                    .sources
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "name": s.name, "path": s.path, "scopes": s.scopes,
                            "tenant_column": s.tenant_column, "owner": s.owner,
                        })
                    })
                    .collect();
                let tables: Vec<_> = data
                    .tables
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "sql_name": t.sql_name, "sheet_name": t.sheet_name,
                            "document_id": t.document_id, "document_path": t.document_path,
                            "rows": t.rows, "columns": t.columns,
                        })
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({ "sources": sources, "tables": tables })
                    )?
                );
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
            client.remove_sql_source(&name)?;
            println!("removed {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
