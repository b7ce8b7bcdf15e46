//! `EmbedError`: every way loading or using the embedder can fail, as one-line reasons.

use std::path::PathBuf;

/// Errors of the embedder crate.
///
/// Container errors carry the byte offset where reading stopped, so that a corrupt or truncated
/// model file can be diagnosed from the message alone.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model file could not be opened or mapped.
    #[error("cannot read model file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with `E5S1`.
    #[error("not an E5S1 model container (magic bytes {found:02x?})")]
    BadMagic {
        /// The first (up to) four bytes.
        found: Vec<u8>,
    },
    /// A container version this reader does not know.
    #[error("unsupported E5S1 version {0} (this reader knows version 1)")]
    UnsupportedVersion(u32),
    /// The file ends before a field or section that the directory says is there.
    #[error(
        "E5S1 container truncated: {what} needs {need} bytes at offset {offset}, file has {len}"
    )]
    Truncated {
        /// The field or section being read.
        what: String,
        /// Where it starts.
        offset: u64,
        /// How many bytes it needs.
        need: u64,
        /// Length of the file.
        len: u64,
    },
    /// A value that cannot be right (negative count, id out of range, bad UTF-8, …).
    #[error("corrupt E5S1 container at offset {offset}: {reason}")]
    Corrupt {
        /// Where the bad value was read.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A tensor name that is not in the container's directory.
    #[error("tensor {0:?} not found in the E5S1 container")]
    TensorNotFound(String),
    /// A tensor is present but cannot be used as asked (wrong dtype, bad length).
    #[error("tensor {name:?}: {reason}")]
    BadTensor {
        /// The tensor.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Building or running the tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// Loading or running the encoder failed (bad config, tensor shapes, candle errors).
    #[error("embedding model: {0}")]
    Model(String),
}

/// Result alias of this crate.
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;
