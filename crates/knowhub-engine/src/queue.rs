//! Watched folders, the managed uploads area, and the persistent ingestion queue.
//!
//! Everything that should change the knowledge base in the background becomes a job in the
//! store first (a watcher event, a reconcile scan's finding, a dropped file), and
//! [`Engine::process_queue`] turns jobs into ingestion runs in sync mode. Because a job only
//! says "bring this path in line with the disk", running it twice is harmless, so a crash at
//! any point is handled by running left-over jobs again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use knowhub_authz::{RequestContext, Role, UserId};
use knowhub_store::{JobRecord, JobState, NewJob, QueueCounts};
use serde::Serialize;

use crate::ingest::{FileOutcome, IngestEvent, IngestOptions};
use crate::rules::SourceRules;
use crate::{Access, Engine, EngineError, Result};

/// Job priorities: lower runs first.
pub mod priority {
    /// Files the user just dropped on the window (or uploaded).
    pub const DROPPED: i64 = 0;
    /// A watcher event.
    pub const EVENT: i64 = 1;
    /// Found by a reconcile scan.
    pub const RECONCILE: i64 = 2;
}

/// Transient failures are retried this many times (with exponential backoff) before the
/// job is failed for good.
pub const MAX_ATTEMPTS: u32 = 5;
/// Finished jobs kept for display; older ones are forgotten (the journal keeps history).
const KEEP_FINISHED_JOBS: usize = 10_000;

/// A watched folder as a user sees it.
#[derive(Debug, Clone, Serialize)]
pub struct WatchedFolder {
    pub path: String,
    pub owner: Option<String>,
    pub rules: SourceRules,
    pub documents: u64,
}

/// Where dropped or uploaded files are copied to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadTarget {
    /// The caller's uploads folder, or a collection (a named sub-folder) in it.
    Uploads { collection: Option<String> },
    /// A watched folder the caller may write to.
    Folder { path: PathBuf },
}

/// What kind of place an [`UploadDestination`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UploadKind {
    /// The caller's own uploads folder.
    Uploads,
    /// A collection (sub-folder) of the caller's uploads.
    Collection,
    /// A watched folder the caller may write to.
    Watched,
}

/// A place the caller may copy files to.
#[derive(Debug, Clone, Serialize)]
pub struct UploadDestination {
    pub kind: UploadKind,
    /// The collection's or folder's name (empty for the uploads folder itself).
    pub name: String,
    pub path: String,
}

/// A collection name is one plain folder name: no separators, no `..`, not hidden, not too long.
fn valid_collection_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(EngineError::InvalidInput(format!(
            "collection name \"{name}\" {why}"
        )))
    };
    if name.is_empty() {
        return bad("is empty");
    }
    if name.chars().count() > 100 {
        return bad("is longer than 100 characters");
    }
    if name.starts_with('.') {
        return bad("may not start with a dot");
    }
    if name.chars().any(|c| {
        matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|') || c.is_control()
    }) {
        return bad("may not contain / \\ : * ? \" < > | or control characters");
    }
    Ok(())
}

/// The queue as a caller may see it.
#[derive(Debug, Clone, Serialize)]
pub struct QueueView {
    pub counts: QueueCounts,
    /// The most recent jobs (the caller's own, for users).
    pub jobs: Vec<JobRecord>,
}

/// Options for one [`Engine::process_queue`] call.
#[derive(Debug, Clone)]
pub struct ProcessOptions {
    /// At most this many jobs per call (a pause or a cancel takes effect between batches).
    pub batch: usize,
    /// Files modified more recently than this are left for later (still being written).
    pub settle: Duration,
    /// Stops reading further files of the batch.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            batch: 32,
            settle: Duration::from_millis(1_000),
            cancel: None,
        }
    }
}

/// What one [`Engine::process_queue`] call did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BatchReport {
    pub jobs: usize,
    pub done: usize,
    pub failed: usize,
    /// Jobs put back: files still being written, transient errors, cancelled reads.
    pub requeued: usize,
    /// Files processed (a folder job covers many).
    pub files: usize,
    pub embedded: usize,
}

impl Engine {
    // ----- watched folders ----------------------------------------------------------------

    /// Starts watching a folder (recursively) for `ctx`, who owns it if it is new, with the
    /// given rules, and queues a full reconcile of it. Watching a folder someone else added
    /// needs its owner or an administrator.
    pub fn watch_folder(
        &self,
        ctx: &RequestContext,
        folder: &Path,
        rules: SourceRules,
    ) -> Result<WatchedFolder> {
        let access = self.authorize(ctx)?;
        let path = self.fs.canonicalize(folder).map_err(|e| EngineError::Io {
            path: folder.display().to_string(),
            source: e,
        })?;
        if !self.fs.metadata(&path).is_ok_and(|m| m.is_dir) {
            return Err(EngineError::InvalidInput(format!(
                "{} is not a folder",
                path.display()
            )));
        }
        rules.compile(&path)?; // reject bad globs before storing them
        let root = path.display().to_string();
        let source = {
            let mut store = self.store();
            if let Some(existing) = store
                .sources()?
                .into_iter()
                .find(|s| s.root_path.as_deref() == Some(root.as_str()))
            {
                if !self.may_write(&access, existing.owner.as_deref()) {
                    return Err(EngineError::Forbidden(format!(
                        "{root} was added by another user: only they or an administrator can \
                         change how it is watched"
                    )));
                }
                existing.id
            } else {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| root.clone());
                let id = store.folder_source(&root, &name)?;
                store.claim_source(id, &access.ctx.user)?;
                id
            }
        };
        self.store()
            .set_source_watch(source, true, &rules.to_json())?;
        self.audit_write(&access, "watch", &root, true)?;
        self.reconcile_source(&root)?;
        self.watched_folders_of(Some(&access))?
            .into_iter()
            .find(|w| w.path == root)
            .ok_or_else(|| EngineError::NotFound(root))
    }

    /// Stops watching a folder; its documents stay (remove them with [`Engine::remove`]).
    pub fn unwatch_folder(&self, ctx: &RequestContext, folder: &Path) -> Result<()> {
        let access = self.authorize(ctx)?;
        let root = self.stored_path(folder).display().to_string();
        let src = self
            .store()
            .sources()?
            .into_iter()
            .find(|s| s.watched && s.root_path.as_deref() == Some(root.as_str()))
            .filter(|s| access.is_admin() || s.owner.as_deref() == Some(access.ctx.user.as_str()))
            .ok_or_else(|| EngineError::NotFound(format!("{root} is not watched")))?;
        if !self.may_write(&access, src.owner.as_deref()) {
            return Err(EngineError::Forbidden(format!(
                "{root} was added by another user"
            )));
        }
        self.store().set_source_watch(src.id, false, &src.rules)?;
        self.store().cancel_jobs(Some(&root))?;
        self.audit_write(&access, "unwatch", &root, true)
    }

    /// Watched folders `ctx` may see: all for administrators, their own for users.
    pub fn watched_folders(&self, ctx: &RequestContext) -> Result<Vec<WatchedFolder>> {
        let access = self.authorize(ctx)?;
        self.watched_folders_of(Some(&access))
    }

    /// Watched folders; `None` = every one (the watcher itself).
    pub(crate) fn watched_folders_of(&self, access: Option<&Access>) -> Result<Vec<WatchedFolder>> {
        Ok(self
            .store()
            .sources()?
            .into_iter()
            .filter(|s| s.watched)
            .filter(|s| {
                access
                    .is_none_or(|a| a.is_admin() || s.owner.as_deref() == Some(a.ctx.user.as_str()))
            })
            .filter_map(|s| {
                Some(WatchedFolder {
                    path: s.root_path?,
                    owner: s.owner,
                    rules: SourceRules::from_json(&s.rules),
                    documents: s.documents,
                })
            })
            .collect())
    }

    // ----- reconcile ----------------------------------------------------------------------

    /// Compares every watched folder with what is stored and queues what differs. Returns
    /// how many paths were queued.
    pub fn reconcile_all(&self) -> Result<usize> {
        let mut queued = 0;
        for w in self.watched_folders_of(None)? {
            queued += self.reconcile_source(&w.path)?;
        }
        Ok(queued)
    }

    /// Queues, for the watched folder at `root`: files that are new or whose size or mtime
    /// changed, and stored documents whose file is gone or now left out. Cheap when nothing
    /// changed (a walk and a stat per file, no reads).
    pub fn reconcile_source(&self, root: &str) -> Result<usize> {
        let Some((src, root_path)) = self.source_containing(Path::new(root))? else {
            return Ok(0);
        };
        if self.fs.metadata(&root_path).is_err() {
            // Unmounted or disconnected: nothing to compare with (documents are kept).
            return Ok(0);
        }
        let owner = src.owner.clone().unwrap_or_else(|| "default".into());
        let matcher = SourceRules::from_json(&src.rules).compile(&root_path)?;
        let stored: HashMap<String, (u64, Option<i64>, bool)> = self
            .store()
            .documents(Some(root))?
            .into_iter()
            // Attachments have no file of their own: they follow their mail.
            .filter(|d| d.parent.is_none())
            .map(|d| (d.path, (d.size, d.mtime_ns, d.error_code.is_some())))
            .collect();
        let mut seen: HashSet<String> = HashSet::new();
        let mut changed: Vec<String> = Vec::new();
        for entry in matcher.walk(self.fs.as_ref()) {
            let Ok(file) = entry else { continue };
            if !crate::ingest::has_supported_extension(&file) {
                continue;
            }
            let path = file.display().to_string();
            let Ok(meta) = self.fs.metadata(&file) else {
                continue;
            };
            let same = stored
                .get(&path)
                .is_some_and(|(size, mtime, _)| *size == meta.size && *mtime == meta.mtime_ns);
            // A file that failed keeps its failure until it changes: never retried forever.
            if !same {
                changed.push(path.clone());
            }
            seen.insert(path);
        }
        changed.extend(stored.keys().filter(|p| !seen.contains(*p)).cloned());
        let jobs: Vec<NewJob<'_>> = changed
            .iter()
            .map(|p| NewJob {
                path: p,
                owner: &owner,
                priority: priority::RECONCILE,
            })
            .collect();
        Ok(self.store().enqueue(&jobs)?)
    }

    // ----- queueing work ------------------------------------------------------------------

    /// Queues paths (files or folders) for ingestion on behalf of `ctx`, ahead of background
    /// work: what a drop on the window does when the app is running. Returns how many were
    /// newly queued.
    pub fn enqueue(&self, ctx: &RequestContext, paths: &[PathBuf]) -> Result<usize> {
        let access = self.authorize(ctx)?;
        let mut resolved = Vec::new();
        for p in paths {
            let path = self.fs.canonicalize(p).map_err(|e| EngineError::Io {
                path: p.display().to_string(),
                source: e,
            })?;
            resolved.push(path.display().to_string());
        }
        let owner = access.ctx.user.as_str();
        let jobs: Vec<NewJob<'_>> = resolved
            .iter()
            .map(|p| NewJob {
                path: p,
                owner,
                priority: priority::DROPPED,
            })
            .collect();
        let n = self.store().enqueue(&jobs)?;
        self.audit_write(&access, "enqueue", &resolved.join(", "), true)?;
        Ok(n)
    }

    /// The managed uploads folder of `user`: dropped files are copied here, so the
    /// knowledge base keeps them whatever happens to the originals.
    pub fn uploads_dir(&self, user: &UserId) -> PathBuf {
        self.paths.account.join("uploads").join(user.as_str())
    }

    /// Copies files and folders into `ctx`'s uploads folder (watched, private to them until
    /// shared) and queues them first. Returns the copies' paths.
    pub fn upload(&self, ctx: &RequestContext, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
        self.upload_to(ctx, paths, &UploadTarget::Uploads { collection: None })
    }

    /// Where `ctx` may put dropped files: their uploads folder, its collections (sub-folders),
    /// and the watched folders they may write to (their own; every one for administrators).
    pub fn upload_targets(&self, ctx: &RequestContext) -> Result<Vec<UploadDestination>> {
        let access = self.authorize(ctx)?;
        let uploads = self.uploads_dir(&access.ctx.user);
        let uploads = self.fs.canonicalize(&uploads).unwrap_or(uploads);
        let mut targets = vec![UploadDestination {
            kind: UploadKind::Uploads,
            name: String::new(),
            path: uploads.display().to_string(),
        }];
        let mut collections: Vec<UploadDestination> = std::fs::read_dir(&uploads)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_owned();
                valid_collection_name(&name).ok()?;
                Some(UploadDestination {
                    kind: UploadKind::Collection,
                    path: e.path().display().to_string(),
                    name,
                })
            })
            .collect();
        collections.sort_by(|a, b| a.name.cmp(&b.name));
        targets.extend(collections);
        let uploads_root = self.paths.account.join("uploads");
        let uploads_root = self.fs.canonicalize(&uploads_root).unwrap_or(uploads_root);
        let mut watched: Vec<UploadDestination> = self
            .watched_folders_of(Some(&access))?
            .into_iter()
            // Other users' uploads folders are theirs alone, even for administrators' drops.
            .filter(|w| !Path::new(&w.path).starts_with(&uploads_root))
            .filter(|w| self.may_write(&access, w.owner.as_deref()))
            .map(|w| UploadDestination {
                kind: UploadKind::Watched,
                name: Path::new(&w.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| w.path.clone()),
                path: w.path,
            })
            .collect();
        watched.sort_by(|a, b| a.path.cmp(&b.path));
        targets.extend(watched);
        Ok(targets)
    }

    /// Copies files and folders into `target` (see [`Engine::upload_targets`]) and queues
    /// them first. Returns the copies' paths. A new collection is created on first use.
    pub fn upload_to(
        &self,
        ctx: &RequestContext,
        paths: &[PathBuf],
        target: &UploadTarget,
    ) -> Result<Vec<PathBuf>> {
        let access = self.authorize(ctx)?;
        let io = |p: &Path| {
            let path = p.display().to_string();
            move |source| EngineError::Io { path, source }
        };
        let dir = match target {
            UploadTarget::Uploads { collection } => {
                let uploads = self.uploads_dir(&access.ctx.user);
                std::fs::create_dir_all(&uploads).map_err(io(&uploads))?;
                let uploads = self.fs.canonicalize(&uploads).map_err(io(&uploads))?;
                let watched = self
                    .watched_folders_of(None)?
                    .iter()
                    .any(|w| Path::new(&w.path) == uploads);
                if !watched {
                    self.watch_folder(ctx, &uploads, SourceRules::default())?;
                }
                match collection.as_deref().map(str::trim) {
                    None | Some("") => uploads,
                    Some(name) => {
                        valid_collection_name(name)?;
                        let dir = uploads.join(name);
                        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
                        dir
                    }
                }
            }
            UploadTarget::Folder { path } => {
                let wanted = self.fs.canonicalize(path).map_err(io(path))?;
                let target = self
                    .upload_targets(ctx)?
                    .into_iter()
                    .find(|t| t.kind == UploadKind::Watched && Path::new(&t.path) == wanted)
                    .ok_or_else(|| {
                        EngineError::Forbidden(format!(
                            "{} is not a watched folder you may add files to",
                            path.display()
                        ))
                    })?;
                PathBuf::from(target.path)
            }
        };
        let mut copies = Vec::new();
        for p in paths {
            let name = p.file_name().ok_or_else(|| {
                EngineError::InvalidInput(format!("{} has no file name", p.display()))
            })?;
            let source = self.fs.canonicalize(p).map_err(io(p))?;
            if dir.starts_with(&source) {
                return Err(EngineError::InvalidInput(format!(
                    "{} cannot be copied into itself",
                    p.display()
                )));
            }
            let target = free_name(&dir.join(name));
            copy_recursively(p, &target)?;
            copies.push(target);
        }
        self.enqueue(ctx, &copies)?;
        Ok(copies)
    }

    // ----- the queue ----------------------------------------------------------------------

    /// The queue's counts and recent jobs: every job for administrators, their own for users.
    pub fn queue(&self, ctx: &RequestContext, limit: usize) -> Result<QueueView> {
        let access = self.authorize(ctx)?;
        let store = self.store();
        let mut jobs = store.jobs(None, if access.is_admin() { limit } else { 10_000 })?;
        if !access.is_admin() {
            jobs.retain(|j| j.owner == access.ctx.user.as_str());
            jobs.truncate(limit);
        }
        Ok(QueueView {
            counts: store.queue_counts()?,
            jobs,
        })
    }

    /// Pauses or resumes background processing (administrators; kept across restarts).
    pub fn set_queue_paused(&self, ctx: &RequestContext, paused: bool) -> Result<()> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "pause or resume ingestion")?;
        self.store().set_queue_paused(paused)?;
        self.audit_write(
            &access,
            if paused { "pause" } else { "resume" },
            "queue",
            true,
        )
    }

    /// Cancels queued jobs at or under `prefix` (all for `None`); administrators only.
    pub fn cancel_jobs(&self, ctx: &RequestContext, prefix: Option<&Path>) -> Result<usize> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "cancel ingestion jobs")?;
        let prefix = prefix.map(|p| self.stored_path(p).display().to_string());
        let n = self.store().cancel_jobs(prefix.as_deref())?;
        self.audit_write(&access, "cancel", prefix.as_deref().unwrap_or("all"), true)?;
        Ok(n)
    }

    /// Queues failed jobs at or under `prefix` again; administrators only.
    pub fn retry_failed(&self, ctx: &RequestContext, prefix: Option<&Path>) -> Result<usize> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "retry failed jobs")?;
        let prefix = prefix.map(|p| self.stored_path(p).display().to_string());
        let n = self.store().retry_failed_jobs(prefix.as_deref())?;
        self.audit_write(&access, "retry", prefix.as_deref().unwrap_or("all"), true)?;
        Ok(n)
    }

    /// Fails unless `ctx` may run the folder watcher and process the queue (an administrator:
    /// the queue holds everyone's jobs, each processed as its owner).
    pub fn check_watch_permission(&self, ctx: &RequestContext) -> Result<()> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "run the folder watcher")
    }

    /// Puts jobs a crash left running back in the queue (call once at start-up).
    pub fn recover_queue(&self) -> Result<usize> {
        Ok(self.store().requeue_running()?)
    }

    /// Processes up to one batch of due jobs, each on behalf of its owner, in sync mode.
    /// Returns what it did; `jobs == 0` means nothing was due (or the queue is paused).
    ///
    /// This is the watcher's worker step, a system operation: callers check that the
    /// principal running the watcher may (see `WatchService::start`).
    pub fn process_queue(
        &self,
        options: &ProcessOptions,
        events: &mut dyn FnMut(&IngestEvent),
    ) -> Result<BatchReport> {
        let mut report = BatchReport::default();
        if self.store().queue_paused()? {
            return Ok(report);
        }
        let jobs = self.store().claim_jobs(options.batch.max(1))?;
        report.jobs = jobs.len();
        if jobs.is_empty() {
            return Ok(report);
        }
        // One ingestion run per owner (owner-only writes are checked per run).
        let mut by_owner: Vec<(String, Vec<JobRecord>)> = Vec::new();
        for job in jobs {
            match by_owner.iter_mut().find(|(o, _)| *o == job.owner) {
                Some((_, list)) => list.push(job),
                None => by_owner.push((job.owner.clone(), vec![job])),
            }
        }
        for (owner, jobs) in by_owner {
            let outcomes = match self
                .job_context(&owner)
                .and_then(|ctx| self.authorize(&ctx))
            {
                Ok(access) => {
                    let inputs: Vec<PathBuf> =
                        jobs.iter().map(|j| PathBuf::from(&j.path)).collect();
                    let ingest = IngestOptions {
                        force: false,
                        sync: true,
                        settle: Some(options.settle),
                        cancel: options.cancel.clone(),
                    };
                    let mut outcomes: Vec<(String, FileOutcome)> = Vec::new();
                    let run = self.ingest_as(&access, &inputs, &ingest, &mut |e| {
                        if let IngestEvent::File { path, outcome, .. } = e {
                            outcomes.push((path.clone(), outcome.clone()));
                        }
                        events(e);
                    });
                    match run {
                        Ok(r) => {
                            report.embedded += r.embedded;
                            Ok(outcomes)
                        }
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            };
            match outcomes {
                Ok(outcomes) => {
                    report.files += outcomes
                        .iter()
                        .filter(|(_, o)| !matches!(o, FileOutcome::Busy { .. }))
                        .count();
                    for job in &jobs {
                        self.settle_job(job, &outcomes, options, &mut report)?;
                    }
                }
                Err(e) if is_transient(&e) => {
                    for job in &jobs {
                        self.retry_later(job, &e.to_string(), &mut report)?;
                    }
                }
                Err(e) => {
                    // The owner is gone or lost the right: nothing to retry.
                    let reason = e.to_string();
                    for job in &jobs {
                        self.store().finish_job(
                            job.id,
                            JobState::Failed,
                            Some("failed"),
                            Some(&reason),
                        )?;
                        report.failed += 1;
                    }
                }
            }
        }
        self.store().prune_jobs(KEEP_FINISHED_JOBS)?;
        Ok(report)
    }

    /// Processes jobs until none is queued, sleeping until retry times come due — for
    /// `knowhub watch --once`, tests and benchmarks. Stops at `deadline` if one is given (a
    /// file that never stops changing would otherwise keep it waiting).
    pub fn drain_queue(
        &self,
        options: &ProcessOptions,
        deadline: Option<Duration>,
        events: &mut dyn FnMut(&IngestEvent),
    ) -> Result<BatchReport> {
        let started = std::time::Instant::now();
        let mut total = BatchReport::default();
        loop {
            let r = self.process_queue(options, events)?;
            total.jobs += r.jobs;
            total.done += r.done;
            total.failed += r.failed;
            total.requeued += r.requeued;
            total.files += r.files;
            total.embedded += r.embedded;
            if r.jobs > 0 {
                continue;
            }
            let counts = self.store().queue_counts()?;
            if counts.paused || counts.queued == 0 {
                return Ok(total);
            }
            if deadline.is_some_and(|d| started.elapsed() >= d) {
                return Ok(total);
            }
            let due = self.store().next_job_time()?.unwrap_or(0);
            let wait = (due - now_ms()).clamp(10, 1_000) as u64;
            std::thread::sleep(Duration::from_millis(wait));
        }
    }

    /// The context a job runs under: its owner, with their stored role (the reserved
    /// `default` and `root` principals are ROOT).
    fn job_context(&self, owner: &str) -> Result<RequestContext> {
        let user = UserId::new(owner).map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        let role = if matches!(owner, "default" | "root") {
            Role::Root
        } else {
            Role::User
        };
        Ok(RequestContext {
            account: self.account.clone(),
            user,
            agent: None,
            role,
            session: None,
            trace_id: crate::permissions::new_trace_id(),
        })
    }

    /// Closes or re-queues one job from the outcomes of its run.
    fn settle_job(
        &self,
        job: &JobRecord,
        outcomes: &[(String, FileOutcome)],
        options: &ProcessOptions,
        report: &mut BatchReport,
    ) -> Result<()> {
        let dir = format!("{}{}", job.path, std::path::MAIN_SEPARATOR);
        let mine: Vec<&FileOutcome> = outcomes
            .iter()
            .filter(|(p, _)| *p == job.path || p.starts_with(&dir))
            .map(|(_, o)| o)
            .collect();
        if mine.iter().any(|o| matches!(o, FileOutcome::Busy { .. })) {
            let at = now_ms() + options.settle.as_millis() as i64;
            self.store()
                .requeue_job(job.id, at, false, Some("still being written"))?;
            report.requeued += 1;
            return Ok(());
        }
        let transient = mine.iter().find_map(|o| match o {
            FileOutcome::Failed { code, reason } if code == "io" && reason != "not found" => {
                Some(reason.clone())
            }
            _ => None,
        });
        if let Some(reason) = transient {
            return self.retry_later(job, &reason, report);
        }
        let cancelled = options
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed));
        if mine.is_empty() && cancelled {
            self.store().requeue_job(job.id, 0, false, None)?;
            report.requeued += 1;
            return Ok(());
        }
        let failure = mine.iter().find_map(|o| match o {
            FileOutcome::Failed { reason, .. } => Some(reason.clone()),
            _ => None,
        });
        let outcome = match mine.as_slice() {
            [] => "nothing to do".to_string(),
            [one] => one.label().to_string(),
            many => format!("{} files", many.len()),
        };
        match failure {
            // A folder job with some failed files is done: the files' failures are recorded.
            Some(reason) if mine.len() == 1 => {
                self.store()
                    .finish_job(job.id, JobState::Failed, Some(&outcome), Some(&reason))?;
                report.failed += 1;
            }
            _ => {
                self.store()
                    .finish_job(job.id, JobState::Done, Some(&outcome), None)?;
                report.done += 1;
            }
        }
        Ok(())
    }

    /// Retries a job after a transient error with exponential backoff, or fails it for good
    /// once it has used its attempts.
    fn retry_later(&self, job: &JobRecord, reason: &str, report: &mut BatchReport) -> Result<()> {
        if job.attempts + 1 >= MAX_ATTEMPTS {
            let reason = format!("{reason} (gave up after {MAX_ATTEMPTS} attempts)");
            self.store()
                .finish_job(job.id, JobState::Failed, Some("failed"), Some(&reason))?;
            report.failed += 1;
        } else {
            let at = now_ms() + backoff(job.attempts).as_millis() as i64;
            self.store().requeue_job(job.id, at, true, Some(reason))?;
            report.requeued += 1;
        }
        Ok(())
    }

    /// Fails with [`EngineError::Forbidden`] unless `ctx` administers this account (or is
    /// ROOT), naming `what` was refused. For front ends that offer something to administrators
    /// only although the engine's own rule is wider: the HTTP API's ingest and watch, whose
    /// callers name paths on the server (on a desktop anyone may read their own disk; a remote
    /// user must not make the server read its files for them), and its folder tree with every
    /// folder's ACL.
    pub fn require_administrator(&self, ctx: &RequestContext, what: &str) -> Result<()> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, what)
    }
}

/// 2 s, 4 s, 8 s, … capped at 5 minutes.
pub fn backoff(attempts: u32) -> Duration {
    Duration::from_secs((2u64 << attempts.min(8)).min(300))
}

/// Errors worth retrying: the disk or the database was busy, not the input bad.
fn is_transient(e: &EngineError) -> bool {
    matches!(
        e,
        EngineError::Busy | EngineError::Io { .. } | EngineError::Store(_)
    )
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `path`, or `name (2).ext`, `name (3).ext`, … — the first that does not exist yet.
fn free_name(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let parent = path.parent().unwrap_or(Path::new(""));
    (2..)
        .map(|n| parent.join(format!("{stem} ({n}){ext}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.to_path_buf())
}

/// Copies a file, or a folder with everything in it (symlinks are not followed out).
fn copy_recursively(from: &Path, to: &Path) -> Result<()> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| EngineError::Io { path, source }
    };
    let meta = std::fs::symlink_metadata(from).map_err(io(from))?;
    if meta.is_dir() {
        std::fs::create_dir_all(to).map_err(io(to))?;
        for entry in std::fs::read_dir(from).map_err(io(from))? {
            let entry = entry.map_err(io(from))?;
            copy_recursively(&entry.path(), &to.join(entry.file_name()))?;
        }
    } else if meta.is_file() {
        // Copy to a temporary name, then rename: the watcher never sees half a file.
        let tmp = to.with_file_name(format!(
            ".{}.part",
            to.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ));
        std::fs::copy(from, &tmp).map_err(io(from))?;
        std::fs::rename(&tmp, to).map_err(io(to))?;
    }
    Ok(())
}
