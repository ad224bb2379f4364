//! Normalisation kernels (batch, layer and group norm) over contiguous data seen as
//! `[outer][groups][inner]`: the statistics of group `j` are over its `outer * inner`
//! elements, and the affine weight of element `(j, l)` is
//! `weight[(j % wmod) * (inner / wdiv) + l / wdiv]`:
//!
//! | op | outer | groups | inner | wmod | wdiv |
//! | --- | --- | --- | --- | --- | --- |
//! | batch_norm `(N, C, *)` | N | C | prod(*) | C | inner |
//! | layer_norm | 1 | rows | prod(normalized_shape) | 1 | 1 |
//! | group_norm `(N, C, *)`, G groups | 1 | N·G | C/G·prod(*) | G | prod(*) |
//!
//! Sums accumulate in f64. Each group's statistics (and each row's outputs) are
//! computed by one thread in a fixed order, and weight gradients combine per-group
//! partials in group order, so results do not depend on the thread count (Note
//! \[Determinism\]).

use super::{try_collect, try_vec};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::parallel::{self, CHUNK, PARALLEL_MIN_ELEMENTS};

/// How a normalisation sees its contiguous input (see the module's table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormGeom {
    /// Blocks of `groups * inner` elements sharing nothing.
    pub outer: usize,
    /// Groups, each with its own statistics.
    pub groups: usize,
    /// Contiguous elements of a group within one outer block.
    pub inner: usize,
    /// Groups `j` and `j + wmod` share weights.
    pub wmod: usize,
    /// Consecutive elements of a group sharing one weight.
    pub wdiv: usize,
}

impl NormGeom {
    /// Elements per group's statistics.
    pub fn count(&self) -> usize {
        self.outer * self.inner
    }

    /// Weights of one group.
    fn per_group(&self) -> usize {
        self.inner / self.wdiv.max(1)
    }

    /// Number of weights (`wmod * inner / wdiv`).
    pub fn weights(&self) -> usize {
        self.wmod * self.per_group()
    }

    fn numel(&self) -> Option<usize> {
        self.outer.checked_mul(self.groups)?.checked_mul(self.inner)
    }

    fn check(&self, len: usize, what: &str) -> Result<()> {
        let ok = self.wmod >= 1
            && self.wdiv >= 1
            && self.inner.is_multiple_of(self.wdiv)
            && self.groups.is_multiple_of(self.wmod);
        if !ok || self.numel() != Some(len) {
            return Err(Error::NotImplemented(format!(
                "rustgrad internal error: {what} of {len} elements does not fit {self:?}"
            )));
        }
        Ok(())
    }
}

/// Weights per task of the weight and bias gradients' final sums.
const WEIGHT_BLOCK: usize = 64;

/// `f(j)` for every group into a vector, in groups of groups sized by `work` only.
fn per_group<A: Send + Clone>(
    groups: usize,
    work: usize,
    init: A,
    f: impl Fn(usize) -> A + Sync + Send,
) -> Result<Vec<A>> {
    let mut out = try_vec(groups, init)?;
    // Two f64 passes per element: the pool pays from PARALLEL_MIN_ELEMENTS elements of
    // work, the measured break-even of Note [Parallel thresholds].
    if work.saturating_mul(groups) < PARALLEL_MIN_ELEMENTS {
        for (j, o) in out.iter_mut().enumerate() {
            *o = f(j);
        }
    } else {
        let size = (CHUNK / work.max(1)).max(1);
        parallel::for_each_chunk_mut(&mut out, size, |c, chunk| {
            for (k, o) in chunk.iter_mut().enumerate() {
                *o = f(c * size + k);
            }
        });
    }
    Ok(out)
}

/// Runs `f(row, out_row)` for each `inner`-long row `(o, j)` of `out`.
fn per_row<T: Send>(out: &mut [T], inner: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if inner == 0 {
        return;
    }
    if out.len() < PARALLEL_MIN_ELEMENTS {
        for (r, row) in out.chunks_mut(inner).enumerate() {
            f(r, row);
        }
        return;
    }
    let rows = (CHUNK / inner).max(1);
    parallel::for_each_chunk_mut(out, rows * inner, |c, chunk| {
        for (k, row) in chunk.chunks_mut(inner).enumerate() {
            f(c * rows + k, row);
        }
    });
}

/// Accumulators of [`lanes_sum`]: independent sums that break the chain of dependent
/// additions (a latency-bound loop ran at one add per four cycles) and vectorise.
const LANES: usize = 4;

/// `sum(f(x))` in f64 over a run: element `i` into lane `i % LANES`, the lanes added in
/// a fixed tree, then the tail left to right. The order depends on the length only, so
/// the result does not depend on the thread count (Note \[Determinism\]).
#[inline(always)]
fn lanes_sum<T: Element>(xs: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let mut blocks = xs.chunks_exact(LANES);
    for block in &mut blocks {
        for (lane, &v) in lanes.iter_mut().zip(block) {
            *lane += f(v.to_f64());
        }
    }
    let mut acc = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for &v in blocks.remainder() {
        acc += f(v.to_f64());
    }
    acc
}

/// `(sum(dy), sum(dy * (x - mean)))` over a run, in lanes as [`lanes_sum`].
#[inline(always)]
fn lanes_sum_pair<T: Element>(dy: &[T], x: &[T], mean: f64) -> (f64, f64) {
    let (mut d, mut dx) = ([0.0f64; LANES], [0.0f64; LANES]);
    let mut dy_blocks = dy.chunks_exact(LANES);
    let mut x_blocks = x.chunks_exact(LANES);
    for (gb, xb) in (&mut dy_blocks).zip(&mut x_blocks) {
        for k in 0..LANES {
            let g = gb[k].to_f64();
            d[k] += g;
            dx[k] += g * (xb[k].to_f64() - mean);
        }
    }
    let mut d_acc = (d[0] + d[1]) + (d[2] + d[3]);
    let mut dx_acc = (dx[0] + dx[1]) + (dx[2] + dx[3]);
    for (&g, &v) in dy_blocks.remainder().iter().zip(x_blocks.remainder()) {
        let g = g.to_f64();
        d_acc += g;
        dx_acc += g * (v.to_f64() - mean);
    }
    (d_acc, dx_acc)
}

/// Per group: `(mean, biased variance)`, two passes in f64. An empty group gives NaN.
pub fn moments<T: Element>(x: &[T], g: &NormGeom) -> Result<Vec<(f64, f64)>> {
    g.check(x.len(), "norm input")?;
    let count = g.count() as f64;
    per_group(g.groups, g.count(), (0.0, 0.0), |j| {
        let row = |o: usize| &x[(o * g.groups + j) * g.inner..(o * g.groups + j + 1) * g.inner];
        let mut sum = 0.0;
        for o in 0..g.outer {
            sum += lanes_sum(row(o), |v| v);
        }
        let mean = sum / count;
        let mut sq = 0.0;
        for o in 0..g.outer {
            sq += lanes_sum(row(o), |v| (v - mean) * (v - mean));
        }
        (mean, sq / count)
    })
}

/// `y = (x - mean[j]) * invstd[j] * weight + bias`, computed as `x * a + b` with the
/// factors of each run of elements sharing a weight in f64 (as PyTorch's CPU batch norm).
pub fn normalize<T: Element>(
    x: &[T],
    g: &NormGeom,
    mean: &[f64],
    invstd: &[f64],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
) -> Result<Vec<T>> {
    g.check(x.len(), "norm input")?;
    check_params(g, mean, invstd, weight, bias)?;
    let mut out = try_vec(x.len(), T::default())?;
    let (k, run) = (g.per_group(), g.wdiv);
    per_row(&mut out, g.inner, |r, dst| {
        let j = r % g.groups;
        let src = &x[r * g.inner..(r + 1) * g.inner];
        let base = (j % g.wmod) * k;
        for blk in 0..k {
            let w = weight.map_or(1.0, |w| w[base + blk].to_f64());
            let b = bias.map_or(0.0, |b| b[base + blk].to_f64());
            let a = invstd[j] * w;
            let c = b - mean[j] * a;
            let span = blk * run..(blk + 1) * run;
            for (d, &v) in dst[span.clone()].iter_mut().zip(&src[span]) {
                *d = T::from_f64(v.to_f64() * a + c);
            }
        }
    });
    Ok(out)
}

fn check_params<T>(
    g: &NormGeom,
    mean: &[f64],
    invstd: &[f64],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
) -> Result<()> {
    let w = g.weights();
    if mean.len() != g.groups
        || invstd.len() != g.groups
        || weight.is_some_and(|x| x.len() != w)
        || bias.is_some_and(|x| x.len() != w)
    {
        return Err(Error::NotImplemented(
            "rustgrad internal error: norm statistics or affine parameters of the wrong size"
                .into(),
        ));
    }
    Ok(())
}

/// What [`normalize_backward`] returns: the gradients of the input, the weight and the
/// bias (each `None` when not asked for).
pub type NormGrads<T> = (Option<Vec<T>>, Option<Vec<T>>, Option<Vec<T>>);

/// The backward of [`normalize`] in one fused pass per group plus one per row. With
/// `batch_stats` the statistics depend on `x` (training):
/// `dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))` with
/// `dxhat = dy * weight`; otherwise they are constants (`dx = dxhat * invstd`).
/// `dweight = sum(dy * xhat)`, `dbias = sum(dy)` over the elements of each weight.
#[allow(clippy::too_many_arguments)]
pub fn normalize_backward<T: Element>(
    x: &[T],
    dy: &[T],
    g: &NormGeom,
    mean: &[f64],
    invstd: &[f64],
    weight: Option<&[T]>,
    batch_stats: bool,
    needs: [bool; 3],
) -> Result<NormGrads<T>> {
    g.check(x.len(), "norm input")?;
    g.check(dy.len(), "norm gradient")?;
    check_params(g, mean, invstd, weight, None)?;
    let (k, run) = (g.per_group(), g.wdiv);
    let w_at = |j: usize, blk: usize| weight.map_or(1.0, |w| w[(j % g.wmod) * k + blk].to_f64());
    // Per group: sum(dxhat) and sum(dxhat * xhat) (dxhat = dy * weight), and per weight
    // of the group sum(dy * xhat) and sum(dy), from per-run sums of dy and
    // dy * (x - mean).
    let need_wb = needs[1] || needs[2];
    let sums = per_group(g.groups, g.count(), (0.0, 0.0, Vec::new()), |j| {
        let mut runs = vec![(0.0f64, 0.0f64); k];
        for o in 0..g.outer {
            let start = (o * g.groups + j) * g.inner;
            for (blk, acc) in runs.iter_mut().enumerate() {
                let span = start + blk * run..start + (blk + 1) * run;
                let (d_sum, dx_sum) = lanes_sum_pair(&dy[span.clone()], &x[span], mean[j]);
                acc.0 += dx_sum;
                acc.1 += d_sum;
            }
        }
        let (mut s1, mut s2) = (0.0, 0.0);
        for (blk, acc) in runs.iter_mut().enumerate() {
            acc.0 *= invstd[j];
            let w = w_at(j, blk);
            s1 += w * acc.1;
            s2 += w * acc.0;
        }
        (s1, s2, if need_wb { runs } else { Vec::new() })
    })?;
    let dx = if needs[0] {
        let count = g.count() as f64;
        let mut out = try_vec(x.len(), T::default())?;
        per_row(&mut out, g.inner, |r, dst| {
            let j = r % g.groups;
            let start = r * g.inner;
            let (s1, s2, _) = &sums[j];
            let is = invstd[j];
            // dx = dy * a + x * b + c
            let (b, c0) = if batch_stats {
                let b = -is * is * s2 / count;
                (b, -s1 / count * is - mean[j] * b)
            } else {
                (0.0, 0.0)
            };
            for blk in 0..k {
                let a = w_at(j, blk) * is;
                let span = blk * run..(blk + 1) * run;
                let (d_run, x_run) = (&dy[start..start + g.inner], &x[start..start + g.inner]);
                for ((d, &gy), &v) in dst[span.clone()]
                    .iter_mut()
                    .zip(&d_run[span.clone()])
                    .zip(&x_run[span])
                {
                    *d = T::from_f64(gy.to_f64() * a + v.to_f64() * b + c0);
                }
            }
        });
        Some(out)
    } else {
        None
    };
    let (dw, db) = if need_wb {
        let n = g.weights();
        let kq = k.max(1);
        // Weight `i` sums the runs `i % kq` of the groups `j ≡ i / kq (mod wmod)`, in
        // ascending `j`. In blocks of weights (in parallel when there is enough work),
        // each block walking the groups in order, so a layer norm's weights read each
        // group's runs once, contiguously, and every weight keeps that order.
        let mut pairs = try_vec(n, (0.0f64, 0.0f64))?;
        let block = |c: usize, acc: &mut [(f64, f64)]| {
            let first = c * WEIGHT_BLOCK;
            for (j, (_, _, runs)) in sums.iter().enumerate() {
                let base = (j % g.wmod) * kq;
                let lo = base.max(first);
                let hi = (base + kq).min(first + acc.len());
                for i in lo..hi {
                    let e = runs[i - base];
                    acc[i - first].0 += e.0;
                    acc[i - first].1 += e.1;
                }
            }
        };
        if g.groups.saturating_mul(kq) < PARALLEL_MIN_ELEMENTS {
            for (c, acc) in pairs.chunks_mut(WEIGHT_BLOCK).enumerate() {
                block(c, acc);
            }
        } else {
            parallel::for_each_chunk_mut(&mut pairs, WEIGHT_BLOCK, block);
        }
        let dw = try_collect(pairs.iter().map(|p| T::from_f64(p.0)))?;
        let db = try_collect(pairs.iter().map(|p| T::from_f64(p.1)))?;
        (needs[1].then_some(dw), needs[2].then_some(db))
    } else {
        (None, None)
    };
    Ok((dx, dw, db))
}
