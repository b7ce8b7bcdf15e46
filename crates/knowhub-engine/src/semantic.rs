//! Semantic retrieval: which models the engine uses, the in-memory vector index built from the
//! store's persisted chunk vectors, and embedding whatever chunks lack a vector.
//!
//! Vectors live in the store (tagged with the embedder's model id); the in-memory
//! [`FlatIndex`] is derived from them at start-up, like the full-text index. A model change is
//! noticed by the id: vectors of the old model are dropped and chunks are re-embedded by the
//! next [`Engine::embed_pending`] (run at the end of every ingest).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use knowhub_chunk::{ChunkConfig, TokenCounter};
use knowhub_embed::{BertEmbedder, DeviceChoice, Embedder, Reranker};
use knowhub_store::{DocumentId, StoredVector, UnembeddedChunk};
use knowhub_vector::FlatIndex;

use crate::{Engine, EngineError, Result};

/// The manifest name of the default embedder (multilingual: Chinese and English).
pub const DEFAULT_EMBEDDER: &str = "multilingual-e5-small";

/// Chunks embedded per store round trip during [`Engine::embed_pending`].
const EMBED_BATCH: usize = 128;

/// Tokens kept free in every chunk for the title/heading line embedded with it.
const CONTEXT_TOKENS: usize = 32;

/// Which embedder to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedderSpec {
    /// Keyword search only.
    Off,
    /// A model from `models/manifest.toml`, installed by `knowhub models fetch`.
    Named(String),
    /// A Hugging Face BERT folder (`config.json`, `tokenizer.json`, `model.safetensors`) or an
    /// `E5S1` container file.
    Path(PathBuf),
}

impl Default for EmbedderSpec {
    fn default() -> Self {
        EmbedderSpec::Named(DEFAULT_EMBEDDER.into())
    }
}

impl std::str::FromStr for EmbedderSpec {
    type Err = EngineError;

    /// `off`, `default`, a manifest model name, or a path (anything with a `/` or `.`).
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        Ok(match s {
            "" => return Err(EngineError::InvalidInput("empty embedder name".into())),
            "off" | "none" | "keyword" => EmbedderSpec::Off,
            "default" => EmbedderSpec::default(),
            _ if s.contains('/') || s.contains('\\') || s.starts_with('.') => {
                EmbedderSpec::Path(PathBuf::from(s))
            }
            _ => EmbedderSpec::Named(s.to_owned()),
        })
    }
}

/// The models an engine opens with.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Where `knowhub models fetch` installs models (`None`: the default location).
    pub models_dir: Option<PathBuf>,
    pub embedder: EmbedderSpec,
    /// A cross-encoder folder (BERT or XLM-RoBERTa sequence classification); `None`: no
    /// reranking.
    pub reranker: Option<PathBuf>,
    pub device: DeviceChoice,
    /// Fail to open when the embedder cannot be loaded (otherwise the engine falls back to
    /// keyword search and says why in [`Engine::model_notes`]).
    pub require_embedder: bool,
    /// Read images and scanned pages with the OCR model when it is installed.
    pub ocr: bool,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            models_dir: None,
            embedder: EmbedderSpec::default(),
            reranker: None,
            device: DeviceChoice::Cpu,
            require_embedder: false,
            ocr: true,
        }
    }
}

impl ModelConfig {
    /// Keyword search only, no models loaded (fast start; tests).
    pub fn keyword_only() -> Self {
        ModelConfig {
            embedder: EmbedderSpec::Off,
            ocr: false,
            ..ModelConfig::default()
        }
    }
}

/// Loaded models, ready to hand to [`Engine::open_with`].
#[derive(Clone, Default)]
pub struct ModelSet {
    pub embedder: Option<Arc<dyn Embedder>>,
    pub reranker: Option<Arc<dyn Reranker>>,
    /// The folder of the OCR model (checked, not loaded: parser workers load it).
    pub ocr: Option<PathBuf>,
    /// Why a configured model is not in use (shown by `status` and the search trace).
    pub notes: Vec<String>,
}

impl std::fmt::Debug for ModelSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSet")
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id()))
            .field("reranker", &self.reranker.as_ref().map(|r| r.model_id()))
            .field("ocr", &self.ocr)
            .field("notes", &self.notes)
            .finish()
    }
}

impl ModelSet {
    /// No models: keyword search only.
    pub fn none() -> Self {
        ModelSet::default()
    }

    /// Loads what `config` asks for. A missing default model is not an error unless
    /// `require_embedder` is set: the engine then searches by keyword and the note names the
    /// command that installs the model. An explicitly given path that fails to load is an
    /// error.
    pub fn load(config: &ModelConfig) -> Result<ModelSet> {
        let mut set = ModelSet::default();
        let device = config.device.device();
        match &config.embedder {
            EmbedderSpec::Off => {}
            EmbedderSpec::Named(name) => match load_named(config, name, &device) {
                Ok(e) => set.embedder = Some(e),
                Err(e) if !config.require_embedder => {
                    let why = match e {
                        EngineError::Model(m) => m,
                        other => other.to_string(),
                    };
                    tracing::debug!("semantic search off: {why}");
                    set.notes.push(format!("semantic search off: {why}"));
                }
                Err(e) => return Err(e),
            },
            EmbedderSpec::Path(path) => set.embedder = Some(load_path(path, &device)?),
        }
        if let Some(dir) = &config.reranker {
            let r = knowhub_embed::CrossEncoder::from_hf_folder(dir, device.clone())
                .map_err(|e| model_error(dir, e))?;
            set.reranker = Some(Arc::new(r));
        }
        if config.ocr {
            match installed_model(config, OCR_MODEL) {
                Ok(dir) => set.ocr = Some(dir),
                Err(why) => set.notes.push(format!(
                    "scanned pages and images are not read ({why}); \
                     `knowhub models fetch {OCR_MODEL}` installs the OCR model"
                )),
            }
        }
        Ok(set)
    }
}

fn model_error(path: &Path, e: impl std::fmt::Display) -> EngineError {
    EngineError::Model(format!("{}: {e}", path.display()))
}

/// The manifest model that reads scanned pages and images.
pub const OCR_MODEL: &str = "pp-ocrv6-small";

fn load_named(
    config: &ModelConfig,
    name: &str,
    device: &knowhub_embed::Device,
) -> Result<Arc<dyn Embedder>> {
    let folder = installed_model(config, name).map_err(EngineError::Model)?;
    load_path(&folder, device)
}

/// The folder of manifest model `name`, checked (sizes) in the configured models directory.
fn installed_model(config: &ModelConfig, name: &str) -> std::result::Result<PathBuf, String> {
    let dir = config
        .models_dir
        .clone()
        .or_else(knowhub_models::default_models_dir)
        .ok_or_else(|| "no models directory (set KNOWHUB_MODELS_DIR)".to_string())?;
    let manifest = knowhub_models::Manifest::builtin().map_err(|e| e.to_string())?;
    knowhub_models::require(&manifest, &dir, name, knowhub_models::Depth::Quick)
        .map_err(|e| format!("{e} (models directory {})", dir.display()))
}

/// An `E5S1` file, a folder holding one (`*.bin`), or an HF BERT folder.
fn load_path(path: &Path, device: &knowhub_embed::Device) -> Result<Arc<dyn Embedder>> {
    let e5s1 = if path.is_file() {
        Some(path.to_path_buf())
    } else {
        std::fs::read_dir(path)
            .map_err(|e| model_error(path, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "bin"))
    };
    let model = match e5s1 {
        Some(file) => BertEmbedder::from_e5s1(&file, device.clone()),
        None => BertEmbedder::from_hf_folder(path, device.clone()),
    }
    .map_err(|e| model_error(path, e))?;
    Ok(Arc::new(model))
}

/// Counts tokens with the embedder's own tokenizer, so chunks fit its window.
pub(crate) struct EmbedderTokenCounter {
    embedder: Arc<dyn Embedder>,
    /// Tokens an empty passage takes (prefix and special tokens).
    overhead: usize,
}

impl EmbedderTokenCounter {
    pub(crate) fn new(embedder: Arc<dyn Embedder>) -> Self {
        let overhead = embedder.count_tokens("");
        EmbedderTokenCounter { embedder, overhead }
    }

    /// `config` with chunk sizes that fit the embedder's window, leaving room for the
    /// title/heading line embedded with each chunk.
    pub(crate) fn fit(&self, config: ChunkConfig) -> ChunkConfig {
        let room = self
            .embedder
            .max_tokens()
            .saturating_sub(self.overhead + CONTEXT_TOKENS)
            .max(16);
        let mut c = config;
        c.max_tokens = c.max_tokens.min(room);
        c.target_tokens = c.target_tokens.min(c.max_tokens);
        c.overlap_tokens = c.overlap_tokens.min(c.target_tokens / 2);
        c.min_tokens = c.min_tokens.min(c.target_tokens);
        c.sanitized()
    }
}

impl TokenCounter for EmbedderTokenCounter {
    fn count(&self, text: &str) -> usize {
        self.embedder
            .count_tokens(text)
            .saturating_sub(self.overhead)
    }
}

/// The text a chunk is embedded as: its heading path (or the document title) on a first line,
/// then the passage — so a passage that says "it" still carries what it is about.
pub(crate) fn passage_text(c: &UnembeddedChunk) -> String {
    let context = if c.heading_path.is_empty() {
        c.title.trim().to_owned()
    } else {
        c.heading_path.join(" › ")
    };
    let head: String = c.text.chars().take(context.chars().count() + 4).collect();
    if context.is_empty() || head.contains(&context) {
        c.text.clone()
    } else {
        format!("{context}\n{}", c.text)
    }
}

/// The dense half of retrieval: the embedder and the vectors of the store's chunks.
pub(crate) struct Semantic {
    pub(crate) embedder: Arc<dyn Embedder>,
    vectors: RwLock<FlatIndex>,
}

impl Semantic {
    pub(crate) fn new(embedder: Arc<dyn Embedder>) -> Self {
        let dim = embedder.dim();
        Semantic {
            embedder,
            vectors: RwLock::new(FlatIndex::new(dim)),
        }
    }

    pub(crate) fn vectors(&self) -> RwLockReadGuard<'_, FlatIndex> {
        // The index is rebuilt from the store on open; a panic mid-update at worst leaves a
        // document half-replaced in memory, which the next sync of that document fixes.
        self.vectors.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn vectors_mut(&self) -> RwLockWriteGuard<'_, FlatIndex> {
        self.vectors.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// Progress of [`Engine::embed_pending`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct EmbedProgress {
    pub done: usize,
    pub total: usize,
}

impl Engine {
    /// The embedder's model id, when semantic search is on.
    pub fn embedder_id(&self) -> Option<&str> {
        self.semantic.as_ref().map(|s| s.embedder.model_id())
    }

    /// The reranker's model id, when one is configured.
    pub fn reranker_id(&self) -> Option<&str> {
        self.reranker.as_ref().map(|r| r.model_id())
    }

    /// Why configured models are not in use (empty when all loaded).
    pub fn model_notes(&self) -> &[String] {
        &self.model_notes
    }

    /// Loads the store's vectors of the current model into memory; drops vectors of other
    /// models first (when writable), so a model change re-embeds.
    pub(crate) fn load_vectors(&self) -> Result<()> {
        let Some(sem) = &self.semantic else {
            return Ok(());
        };
        let model = sem.embedder.model_id().to_owned();
        if !self.read_only {
            let dropped = self.store().delete_vectors_except(&model)?;
            if dropped > 0 {
                tracing::info!(dropped, model, "embedder changed; old vectors dropped");
            }
        }
        let mut index = FlatIndex::new(sem.embedder.dim());
        let mut doc: Option<DocumentId> = None;
        let mut batch: Vec<(u64, Vec<f32>)> = Vec::new();
        let flush =
            |index: &mut FlatIndex, doc: Option<DocumentId>, batch: &mut Vec<(u64, Vec<f32>)>| {
                if let Some(d) = doc
                    && !batch.is_empty()
                {
                    let r = index.upsert_document(d.0 as u64, batch);
                    batch.clear();
                    return r.map_err(|e| EngineError::Model(e.to_string()));
                }
                Ok(())
            };
        self.store()
            .for_each_vector(&model, &mut |v: knowhub_store::StoredVector| {
                if doc != Some(v.document_id) {
                    flush(&mut index, doc, &mut batch)
                        .map_err(|e| knowhub_store::StoreError::Corrupt(e.to_string()))?;
                    doc = Some(v.document_id);
                }
                batch.push((v.chunk_id.0 as u64, v.vector));
                Ok(())
            })?;
        flush(&mut index, doc, &mut batch)?;
        *sem.vectors_mut() = index;
        Ok(())
    }

    /// Makes the in-memory vectors of one document match the store (after it was replaced,
    /// removed or repaired).
    pub(crate) fn sync_document_vectors(&self, id: DocumentId) -> Result<()> {
        let Some(sem) = &self.semantic else {
            return Ok(());
        };
        if self.team_vectors.is_some() {
            // Team mode searches the database's vectors: nothing is held in memory.
            return Ok(());
        }
        let stored = self.store().document_vectors(sem.embedder.model_id(), id)?;
        let mut index = sem.vectors_mut();
        index.delete_document(id.0 as u64);
        if !stored.is_empty() {
            let v: Vec<(u64, Vec<f32>)> = stored
                .into_iter()
                .map(|s| (s.chunk_id.0 as u64, s.vector))
                .collect();
            index
                .upsert_document(id.0 as u64, &v)
                .map_err(|e| EngineError::Model(e.to_string()))?;
        }
        Ok(())
    }

    /// Embeds every chunk that has no vector from the current model yet, in batches (each
    /// batch is stored before the next starts, so an interrupted run resumes where it
    /// stopped). Returns how many chunks were embedded; 0 when semantic search is off.
    pub fn embed_pending(
        &self,
        ctx: &crate::RequestContext,
        progress: &mut dyn FnMut(EmbedProgress),
    ) -> Result<usize> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "re-embed the knowledge base")?;
        let _guard = self.begin_write()?;
        self.embed_pending_locked(progress)
    }

    /// [`Engine::embed_pending`] for a caller that holds the write lock.
    pub(crate) fn embed_pending_locked(
        &self,
        progress: &mut dyn FnMut(EmbedProgress),
    ) -> Result<usize> {
        let Some(sem) = &self.semantic else {
            return Ok(0);
        };
        let model = sem.embedder.model_id().to_owned();
        let total = self.store().unembedded_count(&model)? as usize;
        let mut done = 0;
        progress(EmbedProgress { done, total });
        loop {
            let batch = self.store().unembedded_chunks(&model, EMBED_BATCH)?;
            if batch.is_empty() {
                break;
            }
            let texts: Vec<String> = batch.iter().map(passage_text).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = sem
                .embedder
                .embed_passages(&refs)
                .map_err(|e| EngineError::Model(e.to_string()))?;
            let rows: Vec<StoredVector> = batch
                .iter()
                .zip(vectors)
                .map(|(c, vector)| StoredVector {
                    chunk_id: c.chunk_id,
                    document_id: c.document_id,
                    vector,
                })
                .collect();
            let stored = self.store().put_vectors(&model, &rows)?;
            if stored == 0 {
                // Every chunk of the batch vanished under us; nothing can make progress.
                break;
            }
            let mut docs: Vec<DocumentId> = batch.iter().map(|c| c.document_id).collect();
            docs.dedup();
            for d in docs {
                self.sync_document_vectors(d)?;
            }
            done += batch.len();
            progress(EmbedProgress {
                done: done.min(total.max(done)),
                total: total.max(done),
            });
        }
        Ok(done)
    }
}
