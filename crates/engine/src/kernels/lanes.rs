//! Kernels over rows ("lanes"): the reductions, scans and sorts of `ops::reduce` see their
//! input as `outer` contiguous rows of `inner` elements each (the reduced dims moved
//! last and copied contiguous by the caller).
//!
//! Determinism (Note \[Determinism\]): [`fold_rows`] splits every row into `CHUNK`-long
//! runs, folds each run left to right from the identity and combines the partials of a
//! row left to right; [`map_rows`] computes each output row on one thread, serially. So
//! the work each thread does, and the order of every floating-point operation, depends
//! only on the sizes, never on the thread count; the serial path uses the same chunks.

use super::try_vec;
use crate::error::{Error, Result};
use crate::parallel::{self, CHUNK, PARALLEL_MIN_ELEMENTS};

fn check_rows(len: usize, outer: usize, inner: usize) -> Result<()> {
    if outer.checked_mul(inner) != Some(len) {
        return Err(Error::NotImplemented(format!(
            "rustgrad internal error: {len} elements are not {outer} rows of {inner}"
        )));
    }
    Ok(())
}

/// Folds each of the `outer` rows of `inner` elements of `data` into one value: every
/// `CHUNK`-long run of a row is folded from `init` by `fold(acc, index_in_row, x)`, then
/// the runs' results are combined left to right by `combine`. `init` must be an
/// identity of `combine`; an empty row gives `init`.
pub fn fold_rows<T, A, F, C>(
    data: &[T],
    outer: usize,
    inner: usize,
    init: A,
    fold: F,
    combine: C,
) -> Result<Vec<A>>
where
    T: Copy + Sync,
    A: Copy + Send + Sync,
    F: Fn(A, usize, T) -> A + Sync,
    C: Fn(A, A) -> A,
{
    check_rows(data.len(), outer, inner)?;
    let chunks_per_row = inner.div_ceil(CHUNK).max(1);
    let partial = |task: usize| -> A {
        let (row, c) = (task / chunks_per_row, task % chunks_per_row);
        let start = c * CHUNK;
        let end = inner.min(start + CHUNK);
        let base = row * inner;
        let mut acc = init;
        for i in start..end {
            acc = fold(acc, i, data[base + i]);
        }
        acc
    };
    let tasks = outer
        .checked_mul(chunks_per_row)
        .ok_or(Error::NumelOverflow)?;
    let mut partials = try_vec(tasks, init)?;
    // The measured break-even of Note [Parallel thresholds].
    if data.len() < PARALLEL_MIN_ELEMENTS {
        for (task, p) in partials.iter_mut().enumerate() {
            *p = partial(task);
        }
    } else {
        parallel::fill_each(&mut partials, partial);
    }
    let mut out = try_vec(outer, init)?;
    for (o, parts) in out.iter_mut().zip(partials.chunks(chunks_per_row)) {
        let mut acc = parts[0];
        for &p in &parts[1..] {
            acc = combine(acc, p);
        }
        *o = acc;
    }
    Ok(out)
}

/// Maps each of the `outer` rows of `inner` elements of `data` to an output row of
/// `out_inner` elements (initialised to `fill`) with `f(row, out_row)`. Rows run in
/// parallel for large inputs, each on one thread.
pub fn map_rows<T, U, F>(
    data: &[T],
    outer: usize,
    inner: usize,
    out_inner: usize,
    fill: U,
    f: F,
) -> Result<Vec<U>>
where
    T: Copy + Sync,
    U: Clone + Send + Sync,
    F: Fn(&[T], &mut [U]) + Sync,
{
    check_rows(data.len(), outer, inner)?;
    let total = outer.checked_mul(out_inner).ok_or(Error::NumelOverflow)?;
    let mut out = try_vec(total, fill)?;
    if total == 0 {
        return Ok(out);
    }
    let run = |(row, out_row): (usize, &mut [U])| f(&data[row * inner..(row + 1) * inner], out_row);
    if data.len().max(total) < PARALLEL_MIN_ELEMENTS {
        out.chunks_mut(out_inner).enumerate().for_each(run);
    } else {
        parallel::for_each_chunk_mut(&mut out, out_inner, |row, c| run((row, c)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_rows_across_chunks_left_to_right() {
        let n = CHUNK * 2 + 5;
        let data: Vec<i64> = (0..2 * n as i64).collect();
        let sums = fold_rows(&data, 2, n, 0i64, |a, _, x| a + x, |a, b| a + b).unwrap();
        let first: i64 = (0..n as i64).sum();
        assert_eq!(sums, vec![first, first + (n * n) as i64]);
        // The index passed to `fold` is the index within the row.
        let last = fold_rows(&data, 2, n, 0usize, |_, i, _| i, |_, b| b).unwrap();
        assert_eq!(last, vec![n - 1, n - 1]);
    }

    #[test]
    fn empty_rows_give_the_identity() {
        let data: Vec<f64> = vec![];
        assert_eq!(
            fold_rows(&data, 3, 0, 1.0, |a, _, x| a * x, |a, b| a * b).unwrap(),
            vec![1.0; 3]
        );
        let rows = map_rows(&data, 2, 0, 1, 7u8, |_, _| {}).unwrap();
        assert_eq!(rows, vec![7, 7]);
    }

    #[test]
    fn maps_rows_in_place() {
        let data = [3.0, 1.0, 2.0, 9.0, 8.0, 7.0];
        let sorted = map_rows(&data, 2, 3, 3, 0.0, |row, out| {
            out.copy_from_slice(row);
            out.sort_by(f64::total_cmp);
        })
        .unwrap();
        assert_eq!(sorted, vec![1.0, 2.0, 3.0, 7.0, 8.0, 9.0]);
        assert!(fold_rows(&data, 4, 2, 0.0, |a, _, x| a + x, |a, b| a + b).is_err());
    }
}
