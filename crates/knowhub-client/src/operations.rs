//! The server's own folders and its ingestion queue: watched folders, ingesting and removing
//! documents by their paths on the server, the queue's jobs, and the audit trail. The server
//! checks the caller's role on every call (watching and ingesting need an administrator;
//! removing needs the document's owner or an administrator).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{Client, Result, encode, to_json};

/// How long the server may take to answer an ingest: it reads the files before it answers.
const INGEST_ANSWER_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// Which files of a watched folder are documents: include/exclude globs (gitignore syntax,
/// relative to the folder) and a size limit.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FolderRules {
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub max_file_bytes: Option<u64>,
}

/// A folder the server watches.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WatchedFolder {
    pub path: String,
    /// The user who added it.
    pub owner: Option<String>,
    pub rules: FolderRules,
    pub documents: u64,
}

#[derive(Deserialize)]
struct WatchList {
    watches: Vec<WatchedFolder>,
}

/// Totals of an ingest run on the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IngestTotals {
    pub files: usize,
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub no_text: usize,
    pub failed: usize,
    pub skipped: usize,
    pub removed: usize,
    pub moved: usize,
    pub busy: usize,
    pub chunks: usize,
    pub elapsed_ms: u64,
}

/// One file of an ingest run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IngestedFile {
    pub path: String,
    /// `added`, `updated`, `unchanged`, `no_text`, `failed`, `skipped`, `removed`, `moved` or
    /// `busy`.
    pub outcome: String,
    pub reason: Option<String>,
}

/// What an ingest on the server did: read now (`ingested`), or `queued` for the process that
/// holds the server's index.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IngestReport {
    pub status: String,
    pub totals: Option<IngestTotals>,
    /// Each file's outcome (the first 1,000).
    pub files: Vec<IngestedFile>,
    pub files_not_listed: usize,
    /// When queued: how many paths were newly queued.
    pub queued: usize,
}

/// Jobs of the ingestion queue per state.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct QueueCounts {
    pub queued: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Queued jobs waiting for a retry time or for their file to stop changing.
    pub waiting: u64,
    pub paused: bool,
}

/// One ingestion job.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Job {
    pub id: i64,
    pub path: String,
    pub owner: String,
    /// `queued`, `running`, `done`, `failed` or `cancelled`.
    pub state: String,
    pub attempts: u32,
    pub outcome: Option<String>,
    pub error: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// The ingestion queue: counts and the most recent jobs (every one for administrators, their
/// own for users).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct JobQueue {
    pub counts: QueueCounts,
    pub jobs: Vec<Job>,
}

#[derive(Deserialize)]
struct Removed {
    removed: usize,
}

#[derive(Deserialize)]
struct Paused {
    paused: bool,
}

#[derive(Deserialize)]
struct JobsChanged {
    jobs: usize,
}

#[derive(Deserialize)]
struct AuditList {
    records: Vec<serde_json::Value>,
}

impl Client {
    // ----- folders on the server --------------------------------------------------------

    /// The watched folders (every one for administrators, their own for users).
    pub fn watches(&self) -> Result<Vec<WatchedFolder>> {
        let response = self.send("GET", "/api/v1/watches", None)?;
        Ok(self.json::<WatchList>(response)?.watches)
    }

    /// Watches a folder on the server, or changes its rules (administrators); its files are
    /// read by the server's queue worker.
    pub fn watch(&self, path: &str, rules: Option<&FolderRules>) -> Result<WatchedFolder> {
        let body = to_json(&serde_json::json!({ "path": path, "rules": rules }))?;
        let response = self.send("POST", "/api/v1/watches", Some(body))?;
        self.json(response)
    }

    /// Stops watching a folder; its documents stay.
    pub fn unwatch(&self, path: &str) -> Result<()> {
        let response = self.send(
            "DELETE",
            &format!("/api/v1/watches?path={}", encode(path)),
            None,
        )?;
        self.json::<serde_json::Value>(response).map(drop)
    }

    /// Reads files and folders on the server now (administrators); the answer comes when they
    /// are searchable (or queued, when another process holds the server's index).
    pub fn ingest(&self, paths: &[String], force: bool) -> Result<IngestReport> {
        let body = to_json(&serde_json::json!({ "paths": paths, "force": force }))?;
        let response =
            self.send_waiting("POST", "/api/v1/ingest", Some(body), INGEST_ANSWER_TIMEOUT)?;
        self.json(response)
    }

    /// Removes documents (files, or everything stored under folders) by their server paths;
    /// returns how many. The files on the server's disk stay.
    pub fn remove(&self, paths: &[String]) -> Result<usize> {
        let body = to_json(&serde_json::json!({ "paths": paths }))?;
        let response = self.send("POST", "/api/v1/remove", Some(body))?;
        Ok(self.json::<Removed>(response)?.removed)
    }

    // ----- the queue ----------------------------------------------------------------------

    /// The ingestion queue with at most `limit` recent jobs.
    pub fn queue(&self, limit: usize) -> Result<JobQueue> {
        let response = self.send("GET", &format!("/api/v1/queue?limit={limit}"), None)?;
        self.json(response)
    }

    /// Pauses (or resumes) background ingestion (administrators); returns whether it is
    /// paused now.
    pub fn set_queue_paused(&self, paused: bool) -> Result<bool> {
        let path = if paused {
            "/api/v1/queue/pause"
        } else {
            "/api/v1/queue/resume"
        };
        let response = self.send("POST", path, None)?;
        Ok(self.json::<Paused>(response)?.paused)
    }

    /// Queues failed jobs again, all or those at or under `path` (administrators).
    pub fn retry_failed(&self, path: Option<&str>) -> Result<usize> {
        self.jobs_call("/api/v1/queue/retry-failed", path)
    }

    /// Cancels queued jobs, all or those at or under `path` (administrators).
    pub fn cancel_jobs(&self, path: Option<&str>) -> Result<usize> {
        self.jobs_call("/api/v1/queue/cancel", path)
    }

    fn jobs_call(&self, route: &str, path: Option<&str>) -> Result<usize> {
        let url = match path {
            Some(p) => format!("{route}?path={}", encode(p)),
            None => route.to_owned(),
        };
        let response = self.send("POST", &url, None)?;
        Ok(self.json::<JobsChanged>(response)?.jobs)
    }

    // ----- the audit trail ------------------------------------------------------------------

    /// The audit trail, newest first (administrators: the account's, or `user`'s; users their
    /// own), each record as the server writes it.
    pub fn audit(&self, limit: usize, user: Option<&str>) -> Result<Vec<serde_json::Value>> {
        let mut url = format!("/api/v1/audit?limit={limit}");
        if let Some(u) = user {
            url.push_str(&format!("&user={}", encode(u)));
        }
        let response = self.send("GET", &url, None)?;
        Ok(self.json::<AuditList>(response)?.records)
    }
}
