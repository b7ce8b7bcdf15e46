//! DocToolNode: retrieval as evidence, in a bounded ReAct loop: retrieve → observe → (if the
//! passages do not cover the question) reformulate → retrieve again. The loop stops at the
//! step limit, when a step brings no new passage (no new information), or when the passages
//! cover the question; errors use a retry budget, then the node degrades (to SQL when there
//! is data, else to abstaining). A question of several questions ("How long is probation?
//! Who approves an extension?") is searched part by part first, each part for its share of
//! the passages: searched whole, the part with more words takes every place.

use std::collections::HashSet;
use std::ops::Range;

use knowhub_engine::{RetrievalMode, SearchHit, SearchOptions};
use knowhub_llm::Message;
use serde_json::json;

use super::{Deps, StepReport, clip};
use crate::Result;
use crate::brief::looks_numbered_heading;
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
                state.evidence_items.push(evidence(&hit, &snapshot, &query));
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

/// `hit` as evidence, its text the part of the passage that `query` found (see [`window`]),
/// under the section of the sentence it is found by (see [`heading_at`]): a passage may run
/// over from one section into the next.
fn evidence(hit: &SearchHit, snapshot: &str, query: &str) -> EvidenceItem {
    let kept = window(&hit.text, query, EVIDENCE_CHARS);
    let heading = heading_at(&hit.heading_path, &hit.text, kept.focus);
    let text = hit.text[kept.range].trim().to_string();
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
            heading,
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

/// The part of a passage the evidence keeps, as byte offsets into its text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Window {
    range: Range<usize>,
    /// Where the sentence of the part that holds the most of the search's terms starts (the
    /// part's start when none holds any): what the part is cited for, whose section it is.
    focus: usize,
}

/// The part of `text` the evidence keeps: all of it when it has at most `max` characters, else
/// the run of whole sentences (or lines) of at most `max` characters that holds the most of
/// `query`'s terms, the earliest of equals. A passage longer than that is cut where the
/// question is answered, not at its head: the handbook passage that a search for "on-call
/// allowance per week" finds by its last sentence ("…receive an on-call allowance of CNY 300
/// per week") runs on from the probation rules before it, and its first 1,200 characters held
/// none of it — the answer was searched for, found, and not shown.
fn window(text: &str, query: &str, max: usize) -> Window {
    let wanted = terms(query);
    // (byte start, byte end, characters, query terms held) of each piece: a sentence, ended
    // by its punctuation or a line break.
    let mut pieces: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = c == '\n'
            || matches!(c, '。' | '！' | '？' | '；')
            || (matches!(c, '.' | '!' | '?' | ';') && next.is_none_or(char::is_whitespace));
        let end = i + c.len_utf8();
        if ends || next.is_none() {
            let piece = &text[start..end];
            let held = terms(piece).intersection(&wanted).count();
            pieces.push((start, end, piece.chars().count(), held));
            start = end;
        }
    }
    // The piece of `range` holding the most terms, the earliest of equals.
    let focus = |range: &Range<usize>| {
        pieces
            .iter()
            .filter(|p| range.contains(&p.0) && p.3 > 0)
            .fold(None::<(usize, usize)>, |best, p| match best {
                Some((held, _)) if held >= p.3 => best,
                _ => Some((p.3, p.0)),
            })
            .map_or(range.start, |(_, at)| at)
    };
    let kept = |range: Range<usize>| Window {
        focus: focus(&range),
        range,
    };
    // Where the first `max` characters end: all of a short text, or the head of a long one.
    let head = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    if head == text.len() {
        return kept(0..head);
    }
    // The best run of pieces that fits (each start, as far as it fits; the pieces are few).
    let mut best = (0, 0, 0); // (terms held, first piece, last piece + 1)
    for first in 0..pieces.len() {
        let (mut size, mut held, mut last) = (0, 0, first);
        while last < pieces.len() && size + pieces[last].2 <= max {
            size += pieces[last].2;
            held += pieces[last].3;
            last += 1;
        }
        if last > first && held > best.0 {
            best = (held, first, last);
        }
    }
    let (_, first, last) = best;
    if last == 0 {
        // Nothing held a term, or every piece alone is longer than `max`: the head.
        return kept(0..head);
    }
    kept(pieces[first].0..pieces[last - 1].1)
}

/// The heading path at byte `start` of a chunk's `text`: the chunk's own `path` (where it
/// starts), moved on by the last numbered section title ([`looks_numbered_heading`]: "1.2
/// Working hours", "三、假期") on a line of the text before `start` or on the line at `start`,
/// unless it is one of the path's own. A title of depth d (the count of its numbers: "1.2" is
/// 2, "2." and "三、" are 1) replaces the path's titles of depth d or more.
fn heading_at(path: &[String], text: &str, start: usize) -> Vec<String> {
    let before = text[..start]
        .lines()
        .chain(text[start..].lines().take(1))
        .map(str::trim)
        .filter(|line| looks_numbered_heading(line))
        .last();
    // The chunk's text opens with its own path's titles: those say nothing new.
    let Some(title) = before.filter(|t| !path.iter().any(|h| h == t)) else {
        return path.to_vec();
    };
    let Some(depth) = numbering_depth(title) else {
        return path.to_vec();
    };
    let mut out: Vec<String> = path
        .iter()
        .take_while(|h| numbering_depth(h).is_none_or(|d| d < depth))
        .cloned()
        .collect();
    out.push(title.to_string());
    out
}

/// How many numbers a section title's numbering has ("1.2 Working hours" 2, "2. Leave" and
/// "三、假期" 1), or `None` when it has none.
fn numbering_depth(title: &str) -> Option<usize> {
    let number: String = title
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let parts = number.split('.').filter(|p| !p.is_empty()).count();
    if parts > 0 {
        return Some(parts);
    }
    let chinese = title
        .trim()
        .trim_start_matches(|c: char| "一二三四五六七八九十".contains(c));
    (chinese.len() < title.trim().len() && chinese.starts_with('、')).then_some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_passage_is_kept_where_the_question_is_answered() {
        let probation = "1.1 Probation period\nEvery new permanent employee starts with a \
            probation period of 3 months. The notice period for either side is 3 working days.\n";
        let filler = "Overtime must be approved in advance by your manager in the HR portal. ";
        let on_call = "On-call engineers receive an on-call allowance of CNY 300 per week.";
        let long = format!("{probation}{}{on_call}", filler.repeat(6));
        let max = 200;
        assert!(long.chars().count() > max);
        // (passage, query, a sentence kept, a sentence left out)
        let rows: &[(&str, &str, &str, Option<&str>)] = &[
            (
                &long,
                "What is the on-call allowance per week?",
                on_call,
                Some("1.1 Probation"),
            ),
            (
                &long,
                "How long is the probation period?",
                "Every new permanent employee",
                Some(on_call),
            ),
            // Nothing of the query in it: the head, as before.
            (
                &long,
                "expense claims",
                "1.1 Probation period",
                Some(on_call),
            ),
            // Short enough: whole.
            (probation, "on-call allowance", "1.1 Probation period", None),
            (
                "值班工程师按排班表轮值。每值班一周发放值班补贴 300 元。",
                "值班补贴多少钱？",
                "值班补贴 300 元",
                None,
            ),
        ];
        let window =
            |text: &str, query: &str, max: usize| text[window(text, query, max).range].to_string();
        for (passage, query, kept, left_out) in rows {
            let w = window(passage, query, max);
            assert!(w.chars().count() <= max, "{query}: {w}");
            assert!(w.contains(kept), "{query}: {w}");
            if let Some(out) = left_out {
                assert!(!w.contains(out), "{query}: {w}");
            }
        }
        // Chinese sentences are cut at their own punctuation.
        let zh = format!(
            "{}每值班一周发放值班补贴 300 元。",
            "加班须提前在人事系统中提交申请。".repeat(20)
        );
        let w = window(&zh, "值班补贴多少钱？", 100);
        assert!(w.ends_with("每值班一周发放值班补贴 300 元。"), "{w}");
        assert!(w.starts_with("加班须"), "{w}");
    }

    #[test]
    fn a_passage_is_cited_under_the_section_of_the_sentence_it_is_found_by() {
        let chunk = "1.1 Probation period\nProbation lasts 3 months.\n1.2 Working hours\n\
                     On-call engineers receive an allowance of CNY 300 per week.";
        let path = vec!["Handbook".to_string(), "1.1 Probation period".to_string()];
        let found = window(chunk, "on-call allowance", 1_200);
        assert_eq!(found.range, 0..chunk.len());
        assert_eq!(
            heading_at(&path, chunk, found.focus),
            ["Handbook", "1.2 Working hours"]
        );
        let probation = window(chunk, "how long is probation", 1_200);
        assert_eq!(heading_at(&path, chunk, probation.focus), path);
        // Found by nothing in it: where it starts.
        assert_eq!(window(chunk, "expense claims", 1_200).focus, 0);
    }

    #[test]
    fn the_part_kept_is_under_the_section_it_is_in() {
        let path = |p: &[&str]| p.iter().map(|h| h.to_string()).collect::<Vec<_>>();
        let chunk = "1. Working at Northwind\n1.1 Probation period\nProbation lasts 3 months.\n\
                     1.2 Working hours\nCore hours are 10:00 to 16:00.\n2. Leave\nTake 10 days.";
        let start = |s: &str| chunk.find(s).unwrap_or(0);
        let handbook = path(&[
            "Handbook",
            "1. Working at Northwind",
            "1.1 Probation period",
        ]);
        // (where the part starts, its heading path)
        let rows: &[(usize, Vec<String>)] = &[
            (0, handbook.clone()),
            (start("Probation lasts"), handbook.clone()),
            (
                start("Core hours"),
                path(&["Handbook", "1. Working at Northwind", "1.2 Working hours"]),
            ),
            // The part's first line may be the title.
            (
                start("1.2 Working"),
                path(&["Handbook", "1. Working at Northwind", "1.2 Working hours"]),
            ),
            (start("Take 10"), path(&["Handbook", "2. Leave"])),
        ];
        for (at, expected) in rows {
            assert_eq!(
                &heading_at(&handbook, chunk, *at),
                expected,
                "{}",
                &chunk[*at..]
            );
        }
        let zh =
            "二、工作时间与加班\n2.1 标准工时\n每周工作 40 小时。\n三、假期\n婚假 3 个工作日。";
        let zh_path = path(&["员工手册", "二、工作时间与加班", "2.1 标准工时"]);
        assert_eq!(
            heading_at(&zh_path, zh, zh.find("婚假").unwrap_or(0)),
            path(&["员工手册", "三、假期"])
        );
        // No numbered title before the part: the chunk's own path.
        let plain = path(&["Guide", "Remote work"]);
        assert_eq!(heading_at(&plain, "Remote work\nUse the VPN.", 12), plain);
    }
}
