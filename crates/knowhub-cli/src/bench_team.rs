//! `knowhub bench team`: `/api/v1/search` over HTTP under load, as a USER whose ACLs allow about
//! half of the documents — local mode (one SQLite engine) beside team mode (PostgreSQL with
//! pgvector) with one and with two replicas, on the same generated corpus. Passage vectors are
//! synthetic by default (embedding 100k passages for real takes over an hour on 2 cores) or
//! real (`--passage-vectors real`, embedded once per run and kept in a cache file); queries are
//! embedded for real by every replica, as in production.

use std::collections::HashMap;
use std::io::{BufReader, Read, Seek, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use knowhub_engine::authz::{Role, UserId};
use knowhub_engine::team::TeamConfig;
use knowhub_engine::{
    DEFAULT_EMBEDDER, Embedder, Engine, EngineConfig, Hub, IngestOptions, ModelSet, ParserBackend,
    RealFs, dev_context,
};
use knowhub_server::ServerState;

use crate::bench::{
    CHUNKS_PER_FILE, SyntheticPassages, Vocab, WARMUP_QUERIES, load_avg, make_queries, open_model,
    percentile, thousands, write_corpus,
};

#[derive(Debug, clap::Args)]
pub(crate) struct TeamBenchArgs {
    /// Chunks in the generated corpus.
    #[arg(long, default_value_t = 100_000)]
    chunks: usize,
    /// Timed requests per setup (after warm-up).
    #[arg(long, default_value_t = 400)]
    queries: usize,
    /// Concurrent clients (threads issuing requests back to back); several, comma-separated,
    /// measure each setup at each load (`1,4`: the latency of a request alone, and under a
    /// load that fills the cores).
    #[arg(long, value_delimiter = ',', default_value = "4")]
    clients: Vec<usize>,
    /// A team database to use (it must be empty); default: a private PostgreSQL started here
    /// (binaries from `scripts/env.sh`'s `ensure_postgres`).
    #[arg(long)]
    team_database: Option<String>,
    /// How the team database is filled: `ingest` (a team engine ingests the corpus, every
    /// vector inserted into the HNSW index one by one) or `migrate` (`knowhub migrate` copies
    /// the local store in bulk and the index is built once: the way to reach a million chunks).
    #[arg(long, value_enum, default_value_t = TeamLoad::Ingest)]
    team_load: TeamLoad,
    /// `maintenance_work_mem` given to the bench database (`ALTER DATABASE`) for the HNSW
    /// build: a million 384-d vectors need about 3 GB to be indexed in memory.
    #[arg(long, default_value_t = 3072)]
    build_memory_mb: u32,
    /// Passage vectors: `synthetic` (pseudo-random unit vectors, seconds) or `real` (the
    /// embedder's own, about an hour per 100k chunks on 2 cores; every setup reuses them).
    #[arg(long, value_enum, default_value_t = PassageVectors::Synthetic)]
    passage_vectors: PassageVectors,
    /// With real passage vectors: a file that keeps them between runs (read when present,
    /// appended to as they are embedded), so a later run of the same corpus, or one after an
    /// interrupted run, embeds only what is missing.
    #[arg(long)]
    vector_cache: Option<PathBuf>,
}

/// Where `knowhub bench team`'s passage vectors come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PassageVectors {
    Synthetic,
    Real,
}

/// How `knowhub bench team` fills the team database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TeamLoad {
    Ingest,
    Migrate,
}

/// One setup's load result.
struct LoadRow {
    setup: String,
    clients: usize,
    requests: usize,
    errors: usize,
    qps: f64,
    p50: f64,
    p95: f64,
    p99: f64,
    hits_p50: f64,
}

/// An in-process `knowhub serve` on a loopback port.
struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    /// Stops serving and closes the engine's connections, so that stopping the private
    /// database afterwards leaves no pool complaining about a lost server.
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(hub: Hub) -> Result<Server> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let hub = Arc::new(hub);
    let state = ServerState::new(Arc::clone(&hub), None);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let served = rt.block_on(knowhub_server::serve_on(listener, state, async {
            let _ = stopped.await;
        }));
        if let Err(e) = served {
            eprintln!("the server on {addr} stopped: {e}");
        }
        // The engines' blocking database clients must close outside the runtime (as in
        // `knowhub serve`, which holds its hub outside it).
        drop(rt);
        drop(hub);
    });
    Ok(Server {
        addr,
        stop: Some(stop),
        thread: Some(thread),
    })
}

fn models(embedder: &Arc<dyn Embedder>) -> ModelSet {
    ModelSet {
        embedder: Some(Arc::clone(embedder)),
        reranker: None,
        ocr: None,
        notes: Vec::new(),
    }
}

/// The real model's passage vectors, each text embedded once per run (the local store and
/// the team database ingest the same corpus) and, with a file, once across runs: every batch
/// is appended as it is embedded, so an interrupted run loses nothing it paid for.
struct CachedPassages {
    real: Arc<dyn Embedder>,
    vectors: Mutex<HashMap<u64, Vec<f32>>>,
    file: Option<Mutex<std::fs::File>>,
}

/// First bytes of a cache file; the dimension (u32) follows, then records of a text hash
/// (u64) and the vector (f32s), all little-endian.
const CACHE_MAGIC: &[u8; 8] = b"khvecs01";
const CACHE_HEADER: u64 = 12;

impl CachedPassages {
    fn open(real: Arc<dyn Embedder>, path: Option<&Path>) -> Result<CachedPassages> {
        let dim = real.dim();
        let mut vectors = HashMap::new();
        let file = match path {
            None => None,
            Some(path) => {
                let context = || format!("cannot use the vector cache {}", path.display());
                let mut file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(path)
                    .with_context(context)?;
                if file.metadata().with_context(context)?.len() == 0 {
                    file.write_all(CACHE_MAGIC)?;
                    file.write_all(&u32::try_from(dim)?.to_le_bytes())?;
                } else {
                    vectors = read_cache(&mut file, dim).with_context(context)?;
                    eprintln!(
                        "  {} passage vectors from {}",
                        thousands(vectors.len() as u64),
                        path.display()
                    );
                }
                // A run killed mid-record leaves a partial one: appends start after the last
                // whole record.
                let whole = CACHE_HEADER + vectors.len() as u64 * record_bytes(dim);
                file.set_len(whole).with_context(context)?;
                file.seek(std::io::SeekFrom::End(0))?;
                Some(Mutex::new(file))
            }
        };
        Ok(CachedPassages {
            real,
            vectors: Mutex::new(vectors),
            file,
        })
    }

    /// Appends newly embedded vectors to the file.
    fn append(&self, records: &[(u64, &[f32])]) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let mut bytes = Vec::with_capacity(records.len() * record_bytes(self.real.dim()) as usize);
        for (hash, vector) in records {
            bytes.extend_from_slice(&hash.to_le_bytes());
            for x in *vector {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
        }
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(&bytes)
    }
}

fn record_bytes(dim: usize) -> u64 {
    8 + 4 * dim as u64
}

/// The cache key of `text` embedded by `model`: stable across builds and toolchains, and a
/// cache written with another model of the same dimension only misses.
fn text_hash(model: &str, text: &str) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(model.as_bytes());
    h.update(&[0]);
    h.update(text.as_bytes());
    let mut key = [0_u8; 8];
    key.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u64::from_le_bytes(key)
}

/// The whole records of a cache file (a partial last one is left out).
fn read_cache(file: &mut std::fs::File, dim: usize) -> Result<HashMap<u64, Vec<f32>>> {
    file.seek(std::io::SeekFrom::Start(0))?;
    let mut input = BufReader::new(file);
    let mut magic = [0_u8; 8];
    input.read_exact(&mut magic)?;
    let mut word = [0_u8; 4];
    input.read_exact(&mut word)?;
    if &magic != CACHE_MAGIC || u32::from_le_bytes(word) as usize != dim {
        bail!("not a cache of {dim}-dimensional vectors");
    }
    let mut vectors = HashMap::new();
    let mut record = vec![0_u8; record_bytes(dim) as usize];
    loop {
        match input.read_exact(&mut record) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.into()),
        }
        let (key, rest) = record.split_at(8);
        let hash = u64::from_le_bytes(key.try_into()?);
        let vector = rest
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        vectors.insert(hash, vector);
    }
    Ok(vectors)
}

impl Embedder for CachedPassages {
    fn model_id(&self) -> &str {
        self.real.model_id()
    }

    fn dim(&self) -> usize {
        self.real.dim()
    }

    fn embed_passages(&self, texts: &[&str]) -> knowhub_embed::Result<Vec<Vec<f32>>> {
        let hashes: Vec<u64> = texts
            .iter()
            .map(|t| text_hash(self.real.model_id(), t))
            .collect();
        let missing: Vec<(&str, u64)> = {
            let known = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
            texts
                .iter()
                .zip(&hashes)
                .filter(|(_, h)| !known.contains_key(h))
                .map(|(t, h)| (*t, *h))
                .collect()
        };
        let embedded = if missing.is_empty() {
            Vec::new()
        } else {
            let texts: Vec<&str> = missing.iter().map(|(t, _)| *t).collect();
            self.real.embed_passages(&texts)?
        };
        let records: Vec<(u64, &[f32])> = missing
            .iter()
            .zip(&embedded)
            .map(|((_, h), vector)| (*h, vector.as_slice()))
            .collect();
        if let Err(e) = self.append(&records) {
            eprintln!("warning: cannot append to the vector cache: {e}");
        }
        let mut known = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
        for ((_, h), vector) in missing.iter().zip(embedded) {
            known.insert(*h, vector);
        }
        hashes
            .iter()
            .map(|h| {
                known.get(h).cloned().ok_or_else(|| {
                    knowhub_embed::EmbedError::Model("the model returned too few vectors".into())
                })
            })
            .collect()
    }

    fn embed_query(&self, text: &str) -> knowhub_embed::Result<Vec<f32>> {
        self.real.embed_query(text)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.real.count_tokens(text)
    }

    fn max_tokens(&self) -> usize {
        self.real.max_tokens()
    }
}

fn config(data: &Path, team: Option<(&str, &str)>) -> EngineConfig {
    let mut config = EngineConfig::new(data);
    config.parser = ParserBackend::InProcess;
    config.team = team.map(|(database, replica)| TeamConfig {
        database: database.to_owned(),
        replica: replica.to_owned(),
        secret_key_file: None,
        host: "test-host".into(),
    });
    config
}

/// Ingests the corpus, restricts every other part folder to another team, and returns the
/// API key of a USER in `team:bench` (about half the documents readable).
fn load_corpus(engine: &Engine, corpus: &Path) -> Result<String> {
    let admin = dev_context();
    let t = Instant::now();
    let report = engine.ingest(
        &admin,
        &[corpus.to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    eprintln!(
        "  ingested {} documents ({} chunks, {} embedded) in {:.0} s",
        report.added,
        report.chunks,
        report.embedded,
        t.elapsed().as_secs_f64()
    );
    let user = UserId::new("bench-user")?;
    engine.add_user(&admin, &user, "bench user", Role::User)?;
    engine.add_membership(&admin, &user, &"team:bench".parse()?)?;
    engine.set_folder_acl(&admin, corpus, Some(&"team:bench".parse()?))?;
    let mut parts: Vec<PathBuf> = std::fs::read_dir(corpus)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    parts.sort();
    for part in parts.iter().skip(1).step_by(2) {
        engine.set_folder_acl(&admin, part, Some(&"team:other".parse()?))?;
    }
    Ok(engine.rotate_api_key(&admin, &user)?.secret().to_owned())
}

/// Gives the database's later sessions `mb` of `maintenance_work_mem` (the HNSW build reads it).
fn set_build_memory(database: &str, mb: u32) -> Result<()> {
    let db = knowhub_pg::Database::connect(database)?;
    let mut client = db.client()?;
    let name: String = client.query_one("SELECT current_database()", &[])?.get(0);
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    client.batch_execute(&format!(
        "ALTER DATABASE {quoted} SET maintenance_work_mem = '{}MB'",
        mb.max(64)
    ))?;
    Ok(())
}

/// One search request; its latency in ms and how many hits came back.
fn search(agent: &ureq::Agent, addr: SocketAddr, key: &str, query: &str) -> Result<(f64, usize)> {
    let body = serde_json::json!({ "query": query, "limit": 10 }).to_string();
    let request = ureq::http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/api/v1/search"))
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(body)?;
    let t = Instant::now();
    let mut response = agent.run(request)?;
    let text = response.body_mut().read_to_string()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    if response.status().as_u16() != 200 {
        bail!("HTTP {}: {text}", response.status());
    }
    let value: serde_json::Value = serde_json::from_str(&text)?;
    let hits = value["hits"].as_array().map_or(0, Vec::len);
    Ok((ms, hits))
}

/// `clients` threads send `queries` (round-robin over `servers`) as fast as answers come.
fn load(
    setup: &str,
    servers: &[SocketAddr],
    key: &str,
    warmup: &[String],
    queries: &[String],
    clients: usize,
) -> Result<LoadRow> {
    let agent = || {
        ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(60)))
                .build(),
        )
    };
    // Warm-up on every server: the first request opens the engine (and catches a replica up).
    for addr in servers {
        let warm = agent();
        let t = Instant::now();
        for q in warmup {
            search(&warm, *addr, key, q).with_context(|| format!("warm-up on {addr}"))?;
        }
        eprintln!(
            "  {setup}: {addr} warm in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let results: Vec<Vec<Result<(f64, usize), String>>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..clients.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let agent = agent();
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(q) = queries.get(i) else { break };
                        let addr = servers[i % servers.len()];
                        out.push(search(&agent, addr, key, q).map_err(|e| e.to_string()));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let mut latencies = Vec::new();
    let mut hits = Vec::new();
    let mut errors = 0;
    for r in results.into_iter().flatten() {
        match r {
            Ok((ms, n)) => {
                latencies.push(ms);
                hits.push(n as f64);
            }
            Err(e) => {
                if errors == 0 {
                    eprintln!("  {setup}: first error: {e}");
                }
                errors += 1;
            }
        }
    }
    Ok(LoadRow {
        setup: setup.to_owned(),
        clients: clients.max(1),
        requests: latencies.len() + errors,
        errors,
        qps: latencies.len() as f64 / wall.max(1e-9),
        p50: percentile(&mut latencies, 0.5),
        p95: percentile(&mut latencies, 0.95),
        p99: percentile(&mut latencies, 0.99),
        hits_p50: percentile(&mut hits, 0.5),
    })
}

pub(crate) fn run(args: &TeamBenchArgs) -> Result<ExitCode> {
    let root = std::env::current_dir()
        .ok()
        .and_then(|cwd| knowhub_models::find_repo_root(&cwd))
        .unwrap_or_else(|| PathBuf::from("."));
    let manifest = knowhub_models::Manifest::builtin()?;
    let models_dir =
        knowhub_models::default_models_dir().context("no models directory (KNOWHUB_MODELS_DIR)")?;
    let e5_dir = knowhub_models::require(
        &manifest,
        &models_dir,
        DEFAULT_EMBEDDER,
        knowhub_models::Depth::Quick,
    )?;
    let e5: Arc<dyn Embedder> = Arc::new(open_model(&e5_dir)?);
    let passages: Arc<dyn Embedder> = match args.passage_vectors {
        PassageVectors::Real => Arc::new(CachedPassages::open(
            Arc::clone(&e5),
            args.vector_cache.as_deref(),
        )?),
        PassageVectors::Synthetic => Arc::new(SyntheticPassages {
            id: format!("{}+synthetic-passages", e5.model_id()),
            real: Arc::clone(&e5),
        }),
    };
    let vocab = Vocab::build(&root.join("assets/demo"));
    let mut queries = make_queries(&vocab, WARMUP_QUERIES + args.queries.max(1));
    let timed = queries.split_off(WARMUP_QUERIES);
    let warmup = queries;

    let cluster;
    let database = match &args.team_database {
        Some(url) => url.clone(),
        None => {
            let bin = knowhub_pg::PgCluster::find_binaries().context(
                "no PostgreSQL binaries: run `source scripts/env.sh && ensure_postgres`, or pass \
                 --team-database",
            )?;
            cluster = knowhub_pg::PgCluster::start(&bin)?;
            cluster.create_database("bench_team")?
        }
    };

    set_build_memory(&database, args.build_memory_mb)?;

    let tmp = tempfile::tempdir()?;
    let corpus = tmp.path().join("corpus");
    let files = args.chunks.div_ceil(CHUNKS_PER_FILE).max(1);
    eprintln!("writing {files} files (~{} chunks)…", args.chunks);
    write_corpus(&corpus, files, &vocab, args.chunks as u64)?;

    let mut rows = Vec::new();
    let load_avg_start = load_avg();

    eprintln!("local mode (SQLite, in-memory vectors):");
    let local_key = {
        let engine = Engine::open_with(
            config(&tmp.path().join("local"), None),
            Arc::new(RealFs),
            models(&passages),
        )?;
        load_corpus(&engine, &corpus)?
    };
    let local = serve(Hub::open_with(
        config(&tmp.path().join("local"), None),
        Arc::new(RealFs),
        models(&passages),
    )?)?;
    for &clients in &args.clients {
        rows.push(load(
            "local (SQLite), 1 server",
            &[local.addr],
            &local_key,
            &warmup,
            &timed,
            clients,
        )?);
    }

    eprintln!("team mode (PostgreSQL + pgvector):");
    let team_key = match args.team_load {
        TeamLoad::Ingest => {
            let engine = Engine::open_with(
                config(&tmp.path().join("ingest"), Some((&database, "ingest"))),
                Arc::new(RealFs),
                models(&passages),
            )?;
            load_corpus(&engine, &corpus)?
        }
        TeamLoad::Migrate => {
            // The same documents, users, ACLs and key (ids and key hashes are copied as
            // they are).
            let t = Instant::now();
            let store = tmp.path().join("local/accounts/default/store.sqlite");
            let db = knowhub_pg::Database::connect(&database)?;
            let report = knowhub_pg::import_sqlite(&db, &store, &Default::default())?;
            let rows: u64 = report.checks.iter().map(|c| c.postgres).sum();
            eprintln!(
                "  migrated the local store ({} rows) in {:.0} s",
                thousands(rows),
                t.elapsed().as_secs_f64()
            );
            local_key.clone()
        }
    };
    // Fresh data directories: each replica builds its index from the change log on start.
    let mut replicas = Vec::new();
    for name in ["a", "b"] {
        let t = Instant::now();
        let hub = Hub::open_with(
            config(&tmp.path().join(name), Some((&database, name))),
            Arc::new(RealFs),
            models(&passages),
        )?;
        hub.engine(&dev_context())?;
        eprintln!(
            "  replica {name}: caught up from the change log in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        replicas.push(serve(hub)?);
    }
    drop(local);
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r: &Server| r.addr).collect();
    for (setup, servers) in [
        ("team (PostgreSQL), 1 replica", &addrs[..1]),
        ("team (PostgreSQL), 2 replicas", &addrs[..]),
    ] {
        for &clients in &args.clients {
            rows.push(load(setup, servers, &team_key, &warmup, &timed, clients)?);
        }
    }

    let vectors = match args.passage_vectors {
        PassageVectors::Synthetic => "synthetic",
        PassageVectors::Real => "real",
    };
    println!(
        "`knowhub bench team --chunks {} --queries {} --clients {} --team-load {} \
         --passage-vectors {vectors}`: /api/v1/search over HTTP as a USER whose ACLs allow about \
         half of the documents ({} chunks; {vectors} passage vectors, real query embeddings; \
         load average at the start {}).\n",
        args.chunks,
        args.queries,
        args.clients
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        match args.team_load {
            TeamLoad::Ingest => "ingest",
            TeamLoad::Migrate => "migrate",
        },
        thousands(args.chunks as u64),
        load_avg_start.map_or("?".into(), |l| format!("{l:.2}"))
    );
    println!(
        "| setup | clients | requests | errors | queries/s | p50 ms | p95 ms | p99 ms | hits (p50) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} |",
            r.setup, r.clients, r.requests, r.errors, r.qps, r.p50, r.p95, r.p99, r.hits_p50
        );
    }
    Ok(if rows.iter().all(|r| r.errors == 0) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors that say which text they came from, counting the texts it is asked for.
    struct Counting {
        asked: AtomicUsize,
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed_passages(&self, texts: &[&str]) -> knowhub_embed::Result<Vec<Vec<f32>>> {
            self.asked.fetch_add(texts.len(), Ordering::Relaxed);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
        fn embed_query(&self, text: &str) -> knowhub_embed::Result<Vec<f32>> {
            Ok(vec![text.len() as f32, 0.0])
        }
        fn count_tokens(&self, text: &str) -> usize {
            text.len()
        }
        fn max_tokens(&self) -> usize {
            512
        }
    }

    #[test]
    fn a_vector_cache_survives_a_run_cut_off_mid_record() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("vectors.bin");
        let real = Arc::new(Counting {
            asked: AtomicUsize::new(0),
        });
        let cache = CachedPassages::open(real.clone(), Some(&path))?;
        assert_eq!(
            cache.embed_passages(&["a", "bb"])?,
            [[1.0, 1.0], [2.0, 1.0]]
        );
        assert_eq!(cache.embed_passages(&["bb", "ccc"])?[1], [3.0, 1.0]);
        assert_eq!(
            real.asked.load(Ordering::Relaxed),
            3,
            "each text embedded once"
        );
        drop(cache);

        // A run killed while writing leaves part of a record behind.
        let whole = std::fs::metadata(&path)?.len();
        assert_eq!(whole, CACHE_HEADER + 3 * record_bytes(2));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)?
            .write_all(&[7; 5])?;
        let cache = CachedPassages::open(real.clone(), Some(&path))?;
        assert_eq!(
            std::fs::metadata(&path)?.len(),
            whole,
            "the partial record is cut"
        );
        assert_eq!(cache.embed_passages(&["ccc", "a", "dddd"])?[2], [4.0, 1.0]);
        assert_eq!(
            real.asked.load(Ordering::Relaxed),
            4,
            "only the new text is embedded"
        );
        drop(cache);

        let cache = CachedPassages::open(real.clone(), Some(&path))?;
        assert_eq!(cache.vectors.lock().map(|v| v.len()).unwrap_or(0), 4);
        // Another model's cache of the same dimension is not reused.
        let other = CachedPassages::open(Arc::new(Renamed(real.clone())), Some(&path))?;
        other.embed_passages(&["a"])?;
        assert_eq!(real.asked.load(Ordering::Relaxed), 5);
        Ok(())
    }

    /// The same vectors under another model id.
    struct Renamed(Arc<Counting>);

    impl Embedder for Renamed {
        fn model_id(&self) -> &str {
            "renamed"
        }
        fn dim(&self) -> usize {
            self.0.dim()
        }
        fn embed_passages(&self, texts: &[&str]) -> knowhub_embed::Result<Vec<Vec<f32>>> {
            self.0.embed_passages(texts)
        }
        fn embed_query(&self, text: &str) -> knowhub_embed::Result<Vec<f32>> {
            self.0.embed_query(text)
        }
        fn count_tokens(&self, text: &str) -> usize {
            self.0.count_tokens(text)
        }
        fn max_tokens(&self) -> usize {
            self.0.max_tokens()
        }
    }
}
