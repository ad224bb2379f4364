//! Elementwise maps over strided (possibly broadcast) operands into a new contiguous
//! buffer, and scatters of a contiguous buffer into a strided destination.

use super::for_each_strided;
use crate::dtype::Element;
use crate::layout::Layout;
use crate::parallel::{self, CHUNK, PARALLEL_MIN_ELEMENTS};
use rayon::prelude::*;

/// Fills a new vector of `n` elements, chunk by chunk, calling `fill(start, out_chunk)`;
/// chunks run on the pool when `n` is large. Chunk boundaries never depend on the
/// thread count.
fn fill_chunks<U: Element>(n: usize, fill: impl Fn(usize, &mut [U]) + Sync + Send) -> Vec<U> {
    let mut out = vec![U::default(); n];
    if n < PARALLEL_MIN_ELEMENTS {
        fill(0, &mut out);
    } else {
        parallel::install(|| {
            out.par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(c, chunk)| fill(c * CHUNK, chunk));
        });
    }
    out
}

/// `out[i] = f(src[i])` over a strided source.
pub fn map1<T: Element, U: Element>(
    src: &[T],
    layout: &Layout,
    f: impl Fn(T) -> U + Sync + Send,
) -> Vec<U> {
    let n = layout.numel();
    if layout.is_contiguous() {
        let src = &src[layout.offset()..layout.offset() + n];
        if n < PARALLEL_MIN_ELEMENTS {
            return src.iter().map(|&x| f(x)).collect();
        }
        return fill_chunks(n, |start, out| {
            let len = out.len();
            for (o, &x) in out.iter_mut().zip(&src[start..start + len]) {
                *o = f(x);
            }
        });
    }
    fill_chunks(n, |start, out| {
        for_each_strided(
            layout.shape(),
            [layout.strides()],
            [layout.offset()],
            start,
            start + out.len(),
            |i, [o]| out[i - start] = f(src[o]),
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
) -> Vec<U> {
    let n = la.numel();
    if la.is_contiguous() && lb.is_contiguous() && n < PARALLEL_MIN_ELEMENTS {
        let a = &a[la.offset()..la.offset() + n];
        let b = &b[lb.offset()..lb.offset() + n];
        return a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect();
    }
    if lb.strides().iter().all(|&s| s == 0) && la.is_contiguous() && n < PARALLEL_MIN_ELEMENTS {
        let y = b[lb.offset()];
        let a = &a[la.offset()..la.offset() + n];
        return a.iter().map(|&x| f(x, y)).collect();
    }
    fill_chunks(n, |start, out| {
        for_each_strided(
            la.shape(),
            [la.strides(), lb.strides()],
            [la.offset(), lb.offset()],
            start,
            start + out.len(),
            |i, [oa, ob]| out[i - start] = f(a[oa], b[ob]),
        );
    })
}

/// `out[i] = f(a[i], b[i], c[i])`; all layouts already broadcast to the same shape.
pub fn map3<A: Element, B: Element, C: Element, U: Element>(
    (a, la): (&[A], &Layout),
    (b, lb): (&[B], &Layout),
    (c, lc): (&[C], &Layout),
    f: impl Fn(A, B, C) -> U + Sync + Send,
) -> Vec<U> {
    fill_chunks(la.numel(), |start, out| {
        for_each_strided(
            la.shape(),
            [la.strides(), lb.strides(), lc.strides()],
            [la.offset(), lb.offset(), lc.offset()],
            start,
            start + out.len(),
            |i, [oa, ob, oc]| out[i - start] = f(a[oa], b[ob], c[oc]),
        );
    })
}

/// Writes `values` (contiguous, row-major over `dst_layout`'s shape) into the strided
/// destination `dst`.
pub fn scatter<T: Element>(dst: &mut [T], dst_layout: &Layout, values: &[T]) {
    let n = dst_layout.numel();
    if dst_layout.is_contiguous() {
        dst[dst_layout.offset()..dst_layout.offset() + n].copy_from_slice(values);
        return;
    }
    for_each_strided(
        dst_layout.shape(),
        [dst_layout.strides()],
        [dst_layout.offset()],
        0,
        n,
        |i, [o]| dst[o] = values[i],
    );
}
