//! A replica's full-text index, derived from the team database's change log.
//!
//! Each replica keeps its own tantivy index (the same analyzer and scoring as local mode) and
//! the sequence number of the last change it applied, in a file beside the index. Catching up
//! reads the changes after it, re-reads the changed documents' chunks, replaces them in the
//! index, commits, and only then records the new sequence number. A crash in between replays
//! those changes, which is harmless: replacing a document first deletes all of its chunks
//! (invariant 3 of ARCHITECTURE.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use knowhub_index::{ChunkEntry, TextIndex};
use knowhub_store::{DocumentId, IndexEntry, ReplicaTable, SheetReplica};
use postgres::fallible_iterator::FallibleIterator;

use crate::documents::CHANNEL_SQL;
use crate::{Database, PgDocuments, PgError, Result};

/// Changes read per round trip while catching up.
const BATCH: usize = 500;

/// What one catch-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CatchUp {
    /// Change-log entries read.
    pub changes: u64,
    /// Distinct documents re-indexed or removed.
    pub documents: u64,
    /// The sequence number now applied.
    pub applied: i64,
    /// Whether the replica was behind the compacted log and rebuilt its index from it.
    pub rebuilt: bool,
}

/// Keeps one replica's text index in step with the database.
#[derive(Debug)]
pub struct IndexFollower<I: TextIndex> {
    docs: PgDocuments,
    index: I,
    state: PathBuf,
    applied: i64,
    /// The identity of the log the index was made from ([`PgDocuments::change_log_id`]).
    log_id: String,
    /// The index was started afresh: a spreadsheet copy beside it is not trusted either.
    fresh: bool,
    /// Whether the compaction horizon was compared since the follower started or last lost
    /// the database. A replica that keeps following stays seconds behind the log's end, far
    /// above a horizon that only entries older than the retention raise, so one comparison
    /// per start (or outage) is enough.
    horizon_checked: bool,
    /// `applied`, readable from other threads (e.g. a check waiting for the follower).
    position: Arc<AtomicI64>,
    /// The replica's copy of the spreadsheet tables, and the documents it holds tables of.
    sheets: Option<(SheetReplica, BTreeSet<DocumentId>)>,
}

impl<I: TextIndex> IndexFollower<I> {
    /// Follows into `index`; the applied position is kept in `state`, with the identity of the
    /// log. An index without a recorded position, or made from another log, is emptied and
    /// rebuilt from the start of this one.
    pub fn new(db: &Database, index: I, state: impl Into<PathBuf>) -> Result<IndexFollower<I>> {
        let state = state.into();
        let docs = PgDocuments::new(db);
        let log_id = docs.change_log_id()?;
        let recorded = match std::fs::read_to_string(&state) {
            Ok(text) => Some(
                parse_state(&text)
                    .ok_or_else(|| PgError::Corrupt(format!("{}: {text:?}", state.display())))?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        let applied = match recorded {
            // A position without a log identity was written by an older build, for this log.
            Some((log, seq)) if log.as_ref().is_none_or(|log| *log == log_id) => Some(seq),
            _ => None,
        };
        if applied.is_none() {
            index
                .clear()
                .and_then(|()| index.commit())
                .map_err(|e| PgError::Index(e.to_string()))?;
        }
        Ok(IndexFollower {
            docs,
            index,
            state,
            applied: applied.unwrap_or(0),
            log_id,
            fresh: applied.is_none(),
            horizon_checked: false,
            position: Arc::new(AtomicI64::new(applied.unwrap_or(0))),
            sheets: None,
        })
    }

    /// Also keeps `replica` (the spreadsheet tables for the SQL tool) in step. It is first
    /// compared with the database, table by table, so a copy made by an older build, left
    /// behind by a crash, or deleted, is repaired before the log is followed.
    pub fn with_sheets(mut self, mut replica: SheetReplica) -> Result<IndexFollower<I>> {
        if self.fresh {
            let held: Vec<String> = replica
                .generations()
                .map_err(|e| PgError::Sheets(e.to_string()))?
                .into_keys()
                .collect();
            replica
                .remove(&held)
                .map_err(|e| PgError::Sheets(e.to_string()))?;
        }
        let held = Self::reconcile_sheets(&self.docs, &mut replica)?;
        self.sheets = Some((replica, held));
        Ok(self)
    }

    /// Makes `replica` hold exactly the tables the database holds now, comparing generations
    /// table by table; returns the documents it holds tables of.
    fn reconcile_sheets(
        docs: &PgDocuments,
        replica: &mut SheetReplica,
    ) -> Result<BTreeSet<DocumentId>> {
        let store = |e: knowhub_store::StoreError| PgError::Sheets(e.to_string());
        let want = docs.sheet_generations()?;
        let have = replica.generations().map_err(store)?;
        let stale: Vec<String> = have
            .iter()
            .filter(|(name, held)| want.get(*name) != Some(held))
            .map(|(name, _)| name.clone())
            .collect();
        replica.remove(&stale).map_err(store)?;
        let missing: BTreeSet<DocumentId> = want
            .iter()
            .filter(|(name, wanted)| have.get(*name) != Some(wanted))
            .map(|(_, (doc, _))| *doc)
            .collect();
        let missing: Vec<DocumentId> = missing.into_iter().collect();
        for ids in missing.chunks(BATCH) {
            Self::copy_sheets(docs, replica, ids)?;
        }
        Ok(replica
            .generations()
            .map_err(store)?
            .into_values()
            .map(|(doc, _)| doc)
            .collect())
    }

    /// Makes the replica's tables of `ids` what the database holds now; returns the documents
    /// that have tables.
    fn copy_sheets(
        docs: &PgDocuments,
        replica: &mut SheetReplica,
        ids: &[DocumentId],
    ) -> Result<BTreeSet<DocumentId>> {
        let mut by_doc: BTreeMap<DocumentId, Vec<ReplicaTable>> =
            ids.iter().map(|id| (*id, Vec::new())).collect();
        for (doc, table) in docs.sheet_tables_of(ids)? {
            by_doc.entry(doc).or_default().push(table);
        }
        let mut with_tables = BTreeSet::new();
        for (doc, tables) in by_doc {
            replica
                .replace_document(doc, &tables)
                .map_err(|e| PgError::Sheets(e.to_string()))?;
            if !tables.is_empty() {
                with_tables.insert(doc);
            }
        }
        Ok(with_tables)
    }

    /// The applied position, shared: it moves as this follower commits.
    pub fn position(&self) -> Arc<AtomicI64> {
        Arc::clone(&self.position)
    }

    pub fn index(&self) -> &I {
        &self.index
    }

    /// The last change applied.
    pub fn applied(&self) -> i64 {
        self.applied
    }

    /// Applies every change committed so far. A replica that has fallen behind the log's
    /// compaction horizon (it was away while a removal's entry was dropped) rebuilds its index
    /// and tables from the whole log instead.
    pub fn catch_up(&mut self) -> Result<CatchUp> {
        let rebuilt = !self.horizon_checked
            && self.applied > 0
            && self.applied < self.docs.change_log_horizon()?;
        if rebuilt {
            self.rebuild()?;
        }
        self.horizon_checked = true;
        let mut done = CatchUp {
            applied: self.applied,
            rebuilt,
            ..CatchUp::default()
        };
        loop {
            let changes = self.docs.changes_after(self.applied, BATCH)?;
            let Some(last) = changes.last().map(|c| c.seq) else {
                return Ok(done);
            };
            let ids: BTreeSet<DocumentId> = changes.iter().map(|c| c.document_id).collect();
            let ids: Vec<DocumentId> = ids.into_iter().collect();
            let entries = self.docs.index_entries(&ids)?;
            self.apply(&ids, &entries)?;
            self.apply_sheets(&ids)?;
            self.record(last)?;
            done.changes += changes.len() as u64;
            done.documents += ids.len() as u64;
            done.applied = last;
        }
    }

    /// Empties the index, forgets the applied position and drops the tables of documents the
    /// database no longer has, so that the next catch-up replays the whole log.
    fn rebuild(&mut self) -> Result<()> {
        self.index
            .clear()
            .and_then(|()| self.index.commit())
            .map_err(|e| PgError::Index(e.to_string()))?;
        self.record(0)?;
        if let Some((replica, held)) = self.sheets.as_mut() {
            *held = Self::reconcile_sheets(&self.docs, replica)?;
        }
        Ok(())
    }

    fn apply(&self, ids: &[DocumentId], entries: &[IndexEntry]) -> Result<()> {
        let index_error = |e: knowhub_index::IndexError| PgError::Index(e.to_string());
        let mut rest = entries;
        for id in ids {
            let n = rest.iter().take_while(|e| e.document_id == *id).count();
            let (mine, tail) = rest.split_at(n);
            rest = tail;
            let doc = id.0 as u64;
            if mine.is_empty() {
                self.index.delete_document(doc).map_err(index_error)?;
            } else {
                let chunks: Vec<ChunkEntry<'_>> = mine
                    .iter()
                    .map(|e| ChunkEntry {
                        chunk_id: e.chunk_id.0 as u64,
                        title: &e.title,
                        heading: &e.heading,
                        body: &e.text,
                    })
                    .collect();
                self.index
                    .replace_document(doc, &chunks)
                    .map_err(index_error)?;
            }
        }
        self.index.commit().map_err(index_error)
    }

    /// Brings the replica's spreadsheet tables of the changed documents `ids` up to date
    /// (those that have sheets now, or had them).
    fn apply_sheets(&mut self, ids: &[DocumentId]) -> Result<()> {
        let Some((replica, held)) = self.sheets.as_mut() else {
            return Ok(());
        };
        let touched: BTreeSet<DocumentId> = self
            .docs
            .documents_with_sheets(ids)?
            .into_iter()
            .chain(ids.iter().copied().filter(|id| held.contains(id)))
            .collect();
        if touched.is_empty() {
            return Ok(());
        }
        let touched: Vec<DocumentId> = touched.into_iter().collect();
        let with_tables = Self::copy_sheets(&self.docs, replica, &touched)?;
        for id in touched {
            if with_tables.contains(&id) {
                held.insert(id);
            } else {
                held.remove(&id);
            }
        }
        Ok(())
    }

    /// A connection of its own that receives the change notifications.
    fn listen(&self) -> Result<postgres::Client> {
        let mut client = self.docs.db.connect_single()?;
        let channel: String = client.query_one(CHANNEL_SQL, &[])?.get(0);
        client.batch_execute(&format!("LISTEN \"{}\"", channel.replace('"', "\"\"")))?;
        Ok(client)
    }

    /// Records the applied position durably (write, sync, rename).
    fn record(&mut self, seq: i64) -> Result<()> {
        let tmp = self.state.with_extension("tmp");
        std::fs::write(&tmp, format!("{} {seq}\n", self.log_id))?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, &self.state)?;
        self.applied = seq;
        self.position.store(seq, Ordering::Release);
        Ok(())
    }

    /// Catches up, then applies new changes as they are committed until `stop` returns true.
    /// Wakes on the database's notification, and at least every `poll` in case one was missed
    /// (a notification is lost while the listening connection is broken).
    pub fn follow(&mut self, poll: Duration, mut stop: impl FnMut(&Self) -> bool) -> Result<()> {
        self.horizon_checked = false;
        let mut listener: Option<postgres::Client> = None;
        loop {
            if listener.is_none() {
                listener = self.listen().ok();
            }
            match self.catch_up() {
                Ok(_) => {}
                // The database restarts or a connection broke: wait and try again.
                Err(e) if e.is_retryable() => {
                    listener = None;
                    self.horizon_checked = false;
                }
                Err(e) => return Err(e),
            }
            if stop(self) {
                return Ok(());
            }
            let Some(client) = listener.as_mut() else {
                std::thread::sleep(poll);
                continue;
            };
            let broken = {
                let mut notifications = client.notifications();
                let woke = notifications.timeout_iter(poll).next().is_err();
                // Several commits may have notified; the next catch-up applies them all.
                woke || notifications.iter().count().is_err()
            };
            if broken || client.is_closed() {
                listener = None;
            }
        }
    }
}

/// The file that records a replica's applied position for the index in `dir`.
pub fn state_file(dir: &Path) -> PathBuf {
    dir.join("applied_change")
}

/// The applied position recorded in `path` (0 when there is none yet).
pub fn applied_position(path: &Path) -> i64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| parse_state(&text))
        .map_or(0, |(_, seq)| seq)
}

/// `<log id> <seq>`, or `<seq>` as older builds wrote it.
fn parse_state(text: &str) -> Option<(Option<String>, i64)> {
    let mut words = text.split_whitespace();
    let (log, seq) = match (words.next(), words.next(), words.next()) {
        (Some(seq), None, None) => (None, seq),
        (Some(log), Some(seq), None) => (Some(log.to_owned()), seq),
        _ => return None,
    };
    Some((log, seq.parse().ok()?))
}
