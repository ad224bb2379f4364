//! Elementwise maps over strided (possibly broadcast) operands into a new contiguous
//! buffer, and scatters of a contiguous buffer into a strided destination.
//!
//! Every function checks at entry, in O(ndim), that its layouts stay inside the given
//! slices (Note [Checked size arithmetic]): a bad layout is an `Err`, never a panic.

use super::{for_each_run, for_each_strided};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::parallel::{self, CHUNK, PARALLEL_MIN_ELEMENTS};
use crate::shape::Dims;
use std::mem::MaybeUninit;

/// Fills a new vector of `n` elements, chunk by chunk, calling `fill(start, out_chunk)`,
/// which must write every slot of its chunk; chunks run on the pool when `n` is large.
/// Chunk boundaries never depend on the thread count.
///
/// The output is never zeroed up front: each slot is written once, by the task that
/// owns its chunk, so the first touch of new pages (the page faults) and the writes are
/// spread over the pool, with no serial memset before them.
///
/// `fill` is taken as a trait object, so each kernel's loop is compiled once (as its
/// closure) rather than once for the serial path and again for the parallel one, and
/// this function once per element type (Note [One parallel loop]).
fn fill_chunks<U: Element>(
    n: usize,
    fill: &(dyn Fn(usize, &mut [MaybeUninit<U>]) + Sync),
) -> Result<Vec<U>> {
    let mut out: Vec<U> = Vec::new();
    out.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
        bytes: n.saturating_mul(std::mem::size_of::<U>()),
    })?;
    let slots = &mut out.spare_capacity_mut()[..n];
    // Threshold (Note [Parallel thresholds]): measured on the 2-core machine with
    // `cargo run --profile quick -p rustgrad --example parallel_threshold`, a pool hand-off
    // costs 12-17 us, so a kernel of ~1 ns per element (exp, tanh, an Adam update, a norm
    // pass) breaks even near PARALLEL_MIN_ELEMENTS = 2^15 elements on 2 threads.
    // A memory-bound map (an add: ~0.15 ns per element) breaks even only near 2^17,
    // but loses at most one hand-off below it.
    if n < PARALLEL_MIN_ELEMENTS {
        fill(0, slots);
    } else {
        parallel::for_each_chunk_mut(slots, CHUNK, |c, chunk| fill(c * CHUNK, chunk));
    }
    // SAFETY: `fill` wrote every slot of the first `n` (serially above, or chunk by
    // chunk: `for_each_chunk_mut` returns only after every chunk, and a panic would
    // unwind past this line).
    unsafe { out.set_len(n) };
    Ok(out)
}

/// `out[i] = f(src[i])` over a strided source.
pub fn map1<T: Element, U: Element>(
    src: &[T],
    layout: &Layout,
    f: impl Fn(T) -> U + Sync + Send,
) -> Result<Vec<U>> {
    layout.check_in_bounds(src.len())?;
    let n = layout.numel();
    if n == 0 {
        return Ok(Vec::new());
    }
    if layout.is_contiguous() {
        let src = &src[layout.offset()..layout.offset() + n];
        if n < PARALLEL_MIN_ELEMENTS {
            return Ok(src.iter().map(|&x| f(x)).collect());
        }
        return fill_chunks(n, &|start, out| {
            let len = out.len();
            for (o, &x) in out.iter_mut().zip(&src[start..start + len]) {
                o.write(f(x));
            }
        });
    }
    fill_chunks(n, &|start, out| {
        for_each_run(
            layout.shape(),
            [layout.strides()],
            [layout.offset()],
            start,
            start + out.len(),
            |i, [o], [s], len| {
                let out = &mut out[i - start..i - start + len];
                if s == 1 {
                    for (d, &x) in out.iter_mut().zip(&src[o..o + len]) {
                        d.write(f(x));
                    }
                } else {
                    for (r, d) in out.iter_mut().enumerate() {
                        d.write(f(src[o + r * s]));
                    }
                }
            },
        );
    })
}

/// `out[i] = f(a[i], b[i])`; both layouts already broadcast to the same shape.
pub fn map2<A: Element, B: Element, U: Element>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    f: impl Fn(A, B) -> U + Sync + Send,
) -> Result<Vec<U>> {
    let n = la.numel();
    same_shape(la, lb)?;
    la.check_in_bounds(a.len())?;
    lb.check_in_bounds(b.len())?;
    if n == 0 {
        return Ok(Vec::new());
    }
    if la.is_contiguous() && lb.is_contiguous() && n < PARALLEL_MIN_ELEMENTS {
        let a = &a[la.offset()..la.offset() + n];
        let b = &b[lb.offset()..lb.offset() + n];
        return Ok(a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect());
    }
    if lb.strides().iter().all(|&s| s == 0) && la.is_contiguous() && n < PARALLEL_MIN_ELEMENTS {
        let y = b[lb.offset()];
        let a = &a[la.offset()..la.offset() + n];
        return Ok(a.iter().map(|&x| f(x, y)).collect());
    }
    fill_chunks(n, &|start, out| {
        for_each_run(
            la.shape(),
            [la.strides(), lb.strides()],
            [la.offset(), lb.offset()],
            start,
            start + out.len(),
            |i, [oa, ob], steps, len| {
                let out = &mut out[i - start..i - start + len];
                match steps {
                    [1, 1] => {
                        let (a, b) = (&a[oa..oa + len], &b[ob..ob + len]);
                        for ((d, &x), &y) in out.iter_mut().zip(a).zip(b) {
                            d.write(f(x, y));
                        }
                    }
                    [1, 0] => {
                        let y = b[ob];
                        for (d, &x) in out.iter_mut().zip(&a[oa..oa + len]) {
                            d.write(f(x, y));
                        }
                    }
                    [0, 1] => {
                        let x = a[oa];
                        for (d, &y) in out.iter_mut().zip(&b[ob..ob + len]) {
                            d.write(f(x, y));
                        }
                    }
                    [sa, sb] => {
                        for (r, d) in out.iter_mut().enumerate() {
                            d.write(f(a[oa + r * sa], b[ob + r * sb]));
                        }
                    }
                }
            },
        );
    })
}

/// `out[i] = f(a[i], b[i], c[i])`; all layouts already broadcast to the same shape.
pub fn map3<A: Element, B: Element, C: Element, U: Element>(
    (a, la): (&[A], &Layout),
    (b, lb): (&[B], &Layout),
    (c, lc): (&[C], &Layout),
    f: impl Fn(A, B, C) -> U + Sync + Send,
) -> Result<Vec<U>> {
    same_shape(la, lb)?;
    same_shape(la, lc)?;
    la.check_in_bounds(a.len())?;
    lb.check_in_bounds(b.len())?;
    lc.check_in_bounds(c.len())?;
    // Runs of merged dims (Note [Strided runs]); the common unit-stride and broadcast
    // (step 0) runs get slice loops the compiler vectorises.
    fill_chunks(la.numel(), &|start, out| {
        for_each_run(
            la.shape(),
            [la.strides(), lb.strides(), lc.strides()],
            [la.offset(), lb.offset(), lc.offset()],
            start,
            start + out.len(),
            |i, [oa, ob, oc], steps, len| {
                let out = &mut out[i - start..i - start + len];
                match steps {
                    [1, 1, 1] => {
                        let (a, b, c) = (&a[oa..oa + len], &b[ob..ob + len], &c[oc..oc + len]);
                        for (((d, &x), &y), &z) in out.iter_mut().zip(a).zip(b).zip(c) {
                            d.write(f(x, y, z));
                        }
                    }
                    [1, 1, 0] => {
                        let (a, b, z) = (&a[oa..oa + len], &b[ob..ob + len], c[oc]);
                        for ((d, &x), &y) in out.iter_mut().zip(a).zip(b) {
                            d.write(f(x, y, z));
                        }
                    }
                    [1, 0, 1] => {
                        let (a, y, c) = (&a[oa..oa + len], b[ob], &c[oc..oc + len]);
                        for ((d, &x), &z) in out.iter_mut().zip(a).zip(c) {
                            d.write(f(x, y, z));
                        }
                    }
                    [sa, sb, sc] => {
                        for (r, d) in out.iter_mut().enumerate() {
                            d.write(f(a[oa + r * sa], b[ob + r * sb], c[oc + r * sc]));
                        }
                    }
                }
            },
        );
    })
}

/// `dst[i] = f(dst[i], src[i])` in place: the strided destination is updated from a
/// source already broadcast to its shape, with no temporary buffer (Note [In-place
/// kernels]). The destination's layout must not overlap itself (each location is one
/// element) and `src` must not be the destination's storage; the caller checks both. A
/// contiguous destination is updated chunk by chunk on the pool.
pub fn update<T: Element, S: Element>(
    dst: &mut [T],
    dst_layout: &Layout,
    src: &[S],
    src_layout: &Layout,
    f: impl Fn(T, S) -> T + Sync + Send,
) -> Result<()> {
    same_shape(dst_layout, src_layout)?;
    dst_layout.check_in_bounds(dst.len())?;
    src_layout.check_in_bounds(src.len())?;
    let n = dst_layout.numel();
    if n == 0 {
        return Ok(());
    }
    // One run of the source against the destination's elements `start..start + len`;
    // a trait object, compiled once for both paths below (Note [One parallel loop]).
    let update_run: &(dyn Fn(&mut [T], usize) + Sync) = &|out: &mut [T], start: usize| {
        for_each_run(
            src_layout.shape(),
            [src_layout.strides()],
            [src_layout.offset()],
            start,
            start + out.len(),
            |i, [o], [s], len| {
                let out = &mut out[i - start..i - start + len];
                match s {
                    1 => {
                        for (d, &x) in out.iter_mut().zip(&src[o..o + len]) {
                            *d = f(*d, x);
                        }
                    }
                    0 => {
                        let x = src[o];
                        for d in out.iter_mut() {
                            *d = f(*d, x);
                        }
                    }
                    s => {
                        for (r, d) in out.iter_mut().enumerate() {
                            *d = f(*d, src[o + r * s]);
                        }
                    }
                }
            },
        );
    };
    if dst_layout.is_contiguous() {
        let out = &mut dst[dst_layout.offset()..dst_layout.offset() + n];
        if n < PARALLEL_MIN_ELEMENTS {
            update_run(out, 0);
        } else {
            parallel::for_each_chunk_mut(out, CHUNK, |c, chunk| update_run(chunk, c * CHUNK));
        }
        return Ok(());
    }
    for_each_strided(
        dst_layout.shape(),
        [dst_layout.strides(), src_layout.strides()],
        [dst_layout.offset(), src_layout.offset()],
        0,
        n,
        |_, [d, s]| dst[d] = f(dst[d], src[s]),
    );
    Ok(())
}

/// Writes `values` (contiguous, row-major over `dst_layout`'s shape) into the strided
/// destination `dst`.
pub fn scatter<T: Element>(dst: &mut [T], dst_layout: &Layout, values: &[T]) -> Result<()> {
    dst_layout.check_in_bounds(dst.len())?;
    let n = dst_layout.numel();
    if values.len() != n {
        return Err(Error::InvalidShape {
            shape: dst_layout.shape().iter().map(|&s| s as i64).collect(),
            numel: values.len(),
        });
    }
    if n == 0 {
        return Ok(());
    }
    if dst_layout.is_contiguous() {
        dst[dst_layout.offset()..dst_layout.offset() + n].copy_from_slice(values);
        return Ok(());
    }
    for_each_strided(
        dst_layout.shape(),
        [dst_layout.strides()],
        [dst_layout.offset()],
        0,
        n,
        |i, [o]| dst[o] = values[i],
    );
    Ok(())
}

/// Writes `value` into every element `dst_layout` addresses. Dims of stride 0 are
/// skipped (writing one value is idempotent), so filling an expanded view writes each
/// memory location once, as PyTorch's `fill_` allows.
pub fn fill<T: Element>(dst: &mut [T], dst_layout: &Layout, value: T) -> Result<()> {
    dst_layout.check_in_bounds(dst.len())?;
    if dst_layout.numel() == 0 {
        return Ok(());
    }
    // Non-empty, so every size is >= 1; a stride-0 dim revisits one location.
    let shape: Dims = dst_layout
        .shape()
        .iter()
        .zip(dst_layout.strides())
        .map(|(&size, &stride)| if stride == 0 { 1 } else { size })
        .collect();
    let distinct = Layout::new(shape, dst_layout.strides().into(), dst_layout.offset());
    let n = distinct.numel();
    if distinct.is_contiguous() {
        dst[distinct.offset()..distinct.offset() + n].fill(value);
        return Ok(());
    }
    for_each_strided(
        distinct.shape(),
        [distinct.strides()],
        [distinct.offset()],
        0,
        n,
        |_, [o]| dst[o] = value,
    );
    Ok(())
}

/// Broadcast operands must have one shape; a mismatch would index past the shorter.
fn same_shape(a: &Layout, b: &Layout) -> Result<()> {
    if a.shape() == b.shape() {
        return Ok(());
    }
    Err(Error::ShapeMismatch {
        op: "elementwise",
        message: format!(
            "rustgrad internal error: operand shapes {:?} and {:?} differ",
            a.shape(),
            b.shape()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Mutex;

    /// With one thread a kernel large enough to go parallel runs on the calling thread
    /// only (Note [Thread count]): it must not fall back to rayon's global pool.
    #[test]
    fn one_thread_runs_large_kernels_on_the_calling_thread() {
        let n = PARALLEL_MIN_ELEMENTS * 8;
        let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let layout = Layout::contiguous(&[n]);
        let seen = Mutex::new(HashSet::new());
        let before = parallel::get_num_threads();
        parallel::set_num_threads(1).unwrap();
        let out = map1(&src, &layout, |x| {
            seen.lock().unwrap().insert(std::thread::current().id());
            x + 1.0
        })
        .unwrap();
        parallel::set_num_threads(before).unwrap();
        assert_eq!(out[n - 1], n as f32);
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen, HashSet::from([std::thread::current().id()]));
    }
}
