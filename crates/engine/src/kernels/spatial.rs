//! Resampling kernels: every output element of a plane is a weighted sum of at most `k`
//! elements of the matching input plane, at positions fixed by a per-plane table (the
//! same table for every plane). Padding, nearest and (bi/tri)linear and bicubic
//! upsampling all reduce to such a table; see Note [Sample maps].
//!
//! Positions are checked at entry: a position past the plane is an error, never an
//! out-of-bounds read. [`NONE`] marks an entry that reads nothing.

use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::parallel::{for_each_chunk_mut, CHUNK, PARALLEL_MIN_ELEMENTS};

/// A table entry that reads nothing (constant padding, an out-of-range tap).
pub const NONE: usize = usize::MAX;

/// The shape of a sampling problem: `planes` planes of `plane_in` input and
/// `plane_out` output elements, `k` table entries per output element.
#[derive(Copy, Clone, Debug)]
pub struct Planes {
    /// Number of planes (the product of the batch dims).
    pub planes: usize,
    /// Elements per input plane.
    pub plane_in: usize,
    /// Elements per output plane.
    pub plane_out: usize,
    /// Table entries per output element.
    pub k: usize,
}

fn bad(what: &str) -> Error {
    Error::InvalidArgument(format!("rustgrad internal error: sample table {what}"))
}

/// Checks a table against its planes (entry check of both kernels).
fn check(p: Planes, idx: &[usize], w: Option<&[f64]>) -> Result<usize> {
    let entries = p
        .plane_out
        .checked_mul(p.k)
        .ok_or_else(|| bad("too large"))?;
    if idx.len() != entries || w.is_some_and(|w| w.len() != entries) {
        return Err(bad("of the wrong length"));
    }
    if w.is_none() && p.k != 1 {
        return Err(bad("without weights has more than one entry"));
    }
    if idx.iter().any(|&i| i != NONE && i >= p.plane_in) {
        return Err(bad("reads outside its plane"));
    }
    Ok(entries)
}

/// Chunk length for `n` outputs: one chunk below the parallel threshold, else `CHUNK`
/// (sizes only, never the thread count: Note \[Determinism\]).
fn chunk_len(n: usize, unit: usize) -> usize {
    if n < PARALLEL_MIN_ELEMENTS {
        n.max(1)
    } else {
        (CHUNK / unit.max(1)).max(1) * unit.max(1)
    }
}

/// `out[p, q] = Σ_j w[q, j] · src[p, idx[q, j]]` (without weights: `src[p, idx[q, 0]]`);
/// an output whose entries are all [`NONE`] is `fill`. Weighted sums accumulate in f64.
pub fn gather<T: Element>(
    src: &[T],
    p: Planes,
    idx: &[usize],
    w: Option<&[f64]>,
    fill: T,
) -> Result<Vec<T>> {
    check(p, idx, w)?;
    if src.len() != p.planes.saturating_mul(p.plane_in) {
        return Err(bad("for another input size"));
    }
    let n = p
        .planes
        .checked_mul(p.plane_out)
        .ok_or_else(|| bad("too large"))?;
    let mut out = crate::kernels::try_vec(n, fill)?;
    if n == 0 {
        return Ok(out);
    }
    let len = chunk_len(n, 1);
    for_each_chunk_mut(&mut out, len, |ci, chunk| {
        for (j, o) in chunk.iter_mut().enumerate() {
            let flat = ci * len + j;
            let (plane, q) = (flat / p.plane_out, flat % p.plane_out);
            let base = plane * p.plane_in;
            let entries = &idx[q * p.k..(q + 1) * p.k];
            match w {
                None => {
                    if entries[0] != NONE {
                        *o = src[base + entries[0]];
                    }
                }
                Some(w) => {
                    let weights = &w[q * p.k..(q + 1) * p.k];
                    let mut acc = 0.0f64;
                    let mut any = false;
                    for (&i, &wt) in entries.iter().zip(weights) {
                        if i != NONE {
                            any = true;
                            acc += wt * src[base + i].to_f64();
                        }
                    }
                    if any {
                        *o = T::from_f64(acc);
                    }
                }
            }
        }
    });
    Ok(out)
}

/// The transpose of [`gather`] (without its fill): zeros of `planes × plane_in` with
/// `w[q, j] · grad[p, q]` added at `idx[q, j]`. Each plane is summed on one thread in
/// output order, in f64, so the result does not depend on the thread count.
pub fn scatter<T: Element>(
    grad: &[T],
    p: Planes,
    idx: &[usize],
    w: Option<&[f64]>,
) -> Result<Vec<T>> {
    check(p, idx, w)?;
    if grad.len() != p.planes.saturating_mul(p.plane_out) {
        return Err(bad("for another output size"));
    }
    let n = p
        .planes
        .checked_mul(p.plane_in)
        .ok_or_else(|| bad("too large"))?;
    let mut out = crate::kernels::try_vec(n, T::from_f64(0.0))?;
    if n == 0 {
        return Ok(out);
    }
    let len = chunk_len(n, p.plane_in);
    for_each_chunk_mut(&mut out, len, |ci, chunk| {
        let mut acc = vec![0.0f64; p.plane_in];
        for (local, plane_out) in chunk.chunks_mut(p.plane_in).enumerate() {
            let plane = ci * (len / p.plane_in) + local;
            acc.iter_mut().for_each(|a| *a = 0.0);
            let g = &grad[plane * p.plane_out..(plane + 1) * p.plane_out];
            for (q, &gq) in g.iter().enumerate() {
                let gq = gq.to_f64();
                for j in 0..p.k {
                    let i = idx[q * p.k + j];
                    if i != NONE {
                        acc[i] += w.map_or(1.0, |w| w[q * p.k + j]) * gq;
                    }
                }
            }
            for (o, &a) in plane_out.iter_mut().zip(&acc) {
                *o = T::from_f64(a);
            }
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_and_scatter_are_transposes() {
        let p = Planes {
            planes: 2,
            plane_in: 3,
            plane_out: 2,
            k: 2,
        };
        let idx = [0, 2, 1, NONE];
        let w = [0.25, 0.75, 2.0, 9.0];
        let out = gather(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], p, &idx, Some(&w), -1.0).unwrap();
        assert_eq!(out, vec![2.5, 4.0, 5.5, 10.0]);
        let back = scatter(&[1.0, 1.0, 2.0, 0.0], p, &idx, Some(&w)).unwrap();
        assert_eq!(back, vec![0.25, 2.0, 0.75, 0.5, 0.0, 1.5]);
        assert!(gather(&[1.0; 6], p, &[0, 3, 0, 0], Some(&w), 0.0).is_err());
    }
}
