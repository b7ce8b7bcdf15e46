//! User query text → tantivy query, without tantivy's `QueryParser`.
//!
//! The `QueryParser` would turn a multi-token CJK word into a phrase query and
//! surface syntax errors for stray `:`/`(`/`"`; users type natural text, so we
//! accept everything and support only two operators:
//!
//! * `"quoted phrase"`: must match as a phrase (in any field). An unbalanced
//!   quote is closed at the end of the text.
//! * `-word` / `-"phrase"`: chunks containing it are excluded. A `-` inside a
//!   word (`x86-64`) is not an operator.
//!
//! All other words are analysed with the index analyzer and become SHOULD term
//! queries over title (×2), heading (×1.5) and body.

use tantivy::Term;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, Occur, PhraseQuery, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};

use crate::error::{IndexError, Result};
use crate::tokenizer::analyze_tokens;

/// Score added per distinct query term a chunk matches (any field), in units of
/// the query terms' mean IDF. BM25 already rewards matching several terms, but
/// a chunk repeating one rare term can outrank a chunk holding all the terms
/// once; `tests::coordination_bonus_measurement` shows the effect.
pub(crate) const COORD_FACTOR: f32 = 1.0;

/// A group of analysed terms with their position offsets relative to the
/// first one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Clause {
    pub(crate) terms: Vec<(usize, String)>,
    /// Quoted: positional match; otherwise all terms anywhere in the chunk.
    pub(crate) phrase: bool,
}

/// The analysed form of a user query.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ParsedQuery {
    /// Distinct free terms, in query order.
    pub(crate) terms: Vec<String>,
    /// Quoted phrases that must match.
    pub(crate) required: Vec<Clause>,
    /// Words/phrases whose chunks are excluded.
    pub(crate) excluded: Vec<Clause>,
}

impl ParsedQuery {
    /// Terms worth highlighting: free terms and terms of required phrases.
    pub(crate) fn positive_terms(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(String::as_str).chain(
            self.required
                .iter()
                .flat_map(|c| c.terms.iter().map(|(_, t)| t.as_str())),
        )
    }

    fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.required.is_empty()
    }
}

#[derive(Debug, PartialEq)]
struct Segment<'a> {
    text: &'a str,
    negated: bool,
    quoted: bool,
}

/// Splits raw query text into words and quoted phrases. Never fails.
fn lex(text: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    // All delimiters are ASCII, so byte indexing stays on char boundaries.
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() || is_unicode_space_at(text, i) {
            i += next_char_len(text, i);
            continue;
        }
        let mut negated = false;
        if bytes[i] == b'-'
            && i + 1 < bytes.len()
            && !bytes[i + 1].is_ascii_whitespace()
            && !is_unicode_space_at(text, i + 1)
        {
            negated = true;
            i += 1;
        }
        if bytes[i] == b'"' {
            let start = i + 1;
            let end = text[start..].find('"').map_or(text.len(), |p| start + p);
            out.push(Segment {
                text: &text[start..end],
                negated,
                quoted: true,
            });
            i = (end + 1).min(text.len());
        } else {
            let start = i;
            while i < bytes.len()
                && bytes[i] != b'"'
                && !bytes[i].is_ascii_whitespace()
                && !is_unicode_space_at(text, i)
            {
                i += next_char_len(text, i);
            }
            out.push(Segment {
                text: &text[start..i],
                negated,
                quoted: false,
            });
        }
    }
    out
}

fn next_char_len(text: &str, i: usize) -> usize {
    text[i..].chars().next().map_or(1, char::len_utf8)
}

fn is_unicode_space_at(text: &str, i: usize) -> bool {
    // `i` is always a char boundary here (see `lex`); `get` keeps it panic-free.
    text.get(i..)
        .and_then(|s| s.chars().next())
        .is_some_and(|c| !c.is_ascii() && c.is_whitespace())
}

/// Parses and analyses user query text.
pub(crate) fn parse(text: &str) -> ParsedQuery {
    let mut parsed = ParsedQuery::default();
    for segment in lex(text) {
        let tokens = analyze_tokens(segment.text);
        let Some(first) = tokens.first() else {
            continue;
        };
        let base = first.position;
        let clause = Clause {
            terms: tokens
                .iter()
                .map(|t| (t.position - base, t.text.clone()))
                .collect(),
            phrase: segment.quoted,
        };
        if segment.negated {
            parsed.excluded.push(clause);
        } else if segment.quoted {
            parsed.required.push(clause);
        } else {
            for (_, term) in clause.terms {
                if !parsed.terms.contains(&term) {
                    parsed.terms.push(term);
                }
            }
        }
    }
    parsed
}

/// The text fields and their query-time boosts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TextFields {
    pub(crate) title: Field,
    pub(crate) heading: Field,
    pub(crate) body: Field,
}

pub(crate) const TITLE_BOOST: f32 = 2.0;
pub(crate) const HEADING_BOOST: f32 = 1.5;

impl TextFields {
    fn boosted(&self) -> [(Field, f32); 3] {
        [
            (self.title, TITLE_BOOST),
            (self.heading, HEADING_BOOST),
            (self.body, 1.0),
        ]
    }
}

fn term_query(field: Field, term: &str, boost: f32) -> Box<dyn Query> {
    let q = TermQuery::new(
        Term::from_field_text(field, term),
        IndexRecordOption::WithFreqs,
    );
    if boost == 1.0 {
        Box::new(q)
    } else {
        Box::new(BoostQuery::new(Box::new(q), boost))
    }
}

/// `term` in any text field (boosted).
fn term_any_field(fields: &TextFields, term: &str) -> Box<dyn Query> {
    Box::new(BooleanQuery::union(
        fields
            .boosted()
            .iter()
            .map(|&(f, b)| term_query(f, term, b))
            .collect(),
    ))
}

/// A clause matched in any text field.
fn clause_query(fields: &TextFields, clause: &Clause) -> Box<dyn Query> {
    let mut distinct: Vec<&str> = clause.terms.iter().map(|(_, t)| t.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if let [single] = distinct.as_slice() {
        return term_any_field(fields, single);
    }
    if clause.phrase {
        // `PhraseQuery` asserts at least two terms; guaranteed here because
        // there are at least two distinct terms.
        Box::new(BooleanQuery::union(
            fields
                .boosted()
                .iter()
                .map(|&(f, b)| {
                    let terms = clause
                        .terms
                        .iter()
                        .map(|(offset, t)| (*offset, Term::from_field_text(f, t)))
                        .collect();
                    let q: Box<dyn Query> = Box::new(PhraseQuery::new_with_offset(terms));
                    if b == 1.0 {
                        q
                    } else {
                        Box::new(BoostQuery::new(q, b))
                    }
                })
                .collect(),
        ))
    } else {
        Box::new(BooleanQuery::intersection(
            distinct.iter().map(|t| term_any_field(fields, t)).collect(),
        ))
    }
}

/// Builds the tantivy query for a parsed query.
pub(crate) fn build(
    fields: &TextFields,
    parsed: &ParsedQuery,
    coord_bonus: f32,
) -> Result<Box<dyn Query>> {
    if parsed.is_empty() {
        return Err(IndexError::EmptyQuery);
    }
    let mut positive: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for term in &parsed.terms {
        for (field, boost) in fields.boosted() {
            positive.push((Occur::Should, term_query(field, term, boost)));
        }
    }
    if parsed.terms.len() > 1 && coord_bonus > 0.0 {
        for term in &parsed.terms {
            positive.push((
                Occur::Should,
                Box::new(ConstScoreQuery::new(
                    term_any_field(fields, term),
                    coord_bonus,
                )),
            ));
        }
    }
    for clause in &parsed.required {
        positive.push((Occur::Must, clause_query(fields, clause)));
    }
    let min_should = usize::from(parsed.required.is_empty());
    let positive = BooleanQuery::with_minimum_required_clauses(positive, min_should);
    if parsed.excluded.is_empty() {
        return Ok(Box::new(positive));
    }
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(positive))];
    for clause in &parsed.excluded {
        clauses.push((Occur::MustNot, clause_query(fields, clause)));
    }
    Ok(Box::new(BooleanQuery::new(clauses)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(text: &str, negated: bool, quoted: bool) -> Segment<'_> {
        Segment {
            text,
            negated,
            quoted,
        }
    }

    #[test]
    fn lexing_table() {
        let cases: Vec<(&str, Vec<Segment<'_>>)> = vec![
            ("", vec![]),
            ("   ", vec![]),
            (
                "foo bar",
                vec![seg("foo", false, false), seg("bar", false, false)],
            ),
            ("-foo", vec![seg("foo", true, false)]),
            (
                "- foo",
                vec![seg("-", false, false), seg("foo", false, false)],
            ),
            ("x86-64", vec![seg("x86-64", false, false)]),
            (
                "\"a b\" c",
                vec![seg("a b", false, true), seg("c", false, false)],
            ),
            ("-\"a b\"", vec![seg("a b", true, true)]),
            (
                "\"unbalanced phrase",
                vec![seg("unbalanced phrase", false, true)],
            ),
            (
                "foo\"bar baz\"",
                vec![seg("foo", false, false), seg("bar baz", false, true)],
            ),
            (
                "部署\u{3000}规范",
                vec![seg("部署", false, false), seg("规范", false, false)],
            ),
            ("\"", vec![seg("", false, true)]),
            ("-", vec![seg("-", false, false)]),
        ];
        for (input, expected) in cases {
            assert_eq!(lex(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn parse_dedups_and_separates() {
        let p = parse("deploy deployments -legacy \"state of the art\"");
        assert_eq!(p.terms, vec!["deploy".to_string()]);
        assert_eq!(p.excluded.len(), 1);
        assert_eq!(p.required.len(), 1);
        // Stop words leave position gaps, so the phrase keeps its shape.
        assert_eq!(
            p.required[0].terms,
            vec![(0, "state".to_string()), (3, "art".to_string())]
        );
    }

    #[test]
    fn empty_queries() {
        for q in ["", "  ", "the of", "!!! ???", "-foo", "\"\""] {
            assert!(parse(q).is_empty(), "{q:?}");
        }
    }
}
