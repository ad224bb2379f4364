//! Class-index losses over a contiguous `(outer, classes, inner)` block: the fused
//! log-softmax + negative log-likelihood of `cross_entropy`, and `nll_loss`, forward and
//! backward. Pure functions over slices; nothing here knows about autograd. See Note
//! [Class-index losses].
//!
//! A *row* is one `(o, i)` pair: the `classes` values `x[o, :, i]` at stride `inner`,
//! and its target `targets[o * inner + i]`. Every row is computed on its own and
//! serially, so results do not depend on how rows are split among threads; work is
//! split by whole `outer` blocks whose count depends on the sizes only.

use super::softmax::{exp_minus, row_max, sum_exp_minus};
use super::vmath::avx2_variant;
use crate::dtype::{DType, Element, Float};
use crate::error::{Error, Result};
use crate::parallel::{for_each_chunk_mut, CHUNK, PARALLEL_MIN_ELEMENTS};

/// The shape of a class-index loss problem: `x` is `(outer, classes, inner)`
/// contiguous; the targets are `(outer, inner)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ClassBlock {
    /// Leading size (the batch, 1 for an unbatched input).
    pub outer: usize,
    /// Number of classes.
    pub classes: usize,
    /// Product of the trailing (spatial) sizes, 1 for `(N, C)`.
    pub inner: usize,
}

/// The per-problem options of a class-index loss.
#[derive(Copy, Clone, Debug)]
pub struct ClassOptions<'a> {
    /// One weight per class, or `None` for ones.
    pub weight: Option<&'a [f64]>,
    /// Rows whose target equals this contribute nothing.
    pub ignore_index: i64,
    /// Label smoothing in `[0, 1]` (0 for `nll_loss`).
    pub label_smoothing: f64,
    /// Whether `x` holds logits (`cross_entropy`: log-softmax is applied per row) or
    /// log-probabilities (`nll_loss`).
    pub log_softmax: bool,
}

impl ClassBlock {
    fn rows(&self) -> usize {
        self.outer * self.inner
    }

    fn len(&self) -> usize {
        self.outer * self.classes * self.inner
    }

    /// Outer blocks per parallel chunk: about `CHUNK` elements, at least one block.
    fn blocks_per_chunk(&self) -> usize {
        (CHUNK / (self.classes * self.inner).max(1)).max(1)
    }
}

/// Checks every target before any value is read: in `[0, classes)` or `ignore_index`.
/// PyTorch's IndexError "Target 7 is out of bounds.".
pub fn check_targets(targets: &[i64], classes: usize, ignore_index: i64) -> Result<()> {
    for &t in targets {
        if t != ignore_index && (t < 0 || t as u64 >= classes as u64) {
            return Err(Error::Index(format!("Target {t} is out of bounds.")));
        }
    }
    Ok(())
}

/// `exp(v)`, in float32 for float32 data (as PyTorch's float32 kernels; the sums it
/// feeds still accumulate in f64), in f64 otherwise.
#[inline]
fn exp_of<T: Element>(v: f64) -> f64 {
    if T::DTYPE == DType::F32 {
        f64::from((v as f32).exp())
    } else {
        v.exp()
    }
}

/// Log-sum-exp of one row; a NaN anywhere makes it NaN. A contiguous row (`inner` 1)
/// goes through the vectorised softmax helpers (Note [Vectorised exp]).
#[inline(always)]
fn row_logsumexp<T: Float>(x: &[T], base: usize, block: &ClassBlock) -> f64 {
    if block.inner == 1 {
        let row = &x[base..base + block.classes];
        let max = row_max(row);
        let m = max.to_f64();
        if m.is_nan() {
            return f64::NAN;
        }
        if m.is_infinite() {
            return if m > 0.0 { f64::NAN } else { m };
        }
        return m + sum_exp_minus(row, max).ln();
    }
    let mut max = f64::NEG_INFINITY;
    for c in 0..block.classes {
        let v = x[base + c * block.inner].to_f64();
        if v > max || v.is_nan() {
            max = v;
        }
    }
    if max.is_nan() {
        return f64::NAN;
    }
    if max.is_infinite() {
        // All -inf: log(0) = -inf; a +inf logit makes inf - inf = NaN (PyTorch's too).
        let shift = if max > 0.0 { f64::NAN } else { max };
        return shift;
    }
    let mut total = 0.0;
    for c in 0..block.classes {
        total += exp_of::<T>(x[base + c * block.inner].to_f64() - max);
    }
    max + total.ln()
}

/// The weight of class `c`.
#[inline]
fn class_weight(weight: Option<&[f64]>, c: usize) -> f64 {
    weight.map_or(1.0, |w| w[c])
}

/// Sum of the class weights (the smoothing mass of a row, before `ls / C`).
fn weight_total(weight: Option<&[f64]>, classes: usize) -> f64 {
    weight.map_or(classes as f64, |w| w.iter().sum())
}

/// One row's loss and its log-sum-exp (0 without log-softmax; unused for an ignored
/// row).
#[inline(always)]
fn row_loss<T: Float>(
    x: &[T],
    base: usize,
    target: i64,
    block: &ClassBlock,
    opts: &ClassOptions<'_>,
) -> (f64, f64) {
    if target == opts.ignore_index {
        return (0.0, 0.0);
    }
    let t = target as usize;
    let lse = if opts.log_softmax {
        row_logsumexp(x, base, block)
    } else {
        0.0
    };
    let logp = |c: usize| x[base + c * block.inner].to_f64() - lse;
    let w_t = class_weight(opts.weight, t);
    let ls = opts.label_smoothing;
    let mut loss = -(1.0 - ls) * w_t * logp(t);
    if ls > 0.0 {
        let mut smooth = 0.0;
        for c in 0..block.classes {
            smooth += class_weight(opts.weight, c) * logp(c);
        }
        loss -= ls / block.classes as f64 * smooth;
    }
    (loss, lse)
}

/// What the forward of a class-index loss computes: per row (row-major over
/// `(outer, inner)`), the loss and the log-sum-exp of its logits (0 without
/// log-softmax; the backward reuses it), and the sum of the targets' weights over the
/// rows not ignored (`mean`'s divisor).
#[derive(Clone, Debug)]
pub struct ClassForward {
    /// `(loss, log-sum-exp)` of each row.
    pub rows: Vec<(f64, f64)>,
    /// The total weight of the rows not ignored.
    pub total_weight: f64,
}

/// The forward of a class-index loss. The slices are checked against `block`, and the
/// targets with [`check_targets`], before any value is read.
pub fn class_loss_forward<T: Float>(
    x: &[T],
    targets: &[i64],
    block: ClassBlock,
    opts: &ClassOptions<'_>,
) -> Result<ClassForward> {
    check_lengths(x.len(), targets.len(), block, opts)?;
    check_targets(targets, block.classes, opts.ignore_index)?;
    let mut losses = super::try_vec(block.rows(), (0.0f64, 0.0f64))?;
    let chunk_rows = block.blocks_per_chunk() * block.inner;
    let fill = |chunk_index: usize, out: &mut [(f64, f64)]| {
        let first = chunk_index * chunk_rows;
        for (k, slot) in out.iter_mut().enumerate() {
            let r = first + k;
            let (o, i) = (r / block.inner, r % block.inner);
            let base = o * block.classes * block.inner + i;
            *slot = row_loss(x, base, targets[r], &block, opts);
        }
    };
    if block.len() >= PARALLEL_MIN_ELEMENTS {
        for_each_chunk_mut(&mut losses, chunk_rows, fill);
    } else {
        losses
            .chunks_mut(chunk_rows.max(1))
            .enumerate()
            .for_each(|(i, c)| fill(i, c));
    }
    // Serial, in row order: the divisor does not depend on the thread count either.
    let total_weight = targets
        .iter()
        .filter(|&&t| t != opts.ignore_index)
        .map(|&t| class_weight(opts.weight, t as usize))
        .sum();
    Ok(ClassForward {
        rows: losses,
        total_weight,
    })
}

/// The gradient of the loss with respect to `x` (same layout), given the gradient
/// scale of each row, `row_scale(r)` (the incoming gradient, divided by the total
/// weight for `mean`): `scale * (S * softmax(x) - Q)` for logits, `-scale * Q` for
/// log-probabilities, where `Q[c]` is the row's target distribution times the class
/// weights and `S = sum(Q)`. `lse` holds each row's log-sum-exp when the forward kept
/// it (else it is recomputed).
pub fn class_loss_backward<T: Float>(
    x: &[T],
    targets: &[i64],
    block: ClassBlock,
    opts: &ClassOptions<'_>,
    lse: Option<&[f64]>,
    row_scale: &(dyn Fn(usize) -> f64 + Sync),
) -> Result<Vec<T>> {
    check_lengths(x.len(), targets.len(), block, opts)?;
    if lse.is_some_and(|l| l.len() != block.rows()) {
        return Err(internal_lengths());
    }
    check_targets(targets, block.classes, opts.ignore_index)?;
    let mut grad = super::try_vec(block.len(), T::from_f64(0.0))?;
    let chunk_len = block.blocks_per_chunk() * block.classes * block.inner;
    let smooth = opts.label_smoothing / block.classes as f64;
    let total = weight_total(opts.weight, block.classes);
    let fill = |chunk_index: usize, out: &mut [T]| {
        let first_block = chunk_index * block.blocks_per_chunk();
        let blocks = out.len() / (block.classes * block.inner).max(1);
        for b in 0..blocks {
            let o = first_block + b;
            for i in 0..block.inner {
                let r = o * block.inner + i;
                let target = targets[r];
                if target == opts.ignore_index {
                    continue;
                }
                let t = target as usize;
                let scale = row_scale(r);
                let w_t = class_weight(opts.weight, t);
                let local = b * block.classes * block.inner + i;
                let base = o * block.classes * block.inner + i;
                let q = |c: usize| {
                    let hit = if c == t {
                        (1.0 - opts.label_smoothing) * w_t
                    } else {
                        0.0
                    };
                    hit + smooth * class_weight(opts.weight, c)
                };
                if opts.log_softmax && block.inner == 1 {
                    let lse = match lse {
                        Some(l) => l[r],
                        None => row_logsumexp(x, base, &block),
                    };
                    let s = (1.0 - opts.label_smoothing) * w_t + smooth * total;
                    let row = &x[base..base + block.classes];
                    let out_row = &mut out[local..local + block.classes];
                    logits_row_grad(row, out_row, lse, scale * s, scale * smooth, opts.weight);
                    let hit = T::from_f64(scale * (1.0 - opts.label_smoothing) * w_t);
                    out_row[t] = out_row[t] - hit;
                } else if opts.log_softmax {
                    let lse = match lse {
                        Some(l) => l[r],
                        None => row_logsumexp(x, base, &block),
                    };
                    let s = (1.0 - opts.label_smoothing) * w_t + smooth * total;
                    for c in 0..block.classes {
                        let p = exp_of::<T>(x[base + c * block.inner].to_f64() - lse);
                        out[local + c * block.inner] = T::from_f64(scale * (s * p - q(c)));
                    }
                } else {
                    for c in 0..block.classes {
                        out[local + c * block.inner] = T::from_f64(-scale * q(c));
                    }
                }
            }
        }
    };
    if block.len() >= PARALLEL_MIN_ELEMENTS {
        for_each_chunk_mut(&mut grad, chunk_len, fill);
    } else {
        grad.chunks_mut(chunk_len.max(1))
            .enumerate()
            .for_each(|(i, c)| fill(i, c));
    }
    Ok(grad)
}

/// `out[c] = a * exp(x[c] - lse) - b * w[c]` over a contiguous row of logits (`w`
/// the class weights, ones without): the gradient of a row before its target's term
/// is subtracted. Without weights the loop is branch-free and vectorises (Note
/// [Vectorised exp]).
#[inline(always)]
fn logits_row_grad_any<T: Float>(
    row: &[T],
    out: &mut [T],
    lse: f64,
    a: f64,
    b: f64,
    weight: Option<&[f64]>,
) {
    let shift = T::from_f64(lse);
    let a_t = T::from_f64(a);
    match weight {
        None => {
            let b_t = T::from_f64(b);
            for (o, &v) in out.iter_mut().zip(row) {
                *o = a_t * exp_minus(v, shift) - b_t;
            }
        }
        Some(w) => {
            for ((o, &v), &wc) in out.iter_mut().zip(row).zip(w) {
                *o = a_t * exp_minus(v, shift) - T::from_f64(b * wc);
            }
        }
    }
}

avx2_variant!(fn logits_row_grad<T>(
    row: &[T],
    out: &mut [T],
    lse: f64,
    a: f64,
    b: f64,
    weight: Option<&[f64]>,
) = logits_row_grad_any);

/// The dense target distribution times the class weights, `Q` (layout of `x`), and its
/// per-row sums `S` (layout `(outer, 1, inner)`), for the differentiable backward.
pub fn class_loss_targets(
    targets: &[i64],
    block: ClassBlock,
    opts: &ClassOptions<'_>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    if targets.len() != block.rows() {
        return Err(internal_lengths());
    }
    check_targets(targets, block.classes, opts.ignore_index)?;
    let mut q = super::try_vec(block.len(), 0.0f64)?;
    let mut s = super::try_vec(block.rows(), 0.0f64)?;
    let smooth = opts.label_smoothing / block.classes as f64;
    let total = weight_total(opts.weight, block.classes);
    for (r, &target) in targets.iter().enumerate() {
        if target == opts.ignore_index {
            continue;
        }
        let t = target as usize;
        let (o, i) = (r / block.inner, r % block.inner);
        let base = o * block.classes * block.inner + i;
        let w_t = class_weight(opts.weight, t);
        for c in 0..block.classes {
            q[base + c * block.inner] = smooth * class_weight(opts.weight, c);
        }
        q[base + t * block.inner] += (1.0 - opts.label_smoothing) * w_t;
        s[r] = (1.0 - opts.label_smoothing) * w_t + smooth * total;
    }
    Ok((q, s))
}

fn check_lengths(
    x: usize,
    targets: usize,
    block: ClassBlock,
    opts: &ClassOptions<'_>,
) -> Result<()> {
    let weight_ok = opts.weight.is_none_or(|w| w.len() == block.classes);
    if x != block.len() || targets != block.rows() || !weight_ok {
        return Err(internal_lengths());
    }
    Ok(())
}

fn internal_lengths() -> Error {
    Error::InvalidArgument(
        "rustgrad internal error: class loss operands do not match their block".into(),
    )
}

// ----- margin losses ---------------------------------------------------------------------
//
// `multi_margin_loss` and `multilabel_margin_loss` over `(frames, dim)` rows, as ATen's
// CPU kernels compute them (serially per row, in f64), forward and backward. See Note
// [Margin and CTC losses].

/// The options of `multi_margin_loss`.
#[derive(Copy, Clone, Debug)]
pub struct MultiMargin<'a> {
    /// The exponent: 1 or 2.
    pub p: u8,
    /// The margin.
    pub margin: f64,
    /// One weight per class, or `None` for ones.
    pub weight: Option<&'a [f64]>,
}

/// Runs `f(row)` for every row, in parallel by whole rows when the problem is large;
/// each row is computed serially, so the results do not depend on the thread count.
fn per_row(rows: usize, work: usize, f: impl Fn(usize) -> f64 + Sync + Send) -> Result<Vec<f64>> {
    let mut out = super::try_vec(rows, 0.0f64)?;
    if work >= PARALLEL_MIN_ELEMENTS {
        crate::parallel::fill_each(&mut out, f);
    } else {
        out.iter_mut().enumerate().for_each(|(r, v)| *v = f(r));
    }
    Ok(out)
}

/// Per-row `multi_margin_loss`: `sum_{d != y} w_y max(0, margin - x_y + x_d)^p / dim`.
/// The targets must already be checked to lie in `[0, dim)`.
pub fn multi_margin_forward(
    x: &[f64],
    targets: &[i64],
    dim: usize,
    opts: &MultiMargin<'_>,
) -> Result<Vec<f64>> {
    per_row(targets.len(), x.len(), |r| {
        let row = &x[r * dim..(r + 1) * dim];
        let y = targets[r] as usize;
        let mut sum = 0.0;
        for (d, &xd) in row.iter().enumerate() {
            if d == y {
                continue;
            }
            let z = opts.margin - row[y] + xd;
            if z > 0.0 {
                let h = if opts.p == 1 { z } else { z * z };
                sum += opts.weight.map_or(h, |w| h * w[y]);
            }
        }
        sum / dim as f64
    })
}

/// The gradient of `multi_margin_loss` with respect to `x`, each row scaled by
/// `row_scale(r)` (the incoming gradient over `dim`, and over the rows for `mean`).
pub fn multi_margin_backward(
    x: &[f64],
    targets: &[i64],
    dim: usize,
    opts: &MultiMargin<'_>,
    row_scale: &(dyn Fn(usize) -> f64 + Sync),
) -> Result<Vec<f64>> {
    let mut grad = super::try_vec(x.len(), 0.0f64)?;
    let fill = |r: usize, out: &mut [f64]| {
        let row = &x[r * dim..(r + 1) * dim];
        let y = targets[r] as usize;
        let g = row_scale(r);
        let mut grad_target = 0.0;
        for (d, &xd) in row.iter().enumerate() {
            if d == y {
                continue;
            }
            let z = opts.margin - row[y] + xd;
            if z > 0.0 {
                let h = if opts.p == 1 { g } else { 2.0 * g * z };
                let h = opts.weight.map_or(h, |w| h * w[y]);
                grad_target -= h;
                out[d] = h;
            }
        }
        out[y] = grad_target;
    };
    if x.len() >= PARALLEL_MIN_ELEMENTS {
        for_each_chunk_mut(&mut grad, dim, fill);
    } else {
        grad.chunks_mut(dim.max(1))
            .enumerate()
            .for_each(|(r, c)| fill(r, c));
    }
    Ok(grad)
}

/// The classes a `multilabel_margin_loss` row targets: its target entries up to the
/// first `-1`. The targets must already be checked to lie in `[-1, dim)`.
fn multilabel_targets(targets: &[i64]) -> impl Iterator<Item = usize> + '_ {
    targets.iter().take_while(|&&t| t >= 0).map(|&t| t as usize)
}

/// Per-row `multilabel_margin_loss`: `sum_{j target, d not target} max(0, 1 - x_j +
/// x_d) / dim`.
pub fn multilabel_margin_forward(x: &[f64], targets: &[i64], dim: usize) -> Result<Vec<f64>> {
    let rows = x.len().checked_div(dim).unwrap_or(0);
    per_row(rows, x.len(), |r| {
        let row = &x[r * dim..(r + 1) * dim];
        let target = &targets[r * dim..(r + 1) * dim];
        let mut is_target = vec![false; dim];
        multilabel_targets(target).for_each(|j| is_target[j] = true);
        let mut sum = 0.0;
        for j in multilabel_targets(target) {
            for (d, &xd) in row.iter().enumerate() {
                if !is_target[d] {
                    let z = 1.0 - row[j] + xd;
                    if z > 0.0 {
                        sum += z;
                    }
                }
            }
        }
        sum / dim as f64
    })
}

/// The gradient of `multilabel_margin_loss` with respect to `x`, each row scaled by
/// `row_scale(r)`.
pub fn multilabel_margin_backward(
    x: &[f64],
    targets: &[i64],
    dim: usize,
    row_scale: &(dyn Fn(usize) -> f64 + Sync),
) -> Result<Vec<f64>> {
    let mut grad = super::try_vec(x.len(), 0.0f64)?;
    let fill = |r: usize, out: &mut [f64]| {
        let row = &x[r * dim..(r + 1) * dim];
        let target = &targets[r * dim..(r + 1) * dim];
        let g = row_scale(r);
        let mut is_target = vec![false; dim];
        multilabel_targets(target).for_each(|j| is_target[j] = true);
        for j in multilabel_targets(target) {
            for (d, &xd) in row.iter().enumerate() {
                if !is_target[d] && 1.0 - row[j] + xd > 0.0 {
                    out[j] -= g;
                    out[d] += g;
                }
            }
        }
    };
    if x.len() >= PARALLEL_MIN_ELEMENTS {
        for_each_chunk_mut(&mut grad, dim, fill);
    } else {
        grad.chunks_mut(dim.max(1))
            .enumerate()
            .for_each(|(r, c)| fill(r, c));
    }
    Ok(grad)
}

// ----- CTC ------------------------------------------------------------------------------
//
// The connectionist temporal classification loss as ATen's CPU kernel computes it: the
// forward variables alpha in log space, the negative log-likelihood of each sample, and
// in the backward the beta variables and the gradient with respect to the log-probabilities.

/// A CTC problem: `log_probs` is `(time, batch, classes)` contiguous; sample `b`'s target
/// labels are `targets[target_offsets[b] + k * target_stride]` for `k < target_lengths[b]`
/// (checked to lie in `[0, classes)`), its input the first `input_lengths[b]` steps.
#[derive(Clone, Debug)]
pub struct Ctc<'a> {
    /// The log-probabilities, `(time, batch, classes)`.
    pub log_probs: &'a [f64],
    /// The number of time steps.
    pub time: usize,
    /// The batch size.
    pub batch: usize,
    /// The number of classes (blank included).
    pub classes: usize,
    /// The target labels (concatenated or padded).
    pub targets: &'a [i64],
    /// Where each sample's labels start in `targets`.
    pub target_offsets: &'a [usize],
    /// The step between consecutive labels of one sample.
    pub target_stride: usize,
    /// Each sample's input length (at most `time`).
    pub input_lengths: &'a [usize],
    /// Each sample's target length.
    pub target_lengths: &'a [usize],
    /// The blank label.
    pub blank: usize,
}

impl Ctc<'_> {
    /// The number of extended labels (blank, l1, blank, ..., blank) of the longest target.
    pub fn states(&self) -> usize {
        2 * self.target_lengths.iter().copied().max().unwrap_or(0) + 1
    }

    /// Label `s` of sample `b`'s extended target: the blank at even `s`.
    fn prime(&self, b: usize, s: usize) -> usize {
        if s.is_multiple_of(2) {
            self.blank
        } else {
            self.targets[self.target_offsets[b] + (s / 2) * self.target_stride] as usize
        }
    }

    fn lp(&self, t: usize, b: usize, c: usize) -> f64 {
        self.log_probs[(t * self.batch + b) * self.classes + c]
    }
}

/// `log(exp(a) + exp(b) + exp(c))` as ATen computes it (a max of `-inf` counts as 0).
fn log_sum3(a: f64, b: f64, c: f64) -> f64 {
    let mut m = a.max(b).max(c);
    if m == f64::NEG_INFINITY {
        m = 0.0;
    }
    ((a - m).exp() + (b - m).exp() + (c - m).exp()).ln() + m
}

/// The forward: each sample's negative log-likelihood and its log-alpha table
/// (`(batch, time, states)`, `-inf` outside its lengths).
pub fn ctc_forward(p: &Ctc<'_>) -> Result<(Vec<f64>, Vec<f64>)> {
    let states = p.states();
    let per_sample = p.time * states;
    let mut log_alpha = super::try_vec(p.batch * per_sample, f64::NEG_INFINITY)?;
    let fill = |b: usize, la: &mut [f64]| {
        let (il, tl) = (p.input_lengths[b], p.target_lengths[b]);
        if il == 0 {
            return;
        }
        la[0] = p.lp(0, b, p.blank);
        if tl > 0 {
            la[1] = p.lp(0, b, p.prime(b, 1));
        }
        for t in 1..il {
            for s in 0..2 * tl + 1 {
                let current = p.prime(b, s);
                let prev = (t - 1) * states;
                let la1 = la[prev + s];
                let la2 = if s > 0 {
                    la[prev + s - 1]
                } else {
                    f64::NEG_INFINITY
                };
                let la3 = if s > 1 && p.prime(b, s - 2) != current {
                    la[prev + s - 2]
                } else {
                    f64::NEG_INFINITY
                };
                la[t * states + s] = log_sum3(la1, la2, la3) + p.lp(t, b, current);
            }
        }
    };
    let work = p.batch * per_sample;
    if work >= PARALLEL_MIN_ELEMENTS {
        for_each_chunk_mut(&mut log_alpha, per_sample.max(1), fill);
    } else if per_sample > 0 {
        log_alpha
            .chunks_mut(per_sample)
            .enumerate()
            .for_each(|(b, c)| fill(b, c));
    }
    let nll = (0..p.batch)
        .map(|b| {
            let (il, tl) = (p.input_lengths[b], p.target_lengths[b]);
            if il == 0 {
                // No path through an empty input, except to an empty target.
                return if tl == 0 { -0.0 } else { f64::INFINITY };
            }
            let last = &log_alpha[b * per_sample + (il - 1) * states..];
            if tl == 0 {
                -last[0]
            } else {
                -log_sum3(last[2 * tl], last[2 * tl - 1], f64::NEG_INFINITY)
            }
        })
        .collect();
    Ok((nll, log_alpha))
}

/// The gradient with respect to the log-probabilities (`(time, batch, classes)`), as
/// ATen's CPU kernel computes it: `exp(lp) - exp(log(alpha beta) + nll - lp)` times the
/// sample's incoming gradient `grad_out[b]` over its input length, 0 after it; a sample
/// whose loss is infinite gets zeros when `zero_infinity`. (The `exp(lp)` term is the
/// gradient through a log-softmax ATen assumes; it is what PyTorch returns.)
pub fn ctc_backward(
    p: &Ctc<'_>,
    nll: &[f64],
    log_alpha: &[f64],
    grad_out: &[f64],
    zero_infinity: bool,
) -> Result<Vec<f64>> {
    let states = p.states();
    let per_sample = p.time * p.classes;
    // Computed per sample as `(batch, time, classes)`, then transposed.
    let mut by_sample = super::try_vec(p.batch * per_sample, 0.0f64)?;
    let fill = |b: usize, out: &mut [f64]| {
        let (il, tl) = (p.input_lengths[b], p.target_lengths[b]);
        if (zero_infinity && nll[b] == f64::INFINITY) || il == 0 {
            return;
        }
        let la = &log_alpha[b * p.time * states..(b + 1) * p.time * states];
        let mut lb = vec![f64::NEG_INFINITY; il * states];
        // log(sum over s with prime(s) = c of alpha beta), per (t, c).
        let mut lcab = vec![f64::NEG_INFINITY; il * p.classes];
        let add = |lcab: &mut [f64], at: usize, value: f64| {
            let current = lcab[at];
            lcab[at] = if current == f64::NEG_INFINITY {
                value
            } else {
                let m = current.max(value);
                ((current - m).exp() + (value - m).exp()).ln() + m
            };
        };
        let last = il - 1;
        lb[last * states + 2 * tl] = p.lp(last, b, p.blank);
        add(
            &mut lcab,
            last * p.classes + p.blank,
            la[last * states + 2 * tl] + lb[last * states + 2 * tl],
        );
        if tl > 0 {
            let label = p.prime(b, 2 * tl - 1);
            lb[last * states + 2 * tl - 1] = p.lp(last, b, label);
            add(
                &mut lcab,
                last * p.classes + label,
                la[last * states + 2 * tl - 1] + lb[last * states + 2 * tl - 1],
            );
        }
        for t in (0..last).rev() {
            for s in (0..2 * tl + 1).rev() {
                let current = p.prime(b, s);
                let next = (t + 1) * states;
                let lb1 = lb[next + s];
                let lb2 = if s < 2 * tl {
                    lb[next + s + 1]
                } else {
                    f64::NEG_INFINITY
                };
                let lb3 = if s + 2 < 2 * tl + 1 && p.prime(b, s + 2) != current {
                    lb[next + s + 2]
                } else {
                    f64::NEG_INFINITY
                };
                let beta = log_sum3(lb1, lb2, lb3) + p.lp(t, b, current);
                lb[t * states + s] = beta;
                add(
                    &mut lcab,
                    t * p.classes + current,
                    la[t * states + s] + beta,
                );
            }
        }
        let g = grad_out[b];
        for t in 0..il {
            for c in 0..p.classes {
                let lp = p.lp(t, b, c);
                let res = lcab[t * p.classes + c];
                out[t * p.classes + c] = (lp.exp() - (res + nll[b] - lp).exp()) * g;
            }
        }
    };
    if p.batch * per_sample >= PARALLEL_MIN_ELEMENTS {
        for_each_chunk_mut(&mut by_sample, per_sample.max(1), fill);
    } else if per_sample > 0 {
        by_sample
            .chunks_mut(per_sample)
            .enumerate()
            .for_each(|(b, c)| fill(b, c));
    }
    let mut grad = super::try_vec(p.batch * per_sample, 0.0f64)?;
    for b in 0..p.batch {
        for t in 0..p.time {
            let from = (b * p.time + t) * p.classes;
            let to = (t * p.batch + b) * p.classes;
            grad[to..to + p.classes].copy_from_slice(&by_sample[from..from + p.classes]);
        }
    }
    Ok(grad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_targets_are_errors() {
        assert!(check_targets(&[0, 2], 3, -100).is_ok());
        assert!(check_targets(&[-100], 3, -100).is_ok());
        let err = check_targets(&[0, 3], 3, -100).unwrap_err();
        assert_eq!(err.to_string(), "Target 3 is out of bounds.");
        assert!(check_targets(&[-1], 3, -100).is_err());
    }

    #[test]
    fn cross_entropy_of_one_row_matches_the_formula() {
        let x = [1.0f64, 2.0, 3.0];
        let block = ClassBlock {
            outer: 1,
            classes: 3,
            inner: 1,
        };
        let opts = ClassOptions {
            weight: None,
            ignore_index: -100,
            label_smoothing: 0.0,
            log_softmax: true,
        };
        let forward = class_loss_forward(&x, &[2], block, &opts).unwrap();
        let lse = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln();
        assert!((forward.rows[0].0 - (lse - 3.0)).abs() < 1e-12);
        assert!((forward.rows[0].1 - lse).abs() < 1e-12);
        assert_eq!(forward.total_weight, 1.0);
        let g = class_loss_backward(&x, &[2], block, &opts, None, &|_| 1.0).unwrap();
        let sum: f64 = g.iter().sum();
        assert!(sum.abs() < 1e-12, "softmax minus one-hot sums to 0");
    }

    #[test]
    fn ctc_of_two_steps_sums_the_three_alignments() {
        // Uniform over {blank, 1}: the alignments of "1" in two steps are 11, b1, 1b.
        let lp = vec![0.5f64.ln(); 4];
        let problem = Ctc {
            log_probs: &lp,
            time: 2,
            batch: 1,
            classes: 2,
            targets: &[1],
            target_offsets: &[0],
            target_stride: 1,
            input_lengths: &[2],
            target_lengths: &[1],
            blank: 0,
        };
        let (nll, log_alpha) = ctc_forward(&problem).unwrap();
        assert!((nll[0] + 0.75f64.ln()).abs() < 1e-12);
        let grad = ctc_backward(&problem, &nll, &log_alpha, &[1.0], false).unwrap();
        // The state occupancies of each step sum to 1, so for normalised
        // log-probabilities each step's gradient sums to 0.
        for t in 0..2 {
            assert!((grad[2 * t] + grad[2 * t + 1]).abs() < 1e-12);
        }
    }

    #[test]
    fn margin_losses_match_their_formulas() {
        let x = [0.1f64, 0.2, 0.4, 0.8];
        let opts = MultiMargin {
            p: 1,
            margin: 1.0,
            weight: None,
        };
        // sum over d != 3 of max(0, 1 - 0.8 + x_d) / 4 = (0.3 + 0.4 + 0.6) / 4
        let loss = multi_margin_forward(&x, &[3], 4, &opts).unwrap();
        assert!((loss[0] - 0.325).abs() < 1e-12);
        // targets 3 and 0; non-targets 1 and 2
        let loss = multilabel_margin_forward(&x, &[3, 0, -1, 1], 4).unwrap();
        let want =
            ((1.0 - 0.8 + 0.2) + (1.0 - 0.8 + 0.4) + (1.0 - 0.1 + 0.2) + (1.0 - 0.1 + 0.4)) / 4.0;
        assert!((loss[0] - want).abs() < 1e-12);
        let grad = multilabel_margin_backward(&x, &[3, 0, -1, 1], 4, &|_| 1.0).unwrap();
        assert_eq!(grad, vec![-2.0, 2.0, 2.0, -2.0]);
    }
}
