//! Paragraph styles (heading levels, title, list numbering) and list numbering formats.

use std::collections::HashMap;

use super::xml::Node;

/// Localised prefixes of built-in heading style names ("heading 1", "标题 1", "Überschrift 1").
const HEADING_PREFIXES: &[&str] = &[
    "heading",
    "标题",
    "標題",
    "überschrift",
    "titre",
    "título",
    "titulo",
    "titolo",
    "kop",
    "rubrik",
    "nagłówek",
    "заголовок",
    "見出し",
    "제목",
];

/// Heading level encoded in a style name or id: "heading 1", "Heading1", "标题 2".
fn level_from_name(name: &str) -> Option<u8> {
    let squashed: String = name
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    HEADING_PREFIXES.iter().find_map(|p| {
        let rest = squashed.strip_prefix(p)?;
        match rest.parse::<u8>() {
            Ok(n @ 1..=9) => Some(n),
            _ => None,
        }
    })
}

fn is_title_name(name: &str) -> bool {
    let lower = name.trim().to_lowercase();
    matches!(
        lower.as_str(),
        "title" | "标题" | "標題" | "titel" | "titre"
    )
}

#[derive(Debug, Default)]
struct Style {
    name: Option<String>,
    based_on: Option<String>,
    outline: Option<u8>,
    num: Option<(String, u8)>,
}

/// Paragraph styles from `styles.xml`, resolved through `basedOn` chains.
#[derive(Debug, Default)]
pub(super) struct Styles {
    map: HashMap<String, Style>,
}

/// `w:numPr` → (numId, ilvl).
pub(super) fn num_pr(ppr: &Node) -> Option<(String, u8)> {
    let num = ppr.child("numPr")?;
    let id = num.child_val("numId")?.to_string();
    let lvl = num
        .child_val("ilvl")
        .and_then(|v| v.parse::<u8>().ok())
        .unwrap_or(0)
        .min(8);
    Some((id, lvl))
}

/// `w:outlineLvl` (0-based; 9 means body text) → heading level 1..=9.
pub(super) fn outline_level(ppr: &Node) -> Option<u8> {
    match ppr.child_val("outlineLvl")?.parse::<u8>() {
        Ok(n @ 0..=8) => Some(n + 1),
        _ => None,
    }
}

impl Styles {
    pub(super) fn from_xml(root: Option<&Node>) -> Styles {
        let mut map = HashMap::new();
        let Some(styles) = root.and_then(|r| r.child("styles")) else {
            return Styles { map };
        };
        for s in styles.elems().filter(|n| &*n.name == "style") {
            if s.attr("type").is_some_and(|t| t != "paragraph") {
                continue;
            }
            let Some(id) = s.attr("styleId") else {
                continue;
            };
            let ppr = s.child("pPr");
            map.insert(
                id.to_string(),
                Style {
                    name: s.child_val("name").map(str::to_string),
                    based_on: s.child_val("basedOn").map(str::to_string),
                    outline: ppr.and_then(outline_level),
                    num: ppr.and_then(num_pr),
                },
            );
        }
        Styles { map }
    }

    /// Walks a style and its ancestors (bounded: `basedOn` cycles exist in the wild).
    fn chain<'a>(&'a self, id: &'a str) -> impl Iterator<Item = (&'a str, Option<&'a Style>)> {
        let mut next = Some(id);
        std::iter::from_fn(move || {
            let id = next?;
            let style = self.map.get(id);
            next = style.and_then(|s| s.based_on.as_deref());
            Some((id, style))
        })
        .take(12)
    }

    pub(super) fn heading_level(&self, id: &str) -> Option<u8> {
        self.chain(id).find_map(|(id, style)| {
            let from_name = style
                .and_then(|s| s.name.as_deref())
                .and_then(level_from_name);
            from_name
                .or_else(|| style.and_then(|s| s.outline))
                .or_else(|| level_from_name(id))
        })
    }

    pub(super) fn is_title(&self, id: &str) -> bool {
        match self.map.get(id).and_then(|s| s.name.as_deref()) {
            Some(name) => is_title_name(name),
            None => is_title_name(id),
        }
    }

    pub(super) fn numbering(&self, id: &str) -> Option<(String, u8)> {
        self.chain(id)
            .find_map(|(_, style)| style.and_then(|s| s.num.clone()))
    }
}

#[derive(Debug, Clone, Default)]
struct Level {
    format: String,
    text: Option<String>,
    start: u32,
}

/// List definitions from `numbering.xml`, plus running counters for numbered lists.
#[derive(Debug, Default)]
pub(super) struct Numbering {
    abstract_levels: HashMap<String, Vec<Level>>,
    num_to_abstract: HashMap<String, String>,
    counters: HashMap<String, [u32; 9]>,
}

fn format_number(n: u32, format: &str) -> String {
    fn letters(mut n: u32, upper: bool) -> String {
        // Word repeats the letter past z: a..z, aa..zz.
        if n == 0 {
            return String::new();
        }
        n -= 1;
        let base = if upper { b'A' } else { b'a' };
        let c = char::from(base + (n % 26) as u8);
        std::iter::repeat_n(c, (n / 26 + 1).min(10) as usize).collect()
    }
    fn roman(mut n: u32) -> String {
        const TABLE: &[(u32, &str)] = &[
            (1000, "m"),
            (900, "cm"),
            (500, "d"),
            (400, "cd"),
            (100, "c"),
            (90, "xc"),
            (50, "l"),
            (40, "xl"),
            (10, "x"),
            (9, "ix"),
            (5, "v"),
            (4, "iv"),
            (1, "i"),
        ];
        if n == 0 || n > 3999 {
            return n.to_string();
        }
        let mut out = String::new();
        for &(v, s) in TABLE {
            while n >= v {
                out.push_str(s);
                n -= v;
            }
        }
        out
    }
    match format {
        "lowerLetter" => letters(n, false),
        "upperLetter" => letters(n, true),
        "lowerRoman" => roman(n),
        "upperRoman" => roman(n).to_uppercase(),
        "decimalZero" if n < 10 => format!("0{n}"),
        _ => n.to_string(),
    }
}

impl Numbering {
    pub(super) fn from_xml(root: Option<&Node>) -> Numbering {
        let mut out = Numbering::default();
        let Some(numbering) = root.and_then(|r| r.child("numbering")) else {
            return out;
        };
        for a in numbering.elems() {
            match &*a.name {
                "abstractNum" => {
                    let Some(id) = a.attr("abstractNumId") else {
                        continue;
                    };
                    let mut levels = vec![Level::default(); 9];
                    for lvl in a.elems().filter(|n| &*n.name == "lvl") {
                        let Some(i) = lvl.attr("ilvl").and_then(|v| v.parse::<usize>().ok()) else {
                            continue;
                        };
                        if let Some(slot) = levels.get_mut(i) {
                            *slot = Level {
                                format: lvl.child_val("numFmt").unwrap_or("decimal").to_string(),
                                text: lvl.child_val("lvlText").map(str::to_string),
                                start: lvl
                                    .child_val("start")
                                    .and_then(|v| v.parse().ok())
                                    .unwrap_or(1),
                            };
                        }
                    }
                    out.abstract_levels.insert(id.to_string(), levels);
                }
                "num" => {
                    if let (Some(id), Some(abs)) = (a.attr("numId"), a.child_val("abstractNumId")) {
                        out.num_to_abstract.insert(id.to_string(), abs.to_string());
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The prefix for the next item of list `num_id` at `ilvl`: "• " for bullets, "2.1. " for
    /// numbered lists, `None` for `numId` 0 (numbering explicitly removed).
    pub(super) fn next_prefix(&mut self, num_id: &str, ilvl: u8) -> Option<String> {
        if num_id == "0" {
            return None;
        }
        let ilvl = usize::from(ilvl.min(8));
        let levels = self
            .num_to_abstract
            .get(num_id)
            .and_then(|a| self.abstract_levels.get(a));
        let Some(levels) = levels else {
            return Some("• ".to_string());
        };
        let level = levels.get(ilvl).cloned().unwrap_or_default();
        match level.format.as_str() {
            "bullet" => return Some("• ".to_string()),
            "none" => return Some(String::new()),
            _ => {}
        }
        let counters = self.counters.entry(num_id.to_string()).or_insert([0; 9]);
        for (i, c) in counters.iter_mut().enumerate() {
            if i < ilvl && *c == 0 {
                *c = levels.get(i).map_or(1, |l| l.start.max(1));
            }
        }
        counters[ilvl] = if counters[ilvl] == 0 {
            level.start
        } else {
            counters[ilvl].saturating_add(1)
        };
        for c in counters.iter_mut().skip(ilvl + 1) {
            *c = 0;
        }
        let template = level.text.unwrap_or_else(|| format!("%{}.", ilvl + 1));
        let mut out = String::new();
        let mut chars = template.chars().peekable();
        while let Some(ch) = chars.next() {
            if ch == '%'
                && let Some(d) = chars.peek().and_then(|d| d.to_digit(10))
            {
                chars.next();
                let i = (d as usize).saturating_sub(1).min(8);
                let fmt = levels.get(i).map_or("decimal", |l| l.format.as_str());
                out.push_str(&format_number(counters[i], fmt));
            } else if !('\u{e000}'..='\u{f8ff}').contains(&ch) {
                // Private-use characters are symbol-font glyphs; they render as boxes.
                out.push(ch);
            }
        }
        Some(format!("{} ", out.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_levels_from_names() {
        let cases = [
            ("heading 1", Some(1)),
            ("Heading3", Some(3)),
            ("标题 2", Some(2)),
            ("Überschrift 4", Some(4)),
            ("heading 10", None),
            ("Heading", None),
            ("Normal", None),
        ];
        for (name, want) in cases {
            assert_eq!(level_from_name(name), want, "{name}");
        }
    }

    #[test]
    fn number_formats() {
        let cases = [
            (3, "decimal", "3"),
            (3, "lowerLetter", "c"),
            (28, "upperLetter", "BB"),
            (14, "upperRoman", "XIV"),
            (4, "decimalZero", "04"),
        ];
        for (n, f, want) in cases {
            assert_eq!(format_number(n, f), want);
        }
    }
}
