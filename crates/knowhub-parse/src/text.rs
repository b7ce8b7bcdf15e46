//! Placeholder: being written.
use crate::{Limits, ParseError, ParsedDocument};

pub(crate) fn parse(_bytes: &[u8], _limits: &Limits) -> Result<ParsedDocument, ParseError> {
    Err(ParseError::Unsupported {
        ext: Some("text".into()),
    })
}
pub fn decode_text(bytes: &[u8]) -> (String, &'static str) {
    (String::from_utf8_lossy(bytes).into_owned(), "UTF-8")
}
