//! Batched matrix multiply on strided operands through the `gemm` crate's SIMD
//! micro-kernels (AVX-512, AVX2+FMA or portable, chosen at run time), split into a 2-D
//! grid of output tiles (plus the batch) sized from the shape and the thread count.
//! See Note [GEMM plans]: every output element is the same sequence of operations for
//! any tiling, so the thread count changes speed, never bits.

use super::{for_each_strided, try_vec, try_with_capacity};
use crate::error::{Error, Result};
use crate::parallel;

/// Inner-dimension block of one micro-kernel pass. [`Gemm::gemm`] splits `k` into
/// equal blocks of at most this many (a function of `k` only, [`k_block`]), each one
/// call of the `gemm` crate, accumulated in order. Within one call the crate blocks
/// `k` itself by a size that depends on the tile's `m` and `n` (`min(k, 512)` for
/// tiles of at most 64 x 64, a cache-derived size of at least 512 otherwise); with
/// `k <= 256` both are `k`, so a tile's shape cannot change the order of the sum.
/// 256 rather than 512 gives small outputs with a long reduction (the fc layer's
/// 16 x 512 x 1000 GEMMs) blocks to split over (Note [GEMM plans]); single-thread
/// GFLOP/s of the shapes in `examples/gemm_kernels.rs` are the same for both within
/// noise (2048^3: 103.2/103.8 vs 101.7/103.0; 64 x 576 x 3136: 96.2/103.0 vs
/// 102.4/99.0, Zen 4, alternating runs).
const KC: usize = 256;

/// The `part`-th of the `k.div_ceil(KC)` equal blocks [`Gemm::gemm`] sums `0..k` in
/// (there are exactly that many: each but the last has `k.div_ceil(blocks)` elements).
pub fn k_block(k: usize, part: usize) -> std::ops::Range<usize> {
    let blocks = k_blocks(k);
    let kb = k.div_ceil(blocks);
    (part * kb).min(k)..((part + 1) * kb).min(k)
}

/// How many blocks [`Gemm::gemm`] sums `0..k` in (1 for `k <= KC`).
pub fn k_blocks(k: usize) -> usize {
    k.div_ceil(KC).max(1)
}

/// Multiply-adds one GEMM task should have at least: below it the hand-off of a task
/// within a running job and the re-packing of the task's operand panels cost more than
/// the split gains. At the ~100 GFLOP/s one Zen 4 core reaches
/// (`examples/gemm_kernels.rs`) a task of 2^16 multiply-adds is ~1.3 µs of
/// arithmetic, several times a rayon steal within a job.
pub const MIN_TASK_WORK: usize = 1 << 16;

/// Multiply-adds a GEMM needs before it is split at all: handing a whole parallel job
/// to the pool costs 6-17 µs (Note [Parallel thresholds]), so a job is only formed from
/// a product of at least 2^18 multiply-adds (~5 µs of arithmetic), and then has at most
/// [`TASKS_PER_THREAD`] tasks per thread.
pub const MIN_PARALLEL_WORK: usize = 1 << 18;

/// Output elements a K-split's partial sums may take ([`GemmPlan::with_k_split`]):
/// it is for small outputs with long reductions, whose partials are small.
const K_SPLIT_MAX_PARTIALS: usize = 1 << 20;

/// Tasks per pool thread a large GEMM is split into: several per thread, so that
/// threads finishing early take more work (rayon steals).
pub const TASKS_PER_THREAD: usize = 4;

/// Smallest tile side when a dimension is split (the tiles of a dimension differ by at
/// most one), so that the `gemm` crate never takes its vector paths for a tile unless
/// the whole matrix does: those sum in another order.
const MIN_TILE: usize = 16;

/// The `gemm` crate sums outputs of at most this many elements in another order (its
/// horizontal micro-kernels): a split never makes a tile that small.
const SMALL_MATRIX: usize = 256;

/// Float types with a GEMM kernel (the `gemm` crate's), shared by `matmul`, the
/// convolutions and the fused sequence kernels.
pub trait Gemm: crate::dtype::Float {
    /// `c = a @ b + beta * c` for strided `a` (`m x k`), `b` (`k x n`) and `c` (`m x n`,
    /// row stride `rsc`, column stride 1), on the calling thread. With `beta == 0`, `c`
    /// is only written. Each element is the sum over `k` in blocks of at most `KC` (256), so the
    /// result does not depend on how a caller tiles `m` and `n`.
    ///
    /// # Safety
    /// `a` and `b` must be valid for reads at every index their strides reach for the
    /// given sizes, and `c` valid for reads and writes at every index its row stride
    /// reaches, not aliased by `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        beta: Self,
        c: *mut Self,
        rsc: isize,
    ) {
        if m == 0 || n == 0 {
            return;
        }
        for part in 0..k_blocks(k) {
            let block = k_block(k, part);
            let first = part == 0;
            let read_c = !first || beta != Self::ZERO;
            // SAFETY: the caller's contract covers every index of `a` (rows `..m`,
            // columns `..k`), `b` (rows `..k`, columns `..n`) and `c`; this block
            // reads columns `block` of `a` and rows `block` of `b`.
            unsafe {
                Self::gemm_block(
                    (m, block.len(), n),
                    a.wrapping_offset(block.start as isize * csa),
                    (rsa, csa),
                    b.wrapping_offset(block.start as isize * rsb),
                    (rsb, csb),
                    (read_c, if first { beta } else { Self::ONE }),
                    c,
                    rsc,
                )
            };
        }
    }

    /// One call of the `gemm` crate: `c = a @ b + alpha * c` (`c` read only when
    /// `read_c`), single-threaded.
    ///
    /// # Safety
    /// As [`Gemm::gemm`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_block(
        mkn: (usize, usize, usize),
        a: *const Self,
        a_strides: (isize, isize),
        b: *const Self,
        b_strides: (isize, isize),
        read_alpha: (bool, Self),
        c: *mut Self,
        rsc: isize,
    );
}

macro_rules! impl_gemm {
    ($t:ty) => {
        impl Gemm for $t {
            unsafe fn gemm_block(
                (m, k, n): (usize, usize, usize),
                a: *const Self,
                (rsa, csa): (isize, isize),
                b: *const Self,
                (rsb, csb): (isize, isize),
                (read_c, alpha): (bool, Self),
                c: *mut Self,
                rsc: isize,
            ) {
                // SAFETY: the caller guarantees (this function's contract) that `a`, `b`
                // and `c` are valid for every index these sizes and strides reach, which
                // is the `gemm` crate's contract. It computes `c = alpha * c + 1 * a @ b`
                // (reading `c` only when `read_c`).
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        c,
                        1,
                        rsc,
                        read_c,
                        a,
                        csa,
                        rsa,
                        b,
                        csb,
                        rsb,
                        alpha,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    )
                }
            }
        }
    };
}
impl_gemm!(f32);
impl_gemm!(f64);

/// How one (batched) GEMM is split into tasks: groups of `batch_per_task` batch
/// entries, within each matrix an `m_tiles x n_tiles` grid of output tiles whose sides
/// differ by at most one, and for a single matrix whose tiles alone are too few, each
/// tile's `k` blocks ([`k_block`]) as `k_parts` separate tasks whose partial sums are
/// added in block order afterwards: the sequence [`Gemm::gemm`] computes on one
/// thread, so every plan gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmPlan {
    /// Batch entries per task (1 when the matrices are tiled).
    pub batch_per_task: usize,
    /// Tiles along the output's rows.
    pub m_tiles: usize,
    /// Tiles along the output's columns.
    pub n_tiles: usize,
    /// Tasks per tile along `k`: 1, or all of [`k_blocks`] (only for one matrix, from
    /// [`GemmPlan::with_k_split`]).
    pub k_parts: usize,
}

impl GemmPlan {
    /// The plan for `batches` products of `m x k` by `k x n` in at most `max_tasks`
    /// tasks ([`parallel_task_budget`] for a GEMM that has the pool to itself): one
    /// task when the budget is one or the work is below [`MIN_PARALLEL_WORK`], else
    /// tasks of at least [`MIN_TASK_WORK`] multiply-adds each, from tiling the output
    /// in both dims (tiles as square as the split allows) or grouping batch entries.
    /// Never splits `k`. Any plan gives the same bits.
    pub fn new(batches: usize, mkn: (usize, usize, usize), max_tasks: usize) -> GemmPlan {
        GemmPlan::with_layout(batches, mkn, max_tasks, (1, 1))
    }

    /// [`GemmPlan::new`] knowing `(csa, rsb)`, the column stride of `a` and the row
    /// stride of `b`: the `gemm` crate takes its small-matrix path (another summation
    /// order) only for outputs of at most `SMALL_MATRIX` elements whose `a` rows and
    /// `b` columns are contiguous, so with other strides tiles may be that small.
    pub fn with_layout(
        batches: usize,
        (m, k, n): (usize, usize, usize),
        max_tasks: usize,
        (csa, rsb): (usize, usize),
    ) -> GemmPlan {
        let small = if csa == 1 && rsb == 1 {
            SMALL_MATRIX
        } else {
            0
        };
        let whole = GemmPlan {
            batch_per_task: batches.max(1),
            m_tiles: 1,
            n_tiles: 1,
            k_parts: 1,
        };
        let (work, want) = wanted_tasks(batches, (m, k, n), max_tasks);
        if work < MIN_PARALLEL_WORK || want <= 1 || m == 0 || n == 0 {
            return whole;
        }
        if want <= batches {
            return GemmPlan {
                batch_per_task: batches.div_ceil(want),
                ..whole
            };
        }
        let per_matrix = want.div_ceil(batches.max(1));
        let (m_tiles, n_tiles) = split_tiles(m, n, per_matrix, small);
        GemmPlan {
            batch_per_task: 1,
            m_tiles,
            n_tiles,
            k_parts: 1,
        }
    }

    /// [`GemmPlan::new`] for one matrix, also splitting `k` where the output's tiles
    /// alone give fewer tasks than wanted (a small output with a long reduction, such
    /// as a linear layer on a small batch): then each tile's [`k_blocks`] blocks are
    /// separate tasks of at least [`MIN_TASK_WORK`], their partial sums (at most
    /// `K_SPLIT_MAX_PARTIALS` elements) added in block order afterwards.
    pub fn with_k_split((m, k, n): (usize, usize, usize), max_tasks: usize) -> GemmPlan {
        let plan = GemmPlan::new(1, (m, k, n), max_tasks);
        let blocks = k_blocks(k);
        let (work, want) = wanted_tasks(1, (m, k, n), max_tasks);
        let tiles = plan.m_tiles * plan.n_tiles;
        let partials = m.saturating_mul(n).saturating_mul(blocks - 1);
        // Only outputs the crate computes with its main micro-kernels (accumulator from
        // zero, then `dst + acc`), not its vector or small-matrix paths.
        let main_path = m >= 2 && n >= 2 && m * n > SMALL_MATRIX;
        if !main_path
            || work < MIN_PARALLEL_WORK
            || tiles >= want
            || partials > K_SPLIT_MAX_PARTIALS
        {
            return plan;
        }
        // Tiles of the split must still hold MIN_TASK_WORK per block.
        let per_block = (work / blocks / MIN_TASK_WORK).max(1);
        let (m_tiles, n_tiles) =
            split_tiles(m, n, want.div_ceil(blocks).min(per_block), SMALL_MATRIX);
        if m_tiles * n_tiles * blocks <= tiles {
            return plan;
        }
        GemmPlan {
            batch_per_task: 1,
            m_tiles,
            n_tiles,
            k_parts: blocks,
        }
    }

    /// Number of tasks for `batches` batch entries.
    pub fn tasks(&self, batches: usize) -> usize {
        batches.div_ceil(self.batch_per_task) * self.m_tiles * self.n_tiles * self.k_parts
    }
}

/// The multiply-adds of `batches` products of `m x k` by `k x n`, and the tasks of at
/// least [`MIN_TASK_WORK`] they would make within `max_tasks`.
fn wanted_tasks(
    batches: usize,
    (m, k, n): (usize, usize, usize),
    max_tasks: usize,
) -> (usize, usize) {
    let work = batches
        .saturating_mul(m)
        .saturating_mul(n)
        .saturating_mul(k.max(1));
    (work, (work / MIN_TASK_WORK).min(max_tasks))
}

/// Tasks one parallel kernel may split into: [`TASKS_PER_THREAD`] per thread of the
/// engine's pool, or 1 when it has one thread.
pub fn parallel_task_budget() -> usize {
    match parallel::get_num_threads() {
        0 | 1 => 1,
        t => TASKS_PER_THREAD.saturating_mul(t),
    }
}

/// Splits an `m x n` output into about `want` tiles: `(m_tiles, n_tiles)` with sides
/// of at least [`MIN_TILE`] where a dim is split and more than `small` elements (the
/// crate's small-matrix size where the layout could take that path, else 0), choosing
/// the grid that re-reads the least operand data (`m_tiles * n + n_tiles * m`, i.e.
/// square tiles).
fn split_tiles(m: usize, n: usize, want: usize, small: usize) -> (usize, usize) {
    let max_m = (m / MIN_TILE).max(1);
    let max_n = (n / MIN_TILE).max(1);
    let mut best = (1, 1);
    let mut best_key = (0, usize::MAX);
    for mt in 1..=max_m.min(want) {
        let mut nt = want.div_ceil(mt).min(max_n);
        // Keep every tile above the crate's small-matrix size (an unsplit dim may be
        // narrow, e.g. 6 output channels).
        while nt > 1 && (m / mt) * (n / nt) <= small {
            nt -= 1;
        }
        if mt > 1 && (m / mt) * (n / nt) <= small {
            continue;
        }
        let tiles = mt * nt;
        // More tiles (up to `want`) first, then less re-reading.
        let key = (
            tiles.min(want),
            mt.saturating_mul(n).saturating_add(nt.saturating_mul(m)),
        );
        if key.0 > best_key.0 || (key.0 == best_key.0 && key.1 < best_key.1) {
            best = (mt, nt);
            best_key = key;
        }
    }
    best
}

/// The `i`-th of `parts` near-equal ranges of `0..len` (sizes differ by at most one).
pub fn tile_range(len: usize, parts: usize, i: usize) -> std::ops::Range<usize> {
    let (q, r) = (len / parts, len % parts);
    let start = i * q + i.min(r);
    start..start + q + usize::from(i < r)
}

/// A raw output pointer that tasks writing disjoint tiles share.
#[derive(Clone, Copy)]
pub(crate) struct SharedMut<T>(pub(crate) *mut T);

impl<T> SharedMut<T> {
    /// The pointer (a method, so that closures capture the whole `Send` wrapper).
    pub(crate) fn ptr(self) -> *mut T {
        self.0
    }
}
// SAFETY: tasks write through it only at disjoint indices (each tile of the output is
// one task's); the pointee type is `Send`.
unsafe impl<T: Send> Send for SharedMut<T> {}
// SAFETY: as above: shared between tasks that never touch the same element.
unsafe impl<T: Send> Sync for SharedMut<T> {}

/// `c = a @ b + beta * c` like [`Gemm::gemm`], split by [`GemmPlan::with_k_split`]
/// for the engine's thread count and run on its pool; records the plan under `kernel`
/// (see `parallel::record_plan`).
///
/// # Safety
/// As [`Gemm::gemm`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_parallel<T: Gemm>(
    kernel: &'static str,
    (m, k, n): (usize, usize, usize),
    a: *const T,
    (rsa, csa): (isize, isize),
    b: *const T,
    (rsb, csb): (isize, isize),
    beta: T,
    c: *mut T,
    rsc: isize,
) {
    let plan = GemmPlan::with_k_split((m, k, n), parallel_task_budget());
    record_gemm(kernel, &plan, 1, (m, k, n));
    // SAFETY: this function's contract.
    unsafe { run_plan(&plan, (m, k, n), a, (rsa, csa), b, (rsb, csb), beta, c, rsc) }
}

/// Runs one matrix's `plan` (any [`GemmPlan`] for `batches == 1`) on the pool.
///
/// # Safety
/// As [`Gemm::gemm`].
#[allow(clippy::too_many_arguments)]
unsafe fn run_plan<T: Gemm>(
    plan: &GemmPlan,
    (m, k, n): (usize, usize, usize),
    a: *const T,
    (rsa, csa): (isize, isize),
    b: *const T,
    (rsb, csb): (isize, isize),
    beta: T,
    c: *mut T,
    rsc: isize,
) {
    let tiles = plan.m_tiles * plan.n_tiles;
    let tile = |t: usize| {
        (
            tile_range(m, plan.m_tiles, t / plan.n_tiles),
            tile_range(n, plan.n_tiles, t % plan.n_tiles),
        )
    };
    // The partial sums of blocks 1.. of a K-split, each `m x n` (row stride `n`); a
    // failed allocation runs the plan without the split, which gives the same bits.
    let mut partials = match plan.k_parts {
        1 => None,
        parts => try_vec((parts - 1) * m * n, T::ZERO).ok(),
    };
    let k_parts = if partials.is_some() { plan.k_parts } else { 1 };
    let (a, b, c) = (SharedMut(a as *mut T), SharedMut(b as *mut T), SharedMut(c));
    let p = partials.as_mut().map(|v| SharedMut(v.as_mut_ptr()));
    let run = |t: usize| {
        let (rows, cols) = tile(t / k_parts);
        let a = a.ptr().wrapping_offset(rows.start as isize * rsa);
        let b = b.ptr().wrapping_offset(cols.start as isize * csb);
        let c_tile = c
            .ptr()
            .wrapping_offset(rows.start as isize * rsc + cols.start as isize);
        let Some(p) = p else {
            // SAFETY: the caller's contract covers rows `..m` and columns `..n` of `c`
            // (and the matching rows of `a`, columns of `b`); this tile is rows `rows`
            // and columns `cols` of them, and no other task writes them.
            unsafe {
                T::gemm(
                    rows.len(),
                    k,
                    cols.len(),
                    a,
                    rsa,
                    csa,
                    b,
                    rsb,
                    csb,
                    beta,
                    c_tile,
                    rsc,
                )
            };
            return;
        };
        let part = t % k_parts;
        let block = k_block(k, part);
        let (a, b) = (
            a.wrapping_offset(block.start as isize * csa),
            b.wrapping_offset(block.start as isize * rsb),
        );
        let mkn = (rows.len(), block.len(), cols.len());
        if part == 0 {
            // SAFETY: as above, for columns `block` of `a` and rows `block` of `b`: the
            // first step of `Gemm::gemm`'s sum, into `c`.
            unsafe {
                T::gemm_block(
                    mkn,
                    a,
                    (rsa, csa),
                    b,
                    (rsb, csb),
                    (beta != T::ZERO, beta),
                    c_tile,
                    rsc,
                )
            };
        } else {
            let dst = p
                .ptr()
                .wrapping_add((part - 1) * m * n + rows.start * n + cols.start);
            // SAFETY: as above for `a` and `b`; `partials` holds `k_parts - 1` blocks of
            // `m x n` (row stride `n`), and this tile of block `part` is this task's.
            unsafe {
                T::gemm_block(
                    mkn,
                    a,
                    (rsa, csa),
                    b,
                    (rsb, csb),
                    (false, T::ZERO),
                    dst,
                    n as isize,
                )
            };
        }
    };
    parallel::for_each_task(tiles * k_parts, run);
    let Some(p) = p else { return };
    // `c += partial` for blocks 1.. in order: the `dst + acc` (a fused multiply-add by
    // 1, so one rounding) `Gemm::gemm` does for each block after the first.
    let add = |t: usize| {
        let (rows, cols) = tile(t);
        for i in rows {
            let c_row = c.ptr().wrapping_offset(i as isize * rsc);
            for part in 1..k_parts {
                let p_row = p.ptr().wrapping_add((part - 1) * m * n + i * n);
                for j in cols.clone() {
                    // SAFETY: element (`i`, `j`) of `c` (the caller's contract) and of
                    // block `part`'s partial sums; this tile is this task's alone.
                    unsafe { *c_row.add(j) += *p_row.add(j) };
                }
            }
        }
    };
    parallel::for_each_task(tiles, add);
}

/// Records a GEMM plan: its task count and the multiply-adds of its smallest and
/// largest task.
fn record_gemm(
    kernel: &'static str,
    plan: &GemmPlan,
    batches: usize,
    (m, k, n): (usize, usize, usize),
) {
    if !parallel::recording() {
        return;
    }
    let rows = (m / plan.m_tiles, m.div_ceil(plan.m_tiles));
    let cols = (n / plan.n_tiles, n.div_ceil(plan.n_tiles));
    let last_group = match batches % plan.batch_per_task {
        0 => plan.batch_per_task,
        r => r,
    };
    let ks = (
        k_block(k, k_blocks(k) - 1).len().max(1),
        k_block(k, 0).len().max(1),
    );
    let (k_min, k_max) = if plan.k_parts > 1 { ks } else { (k, k) };
    let per = |b: usize, r: usize, c: usize, k: usize| (b * r * c * k) as u64;
    parallel::record_plan(
        kernel,
        plan.tasks(batches),
        per(last_group.min(plan.batch_per_task), rows.0, cols.0, k_min),
        per(plan.batch_per_task.min(batches), rows.1, cols.1, k_max),
    );
}

/// One operand: its elements, the strides of its batch dims (broadcast to the output
/// batch shape, 0 where broadcast), its offset, and its matrix row/column strides.
pub struct MatOperand<'a, T> {
    /// The storage elements.
    pub data: &'a [T],
    /// Strides of the batch dims, aligned with the output's batch shape.
    pub batch_strides: &'a [usize],
    /// Storage offset of the first element.
    pub offset: usize,
    /// Stride between rows.
    pub row_stride: usize,
    /// Stride between columns.
    pub col_stride: usize,
}

impl<T> MatOperand<'_, T> {
    /// Checks that every element of this `batch_shape + [rows, cols]` operand lies
    /// inside `data` (nothing to check when it is empty). O(ndim), before any raw
    /// pointer is formed. See Note [Checked size arithmetic].
    fn check_in_bounds(&self, batch_shape: &[usize], rows: usize, cols: usize) -> Result<()> {
        if self.batch_strides.len() != batch_shape.len() {
            return Err(Error::InvalidArgument(format!(
                "matmul: {} batch strides for {} batch dims",
                self.batch_strides.len(),
                batch_shape.len()
            )));
        }
        let sizes = batch_shape.iter().chain([&rows, &cols]);
        let strides = self
            .batch_strides
            .iter()
            .chain([&self.row_stride, &self.col_stride]);
        let layout = crate::layout::Layout::new(
            sizes.copied().collect(),
            strides.copied().collect(),
            self.offset,
        );
        layout.check_in_bounds(self.data.len())
    }
}

/// `out[batch] = a[batch] @ b[batch]` for `a: m x k`, `b: k x n`; returns the
/// contiguous `batch_shape + [m, n]` result.
///
/// Fails (before touching memory) when an operand's strides reach outside its
/// `data`, when the output size overflows, or when it cannot be allocated.
pub fn matmul<T: Gemm>(
    batch_shape: &[usize],
    (m, k, n): (usize, usize, usize),
    a: &MatOperand<'_, T>,
    b: &MatOperand<'_, T>,
) -> Result<Vec<T>> {
    a.check_in_bounds(batch_shape, m, k)?;
    b.check_in_bounds(batch_shape, k, n)?;
    let mut out_shape: crate::shape::Dims = batch_shape.into();
    out_shape.extend_from_slice(&[m, n]);
    let batches: usize = crate::shape::checked_numel(batch_shape)?;
    let numel = crate::shape::checked_numel(&out_shape)?;
    if numel == 0 || k == 0 {
        return try_vec(numel, T::ZERO);
    }
    // Uninitialised: the plan's tasks write every element (with `beta == 0` the crate
    // never reads the output), so zeroing it first would be a serial pass over memory
    // for nothing. Written through raw pointers only; the length is set afterwards.
    let mut out: Vec<T> = try_with_capacity(numel)?;
    // Row and column strides are passed to the GEMM as isize.
    let to_isize = |s: usize| isize::try_from(s).map_err(|_| Error::NumelOverflow);
    let (rsa, csa) = (to_isize(a.row_stride)?, to_isize(a.col_stride)?);
    let (rsb, csb) = (to_isize(b.row_stride)?, to_isize(b.col_stride)?);
    // `batches <= out.len()`, which was just allocated.
    let mut a_offsets = Vec::with_capacity(batches);
    let mut b_offsets = Vec::with_capacity(batches);
    for_each_strided(
        batch_shape,
        [a.batch_strides, b.batch_strides],
        [a.offset, b.offset],
        0,
        batches,
        |_, [oa, ob]| {
            a_offsets.push(oa);
            b_offsets.push(ob);
        },
    );
    if batches == 1 {
        let plan = GemmPlan::with_k_split((m, k, n), parallel_task_budget());
        record_gemm("matmul", &plan, 1, (m, k, n));
        // SAFETY: `check_in_bounds` above proved that every element of the `m x k`
        // operand `a` and the `k x n` operand `b` at these offsets and strides lies
        // inside its `data` (strides converted to isize without loss); `out` holds the
        // `m x n` result (its capacity), row stride `n`, and aliases neither.
        unsafe {
            run_plan(
                &plan,
                (m, k, n),
                a.data.as_ptr().add(a_offsets[0]),
                (rsa, csa),
                b.data.as_ptr().add(b_offsets[0]),
                (rsb, csb),
                T::ZERO,
                out.as_mut_ptr(),
                n as isize,
            )
        };
        // SAFETY: the plan's tiles cover the `m x n` output (the capacity `numel`), and
        // each task wrote its tile with `beta == 0` (written, never read first).
        unsafe { out.set_len(numel) };
        return Ok(out);
    }
    let plan = GemmPlan::new(batches, (m, k, n), parallel_task_budget());
    record_gemm("matmul", &plan, batches, (m, k, n));
    let tiles = plan.m_tiles * plan.n_tiles;
    let c = SharedMut(out.as_mut_ptr());
    let run = |t: usize| {
        let (group, tile) = (t / tiles, t % tiles);
        let rows = tile_range(m, plan.m_tiles, tile / plan.n_tiles);
        let cols = tile_range(n, plan.n_tiles, tile % plan.n_tiles);
        let first = group * plan.batch_per_task;
        for batch in first..(first + plan.batch_per_task).min(batches) {
            let a_start = a_offsets[batch] + rows.start * a.row_stride;
            let b_start = b_offsets[batch] + cols.start * b.col_stride;
            let c_start = batch * m * n + rows.start * n + cols.start;
            // SAFETY: `check_in_bounds` above proved that for every batch index, row < m,
            // inner index < k and column < n, `offset + batch offset + row * row_stride
            // + col * col_stride` (without overflow) is below `data.len()` for `a` and
            // `b`. `a_start` is that sum for row `rows.start` and column 0, and the GEMM
            // reaches rows `rows` and columns `..k` from it; `b_start` is it for row 0
            // and column `cols.start`, reaching rows `..k` and columns `cols`. `c_start`
            // is the element (`rows.start`, `cols.start`) of this batch's `m x n` block
            // of `out`, and the tile (row stride `n`) stays inside that block; tiles of
            // different tasks are disjoint. Strides were converted to isize without loss.
            unsafe {
                T::gemm(
                    rows.len(),
                    k,
                    cols.len(),
                    a.data.as_ptr().add(a_start),
                    rsa,
                    csa,
                    b.data.as_ptr().add(b_start),
                    rsb,
                    csb,
                    T::ZERO,
                    c.ptr().add(c_start),
                    n as isize,
                )
            }
        }
    };
    parallel::for_each_task(plan.tasks(batches), run);
    // SAFETY: the tasks' tiles cover every batch's `m x n` block of the capacity
    // `numel`, each written with `beta == 0` (never read first).
    unsafe { out.set_len(numel) };
    Ok(out)
}

/// `out[batch] = a[batch] @ b[batch]` of int64 matrices with wrapping arithmetic (the
/// integer matmul PyTorch's CPU kernels compute; narrower integers are computed on their
/// int64 values and truncated, which gives the same bits). Safe indexing, no GEMM.
pub fn matmul_i64(
    batch_shape: &[usize],
    (m, k, n): (usize, usize, usize),
    a: &MatOperand<'_, i64>,
    b: &MatOperand<'_, i64>,
) -> Result<Vec<i64>> {
    a.check_in_bounds(batch_shape, m, k)?;
    b.check_in_bounds(batch_shape, k, n)?;
    let batches: usize = crate::shape::checked_numel(batch_shape)?;
    let mut out = try_vec(
        batches
            .checked_mul(m)
            .and_then(|x| x.checked_mul(n))
            .ok_or(Error::NumelOverflow)?,
        0i64,
    )?;
    if out.is_empty() || k == 0 {
        return Ok(out);
    }
    let mut offsets = Vec::with_capacity(batches);
    for_each_strided(
        batch_shape,
        [a.batch_strides, b.batch_strides],
        [a.offset, b.offset],
        0,
        batches,
        |_, [oa, ob]| offsets.push((oa, ob)),
    );
    for (c, &(oa, ob)) in out.chunks_mut(m * n).zip(&offsets) {
        for i in 0..m {
            for p in 0..k {
                let x = a.data[oa + i * a.row_stride + p * a.col_stride];
                let row = ob + p * b.row_stride;
                for (j, cij) in c[i * n..(i + 1) * n].iter_mut().enumerate() {
                    *cij = cij.wrapping_add(x.wrapping_mul(b.data[row + j * b.col_stride]));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplies_a_transposed_operand() {
        // a = [[1, 2], [3, 4]] stored transposed; b = identity.
        let a_data = [1.0f64, 3.0, 2.0, 4.0];
        let b_data = [1.0f64, 0.0, 0.0, 1.0];
        let a = MatOperand {
            data: &a_data,
            batch_strides: &[],
            offset: 0,
            row_stride: 1,
            col_stride: 2,
        };
        let b = MatOperand {
            data: &b_data,
            batch_strides: &[],
            offset: 0,
            row_stride: 2,
            col_stride: 1,
        };
        assert_eq!(
            matmul(&[], (2, 2, 2), &a, &b).unwrap(),
            vec![1.0, 2.0, 3.0, 4.0]
        );
    }

    /// Pseudo-random values in [-0.5, 0.5), or small integers when `ints`.
    fn values(len: usize, seed: u64, ints: bool) -> Vec<f64> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if ints {
                    ((s >> 33) % 7) as f64 - 3.0
                } else {
                    (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
                }
            })
            .collect()
    }

    /// Row and column strides of `a` (`m x k`) and `b` (`k x n`) stored in `layout`:
    /// 0 both row-major, 1 both column-major, 2 `a` row-major and `b` column-major (a
    /// linear layer's `x @ wᵀ`, the layout the crate's small-matrix path takes).
    fn strides(layout: u8, (m, k, n): (usize, usize, usize)) -> [(usize, usize); 2] {
        match layout {
            0 => [(k, 1), (n, 1)],
            1 => [(1, m), (1, k)],
            _ => [(k, 1), (1, k)],
        }
    }

    /// `c = a @ b + beta * c` through [`Gemm::gemm`] on the tiles of an
    /// `m_tiles x n_tiles` grid, for `a` and `b` stored in `layout` ([`strides`]).
    fn tiled<T: Gemm>(
        (m, k, n): (usize, usize, usize),
        (a, b, layout): (&[T], &[T], u8),
        (m_tiles, n_tiles): (usize, usize),
        beta: T,
        c: &mut [T],
    ) {
        let [(rsa, csa), (rsb, csb)] = strides(layout, (m, k, n));
        for i in 0..m_tiles {
            for j in 0..n_tiles {
                let (rows, cols) = (tile_range(m, m_tiles, i), tile_range(n, n_tiles, j));
                // SAFETY: `a` holds `m * k`, `b` `k * n` and `c` `m * n` elements; the
                // tile's rows and columns are inside them.
                unsafe {
                    T::gemm(
                        rows.len(),
                        k,
                        cols.len(),
                        a.as_ptr().add(rows.start * rsa),
                        rsa as isize,
                        csa as isize,
                        b.as_ptr().add(cols.start * csb),
                        rsb as isize,
                        csb as isize,
                        beta,
                        c.as_mut_ptr().add(rows.start * n + cols.start),
                        n as isize,
                    )
                }
            }
        }
    }

    /// `c = a @ b + beta * c` through [`run_plan`] for `a` and `b` with the given
    /// (row, column) strides and a row-major `m x n` `c`.
    fn planned(
        plan: &GemmPlan,
        (m, k, n): (usize, usize, usize),
        (a, b): (&[f64], &[f64]),
        [(rsa, csa), (rsb, csb)]: [(usize, usize); 2],
        beta: f64,
        c: &mut [f64],
    ) {
        assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
        // SAFETY: callers pass strides that keep `a` (`m x k`) and `b` (`k x n`) inside
        // their slices; `c` holds the `m x n` row-major output.
        unsafe {
            run_plan(
                plan,
                (m, k, n),
                a.as_ptr(),
                (rsa as isize, csa as isize),
                b.as_ptr(),
                (rsb as isize, csb as isize),
                beta,
                c.as_mut_ptr(),
                n as isize,
            )
        }
    }

    #[test]
    fn odd_sizes_match_the_definition_exactly_on_integers() {
        // Integer-valued data: every partial sum is exact, so any order gives the
        // definition's bits. M, N, K of 1, 7, 17, 33, 65, 129 (and 0 for K),
        // contiguous and transposed operands, beta 0 and 1, whole and tiled.
        let sizes = [1usize, 7, 17, 33, 65, 129];
        for &m in &sizes {
            for &n in &sizes {
                for &k in [0usize, 1, 7, 17, 33, 65, 129].iter() {
                    for transposed in [false, true] {
                        let a = values(m * k, (m * 31 + k) as u64, true);
                        let b = values(k * n, (n * 17 + k) as u64, true);
                        let c0 = values(m * n, 5, true);
                        let at = |i: usize, p: usize| {
                            if transposed {
                                a[p * m + i]
                            } else {
                                a[i * k + p]
                            }
                        };
                        let bt = |p: usize, j: usize| {
                            if transposed {
                                b[j * k + p]
                            } else {
                                b[p * n + j]
                            }
                        };
                        let mut want = c0.clone();
                        for i in 0..m {
                            for j in 0..n {
                                let dot: f64 = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
                                want[i * n + j] += dot;
                            }
                        }
                        for grid in [(1, 1), (m.div_ceil(24), n.div_ceil(24)), (m, n)] {
                            let mut c = c0.clone();
                            let layout = u8::from(transposed);
                            tiled((m, k, n), (&a, &b, layout), grid, 1.0, &mut c);
                            assert_eq!(c, want, "{m}x{k}x{n} t={transposed} grid {grid:?}");
                            let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
                            let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
                            let mut c32 = vec![f32::NAN; m * n];
                            tiled((m, k, n), (&a32, &b32, layout), grid, 0.0, &mut c32);
                            for (got, (&w, &c0)) in c32.iter().zip(want.iter().zip(&c0)) {
                                assert_eq!(*got as f64, w - c0, "f32 {m}x{k}x{n}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn batched_and_tiled_matmul_match_the_definition() {
        // Small enough for `make memcheck` (Valgrind): a batch of transposed left
        // operands (grouped into tasks) and one product large enough to be tiled, on
        // integer-valued data, with 1 and 3 threads' plans.
        for &(batches, m, k, n) in &[
            (3usize, 40usize, 50usize, 60usize),
            (1, 70, 70, 70),
            (2, 7, 129, 17),
        ] {
            let a_data = values(batches * m * k, 3, true);
            let b_data = values(batches * k * n, 4, true);
            // `a` stored as `batches x k x m` (each matrix transposed), `b` row-major.
            let a = MatOperand {
                data: &a_data,
                batch_strides: &[m * k],
                offset: 0,
                row_stride: 1,
                col_stride: m,
            };
            let b = MatOperand {
                data: &b_data,
                batch_strides: &[k * n],
                offset: 0,
                row_stride: n,
                col_stride: 1,
            };
            let mut want = vec![0.0; batches * m * n];
            for bt in 0..batches {
                for i in 0..m {
                    for j in 0..n {
                        want[(bt * m + i) * n + j] = (0..k)
                            .map(|p| a_data[bt * m * k + p * m + i] * b_data[(bt * k + p) * n + j])
                            .sum();
                    }
                }
            }
            let before = crate::parallel::get_num_threads();
            for threads in [1, 3] {
                let plan = GemmPlan::new(batches, (m, k, n), TASKS_PER_THREAD * threads);
                let work = batches * m * k * n;
                assert!(threads == 1 || work < 2 * MIN_TASK_WORK || plan.tasks(batches) > 1);
                crate::parallel::set_num_threads(threads).unwrap();
                let got = matmul(&[batches], (m, k, n), &a, &b).unwrap();
                assert_eq!(got, want, "{batches}x{m}x{k}x{n}, {threads} threads");
            }
            crate::parallel::set_num_threads(before).unwrap();
        }
    }

    #[test]
    fn every_plan_gives_the_same_bits() {
        // Arbitrary data: the tiles of any plan (1 to 64 threads' budgets) sum each
        // element in the same order, so the bits match the one-task result.
        for &(m, k, n) in &[
            (64, 576, 400),
            (128, 1100, 96),
            (16, 512, 1000),
            (200, 3, 50),
            (1, 700, 300),
            (300, 40, 1),
            (25, 25, 25),
            (513, 64, 77),
            (6, 25, 576),
            (6, 150, 64),
            (10, 400, 30),
            (3, 64, 4000),
            (16, 1000, 512),
            (24, 2000, 24),
            (64, 700, 40),
            (256, 512, 64),
            (32, 900, 32),
        ] {
            for layout in [0u8, 1, 2] {
                let a = values(m * k, 1, false);
                let b = values(k * n, 2, false);
                let [(rsa, csa), (rsb, csb)] = strides(layout, (m, k, n));
                let mut one = vec![0.0; m * n];
                tiled((m, k, n), (&a, &b, layout), (1, 1), 0.0, &mut one);
                let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
                let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
                let mut one32 = vec![0.0f32; m * n];
                tiled((m, k, n), (&a32, &b32, layout), (1, 1), 0.0, &mut one32);
                for budget in [2, 4, 8, 16, 64, 256] {
                    let split = GemmPlan::with_k_split((m, k, n), budget);
                    let mut dst = vec![0.0; m * n];
                    planned(
                        &split,
                        (m, k, n),
                        (&a, &b),
                        [(rsa, csa), (rsb, csb)],
                        0.0,
                        &mut dst,
                    );
                    assert!(dst == one, "{m}x{k}x{n} layout {layout} {split:?}");
                    let plan = GemmPlan::with_layout(1, (m, k, n), budget, (csa, rsb));
                    let grid = (plan.m_tiles, plan.n_tiles);
                    let mut c = vec![0.0; m * n];
                    tiled((m, k, n), (&a, &b, layout), grid, 0.0, &mut c);
                    assert!(c == one, "{m}x{k}x{n} layout {layout} grid {grid:?}");
                    let mut c32 = vec![0.0f32; m * n];
                    tiled((m, k, n), (&a32, &b32, layout), grid, 0.0, &mut c32);
                    assert!(
                        c32 == one32,
                        "f32 {m}x{k}x{n} layout {layout} grid {grid:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn k_split_adds_its_blocks_as_one_task_does() {
        // A small output with a long reduction splits `k` when its tiles are too few;
        // with any `beta` (read or not) the result has the bits of one `Gemm::gemm`.
        for &(m, k, n) in &[
            (16, 512, 1000),
            (16, 1000, 512),
            (24, 2000, 24),
            (7, 9000, 40),
        ] {
            let plan = GemmPlan::with_k_split((m, k, n), 64);
            assert_eq!(plan.k_parts, k_blocks(k), "{m}x{k}x{n}: {plan:?}");
            assert!(plan.tasks(1) > GemmPlan::new(1, (m, k, n), 64).tasks(1));
            assert!(
                m != 16 || plan.tasks(1) >= 64,
                "the fc layer's GEMMs: {plan:?}"
            );
            let a = values(m * k, 7, false);
            let b = values(k * n, 8, false);
            let c0 = values(m * n, 9, false);
            for beta in [0.0, 1.0, 0.5] {
                let mut want = c0.clone();
                tiled((m, k, n), (&a, &b, 0), (1, 1), beta, &mut want);
                let mut got = c0.clone();
                planned(
                    &plan,
                    (m, k, n),
                    (&a, &b),
                    strides(0, (m, k, n)),
                    beta,
                    &mut got,
                );
                assert!(got == want, "{m}x{k}x{n} beta {beta}");
            }
        }
        // Odd sizes on integer-valued data, both layouts: the definition's exact values.
        for &(m, k, n) in &[(17, 777, 33), (33, 1029, 65)] {
            let plan = GemmPlan::with_k_split((m, k, n), 64);
            assert!(plan.k_parts > 1, "{m}x{k}x{n}: {plan:?}");
            let a = values(m * k, 11, true);
            let b = values(k * n, 12, true);
            for layout in [0u8, 1] {
                let [(rsa, csa), (rsb, csb)] = strides(layout, (m, k, n));
                let mut want = vec![0.0; m * n];
                for i in 0..m {
                    for j in 0..n {
                        want[i * n + j] = (0..k)
                            .map(|p| a[i * rsa + p * csa] * b[p * rsb + j * csb])
                            .sum();
                    }
                }
                let mut got = vec![f64::NAN; m * n];
                planned(
                    &plan,
                    (m, k, n),
                    (&a, &b),
                    [(rsa, csa), (rsb, csb)],
                    0.0,
                    &mut got,
                );
                assert_eq!(got, want, "{m}x{k}x{n} layout {layout}");
            }
        }
        // Never for batches, large outputs, or outputs the crate's vector paths take.
        assert_eq!(GemmPlan::with_k_split((1, 100_000, 300), 64).k_parts, 1);
        assert_eq!(GemmPlan::with_k_split((512, 4608, 64), 64).k_parts, 1);
        assert_eq!(GemmPlan::new(4, (16, 512, 1000), 64).k_parts, 1);
    }

    #[test]
    fn plans_split_large_gemms_into_many_similar_tasks() {
        // 16 threads' budget (64 tasks): a 64x12544 convolution GEMM and a 128x1024
        // linear layer split into at least 64 tasks each (a few more where the grid
        // rounds up), in both dims where needed, of near-equal sizes.
        for &(m, k, n) in &[(64, 576, 12544), (128, 1024, 1024), (2048, 2048, 2048)] {
            let plan = GemmPlan::new(1, (m, k, n), 64);
            assert!((64..=72).contains(&plan.tasks(1)), "{m}x{k}x{n}: {plan:?}");
            let (rows, cols) = (m / plan.m_tiles, n / plan.n_tiles);
            let (rows_max, cols_max) = (m.div_ceil(plan.m_tiles), n.div_ceil(plan.n_tiles));
            assert!(rows_max * cols_max * 10 <= rows * cols * 12, "{plan:?}");
        }
        // Small work stays one task; batches are grouped before matrices are tiled.
        assert_eq!(GemmPlan::new(1, (8, 8, 8), 64).tasks(1), 1);
        let batched = GemmPlan::new(256, (64, 64, 64), 64);
        assert_eq!((batched.tasks(256), batched.batch_per_task), (64, 4));
        // One thread's budget: one task.
        assert_eq!(GemmPlan::new(1, (2048, 2048, 2048), 1).tasks(1), 1);
    }

    #[test]
    fn rejects_operands_that_reach_outside_their_data() {
        let data = [1.0f64; 4];
        let ok = MatOperand {
            data: &data,
            batch_strides: &[],
            offset: 0,
            row_stride: 2,
            col_stride: 1,
        };
        let past_end = MatOperand { offset: 1, ..ok };
        assert!(matches!(
            matmul(&[], (2, 2, 2), &past_end, &ok),
            Err(Error::OutOfBounds { .. })
        ));
        // A batch stride that wraps the offset arithmetic.
        let wrapping = MatOperand {
            batch_strides: &[usize::MAX / 2],
            ..ok
        };
        assert!(matmul(&[3], (2, 2, 2), &wrapping, &wrapping).is_err());
        // An empty operand reaches nothing, whatever its offset.
        let empty: [f64; 0] = [];
        let e = MatOperand {
            data: &empty,
            offset: 7,
            ..ok
        };
        assert_eq!(matmul(&[], (0, 2, 0), &e, &e).unwrap(), Vec::<f64>::new());
    }
}
