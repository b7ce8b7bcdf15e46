//! Full-text index of KnowHub: tantivy with a Chinese/English/Japanese-aware
//! analyzer.
//!
//! * [`analyze`] / [`analyzer`]: the `knowhub` analysis (jieba search-mode
//!   words for Han text, kana bigrams, Unicode words for everything else;
//!   lower-cased, ASCII-folded, English-stemmed). Index and queries share it.
//! * [`TextIndex`] / [`TantivyIndex`]: chunks keyed by `chunk_id`, grouped by
//!   `doc_id`; BM25 over title (×2), heading (×1.5) and body.
//!
//! Query syntax is forgiving on purpose (desktop users, no error messages
//! for syntax): words are OR-ed, `"quoted phrases"` must match, `-word`
//! excludes. A query with no searchable term is [`IndexError::EmptyQuery`].
//!
//! ```
//! use knowhub_index::{ChunkEntry, DocFilter, SearchRequest, TantivyIndex, TextIndex};
//!
//! # fn main() -> Result<(), knowhub_index::IndexError> {
//! let index = TantivyIndex::in_memory()?;
//! index.replace_document(7, &[ChunkEntry {
//!     chunk_id: 70,
//!     title: "Kubernetes部署规范v2",
//!     heading: "发布流程",
//!     body: "所有服务的部署必须经过灰度发布。Deployments are rolled out gradually.",
//! }])?;
//! index.commit()?; // nothing is searchable before this
//!
//! let hits = index.search(&SearchRequest::new("部署 deployment", 10))?;
//! assert_eq!(hits[0].chunk_id, 70);
//!
//! // Permission filters are applied inside the scan, before top-k.
//! let none = index.search(
//!     &SearchRequest::new("部署", 10).with_filter(DocFilter::allow_only([8])),
//! )?;
//! assert!(none.is_empty());
//!
//! let body = "所有服务的部署必须经过灰度发布。";
//! let snippet = index.snippet("部署", body, 50)?;
//! assert_eq!(&snippet.fragment[snippet.highlights[0].clone()], "部署");
//! # Ok(())
//! # }
//! ```
//!
//! Design notes (the *why*):
//!
//! * Han text uses jieba's search mode rather than character bigrams. On a
//!   small check (`tests::cjk_mode_measurement`: 6 sentences, 15 queries,
//!   all-terms matching) search mode found 16/16 relevant pairs with 0 false
//!   matches and 46 tokens; bigrams found 15/16 (`模型训练` vs `模型的训练`)
//!   with 3 false matches (`库管` in `数据库管理`, …) and 62 tokens.
//! * Body text is not stored; SQLite has it. Snippets are computed from the
//!   text the caller passes in.
//! * Each distinct query term a chunk matches adds a constant equal to the
//!   mean IDF of the query terms. Without it, `install helm kubernetes`
//!   ranked a chunk repeating "helm" six times above the one containing all
//!   three words (4.48 vs 2.97); with it the all-terms chunk is first (5.60
//!   vs 5.36). See `tests::coordination_bonus_measurement`.

mod error;
mod index;
mod query;
mod snippet;
mod tokenizer;

#[cfg(test)]
mod tests;

pub use error::{IndexError, Result};
pub use index::{ChunkEntry, DocFilter, SearchRequest, Snippet, TantivyIndex, TextHit, TextIndex};
pub use tokenizer::{
    KnowhubTokenStream, KnowhubTokenizer, TOKENIZER_NAME, analyze, analyzer, words,
};
