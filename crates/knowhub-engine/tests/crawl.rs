//! A web source end to end against a site served on loopback: crawled, ingested, searched
//! with citations that name the page's address, readable only by administrators and its
//! owner until its ACL is set, brought up to date when a page changes and one disappears,
//! and removed with its documents.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use knowhub_authz::{RequestContext, Role, Scope, ScopeSet, UserId};
use knowhub_crawl::testing::{Route, TestSite};
use knowhub_engine::{
    CrawlSettings, Engine, EngineConfig, EngineError, ModelSet, ParserBackend, ProcessOptions,
    RealFs, SearchOptions, dev_context,
};

fn engine(data: &Path) -> Engine {
    let mut config = EngineConfig::new(data);
    config.parser = ParserBackend::InProcess;
    Engine::open_with(config, Arc::new(RealFs), ModelSet::default()).unwrap()
}

fn drain(engine: &Engine) {
    let options = ProcessOptions {
        settle: Duration::ZERO,
        ..ProcessOptions::default()
    };
    engine
        .drain_queue(&options, Some(Duration::from_secs(60)), &mut |_| {})
        .unwrap();
}

fn hits(engine: &Engine, ctx: &RequestContext, query: &str) -> Vec<knowhub_engine::SearchHit> {
    engine
        .retrieve(ctx, query, &SearchOptions::default())
        .unwrap()
        .hits
}

fn site() -> TestSite {
    let site = TestSite::start().unwrap();
    site.set(
        "/robots.txt",
        Route::page("text/plain", "User-agent: *\nDisallow: /private/\n"),
    );
    site.set(
        "/",
        Route::html(
            "<html><head><title>Intranet</title></head><body><nav><a href=\"/handbook\">Handbook</a>\
             <a href=\"/old-policy\">Old policy</a><a href=\"/private/salaries\">Salaries</a>\
             <a href=\"/guide.txt\">Guide</a></nav><main><h1>Intranet</h1><p>Welcome.</p></main></body></html>",
        ),
    );
    site.set(
        "/handbook",
        Route::html(
            "<html><head><title>Employee handbook</title></head><body><main><h1 id=\"travel\">Travel</h1>\
             <p>Travel requests are approved by the quartermaster within three days.</p>\
             <h2>差旅</h2><p>差旅申请由后勤主管在三天内批准。</p></main></body></html>",
        ),
    );
    site.set(
        "/old-policy",
        Route::html("<html><head><title>Old policy</title></head><body><p>The zeppelin allowance is retired.</p></body></html>"),
    );
    site.set(
        "/private/salaries",
        Route::html("<html><body><p>Confidential aardvark salary table.</p></body></html>"),
    );
    site.set(
        "/guide.txt",
        Route::page(
            "text/plain",
            "The onboarding guide mentions the lighthouse checklist.",
        ),
    );
    site
}

fn settings() -> CrawlSettings {
    CrawlSettings {
        depth: 2,
        delay_ms: 0,
        ..CrawlSettings::default()
    }
}

#[test]
fn a_site_is_crawled_searched_cited_kept_current_and_removed() {
    let site = site();
    let data = tempfile::tempdir().unwrap();
    let engine = engine(data.path());
    let admin = dev_context();

    let added = engine
        .add_crawl(&admin, &site.url("/"), settings())
        .unwrap();
    assert!(added.last_run.is_none());
    assert!(
        engine
            .add_crawl(&admin, &site.url("/"), settings())
            .is_err(),
        "one crawl per address"
    );
    let run = engine.run_crawl(&admin, added.id, None).unwrap();
    assert_eq!(run.summary.aborted, None);
    assert_eq!(run.summary.pages, 4, "{:?}", run.summary);
    assert_eq!(run.summary.queued, 4);
    drain(&engine);

    // A cancelled run concludes nothing about the pages it did not reach.
    let stop = std::sync::atomic::AtomicBool::new(true);
    let cancelled = engine.run_crawl(&admin, added.id, Some(&stop)).unwrap();
    assert_eq!(
        (cancelled.summary.pages, cancelled.summary.removed),
        (4, 0),
        "{:?}",
        cancelled.summary
    );
    assert_eq!(cancelled.summary.queued, 0);

    let found = hits(&engine, &admin, "quartermaster travel requests");
    let top = found.first().expect("the handbook is found");
    assert_eq!(top.title, "Employee handbook");
    // The citation links to the page at the passage's heading.
    assert_eq!(
        top.url.as_deref(),
        Some(format!("{}#travel", site.url("/handbook")).as_str())
    );
    let zh = hits(&engine, &admin, "差旅申请");
    let zh_url = zh.first().and_then(|h| h.url.clone()).unwrap_or_default();
    assert!(zh_url.starts_with(&site.url("/handbook")), "{zh_url}");
    assert!(
        hits(&engine, &admin, "lighthouse checklist")
            .iter()
            .any(|h| h.url.as_deref() == Some(site.url("/guide.txt").as_str()))
    );
    assert!(
        hits(&engine, &admin, "aardvark salary").is_empty(),
        "robots.txt is obeyed"
    );

    // Nobody else reads the pages until the source's ACL names them.
    let carol = UserId::new("carol").unwrap();
    engine
        .add_user(&admin, &carol, "Carol", Role::User)
        .unwrap();
    let as_carol = RequestContext {
        user: carol.clone(),
        role: Role::User,
        ..dev_context()
    };
    assert!(hits(&engine, &as_carol, "quartermaster").is_empty());
    assert!(matches!(
        engine.add_crawl(&as_carol, "https://example.com/", settings()),
        Err(EngineError::Forbidden(_))
    ));
    assert!(matches!(
        engine.crawls(&as_carol),
        Err(EngineError::Forbidden(_))
    ));
    let readers: ScopeSet = [Scope::User(carol)].into_iter().collect();
    engine
        .set_folder_acl(&admin, Path::new(&added.folder), Some(&readers))
        .unwrap();
    assert_eq!(hits(&engine, &as_carol, "quartermaster").len(), 1);

    // The site changes: one page is edited, one disappears. Unchanged pages cost a 304.
    site.set(
        "/handbook",
        Route::html(
            "<html><head><title>Employee handbook</title></head><body><main><h1>Travel</h1>\
             <p>Travel requests are approved by the harbourmaster within five days.</p></main></body></html>",
        ),
    );
    site.remove("/old-policy");
    site.requests(true);
    let again = engine.run_crawl(&admin, added.id, None).unwrap();
    assert_eq!(
        (again.summary.fetched, again.summary.removed),
        (1, 1),
        "{:?}",
        again.summary
    );
    assert_eq!(again.summary.unchanged, 2);
    drain(&engine);
    assert!(
        hits(&engine, &admin, "zeppelin allowance").is_empty(),
        "the vanished page is gone"
    );
    assert!(
        hits(&engine, &admin, "quartermaster").is_empty(),
        "the old text is gone"
    );
    assert_eq!(
        hits(&engine, &as_carol, "harbourmaster").len(),
        1,
        "the edit, under the same ACL"
    );
    let asked = site.requests(true);
    assert!(
        asked
            .iter()
            .filter(|r| r.path == "/guide.txt")
            .all(|r| r.if_none_match.is_some())
    );

    let listed = engine.crawls(&admin).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].documents, 3);
    assert_eq!(listed[0].last_run.as_ref().map(|s| s.removed), Some(1));

    // A page's file deleted by hand is downloaded again, not trusted to a 304.
    let guide = std::fs::read_dir(&added.folder)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "txt"))
        .unwrap();
    std::fs::remove_file(&guide).unwrap();
    let repaired = engine.run_crawl(&admin, added.id, None).unwrap();
    assert_eq!(repaired.summary.fetched, 1, "{:?}", repaired.summary);
    assert!(guide.is_file());
    drain(&engine);
    assert_eq!(hits(&engine, &admin, "lighthouse checklist").len(), 1);

    // The site is down: nothing is concluded, nothing is lost.
    site.set("/robots.txt", Route::status(503));
    let down = engine.run_crawl(&admin, added.id, None).unwrap();
    assert!(down.summary.aborted.is_some());
    drain(&engine);
    assert_eq!(hits(&engine, &admin, "harbourmaster").len(), 1);

    let removed = engine.remove_crawl(&admin, added.id).unwrap();
    assert_eq!(removed, 3);
    assert!(hits(&engine, &admin, "harbourmaster").is_empty());
    assert!(engine.crawls(&admin).unwrap().is_empty());
    assert!(!Path::new(&added.folder).exists());
}

#[test]
fn bad_sources_are_refused_with_a_reason() {
    let data = tempfile::tempdir().unwrap();
    let engine = engine(data.path());
    let admin = dev_context();
    for url in [
        "ftp://example.com/",
        "file:///etc/passwd",
        "http://",
        "https://user:pw@example.com/",
    ] {
        let err = engine.add_crawl(&admin, url, settings()).unwrap_err();
        assert!(matches!(err, EngineError::InvalidInput(_)), "{url}: {err}");
    }
    let often = CrawlSettings {
        every_secs: Some(10),
        ..settings()
    };
    assert!(
        engine
            .add_crawl(&admin, "https://example.com/", often)
            .is_err()
    );
    assert!(matches!(
        engine.run_crawl(&admin, 999, None),
        Err(EngineError::NotFound(_))
    ));
    // A source that never ran has nothing stored, and goes all the same.
    let unrun = engine
        .add_crawl(&admin, "https://example.com/wiki/", settings())
        .unwrap();
    assert_eq!(engine.remove_crawl(&admin, unrun.id).unwrap(), 0);
    assert!(engine.crawls(&admin).unwrap().is_empty());
}
