//! Matrix products for prompt processing (many tokens at once) on x86-64 CPUs with AVX-512
//! VNNI: 8-bit weights in tiles of 16 rows, 8-bit activations, `vpdpbusd`.
//!
//! Why: a prompt's tokens all pass through every weight matrix, so prompt processing is
//! arithmetic, not memory traffic. candle multiplies the 0.5B model's Q8_0 weights one dot
//! product at a time (its tiled int8 kernels need rows whose length is a multiple of 256, and
//! the 0.5B's 896 is not), and the f32 copies that made prompts faster before (`Linear::dense`
//! in qwen2.rs) cost 4 bytes per weight (1.4 GB for the 0.5B) for f32 FMA, which does a
//! quarter of the multiply-adds per instruction that `vpdpbusd` does on 8-bit values. Here the
//! weights are kept once more as 8-bit tiles (1.125 bytes per weight) and multiplied as
//! integers.
//!
//! How: [`PackedQ8`] holds, for every 16 rows and every 32 columns, the 16 rows' 8-bit values
//! interleaved four columns at a time (one 64-byte load feeds 16 rows) and stored +128 (the
//! unsigned operand of `vpdpbusd`), with the 16 rows' scales. Q8_0 weights are copied as they
//! are; other formats are dequantized and quantized to 8 bits per 32 values (finer than any
//! k-quant's steps). The activations are quantized per token and per 32 values; each work item
//! multiplies 32 output rows by 4 tokens at a time with the tiles kept in L1, and the items
//! are split across candle's worker pool.

// SIMD intrinsics behind a run-time CPU-feature check; the pointer reads and the output writes
// stay inside buffers whose sizes `PackedQ8::matmul` checks before any kernel runs.
#![allow(unsafe_code)]

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Result, Tensor};
use half::f16;

/// Columns per quantization block (Q8_0's).
const BLOCK: usize = 32;
/// Rows per tile.
const TILE_ROWS: usize = 16;
/// Tokens multiplied together by the kernel.
const TOKENS: usize = 4;

/// One 16-row × 32-column tile: values as `[column group of 4][row][4]`, +128.
#[derive(Clone)]
#[repr(C, align(64))]
struct Tile {
    qs: [u8; BLOCK * TILE_ROWS],
    d: [f32; TILE_ROWS],
}

/// A weight matrix `[rows, cols]` as 8-bit tiles for [`PackedQ8::matmul`].
#[derive(Clone)]
pub(crate) struct PackedQ8 {
    rows: usize,
    cols: usize,
    /// Row tile major, then column block.
    tiles: Vec<Tile>,
}

impl std::fmt::Debug for PackedQ8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedQ8({}x{})", self.rows, self.cols)
    }
}

/// The bytes [`PackedQ8`] takes for a `[rows, cols]` matrix.
pub(crate) fn packed_bytes(rows: usize, cols: usize) -> usize {
    rows / TILE_ROWS * (cols / BLOCK) * std::mem::size_of::<Tile>()
}

/// Whether weights of this shape can be packed (and the CPU runs the kernel).
pub(crate) fn packable(rows: usize, cols: usize) -> bool {
    crate::gemv::avx512_available()
        && rows > 0
        && rows.is_multiple_of(2 * TILE_ROWS)
        && cols > 0
        && cols.is_multiple_of(BLOCK)
}

impl PackedQ8 {
    /// Packs `weights` (`[rows, cols]` on the CPU); `None` when [`packable`] says no.
    pub(crate) fn new(weights: &QTensor) -> Result<Option<Self>> {
        let (rows, cols) = weights.shape().dims2()?;
        if !packable(rows, cols) || !weights.device().is_cpu() {
            return Ok(None);
        }
        let blocks = cols / BLOCK;
        let mut tiles = vec![
            Tile {
                qs: [0; BLOCK * TILE_ROWS],
                d: [0.0; TILE_ROWS],
            };
            rows / TILE_ROWS * blocks
        ];
        // One row's blocks as (scale, 32 values).
        let mut put = |row: usize, block: usize, d: f32, values: &[i8]| {
            let tile = &mut tiles[row / TILE_ROWS * blocks + block];
            let r = row % TILE_ROWS;
            tile.d[r] = d;
            for (c, &v) in values.iter().enumerate() {
                tile.qs[(c / 4 * TILE_ROWS + r) * 4 + c % 4] = (v as u8) ^ 0x80;
            }
        };
        if weights.dtype() == GgmlDType::Q8_0 {
            let data = weights.data()?;
            let row_bytes = blocks * 34;
            if data.len() != rows * row_bytes {
                candle_core::bail!("Q8_0 data of {} bytes for {rows}x{cols}", data.len());
            }
            let mut values = [0i8; BLOCK];
            for row in 0..rows {
                for block in 0..blocks {
                    let at = row * row_bytes + block * 34;
                    let d = f16::from_le_bytes([data[at], data[at + 1]]).to_f32();
                    for (v, &b) in values.iter_mut().zip(&data[at + 2..at + 34]) {
                        *v = b as i8;
                    }
                    put(row, block, d, &values);
                }
            }
        } else {
            let dense: Vec<f32> = weights
                .dequantize(&Device::Cpu)?
                .to_dtype(DType::F32)?
                .flatten_all()?
                .to_vec1()?;
            let mut values = [0i8; BLOCK];
            for (row, row_values) in dense.chunks_exact(cols).enumerate() {
                for (block, chunk) in row_values.chunks_exact(BLOCK).enumerate() {
                    let d = quantize_block(chunk, &mut values);
                    put(row, block, d, &values);
                }
            }
        }
        Ok(Some(PackedQ8 { rows, cols, tiles }))
    }

    /// `xs · Wᵀ` for `xs` of shape `[..., cols]` (f32, on the CPU).
    pub(crate) fn matmul(&self, xs: &Tensor) -> Result<Tensor> {
        let dims = xs.dims().to_vec();
        if dims.last() != Some(&self.cols) {
            candle_core::bail!("matmul of {dims:?} with {}x{}", self.rows, self.cols);
        }
        let x: Vec<f32> = xs.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
        let tokens = x.len() / self.cols;
        let act = Activations::new(&x, self.cols);
        let mut out = vec![0f32; tokens * self.rows];
        self.matmul_into(&act, &mut out);
        let mut out_dims = dims;
        if let Some(last) = out_dims.last_mut() {
            *last = self.rows;
        }
        Tensor::from_vec(out, out_dims, xs.device())
    }

    fn matmul_into(&self, act: &Activations, out: &mut [f32]) {
        let tokens = act.tokens;
        assert_eq!(out.len(), tokens * self.rows, "output size");
        assert_eq!(act.cols, self.cols, "activation width");
        let pairs = self.rows / (2 * TILE_ROWS);
        let out_ptr = SendPtr(out.as_mut_ptr());
        candle_core::utils::barrier_pool().execute_chunked(pairs, |range| {
            for pair in range {
                let mut t = 0;
                while t < tokens {
                    let n = TOKENS.min(tokens - t);
                    // SAFETY: `matmul_into` runs only where `packable` found the CPU features;
                    // the tiles of `pair` exist (rows is a multiple of 32), `t + n <= tokens`,
                    // and the columns `pair*32..pair*32+32` of those tokens' output rows are
                    // written by this work item alone.
                    unsafe { x86::tile_pair(self, act, pair, t, n, out_ptr) };
                    t += n;
                }
            }
        });
    }
}

/// The output buffer, written by the workers at disjoint positions.
#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: every worker writes its own (token, column) positions (see `matmul_into`).
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

/// Quantizes `values` to 8 bits with one scale (returned): `values ≈ scale · out`.
pub(crate) fn quantize_block(values: &[f32], out: &mut [i8]) -> f32 {
    let amax = values.iter().fold(0f32, |m, &v| m.max(v.abs()));
    let d = amax / 127.0;
    let inv = if d > 0.0 { 1.0 / d } else { 0.0 };
    for (o, &v) in out.iter_mut().zip(values) {
        *o = (v * inv).round().clamp(-127.0, 127.0) as i8;
    }
    d
}

/// The tokens' activations quantized per 32 values, with each block's sum (for the +128 of
/// the weights).
struct Activations {
    tokens: usize,
    cols: usize,
    qs: Vec<i8>,
    d: Vec<f32>,
    /// 128 · d · (sum of the block's values): what the +128 of the weights adds.
    offset: Vec<f32>,
}

impl Activations {
    fn new(x: &[f32], cols: usize) -> Self {
        let tokens = x.len() / cols;
        let blocks = tokens * cols / BLOCK;
        let mut a = Activations {
            tokens,
            cols,
            qs: vec![0; tokens * cols],
            d: Vec::with_capacity(blocks),
            offset: Vec::with_capacity(blocks),
        };
        for (chunk, out) in x.chunks_exact(BLOCK).zip(a.qs.chunks_exact_mut(BLOCK)) {
            let mut q = [0i8; BLOCK];
            let d = quantize_block(chunk, &mut q);
            out.copy_from_slice(&q);
            let sum: i32 = q.iter().map(|&v| i32::from(v)).sum();
            a.d.push(d);
            a.offset.push(128.0 * d * sum as f32);
        }
        a
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Activations, BLOCK, PackedQ8, SendPtr, TILE_ROWS, TOKENS};
    use core::arch::x86_64::*;

    /// Output columns `pair*32..pair*32+32` for tokens `t..t+n` (n ≤ 4).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn tile_pair(
        w: &PackedQ8,
        act: &Activations,
        pair: usize,
        t: usize,
        n: usize,
        out: SendPtr,
    ) {
        unsafe {
            let blocks = w.cols / BLOCK;
            let tiles0 = &w.tiles[(2 * pair) * blocks..(2 * pair + 1) * blocks];
            let tiles1 = &w.tiles[(2 * pair + 1) * blocks..(2 * pair + 2) * blocks];
            let mut acc0 = [_mm512_setzero_ps(); TOKENS];
            let mut acc1 = [_mm512_setzero_ps(); TOKENS];
            for b in 0..blocks {
                let (a, c) = (&tiles0[b], &tiles1[b]);
                let mut isum0 = [_mm512_setzero_si512(); TOKENS];
                let mut isum1 = [_mm512_setzero_si512(); TOKENS];
                for g in 0..BLOCK / 4 {
                    let wa = _mm512_load_si512(a.qs.as_ptr().add(g * 64).cast());
                    let wc = _mm512_load_si512(c.qs.as_ptr().add(g * 64).cast());
                    for m in 0..n {
                        let at = (t + m) * w.cols + b * BLOCK + g * 4;
                        let x = _mm512_set1_epi32(std::ptr::read_unaligned(
                            act.qs.as_ptr().add(at).cast::<i32>(),
                        ));
                        isum0[m] = _mm512_dpbusd_epi32(isum0[m], wa, x);
                        isum1[m] = _mm512_dpbusd_epi32(isum1[m], wc, x);
                    }
                }
                let da = _mm512_load_ps(a.d.as_ptr());
                let dc = _mm512_load_ps(c.d.as_ptr());
                for m in 0..n {
                    let blk = (t + m) * blocks + b;
                    let scale = _mm512_set1_ps(act.d[blk]);
                    let offset = _mm512_set1_ps(act.offset[blk]);
                    // Σ (w+128)·x·dx·dw − 128·dx·Σx·dw
                    let f0 = _mm512_fmsub_ps(_mm512_cvtepi32_ps(isum0[m]), scale, offset);
                    let f1 = _mm512_fmsub_ps(_mm512_cvtepi32_ps(isum1[m]), scale, offset);
                    acc0[m] = _mm512_fmadd_ps(f0, da, acc0[m]);
                    acc1[m] = _mm512_fmadd_ps(f1, dc, acc1[m]);
                }
            }
            for m in 0..n {
                let row = out.0.add((t + m) * w.rows + pair * 2 * TILE_ROWS);
                _mm512_storeu_ps(row, acc0[m]);
                _mm512_storeu_ps(row.add(TILE_ROWS), acc1[m]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = ((state >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * 2.0;
                // A magnitude that changes every 32 columns: every block its own scale.
                v * (1 + (i / 32) % 5) as f32
            })
            .collect()
    }

    #[test]
    fn products_match_the_dequantized_weights() {
        if !crate::gemv::avx512_available() {
            eprintln!("skipped: this CPU has no AVX-512 VNNI (the kernel's requirement)");
            return;
        }
        // 7 tokens: a group of 4 and a short one.
        let (rows, cols, tokens) = (64, 96, 7);
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0, GgmlDType::F32] {
            let w = Tensor::from_vec(values(rows * cols, 1), (rows, cols), &Device::Cpu)
                .and_then(|t| QTensor::quantize(&t, dtype))
                .expect("quantize");
            let packed = PackedQ8::new(&w).expect("pack").expect("packable");
            let x = values(tokens * cols, 2);
            let xs = Tensor::from_vec(x.clone(), (1, tokens, cols), &Device::Cpu).expect("x");
            let ys = packed.matmul(&xs).expect("matmul");
            assert_eq!(ys.dims(), &[1, tokens, rows]);
            let got: Vec<f32> = ys.flatten_all().and_then(|t| t.to_vec1()).expect("out");
            let dense: Vec<Vec<f32>> = w
                .dequantize(&Device::Cpu)
                .and_then(|t| t.to_vec2())
                .expect("dense");
            for t in 0..tokens {
                let xt = &x[t * cols..(t + 1) * cols];
                for (r, row) in dense.iter().enumerate() {
                    let want: f32 = row.iter().zip(xt).map(|(a, b)| a * b).sum();
                    let scale: f32 = row.iter().zip(xt).map(|(a, b)| (a * b).abs()).sum();
                    let g = got[t * rows + r];
                    assert!(
                        (g - want).abs() <= 0.01 * scale,
                        "{dtype:?} token {t} row {r}: {g} vs {want} (Σ|w·x| {scale})"
                    );
                }
            }
        }
    }

    #[test]
    fn shapes_it_cannot_tile_are_left_alone() {
        let w = Tensor::from_vec(values(48 * 64, 3), (48, 64), &Device::Cpu)
            .and_then(|t| QTensor::quantize(&t, GgmlDType::Q8_0))
            .expect("quantize");
        assert!(PackedQ8::new(&w).expect("no error").is_none());
        assert!(!packable(64, 48));
        assert_eq!(packed_bytes(64, 96), 4 * 3 * 576);
    }
}
