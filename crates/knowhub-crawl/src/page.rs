//! What a crawler needs from an HTML page: its links, its canonical address and its robots
//! directives. The text itself is read later by the ingestion pipeline's HTML parser.

use scraper::{ElementRef, Html, Selector};
use url::Url;

use crate::scope::normalize;

/// Robots directives of a page (`<meta name="robots">` or an `X-Robots-Tag` header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives {
    /// Keep the page out of the knowledge base.
    pub noindex: bool,
    /// Do not follow the page's links.
    pub nofollow: bool,
}

impl Directives {
    /// Reads a directive list such as `noindex, nofollow` or `none`. A header may name a bot
    /// (`googlebot: noindex`); only unnamed ones and ones for every bot apply.
    pub fn parse(text: &str) -> Directives {
        /// Directives written `name: value`, which are not bot names.
        const VALUED: &[&str] = &[
            "max-snippet",
            "max-image-preview",
            "max-video-preview",
            "unavailable_after",
        ];
        let mut d = Directives::default();
        let text = match text.split_once(':') {
            Some((agent, rest)) if !agent.contains(',') && !VALUED.contains(&agent.trim()) => {
                let agent = agent.trim().to_ascii_lowercase();
                if agent != "knowhub" && agent != "*" {
                    return d;
                }
                rest
            }
            _ => text,
        };
        for word in text
            .split([',', ' '])
            .map(|w| w.trim().to_ascii_lowercase())
        {
            match word.as_str() {
                "noindex" => d.noindex = true,
                "nofollow" => d.nofollow = true,
                "none" => {
                    d.noindex = true;
                    d.nofollow = true;
                }
                _ => {}
            }
        }
        d
    }

    pub fn merge(self, other: Directives) -> Directives {
        Directives {
            noindex: self.noindex || other.noindex,
            nofollow: self.nofollow || other.nofollow,
        }
    }
}

/// The parts of an HTML page a crawl uses.
#[derive(Debug, Clone, Default)]
pub struct PageLinks {
    /// Followable links, resolved and normalized, in document order, without repeats.
    pub links: Vec<Url>,
    pub canonical: Option<Url>,
    pub directives: Directives,
}

fn selector(s: &str) -> Selector {
    // The selectors are literals in this file; a typo is caught by the tests.
    Selector::parse(s).unwrap_or_else(|_| panic!("selector {s}"))
}

/// Reads links, the canonical address and robots directives of the HTML page at `base`.
pub fn read_html(bytes: &[u8], base: &Url) -> PageLinks {
    let text = String::from_utf8_lossy(bytes);
    let html = Html::parse_document(&text);
    let base = html
        .select(&selector("base[href]"))
        .next()
        .and_then(|b| b.value().attr("href"))
        .and_then(|h| base.join(h.trim()).ok())
        .unwrap_or_else(|| base.clone());

    let mut directives = Directives::default();
    for meta in html.select(&selector("meta[name][content]")) {
        let name = meta
            .value()
            .attr("name")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if name == "robots" || name == "knowhub" {
            directives = directives.merge(Directives::parse(
                meta.value().attr("content").unwrap_or_default(),
            ));
        }
    }
    let canonical = html
        .select(&selector("link[rel][href]"))
        .find(|l| {
            l.value().attr("rel").is_some_and(|r| {
                r.split_whitespace()
                    .any(|w| w.eq_ignore_ascii_case("canonical"))
            })
        })
        .and_then(|l| l.value().attr("href"))
        .and_then(|h| base.join(h.trim()).ok())
        .and_then(|u| normalize(&u));

    let mut links = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for a in html.select(&selector("a[href], area[href]")) {
        let nofollow = a.value().attr("rel").is_some_and(|r| {
            r.split_whitespace()
                .any(|w| w.eq_ignore_ascii_case("nofollow"))
        });
        if nofollow {
            continue;
        }
        let Some(href) = a.value().attr("href") else {
            continue;
        };
        let Some(url) = base.join(href.trim()).ok().and_then(|u| normalize(&u)) else {
            continue;
        };
        if seen.insert(url.to_string()) {
            links.push(url);
        }
    }
    PageLinks {
        links,
        canonical,
        directives,
    }
}

/// The headings of an HTML page that a link can point at, in document order, as (heading
/// text with its white space collapsed, fragment id): a heading's own `id`, else that of a
/// link target inside it (`<a id>`, `<a name>`), else that of the `section`, `article` or
/// `div` it opens. Citations of a passage under such a heading link to `url#id`.
pub fn heading_anchors(bytes: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(bytes);
    let html = Html::parse_document(&text);
    let targets = selector("a[id], a[name]");
    let mut anchors = Vec::new();
    for heading in html.select(&selector("h1, h2, h3, h4, h5, h6")) {
        let own = heading.value().attr("id");
        let inner = || {
            heading
                .select(&targets)
                .next()
                .and_then(|a| a.value().attr("id").or_else(|| a.value().attr("name")))
        };
        let opened = || {
            let parent = heading.parent().and_then(ElementRef::wrap)?;
            let opens = parent
                .children()
                .filter_map(ElementRef::wrap)
                .next()
                .is_some_and(|first| first.id() == heading.id());
            let name = parent.value().name();
            (opens && matches!(name, "section" | "article" | "div"))
                .then(|| parent.value().attr("id"))
                .flatten()
        };
        let Some(id) = own
            .or_else(inner)
            .or_else(opened)
            .map(str::trim)
            .filter(|id| !id.is_empty())
        else {
            continue;
        };
        let title = heading
            .text()
            .collect::<String>()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if !title.is_empty() {
            anchors.push((title, id.to_string()));
        }
    }
    anchors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_are_linked_by_their_own_id_an_inner_target_or_the_section_they_open() {
        let page = r#"<html><body>
            <h1 id="top">Employee   handbook</h1>
            <h2><a name="travel"></a>Travel</h2>
            <section id="leave"><h2>Annual leave</h2><p>20 days.</p></section>
            <section id="misc"><p>Intro</p><h2>Not opened by this heading</h2></section>
            <h3>No anchor</h3>
            <h3 id="  ">Blank id</h3>
            <h2 id="zh">差旅 报销</h2>
        </body></html>"#;
        assert_eq!(
            heading_anchors(page.as_bytes()),
            [
                ("Employee handbook".to_string(), "top".to_string()),
                ("Travel".to_string(), "travel".to_string()),
                ("Annual leave".to_string(), "leave".to_string()),
                ("差旅 报销".to_string(), "zh".to_string()),
            ]
        );
        assert!(heading_anchors(b"not html at all").is_empty());
    }

    #[test]
    fn links_resolve_against_the_page_and_its_base() {
        let page = br#"<html><head><base href="/docs/">
            <link rel="canonical" href="https://example.com/docs/intro#x">
            <meta name="robots" content="nofollow"></head>
            <body><a href="a.html">A</a> <a href="a.html#part">A again</a>
            <a href="/b?x=1">B</a> <a href="mailto:x@example.com">mail</a>
            <a rel="nofollow" href="c.html">C</a> <a href="https://other.org/">other</a>
            <area href="d.html"></body></html>"#;
        let base = Url::parse("https://example.com/start").expect("url");
        let read = read_html(page, &base);
        let links: Vec<String> = read.links.iter().map(|u| u.to_string()).collect();
        assert_eq!(
            links,
            [
                "https://example.com/docs/a.html",
                "https://example.com/b?x=1",
                "https://other.org/",
                "https://example.com/docs/d.html",
            ]
        );
        assert_eq!(
            read.canonical.map(|u| u.to_string()).as_deref(),
            Some("https://example.com/docs/intro")
        );
        assert_eq!(
            read.directives,
            Directives {
                noindex: false,
                nofollow: true
            }
        );
    }

    #[test]
    fn directives_table() {
        let table = [
            ("noindex", true, false),
            ("NOINDEX, NOFOLLOW", true, true),
            ("none", true, true),
            ("all", false, false),
            ("googlebot: noindex", false, false),
            ("knowhub: noindex", true, false),
            ("max-snippet:10, noindex", true, false),
        ];
        for (text, noindex, nofollow) in table {
            assert_eq!(
                Directives::parse(text),
                Directives { noindex, nofollow },
                "{text}"
            );
        }
    }
}
