//! E-mail (`.eml`, RFC 5322 / MIME; `.mbox`, a file of them) parser.
//!
//! The subject is the title and a heading; sender, recipients and date are a searchable
//! paragraph; the text body follows (the HTML body, through the HTML parser, when there is no
//! text one). Attachments are either read into the mail, each under a heading that names it
//! (so a citation into an attachment names the attachment; one that cannot be read is named
//! with the reason), or handed back apart for the caller to read as documents of their own
//! ([`Attachments`]). Pictures embedded in the body (a logo in a signature) are not
//! attachments. Character sets and transfer encodings are decoded by `mail-parser`.

use std::collections::HashSet;

use mail_parser::mailbox::mbox::MessageIterator;
use mail_parser::{Address, Message, MessageParser, MessagePart, MimeHeaders};

use crate::{
    Attachment, Attachments, Block, BlockKind, DocKind, DocumentMeta, Limits, ParseError,
    ParsedDocument, detect,
};

const FORMAT: &str = "EML";

/// Messages inside messages (forwarded as attachments) are read this deep.
const MAX_NESTING: u32 = 3;

/// Attachments handed back apart from one mail (or mailbox) at most.
const MAX_APART: usize = 256;

/// Longest attachment name kept, in characters (the extension is kept whole).
const MAX_NAME_CHARS: usize = 120;

pub(crate) fn parse(
    bytes: &[u8],
    limits: &Limits,
    mode: Attachments,
) -> Result<ParsedDocument, ParseError> {
    let mut attachments = Collector::new(mode);
    let mut doc = if bytes.starts_with(b"From ") {
        parse_mbox(bytes, limits, &mut attachments)?
    } else {
        parse_nested(bytes, limits, 0, &mut attachments)?
    };
    doc.attachments = attachments.files;
    Ok(doc)
}

/// A mailbox (`.mbox`: messages each after a `From ` line): every message is a section headed
/// by its subject, so a citation names the message. Attachments handed back apart sit under
/// `message N/`.
fn parse_mbox(
    bytes: &[u8],
    limits: &Limits,
    attachments: &mut Collector,
) -> Result<ParsedDocument, ParseError> {
    let mut blocks = Vec::new();
    let mut count = 0u32;
    for message in MessageIterator::new(bytes) {
        let message = message
            .map_err(|e| ParseError::invalid("MBOX", format!("cannot split the mailbox ({e})")))?;
        count += 1;
        if count > limits.max_pages {
            return Err(ParseError::LimitExceeded(format!(
                "more than {} messages in one mailbox",
                limits.max_pages
            )));
        }
        attachments.prefix = format!("message {count}/");
        match parse_nested(message.contents(), limits, 0, attachments) {
            Ok(doc) => {
                if doc.title.is_none() {
                    blocks.push(Block::heading(1, format!("Message {count}")));
                }
                blocks.extend(doc.blocks);
            }
            Err(e @ ParseError::LimitExceeded(_)) => return Err(e),
            Err(e) => {
                blocks.push(Block::heading(1, format!("Message {count}")));
                blocks.push(Block::new(BlockKind::Note, format!("({e})")));
            }
        }
    }
    if count == 0 {
        return Err(ParseError::invalid("MBOX", "the mailbox holds no message"));
    }
    Ok(ParsedDocument {
        blocks,
        ..ParsedDocument::default()
    })
}

fn parse_nested(
    bytes: &[u8],
    limits: &Limits,
    depth: u32,
    attachments: &mut Collector,
) -> Result<ParsedDocument, ParseError> {
    let message = MessageParser::default()
        .parse(bytes)
        .filter(|m| m.from().is_some() || m.subject().is_some() || m.date().is_some())
        .ok_or_else(|| {
            ParseError::invalid(
                FORMAT,
                "not an e-mail message (no From, Subject or Date header)",
            )
        })?;
    let title = message
        .subject()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let mut blocks = Vec::new();
    if let Some(subject) = &title {
        blocks.push(Block::heading(1, subject.clone()));
    }
    let header = header_lines(&message);
    if !header.is_empty() {
        blocks.push(Block::paragraph(header));
    }
    blocks.extend(body_blocks(&message, limits)?);

    let mut listed = Vec::new();
    for part in message.attachments() {
        if is_body_picture(part) {
            continue;
        }
        let name = part
            .attachment_name()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("attachment")
            .to_string();
        if let Some(inner) = part.message() {
            if attachments.mode == Attachments::Apart {
                // A forwarded message is a mail of its own, with its own attachments.
                let name = if name.to_ascii_lowercase().ends_with(".eml") {
                    name
                } else {
                    let subject = inner.subject().map(str::trim).filter(|s| !s.is_empty());
                    format!("{}.eml", subject.unwrap_or(&name))
                };
                listed.push(attachments.keep(&name, inner.raw_message()));
            } else if depth < MAX_NESTING {
                blocks.push(Block::heading(2, format!("Attachment: {name}")));
                let nested = parse_nested(inner.raw_message(), limits, depth + 1, attachments)
                    .map(|d| d.blocks)
                    .unwrap_or_default();
                blocks.extend(nested.into_iter().map(demote));
            }
            continue;
        }
        attachment(
            &name,
            part.contents(),
            limits,
            attachments,
            &mut listed,
            &mut blocks,
        )?;
    }
    if !listed.is_empty() {
        blocks.push(Block::paragraph(format!(
            "Attachments: {}",
            listed.join(", ")
        )));
    }
    Ok(ParsedDocument {
        title,
        blocks,
        meta: meta(&message),
        ..ParsedDocument::default()
    })
}

/// The sender, recipients (To and Cc) and date as typed fields.
fn meta(message: &Message<'_>) -> DocumentMeta {
    let people = |address: Option<&Address<'_>>| -> Vec<String> {
        address.map(mailboxes).unwrap_or_default()
    };
    let mut recipients = people(message.to());
    recipients.extend(people(message.cc()));
    DocumentMeta {
        authors: people(message.from()),
        recipients,
        date: message.date().map(|d| d.to_rfc3339()),
    }
}

/// A picture shown inside the message body (referenced by its Content-ID, not offered as an
/// attachment): part of the message's look, like a logo in a signature.
fn is_body_picture(part: &MessagePart<'_>) -> bool {
    let picture = part
        .content_type()
        .is_some_and(|ct| ct.ctype().eq_ignore_ascii_case("image"));
    let offered = part
        .content_disposition()
        .is_some_and(|d| d.ctype().eq_ignore_ascii_case("attachment"));
    picture && !offered && part.content_id().is_some()
}

/// One attachment of a mail (`.eml` or `.msg`). Read inline: its text under a heading that
/// names it (headings demoted, pages dropped: they are not the mail's), else a note with the
/// reason. Apart: kept in `attachments` when KnowHub reads its format, and named in `listed`
/// (with the reason when it is not kept).
pub(crate) fn attachment(
    name: &str,
    contents: &[u8],
    limits: &Limits,
    attachments: &mut Collector,
    listed: &mut Vec<String>,
    blocks: &mut Vec<Block>,
) -> Result<(), ParseError> {
    let kind = detect(Some(name), &contents[..contents.len().min(4096)]);
    if attachments.mode == Attachments::Apart {
        listed.push(match kind {
            Some(_) => attachments.keep(name, contents),
            None => format!("{} (not a format KnowHub reads)", safe_name(name)),
        });
        return Ok(());
    }
    let heading = Block::heading(2, format!("Attachment: {name}"));
    let reason = match kind {
        None => "not a format KnowHub reads".to_string(),
        Some(DocKind::Image) => "a picture: OCR does not read mail attachments".to_string(),
        Some(kind) => match crate::parse(kind, contents, limits) {
            Ok(doc) => {
                blocks.push(heading);
                blocks.extend(doc.blocks.into_iter().map(|b| Block {
                    page: None,
                    ..demote(b)
                }));
                return Ok(());
            }
            Err(e @ ParseError::LimitExceeded(_)) => return Err(e),
            Err(e) => e.to_string(),
        },
    };
    blocks.push(heading);
    blocks.push(Block::new(BlockKind::Note, format!("({reason})")));
    Ok(())
}

/// The attachments of one mail (or mailbox) handed back apart, under names that are safe as a
/// path component and unique within the mail.
pub(crate) struct Collector {
    pub(crate) mode: Attachments,
    /// `message N/` inside a mailbox.
    prefix: String,
    names: HashSet<String>,
    pub(crate) files: Vec<Attachment>,
}

impl Collector {
    pub(crate) fn new(mode: Attachments) -> Collector {
        Collector {
            mode,
            prefix: String::new(),
            names: HashSet::new(),
            files: Vec::new(),
        }
    }

    /// Keeps an attachment; returns the name it is kept under, or why it is not kept.
    pub(crate) fn keep(&mut self, name: &str, bytes: &[u8]) -> String {
        let base = safe_name(name);
        if self.files.len() >= MAX_APART {
            return format!("{base} (not read: more than {MAX_APART} attachments)");
        }
        let mut unique = base.clone();
        let mut n = 2;
        while !self.names.insert(format!("{}{unique}", self.prefix)) {
            unique = numbered(&base, n);
            n += 1;
        }
        self.files.push(Attachment {
            name: format!("{}{unique}", self.prefix),
            bytes: bytes.to_vec(),
        });
        unique
    }
}

/// An attachment's name as one path component: no separators, control characters or
/// characters some file systems refuse, no leading dots, at most [`MAX_NAME_CHARS`].
pub(crate) fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            let refused = matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|');
            if c.is_control() || refused { '_' } else { c }
        })
        .collect();
    let cleaned = cleaned.trim().trim_start_matches('.').trim();
    if cleaned.is_empty() {
        return "attachment".to_string();
    }
    if cleaned.chars().count() <= MAX_NAME_CHARS {
        return cleaned.to_string();
    }
    let (stem, ext) = split_extension(cleaned);
    let keep = MAX_NAME_CHARS.saturating_sub(ext.chars().count());
    format!("{}{ext}", stem.chars().take(keep).collect::<String>())
}

/// `report.pdf` → `report (2).pdf`.
fn numbered(name: &str, n: usize) -> String {
    let (stem, ext) = split_extension(name);
    format!("{stem} ({n}){ext}")
}

/// (`report`, `.pdf`); an extension is a short tail after the last dot.
fn split_extension(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i) if i > 0 && name.len() - i <= 10 => name.split_at(i),
        _ => (name, ""),
    }
}

/// `From: …`, `To: …`, `Cc: …`, `Date: …` lines, for search and for the reader of a passage.
fn header_lines(message: &Message<'_>) -> String {
    let mut lines = Vec::new();
    for (label, address) in [
        ("From", message.from()),
        ("To", message.to()),
        ("Cc", message.cc()),
    ] {
        if let Some(address) = address {
            let text = addresses(address);
            if !text.is_empty() {
                lines.push(format!("{label}: {text}"));
            }
        }
    }
    if let Some(date) = message.date() {
        lines.push(format!("Date: {}", date.to_rfc3339()));
    }
    lines.join("\n")
}

/// `Name <address>` for every mailbox, groups flattened.
fn addresses(address: &Address<'_>) -> String {
    mailboxes(address).join(", ")
}

/// `Name <address>` (or whichever of the two there is) for each mailbox, groups flattened.
fn mailboxes(address: &Address<'_>) -> Vec<String> {
    address
        .iter()
        .map(|a| match (a.name(), a.address()) {
            (Some(name), Some(addr)) if !name.trim().is_empty() => {
                format!("{} <{addr}>", name.trim())
            }
            (_, Some(addr)) => addr.to_string(),
            (Some(name), None) => name.trim().to_string(),
            (None, None) => String::new(),
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// The message's text: its text/plain bodies, else its HTML bodies.
fn body_blocks(message: &Message<'_>, limits: &Limits) -> Result<Vec<Block>, ParseError> {
    let plain: Vec<usize> = (0..message.text_body_count())
        .filter(|&i| is_plain_text(message, i))
        .collect();
    let mut blocks = Vec::new();
    if !plain.is_empty() {
        for i in plain {
            if let Some(text) = message.body_text(i) {
                blocks.extend(crate::text::parse(text.as_bytes(), limits)?.blocks);
            }
        }
    } else {
        for i in 0..message.html_body_count() {
            if let Some(html) = message.body_html(i) {
                blocks.extend(crate::html::parse(html.as_bytes(), limits)?.blocks);
            }
        }
    }
    Ok(blocks)
}

/// Whether text body `i` is a text/plain part (mail-parser also offers an HTML body, turned
/// into text, as a text body).
fn is_plain_text(message: &Message<'_>, i: usize) -> bool {
    message
        .text_part(u32::try_from(i).unwrap_or(u32::MAX))
        .and_then(|p| p.content_type())
        .is_none_or(|ct| {
            ct.ctype().eq_ignore_ascii_case("text")
                && ct.subtype().is_none_or(|s| s.eq_ignore_ascii_case("plain"))
        })
}

/// An attachment's headings sit under its own "Attachment: …" heading.
fn demote(mut block: Block) -> Block {
    if let BlockKind::Heading { level } = block.kind {
        block.kind = BlockKind::Heading {
            level: level.saturating_add(2).min(6),
        };
    }
    block
}

#[cfg(test)]
mod tests;
