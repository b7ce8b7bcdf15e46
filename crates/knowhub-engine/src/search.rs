//! Full-text search with document, page and heading path for every hit.

use std::collections::HashMap;

use knowhub_index::SearchRequest;
use knowhub_store::{ChunkId, DocumentId};
use serde::Serialize;

use crate::{Engine, EngineError, Result};

/// Options for [`Engine::search`].
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Number of passages to return.
    pub limit: usize,
    /// At most this many passages from one document (diversity).
    pub max_per_document: usize,
    /// Length of the snippet, in characters.
    pub snippet_chars: usize,
}

impl Default for SearchOptions {
    fn default() -> SearchOptions {
        SearchOptions {
            limit: 10,
            max_per_document: 3,
            snippet_chars: 220,
        }
    }
}

/// One passage found by search, with everything a citation needs.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub rank: usize,
    /// Reproducible citation id: `doc:<document>:chunk_<ordinal>:<text hash>`.
    pub evidence_id: String,
    pub score: f32,
    pub chunk_id: ChunkId,
    pub document_id: DocumentId,
    pub path: String,
    pub title: String,
    pub kind: Option<String>,
    pub page_start: Option<u32>,
    pub page_end: Option<u32>,
    pub heading_path: Vec<String>,
    /// A best excerpt of the passage.
    pub snippet: String,
    /// Byte ranges of matched terms inside `snippet`.
    pub highlights: Vec<(usize, usize)>,
    /// The whole passage.
    pub text: String,
    /// Character range of the passage in the document's extracted text.
    pub char_start: usize,
    pub char_end: usize,
}

impl Engine {
    /// Finds the best passages for `query` (Chinese, English or mixed).
    ///
    /// Plain words are matched with stemming (English) and word segmentation (Chinese);
    /// `"quoted phrases"` must appear as written and `-word` excludes passages.
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<Vec<SearchHit>> {
        if query.trim().is_empty() {
            return Err(EngineError::InvalidInput("the query is empty".into()));
        }
        let limit = options.limit.clamp(1, 1000);
        // Over-fetch so per-document diversity can still fill the page.
        let want = limit
            .saturating_mul(options.max_per_document.max(1))
            .saturating_add(limit)
            .min(5000);
        let hits = self
            .index
            .search(&SearchRequest::new(query, want))
            .map_err(|e| match e {
                knowhub_index::IndexError::EmptyQuery => {
                    EngineError::InvalidInput("the query has no searchable words".into())
                }
                other => other.into(),
            })?;
        let ids: Vec<ChunkId> = hits.iter().map(|h| ChunkId(h.chunk_id as i64)).collect();
        let records = self.store().chunks(&ids)?;
        let scores: HashMap<ChunkId, f32> = hits
            .iter()
            .map(|h| (ChunkId(h.chunk_id as i64), h.score))
            .collect();
        let mut per_doc: HashMap<DocumentId, usize> = HashMap::new();
        let mut out = Vec::with_capacity(limit);
        for rec in records {
            let n = per_doc.entry(rec.document_id).or_default();
            if *n >= options.max_per_document.max(1) {
                continue;
            }
            *n += 1;
            let snippet = self
                .index
                .snippet(query, &rec.text, options.snippet_chars)?;
            let title = rec.title.clone().unwrap_or_else(|| {
                std::path::Path::new(&rec.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            out.push(SearchHit {
                rank: out.len() + 1,
                evidence_id: rec.evidence_id(),
                score: scores.get(&rec.chunk_id).copied().unwrap_or(0.0),
                chunk_id: rec.chunk_id,
                document_id: rec.document_id,
                path: rec.path,
                title,
                kind: rec.kind,
                page_start: rec.page_start,
                page_end: rec.page_end,
                heading_path: rec.heading_path,
                highlights: snippet
                    .highlights
                    .iter()
                    .map(|r| (r.start, r.end))
                    .collect(),
                snippet: snippet.fragment,
                text: rec.text,
                char_start: rec.char_start,
                char_end: rec.char_end,
            });
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }
}
