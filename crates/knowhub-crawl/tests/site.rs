//! Crawls a generated site served on loopback: links, a sitemap, robots.txt, redirects,
//! duplicates, a page that changes and one that disappears between runs.

use std::collections::HashMap;
use std::time::Duration;

use knowhub_crawl::testing::{Route, TestSite};
use knowhub_crawl::{
    CrawlReport, CrawlSpec, FetchedPage, HttpFetcher, KnownPage, Outcome, Sink, crawl, parse_start,
};

#[derive(Default)]
struct Memory {
    bodies: HashMap<String, Vec<u8>>,
    kept_now: Vec<String>,
}

impl Sink for Memory {
    fn keep(&mut self, page: &FetchedPage<'_>) -> Result<(), String> {
        self.bodies.insert(page.url.to_string(), page.body.to_vec());
        self.kept_now.push(page.url.to_string());
        Ok(())
    }
    fn previous_body(&mut self, url: &str) -> Option<Vec<u8>> {
        self.bodies.get(url).cloned()
    }
}

fn site() -> TestSite {
    let site = TestSite::start().expect("server");
    site.set(
        "/robots.txt",
        Route::page(
            "text/plain",
            format!(
                "User-agent: *\nDisallow: /private/\n\nSitemap: {}\n",
                site.url("/sitemap.xml")
            ),
        ),
    );
    site.set(
        "/sitemap.xml",
        Route::page(
            "application/xml",
            format!(
                "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <url><loc>{}</loc></url></urlset>",
                site.url("/from-sitemap")
            ),
        ),
    );
    site.set(
        "/",
        Route::html(
            "<html><head><title>Home</title></head><body><h1>Home</h1>\
             <a href=\"/a\">A</a> <a href=\"/b#part\">B</a> <a href=\"/notes.txt\">notes</a>\
             <a href=\"/private/secret\">secret</a> <a href=\"/loop1\">loop</a>\
             <a href=\"/big\">big</a> <a href=\"/moved\">moved</a> <a href=\"/copy\">copy</a>\
             <a href=\"/hidden\">hidden</a> <a href=\"/logo.png\">logo</a>\
             <a href=\"/gone\">gone</a> <a href=\"https://elsewhere.invalid/\">away</a>\
             <a href=\"/deep\">deep</a></body></html>",
        ),
    );
    site.set(
        "/a",
        Route::html("<html><body><h1>A</h1><p>Alpha page.</p></body></html>"),
    );
    site.set(
        "/b",
        Route::html("<html><body><h1>B</h1><p>Beta, version one.</p></body></html>"),
    );
    site.set(
        "/notes.txt",
        Route::page("text/plain", "Plain notes 纯文本笔记"),
    );
    site.set(
        "/private/secret",
        Route::html("<p>must never be fetched</p>"),
    );
    site.set("/loop1", Route::redirect("/loop2"));
    site.set("/loop2", Route::redirect("/loop1"));
    site.set(
        "/big",
        Route {
            announced_length: Some(10_000_000_000),
            ..Route::page("application/pdf", Vec::new())
        },
    );
    site.set("/moved", Route::redirect("/a"));
    site.set(
        "/copy",
        Route::html(&format!(
            "<html><head><link rel=\"canonical\" href=\"{}\"></head><body>A copy</body></html>",
            site.url("/a")
        )),
    );
    site.set(
        "/hidden",
        Route::html("<html><head><meta name=\"robots\" content=\"noindex\"></head><body><a href=\"/via-hidden\">x</a></body></html>"),
    );
    site.set(
        "/via-hidden",
        Route::html("<html><body>Reached through a noindex page</body></html>"),
    );
    site.set(
        "/logo.png",
        Route::page("image/png", vec![0x89, b'P', b'N', b'G']),
    );
    site.set(
        "/from-sitemap",
        Route::html("<html><body>Only in the sitemap</body></html>"),
    );
    site.set(
        "/deep",
        Route::html("<html><body><a href=\"/deeper\">on</a></body></html>"),
    );
    site.set(
        "/deeper",
        Route::html("<html><body><a href=\"/deepest\">on</a></body></html>"),
    );
    site.set(
        "/deepest",
        Route::html("<html><body>Too deep</body></html>"),
    );
    site
}

fn spec(site: &TestSite) -> CrawlSpec {
    let mut spec = CrawlSpec::new(parse_start(&site.url("/")).expect("start"));
    spec.depth = 2;
    spec.min_delay = Duration::ZERO;
    spec
}

fn fetcher() -> HttpFetcher {
    HttpFetcher::new(knowhub_crawl::USER_AGENT, Duration::from_secs(10))
}

fn outcome<'a>(report: &'a CrawlReport, site: &TestSite, path: &str) -> Option<&'a Outcome> {
    let url = site.url(path);
    report
        .pages
        .iter()
        .find(|p| p.url == url)
        .map(|p| &p.outcome)
}

fn previous(report: &CrawlReport) -> HashMap<String, KnownPage> {
    report
        .kept
        .iter()
        .map(|k| (k.url.clone(), k.known.clone()))
        .collect()
}

#[test]
fn a_site_is_crawled_within_its_rules() {
    let site = site();
    let mut sink = Memory::default();
    let report = crawl(&spec(&site), &HashMap::new(), &fetcher(), &mut sink, None).expect("crawl");
    assert!(report.aborted.is_none(), "{:?}", report.aborted);

    let mut kept: Vec<&str> = report.kept.iter().map(|k| k.url.as_str()).collect();
    kept.sort();
    let mut want: Vec<String> = [
        "/",
        "/a",
        "/b",
        "/notes.txt",
        "/from-sitemap",
        "/via-hidden",
        "/deep",
        "/deeper",
    ]
    .iter()
    .map(|p| site.url(p))
    .collect();
    want.sort();
    assert_eq!(kept, want.iter().map(String::as_str).collect::<Vec<_>>());

    assert!(
        matches!(outcome(&report, &site, "/private/secret"), Some(Outcome::Skipped { reason }) if reason.contains("robots.txt"))
    );
    assert!(
        matches!(outcome(&report, &site, "/loop1"), Some(Outcome::Failed { reason }) if reason.contains("loop"))
    );
    assert!(
        matches!(outcome(&report, &site, "/big"), Some(Outcome::Skipped { reason }) if reason.contains("10000000000"))
    );
    assert!(
        matches!(outcome(&report, &site, "/moved"), Some(Outcome::Duplicate { of }) if *of == site.url("/a"))
    );
    assert!(
        matches!(outcome(&report, &site, "/copy"), Some(Outcome::Duplicate { of }) if *of == site.url("/a"))
    );
    assert!(
        matches!(outcome(&report, &site, "/hidden"), Some(Outcome::Skipped { reason }) if reason.contains("noindex"))
    );
    assert!(
        matches!(outcome(&report, &site, "/logo.png"), Some(Outcome::Skipped { reason }) if reason.contains("image/png"))
    );
    assert!(matches!(
        outcome(&report, &site, "/gone"),
        Some(Outcome::Gone { status: 404 })
    ));
    assert!(
        outcome(&report, &site, "/deepest").is_none(),
        "beyond the depth"
    );

    let requests = site.requests(true);
    assert!(requests.iter().all(|r| r.path != "/private/secret"));
    assert!(requests.iter().all(|r| r.path != "/deepest"));
    assert!(requests.iter().all(|r| {
        r.user_agent
            .as_deref()
            .is_some_and(|u| u.contains("knowhub"))
    }));
    assert_eq!(
        sink.bodies
            .get(&site.url("/notes.txt"))
            .map(|b| String::from_utf8_lossy(b).into_owned()),
        Some("Plain notes 纯文本笔记".into())
    );

    // Second run: one page changed, one disappeared; the rest answer 304.
    site.set(
        "/b",
        Route::html("<html><body><h1>B</h1><p>Beta, version two.</p></body></html>"),
    );
    site.remove("/a");
    sink.kept_now.clear();
    let again = crawl(
        &spec(&site),
        &previous(&report),
        &fetcher(),
        &mut sink,
        None,
    )
    .expect("crawl");
    assert_eq!(outcome(&again, &site, "/b"), Some(&Outcome::Fetched));
    assert_eq!(outcome(&again, &site, "/"), Some(&Outcome::Unchanged));
    assert_eq!(outcome(&again, &site, "/deep"), Some(&Outcome::Unchanged));
    assert_eq!(
        outcome(&again, &site, "/a"),
        Some(&Outcome::Gone { status: 404 })
    );
    assert!(again.kept.iter().all(|k| k.url != site.url("/a")));
    assert!(
        again.kept.iter().any(|k| k.url == site.url("/deeper")),
        "links of a 304 page are followed"
    );
    assert_eq!(
        sink.kept_now,
        [site.url("/b")],
        "only the changed page is written"
    );
    let requests = site.requests(true);
    let home = requests
        .iter()
        .find(|r| r.path == "/")
        .expect("home requested");
    assert!(home.if_none_match.is_some(), "a conditional request");
}

#[test]
fn an_unreachable_robots_txt_stops_the_crawl_and_concludes_nothing() {
    let site = site();
    site.set("/robots.txt", Route::status(503));
    let report = crawl(
        &spec(&site),
        &HashMap::new(),
        &fetcher(),
        &mut Memory::default(),
        None,
    )
    .expect("crawl");
    assert!(
        report.aborted.as_deref().is_some_and(|a| a.contains("503")),
        "{:?}",
        report.aborted
    );
    assert!(report.kept.is_empty());
    assert_eq!(
        site.requests(false).len(),
        1,
        "nothing but robots.txt was asked"
    );

    // No robots.txt at all (404) means no rules.
    site.set("/robots.txt", Route::status(404));
    let report = crawl(
        &spec(&site),
        &HashMap::new(),
        &fetcher(),
        &mut Memory::default(),
        None,
    )
    .expect("crawl");
    assert!(report.aborted.is_none());
    assert!(
        report
            .kept
            .iter()
            .any(|k| k.url == site.url("/private/secret"))
    );
}

#[test]
fn a_server_error_keeps_the_earlier_copy() {
    let site = site();
    let mut sink = Memory::default();
    let first = crawl(&spec(&site), &HashMap::new(), &fetcher(), &mut sink, None).expect("crawl");
    site.set("/b", Route::status(500));
    let again = crawl(&spec(&site), &previous(&first), &fetcher(), &mut sink, None).expect("crawl");
    assert!(matches!(
        outcome(&again, &site, "/b"),
        Some(Outcome::Failed { .. })
    ));
    assert!(
        again.kept.iter().any(|k| k.url == site.url("/b")),
        "kept from the last run"
    );
}

#[test]
fn budgets_and_patterns_bound_the_crawl() {
    let site = site();
    let mut small = spec(&site);
    small.budget.max_pages = 3;
    let report = crawl(
        &small,
        &HashMap::new(),
        &fetcher(),
        &mut Memory::default(),
        None,
    )
    .expect("crawl");
    assert_eq!(report.kept.len(), 3);
    assert!(
        report
            .stopped
            .as_deref()
            .is_some_and(|s| s.contains("page budget"))
    );

    let mut narrow = spec(&site);
    narrow.exclude = vec!["/deep*".into(), "*.txt".into()];
    narrow.use_sitemaps = false;
    let report = crawl(
        &narrow,
        &HashMap::new(),
        &fetcher(),
        &mut Memory::default(),
        None,
    )
    .expect("crawl");
    assert!(
        report
            .kept
            .iter()
            .all(|k| !k.url.contains("/deep") && !k.url.ends_with(".txt"))
    );
    assert!(report.kept.iter().all(|k| !k.url.contains("from-sitemap")));
    assert!(report.excluded_by_pattern >= 2);

    let mut shallow = spec(&site);
    shallow.depth = 0;
    let report = crawl(
        &shallow,
        &HashMap::new(),
        &fetcher(),
        &mut Memory::default(),
        None,
    )
    .expect("crawl");
    assert_eq!(report.kept.len(), 1);
}

#[test]
fn a_start_page_that_cannot_be_reached_aborts() {
    // A port nobody listens on: the connection is refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let mut spec = CrawlSpec::new(parse_start(&format!("http://{addr}/")).expect("start"));
    spec.min_delay = Duration::ZERO;
    let report = crawl(
        &spec,
        &HashMap::new(),
        &fetcher(),
        &mut Memory::default(),
        None,
    )
    .expect("crawl");
    assert!(report.aborted.is_some());
}

#[test]
fn a_cancelled_crawl_says_so() {
    let site = site();
    let cancel = std::sync::atomic::AtomicBool::new(true);
    let report = crawl(
        &spec(&site),
        &HashMap::new(),
        &fetcher(),
        &mut Memory::default(),
        Some(&cancel),
    )
    .expect("crawl");
    assert!(report.cancelled);
    assert!(report.kept.is_empty());
    assert_eq!(report.stopped.as_deref(), Some("cancelled"));
}
