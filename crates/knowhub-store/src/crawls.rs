//! Web and wiki crawl sources: a crawl is a folder source (its pages are kept as files under
//! the source's root) plus the address it starts from, its settings, and per page the address
//! a file came from with the validators for the next conditional request.

use rusqlite::params;

use crate::{Result, SourceId, Store};

/// A crawl source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlRecord {
    pub source: SourceId,
    /// The folder its pages are kept in.
    pub root_path: String,
    pub url: String,
    pub owner: Option<String>,
    /// The engine's crawl settings, as JSON.
    pub settings: String,
    /// When the last run finished (ms since the Unix epoch).
    pub last_run: Option<i64>,
    /// The last run's summary, as JSON.
    pub last_report: Option<String>,
    pub documents: u64,
}

/// A page a crawl keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlPageRecord {
    pub url: String,
    /// The file it is kept in (a document path).
    pub path: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub content_hash: String,
    pub extension: String,
    pub fetched_at: i64,
    /// The page's headings that can be linked to: (heading text, fragment id).
    pub anchors: Vec<(String, String)>,
}

/// Where a kept page came from, for citations that link to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageAddress {
    /// The file it is kept in (a document path).
    pub path: String,
    pub url: String,
    /// See [`CrawlPageRecord::anchors`].
    pub anchors: Vec<(String, String)>,
}

/// Anchors as stored (JSON); unreadable ones are none (they only refine a citation's link).
pub fn anchors_from_json(text: &str) -> Vec<(String, String)> {
    serde_json::from_str(text).unwrap_or_default()
}

/// Anchors as stored.
pub fn anchors_to_json(anchors: &[(String, String)]) -> String {
    serde_json::to_string(anchors).unwrap_or_else(|_| "[]".to_string())
}

const CRAWL_SELECT: &str = "SELECT c.source_id, s.root_path, c.url, s.owner, c.settings,
    c.last_run, c.last_report, (SELECT COUNT(*) FROM documents d WHERE d.source_id = s.id)
    FROM crawls c JOIN sources s ON s.id = c.source_id";

impl Store {
    /// Every crawl source, oldest first.
    pub fn crawls(&self) -> Result<Vec<CrawlRecord>> {
        let mut stmt = self
            .conn
            .prepare(&format!("{CRAWL_SELECT} ORDER BY c.source_id"))?;
        let rows = stmt.query_map([], |r| {
            Ok(CrawlRecord {
                source: SourceId(r.get(0)?),
                root_path: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                url: r.get(2)?,
                owner: r.get(3)?,
                settings: r.get(4)?,
                last_run: r.get(5)?,
                last_report: r.get(6)?,
                documents: r.get::<_, i64>(7)? as u64,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The pages a crawl keeps.
    pub fn crawl_pages(&self, source: SourceId) -> Result<Vec<CrawlPageRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT url, path, etag, last_modified, content_hash, extension, fetched_at, anchors
             FROM crawl_pages WHERE source_id = ?1 ORDER BY url",
        )?;
        let rows = stmt.query_map(params![source.0], |r| {
            Ok(CrawlPageRecord {
                url: r.get(0)?,
                path: r.get(1)?,
                etag: r.get(2)?,
                last_modified: r.get(3)?,
                content_hash: r.get(4)?,
                extension: r.get(5)?,
                fetched_at: r.get(6)?,
                anchors: anchors_from_json(&r.get::<_, String>(7)?),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The address each of `paths` was crawled from, with its headings' anchors, for those
    /// that were.
    pub fn page_urls(&self, paths: &[String]) -> Result<Vec<PageAddress>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT url, anchors FROM crawl_pages WHERE path = ?1 LIMIT 1")?;
        let mut out = Vec::new();
        for path in paths {
            let mut rows = stmt.query(params![path])?;
            if let Some(row) = rows.next()? {
                out.push(PageAddress {
                    path: path.clone(),
                    url: row.get(0)?,
                    anchors: anchors_from_json(&row.get::<_, String>(1)?),
                });
            }
        }
        Ok(out)
    }

    /// Makes the folder source `source` a crawl of `url`. False when `url` is crawled already.
    pub fn add_crawl(&mut self, source: SourceId, url: &str, settings: &str) -> Result<bool> {
        let n = self.conn.execute(
            "INSERT INTO crawls (source_id, url, settings) VALUES (?1, ?2, ?3)
             ON CONFLICT DO NOTHING",
            params![source.0, url, settings],
        )?;
        Ok(n == 1)
    }

    /// Replaces a crawl's settings. False when there is no such crawl.
    pub fn set_crawl_settings(&mut self, source: SourceId, settings: &str) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE crawls SET settings = ?2 WHERE source_id = ?1",
            params![source.0, settings],
        )?;
        Ok(n == 1)
    }

    /// Records a finished run: its time, its summary, and the pages the crawl now keeps (all
    /// of them: pages missing from `pages` are forgotten).
    pub fn finish_crawl(
        &mut self,
        source: SourceId,
        at: i64,
        report: &str,
        pages: &[CrawlPageRecord],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE crawls SET last_run = ?2, last_report = ?3 WHERE source_id = ?1",
            params![source.0, at, report],
        )?;
        tx.execute(
            "DELETE FROM crawl_pages WHERE source_id = ?1",
            params![source.0],
        )?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO crawl_pages (source_id, url, path, etag, last_modified,
                     content_hash, extension, fetched_at, anchors)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for p in pages {
                insert.execute(params![
                    source.0,
                    p.url,
                    p.path,
                    p.etag,
                    p.last_modified,
                    p.content_hash,
                    p.extension,
                    p.fetched_at,
                    anchors_to_json(&p.anchors)
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Forgets a crawl and its pages, and its source when no document is left in it (the
    /// engine removes the documents first, so that the index follows). False when unknown.
    pub fn remove_crawl(&mut self, source: SourceId) -> Result<bool> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM crawl_pages WHERE source_id = ?1",
            params![source.0],
        )?;
        let n = tx.execute("DELETE FROM crawls WHERE source_id = ?1", params![source.0])?;
        tx.execute(
            "DELETE FROM sources WHERE id = ?1
             AND NOT EXISTS (SELECT 1 FROM documents WHERE source_id = ?1)",
            params![source.0],
        )?;
        tx.commit()?;
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use knowhub_authz::UserId;

    use super::*;

    fn page(url: &str, path: &str) -> CrawlPageRecord {
        CrawlPageRecord {
            url: url.into(),
            path: path.into(),
            etag: Some("\"1\"".into()),
            last_modified: None,
            content_hash: "h".into(),
            extension: "html".into(),
            fetched_at: 5,
            anchors: vec![("Travel".into(), "travel".into())],
        }
    }

    #[test]
    fn a_crawl_keeps_its_pages_until_the_next_run_replaces_them() -> Result<()> {
        let mut store = Store::open_in_memory()?;
        let source = store.folder_source("/data/web/1", "example.com")?;
        store.claim_source(source, &UserId::new("admin").expect("id"))?;
        assert!(store.add_crawl(source, "https://example.com/", "{}")?);
        let other = store.folder_source("/data/web/2", "example.com")?;
        assert!(
            !store.add_crawl(other, "https://example.com/", "{}")?,
            "one crawl per address"
        );

        store.finish_crawl(
            source,
            10,
            "{\"fetched\":2}",
            &[
                page("https://example.com/", "/data/web/1/a.html"),
                page("https://example.com/b", "/data/web/1/b.html"),
            ],
        )?;
        let crawls = store.crawls()?;
        assert_eq!(crawls.len(), 1);
        assert_eq!(crawls[0].last_run, Some(10));
        assert_eq!(crawls[0].owner.as_deref(), Some("admin"));
        assert_eq!(store.crawl_pages(source)?.len(), 2);
        assert_eq!(
            store.page_urls(&["/data/web/1/b.html".into(), "/elsewhere".into()])?,
            [PageAddress {
                path: "/data/web/1/b.html".to_string(),
                url: "https://example.com/b".to_string(),
                anchors: vec![("Travel".into(), "travel".into())],
            }]
        );

        store.finish_crawl(
            source,
            20,
            "{}",
            &[page("https://example.com/", "/data/web/1/a.html")],
        )?;
        assert_eq!(store.crawl_pages(source)?.len(), 1);
        assert!(store.set_crawl_settings(source, "{\"depth\":1}")?);

        assert!(store.remove_crawl(source)?);
        assert!(store.crawls()?.is_empty());
        assert!(store.crawl_pages(source)?.is_empty());
        assert!(
            store.sources()?.iter().all(|s| s.id != source),
            "an empty source goes too"
        );
        assert!(!store.remove_crawl(source)?);
        Ok(())
    }
}
