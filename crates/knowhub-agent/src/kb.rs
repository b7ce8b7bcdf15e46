//! [`KnowledgeBase`]: everything the copilot reads and writes for one question, under one
//! permission snapshot. The engine's [`Session`] is the real one ([`Engine::session`] resolves
//! the caller once per question); tests may answer from a fake.

use std::sync::OnceLock;

use knowhub_engine::{
    EngineError, QueryableData, Retrieval, SearchOptions, Session, SessionRecord, SessionSummary,
    TraceRecord, TurnRecord,
};

/// Who is asking, as resolved once for the question.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    pub user: String,
    pub role: String,
    /// The scopes the caller reads through, besides their own `user:` scope.
    pub scopes: Vec<String>,
    /// The permission snapshot every evidence item and audit record of the question carries.
    pub snapshot: String,
}

type Result<T> = std::result::Result<T, EngineError>;

/// The copilot's view of the knowledge base for one question. Every method answers for the
/// same caller and permission snapshot; nothing here can read what the caller may not.
pub trait KnowledgeBase {
    /// Who is asking.
    fn caller(&self) -> Caller;
    /// Passages the caller may read, best first (audited).
    fn retrieve(&self, query: &str, options: &SearchOptions) -> Result<Retrieval>;
    /// The spreadsheet tables and SQL sources the caller may query.
    fn queryable_data(&self) -> Result<QueryableData>;
    /// The caller's organisations (tenant filters of SQL sources).
    fn org_ids(&self) -> Result<Vec<String>>;
    /// The caller's memories that shape how answers are written (never evidence).
    fn user_profile(&self, project: Option<&str>, limit: usize) -> Result<Vec<String>>;

    // The caller's conversations and traces.
    fn create_conversation(&self, title: &str) -> Result<SessionRecord>;
    fn turns(&self, conversation: &str, limit: usize) -> Result<Vec<TurnRecord>>;
    fn turns_between(
        &self,
        conversation: &str,
        range: (i64, i64),
        limit: usize,
    ) -> Result<Vec<TurnRecord>>;
    fn summary(&self, conversation: &str) -> Result<Option<SessionSummary>>;
    fn set_summary(&self, conversation: &str, summary: &SessionSummary) -> Result<()>;
    fn record_turn(&self, turn: &TurnRecord) -> Result<i64>;
    fn record_trace(&self, trace: &TraceRecord) -> Result<()>;
}

/// The engine's [`Session`] as the copilot's knowledge base; what may be queried is read once
/// per question (routing and the SQL tool both ask).
#[derive(Debug)]
pub struct EngineKnowledge<'e> {
    session: Session<'e>,
    data: OnceLock<QueryableData>,
}

impl<'e> EngineKnowledge<'e> {
    pub fn new(session: Session<'e>) -> EngineKnowledge<'e> {
        EngineKnowledge {
            session,
            data: OnceLock::new(),
        }
    }
}

impl KnowledgeBase for EngineKnowledge<'_> {
    fn caller(&self) -> Caller {
        let access = self.session.access();
        let user = access.ctx.user.as_str().to_string();
        let own = format!("user:{user}");
        Caller {
            scopes: access
                .visible
                .scopes()
                .iter()
                .map(|s| s.to_string())
                .filter(|s| *s != own)
                .collect(),
            user,
            role: access.ctx.role.as_str().to_string(),
            snapshot: access.snapshot.to_string(),
        }
    }

    fn retrieve(&self, query: &str, options: &SearchOptions) -> Result<Retrieval> {
        self.session.retrieve(query, options)
    }

    fn queryable_data(&self) -> Result<QueryableData> {
        if let Some(data) = self.data.get() {
            return Ok(data.clone());
        }
        let data = self.session.queryable_data()?;
        Ok(self.data.get_or_init(|| data).clone())
    }

    fn org_ids(&self) -> Result<Vec<String>> {
        self.session.org_ids()
    }

    fn user_profile(&self, project: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.session.user_profile(project, limit)
    }

    fn create_conversation(&self, title: &str) -> Result<SessionRecord> {
        self.session.create_conversation(title)
    }

    fn turns(&self, conversation: &str, limit: usize) -> Result<Vec<TurnRecord>> {
        self.session.turns(conversation, limit)
    }

    fn turns_between(
        &self,
        conversation: &str,
        range: (i64, i64),
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        self.session.turns_between(conversation, range, limit)
    }

    fn summary(&self, conversation: &str) -> Result<Option<SessionSummary>> {
        self.session.summary(conversation)
    }

    fn set_summary(&self, conversation: &str, summary: &SessionSummary) -> Result<()> {
        self.session.set_summary(conversation, summary)
    }

    fn record_turn(&self, turn: &TurnRecord) -> Result<i64> {
        self.session.record_turn(turn)
    }

    fn record_trace(&self, trace: &TraceRecord) -> Result<()> {
        self.session.record_trace(trace)
    }
}
