//! Removes page furniture: running headers, running footers and page numbers.
//!
//! Only lines near the top or bottom edge of a page are candidates, and only when the
//! document shows they are furniture: the same line (digits aside) recurs on at least half of
//! the pages, the line is an explicit page number ("Page 3 of 7", "- 3 -", "第 3 页"), or it
//! carries a number that follows the page sequence on at least three pages and 30% of them (a
//! running head such as "7 1.2. Metric spaces", or a bare page number). A one-page document
//! keeps everything, and so does a page that would be left without text.

use std::collections::{BTreeSet, HashMap};

use super::layout::{EdgeLine, PageGlyphs, edge_lines};

/// Fraction of the page height at the top and bottom that headers and footers live in.
const BAND: f32 = 0.12;
/// Lines considered at each edge.
const PER_EDGE: usize = 2;
/// Longest line that a running head with a page number may be.
const MAX_HEAD_CHARS: usize = 100;

/// Drops running headers, footers and page numbers from the pages' glyphs.
pub(crate) fn strip(pages: &mut [PageGlyphs]) {
    let distinct: BTreeSet<u32> = pages.iter().map(|p| p.page).collect();
    let n = distinct.len();
    if n < 2 {
        return;
    }
    let edges: Vec<Vec<EdgeLine>> = pages
        .iter()
        .map(|p| edge_lines(p, BAND, PER_EDGE))
        .collect();

    // (a) Lines that recur, digits aside, on at least half of the pages (on both of two).
    let mut seen: HashMap<String, BTreeSet<u32>> = HashMap::new();
    for (p, lines) in pages.iter().zip(&edges) {
        for line in lines {
            seen.entry(signature(&line.text))
                .or_default()
                .insert(p.page);
        }
    }
    let needed = if n == 2 { 2 } else { n.div_ceil(2).max(2) };

    // (c) The offset between page index and printed page number that most pages agree on.
    let mut offsets: HashMap<i64, BTreeSet<u32>> = HashMap::new();
    for (p, lines) in pages.iter().zip(&edges) {
        for line in lines {
            for num in edge_numbers(&line.text) {
                offsets
                    .entry(i64::from(p.page) - num)
                    .or_default()
                    .insert(p.page);
            }
        }
    }
    let offset = offsets
        .iter()
        .map(|(o, set)| (set.len(), std::cmp::Reverse(o.abs()), *o))
        .max()
        .filter(|(count, _, _)| *count >= (n * 3).div_ceil(10).max(3))
        .map(|(_, _, o)| o);

    for (p, lines) in pages.iter_mut().zip(edges) {
        let page = i64::from(p.page);
        let doomed: Vec<EdgeLine> = lines
            .into_iter()
            .filter(|line| {
                let text = line.text.trim();
                let recurs = seen
                    .get(&signature(text))
                    .is_some_and(|s| s.len() >= needed);
                let numbered = offset.is_some_and(|o| {
                    line.rank == 0
                        && text.chars().count() <= MAX_HEAD_CHARS
                        && edge_numbers(text).contains(&(page - o))
                });
                let labelled = explicit_page_number(text) && !bare_number(text);
                recurs || labelled || numbered
            })
            .collect();
        // A page that is nothing but the repeated line is content (a label, a sticker), not
        // furniture around content.
        if !doomed.is_empty() && p.keeps_text_without(&doomed) {
            p.remove_lines(&doomed);
        }
    }
}

/// A line's identity for repetition: case folded, whitespace collapsed, digit runs as `#`.
fn signature(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.trim().chars() {
        let c = if c.is_ascii_digit() {
            '#'
        } else if c.is_whitespace() {
            ' '
        } else {
            c
        };
        if (c == '#' || c == ' ') && out.ends_with(c) {
            continue;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Integers a line starts or ends with (as separate tokens), or its only number.
fn edge_numbers(text: &str) -> Vec<i64> {
    let tokens: Vec<&str> = text
        .split_whitespace()
        .map(|t| t.trim_matches(is_dash_or_bracket))
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = Vec::new();
    for t in [tokens.first(), tokens.last()].into_iter().flatten() {
        if (1..=5).contains(&t.len())
            && t.bytes().all(|b| b.is_ascii_digit())
            && let Ok(v) = t.parse::<i64>()
            && !out.contains(&v)
        {
            out.push(v);
        }
    }
    out
}

fn is_dash_or_bracket(c: char) -> bool {
    matches!(c, '-' | '–' | '—' | '|' | '[' | ']' | '(' | ')')
}

/// A number alone on its line, perhaps between dashes: a page number only if it follows the
/// page sequence.
fn bare_number(text: &str) -> bool {
    let t = text.trim().trim_matches(is_dash_or_bracket).trim();
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

/// "3", "- 3 -", "Page 3", "Page 3 of 7", "3 of 7", "3 / 7", "p. 3", "第 3 页", "第3页，共7页".
fn explicit_page_number(text: &str) -> bool {
    let t: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let t = t.trim_matches(is_dash_or_bracket);
    if t.is_empty() || t.len() > 40 {
        return false;
    }
    let digits = |s: &str| !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit());
    // "N" or "N of M" / "N/M", optionally after "page" / "p." / "seite".
    let rest = ["page", "seite", "pg.", "p."]
        .iter()
        .find_map(|w| t.strip_prefix(w))
        .unwrap_or(t);
    let rest = rest.trim_start_matches(['.', ':']);
    if digits(rest) {
        return true;
    }
    for sep in ["of", "/", "von"] {
        if let Some((a, b)) = rest.split_once(sep)
            && digits(a)
            && digits(b)
        {
            return true;
        }
    }
    // 第 N 页, optionally followed by 共 M 页 (with or without a separator).
    if let Some(r) = t.strip_prefix('第')
        && let Some((a, b)) = r.split_once('页')
        && digits(a)
    {
        let b = b.trim_start_matches([',', '，', '/', '、']);
        return b.is_empty()
            || b.strip_prefix('共')
                .and_then(|x| x.strip_suffix('页'))
                .is_some_and(digits);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_number_patterns() {
        for yes in [
            "3",
            "- 3 -",
            "– 12 –",
            "Page 3",
            "Page 3 of 7",
            "page 3 / 7",
            "3 of 7",
            "3/7",
            "p. 3",
            "Seite 3 von 7",
            "第 3 页",
            "第3页，共7页",
            "第 3 页 共 7 页",
        ] {
            assert!(explicit_page_number(yes), "{yes}");
        }
        for no in [
            "Section 3",
            "3 apples",
            "Page three",
            "2024 revenue",
            "1.2 Metric spaces",
            "第三章",
            "",
        ] {
            assert!(!explicit_page_number(no), "{no}");
        }
    }

    #[test]
    fn signatures_ignore_digits_and_case() {
        assert_eq!(signature("Page 1 of 3"), signature("page 12  of 3"));
        assert_ne!(signature("Page 1 of 3"), signature("Page 1 to 3"));
    }

    #[test]
    fn numbers_at_the_ends_of_a_line() {
        assert_eq!(edge_numbers("7 1.2. METRISCHE RÄUME"), vec![7]);
        assert_eq!(edge_numbers("Chapter One 12"), vec![12]);
        assert_eq!(edge_numbers("- 4 -"), vec![4]);
        assert!(bare_number("- 4 -") && bare_number("12") && !bare_number("Page 4"));
        assert!(edge_numbers("Figure 1.2").is_empty());
    }
}
