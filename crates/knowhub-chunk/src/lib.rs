//! Structure-aware, token-budgeted chunking of parsed documents.
//!
//! [`chunk_document`] turns a [`ParsedDocument`] into [`Chunk`]s sized for an embedding model:
//! filled to about [`ChunkConfig::target_tokens`], never over [`ChunkConfig::max_tokens`], cut
//! at the strongest nearby boundary (heading, page, block, sentence, clause, word — in that
//! order of preference), and each chunk after the first of a section opens with a little of
//! the previous chunk's tail so a passage cut in two is still retrievable from either side.
//! It works the same for English and Chinese (which has no spaces): sizes are measured in
//! tokens by a pluggable [`TokenCounter`], and cuts fall on `.!?`/`。！？；`, then clause
//! punctuation, then word boundaries.
//!
//! ```
//! use knowhub_chunk::{chunk_document, ChunkConfig, HeuristicTokenCounter};
//! use knowhub_parse::{Block, ParsedDocument};
//!
//! let doc = ParsedDocument {
//!     blocks: vec![
//!         Block::heading(1, "Handbook"),
//!         Block::heading(2, "Leave"),
//!         Block::paragraph("Employees get 15 days of annual leave.").on_page(3),
//!         Block::heading(2, "年假"),
//!         Block::paragraph("员工每年享有十五天带薪年假。").on_page(4),
//!     ],
//!     ..ParsedDocument::default()
//! };
//! let chunks = chunk_document(&doc, &ChunkConfig::default(), &HeuristicTokenCounter);
//!
//! assert_eq!(chunks.len(), 2);
//! assert_eq!(chunks[0].heading_path, ["Handbook", "Leave"]);
//! assert_eq!(chunks[0].text, "Handbook\nLeave\nEmployees get 15 days of annual leave.");
//! assert_eq!((chunks[0].page_start, chunks[0].page_end), (Some(3), Some(3)));
//! assert_eq!(chunks[1].heading_path, ["Handbook", "年假"]);
//!
//! // Offsets are in characters of `doc.plain_text()`, for highlighting.
//! let plain: Vec<char> = doc.plain_text().chars().collect();
//! let main: String = plain[chunks[1].char_start..chunks[1].char_end].iter().collect();
//! assert_eq!(main, "年假\n员工每年享有十五天带薪年假。");
//! ```

mod chunker;
mod config;
mod counter;
mod segment;
#[cfg(test)]
mod tests;

use knowhub_parse::ParsedDocument;
use serde::{Deserialize, Serialize};

pub use config::{ChunkConfig, ChunkConfigError};
pub use counter::{HeuristicTokenCounter, TokenCounter};

/// One retrievable passage of a document.
///
/// # Offsets
///
/// The canonical text of a document is [`ParsedDocument::plain_text`]: block texts joined by
/// `'\n'`. `char_start..char_end` is the chunk's *main content* — the text this chunk adds,
/// without the overlap it repeats from its predecessor — as a half-open range of **character**
/// (Unicode scalar value, not byte, not UTF-16) indices into that text:
///
/// ```text
/// plain_text.chars().skip(char_start).take(char_end - char_start)
/// ```
///
/// `text` is itself one contiguous slice of the canonical text that *ends* with the main
/// content: `text = overlap + main content`, where the overlap (possibly empty) is the text
/// right before `char_start`. So [`Chunk::overlap_chars`] characters of `text` are overlap, and
/// main content ranges of consecutive chunks never overlap each other. The range starts and
/// ends on non-whitespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// 0-based position of the chunk in the document.
    pub ordinal: u32,
    /// The text to embed and show: overlap, then main content.
    pub text: String,
    /// Headings enclosing the chunk's first body block, outermost first, e.g.
    /// `["Handbook", "Leave", "Annual leave"]`; headings that open the chunk are included.
    pub heading_path: Vec<String>,
    /// First and last page (1-based) of the main content's blocks, for paged formats.
    pub page_start: Option<u32>,
    pub page_end: Option<u32>,
    /// Main content range, in characters of [`ParsedDocument::plain_text`] (see above).
    pub char_start: usize,
    pub char_end: usize,
    /// Tokens in `text` by the counter used for chunking.
    pub token_count: u32,
}

impl Chunk {
    /// How many leading characters of `text` repeat the previous chunk.
    pub fn overlap_chars(&self) -> usize {
        let main = self.char_end - self.char_start;
        self.text.chars().count().saturating_sub(main)
    }

    /// The main content: `text` without the leading overlap.
    pub fn main_text(&self) -> &str {
        let skip = self.overlap_chars();
        let at = self
            .text
            .char_indices()
            .nth(skip)
            .map_or(self.text.len(), |(i, _)| i);
        &self.text[at..]
    }
}

/// Splits `doc` into chunks.
///
/// Rules, in order of precedence:
/// * **Size:** no chunk's `text` counts over `max_tokens` (for counters that price each
///   character at most `max_tokens`); chunks fill to about `target_tokens`.
/// * **Structure:** a heading of level 1 or 2 always starts a new chunk, a deeper heading does
///   when the current chunk is over half full; headings stay with the text that follows them.
///   Table rows and code blocks are kept whole when they fit in `max_tokens`.
/// * **Cut points:** when a chunk is full it ends at the strongest boundary that leaves it
///   reasonably full: heading or page break (if ≥ `min_tokens` precede it), then block,
///   sentence, clause, word; a single word is cut between grapheme clusters only as a last
///   resort.
/// * **Overlap:** a chunk that continues a section starts with about `overlap_tokens` of the
///   previous chunk's tail, starting at a sentence boundary when one is near.
/// * **Tiny tails:** a section's last chunk with under `min_tokens` of new content joins the
///   previous chunk when the result fits in `max_tokens`.
///
/// An invalid `cfg` is [sanitized](ChunkConfig::sanitized) rather than rejected. Deterministic;
/// time is linear in the text length (plus the counter's own cost).
pub fn chunk_document(
    doc: &ParsedDocument,
    cfg: &ChunkConfig,
    counter: &dyn TokenCounter,
) -> Vec<Chunk> {
    chunker::chunk(doc, cfg, counter)
}
