//! Convolution kernels: im2col / col2im and the three GEMM-based maps of a convolution
//! (forward, its adjoint in the input, its adjoint in the weight). Everything works on
//! contiguous slices and three spatial dims (1-D and 2-D convolutions have size-1 leading
//! dims). See Note [Convolutions].
//!
//! Work is split by sample (and, for the weight adjoint, by fixed blocks of samples whose
//! partial sums are added in block order), so results do not depend on the thread count.

use super::matmul::Gemm;
use super::try_vec;
use crate::error::{Error, Result};
use crate::parallel::{self, PARALLEL_MIN_ELEMENTS};
use std::sync::Mutex;

/// One matrix operand: a slice, its offset and its row and column strides.
#[derive(Clone, Copy)]
struct Mat<'a, T> {
    data: &'a [T],
    offset: usize,
    rs: usize,
    cs: usize,
}

/// The largest index a `rows x cols` matrix at `offset` with these strides reaches.
fn reach(offset: usize, rows: usize, cols: usize, rs: usize, cs: usize) -> Option<usize> {
    let r = (rows - 1).checked_mul(rs)?;
    let c = (cols - 1).checked_mul(cs)?;
    offset.checked_add(r)?.checked_add(c)
}

/// `c[c_off..] (m x n, row stride n) = a @ b + beta * c`, bounds-checked.
fn gemm<T: Gemm>(
    (m, k, n): (usize, usize, usize),
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    beta: T,
    c: &mut [T],
    c_off: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    let c_end = reach(c_off, m, n, n, 1);
    assert!(
        c_end.is_some_and(|e| e < c.len()),
        "rustgrad internal error: conv GEMM output out of bounds"
    );
    if k == 0 {
        for x in &mut c[c_off..c_off + m * n] {
            *x = if beta == T::ZERO { T::ZERO } else { *x * beta };
        }
        return;
    }
    let a_end = reach(a.offset, m, k, a.rs, a.cs);
    let b_end = reach(b.offset, k, n, b.rs, b.cs);
    assert!(
        a_end.is_some_and(|e| e < a.data.len()) && b_end.is_some_and(|e| e < b.data.len()),
        "rustgrad internal error: conv GEMM operand out of bounds"
    );
    let s = |x: usize| isize::try_from(x).expect("rustgrad internal error: stride overflow");
    // SAFETY: the asserts above show that every element of `a` (`m x k` from `a.offset`),
    // `b` (`k x n` from `b.offset`) and `c` (`m x n`, row stride `n`, from `c_off`) lies
    // inside its slice; strides were below those lengths, so they fit `isize`. `c` is
    // borrowed mutably, so nothing aliases it.
    unsafe {
        T::gemm(
            m,
            k,
            n,
            a.data.as_ptr().add(a.offset),
            s(a.rs),
            s(a.cs),
            b.data.as_ptr().add(b.offset),
            s(b.rs),
            s(b.cs),
            beta,
            c.as_mut_ptr().add(c_off),
            s(n),
        )
    }
}

/// The shape of a convolution, with three spatial dims (unused leading dims have size,
/// kernel, stride and dilation 1, padding 0).
///
/// `input` and `output` are the spatial sizes of the convolution's input and output:
/// for a transposed convolution they are swapped (its input is this geometry's output).
/// Output position `o` of spatial dim `d` reads input positions
/// `o * stride + k * dilation - padding` for `k < kernel`; positions outside the input
/// read zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvGeometry {
    /// Samples.
    pub batch: usize,
    /// Input channels `C`.
    pub in_channels: usize,
    /// Output channels `O` (the weight's first dim).
    pub out_channels: usize,
    /// Groups: `C` and `O` are both divisible by it.
    pub groups: usize,
    /// Input spatial sizes.
    pub input: [usize; 3],
    /// Output spatial sizes.
    pub output: [usize; 3],
    /// Kernel sizes.
    pub kernel: [usize; 3],
    /// Strides (positive).
    pub stride: [usize; 3],
    /// Zero padding before each spatial dim.
    pub padding: [usize; 3],
    /// Dilations (positive).
    pub dilation: [usize; 3],
}

fn prod3(v: [usize; 3]) -> Result<usize> {
    v[0].checked_mul(v[1])
        .and_then(|x| x.checked_mul(v[2]))
        .ok_or(Error::NumelOverflow)
}

impl ConvGeometry {
    /// Checks the invariants the kernels rely on: positive groups dividing both channel
    /// counts, positive strides and dilations, and sizes whose products and window
    /// positions fit in `i64` (so no index arithmetic overflows).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidArgument(format!("convolution: {m}")));
        if self.groups == 0
            || self.in_channels % self.groups != 0
            || self.out_channels % self.groups != 0
        {
            return bad("groups must divide the channel counts");
        }
        if self.stride.contains(&0) || self.dilation.contains(&0) {
            return bad("strides and dilations must be positive");
        }
        const LIMIT: usize = 1 << 62;
        for d in 0..3 {
            let last_out = self.output[d].saturating_sub(1);
            let last_k = self.kernel[d].saturating_sub(1);
            let far = last_out
                .checked_mul(self.stride[d])
                .and_then(|x| x.checked_add(last_k.checked_mul(self.dilation[d])?));
            if far.is_none_or(|f| f >= LIMIT) || self.padding[d] >= LIMIT || self.input[d] >= LIMIT
            {
                return Err(Error::NumelOverflow);
            }
        }
        self.input_len()?
            .checked_mul(self.batch)
            .ok_or(Error::NumelOverflow)?;
        self.output_len()?
            .checked_mul(self.batch)
            .ok_or(Error::NumelOverflow)?;
        self.cols_len()?;
        self.weight_len()?;
        Ok(())
    }

    /// Elements of one sample of the input (`C * prod(input)`).
    pub fn input_len(&self) -> Result<usize> {
        prod3(self.input)?
            .checked_mul(self.in_channels)
            .ok_or(Error::NumelOverflow)
    }

    /// Elements of one sample of the output (`O * prod(output)`).
    pub fn output_len(&self) -> Result<usize> {
        prod3(self.output)?
            .checked_mul(self.out_channels)
            .ok_or(Error::NumelOverflow)
    }

    /// Elements of the weight (`O * C/groups * prod(kernel)`).
    pub fn weight_len(&self) -> Result<usize> {
        prod3(self.kernel)?
            .checked_mul(self.in_channels / self.groups.max(1))
            .and_then(|x| x.checked_mul(self.out_channels))
            .ok_or(Error::NumelOverflow)
    }

    /// Elements of one sample's column matrix (`C * prod(kernel) * prod(output)`).
    fn cols_len(&self) -> Result<usize> {
        prod3(self.kernel)?
            .checked_mul(self.in_channels)
            .and_then(|x| x.checked_mul(prod3(self.output).ok()?))
            .ok_or(Error::NumelOverflow)
    }

    /// Output positions per channel.
    fn l(&self) -> usize {
        self.output.iter().product()
    }

    /// Rows of one group's column matrix (`C/groups * prod(kernel)`).
    fn ck(&self) -> usize {
        self.in_channels / self.groups * self.kernel.iter().product::<usize>()
    }

    /// A 1x1 convolution with stride 1 and no padding: the column matrix is the input.
    fn is_pointwise(&self) -> bool {
        self.kernel == [1, 1, 1]
            && self.stride == [1, 1, 1]
            && self.padding == [0, 0, 0]
            && self.input == self.output
    }

    /// The output positions `o < out` whose input position `o * s + off - p` lies in
    /// `0..size` (`off = k * dilation`), as a range.
    fn valid(&self, d: usize, off: usize) -> std::ops::Range<usize> {
        let (s, p, size, out) = (
            self.stride[d],
            self.padding[d],
            self.input[d],
            self.output[d],
        );
        // o * s + off >= p  and  o * s + off < p + size.
        let lo = if off >= p { 0 } else { (p - off).div_ceil(s) };
        let hi = if p + size > off {
            (p + size - off).div_ceil(s)
        } else {
            0
        };
        let hi = hi.min(out);
        lo.min(hi)..hi
    }
}

/// Visits every (column row, output row) pair of one sample: for channel `c`, kernel
/// offset `(kd, kh, kw)` and output position `(od, oh)`, calls `f(col_start, x_start,
/// valid)` where the column entries `col_start + ow` for `ow` in `valid` correspond to
/// input entries `x_start + ow * stride_w` (the others read zero padding); `x_start` is
/// `None` when the whole output row reads padding.
fn for_each_row(g: &ConvGeometry, mut f: impl FnMut(usize, Option<isize>, std::ops::Range<usize>)) {
    let [od_n, oh_n, ow_n] = g.output;
    let [id_n, ih_n, iw_n] = g.input;
    let [kd_n, kh_n, kw_n] = g.kernel;
    let l = g.l();
    let mut row = 0;
    for c in 0..g.in_channels {
        for kd in 0..kd_n {
            let vd = g.valid(0, kd * g.dilation[0]);
            for kh in 0..kh_n {
                let vh = g.valid(1, kh * g.dilation[1]);
                for kw in 0..kw_n {
                    let off_w = kw * g.dilation[2];
                    let vw = g.valid(2, off_w);
                    let col_row = row * l;
                    for od in 0..od_n {
                        for oh in 0..oh_n {
                            let col_start = col_row + (od * oh_n + oh) * ow_n;
                            if !vd.contains(&od) || !vh.contains(&oh) || vw.is_empty() {
                                f(col_start, None, 0..0);
                                continue;
                            }
                            let id = od * g.stride[0] + kd * g.dilation[0] - g.padding[0];
                            let ih = oh * g.stride[1] + kh * g.dilation[1] - g.padding[1];
                            // Input index of output column 0 (may be negative: only
                            // `vw` columns are read).
                            let base = ((c * id_n + id) * ih_n + ih) * iw_n;
                            let x0 = base as isize + off_w as isize - g.padding[2] as isize;
                            f(col_start, Some(x0), vw.clone());
                        }
                    }
                    row += 1;
                }
            }
        }
    }
}

/// `cols = im2col(x)` for one sample: `x` is `C x input`, `cols` is
/// `(C * prod(kernel)) x prod(output)`, fully overwritten.
fn im2col<T: Gemm>(g: &ConvGeometry, x: &[T], cols: &mut [T]) {
    let ow_n = g.output[2];
    let sw = g.stride[2];
    for_each_row(g, |col_start, x0, valid| {
        let dst = &mut cols[col_start..col_start + ow_n];
        match x0 {
            None => dst.fill(T::ZERO),
            Some(x0) => {
                dst[..valid.start].fill(T::ZERO);
                dst[valid.end..].fill(T::ZERO);
                // In range: `valid` holds exactly the columns whose input index
                // `x0 + ow * sw` is inside this input row.
                let first = (x0 + (valid.start * sw) as isize) as usize;
                if sw == 1 {
                    dst[valid.clone()].copy_from_slice(&x[first..first + valid.len()]);
                } else {
                    for (j, ow) in valid.enumerate() {
                        dst[ow] = x[first + j * sw];
                    }
                }
            }
        }
    });
}

/// `x += col2im(cols)` for one sample (the adjoint of [`im2col`]).
fn col2im<T: Gemm>(g: &ConvGeometry, cols: &[T], x: &mut [T]) {
    let sw = g.stride[2];
    for_each_row(g, |col_start, x0, valid| {
        if let Some(x0) = x0 {
            let first = (x0 + (valid.start * sw) as isize) as usize;
            for (j, ow) in valid.enumerate() {
                x[first + j * sw] += cols[col_start + ow];
            }
        }
    });
}

/// Scratch column buffers reused across the samples of one call.
struct Scratch<T> {
    free: Mutex<Vec<Vec<T>>>,
    len: usize,
    error: Mutex<Option<Error>>,
}

impl<T: Gemm> Scratch<T> {
    fn new(len: usize) -> Scratch<T> {
        Scratch {
            free: Mutex::new(Vec::new()),
            len,
            error: Mutex::new(None),
        }
    }

    /// Runs `f` with a buffer of `len` elements (contents unspecified); records an
    /// allocation failure instead.
    fn with(&self, f: impl FnOnce(&mut [T])) {
        let taken = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut buf = match taken {
            Some(b) => b,
            None => match try_vec(self.len, T::ZERO) {
                Ok(b) => b,
                Err(e) => {
                    *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                    return;
                }
            },
        };
        f(&mut buf);
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(buf);
    }

    fn finish(self) -> Result<()> {
        match self.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Runs `f(i, chunk)` over `chunk_len` chunks of `out`, in parallel when the work
/// (`flops`) is large enough; the same chunks either way.
fn run_chunks<T: Send>(
    out: &mut [T],
    chunk_len: usize,
    flops: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    if flops < PARALLEL_MIN_ELEMENTS * 16 {
        for (i, c) in out.chunks_mut(chunk_len.max(1)).enumerate() {
            f(i, c);
        }
    } else {
        parallel::for_each_chunk_mut(out, chunk_len, f);
    }
}

fn check_len(what: &str, got: usize, want: usize) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "convolution: {what} has {got} elements, expected {want}"
        )))
    }
}

/// The convolution `y = conv(x, w) + bias`: `x` is `N x C x input`, `w` is
/// `O x C/groups x kernel`, `bias` has `O` elements; returns `N x O x output`.
pub fn conv_forward<T: Gemm>(
    g: &ConvGeometry,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
) -> Result<Vec<T>> {
    g.validate()?;
    let (in_len, out_len) = (g.input_len()?, g.output_len()?);
    check_len("input", x.len(), in_len * g.batch)?;
    check_len("weight", w.len(), g.weight_len()?)?;
    if let Some(b) = bias {
        check_len("bias", b.len(), g.out_channels)?;
    }
    let mut out = try_vec(out_len * g.batch, T::ZERO)?;
    if out.is_empty() {
        return Ok(out);
    }
    let (l, ck, og) = (g.l(), g.ck(), g.out_channels / g.groups);
    let pointwise = g.is_pointwise();
    let scratch = Scratch::new(if pointwise { 0 } else { g.cols_len()? });
    let sample = |n: usize, y: &mut [T]| {
        let xn = &x[n * in_len..(n + 1) * in_len];
        let mut run = |cols: &[T]| {
            for grp in 0..g.groups {
                gemm(
                    (og, ck, l),
                    Mat {
                        data: w,
                        offset: grp * og * ck,
                        rs: ck,
                        cs: 1,
                    },
                    Mat {
                        data: cols,
                        offset: grp * ck * l,
                        rs: l,
                        cs: 1,
                    },
                    T::ZERO,
                    y,
                    grp * og * l,
                );
            }
            if let Some(b) = bias {
                for (row, &bo) in y.chunks_mut(l).zip(b) {
                    row.iter_mut().for_each(|v| *v += bo);
                }
            }
        };
        if pointwise {
            run(xn);
        } else {
            scratch.with(|cols| {
                im2col(g, xn, cols);
                run(cols);
            });
        }
    };
    let flops = out.len().saturating_mul(ck);
    run_chunks(&mut out, out_len, flops, sample);
    scratch.finish()?;
    Ok(out)
}

/// The adjoint of the convolution in its input: `x̄ = conv_transpose(ȳ, w)`, with `ȳ`
/// `N x O x output` and the result `N x C x input`. This is also the transposed
/// convolution's forward.
pub fn conv_input_adjoint<T: Gemm>(g: &ConvGeometry, gy: &[T], w: &[T]) -> Result<Vec<T>> {
    g.validate()?;
    let (in_len, out_len) = (g.input_len()?, g.output_len()?);
    check_len("grad_output", gy.len(), out_len * g.batch)?;
    check_len("weight", w.len(), g.weight_len()?)?;
    let mut out = try_vec(in_len * g.batch, T::ZERO)?;
    if out.is_empty() {
        return Ok(out);
    }
    let (l, ck, og) = (g.l(), g.ck(), g.out_channels / g.groups);
    let pointwise = g.is_pointwise();
    let scratch = Scratch::new(if pointwise { 0 } else { g.cols_len()? });
    let sample = |n: usize, xn: &mut [T]| {
        let gyn = &gy[n * out_len..(n + 1) * out_len];
        let run = |cols: &mut [T]| {
            for grp in 0..g.groups {
                // cols[grp] (ck x l) = w[grp]^T (ck x og) @ gy[grp] (og x l)
                gemm(
                    (ck, og, l),
                    Mat {
                        data: w,
                        offset: grp * og * ck,
                        rs: 1,
                        cs: ck,
                    },
                    Mat {
                        data: gyn,
                        offset: grp * og * l,
                        rs: l,
                        cs: 1,
                    },
                    T::ZERO,
                    cols,
                    grp * ck * l,
                );
            }
        };
        if pointwise {
            run(xn);
        } else {
            scratch.with(|cols| {
                run(cols);
                col2im(g, cols, xn);
            });
        }
    };
    let flops = out_len
        .saturating_mul(g.batch)
        .saturating_mul(ck)
        .saturating_mul(og);
    run_chunks(&mut out, in_len, flops, sample);
    scratch.finish()?;
    Ok(out)
}

/// Samples whose weight-gradient contributions are summed into one partial: a fixed
/// count of blocks, so the order of additions depends on the batch size only.
const WEIGHT_BLOCKS: usize = 8;

/// The adjoint of the convolution in its weight: `w̄ = Σ_n ȳ[n] @ im2col(x[n])ᵀ` per
/// group, with `x` `N x C x input` and `ȳ` `N x O x output`; returns the weight's shape.
pub fn conv_weight_adjoint<T: Gemm>(g: &ConvGeometry, x: &[T], gy: &[T]) -> Result<Vec<T>> {
    g.validate()?;
    let (in_len, out_len, w_len) = (g.input_len()?, g.output_len()?, g.weight_len()?);
    check_len("input", x.len(), in_len * g.batch)?;
    check_len("grad_output", gy.len(), out_len * g.batch)?;
    if w_len == 0 || g.batch == 0 {
        return try_vec(w_len, T::ZERO);
    }
    let blocks = g.batch.min(WEIGHT_BLOCKS);
    let per_block = g.batch.div_ceil(blocks);
    let mut partials = try_vec(
        w_len.checked_mul(blocks).ok_or(Error::NumelOverflow)?,
        T::ZERO,
    )?;
    let (l, ck, og) = (g.l(), g.ck(), g.out_channels / g.groups);
    let pointwise = g.is_pointwise();
    let scratch = Scratch::new(if pointwise { 0 } else { g.cols_len()? });
    let block = |b: usize, part: &mut [T]| {
        let samples = b * per_block..((b + 1) * per_block).min(g.batch);
        for (i, n) in samples.enumerate() {
            let beta = if i == 0 { T::ZERO } else { T::ONE };
            let xn = &x[n * in_len..(n + 1) * in_len];
            let gyn = &gy[n * out_len..(n + 1) * out_len];
            let run = |cols: &[T], part: &mut [T]| {
                for grp in 0..g.groups {
                    // part[grp] (og x ck) += gy[grp] (og x l) @ cols[grp]^T (l x ck)
                    gemm(
                        (og, l, ck),
                        Mat {
                            data: gyn,
                            offset: grp * og * l,
                            rs: l,
                            cs: 1,
                        },
                        Mat {
                            data: cols,
                            offset: grp * ck * l,
                            rs: 1,
                            cs: l,
                        },
                        beta,
                        part,
                        grp * og * ck,
                    );
                }
            };
            if pointwise {
                run(xn, part);
            } else {
                scratch.with(|cols| {
                    im2col(g, xn, cols);
                    run(cols, part);
                });
            }
        }
    };
    let flops = out_len.saturating_mul(g.batch).saturating_mul(ck);
    run_chunks(&mut partials, w_len, flops, block);
    scratch.finish()?;
    let (first, rest) = partials.split_at_mut(w_len);
    for part in rest.chunks(w_len) {
        for (a, &b) in first.iter_mut().zip(part) {
            *a += b;
        }
    }
    partials.truncate(w_len);
    Ok(partials)
}

/// `unfold` (im2col) of a batch: `x` is `N x C x input`; returns
/// `N x (C * prod(kernel)) x prod(output)`. `out_channels` and `groups` are unused.
pub fn unfold<T: Gemm>(g: &ConvGeometry, x: &[T]) -> Result<Vec<T>> {
    g.validate()?;
    let in_len = g.input_len()?;
    check_len("input", x.len(), in_len * g.batch)?;
    let cols_len = g.cols_len()?;
    let mut out = try_vec(
        cols_len.checked_mul(g.batch).ok_or(Error::NumelOverflow)?,
        T::ZERO,
    )?;
    if out.is_empty() {
        return Ok(out);
    }
    let len = out.len();
    run_chunks(&mut out, cols_len, len, |n, cols| {
        im2col(g, &x[n * in_len..(n + 1) * in_len], cols)
    });
    Ok(out)
}

/// `fold` (col2im) of a batch, the adjoint of [`unfold`]: `cols` is
/// `N x (C * prod(kernel)) x prod(output)`; returns `N x C x input` (overlaps summed).
pub fn fold<T: Gemm>(g: &ConvGeometry, cols: &[T]) -> Result<Vec<T>> {
    g.validate()?;
    let in_len = g.input_len()?;
    let cols_len = g.cols_len()?;
    check_len("input", cols.len(), cols_len * g.batch)?;
    let mut out = try_vec(in_len * g.batch, T::ZERO)?;
    if out.is_empty() {
        return Ok(out);
    }
    run_chunks(&mut out, in_len, cols.len(), |n, x| {
        col2im(g, &cols[n * cols_len..(n + 1) * cols_len], x)
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(
        input: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
        dilation: usize,
    ) -> ConvGeometry {
        let output = (input + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
        ConvGeometry {
            batch: 1,
            in_channels: 1,
            out_channels: 1,
            groups: 1,
            input: [1, 1, input],
            output: [1, 1, output],
            kernel: [1, 1, kernel],
            stride: [1, 1, stride],
            padding: [0, 0, padding],
            dilation: [1, 1, dilation],
        }
    }

    /// A direct 1-D correlation, the definition the GEMM path must agree with.
    fn direct(g: &ConvGeometry, x: &[f64], w: &[f64]) -> Vec<f64> {
        (0..g.output[2])
            .map(|o| {
                (0..g.kernel[2])
                    .filter_map(|k| {
                        let i =
                            (o * g.stride[2] + k * g.dilation[2]) as isize - g.padding[2] as isize;
                        (0..g.input[2] as isize)
                            .contains(&i)
                            .then(|| x[i as usize] * w[k])
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn forward_matches_the_direct_definition() {
        let x: Vec<f64> = (0..9).map(|i| (i * i % 7) as f64 - 3.0).collect();
        let w = [0.5, -1.0, 2.0];
        for (s, p, d) in [(1, 0, 1), (2, 1, 1), (1, 2, 2), (3, 2, 1), (2, 0, 3)] {
            let g = geom(9, 3, s, p, d);
            let got = conv_forward(&g, &x, &w, None).unwrap();
            assert_eq!(
                got,
                direct(&g, &x, &w),
                "stride {s} padding {p} dilation {d}"
            );
        }
    }

    #[test]
    fn the_adjoints_are_adjoint() {
        // <conv(x, w), y> == <x, input_adjoint(y, w)> == <w, weight_adjoint(x, y)>.
        let g = geom(7, 3, 2, 2, 2);
        let x: Vec<f64> = (0..7).map(|i| i as f64 * 0.5 - 1.0).collect();
        let w = [1.0, -2.0, 0.25];
        let y: Vec<f64> = (0..g.output[2]).map(|i| 1.0 + i as f64).collect();
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
        let fwd = conv_forward(&g, &x, &w, None).unwrap();
        let xa = conv_input_adjoint(&g, &y, &w).unwrap();
        let wa = conv_weight_adjoint(&g, &x, &y).unwrap();
        assert_eq!(dot(&fwd, &y), dot(&x, &xa));
        assert_eq!(dot(&fwd, &y), dot(&w, &wa));
    }

    #[test]
    fn rejects_inconsistent_lengths() {
        let g = geom(5, 3, 1, 0, 1);
        assert!(conv_forward(&g, &[1.0f64; 4], &[1.0; 3], None).is_err());
        let zero_stride = ConvGeometry {
            stride: [1, 1, 0],
            ..g
        };
        assert!(conv_forward(&zero_stride, &[1.0f64; 5], &[1.0; 3], None).is_err());
    }
}
