//! A small, bounded XML tree for OOXML parts.
//!
//! WordprocessingML needs look-ahead (a paragraph's style decides its kind before its text is
//! read; `mc:AlternateContent` needs its `Choice` inspected before the `Fallback` is skipped),
//! so parts are read into a compact tree instead of being streamed. Only local names are kept:
//! strict OOXML uses different namespace URIs for the same elements.
//!
//! Safety: quick-xml never expands DTD entities, so external entities (XXE) and entity
//! expansion bombs cannot happen; unknown entity references are dropped. Nesting depth is
//! capped by [`Limits::max_xml_depth`].

use std::borrow::Cow;

use quick_xml::Reader;
use quick_xml::events::Event;
use quick_xml::events::attributes::Attribute;

use crate::{Limits, ParseError};

/// One element: local name, attributes by local name, children in document order.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub(crate) name: Box<str>,
    attrs: Vec<(Box<str>, Box<str>)>,
    pub(crate) children: Vec<Child>,
}

#[derive(Debug)]
pub(crate) enum Child {
    Elem(Node),
    Text(String),
}

impl Node {
    /// The value of the attribute with this local name (`w:val` and `val` both match).
    pub(crate) fn attr(&self, local: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| &**k == local)
            .map(|(_, v)| &**v)
    }

    /// Every value of attributes with this local name (`id` and `r:id` both match).
    pub(crate) fn attrs_named<'a>(&'a self, local: &'a str) -> impl Iterator<Item = &'a str> {
        self.attrs
            .iter()
            .filter(move |(k, _)| &**k == local)
            .map(|(_, v)| &**v)
    }

    /// Child elements.
    pub(crate) fn elems(&self) -> impl Iterator<Item = &Node> {
        self.children.iter().filter_map(|c| match c {
            Child::Elem(n) => Some(n),
            Child::Text(_) => None,
        })
    }

    /// First child element with this local name.
    pub(crate) fn child(&self, local: &str) -> Option<&Node> {
        self.elems().find(|n| &*n.name == local)
    }

    /// `w:val` of the named child (`<w:pStyle w:val="Heading1"/>`).
    pub(crate) fn child_val(&self, local: &str) -> Option<&str> {
        self.child(local).and_then(|n| n.attr("val"))
    }

    /// All text below this node, concatenated (for simple parts such as `dc:title`).
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        self.collect_text(&mut out);
        out
    }

    fn collect_text(&self, out: &mut String) {
        for c in &self.children {
            match c {
                Child::Text(t) => out.push_str(t),
                Child::Elem(n) => n.collect_text(out),
            }
        }
    }

    /// Whether any descendant (or this node) has this local name.
    pub(crate) fn contains(&self, local: &str) -> bool {
        &*self.name == local || self.elems().any(|n| n.contains(local))
    }
}

/// Decodes an XML part to text: strips a UTF-8 BOM, honours UTF-16 BOMs, and replaces invalid
/// UTF-8 rather than failing (one bad byte should not lose a whole document).
fn decode(bytes: &[u8]) -> Cow<'_, str> {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(rest);
    }
    if bytes.starts_with(&[0xFF, 0xFE]) {
        let (text, _) = encoding_rs::UTF_16LE.decode_with_bom_removal(bytes);
        return Cow::Owned(text.into_owned());
    }
    if bytes.starts_with(&[0xFE, 0xFF]) {
        let (text, _) = encoding_rs::UTF_16BE.decode_with_bom_removal(bytes);
        return Cow::Owned(text.into_owned());
    }
    String::from_utf8_lossy(bytes)
}

fn attr_value(a: &Attribute<'_>) -> String {
    // Unknown entities in attribute values make normalisation fail; the raw value is still
    // better than dropping the attribute.
    a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
        .map(|v| v.into_owned())
        .unwrap_or_else(|_| a.value.to_string())
}

fn push_text(node: &mut Node, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Child::Text(last)) = node.children.last_mut() {
        last.push_str(text);
    } else {
        node.children.push(Child::Text(text.to_string()));
    }
}

fn element(e: &quick_xml::events::BytesStart<'_>) -> Node {
    let attrs = e
        .attributes()
        .with_checks(false)
        .filter_map(Result::ok)
        .map(|a| {
            let key: Box<str> = a.key.local_name().into_inner().into();
            (key, attr_value(&a).into_boxed_str())
        })
        .collect();
    Node {
        name: e.local_name().into_inner().into(),
        attrs,
        children: Vec::new(),
    }
}

/// Parses a whole XML part into a tree rooted at a synthetic `#document` node.
///
/// Whitespace-only text is kept only inside `t` elements (`<w:t xml:space="preserve"> </w:t>`),
/// where it is content; elsewhere it is indentation. A truncated part yields what was read.
pub(crate) fn parse(
    bytes: &[u8],
    part: &str,
    format: &'static str,
    limits: &Limits,
) -> Result<Node, ParseError> {
    let text = decode(bytes);
    let mut reader = Reader::from_str(&text);
    let config = reader.config_mut();
    config.allow_dangling_amp = true;
    config.check_end_names = false;
    config.allow_unmatched_ends = true;
    let mut stack: Vec<Node> = vec![Node {
        name: "#document".into(),
        ..Node::default()
    }];
    loop {
        let event = reader.read_event().map_err(|e| {
            ParseError::invalid(
                format,
                format!(
                    "malformed XML in '{part}' at byte {} ({e})",
                    reader.buffer_position()
                ),
            )
        })?;
        match event {
            Event::Start(e) => {
                if stack.len() > limits.max_xml_depth {
                    return Err(ParseError::LimitExceeded(format!(
                        "XML in '{part}' is nested deeper than {} levels",
                        limits.max_xml_depth
                    )));
                }
                stack.push(element(&e));
            }
            Event::Empty(e) => {
                let node = element(&e);
                if let Some(parent) = stack.last_mut() {
                    parent.children.push(Child::Elem(node));
                }
            }
            Event::End(_) => {
                // The root is never popped, so unmatched end tags cannot underflow the stack.
                if stack.len() > 1
                    && let Some(node) = stack.pop()
                    && let Some(parent) = stack.last_mut()
                {
                    parent.children.push(Child::Elem(node));
                }
            }
            Event::Text(t) => {
                let content = t.xml10_content();
                if let Some(node) = stack.last_mut()
                    && (&*node.name == "t" || !content.trim().is_empty())
                {
                    push_text(node, &content);
                }
            }
            Event::CData(t) => {
                let content = t.xml10_content();
                if let Some(node) = stack.last_mut() {
                    push_text(node, &content);
                }
            }
            Event::GeneralRef(r) => {
                // Character references and the five predefined entities only: DTD-declared
                // entities are never expanded (no XXE, no billion laughs).
                let resolved: Option<String> = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c.to_string()),
                    Ok(None) => {
                        let name = r.xml10_content();
                        quick_xml::escape::resolve_predefined_entity(&name).map(str::to_string)
                    }
                    Err(_) => None,
                };
                if let (Some(s), Some(node)) = (resolved, stack.last_mut()) {
                    push_text(node, &s);
                }
            }
            Event::Eof => break,
            // Declarations, comments, processing instructions and DOCTYPE carry no content.
            _ => {}
        }
    }
    // Close elements left open by a truncated part.
    while stack.len() > 1 {
        if let Some(node) = stack.pop()
            && let Some(parent) = stack.last_mut()
        {
            parent.children.push(Child::Elem(node));
        }
    }
    stack
        .pop()
        .ok_or_else(|| ParseError::invalid(format, format!("empty XML part '{part}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(xml: &str) -> Node {
        parse(xml.as_bytes(), "t.xml", "DOCX", &Limits::default()).unwrap()
    }

    #[test]
    fn keeps_local_names_attributes_and_entities() {
        let root = tree(
            "\u{feff}<?xml version=\"1.0\"?><w:p xmlns:w=\"x\"><w:t xml:space=\"preserve\"> a&amp;b&#x4E2D; </w:t><w:pStyle w:val=\"H&lt;1\"/></w:p>",
        );
        let p = root.child("p").unwrap();
        assert_eq!(p.child("t").unwrap().text(), " a&b中 ");
        assert_eq!(p.child_val("pStyle"), Some("H<1"));
    }

    #[test]
    fn external_entities_are_never_expanded() {
        let xml = r#"<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd"><!ENTITY lol "lol">]>
<r><t>before&xxe;&lol;after</t></r>"#;
        let root = tree(xml);
        assert_eq!(root.text(), "beforeafter");
    }

    #[test]
    fn depth_limit_is_enforced() {
        let limits = Limits {
            max_xml_depth: 10,
            ..Limits::default()
        };
        let deep = format!("{}{}", "<a>".repeat(50), "</a>".repeat(50));
        assert!(matches!(
            parse(deep.as_bytes(), "d.xml", "DOCX", &limits),
            Err(ParseError::LimitExceeded(_))
        ));
        let ok = format!("{}{}", "<a>".repeat(5), "</a>".repeat(5));
        assert!(parse(ok.as_bytes(), "d.xml", "DOCX", &limits).is_ok());
    }

    #[test]
    fn utf16_and_truncated_parts_are_read() {
        let mut bytes = vec![0xFF, 0xFE];
        for u in "<r><t>hi</t></r>".encode_utf16() {
            bytes.extend_from_slice(&u.to_le_bytes());
        }
        let root = parse(&bytes, "u.xml", "DOCX", &Limits::default()).unwrap();
        assert_eq!(root.text(), "hi");
        assert_eq!(tree("<r><t>cut off").text(), "cut off");
    }
}
