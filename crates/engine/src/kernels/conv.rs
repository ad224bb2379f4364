//! Convolution kernels: im2col / col2im and the three GEMM-based maps of a convolution
//! (forward, its adjoint in the input, its adjoint in the weight). Everything works on
//! contiguous slices and three spatial dims (1-D and 2-D convolutions have size-1 leading
//! dims). See Note \[Convolutions\].
//!
//! When the output is small, several samples share one GEMM (their column matrices side
//! by side). Work is split by group of samples, by fixed blocks of GEMM rows and, for the
//! weight adjoint, by fixed blocks of sample groups whose partial sums are added in block
//! order; all of these follow from the sizes, so results do not depend on the thread
//! count.

use super::matmul::{parallel_task_budget, tile_range, Gemm, GemmPlan, SharedMut};
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

/// `c[c_off..] (m x k times k x n, row stride rsc) = a @ b + beta * c`, with `a` and
/// `b` bounds-checked.
///
/// # Safety
/// `c` must be valid for reads and writes of the `m x n` matrix at `c_off` with row
/// stride `rsc`, and not written by anyone else meanwhile.
unsafe fn gemm_raw<T: Gemm>(
    (m, k, n): (usize, usize, usize),
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    beta: T,
    c: *mut T,
    c_off: usize,
    rsc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k > 0 {
        let a_end = reach(a.offset, m, k, a.rs, a.cs);
        let b_end = reach(b.offset, k, n, b.rs, b.cs);
        assert!(
            a_end.is_some_and(|e| e < a.data.len()) && b_end.is_some_and(|e| e < b.data.len()),
            "rustgrad internal error: conv GEMM operand out of bounds"
        );
    }
    let s = |x: usize| isize::try_from(x).expect("rustgrad internal error: stride overflow");
    // SAFETY: the assert above shows that every element of `a` (`m x k` from `a.offset`)
    // and `b` (`k x n` from `b.offset`) lies inside its slice (none is read when
    // `k == 0`); strides were below those lengths, so they fit `isize`. `c` is this
    // function's contract.
    unsafe {
        T::gemm(
            m,
            k,
            n,
            a.data.as_ptr().wrapping_add(a.offset),
            s(a.rs),
            s(a.cs),
            b.data.as_ptr().wrapping_add(b.offset),
            s(b.rs),
            s(b.cs),
            beta,
            c.add(c_off),
            s(rsc),
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
            || !self.in_channels.is_multiple_of(self.groups)
            || !self.out_channels.is_multiple_of(self.groups)
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
/// `None` when the whole output row reads padding. Rows of the column matrix are `ld`
/// apart (`ld >= L`: the columns of several samples may sit side by side).
fn for_each_row(
    g: &ConvGeometry,
    ld: usize,
    mut f: impl FnMut(usize, Option<isize>, std::ops::Range<usize>),
) {
    let [od_n, oh_n, ow_n] = g.output;
    let [id_n, ih_n, iw_n] = g.input;
    let [kd_n, kh_n, kw_n] = g.kernel;
    let mut row = 0;
    for c in 0..g.in_channels {
        for kd in 0..kd_n {
            let vd = g.valid(0, kd * g.dilation[0]);
            for kh in 0..kh_n {
                let vh = g.valid(1, kh * g.dilation[1]);
                for kw in 0..kw_n {
                    let off_w = kw * g.dilation[2];
                    let vw = g.valid(2, off_w);
                    let col_row = row * ld;
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
/// `(C * prod(kernel)) x prod(output)` with row stride `ld`; its first `prod(output)`
/// columns are overwritten.
fn im2col<T: Gemm>(g: &ConvGeometry, x: &[T], cols: &mut [T], ld: usize) {
    let ow_n = g.output[2];
    let sw = g.stride[2];
    for_each_row(g, ld, |col_start, x0, valid| {
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

/// `x += col2im(cols)` for one sample (the adjoint of [`im2col`]); `cols` has row
/// stride `ld`.
fn col2im<T: Gemm>(g: &ConvGeometry, cols: &[T], x: &mut [T], ld: usize) {
    let sw = g.stride[2];
    for_each_row(g, ld, |col_start, x0, valid| {
        if let Some(x0) = x0 {
            let first = (x0 + (valid.start * sw) as isize) as usize;
            let src = &cols[col_start + valid.start..col_start + valid.end];
            if sw == 1 {
                // Contiguous: a slice add the compiler vectorises.
                for (d, &v) in x[first..first + src.len()].iter_mut().zip(src) {
                    *d += v;
                }
            } else {
                for (j, &v) in src.iter().enumerate() {
                    x[first + j * sw] += v;
                }
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

/// Columns a convolution GEMM should have at least: below this the GEMM re-reads its
/// whole weight matrix for a few columns of work, so samples are batched side by side
/// until their columns reach it. See Note \[Convolutions\].
const TARGET_COLUMNS: usize = 256;

/// Elements of one sample group's column matrix beyond which no further sample joins it
/// (4 MiB of f32): batching never allocates the `N·C·K·L` matrix of a large batch.
const COLS_BUDGET: usize = 1 << 20;

/// Weight-gradient partial sums (one per block of sample groups) are allocated only
/// while all of them fit in this many elements; a big weight gets fewer blocks (down to
/// one) and relies on the GEMM's row blocks for parallelism instead.
const PARTIALS_BUDGET: usize = 1 << 20;

/// At most this many blocks of sample groups are summed into separate weight-gradient
/// partials: a fixed count, so the order of additions depends on the sizes only.
const WEIGHT_BLOCKS: usize = 8;

impl ConvGeometry {
    /// Samples whose column matrices sit side by side in one GEMM: enough for
    /// [`TARGET_COLUMNS`] columns, within [`COLS_BUDGET`], at most the batch, at least
    /// one. A function of the geometry only (never of the thread count).
    fn samples_per_gemm(&self) -> Result<usize> {
        let per_sample = self.cols_len()?.max(1);
        let want = TARGET_COLUMNS.div_ceil(self.l().max(1));
        Ok(want.min(COLS_BUDGET / per_sample).min(self.batch).max(1))
    }

    /// Scratch elements for one group of `nb` samples: its column matrix, and when
    /// `nb > 1` the side-by-side copy of the `O x nb·L` output (or output gradient).
    fn scratch_len(&self, nb: usize) -> Result<usize> {
        let cols = if nb == 1 && self.is_pointwise() {
            0
        } else {
            self.cols_len()?
        };
        let side = if nb == 1 { 0 } else { self.output_len()? };
        cols.checked_add(side)
            .and_then(|x| x.checked_mul(nb))
            .ok_or(Error::NumelOverflow)
    }
}

/// One GEMM per convolution group: rows `grp·m .. (grp+1)·m` of `c` (`groups·m x n`, row
/// stride `n`) are `a_grp @ b_grp + beta·c`, where `a_grp` is `a` moved `grp·a_step`
/// elements on (likewise `b`).
struct GroupedGemm<'a, T> {
    groups: usize,
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'a, T>,
    a_step: usize,
    b: Mat<'a, T>,
    b_step: usize,
}

/// The tiling of each group's `m x n` output of a grouped GEMM that is one of `outer`
/// concurrent ones (the sample groups of a convolution): the engine's task budget
/// shared among them. See Note [GEMM plans].
fn grouped_plan(
    groups: usize,
    mkn: (usize, usize, usize),
    outer: usize,
    layout: (usize, usize),
) -> GemmPlan {
    let budget = parallel_task_budget().div_ceil(outer.max(1));
    GemmPlan::with_layout(groups, mkn, budget, layout)
}

/// Records the plan of a convolution kernel (`parallel::record_plan`): `outer`
/// concurrent units (sample groups, or weight-gradient blocks of `per_unit` sample
/// groups each), each a grouped GEMM tiled by [`grouped_plan`].
fn record_conv(
    kernel: &'static str,
    outer: usize,
    per_unit: usize,
    groups: usize,
    (m, k, n): (usize, usize, usize),
    layout: (usize, usize),
) {
    if !parallel::recording() {
        return;
    }
    let plan = grouped_plan(groups, (m, k, n), outer, layout);
    let per_task = |rows: usize, cols: usize| {
        (plan.batch_per_task.min(groups) * rows * cols * k * per_unit) as u64
    };
    parallel::record_plan(
        kernel,
        outer * plan.tasks(groups),
        per_task(m / plan.m_tiles, n / plan.n_tiles),
        per_task(m.div_ceil(plan.m_tiles), n.div_ceil(plan.n_tiles)),
    );
}

impl<T: Gemm> GroupedGemm<'_, T> {
    fn plan(&self, outer: usize) -> GemmPlan {
        let layout = (self.a.cs, self.b.rs);
        grouped_plan(self.groups, (self.m, self.k, self.n), outer, layout)
    }

    /// Computes `c` as a grid of tiles per group (one GEMM call each), in parallel
    /// when there are several. Any tiling gives the same bits ([`Gemm::gemm`]).
    fn run(&self, beta: T, c: &mut [T], outer: usize) {
        let (m, k, n) = (self.m, self.k, self.n);
        let len = self.groups * m * n;
        if len == 0 {
            return;
        }
        let plan = self.plan(outer);
        assert!(
            len <= c.len(),
            "rustgrad internal error: conv GEMM output out of bounds"
        );
        let c_ptr = SharedMut(c.as_mut_ptr());
        let tiles = plan.m_tiles * plan.n_tiles;
        let run = |t: usize| {
            let (first, tile) = (t / tiles * plan.batch_per_task, t % tiles);
            let rows = tile_range(m, plan.m_tiles, tile / plan.n_tiles);
            let cols = tile_range(n, plan.n_tiles, tile % plan.n_tiles);
            for grp in first..(first + plan.batch_per_task).min(self.groups) {
                let a = Mat {
                    offset: self.a.offset + grp * self.a_step + rows.start * self.a.rs,
                    ..self.a
                };
                let b = Mat {
                    offset: self.b.offset + grp * self.b_step + cols.start * self.b.cs,
                    ..self.b
                };
                let c_off = grp * m * n + rows.start * n + cols.start;
                // SAFETY: `c` holds `groups * m * n` elements (asserted above); this
                // tile is rows `rows` and columns `cols` (row stride `n`) of group
                // `grp`'s `m x n` block, inside it, and no other task writes it.
                unsafe {
                    gemm_raw(
                        (rows.len(), k, cols.len()),
                        a,
                        b,
                        beta,
                        c_ptr.ptr(),
                        c_off,
                        n,
                    )
                };
            }
        };
        parallel::for_each_task(plan.tasks(self.groups), run);
    }
}

/// Lays the `cnt` samples of `per_sample` (each `rows x l`, contiguous) side by side:
/// `side[r, s·l + j] = per_sample[s, r, j]`.
fn side_by_side<T: Copy>(per_sample: &[T], side: &mut [T], l: usize, cnt: usize) {
    if per_sample.is_empty() || l == 0 {
        return;
    }
    let sample_len = per_sample.len() / cnt;
    for (s, src) in per_sample.chunks(sample_len).enumerate() {
        for (r, row) in src.chunks(l).enumerate() {
            side[r * cnt * l + s * l..][..l].copy_from_slice(row);
        }
    }
}

/// The inverse of [`side_by_side`]: `per_sample[s, r, j] = side[r, s·l + j]`.
fn split_samples<T: Copy>(side: &[T], per_sample: &mut [T], l: usize, cnt: usize) {
    if per_sample.is_empty() || l == 0 {
        return;
    }
    let sample_len = per_sample.len() / cnt;
    for (s, dst) in per_sample.chunks_mut(sample_len).enumerate() {
        for (r, row) in dst.chunks_mut(l).enumerate() {
            row.copy_from_slice(&side[r * cnt * l + s * l..][..l]);
        }
    }
}

/// Writes the column matrices of the `cnt` samples of `xs` (each `in_len` long) side by
/// side into `cols` (row stride `cnt·L`).
fn im2col_side_by_side<T: Gemm>(
    g: &ConvGeometry,
    xs: &[T],
    (in_len, cnt): (usize, usize),
    cols: &mut [T],
) {
    let l = g.l();
    if cols.is_empty() {
        return;
    }
    for s in 0..cnt {
        im2col(g, &xs[s * in_len..][..in_len], &mut cols[s * l..], cnt * l);
    }
}

/// Checks the geometry and the lengths of the batch operand `a` (`a_len` per sample)
/// and of `b` (`b_len` in all).
fn check_operands(
    g: &ConvGeometry,
    (a_what, a, a_len): (&str, usize, usize),
    (b_what, b, b_len): (&str, usize, usize),
) -> Result<()> {
    g.validate()?;
    check_len(
        a_what,
        a,
        a_len.checked_mul(g.batch).ok_or(Error::NumelOverflow)?,
    )?;
    check_len(b_what, b, b_len)
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
    forward_batched(g, x, w, bias, g.samples_per_gemm()?)
}

/// [`conv_forward`] with `nb` samples per GEMM.
fn forward_batched<T: Gemm>(
    g: &ConvGeometry,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    nb: usize,
) -> Result<Vec<T>> {
    let (in_len, out_len) = (g.input_len()?, g.output_len()?);
    check_operands(
        g,
        ("input", x.len(), in_len),
        ("weight", w.len(), g.weight_len()?),
    )?;
    if let Some(b) = bias {
        check_len("bias", b.len(), g.out_channels)?;
    }
    let mut out = try_vec(out_len * g.batch, T::ZERO)?;
    if out.is_empty() {
        return Ok(out);
    }
    let (l, ck, og) = (g.l(), g.ck(), g.out_channels / g.groups);
    let cols_len = g.cols_len()?;
    let pointwise = g.is_pointwise();
    let scratch = Scratch::new(g.scratch_len(nb)?);
    // y (O x ncols) = w @ cols, per group.
    let product = |cols: &[T], ncols: usize, y: &mut [T]| {
        GroupedGemm {
            groups: g.groups,
            m: og,
            k: ck,
            n: ncols,
            a: Mat {
                data: w,
                offset: 0,
                rs: ck,
                cs: 1,
            },
            a_step: og * ck,
            b: Mat {
                data: cols,
                offset: 0,
                rs: ncols,
                cs: 1,
            },
            b_step: ck * ncols,
        }
        .run(T::ZERO, y, g.batch.div_ceil(nb))
    };
    let sample_group = |sg: usize, y: &mut [T]| {
        let cnt = y.len() / out_len;
        let xs = &x[sg * nb * in_len..][..cnt * in_len];
        if cnt == 1 && pointwise {
            product(xs, l, y);
        } else {
            scratch.with(|buf| {
                let (cols, side) = buf.split_at_mut(cols_len * cnt);
                im2col_side_by_side(g, xs, (in_len, cnt), cols);
                if cnt == 1 {
                    product(cols, l, y);
                } else {
                    let side = &mut side[..out_len * cnt];
                    product(cols, cnt * l, side);
                    split_samples(side, y, l, cnt);
                }
            });
        }
        if let Some(b) = bias {
            for yn in y.chunks_mut(out_len) {
                for (row, &bo) in yn.chunks_mut(l).zip(b) {
                    row.iter_mut().for_each(|v| *v += bo);
                }
            }
        }
    };
    let flops = out.len().saturating_mul(ck);
    let outer = g.batch.div_ceil(nb);
    record_conv(
        "conv_forward",
        outer,
        1,
        g.groups,
        (og, ck, nb.min(g.batch) * l),
        (1, nb.min(g.batch) * l),
    );
    run_chunks(&mut out, out_len * nb, flops, sample_group);
    scratch.finish()?;
    Ok(out)
}

/// The adjoint of the convolution in its input: `x̄ = conv_transpose(ȳ, w)`, with `ȳ`
/// `N x O x output` and the result `N x C x input`. This is also the transposed
/// convolution's forward.
pub fn conv_input_adjoint<T: Gemm>(g: &ConvGeometry, gy: &[T], w: &[T]) -> Result<Vec<T>> {
    g.validate()?;
    input_adjoint_batched(g, gy, w, g.samples_per_gemm()?)
}

/// [`conv_input_adjoint`] with `nb` samples per GEMM.
fn input_adjoint_batched<T: Gemm>(
    g: &ConvGeometry,
    gy: &[T],
    w: &[T],
    nb: usize,
) -> Result<Vec<T>> {
    let (in_len, out_len) = (g.input_len()?, g.output_len()?);
    check_operands(
        g,
        ("grad_output", gy.len(), out_len),
        ("weight", w.len(), g.weight_len()?),
    )?;
    let mut out = try_vec(in_len * g.batch, T::ZERO)?;
    if out.is_empty() {
        return Ok(out);
    }
    let (l, ck, og) = (g.l(), g.ck(), g.out_channels / g.groups);
    let cols_len = g.cols_len()?;
    let pointwise = g.is_pointwise();
    let scratch = Scratch::new(g.scratch_len(nb)?);
    // cols (C·K x ncols) = wᵀ @ ȳ, per group.
    let product = |gys: &[T], ncols: usize, cols: &mut [T]| {
        GroupedGemm {
            groups: g.groups,
            m: ck,
            k: og,
            n: ncols,
            a: Mat {
                data: w,
                offset: 0,
                rs: 1,
                cs: ck,
            },
            a_step: og * ck,
            b: Mat {
                data: gys,
                offset: 0,
                rs: ncols,
                cs: 1,
            },
            b_step: og * ncols,
        }
        .run(T::ZERO, cols, g.batch.div_ceil(nb))
    };
    let sample_group = |sg: usize, xs: &mut [T]| {
        let cnt = xs.len() / in_len;
        let gys = &gy[sg * nb * out_len..][..cnt * out_len];
        if cnt == 1 && pointwise {
            product(gys, l, xs);
            return;
        }
        scratch.with(|buf| {
            let (cols, side) = buf.split_at_mut(cols_len * cnt);
            if cnt == 1 {
                product(gys, l, cols);
            } else {
                let side = &mut side[..out_len * cnt];
                side_by_side(gys, side, l, cnt);
                product(side, cnt * l, cols);
            }
            if !cols.is_empty() {
                for (s, xn) in xs.chunks_mut(in_len).enumerate() {
                    col2im(g, &cols[s * l..], xn, cnt * l);
                }
            }
        });
    };
    let flops = out_len
        .saturating_mul(g.batch)
        .saturating_mul(ck)
        .saturating_mul(og);
    let outer = g.batch.div_ceil(nb);
    record_conv(
        "conv_input_grad",
        outer,
        1,
        g.groups,
        (ck, og, nb.min(g.batch) * l),
        (ck, nb.min(g.batch) * l),
    );
    run_chunks(&mut out, in_len * nb, flops, sample_group);
    scratch.finish()?;
    Ok(out)
}

/// The adjoint of the convolution in its weight: `w̄ = Σ_n ȳ[n] @ im2col(x[n])ᵀ` per
/// group, with `x` `N x C x input` and `ȳ` `N x O x output`; returns the weight's shape.
pub fn conv_weight_adjoint<T: Gemm>(g: &ConvGeometry, x: &[T], gy: &[T]) -> Result<Vec<T>> {
    g.validate()?;
    weight_adjoint_batched(g, x, gy, g.samples_per_gemm()?)
}

/// [`conv_weight_adjoint`] with `nb` samples per GEMM: one GEMM of inner dimension
/// `cnt·L` per group of samples, accumulated in sample-group order into the partial of
/// its block of sample groups; the partials are added in block order.
fn weight_adjoint_batched<T: Gemm>(
    g: &ConvGeometry,
    x: &[T],
    gy: &[T],
    nb: usize,
) -> Result<Vec<T>> {
    let (in_len, out_len, w_len) = (g.input_len()?, g.output_len()?, g.weight_len()?);
    check_operands(
        g,
        ("input", x.len(), in_len),
        ("grad_output", gy.len(), out_len * g.batch),
    )?;
    if w_len == 0 || g.batch == 0 {
        return try_vec(w_len, T::ZERO);
    }
    let sample_groups = g.batch.div_ceil(nb);
    let max_blocks = (PARTIALS_BUDGET / w_len).clamp(1, WEIGHT_BLOCKS);
    let per_block = sample_groups.div_ceil(sample_groups.min(max_blocks));
    let blocks = sample_groups.div_ceil(per_block);
    let mut partials = try_vec(
        w_len.checked_mul(blocks).ok_or(Error::NumelOverflow)?,
        T::ZERO,
    )?;
    let (l, ck, og) = (g.l(), g.ck(), g.out_channels / g.groups);
    let cols_len = g.cols_len()?;
    let pointwise = g.is_pointwise();
    let scratch = Scratch::new(g.scratch_len(nb)?);
    // part (O x C/G·K) += ȳ (og x ncols) @ colsᵀ (ncols x C/G·K), per group.
    let product = |gys: &[T], cols: &[T], ncols: usize, beta: T, part: &mut [T]| {
        GroupedGemm {
            groups: g.groups,
            m: og,
            k: ncols,
            n: ck,
            a: Mat {
                data: gys,
                offset: 0,
                rs: ncols,
                cs: 1,
            },
            a_step: og * ncols,
            b: Mat {
                data: cols,
                offset: 0,
                rs: 1,
                cs: ncols,
            },
            b_step: ck * ncols,
        }
        .run(beta, part, blocks)
    };
    let block = |b: usize, part: &mut [T]| {
        let groups = b * per_block..((b + 1) * per_block).min(sample_groups);
        for (i, sg) in groups.enumerate() {
            let beta = if i == 0 { T::ZERO } else { T::ONE };
            let first = sg * nb;
            let cnt = nb.min(g.batch - first);
            let xs = &x[first * in_len..][..cnt * in_len];
            let gys = &gy[first * out_len..][..cnt * out_len];
            if cnt == 1 && pointwise {
                product(gys, xs, l, beta, part);
                continue;
            }
            scratch.with(|buf| {
                let (cols, side) = buf.split_at_mut(cols_len * cnt);
                im2col_side_by_side(g, xs, (in_len, cnt), cols);
                if cnt == 1 {
                    product(gys, cols, l, beta, part);
                } else {
                    let side = &mut side[..out_len * cnt];
                    side_by_side(gys, side, l, cnt);
                    product(side, cols, cnt * l, beta, part);
                }
            });
        }
    };
    let flops = out_len.saturating_mul(g.batch).saturating_mul(ck);
    let cols = nb.min(g.batch) * l;
    record_conv(
        "conv_weight_grad",
        blocks,
        per_block,
        g.groups,
        (og, cols, ck),
        (1, 1),
    );
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
        im2col(g, &x[n * in_len..(n + 1) * in_len], cols, g.l())
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
        col2im(g, &cols[n * cols_len..(n + 1) * cols_len], x, g.l())
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

    /// Calls `f(n, x_index, w_index, y_index)` for every multiply-add of the convolution
    /// `g` read off its definition (one output position, one input channel of its group,
    /// one kernel offset at a time), skipping padding.
    fn for_each_term(g: &ConvGeometry, mut f: impl FnMut(usize, usize, usize)) {
        let (cg, og) = (g.in_channels / g.groups, g.out_channels / g.groups);
        let [od, oh, ow] = g.output;
        let [kd, kh, kw] = g.kernel;
        let in_pos = |o: [usize; 3], k: [usize; 3]| -> Option<usize> {
            let mut index = 0;
            for d in 0..3 {
                let i =
                    (o[d] * g.stride[d] + k[d] * g.dilation[d]) as isize - g.padding[d] as isize;
                if !(0..g.input[d] as isize).contains(&i) {
                    return None;
                }
                index = index * g.input[d] + i as usize;
            }
            Some(index)
        };
        let in_sp: usize = g.input.iter().product();
        for n in 0..g.batch {
            for oc in 0..g.out_channels {
                let grp = oc / og;
                for ci in 0..cg {
                    let c = grp * cg + ci;
                    for k in 0..kd * kh * kw {
                        let ko = [k / (kh * kw), k / kw % kh, k % kw];
                        for o in 0..od * oh * ow {
                            let op = [o / (oh * ow), o / ow % oh, o % ow];
                            if let Some(i) = in_pos(op, ko) {
                                let xi = (n * g.in_channels + c) * in_sp + i;
                                let wi = (oc * cg + ci) * kd * kh * kw + k;
                                let yi = (n * g.out_channels + oc) * g.l() + o;
                                f(xi, wi, yi);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Small integers (exact in f32 and f64 sums of these sizes), so that any order of
    /// summation gives the same bits.
    fn ints(len: usize, seed: usize) -> Vec<f64> {
        (0..len)
            .map(|i| ((i * 7 + seed * 13) % 11) as f64 - 5.0)
            .collect()
    }

    /// Geometries with small output sizes (where samples are batched): 1-D, 2-D and 3-D,
    /// groups, stride, dilation, asymmetric padding, pointwise, one output position.
    fn small_geometries() -> Vec<ConvGeometry> {
        let base = ConvGeometry {
            batch: 5,
            in_channels: 4,
            out_channels: 6,
            groups: 1,
            input: [1, 1, 7],
            output: [1, 1, 3],
            kernel: [1, 1, 3],
            stride: [1, 1, 2],
            padding: [0, 0, 1],
            dilation: [1, 1, 1],
        };
        vec![
            base.clone(),
            ConvGeometry {
                groups: 2,
                input: [1, 5, 6],
                output: [1, 3, 2],
                kernel: [1, 2, 3],
                stride: [1, 2, 3],
                padding: [0, 1, 2],
                dilation: [1, 2, 1],
                ..base.clone()
            },
            ConvGeometry {
                in_channels: 3,
                out_channels: 2,
                input: [3, 4, 4],
                output: [2, 2, 2],
                kernel: [2, 2, 2],
                stride: [1, 2, 2],
                padding: [0, 0, 0],
                ..base.clone()
            },
            // Pointwise: the input is the column matrix of one sample.
            ConvGeometry {
                input: [1, 2, 2],
                output: [1, 2, 2],
                kernel: [1, 1, 1],
                stride: [1, 1, 1],
                padding: [0, 0, 0],
                ..base.clone()
            },
            // Depthwise, one output position (L = 1).
            ConvGeometry {
                groups: 4,
                out_channels: 8,
                input: [1, 3, 3],
                output: [1, 1, 1],
                kernel: [1, 3, 3],
                stride: [1, 1, 1],
                padding: [0, 0, 0],
                ..base
            },
        ]
    }

    #[test]
    fn batched_maps_match_the_definition_for_every_batching() {
        for g in small_geometries() {
            g.validate().unwrap();
            let (x_len, w_len) = (g.input_len().unwrap() * g.batch, g.weight_len().unwrap());
            let y_len = g.output_len().unwrap() * g.batch;
            let (x, w, gy) = (ints(x_len, 1), ints(w_len, 2), ints(y_len, 3));
            let bias = ints(g.out_channels, 4);
            let (mut y, mut gx, mut gw) = (vec![0.0; y_len], vec![0.0; x_len], vec![0.0; w_len]);
            for_each_term(&g, |xi, wi, yi| {
                y[yi] += x[xi] * w[wi];
                gx[xi] += gy[yi] * w[wi];
                gw[wi] += gy[yi] * x[xi];
            });
            let l = g.l();
            for (i, v) in y.iter_mut().enumerate() {
                *v += bias[i / l % g.out_channels];
            }
            assert!(g.samples_per_gemm().unwrap() > 1, "{g:?} is not batched");
            for nb in 1..=g.batch {
                let what = format!("{g:?} with {nb} samples per GEMM");
                assert_eq!(
                    forward_batched(&g, &x, &w, Some(&bias), nb).unwrap(),
                    y,
                    "{what}"
                );
                assert_eq!(
                    input_adjoint_batched(&g, &gy, &w, nb).unwrap(),
                    gx,
                    "{what}"
                );
                assert_eq!(
                    weight_adjoint_batched(&g, &x, &gy, nb).unwrap(),
                    gw,
                    "{what}"
                );
                let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
                let y32: Vec<f32> = forward_batched(&g, &x32, &w32, None, nb).unwrap();
                let y_no_bias: Vec<f32> = y
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v - bias[i / l % g.out_channels]) as f32)
                    .collect();
                assert_eq!(y32, y_no_bias, "{what}, f32");
            }
            // The public entry points batch as `samples_per_gemm` says.
            assert_eq!(conv_forward(&g, &x, &w, Some(&bias)).unwrap(), y);
            assert_eq!(conv_input_adjoint(&g, &gy, &w).unwrap(), gx);
            assert_eq!(conv_weight_adjoint(&g, &x, &gy).unwrap(), gw);
        }
    }

    #[test]
    fn empty_sizes_batch_without_panicking() {
        let base = ConvGeometry {
            batch: 3,
            in_channels: 2,
            out_channels: 2,
            groups: 1,
            input: [1, 1, 2],
            output: [1, 1, 0],
            kernel: [1, 1, 3],
            stride: [1, 1, 1],
            padding: [0, 0, 0],
            dilation: [1, 1, 1],
        };
        let geometries = [
            base.clone(),
            ConvGeometry {
                out_channels: 0,
                output: [1, 1, 2],
                kernel: [1, 1, 1],
                ..base.clone()
            },
            ConvGeometry {
                in_channels: 0,
                output: [1, 1, 2],
                kernel: [1, 1, 1],
                ..base.clone()
            },
            // An empty input read through padding only.
            ConvGeometry {
                input: [1, 1, 0],
                output: [1, 1, 2],
                kernel: [1, 1, 1],
                padding: [0, 0, 1],
                ..base
            },
        ];
        for g in geometries {
            let (x_len, w_len) = (g.input_len().unwrap() * g.batch, g.weight_len().unwrap());
            let y_len = g.output_len().unwrap() * g.batch;
            let (x, w, gy) = (ints(x_len, 1), ints(w_len, 2), ints(y_len, 3));
            let bias = ints(g.out_channels, 4);
            let l = g.l().max(1);
            let y: Vec<f64> = (0..y_len).map(|i| bias[i / l % g.out_channels]).collect();
            for nb in 1..=g.batch {
                assert_eq!(forward_batched(&g, &x, &w, Some(&bias), nb).unwrap(), y);
                assert_eq!(
                    input_adjoint_batched(&g, &gy, &w, nb).unwrap(),
                    vec![0.0; x_len]
                );
                assert_eq!(
                    weight_adjoint_batched(&g, &x, &gy, nb).unwrap(),
                    vec![0.0; w_len]
                );
            }
        }
    }

    #[test]
    fn batching_agrees_with_the_per_sample_path() {
        // Batching changes the GEMM's shape, and a small GEMM may take another of the
        // `gemm` crate's paths (summing in another order), so batched and per-sample
        // results agree to rounding; the batching follows from the geometry alone, so
        // the thread count never changes it (Note [GEMM plans]).
        let frac = |len: usize, seed: u64| -> Vec<f64> {
            let mut s = seed;
            (0..len)
                .map(|_| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
                })
                .collect()
        };
        for g in small_geometries() {
            let x = frac(g.input_len().unwrap() * g.batch, 1);
            let w = frac(g.weight_len().unwrap(), 2);
            let gy = frac(g.output_len().unwrap() * g.batch, 3);
            let one = forward_batched(&g, &x, &w, None, 1).unwrap();
            let one_adj = input_adjoint_batched(&g, &gy, &w, 1).unwrap();
            let one_w = weight_adjoint_batched(&g, &x, &gy, 1).unwrap();
            for nb in 2..=g.batch {
                let close = |got: Vec<f64>, want: &[f64]| {
                    for (a, b) in got.iter().zip(want) {
                        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
                    }
                };
                close(forward_batched(&g, &x, &w, None, nb).unwrap(), &one);
                close(input_adjoint_batched(&g, &gy, &w, nb).unwrap(), &one_adj);
                close(weight_adjoint_batched(&g, &x, &gy, nb).unwrap(), &one_w);
            }
        }
    }

    #[test]
    fn samples_per_gemm_follows_the_output_size_and_the_budget() {
        let g = |l: usize, channels: usize| ConvGeometry {
            batch: 64,
            in_channels: channels,
            out_channels: 8,
            groups: 1,
            input: [1, 1, l],
            output: [1, 1, l],
            kernel: [1, 1, 1],
            stride: [1, 1, 1],
            padding: [0, 0, 0],
            dilation: [1, 1, 1],
        };
        assert_eq!(g(4, 8).samples_per_gemm().unwrap(), 64);
        assert_eq!(g(16, 8).samples_per_gemm().unwrap(), 16);
        assert_eq!(g(100, 8).samples_per_gemm().unwrap(), 3);
        assert_eq!(g(256, 8).samples_per_gemm().unwrap(), 1);
        assert_eq!(g(4096, 8).samples_per_gemm().unwrap(), 1);
        // 1 << 20 column elements: 2^20 / (2^16 channels * 4) = 4 samples, not 64.
        assert_eq!(g(4, 1 << 16).samples_per_gemm().unwrap(), 4);
        assert_eq!(g(4, 1 << 20).samples_per_gemm().unwrap(), 1);
    }
}
