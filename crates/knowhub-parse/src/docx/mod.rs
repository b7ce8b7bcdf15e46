//! DOCX (WordprocessingML) parser.
//!
//! The main part is found through the package relationships (so renamed parts and strict OOXML
//! work), then walked as a tree: paragraphs become headings, list items or paragraphs according
//! to their style; tables become one header-aware row block each; footnotes, endnotes, comments
//! and text boxes become notes. Every part is read through [`BoundedZip`], so zip bombs stop at
//! the decompression budget.

mod body;
pub(crate) mod opc;
mod styles;
pub(crate) mod xml;

#[cfg(test)]
mod tests;

use crate::archive::BoundedZip;
use crate::{Block, BlockKind, Limits, ParseError, ParsedDocument};

const FORMAT: &str = "DOCX";

/// Signature of OLE compound files (legacy `.doc`/`.xls`, and encrypted OOXML packages).
pub(crate) const OLE_MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

/// Whether an OLE compound file is an encrypted OOXML package.
///
/// Office wraps a password-protected DOCX/XLSX in a compound file whose directory has an
/// `EncryptedPackage` stream (MS-OFFCRYPTO). Directory entry names are UTF-16LE, so looking
/// for that name is enough without a full CFB reader.
pub(crate) fn ole_is_encrypted_package(bytes: &[u8]) -> bool {
    let needle: Vec<u8> = "EncryptedPackage"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    bytes.windows(needle.len()).any(|w| w == needle.as_slice())
}

pub(crate) fn parse(bytes: &[u8], limits: &Limits) -> Result<ParsedDocument, ParseError> {
    if bytes.starts_with(&OLE_MAGIC) {
        if ole_is_encrypted_package(bytes) {
            return Err(ParseError::PasswordRequired);
        }
        return Err(ParseError::invalid(
            FORMAT,
            "this is a legacy Word 97-2003 (.doc) or other OLE file; re-save it as .docx",
        ));
    }
    if bytes.starts_with(b"{\\rtf") {
        return Err(ParseError::invalid(
            FORMAT,
            "this is an RTF file renamed to .docx; re-save it as .docx",
        ));
    }
    let mut zip = BoundedZip::open(bytes, FORMAT, limits)?;
    let package = opc::Package::load(&mut zip, limits)?;
    let main = package.main_document(&mut zip)?;
    let main_xml = opc::read_part(&mut zip, &main)?.ok_or_else(|| {
        ParseError::invalid(
            FORMAT,
            "could not find main document part (word/document.xml)",
        )
    })?;
    let root = xml::parse(&main_xml, &main, FORMAT, limits)?;
    drop(main_xml);
    let document = root
        .child("document")
        .ok_or_else(|| ParseError::invalid(FORMAT, format!("'{main}' is not a Word document")))?;

    let rels = package.part_relationships(&mut zip, &main, limits)?;
    // Secondary parts are optional: a missing or malformed one loses its feature, not the
    // document.
    let mut optional = |kind: &str, default: &str| -> Result<Option<xml::Node>, ParseError> {
        let name = rels.target(kind).unwrap_or_else(|| default.to_string());
        opc::read_optional_xml(&mut zip, &name, FORMAT, limits)
    };
    let styles = styles::Styles::from_xml(optional("styles", "word/styles.xml")?.as_ref());
    let numbering =
        styles::Numbering::from_xml(optional("numbering", "word/numbering.xml")?.as_ref());
    let footnotes = optional("footnotes", "word/footnotes.xml")?;
    let endnotes = optional("endnotes", "word/endnotes.xml")?;
    let comments = optional("comments", "word/comments.xml")?;
    let core_title = package.core_title(&mut zip, limits)?;

    let mut walker = body::Walker::new(&styles, numbering);
    let mut blocks = Vec::new();
    if let Some(body) = document.child("body") {
        walker.blocks(body, &mut blocks);
    }
    for (part, item) in [
        (&footnotes, "footnote"),
        (&endnotes, "endnote"),
        (&comments, "comment"),
    ] {
        let Some(root) = part else { continue };
        let Some(list) = root.elems().next() else {
            continue;
        };
        for note in list.elems().filter(|n| &*n.name == item) {
            // Separator "notes" hold the horizontal rule between text and notes.
            if matches!(
                note.attr("type"),
                Some("separator" | "continuationSeparator" | "continuationNotice")
            ) {
                continue;
            }
            let mut inner = Vec::new();
            walker.blocks(note, &mut inner);
            let text = body::join_texts(&inner, "\n");
            if !text.trim().is_empty() {
                blocks.push(Block::new(BlockKind::Note, text));
            }
        }
    }
    let title = core_title.or_else(|| walker.title.take());
    Ok(ParsedDocument {
        title,
        blocks,
        ..ParsedDocument::default()
    })
}
