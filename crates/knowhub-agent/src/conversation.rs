//! Conversation context (seed 004 §3.2.4): the newest turns word for word within a token
//! budget, and everything older folded into one running summary of the session, so a long
//! conversation neither overflows the model's context nor forgets what it was about.
//!
//! The summary is written by the language model in batches (one call per
//! [`SUMMARY_BATCH`] turns that fell out of the window, not one per question) and stored with
//! the session; older turns not yet summarised, and every older turn when there is no model,
//! are carried as the list of questions the user asked.

use knowhub_engine::{SessionSummary, TurnRecord};

use crate::KnowledgeBase;
use knowhub_llm::{Llm, Message};

use crate::lang::is_cjk;
use crate::state::{AgentState, HistoryTurn};
use crate::{AgentEvent, Result, clip_chars, nodes};

/// Turns that fell out of the window are summarised once this many have gathered.
pub(crate) const SUMMARY_BATCH: usize = 3;
/// The longest summary kept (characters): a summary is context, not a transcript.
const MAX_SUMMARY_CHARS: usize = 1_200;
/// Questions listed for turns not (yet) summarised by a model, newest kept.
const MAX_LISTED_QUESTIONS: usize = 8;
/// Unsummarised older turns read per question, newest first: without a model nothing is ever
/// summarised, and a long conversation must not cost a read of its whole history per question
/// (nor a summary prompt larger than a small model's context). Turns older than these that
/// no summary took in are dropped.
const MAX_PENDING_TURNS: usize = 3 * SUMMARY_BATCH;

/// Tokens `text` takes: the model's own count when there is one, else an estimate (a CJK
/// character is about one token; other text about four characters per token).
pub(crate) fn count_tokens(llm: Option<&dyn Llm>, text: &str) -> usize {
    if let Some(llm) = llm {
        return llm.count_tokens(text);
    }
    let cjk = text.chars().filter(|c| is_cjk(*c)).count();
    let other = text.chars().count() - cjk;
    cjk + other.div_ceil(4)
}

/// The newest turns whose questions and answers fit in `max_tokens` (at least the newest
/// one), oldest first.
pub(crate) fn bound_history(
    mut turns: Vec<TurnRecord>,
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> Vec<TurnRecord> {
    let mut total = 0;
    let mut keep = 0;
    for t in turns.iter().rev() {
        total += count(&t.standalone) + count(&t.answer);
        if total > max_tokens && keep > 0 {
            break;
        }
        keep += 1;
    }
    let drop = turns.len() - keep;
    turns.drain(..drop);
    turns
}

/// How much of a conversation is read word for word.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub max_turns: usize,
    pub max_tokens: usize,
    /// Store a newly written summary (not for ephemeral requests, which store nothing).
    pub store_summary: bool,
}

/// Loads the conversation into `state`: the turns kept word for word in `messages`, the
/// summary of everything older in `input.conversation_summary` (written and stored first when
/// enough unsummarised turns have gathered and a model is there).
pub(crate) fn load(
    kb: &dyn KnowledgeBase,
    llm: Option<&dyn Llm>,
    session: &str,
    window: Window,
    state: &mut AgentState,
    events: &mut dyn FnMut(&AgentEvent),
) -> Result<()> {
    let recent = kb.turns(session, window.max_turns)?;
    let kept = bound_history(recent, window.max_tokens, &|s| count_tokens(llm, s));
    let first_kept = kept.first().map_or(i64::MAX, |t| t.id);
    state.messages = kept
        .into_iter()
        .map(|t| HistoryTurn {
            question: t.standalone,
            answer: t.answer,
        })
        .collect();
    let stored = kb.summary(session)?;
    let through = stored.as_ref().map_or(0, |s| s.through_turn);
    let pending = kb.turns_between(session, (through, first_kept), MAX_PENDING_TURNS)?;
    let mut summary = stored.map(|s| s.summary);
    let mut listed = pending.as_slice();
    if pending.len() >= SUMMARY_BATCH
        && let Some(llm) = llm
        && let Some(text) = summarise(llm, summary.as_deref(), &pending, state, events)
    {
        if window.store_summary
            && let Some(last) = pending.last()
        {
            kb.set_summary(
                session,
                &SessionSummary {
                    through_turn: last.id,
                    summary: text.clone(),
                    by_model: Some(llm.model_id().to_owned()),
                },
            )?;
        }
        summary = Some(text);
        listed = &[];
    }
    state.input.conversation_summary = compose(summary.as_deref(), listed);
    Ok(())
}

/// The summary as given to the model: the stored summary, then the questions of older turns
/// it does not cover yet (the newest few).
fn compose(summary: Option<&str>, listed: &[TurnRecord]) -> Option<String> {
    let mut out = summary.unwrap_or("").trim().to_owned();
    let skip = listed.len().saturating_sub(MAX_LISTED_QUESTIONS);
    let questions: Vec<&str> = listed[skip..]
        .iter()
        .map(|t| t.standalone.trim())
        .filter(|q| !q.is_empty())
        .collect();
    if !questions.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("Earlier questions: ");
        out.push_str(&questions.join(" | "));
    }
    (!out.is_empty()).then(|| clip_chars(&out, MAX_SUMMARY_CHARS))
}

/// The model's updated summary, or `None` when it failed or said nothing usable.
fn summarise(
    llm: &dyn Llm,
    previous: Option<&str>,
    turns: &[TurnRecord],
    state: &mut AgentState,
    events: &mut dyn FnMut(&AgentEvent),
) -> Option<String> {
    let system = "You keep a running summary of a conversation between a user and a company \
        knowledge assistant. Write at most 80 words, in the language of the conversation: the \
        topics the user asked about and the names, numbers and conclusions later questions may \
        refer to. Reply with the summary only.";
    let mut user = format!(
        "Summary so far: {}\n\nNew turns:\n",
        previous.unwrap_or("(none)")
    );
    for t in turns {
        user.push_str(&format!(
            "Q: {}\nA: {}\n",
            clip_chars(&t.standalone, 300),
            clip_chars(&t.answer, 300)
        ));
    }
    user.push_str("\nUpdated summary:");
    let messages = vec![Message::system(system), Message::user(user)];
    let text = nodes::llm_call(Some(llm), state, events, messages, 160, false).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| clip_chars(text, MAX_SUMMARY_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: i64, q: &str, a: &str) -> TurnRecord {
        TurnRecord {
            id,
            session_id: "s".into(),
            question: q.into(),
            standalone: q.into(),
            answer: a.into(),
            trace_id: String::new(),
            stop_reason: "ok".into(),
            created_at_ms: 0,
        }
    }

    #[test]
    fn history_keeps_the_newest_turns_within_the_token_budget() {
        let count = |s: &str| count_tokens(None, s);
        let a = "x".repeat(40); // 10 tokens
        let turns = || vec![turn(1, "one", &a), turn(2, "two", &a), turn(3, "three", &a)];
        let table: [(usize, &[&str]); 4] = [
            (100, &["one", "two", "three"]),
            (24, &["two", "three"]),
            (12, &["three"]),
            // The newest turn is kept even when it alone is over the budget.
            (1, &["three"]),
        ];
        for (budget, want) in table {
            let kept = bound_history(turns(), budget, &count);
            let qs: Vec<&str> = kept.iter().map(|t| t.question.as_str()).collect();
            assert_eq!(qs, want, "budget {budget}");
        }
    }

    #[test]
    fn token_estimates_serve_both_languages() {
        assert_eq!(count_tokens(None, ""), 0);
        assert_eq!(count_tokens(None, "年假有多少天"), 6);
        assert_eq!(count_tokens(None, "annual leave"), 3);
        assert_eq!(count_tokens(None, "年假 leave"), 2 + 2);
    }

    #[test]
    fn the_summary_lists_what_no_model_summarised_yet() {
        assert_eq!(compose(None, &[]), None);
        let many: Vec<TurnRecord> = (1..=10).map(|i| turn(i, &format!("q{i}"), "a")).collect();
        assert_eq!(
            compose(None, &many[..2]).as_deref(),
            Some("Earlier questions: q1 | q2")
        );
        assert_eq!(
            compose(Some("Talked about leave."), &many).as_deref(),
            Some("Talked about leave.\nEarlier questions: q3 | q4 | q5 | q6 | q7 | q8 | q9 | q10")
        );
        let long = "长".repeat(5_000);
        assert_eq!(
            compose(Some(&long), &[]).map(|s| s.chars().count()),
            Some(MAX_SUMMARY_CHARS)
        );
    }
}
