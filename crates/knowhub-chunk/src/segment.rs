//! Where text may be cut: sentence and clause boundaries, for English and Chinese alike.
//!
//! Both functions append *cut positions* (byte offsets, each on a char boundary, strictly
//! increasing, strictly inside the text) to `out`: a new piece starts at each one. Whitespace
//! around a cut stays in the text; callers trim pieces. Both run in one pass, O(len).

/// Full-width terminators end a Chinese/Japanese sentence with no space after them.
fn is_cjk_terminator(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '；' | '．' | '｡')
}

fn is_ascii_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?')
}

/// Closing quotes and brackets that belong to the sentence they follow (`."`, `。」`).
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '}' | '”' | '’' | '」' | '』' | '）' | '】' | '》' | '〉' | '］'
    )
}

fn push_cut(out: &mut Vec<usize>, at: usize, len: usize) {
    if at > 0 && at < len && out.last().is_none_or(|&last| last < at) {
        out.push(at);
    }
}

/// Sentence cuts: after `.`, `!`, `?` followed by whitespace (not when the next word starts in
/// lowercase, which is how "e.g. this" and "approx. five" look); after `。！？；` anywhere; and
/// after every newline.
pub(crate) fn sentence_cuts(s: &str, out: &mut Vec<usize>) {
    let len = s.len();
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c == '\n' {
            push_cut(out, i + 1, len);
            continue;
        }
        let mut cjk = is_cjk_terminator(c);
        if !cjk && !is_ascii_terminator(c) {
            continue;
        }
        let mut end = i + c.len_utf8();
        // Absorb "?!", "...", and closing quotes into the sentence that ends here.
        while let Some(&(j, d)) = it.peek() {
            if is_cjk_terminator(d) || is_ascii_terminator(d) || is_closer(d) {
                cjk |= is_cjk_terminator(d);
                end = j + d.len_utf8();
                it.next();
            } else {
                break;
            }
        }
        if cjk {
            push_cut(out, end, len);
            continue;
        }
        // ASCII terminators only end a sentence before whitespace: "3.14", "v1.2", "a.m." no.
        if it.peek().is_some_and(|&(_, d)| d.is_whitespace()) {
            // The scan stops at the first non-space, which no later lookahead re-reads: O(len).
            let next = s[end..].chars().find(|d| !d.is_whitespace());
            if c == '.' && next.is_some_and(char::is_lowercase) {
                continue;
            }
            push_cut(out, end, len);
        }
    }
}

/// Clause cuts inside a sentence: after `，、：；` anywhere and after `,;:` before whitespace
/// (so "1,000" and "10:30" stay whole).
pub(crate) fn clause_cuts(s: &str, out: &mut Vec<usize>) {
    let len = s.len();
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let end = i + c.len_utf8();
        match c {
            '，' | '、' | '：' | '；' | '﹐' | '､' => push_cut(out, end, len),
            ',' | ';' | ':' if it.peek().is_some_and(|&(_, d)| d.is_whitespace()) => {
                push_cut(out, end, len)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(s: &str, f: fn(&str, &mut Vec<usize>)) -> Vec<&str> {
        let mut cuts = Vec::new();
        f(s, &mut cuts);
        let mut out = Vec::new();
        let mut prev = 0;
        for c in cuts.into_iter().chain([s.len()]) {
            let p = s[prev..c].trim();
            if !p.is_empty() {
                out.push(p);
            }
            prev = c;
        }
        out
    }

    #[test]
    fn sentences() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("One. Two! Three? Four", &["One.", "Two!", "Three?", "Four"]),
            ("Pi is 3.14 today. Next", &["Pi is 3.14 today.", "Next"]),
            ("See e.g. this one. Done.", &["See e.g. this one.", "Done."]),
            (
                "He said \"stop.\" Then left.",
                &["He said \"stop.\"", "Then left."],
            ),
            ("Wait?! Yes...  No", &["Wait?!", "Yes...", "No"]),
            ("line one\nline two", &["line one", "line two"]),
            (
                "第一句。第二句！第三句？第四句；第五",
                &["第一句。", "第二句！", "第三句？", "第四句；", "第五"],
            ),
            ("他说：“好。”然后走了。", &["他说：“好。”", "然后走了。"]),
            ("他说「好。」然后走了。", &["他说「好。」", "然后走了。"]),
            (
                "版本v1.2发布。English follows. 中文",
                &["版本v1.2发布。", "English follows.", "中文"],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(pieces(text, sentence_cuts), *want, "{text:?}");
        }
    }

    #[test]
    fn clauses() {
        let cases: &[(&str, &[&str])] = &[
            ("a, b; c: d", &["a,", "b;", "c:", "d"]),
            ("1,000 at 10:30", &["1,000 at 10:30"]),
            ("甲，乙、丙：丁", &["甲，", "乙、", "丙：", "丁"]),
        ];
        for (text, want) in cases {
            assert_eq!(pieces(text, clause_cuts), *want, "{text:?}");
        }
    }
}
