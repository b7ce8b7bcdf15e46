//! The BERT encoder behind [`crate::BertEmbedder`]: embeddings, `layers` × (self-attention,
//! FFN), mean pooling and L2 normalisation, written for CPU throughput.
//!
//! What it does differently from `candle_transformers::models::bert::BertModel`:
//! - **No padding.** The tokens of a batch are packed into one `(tokens, hidden)` matrix; the
//!   linear layers run on that, and attention runs per sequence (queries, keys and values are
//!   strided views of the fused QKV output, so no transposed copies and no attention mask).
//! - **Fused QKV**: one `(3·hidden, hidden)` matmul instead of three.
//! - **Fused element-wise steps** on CPU ([`crate::kernels`]): bias + GELU, bias + residual +
//!   LayerNorm, scaled softmax, in place on the matmul outputs, with vectorised `exp`/`erf`.
//! - **Quantized storage where it is free**: e5's 250k-row word-embedding table stays in its
//!   Q4_0 blocks (54 MB instead of 384 MB of f32) and only the rows of a batch are dequantized
//!   (the same values as dequantizing the whole table).
//! - **Two weight precisions** for the linear layers ([`Precision`]): f32 (dequantized at load,
//!   stored transposed so that candle's gemm does not repack them on every call) or the Q4_0
//!   blocks kept as candle `QMatMul`s (activations quantized to Q8_0 per matmul).
//!
//! On devices other than the CPU the same graph runs with plain candle ops instead of the fused
//! kernels.

use std::borrow::Cow;
use std::collections::HashMap;

use candle_core::quantized::{GgmlDType, QMatMul, QStorage, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use candle_transformers::models::bert::{Config, HiddenAct};
use rayon::prelude::*;

use crate::e5s1::{E5s1, dequantize_q4_0};
use crate::error::{EmbedError, Result};
use crate::kernels::{Act, AddBias, BiasAct, BiasResidualNorm, ScaledSoftmax, layer_norm_row};

/// How the linear layers of the e5 encoder hold their weights (the container stores them as
/// GGML Q4_0 blocks; both choices compute with the same dequantized values' information, the
/// Q4 path additionally rounds activations to 8 bits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Precision {
    /// Q4_0 blocks dequantized to f32 once at load; f32 matmuls (candle's gemm, AVX-512 or
    /// AVX2/FMA picked at run time). The default: the fastest on x86 CPUs.
    #[default]
    F32,
    /// The Q4_0 blocks kept as candle `QTensor`s and multiplied with `QMatMul` (activations
    /// quantized to Q8_0 on the fly): 7× less memory for the encoder weights (12 MB instead
    /// of 85 MB), but candle's Q4_0 kernels are several times slower than f32 gemm on
    /// batched (prefill-sized) inputs.
    Q4,
}

impl std::str::FromStr for Precision {
    type Err = EmbedError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f32" => Ok(Self::F32),
            "q4" | "q4_0" => Ok(Self::Q4),
            other => Err(EmbedError::Model(format!(
                "unknown precision {other:?} (expected f32 or q4)"
            ))),
        }
    }
}

/// A linear layer's weight.
#[derive(Debug)]
enum Weight {
    /// `wᵀ`, `(in, out)`, contiguous: candle's gemm repacks a transposed view of `(out, in)` on
    /// every call, which for a short query's few rows cost 2–10× the multiplication itself
    /// (docs/measurements.md, "Embedding throughput").
    F32T(Tensor),
    /// `(out, in)` Q4_0 blocks.
    Q(QMatMul),
}

impl Weight {
    /// An f32 weight from its `(out, in)` tensor.
    fn f32(w: Tensor) -> Result<Weight> {
        Ok(Weight::F32T(w.t()?.contiguous()?))
    }
}

/// A vector parameter (bias, LayerNorm gain/shift) on the host, for the fused CPU kernels,
/// and on the device, for the plain candle path.
#[derive(Debug)]
struct Param {
    host: Vec<f32>,
    dev: Tensor,
}

impl Param {
    fn new(host: Vec<f32>, device: &Device) -> Result<Self> {
        let dev = Tensor::from_slice(&host, host.len(), device)?;
        Ok(Self { host, dev })
    }
}

#[derive(Debug)]
struct Linear {
    w: Weight,
    b: Param,
}

impl Linear {
    /// `x · wᵀ` without the bias (the fused ops add it).
    fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        Ok(match &self.w {
            Weight::F32T(wt) => x.matmul(wt)?,
            Weight::Q(q) => q.forward(x)?,
        })
    }
}

#[derive(Debug)]
struct Norm {
    w: Param,
    b: Param,
}

#[derive(Debug)]
struct Layer {
    qkv: Linear,
    ao: Linear,
    aln: Norm,
    fi: Linear,
    fo: Linear,
    oln: Norm,
}

/// The word-embedding table, `vocab` rows of `hidden`.
#[derive(Debug)]
enum WordTable {
    F32(Vec<f32>),
    /// GGML Q4_0 blocks, `hidden / 32` blocks of 18 bytes per row.
    Q4_0(Vec<u8>),
}

/// Bytes of one Q4_0 block (f16 scale + 16 bytes of nibbles) and the weights in it.
const Q4_0_BLOCK_BYTES: usize = 18;
const Q4_0_BLOCK: usize = 32;

/// Shape and settings of the encoder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dims {
    pub(crate) hidden: usize,
    pub(crate) heads: usize,
    pub(crate) ffn: usize,
    pub(crate) vocab: usize,
    pub(crate) max_positions: usize,
    pub(crate) eps: f32,
    pub(crate) act: Act,
}

/// A BERT encoder with mean pooling (see the module docs).
#[derive(Debug)]
pub(crate) struct Encoder {
    dims: Dims,
    word: WordTable,
    /// `max_positions × hidden`.
    pos: Vec<f32>,
    /// Row 0 of the token-type table (every token is type 0).
    type0: Vec<f32>,
    emb_ln_w: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    device: Device,
    /// Fused CPU kernels (CPU device) or plain candle ops (elsewhere, or forced for tests).
    fused: bool,
    precision: Precision,
}

fn bad(name: &str, reason: impl std::fmt::Display) -> EmbedError {
    EmbedError::BadTensor {
        name: name.to_owned(),
        reason: reason.to_string(),
    }
}

/// A QTensor of shape `(rows, cols)` from raw GGML Q4_0 blocks.
fn q4_0_qtensor(bytes: &[u8], rows: usize, cols: usize, device: &Device) -> Result<QTensor> {
    // candle reads the blocks as `[BlockQ4_0]` (align 2, for the f16 scale); a mapped tensor at
    // an odd offset is copied first (a fresh allocation is at least 8-aligned).
    let data: Cow<'_, [u8]> = if bytes.as_ptr().align_offset(2) == 0 {
        Cow::Borrowed(bytes)
    } else {
        Cow::Owned(bytes.to_vec())
    };
    if data.as_ptr().align_offset(2) != 0 {
        return Err(EmbedError::Model("unaligned Q4_0 buffer".into()));
    }
    let storage = QStorage::from_data(data, device, GgmlDType::Q4_0)?;
    Ok(QTensor::new(storage, (rows, cols))?)
}

impl Encoder {
    /// multilingual-e5-small (or any BERT) from an E5S1 container.
    pub(crate) fn from_e5s1(c: &E5s1, precision: Precision, device: &Device) -> Result<Self> {
        let h = c.header();
        let (hd, ff) = (h.hidden, h.ffn);
        if h.heads == 0 || !hd.is_multiple_of(h.heads) || !hd.is_multiple_of(Q4_0_BLOCK) {
            return Err(EmbedError::Model(format!(
                "hidden size {hd} does not split into {} heads and Q4_0 blocks",
                h.heads
            )));
        }
        let dims = Dims {
            hidden: hd,
            heads: h.heads,
            ffn: ff,
            vocab: h.vocab,
            max_positions: h.max_positions,
            eps: h.layer_norm_eps,
            act: Act::Gelu,
        };
        let f32_of = |name: &str, n: usize| -> Result<Vec<f32>> {
            let v = c.tensor_f32(name)?;
            if v.len() != n {
                return Err(bad(name, format!("{} values, expected {n}", v.len())));
            }
            Ok(v)
        };
        let param = |name: &str, n: usize| Param::new(f32_of(name, n)?, device);
        let q4_bytes = |name: &str, n: usize| -> Result<&[u8]> {
            let info = c
                .tensor(name)
                .ok_or_else(|| EmbedError::TensorNotFound(name.to_owned()))?;
            if info.dtype != crate::e5s1::DType::Q4_0 || info.elements as usize != n {
                return Err(bad(name, "not a Q4_0 tensor of the expected size"));
            }
            let b = c.tensor_bytes(name)?;
            if b.len() != n / Q4_0_BLOCK * Q4_0_BLOCK_BYTES {
                return Err(bad(name, format!("{} bytes for {n} Q4_0 weights", b.len())));
            }
            Ok(b)
        };
        // The word table stays quantized when it is (rows are dequantized per batch).
        let word = match c.tensor("emb.word").map(|t| t.dtype) {
            Some(crate::e5s1::DType::Q4_0) => {
                WordTable::Q4_0(q4_bytes("emb.word", h.vocab * hd)?.to_vec())
            }
            _ => WordTable::F32(f32_of("emb.word", h.vocab * hd)?),
        };
        // One linear layer from the (out, in) tensors `names` stacked along `out`.
        let linear = |names: &[&str], bias: &[&str], out: usize, inp: usize| -> Result<Linear> {
            let rows = out * names.len();
            let all_q4 = names.iter().all(|n| {
                c.tensor(n)
                    .is_some_and(|t| t.dtype == crate::e5s1::DType::Q4_0)
            });
            let w = if precision == Precision::Q4 && all_q4 && inp.is_multiple_of(Q4_0_BLOCK) {
                let mut bytes = Vec::new();
                for n in names {
                    bytes.extend_from_slice(q4_bytes(n, out * inp)?);
                }
                Weight::Q(QMatMul::from_qtensor(q4_0_qtensor(
                    &bytes, rows, inp, device,
                )?)?)
            } else {
                let mut v = Vec::with_capacity(rows * inp);
                for n in names {
                    v.extend(f32_of(n, out * inp)?);
                }
                Weight::f32(Tensor::from_vec(v, (rows, inp), device)?)?
            };
            let mut b = Vec::with_capacity(rows);
            for n in bias {
                b.extend(f32_of(n, out)?);
            }
            Ok(Linear {
                w,
                b: Param::new(b, device)?,
            })
        };
        let mut layers = Vec::with_capacity(h.layers);
        for l in 0..h.layers {
            let n = |s: &str| format!("l{l}.{s}");
            layers.push(Layer {
                qkv: linear(
                    &[&n("q.w"), &n("k.w"), &n("v.w")],
                    &[&n("q.b"), &n("k.b"), &n("v.b")],
                    hd,
                    hd,
                )?,
                ao: linear(&[&n("ao.w")], &[&n("ao.b")], hd, hd)?,
                aln: Norm {
                    w: param(&n("aln.w"), hd)?,
                    b: param(&n("aln.b"), hd)?,
                },
                fi: linear(&[&n("fi.w")], &[&n("fi.b")], ff, hd)?,
                fo: linear(&[&n("fo.w")], &[&n("fo.b")], hd, ff)?,
                oln: Norm {
                    w: param(&n("oln.w"), hd)?,
                    b: param(&n("oln.b"), hd)?,
                },
            });
        }
        let type_table = f32_of("emb.type", h.type_vocab * hd)?;
        Ok(Self {
            word,
            pos: f32_of("emb.pos", h.max_positions * hd)?,
            // A model without token types adds nothing.
            type0: type_table
                .get(..hd)
                .map_or_else(|| vec![0.0; hd], <[f32]>::to_vec),
            emb_ln_w: f32_of("emb.ln.w", hd)?,
            emb_ln_b: f32_of("emb.ln.b", hd)?,
            layers,
            device: device.clone(),
            fused: device.is_cpu(),
            precision,
            dims,
        })
    }

    /// A BERT from HF tensors (`model.safetensors` of a `BertModel`, optionally under a
    /// `bert.` prefix) and its `config.json`.
    pub(crate) fn from_hf(
        map: HashMap<String, Tensor>,
        config: &Config,
        device: &Device,
    ) -> Result<Self> {
        let hd = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hd.is_multiple_of(heads) {
            return Err(EmbedError::Model(format!(
                "hidden size {hd} does not split into {heads} heads"
            )));
        }
        let act = match config.hidden_act {
            HiddenAct::Gelu => Act::Gelu,
            HiddenAct::GeluApproximate => Act::GeluTanh,
            HiddenAct::Relu => Act::Relu,
        };
        let prefix = ["", "bert.", "model."]
            .into_iter()
            .find(|p| map.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
            .ok_or_else(|| {
                EmbedError::TensorNotFound("embeddings.word_embeddings.weight".into())
            })?;
        let get = |name: &str, shape: &[usize]| -> Result<Tensor> {
            let key = format!("{prefix}{name}");
            let t = map
                .get(&key)
                .ok_or_else(|| EmbedError::TensorNotFound(key.clone()))?;
            if t.dims() != shape {
                return Err(bad(
                    &key,
                    format!("shape {:?}, expected {shape:?}", t.dims()),
                ));
            }
            Ok(t.to_dtype(DType::F32)?.to_device(device)?)
        };
        let host = |name: &str, shape: &[usize]| -> Result<Vec<f32>> {
            Ok(get(name, shape)?
                .to_device(&Device::Cpu)?
                .flatten_all()?
                .to_vec1::<f32>()?)
        };
        let param = |name: &str, n: usize| Param::new(host(name, &[n])?, device);
        let ff = config.intermediate_size;
        let linear = |names: &[&str], out: usize, inp: usize| -> Result<Linear> {
            let ws = names
                .iter()
                .map(|n| get(&format!("{n}.weight"), &[out, inp]))
                .collect::<Result<Vec<_>>>()?;
            let w = if ws.len() == 1 {
                ws.into_iter()
                    .next()
                    .ok_or_else(|| EmbedError::Model("no weight".into()))?
            } else {
                Tensor::cat(&ws, 0)?
            };
            let mut b = Vec::with_capacity(out * names.len());
            for n in names {
                b.extend(host(&format!("{n}.bias"), &[out])?);
            }
            Ok(Linear {
                w: Weight::f32(w)?,
                b: Param::new(b, device)?,
            })
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}.");
            let n = |s: &str| format!("{p}{s}");
            layers.push(Layer {
                qkv: linear(
                    &[
                        &n("attention.self.query"),
                        &n("attention.self.key"),
                        &n("attention.self.value"),
                    ],
                    hd,
                    hd,
                )?,
                ao: linear(&[&n("attention.output.dense")], hd, hd)?,
                aln: Norm {
                    w: param(&n("attention.output.LayerNorm.weight"), hd)?,
                    b: param(&n("attention.output.LayerNorm.bias"), hd)?,
                },
                fi: linear(&[&n("intermediate.dense")], ff, hd)?,
                fo: linear(&[&n("output.dense")], hd, ff)?,
                oln: Norm {
                    w: param(&n("output.LayerNorm.weight"), hd)?,
                    b: param(&n("output.LayerNorm.bias"), hd)?,
                },
            });
        }
        let type_table = host(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, hd],
        )?;
        Ok(Self {
            dims: Dims {
                hidden: hd,
                heads,
                ffn: ff,
                vocab: config.vocab_size,
                max_positions: config.max_position_embeddings,
                eps: config.layer_norm_eps as f32,
                act,
            },
            word: WordTable::F32(host(
                "embeddings.word_embeddings.weight",
                &[config.vocab_size, hd],
            )?),
            pos: host(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hd],
            )?,
            // A model without token types adds nothing.
            type0: type_table
                .get(..hd)
                .map_or_else(|| vec![0.0; hd], <[f32]>::to_vec),
            emb_ln_w: host("embeddings.LayerNorm.weight", &[hd])?,
            emb_ln_b: host("embeddings.LayerNorm.bias", &[hd])?,
            layers,
            device: device.clone(),
            fused: device.is_cpu(),
            precision: Precision::F32,
        })
    }

    pub(crate) fn precision(&self) -> Precision {
        self.precision
    }

    /// Uses plain candle ops even on the CPU (tests compare both paths).
    #[cfg(test)]
    fn unfused(mut self) -> Self {
        self.fused = false;
        self
    }

    /// Mean-pooled, L2-normalised embeddings of token sequences (each at most
    /// `max_positions` long; an empty sequence gets a zero vector).
    pub(crate) fn embed(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let hd = self.dims.hidden;
        let total: usize = seqs.iter().map(|s| s.len()).sum();
        if total == 0 {
            return Ok(vec![vec![0.0; hd]; seqs.len()]);
        }
        let mut spans = Vec::with_capacity(seqs.len());
        let mut off = 0;
        for s in seqs {
            spans.push((off, s.len()));
            off += s.len();
        }
        let x = self.embeddings(seqs, total)?;
        let mut x = Tensor::from_vec(x, (total, hd), &self.device)?;
        for layer in &self.layers {
            x = self.layer(layer, &x, &spans)?;
        }
        let x = x.to_device(&Device::Cpu)?.flatten_all()?.to_vec1::<f32>()?;
        Ok(spans
            .iter()
            .map(|&(off, len)| {
                let mut mean = vec![0f32; hd];
                for row in x[off * hd..(off + len) * hd].chunks_exact(hd) {
                    for (m, &v) in mean.iter_mut().zip(row) {
                        *m += v;
                    }
                }
                let inv = 1.0 / len.max(1) as f32;
                mean.iter_mut().for_each(|m| *m *= inv);
                let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                mean.iter_mut().for_each(|m| *m /= norm);
                mean
            })
            .collect())
    }

    /// Word + position + type embeddings, LayerNorm: `(total, hidden)` row-major.
    fn embeddings(&self, seqs: &[&[u32]], total: usize) -> Result<Vec<f32>> {
        let hd = self.dims.hidden;
        let mut x = vec![0f32; total * hd];
        let mut rows = x.chunks_exact_mut(hd);
        for s in seqs {
            if s.len() > self.dims.max_positions {
                return Err(EmbedError::Model(format!(
                    "sequence of {} tokens is longer than the model's {} positions",
                    s.len(),
                    self.dims.max_positions
                )));
            }
            for (p, &id) in s.iter().enumerate() {
                let Some(row) = rows.next() else {
                    return Err(EmbedError::Model("token count mismatch".into()));
                };
                let id = id as usize;
                if id >= self.dims.vocab {
                    return Err(EmbedError::Model(format!(
                        "token id {id} is outside the vocabulary ({})",
                        self.dims.vocab
                    )));
                }
                match &self.word {
                    WordTable::F32(t) => row.copy_from_slice(&t[id * hd..(id + 1) * hd]),
                    WordTable::Q4_0(b) => {
                        let rb = hd / Q4_0_BLOCK * Q4_0_BLOCK_BYTES;
                        row.copy_from_slice(&dequantize_q4_0(&b[id * rb..(id + 1) * rb], hd)?);
                    }
                }
                let pos = &self.pos[p * hd..(p + 1) * hd];
                for ((v, &a), &t) in row.iter_mut().zip(pos).zip(&self.type0) {
                    *v += a + t;
                }
                layer_norm_row(row, &self.emb_ln_w, &self.emb_ln_b, self.dims.eps);
            }
        }
        Ok(x)
    }

    fn layer(&self, l: &Layer, x: &Tensor, spans: &[(usize, usize)]) -> Result<Tensor> {
        let qkv = l.qkv.matmul(x)?;
        let qkv = self.add_bias(qkv, &l.qkv.b)?;
        let ctx = self.attention(&qkv, spans)?;
        let h = self.bias_residual_norm(l.ao.matmul(&ctx)?, &l.ao.b, x, &l.aln)?;
        let f = self.bias_act(l.fi.matmul(&h)?, &l.fi.b)?;
        self.bias_residual_norm(l.fo.matmul(&f)?, &l.fo.b, &h, &l.oln)
    }

    /// Self-attention of each sequence over itself: `(total, 3·hidden)` → `(total, hidden)`.
    fn attention(&self, qkv: &Tensor, spans: &[(usize, usize)]) -> Result<Tensor> {
        let (heads, hd) = (self.dims.heads, self.dims.hidden);
        let dh = hd / heads;
        let scale = 1.0 / (dh as f32).sqrt();
        let one = |&(off, len): &(usize, usize)| -> Result<Tensor> {
            // (len, 3, heads, dh) → per part (heads, len, dh), strided views of `qkv`.
            let t = qkv.narrow(0, off, len)?.reshape((len, 3, heads, dh))?;
            let part = |i: usize| -> Result<Tensor> {
                let v = t.narrow(1, i, 1)?.squeeze(1)?.transpose(0, 1)?;
                Ok(if self.fused { v } else { v.contiguous()? })
            };
            let (q, k, v) = (part(0)?, part(1)?, part(2)?);
            let scores = q.matmul(&k.t()?)?; // (heads, len, len)
            let probs = if self.fused {
                scores.inplace_op1(&ScaledSoftmax { width: len, scale })?;
                scores
            } else {
                candle_nn::ops::softmax_last_dim(&(scores * f64::from(scale))?)?
            };
            let ctx = probs.matmul(&v)?; // (heads, len, dh)
            Ok(ctx.transpose(0, 1)?) // (len, heads, dh)
        };
        let spans: Vec<(usize, usize)> = spans.iter().copied().filter(|s| s.1 > 0).collect();
        // On the CPU the sequences run in parallel (each one's small matmuls would otherwise
        // be split over the threads one after the other).
        let parts = if self.fused {
            spans.par_iter().map(one).collect::<Result<Vec<_>>>()?
        } else {
            spans.iter().map(one).collect::<Result<Vec<_>>>()?
        };
        let total: usize = spans.iter().map(|s| s.1).sum();
        Ok(Tensor::cat(&parts, 0)?.reshape((total, hd))?)
    }

    fn add_bias(&self, x: Tensor, b: &Param) -> Result<Tensor> {
        if self.fused {
            x.inplace_op1(&AddBias(&b.host))?;
            Ok(x)
        } else {
            Ok(x.broadcast_add(&b.dev)?)
        }
    }

    fn bias_act(&self, x: Tensor, b: &Param) -> Result<Tensor> {
        if self.fused {
            x.inplace_op1(&BiasAct {
                bias: &b.host,
                act: self.dims.act,
            })?;
            return Ok(x);
        }
        let x = x.broadcast_add(&b.dev)?;
        Ok(match self.dims.act {
            Act::Gelu => x.gelu_erf()?,
            Act::GeluTanh => x.gelu()?,
            Act::Relu => x.relu()?,
        })
    }

    fn bias_residual_norm(&self, x: Tensor, b: &Param, res: &Tensor, n: &Norm) -> Result<Tensor> {
        if self.fused {
            x.inplace_op2(
                res,
                &BiasResidualNorm {
                    bias: &b.host,
                    gamma: &n.w.host,
                    beta: &n.b.host,
                    eps: self.dims.eps,
                },
            )?;
            return Ok(x);
        }
        let x = (x.broadcast_add(&b.dev)? + res)?;
        Ok(candle_nn::ops::layer_norm(
            &x,
            &n.w.dev,
            &n.b.dev,
            self.dims.eps,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small random BERT in HF naming.
    fn tiny(
        hidden: usize,
        heads: usize,
        ffn: usize,
        layers: usize,
    ) -> (HashMap<String, Tensor>, Config) {
        let dev = Device::Cpu;
        let vocab = 50;
        let maxp = 40;
        let mut map = HashMap::new();
        let mut seed = 0u64;
        let mut put = |name: String, shape: &[usize], scale: f32, shift: f32| {
            seed += 1;
            let n: usize = shape.iter().product();
            let mut s = seed;
            let v: Vec<f32> = (0..n)
                .map(|_| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale + shift
                })
                .collect();
            map.insert(name, Tensor::from_vec(v, shape, &dev).expect("tensor"));
        };
        put(
            "bert.embeddings.word_embeddings.weight".into(),
            &[vocab, hidden],
            2.0,
            0.0,
        );
        put(
            "bert.embeddings.position_embeddings.weight".into(),
            &[maxp, hidden],
            0.5,
            0.0,
        );
        put(
            "bert.embeddings.token_type_embeddings.weight".into(),
            &[2, hidden],
            0.5,
            0.0,
        );
        put(
            "bert.embeddings.LayerNorm.weight".into(),
            &[hidden],
            0.2,
            1.0,
        );
        put("bert.embeddings.LayerNorm.bias".into(), &[hidden], 0.2, 0.0);
        for l in 0..layers {
            let p = format!("bert.encoder.layer.{l}.");
            for (n, o, i) in [
                ("attention.self.query", hidden, hidden),
                ("attention.self.key", hidden, hidden),
                ("attention.self.value", hidden, hidden),
                ("attention.output.dense", hidden, hidden),
                ("intermediate.dense", ffn, hidden),
                ("output.dense", hidden, ffn),
            ] {
                put(format!("{p}{n}.weight"), &[o, i], 0.6, 0.0);
                put(format!("{p}{n}.bias"), &[o], 0.2, 0.0);
            }
            for n in ["attention.output.LayerNorm", "output.LayerNorm"] {
                put(format!("{p}{n}.weight"), &[hidden], 0.2, 1.0);
                put(format!("{p}{n}.bias"), &[hidden], 0.2, 0.0);
            }
        }
        let config = Config {
            vocab_size: vocab,
            hidden_size: hidden,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            intermediate_size: ffn,
            hidden_act: HiddenAct::Gelu,
            max_position_embeddings: maxp,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            ..Config::default()
        };
        (map, config)
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (na * nb)
    }

    /// The packed, fused encoder agrees with candle's padded `BertModel` (mask + mean pooling)
    /// and with its own plain-op path.
    #[test]
    fn matches_candle_bert_and_unfused_path() -> Result<()> {
        let dev = Device::Cpu;
        let (map, config) = tiny(64, 4, 96, 2);
        let seqs: Vec<Vec<u32>> = vec![
            vec![1, 5, 7, 9, 2],
            vec![1, 2],
            (0..37).map(|i| (i * 7 % 50) as u32).collect(),
            vec![3],
            vec![],
        ];
        let refs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
        let enc = Encoder::from_hf(map.clone(), &config, &dev)?;
        let got = enc.embed(&refs)?;
        let plain = Encoder::from_hf(map.clone(), &config, &dev)?
            .unfused()
            .embed(&refs)?;

        let vb = candle_nn::VarBuilder::from_tensors(map, DType::F32, &dev);
        let bert = candle_transformers::models::bert::BertModel::load(vb, &config)?;
        for (i, s) in seqs.iter().enumerate() {
            if s.is_empty() {
                assert!(got[i].iter().all(|&v| v == 0.0));
                continue;
            }
            let ids = Tensor::new(s.as_slice(), &dev)?.unsqueeze(0)?;
            let h = bert
                .forward(&ids, &ids.zeros_like()?, None)?
                .squeeze(0)?
                .mean(0)?;
            let want = h.to_vec1::<f32>()?;
            let c = cosine(&got[i], &want);
            assert!(c > 0.99999, "seq {i}: cosine {c} vs candle BertModel");
            let c = cosine(&got[i], &plain[i]);
            assert!(c > 0.99999, "seq {i}: cosine {c} fused vs plain");
            let norm: f32 = got[i].iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5);
        }
        // Bad input is an error, not a panic.
        assert!(enc.embed(&[&[1, 99]]).is_err());
        let long: Vec<u32> = vec![1; 41];
        assert!(enc.embed(&[&long]).is_err());
        Ok(())
    }
}
