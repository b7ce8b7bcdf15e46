//! ODP (OpenDocument presentation) parser.
//!
//! Pages come in document order, each a page so that citations name the slide: the title
//! frame as a heading, the other frames' text in reading order (top to bottom, then left to
//! right), tables as rows of cells, and the speaker notes as a note. Read through
//! [`BoundedZip`], so zip bombs stop at the decompression budget.

use crate::archive::BoundedZip;
use crate::docx::xml::{self, Child, Node};
use crate::{Block, BlockKind, Limits, ParseError, ParsedDocument};

const FORMAT: &str = "ODP";

pub(crate) fn parse(bytes: &[u8], limits: &Limits) -> Result<ParsedDocument, ParseError> {
    let mut zip = BoundedZip::open(bytes, FORMAT, limits)?;
    let content = zip
        .read("content.xml")?
        .ok_or_else(|| ParseError::invalid(FORMAT, "no content.xml part"))?;
    let root = xml::parse(&content, "content.xml", FORMAT, limits)?;
    drop(content);
    let presentation = root
        .child("document-content")
        .and_then(|d| d.child("body"))
        .and_then(|b| b.child("presentation"))
        .ok_or_else(|| {
            ParseError::invalid(
                FORMAT,
                "content.xml holds no presentation (not an ODP file)",
            )
        })?;
    let mut doc = ParsedDocument::default();
    let mut page = 0u32;
    for slide in presentation.elems().filter(|n| &*n.name == "page") {
        page += 1;
        slide_blocks(slide, page, &mut doc.blocks);
    }
    doc.page_count = Some(page);
    doc.title = zip
        .read("meta.xml")
        .ok()
        .flatten()
        .and_then(|meta| xml::parse(&meta, "meta.xml", FORMAT, limits).ok())
        .and_then(|m| find(&m, "title").map(|t| t.text().trim().to_owned()))
        .filter(|t| !t.is_empty());
    Ok(doc)
}

fn slide_blocks(slide: &Node, page: u32, out: &mut Vec<Block>) {
    let mut frames: Vec<&Node> = slide
        .elems()
        .filter(|n| matches!(&*n.name, "frame" | "custom-shape" | "g"))
        .collect();
    frames.sort_by(|a, b| {
        let (ay, ax) = position(a);
        let (by, bx) = position(b);
        ay.total_cmp(&by).then(ax.total_cmp(&bx))
    });
    // The title first, wherever it sits.
    frames.sort_by_key(|f| f.attr("class") != Some("title"));
    for frame in frames {
        let class = frame.attr("class").unwrap_or_default();
        if matches!(class, "date-time" | "footer" | "page-number" | "header") {
            continue;
        }
        if class == "title" {
            let title = paragraphs(frame).join(" ");
            if !title.trim().is_empty() {
                out.push(Block::new(BlockKind::Heading { level: 1 }, title).on_page(page));
            }
            continue;
        }
        content_blocks(frame, page, out);
    }
    if let Some(notes) = slide.child("notes") {
        let text = notes
            .elems()
            .filter(|f| f.attr("class") != Some("page"))
            .flat_map(paragraphs)
            .collect::<Vec<_>>()
            .join("\n");
        if !text.trim().is_empty() {
            out.push(Block::new(BlockKind::Note, text).on_page(page));
        }
    }
}

/// Paragraphs and table rows inside a frame, in order.
fn content_blocks(node: &Node, page: u32, out: &mut Vec<Block>) {
    for child in node.elems() {
        match &*child.name {
            "p" | "h" => {
                let text = inline_text(child);
                if !text.trim().is_empty() {
                    out.push(Block::paragraph(text).on_page(page));
                }
            }
            "list-item" => {
                for p in paragraphs(child) {
                    out.push(Block::new(BlockKind::ListItem, p).on_page(page));
                }
            }
            "table" => {
                for row in descendants(child, "table-row") {
                    let cells: Vec<String> = row
                        .elems()
                        .filter(|c| &*c.name == "table-cell")
                        .map(|c| paragraphs(c).join(" "))
                        .collect();
                    if cells.iter().any(|c| !c.trim().is_empty()) {
                        out.push(Block::new(BlockKind::TableRow, cells.join(" | ")).on_page(page));
                    }
                }
            }
            _ => content_blocks(child, page, out),
        }
    }
}

/// The text of every paragraph below `node`.
fn paragraphs(node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    for child in node.elems() {
        if matches!(&*child.name, "p" | "h") {
            let text = inline_text(child);
            if !text.trim().is_empty() {
                out.push(text);
            }
        } else {
            out.extend(paragraphs(child));
        }
    }
    out
}

/// A paragraph's text: ODF writes runs of spaces, tabs and line breaks as elements.
fn inline_text(node: &Node) -> String {
    let mut out = String::new();
    collect(node, &mut out);
    out
}

fn collect(node: &Node, out: &mut String) {
    for child in &node.children {
        match child {
            Child::Text(t) => out.push_str(t),
            Child::Elem(e) => match &*e.name {
                "s" => {
                    let n = e.attr("c").and_then(|c| c.parse().ok()).unwrap_or(1usize);
                    out.extend(std::iter::repeat_n(' ', n.min(100)));
                }
                "tab" => out.push('\t'),
                "line-break" => out.push('\n'),
                // Annotations are comments, not the slide's text.
                "annotation" => {}
                _ => collect(e, out),
            },
        }
    }
}

fn descendants<'a>(node: &'a Node, name: &str) -> Vec<&'a Node> {
    let mut out = Vec::new();
    for child in node.elems() {
        if &*child.name == name {
            out.push(child);
        } else {
            out.extend(descendants(child, name));
        }
    }
    out
}

fn find<'a>(node: &'a Node, name: &str) -> Option<&'a Node> {
    node.elems().find_map(|c| {
        if &*c.name == name {
            Some(c)
        } else {
            find(c, name)
        }
    })
}

/// A frame's top and left in millimetres (ODF lengths carry their unit: "2.5cm", "1in").
fn position(frame: &Node) -> (f64, f64) {
    let length = |name: &str| -> f64 {
        let Some(v) = frame.attr(name) else {
            return 0.0;
        };
        let split = v
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .unwrap_or(v.len());
        let number: f64 = v[..split].parse().unwrap_or(0.0);
        number
            * match &v[split..] {
                "cm" => 10.0,
                "in" => 25.4,
                "pt" => 25.4 / 72.0,
                "pc" => 25.4 / 6.0,
                _ => 1.0,
            }
    };
    (length("y"), length("x"))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn odp(content: &str) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        let options = zip::write::SimpleFileOptions::default();
        zip.start_file("mimetype", options).expect("zip");
        zip.write_all(b"application/vnd.oasis.opendocument.presentation")
            .expect("zip");
        zip.start_file("content.xml", options).expect("zip");
        zip.write_all(content.as_bytes()).expect("zip");
        zip.start_file("meta.xml", options).expect("zip");
        zip.write_all(
            br#"<office:document-meta xmlns:office="o" xmlns:dc="d"><office:meta><dc:title>Quarterly plan</dc:title></office:meta></office:document-meta>"#,
        )
        .expect("zip");
        zip.finish().expect("zip");
        out.into_inner()
    }

    const CONTENT: &str = r#"<office:document-content xmlns:office="o" xmlns:draw="d" xmlns:text="t" xmlns:svg="s" xmlns:presentation="p" xmlns:table="tb">
<office:body><office:presentation>
<draw:page draw:name="one">
  <draw:frame presentation:class="outline" svg:x="2cm" svg:y="8cm"><draw:text-box>
    <text:list><text:list-item><text:p>Second<text:s text:c="2"/>point</text:p></text:list-item></text:list>
  </draw:text-box></draw:frame>
  <draw:frame svg:x="2cm" svg:y="4cm"><draw:text-box><text:p>First point</text:p></draw:text-box></draw:frame>
  <draw:frame presentation:class="title" svg:x="2cm" svg:y="1cm"><draw:text-box><text:p>Leave policy</text:p></draw:text-box></draw:frame>
  <draw:frame presentation:class="page-number"><draw:text-box><text:p>1</text:p></draw:text-box></draw:frame>
  <presentation:notes><draw:page-thumbnail presentation:class="page"/>
    <draw:frame presentation:class="notes"><draw:text-box><text:p>Say it slowly.</text:p></draw:text-box></draw:frame>
  </presentation:notes>
</draw:page>
<draw:page draw:name="two">
  <draw:frame svg:x="1in" svg:y="1in"><table:table>
    <table:table-row><table:table-cell><text:p>Kind</text:p></table:table-cell><table:table-cell><text:p>Days</text:p></table:table-cell></table:table-row>
    <table:table-row><table:table-cell><text:p>年假</text:p></table:table-cell><table:table-cell><text:p>15</text:p></table:table-cell></table:table-row>
  </table:table></draw:frame>
</draw:page>
</office:presentation></office:body></office:document-content>"#;

    #[test]
    fn slides_are_pages_with_title_body_tables_and_notes_in_order() {
        let doc = parse(&odp(CONTENT), &Limits::default()).expect("parses");
        let got: Vec<(BlockKind, &str, Option<u32>)> = doc
            .blocks
            .iter()
            .map(|b| (b.kind, b.text.as_str(), b.page))
            .collect();
        assert_eq!(
            got,
            vec![
                (BlockKind::Heading { level: 1 }, "Leave policy", Some(1)),
                (BlockKind::Paragraph, "First point", Some(1)),
                (BlockKind::ListItem, "Second  point", Some(1)),
                (BlockKind::Note, "Say it slowly.", Some(1)),
                (BlockKind::TableRow, "Kind | Days", Some(2)),
                (BlockKind::TableRow, "年假 | 15", Some(2)),
            ]
        );
        assert_eq!(doc.page_count, Some(2));
        assert_eq!(doc.title.as_deref(), Some("Quarterly plan"));
    }

    #[test]
    fn broken_files_are_clear_errors() {
        for (name, bytes) in [
            ("not a zip", b"hello".to_vec()),
            ("no presentation", odp("<office:document-content/>")),
            ("truncated", odp(CONTENT)[..200].to_vec()),
        ] {
            let err = parse(&bytes, &Limits::default()).expect_err(name);
            assert!(matches!(err, ParseError::Invalid { .. }), "{name}: {err}");
        }
    }
}
