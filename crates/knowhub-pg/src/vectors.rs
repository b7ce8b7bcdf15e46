//! Chunk embeddings in PostgreSQL with pgvector: `halfvec` rows, one HNSW index per model.
//!
//! The caller's readable documents go *into* the query (`doc_id = ANY($readable)`), and
//! pgvector's iterative index scan keeps walking the graph until `k` rows pass that filter, so
//! a filter can never be applied after a top-k that it then empties. Each model gets a partial
//! expression index (`embedding::halfvec(dim)` where `model_id = id`): models of different
//! dimensions share one table, and a model change never rewrites another model's rows.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use half::f16;
use pgvector::HalfVector;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};

use knowhub_store::backend::VectorStore;
use knowhub_store::{ChunkId, DocumentId, StoreError, StoredVector, UnembeddedChunk};
use knowhub_vector::VectorHit;

use crate::store::pg;
use crate::{Database, PgError, PgStore, PooledClient, Result};

type StoreResult<T> = knowhub_store::Result<T>;

/// A registered embedding model: its row id and dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorModel {
    pub id: i32,
    pub name: String,
    pub dim: usize,
}

/// How a search uses the HNSW index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Candidate list size of the graph walk (`hnsw.ef_search`); at least `k` is used.
    pub ef_search: usize,
    /// Most rows an iterative scan visits looking for rows that pass the filter
    /// (`hnsw.max_scan_tuples`).
    pub max_scan_tuples: usize,
}

impl Default for SearchOptions {
    fn default() -> Self {
        // 200: recall@10 1.000 at 100k chunks and 0.98 at 1M with a 50% filter, p95 ≤ 54 ms
        // (benches/pgvector.rs); 400 gains 0.001 at 1M for 1.6× the time.
        SearchOptions {
            ef_search: 200,
            max_scan_tuples: 20_000,
        }
    }
}

/// How a model's HNSW index is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexOptions {
    /// Neighbours per node (`m`).
    pub m: u32,
    /// Candidate list size while building (`ef_construction`).
    pub ef_construction: u32,
    /// Least memory for the build (`maintenance_work_mem`); a graph that does not fit is
    /// built several times slower. A larger setting of the database's own (`ALTER DATABASE …
    /// SET maintenance_work_mem`, postgresql.conf) wins, so an administrator sizes large
    /// builds where PostgreSQL is configured.
    pub build_memory_mb: u32,
}

impl Default for IndexOptions {
    /// m = 24, ef_construction = 128: at 1M chunks recall@10 is 1.000 with a 50% filter,
    /// where pgvector's defaults (16, 64) stop at 0.98 (benches/pgvector.rs). A graph that
    /// size needs about 3 GB to build in memory (1,226 s on 2 cores); 512 MB suits a few
    /// hundred thousand chunks, and the database's own setting takes over when it is larger.
    fn default() -> Self {
        IndexOptions {
            m: 24,
            ef_construction: 128,
            build_memory_mb: 512,
        }
    }
}

/// How a search finds its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Scan the readable rows and rank them all: exact.
    Exact,
    /// Walk the model's HNSW index with the filter inside the walk. The planner may still
    /// read a selective filter's rows by their document instead.
    Index,
}

/// The vector store of a team database.
#[derive(Debug, Clone)]
pub struct PgVectors {
    db: Database,
    options: SearchOptions,
    index: IndexOptions,
    sizes: Arc<Mutex<HashMap<i32, CachedSizes>>>,
}

impl PgVectors {
    pub fn new(db: &Database) -> PgVectors {
        PgVectors {
            db: db.clone(),
            options: SearchOptions::default(),
            index: IndexOptions::default(),
            sizes: Arc::default(),
        }
    }

    pub fn with_options(mut self, options: SearchOptions) -> PgVectors {
        self.options = options;
        self
    }

    pub fn with_index_options(mut self, index: IndexOptions) -> PgVectors {
        self.index = index;
        self
    }

    /// The model named `name`, registered with `dim` on first use. A registered model keeps its
    /// dimension: another dimension under the same name is an error.
    pub fn register_model(&self, name: &str, dim: usize) -> Result<VectorModel> {
        if dim == 0 || dim > 4000 {
            return Err(PgError::Invalid(format!(
                "vector dimension {dim} (1..=4000)"
            )));
        }
        let mut client = self.db.client()?;
        let dim_i32 = dim as i32;
        let row = client.query_one(
            "WITH new AS (
                 INSERT INTO vector_models (name, dim) VALUES ($1, $2)
                 ON CONFLICT (name) DO NOTHING RETURNING id, dim)
             SELECT id, dim FROM new UNION ALL SELECT id, dim FROM vector_models WHERE name = $1
             LIMIT 1",
            &[&name, &dim_i32],
        )?;
        let model = VectorModel {
            id: row.get(0),
            name: name.to_string(),
            dim: row.get::<_, i32>(1) as usize,
        };
        if model.dim != dim {
            return Err(PgError::Invalid(format!(
                "model '{name}' is registered with {} dimensions, not {dim}",
                model.dim
            )));
        }
        Ok(model)
    }

    /// Creates the model's HNSW index if it is missing. Loading rows first and indexing after
    /// is several times faster than indexing row by row; either way the index stays current.
    pub fn build_index(&self, model: &VectorModel) -> Result<()> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        // Two replicas creating the same index would collide on its name.
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&INDEX_LOCK, &model.id],
        )?;
        let configured: i64 = tx
            .query_one(
                "SELECT pg_size_bytes(current_setting('maintenance_work_mem')) / 1048576",
                &[],
            )?
            .get(0);
        let mem = i64::from(self.index.build_memory_mb.max(64)).max(configured);
        tx.batch_execute(&format!(
            "SET LOCAL maintenance_work_mem = '{mem}MB';
             CREATE INDEX IF NOT EXISTS chunk_vectors_hnsw_{id} ON chunk_vectors
                 USING hnsw ((embedding::{v}.halfvec({dim})) {v}.halfvec_ip_ops)
                 WITH (m = {m}, ef_construction = {efc}) WHERE model_id = {id};
             ANALYZE chunk_vectors",
            id = model.id,
            dim = model.dim,
            v = self.db.vector_schema(),
            m = self.index.m.clamp(2, 100),
            efc = self.index.ef_construction.clamp(4, 1000),
        ))?;
        tx.commit()?;
        Ok(())
    }

    /// Replaces every vector of document `doc_id` under `model` (an empty list removes them).
    pub fn replace_document(
        &self,
        model: &VectorModel,
        doc_id: u64,
        vectors: &[(u64, Vec<f32>)],
    ) -> Result<()> {
        let doc = db_id(doc_id)?;
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        tx.execute(
            "DELETE FROM chunk_vectors WHERE model_id = $1 AND doc_id = $2",
            &[&model.id, &doc],
        )?;
        if !vectors.is_empty() {
            let halfvec = halfvec_type(&mut tx, &self.db)?;
            copy_rows(
                &mut tx,
                &halfvec,
                model,
                vectors
                    .iter()
                    .map(|(chunk, v)| (*chunk, doc_id, v.as_slice())),
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Appends rows `(chunk_id, doc_id, vector)` in one COPY; for initial loads and migrations.
    pub fn load<'a>(
        &self,
        model: &VectorModel,
        rows: impl IntoIterator<Item = (u64, u64, &'a [f32])>,
    ) -> Result<u64> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        let halfvec = halfvec_type(&mut tx, &self.db)?;
        let n = copy_rows(&mut tx, &halfvec, model, rows)?;
        tx.commit()?;
        // The planner's row estimates decide between the document index and the HNSW index;
        // after a bulk load they are stale until autovacuum comes by.
        client.batch_execute("ANALYZE chunk_vectors")?;
        Ok(n)
    }

    /// Removes a document's vectors under every model; returns how many rows went.
    pub fn delete_document(&self, doc_id: u64) -> Result<u64> {
        let doc = db_id(doc_id)?;
        let mut client = self.db.client()?;
        Ok(client.execute("DELETE FROM chunk_vectors WHERE doc_id = $1", &[&doc])?)
    }

    /// How many vectors `model` has.
    pub fn count(&self, model: &VectorModel) -> Result<u64> {
        let mut client = self.db.client()?;
        let n: i64 = client
            .query_one(
                "SELECT count(*) FROM chunk_vectors WHERE model_id = $1",
                &[&model.id],
            )?
            .get(0);
        Ok(n as u64)
    }

    /// The `k` chunks nearest to `query` (inner product; vectors L2-normalised), best first,
    /// among the documents in `readable` (`None`: all).
    ///
    /// When the caller may read fewer than [`EXACT_BELOW_SHARE`] of the model's documents, or
    /// fewer than [`EXACT_BELOW_ROWS`] rows, an exact scan of just those rows is exact and about
    /// as fast; else the HNSW index with an iterative scan, whose recall falls under a selective
    /// filter (measured in `benches/pgvector.rs`: recall@10 ≥ 0.99 from a 10% filter up).
    pub fn search(
        &self,
        model: &VectorModel,
        query: &[f32],
        k: usize,
        readable: Option<&[u64]>,
    ) -> Result<Vec<VectorHit>> {
        let plan = match readable {
            None => Plan::Index,
            Some(docs) => {
                let (total_docs, total_rows) = self.sizes(model)?;
                let share = docs.len() as f64 / total_docs.max(1) as f64;
                let large = share >= EXACT_BELOW_SHARE
                    && share * total_rows as f64 > EXACT_BELOW_ROWS as f64;
                if large { Plan::Index } else { Plan::Exact }
            }
        };
        self.search_with(plan, model, query, k, readable)
    }

    /// How many documents and rows `model` has, counted at most once a minute.
    fn sizes(&self, model: &VectorModel) -> Result<(u64, u64)> {
        let now = Instant::now();
        if let Ok(cache) = self.sizes.lock()
            && let Some((at, sizes)) = cache.get(&model.id)
            && now.duration_since(*at) < SIZES_TTL
        {
            return Ok(*sizes);
        }
        let mut client = self.db.client()?;
        let row = client.query_one(
            "SELECT count(DISTINCT doc_id), count(*) FROM chunk_vectors WHERE model_id = $1",
            &[&model.id],
        )?;
        let sizes = (row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64);
        if let Ok(mut cache) = self.sizes.lock() {
            cache.insert(model.id, (now, sizes));
        }
        Ok(sizes)
    }

    /// As [`PgVectors::search`], with the plan given: the exact scan is the reference for
    /// recall, the index plan is what the benchmark measures against it.
    pub fn search_with(
        &self,
        plan: Plan,
        model: &VectorModel,
        query: &[f32],
        k: usize,
        readable: Option<&[u64]>,
    ) -> Result<Vec<VectorHit>> {
        let use_index = plan == Plan::Index;
        let query = half_vector(model, query)?;
        if k == 0 || readable.is_some_and(|r| r.is_empty()) {
            return Ok(Vec::new());
        }
        // A relaxed-order scan yields rows roughly by distance, and under a selective filter the
        // first `k` that pass are not the nearest: read as many as the walk's candidate list
        // and keep the best `k`.
        let ef_search = self.options.ef_search.clamp(k.min(1000), 1000);
        let fetch = if use_index { k.max(ef_search) } else { k };
        let limit = i64::try_from(fetch).map_err(|_| PgError::Invalid(format!("k = {k}")))?;
        let v = self.db.vector_schema();
        let readable: Option<Vec<i64>> = readable
            .map(|docs| docs.iter().map(|&d| db_id(d)).collect::<Result<_>>())
            .transpose()?;
        // The index matches only this exact expression; the exact scan orders by another one.
        let distance = if use_index {
            format!("embedding::{v}.halfvec({}) OPERATOR({v}.<#>) $1", model.dim)
        } else {
            format!("embedding OPERATOR({v}.<#>) $1")
        };
        let mut sql = format!(
            "SELECT chunk_id, doc_id, ({distance})::real FROM chunk_vectors WHERE model_id = {}",
            model.id
        );
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&query, &limit];
        if let Some(docs) = &readable {
            sql.push_str(" AND doc_id = ANY($3)");
            params.push(docs);
        }
        let _ = write!(sql, " ORDER BY {distance} LIMIT $2");

        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        tx.batch_execute(&format!(
            "SET LOCAL hnsw.ef_search = {ef_search}; SET LOCAL hnsw.max_scan_tuples = {};
             SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL enable_seqscan = {}",
            self.options.max_scan_tuples.max(1),
            // An exact scan of a filtered set reads the filtered rows by their document, not
            // the whole table.
            if !use_index && readable.is_some() {
                "off"
            } else {
                "on"
            }
        ))?;
        let rows = tx.query(&sql, &params)?;
        tx.commit()?;
        let mut hits = rows
            .iter()
            .map(|row| VectorHit {
                chunk_id: row.get::<_, i64>(0) as u64,
                doc_id: row.get::<_, i64>(1) as u64,
                // `<#>` is the negated inner product.
                score: -row.get::<_, f32>(2),
            })
            .collect::<Vec<_>>();
        // Relaxed-order iterative scans may return rows slightly out of order.
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.chunk_id.cmp(&b.chunk_id))
        });
        hits.truncate(k);
        Ok(hits)
    }
}

/// Below this share of readable documents a search scans the readable rows exactly.
pub const EXACT_BELOW_SHARE: f64 = 0.10;

/// Up to this many readable rows a search scans them exactly (about 1 µs a row at 384-d).
pub const EXACT_BELOW_ROWS: u64 = 20_000;

/// When a model's (documents, rows) were counted, and the counts.
type CachedSizes = (Instant, (u64, u64));

/// How long a model's sizes (for the plan choice) are reused.
const SIZES_TTL: Duration = Duration::from_secs(60);

/// Key of the advisory lock under which a model's index is created ("vecindex").
const INDEX_LOCK: i32 = 0x7665_6369;

fn db_id(id: u64) -> Result<i64> {
    i64::try_from(id).map_err(|_| PgError::Invalid(format!("id {id} exceeds BIGINT")))
}

fn half_vector(model: &VectorModel, v: &[f32]) -> Result<HalfVector> {
    if v.len() != model.dim {
        return Err(PgError::Invalid(format!(
            "vector has {} dimensions, model '{}' has {}",
            v.len(),
            model.name,
            model.dim
        )));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(PgError::Invalid("vector contains NaN or infinity".into()));
    }
    Ok(HalfVector::from(
        v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>(),
    ))
}

/// The type of `halfvec`, an extension type whose OID differs per database.
pub(crate) fn halfvec_type(tx: &mut postgres::Transaction<'_>, db: &Database) -> Result<Type> {
    let stmt = tx.prepare(&format!("SELECT $1::{}.halfvec", db.vector_schema()))?;
    stmt.params()
        .first()
        .cloned()
        .ok_or_else(|| PgError::Corrupt("halfvec type not found".into()))
}

fn copy_rows<'a>(
    tx: &mut postgres::Transaction<'_>,
    halfvec: &Type,
    model: &VectorModel,
    rows: impl IntoIterator<Item = (u64, u64, &'a [f32])>,
) -> Result<u64> {
    let sink =
        tx.copy_in("COPY chunk_vectors (chunk_id, model_id, doc_id, embedding) FROM STDIN BINARY")?;
    let types = [Type::INT8, Type::INT4, Type::INT8, halfvec.clone()];
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    for (chunk, doc, vector) in rows {
        let (chunk, doc) = (db_id(chunk)?, db_id(doc)?);
        let v = half_vector(model, vector)?;
        writer.write(&[&chunk, &model.id, &doc, &v])?;
    }
    Ok(writer.finish()?)
}

// ----- the engine's view: VectorStore ---------------------------------------------------------

/// A registered model by name (`None`: nothing was ever stored for it).
fn model_named(client: &mut PooledClient, name: &str) -> StoreResult<Option<VectorModel>> {
    let row = client
        .query_opt(
            "SELECT id, dim FROM vector_models WHERE name = $1",
            &[&name],
        )
        .map_err(pg)?;
    Ok(row.map(|r| VectorModel {
        id: r.get(0),
        name: name.to_owned(),
        dim: r.get::<_, i32>(1) as usize,
    }))
}

fn stored_vectors(rows: &[postgres::Row]) -> Vec<StoredVector> {
    rows.iter()
        .map(|r| StoredVector {
            chunk_id: ChunkId(r.get(0)),
            document_id: DocumentId(r.get(1)),
            vector: r
                .get::<_, HalfVector>(2)
                .to_vec()
                .into_iter()
                .map(f16::to_f32)
                .collect(),
        })
        .collect()
}

impl VectorStore for PgStore {
    /// Probes the vector table's primary key per chunk in (document, position) order, and
    /// stops at `limit`: the model's id is resolved first so the probe is an index lookup.
    fn unembedded_chunks(&self, model: &str, limit: usize) -> StoreResult<Vec<UnembeddedChunk>> {
        let mut client = self.db.client()?;
        let model_id = model_named(&mut client, model)?.map_or(-1, |m| m.id);
        let rows = client
            .query(
                "SELECT c.id, c.document_id, COALESCE(d.title, ''), c.heading_path, c.text
                 FROM chunks c JOIN documents d ON d.id = c.document_id
                 WHERE NOT EXISTS (
                     SELECT 1 FROM chunk_vectors v WHERE v.model_id = $1 AND v.chunk_id = c.id)
                 ORDER BY c.document_id, c.ordinal LIMIT $2",
                &[&model_id, &(limit.min(i64::MAX as usize) as i64)],
            )
            .map_err(pg)?;
        rows.iter()
            .map(|r| {
                let heading: String = r.get(3);
                Ok(UnembeddedChunk {
                    chunk_id: ChunkId(r.get(0)),
                    document_id: DocumentId(r.get(1)),
                    title: r.get(2),
                    heading_path: serde_json::from_str(&heading)
                        .map_err(|e| StoreError::Corrupt(format!("heading path: {e}")))?,
                    text: r.get(4),
                })
            })
            .collect()
    }

    fn unembedded_count(&self, model: &str) -> StoreResult<u64> {
        let mut client = self.db.client()?;
        let Some(m) = model_named(&mut client, model)? else {
            return Ok(self.documents.chunk_count()?);
        };
        let n: i64 = client
            .query_one(
                "SELECT (SELECT count(*) FROM chunks) - (SELECT count(*) FROM chunk_vectors v
                     WHERE v.model_id = $1 AND EXISTS (SELECT 1 FROM chunks c WHERE c.id = v.chunk_id))",
                &[&m.id],
            )
            .map_err(pg)?
            .get(0);
        Ok(n.max(0) as u64)
    }

    fn vector_count(&self, model: &str) -> StoreResult<u64> {
        let mut client = self.db.client()?;
        match model_named(&mut client, model)? {
            Some(m) => Ok(self.vectors.count(&m)?),
            None => Ok(0),
        }
    }

    fn vector_count_for(&self, model: &str, docs: &[DocumentId]) -> StoreResult<u64> {
        let mut client = self.db.client()?;
        let Some(m) = model_named(&mut client, model)? else {
            return Ok(0);
        };
        let ids: Vec<i64> = docs.iter().map(|d| d.0).collect();
        let n: i64 = client
            .query_one(
                "SELECT count(*) FROM chunk_vectors WHERE model_id = $1 AND doc_id = ANY($2)",
                &[&m.id, &ids],
            )
            .map_err(pg)?
            .get(0);
        Ok(n as u64)
    }

    /// Streams rows a document at a time (a portal of 2,000 rows per fetch), so a replica's
    /// start-up never holds every vector as rows at once.
    fn for_each_vector(
        &self,
        model: &str,
        f: &mut dyn FnMut(StoredVector) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let mut client = self.db.client()?;
        let Some(m) = model_named(&mut client, model)? else {
            return Ok(());
        };
        let mut tx = client.transaction().map_err(pg)?;
        let portal = tx
            .bind(
                "SELECT chunk_id, doc_id, embedding FROM chunk_vectors WHERE model_id = $1
                 ORDER BY doc_id, chunk_id",
                &[&m.id],
            )
            .map_err(pg)?;
        loop {
            let rows = tx.query_portal(&portal, 2_000).map_err(pg)?;
            if rows.is_empty() {
                break;
            }
            for v in stored_vectors(&rows) {
                f(v)?;
            }
        }
        tx.commit().map_err(pg)?;
        Ok(())
    }

    fn document_vectors(&self, model: &str, id: DocumentId) -> StoreResult<Vec<StoredVector>> {
        let mut client = self.db.client()?;
        let Some(m) = model_named(&mut client, model)? else {
            return Ok(Vec::new());
        };
        let rows = client
            .query(
                "SELECT chunk_id, doc_id, embedding FROM chunk_vectors
                 WHERE model_id = $1 AND doc_id = $2 ORDER BY chunk_id",
                &[&m.id, &id.0],
            )
            .map_err(pg)?;
        Ok(stored_vectors(&rows))
    }

    fn orphan_vectors(&self) -> StoreResult<u64> {
        let mut client = self.db.client()?;
        let n: i64 = client
            .query_one(
                "SELECT count(*) FROM chunk_vectors v LEFT JOIN chunks c ON c.id = v.chunk_id
                 WHERE c.id IS NULL OR c.document_id != v.doc_id",
                &[],
            )
            .map_err(pg)?
            .get(0);
        Ok(n as u64)
    }

    /// Stores vectors (replacing older ones of the same chunks), skipping chunks deleted
    /// meanwhile, and logs each document whose vectors changed so other replicas reload them.
    fn put_vectors(&mut self, model: &str, vectors: &[StoredVector]) -> StoreResult<usize> {
        let Some(first) = vectors.first() else {
            return Ok(0);
        };
        let m = self.vectors.register_model(model, first.vector.len())?;
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        let insert = tx
            .prepare(
                "INSERT INTO chunk_vectors (chunk_id, model_id, doc_id, embedding)
                 SELECT $1, $2, $3, $4 WHERE EXISTS (
                     SELECT 1 FROM chunks WHERE id = $1 AND document_id = $3)
                 ON CONFLICT (model_id, chunk_id)
                 DO UPDATE SET doc_id = excluded.doc_id, embedding = excluded.embedding",
            )
            .map_err(pg)?;
        let mut stored = 0;
        let mut docs = Vec::new();
        for v in vectors {
            let half = half_vector(&m, &v.vector)?;
            let n = tx
                .execute(&insert, &[&v.chunk_id.0, &m.id, &v.document_id.0, &half])
                .map_err(pg)?;
            if n > 0 && docs.last() != Some(&v.document_id.0) {
                docs.push(v.document_id.0);
            }
            stored += n as usize;
        }
        docs.sort_unstable();
        docs.dedup();
        for d in docs {
            crate::documents::log_change(&mut tx, d)?;
        }
        tx.commit().map_err(pg)?;
        Ok(stored)
    }

    fn delete_vectors_except(&mut self, model: &str) -> StoreResult<usize> {
        let mut client = self.db.client()?;
        let n = client
            .execute(
                "DELETE FROM chunk_vectors WHERE model_id IN (
                     SELECT id FROM vector_models WHERE name <> $1)",
                &[&model],
            )
            .map_err(pg)?;
        Ok(n as usize)
    }
}
