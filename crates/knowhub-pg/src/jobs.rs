//! The ingestion queue in the team database, shared by every replica.
//!
//! The same jobs as the SQLite store's queue (one queued job per path, keeping the best
//! priority; at-least-once processing, harmless because jobs are idempotent), with what
//! several processes need on top:
//! - a claim takes jobs with `FOR UPDATE SKIP LOCKED`, so replicas never wait on or take
//!   each other's jobs;
//! - a claimed job carries its replica and a lease; a replica renews the leases of jobs it is
//!   still working on, and any replica puts jobs whose lease ran out back in the queue, which
//!   is how a killed replica's work is taken over;
//! - finishing or re-queuing is fenced by the claim: a replica whose lease was taken over can
//!   no longer change the job.

use knowhub_store::backend::JobStore;
use knowhub_store::{JobRecord, JobState, NewJob, QueueCounts};
use postgres::Row;

use crate::store::{JOB_LEASE_MS, pg};
use crate::{Database, PgError, PgStore, Result, now_ms};

type StoreResult<T> = knowhub_store::Result<T>;

const JOB_SELECT: &str = "SELECT id, path, owner, priority, state, attempts, not_before, \
                          outcome, error, created_at, updated_at FROM jobs";

/// The queue of a team database, as seen by one replica.
#[derive(Debug, Clone)]
pub struct PgJobs {
    db: Database,
    replica: String,
    /// The files this replica can read (its machine, or storage shared under the same paths):
    /// a job is queued with it and claimed only by replicas with the same (see `with_host`).
    host: Option<String>,
}

fn state_of(raw: &str) -> Result<JobState> {
    JobState::from_name(raw).ok_or_else(|| PgError::Corrupt(format!("job state {raw:?}")))
}

fn job_record(r: &Row) -> Result<JobRecord> {
    Ok(JobRecord {
        id: r.get(0),
        path: r.get(1),
        owner: r.get(2),
        priority: r.get(3),
        state: state_of(r.get(4))?,
        attempts: u32::try_from(r.get::<_, i64>(5)).unwrap_or(u32::MAX),
        not_before_ms: r.get(6),
        outcome: r.get(7),
        error: r.get(8),
        created_at_ms: r.get(9),
        updated_at_ms: r.get(10),
    })
}

impl PgJobs {
    /// The queue as replica `replica` (a name unique among the running replicas, e.g.
    /// host and process id) sees it.
    pub fn new(db: &Database, replica: impl Into<String>) -> PgJobs {
        PgJobs {
            db: db.clone(),
            replica: replica.into(),
            host: None,
        }
    }

    /// Jobs name files on a machine's disk: queued with `host`, they are claimed only by
    /// replicas of that host, so a replica never takes a file it cannot read for a deleted
    /// one. Replicas of one host take over each other's jobs. Without a host (the default)
    /// every replica claims every job (all files on storage every replica mounts).
    pub fn with_host(mut self, host: impl Into<String>) -> PgJobs {
        self.host = Some(host.into());
        self
    }

    /// Queues jobs; a path already queued keeps one job with the better priority. Returns how
    /// many paths were newly queued.
    pub fn enqueue(&self, jobs: &[NewJob<'_>]) -> Result<usize> {
        let now = now_ms();
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        let insert = tx.prepare(
            "INSERT INTO jobs (path, owner, priority, state, created_at, updated_at, origin)
             VALUES ($1, $2, $3, 'queued', $4, $4, $5)
             ON CONFLICT (path) WHERE state = 'queued'
             DO UPDATE SET priority = LEAST(jobs.priority, excluded.priority),
                           updated_at = excluded.updated_at
             RETURNING xmax = 0",
        )?;
        let mut added = 0;
        for job in jobs {
            let inserted: bool = tx
                .query_one(
                    &insert,
                    &[&job.path, &job.owner, &job.priority, &now, &self.host],
                )?
                .get(0);
            added += usize::from(inserted);
        }
        tx.commit()?;
        Ok(added)
    }

    /// Claims up to `limit` jobs that may start now (best priority, then oldest), skipping
    /// jobs another replica is claiming; they are this replica's for `lease_ms`.
    pub fn claim_jobs(&self, limit: usize, lease_ms: i64) -> Result<Vec<JobRecord>> {
        let now = now_ms();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut client = self.db.client()?;
        let rows = client.query(
            "UPDATE jobs SET state = 'running', claimed_by = $3, lease_until = $1 + $4,
                    updated_at = $1
             WHERE id IN (
                 SELECT id FROM jobs
                 WHERE state = 'queued' AND not_before <= $1
                   AND NOT (SELECT paused FROM queue_control WHERE id = 1)
                   AND (origin IS NULL OR $5::text IS NULL OR origin = $5)
                 ORDER BY priority, id LIMIT $2
                 FOR UPDATE SKIP LOCKED)
             RETURNING id, path, owner, priority, state, attempts, not_before, outcome, error,
                       created_at, updated_at",
            &[&now, &limit, &self.replica, &lease_ms, &self.host],
        )?;
        let mut jobs = rows.iter().map(job_record).collect::<Result<Vec<_>>>()?;
        jobs.sort_by_key(|j| (j.priority, j.id));
        Ok(jobs)
    }

    /// Extends the leases of this replica's running jobs `ids`; returns how many are still
    /// this replica's (a job taken over is not).
    pub fn renew_leases(&self, ids: &[i64], lease_ms: i64) -> Result<usize> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "UPDATE jobs SET lease_until = $3::bigint + $4::bigint
             WHERE id = ANY($1) AND state = 'running' AND claimed_by = $2",
            &[&ids, &self.replica, &now_ms(), &lease_ms],
        )?;
        Ok(n as usize)
    }

    /// Ends this replica's running job as `done`, `failed` or `cancelled`. Returns `false`
    /// (changing nothing) when the job is no longer this replica's.
    pub fn finish_job(
        &self,
        id: i64,
        state: JobState,
        outcome: Option<&str>,
        error: Option<&str>,
    ) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "UPDATE jobs SET state = $3, outcome = $4, error = $5, updated_at = $6,
                    claimed_by = NULL, lease_until = NULL
             WHERE id = $1 AND state = 'running' AND claimed_by = $2",
            &[
                &id,
                &self.replica,
                &state.as_str(),
                &outcome,
                &error,
                &now_ms(),
            ],
        )?;
        Ok(n == 1)
    }

    /// Puts this replica's running job back in the queue, to start no earlier than
    /// `not_before_ms`, counting a failed attempt when `failed`. If the path was queued again
    /// meanwhile, that newer job covers it and this one is closed. `false` when the job is no
    /// longer this replica's.
    pub fn requeue_job(
        &self,
        id: i64,
        not_before_ms: i64,
        failed: bool,
        error: Option<&str>,
    ) -> Result<bool> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        let mine = tx
            .query_opt(
                "SELECT path FROM jobs WHERE id = $1 AND state = 'running' AND claimed_by = $2
                 FOR UPDATE",
                &[&id, &self.replica],
            )?
            .is_some();
        if !mine {
            return Ok(false);
        }
        requeue(&mut tx, id, not_before_ms, failed, error)?;
        tx.commit()?;
        Ok(true)
    }

    /// Puts every running job whose lease ran out (its replica died or stalled) back in the
    /// queue, without counting an attempt. Returns how many. Any replica may call it.
    pub fn requeue_expired(&self) -> Result<usize> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        let rows = tx.query(
            "SELECT id FROM jobs WHERE state = 'running' AND lease_until < $1
             ORDER BY id FOR UPDATE SKIP LOCKED",
            &[&now_ms()],
        )?;
        for row in &rows {
            requeue(&mut tx, row.get(0), 0, false, None)?;
        }
        tx.commit()?;
        Ok(rows.len())
    }

    /// Jobs in `state` (all for `None`), newest first.
    pub fn jobs(&self, state: Option<JobState>, limit: usize) -> Result<Vec<JobRecord>> {
        let mut client = self.db.client()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client.query(
            &format!("{JOB_SELECT} WHERE $1::text IS NULL OR state = $1 ORDER BY id DESC LIMIT $2"),
            &[&state.map(JobState::as_str), &limit],
        )?;
        rows.iter().map(job_record).collect()
    }

    /// How many jobs are in each state.
    pub fn queue_counts(&self) -> Result<QueueCounts> {
        let mut client = self.db.client()?;
        let mut counts = QueueCounts {
            paused: client
                .query_one("SELECT paused FROM queue_control WHERE id = 1", &[])?
                .get(0),
            ..QueueCounts::default()
        };
        for row in client.query("SELECT state, count(*) FROM jobs GROUP BY state", &[])? {
            let n = row.get::<_, i64>(1) as u64;
            match state_of(row.get(0))? {
                JobState::Queued => counts.queued = n,
                JobState::Running => counts.running = n,
                JobState::Done => counts.done = n,
                JobState::Failed => counts.failed = n,
                JobState::Cancelled => counts.cancelled = n,
            }
        }
        counts.waiting = client
            .query_one(
                "SELECT count(*) FROM jobs WHERE state = 'queued' AND not_before > $1",
                &[&now_ms()],
            )?
            .get::<_, i64>(0) as u64;
        Ok(counts)
    }

    /// Pauses or resumes the queue for every replica.
    pub fn set_queue_paused(&self, paused: bool) -> Result<()> {
        let mut client = self.db.client()?;
        client.execute(
            "UPDATE queue_control SET paused = $1 WHERE id = 1",
            &[&paused],
        )?;
        Ok(())
    }

    /// Cancels queued and running jobs at or below `prefix` (all for `None`); how many.
    pub fn cancel_jobs(&self, prefix: Option<&str>) -> Result<usize> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "UPDATE jobs SET state = 'cancelled', outcome = 'cancelled', updated_at = $2,
                    claimed_by = NULL, lease_until = NULL
             WHERE state IN ('queued', 'running')
               AND ($1::text IS NULL OR path = $1 OR starts_with(path, $1 || '/'))",
            &[&prefix, &now_ms()],
        )?;
        Ok(n as usize)
    }
}

/// Re-queues running job `id`, or closes it when its path was queued again meanwhile.
fn requeue(
    tx: &mut postgres::Transaction<'_>,
    id: i64,
    not_before_ms: i64,
    failed: bool,
    error: Option<&str>,
) -> Result<()> {
    let now = now_ms();
    // A replica may queue the path between the check and the update: the unique index on
    // queued paths refuses it then, and the newer job covers the path as above.
    let changed = {
        let mut attempt = tx.transaction()?;
        match attempt.execute(
            "UPDATE jobs SET state = 'queued', not_before = $2, attempts = attempts + $3,
                error = $4, updated_at = $5, claimed_by = NULL, lease_until = NULL
         WHERE id = $1 AND state = 'running' AND NOT EXISTS (
             SELECT 1 FROM jobs q WHERE q.path = jobs.path AND q.state = 'queued')",
            &[&id, &not_before_ms, &i64::from(failed), &error, &now],
        ) {
            Ok(n) => {
                attempt.commit()?;
                n
            }
            Err(e) if e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => 0,
            Err(e) => return Err(e.into()),
        }
    };
    if changed == 0 {
        tx.execute(
            "UPDATE jobs SET state = 'cancelled', outcome = 'superseded', updated_at = $2,
                    claimed_by = NULL, lease_until = NULL
             WHERE id = $1 AND state = 'running'",
            &[&id, &now],
        )?;
    }
    Ok(())
}

/// The engine's queue on the shared database. Claims are leases ([`JOB_LEASE_MS`]): each
/// claim first returns expired leases to the queue, so a killed replica's jobs are taken over
/// by whichever replica claims next.
impl JobStore for PgStore {
    fn jobs(&self, state: Option<JobState>, limit: usize) -> StoreResult<Vec<JobRecord>> {
        Ok(self.jobs.jobs(state, limit)?)
    }

    fn queue_counts(&self) -> StoreResult<QueueCounts> {
        Ok(self.jobs.queue_counts()?)
    }

    fn next_job_time(&self) -> StoreResult<Option<i64>> {
        let mut client = self.db.client()?;
        Ok(client
            .query_one(
                "SELECT min(not_before) FROM jobs WHERE state = 'queued'",
                &[],
            )
            .map_err(pg)?
            .get(0))
    }

    fn queue_paused(&self) -> StoreResult<bool> {
        let mut client = self.db.client()?;
        Ok(client
            .query_opt("SELECT paused FROM queue_control WHERE id = 1", &[])
            .map_err(pg)?
            .is_some_and(|r| r.get(0)))
    }

    fn enqueue(&mut self, jobs: &[NewJob<'_>]) -> StoreResult<usize> {
        Ok(self.jobs.enqueue(jobs)?)
    }

    fn claim_jobs(&mut self, limit: usize) -> StoreResult<Vec<JobRecord>> {
        self.jobs.requeue_expired()?;
        Ok(self.jobs.claim_jobs(limit, JOB_LEASE_MS)?)
    }

    /// A job another replica took over (this one's lease ran out) is left to that replica.
    fn finish_job(
        &mut self,
        id: i64,
        state: JobState,
        outcome: Option<&str>,
        error: Option<&str>,
    ) -> StoreResult<()> {
        self.jobs.finish_job(id, state, outcome, error)?;
        Ok(())
    }

    fn requeue_job(
        &mut self,
        id: i64,
        not_before_ms: i64,
        failed: bool,
        error: Option<&str>,
    ) -> StoreResult<()> {
        self.jobs.requeue_job(id, not_before_ms, failed, error)?;
        Ok(())
    }

    /// Other replicas' running jobs are theirs while their lease lasts: only expired ones go
    /// back to the queue (SQLite, with one process, requeues every running job at start).
    fn requeue_running(&mut self) -> StoreResult<usize> {
        Ok(self.jobs.requeue_expired()?)
    }

    fn cancel_jobs(&mut self, prefix: Option<&str>) -> StoreResult<usize> {
        Ok(self.jobs.cancel_jobs(prefix)?)
    }

    fn retry_failed_jobs(&mut self, prefix: Option<&str>) -> StoreResult<usize> {
        let mut client = self.db.client()?;
        let n = client
            .execute(
                "UPDATE jobs SET state = 'queued', attempts = 0, not_before = 0, updated_at = $2
                 WHERE state = 'failed'
                   AND ($1::text IS NULL OR path = $1 OR starts_with(path, $1 || '/'))
                   AND NOT EXISTS (SELECT 1 FROM jobs q WHERE q.path = jobs.path AND q.state = 'queued')
                   AND id IN (SELECT max(id) FROM jobs WHERE state = 'failed' GROUP BY path)",
                &[&prefix, &now_ms()],
            )
            .map_err(pg)?;
        Ok(n as usize)
    }

    fn prune_jobs(&mut self, keep: usize) -> StoreResult<usize> {
        let mut client = self.db.client()?;
        let n = client
            .execute(
                "DELETE FROM jobs WHERE state IN ('done', 'cancelled') AND id NOT IN (
                     SELECT id FROM jobs WHERE state IN ('done', 'cancelled')
                     ORDER BY id DESC LIMIT $1)",
                &[&(keep.min(i64::MAX as usize) as i64)],
            )
            .map_err(pg)?;
        Ok(n as usize)
    }

    fn set_queue_paused(&mut self, paused: bool) -> StoreResult<()> {
        Ok(self.jobs.set_queue_paused(paused)?)
    }
}
