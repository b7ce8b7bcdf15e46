//! Crawl sources in the team database: the SQLite store's crawls domain
//! (`knowhub_store::CrawlStore`). The pages are files under the crawl's folder on the job
//! host; what is shared here is the address, the settings and each page's validators, so any
//! replica can name a page's address in a citation.

use knowhub_store::backend::CrawlStore;
use knowhub_store::{
    CrawlPageRecord, CrawlRecord, PageAddress, Result, SourceId, anchors_from_json, anchors_to_json,
};
use postgres::Row;

use crate::store::{PgStore, pg};

const CRAWL_SELECT: &str = "SELECT c.source_id, s.root_path, c.url, s.owner, c.settings,
    c.last_run, c.last_report, (SELECT COUNT(*) FROM documents d WHERE d.source_id = s.id)
    FROM crawls c JOIN sources s ON s.id = c.source_id";

fn crawl_record(r: &Row) -> CrawlRecord {
    CrawlRecord {
        source: SourceId(r.get(0)),
        root_path: r.get::<_, Option<String>>(1).unwrap_or_default(),
        url: r.get(2),
        owner: r.get(3),
        settings: r.get(4),
        last_run: r.get(5),
        last_report: r.get(6),
        documents: u64::try_from(r.get::<_, i64>(7)).unwrap_or(0),
    }
}

impl CrawlStore for PgStore {
    fn crawls(&self) -> Result<Vec<CrawlRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(&format!("{CRAWL_SELECT} ORDER BY c.source_id"), &[])
            .map_err(pg)?;
        Ok(rows.iter().map(crawl_record).collect())
    }

    fn crawl_pages(&self, source: SourceId) -> Result<Vec<CrawlPageRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT url, path, etag, last_modified, content_hash, extension, fetched_at,
                     anchors
                 FROM crawl_pages WHERE source_id = $1 ORDER BY url COLLATE \"C\"",
                &[&source.0],
            )
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| CrawlPageRecord {
                url: r.get(0),
                path: r.get(1),
                etag: r.get(2),
                last_modified: r.get(3),
                content_hash: r.get(4),
                extension: r.get(5),
                fetched_at: r.get(6),
                anchors: anchors_from_json(r.get(7)),
            })
            .collect())
    }

    fn page_urls(&self, paths: &[String]) -> Result<Vec<PageAddress>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT DISTINCT ON (path) path, url, anchors FROM crawl_pages
                 WHERE path = ANY($1)",
                &[&paths],
            )
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| PageAddress {
                path: r.get(0),
                url: r.get(1),
                anchors: anchors_from_json(r.get(2)),
            })
            .collect())
    }

    fn add_crawl(&mut self, source: SourceId, url: &str, settings: &str) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client
            .execute(
                "INSERT INTO crawls (source_id, url, settings) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
                &[&source.0, &url, &settings],
            )
            .map_err(pg)?;
        Ok(n == 1)
    }

    fn set_crawl_settings(&mut self, source: SourceId, settings: &str) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client
            .execute(
                "UPDATE crawls SET settings = $2 WHERE source_id = $1",
                &[&source.0, &settings],
            )
            .map_err(pg)?;
        Ok(n == 1)
    }

    fn finish_crawl(
        &mut self,
        source: SourceId,
        at: i64,
        report: &str,
        pages: &[CrawlPageRecord],
    ) -> Result<()> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        tx.execute(
            "UPDATE crawls SET last_run = $2, last_report = $3 WHERE source_id = $1",
            &[&source.0, &at, &report],
        )
        .map_err(pg)?;
        tx.execute("DELETE FROM crawl_pages WHERE source_id = $1", &[&source.0])
            .map_err(pg)?;
        let insert = tx
            .prepare(
                "INSERT INTO crawl_pages (source_id, url, path, etag, last_modified,
                     content_hash, extension, fetched_at, anchors)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .map_err(pg)?;
        for p in pages {
            tx.execute(
                &insert,
                &[
                    &source.0,
                    &p.url,
                    &p.path,
                    &p.etag,
                    &p.last_modified,
                    &p.content_hash,
                    &p.extension,
                    &p.fetched_at,
                    &anchors_to_json(&p.anchors),
                ],
            )
            .map_err(pg)?;
        }
        tx.commit().map_err(pg)?;
        Ok(())
    }

    fn remove_crawl(&mut self, source: SourceId) -> Result<bool> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        tx.execute("DELETE FROM crawl_pages WHERE source_id = $1", &[&source.0])
            .map_err(pg)?;
        let n = tx
            .execute("DELETE FROM crawls WHERE source_id = $1", &[&source.0])
            .map_err(pg)?;
        tx.execute(
            "DELETE FROM sources WHERE id = $1
             AND NOT EXISTS (SELECT 1 FROM documents WHERE source_id = $1)",
            &[&source.0],
        )
        .map_err(pg)?;
        tx.commit().map_err(pg)?;
        Ok(n == 1)
    }
}
