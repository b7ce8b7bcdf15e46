//! The structured output every parser produces.
//!
//! Parsers emit a flat, ordered list of [`Block`]s. Headings are blocks too; the chunker keeps
//! the heading stack, so parsers never have to build a tree. Every block knows its page (where
//! the format has pages), which is what lets a citation say "page 3, §2.1".

use serde::{Deserialize, Serialize};

/// The document formats KnowHub understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    Pdf,
    Docx,
    /// PowerPoint: slides are pages.
    Pptx,
    /// OpenDocument presentation: slides are pages.
    Odp,
    /// An e-mail message (RFC 5322) with its readable attachments, or a mailbox of them.
    Eml,
    /// An Outlook message (`.msg`).
    Msg,
    Xlsx,
    Xls,
    Xlsb,
    Ods,
    Markdown,
    Html,
    Text,
    /// A picture (PNG, JPEG, TIFF, WebP, BMP): its text comes from OCR, outside the parsers.
    Image,
}

impl DocKind {
    /// Stable lowercase name, used in the store and in `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::Pdf => "pdf",
            DocKind::Docx => "docx",
            DocKind::Pptx => "pptx",
            DocKind::Odp => "odp",
            DocKind::Eml => "eml",
            DocKind::Msg => "msg",
            DocKind::Xlsx => "xlsx",
            DocKind::Xls => "xls",
            DocKind::Xlsb => "xlsb",
            DocKind::Ods => "ods",
            DocKind::Markdown => "markdown",
            DocKind::Html => "html",
            DocKind::Text => "text",
            DocKind::Image => "image",
        }
    }

    /// Inverse of [`DocKind::as_str`].
    pub fn from_name(name: &str) -> Option<DocKind> {
        Some(match name {
            "pdf" => DocKind::Pdf,
            "docx" => DocKind::Docx,
            "pptx" => DocKind::Pptx,
            "odp" => DocKind::Odp,
            "eml" => DocKind::Eml,
            "msg" => DocKind::Msg,
            "xlsx" => DocKind::Xlsx,
            "xls" => DocKind::Xls,
            "xlsb" => DocKind::Xlsb,
            "ods" => DocKind::Ods,
            "markdown" => DocKind::Markdown,
            "html" => DocKind::Html,
            "text" => DocKind::Text,
            "image" => DocKind::Image,
            _ => return None,
        })
    }

    /// Whether the format is a spreadsheet (and so yields typed [`Table`]s).
    pub fn is_spreadsheet(self) -> bool {
        matches!(
            self,
            DocKind::Xlsx | DocKind::Xls | DocKind::Xlsb | DocKind::Ods
        )
    }
}

/// What a block of text is, structurally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockKind {
    /// A heading; level 1 is the top (a sheet name, a chapter, `#`).
    Heading {
        level: u8,
    },
    Paragraph,
    ListItem,
    /// One row of a table rendered as text (header-aware: `col: value; col: value`).
    TableRow,
    /// Preformatted text (code blocks); never re-flowed.
    Code,
    /// Footnotes, endnotes, comments and text boxes: real content that sits outside the flow.
    Note,
}

/// A unit of text in reading order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Block {
    pub kind: BlockKind,
    pub text: String,
    /// 1-based page number, for paged formats (PDF); `None` elsewhere.
    pub page: Option<u32>,
}

impl Block {
    pub fn new(kind: BlockKind, text: impl Into<String>) -> Block {
        Block {
            kind,
            text: text.into(),
            page: None,
        }
    }

    pub fn paragraph(text: impl Into<String>) -> Block {
        Block::new(BlockKind::Paragraph, text)
    }

    pub fn heading(level: u8, text: impl Into<String>) -> Block {
        Block::new(BlockKind::Heading { level }, text)
    }

    pub fn on_page(mut self, page: u32) -> Block {
        self.page = Some(page);
        self
    }
}

/// The type of a spreadsheet column, inferred from its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    Integer,
    Real,
    Text,
    Boolean,
    /// ISO-8601 date or date-time text.
    DateTime,
}

/// A typed cell value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Text, and dates/times as ISO-8601 text.
    Text(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
}

/// A sheet kept as a typed table, for the SQL tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// The sheet (or table) name as the user sees it.
    pub name: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

/// Why a document parsed but produced no indexable text, or produced it with caveats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParseNotice {
    /// Some or all pages are images without a text layer (scans, pictures) that OCR did not
    /// read.
    NoTextLayer,
    /// The file was larger than the limit and only a prefix was read.
    Truncated,
}

/// Everything a parser extracted from one file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ParsedDocument {
    /// The document's own title (metadata, first heading, `<title>`), if it has one.
    pub title: Option<String>,
    pub blocks: Vec<Block>,
    /// Typed tables (spreadsheets).
    pub tables: Vec<Table>,
    /// Number of pages, for paged formats.
    pub page_count: Option<u32>,
    /// Pages (1-based) that had no text layer.
    pub pages_without_text: Vec<u32>,
    /// Pages (1-based) whose text OCR read unsurely (a low mean line score): quotes from them
    /// may hold misread characters.
    #[serde(default)]
    pub uncertain_pages: Vec<u32>,
    /// The character encoding detected for text formats (e.g. "GBK", "UTF-16LE").
    pub encoding: Option<String>,
    pub notices: Vec<ParseNotice>,
    /// A mail's attachments, when parsed with [`crate::parse_attachments_apart`]: each is for
    /// the caller to read as a document of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// Who wrote it, to whom and when, where the format records it (a mail's headers).
    #[serde(default, skip_serializing_if = "DocumentMeta::is_empty")]
    pub meta: DocumentMeta,
}

/// A document's people and date as typed fields, beside the text that also names them: for
/// listing, citing and narrowing a search ("mails from Li Wei since March").
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DocumentMeta {
    /// A mail's sender(s) (`Name <address>`), a document's author(s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// A mail's To and Cc.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recipients: Vec<String>,
    /// When it was sent (or written), RFC 3339 with its offset (`2026-03-02T09:15:00+08:00`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

impl DocumentMeta {
    pub fn is_empty(&self) -> bool {
        self.authors.is_empty() && self.recipients.is_empty() && self.date.is_none()
    }

    /// Whether any author or recipient contains `who` (case-insensitive): a name, an address
    /// or a part of one.
    pub fn names(&self, who: &str) -> bool {
        let who = who.trim().to_lowercase();
        !who.is_empty()
            && self
                .authors
                .iter()
                .chain(&self.recipients)
                .any(|p| p.to_lowercase().contains(&who))
    }

    /// Whether an author contains `who` (case-insensitive).
    pub fn is_from(&self, who: &str) -> bool {
        let who = who.trim().to_lowercase();
        !who.is_empty() && self.authors.iter().any(|p| p.to_lowercase().contains(&who))
    }
}

/// A file attached to a mail, handed back to be read as a document of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    /// Where it sits in the mail, as a relative path: its file name made safe and unique within
    /// the mail (`report.pdf`, `report (2).pdf`), under `message N/` in a mailbox.
    pub name: String,
    /// Base64 in JSON: attachments cross the parser worker's process boundary.
    #[serde(with = "base64_bytes")]
    pub bytes: Vec<u8>,
}

mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

impl ParsedDocument {
    /// Total characters of text across all blocks.
    pub fn text_len(&self) -> usize {
        self.blocks.iter().map(|b| b.text.chars().count()).sum()
    }

    /// All block text joined by newlines (used by evaluation and tests).
    pub fn plain_text(&self) -> String {
        let mut out = String::new();
        for b in &self.blocks {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&b.text);
        }
        out
    }
}
