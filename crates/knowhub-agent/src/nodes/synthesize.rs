//! SynthesizeNode (seed 004 §4.3.8): answers only from the evidence, citing it as [1], [2]…;
//! then checks every citation and every claim (`citations.rs`), regenerates once if nothing
//! survives, and falls back to the extractive answer. Insufficient evidence → a plain
//! "cannot confirm from the authorised material" in the user's language, `no_evidence`.
//! Brief answers (`AgentOptions::brief_answers`) take their own path (`brief.rs`): the
//! evidence's own words, checked to stand in the cited item.

use knowhub_llm::Message;
use serde_json::json;

use super::{Deps, StepReport};
use crate::brief::{self, Rejected};
use crate::citations;
use crate::extractive;
use crate::lang::Lang;
use crate::reading;
use crate::state::{AgentState, Citation, EvidenceItem, RenderedSource, StopReason};
use crate::{AgentEvent, Result};
use knowhub_engine::DocumentMeta;

/// Evidence items given to the writer at most.
const MAX_EVIDENCE: usize = 8;
/// The model's way of saying the evidence does not answer.
const NO_ANSWER: &str = brief::NO_ANSWER;
/// Tokens a brief answer may take: a phrase, not a paragraph.
const BRIEF_TOKENS: usize = 64;
/// Rows of a query result the writer reads at most. A longer result is shown to the user
/// whole, without a draft: a draft made from part of the rows reads as the whole answer (the
/// 1.5B wrote "The projects with a budget over 100000 are …" naming the 10 rows it was shown
/// of 14), and every row in the prompt costs the writer time.
pub(crate) const WRITER_ROWS: usize = 10;

pub(crate) fn run(state: &mut AgentState, deps: &mut Deps<'_>) -> Result<StepReport> {
    let lang = Lang::from_code(&state.input.language);
    if let Some(reason) = state.plan.validation.reason {
        let answer = match reason {
            StopReason::ToolError => lang.tool_error(),
            StopReason::PermissionDenied => lang.permission_denied(),
            _ => lang.no_evidence(),
        };
        finish(state, answer.to_string(), Vec::new(), reason, "none", deps);
        return Ok(StepReport::ok(
            "abstain",
            json!({ "reason": reason.as_str() }),
            json!({}),
        ));
    }
    let evidence = answer_evidence(state.usable_evidence());
    let refs: Vec<&EvidenceItem> = evidence.iter().collect();
    if deps.options.brief_answers {
        return run_brief(state, deps, &refs, lang);
    }
    let question = state.input.normalized_query.clone();
    let mut cut = Vec::new();
    let mut attempts = 0;
    let rows_for_the_user = refs.iter().any(|e| more_rows_than_the_writer_reads(e));
    // The writer is not asked when nothing it reads could answer: no query result, and no
    // sentence of the passages shares enough of the question's words, states a figure of the
    // kind it asks for and names the numbers it names (the extractive answer's test). Asked
    // anyway, a small model answers with whatever sentence it was shown, and its words pass
    // the citation check because they are the evidence's. The test is one of words, so it is
    // made only when some passage is in the question's language; across languages the writer
    // translates.
    // Also the answer when no model writes one: worked out once.
    let mut extracted = extractive::answer(&question, &refs, lang);
    let unanswerable = deps.llm.is_some()
        && extracted.is_none()
        && !refs.iter().any(|e| e.kind == "sql_result")
        && refs
            .iter()
            .any(|e| e.kind == "doc_chunk" && Lang::detect(&e.text) == lang);
    // A model that reads for meaning is asked whether the sentences that pass the word test
    // answer; when it finds an answer in none of them, neither does the writer (which would
    // write one from the nearest sentence all the same) nor the extractive answer.
    let judged = if unanswerable || rows_for_the_user {
        Vec::new()
    } else {
        read_for_meaning(state, deps, &question, &refs, extracted.is_some())
    };
    let answers = |yes: &Option<f32>| yes.map(reading::answers);
    let read_no_answer =
        !judged.is_empty() && judged.iter().all(|(_, v)| answers(v) == Some(false));
    let read_an_answer = judged.iter().any(|(_, v)| answers(v) == Some(true));
    // The sentences it found no answer in neither lead the extractive answer nor stand beside
    // the writer's; those it found one in lead, the surest first.
    let mut read = extractive::Read::default();
    let mut found: Vec<(f32, String)> = Vec::new();
    for (sentence, yes) in &judged {
        match yes {
            Some(p) if reading::answers(*p) => found.push((*p, sentence.clone())),
            Some(_) => read.rejected.push(sentence.clone()),
            None => {}
        }
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    read.preferred = found.into_iter().map(|(_, s)| s).collect();
    if read != extractive::Read::default() && !read_no_answer {
        extracted = extractive::answer_as_read(&question, &refs, lang, &read);
    }
    let judged: Vec<serde_json::Value> = judged
        .into_iter()
        .map(|(sentence, yes)| {
            json!({
                "sentence": sentence,
                "answers": answers(&yes),
                "yes": yes.map(|p| (f64::from(p) * 100.0).round() / 100.0),
            })
        })
        .collect();
    // The trace says when the writer was not asked because of that.
    let answer_report = |state: &AgentState, attempts: usize, cut: usize| {
        let mut step = report(state, attempts, cut);
        step.out["result_too_long_for_the_writer"] = rows_for_the_user.into();
        if !judged.is_empty() {
            step.out["read_for_meaning"] = judged.clone().into();
        }
        step
    };
    if read_no_answer {
        extractive_or_abstain(state, deps, None, false, lang);
        let mut step = answer_report(state, 0, 0);
        step.out["writer_not_asked"] =
            "the model read the best sentences and found no answer in them".into();
        return Ok(step);
    }
    if unanswerable {
        extractive_or_abstain(state, deps, None, false, lang);
        let mut step = answer_report(state, 0, 0);
        step.out["writer_not_asked"] = "no sentence of the passages answers the question".into();
        return Ok(step);
    }
    if deps.llm.is_some() && !rows_for_the_user {
        // Checked on every streamed token: what only a copy would hold is listed once.
        let verbatim = as_listed(&refs);
        let copying = |draft: &str| copies_the_evidence(draft, &verbatim);
        // The evidence as the writer reads it, which the check holds the draft to: of each
        // passage, the part that holds the question's terms, within a share of the writer's
        // budget (every character is prompt time on a small model).
        let per_item =
            (deps.options.writer_evidence_chars / refs.len().max(1)).max(MIN_WRITER_ITEM_CHARS);
        let shown: Vec<String> = refs
            .iter()
            .map(|e| writer_text(e, &question, per_item))
            .collect();
        let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
        let titles: Vec<String> = refs.iter().map(|e| listing_title(e)).collect();
        let items: Vec<citations::Shown<'_>> = refs
            .iter()
            .zip(&shown)
            .zip(&titles)
            .map(|((e, text), title)| citations::Shown {
                title,
                text,
                data: (e.kind == "sql_result").then_some(e.text.as_str()),
            })
            .collect();
        // What may be shown of a draft as it is written: its complete sentences that pass the
        // check, once they say something. The user sees only checked text, never a draft
        // struck out.
        // The check runs once per complete sentence, not once per token.
        let last_checked: std::cell::RefCell<(String, String)> = Default::default();
        let checked_prefix = |text: &str, done: bool| -> String {
            let complete = if done {
                text
            } else {
                &text[..complete_sentences(text)]
            };
            let mut last = last_checked.borrow_mut();
            if last.0 == complete {
                return last.1.clone();
            }
            let shown = if complete.trim().is_empty() || copying(complete) {
                String::new()
            } else {
                let checked = citations::check_items(complete, &items, &question);
                if checked.cited.is_empty() || !checked.substantive {
                    String::new()
                } else {
                    checked.answer
                }
            };
            *last = (complete.to_string(), shown.clone());
            shown
        };
        for &strict in drafts(deps.llm.and_then(|llm| llm.parameters())) {
            attempts += 1;
            let messages = prompt(state, &refs, &shown, lang, strict);
            let Ok((text, on_screen)) = deps.ask_llm_checked(
                state,
                messages,
                deps.options.max_answer_tokens,
                &checked_prefix,
                &copying,
            ) else {
                break;
            };
            let checked = citations::check_items(&text, &items, &question);
            cut.extend(checked.cut.clone());
            if !on_screen.is_empty() {
                // What the user saw is the answer: each of its sentences passed the check.
                state.draft.written_by = "llm".into();
                state.draft.cut_sentences = cut.clone();
                state.draft.confidence =
                    0.6 + 0.3 * (1.0 - checked.cut.len() as f32 / 4.0).max(0.0);
                let mut answer = on_screen;
                // The sentence of the evidence that best answers (one per question asked)
                // follows the model's words when they do not already say it: a small model
                // often answers with a neighbouring sentence, or one part of two.
                {
                    let more = extractive::not_covered(&question, &refs, &answer, &read);
                    if !more.is_empty() {
                        let mut addition = format!("\n\n{}", lang.extractive_more());
                        for (s, k, items) in more {
                            addition.push_str(&format!("\n- {} [{k}]", s.trim()));
                            for item in items {
                                addition.push_str(&format!("\n  - {} [{k}]", item.trim()));
                            }
                        }
                        (deps.events)(&AgentEvent::Token(addition.clone()));
                        answer.push_str(&addition);
                    }
                }
                let (_, numbers) = citations::markers(&answer, refs.len());
                let mut cited: Vec<usize> = Vec::new();
                for k in numbers {
                    if !cited.contains(&k) {
                        cited.push(k);
                    }
                }
                finish(state, answer, cited, StopReason::Ok, "llm", deps);
                return Ok(answer_report(state, attempts, cut.len()));
            }
            if text.contains(NO_ANSWER) {
                // The model read the evidence and found no answer: trusted, so a question the
                // documents do not answer is said to be unanswered rather than met with the
                // nearest sentences. Unless, read sentence by sentence, it found the answer in
                // one of them: then that sentence leads the extractive answer. Given eight
                // passages at once, the 1.5B says "no answer" of answers it finds when asked
                // of the one sentence (4 of gimp-help's first 60 questions).
                state.draft.cut_sentences = cut.clone();
                let found = if read_an_answer {
                    extracted.clone()
                } else {
                    None
                };
                extractive_or_abstain(state, deps, found, false, lang);
                return Ok(answer_report(state, attempts, cut.len()));
            }
            if copying(&text) {
                // A small model sometimes reproduces the prompt's evidence list ("[1] (title)
                // …") or a query's rows instead of answering; the extractive answer picks the
                // relevant sentences, and shows the rows under a lead-in.
                cut.push(clip_chars(&text, 200));
                break;
            }
        }
    }
    state.draft.cut_sentences = cut.clone();
    extractive_or_abstain(state, deps, extracted, false, lang);
    Ok(answer_report(state, attempts, cut.len()))
}

/// Asks a model that reads for meaning ([`reading::reads_for_meaning`]) whether each of the
/// passages' best sentences answers `question`. Returns each sentence asked about with how
/// likely the model found "yes" (`None`: no verdict, which withholds nothing); empty when no
/// model is asked: none, a small one, a query result among the evidence (rows are the data's
/// answer), or no sentence that passes the word test (`found`). A model that gives its
/// probabilities reads every sentence, so the surest can lead; one that only writes its word
/// (a server) reads until one answers.
fn read_for_meaning(
    state: &mut AgentState,
    deps: &mut Deps<'_>,
    question: &str,
    refs: &[&EvidenceItem],
    found: bool,
) -> Vec<(String, Option<f32>)> {
    let asks = deps.llm.is_some_and(reading::reads_for_meaning)
        && found
        && !refs.iter().any(|e| e.kind == "sql_result");
    if !asks {
        return Vec::new();
    }
    let (parts, _) = extractive::best_sentences(
        question,
        refs,
        extractive::MAX_SENTENCES,
        &extractive::Read::default(),
    );
    let mut judged = Vec::new();
    for part in &parts {
        let Ok(reply) = deps.ask_yes_no(state, reading::messages(question, part)) else {
            judged.push((part.0.clone(), None));
            break;
        };
        judged.push((part.0.clone(), reply.yes));
        if reply
            .yes
            .is_none_or(|p| reading::answers(p) && !reply.graded)
        {
            break;
        }
    }
    judged
}

/// Models with fewer weights than this write one draft, the strict one (see [`drafts`]).
const SMALL_MODEL_PARAMETERS: u64 = 1_000_000_000;

/// Which drafts a model writes, in order (`true`: the strict prompt, with the worked example).
/// A small model's first, plain draft is seldom an answer: the default 0.5B's was one for 1
/// of the 18 questions of `assets/demo-questions.md` (the rest were a bare "2", "1.3" or
/// "[1]", or failed the check) and took about half the time it spent writing. So a small
/// model starts with the strict draft. A larger or unknown model (a server) writes the plain
/// draft first: the 1.5B's hold up more often without the example.
fn drafts(parameters: Option<u64>) -> &'static [bool] {
    match parameters {
        Some(n) if n < SMALL_MODEL_PARAMETERS => &[true],
        _ => &[false, true],
    }
}

/// The evidence an answer is written from, in order: at most [`MAX_EVIDENCE`] items, every query
/// result among them. A hybrid question's result comes after its passages, and with eleven
/// passages found the first eight would leave out the one item that answers "What is the
/// minimum budget?"; passages make room for it, the last first.
fn answer_evidence(usable: Vec<&EvidenceItem>) -> Vec<EvidenceItem> {
    let data = usable.iter().filter(|e| e.kind == "sql_result").count();
    let room = MAX_EVIDENCE.saturating_sub(data);
    let mut passages = 0;
    usable
        .into_iter()
        .filter(|e| {
            if e.kind == "sql_result" {
                return true;
            }
            passages += 1;
            passages <= room
        })
        .take(MAX_EVIDENCE)
        .cloned()
        .collect()
}

/// The extractive answer when there is one, else "cannot confirm from the authorised
/// material" and `no_evidence`. Nothing of a draft was shown when this is called; `whole`:
/// send the answer to the window in one piece (brief answers are never streamed).
fn extractive_or_abstain(
    state: &mut AgentState,
    deps: &mut Deps<'_>,
    found: Option<(String, Vec<usize>)>,
    whole: bool,
    lang: Lang,
) {
    match found {
        Some((text, cited)) => {
            state.draft.confidence = 0.5;
            if whole {
                (deps.events)(&AgentEvent::Replace(text.clone()));
            }
            finish(state, text, cited, StopReason::Ok, "extractive", deps);
        }
        None => finish(
            state,
            lang.no_evidence().to_string(),
            Vec::new(),
            StopReason::NoEvidence,
            "none",
            deps,
        ),
    }
}

/// A phrase the model copied from the lines shown, as the brief answer shows it.
struct Phrase {
    /// The evidence's words (a Chinese answer widened to its clause), cited: "3 个月 [1]".
    answer: String,
    /// The 1-based number of the evidence item holding them.
    evidence: usize,
    /// The model's own words, before widening.
    model_words: String,
    /// Whether the second, strict prompt gave it.
    strict: bool,
}

/// Asks the model to copy the phrase that answers from `shown` (once more, strictly, when the
/// first reply's words are not in the evidence). Replies that were not the evidence's words go
/// to `cut`.
fn copy_phrase(
    state: &mut AgentState,
    deps: &mut Deps<'_>,
    shown: &[brief::Line],
    lang: Lang,
    attempts: &mut usize,
    cut: &mut Vec<String>,
) -> Option<Phrase> {
    if deps.llm.is_none() || shown.is_empty() {
        return None;
    }
    let question = state.input.normalized_query.clone();
    for strict in [false, true] {
        *attempts += 1;
        let messages = brief::prompt(&question, shown, lang, strict);
        // Not streamed: a phrase arrives at once, and the words shown are the evidence's own
        // text rather than the model's spelling of it.
        let reply = deps.ask_llm(state, messages, BRIEF_TOKENS, false).ok()?;
        match brief::ground(&reply, shown) {
            Ok(found) => {
                // `own`: the model's words with what the question leaves out of their clause;
                // `words`: what is shown, with the question's own words too where it asks what
                // kind or how. Whether the model answered is judged on `own`: "南宁二中" for
                // "南宁二中是什么的简称？" names the subject, however its clause dresses it.
                let (own, words) = match (lang, shown.get(found.line)) {
                    (Lang::Zh, Some(line)) => {
                        let own = brief::widen(&line.text, found.range.clone(), &question, false);
                        let words = if brief::asks_kind_or_manner(&question) {
                            brief::widen(&line.text, found.range.clone(), &question, true)
                        } else {
                            own.clone()
                        };
                        (own, words)
                    }
                    _ => (found.words.clone(), found.words.clone()),
                };
                // The question's own subject ("什么是滚动更新？" → "滚动更新") answers nothing;
                // the best evidence sentence ("滚动更新是逐批替换实例的发布方式…") does. Asked again,
                // the model repeats itself, so the extractive answer is shown at once.
                if brief::echoes(&own, &question) {
                    cut.push(clip_chars(&reply, 200));
                    return None;
                }
                return Some(Phrase {
                    answer: format!("{words} [{}]", found.evidence),
                    evidence: found.evidence,
                    model_words: found.words,
                    strict,
                });
            }
            Err(Rejected::NoAnswer) => return None,
            Err(Rejected::NotInEvidence) => cut.push(clip_chars(&reply, 200)),
        }
    }
    None
}

/// The brief path: the model copies the phrase that answers from the few sentences that share
/// most with the question; a reply whose words are not in the evidence is asked for once more,
/// strictly, then replaced by the single best evidence sentence.
fn run_brief(
    state: &mut AgentState,
    deps: &mut Deps<'_>,
    evidence: &[&EvidenceItem],
    lang: Lang,
) -> Result<StepReport> {
    let question = state.input.normalized_query.clone();
    let shown = brief::lines(&question, evidence);
    let mut cut = Vec::new();
    let mut attempts = 0;
    if let Some(phrase) = copy_phrase(state, deps, &shown, lang, &mut attempts, &mut cut) {
        state.draft.written_by = "llm".into();
        state.draft.cut_sentences = cut.clone();
        state.draft.confidence = if phrase.strict { 0.7 } else { 0.8 };
        (deps.events)(&AgentEvent::Replace(phrase.answer.clone()));
        finish(
            state,
            phrase.answer,
            vec![phrase.evidence],
            StopReason::Ok,
            "llm",
            deps,
        );
        let mut step = brief_report(state, attempts, cut.len(), &shown);
        // The model's own words, before widening (the trace tells the two apart).
        step.out["model_words"] = json!(phrase.model_words);
        return Ok(step);
    }
    state.draft.cut_sentences = cut.clone();
    // Brief answers are not streamed: the window always takes the answer as a replacement.
    extractive_or_abstain(
        state,
        deps,
        extractive::brief(&question, evidence),
        true,
        lang,
    );
    Ok(brief_report(state, attempts, cut.len(), &shown))
}

/// The brief path's report also names the sentences the model was shown, so a trace tells a
/// wrong pick of sentences from a wrong reading of the right ones.
fn brief_report(
    state: &AgentState,
    attempts: usize,
    cut: usize,
    shown: &[brief::Line],
) -> StepReport {
    let mut step = report(state, attempts, cut);
    step.out["shown_lines"] = shown
        .iter()
        .map(|l| json!({ "evidence": l.evidence, "text": l.text }))
        .collect();
    step
}

fn report(state: &AgentState, attempts: usize, cut: usize) -> StepReport {
    StepReport::ok(
        "answer_with_citations",
        json!({ "evidence": state.usable_evidence().len().min(MAX_EVIDENCE) }),
        json!({
            "written_by": state.draft.written_by,
            "llm_attempts": attempts,
            "cited": state.output.final_citations.len(),
            "cut_sentences": cut,
            "stop_reason": state.output.stop_reason.as_str(),
        }),
    )
}

/// Whether `e` is a query result with more rows than [`WRITER_ROWS`]: the lines of its text
/// other than the notes after the rows ("… 3 more row(s) not shown", "(result cut at …)").
fn more_rows_than_the_writer_reads(e: &EvidenceItem) -> bool {
    let rows = e
        .text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('…') && !l.starts_with('('))
        .count();
    e.kind == "sql_result" && rows > WRITER_ROWS
}

/// The evidence title the prompt lists each item under (`[n] (title) text`).
fn listing_title(e: &EvidenceItem) -> String {
    let title = e
        .source
        .title
        .clone()
        .or_else(|| e.source.db.clone())
        .unwrap_or_default();
    match byline(&e.source.meta) {
        // A passage from the middle of a mail does not repeat its headers: the listing says
        // who sent it and when, so "who decided …?" and "when …?" can be answered from it.
        Some(by) if title.is_empty() => by,
        Some(by) => format!("{title}; {by}"),
        None => title,
    }
}

/// `from Dana Lee <dana@example.com>, 2026-03-02`: a document's sender and day, if known.
fn byline(meta: &DocumentMeta) -> Option<String> {
    let day = meta.date.as_deref().and_then(|d| d.get(..10));
    match (meta.authors.is_empty(), day) {
        (true, None) => None,
        (true, Some(day)) => Some(day.to_string()),
        (false, None) => Some(format!("from {}", meta.authors.join(", "))),
        (false, Some(day)) => Some(format!("from {}, {day}", meta.authors.join(", "))),
    }
}

/// What only a copy of the prompt's evidence would hold: the `(title)` headers it lists the
/// evidence under (items without a title have none) and the rows of query results as shown
/// ("Project=Data Pipeline, Owner=吴昊, …"). The default 0.5B answered "哪些项目在 prod
/// 环境？" by writing the six rows out, a minute's generation for what the extractive answer
/// shows at once.
fn as_listed(evidence: &[&EvidenceItem]) -> Vec<String> {
    let headers = evidence
        .iter()
        .map(|e| listing_title(e))
        .filter(|t| !t.trim().is_empty())
        .map(|t| format!("({t})"));
    let rows = evidence
        .iter()
        .filter(|e| e.kind == "sql_result")
        .flat_map(|e| e.text.lines())
        .map(str::trim)
        .filter(|row| row.contains('='))
        .map(str::to_owned);
    headers.chain(rows).collect()
}

/// Whether `draft` repeats the evidence as the prompt lists it (see [`as_listed`]).
fn copies_the_evidence(draft: &str, listed: &[String]) -> bool {
    listed.iter().any(|h| draft.contains(h.as_str()))
}

/// Characters of a passage the writer reads at least, however many passages share the budget.
const MIN_WRITER_ITEM_CHARS: usize = 300;

/// An evidence item as the writer reads it: a passage cut to the part of at most `max`
/// characters that holds the most of `question`'s terms; a query result whole, with its
/// statement ([`evidence_text`]).
fn writer_text(e: &EvidenceItem, question: &str, max: usize) -> String {
    if e.kind == "sql_result" {
        return evidence_text(e);
    }
    let text = e.text.trim();
    let kept = super::doc_tool::window(text, question, max);
    text[kept.range].trim().to_string()
}

/// An evidence item as the writer reads it. A SQL result comes with the statement that produced
/// it: "COUNT(*)=6" alone does not say what was counted, and small models answered "How many
/// projects run in prod?" with NO_ANSWER from it.
fn evidence_text(e: &EvidenceItem) -> String {
    match e.source.sql.as_deref() {
        Some(sql) if e.kind == "sql_result" => format!(
            "The query `{}` returned: {}",
            sql.split_whitespace().collect::<Vec<_>>().join(" "),
            e.text.trim()
        ),
        _ => e.text.trim().to_string(),
    }
}

/// Where the complete sentences of a reply being written end (a byte offset of `text`): after
/// the last sentence end that something other than a citation marker follows, with the
/// markers written after it ("… 10 days. [1] Next…" ends after "[1]"). A sentence without
/// anything after it may still get its marker.
fn complete_sentences(text: &str) -> usize {
    let mut end = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = matches!(c, '。' | '！' | '？' | '；' | '\n')
            || (matches!(c, '.' | '!' | '?') && next.is_some_and(char::is_whitespace));
        if !ends {
            continue;
        }
        let mut after = &text[i + c.len_utf8()..];
        loop {
            let trimmed = after.trim_start();
            let marker = trimmed
                .strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .filter(|(inside, _)| {
                    !inside.is_empty()
                        && inside
                            .chars()
                            .all(|d| d.is_ascii_digit() || d == ',' || d == ' ')
                });
            match marker {
                Some((_, rest)) => after = rest,
                None => {
                    after = trimmed;
                    break;
                }
            }
        }
        // Something real follows (a word, a list item's mark), not the start of a marker.
        if after.chars().next().is_some_and(|c| c != '[' && c != '【') {
            end = text.len() - after.len();
        }
    }
    end
}

fn clip_chars(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if text.chars().count() > n {
        out.push('…');
    }
    out
}

/// The writer's messages: `evidence` listed under their titles with the texts in `shown`
/// (`evidence_text` of each).
fn prompt(
    state: &AgentState,
    evidence: &[&EvidenceItem],
    shown: &[&str],
    lang: Lang,
    strict: bool,
) -> Vec<Message> {
    let language = match lang {
        Lang::Zh => "Chinese (简体中文)",
        Lang::En => "English",
    };
    let mut system = format!(
        "You are KnowHub, a careful company knowledge assistant. Answer the question in \
         {language} using ONLY the numbered evidence. After every sentence that states a \
         fact, cite the evidence it comes from as [1], [2] … Do not add facts that are not \
         in the evidence. Keep it short (at most 5 sentences). If the evidence does not \
         contain the answer, reply exactly {NO_ANSWER}."
    );
    if strict {
        system.push_str(" Every sentence MUST end with a citation like [1].");
    }
    if !state.input.user_profile.is_empty() {
        // How to answer this user (format, language habits, constraints) — not evidence.
        system.push_str(
            "\nWhat the user has told you about themself (follow it for the form of the answer; \
             never cite it as evidence):",
        );
        for line in &state.input.user_profile {
            system.push_str("\n- ");
            system.push_str(line);
        }
    }
    let mut context = String::new();
    for turn in state.messages.iter().rev().take(2).rev() {
        context.push_str(&format!(
            "Earlier question: {}\nEarlier answer: {}\n",
            turn.question, turn.answer
        ));
    }
    let mut user = String::new();
    if !context.is_empty() {
        user.push_str(&context);
        user.push('\n');
    }
    user.push_str("Evidence:\n");
    for (i, (e, text)) in evidence.iter().zip(shown).enumerate() {
        let title = listing_title(e);
        user.push_str(&format!("[{}] ({title}) {text}\n", i + 1));
    }
    user.push_str(&format!(
        "\nQuestion: {}\nAnswer:",
        state.input.normalized_query
    ));
    if !strict {
        return vec![Message::system(system), Message::user(user)];
    }
    let (example, reply) = worked_example(lang);
    vec![
        Message::system(system),
        Message::user(example),
        Message::assistant(reply),
        Message::user(user),
    ]
}

/// One question answered the way the writer should answer, in the question's language: whole
/// sentences, each with its marker, only what the evidence says. Shown with the strict draft
/// only (a small model's only draft, a larger one's second; see [`drafts`]): without it the
/// default 0.5B model mostly writes a bare number or a lone "[1]", and with it sentences; the
/// 1.5B's first drafts hold up more often without it (on the demo questions it copied an
/// unrelated sentence or misspelt a name with it). Its topic is far from any company document
/// so that none of its facts can pass for evidence.
fn worked_example(lang: Lang) -> (&'static str, &'static str) {
    match lang {
        Lang::Zh => (
            "Evidence:\n[1] (图书馆规则) 2. 借阅\n图书可借阅 21 天，可在网上续借两次。\n\
             [2] (图书馆规则) 1. 开放时间\n阅览室工作日 08:30 开放。\n\nQuestion: 书能借多久？\nAnswer:",
            "图书可借阅 21 天 [1]。可在网上续借两次 [1]。",
        ),
        Lang::En => (
            "Evidence:\n[1] (Library Rules) 2. Loans\nBooks can be borrowed for 21 days and \
             renewed twice online.\n[2] (Library Rules) 1. Opening hours\nThe reading room \
             opens at 08:30 on weekdays.\n\nQuestion: For how long can I borrow a book?\nAnswer:",
            "Books can be borrowed for 21 days [1]. They can be renewed twice online [1].",
        ),
    }
}

fn finish(
    state: &mut AgentState,
    answer: String,
    cited: Vec<usize>,
    stop: StopReason,
    by: &str,
    _deps: &mut Deps<'_>,
) {
    // Numbered as the answer was written from them.
    let usable = answer_evidence(state.usable_evidence());
    let citations: Vec<Citation> = cited
        .iter()
        .filter_map(|k| usable.get(k - 1))
        .map(|e| Citation {
            evidence_id: e.evidence_id.clone(),
        })
        .collect();
    state.output.rendered_sources = cited
        .iter()
        .filter_map(|k| usable.get(k - 1).map(|e| (*k, e)))
        .map(|(k, e)| RenderedSource {
            number: k,
            evidence_id: e.evidence_id.clone(),
            title: e
                .source
                .title
                .clone()
                .or_else(|| e.source.db.clone())
                .unwrap_or_default(),
            page: e.source.page,
            heading: e.source.heading.clone(),
            uri: e.source.uri.clone().unwrap_or_default(),
            url: e.source.url.clone(),
            meta: e.source.meta.clone(),
            text: e.text.clone(),
        })
        .collect();
    if state.draft.written_by.is_empty() {
        state.draft.written_by = by.into();
    }
    state.draft.answer = answer.clone();
    state.draft.citations = citations.clone();
    state.output.final_answer = answer;
    state.output.final_citations = citations;
    state.output.stop_reason = stop;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::EvidenceSource;

    #[test]
    fn sentences_are_complete_once_something_but_a_marker_follows() {
        for (text, complete) in [
            ("Leave is 10 days.", ""),
            ("Leave is 10 days. [1]", ""),
            ("Leave is 10 days. [1] It", "Leave is 10 days. [1] "),
            ("Leave is 10 days [1]. It rises", "Leave is 10 days [1]. "),
            ("试用期为 3 个月[1]。延", "试用期为 3 个月[1]。"),
            ("Steps:\n- a.\n- b", "Steps:\n- a.\n"),
            ("Leave is 10 days. [", ""),
            ("Version 2.5 is out", ""),
        ] {
            assert_eq!(&text[..complete_sentences(text)], complete, "{text}");
        }
    }

    fn item(title: &str) -> EvidenceItem {
        EvidenceItem {
            text: "Project: Fleet Scheduler v2; Status: In progress".into(),
            source: EvidenceSource {
                title: Some(title.into()),
                ..EvidenceSource::default()
            },
            ..EvidenceItem::default()
        }
    }

    #[test]
    fn a_mail_is_listed_with_its_sender_and_day() {
        let mut mail = item("Travel policy 2026");
        mail.source.meta = DocumentMeta {
            authors: vec!["Dana Lee <dana@example.com>".into()],
            recipients: vec!["staff@example.com".into()],
            date: Some("2026-03-02T09:30:00+08:00".into()),
        };
        assert_eq!(
            listing_title(&mail),
            "Travel policy 2026; from Dana Lee <dana@example.com>, 2026-03-02"
        );
        mail.source.meta.authors.clear();
        assert_eq!(listing_title(&mail), "Travel policy 2026; 2026-03-02");
        mail.source.title = None;
        assert_eq!(listing_title(&mail), "2026-03-02");
        assert_eq!(listing_title(&item("Handbook")), "Handbook");
    }

    #[test]
    fn query_results_are_kept_among_many_passages() {
        let of = |kinds: &str| -> Vec<EvidenceItem> {
            kinds
                .chars()
                .enumerate()
                .map(|(i, k)| EvidenceItem {
                    kind: if k == 's' { "sql_result" } else { "doc_chunk" }.into(),
                    text: format!("{k}{i}"),
                    ..EvidenceItem::default()
                })
                .collect()
        };
        for (usable, want) in [
            ("dddddddddddds", "d0 d1 d2 d3 d4 d5 d6 s12"),
            ("ddds", "d0 d1 d2 s3"),
            ("dddddds", "d0 d1 d2 d3 d4 d5 s6"),
            ("ddddddddd", "d0 d1 d2 d3 d4 d5 d6 d7"),
            ("ddddddddss", "d0 d1 d2 d3 d4 d5 s8 s9"),
            ("sddddddddd", "s0 d1 d2 d3 d4 d5 d6 d7"),
        ] {
            let items = of(usable);
            let kept: Vec<String> = answer_evidence(items.iter().collect())
                .into_iter()
                .map(|e| e.text)
                .collect();
            assert_eq!(kept.join(" "), want, "{usable}");
        }
    }

    #[test]
    fn results_longer_than_the_writer_reads() {
        let rows = |n: usize| -> String {
            (0..n)
                .map(|i| format!("Project=P{i}, Budget=1\n"))
                .collect()
        };
        let table: &[(&str, String, bool)] = &[
            ("sql_result", rows(10), false),
            ("sql_result", rows(11), true),
            (
                "sql_result",
                format!("{}… 4 more row(s) not shown\n", rows(10)),
                false,
            ),
            (
                "sql_result",
                format!(
                    "{}(result cut at 50 row(s) by the query policy; more rows may exist)\n (truncated)",
                    rows(10)
                ),
                false,
            ),
            ("sql_result", format!("{} (truncated)", rows(11)), true),
            ("sql_result", "(no rows)\n".into(), false),
            ("doc_chunk", rows(20), false),
        ];
        for (kind, text, want) in table {
            let e = EvidenceItem {
                kind: (*kind).into(),
                text: text.clone(),
                ..EvidenceItem::default()
            };
            assert_eq!(more_rows_than_the_writer_reads(&e), *want, "{kind}: {text}");
        }
    }

    #[test]
    fn a_sql_result_is_shown_with_its_statement() {
        let mut e = item("SQL: sales");
        e.kind = "sql_result".into();
        e.text = "COUNT(*)=6".into();
        e.source.sql = Some("SELECT COUNT(*)\nFROM projects WHERE env = 'prod'".into());
        assert_eq!(
            evidence_text(&e),
            "The query `SELECT COUNT(*) FROM projects WHERE env = 'prod'` returned: COUNT(*)=6"
        );
        let doc = item("Handbook");
        assert_eq!(evidence_text(&doc), doc.text.trim());
    }

    #[test]
    fn a_draft_that_reproduces_the_evidence_listing_is_recognised() {
        let e = item("Northwind Robotics projects and staff");
        let mut rows = item("SQL: projects.xlsx › Projects");
        rows.kind = "sql_result".into();
        rows.text = "Project=Customer Portal, Owner=Emily Carter, Environment=prod\n\
                     Project=Log Retention Cleanup, Owner=王磊, Environment=prod\n\
                     … 4 more row(s) not shown\n"
            .into();
        let table: &[(&str, bool)] = &[
            (
                "[1] (Northwind Robotics projects and staff) Projects\nProject: Fleet Scheduler v2",
                true,
            ),
            ("Three projects are in progress [1].", false),
            (
                "Northwind Robotics projects and staff lists three [1].",
                false,
            ),
            // A query's row, as shown.
            (
                "Project=Log Retention Cleanup, Owner=王磊, Environment=prod [1]",
                true,
            ),
            // The rows' values in sentences, or a line that is not a row.
            (
                "Customer Portal and Log Retention Cleanup run in prod [1].",
                false,
            ),
            ("Project=Customer Portal [1]", false),
            ("… 4 more row(s) not shown", false),
        ];
        for (draft, want) in table {
            assert_eq!(
                copies_the_evidence(draft, &as_listed(&[&e, &rows])),
                *want,
                "{draft}"
            );
        }
        assert!(!copies_the_evidence("() [1]", &as_listed(&[&item("")])));
    }
}
