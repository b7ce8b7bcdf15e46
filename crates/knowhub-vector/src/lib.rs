//! Dense vector search for KnowHub: exact top-k with the caller's document filter applied
//! *inside* the scan.
//!
//! Filtering a finished top-k loses recall (the allowed passages may all rank below k) and
//! leaks counts, so the filter is evaluated for every candidate before it competes. The scan
//! runs over int8 codes (symmetric, one scale per vector: 4× smaller than f32, integer dot
//! products that vectorise well); the best `k × oversample` candidates are then re-scored
//! exactly against f16 copies, so results match an exact f32 search up to f16 rounding.
//!
//! ```
//! use knowhub_vector::FlatIndex;
//!
//! let mut index = FlatIndex::new(3);
//! index.upsert_document(7, &[(70, vec![1.0, 0.0, 0.0]), (71, vec![0.0, 1.0, 0.0])])?;
//! index.upsert_document(8, &[(80, vec![0.9, 0.1, 0.0])])?;
//! let hits = index.search(&[1.0, 0.0, 0.0], 1, Some(&|doc| doc != 7))?;
//! assert_eq!(hits[0].chunk_id, 80); // doc 7 is filtered out inside the scan
//! # Ok::<(), knowhub_vector::VectorError>(())
//! ```

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use half::f16;
use thiserror::Error;

/// Errors from the vector index.
#[derive(Debug, Error, PartialEq)]
pub enum VectorError {
    #[error("vector has {got} dimensions, the index has {want}")]
    Dimension { want: usize, got: usize },
    #[error("vector contains NaN or infinity")]
    NotFinite,
}

pub type Result<T, E = VectorError> = std::result::Result<T, E>;

/// One result: a chunk, its document, and the exact inner product with the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorHit {
    pub chunk_id: u64,
    pub doc_id: u64,
    pub score: f32,
}

/// How many candidates per requested hit the int8 scan keeps for exact re-scoring.
const OVERSAMPLE: usize = 4;
/// Re-scoring always looks at least this many candidates (small k).
const MIN_CANDIDATES: usize = 64;

/// An in-memory flat index: int8 codes for scanning, f16 copies for exact re-scoring.
///
/// Vectors are expected L2-normalised (scores are inner products = cosine similarity).
/// Deleting marks slots free; they are reused by later inserts.
#[derive(Debug, Clone)]
pub struct FlatIndex {
    dim: usize,
    chunk_ids: Vec<u64>,
    doc_ids: Vec<u64>,
    live: Vec<bool>,
    codes: Vec<i8>,
    scales: Vec<f32>,
    exact: Vec<f16>,
    slots_by_doc: HashMap<u64, Vec<usize>>,
    free: Vec<usize>,
}

impl FlatIndex {
    pub fn new(dim: usize) -> FlatIndex {
        FlatIndex {
            dim,
            chunk_ids: Vec::new(),
            doc_ids: Vec::new(),
            live: Vec::new(),
            codes: Vec::new(),
            scales: Vec::new(),
            exact: Vec::new(),
            slots_by_doc: HashMap::new(),
            free: Vec::new(),
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of live vectors.
    pub fn len(&self) -> usize {
        self.live.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the vector data (codes, scales, f16 copies, ids).
    pub fn memory_bytes(&self) -> usize {
        self.codes.len() + self.scales.len() * 4 + self.exact.len() * 2 + self.chunk_ids.len() * 17
    }

    /// Replaces every vector of `doc_id` (idempotent: replaying it leaves the same state).
    pub fn upsert_document(&mut self, doc_id: u64, vectors: &[(u64, Vec<f32>)]) -> Result<()> {
        for (_, v) in vectors {
            self.check(v)?;
        }
        self.delete_document(doc_id);
        let mut slots = Vec::with_capacity(vectors.len());
        for (chunk_id, v) in vectors {
            slots.push(self.insert(*chunk_id, doc_id, v));
        }
        if !slots.is_empty() {
            self.slots_by_doc.insert(doc_id, slots);
        }
        Ok(())
    }

    /// Removes every vector of `doc_id`.
    pub fn delete_document(&mut self, doc_id: u64) {
        if let Some(slots) = self.slots_by_doc.remove(&doc_id) {
            for slot in slots {
                self.live[slot] = false;
                self.free.push(slot);
            }
        }
    }

    /// Whether any vector of `doc_id` is present.
    pub fn contains_document(&self, doc_id: u64) -> bool {
        self.slots_by_doc.contains_key(&doc_id)
    }

    fn check(&self, v: &[f32]) -> Result<()> {
        if v.len() != self.dim {
            return Err(VectorError::Dimension {
                want: self.dim,
                got: v.len(),
            });
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(VectorError::NotFinite);
        }
        Ok(())
    }

    fn insert(&mut self, chunk_id: u64, doc_id: u64, v: &[f32]) -> usize {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        let code = v
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8);
        let exact = v.iter().map(|&x| f16::from_f32(x));
        let d = self.dim;
        match self.free.pop() {
            Some(slot) => {
                self.chunk_ids[slot] = chunk_id;
                self.doc_ids[slot] = doc_id;
                self.live[slot] = true;
                self.scales[slot] = scale;
                for (dst, c) in self.codes[slot * d..(slot + 1) * d].iter_mut().zip(code) {
                    *dst = c;
                }
                for (dst, e) in self.exact[slot * d..(slot + 1) * d].iter_mut().zip(exact) {
                    *dst = e;
                }
                slot
            }
            None => {
                self.chunk_ids.push(chunk_id);
                self.doc_ids.push(doc_id);
                self.live.push(true);
                self.scales.push(scale);
                self.codes.extend(code);
                self.exact.extend(exact);
                self.live.len() - 1
            }
        }
    }

    /// The `k` chunks with the highest inner product with `query`, best first, considering
    /// only documents for which `filter` returns true (checked before scoring).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<&(dyn Fn(u64) -> bool + Sync)>,
    ) -> Result<Vec<VectorHit>> {
        self.check(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let max = query.iter().fold(0f32, |m, x| m.max(x.abs()));
        let q_scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        let q_codes: Vec<i8> = query
            .iter()
            .map(|x| (x / q_scale).round().clamp(-127.0, 127.0) as i8)
            .collect();
        let want = (k * OVERSAMPLE).max(MIN_CANDIDATES);
        let n = self.live.len();
        let threads = std::thread::available_parallelism()
            .map(|t| t.get())
            .unwrap_or(1)
            .min(8);
        // Small indexes are not worth a thread start.
        let parts = if n < 50_000 { 1 } else { threads };
        let per = n.div_ceil(parts);
        let mut candidates: Vec<Candidate> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..parts)
                .map(|p| {
                    let (start, end) = (p * per, ((p + 1) * per).min(n));
                    let q = &q_codes;
                    s.spawn(move || self.scan(q, start, end, want, filter))
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        // Exact re-scoring of the survivors.
        for c in &mut candidates {
            let row = &self.exact[c.slot * self.dim..(c.slot + 1) * self.dim];
            c.score = row.iter().zip(query).map(|(a, b)| a.to_f32() * b).sum();
        }
        candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.slot.cmp(&b.slot)));
        Ok(candidates
            .into_iter()
            .take(k)
            .map(|c| VectorHit {
                chunk_id: self.chunk_ids[c.slot],
                doc_id: self.doc_ids[c.slot],
                score: c.score,
            })
            .collect())
    }

    fn scan(
        &self,
        q: &[i8],
        start: usize,
        end: usize,
        want: usize,
        filter: Option<&(dyn Fn(u64) -> bool + Sync)>,
    ) -> Vec<Candidate> {
        let d = self.dim;
        let mut heap: BinaryHeap<Candidate> = BinaryHeap::with_capacity(want + 1);
        // A document's vectors sit in consecutive slots (inserted together), so the filter's
        // answer is remembered for the current run of one document: one call per document
        // instead of one per vector.
        let mut last: Option<(u64, bool)> = None;
        for slot in start..end {
            if !self.live[slot] {
                continue;
            }
            if let Some(f) = filter {
                let doc = self.doc_ids[slot];
                let allowed = match last {
                    Some((d, a)) if d == doc => a,
                    _ => {
                        let a = f(doc);
                        last = Some((doc, a));
                        a
                    }
                };
                if !allowed {
                    continue;
                }
            }
            let row = &self.codes[slot * d..(slot + 1) * d];
            let dot: i32 = row
                .iter()
                .zip(q)
                .map(|(&a, &b)| i32::from(a) * i32::from(b))
                .sum();
            let score = dot as f32 * self.scales[slot];
            if heap.len() < want {
                heap.push(Candidate { score, slot });
            } else if heap.peek().is_some_and(|worst| score > worst.score) {
                heap.pop();
                heap.push(Candidate { score, slot });
            }
        }
        heap.into_vec()
    }
}

/// Min-heap entry (the heap's top is the worst kept candidate).
#[derive(Debug, Clone, Copy, Default)]
struct Candidate {
    score: f32,
    slot: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the smallest score on top.
        other
            .score
            .total_cmp(&self.score)
            .then(self.slot.cmp(&other.slot))
    }
}

/// Deterministic pseudo-random unit vectors (xorshift) for tests and benchmarks, so neither
/// needs an RNG crate and runs are repeatable.
#[doc(hidden)]
pub fn synthetic_unit_vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed.max(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
    };
    (0..n)
        .map(|_| {
            let v: Vec<f32> = (0..dim).map(|_| next()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests;
