//! [`LocalGguf`]: a quantized GGUF chat model run in-process on candle.
//!
//! Why in-process: the copilot must answer without a server, network or GPU, and the default
//! model (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, 491 MB) runs at interactive speed on a laptop CPU.
//!
//! **Loading.** The GGUF is read once: its metadata picks the architecture
//! (`general.architecture`: `qwen2` → our [`crate::qwen2`], adapted from candle-transformers'
//! `quantized_qwen2`; `llama` → candle's `quantized_llama`), rebuilds the tokenizer
//! ([`crate::gguf_tokenizer`]), checks that the chat template is ChatML and takes its default
//! system prompt (see [`crate::format_chatml`]), and gives the context length, capped (default
//! [`DEFAULT_MAX_CONTEXT`] = 4096 tokens; candle's llama cannot go beyond 4096, and the KV cache
//! and attention scores grow with it). On the CPU, weights stored in formats candle has no SIMD
//! kernel for (Q4_1, Q5_0, Q5_1: most of Qwen2.5-0.5B) are converted to Q8_0 as they are read
//! ([`LoadOptions::cpu_q8_requantize`]); on the 2-core development machine that made the default
//! model's prompt processing 2.2× and its generation 1.5× faster. A Qwen2 model keeps copies
//! of the linear layers candle has no fast many-token product for (8-bit tiles for the AVX-512
//! VNNI kernel of `gemm.rs`, else dense f32) when they fit [`LoadOptions::prefill_copy_bytes`]:
//! the 0.5B's prompts are processed 1.7× faster with the tiles than with dense f32, and 4.9× faster
//! than with candle's product alone.
//!
//! **Every call is a fresh conversation, and shares what it can.** The KV cache is cleared
//! before and after each call (the latter frees its memory between calls), so nothing of one
//! call's text can leak into another's answer. What is shared is exact arithmetic: for Qwen2
//! models the KV cache of recent prompts is kept ([`LoadOptions::prefix_cache_bytes`]), and a
//! prompt that begins with the same tokens as one of them starts from a copy of its cache
//! instead of recomputing it (the keys and values of a position depend only on the tokens up to
//! it). Clearing costs nothing; rebuilding the weights costs about a second for the 0.5B model
//! (re-reading the file, converting tensors, dequantizing the embedding table), so the weights
//! are kept.
//! One catch: candle's llama `ModelWeights` memoise every causal mask they build, keyed by
//! (chunk length, position), and never forget them; with prompts of ever new lengths that would
//! grow without bound. We count the masks our prompts create and rebuild the weights from the
//! still-open file once they pass [`MASK_CACHE_BUDGET`] bytes (a rare, bounded cost instead of a
//! leak).
//!
//! **Generation.** The prompt is processed in chunks of [`PREFILL_CHUNK`] tokens (bounding the
//! attention-score memory), then tokens are sampled one at a time with candle's
//! `LogitsProcessor`: greedy at temperature 0, else sampling with the request's seed (top-p when
//! given), after a mild repeat penalty ([`DEFAULT_REPEAT_PENALTY`]) over the last
//! [`REPEAT_LAST_N`] *generated* tokens. The prompt is left out of the penalty on purpose: a
//! grounded answer should be free to quote the passages it was given. Generation ends at
//! `<|im_end|>`, `<|endoftext|>`, the GGUF's EOS token, a new `<|im_start|>` turn, a stop string,
//! `max_tokens`, a full context window, or cancellation. Concurrent calls are serialised by a
//! mutex (one model, one KV cache).
//!
//! **Prompts that do not fit.** The prompt may use the context window minus
//! `min(max_tokens, context / 4)` tokens kept for the answer. When it is longer, the oldest
//! non-system messages are dropped first (the latest message is always kept); if the latest
//! message alone is still too long, its beginning is cut off (at a token boundary, keeping the
//! end, where a question usually is). Only when the system prompt leaves no room at all does the
//! call fail with [`LlmError::ContextOverflow`]. `prompt_tokens` reports what was actually used.
//!
//! Special-token strings inside message text (a document that contains `<|im_end|>`) are encoded
//! as plain text, so retrieved content cannot close a turn or forge a system message.

use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file::Content;
use candle_core::{DType, Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use candle_transformers::models::quantized_llama;

use crate::qwen2::{KvSnapshot, Qwen2};

use tokenizers::Tokenizer;

use crate::chat::{self, IM_END, IM_START};
use crate::error::{LlmError, Result};
use crate::gguf_tokenizer::{GgufVocab, TokenTable, meta_str, meta_u64};
use crate::requant;
use crate::stream::{StopFilter, Utf8Decoder};
use crate::{ChatRequest, ChatResponse, Finish, Llm, Message, Role};

/// Largest context window used by default, whatever the model supports.
pub const DEFAULT_MAX_CONTEXT: usize = 4096;
/// Prompt tokens processed per forward pass.
pub const PREFILL_CHUNK: usize = 512;
/// Repeat penalty applied to recently generated tokens (1.0 = off).
pub const DEFAULT_REPEAT_PENALTY: f32 = 1.1;
/// How many of the last generated tokens the repeat penalty looks at.
pub const REPEAT_LAST_N: usize = 64;
/// Bytes of memoised causal masks after which the weights are rebuilt (see the module docs).
pub const MASK_CACHE_BUDGET: usize = 64 << 20;

/// How a model is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Largest context window to use (the model's own limit applies too).
    pub max_context: usize,
    /// On the CPU, convert weights in formats candle has no SIMD kernels for (Q4_1, Q5_0, Q5_1)
    /// to Q8_0 while loading: several times faster matmuls for ~55 % more memory on those
    /// tensors (most of Qwen2.5-0.5B's weights are Q5_0). Ignored on GPUs.
    pub cpu_q8_requantize: bool,
    /// On the CPU, keep copies of a Qwen2 model's linear layers for prompt processing when
    /// they take at most this many bytes in all (0: never): 8-bit tiles (1.125 bytes per weight)
    /// where the CPU has AVX-512 VNNI, else dense f32 (4 bytes per weight), and none for the
    /// layers candle multiplies fast itself (Q4_K/Q6_K rows of whole 256-value blocks). The
    /// 0.5B model's tiles take 0.4 GB (dense f32: 1.26 GB); the 1.5B needs none.
    pub prefill_copy_bytes: usize,
    /// Keep the KV cache of recent prompts (up to this many bytes; 0: off) and start a new
    /// prompt from the longest one it begins with (Qwen2 models). The routing and text-to-SQL
    /// prompts begin with the same instructions and worked examples on every call.
    pub prefix_cache_bytes: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_context: DEFAULT_MAX_CONTEXT,
            cpu_q8_requantize: true,
            prefill_copy_bytes: DEFAULT_PREFILL_COPY_BYTES,
            prefix_cache_bytes: DEFAULT_PREFIX_CACHE_BYTES,
        }
    }
}

/// Default [`LoadOptions::prefill_copy_bytes`]: 1.5 GiB.
pub const DEFAULT_PREFILL_COPY_BYTES: usize = 3 << 29;
/// Default [`LoadOptions::prefix_cache_bytes`]: 96 MiB (about 8,000 positions of the 0.5B
/// model, 3,400 of the 1.5B).
pub const DEFAULT_PREFIX_CACHE_BYTES: usize = 96 << 20;
/// A cached prefix is used only when it saves at least this many positions.
const MIN_PREFIX_REUSE: usize = 16;

/// Sampler seed when the request gives none.
const DEFAULT_SEED: u64 = 299_792_458;

/// The model families this crate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arch {
    Qwen2,
    Llama,
}

impl Arch {
    fn name(self) -> &'static str {
        match self {
            Arch::Qwen2 => "qwen2",
            Arch::Llama => "llama",
        }
    }
}

enum Weights {
    Qwen2(Qwen2),
    Llama(quantized_llama::ModelWeights),
}

impl Weights {
    fn forward(&mut self, input: &Tensor, pos: usize) -> candle_core::Result<Tensor> {
        match self {
            Weights::Qwen2(m) => m.forward(input, pos),
            Weights::Llama(m) => m.forward(input, pos),
        }
    }

    fn clear_kv_cache(&mut self) {
        match self {
            Weights::Qwen2(m) => m.clear(),
            Weights::Llama(m) => m.clear_kv_cache(),
        }
    }
}

/// Recently processed prompts with a value each (their KV cache), least recently used first,
/// within a byte budget (see [`LoadOptions::prefix_cache_bytes`]).
struct PrefixCache<T> {
    entries: Vec<(Vec<u32>, T, usize)>,
    budget: usize,
}

impl<T> PrefixCache<T> {
    fn new(budget: usize) -> Self {
        PrefixCache {
            entries: Vec::new(),
            budget,
        }
    }

    /// The entry sharing the longest beginning with `ids`, and how many positions of it to
    /// reuse: at least [`MIN_PREFIX_REUSE`], and never all of `ids` (the last position must be
    /// computed: its logits start the answer). The entry becomes the most recently used.
    fn best(&mut self, ids: &[u32]) -> Option<(usize, &T)> {
        let (reuse, i) = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (cached, _, _))| {
                let common = cached.iter().zip(ids).take_while(|(a, b)| a == b).count();
                (common.min(ids.len().saturating_sub(1)), i)
            })
            .max()
            .filter(|(reuse, _)| *reuse >= MIN_PREFIX_REUSE)?;
        let entry = self.entries.remove(i);
        self.entries.push(entry);
        self.entries.last().map(|(_, value, _)| (reuse, value))
    }

    /// Adds `ids`, replacing entries it extends, then forgets the least recently used entries
    /// while over budget. A value larger than the whole budget is not kept.
    fn insert(&mut self, ids: Vec<u32>, value: T, bytes: usize) {
        if bytes > self.budget {
            return;
        }
        self.entries
            .retain(|(cached, _, _)| !(cached.len() <= ids.len() && ids.starts_with(cached)));
        self.entries.push((ids, value, bytes));
        let mut total: usize = self.entries.iter().map(|e| e.2).sum();
        while total > self.budget && !self.entries.is_empty() {
            total -= self.entries.remove(0).2;
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
    }
}

/// What the mutex guards: the weights (with their KV cache) and what is needed to rebuild them.
struct State {
    /// `None` only after a failed rebuild (the next call tries again).
    weights: Option<Weights>,
    /// The open model file (stays readable even if the path is replaced meanwhile).
    file: File,
    /// (chunk length, key length) of every mask the weights have memoised.
    masks: HashSet<(usize, usize)>,
    mask_bytes: usize,
    /// Recently processed prompts and their KV caches.
    prefixes: PrefixCache<KvSnapshot>,
}

/// A GGUF chat model (Qwen2/Qwen2.5 or Llama/SmolLM2) on candle.
pub struct LocalGguf {
    model_id: String,
    path: PathBuf,
    arch: Arch,
    device: Device,
    /// Encodes message text; special-token strings in it stay plain text.
    tokenizer: Tokenizer,
    table: TokenTable,
    im_start: u32,
    im_end: u32,
    /// Ids that end the answer.
    stop_ids: Vec<u32>,
    default_system: Option<String>,
    context: usize,
    /// Weights in the file (every tensor's elements).
    parameters: u64,
    /// Slow-on-CPU tensors are converted to Q8_0 when loading (see `requant.rs`).
    requantize: bool,
    prefill_copy_bytes: usize,
    prefix_cache_bytes: usize,
    repeat_penalty: f32,
    state: Mutex<State>,
}

impl fmt::Debug for LocalGguf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalGguf")
            .field("model_id", &self.model_id)
            .field("path", &self.path)
            .field("arch", &self.arch)
            .field("device", &self.device)
            .field("context", &self.context)
            .field("parameters", &self.parameters)
            .field("requantize", &self.requantize)
            .field("repeat_penalty", &self.repeat_penalty)
            .finish_non_exhaustive()
    }
}

/// The manifest name of a model file: the folder it sits in (`models/<name>/<file>`).
fn manifest_name(path: &Path) -> String {
    path.parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
        .unwrap_or("qwen2.5-coder-0.5b-instruct")
        .to_owned()
}

/// Opens a model file; a missing one names the command that fetches it.
pub(crate) fn open_model(path: &Path) -> Result<File> {
    File::open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            LlmError::ModelMissing {
                path: path.to_owned(),
                name: manifest_name(path),
            }
        } else {
            LlmError::Io {
                path: path.to_owned(),
                source,
            }
        }
    })
}

fn inference(e: candle_core::Error) -> LlmError {
    LlmError::Inference(e.to_string())
}

impl LocalGguf {
    /// Loads a GGUF model onto `device` with the default [`LoadOptions`] (context capped at
    /// [`DEFAULT_MAX_CONTEXT`]).
    pub fn load(path: &Path, device: &Device) -> Result<Self> {
        Self::load_with(path, device, &LoadOptions::default())
    }

    /// Loads a GGUF model with the context window capped at `max_context` tokens (and at the
    /// model's own limit; 4096 at most for llama-architecture models).
    pub fn load_with_context(path: &Path, device: &Device, max_context: usize) -> Result<Self> {
        let options = LoadOptions {
            max_context,
            ..LoadOptions::default()
        };
        Self::load_with(path, device, &options)
    }

    /// Loads a GGUF model onto `device`.
    pub fn load_with(path: &Path, device: &Device, options: &LoadOptions) -> Result<Self> {
        let started = Instant::now();
        let mut file = open_model(path)?;
        let bad = |reason: String| LlmError::BadModel {
            path: path.to_owned(),
            reason,
        };
        let content =
            Content::read(&mut BufReader::new(&mut file)).map_err(|e| bad(e.to_string()))?;
        let meta = &content.metadata;
        let arch = match meta_str(meta, "general.architecture") {
            Some("qwen2") => Arch::Qwen2,
            Some("llama") => Arch::Llama,
            Some(other) => {
                return Err(LlmError::UnsupportedArchitecture {
                    path: path.to_owned(),
                    arch: other.to_owned(),
                });
            }
            None => return Err(bad("metadata general.architecture is missing".into())),
        };

        let vocab = GgufVocab::from_metadata(meta).map_err(bad)?;
        let mut tokenizer = vocab.tokenizer().map_err(bad)?;
        tokenizer.set_encode_special_tokens(true);
        let table = TokenTable::new(&vocab);

        let template = meta_str(meta, "tokenizer.chat_template");
        if let Some(t) = template
            && !chat::is_chatml_template(t)
        {
            return Err(bad(
                "its chat template is not ChatML (<|im_start|>…<|im_end|>), the only prompt \
                 format supported"
                    .into(),
            ));
        }
        let default_system = template.and_then(chat::default_system_prompt);
        let special = |name: &str| {
            vocab
                .id(name)
                .ok_or_else(|| bad(format!("its vocabulary has no {name} token (ChatML)")))
        };
        let im_start = special(IM_START)?;
        let im_end = special(IM_END)?;
        let mut stop_ids = vec![im_end, im_start];
        stop_ids.extend(vocab.id("<|endoftext|>"));
        stop_ids.extend(vocab.eos);
        stop_ids.sort_unstable();
        stop_ids.dedup();

        let model_context = meta_u64(meta, &format!("{}.context_length", arch.name()))
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(DEFAULT_MAX_CONTEXT);
        let mut context = model_context.min(options.max_context.max(16));
        if arch == Arch::Llama {
            context = context.min(quantized_llama::MAX_SEQ_LEN);
        }

        let parameters = content
            .tensor_infos
            .values()
            .map(|t| t.shape.elem_count() as u64)
            .sum();
        let requantize = options.cpu_q8_requantize && device.is_cpu();
        let weights = build_weights(
            arch,
            content,
            &mut file,
            device,
            requantize,
            options.prefill_copy_bytes,
        )
        .map_err(bad)?;
        let model_id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("local-gguf")
            .to_owned();
        tracing::info!(
            model = %model_id,
            arch = arch.name(),
            context,
            parameters,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "loaded local LLM"
        );
        Ok(LocalGguf {
            model_id,
            path: path.to_owned(),
            arch,
            device: device.clone(),
            tokenizer,
            table,
            im_start,
            im_end,
            stop_ids,
            default_system,
            context,
            parameters,
            requantize,
            prefill_copy_bytes: options.prefill_copy_bytes,
            prefix_cache_bytes: options.prefix_cache_bytes,
            repeat_penalty: DEFAULT_REPEAT_PENALTY,
            state: Mutex::new(State {
                weights: Some(weights),
                file,
                masks: HashSet::new(),
                mask_bytes: 0,
                prefixes: PrefixCache::new(options.prefix_cache_bytes),
            }),
        })
    }

    /// Sets the repeat penalty (1.0 turns it off; default [`DEFAULT_REPEAT_PENALTY`]).
    pub fn with_repeat_penalty(mut self, penalty: f32) -> Self {
        self.repeat_penalty = if penalty.is_finite() && penalty > 0.0 {
            penalty
        } else {
            1.0
        };
        self
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `general.architecture` of the model (`qwen2` or `llama`).
    pub fn architecture(&self) -> &'static str {
        self.arch.name()
    }

    /// The system prompt used when a conversation has none (from the model's chat template).
    pub fn default_system_prompt(&self) -> Option<&str> {
        self.default_system.as_deref()
    }

    /// The tokenizer that encodes message text (special-token strings in the text are encoded
    /// as plain text; see [`crate::gguf_tokenizer::tokenizer_from_gguf`] for the reference one).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The exact ChatML text the model sees for these messages (before any truncation).
    pub fn prompt_text(&self, messages: &[Message]) -> String {
        chat::format_chatml(messages, self.default_system.as_deref())
    }

    /// Forgets the KV caches of earlier prompts (benchmarks use it to time cold prompts).
    pub fn clear_prefix_cache(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.prefixes.clear();
    }

    /// Whether the weights keep dense copies for prompt processing
    /// ([`LoadOptions::prefill_copy_bytes`]).
    pub fn has_prefill_copies(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        matches!(&state.weights, Some(Weights::Qwen2(m)) if m.has_prefill_copies())
    }

    /// Rebuilds the weights from the open model file (used once memoised masks pass their
    /// budget). Returns how long it took.
    pub fn rebuild_weights(&self) -> Result<Duration> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.rebuild(&mut state)
    }

    fn rebuild(&self, state: &mut State) -> Result<Duration> {
        let started = Instant::now();
        // Free the old weights first: two copies of a model may not fit.
        state.weights = None;
        state.masks.clear();
        state.mask_bytes = 0;
        state.prefixes.clear();
        let bad = |reason: String| LlmError::BadModel {
            path: self.path.clone(),
            reason,
        };
        state
            .file
            .seek(SeekFrom::Start(0))
            .map_err(|source| LlmError::Io {
                path: self.path.clone(),
                source,
            })?;
        let content =
            Content::read(&mut BufReader::new(&mut state.file)).map_err(|e| bad(e.to_string()))?;
        let weights = build_weights(
            self.arch,
            content,
            &mut state.file,
            &self.device,
            self.requantize,
            self.prefill_copy_bytes,
        )
        .map_err(bad)?;
        state.weights = Some(weights);
        let took = started.elapsed();
        tracing::debug!(model = %self.model_id, took_ms = took.as_millis() as u64, "rebuilt LLM weights");
        Ok(took)
    }

    fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.tokenizer
            .encode_fast(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| LlmError::Tokenizer(e.to_string()))
    }

    /// `<|im_start|>{role}\n{content}<|im_end|>\n` as ids.
    fn encode_turn(&self, m: &Message) -> Result<Vec<u32>> {
        let mut ids = vec![self.im_start];
        ids.extend(self.encode(&format!("{}\n{}", m.role.as_str(), m.content))?);
        ids.push(self.im_end);
        ids.extend(self.encode("\n")?);
        Ok(ids)
    }

    /// The token ids [`Llm::chat`] feeds the model for `req`: the ChatML prompt, fitted into
    /// the context window as the module docs describe.
    pub fn prompt_ids(&self, req: &ChatRequest) -> Result<Vec<u32>> {
        self.fit_prompt(
            &req.messages,
            req.assistant_prefix.as_deref().unwrap_or(""),
            self.reserve(req),
        )
    }

    /// Tokens kept free for the answer.
    fn reserve(&self, req: &ChatRequest) -> usize {
        req.max_tokens.min(self.context / 4).max(1)
    }

    /// The prompt ids, fitted into `context - reserve` tokens (see the module docs).
    fn fit_prompt(&self, messages: &[Message], prefix: &str, reserve: usize) -> Result<Vec<u32>> {
        if messages.is_empty() {
            return Err(LlmError::InvalidRequest(
                "the conversation has no messages".into(),
            ));
        }
        let budget = self.context.saturating_sub(reserve);
        let mut messages = chat::with_default_system(messages, self.default_system.as_deref());
        let mut tail = vec![self.im_start];
        tail.extend(self.encode(&format!("assistant\n{prefix}"))?);
        let mut turns = messages
            .iter()
            .map(|m| self.encode_turn(m))
            .collect::<Result<Vec<_>>>()?;
        let total = |turns: &[Vec<u32>]| turns.iter().map(Vec::len).sum::<usize>() + tail.len();

        // Drop the oldest non-system messages, never the latest one.
        while total(&turns) > budget {
            let last = messages.len() - 1;
            let Some(oldest) = (0..last).find(|&i| messages[i].role != Role::System) else {
                break;
            };
            tracing::debug!(
                tokens = turns[oldest].len(),
                "prompt too long: dropping the oldest message"
            );
            messages.remove(oldest);
            turns.remove(oldest);
        }
        // Then cut the beginning of the latest message, if it is not a system message.
        let last = messages.len() - 1;
        let mut guard = 0;
        while total(&turns) > budget && messages[last].role != Role::System && guard < 8 {
            guard += 1;
            let excess = total(&turns) - budget;
            let content = &messages[last].content;
            let enc = self
                .tokenizer
                .encode_fast(content.as_str(), false)
                .map_err(|e| LlmError::Tokenizer(e.to_string()))?;
            let offsets = enc.get_offsets();
            // A couple of extra tokens: re-tokenising at the cut may merge differently.
            let cut_tokens = excess + 2;
            if cut_tokens >= offsets.len() {
                messages[last].content.clear();
            } else {
                let mut at = offsets[cut_tokens].0.min(content.len());
                while !content.is_char_boundary(at) {
                    at += 1;
                }
                messages[last].content = content[at..].to_owned();
            }
            tracing::debug!(
                excess,
                "prompt too long: cutting the start of the latest message"
            );
            turns[last] = self.encode_turn(&messages[last])?;
            if messages[last].content.is_empty() {
                break;
            }
        }
        let needed = total(&turns);
        if needed > budget {
            return Err(LlmError::ContextOverflow {
                needed,
                limit: self.context,
                reserved: reserve,
            });
        }
        let mut ids: Vec<u32> = turns.into_iter().flatten().collect();
        ids.extend(tail);
        Ok(ids)
    }

    /// Runs the prompt through the model in chunks, starting after the longest cached prefix
    /// of it there is; returns the last position's logits.
    fn prefill(&self, state: &mut State, ids: &[u32]) -> Result<Tensor> {
        let mut logits = None;
        let mut pos = self.restore_prefix(state, ids)?;
        for chunk in ids[pos..].chunks(PREFILL_CHUNK) {
            // Only candle's llama memoises masks (our Qwen2 builds them per call).
            if self.arch == Arch::Llama
                && chunk.len() > 1
                && state.masks.insert((chunk.len(), pos + chunk.len()))
            {
                state.mask_bytes += chunk.len() * (pos + chunk.len());
            }
            let weights = state
                .weights
                .as_mut()
                .ok_or_else(|| LlmError::Inference("model weights are not loaded".into()))?;
            let input = Tensor::new(chunk, &self.device)
                .and_then(|t| t.unsqueeze(0))
                .map_err(inference)?;
            logits = Some(weights.forward(&input, pos).map_err(inference)?);
            pos += chunk.len();
        }
        let logits = logits.ok_or_else(|| LlmError::InvalidRequest("empty prompt".into()))?;
        self.remember_prefix(state, ids)?;
        Ok(logits)
    }

    /// Loads the KV cache of the longest cached prompt that `ids` begins with (leaving at least
    /// one position to compute, whose logits start the answer); returns the positions reused.
    fn restore_prefix(&self, state: &mut State, ids: &[u32]) -> Result<usize> {
        let State {
            weights, prefixes, ..
        } = state;
        let Some(Weights::Qwen2(model)) = weights.as_mut() else {
            return Ok(0);
        };
        let Some((reuse, kv)) = prefixes.best(ids) else {
            return Ok(0);
        };
        model
            .restore(&kv.prefix(reuse).map_err(inference)?)
            .map_err(inference)?;
        tracing::debug!(
            reused = reuse,
            prompt = ids.len(),
            "prompt prefix from the KV cache"
        );
        Ok(reuse)
    }

    /// Keeps a copy of the prompt's KV cache for later prompts that begin the same way.
    fn remember_prefix(&self, state: &mut State, ids: &[u32]) -> Result<()> {
        if self.prefix_cache_bytes == 0 || ids.len() <= MIN_PREFIX_REUSE {
            return Ok(());
        }
        let Some(Weights::Qwen2(model)) = state.weights.as_ref() else {
            return Ok(());
        };
        let Some(kv) = model.snapshot(ids.len()).map_err(inference)? else {
            return Ok(());
        };
        let bytes = kv.bytes();
        state.prefixes.insert(ids.to_vec(), kv, bytes);
        Ok(())
    }

    /// Runs `call` on the model with an empty KV cache, emptied again after it (see the module
    /// docs), rebuilding the weights first when they are gone or their masks have grown.
    fn with_empty_cache<T>(&self, call: impl FnOnce(&mut State) -> Result<T>) -> Result<T> {
        // A panic in an earlier call leaves nothing to trust but the weights, and the KV cache
        // is cleared below anyway.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.weights.is_none() || state.mask_bytes > MASK_CACHE_BUDGET {
            self.rebuild(&mut state)?;
        }
        if let Some(w) = state.weights.as_mut() {
            w.clear_kv_cache();
        }
        let result = call(&mut state);
        if let Some(w) = state.weights.as_mut() {
            w.clear_kv_cache();
        }
        result
    }

    fn generate(
        &self,
        state: &mut State,
        ids: &[u32],
        req: &ChatRequest,
        started: Instant,
        on_token: &mut dyn FnMut(&str) -> bool,
    ) -> Result<ChatResponse> {
        let mut response = ChatResponse {
            text: String::new(),
            prompt_tokens: ids.len(),
            completion_tokens: 0,
            finish: Finish::MaxTokens,
            elapsed: Duration::ZERO,
            time_to_first_token: Duration::ZERO,
        };
        let done = |mut r: ChatResponse, finish: Finish| {
            r.finish = finish;
            r.elapsed = started.elapsed();
            if r.completion_tokens == 0 {
                r.time_to_first_token = r.elapsed;
            }
            r
        };
        if req.max_tokens == 0 {
            return Ok(done(response, Finish::MaxTokens));
        }

        let sampling = if req.temperature.is_nan() || req.temperature <= 1e-7 {
            Sampling::ArgMax
        } else {
            match req.top_p {
                Some(p) if p > 0.0 && p < 1.0 => Sampling::TopP {
                    p,
                    temperature: req.temperature,
                },
                _ => Sampling::All {
                    temperature: req.temperature,
                },
            }
        };
        let mut sampler =
            LogitsProcessor::from_sampling(req.seed.unwrap_or(DEFAULT_SEED), sampling);
        let mut decoder = Utf8Decoder::default();
        let mut stops = StopFilter::new(&req.stop);
        let mut generated: Vec<u32> = Vec::new();
        let mut pos = ids.len();
        let mut logits = self.prefill(state, ids)?;

        let finish = loop {
            let mut step = logits
                .squeeze(0)
                .and_then(|l| l.to_dtype(DType::F32))
                .map_err(inference)?;
            if self.repeat_penalty != 1.0 && !generated.is_empty() {
                let recent = &generated[generated.len().saturating_sub(REPEAT_LAST_N)..];
                step = candle_transformers::utils::apply_repeat_penalty(
                    &step,
                    self.repeat_penalty,
                    recent,
                )
                .map_err(inference)?;
            }
            let next = sampler.sample(&step).map_err(inference)?;
            if generated.is_empty() {
                response.time_to_first_token = started.elapsed();
            }
            if self.stop_ids.contains(&next) {
                break Finish::Eos;
            }
            generated.push(next);
            response.completion_tokens = generated.len();

            let piece = decoder.push(self.table.bytes(next));
            if !piece.is_empty() {
                let filtered = stops.push(&piece);
                if !filtered.emit.is_empty() {
                    response.text.push_str(&filtered.emit);
                    if !on_token(&filtered.emit) {
                        break Finish::Cancelled;
                    }
                }
                if filtered.stopped {
                    break Finish::Stop;
                }
            }
            if generated.len() >= req.max_tokens || pos >= self.context {
                break Finish::MaxTokens;
            }
            let weights = state
                .weights
                .as_mut()
                .ok_or_else(|| LlmError::Inference("model weights are not loaded".into()))?;
            let input = Tensor::new(&[next], &self.device)
                .and_then(|t| t.unsqueeze(0))
                .map_err(inference)?;
            logits = weights.forward(&input, pos).map_err(inference)?;
            pos += 1;
        };

        if matches!(finish, Finish::Eos | Finish::MaxTokens) {
            // Text held back for a stop string that never came belongs to the answer; a
            // character cut off by the token limit does not (it would show as garbage).
            let rest = stops.finish();
            if !rest.is_empty() {
                response.text.push_str(&rest);
                // The answer is complete either way; a `false` here has nothing left to stop.
                let _ = on_token(&rest);
            }
            if decoder.has_pending() {
                tracing::debug!("answer ended inside a UTF-8 character; dropped its bytes");
            }
        }
        Ok(done(response, finish))
    }
}

fn build_weights(
    arch: Arch,
    mut content: Content,
    file: &mut File,
    device: &Device,
    requantize: bool,
    prefill_copy_bytes: usize,
) -> Result<Weights, String> {
    fn build<R: Read + Seek>(
        arch: Arch,
        content: Content,
        reader: &mut R,
        device: &Device,
        prefill_copy_bytes: usize,
    ) -> candle_core::Result<Weights> {
        Ok(match arch {
            Arch::Qwen2 => Weights::Qwen2(Qwen2::from_gguf(
                content,
                reader,
                device,
                prefill_copy_bytes,
            )?),
            Arch::Llama => Weights::Llama(quantized_llama::ModelWeights::from_gguf(
                content, reader, device,
            )?),
        })
    }
    if requantize {
        let (mut reader, converted) =
            requant::prepare(&mut content, file).map_err(|e| e.to_string())?;
        tracing::debug!(converted, "tensors converted to Q8_0 for the CPU");
        build(arch, content, &mut reader, device, prefill_copy_bytes)
    } else {
        build(arch, content, file, device, prefill_copy_bytes)
    }
    .map_err(|e| e.to_string())
}

impl Llm for LocalGguf {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn context_tokens(&self) -> usize {
        self.context
    }

    fn parameters(&self) -> Option<u64> {
        Some(self.parameters)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.tokenizer
            .encode_fast(text, false)
            .map(|e| e.len())
            .unwrap_or_else(|_| crate::openai::estimate_tokens(text))
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_token: &mut dyn FnMut(&str) -> bool,
    ) -> Result<ChatResponse> {
        let started = Instant::now();
        let ids = self.prompt_ids(req)?;
        self.with_empty_cache(|state| self.generate(state, &ids, req, started, on_token))
    }

    fn first_word_probabilities(
        &self,
        req: &ChatRequest,
        words: &[&str],
    ) -> Result<Option<Vec<f32>>> {
        let ids = self.prompt_ids(req)?;
        let logits: Vec<f32> = self
            .with_empty_cache(|state| self.prefill(state, &ids))?
            .squeeze(0)
            .and_then(|l| l.to_dtype(DType::F32))
            .and_then(|l| l.to_vec1())
            .map_err(inference)?;
        let probabilities = softmax(&logits);
        let mut out = Vec::with_capacity(words.len());
        for word in words {
            let mut tokens = Vec::new();
            for spelling in spellings(word) {
                if let Some(&first) = self.encode(&spelling)?.first()
                    && !tokens.contains(&first)
                {
                    tokens.push(first);
                }
            }
            out.push(
                tokens
                    .iter()
                    .filter_map(|&t| probabilities.get(t as usize))
                    .sum(),
            );
        }
        Ok(Some(out))
    }
}

/// `word` as written, capitalised and in lower case (each once).
fn spellings(word: &str) -> Vec<String> {
    let mut chars = word.chars();
    let capitalised = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect::<String>())
        .unwrap_or_default();
    let mut out = vec![word.to_string()];
    for s in [capitalised, word.to_lowercase()] {
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The probabilities `logits` stand for.
fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = logits.iter().map(|&l| (l - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    if sum > 0.0 && sum.is_finite() {
        exps.iter().map(|e| e / sum).collect()
    } else {
        vec![0.0; logits.len()]
    }
}

#[cfg(test)]
mod first_word_tests {
    use super::*;

    #[test]
    fn a_word_is_looked_up_as_written_capitalised_and_in_lower_case() {
        assert_eq!(spellings("yes"), ["yes", "Yes"]);
        assert_eq!(spellings("No"), ["No", "no"]);
        assert_eq!(spellings("是"), ["是"]);
        assert_eq!(spellings(""), [""]);
    }

    #[test]
    fn softmax_gives_probabilities() {
        let p = softmax(&[1.0, 1.0, f32::NEG_INFINITY]);
        assert_eq!(p, [0.5, 0.5, 0.0]);
        let p = softmax(&[1000.0, 0.0]);
        assert!((p[0] - 1.0).abs() < 1e-6 && p[1] < 1e-6, "{p:?}");
        assert_eq!(softmax(&[f32::NAN, 0.0]).iter().sum::<f32>(), 0.0);
    }
}

#[cfg(test)]
mod prefix_cache_tests {
    use super::*;

    fn ids(n: u32) -> Vec<u32> {
        (0..n).collect()
    }

    #[test]
    fn longest_shared_beginning_wins_and_budget_evicts_least_recently_used() {
        let mut cache = PrefixCache::new(100);
        cache.insert(ids(40), "forty", 30);
        let mut other = ids(30);
        other[20] = 999;
        cache.insert(other.clone(), "other", 30);
        // 40 shared positions beat 20.
        assert_eq!(cache.best(&ids(50)), Some((40, &"forty")));
        // The whole prompt is never reused: its last position gives the logits.
        assert_eq!(cache.best(&ids(40)), Some((39, &"forty")));
        // Too short a beginning in common is not worth it.
        assert_eq!(cache.best(&[0, 1, 2, 7]), None);
        assert_eq!(cache.best(&other[..20]), Some((19, &"forty")));
        // "other" is now the least recently used: a third entry over budget evicts it.
        cache.insert(vec![5; 30], "fives", 50);
        assert_eq!(cache.entries.len(), 2);
        assert!(
            cache
                .best(&other)
                .is_some_and(|(n, v)| n == 20 && *v == "forty")
        );
        // An entry the new prompt extends is replaced by it.
        cache.insert(ids(60), "sixty", 20);
        assert!(cache.entries.iter().all(|e| e.1 != "forty"));
        assert_eq!(cache.best(&ids(70)), Some((60, &"sixty")));
        // Larger than the whole budget: not kept.
        cache.insert(vec![9; 20], "huge", 101);
        assert!(cache.best(&[9; 20]).is_none());
        cache.clear();
        assert!(cache.best(&ids(50)).is_none());
    }
}
