//! Cross-encoder reranking: the [`Reranker`] trait and [`CrossEncoder`], which reads a query and
//! a passage together and returns one relevance logit per passage (higher = more relevant).
//!
//! [`CrossEncoder::from_hf_folder`] loads a Hugging Face sequence-classification folder
//! (`config.json`, `tokenizer.json`, `model.safetensors`) of either family:
//! - `model_type: "bert"` (`BertForSequenceClassification`, e.g.
//!   cross-encoder/ms-marco-MiniLM-L-6-v2): the BERT encoder, the pooler (dense + tanh on
//!   `[CLS]`) and the `classifier` Linear. Weights named `bert.*` or without that prefix.
//!   Pairs get token type ids 0 (query) / 1 (passage), from the tokenizer's pair template.
//! - `model_type: "xlm-roberta"` (`XLMRobertaForSequenceClassification`, e.g.
//!   BAAI/bge-reranker-base; `"roberta"` loads the same way): the `roberta.*` encoder (or no
//!   prefix), positions starting at `pad_token_id + 1` and skipping padding, and the head
//!   `classifier.dense` + tanh + `classifier.out_proj` on `<s>`. Token type ids are all 0.
//!
//! The number of labels is read from the head's weight. With one label (every reranker we know)
//! the score is that logit; with more, it is the **last** label's logit (for a two-class
//! "irrelevant / relevant" head, the "relevant" one). No sigmoid or softmax is applied.
//!
//! Pairs are tokenized as pairs (the tokenizer's pair template: `[CLS] q [SEP] p [SEP]`,
//! `<s> q </s></s> p </s>`), truncated to [`CrossEncoder::max_tokens`] special tokens included
//! (by default the model's position limit), sorted by length, run in batches of up to
//! [`BATCH_SIZE`] padded to the longest pair of the batch, with an attention mask; padding does
//! not change the scores.
//!
//! ```no_run
//! use knowhub_embed::{CrossEncoder, Device, Reranker};
//!
//! # fn main() -> Result<(), knowhub_embed::EmbedError> {
//! let reranker = CrossEncoder::from_hf_folder("models/bge-reranker-base", Device::Cpu)?;
//! let passages = ["员工出差回来后应提交报销单。", "The quick brown fox jumps over the lazy dog."];
//! let scores = reranker.score("如何申请报销？", &passages)?;
//! let mut ranked: Vec<(usize, f32)> = scores.into_iter().enumerate().collect();
//! ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
//! println!("best: {}", passages[ranked[0].0]);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::path::Path;

use candle_core::{DType, Device, Module};
use candle_nn::{Linear, VarBuilder};
use candle_transformers::models::{bert, xlm_roberta};
use serde_json::Value;
use tokenizers::utils::truncation::{
    TruncationDirection, TruncationParams, TruncationStrategy, truncate_encodings,
};
use tokenizers::{PostProcessor, Tokenizer};

use crate::embedder::{
    folder_model_id, load_hf_tokenizer, load_hf_weights, longest_first, pad_rows, read_hf_file,
    tok_err,
};
use crate::error::{EmbedError, Result};

/// Pairs per forward pass.
pub const BATCH_SIZE: usize = 16;

/// A reranker: scores passages against a query.
pub trait Reranker: Send + Sync {
    /// A stable name of the model.
    fn model_id(&self) -> &str;
    /// One relevance logit per passage, in input order; higher = more relevant. Scores are
    /// comparable across passages of the same model, not calibrated probabilities. An empty
    /// `passages` gives an empty vector.
    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>>;
}

/// The parsed `config.json` of a supported family.
enum Config {
    Bert(bert::Config),
    XlmRoberta(xlm_roberta::Config),
}

/// The encoder and the part of the head before the final Linear.
enum Encoder {
    /// BERT; `pooler` is the dense layer before tanh on `[CLS]`.
    Bert {
        model: bert::BertModel,
        pooler: Linear,
    },
    /// XLM-RoBERTa; `dense` is `classifier.dense`, before tanh on `<s>`.
    XlmRoberta {
        model: xlm_roberta::XLMRobertaModel,
        dense: Linear,
    },
}

/// A cross-encoder reranker (BERT or XLM-RoBERTa sequence classification) on candle.
pub struct CrossEncoder {
    model_id: String,
    model_type: String,
    encoder: Encoder,
    /// `classifier` (BERT) or `classifier.out_proj` (XLM-R): hidden → num_labels.
    head: Linear,
    num_labels: usize,
    tokenizer: Tokenizer,
    device: Device,
    pad_id: u32,
    /// Whether the passage gets token type 1 (BERT with a type vocabulary of at least 2).
    type_ids: bool,
    /// Special tokens the tokenizer adds to a pair.
    pair_specials: usize,
    /// The model's position limit, in tokens.
    model_max: usize,
    /// Truncation length of a pair, special tokens included (≤ `model_max`).
    max_tokens: usize,
}

impl fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrossEncoder")
            .field("model_id", &self.model_id)
            .field("model_type", &self.model_type)
            .field("num_labels", &self.num_labels)
            .field("max_tokens", &self.max_tokens)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

/// Sets `key` to `value` where the config lacks it (fields candle's config structs require but
/// that do not change inference, e.g. dropout).
fn default_field(config: &mut Value, key: &str, value: Value) {
    if let Some(map) = config.as_object_mut() {
        map.entry(key).or_insert(value);
    }
}

impl CrossEncoder {
    /// Loads a Hugging Face sequence-classification folder: `config.json` (`model_type`
    /// `"bert"`, `"xlm-roberta"` or `"roberta"`), `tokenizer.json` and `model.safetensors`.
    ///
    /// A missing file is an [`EmbedError::Io`] naming it; an unreadable one, an unsupported
    /// `model_type` or a missing tensor is an [`EmbedError::Model`] or
    /// [`EmbedError::Tokenizer`] naming the file.
    pub fn from_hf_folder(dir: impl AsRef<Path>, device: Device) -> Result<Self> {
        let dir = dir.as_ref();
        let config_path = dir.join("config.json");
        let config_err =
            |e: &dyn fmt::Display| EmbedError::Model(format!("{}: {e}", config_path.display()));
        let mut config: Value = serde_json::from_slice(&read_hf_file(dir, "config.json")?)
            .map_err(|e| config_err(&e))?;
        let model_type = config
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let position_type = config
            .get("position_embedding_type")
            .and_then(Value::as_str)
            .unwrap_or("absolute");
        if position_type != "absolute" {
            return Err(config_err(&format!(
                "position_embedding_type {position_type:?} is not supported (only \"absolute\")"
            )));
        }
        for (key, value) in [
            ("hidden_dropout_prob", Value::from(0.0)),
            ("attention_probs_dropout_prob", Value::from(0.0)),
            ("initializer_range", Value::from(0.02)),
            ("position_embedding_type", Value::from("absolute")),
        ] {
            default_field(&mut config, key, value);
        }

        // Refuse an unsupported or malformed config before reading the (large) weights.
        let config = match model_type.as_str() {
            "bert" => Config::Bert(serde_json::from_value(config).map_err(|e| config_err(&e))?),
            "xlm-roberta" | "roberta" => {
                Config::XlmRoberta(serde_json::from_value(config).map_err(|e| config_err(&e))?)
            }
            other => {
                return Err(config_err(&format!(
                    "unsupported model_type {other:?} (expected \"bert\" or \"xlm-roberta\")"
                )));
            }
        };

        let tokenizer = load_hf_tokenizer(dir)?;
        let weights = load_hf_weights(dir, &device)?;
        let weights_path = dir.join("model.safetensors");
        let weights_err =
            |e: &dyn fmt::Display| EmbedError::Model(format!("{}: {e}", weights_path.display()));
        let has = |name: &str| weights.contains_key(name);
        let labels_of = |name: &str| -> Result<usize> {
            let w = weights.get(name).ok_or_else(|| {
                weights_err(&format!(
                    "no tensor {name:?}: not a sequence-classification (cross-encoder) checkpoint"
                ))
            })?;
            match w.dims() {
                [n, _] if *n > 0 => Ok(*n),
                dims => Err(weights_err(&format!("{name} has shape {dims:?}"))),
            }
        };

        let (encoder, head, num_labels, pad_id, type_ids, model_max) = match config {
            Config::Bert(cfg) => {
                let prefixed = has("bert.embeddings.word_embeddings.weight");
                let num_labels = labels_of("classifier.weight")?;
                let vb = VarBuilder::from_tensors(weights, DType::F32, &device);
                let body = if prefixed { vb.pp("bert") } else { vb.clone() };
                let h = cfg.hidden_size;
                let model =
                    bert::BertModel::load(body.clone(), &cfg).map_err(|e| weights_err(&e))?;
                let pooler = candle_nn::linear(h, h, body.pp("pooler.dense"))
                    .map_err(|e| weights_err(&e))?;
                let head = candle_nn::linear(h, num_labels, vb.pp("classifier"))
                    .map_err(|e| weights_err(&e))?;
                let pad = u32::try_from(cfg.pad_token_id).map_err(|e| config_err(&e))?;
                (
                    Encoder::Bert { model, pooler },
                    head,
                    num_labels,
                    pad,
                    cfg.type_vocab_size >= 2,
                    cfg.max_position_embeddings,
                )
            }
            Config::XlmRoberta(cfg) => {
                let prefixed = has("roberta.embeddings.word_embeddings.weight");
                let num_labels = labels_of("classifier.out_proj.weight")?;
                let vb = VarBuilder::from_tensors(weights, DType::F32, &device);
                let body = if prefixed {
                    vb.pp("roberta")
                } else {
                    vb.clone()
                };
                let h = cfg.hidden_size;
                let model =
                    xlm_roberta::XLMRobertaModel::new(&cfg, body).map_err(|e| weights_err(&e))?;
                let dense = candle_nn::linear(h, h, vb.pp("classifier.dense"))
                    .map_err(|e| weights_err(&e))?;
                let head = candle_nn::linear(h, num_labels, vb.pp("classifier.out_proj"))
                    .map_err(|e| weights_err(&e))?;
                // Positions run from pad_token_id + 1, so the table holds that many fewer tokens.
                let max = cfg
                    .max_position_embeddings
                    .saturating_sub(cfg.pad_token_id as usize + 1);
                (
                    Encoder::XlmRoberta { model, dense },
                    head,
                    num_labels,
                    cfg.pad_token_id,
                    false,
                    max,
                )
            }
        };

        let pair_specials = tokenizer
            .get_post_processor()
            .map_or(0, |p| p.added_tokens(true));
        if model_max < pair_specials + 2 {
            return Err(config_err(&format!(
                "{model_max} positions leave no room for a pair ({pair_specials} special tokens)"
            )));
        }
        Ok(Self {
            model_id: folder_model_id(dir, &model_type),
            model_type,
            encoder,
            head,
            num_labels,
            tokenizer,
            device,
            pad_id,
            type_ids,
            pair_specials,
            model_max,
            max_tokens: model_max,
        })
    }

    /// Truncates pairs at `n` tokens (special tokens included), at most the model's limit and
    /// at least the pair's special tokens + 2.
    pub fn with_max_tokens(mut self, n: usize) -> Self {
        self.max_tokens = n.clamp(self.pair_specials + 2, self.model_max);
        self
    }

    /// Most tokens per (query, passage) pair, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Labels of the classification head (the score is the last one's logit).
    pub fn num_labels(&self) -> usize {
        self.num_labels
    }

    /// The device the model runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Token ids and type ids of each (query, passage) pair, as `tokenizer.encode((query,
    /// passage), true)` makes them (the query is tokenized once) with this truncation:
    /// only the passage is cut (`OnlySecond`, from the right) so that the pair fits in
    /// `max_tokens`; when the query alone leaves no room for the passage, the longer of the two
    /// is cut first (`LongestFirst`, the default of sentence-transformers' CrossEncoder).
    fn encode_pairs(&self, query: &str, passages: &[&str]) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
        let q = self.tokenizer.encode(query, false).map_err(tok_err)?;
        let ps = self
            .tokenizer
            .encode_batch(passages.to_vec(), false)
            .map_err(tok_err)?;
        let budget = self.max_tokens - self.pair_specials;
        let strategy = if q.len() < budget {
            TruncationStrategy::OnlySecond
        } else {
            TruncationStrategy::LongestFirst
        };
        let params = TruncationParams {
            direction: TruncationDirection::Right,
            max_length: budget,
            strategy,
            stride: 0,
        };
        ps.into_iter()
            .map(|mut p| {
                p.set_type_ids(vec![1; p.len()]); // as `encode` marks the second sequence
                let (q, p) = truncate_encodings(q.clone(), Some(p), &params).map_err(tok_err)?;
                let enc = self.tokenizer.post_process(q, p, true).map_err(tok_err)?;
                let types = if self.type_ids {
                    enc.get_type_ids().to_vec()
                } else {
                    vec![0; enc.len()]
                };
                Ok((enc.get_ids().to_vec(), types))
            })
            .collect()
    }

    /// Logits (last label) of one batch of pairs.
    fn forward_batch(&self, pairs: &[&(Vec<u32>, Vec<u32>)]) -> Result<Vec<f32>> {
        let (ids, mask) = pad_rows(
            pairs.iter().map(|p| p.0.as_slice()),
            self.pad_id,
            &self.device,
        )?;
        let (types, _) = pad_rows(pairs.iter().map(|p| p.1.as_slice()), 0, &self.device)?;
        let features = match &self.encoder {
            Encoder::Bert { model, pooler } => {
                let hidden = model.forward(&ids, &types, Some(&mask))?; // (n, len, hidden)
                pooler
                    .forward(&hidden.get_on_dim(1, 0)?.contiguous()?)?
                    .tanh()?
            }
            Encoder::XlmRoberta { model, dense } => {
                let hidden = model.forward(&ids, &mask, &types, None, None, None)?;
                dense
                    .forward(&hidden.get_on_dim(1, 0)?.contiguous()?)?
                    .tanh()?
            }
        };
        let logits = self.head.forward(&features)?; // (n, num_labels)
        Ok(logits
            .narrow(1, self.num_labels - 1, 1)?
            .squeeze(1)?
            .to_vec1::<f32>()?)
    }
}

impl Reranker for CrossEncoder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let pairs = self.encode_pairs(query, passages)?;
        let order = longest_first(pairs.iter().map(|p| p.0.len()));
        let mut out = vec![0f32; pairs.len()];
        for batch in order.chunks(BATCH_SIZE) {
            let rows: Vec<&(Vec<u32>, Vec<u32>)> = batch.iter().map(|&i| &pairs[i]).collect();
            for (&i, logit) in batch.iter().zip(self.forward_batch(&rows)?) {
                out[i] = logit;
            }
        }
        Ok(out)
    }
}
