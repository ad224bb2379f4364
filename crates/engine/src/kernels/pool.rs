//! Pooling kernels over contiguous `(planes, D, H, W)` data (a 2-d pool is `D = 1`, a
//! 1-d pool `D = H = 1`): max pooling with argmax indices and average pooling over
//! windows described per axis by [`Span`]s, so that fixed (kernel, stride, padding,
//! dilation), adaptive and fractional windows share one kernel; and the scatter of values
//! by per-plane flat indices that max pooling's backward and `max_unpool` use.
//!
//! Every output plane is computed by one thread, serially, from its own input plane, so
//! results do not depend on the thread count (Note \[Determinism\]). Planes are handed
//! out in groups of a size fixed by the problem's sizes only.

use super::try_vec;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::parallel::{self, CHUNK};

/// Pooling runs serially below this much work (input elements or window reads,
/// whichever is more, summed over the planes). Measured on the 2-core machine (shared,
/// so best of 7): `avg_pool2d(x, 3, 1, 1)` forward on float32 `(1, 16, s, s)` with the
/// threshold at 0, 1 thread vs 2 threads, in microseconds by work (9 * 16 * s * s):
/// 9k 33/76, 17k 55/99, 37k 114/150, 70k 204/215, 147k 512/264, 292k 1045/678. The
/// pool costs about 40 us to enter and pays off from about 100k reads.
pub const POOL_PARALLEL_MIN_WORK: usize = 1 << 17;

/// One output position's window along one axis: the input positions
/// `lo, lo + step, .. < hi` it reads, and `padded`, the number of positions it covers
/// counting padding (PyTorch's average-pool divisor with `count_include_pad`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// First input position read.
    pub lo: usize,
    /// End (exclusive) of the positions read.
    pub hi: usize,
    /// Step between positions (the dilation).
    pub step: usize,
    /// Window size clipped to the padded input.
    pub padded: usize,
}

impl Span {
    /// Positions read.
    fn count(&self) -> usize {
        if self.hi > self.lo {
            (self.hi - self.lo).div_ceil(self.step)
        } else {
            0
        }
    }

    /// A window of `kernel` positions `dilation` apart starting at `o * stride - padding`
    /// over `size` inputs padded by `padding` on both sides.
    pub fn fixed(
        o: usize,
        size: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
        dilation: usize,
    ) -> Span {
        let start = (o * stride) as isize - padding as isize;
        let end = (start + ((kernel - 1) * dilation) as isize + 1).min((size + padding) as isize);
        let padded = if end > start {
            ((end - start) as usize).div_ceil(dilation)
        } else {
            0
        };
        let mut lo = start;
        if lo < 0 {
            lo += (-lo as usize).div_ceil(dilation) as isize * dilation as isize;
        }
        let hi = end.min(size as isize).max(0) as usize;
        Span {
            lo: lo as usize,
            hi,
            step: dilation,
            padded,
        }
    }

    /// PyTorch's adaptive window: output `o` of `out` over `size` inputs covers
    /// `floor(o * size / out) .. ceil((o + 1) * size / out)`.
    pub fn adaptive(o: usize, out: usize, size: usize) -> Span {
        let (lo, hi) = adaptive_range(o, out, size);
        Span {
            lo,
            hi,
            step: 1,
            padded: hi - lo,
        }
    }

    /// `kernel` consecutive positions from `start`.
    pub fn at(start: usize, kernel: usize) -> Span {
        Span {
            lo: start,
            hi: start + kernel,
            step: 1,
            padded: kernel,
        }
    }

    /// The one-position axis a lower-rank pool has in front.
    pub const UNIT: Span = Span {
        lo: 0,
        hi: 1,
        step: 1,
        padded: 1,
    };
}

/// `n` spans `f(0), f(1), ..`, allocated fallibly (an output axis may be huge).
pub fn spans(n: usize, f: impl Fn(usize) -> Span) -> Result<Vec<Span>> {
    let mut v = super::try_with_capacity(n)?;
    v.extend((0..n).map(f));
    Ok(v)
}

/// A pooling sweep over `(D, H, W)` planes: the input plane size, the output size, and
/// per axis the window of each output position. `spans[a]` holds `output[a] * sets`
/// spans: one set shared by every plane (`sets == 1`), or one per plane (fractional
/// pooling's per-plane random windows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Input plane size `(D, H, W)`.
    pub input: [usize; 3],
    /// Output plane size `(oD, oH, oW)`.
    pub output: [usize; 3],
    /// Window spans per axis (see the type's docs).
    pub spans: [Vec<Span>; 3],
    /// Number of span sets: 1, or the number of planes.
    pub sets: usize,
}

impl Window {
    /// A window from per-axis spans shared by every plane.
    pub fn shared(input: [usize; 3], spans: [Vec<Span>; 3]) -> Window {
        let output = [spans[0].len(), spans[1].len(), spans[2].len()];
        Window {
            input,
            output,
            spans,
            sets: 1,
        }
    }

    /// PyTorch's adaptive windows from `input` to `output` (the allocator's error if
    /// the spans do not fit in memory).
    pub fn adaptive(input: [usize; 3], output: [usize; 3]) -> Result<Window> {
        let [d, h, w] =
            std::array::from_fn(|a| spans(output[a], |o| Span::adaptive(o, output[a], input[a])));
        Ok(Window::shared(input, [d?, h?, w?]))
    }

    fn in_plane(&self) -> usize {
        self.input.iter().product()
    }

    fn out_plane(&self) -> usize {
        self.output.iter().product()
    }

    /// The spans of plane `p` along `axis`.
    fn axis(&self, p: usize, axis: usize) -> &[Span] {
        let n = self.output[axis];
        let set = if self.sets == 1 { 0 } else { p };
        &self.spans[axis][set * n..(set + 1) * n]
    }

    /// Reads per plane: the input, or the windows' reads if more.
    fn work(&self) -> usize {
        let reads: usize = (0..3)
            .map(|a| {
                self.spans[a]
                    .iter()
                    .take(self.output[a])
                    .map(Span::count)
                    .sum::<usize>()
            })
            .product();
        self.in_plane().max(reads).max(self.out_plane())
    }

    /// Calls `f(o, d, h, w)` for each output position `o` of plane `p` with its
    /// window's spans along the three axes, in output order.
    fn sweep(&self, p: usize, mut f: impl FnMut(usize, &Span, &Span, &Span)) {
        let (sd, sh, sw) = (self.axis(p, 0), self.axis(p, 1), self.axis(p, 2));
        let mut o = 0;
        for d in sd {
            for h in sh {
                for w in sw {
                    f(o, d, h, w);
                    o += 1;
                }
            }
        }
    }

    /// Calls `f(flat index)` for each input position of the window `(d, h, w)`.
    fn each(&self, d: &Span, h: &Span, w: &Span, mut f: impl FnMut(usize)) {
        let [_, ih, iw] = self.input;
        let mut z = d.lo;
        while z < d.hi {
            let mut y = h.lo;
            while y < h.hi {
                let row = (z * ih + y) * iw;
                let mut x = w.lo;
                while x < w.hi {
                    f(row + x);
                    x += w.step;
                }
                y += h.step;
            }
            z += d.step;
        }
    }
}

/// Runs `f(plane, out_a, out_b)` for each plane of two outputs with `la` and `lb`
/// elements per plane, in groups of planes whose size depends only on `work_per_plane`.
fn for_planes2<A: Send, B: Send>(
    a: &mut [A],
    la: usize,
    b: &mut [B],
    lb: usize,
    work_per_plane: usize,
    f: impl Fn(usize, &mut [A], &mut [B]) + Sync + Send,
) {
    if la == 0 || lb == 0 {
        return;
    }
    let mut pairs: Vec<(&mut [A], &mut [B])> = a.chunks_mut(la).zip(b.chunks_mut(lb)).collect();
    let total = work_per_plane.saturating_mul(pairs.len());
    if total < POOL_PARALLEL_MIN_WORK {
        for (p, (x, y)) in pairs.iter_mut().enumerate() {
            f(p, x, y);
        }
        return;
    }
    let group = (CHUNK / work_per_plane.max(1)).max(1);
    parallel::for_each_chunk_mut(&mut pairs, group, |g, chunk| {
        for (k, (x, y)) in chunk.iter_mut().enumerate() {
            f(g * group + k, x, y);
        }
    });
}

/// Runs `f(plane, out)` for each `len`-element plane of `out`.
fn for_planes<A: Send>(
    out: &mut [A],
    len: usize,
    work_per_plane: usize,
    f: impl Fn(usize, &mut [A]) + Sync + Send,
) {
    if len == 0 {
        return;
    }
    let planes = out.len() / len;
    if work_per_plane.saturating_mul(planes) < POOL_PARALLEL_MIN_WORK {
        for (p, x) in out.chunks_mut(len).enumerate() {
            f(p, x);
        }
        return;
    }
    let group = (CHUNK / work_per_plane.max(1)).max(1);
    parallel::for_each_chunk_mut(out, group * len, |g, chunk| {
        for (k, x) in chunk.chunks_mut(len).enumerate() {
            f(g * group + k, x);
        }
    });
}

fn check_len(len: usize, planes: usize, per_plane: usize, what: &str) -> Result<()> {
    if planes.checked_mul(per_plane) != Some(len) {
        return Err(Error::NotImplemented(format!(
            "rustgrad internal error: {what} has {len} elements, not {planes} planes of {per_plane}"
        )));
    }
    Ok(())
}

fn check_window(win: &Window, planes: usize) -> Result<()> {
    let sets_ok = win.sets == 1 || win.sets == planes;
    let lens_ok = (0..3).all(|a| win.spans[a].len() == win.output[a] * win.sets);
    let inside = (0..3).all(|a| {
        win.spans[a]
            .iter()
            .all(|s| s.step > 0 && (s.hi <= s.lo || s.hi <= win.input[a]))
    });
    if sets_ok && lens_ok && inside {
        Ok(())
    } else {
        Err(Error::NotImplemented(format!(
            "rustgrad internal error: inconsistent pooling window {win:?} for {planes} planes"
        )))
    }
}

/// Max pooling of `planes` contiguous planes: the values and, per output element, the
/// flat index `(d * H + h) * W + w` of its maximum within its input plane. As PyTorch:
/// a NaN wins over any number (the last NaN of a window), ties keep the first maximum,
/// and a window of only `-inf` points at its first element inside the input.
pub fn max_pool<T: Element>(x: &[T], planes: usize, win: &Window) -> Result<(Vec<T>, Vec<i64>)> {
    check_len(x.len(), planes, win.in_plane(), "max pool input")?;
    check_window(win, planes)?;
    let (in_plane, out_plane) = (win.in_plane(), win.out_plane());
    let n = planes.checked_mul(out_plane).ok_or(Error::NumelOverflow)?;
    let mut values = try_vec(n, T::default())?;
    let mut indices = try_vec(n, 0i64)?;
    let lowest = T::from_f64(f64::NEG_INFINITY);
    let [_, ih, iw] = win.input;
    for_planes2(
        &mut values,
        out_plane,
        &mut indices,
        out_plane,
        win.work(),
        |p, vals, idxs| {
            let src = &x[p * in_plane..(p + 1) * in_plane];
            win.sweep(p, |o, d, h, w| {
                let mut best = lowest;
                let mut best_at = (d.lo * ih + h.lo) * iw + w.lo;
                win.each(d, h, w, |at| {
                    let v = src[at];
                    #[allow(clippy::eq_op)]
                    let nan = v != v;
                    if v > best || nan {
                        best = v;
                        best_at = at;
                    }
                });
                vals[o] = best;
                idxs[o] = best_at as i64;
            });
        },
    );
    Ok((values, indices))
}

/// Writes each value of `src` (`planes` planes of `src_plane` elements) to the position
/// its index names within the same plane of a zero output of `out_plane` elements per
/// plane: added when `accumulate` (max pooling's backward), else assigned (the last
/// write wins: `max_unpool`). An index outside `0..out_plane` is an error that names
/// it, with `plane_desc` the plane's size as the message shows it (`6x6`), checked
/// before anything is written.
pub fn scatter_planes<T: Element + std::ops::Add<Output = T>>(
    src: &[T],
    indices: &[i64],
    planes: usize,
    src_plane: usize,
    out_plane: usize,
    accumulate: bool,
    plane_desc: &str,
) -> Result<Vec<T>> {
    check_len(src.len(), planes, src_plane, "scatter source")?;
    check_len(indices.len(), planes, src_plane, "scatter indices")?;
    if let Some(&bad) = indices
        .iter()
        .find(|&&i| i < 0 || i as u64 >= out_plane as u64)
    {
        return Err(Error::InvalidArgument(format!(
            "Found an invalid max index: {bad} (output volumes are of size {plane_desc})"
        )));
    }
    let n = planes.checked_mul(out_plane).ok_or(Error::NumelOverflow)?;
    let mut out = try_vec(n, T::default())?;
    for_planes(&mut out, out_plane, src_plane.max(out_plane), |p, dst| {
        let s = &src[p * src_plane..(p + 1) * src_plane];
        let idx = &indices[p * src_plane..(p + 1) * src_plane];
        for (&v, &i) in s.iter().zip(idx) {
            let slot = &mut dst[i as usize];
            *slot = if accumulate { *slot + v } else { v };
        }
    });
    Ok(out)
}

/// The divisor of an average-pooling window: `divisor_override` when given, else the
/// window's size clipped to the padded input (`count_include_pad`) or to the input.
fn divisor(d: &Span, h: &Span, w: &Span, count_include_pad: bool, over: Option<usize>) -> usize {
    match over {
        Some(v) => v,
        None if count_include_pad => d.padded * h.padded * w.padded,
        None => d.count() * h.count() * w.count(),
    }
}

/// Average pooling of `planes` contiguous planes (the divisor as `divisor` says; a
/// window entirely in the padding gives 0, as PyTorch). Sums accumulate in f64.
pub fn avg_pool<T: Element>(
    x: &[T],
    planes: usize,
    win: &Window,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Vec<T>> {
    check_len(x.len(), planes, win.in_plane(), "avg pool input")?;
    check_window(win, planes)?;
    let (in_plane, out_plane) = (win.in_plane(), win.out_plane());
    let n = planes.checked_mul(out_plane).ok_or(Error::NumelOverflow)?;
    let mut out = try_vec(n, T::default())?;
    for_planes(&mut out, out_plane, win.work(), |p, dst| {
        let src = &x[p * in_plane..(p + 1) * in_plane];
        win.sweep(p, |o, d, h, w| {
            if d.count() * h.count() * w.count() == 0 {
                dst[o] = T::from_f64(0.0);
                return;
            }
            let mut sum = 0.0f64;
            win.each(d, h, w, |at| sum += src[at].to_f64());
            let div = divisor(d, h, w, count_include_pad, divisor_override);
            dst[o] = T::from_f64(sum / div as f64);
        });
    });
    Ok(out)
}

/// The adjoint of [`avg_pool`]: each input element receives the sum of
/// `grad / divisor` over the windows that cover it. Computed per input plane (no
/// cross-plane writes), accumulating in f64 in a fixed window order.
pub fn avg_pool_backward<T: Element>(
    grad: &[T],
    planes: usize,
    win: &Window,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Vec<T>> {
    let (in_plane, out_plane) = (win.in_plane(), win.out_plane());
    check_len(grad.len(), planes, out_plane, "avg pool gradient")?;
    check_window(win, planes)?;
    let n = planes.checked_mul(in_plane).ok_or(Error::NumelOverflow)?;
    let mut acc = try_vec(n, 0.0f64)?;
    for_planes(&mut acc, in_plane, win.work(), |p, dst| {
        let g = &grad[p * out_plane..(p + 1) * out_plane];
        win.sweep(p, |o, d, h, w| {
            if d.count() * h.count() * w.count() == 0 {
                return;
            }
            let share =
                g[o].to_f64() / divisor(d, h, w, count_include_pad, divisor_override) as f64;
            win.each(d, h, w, |at| dst[at] += share);
        });
    });
    Ok(acc.into_iter().map(T::from_f64).collect())
}

/// PyTorch's adaptive window along one axis: output `o` of `out` over `size` inputs
/// covers `floor(o * size / out) .. ceil((o + 1) * size / out)`.
pub fn adaptive_range(o: usize, out: usize, size: usize) -> (usize, usize) {
    let start = (o * size) / out;
    let end = ((o + 1) * size).div_ceil(out);
    (start, end)
}

/// PyTorch's fractional max-pool window starts along one axis (`generate_intervals`),
/// computed in the element type `T` as PyTorch does: `output` starts of windows of
/// `pool` over `input` positions, from the plane's uniform `sample` in `[0, 1)`.
pub fn fractional_starts<T: Element>(
    sample: f64,
    input: usize,
    output: usize,
    pool: usize,
) -> Vec<usize> {
    let r = |v: f64| T::from_f64(v).to_f64();
    let mut seq = vec![0usize; output];
    if output > 1 {
        let alpha = r(r((input - pool) as f64) / r((output - 1) as f64));
        let sample = r(sample);
        let base = r(sample * alpha).trunc() as i64;
        for (i, s) in seq.iter_mut().enumerate().take(output - 1) {
            let v = r(r(i as f64 + sample) * alpha).trunc() as i64 - base;
            *s = v.max(0) as usize;
        }
    }
    if output > 0 {
        seq[output - 1] = input - pool;
    }
    seq
}
