//! The chunking algorithm.
//!
//! Three passes, each linear in the text:
//!
//! 1. **Segment** every block into *units*: contiguous, whitespace-trimmed spans of the
//!    canonical text that are each at most `max_tokens` (sentences of prose; whole table rows,
//!    code blocks and headings when they fit). Each unit records what kind of boundary precedes
//!    it ([`Brk`]), its page and its heading path.
//! 2. **Pack** units greedily into chunks: contiguous unit ranges. When the next unit does not
//!    fit, look back over the current chunk for the strongest boundary that still leaves a
//!    reasonably full chunk (a heading or page break, else a block, else a sentence …), cut
//!    there, and re-pack what follows. Headings of level ≤ 2 always cut.
//! 3. **Finish**: merge tiny trailing chunks of a section into their predecessor, re-count each
//!    chunk's real text, and convert byte offsets to character offsets.
//!
//! Because units and overlaps are spans of the canonical text, every chunk's text is a single
//! slice of it: `overlap + main content`, with the main content at the end.

use knowhub_parse::{BlockKind, ParsedDocument};
use unicode_segmentation::UnicodeSegmentation;

use crate::segment::{clause_cuts, sentence_cuts};
use crate::{Chunk, ChunkConfig, TokenCounter};

/// The boundary before a unit, weakest first. Packing prefers to cut at stronger ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Brk {
    /// Inside a word that had to be split (last resort).
    Char,
    /// Between words of an over-long clause.
    Word,
    /// After clause punctuation of an over-long sentence.
    Clause,
    /// Between sentences of a block (or lines of a code block).
    Sentence,
    /// Between blocks.
    Block,
    /// Between blocks on different pages.
    Page,
    /// Before a heading block.
    Heading,
}

#[derive(Debug, Clone, Copy)]
struct Unit {
    /// Byte span in the canonical text, trimmed of whitespace.
    start: usize,
    end: usize,
    tokens: usize,
    brk: Brk,
    /// The level of the heading this unit belongs to, 0 for body text.
    heading: u8,
    page: Option<u32>,
    /// Index into the interned heading paths.
    path: u32,
}

/// A chunk before finishing: units `a..b`, plus an overlap starting at byte `ov_start`.
#[derive(Debug, Clone, Copy)]
struct Raw {
    a: usize,
    b: usize,
    ov_start: Option<usize>,
}

pub(crate) fn chunk(
    doc: &ParsedDocument,
    cfg: &ChunkConfig,
    counter: &dyn TokenCounter,
) -> Vec<Chunk> {
    let cfg = cfg.sanitized();
    let text = doc.plain_text();
    let mut seg = Segmenter {
        text: &text,
        counter,
        max: cfg.max_tokens,
        // Over-long sentences are cut into word groups of about this size: small enough for
        // packing to land near the target, large enough that the heuristic counter's per-piece
        // rounding stays negligible.
        grain: (cfg.target_tokens / 8).clamp(1, cfg.max_tokens),
        units: Vec::new(),
        cuts: Vec::new(),
    };
    let paths = seg.segment_blocks(doc);
    let units = seg.units;
    if units.is_empty() {
        return Vec::new();
    }
    let packer = Packer {
        text: &text,
        units: &units,
        cfg: &cfg,
        counter,
    };
    let raws = packer.merge_tiny_tails(packer.pack());
    packer.finish(&raws, &paths)
}

struct Segmenter<'a> {
    text: &'a str,
    counter: &'a dyn TokenCounter,
    max: usize,
    grain: usize,
    units: Vec<Unit>,
    /// Scratch buffer for cut positions, reused across calls.
    cuts: Vec<usize>,
}

/// What every unit of the block being segmented shares.
#[derive(Debug, Clone, Copy)]
struct Ctx {
    heading: u8,
    page: Option<u32>,
    path: u32,
}

impl Segmenter<'_> {
    /// Segments all blocks; returns the interned heading paths that units index.
    fn segment_blocks(&mut self, doc: &ParsedDocument) -> Vec<Vec<String>> {
        let mut paths: Vec<Vec<String>> = vec![Vec::new()];
        let mut stack: Vec<(u8, String)> = Vec::new();
        let mut path = 0u32;
        let mut prev_page: Option<u32> = None;
        // Block offsets follow `ParsedDocument::plain_text` exactly: a '\n' goes before a block
        // only when something has been written already (so leading empty blocks add nothing).
        let mut pos = 0usize;
        for block in &doc.blocks {
            if pos > 0 {
                pos += 1;
            }
            let (start, end) = (pos, pos + block.text.len());
            pos = end;
            let (s, e) = trim(self.text, start, end);
            if s == e {
                continue;
            }
            let heading = match block.kind {
                BlockKind::Heading { level } => {
                    let level = level.max(1);
                    while stack.last().is_some_and(|(l, _)| *l >= level) {
                        stack.pop();
                    }
                    stack.push((level, self.text[s..e].to_string()));
                    paths.push(stack.iter().map(|(_, t)| t.clone()).collect());
                    path = u32::try_from(paths.len() - 1).unwrap_or(u32::MAX);
                    level
                }
                _ => 0,
            };
            let brk = if heading > 0 {
                Brk::Heading
            } else if prev_page.is_some() && block.page.is_some() && prev_page != block.page {
                Brk::Page
            } else {
                Brk::Block
            };
            prev_page = block.page.or(prev_page);
            let ctx = Ctx {
                heading,
                page: block.page,
                path,
            };
            match block.kind {
                // Code is never re-flowed: whole if it fits, else line by line.
                BlockKind::Code => {
                    let t = self.count(s, e);
                    if t <= self.max {
                        self.push(s, e, t, brk, ctx);
                    } else {
                        self.split_lines(s, e, brk, ctx);
                    }
                }
                // A row is one record; split only if it alone exceeds the limit.
                BlockKind::TableRow => {
                    let t = self.count(s, e);
                    if t <= self.max {
                        self.push(s, e, t, brk, ctx);
                    } else {
                        self.split_clauses(s, e, brk, ctx);
                    }
                }
                _ => self.split_sentences(s, e, brk, ctx),
            }
        }
        paths
    }

    fn count(&self, s: usize, e: usize) -> usize {
        self.counter.count(&self.text[s..e])
    }

    fn push(&mut self, start: usize, end: usize, tokens: usize, brk: Brk, ctx: Ctx) {
        self.units.push(Unit {
            start,
            end,
            tokens,
            brk,
            heading: ctx.heading,
            page: ctx.page,
            path: ctx.path,
        });
    }

    /// Cuts `s..e` at `cuts_fn` boundaries; each trimmed piece becomes a unit if it fits, or is
    /// handed to `finer`. The first piece gets `first`, later ones `level`.
    fn split_with(
        &mut self,
        (s, e): (usize, usize),
        cuts_fn: fn(&str, &mut Vec<usize>),
        level: Brk,
        first: Brk,
        ctx: Ctx,
        finer: fn(&mut Self, usize, usize, Brk, Ctx),
    ) {
        let mut cuts = std::mem::take(&mut self.cuts);
        cuts.clear();
        cuts_fn(&self.text[s..e], &mut cuts);
        let mut brk = first;
        let mut prev = s;
        for cut in cuts.iter().map(|c| s + c).chain([e]) {
            let (ps, pe) = trim(self.text, prev, cut);
            prev = cut;
            if ps == pe {
                continue;
            }
            let t = self.count(ps, pe);
            if t <= self.max {
                self.push(ps, pe, t, brk, ctx);
            } else {
                // `finer` never touches `self.cuts` from under us: we hold the buffer.
                finer(self, ps, pe, brk, ctx);
            }
            brk = level;
        }
        self.cuts = cuts;
    }

    fn split_sentences(&mut self, s: usize, e: usize, first: Brk, ctx: Ctx) {
        self.split_with(
            (s, e),
            sentence_cuts,
            Brk::Sentence,
            first,
            ctx,
            Self::split_clauses,
        );
    }

    fn split_clauses(&mut self, s: usize, e: usize, first: Brk, ctx: Ctx) {
        self.split_with(
            (s, e),
            clause_cuts,
            Brk::Clause,
            first,
            ctx,
            Self::split_words,
        );
    }

    fn split_lines(&mut self, s: usize, e: usize, first: Brk, ctx: Ctx) {
        fn line_cuts(t: &str, out: &mut Vec<usize>) {
            out.extend(
                t.match_indices('\n')
                    .map(|(i, _)| i + 1)
                    .filter(|&i| i < t.len()),
            );
        }
        self.split_with(
            (s, e),
            line_cuts,
            Brk::Sentence,
            first,
            ctx,
            Self::split_words,
        );
    }

    /// Groups words (Unicode word boundaries: Latin words stay whole, each ideograph is its own
    /// word) into units of about `grain` tokens; a word over `grain` is a unit of its own, and
    /// one over `max` goes to [`Self::split_graphemes`].
    fn split_words(&mut self, s: usize, e: usize, first: Brk, ctx: Ctx) {
        let text = self.text;
        let mut brk = first;
        let mut group: Option<(usize, usize, usize)> = None;
        for (i, w) in text[s..e].split_word_bound_indices() {
            if w.chars().all(char::is_whitespace) {
                continue;
            }
            let (ws, we) = (s + i, s + i + w.len());
            let t = self.counter.count(w);
            if let Some((gs, ge, gt)) = group {
                if gt + t <= self.grain {
                    group = Some((gs, we, gt + t));
                    continue;
                }
                self.push(gs, ge, gt, brk, ctx);
                brk = Brk::Word;
                group = None;
            }
            if t <= self.grain {
                group = Some((ws, we, t));
            } else {
                // A long word (URL, identifier) stays whole when it fits at all.
                if t <= self.max {
                    self.push(ws, we, t, brk, ctx);
                } else {
                    self.split_graphemes(ws, we, t, brk, ctx);
                }
                brk = Brk::Word;
            }
        }
        if let Some((gs, ge, gt)) = group {
            self.push(gs, ge, gt, brk, ctx);
        }
    }

    /// Last resort for a word longer than `grain` (a 1 MB line with no spaces): windows of whole
    /// grapheme clusters, so no emoji, combining mark or UTF-8 sequence is ever cut.
    fn split_graphemes(&mut self, s: usize, e: usize, tokens: usize, first: Brk, ctx: Ctx) {
        let bounds: Vec<usize> = self.text[s..e]
            .grapheme_indices(true)
            .map(|(i, _)| s + i)
            .chain([e])
            .collect();
        self.split_windows(&bounds, tokens, first, ctx, true);
    }

    /// Cuts `bounds[0]..bounds[last]` into windows of at most `grain` tokens, cutting only at
    /// `bounds`. Window sizes are guessed from the average density and shrunk when a guess
    /// over-fills, so each position is counted a small constant number of times.
    fn split_windows(
        &mut self,
        bounds: &[usize],
        tokens: usize,
        first: Brk,
        ctx: Ctx,
        graphemes: bool,
    ) {
        let n = bounds.len().saturating_sub(1);
        let guess = (self.grain.saturating_mul(n) / tokens.max(1)).max(1);
        let mut brk = first;
        let mut i = 0;
        while i < n {
            let mut k = guess.min(n - i);
            loop {
                let (ws, we) = (bounds[i], bounds[i + k]);
                let t = self.count(ws, we);
                if t <= self.grain {
                    self.push(ws, we, t, brk, ctx);
                    break;
                }
                if k == 1 {
                    if graphemes {
                        // One grapheme cluster over budget (e.g. a base letter with hundreds of
                        // combining marks under a real tokenizer): split it at chars instead.
                        let chars: Vec<usize> = self.text[ws..we]
                            .char_indices()
                            .map(|(j, _)| ws + j)
                            .chain([we])
                            .collect();
                        self.split_windows(&chars, t, brk, ctx, false);
                    } else {
                        // A single char the counter prices over budget: nothing left to cut.
                        self.push(ws, we, t, brk, ctx);
                    }
                    break;
                }
                k = (k.saturating_mul(self.grain) / t).clamp(1, k - 1);
            }
            i += k;
            brk = Brk::Char;
        }
    }
}

/// Narrows `s..e` to exclude leading and trailing whitespace.
fn trim(text: &str, s: usize, e: usize) -> (usize, usize) {
    let piece = &text[s..e];
    let lead = piece.len() - piece.trim_start().len();
    let trail = piece.len() - piece.trim_end().len();
    if lead == piece.len() {
        (s, s)
    } else {
        (s + lead, e - trail)
    }
}

struct Packer<'a> {
    text: &'a str,
    units: &'a [Unit],
    cfg: &'a ChunkConfig,
    counter: &'a dyn TokenCounter,
}

impl Packer<'_> {
    fn pack(&self) -> Vec<Raw> {
        let (units, cfg) = (self.units, self.cfg);
        let mut raws = Vec::new();
        let mut a = 0; // first unit of the current chunk
        let mut i = 0; // next unit to place
        let mut content = 0; // tokens of units a..i
        let mut has_body = false; // whether a..i holds anything but headings
        let mut ov: Option<(usize, usize)> = None; // (start byte, tokens) of the overlap
        while i < units.len() {
            let u = units[i];
            if i > a {
                let ov_tokens = ov.map_or(0, |o| o.1);
                // A heading of level ≤ 2 starts a new chunk; a deeper one does when the chunk
                // is over half full. A chunk of headings only (an empty section's title, or
                // "Handbook" right before "Leave") is kept and grows into the next section
                // rather than becoming a useless few-token chunk.
                if u.brk == Brk::Heading
                    && has_body
                    && (u.heading <= 2 || content > cfg.target_tokens / 2)
                {
                    raws.push(Raw {
                        a,
                        b: i,
                        ov_start: ov.map(|o| o.0),
                    });
                    (a, content, has_body, ov) = (i, 0, false, None);
                    continue;
                }
                let total = ov_tokens + content + u.tokens;
                // Fill to target; a chunk with almost no content yet may stretch to max (a
                // heading followed by a large code block or table row stays together).
                let fits = total <= cfg.target_tokens
                    || (content < cfg.min_tokens && total <= cfg.max_tokens);
                if !fits {
                    let b = self.best_break(a, i, ov_tokens);
                    raws.push(Raw {
                        a,
                        b,
                        ov_start: ov.map(|o| o.0),
                    });
                    ov = self.overlap(a, b);
                    // Units b..i are placed again; b is past a chunk of ≥ min_tokens (or i),
                    // so each unit is revisited a bounded number of times.
                    (a, i, content, has_body) = (b, b, 0, false);
                    continue;
                }
            }
            content += u.tokens;
            has_body |= u.heading == 0;
            i += 1;
        }
        raws.push(Raw {
            a,
            b: units.len(),
            ov_start: ov.map(|o| o.0),
        });
        raws
    }

    /// Where to end the chunk `a..i` when unit `i` does not fit: the strongest boundary in
    /// `a+1..=i` that leaves a big enough chunk, latest on ties. Heading and page boundaries
    /// need only `min_tokens` before them, weaker ones half the target; if none qualifies,
    /// cut right before `i`.
    fn best_break(&self, a: usize, i: usize, ov_tokens: usize) -> usize {
        let half = self.cfg.target_tokens / 2;
        let mut best: Option<(Brk, usize)> = None;
        let mut prefix = 0;
        for j in a + 1..=i {
            prefix += self.units[j - 1].tokens;
            let kind = self.units[j].brk;
            let ok = match kind {
                Brk::Heading | Brk::Page => prefix >= self.cfg.min_tokens,
                _ => ov_tokens + prefix >= half,
            };
            if ok && best.is_none_or(|(k, _)| kind >= k) {
                best = Some((kind, j));
            }
        }
        best.map_or(i, |(_, j)| j)
    }

    /// The overlap that starts the chunk beginning at unit `b`, taken from the tail of the main
    /// content of chunk `a..b`: the longest suffix within budget that starts at a sentence
    /// boundary, if that is at least half the budget; else at a clause, else at a word
    /// boundary. `None` at section starts (a heading) and when nothing fits.
    fn overlap(&self, a: usize, b: usize) -> Option<(usize, usize)> {
        let first = self.units[b];
        if first.brk == Brk::Heading {
            return None;
        }
        // Keep room for the first unit so the new chunk can never exceed max.
        let budget = self
            .cfg
            .overlap_tokens
            .min(self.cfg.max_tokens.saturating_sub(first.tokens));
        if budget == 0 {
            return None;
        }
        let (from, to) = (self.units[a].start, self.units[b - 1].end);
        // Only look at a bounded tail: a token spans at most a few characters in practice, and
        // this keeps the whole pass O(n) however large the previous chunk's units are.
        let window = budget.saturating_mul(8).saturating_add(16);
        let ws = self.text[from..to]
            .char_indices()
            .rev()
            .nth(window)
            .map_or(from, |(i, _)| from + i);
        let tail = &self.text[ws..to];
        // The window start is a real boundary only when it is the chunk's own start.
        let starts_clean = ws == from;

        let mut best: Option<(usize, usize)> = None;
        let mut cuts = Vec::new();
        let mut finer = Vec::new();
        // Each level adds its cut points to the coarser ones: sentences, then clauses, then
        // words.
        for level in 0..3 {
            finer.clear();
            match level {
                0 => sentence_cuts(tail, &mut finer),
                1 => clause_cuts(tail, &mut finer),
                _ => finer.extend(tail.split_word_bound_indices().map(|(i, _)| i)),
            }
            cuts.extend_from_slice(&finer);
            cuts.sort_unstable();
            cuts.dedup();
            if let Some(found) = self.longest_suffix(tail, &cuts, starts_clean, budget) {
                let (_, tokens) = found;
                if tokens * 2 >= budget {
                    return Some((ws + found.0, tokens));
                }
                if best.is_none_or(|(_, t)| tokens > t) {
                    best = Some((ws + found.0, tokens));
                }
            }
        }
        best
    }

    /// The longest suffix of `tail` that starts at one of `cuts` (or at 0 if `zero_ok`) and
    /// fits in `budget`, as (start, tokens). Segment counts are summed from the end.
    fn longest_suffix(
        &self,
        tail: &str,
        cuts: &[usize],
        zero_ok: bool,
        budget: usize,
    ) -> Option<(usize, usize)> {
        let mut best = None;
        let mut end = tail.len();
        let mut total = 0;
        let starts = cuts
            .iter()
            .copied()
            .filter(|&c| c > 0 && c < tail.len())
            .rev()
            .chain(zero_ok.then_some(0));
        for c in starts {
            total += self.counter.count(&tail[c..end]);
            if total > budget {
                break;
            }
            end = c;
            let lead = tail[c..].len() - tail[c..].trim_start().len();
            if c + lead < tail.len() && total > 0 {
                best = Some((c + lead, total));
            }
        }
        best
    }

    /// Merges a section's last chunk into the one before when it carries less than
    /// `min_tokens` of new content and the union still fits in `max_tokens`.
    fn merge_tiny_tails(&self, raws: Vec<Raw>) -> Vec<Raw> {
        let starts_section = |r: &Raw| r.a == 0 || self.units[r.a].brk == Brk::Heading;
        let mut out: Vec<Raw> = Vec::with_capacity(raws.len());
        for (k, r) in raws.iter().enumerate() {
            let last_of_section = raws.get(k + 1).is_none_or(starts_section);
            if let Some(prev) = out.last_mut()
                && last_of_section
                && !starts_section(r)
            {
                let content: usize = self.units[r.a..r.b].iter().map(|u| u.tokens).sum();
                if content < self.cfg.min_tokens {
                    let start = prev.ov_start.unwrap_or(self.units[prev.a].start);
                    let end = self.units[r.b - 1].end;
                    if self.counter.count(&self.text[start..end]) <= self.cfg.max_tokens {
                        prev.b = r.b;
                        continue;
                    }
                }
            }
            out.push(*r);
        }
        out
    }

    /// Turns raw chunks into [`Chunk`]s, re-counting the real text. A chunk the counter finds
    /// over `max_tokens` (possible only with a non-additive counter) loses its overlap, then is
    /// halved until it fits.
    fn finish(&self, raws: &[Raw], paths: &[Vec<String>]) -> Vec<Chunk> {
        let mut out = Vec::with_capacity(raws.len());
        let mut cursor = CharCursor {
            text: self.text,
            byte: 0,
            chars: 0,
        };
        let mut stack: Vec<Raw> = Vec::new();
        for &raw in raws {
            stack.push(raw);
            while let Some(r) = stack.pop() {
                let start = self.units[r.a].start;
                let end = self.units[r.b - 1].end;
                let text_start = r.ov_start.unwrap_or(start);
                let tokens = self.counter.count(&self.text[text_start..end]);
                if tokens > self.cfg.max_tokens {
                    if r.ov_start.is_some() {
                        stack.push(Raw {
                            ov_start: None,
                            ..r
                        });
                        continue;
                    }
                    if r.b - r.a > 1 {
                        let mid = self.halfway(r.a, r.b);
                        // Pushed in reverse so the first half is finished first.
                        stack.push(Raw {
                            a: mid,
                            b: r.b,
                            ov_start: None,
                        });
                        stack.push(Raw {
                            a: r.a,
                            b: mid,
                            ov_start: None,
                        });
                        continue;
                    }
                }
                let units = &self.units[r.a..r.b];
                // The path of the first body unit: a chunk that opens with "Leave" / "Annual
                // leave" headings is about the innermost one.
                let path_unit = units
                    .iter()
                    .find(|u| u.heading == 0)
                    .or(units.last())
                    .map_or(0, |u| u.path);
                let page_start = units.iter().filter_map(|u| u.page).min();
                let page_end = units.iter().filter_map(|u| u.page).max();
                let _ = cursor.char_at(text_start);
                let char_start = cursor.char_at(start);
                let char_end = cursor.char_at(end);
                out.push(Chunk {
                    ordinal: u32::try_from(out.len()).unwrap_or(u32::MAX),
                    text: self.text[text_start..end].to_string(),
                    heading_path: paths.get(path_unit as usize).cloned().unwrap_or_default(),
                    page_start,
                    page_end,
                    char_start,
                    char_end,
                    token_count: u32::try_from(tokens).unwrap_or(u32::MAX),
                });
            }
        }
        out
    }

    /// A unit index in `a+1..b` splitting the units' tokens about in half.
    fn halfway(&self, a: usize, b: usize) -> usize {
        let total: usize = self.units[a..b].iter().map(|u| u.tokens).sum();
        let mut acc = 0;
        for j in a..b - 1 {
            acc += self.units[j].tokens;
            if acc * 2 >= total {
                return j + 1;
            }
        }
        b - 1
    }
}

/// Converts byte offsets to char offsets by walking from the previous position, so a sequence
/// of nearby queries costs the distance travelled, not the offset.
struct CharCursor<'a> {
    text: &'a str,
    byte: usize,
    chars: usize,
}

impl CharCursor<'_> {
    fn char_at(&mut self, byte: usize) -> usize {
        if byte >= self.byte {
            self.chars += self.text[self.byte..byte].chars().count();
        } else {
            self.chars -= self.text[byte..self.byte].chars().count();
        }
        self.byte = byte;
        self.chars
    }
}
