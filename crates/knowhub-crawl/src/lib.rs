//! A polite crawler for web sites and wikis, feeding KnowHub's ingestion.
//!
//! [`crawl`] walks a site breadth-first from a start address, within a depth, the start's
//! site, include/exclude patterns and a budget. It obeys `robots.txt` (rules and crawl
//! delay), `<meta name="robots">`, `X-Robots-Tag` and `rel="nofollow"`, seeds itself from
//! sitemaps, paces requests to the host, sends conditional requests for pages it has seen,
//! follows redirects itself (loops and off-site hops are reported), and keeps one copy of a
//! page reached under several addresses (canonical links, identical content). Pages go to a
//! [`Sink`]; what the site holds now is [`CrawlReport::kept`], so the caller can remove pages
//! that disappeared. Nothing here knows about storage or permissions.
//!
//! ```no_run
//! use knowhub_crawl::{crawl, CrawlSpec, FetchedPage, HttpFetcher, Sink};
//! struct Print;
//! impl Sink for Print {
//!     fn keep(&mut self, page: &FetchedPage<'_>) -> Result<(), String> {
//!         println!("{} ({} bytes)", page.url, page.body.len());
//!         Ok(())
//!     }
//!     fn previous_body(&mut self, _url: &str) -> Option<Vec<u8>> { None }
//! }
//! let spec = CrawlSpec::new(knowhub_crawl::parse_start("wiki.example.com")?);
//! let fetcher = HttpFetcher::new("knowhub", std::time::Duration::from_secs(30));
//! let report = crawl(&spec, &Default::default(), &fetcher, &mut Print, None)?;
//! # Ok::<(), knowhub_crawl::CrawlError>(())
//! ```

mod error;
mod fetch;
mod page;
mod scope;
mod sitemap;
#[cfg(feature = "testing")]
pub mod testing;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};
use url::Url;

pub use error::{CrawlError, Result};
pub use fetch::{FetchError, Fetcher, HttpFetcher, Response, Validators};
pub use page::{Directives, PageLinks, heading_anchors, read_html};
pub use scope::{Scope, normalize, parse_start};
pub use url::Url as PageUrl;

/// The product token matched against `User-agent` lines of `robots.txt`.
pub const ROBOTS_TOKEN: &str = "knowhub";
/// The `User-Agent` header sent with every request.
pub const USER_AGENT: &str = concat!(
    "knowhub/",
    env!("CARGO_PKG_VERSION"),
    " (knowledge-base crawler; +robots.txt token \"knowhub\")"
);
/// Redirect hops followed for one page.
const MAX_REDIRECTS: usize = 10;
/// A `Crawl-delay` longer than this is capped (a day-long delay would stop the crawl).
const MAX_CRAWL_DELAY: Duration = Duration::from_secs(30);
/// Sitemap files read per crawl (an index may list thousands).
const MAX_SITEMAPS: usize = 20;
const MAX_ROBOTS_BYTES: u64 = 512 * 1024;
const MAX_SITEMAP_BYTES: u64 = 50 * 1024 * 1024;

/// How much one crawl may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Budget {
    /// Pages kept (fetched or unchanged).
    pub max_pages: usize,
    /// Bytes of one page; larger pages are skipped without being downloaded when announced.
    pub max_page_bytes: u64,
    /// Bytes downloaded in all.
    pub max_total_bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_pages: 1_000,
            max_page_bytes: 20 << 20,
            max_total_bytes: 1 << 30,
        }
    }
}

/// What to crawl.
#[derive(Debug, Clone)]
pub struct CrawlSpec {
    pub start: Url,
    /// Links followed from the start page: 0 = the start page (and its sitemap) only.
    pub depth: u32,
    /// Globs on an address's path and query; none = the whole site.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub budget: Budget,
    /// The least time between two requests to the site (`Crawl-delay` may ask for more).
    pub min_delay: Duration,
    /// Whether to read the sitemaps `robots.txt` names (or `/sitemap.xml`).
    pub use_sitemaps: bool,
}

impl CrawlSpec {
    /// The defaults: depth 3, the whole site, the default budget, half a second between requests.
    pub fn new(start: Url) -> CrawlSpec {
        CrawlSpec {
            start,
            depth: 3,
            include: Vec::new(),
            exclude: Vec::new(),
            budget: Budget::default(),
            min_delay: Duration::from_millis(500),
            use_sitemaps: true,
        }
    }
}

/// What an earlier crawl kept of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPage {
    pub validators: Validators,
    pub content_hash: String,
    /// The file extension its content type maps to (`html`, `pdf`, …).
    pub extension: String,
}

/// A page to keep.
#[derive(Debug)]
pub struct FetchedPage<'a> {
    /// The address the page is kept under (its canonical one when it names one on the site).
    pub url: &'a Url,
    pub extension: &'a str,
    pub body: &'a [u8],
    pub content_hash: &'a str,
}

/// Where kept pages go.
pub trait Sink {
    /// Keeps a new or changed page. An error stops the crawl.
    fn keep(&mut self, page: &FetchedPage<'_>) -> std::result::Result<(), String>;
    /// The body kept earlier for `url`, to follow its links when the server says 304.
    fn previous_body(&mut self, url: &str) -> Option<Vec<u8>>;
}

/// What happened to one address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// New or changed, kept.
    Fetched,
    /// The server said 304 (or sent the same bytes): the kept copy stands.
    Unchanged,
    /// The same page as another address (canonical link, redirect, identical content).
    Duplicate { of: String },
    /// Not kept, by rule: robots.txt, noindex, too large, not a document type, off-site redirect.
    Skipped { reason: String },
    /// The server says it is gone (4xx): removed if it was kept.
    Gone { status: u16 },
    /// No answer worth trusting (5xx, network, redirect loop): an earlier copy is kept.
    Failed { reason: String },
}

/// One address's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct PageReport {
    pub url: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// A page the site holds now, as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptPage {
    pub url: String,
    pub known: KnownPage,
}

/// The result of one crawl.
#[derive(Debug, Clone, Default)]
pub struct CrawlReport {
    pub pages: Vec<PageReport>,
    /// Everything the site holds now: fetched, unchanged, and earlier copies of pages that
    /// failed this time. Pages kept before and missing here are gone from the site.
    pub kept: Vec<KeptPage>,
    /// Why the crawl ended before its frontier was empty (budget, cancel).
    pub stopped: Option<String>,
    /// Cancelled: addresses not reached were not looked at (the caller keeps what it had).
    pub cancelled: bool,
    /// Set when nothing can be concluded about missing pages (robots.txt or the start page
    /// unreachable): the caller must keep everything it had.
    pub aborted: Option<String>,
    /// Addresses on the site left out by the include/exclude patterns.
    pub excluded_by_pattern: usize,
    pub bytes: u64,
}

/// The extension KnowHub's parsers know a media type by.
fn extension_for(content_type: Option<&str>, url: &Url, body: &[u8]) -> Option<&'static str> {
    let by_type = match content_type.unwrap_or_default() {
        "text/html" | "application/xhtml+xml" => Some("html"),
        "text/plain" => Some("txt"),
        "text/markdown" | "text/x-markdown" => Some("md"),
        "text/csv" => Some("csv"),
        "application/pdf" => Some("pdf"),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => Some("docx"),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => Some("xlsx"),
        "application/vnd.openxmlformats-officedocument.presentationml.presentation" => Some("pptx"),
        "application/vnd.oasis.opendocument.text" => Some("odt"),
        "application/vnd.oasis.opendocument.spreadsheet" => Some("ods"),
        "application/vnd.oasis.opendocument.presentation" => Some("odp"),
        "message/rfc822" => Some("eml"),
        _ => None,
    };
    if by_type.is_some() {
        return by_type;
    }
    // Servers often send `application/octet-stream` for downloads: trust the address's suffix.
    let generic = matches!(
        content_type,
        None | Some("application/octet-stream" | "binary/octet-stream" | "application/x-download")
    );
    if generic {
        let ext = url
            .path_segments()
            .and_then(|mut s| s.next_back())
            .and_then(|name| name.rsplit_once('.'))
            .map(|(_, ext)| ext.to_ascii_lowercase());
        const KNOWN: &[&str] = &[
            "html", "htm", "txt", "md", "csv", "pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp",
        ];
        if let Some(found) = ext.and_then(|e| KNOWN.iter().find(|k| **k == e)) {
            return Some(if *found == "htm" { "html" } else { found });
        }
        let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
        if head.contains("<html") || head.contains("<!doctype html") {
            return Some("html");
        }
    }
    None
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Spaces requests to the site.
struct Pacer {
    delay: Duration,
    next: Option<Instant>,
}

impl Pacer {
    fn wait(&mut self) {
        if let Some(next) = self.next {
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
        }
        self.next = Some(Instant::now() + self.delay);
    }
}

/// The end of a redirect chain.
enum Landing {
    Page { url: Url, response: Response },
    Outcome(Outcome),
}

struct Crawler<'a> {
    spec: &'a CrawlSpec,
    scope: Scope,
    robots: Option<texting_robots::Robot>,
    fetcher: &'a dyn Fetcher,
    pacer: Pacer,
    seen: HashSet<String>,
}

impl Crawler<'_> {
    fn allowed(&self, url: &Url) -> bool {
        self.robots.as_ref().is_none_or(|r| r.allowed(url.as_str()))
    }

    fn in_scope(&self, url: &Url) -> bool {
        self.scope.same_site(url) && (self.scope.admits(url) || *url == self.spec.start)
    }

    /// GETs `url`, following redirects that stay in scope.
    fn fetch(
        &mut self,
        url: &Url,
        validators: Option<&Validators>,
        max_bytes: u64,
    ) -> std::result::Result<Landing, FetchError> {
        let mut current = url.clone();
        let mut chain = vec![current.to_string()];
        for hop in 0..=MAX_REDIRECTS {
            self.pacer.wait();
            let response = self.fetcher.get(
                &current,
                if hop == 0 { validators } else { None },
                max_bytes,
            )?;
            if !(300..400).contains(&response.status) || response.status == 304 {
                return Ok(Landing::Page {
                    url: current,
                    response,
                });
            }
            let Some(target) = response
                .location
                .as_deref()
                .and_then(|l| current.join(l).ok())
                .and_then(|u| normalize(&u))
            else {
                return Ok(Landing::Outcome(Outcome::Failed {
                    reason: format!("HTTP {} without a usable Location", response.status),
                }));
            };
            if chain.contains(&target.to_string()) {
                return Ok(Landing::Outcome(Outcome::Failed {
                    reason: format!("redirect loop: {} → {target}", chain.join(" → ")),
                }));
            }
            if !self.in_scope(&target) {
                return Ok(Landing::Outcome(Outcome::Skipped {
                    reason: format!("redirects to {target}, outside the crawl"),
                }));
            }
            if !self.allowed(&target) {
                return Ok(Landing::Outcome(Outcome::Skipped {
                    reason: format!("redirects to {target}, which robots.txt disallows"),
                }));
            }
            chain.push(target.to_string());
            current = target;
        }
        Ok(Landing::Outcome(Outcome::Failed {
            reason: format!("more than {MAX_REDIRECTS} redirects"),
        }))
    }
}

/// Crawls `spec`'s site. `previous` is what earlier crawls kept (by address), for
/// conditional requests; `cancel` stops it between pages. Page problems are reported in the
/// result; an error means the sink failed or the spec is invalid.
pub fn crawl(
    spec: &CrawlSpec,
    previous: &HashMap<String, KnownPage>,
    fetcher: &dyn Fetcher,
    sink: &mut dyn Sink,
    cancel: Option<&AtomicBool>,
) -> Result<CrawlReport> {
    let scope = Scope::new(&spec.start, &spec.include, &spec.exclude)?;
    let mut report = CrawlReport::default();
    let mut crawler = Crawler {
        spec,
        scope,
        robots: None,
        fetcher,
        pacer: Pacer {
            delay: spec.min_delay,
            next: None,
        },
        seen: HashSet::new(),
    };

    // robots.txt (RFC 9309): 4xx = no rules; a server error or no answer = assume everything
    // is disallowed, so the crawl stops and keeps what it had.
    let mut robots_url = spec.start.clone();
    robots_url.set_path("/robots.txt");
    robots_url.set_query(None);
    match crawler.fetch(&robots_url, None, MAX_ROBOTS_BYTES) {
        Ok(Landing::Page { response, .. }) if response.status == 200 => {
            crawler.robots = texting_robots::Robot::new(ROBOTS_TOKEN, &response.body).ok();
        }
        Ok(Landing::Page { response, .. }) if (400..500).contains(&response.status) => {}
        Ok(Landing::Page { response, .. }) => {
            report.aborted = Some(format!(
                "{robots_url} answered HTTP {}: the site is not crawled until it answers",
                response.status
            ));
            return Ok(report);
        }
        Ok(Landing::Outcome(outcome)) => {
            report.aborted = Some(format!("{robots_url}: {outcome:?}"));
            return Ok(report);
        }
        Err(e) => {
            report.aborted = Some(format!(
                "{robots_url} could not be read ({e}): the site is not crawled until it answers"
            ));
            return Ok(report);
        }
    }
    if let Some(delay) = crawler.robots.as_ref().and_then(|r| r.delay) {
        let asked = Duration::try_from_secs_f32(delay.max(0.0)).unwrap_or(MAX_CRAWL_DELAY);
        crawler.pacer.delay = crawler.pacer.delay.max(asked.min(MAX_CRAWL_DELAY));
    }

    let mut frontier: VecDeque<(Url, u32)> = VecDeque::new();
    crawler.seen.insert(spec.start.to_string());
    frontier.push_back((spec.start.clone(), 0));
    if spec.use_sitemaps && spec.depth > 0 {
        for page in read_sitemaps(&mut crawler) {
            if crawler.in_scope(&page) && crawler.seen.insert(page.to_string()) {
                frontier.push_back((page, 1));
            }
        }
    }

    let mut by_hash: HashMap<String, String> = HashMap::new();
    let mut first = true;
    while let Some((url, depth)) = frontier.pop_front() {
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            report.stopped = Some("cancelled".into());
            report.cancelled = true;
            break;
        }
        if report.kept.len() >= spec.budget.max_pages {
            report.stopped = Some(format!(
                "the page budget ({}) was reached",
                spec.budget.max_pages
            ));
            break;
        }
        let is_start = std::mem::take(&mut first);
        if !crawler.allowed(&url) {
            report.pages.push(PageReport {
                url: url.to_string(),
                outcome: Outcome::Skipped {
                    reason: "robots.txt disallows it".into(),
                },
            });
            continue;
        }
        let known = previous.get(url.as_str());
        let remaining = spec.budget.max_total_bytes.saturating_sub(report.bytes);
        let max_bytes = spec.budget.max_page_bytes.min(remaining);
        let landing = crawler.fetch(&url, known.map(|k| &k.validators), max_bytes);
        let keep_previous = |report: &mut CrawlReport, reason: String| {
            if let Some(k) = known {
                report.kept.push(KeptPage {
                    url: url.to_string(),
                    known: k.clone(),
                });
            }
            report.pages.push(PageReport {
                url: url.to_string(),
                outcome: Outcome::Failed { reason },
            });
        };
        let (landed, response) = match landing {
            // Less room than a page may take: the total budget, not this page, is the limit.
            Err(FetchError::TooLarge { limit, .. }) if limit < spec.budget.max_page_bytes => {
                report.stopped = Some(format!(
                    "the byte budget ({} bytes) was reached",
                    spec.budget.max_total_bytes
                ));
                break;
            }
            Err(e @ FetchError::TooLarge { .. }) => {
                report.pages.push(PageReport {
                    url: url.to_string(),
                    outcome: Outcome::Skipped {
                        reason: e.to_string(),
                    },
                });
                continue;
            }
            Err(FetchError::Network(reason)) => {
                if is_start {
                    report.aborted = Some(format!("the start page could not be read: {reason}"));
                    return Ok(report);
                }
                keep_previous(&mut report, reason);
                continue;
            }
            Ok(Landing::Outcome(Outcome::Failed { reason })) => {
                keep_previous(&mut report, reason);
                continue;
            }
            Ok(Landing::Outcome(outcome)) => {
                report.pages.push(PageReport {
                    url: url.to_string(),
                    outcome,
                });
                continue;
            }
            Ok(Landing::Page {
                url: landed,
                response,
            }) => (landed, response),
        };
        let status = response.status;
        if status >= 500 || status == 408 || status == 429 {
            if is_start {
                report.aborted = Some(format!("the start page answered HTTP {status}"));
                return Ok(report);
            }
            keep_previous(&mut report, format!("HTTP {status}"));
            continue;
        }
        if status >= 400 || !(status == 200 || status == 304) {
            report.pages.push(PageReport {
                url: url.to_string(),
                outcome: Outcome::Gone { status },
            });
            continue;
        }
        if landed != url && !crawler.seen.insert(landed.to_string()) {
            report.pages.push(PageReport {
                url: url.to_string(),
                outcome: Outcome::Duplicate {
                    of: landed.to_string(),
                },
            });
            continue;
        }

        // Unchanged (304): the kept copy stands; its links are read from it.
        let (extension, body, hash, validators, fetched) = if status == 304 {
            let Some(k) = known else {
                keep_previous(&mut report, "HTTP 304 to an unconditional request".into());
                continue;
            };
            let body = if k.extension == "html" && depth < spec.depth {
                sink.previous_body(url.as_str())
            } else {
                None
            };
            (
                k.extension.clone(),
                body.unwrap_or_default(),
                k.content_hash.clone(),
                k.validators.clone(),
                false,
            )
        } else {
            let Some(ext) =
                extension_for(response.content_type.as_deref(), &landed, &response.body)
            else {
                report.pages.push(PageReport {
                    url: landed.to_string(),
                    outcome: Outcome::Skipped {
                        reason: format!(
                            "not a document type KnowHub reads ({})",
                            response
                                .content_type
                                .as_deref()
                                .unwrap_or("no content type")
                        ),
                    },
                });
                continue;
            };
            report.bytes += response.body.len() as u64;
            let hash = sha256_hex(&response.body);
            let validators = Validators {
                etag: response.etag.clone(),
                last_modified: response.last_modified.clone(),
            };
            let same = previous
                .get(landed.as_str())
                .is_some_and(|k| k.content_hash == hash);
            (ext.to_owned(), response.body, hash, validators, !same)
        };

        let mut directives = Directives::default();
        for tag in &response.robots_tag {
            directives = directives.merge(Directives::parse(tag));
        }
        let mut kept_url = landed.clone();
        if extension == "html" && !body.is_empty() {
            let read = read_html(&body, &landed);
            directives = directives.merge(read.directives);
            if !directives.nofollow && depth < spec.depth {
                for link in read.links {
                    if !crawler.in_scope(&link) {
                        if crawler.scope.same_site(&link) {
                            report.excluded_by_pattern += 1;
                        }
                        continue;
                    }
                    if crawler.seen.insert(link.to_string()) {
                        frontier.push_back((link, depth + 1));
                    }
                }
            }
            if let Some(canonical) = read
                .canonical
                .filter(|c| *c != landed && crawler.in_scope(c))
            {
                if !crawler.seen.insert(canonical.to_string()) {
                    report.pages.push(PageReport {
                        url: landed.to_string(),
                        outcome: Outcome::Duplicate {
                            of: canonical.to_string(),
                        },
                    });
                    continue;
                }
                kept_url = canonical;
            }
        }
        if directives.noindex {
            report.pages.push(PageReport {
                url: landed.to_string(),
                outcome: Outcome::Skipped {
                    reason: "the page asks not to be indexed (noindex)".into(),
                },
            });
            continue;
        }
        if let Some(first) = by_hash.get(&hash) {
            report.pages.push(PageReport {
                url: kept_url.to_string(),
                outcome: Outcome::Duplicate { of: first.clone() },
            });
            continue;
        }
        by_hash.insert(hash.clone(), kept_url.to_string());
        if fetched {
            sink.keep(&FetchedPage {
                url: &kept_url,
                extension: &extension,
                body: &body,
                content_hash: &hash,
            })
            .map_err(|reason| CrawlError::Sink {
                url: kept_url.to_string(),
                reason,
            })?;
        }
        report.kept.push(KeptPage {
            url: kept_url.to_string(),
            known: KnownPage {
                validators,
                content_hash: hash,
                extension,
            },
        });
        report.pages.push(PageReport {
            url: kept_url.to_string(),
            outcome: if fetched {
                Outcome::Fetched
            } else {
                Outcome::Unchanged
            },
        });
    }
    Ok(report)
}

/// Page addresses from the sitemaps robots.txt names, or `/sitemap.xml` when it names none.
fn read_sitemaps(crawler: &mut Crawler<'_>) -> Vec<Url> {
    let mut queue: VecDeque<Url> = match &crawler.robots {
        Some(r) if !r.sitemaps.is_empty() => r
            .sitemaps
            .iter()
            .filter_map(|s| Url::parse(s).ok())
            .collect(),
        _ => crawler
            .spec
            .start
            .join("/sitemap.xml")
            .into_iter()
            .collect(),
    };
    let mut pages = Vec::new();
    let mut read = 0;
    let mut visited = HashSet::new();
    while let Some(url) = queue.pop_front() {
        if read >= MAX_SITEMAPS || !visited.insert(url.to_string()) {
            continue;
        }
        if !crawler.scope.same_site(&url) || !crawler.allowed(&url) {
            continue;
        }
        read += 1;
        let Ok(Landing::Page { response, .. }) = crawler.fetch(&url, None, MAX_SITEMAP_BYTES)
        else {
            continue;
        };
        if response.status != 200 {
            continue;
        }
        let map = sitemap::read(&response.body);
        queue.extend(map.sitemaps.iter().filter_map(|s| url.join(s).ok()));
        pages.extend(
            map.pages
                .iter()
                .filter_map(|p| url.join(p).ok())
                .filter_map(|u| normalize(&u)),
        );
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_map_to_parser_extensions() {
        let page = Url::parse("https://example.com/files/report.PDF").expect("url");
        let plain = Url::parse("https://example.com/page").expect("url");
        assert_eq!(extension_for(Some("text/html"), &plain, b""), Some("html"));
        assert_eq!(
            extension_for(Some("application/pdf"), &plain, b""),
            Some("pdf")
        );
        assert_eq!(
            extension_for(Some("application/octet-stream"), &page, b""),
            Some("pdf")
        );
        assert_eq!(
            extension_for(None, &plain, b"<!DOCTYPE html><p>x"),
            Some("html")
        );
        assert_eq!(extension_for(Some("image/png"), &page, b""), None);
        assert_eq!(extension_for(Some("application/zip"), &plain, b""), None);
    }
}
