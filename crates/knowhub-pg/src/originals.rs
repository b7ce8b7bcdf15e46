//! Documents' original files in the team database, so that any replica can serve the file a
//! citation points at: replicas share nothing but the database, and the file was read from the
//! disk of the one that parsed it (an upload's receiving replica, a watched folder's host).
//!
//! A copy is the bytes of the version that was parsed, written in the transaction that stores
//! that version, in parts of [`PART_BYTES`] so that neither a write nor a read holds a large
//! file whole in one value. A reader checks on every part that the document still has the
//! content it opened, so a download never mixes two versions.

use std::io::Read;

use knowhub_store::{DocumentId, OriginalFile};

use crate::{Database, PgError, Result};

/// Size of one stored part.
pub(crate) const PART_BYTES: usize = 1 << 20;

/// Replaces the copy of `document`'s file with `bytes` (of the content `content_hash`), or
/// drops it when `bytes` is `None`.
pub(crate) fn keep(
    tx: &mut postgres::Transaction<'_>,
    document: i64,
    content_hash: &str,
    bytes: Option<&[u8]>,
) -> Result<()> {
    tx.execute(
        "DELETE FROM document_files WHERE document_id = $1",
        &[&document],
    )?;
    let Some(bytes) = bytes else {
        return Ok(());
    };
    let size = i64::try_from(bytes.len()).map_err(|_| PgError::Invalid("file size".into()))?;
    let parts_count = i32::try_from(bytes.len().div_ceil(PART_BYTES))
        .map_err(|_| PgError::Invalid("file size".into()))?;
    tx.execute(
        "INSERT INTO document_files (document_id, content_hash, size, parts)
         VALUES ($1, $2, $3, $4)",
        &[&document, &content_hash, &size, &parts_count],
    )?;
    let insert = tx
        .prepare("INSERT INTO document_file_parts (document_id, part, data) VALUES ($1, $2, $3)")?;
    for (part, data) in (0_i32..).zip(bytes.chunks(PART_BYTES)) {
        tx.execute(&insert, &[&document, &part, &data])?;
    }
    Ok(())
}

/// The kept copy of `document`'s file, when there is one of its current content.
pub(crate) fn open(db: &Database, document: DocumentId) -> Result<Option<OriginalFile>> {
    let mut client = db.client()?;
    let row = client.query_opt(
        "SELECT f.content_hash, f.size, f.parts FROM document_files f
         JOIN documents d ON d.id = f.document_id
         WHERE f.document_id = $1 AND d.content_hash = f.content_hash",
        &[&document.0],
    )?;
    let Some(row) = row else {
        return Ok(None);
    };
    let size: i64 = row.get(1);
    let parts: i32 = row.get(2);
    Ok(Some(OriginalFile {
        len: u64::try_from(size).map_err(|_| PgError::Corrupt("negative file size".into()))?,
        reader: Box::new(PartReader {
            db: db.clone(),
            document: document.0,
            content_hash: row.get(0),
            next_part: 0,
            parts,
            buffer: Vec::new(),
            at: 0,
        }),
    }))
}

/// Reads a kept file part by part, one pooled connection per part.
struct PartReader {
    db: Database,
    document: i64,
    content_hash: String,
    next_part: i32,
    parts: i32,
    buffer: Vec<u8>,
    at: usize,
}

impl PartReader {
    fn fetch(&mut self) -> std::io::Result<()> {
        let mut client = self.db.client().map_err(std::io::Error::other)?;
        let row = client
            .query_opt(
                "SELECT p.data FROM document_file_parts p
                 JOIN document_files f ON f.document_id = p.document_id
                 WHERE p.document_id = $1 AND p.part = $2 AND f.content_hash = $3",
                &[&self.document, &self.next_part, &self.content_hash],
            )
            .map_err(std::io::Error::other)?;
        let Some(row) = row else {
            return Err(std::io::Error::other(format!(
                "the file of document {} changed or was removed while it was being read",
                self.document
            )));
        };
        self.buffer = row.get(0);
        self.at = 0;
        self.next_part += 1;
        Ok(())
    }
}

impl Read for PartReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.buffer.len() {
            if self.next_part >= self.parts {
                return Ok(0);
            }
            self.fetch()?;
        }
        let n = out.len().min(self.buffer.len() - self.at);
        out[..n].copy_from_slice(&self.buffer[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
