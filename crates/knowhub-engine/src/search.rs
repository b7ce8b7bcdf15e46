//! Retrieval: one entry point, [`Engine::retrieve`], used by the CLI, the app and the agent.
//!
//! Keyword (BM25 over tantivy) and dense (embedding) candidates are taken with the caller's
//! document filter applied *inside* both scans, fused (min-max normalised scores with equal
//! weights by default, or reciprocal rank fusion), limited per document so one long file
//! cannot fill the page, and optionally re-scored by a cross-encoder.
//! Every hit carries what a citation needs; the [`RetrievalTrace`] says what ran and how long
//! it took.

use std::collections::HashMap;
use std::time::Instant;

use chrono::NaiveDate;
use knowhub_index::{DocFilter, SearchRequest};
use knowhub_parse::DocumentMeta;
use knowhub_store::{ChunkId, DocumentId};
use serde::Serialize;

use crate::{Access, Engine, EngineError, RequestContext, Result};

/// At most this many withheld documents are named in a retrieval's audit record.
const AUDITED_WITHHELD: usize = 100;

/// Which retrievers run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalMode {
    /// Keyword and semantic, fused (keyword only when no embedder is loaded).
    #[default]
    Hybrid,
    /// BM25 only.
    Keyword,
    /// Dense vectors only.
    Semantic,
}

impl std::str::FromStr for RetrievalMode {
    type Err = EngineError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "hybrid" => Ok(Self::Hybrid),
            "keyword" | "bm25" => Ok(Self::Keyword),
            "semantic" | "dense" => Ok(Self::Semantic),
            other => Err(EngineError::InvalidInput(format!(
                "unknown search mode {other:?} (expected hybrid, keyword or semantic)"
            ))),
        }
    }
}

/// How keyword and dense rankings are combined.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum Fusion {
    /// Reciprocal rank fusion: Σ weight / (k + rank). Scale-free, so BM25's unbounded scores
    /// and cosine similarities need no calibration.
    Rrf { k: f32, keyword_weight: f32 },
    /// Convex combination of min-max normalised scores: α·dense + (1-α)·keyword.
    Weighted { alpha: f32 },
}

/// The default, chosen by measurement (`knowhub eval retrieval --fusion …`, see
/// docs/measurements.md): an equal-weight convex combination beat RRF on both SciFact (nDCG@10
/// 0.709 vs 0.691) and CMRC 2018 (Recall@5 0.992 vs 0.981).
impl Default for Fusion {
    fn default() -> Self {
        Fusion::Weighted { alpha: 0.5 }
    }
}

/// Options for [`Engine::retrieve`] and [`Engine::search`].
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Number of passages to return.
    pub limit: usize,
    /// At most this many passages from one document (diversity).
    pub max_per_document: usize,
    /// Length of the snippet, in characters.
    pub snippet_chars: usize,
    pub mode: RetrievalMode,
    pub fusion: Fusion,
    /// Candidates each retriever contributes before fusion.
    pub candidates: usize,
    /// Re-score this many fused candidates with the cross-encoder (when one is configured;
    /// 0 = no reranking).
    pub rerank_top: usize,
    /// Narrows the search to these documents (e.g. "only this folder"), on top of the
    /// caller's permissions, which [`Engine::retrieve`] always applies itself; applied inside
    /// both scans.
    pub filter: Option<DocFilter>,
    /// Narrows the search to documents by their people and date (a mail's sender, day).
    pub meta: MetaFilter,
}

/// Which documents a search keeps by their [`DocumentMeta`]: "from Dana", "since March".
/// A document without a sender (or date) is left out by a sender (or date) condition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaFilter {
    /// Part of a sender's name or address, any case.
    pub from: Option<String>,
    /// The first day kept, by the day the document gives itself (its date in its own offset:
    /// a mail sent 2026-03-02 09:00 +08:00 is of March 2nd wherever it is searched).
    pub since: Option<NaiveDate>,
    /// The last day kept, inclusive.
    pub until: Option<NaiveDate>,
}

impl MetaFilter {
    pub fn is_empty(&self) -> bool {
        self.from.as_deref().is_none_or(|f| f.trim().is_empty())
            && self.since.is_none()
            && self.until.is_none()
    }

    /// A day as a user writes it for `since`/`until`: `2026-03-02`.
    pub fn parse_day(text: &str) -> Result<NaiveDate> {
        NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").map_err(|_| {
            EngineError::InvalidInput(format!("'{text}' is not a day (like 2026-03-02)"))
        })
    }

    pub fn allows(&self, meta: &DocumentMeta) -> bool {
        if let Some(from) = self.from.as_deref().filter(|f| !f.trim().is_empty())
            && !meta.is_from(from)
        {
            return false;
        }
        if self.since.is_none() && self.until.is_none() {
            return true;
        }
        let Some(day) = meta
            .date
            .as_deref()
            .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok())
            .map(|d| d.date_naive())
        else {
            return false;
        };
        self.since.is_none_or(|s| day >= s) && self.until.is_none_or(|u| day <= u)
    }
}

impl Default for SearchOptions {
    fn default() -> SearchOptions {
        SearchOptions {
            limit: 10,
            max_per_document: 3,
            snippet_chars: 220,
            mode: RetrievalMode::Hybrid,
            fusion: Fusion::default(),
            candidates: 100,
            rerank_top: 30,
            filter: None,
            meta: MetaFilter::default(),
        }
    }
}

/// One passage found by search, with everything a citation needs.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub rank: usize,
    /// Reproducible citation id: `doc:<document>:chunk_<ordinal>:<text hash>`.
    pub evidence_id: String,
    /// The final ranking score: BM25 (keyword mode), cosine similarity (semantic mode), the
    /// fused score (hybrid), or the reranker's logit when reranked.
    pub score: f32,
    /// 1-based rank in the keyword candidates, if the passage was one.
    pub keyword_rank: Option<usize>,
    /// 1-based rank in the dense candidates, if the passage was one.
    pub semantic_rank: Option<usize>,
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
    /// For a page of a web source: the address it was crawled from (citations link there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The document's people and date (a mail's sender, recipients and date), where known.
    #[serde(skip_serializing_if = "DocumentMeta::is_empty")]
    pub meta: DocumentMeta,
}

/// What a retrieval did, for the copilot's trace and `knowhub search --trace`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RetrievalTrace {
    pub mode: RetrievalMode,
    pub keyword_candidates: usize,
    pub semantic_candidates: usize,
    /// Distinct chunks after fusion.
    pub fused: usize,
    pub embedder: Option<String>,
    pub reranker: Option<String>,
    /// Number of candidates the cross-encoder re-scored (0 when it did not run).
    pub reranked: usize,
    /// Why a part did not run (no embedder, no reranker, no keyword terms, …).
    pub skipped: Vec<String>,
    pub keyword_ms: f64,
    pub embed_ms: f64,
    pub dense_ms: f64,
    pub rerank_ms: f64,
    pub total_ms: f64,
    /// The permission snapshot the retrieval ran under (for the audit trail).
    pub permission_snapshot: String,
}

/// Hits and their trace.
#[derive(Debug, Clone, Serialize)]
pub struct Retrieval {
    pub hits: Vec<SearchHit>,
    pub trace: RetrievalTrace,
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    doc: DocumentId,
    score: f32,
    keyword: Option<(usize, f32)>,
    semantic: Option<(usize, f32)>,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

impl Engine {
    /// Finds the best passages for `query` (Chinese, English or mixed); see
    /// [`Engine::retrieve`].
    pub fn search(
        &self,
        ctx: &RequestContext,
        query: &str,
        options: &SearchOptions,
    ) -> Result<Vec<SearchHit>> {
        Ok(self.retrieve(ctx, query, options)?.hits)
    }

    /// The retrieval entry point: only passages `ctx` may read, found by keyword and/or dense
    /// search (the permission filter runs inside both scans), fused, deduplicated by chunk,
    /// optionally reranked, diversified per document; audited.
    ///
    /// Keyword syntax: plain words are matched with stemming (English) and word segmentation
    /// (Chinese); `"quoted phrases"` must appear as written and `-word` excludes passages.
    pub fn retrieve(
        &self,
        ctx: &RequestContext,
        query: &str,
        options: &SearchOptions,
    ) -> Result<Retrieval> {
        let access = self.authorize(ctx)?;
        self.retrieve_as(&access, query, options)
    }

    /// [`Engine::retrieve`] with permissions already resolved (one `authorize` per agent
    /// turn, many retrievals).
    pub fn retrieve_as(
        &self,
        access: &Access,
        query: &str,
        options: &SearchOptions,
    ) -> Result<Retrieval> {
        let (recording, withheld) = access.recording_filter();
        let narrowed = both(options.filter.clone(), self.meta_scope(&options.meta)?);
        let keyword_filter = both(narrowed.clone(), recording);
        let dense_filter = both(narrowed.clone(), access.filter());
        let dense = DenseScope {
            filter: dense_filter,
            readable: access.readable().cloned(),
            extra: narrowed,
        };
        let result = self.retrieve_filtered(query, options, keyword_filter, dense);
        let mut retrieval = match result {
            Ok(r) => r,
            Err(e) => {
                self.audit(
                    access,
                    ("search", query, "error"),
                    0,
                    0,
                    serde_json::Value::Null,
                )?;
                return Err(e);
            }
        };
        // Defence in depth: the scans already filtered; a hit that is not readable here would
        // be a bug, and is dropped rather than shown.
        let before = retrieval.hits.len();
        retrieval.hits.retain(|h| access.can_read(h.document_id));
        if retrieval.hits.len() != before {
            tracing::error!("retrieval returned unreadable passages; dropped them");
        }
        let withheld = std::mem::take(&mut *withheld.lock().unwrap_or_else(|p| p.into_inner()));
        let mut evidence: Vec<serde_json::Value> = retrieval
            .hits
            .iter()
            .map(|h| {
                serde_json::json!({
                    "evidence": h.evidence_id,
                    "chunk": h.chunk_id.0,
                    "document": h.document_id.0,
                    "decision": "allow",
                })
            })
            .collect();
        // The withheld documents that matched most; the count stays exact. (A common word can
        // match thousands: listing them all would make every audit record huge.)
        let mut top: Vec<(&u64, &u64)> = withheld.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        evidence.extend(top.iter().take(AUDITED_WITHHELD).map(|(doc, chunks)| {
            serde_json::json!({ "document": doc, "matched_chunks": chunks, "decision": "filtered" })
        }));
        if top.len() > AUDITED_WITHHELD {
            evidence.push(serde_json::json!({
                "decision": "filtered",
                "more_documents": top.len() - AUDITED_WITHHELD,
            }));
        }
        self.audit(
            access,
            ("search", query, "ok"),
            retrieval.hits.len() as u64,
            withheld.len() as u64,
            serde_json::Value::Array(evidence),
        )?;
        retrieval.trace.permission_snapshot = access.snapshot.to_string();
        Ok(retrieval)
    }

    /// Retrieval with explicit scan filters (no permission logic here: see `retrieve_as`).
    fn retrieve_filtered(
        &self,
        query: &str,
        options: &SearchOptions,
        keyword_filter: Option<DocFilter>,
        dense_scope: DenseScope,
    ) -> Result<Retrieval> {
        let started = Instant::now();
        if query.trim().is_empty() {
            return Err(EngineError::InvalidInput("the query is empty".into()));
        }
        let limit = options.limit.clamp(1, 1000);
        let per_doc = options.max_per_document.max(1);
        // Enough candidates that per-document diversity can still fill the page.
        let want = options
            .candidates
            .max(limit.saturating_mul(per_doc).saturating_add(limit))
            .min(5000);
        let mut trace = RetrievalTrace {
            mode: options.mode,
            embedder: self.embedder_id().map(str::to_owned),
            reranker: self.reranker_id().map(str::to_owned),
            ..Default::default()
        };
        let use_keyword = options.mode != RetrievalMode::Semantic;
        let use_dense = options.mode != RetrievalMode::Keyword;
        if use_dense && self.semantic.is_none() {
            if options.mode == RetrievalMode::Semantic {
                return Err(EngineError::InvalidInput(
                    self.model_notes()
                        .first()
                        .cloned()
                        .unwrap_or_else(|| "semantic search is off: no embedder configured".into()),
                ));
            }
            trace.skipped.push(
                self.model_notes()
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "semantic: no embedder configured".into()),
            );
        }

        let mut keyword = Vec::new();
        if use_keyword {
            let t = Instant::now();
            let mut request = SearchRequest::new(query, want);
            request.allowed_docs = keyword_filter;
            match self.index.search(&request) {
                Ok(hits) => keyword = hits,
                // A query of only stop characters still has a meaning to embed.
                Err(knowhub_index::IndexError::EmptyQuery)
                    if use_dense && self.semantic.is_some() =>
                {
                    trace.skipped.push("keyword: no searchable words".into());
                }
                Err(knowhub_index::IndexError::EmptyQuery) => {
                    return Err(EngineError::InvalidInput(
                        "the query has no searchable words".into(),
                    ));
                }
                Err(e) => return Err(e.into()),
            }
            trace.keyword_ms = ms(t);
        }

        let mut dense = Vec::new();
        if use_dense && let Some(sem) = &self.semantic {
            let t = Instant::now();
            let q = sem
                .embedder
                .embed_query(query)
                .map_err(|e| EngineError::Model(e.to_string()))?;
            trace.embed_ms = ms(t);
            let t = Instant::now();
            dense = match &self.team_vectors {
                Some(team) => {
                    let ids = self.dense_ids(&dense_scope)?;
                    team.search(&q, want, ids.as_deref())?
                }
                None => {
                    let allow = dense_scope.filter.map(|f| move |id: u64| f.allows(id));
                    sem.vectors()
                        .search(
                            &q,
                            want,
                            allow.as_ref().map(|f| f as &(dyn Fn(u64) -> bool + Sync)),
                        )
                        .map_err(|e| EngineError::Model(e.to_string()))?
                }
            };
            trace.dense_ms = ms(t);
        }
        trace.keyword_candidates = keyword.len();
        trace.semantic_candidates = dense.len();

        // Fusion (dedup by chunk: a chunk found by both retrievers is one candidate).
        let mut fused: HashMap<ChunkId, Candidate> = HashMap::new();
        let hits = keyword
            .iter()
            .map(|h| (h.chunk_id, h.doc_id, h.score))
            .enumerate()
            .map(|(i, h)| (true, i + 1, h))
            .chain(
                dense
                    .iter()
                    .map(|h| (h.chunk_id, h.doc_id, h.score))
                    .enumerate()
                    .map(|(i, h)| (false, i + 1, h)),
            );
        for (from_keyword, rank, (chunk, doc, score)) in hits {
            let c = fused.entry(ChunkId(chunk as i64)).or_insert(Candidate {
                doc: DocumentId(doc as i64),
                score: 0.0,
                keyword: None,
                semantic: None,
            });
            let slot = if from_keyword {
                &mut c.keyword
            } else {
                &mut c.semantic
            };
            *slot = Some((rank, score));
        }
        let min_max = |xs: &mut dyn Iterator<Item = f32>| {
            xs.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            })
        };
        let (k_lo, k_hi) = min_max(&mut keyword.iter().map(|h| h.score));
        let (d_lo, d_hi) = min_max(&mut dense.iter().map(|h| h.score));
        let scale = |x: f32, lo: f32, hi: f32| if hi > lo { (x - lo) / (hi - lo) } else { 1.0 };
        for c in fused.values_mut() {
            // A single retriever keeps its own score (BM25, or cosine similarity): it means
            // something on its own, unlike a fused score.
            c.score = match (options.mode, options.fusion) {
                (RetrievalMode::Keyword, _) => c.keyword.map_or(0.0, |(_, s)| s),
                (RetrievalMode::Semantic, _) => c.semantic.map_or(0.0, |(_, s)| s),
                (RetrievalMode::Hybrid, fusion) => match fusion {
                    Fusion::Rrf { k, keyword_weight } => {
                        c.keyword
                            .map_or(0.0, |(r, _)| keyword_weight / (k + r as f32))
                            + c.semantic.map_or(0.0, |(r, _)| 1.0 / (k + r as f32))
                    }
                    Fusion::Weighted { alpha } => {
                        (1.0 - alpha) * c.keyword.map_or(0.0, |(_, s)| scale(s, k_lo, k_hi))
                            + alpha * c.semantic.map_or(0.0, |(_, s)| scale(s, d_lo, d_hi))
                    }
                },
            };
        }
        let mut ranked: Vec<(ChunkId, Candidate)> = fused.into_iter().collect();
        ranked.sort_by(|a, b| {
            b.1.score
                .total_cmp(&a.1.score)
                .then_with(|| a.0.0.cmp(&b.0.0))
        });
        trace.fused = ranked.len();

        // Diversity before reranking too, so the reranker's budget is not spent on many
        // passages of one document that could never all be shown.
        let mut seen: HashMap<DocumentId, usize> = HashMap::new();
        ranked.retain(|(_, c)| {
            let n = seen.entry(c.doc).or_default();
            *n += 1;
            *n <= per_doc
        });

        let top = if self.reranker.is_some() {
            options.rerank_top.min(ranked.len())
        } else {
            0
        };
        let mut records = {
            let ids: Vec<ChunkId> = ranked.iter().map(|(id, _)| *id).collect();
            // Only what can be shown or reranked is read back from the store.
            let keep = top.max(limit).min(ids.len());
            self.store().chunks(&ids[..keep])?
        };
        let by_id: HashMap<ChunkId, Candidate> = ranked.iter().copied().collect();
        match (&self.reranker, top) {
            (Some(reranker), n) if n > 0 => {
                let t = Instant::now();
                let passages: Vec<&str> = records[..n.min(records.len())]
                    .iter()
                    .map(|r| r.text.as_str())
                    .collect();
                let scores = reranker
                    .score(query, &passages)
                    .map_err(|e| EngineError::Model(e.to_string()))?;
                let mut head: Vec<(f32, knowhub_store::ChunkRecord)> = scores
                    .into_iter()
                    .zip(records.drain(..passages.len()))
                    .collect();
                head.sort_by(|a, b| b.0.total_cmp(&a.0));
                trace.reranked = head.len();
                let tail = std::mem::take(&mut records);
                let mut reranked_scores = HashMap::new();
                for (s, r) in head {
                    reranked_scores.insert(r.chunk_id, s);
                    records.push(r);
                }
                records.extend(tail);
                trace.rerank_ms = ms(t);
                return self.finish(
                    query,
                    options,
                    records,
                    &by_id,
                    &reranked_scores,
                    limit,
                    trace,
                    started,
                );
            }
            (Some(_), _) => trace
                .skipped
                .push("rerank: disabled for this search".into()),
            (None, _) => trace.skipped.push("rerank: no reranker configured".into()),
        }
        self.finish(
            query,
            options,
            records,
            &by_id,
            &HashMap::new(),
            limit,
            trace,
            started,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        query: &str,
        options: &SearchOptions,
        records: Vec<knowhub_store::ChunkRecord>,
        candidates: &HashMap<ChunkId, Candidate>,
        reranked: &HashMap<ChunkId, f32>,
        limit: usize,
        mut trace: RetrievalTrace,
        started: Instant,
    ) -> Result<Retrieval> {
        let mut hits = Vec::with_capacity(limit);
        for rec in records.into_iter().take(limit) {
            let c = candidates.get(&rec.chunk_id);
            let snippet = self
                .index
                .snippet(query, &rec.text, options.snippet_chars)?;
            let title = rec.title.clone().unwrap_or_else(|| {
                std::path::Path::new(&rec.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            hits.push(SearchHit {
                rank: hits.len() + 1,
                evidence_id: rec.evidence_id(),
                score: reranked
                    .get(&rec.chunk_id)
                    .copied()
                    .or_else(|| c.map(|c| c.score))
                    .unwrap_or(0.0),
                keyword_rank: c.and_then(|c| c.keyword.map(|k| k.0)),
                semantic_rank: c.and_then(|c| c.semantic.map(|k| k.0)),
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
                url: None,
                meta: rec.meta,
            });
        }
        let paths: Vec<String> = hits.iter().map(|h| h.path.clone()).collect();
        let urls = self.page_urls(&paths)?;
        for hit in &mut hits {
            hit.url = urls
                .get(&hit.path)
                .map(|page| crate::crawl::cited_url(page, &hit.heading_path));
        }
        trace.total_ms = ms(started);
        Ok(Retrieval { hits, trace })
    }
}

/// Both filters (either may be absent).
/// Which documents dense retrieval may return: as a predicate for the in-memory vectors, and
/// as its parts for a database query, which needs the readable ids spelled out.
pub(crate) struct DenseScope {
    filter: Option<DocFilter>,
    readable: Option<std::sync::Arc<std::collections::HashSet<u64>>>,
    /// The caller's own restriction (e.g. one folder), on top of permissions.
    extra: Option<DocFilter>,
}

impl Engine {
    /// The documents `meta` keeps, as a filter (`None` when it keeps all). Reads every
    /// document's record: a people-or-date search costs a pass over the document list.
    fn meta_scope(&self, meta: &MetaFilter) -> Result<Option<DocFilter>> {
        if meta.is_empty() {
            return Ok(None);
        }
        let kept = self
            .store()
            .documents(None)?
            .into_iter()
            .filter(|d| meta.allows(&d.meta))
            .map(|d| d.id.0 as u64);
        Ok(Some(DocFilter::allow_only(kept)))
    }

    /// The document ids a database vector query may return (`None`: any).
    fn dense_ids(&self, scope: &DenseScope) -> Result<Option<Vec<u64>>> {
        let ids = match (&scope.readable, &scope.extra) {
            (None, None) => return Ok(None),
            (Some(readable), extra) => readable
                .iter()
                .copied()
                .filter(|id| extra.as_ref().is_none_or(|f| f.allows(*id)))
                .collect(),
            (None, Some(extra)) => self
                .store()
                .documents_with_chunks()?
                .into_iter()
                .map(|d| d.0 as u64)
                .filter(|id| extra.allows(*id))
                .collect(),
        };
        Ok(Some(ids))
    }
}

fn both(a: Option<DocFilter>, b: Option<DocFilter>) -> Option<DocFilter> {
    match (a, b) {
        (Some(a), Some(b)) => Some(DocFilter::new(move |id| a.allows(id) && b.allows(id))),
        (a, b) => a.or(b),
    }
}
