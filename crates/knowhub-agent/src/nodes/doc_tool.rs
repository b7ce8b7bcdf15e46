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
use crate::text::{overlap, questions, sentence_spans, terms};

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
        let retrieval = match deps.kb.retrieve(&query, &opts) {
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
            url: hit.url.clone(),
            meta: hit.meta.clone(),
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
pub(crate) struct Window {
    pub(crate) range: Range<usize>,
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
pub(crate) fn window(text: &str, query: &str, max: usize) -> Window {
    let wanted = terms(query);
    // (byte start, byte end, characters, query terms held) of each piece: a sentence or a
    // line, as the answer nodes read them.
    let pieces: Vec<(usize, usize, usize, usize)> = sentence_spans(text)
        .into_iter()
        .map(|span| {
            let piece = &text[span.clone()];
            let held = terms(piece).intersection(&wanted).count();
            (span.start, span.end, piece.chars().count(), held)
        })
        .collect();
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
/// starts), moved on by the last section title on a line of the text before `start` or on the
/// line at `start` (see [`is_section_title`]), unless it is one of the path's own. A title of
/// depth d (the count of its numbers: "1.2" is 2, "三、" is 1) replaces the path's titles of
/// depth d or more.
fn heading_at(path: &[String], text: &str, start: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    // Up to the line `start` is on.
    let upto = text[..start].matches('\n').count() + 1;
    // The numberings known so far: the path's, then each title found (a "2.1" under the
    // chunk's own "2. Leave").
    let mut known: Vec<Numbering> = path.iter().filter_map(|h| numbering(h)).collect();
    let mut out = path.to_vec();
    for (i, line) in lines.iter().enumerate().take(upto) {
        // The chunk's text opens with its own path's titles: those say nothing new.
        if out.iter().any(|h| h == line) {
            continue;
        }
        let Some(number) =
            numbering(line).filter(|n| is_section_title(line, n, &known, &lines[i + 1..]))
        else {
            continue;
        };
        let depth = number.numbers.len();
        let above = out
            .iter()
            .take_while(|h| numbering(h).is_none_or(|n| n.numbers.len() < depth))
            .count();
        out.truncate(above);
        out.push((*line).to_string());
        known.push(number);
    }
    out
}

/// A section title's numbering: "1.2 Working hours" is [1, 2], "2. Leave" [2], "三、假期" [3]
/// in Chinese numerals.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Numbering {
    numbers: Vec<u32>,
    chinese: bool,
}

/// Whether `line` (numbered `number`) of a chunk is a section title, given the numberings of
/// the titles `known` above it and the chunk's lines `after` it: numbered
/// ([`looks_numbered_heading`]) the way they are, under one of them, and not one of them. A
/// numbered list item looks the same ("2. Open an incident channel"), so a title of one number
/// ("2. Leave") counts only where a later line opens a section under it ("2.1 Annual leave");
/// "1.2 Working hours" needs a known title numbered 1 (or 1.x); "三、假期" a known title
/// numbered in Chinese numerals.
fn is_section_title(line: &str, number: &Numbering, known: &[Numbering], after: &[&str]) -> bool {
    if !looks_numbered_heading(line) || known.iter().any(|k| k.numbers == number.numbers) {
        return false;
    }
    match number.numbers.as_slice() {
        _ if number.chinese => known.iter().any(|k| k.chinese),
        [top] => after.iter().any(|l| {
            looks_numbered_heading(l)
                && numbering(l)
                    .is_some_and(|n| !n.chinese && n.numbers.len() == 2 && n.numbers[0] == *top)
        }),
        [parent @ .., _] => known.iter().any(|k| k.numbers.starts_with(parent)),
        [] => false,
    }
}

/// The numbering of a section title ("1.2 Working hours", "2. Leave", "三、假期", "十二、附则"),
/// or `None` when it has none.
fn numbering(title: &str) -> Option<Numbering> {
    use chinese_number::{ChineseCountMethod, ChineseToNumber};
    let title = title.trim();
    let number: String = title
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let numbers: Vec<u32> = number
        .split('.')
        .filter(|p| !p.is_empty())
        .map_while(|p| p.parse().ok())
        .collect();
    if !numbers.is_empty() {
        return Some(Numbering {
            numbers,
            chinese: false,
        });
    }
    let numeral: String = title
        .chars()
        .take_while(|c| "一二三四五六七八九十".contains(*c))
        .collect();
    if numeral.is_empty() || !title[numeral.len()..].starts_with('、') {
        return None;
    }
    let value: u32 = numeral.to_number(ChineseCountMethod::TenThousand).ok()?;
    Some(Numbering {
        numbers: vec![value],
        chinese: true,
    })
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
        // One sentence longer than the limit: its head, as before; an empty passage stays empty.
        let run_on = "on-call allowance ".repeat(20);
        assert_eq!(
            window(&run_on, "on-call allowance", max).chars().count(),
            max
        );
        assert_eq!(window("", "on-call allowance", max), "");
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
            // "2. Leave" opens no "2.1" here: it may be a list item, and is not read as a title.
            (
                start("Take 10"),
                path(&["Handbook", "1. Working at Northwind", "1.2 Working hours"]),
            ),
        ];
        for (at, expected) in rows {
            assert_eq!(
                &heading_at(&handbook, chunk, *at),
                expected,
                "{}",
                &chunk[*at..]
            );
        }
        let zh = "二、工作时间与加班\n2.1 标准工时\n每周工作 40 小时。\n2.2 加班\n加班须提前申请。\n\
                  三、假期\n3.1 年假\n每年 10 个工作日。\n3.4 其他假期\n婚假 3 个工作日。";
        let zh_path = path(&["员工手册", "二、工作时间与加班", "2.1 标准工时"]);
        // (a sentence, its heading path)
        let zh_rows: &[(&str, &[&str])] = &[
            (
                "每周工作",
                &["员工手册", "二、工作时间与加班", "2.1 标准工时"],
            ),
            ("加班须", &["员工手册", "二、工作时间与加班", "2.2 加班"]),
            ("每年 10", &["员工手册", "三、假期", "3.1 年假"]),
            ("婚假", &["员工手册", "三、假期", "3.4 其他假期"]),
        ];
        for (sentence, expected) in zh_rows {
            assert_eq!(
                heading_at(&zh_path, zh, zh.find(sentence).unwrap_or(0)),
                path(expected),
                "{sentence}"
            );
        }
        assert_eq!(numbering("十二、附则").map(|n| n.numbers), Some(vec![12]));
        assert_eq!(numbering("二十三、附录").map(|n| n.numbers), Some(vec![23]));
        assert_eq!(numbering("、开头"), None);
        // A title of one number that opens a section under it is one.
        let leave = format!("{chunk}\n2.1 Annual leave\nNew hires get 10 days.");
        assert_eq!(
            heading_at(&handbook, &leave, leave.find("Take 10").unwrap_or(0)),
            path(&["Handbook", "2. Leave"])
        );
        assert_eq!(
            heading_at(&handbook, &leave, leave.find("New hires").unwrap_or(0)),
            path(&["Handbook", "2. Leave", "2.1 Annual leave"])
        );
        // Numbered list items are not section titles.
        let steps = path(&[
            "Runbook",
            "2. First response",
            "2.1 Steps for the on-call engineer",
        ]);
        let list = "2.1 Steps for the on-call engineer\n1. Acknowledge the page\n\
                    2. Open an incident channel\n3. Post the alert link\nThen wait.";
        assert_eq!(
            heading_at(&steps, list, list.find("Then").unwrap_or(0)),
            steps
        );
        // No numbered title before the part: the chunk's own path.
        let plain = path(&["Guide", "Remote work"]);
        assert_eq!(heading_at(&plain, "Remote work\nUse the VPN.", 12), plain);
    }
}
