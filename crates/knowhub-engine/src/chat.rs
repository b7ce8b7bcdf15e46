//! What the copilot agent needs from the engine besides retrieval, permission-checked like
//! every other read path: conversations (private to their user), traces (the user's own;
//! administrators may read all for audits), the spreadsheet tables a context may query (those
//! of documents it may read) and the registered SQL sources whose scopes it shares.

use std::path::{Path, PathBuf};

use knowhub_authz::{RequestContext, ScopeSet};
use knowhub_store::{SessionRecord, SessionSummary, SqlSourceRecord, TraceRecord, TurnRecord};
use serde::Serialize;

use crate::{Access, DocumentId, Engine, EngineError, Result};

/// A spreadsheet sheet the caller may query, as a table in `tables.sqlite`.
#[derive(Debug, Clone, Serialize)]
pub struct QueryableTable {
    pub sql_name: String,
    pub sheet_name: String,
    pub document_id: DocumentId,
    pub document_path: String,
    pub rows: u64,
    /// Column names (the header row).
    pub columns: Vec<String>,
}

/// The data a context may query with SQL.
#[derive(Debug, Clone, Serialize)]
pub struct QueryableData {
    /// The spreadsheet tables database (open it read-only, and only these tables).
    pub tables_db: PathBuf,
    pub tables: Vec<QueryableTable>,
    /// Registered SQLite sources the caller shares a scope with.
    pub sources: Vec<SqlSourceRecord>,
}

impl Engine {
    // ----- conversations ------------------------------------------------------------------

    /// Starts a conversation owned by `ctx`'s user.
    pub fn create_session(&self, ctx: &RequestContext, title: &str) -> Result<SessionRecord> {
        self.create_session_as(&self.authorize(ctx)?, title)
    }

    /// [`Engine::create_session`] with permissions already resolved.
    pub(crate) fn create_session_as(&self, access: &Access, title: &str) -> Result<SessionRecord> {
        let id = format!("sess-{}", crate::permissions::new_trace_id());
        let title: String = title.chars().take(80).collect();
        let mut store = self.store();
        store.create_session(&id, access.ctx.user.as_str(), &title)?;
        store
            .session(&id)?
            .ok_or_else(|| EngineError::NotFound(id.clone()))
    }

    /// The caller's conversations, most recent first.
    pub fn sessions(&self, ctx: &RequestContext, limit: usize) -> Result<Vec<SessionRecord>> {
        let access = self.authorize(ctx)?;
        Ok(self.store().sessions(access.ctx.user.as_str(), limit)?)
    }

    /// The caller's own session (anyone else's is "not found").
    fn own_session(&self, access: &Access, id: &str) -> Result<SessionRecord> {
        self.store()
            .session(id)?
            .filter(|s| s.user_id == access.ctx.user.as_str())
            .ok_or_else(|| EngineError::NotFound(format!("conversation {id}")))
    }

    /// The last `limit` turns of one of the caller's conversations, oldest first.
    pub fn session_turns(
        &self,
        ctx: &RequestContext,
        id: &str,
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        self.session_turns_as(&self.authorize(ctx)?, id, limit)
    }

    /// [`Engine::session_turns`] with permissions already resolved.
    pub(crate) fn session_turns_as(
        &self,
        access: &Access,
        id: &str,
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        self.own_session(access, id)?;
        Ok(self.store().turns(id, limit)?)
    }

    /// The newest `limit` turns of one of the caller's conversations with
    /// `after < id < before`, oldest first (the turns a summary has yet to take in).
    pub fn session_turns_between(
        &self,
        ctx: &RequestContext,
        id: &str,
        (after, before): (i64, i64),
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        self.session_turns_between_as(&self.authorize(ctx)?, id, (after, before), limit)
    }

    /// [`Engine::session_turns_between`] with permissions already resolved.
    pub(crate) fn session_turns_between_as(
        &self,
        access: &Access,
        id: &str,
        (after, before): (i64, i64),
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        self.own_session(access, id)?;
        Ok(self.store().turns_between(id, after, before, limit)?)
    }

    /// The summary of the older part of one of the caller's conversations.
    pub fn session_summary(
        &self,
        ctx: &RequestContext,
        id: &str,
    ) -> Result<Option<SessionSummary>> {
        self.session_summary_as(&self.authorize(ctx)?, id)
    }

    /// [`Engine::session_summary`] with permissions already resolved.
    pub(crate) fn session_summary_as(
        &self,
        access: &Access,
        id: &str,
    ) -> Result<Option<SessionSummary>> {
        self.own_session(access, id)?;
        Ok(self.store().session_summary(id)?)
    }

    /// Stores the summary of the older part of one of the caller's conversations.
    pub fn set_session_summary(
        &self,
        ctx: &RequestContext,
        id: &str,
        summary: &SessionSummary,
    ) -> Result<()> {
        self.set_session_summary_as(&self.authorize(ctx)?, id, summary)
    }

    /// [`Engine::set_session_summary`] with permissions already resolved.
    pub(crate) fn set_session_summary_as(
        &self,
        access: &Access,
        id: &str,
        summary: &SessionSummary,
    ) -> Result<()> {
        self.own_session(access, id)?;
        Ok(self.store().set_session_summary(id, summary)?)
    }

    /// Appends a turn to one of the caller's conversations.
    pub fn record_turn(&self, ctx: &RequestContext, turn: &TurnRecord) -> Result<i64> {
        self.record_turn_as(&self.authorize(ctx)?, turn)
    }

    /// [`Engine::record_turn`] with permissions already resolved.
    pub(crate) fn record_turn_as(&self, access: &Access, turn: &TurnRecord) -> Result<i64> {
        self.own_session(access, &turn.session_id)?;
        Ok(self.store().add_turn(turn)?)
    }

    /// Deletes one of the caller's conversations with its turns.
    pub fn delete_session(&self, ctx: &RequestContext, id: &str) -> Result<()> {
        let access = self.authorize(ctx)?;
        self.own_session(&access, id)?;
        self.store().delete_session(id)?;
        Ok(())
    }

    // ----- traces -------------------------------------------------------------------------

    /// Stores a trace as the caller's (the user id is taken from the context, not the record).
    pub fn record_trace(&self, ctx: &RequestContext, trace: &TraceRecord) -> Result<()> {
        self.record_trace_as(&self.authorize(ctx)?, trace)
    }

    /// [`Engine::record_trace`] with permissions already resolved.
    pub(crate) fn record_trace_as(&self, access: &Access, trace: &TraceRecord) -> Result<()> {
        let mut t = trace.clone();
        t.user_id = access.ctx.user.as_str().to_string();
        if let Some(session) = &t.session_id {
            self.own_session(access, session)?;
        }
        self.store().put_trace(&t)?;
        Ok(())
    }

    /// One trace: the caller's own, or any for administrators (audits).
    pub fn trace(&self, ctx: &RequestContext, id: &str) -> Result<TraceRecord> {
        let access = self.authorize(ctx)?;
        self.store()
            .trace(id)?
            .filter(|t| access.is_admin() || t.user_id == access.ctx.user.as_str())
            .ok_or_else(|| EngineError::NotFound(format!("trace {id}")))
    }

    /// Records the caller's verdict on one of their answers (helpful or not, with an optional
    /// note), stored against the answer's trace and the evidence it cited.
    pub fn record_feedback(
        &self,
        ctx: &RequestContext,
        trace_id: &str,
        helpful: bool,
        note: &str,
        evidence_ids: &[String],
    ) -> Result<()> {
        // Only the asker (or an administrator) can rate an answer: `trace` checks that.
        let trace = self.trace(ctx, trace_id)?;
        if note.chars().count() > 4_000 {
            return Err(EngineError::InvalidInput(
                "the feedback note is too long (4,000 characters at most)".into(),
            ));
        }
        self.store().put_feedback(&knowhub_store::FeedbackRecord {
            trace_id: trace.id,
            user_id: ctx.user.to_string(),
            helpful,
            note: note.trim().to_string(),
            evidence_ids: evidence_ids.to_vec(),
            created_at_ms: 0,
        })?;
        Ok(())
    }

    /// Verdicts on an answer (the latest per user).
    pub fn feedback(
        &self,
        ctx: &RequestContext,
        trace_id: &str,
    ) -> Result<Vec<knowhub_store::FeedbackRecord>> {
        let trace = self.trace(ctx, trace_id)?;
        Ok(self.store().feedback(&trace.id)?)
    }

    /// Recent traces: the caller's, or everyone's for administrators.
    pub fn traces(&self, ctx: &RequestContext, limit: usize) -> Result<Vec<TraceRecord>> {
        let access = self.authorize(ctx)?;
        let user = (!access.is_admin()).then(|| access.ctx.user.as_str().to_string());
        Ok(self.store().traces(user.as_deref(), limit)?)
    }

    // ----- SQL data -------------------------------------------------------------------------

    /// Registers a SQLite file as a SQL data source (administrators). `tenant_column`, when
    /// given, restricts every query to the caller's organisation (`org:` membership).
    pub fn add_sql_source(
        &self,
        ctx: &RequestContext,
        name: &str,
        path: &Path,
        scopes: &ScopeSet,
        tenant_column: Option<&str>,
    ) -> Result<SqlSourceRecord> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "register SQL data sources")?;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(EngineError::InvalidInput(format!(
                "source name {name:?}: use letters, digits, '-' and '_'"
            )));
        }
        let path = path.canonicalize().map_err(|e| EngineError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        let mut head = [0u8; 16];
        let is_sqlite = std::fs::File::open(&path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok()
            && &head == b"SQLite format 3\0";
        if !is_sqlite {
            return Err(EngineError::InvalidInput(format!(
                "{} is not a SQLite database",
                path.display()
            )));
        }
        let record = SqlSourceRecord {
            name: name.to_string(),
            path: path.display().to_string(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            tenant_column: tenant_column.map(str::to_owned),
            owner: access.ctx.user.as_str().to_string(),
            created_at_ms: 0,
        };
        self.store().put_sql_source(&record)?;
        self.audit_write(&access, "sql.add", name, true)?;
        Ok(record)
    }

    /// Removes a registered SQL source (administrators).
    pub fn remove_sql_source(&self, ctx: &RequestContext, name: &str) -> Result<()> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "remove SQL data sources")?;
        if !self.store().remove_sql_source(name)? {
            return Err(EngineError::NotFound(format!("SQL source {name}")));
        }
        self.audit_write(&access, "sql.remove", name, true)
    }

    /// What `ctx` may query: spreadsheet tables of readable documents and registered sources
    /// sharing a scope with it (all for administrators).
    pub fn queryable_data(&self, ctx: &RequestContext) -> Result<QueryableData> {
        self.queryable_data_as(&self.authorize(ctx)?)
    }

    /// [`Engine::queryable_data`] with permissions already resolved.
    pub(crate) fn queryable_data_as(&self, access: &Access) -> Result<QueryableData> {
        let store = self.store();
        // A team replica offers only the tables its copy holds already (it follows the
        // database within a moment): listing one it cannot query yet would only fail there.
        let held = match self.config.team {
            Some(_) => Some(knowhub_store::SheetReplica::held(&self.paths.tables)?),
            None => None,
        };
        let mut tables = Vec::new();
        for (doc, t) in store.all_sheet_tables()? {
            if !access.can_read(doc) || held.as_ref().is_some_and(|h| !h.contains(&t.sql_name)) {
                continue;
            }
            let path = store.document(doc)?.map(|d| d.path).unwrap_or_default();
            tables.push(QueryableTable {
                columns: t.columns.iter().map(|c| c.name.clone()).collect(),
                sql_name: t.sql_name,
                sheet_name: t.sheet_name,
                document_id: doc,
                document_path: path,
                rows: t.row_count,
            });
        }
        let sources = store
            .sql_sources()?
            .into_iter()
            .filter(|s| {
                access.is_admin() || {
                    let scopes: ScopeSet = s.scopes.iter().filter_map(|x| x.parse().ok()).collect();
                    access.visible.allows(&self.account, &scopes)
                }
            })
            .collect();
        Ok(QueryableData {
            tables_db: self.paths.tables.clone(),
            tables,
            sources,
        })
    }

    /// The caller's organisation ids (for tenant-filtered SQL sources).
    pub fn org_ids(&self, ctx: &RequestContext) -> Result<Vec<String>> {
        self.org_ids_as(&self.authorize(ctx)?)
    }

    /// [`Engine::org_ids`] with permissions already resolved.
    pub(crate) fn org_ids_as(&self, access: &Access) -> Result<Vec<String>> {
        Ok(self
            .store()
            .memberships(&access.ctx.user)?
            .orgs
            .iter()
            .map(|o| o.as_str().to_string())
            .collect())
    }

    /// One of the caller's conversations (title and times), for front ends that show it
    /// with its turns; anyone else's, administrators' included, is "not found".
    pub fn conversation(&self, ctx: &RequestContext, id: &str) -> Result<SessionRecord> {
        self.own_session(&self.authorize(ctx)?, id)
    }
}
