//! Markdown via pulldown-cmark: the heading tree, lists, tables and code blocks become blocks.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::text::decode_text;
use crate::{Block, BlockKind, Limits, ParseError, ParsedDocument};

pub(crate) fn parse(bytes: &[u8], _limits: &Limits) -> Result<ParsedDocument, ParseError> {
    let (source, encoding) = decode_text(bytes);
    let mut doc = ParsedDocument {
        encoding: Some(encoding.to_string()),
        ..Default::default()
    };
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
    let mut w = Walker::default();
    for event in Parser::new_ext(&source, options) {
        w.event(event);
    }
    w.flush(BlockKind::Paragraph);
    doc.title = w.front_matter_title.or_else(|| {
        w.blocks
            .iter()
            .find(|b| b.kind == (BlockKind::Heading { level: 1 }))
            .map(|b| b.text.clone())
    });
    doc.blocks = w.blocks;
    Ok(doc)
}

#[derive(Default)]
struct Walker {
    blocks: Vec<Block>,
    buf: String,
    heading: Option<u8>,
    code: Option<String>,
    list_depth: usize,
    footnote_depth: usize,
    metadata: Option<String>,
    front_matter_title: Option<String>,
    in_html_comment: bool,
    table_head: Vec<String>,
    table_row: Vec<String>,
    in_table_head: bool,
}

impl Walker {
    fn event(&mut self, event: Event<'_>) {
        if let Some(code) = &mut self.code {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    let text = std::mem::take(code).trim_end().to_string();
                    self.code = None;
                    self.blocks.push(Block::new(BlockKind::Code, text));
                }
                _ => {}
            }
            return;
        }
        if let Some(meta) = &mut self.metadata {
            match event {
                Event::Text(t) => meta.push_str(&t),
                Event::End(TagEnd::MetadataBlock(_)) => {
                    let meta = std::mem::take(meta);
                    self.metadata = None;
                    self.front_matter_title = front_matter_title(&meta);
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                self.flush(self.inline_kind());
                self.heading = Some(heading_level(level));
            }
            Event::End(TagEnd::Heading(_)) => {
                let level = self.heading.take().unwrap_or(1);
                self.flush(BlockKind::Heading { level });
            }
            Event::Start(Tag::CodeBlock(_)) => {
                self.flush(self.inline_kind());
                self.code = Some(String::new());
            }
            Event::Start(Tag::MetadataBlock(_)) => self.metadata = Some(String::new()),
            Event::Start(Tag::List(_)) => {
                self.flush(self.inline_kind());
                self.list_depth += 1;
            }
            Event::End(TagEnd::List(_)) => {
                self.flush(self.inline_kind());
                self.list_depth = self.list_depth.saturating_sub(1);
            }
            Event::Start(Tag::Item) | Event::End(TagEnd::Item) => self.flush(BlockKind::ListItem),
            Event::Start(Tag::FootnoteDefinition(label)) => {
                self.flush(self.inline_kind());
                self.footnote_depth += 1;
                self.buf.push_str(&format!("[^{label}] "));
            }
            Event::End(TagEnd::FootnoteDefinition) => {
                self.flush(BlockKind::Note);
                self.footnote_depth = self.footnote_depth.saturating_sub(1);
            }
            Event::End(TagEnd::Paragraph | TagEnd::BlockQuote(_)) => self.flush(self.inline_kind()),
            Event::Start(Tag::Table(_)) => {
                self.flush(self.inline_kind());
                self.table_head.clear();
            }
            Event::Start(Tag::TableHead) => self.in_table_head = true,
            Event::End(TagEnd::TableHead) => {
                self.in_table_head = false;
                self.table_head = std::mem::take(&mut self.table_row);
            }
            Event::End(TagEnd::TableCell) => {
                let cell = std::mem::take(&mut self.buf).trim().to_string();
                self.table_row.push(cell);
            }
            Event::End(TagEnd::TableRow) => {
                let row = std::mem::take(&mut self.table_row);
                let text = table_row_text(&self.table_head, &row);
                self.blocks.push(Block::new(BlockKind::TableRow, text));
            }
            Event::End(TagEnd::Table) => self.table_head.clear(),
            Event::Text(t) | Event::Code(t) => self.buf.push_str(&t),
            Event::InlineMath(t) | Event::DisplayMath(t) => self.buf.push_str(&t),
            Event::SoftBreak => self.buf.push(' '),
            Event::HardBreak => self.buf.push('\n'),
            Event::Html(html) | Event::InlineHtml(html) => {
                let text = self.strip_html(&html);
                self.buf.push_str(&text);
            }
            Event::TaskListMarker(done) => self.buf.push_str(if done { "[x] " } else { "[ ] " }),
            Event::Rule => self.flush(self.inline_kind()),
            _ => {}
        }
    }

    fn inline_kind(&self) -> BlockKind {
        if self.footnote_depth > 0 {
            BlockKind::Note
        } else if self.list_depth > 0 {
            BlockKind::ListItem
        } else {
            BlockKind::Paragraph
        }
    }

    fn flush(&mut self, kind: BlockKind) {
        let text = std::mem::take(&mut self.buf);
        let text = text.trim();
        if !text.is_empty() {
            self.blocks.push(Block::new(kind, text));
        }
    }

    /// Drops HTML comments (which may span events) and tags, keeping the text between tags.
    fn strip_html(&mut self, html: &str) -> String {
        let mut out = String::new();
        let mut rest = html;
        loop {
            if self.in_html_comment {
                match rest.find("-->") {
                    Some(end) => {
                        self.in_html_comment = false;
                        rest = &rest[end + 3..];
                    }
                    None => return out,
                }
            }
            match (rest.find("<!--"), rest.find('<')) {
                (Some(c), Some(t)) if c == t => {
                    out.push_str(&rest[..c]);
                    self.in_html_comment = true;
                    rest = &rest[c + 4..];
                }
                (_, Some(t)) => {
                    out.push_str(&rest[..t]);
                    match rest[t..].find('>') {
                        Some(close) => rest = &rest[t + close + 1..],
                        None => return out,
                    }
                }
                (_, None) => {
                    out.push_str(rest);
                    return out;
                }
            }
        }
    }
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// `title:` from YAML front matter, without pulling in a YAML parser for one key.
fn front_matter_title(meta: &str) -> Option<String> {
    meta.lines().find_map(|line| {
        let value = line
            .strip_prefix("title:")?
            .trim()
            .trim_matches(['"', '\'']);
        (!value.is_empty()).then(|| value.to_string())
    })
}

/// A table row as `header: value; header: value`, the form that retrieves well.
pub(crate) fn table_row_text(head: &[String], row: &[String]) -> String {
    let mut parts = Vec::with_capacity(row.len());
    for (i, cell) in row.iter().enumerate() {
        if cell.is_empty() {
            continue;
        }
        match head.get(i).filter(|h| !h.is_empty()) {
            Some(h) => parts.push(format!("{h}: {cell}")),
            None => parts.push(cell.clone()),
        }
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(md: &str) -> Vec<(BlockKind, String)> {
        parse(md.as_bytes(), &Limits::default())
            .unwrap()
            .blocks
            .into_iter()
            .map(|b| (b.kind, b.text))
            .collect()
    }

    #[test]
    fn headings_lists_tables_and_code() {
        let md = "# 员工手册\n\nIntro *text*\nwraps.\n\n## Leave\n\n- Annual: 15 days\n- Sick: 10 days\n\n\
                  | Region | Days |\n|---|---|\n| CN | 15 |\n\n```sh\nkubectl apply\n```\n";
        let h = |level| BlockKind::Heading { level };
        assert_eq!(
            blocks(md),
            vec![
                (h(1), "员工手册".into()),
                (BlockKind::Paragraph, "Intro text wraps.".into()),
                (h(2), "Leave".into()),
                (BlockKind::ListItem, "Annual: 15 days".into()),
                (BlockKind::ListItem, "Sick: 10 days".into()),
                (BlockKind::TableRow, "Region: CN; Days: 15".into()),
                (BlockKind::Code, "kubectl apply".into()),
            ]
        );
    }

    #[test]
    fn html_comments_are_dropped_and_front_matter_gives_title() {
        let md = "---\ntitle: \"Deploy Spec\"\n---\n\n<!-- secret\nnote -->\n\nVisible <b>bold</b> text.\n";
        let doc = parse(md.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(doc.title.as_deref(), Some("Deploy Spec"));
        assert_eq!(doc.plain_text(), "Visible bold text.");
    }
}
