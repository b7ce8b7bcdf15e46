//! Resources (links, code, credentials with sealed secrets, …) in the team database: the
//! SQLite store's resources domain (`knowhub_store::ResourceStore`) with the same rows.
//!
//! The store only ever sees a secret sealed (key id, nonce, ciphertext as `bytea`); visibility
//! and expiry are conditions of the query, built by the same [`Where`] as knowledge items, so
//! a caller never receives a row they may not see.

use knowhub_store::backend::ResourceStore;
use knowhub_store::{ResourceFilter, ResourceRecord, Result, SealedSecret};
use postgres::Row;

use crate::knowledge::{Where, clamp, from_json, to_json};
use crate::now_ms;
use crate::store::{PgStore, pg};

fn resource_where(f: &ResourceFilter) -> Where {
    let mut w = Where::new("r");
    w.readable_by(&f.reader);
    w.column_in("content_type", &f.content_types);
    w.array_has_any("scopes", &f.scopes);
    w.tags(&f.tags);
    w.owner(&f.owner);
    if let Some(now) = f.live_at_ms {
        let n = w.arg(now);
        w.clause(format!(
            "(r.expires_at IS NULL OR r.expires_at > ${n}::bigint)"
        ));
    }
    w
}

/// The columns of [`record`], for `SELECT … FROM resources r` and `RETURNING`.
const COLUMNS: &str = "seq, id, content_type, title, description, owner, scopes::text, \
     tags::text, metadata, body, secure_key_id, secure_nonce, secure_ciphertext, expires_at, \
     created_at, updated_at";

fn record(r: &Row) -> Result<ResourceRecord> {
    let key_id: Option<String> = r.get(10);
    let nonce: Option<Vec<u8>> = r.get(11);
    let ciphertext: Option<Vec<u8>> = r.get(12);
    let secure = match (key_id, nonce, ciphertext) {
        (Some(key_id), Some(nonce), Some(ciphertext)) => Some(SealedSecret {
            key_id,
            nonce,
            ciphertext,
        }),
        _ => None,
    };
    Ok(ResourceRecord {
        seq: r.get(0),
        id: r.get(1),
        content_type: r.get(2),
        title: r.get(3),
        description: r.get(4),
        owner: r.get(5),
        scopes: from_json!(r.get::<_, &str>(6), "resources.scopes")?,
        tags: from_json!(r.get::<_, &str>(7), "resources.tags")?,
        metadata: from_json!(r.get::<_, &str>(8), "resources.metadata")?,
        body: r.get(9),
        secure,
        expires_at_ms: r.get(13),
        created_at_ms: r.get(14),
        updated_at_ms: r.get(15),
    })
}

fn sealed_parts(s: &Option<SealedSecret>) -> (Option<&str>, Option<&[u8]>, Option<&[u8]>) {
    match s {
        Some(s) => (
            Some(s.key_id.as_str()),
            Some(s.nonce.as_slice()),
            Some(s.ciphertext.as_slice()),
        ),
        None => (None, None, None),
    }
}

impl ResourceStore for PgStore {
    fn resource(&self, id: &str) -> Result<Option<ResourceRecord>> {
        let mut client = self.db.client()?;
        client
            .query_opt(
                &format!("SELECT {COLUMNS} FROM resources r WHERE r.id = $1"),
                &[&id],
            )
            .map_err(pg)?
            .as_ref()
            .map(record)
            .transpose()
    }

    fn resource_matching(
        &self,
        id: &str,
        filter: &ResourceFilter,
    ) -> Result<Option<ResourceRecord>> {
        let mut w = resource_where(filter);
        let n = w.arg(id.to_owned());
        let mut client = self.db.client()?;
        client
            .query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM resources r WHERE {} AND r.id = ${n}::text",
                    w.sql()
                ),
                &w.params(),
            )
            .map_err(pg)?
            .as_ref()
            .map(record)
            .transpose()
    }

    fn list_resources(
        &self,
        filter: &ResourceFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<ResourceRecord>> {
        let mut w = resource_where(filter);
        let l = w.arg(clamp(limit));
        let o = w.arg(clamp(offset));
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM resources r WHERE {}
                     ORDER BY r.updated_at DESC, r.seq DESC LIMIT ${l} OFFSET ${o}",
                    w.sql()
                ),
                &w.params(),
            )
            .map_err(pg)?;
        rows.iter().map(record).collect()
    }

    fn insert_resource(&mut self, r: &ResourceRecord) -> Result<ResourceRecord> {
        let (key_id, nonce, ciphertext) = sealed_parts(&r.secure);
        let (scopes, tags, metadata) = (
            to_json!(&r.scopes)?,
            to_json!(&r.tags)?,
            to_json!(&r.metadata)?,
        );
        let mut client = self.db.client()?;
        let row = client
            .query_one(
                &format!(
                    "INSERT INTO resources (id, content_type, title, description, owner, scopes,
                         tags, metadata, body, secure_key_id, secure_nonce, secure_ciphertext,
                         expires_at, created_at, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7::text::jsonb, $8, $9, $10,
                         $11, $12, $13, $14, $14)
                     RETURNING {COLUMNS}"
                ),
                &[
                    &r.id,
                    &r.content_type,
                    &r.title,
                    &r.description,
                    &r.owner,
                    &scopes,
                    &tags,
                    &metadata,
                    &r.body,
                    &key_id,
                    &nonce,
                    &ciphertext,
                    &r.expires_at_ms,
                    &now_ms(),
                ],
            )
            .map_err(pg)?;
        record(&row)
    }

    fn update_resource(&mut self, r: &ResourceRecord) -> Result<Option<ResourceRecord>> {
        let (key_id, nonce, ciphertext) = sealed_parts(&r.secure);
        let (scopes, tags, metadata) = (
            to_json!(&r.scopes)?,
            to_json!(&r.tags)?,
            to_json!(&r.metadata)?,
        );
        let mut client = self.db.client()?;
        client
            .query_opt(
                &format!(
                    "UPDATE resources SET content_type = $2, title = $3, description = $4,
                         owner = $5, scopes = $6::text::jsonb, tags = $7::text::jsonb,
                         metadata = $8, body = $9, secure_key_id = $10, secure_nonce = $11,
                         secure_ciphertext = $12, expires_at = $13, updated_at = $14
                     WHERE id = $1 RETURNING {COLUMNS}"
                ),
                &[
                    &r.id,
                    &r.content_type,
                    &r.title,
                    &r.description,
                    &r.owner,
                    &scopes,
                    &tags,
                    &metadata,
                    &r.body,
                    &key_id,
                    &nonce,
                    &ciphertext,
                    &r.expires_at_ms,
                    &now_ms(),
                ],
            )
            .map_err(pg)?
            .as_ref()
            .map(record)
            .transpose()
    }

    fn delete_resource(&mut self, id: &str) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client
            .execute("DELETE FROM resources WHERE id = $1", &[&id])
            .map_err(pg)?;
        Ok(n > 0)
    }
}
