//! PPTX (PresentationML) parser.
//!
//! Slides come in the presentation's order (`p:sldIdLst`), each slide a page so that citations
//! name the slide: its title as a heading, the text of its other shapes in reading order (top
//! to bottom, then left to right), tables as header-aware rows, and its speaker notes as a note.
//! Hidden slides and the date, footer and slide-number placeholders are left out. Every part is
//! read through [`BoundedZip`], so zip bombs stop at the decompression budget.

use crate::archive::BoundedZip;
use crate::docx::opc::{self, Package};
use crate::docx::xml::{self, Node};
use crate::docx::{OLE_MAGIC, ole_is_encrypted_package};
use crate::{Block, BlockKind, Limits, ParseError, ParsedDocument};

const FORMAT: &str = "PPTX";

/// Placeholders whose text is slide furniture, not content.
const FURNITURE: &[&str] = &["dt", "ftr", "sldNum", "hdr", "sldImg"];

pub(crate) fn parse(bytes: &[u8], limits: &Limits) -> Result<ParsedDocument, ParseError> {
    if bytes.starts_with(&OLE_MAGIC) {
        if ole_is_encrypted_package(bytes) {
            return Err(ParseError::PasswordRequired);
        }
        return Err(ParseError::invalid(
            FORMAT,
            "this is a legacy PowerPoint 97-2003 (.ppt) or other OLE file; re-save it as .pptx",
        ));
    }
    let mut zip = BoundedZip::open(bytes, FORMAT, limits)?;
    let package = Package::load(&mut zip, limits)?;
    let main = package
        .office_document()
        .unwrap_or_else(|| "ppt/presentation.xml".to_string());
    let data = opc::read_part(&mut zip, &main)?.ok_or_else(|| {
        ParseError::invalid(
            FORMAT,
            "could not find the presentation part (ppt/presentation.xml)",
        )
    })?;
    let root = xml::parse(&data, &main, FORMAT, limits)?;
    drop(data);
    let presentation = root.child("presentation").ok_or_else(|| {
        let what = match root.elems().next().map(|n| &*n.name) {
            Some("document") => " (this is a Word document renamed to .pptx)",
            Some("workbook") => " (this is a spreadsheet renamed to .pptx)",
            _ => "",
        };
        ParseError::invalid(FORMAT, format!("'{main}' is not a presentation{what}"))
    })?;
    let rels = package.part_relationships(&mut zip, &main, limits)?;
    // A slide is named by its relationship id (`r:id`); its other `id` is a number.
    let slides: Vec<String> = presentation
        .child("sldIdLst")
        .map(|list| {
            list.elems()
                .filter(|n| &*n.name == "sldId")
                .filter_map(|s| s.attrs_named("id").find_map(|id| rels.by_id(id)))
                .collect()
        })
        .unwrap_or_default();
    if slides.len() as u64 > u64::from(limits.max_pages) {
        return Err(ParseError::LimitExceeded(format!(
            "{} slides (limit {})",
            slides.len(),
            limits.max_pages
        )));
    }

    let mut blocks = Vec::new();
    let mut first_title = None;
    for (i, slide) in slides.iter().enumerate() {
        let page = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let Some(root) = opc::read_optional_xml(&mut zip, slide, FORMAT, limits)? else {
            continue;
        };
        let Some(sld) = root.child("sld") else {
            continue;
        };
        if sld.attr("show") == Some("0") {
            continue;
        }
        let mut shapes = Vec::new();
        if let Some(tree) = sld.child("cSld").and_then(|c| c.child("spTree")) {
            collect_shapes(tree, None, &mut shapes);
        }
        order_for_reading(&mut shapes);
        for shape in &shapes {
            if shape.title && first_title.is_none() {
                first_title = shape.paragraphs.first().map(|(_, t)| t.clone());
            }
            shape.push_blocks(page, &mut blocks);
        }
        let slide_rels = package.part_relationships(&mut zip, slide, limits)?;
        if let Some(notes) = slide_rels.target("notesSlide")
            && let Some(root) = opc::read_optional_xml(&mut zip, &notes, FORMAT, limits)?
            && let Some(tree) = root
                .child("notes")
                .and_then(|n| n.child("cSld"))
                .and_then(|c| c.child("spTree"))
        {
            let mut shapes = Vec::new();
            collect_shapes(tree, None, &mut shapes);
            let text: Vec<String> = shapes
                .into_iter()
                .filter(|s| s.table.is_empty())
                .flat_map(|s| s.paragraphs.into_iter().map(|(_, t)| t))
                .collect();
            if !text.is_empty() {
                blocks.push(Block::new(BlockKind::Note, text.join("\n")).on_page(page));
            }
        }
    }

    let core_title = package.core_title(&mut zip, limits)?;
    Ok(ParsedDocument {
        title: core_title.or(first_title),
        blocks,
        page_count: Some(u32::try_from(slides.len()).unwrap_or(u32::MAX)),
        ..ParsedDocument::default()
    })
}

/// The text of one shape (a text box, a placeholder, a table).
#[derive(Debug, Default)]
struct Shape {
    title: bool,
    /// A body placeholder: its paragraphs are bullet points unless they say otherwise.
    bulleted_body: bool,
    /// Top-left corner in EMU, when the slide gives it (placeholders often inherit theirs).
    at: Option<(i64, i64)>,
    /// (has a bullet, text) per paragraph.
    paragraphs: Vec<(bool, String)>,
    /// Rendered table rows.
    table: Vec<String>,
}

impl Shape {
    fn push_blocks(&self, page: u32, out: &mut Vec<Block>) {
        for (bullet, text) in &self.paragraphs {
            let kind = if self.title {
                BlockKind::Heading { level: 1 }
            } else if *bullet {
                BlockKind::ListItem
            } else {
                BlockKind::Paragraph
            };
            out.push(Block::new(kind, text.clone()).on_page(page));
        }
        for row in &self.table {
            out.push(Block::new(BlockKind::TableRow, row.clone()).on_page(page));
        }
    }
}

/// Shapes of a shape tree in document order; a group's members take the group's position.
fn collect_shapes(tree: &Node, group_at: Option<(i64, i64)>, out: &mut Vec<Shape>) {
    for el in tree.elems() {
        match &*el.name {
            "sp" => {
                let placeholder = el
                    .child("nvSpPr")
                    .and_then(|n| n.child("nvPr"))
                    .and_then(|n| n.child("ph"));
                let kind = placeholder.map(|ph| ph.attr("type").unwrap_or("body"));
                if kind.is_some_and(|k| FURNITURE.contains(&k)) {
                    continue;
                }
                let mut shape = Shape {
                    title: matches!(kind, Some("title" | "ctrTitle")),
                    bulleted_body: matches!(kind, Some("body" | "obj")),
                    at: group_at.or_else(|| offset(el.child("spPr"))),
                    ..Shape::default()
                };
                if let Some(body) = el.child("txBody") {
                    shape.paragraphs = paragraphs(body, shape.bulleted_body);
                }
                if !shape.paragraphs.is_empty() {
                    out.push(shape);
                }
            }
            "grpSp" => {
                let at = group_at.or_else(|| offset(el.child("grpSpPr")));
                collect_shapes(el, at, out);
            }
            "graphicFrame" => {
                let Some(tbl) = el
                    .child("graphic")
                    .and_then(|g| g.child("graphicData"))
                    .and_then(|d| d.child("tbl"))
                else {
                    continue;
                };
                let table = table_rows(tbl);
                if !table.is_empty() {
                    out.push(Shape {
                        at: group_at.or_else(|| offset(Some(el))),
                        table,
                        ..Shape::default()
                    });
                }
            }
            // Newer content with a fallback for older readers: the first branch holds it.
            "AlternateContent" => {
                if let Some(branch) = el.elems().next() {
                    collect_shapes(branch, group_at, out);
                }
            }
            _ => {}
        }
    }
}

/// `a:off` of a shape's transform (`p:spPr/a:xfrm`, or `p:xfrm` of a graphic frame).
fn offset(props: Option<&Node>) -> Option<(i64, i64)> {
    let off = props?.child("xfrm")?.child("off")?;
    Some((off.attr("y")?.parse().ok()?, off.attr("x")?.parse().ok()?))
}

/// Titles first, then the other shapes top to bottom and left to right. When a shape's
/// position is inherited from the layout (not in the slide), the slide's own order stands.
fn order_for_reading(shapes: &mut [Shape]) {
    let all_placed = shapes.iter().all(|s| s.title || s.at.is_some());
    shapes.sort_by_key(|s| {
        let at = if all_placed { s.at } else { None };
        (!s.title, at)
    });
}

/// The paragraphs of a text body: runs, fields and line breaks joined; empty ones dropped.
fn paragraphs(body: &Node, bulleted_body: bool) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    for p in body.elems().filter(|n| &*n.name == "p") {
        let mut text = String::new();
        for el in p.elems() {
            match &*el.name {
                "r" | "fld" => {
                    if let Some(t) = el.child("t") {
                        text.push_str(&t.text());
                    }
                }
                "br" => text.push('\n'),
                _ => {}
            }
        }
        let text = text.trim().to_string();
        if text.is_empty() {
            continue;
        }
        let props = p.child("pPr");
        let bullet = match props {
            Some(pr) if pr.child("buNone").is_some() => false,
            Some(pr) if pr.child("buChar").is_some() || pr.child("buAutoNum").is_some() => true,
            _ => bulleted_body,
        };
        out.push((bullet, text));
    }
    out
}

/// Table rows as text: `header: value; …` when the table marks its first row as a header,
/// else cells joined by ` | `.
fn table_rows(tbl: &Node) -> Vec<String> {
    let rows: Vec<Vec<String>> = tbl
        .elems()
        .filter(|n| &*n.name == "tr")
        .map(|tr| {
            tr.elems()
                .filter(|n| &*n.name == "tc")
                .map(|tc| {
                    tc.child("txBody")
                        .map(|b| {
                            paragraphs(b, false)
                                .into_iter()
                                .map(|(_, t)| t.split_whitespace().collect::<Vec<_>>().join(" "))
                                .collect::<Vec<_>>()
                                .join(" ")
                        })
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect();
    let header_row = tbl.child("tblPr").and_then(|p| p.attr("firstRow")) == Some("1");
    let (header, data) = match rows.split_first() {
        Some((first, rest)) if header_row && !rest.is_empty() => (Some(first), rest),
        _ => (None, &rows[..]),
    };
    data.iter()
        .filter_map(|cells| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .filter(|(_, text)| !text.is_empty())
                .map(
                    |(i, text)| match header.and_then(|h| h.get(i)).filter(|n| !n.is_empty()) {
                        Some(name) if name != text => format!("{name}: {text}"),
                        _ => text.clone(),
                    },
                )
                .collect();
            (!parts.is_empty()).then(|| parts.join(if header.is_some() { "; " } else { " | " }))
        })
        .collect()
}

#[cfg(test)]
mod tests;
