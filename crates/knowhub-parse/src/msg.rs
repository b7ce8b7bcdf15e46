//! Outlook message (`.msg`) parser: the MAPI properties an Outlook item stores as streams of a
//! compound file (CFB), read like an e-mail: the subject as title and heading, sender,
//! recipients and date as a searchable paragraph, the text body (or the HTML one, through the
//! HTML parser), and each attachment under a heading that names it.
//!
//! Property streams are named `__substg1.0_<id><type>`: type `001F` is UTF-16LE text, `001E`
//! 8-bit text, `0102` bytes. Fixed-size properties (the dates) sit in `__properties_version1.0`.

use std::io::{Cursor, Read};

use crate::eml::Collector;
use crate::{Attachments, Block, DocumentMeta, Limits, ParseError, ParsedDocument};

const FORMAT: &str = "MSG";

/// Attachments read at most (each is also bounded by the decompression budget).
const MAX_ATTACHMENTS: usize = 256;

type Cfb<'a> = cfb::CompoundFile<Cursor<&'a [u8]>>;

pub(crate) fn parse(
    bytes: &[u8],
    limits: &Limits,
    mode: Attachments,
) -> Result<ParsedDocument, ParseError> {
    let mut file = cfb::CompoundFile::open(Cursor::new(bytes))
        .map_err(|e| ParseError::invalid(FORMAT, format!("not a compound file ({e})")))?;
    let mut budget = limits.max_decompressed_bytes;
    let subject = text_property(&mut file, "", 0x0037, &mut budget)?;
    let body = text_property(&mut file, "", 0x1000, &mut budget)?;
    let html = match text_property(&mut file, "", 0x1013, &mut budget)? {
        Some(html) => Some(html),
        None => bytes_property(&mut file, "", 0x1013, &mut budget)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
    };
    if subject.is_none() && body.is_none() && html.is_none() {
        return Err(ParseError::invalid(
            FORMAT,
            "not an Outlook message (no subject and no body)",
        ));
    }
    let title = subject
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let mut blocks = Vec::new();
    if let Some(t) = &title {
        blocks.push(Block::heading(1, t.clone()));
    }
    let mut header = Vec::new();
    let sender_name = text_property(&mut file, "", 0x0C1A, &mut budget)?;
    let sender_address = match text_property(&mut file, "", 0x5D01, &mut budget)? {
        Some(a) => Some(a),
        None => text_property(&mut file, "", 0x0C1F, &mut budget)?,
    };
    let mut meta = DocumentMeta::default();
    let sender = match (sender_name, sender_address) {
        (Some(n), Some(a)) if n != a => Some(format!("{n} <{a}>")),
        (Some(v), _) | (None, Some(v)) => Some(v),
        (None, None) => None,
    };
    if let Some(sender) = sender.filter(|s| !s.trim().is_empty()) {
        header.push(format!("From: {sender}"));
        meta.authors.push(sender);
    }
    for (label, id) in [("To", 0x0E04), ("Cc", 0x0E03)] {
        if let Some(v) = text_property(&mut file, "", id, &mut budget)?.filter(|v| !v.is_empty()) {
            header.push(format!("{label}: {v}"));
            // Display lists separate recipients with semicolons.
            meta.recipients.extend(
                v.split(';')
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    if let Some(date) = submit_time(&mut file) {
        header.push(format!("Date: {}", date.format("%Y-%m-%d %H:%M UTC")));
        meta.date = Some(date.to_rfc3339());
    }
    if !header.is_empty() {
        blocks.push(Block::paragraph(header.join("\n")));
    }
    match (body, html) {
        (Some(text), _) if !text.trim().is_empty() => {
            blocks.extend(crate::text::parse(text.as_bytes(), limits)?.blocks);
        }
        (_, Some(html)) => blocks.extend(crate::html::parse(html.as_bytes(), limits)?.blocks),
        _ => {}
    }
    let attachments: Vec<String> = file
        .read_root_storage()
        .filter(|e| e.is_storage() && e.name().starts_with("__attach_version1.0_"))
        .map(|e| e.name().to_owned())
        .take(MAX_ATTACHMENTS)
        .collect();
    let mut collector = Collector::new(mode);
    let mut listed = Vec::new();
    for storage in attachments {
        let dir = format!("/{storage}");
        let name = match text_property(&mut file, &dir, 0x3707, &mut budget)? {
            Some(n) if !n.trim().is_empty() => n,
            _ => text_property(&mut file, &dir, 0x3704, &mut budget)?
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| "attachment".to_owned()),
        };
        let name = name.trim();
        match bytes_property(&mut file, &dir, 0x3701, &mut budget)? {
            Some(data) => crate::eml::attachment(
                name,
                &data,
                limits,
                &mut collector,
                &mut listed,
                &mut blocks,
            )?,
            // An embedded Outlook item or an OLE object: named, not read.
            None if mode == Attachments::Apart => listed.push(format!(
                "{} (an embedded item: not read)",
                crate::eml::safe_name(name)
            )),
            None => {
                blocks.push(Block::heading(2, format!("Attachment: {name}")));
                blocks.push(Block::new(
                    crate::BlockKind::Note,
                    "(an embedded item: not read)",
                ));
            }
        }
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
        attachments: collector.files,
        meta,
        ..ParsedDocument::default()
    })
}

/// A stream of at most `budget` bytes (what is left of the decompression budget), or `None`
/// when it does not exist.
fn stream(file: &mut Cfb<'_>, path: &str, budget: &mut u64) -> Result<Option<Vec<u8>>, ParseError> {
    if !file.is_stream(path) {
        return Ok(None);
    }
    let mut s = file
        .open_stream(path)
        .map_err(|e| ParseError::invalid(FORMAT, format!("cannot read {path} ({e})")))?;
    if s.len() > *budget {
        return Err(ParseError::LimitExceeded(format!(
            "the message is larger than the {} byte budget",
            *budget
        )));
    }
    *budget -= s.len();
    let mut out = Vec::with_capacity(s.len() as usize);
    s.read_to_end(&mut out)
        .map_err(|e| ParseError::invalid(FORMAT, format!("cannot read {path} ({e})")))?;
    Ok(Some(out))
}

/// A string property of the storage `dir` (`""` for the message itself).
fn text_property(
    file: &mut Cfb<'_>,
    dir: &str,
    id: u16,
    budget: &mut u64,
) -> Result<Option<String>, ParseError> {
    if let Some(bytes) = stream(file, &format!("{dir}/__substg1.0_{id:04X}001F"), budget)? {
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        let text = String::from_utf16_lossy(&units);
        return Ok(Some(text.trim_end_matches('\0').to_owned()));
    }
    if let Some(bytes) = stream(file, &format!("{dir}/__substg1.0_{id:04X}001E"), budget)? {
        let (text, _, _) = encoding_rs::WINDOWS_1252.decode(&bytes);
        return Ok(Some(text.trim_end_matches('\0').to_owned()));
    }
    Ok(None)
}

fn bytes_property(
    file: &mut Cfb<'_>,
    dir: &str,
    id: u16,
    budget: &mut u64,
) -> Result<Option<Vec<u8>>, ParseError> {
    stream(file, &format!("{dir}/__substg1.0_{id:04X}0102"), budget)
}

/// When the message was sent (PR_CLIENT_SUBMIT_TIME, else the delivery time), from the
/// fixed-size properties: a 32-byte header, then 16-byte entries (tag, flags, value).
fn submit_time(file: &mut Cfb<'_>) -> Option<chrono::DateTime<chrono::Utc>> {
    let mut budget = 1 << 20;
    let props = stream(file, "/__properties_version1.0", &mut budget).ok()??;
    let entries = props.get(32..)?;
    let time_of = |wanted: u16| {
        entries.chunks_exact(16).find_map(|e| {
            let kind = u16::from_le_bytes([e[0], e[1]]);
            let id = u16::from_le_bytes([e[2], e[3]]);
            (kind == 0x0040 && id == wanted).then(|| {
                let ticks = u64::from_le_bytes(e[8..16].try_into().ok()?);
                // FILETIME: 100 ns ticks since 1601-01-01.
                let unix = i64::try_from(ticks / 10_000_000).ok()? - 11_644_473_600;
                chrono::DateTime::from_timestamp(unix, 0)
            })?
        })
    };
    time_of(0x0039).or_else(|| time_of(0x0E06))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::BlockKind;

    fn utf16(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    /// A message with the given streams (path → bytes) and a submit time.
    fn msg(streams: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut file = cfb::CompoundFile::create(Cursor::new(Vec::new())).expect("cfb");
        for (path, data) in streams {
            if let Some((dir, _)) = path.rsplit_once('/')
                && !dir.is_empty()
                && !file.is_storage(dir)
            {
                file.create_storage(dir).expect("storage");
            }
            file.create_stream(path)
                .expect("stream")
                .write_all(data)
                .expect("write");
        }
        let mut props = vec![0u8; 32];
        props.extend(0x0040u16.to_le_bytes());
        props.extend(0x0039u16.to_le_bytes());
        props.extend([0u8; 4]);
        // 2026-03-02 09:30 UTC as FILETIME.
        let ticks = (1_772_443_800u64 + 11_644_473_600) * 10_000_000;
        props.extend(ticks.to_le_bytes());
        file.create_stream("/__properties_version1.0")
            .expect("props")
            .write_all(&props)
            .expect("write");
        file.into_inner().into_inner()
    }

    #[test]
    fn an_outlook_message_reads_like_a_mail_with_its_attachments() {
        let bytes = msg(&[
            ("/__substg1.0_0037001F", utf16("Travel policy 2026")),
            ("/__substg1.0_0C1A001F", utf16("Dana Lee")),
            ("/__substg1.0_5D01001F", utf16("dana@example.com")),
            ("/__substg1.0_0E04001F", utf16("All staff")),
            (
                "/__substg1.0_1000001F",
                utf16("Book trains for trips under 500 km.\r\n\r\n出差需提前申请。\0"),
            ),
            (
                "/__attach_version1.0_#00000000/__substg1.0_3707001F",
                utf16("rates.md"),
            ),
            (
                "/__attach_version1.0_#00000000/__substg1.0_37010102",
                b"# Rates\n\nHotel: 120 EUR a night.".to_vec(),
            ),
            (
                "/__attach_version1.0_#00000001/__substg1.0_3707001F",
                utf16("photo.jpg"),
            ),
            (
                "/__attach_version1.0_#00000001/__substg1.0_37010102",
                b"\xFF\xD8\xFF\xE0".to_vec(),
            ),
        ]);
        let doc = parse(&bytes, &Limits::default(), Attachments::Inline).expect("parses");
        assert_eq!(doc.title.as_deref(), Some("Travel policy 2026"));
        assert_eq!(doc.meta.authors, ["Dana Lee <dana@example.com>"]);
        assert_eq!(doc.meta.recipients, ["All staff"]);
        assert_eq!(doc.meta.date.as_deref(), Some("2026-03-02T09:30:00+00:00"));
        let got: Vec<(BlockKind, &str)> = doc
            .blocks
            .iter()
            .map(|b| (b.kind, b.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (BlockKind::Heading { level: 1 }, "Travel policy 2026"),
                (
                    BlockKind::Paragraph,
                    "From: Dana Lee <dana@example.com>\nTo: All staff\nDate: 2026-03-02 09:30 UTC"
                ),
                (BlockKind::Paragraph, "Book trains for trips under 500 km."),
                (BlockKind::Paragraph, "出差需提前申请。"),
                (BlockKind::Heading { level: 2 }, "Attachment: rates.md"),
                (BlockKind::Heading { level: 3 }, "Rates"),
                (BlockKind::Paragraph, "Hotel: 120 EUR a night."),
                (BlockKind::Heading { level: 2 }, "Attachment: photo.jpg"),
                (
                    BlockKind::Note,
                    "(a picture: OCR does not read mail attachments)"
                ),
            ]
        );
        let apart = parse(&bytes, &Limits::default(), Attachments::Apart).expect("parses");
        let names: Vec<&str> = apart.attachments.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["rates.md", "photo.jpg"]);
        assert_eq!(
            apart.attachments[0].bytes,
            b"# Rates\n\nHotel: 120 EUR a night."
        );
        assert!(
            apart
                .plain_text()
                .ends_with("Attachments: rates.md, photo.jpg"),
            "{}",
            apart.plain_text()
        );
    }

    #[test]
    fn an_html_only_message_and_broken_files() {
        let html = msg(&[
            ("/__substg1.0_0037001F", utf16("Notice")),
            (
                "/__substg1.0_10130102",
                b"<html><body><p>Office closed on Friday.</p></body></html>".to_vec(),
            ),
        ]);
        let doc = parse(&html, &Limits::default(), Attachments::Inline).expect("parses");
        assert!(
            doc.plain_text().contains("Office closed on Friday."),
            "{doc:?}"
        );

        for (name, bytes) in [
            ("not a compound file", b"hello".to_vec()),
            (
                "a compound file without a message",
                msg(&[("/Other", b"x".to_vec())]),
            ),
        ] {
            let err = parse(&bytes, &Limits::default(), Attachments::Inline).expect_err(name);
            assert!(matches!(err, ParseError::Invalid { .. }), "{name}: {err}");
        }
        let tight = Limits {
            max_decompressed_bytes: 10,
            ..Limits::default()
        };
        assert!(matches!(
            parse(&html, &tight, Attachments::Inline),
            Err(ParseError::LimitExceeded(_))
        ));
    }
}
