//! CPU kernels: pure functions over slices and layouts. Nothing here knows about
//! autograd. Parallel work is split into fixed-size chunks (see `parallel`).

pub mod attention;
pub mod conv;
pub mod elementwise;
pub mod index;
pub mod lanes;
pub mod logical;
pub mod loss;
pub mod math;
pub mod matmul;
pub mod norm;
pub mod pool;
pub mod reduce;
pub mod rnn;
pub mod softmax;
pub mod spatial;
pub mod vmath;

use crate::error::{Error, Result};
use smallvec::SmallVec;

/// A vector of `n` copies of `value`, or PyTorch's allocator error when the memory
/// cannot be had: every kernel allocates its user-sized output through here, so a
/// huge result (e.g. materialising `ones(1).expand(2**20, 2**20)`) is an error, not
/// an abort. See Note [Allocation failures].
pub fn try_vec<T: Clone>(n: usize, value: T) -> Result<Vec<T>> {
    let mut v = try_with_capacity(n)?;
    v.resize(n, value);
    Ok(v)
}

/// An empty vector with room for `n` elements, or PyTorch's allocator error: the one
/// fallible allocation [`try_vec`] and [`try_collect`] are built on.
pub fn try_with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
        bytes: n.saturating_mul(std::mem::size_of::<T>()),
    })?;
    Ok(v)
}

/// The items of `iter` (whose length is known up front: a mapped range) in a vector
/// allocated fallibly, as [`try_vec`]: for user-sized tables (flip, roll, grids).
pub fn try_collect<T>(iter: impl ExactSizeIterator<Item = T>) -> Result<Vec<T>> {
    let mut v = try_with_capacity(iter.len())?;
    v.extend(iter);
    Ok(v)
}

/// Calls `f(i, offsets)` for the logical (row-major) elements `start..end` of `shape`,
/// where `offsets[k]` is element `i`'s storage index in operand `k`, whose layout is
/// given by `strides[k]` and `base[k]`. Operands that are broadcast have stride 0.
#[inline]
pub fn for_each_strided<const N: usize>(
    shape: &[usize],
    strides: [&[usize]; N],
    base: [usize; N],
    start: usize,
    end: usize,
    mut f: impl FnMut(usize, [usize; N]),
) {
    for_each_run(shape, strides, base, start, end, |i, offs, steps, len| {
        let mut o = offs;
        for r in 0..len {
            f(i + r, o);
            for k in 0..N {
                o[k] += steps[k];
            }
        }
    });
}

/// Walks the logical (row-major) elements `start..end` of `shape` in runs: calls
/// `f(i, offsets, steps, len)` for each run of `len` consecutive elements `i..i + len`
/// along the innermost dim, where `offsets[k]` is element `i`'s storage index in operand
/// `k` and operand `k` advances by `steps[k]` per element of the run (1 when that
/// operand is contiguous there, 0 when broadcast). Adjacent dims that every operand
/// lays out as one (`stride[d] == stride[d + 1] * shape[d + 1]`) are merged first, so a
/// contiguous operand is one run per call. Kernels turn a run with steps 1 or 0 into a
/// plain slice loop the compiler vectorises (Note [Strided runs]).
#[inline]
pub fn for_each_run<const N: usize>(
    shape: &[usize],
    strides: [&[usize]; N],
    base: [usize; N],
    start: usize,
    end: usize,
    mut f: impl FnMut(usize, [usize; N], [usize; N], usize),
) {
    if start >= end {
        return;
    }
    if shape.is_empty() {
        f(0, base, [0; N], 1);
        return;
    }
    // Merge dims, innermost first: `dims` holds (size, strides) from the outermost.
    let mut sizes: SmallVec<[usize; 6]> = SmallVec::new();
    let mut strd: [SmallVec<[usize; 6]>; N] = std::array::from_fn(|_| SmallVec::new());
    for d in 0..shape.len() {
        let mergeable = !sizes.is_empty()
            && (0..N)
                .all(|k| Some(strd[k][strd[k].len() - 1]) == strides[k][d].checked_mul(shape[d]));
        if mergeable {
            *sizes.last_mut().expect("non-empty") *= shape[d];
            for k in 0..N {
                *strd[k].last_mut().expect("non-empty") = strides[k][d];
            }
        } else {
            sizes.push(shape[d]);
            for k in 0..N {
                strd[k].push(strides[k][d]);
            }
        }
    }
    let nd = sizes.len();
    let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, nd);
    let mut rem = start;
    for d in (0..nd).rev() {
        idx[d] = rem % sizes[d];
        rem /= sizes[d];
    }
    let mut offs = base;
    for k in 0..N {
        for d in 0..nd {
            offs[k] += idx[d] * strd[k][d];
        }
    }
    let last = nd - 1;
    let inner = sizes[last];
    let steps: [usize; N] = std::array::from_fn(|k| strd[k][last]);
    let mut i = start;
    loop {
        let run = (inner - idx[last]).min(end - i);
        f(i, offs, steps, run);
        i += run;
        if i >= end {
            return;
        }
        for k in 0..N {
            offs[k] -= idx[last] * steps[k];
        }
        idx[last] = 0;
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            for k in 0..N {
                offs[k] += strd[k][d];
            }
            if idx[d] < sizes[d] {
                break;
            }
            for k in 0..N {
                offs[k] -= idx[d] * strd[k][d];
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_walk_visits_transposed_offsets_in_logical_order() {
        // A 2x3 row-major matrix viewed transposed (3x2, strides [1, 3]).
        let mut seen = vec![];
        for_each_strided(&[3, 2], [&[1, 3]], [0], 0, 6, |i, [o]| seen.push((i, o)));
        assert_eq!(seen, vec![(0, 0), (1, 3), (2, 1), (3, 4), (4, 2), (5, 5)]);
        let mut part = vec![];
        for_each_strided(&[3, 2], [&[1, 3]], [0], 3, 5, |_, [o]| part.push(o));
        assert_eq!(part, vec![4, 2]);
    }
}
