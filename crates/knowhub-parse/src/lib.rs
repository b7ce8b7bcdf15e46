//! Document parsers for KnowHub.
//!
//! Every parser turns the bytes of one file into a [`ParsedDocument`]: ordered [`Block`]s of
//! text that keep the structure a citation needs (page, heading, table row), plus typed
//! [`Table`]s for spreadsheets. Parsers are pure functions of their input and a [`Limits`]; they
//! never touch the file system, so they can run inside a sandboxed worker process.
//!
//! ```
//! use knowhub_parse::{parse, DocKind, Limits};
//!
//! let doc = parse(DocKind::Markdown, b"# Leave\n\nEmployees get 15 days.", &Limits::default())?;
//! assert_eq!(doc.title.as_deref(), Some("Leave"));
//! assert_eq!(doc.blocks.len(), 2);
//! # Ok::<(), knowhub_parse::ParseError>(())
//! ```

mod archive;
mod detect;
mod docx;
mod eml;
mod error;
mod html;
mod limits;
mod markdown;
mod model;
mod msg;
mod odp;
mod pdf;
mod pptx;
mod sheet;
mod text;

pub use detect::{detect, supported_extensions};
pub use error::ParseError;
pub use limits::Limits;
pub use model::{
    Attachment, Block, BlockKind, Cell, Column, ColumnType, DocKind, DocumentMeta, ParseNotice,
    ParsedDocument, Table,
};
pub use pdf::{PageImage, Raster, page_images as pdf_page_images};
pub use text::decode_text;

/// Parses `bytes` as a document of `kind`.
///
/// Fails with a [`ParseError`] that says, in one line, why the file could not be read. Time and
/// memory bounds are the caller's job (the engine runs parsers in a worker process); the
/// structural bounds in `limits` (decompressed size, pages, cells) are enforced here.
pub fn parse(kind: DocKind, bytes: &[u8], limits: &Limits) -> Result<ParsedDocument, ParseError> {
    parse_with(kind, bytes, limits, Attachments::Inline)
}

/// Like [`parse`], except that a mail's (`.eml`, `.mbox`, `.msg`) attachments in a format
/// KnowHub reads are handed back in [`ParsedDocument::attachments`], for the caller to read as
/// documents of their own (OCR for pictures, pages kept, tables for the SQL tool), instead of
/// being read into the mail's text. The mail names them in an `Attachments:` paragraph.
///
/// ```
/// use knowhub_parse::{parse_attachments_apart, DocKind, Limits};
///
/// let mail = b"From: ops@example.com\r\nSubject: Notes\r\n\
/// Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
/// Content-Type: text/plain\r\n\r\nSee the notes.\r\n--b\r\n\
/// Content-Type: text/markdown\r\nContent-Disposition: attachment; filename=notes.md\r\n\r\n\
/// # Notes\r\n--b--\r\n";
/// let doc = parse_attachments_apart(DocKind::Eml, mail, &Limits::default())?;
/// assert_eq!(doc.attachments[0].name, "notes.md");
/// assert!(doc.plain_text().contains("Attachments: notes.md"));
/// # Ok::<(), knowhub_parse::ParseError>(())
/// ```
pub fn parse_attachments_apart(
    kind: DocKind,
    bytes: &[u8],
    limits: &Limits,
) -> Result<ParsedDocument, ParseError> {
    parse_with(kind, bytes, limits, Attachments::Apart)
}

/// What a mail parser does with the attachments it can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attachments {
    /// Read into the mail's text, each under a heading that names it.
    Inline,
    /// Handed back in [`ParsedDocument::attachments`].
    Apart,
}

fn parse_with(
    kind: DocKind,
    bytes: &[u8],
    limits: &Limits,
    attachments: Attachments,
) -> Result<ParsedDocument, ParseError> {
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(ParseError::TooLarge {
            size: bytes.len() as u64,
            limit: limits.max_file_bytes,
        });
    }
    let mut doc = match kind {
        DocKind::Pdf => pdf::parse(bytes, limits)?,
        DocKind::Docx => docx::parse(bytes, limits)?,
        DocKind::Pptx => pptx::parse(bytes, limits)?,
        DocKind::Odp => odp::parse(bytes, limits)?,
        DocKind::Eml => eml::parse(bytes, limits, attachments)?,
        DocKind::Msg => msg::parse(bytes, limits, attachments)?,
        DocKind::Xlsx | DocKind::Xls | DocKind::Xlsb | DocKind::Ods => {
            sheet::parse(kind, bytes, limits)?
        }
        DocKind::Markdown => markdown::parse(bytes, limits)?,
        DocKind::Html => html::parse(bytes, limits)?,
        DocKind::Text => text::parse(bytes, limits)?,
        // Pages whose text OCR reads (the engine's parser workers), else a notice.
        DocKind::Image => {
            let pages = image_pages(bytes).min(limits.max_pages).max(1);
            ParsedDocument {
                page_count: Some(pages),
                pages_without_text: (1..=pages).collect(),
                notices: vec![ParseNotice::NoTextLayer],
                ..ParsedDocument::default()
            }
        }
    };
    normalize(&mut doc, limits);
    Ok(doc)
}

/// Pages of a picture: the images of a multi-page TIFF (its chain of image directories, read
/// without decoding pixels), else 1.
fn image_pages(bytes: &[u8]) -> u32 {
    let read_u16 = |at: usize, le: bool| -> Option<u16> {
        let b: [u8; 2] = bytes.get(at..at + 2)?.try_into().ok()?;
        Some(if le {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    };
    let read_u32 = |at: usize, le: bool| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let le = match bytes.get(..4) {
        Some(b"II*\0") => true,
        Some(b"MM\0*") => false,
        _ => return 1,
    };
    let mut seen = std::collections::HashSet::new();
    let mut offset = read_u32(4, le).unwrap_or(0) as usize;
    let mut pages = 0u32;
    // A cycle or an offset past the end ends the chain.
    while offset != 0 && seen.insert(offset) && pages < 100_000 {
        let Some(entries) = read_u16(offset, le) else {
            break;
        };
        pages += 1;
        let next = offset + 2 + 12 * usize::from(entries);
        offset = read_u32(next, le).unwrap_or(0) as usize;
    }
    pages.max(1)
}

/// Final clean-up shared by every format: trims blocks, drops empty ones, strips control
/// characters that would corrupt indexes or terminals, and enforces the text limit.
fn normalize(doc: &mut ParsedDocument, limits: &Limits) {
    let mut total = 0usize;
    let mut truncated = false;
    doc.blocks.retain_mut(|block| {
        if truncated {
            return false;
        }
        let cleaned = clean_text(&block.text, matches!(block.kind, BlockKind::Code));
        if cleaned.is_empty() {
            return false;
        }
        total += cleaned.len();
        if total > limits.max_text_bytes {
            truncated = true;
            return false;
        }
        block.text = cleaned;
        true
    });
    if truncated && !doc.notices.contains(&ParseNotice::Truncated) {
        doc.notices.push(ParseNotice::Truncated);
    }
    if let Some(title) = &doc.title {
        let t = clean_text(title, false);
        doc.title = if t.is_empty() {
            None
        } else {
            Some(t.chars().take(300).collect())
        };
    }
}

/// Removes control characters (keeping newlines and tabs in code), folds runs of blank lines,
/// and trims. NUL bytes and lone surrogates never reach the store.
pub(crate) fn clean_text(text: &str, keep_layout: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line: String = line
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .map(|c| if c == '\u{a0}' { ' ' } else { c })
            .collect();
        let line = if keep_layout {
            line.trim_end().to_string()
        } else {
            line.trim().to_string()
        };
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
    }
    out.trim_end().to_string()
}

/// Helpers shared by the parsers' tests.
#[cfg(test)]
pub(crate) mod test_util {
    use std::io::{Cursor, Write};

    use zip::write::SimpleFileOptions;

    /// A ZIP archive with the given (name, content) entries, deflated.
    pub(crate) fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_strips_controls_and_blank_runs() {
        assert_eq!(clean_text("  a\u{0}b \n\n\n c\u{7}  ", false), "ab\n\nc");
        assert_eq!(clean_text("    indented()\n", true), "    indented()");
    }

    #[test]
    fn oversized_input_is_rejected() {
        let limits = Limits {
            max_file_bytes: 4,
            ..Limits::default()
        };
        assert!(matches!(
            parse(DocKind::Text, b"hello", &limits),
            Err(ParseError::TooLarge { .. })
        ));
    }
}

#[cfg(test)]
mod image_tests {
    use super::*;

    /// A little-endian TIFF header and empty image directories at the given offsets, each
    /// pointing at the next (`None`: the last).
    fn tiff(directories: &[(usize, Option<usize>)]) -> Vec<u8> {
        let mut bytes = b"II*\0".to_vec();
        bytes.extend((directories[0].0 as u32).to_le_bytes());
        for &(at, next) in directories {
            bytes.resize(at, 0);
            bytes.extend(0u16.to_le_bytes());
            bytes.extend((next.unwrap_or(0) as u32).to_le_bytes());
        }
        bytes
    }

    #[test]
    fn a_picture_has_a_page_per_tiff_image() {
        for (name, bytes, pages) in [
            ("PNG", b"\x89PNG\r\n\x1a\n".to_vec(), 1),
            ("one image", tiff(&[(8, None)]), 1),
            (
                "three images",
                tiff(&[(8, Some(20)), (20, Some(40)), (40, None)]),
                3,
            ),
            ("a cycle ends", tiff(&[(8, Some(20)), (20, Some(8))]), 2),
            ("past the end", tiff(&[(8, Some(4000))]), 1),
        ] {
            let doc = parse(DocKind::Image, &bytes, &Limits::default()).expect(name);
            assert_eq!(doc.page_count, Some(pages), "{name}");
            assert_eq!(doc.pages_without_text.len(), pages as usize, "{name}");
        }
    }
}
