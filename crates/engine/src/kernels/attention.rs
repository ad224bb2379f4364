//! Fused scaled-dot-product attention: the forward tiles over keys with an online
//! softmax (a running max and sum per query row), so memory is linear in the sequence
//! length, and keeps only the output and each row's log-sum-exp; the backward
//! recomputes the scores tile by tile (FlashAttention-2). Every tile product goes
//! through the engine's GEMM. See Note [Fused attention].
//!
//! Operands are contiguous: `q` `[B, Hq, L, E]`, `k` `[B, Hk, S, E]`, `v`
//! `[B, Hk, S, Ev]`, with `Hq` a multiple of `Hk` (query head `h` reads key/value head
//! `h / (Hq / Hk)`, as `repeat_interleave` would). Work units have fixed sizes, each
//! computed serially, so results do not depend on the thread count.

use super::matmul::Gemm;
use super::softmax::{exp_minus, row_max as row_max_of};
use super::try_vec;
use super::vmath::avx2_variant;
use crate::dtype::Float;
use crate::error::Result;
use crate::parallel::fill_each;

/// Query rows per tile.
const BR: usize = 64;
/// Keys per tile.
const BC: usize = 128;

/// The sizes of one attention problem.
#[derive(Clone, Debug, PartialEq)]
pub struct AttnGeom {
    /// Batch (all leading dims, flattened).
    pub batch: usize,
    /// Query heads.
    pub hq: usize,
    /// Key/value heads (divides `hq`).
    pub hk: usize,
    /// Query length.
    pub l: usize,
    /// Key length.
    pub s: usize,
    /// Query/key feature size.
    pub e: usize,
    /// Value feature size.
    pub ev: usize,
    /// Factor applied to `q @ k^T`.
    pub scale: f64,
    /// Top-left causal mask: query row `i` sees keys `j <= i`.
    pub causal: bool,
    /// Dropout probability on the attention weights (0: none).
    pub dropout: f64,
    /// Seed of the dropout mask (drawn from the generator once per call).
    pub seed: u64,
}

impl AttnGeom {
    /// Whether weight `(bh, i, j)` survives dropout: a counter-based draw (SplitMix64 of
    /// the seed and the weight's index), so the backward regenerates the forward's mask
    /// and any tiling or thread count draws the same one.
    #[inline(always)]
    pub fn keeps(&self, bh: usize, i: usize, j: usize) -> bool {
        let index = ((bh * self.l + i) * self.s + j) as u64;
        let mut z = self
            .seed
            .wrapping_add(index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        u >= self.dropout
    }

    /// The factor kept weights are scaled by, `1 / (1 - p)` (0 when all are dropped).
    pub fn keep_scale(&self) -> f64 {
        if self.dropout >= 1.0 {
            0.0
        } else {
            1.0 / (1.0 - self.dropout)
        }
    }
}

/// Applies the dropout mask to a tile (`rows x cols`, row stride `cols`) of matrix
/// `bh` at query rows `r0..` and keys `c0..`: dropped entries become 0, kept ones are
/// scaled by `1 / (1 - p)`.
fn drop_tile<T: Float>(
    tile: &mut [T],
    rows: usize,
    cols: usize,
    r0: usize,
    c0: usize,
    bh: usize,
    g: &AttnGeom,
) {
    let scale = T::from_f64(g.keep_scale());
    let zero = T::from_f64(0.0);
    for r in 0..rows {
        for (c, x) in tile[r * cols..(r + 1) * cols].iter_mut().enumerate() {
            *x = if g.keeps(bh, r0 + r, c0 + c) {
                *x * scale
            } else {
                zero
            };
        }
    }
}

/// An additive float mask broadcast to `[B, Hq, L, S]` without copying: the storage,
/// the offset of each `(b, h)` matrix (`B * Hq` entries) and its row and column
/// strides (0 where broadcast).
pub struct MaskView<'a, T> {
    /// The mask's storage.
    pub data: &'a [T],
    /// Storage offset of the `[L, S]` matrix of each `(b, h)`.
    pub offsets: Vec<usize>,
    /// Stride between query rows.
    pub row_stride: usize,
    /// Stride between keys.
    pub col_stride: usize,
}

/// Scales a score tile (`rows x cols` at row stride `cols`), adds the mask and applies
/// the causal cut, for query rows `r0..` and keys `c0..` of matrix `bh`.
#[allow(clippy::too_many_arguments)]
fn finish_scores<T: Gemm>(
    tile: &mut [T],
    rows: usize,
    cols: usize,
    r0: usize,
    c0: usize,
    bh: usize,
    g: &AttnGeom,
    mask: Option<&MaskView<'_, T>>,
) {
    let scale = T::from_f64(g.scale);
    let ninf = T::from_f64(f64::NEG_INFINITY);
    for r in 0..rows {
        let row = &mut tile[r * cols..(r + 1) * cols];
        match mask {
            None => scale_row(row, scale),
            Some(m) => {
                let at = m.offsets[bh] + (r0 + r) * m.row_stride + c0 * m.col_stride;
                if m.col_stride == 1 {
                    scale_add_row(row, scale, &m.data[at..at + cols]);
                } else if m.col_stride == 0 {
                    scale_add_scalar(row, scale, m.data[at]);
                } else {
                    for (c, x) in row.iter_mut().enumerate() {
                        *x = *x * scale + m.data[at + c * m.col_stride];
                    }
                }
            }
        }
        if g.causal {
            // Keys after the query row are cut.
            let first_cut = (r0 + r + 1).saturating_sub(c0).min(cols);
            for x in &mut row[first_cut..] {
                *x = ninf;
            }
        }
    }
}

#[inline(always)]
fn scale_row_any<T: Float>(row: &mut [T], scale: T) {
    for x in row.iter_mut() {
        *x = *x * scale;
    }
}

#[inline(always)]
fn scale_add_row_any<T: Float>(row: &mut [T], scale: T, mask: &[T]) {
    for (x, &m) in row.iter_mut().zip(mask) {
        *x = *x * scale + m;
    }
}

#[inline(always)]
fn scale_add_scalar_any<T: Float>(row: &mut [T], scale: T, m: T) {
    for x in row.iter_mut() {
        *x = *x * scale + m;
    }
}

/// `row[i] = exp(row[i] - shift)` in place, returning the sum in float64 (eight lanes
/// in a fixed order, so that both loops vectorise).
#[inline(always)]
fn exp_row_any<T: Float>(row: &mut [T], shift: T) -> f64 {
    for x in row.iter_mut() {
        *x = exp_minus(*x, shift);
    }
    let mut lanes = [0.0f64; 8];
    let mut chunks = row.chunks_exact(8);
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

/// `ds[i] = p[i] * (ds[i] - d)`: the scores' gradient from `dP`.
#[inline(always)]
fn softmax_grad_row_any<T: Float>(ds: &mut [T], p: &[T], d: T) {
    for (x, &pv) in ds.iter_mut().zip(p) {
        *x = pv * (*x - d);
    }
}

avx2_variant!(fn scale_row<T>(row: &mut [T], scale: T) = scale_row_any);
avx2_variant!(fn scale_add_row<T>(row: &mut [T], scale: T, mask: &[T]) = scale_add_row_any);
avx2_variant!(fn scale_add_scalar<T>(row: &mut [T], scale: T, m: T) = scale_add_scalar_any);
avx2_variant!(fn exp_row<T>(row: &mut [T], shift: T) -> f64 = exp_row_any);
avx2_variant!(fn softmax_grad_row<T>(ds: &mut [T], p: &[T], d: T) = softmax_grad_row_any);

/// One forward unit: query rows `r0..r0 + rows` of matrix `bh`, returning their output
/// rows (`rows x Ev`) followed by their log-sum-exps (`rows`).
fn forward_unit<T: Gemm>(
    q: &[T],
    k: &[T],
    v: &[T],
    mask: Option<&MaskView<'_, T>>,
    g: &AttnGeom,
    bh: usize,
    r0: usize,
) -> Vec<T> {
    let rows = BR.min(g.l - r0);
    let (e, ev) = (g.e, g.ev);
    let kv = (bh / g.hq) * g.hk + (bh % g.hq) / (g.hq / g.hk);
    let qp = &q[(bh * g.l + r0) * e..];
    let kp = &k[kv * g.s * e..];
    let vp = &v[kv * g.s * ev..];
    let zero = T::from_f64(0.0);
    let mut result = vec![zero; rows * ev + rows];
    let (acc, lse) = result.split_at_mut(rows * ev);
    let mut row_max = vec![f64::NEG_INFINITY; rows];
    let mut row_sum = vec![0.0f64; rows];
    let mut tile = vec![zero; rows * BC];
    let kend = if g.causal { g.s.min(r0 + rows) } else { g.s };
    let mut c0 = 0;
    while c0 < kend {
        let cols = BC.min(kend - c0);
        let t = &mut tile[..rows * cols];
        // SAFETY: `qp` holds `rows x e` (row stride e), `kp` from `c0 * e` holds
        // `cols x e` read transposed, `t` is `rows x cols`; all within their slices.
        unsafe {
            T::gemm(
                rows,
                e,
                cols,
                qp.as_ptr(),
                e as isize,
                1,
                kp.as_ptr().add(c0 * e),
                1,
                e as isize,
                zero,
                t.as_mut_ptr(),
                cols as isize,
            );
        }
        finish_scores(t, rows, cols, r0, c0, bh, g, mask);
        for r in 0..rows {
            let row = &mut t[r * cols..(r + 1) * cols];
            let tmax = row_max_of(row).to_f64();
            // A NaN score makes the row NaN, as PyTorch (`f64::max` would drop it).
            let new_max = if tmax.is_nan() || row_max[r].is_nan() {
                f64::NAN
            } else {
                row_max[r].max(tmax)
            };
            if new_max == f64::NEG_INFINITY {
                // Nothing seen yet: the row stays empty.
                row.fill(zero);
                continue;
            }
            let sum = exp_row(row, T::from_f64(new_max));
            let alpha = (row_max[r] - new_max).exp();
            if alpha != 1.0 {
                let a = T::from_f64(alpha);
                for o in &mut acc[r * ev..(r + 1) * ev] {
                    *o = *o * a;
                }
            }
            row_sum[r] = row_sum[r] * alpha + sum;
            row_max[r] = new_max;
        }
        if g.dropout > 0.0 {
            drop_tile(t, rows, cols, r0, c0, bh, g);
        }
        // SAFETY: `t` is `rows x cols`, `vp` from `c0 * ev` holds `cols x ev`, `acc`
        // is `rows x ev`; disjoint buffers.
        unsafe {
            T::gemm(
                rows,
                cols,
                ev,
                t.as_ptr(),
                cols as isize,
                1,
                vp.as_ptr().add(c0 * ev),
                ev as isize,
                1,
                T::from_f64(1.0),
                acc.as_mut_ptr(),
                ev as isize,
            );
        }
        c0 += cols;
    }
    for r in 0..rows {
        let out = &mut acc[r * ev..(r + 1) * ev];
        if row_sum[r] > 0.0 {
            let inv = T::from_f64(1.0 / row_sum[r]);
            for o in out.iter_mut() {
                *o = *o * inv;
            }
            lse[r] = T::from_f64(row_max[r] + row_sum[r].ln());
        } else if row_sum[r].is_nan() {
            out.fill(T::from_f64(f64::NAN));
            lse[r] = T::from_f64(f64::NAN);
        } else {
            // A fully masked row: PyTorch gives zeros.
            out.fill(zero);
            lse[r] = T::from_f64(f64::NEG_INFINITY);
        }
    }
    result
}

/// The attention output `[B, Hq, L, Ev]` and the log-sum-exp of each query row
/// `[B, Hq, L]` (`-inf` for a row that sees no key; its output is 0).
pub fn forward<T: Gemm + Send + Sync>(
    q: &[T],
    k: &[T],
    v: &[T],
    mask: Option<&MaskView<'_, T>>,
    g: &AttnGeom,
) -> Result<(Vec<T>, Vec<T>)> {
    let blocks = g.l.div_ceil(BR);
    let units = g.batch * g.hq * blocks;
    let mut parts: Vec<Vec<T>> = Vec::new();
    parts
        .try_reserve_exact(units)
        .map_err(|_| crate::error::Error::OutOfMemory {
            bytes: units * std::mem::size_of::<Vec<T>>(),
        })?;
    parts.resize_with(units, Vec::new);
    fill_each(&mut parts, |u| {
        forward_unit(q, k, v, mask, g, u / blocks, (u % blocks) * BR)
    });
    let zero = T::from_f64(0.0);
    let mut out = try_vec(g.batch * g.hq * g.l * g.ev, zero)?;
    let mut lse = try_vec(g.batch * g.hq * g.l, zero)?;
    for (u, part) in parts.iter().enumerate() {
        let (bh, r0) = (u / blocks, (u % blocks) * BR);
        let rows = BR.min(g.l - r0);
        let start = bh * g.l + r0;
        out[start * g.ev..(start + rows) * g.ev].copy_from_slice(&part[..rows * g.ev]);
        lse[start..start + rows].copy_from_slice(&part[rows * g.ev..]);
    }
    Ok((out, lse))
}

/// The gradients of one key/value head `(b, kv)`: `dq` of its `Hq / Hk` query heads,
/// `dk`, `dv`, and (when asked) the scores' gradient for those query heads.
struct BackwardPart<T> {
    dq: Vec<T>,
    dk: Vec<T>,
    dv: Vec<T>,
    dmask: Vec<T>,
}

/// The inputs of the backward, borrowed.
pub struct BackwardInputs<'a, T> {
    /// Query `[B, Hq, L, E]`.
    pub q: &'a [T],
    /// Key `[B, Hk, S, E]`.
    pub k: &'a [T],
    /// Value `[B, Hk, S, Ev]`.
    pub v: &'a [T],
    /// The forward's output `[B, Hq, L, Ev]`.
    pub out: &'a [T],
    /// The forward's log-sum-exps `[B, Hq, L]`.
    pub lse: &'a [T],
    /// The output's gradient `[B, Hq, L, Ev]`.
    pub dout: &'a [T],
    /// The additive mask, if any.
    pub mask: Option<&'a MaskView<'a, T>>,
}

fn backward_unit<T: Gemm>(
    x: &BackwardInputs<'_, T>,
    g: &AttnGeom,
    unit: usize,
    want_mask: bool,
) -> BackwardPart<T> {
    let (b, kv) = (unit / g.hk, unit % g.hk);
    let group = g.hq / g.hk;
    let (e, ev, l, s) = (g.e, g.ev, g.l, g.s);
    let zero = T::from_f64(0.0);
    let one = T::from_f64(1.0);
    let scale = T::from_f64(g.scale);
    let kp = &x.k[unit * s * e..(unit + 1) * s * e];
    let vp = &x.v[unit * s * ev..(unit + 1) * s * ev];
    let mut part = BackwardPart {
        dq: vec![zero; group * l * e],
        dk: vec![zero; s * e],
        dv: vec![zero; s * ev],
        dmask: if want_mask {
            vec![zero; group * l * s]
        } else {
            Vec::new()
        },
    };
    // D = rowsum(dO * O) per query row of the group.
    let first_bh = b * g.hq + kv * group;
    let mut dsum = vec![zero; group * l];
    for (row, d) in dsum.iter_mut().enumerate() {
        let at = (first_bh * l + row) * ev;
        let total: f64 = x.dout[at..at + ev]
            .iter()
            .zip(&x.out[at..at + ev])
            .map(|(a, o)| a.to_f64() * o.to_f64())
            .sum();
        *d = T::from_f64(total);
    }
    // Tiles sized by the problem (a short sequence needs less than a full tile).
    let tile = BR.min(l) * BC.min(s);
    let mut p = vec![zero; tile];
    let mut dp = vec![zero; tile];
    let dropping = g.dropout > 0.0;
    let mut pd = if dropping {
        vec![zero; BR * BC]
    } else {
        Vec::new()
    };
    let mut c0 = 0;
    while c0 < s {
        let cols = BC.min(s - c0);
        for gi in 0..group {
            let bh = first_bh + gi;
            let qh = &x.q[bh * l * e..(bh + 1) * l * e];
            let doh = &x.dout[bh * l * ev..(bh + 1) * l * ev];
            let lse = &x.lse[bh * l..(bh + 1) * l];
            // Causal: rows before c0 see none of these keys.
            let mut r0 = if g.causal { (c0 / BR) * BR } else { 0 };
            while r0 < l {
                let rows = BR.min(l - r0);
                let pt = &mut p[..rows * cols];
                let dpt = &mut dp[..rows * cols];
                // SAFETY (all gemms below): every operand is a sub-slice of a buffer
                // holding the rows and columns the sizes and strides reach; outputs do
                // not alias inputs.
                unsafe {
                    T::gemm(
                        rows,
                        e,
                        cols,
                        qh.as_ptr().add(r0 * e),
                        e as isize,
                        1,
                        kp.as_ptr().add(c0 * e),
                        1,
                        e as isize,
                        zero,
                        pt.as_mut_ptr(),
                        cols as isize,
                    );
                }
                finish_scores(pt, rows, cols, r0, c0, bh, g, x.mask);
                for r in 0..rows {
                    let shift = lse[r0 + r];
                    let row = &mut pt[r * cols..(r + 1) * cols];
                    if shift.to_f64() == f64::NEG_INFINITY {
                        row.fill(zero);
                    } else {
                        exp_row(row, shift);
                    }
                }
                // With dropout the output used the dropped weights `Pd`: dV takes them,
                // and dP passes back through the same mask.
                let pv: &[T] = if dropping {
                    let pdt = &mut pd[..rows * cols];
                    pdt.copy_from_slice(pt);
                    drop_tile(pdt, rows, cols, r0, c0, bh, g);
                    pdt
                } else {
                    pt
                };
                // dV_j += P^T dO_i; dP = dO_i V_j^T.
                unsafe {
                    T::gemm(
                        cols,
                        rows,
                        ev,
                        pv.as_ptr(),
                        1,
                        cols as isize,
                        doh.as_ptr().add(r0 * ev),
                        ev as isize,
                        1,
                        one,
                        part.dv.as_mut_ptr().add(c0 * ev),
                        ev as isize,
                    );
                    T::gemm(
                        rows,
                        ev,
                        cols,
                        doh.as_ptr().add(r0 * ev),
                        ev as isize,
                        1,
                        vp.as_ptr().add(c0 * ev),
                        1,
                        ev as isize,
                        zero,
                        dpt.as_mut_ptr(),
                        cols as isize,
                    );
                }
                if dropping {
                    drop_tile(dpt, rows, cols, r0, c0, bh, g);
                }
                // dS = P * (dP - D), the scores' gradient (the mask's), then scaled.
                for r in 0..rows {
                    let d = dsum[gi * l + r0 + r];
                    let prow = &pt[r * cols..(r + 1) * cols];
                    let drow = &mut dpt[r * cols..(r + 1) * cols];
                    softmax_grad_row(drow, prow, d);
                    if want_mask {
                        let at = (gi * l + r0 + r) * s + c0;
                        part.dmask[at..at + cols].copy_from_slice(drow);
                    }
                    scale_row(drow, scale);
                }
                // dQ_i += dS K_j; dK_j += dS^T Q_i.
                unsafe {
                    T::gemm(
                        rows,
                        cols,
                        e,
                        dpt.as_ptr(),
                        cols as isize,
                        1,
                        kp.as_ptr().add(c0 * e),
                        e as isize,
                        1,
                        one,
                        part.dq.as_mut_ptr().add((gi * l + r0) * e),
                        e as isize,
                    );
                    T::gemm(
                        cols,
                        rows,
                        e,
                        dpt.as_ptr(),
                        1,
                        cols as isize,
                        qh.as_ptr().add(r0 * e),
                        e as isize,
                        1,
                        one,
                        part.dk.as_mut_ptr().add(c0 * e),
                        e as isize,
                    );
                }
                r0 += rows;
            }
        }
        c0 += cols;
    }
    part
}

/// The gradients of the fused attention: `dq`, `dk`, `dv` (the operands' shapes) and,
/// with `want_mask`, the scores' gradient `[B, Hq, L, S]` (the additive mask's).
/// One unit per key/value head, so the key and value gradients accumulate in a fixed
/// order.
#[allow(clippy::type_complexity)]
pub fn backward<T: Gemm + Send + Sync>(
    x: &BackwardInputs<'_, T>,
    g: &AttnGeom,
    want_mask: bool,
) -> Result<(Vec<T>, Vec<T>, Vec<T>, Option<Vec<T>>)> {
    let units = g.batch * g.hk;
    let mut parts: Vec<Option<BackwardPart<T>>> = Vec::new();
    parts.resize_with(units, || None);
    fill_each(&mut parts, |u| Some(backward_unit(x, g, u, want_mask)));
    let zero = T::from_f64(0.0);
    let mut dq = try_vec(g.batch * g.hq * g.l * g.e, zero)?;
    let mut dk = try_vec(g.batch * g.hk * g.s * g.e, zero)?;
    let mut dv = try_vec(g.batch * g.hk * g.s * g.ev, zero)?;
    let mut dmask = if want_mask {
        Some(try_vec(g.batch * g.hq * g.l * g.s, zero)?)
    } else {
        None
    };
    let group = g.hq / g.hk;
    for (u, part) in parts.into_iter().enumerate() {
        let Some(part) = part else { continue };
        let qn = group * g.l * g.e;
        dq[u * qn..(u + 1) * qn].copy_from_slice(&part.dq);
        dk[u * g.s * g.e..(u + 1) * g.s * g.e].copy_from_slice(&part.dk);
        dv[u * g.s * g.ev..(u + 1) * g.s * g.ev].copy_from_slice(&part.dv);
        if let Some(dm) = dmask.as_mut() {
            let mn = group * g.l * g.s;
            dm[u * mn..(u + 1) * mn].copy_from_slice(&part.dmask);
        }
    }
    Ok((dq, dk, dv, dmask))
}
