//! Brief answers (`AgentOptions::brief_answers`): the exact words of the evidence that answer
//! the question ("4分钟 [1]", "15 days [2]"), cited.
//!
//! The model sees only the few evidence sentences that share most with the question (a short
//! prompt: small models copy spans far better from five sentences than from eight passages),
//! and its reply is kept only if those words stand in the evidence: the answer shown is the
//! evidence's own text, cited to the item it was found in, whatever number the model wrote.

use std::collections::HashSet;
use std::ops::Range;

use knowhub_llm::Message;

use crate::citations;
use crate::lang::Lang;
use crate::state::EvidenceItem;
use crate::text::{named_dates, names_dates, prose_terms, sentences};
use crate::words::words;

/// Evidence sentences shown to the model at most.
const MAX_LINES: usize = 5;
/// A data result is shown up to this many characters (results are already bounded by the SQL
/// tool; this keeps one wide table from filling the prompt).
const MAX_RESULT_CHARS: usize = 1500;
/// A "brief" reply longer than this is not a brief answer.
const MAX_ANSWER_CHARS: usize = 300;
/// The model's way of saying the evidence does not answer.
pub(crate) const NO_ANSWER: &str = "NO_ANSWER";

/// One line of the prompt: a sentence (or a data result) and the 1-based number of the
/// evidence item it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub evidence: usize,
    pub text: String,
}

/// The sentences of `evidence` that share most with `question` (at most `MAX_LINES`, at least
/// one shared term each, better-ranked evidence first on ties), in reading order; data results
/// are always shown.
pub(crate) fn lines(question: &str, evidence: &[&EvidenceItem]) -> Vec<Line> {
    let q = prose_terms(question);
    let mut out = Vec::new();
    // (evidence index, sentence index, sentence, its terms)
    let mut candidates: Vec<(usize, usize, String, HashSet<String>)> = Vec::new();
    for (i, e) in evidence.iter().enumerate() {
        if e.kind == "sql_result" {
            out.push((
                i,
                0,
                Line {
                    evidence: i + 1,
                    text: e.text.trim().chars().take(MAX_RESULT_CHARS).collect(),
                },
            ));
            continue;
        }
        // Every sentence of a passage is about what its title names: "塔高约120米" in the
        // passage titled 江心塔 answers "江心塔有多高" as much as a sentence that repeats the
        // name does.
        let title = e
            .source
            .title
            .as_deref()
            .map(prose_terms)
            .unwrap_or_default();
        for (j, s) in sentences(&e.text).into_iter().enumerate() {
            // A heading names a topic; it answers nothing, and a small model copies it when
            // it repeats the question's words ("3.2 How to file an expense claim").
            if looks_numbered_heading(&s) || e.source.heading.iter().any(|h| is_heading_line(&s, h))
            {
                continue;
            }
            // Overlapping chunks hold the same sentence twice: shown once (from the better-
            // ranked item), it leaves the place for another.
            if candidates.iter().any(|c| c.2 == s) {
                continue;
            }
            let mut words = prose_terms(&s);
            words.extend(title.iter().cloned());
            candidates.push((i, j, s, words));
        }
    }
    // A question term found in every sentence (the subject's name) tells them apart less than
    // one found in few ("高" in "纽西兰鸡毛松有多高"): shared terms count by their rarity among
    // the candidates (inverse sentence frequency).
    let n = candidates.len() as f32;
    // In a fixed order: summed in a hash set's order, equal scores differ in their last bit
    // from run to run, and the same question is shown different sentences.
    let mut weight: Vec<(&String, f32)> = q
        .iter()
        .map(|t| {
            let df = candidates.iter().filter(|c| c.3.contains(t)).count() as f32;
            (t, (1.0 + n / (1.0 + df)).ln())
        })
        .collect();
    weight.sort_by(|a, b| a.0.cmp(b.0));
    let mut scored: Vec<(f32, usize, usize, String)> = candidates
        .into_iter()
        .filter_map(|(i, j, s, words)| {
            let score: f32 = weight
                .iter()
                .filter(|(t, _)| words.contains(*t))
                .map(|(_, w)| w)
                .sum();
            // Better-ranked evidence first on ties.
            (score > 0.0).then_some((score - i as f32 * 1e-3, i, j, s))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    // A question that names a date asks what the text says at that date: "2013年3月，马飚担任
    // 什么职务？" is answered by the sentence that opens "2013年3月，…", not by a sentence about
    // the same person in 2005 that shares more of the question's other words. Where some
    // sentence names every date the question names, only such sentences are shown.
    let dates = named_dates(question);
    if !dates.is_empty() && scored.iter().any(|c| names_dates(&c.3, &dates)) {
        scored.retain(|c| names_dates(&c.3, &dates));
    }
    for (_, i, j, s) in scored.into_iter().take(MAX_LINES) {
        out.push((
            i,
            j,
            Line {
                evidence: i + 1,
                text: s,
            },
        ));
    }
    out.sort_by_key(|(i, j, _)| (*i, *j));
    out.into_iter().map(|(_, _, line)| line).collect()
}

/// Whether sentence `s` is the heading `h` (possibly with its Markdown marks or numbering).
fn is_heading_line(s: &str, h: &str) -> bool {
    s.contains(h) && s.chars().count() <= h.chars().count() + 6
}

/// A numbered section title inside a passage ("3.2 How to file an expense claim", "一、入职与
/// 试用期"): numbering, then words, and no sentence end.
pub(crate) fn looks_numbered_heading(s: &str) -> bool {
    let s = s.trim();
    if s.ends_with(['.', '。', '!', '！', '?', '？', ';', '；', ':', '：'])
        || s.chars().count() > 80
    {
        return false;
    }
    // "3.2 How …", "3. Expenses", "1.1 试用期": a dotted number, then a capital or a Chinese
    // character ("15 days", "3.5 million" are not numbering).
    let rest = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let number = &s[..s.len() - rest.len()];
    let numbered = number.contains('.')
        && number.starts_with(|c: char| c.is_ascii_digit())
        && rest.starts_with(' ')
        && rest
            .trim_start()
            .starts_with(|c: char| c.is_uppercase() || crate::lang::is_cjk(c));
    let chinese = s
        .trim_start_matches(|c: char| "一二三四五六七八九十".contains(c))
        .starts_with('、')
        && !s.starts_with('、');
    numbered || chinese
}

/// The prompt: copy the phrase that answers, nothing else. `strict` is the second attempt,
/// after a reply that was not the evidence's own words.
pub(crate) fn prompt(question: &str, lines: &[Line], lang: Lang, strict: bool) -> Vec<Message> {
    // Examples are generic on purpose: none comes from an evaluation set.
    let (mut system, evidence_label, question_label, answer_label) = match lang {
        Lang::Zh => (
            format!(
                "你是一个阅读理解助手。只根据给出的证据回答问题：从证据中原样摘录回答问题的那一段\
                 文字（一个完整的短语，数字要带上单位，例如“3天”“约12公斤”“2015年欧洲杯”），\
                 不要改写，不要解释。如果证据里没有答案，回答 {NO_ANSWER}。"
            ),
            "证据：",
            "问题：",
            "答案：",
        ),
        Lang::En => (
            format!(
                "You are a reading assistant. Answer the question using ONLY the evidence: copy \
                 from the evidence, word for word, the phrase that answers it (a complete phrase; \
                 numbers with their units, e.g. \"3 days\", \"about 12 kg\", \"the 2015 European \
                 Championship\"). Do not rephrase, do not explain. If the evidence does not \
                 contain the answer, reply exactly {NO_ANSWER}."
            ),
            "Evidence:",
            "Question: ",
            "Answer:",
        ),
    };
    if strict {
        system.push_str(match lang {
            Lang::Zh => "答案必须是证据中一字不差的原文。",
            Lang::En => " The answer MUST be text that appears exactly in the evidence.",
        });
    }
    let ask = |lines: &[(usize, &str)], question: &str| {
        let mut user = format!("{evidence_label}\n");
        for (k, text) in lines {
            user.push_str(&format!("[{k}] {text}\n"));
        }
        user.push_str(&format!("\n{question_label}{question}\n{answer_label}"));
        user
    };
    // Two worked examples (a number with its unit; a reason, which is a clause): a small model
    // copies spans far more often after seeing it done (CMRC trial, 0.5B: character F1 0.48
    // without examples, 0.55 with them, same sentences).
    let mut messages = vec![Message::system(system)];
    for (example, answer) in examples(lang) {
        messages.push(Message::user(ask(&example.lines, example.question)));
        messages.push(Message::assistant(answer));
    }
    let shown: Vec<(usize, &str)> = lines
        .iter()
        .map(|l| (l.evidence, l.text.as_str()))
        .collect();
    messages.push(Message::user(ask(&shown, question)));
    messages
}

struct Example {
    lines: Vec<(usize, &'static str)>,
    question: &'static str,
}

fn examples(lang: Lang) -> [(Example, &'static str); 2] {
    match lang {
        Lang::Zh => [
            (
                Example {
                    lines: vec![
                        (1, "公司总部位于杭州市西湖区，成立于2003年。"),
                        (1, "员工每年享有15天带薪年假，入职满五年后增加到20天。"),
                        (2, "食堂每天中午11点半开放。"),
                    ],
                    question: "员工入职满五年后有多少天年假？",
                },
                "20天",
            ),
            (
                Example {
                    lines: vec![
                        (1, "这座桥于1998年建成通车。"),
                        (
                            1,
                            "由于河道狭窄、水流湍急，大桥采用了单跨悬索结构，避免在河中设置桥墩。",
                        ),
                        (2, "大桥全长1.2公里。"),
                    ],
                    question: "大桥为什么采用单跨悬索结构？",
                },
                "由于河道狭窄、水流湍急",
            ),
        ],
        Lang::En => [
            (
                Example {
                    lines: vec![
                        (
                            1,
                            "The company's head office is in Leeds; it was founded in 2003.",
                        ),
                        (
                            1,
                            "Employees get 15 days of paid leave a year, rising to 20 days after \
                             five years of service.",
                        ),
                        (2, "The canteen opens at 11:30 every day."),
                    ],
                    question: "How many days of leave do employees get after five years?",
                },
                "20 days",
            ),
            (
                Example {
                    lines: vec![
                        (1, "The bridge opened to traffic in 1998."),
                        (
                            1,
                            "Because the channel is narrow and the current fast, the bridge has \
                             a single suspended span, with no piers in the river.",
                        ),
                        (2, "The bridge is 1.2 km long."),
                    ],
                    question: "Why does the bridge have a single suspended span?",
                },
                "Because the channel is narrow and the current fast",
            ),
        ],
    }
}

/// Why a reply was not kept as a brief answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// The model said the evidence does not answer (or said nothing).
    NoAnswer,
    /// The reply's words are not in the evidence (a paraphrase, a guess, a whole essay).
    NotInEvidence,
}

/// A reply found in the evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grounded {
    /// The evidence's own text for the reply's words.
    pub words: String,
    /// The 1-based number of the evidence item holding them.
    pub evidence: usize,
    /// The shown line they stand in (an index into the lines) and where (bytes).
    pub line: usize,
    pub range: Range<usize>,
}

/// The reply as a grounded brief answer: the evidence's own text for the reply's words and the
/// 1-based number of the item holding them. The words must stand in a line the model was shown
/// (a digit or a common word found somewhere else in a long passage proves nothing); lines of
/// the item the model cited are looked at first.
pub(crate) fn ground(reply: &str, lines: &[Line]) -> Result<Grounded, Rejected> {
    if reply.contains(NO_ANSWER) {
        return Err(Rejected::NoAnswer);
    }
    // Any number is accepted here: which item holds the words decides the citation.
    let (kept, cited) = citations::markers(reply, usize::MAX);
    let words = citations::unmarked(&kept);
    let words = words
        .trim()
        .trim_start_matches(['“', '"', '「', '『', '\''])
        .trim_end_matches(['。', '.', '，', ',', '；', ';', '”', '"', '」', '』', '\''])
        .trim();
    if !words.chars().any(char::is_alphanumeric) {
        return Err(Rejected::NoAnswer);
    }
    if words.chars().count() > MAX_ANSWER_CHARS {
        return Err(Rejected::NotInEvidence);
    }
    // Lines of the cited item first, then the rest, each with its index.
    let mut cited_first = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| cited.contains(&l.evidence))
        .chain(
            lines
                .iter()
                .enumerate()
                .filter(|(_, l)| !cited.contains(&l.evidence)),
        );
    cited_first
        .find_map(|(k, line)| {
            find_loosely(&line.text, words).map(|range| Grounded {
                words: line.text[range.clone()].to_string(),
                evidence: line.evidence,
                line: k,
                range,
            })
        })
        .ok_or(Rejected::NotInEvidence)
}

/// Where `needle` stands in `haystack` ignoring whitespace and ASCII case (a model drops the
/// space in "4 分钟" or capitalises a word), as a byte range of the haystack. A match never
/// cuts a number or an English word in two: "42" does not stand in "420000", nor "12" in
/// "2012年", nor "art" in "party".
fn find_loosely(haystack: &str, needle: &str) -> Option<Range<usize>> {
    let fold = |c: char| c.to_ascii_lowercase();
    let hay: Vec<(usize, char)> = haystack
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .collect();
    let pin: Vec<char> = needle
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(fold)
        .collect();
    if pin.is_empty() || pin.len() > hay.len() {
        return None;
    }
    // Characters that join into one number or word with a neighbour of their kind; a number
    // goes on past a decimal point or a thousands comma followed by a digit ("1.5", "2,400").
    let digit = |c: char| c.is_ascii_digit();
    let latin = |c: char| c.is_ascii_alphabetic();
    // `next` and `beyond`: the one or two characters on that side of the match.
    let cuts = |inside: char, next: Option<char>, beyond: Option<char>| {
        next.is_some_and(|o| {
            let number_goes_on = digit(o) || (matches!(o, '.' | ',') && beyond.is_some_and(digit));
            (digit(inside) && number_goes_on) || (latin(inside) && latin(o))
        })
    };
    let (first, last) = (pin[0], pin[pin.len() - 1]);
    let start = (0..=hay.len() - pin.len()).find(|&at| {
        let window = &hay[at..at + pin.len()];
        if !window.iter().zip(&pin).all(|((_, h), p)| fold(*h) == *p) {
            return false;
        }
        // The neighbours in the text itself, spaces included: "4 分钟" is not "84 分钟".
        let (end, c) = hay[at + pin.len() - 1];
        let mut before = haystack[..hay[at].0].chars().rev();
        let mut after = haystack[end + c.len_utf8()..].chars();
        !cuts(first, before.next(), before.next()) && !cuts(last, after.next(), after.next())
    })?;
    let (from, _) = hay[start];
    let (last, c) = hay[start + pin.len() - 1];
    Some(from..last + c.len_utf8())
}

/// Whether a brief answer only names what the question asks about, its subject: the words the
/// question opens with ("南宁二中是什么的简称？" → "南宁二中"), or follows "什么是" / "what is"
/// with ("什么是乙酰胺？" → "乙酰胺", "What is a rolling update?" → "rolling update"). Letters
/// and digits are compared, without case. Other words of the question may be the answer
/// ("Glade可以搭配Glade#什么来使用？" → "Glade#"), and so may any of them when the question
/// offers a choice ("…还是…", "… or …").
pub(crate) fn echoes(answer: &str, question: &str) -> bool {
    const LEADS: &[&str] = &[
        "什么是",
        "何谓",
        "请问",
        "whatis",
        "whatare",
        "whatwas",
        "whatwere",
        "whois",
        "whoare",
        "whowas",
        "define",
    ];
    const ARTICLES: &[&str] = &["a", "an", "the"];
    let fold = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let (a, q) = (fold(answer), fold(question));
    let choice = ["还是", "或者", "或是"]
        .iter()
        .any(|w| question.contains(w))
        || question
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| w.eq_ignore_ascii_case("or") || w.eq_ignore_ascii_case("whether"));
    if a.is_empty() || choice {
        return false;
    }
    let subject = LEADS.iter().find_map(|l| q.strip_prefix(l)).unwrap_or(&q);
    // "whatisapache" may be "a pache" or "apache": both readings are tried.
    subject.starts_with(&a)
        || ARTICLES
            .iter()
            .filter_map(|t| subject.strip_prefix(t))
            .any(|rest| rest.starts_with(&a))
}

/// Whether a Chinese question asks what kind of thing (什么 before a short noun or frame at its
/// end: "担任什么职务？", "以什么为食？", "有什么作用？", "什么样的") or how (怎么, 如何, 怎样).
/// Such a question is answered by a statement, and its answer keeps the clause's words the
/// question repeats: "以草籽和昆虫为食" for "这种鸟以什么为食？", "任市图书馆馆长" for "…她担任
/// 什么职务？". Not "…是什么？" (a name or a definition), nor a question
/// of why, when, who, how many, where or which one, whose answer is the thing asked for (the
/// words that ask so are `asks_other` in `data/words.toml`).
pub(crate) fn asks_kind_or_manner(question: &str) -> bool {
    // 为什么 holds 什么.
    if ["为什么", "为何", "原因"]
        .iter()
        .any(|w| question.contains(w))
    {
        return false;
    }
    if ["怎么", "如何", "怎样"]
        .iter()
        .any(|w| question.contains(w))
    {
        return true;
    }
    if words()
        .asks_other
        .iter()
        .any(|w| question.contains(w.as_str()))
    {
        return false;
    }
    let Some(at) = question.find("什么") else {
        return false;
    };
    let rest = question[at + "什么".len()..].trim_end_matches(['？', '?', ' ']);
    match rest.chars().next() {
        None => false,
        Some('样') => true,
        Some(c) if "？?。/ ，".contains(c) => false,
        Some(_) => rest.chars().count() <= 3,
    }
}

/// Ends of a clause: a Chinese brief answer does not reach past them.
const CLAUSE_ENDS: &[char] = &['，', '。', '；', '！', '？', '\n', ';', '!', '?'];
const OPENING: &[char] = &['（', '(', '[', '「', '『', '“', '《', '【'];
const CLOSING: &[char] = &['）', ')', ']', '」', '』', '”', '》', '】'];

/// A Chinese brief answer widened to the words around it, in its clause, that the question
/// does not already say: "120米" in "塔高约120米" answers "有多高" as "塔高约120米", "1998年" in
/// "该馆在1998年扩建工程完成后首次对外开放" answers "什么时候对外开放" as
/// "在1998年扩建工程完成后首次". Small models copy the bare number or name and drop what
/// qualifies it (约, 可达, 以后, 原生于); the words the question repeats mark where the answer
/// stops. Widening stops at a word found in the question (unless `restated`: the question asks
/// what kind or how, [`asks_kind_or_manner`]), at the clause's end, at a list's "、" unless the
/// answer is itself a list, and never leaves a bracket half-open. English answers are not
/// widened (SQuAD-style answers are the shortest span). Its measurements are in
/// docs/measurements.md.
pub(crate) fn widen(line: &str, range: Range<usize>, question: &str, restated: bool) -> String {
    let found = &line[range.clone()];
    // The clause holding the answer.
    let start = line[..range.start].rfind(CLAUSE_ENDS).map_or(0, |i| {
        i + line[i..].chars().next().map_or(1, char::len_utf8)
    });
    let end = line[range.end..]
        .find(CLAUSE_ENDS)
        .map_or(line.len(), |i| range.end + i);
    let clause = &line[start..end];
    let (s, e) = (range.start - start, range.end - start);
    // Words of the clause with their byte ranges.
    let mut spans = Vec::new();
    let mut at = 0;
    for w in knowhub_index::words(clause) {
        spans.push((at, at + w.len(), w));
        at += w.len();
    }
    let inside: Vec<usize> = (0..spans.len())
        .filter(|&k| spans[k].1 > s && spans[k].0 < e)
        .collect();
    let (Some(&lo), Some(&hi)) = (inside.first(), inside.last()) else {
        return found.to_string();
    };
    let is_list = found.contains('、');
    let may_add = |w: &str| {
        w.trim().is_empty()
            || ((restated || !question.contains(w)) && (is_list || !w.contains('、')))
    };
    let mut from = s.min(spans[lo].0);
    let mut to = e.max(spans[hi].1);
    for &(a, _, w) in spans[..lo].iter().rev() {
        if !may_add(w) {
            break;
        }
        from = a;
    }
    for &(_, b, w) in &spans[hi + 1..] {
        if !may_add(w) {
            break;
        }
        to = b;
    }
    // A bracket opened or closed in the added words but not matched cuts them there.
    let mut open: Vec<usize> = Vec::new();
    let mut unmatched = Vec::new();
    for (i, c) in clause[from..to].char_indices() {
        let i = from + i;
        if OPENING.contains(&c) {
            open.push(i);
        } else if let Some(k) = CLOSING.iter().position(|&x| x == c) {
            match open.last() {
                Some(&o) if clause[o..].starts_with(OPENING[k]) => {
                    open.pop();
                }
                _ => unmatched.push((i, c.len_utf8())),
            }
        }
    }
    for &o in &open {
        let len = clause[o..].chars().next().map_or(1, char::len_utf8);
        unmatched.push((o, len));
    }
    for (i, len) in unmatched {
        if i < s {
            from = from.max(i + len);
        } else if i >= e {
            to = to.min(i);
        }
    }
    let widened = clause[from..to.max(from)].trim_matches([' ', '\t', '：', ':', '、']);
    if widened.contains(found.trim()) {
        widened.to_string()
    } else {
        found.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: &str, text: &str) -> EvidenceItem {
        EvidenceItem {
            kind: kind.into(),
            text: text.into(),
            ..EvidenceItem::default()
        }
    }

    #[test]
    fn a_sentence_two_chunks_share_is_shown_once() {
        // Two overlapping chunks of one passage, as the chunker cuts them.
        let first = item(
            "doc_chunk",
            "The bridge opened in 1998. It is 1.2 km long. The bridge has a single span.",
        );
        let second = item(
            "doc_chunk",
            "The bridge has a single span. The bridge was painted red in 2004.",
        );
        let got = lines(
            "When was the bridge opened and painted?",
            &[&first, &second],
        );
        let texts: Vec<&str> = got.iter().map(|l| l.text.as_str()).collect();
        let span = texts
            .iter()
            .filter(|t| **t == "The bridge has a single span.")
            .count();
        assert_eq!(span, 1, "{texts:?}");
        // The repeat's place goes to the next sentence; the one kept is the first item's.
        assert!(
            texts.contains(&"The bridge was painted red in 2004."),
            "{texts:?}"
        );
        assert!(
            got.iter()
                .any(|l| l.evidence == 1 && l.text == "The bridge has a single span.")
        );
    }

    #[test]
    fn lines_are_the_best_sentences_in_reading_order_and_results_always() {
        let a = item(
            "doc_chunk",
            "The office opens at nine. Annual leave is fifteen days. Parking is free.",
        );
        let b = item("sql_result", "| n |\n| 3 |");
        let c = item("doc_chunk", "年假为每年十五天。试用期为三个月。");
        let ev = [&a, &b, &c];
        let got = lines("How many days of annual leave?", &ev);
        assert!(
            got.contains(&Line {
                evidence: 1,
                text: "Annual leave is fifteen days.".into()
            }),
            "{got:?}"
        );
        assert!(got.iter().all(|l| !l.text.contains("Parking")), "{got:?}");
        assert!(got.iter().any(|l| l.evidence == 2), "{got:?}");
        let order: Vec<usize> = got.iter().map(|l| l.evidence).collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(order, sorted);
        let zh = lines("年假有几天", &ev);
        assert!(
            zh.iter()
                .any(|l| l.evidence == 3 && l.text.contains("十五天")),
            "{zh:?}"
        );
        assert!(zh.len() <= MAX_LINES + 1);
        for (line, heading) in [
            ("3.2 How to file an expense claim", true),
            ("一、入职与试用期", true),
            ("1.1 试用期时长", true),
            ("3. Expenses", true),
            ("2 weeks notice is needed.", false),
            ("Item: Flights; Limit: Economy class", false),
            ("15 days", false),
            ("3.5 million users", false),
        ] {
            assert_eq!(looks_numbered_heading(line), heading, "{line}");
        }
        // Headings are not lines, however many of the question's words they repeat.
        let mut d = item(
            "doc_chunk",
            "3.2 How to file an expense claim\nYour manager approves claims up to CNY 5,000.",
        );
        d.source.heading = vec!["Expenses".into(), "3.2 How to file an expense claim".into()];
        let got = lines("Who approves expense claims?", &[&d]);
        assert_eq!(
            got,
            [Line {
                evidence: 1,
                text: "Your manager approves claims up to CNY 5,000.".into()
            }]
        );
    }

    #[test]
    fn an_answer_that_names_the_questions_subject_is_an_echo() {
        let table = [
            ("乙酰胺", "什么是乙酰胺？", true),
            ("南宁二中", "南宁二中是什么的简称？", true),
            ("“乡里制”", "什么是“乡里制”？", true),
            ("Rolling Update", "What is a rolling update?", true),
            ("乙酰胺是由乙酸衍生出的酰胺", "什么是乙酰胺？", false),
            ("首钢集团有限公司", "首钢是什么的简称？", false),
            ("20天", "员工入职满五年后有多少天年假？", false),
            ("Apache", "What is Apache?", true),
            ("2008年", "2008年，欧盟做出了什么批准？", true),
            // Words the question says elsewhere than its subject may answer it.
            (
                "Glade#",
                "在GUI设计上，Glade可以搭配Glade#什么来使用？",
                false,
            ),
            ("试用期", "新员工的试用期多长？", false),
            // A choice is answered with one of the question's words.
            ("红色", "大桥是红色还是蓝色？", false),
            ("staging", "Is the deploy going to staging or prod?", false),
            ("", "什么是乙酰胺？", false),
        ];
        for (answer, question, echo) in table {
            assert_eq!(echoes(answer, question), echo, "{answer} / {question}");
        }
    }

    #[test]
    fn a_question_that_names_a_date_is_shown_the_sentences_that_name_it() {
        let career = item(
            "doc_chunk",
            "1970年6月参加工作，1973年10月加入中国共产党。1973年10月，任长春市邮局国际联邮员。\
             1985年10月，任邮电部报刊发行局副局长、局长。1992年7月，任国务院经济贸易办公室商业司副司长。\
             王家瑞担任过多个职务。",
        );
        let en = item(
            "doc_chunk",
            "The bridge opened in 1998. It was painted red in 2004. The bridge has a single span. \
             In 19985 BC nothing happened.",
        );
        let ev = [&career, &en];
        let texts =
            |q: &str| -> Vec<String> { lines(q, &ev).into_iter().map(|l| l.text).collect() };
        // (question, a sentence shown, a sentence not shown)
        let table: [(&str, &str, Option<&str>); 5] = [
            // Only the sentences that name 1973年10月 are shown, however much the others share.
            (
                "1973年10月，王家瑞担任什么职务？",
                "1973年10月，任长春市邮局国际联邮员。",
                Some("1985年10月，任邮电部报刊发行局副局长、局长。"),
            ),
            // A date no sentence names changes nothing.
            (
                "2001年，王家瑞担任什么职务？",
                "1985年10月，任邮电部报刊发行局副局长、局长。",
                None,
            ),
            // A month alone is no date.
            (
                "10月，王家瑞担任什么职务？",
                "1985年10月，任邮电部报刊发行局副局长、局长。",
                None,
            ),
            // English years, whole.
            (
                "What happened to the bridge in 2004?",
                "It was painted red in 2004.",
                Some("The bridge opened in 1998."),
            ),
            (
                "What happened to the bridge in 1998?",
                "The bridge opened in 1998.",
                Some("It was painted red in 2004."),
            ),
        ];
        for (question, shown, hidden) in table {
            let got = texts(question);
            assert!(got.iter().any(|t| t == shown), "{question}: {got:?}");
            if let Some(hidden) = hidden {
                assert!(got.iter().all(|t| t != hidden), "{question}: {got:?}");
            }
        }
    }

    #[test]
    fn replies_are_kept_only_as_the_evidences_own_words() {
        let shown = [
            Line {
                evidence: 1,
                text: "若游戏中离，则 4 分钟内".into(),
            },
            Line {
                evidence: 2,
                text: "Employees get Fifteen days of annual leave.".into(),
            },
            Line {
                evidence: 3,
                text: "2010年扩编至112人，2012年为 12 人，跑道长1.5公里".into(),
            },
        ];
        type Expected = Result<(&'static str, usize), Rejected>;
        // (reply, expected)
        let cases: &[(&str, Expected)] = &[
            ("4分钟", Ok(("4 分钟", 1))),
            ("“4分钟”。", Ok(("4 分钟", 1))),
            // A wrong number is corrected to the item that holds the words.
            ("fifteen days [1]", Ok(("Fifteen days", 2))),
            ("Fifteen days [2].", Ok(("Fifteen days", 2))),
            ("[2]", Err(Rejected::NoAnswer)),
            ("NO_ANSWER", Err(Rejected::NoAnswer)),
            ("", Err(Rejected::NoAnswer)),
            ("five minutes", Err(Rejected::NotInEvidence)),
            ("八分钟", Err(Rejected::NotInEvidence)),
            // A citation past the evidence is ignored, the words still found.
            ("4分钟 [9]", Ok(("4 分钟", 1))),
            // Words of the passage the model was not shown are not its answer.
            ("配对", Err(Rejected::NotInEvidence)),
            // Part of a number or of a word is not the evidence's words.
            ("201", Err(Rejected::NotInEvidence)),
            ("010年", Err(Rejected::NotInEvidence)),
            ("ifteen days", Err(Rejected::NotInEvidence)),
            ("5公里", Err(Rejected::NotInEvidence)),
            ("1.5公里", Ok(("1.5公里", 3))),
            ("Employees get fifteen", Ok(("Employees get Fifteen", 2))),
            // The same digits standing alone further on are found there.
            ("12人", Ok(("12 人", 3))),
        ];
        for (reply, want) in cases {
            let got = ground(reply, &shown);
            let got = got
                .as_ref()
                .map(|g| (g.words.as_str(), g.evidence))
                .map_err(|e| *e);
            assert_eq!(got, *want, "reply {reply:?}");
        }
    }

    #[test]
    fn chinese_answers_take_the_words_of_their_clause_the_question_does_not_say() {
        // (line, the model's words, question, the answer shown)
        let cases: &[(&str, &str, &str, &str)] = &[
            // Qualifiers the model dropped come back.
            (
                "树高可达55米，树干笔直。",
                "55米",
                "纽西兰鸡毛松有多高？",
                "树高可达55米",
            ),
            (
                "公园面积约为0.304平方公里。",
                "0.304平方公里",
                "公园的面积有多大？",
                "约为0.304平方公里",
            ),
            // The question's own words mark where the answer stops, on both sides.
            (
                "佩内塔在2010年法国网球公开赛后首度跻身单打世界排名前十。",
                "2010年",
                "佩内塔什么时候跻身单打世界排名前十？",
                "在2010年法国网球公开赛后首度",
            ),
            // Nothing to add: the clause around the answer is the question's.
            (
                "员工每年享有15天带薪年假。",
                "15天",
                "员工每年享有多少天带薪年假？",
                "15天",
            ),
            // One item of a list stays one item; a list answer may grow along its list.
            (
                "分布于越南、老挝、台湾岛、泰国。",
                "台湾",
                "草蓬是哪个地区的称呼？",
                "台湾岛",
            ),
            (
                "分布于越南、老挝、台湾岛。",
                "越南、老挝",
                "它分布在哪里？",
                "于越南、老挝、台湾岛",
            ),
            // A bracket is taken whole or not at all.
            (
                "近清一直辅助康忠直至天正16年（1588年）死去。",
                "1588年",
                "辅助康忠的近清什么时候死去？",
                "直至天正16年（1588年）",
            ),
            (
                "海梅·雷耶斯（）是DC漫画公司的一个虚拟人物。",
                "DC",
                "海梅·雷耶斯是哪家公司的虚拟人物？",
                "DC漫画",
            ),
            // Never past the clause.
            (
                "他生于1980年，是一位赛车手。",
                "1980年",
                "他是哪一年出生的？",
                "生于1980年",
            ),
            // A question of what kind keeps the words it repeats: the statement answers it.
            (
                "以甲壳类、头足类和小鱼为食。",
                "甲壳类、头足类和小鱼",
                "蓝线裸顶鲷以什么为食？",
                "以甲壳类、头足类和小鱼为食",
            ),
            (
                "1998年6月至2000年4月任中共温州市委书记。",
                "中共温州市委书记",
                "1998年6月至2000年4月，蒋巨峰担任什么职务？",
                "1998年6月至2000年4月任中共温州市委书记",
            ),
            // "…是什么？" asks the name itself.
            (
                "“卡基达(Kaji Dha)”是它的启动口令。",
                "卡基达(Kaji Dha)",
                "它的启动口令是什么？",
                "“卡基达(Kaji Dha)”",
            ),
        ];
        for (line, words, question, want) in cases {
            let at = line.find(words).expect("the words stand in the line");
            let restated = asks_kind_or_manner(question);
            let got = widen(line, at..at + words.len(), question, restated);
            assert_eq!(got, *want, "{words} in {line}");
        }
    }

    #[test]
    fn questions_of_what_kind_or_how_are_told_from_the_rest() {
        let cases: &[(&str, bool)] = &[
            ("蒋巨峰担任什么职务？", true),
            ("蓝线裸顶鲷以什么为食？", true),
            ("大果西番莲的根部有什么作用？", true),
            ("乙酰胺在室温下是什么状态的？", true),
            ("这是什么样的植物？", true),
            ("如何得到较纯的次磷酸溶液？", true),
            ("它的启动口令是什么？", false),
            ("什么是放线菌酮？", false),
            ("椭球坐标系与其他三维正交坐标系不同的是什么？", false),
            // A known miss: the frame is short, but what it asks for is a name.
            ("在GUI设计上，Glade可以搭配Glade#什么来使用？", true),
            ("为什么时人强烈反感高英叔侄？", false),
            ("第二届比赛什么时候举行的？", false),
            ("高英是哪位皇帝的皇后？", false),
            ("尤金袋鼠的体重大约是多少？", false),
            ("乍都节公园位于什么地方？", true),
            ("印度野驴栖息在哪儿？", false),
            ("What kind of tree is it?", false),
        ];
        for (question, want) in cases {
            assert_eq!(asks_kind_or_manner(question), *want, "{question}");
        }
    }

    #[test]
    fn the_prompt_lists_lines_under_their_evidence_numbers_in_the_users_language() {
        let shown = [Line {
            evidence: 3,
            text: "试用期为三个月。".into(),
        }];
        let zh = prompt("试用期多久", &shown, Lang::Zh, false);
        // System, two worked examples (question and answer each), the question.
        assert_eq!(zh.len(), 6);
        let last = &zh[5].content;
        assert!(last.contains("[3] 试用期为三个月。"), "{last}");
        assert!(last.ends_with("问题：试用期多久\n答案："), "{last}");
        // Each example's answer stands in its own evidence, as the answers asked for must.
        for pair in zh[1..5].chunks(2) {
            assert!(pair[0].content.contains(pair[1].content.as_str()));
        }
        let en = prompt("How long is probation?", &shown, Lang::En, true);
        assert!(en[0].content.contains("MUST"));
        assert!(en[5].content.contains("Question: How long is probation?"));
        for pair in en[1..5].chunks(2) {
            assert!(pair[0].content.contains(pair[1].content.as_str()));
        }
    }
}
