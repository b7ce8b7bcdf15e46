//! What kind of answer a question asks for (an amount of money, a duration, a moment, a
//! number) and whether a sentence states one. "多少钱以上需要发票？" shares few words with
//! "单笔金额超过 200 元的，必须上传发票", but it asks for an amount and the sentence states
//! one: that is evidence of an answer the words alone do not show. The question phrases, units
//! and money words are in `data/words.toml`.

use crate::words::words;

/// The kind of figure a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerKind {
    /// "多少钱", "how much does it cost": a number with a currency.
    Amount,
    /// "多久", "how long": a number with a unit of time.
    Duration,
    /// "什么时候", "when": a year, a date, a weekday or a clock time.
    Moment,
    /// "多少", "how many": any number.
    Number,
}

impl AnswerKind {
    /// The kind of answer `question` asks for, if it asks for a figure.
    pub(crate) fn of(question: &str) -> Option<AnswerKind> {
        // "哪几个工具" asks which ones, not how many: "哪几" reads as "哪".
        let q = question.to_lowercase().replace("哪几", "哪");
        let asks = |phrases: &[String]| phrases.iter().any(|p| q.contains(p.as_str()));
        let words = words();
        if asks(&words.amount_asks) {
            Some(AnswerKind::Amount)
        } else if asks(&words.duration_asks) {
            Some(AnswerKind::Duration)
        } else if asks(&words.moment_asks) {
            Some(AnswerKind::Moment)
        } else if asks(&words.number_asks) {
            Some(AnswerKind::Number)
        } else {
            None
        }
    }

    /// Whether `sentence` states a figure of this kind.
    pub(crate) fn stated_in(self, sentence: &str) -> bool {
        let lower = sentence.to_lowercase();
        let words = words();
        if self == AnswerKind::Moment
            && words
                .moment_words
                .iter()
                .any(|w| lower.contains(w.as_str()))
        {
            return true;
        }
        numbers(&lower).iter().any(|n| match self {
            AnswerKind::Number => true,
            AnswerKind::Amount => {
                words
                    .currency_after
                    .iter()
                    .any(|u| n.after.starts_with(u.as_str()))
                    || words
                        .currency_before
                        .iter()
                        .any(|u| n.before.ends_with(u.as_str()))
            }
            AnswerKind::Duration => words
                .duration_units
                .iter()
                .any(|u| n.after.starts_with(u.as_str())),
            AnswerKind::Moment => {
                words
                    .moment_units
                    .iter()
                    .any(|u| n.after.starts_with(u.as_str()))
                    || (n.ascii
                        && n.after.starts_with(':')
                        && n.after[1..].starts_with(|c: char| c.is_ascii_digit()))
                    || (n.ascii
                        && n.text.len() == 4
                        && n.text
                            .parse::<u32>()
                            .is_ok_and(|y| (1000..2100).contains(&y)))
            }
        })
    }
}

/// A number written in `text` with a little of what stands around it.
struct Number {
    text: String,
    /// Written in ASCII digits (else in Chinese numerals).
    ascii: bool,
    /// Up to 4 characters before it, spaces trimmed.
    before: String,
    /// What follows it, spaces trimmed (at most 12 characters).
    after: String,
}

/// The numbers in `text` (lower-cased): runs of ASCII digits (with "." or "," between digits),
/// and runs of Chinese numerals followed by a measure word ("三个月", not "统一").
fn numbers(text: &str) -> Vec<Number> {
    let (digits, measures) = (&words().chinese_digits, &words().number_measures);
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let ascii = c.is_ascii_digit();
        if !ascii && !digits.contains(c) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() {
            let d = chars[i];
            let inside = if ascii {
                d.is_ascii_digit()
                    || (matches!(d, '.' | ',')
                        && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                        && i > start)
            } else {
                digits.contains(d)
            };
            if !inside {
                break;
            }
            i += 1;
        }
        let after: String = chars[i..].iter().take(14).collect::<String>();
        let after = after.trim_start().chars().take(12).collect::<String>();
        if !ascii && !after.starts_with(|m: char| measures.contains(m)) {
            continue;
        }
        let before: String = chars[start.saturating_sub(4)..start].iter().collect();
        out.push(Number {
            text: chars[start..i].iter().collect(),
            ascii,
            before: before.trim_end().to_string(),
            after,
        });
    }
    out.extend(number_words(text));
    out
}

/// English numbers written as words, with what follows them.
fn number_words(text: &str) -> Vec<Number> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic()) {
        let word_len = rest[start..]
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + word_len];
        let after = &rest[start + word_len..];
        if words().number_words.iter().any(|w| w == word) {
            out.push(Number {
                text: word.to_string(),
                ascii: false,
                before: String::new(),
                after: after.trim_start().chars().take(12).collect(),
            });
        }
        rest = after;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use AnswerKind::*;

    #[test]
    fn what_a_question_asks_for() {
        let rows: &[(&str, Option<AnswerKind>)] = &[
            ("多少钱以上需要发票？", Some(Amount)),
            ("How much does a hotel night cost?", Some(Amount)),
            ("试用期多长？", Some(Duration)),
            ("How long is the probation period?", Some(Duration)),
            (
                "How fast must a SEV1 incident be acknowledged?",
                Some(Duration),
            ),
            ("生产环境的变更窗口是什么时候？", Some(Moment)),
            // "When" asks for conditions as often as for a time.
            ("When should I roll back a prod deployment?", None),
            ("报销单要在多少天内提交？", Some(Duration)),
            ("How many projects run in prod?", Some(Number)),
            ("有几个环境？", Some(Number)),
            ("What is the default maxSurge?", None),
            ("几乎所有人都知道吗", None),
            // "哪几" asks which ones.
            ("哪几个部门要参加评审？", None),
            ("哪几天不能发布？", Some(Moment)),
        ];
        for (q, want) in rows {
            assert_eq!(AnswerKind::of(q), *want, "{q}");
        }
    }

    #[test]
    fn what_a_sentence_states() {
        // (kind, sentence, states it)
        let rows: &[(AnswerKind, &str, bool)] = &[
            (Amount, "单笔金额超过 200 元 的，必须上传发票。", true),
            (Amount, "Item: Hotel; Limit: CNY 600 per night", true),
            (Amount, "The limit is $150 a day.", true),
            (Amount, "Passwords rotate every 90 days.", false),
            (Duration, "所有新入职的正式员工均有 3 个月 的试用期。", true),
            (Duration, "所有新入职的正式员工均有三个月的试用期。", true),
            (Duration, "Acknowledge within: 5 minutes", true),
            (Duration, "Leave requests need two weeks notice.", true),
            (Duration, "Leave requests need a written notice.", false),
            (Number, "No one may share an account.", false),
            (Duration, "单笔金额超过 200 元。", false),
            (Moment, "变更窗口为每周二、周四 14:00–17:00。", true),
            (Moment, "Effective 15 April 2024.", true),
            (Moment, "该公司成立于1998年。", true),
            (
                Moment,
                "The error rate stays above 2% for 5 minutes.",
                false,
            ),
            (Number, "共有 6 个项目。", true),
            (Number, "共有六个项目。", true),
            (Number, "统一使用公司 VPN。", false),
        ];
        for (kind, sentence, states) in rows {
            assert_eq!(kind.stated_in(sentence), *states, "{kind:?}: {sentence}");
        }
    }
}
