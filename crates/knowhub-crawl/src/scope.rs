//! Which addresses a crawl may visit: http(s) only, the start's site, the include and exclude
//! patterns, and one spelling per page (no fragment, default port dropped).

use globset::{Glob, GlobSet, GlobSetBuilder};
use url::Url;

use crate::error::{CrawlError, Result};

/// The canonical spelling of `url`, or `None` when it is not a page address KnowHub crawls.
/// Fragments name places inside a page, so `a#x` and `a#y` are the same page.
pub fn normalize(url: &Url) -> Option<Url> {
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    if !url.username().is_empty() || url.password().is_some() {
        return None;
    }
    let mut url = url.clone();
    url.set_fragment(None);
    if url.query() == Some("") {
        url.set_query(None);
    }
    Some(url)
}

/// Parses an address a user typed: `wiki.example.com/start` gets `https://`.
pub fn parse_start(text: &str) -> Result<Url> {
    let text = text.trim();
    let parsed = match Url::parse(text) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) => Url::parse(&format!("https://{text}"))
            .map_err(|e| {
                CrawlError::InvalidInput(format!("\"{text}\" is not a web address: {e}"))
            })?,
        Err(e) => {
            return Err(CrawlError::InvalidInput(format!(
                "\"{text}\" is not a web address: {e}"
            )));
        }
    };
    normalize(&parsed).ok_or_else(|| {
        CrawlError::InvalidInput(format!(
            "\"{text}\" is not an http or https address without a user name"
        ))
    })
}

/// The pages a crawl may visit.
#[derive(Debug, Clone)]
pub struct Scope {
    host: String,
    port: Option<u16>,
    include: Option<GlobSet>,
    exclude: GlobSet,
}

impl Scope {
    /// The site of `start`, narrowed by glob patterns matched against an address's path and
    /// query (`/wiki/*`, `*.pdf`, `*action=edit*`). No include pattern means the whole site.
    pub fn new(start: &Url, include: &[String], exclude: &[String]) -> Result<Scope> {
        let host = start
            .host_str()
            .ok_or_else(|| CrawlError::InvalidInput(format!("{start} has no host")))?
            .to_owned();
        Ok(Scope {
            host,
            port: start.port_or_known_default(),
            include: if include.is_empty() {
                None
            } else {
                Some(globs(include)?)
            },
            exclude: globs(exclude)?,
        })
    }

    /// Whether `url` (normalized) is on the site: same host, and same port when not a
    /// default one (`http` and `https` of one host are one site).
    pub fn same_site(&self, url: &Url) -> bool {
        let default_port = matches!(url.port_or_known_default(), Some(80 | 443));
        url.host_str() == Some(self.host.as_str())
            && (url.port_or_known_default() == self.port
                || (default_port && matches!(self.port, Some(80 | 443))))
    }

    /// Whether the patterns admit `url`.
    pub fn admits(&self, url: &Url) -> bool {
        let target = path_and_query(url);
        self.include.as_ref().is_none_or(|g| g.is_match(&target)) && !self.exclude.is_match(&target)
    }
}

fn path_and_query(url: &Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    }
}

fn globs(patterns: &[String]) -> Result<GlobSet> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        let glob = Glob::new(p.trim())
            .map_err(|e| CrawlError::InvalidInput(format!("pattern \"{p}\": {e}")))?;
        set.add(glob);
    }
    set.build()
        .map_err(|e| CrawlError::InvalidInput(format!("patterns: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test url")
    }

    #[test]
    fn normalizing_drops_fragments_and_refuses_other_schemes() {
        let table = [
            (
                "https://Wiki.Example.com:443/a#top",
                Some("https://wiki.example.com/a"),
            ),
            ("http://example.com", Some("http://example.com/")),
            ("http://example.com/a?", Some("http://example.com/a")),
            ("mailto:someone@example.com", None),
            ("ftp://example.com/file", None),
            ("https://user:pw@example.com/", None),
        ];
        for (input, want) in table {
            let got = normalize(&url(input)).map(|u| u.to_string());
            assert_eq!(got.as_deref(), want, "{input}");
        }
    }

    #[test]
    fn a_start_without_scheme_gets_https() {
        assert_eq!(
            parse_start("wiki.example.com/start")
                .map(|u| u.to_string())
                .ok(),
            Some("https://wiki.example.com/start".into())
        );
        assert!(parse_start("file:///etc/passwd").is_err());
        assert!(parse_start("http://").is_err());
    }

    #[test]
    fn scope_is_the_site_narrowed_by_patterns() {
        let start = url("https://wiki.example.com/wiki/Start");
        let scope =
            Scope::new(&start, &["/wiki/*".into()], &["*action=edit*".into()]).expect("scope");
        let table = [
            ("https://wiki.example.com/wiki/Other", true),
            ("http://wiki.example.com/wiki/Other", true),
            ("https://wiki.example.com/blog/post", false),
            ("https://wiki.example.com/wiki/Other?action=edit", false),
            ("https://other.example.com/wiki/Other", false),
            ("https://wiki.example.com:8443/wiki/Other", false),
        ];
        for (input, want) in table {
            let u = url(input);
            assert_eq!(scope.same_site(&u) && scope.admits(&u), want, "{input}");
        }
    }

    #[test]
    fn a_bad_pattern_is_an_error() {
        let start = url("https://example.com/");
        assert!(Scope::new(&start, &["/a/[".into()], &[]).is_err());
    }
}
