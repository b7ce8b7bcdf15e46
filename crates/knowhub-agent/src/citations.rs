//! After generation: every cited number must name an allowed evidence item, every sentence
//! that states something must cite one, and every figure a cited sentence states must stand in
//! what it cites (or in the question). Sentences that fail are cut (and listed in the trace).

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

/// Checks `answer` (with `[n]` markers) against `evidence` (item `k` is `evidence[k - 1]`, as
/// the writer was shown it) for `question`.
pub(crate) fn check(answer: &str, evidence: &[&str], question: &str) -> Checked {
    let n = evidence.len();
    let mut out = Checked::default();
    let mut kept = Vec::new();
    let mut seen = BTreeSet::new();
    let mut said = BTreeSet::new();
    // Read once: each sentence checks its figures against the items it cites.
    let question_figures = figures(question);
    let evidence_figures: Vec<Vec<Figure>> = evidence.iter().map(|e| figures(e)).collect();
    for (sentence, clean, numbers) in attach_trailing_markers(answer, n) {
        let claim = states_something(&clean);
        if claim && numbers.is_empty() {
            out.cut.push(sentence.clone());
            continue;
        }
        // A figure the cited items do not hold is the model's own ("2 days" where the
        // evidence says 10, a citation to the wrong item): the sentence goes.
        let stated = figures(&unmarked(&clean));
        if !stated.is_empty() {
            let mut known = question_figures.clone();
            for k in &numbers {
                known.extend_from_slice(&evidence_figures[k - 1]);
            }
            if !stated.iter().all(|f| f.stands_in(&known)) {
                out.cut.push(sentence.clone());
                continue;
            }
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

/// The sentences of `answer`, each with its text (valid markers only) and cited numbers. A
/// "sentence" that is only markers ("… for that year. [1]": models often cite a paragraph once,
/// after its last full stop) cites the sentences before it that cite nothing themselves, back
/// to the previous cited one.
fn attach_trailing_markers(answer: &str, n: usize) -> Vec<(String, String, Vec<usize>)> {
    let mut out: Vec<(String, String, Vec<usize>)> = Vec::new();
    for sentence in sentences(answer) {
        let (clean, numbers) = markers(&sentence, n);
        let only_markers = !numbers.is_empty()
            && !unmarked(&clean).chars().any(char::is_alphanumeric)
            && out.last().is_some_and(|(_, _, cited)| cited.is_empty());
        if !only_markers {
            out.push((sentence, clean, numbers));
            continue;
        }
        let tail: String = numbers.iter().map(|k| format!("[{k}]")).collect();
        for (original, text, cited) in out.iter_mut().rev() {
            if !cited.is_empty() {
                break;
            }
            original.push(' ');
            original.push_str(sentence.trim());
            // "…的试用期[1]。" in Chinese, "… for that year. [1]" in English.
            match text.pop() {
                Some(end) if crate::lang::is_cjk_punct(end) => {
                    text.push_str(&tail);
                    text.push(end);
                }
                end => {
                    text.extend(end);
                    text.push(' ');
                    text.push_str(&tail);
                }
            }
            cited.clone_from(&numbers);
        }
    }
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

/// A number as written: its value and how many decimals it was given with.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figure {
    value: f64,
    decimals: i32,
}

impl Figure {
    /// Whether `known` holds this figure, or one that rounds to it at the decimals it was
    /// written with (a SQL average 4.4567 may be stated as 4.46).
    fn stands_in(&self, known: &[Figure]) -> bool {
        let scale = 10f64.powi(self.decimals);
        known.iter().any(|k| {
            (k.value - self.value).abs() < 1e-9
                || (k.decimals > self.decimals
                    && ((k.value * scale).round() - self.value * scale).abs() < 1e-6)
        })
    }
}

/// The numbers written in digits in `text` ("1,200,000" is one number, "2024-05-06" three;
/// full-width digits count). A list's own numbering ("1. ", "2) ") is not a figure. Numbers
/// in words ("three", "三") are not read.
fn figures(text: &str) -> Vec<Figure> {
    let chars: Vec<char> = text
        .chars()
        .map(|c| match c {
            '０'..='９' => char::from(b'0' + (c as u32 - '０' as u32) as u8),
            '．' => '.',
            _ => c,
        })
        .collect();
    let start = list_marker_len(&chars);
    let mut out = Vec::new();
    let mut i = start;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut digits = String::new();
        let mut decimals: Option<i32> = None;
        while i < chars.len() {
            let c = chars[i];
            let next_digits = || {
                chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count()
            };
            if c.is_ascii_digit() {
                digits.push(c);
                if let Some(d) = decimals.as_mut() {
                    *d += 1;
                }
            } else if c == ',' && decimals.is_none() && next_digits() == 3 {
                // A thousands separator: "1,200".
            } else if c == '.' && decimals.is_none() && next_digits() > 0 {
                digits.push('.');
                decimals = Some(0);
            } else {
                break;
            }
            i += 1;
        }
        if let Ok(value) = digits.parse::<f64>() {
            out.push(Figure {
                value,
                decimals: decimals.unwrap_or(0),
            });
        }
    }
    out
}

/// The length of a list item's numbering at the start of `chars` ("1. ", "2) ", "3、"), or 0.
fn list_marker_len(chars: &[char]) -> usize {
    let lead = chars.iter().take_while(|c| c.is_whitespace()).count();
    let digits = chars[lead..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits == 0 || digits > 2 {
        return 0;
    }
    match chars.get(lead + digits) {
        Some('、') => lead + digits + 1,
        Some('.' | ')')
            if chars
                .get(lead + digits + 1)
                .is_none_or(|c| c.is_whitespace()) =>
        {
            lead + digits + 1
        }
        _ => 0,
    }
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
            // A paragraph cited once, after its last full stop.
            (
                "Leave is 15 days. It rises to 20 days after five years. [1]",
                1,
                "Leave is 15 days. [1] It rises to 20 days after five years. [1]",
                &[1],
                0,
            ),
            // … back to the previous cited sentence only.
            (
                "Leave is 15 days [2]. It rises to 20 days after five years. [1]",
                2,
                "Leave is 15 days [2]. It rises to 20 days after five years. [1]",
                &[2, 1],
                0,
            ),
            ("[1]", 1, "[1]", &[1], 0),
            (
                "试用期为三个月。延长不超过一个月。[1]",
                1,
                "试用期为三个月[1]。延长不超过一个月[1]。",
                &[1],
                0,
            ),
        ];
        for (answer, n, kept, cited, cut) in table {
            let evidence = vec!["Leave is 15 days, and 20 days after five years."; *n];
            let c = check(answer, &evidence, "How much leave?");
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
            let evidence = ["7 projects are in progress; 1.31 and 1.3 are versions; 2 runs"];
            assert_eq!(check(answer, &evidence, "").substantive, *want, "{answer}");
        }
    }

    #[test]
    fn figures_are_read_as_written() {
        let table: &[(&str, &[(f64, i32)])] = &[
            ("10 working days", &[(10.0, 0)]),
            ("Budget: 1,200,000 yuan", &[(1_200_000.0, 0)]),
            ("started 2024-05-06", &[(2024.0, 0), (5.0, 0), (6.0, 0)]),
            ("avg 4.4567 ms.", &[(4.4567, 4)]),
            ("ends at 10.", &[(10.0, 0)]),
            ("1. New staff get 10 days", &[(10.0, 0)]),
            ("3、试用期 3 个月", &[(3.0, 0)]),
            ("均有３个月", &[(3.0, 0)]),
            ("10,20 and 30", &[(10.0, 0), (20.0, 0), (30.0, 0)]),
            ("三个月", &[]),
        ];
        for (text, want) in table {
            let got: Vec<(f64, i32)> = figures(text)
                .iter()
                .map(|f| (f.value, f.decimals))
                .collect();
            assert_eq!(got, *want, "{text}");
        }
    }

    #[test]
    fn a_figure_must_stand_in_what_the_sentence_cites() {
        let evidence = [
            "New employees get 10 working days per year.",
            "Secondary caregivers receive 20 working days of paid leave.",
            "The query `SELECT AVG(Total) FROM Invoice` returned: AVG(Total)=5.651941747572815",
        ];
        let table: &[(&str, &str, &str)] = &[
            // (answer, question, kept answer)
            (
                "New employees get 10 working days [1].",
                "",
                "New employees get 10 working days [1].",
            ),
            // The right figure cited to the wrong item.
            ("New employees get 10 working days [2].", "", ""),
            // A figure from nowhere.
            ("New employees get 2 weeks of leave [1].", "", ""),
            // Either cited item may hold it.
            (
                "New employees get 10 working days [1][2].",
                "",
                "New employees get 10 working days [1][2].",
            ),
            // Rounded from the result.
            (
                "The average invoice total is 5.65 [3].",
                "",
                "The average invoice total is 5.65 [3].",
            ),
            ("The average invoice total is 5.70 [3].", "", ""),
            // Restating the question's own figure is not a claim from nowhere.
            (
                "No: new employees get 10 working days, not 15 [1].",
                "Do new employees get 15 days?",
                "No: new employees get 10 working days, not 15 [1].",
            ),
            (
                "新员工每年有 10 个工作日年假[1]。",
                "",
                "新员工每年有 10 个工作日年假[1]。",
            ),
            ("新员工每年有 12 个工作日年假[1]。", "", ""),
        ];
        for (answer, question, kept) in table {
            let c = check(answer, &evidence, question);
            assert_eq!(c.answer, *kept, "{answer}");
        }
    }
}
