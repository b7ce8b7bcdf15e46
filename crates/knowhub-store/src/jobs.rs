//! The persistent ingestion queue (seed 003 §7's journal/outbox) and watched-source settings.
//!
//! A job says "bring what is stored for this path in line with the disk": the path may be a
//! file (added, changed or deleted) or a folder (everything under it). Jobs are idempotent by
//! construction — processing one twice is harmless, because unchanged content is a no-op — so
//! the queue can promise *at-least-once*: a job is claimed (`running`), processed, and only
//! then marked `done`; a crash leaves it `running`, and [`Store::requeue_running`] puts it
//! back at the next start.
//!
//! At most one *queued* job exists per path (a partial unique index): a burst of events for
//! one file collapses into one job that keeps the highest priority (lowest number).

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::{DocumentId, FolderId, Result, SourceId, Store, StoreError, now_ms};

/// A job to add to the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob<'a> {
    pub path: &'a str,
    /// The user on whose behalf the path is processed (the source's owner, or who dropped it).
    pub owner: &'a str,
    /// 0 = dropped by the user just now, 1 = a watcher event, 2 = a reconcile scan.
    pub priority: i64,
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// The state stored as `name` ([`JobState::as_str`]), if it is one.
    pub fn from_name(name: &str) -> Option<JobState> {
        Some(match name {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            _ => return None,
        })
    }

    fn parse(s: &str) -> Result<JobState> {
        JobState::from_name(s).ok_or_else(|| StoreError::Corrupt(format!("job state {s:?}")))
    }
}

/// A stored job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobRecord {
    pub id: i64,
    pub path: String,
    pub owner: String,
    pub priority: i64,
    pub state: JobState,
    /// Failed attempts so far (transient errors are retried with backoff).
    pub attempts: u32,
    /// Not to be started before this time (milliseconds since the epoch).
    pub not_before_ms: i64,
    /// What processing did (`added`, `updated`, `removed`, `unchanged`, …).
    pub outcome: Option<String>,
    pub error: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

impl JobRecord {
    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(JobRecord, String)> {
        Ok((
            JobRecord {
                id: r.get(0)?,
                path: r.get(1)?,
                owner: r.get(2)?,
                priority: r.get(3)?,
                state: JobState::Queued,
                attempts: r.get::<_, i64>(5)? as u32,
                not_before_ms: r.get(6)?,
                outcome: r.get(7)?,
                error: r.get(8)?,
                created_at_ms: r.get(9)?,
                updated_at_ms: r.get(10)?,
            },
            r.get(4)?,
        ))
    }
}

const JOB_SELECT: &str = "SELECT id, path, owner, priority, state, attempts, not_before, outcome, \
                          error, created_at, updated_at FROM jobs";

/// Jobs per state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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

/// A document that moved: where it is now.
#[derive(Debug, Clone)]
pub struct MovedDocument<'a> {
    pub id: DocumentId,
    pub path: &'a str,
    pub source: SourceId,
    pub folder: Option<FolderId>,
    pub title: Option<&'a str>,
    pub size: u64,
    pub mtime_ns: Option<i64>,
}

impl Store {
    // ----- the queue ----------------------------------------------------------------------

    /// Queues jobs; a path already queued keeps one job with the higher priority. Returns how
    /// many paths were newly queued.
    pub fn enqueue(&mut self, jobs: &[NewJob<'_>]) -> Result<usize> {
        let now = now_ms();
        let tx = self.conn.transaction()?;
        let mut added = 0;
        {
            let mut insert = tx.prepare(
                "INSERT INTO jobs (path, owner, priority, state, created_at, updated_at)
                 VALUES (?1, ?2, ?3, 'queued', ?4, ?4)
                 ON CONFLICT (path) WHERE state = 'queued'
                 DO UPDATE SET priority = MIN(priority, excluded.priority),
                               updated_at = excluded.updated_at",
            )?;
            let mut exists = tx.prepare(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE path = ?1 AND state = 'queued')",
            )?;
            for job in jobs {
                let was_queued: bool = exists.query_row(params![job.path], |r| r.get(0))?;
                insert.execute(params![job.path, job.owner, job.priority, now])?;
                added += usize::from(!was_queued);
            }
        }
        tx.commit()?;
        Ok(added)
    }

    /// Claims up to `limit` jobs that may start now, best priority first, oldest first; they
    /// become `running` until finished, retried or deferred.
    pub fn claim_jobs(&mut self, limit: usize) -> Result<Vec<JobRecord>> {
        let now = now_ms();
        let tx = self.conn.transaction()?;
        let jobs = {
            let mut stmt = tx.prepare(&format!(
                "{JOB_SELECT} WHERE state = 'queued' AND not_before <= ?1
                 ORDER BY priority, id LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![now, limit as i64], JobRecord::from_row)?;
            rows.map(|r| r.map(|(j, _)| j))
                .collect::<Result<Vec<_>, _>>()?
        };
        {
            let mut stmt = tx.prepare(
                "UPDATE jobs SET state = 'running', updated_at = ?2 WHERE id = ?1 AND state = 'queued'",
            )?;
            for job in &jobs {
                stmt.execute(params![job.id, now])?;
            }
        }
        tx.commit()?;
        Ok(jobs
            .into_iter()
            .map(|mut j| {
                j.state = JobState::Running;
                j
            })
            .collect())
    }

    /// Ends a running job as `done`, `failed` or `cancelled`, with what happened.
    pub fn finish_job(
        &mut self,
        id: i64,
        state: JobState,
        outcome: Option<&str>,
        error: Option<&str>,
    ) -> Result<()> {
        self.conn.execute(
            "UPDATE jobs SET state = ?2, outcome = ?3, error = ?4, updated_at = ?5
             WHERE id = ?1 AND state = 'running'",
            params![id, state.as_str(), outcome, error, now_ms()],
        )?;
        Ok(())
    }

    /// Puts a running job back in the queue to start no earlier than `not_before_ms`,
    /// counting a failed attempt when `failed`. If the path was queued again meanwhile, that
    /// newer job covers it and this one is closed instead.
    pub fn requeue_job(
        &mut self,
        id: i64,
        not_before_ms: i64,
        failed: bool,
        error: Option<&str>,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let changed = tx.execute(
            "UPDATE jobs SET state = 'queued', not_before = ?2, attempts = attempts + ?3,
                    error = ?4, updated_at = ?5
             WHERE id = ?1 AND state = 'running' AND NOT EXISTS (
                 SELECT 1 FROM jobs q WHERE q.path = jobs.path AND q.state = 'queued')",
            params![id, not_before_ms, i64::from(failed), error, now_ms()],
        )?;
        if changed == 0 {
            tx.execute(
                "UPDATE jobs SET state = 'cancelled', outcome = 'superseded', updated_at = ?2
                 WHERE id = ?1 AND state = 'running'",
                params![id, now_ms()],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// After a crash: every job left `running` is queued again (or closed when its path was
    /// queued again meanwhile). Returns how many were re-queued.
    pub fn requeue_running(&mut self) -> Result<usize> {
        let ids: Vec<i64> = {
            let mut stmt = self
                .conn
                .prepare("SELECT id FROM jobs WHERE state = 'running' ORDER BY id")?;
            stmt.query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        };
        for id in &ids {
            self.requeue_job(*id, 0, false, None)?;
        }
        Ok(ids.len())
    }

    /// Jobs in `state` (all states for `None`), newest first.
    pub fn jobs(&self, state: Option<JobState>, limit: usize) -> Result<Vec<JobRecord>> {
        let mut stmt = self.conn.prepare(&format!(
            "{JOB_SELECT} WHERE ?1 IS NULL OR state = ?1 ORDER BY id DESC LIMIT ?2"
        ))?;
        let rows = stmt.query_map(
            params![state.map(JobState::as_str), limit as i64],
            JobRecord::from_row,
        )?;
        let mut out = Vec::new();
        for row in rows {
            let (mut job, state) = row?;
            job.state = JobState::parse(&state)?;
            out.push(job);
        }
        Ok(out)
    }

    /// How many jobs are in each state.
    pub fn queue_counts(&self) -> Result<QueueCounts> {
        let mut counts = QueueCounts {
            paused: self.queue_paused()?,
            ..QueueCounts::default()
        };
        let mut stmt = self
            .conn
            .prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (state, n) = row?;
            let n = n as u64;
            match JobState::parse(&state)? {
                JobState::Queued => counts.queued = n,
                JobState::Running => counts.running = n,
                JobState::Done => counts.done = n,
                JobState::Failed => counts.failed = n,
                JobState::Cancelled => counts.cancelled = n,
            }
        }
        counts.waiting = self.conn.query_row(
            "SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND not_before > ?1",
            params![now_ms()],
            |r| r.get::<_, i64>(0),
        )? as u64;
        Ok(counts)
    }

    /// The earliest start time of a waiting queued job, if any.
    pub fn next_job_time(&self) -> Result<Option<i64>> {
        Ok(self.conn.query_row(
            "SELECT MIN(not_before) FROM jobs WHERE state = 'queued'",
            [],
            |r| r.get(0),
        )?)
    }

    /// Cancels queued and running jobs at or below `prefix` (all for `None`); a running job
    /// finishes its current file but is not retried. Returns how many.
    pub fn cancel_jobs(&mut self, prefix: Option<&str>) -> Result<usize> {
        Ok(self.conn.execute(
            "UPDATE jobs SET state = 'cancelled', outcome = 'cancelled', updated_at = ?2
             WHERE state IN ('queued', 'running') AND (?1 IS NULL OR path = ?1 OR substr(path, 1, length(?1) + 1) = ?1 || '/')",
            params![prefix, now_ms()],
        )?)
    }

    /// Queues failed jobs at or below `prefix` again (all for `None`). Returns how many.
    pub fn retry_failed_jobs(&mut self, prefix: Option<&str>) -> Result<usize> {
        Ok(self.conn.execute(
            "UPDATE jobs SET state = 'queued', attempts = 0, not_before = 0, updated_at = ?2
             WHERE state = 'failed'
               AND (?1 IS NULL OR path = ?1 OR substr(path, 1, length(?1) + 1) = ?1 || '/')
               AND NOT EXISTS (SELECT 1 FROM jobs q WHERE q.path = jobs.path AND q.state = 'queued')
               AND id IN (SELECT MAX(id) FROM jobs WHERE state = 'failed' GROUP BY path)",
            params![prefix, now_ms()],
        )?)
    }

    /// Forgets finished jobs beyond the newest `keep` (the queue is not an archive; the
    /// ingestion journal keeps the history).
    pub fn prune_jobs(&mut self, keep: usize) -> Result<usize> {
        Ok(self.conn.execute(
            "DELETE FROM jobs WHERE state IN ('done', 'cancelled') AND id NOT IN (
                 SELECT id FROM jobs WHERE state IN ('done', 'cancelled') ORDER BY id DESC LIMIT ?1)",
            params![keep as i64],
        )?)
    }

    /// Pauses or resumes the queue (kept across restarts).
    pub fn set_queue_paused(&mut self, paused: bool) -> Result<()> {
        self.conn.execute(
            "UPDATE queue_control SET paused = ?1 WHERE id = 1",
            params![i64::from(paused)],
        )?;
        Ok(())
    }

    pub fn queue_paused(&self) -> Result<bool> {
        Ok(self
            .conn
            .query_row("SELECT paused FROM queue_control WHERE id = 1", [], |r| {
                r.get::<_, i64>(0)
            })
            .optional()?
            .unwrap_or(0)
            != 0)
    }

    // ----- watched sources ------------------------------------------------------------------

    /// Marks a folder source watched (or not) with its rules (JSON).
    pub fn set_source_watch(&mut self, source: SourceId, watched: bool, rules: &str) -> Result<()> {
        let n = self.conn.execute(
            "UPDATE sources SET watched = ?2, rules = ?3 WHERE id = ?1 AND kind = 'folder'",
            params![source.0, i64::from(watched), rules],
        )?;
        if n == 0 {
            return Err(StoreError::Corrupt(format!(
                "no folder source {}",
                source.0
            )));
        }
        Ok(())
    }

    // ----- moves ----------------------------------------------------------------------------

    /// Documents stored with this content hash (move detection).
    pub fn documents_by_hash(&self, hash: &str) -> Result<Vec<crate::DocumentRecord>> {
        let mut stmt = self.conn.prepare(&format!(
            "{} WHERE content_hash = ?1 ORDER BY id",
            crate::DOC_SELECT
        ))?;
        let rows = stmt.query_map(params![hash], crate::DocumentRecord::from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The attachments of document `mail`, theirs included, by path (found through the
    /// `parent_id` index).
    pub fn attachments(&self, mail: DocumentId) -> Result<Vec<crate::DocumentRecord>> {
        let mut stmt = self.conn.prepare(&format!(
            "WITH RECURSIVE family(id) AS (
                 SELECT id FROM documents WHERE parent_id = ?1
                 UNION SELECT d.id FROM documents d JOIN family f ON d.parent_id = f.id)
             {} WHERE id IN (SELECT id FROM family) ORDER BY path",
            crate::DOC_SELECT
        ))?;
        let rows = stmt.query_map(params![mail.0], crate::DocumentRecord::from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Moves a document to a new path, keeping its id, chunks, vectors and history; its index
    /// entries are marked pending (the title may change with the name).
    pub fn move_document(&mut self, m: &MovedDocument<'_>) -> Result<()> {
        let tx = self.conn.transaction()?;
        // Chunks without a heading are embedded with the title: a new title means new vectors.
        if let Some(title) = m.title {
            tx.execute(
                "DELETE FROM chunk_vectors WHERE document_id = ?1 AND EXISTS (
                     SELECT 1 FROM documents WHERE id = ?1 AND title IS NOT ?2)",
                params![m.id.0, title],
            )?;
        }
        let n = tx.execute(
            "UPDATE documents SET path = ?2, source_id = ?3, folder_id = ?4,
                    title = COALESCE(?5, title), size = ?6, mtime_ns = ?7,
                    index_state = CASE WHEN chunk_count > 0 THEN 'pending' ELSE index_state END,
                    updated_at = ?8
             WHERE id = ?1",
            params![
                m.id.0,
                m.path,
                m.source.0,
                m.folder.map(|f| f.0),
                m.title,
                m.size as i64,
                m.mtime_ns,
                now_ms()
            ],
        )?;
        if n == 0 {
            return Err(StoreError::Corrupt(format!("no document {}", m.id.0)));
        }
        tx.commit()?;
        Ok(())
    }
}

/// A document whose chunk rows disagree with its `chunk_count` or have gaps in their ordinals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChunkMismatch {
    pub document: DocumentId,
    pub chunk_count: u64,
    pub rows: u64,
    pub max_ordinal: Option<i64>,
}

impl Store {
    // ----- consistency ----------------------------------------------------------------------

    /// Documents whose chunks are not exactly ordinals `0..chunk_count`.
    pub fn chunk_mismatches(&self) -> Result<Vec<ChunkMismatch>> {
        let mut stmt = self.conn.prepare(
            "SELECT d.id, d.chunk_count, COUNT(c.id), MAX(c.ordinal), MIN(c.ordinal)
             FROM documents d LEFT JOIN chunks c ON c.document_id = d.id
             GROUP BY d.id
             HAVING COUNT(c.id) != d.chunk_count
                 OR (COUNT(c.id) > 0 AND (MAX(c.ordinal) != COUNT(c.id) - 1 OR MIN(c.ordinal) != 0))",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(ChunkMismatch {
                document: DocumentId(r.get(0)?),
                chunk_count: r.get::<_, i64>(1)? as u64,
                rows: r.get::<_, i64>(2)? as u64,
                max_ordinal: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Vectors whose chunk is gone or belongs to another document (foreign keys make this 0;
    /// checked anyway, because it is what a consistency check is for).
    pub fn orphan_vectors(&self) -> Result<u64> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM chunk_vectors v LEFT JOIN chunks c ON c.id = v.chunk_id
             WHERE c.id IS NULL OR c.document_id != v.document_id",
            [],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    /// `chunk_count` per document that has chunks.
    pub fn chunk_counts(&self) -> Result<std::collections::BTreeMap<u64, u64>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, chunk_count FROM documents WHERE chunk_count > 0")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job<'a>(path: &'a str, priority: i64) -> NewJob<'a> {
        NewJob {
            path,
            owner: "alice",
            priority,
        }
    }

    #[test]
    fn a_burst_of_events_for_one_path_is_one_job_with_the_best_priority() {
        let mut s = Store::open_in_memory().unwrap();
        assert_eq!(s.enqueue(&[job("/a", 2), job("/b", 1)]).unwrap(), 2);
        assert_eq!(s.enqueue(&[job("/a", 1), job("/a", 2)]).unwrap(), 0);
        let claimed = s.claim_jobs(10).unwrap();
        let got: Vec<(&str, i64)> = claimed
            .iter()
            .map(|j| (j.path.as_str(), j.priority))
            .collect();
        assert_eq!(got, vec![("/a", 1), ("/b", 1)]);
        assert!(claimed.iter().all(|j| j.state == JobState::Running));
        assert!(
            s.claim_jobs(10).unwrap().is_empty(),
            "running jobs are not claimed twice"
        );
    }

    #[test]
    fn priority_orders_the_queue_then_age() {
        let mut s = Store::open_in_memory().unwrap();
        s.enqueue(&[job("/scan1", 2), job("/event", 1), job("/scan2", 2)])
            .unwrap();
        s.enqueue(&[job("/dropped", 0)]).unwrap();
        let order: Vec<String> = s
            .claim_jobs(10)
            .unwrap()
            .into_iter()
            .map(|j| j.path)
            .collect();
        assert_eq!(order, ["/dropped", "/event", "/scan1", "/scan2"]);
    }

    #[test]
    fn a_crash_leaves_running_jobs_that_are_replayed() {
        let mut s = Store::open_in_memory().unwrap();
        s.enqueue(&[job("/a", 1), job("/b", 1)]).unwrap();
        let claimed = s.claim_jobs(1).unwrap();
        assert_eq!(claimed[0].path, "/a");
        // A new event for /a arrives while it runs: a second, queued job.
        s.enqueue(&[job("/a", 1)]).unwrap();
        // "Crash": nothing finished. Restart.
        assert_eq!(s.requeue_running().unwrap(), 1);
        let counts = s.queue_counts().unwrap();
        assert_eq!((counts.queued, counts.running, counts.cancelled), (2, 0, 1));
        let paths: Vec<String> = s
            .claim_jobs(10)
            .unwrap()
            .into_iter()
            .map(|j| j.path)
            .collect();
        assert_eq!(paths, ["/b", "/a"]);
    }

    #[test]
    fn retries_wait_for_their_time_and_count_attempts() {
        let mut s = Store::open_in_memory().unwrap();
        s.enqueue(&[job("/a", 1)]).unwrap();
        let j = s.claim_jobs(1).unwrap().remove(0);
        s.requeue_job(j.id, now_ms() + 60_000, true, Some("busy"))
            .unwrap();
        assert!(s.claim_jobs(1).unwrap().is_empty(), "not before its time");
        let counts = s.queue_counts().unwrap();
        assert_eq!((counts.queued, counts.waiting), (1, 1));
        let stored = &s.jobs(Some(JobState::Queued), 10).unwrap()[0];
        assert_eq!(stored.attempts, 1);
        assert_eq!(stored.error.as_deref(), Some("busy"));
        assert!(s.next_job_time().unwrap().unwrap() > now_ms());
    }

    #[test]
    fn finish_cancel_retry_prune_and_pause() {
        let mut s = Store::open_in_memory().unwrap();
        s.enqueue(&[
            job("/d/a", 1),
            job("/d/b", 1),
            job("/dd/c", 1),
            job("/e", 1),
        ])
        .unwrap();
        let first = s.claim_jobs(1).unwrap().remove(0);
        s.finish_job(first.id, JobState::Failed, Some("failed"), Some("corrupt"))
            .unwrap();
        // "/d" covers /d/b but not /dd/c.
        assert_eq!(s.cancel_jobs(Some("/d")).unwrap(), 1);
        assert_eq!(s.retry_failed_jobs(Some("/d")).unwrap(), 1);
        let queued: Vec<String> = s
            .jobs(Some(JobState::Queued), 10)
            .unwrap()
            .into_iter()
            .map(|j| j.path)
            .collect();
        assert_eq!(queued, ["/e", "/dd/c", "/d/a"]);
        for j in s.claim_jobs(10).unwrap() {
            s.finish_job(j.id, JobState::Done, Some("added"), None)
                .unwrap();
        }
        assert_eq!(s.prune_jobs(1).unwrap(), 3, "keeps the newest finished job");
        assert!(!s.queue_paused().unwrap());
        s.set_queue_paused(true).unwrap();
        assert!(s.queue_counts().unwrap().paused);
    }
}
