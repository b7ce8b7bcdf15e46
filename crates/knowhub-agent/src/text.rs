//! Small bilingual text helpers: normalisation, sentence splitting, and the query terms used
//! to pick supporting sentences (English words without stop words; Chinese character bigrams,
//! which need no dictionary and match across word boundaries). The stop words are in
//! `data/words.toml`.

use std::collections::HashSet;

use crate::lang::is_cjk;
use crate::words::words;

/// Collapses whitespace and drops control characters (seed 004 PreprocessNode).
pub(crate) fn normalize(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The terms of `text` used to match questions with table and column names and with the
/// routing rules: English words folded crudely ("days"/"day", "policies"/"policy"), which
/// those matches were measured with (a full stemmer makes "named" meet every `Name` column).
pub(crate) fn terms(text: &str) -> HashSet<String> {
    collect_terms(text, Stem::Crude)
}

/// The terms of `text` used to match questions with the sentences of documents: English
/// words through the index's own stemmer (Snowball), as search matches them, so
/// "acknowledged" meets "Acknowledge" and "deploying" meets "deployment".
pub(crate) fn prose_terms(text: &str) -> HashSet<String> {
    collect_terms(text, Stem::Snowball)
}

/// [`prose_terms`] without the pairs of CJK characters: words and single characters. A
/// reordering of the same characters ("预算最高的项目" / "哪个项目的预算最高") or a terse text
/// (a query's `SUM("预算") FROM "项目"`) makes pairs of its own, or none.
pub(crate) fn word_terms(text: &str) -> HashSet<String> {
    prose_terms(text)
        .into_iter()
        .filter(|t| !(t.chars().count() > 1 && t.chars().all(is_cjk)))
        .collect()
}

#[derive(Clone, Copy)]
enum Stem {
    Crude,
    Snowball,
}

fn collect_terms(text: &str, stem: Stem) -> HashSet<String> {
    let mut out = HashSet::new();
    let lower = text.to_lowercase();
    let mut word = String::new();
    let mut cjk_run: Vec<char> = Vec::new();
    let flush_cjk = |run: &mut Vec<char>, out: &mut HashSet<String>| {
        // Characters as well as bigrams: short Chinese questions share few bigrams with the
        // sentence that answers them ("年假有几天" / "年假为每年十五天").
        for c in run.iter() {
            if !words().cjk_common.contains(*c) {
                out.insert(c.to_string());
            }
        }
        for pair in run.windows(2) {
            let bigram: String = pair.iter().collect();
            if !words().cjk_stop.contains(&bigram) {
                out.insert(bigram);
            }
        }
        run.clear();
    };
    let mut chars = lower.chars().peekable();
    while let Some(c) = chars.next() {
        // A number with a point in it ("2.0", "1.5", "10.2.1") is one term: a question about
        // version 2.0 is not answered by a sentence about 2.6 because both hold a "2".
        if c == '.'
            && word.ends_with(|w: char| w.is_ascii_digit())
            && chars.peek().is_some_and(char::is_ascii_digit)
        {
            word.push(c);
            continue;
        }
        if is_cjk(c) {
            if !word.is_empty() {
                push_word(&mut out, &word, stem);
                word.clear();
            }
            cjk_run.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk_run, &mut out);
            word.push(c);
        } else {
            flush_cjk(&mut cjk_run, &mut out);
            if !word.is_empty() {
                push_word(&mut out, &word, stem);
                word.clear();
            }
        }
    }
    flush_cjk(&mut cjk_run, &mut out);
    if !word.is_empty() {
        push_word(&mut out, &word, stem);
    }
    out
}

fn push_word(out: &mut HashSet<String>, word: &str, stem: Stem) {
    if word.chars().count() < 2 && !word.chars().all(|c| c.is_ascii_digit()) {
        return;
    }
    if words().stop_words.iter().any(|w| w == word) {
        return;
    }
    // A dotted number is kept whole: the index's tokenizer would split it at the point.
    if word.contains('.') {
        out.insert(word.to_string());
        return;
    }
    let stem = match stem {
        Stem::Crude => word
            .strip_suffix("ies")
            .map(|s| format!("{s}y"))
            .or_else(|| {
                (word.len() > 3 && word.ends_with('s') && !word.ends_with("ss"))
                    .then(|| word[..word.len() - 1].to_string())
            })
            .unwrap_or_else(|| word.to_string()),
        // A word the index drops (a stop word of its list) is no term either.
        Stem::Snowball => match knowhub_index::analyze(word).into_iter().next() {
            Some(stem) => stem,
            None => return,
        },
    };
    out.insert(stem);
}

/// Splits text into sentences (English and Chinese punctuation, and line breaks).
pub(crate) fn sentences(text: &str) -> Vec<String> {
    sentence_spans(text)
        .into_iter()
        .map(|span| text[span].trim())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where the sentences of `text` lie, as [`sentences`] splits it: consecutive byte ranges
/// covering the whole text, each with its end mark and the spaces before it (blank ones
/// included).
pub(crate) fn sentence_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let end = i + c.len_utf8();
        let ends = matches!(c, '。' | '！' | '？' | '；' | '\n')
            || (matches!(c, '.' | '!' | '?')
                && next.is_none_or(|n| n.is_whitespace())
                // "e.g." and "3.5" are not sentence ends.
                && !text[start..end].trim_end().ends_with("e.g.")
                && !text[start..end].trim_end().ends_with("i.e."));
        if ends {
            out.push(start..end);
            start = end;
        }
    }
    if start < text.len() {
        out.push(start..text.len());
    }
    out
}

/// The questions asked in `question`: its parts ending in a question mark (or the last,
/// unended one) that have two terms or more. One question comes back whole. An ASCII "?"
/// ends a question only before a space or the end ("GET /api?id=7" is one question).
pub(crate) fn questions(question: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, c) in question.char_indices() {
        let end = i + c.len_utf8();
        let ends = c == '？'
            || (c == '?'
                && question[end..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace));
        if ends {
            parts.push(&question[start..end]);
            start = end;
        }
    }
    parts.push(&question[start..]);
    let parts: Vec<&str> = parts
        .into_iter()
        .map(str::trim)
        .filter(|p| prose_terms(p).len() >= 2)
        .collect();
    if parts.len() > 1 {
        parts
    } else {
        vec![question]
    }
}

/// The dates a question asks about, as written: a Chinese year with its month and day where
/// given ("2013年3月", "1977年", "1992年7月5日") and an English year (four digits from 1000 to
/// 2999 standing alone). A date counts when it sets the time of the question: after "在", "于",
/// "from", "in" … ("在1991年", "in 1998"), or before a comma or a range ("2013年3月，…",
/// "1992年至1999年间"). A date that is part of a name does not ("2008年NBA总决赛", "the 2008
/// Finals": the answer may say "本届总决赛"), nor does a decade ("2000年代"), or a month or a
/// day alone ("同年7月" names a July of another sentence's year).
pub(crate) fn named_dates(question: &str) -> Vec<String> {
    let chars: Vec<char> = question.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        if !chars[k].is_ascii_digit() || (k > 0 && chars[k - 1].is_ascii_alphanumeric()) {
            k += 1;
            continue;
        }
        let start = k;
        while k < chars.len() && chars[k].is_ascii_digit() {
            k += 1;
        }
        let digits = k - start;
        // "2000年代" is a decade, not a year.
        if chars.get(k) == Some(&'年')
            && (2..=4).contains(&digits)
            && chars.get(k + 1) != Some(&'代')
        {
            k += 1;
            // The month and the day that follow belong to the date.
            for unit in ['月', '日'] {
                let mut m = k;
                while m < chars.len() && chars[m].is_ascii_digit() {
                    m += 1;
                }
                if m > k && chars.get(m) == Some(&unit) {
                    k = m + 1;
                } else {
                    break;
                }
            }
            if sets_the_time(&chars, start, k) {
                out.push(chars[start..k].iter().collect());
            }
        } else if digits == 4
            && matches!(chars[start], '1' | '2')
            && !chars.get(k).is_some_and(|c| c.is_alphanumeric())
            && sets_the_time(&chars, start, k)
        {
            out.push(chars[start..k].iter().collect());
        }
    }
    out.dedup();
    out
}

/// Whether the date at `chars[start..end]` sets the time of its question (see [`named_dates`]).
fn sets_the_time(chars: &[char], start: usize, end: usize) -> bool {
    const BEFORE_ZH: &str = "在于从自至到及和与";
    const BEFORE_EN: &[&str] = &[
        "in", "during", "from", "since", "until", "till", "to", "between", "and", "by", "of",
    ];
    const AFTER: &str = "，,、；;。？?！!至到间及和与-–—~～";
    let before: String = chars[..start].iter().collect();
    let before = before.trim_end();
    let after = chars[end..].iter().find(|c| !c.is_whitespace());
    before
        .chars()
        .next_back()
        .is_some_and(|c| BEFORE_ZH.contains(c))
        || before
            .rsplit(|c: char| !c.is_ascii_alphabetic())
            .next()
            .is_some_and(|w| BEFORE_EN.iter().any(|e| w.eq_ignore_ascii_case(e)))
        || after.is_none_or(|c| AFTER.contains(*c))
}

/// Whether `sentence` names every one of `dates` (see [`named_dates`]).
pub(crate) fn names_dates(sentence: &str, dates: &[String]) -> bool {
    dates.iter().all(|d| names_date(sentence, d))
}

/// Whether `sentence` names `date` whole: "1977年" stands in "1977年香港亚洲歌唱比赛" but not
/// in "11977年", and "1998" not in "19985".
fn names_date(sentence: &str, date: &str) -> bool {
    sentence.match_indices(date).any(|(at, _)| {
        let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
        let before = sentence[..at].chars().next_back();
        let after = sentence[at + date.len()..].chars().next();
        // "1992年" may go on with its month ("1992年7月"); "1998" may not go on with a digit.
        let cut_after = digit(date.chars().next_back()) && digit(after);
        !digit(before) && !cut_after
    })
}

/// The share of `query` terms found in `text` (0 when the query has none).
pub(crate) fn overlap(query: &HashSet<String>, text: &HashSet<String>) -> f32 {
    if query.is_empty() {
        return 0.0;
    }
    query.iter().filter(|t| text.contains(*t)).count() as f32 / query.len() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dates_a_question_asks_about() {
        let table: [(&str, &[&str]); 13] = [
            ("2013年3月，马飚担任什么职务？", &["2013年3月"]),
            ("在1977年，蔡敏获得了什么奖项？", &["1977年"]),
            (
                "1992年至1999年间，他担任了哪些职务？",
                &["1992年", "1999年"],
            ),
            ("蒙泰罗在2005年没有参加哪个比赛？", &["2005年"]),
            (
                "1992年7月5日，2013年3月和 1998 年",
                &["1992年7月5日", "2013年3月", "1998"],
            ),
            ("What happened to the bridge in 1998?", &["1998"]),
            ("What happened in 2004, and why?", &["2004"]),
            // Part of a name: the answer may not repeat it.
            ("为什么2008年NBA总决赛被誉为梦幻对决？", &[]),
            ("Who won the 2008 Finals?", &[]),
            // Not dates: a decade, a month alone, a version, a long number.
            ("在2000年代与35快砲竞争失败的理由是什么？", &[]),
            ("同年7月发生了什么？", &[]),
            ("What changed in v2024?", &[]),
            ("Is 30000 km far?", &[]),
        ];
        for (question, dates) in table {
            assert_eq!(named_dates(question), dates, "{question}");
        }
        assert!(!names_date("In 19985 BC", "1998"));
        assert!(!names_date("11977年", "1977年"));
        assert!(names_date("1992年7月5日，任副司长", "1992年7月"));
        assert!(names_date("1977年香港亚洲歌唱比赛季军。", "1977年"));
    }

    #[test]
    fn terms_are_bilingual() {
        let t = terms("How many days of annual leave? 年假有多少天");
        for want in ["day", "annual", "leave", "年假", "少天"] {
            assert!(t.contains(want), "{want} in {t:?}");
        }
        let p = prose_terms("How many days of annual leave? 年假有多少天");
        for want in prose_terms("day annual leave 年假 少天") {
            assert!(p.contains(&want), "{want} in {p:?}");
        }
        assert!(!t.contains("how") && !t.contains("多少"));
        assert_eq!(normalize("  a\tb\u{0007}\n c "), "a b c");
    }

    #[test]
    fn a_number_with_a_point_is_one_term() {
        let t = prose_terms("What changed in GIMP 2.0 and Qwen2.5? Version 3. Next");
        for want in ["2.0", "qwen2.5", "3"] {
            assert!(t.contains(want), "{want} in {t:?}");
        }
        assert!(!t.contains("2") && !t.contains("0"), "{t:?}");
        assert!(prose_terms("版本 2.6 发布").contains("2.6"));
    }

    #[test]
    fn prose_word_forms_meet_through_the_index_stemmer() {
        // (question word, the document's form of it)
        let pairs = [
            ("days", "day"),
            ("policies", "policy"),
            ("acknowledged", "Acknowledge"),
            ("deploying", "deployment"),
            ("rolled", "rolls"),
        ];
        for (asked, written) in pairs {
            assert_eq!(
                prose_terms(asked),
                prose_terms(written),
                "{asked} / {written}"
            );
            assert_eq!(prose_terms(asked).len(), 1, "{asked}");
        }
        // Stop words are no terms, in either list.
        assert!(prose_terms("the of such into").is_empty());
        // Names of tables and columns keep the crude fold: "named" is not `Name`.
        assert_ne!(terms("named"), terms("Name"));
    }

    #[test]
    fn a_question_of_several_questions_is_split() {
        // (question, the questions asked)
        let rows: &[(&str, &[&str])] = &[
            (
                "How long is probation? Who approves an extension?",
                &["How long is probation?", "Who approves an extension?"],
            ),
            (
                "报销单要在多少天内提交？多少钱以上需要发票？",
                &["报销单要在多少天内提交？", "多少钱以上需要发票？"],
            ),
            ("年假有几天", &["年假有几天"]),
            // A part with fewer than two terms asks nothing of its own.
            (
                "How long is probation? Really?",
                &["How long is probation? Really?"],
            ),
            // A "?" inside a word or a link asks nothing.
            (
                "What does GET /api/leave?user=7 return for annual leave?",
                &["What does GET /api/leave?user=7 return for annual leave?"],
            ),
            // An unended last part still counts.
            (
                "What is the hotel limit? And the meal allowance",
                &["What is the hotel limit?", "And the meal allowance"],
            ),
        ];
        for (question, want) in rows {
            assert_eq!(questions(question), *want, "{question}");
        }
    }

    #[test]
    fn sentences_split_in_both_languages() {
        assert_eq!(
            sentences("Leave is 15 days. It grows e.g. yearly! 试用期三个月。转正后加薪"),
            [
                "Leave is 15 days.",
                "It grows e.g. yearly!",
                "试用期三个月。",
                "转正后加薪"
            ]
        );
        assert_eq!(sentences("Version 3.5 is out."), ["Version 3.5 is out."]);
    }
}
