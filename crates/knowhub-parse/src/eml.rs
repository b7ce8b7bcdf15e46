//! E-mail (`.eml`, RFC 5322 / MIME; `.mbox`, a file of them) parser.
//!
//! The subject is the title and a heading; sender, recipients and date are a searchable
//! paragraph; the text body follows (the HTML body, through the HTML parser, when there is no
//! text one). Each attachment KnowHub can read follows under a heading that names it, so a
//! citation into an attachment names the attachment; an attachment that cannot be read is
//! named with the reason. Character sets and transfer encodings are decoded by `mail-parser`.

use mail_parser::mailbox::mbox::MessageIterator;
use mail_parser::{Address, Message, MessageParser, MimeHeaders};

use crate::{Block, BlockKind, DocKind, Limits, ParseError, ParsedDocument, detect};

const FORMAT: &str = "EML";

/// Messages inside messages (forwarded as attachments) are read this deep.
const MAX_NESTING: u32 = 3;

pub(crate) fn parse(bytes: &[u8], limits: &Limits) -> Result<ParsedDocument, ParseError> {
    if bytes.starts_with(b"From ") {
        return parse_mbox(bytes, limits);
    }
    parse_nested(bytes, limits, 0)
}

/// A mailbox (`.mbox`: messages each after a `From ` line): every message is a section headed
/// by its subject, so a citation names the message.
fn parse_mbox(bytes: &[u8], limits: &Limits) -> Result<ParsedDocument, ParseError> {
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
        match parse_nested(message.contents(), limits, 0) {
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

fn parse_nested(bytes: &[u8], limits: &Limits, depth: u32) -> Result<ParsedDocument, ParseError> {
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

    for part in message.attachments() {
        let name = part
            .attachment_name()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("attachment")
            .to_string();
        let heading = Block::heading(2, format!("Attachment: {name}"));
        if let Some(inner) = part.message() {
            if depth < MAX_NESTING {
                blocks.push(heading);
                let nested = parse_nested(inner.raw_message(), limits, depth + 1)
                    .map(|d| d.blocks)
                    .unwrap_or_default();
                blocks.extend(nested.into_iter().map(demote));
            }
            continue;
        }
        blocks.extend(attachment_blocks(&name, part.contents(), limits)?);
    }
    Ok(ParsedDocument {
        title,
        blocks,
        ..ParsedDocument::default()
    })
}

/// An attachment of a mail (`.eml` or `.msg`) under a heading that names it: its text when
/// KnowHub reads its format (headings demoted, pages dropped: they are not the mail's), else
/// a note with the reason.
pub(crate) fn attachment_blocks(
    name: &str,
    contents: &[u8],
    limits: &Limits,
) -> Result<Vec<Block>, ParseError> {
    let heading = Block::heading(2, format!("Attachment: {name}"));
    let reason = match detect(Some(name), &contents[..contents.len().min(4096)]) {
        None => "not a format KnowHub reads".to_string(),
        Some(DocKind::Image) => "a picture: OCR does not read mail attachments".to_string(),
        Some(kind) => match crate::parse(kind, contents, limits) {
            Ok(doc) => {
                let mut blocks = vec![heading];
                blocks.extend(doc.blocks.into_iter().map(|b| Block {
                    page: None,
                    ..demote(b)
                }));
                return Ok(blocks);
            }
            Err(e @ ParseError::LimitExceeded(_)) => return Err(e),
            Err(e) => e.to_string(),
        },
    };
    Ok(vec![
        heading,
        Block::new(BlockKind::Note, format!("({reason})")),
    ])
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
        .collect::<Vec<_>>()
        .join(", ")
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
