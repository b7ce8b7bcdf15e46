//! The KnowHub copilot: answers a question from the documents and data the caller may read,
//! with every claim cited — or says plainly that the authorised material does not answer it.
//!
//! An explicit workflow (seed 004 §4), defined in [`graph`]: Preprocess → LoadAuthz → Route →
//! DocTool / SqlTool (HYBRID runs both) → ValidateEvidence → Synthesize, plus Clarify and
//! Refuse. Tool nodes run bounded ReAct loops. An LLM ([`knowhub_llm::Llm`]: a local GGUF model
//! or any OpenAI-compatible server) routes, writes SQL and writes answers; without one the
//! agent still works: keyword routing, template SQL, extractive answers.
//!
//! ```no_run
//! # fn demo(engine: std::sync::Arc<knowhub_engine::Engine>) -> Result<(), knowhub_agent::AgentError> {
//! let agent = knowhub_agent::Agent::new(engine, None, knowhub_agent::AgentOptions::default());
//! let ctx = knowhub_engine::dev_context();
//! let outcome = agent.ask(&ctx, &knowhub_agent::AskRequest::new("How many days of annual leave?"), &mut |_| {})?;
//! println!("{} ({:?})", outcome.state.output.final_answer, outcome.state.output.stop_reason);
//! # Ok(()) }
//! ```

mod answer_kind;
mod brief;
mod citations;
mod conversation;
mod extractive;
pub mod graph;
mod kb;
pub mod knowledge;
mod lang;
pub mod memory;
mod nodes;
pub mod providers;
mod reading;
mod schema_cache;
pub mod state;
mod text;
mod words;

use std::sync::Arc;
use std::time::Instant;

use knowhub_engine::{Engine, EngineError, RequestContext, TraceRecord, TurnRecord};

use knowhub_llm::{Llm, Message};
pub use schema_cache::SchemaCache;
use serde::Serialize;
use thiserror::Error;

pub use citations::{same_citations, same_words};
pub use kb::{Caller, EngineKnowledge, KnowledgeBase};
pub use lang::Lang;
pub use nodes::route::{route_by_rules, route_with_llm};
pub use state::{AgentState, CancelFlag, Route, StopReason};

/// Errors that end a request (tool failures do not: they become `tool_error` answers).
#[derive(Debug, Error)]
pub enum AgentError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("cannot record the trace: {0}")]
    Trace(String),
    /// The caller cancelled the request; nothing was stored.
    #[error("the question was cancelled")]
    Cancelled,
}

pub type Result<T, E = AgentError> = std::result::Result<T, E>;

/// Knobs of the workflow.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Passages retrieved per step.
    pub top_k: usize,
    /// ReAct steps per tool node at most.
    pub max_tool_steps: usize,
    /// Retries per tool after an error (then the node degrades).
    pub retry_budget: usize,
    /// A failed document search falls back to the data tools.
    pub degrade_to_sql: bool,
    pub max_answer_tokens: usize,
    /// Characters of passages the answer's writer reads, all passages together (each keeps
    /// the part that holds the question's terms). The prompt's length is most of the time a
    /// local model takes to its first word.
    pub writer_evidence_chars: usize,
    /// Characters of schema description given to the model.
    pub schema_chars: usize,
    /// Earlier turns read word for word for follow-ups, at most…
    pub history_turns: usize,
    /// …and at most this many tokens of them (older turns go into the conversation's
    /// running summary).
    pub history_tokens: usize,
    /// Answer with the shortest phrase of the evidence that answers (a name, number, date),
    /// with its citation, instead of cited sentences (`knowhub ask --brief`).
    pub brief_answers: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            top_k: 6,
            max_tool_steps: 3,
            retry_budget: 2,
            degrade_to_sql: true,
            max_answer_tokens: 320,
            writer_evidence_chars: 2_400,
            schema_chars: 6_000,
            history_turns: 6,
            history_tokens: 1_000,
            brief_answers: false,
        }
    }
}

/// What the caller sees while a request runs.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A node started (`status` = `start`) or ended (`ok` / `error`).
    Step {
        node: String,
        status: String,
        timing_ms: u64,
    },
    /// A piece of the answer as the model writes it.
    Token(String),
    /// The whole answer at once, in place of anything shown so far (brief answers, which
    /// are not streamed). Streamed answers never take back what they showed: only sentences
    /// that passed the citation check are streamed.
    Replace(String),
}

/// A question, optionally in a conversation.
#[derive(Debug, Clone)]
pub struct AskRequest {
    pub question: String,
    /// Continue this conversation (one of the caller's); `None` starts a new one.
    pub session: Option<String>,
    /// Do not store the turn and trace (evaluations).
    pub ephemeral: bool,
    /// The project the conversation is about: its memories join the user's profile.
    pub project: Option<String>,
    /// Set by the caller to stop the request (a cancelled request stores nothing).
    pub cancel: CancelFlag,
}

impl AskRequest {
    pub fn new(question: impl Into<String>) -> AskRequest {
        AskRequest {
            question: question.into(),
            session: None,
            ephemeral: false,
            project: None,
            cancel: CancelFlag::default(),
        }
    }
}

/// The answer and everything that led to it.
#[derive(Debug, Clone, Serialize)]
pub struct AskOutcome {
    pub session_id: Option<String>,
    pub trace_id: String,
    pub total_ms: u64,
    pub state: AgentState,
}

/// The copilot over one engine (or over any [`KnowledgeBase`] given to [`Agent::ask_in`]).
#[derive(Debug, Clone)]
pub struct Agent {
    engine: Option<Arc<Engine>>,
    llm: Option<Arc<dyn Llm>>,
    options: AgentOptions,
    schemas: Arc<SchemaCache>,
}

impl Agent {
    pub fn new(engine: Arc<Engine>, llm: Option<Arc<dyn Llm>>, options: AgentOptions) -> Agent {
        Agent {
            engine: Some(engine),
            llm,
            options,
            schemas: Arc::default(),
        }
    }

    /// A copilot without an engine: it answers over the knowledge base each call of
    /// [`Agent::ask_in`] is given (a test's fake), and [`Agent::ask`] refuses.
    pub fn without_engine(llm: Option<Arc<dyn Llm>>, options: AgentOptions) -> Agent {
        Agent {
            engine: None,
            llm,
            options,
            schemas: Arc::default(),
        }
    }

    /// Shares `schemas` with other agents of the process: the databases' schemas are read
    /// once and again only when a file changes, however many questions and accounts ask.
    pub fn with_schemas(mut self, schemas: Arc<SchemaCache>) -> Agent {
        self.schemas = schemas;
        self
    }

    /// The language model answers are written with (`None`: extractive answers).
    pub fn llm(&self) -> Option<Arc<dyn Llm>> {
        self.llm.clone()
    }

    pub fn llm_id(&self) -> Option<&str> {
        self.llm.as_deref().map(|l| l.model_id())
    }

    /// Answers `req` for `ctx`, streaming events; stores the turn and the trace unless the
    /// request is ephemeral. The caller's permissions are resolved once, here
    /// ([`Engine::session`]); every step of the question reads through that one view.
    pub fn ask(
        &self,
        ctx: &RequestContext,
        req: &AskRequest,
        events: &mut dyn FnMut(&AgentEvent),
    ) -> Result<AskOutcome> {
        let Some(engine) = &self.engine else {
            return Err(AgentError::Engine(EngineError::InvalidInput(
                "this copilot has no engine: ask it with a knowledge base (ask_in)".into(),
            )));
        };
        let kb = EngineKnowledge::new(engine.session(ctx)?);
        let trace_id = if ctx.trace_id.is_empty() {
            format!("trace-{}", graph::now_ms())
        } else {
            ctx.trace_id.clone()
        };
        self.ask_in(&kb, &trace_id, req, events)
    }

    /// [`Agent::ask`] over any knowledge base (a test's fake, or an engine session opened by
    /// the caller), with the trace id to record.
    pub fn ask_in(
        &self,
        kb: &dyn KnowledgeBase,
        trace_id: &str,
        req: &AskRequest,
        events: &mut dyn FnMut(&AgentEvent),
    ) -> Result<AskOutcome> {
        let started = Instant::now();
        let mut state = AgentState {
            trace_id: trace_id.to_string(),
            cancel: req.cancel.clone(),
            ..AgentState::default()
        };
        state.input.query = req.question.clone();
        state.input.project = req.project.clone();
        // The conversation so far (the caller's own; another user's session is "not found").
        // A new conversation is created only when its first answer is stored (a cancelled
        // or failed first question leaves no empty conversation behind).
        let mut session = req.session.clone();
        state.input.session_id = session.clone();
        if let Some(id) = &session {
            conversation::load(
                kb,
                self.llm.as_deref(),
                id,
                conversation::Window {
                    max_turns: self.options.history_turns,
                    max_tokens: self.options.history_tokens,
                    store_summary: !req.ephemeral,
                },
                &mut state,
                events,
            )?;
        }
        state.input.standalone_query = self.standalone(&mut state, events);
        let mut deps = nodes::Deps {
            kb,
            llm: self.llm.as_deref(),
            options: &self.options,
            schemas: &self.schemas,
            events,
        };
        graph::run(&mut state, &mut deps)?;
        if state.cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        let total_ms = started.elapsed().as_millis() as u64;
        if !req.ephemeral {
            if session.is_none() {
                let id = kb.create_conversation(&req.question)?.id;
                state.input.session_id = Some(id.clone());
                session = Some(id);
            }
            persist(kb, &state, session.as_deref(), total_ms)?;
        }
        Ok(AskOutcome {
            session_id: session,
            trace_id: state.trace_id.clone(),
            total_ms,
            state,
        })
    }

    /// A follow-up rewritten to stand alone (seed 004 §3.2.4): by the LLM when there is one,
    /// else by carrying the previous question's subject along.
    fn standalone(&self, state: &mut AgentState, events: &mut dyn FnMut(&AgentEvent)) -> String {
        let q = state.input.query.trim().to_string();
        let Some(last) = state.messages.last().cloned() else {
            return q;
        };
        if !looks_like_follow_up(&q) {
            return q;
        }
        if self.llm.is_some() {
            let mut history = String::new();
            if let Some(summary) = &state.input.conversation_summary {
                history.push_str(&format!("(Earlier in this conversation: {summary})\n"));
            }
            for t in &state.messages {
                history.push_str(&format!(
                    "Q: {}\nA: {}\n",
                    t.question,
                    clip_chars(&t.answer, 300)
                ));
            }
            let system = "Rewrite the follow-up question so that it can be understood without \
                          the conversation, in the same language. Reply with the question only.";
            let user = format!("Conversation:\n{history}\nFollow-up: {q}\nStandalone question:");
            let messages = vec![Message::system(system), Message::user(user)];
            if let Ok(text) =
                nodes::llm_call(self.llm.as_deref(), state, events, messages, 64, false)
            {
                let line = text.lines().next().unwrap_or("").trim().to_string();
                if takes_from(&line, &q, &state.messages) {
                    return line;
                }
            }
        }
        format!("{} {}", last.question, q)
    }
}
/// Stores the question's trace, and its turn in the conversation.
fn persist(
    kb: &dyn KnowledgeBase,
    state: &AgentState,
    session: Option<&str>,
    total_ms: u64,
) -> Result<()> {
    let json = serde_json::to_string(state).map_err(|e| AgentError::Trace(e.to_string()))?;
    kb.record_trace(&TraceRecord {
        id: state.trace_id.clone(),
        session_id: session.map(str::to_owned),
        user_id: String::new(),
        question: state.input.query.clone(),
        route: state.plan.route.as_str().into(),
        stop_reason: state.output.stop_reason.as_str().into(),
        total_ms,
        prompt_tokens: state.prompt_tokens,
        completion_tokens: state.completion_tokens,
        state: json,
        created_at_ms: 0,
    })?;
    if let Some(id) = session {
        kb.record_turn(&TurnRecord {
            id: 0,
            session_id: id.to_string(),
            question: state.input.query.clone(),
            standalone: state.input.normalized_query.clone(),
            answer: state.output.final_answer.clone(),
            trace_id: state.trace_id.clone(),
            stop_reason: state.output.stop_reason.as_str().into(),
            created_at_ms: 0,
        })?;
    }
    Ok(())
}

/// Whether `rewrite` of the follow-up `q` brings a word of the earlier questions into it: a
/// small model often hands the follow-up back as it was ("Which older plug-in was it combined
/// with?"), which then finds passages about anything combined.
fn takes_from(rewrite: &str, q: &str, earlier: &[state::HistoryTurn]) -> bool {
    let asked = text::terms(q);
    let before: std::collections::HashSet<String> = earlier
        .iter()
        .flat_map(|t| text::terms(&t.question))
        .collect();
    text::terms(rewrite)
        .iter()
        .any(|t| !asked.contains(t) && before.contains(t))
}

/// Short questions and ones that point back ("it", "那个", "what about …") are follow-ups.
fn looks_like_follow_up(q: &str) -> bool {
    let lower = q.to_lowercase();
    let word_count = lower.split_whitespace().count();
    let cjk = lower.chars().filter(|c| lang::is_cjk(*c)).count();
    let short = if cjk > 0 { cjk <= 6 } else { word_count <= 4 };
    short
        || lower.starts_with("and ")
        || words::words()
            .follow_up_pointers
            .iter()
            .any(|p| lower.contains(p.as_str()))
}

fn clip_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_must_bring_the_conversation_into_the_follow_up() {
        let earlier = [state::HistoryTurn {
            question: "What changed about the Text tool in GIMP 2.0?".into(),
            answer: "It was combined with an older plug-in.".into(),
        }];
        let q = "Which older plug-in was it combined with?";
        assert!(!takes_from(q, q, &earlier));
        assert!(!takes_from("Which plug-in was combined?", q, &earlier));
        assert!(takes_from(
            "Which older plug-in was the Text tool combined with in GIMP 2.0?",
            q,
            &earlier
        ));
        let earlier = [state::HistoryTurn {
            question: "年假有几天？".into(),
            answer: String::new(),
        }];
        assert!(takes_from("实习生的年假有几天？", "那实习生呢？", &earlier));
        assert!(!takes_from("那实习生呢？", "那实习生呢？", &earlier));
    }

    #[test]
    fn follow_ups_are_recognised() {
        for (q, want) in [
            ("What about contractors?", true),
            ("那实习生呢？", true),
            (
                "How many days of annual leave do employees get per year?",
                false,
            ),
            ("新员工的试用期是多长时间，转正需要什么条件", false),
            ("And for managers?", true),
        ] {
            assert_eq!(looks_like_follow_up(q), want, "{q}");
        }
    }
}
