//! The engine's knowledge [`Rewriter`] over a language model: `evolve_feedback` rewrites an
//! item from feedback, `slim` merges near-duplicates (seed 002). The engine has no LLM
//! dependency; front ends hand it this.

use std::sync::Arc;

use knowhub_engine::{KnowledgeItem, Rewriter};
use knowhub_llm::{ChatRequest, Llm, Message};

/// Tokens the model may write for one rewritten item.
const MAX_TOKENS: usize = 768;

const EVOLVE_SYSTEM: &str = "You maintain a knowledge base of short, reusable experience notes. \
Rewrite the note so that it takes the feedback and the recorded helpful and harmful cases into \
account: keep what worked, correct or remove what caused harm, stay concise and concrete. Keep \
the note's language (Chinese stays Chinese). Reply with the rewritten note only.";

const MERGE_SYSTEM: &str = "You maintain a knowledge base of short, reusable experience notes. \
The notes below say nearly the same thing. Merge them into one note that keeps every distinct \
fact, step or caveat once, without repetition. Keep the language of the first note. Reply with \
the merged note only.";

/// A [`Rewriter`] backed by any [`Llm`] (greedy decoding: the same input gives the same text
/// from a local model).
#[derive(Debug, Clone)]
pub struct LlmRewriter {
    llm: Arc<dyn Llm>,
}

impl LlmRewriter {
    pub fn new(llm: Arc<dyn Llm>) -> Self {
        LlmRewriter { llm }
    }

    fn complete(&self, system: &str, user: String) -> Result<String, String> {
        let mut req = ChatRequest::new(vec![Message::system(system), Message::user(user)]);
        req.max_tokens = MAX_TOKENS;
        let response = self.llm.complete(&req).map_err(|e| e.to_string())?;
        let text = response.text.trim();
        if text.is_empty() {
            return Err("the language model returned no text".into());
        }
        Ok(text.to_owned())
    }
}

fn cases(title: &str, cases: &[knowhub_engine::FeedbackCase]) -> String {
    if cases.is_empty() {
        return String::new();
    }
    let mut out = format!("\n{title}:\n");
    for c in cases {
        out.push_str(&format!("- task: {}; outcome: {}", c.task, c.outcome));
        if !c.reason.is_empty() {
            out.push_str(&format!("; reason: {}", c.reason));
        }
        out.push('\n');
    }
    out
}

impl Rewriter for LlmRewriter {
    fn evolve(&self, item: &KnowledgeItem, feedback: &str) -> Result<String, String> {
        let user = format!(
            "Task: {}\nNote:\n{}\n{}{}\nFeedback: {}",
            item.task,
            item.content,
            cases("Helpful cases", &item.eval.helpful_history),
            cases("Harmful cases", &item.eval.harmful_history),
            feedback
        );
        self.complete(EVOLVE_SYSTEM, user)
    }

    fn merge(&self, items: &[&KnowledgeItem]) -> Result<String, String> {
        let mut user = String::new();
        for (i, item) in items.iter().enumerate() {
            user.push_str(&format!(
                "Note {} (task: {}):\n{}\n\n",
                i + 1,
                item.task,
                item.content
            ));
        }
        self.complete(MERGE_SYSTEM, user)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use knowhub_engine::{FeedbackCase, KnowledgeEval};
    use knowhub_llm::{ChatResponse, Finish, LlmError};

    use super::*;

    /// Answers with a fixed text and remembers the last prompt.
    #[derive(Debug)]
    struct Echo {
        reply: String,
        last: Mutex<String>,
    }

    impl Llm for Echo {
        fn model_id(&self) -> &str {
            "echo"
        }
        fn context_tokens(&self) -> usize {
            4096
        }
        fn count_tokens(&self, text: &str) -> usize {
            text.len()
        }
        fn chat(
            &self,
            req: &ChatRequest,
            on_token: &mut dyn FnMut(&str) -> bool,
        ) -> Result<ChatResponse, LlmError> {
            let prompt: Vec<&str> = req.messages.iter().map(|m| m.content.as_str()).collect();
            *self.last.lock().unwrap() = prompt.join("\n");
            on_token(&self.reply);
            Ok(ChatResponse {
                text: self.reply.clone(),
                prompt_tokens: 1,
                completion_tokens: 1,
                finish: Finish::Eos,
                elapsed: Duration::ZERO,
                time_to_first_token: Duration::ZERO,
            })
        }
    }

    fn item(content: &str) -> KnowledgeItem {
        KnowledgeItem {
            seq: 0,
            id: "k".into(),
            message_id: String::new(),
            types: vec!["strategy".into()],
            task: "deploy".into(),
            tags: Default::default(),
            scopes: vec!["public".into()],
            owner: "alice".into(),
            content: content.into(),
            resource_ids: vec![],
            source: Default::default(),
            eval: KnowledgeEval {
                score: 3,
                helpful: 0,
                harmful: 1,
                confidence: 0.5,
                helpful_history: vec![],
                harmful_history: vec![FeedbackCase {
                    task: "release 2".into(),
                    outcome: "rollback failed".into(),
                    reason: "no plan".into(),
                    ..Default::default()
                }],
            },
            rev: 0,
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }

    #[test]
    fn prompts_carry_the_note_cases_and_feedback() {
        let llm = Arc::new(Echo {
            reply: "  先灰度，再全量；回滚要有预案。 ".into(),
            last: Mutex::new(String::new()),
        });
        let rewriter = LlmRewriter::new(llm.clone());
        let out = rewriter.evolve(&item("先灰度。"), "加上回滚").unwrap();
        assert_eq!(out, "先灰度，再全量；回滚要有预案。");
        let prompt = llm.last.lock().unwrap().clone();
        for part in ["先灰度。", "rollback failed", "no plan", "加上回滚"] {
            assert!(prompt.contains(part), "{part} in {prompt}");
        }
        let (a, b) = (item("A note."), item("B note."));
        rewriter.merge(&[&a, &b]).unwrap();
        let prompt = llm.last.lock().unwrap().clone();
        assert!(prompt.contains("Note 1") && prompt.contains("B note."));
        let silent = LlmRewriter::new(Arc::new(Echo {
            reply: "   ".into(),
            last: Mutex::new(String::new()),
        }));
        assert!(silent.merge(&[&a]).is_err(), "an empty answer is an error");
    }
}
