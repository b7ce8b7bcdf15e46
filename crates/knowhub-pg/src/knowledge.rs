//! Knowledge items (and memories) in the team database: the SQLite store's knowledge domain
//! (`knowhub_store::KnowledgeStore`) with the same rows, revs, versions and item vectors.
//!
//! * The list columns a filter reads (`types`, `scopes`, `tags`) are `jsonb`, so every
//!   visibility condition runs inside the query as in SQLite; the other JSON fields are kept
//!   as the exact text SQLite keeps.
//! * `rev` changes only with the searchable text; triggers bump `knowledge_version` on every
//!   insert, delete and rev change, in the writing transaction, so another replica's writes
//!   are noticed by polling one row.
//! * Every content change first copies the previous state into `knowledge_versions`; a merge
//!   keeps the full JSON of each item it absorbed there.
//! * Item vectors are f16 little-endian bytes, as in SQLite, so both backends return the same
//!   rounded values.
//!
//! [`Where`] builds the filters of this module and of `resources.rs` with bind parameters.

use std::collections::{BTreeMap, HashMap};

use half::f16;
use knowhub_store::backend::KnowledgeStore;
use knowhub_store::{
    KnowledgeEval, KnowledgeFilter, KnowledgeRecord, KnowledgeVersion, Result, StoreError,
};
use postgres::types::ToSql;
use postgres::{Row, Transaction};

use crate::now_ms;
use crate::store::{PgStore, pg};

/// A bind parameter owned by the filter that produced it.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// Clauses on one table alias joined by `AND`, with their `$n` parameters: the PostgreSQL
/// form of the SQLite store's filter builder.
pub(crate) struct Where {
    alias: &'static str,
    clauses: Vec<String>,
    args: Vec<Param>,
}

impl Where {
    pub(crate) fn new(alias: &'static str) -> Self {
        Where {
            alias,
            clauses: vec!["TRUE".to_owned()],
            args: Vec::new(),
        }
    }

    /// Adds a parameter; returns its `$n` number.
    pub(crate) fn arg(&mut self, value: impl ToSql + Sync + Send + 'static) -> usize {
        self.args.push(Box::new(value));
        self.args.len()
    }

    pub(crate) fn clause(&mut self, sql: String) {
        self.clauses.push(sql);
    }

    /// Visible to `reader` = (visible scopes, user id): a scope in common, or owned by them.
    /// `None` (administrators): no restriction.
    pub(crate) fn readable_by(&mut self, reader: &Option<(Vec<String>, String)>) {
        if let Some((visible, me)) = reader {
            let a = self.alias;
            let scopes = self.arg(visible.clone());
            let owner = self.arg(me.clone());
            self.clause(format!(
                "({a}.scopes ?| ${scopes}::text[] OR {a}.owner = ${owner}::text)"
            ));
        }
    }

    /// The `jsonb` array `column` holds at least one of `values` (no narrowing when empty).
    pub(crate) fn array_has_any(&mut self, column: &str, values: &[String]) {
        if values.is_empty() {
            return;
        }
        let a = self.alias;
        let n = self.arg(values.to_vec());
        self.clause(format!("{a}.{column} ?| ${n}::text[]"));
    }

    /// The scalar `column` is one of `values` (no narrowing when empty).
    pub(crate) fn column_in(&mut self, column: &str, values: &[String]) {
        if values.is_empty() {
            return;
        }
        let a = self.alias;
        let n = self.arg(values.to_vec());
        self.clause(format!("{a}.{column} = ANY(${n}::text[])"));
    }

    /// Every tag with exactly this value (the `tags` object column). Double quotes are dropped
    /// from keys, as the SQLite store does when it builds its JSON path.
    pub(crate) fn tags(&mut self, tags: &BTreeMap<String, String>) {
        for (key, value) in tags {
            let a = self.alias;
            let k = self.arg(key.replace('"', ""));
            let v = self.arg(value.clone());
            self.clause(format!("({a}.tags ->> ${k}::text) = ${v}::text"));
        }
    }

    pub(crate) fn owner(&mut self, owner: &Option<String>) {
        if let Some(owner) = owner {
            let a = self.alias;
            let n = self.arg(owner.clone());
            self.clause(format!("{a}.owner = ${n}::text"));
        }
    }

    /// The WHERE clause (parameters for `LIMIT`/`OFFSET` or an id can be added first with
    /// [`Where::arg`]).
    pub(crate) fn sql(&self) -> String {
        self.clauses.join(" AND ")
    }

    /// The parameters to bind, in `$n` order.
    pub(crate) fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.args
            .iter()
            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}

/// `LIMIT`/`OFFSET` values as the SQLite store clamps them.
pub(crate) fn clamp(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A value as the JSON text SQLite stores (macros, because this crate does not name serde's
/// traits).
macro_rules! to_json {
    ($value:expr $(,)?) => {
        serde_json::to_string($value).map_err(|e| knowhub_store::StoreError::Corrupt(e.to_string()))
    };
}

/// Stored JSON text back as a value; a text that no longer parses is `Corrupt`.
macro_rules! from_json {
    ($text:expr, $column:expr $(,)?) => {
        serde_json::from_str($text)
            .map_err(|e| knowhub_store::StoreError::Corrupt(format!("{}: {e}", $column)))
    };
}

pub(crate) use {from_json, to_json};

fn knowledge_where(f: &KnowledgeFilter) -> Where {
    let mut w = Where::new("k");
    w.readable_by(&f.reader);
    w.array_has_any("types", &f.types);
    w.array_has_any("scopes", &f.scopes);
    w.tags(&f.tags);
    w.owner(&f.owner);
    if let Some(min) = f.min_score {
        let n = w.arg(i64::from(min));
        w.clause(format!("k.score >= ${n}::bigint"));
    }
    if let Some(min) = f.min_quality {
        let n = w.arg(min);
        // In double precision, as SQLite evaluates `score + helpful - 2.0 * harmful`.
        w.clause(format!(
            "(k.score + k.helpful - 2 * k.harmful)::float8 >= ${n}::float8"
        ));
    }
    w
}

/// The columns of [`record`], for `SELECT … FROM knowledge_items k` and `RETURNING`.
const COLUMNS: &str = "seq, id, message_id, types::text, task, tags::text, scopes::text, owner, \
     content, resource_ids, source, score, helpful, harmful, confidence, helpful_history, \
     harmful_history, rev, created_at, updated_at";

fn record(r: &Row) -> Result<KnowledgeRecord> {
    let text = |i: usize| r.get::<_, &str>(i);
    Ok(KnowledgeRecord {
        seq: r.get(0),
        id: r.get(1),
        message_id: r.get(2),
        types: from_json!(text(3), "knowledge_items.types")?,
        task: r.get(4),
        tags: from_json!(text(5), "knowledge_items.tags")?,
        scopes: from_json!(text(6), "knowledge_items.scopes")?,
        owner: r.get(7),
        content: r.get(8),
        resource_ids: from_json!(text(9), "knowledge_items.resource_ids")?,
        source: from_json!(text(10), "knowledge_items.source")?,
        eval: KnowledgeEval {
            score: u8::try_from(r.get::<_, i64>(11)).unwrap_or(1),
            helpful: u32::try_from(r.get::<_, i64>(12)).unwrap_or(0),
            harmful: u32::try_from(r.get::<_, i64>(13)).unwrap_or(0),
            confidence: r.get(14),
            helpful_history: from_json!(text(15), "knowledge_items.helpful_history",)?,
            harmful_history: from_json!(text(16), "knowledge_items.harmful_history",)?,
        },
        rev: r.get(17),
        created_at_ms: r.get(18),
        updated_at_ms: r.get(19),
    })
}

/// The fields that feed the full-text index and the embedder.
fn same_text(a: &KnowledgeRecord, b: &KnowledgeRecord) -> bool {
    a.task == b.task && a.content == b.content && a.types == b.types && a.tags == b.tags
}

fn check_score(score: u8) -> Result<()> {
    if (1..=5).contains(&score) {
        Ok(())
    } else {
        Err(StoreError::Corrupt(format!(
            "knowledge score {score} outside 1-5"
        )))
    }
}

/// A record's JSON and integer columns, ready to bind.
struct Encoded {
    types: String,
    tags: String,
    scopes: String,
    resource_ids: String,
    source: String,
    helpful_history: String,
    harmful_history: String,
    score: i64,
    helpful: i64,
    harmful: i64,
}

fn encode(r: &KnowledgeRecord) -> Result<Encoded> {
    Ok(Encoded {
        types: to_json!(&r.types)?,
        tags: to_json!(&r.tags)?,
        scopes: to_json!(&r.scopes)?,
        resource_ids: to_json!(&r.resource_ids)?,
        source: to_json!(&r.source)?,
        helpful_history: to_json!(&r.eval.helpful_history)?,
        harmful_history: to_json!(&r.eval.harmful_history)?,
        score: i64::from(r.eval.score),
        helpful: i64::from(r.eval.helpful),
        harmful: i64::from(r.eval.harmful),
    })
}

/// The item `id`, locked until the transaction ends (a concurrent writer waits, so revs and
/// versions are computed from the state actually replaced).
fn locked(tx: &mut Transaction<'_>, id: &str) -> Result<Option<KnowledgeRecord>> {
    tx.query_opt(
        &format!("SELECT {COLUMNS} FROM knowledge_items k WHERE k.id = $1 FOR UPDATE"),
        &[&id],
    )
    .map_err(pg)?
    .as_ref()
    .map(record)
    .transpose()
}

fn insert_version(
    tx: &mut Transaction<'_>,
    seq: i64,
    reason: &str,
    old: &KnowledgeRecord,
    now: i64,
) -> Result<()> {
    tx.execute(
        "INSERT INTO knowledge_versions (item_seq, reason, task, content, snapshot, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &seq,
            &reason,
            &old.task,
            &old.content,
            &to_json!(old)?,
            &now,
        ],
    )
    .map_err(pg)?;
    Ok(())
}

/// Overwrites the stored item `r.id`; returns it as stored.
fn write_row(
    tx: &mut Transaction<'_>,
    r: &KnowledgeRecord,
    rev: i64,
    now: i64,
) -> Result<Option<KnowledgeRecord>> {
    check_score(r.eval.score)?;
    let e = encode(r)?;
    tx.query_opt(
        &format!(
            "UPDATE knowledge_items SET message_id = $2, types = $3::text::jsonb, task = $4,
                 tags = $5::text::jsonb, scopes = $6::text::jsonb, owner = $7, content = $8,
                 resource_ids = $9, source = $10, score = $11, helpful = $12, harmful = $13,
                 confidence = $14, helpful_history = $15, harmful_history = $16, rev = $17,
                 updated_at = $18
             WHERE id = $1 RETURNING {COLUMNS}"
        ),
        &[
            &r.id,
            &r.message_id,
            &e.types,
            &r.task,
            &e.tags,
            &e.scopes,
            &r.owner,
            &r.content,
            &e.resource_ids,
            &e.source,
            &e.score,
            &e.helpful,
            &e.harmful,
            &r.eval.confidence,
            &e.helpful_history,
            &e.harmful_history,
            &rev,
            &now,
        ],
    )
    .map_err(pg)?
    .as_ref()
    .map(record)
    .transpose()
}

fn f16_bytes(vector: &[f32]) -> Vec<u8> {
    vector
        .iter()
        .flat_map(|x| f16::from_f32(*x).to_le_bytes())
        .collect()
}

impl KnowledgeStore for PgStore {
    fn knowledge(&self, id: &str) -> Result<Option<KnowledgeRecord>> {
        let mut client = self.db.client()?;
        client
            .query_opt(
                &format!("SELECT {COLUMNS} FROM knowledge_items k WHERE k.id = $1"),
                &[&id],
            )
            .map_err(pg)?
            .as_ref()
            .map(record)
            .transpose()
    }

    fn list_knowledge(
        &self,
        filter: &KnowledgeFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<KnowledgeRecord>> {
        let mut w = knowledge_where(filter);
        let l = w.arg(clamp(limit));
        let o = w.arg(clamp(offset));
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM knowledge_items k WHERE {}
                     ORDER BY k.updated_at DESC, k.seq DESC LIMIT ${l} OFFSET ${o}",
                    w.sql()
                ),
                &w.params(),
            )
            .map_err(pg)?;
        rows.iter().map(record).collect()
    }

    fn knowledge_seqs(&self, filter: &KnowledgeFilter) -> Result<Vec<i64>> {
        let w = knowledge_where(filter);
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "SELECT k.seq FROM knowledge_items k WHERE {} ORDER BY k.seq",
                    w.sql()
                ),
                &w.params(),
            )
            .map_err(pg)?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn knowledge_by_seqs(&self, seqs: &[i64]) -> Result<Vec<KnowledgeRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!("SELECT {COLUMNS} FROM knowledge_items k WHERE k.seq = ANY($1)"),
                &[&seqs],
            )
            .map_err(pg)?;
        let mut found = HashMap::with_capacity(rows.len());
        for row in &rows {
            let r = record(row)?;
            found.insert(r.seq, r);
        }
        // In the order asked, repeats included, as the SQLite store answers one seq at a time.
        Ok(seqs.iter().filter_map(|s| found.get(s).cloned()).collect())
    }

    fn knowledge_revs(&self) -> Result<Vec<(i64, i64)>> {
        let mut client = self.db.client()?;
        let rows = client
            .query("SELECT seq, rev FROM knowledge_items ORDER BY seq", &[])
            .map_err(pg)?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn knowledge_version(&self) -> Result<i64> {
        let mut client = self.db.client()?;
        Ok(client
            .query_one("SELECT version FROM knowledge_version WHERE id = 1", &[])
            .map_err(pg)?
            .get(0))
    }

    fn knowledge_versions(&self, id: &str) -> Result<Vec<KnowledgeVersion>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT v.reason, v.task, v.content, v.snapshot, v.created_at
                 FROM knowledge_versions v JOIN knowledge_items k ON k.seq = v.item_seq
                 WHERE k.id = $1 ORDER BY v.id",
                &[&id],
            )
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| KnowledgeVersion {
                reason: r.get(0),
                task: r.get(1),
                content: r.get(2),
                snapshot: serde_json::from_str(r.get(3)).unwrap_or(serde_json::Value::Null),
                created_at_ms: r.get(4),
            })
            .collect())
    }

    fn knowledge_vectors(&self, model: &str) -> Result<BTreeMap<i64, (i64, Vec<f32>)>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT item_seq, rev, dim, vector FROM knowledge_vectors WHERE model = $1",
                &[&model],
            )
            .map_err(pg)?;
        let mut out = BTreeMap::new();
        for row in &rows {
            let seq: i64 = row.get(0);
            let rev: i64 = row.get(1);
            let dim: i64 = row.get(2);
            let bytes: &[u8] = row.get(3);
            // A row of the wrong length is treated as missing: it is re-embedded.
            if usize::try_from(dim).is_ok_and(|d| bytes.len() == d.saturating_mul(2)) {
                let v = bytes
                    .chunks_exact(2)
                    .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect();
                out.insert(seq, (rev, v));
            }
        }
        Ok(out)
    }

    fn insert_knowledge(&mut self, r: &KnowledgeRecord) -> Result<KnowledgeRecord> {
        check_score(r.eval.score)?;
        let e = encode(r)?;
        let now = now_ms();
        let mut client = self.db.client()?;
        let row = client
            .query_one(
                &format!(
                    "INSERT INTO knowledge_items (id, message_id, types, task, tags, scopes,
                         owner, content, resource_ids, source, score, helpful, harmful,
                         confidence, helpful_history, harmful_history, rev, created_at,
                         updated_at)
                     VALUES ($1, $2, $3::text::jsonb, $4, $5::text::jsonb, $6::text::jsonb, $7,
                         $8, $9, $10, $11, $12, $13, $14, $15, $16, 0, $17, $17)
                     RETURNING {COLUMNS}"
                ),
                &[
                    &r.id,
                    &r.message_id,
                    &e.types,
                    &r.task,
                    &e.tags,
                    &e.scopes,
                    &r.owner,
                    &r.content,
                    &e.resource_ids,
                    &e.source,
                    &e.score,
                    &e.helpful,
                    &e.harmful,
                    &r.eval.confidence,
                    &e.helpful_history,
                    &e.harmful_history,
                    &now,
                ],
            )
            .map_err(pg)?;
        record(&row)
    }

    fn update_knowledge(
        &mut self,
        r: &KnowledgeRecord,
        keep_version: Option<&str>,
    ) -> Result<Option<KnowledgeRecord>> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        let Some(old) = locked(&mut tx, &r.id)? else {
            return Ok(None);
        };
        let now = now_ms();
        if let Some(reason) = keep_version {
            insert_version(&mut tx, old.seq, reason, &old, now)?;
        }
        let rev = if same_text(&old, r) {
            old.rev
        } else {
            old.rev + 1
        };
        let stored = write_row(&mut tx, r, rev, now)?;
        tx.commit().map_err(pg)?;
        Ok(stored)
    }

    fn merge_knowledge(
        &mut self,
        kept: &KnowledgeRecord,
        absorbed: &[String],
    ) -> Result<Option<KnowledgeRecord>> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        let Some(old) = locked(&mut tx, &kept.id)? else {
            return Ok(None);
        };
        let now = now_ms();
        insert_version(&mut tx, old.seq, "merge", &old, now)?;
        for id in absorbed {
            if *id == kept.id {
                continue;
            }
            if let Some(gone) = locked(&mut tx, id)? {
                insert_version(&mut tx, old.seq, &format!("merged:{id}"), &gone, now)?;
                tx.execute("DELETE FROM knowledge_items WHERE seq = $1", &[&gone.seq])
                    .map_err(pg)?;
            }
        }
        let stored = write_row(&mut tx, kept, old.rev + 1, now)?;
        tx.commit().map_err(pg)?;
        Ok(stored)
    }

    fn delete_knowledge(&mut self, id: &str) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client
            .execute("DELETE FROM knowledge_items WHERE id = $1", &[&id])
            .map_err(pg)?;
        Ok(n > 0)
    }

    fn put_knowledge_vector(
        &mut self,
        seq: i64,
        model: &str,
        rev: i64,
        vector: &[f32],
    ) -> Result<()> {
        let dim = i64::try_from(vector.len()).unwrap_or(i64::MAX);
        let mut client = self.db.client()?;
        client
            .execute(
                "INSERT INTO knowledge_vectors (item_seq, model, rev, dim, vector)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (item_seq) DO UPDATE SET model = excluded.model,
                     rev = excluded.rev, dim = excluded.dim, vector = excluded.vector",
                &[&seq, &model, &rev, &dim, &f16_bytes(vector)],
            )
            .map_err(pg)?;
        Ok(())
    }
}
