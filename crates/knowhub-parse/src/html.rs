//! HTML: the main text (inside `<main>`/`<article>` when present), without scripts, styles,
//! navigation chrome or comments; headings, lists, tables and `<pre>` keep their structure.

use scraper::{ElementRef, Html, Node, Selector};

use crate::markdown::table_row_text;
use crate::text::decode_text;
use crate::{Block, BlockKind, Limits, ParseError, ParsedDocument};

/// Elements whose content is never document text.
const SKIP: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object", "head", "button",
    "select", "form", "canvas", "audio", "video", "map",
];
/// Page chrome, dropped when the page does not mark up its main content (when it does, only
/// the main content is read). A `<header>` often holds the document's title, so it is kept
/// unless it is a navigation bar.
const CHROME: &[&str] = &["nav", "footer", "aside"];
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "blockquote",
    "dd",
    "dt",
    "dl",
    "figure",
    "figcaption",
    "address",
    "center",
    "body",
    "hr",
    "br",
    "ul",
    "ol",
    "table",
    "tbody",
    "thead",
    "tfoot",
    "caption",
    "details",
    "summary",
    "fieldset",
    "legend",
];

pub(crate) fn parse(bytes: &[u8], limits: &Limits) -> Result<ParsedDocument, ParseError> {
    let (source, encoding) = decode_html(bytes);
    let html = Html::parse_document(&source);
    let mut doc = ParsedDocument {
        encoding: Some(encoding),
        ..Default::default()
    };

    let title_sel = selector("title");
    doc.title = html
        .select(&title_sel)
        .next()
        .map(|t| {
            t.text()
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.is_empty());

    let main_sel = selector("main, article, [role=main]");
    let (root, drop_chrome) = match html.select(&main_sel).next() {
        Some(main) => (main, false),
        None => (html.root_element(), true),
    };
    let mut w = Walker {
        blocks: Vec::new(),
        buf: String::new(),
        drop_chrome,
        max_depth: limits.max_xml_depth,
    };
    w.walk(root, 0);
    w.flush(BlockKind::Paragraph);
    if doc.title.is_none() {
        doc.title = w
            .blocks
            .iter()
            .find(|b| matches!(b.kind, BlockKind::Heading { level: 1 }))
            .map(|b| b.text.clone());
    }
    doc.blocks = w.blocks;
    Ok(doc)
}

fn selector(s: &str) -> Selector {
    // The selectors are literals in this file; a failure is a programming error caught by tests.
    #[allow(clippy::expect_used)]
    Selector::parse(s).expect("static selector")
}

/// Decodes HTML honouring a BOM or `<meta charset>`, then falling back to detection.
fn decode_html(bytes: &[u8]) -> (String, String) {
    if encoding_rs::Encoding::for_bom(bytes).is_none() {
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(2048)]).to_ascii_lowercase();
        if let Some(pos) = head.find("charset=") {
            let label: String = head[pos + 8..]
                .trim_start_matches(['"', '\''])
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if let Some(enc) = encoding_rs::Encoding::for_label(label.as_bytes()) {
                // A page that says UTF-16 in ASCII cannot be UTF-16; trust detection then.
                if enc != encoding_rs::UTF_16LE && enc != encoding_rs::UTF_16BE {
                    let (text, _) = enc.decode_without_bom_handling(bytes);
                    return (text.into_owned(), enc.name().to_string());
                }
            }
        }
    }
    let (text, name) = decode_text(bytes);
    (text, name.to_string())
}

struct Walker {
    blocks: Vec<Block>,
    buf: String,
    drop_chrome: bool,
    max_depth: usize,
}

impl Walker {
    fn walk(&mut self, el: ElementRef<'_>, depth: usize) {
        let name = el.value().name();
        if SKIP.contains(&name)
            || (self.drop_chrome && CHROME.contains(&name))
            || (self.drop_chrome && name == "header" && has_nav(el))
            || el.value().attr("hidden").is_some()
            || el.value().attr("aria-hidden") == Some("true")
        {
            return;
        }
        if depth > self.max_depth {
            // Pathologically deep markup: keep the text, drop the structure (and the recursion).
            self.buf.push_str(&el.text().collect::<Vec<_>>().join(" "));
            return;
        }
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.flush(BlockKind::Paragraph);
                let level = name.as_bytes()[1] - b'0';
                self.inline(el, depth);
                self.flush(BlockKind::Heading { level });
            }
            "li" => {
                self.flush(BlockKind::Paragraph);
                self.children(el, depth);
                self.flush(BlockKind::ListItem);
            }
            "pre" => {
                self.flush(BlockKind::Paragraph);
                let text: String = el.text().collect();
                self.blocks.push(Block::new(BlockKind::Code, text));
            }
            "tr" => {} // handled by the table below
            "table" => {
                self.flush(BlockKind::Paragraph);
                self.table(el, depth);
            }
            "br" => self.buf.push('\n'),
            _ if BLOCKS.contains(&name) => {
                self.flush(BlockKind::Paragraph);
                self.children(el, depth);
                self.flush(BlockKind::Paragraph);
            }
            _ => self.children(el, depth),
        }
    }

    fn children(&mut self, el: ElementRef<'_>, depth: usize) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => push_collapsed(&mut self.buf, t),
                Node::Element(_) => {
                    if let Some(child_el) = ElementRef::wrap(child) {
                        self.walk(child_el, depth + 1);
                    }
                }
                _ => {} // comments, doctype, processing instructions
            }
        }
    }

    fn inline(&mut self, el: ElementRef<'_>, depth: usize) {
        self.children(el, depth);
    }

    fn table(&mut self, table: ElementRef<'_>, depth: usize) {
        let row_sel = selector("tr");
        let mut head: Vec<String> = Vec::new();
        for row in table.select(&row_sel) {
            // Rows of nested tables are reached through their own <table>.
            let owner = row
                .ancestors()
                .filter_map(ElementRef::wrap)
                .find(|a| a.value().name() == "table");
            if owner.map(|o| o.id()) != Some(table.id()) {
                continue;
            }
            let mut cells = Vec::new();
            let mut all_th = true;
            for cell in row.children().filter_map(ElementRef::wrap) {
                let n = cell.value().name();
                if n != "td" && n != "th" {
                    continue;
                }
                all_th &= n == "th";
                let mut sub = Walker {
                    blocks: Vec::new(),
                    buf: String::new(),
                    drop_chrome: false,
                    max_depth: self.max_depth,
                };
                sub.children(cell, depth + 1);
                sub.flush(BlockKind::Paragraph);
                let text: Vec<String> = sub.blocks.into_iter().map(|b| b.text).collect();
                cells.push(text.join(" "));
            }
            if cells.is_empty() {
                continue;
            }
            if all_th && head.is_empty() {
                head = cells;
                continue;
            }
            let text = table_row_text(&head, &cells);
            if !text.is_empty() {
                self.blocks.push(Block::new(BlockKind::TableRow, text));
            }
        }
    }

    fn flush(&mut self, kind: BlockKind) {
        let text = std::mem::take(&mut self.buf);
        let text = text.trim();
        if !text.is_empty() {
            self.blocks.push(Block::new(kind, text));
        }
    }
}

fn has_nav(el: ElementRef<'_>) -> bool {
    el.descendants()
        .filter_map(ElementRef::wrap)
        .any(|d| d.value().name() == "nav")
}

/// Appends text with HTML whitespace collapsing.
fn push_collapsed(buf: &mut String, text: &str) {
    let mut last_space = buf.ends_with(' ') || buf.ends_with('\n') || buf.is_empty();
    for c in text.chars() {
        if c.is_whitespace() {
            if !last_space {
                buf.push(' ');
                last_space = true;
            }
        } else {
            buf.push(c);
            last_space = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main_text_without_scripts_styles_comments_or_chrome() {
        let html = r#"<html><head><title>Deploy Spec</title><style>p{}</style></head>
            <body><nav>Home | About</nav><!-- hidden comment -->
            <h1>部署规范</h1><p>Timeouts are <b>30 s</b>.</p><script>alert(1)</script>
            <ul><li>one</li><li>two</li></ul><header><nav>Menu</nav></header>
            <table><tr><th>Env</th><th>Nodes</th></tr><tr><td>prod</td><td>12</td></tr></table>
            <pre>kubectl   get pods</pre><footer>© ACME</footer></body></html>"#;
        let doc = parse(html.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(doc.title.as_deref(), Some("Deploy Spec"));
        let got: Vec<_> = doc
            .blocks
            .iter()
            .map(|b| (b.kind, b.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (BlockKind::Heading { level: 1 }, "部署规范"),
                (BlockKind::Paragraph, "Timeouts are 30 s."),
                (BlockKind::ListItem, "one"),
                (BlockKind::ListItem, "two"),
                (BlockKind::TableRow, "Env: prod; Nodes: 12"),
                (BlockKind::Code, "kubectl   get pods"),
            ]
        );
    }

    #[test]
    fn main_element_scopes_the_text_and_meta_charset_is_honoured() {
        let (gbk, _, _) = encoding_rs::GBK
            .encode("<meta charset=\"gbk\"><nav>菜单</nav><main><p>正文内容</p></main>");
        let doc = parse(&gbk, &Limits::default()).unwrap();
        assert_eq!(doc.plain_text(), "正文内容");
        assert_eq!(doc.encoding.as_deref(), Some("GBK"));
    }

    #[test]
    fn a_header_with_the_title_is_kept() {
        let html =
            "<body><header><h1>Runbook</h1><p>Owner: SRE</p></header><p>Step one.</p></body>";
        let doc = parse(html.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(doc.plain_text(), "Runbook\nOwner: SRE\nStep one.");
    }

    #[test]
    fn deeply_nested_markup_does_not_overflow() {
        let html = format!(
            "{}deep text{}",
            "<div>".repeat(20_000),
            "</div>".repeat(20_000)
        );
        let doc = parse(html.as_bytes(), &Limits::default()).unwrap();
        assert!(doc.plain_text().contains("deep text"));
    }
}
