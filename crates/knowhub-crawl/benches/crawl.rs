//! Crawl throughput against a generated site on loopback (no network, no politeness delay):
//! a first crawl (every page downloaded and parsed for links) and a second one (every page
//! answers 304, links read from the kept copy). Prints a table.
//!
//! `cargo bench -p knowhub-crawl --bench crawl -- [--pages N]`

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use knowhub_crawl::testing::{Route, TestSite};
use knowhub_crawl::{CrawlSpec, FetchedPage, HttpFetcher, Sink, crawl, parse_start};

#[derive(Default)]
struct Memory(HashMap<String, Vec<u8>>);

impl Sink for Memory {
    fn keep(&mut self, page: &FetchedPage<'_>) -> Result<(), String> {
        self.0.insert(page.url.to_string(), page.body.to_vec());
        Ok(())
    }
    fn previous_body(&mut self, url: &str) -> Option<Vec<u8>> {
        self.0.get(url).cloned()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pages: usize = args
        .iter()
        .position(|a| a == "--pages")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(500);
    let site = TestSite::start().unwrap();
    // A tree: page i links to pages 2i+1 and 2i+2, with ~4 KB of text each.
    let filler = "Travel requests are approved within three days. 差旅申请三天内批准。 ".repeat(50);
    for i in 0..pages {
        let links: String = [2 * i + 1, 2 * i + 2]
            .iter()
            .filter(|c| **c < pages)
            .map(|c| format!("<a href=\"/p/{c}\">page {c}</a> "))
            .collect();
        let path = if i == 0 {
            "/".to_owned()
        } else {
            format!("/p/{i}")
        };
        site.set(
            &path,
            Route::html(&format!(
                "<html><head><title>Page {i}</title></head><body><nav>{links}</nav><p>{filler}</p></body></html>"
            )),
        );
    }
    let mut spec = CrawlSpec::new(parse_start(&site.url("/")).unwrap());
    spec.depth = 64;
    spec.min_delay = Duration::ZERO;
    spec.budget.max_pages = pages;
    let fetcher = HttpFetcher::new(knowhub_crawl::USER_AGENT, Duration::from_secs(10));
    let mut sink = Memory::default();

    let t = Instant::now();
    let first = crawl(&spec, &HashMap::new(), &fetcher, &mut sink, None).unwrap();
    let first_s = t.elapsed().as_secs_f64();
    let previous = first
        .kept
        .iter()
        .map(|k| (k.url.clone(), k.known.clone()))
        .collect();
    let t = Instant::now();
    let second = crawl(&spec, &previous, &fetcher, &mut sink, None).unwrap();
    let second_s = t.elapsed().as_secs_f64();

    println!("| run | pages kept | downloaded | time (s) | pages/s |");
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| first crawl | {} | {:.1} MB | {first_s:.2} | {:.0} |",
        first.kept.len(),
        first.bytes as f64 / 1e6,
        first.kept.len() as f64 / first_s
    );
    println!(
        "| again, nothing changed (304s) | {} | {:.1} MB | {second_s:.2} | {:.0} |",
        second.kept.len(),
        second.bytes as f64 / 1e6,
        second.kept.len() as f64 / second_s
    );
}
