//! A statement that runs but sums a parent's measure once per child row (an order's total once
//! per line) is never an answer: the tool refuses it with the reason, and a model that reads
//! the reason gets its corrected statement run.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use knowhub_llm::{ChatRequest, ChatResponse, Finish, Llm, LlmError};
use knowhub_sql::{Policy, Value, introspect};

/// Writes `first`, and `corrected` once the prompt reports why an attempt was refused.
#[derive(Debug)]
struct Learner {
    first: &'static str,
    corrected: &'static str,
}

impl Llm for Learner {
    fn model_id(&self) -> &str {
        "learner"
    }
    fn context_tokens(&self) -> usize {
        8192
    }
    fn count_tokens(&self, text: &str) -> usize {
        text.len() / 4 + 1
    }
    fn chat(
        &self,
        req: &ChatRequest,
        on_token: &mut dyn FnMut(&str) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        let prompt = req.messages.last().map_or("", |m| m.content.as_str());
        let reply = if prompt.contains("so the sum is too large") {
            self.corrected
        } else {
            self.first
        };
        // The tool pre-fills "SELECT": the reply continues it.
        let reply = reply.strip_prefix("SELECT").unwrap_or(reply).to_string();
        on_token(&reply);
        Ok(ChatResponse {
            text: reply,
            prompt_tokens: 1,
            completion_tokens: 1,
            finish: Finish::Eos,
            elapsed: Duration::ZERO,
            time_to_first_token: Duration::ZERO,
        })
    }
}

/// Three orders of 100 each, with two, three and one lines; widgets on two of them.
fn fixture(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("shop.sqlite");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, placed TEXT, total REAL);
         CREATE TABLE order_lines (id INTEGER PRIMARY KEY,
                                   order_id INTEGER REFERENCES orders(id),
                                   product TEXT, amount REAL);
         INSERT INTO orders VALUES (1, '2024-01-02', 100), (2, '2024-01-03', 100),
                                   (3, '2024-01-04', 100);
         INSERT INTO order_lines VALUES (1, 1, 'Widget', 60), (2, 1, 'Widget', 40),
                                        (3, 2, 'Gadget', 30), (4, 2, 'Widget', 30),
                                        (5, 2, 'Gadget', 40), (6, 3, 'Gadget', 100);",
    )
    .unwrap();
    path
}

const REPEATED: &str = "SELECT SUM(o.total) FROM orders o JOIN order_lines l ON l.order_id = o.id \
                        WHERE l.product = 'Widget'";
const LINES: &str = "SELECT SUM(l.amount) FROM order_lines l WHERE l.product = 'Widget'";

#[test]
fn a_repeated_sum_is_refused_and_the_retry_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let schema = introspect(&db, 3).unwrap();
    let question = "What were the total sales of widgets?";
    let llm = Learner {
        first: REPEATED,
        corrected: LINES,
    };
    let out = knowhub_sqlgen::nl2sql(
        Some(&llm),
        &schema,
        &db,
        &Policy::default(),
        question,
        1,
        6_000,
    );
    let first = out.attempts.first().unwrap();
    assert_eq!(first.sql, REPEATED);
    let reason = first.error.as_deref().unwrap_or_default();
    assert!(
        reason.contains("adds each orders row once for every order_lines row")
            && reason.contains("sum order_lines's own columns (amount)"),
        "{reason}"
    );
    let answer = out.answer.unwrap();
    assert!(answer.sql.contains("SUM(l.amount)"), "{}", answer.sql);
    // 60 + 40 + 30 from the lines; the refused statement would have said 300.
    assert_eq!(answer.result.rows, vec![vec![Value::Real(130.0)]]);
}

#[test]
fn a_model_that_repeats_itself_gets_no_wrong_number() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let schema = introspect(&db, 3).unwrap();
    let llm = Learner {
        first: REPEATED,
        corrected: REPEATED,
    };
    let out = knowhub_sqlgen::nl2sql(
        Some(&llm),
        &schema,
        &db,
        &Policy::default(),
        "What were the total sales of widgets?",
        1,
        6_000,
    );
    assert!(out.attempts.iter().any(|a| a.error.is_some()));
    if let Some(answer) = out.answer {
        assert!(!answer.sql.contains("SUM(o.total)"), "{}", answer.sql);
        assert_ne!(answer.result.rows, vec![vec![Value::Real(300.0)]]);
    }
}
