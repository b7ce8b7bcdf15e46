//! DocToolNode: retrieval as evidence, in a bounded ReAct loop: retrieve → observe → (if the
//! passages do not cover the question) reformulate → retrieve again. The loop stops at the
//! step limit, when a step brings no new passage (no new information), or when the passages
//! cover the question; errors use a retry budget, then the node degrades (to SQL when there
//! is data, else to abstaining). A question of several questions ("How long is probation?
//! Who approves an extension?") is searched part by part first, each part for its share of
//! the passages: searched whole, the part with more words takes every place.

use std::collections::HashSet;

use knowhub_engine::{RetrievalMode, SearchHit, SearchOptions};
use knowhub_llm::Message;
use serde_json::json;

use super::{Deps, StepReport, clip};
use crate::Result;
use crate::state::{
    AgentState, EvidenceAuthz, EvidenceItem, EvidenceSource, RagSummary, Route, ToolError,
};
use crate::text::{overlap, questions, terms};

/// Passage text kept per evidence item (seed: 500–1200 characters).
const EVIDENCE_CHARS: usize = 1_200;

pub(crate) fn run(state: &mut AgentState, deps: &mut Deps<'_>) -> Result<StepReport> {
    let max_steps = deps.options.max_tool_steps.max(1);
    let mut retries = deps.options.retry_budget;
    let asked: Vec<String> = questions(&state.input.normalized_query)
        .into_iter()
        .map(str::to_string)
        .collect();
    // The searches planned before observing: each part of a question of several, else the
    // question itself.
    let searches = asked.len().min(max_steps);
    let per_search = if searches > 1 {
        deps.options.top_k.div_ceil(searches).max(2)
    } else {
        deps.options.top_k
    };
    let mut planned = asked.into_iter().take(searches);
    let mut query = planned
        .next()
        .unwrap_or_else(|| state.input.normalized_query.clone());
    let mut attempts = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut step = 0;
    let mut last_error = None;
    let question_terms = terms(&state.input.normalized_query);
    while step < max_steps {
        step += 1;
        attempts.push(query.clone());
        let opts = SearchOptions {
            limit: per_search,
            max_per_document: 2,
            mode: RetrievalMode::Hybrid,
            ..SearchOptions::default()
        };
        let retrieval = match deps.engine.retrieve(deps.ctx, &query, &opts) {
            Ok(r) => r,
            Err(e) if retries > 0 => {
                retries -= 1;
                last_error = Some(e.to_string());
                continue;
            }
            Err(e) => {
                last_error = Some(e.to_string());
                break;
            }
        };
        let snapshot = retrieval.trace.permission_snapshot.clone();
        let mut new = 0;
        for hit in retrieval.hits {
            if seen.insert(hit.evidence_id.clone()) {
                new += 1;
                ids.push(hit.evidence_id.clone());
                state.evidence_items.push(evidence(&hit, &snapshot));
            }
        }
        if let Some(next) = planned.next() {
            query = next;
            continue;
        }
        // Observe: do the passages so far cover the question's terms?
        let covered: HashSet<String> = state
            .evidence_items
            .iter()
            .flat_map(|e| terms(&e.text))
            .collect();
        let coverage = overlap(&question_terms, &covered);
        if new == 0 || coverage >= 0.6 || step >= max_steps {
            break;
        }
        // Reformulate: the LLM writes a keyword query; without one, drop to the rarest terms.
        let next = reformulate(state, deps, &question_terms, &covered);
        if next.is_empty() || attempts.contains(&next) {
            break;
        }
        query = next;
    }
    let mut report = StepReport::ok(
        "retrieve_and_pack",
        json!({ "q": clip(&state.input.normalized_query, 200), "route": state.plan.route.as_str() }),
        json!({
            "evidence_added": ids.len(),
            "steps": attempts.len(),
            "note": format!("attempts={}", attempts.len()),
        }),
    )
    .with_tool("rag_retriever");
    if let Some(err) = &last_error
        && ids.is_empty()
    {
        state.tools.errors.push(ToolError {
            tool: "rag_retriever".into(),
            kind: "RetrievalError".into(),
            msg: err.clone(),
        });
        report = report.with_error("RetrievalError", err);
        // Degrade: a failed document search can still be answered from data.
        if state.plan.route == Route::Doc && deps.options.degrade_to_sql {
            state.plan.route = Route::Hybrid;
        }
    }
    state.tools.rag = Some(RagSummary {
        query: state.input.normalized_query.clone(),
        top_k: deps.options.top_k,
        attempts,
        returned_evidence_ids: ids,
    });
    Ok(report)
}

fn reformulate(
    state: &mut AgentState,
    deps: &mut Deps<'_>,
    question: &HashSet<String>,
    covered: &HashSet<String>,
) -> String {
    if deps.llm.is_some() {
        let system = "Rewrite the question as a short keyword search query (3 to 8 keywords, \
                      same language as the question, synonyms welcome). Reply with the query only.";
        if let Ok(text) = deps.ask_llm(
            state,
            vec![
                Message::system(system),
                Message::user(state.input.normalized_query.clone()),
            ],
            32,
            false,
        ) {
            let q = text
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"')
                .to_string();
            if !q.is_empty() {
                return q;
            }
        }
    }
    // The terms not found yet carry the missing information.
    let mut missing: Vec<&String> = question.iter().filter(|t| !covered.contains(*t)).collect();
    missing.sort();
    missing
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn evidence(hit: &SearchHit, snapshot: &str) -> EvidenceItem {
    let text: String = hit.text.chars().take(EVIDENCE_CHARS).collect();
    EvidenceItem {
        evidence_id: hit.evidence_id.clone(),
        kind: "doc_chunk".into(),
        hash: hit
            .evidence_id
            .rsplit(':')
            .next()
            .unwrap_or_default()
            .to_string(),
        text,
        score: Some(hit.score),
        source: EvidenceSource {
            doc_id: Some(hit.document_id.0),
            title: Some(hit.title.clone()),
            page: hit.page_start,
            heading: hit.heading_path.clone(),
            chunk_id: Some(hit.chunk_id.0),
            uri: Some(format!(
                "kb://doc/{}#chunk={}",
                hit.document_id.0, hit.chunk_id.0
            )),
            ..EvidenceSource::default()
        },
        authz: EvidenceAuthz {
            result: "allow".into(),
            perm_snapshot_id: snapshot.to_string(),
        },
        by: "retriever".into(),
    }
}
