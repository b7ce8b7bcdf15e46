//! Walks the document body: block-level content (paragraphs, tables, content controls) and the
//! inline content of paragraphs (runs, hyperlinks, fields, text boxes, tracked changes).

use crate::{Block, BlockKind};

use super::styles::{self, Numbering, Styles};
use super::xml::{Child, Node};

/// Joins block texts with `sep`, skipping empty ones.
pub(super) fn join_texts(blocks: &[Block], sep: &str) -> String {
    let mut out = String::new();
    for b in blocks {
        let t = b.text.trim();
        if t.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str(sep);
        }
        out.push_str(t);
    }
    out
}

/// Elements whose content is never document text: properties, deleted and moved-away text,
/// field instructions (`HYPERLINK "…"`, `PAGE`), ruby annotations.
const SKIPPED_INLINE: &[&str] = &[
    "pPr",
    "rPr",
    "tblPr",
    "tcPr",
    "trPr",
    "sectPr",
    "del",
    "delText",
    "moveFrom",
    "instrText",
    "delInstrText",
    "fldData",
    "rt",
    "rubyPr",
    "footnoteReference",
    "endnoteReference",
    "commentReference",
    "annotationRef",
    "footnoteRef",
    "endnoteRef",
    "separator",
    "continuationSeparator",
];

#[derive(Debug)]
struct TableCell {
    blocks: Vec<Block>,
    text: String,
    col: usize,
    span: usize,
}

#[derive(Debug)]
pub(super) struct Walker<'a> {
    styles: &'a Styles,
    numbering: Numbering,
    /// Text of the first Title-styled paragraph: the title when core.xml has none.
    pub(super) title: Option<String>,
}

impl<'a> Walker<'a> {
    pub(super) fn new(styles: &'a Styles, numbering: Numbering) -> Walker<'a> {
        Walker {
            styles,
            numbering,
            title: None,
        }
    }

    /// Block-level content of a container (body, table cell, note, text box).
    pub(super) fn blocks(&mut self, node: &Node, out: &mut Vec<Block>) {
        for child in node.elems() {
            match &*child.name {
                "p" => self.paragraph(child, out),
                "tbl" => self.table(child, out),
                "AlternateContent" => {
                    if let Some(branch) = choose_branch(child) {
                        self.blocks(branch, out);
                    }
                }
                name if SKIPPED_INLINE.contains(&name) => {}
                // Content controls, custom XML, inserted or moved-in blocks, and any unknown
                // wrapper: descend so their text is not lost.
                _ => self.blocks(child, out),
            }
        }
    }

    fn paragraph(&mut self, p: &Node, out: &mut Vec<Block>) {
        let ppr = p.child("pPr");
        let style = ppr.and_then(|pp| pp.child_val("pStyle"));
        let mut text = String::new();
        let mut side = Vec::new();
        self.inline(p, &mut text, &mut side);

        let is_title = style.is_some_and(|s| self.styles.is_title(s));
        let level = ppr
            .and_then(styles::outline_level)
            .or_else(|| style.and_then(|s| self.styles.heading_level(s)));
        let numbering = ppr
            .and_then(styles::num_pr)
            .or_else(|| style.and_then(|s| self.styles.numbering(s)));

        if !text.trim().is_empty() {
            let block = if is_title {
                if self.title.is_none() {
                    self.title = Some(text.trim().to_string());
                }
                Block::heading(1, text)
            } else if let Some(level) = level {
                Block::heading(level, text)
            } else if let Some((num_id, ilvl)) = numbering {
                match self.numbering.next_prefix(&num_id, ilvl) {
                    Some(prefix) => Block::new(BlockKind::ListItem, format!("{prefix}{text}")),
                    None => Block::paragraph(text),
                }
            } else {
                Block::paragraph(text)
            };
            out.push(block);
        }
        // Text boxes anchored in this paragraph follow it.
        out.extend(side);
    }

    /// Inline content of a paragraph into `text`; text boxes become notes in `side`.
    fn inline(&mut self, node: &Node, text: &mut String, side: &mut Vec<Block>) {
        for child in &node.children {
            let el = match child {
                Child::Text(t) => {
                    if &*node.name == "t" {
                        text.push_str(t);
                    }
                    continue;
                }
                Child::Elem(el) => el,
            };
            match &*el.name {
                "t" => self.inline(el, text, side),
                "tab" | "ptab" => text.push('\t'),
                "br" | "cr" => text.push('\n'),
                "noBreakHyphen" => text.push('-'),
                "txbxContent" => {
                    let mut inner = Vec::new();
                    self.blocks(el, &mut inner);
                    let joined = join_texts(&inner, "\n");
                    if !joined.is_empty() {
                        side.push(Block::new(BlockKind::Note, joined));
                    }
                }
                "AlternateContent" => {
                    if let Some(branch) = choose_branch(el) {
                        self.inline(branch, text, side);
                    }
                }
                // A table inside inline content (only in malformed files): keep its rows.
                "tbl" => self.table(el, side),
                name if SKIPPED_INLINE.contains(&name) => {}
                // Runs, hyperlinks, insertions, moved-in text, simple fields, smart tags,
                // content controls, drawings and VML shapes (which may hold text boxes).
                _ => self.inline(el, text, side),
            }
        }
    }

    fn table(&mut self, tbl: &Node, out: &mut Vec<Block>) {
        let mut rows: Vec<(bool, Vec<TableCell>)> = Vec::new();
        // Text of vertically merged cells by grid column, so continuation cells repeat it.
        let mut above: Vec<String> = Vec::new();
        for tr in rows_of(tbl) {
            let trpr = tr.child("trPr");
            let header_flag = trpr.is_some_and(|t| t.child("tblHeader").is_some());
            let mut col = trpr
                .and_then(|t| t.child_val("gridBefore"))
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0)
                .min(1000);
            let mut cells = Vec::new();
            for tc in cells_of(tr) {
                let tcpr = tc.child("tcPr");
                let span = tcpr
                    .and_then(|t| t.child_val("gridSpan"))
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(1)
                    .clamp(1, 1000);
                let continues = tcpr
                    .and_then(|t| t.child("vMerge"))
                    .is_some_and(|v| v.attr("val").is_none_or(|v| v == "continue"));
                let (blocks, text) = if continues {
                    (Vec::new(), above.get(col).cloned().unwrap_or_default())
                } else {
                    let mut blocks = Vec::new();
                    self.blocks(tc, &mut blocks);
                    let text = cell_text(&blocks);
                    (blocks, text)
                };
                if above.len() < col + span {
                    above.resize(col + span, String::new());
                }
                for slot in above.iter_mut().skip(col).take(span) {
                    slot.clone_from(&text);
                }
                cells.push(TableCell {
                    blocks,
                    text,
                    col,
                    span,
                });
                col += span;
            }
            rows.push((header_flag, cells));
        }

        // A one-column table is a layout box (a framed note, a whole page in a cell): its
        // content reads better as ordinary blocks than as "row" text.
        if rows.iter().all(|(_, cells)| cells.len() <= 1) {
            for (_, cells) in rows {
                for cell in cells {
                    out.extend(cell.blocks);
                }
            }
            return;
        }

        let header = rows.first().and_then(|(flag, cells)| {
            (*flag || looks_like_header(cells, rows.len())).then(|| {
                let width = cells.iter().map(|c| c.col + c.span).max().unwrap_or(0);
                let mut names = vec![String::new(); width];
                for c in cells {
                    for slot in names.iter_mut().skip(c.col).take(c.span) {
                        slot.clone_from(&c.text);
                    }
                }
                names
            })
        });
        let data_rows = if header.is_some() && rows.len() > 1 {
            &rows[1..]
        } else {
            &rows[..]
        };
        for (_, cells) in data_rows {
            let mut parts: Vec<String> = Vec::new();
            for c in cells {
                if c.text.is_empty() {
                    continue;
                }
                let name = header
                    .as_ref()
                    .and_then(|h| h.get(c.col))
                    .filter(|n| !n.is_empty() && **n != c.text);
                parts.push(match name {
                    Some(n) => format!("{n}: {}", c.text),
                    None => c.text.clone(),
                });
            }
            if parts.is_empty() {
                continue;
            }
            let sep = if header.is_some() { "; " } else { " | " };
            out.push(Block::new(BlockKind::TableRow, parts.join(sep)));
        }
    }
}

/// Cell text on one line: paragraphs joined by spaces, nested table rows by " / ".
fn cell_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    let mut prev_row = false;
    for b in blocks {
        let t = b.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if t.is_empty() {
            continue;
        }
        let is_row = b.kind == BlockKind::TableRow;
        if !out.is_empty() {
            out.push_str(if is_row && prev_row { " / " } else { " " });
        }
        out.push_str(&t);
        prev_row = is_row;
    }
    out
}

/// A first row is a header when its cells are short, non-numeric, distinct labels.
fn looks_like_header(cells: &[TableCell], row_count: usize) -> bool {
    if row_count < 2 {
        return false;
    }
    let texts: Vec<&str> = cells
        .iter()
        .map(|c| c.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    if texts.len() < 2 || texts.len() * 2 < cells.len() {
        return false;
    }
    let labels = texts.iter().all(|t| {
        t.chars().count() <= 60 && t.chars().any(char::is_alphabetic) && t.parse::<f64>().is_err()
    });
    let mut sorted = texts.clone();
    sorted.sort_unstable();
    sorted.dedup();
    labels && sorted.len() == texts.len()
}

/// Rows of a table, looking through content controls and custom XML wrappers.
fn rows_of(tbl: &Node) -> Vec<&Node> {
    let mut out = Vec::new();
    collect_named(tbl, "tr", &mut out, 0);
    out
}

fn cells_of(tr: &Node) -> Vec<&Node> {
    let mut out = Vec::new();
    collect_named(tr, "tc", &mut out, 0);
    out
}

/// Children named `name`, descending only through wrappers (not into nested tables).
fn collect_named<'n>(node: &'n Node, name: &str, out: &mut Vec<&'n Node>, depth: usize) {
    for c in node.elems() {
        if &*c.name == name {
            out.push(c);
        } else if depth < 16
            && matches!(
                &*c.name,
                "sdt" | "sdtContent" | "customXml" | "ins" | "moveTo" | "smartTag"
            )
        {
            collect_named(c, name, out, depth + 1);
        }
    }
}

/// The branch of `mc:AlternateContent` to read: the first `Choice` with content, else the
/// `Fallback`. Reading both would duplicate text boxes (Word writes a DrawingML copy in the
/// Choice and a VML copy in the Fallback).
fn choose_branch(alt: &Node) -> Option<&Node> {
    let has_content = |n: &Node| n.contains("t") || n.contains("txbxContent");
    alt.elems()
        .filter(|n| &*n.name == "Choice")
        .find(|n| has_content(n))
        .or_else(|| alt.child("Fallback").filter(|n| has_content(n)))
}
