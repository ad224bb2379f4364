//! Recurrent layers: the time loop of one layer and direction of `nn.RNN`, `nn.LSTM`
//! and `nn.GRU`, forward and backward through time, over packed rows (time-major, the
//! number of active rows `batch_sizes[t]` non-increasing). See Note [Recurrent layers].
//!
//! Forward: one GEMM projects every time step's input (`x_all @ W_ihᵀ + biases`), then
//! per step one GEMM `h @ W_hhᵀ` and the fused gate arithmetic. Backward: per step the
//! gate gradients and one GEMM `dgates @ W_hh` for the previous hidden state; then one
//! GEMM each for `dx`, `dW_ih` and `dW_hh` over all steps (the previous hidden states
//! of every step are kept, so `dW_hh` is a single product), and column sums for the
//! biases. Every loop has a fixed order, the gate arithmetic is split into row blocks
//! whose size depends on the sizes only, and the GEMMs follow the shared plans (Note
//! [GEMM plans]), so results do not depend on the thread count.

use crate::dtype::{DType, Float};
use crate::error::{Error, Result};
use crate::kernels::matmul::{matmul, Gemm, MatOperand};
use crate::kernels::try_vec;
use crate::kernels::vmath::{avx2_variant, sigmoid_f32, tanh_f32};

/// The recurrence of a layer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// `h = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`.
    RnnTanh,
    /// `h = relu(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`.
    RnnRelu,
    /// PyTorch's LSTM (gates i, f, g, o), with an optional projection `W_hr`.
    Lstm,
    /// PyTorch's GRU (gates r, z, n).
    Gru,
}

impl CellKind {
    /// Rows of `W_ih` per hidden unit.
    pub fn gates(self) -> usize {
        match self {
            CellKind::RnnTanh | CellKind::RnnRelu => 1,
            CellKind::Lstm => 4,
            CellKind::Gru => 3,
        }
    }

    /// Columns of the saved gate buffer per hidden unit.
    fn saved_gates(self) -> usize {
        match self {
            CellKind::RnnTanh | CellKind::RnnRelu => 1,
            // i, f, g, o (activated) / r, z, n (activated) and h W_hnᵀ + b_hn.
            CellKind::Lstm | CellKind::Gru => 4,
        }
    }
}

/// The sizes of one layer and direction.
#[derive(Clone, Debug)]
pub struct RnnGeom {
    /// The recurrence.
    pub cell: CellKind,
    /// Input features.
    pub input: usize,
    /// Hidden units.
    pub hidden: usize,
    /// Output (projected) size: `hidden` without a projection.
    pub proj: usize,
    /// Active rows per time step (non-increasing); their sum is the number of rows.
    pub batch_sizes: Vec<usize>,
    /// Whether time runs backwards (the second direction of a bidirectional layer).
    pub reverse: bool,
    /// Whether an LSTM has a projection `W_hr`.
    pub has_proj: bool,
}

impl RnnGeom {
    /// The number of sequences (rows of the initial and final states).
    pub fn batch(&self) -> usize {
        self.batch_sizes.first().copied().unwrap_or(0)
    }

    /// The number of packed rows.
    pub fn rows(&self) -> usize {
        self.batch_sizes.iter().sum()
    }

    /// Checks that the batch sizes do not increase and every size product fits.
    pub fn validate(&self) -> Result<()> {
        if self.batch_sizes.windows(2).any(|w| w[1] > w[0]) {
            return Err(Error::InvalidArgument(
                "rnn: batch_sizes must be non-increasing".into(),
            ));
        }
        let gh = self.cell.saved_gates().checked_mul(self.hidden);
        let rows = self.rows();
        for width in [Some(self.input), gh, Some(self.proj), Some(self.hidden)] {
            width
                .and_then(|w| w.checked_mul(rows.max(1)))
                .and_then(|n| n.checked_mul(16))
                .ok_or(Error::NumelOverflow)?;
        }
        Ok(())
    }

    /// The first packed row of each step.
    fn offsets(&self) -> Vec<usize> {
        let mut acc = 0;
        self.batch_sizes
            .iter()
            .map(|&b| {
                let o = acc;
                acc += b;
                o
            })
            .collect()
    }

    /// The steps in the order the forward visits them.
    fn order(&self) -> Vec<usize> {
        let t = self.batch_sizes.len();
        match self.reverse {
            true => (0..t).rev().collect(),
            false => (0..t).collect(),
        }
    }
}

/// The weights of one layer and direction (row-major, PyTorch's layouts).
pub struct Weights<'a, T> {
    /// `[gates·hidden, input]`.
    pub w_ih: &'a [T],
    /// `[gates·hidden, proj]`.
    pub w_hh: &'a [T],
    /// `[gates·hidden]`.
    pub b_ih: Option<&'a [T]>,
    /// `[gates·hidden]`.
    pub b_hh: Option<&'a [T]>,
    /// `[proj, hidden]` (LSTM with `proj_size`).
    pub w_hr: Option<&'a [T]>,
}

/// What the forward keeps for the backward.
#[derive(Clone, Debug, Default)]
pub struct Workspace<T> {
    /// Per row: the activated gates (`[rows, saved_gates·hidden]`; for the plain RNN
    /// the output itself).
    pub gates: Vec<T>,
    /// Per row: `tanh` of the LSTM cell state after the step (`[rows, hidden]`).
    pub cell: Vec<T>,
    /// Per row: the LSTM cell state before the step.
    pub cell_prev: Vec<T>,
    /// Per row: the LSTM hidden state before the projection.
    pub hidden_raw: Vec<T>,
    /// Per row: the hidden state before the step (`[rows, proj]`).
    pub hidden_prev: Vec<T>,
}

/// The forward's results.
pub struct Forward<T> {
    /// `[rows, proj]`.
    pub output: Vec<T>,
    /// `[batch, proj]`.
    pub h_n: Vec<T>,
    /// `[batch, hidden]` (LSTM; empty otherwise).
    pub c_n: Vec<T>,
    /// Kept for the backward.
    pub ws: Workspace<T>,
}

/// The backward's results (empty vectors for gradients not asked for).
pub struct Backward<T> {
    /// `[rows, input]`.
    pub dx: Vec<T>,
    /// `[batch, proj]`.
    pub dh0: Vec<T>,
    /// `[batch, hidden]`.
    pub dc0: Vec<T>,
    /// `[gates·hidden, input]`.
    pub dw_ih: Vec<T>,
    /// `[gates·hidden, proj]`.
    pub dw_hh: Vec<T>,
    /// `[gates·hidden]`.
    pub db_ih: Vec<T>,
    /// `[gates·hidden]`.
    pub db_hh: Vec<T>,
    /// `[proj, hidden]`.
    pub dw_hr: Vec<T>,
}

/// A strided matrix operand: its elements, row stride and column stride.
type Mat<'a, T> = (&'a [T], usize, usize);

/// `a[m, k] @ b[k, n]` as a new row-major vector, through the engine's `matmul` (its
/// tiling and threading): the one-shot products over all time steps.
fn product<T: Gemm>(
    (m, k, n): (usize, usize, usize),
    a: Mat<'_, T>,
    b: Mat<'_, T>,
) -> Result<Vec<T>> {
    fn operand<T>((data, row_stride, col_stride): Mat<'_, T>) -> MatOperand<'_, T> {
        MatOperand {
            data,
            batch_strides: &[],
            offset: 0,
            row_stride,
            col_stride,
        }
    }
    matmul(&[], (m, k, n), &operand(a), &operand(b))
}

/// `c[m, n] = a[m, k] @ b[k, n] + beta·c` (row stride of `c` is `n`), bounds-checked
/// before the raw GEMM; large products are tiled by the shared 2-D plan.
fn gemm<T: Gemm + Send + Sync>(
    (m, k, n): (usize, usize, usize),
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    beta: T,
    c: &mut [T],
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    let reach = |rows: usize, cols: usize, rs: usize, cs: usize| {
        (rows - 1)
            .checked_mul(rs)
            .and_then(|r| (cols - 1).checked_mul(cs).and_then(|c| c.checked_add(r)))
    };
    let c = c.get_mut(..m * n).ok_or(Error::NumelOverflow)?;
    if k == 0 {
        if beta == T::ZERO {
            c.fill(T::ZERO);
        }
        return Ok(());
    }
    let in_a = reach(m, k, a.1, a.2).is_some_and(|r| r < a.0.len());
    let in_b = reach(k, n, b.1, b.2).is_some_and(|r| r < b.0.len());
    let isz = |s: usize| isize::try_from(s).ok();
    let strides = (isz(a.1), isz(a.2), isz(b.1), isz(b.2), isz(n));
    let (Some(rsa), Some(csa), Some(rsb), Some(csb), Some(rsc)) = strides else {
        return Err(Error::NumelOverflow);
    };
    if !in_a || !in_b {
        return Err(Error::NotImplemented(
            "rustgrad internal error: rnn GEMM operand out of bounds".into(),
        ));
    }
    // SAFETY: `a` reaches `(m-1)·rsa + (k-1)·csa < a.len()` and `b` reaches
    // `(k-1)·rsb + (n-1)·csb < b.len()` (checked above); `c` holds `m·n` elements with
    // row stride `n`. The 2-D tile plan gives the same bits for any thread count
    // (Note [GEMM plans]).
    unsafe {
        crate::kernels::matmul::gemm_parallel(
            "rnn",
            (m, k, n),
            a.0.as_ptr(),
            (rsa, csa),
            b.0.as_ptr(),
            (rsb, csb),
            beta,
            c.as_mut_ptr(),
            rsc,
        )
    };
    Ok(())
}

/// Hidden units a task of a step's gate arithmetic takes at least: each costs several
/// transcendental functions (~10-40 ns), so a task of 2048 is ~20-80 µs, well above a
/// job's hand-off to the pool (6-17 µs, Note [Parallel thresholds]). Rows per task are
/// a function of the sizes only, and each row's arithmetic is the same whichever task
/// runs it.
const GATE_TASK_UNITS: usize = 2048;

/// Rows of `h` hidden units per gate-arithmetic task.
fn rows_per_task(h: usize) -> usize {
    (GATE_TASK_UNITS / h.max(1)).max(1)
}

/// The gates' logistic sigmoid: float32 through the branch-free `vmath::sigmoid_f32`
/// (so a row's loop vectorises), float64 through its own.
#[inline(always)]
fn sigmoid<T: Float>(x: T) -> T {
    if T::DTYPE == DType::F32 {
        T::from_f64(f64::from(sigmoid_f32(x.to_f64() as f32)))
    } else {
        x.sigmoid()
    }
}

/// The gates' `tanh`: float32 through the branch-free `vmath::tanh_f32`, float64
/// through its own.
#[inline(always)]
fn tanh<T: Float>(x: T) -> T {
    if T::DTYPE == DType::F32 {
        T::from_f64(f64::from(tanh_f32(x.to_f64() as f32)))
    } else {
        x.tanh()
    }
}

/// The first `h` elements of each of the `N` consecutive blocks of `h` in `v`.
#[inline(always)]
fn blocks<T, const N: usize>(v: &[T], h: usize) -> [&[T]; N] {
    std::array::from_fn(|i| &v[i * h..(i + 1) * h])
}

/// One row of an LSTM step: from the input part `xr` and recurrent part `hr` of the
/// gate pre-activations (`[i, f, g, o]`, `h` each), the saved gates `gr`, the cell
/// state `cr` (previous in, new out), `tanh` of it, and the hidden output.
#[inline(always)]
fn lstm_row_any<T: Float>(
    xr: &[T],
    hr: &[T],
    gr: &mut [T],
    cr: &mut [T],
    tcr: &mut [T],
    out_h: &mut [T],
) {
    let h = cr.len();
    let [xi, xf, xg, xo] = blocks::<T, 4>(xr, h);
    let [hi, hf, hgg, ho] = blocks::<T, 4>(hr, h);
    let (gi, rest) = gr.split_at_mut(h);
    let (gf, rest) = rest.split_at_mut(h);
    let (gg_, go) = rest.split_at_mut(h);
    let (go, tcr, out_h) = (&mut go[..h], &mut tcr[..h], &mut out_h[..h]);
    for j in 0..h {
        let ig = sigmoid(xi[j] + hi[j]);
        let fg = sigmoid(xf[j] + hf[j]);
        let gg = tanh(xg[j] + hgg[j]);
        let og = sigmoid(xo[j] + ho[j]);
        let c = fg * cr[j] + ig * gg;
        cr[j] = c;
        let tc = tanh(c);
        tcr[j] = tc;
        out_h[j] = og * tc;
        gi[j] = ig;
        gf[j] = fg;
        gg_[j] = gg;
        go[j] = og;
    }
}

avx2_variant!(fn lstm_row<T>(xr: &[T], hr: &[T], gr: &mut [T], cr: &mut [T], tcr: &mut [T], out_h: &mut [T]) = lstm_row_any);

/// One row of a GRU step: from the pre-activations `xr` and `hr` (`[r, z, n]`, `h`
/// each) and `b_hn` (the recurrent bias of `n`, zeros when absent), the saved gates
/// `gr` (`[r, z, n, h_n]`) and the hidden state `hs` (previous in, new out).
#[inline(always)]
fn gru_row_any<T: Float>(xr: &[T], hr: &[T], b_hn: &[T], gr: &mut [T], hs: &mut [T]) {
    let h = b_hn.len();
    let [xrg, xz, xn] = blocks::<T, 3>(xr, h);
    let [hrg, hz, hng] = blocks::<T, 3>(hr, h);
    let (gr_, rest) = gr.split_at_mut(h);
    let (gz, rest) = rest.split_at_mut(h);
    let (gn, ghn) = rest.split_at_mut(h);
    let (ghn, hs) = (&mut ghn[..h], &mut hs[..h]);
    for j in 0..h {
        let rg = sigmoid(xrg[j] + hrg[j]);
        let zg = sigmoid(xz[j] + hz[j]);
        let hn = hng[j] + b_hn[j];
        let ng = tanh(xn[j] + rg * hn);
        let prev = hs[j];
        hs[j] = (T::ONE - zg) * ng + zg * prev;
        gr_[j] = rg;
        gz[j] = zg;
        gn[j] = ng;
        ghn[j] = hn;
    }
}

avx2_variant!(fn gru_row<T>(xr: &[T], hr: &[T], b_hn: &[T], gr: &mut [T], hs: &mut [T]) = gru_row_any);

/// An Elman step's `y = tanh(x + h)` (or `relu`) into both the saved gates and the
/// hidden state.
#[inline(always)]
fn elman_rows_any<T: Float>(xs: &[T], hs: &[T], relu: bool, gs: &mut [T], state: &mut [T]) {
    for (((o, &xv), &hv), s) in gs.iter_mut().zip(xs).zip(hs).zip(state) {
        let a = xv + hv;
        let y = if relu {
            if a > T::ZERO {
                a
            } else {
                T::ZERO
            }
        } else {
            tanh(a)
        };
        *o = y;
        *s = y;
    }
}

avx2_variant!(fn elman_rows<T>(xs: &[T], hs: &[T], relu: bool, gs: &mut [T], state: &mut [T]) = elman_rows_any);

/// Runs `f` on every part (disjoint row blocks of a step's buffers, built by the
/// caller), concurrently on the engine's pool when there are several.
fn par_parts<A: Send>(parts: Vec<A>, f: impl Fn(A) + Sync + Send) {
    if parts.len() <= 1 {
        parts.into_iter().for_each(f);
        return;
    }
    let cells: Vec<std::sync::Mutex<Option<A>>> = parts
        .into_iter()
        .map(|p| std::sync::Mutex::new(Some(p)))
        .collect();
    crate::parallel::for_each_task(cells.len(), |i| {
        let part = cells[i].lock().ok().and_then(|mut c| c.take());
        if let Some(part) = part {
            f(part);
        }
    });
}

/// `out[j] = Σ_r m[r, j]` over `rows` rows of width `w`, in row order.
/// Columns are summed in blocks of [`SUM_COLUMNS`] on the pool; each column's sum runs
/// over the rows in order whichever task takes it, so the bits never depend on the
/// thread count.
fn column_sums<T: Float + Send + Sync>(m: &[T], rows: usize, w: usize) -> Result<Vec<T>> {
    let mut out = try_vec(w, T::ZERO)?;
    let rows = rows.min(m.len() / w.max(1));
    let sum_block = |c: usize, block: &mut [T]| {
        let from = c * SUM_COLUMNS;
        for row in m.chunks_exact(w).take(rows) {
            for (o, &v) in block.iter_mut().zip(&row[from..]) {
                *o += v;
            }
        }
    };
    if rows.saturating_mul(w) < crate::parallel::PARALLEL_MIN_ELEMENTS {
        out.chunks_mut(SUM_COLUMNS)
            .enumerate()
            .for_each(|(c, b)| sum_block(c, b));
    } else {
        crate::parallel::for_each_chunk_mut(&mut out, SUM_COLUMNS, sum_block);
    }
    Ok(out)
}

/// Columns per task of [`column_sums`] (and rows' worth of bias per task of
/// [`add_bias_rows`]).
const SUM_COLUMNS: usize = 128;

/// `m[r, :] += bias` for every row of width `bias.len()`, in row blocks on the pool.
fn add_bias_rows<T: Float + Send + Sync>(m: &mut [T], bias: &[T]) {
    let w = bias.len().max(1);
    let add = |_: usize, rows: &mut [T]| {
        for row in rows.chunks_exact_mut(w) {
            for (o, &b) in row.iter_mut().zip(bias) {
                *o += b;
            }
        }
    };
    if m.len() < crate::parallel::PARALLEL_MIN_ELEMENTS {
        add(0, m);
    } else {
        crate::parallel::for_each_chunk_mut(m, SUM_COLUMNS * w, add);
    }
}

fn check_len<T>(what: &str, s: &[T], n: usize) -> Result<()> {
    match s.len() == n {
        true => Ok(()),
        false => Err(Error::NotImplemented(format!(
            "rustgrad internal error: rnn {what} has {} elements, expected {n}",
            s.len()
        ))),
    }
}

/// Runs one layer and direction over the packed rows `x` (`[rows, input]`) from the
/// initial states `h0` (`[batch, proj]`) and `c0` (`[batch, hidden]`, LSTM).
pub fn forward<T: Gemm + Float + Send + Sync>(
    g: &RnnGeom,
    x: &[T],
    h0: &[T],
    c0: &[T],
    w: &Weights<'_, T>,
) -> Result<Forward<T>> {
    // The time loop's many small parallel jobs run from inside the pool
    // (`parallel::install`).
    crate::parallel::install(|| forward_in_pool(g, x, h0, c0, w))
}

/// [`forward`] on the pool.
fn forward_in_pool<T: Gemm + Float + Send + Sync>(
    g: &RnnGeom,
    x: &[T],
    h0: &[T],
    c0: &[T],
    w: &Weights<'_, T>,
) -> Result<Forward<T>> {
    g.validate()?;
    let (i_sz, h, p, b) = (g.input, g.hidden, g.proj, g.batch());
    let rows = g.rows();
    let gates = g.cell.gates();
    let gh = gates * h;
    let lstm = g.cell == CellKind::Lstm;
    check_len("input", x, rows * i_sz)?;
    check_len("h0", h0, b * p)?;
    check_len("w_ih", w.w_ih, gh * i_sz)?;
    check_len("w_hh", w.w_hh, gh * p)?;
    if lstm {
        check_len("c0", c0, b * h)?;
    }
    for bias in [w.b_ih, w.b_hh].into_iter().flatten() {
        check_len("bias", bias, gh)?;
    }
    if g.has_proj {
        check_len("w_hr", w.w_hr.unwrap_or(&[]), p * h)?;
    } else if p != h {
        return Err(Error::NotImplemented(
            "rustgrad internal error: rnn proj without w_hr".into(),
        ));
    }
    // The input projection of every step, biases folded in (except GRU's b_hn, which
    // sits inside the reset gate's product).
    let mut xw = product((rows, i_sz, gh), (x, i_sz, 1), (w.w_ih, 1, i_sz))?;
    let mut bias = vec![T::ZERO; gh];
    if let Some(bi) = w.b_ih {
        bias.copy_from_slice(bi);
    }
    if let Some(bh) = w.b_hh {
        let folded = if g.cell == CellKind::Gru { 2 * h } else { gh };
        for (o, &v) in bias.iter_mut().zip(bh).take(folded) {
            *o += v;
        }
    }
    if gh > 0 && (w.b_ih.is_some() || w.b_hh.is_some()) {
        add_bias_rows(&mut xw, &bias);
    }

    let sg = g.cell.saved_gates() * h;
    let mut ws = Workspace {
        gates: try_vec(rows * sg, T::ZERO)?,
        hidden_prev: try_vec(rows * p, T::ZERO)?,
        ..Workspace::default()
    };
    if lstm {
        ws.cell = try_vec(rows * h, T::ZERO)?;
        ws.cell_prev = try_vec(rows * h, T::ZERO)?;
        if g.has_proj {
            ws.hidden_raw = try_vec(rows * h, T::ZERO)?;
        }
    }
    let mut output = try_vec(rows * p, T::ZERO)?;
    let mut h_state = h0.to_vec();
    let mut c_state = if lstm { c0.to_vec() } else { Vec::new() };
    let mut hg = try_vec(b * gh, T::ZERO)?;
    let mut raw = try_vec(b * h, T::ZERO)?;
    // W_hhᵀ row-major ([proj, gates·hidden]): the per-step GEMM reads it in place.
    let mut whh_t = try_vec(gh * p, T::ZERO)?;
    for (i, row) in w.w_hh.chunks_exact(p.max(1)).enumerate().take(gh) {
        for (k, &v) in row.iter().enumerate() {
            whh_t[k * gh + i] = v;
        }
    }
    let offsets = g.offsets();
    let zero = T::ZERO;
    // GRU's `b_hn` when the layer has no biases.
    let zeros = match (g.cell, w.b_hh) {
        (CellKind::Gru, None) => try_vec(h, zero)?,
        _ => Vec::new(),
    };
    for t in g.order() {
        let (off, bs) = (offsets[t], g.batch_sizes[t]);
        if bs == 0 {
            continue;
        }
        ws.hidden_prev[off * p..(off + bs) * p].copy_from_slice(&h_state[..bs * p]);
        // hg = h_prev @ W_hhᵀ.
        gemm(
            (bs, p, gh),
            (&h_state[..bs * p], p, 1),
            (&whh_t, gh, 1),
            zero,
            &mut hg[..bs * gh],
        )?;
        let xrows = &xw[off * gh..(off + bs) * gh];
        let grows = &mut ws.gates[off * sg..(off + bs) * sg];
        match g.cell {
            CellKind::RnnTanh | CellKind::RnnRelu => {
                let relu = g.cell == CellKind::RnnRelu;
                let n = rows_per_task(h) * h;
                let parts: Vec<_> = grows
                    .chunks_mut(n)
                    .zip(h_state[..bs * p].chunks_mut(n))
                    .enumerate()
                    .collect();
                let hg = &hg[..bs * gh];
                par_parts(parts, |(i, (gs, hs))| {
                    elman_rows(&xrows[i * n..], &hg[i * n..], relu, gs, hs);
                });
            }
            CellKind::Lstm => {
                ws.cell_prev[off * h..(off + bs) * h].copy_from_slice(&c_state[..bs * h]);
                let tanh_c = &mut ws.cell[off * h..(off + bs) * h];
                let rpt = rows_per_task(h);
                let parts: Vec<_> = grows
                    .chunks_mut(rpt * sg)
                    .zip(c_state[..bs * h].chunks_mut(rpt * h))
                    .zip(tanh_c.chunks_mut(rpt * h))
                    .zip(raw[..bs * h].chunks_mut(rpt * h))
                    .enumerate()
                    .collect();
                let hg = &hg[..bs * gh];
                par_parts(parts, |(i, (((gs, cs), tcs), outs))| {
                    let rows = gs.chunks_mut(sg).zip(cs.chunks_mut(h));
                    let rows = rows.zip(tcs.chunks_mut(h)).zip(outs.chunks_mut(h));
                    for (r, (((gr, cr), tcr), out_h)) in rows.enumerate() {
                        let row = i * rpt + r;
                        let xr = &xrows[row * gh..(row + 1) * gh];
                        let hr = &hg[row * gh..(row + 1) * gh];
                        lstm_row(xr, hr, gr, cr, tcr, out_h);
                    }
                });
                if g.has_proj {
                    ws.hidden_raw[off * h..(off + bs) * h].copy_from_slice(&raw[..bs * h]);
                    let w_hr = w.w_hr.unwrap_or(&[]);
                    gemm(
                        (bs, h, p),
                        (&raw[..bs * h], h, 1),
                        (w_hr, 1, h),
                        zero,
                        &mut h_state[..bs * p],
                    )?;
                } else {
                    h_state[..bs * h].copy_from_slice(&raw[..bs * h]);
                }
            }
            CellKind::Gru => {
                let b_hn = match w.b_hh {
                    Some(bh) => &bh[2 * h..3 * h],
                    None => &zeros[..],
                };
                let rpt = rows_per_task(h);
                let parts: Vec<_> = grows
                    .chunks_mut(rpt * sg)
                    .zip(h_state[..bs * p].chunks_mut(rpt * p))
                    .enumerate()
                    .collect();
                let hg = &hg[..bs * gh];
                par_parts(parts, |(i, (gs, hss))| {
                    for (r, (gr, hs)) in gs.chunks_mut(sg).zip(hss.chunks_mut(p)).enumerate() {
                        let row = i * rpt + r;
                        let xr = &xrows[row * gh..(row + 1) * gh];
                        let hr = &hg[row * gh..(row + 1) * gh];
                        gru_row(xr, hr, b_hn, gr, hs);
                    }
                });
            }
        }
        output[off * p..(off + bs) * p].copy_from_slice(&h_state[..bs * p]);
    }
    Ok(Forward {
        output,
        h_n: h_state,
        c_n: c_state,
        ws,
    })
}

/// Which gradients the backward computes.
#[derive(Copy, Clone, Debug, Default)]
pub struct Wants {
    /// The input's.
    pub x: bool,
    /// The weights' and biases'.
    pub weights: bool,
}

/// The backward of [`forward`] given the gradients of the output (`[rows, proj]`), of
/// `h_n` and of `c_n` (empty slices for zero gradients).
#[allow(clippy::too_many_arguments)]
pub fn backward<T: Gemm + Float + Send + Sync>(
    g: &RnnGeom,
    x: &[T],
    w: &Weights<'_, T>,
    ws: &Workspace<T>,
    d_out: &[T],
    d_hn: &[T],
    d_cn: &[T],
    want: Wants,
) -> Result<Backward<T>> {
    // As `forward`: the time loop runs from inside the pool.
    crate::parallel::install(|| backward_in_pool(g, x, w, ws, d_out, d_hn, d_cn, want))
}

/// [`backward`] on the pool.
#[allow(clippy::too_many_arguments)]
fn backward_in_pool<T: Gemm + Float + Send + Sync>(
    g: &RnnGeom,
    x: &[T],
    w: &Weights<'_, T>,
    ws: &Workspace<T>,
    d_out: &[T],
    d_hn: &[T],
    d_cn: &[T],
    want: Wants,
) -> Result<Backward<T>> {
    g.validate()?;
    let (i_sz, h, p, b) = (g.input, g.hidden, g.proj, g.batch());
    let rows = g.rows();
    let gh = g.cell.gates() * h;
    let sg = g.cell.saved_gates() * h;
    let lstm = g.cell == CellKind::Lstm;
    let gru = g.cell == CellKind::Gru;
    check_len("input", x, rows * i_sz)?;
    check_len("gates", &ws.gates, rows * sg)?;
    check_len("hidden_prev", &ws.hidden_prev, rows * p)?;
    if !d_out.is_empty() {
        check_len("grad output", d_out, rows * p)?;
    }
    if lstm {
        check_len("cell", &ws.cell, rows * h)?;
        check_len("cell_prev", &ws.cell_prev, rows * h)?;
    }
    if g.has_proj {
        check_len("hidden_raw", &ws.hidden_raw, rows * h)?;
    }
    let mut dh_state = match d_hn.is_empty() {
        true => try_vec(b * p, T::ZERO)?,
        false => {
            check_len("grad h_n", d_hn, b * p)?;
            d_hn.to_vec()
        }
    };
    let mut dc_state = match (lstm, d_cn.is_empty()) {
        (false, _) => Vec::new(),
        (true, true) => try_vec(b * h, T::ZERO)?,
        (true, false) => {
            check_len("grad c_n", d_cn, b * h)?;
            d_cn.to_vec()
        }
    };
    let mut dgx = try_vec(rows * gh, T::ZERO)?;
    let mut dgh = if gru {
        try_vec(rows * gh, T::ZERO)?
    } else {
        Vec::new()
    };
    let mut dproj = if g.has_proj {
        try_vec(rows * p, T::ZERO)?
    } else {
        Vec::new()
    };
    let mut dh = try_vec(b * p, T::ZERO)?;
    let mut dhr = try_vec(b * h, T::ZERO)?;
    let offsets = g.offsets();
    let (one, zero) = (T::ONE, T::ZERO);
    let w_hr = w.w_hr.unwrap_or(&[]);
    for &t in g.order().iter().rev() {
        let (off, bs) = (offsets[t], g.batch_sizes[t]);
        if bs == 0 {
            continue;
        }
        let dh = &mut dh[..bs * p];
        dh.copy_from_slice(&dh_state[..bs * p]);
        if !d_out.is_empty() {
            for (d, &o) in dh.iter_mut().zip(&d_out[off * p..(off + bs) * p]) {
                *d += o;
            }
        }
        let grows = &ws.gates[off * sg..(off + bs) * sg];
        let dg = &mut dgx[off * gh..(off + bs) * gh];
        match g.cell {
            CellKind::RnnTanh | CellKind::RnnRelu => {
                let relu = g.cell == CellKind::RnnRelu;
                let n = rows_per_task(h) * h;
                let dh = &*dh;
                par_parts(dg.chunks_mut(n).enumerate().collect(), |(i, ds)| {
                    let (ys, dys) = (&grows[i * n..], &dh[i * n..]);
                    for ((d, &y), &dy) in ds.iter_mut().zip(ys).zip(dys) {
                        *d = if relu {
                            if y > zero {
                                dy
                            } else {
                                zero
                            }
                        } else {
                            dy * (one - y * y)
                        };
                    }
                });
                let (dg, w_hh) = (&*dg, (w.w_hh, p, 1));
                gemm(
                    (bs, gh, p),
                    (dg, gh, 1),
                    w_hh,
                    zero,
                    &mut dh_state[..bs * p],
                )?;
            }
            CellKind::Lstm => {
                let dhr = &mut dhr[..bs * h];
                if g.has_proj {
                    dproj[off * p..(off + bs) * p].copy_from_slice(dh);
                    gemm((bs, p, h), (dh, p, 1), (w_hr, h, 1), zero, dhr)?;
                } else {
                    dhr.copy_from_slice(dh);
                }
                let cs = &ws.cell[off * h..(off + bs) * h];
                let cps = &ws.cell_prev[off * h..(off + bs) * h];
                let rpt = rows_per_task(h);
                let parts: Vec<_> = dg
                    .chunks_mut(rpt * gh)
                    .zip(dc_state[..bs * h].chunks_mut(rpt * h))
                    .enumerate()
                    .collect();
                let dhr = &*dhr;
                par_parts(parts, |(i, (dgs, dcs))| {
                    for (r, (dgr, dcr)) in dgs.chunks_mut(gh).zip(dcs.chunks_mut(h)).enumerate() {
                        let row = i * rpt + r;
                        let gr = &grows[row * sg..(row + 1) * sg];
                        let (tcs, cps) = (&cs[row * h..], &cps[row * h..]);
                        let dhvs = &dhr[row * h..];
                        for j in 0..h {
                            let (ig, fg) = (gr[j], gr[h + j]);
                            let (gg, og) = (gr[2 * h + j], gr[3 * h + j]);
                            let tc = tcs[j];
                            let dhv = dhvs[j];
                            let dc = dcr[j] + dhv * og * (one - tc * tc);
                            dgr[j] = dc * gg * ig * (one - ig);
                            dgr[h + j] = dc * cps[j] * fg * (one - fg);
                            dgr[2 * h + j] = dc * ig * (one - gg * gg);
                            dgr[3 * h + j] = dhv * tc * og * (one - og);
                            dcr[j] = dc * fg;
                        }
                    }
                });
                let (dg, w_hh) = (&*dg, (w.w_hh, p, 1));
                gemm(
                    (bs, gh, p),
                    (dg, gh, 1),
                    w_hh,
                    zero,
                    &mut dh_state[..bs * p],
                )?;
            }
            CellKind::Gru => {
                let hp = &ws.hidden_prev[off * p..(off + bs) * p];
                let dgr_h = &mut dgh[off * gh..(off + bs) * gh];
                let rpt = rows_per_task(h);
                let parts: Vec<_> = dg
                    .chunks_mut(rpt * gh)
                    .zip(dgr_h.chunks_mut(rpt * gh))
                    .zip(dh_state[..bs * p].chunks_mut(rpt * p))
                    .enumerate()
                    .collect();
                let dh = &*dh;
                par_parts(parts, |(i, ((dxs, dhs), dss))| {
                    let rows = dxs.chunks_mut(gh).zip(dhs.chunks_mut(gh));
                    for (r, ((dxr, dhr_), ds)) in rows.zip(dss.chunks_mut(p)).enumerate() {
                        let row = i * rpt + r;
                        let gr = &grows[row * sg..(row + 1) * sg];
                        let (dys, hps) = (&dh[row * p..], &hp[row * p..]);
                        for j in 0..h {
                            let (rg, zg) = (gr[j], gr[h + j]);
                            let (ng, hn) = (gr[2 * h + j], gr[3 * h + j]);
                            let dy = dys[j];
                            let dn = dy * (one - zg);
                            let dz = dy * (hps[j] - ng);
                            let dan = dn * (one - ng * ng);
                            let dar = dan * hn * rg * (one - rg);
                            let daz = dz * zg * (one - zg);
                            dxr[j] = dar;
                            dxr[h + j] = daz;
                            dxr[2 * h + j] = dan;
                            dhr_[j] = dar;
                            dhr_[h + j] = daz;
                            dhr_[2 * h + j] = dan * rg;
                            ds[j] = dy * zg;
                        }
                    }
                });
                let (dgr_h, w_hh) = (&*dgr_h, (w.w_hh, p, 1));
                gemm(
                    (bs, gh, p),
                    (dgr_h, gh, 1),
                    w_hh,
                    one,
                    &mut dh_state[..bs * p],
                )?;
            }
        }
    }
    let dgh_all: &[T] = if gru { &dgh } else { &dgx };
    let mut out = Backward {
        dx: Vec::new(),
        dh0: dh_state,
        dc0: dc_state,
        dw_ih: Vec::new(),
        dw_hh: Vec::new(),
        db_ih: Vec::new(),
        db_hh: Vec::new(),
        dw_hr: Vec::new(),
    };
    if want.x {
        out.dx = product((rows, gh, i_sz), (&dgx, gh, 1), (w.w_ih, i_sz, 1))?;
    }
    if want.weights {
        out.dw_ih = product((gh, rows, i_sz), (&dgx, 1, gh), (x, i_sz, 1))?;
        out.dw_hh = product((gh, rows, p), (dgh_all, 1, gh), (&ws.hidden_prev, p, 1))?;
        out.db_ih = column_sums(&dgx, rows, gh)?;
        out.db_hh = if gru {
            column_sums(&dgh, rows, gh)?
        } else {
            out.db_ih.clone()
        };
        if g.has_proj {
            out.dw_hr = product((p, rows, h), (&dproj, 1, p), (&ws.hidden_raw, h, 1))?;
        }
    }
    Ok(out)
}
