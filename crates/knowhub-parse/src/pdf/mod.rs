//! PDF text extraction.
//!
//! lopdf loads (and, with the empty password, decrypts) the file; [`fixup`] rewrites what
//! pdf-extract would choke on; pdf-extract interprets the content streams and reports every
//! glyph with its position to our [`layout::Collector`]; [`layout`] rebuilds reading order and
//! paragraphs, after [`furniture`] dropped running headers, footers and page numbers; headings
//! are paragraphs set clearly larger than the body text.
//!
//! pdf-extract panics on many malformed inputs, so every call into it runs under
//! `catch_unwind`: a panic costs at most the rest of one page, never the process.

mod fixup;
mod furniture;
mod images;
mod layout;
mod repair;

pub use images::{PageImage, Raster, page_images};

use std::collections::{BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};

use lopdf::{Document, Object, ObjectId};

use crate::{Block, BlockKind, Limits, ParseError, ParseNotice, ParsedDocument};
use layout::{Collector, Para, size_key};

const FORMAT: &str = "PDF";

pub(crate) fn parse(bytes: &[u8], limits: &Limits) -> Result<ParsedDocument, ParseError> {
    let head = &bytes[..bytes.len().min(1024)];
    if !head.windows(5).any(|w| w == b"%PDF-") {
        return Err(ParseError::invalid(FORMAT, "no %PDF- header"));
    }
    let mut doc = open(bytes)?;
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(ParseError::invalid(FORMAT, "no pages found"));
    }
    let page_count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    if page_count > limits.max_pages {
        return Err(ParseError::LimitExceeded(format!(
            "{page_count} pages (limit {})",
            limits.max_pages
        )));
    }
    let title = catch_unwind(AssertUnwindSafe(|| title(&doc))).unwrap_or(None);
    let info = match catch_unwind(AssertUnwindSafe(|| fixup::fixup(&mut doc))) {
        Ok(info) => info,
        Err(_) => return Err(ParseError::invalid(FORMAT, "the file structure is corrupt")),
    };

    let mut collector = extract(&doc, page_count, limits);
    // Running headers, footers and page numbers would only pollute chunks and citations.
    let _ = catch_unwind(AssertUnwindSafe(|| furniture::strip(&mut collector.pages)));

    let mut hist: HashMap<u32, usize> = HashMap::new();
    for p in &collector.pages {
        p.size_histogram(&mut hist);
    }
    let body_key = hist
        .iter()
        .max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k)))
        .map(|(k, _)| *k);

    let mut with_text: BTreeSet<u32> = BTreeSet::new();
    let mut page_paras: Vec<(u32, Vec<Para>)> = Vec::new();
    for p in &collector.pages {
        if !p.has_text() || with_text.contains(&p.page) {
            continue;
        }
        let paras = catch_unwind(AssertUnwindSafe(|| layout::layout(p))).unwrap_or_default();
        if paras.iter().any(|para| !para.text.trim().is_empty()) {
            with_text.insert(p.page);
            page_paras.push((p.page, paras));
        }
    }

    let mut out = ParsedDocument {
        title,
        page_count: Some(page_count),
        ..ParsedDocument::default()
    };
    if with_text.is_empty() {
        // Nothing readable anywhere: scanned, or text drawn as outlines. Either way it needs OCR.
        out.pages_without_text = (1..=page_count).collect();
        out.notices.push(ParseNotice::NoTextLayer);
        return Ok(out);
    }
    for (&num, &id) in &pages {
        if !with_text.contains(&num) && page_has_image(&doc, id, &info) {
            out.pages_without_text.push(num);
        }
    }
    if !out.pages_without_text.is_empty() {
        out.notices.push(ParseNotice::NoTextLayer);
    }

    let levels = heading_levels(&page_paras, body_key);
    for (page, paras) in page_paras {
        for para in paras {
            let kind = match levels.get(&size_key(para.size)) {
                Some(&level) if is_heading(&para) => BlockKind::Heading { level },
                _ => BlockKind::Paragraph,
            };
            out.blocks.push(Block::new(kind, para.text).on_page(page));
        }
    }
    Ok(out)
}

/// Loads the document, repairing a broken cross-reference table and opening files encrypted
/// with the empty password; a real password is an error.
fn open(bytes: &[u8]) -> Result<Document, ParseError> {
    let first = load(bytes);
    // lopdf loads a file whose empty user password fails as an empty, unencrypted-looking
    // document, and a repaired copy could then open as garbage: ask the security handler first.
    if first.as_ref().is_ok_and(empty_password_rejected) {
        return Err(ParseError::PasswordRequired);
    }
    let mut doc = match first {
        Ok(doc) if doc.is_encrypted() || !doc.get_pages().is_empty() => doc,
        first => {
            // Broken xref tables are common; rebuild one by scanning, as viewers do.
            let repaired = repair::repair(bytes).map(|b| load(&b));
            match (repaired, first) {
                (Some(Ok(doc)), _) if doc.is_encrypted() || !doc.get_pages().is_empty() => doc,
                (_, Ok(doc)) => doc,
                (_, Err(e)) => return Err(e),
            }
        }
    };
    if empty_password_rejected(&doc) {
        return Err(ParseError::PasswordRequired);
    }
    if let Ok(Object::Dictionary(enc)) = doc.trailer.get(b"Encrypt").cloned() {
        // lopdf only understands an indirect /Encrypt; move a direct one out and decrypt.
        let id = doc.add_object(Object::Dictionary(enc));
        doc.trailer.set("Encrypt", Object::Reference(id));
        let opened = catch_unwind(AssertUnwindSafe(|| doc.decrypt("")));
        if !matches!(opened, Ok(Ok(()))) {
            return Err(ParseError::PasswordRequired);
        }
    }
    if doc.is_encrypted() {
        // lopdf already tried the empty user password; it only stays encrypted when that failed.
        return Err(ParseError::PasswordRequired);
    }
    Ok(doc)
}

/// Runs pdf-extract over every page. A panic or error on one page loses only the rest of that
/// page: extraction resumes page by page after it.
fn extract(doc: &Document, page_count: u32, limits: &Limits) -> Collector {
    let mut collector = Collector {
        max_text: limits.max_text_bytes,
        ..Collector::default()
    };
    let whole = catch_unwind(AssertUnwindSafe(|| {
        pdf_extract::output_doc(doc, &mut collector)
    }));
    if matches!(whole, Ok(Ok(()))) {
        return collector;
    }
    let mut next = collector.pages.last().map_or(1, |p| p.page + 1);
    while next <= page_count && collector.total_text <= collector.max_text {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            pdf_extract::output_doc_page(doc, &mut collector, next)
        }));
        next += 1;
    }
    collector
}

fn load(bytes: &[u8]) -> Result<Document, ParseError> {
    match catch_unwind(|| Document::load_mem(bytes)) {
        Ok(Ok(doc)) => Ok(doc),
        Ok(Err(e)) => Err(load_error(bytes, e)),
        Err(_) => Err(ParseError::invalid(FORMAT, "the file structure is corrupt")),
    }
}

/// Whether the standard security handler rejects the empty password, both as the user and as
/// the owner password: then the file cannot be opened without one.
fn empty_password_rejected(doc: &Document) -> bool {
    let enc = match doc.trailer.get(b"Encrypt") {
        Ok(Object::Dictionary(d)) => d.clone(),
        Ok(Object::Reference(id)) => match doc.get_dictionary(*id) {
            Ok(d) => d.clone(),
            Err(_) => return false,
        },
        _ => return false,
    };
    // lopdf only reads an indirect /Encrypt; check on a small copy that has one.
    let mut probe = Document::new();
    let id = probe.add_object(Object::Dictionary(enc));
    probe.trailer = doc.trailer.clone();
    probe.trailer.set("Encrypt", Object::Reference(id));
    matches!(
        catch_unwind(AssertUnwindSafe(|| probe.authenticate_raw_password(b""))),
        Ok(Err(lopdf::Error::Decryption(
            lopdf::encryption::DecryptionError::IncorrectPassword
        )))
    )
}

fn load_error(bytes: &[u8], e: lopdf::Error) -> ParseError {
    let text = e.to_string();
    if bytes.windows(8).any(|w| w == b"/Encrypt") && text.to_ascii_lowercase().contains("password")
    {
        return ParseError::PasswordRequired;
    }
    ParseError::invalid(FORMAT, text)
}

/// Sizes of heading candidates, largest first, mapped to levels 1, 2, 3…
fn heading_levels(pages: &[(u32, Vec<Para>)], body_key: Option<u32>) -> HashMap<u32, u8> {
    let Some(body) = body_key else {
        return HashMap::new();
    };
    let body_size = body as f32 / 2.0;
    let mut keys: BTreeSet<u32> = BTreeSet::new();
    for (_, paras) in pages {
        for p in paras {
            if p.size >= body_size * 1.15 + 0.5 && is_heading(p) {
                keys.insert(size_key(p.size));
            }
        }
    }
    keys.iter()
        .rev()
        .enumerate()
        .map(|(i, k)| (*k, (i + 1).min(6) as u8))
        .collect()
}

/// Whether a (large-type) paragraph reads like a heading rather than a pull quote or a logo.
fn is_heading(p: &Para) -> bool {
    let text = p.text.trim();
    let chars = text.chars().count();
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    // Diagram labels are often set large too; headings start with a capital or a number.
    let starts_well = text
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || !c.is_ascii());
    p.lines <= 3 && chars <= 160 && letters >= 2 && starts_well && !text.ends_with([',', ';'])
}

fn page_has_image(doc: &Document, page: ObjectId, info: &fixup::FixupInfo) -> bool {
    let mut dict = doc.get_dictionary(page).ok();
    // Resources are inheritable; look up the page tree for them.
    for _ in 0..32 {
        let Some(d) = dict else { break };
        if d.has(b"Resources") {
            if let Some(x) = fixup::xobject_dict(doc, d) {
                for (_, o) in x.iter() {
                    if let Object::Reference(r) = o
                        && (info.images.contains(r) || info.forms_with_images.contains(r))
                    {
                        return true;
                    }
                }
            }
            break;
        }
        dict = d
            .get(b"Parent")
            .and_then(Object::as_reference)
            .and_then(|p| doc.get_dictionary(p))
            .ok();
    }
    // Inline images (BI … ID … EI) live in the content stream itself.
    doc.get_page_content(page).is_ok_and(|c| {
        c.windows(4)
            .any(|w| w[0].is_ascii_whitespace() && &w[1..3] == b"BI" && w[3].is_ascii_whitespace())
    })
}

/// The document title from the Info dictionary, else from XMP `dc:title`.
fn title(doc: &Document) -> Option<String> {
    let from_info = doc
        .trailer
        .get(b"Info")
        .ok()
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_dict().ok())
        .and_then(|d| d.get(b"Title").ok())
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_str().ok())
        .map(decode_text_string)
        .filter(|t| !t.trim().is_empty());
    if from_info.is_some() {
        return from_info;
    }
    let catalog = doc.catalog().ok()?;
    let meta = doc.dereference(catalog.get(b"Metadata").ok()?).ok()?.1;
    let stream = meta.as_stream().ok()?;
    let xml = stream
        .decompressed_content()
        .unwrap_or_else(|_| stream.content.clone());
    xmp_title(&String::from_utf8_lossy(&xml))
}

/// Decodes a PDF text string: UTF-16BE (with BOM), UTF-8 (with BOM), else PDFDocEncoding.
fn decode_text_string(b: &[u8]) -> String {
    if let Some(rest) = b.strip_prefix(&[0xfe, 0xff]) {
        let units: Vec<u16> = rest
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        return String::from_utf16_lossy(&units);
    }
    if let Some(rest) = b.strip_prefix(&[0xef, 0xbb, 0xbf]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    // PDFDocEncoding agrees with Latin-1 for the printable range that titles use.
    b.iter().map(|&c| char::from(c)).collect()
}

fn xmp_title(xml: &str) -> Option<String> {
    let start = xml.find("<dc:title")?;
    let rest = &xml[start..];
    let end = rest.find("</dc:title>")?;
    let inner = &rest[..end];
    let li = inner.find("<rdf:li").map_or(inner, |i| &inner[i..]);
    let open_end = li.find('>')? + 1;
    let body = &li[open_end..];
    let body = body.find('<').map_or(body, |i| &body[..i]);
    let text = body
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests;
