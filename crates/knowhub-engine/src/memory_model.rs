//! Memories a language model proposes (seed 001/003: "extracted by LLM and by rules"), and
//! the checks they pass before the commit treats them like rule candidates.
//!
//! The engine has no LLM: a front end hands the commit a [`MemoryModel`] (the copilot crate
//! implements it over its `Llm`; tests use a fake). What a model says is never trusted as
//! such — a small model invents preferences nobody stated — so every proposal must be
//! *grounded*: most of its wording has to appear in what one participant actually said (which
//! also tells whose memory it is) — in one sentence that is not a question (small models
//! readily turn "Can I expense a taxi?" into a "preference"). A task case (a strategy from a
//! completed task) summarises several turns, so it is held to a looser bar against the whole
//! conversation, and is kept only when the user's reply to the assistant says it worked
//! (a success word and no failure word, English or Chinese): the model's own judgement of
//! "it worked" is not trusted either.

use serde::{Deserialize, Serialize};

use crate::knowledge::{jaccard, shingle_set};
use crate::memory::{
    CommitMessage, GROUP_MEMORY_KINDS, MEMORY_KINDS, is_question, split_sentences,
};

/// The kind of a strategy learned from a completed task (seed 003's agent `cases`).
pub const CASE_KIND: &str = "case";

/// Share of a personal or group proposal's character 3-grams that must appear in one
/// participant's messages.
const GROUNDED: f64 = 0.5;
/// The same for a task case, against the whole conversation.
const CASE_GROUNDED: f64 = 0.3;
/// Overlap (of the smaller set) above which two candidates of one commit say the same.
const SAME_CANDIDATE: f64 = 0.8;

/// Words in a reply that say the assistant's answer worked / did not (lower-cased).
const SUCCESS_CUES: &[&str] = &[
    "worked",
    "works now",
    "fixed",
    "solved",
    "that did it",
    "did the trick",
    "perfect",
    "成功",
    "好了",
    "解决了",
    "可以了",
    "搞定",
];
const FAILURE_CUES: &[&str] = &[
    "didn't",
    "did not",
    "doesn't",
    "does not",
    "not work",
    "still",
    "failed",
    "no luck",
    "不行",
    "没用",
    "失败",
    "还是",
    "没有解决",
    "没解决",
];

/// A memory a model proposes, before any check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposedMemory {
    /// One of the personal kinds, the group kinds, or [`CASE_KIND`].
    pub kind: String,
    pub statement: String,
}

/// A language model that reads a conversation for memories and merges restatements.
pub trait MemoryModel: Send + Sync {
    /// Durable memories in `messages`; `group` asks for shared conclusions too.
    fn propose(
        &self,
        messages: &[CommitMessage],
        group: bool,
    ) -> std::result::Result<Vec<ProposedMemory>, String>;
    /// One statement that says what `existing` and `new` say (both about the same thing).
    fn merge(&self, existing: &str, new: &str) -> std::result::Result<String, String>;
}

/// Why a proposal was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// Not one of the kinds memories have.
    UnknownKind,
    /// Its wording is not in what anyone said.
    Ungrounded,
    /// It rests on a question, not a statement.
    Question,
    /// A task case the user did not say worked.
    Unconfirmed,
}

/// A polite request ("Could you keep it short?", "请简短一点？") states a preference even when it
/// ends with a question mark.
fn is_request(sentence: &str) -> bool {
    let lower = sentence.trim().to_lowercase();
    ["could you", "can you", "would you", "will you", "please"]
        .iter()
        .any(|p| lower.starts_with(p))
        || ["请", "能不能", "能否", "麻烦"]
            .iter()
            .any(|p| lower.contains(p))
}

/// A question that asks for information, not a request.
fn asks(sentence: &str) -> bool {
    is_question(sentence) && !is_request(sentence)
}

/// Whether a user replied to the assistant that its answer worked (the last reply after an
/// assistant message decides).
fn confirmed_success(messages: &[CommitMessage]) -> bool {
    let Some(first_answer) = messages.iter().position(CommitMessage::is_assistant) else {
        return false;
    };
    let Some(reply) = messages[first_answer..]
        .iter()
        .rev()
        .find(|m| !m.is_assistant())
    else {
        return false;
    };
    let text = reply.content.to_lowercase();
    SUCCESS_CUES.iter().any(|c| text.contains(c)) && !FAILURE_CUES.iter().any(|c| text.contains(c))
}

/// A proposal that passed: its kind, statement and the message index it rests on (`None`
/// for a case, which rests on the conversation).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GroundedMemory {
    pub kind: &'static str,
    pub statement: String,
    pub message: Option<usize>,
}

/// The share of `part`'s 3-grams that `whole` contains (0 when `part` has none).
pub(crate) fn containment(part: &str, whole: &str) -> f64 {
    let p = shingle_set(part);
    if p.is_empty() {
        return 0.0;
    }
    let w = shingle_set(whole);
    p.intersection(&w).count() as f64 / p.len() as f64
}

/// Whether two statements say the same (either mostly inside the other, or close overall).
pub(crate) fn restates(a: &str, b: &str) -> bool {
    let (sa, sb) = (shingle_set(a), shingle_set(b));
    let smaller = sa.len().min(sb.len());
    if smaller == 0 {
        return false;
    }
    let common = sa.intersection(&sb).count() as f64;
    common / smaller as f64 >= SAME_CANDIDATE || jaccard(&sa, &sb) >= SAME_CANDIDATE
}

/// Leading words a model adds when it reports rather than quotes ("The user prefers…",
/// "用户习惯…"): dropped before grounding so a faithful paraphrase is not refused.
fn without_reporting_words(statement: &str) -> &str {
    let trimmed = statement.trim();
    for prefix in ["The user ", "the user ", "User ", "用户", "该用户"] {
        if let Some(rest) = trimmed.strip_prefix(prefix) {
            return rest;
        }
    }
    trimmed
}

/// Checks a proposal against the conversation (see the module docs).
pub(crate) fn ground(
    proposal: &ProposedMemory,
    messages: &[CommitMessage],
    group: bool,
) -> std::result::Result<GroundedMemory, Rejection> {
    let kind_name = proposal.kind.trim().to_lowercase();
    let kind = MEMORY_KINDS
        .iter()
        .chain(if group { GROUP_MEMORY_KINDS } else { &[] })
        .chain(&[CASE_KIND])
        .find(|k| **k == kind_name)
        .copied()
        .ok_or(Rejection::UnknownKind)?;
    let statement: String = proposal
        .statement
        .trim()
        .trim_matches(['"', '“', '”', '「', '」'])
        .chars()
        .take(crate::memory::MAX_STATEMENT)
        .collect();
    let core = without_reporting_words(&statement);
    if kind == CASE_KIND {
        let all: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
        if containment(core, &all.join("\n")) < CASE_GROUNDED {
            return Err(Rejection::Ungrounded);
        }
        if !confirmed_success(messages) {
            return Err(Rejection::Unconfirmed);
        }
        return Ok(GroundedMemory {
            kind,
            statement,
            message: None,
        });
    }
    if asks(core) {
        return Err(Rejection::Question);
    }
    // A person's memory rests on one sentence a person (not the assistant) said.
    let best = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.is_assistant())
        .flat_map(|(i, m)| {
            let whole = (i, containment(core, &m.content), false);
            let sentences = split_sentences(&m.content)
                .into_iter()
                .map(move |s| (i, containment(core, &s), asks(&s)));
            std::iter::once(whole).chain(sentences)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((_, share, true)) if share >= GROUNDED => Err(Rejection::Question),
        Some((i, share, false)) if share >= GROUNDED => Ok(GroundedMemory {
            kind,
            statement,
            message: Some(i),
        }),
        _ => Err(Rejection::Ungrounded),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(content: &str, role: Option<&str>) -> CommitMessage {
        CommitMessage {
            content: content.into(),
            user_id: None,
            role: role.map(String::from),
        }
    }

    fn proposal(kind: &str, statement: &str) -> ProposedMemory {
        ProposedMemory {
            kind: kind.into(),
            statement: statement.into(),
        }
    }

    #[test]
    fn grounding_table() {
        let conversation = [
            msg(
                "Could you keep answers short? Long paragraphs are hard to read on my phone. \
                 Can I expense a taxi after 10 pm?",
                None,
            ),
            msg(
                "Sure. To reset the VPN token, open the portal and choose Reset.",
                Some("assistant"),
            ),
            msg("That worked, thanks. 另外我平时用 Linux 办公。", None),
        ];
        // (kind, statement, group, expected: Some(message index) / None for a case / Err)
        type Case = (
            &'static str,
            &'static str,
            bool,
            std::result::Result<Option<usize>, Rejection>,
        );
        let cases: &[Case] = &[
            ("preference", "keep answers short", false, Ok(Some(0))),
            (
                "preference",
                "The user finds long paragraphs hard to read on my phone",
                false,
                Ok(Some(0)),
            ),
            ("Habit", "平时用 Linux 办公", false, Ok(Some(2))),
            // Invented: nobody said it.
            (
                "preference",
                "prefers answers in French",
                false,
                Err(Rejection::Ungrounded),
            ),
            // The assistant's words are not the user's background.
            (
                "background",
                "open the portal and choose Reset",
                false,
                Err(Rejection::Ungrounded),
            ),
            (
                "mood",
                "keep answers short",
                false,
                Err(Rejection::UnknownKind),
            ),
            // A question is not a preference.
            (
                "preference",
                "Can I expense a taxi after 10 pm?",
                false,
                Err(Rejection::Question),
            ),
            (
                "preference",
                "expense a taxi after 10 pm",
                false,
                Err(Rejection::Question),
            ),
            // Group kinds only in a group commit.
            (
                "decision",
                "keep answers short",
                false,
                Err(Rejection::UnknownKind),
            ),
            ("decision", "keep answers short", true, Ok(Some(0))),
            (
                "case",
                "To reset the VPN token, open the portal and choose Reset; it worked.",
                false,
                Ok(None),
            ),
            (
                "case",
                "Rebuild the kernel module and reboot twice.",
                false,
                Err(Rejection::Ungrounded),
            ),
        ];
        for (kind, statement, group, expected) in cases {
            let got = ground(&proposal(kind, statement), &conversation, *group).map(|g| g.message);
            assert_eq!(&got, expected, "{kind}: {statement}");
        }
        // No reply saying it worked (no assistant turn; "OK"; "didn't work"): no case.
        let case = proposal("case", "To reset the VPN token, open the portal");
        let asked = "How do I reset the VPN token?";
        let answered = "To reset the VPN token, open the portal and choose Reset.";
        for conversation in [
            vec![msg(answered, None)],
            vec![msg(asked, None), msg(answered, Some("assistant"))],
            vec![
                msg(asked, None),
                msg(answered, Some("assistant")),
                msg("OK.", None),
            ],
            vec![
                msg(asked, None),
                msg(answered, Some("assistant")),
                msg("That didn't work, the portal is down.", None),
            ],
            vec![
                msg(asked, None),
                msg(answered, Some("assistant")),
                msg("还是不行。", None),
            ],
        ] {
            assert_eq!(
                ground(&case, &conversation, false).map(|g| g.message),
                Err(Rejection::Unconfirmed),
                "{conversation:?}"
            );
        }
        let solved = [
            msg(asked, None),
            msg(answered, Some("assistant")),
            msg("好了，问题解决了，谢谢！", None),
        ];
        assert_eq!(ground(&case, &solved, false).map(|g| g.message), Ok(None));
    }

    #[test]
    fn restatements() {
        assert!(restates("I prefer bullet points.", "prefer bullet points"));
        assert!(restates("我习惯用中文提问。", "习惯用中文提问"));
        assert!(!restates("I prefer bullet points.", "I work in Shanghai."));
        assert!(!restates("", "anything"));
        // A shared opening is not the same preference.
        assert!(!restates(
            "I prefer answers in English.",
            "I prefer answers in bullet points."
        ));
    }
}
