//! Ingestion: discover files, skip unchanged ones, parse in the sandbox, chunk, store, index.
//!
//! Three stages run concurrently: a reader thread (stat, read, hash, skip unchanged), parser
//! threads (sandboxed parse + chunking: the CPU-heavy part), and the calling thread, which alone
//! writes the store and the index and reports progress. Per-file problems never abort the run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, bounded};
use knowhub_chunk::chunk_document;
use knowhub_parse::{DocKind, ParseNotice, ParsedDocument, detect};
use knowhub_store::{
    DocumentId, DocumentStatus, FailedDocument, FolderId, JournalEntry, MovedDocument, NewChunk,
    NewDocument, SourceId,
};
use serde::Serialize;

use crate::rules::{RuleMatcher, SourceRules};
use crate::sandbox::{Parser, SandboxError};
use crate::{Access, Engine, EngineError, RequestContext, Result};
use knowhub_authz::UserId;

/// Options for [`Engine::ingest`].
#[derive(Debug, Clone, Default)]
pub struct IngestOptions {
    /// Re-parse files even when their content hash is unchanged.
    pub force: bool,
    /// Bring what is stored for each input in line with the disk (the watcher's mode): an
    /// input that no longer exists removes what is stored at or under it, and files the
    /// folder's rules leave out (or of no supported type) are skipped rather than failed.
    pub sync: bool,
    /// Files modified less than this long ago are left for later ([`FileOutcome::Busy`]):
    /// they may still be being written.
    pub settle: Option<Duration>,
    /// Set to stop reading further files; files already read finish normally.
    pub cancel: Option<Arc<AtomicBool>>,
}

/// Progress events, in order: one `Planned`, then one `File` per file, then `Committed`s.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum IngestEvent {
    Planned {
        files: usize,
        bytes: u64,
    },
    File {
        path: String,
        outcome: FileOutcome,
        bytes: u64,
    },
    Committed {
        documents: usize,
    },
    Reindexed {
        done: usize,
    },
    /// Chunks embedded so far for semantic search (after the files are stored and indexed).
    Embedded {
        done: usize,
        total: usize,
    },
    /// OCR of a file's scanned pages (or pictures): `done` of `pages` read so far. Comes
    /// before the file's `File` event; a long scan sends one every few pages.
    Reading {
        path: String,
        done: u32,
        pages: u32,
    },
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum FileOutcome {
    Added {
        chunks: usize,
    },
    Updated {
        chunks: usize,
    },
    Unchanged,
    /// Stored, but with no searchable text (empty, or scanned pages without a text layer).
    NoText {
        reason: String,
    },
    Failed {
        code: String,
        reason: String,
    },
    /// Not a format KnowHub reads.
    Skipped {
        reason: String,
    },
    /// Stored before, but the file is gone from an ingested folder.
    Removed,
    /// The same content appeared under a new path: the document kept its id, chunks,
    /// vectors and history.
    Moved {
        from: String,
    },
    /// Not read now: the file is still changing (or changed while it was read). Try again.
    Busy {
        reason: String,
    },
}

impl FileOutcome {
    /// A short word for logs and job records.
    pub fn label(&self) -> &'static str {
        match self {
            FileOutcome::Added { .. } => "added",
            FileOutcome::Updated { .. } => "updated",
            FileOutcome::Unchanged => "unchanged",
            FileOutcome::NoText { .. } => "no_text",
            FileOutcome::Failed { .. } => "failed",
            FileOutcome::Skipped { .. } => "skipped",
            FileOutcome::Removed => "removed",
            FileOutcome::Moved { .. } => "moved",
            FileOutcome::Busy { .. } => "busy",
        }
    }

    /// Why a file failed, has no text, was skipped or must wait (`None` otherwise).
    pub fn reason(&self) -> Option<&str> {
        match self {
            FileOutcome::Failed { reason, .. }
            | FileOutcome::NoText { reason }
            | FileOutcome::Skipped { reason }
            | FileOutcome::Busy { reason } => Some(reason),
            _ => None,
        }
    }
}

/// Totals of one ingest run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestReport {
    pub run_id: String,
    pub files: usize,
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub no_text: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Documents whose files disappeared from an ingested folder.
    pub removed: usize,
    /// Documents whose file moved (same content, new path).
    pub moved: usize,
    /// Files left for later because they were still changing.
    pub busy: usize,
    pub chunks: usize,
    pub bytes: u64,
    pub elapsed_ms: u64,
    /// Chunks embedded for semantic search by this run.
    pub embedded: usize,
    /// (path, reason) of every failed file.
    pub failures: Vec<(String, String)>,
}

/// Totals of a remove.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RemoveReport {
    pub documents: usize,
}

/// A file to consider, with where it belongs.
#[derive(Debug, Clone)]
struct Planned {
    path: PathBuf,
    source: SourceId,
    folder: Option<FolderId>,
    size: u64,
    mtime_ns: Option<i64>,
    explicit: bool,
    /// The size limit for this file (the engine's, or its folder's if smaller).
    max_bytes: u64,
}

/// Reader → parser.
struct ParseJob {
    plan: Planned,
    kind: DocKind,
    bytes: Arc<Vec<u8>>,
    hash: String,
    existed: bool,
}

/// Anything → writer: work to store, or progress to pass on.
enum ToWriter {
    Work(Work),
    /// Progress of a file's OCR.
    Reading {
        path: String,
        done: u32,
        pages: u32,
    },
}

impl From<Work> for ToWriter {
    fn from(work: Work) -> ToWriter {
        ToWriter::Work(work)
    }
}

/// A file's result, for the writer.
enum Work {
    Done {
        plan: Planned,
        outcome: Early,
    },
    Parsed {
        job: ParseJob,
        result: std::result::Result<Prepared, SandboxError>,
        elapsed: Duration,
    },
}

enum Early {
    Unchanged(DocumentId),
    Moved(knowhub_store::DocumentRecord),
    Busy(String),
    Skipped(String),
    Failed {
        code: String,
        reason: String,
        kind: Option<DocKind>,
    },
}

/// A parsed and chunked document, ready to store.
struct Prepared {
    doc: ParsedDocument,
    text: String,
    chunks: Vec<NewChunk>,
    /// A mail's attachments, parsed like files of their own.
    attachments: Vec<PreparedAttachment>,
}

/// An attachment of a mail, parsed (or not) like a file, stored as a document under the
/// mail's path (`<mail>/<name>`).
struct PreparedAttachment {
    /// Its relative path inside the mail (`report.pdf`, `message 3/report.pdf`).
    name: String,
    kind: DocKind,
    bytes: Vec<u8>,
    hash: String,
    result: std::result::Result<Prepared, SandboxError>,
}

/// Attachments inside attachments (a forwarded mail's) are read this deep.
const MAX_ATTACHMENT_DEPTH: u32 = 3;

/// Where a parsed document (a file, or an attachment of a stored mail) is stored.
struct Target<'a> {
    parent: Option<DocumentId>,
    source: SourceId,
    folder: Option<FolderId>,
    path: &'a str,
    kind: DocKind,
    hash: &'a str,
    size: u64,
    mtime_ns: Option<i64>,
    bytes: &'a [u8],
    /// Whether an earlier version had content (the outcome says "updated").
    existed: bool,
}

/// What the writer did with one work item.
struct Written {
    path: String,
    outcome: FileOutcome,
    bytes: u64,
    /// Documents whose index entries were staged (the file's and its attachments').
    indexed: Vec<DocumentId>,
    /// Attachments no longer in their mail, removed (their tombstones are cleared after the
    /// next commit).
    removed: Vec<DocumentId>,
}

/// After this many of a mail's attachments time out, the rest are not read: each may take the
/// whole parse timeout, and a mail of many slow attachments would hold its parser slot for
/// all of them.
const MAX_ATTACHMENT_TIMEOUTS: u32 = 2;

/// Parses and chunks one file's bytes (a mail's attachments too, each like a file of its own).
fn prepare(
    parser: &mut Parser,
    bytes: &Arc<Vec<u8>>,
    kind: DocKind,
    chunking: &knowhub_chunk::ChunkConfig,
    counter: &dyn knowhub_chunk::TokenCounter,
    progress: &mut dyn FnMut(u32, u32),
) -> std::result::Result<Prepared, SandboxError> {
    let mut timeouts = 0;
    let mut reading = Reading {
        parser,
        chunking,
        counter,
        progress,
        timeouts: &mut timeouts,
    };
    reading.prepare(bytes, kind, 0)
}

/// One file being read with its attachments (and theirs).
struct Reading<'a> {
    parser: &'a mut Parser,
    chunking: &'a knowhub_chunk::ChunkConfig,
    counter: &'a dyn knowhub_chunk::TokenCounter,
    progress: &'a mut dyn FnMut(u32, u32),
    /// Attachments of this file that timed out so far.
    timeouts: &'a mut u32,
}

impl Reading<'_> {
    fn prepare(
        &mut self,
        bytes: &Arc<Vec<u8>>,
        kind: DocKind,
        depth: u32,
    ) -> std::result::Result<Prepared, SandboxError> {
        let mut doc = self.parser.parse_reporting(bytes, kind, self.progress)?;
        let attached = std::mem::take(&mut doc.attachments);
        let text = doc.plain_text();
        let chunks = chunk_document(&doc, self.chunking, self.counter)
            .into_iter()
            .map(|c| NewChunk {
                text_hash: short_hash(c.text.as_bytes()),
                ordinal: c.ordinal,
                text: c.text,
                heading_path: c.heading_path,
                page_start: c.page_start,
                page_end: c.page_end,
                char_start: c.char_start,
                char_end: c.char_end,
                token_count: c.token_count,
            })
            .collect();
        let mut attachments = Vec::new();
        if depth < MAX_ATTACHMENT_DEPTH {
            for a in attached {
                let file_name = a.name.rsplit('/').next().unwrap_or(&a.name);
                // The parser hands back only formats it reads; checked again all the same.
                let Some(kind) = detect(Some(file_name), &a.bytes[..a.bytes.len().min(4096)])
                else {
                    continue;
                };
                let bytes = Arc::new(a.bytes);
                let result = if *self.timeouts >= MAX_ATTACHMENT_TIMEOUTS {
                    Err(SandboxError::Parse(crate::sandbox::ParseErrorWire {
                        code: "skipped".into(),
                        message: format!(
                            "not read: {MAX_ATTACHMENT_TIMEOUTS} other attachments of this mail \
                             took longer than the parse timeout"
                        ),
                    }))
                } else {
                    self.prepare(&bytes, kind, depth + 1)
                };
                if matches!(result, Err(SandboxError::Timeout(_))) {
                    *self.timeouts += 1;
                }
                attachments.push(PreparedAttachment {
                    name: a.name,
                    kind,
                    hash: blake3::hash(&bytes).to_hex().to_string(),
                    bytes: Arc::unwrap_or_clone(bytes),
                    result,
                });
            }
        }
        Ok(Prepared {
            doc,
            text,
            chunks,
            attachments,
        })
    }
}

/// (input, reason) for inputs that could not be read at all.
type InputErrors = Vec<(String, String)>;

/// Commit the index at least this often during long runs so progress survives a crash.
const COMMIT_EVERY_CHUNKS: usize = 5_000;
const COMMIT_EVERY: Duration = Duration::from_secs(10);

impl Engine {
    /// Ingests files and folders (recursively) on behalf of `ctx`, who becomes the owner of
    /// new documents and folders. Unchanged files (same content hash) are no-ops; changed
    /// files replace their previous version atomically; failures are recorded with a reason
    /// and never stop the batch. Files someone else added are left alone unless `ctx` is an
    /// administrator (owner-only writes).
    pub fn ingest(
        &self,
        ctx: &RequestContext,
        inputs: &[PathBuf],
        options: &IngestOptions,
        progress: &mut dyn FnMut(&IngestEvent),
    ) -> Result<IngestReport> {
        let access = self.authorize(ctx)?;
        let report = self.ingest_as(&access, inputs, options, progress)?;
        let target: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
        self.audit(
            &access,
            ("ingest", &target.join(", "), "ok"),
            (report.added + report.updated) as u64,
            0,
            serde_json::json!({
                "added": report.added, "updated": report.updated, "removed": report.removed,
                "failed": report.failed, "skipped": report.skipped,
            }),
        )?;
        Ok(report)
    }

    pub(crate) fn ingest_as(
        &self,
        access: &Access,
        inputs: &[PathBuf],
        options: &IngestOptions,
        progress: &mut dyn FnMut(&IngestEvent),
    ) -> Result<IngestReport> {
        let _guard = self.begin_write()?;
        let owner = &access.ctx.user;
        let started = Instant::now();
        let run_id = format!("run-{}-{}", crate::queue::now_ms(), std::process::id());
        let mut report = IngestReport {
            run_id: run_id.clone(),
            ..Default::default()
        };
        let (plan, mut input_errors, mut excluded) = self.plan(inputs, owner, options)?;
        let total_bytes = plan.iter().map(|p| p.size).sum();
        let kept: std::collections::HashSet<String> =
            plan.iter().map(|p| p.path.display().to_string()).collect();
        progress(&IngestEvent::Planned {
            files: plan.len() + input_errors.len(),
            bytes: total_bytes,
        });
        for (path, reason) in excluded.drain(..) {
            report.files += 1;
            report.skipped += 1;
            progress(&IngestEvent::File {
                path,
                outcome: FileOutcome::Skipped { reason },
                bytes: 0,
            });
        }
        for (path, reason) in input_errors.drain(..) {
            report.files += 1;
            report.failed += 1;
            report.failures.push((path.clone(), reason.clone()));
            let outcome = FileOutcome::Failed {
                code: "io".into(),
                reason,
            };
            progress(&IngestEvent::File {
                path,
                outcome,
                bytes: 0,
            });
        }

        let workers = self.config.parse_workers.max(1);
        let (job_tx, job_rx) = bounded::<ParseJob>(workers * 2);
        let (work_tx, work_rx) = bounded::<ToWriter>(workers * 4);
        let mut pending_commit: Vec<DocumentId> = Vec::new();
        let mut removed_attachments: Vec<DocumentId> = Vec::new();
        let mut chunks_since_commit = 0usize;
        let mut last_commit = Instant::now();

        std::thread::scope(|scope| -> Result<()> {
            // Reader.
            let reader_tx = work_tx.clone();
            scope.spawn(move || self.read_stage(access, plan, options, job_tx, reader_tx));
            // Parsers.
            for _ in 0..workers {
                let job_rx = job_rx.clone();
                let work_tx = work_tx.clone();
                let mut parser =
                    Parser::new(self.config.parser.clone(), self.config.limits.clone())
                        .with_ocr(self.ocr_model.clone());
                let chunking = self.chunking;
                let counter = Arc::clone(&self.counter);
                scope.spawn(move || {
                    for job in job_rx {
                        let t = Instant::now();
                        let path = job.plan.path.display().to_string();
                        let mut reading = |done, pages| {
                            // Only a scan worth waiting for is reported page by page.
                            if pages > 1 {
                                let path = path.clone();
                                let _ = work_tx.send(ToWriter::Reading { path, done, pages });
                            }
                        };
                        let result = prepare(
                            &mut parser,
                            &job.bytes,
                            job.kind,
                            &chunking,
                            counter.as_ref(),
                            &mut reading,
                        );
                        if work_tx
                            .send(ToWriter::Work(Work::Parsed {
                                job,
                                result,
                                elapsed: t.elapsed(),
                            }))
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
            drop(job_rx);
            drop(work_tx);

            // Writer: this thread.
            for work in work_rx {
                let work = match work {
                    ToWriter::Work(work) => work,
                    ToWriter::Reading { path, done, pages } => {
                        progress(&IngestEvent::Reading { path, done, pages });
                        continue;
                    }
                };
                let Written {
                    path,
                    outcome,
                    bytes,
                    indexed,
                    removed,
                } = self.write_stage(work, &run_id, owner)?;
                removed_attachments.extend(removed);
                report.files += 1;
                report.bytes += bytes;
                match &outcome {
                    FileOutcome::Added { chunks } => {
                        report.added += 1;
                        report.chunks += chunks;
                        chunks_since_commit += chunks;
                    }
                    FileOutcome::Updated { chunks } => {
                        report.updated += 1;
                        report.chunks += chunks;
                        chunks_since_commit += chunks;
                    }
                    FileOutcome::Unchanged => report.unchanged += 1,
                    FileOutcome::NoText { .. } => report.no_text += 1,
                    FileOutcome::Failed { reason, .. } => {
                        report.failed += 1;
                        report.failures.push((path.clone(), reason.clone()));
                    }
                    FileOutcome::Skipped { .. } => report.skipped += 1,
                    FileOutcome::Removed => report.removed += 1,
                    FileOutcome::Moved { .. } => report.moved += 1,
                    FileOutcome::Busy { .. } => report.busy += 1,
                }
                pending_commit.extend(indexed);
                progress(&IngestEvent::File {
                    path,
                    outcome,
                    bytes,
                });
                if !pending_commit.is_empty()
                    && (chunks_since_commit >= COMMIT_EVERY_CHUNKS
                        || last_commit.elapsed() >= COMMIT_EVERY)
                {
                    self.commit_index(&mut pending_commit)?;
                    progress(&IngestEvent::Committed {
                        documents: report.added + report.updated,
                    });
                    chunks_since_commit = 0;
                    last_commit = Instant::now();
                }
            }
            Ok(())
        })?;
        // Files that disappeared leave the knowledge base with them — after the files above,
        // so a file that merely moved was found at its new path first and kept its identity.
        // The tombstones make the index follow even if we crash before the commit below.
        let vanished = self.vanished_documents(access, inputs, options, &kept)?;
        for (id, path) in &vanished {
            removed_attachments.extend(self.remove_with_attachments(*id)?);
            self.journal(&run_id, path, Some(*id), &FileOutcome::Removed, None)?;
            report.files += 1;
            report.removed += 1;
            progress(&IngestEvent::File {
                path: path.clone(),
                outcome: FileOutcome::Removed,
                bytes: 0,
            });
        }
        if !pending_commit.is_empty() || !vanished.is_empty() || !removed_attachments.is_empty() {
            self.commit_index(&mut pending_commit)?;
            let mut ids: Vec<DocumentId> = vanished.iter().map(|(id, _)| *id).collect();
            ids.append(&mut removed_attachments);
            self.store().clear_tombstones(&ids)?;
            progress(&IngestEvent::Committed {
                documents: report.added + report.updated,
            });
        }
        // Vectors come last: every file is already searchable by keyword while they are made,
        // and an interrupted run leaves the rest for the next one.
        report.embedded = self.embed_pending_locked(&mut |p| {
            progress(&IngestEvent::Embedded {
                done: p.done,
                total: p.total,
            })
        })?;
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }

    fn commit_index(&self, pending: &mut Vec<DocumentId>) -> Result<()> {
        self.index.commit()?;
        self.store().mark_indexed(pending)?;
        pending.clear();
        Ok(())
    }

    /// Expands inputs into files, each assigned to a source and folder, under that folder's
    /// rules. Returns the plan, inputs that could not be read, and files the rules leave out.
    fn plan(
        &self,
        inputs: &[PathBuf],
        owner: &UserId,
        options: &IngestOptions,
    ) -> Result<(Vec<Planned>, InputErrors, InputErrors)> {
        let mut planned = Vec::new();
        let mut errors = Vec::new();
        let mut excluded = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let engine_max = self.config.limits.parse.max_file_bytes;
        for input in inputs {
            let path = match self.fs.canonicalize(input) {
                Ok(p) => p,
                // Gone: in sync mode, `vanished_documents` removes what was stored there.
                Err(e) if options.sync && e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    errors.push((input.display().to_string(), describe_io(&e)));
                    continue;
                }
            };
            let meta = match self.fs.metadata(&path) {
                Ok(m) => m,
                Err(e) if options.sync && e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    errors.push((path.display().to_string(), describe_io(&e)));
                    continue;
                }
            };
            if meta.is_dir {
                let (source, matcher) = self.source_for_dir(&path, owner)?;
                let max_bytes = matcher.max_file_bytes().unwrap_or(u64::MAX).min(engine_max);
                let walked = if path == matcher.root() {
                    matcher.walk(self.fs.as_ref())
                } else if !matcher.admits(self.fs.as_ref(), &path, true) {
                    excluded.push((
                        path.display().to_string(),
                        "left out by the folder's rules".into(),
                    ));
                    continue;
                } else {
                    let fs = self.fs.as_ref();
                    let mut files = fs.walk(&path);
                    files.retain(|f| f.as_ref().map_or(true, |p| matcher.admits(fs, p, false)));
                    files
                };
                let root = matcher.root().to_path_buf();
                let mut folders: HashMap<PathBuf, FolderId> = HashMap::new();
                for entry in walked {
                    let file = match entry {
                        Ok(f) => f,
                        Err(e) => {
                            errors.push((path.display().to_string(), e.to_string()));
                            continue;
                        }
                    };
                    if !seen.insert(file.clone()) || !has_supported_extension(&file) {
                        continue;
                    }
                    let parent = file.parent().unwrap_or(&root).to_path_buf();
                    let folder = match folders.get(&parent) {
                        Some(f) => *f,
                        None => {
                            let f = self
                                .store()
                                .ensure_folder(source, &rel_folder(&root, &parent))?;
                            folders.insert(parent, f);
                            f
                        }
                    };
                    match self.fs.metadata(&file) {
                        Ok(m) => planned.push(Planned {
                            path: file,
                            source,
                            folder: Some(folder),
                            size: m.size,
                            mtime_ns: m.mtime_ns,
                            explicit: false,
                            max_bytes,
                        }),
                        Err(e) if options.sync && e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => errors.push((file.display().to_string(), describe_io(&e))),
                    }
                }
            } else if seen.insert(path.clone()) {
                let (source, folder, matcher) = self.source_for_file(&path)?;
                if let Some(m) = &matcher
                    && !m.admits(self.fs.as_ref(), &path, false)
                {
                    excluded.push((
                        path.display().to_string(),
                        "left out by the folder's rules".into(),
                    ));
                    continue;
                }
                if options.sync && !has_supported_extension(&path) {
                    excluded.push((path.display().to_string(), "unsupported file type".into()));
                    continue;
                }
                let max_bytes = matcher
                    .as_ref()
                    .and_then(RuleMatcher::max_file_bytes)
                    .unwrap_or(u64::MAX)
                    .min(engine_max);
                planned.push(Planned {
                    path,
                    source,
                    folder,
                    size: meta.size,
                    mtime_ns: meta.mtime_ns,
                    explicit: !options.sync,
                    max_bytes,
                });
            }
        }
        Ok((planned, errors, excluded))
    }

    /// Stored documents that should leave with their file (only those `access` may remove:
    /// owner-only writes): under folder inputs, files no longer on disk; in sync mode also
    /// every document at or under an input that is gone, and files the folder's rules now
    /// leave out.
    fn vanished_documents(
        &self,
        access: &Access,
        inputs: &[PathBuf],
        options: &IngestOptions,
        kept: &std::collections::HashSet<String>,
    ) -> Result<Vec<(DocumentId, String)>> {
        let mut out: Vec<(DocumentId, String)> = Vec::new();
        let gone = |p: &str| {
            matches!(
                self.fs.metadata(Path::new(p)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound
            )
        };
        for input in inputs {
            let (prefix, is_dir) = match self.fs.canonicalize(input) {
                Ok(p) => {
                    let is_dir = self.fs.metadata(&p).is_ok_and(|m| m.is_dir);
                    (p, is_dir)
                }
                Err(e) if options.sync && e.kind() == std::io::ErrorKind::NotFound => {
                    let path = self.stored_path(input);
                    // A watched folder that is missing as a whole is more likely an unmounted
                    // drive or a disconnected share than a deletion: keep its documents.
                    if let Some((_, root)) = self.source_containing(&path)?
                        && self.fs.metadata(&root).is_err()
                    {
                        tracing::warn!(
                            "{} is unavailable: its documents are kept until it is back or removed",
                            root.display()
                        );
                        continue;
                    }
                    (path, true)
                }
                Err(_) => continue,
            };
            if !is_dir && !options.sync {
                continue;
            }
            let docs = self
                .store()
                .documents(Some(&prefix.display().to_string()))?;
            for doc in docs {
                // Planned files stay (moves were already matched to their new path);
                // attachments have no file of their own and go with their mail.
                if kept.contains(&doc.path)
                    || doc.parent.is_some()
                    || !self.may_write(access, doc.owner.as_deref())
                {
                    continue;
                }
                let leaves = gone(&doc.path)
                    || (options.sync && !self.admitted_by_source(Path::new(&doc.path))?);
                if leaves && !out.iter().any(|(id, _)| *id == doc.id) {
                    out.push((doc.id, doc.path));
                }
            }
        }
        Ok(out)
    }

    /// Whether a stored file's folder rules still admit it (files outside folders: always).
    fn admitted_by_source(&self, path: &Path) -> Result<bool> {
        Ok(match self.source_containing(path)? {
            Some((src, root)) => SourceRules::from_json(&src.rules)
                .compile(&root)
                .map_or(true, |m| m.admits(self.fs.as_ref(), path, false)),
            None => true,
        })
    }

    /// The folder source whose root is the nearest ancestor of `path` (or `path` itself).
    pub(crate) fn source_containing(
        &self,
        path: &Path,
    ) -> Result<Option<(knowhub_store::SourceRecord, PathBuf)>> {
        let mut best: Option<(knowhub_store::SourceRecord, PathBuf)> = None;
        for src in self.store().sources()? {
            let Some(root) = src.root_path.clone().map(PathBuf::from) else {
                continue;
            };
            if path.starts_with(&root)
                && best
                    .as_ref()
                    .is_none_or(|(_, b)| root.components().count() > b.components().count())
            {
                best = Some((src, root));
            }
        }
        Ok(best)
    }

    /// The source a folder input belongs to: the folder source containing it, else a new
    /// source rooted at it (owned by `owner`). Returns it with its compiled rules.
    fn source_for_dir(&self, path: &Path, owner: &UserId) -> Result<(SourceId, RuleMatcher)> {
        if let Some((src, root)) = self.source_containing(path)? {
            return Ok((src.id, SourceRules::from_json(&src.rules).compile(&root)?));
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = self
            .store()
            .folder_source(&path.display().to_string(), &name)?;
        self.store().claim_source(source, owner)?;
        Ok((source, SourceRules::default().compile(path)?))
    }

    /// A single file belongs to the folder source that contains it, if any; else to "Files".
    fn source_for_file(
        &self,
        path: &Path,
    ) -> Result<(SourceId, Option<FolderId>, Option<RuleMatcher>)> {
        if let Some((src, root)) = self.source_containing(path)? {
            let parent = path.parent().unwrap_or(&root);
            let folder = self
                .store()
                .ensure_folder(src.id, &rel_folder(&root, parent))?;
            let matcher = SourceRules::from_json(&src.rules).compile(&root)?;
            return Ok((src.id, Some(folder), Some(matcher)));
        }
        Ok((self.store().files_source()?, None, None))
    }

    /// Reader stage: decides per file whether parsing is needed.
    fn read_stage(
        &self,
        access: &Access,
        plan: Vec<Planned>,
        options: &IngestOptions,
        jobs: Sender<ParseJob>,
        done: Sender<ToWriter>,
    ) {
        // Move origins already matched in this run (the writer applies them later).
        let mut moved = std::collections::HashSet::new();
        for plan in plan {
            if options
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return;
            }
            let existing = match self.store().document_by_path(&plan.path.to_string_lossy()) {
                Ok(d) => d,
                Err(e) => {
                    let outcome = Early::Failed {
                        code: "store".into(),
                        reason: e.to_string(),
                        kind: None,
                    };
                    if done.send(Work::Done { plan, outcome }.into()).is_err() {
                        return;
                    }
                    continue;
                }
            };
            // Owner-only writes: a file someone else added is not replaced by us.
            if let Some(doc) = &existing
                && !self.may_write(access, doc.owner.as_deref())
            {
                let outcome = Early::Skipped(
                    "added by another user: only they or an administrator can update it".into(),
                );
                if done.send(Work::Done { plan, outcome }.into()).is_err() {
                    return;
                }
                continue;
            }
            // Fast path: same size and mtime as a successfully stored version.
            if let Some(doc) = &existing
                && !options.force
                && doc.content_hash.is_some()
                && doc.error_code.is_none()
                && doc.size == plan.size
                && doc.mtime_ns == plan.mtime_ns
            {
                let id = doc.id;
                if done
                    .send(
                        Work::Done {
                            plan,
                            outcome: Early::Unchanged(id),
                        }
                        .into(),
                    )
                    .is_err()
                {
                    return;
                }
                continue;
            }
            let work = self.read_one(access, plan, existing.as_ref(), options, &mut moved);
            let sent = match work {
                Ok(job) => jobs.send(job).is_ok(),
                Err(work) => done.send(work.into()).is_ok(),
            };
            if !sent {
                return;
            }
        }
    }

    // The large "error" is not an error but the already-finished work item; it is moved once.
    #[allow(clippy::result_large_err)]
    fn read_one(
        &self,
        access: &Access,
        plan: Planned,
        existing: Option<&knowhub_store::DocumentRecord>,
        options: &IngestOptions,
        moved: &mut std::collections::HashSet<DocumentId>,
    ) -> std::result::Result<ParseJob, Work> {
        let max = plan.max_bytes;
        if let (Some(settle), Some(mtime)) = (options.settle, plan.mtime_ns)
            && now_ns().saturating_sub(mtime) < settle.as_nanos() as i64
        {
            return Err(Work::Done {
                plan,
                outcome: Early::Busy("still being written".into()),
            });
        }
        if plan.size > max {
            let reason = format!("file too large: {} bytes (limit {max})", plan.size);
            return Err(Work::Done {
                plan,
                outcome: Early::Failed {
                    code: "too_large".into(),
                    reason,
                    kind: None,
                },
            });
        }
        let bytes = match self.fs.read(&plan.path) {
            Ok(b) => b,
            Err(e) => {
                let reason = describe_io(&e);
                return Err(Work::Done {
                    plan,
                    outcome: Early::Failed {
                        code: "io".into(),
                        reason,
                        kind: None,
                    },
                });
            }
        };
        // A file that changed while we read it is read again later, never stored half-written.
        if self
            .fs
            .metadata(&plan.path)
            .is_ok_and(|m| m.size != bytes.len() as u64 || m.mtime_ns != plan.mtime_ns)
        {
            return Err(Work::Done {
                plan,
                outcome: Early::Busy("changed while being read".into()),
            });
        }
        let name = plan
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let Some(kind) = detect(name.as_deref(), &bytes[..bytes.len().min(4096)]) else {
            let outcome = if plan.explicit {
                Early::Failed {
                    code: "unsupported".into(),
                    reason: "unsupported file type".into(),
                    kind: None,
                }
            } else {
                Early::Skipped("unsupported file type".into())
            };
            return Err(Work::Done { plan, outcome });
        };
        let hash = blake3::hash(&bytes).to_hex().to_string();
        if let Some(doc) = existing
            && !options.force
            && doc.content_hash.as_deref() == Some(hash.as_str())
            && doc.error_code.is_none()
        {
            let _ = self.store().touch(doc.id, plan.size, plan.mtime_ns);
            return Err(Work::Done {
                plan,
                outcome: Early::Unchanged(doc.id),
            });
        }
        // Same content at a new path while the stored path is gone from disk: a move.
        if existing.is_none()
            && let Some(doc) = self.moved_from(access, &hash, moved)
        {
            moved.insert(doc.id);
            return Err(Work::Done {
                plan,
                outcome: Early::Moved(doc),
            });
        }
        Ok(ParseJob {
            plan,
            kind,
            bytes: Arc::new(bytes),
            hash,
            existed: existing.is_some_and(|d| d.chunk_count > 0),
        })
    }

    /// Writer stage: stores one result (a mail with its attachments) and queues its index
    /// update.
    fn write_stage(&self, work: Work, run_id: &str, owner: &UserId) -> Result<Written> {
        match work {
            Work::Done { plan, outcome } => {
                let path = plan.path.display().to_string();
                let mut indexed = Vec::new();
                let (outcome, doc) = match outcome {
                    Early::Unchanged(id) => (FileOutcome::Unchanged, Some(id)),
                    Early::Busy(reason) => (FileOutcome::Busy { reason }, None),
                    Early::Moved(old) => {
                        indexed = self.move_stored(&plan, &old)?;
                        (FileOutcome::Moved { from: old.path }, Some(old.id))
                    }
                    Early::Skipped(reason) => (FileOutcome::Skipped { reason }, None),
                    Early::Failed { code, reason, kind } => {
                        let id = self.store().record_failure(&FailedDocument {
                            parent: None,
                            source: plan.source,
                            folder: plan.folder,
                            path: &path,
                            kind: kind.map(DocKind::as_str),
                            size: plan.size,
                            mtime_ns: plan.mtime_ns,
                            title: None,
                            status: DocumentStatus::Failed,
                            code: &code,
                            error: &reason,
                        })?;
                        self.store().claim_document(id, owner)?;
                        (FileOutcome::Failed { code, reason }, Some(id))
                    }
                };
                if !matches!(
                    outcome,
                    FileOutcome::Unchanged | FileOutcome::Skipped { .. } | FileOutcome::Busy { .. }
                ) {
                    self.journal(run_id, &path, doc, &outcome, None)?;
                }
                Ok(Written {
                    path,
                    outcome,
                    bytes: 0,
                    indexed,
                    removed: Vec::new(),
                })
            }
            Work::Parsed {
                job,
                result,
                elapsed,
            } => {
                let path = job.plan.path.display().to_string();
                let target = Target {
                    parent: None,
                    source: job.plan.source,
                    folder: job.plan.folder,
                    path: &path,
                    kind: job.kind,
                    hash: &job.hash,
                    size: job.plan.size,
                    mtime_ns: job.plan.mtime_ns,
                    bytes: &job.bytes,
                    existed: job.existed,
                };
                let mut written = Written {
                    path: path.clone(),
                    outcome: FileOutcome::Unchanged,
                    bytes: job.bytes.len() as u64,
                    indexed: Vec::new(),
                    removed: Vec::new(),
                };
                let (outcome, id) = self.store_result(&target, result, owner, &mut written)?;
                self.journal(run_id, &path, Some(id), &outcome, Some(elapsed))?;
                written.outcome = outcome;
                Ok(written)
            }
        }
    }

    /// Stores a parse result at `target`: the document with its attachments, or the failure
    /// (which keeps an earlier version and its attachments).
    fn store_result(
        &self,
        target: &Target<'_>,
        result: std::result::Result<Prepared, SandboxError>,
        owner: &UserId,
        written: &mut Written,
    ) -> Result<(FileOutcome, DocumentId)> {
        match result {
            Ok(mut prepared) => {
                let attachments = std::mem::take(&mut prepared.attachments);
                let (outcome, id) = self.store_parsed(target, prepared)?;
                self.store().claim_document(id, owner)?;
                written.indexed.push(id);
                self.store_attachments(id, target, attachments, owner, written)?;
                Ok((outcome, id))
            }
            Err(err) => {
                let status = match &err {
                    SandboxError::Parse(p) if p.code == "password_required" => {
                        DocumentStatus::PasswordRequired
                    }
                    _ => DocumentStatus::Failed,
                };
                let reason = err.to_string();
                let id = self.store().record_failure(&FailedDocument {
                    parent: target.parent,
                    source: target.source,
                    folder: target.folder,
                    path: target.path,
                    kind: Some(target.kind.as_str()),
                    size: target.size,
                    mtime_ns: target.mtime_ns,
                    title: None,
                    status,
                    code: err.code(),
                    error: &reason,
                })?;
                self.store().claim_document(id, owner)?;
                let outcome = FileOutcome::Failed {
                    code: err.code().to_string(),
                    reason,
                };
                Ok((outcome, id))
            }
        }
    }

    /// Stores a mail's attachments as documents under its path (`<mail>/<name>`) and removes
    /// those it no longer has. An attachment whose content did not change is left as it is.
    fn store_attachments(
        &self,
        mail: DocumentId,
        at: &Target<'_>,
        attachments: Vec<PreparedAttachment>,
        owner: &UserId,
        written: &mut Written,
    ) -> Result<()> {
        let stored = self.store().attachments(mail)?;
        let mut kept = std::collections::HashSet::new();
        for a in attachments {
            let rel: PathBuf = a.name.split('/').collect();
            let path = Path::new(at.path).join(rel).display().to_string();
            kept.insert(path.clone());
            let earlier = stored
                .iter()
                .find(|d| d.path == path && d.parent == Some(mail));
            if earlier.is_some_and(|d| {
                d.content_hash.as_deref() == Some(a.hash.as_str()) && d.error_code.is_none()
            }) {
                continue;
            }
            let target = Target {
                parent: Some(mail),
                source: at.source,
                folder: at.folder,
                path: &path,
                kind: a.kind,
                hash: &a.hash,
                size: a.bytes.len() as u64,
                mtime_ns: at.mtime_ns,
                bytes: &a.bytes,
                existed: earlier.is_some_and(|d| d.chunk_count > 0),
            };
            self.store_result(&target, a.result, owner, written)?;
        }
        for gone in stored
            .iter()
            .filter(|d| d.parent == Some(mail) && !kept.contains(&d.path))
        {
            written
                .removed
                .extend(self.remove_with_attachments(gone.id)?);
        }
        Ok(())
    }

    /// Removes a document with its attachments from the store and the index writer; returns
    /// every id removed (their tombstones are cleared once the index commits).
    pub(crate) fn remove_with_attachments(&self, id: DocumentId) -> Result<Vec<DocumentId>> {
        let mut ids = vec![id];
        ids.extend(self.store().attachments(id)?.into_iter().map(|d| d.id));
        self.store().remove_document(id)?;
        for id in &ids {
            self.drop_from_indexes(*id)?;
        }
        Ok(ids)
    }

    /// A stored document with this content whose file is gone and that `access` may change:
    /// the origin of a move.
    fn moved_from(
        &self,
        access: &Access,
        hash: &str,
        taken: &std::collections::HashSet<DocumentId>,
    ) -> Option<knowhub_store::DocumentRecord> {
        let candidates = self.store().documents_by_hash(hash).ok()?;
        candidates.into_iter().find(|d| {
            d.error_code.is_none()
                && d.parent.is_none()
                && !taken.contains(&d.id)
                && self.may_write(access, d.owner.as_deref())
                && matches!(
                    self.fs.metadata(Path::new(&d.path)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound
                )
        })
    }

    /// Points a stored document (and its attachments) at its new path; its index entries follow
    /// (the title may come from the file name). Returns the documents moved.
    fn move_stored(
        &self,
        plan: &Planned,
        old: &knowhub_store::DocumentRecord,
    ) -> Result<Vec<DocumentId>> {
        let attachments = self.store().attachments(old.id)?;
        let old_stem = Path::new(&old.path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned());
        let new_stem = plan
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned());
        let title = (old.title.is_some() && old.title == old_stem)
            .then_some(new_stem)
            .flatten();
        let path = plan.path.display().to_string();
        self.store().move_document(&MovedDocument {
            id: old.id,
            path: &path,
            source: plan.source,
            folder: plan.folder,
            title: title.as_deref(),
            size: plan.size,
            mtime_ns: plan.mtime_ns,
        })?;
        self.index_document(old.id)?;
        let mut moved = vec![old.id];
        for a in attachments {
            let inside = a.path.strip_prefix(old.path.as_str()).unwrap_or_default();
            let new_path = format!("{path}{inside}");
            self.store().move_document(&MovedDocument {
                id: a.id,
                path: &new_path,
                source: plan.source,
                folder: plan.folder,
                title: None,
                size: a.size,
                mtime_ns: a.mtime_ns,
            })?;
            self.index_document(a.id)?;
            moved.push(a.id);
        }
        Ok(moved)
    }

    /// Stores a parsed document and stages its index update. Returns whether the index changed.
    fn store_parsed(&self, target: &Target<'_>, p: Prepared) -> Result<(FileOutcome, DocumentId)> {
        let title = p.doc.title.clone().or_else(|| {
            Path::new(target.path)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        });
        let no_layer = p.doc.notices.contains(&ParseNotice::NoTextLayer);
        let (status, note) = if p.chunks.is_empty() {
            if no_layer {
                let what = if target.kind == DocKind::Image {
                    "no text: the file is a picture"
                } else {
                    "no text layer: the pages are scanned images"
                };
                let why = if self.ocr_model.is_none() {
                    format!(
                        "{what}, and the OCR model is not installed \
                         (`knowhub models fetch {}`)",
                        crate::OCR_MODEL
                    )
                } else if target.kind == DocKind::Image {
                    format!("{what} in which OCR found no text")
                } else {
                    format!(
                        "{what} that OCR could not read (no text found, or a scan in an \
                         encoding it does not decode, such as indexed colours)"
                    )
                };
                (DocumentStatus::NoTextLayer, Some(why))
            } else {
                (
                    DocumentStatus::Empty,
                    Some("the document contains no text".to_string()),
                )
            }
        } else if no_layer {
            let pages = p.doc.pages_without_text.len();
            let total = p.doc.page_count.unwrap_or(0);
            let hint = if self.ocr_model.is_none() {
                format!(" (`knowhub models fetch {}` reads scans)", crate::OCR_MODEL)
            } else {
                String::new()
            };
            (
                DocumentStatus::Indexed,
                Some(format!("{pages} of {total} pages have no text layer{hint}")),
            )
        } else if p.doc.notices.contains(&ParseNotice::Truncated) {
            (
                DocumentStatus::Indexed,
                Some("only the beginning was indexed: the text exceeds the size limit".to_string()),
            )
        } else {
            (DocumentStatus::Indexed, None)
        };
        let note = match (note, crate::ocr::uncertain_note(&p.doc.uncertain_pages)) {
            (Some(n), Some(u)) if status == DocumentStatus::Indexed => Some(format!("{n}; {u}")),
            (None, Some(u)) if status == DocumentStatus::Indexed => Some(u),
            (note, _) => note,
        };
        let id = self.store().replace_document(&NewDocument {
            parent: target.parent,
            source: target.source,
            folder: target.folder,
            path: target.path,
            kind: target.kind.as_str(),
            content_hash: target.hash,
            size: target.size,
            mtime_ns: target.mtime_ns,
            title: title.as_deref(),
            status,
            note: note.as_deref(),
            page_count: p.doc.page_count,
            encoding: p.doc.encoding.as_deref(),
            meta: &p.doc.meta,
            text: &p.text,
            chunks: &p.chunks,
            tables: &p.doc.tables,
            original: Some(target.bytes),
        })?;
        self.index_document(id)?;
        let n = p.chunks.len();
        let outcome = match status {
            DocumentStatus::Indexed if target.existed => FileOutcome::Updated { chunks: n },
            DocumentStatus::Indexed => FileOutcome::Added { chunks: n },
            _ => FileOutcome::NoText {
                reason: note.unwrap_or_default(),
            },
        };
        Ok((outcome, id))
    }

    fn journal(
        &self,
        run_id: &str,
        path: &str,
        doc: Option<DocumentId>,
        outcome: &FileOutcome,
        elapsed: Option<Duration>,
    ) -> Result<()> {
        let (action, detail) = match outcome {
            FileOutcome::Added { chunks } => ("added", Some(format!("{chunks} chunks"))),
            FileOutcome::Updated { chunks } => ("updated", Some(format!("{chunks} chunks"))),
            FileOutcome::Unchanged => ("unchanged", None),
            FileOutcome::NoText { reason } => ("no_text", Some(reason.clone())),
            FileOutcome::Failed { reason, .. } => ("failed", Some(reason.clone())),
            FileOutcome::Skipped { reason } => ("skipped", Some(reason.clone())),
            FileOutcome::Removed => ("removed", None),
            FileOutcome::Moved { from } => ("moved", Some(format!("from {from}"))),
            FileOutcome::Busy { reason } => ("busy", Some(reason.clone())),
        };
        self.store().journal(&JournalEntry {
            run_id,
            path,
            document: doc,
            action,
            detail: detail.as_deref(),
            duration_ms: elapsed.map(|d| d.as_millis() as u64),
        })?;
        Ok(())
    }

    /// Removes documents (a file, or everything under a folder) from the store and the index.
    /// Documents `ctx` cannot read count as absent; removing a readable document someone else
    /// added is refused (owner-only writes) and then nothing is removed.
    pub fn remove(&self, ctx: &RequestContext, paths: &[PathBuf]) -> Result<RemoveReport> {
        let access = self.authorize(ctx)?;
        let _guard = self.begin_write()?;
        let mut ids = Vec::new();
        for p in paths {
            // The file may already be gone from disk: fall back to the path as given.
            let abs = self.stored_path(p);
            let docs: Vec<_> = self
                .store()
                .documents(Some(&abs.display().to_string()))?
                .into_iter()
                .filter(|d| access.can_read(d.id))
                .collect();
            if docs.is_empty() {
                self.audit_write(&access, "remove", &p.display().to_string(), false)?;
                return Err(EngineError::NotFound(format!(
                    "nothing stored under {}",
                    p.display()
                )));
            }
            if let Some(d) = docs
                .iter()
                .find(|d| !self.may_write(&access, d.owner.as_deref()))
            {
                self.audit(
                    &access,
                    ("remove", &d.path, "denied"),
                    0,
                    0,
                    serde_json::Value::Null,
                )?;
                return Err(EngineError::Forbidden(format!(
                    "{} was added by another user: only they or an administrator can remove it",
                    d.path
                )));
            }
            if docs.iter().all(|d| d.parent.is_some()) {
                return Err(EngineError::InvalidInput(format!(
                    "{} is an attachment: it goes with its mail (remove the mail instead)",
                    p.display()
                )));
            }
            ids.extend(
                docs.into_iter()
                    .filter(|d| d.parent.is_none())
                    .map(|d| d.id),
            );
        }
        let mut removed = Vec::new();
        for id in &ids {
            removed.extend(self.remove_with_attachments(*id)?);
        }
        self.index.commit()?;
        self.store().clear_tombstones(&removed)?;
        let target: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        self.audit(
            &access,
            ("remove", &target.join(", "), "ok"),
            ids.len() as u64,
            0,
            serde_json::Value::Null,
        )?;
        Ok(RemoveReport {
            documents: ids.len(),
        })
    }

    /// Re-parses every stored file from disk (after a parser upgrade), then rebuilds the index.
    /// Administrators only.
    pub fn reparse_all(
        &self,
        ctx: &RequestContext,
        progress: &mut dyn FnMut(&IngestEvent),
    ) -> Result<IngestReport> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "re-parse the knowledge base")?;
        let paths: Vec<PathBuf> = self
            .store()
            .documents(None)?
            .into_iter()
            // Attachments are parsed again with their mail.
            .filter(|d| d.parent.is_none())
            .map(|d| PathBuf::from(d.path))
            .collect();
        let existing: Vec<PathBuf> = paths
            .into_iter()
            .filter(|p| self.fs.metadata(p).is_ok())
            .collect();
        self.ingest(
            ctx,
            &existing,
            &IngestOptions {
                force: true,
                ..IngestOptions::default()
            },
            progress,
        )
    }
}

pub(crate) fn has_supported_extension(path: &Path) -> bool {
    match path.extension() {
        None => true, // sniffed later
        Some(ext) => {
            let ext = ext.to_string_lossy().to_ascii_lowercase();
            knowhub_parse::supported_extensions().contains(&ext.as_str())
        }
    }
}

impl Engine {
    /// The path a file is (or would be) stored under: canonical when it still exists on disk,
    /// else absolute as given (a file already deleted can still be named).
    pub(crate) fn stored_path(&self, p: &Path) -> PathBuf {
        self.fs
            .canonicalize(p)
            .unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
    }
}

/// `dir` relative to `root`, '/'-separated ('' for the root itself).
fn rel_folder(root: &Path, dir: &Path) -> String {
    dir.strip_prefix(root)
        .unwrap_or(Path::new(""))
        .to_string_lossy()
        .replace(std::path::MAIN_SEPARATOR, "/")
}

fn describe_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "not found".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// 16 hex digits of BLAKE3: stable, reproducible ids for evidence.
pub(crate) fn short_hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..16].to_string()
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use knowhub_parse::{Attachment, Block};

    use super::*;
    use crate::sandbox::write_frame;
    use crate::{ParserBackend, SandboxLimits};

    /// A mail whose attachments all hang the parser: after two time out, the rest are not
    /// read, so the mail holds its parser slot for two timeouts, not one per attachment.
    #[cfg(unix)]
    #[test]
    fn a_mail_stops_reading_attachments_after_two_time_out() {
        let dir = tempfile::tempdir().unwrap();
        let mail = ParsedDocument {
            title: Some("Scans".into()),
            blocks: vec![Block::paragraph("Four scans attached.")],
            attachments: (1..=4)
                .map(|i| Attachment {
                    name: format!("scan-{i}.txt"),
                    bytes: format!("page {i}").into_bytes(),
                })
                .collect(),
            ..ParsedDocument::default()
        };
        let response: std::result::Result<ParsedDocument, SandboxError> = Ok(mail);
        let mut framed = Vec::new();
        write_frame(&mut framed, &serde_json::to_vec(&response).unwrap()).unwrap();
        std::fs::write(dir.path().join("response"), framed).unwrap();
        // The first worker answers the mail, then every worker hangs.
        let script = format!(
            "cd '{}'; if [ ! -e used ]; then touch used; cat response; fi; exec sleep 60",
            dir.path().display()
        );
        let mut parser = Parser::new(
            ParserBackend::Worker {
                program: PathBuf::from("/bin/sh"),
                args: vec!["-c".into(), script],
            },
            SandboxLimits {
                timeout: Duration::from_millis(400),
                ..SandboxLimits::default()
            },
        );
        let started = Instant::now();
        let prepared = prepare(
            &mut parser,
            &Arc::new(b"From: a@example.com\r\n\r\n".to_vec()),
            DocKind::Eml,
            &knowhub_chunk::ChunkConfig::default(),
            &knowhub_chunk::HeuristicTokenCounter,
            &mut |_, _| {},
        )
        .unwrap();
        let codes: Vec<&str> = prepared
            .attachments
            .iter()
            .map(|a| a.result.as_ref().err().map_or("parsed", |e| e.code()))
            .collect();
        assert_eq!(codes, ["timeout", "timeout", "skipped", "skipped"]);
        let Err(skipped) = &prepared.attachments[2].result else {
            unreachable!()
        };
        assert!(
            skipped.to_string().contains("other attachments"),
            "{skipped}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
}
