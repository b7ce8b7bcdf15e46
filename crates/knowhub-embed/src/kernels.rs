//! CPU kernels for the element-wise steps of the BERT encoder ([`crate::bert`]), each fused
//! into one pass and run in place on the matmul output as a candle in-place op:
//!
//! - [`AddBias`]: `x += b` (after the fused query/key/value matmul);
//! - [`BiasAct`]: `x = act(x + b)` (the intermediate layer; GELU with erf, its tanh variant,
//!   or ReLU);
//! - [`BiasResidualNorm`]: `x = LayerNorm(x + b + residual)` (after the attention output and
//!   the FFN output);
//! - [`ScaledSoftmax`]: `x = softmax(x * scale)` over the last dimension (attention scores).
//!
//! Fusing saves a full pass and a fresh allocation per step (candle's `broadcast_add`, then
//! `gelu_erf`, then `layer_norm` each write a new tensor), and the math is written to
//! vectorise: [`exp`] is Cephes' `expf` range reduction with a degree-6 polynomial (relative
//! error ~1e-7) and [`erf`] is Abramowitz–Stegun 7.1.26 on top of it (absolute error < 1e-6
//! in f32, the same formula PyTorch's vectorised CPU `erf` uses), where candle calls scalar libm per
//! element. Rows are spread over rayon's pool.
//!
//! The ops only run on CPU storage in f32 with a contiguous layout and fail (an error, not a
//! panic) otherwise; [`crate::bert`] uses plain candle ops on other devices.

use candle_core::{CpuStorage, InplaceOp1, InplaceOp2, Layout, Result, bail};
use rayon::prelude::*;

/// About this many f32 values per rayon task: large enough to amortise the task, small
/// enough to balance the rows over the threads.
const TASK_ELEMS: usize = 1 << 15;

/// The hidden activation of the intermediate layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    /// `x * Φ(x)` with the exact (erf) normal CDF: BERT's `gelu`.
    Gelu,
    /// The tanh approximation of GELU (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    /// `max(x, 0)`.
    Relu,
}

fn f32_slice_mut<'a>(s: &'a mut CpuStorage, l: &Layout, op: &str) -> Result<&'a mut [f32]> {
    let CpuStorage::F32(v) = s else {
        bail!("{op}: f32 tensors only")
    };
    let Some((a, b)) = l.contiguous_offsets() else {
        bail!("{op}: contiguous tensors only")
    };
    Ok(&mut v[a..b])
}

fn f32_slice<'a>(s: &'a CpuStorage, l: &Layout, op: &str) -> Result<&'a [f32]> {
    let CpuStorage::F32(v) = s else {
        bail!("{op}: f32 tensors only")
    };
    let Some((a, b)) = l.contiguous_offsets() else {
        bail!("{op}: contiguous tensors only")
    };
    Ok(&v[a..b])
}

/// Runs `f` compiled for the best vector extension of this CPU (AVX-512 or AVX2/FMA on x86,
/// found at run time: the crate's baseline is x86-64-v3): `f` and the `#[inline(always)]`
/// math it calls are inlined into pulp's `#[target_feature]` entry points, where the loops
/// vectorise at that width.
#[inline(always)]
fn simd<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}

/// Rows of `width` values per rayon task.
fn rows_per_task(width: usize) -> usize {
    (TASK_ELEMS / width.max(1)).max(1)
}

/// Checks that `x` is made of whole rows of `width` and returns its row width.
fn check_rows(x: &[f32], width: usize, op: &str) -> Result<usize> {
    if width == 0 || !x.len().is_multiple_of(width) {
        bail!("{op}: {} values are not rows of {width}", x.len())
    }
    Ok(width)
}

/// `x += bias`, row by row.
#[derive(Debug)]
pub(crate) struct AddBias<'a>(pub(crate) &'a [f32]);

impl InplaceOp1 for AddBias<'_> {
    fn name(&self) -> &'static str {
        "add-bias"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> Result<()> {
        let x = f32_slice_mut(s, l, self.name())?;
        let w = check_rows(x, self.0.len(), self.name())?;
        x.par_chunks_mut(w * rows_per_task(w)).for_each(|rows| {
            simd(|| {
                for row in rows.chunks_exact_mut(w) {
                    for (v, &b) in row.iter_mut().zip(self.0) {
                        *v += b;
                    }
                }
            })
        });
        Ok(())
    }
}

/// `x = act(x + bias)`, row by row.
#[derive(Debug)]
pub(crate) struct BiasAct<'a> {
    pub(crate) bias: &'a [f32],
    pub(crate) act: Act,
}

impl InplaceOp1 for BiasAct<'_> {
    fn name(&self) -> &'static str {
        "bias-act"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> Result<()> {
        let x = f32_slice_mut(s, l, self.name())?;
        let w = check_rows(x, self.bias.len(), self.name())?;
        let act = self.act;
        x.par_chunks_mut(w * rows_per_task(w))
            .for_each(|rows| simd(|| bias_act_rows(rows, self.bias, act)));
        Ok(())
    }
}

#[inline(always)]
fn bias_act_rows(rows: &mut [f32], bias: &[f32], act: Act) {
    for row in rows.chunks_exact_mut(bias.len()) {
        match act {
            Act::Gelu => {
                for (v, &b) in row.iter_mut().zip(bias) {
                    *v = gelu(*v + b);
                }
            }
            Act::GeluTanh => {
                for (v, &b) in row.iter_mut().zip(bias) {
                    *v = gelu_tanh(*v + b);
                }
            }
            Act::Relu => {
                for (v, &b) in row.iter_mut().zip(bias) {
                    *v = (*v + b).max(0.0);
                }
            }
        }
    }
}

/// `x = LayerNorm(x + bias + residual) * gamma + beta`, row by row (the residual has the
/// shape of `x`).
#[derive(Debug)]
pub(crate) struct BiasResidualNorm<'a> {
    pub(crate) bias: &'a [f32],
    pub(crate) gamma: &'a [f32],
    pub(crate) beta: &'a [f32],
    pub(crate) eps: f32,
}

impl InplaceOp2 for BiasResidualNorm<'_> {
    fn name(&self) -> &'static str {
        "bias-residual-layer-norm"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout, rs: &CpuStorage, rl: &Layout) -> Result<()> {
        let x = f32_slice_mut(s, l, self.name())?;
        let res = f32_slice(rs, rl, self.name())?;
        let w = check_rows(x, self.bias.len(), self.name())?;
        if res.len() != x.len() || self.gamma.len() != w || self.beta.len() != w {
            bail!(
                "{}: shapes differ ({} vs {} values, width {w}, gamma {}, beta {})",
                self.name(),
                x.len(),
                res.len(),
                self.gamma.len(),
                self.beta.len()
            )
        }
        let n = w * rows_per_task(w);
        x.par_chunks_mut(n)
            .zip(res.par_chunks(n))
            .for_each(|(rows, res)| {
                simd(|| {
                    for (row, r) in rows.chunks_exact_mut(w).zip(res.chunks_exact(w)) {
                        for ((v, &b), &r) in row.iter_mut().zip(self.bias).zip(r) {
                            *v += b + r;
                        }
                        layer_norm_row(row, self.gamma, self.beta, self.eps);
                    }
                })
            });
        Ok(())
    }
}

/// `x = softmax(x * scale)` over the last dimension (rows of `width`).
#[derive(Debug)]
pub(crate) struct ScaledSoftmax {
    pub(crate) width: usize,
    pub(crate) scale: f32,
}

impl InplaceOp1 for ScaledSoftmax {
    fn name(&self) -> &'static str {
        "scaled-softmax"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> Result<()> {
        let x = f32_slice_mut(s, l, self.name())?;
        let w = check_rows(x, self.width, self.name())?;
        let scale = self.scale;
        x.par_chunks_mut(w * rows_per_task(w)).for_each(|rows| {
            simd(|| {
                for row in rows.chunks_exact_mut(w) {
                    softmax_row(row, scale);
                }
            })
        });
        Ok(())
    }
}

/// LayerNorm of one row in place (two-pass mean and variance, as the reference does).
#[inline(always)]
pub(crate) fn layer_norm_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    let var = sum_sq_dev(row, mean) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, &g), &b) in row.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

#[inline(always)]
fn softmax_row(row: &mut [f32], scale: f32) {
    let max = max(row);
    if max == f32::NEG_INFINITY {
        // Every score masked out: a uniform row rather than NaNs.
        row.fill(1.0 / row.len().max(1) as f32);
        return;
    }
    let shift = max * scale;
    for v in row.iter_mut() {
        *v = exp(*v * scale - shift);
    }
    let inv = 1.0 / sum(row);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// Lanes of the reductions below: independent accumulators the compiler keeps in vector
/// registers (a plain `iter().sum()` is a serial chain, since float addition is not
/// reassociated).
const LANES: usize = 16;

#[inline(always)]
fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    let mut s: f32 = acc.iter().sum();
    for &v in chunks.remainder() {
        s += v;
    }
    s
}

#[inline(always)]
fn sum_sq_dev(xs: &[f32], mean: f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            let d = v - mean;
            *a += d * d;
        }
    }
    let mut s: f32 = acc.iter().sum();
    for &v in chunks.remainder() {
        let d = v - mean;
        s += d * d;
    }
    s
}

#[inline(always)]
fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = if v > *a { v } else { *a };
        }
    }
    let mut m = acc.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    for &v in chunks.remainder() {
        m = m.max(v);
    }
    m
}

/// `e^x` for f32: Cephes' `expf` (range reduction by `ln 2` split in two parts, degree-6
/// polynomial), branch-free so that loops over it vectorise. Relative error ~1e-7 on
/// `[-87.3, 88.3]`; the input is clamped to that range (`e^-87.3` ≈ 1e-38 stands for 0).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.3, 88.3);
    let n = (x * LOG2E + 0.5).floor();
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    // 2^n: n is a whole number in [-126, 127] after the clamp, so n + 127 + 2^23 is exact and
    // its low mantissa bits are n + 127, the biased exponent of 2^n. (This avoids a float to
    // int cast, whose saturating semantics do not vectorise.)
    let biased = (n + (127.0 + 8_388_608.0)).to_bits();
    y * f32::from_bits(biased << 23)
}

/// The error function: Abramowitz & Stegun 7.1.26 (absolute error 1.5e-7 in exact
/// arithmetic, < 1e-6 in f32), vectorisable.
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = ((((1.061_405_4 * t - 1.453_152_1) * t + 1.421_413_7) * t - 0.284_496_74) * t
        + 0.254_829_6)
        * t;
    (1.0 - poly * exp(-a * a)).copysign(x)
}

/// GELU with the exact normal CDF: `x/2 * (1 + erf(x/√2))`.
#[inline(always)]
pub(crate) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// GELU's tanh approximation: `x/2 * (1 + tanh(√(2/π) (x + 0.044715 x³)))`, with
/// `1 + tanh(y) = 2 - 2 / (e^{2y} + 1)`.
#[inline(always)]
pub(crate) fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    let y = SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x);
    x * (1.0 - 1.0 / (exp(2.0 * y) + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

    fn erf64(x: f64) -> f64 {
        // High-precision reference: the Maclaurin series converges fast for |x| ≤ 3, and
        // 1 - erf(x) < 2.3e-5 beyond.
        if x.abs() > 3.0 {
            let c = libm_erfc_tail(x.abs());
            return (1.0 - c).copysign(x);
        }
        let mut term = x;
        let mut s = x;
        for n in 1..200 {
            term *= -x * x / n as f64;
            s += term / (2 * n + 1) as f64;
        }
        s * 2.0 / std::f64::consts::PI.sqrt()
    }

    fn libm_erfc_tail(x: f64) -> f64 {
        // Asymptotic expansion, accurate to ~1e-10 for x > 3.
        let t = 1.0 / (2.0 * x * x);
        let series = 1.0 - t + 3.0 * t * t - 15.0 * t * t * t + 105.0 * t.powi(4);
        (-x * x).exp() / (x * std::f64::consts::PI.sqrt()) * series
    }

    #[test]
    fn exp_is_accurate() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let got = f64::from(exp(x));
            let want = f64::from(x).exp();
            worst = worst.max(((got - want) / want).abs());
            x += 0.01;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-1000.0) < 1e-37 && exp(-1000.0) >= 0.0);
        assert!(exp(1000.0).is_finite());
    }

    #[test]
    fn erf_and_gelu_are_accurate() {
        let mut worst = 0f64;
        let mut worst_gelu = 0f64;
        let mut x = -8.0f32;
        while x < 8.0 {
            let want = erf64(f64::from(x));
            worst = worst.max((f64::from(erf(x)) - want).abs());
            let g = f64::from(x) * 0.5 * (1.0 + erf64(f64::from(x) / 2f64.sqrt()));
            worst_gelu = worst_gelu.max((f64::from(gelu(x)) - g).abs() / (1.0 + g.abs()));
            x += 0.001;
        }
        assert!(worst < 1e-6, "erf: worst absolute error {worst}");
        assert!(worst_gelu < 1e-6, "gelu: worst error {worst_gelu}");
        let t = gelu_tanh(1.0);
        assert!((t - 0.841_192).abs() < 1e-5, "{t}");
    }

    fn rand(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 6.0
            })
            .collect()
    }

    #[test]
    fn fused_ops_match_candle() -> Result<()> {
        let dev = Device::Cpu;
        let (rows, w) = (37, 48);
        let x = Tensor::from_vec(rand(rows * w, 1), (rows, w), &dev)?;
        let res = Tensor::from_vec(rand(rows * w, 2), (rows, w), &dev)?;
        let bias = rand(w, 3);
        let gamma = rand(w, 4);
        let beta = rand(w, 5);
        let bt = Tensor::from_slice(&bias, w, &dev)?;
        let close = |a: &Tensor, b: &Tensor, tol: f32| -> Result<()> {
            let d = (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert!(d < tol, "max difference {d}");
            Ok(())
        };

        let got = x.copy()?;
        got.inplace_op1(&AddBias(&bias))?;
        close(&got, &x.broadcast_add(&bt)?, 1e-6)?;

        let got = x.copy()?;
        got.inplace_op1(&BiasAct {
            bias: &bias,
            act: Act::Gelu,
        })?;
        close(&got, &x.broadcast_add(&bt)?.gelu_erf()?, 1e-5)?;
        let got = x.copy()?;
        got.inplace_op1(&BiasAct {
            bias: &bias,
            act: Act::GeluTanh,
        })?;
        close(&got, &x.broadcast_add(&bt)?.gelu()?, 1e-4)?;
        let got = x.copy()?;
        got.inplace_op1(&BiasAct {
            bias: &bias,
            act: Act::Relu,
        })?;
        close(&got, &x.broadcast_add(&bt)?.relu()?, 1e-6)?;

        let got = x.copy()?;
        got.inplace_op2(
            &res,
            &BiasResidualNorm {
                bias: &bias,
                gamma: &gamma,
                beta: &beta,
                eps: 1e-12,
            },
        )?;
        let want = candle_nn::ops::layer_norm(
            &(x.broadcast_add(&bt)? + &res)?,
            &Tensor::from_slice(&gamma, w, &dev)?,
            &Tensor::from_slice(&beta, w, &dev)?,
            1e-12,
        )?;
        close(&got, &want, 1e-4)?;

        let got = x.copy()?;
        got.inplace_op1(&ScaledSoftmax {
            width: w,
            scale: 0.3,
        })?;
        close(&got, &candle_nn::ops::softmax_last_dim(&(&x * 0.3)?)?, 1e-6)?;

        // Wrong shapes are errors, not panics.
        let bad = x.copy()?;
        assert!(bad.inplace_op1(&AddBias(&bias[..w - 1])).is_err());
        assert!(
            x.narrow(1, 1, 4)?
                .inplace_op1(&ScaledSoftmax {
                    width: 4,
                    scale: 1.0
                })
                .is_err()
        );
        Ok(())
    }
}
