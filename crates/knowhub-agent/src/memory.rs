//! The engine's [`MemoryModel`] over a language model: reads a conversation for durable
//! memories (what the user's rules miss, and strategies from completed tasks) and merges a
//! restatement into the memory it restates. The engine checks every proposal against what was
//! said before using it, so this side only has to ask well and read the answer leniently.

use std::sync::Arc;

use knowhub_engine::{
    CASE_KIND, CommitMessage, GROUP_MEMORY_KINDS, MEMORY_KINDS, MemoryModel, ProposedMemory,
};
use knowhub_llm::{ChatRequest, Llm, Message};

/// Tokens the model may write for one conversation's memories.
const MAX_PROPOSAL_TOKENS: usize = 320;
/// Tokens for one merged statement.
const MAX_MERGE_TOKENS: usize = 160;
/// Characters of the conversation shown to the model (the latest part when longer).
const MAX_CONVERSATION_CHARS: usize = 6000;
/// Most proposals read from one answer.
const MAX_PROPOSALS: usize = 12;

const PERSONAL_KINDS: &str = "\
- preference: how the user wants answers or work done
- habit: something the user regularly does
- background: who the user is (role, team, place, skills)
- constraint: something that must be avoided or respected for this user
- case: a task the assistant completed that the user confirmed worked, as \"To <goal>: <what worked>\"";

const GROUP_KINDS: &str = "
- decision: something the group decided
- consensus: something the group agreed on
- group_knowledge: a fact about the group's work everyone should know";

fn system_prompt(group: bool) -> String {
    format!(
        "You read a conversation and list what is worth remembering in later conversations. \
Write one memory per line as `kind: statement`. Kinds:\n{PERSONAL_KINDS}{}\n\
Use the speaker's own words and the conversation's language (Chinese stays Chinese). Only \
lasting facts that were actually said: no questions, no one-off requests, nothing from \
documents. If there is nothing to remember, write `none`.",
        if group { GROUP_KINDS } else { "" }
    )
}

/// A worked example, so small models see the format (in both languages).
const EXAMPLE_CONVERSATION: &str = "\
user: Where is the expense form? I'm new in the Berlin sales team.
assistant: The expense form is on the finance portal under Forms [1].
user: 以后请用中文回答我。怎么重置VPN令牌？
assistant: 在门户网站选择“重置令牌”即可 [2]。
user: 好了，成功了，谢谢。";

const EXAMPLE_ANSWER: &str = "\
background: I'm new in the Berlin sales team.
preference: 以后请用中文回答我。
case: To reset the VPN token: choose 重置令牌 on the portal.";

const MERGE_SYSTEM: &str = "Two notes about the same person say nearly the same thing. Write \
one short note that keeps everything either says, in the language of the first note. Reply \
with the note only.";

/// A [`MemoryModel`] backed by any [`Llm`] (greedy: the same conversation gives the same
/// proposals from a local model).
#[derive(Debug, Clone)]
pub struct LlmMemoryModel {
    llm: Arc<dyn Llm>,
}

impl LlmMemoryModel {
    pub fn new(llm: Arc<dyn Llm>) -> Self {
        LlmMemoryModel { llm }
    }
}

/// The conversation as `speaker: text` lines, the latest part when it is long.
fn transcript(messages: &[CommitMessage]) -> String {
    let mut lines: Vec<String> = messages
        .iter()
        .filter(|m| !m.content.trim().is_empty())
        .map(|m| {
            let speaker = if m.is_assistant() {
                "assistant".to_owned()
            } else {
                m.user_id.clone().unwrap_or_else(|| "user".to_owned())
            };
            format!("{speaker}: {}", m.content.trim())
        })
        .collect();
    let mut total: usize = lines.iter().map(|l| l.chars().count() + 1).sum();
    while total > MAX_CONVERSATION_CHARS && lines.len() > 1 {
        total -= lines.remove(0).chars().count() + 1;
    }
    let text = lines.join("\n");
    // One huge message: keep its end.
    let n = text.chars().count();
    if n > MAX_CONVERSATION_CHARS {
        text.chars().skip(n - MAX_CONVERSATION_CHARS).collect()
    } else {
        text
    }
}

/// Reads `kind: statement` lines, tolerating list markers, bold, full-width colons and
/// prose around them; `none` and lines whose kind is not a memory kind are ignored.
pub fn parse_proposals(text: &str) -> Vec<ProposedMemory> {
    let mut out: Vec<ProposedMemory> = Vec::new();
    for line in text.lines() {
        let line = line
            .trim()
            .trim_start_matches(|c: char| {
                c == '-' || c == '*' || c == '•' || c.is_ascii_digit() || c == '.' || c == ')'
            })
            .trim()
            .replace("**", "");
        let Some((kind, statement)) = line
            .split_once(':')
            .or_else(|| line.split_once('：'))
            .map(|(k, s)| (k.trim().trim_matches('`').to_lowercase(), s.trim()))
        else {
            continue;
        };
        let statement = statement.trim_matches('`').trim();
        let kind = kind.replace(' ', "_");
        let known = MEMORY_KINDS
            .iter()
            .chain(GROUP_MEMORY_KINDS)
            .chain(&[CASE_KIND])
            .any(|k| *k == kind);
        if !known || statement.is_empty() || statement.eq_ignore_ascii_case("none") {
            continue;
        }
        let proposal = ProposedMemory {
            kind,
            statement: statement.to_owned(),
        };
        if !out.contains(&proposal) {
            out.push(proposal);
        }
        if out.len() == MAX_PROPOSALS {
            break;
        }
    }
    out
}

impl MemoryModel for LlmMemoryModel {
    fn propose(
        &self,
        messages: &[CommitMessage],
        group: bool,
    ) -> Result<Vec<ProposedMemory>, String> {
        let conversation = transcript(messages);
        if conversation.is_empty() {
            return Ok(Vec::new());
        }
        let mut req = ChatRequest::new(vec![
            Message::system(system_prompt(group)),
            Message::user(EXAMPLE_CONVERSATION),
            Message::assistant(EXAMPLE_ANSWER),
            Message::user(conversation),
        ]);
        req.max_tokens = MAX_PROPOSAL_TOKENS;
        let response = self.llm.complete(&req).map_err(|e| e.to_string())?;
        Ok(parse_proposals(&response.text))
    }

    fn merge(&self, existing: &str, new: &str) -> Result<String, String> {
        let mut req = ChatRequest::new(vec![
            Message::system(MERGE_SYSTEM),
            Message::user(format!("Note 1: {existing}\nNote 2: {new}")),
        ]);
        req.max_tokens = MAX_MERGE_TOKENS;
        let response = self.llm.complete(&req).map_err(|e| e.to_string())?;
        let text = response.text.trim();
        if text.is_empty() {
            return Err("the language model returned no text".into());
        }
        Ok(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lenient_proposal_lines() {
        let answer = "Here is what I found:\n\
            - preference: keep answers short\n\
            2. **Background**: I'm a data engineer.\n\
            habit： 我每周五整理周报。\n\
            case: `To reset the token: use the portal`\n\
            none\n\
            Note that the user asked a question.\n\
            preference: keep answers short\n\
            This is: not a kind at all\n\
            group knowledge: 发布窗口是周四。\n\
            constraint:";
        let got: Vec<(String, String)> = parse_proposals(answer)
            .into_iter()
            .map(|p| (p.kind, p.statement))
            .collect();
        let want = [
            ("preference", "keep answers short"),
            ("background", "I'm a data engineer."),
            ("habit", "我每周五整理周报。"),
            ("case", "To reset the token: use the portal"),
            ("group_knowledge", "发布窗口是周四。"),
        ]
        .map(|(k, s)| (k.to_owned(), s.to_owned()));
        assert_eq!(got, want);
        assert!(parse_proposals("none").is_empty());
    }

    #[test]
    fn transcript_names_speakers_and_keeps_the_latest_part() {
        let messages = vec![
            CommitMessage::mine("x".repeat(MAX_CONVERSATION_CHARS)),
            CommitMessage::assistant("Done."),
            CommitMessage {
                content: "We decided to ship Friday.".into(),
                user_id: Some("bob".into()),
                role: None,
            },
        ];
        let t = transcript(&messages);
        assert!(t.starts_with("assistant: Done."), "{t}");
        assert!(t.ends_with("bob: We decided to ship Friday."));
        assert!(transcript(&[]).is_empty());
    }
}
