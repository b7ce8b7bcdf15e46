//! Snippet support for tantivy's `SnippetGenerator`.
//!
//! The generator walks tokens assuming their offsets only move forward and do
//! not overlap; the index analyzer emits overlapping tokens for CJK
//! (`数据`, `数据库`, …), which would make it compute fragment starts inside a
//! token and underflow highlight offsets. [`SnippetTokenizer`] therefore runs
//! the same analysis and then keeps a non-overlapping, ordered subset that
//! prefers tokens matching the query terms.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use tantivy::tokenizer::{Token, Tokenizer};

use crate::index::Snippet;
use crate::tokenizer::{KnowhubTokenStream, analyze_tokens};

#[derive(Debug, Clone)]
pub(crate) struct SnippetTokenizer {
    terms: Arc<HashSet<String>>,
}

impl SnippetTokenizer {
    pub(crate) fn new(terms: impl IntoIterator<Item = String>) -> Self {
        Self {
            terms: Arc::new(terms.into_iter().collect()),
        }
    }
}

impl Tokenizer for SnippetTokenizer {
    type TokenStream<'a> = KnowhubTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> KnowhubTokenStream {
        KnowhubTokenStream::new(select_tokens(analyze_tokens(text), &self.terms))
    }
}

/// Matching tokens first (longest wins at equal start), then non-matching
/// tokens fill the gaps (shortest first, so they block nothing); the result is
/// sorted and non-overlapping.
fn select_tokens(tokens: Vec<Token>, terms: &HashSet<String>) -> Vec<Token> {
    let (mut matched, mut other): (Vec<Token>, Vec<Token>) =
        tokens.into_iter().partition(|t| terms.contains(&t.text));
    matched.sort_by_key(|t| (t.offset_from, std::cmp::Reverse(t.offset_to)));
    other.sort_by_key(|t| (t.offset_from, t.offset_to));

    let mut chosen: Vec<Token> = Vec::new();
    let mut end = 0;
    for t in matched {
        if t.offset_from >= end {
            end = t.offset_to;
            chosen.push(t);
        }
    }
    let taken: Vec<Range<usize>> = chosen.iter().map(|t| t.offset_from..t.offset_to).collect();
    let mut end = 0;
    for t in other {
        let overlaps = taken
            .iter()
            .any(|r| t.offset_from < r.end && r.start < t.offset_to);
        if t.offset_from >= end && !overlaps {
            end = t.offset_to;
            chosen.push(t);
        }
    }
    chosen.sort_by_key(|t| t.offset_from);
    chosen
}

/// Byte offset of the `n`th character of `s` (or `s.len()`).
fn byte_at_char(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(b, _)| b)
}

/// Turns tantivy's fragment (byte range into `text`, highlights relative to
/// it) into a [`Snippet`] of at most `max_chars` characters.
pub(crate) fn fit_to_chars(
    text: &str,
    fragment: Range<usize>,
    highlights: &[Range<usize>],
    max_chars: usize,
) -> Snippet {
    let frag = match text.get(fragment) {
        Some(f) if !highlights.is_empty() => f,
        // Nothing matched: show the beginning of the text.
        _ => {
            return Snippet {
                fragment: text[..byte_at_char(text, max_chars)].to_owned(),
                highlights: Vec::new(),
            };
        }
    };
    let mut window = 0..frag.len();
    if frag.chars().count() > max_chars {
        let first = &highlights[0];
        let first_start_char = frag.get(..first.start).map_or(0, |s| s.chars().count());
        let first_end_char = frag.get(..first.end).map_or(0, |s| s.chars().count());
        // Keep a little leading context when the first highlight would not fit.
        let start_char = if first_end_char <= max_chars {
            0
        } else {
            first_start_char.saturating_sub(max_chars / 4)
        };
        let start = byte_at_char(frag, start_char);
        let len = byte_at_char(&frag[start..], max_chars);
        window = start..start + len;
    }
    Snippet {
        fragment: frag[window.clone()].to_owned(),
        highlights: highlights
            .iter()
            .filter(|h| h.start >= window.start && h.end <= window.end && h.start < h.end)
            .map(|h| h.start - window.start..h.end - window.start)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::analyze_tokens;

    #[test]
    fn selected_tokens_are_ordered_and_disjoint() {
        let text = "大型数据库管理系统和数据仓库 database deployments";
        let terms: HashSet<String> = ["数据", "管理", "deploy"].map(String::from).into();
        let chosen = select_tokens(analyze_tokens(text), &terms);
        for pair in chosen.windows(2) {
            assert!(pair[0].offset_to <= pair[1].offset_from, "{chosen:?}");
        }
        let matched: Vec<&str> = chosen
            .iter()
            .filter(|t| terms.contains(&t.text))
            .map(|t| &text[t.offset_from..t.offset_to])
            .collect();
        assert_eq!(matched, vec!["数据", "管理", "数据", "deployments"]);
    }

    #[test]
    fn fit_trims_to_chars_and_keeps_highlights_valid() {
        let text = "一二三四五六七八九十部署一二三四五";
        let start = text.find("部署").unwrap_or_default();
        let highlights = vec![start..start + "部署".len(), 0..0];
        let s = fit_to_chars(text, 0..text.len(), &highlights, 6);
        assert_eq!(s.fragment.chars().count(), 6);
        assert_eq!(s.highlights.len(), 1);
        assert_eq!(&s.fragment[s.highlights[0].clone()], "部署");

        let none = fit_to_chars(text, 0..0, &[], 3);
        assert_eq!(none.fragment, "一二三");
        assert!(none.highlights.is_empty());
    }
}
