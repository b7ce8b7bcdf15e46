//! Chunk embeddings, persisted next to their chunks.
//!
//! A vector row belongs to a chunk (deleted with it, by cascade) and names the model that made
//! it, so a model change is noticed and only then are chunks re-embedded. Vectors are stored as
//! little-endian f16 (the in-memory index keeps f16 for exact re-scoring, so nothing is lost).

use half::f16;
use rusqlite::params;

use crate::{ChunkId, DocumentId, Result, Store, StoreError, heading_from_json};

/// A chunk that has no vector for the current model yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnembeddedChunk {
    pub chunk_id: ChunkId,
    pub document_id: DocumentId,
    pub title: String,
    pub heading_path: Vec<String>,
    pub text: String,
}

/// One stored vector.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVector {
    pub chunk_id: ChunkId,
    pub document_id: DocumentId,
    pub vector: Vec<f32>,
}

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| f16::from_f32(*x).to_le_bytes())
        .collect()
}

fn decode(bytes: &[u8], dim: usize) -> Option<Vec<f32>> {
    (bytes.len() == dim * 2).then(|| {
        bytes
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect()
    })
}

impl Store {
    /// Up to `limit` chunks without a vector from `model`, a whole document at a time where
    /// possible (ordered by document, then position), so an interrupted run resumes cleanly.
    pub fn unembedded_chunks(&self, model: &str, limit: usize) -> Result<Vec<UnembeddedChunk>> {
        let mut stmt = self.conn.prepare(
            "SELECT c.id, c.document_id, COALESCE(d.title, ''), c.heading_path, c.text
             FROM chunks c JOIN documents d ON d.id = c.document_id
             LEFT JOIN chunk_vectors v ON v.chunk_id = c.id AND v.model = ?1
             WHERE v.chunk_id IS NULL
             ORDER BY c.document_id, c.ordinal LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![model, limit as i64], |r| {
            let heading: String = r.get(3)?;
            Ok(UnembeddedChunk {
                chunk_id: ChunkId(r.get(0)?),
                document_id: DocumentId(r.get(1)?),
                title: r.get(2)?,
                heading_path: heading_from_json(&heading),
                text: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Number of chunks without a vector from `model`.
    pub fn unembedded_count(&self, model: &str) -> Result<u64> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM chunks c
             LEFT JOIN chunk_vectors v ON v.chunk_id = c.id AND v.model = ?1
             WHERE v.chunk_id IS NULL",
            params![model],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    /// Stores vectors made by `model`, replacing older ones of the same chunks. Chunks that
    /// were deleted meanwhile (a newer version of the document arrived) are skipped; returns
    /// how many were stored.
    pub fn put_vectors(&mut self, model: &str, vectors: &[StoredVector]) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let mut stored = 0;
        {
            let mut stmt = tx.prepare(
                "INSERT OR REPLACE INTO chunk_vectors (chunk_id, document_id, model, dim, vector)
                 SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)",
            )?;
            for v in vectors {
                stored += stmt.execute(params![
                    v.chunk_id.0,
                    v.document_id.0,
                    model,
                    v.vector.len() as i64,
                    encode(&v.vector)
                ])?;
            }
        }
        tx.commit()?;
        Ok(stored)
    }

    /// Deletes every vector not made by `model` (after a model change); returns how many.
    pub fn delete_vectors_except(&mut self, model: &str) -> Result<usize> {
        Ok(self.conn.execute(
            "DELETE FROM chunk_vectors WHERE model <> ?1",
            params![model],
        )?)
    }

    /// Number of vectors stored for `model`.
    pub fn vector_count(&self, model: &str) -> Result<u64> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM chunk_vectors WHERE model = ?1",
            params![model],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    /// How many chunks of the given documents have a vector of `model`.
    pub fn vector_count_for(&self, model: &str, docs: &[crate::DocumentId]) -> Result<u64> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT COUNT(*) FROM chunk_vectors WHERE model = ?1 AND document_id = ?2",
        )?;
        let mut n = 0u64;
        for d in docs {
            n += stmt.query_row(params![model, d.0], |r| r.get::<_, i64>(0))? as u64;
        }
        Ok(n)
    }

    /// Calls `f` with every vector of `model`, in document order (for loading the in-memory
    /// index at start-up without holding all rows at once).
    pub fn for_each_vector(
        &self,
        model: &str,
        mut f: impl FnMut(StoredVector) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT chunk_id, document_id, dim, vector FROM chunk_vectors
             WHERE model = ?1 ORDER BY document_id, chunk_id",
        )?;
        let mut rows = stmt.query(params![model])?;
        while let Some(r) = rows.next()? {
            let chunk_id = ChunkId(r.get(0)?);
            let dim: i64 = r.get(2)?;
            let bytes: Vec<u8> = r.get(3)?;
            let vector = decode(&bytes, dim.max(0) as usize).ok_or_else(|| {
                StoreError::Corrupt(format!("vector of chunk {} has a wrong length", chunk_id.0))
            })?;
            f(StoredVector {
                chunk_id,
                document_id: DocumentId(r.get(1)?),
                vector,
            })?;
        }
        Ok(())
    }

    /// The vectors of one document's chunks made by `model`.
    pub fn document_vectors(&self, model: &str, id: DocumentId) -> Result<Vec<StoredVector>> {
        let mut stmt = self.conn.prepare(
            "SELECT chunk_id, dim, vector FROM chunk_vectors
             WHERE model = ?1 AND document_id = ?2 ORDER BY chunk_id",
        )?;
        let rows = stmt.query_map(params![model, id.0], |r| {
            Ok((
                ChunkId(r.get(0)?),
                r.get::<_, i64>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (chunk_id, dim, bytes) = row?;
            let vector = decode(&bytes, dim.max(0) as usize).ok_or_else(|| {
                StoreError::Corrupt(format!("vector of chunk {} has a wrong length", chunk_id.0))
            })?;
            out.push(StoredVector {
                chunk_id,
                document_id: id,
                vector,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trip_is_close() {
        let v = [0.5f32, -0.25, 0.123_456, 0.0];
        let back = decode(&encode(&v), 4).unwrap();
        for (a, b) in v.iter().zip(&back) {
            assert!((a - b).abs() < 1e-3);
        }
        assert_eq!(decode(&encode(&v), 3), None);
    }
}
