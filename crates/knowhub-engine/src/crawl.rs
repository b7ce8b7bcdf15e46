//! Web and wiki sources (seed 004 §3.3.1). A crawl keeps a site's pages as files in a folder
//! of the account (`<account>/web/<host>-<n>/`), so everything after the download is the
//! folder pipeline: change detection by content hash, removal, incremental re-index, the
//! folder's ACL, pages in citations. The store remembers which address each file came from
//! (citations link to it) and its validators (the next run asks "changed since?").
//!
//! Crawls are an administrator's business: a crawl reads what the server can reach, and its
//! pages are visible to administrators and its owner only until someone sets its ACL.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use knowhub_authz::RequestContext;
use knowhub_crawl::{
    Budget, CrawlSpec, FetchedPage, HttpFetcher, KnownPage, Outcome, PageReport, Sink, Validators,
    heading_anchors,
};
use knowhub_store::{CrawlPageRecord, CrawlRecord, PageAddress, SourceId};
use serde::{Deserialize, Serialize};

use crate::queue::now_ms;
use crate::{Engine, EngineError, Result};

/// How a crawl runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CrawlSettings {
    /// Links followed from the start page (0 = the start page and its sitemap only).
    pub depth: u32,
    /// Globs on an address's path and query (`/wiki/*`); none = the whole site.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    /// Seconds between scheduled runs; `None` = run by hand only.
    pub every_secs: Option<u64>,
    pub max_pages: usize,
    pub max_page_bytes: u64,
    pub max_total_bytes: u64,
    /// The least time between two requests to the site (`delay_ms`: in ms).
    pub delay_ms: u64,
}

impl Default for CrawlSettings {
    fn default() -> Self {
        let budget = Budget::default();
        CrawlSettings {
            depth: 3,
            include: Vec::new(),
            exclude: Vec::new(),
            every_secs: None,
            max_pages: budget.max_pages,
            max_page_bytes: budget.max_page_bytes,
            max_total_bytes: budget.max_total_bytes,
            delay_ms: 500,
        }
    }
}

/// The shortest schedule accepted: a site is not asked for everything more often.
pub const MIN_EVERY: Duration = Duration::from_secs(5 * 60);
/// Requests wait at most this long for an answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a run by hand waits for a scheduled run of the same source to finish.
const WAIT_FOR_RUNNING: Duration = Duration::from_secs(15 * 60);
/// Page problems kept in a run's summary.
const KEEP_PROBLEMS: usize = 50;

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CrawlSummary {
    /// When it finished (ms since the Unix epoch).
    pub finished_at: i64,
    pub fetched: usize,
    pub unchanged: usize,
    /// Pages kept before and gone now (their documents are removed).
    pub removed: usize,
    /// Addresses that answered 4xx.
    pub gone: usize,
    pub duplicates: usize,
    pub skipped: usize,
    /// Pages that failed this time (an earlier copy is kept where there is one).
    pub failed: usize,
    /// Pages the crawl keeps now.
    pub pages: usize,
    /// Files queued for ingestion.
    pub queued: usize,
    /// Why the run ended early (a budget, a cancel).
    pub stopped: Option<String>,
    /// Why nothing was concluded (robots.txt or the start page unreachable).
    pub aborted: Option<String>,
    /// `address: reason` for failed and skipped pages (the first few).
    pub problems: Vec<String>,
}

/// A crawl source as an administrator sees it.
#[derive(Debug, Clone, Serialize)]
pub struct CrawlView {
    pub id: i64,
    pub url: String,
    /// The folder its pages are kept in (set its ACL to share them).
    pub folder: String,
    pub owner: Option<String>,
    pub settings: CrawlSettings,
    pub documents: u64,
    pub last_run: Option<CrawlSummary>,
    /// When the schedule runs it next (ms since the Unix epoch).
    pub next_run: Option<i64>,
}

/// One run: the summary and every address's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct CrawlRun {
    pub crawl: CrawlView,
    pub summary: CrawlSummary,
    pub pages: Vec<PageReport>,
}

impl CrawlSettings {
    fn check(&self, start: &knowhub_crawl::PageUrl) -> Result<()> {
        knowhub_crawl::Scope::new(start, &self.include, &self.exclude).map_err(invalid)?;
        if self
            .every_secs
            .is_some_and(|s| Duration::from_secs(s) < MIN_EVERY)
        {
            return Err(EngineError::InvalidInput(format!(
                "a crawl runs at most every {} minutes",
                MIN_EVERY.as_secs() / 60
            )));
        }
        if self.max_pages == 0 || self.max_page_bytes == 0 || self.max_total_bytes == 0 {
            return Err(EngineError::InvalidInput(
                "a crawl's page and byte budgets must be above zero".into(),
            ));
        }
        Ok(())
    }

    fn spec(&self, start: knowhub_crawl::PageUrl) -> CrawlSpec {
        CrawlSpec {
            depth: self.depth,
            include: self.include.clone(),
            exclude: self.exclude.clone(),
            budget: Budget {
                max_pages: self.max_pages,
                max_page_bytes: self.max_page_bytes,
                max_total_bytes: self.max_total_bytes,
            },
            min_delay: Duration::from_millis(self.delay_ms),
            use_sitemaps: true,
            start,
        }
    }
}

fn invalid(e: knowhub_crawl::CrawlError) -> EngineError {
    EngineError::InvalidInput(e.to_string())
}

/// The file a page is kept in under `root`: the address's path, made safe for every file
/// system, with a short hash of the whole address (so `?page=2`, case variants and cut
/// names never collide) and the extension of its type.
pub(crate) fn page_file(root: &Path, url: &str, extension: &str) -> PathBuf {
    let parsed = knowhub_crawl::PageUrl::parse(url).ok();
    let mut segments: Vec<String> = parsed
        .as_ref()
        .and_then(|u| u.path_segments().map(|s| s.map(str::to_owned).collect()))
        .unwrap_or_default();
    let last = segments.pop().unwrap_or_default();
    let mut path = root.to_path_buf();
    for seg in segments
        .iter()
        .map(|s| safe_segment(s))
        .filter(|s| !s.is_empty())
    {
        path.push(seg);
    }
    // The name's own extension goes: the file gets the one of the type the server sent.
    let name = percent_decode(&last);
    let stem = match name.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            stem
        }
        _ => name.as_str(),
    };
    let mut stem = safe_name(stem);
    if stem.is_empty() {
        stem = "index".into();
    }
    path.push(format!("{stem}-{}.{extension}", short_hash(url)));
    path
}

/// A path segment, percent-decoded, without characters file systems refuse, at most 80 bytes.
fn safe_segment(segment: &str) -> String {
    safe_name(&percent_decode(segment))
}

/// `decoded` without characters file systems refuse, at most 80 bytes, no leading dots.
fn safe_name(decoded: &str) -> String {
    let mut out = String::new();
    for c in decoded.chars() {
        let c = if matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|')
            || c.is_control()
        {
            '_'
        } else {
            c
        };
        if out.len() + c.len_utf8() > 80 {
            break;
        }
        out.push(c);
    }
    let trimmed = out.trim_matches(|c: char| c == '.' || c.is_whitespace());
    trimmed.to_owned()
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Eight hex digits of the address's BLAKE3 hash.
fn short_hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex()[..8].to_owned()
}

/// Writes pages under the crawl's folder, each atomically (a temporary file renamed).
struct FolderSink {
    root: PathBuf,
    /// Where each address is kept (earlier runs' files, then this run's).
    files: HashMap<String, PathBuf>,
}

impl Sink for FolderSink {
    fn keep(&mut self, page: &FetchedPage<'_>) -> std::result::Result<(), String> {
        let url = page.url.to_string();
        let path = page_file(&self.root, &url, page.extension);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let tmp = path.with_extension(format!("{}.part", page.extension));
        std::fs::write(&tmp, page.body).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(old) = self.files.insert(url, path.clone())
            && old != path
        {
            let _ = std::fs::remove_file(old);
        }
        Ok(())
    }

    fn previous_body(&mut self, url: &str) -> Option<Vec<u8>> {
        self.files.get(url).and_then(|p| std::fs::read(p).ok())
    }
}

impl Engine {
    /// Adds a crawl of the site at `url` (an administrator's), kept in a new folder of the
    /// account that only administrators and the caller can read until its ACL is set. Does
    /// not run it: see [`Engine::run_crawl`].
    pub fn add_crawl(
        &self,
        ctx: &RequestContext,
        url: &str,
        settings: CrawlSettings,
    ) -> Result<CrawlView> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "add a web source")?;
        let start = knowhub_crawl::parse_start(url).map_err(invalid)?;
        settings.check(&start)?;
        let url = start.to_string();
        if self.store().crawls()?.iter().any(|c| c.url == url) {
            return Err(EngineError::Conflict(format!("{url} is crawled already")));
        }
        let host = start.host_str().unwrap_or("site").replace(':', "_");
        let web = self.paths.account.join("web");
        let taken: HashSet<String> = self
            .store()
            .sources()?
            .into_iter()
            .filter_map(|s| s.root_path)
            .collect();
        let root = (1..)
            .map(|n| web.join(format!("{host}-{n}")))
            .find(|p| !p.exists() && !taken.contains(&p.display().to_string()))
            .ok_or_else(|| EngineError::InvalidInput("no folder name left".into()))?;
        std::fs::create_dir_all(&root).map_err(|e| EngineError::Io {
            path: root.display().to_string(),
            source: e,
        })?;
        // The folder as stored: canonical, as every other source root.
        let root = self.stored_path(&root);
        let root_text = root.display().to_string();
        let json = serde_json::to_string(&settings)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        let source = {
            let mut store = self.store();
            let source = store.folder_source(&root_text, &host)?;
            store.claim_source(source, &access.ctx.user)?;
            if !store.add_crawl(source, &url, &json)? {
                return Err(EngineError::Conflict(format!("{url} is crawled already")));
            }
            source
        };
        self.audit_write(&access, "crawl.add", &url, true)?;
        self.crawl_view(source)
    }

    /// Every crawl source (administrators).
    pub fn crawls(&self, ctx: &RequestContext) -> Result<Vec<CrawlView>> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "see web sources")?;
        Ok(self.store().crawls()?.into_iter().map(view).collect())
    }

    /// One crawl source (administrators).
    pub fn crawl(&self, ctx: &RequestContext, id: i64) -> Result<CrawlView> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "see web sources")?;
        self.crawl_record(id).map(view)
    }

    /// Changes a crawl's settings; the next run uses them.
    pub fn update_crawl(
        &self,
        ctx: &RequestContext,
        id: i64,
        settings: CrawlSettings,
    ) -> Result<CrawlView> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "change a web source")?;
        let record = self.crawl_record(id)?;
        let start = knowhub_crawl::parse_start(&record.url).map_err(invalid)?;
        settings.check(&start)?;
        let json = serde_json::to_string(&settings)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        self.store().set_crawl_settings(record.source, &json)?;
        self.audit_write(&access, "crawl.update", &record.url, true)?;
        self.crawl_view(record.source)
    }

    /// Runs a crawl now: downloads new and changed pages into its folder, deletes the files
    /// of pages that are gone, and queues the folder's changes for ingestion (processed by
    /// the queue, or at once with [`Engine::drain_queue`]).
    pub fn run_crawl(
        &self,
        ctx: &RequestContext,
        id: i64,
        cancel: Option<&AtomicBool>,
    ) -> Result<CrawlRun> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "run a web source")?;
        let record = self.crawl_record(id)?;
        // A scheduled run of the same source may be under way: wait for it, then run again
        // (cheap: unchanged pages cost a 304).
        let started = std::time::Instant::now();
        let run = loop {
            match self.run_crawl_record(&record, cancel) {
                Err(EngineError::Conflict(_)) if started.elapsed() < WAIT_FOR_RUNNING => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                other => break other,
            }
        };
        self.audit_write(&access, "crawl.run", &record.url, run.is_ok())?;
        run
    }

    /// Runs the crawls whose schedule is due (the background worker calls this). Returns
    /// each run's address and outcome.
    pub fn run_due_crawls(
        &self,
        cancel: Option<&AtomicBool>,
    ) -> Result<Vec<(String, Result<CrawlSummary>)>> {
        let now = now_ms();
        let mut out = Vec::new();
        for record in self.store().crawls()? {
            let due = next_run(&record).is_some_and(|next| next <= now);
            if !due {
                continue;
            }
            match self.run_crawl_record(&record, cancel) {
                // Run by hand right now (that run is this one), or another replica's source.
                Err(EngineError::Conflict(_) | EngineError::NotFound(_)) => {}
                result => out.push((record.url.clone(), result.map(|r| r.summary))),
            }
        }
        Ok(out)
    }

    /// Removes a crawl: its documents (from the store and the indexes), its folder, its record.
    pub fn remove_crawl(&self, ctx: &RequestContext, id: i64) -> Result<usize> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "remove a web source")?;
        let record = self.crawl_record(id)?;
        let _running = self.claim_crawl(record.source)?;
        let root = PathBuf::from(&record.root_path);
        self.store().cancel_jobs(Some(&record.root_path))?;
        // A source that never ran (or whose pages are all gone) has nothing stored to remove.
        let stored = !self.store().documents(Some(&record.root_path))?.is_empty();
        let removed = if stored {
            self.remove(ctx, std::slice::from_ref(&root))?.documents
        } else {
            0
        };
        if root.exists() {
            std::fs::remove_dir_all(&root).map_err(|e| EngineError::Io {
                path: record.root_path.clone(),
                source: e,
            })?;
        }
        self.store().remove_crawl(record.source)?;
        self.audit_write(&access, "crawl.remove", &record.url, true)?;
        Ok(removed)
    }

    fn crawl_record(&self, id: i64) -> Result<CrawlRecord> {
        self.store()
            .crawls()?
            .into_iter()
            .find(|c| c.source.0 == id)
            .ok_or_else(|| EngineError::NotFound(format!("no web source {id}")))
    }

    fn crawl_view(&self, source: SourceId) -> Result<CrawlView> {
        self.crawl_record(source.0).map(view)
    }

    /// Marks a crawl as running; the guard unmarks it. A second run at the same time is refused.
    fn claim_crawl(&self, source: SourceId) -> Result<CrawlGuard<'_>> {
        let mut running = self
            .running_crawls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !running.insert(source.0) {
            return Err(EngineError::Conflict(
                "this web source is being crawled right now".into(),
            ));
        }
        Ok(CrawlGuard {
            engine: self,
            source,
        })
    }

    fn run_crawl_record(
        &self,
        record: &CrawlRecord,
        cancel: Option<&AtomicBool>,
    ) -> Result<CrawlRun> {
        let _running = self.claim_crawl(record.source)?;
        let settings: CrawlSettings = serde_json::from_str(&record.settings).unwrap_or_default();
        let start = knowhub_crawl::parse_start(&record.url).map_err(invalid)?;
        let spec = settings.spec(start);
        let root = PathBuf::from(&record.root_path);
        if !root.parent().is_some_and(Path::exists) {
            // Team mode: the source's folder is on the replica that added it.
            return Err(EngineError::NotFound(format!(
                "the folder of {} ({}) is not on this server: run it where it was added",
                record.url, record.root_path
            )));
        }
        let stored = self.store().crawl_pages(record.source)?;
        // A page whose file went missing is asked for in full (a 304 would leave it missing).
        let previous: HashMap<String, KnownPage> = stored
            .iter()
            .filter(|p| Path::new(&p.path).is_file())
            .map(|p| {
                (
                    p.url.clone(),
                    KnownPage {
                        validators: Validators {
                            etag: p.etag.clone(),
                            last_modified: p.last_modified.clone(),
                        },
                        content_hash: p.content_hash.clone(),
                        extension: p.extension.clone(),
                    },
                )
            })
            .collect();
        std::fs::create_dir_all(&root).map_err(|e| EngineError::Io {
            path: record.root_path.clone(),
            source: e,
        })?;
        let mut sink = FolderSink {
            root: root.clone(),
            files: stored
                .iter()
                .map(|p| (p.url.clone(), PathBuf::from(&p.path)))
                .collect(),
        };
        let fetcher = HttpFetcher::new(knowhub_crawl::USER_AGENT, REQUEST_TIMEOUT);
        let report = knowhub_crawl::crawl(&spec, &previous, &fetcher, &mut sink, cancel)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;

        let mut summary = CrawlSummary {
            finished_at: now_ms(),
            stopped: report.stopped.clone(),
            aborted: report.aborted.clone(),
            ..CrawlSummary::default()
        };
        for page in &report.pages {
            let problem = match &page.outcome {
                Outcome::Fetched => {
                    summary.fetched += 1;
                    None
                }
                Outcome::Unchanged => {
                    summary.unchanged += 1;
                    None
                }
                Outcome::Duplicate { .. } => {
                    summary.duplicates += 1;
                    None
                }
                Outcome::Gone { .. } => {
                    summary.gone += 1;
                    None
                }
                Outcome::Skipped { reason } => {
                    summary.skipped += 1;
                    Some(reason)
                }
                Outcome::Failed { reason } => {
                    summary.failed += 1;
                    Some(reason)
                }
            };
            if let Some(reason) = problem
                && summary.problems.len() < KEEP_PROBLEMS
            {
                summary.problems.push(format!("{}: {reason}", page.url));
            }
        }

        // An aborted run concludes nothing: every page kept before stays.
        let pages: Vec<CrawlPageRecord> = if report.aborted.is_some() {
            stored.clone()
        } else {
            // A cancelled run did not look at every page: those it did not reach stay.
            let reached: HashSet<&str> = report
                .pages
                .iter()
                .map(|p| p.url.as_str())
                .chain(report.kept.iter().map(|k| k.url.as_str()))
                .collect();
            let unreached = stored
                .iter()
                .filter(|p| report.cancelled && !reached.contains(p.url.as_str()))
                .cloned();
            let fetched_now = summary.finished_at;
            let before: HashMap<&str, &CrawlPageRecord> =
                stored.iter().map(|p| (p.url.as_str(), p)).collect();
            report
                .kept
                .iter()
                .filter_map(|k| {
                    let path = sink.files.get(&k.url)?;
                    // Read from the kept file, so pages kept before anchors were recorded get
                    // theirs on the next run as well.
                    let anchors = if k.known.extension == "html" {
                        std::fs::read(path)
                            .map(|body| heading_anchors(&body))
                            .unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    Some(CrawlPageRecord {
                        url: k.url.clone(),
                        path: path.display().to_string(),
                        etag: k.known.validators.etag.clone(),
                        last_modified: k.known.validators.last_modified.clone(),
                        content_hash: k.known.content_hash.clone(),
                        extension: k.known.extension.clone(),
                        fetched_at: before
                            .get(k.url.as_str())
                            .filter(|b| b.content_hash == k.known.content_hash)
                            .map_or(fetched_now, |b| b.fetched_at),
                        anchors,
                    })
                })
                .chain(unreached)
                .collect()
        };
        let keep: HashSet<&str> = pages.iter().map(|p| p.path.as_str()).collect();
        for old in &stored {
            if !keep.contains(old.path.as_str()) {
                summary.removed += 1;
                let _ = std::fs::remove_file(&old.path);
            }
        }
        summary.pages = pages.len();
        let json = serde_json::to_string(&summary)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        self.store()
            .finish_crawl(record.source, summary.finished_at, &json, &pages)?;
        summary.queued = self.reconcile_source(&record.root_path)?;
        Ok(CrawlRun {
            crawl: self.crawl_view(record.source)?,
            summary,
            pages: report.pages,
        })
    }

    /// The address each of `paths` was crawled from, with its headings' anchors (for the
    /// documents that were crawled).
    pub(crate) fn page_urls(&self, paths: &[String]) -> Result<HashMap<String, PageAddress>> {
        Ok(self
            .store()
            .page_urls(paths)?
            .into_iter()
            .map(|a| (a.path.clone(), a))
            .collect())
    }
}

/// The address a citation of a passage under `headings` (outermost first) links to: the
/// page's, with the fragment of the innermost heading the page names unambiguously.
pub(crate) fn cited_url(page: &PageAddress, headings: &[String]) -> String {
    let collapse = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for heading in headings.iter().rev() {
        let heading = collapse(heading);
        let mut ids = page
            .anchors
            .iter()
            .filter(|(h, _)| *h == heading)
            .map(|(_, id)| id.as_str());
        let Some(id) = ids.next() else {
            continue;
        };
        // The same heading twice with different anchors: which one is meant is unknown.
        if ids.any(|other| other != id) {
            continue;
        }
        let mut url = page.url.split('#').next().unwrap_or_default().to_string();
        url.push('#');
        url.extend(percent_encoding::utf8_percent_encode(id, FRAGMENT));
        return url;
    }
    page.url.clone()
}

/// What a URL fragment may not hold as it is (the WHATWG URL standard's fragment set).
const FRAGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'<')
    .add(b'>')
    .add(b'`');

#[cfg(test)]
mod cited_url_tests {
    use super::*;

    #[test]
    fn the_innermost_heading_the_page_names_once_gives_the_fragment() {
        let page = PageAddress {
            path: "/w/a.html".into(),
            url: "https://example.com/handbook".into(),
            anchors: vec![
                ("Handbook".into(), "top".into()),
                ("Travel rules".into(), "travel".into()),
                ("Examples".into(), "ex-1".into()),
                ("Examples".into(), "ex-2".into()),
                ("差旅 报销".into(), "差旅".into()),
            ],
        };
        let cite = |h: &[&str]| {
            let h: Vec<String> = h.iter().map(|s| s.to_string()).collect();
            cited_url(&page, &h)
        };
        assert_eq!(
            cite(&["Handbook", "Travel  rules"]),
            "https://example.com/handbook#travel"
        );
        assert_eq!(
            cite(&["Handbook", "Travel rules", "Examples"]),
            "https://example.com/handbook#travel"
        );
        assert_eq!(
            cite(&["Handbook", "Unknown"]),
            "https://example.com/handbook#top"
        );
        assert_eq!(cite(&[]), "https://example.com/handbook");
        assert_eq!(
            cite(&["差旅 报销"]),
            "https://example.com/handbook#%E5%B7%AE%E6%97%85"
        );
    }
}

struct CrawlGuard<'a> {
    engine: &'a Engine,
    source: SourceId,
}

impl Drop for CrawlGuard<'_> {
    fn drop(&mut self) {
        self.engine
            .running_crawls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.source.0);
    }
}

fn next_run(record: &CrawlRecord) -> Option<i64> {
    let settings: CrawlSettings = serde_json::from_str(&record.settings).ok()?;
    let every = settings.every_secs? as i64 * 1000;
    Some(record.last_run.map_or(0, |last| last + every))
}

fn view(record: CrawlRecord) -> CrawlView {
    let settings: CrawlSettings = serde_json::from_str(&record.settings).unwrap_or_default();
    CrawlView {
        id: record.source.0,
        next_run: next_run(&record),
        url: record.url,
        folder: record.root_path,
        owner: record.owner,
        settings,
        documents: record.documents,
        last_run: record
            .last_report
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_files_are_safe_distinct_and_typed() {
        let root = Path::new("/data/web/wiki-1");
        let table = [
            (
                "https://wiki.example.com/",
                "html",
                "/data/web/wiki-1/index-",
            ),
            (
                "https://wiki.example.com/wiki/Start",
                "html",
                "/data/web/wiki-1/wiki/Start-",
            ),
            (
                "https://wiki.example.com/a/b.pdf",
                "pdf",
                "/data/web/wiki-1/a/b-",
            ),
            (
                "https://wiki.example.com/%E6%96%87%E6%A1%A3/%E4%BB%8B%E7%BB%8D",
                "html",
                "/data/web/wiki-1/文档/介绍-",
            ),
            (
                "https://wiki.example.com/../../etc/passwd",
                "html",
                "/data/web/wiki-1/etc/passwd-",
            ),
            (
                "https://wiki.example.com/a%2F..%2Fb",
                "html",
                "/data/web/wiki-1/a_.._b-",
            ),
        ];
        for (url, ext, prefix) in table {
            let file = page_file(root, url, ext).display().to_string();
            assert!(file.starts_with(prefix), "{url} → {file}");
            assert!(file.ends_with(&format!(".{ext}")), "{url} → {file}");
        }
        assert_ne!(
            page_file(root, "https://wiki.example.com/list?page=1", "html"),
            page_file(root, "https://wiki.example.com/list?page=2", "html")
        );
        let long = format!("https://wiki.example.com/{}", "x".repeat(500));
        let name = page_file(root, &long, "html");
        assert!(name.file_name().is_some_and(|n| n.len() < 100));
    }

    #[test]
    fn settings_are_checked() {
        let start = knowhub_crawl::parse_start("https://example.com/").expect("url");
        assert!(CrawlSettings::default().check(&start).is_ok());
        let often = CrawlSettings {
            every_secs: Some(60),
            ..CrawlSettings::default()
        };
        assert!(often.check(&start).is_err());
        let bad = CrawlSettings {
            include: vec!["/a/[".into()],
            ..CrawlSettings::default()
        };
        assert!(bad.check(&start).is_err());
    }
}
