//! Conversations, copilot traces and registered SQL data sources.
//!
//! * A session belongs to one user; its turns keep the question as asked, the standalone
//!   question it was rewritten into, the answer, and the trace that produced it.
//! * A trace is the whole agent state of one request as JSON (nodes, timings, evidence with
//!   allow/filtered decisions, SQL run, stop reason, permission snapshot), so the window can
//!   show "how was this answered" long after.
//! * SQL sources are SQLite files an administrator registered, with the scopes that may query
//!   them and an optional tenant column every query is restricted by.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::{Result, Store, now_ms};

/// A conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionRecord {
    pub id: String,
    pub user_id: String,
    pub title: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// One question and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnRecord {
    pub id: i64,
    pub session_id: String,
    pub question: String,
    /// The question rewritten to stand alone (follow-ups resolved against earlier turns).
    pub standalone: String,
    pub answer: String,
    pub trace_id: String,
    pub stop_reason: String,
    pub created_at_ms: i64,
}

/// What a conversation said before the turns the agent still reads word for word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// The newest turn the summary covers (turn ids grow).
    pub through_turn: i64,
    pub summary: String,
    /// The language model that wrote it; `None` for the extractive summary.
    pub by_model: Option<String>,
}

/// A stored copilot trace (the agent state as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceRecord {
    pub id: String,
    pub session_id: Option<String>,
    pub user_id: String,
    pub question: String,
    pub route: String,
    pub stop_reason: String,
    pub total_ms: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub state: String,
    pub created_at_ms: i64,
}

/// A user's verdict on one answer, stored with the evidence it was based on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeedbackRecord {
    pub trace_id: String,
    pub user_id: String,
    pub helpful: bool,
    pub note: String,
    /// The evidence the answer cited.
    pub evidence_ids: Vec<String>,
    pub created_at_ms: i64,
}

/// A registered SQLite data source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SqlSourceRecord {
    pub name: String,
    pub path: String,
    /// Scopes (as strings, e.g. `team:finance`, `public`) whose members may query it.
    pub scopes: Vec<String>,
    /// Every query is restricted to the caller's organisation in this column, when set.
    pub tenant_column: Option<String>,
    pub owner: String,
    pub created_at_ms: i64,
}

impl Store {
    // ----- sessions -------------------------------------------------------------------------

    pub fn create_session(&mut self, id: &str, user: &str, title: &str) -> Result<()> {
        let now = now_ms();
        self.conn.execute(
            "INSERT INTO chat_sessions (id, user_id, title, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?4)",
            params![id, user, title, now],
        )?;
        Ok(())
    }

    pub fn session(&self, id: &str) -> Result<Option<SessionRecord>> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, user_id, title, created_at, updated_at FROM chat_sessions WHERE id = ?1",
                params![id],
                session_from_row,
            )
            .optional()?)
    }

    /// A user's sessions, most recently used first.
    pub fn sessions(&self, user: &str, limit: usize) -> Result<Vec<SessionRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, user_id, title, created_at, updated_at FROM chat_sessions
             WHERE user_id = ?1 ORDER BY updated_at DESC, id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![user, limit as i64], session_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn delete_session(&mut self, id: &str) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM chat_sessions WHERE id = ?1", params![id])?
            > 0)
    }

    /// Appends a turn (and touches the session).
    pub fn add_turn(&mut self, turn: &TurnRecord) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let now = now_ms();
        tx.execute(
            "INSERT INTO chat_turns (session_id, question, standalone, answer, trace_id,
                                     stop_reason, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                turn.session_id,
                turn.question,
                turn.standalone,
                turn.answer,
                turn.trace_id,
                turn.stop_reason,
                now
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "UPDATE chat_sessions SET updated_at = ?2 WHERE id = ?1",
            params![turn.session_id, now],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// The last `limit` turns of a session, oldest first.
    pub fn turns(&self, session: &str, limit: usize) -> Result<Vec<TurnRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, session_id, question, standalone, answer, trace_id, stop_reason, created_at
             FROM (SELECT * FROM chat_turns WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2)
             ORDER BY id",
        )?;
        let rows = stmt.query_map(params![session, limit as i64], turn_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The newest `limit` turns of a session with `after < id < before`, oldest first.
    pub fn turns_between(
        &self,
        session: &str,
        after: i64,
        before: i64,
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, session_id, question, standalone, answer, trace_id, stop_reason, created_at
             FROM (SELECT * FROM chat_turns WHERE session_id = ?1 AND id > ?2 AND id < ?3
                   ORDER BY id DESC LIMIT ?4)
             ORDER BY id",
        )?;
        let rows = stmt.query_map(params![session, after, before, limit as i64], turn_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn session_summary(&self, session: &str) -> Result<Option<SessionSummary>> {
        Ok(self
            .conn
            .query_row(
                "SELECT through_turn, summary, by_model FROM chat_summaries WHERE session_id = ?1",
                params![session],
                |r| {
                    Ok(SessionSummary {
                        through_turn: r.get(0)?,
                        summary: r.get(1)?,
                        by_model: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// Replaces a session's summary (it only ever moves forward: an older one is ignored).
    pub fn set_session_summary(&mut self, session: &str, s: &SessionSummary) -> Result<()> {
        self.conn.execute(
            "INSERT INTO chat_summaries (session_id, through_turn, summary, by_model, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(session_id) DO UPDATE SET through_turn = excluded.through_turn,
                 summary = excluded.summary, by_model = excluded.by_model,
                 updated_at = excluded.updated_at
             WHERE excluded.through_turn >= chat_summaries.through_turn",
            params![session, s.through_turn, s.summary, s.by_model, now_ms()],
        )?;
        Ok(())
    }

    // ----- traces -------------------------------------------------------------------------

    pub fn put_trace(&mut self, t: &TraceRecord) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO agent_traces (id, session_id, user_id, question, route,
                 stop_reason, total_ms, prompt_tokens, completion_tokens, state, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                t.id,
                t.session_id,
                t.user_id,
                t.question,
                t.route,
                t.stop_reason,
                t.total_ms as i64,
                t.prompt_tokens as i64,
                t.completion_tokens as i64,
                t.state,
                if t.created_at_ms > 0 {
                    t.created_at_ms
                } else {
                    now_ms()
                }
            ],
        )?;
        Ok(())
    }

    pub fn trace(&self, id: &str) -> Result<Option<TraceRecord>> {
        Ok(self
            .conn
            .query_row(
                &format!("{TRACE_SELECT} WHERE id = ?1"),
                params![id],
                trace_from_row,
            )
            .optional()?)
    }

    /// A user's traces (all users' for `None`), newest first.
    pub fn traces(&self, user: Option<&str>, limit: usize) -> Result<Vec<TraceRecord>> {
        let mut stmt = self.conn.prepare(&format!(
            "{TRACE_SELECT} WHERE ?1 IS NULL OR user_id = ?1 ORDER BY created_at DESC, id LIMIT ?2"
        ))?;
        let rows = stmt.query_map(params![user, limit as i64], trace_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    // ----- feedback -----------------------------------------------------------------------

    /// Stores a verdict on an answer (a user may change their mind: the latest row counts).
    pub fn put_feedback(&mut self, f: &FeedbackRecord) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO answer_feedback (trace_id, user_id, helpful, note, evidence_ids, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                f.trace_id,
                f.user_id,
                f.helpful,
                f.note,
                serde_json::to_string(&f.evidence_ids).unwrap_or_else(|_| "[]".into()),
                now_ms()
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The latest verdict of each user on an answer, oldest first.
    pub fn feedback(&self, trace_id: &str) -> Result<Vec<FeedbackRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT trace_id, user_id, helpful, note, evidence_ids, created_at FROM answer_feedback
             WHERE id IN (SELECT MAX(id) FROM answer_feedback WHERE trace_id = ?1 GROUP BY user_id)
             ORDER BY id",
        )?;
        let rows = stmt.query_map(params![trace_id], |r| {
            let ids: String = r.get(4)?;
            Ok(FeedbackRecord {
                trace_id: r.get(0)?,
                user_id: r.get(1)?,
                helpful: r.get(2)?,
                note: r.get(3)?,
                evidence_ids: serde_json::from_str(&ids).unwrap_or_default(),
                created_at_ms: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    // ----- SQL sources --------------------------------------------------------------------

    pub fn put_sql_source(&mut self, s: &SqlSourceRecord) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO sql_sources (name, path, scopes, tenant_column, owner, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                s.name,
                s.path,
                s.scopes.join(" "),
                s.tenant_column,
                s.owner,
                now_ms()
            ],
        )?;
        Ok(())
    }

    pub fn sql_sources(&self) -> Result<Vec<SqlSourceRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT name, path, scopes, tenant_column, owner, created_at FROM sql_sources ORDER BY name",
        )?;
        let rows = stmt.query_map([], |r| {
            let scopes: String = r.get(2)?;
            Ok(SqlSourceRecord {
                name: r.get(0)?,
                path: r.get(1)?,
                scopes: scopes.split_whitespace().map(str::to_owned).collect(),
                tenant_column: r.get(3)?,
                owner: r.get(4)?,
                created_at_ms: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn remove_sql_source(&mut self, name: &str) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM sql_sources WHERE name = ?1", params![name])?
            > 0)
    }
}

const TRACE_SELECT: &str = "SELECT id, session_id, user_id, question, route, stop_reason, \
     total_ms, prompt_tokens, completion_tokens, state, created_at FROM agent_traces";

fn turn_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TurnRecord> {
    Ok(TurnRecord {
        id: r.get(0)?,
        session_id: r.get(1)?,
        question: r.get(2)?,
        standalone: r.get(3)?,
        answer: r.get(4)?,
        trace_id: r.get(5)?,
        stop_reason: r.get(6)?,
        created_at_ms: r.get(7)?,
    })
}

fn session_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRecord> {
    Ok(SessionRecord {
        id: r.get(0)?,
        user_id: r.get(1)?,
        title: r.get(2)?,
        created_at_ms: r.get(3)?,
        updated_at_ms: r.get(4)?,
    })
}

fn trace_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TraceRecord> {
    Ok(TraceRecord {
        id: r.get(0)?,
        session_id: r.get(1)?,
        user_id: r.get(2)?,
        question: r.get(3)?,
        route: r.get(4)?,
        stop_reason: r.get(5)?,
        total_ms: r.get::<_, i64>(6)? as u64,
        prompt_tokens: r.get::<_, i64>(7)? as u64,
        completion_tokens: r.get::<_, i64>(8)? as u64,
        state: r.get(9)?,
        created_at_ms: r.get(10)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_turns_traces_and_sources_round_trip() {
        let mut s = Store::open_in_memory().unwrap();
        s.create_session("s1", "alice", "Leave policy").unwrap();
        s.create_session("s2", "bob", "Other").unwrap();
        for i in 0..3 {
            s.add_turn(&TurnRecord {
                id: 0,
                session_id: "s1".into(),
                question: format!("q{i}"),
                standalone: format!("standalone q{i}"),
                answer: format!("a{i}"),
                trace_id: format!("t{i}"),
                stop_reason: "ok".into(),
                created_at_ms: 0,
            })
            .unwrap();
        }
        let last_two: Vec<String> = s
            .turns("s1", 2)
            .unwrap()
            .into_iter()
            .map(|t| t.question)
            .collect();
        assert_eq!(
            last_two,
            ["q1", "q2"],
            "the most recent turns, oldest first"
        );
        assert_eq!(s.sessions("alice", 10).unwrap().len(), 1);
        let ids: Vec<i64> = s.turns("s1", 3).unwrap().iter().map(|t| t.id).collect();
        let between = |after, before, limit| -> Vec<String> {
            s.turns_between("s1", after, before, limit)
                .unwrap()
                .into_iter()
                .map(|t| t.question)
                .collect()
        };
        assert_eq!(between(0, i64::MAX, 10), ["q0", "q1", "q2"]);
        assert_eq!(between(ids[0], ids[2], 10), ["q1"], "both ends excluded");
        assert_eq!(between(0, ids[2], 1), ["q1"], "the newest within the limit");
        assert!(s.turns_between("s2", 0, i64::MAX, 10).unwrap().is_empty());
        // A summary only moves forward.
        let summary = |through, text: &str| SessionSummary {
            through_turn: through,
            summary: text.into(),
            by_model: None,
        };
        s.set_session_summary("s1", &summary(ids[1], "newer"))
            .unwrap();
        s.set_session_summary("s1", &summary(ids[0], "older"))
            .unwrap();
        assert_eq!(s.session_summary("s1").unwrap().unwrap().summary, "newer");
        let trace = TraceRecord {
            id: "t2".into(),
            session_id: Some("s1".into()),
            user_id: "alice".into(),
            question: "q2".into(),
            route: "doc".into(),
            stop_reason: "ok".into(),
            total_ms: 12,
            prompt_tokens: 100,
            completion_tokens: 20,
            state: "{}".into(),
            created_at_ms: 0,
        };
        s.put_trace(&trace).unwrap();
        assert_eq!(s.trace("t2").unwrap().unwrap().total_ms, 12);
        assert_eq!(s.traces(Some("bob"), 10).unwrap().len(), 0);
        assert!(s.delete_session("s1").unwrap());
        assert!(
            s.turns("s1", 10).unwrap().is_empty(),
            "turns go with the session"
        );
        s.put_sql_source(&SqlSourceRecord {
            name: "sales".into(),
            path: "/data/sales.sqlite".into(),
            scopes: vec!["team:finance".into(), "public".into()],
            tenant_column: Some("org_id".into()),
            owner: "admin".into(),
            created_at_ms: 0,
        })
        .unwrap();
        assert_eq!(
            s.sql_sources().unwrap()[0].scopes,
            ["team:finance", "public"]
        );
        assert!(s.remove_sql_source("sales").unwrap());
    }
}
