use std::path::PathBuf;

/// Every error this crate returns.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Another process (or another `TantivyIndex` in this one) holds the
    /// index writer lock.
    #[error("index is in use by another KnowHub process (lock held on {path})")]
    Locked {
        /// The index directory.
        path: PathBuf,
    },
    /// The directory holds an index written with a different schema (an
    /// older KnowHub). The caller should delete it and re-index from SQLite.
    #[error("the index at {path} was created with an incompatible schema and must be rebuilt")]
    IncompatibleSchema {
        /// The index directory.
        path: PathBuf,
    },
    /// The index was opened read-only (another process is writing) and a
    /// write was attempted.
    #[error("the index is open read-only because another KnowHub process is updating it")]
    ReadOnly,
    /// The query contains no searchable term (empty, punctuation only, only
    /// stop words, or only exclusions).
    #[error("the query contains no searchable terms")]
    EmptyQuery,
    /// The index directory could not be created or opened.
    #[error("cannot open index directory {path}: {message}")]
    Directory {
        /// The index directory.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Any other tantivy failure (I/O, corruption, ...).
    #[error("full-text index error: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
}

/// Shorthand for this crate's results.
pub type Result<T, E = IndexError> = std::result::Result<T, E>;
