//! The tokenizer of a GGUF model, rebuilt from the GGUF's own metadata.
//!
//! None of the GGUF files KnowHub ships comes with a `tokenizer.json`, but each one carries its
//! GPT-2-style byte-level BPE vocabulary: `tokenizer.ggml.model` = `gpt2`, `tokens`, `merges`,
//! `token_type` and `pre` (the pre-tokenizer family: `qwen2` or `smollm`). This module assembles
//! the equivalent `tokenizers::Tokenizer` exactly as the reference converter
//! (`shared/models/reference/gguf2tokenizer.py`) does:
//!
//! - **normaliser**: NFC for `qwen2`, none for `smollm`;
//! - **pre-tokeniser**: `qwen2`: the Qwen2 split regex (isolated) then ByteLevel without its own
//!   regex; `smollm`: individual digits then ByteLevel with the GPT-2 regex;
//! - **model**: BPE over the vocabulary and merges, no unknown token (byte-level covers all);
//! - **added tokens**: token type 3 (control) as special tokens, type 4 (user-defined) as plain
//!   added tokens, none of them normalised;
//! - **post-processor / decoder**: ByteLevel.
//!
//! `tests/tokenizer.rs` checks token ids against the reference on English, Chinese, code and
//! digits (fixture made by `tests/make_tokenizer_ids.py`).
//!
//! For streaming, `TokenTable` maps every id straight to its bytes (the inverse of GPT-2's
//! byte-to-character table), which is what the incremental UTF-8 decoder needs.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::ModelWrapper;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::error::{LlmError, Result};

/// Qwen2's pre-tokenizer split (the same as the reference script's).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// GGUF token types (llama.cpp's `llama_token_type`).
const TYPE_CONTROL: i64 = 3;
const TYPE_USER_DEFINED: i64 = 4;
const TYPE_UNUSED: i64 = 5;

/// The tokenizer section of a GGUF's metadata.
#[derive(Debug, Clone)]
pub(crate) struct GgufVocab {
    pub(crate) tokens: Vec<String>,
    pub(crate) types: Vec<i64>,
    pub(crate) merges: Vec<String>,
    pub(crate) pre: String,
    pub(crate) eos: Option<u32>,
}

fn meta_int(v: &Value) -> Option<i64> {
    match v {
        Value::U8(x) => Some(i64::from(*x)),
        Value::I8(x) => Some(i64::from(*x)),
        Value::U16(x) => Some(i64::from(*x)),
        Value::I16(x) => Some(i64::from(*x)),
        Value::U32(x) => Some(i64::from(*x)),
        Value::I32(x) => Some(i64::from(*x)),
        Value::U64(x) => i64::try_from(*x).ok(),
        Value::I64(x) => Some(*x),
        _ => None,
    }
}

/// An integer metadata value (any integer type).
pub(crate) fn meta_u64(meta: &HashMap<String, Value>, key: &str) -> Option<u64> {
    meta.get(key)
        .and_then(meta_int)
        .and_then(|v| u64::try_from(v).ok())
}

/// A string metadata value.
pub(crate) fn meta_str<'a>(meta: &'a HashMap<String, Value>, key: &str) -> Option<&'a str> {
    match meta.get(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

fn meta_strings(meta: &HashMap<String, Value>, key: &str) -> Result<Vec<String>, String> {
    let Some(v) = meta.get(key) else {
        return Err(format!("metadata {key} is missing"));
    };
    let Value::Array(items) = v else {
        return Err(format!("metadata {key} is not an array"));
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.clone()),
            _ => Err(format!("metadata {key} holds a non-string")),
        })
        .collect()
}

impl GgufVocab {
    /// Reads the tokenizer metadata; the error says what is missing or unsupported.
    pub(crate) fn from_metadata(meta: &HashMap<String, Value>) -> Result<Self, String> {
        match meta_str(meta, "tokenizer.ggml.model") {
            Some("gpt2") => {}
            Some(other) => {
                return Err(format!(
                    "tokenizer type {other:?} is not supported (only byte-level BPE, \"gpt2\")"
                ));
            }
            None => return Err("metadata tokenizer.ggml.model is missing".to_owned()),
        }
        let tokens = meta_strings(meta, "tokenizer.ggml.tokens")?;
        let merges = meta_strings(meta, "tokenizer.ggml.merges")?;
        let types = match meta.get("tokenizer.ggml.token_type") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    meta_int(v).ok_or("metadata tokenizer.ggml.token_type holds a non-integer")
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err("metadata tokenizer.ggml.token_type is not an array".into()),
            // No types: every token is a normal one.
            None => vec![1; tokens.len()],
        };
        if types.len() != tokens.len() {
            return Err(format!(
                "{} token types for {} tokens",
                types.len(),
                tokens.len()
            ));
        }
        let pre = meta_str(meta, "tokenizer.ggml.pre")
            .unwrap_or("qwen2")
            .to_owned();
        let eos = meta_u64(meta, "tokenizer.ggml.eos_token_id").and_then(|v| u32::try_from(v).ok());
        Ok(GgufVocab {
            tokens,
            types,
            merges,
            pre,
            eos,
        })
    }

    /// The `tokenizers::Tokenizer` equivalent to the reference converter's `tokenizer.json`.
    pub(crate) fn tokenizer(&self) -> Result<Tokenizer, String> {
        let (normalizer, pre_tokenizers): (Option<NormalizerWrapper>, Vec<PreTokenizerWrapper>) =
            match self.pre.as_str() {
                "qwen2" => {
                    let split = Split::new(
                        SplitPattern::Regex(QWEN2_SPLIT.to_owned()),
                        SplitDelimiterBehavior::Isolated,
                        false,
                    )
                    .map_err(|e| format!("pre-tokenizer regex: {e}"))?;
                    (
                        Some(NFC.into()),
                        vec![split.into(), ByteLevel::new(false, false, false).into()],
                    )
                }
                "smollm" => (
                    None,
                    vec![
                        Digits::new(true).into(),
                        ByteLevel::new(false, true, true).into(),
                    ],
                ),
                other => {
                    return Err(format!(
                        "pre-tokenizer {other:?} is not supported (supported: qwen2, smollm)"
                    ));
                }
            };

        let mut vocab = Vocab::with_capacity(self.tokens.len());
        for (id, token) in self.tokens.iter().enumerate() {
            let id = u32::try_from(id).map_err(|_| "vocabulary too large".to_owned())?;
            vocab.insert(token.clone(), id);
        }
        let merges = self
            .merges
            .iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_owned(), b.to_owned()))
                    .ok_or_else(|| format!("malformed merge {m:?}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| format!("BPE model: {e}"))?;

        let mut tokenizer = Tokenizer::new(ModelWrapper::BPE(bpe));
        if let Some(n) = normalizer {
            tokenizer
                .with_normalizer(Some(n))
                .map_err(|e| format!("normalizer: {e}"))?;
        }
        tokenizer.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(Sequence::new(
            pre_tokenizers,
        ))));
        tokenizer.with_post_processor(Some(PostProcessorWrapper::ByteLevel(ByteLevel::new(
            false, false, false,
        ))));
        tokenizer.with_decoder(Some(DecoderWrapper::ByteLevel(ByteLevel::new(
            true, true, true,
        ))));

        let added = |kind: i64| {
            self.tokens
                .iter()
                .zip(&self.types)
                .filter(move |(_, t)| **t == kind)
                .map(move |(token, _)| {
                    AddedToken::from(token.clone(), kind == TYPE_CONTROL)
                        .normalized(false)
                        .single_word(false)
                        .lstrip(false)
                        .rstrip(false)
                })
                .collect::<Vec<_>>()
        };
        tokenizer
            .add_special_tokens(added(TYPE_CONTROL))
            .map_err(|e| format!("special tokens: {e}"))?;
        tokenizer
            .add_tokens(added(TYPE_USER_DEFINED))
            .map_err(|e| format!("added tokens: {e}"))?;
        Ok(tokenizer)
    }

    /// The id of a token string.
    pub(crate) fn id(&self, token: &str) -> Option<u32> {
        self.tokens
            .iter()
            .position(|t| t == token)
            .and_then(|i| u32::try_from(i).ok())
    }
}

/// The tokenizer of the GGUF model at `path`, identical to the reference converter's (special
/// tokens in the input text are recognised, as `tokenizer.json` tokenizers do).
pub fn tokenizer_from_gguf(path: &Path) -> Result<Tokenizer> {
    let mut file = crate::local::open_model(path)?;
    let content =
        Content::read(&mut BufReader::new(&mut file)).map_err(|e| LlmError::BadModel {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    let bad = |reason: String| LlmError::BadModel {
        path: path.to_owned(),
        reason,
    };
    GgufVocab::from_metadata(&content.metadata)
        .and_then(|v| v.tokenizer())
        .map_err(bad)
}

/// GPT-2's byte-level alphabet: byte → the printable character standing for it in the vocabulary.
fn byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let code = if printable {
            u32::from(b)
        } else {
            n += 1;
            255 + n
        };
        table[usize::from(b)] = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
    }
    table
}

/// Every token's bytes, for streaming decode.
#[derive(Debug, Clone)]
pub(crate) struct TokenTable {
    bytes: Vec<Box<[u8]>>,
}

impl TokenTable {
    /// Bytes per id, decoded like the ByteLevel decoder does (a token whose characters are not
    /// all in the byte alphabet, such as a user-defined added token, stands for its own UTF-8);
    /// control and unused tokens decode to nothing.
    pub(crate) fn new(vocab: &GgufVocab) -> Self {
        let alphabet = byte_to_char();
        let mut char_to_byte: HashMap<char, u8> = HashMap::with_capacity(256);
        for (b, c) in alphabet.iter().enumerate() {
            if let Ok(b) = u8::try_from(b) {
                char_to_byte.insert(*c, b);
            }
        }
        let bytes = vocab
            .tokens
            .iter()
            .zip(&vocab.types)
            .map(|(token, ty)| {
                if *ty == TYPE_CONTROL || *ty == TYPE_UNUSED {
                    return Box::default();
                }
                if *ty == TYPE_USER_DEFINED {
                    return token.as_bytes().into();
                }
                token
                    .chars()
                    .map(|c| char_to_byte.get(&c).copied())
                    .collect::<Option<Vec<u8>>>()
                    .unwrap_or_else(|| token.as_bytes().to_vec())
                    .into_boxed_slice()
            })
            .collect();
        TokenTable { bytes }
    }

    /// The bytes of `id` (empty for unknown ids).
    pub(crate) fn bytes(&self, id: u32) -> &[u8] {
        self.bytes.get(id as usize).map_or(&[], |b| b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_alphabet_is_gpt2s() {
        let t = byte_to_char();
        assert_eq!(t[usize::from(b'a')], 'a');
        assert_eq!(t[usize::from(b' ')], 'Ġ');
        assert_eq!(t[usize::from(b'\n')], 'Ċ');
        assert_eq!(t[0], 'Ā');
        let mut all: Vec<char> = t.to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 256);
    }
}
