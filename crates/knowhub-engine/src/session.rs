//! [`Session`]: one request's authorised view of the knowledge base. The caller's user, role,
//! visible scopes, readable-document set and permission snapshot are resolved once, by
//! [`Engine::session`]; every read and write of the request then goes through the session, so
//! a question that searches, queries data and stores its answer is checked against one
//! consistent permission snapshot and recorded under it.

use crate::chat::QueryableData;
use crate::search::{Retrieval, SearchOptions};
use crate::{Access, Engine, Result, SessionRecord, SessionSummary, TraceRecord, TurnRecord};
use knowhub_authz::RequestContext;

/// A request's resolved permissions over one engine. Cheap to create; holds no lock.
#[derive(Debug)]
pub struct Session<'e> {
    engine: &'e Engine,
    access: Access,
}

impl Engine {
    /// Resolves what `ctx` may do, once, for a whole request (see [`Session`]). Fails like
    /// [`Engine::authorize`]: a removed or unknown user is refused.
    pub fn session(&self, ctx: &RequestContext) -> Result<Session<'_>> {
        Ok(Session {
            engine: self,
            access: self.authorize(ctx)?,
        })
    }
}

impl<'e> Session<'e> {
    /// The permissions this session resolved.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The engine the session reads.
    pub fn engine(&self) -> &'e Engine {
        self.engine
    }

    /// [`Engine::retrieve`] under this session's permissions (audited with its snapshot).
    pub fn retrieve(&self, query: &str, options: &SearchOptions) -> Result<Retrieval> {
        self.engine.retrieve_as(&self.access, query, options)
    }

    /// [`Engine::queryable_data`]: the tables and SQL sources this session may query.
    pub fn queryable_data(&self) -> Result<QueryableData> {
        self.engine.queryable_data_as(&self.access)
    }

    /// [`Engine::org_ids`]: the caller's organisations (for tenant-filtered SQL sources).
    pub fn org_ids(&self) -> Result<Vec<String>> {
        self.engine.org_ids_as(&self.access)
    }

    /// [`Engine::user_profile`]: the caller's memories the agent answers with.
    pub fn user_profile(&self, project: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.engine.user_profile_as(&self.access, project, limit)
    }

    /// [`Engine::create_session`]: a new conversation owned by the caller.
    pub fn create_conversation(&self, title: &str) -> Result<SessionRecord> {
        self.engine.create_session_as(&self.access, title)
    }

    /// [`Engine::session_turns`] of one of the caller's conversations.
    pub fn turns(&self, conversation: &str, limit: usize) -> Result<Vec<TurnRecord>> {
        self.engine
            .session_turns_as(&self.access, conversation, limit)
    }

    /// [`Engine::session_turns_between`] of one of the caller's conversations.
    pub fn turns_between(
        &self,
        conversation: &str,
        range: (i64, i64),
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        self.engine
            .session_turns_between_as(&self.access, conversation, range, limit)
    }

    /// [`Engine::session_summary`] of one of the caller's conversations.
    pub fn summary(&self, conversation: &str) -> Result<Option<SessionSummary>> {
        self.engine.session_summary_as(&self.access, conversation)
    }

    /// [`Engine::set_session_summary`] of one of the caller's conversations.
    pub fn set_summary(&self, conversation: &str, summary: &SessionSummary) -> Result<()> {
        self.engine
            .set_session_summary_as(&self.access, conversation, summary)
    }

    /// [`Engine::record_turn`] in one of the caller's conversations.
    pub fn record_turn(&self, turn: &TurnRecord) -> Result<i64> {
        self.engine.record_turn_as(&self.access, turn)
    }

    /// [`Engine::record_trace`] as the caller's.
    pub fn record_trace(&self, trace: &TraceRecord) -> Result<()> {
        self.engine.record_trace_as(&self.access, trace)
    }
}
