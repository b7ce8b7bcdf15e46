//! Matrix × vector products for generation (one token at a time) on x86-64 CPUs with AVX-512
//! (BW, VNNI) or AVX2, reading the GGUF's own Q4_K and Q6_K blocks.
//!
//! Why: generating a token reads every weight once, so its speed is the speed at which the CPU
//! streams the weights from memory. candle 0.11 computes one-token products over Q4_K weights
//! from a repacked copy that spends 6 bits per weight (its per-row scales unpacked to f32), a
//! third more bytes than the GGUF's 4.5, and its Q6_K products run 256-bit AVX2 code. Reading
//! the compact blocks as stored, 64 bytes per instruction, the 1.5B model's output layer
//! (151,936 × 1,536 Q4_K) took 3.0 ms instead of 5.5 ms and a Q6_K feed-forward layer
//! 1536 × 8960 0.15 ms instead of 0.21 ms (`gemv::speed`, below); generation went from about
//! 18 to about 25 tokens/s (docs/measurements.md). On AVX2-only CPUs (no AVX-512: AMD Zen 2/3,
//! Intel client chips) the same products on 256-bit registers took the 1.5B model from 9.4–10.4
//! to 13.3–14.4 tokens/s on a 2-core AMD EPYC (`llm_speed`, three rounds against
//! `KNOWHUB_NO_GEMV=1`): the output layer alone 15.1 → 8.1 ms. Q8_0 (most of the 0.5B model)
//! stays with candle: a kernel for it here measured no faster.
//!
//! How: the activation vector is quantized once per product to 8 bits ([`QuantizedVector`]:
//! one scale per 256 values, with the sums of its values per 16 and 32 for the formats'
//! offsets and minimums), each row's dot product is integer multiply-adds (`vpmaddubsw` with
//! the unsigned 4/6-bit weights, `vpmaddwd` with the row's sub-block scales), and the rows are
//! split across candle's worker pool. [`gemv`] answers `None` where it does not apply (other
//! formats or CPUs, rows that are not whole blocks), and the caller keeps candle's path.
//! `KNOWHUB_NO_GEMV=1` turns the kernels off (to compare).
//!
//! The results equal the dequantized weights' f32 product up to the activation's 8-bit rounding
//! (as in candle and llama.cpp, which quantize the activation the same way): the tests compare
//! every kernel the CPU runs against candle's own dequantization.

// The only unsafe code of the crate: SIMD intrinsics behind a runtime CPU-feature check. Every
// pointer read stays inside slices whose lengths are checked in `gemv` before any kernel runs.
#![allow(unsafe_code)]

use candle_core::Tensor;
use candle_core::quantized::{GgmlDType, QTensor};
use std::sync::Mutex;

/// Values per k-quant super-block.
const QK_K: usize = 256;
const Q4K_BYTES: usize = 144;
const Q6K_BYTES: usize = 210;

/// Rows per work item: big enough that scheduling costs nothing next to the rows' bytes,
/// small enough that two threads finish together.
const ROWS_PER_TASK: usize = 32;

/// Which kernels this CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// 512-bit: 64 weights per instruction.
    Avx512,
    /// 256-bit (AVX2 CPUs without AVX-512, e.g. AMD Zen 2/3, Intel client chips): the same
    /// integer products, 32 weights per instruction. candle's own AVX2 path reads a repacked
    /// copy of Q4_K of 6 bits per weight; these read the 4.5 bits as stored.
    Avx2,
}

/// The kernels for this CPU (checked once); `None`: candle's products everywhere.
fn kernel() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static KERNEL: OnceLock<Option<Kernel>> = OnceLock::new();
        *KERNEL.get_or_init(|| {
            if std::env::var_os("KNOWHUB_NO_GEMV").is_some() {
                None
            } else if runs_here(Kernel::Avx512) {
                Some(Kernel::Avx512)
            } else if runs_here(Kernel::Avx2) {
                Some(Kernel::Avx2)
            } else {
                None
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Whether this CPU runs the kernels (checked once).
pub(crate) fn available() -> bool {
    kernel().is_some()
}

/// Whether this CPU runs the 512-bit kernels (AVX-512 BW and VNNI: also what the 8-bit tiles
/// of [`crate::gemm`] need). `KNOWHUB_NO_GEMV` turns them off too.
pub(crate) fn avx512_available() -> bool {
    kernel() == Some(Kernel::Avx512)
}

/// Whether this CPU has the features `kernel` needs (a CPU with AVX-512 runs both).
fn runs_here(kernel: Kernel) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match kernel {
            Kernel::Avx512 => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vnni")
            }
            Kernel::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = kernel;
        false
    }
}

/// The weight formats with a kernel here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Q4K,
    Q6K,
}

impl Format {
    fn of(dtype: GgmlDType) -> Option<Self> {
        match dtype {
            GgmlDType::Q4K => Some(Self::Q4K),
            GgmlDType::Q6K => Some(Self::Q6K),
            _ => None,
        }
    }

    /// (values per block, bytes per block)
    fn block(self) -> (usize, usize) {
        match self {
            Self::Q4K => (QK_K, Q4K_BYTES),
            Self::Q6K => (QK_K, Q6K_BYTES),
        }
    }
}

/// Whether [`gemv`] computes products with `weights` on this machine.
pub(crate) fn supports(weights: &QTensor) -> bool {
    let Some(format) = Format::of(weights.dtype()) else {
        return false;
    };
    let Ok((_, k)) = weights.shape().dims2() else {
        return false;
    };
    available() && weights.device().is_cpu() && k > 0 && k.is_multiple_of(format.block().0)
}

/// An activation vector quantized to 8 bits for the kernels.
#[derive(Debug, Default)]
struct QuantizedVector {
    /// One scale per 256 values.
    d: Vec<f32>,
    /// The values, in their own order.
    qs: Vec<i8>,
    /// Per 256 values, the order of Q4_K's nibbles in 64-byte loads (the 512-bit kernel
    /// only): [0..32, 64..96], [32..64, 96..128], then the same for the second half.
    q4k: Vec<i8>,
    /// Sums of the values per 16 (k-quants: Q6_K's sub-blocks).
    sums16: Vec<i16>,
    /// Sums per 32 (Q4_K's sub-blocks; at most 32 · 127).
    sums32: Vec<i16>,
}

impl QuantizedVector {
    fn new(x: &[f32], block: usize, q4k_order: bool) -> Self {
        let blocks = x.len() / block;
        let mut v = QuantizedVector {
            d: Vec::with_capacity(blocks),
            qs: Vec::with_capacity(x.len()),
            sums16: Vec::with_capacity(x.len() / 16),
            sums32: Vec::with_capacity(x.len() / 32),
            q4k: Vec::new(),
        };
        for chunk in x.chunks_exact(block) {
            let start = v.qs.len();
            v.qs.resize(start + block, 0);
            v.d.push(crate::gemm::quantize_block(chunk, &mut v.qs[start..]));
            for sixteen in v.qs[start..].chunks_exact(16) {
                v.sums16
                    .push(sixteen.iter().map(|&q| i16::from(q)).sum::<i16>());
            }
            for pair in v.sums16[start / 16..].chunks_exact(2) {
                v.sums32.push(pair[0] + pair[1]);
            }
        }
        if q4k_order {
            v.q4k.reserve(v.qs.len());
            for block in v.qs.chunks_exact(QK_K) {
                for half in block.chunks_exact(128) {
                    v.q4k.extend_from_slice(&half[0..32]);
                    v.q4k.extend_from_slice(&half[64..96]);
                    v.q4k.extend_from_slice(&half[32..64]);
                    v.q4k.extend_from_slice(&half[96..128]);
                }
            }
        }
        v
    }
}

/// `out[r] = Σ_c weights[r, c] · x[c]` for the `[rows, k]` quantized `weights`; `None` (and
/// `out` untouched) when this module has no kernel for them here ([`supports`]) or the lengths
/// do not fit.
pub(crate) fn gemv(weights: &QTensor, x: &[f32], out: &mut [f32]) -> Option<()> {
    gemv_on(kernel()?, weights, x, out)
}

/// [`gemv`] with the given kernels (which the CPU must run: [`runs_here`]).
fn gemv_on(kernel: Kernel, weights: &QTensor, x: &[f32], out: &mut [f32]) -> Option<()> {
    if !supports(weights) || !runs_here(kernel) {
        return None;
    }
    let format = Format::of(weights.dtype())?;
    let (rows, k) = weights.shape().dims2().ok()?;
    let (per_block, block_bytes) = format.block();
    let row_bytes = k / per_block * block_bytes;
    let data = weights.data().ok()?;
    if x.len() != k || out.len() != rows || data.len() != rows * row_bytes {
        return None;
    }
    let act = QuantizedVector::new(
        x,
        per_block,
        format == Format::Q4K && kernel == Kernel::Avx512,
    );
    // candle's own worker pool (its threads spin between candle's operations): a second pool
    // would compete with them for the same cores. Each task owns one chunk of `out`; the
    // mutexes are never contended.
    let tasks: Vec<Mutex<&mut [f32]>> = out.chunks_mut(ROWS_PER_TASK).map(Mutex::new).collect();
    candle_core::utils::barrier_pool().execute_chunked(tasks.len(), |range| {
        for task in range {
            let Ok(mut outs) = tasks[task].lock() else {
                continue;
            };
            let first = task * ROWS_PER_TASK;
            for (i, o) in outs.iter_mut().enumerate() {
                let start = (first + i) * row_bytes;
                *o = dot(kernel, format, &data[start..start + row_bytes], &act);
            }
        }
    });
    Some(())
}

/// `xs · weightsᵀ` for an activation tensor holding a single row (any leading dimensions of
/// size 1), as [`gemv`]; `None` when it does not apply (several rows, another device or format).
pub(crate) fn forward_one_row(
    weights: &QTensor,
    xs: &Tensor,
) -> candle_core::Result<Option<Tensor>> {
    let Ok((rows, k)) = weights.shape().dims2() else {
        return Ok(None);
    };
    if xs.elem_count() != k || xs.dims().last() != Some(&k) || !supports(weights) {
        return Ok(None);
    }
    let x: Vec<f32> = xs
        .flatten_all()?
        .to_dtype(candle_core::DType::F32)?
        .to_vec1()?;
    let mut out = vec![0f32; rows];
    if gemv(weights, &x, &mut out).is_none() {
        return Ok(None);
    }
    let mut dims = xs.dims().to_vec();
    if let Some(last) = dims.last_mut() {
        *last = rows;
    }
    Tensor::from_vec(out, dims, xs.device()).map(Some)
}

/// One row's dot product. The row holds whole blocks and `act` the matching quantized values
/// (checked by `gemv`).
fn dot(kernel: Kernel, format: Format, row: &[u8], act: &QuantizedVector) -> f32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `gemv` runs only when `kernel()` found the CPU features these functions enable,
    // and checked that `row` holds k/block whole blocks and `act` k quantized values (with their
    // per-16/32 sums and, for Q4_K with the 512-bit kernel, the reordered copy).
    unsafe {
        match (kernel, format) {
            (Kernel::Avx512, Format::Q4K) => x86::dot_q4k(row, act),
            (Kernel::Avx512, Format::Q6K) => x86::dot_q6k(row, act),
            (Kernel::Avx2, Format::Q4K) => x86::dot_q4k_avx2(row, act),
            (Kernel::Avx2, Format::Q6K) => x86::dot_q6k_avx2(row, act),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kernel, format, row, act);
        0.0
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Q4K_BYTES, Q6K_BYTES, QK_K, QuantizedVector};
    use core::arch::x86_64::*;
    use half::f16;

    fn f16_at(bytes: &[u8], at: usize) -> f32 {
        f16::from_le_bytes([bytes[at], bytes[at + 1]]).to_f32()
    }

    /// The 8 six-bit scales and 8 mins of a Q4_K block's 12 packed bytes (ggml's layout).
    /// (ggml's `get_scale_min_k4` for all eight at once, on 32-bit words.)
    fn q4k_scales_mins(packed: &[u8]) -> ([u8; 8], [u8; 8]) {
        const LOW6: u32 = 0x3f3f_3f3f;
        const LOW4: u32 = 0x0f0f_0f0f;
        const LOW2: u32 = 0x0303_0303;
        let word = |i: usize| {
            u32::from_le_bytes([
                packed[4 * i],
                packed[4 * i + 1],
                packed[4 * i + 2],
                packed[4 * i + 3],
            ])
        };
        let (w0, w1, w2) = (word(0), word(1), word(2));
        let scales_lo = w0 & LOW6;
        let scales_hi = (w2 & LOW4) | (((w0 >> 6) & LOW2) << 4);
        let mins_lo = w1 & LOW6;
        let mins_hi = ((w2 >> 4) & LOW4) | (((w1 >> 6) & LOW2) << 4);
        let join = |lo: u32, hi: u32| (u64::from(lo) | (u64::from(hi) << 32)).to_le_bytes();
        (join(scales_lo, scales_hi), join(mins_lo, mins_hi))
    }

    /// Σ min · (sum of the sub-block's activations) over a Q4_K block's 8 sub-blocks: what
    /// the minimums take away, shared by both kernels.
    #[target_feature(enable = "sse4.1")]
    fn q4k_min_dot(mins: &[u8; 8], sums32: &[i16]) -> i32 {
        let sums32 = &sums32[..8];
        // SAFETY: 8 bytes of `mins` and the 8 values (16 bytes) of `sums32` are read.
        unsafe {
            let v = _mm_madd_epi16(
                _mm_cvtepu8_epi16(_mm_loadl_epi64(mins.as_ptr().cast())),
                _mm_loadu_si128(sums32.as_ptr().cast()),
            );
            let v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0b01_00_11_10));
            let v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0b10_11_00_01));
            _mm_cvtsi128_si32(v)
        }
    }

    /// Σ scale · (sum of the 16 activations) over a Q6_K block's 16 sub-blocks: its values are
    /// stored +32, so 32 times this is taken away.
    fn q6k_offset(scales: &[u8], sums16: &[i16]) -> i32 {
        scales
            .iter()
            .zip(sums16)
            .map(|(&s, &a)| i32::from(s as i8) * i32::from(a))
            .sum()
    }

    /// Lane index vectors for `vpermw`: 16 lanes of one value then 16 of another.
    const fn halves(a: i16, b: i16) -> [i16; 32] {
        let mut idx = [a; 32];
        let mut i = 16;
        while i < 32 {
            idx[i] = b;
            i += 1;
        }
        idx
    }

    /// Lane index vector for `vpermw`: 8 lanes each of four values.
    const fn quarters(first: i16) -> [i16; 32] {
        let mut idx = [0i16; 32];
        let mut i = 0;
        while i < 32 {
            idx[i] = first + (i / 8) as i16;
            i += 1;
        }
        idx
    }

    // Built at compile time: the kernels run once per row, on the hot path.
    /// `vpermw` lanes of Q4_K's sub-block scales for its four 64-value products.
    const Q4K_SCALE_LANES: [[i16; 32]; 4] =
        [halves(0, 2), halves(1, 3), halves(4, 6), halves(5, 7)];
    /// `vpermw` lanes of Q6_K's 16 scales for its four 64-value products.
    const Q6K_SCALE_LANES: [[i16; 32]; 4] = [quarters(0), quarters(4), quarters(8), quarters(12)];
    /// Shifts of Q6_K's high bits: lanes 0-31 and 32-63 sit 2 bits apart in the same byte.
    const Q6K_HIGH_SHIFTS: [i16; 32] = halves(0, 2);

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn dot_q4k(row: &[u8], act: &QuantizedVector) -> f32 {
        unsafe {
            let mask = _mm512_set1_epi8(0x0F);
            let idx: [__m512i; 4] = [
                _mm512_loadu_si512(Q4K_SCALE_LANES[0].as_ptr().cast()),
                _mm512_loadu_si512(Q4K_SCALE_LANES[1].as_ptr().cast()),
                _mm512_loadu_si512(Q4K_SCALE_LANES[2].as_ptr().cast()),
                _mm512_loadu_si512(Q4K_SCALE_LANES[3].as_ptr().cast()),
            ];
            let mut acc = _mm512_setzero_ps();
            let mut mins_total = 0f32;
            for (b, block) in row.chunks_exact(Q4K_BYTES).enumerate() {
                let da = act.d[b];
                let d = f16_at(block, 0) * da;
                let dmin = f16_at(block, 2) * da;
                let (scales, mins) = q4k_scales_mins(&block[4..16]);
                mins_total += dmin * q4k_min_dot(&mins, &act.sums32[b * 8..b * 8 + 8]) as f32;

                let s16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_loadl_epi64(
                    scales.as_ptr().cast(),
                )));
                let qs = block.as_ptr().add(16);
                let a = act.q4k.as_ptr().add(b * QK_K);
                let w0 = _mm512_loadu_si512(qs.cast());
                let w1 = _mm512_loadu_si512(qs.add(64).cast());
                let parts = [
                    _mm512_and_si512(w0, mask),
                    _mm512_and_si512(_mm512_srli_epi16(w0, 4), mask),
                    _mm512_and_si512(w1, mask),
                    _mm512_and_si512(_mm512_srli_epi16(w1, 4), mask),
                ];
                let mut isum = _mm512_setzero_si512();
                for (p, (w, idx)) in parts.iter().zip(&idx).enumerate() {
                    let av = _mm512_loadu_si512(a.add(p * 64).cast());
                    let prod = _mm512_maddubs_epi16(*w, av);
                    let scale = _mm512_permutexvar_epi16(*idx, s16);
                    isum = _mm512_add_epi32(isum, _mm512_madd_epi16(prod, scale));
                }
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d), acc);
            }
            _mm512_reduce_add_ps(acc) - mins_total
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn dot_q6k(row: &[u8], act: &QuantizedVector) -> f32 {
        unsafe {
            let low4 = _mm512_set1_epi8(0x0F);
            let two = _mm512_set1_epi8(0x03);
            let shift_lo = _mm512_loadu_si512(Q6K_HIGH_SHIFTS.as_ptr().cast());
            let shift_hi = _mm512_add_epi16(shift_lo, _mm512_set1_epi16(4));
            let idx: [__m512i; 4] = [
                _mm512_loadu_si512(Q6K_SCALE_LANES[0].as_ptr().cast()),
                _mm512_loadu_si512(Q6K_SCALE_LANES[1].as_ptr().cast()),
                _mm512_loadu_si512(Q6K_SCALE_LANES[2].as_ptr().cast()),
                _mm512_loadu_si512(Q6K_SCALE_LANES[3].as_ptr().cast()),
            ];
            let mut acc = _mm512_setzero_ps();
            let mut offset_total = 0f32;
            for (b, block) in row.chunks_exact(Q6K_BYTES).enumerate() {
                let ql = block.as_ptr();
                let qh = block.as_ptr().add(128);
                let scales: &[u8] = &block[192..208];
                let d = f16_at(block, 208) * act.d[b];
                offset_total +=
                    d * 32.0 * q6k_offset(scales, &act.sums16[b * 16..b * 16 + 16]) as f32;

                let s16 = _mm512_broadcast_i64x4(_mm256_cvtepi8_epi16(_mm_loadu_si128(
                    scales.as_ptr().cast(),
                )));
                let a = act.qs.as_ptr().add(b * QK_K);
                let mut isum = _mm512_setzero_si512();
                for half in 0..2 {
                    let lv = _mm512_loadu_si512(ql.add(half * 64).cast());
                    let hv = _mm512_broadcast_i64x4(_mm256_loadu_si256(qh.add(half * 32).cast()));
                    let h_lo = _mm512_and_si512(_mm512_srlv_epi16(hv, shift_lo), two);
                    let h_hi = _mm512_and_si512(_mm512_srlv_epi16(hv, shift_hi), two);
                    let w_lo =
                        _mm512_or_si512(_mm512_and_si512(lv, low4), _mm512_slli_epi16(h_lo, 4));
                    let w_hi = _mm512_or_si512(
                        _mm512_and_si512(_mm512_srli_epi16(lv, 4), low4),
                        _mm512_slli_epi16(h_hi, 4),
                    );
                    for (q, w) in [w_lo, w_hi].into_iter().enumerate() {
                        let av = _mm512_loadu_si512(a.add(half * 128 + q * 64).cast());
                        let prod = _mm512_maddubs_epi16(w, av);
                        let scale = _mm512_permutexvar_epi16(idx[half * 2 + q], s16);
                        isum = _mm512_add_epi32(isum, _mm512_madd_epi16(prod, scale));
                    }
                }
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d), acc);
            }
            _mm512_reduce_add_ps(acc) - offset_total
        }
    }

    /// Sum of the eight 32-bit lanes as f32.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum256(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    /// Q4_K on 256-bit registers: each 32-byte load holds a 64-value chunk, its low nibbles
    /// values 0..32 (one sub-block) and its high nibbles 32..64 (the next), so the activation
    /// is read in its own order.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot_q4k_avx2(row: &[u8], act: &QuantizedVector) -> f32 {
        unsafe {
            let mask = _mm256_set1_epi8(0x0F);
            let mut acc = _mm256_setzero_ps();
            let mut mins_total = 0f32;
            for (b, block) in row.chunks_exact(Q4K_BYTES).enumerate() {
                let da = act.d[b];
                let d = f16_at(block, 0) * da;
                let dmin = f16_at(block, 2) * da;
                let (scales, mins) = q4k_scales_mins(&block[4..16]);
                mins_total += dmin * q4k_min_dot(&mins, &act.sums32[b * 8..b * 8 + 8]) as f32;

                let qs = block.as_ptr().add(16);
                let a = act.qs.as_ptr().add(b * QK_K);
                let mut isum = _mm256_setzero_si256();
                for j in 0..4 {
                    let w = _mm256_loadu_si256(qs.add(32 * j).cast());
                    let lo = _mm256_and_si256(w, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), mask);
                    let p_lo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(a.add(64 * j).cast()));
                    let p_hi =
                        _mm256_maddubs_epi16(hi, _mm256_loadu_si256(a.add(64 * j + 32).cast()));
                    let s_lo = _mm256_set1_epi16(i16::from(scales[2 * j]));
                    let s_hi = _mm256_set1_epi16(i16::from(scales[2 * j + 1]));
                    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p_lo, s_lo));
                    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p_hi, s_hi));
                }
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d), acc);
            }
            hsum256(acc) - mins_total
        }
    }

    /// Q6_K on 256-bit registers: per 128-value half, 32 bytes of low bits at 0 and 32 and 32
    /// bytes of high bits give four 32-value products, each two 16-value sub-blocks (the lower
    /// and upper 128-bit lane of the scale vector).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot_q6k_avx2(row: &[u8], act: &QuantizedVector) -> f32 {
        unsafe {
            let low4 = _mm256_set1_epi8(0x0F);
            let two = _mm256_set1_epi8(0x03);
            let mut acc = _mm256_setzero_ps();
            let mut offset_total = 0f32;
            for (b, block) in row.chunks_exact(Q6K_BYTES).enumerate() {
                let ql = block.as_ptr();
                let qh = block.as_ptr().add(128);
                let scales: &[u8] = &block[192..208];
                let d = f16_at(block, 208) * act.d[b];
                offset_total +=
                    d * 32.0 * q6k_offset(scales, &act.sums16[b * 16..b * 16 + 16]) as f32;

                let a = act.qs.as_ptr().add(b * QK_K);
                let mut isum = _mm256_setzero_si256();
                for half in 0..2 {
                    let l0 = _mm256_loadu_si256(ql.add(64 * half).cast());
                    let l1 = _mm256_loadu_si256(ql.add(64 * half + 32).cast());
                    let h = _mm256_loadu_si256(qh.add(32 * half).cast());
                    let high = |shift: i32| match shift {
                        0 => _mm256_slli_epi16(_mm256_and_si256(h, two), 4),
                        2 => _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), two), 4),
                        4 => _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), two), 4),
                        _ => _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), two), 4),
                    };
                    let weights = [
                        _mm256_or_si256(_mm256_and_si256(l0, low4), high(0)),
                        _mm256_or_si256(_mm256_and_si256(l1, low4), high(2)),
                        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), high(4)),
                        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4), high(6)),
                    ];
                    for (q, w) in weights.into_iter().enumerate() {
                        let av = _mm256_loadu_si256(a.add(128 * half + 32 * q).cast());
                        let prod = _mm256_maddubs_epi16(w, av);
                        // Values 128·half + 32·q + [0..16) and [16..32): scales 8·half + 2·q
                        // and the next.
                        let first = 8 * half + 2 * q;
                        let scale = _mm256_set_m128i(
                            _mm_set1_epi16(i16::from(scales[first + 1] as i8)),
                            _mm_set1_epi16(i16::from(scales[first] as i8)),
                        );
                        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(prod, scale));
                    }
                }
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d), acc);
            }
            hsum256(acc) - offset_total
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// Deterministic values with a spread like a layer's weights and activations.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * 2.0
            })
            .collect()
    }

    #[test]
    fn products_match_the_dequantized_weights() {
        let kernels: Vec<Kernel> = [Kernel::Avx512, Kernel::Avx2]
            .into_iter()
            .filter(|&k| runs_here(k))
            .collect();
        if kernels.is_empty() {
            eprintln!("skipped: this CPU has neither AVX2 nor AVX-512 (the kernels' requirement)");
            return;
        }
        // 70 rows: two whole tasks of 32 and a short one.
        let rows = 70;
        for (kernel, dtype) in kernels
            .iter()
            .flat_map(|&k| [(k, GgmlDType::Q4K), (k, GgmlDType::Q6K)])
        {
            for (seed, k) in [(1u64, 256usize), (2, 1024), (3, 1536)] {
                // Magnitudes and offsets that change every 16 columns, so that every
                // sub-block has its own scale (and Q4_K its own minimum).
                let weights: Vec<f32> = values(rows * k, seed)
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let group = ((i % k) / 16 + i / k) % 7;
                        v * (1 + group) as f32 + 0.3 * group as f32
                    })
                    .collect();
                let w = Tensor::from_vec(weights, (rows, k), &Device::Cpu)
                    .and_then(|t| QTensor::quantize(&t, dtype))
                    .expect("quantize");
                let x = values(k, seed + 100);
                let mut out = vec![0f32; rows];
                gemv_on(kernel, &w, &x, &mut out).expect("kernel applies");
                if Some(kernel) == super::kernel() {
                    // As the model calls it: one row of a [batch, seq, k] tensor.
                    let xs = Tensor::from_vec(x.clone(), (1, 1, k), &Device::Cpu).expect("x");
                    let ys = forward_one_row(&w, &xs)
                        .expect("product")
                        .expect("kernel applies");
                    assert_eq!(ys.dims(), &[1, 1, rows]);
                    let ys: Vec<f32> = ys.flatten_all().and_then(|t| t.to_vec1()).expect("out");
                    assert_eq!(ys, out);
                }

                let dense = w.dequantize(&Device::Cpu).expect("dequantize");
                let dense: Vec<Vec<f32>> = dense.to_vec2().expect("rows");
                for (r, row) in dense.iter().enumerate() {
                    let want: f32 = row.iter().zip(&x).map(|(a, b)| a * b).sum();
                    let scale: f32 = row.iter().zip(&x).map(|(a, b)| (a * b).abs()).sum();
                    // 8-bit activations: the error is a small fraction of Σ|w·x| (a sub-block scaled
                    // by the wrong factor is not).
                    assert!(
                        (out[r] - want).abs() <= 0.002 * scale,
                        "{kernel:?} {dtype:?} k={k} row {r}: {} vs {want} (Σ|w·x| {scale})",
                        out[r]
                    );
                }
            }
        }
    }

    #[test]
    fn other_formats_and_partial_blocks_are_left_to_candle() {
        let w = Tensor::from_vec(values(8 * 64, 7), (8, 64), &Device::Cpu)
            .and_then(|t| QTensor::quantize(&t, GgmlDType::Q4_0))
            .expect("quantize");
        let mut out = vec![1f32; 8];
        assert!(gemv(&w, &values(64, 8), &mut out).is_none());
        assert!(out.iter().all(|&o| o == 1.0));
        for dtype in [GgmlDType::Q8_0, GgmlDType::F32] {
            let w = Tensor::from_vec(values(8 * 256, 7), (8, 256), &Device::Cpu)
                .and_then(|t| QTensor::quantize(&t, dtype))
                .expect("quantize");
            assert!(gemv(&w, &values(256, 8), &mut out).is_none(), "{dtype:?}");
        }
        let w = Tensor::from_vec(values(8 * 256, 7), (8, 256), &Device::Cpu)
            .and_then(|t| QTensor::quantize(&t, GgmlDType::Q4K))
            .expect("quantize");
        // A wrong activation length, several rows at once, a wrong output length.
        assert!(gemv(&w, &values(128, 8), &mut out).is_none());
        let two_rows = Tensor::from_vec(values(512, 8), (1, 2, 256), &Device::Cpu).expect("x");
        assert!(forward_one_row(&w, &two_rows).expect("no error").is_none());
        assert!(gemv(&w, &values(256, 8), &mut out[..7]).is_none());
        assert!(out.iter().all(|&o| o == 1.0));
    }
}

#[cfg(test)]
mod speed {
    use super::*;
    use candle_core::quantized::{QMatMul, gguf_file};
    use candle_core::{Device, Module};
    use std::time::Instant;

    /// `KNOWHUB_GEMV_MODEL=path.gguf cargo test --release -p knowhub-llm --lib gemv::speed -- --ignored --nocapture`
    #[test]
    #[ignore = "needs a GGUF model; prints timings"]
    fn one_row_products_against_candle() {
        let Some(path) = std::env::var_os("KNOWHUB_GEMV_MODEL") else {
            return;
        };
        let mut file = std::fs::File::open(path).expect("model");
        let ct = gguf_file::Content::read(&mut file).expect("gguf");
        let names = [
            "blk.0.attn_q.weight",
            "blk.0.attn_k.weight",
            "blk.0.attn_v.weight",
            "blk.0.ffn_gate.weight",
            "blk.0.ffn_down.weight",
            "blk.1.ffn_down.weight",
            "token_embd.weight",
        ];
        for name in names {
            let Ok(w) = ct.tensor(&mut file, name, &Device::Cpu) else {
                continue;
            };
            let (rows, k) = w.shape().dims2().expect("2d");
            // candle's side as the model loads it: Q5_0 converted to Q8_0 (`requant`).
            let w = if w.dtype() == GgmlDType::Q5_0 {
                let dense = w.dequantize(&Device::Cpu).expect("dequantize");
                QTensor::quantize(&dense, GgmlDType::Q8_0).expect("requantize")
            } else {
                w
            };
            let dtype = w.dtype();
            let xs = Tensor::new(tests_values(k).as_slice(), &Device::Cpu)
                .and_then(|t| t.reshape((1, 1, k)))
                .expect("x");
            let w = std::sync::Arc::new(w);
            let mm = QMatMul::from_arc(w.clone()).expect("qmatmul");
            let reps = if rows > 100_000 { 10 } else { 200 };
            let time = |f: &dyn Fn() -> Tensor| {
                f();
                let t = Instant::now();
                for _ in 0..reps {
                    f();
                }
                t.elapsed().as_secs_f64() * 1e6 / reps as f64
            };
            let theirs = time(&|| mm.forward(&xs).expect("candle"));
            if !supports(&w) {
                println!(
                    "{name:24} {dtype:?} {rows}x{k}: candle {theirs:8.1} µs  (no kernel here)"
                );
                continue;
            }
            let ours = time(&|| forward_one_row(&w, &xs).expect("ours").expect("applies"));
            println!("{name:24} {dtype:?} {rows}x{k}: candle {theirs:8.1} µs  ours {ours:8.1} µs");
        }
    }

    fn tests_values(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
            .collect()
    }
}
