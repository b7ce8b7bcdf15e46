//! Placeholder: being written.
use crate::{DocKind, Limits, ParseError, ParsedDocument};

pub(crate) fn parse(
    _kind: DocKind,
    _bytes: &[u8],
    _limits: &Limits,
) -> Result<ParsedDocument, ParseError> {
    Err(ParseError::Unsupported {
        ext: Some("xlsx".into()),
    })
}
