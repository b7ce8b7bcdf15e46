//! The answer without a language model: the evidence sentences that best cover the question,
//! each with its citation; SQL results are quoted as they are. Nothing is written that the
//! evidence does not literally say.

use crate::lang::Lang;
use crate::state::EvidenceItem;
use crate::text::{overlap, sentences, terms};

/// Sentences kept at most.
const MAX_SENTENCES: usize = 3;
/// A sentence must cover at least this share of the question's terms, and at least two of
/// them when the question has two or more (one shared word is a coincidence, not an answer).
const MIN_OVERLAP: f32 = 0.34;

/// An extractive answer over `evidence` (numbered from 1 in this order), or `None` when no
/// sentence covers enough of the question.
pub(crate) fn answer(
    question: &str,
    evidence: &[&EvidenceItem],
    lang: Lang,
) -> Option<(String, Vec<usize>)> {
    let mut parts: Vec<(String, usize)> = Vec::new();
    // SQL results answer data questions directly.
    for (i, e) in evidence.iter().enumerate() {
        if e.kind == "sql_result" {
            parts.push((
                format!("{}: {}", lang.sql_result_intro(), e.text.trim()),
                i + 1,
            ));
        }
    }
    let mut used = std::collections::HashSet::new();
    for (s, i) in ranked_sentences(question, evidence) {
        if parts.len() >= MAX_SENTENCES + usize::from(!parts.is_empty()) {
            break;
        }
        if used.insert(s.clone()) {
            parts.push((s, i));
        }
    }
    if parts.is_empty() {
        return None;
    }
    let mut text = String::from(lang.extractive_intro());
    let mut cited = Vec::new();
    for (s, k) in &parts {
        text.push('\n');
        text.push_str(&format!("- {} [{k}]", s.trim_end()));
        if !cited.contains(k) {
            cited.push(*k);
        }
    }
    Some((text, cited))
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

/// Document sentences covering enough of `question`, best first, with the 1-based number of
/// the evidence item each comes from.
fn ranked_sentences(question: &str, evidence: &[&EvidenceItem]) -> Vec<(String, usize)> {
    let q = terms(question);
    let mut scored: Vec<(f32, usize, usize, String)> = Vec::new();
    for (i, e) in evidence.iter().enumerate() {
        if e.kind != "doc_chunk" {
            continue;
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
            let words = terms(&s);
            let score = overlap(&q, &words);
            let shared = q.iter().filter(|t| words.contains(*t)).count();
            if score >= MIN_OVERLAP && (shared >= 2 || q.len() < 2) {
                // Earlier evidence (better ranked) wins ties.
                scored.push((score - i as f32 * 0.01, i, j, s));
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(_, i, _, s)| (s, i + 1)).collect()
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
}
