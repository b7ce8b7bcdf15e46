//! Resources (seed 002): code, credentials, cookies… that knowledge items reference by
//! `resource_ids`. A resource has a public `body` and an optional secret part that the store
//! only ever sees **sealed** (key id + nonce + AEAD ciphertext): encryption and decryption
//! happen in the engine, so no plaintext secret is ever written to the database.
//!
//! Visibility is part of the query ([`ResourceFilter`], the same `json_each` approach as
//! knowledge items): a caller never receives a row they may not see, and lists leave expired
//! resources out inside the SQL too.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};

use crate::filter::{Where, from_json, to_json};
use crate::{Result, Store, StoreError, now_ms};

/// A secret as stored: which key sealed it, the nonce and the AEAD ciphertext (with tag).
#[derive(Clone, PartialEq, Eq)]
pub struct SealedSecret {
    pub key_id: String,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

impl std::fmt::Debug for SealedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedSecret")
            .field("key_id", &self.key_id)
            .field("nonce_len", &self.nonce.len())
            .field("ciphertext_len", &self.ciphertext.len())
            .finish()
    }
}

/// A stored resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRecord {
    /// Row number (never shown, never reused).
    pub seq: i64,
    /// `resource-{unix_ms}-{random hex}`.
    pub id: String,
    /// `code`, `credential`, `cookie`, …
    pub content_type: String,
    pub title: String,
    pub description: String,
    /// The user who owns it (may change or delete it, and read its secret).
    pub owner: String,
    /// Who may read it (scope strings), besides `user:<owner>`.
    pub scopes: Vec<String>,
    pub tags: BTreeMap<String, String>,
    /// Free-form JSON object (seed 002's `metadata`: language, acquired_at, …).
    pub metadata: serde_json::Value,
    /// The public part.
    pub body: String,
    /// The secret part, sealed.
    pub secure: Option<SealedSecret>,
    /// Unix milliseconds after which the resource is refused; `None`: never expires.
    pub expires_at_ms: Option<i64>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// Which resources a query may return. Every condition is part of the SQL.
#[derive(Debug, Clone, Default)]
pub struct ResourceFilter {
    /// The reader's visible scopes and user id: a resource is visible when its scopes share
    /// one with `visible` or the reader owns it. `None`: every resource (administrators).
    pub reader: Option<(Vec<String>, String)>,
    /// Any of these content types (empty: any).
    pub content_types: Vec<String>,
    /// Carrying at least one of these scopes (empty: no narrowing).
    pub scopes: Vec<String>,
    /// Every one of these tags with exactly this value.
    pub tags: BTreeMap<String, String>,
    pub owner: Option<String>,
    /// Leave out resources that expired at or before this time (unix ms).
    pub live_at_ms: Option<i64>,
}

impl ResourceFilter {
    /// The WHERE clause (on alias `r`) and its parameters.
    fn sql(&self) -> (String, Vec<rusqlite::types::Value>) {
        use rusqlite::types::Value;
        let mut w = Where::new("r");
        w.readable_by(&self.reader);
        w.column_in("content_type", &self.content_types);
        w.array_has_any("scopes", &self.scopes);
        w.tags(&self.tags);
        w.owner(&self.owner);
        if let Some(now) = self.live_at_ms {
            let n = w.arg(Value::Integer(now));
            w.clause(format!("(r.expires_at IS NULL OR r.expires_at > ?{n})"));
        }
        w.finish()
    }
}

const SELECT: &str = "SELECT r.seq, r.id, r.content_type, r.title, r.description, r.owner, \
     r.scopes, r.tags, r.metadata, r.body, r.secure_key_id, r.secure_nonce, \
     r.secure_ciphertext, r.expires_at, r.created_at, r.updated_at FROM resources r";

fn record_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ResourceRecord> {
    let text = |i: usize| r.get::<_, String>(i);
    let key_id: Option<String> = r.get(10)?;
    let nonce: Option<Vec<u8>> = r.get(11)?;
    let ciphertext: Option<Vec<u8>> = r.get(12)?;
    let secure = match (key_id, nonce, ciphertext) {
        (Some(key_id), Some(nonce), Some(ciphertext)) => Some(SealedSecret {
            key_id,
            nonce,
            ciphertext,
        }),
        _ => None,
    };
    Ok(ResourceRecord {
        seq: r.get(0)?,
        id: r.get(1)?,
        content_type: r.get(2)?,
        title: r.get(3)?,
        description: r.get(4)?,
        owner: r.get(5)?,
        scopes: from_json(&text(6)?, 6)?,
        tags: from_json(&text(7)?, 7)?,
        metadata: from_json(&text(8)?, 8)?,
        body: r.get(9)?,
        secure,
        expires_at_ms: r.get(13)?,
        created_at_ms: r.get(14)?,
        updated_at_ms: r.get(15)?,
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

impl Store {
    /// Stores a new resource (`seq` and the timestamps are assigned here); returns it as
    /// stored. The id must be new.
    pub fn insert_resource(&mut self, r: &ResourceRecord) -> Result<ResourceRecord> {
        let now = now_ms();
        let (key_id, nonce, ciphertext) = sealed_parts(&r.secure);
        self.conn.execute(
            "INSERT INTO resources (id, content_type, title, description, owner, scopes, tags,
                 metadata, body, secure_key_id, secure_nonce, secure_ciphertext, expires_at,
                 created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)",
            params![
                r.id,
                r.content_type,
                r.title,
                r.description,
                r.owner,
                to_json(&r.scopes)?,
                to_json(&r.tags)?,
                to_json(&r.metadata)?,
                r.body,
                key_id,
                nonce,
                ciphertext,
                r.expires_at_ms,
                now
            ],
        )?;
        self.resource(&r.id)?
            .ok_or_else(|| StoreError::Corrupt(format!("resource {} vanished", r.id)))
    }

    /// One resource by id (no permission check).
    pub fn resource(&self, id: &str) -> Result<Option<ResourceRecord>> {
        Ok(self
            .conn
            .query_row(
                &format!("{SELECT} WHERE r.id = ?1"),
                params![id],
                record_from_row,
            )
            .optional()?)
    }

    /// One resource by id, only when it matches `filter` (visibility decided in the query).
    pub fn resource_matching(
        &self,
        id: &str,
        filter: &ResourceFilter,
    ) -> Result<Option<ResourceRecord>> {
        let (clause, mut args) = filter.sql();
        args.push(rusqlite::types::Value::Text(id.to_owned()));
        let n = args.len();
        Ok(self
            .conn
            .query_row(
                &format!("{SELECT} WHERE {clause} AND r.id = ?{n}"),
                rusqlite::params_from_iter(args),
                record_from_row,
            )
            .optional()?)
    }

    /// Resources matching `filter`, newest first.
    pub fn list_resources(
        &self,
        filter: &ResourceFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<ResourceRecord>> {
        let (clause, mut args) = filter.sql();
        args.push(rusqlite::types::Value::Integer(
            limit.min(i64::MAX as usize) as i64,
        ));
        args.push(rusqlite::types::Value::Integer(
            offset.min(i64::MAX as usize) as i64,
        ));
        let n = args.len();
        let mut stmt = self.conn.prepare(&format!(
            "{SELECT} WHERE {clause} ORDER BY r.updated_at DESC, r.seq DESC LIMIT ?{} OFFSET ?{n}",
            n - 1
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), record_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Replaces the stored resource `r.id` with `r` (`seq` and `created_at` are kept).
    /// Returns it as stored, `None` when there is no such resource.
    pub fn update_resource(&mut self, r: &ResourceRecord) -> Result<Option<ResourceRecord>> {
        let (key_id, nonce, ciphertext) = sealed_parts(&r.secure);
        let changed = self.conn.execute(
            "UPDATE resources SET content_type = ?2, title = ?3, description = ?4, owner = ?5,
                 scopes = ?6, tags = ?7, metadata = ?8, body = ?9, secure_key_id = ?10,
                 secure_nonce = ?11, secure_ciphertext = ?12, expires_at = ?13, updated_at = ?14
             WHERE id = ?1",
            params![
                r.id,
                r.content_type,
                r.title,
                r.description,
                r.owner,
                to_json(&r.scopes)?,
                to_json(&r.tags)?,
                to_json(&r.metadata)?,
                r.body,
                key_id,
                nonce,
                ciphertext,
                r.expires_at_ms,
                now_ms()
            ],
        )?;
        if changed == 0 {
            return Ok(None);
        }
        self.resource(&r.id)
    }

    /// Deletes a resource; `false` when there was none.
    pub fn delete_resource(&mut self, id: &str) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM resources WHERE id = ?1", params![id])?
            > 0)
    }
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
