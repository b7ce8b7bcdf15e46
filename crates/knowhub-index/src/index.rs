//! The [`TextIndex`] trait and its tantivy implementation.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::directory::error::LockError;
use tantivy::query::AllQuery;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher, TantivyDocument,
    TantivyError, Term,
};

use crate::error::{IndexError, Result};
use crate::query::{self, COORD_FACTOR, TextFields};
use crate::snippet::{SnippetTokenizer, fit_to_chars};
use crate::tokenizer::{TOKENIZER_NAME, analyzer};

/// Writer heap budget. Small on purpose: this is a desktop app, chunks are
/// added a document at a time, and 50 MB keeps segment flushes reasonable.
const WRITER_MEMORY_BYTES: usize = 50_000_000;

const F_CHUNK_ID: &str = "chunk_id";
const F_DOC_ID: &str = "doc_id";
const F_TITLE: &str = "title";
const F_HEADING: &str = "heading";
const F_BODY: &str = "body";

/// One chunk to index. The body is indexed but not stored: the caller keeps
/// chunk text in SQLite and passes it back to [`TextIndex::snippet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkEntry<'a> {
    /// Unique chunk id (SQLite rowid).
    pub chunk_id: u64,
    /// Title of the document the chunk belongs to.
    pub title: &'a str,
    /// Heading path of the chunk ("Install > Linux"), may be empty.
    pub heading: &'a str,
    /// Chunk text.
    pub body: &'a str,
}

/// A restriction on which documents may appear in results, evaluated inside
/// the collector for every matching chunk *before* it competes for the top-k.
///
/// It wraps a predicate rather than a `HashSet` so that the permissions layer
/// can pick the representation: an allow-list ([`DocFilter::allow_only`]), a
/// deny-list for "everything except the revoked few" ([`DocFilter::deny`]),
/// or a bitmap, without this crate changing. Cloning is cheap (an `Arc`).
#[derive(Clone)]
pub struct DocFilter(Arc<dyn Fn(u64) -> bool + Send + Sync>);

impl DocFilter {
    /// Allows a document when `predicate(doc_id)` returns true.
    pub fn new(predicate: impl Fn(u64) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(predicate))
    }

    /// Allows exactly the given documents.
    pub fn allow_only(doc_ids: impl IntoIterator<Item = u64>) -> Self {
        let set: HashSet<u64> = doc_ids.into_iter().collect();
        Self::new(move |id| set.contains(&id))
    }

    /// Allows every document except the given ones.
    pub fn deny(doc_ids: impl IntoIterator<Item = u64>) -> Self {
        let set: HashSet<u64> = doc_ids.into_iter().collect();
        Self::new(move |id| !set.contains(&id))
    }

    /// Whether `doc_id` passes the filter.
    pub fn allows(&self, doc_id: u64) -> bool {
        (self.0)(doc_id)
    }
}

impl fmt::Debug for DocFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DocFilter(..)")
    }
}

/// A search over the index.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// Raw user text; see the crate docs for the supported syntax.
    pub query: String,
    /// Maximum number of hits. 0 returns no hits.
    pub limit: usize,
    /// When set, only chunks of allowed documents are scored into the top-k.
    pub allowed_docs: Option<DocFilter>,
}

impl SearchRequest {
    /// A request without a document filter.
    pub fn new(query: impl Into<String>, limit: usize) -> Self {
        Self {
            query: query.into(),
            limit,
            allowed_docs: None,
        }
    }

    /// Restricts results to documents passing `filter`.
    pub fn with_filter(mut self, filter: DocFilter) -> Self {
        self.allowed_docs = Some(filter);
        self
    }
}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextHit {
    /// The matching chunk.
    pub chunk_id: u64,
    /// Its document.
    pub doc_id: u64,
    /// BM25-based score (higher is better); only comparable within one search.
    pub score: f32,
}

/// A highlighted excerpt of a chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snippet {
    /// The excerpt (a substring of the text passed in).
    pub fragment: String,
    /// Byte ranges into `fragment` to highlight; sorted, non-overlapping.
    pub highlights: Vec<Range<usize>>,
}

/// Full-text index operations the engine needs. Writes become visible to
/// [`search`](TextIndex::search) only after [`commit`](TextIndex::commit).
pub trait TextIndex: Send + Sync {
    /// Replaces all chunks of `doc_id` by `chunks` (deletes then adds, so
    /// running it twice leaves the same state as running it once).
    fn replace_document(&self, doc_id: u64, chunks: &[ChunkEntry<'_>]) -> Result<()>;
    /// Deletes all chunks of `doc_id`.
    fn delete_document(&self, doc_id: u64) -> Result<()>;
    /// Deletes everything.
    fn clear(&self) -> Result<()>;
    /// Makes all previous writes durable and visible to searches.
    fn commit(&self) -> Result<()>;
    /// Best-scoring chunks for the request, best first.
    fn search(&self, request: &SearchRequest) -> Result<Vec<TextHit>>;
    /// A best excerpt of `text` of at most `max_chars` characters with the
    /// query's terms highlighted. When no term occurs in `text`, the start of
    /// the text without highlights.
    fn snippet(&self, query_text: &str, text: &str, max_chars: usize) -> Result<Snippet>;
    /// Number of committed chunks.
    fn num_chunks(&self) -> Result<u64>;
    /// The set of committed document ids (for start-up consistency checks).
    fn doc_ids(&self) -> Result<BTreeSet<u64>>;
    /// Committed chunks per document id (for exact consistency checks).
    fn doc_chunk_counts(&self) -> Result<std::collections::BTreeMap<u64, u64>>;
}

/// One index shared by several owners (a team replica's engine and its change-log follower).
impl<T: TextIndex + ?Sized> TextIndex for std::sync::Arc<T> {
    fn replace_document(&self, doc_id: u64, chunks: &[ChunkEntry<'_>]) -> Result<()> {
        (**self).replace_document(doc_id, chunks)
    }
    fn delete_document(&self, doc_id: u64) -> Result<()> {
        (**self).delete_document(doc_id)
    }
    fn clear(&self) -> Result<()> {
        (**self).clear()
    }
    fn commit(&self) -> Result<()> {
        (**self).commit()
    }
    fn search(&self, request: &SearchRequest) -> Result<Vec<TextHit>> {
        (**self).search(request)
    }
    fn snippet(&self, query_text: &str, text: &str, max_chars: usize) -> Result<Snippet> {
        (**self).snippet(query_text, text, max_chars)
    }
    fn num_chunks(&self) -> Result<u64> {
        (**self).num_chunks()
    }
    fn doc_ids(&self) -> Result<BTreeSet<u64>> {
        (**self).doc_ids()
    }
    fn doc_chunk_counts(&self) -> Result<std::collections::BTreeMap<u64, u64>> {
        (**self).doc_chunk_counts()
    }
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    chunk_id: Field,
    doc_id: Field,
    text: TextFields,
}

/// [`TextIndex`] backed by a tantivy index in a directory (or in memory).
///
/// Holds the single index writer (and therefore the directory lock) for its
/// whole lifetime; it is `Sync` and meant to be shared behind an `Arc`.
pub struct TantivyIndex {
    reader: IndexReader,
    /// `None` when opened read-only (another process holds the writer lock).
    writer: Option<Mutex<IndexWriter<TantivyDocument>>>,
    fields: Fields,
    path: Option<PathBuf>,
}

impl fmt::Debug for TantivyIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TantivyIndex")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let chunk_id = builder.add_u64_field(F_CHUNK_ID, INDEXED | FAST | STORED);
    let doc_id = builder.add_u64_field(F_DOC_ID, INDEXED | FAST);
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let title = builder.add_text_field(F_TITLE, text.clone());
    let heading = builder.add_text_field(F_HEADING, text.clone());
    let body = builder.add_text_field(F_BODY, text);
    let fields = Fields {
        chunk_id,
        doc_id,
        text: TextFields {
            title,
            heading,
            body,
        },
    };
    (builder.build(), fields)
}

impl TantivyIndex {
    /// Opens the index in `dir`, creating the directory and an empty index if
    /// needed.
    ///
    /// Fails with [`IndexError::Locked`] when another process holds the
    /// index, and [`IndexError::IncompatibleSchema`] when the directory holds
    /// an index of another schema version.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let path = dir.as_ref().to_path_buf();
        let dir_err = |message: String| IndexError::Directory {
            path: path.clone(),
            message,
        };
        std::fs::create_dir_all(&path).map_err(|e| dir_err(e.to_string()))?;
        let directory = MmapDirectory::open(&path).map_err(|e| dir_err(e.to_string()))?;
        let (schema, fields) = schema();
        let index = Index::open_or_create(directory, schema).map_err(|e| match e {
            TantivyError::SchemaError(_) => IndexError::IncompatibleSchema { path: path.clone() },
            other => IndexError::Tantivy(other),
        })?;
        Self::from_index(index, fields, Some(path))
    }

    /// Opens an existing index for searching only, without taking the writer lock, so a
    /// second process can search while the first one writes. Every write fails with
    /// [`IndexError::ReadOnly`]; the reader follows the writer's commits.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Self> {
        let path = dir.as_ref().to_path_buf();
        let directory = MmapDirectory::open(&path).map_err(|e| IndexError::Directory {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let index = Index::open(directory).map_err(IndexError::Tantivy)?;
        let (schema, fields) = schema();
        if index.schema() != schema {
            return Err(IndexError::IncompatibleSchema { path });
        }
        index.tokenizers().register(TOKENIZER_NAME, analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()?;
        Ok(Self {
            reader,
            writer: None,
            fields,
            path: Some(path),
        })
    }

    /// Whether this handle can write.
    /// Sees what was committed since the last reload (another process's commits, for an index
    /// opened read-only; its own commits reload it anyway).
    pub fn reload(&self) -> Result<()> {
        self.reader.reload()?;
        Ok(())
    }

    pub fn is_read_only(&self) -> bool {
        self.writer.is_none()
    }

    /// A fresh index in RAM (tests, throw-away use).
    pub fn in_memory() -> Result<Self> {
        let (schema, fields) = schema();
        Self::from_index(Index::create_in_ram(schema), fields, None)
    }

    fn from_index(index: Index, fields: Fields, path: Option<PathBuf>) -> Result<Self> {
        index.tokenizers().register(TOKENIZER_NAME, analyzer());
        let writer = index
            .writer_with_num_threads(1, WRITER_MEMORY_BYTES)
            .map_err(|e| match e {
                TantivyError::LockFailure(LockError::LockBusy, _) => IndexError::Locked {
                    path: path.clone().unwrap_or_default(),
                },
                other => IndexError::Tantivy(other),
            })?;
        // A process killed during a commit can leave files tantivy already
        // registered (e.g. `<segment>.<opstamp>.del`) that meta.json never
        // came to name. Opstamps restart from meta.json, so the next commit
        // would want the same file name and fail with FileAlreadyExists:
        // the index could never be written again. Collecting the files no
        // commit refers to, before the first write, removes them.
        writer.garbage_collect_files().wait()?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Self {
            reader,
            writer: Some(Mutex::new(writer)),
            fields,
            path,
        })
    }

    /// The index directory (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn writer(&self) -> Result<MutexGuard<'_, IndexWriter<TantivyDocument>>> {
        let writer = self.writer.as_ref().ok_or(IndexError::ReadOnly)?;
        // A panic while holding the lock leaves tantivy's writer usable
        // (uncommitted operations are simply part of the next commit).
        Ok(writer.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn search_with(&self, request: &SearchRequest, coord_factor: f32) -> Result<Vec<TextHit>> {
        let parsed = query::parse(&request.query);
        let searcher = self.reader.searcher();
        let coord_bonus = coord_factor * mean_idf(&searcher, self.fields.text.body, &parsed.terms)?;
        let query = query::build(&self.fields.text, &parsed, coord_bonus)?;
        if request.limit == 0 {
            return Ok(Vec::new());
        }
        let top = TopDocs::with_limit(request.limit).order_by_score();
        let scored: Vec<(Score, DocAddress)> = match &request.allowed_docs {
            None => searcher.search(&query, &top)?,
            Some(filter) => {
                let filter = filter.clone();
                let collector = FilterCollector::new(
                    F_DOC_ID.to_string(),
                    move |doc_id: u64| filter.allows(doc_id),
                    top,
                );
                searcher.search(&query, &collector)?
            }
        };
        resolve_hits(&searcher, scored)
    }

    /// Per-term snippet weights: rarer terms count more (as tantivy's own
    /// `SnippetGenerator::create` does), but a term unknown to the index still
    /// highlights because `text` need not be indexed.
    fn snippet_terms(&self, parsed: &query::ParsedQuery) -> Result<BTreeMap<String, Score>> {
        let searcher = self.reader.searcher();
        let mut terms = BTreeMap::new();
        for term in parsed.positive_terms() {
            let df = searcher.doc_freq(&Term::from_field_text(self.fields.text.body, term))?;
            terms.insert(term.to_owned(), 1.0 / (1.0 + df as Score));
        }
        Ok(terms)
    }
}

/// Mean BM25 IDF (body field) of the query terms present in the index; the
/// coordination bonus is expressed in these units so that it scales with the
/// corpus like the BM25 scores it is added to.
fn mean_idf(searcher: &Searcher, body: Field, terms: &[String]) -> Result<f32> {
    let n = searcher.num_docs() as f32;
    let (mut sum, mut count) = (0.0f32, 0u32);
    for term in terms {
        let df = searcher.doc_freq(&Term::from_field_text(body, term))? as f32;
        if df > 0.0 {
            sum += (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            count += 1;
        }
    }
    Ok(if count == 0 { 0.0 } else { sum / count as f32 })
}

fn resolve_hits(searcher: &Searcher, scored: Vec<(Score, DocAddress)>) -> Result<Vec<TextHit>> {
    let mut hits = Vec::with_capacity(scored.len());
    let mut columns = BTreeMap::new();
    for (score, addr) in scored {
        let (chunk_col, doc_col) = match columns.get(&addr.segment_ord) {
            Some(cols) => cols,
            None => {
                let ff = searcher.segment_reader(addr.segment_ord).fast_fields();
                let cols = (ff.u64(F_CHUNK_ID)?, ff.u64(F_DOC_ID)?);
                columns.entry(addr.segment_ord).or_insert(cols)
            }
        };
        if let (Some(chunk_id), Some(doc_id)) =
            (chunk_col.first(addr.doc_id), doc_col.first(addr.doc_id))
        {
            hits.push(TextHit {
                chunk_id,
                doc_id,
                score,
            });
        }
    }
    Ok(hits)
}

impl TextIndex for TantivyIndex {
    fn replace_document(&self, doc_id: u64, chunks: &[ChunkEntry<'_>]) -> Result<()> {
        let writer = self.writer()?;
        writer.delete_term(Term::from_field_u64(self.fields.doc_id, doc_id));
        for chunk in chunks {
            let mut doc = TantivyDocument::default();
            doc.add_u64(self.fields.chunk_id, chunk.chunk_id);
            doc.add_u64(self.fields.doc_id, doc_id);
            doc.add_text(self.fields.text.title, chunk.title);
            doc.add_text(self.fields.text.heading, chunk.heading);
            doc.add_text(self.fields.text.body, chunk.body);
            writer.add_document(doc)?;
        }
        Ok(())
    }

    fn delete_document(&self, doc_id: u64) -> Result<()> {
        self.writer()?
            .delete_term(Term::from_field_u64(self.fields.doc_id, doc_id));
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        // A delete operation (not `delete_all_documents`, which rewinds the
        // writer's opstamps) keeps the usual ordering with later adds.
        self.writer()?.delete_query(Box::new(AllQuery))?;
        Ok(())
    }

    fn commit(&self) -> Result<()> {
        self.writer()?.commit()?;
        self.reader.reload()?;
        Ok(())
    }

    fn search(&self, request: &SearchRequest) -> Result<Vec<TextHit>> {
        self.search_with(request, COORD_FACTOR)
    }

    fn snippet(&self, query_text: &str, text: &str, max_chars: usize) -> Result<Snippet> {
        let parsed = query::parse(query_text);
        if parsed.terms.is_empty() && parsed.required.is_empty() {
            return Err(IndexError::EmptyQuery);
        }
        if max_chars == 0 || text.is_empty() {
            return Ok(Snippet::default());
        }
        let terms = self.snippet_terms(&parsed)?;
        let tokenizer = TextAnalyzer::from(SnippetTokenizer::new(terms.keys().cloned()));
        // tantivy counts the fragment budget in bytes; give it the byte size
        // of `max_chars` characters in the worst case and trim afterwards.
        let generator = SnippetGenerator::new(
            terms,
            tokenizer,
            self.fields.text.body,
            max_chars.saturating_mul(4),
        );
        let snippet = generator.snippet(text);
        Ok(fit_to_chars(
            text,
            snippet.fragment_range(),
            snippet.highlighted(),
            max_chars,
        ))
    }

    fn num_chunks(&self) -> Result<u64> {
        Ok(self.reader.searcher().num_docs())
    }

    fn doc_ids(&self) -> Result<BTreeSet<u64>> {
        let searcher = self.reader.searcher();
        let mut ids = BTreeSet::new();
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64(F_DOC_ID)?;
            for doc in segment.doc_ids_alive() {
                ids.extend(column.first(doc));
            }
        }
        Ok(ids)
    }

    fn doc_chunk_counts(&self) -> Result<std::collections::BTreeMap<u64, u64>> {
        let searcher = self.reader.searcher();
        let mut counts = std::collections::BTreeMap::new();
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64(F_DOC_ID)?;
            for doc in segment.doc_ids_alive() {
                if let Some(id) = column.first(doc) {
                    *counts.entry(id).or_insert(0) += 1;
                }
            }
        }
        Ok(counts)
    }
}

/// Hook for the measurement test: search with a given coordination factor.
#[cfg(test)]
pub(crate) fn search_with_coord(
    index: &TantivyIndex,
    request: &SearchRequest,
    factor: f32,
) -> Result<Vec<TextHit>> {
    index.search_with(request, factor)
}
