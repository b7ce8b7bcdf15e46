use thiserror::Error;

/// Why a file could not be parsed. Every message is one line a user can act on.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ParseError {
    #[error("unsupported file type{}", ext.as_ref().map(|e| format!(" '.{e}'")).unwrap_or_default())]
    Unsupported { ext: Option<String> },

    #[error("not a valid {format} file: {detail}")]
    Invalid {
        format: &'static str,
        detail: String,
    },

    #[error("password required: the document is encrypted")]
    PasswordRequired,

    #[error("file too large: {size} bytes (limit {limit})")]
    TooLarge { size: u64, limit: u64 },

    #[error("refused: {0}")]
    LimitExceeded(String),
}

impl ParseError {
    pub(crate) fn invalid(format: &'static str, detail: impl std::fmt::Display) -> ParseError {
        let mut detail = detail.to_string();
        // Library errors sometimes span lines or embed huge dumps; keep the reason one short line.
        detail = detail
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(300)
            .collect();
        ParseError::Invalid { format, detail }
    }

    /// A short machine-readable code, stored with failed documents.
    pub fn code(&self) -> &'static str {
        match self {
            ParseError::Unsupported { .. } => "unsupported",
            ParseError::Invalid { .. } => "invalid",
            ParseError::PasswordRequired => "password_required",
            ParseError::TooLarge { .. } => "too_large",
            ParseError::LimitExceeded(_) => "limit_exceeded",
        }
    }
}
