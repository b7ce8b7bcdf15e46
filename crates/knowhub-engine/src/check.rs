//! `knowhub check`: proves that the store, both indexes and the folders agree exactly.
//!
//! Used by the crash test after every kill-and-restart and by users who want to know. Every
//! finding is a sentence in `problems`; an empty list means consistent.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use serde::Serialize;

use crate::ingest::has_supported_extension;
use crate::rules::SourceRules;
use crate::{Engine, RequestContext, Result};

/// The most findings listed per kind (counts are exact).
const LIST_AT_MOST: usize = 20;

/// What [`Engine::check`] found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    pub documents: u64,
    pub chunks: u64,
    pub indexed_chunks: u64,
    pub vectors: u64,
    pub folders: usize,
    pub files_on_disk: usize,
    /// Jobs queued or running (not a problem: work still to do).
    pub jobs_pending: u64,
    /// Human-readable findings; empty = store, indexes and folders agree.
    pub problems: Vec<String>,
}

impl CheckReport {
    pub fn is_consistent(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Engine {
    /// Checks, as an administrator: every document's chunks are exactly its ordinals; the
    /// full-text index holds exactly the stored chunks per document; no vector lacks its chunk
    /// and the in-memory vector index matches the stored vectors; no crash markers are left;
    /// and each folder source holds exactly the documents its folder has (with `deep`, the
    /// stored content hash of each is compared with the file's).
    pub fn check(&self, ctx: &RequestContext, deep: bool) -> Result<CheckReport> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "check the knowledge base")?;
        let mut report = CheckReport::default();
        let mut problems = Vec::new();
        // Team mode: compare with the index once it has applied what is committed now.
        if let Some(behind) = self.index_behind_log()?
            && behind > 0
        {
            problems.push(format!(
                "full-text index: {behind} change(s) behind the team database's log"
            ));
        }
        let (stored_counts, docs, mismatches, orphans, pending, tombstones, counts, sources) = {
            let store = self.store();
            (
                store.chunk_counts()?,
                store.documents(None)?,
                store.chunk_mismatches()?,
                store.orphan_vectors()?,
                store.pending_index_documents()?,
                store.tombstones()?,
                store.queue_counts()?,
                store.sources()?,
            )
        };
        report.documents = docs.len() as u64;
        report.chunks = stored_counts.values().sum();
        report.jobs_pending = counts.queued + counts.running;
        for m in mismatches.iter().take(LIST_AT_MOST) {
            problems.push(format!(
                "document {}: chunk_count {} but {} chunk rows (max ordinal {:?})",
                m.document.0, m.chunk_count, m.rows, m.max_ordinal
            ));
        }
        if !pending.is_empty() || !tombstones.is_empty() {
            problems.push(format!(
                "{} document(s) wait for an index commit and {} removal(s) for an index delete",
                pending.len(),
                tombstones.len()
            ));
        }
        // Full-text index == store, per document.
        let indexed = self.index.doc_chunk_counts()?;
        report.indexed_chunks = indexed.values().sum();
        diff_counts("full-text index", &stored_counts, &indexed, &mut problems);
        // Vectors.
        if orphans > 0 {
            problems.push(format!("{orphans} stored vector(s) without their chunk"));
        }
        if let (Some(sem), Some(model)) = (&self.semantic, self.embedder_id()) {
            let stored = self.store().vector_count(model)?;
            let loaded = sem.vectors().len() as u64;
            report.vectors = stored;
            // In team mode vectors are searched in the database, not loaded.
            if self.team_vectors.is_none() && stored != loaded {
                problems.push(format!(
                    "{stored} stored vector(s) but {loaded} in the in-memory vector index"
                ));
            }
        }
        // Team mode: this replica's copy of the sheets == the database's sheets.
        if self.config.team.is_some() {
            let stored: BTreeSet<String> = self
                .store()
                .all_sheet_tables()?
                .into_iter()
                .map(|(_, t)| t.sql_name)
                .collect();
            let held = knowhub_store::SheetReplica::held(&self.paths.tables)?;
            for (name, what) in stored
                .difference(&held)
                .map(|n| (n, "missing from"))
                .chain(held.difference(&stored).map(|n| (n, "left in")))
                .take(LIST_AT_MOST)
            {
                problems.push(format!(
                    "spreadsheet table {name}: {what} this replica's copy"
                ));
            }
        }
        // Folders == documents.
        for src in sources.iter().filter(|s| s.kind == "folder") {
            let Some(root) = src.root_path.as_deref() else {
                continue;
            };
            let root_path = Path::new(root);
            if self.fs.metadata(root_path).is_err() {
                continue; // a folder that is gone entirely is reported by `status`, not here
            }
            report.folders += 1;
            let matcher = SourceRules::from_json(&src.rules).compile(root_path)?;
            let on_disk: BTreeSet<String> = matcher
                .walk(self.fs.as_ref())
                .into_iter()
                .flatten()
                .filter(|p| has_supported_extension(p))
                .map(|p| p.display().to_string())
                .collect();
            report.files_on_disk += on_disk.len();
            let stored: Vec<&crate::DocumentRecord> = docs
                .iter()
                // Attachments have no file of their own.
                .filter(|d| {
                    d.parent.is_none()
                        && Path::new(&d.path).starts_with(root_path)
                        && d.source == src.id
                })
                .collect();
            let stored_paths: HashSet<&str> = stored.iter().map(|d| d.path.as_str()).collect();
            let missing: Vec<&String> = on_disk
                .iter()
                .filter(|p| !stored_paths.contains(p.as_str()))
                // Files without an extension are only documents if their bytes say so.
                .filter(|p| Path::new(p).extension().is_some())
                .collect();
            let extra: Vec<&str> = stored
                .iter()
                .map(|d| d.path.as_str())
                .filter(|p| !on_disk.contains(*p))
                .collect();
            list(&mut problems, "file(s) not stored", root, &missing);
            list(
                &mut problems,
                "stored document(s) without their file",
                root,
                &extra,
            );
            if deep {
                let mut stale = Vec::new();
                for d in &stored {
                    let (Some(hash), true) = (&d.content_hash, d.error_code.is_none()) else {
                        continue;
                    };
                    if let Ok(bytes) = self.fs.read(Path::new(&d.path))
                        && blake3::hash(&bytes).to_hex().as_str() != hash
                    {
                        stale.push(d.path.clone());
                    }
                }
                list(
                    &mut problems,
                    "document(s) older than their file",
                    root,
                    &stale,
                );
            }
        }
        report.problems = problems;
        Ok(report)
    }
}

fn diff_counts(
    what: &str,
    want: &BTreeMap<u64, u64>,
    got: &BTreeMap<u64, u64>,
    problems: &mut Vec<String>,
) {
    let mut listed = 0;
    for (doc, n) in want {
        let have = got.get(doc).copied().unwrap_or(0);
        if have != *n && listed < LIST_AT_MOST {
            problems.push(format!(
                "{what}: document {doc} has {have} chunk(s), the store {n}"
            ));
            listed += 1;
        }
    }
    for (doc, n) in got {
        if !want.contains_key(doc) && listed < LIST_AT_MOST {
            problems.push(format!(
                "{what}: {n} chunk(s) of document {doc}, which the store does not have"
            ));
            listed += 1;
        }
    }
}

fn list<T: AsRef<str>>(problems: &mut Vec<String>, what: &str, root: &str, items: &[T]) {
    if items.is_empty() {
        return;
    }
    let shown: Vec<&str> = items.iter().take(5).map(AsRef::as_ref).collect();
    problems.push(format!(
        "{root}: {} {what}: {}{}",
        items.len(),
        shown.join(", "),
        if items.len() > shown.len() {
            ", …"
        } else {
            ""
        }
    ));
}
