//! The workflow's nodes, one small module each. A node reads the parts of the state it needs,
//! overwrites the part it owns, appends evidence, and reports one trace step.

use knowhub_llm::{ChatRequest, Llm, Message};
use serde_json::{Value, json};

use crate::brief::NO_ANSWER;
use crate::state::AgentState;
use crate::{AgentEvent, AgentOptions};

pub(crate) mod clarify;
pub(crate) mod doc_tool;
pub(crate) mod load_authz;
pub(crate) mod preprocess;
pub(crate) mod refuse;
pub(crate) mod route;
pub(crate) mod sql_tool;
pub(crate) mod synthesize;
pub(crate) mod validate;

/// What every node may use.
pub(crate) struct Deps<'a> {
    /// The question's authorised view of the knowledge base.
    pub kb: &'a dyn crate::KnowledgeBase,
    pub llm: Option<&'a dyn Llm>,
    pub options: &'a AgentOptions,
    pub schemas: &'a crate::schema_cache::SchemaCache,
    pub events: &'a mut dyn FnMut(&AgentEvent),
}

impl Deps<'_> {
    /// One LLM call, accounted in the state (see [`llm_call`]).
    pub(crate) fn ask_llm(
        &mut self,
        state: &mut AgentState,
        messages: Vec<Message>,
        max_tokens: usize,
        stream: bool,
    ) -> Result<String, String> {
        llm_call(self.llm, state, self.events, messages, max_tokens, stream)
    }

    /// A yes/no question put to the model (see [`YesNo`]).
    pub(crate) fn ask_yes_no(
        &mut self,
        state: &mut AgentState,
        messages: Vec<Message>,
    ) -> Result<YesNo, String> {
        let Some(llm) = self.llm else {
            return Err("no language model configured".into());
        };
        if state.cancel.is_cancelled() {
            return Err("cancelled".into());
        }
        let req = ChatRequest {
            messages,
            max_tokens: 3,
            ..ChatRequest::default()
        };
        match llm.first_word_probabilities(&req, &["yes", "no"]) {
            Ok(Some(odds)) if odds.len() == 2 => {
                state.prompt_tokens += req
                    .messages
                    .iter()
                    .map(|m| llm.count_tokens(&m.content) as u64)
                    .sum::<u64>();
                state.llm = Some(llm.model_id().to_string());
                let (yes, no) = (odds[0], odds[1]);
                tracing::debug!(yes, no, "yes/no probabilities");
                Ok(YesNo {
                    yes: (yes + no >= MIN_YES_NO_MASS).then(|| yes / (yes + no)),
                    graded: true,
                })
            }
            _ => {
                let reply = llm_call(self.llm, state, self.events, req.messages, 3, false)?;
                Ok(YesNo {
                    yes: crate::reading::verdict(&reply).map(|yes| if yes { 1.0 } else { 0.0 }),
                    graded: false,
                })
            }
        }
    }

    /// [`Deps::ask_llm`] for an answer the user watches being written: the reply is shown as
    /// `checked` allows, sentence by sentence (`checked(text, done)` gives the part of the
    /// reply so far that may be shown; `done` once the reply is complete). Only what extends
    /// what is already shown is shown, so nothing shown is ever taken back. Generation stops
    /// as soon as `give_up` holds for the text so far. Returns the reply and what was shown.
    pub(crate) fn ask_llm_checked(
        &mut self,
        state: &mut AgentState,
        messages: Vec<Message>,
        max_tokens: usize,
        checked: &dyn Fn(&str, bool) -> String,
        give_up: &dyn Fn(&str) -> bool,
    ) -> Result<(String, String), String> {
        llm_call_shown(
            self.llm,
            state,
            self.events,
            messages,
            max_tokens,
            Shown::Checked(checked),
            give_up,
        )
    }
}

/// A model's reply to a yes/no question.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct YesNo {
    /// How likely the model found "yes" against "no" (0 to 1); `None`: no verdict (the
    /// probabilities lie mostly on other words, or the reply is neither word).
    pub yes: Option<f32>,
    /// Whether `yes` comes from the model's token probabilities (a local model) rather than
    /// the word it wrote (1 or 0).
    pub graded: bool,
}

/// Below this much probability on "yes" and "no" together, the model meant to reply with
/// something else, and its leaning between the two says little.
const MIN_YES_NO_MASS: f32 = 0.5;

/// What the user sees of a reply while it is written.
#[derive(Clone, Copy)]
enum Shown<'a> {
    /// Nothing (routing, rewriting).
    Nothing,
    /// Every token as it comes.
    Tokens,
    /// What the check lets through (see [`Deps::ask_llm_checked`]).
    Checked(&'a dyn Fn(&str, bool) -> String),
}

/// One LLM call, accounted in the state. `stream` forwards tokens to the caller (routing and
/// rewriting are not shown). Errors are returned for the caller to degrade.
pub(crate) fn llm_call(
    llm: Option<&dyn Llm>,
    state: &mut AgentState,
    events: &mut dyn FnMut(&AgentEvent),
    messages: Vec<Message>,
    max_tokens: usize,
    stream: bool,
) -> Result<String, String> {
    let shown = if stream {
        Shown::Tokens
    } else {
        Shown::Nothing
    };
    llm_call_shown(llm, state, events, messages, max_tokens, shown, &|_| false).map(|(t, _)| t)
}

/// [`llm_call`] that shows the reply as `shown` says and stops generating once `give_up`
/// holds for the text so far; returns the reply and the text shown.
fn llm_call_shown(
    llm: Option<&dyn Llm>,
    state: &mut AgentState,
    events: &mut dyn FnMut(&AgentEvent),
    messages: Vec<Message>,
    max_tokens: usize,
    shown: Shown<'_>,
    give_up: &dyn Fn(&str) -> bool,
) -> Result<(String, String), String> {
    let Some(llm) = llm else {
        return Err("no language model configured".into());
    };
    let req = ChatRequest {
        messages,
        max_tokens,
        ..ChatRequest::default()
    };
    tracing::debug!(
        messages = %serde_json::to_string(&req.messages).unwrap_or_default(),
        "LLM request"
    );
    let cancel = state.cancel.clone();
    let mut so_far = String::new();
    // What the user has been shown. The model's "no answer" word is held back while the
    // reply could still be it: it is a signal to the caller, not text for the user.
    let mut on_screen = String::new();
    let mut show = |text: &str, done: bool, events: &mut dyn FnMut(&AgentEvent)| {
        if text.trim_start().starts_with(NO_ANSWER) || (!done && may_be_no_answer(text)) {
            return;
        }
        let next = match shown {
            Shown::Nothing => return,
            Shown::Tokens => text.to_string(),
            Shown::Checked(check) => check(text, done),
        };
        if next.len() > on_screen.len() && next.starts_with(on_screen.as_str()) {
            events(&AgentEvent::Token(next[on_screen.len()..].to_string()));
            on_screen = next;
        }
    };
    let response = llm
        .chat(&req, &mut |piece| {
            so_far.push_str(piece);
            show(&so_far, false, events);
            !cancel.is_cancelled() && !give_up(&so_far)
        })
        .map_err(|e| e.to_string())?;
    if cancel.is_cancelled() {
        return Err("cancelled".into());
    }
    show(&so_far, true, events);
    tracing::debug!(reply = %response.text, "LLM reply");
    state.prompt_tokens += response.prompt_tokens as u64;
    state.completion_tokens += response.completion_tokens as u64;
    state.llm = Some(llm.model_id().to_string());
    Ok((response.text, on_screen))
}

/// Whether `text` (a reply so far) is, or may still become, the model's "no answer" word.
fn may_be_no_answer(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with(NO_ANSWER) || NO_ANSWER.starts_with(t)
}

/// A node's trace step, before the graph adds ids and timing.
#[derive(Debug, Clone)]
pub(crate) struct StepReport {
    pub action: String,
    pub status: String,
    pub input: Value,
    pub out: Value,
    pub tool: Option<String>,
    pub err: Option<(String, String)>,
}

impl StepReport {
    pub(crate) fn ok(action: &str, input: Value, out: Value) -> StepReport {
        StepReport {
            action: action.into(),
            status: "ok".into(),
            input,
            out,
            tool: None,
            err: None,
        }
    }

    pub(crate) fn error(action: &str, kind: &str, msg: &str) -> StepReport {
        StepReport {
            action: action.into(),
            status: "error".into(),
            input: json!({}),
            out: json!({}),
            tool: None,
            err: Some((kind.into(), msg.into())),
        }
    }

    pub(crate) fn with_tool(mut self, tool: &str) -> StepReport {
        self.tool = Some(tool.into());
        self
    }

    pub(crate) fn with_error(mut self, kind: &str, msg: &str) -> StepReport {
        self.status = "error".into();
        self.err = Some((kind.into(), msg.into()));
        self
    }
}

/// The first `max` characters of `s` (trace inputs stay small: no large text, no leaks).
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use knowhub_llm::{ChatResponse, Finish, LlmError};

    use super::*;

    /// Streams its reply in the pieces given.
    #[derive(Debug)]
    struct Pieces(Vec<&'static str>);

    impl Llm for Pieces {
        fn model_id(&self) -> &str {
            "pieces"
        }
        fn context_tokens(&self) -> usize {
            4096
        }
        fn count_tokens(&self, text: &str) -> usize {
            text.len()
        }
        fn chat(
            &self,
            _req: &ChatRequest,
            on_token: &mut dyn FnMut(&str) -> bool,
        ) -> Result<ChatResponse, LlmError> {
            let mut text = String::new();
            for p in &self.0 {
                text.push_str(p);
                if !on_token(p) {
                    break;
                }
            }
            Ok(ChatResponse {
                text,
                prompt_tokens: 1,
                completion_tokens: self.0.len(),
                finish: Finish::Eos,
                elapsed: Duration::ZERO,
                time_to_first_token: Duration::ZERO,
            })
        }
    }

    #[test]
    fn the_no_answer_word_is_never_streamed() {
        let table: &[(&[&str], &str)] = &[
            // (pieces, what the user sees streamed)
            (&["NO", "_ANS", "WER"], ""),
            (&[" NO_", "ANSWER", "."], ""),
            (
                &["No", "ne of the evidence", " says so [1]."],
                "None of the evidence says so [1].",
            ),
            (&["10 ", "days [1]."], "10 days [1]."),
            (&["NO"], "NO"),
        ];
        for (pieces, want) in table {
            let llm = Pieces(pieces.to_vec());
            let mut state = AgentState::default();
            let mut seen = String::new();
            let reply = llm_call(
                Some(&llm),
                &mut state,
                &mut |e| {
                    if let AgentEvent::Token(t) = e {
                        seen.push_str(t);
                    }
                },
                vec![Message::user("q")],
                16,
                true,
            );
            assert_eq!(reply.as_deref(), Ok(pieces.concat().as_str()));
            assert_eq!(seen, *want, "{pieces:?}");
        }
    }
}
