//! The answer without a language model: the evidence sentence that best answers the question
//! leads, cited (one per question asked; a query result that speaks to the question before
//! it), and the next best sentences follow as further reading. SQL results are quoted as they
//! are. Nothing is written that the evidence does not literally say.

use crate::answer_kind::AnswerKind;
use crate::brief::looks_numbered_heading;
use crate::lang::Lang;
use crate::state::EvidenceItem;
use crate::text::{named_dates, names_dates, prose_terms, questions, sentences, word_terms};

/// Sentences kept at most: four, because answers in tables and lists take a row each ("加班费怎
/// 么算？" needs the weekday, weekend and holiday rates); one fewer beside data results, which
/// answer data questions themselves.
pub(crate) const MAX_SENTENCES: usize = 4;
/// A sentence must cover at least this share of the question's terms, and at least two of
/// them when the question has two or more (one shared word is a coincidence, not an answer).
const MIN_OVERLAP: f32 = 0.34;
/// List items quoted at most under a sentence that introduces them ("…when any of these is
/// true:").
const MAX_ITEMS: usize = 8;

/// A line of the answer: the sentence (or a query result's lead-in), the number of the
/// evidence item it comes from, and the list items or rows under it.
pub(crate) type Part = (String, usize, Vec<String>);

/// What a model that read the best sentences for meaning made of them: the sentences it found
/// no answer in are passed over, and those it found one in come first, the surest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Read {
    /// Sentences read as not answering.
    pub rejected: Vec<String>,
    /// Sentences read as answering, the surest first.
    pub preferred: Vec<String>,
}

impl Read {
    /// `ranked` without the rejected sentences, the preferred ones moved to the front in their
    /// order.
    fn order(&self, ranked: Vec<(String, usize)>) -> Vec<(String, usize)> {
        let (mut first, rest): (Vec<_>, Vec<_>) = self
            .without_rejected(ranked)
            .into_iter()
            .partition(|(s, _)| self.preferred.contains(s));
        first.sort_by_key(|(s, _)| self.preferred.iter().position(|p| p == s));
        first.extend(rest);
        first
    }

    /// `ranked` without the rejected sentences: how the sentences for one part of a question
    /// of several are ranked (the model read them against the whole question).
    fn without_rejected(&self, ranked: Vec<(String, usize)>) -> Vec<(String, usize)> {
        ranked
            .into_iter()
            .filter(|(s, _)| !self.rejected.contains(s))
            .collect()
    }
}

/// An extractive answer over `evidence` (numbered from 1 in this order), or `None` when no
/// sentence covers enough of the question.
pub(crate) fn answer(
    question: &str,
    evidence: &[&EvidenceItem],
    lang: Lang,
) -> Option<(String, Vec<usize>)> {
    answer_as_read(question, evidence, lang, &Read::default())
}

/// [`answer`] as a model read its sentences: led by those it found an answer in, without those
/// it found none in.
pub(crate) fn answer_as_read(
    question: &str,
    evidence: &[&EvidenceItem],
    lang: Lang,
    read: &Read,
) -> Option<(String, Vec<usize>)> {
    // SQL results answer data questions directly: one value on the line, rows under it.
    // Each with whether it speaks to the question and whether it found nothing.
    let results: Vec<(bool, bool, Part)> = evidence
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == "sql_result")
        .map(|(i, e)| {
            let rows: Vec<String> = e.text.trim().lines().map(str::to_string).collect();
            let part = match rows.as_slice() {
                [one] => (
                    format!("{}: {one}", lang.sql_result_intro()),
                    i + 1,
                    Vec::new(),
                ),
                _ => (format!("{}:", lang.sql_result_intro()), i + 1, rows),
            };
            (result_speaks_to(question, e), found_nothing(&e.text), part)
        })
        .collect();
    // A query result is the data's answer and leads, unless it does not speak to the
    // question: one the model's SQL took from the wrong table ("How many replicas does
    // api-gateway run in prod?" → the count of prod projects) follows the sentences that
    // answer ("Replicas (prod): 6"). It is still shown, as evidence the question found (a
    // question of several parts may ask for it in words it does not share: "…目前有多少人在
    // 试用期？" → a `COUNT(*)` where "On leave" = 1), unless it found nothing and
    // sentences answer: under them "COUNT(*)=0" from a query of something else ("未休完的年假
    // 可以结转吗？" → a count of projects) reads as part of the answer, and says nothing. The
    // trace keeps it either way.
    let shown_beside_sentences = |(speaks, nothing, _): &(bool, bool, Part)| *speaks || !*nothing;
    let limit = if !results.iter().any(shown_beside_sentences) {
        MAX_SENTENCES
    } else {
        MAX_SENTENCES - 1
    };
    let (sentences, answers_asked) = best_sentences(question, evidence, limit, read);
    let unanswered = sentences.is_empty();
    let (leading, trailing): (Vec<_>, Vec<_>) =
        results.into_iter().partition(|(speaks, _, _)| *speaks);
    // The answer leads: the query results that speak to the question, then the best sentence
    // (one per question asked); the other sentences follow as further reading.
    let lead = leading.len() + answers_asked.min(sentences.len());
    let parts: Vec<Part> = leading
        .into_iter()
        .map(|(_, _, p)| p)
        .chain(sentences)
        .chain(
            trailing
                .into_iter()
                .filter(|r| unanswered || shown_beside_sentences(r))
                .map(|(_, _, p)| p),
        )
        .collect();
    if parts.is_empty() {
        return None;
    }
    let mut text = String::new();
    let mut cited = Vec::new();
    for (n, (s, k, items)) in parts.iter().enumerate() {
        if n < lead.max(1) {
            if n > 0 {
                text.push('\n');
            }
            text.push_str(&format!("{} [{k}]", without_bullet(s)));
            for item in items {
                text.push_str(&format!("\n- {} [{k}]", without_bullet(item)));
            }
        } else {
            if n == lead.max(1) {
                text.push_str("\n\n");
                text.push_str(lang.extractive_more());
            }
            text.push_str(&format!("\n- {} [{k}]", without_bullet(s)));
            for item in items {
                text.push_str(&format!("\n  - {} [{k}]", without_bullet(item)));
            }
        }
        if !cited.contains(k) {
            cited.push(*k);
        }
    }
    Some((text, cited))
}

/// The sentences that answer `question` best, at most `limit`, each with the list it
/// introduces, and how many of them lead (one per question asked, for a question of several
/// questions), ordered and filtered as `read` says. The extractive answer's lines, and what a
/// model reads for meaning.
pub(crate) fn best_sentences(
    question: &str,
    evidence: &[&EvidenceItem],
    limit: usize,
    read: &Read,
) -> (Vec<Part>, usize) {
    let mut sentences: Vec<Part> = Vec::new();
    let mut used = std::collections::HashSet::new();
    // A question of several questions ("报销单要在多少天内提交？多少钱以上需要发票？") gets each
    // part's best sentence first: ranked against the whole, the sentences of the part with more
    // words fill every place.
    let asked = questions(question);
    let firsts: Vec<(String, usize)> = asked
        .iter()
        .filter(|_| asked.len() > 1)
        .filter_map(|part| {
            read.without_rejected(ranked_sentences(part, evidence))
                .into_iter()
                .next()
        })
        .collect();
    let answers_asked = firsts.len().max(1);
    let ranked = read.order(ranked_sentences(question, evidence));
    for (s, i) in firsts.into_iter().chain(ranked) {
        if sentences.len() >= limit {
            break;
        }
        // A list item already quoted under its introduction is not repeated.
        let quoted = sentences
            .iter()
            .any(|(_, _, items)| items.iter().any(|it| it.contains(&s)));
        if !quoted && used.insert(s.clone()) {
            // A sentence that introduces a list says nothing without it: "Roll back
            // immediately when any of these is true:" is answered by the conditions under it.
            let items: Vec<String> = list_after(&s, &evidence[i - 1].text)
                .into_iter()
                .filter(|item| used.insert(item.clone()))
                .collect();
            sentences.push((s, i, items));
        }
    }
    (sentences, answers_asked)
}

/// The evidence's best sentence for `question` (one for each question it asks, when it asks
/// several), cited, with the list it introduces, unless `shown` already covers it (holds half
/// of the sentence's terms or more): what a model's answer is completed with, so the sentence
/// that answers is always in sight beside the model's words. Sentences `read` as not
/// answering are passed over; for a question that asks one thing, the sentence read as
/// answering surest comes first, and when `shown` covers it, the best by words is offered.
pub(crate) fn not_covered(
    question: &str,
    evidence: &[&EvidenceItem],
    shown: &str,
    read: &Read,
) -> Vec<Part> {
    let asked = questions(question);
    let several = asked.len() > 1;
    let shown_terms = prose_terms(shown);
    let mut out: Vec<Part> = Vec::new();
    for part in asked {
        let ranked = ranked_sentences(part, evidence);
        let surest = if several {
            None
        } else {
            read.order(ranked.clone()).into_iter().next()
        };
        let by_words = read.without_rejected(ranked).into_iter().next();
        for (s, k) in surest.into_iter().chain(by_words) {
            let items = list_after(&s, &evidence[k - 1].text);
            let said: String = std::iter::once(s.as_str())
                .chain(items.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            let terms = prose_terms(&said);
            let covered = terms.iter().filter(|t| shown_terms.contains(*t)).count();
            if covered * 2 < terms.len() {
                if !out.iter().any(|(o, _, _)| *o == s) {
                    out.push((s, k, items));
                }
                break;
            }
        }
    }
    out
}

/// The single sentence that best answers `question`, cited, without an introduction: the
/// brief answer when no model (or no usable model reply) gives a shorter one.
pub(crate) fn brief(question: &str, evidence: &[&EvidenceItem]) -> Option<(String, Vec<usize>)> {
    if let Some(i) = evidence.iter().position(|e| e.kind == "sql_result") {
        return Some((
            format!("{} [{}]", evidence[i].text.trim(), i + 1),
            vec![i + 1],
        ));
    }
    let (s, k) = ranked_sentences(question, evidence).into_iter().next()?;
    Some((format!("{} [{k}]", s.trim_end()), vec![k]))
}

/// Whether a query result's rows (as `QueryResult::preview` writes them) hold nothing: no row,
/// or one row of zeros and NULLs ("COUNT(*)=0", "SUM(\"Budget\")=NULL").
fn found_nothing(result: &str) -> bool {
    let lines: Vec<&str> = result.trim().lines().map(str::trim).collect();
    match lines.as_slice() {
        ["(no rows)"] => true,
        [row] => row.split(", ").all(|cell| {
            cell.rsplit_once('=')
                .is_some_and(|(_, v)| matches!(v, "0" | "0.0" | "NULL"))
        }),
        _ => false,
    }
}

/// Whether a query result speaks to `question` as a quoted sentence must: it covers
/// [`MIN_OVERLAP`] of the question's terms, counting those its statement says (tables,
/// columns, the values it filters on) or its rows do, and the figure the question asks for
/// when a row states one. Terms are words and single characters: a statement's terse
/// `SUM("预算") FROM "项目"` makes none of the character pairs a sentence would.
fn result_speaks_to(question: &str, result: &EvidenceItem) -> bool {
    let q = word_terms(question);
    let said = word_terms(&format!(
        "{} {}",
        result.source.sql.as_deref().unwrap_or_default(),
        result.text
    ));
    let figure = usize::from(AnswerKind::of(question).is_some_and(|k| k.stated_in(&result.text)));
    let shared = q.iter().filter(|t| said.contains(*t)).count() + figure;
    shared as f32 / (q.len() + figure).max(1) as f32 >= MIN_OVERLAP
}

/// Document sentences covering enough of `question`, best first, with the 1-based number of
/// the evidence item each comes from.
///
/// A sentence is read with the headings above it: under "3. Kubernetes rolling-update
/// defaults", the list item "maxSurge: 25%" answers "What is the default maxSurge?", and under
/// "4.1 收到告警后的处理步骤" the first step answers "收到告警后第一步做什么？". The headings'
/// terms make a sentence eligible, but count half in its score (every sentence of the section
/// has them: what tells them apart is their own words), and a sentence must share a term of
/// its own.
fn ranked_sentences(question: &str, evidence: &[&EvidenceItem]) -> Vec<(String, usize)> {
    let q = prose_terms(question);
    // A question that asks for a figure ("多少钱", "how long"), put to a sentence that states
    // one of that kind ("200 元", "3 个月"), shares one term more.
    let kind = AnswerKind::of(question);
    // Numbers and codes the question names ("GIMP 2.4", "SEV1", "2019 年") identify what it
    // asks about; people copy them as written, so the passage that answers names them, in a
    // heading or anywhere in its text ("本届总决赛…" follows "2008年NBA总决赛…"; requiring the
    // sentence itself lost more answers than it saved abstentions on eval/gimp-help). A
    // passage about version 1.0's release does not answer when 2.4 was released, however many
    // other words its sentences share.
    let named: Vec<&String> = q
        .iter()
        .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
        .collect();
    let mut scored: Vec<(f32, usize, usize, String)> = Vec::new();
    for (i, e) in evidence.iter().enumerate() {
        if e.kind != "doc_chunk" {
            continue;
        }
        let headings: std::collections::HashSet<String> = e
            .source
            .heading
            .iter()
            .chain(&e.source.title)
            .flat_map(|h| prose_terms(h))
            .collect();
        if !named.is_empty() {
            let passage = prose_terms(&e.text);
            if !named
                .iter()
                .all(|t| passage.contains(*t) || headings.contains(*t))
            {
                continue;
            }
        }
        for (j, s) in sentences(&e.text).into_iter().enumerate() {
            // Headings and fragments are not answers.
            if !is_statement(&s)
                || e.source
                    .heading
                    .iter()
                    .any(|h| s.contains(h.as_str()) && s.chars().count() <= h.chars().count() + 6)
            {
                continue;
            }
            let words = prose_terms(&s);
            let own = q.iter().filter(|t| words.contains(*t)).count();
            let context = q
                .iter()
                .filter(|t| !words.contains(*t) && headings.contains(*t))
                .count();
            let figure = usize::from(kind.is_some_and(|k| k.stated_in(&s)));
            // A question that asks for a figure is answered only by a sentence that states one
            // of its kind: "When was it released?" is not answered by a sentence about the
            // release that gives no date.
            if kind.is_some() && figure == 0 {
                continue;
            }
            let shared = own + context + figure;
            let n = (q.len() + figure).max(1) as f32;
            if own >= 1 && shared as f32 / n >= MIN_OVERLAP && (shared >= 2 || q.len() < 2) {
                let score = (own as f32 + 0.5 * context as f32 + figure as f32) / n;
                // Earlier evidence (better ranked) wins ties.
                scored.push((score - i as f32 * 0.01, i, j, s));
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    // A question that names a date ("1973年10月，王家瑞担任什么职务？") is answered by what the
    // text says at that date: sentences that name every date it names come first.
    let dates = named_dates(question);
    if !dates.is_empty() {
        // Each sentence is read once, not once per comparison.
        scored.sort_by_cached_key(|c| !names_dates(&c.3, &dates));
    }
    scored.into_iter().map(|(_, i, _, s)| (s, i + 1)).collect()
}

/// The list that `lead` introduces in `text`: when `lead` ends with a colon at the end of its
/// line, the lines after it, up to the list's end. Parsers keep a list item or a table row on
/// a line of its own but drop the list's markers, so the end is read from the lines: a blank
/// line, a heading, a paragraph (a line of two sentences or more), the last of items joined by
/// semicolons ("a; b; c."), an item that opens a list of its own, or [`MAX_ITEMS`].
fn list_after(lead: &str, text: &str) -> Vec<String> {
    let lead = lead.trim();
    if !lead.ends_with([':', '：']) {
        return Vec::new();
    }
    let Some(at) = text.find(lead) else {
        return Vec::new();
    };
    let Some(rest) = text[at + lead.len()..]
        .trim_start_matches([' ', '\t'])
        .strip_prefix('\n')
    else {
        return Vec::new();
    };
    let mut items = Vec::new();
    let mut joined_by_semicolons = false;
    for line in rest.lines().map(str::trim) {
        if line.is_empty() {
            if items.is_empty() {
                continue;
            }
            break;
        }
        if items.len() >= MAX_ITEMS || looks_numbered_heading(line) || sentence_ends(line) > 1 {
            break;
        }
        items.push(line.to_string());
        let semicolon = line.ends_with([';', '；']);
        if line.ends_with([':', '：']) || (joined_by_semicolons && !semicolon) {
            break;
        }
        joined_by_semicolons |= semicolon;
    }
    items
}

/// Sentence ends in `line`, its last character included ("Mind the gap. Then go." has two;
/// "v2.3 is out" none).
fn sentence_ends(line: &str) -> usize {
    let chars: Vec<char> = line.chars().collect();
    chars
        .iter()
        .enumerate()
        .filter(|&(i, c)| {
            matches!(c, '。' | '！' | '？')
                || (matches!(c, '.' | '!' | '?')
                    && chars.get(i + 1).is_none_or(|n| n.is_whitespace()))
        })
        .count()
}

/// `s` without a bullet the document typed itself ("- Password rotation: …" in a PDF): the
/// answer adds its own.
fn without_bullet(s: &str) -> &str {
    let s = s.trim();
    ["- ", "* ", "• ", "· ", "– "]
        .iter()
        .find_map(|b| s.strip_prefix(b))
        .map_or(s, str::trim_start)
}

/// Long enough to say something: three words, or eight Chinese characters; not too long to
/// quote.
fn is_statement(s: &str) -> bool {
    let cjk = s.chars().filter(|c| crate::lang::is_cjk(*c)).count();
    let words = s
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count();
    (cjk >= 8 || words >= 3) && s.chars().count() <= 400
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> EvidenceItem {
        EvidenceItem {
            kind: "doc_chunk".into(),
            text: text.into(),
            ..EvidenceItem::default()
        }
    }

    #[test]
    fn picks_the_covering_sentences_with_citations() {
        let a = doc("Employees get fifteen days of annual leave. The office opens at nine.");
        let b = doc("年假为每年十五天。试用期为三个月。");
        let ev = [&a, &b];
        let (text, cited) = answer("How many days of annual leave?", &ev, Lang::En).unwrap();
        assert!(text.contains("fifteen days of annual leave. [1]"), "{text}");
        assert!(!text.contains("office"), "{text}");
        assert_eq!(cited, [1]);
        let (text, cited) = answer("年假有几天", &ev, Lang::Zh).unwrap();
        assert!(
            text.contains("年假为每年十五天。 [2]") || text.contains("年假为每年十五天。[2]"),
            "{text}"
        );
        assert_eq!(cited, [2]);
        assert!(answer("quantum chromodynamics", &ev, Lang::En).is_none());
    }

    #[test]
    fn a_writers_answer_is_completed_with_the_sentence_read_as_answering_surest() {
        let a = doc(
            "Backups are stored in the basement vault. Backups are stored by the operations team.",
        );
        let ev = [&a];
        let question = "Who stores the backups?";
        let vault = "Backups are stored in the basement vault.";
        let team = "Backups are stored by the operations team.";
        let read = Read {
            rejected: Vec::new(),
            preferred: vec![team.into()],
        };
        let added = |shown: &str, read: &Read| -> Vec<String> {
            not_covered(question, &ev, shown, read)
                .into_iter()
                .map(|(s, _, _)| s)
                .collect()
        };
        // (what the writer said, how the sentences were read, the sentence added)
        let table: [(&str, &Read, &[&str]); 5] = [
            // By words the vault sentence is the best.
            ("Nobody knows.", &Read::default(), &[vault]),
            // Read as answering, the team sentence is added instead.
            ("Nobody knows.", &read, &[team]),
            // The writer said it: the best by words is offered.
            ("The operations team stores them.", &read, &[vault]),
            // Both said: nothing is added.
            (
                "The operations team stores them in the basement vault.",
                &read,
                &[],
            ),
            // A rejected sentence is never added.
            (
                "The operations team stores them.",
                &Read {
                    rejected: vec![vault.into()],
                    preferred: vec![team.into()],
                },
                &[],
            ),
        ];
        for (shown, read, want) in table {
            assert_eq!(added(shown, read), want, "{shown} {read:?}");
        }
    }

    #[test]
    fn a_question_that_names_a_date_gets_the_sentence_that_names_it_first() {
        let career = doc(
            "1985年10月，王家瑞担任的职务是邮电部报刊发行局副局长、局长。\
             1973年10月，王家瑞任长春市邮局国际联邮员。",
        );
        let finals = doc(
            "2008年NBA总决赛由东部联盟冠军波士顿塞尔特人与西部联盟冠军洛杉矶湖人对决。\
             本届总决赛由凯尔特人及湖人这两支夺得总冠军次数最多的球队对决，被人誉为「梦幻对决」。",
        );
        // (question, evidence, the brief answer's first words)
        let table: [(&str, &EvidenceItem, &str); 5] = [
            ("1973年10月，王家瑞担任什么职务？", &career, "1973年10月"),
            ("1985年10月，王家瑞担任什么职务？", &career, "1985年10月"),
            // The year is part of the name: the answer does not repeat it.
            (
                "为什么2008年NBA总决赛被誉为梦幻对决？",
                &finals,
                "本届总决赛",
            ),
            // No date asked: the sentence that shares most.
            ("王家瑞担任过什么局长职务？", &career, "1985年10月"),
            ("王家瑞在长春市邮局担任什么？", &career, "1973年10月"),
        ];
        for (question, evidence, first) in table {
            let (text, _) = brief(question, &[evidence]).unwrap();
            assert!(text.starts_with(first), "{question}: {text}");
        }
    }

    #[test]
    fn a_number_the_question_names_must_be_named_where_it_is_answered() {
        let releases = doc("GIMP version 1.0 was released on June 5, 1998. \
             Version 1.2.0 was released on December 25, 2000.");
        let q = "On what date was GIMP 2.4 released?";
        assert!(answer(q, &[&releases], Lang::En).is_none());
        // Named under the passage's heading, or in the passage before the sentence.
        let headed = under(
            &["What's new in GIMP 2.4"],
            "It was released on October 24, 2007.",
        );
        let (text, _) = answer(q, &[&headed], Lang::En).unwrap();
        assert!(
            text.starts_with("It was released on October 24, 2007."),
            "{text}"
        );
        let told = doc("GIMP 2.4 brought a new look. It was released on October 24, 2007.");
        let (text, _) = answer(q, &[&told], Lang::En).unwrap();
        assert!(text.contains("October 24, 2007"), "{text}");
        // "SEV1" is a code: a sentence about SEV2 does not answer.
        let sev = doc("A SEV2 incident must be acknowledged within 4 hours.");
        let q = "How fast must a SEV1 incident be acknowledged?";
        assert!(answer(q, &[&sev], Lang::En).is_none());
    }

    fn under(heading: &[&str], text: &str) -> EvidenceItem {
        let mut e = doc(text);
        e.source.heading = heading.iter().map(|h| (*h).to_string()).collect();
        e
    }

    #[test]
    fn sentences_are_read_with_their_headings() {
        let spec = under(
            &[
                "Deployment Specification",
                "3. Kubernetes rolling-update defaults",
            ],
            "Every Deployment uses the RollingUpdate strategy.\n\
             maxSurge: 25% - at most a quarter of extra pods are created.\n\
             maxUnavailable: 0 - no serving capacity is removed.",
        );
        let runbook = under(
            &["4.1 收到告警后的处理步骤"],
            "1. 在告警工具中确认告警：SEV1 须在 5 分钟内确认。\n\
             2. 创建事故频道，并在频道中贴出告警链接。\n\
             3. 根据严重等级表判定等级并指定事故指挥。",
        );
        // (question, evidence, what the answer's first sentence says, what it leaves out)
        let rows: &[(&str, &EvidenceItem, Option<&str>, &str)] = &[
            (
                "What is the default maxSurge?",
                &spec,
                Some("maxSurge: 25%"),
                "RollingUpdate strategy",
            ),
            (
                "收到告警后第一步做什么？",
                &runbook,
                Some("在告警工具中确认告警"),
                "判定等级",
            ),
            // The heading's words alone answer nothing.
            ("Which Kubernetes defaults are documented?", &spec, None, ""),
            (
                "收到告警后怎么处理？",
                &runbook,
                Some("确认告警"),
                "判定等级",
            ),
        ];
        for (question, evidence, first, left_out) in rows {
            let lang = Lang::detect(question);
            let got = answer(question, &[*evidence], lang);
            match (first, got) {
                (None, got) => assert!(got.is_none(), "{question}: {got:?}"),
                (Some(first), Some((text, cited))) => {
                    let first_line = text.lines().next().unwrap_or_default();
                    assert!(first_line.contains(first), "{question}: {text}");
                    assert!(!text.contains(left_out), "{question}: {text}");
                    assert_eq!(cited, [1]);
                }
                (Some(_), None) => panic!("{question}: no answer"),
            }
        }
    }

    #[test]
    fn each_part_of_a_question_of_several_is_answered() {
        let policy = doc("报销单须在费用发生后30天内提交至财务系统。\
             报销单需要在提交后3天内由主管审批，逾期需要重新提交。\
             报销单需要提交行程单的，行程单须在出行后10天内开具。\
             需要退回的报销单，需要在5天内修改后再提交。\
             报销单提交需要选择成本中心，每单需要在7天内审结。\
             单笔金额在500元以上的报销需要附发票原件。");
        // (question, what the answer must say)
        let rows: &[(&str, &[&str])] = &[
            (
                "报销单要在多少天内提交？多少钱以上需要发票？",
                &["30天内提交", "500元以上"],
            ),
            ("报销单要在多少天内提交？", &["30天内提交"]),
            // A part too short to ask anything is not a question of its own.
            ("报销单要在多少天内提交？嗯？", &["30天内提交"]),
        ];
        for (question, says) in rows {
            let (text, _) = answer(question, &[&policy], Lang::Zh).unwrap();
            for s in *says {
                assert!(text.contains(s), "{question}: {text}");
            }
        }
    }

    #[test]
    fn a_list_is_read_to_its_end() {
        // (text after the introduction's line, the items expected)
        let rows: &[(&str, &[&str])] = &[
            // Items joined by semicolons end at the one that does not end with one.
            (
                "the error rate stays above 2% for 5 minutes;\n\
                 p99 latency doubles for 10 minutes;\n\
                 a safety alert is linked to the release.\n\
                 The rollback should be completed within 15 minutes.",
                &[
                    "the error rate stays above 2% for 5 minutes;",
                    "p99 latency doubles for 10 minutes;",
                    "a safety alert is linked to the release.",
                ],
            ),
            (
                "直属经理会在第 1 个月末与你沟通；\n双方解除劳动合同需提前 3 个工作日通知；\n\
                 年假转正前最多只能休 3 天。\n如确有需要，试用期可以延长一次。",
                &[
                    "直属经理会在第 1 个月末与你沟通；",
                    "双方解除劳动合同需提前 3 个工作日通知；",
                    "年假转正前最多只能休 3 天。",
                ],
            ),
            // Table rows end at the paragraph after them (two sentences on one line).
            (
                "\nYears: under 3; Leave: 10 days\nYears: 3 to 5; Leave: 15 days\n\
                 New employees get 10 days. Unused days expire.",
                &[
                    "Years: under 3; Leave: 10 days",
                    "Years: 3 to 5; Leave: 15 days",
                ],
            ),
            // A step that opens a list of its own is the last one quoted.
            (
                "Announce the rollback.\nPause the pipeline.\nRun the rollback command:\n\
                 kubectl rollout undo deployment/x",
                &[
                    "Announce the rollback.",
                    "Pause the pipeline.",
                    "Run the rollback command:",
                ],
            ),
            // A heading or a blank line ends the list.
            ("4.1 Passwords and accounts\nUse 14 characters.", &[]),
            ("三、费用报销\n报销须在 30 天内提交。", &[]),
            (
                "Use 14 characters.\n\nChange them every 90 days.",
                &["Use 14 characters."],
            ),
            // A paragraph is not a list.
            ("Passwords expire. Change them every 90 days.", &[]),
        ];
        for (after, want) in rows {
            let text = format!("Intro words. When any of these is true:\n{after}");
            assert_eq!(
                list_after("When any of these is true:", &text),
                *want,
                "{after}"
            );
        }
        // Only a colon at the end of a line introduces a list.
        let inline = "Roll back when: the error rate is high.\nNext line.";
        assert!(list_after("Roll back when:", inline).is_empty());
        assert!(list_after("Roll back now.", "Roll back now.\nNext line.").is_empty());
    }

    #[test]
    fn an_introduction_is_quoted_with_its_list() {
        let spec = under(
            &["6. Rollback procedure"],
            "Roll back immediately, without waiting for a root cause, when any of these is \
             true after a prod deployment:\n\
             the error rate (HTTP 5xx) stays above 2% for 5 minutes;\n\
             p99 latency is more than double the previous release's for 10 minutes;\n\
             any robot safety alert is linked to the new release.\n\
             The rollback should be completed within 15 minutes of the decision.\n\
             - Database migrations must be backward compatible for one release.",
        );
        let (text, _) = answer(
            "When should I roll back a prod deployment?",
            &[&spec],
            Lang::En,
        )
        .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("Roll back immediately"), "{text}");
        assert_eq!(
            lines[1], "- the error rate (HTTP 5xx) stays above 2% for 5 minutes; [1]",
            "{text}"
        );
        assert!(lines[3].contains("robot safety alert"), "{text}");
        // Each item once, and a bullet the document typed is not doubled.
        assert_eq!(text.matches("p99 latency").count(), 1, "{text}");
        let pdf = doc("- Password rotation: every password must be changed every 90 days.");
        let (text, _) = answer("How often must passwords be changed?", &[&pdf], Lang::En).unwrap();
        assert_eq!(
            text.lines().next(),
            Some("Password rotation: every password must be changed every 90 days. [1]"),
            "{text}"
        );
    }

    #[test]
    fn the_figure_a_question_asks_for_counts_as_a_shared_term() {
        let policy = doc("费用发生后须及时整理票据并妥善保管。\
             单笔金额超过 200 元 的，必须上传发票或正规收据。\
             发票遗失的，须提交书面说明。");
        // (question, what the answer's first sentence says)
        let rows: &[(&str, &str)] = &[
            // Four shared words of twelve, and the amount it asks for.
            ("多少钱以上需要发票？", "200 元"),
            // The figure alone answers nothing.
            ("火星旅行要多少钱？", ""),
            ("How much does a trip to Mars cost?", ""),
        ];
        for (question, first) in rows {
            let got = answer(question, &[&policy], Lang::detect(question));
            match got {
                Some((text, _)) => {
                    assert!(!first.is_empty(), "{question}: {text}");
                    let line = text.lines().next().unwrap_or_default();
                    assert!(line.contains(first), "{question}: {text}");
                }
                None => assert!(first.is_empty(), "{question}: no answer"),
            }
        }
    }

    #[test]
    fn query_results_are_quoted_a_row_a_line() {
        let mut one = doc("COUNT(*)=3");
        one.kind = "sql_result".into();
        let mut rows = doc("Name=周欣\nName=Priya Raman");
        rows.kind = "sql_result".into();
        let (text, cited) = answer("How many staff are on probation?", &[&one], Lang::En).unwrap();
        assert_eq!(text.lines().next(), Some("Query result: COUNT(*)=3 [1]"));
        assert_eq!(cited, [1]);
        let (text, _) = answer("谁还在试用期？", &[&rows], Lang::Zh).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            ["查询结果: [1]", "- Name=周欣 [1]", "- Name=Priya Raman [1]"]
        );
    }

    #[test]
    fn four_sentences_or_three_beside_the_data() {
        let text = "Leave rule one applies to annual leave. Leave rule two applies to annual \
                    leave. Leave rule three applies to annual leave. Leave rule four applies to \
                    annual leave. Leave rule five applies to annual leave. Leave rule six \
                    applies to annual leave.";
        let d = doc(text);
        let mut sql = doc("COUNT(*)=6");
        sql.kind = "sql_result".into();
        sql.source.sql =
            Some("SELECT COUNT(*) FROM leave_rules WHERE kind = 'annual' LIMIT 50".into());
        // A result of another question that found nothing leaves all four places to them.
        let mut other = doc("COUNT(*)=0");
        other.kind = "sql_result".into();
        other.source.sql = Some("SELECT COUNT(*) FROM projects LIMIT 50".into());
        let sentences = |ev: &[&EvidenceItem]| {
            let (text, _) = answer("Which rules apply to annual leave?", ev, Lang::En).unwrap();
            text.lines().filter(|l| l.contains("Leave rule")).count()
        };
        assert_eq!(sentences(&[&d]), MAX_SENTENCES);
        assert_eq!(sentences(&[&sql, &d]), MAX_SENTENCES - 1);
        assert_eq!(sentences(&[&other, &d]), MAX_SENTENCES);
    }

    #[test]
    fn a_query_result_comes_after_the_sentences_that_answer_more_of_the_question() {
        let spec = under(
            &["5. Resource requests and limits per component"],
            "Component: api-gateway; Namespace: edge; Replicas (prod): 6; CPU request: 500m\n\
             Component: fleet-scheduler; Namespace: fleet; Replicas (prod): 4; CPU request: 1",
        );
        let mut count = doc("COUNT(*)=6");
        count.kind = "sql_result".into();
        count.source.sql =
            Some("SELECT COUNT(*) FROM projects_2_1 WHERE Environment = 'prod' LIMIT 50".into());
        let mut budgets = doc("SUM(\"预算\")=2400000");
        budgets.kind = "sql_result".into();
        budgets.source.sql = Some("SELECT SUM(\"预算\") FROM \"项目\" LIMIT 50".into());
        let note = doc("项目预算由财务部每季度审核一次，审核结果发给项目负责人。");
        let leave =
            doc("未休完的年假最多可结转 5 天到下一年，结转的天数须在次年 3 月 31 日前休完。");
        let mut none = doc("COUNT(*)=0");
        none.kind = "sql_result".into();
        none.source.sql =
            Some("SELECT COUNT(*) FROM projects_2_1 WHERE Status = 'In progress' LIMIT 50".into());
        // (question, evidence, the first line of the answer, whether the result is shown)
        let rows: &[(&str, &[&EvidenceItem], &str, bool)] = &[
            // The model's SQL counted projects: the sentence that names the replicas leads, and
            // the count, evidence the question found, follows.
            (
                "How many replicas does api-gateway run in prod?",
                &[&spec, &count],
                "Component: api-gateway;",
                true,
            ),
            // A query of something else that found nothing says nothing under a sentence; alone,
            // it is what was found.
            (
                "未休完的年假可以结转吗？",
                &[&leave, &none],
                "未休完的年假",
                false,
            ),
            (
                "未休完的年假可以结转吗？",
                &[&none],
                "Query result: COUNT(*)=0",
                true,
            ),
            // The same result answers a question about projects.
            (
                "How many projects run in prod?",
                &[&spec, &count],
                "Query result: COUNT(*)=6 [2]",
                true,
            ),
            (
                "项目预算总共是多少？",
                &[&note, &budgets],
                "Query result: SUM",
                true,
            ),
            // A result alone is shown, whatever it covers.
            (
                "How many replicas does api-gateway run in prod?",
                &[&count],
                "Query result: COUNT(*)=6 [1]",
                true,
            ),
        ];
        for (question, evidence, first, shown) in rows {
            let (text, cited) = answer(question, evidence, Lang::En).unwrap();
            let line = text.lines().next().unwrap_or_default();
            assert!(line.starts_with(first), "{question}: {text}");
            assert_eq!(text.contains("Query result"), *shown, "{question}: {text}");
            assert_eq!(
                cited.len(),
                1 + usize::from(*shown && evidence.len() > 1),
                "{question}: {text}"
            );
        }
    }
}
