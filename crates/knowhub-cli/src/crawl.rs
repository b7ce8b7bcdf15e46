//! `knowhub crawl …`: web and wiki sources — add a site, list, run now, change, remove.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use knowhub_client::Client;
use knowhub_engine::authz::{Scope, ScopeSet};
use knowhub_engine::{
    CrawlSettings, CrawlSummary, CrawlView, Engine, IngestEvent, PageOutcome, ProcessOptions,
    RequestContext,
};

/// How a crawl runs (for `add` and `set`).
#[derive(Debug, Args)]
pub(crate) struct CrawlOptions {
    /// Links followed from the start page (0 = the start page and its sitemap only).
    #[arg(long)]
    pub depth: Option<u32>,
    /// Only addresses whose path (and query) match these globs, e.g. `/wiki/*` (repeatable).
    #[arg(long)]
    pub include: Vec<String>,
    /// Leave out addresses whose path (and query) match these globs, e.g. `*action=edit*`.
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Run on a schedule: 30m, 6h, 1d (at least 5m). `never` stops the schedule.
    #[arg(long, value_name = "INTERVAL")]
    pub every: Option<String>,
    /// At most this many pages are kept.
    #[arg(long)]
    pub max_pages: Option<usize>,
    /// Skip pages larger than this many bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_page_size: Option<u64>,
    /// Download at most this many bytes per run.
    #[arg(long, value_name = "BYTES")]
    pub max_total_size: Option<u64>,
    /// Pause between two requests to the site, in ms (robots.txt's Crawl-delay may ask more).
    #[arg(long, value_name = "MS")]
    pub delay_ms: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CrawlCommand {
    /// Add a site or wiki (administrators). Its pages are readable by administrators and you
    /// until you name readers (here, or later with `knowhub acl set <folder>`).
    Add {
        url: String,
        #[command(flatten)]
        options: CrawlOptions,
        /// Who may read its pages: user:<id>, team:<id>, project:<id>, group:<id>, public
        /// (repeatable).
        #[arg(long = "reader", value_name = "SCOPE")]
        readers: Vec<String>,
        /// Crawl it now and ingest its pages.
        #[arg(long)]
        run: bool,
    },
    /// The web sources, with their last run.
    List,
    /// Crawl now and ingest what changed (by id or address).
    Run { source: String },
    /// Change how a web source is crawled (options not given stay as they are).
    Set {
        source: String,
        #[command(flatten)]
        options: CrawlOptions,
    },
    /// Remove a web source and its documents.
    Remove { source: String },
}

/// `30m`, `6h`, `1d`, `90s`, `2w`; `never`/`off` = no schedule.
fn parse_every(text: &str) -> Result<Option<u64>> {
    let text = text.trim().to_ascii_lowercase();
    if matches!(text.as_str(), "never" | "off" | "none" | "") {
        return Ok(None);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .with_context(|| format!("\"{text}\" is not an interval like 30m, 6h or 1d"))?;
    let seconds = match unit.trim() {
        "s" | "sec" | "secs" => 1,
        "m" | "min" | "mins" => 60,
        "h" | "hour" | "hours" | "" => 3_600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        other => bail!("unknown unit \"{other}\" in \"{text}\": use s, m, h, d or w"),
    };
    Ok(Some(n.saturating_mul(seconds)))
}

fn apply(options: CrawlOptions, mut settings: CrawlSettings) -> Result<CrawlSettings> {
    if let Some(d) = options.depth {
        settings.depth = d;
    }
    if !options.include.is_empty() {
        settings.include = options.include;
    }
    if !options.exclude.is_empty() {
        settings.exclude = options.exclude;
    }
    if let Some(every) = options.every {
        settings.every_secs = parse_every(&every)?;
    }
    if let Some(n) = options.max_pages {
        settings.max_pages = n;
    }
    if let Some(n) = options.max_page_size {
        settings.max_page_bytes = n;
    }
    if let Some(n) = options.max_total_size {
        settings.max_total_bytes = n;
    }
    if let Some(n) = options.delay_ms {
        settings.delay_ms = n;
    }
    Ok(settings)
}

/// A web source by its id or start address.
fn find_in(crawls: Vec<CrawlView>, source: &str) -> Result<CrawlView> {
    let wanted = source.trim();
    crawls
        .into_iter()
        .find(|c| {
            c.id.to_string() == wanted
                || c.url == wanted
                || c.url.trim_end_matches('/') == wanted.trim_end_matches('/')
        })
        .with_context(|| format!("no web source {wanted} (see `knowhub crawl list`)"))
}

fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|| "?".into())
}

fn every_text(secs: Option<u64>) -> String {
    match secs {
        None => "by hand".into(),
        Some(s) if s % 86_400 == 0 => format!("every {}d", s / 86_400),
        Some(s) if s % 3_600 == 0 => format!("every {}h", s / 3_600),
        Some(s) => format!("every {}m", s / 60),
    }
}

fn summary_line(s: &CrawlSummary) -> String {
    if let Some(why) = &s.aborted {
        return format!("not crawled: {why} (everything kept)");
    }
    let mut line = format!(
        "{} page(s): {} new or changed, {} unchanged, {} removed, {} failed, {} skipped, {} duplicate(s)",
        s.pages, s.fetched, s.unchanged, s.removed, s.failed, s.skipped, s.duplicates
    );
    if let Some(stop) = &s.stopped {
        line.push_str(&format!("; stopped: {stop}"));
    }
    line
}

fn print_view(c: &CrawlView) {
    println!("{:>4}  {}", c.id, c.url);
    println!(
        "      depth {}, {}, {} document(s), folder {}",
        c.settings.depth,
        every_text(c.settings.every_secs),
        c.documents,
        c.folder
    );
    match &c.last_run {
        Some(s) => println!(
            "      last run {}: {}",
            when(s.finished_at),
            summary_line(s)
        ),
        None => println!("      never run"),
    }
}

fn run_now(engine: &Engine, ctx: &RequestContext, id: i64, json: bool) -> Result<ExitCode> {
    let run = engine.run_crawl(ctx, id, None)?;
    let mut ingested = None;
    if run.summary.queued > 0 && !engine.is_read_only() {
        let options = ProcessOptions {
            settle: Duration::ZERO,
            ..ProcessOptions::default()
        };
        let report = engine.drain_queue(&options, None, &mut |e: &IngestEvent| {
            if !json && let IngestEvent::File { path, outcome, .. } = e {
                let name = Path::new(path)
                    .strip_prefix(&run.crawl.folder)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| path.clone());
                eprintln!("  {:<9} {name}", outcome.label());
            }
        })?;
        ingested = Some(report);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "crawl": run.crawl,
                "summary": run.summary,
                "pages": run.pages,
                "ingested": ingested,
            }))?
        );
    } else {
        for p in &run.pages {
            let what = match &p.outcome {
                PageOutcome::Fetched => "fetched".to_owned(),
                PageOutcome::Unchanged => continue,
                PageOutcome::Duplicate { of } => format!("duplicate of {of}"),
                PageOutcome::Skipped { reason } => format!("skipped: {reason}"),
                PageOutcome::Gone { status } => format!("gone (HTTP {status})"),
                PageOutcome::Failed { reason } => format!("failed: {reason}"),
            };
            eprintln!("{}  {what}", p.url);
        }
        println!("{}: {}", run.crawl.url, summary_line(&run.summary));
        match ingested {
            Some(r) => println!("ingested {} file(s), {} failed", r.files, r.failed),
            None if run.summary.queued > 0 => println!(
                "{} file(s) queued: the running app or `knowhub daemon` ingests them",
                run.summary.queued
            ),
            None => {}
        }
    }
    Ok(if run.summary.aborted.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Where crawl commands run: this machine's engine, or a team server (`--server`). The
/// commands and what they print are the same for both.
trait Crawls {
    fn list(&self) -> Result<Vec<CrawlView>>;
    fn add(&self, url: &str, settings: CrawlSettings, readers: &[String]) -> Result<CrawlView>;
    fn update(&self, id: i64, settings: CrawlSettings) -> Result<CrawlView>;
    fn remove(&self, id: i64) -> Result<usize>;
    /// Crawls now; prints the run and says what becomes of its pages.
    fn run(&self, id: i64, json: bool) -> Result<ExitCode>;
}

struct Local<'a> {
    engine: &'a Engine,
    ctx: &'a RequestContext,
}

impl Crawls for Local<'_> {
    fn list(&self) -> Result<Vec<CrawlView>> {
        Ok(self.engine.crawls(self.ctx)?)
    }

    fn add(&self, url: &str, settings: CrawlSettings, readers: &[String]) -> Result<CrawlView> {
        let readers: ScopeSet = readers
            .iter()
            .map(|s| s.parse::<Scope>())
            .collect::<Result<_, _>>()?;
        let view = self.engine.add_crawl(self.ctx, url, settings)?;
        if !readers.is_empty() {
            self.engine
                .set_folder_acl(self.ctx, Path::new(&view.folder), Some(&readers))?;
        }
        Ok(view)
    }

    fn update(&self, id: i64, settings: CrawlSettings) -> Result<CrawlView> {
        Ok(self.engine.update_crawl(self.ctx, id, settings)?)
    }

    fn remove(&self, id: i64) -> Result<usize> {
        Ok(self.engine.remove_crawl(self.ctx, id)?)
    }

    fn run(&self, id: i64, json: bool) -> Result<ExitCode> {
        run_now(self.engine, self.ctx, id, json)
    }
}

impl Crawls for Client {
    fn list(&self) -> Result<Vec<CrawlView>> {
        Ok(self.crawls()?.into_iter().map(view_of).collect())
    }

    fn add(&self, url: &str, settings: CrawlSettings, readers: &[String]) -> Result<CrawlView> {
        let added = self.add_crawl(&knowhub_client::NewCrawl {
            url: url.to_owned(),
            settings: wire(&settings),
            readers: readers.to_vec(),
        })?;
        Ok(view_of(added))
    }

    fn update(&self, id: i64, settings: CrawlSettings) -> Result<CrawlView> {
        Ok(view_of(self.update_crawl(id, &wire(&settings))?))
    }

    fn remove(&self, id: i64) -> Result<usize> {
        Ok(self.remove_crawl(id)?)
    }

    fn run(&self, id: i64, json: bool) -> Result<ExitCode> {
        remote_run(self, id, json)
    }
}

pub(crate) fn run(
    engine: &Engine,
    ctx: &RequestContext,
    cmd: CrawlCommand,
    json: bool,
) -> Result<ExitCode> {
    command(&Local { engine, ctx }, cmd, json)
}

/// `knowhub --server … crawl …`: the team server's web sources. A run crawls on the server and
/// queues the changed pages for the server's own ingestion worker.
pub(crate) fn remote(client: &Client, cmd: CrawlCommand, json: bool) -> Result<ExitCode> {
    command(client, cmd, json)
}

fn command(crawls: &dyn Crawls, cmd: CrawlCommand, json: bool) -> Result<ExitCode> {
    let find = |source: &str| find_in(crawls.list()?, source);
    match cmd {
        CrawlCommand::Add {
            url,
            options,
            readers,
            run,
        } => {
            let settings = apply(options, CrawlSettings::default())?;
            let view = crawls.add(&url, settings, &readers)?;
            if !json {
                println!("added web source {} ({})", view.id, view.url);
                println!(
                    "  readable by {} (change with `knowhub acl set {}`)",
                    if readers.is_empty() {
                        "administrators and you".to_owned()
                    } else {
                        readers.join(", ")
                    },
                    view.folder
                );
            }
            if run {
                return crawls.run(view.id, json);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&view)?);
            }
        }
        CrawlCommand::List => {
            let list = crawls.list()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if list.is_empty() {
                println!("no web sources (add one with `knowhub crawl add <url>`)");
            } else {
                list.iter().for_each(print_view);
            }
        }
        CrawlCommand::Run { source } => return crawls.run(find(&source)?.id, json),
        CrawlCommand::Set { source, options } => {
            let view = find(&source)?;
            let settings = apply(options, view.settings.clone())?;
            let view = crawls.update(view.id, settings)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&view)?);
            } else {
                print_view(&view);
            }
        }
        CrawlCommand::Remove { source } => {
            let view = find(&source)?;
            let removed = crawls.remove(view.id)?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"removed": view.url, "documents": removed})
                );
            } else {
                println!("removed {} and its {removed} document(s)", view.url);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn remote_run(client: &Client, id: i64, json: bool) -> Result<ExitCode> {
    let run = client.run_crawl(id)?;
    let summary = summary_of(run.summary);
    if json {
        let pages: Vec<_> = run
            .pages
            .iter()
            .map(|p| serde_json::json!({"url": p.url, "outcome": p.outcome, "detail": p.detail}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "crawl": view_of(run.crawl),
                "summary": summary,
                "pages": pages,
            }))?
        );
    } else {
        for p in run.pages.iter().filter(|p| p.outcome != "unchanged") {
            match &p.detail {
                Some(detail) => eprintln!("{}  {}: {detail}", p.url, p.outcome),
                None => eprintln!("{}  {}", p.url, p.outcome),
            }
        }
        println!("{}: {}", run.crawl.url, summary_line(&summary));
        if summary.queued > 0 {
            println!(
                "{} file(s) queued: the server's ingestion worker reads them",
                summary.queued
            );
        }
    }
    Ok(if summary.aborted.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The settings as the server takes them: every field given, 0 for "by hand only".
fn wire(s: &CrawlSettings) -> knowhub_client::CrawlSettings {
    knowhub_client::CrawlSettings {
        depth: Some(s.depth),
        include: Some(s.include.clone()),
        exclude: Some(s.exclude.clone()),
        every_secs: Some(s.every_secs.unwrap_or(0)),
        max_pages: Some(s.max_pages),
        max_page_bytes: Some(s.max_page_bytes),
        max_total_bytes: Some(s.max_total_bytes),
        delay_ms: Some(s.delay_ms),
    }
}

fn view_of(c: knowhub_client::Crawl) -> CrawlView {
    let d = CrawlSettings::default();
    let s = c.settings;
    CrawlView {
        id: c.id,
        url: c.url,
        folder: c.folder,
        owner: c.owner,
        settings: CrawlSettings {
            depth: s.depth.unwrap_or(d.depth),
            include: s.include.unwrap_or_default(),
            exclude: s.exclude.unwrap_or_default(),
            every_secs: s.every_secs.filter(|&n| n > 0),
            max_pages: s.max_pages.unwrap_or(d.max_pages),
            max_page_bytes: s.max_page_bytes.unwrap_or(d.max_page_bytes),
            max_total_bytes: s.max_total_bytes.unwrap_or(d.max_total_bytes),
            delay_ms: s.delay_ms.unwrap_or(d.delay_ms),
        },
        documents: c.documents,
        last_run: c.last_run.map(summary_of),
        next_run: c.next_run_ms,
    }
}

fn summary_of(s: knowhub_client::CrawlSummary) -> CrawlSummary {
    CrawlSummary {
        finished_at: s.finished_at_ms,
        fetched: s.fetched,
        unchanged: s.unchanged,
        removed: s.removed,
        gone: s.gone,
        duplicates: s.duplicates,
        skipped: s.skipped,
        failed: s.failed,
        pages: s.pages,
        queued: s.queued,
        stopped: s.stopped,
        aborted: s.aborted,
        problems: s.problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        let table = [
            ("30m", Some(1_800)),
            ("6h", Some(21_600)),
            ("1d", Some(86_400)),
            ("2 days", Some(172_800)),
            ("12", Some(43_200)),
            ("never", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_every(text).ok(), Some(want), "{text}");
        }
        assert!(parse_every("6x").is_err());
        assert!(parse_every("soon").is_err());
    }
}
