//! The Qwen2 forward pass for quantized GGUF weights.
//!
//! Adapted from candle-transformers' `models::quantized_qwen2` (Apache-2.0 / MIT), whose
//! structure (weights, RoPE, RMSNorm, SwiGLU) it keeps. What changed, and why:
//!
//! * **The KV cache is ours.** It lives in preallocated per-layer buffers written in place
//!   (`slice_set`), can be cut back to any length ([`Qwen2::truncate`]) and copied out and back
//!   ([`Qwen2::snapshot`], [`Qwen2::restore`]). That is what lets [`crate::LocalGguf`] reuse the
//!   computed prefix of a prompt it saw before (the worked examples of the routing and SQL
//!   prompts are the same on every call). candle's version appends with `Tensor::cat` (copying
//!   the whole cache on every token) and keeps the cache private.
//! * **Grouped-query attention without copies.** Qwen2 has fewer key/value heads than query
//!   heads (0.5B: 14 and 2). candle repeats the keys and values for every query head before
//!   each product — on every layer, for every generated token, a copy of 7× the cache. Here
//!   the query heads that share a key/value head are laid side by side instead
//!   (`[b, kv_heads, group × seq, head_dim]`), so one product per key/value head serves them
//!   all.
//! * **The causal mask is an additive bias built per call**, not a memoised table per (chunk,
//!   position) that grows with every new prompt length.
//! * **Copies for prompt processing.** On the CPU, candle's quantized product is fast for one
//!   row (generation) but slow for many (prompt processing) in the Q8_0 format the 0.5B model
//!   is converted to. [`Qwen2::from_gguf`] keeps, when they fit the caller's byte budget, a
//!   copy of such layers for chunks of several tokens: 8-bit tiles for the AVX-512 VNNI kernel
//!   of `crate::gemm`, or dense f32 for candle's GEMM on other CPUs (measured on the 0.5B,
//!   551-token prompt: 88 tokens/s without copies, 250 with dense f32, 427 with the tiles;
//!   docs/measurements.md). Layers candle multiplies fast itself (Q4_K/Q6_K) get no copy.
//! * **One-token products over the compact K-quant blocks** (`crate::gemv`) where the CPU has
//!   AVX-512 or AVX2: generation streams every weight once per token, and candle's repacked
//!   Q4_K copy is a third larger than the GGUF's blocks.
//! * **The token table stays quantized**; rows are dequantized when looked up, and with tied
//!   embeddings the same tensor is the output layer.

use crate::gemm::{self, PackedQ8};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor, gguf_file};
use candle_core::{D, DType, Device, IndexOp, Module, Result, Tensor};
use candle_transformers::quantized_nn::RmsNorm;
use std::sync::Arc;

/// Chunks of at least this many tokens use the prompt-processing copies when there are any: every chunk
/// of a prompt, so a prompt computes the same whether or not its beginning came from the cache.
const DENSE_MIN_ROWS: usize = 2;
/// KV buffers grow in steps of this many positions.
const KV_STEP: usize = 256;

/// A copy of a layer's weights kept for prompt processing (several tokens at once).
#[derive(Debug, Clone)]
enum PrefillCopy {
    /// 8-bit tiles for the AVX-512 VNNI kernel (`crate::gemm`), used for single tokens too:
    /// there it measured at least as fast as candle's one-row Q8_0 product (0.5B model,
    /// 39–47 against 38–41 tokens/s, within run-to-run noise).
    Packed(PackedQ8),
    /// Dequantized f32 weights for candle's f32 GEMM (CPUs without that kernel).
    Dense(Tensor),
}

/// How a layer is prepared for prompt processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefill {
    /// candle's quantized product, no copy.
    Quantized,
    Packed,
    Dense,
}

impl Prefill {
    /// The best path for a layer's format and shape on this CPU: candle's own tiled int8
    /// kernels where they apply (Q4_K/Q6_K rows of whole 256-value blocks: as fast as ours,
    /// measured on the 1.5B model, with no copy), else our 8-bit tiles (the 0.5B's Q8_0
    /// layers, whose 896-value rows candle's tiles cannot take), else dense f32.
    fn for_layer(dtype: GgmlDType, rows: usize, cols: usize) -> Self {
        if matches!(dtype, GgmlDType::Q4K | GgmlDType::Q6K) && cols.is_multiple_of(256) {
            Prefill::Quantized
        } else if gemm::packable(rows, cols) {
            Prefill::Packed
        } else {
            Prefill::Dense
        }
    }

    /// Bytes of the copy.
    fn bytes(self, rows: usize, cols: usize) -> usize {
        match self {
            Prefill::Quantized => 0,
            Prefill::Packed => gemm::packed_bytes(rows, cols),
            Prefill::Dense => rows * cols * DType::F32.size_in_bytes(),
        }
    }
}

/// A linear layer: quantized weights, and optionally a copy for chunks of several tokens.
#[derive(Debug, Clone)]
struct Linear {
    quantized: QMatMul,
    prefill: Option<PrefillCopy>,
}

/// `xs · weightsᵀ`, one row through [`crate::gemv`] where it has a kernel for the weights (see
/// there why), otherwise candle's quantized product.
fn quantized_forward(weights: &QMatMul, xs: &Tensor) -> Result<Tensor> {
    if let QMatMul::QTensor(w) = weights
        && let Some(ys) = crate::gemv::forward_one_row(w, xs)?
    {
        return Ok(ys);
    }
    weights.forward(xs)
}

impl Linear {
    fn new(weights: QTensor, prefill: Prefill) -> Result<Self> {
        let prefill = match prefill {
            Prefill::Quantized => None,
            Prefill::Packed => PackedQ8::new(&weights)?.map(PrefillCopy::Packed),
            Prefill::Dense => Some(PrefillCopy::Dense(weights.dequantize(&weights.device())?)),
        };
        Ok(Linear {
            quantized: QMatMul::from_qtensor(weights)?,
            prefill,
        })
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match &self.prefill {
            Some(PrefillCopy::Packed(w)) => w.matmul(xs),
            Some(PrefillCopy::Dense(w)) if xs.dim(D::Minus2)? >= DENSE_MIN_ROWS => {
                let w = match *xs.dims() {
                    [b1, b2, _, _] => w.broadcast_left((b1, b2))?.t()?,
                    [b, _, _] => w.broadcast_left(b)?.t()?,
                    _ => w.t()?,
                };
                xs.matmul(&w)
            }
            _ => quantized_forward(&self.quantized, xs),
        }
    }
}

#[derive(Debug, Clone)]
struct Mlp {
    gate: Linear,
    down: Linear,
    up: Linear,
}

impl Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let gate = candle_nn::ops::silu(&self.gate.forward(xs)?)?;
        self.down.forward(&(gate * self.up.forward(xs)?)?)
    }
}

/// One layer's keys and values: `[b, kv_heads, capacity, head_dim]` buffers, the first `len`
/// positions valid.
#[derive(Debug, Clone, Default)]
struct KvCache {
    k: Option<Tensor>,
    v: Option<Tensor>,
    len: usize,
}

impl KvCache {
    /// Writes `k`/`v` (`[b, kv_heads, seq, head_dim]`) at `self.len` and returns views of all
    /// valid positions.
    fn append(&mut self, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let seq = k.dim(2)?;
        let need = self.len + seq;
        let capacity = self.k.as_ref().map(|t| t.dim(2)).transpose()?.unwrap_or(0);
        if need > capacity {
            let grown = need.div_ceil(KV_STEP) * KV_STEP;
            self.k = Some(self.grow(self.k.as_ref(), k, grown)?);
            self.v = Some(self.grow(self.v.as_ref(), v, grown)?);
        }
        let (Some(kc), Some(vc)) = (&self.k, &self.v) else {
            candle_core::bail!("KV cache buffers missing");
        };
        kc.slice_set(&k.contiguous()?, 2, self.len)?;
        vc.slice_set(&v.contiguous()?, 2, self.len)?;
        self.len = need;
        Ok((kc.narrow(2, 0, need)?, vc.narrow(2, 0, need)?))
    }

    /// A buffer of `capacity` positions holding the valid part of `old`.
    fn grow(&self, old: Option<&Tensor>, like: &Tensor, capacity: usize) -> Result<Tensor> {
        let (b, h, _, d) = like.dims4()?;
        let buffer = Tensor::zeros((b, h, capacity, d), like.dtype(), like.device())?;
        if let Some(old) = old
            && self.len > 0
        {
            buffer.slice_set(&old.narrow(2, 0, self.len)?.contiguous()?, 2, 0)?;
        }
        Ok(buffer)
    }

    /// Copies of the first `len` positions.
    fn copy_prefix(&self, len: usize) -> Result<Option<(Tensor, Tensor)>> {
        match (&self.k, &self.v) {
            (Some(k), Some(v)) if len > 0 && len <= self.len => Ok(Some((
                k.narrow(2, 0, len)?.copy()?,
                v.narrow(2, 0, len)?.copy()?,
            ))),
            _ => Ok(None),
        }
    }
}

#[derive(Debug, Clone)]
struct Layer {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    bq: Tensor,
    bk: Tensor,
    bv: Tensor,
    wo: Linear,
    attention_norm: RmsNorm,
    mlp: Mlp,
    ffn_norm: RmsNorm,
    cache: KvCache,
}

/// The key/value tensors of a prompt prefix, one pair per layer, `[b, kv_heads, len,
/// head_dim]` each (independent copies).
#[derive(Debug, Clone)]
pub struct KvSnapshot {
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
}

impl KvSnapshot {
    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no position.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Memory the tensors take.
    pub fn bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|(k, v)| (k.elem_count() + v.elem_count()) * k.dtype().size_in_bytes())
            .sum()
    }

    /// The first `len` positions of this snapshot (shares nothing mutable: the model copies a
    /// snapshot into its own buffers when restoring).
    pub fn prefix(&self, len: usize) -> Result<KvSnapshot> {
        let len = len.min(self.len);
        let layers = self
            .layers
            .iter()
            .map(|(k, v)| Ok((k.narrow(2, 0, len)?, v.narrow(2, 0, len)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(KvSnapshot { layers, len })
    }
}

/// Qwen2 weights and KV cache.
#[derive(Debug, Clone)]
pub struct Qwen2 {
    /// The token table, quantized as stored: rows are dequantized when looked up (an f32 copy
    /// of the table would take 0.5–0.9 GB), and with tied embeddings it is the output layer's
    /// weights too.
    token_embd: Arc<QTensor>,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: QMatMul,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    cos: Tensor,
    sin: Tensor,
    has_dense: bool,
}

fn rope_tables(
    head_dim: usize,
    freq_base: f32,
    context: usize,
    device: &Device,
) -> Result<(Tensor, Tensor)> {
    let theta: Vec<f32> = (0..head_dim)
        .step_by(2)
        .map(|i| 1f32 / freq_base.powf(i as f32 / head_dim as f32))
        .collect();
    let theta = Tensor::new(theta.as_slice(), device)?;
    let positions = Tensor::arange(0, context as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((context, 1))?;
    let angles = positions.matmul(&theta.reshape((1, theta.elem_count()))?)?;
    Ok((angles.cos()?, angles.sin()?))
}

impl Qwen2 {
    /// Reads the weights of a `qwen2` GGUF. Dense f32 copies of the linear layers are kept for
    /// prompt processing when they take at most `dense_budget` bytes (0: never) and the device
    /// is the CPU.
    pub fn from_gguf<R: std::io::Seek + std::io::Read>(
        ct: gguf_file::Content,
        reader: &mut R,
        device: &Device,
        dense_budget: usize,
    ) -> Result<Self> {
        let md = |key: &str| match ct.metadata.get(key) {
            Some(v) => Ok(v),
            None => candle_core::bail!("cannot find {key} in metadata"),
        };
        let n_head = md("qwen2.attention.head_count")?.to_u32()? as usize;
        let n_kv_head = md("qwen2.attention.head_count_kv")?.to_u32()? as usize;
        let embedding_length = md("qwen2.embedding_length")?.to_u32()? as usize;
        let context = md("qwen2.context_length")?.to_u32()? as usize;
        let block_count = md("qwen2.block_count")?.to_u32()? as usize;
        let eps = f64::from(md("qwen2.attention.layer_norm_rms_epsilon")?.to_f32()?);
        let freq_base = md("qwen2.rope.freq_base")
            .and_then(|m| m.to_f32())
            .unwrap_or(10_000f32);
        if n_head == 0 || n_kv_head == 0 || !n_head.is_multiple_of(n_kv_head) {
            candle_core::bail!("unsupported head counts {n_head}/{n_kv_head}");
        }
        let head_dim = embedding_length / n_head;

        const LINEAR: [&str; 7] = [
            "attn_q",
            "attn_k",
            "attn_v",
            "attn_output",
            "ffn_gate",
            "ffn_down",
            "ffn_up",
        ];
        // Prompt-processing copies, chosen per layer (`Prefill::for_layer`), kept only when
        // all of them fit the budget.
        let copies_bytes: usize = (0..block_count)
            .flat_map(|i| LINEAR.iter().map(move |n| format!("blk.{i}.{n}.weight")))
            .filter_map(|name| ct.tensor_infos.get(&name))
            .filter_map(|info| {
                let (rows, cols) = info.shape.dims2().ok()?;
                Some(Prefill::for_layer(info.ggml_dtype, rows, cols).bytes(rows, cols))
            })
            .sum();
        let copies = device.is_cpu() && copies_bytes > 0 && copies_bytes <= dense_budget;

        let token_embd = Arc::new(ct.tensor(reader, "token_embd.weight", device)?);
        let norm = RmsNorm::from_qtensor(ct.tensor(reader, "output_norm.weight", device)?, eps)?;
        let output = match ct.tensor(reader, "output.weight", device) {
            Ok(w) => QMatMul::from_qtensor(w)?,
            // Tied embeddings.
            Err(_) => QMatMul::from_arc(token_embd.clone())?,
        };
        let (cos, sin) = rope_tables(head_dim, freq_base, context, device)?;

        let mut layers = Vec::with_capacity(block_count);
        for i in 0..block_count {
            let mut linear = |name: &str| -> Result<Linear> {
                let weights = ct.tensor(reader, &format!("blk.{i}.{name}.weight"), device)?;
                let prefill = match weights.shape().dims2() {
                    Ok((rows, cols)) if copies => Prefill::for_layer(weights.dtype(), rows, cols),
                    _ => Prefill::Quantized,
                };
                Linear::new(weights, prefill)
            };
            let wq = linear("attn_q")?;
            let wk = linear("attn_k")?;
            let wv = linear("attn_v")?;
            let wo = linear("attn_output")?;
            let mlp = Mlp {
                gate: linear("ffn_gate")?,
                down: linear("ffn_down")?,
                up: linear("ffn_up")?,
            };
            let mut vector = |name: &str| -> Result<Tensor> {
                ct.tensor(reader, &format!("blk.{i}.{name}"), device)?
                    .dequantize(device)
            };
            let bq = vector("attn_q.bias")?;
            let bk = vector("attn_k.bias")?;
            let bv = vector("attn_v.bias")?;
            let attention_norm = RmsNorm::from_qtensor(
                ct.tensor(reader, &format!("blk.{i}.attn_norm.weight"), device)?,
                eps,
            )?;
            let ffn_norm = RmsNorm::from_qtensor(
                ct.tensor(reader, &format!("blk.{i}.ffn_norm.weight"), device)?,
                eps,
            )?;
            layers.push(Layer {
                wq,
                wk,
                wv,
                bq,
                bk,
                bv,
                wo,
                attention_norm,
                mlp,
                ffn_norm,
                cache: KvCache::default(),
            });
        }
        tracing::debug!(copies, copies_bytes, "qwen2 weights built");
        Ok(Qwen2 {
            token_embd,
            layers,
            norm,
            output,
            n_head,
            n_kv_head,
            head_dim,
            cos,
            sin,
            has_dense: copies,
        })
    }

    /// Whether dense copies for prompt processing were kept.
    pub fn has_prefill_copies(&self) -> bool {
        self.has_dense
    }

    /// Positions in the KV cache.
    pub fn kv_len(&self) -> usize {
        self.layers.first().map_or(0, |l| l.cache.len)
    }

    /// Forgets every position from `len` on (the buffers stay allocated).
    pub fn truncate(&mut self, len: usize) {
        for layer in &mut self.layers {
            layer.cache.len = layer.cache.len.min(len);
        }
    }

    /// Frees the KV buffers.
    pub fn clear(&mut self) {
        for layer in &mut self.layers {
            layer.cache = KvCache::default();
        }
    }

    /// Copies of the first `len` cached positions (`None` when fewer are cached).
    pub fn snapshot(&self, len: usize) -> Result<Option<KvSnapshot>> {
        if len == 0 || len > self.kv_len() {
            return Ok(None);
        }
        let mut layers = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            match layer.cache.copy_prefix(len)? {
                Some(kv) => layers.push(kv),
                None => return Ok(None),
            }
        }
        Ok(Some(KvSnapshot { layers, len }))
    }

    /// Replaces the cache with a copy of `snapshot`; the next forward pass starts at
    /// `snapshot.len()`.
    pub fn restore(&mut self, snapshot: &KvSnapshot) -> Result<()> {
        if snapshot.layers.len() != self.layers.len() {
            candle_core::bail!("snapshot of another model");
        }
        for (layer, (k, v)) in self.layers.iter_mut().zip(&snapshot.layers) {
            layer.cache.len = 0;
            layer.cache.append(k, v)?;
        }
        Ok(())
    }

    /// Runs `x` (`[b, seq]` token ids) at positions `index_pos..index_pos + seq`, after
    /// forgetting any cached position from `index_pos` on; returns the last position's logits.
    pub fn forward(&mut self, x: &Tensor, index_pos: usize) -> Result<Tensor> {
        let (b, seq) = x.dims2()?;
        if index_pos > self.kv_len() {
            candle_core::bail!(
                "position {index_pos} is past the {} cached positions",
                self.kv_len()
            );
        }
        self.truncate(index_pos);
        let kv_len = index_pos + seq;
        let group = self.n_head / self.n_kv_head;
        // Row r of a group stacks query heads: row = head_in_group * seq + i, so the bias of
        // query position i repeats once per head of the group.
        let bias = if seq > 1 {
            let rows: Vec<f32> = (0..seq)
                .flat_map(|i| {
                    (0..kv_len).map(move |j| {
                        if j > index_pos + i {
                            f32::NEG_INFINITY
                        } else {
                            0.0
                        }
                    })
                })
                .collect();
            let one = Tensor::from_vec(rows, (seq, kv_len), x.device())?;
            Some(one.repeat((group, 1))?)
        } else {
            None
        };
        let cos = self.cos.narrow(0, index_pos, seq)?;
        let sin = self.sin.narrow(0, index_pos, seq)?;
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        let (n_head, n_kv, hd) = (self.n_head, self.n_kv_head, self.head_dim);

        let mut hidden = self.token_embd.embedding(x)?;
        for layer in &mut self.layers {
            let residual = &hidden;
            let xs = layer.attention_norm.forward(&hidden)?;
            let q = layer.wq.forward(&xs)?.broadcast_add(&layer.bq)?;
            let k = layer.wk.forward(&xs)?.broadcast_add(&layer.bk)?;
            let v = layer.wv.forward(&xs)?.broadcast_add(&layer.bv)?;
            let q = q
                .reshape((b, seq, n_head, hd))?
                .transpose(1, 2)?
                .contiguous()?;
            let k = k
                .reshape((b, seq, n_kv, hd))?
                .transpose(1, 2)?
                .contiguous()?;
            let v = v
                .reshape((b, seq, n_kv, hd))?
                .transpose(1, 2)?
                .contiguous()?;
            let q = candle_nn::rotary_emb::rope(&q, &cos, &sin)?;
            let k = candle_nn::rotary_emb::rope(&k, &cos, &sin)?;
            let (k, v) = layer.cache.append(&k, &v)?;

            // [b, n_head, seq, hd] → [b, n_kv, group·seq, hd]: heads h = kv·group + r.
            let q = (q * scale)?.reshape((b, n_kv, group * seq, hd))?;
            let scores = q.matmul(&k.t()?)?;
            let scores = match &bias {
                Some(bias) => scores.broadcast_add(bias)?,
                None => scores,
            };
            let weights = candle_nn::ops::softmax_last_dim(&scores)?;
            let y = weights.matmul(&v)?;
            let y =
                y.reshape((b, n_head, seq, hd))?
                    .transpose(1, 2)?
                    .reshape((b, seq, n_head * hd))?;
            let attn = layer.wo.forward(&y)?;
            let hidden_attn = (attn + residual)?;

            let residual = &hidden_attn;
            let xs = layer.ffn_norm.forward(&hidden_attn)?;
            let xs = layer.mlp.forward(&xs)?;
            hidden = (xs + residual)?;
        }
        let hidden = self.norm.forward(&hidden)?;
        let last = hidden.i((.., seq - 1, ..))?;
        quantized_forward(&self.output, &last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemv;
    use candle_core::quantized::GgmlDType;
    use candle_core::quantized::gguf_file::Value;
    use candle_transformers::models::quantized_qwen2;

    /// A tiny random Qwen2 (4 query heads sharing 2 key/value heads, tied embeddings) written
    /// as GGUF, so this model can be checked against candle's own on the same weights.
    fn tiny_gguf(dtype: GgmlDType) -> Vec<u8> {
        let device = Device::Cpu;
        let (vocab, dim, hidden, layers, heads, kv_heads) = (64usize, 64usize, 96usize, 2, 4, 2);
        let head_dim = dim / heads;
        let mut seed = 7u64;
        let mut rand = |shape: &[usize], scale: f32| {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
                })
                .collect();
            Tensor::from_vec(data, shape, &device).unwrap()
        };
        let mut tensors: Vec<(String, QTensor)> = Vec::new();
        let mut put = |name: String, t: Tensor, dt: GgmlDType| {
            tensors.push((name, QTensor::quantize(&t, dt).unwrap()));
        };
        put("token_embd.weight".into(), rand(&[vocab, dim], 2.0), dtype);
        put(
            "output_norm.weight".into(),
            (rand(&[dim], 0.2) + 1.0).unwrap(),
            GgmlDType::F32,
        );
        for i in 0..layers {
            let p = format!("blk.{i}");
            put(format!("{p}.attn_q.weight"), rand(&[dim, dim], 0.5), dtype);
            put(
                format!("{p}.attn_k.weight"),
                rand(&[kv_heads * head_dim, dim], 0.5),
                dtype,
            );
            put(
                format!("{p}.attn_v.weight"),
                rand(&[kv_heads * head_dim, dim], 0.5),
                dtype,
            );
            put(
                format!("{p}.attn_output.weight"),
                rand(&[dim, dim], 0.5),
                dtype,
            );
            put(
                format!("{p}.attn_q.bias"),
                rand(&[dim], 0.1),
                GgmlDType::F32,
            );
            put(
                format!("{p}.attn_k.bias"),
                rand(&[kv_heads * head_dim], 0.1),
                GgmlDType::F32,
            );
            put(
                format!("{p}.attn_v.bias"),
                rand(&[kv_heads * head_dim], 0.1),
                GgmlDType::F32,
            );
            put(
                format!("{p}.ffn_gate.weight"),
                rand(&[hidden, dim], 0.5),
                dtype,
            );
            put(
                format!("{p}.ffn_up.weight"),
                rand(&[hidden, dim], 0.5),
                dtype,
            );
            put(
                format!("{p}.ffn_down.weight"),
                rand(&[dim, hidden], 0.5),
                dtype,
            );
            let norm = (rand(&[dim], 0.2) + 1.0).unwrap();
            put(
                format!("{p}.attn_norm.weight"),
                norm.clone(),
                GgmlDType::F32,
            );
            put(format!("{p}.ffn_norm.weight"), norm, GgmlDType::F32);
        }
        let md = [
            ("general.architecture", Value::String("qwen2".into())),
            ("qwen2.attention.head_count", Value::U32(heads as u32)),
            ("qwen2.attention.head_count_kv", Value::U32(kv_heads as u32)),
            ("qwen2.embedding_length", Value::U32(dim as u32)),
            ("qwen2.context_length", Value::U32(512)),
            ("qwen2.block_count", Value::U32(layers as u32)),
            ("qwen2.attention.layer_norm_rms_epsilon", Value::F32(1e-6)),
            ("qwen2.rope.freq_base", Value::F32(10_000.0)),
        ];
        let md: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
        let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let mut out = std::io::Cursor::new(Vec::new());
        gguf_file::write(&mut out, &md, &ts).unwrap();
        out.into_inner()
    }

    fn ours(bytes: &[u8], dense_budget: usize) -> Qwen2 {
        let mut r = std::io::Cursor::new(bytes);
        let ct = gguf_file::Content::read(&mut r).unwrap();
        Qwen2::from_gguf(ct, &mut r, &Device::Cpu, dense_budget).unwrap()
    }

    fn theirs(bytes: &[u8]) -> quantized_qwen2::ModelWeights {
        let mut r = std::io::Cursor::new(bytes);
        let ct = gguf_file::Content::read(&mut r).unwrap();
        quantized_qwen2::ModelWeights::from_gguf(ct, &mut r, &Device::Cpu).unwrap()
    }

    fn ids(xs: &[u32]) -> Tensor {
        Tensor::new(xs, &Device::Cpu).unwrap().unsqueeze(0).unwrap()
    }

    fn max_abs(a: &Tensor) -> f32 {
        a.abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        max_abs(&(a - b).unwrap())
    }

    const PROMPT: [u32; 20] = [
        1, 5, 9, 33, 2, 60, 17, 17, 4, 8, 50, 12, 3, 44, 21, 9, 30, 31, 6, 7,
    ];

    /// Chunked prompt, then tokens one at a time, logits compared at every step: the largest
    /// difference relative to the largest logit.
    fn run_both(ours: &mut Qwen2, theirs: &mut quantized_qwen2::ModelWeights) -> f32 {
        let mut worst = 0f32;
        let mut pos = 0;
        for chunk in PROMPT[..16].chunks(9) {
            let a = ours.forward(&ids(chunk), pos).unwrap();
            let b = theirs.forward(&ids(chunk), pos).unwrap();
            worst = worst.max(max_diff(&a, &b) / max_abs(&b));
            pos += chunk.len();
        }
        for &t in &PROMPT[16..] {
            let a = ours.forward(&ids(&[t]), pos).unwrap();
            let b = theirs.forward(&ids(&[t]), pos).unwrap();
            worst = worst.max(max_diff(&a, &b) / max_abs(&b));
            pos += 1;
        }
        worst
    }

    #[test]
    fn matches_candles_qwen2_with_and_without_prefill_copies() {
        for dtype in [GgmlDType::F32, GgmlDType::Q8_0] {
            let bytes = tiny_gguf(dtype);
            for budget in [0, usize::MAX] {
                let mut a = ours(&bytes, budget);
                assert_eq!(a.has_prefill_copies(), budget > 0);
                let mut b = theirs(&bytes);
                let diff = run_both(&mut a, &mut b);
                // Without copies: the same arithmetic as candle's (bit for bit here). With them,
                // a rounding difference: 8-bit tiles and activations where the CPU has the
                // kernel (measured 2.6% of the largest logit through two random layers, F32
                // weights), else f32 products of the dequantized weights in place of candle's
                // products over 8-bit activations (2.9%, Q8_0 weights).
                let tolerance =
                    if budget > 0 && (dtype != GgmlDType::F32 || gemv::avx512_available()) {
                        0.05
                    } else {
                        1e-4
                    };
                assert!(diff < tolerance, "{dtype:?} budget {budget}: {diff}");
            }
        }
    }

    #[test]
    fn a_restored_prefix_gives_the_same_logits_as_recomputing_it() {
        let bytes = tiny_gguf(GgmlDType::F32);
        let mut model = ours(&bytes, 0);
        let full = model.forward(&ids(&PROMPT), 0).unwrap();
        let snapshot = model.snapshot(12).unwrap().unwrap();
        assert_eq!(snapshot.len(), 12);
        assert!(model.snapshot(21).unwrap().is_none());

        // Something else in between overwrites the buffers in place…
        model
            .forward(&ids(&[9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]), 0)
            .unwrap();
        // …the snapshot is unaffected.
        model.restore(&snapshot).unwrap();
        assert_eq!(model.kv_len(), 12);
        let resumed = model.forward(&ids(&PROMPT[12..]), 12).unwrap();
        assert!(max_diff(&full, &resumed) < 1e-4);

        // A shorter prefix of the snapshot, and truncation by position.
        model.restore(&snapshot.prefix(5).unwrap()).unwrap();
        let resumed = model.forward(&ids(&PROMPT[5..]), 5).unwrap();
        assert!(max_diff(&full, &resumed) < 1e-4);
        let again = model.forward(&ids(&PROMPT[10..]), 10).unwrap();
        assert!(max_diff(&full, &again) < 1e-4);
        assert!(model.forward(&ids(&[1]), 30).is_err());

        // Growing past one buffer step keeps what was there.
        let long: Vec<u32> = (0..(KV_STEP as u32 + 44)).map(|i| (i * 7) % 64).collect();
        model.clear();
        let at_once = model.forward(&ids(&long), 0).unwrap();
        model.clear();
        model.forward(&ids(&long[..100]), 0).unwrap();
        let in_two = model.forward(&ids(&long[100..]), 100).unwrap();
        assert_eq!(model.kv_len(), long.len());
        assert!(max_diff(&at_once, &in_two) < 1e-4);
    }
}
