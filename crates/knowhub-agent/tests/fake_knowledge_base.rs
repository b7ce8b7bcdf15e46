//! The copilot over a fake knowledge base: no engine, no store, no index. The workflow reaches
//! what the caller may read only through `KnowledgeBase`, so a fake that holds two passages is
//! enough to check what the agent does with them.

#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use knowhub_agent::{Agent, AgentOptions, AskRequest, Caller, KnowledgeBase, StopReason};
use knowhub_engine::{
    ChunkId, DocumentId, EngineError, QueryableData, Retrieval, SearchHit, SearchOptions,
    SessionRecord, SessionSummary, TraceRecord, TurnRecord,
};

/// Passages found by any word they share with the query; conversations and traces in memory.
#[derive(Default)]
struct Fake {
    passages: Vec<(&'static str, &'static str)>,
    turns: Mutex<Vec<TurnRecord>>,
    traces: Mutex<Vec<TraceRecord>>,
    searched: Mutex<Vec<String>>,
}

type R<T> = Result<T, EngineError>;

impl KnowledgeBase for Fake {
    fn caller(&self) -> Caller {
        Caller {
            user: "ada".into(),
            role: "USER".into(),
            scopes: vec!["team:ops".into()],
            snapshot: "snapshot-1".into(),
        }
    }

    fn retrieve(&self, query: &str, _options: &SearchOptions) -> R<Retrieval> {
        self.searched.lock().unwrap().push(query.to_string());
        let words: Vec<String> = query
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 3)
            .map(str::to_string)
            .collect();
        let hits = self
            .passages
            .iter()
            .enumerate()
            .filter(|(_, (_, text))| words.iter().any(|w| text.to_lowercase().contains(w)))
            .enumerate()
            .map(|(rank, (i, (title, text)))| SearchHit {
                rank: rank + 1,
                evidence_id: format!("doc:{i}:chunk_0"),
                score: 1.0,
                keyword_rank: Some(rank + 1),
                semantic_rank: None,
                chunk_id: ChunkId(i as i64 + 1),
                document_id: DocumentId(i as i64 + 1),
                path: format!("/kb/{title}.md"),
                title: (*title).to_string(),
                kind: Some("md".into()),
                page_start: None,
                page_end: None,
                heading_path: vec![],
                snippet: (*text).to_string(),
                highlights: vec![],
                text: (*text).to_string(),
                char_start: 0,
                char_end: text.len(),
                url: None,
                meta: Default::default(),
            })
            .collect();
        Ok(Retrieval {
            hits,
            trace: knowhub_engine::RetrievalTrace {
                permission_snapshot: "snapshot-1".into(),
                ..Default::default()
            },
        })
    }

    fn queryable_data(&self) -> R<QueryableData> {
        Ok(QueryableData {
            tables_db: Default::default(),
            tables: vec![],
            sources: vec![],
        })
    }

    fn org_ids(&self) -> R<Vec<String>> {
        Ok(vec![])
    }

    fn user_profile(&self, _project: Option<&str>, _limit: usize) -> R<Vec<String>> {
        Ok(vec![])
    }

    fn create_conversation(&self, title: &str) -> R<SessionRecord> {
        Ok(SessionRecord {
            id: "conv-1".into(),
            user_id: "ada".into(),
            title: title.into(),
            created_at_ms: 0,
            updated_at_ms: 0,
        })
    }

    fn turns(&self, _conversation: &str, _limit: usize) -> R<Vec<TurnRecord>> {
        Ok(self.turns.lock().unwrap().clone())
    }

    fn turns_between(&self, _: &str, _: (i64, i64), _: usize) -> R<Vec<TurnRecord>> {
        Ok(vec![])
    }

    fn summary(&self, _conversation: &str) -> R<Option<SessionSummary>> {
        Ok(None)
    }

    fn set_summary(&self, _: &str, _: &SessionSummary) -> R<()> {
        Ok(())
    }

    fn record_turn(&self, turn: &TurnRecord) -> R<i64> {
        let mut turns = self.turns.lock().unwrap();
        turns.push(turn.clone());
        Ok(turns.len() as i64)
    }

    fn record_trace(&self, trace: &TraceRecord) -> R<()> {
        self.traces.lock().unwrap().push(trace.clone());
        Ok(())
    }
}

/// A knowledge base of two passages: when backups run and are kept, and when the canteen opens.
fn backups_and_lunch() -> Fake {
    Fake {
        passages: vec![
            (
                "backups",
                "Backups run every night at 02:00 and are kept for 35 days.",
            ),
            ("lunch", "The canteen opens at noon."),
        ],
        ..Fake::default()
    }
}

#[test]
fn the_copilot_answers_from_a_fake_knowledge_base() {
    let kb = backups_and_lunch();
    let agent = Agent::without_engine(None, AgentOptions::default());
    let out = agent
        .ask_in(
            &kb,
            "trace-1",
            &AskRequest::new("How long are backups kept?"),
            &mut |_| {},
        )
        .unwrap();
    let state = &out.state;
    assert_eq!(state.output.stop_reason, StopReason::Ok);
    assert!(
        state
            .output
            .final_answer
            .starts_with("Backups run every night")
            && state.output.final_answer.contains("35 days. [1]"),
        "{}",
        state.output.final_answer
    );
    // Every evidence item carries the snapshot the knowledge base was opened with.
    assert_eq!(state.authz.perm_snapshot_id, "snapshot-1");
    assert!(
        state
            .evidence_items
            .iter()
            .all(|e| e.authz.perm_snapshot_id == "snapshot-1")
    );
    // The turn and the trace went to the knowledge base, in a new conversation.
    assert_eq!(out.session_id.as_deref(), Some("conv-1"));
    assert_eq!(kb.turns.lock().unwrap().len(), 1);
    assert_eq!(kb.traces.lock().unwrap()[0].id, "trace-1");
    assert!(!kb.searched.lock().unwrap().is_empty());
    // Without an engine, only ask_in answers.
    assert!(
        agent
            .ask(
                &knowhub_engine::dev_context(),
                &AskRequest::new("How long are backups kept?"),
                &mut |_| {}
            )
            .is_err()
    );
}

#[test]
fn nothing_found_is_said_plainly() {
    let kb = Fake::default();
    let agent = Agent::without_engine(None, AgentOptions::default());
    let mut req = AskRequest::new("What is the parking fee?");
    req.ephemeral = true;
    let out = agent.ask_in(&kb, "trace-2", &req, &mut |_| {}).unwrap();
    assert_eq!(out.state.output.stop_reason, StopReason::NoEvidence);
    assert!(out.state.output.rendered_sources.is_empty());
    assert!(
        kb.traces.lock().unwrap().is_empty(),
        "ephemeral: nothing stored"
    );
}

/// A scripted writer: DOC for routing, a follow-up handed back unchanged when asked to rewrite
/// it, `verdict` when asked whether a text answers, `reply` to anything else, counting the
/// prompts that ask for an answer (those that say how to reply when the evidence does not
/// answer) and those that ask for a verdict.
#[derive(Debug, Default)]
struct Writer {
    reply: &'static str,
    verdict: &'static str,
    /// When set, the verdict is "yes" for a text holding these words and "no" for any other.
    answers_in: Option<&'static str>,
    /// The weights it says it has (`None`: unknown, like a server's model).
    parameters: Option<u64>,
    /// When set, it gives its probabilities of "yes" and "no" like a local model: for a text
    /// holding one of these words, the probability of "yes" beside it; for any other, 0.1.
    odds: Option<&'static [(&'static str, f32)]>,
    asked: Mutex<usize>,
    judged: Mutex<usize>,
}

impl knowhub_llm::Llm for Writer {
    fn model_id(&self) -> &str {
        "scripted-writer"
    }
    fn context_tokens(&self) -> usize {
        4096
    }
    fn count_tokens(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }
    fn parameters(&self) -> Option<u64> {
        self.parameters
    }
    fn first_word_probabilities(
        &self,
        req: &knowhub_llm::ChatRequest,
        words: &[&str],
    ) -> Result<Option<Vec<f32>>, knowhub_llm::LlmError> {
        let Some(odds) = self.odds else {
            return Ok(None);
        };
        assert_eq!(words, ["yes", "no"]);
        *self.judged.lock().unwrap() += 1;
        let user = req.messages.last().map_or("", |m| m.content.as_str());
        let text = user.split("Question:").next().unwrap_or("");
        let yes = odds
            .iter()
            .find(|(w, _)| text.contains(w))
            .map_or(0.1, |(_, p)| *p);
        Ok(Some(vec![yes, 1.0 - yes]))
    }
    fn chat(
        &self,
        req: &knowhub_llm::ChatRequest,
        on_token: &mut dyn FnMut(&str) -> bool,
    ) -> Result<knowhub_llm::ChatResponse, knowhub_llm::LlmError> {
        let system = req.messages.first().map_or("", |m| m.content.as_str());
        let user = req.messages.last().map_or("", |m| m.content.as_str());
        let text = if system.contains("route questions") {
            "DOC"
        } else if system.contains("whether a text answers a question") {
            *self.judged.lock().unwrap() += 1;
            match self.answers_in {
                Some(words) => {
                    let text = user.split("Question:").next().unwrap_or("");
                    if text.contains(words) { "yes" } else { "no" }
                }
                None => self.verdict,
            }
        } else if system.contains("Rewrite the follow-up") {
            // Like a small model, it hands the follow-up back as it was.
            user.split("Follow-up: ")
                .nth(1)
                .and_then(|rest| rest.lines().next())
                .unwrap_or("")
        } else {
            if system.contains("NO_ANSWER") {
                *self.asked.lock().unwrap() += 1;
            }
            self.reply
        };
        on_token(text);
        Ok(knowhub_llm::ChatResponse {
            text: text.to_string(),
            prompt_tokens: 1,
            completion_tokens: 1,
            finish: knowhub_llm::Finish::Eos,
            elapsed: std::time::Duration::ZERO,
            time_to_first_token: std::time::Duration::ZERO,
        })
    }
}

#[test]
fn the_writer_is_not_asked_when_no_sentence_answers() {
    let kb = backups_and_lunch();
    // (question, whether the writer is asked, how it ends)
    let table: &[(&str, usize, StopReason)] = &[
        // Passages in the question's language, none of whose sentences answers it: a small
        // model would answer with one of them anyway.
        (
            "Where is the canteen menu for backups archived?",
            0,
            StopReason::NoEvidence,
        ),
        // A sentence answers: the writer writes.
        ("How long are backups kept?", 1, StopReason::Ok),
        // Across languages words cannot tell: the writer reads and translates.
        ("backups 保留多久？", 1, StopReason::Ok),
    ];
    for (question, asked, stop) in table {
        let writer = std::sync::Arc::new(Writer {
            reply: "Backups are kept for 35 days [1].",
            ..Writer::default()
        });
        let agent = Agent::without_engine(Some(writer.clone()), AgentOptions::default());
        let mut req = AskRequest::new(*question);
        req.ephemeral = true;
        let out = agent.ask_in(&kb, "trace-w", &req, &mut |_| {}).unwrap();
        assert_eq!(*writer.asked.lock().unwrap(), *asked, "{question}");
        assert_eq!(out.state.output.stop_reason, *stop, "{question}");
    }
}

#[test]
fn a_follow_up_the_writer_hands_back_unchanged_carries_the_earlier_question() {
    let kb = backups_and_lunch();
    let writer = std::sync::Arc::new(Writer {
        reply: "Backups are kept for 35 days [1].",
        ..Writer::default()
    });
    let agent = Agent::without_engine(Some(writer), AgentOptions::default());
    let first = agent
        .ask_in(
            &kb,
            "trace-1",
            &AskRequest::new("How long are backups kept?"),
            &mut |_| {},
        )
        .unwrap();
    let mut follow_up = AskRequest::new("And when do they run?");
    follow_up.session = first.session_id.clone();
    agent
        .ask_in(&kb, "trace-2", &follow_up, &mut |_| {})
        .unwrap();
    let searched = kb.searched.lock().unwrap();
    let last = searched.last().unwrap();
    assert!(
        last.contains("backups") && last.contains("when do they run"),
        "{searched:?}"
    );
}

/// `question` asked of `kb` with `writer` as the model, in a new conversation that is kept.
fn ask_with(
    kb: &Fake,
    writer: &std::sync::Arc<Writer>,
    question: &str,
) -> knowhub_agent::AskOutcome {
    let agent = Agent::without_engine(Some(writer.clone()), AgentOptions::default());
    agent
        .ask_in(kb, "trace-w", &AskRequest::new(question), &mut |_| {})
        .unwrap()
}

#[test]
fn a_model_that_reads_for_meaning_decides_whether_the_best_sentences_answer() {
    let kb = backups_and_lunch();
    // (weights the model says it has, its verdict, prompts asking for a verdict, whether the
    // writer is asked, how it ends)
    let table: &[(Option<u64>, &str, usize, usize, StopReason)] = &[
        // A server's model (size unknown) reads the one sentence that passes the word test
        // and finds no answer in it: nobody writes one.
        (None, "No.", 1, 0, StopReason::NoEvidence),
        (Some(1_500_000_000), "no", 1, 0, StopReason::NoEvidence),
        // It finds the answer: the writer writes.
        (None, "Yes", 1, 1, StopReason::Ok),
        // A reply that is no verdict withholds nothing.
        (None, "The text says 35 days.", 1, 1, StopReason::Ok),
        // A small model is not asked: it says "no" of too many sentences that answer.
        (Some(500_000_000), "no", 0, 1, StopReason::Ok),
    ];
    for (parameters, verdict, judged, asked, stop) in table {
        let writer = std::sync::Arc::new(Writer {
            reply: "Backups are kept for 35 days [1].",
            verdict,
            parameters: *parameters,
            ..Writer::default()
        });
        let out = ask_with(&kb, &writer, "How long are backups kept?");
        let case = format!("{parameters:?} {verdict:?}");
        assert_eq!(*writer.judged.lock().unwrap(), *judged, "{case}");
        assert_eq!(*writer.asked.lock().unwrap(), *asked, "{case}");
        assert_eq!(out.state.output.stop_reason, *stop, "{case}");
        if *stop == StopReason::NoEvidence {
            assert!(out.state.output.rendered_sources.is_empty(), "{case}");
            let trace = kb.traces.lock().unwrap().last().unwrap().state.clone();
            assert!(trace.contains("found no answer in them"), "{case}: {trace}");
        }
    }
}

#[test]
fn a_sentence_read_as_no_answer_does_not_lead_the_extractive_answer() {
    let kb = Fake {
        passages: vec![
            ("vault", "Backups are stored in the basement vault."),
            ("team", "Backups are stored by the operations team."),
        ],
        ..Fake::default()
    };
    // The writer's drafts say nothing ("2 [1]"), so the extractive answer is given; the model
    // finds the answer only in the second sentence.
    let writer = std::sync::Arc::new(Writer {
        reply: "2 [1]",
        answers_in: Some("operations team"),
        ..Writer::default()
    });
    let out = ask_with(&kb, &writer, "Who stores the backups?");
    let answer = &out.state.output.final_answer;
    assert_eq!(*writer.judged.lock().unwrap(), 2, "{answer}");
    assert_eq!(out.state.output.stop_reason, StopReason::Ok, "{answer}");
    assert!(
        answer.starts_with("Backups are stored by the operations team"),
        "{answer}"
    );
    assert!(!answer.contains("vault"), "{answer}");
}

#[test]
fn an_answer_the_model_read_in_a_sentence_is_given_when_its_writer_finds_none() {
    let kb = backups_and_lunch();
    // (verdict on the sentence, how it ends, written by)
    let table: &[(&str, StopReason, &str)] = &[
        // Read sentence by sentence, the model found the answer: the sentence is the answer.
        ("yes", StopReason::Ok, "extractive"),
        // No verdict: the writer's "no answer" stands.
        ("The text says so.", StopReason::NoEvidence, "none"),
    ];
    for (verdict, stop, by) in table {
        let writer = std::sync::Arc::new(Writer {
            reply: "NO_ANSWER",
            verdict,
            ..Writer::default()
        });
        let out = ask_with(&kb, &writer, "How long are backups kept?");
        assert_eq!(out.state.output.stop_reason, *stop, "{verdict}");
        assert_eq!(out.state.draft.written_by, *by, "{verdict}");
        if *stop == StopReason::Ok {
            assert!(
                out.state.output.final_answer.contains("kept for 35 days"),
                "{}",
                out.state.output.final_answer
            );
        }
    }
}

#[test]
fn a_model_that_gives_its_probabilities_reads_every_sentence_and_the_surest_leads() {
    let kb = Fake {
        passages: vec![
            ("vault", "Backups are stored in the basement vault."),
            ("team", "Backups are stored by the operations team."),
        ],
        ..Fake::default()
    };
    // (probabilities of "yes", sentences read, how it ends, what leads the answer)
    type Odds = &'static [(&'static str, f32)];
    let table: &[(Odds, usize, StopReason, &str)] = &[
        // Both answer; the second, by the words the lesser match, is the surer one: it leads
        // and the first follows.
        (
            &[("vault", 0.6), ("operations", 0.9)],
            2,
            StopReason::Ok,
            "Backups are stored by the operations team",
        ),
        (
            &[("vault", 0.9), ("operations", 0.6)],
            2,
            StopReason::Ok,
            "Backups are stored in the basement vault",
        ),
        // Neither answers, however the model leans.
        (
            &[("vault", 0.4), ("operations", 0.3)],
            2,
            StopReason::NoEvidence,
            "",
        ),
    ];
    for (odds, judged, stop, lead) in table {
        // The writer's drafts say nothing ("2 [1]"), so the extractive answer is given.
        let writer = std::sync::Arc::new(Writer {
            reply: "2 [1]",
            odds: Some(odds),
            parameters: Some(1_500_000_000),
            ..Writer::default()
        });
        let out = ask_with(&kb, &writer, "Who stores the backups?");
        let answer = &out.state.output.final_answer;
        assert_eq!(
            *writer.judged.lock().unwrap(),
            *judged,
            "{odds:?}: {answer}"
        );
        assert_eq!(out.state.output.stop_reason, *stop, "{odds:?}: {answer}");
        if *stop == StopReason::Ok {
            assert!(answer.starts_with(lead), "{odds:?}: {answer}");
            assert!(
                answer.contains("vault") && answer.contains("operations"),
                "{answer}"
            );
            let trace = kb.traces.lock().unwrap().last().unwrap().state.clone();
            assert!(trace.contains("\"yes\":0.9"), "{trace}");
        }
    }
}
