//! Pooling kernels over contiguous `(planes, H, W)` data: max pooling with argmax
//! indices, average pooling (fixed and adaptive windows), and the scatter / gather of
//! values by per-plane flat indices that max pooling's backward and `max_unpool2d` use.
//!
//! Every output plane is computed by one thread, serially, from its own input plane, so
//! results do not depend on the thread count (Note [Determinism]). Planes are handed
//! out in groups of a size fixed by the problem's sizes only.

use super::try_vec;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::parallel::{self, CHUNK, PARALLEL_MIN_ELEMENTS};

/// The geometry of a 2-D pooling window sweep: input and output plane sizes, and the
/// window's kernel size, stride, padding and dilation per spatial dim `(H, W)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window2d {
    /// Input plane size `(H, W)`.
    pub input: [usize; 2],
    /// Output plane size `(oH, oW)`.
    pub output: [usize; 2],
    /// Window size.
    pub kernel: [usize; 2],
    /// Step between windows.
    pub stride: [usize; 2],
    /// Implicit padding on both sides.
    pub padding: [usize; 2],
    /// Spacing between window elements.
    pub dilation: [usize; 2],
}

impl Window2d {
    fn in_plane(&self) -> usize {
        self.input[0] * self.input[1]
    }

    fn out_plane(&self) -> usize {
        self.output[0] * self.output[1]
    }

    /// The input positions (`start`, inclusive range end) a window covers along `axis`,
    /// as signed coordinates that may fall in the padding.
    fn start(&self, axis: usize, o: usize) -> isize {
        (o * self.stride[axis]) as isize - self.padding[axis] as isize
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
    if total < PARALLEL_MIN_ELEMENTS {
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
    if work_per_plane.saturating_mul(planes) < PARALLEL_MIN_ELEMENTS {
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

/// Max pooling of `planes` contiguous planes: the values and, per output element, the
/// flat index `h * W + w` of its maximum within its input plane. As PyTorch: a NaN
/// wins over any number (the last NaN of a window), ties keep the first maximum, and a
/// window of only `-inf` points at its first element inside the input.
pub fn max_pool2d<T: Element>(
    x: &[T],
    planes: usize,
    win: &Window2d,
) -> Result<(Vec<T>, Vec<i64>)> {
    check_len(x.len(), planes, win.in_plane(), "max_pool2d input")?;
    let out_plane = win.out_plane();
    let n = planes.checked_mul(out_plane).ok_or(Error::NumelOverflow)?;
    let mut values = try_vec(n, T::default())?;
    let mut indices = try_vec(n, 0i64)?;
    let [ih, iw] = win.input;
    let [oh, ow] = win.output;
    let lowest = T::from_f64(f64::NEG_INFINITY);
    let work = win
        .in_plane()
        .max(out_plane.saturating_mul(win.kernel[0].saturating_mul(win.kernel[1])));
    for_planes2(
        &mut values,
        out_plane,
        &mut indices,
        out_plane,
        work,
        |p, vals, idxs| {
            let src = &x[p * ih * iw..(p + 1) * ih * iw];
            for oy in 0..oh {
                let mut hs = win.start(0, oy);
                let he =
                    (hs + ((win.kernel[0] - 1) * win.dilation[0]) as isize + 1).min(ih as isize);
                while hs < 0 {
                    hs += win.dilation[0] as isize;
                }
                for ox in 0..ow {
                    let mut ws = win.start(1, ox);
                    let we = (ws + ((win.kernel[1] - 1) * win.dilation[1]) as isize + 1)
                        .min(iw as isize);
                    while ws < 0 {
                        ws += win.dilation[1] as isize;
                    }
                    let mut best = lowest;
                    let mut best_at = hs.max(0) as usize * iw + ws.max(0) as usize;
                    let mut y = hs;
                    while y < he {
                        let row = y as usize * iw;
                        let mut xx = ws;
                        while xx < we {
                            let at = row + xx as usize;
                            let v = src[at];
                            #[allow(clippy::eq_op)]
                            let nan = v != v;
                            if v > best || nan {
                                best = v;
                                best_at = at;
                            }
                            xx += win.dilation[1] as isize;
                        }
                        y += win.dilation[0] as isize;
                    }
                    let o = oy * ow + ox;
                    vals[o] = best;
                    idxs[o] = best_at as i64;
                }
            }
        },
    );
    Ok((values, indices))
}

/// Writes each value of `src` (`planes` planes of `src_plane` elements) to the position
/// its index names within the same plane of a zero output of `out_plane` elements per
/// plane: added when `accumulate` (max pooling's backward), else assigned (the last
/// write wins: `max_unpool2d`). An index outside `0..out_plane` is an error that names
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

/// Average pooling of `planes` contiguous planes. The divisor is `divisor_override`
/// when given, else the window's size clipped to the padded input
/// (`count_include_pad`) or to the input itself; sums accumulate in f64.
pub fn avg_pool2d<T: Element>(
    x: &[T],
    planes: usize,
    win: &Window2d,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Vec<T>> {
    check_len(x.len(), planes, win.in_plane(), "avg_pool2d input")?;
    let out_plane = win.out_plane();
    let n = planes.checked_mul(out_plane).ok_or(Error::NumelOverflow)?;
    let mut out = try_vec(n, T::default())?;
    let [ih, iw] = win.input;
    let [oh, ow] = win.output;
    let work = win
        .in_plane()
        .max(out_plane.saturating_mul(win.kernel[0].saturating_mul(win.kernel[1])));
    for_planes(&mut out, out_plane, work, |p, dst| {
        let src = &x[p * ih * iw..(p + 1) * ih * iw];
        for oy in 0..oh {
            for ox in 0..ow {
                let (h0, h1, w0, w1, pool) = avg_bounds(win, oy, ox);
                if h0 >= h1 || w0 >= w1 {
                    // A window entirely in the padding (ceil_mode): 0, as PyTorch.
                    dst[oy * ow + ox] = T::from_f64(0.0);
                    continue;
                }
                let mut sum = 0.0f64;
                for y in h0..h1 {
                    for v in &src[y * iw + w0..y * iw + w1] {
                        sum += v.to_f64();
                    }
                }
                let divisor = match divisor_override {
                    Some(d) => d,
                    None if count_include_pad => pool,
                    None => (h1 - h0) * (w1 - w0),
                };
                dst[oy * ow + ox] = T::from_f64(sum / divisor as f64);
            }
        }
    });
    Ok(out)
}

/// The input rows `h0..h1` and columns `w0..w1` an average-pooling window covers, and
/// its size clipped to the padded input (PyTorch's `pool_size`).
fn avg_bounds(win: &Window2d, oy: usize, ox: usize) -> (usize, usize, usize, usize, usize) {
    let [ih, iw] = win.input;
    let hs = win.start(0, oy);
    let ws = win.start(1, ox);
    let he = (hs + win.kernel[0] as isize).min((ih + win.padding[0]) as isize);
    let we = (ws + win.kernel[1] as isize).min((iw + win.padding[1]) as isize);
    let pool = ((he - hs) * (we - ws)).max(0) as usize;
    let h0 = hs.max(0) as usize;
    let w0 = ws.max(0) as usize;
    let h1 = (he.min(ih as isize).max(0) as usize).max(h0);
    let w1 = (we.min(iw as isize).max(0) as usize).max(w0);
    (h0, h1, w0, w1, pool)
}

/// The adjoint of [`avg_pool2d`]: each input element receives the sum of
/// `grad / divisor` over the windows that cover it. Computed per input plane (a gather
/// over windows, no scatter), accumulating in f64 in a fixed window order.
pub fn avg_pool2d_backward<T: Element>(
    grad: &[T],
    planes: usize,
    win: &Window2d,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Vec<T>> {
    let out_plane = win.out_plane();
    check_len(grad.len(), planes, out_plane, "avg_pool2d gradient")?;
    let in_plane = win.in_plane();
    let n = planes.checked_mul(in_plane).ok_or(Error::NumelOverflow)?;
    let mut acc = try_vec(n, 0.0f64)?;
    let [oh, ow] = win.output;
    let iw = win.input[1];
    let work = in_plane.max(out_plane.saturating_mul(win.kernel[0].saturating_mul(win.kernel[1])));
    for_planes(&mut acc, in_plane, work, |p, dst| {
        let g = &grad[p * out_plane..(p + 1) * out_plane];
        for oy in 0..oh {
            for ox in 0..ow {
                let (h0, h1, w0, w1, pool) = avg_bounds(win, oy, ox);
                if h0 >= h1 || w0 >= w1 {
                    continue;
                }
                let divisor = match divisor_override {
                    Some(d) => d,
                    None if count_include_pad => pool,
                    None => (h1 - h0) * (w1 - w0),
                };
                let share = g[oy * ow + ox].to_f64() / divisor as f64;
                for y in h0..h1 {
                    for d in &mut dst[y * iw + w0..y * iw + w1] {
                        *d += share;
                    }
                }
            }
        }
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

/// Adaptive average pooling of `planes` planes of `input` to `output`; f64 sums.
pub fn adaptive_avg_pool2d<T: Element>(
    x: &[T],
    planes: usize,
    input: [usize; 2],
    output: [usize; 2],
) -> Result<Vec<T>> {
    let in_plane = input[0] * input[1];
    check_len(x.len(), planes, in_plane, "adaptive_avg_pool2d input")?;
    let out_plane = output[0] * output[1];
    let n = planes.checked_mul(out_plane).ok_or(Error::NumelOverflow)?;
    let mut out = try_vec(n, T::default())?;
    for_planes(&mut out, out_plane, in_plane.max(out_plane), |p, dst| {
        let src = &x[p * in_plane..(p + 1) * in_plane];
        for oy in 0..output[0] {
            let (h0, h1) = adaptive_range(oy, output[0], input[0]);
            for ox in 0..output[1] {
                let (w0, w1) = adaptive_range(ox, output[1], input[1]);
                let mut sum = 0.0f64;
                for y in h0..h1 {
                    for v in &src[y * input[1] + w0..y * input[1] + w1] {
                        sum += v.to_f64();
                    }
                }
                dst[oy * output[1] + ox] = T::from_f64(sum / ((h1 - h0) * (w1 - w0)) as f64);
            }
        }
    });
    Ok(out)
}

/// The adjoint of [`adaptive_avg_pool2d`], per input plane in a fixed window order.
pub fn adaptive_avg_pool2d_backward<T: Element>(
    grad: &[T],
    planes: usize,
    input: [usize; 2],
    output: [usize; 2],
) -> Result<Vec<T>> {
    let out_plane = output[0] * output[1];
    check_len(
        grad.len(),
        planes,
        out_plane,
        "adaptive_avg_pool2d gradient",
    )?;
    let in_plane = input[0] * input[1];
    let n = planes.checked_mul(in_plane).ok_or(Error::NumelOverflow)?;
    let mut acc = try_vec(n, 0.0f64)?;
    for_planes(&mut acc, in_plane, in_plane.max(out_plane), |p, dst| {
        let g = &grad[p * out_plane..(p + 1) * out_plane];
        for oy in 0..output[0] {
            let (h0, h1) = adaptive_range(oy, output[0], input[0]);
            for ox in 0..output[1] {
                let (w0, w1) = adaptive_range(ox, output[1], input[1]);
                let share = g[oy * output[1] + ox].to_f64() / ((h1 - h0) * (w1 - w0)) as f64;
                for y in h0..h1 {
                    for d in &mut dst[y * input[1] + w0..y * input[1] + w1] {
                        *d += share;
                    }
                }
            }
        }
    });
    Ok(acc.into_iter().map(T::from_f64).collect())
}

/// Adaptive max pooling: values and flat per-plane argmax indices (NaN wins, ties keep
/// the first, as [`max_pool2d`]).
pub fn adaptive_max_pool2d<T: Element>(
    x: &[T],
    planes: usize,
    input: [usize; 2],
    output: [usize; 2],
) -> Result<(Vec<T>, Vec<i64>)> {
    let in_plane = input[0] * input[1];
    check_len(x.len(), planes, in_plane, "adaptive_max_pool2d input")?;
    let out_plane = output[0] * output[1];
    let n = planes.checked_mul(out_plane).ok_or(Error::NumelOverflow)?;
    let mut values = try_vec(n, T::default())?;
    let mut indices = try_vec(n, 0i64)?;
    let lowest = T::from_f64(f64::NEG_INFINITY);
    for_planes2(
        &mut values,
        out_plane,
        &mut indices,
        out_plane,
        in_plane.max(out_plane),
        |p, vals, idxs| {
            let src = &x[p * in_plane..(p + 1) * in_plane];
            for oy in 0..output[0] {
                let (h0, h1) = adaptive_range(oy, output[0], input[0]);
                for ox in 0..output[1] {
                    let (w0, w1) = adaptive_range(ox, output[1], input[1]);
                    let mut best = lowest;
                    let mut best_at = h0 * input[1] + w0;
                    for y in h0..h1 {
                        for xx in w0..w1 {
                            let at = y * input[1] + xx;
                            let v = src[at];
                            #[allow(clippy::eq_op)]
                            let nan = v != v;
                            if v > best || nan {
                                best = v;
                                best_at = at;
                            }
                        }
                    }
                    vals[oy * output[1] + ox] = best;
                    idxs[oy * output[1] + ox] = best_at as i64;
                }
            }
        },
    );
    Ok((values, indices))
}
