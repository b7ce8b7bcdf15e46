//! Chat sessions with their turns and summaries, copilot traces, answer feedback, registered
//! SQL data sources, and the audit log of requests, in the team database.
//!
//! It mirrors the SQLite store's chat domain and audit trail row for row: the same records,
//! orderings, limits and upsert rules, so the engine behaves alike on either backend.

use knowhub_authz::UserId;
use knowhub_store::backend::{AuditStore, ChatStore};
use knowhub_store::{
    AuditEntry, AuditRecord, FeedbackRecord, Result, SessionRecord, SessionSummary,
    SqlSourceRecord, StoreError, TraceRecord, TurnRecord,
};
use postgres::Row;

use crate::store::pg;
use crate::{PgStore, now_ms};

const SESSION_SELECT: &str = "SELECT id, user_id, title, created_at, updated_at FROM chat_sessions";
const TURN_COLUMNS: &str =
    "id, session_id, question, standalone, answer, trace_id, stop_reason, created_at";
const TRACE_SELECT: &str = "SELECT id, session_id, user_id, question, route, stop_reason, \
     total_ms, prompt_tokens, completion_tokens, state, created_at FROM agent_traces";

/// A `LIMIT` for PostgreSQL, which refuses negative ones: a limit beyond `i64` means "all",
/// as the SQLite store's wrapped-around negative limit does.
fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

fn session_record(r: &Row) -> SessionRecord {
    SessionRecord {
        id: r.get(0),
        user_id: r.get(1),
        title: r.get(2),
        created_at_ms: r.get(3),
        updated_at_ms: r.get(4),
    }
}

fn turn_record(r: &Row) -> TurnRecord {
    TurnRecord {
        id: r.get(0),
        session_id: r.get(1),
        question: r.get(2),
        standalone: r.get(3),
        answer: r.get(4),
        trace_id: r.get(5),
        stop_reason: r.get(6),
        created_at_ms: r.get(7),
    }
}

/// Counters are stored as `BIGINT` with the SQLite store's wrapping casts, so every `u64`
/// reads back as written.
fn trace_record(r: &Row) -> TraceRecord {
    TraceRecord {
        id: r.get(0),
        session_id: r.get(1),
        user_id: r.get(2),
        question: r.get(3),
        route: r.get(4),
        stop_reason: r.get(5),
        total_ms: r.get::<_, i64>(6) as u64,
        prompt_tokens: r.get::<_, i64>(7) as u64,
        completion_tokens: r.get::<_, i64>(8) as u64,
        state: r.get(9),
        created_at_ms: r.get(10),
    }
}

/// Unreadable evidence ids read as none, as in the SQLite store.
fn feedback_record(r: &Row) -> FeedbackRecord {
    let ids: String = r.get(4);
    FeedbackRecord {
        trace_id: r.get(0),
        user_id: r.get(1),
        helpful: r.get(2),
        note: r.get(3),
        evidence_ids: serde_json::from_str(&ids).unwrap_or_default(),
        created_at_ms: r.get(5),
    }
}

/// Scopes are one space-separated string, as in the SQLite store, so a scope containing
/// whitespace splits the same way on either backend.
fn sql_source_record(r: &Row) -> SqlSourceRecord {
    let scopes: String = r.get(2);
    SqlSourceRecord {
        name: r.get(0),
        path: r.get(1),
        scopes: scopes.split_whitespace().map(str::to_owned).collect(),
        tenant_column: r.get(3),
        owner: r.get(4),
        created_at_ms: r.get(5),
    }
}

/// Evidence is kept as the text the caller gave; text that is not JSON reads as `null`.
fn audit_record(r: &Row) -> AuditRecord {
    let evidence: String = r.get(12);
    AuditRecord {
        id: r.get(0),
        at: r.get(1),
        trace_id: r.get(2),
        user: r.get(3),
        agent: r.get(4),
        role: r.get(5),
        action: r.get(6),
        target: r.get(7),
        snapshot: r.get(8),
        outcome: r.get(9),
        allowed: r.get::<_, i64>(10) as u64,
        filtered: r.get::<_, i64>(11) as u64,
        evidence: serde_json::from_str(&evidence).unwrap_or(serde_json::Value::Null),
    }
}

impl ChatStore for PgStore {
    fn session(&self, id: &str) -> Result<Option<SessionRecord>> {
        let mut client = self.db.client()?;
        let row = client
            .query_opt(&format!("{SESSION_SELECT} WHERE id = $1"), &[&id])
            .map_err(pg)?;
        Ok(row.as_ref().map(session_record))
    }

    /// A user's sessions, most recently used first.
    fn sessions(&self, user: &str, limit: usize) -> Result<Vec<SessionRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "{SESSION_SELECT} WHERE user_id = $1 ORDER BY updated_at DESC, id LIMIT $2"
                ),
                &[&user, &sql_limit(limit)],
            )
            .map_err(pg)?;
        Ok(rows.iter().map(session_record).collect())
    }

    /// The last `limit` turns of a session, oldest first.
    fn turns(&self, session: &str, limit: usize) -> Result<Vec<TurnRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "SELECT {TURN_COLUMNS} FROM (SELECT * FROM chat_turns WHERE session_id = $1
                     ORDER BY id DESC LIMIT $2) newest ORDER BY id"
                ),
                &[&session, &sql_limit(limit)],
            )
            .map_err(pg)?;
        Ok(rows.iter().map(turn_record).collect())
    }

    /// The newest `limit` turns of a session with `after < id < before`, oldest first.
    fn turns_between(
        &self,
        session: &str,
        after: i64,
        before: i64,
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "SELECT {TURN_COLUMNS} FROM (SELECT * FROM chat_turns
                     WHERE session_id = $1 AND id > $2 AND id < $3
                     ORDER BY id DESC LIMIT $4) newest ORDER BY id"
                ),
                &[&session, &after, &before, &sql_limit(limit)],
            )
            .map_err(pg)?;
        Ok(rows.iter().map(turn_record).collect())
    }

    fn session_summary(&self, session: &str) -> Result<Option<SessionSummary>> {
        let mut client = self.db.client()?;
        let row = client
            .query_opt(
                "SELECT through_turn, summary, by_model FROM chat_summaries WHERE session_id = $1",
                &[&session],
            )
            .map_err(pg)?;
        Ok(row.map(|r| SessionSummary {
            through_turn: r.get(0),
            summary: r.get(1),
            by_model: r.get(2),
        }))
    }

    fn trace(&self, id: &str) -> Result<Option<TraceRecord>> {
        let mut client = self.db.client()?;
        let row = client
            .query_opt(&format!("{TRACE_SELECT} WHERE id = $1"), &[&id])
            .map_err(pg)?;
        Ok(row.as_ref().map(trace_record))
    }

    /// A user's traces (all users' for `None`), newest first.
    fn traces(&self, user: Option<&str>, limit: usize) -> Result<Vec<TraceRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "{TRACE_SELECT} WHERE $1::text IS NULL OR user_id = $1
                     ORDER BY created_at DESC, id LIMIT $2"
                ),
                &[&user, &sql_limit(limit)],
            )
            .map_err(pg)?;
        Ok(rows.iter().map(trace_record).collect())
    }

    /// The latest verdict of each user on an answer, oldest first.
    fn feedback(&self, trace_id: &str) -> Result<Vec<FeedbackRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT trace_id, user_id, helpful, note, evidence_ids, created_at
                 FROM answer_feedback
                 WHERE id IN (SELECT max(id) FROM answer_feedback WHERE trace_id = $1
                              GROUP BY user_id)
                 ORDER BY id",
                &[&trace_id],
            )
            .map_err(pg)?;
        Ok(rows.iter().map(feedback_record).collect())
    }

    fn sql_sources(&self) -> Result<Vec<SqlSourceRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT name, path, scopes, tenant_column, owner, created_at FROM sql_sources
                 ORDER BY name",
                &[],
            )
            .map_err(pg)?;
        Ok(rows.iter().map(sql_source_record).collect())
    }

    /// Creates a session; an id already taken is an error.
    fn create_session(&mut self, id: &str, user: &str, title: &str) -> Result<()> {
        let mut client = self.db.client()?;
        client
            .execute(
                "INSERT INTO chat_sessions (id, user_id, title, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $4)",
                &[&id, &user, &title, &now_ms()],
            )
            .map_err(pg)?;
        Ok(())
    }

    /// Deletes a session with its turns and summary (its traces and feedback stay); whether
    /// it existed.
    fn delete_session(&mut self, id: &str) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client
            .execute("DELETE FROM chat_sessions WHERE id = $1", &[&id])
            .map_err(pg)?;
        Ok(n > 0)
    }

    /// Appends a turn and touches the session; returns the turn's id. A turn for a session
    /// that does not exist is an error, as SQLite's foreign key makes it.
    fn add_turn(&mut self, turn: &TurnRecord) -> Result<i64> {
        let now = now_ms();
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        // Touching the session first locks its row: a refused turn draws no id (as in
        // SQLite), and a session's turns get ids in the order they commit.
        let touched = tx
            .execute(
                "UPDATE chat_sessions SET updated_at = $2 WHERE id = $1",
                &[&turn.session_id, &now],
            )
            .map_err(pg)?;
        if touched == 0 {
            return Err(StoreError::Database(format!(
                "no chat session {:?} to add a turn to",
                turn.session_id
            )));
        }
        let id: i64 = tx
            .query_one(
                "INSERT INTO chat_turns (session_id, question, standalone, answer, trace_id,
                                         stop_reason, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                &[
                    &turn.session_id,
                    &turn.question,
                    &turn.standalone,
                    &turn.answer,
                    &turn.trace_id,
                    &turn.stop_reason,
                    &now,
                ],
            )
            .map_err(pg)?
            .get(0);
        tx.commit().map_err(pg)?;
        Ok(id)
    }

    /// Replaces a session's summary (it only ever moves forward: an older one is ignored).
    fn set_session_summary(&mut self, session: &str, s: &SessionSummary) -> Result<()> {
        let mut client = self.db.client()?;
        client
            .execute(
                "INSERT INTO chat_summaries (session_id, through_turn, summary, by_model,
                                             updated_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (session_id) DO UPDATE SET through_turn = excluded.through_turn,
                     summary = excluded.summary, by_model = excluded.by_model,
                     updated_at = excluded.updated_at
                 WHERE excluded.through_turn >= chat_summaries.through_turn",
                &[
                    &session,
                    &s.through_turn,
                    &s.summary,
                    &s.by_model,
                    &now_ms(),
                ],
            )
            .map_err(pg)?;
        Ok(())
    }

    /// Stores a trace, replacing one with the same id; a zero time means now.
    fn put_trace(&mut self, t: &TraceRecord) -> Result<()> {
        let created_at = if t.created_at_ms > 0 {
            t.created_at_ms
        } else {
            now_ms()
        };
        let mut client = self.db.client()?;
        client
            .execute(
                "INSERT INTO agent_traces (id, session_id, user_id, question, route,
                     stop_reason, total_ms, prompt_tokens, completion_tokens, state, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                 ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id,
                     user_id = excluded.user_id, question = excluded.question,
                     route = excluded.route, stop_reason = excluded.stop_reason,
                     total_ms = excluded.total_ms, prompt_tokens = excluded.prompt_tokens,
                     completion_tokens = excluded.completion_tokens, state = excluded.state,
                     created_at = excluded.created_at",
                &[
                    &t.id,
                    &t.session_id,
                    &t.user_id,
                    &t.question,
                    &t.route,
                    &t.stop_reason,
                    &(t.total_ms as i64),
                    &(t.prompt_tokens as i64),
                    &(t.completion_tokens as i64),
                    &t.state,
                    &created_at,
                ],
            )
            .map_err(pg)?;
        Ok(())
    }

    /// Stores a verdict on an answer (a user may change their mind: the latest row counts);
    /// returns its id. The trace need not be stored.
    fn put_feedback(&mut self, f: &FeedbackRecord) -> Result<i64> {
        let evidence_ids = serde_json::to_string(&f.evidence_ids).unwrap_or_else(|_| "[]".into());
        let mut client = self.db.client()?;
        let row = client
            .query_one(
                "INSERT INTO answer_feedback (trace_id, user_id, helpful, note, evidence_ids,
                                              created_at)
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                &[
                    &f.trace_id,
                    &f.user_id,
                    &f.helpful,
                    &f.note,
                    &evidence_ids,
                    &now_ms(),
                ],
            )
            .map_err(pg)?;
        Ok(row.get(0))
    }

    /// Registers a data source, replacing one of the same name (its time becomes now).
    fn put_sql_source(&mut self, s: &SqlSourceRecord) -> Result<()> {
        let mut client = self.db.client()?;
        client
            .execute(
                "INSERT INTO sql_sources (name, path, scopes, tenant_column, owner, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (name) DO UPDATE SET path = excluded.path,
                     scopes = excluded.scopes, tenant_column = excluded.tenant_column,
                     owner = excluded.owner, created_at = excluded.created_at",
                &[
                    &s.name,
                    &s.path,
                    &s.scopes.join(" "),
                    &s.tenant_column,
                    &s.owner,
                    &now_ms(),
                ],
            )
            .map_err(pg)?;
        Ok(())
    }

    /// Unregisters a data source; whether it was registered.
    fn remove_sql_source(&mut self, name: &str) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client
            .execute("DELETE FROM sql_sources WHERE name = $1", &[&name])
            .map_err(pg)?;
        Ok(n > 0)
    }
}

impl AuditStore for PgStore {
    /// The newest audit records (newest first), optionally only one user's.
    fn audit(&self, limit: usize, user: Option<&UserId>) -> Result<Vec<AuditRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT id, at, trace_id, user_id, agent_id, role, action, target, snapshot,
                        outcome, allowed, filtered, evidence
                 FROM audit_log WHERE ($1::text IS NULL OR user_id = $1)
                 ORDER BY id DESC LIMIT $2",
                &[&user.map(UserId::as_str), &sql_limit(limit)],
            )
            .map_err(pg)?;
        Ok(rows.iter().map(audit_record).collect())
    }

    /// Appends an audit record; returns its id.
    fn append_audit(&mut self, e: &AuditEntry<'_>) -> Result<i64> {
        let mut client = self.db.client()?;
        let row = client
            .query_one(
                "INSERT INTO audit_log (at, trace_id, user_id, agent_id, role, action, target,
                     snapshot, outcome, allowed, filtered, evidence)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
                &[
                    &now_ms(),
                    &e.trace_id,
                    &e.user,
                    &e.agent,
                    &e.role,
                    &e.action,
                    &e.target,
                    &e.snapshot,
                    &e.outcome,
                    &(e.allowed as i64),
                    &(e.filtered as i64),
                    &e.evidence,
                ],
            )
            .map_err(pg)?;
        Ok(row.get(0))
    }
}
