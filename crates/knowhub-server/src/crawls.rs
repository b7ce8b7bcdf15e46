//! Web and wiki sources over HTTP (administrators): `GET/POST /api/v1/crawls`,
//! `PUT/DELETE /api/v1/crawls/{id}`, `POST /api/v1/crawls/{id}/run`. A run downloads the
//! site's new and changed pages and queues them; the server's queue worker ingests them (as
//! it does scheduled runs). Who may do this is the engine's decision.

use axum::Json;
use axum::http::StatusCode;
use knowhub_engine::authz::ScopeSet;
use knowhub_engine::{CrawlSettings, CrawlSummary, CrawlView, PageOutcome};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::administration::ScopesInput;
use crate::auth::{ApiJson, ApiPath, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(list_crawls, add_crawl))
        .routes(routes!(update_crawl, remove_crawl))
        .routes(routes!(run_crawl))
}

/// How a crawl runs; fields left out keep their defaults (or, when changing, their values).
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SettingsBody {
    /// Links followed from the start page (default 3).
    depth: Option<u32>,
    /// Globs on an address's path and query (`/wiki/*`); none = the whole site.
    include: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
    /// Seconds between scheduled runs (at least 300); 0 = by hand only.
    every_secs: Option<u64>,
    max_pages: Option<usize>,
    max_page_bytes: Option<u64>,
    max_total_bytes: Option<u64>,
    /// Pause between two requests to the site, in ms.
    delay_ms: Option<u64>,
}

impl SettingsBody {
    fn apply(self, mut s: CrawlSettings) -> CrawlSettings {
        if let Some(v) = self.depth {
            s.depth = v;
        }
        if let Some(v) = self.include {
            s.include = v;
        }
        if let Some(v) = self.exclude {
            s.exclude = v;
        }
        if let Some(v) = self.every_secs {
            s.every_secs = (v > 0).then_some(v);
        }
        if let Some(v) = self.max_pages {
            s.max_pages = v;
        }
        if let Some(v) = self.max_page_bytes {
            s.max_page_bytes = v;
        }
        if let Some(v) = self.max_total_bytes {
            s.max_total_bytes = v;
        }
        if let Some(v) = self.delay_ms {
            s.delay_ms = v;
        }
        s
    }

    fn from_settings(s: CrawlSettings) -> SettingsBody {
        SettingsBody {
            depth: Some(s.depth),
            include: Some(s.include),
            exclude: Some(s.exclude),
            every_secs: Some(s.every_secs.unwrap_or(0)),
            max_pages: Some(s.max_pages),
            max_page_bytes: Some(s.max_page_bytes),
            max_total_bytes: Some(s.max_total_bytes),
            delay_ms: Some(s.delay_ms),
        }
    }
}

/// What a run did.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SummaryBody {
    finished_at_ms: i64,
    fetched: usize,
    unchanged: usize,
    removed: usize,
    gone: usize,
    duplicates: usize,
    skipped: usize,
    failed: usize,
    pages: usize,
    queued: usize,
    stopped: Option<String>,
    /// Set when the site could not be read: nothing was concluded, everything kept.
    aborted: Option<String>,
    problems: Vec<String>,
}

impl From<CrawlSummary> for SummaryBody {
    fn from(s: CrawlSummary) -> Self {
        SummaryBody {
            finished_at_ms: s.finished_at,
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
}

/// A web source.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CrawlBody {
    id: i64,
    url: String,
    /// The server folder its pages are kept in: its ACL says who reads them.
    folder: String,
    owner: Option<String>,
    settings: SettingsBody,
    documents: u64,
    last_run: Option<SummaryBody>,
    next_run_ms: Option<i64>,
}

impl From<CrawlView> for CrawlBody {
    fn from(c: CrawlView) -> Self {
        CrawlBody {
            id: c.id,
            url: c.url,
            folder: c.folder,
            owner: c.owner,
            settings: SettingsBody::from_settings(c.settings),
            documents: c.documents,
            last_run: c.last_run.map(Into::into),
            next_run_ms: c.next_run,
        }
    }
}

/// `{"crawls": [...]}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CrawlList {
    crawls: Vec<CrawlBody>,
}

/// The web sources (administrators).
#[utoipa::path(get, path = "/api/v1/crawls", tag = "administration",
    responses((status = 200, body = CrawlList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_crawls(caller: Caller) -> Result<Json<CrawlList>, ApiError> {
    blocking(move || {
        let crawls = caller
            .engine
            .crawls(&caller.ctx)?
            .into_iter()
            .map(Into::into)
            .collect();
        Ok(Json(CrawlList { crawls }))
    })
    .await
}

/// Body of `POST /api/v1/crawls`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddCrawl {
    /// The start address (`https://wiki.example.com/start`).
    url: String,
    #[serde(default)]
    settings: Option<SettingsBody>,
    /// Who may read its pages (`team:eng`, …); default: administrators and the caller.
    #[serde(default)]
    readers: Option<ScopesInput>,
}

/// Add a web source (administrators). It is not crawled until its schedule or a run.
#[utoipa::path(post, path = "/api/v1/crawls", tag = "administration",
    request_body = AddCrawl,
    responses((status = 201, body = CrawlBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn add_crawl(
    caller: Caller,
    ApiJson(b): ApiJson<AddCrawl>,
) -> Result<(StatusCode, Json<CrawlBody>), ApiError> {
    let readers = match &b.readers {
        Some(r) => r.parse(true)?,
        None => ScopeSet::new(),
    };
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        let settings = b
            .settings
            .unwrap_or_default()
            .apply(CrawlSettings::default());
        let view = engine.add_crawl(ctx, &b.url, settings)?;
        if !readers.is_empty() {
            engine.set_folder_acl(ctx, std::path::Path::new(&view.folder), Some(&readers))?;
        }
        Ok((StatusCode::CREATED, Json(view.into())))
    })
    .await
}

/// Change how a web source is crawled (fields left out stay as they are).
#[utoipa::path(put, path = "/api/v1/crawls/{id}", tag = "administration",
    params(("id" = i64, Path, description = "The web source's id")),
    request_body = SettingsBody,
    responses((status = 200, body = CrawlBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn update_crawl(
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
    ApiJson(b): ApiJson<SettingsBody>,
) -> Result<Json<CrawlBody>, ApiError> {
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        let current = engine.crawl(ctx, id)?;
        let view = engine.update_crawl(ctx, id, b.apply(current.settings))?;
        Ok(Json(view.into()))
    })
    .await
}

/// `{"removed": url, "documents": n}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RemovedCrawl {
    removed: i64,
    documents: usize,
}

/// Remove a web source, its pages and their documents.
#[utoipa::path(delete, path = "/api/v1/crawls/{id}", tag = "administration",
    params(("id" = i64, Path, description = "The web source's id")),
    responses((status = 200, body = RemovedCrawl), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn remove_crawl(
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<RemovedCrawl>, ApiError> {
    blocking(move || {
        let documents = caller.engine.remove_crawl(&caller.ctx, id)?;
        Ok(Json(RemovedCrawl {
            removed: id,
            documents,
        }))
    })
    .await
}

/// One address's outcome in a run.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PageBody {
    url: String,
    /// fetched, unchanged, duplicate, skipped, gone or failed.
    outcome: String,
    /// The reason, the HTTP status, or the address it duplicates.
    detail: Option<String>,
}

/// A run's result.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RunBody {
    crawl: CrawlBody,
    summary: SummaryBody,
    pages: Vec<PageBody>,
}

/// Crawl a web source now; changed pages are queued for the server's ingestion worker.
#[utoipa::path(post, path = "/api/v1/crawls/{id}/run", tag = "administration",
    params(("id" = i64, Path, description = "The web source's id")),
    responses((status = 200, body = RunBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn run_crawl(
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<RunBody>, ApiError> {
    blocking(move || {
        let run = caller.engine.run_crawl(&caller.ctx, id, None)?;
        let pages = run
            .pages
            .into_iter()
            .map(|p| {
                let (outcome, detail) = match p.outcome {
                    PageOutcome::Fetched => ("fetched", None),
                    PageOutcome::Unchanged => ("unchanged", None),
                    PageOutcome::Duplicate { of } => ("duplicate", Some(of)),
                    PageOutcome::Skipped { reason } => ("skipped", Some(reason)),
                    PageOutcome::Gone { status } => ("gone", Some(status.to_string())),
                    PageOutcome::Failed { reason } => ("failed", Some(reason)),
                };
                PageBody {
                    url: p.url,
                    outcome: outcome.into(),
                    detail,
                }
            })
            .collect();
        Ok(Json(RunBody {
            crawl: run.crawl.into(),
            summary: run.summary.into(),
            pages,
        }))
    })
    .await
}
