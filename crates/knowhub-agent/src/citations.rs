//! After generation: every cited number must name an allowed evidence item, and every sentence
//! that states something must cite one. Sentences that fail are cut (and listed in the trace).

use std::collections::BTreeSet;

use crate::text::sentences;

/// The outcome of checking a generated answer against `n` evidence items.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Checked {
    /// The answer with failing sentences removed and invalid markers dropped.
    pub answer: String,
    /// 1-based evidence numbers cited by the kept sentences, in order of first use.
    pub cited: Vec<usize>,
    pub cut: Vec<String>,
    /// Whether what is left says anything in words: "[1]" or "2 [1]" alone is not an answer
    /// (a small model sometimes writes only a marker or a bare number).
    pub substantive: bool,
}

/// Checks `answer` (with `[n]` markers) against evidence numbered `1..=n`.
pub(crate) fn check(answer: &str, n: usize) -> Checked {
    let mut out = Checked::default();
    let mut kept = Vec::new();
    let mut seen = BTreeSet::new();
    let mut said = BTreeSet::new();
    for sentence in sentences(answer) {
        let (clean, numbers) = markers(&sentence, n);
        let claim = states_something(&clean);
        if claim && numbers.is_empty() {
            out.cut.push(sentence.clone());
            continue;
        }
        // A sentence repeated verbatim (small models loop over their evidence) is said once.
        let words: String = unmarked(&clean).split_whitespace().collect();
        if !words.is_empty() && !said.insert(words) {
            continue;
        }
        for k in numbers {
            if seen.insert(k) {
                out.cited.push(k);
            }
        }
        kept.push(clean);
    }
    out.answer = join(&kept);
    out.substantive = unmarked(&out.answer)
        .chars()
        .filter(|c| c.is_alphabetic())
        .count()
        >= 2;
    out
}

/// The text without its `[n]` markers.
pub(crate) fn unmarked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        match rest[open..].find(']') {
            Some(close)
                if rest[open + 1..open + close]
                    .chars()
                    .all(|c| c.is_ascii_digit()) =>
            {
                rest = &rest[open + close + 1..];
            }
            _ => {
                out.push('[');
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Removes markers naming no evidence (`[9]` of 3) and returns the valid numbers.
pub(crate) fn markers(sentence: &str, n: usize) -> (String, Vec<usize>) {
    let mut clean = String::new();
    let mut numbers = Vec::new();
    let mut rest = sentence;
    while let Some(open) = rest.find('[') {
        clean.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(']') {
            Some(close) => {
                let inside = &after[..close];
                let nums: Vec<Option<usize>> = inside
                    .split([',', '，', ' '])
                    .filter(|s| !s.is_empty())
                    .map(|s| s.trim().parse::<usize>().ok())
                    .collect();
                if !nums.is_empty() && nums.iter().all(Option::is_some) {
                    let valid: Vec<usize> = nums
                        .into_iter()
                        .flatten()
                        .filter(|k| (1..=n).contains(k))
                        .collect();
                    for k in &valid {
                        clean.push_str(&format!("[{k}]"));
                    }
                    numbers.extend(valid);
                } else {
                    clean.push('[');
                    clean.push_str(inside);
                    clean.push(']');
                }
                rest = &after[close + 1..];
            }
            None => {
                clean.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    clean.push_str(rest);
    (clean, numbers)
}

/// Whether a sentence makes a claim that needs a source (not a greeting, a heading-like
/// fragment or a statement about the sources themselves).
fn states_something(sentence: &str) -> bool {
    let letters = sentence.chars().filter(|c| c.is_alphanumeric()).count();
    if letters < 8 {
        return false;
    }
    let lower = sentence.to_lowercase();
    const META: &[&str] = &[
        "according to the",
        "based on the",
        "from the material",
        "the evidence",
        "根据你有权访问的资料",
        "根据资料",
        "根据提供的",
        "以下是",
    ];
    !(META.iter().any(|m| lower.starts_with(m)) && (lower.ends_with(':') || lower.ends_with('：')))
}

fn join(sentences: &[String]) -> String {
    let mut out = String::new();
    for s in sentences {
        let cjk_end = out.chars().last().is_some_and(crate::lang::is_cjk_punct);
        if !out.is_empty() && !cjk_end && !s.starts_with(|c: char| crate::lang::is_cjk(c)) {
            out.push(' ');
        }
        out.push_str(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncited_claims_are_cut_and_bad_numbers_dropped() {
        let table: &[(&str, usize, &str, &[usize], usize)] = &[
            // (answer, evidence count, kept answer, cited, cut sentences)
            (
                "Leave is 15 days [1]. It rises to 20 days after five years [2].",
                2,
                "Leave is 15 days [1]. It rises to 20 days after five years [2].",
                &[1, 2],
                0,
            ),
            (
                "Leave is 15 days [1]. Everyone loves it a lot.",
                1,
                "Leave is 15 days [1].",
                &[1],
                1,
            ),
            ("Leave is 15 days [3].", 1, "", &[], 1),
            (
                "Leave is 15 days [1, 2].",
                2,
                "Leave is 15 days [1][2].",
                &[1, 2],
                0,
            ),
            (
                "试用期为三个月[1]。转正后可以申请年假。",
                1,
                "试用期为三个月[1]。",
                &[1],
                1,
            ),
            ("Yes.", 1, "Yes.", &[], 0),
            (
                "Leave is 15 days [1]. Leave is 15 days [1]. It rises later [2].",
                2,
                "Leave is 15 days [1]. It rises later [2].",
                &[1, 2],
                0,
            ),
        ];
        for (answer, n, kept, cited, cut) in table {
            let c = check(answer, *n);
            assert_eq!(c.answer, *kept, "{answer}");
            assert_eq!(c.cited, *cited, "{answer}");
            assert_eq!(c.cut.len(), *cut, "{answer}");
        }
    }

    #[test]
    fn a_marker_or_a_bare_number_is_not_an_answer() {
        let table: &[(&str, bool)] = &[
            ("[1]", false),
            ("2[1]", false),
            ("1.31.3 [1]", false),
            ("7 projects are in progress [1].", true),
            ("三个月[1]。", true),
            ("试用期为三个月[1]。", true),
        ];
        for (answer, want) in table {
            assert_eq!(check(answer, 1).substantive, *want, "{answer}");
        }
    }
}
