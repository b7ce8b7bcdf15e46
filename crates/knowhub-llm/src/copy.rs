//! Copy-only decoding ([`ChatRequest::copy_from`](crate::ChatRequest::copy_from)): a local
//! model may only write a verbatim piece of one of the given texts.
//!
//! A small model asked to "copy the phrase that answers" paraphrases, drops a unit, or writes
//! a number that is in no source often enough that its reply has to be thrown away. Here the
//! choice of *which* piece stays the model's (its own most likely tokens), but every token it
//! may pick continues the text so far somewhere in the sources, so whatever it writes stands in
//! them. Tracking is on bytes: the places where the text so far ends in the sources, advanced
//! by each token's bytes; a token is allowed when its bytes follow one of those places.

use std::collections::HashMap;

use crate::gguf_tokenizer::TokenTable;

/// Token ids by their bytes (control tokens, which decode to nothing, left out), and the
/// longest token in bytes: the index copy-only decoding looks continuations up in.
#[derive(Debug, Default)]
pub(crate) struct TokenIndex {
    by_bytes: HashMap<Box<[u8]>, Vec<u32>>,
    longest: usize,
}

impl TokenIndex {
    pub(crate) fn new(table: &TokenTable) -> Self {
        let mut by_bytes: HashMap<Box<[u8]>, Vec<u32>> = HashMap::with_capacity(table.len());
        let mut longest = 0;
        for id in 0..table.len() {
            let Ok(id) = u32::try_from(id) else { break };
            let bytes = table.bytes(id);
            if bytes.is_empty() {
                continue;
            }
            longest = longest.max(bytes.len());
            by_bytes.entry(bytes.into()).or_default().push(id);
        }
        TokenIndex { by_bytes, longest }
    }
}

/// The state of one copy-only generation.
#[derive(Debug)]
pub(crate) struct CopyConstraint<'a> {
    sources: Vec<&'a [u8]>,
    index: &'a TokenIndex,
    /// (source, byte offset): every place where the text generated so far ends.
    ends: Vec<(usize, usize)>,
    started: bool,
}

impl<'a> CopyConstraint<'a> {
    /// A generation that may start at any character of `sources` that is not whitespace.
    pub(crate) fn new(sources: &'a [String], index: &'a TokenIndex) -> Self {
        let ends = sources
            .iter()
            .enumerate()
            .flat_map(|(s, text)| {
                text.char_indices()
                    .filter(|(_, c)| !c.is_whitespace())
                    .map(move |(p, _)| (s, p))
            })
            .collect();
        CopyConstraint {
            sources: sources.iter().map(|s| s.as_bytes()).collect(),
            index,
            ends,
            started: false,
        }
    }

    /// The tokens that continue the text so far in some source (sorted, no repeats). Empty
    /// when no source continues it: the answer can only end there.
    pub(crate) fn allowed(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for &(s, p) in &self.ends {
            let rest = &self.sources[s][p..];
            for len in 1..=rest.len().min(self.index.longest) {
                if let Some(ids) = self.index.by_bytes.get(&rest[..len]) {
                    out.extend_from_slice(ids);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether the answer may end now (something has been copied).
    pub(crate) fn may_end(&self) -> bool {
        self.started
    }

    /// Takes `bytes` (a token allowed by [`CopyConstraint::allowed`]) as the next part of the
    /// text.
    pub(crate) fn advance(&mut self, bytes: &[u8]) {
        let sources = &self.sources;
        self.ends.retain_mut(|(s, p)| {
            let ok = sources[*s][*p..].starts_with(bytes);
            *p += bytes.len();
            ok
        });
        self.started |= !bytes.is_empty();
    }
}

/// `logits` with every id outside `allowed` (and `also`) set to minus infinity.
pub(crate) fn mask(logits: &[f32], allowed: &[u32], also: &[u32]) -> Vec<f32> {
    let mut out = vec![f32::NEG_INFINITY; logits.len()];
    for &id in allowed.iter().chain(also) {
        if let (Some(o), Some(l)) = (out.get_mut(id as usize), logits.get(id as usize)) {
            *o = *l;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index over a made-up vocabulary of single bytes, some words and CJK pieces.
    fn index(tokens: &[&str]) -> TokenIndex {
        let mut by_bytes: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        let mut longest = 0;
        for (id, t) in tokens.iter().enumerate() {
            longest = longest.max(t.len());
            by_bytes
                .entry(t.as_bytes().into())
                .or_default()
                .push(id as u32);
        }
        TokenIndex { by_bytes, longest }
    }

    fn text_of(tokens: &[&str], ids: &[u32]) -> Vec<String> {
        ids.iter()
            .map(|&i| tokens[i as usize].to_string())
            .collect()
    }

    #[test]
    fn only_continuations_found_in_a_source_are_allowed() {
        let tokens = [
            "4", " ", "分钟", "分", "钟", "内", "8", "小时", "days", " days", "15", "x",
        ];
        let idx = index(&tokens);
        let sources = ["则 4 分钟内".to_string(), "15 days".to_string()];
        let mut c = CopyConstraint::new(&sources, &idx);
        assert!(!c.may_end());
        let first = text_of(&tokens, &c.allowed());
        // Anything standing in a source may start the answer; "8", "小时" and "x" may not,
        // nor may an answer start with a space.
        for t in ["4", "分钟", "分", "钟", "内", "15", "days"] {
            assert!(first.contains(&t.to_string()), "{t} in {first:?}");
        }
        for t in ["8", "小时", "x", " ", " days"] {
            assert!(!first.contains(&t.to_string()), "{t} in {first:?}");
        }
        c.advance(b"4");
        assert!(c.may_end());
        assert_eq!(text_of(&tokens, &c.allowed()), [" "]);
        c.advance(b" ");
        let next = text_of(&tokens, &c.allowed());
        assert_eq!(next, ["分钟", "分"]);
        c.advance("分钟".as_bytes());
        assert_eq!(text_of(&tokens, &c.allowed()), ["内"]);
        c.advance("内".as_bytes());
        assert!(c.allowed().is_empty(), "the source ends here");

        // "15" then " days" (one token) follows in the second source only.
        let mut d = CopyConstraint::new(&sources, &idx);
        d.advance(b"15");
        assert_eq!(text_of(&tokens, &d.allowed()), [" ", " days"]);
    }

    #[test]
    fn masking_keeps_only_the_allowed_and_the_extra_ids() {
        let logits = [1.0, 5.0, 3.0, 9.0];
        let m = mask(&logits, &[0, 2], &[3, 17]);
        assert_eq!(m[0], 1.0);
        assert_eq!(m[1], f32::NEG_INFINITY);
        assert_eq!(m[2], 3.0);
        assert_eq!(m[3], 9.0);
    }
}
