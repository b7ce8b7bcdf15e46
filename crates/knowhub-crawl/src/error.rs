//! The crate's error type.

/// Why a crawl could not be set up or run at all. Problems with single pages are not errors:
/// they are reported per page in [`crate::CrawlReport`].
#[derive(Debug, thiserror::Error)]
pub enum CrawlError {
    /// The start address is not an http(s) URL, or a pattern is not a valid glob.
    #[error("{0}")]
    InvalidInput(String),
    /// The sink could not keep a page (disk full, permissions).
    #[error("could not keep {url}: {reason}")]
    Sink { url: String, reason: String },
}

pub type Result<T> = std::result::Result<T, CrawlError>;
