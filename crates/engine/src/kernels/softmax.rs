//! Softmax and log-softmax along one dim of a contiguous `(outer, size, inner)` block,
//! in one kernel: per row, the max, then `exp(x - max)` summed, then the result (Note
//! [Vectorised exp]).
//!
//! A *row* is the `size` values `x[o, :, i]`. Rows are computed independently and
//! serially, so results do not depend on the thread count; work is split by whole
//! `outer` blocks, a number that depends on the sizes only.

use super::vmath::{avx2_variant, exp_f32};
use crate::dtype::{DType, Float, Num};
use crate::error::Result;
use crate::parallel::{for_each_chunk_mut, CHUNK, PARALLEL_MIN_ELEMENTS};

/// The shape of a softmax problem: `x` is `(outer, size, inner)` contiguous and the
/// softmax runs along `size`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SoftmaxBlock {
    /// Product of the sizes before the softmax dim.
    pub outer: usize,
    /// Size of the softmax dim.
    pub size: usize,
    /// Product of the sizes after it.
    pub inner: usize,
}

/// `exp(x - shift)`: float32 through the vectorisable [`exp_f32`], others through
/// their own `exp`.
#[inline(always)]
pub(crate) fn exp_minus<T: Float>(x: T, shift: T) -> T {
    if T::DTYPE == DType::F32 {
        T::from_f64(f64::from(exp_f32(
            x.to_f64() as f32 - shift.to_f64() as f32,
        )))
    } else {
        (x - shift).exp()
    }
}

/// The larger of `max` and `v`, where a NaN wins (so a NaN anywhere makes the row NaN).
#[inline(always)]
fn nan_max<T: Float>(max: T, v: T) -> T {
    #[allow(clippy::eq_op)] // `v != v`: NaN
    if v > max || v != v {
        v
    } else {
        max
    }
}

/// Writes softmax (or, with `log`, log-softmax) of the row `x` (contiguous) into `out`.
#[inline(always)]
fn contiguous_row<T: Float>(x: &[T], out: &mut [T], log: bool) {
    let max = row_max_any(x);
    let total = exp_shifted_sum(x, max, out);
    finish_row(x.iter().copied(), out.iter_mut(), max, total, log);
}

/// `out[i] = exp(x[i] - shift)` over equal-length slices (the shorter bounds the loop),
/// and the sum of the results (see [`sum_lanes`]). Two passes, a pure map and then a
/// sum, so that each vectorises on full-width registers.
#[inline(always)]
pub(crate) fn exp_shifted_sum<T: Float>(x: &[T], shift: T, out: &mut [T]) -> f64 {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = exp_minus(v, shift);
    }
    sum_lanes(&out[..x.len().min(out.len())])
}

/// The sum of `values` accumulated in float64 over eight lanes in a fixed order.
#[inline(always)]
fn sum_lanes<T: Float>(values: &[T]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let mut chunks = values.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            lanes[k] += c[k].to_f64();
        }
    }
    for (k, &v) in chunks.remainder().iter().enumerate() {
        lanes[k] += v.to_f64();
    }
    lanes.iter().sum()
}

/// `sum(exp(x[i] - shift))` as [`exp_shifted_sum`] computes it, through a stack buffer
/// of 256 values at a time. The blocks' sums are added in order, so the result does not
/// depend on anything but `x`.
#[inline(always)]
fn sum_exp_minus_any<T: Float>(x: &[T], shift: T) -> f64 {
    let mut buffer = [T::from_f64(0.0); 256];
    let mut total = 0.0;
    // A plain loop: an iterator adaptor's `fold` would be a call that is not inlined
    // into the AVX2 copy.
    for block in x.chunks(256) {
        total += exp_shifted_sum(block, shift, &mut buffer);
    }
    total
}

/// The largest value of a row, NaN when it holds one (`-inf` for an empty row).
#[inline(always)]
fn row_max_any<T: Float>(x: &[T]) -> T {
    // Eight independent lanes, so that the loop vectorises; max is exact, so the lane
    // order changes nothing.
    let mut lanes = [neg_infinity::<T>(); 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            lanes[k] = nan_max(lanes[k], c[k]);
        }
    }
    let rest = chunks.remainder().iter();
    rest.chain(&lanes)
        .fold(neg_infinity(), |m, &v| nan_max(m, v))
}

avx2_variant!(pub(crate) fn sum_exp_minus<T>(x: &[T], shift: T) -> f64 = sum_exp_minus_any);
avx2_variant!(pub(crate) fn row_max<T>(x: &[T]) -> T = row_max_any);

/// Negative infinity as `T`.
#[inline(always)]
fn neg_infinity<T: Float>() -> T {
    T::from_f64(f64::NEG_INFINITY)
}

/// Turns a row's `exp(x - max)` (in `out`) into the softmax, `exp / total`, or the
/// log-softmax, `(x - max) - ln(total)`.
#[inline(always)]
fn finish_row<'a, T: Float + 'a>(
    x: impl Iterator<Item = T>,
    out: impl Iterator<Item = &'a mut T>,
    max: T,
    total: f64,
    log: bool,
) {
    if log {
        let log_total = T::from_f64(total.ln());
        for (o, v) in out.zip(x) {
            *o = (v - max) - log_total;
        }
    } else {
        let total = T::from_f64(total);
        for o in out {
            *o = Num::div(*o, total);
        }
    }
}

/// One `(size, inner)` block with `inner > 1`: the rows are columns, processed side by
/// side so the inner loops run over contiguous memory.
#[inline(always)]
fn strided_block<T: Float>(x: &[T], out: &mut [T], block: SoftmaxBlock, log: bool) {
    let inner = block.inner;
    let mut max = vec![neg_infinity::<T>(); inner];
    for row in x.chunks_exact(inner) {
        for (m, &v) in max.iter_mut().zip(row) {
            *m = nan_max(*m, v);
        }
    }
    let mut total = vec![0.0f64; inner];
    for (row, out_row) in x.chunks_exact(inner).zip(out.chunks_exact_mut(inner)) {
        for (((o, &v), &m), t) in out_row.iter_mut().zip(row).zip(&max).zip(&mut total) {
            *o = exp_minus(v, m);
            *t += o.to_f64();
        }
    }
    // Per column: ln(total) for log-softmax, total for softmax.
    let finals: Vec<T> = total
        .iter()
        .map(|&t| T::from_f64(if log { t.ln() } else { t }))
        .collect();
    for (row, out_row) in x.chunks_exact(inner).zip(out.chunks_exact_mut(inner)) {
        for (((o, &v), &m), &f) in out_row.iter_mut().zip(row).zip(&max).zip(&finals) {
            *o = if log { (v - m) - f } else { Num::div(*o, f) };
        }
    }
}

/// Softmax (or log-softmax) of whole `(size, inner)` blocks: `x` and `out` hold the
/// same number of them.
#[inline(always)]
fn softmax_blocks_any<T: Float>(x: &[T], out: &mut [T], block: SoftmaxBlock, log: bool) {
    let per_block = block.size * block.inner;
    for (x_block, out_block) in x
        .chunks_exact(per_block)
        .zip(out.chunks_exact_mut(per_block))
    {
        if block.inner == 1 {
            contiguous_row(x_block, out_block, log);
        } else {
            strided_block(x_block, out_block, block, log);
        }
    }
}

avx2_variant!(fn softmax_blocks<T>(x: &[T], out: &mut [T], block: SoftmaxBlock, log: bool) = softmax_blocks_any);

/// Softmax (or log-softmax) of `x` along the middle dim of `block`, into a new
/// contiguous buffer. `x.len()` must be `outer * size * inner`.
pub fn softmax<T: Float>(x: &[T], block: SoftmaxBlock, log: bool) -> Result<Vec<T>> {
    let per_block = block.size * block.inner;
    let n = block.outer * per_block;
    debug_assert_eq!(x.len(), n);
    let mut out = super::try_vec(n, T::from_f64(0.0))?;
    if n == 0 {
        return Ok(out);
    }
    let blocks_per_chunk = (CHUNK / per_block).max(1);
    let run = |chunk_index: usize, out: &mut [T]| {
        let first = chunk_index * blocks_per_chunk * per_block;
        softmax_blocks(&x[first..first + out.len()], out, block, log);
    };
    // exp costs ~1 ns per element: the pool pays from PARALLEL_MIN_ELEMENTS, the
    // measured break-even of Note [Parallel thresholds].
    if n >= PARALLEL_MIN_ELEMENTS {
        for_each_chunk_mut(&mut out, blocks_per_chunk * per_block, run);
    } else {
        run(0, &mut out);
    }
    Ok(out)
}
