//! The background service: OS file events → queued jobs → ingestion, with a progress stream.
//!
//! Two threads. The *watcher* holds a `notify-debouncer-full` debouncer over every watched
//! folder (the set is re-read from the store every `poll`, so a folder added from another
//! process is picked up), turns events into jobs (renames give both paths; a whole deleted
//! folder gives one path; an overflowed event buffer triggers a reconcile), and wakes the
//! worker. The *worker* reconciles every watched folder at start-up and every
//! `reconcile_every` (catching what happened while nothing was watching, or what the OS did not
//! report), then processes the queue batch by batch. Subscribers receive [`WatchEvent`]s.
//!
//! Nothing here holds state that matters across a crash: the queue and the documents are in
//! the store, so killing the process at any moment loses nothing (see `tests/watch.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};
use knowhub_store::NewJob;
use notify_debouncer_full::notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use serde::Serialize;

use crate::ingest::{FileOutcome, IngestEvent};
use crate::queue::{ProcessOptions, now_ms, priority};
use crate::rules::{IGNORE_FILE, RuleMatcher};
use crate::{Engine, EngineError, RequestContext, Result};

/// How the service behaves. The defaults suit a desktop app.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Events for one path within this window are merged.
    pub debounce: Duration,
    /// A file must be unchanged this long before it is read.
    pub settle: Duration,
    /// Jobs per batch (pause and cancel take effect between batches).
    pub batch: usize,
    /// How often every watched folder is compared with the store in full.
    pub reconcile_every: Duration,
    /// How often the set of watched folders and the queue are re-read from the store.
    pub poll: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            debounce: Duration::from_millis(500),
            settle: Duration::from_millis(1_000),
            batch: 32,
            reconcile_every: Duration::from_secs(15 * 60),
            poll: Duration::from_secs(2),
        }
    }
}

/// Progress of the queue, for a progress bar.
#[derive(Debug, Clone, Default, Serialize)]
pub struct QueueProgress {
    /// Jobs waiting to run (including those waiting for a retry time).
    pub queued: u64,
    pub running: u64,
    /// Failed jobs in the queue's memory.
    pub failed: u64,
    /// Files processed since the service started.
    pub done: u64,
    pub paused: bool,
    /// The file being processed.
    pub current: Option<String>,
    /// How far OCR got in `current`, while a long scan is being read.
    pub reading: Option<PagesRead>,
    /// Estimated seconds until the queue is empty, from this session's rate.
    pub eta_secs: Option<u64>,
}

/// Pages of a scan OCR has read so far, of its pages to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PagesRead {
    pub done: u32,
    pub pages: u32,
}

/// What the service reports to subscribers.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WatchEvent {
    /// The folders being watched now.
    Watching {
        folders: Vec<String>,
    },
    /// A folder could not be watched (it is still reconciled periodically).
    WatchFailed {
        folder: String,
        reason: String,
    },
    /// A reconcile scan finished and queued this many paths.
    Reconciled {
        queued: usize,
        elapsed_ms: u64,
    },
    /// One file was processed.
    File {
        path: String,
        outcome: FileOutcome,
    },
    /// Chunks embedded so far in the current batch.
    Embedded {
        done: usize,
        total: usize,
    },
    Progress(QueueProgress),
    /// The queue is empty (or paused) and everything due is done.
    Idle,
    /// A scheduled crawl of a web source finished.
    Crawled {
        url: String,
        summary: crate::CrawlSummary,
    },
    /// Something went wrong that the service will retry on its own.
    Warning {
        message: String,
    },
}

struct Shared {
    engine: Arc<Engine>,
    options: WatchOptions,
    stop: AtomicBool,
    /// Stops reading further files of the current batch.
    cancel: Arc<AtomicBool>,
    wake: Sender<()>,
    subscribers: Mutex<Vec<Sender<WatchEvent>>>,
}

impl Shared {
    fn emit(&self, event: WatchEvent) {
        let mut subs = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        subs.retain(|s| s.send(event.clone()).is_ok());
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The running watcher and worker. Dropping it (or [`WatchService::stop`]) stops both after
/// the file in progress.
pub struct WatchService {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for WatchService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchService").finish_non_exhaustive()
    }
}

impl WatchService {
    /// Starts watching every watched folder of the engine's account and processing the queue.
    /// `ctx` must be an administrator (the service processes everyone's jobs, each as its
    /// owner), and this process must hold the index writer.
    pub fn start(
        engine: Arc<Engine>,
        ctx: &RequestContext,
        options: WatchOptions,
    ) -> Result<WatchService> {
        engine.check_watch_permission(ctx)?;
        if engine.is_read_only() {
            return Err(EngineError::Busy);
        }
        engine.recover_queue()?;
        let (wake, wake_rx) = bounded(1);
        let shared = Arc::new(Shared {
            engine,
            options,
            stop: AtomicBool::new(false),
            cancel: Arc::new(AtomicBool::new(false)),
            wake,
            subscribers: Mutex::new(Vec::new()),
        });
        let watcher = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("knowhub-watcher".into())
                .spawn(move || watcher_loop(&shared))
                .map_err(|e| EngineError::Io {
                    path: "watcher thread".into(),
                    source: e,
                })?
        };
        let worker = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("knowhub-ingest".into())
                .spawn(move || worker_loop(&shared, &wake_rx))
                .map_err(|e| EngineError::Io {
                    path: "ingest thread".into(),
                    source: e,
                })?
        };
        let crawler = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("knowhub-crawl".into())
                .spawn(move || crawl_loop(&shared))
                .map_err(|e| EngineError::Io {
                    path: "crawl thread".into(),
                    source: e,
                })?
        };
        Ok(WatchService {
            shared,
            threads: vec![watcher, worker, crawler],
        })
    }

    /// A stream of events from now on.
    pub fn subscribe(&self) -> Receiver<WatchEvent> {
        let (tx, rx) = unbounded();
        self.shared
            .subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }

    /// Asks the worker to look at the queue now (after a drop, a resume, a retry).
    pub fn wake(&self) {
        let _ = self.shared.wake.try_send(());
    }

    /// Stops reading further files of the batch in progress (after `cancel_jobs`).
    pub fn cancel_current(&self) {
        self.shared.cancel.store(true, Ordering::Relaxed);
        self.wake();
    }

    /// Stops both threads after the file in progress and waits for them.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.cancel.store(true, Ordering::Relaxed);
        let _ = self.shared.wake.try_send(());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for WatchService {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// One watched folder as the watcher thread knows it.
struct Watched {
    owner: String,
    matcher: RuleMatcher,
}

fn watcher_loop(shared: &Shared) {
    let engine = &shared.engine;
    let (tx, rx) = unbounded::<DebounceEventResult>();
    let mut debouncer = match new_debouncer(shared.options.debounce, None, move |res| {
        let _ = tx.send(res);
    }) {
        Ok(d) => d,
        Err(e) => {
            shared.emit(WatchEvent::Warning {
                message: format!(
                    "file events are unavailable ({e}); changes are found by periodic scans"
                ),
            });
            return;
        }
    };
    let mut watched: HashMap<PathBuf, Watched> = HashMap::new();
    // Folders that could not be watched, and when to try again.
    let mut failed: HashMap<PathBuf, Instant> = HashMap::new();
    let mut last_refresh: Option<Instant> = None;
    while !shared.stopped() {
        if last_refresh.is_none_or(|t| t.elapsed() >= shared.options.poll) {
            last_refresh = Some(Instant::now());
            refresh_watches(shared, &mut debouncer, &mut watched, &mut failed);
        }
        match rx.recv_timeout(shared.options.poll.min(Duration::from_millis(500))) {
            Ok(Ok(events)) => {
                let mut paths: Vec<PathBuf> = Vec::new();
                let mut rescan = false;
                for ev in events {
                    if ev.need_rescan() {
                        rescan = true;
                    }
                    if matches!(ev.kind, EventKind::Access(_)) {
                        continue;
                    }
                    paths.extend(ev.paths.iter().cloned());
                }
                if rescan {
                    reconcile(shared);
                }
                queue_paths(shared, &watched, paths);
            }
            Ok(Err(errors)) => {
                for e in errors {
                    shared.emit(WatchEvent::Warning {
                        message: format!("file events: {e}"),
                    });
                }
                // Something may have been missed: compare everything.
                reconcile(shared);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = engine; // the debouncer stops when dropped
}

/// Brings the debouncer's watches in line with the watched folders in the store.
fn refresh_watches(
    shared: &Shared,
    debouncer: &mut notify_debouncer_full::Debouncer<
        notify_debouncer_full::notify::RecommendedWatcher,
        notify_debouncer_full::RecommendedCache,
    >,
    watched: &mut HashMap<PathBuf, Watched>,
    failed: &mut HashMap<PathBuf, Instant>,
) {
    let folders = match shared.engine.watched_folders_of(None) {
        Ok(f) => f,
        Err(e) => {
            shared.emit(WatchEvent::Warning {
                message: format!("cannot read the watched folders: {e}"),
            });
            return;
        }
    };
    let wanted: HashMap<PathBuf, _> = folders
        .into_iter()
        .map(|f| (PathBuf::from(&f.path), f))
        .collect();
    let mut changed = false;
    watched.retain(|path, _| {
        let keep = wanted.contains_key(path);
        if !keep {
            let _ = debouncer.unwatch(path);
            changed = true;
        }
        keep
    });
    for (path, folder) in wanted {
        let Ok(matcher) = folder.rules.compile(&path) else {
            continue;
        };
        if let Some(w) = watched.get_mut(&path) {
            // Rules or owner may have changed.
            w.matcher = matcher;
            w.owner = folder.owner.unwrap_or_else(|| "default".into());
            continue;
        }
        if failed
            .get(&path)
            .is_some_and(|t| t.elapsed() < Duration::from_secs(30))
        {
            continue;
        }
        match debouncer.watch(&path, RecursiveMode::Recursive) {
            Ok(()) => {
                failed.remove(&path);
                watched.insert(
                    path.clone(),
                    Watched {
                        owner: folder.owner.unwrap_or_else(|| "default".into()),
                        matcher,
                    },
                );
                changed = true;
                // Whatever happened before the watch started is found by a reconcile.
                if let Err(e) = shared.engine.reconcile_source(&path.display().to_string()) {
                    shared.emit(WatchEvent::Warning {
                        message: format!("reconcile {}: {e}", path.display()),
                    });
                }
                let _ = shared.wake.try_send(());
            }
            Err(e) => {
                failed.insert(path.clone(), Instant::now());
                shared.emit(WatchEvent::WatchFailed {
                    folder: path.display().to_string(),
                    reason: e.to_string(),
                });
            }
        }
    }
    if changed {
        let mut folders: Vec<String> = watched.keys().map(|p| p.display().to_string()).collect();
        folders.sort();
        shared.emit(WatchEvent::Watching { folders });
    }
}

/// Turns event paths into jobs for the folders that contain them.
fn queue_paths(shared: &Shared, watched: &HashMap<PathBuf, Watched>, paths: Vec<PathBuf>) {
    let fs = shared.engine.fs.as_ref();
    let mut jobs: Vec<(String, String)> = Vec::new();
    let mut reconcile_roots: Vec<PathBuf> = Vec::new();
    for path in paths {
        // The nearest watched folder containing the path.
        let Some((root, w)) = watched
            .iter()
            .filter(|(root, _)| path.starts_with(root))
            .max_by_key(|(root, _)| root.components().count())
        else {
            continue;
        };
        if path.file_name().is_some_and(|n| n == IGNORE_FILE) {
            // New ignore rules: what is in or out may have changed anywhere below.
            reconcile_roots.push(root.clone());
            continue;
        }
        let is_dir = fs.metadata(&path).is_ok_and(|m| m.is_dir);
        if &path == root || w.matcher.admits(fs, &path, is_dir) {
            jobs.push((path.display().to_string(), w.owner.clone()));
        }
    }
    jobs.sort();
    jobs.dedup();
    if !jobs.is_empty() {
        let new: Vec<NewJob<'_>> = jobs
            .iter()
            .map(|(path, owner)| NewJob {
                path,
                owner,
                priority: priority::EVENT,
            })
            .collect();
        if let Err(e) = shared.engine.store().enqueue(&new) {
            shared.emit(WatchEvent::Warning {
                message: format!("cannot queue changed files: {e}"),
            });
        }
    }
    for root in reconcile_roots {
        let _ = shared.engine.reconcile_source(&root.display().to_string());
    }
    let _ = shared.wake.try_send(());
}

fn reconcile(shared: &Shared) -> usize {
    let started = Instant::now();
    match shared.engine.reconcile_all() {
        Ok(queued) => {
            shared.emit(WatchEvent::Reconciled {
                queued,
                elapsed_ms: started.elapsed().as_millis() as u64,
            });
            queued
        }
        Err(e) => {
            shared.emit(WatchEvent::Warning {
                message: format!("reconcile: {e}"),
            });
            0
        }
    }
}

fn worker_loop(shared: &Shared, wake: &Receiver<()>) {
    let engine = &shared.engine;
    reconcile(shared);
    let mut last_reconcile = Instant::now();
    let mut done: u64 = 0;
    let mut busy = Duration::ZERO;
    let mut idle_reported = false;
    while !shared.stopped() {
        let options = ProcessOptions {
            batch: shared.options.batch,
            settle: shared.options.settle,
            cancel: Some(Arc::clone(&shared.cancel)),
        };
        let started = Instant::now();
        let mut current: Option<String> = None;
        let result = engine.process_queue(&options, &mut |e| match e {
            IngestEvent::File { path, outcome, .. } => {
                if !matches!(outcome, FileOutcome::Busy { .. }) {
                    done += 1;
                }
                current = Some(path.clone());
                shared.emit(WatchEvent::File {
                    path: path.clone(),
                    outcome: outcome.clone(),
                });
            }
            IngestEvent::Embedded { done, total } => shared.emit(WatchEvent::Embedded {
                done: *done,
                total: *total,
            }),
            // A long scan: the file being read says how far OCR got.
            IngestEvent::Reading {
                path,
                done: read,
                pages,
            } => emit_progress(
                shared,
                done,
                busy + started.elapsed(),
                Some(path.clone()),
                Some(PagesRead {
                    done: *read,
                    pages: *pages,
                }),
            ),
            _ => {}
        });
        shared.cancel.store(false, Ordering::Relaxed);
        match result {
            Ok(report) if report.jobs > 0 => {
                busy += started.elapsed();
                idle_reported = false;
                emit_progress(shared, done, busy, current, None);
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                shared.emit(WatchEvent::Warning {
                    message: format!("ingestion: {e}"),
                });
            }
        }
        if !idle_reported {
            emit_progress(shared, done, busy, None, None);
            shared.emit(WatchEvent::Idle);
            idle_reported = true;
        }
        if last_reconcile.elapsed() >= shared.options.reconcile_every {
            reconcile(shared);
            last_reconcile = Instant::now();
            continue;
        }
        // Sleep until woken, the next retry is due, or the next poll.
        let mut wait = shared.options.poll;
        if let Ok(Some(due)) = engine.store().next_job_time() {
            let now = now_ms();
            wait = wait.min(Duration::from_millis(due.saturating_sub(now).max(0) as u64));
        }
        let _ = wake.recv_timeout(wait.max(Duration::from_millis(20)));
    }
}

/// How often the crawl thread looks for web sources whose schedule is due.
const CRAWL_CHECK: Duration = Duration::from_secs(30);

/// Runs scheduled crawls on their own thread, so that a long crawl never holds up the files
/// users drop; each run's changes are queued and the worker woken.
fn crawl_loop(shared: &Shared) {
    while !shared.stopped() {
        match shared.engine.run_due_crawls(Some(&shared.stop)) {
            Ok(runs) => {
                for (url, result) in runs {
                    match result {
                        Ok(summary) => shared.emit(WatchEvent::Crawled { url, summary }),
                        Err(e) => shared.emit(WatchEvent::Warning {
                            message: format!("crawl of {url}: {e}"),
                        }),
                    }
                }
                let _ = shared.wake.try_send(());
            }
            Err(e) => shared.emit(WatchEvent::Warning {
                message: format!("web sources: {e}"),
            }),
        }
        // Sleep in short steps so that stopping the service is prompt.
        let started = Instant::now();
        while started.elapsed() < CRAWL_CHECK && !shared.stopped() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn emit_progress(
    shared: &Shared,
    done: u64,
    busy: Duration,
    current: Option<String>,
    reading: Option<PagesRead>,
) {
    let Ok(counts) = shared.engine.store().queue_counts() else {
        return;
    };
    let remaining = counts.queued + counts.running;
    let rate = done as f64 / busy.as_secs_f64().max(1e-3);
    let eta_secs = (remaining > 0 && done > 0).then(|| (remaining as f64 / rate).ceil() as u64);
    shared.emit(WatchEvent::Progress(QueueProgress {
        queued: counts.queued,
        running: counts.running,
        failed: counts.failed,
        done,
        paused: counts.paused,
        current,
        reading,
        eta_secs,
    }));
}
