//! Sum reductions over any set of dims. See Note \[Determinism\]: every output element
//! is reduced in fixed-size chunks combined left to right, so the result is bitwise
//! the same for any number of threads.

use super::{for_each_run, try_vec};
use crate::dtype::Num;
use crate::error::Result;
use crate::layout::Layout;
use crate::parallel::{self, CHUNK, PARALLEL_MIN_ELEMENTS};

/// Element types that sum into a wider accumulator (float32 sums in float64).
pub trait Accumulate: Num {
    /// The accumulator type.
    type Acc: Num;
    /// Widens into the accumulator.
    fn widen(self) -> Self::Acc;
    /// Narrows the accumulated sum back.
    fn narrow(acc: Self::Acc) -> Self;
}

impl Accumulate for f32 {
    type Acc = f64;
    #[inline(always)]
    fn widen(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn narrow(acc: f64) -> f32 {
        acc as f32
    }
}

impl Accumulate for f64 {
    type Acc = f64;
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
    #[inline(always)]
    fn narrow(acc: f64) -> f64 {
        acc
    }
}

impl Accumulate for i64 {
    type Acc = i64;
    #[inline(always)]
    fn widen(self) -> i64 {
        self
    }
    #[inline(always)]
    fn narrow(acc: i64) -> i64 {
        acc
    }
}

/// Lanes of [`sum_slice`]: independent accumulators the compiler keeps in vector
/// registers.
const LANES: usize = 8;

/// The sum of a contiguous run: element `j` goes to lane `j % LANES`, the lanes are
/// added left to right, then the tail. The order depends only on the length, so the
/// result is the same on every run (Note \[Determinism\]), and the lanes vectorise.
#[inline]
fn sum_slice<T: Accumulate>(xs: &[T]) -> T::Acc {
    let mut lanes = [T::Acc::ZERO; LANES];
    let mut blocks = xs.chunks_exact(LANES);
    for block in &mut blocks {
        for (lane, &x) in lanes.iter_mut().zip(block) {
            *lane += x.widen();
        }
    }
    let mut acc = T::Acc::ZERO;
    for lane in lanes {
        acc += lane;
    }
    for &x in blocks.remainder() {
        acc += x.widen();
    }
    acc
}

/// Sums `src` over `reduce_dims` (sorted, distinct). Returns a contiguous buffer whose
/// shape is the input shape without those dims.
pub fn sum<T: Accumulate>(src: &[T], layout: &Layout, reduce_dims: &[usize]) -> Result<Vec<T>> {
    layout.check_in_bounds(src.len())?;
    if let Some(&bad) = reduce_dims.iter().find(|&&d| d >= layout.ndim()) {
        return Err(crate::error::Error::DimOutOfRange {
            dim: bad as i64,
            min: 0,
            max: layout.ndim() as i64 - 1,
        });
    }
    if let Some(out) = sum_leading(src, layout, reduce_dims)? {
        return Ok(out);
    }
    // Kept dims first, then reduced ones: each output element is one contiguous run
    // of `inner` logical elements of the permuted layout.
    let mut order: Vec<usize> = (0..layout.ndim())
        .filter(|d| !reduce_dims.contains(d))
        .collect();
    order.extend_from_slice(reduce_dims);
    let permuted = layout.permute(&order);
    let inner: usize = reduce_dims.iter().map(|&d| layout.shape()[d]).product();
    // With an empty reduced extent every output element is an empty sum.
    let outer = layout.numel().checked_div(inner).unwrap_or_else(|| {
        (0..layout.ndim())
            .filter(|d| !reduce_dims.contains(d))
            .map(|d| layout.shape()[d])
            .product()
    });
    let chunks_per_output = inner.div_ceil(CHUNK).max(1);
    let partial = |task: usize| -> T::Acc {
        let (o, c) = (task / chunks_per_output, task % chunks_per_output);
        let start = o * inner + c * CHUNK;
        let end = (o * inner + inner).min(start + CHUNK);
        let mut acc = T::Acc::ZERO;
        for_each_run(
            permuted.shape(),
            [permuted.strides()],
            [permuted.offset()],
            start,
            end,
            |_, [off], [step], len| {
                if step == 1 {
                    acc += sum_slice(&src[off..off + len]);
                } else {
                    for r in 0..len {
                        acc += src[off + r * step].widen();
                    }
                }
            },
        );
        acc
    };
    // Both fit: tasks <= numel + outer, and outer <= numel unless inner is 0.
    let tasks = outer * chunks_per_output;
    let mut partials = try_vec(tasks, T::Acc::ZERO)?;
    // Parallel from PARALLEL_MIN_ELEMENTS: the measured break-even of Note [Parallel
    // thresholds] (a hand-off of 12-17 us on the 2-core machine).
    if layout.numel() < PARALLEL_MIN_ELEMENTS {
        for (task, p) in partials.iter_mut().enumerate() {
            *p = partial(task);
        }
    } else {
        parallel::fill_each(&mut partials, partial);
    }
    let mut out = try_vec(outer, T::ZERO)?;
    for (o, parts) in out.iter_mut().zip(partials.chunks(chunks_per_output)) {
        let mut acc = T::Acc::ZERO;
        for &p in parts {
            acc += p;
        }
        *o = T::narrow(acc);
    }
    Ok(out)
}

/// Columns of one task of [`sum_leading`]: their accumulators stay in L1.
const COLUMNS: usize = 512;

/// [`sum`] of a contiguous input over its leading dims (`x.sum(0)` of a `(rows, cols)`
/// matrix: a bias gradient), row by row over contiguous columns so that the loop
/// vectorises, instead of one strided walk per column. Each column is reduced with
/// exactly [`sum`]'s operations in its order (that path walks a column with stride
/// `cols`, element by element from zero within each `CHUNK` of rows, then adds the
/// chunks' partials to zero left to right), so the bits are the same; columns are split
/// over the pool in blocks of [`COLUMNS`]. `None` when the shape does not fit.
fn sum_leading<T: Accumulate>(
    src: &[T],
    layout: &Layout,
    reduce_dims: &[usize],
) -> Result<Option<Vec<T>>> {
    let k = reduce_dims.len();
    let leading =
        k > 0 && k < layout.ndim() && reduce_dims.iter().enumerate().all(|(i, &d)| i == d);
    if !leading || !layout.is_contiguous() {
        return Ok(None);
    }
    let rows: usize = layout.shape()[..k].iter().product();
    let cols: usize = layout.shape()[k..].iter().product();
    // One column is a unit-stride run there, summed in lanes; no rows is an empty sum.
    if cols < 2 || rows == 0 {
        return Ok(None);
    }
    let x = &src[layout.offset()..layout.offset() + rows * cols];
    let mut out = try_vec(cols, T::ZERO)?;
    let block = |first: usize, out: &mut [T]| {
        let width = out.len();
        let mut total = [T::Acc::ZERO; COLUMNS];
        let mut part = [T::Acc::ZERO; COLUMNS];
        let (total, part) = (&mut total[..width], &mut part[..width]);
        for chunk_start in (0..rows).step_by(CHUNK) {
            part.fill(T::Acc::ZERO);
            for r in chunk_start..rows.min(chunk_start + CHUNK) {
                let row = &x[r * cols + first..r * cols + first + width];
                for (acc, &v) in part.iter_mut().zip(row) {
                    *acc += v.widen();
                }
            }
            for (t, &p) in total.iter_mut().zip(part.iter()) {
                *t += p;
            }
        }
        for (o, &t) in out.iter_mut().zip(total.iter()) {
            *o = T::narrow(t);
        }
    };
    // Same threshold as the general path (Note [Parallel thresholds]).
    if rows * cols < PARALLEL_MIN_ELEMENTS {
        for (b, chunk) in out.chunks_mut(COLUMNS).enumerate() {
            block(b * COLUMNS, chunk);
        }
    } else {
        parallel::for_each_chunk_mut(&mut out, COLUMNS, |b, chunk| block(b * COLUMNS, chunk));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Dims;

    #[test]
    fn sums_rows_columns_and_all() {
        let data: Vec<f64> = (0..6).map(|x| x as f64).collect();
        let l = Layout::contiguous(&[2, 3]);
        assert_eq!(sum(&data, &l, &[0]).unwrap(), vec![3.0, 5.0, 7.0]);
        assert_eq!(sum(&data, &l, &[1]).unwrap(), vec![3.0, 12.0]);
        assert_eq!(sum(&data, &l, &[0, 1]).unwrap(), vec![15.0]);
        assert_eq!(
            sum(&data, &l.transpose(0, 1), &[1]).unwrap(),
            vec![3.0, 5.0, 7.0]
        );
    }

    /// The leading-dims path gives the bits of the general one: a strided view (every
    /// other column of a wider buffer) takes the general path's column walk.
    #[test]
    fn leading_dims_path_matches_the_strided_walk() {
        for (rows, cols) in [(3, 7), (CHUNK + 5, 3), (2 * CHUNK + 1, COLUMNS + 9), (1, 2)] {
            // float64, whose sums round (float32 sums in float64 would be exact here,
            // whatever the order).
            let wide: Vec<f64> = (0..rows * cols * 2)
                .map(|i| ((i as f64) * 0.618_034).sin() * 1e3 + 1e-3)
                .collect();
            let data: Vec<f64> = wide.iter().step_by(2).copied().collect();
            let fast = sum(&data, &Layout::contiguous(&[rows, cols]), &[0]).unwrap();
            let strided = Layout::new(
                Dims::from_slice(&[rows, cols]),
                Dims::from_slice(&[2 * cols, 2]),
                0,
            );
            let slow = sum(&wide, &strided, &[0]).unwrap();
            assert_eq!(
                fast.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                slow.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{rows}x{cols}"
            );
        }
    }

    #[test]
    fn empty_reduction_gives_zeros() {
        let data: Vec<f32> = vec![];
        assert_eq!(
            sum(&data, &Layout::contiguous(&[0, 3]), &[0]).unwrap(),
            vec![0.0; 3]
        );
    }
}
