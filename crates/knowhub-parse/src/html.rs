//! Placeholder: being written.
use crate::{Limits, ParseError, ParsedDocument};

pub(crate) fn parse(_bytes: &[u8], _limits: &Limits) -> Result<ParsedDocument, ParseError> {
    Err(ParseError::Unsupported {
        ext: Some("html".into()),
    })
}
