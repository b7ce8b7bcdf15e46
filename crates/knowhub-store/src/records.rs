//! Plain records read from and written to the store.

use knowhub_parse::{Column, DocumentMeta};
use rusqlite::Row;
use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// A document's id: stable for its path across re-ingests, never reused.
    DocumentId
);
id_type!(
    /// A chunk's id: never reused, so an old citation can never point at new text.
    ChunkId
);
id_type!(
    /// A source (an ingested folder, or the set of individually added files).
    SourceId
);
id_type!(
    /// A folder inside a source.
    FolderId
);

/// What happened to a document's last ingest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentStatus {
    /// Parsed, chunked and stored.
    Indexed,
    /// Parsed but contained no text.
    Empty,
    /// A PDF whose pages are images with no text layer (needs OCR).
    NoTextLayer,
    /// Encrypted; needs a password.
    PasswordRequired,
    /// Could not be parsed; `error` says why.
    Failed,
}

impl DocumentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentStatus::Indexed => "indexed",
            DocumentStatus::Empty => "empty",
            DocumentStatus::NoTextLayer => "no_text_layer",
            DocumentStatus::PasswordRequired => "password_required",
            DocumentStatus::Failed => "failed",
        }
    }

    pub fn from_name(s: &str) -> Option<DocumentStatus> {
        Some(match s {
            "indexed" => DocumentStatus::Indexed,
            "empty" => DocumentStatus::Empty,
            "no_text_layer" => DocumentStatus::NoTextLayer,
            "password_required" => DocumentStatus::PasswordRequired,
            "failed" => DocumentStatus::Failed,
            _ => return None,
        })
    }
}

/// A stored document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocumentRecord {
    pub id: DocumentId,
    pub source: SourceId,
    pub folder: Option<FolderId>,
    pub path: String,
    pub kind: Option<String>,
    pub content_hash: Option<String>,
    pub size: u64,
    pub mtime_ns: Option<i64>,
    pub title: Option<String>,
    pub status: String,
    pub error_code: Option<String>,
    pub error: Option<String>,
    pub page_count: Option<u32>,
    pub encoding: Option<String>,
    pub chunk_count: u64,
    pub index_pending: bool,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// The user who added the document (`None` for documents stored before ownership existed:
    /// only administrators may change those).
    pub owner: Option<String>,
    /// The mail this document is an attachment of: it has no file of its own, follows the
    /// mail's permissions, and goes when the mail goes.
    pub parent: Option<DocumentId>,
    /// Its people and date, where its format records them (a mail's sender, recipients, date).
    #[serde(skip_serializing_if = "DocumentMeta::is_empty")]
    pub meta: DocumentMeta,
}

impl DocumentRecord {
    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<DocumentRecord> {
        Ok(DocumentRecord {
            id: DocumentId(r.get(0)?),
            source: SourceId(r.get(1)?),
            folder: r.get::<_, Option<i64>>(2)?.map(FolderId),
            path: r.get(3)?,
            kind: r.get(4)?,
            content_hash: r.get(5)?,
            size: r.get::<_, i64>(6)? as u64,
            mtime_ns: r.get(7)?,
            title: r.get(8)?,
            status: r.get(9)?,
            error_code: r.get(10)?,
            error: r.get(11)?,
            page_count: r.get(12)?,
            encoding: r.get(13)?,
            chunk_count: r.get::<_, i64>(14)? as u64,
            index_pending: r.get::<_, String>(15)? == "pending",
            created_at_ms: r.get(16)?,
            updated_at_ms: r.get(17)?,
            owner: r.get(18)?,
            parent: r.get::<_, Option<i64>>(19)?.map(DocumentId),
            meta: meta_from_json(r.get(20)?),
        })
    }
}

/// A chunk to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    pub ordinal: u32,
    pub text: String,
    pub heading_path: Vec<String>,
    pub page_start: Option<u32>,
    pub page_end: Option<u32>,
    pub char_start: usize,
    pub char_end: usize,
    pub token_count: u32,
    /// Hash of the text, for reproducible evidence ids.
    pub text_hash: String,
}

/// A parsed document to store.
#[derive(Debug)]
pub struct NewDocument<'a> {
    /// The mail whose attachment this is (see [`DocumentRecord::parent`]).
    pub parent: Option<DocumentId>,
    pub source: SourceId,
    pub folder: Option<FolderId>,
    pub path: &'a str,
    pub kind: &'a str,
    pub content_hash: &'a str,
    pub size: u64,
    pub mtime_ns: Option<i64>,
    pub title: Option<&'a str>,
    pub status: DocumentStatus,
    /// A caveat shown in status (e.g. "3 of 10 pages have no text layer").
    pub note: Option<&'a str>,
    pub page_count: Option<u32>,
    pub encoding: Option<&'a str>,
    /// Its people and date (stored when not empty).
    pub meta: &'a DocumentMeta,
    /// The canonical extracted text that chunk offsets refer to.
    pub text: &'a str,
    pub chunks: &'a [NewChunk],
    pub tables: &'a [knowhub_parse::Table],
    /// The file's bytes as read, for a store that serves originals to machines other than
    /// the one that read the file (the team store keeps them; the local store, whose files
    /// stay on this machine, keeps only attachments', which have no file of their own).
    /// `None` keeps no copy and drops an earlier one.
    pub original: Option<&'a [u8]>,
}

/// A document's original file as a store kept it: the bytes of the version that was parsed.
pub struct OriginalFile {
    /// Its length in bytes.
    pub len: u64,
    /// Reads the bytes without holding them all in memory; fails with an I/O error when the
    /// document is replaced or removed while it is being read.
    pub reader: Box<dyn std::io::Read + Send>,
}

impl std::fmt::Debug for OriginalFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OriginalFile")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// A file that could not be ingested.
#[derive(Debug)]
pub struct FailedDocument<'a> {
    /// The mail whose attachment this is.
    pub parent: Option<DocumentId>,
    pub source: SourceId,
    pub folder: Option<FolderId>,
    pub path: &'a str,
    pub kind: Option<&'a str>,
    pub size: u64,
    pub mtime_ns: Option<i64>,
    pub title: Option<&'a str>,
    pub status: DocumentStatus,
    pub code: &'a str,
    pub error: &'a str,
}

/// What the full-text index stores for a chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    pub chunk_id: ChunkId,
    pub document_id: DocumentId,
    pub title: String,
    /// The heading path joined with " › ".
    pub heading: String,
    pub text: String,
}

/// A chunk with what a search result or citation shows about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkRecord {
    pub chunk_id: ChunkId,
    pub document_id: DocumentId,
    pub path: String,
    pub title: Option<String>,
    pub kind: Option<String>,
    pub ordinal: u32,
    pub text: String,
    pub heading_path: Vec<String>,
    pub page_start: Option<u32>,
    pub page_end: Option<u32>,
    pub char_start: usize,
    pub char_end: usize,
    pub token_count: u32,
    pub text_hash: String,
    /// The document's people and date.
    #[serde(skip_serializing_if = "DocumentMeta::is_empty")]
    pub meta: DocumentMeta,
}

impl ChunkRecord {
    /// A reproducible citation id (seed 004 `evidence_id`): document, chunk position and a
    /// hash of the text, so a citation to changed text is detectably stale.
    pub fn evidence_id(&self) -> String {
        let hash: String = self.text_hash.chars().take(8).collect();
        format!("doc:{}:chunk_{:03}:{hash}", self.document_id, self.ordinal)
    }

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<ChunkRecord> {
        Ok(ChunkRecord {
            chunk_id: ChunkId(r.get(0)?),
            document_id: DocumentId(r.get(1)?),
            path: r.get(2)?,
            title: r.get(3)?,
            kind: r.get(4)?,
            ordinal: r.get(5)?,
            text: r.get(6)?,
            heading_path: crate::heading_from_json(&r.get::<_, String>(7)?),
            page_start: r.get(8)?,
            page_end: r.get(9)?,
            char_start: r.get::<_, i64>(10)? as usize,
            char_end: r.get::<_, i64>(11)? as usize,
            token_count: r.get(12)?,
            text_hash: r.get(13)?,
            meta: meta_from_json(r.get(14)?),
        })
    }
}

/// A source as listed by `knowhub status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceRecord {
    pub id: SourceId,
    pub kind: String,
    pub root_path: Option<String>,
    pub name: String,
    pub documents: u64,
    /// The user who added the source.
    pub owner: Option<String>,
    /// Whether the folder is watched for changes (and reconciled at start-up).
    pub watched: bool,
    /// The folder's include/exclude rules and size limit, as JSON (the engine's `SourceRules`).
    pub rules: String,
}

/// Store-wide counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreStats {
    pub documents: u64,
    pub bytes: u64,
    pub pages: u64,
    pub chunks: u64,
    pub tables: u64,
    pub sources: u64,
    pub by_status: Vec<(String, u64)>,
    /// Indexed documents whose newest version failed (the previous version is kept).
    pub stale_with_errors: u64,
    /// Documents the indexes have not committed yet (non-zero only during or after a crash).
    pub pending_index: u64,
}

/// One journal line.
#[derive(Debug)]
pub struct JournalEntry<'a> {
    pub run_id: &'a str,
    pub path: &'a str,
    pub document: Option<DocumentId>,
    /// added | updated | unchanged | failed | removed
    pub action: &'a str,
    pub detail: Option<&'a str>,
    pub duration_ms: Option<u64>,
}

/// A spreadsheet sheet stored as a typed table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SheetTableRecord {
    pub sheet_name: String,
    /// Table name inside `tables.sqlite`.
    pub sql_name: String,
    pub columns: Vec<Column>,
    pub row_count: u64,
}

/// No people and no date: for a [`NewDocument`] whose format records none.
pub static NO_META: DocumentMeta = DocumentMeta {
    authors: Vec::new(),
    recipients: Vec::new(),
    date: None,
};

/// A stored `meta` column: JSON, NULL when a document has none. Unreadable JSON (written by a
/// newer version with fields this one does not know is still read) counts as none.
pub fn meta_from_json(json: Option<String>) -> DocumentMeta {
    json.and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default()
}

/// The `meta` column for a document's people and date: `None` when there are none.
pub fn meta_to_json(meta: &DocumentMeta) -> Option<String> {
    (!meta.is_empty())
        .then(|| serde_json::to_string(meta).ok())
        .flatten()
}
