//! The little text handling question → SQL needs: CJK detection, the terms a question and a
//! schema name share, and the questions one message asks.

use std::collections::HashSet;

/// CJK ideographs (and the compatibility and extension blocks).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// The terms of `text`: lower-cased English words of two letters or more (plural `-s`/`-ies`
/// folded) without stop words (`term_stopwords` of `data/words.toml`), numbers, and each CJK
/// character and pair of characters.
pub(crate) fn terms(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let lower = text.to_lowercase();
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    let flush_run = |run: &mut Vec<char>, out: &mut HashSet<String>| {
        out.extend(run.iter().map(char::to_string));
        out.extend(run.windows(2).map(|pair| pair.iter().collect::<String>()));
        run.clear();
    };
    let flush_word = |word: &mut String, out: &mut HashSet<String>| {
        let short = word.chars().count() < 2 && !word.chars().all(|c| c.is_ascii_digit());
        let stop = crate::words::words()
            .term_stopwords
            .iter()
            .any(|w| w == word.as_str());
        if !word.is_empty() && !short && !stop {
            let folded = word
                .strip_suffix("ies")
                .map(|s| format!("{s}y"))
                .or_else(|| {
                    (word.len() > 3 && word.ends_with('s') && !word.ends_with("ss"))
                        .then(|| word[..word.len() - 1].to_string())
                })
                .unwrap_or_else(|| word.clone());
            out.insert(folded);
        }
        word.clear();
    };
    for c in lower.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            run.push(c);
        } else if c.is_alphanumeric() {
            flush_run(&mut run, &mut out);
            word.push(c);
        } else {
            flush_run(&mut run, &mut out);
            flush_word(&mut word, &mut out);
        }
    }
    flush_run(&mut run, &mut out);
    flush_word(&mut word, &mut out);
    out
}

/// The questions asked in `question`: its parts ending in a question mark (or the last,
/// unended one) that have two terms or more. One question comes back whole. An ASCII "?"
/// ends a question only before a space or the end ("GET /api?id=7" is one question).
pub fn questions(question: &str) -> Vec<&str> {
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
        .filter(|p| terms(p).len() >= 2)
        .collect();
    if parts.len() > 1 {
        parts
    } else {
        vec![question]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_and_questions() {
        let t = terms("How many Companies are in 北京?");
        assert!(t.contains("company") && t.contains("北京") && t.contains("北"));
        assert!(!t.contains("how") && !t.contains("many"));
        assert_eq!(questions("试用期多久？目前有多少人在试用期？").len(), 2);
        assert_eq!(
            questions("GET /api?id=7 returns what?"),
            ["GET /api?id=7 returns what?"]
        );
    }
}
