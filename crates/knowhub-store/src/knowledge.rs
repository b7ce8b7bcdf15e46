//! Knowledge items (seed 002): structured experience an agent or a person saved, with the
//! scopes it is shared with, its provenance and the feedback it received.
//!
//! * One row per item; list-like fields (types, scopes, tags, histories, source) are JSON
//!   text, filtered with SQLite's `json_each` so every visibility filter runs *inside* the
//!   query (a caller never receives a row they may not see).
//! * `rev` changes only when the searchable text (task, content, types, tags) changes: the
//!   engine's derived full-text index and the item vectors are keyed by it, so feedback does
//!   not cause re-indexing or re-embedding. A trigger bumps `knowledge_version` on every
//!   insert, delete and text change, so another process's writes are noticed.
//! * Every content change (update, evolve, merge) first copies the previous state into
//!   `knowledge_versions`, and a merge keeps the full JSON of every item it absorbed there:
//!   nothing a slim or a rewrite replaced is lost.

use std::collections::BTreeMap;

use half::f16;
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::filter::{Where, from_json, to_json};
use crate::{Result, Store, StoreError, now_ms};

/// Where an item came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeSource {
    /// Tool or resource name, if any.
    pub name: String,
    /// `paper`, `exp`, `skill`, `book`, …
    pub category: String,
    pub urls: Vec<String>,
    /// The agent that saved it.
    pub agent_id: String,
    /// Who submitted it (the responsible person).
    pub submitted_by: String,
    /// When it was saved (RFC 3339).
    pub timestamp: String,
    /// The message it was extracted from (exact provenance).
    pub message_id: String,
}

/// One recorded use of an item (a helpful or harmful case).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FeedbackCase {
    pub task: String,
    pub outcome: String,
    pub reason: String,
    pub timestamp: String,
    pub message_id: String,
}

/// Usage-based evaluation of an item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeEval {
    /// 1–5.
    pub score: u8,
    pub helpful: u32,
    pub harmful: u32,
    /// 0–1.
    pub confidence: f64,
    pub helpful_history: Vec<FeedbackCase>,
    pub harmful_history: Vec<FeedbackCase>,
}

impl KnowledgeEval {
    /// Seed 002's quality: `score + helpful − 2·harmful`.
    pub fn quality(&self) -> f64 {
        f64::from(self.score) + f64::from(self.helpful) - 2.0 * f64::from(self.harmful)
    }
}

/// A stored knowledge item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeRecord {
    /// Row number: the key of the derived indexes (never shown, never reused).
    #[serde(skip)]
    pub seq: i64,
    /// `knowledge-{unix_ms}-{random hex}`.
    pub id: String,
    pub message_id: String,
    pub types: Vec<String>,
    pub task: String,
    pub tags: BTreeMap<String, String>,
    /// Who may read it (scope strings: `user:alice`, `team:hr`, `public`, …).
    pub scopes: Vec<String>,
    /// The user who owns it (may change or delete it).
    pub owner: String,
    pub content: String,
    pub resource_ids: Vec<String>,
    pub source: KnowledgeSource,
    pub eval: KnowledgeEval,
    /// Changes with the searchable text (task, content, types, tags).
    #[serde(skip)]
    pub rev: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// A previous state of an item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnowledgeVersion {
    /// `update`, `evolve`, `merge` (the item's own previous text) or `merged:<id>` (an item
    /// absorbed by a merge; `snapshot` holds all of it).
    pub reason: String,
    pub task: String,
    pub content: String,
    /// The whole item as it was, as JSON.
    pub snapshot: serde_json::Value,
    pub created_at_ms: i64,
}

/// Which items a query may return. Every condition is part of the SQL.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeFilter {
    /// The reader's visible scopes and user id: an item is visible when its scopes share one
    /// with `visible` or the reader owns it. `None`: every item (administrators).
    pub reader: Option<(Vec<String>, String)>,
    /// Any of these types (empty: any).
    pub types: Vec<String>,
    /// Carrying at least one of these scopes (empty: no narrowing).
    pub scopes: Vec<String>,
    /// Every one of these tags with exactly this value.
    pub tags: BTreeMap<String, String>,
    pub owner: Option<String>,
    /// `score >= min_score`.
    pub min_score: Option<u8>,
    /// `score + helpful − 2·harmful >= min_quality`.
    pub min_quality: Option<f64>,
}

impl KnowledgeFilter {
    /// The WHERE clause (on alias `k`) and its parameters.
    fn sql(&self) -> (String, Vec<rusqlite::types::Value>) {
        use rusqlite::types::Value;
        let mut w = Where::new("k");
        w.readable_by(&self.reader);
        w.array_has_any("types", &self.types);
        w.array_has_any("scopes", &self.scopes);
        w.tags(&self.tags);
        w.owner(&self.owner);
        if let Some(min) = self.min_score {
            let n = w.arg(Value::Integer(i64::from(min)));
            w.clause(format!("k.score >= ?{n}"));
        }
        if let Some(min) = self.min_quality {
            let n = w.arg(Value::Real(min));
            w.clause(format!("(k.score + k.helpful - 2.0 * k.harmful) >= ?{n}"));
        }
        w.finish()
    }
}

const SELECT: &str = "SELECT k.seq, k.id, k.message_id, k.types, k.task, k.tags, k.scopes, \
     k.owner, k.content, k.resource_ids, k.source, k.score, k.helpful, k.harmful, k.confidence, \
     k.helpful_history, k.harmful_history, k.rev, k.created_at, k.updated_at \
     FROM knowledge_items k";

fn record_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<KnowledgeRecord> {
    let text = |i: usize| r.get::<_, String>(i);
    Ok(KnowledgeRecord {
        seq: r.get(0)?,
        id: r.get(1)?,
        message_id: r.get(2)?,
        types: from_json(&text(3)?, 3)?,
        task: r.get(4)?,
        tags: from_json(&text(5)?, 5)?,
        scopes: from_json(&text(6)?, 6)?,
        owner: r.get(7)?,
        content: r.get(8)?,
        resource_ids: from_json(&text(9)?, 9)?,
        source: from_json(&text(10)?, 10)?,
        eval: KnowledgeEval {
            score: u8::try_from(r.get::<_, i64>(11)?).unwrap_or(1),
            helpful: u32::try_from(r.get::<_, i64>(12)?).unwrap_or(0),
            harmful: u32::try_from(r.get::<_, i64>(13)?).unwrap_or(0),
            confidence: r.get(14)?,
            helpful_history: from_json(&text(15)?, 15)?,
            harmful_history: from_json(&text(16)?, 16)?,
        },
        rev: r.get(17)?,
        created_at_ms: r.get(18)?,
        updated_at_ms: r.get(19)?,
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

fn insert_version(
    tx: &rusqlite::Transaction<'_>,
    seq: i64,
    reason: &str,
    old: &KnowledgeRecord,
    now: i64,
) -> Result<()> {
    tx.execute(
        "INSERT INTO knowledge_versions (item_seq, reason, task, content, snapshot, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![seq, reason, old.task, old.content, to_json(old)?, now],
    )?;
    Ok(())
}

fn write_row(
    tx: &rusqlite::Transaction<'_>,
    r: &KnowledgeRecord,
    rev: i64,
    now: i64,
) -> Result<()> {
    check_score(r.eval.score)?;
    tx.execute(
        "UPDATE knowledge_items SET message_id = ?2, types = ?3, task = ?4, tags = ?5,
             scopes = ?6, owner = ?7, content = ?8, resource_ids = ?9, source = ?10, score = ?11,
             helpful = ?12, harmful = ?13, confidence = ?14, helpful_history = ?15,
             harmful_history = ?16, rev = ?17, updated_at = ?18
         WHERE id = ?1",
        params![
            r.id,
            r.message_id,
            to_json(&r.types)?,
            r.task,
            to_json(&r.tags)?,
            to_json(&r.scopes)?,
            r.owner,
            r.content,
            to_json(&r.resource_ids)?,
            to_json(&r.source)?,
            i64::from(r.eval.score),
            i64::from(r.eval.helpful),
            i64::from(r.eval.harmful),
            r.eval.confidence,
            to_json(&r.eval.helpful_history)?,
            to_json(&r.eval.harmful_history)?,
            rev,
            now
        ],
    )?;
    Ok(())
}

impl Store {
    /// Stores a new item (`seq`, `rev` and the timestamps are assigned here); returns it as
    /// stored.
    pub fn insert_knowledge(&mut self, r: &KnowledgeRecord) -> Result<KnowledgeRecord> {
        check_score(r.eval.score)?;
        let now = now_ms();
        self.conn.execute(
            "INSERT INTO knowledge_items (id, message_id, types, task, tags, scopes, owner,
                 content, resource_ids, source, score, helpful, harmful, confidence,
                 helpful_history, harmful_history, rev, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 0,
                     ?17, ?17)",
            params![
                r.id,
                r.message_id,
                to_json(&r.types)?,
                r.task,
                to_json(&r.tags)?,
                to_json(&r.scopes)?,
                r.owner,
                r.content,
                to_json(&r.resource_ids)?,
                to_json(&r.source)?,
                i64::from(r.eval.score),
                i64::from(r.eval.helpful),
                i64::from(r.eval.harmful),
                r.eval.confidence,
                to_json(&r.eval.helpful_history)?,
                to_json(&r.eval.harmful_history)?,
                now
            ],
        )?;
        self.knowledge(&r.id)?
            .ok_or_else(|| StoreError::Corrupt(format!("knowledge {} vanished", r.id)))
    }

    /// One item by id (no permission check: the engine decides).
    pub fn knowledge(&self, id: &str) -> Result<Option<KnowledgeRecord>> {
        Ok(self
            .conn
            .query_row(
                &format!("{SELECT} WHERE k.id = ?1"),
                params![id],
                record_from_row,
            )
            .optional()?)
    }

    /// Items matching `filter`, newest first.
    pub fn list_knowledge(
        &self,
        filter: &KnowledgeFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<KnowledgeRecord>> {
        let (clause, mut args) = filter.sql();
        args.push(rusqlite::types::Value::Integer(
            limit.min(i64::MAX as usize) as i64,
        ));
        args.push(rusqlite::types::Value::Integer(
            offset.min(i64::MAX as usize) as i64,
        ));
        let n = args.len();
        let mut stmt = self.conn.prepare(&format!(
            "{SELECT} WHERE {clause} ORDER BY k.updated_at DESC, k.seq DESC LIMIT ?{} OFFSET ?{n}",
            n - 1
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), record_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The row numbers (`seq`) of the items matching `filter`: the allow-list the engine
    /// pushes into its index scans.
    pub fn knowledge_seqs(&self, filter: &KnowledgeFilter) -> Result<Vec<i64>> {
        let (clause, args) = filter.sql();
        let mut stmt = self.conn.prepare(&format!(
            "SELECT k.seq FROM knowledge_items k WHERE {clause}"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Items by row number (unknown numbers are skipped), in the order given.
    pub fn knowledge_by_seqs(&self, seqs: &[i64]) -> Result<Vec<KnowledgeRecord>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT} WHERE k.seq = ?1"))?;
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            if let Some(r) = stmt.query_row(params![seq], record_from_row).optional()? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// `(seq, rev)` of every item: what the derived indexes compare themselves against.
    pub fn knowledge_revs(&self) -> Result<Vec<(i64, i64)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT seq, rev FROM knowledge_items ORDER BY seq")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Changes on every insert, delete and text change of an item (trigger-maintained).
    pub fn knowledge_version(&self) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT version FROM knowledge_version WHERE id = 1",
            [],
            |r| r.get(0),
        )?)
    }

    /// Replaces the stored item `r.id` with `r`. With `keep_version`, the previous state is
    /// first saved as a version with that reason. `rev` is bumped when the searchable text
    /// changed. Returns the item as stored, `None` when there is no such item.
    pub fn update_knowledge(
        &mut self,
        r: &KnowledgeRecord,
        keep_version: Option<&str>,
    ) -> Result<Option<KnowledgeRecord>> {
        let tx = self.conn.transaction()?;
        let old = tx
            .query_row(
                &format!("{SELECT} WHERE k.id = ?1"),
                params![r.id],
                record_from_row,
            )
            .optional()?;
        let Some(old) = old else {
            return Ok(None);
        };
        let now = now_ms();
        if let Some(reason) = keep_version {
            insert_version(&tx, old.seq, reason, &old, now)?;
        }
        let rev = if same_text(&old, r) {
            old.rev
        } else {
            old.rev + 1
        };
        write_row(&tx, r, rev, now)?;
        tx.commit()?;
        self.knowledge(&r.id)
    }

    /// A slim merge, in one transaction: `kept` replaces its stored state (the previous one
    /// saved as a `merge` version), and each of `absorbed` is saved in full as a `merged:<id>`
    /// version of `kept`, then deleted.
    pub fn merge_knowledge(
        &mut self,
        kept: &KnowledgeRecord,
        absorbed: &[String],
    ) -> Result<Option<KnowledgeRecord>> {
        let tx = self.conn.transaction()?;
        let old = tx
            .query_row(
                &format!("{SELECT} WHERE k.id = ?1"),
                params![kept.id],
                record_from_row,
            )
            .optional()?;
        let Some(old) = old else {
            return Ok(None);
        };
        let now = now_ms();
        insert_version(&tx, old.seq, "merge", &old, now)?;
        for id in absorbed {
            if *id == kept.id {
                continue;
            }
            let gone = tx
                .query_row(
                    &format!("{SELECT} WHERE k.id = ?1"),
                    params![id],
                    record_from_row,
                )
                .optional()?;
            if let Some(gone) = gone {
                insert_version(&tx, old.seq, &format!("merged:{id}"), &gone, now)?;
                tx.execute(
                    "DELETE FROM knowledge_items WHERE seq = ?1",
                    params![gone.seq],
                )?;
            }
        }
        write_row(&tx, kept, old.rev + 1, now)?;
        tx.commit()?;
        self.knowledge(&kept.id)
    }

    /// Deletes an item with its versions and vector.
    pub fn delete_knowledge(&mut self, id: &str) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM knowledge_items WHERE id = ?1", params![id])?
            > 0)
    }

    /// The previous states of an item, oldest first.
    pub fn knowledge_versions(&self, id: &str) -> Result<Vec<KnowledgeVersion>> {
        let mut stmt = self.conn.prepare(
            "SELECT v.reason, v.task, v.content, v.snapshot, v.created_at
             FROM knowledge_versions v JOIN knowledge_items k ON k.seq = v.item_seq
             WHERE k.id = ?1 ORDER BY v.id",
        )?;
        let rows = stmt.query_map(params![id], |r| {
            let snapshot: String = r.get(3)?;
            Ok(KnowledgeVersion {
                reason: r.get(0)?,
                task: r.get(1)?,
                content: r.get(2)?,
                snapshot: serde_json::from_str(&snapshot).unwrap_or(serde_json::Value::Null),
                created_at_ms: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    // ----- item vectors -------------------------------------------------------------------

    /// Stores an item's vector for `model`, computed from the text at `rev` (f16).
    pub fn put_knowledge_vector(
        &mut self,
        seq: i64,
        model: &str,
        rev: i64,
        vector: &[f32],
    ) -> Result<()> {
        let bytes: Vec<u8> = vector
            .iter()
            .flat_map(|x| f16::from_f32(*x).to_le_bytes())
            .collect();
        self.conn.execute(
            "INSERT OR REPLACE INTO knowledge_vectors (item_seq, model, rev, dim, vector)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![seq, model, rev, vector.len() as i64, bytes],
        )?;
        Ok(())
    }

    /// `seq → (rev, vector)` of the items that have a vector of `model`.
    pub fn knowledge_vectors(&self, model: &str) -> Result<BTreeMap<i64, (i64, Vec<f32>)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT item_seq, rev, dim, vector FROM knowledge_vectors WHERE model = ?1")?;
        let rows = stmt.query_map(params![model], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Vec<u8>>(3)?,
            ))
        })?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (seq, rev, dim, bytes) = row?;
            // A row of the wrong length is treated as missing: it is re-embedded.
            if bytes.len() == (dim as usize) * 2 {
                let v = bytes
                    .chunks_exact(2)
                    .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect();
                out.insert(seq, (rev, v));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
#[path = "knowledge_tests.rs"]
mod tests;
