//! Index kernels: reading and writing the elements of a row-major buffer at a list of
//! flat positions (PyTorch's gather / index_select / scatter family all reduce to
//! these once the positions are known). Positions are checked at entry: an index past
//! the end is an error, never an out-of-bounds access.

use crate::error::{Error, Result};
use crate::layout::Layout;

/// Checks that every position is below `len` (the kernels' entry check).
fn check_positions(positions: &[usize], len: usize) -> Result<()> {
    match positions.iter().find(|&&p| p >= len) {
        None => Ok(()),
        Some(&p) => Err(Error::InvalidArgument(format!(
            "rustgrad internal error: index position {p} outside a buffer of {len} elements"
        ))),
    }
}

/// `out[i] = src[positions[i]]`.
pub fn take<T: Copy>(src: &[T], positions: &[usize]) -> Result<Vec<T>> {
    check_positions(positions, src.len())?;
    let mut out = Vec::new();
    out.try_reserve_exact(positions.len())
        .map_err(|_| Error::OutOfMemory {
            bytes: positions.len().saturating_mul(std::mem::size_of::<T>()),
        })?;
    out.extend(positions.iter().map(|&p| src[p]));
    Ok(out)
}

/// `out[i]` = the element at row-major position `positions[i]` of the view `layout` of
/// `src`, read where it is stored: for a few places of a view much larger than its
/// storage (`ones(1).expand(2**40).diag()`-like reads), where materialising the view
/// first would be a huge allocation (Note [Allocation failures]).
pub fn take_strided<T: Copy>(src: &[T], layout: &Layout, positions: &[usize]) -> Result<Vec<T>> {
    layout.check_in_bounds(src.len())?;
    check_positions(positions, layout.numel())?;
    let (shape, strides) = (layout.shape(), layout.strides());
    let mut out = super::try_with_capacity(positions.len())?;
    out.extend(positions.iter().map(|&p| {
        let (mut rest, mut at) = (p, layout.offset());
        for d in (0..shape.len()).rev() {
            at += (rest % shape[d]) * strides[d];
            rest /= shape[d];
        }
        // Inside: `p` is below the view's numel and the view inside `src`.
        src[at]
    }));
    Ok(out)
}

/// `dst[positions[i]] = combine(dst[positions[i]], src[i])` in order of `i` (so the
/// result does not depend on threads: the last write wins for overwriting scatters).
pub fn put<T: Copy>(
    dst: &mut [T],
    src: &[T],
    positions: &[usize],
    combine: impl Fn(T, T) -> T,
) -> Result<()> {
    check_positions(positions, dst.len())?;
    if src.len() != positions.len() {
        return Err(Error::InvalidArgument(format!(
            "rustgrad internal error: {} values for {} index positions",
            src.len(),
            positions.len()
        )));
    }
    for (&p, &v) in positions.iter().zip(src) {
        dst[p] = combine(dst[p], v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Dims;

    #[test]
    fn take_and_put_follow_positions() {
        assert_eq!(take(&[1, 2, 3], &[2, 0, 2]).unwrap(), vec![3, 1, 3]);
        let mut dst = [0, 0, 0];
        put(&mut dst, &[1, 2, 3], &[2, 0, 2], |a, b| a + b).unwrap();
        assert_eq!(dst, [2, 0, 4]);
        assert!(take(&[1, 2], &[2]).is_err());
        // A transposed 2x3 view of [0..6] (shape 3x2, strides 1, 3), and a broadcast one.
        let t = Layout::new(Dims::from_slice(&[3, 2]), Dims::from_slice(&[1, 3]), 0);
        assert_eq!(
            take_strided(&[0, 1, 2, 3, 4, 5], &t, &[0, 1, 5]).unwrap(),
            vec![0, 3, 5]
        );
        let b = Layout::new(
            Dims::from_slice(&[4, 1 << 40]),
            Dims::from_slice(&[1, 0]),
            1,
        );
        assert_eq!(
            take_strided(&[9, 7, 8, 6, 5], &b, &[(1 << 41) + 3]).unwrap(),
            vec![6]
        );
        assert!(take_strided(&[1, 2], &t, &[0]).is_err());
        assert!(take_strided(&[0, 1, 2, 3, 4, 5], &t, &[6]).is_err());
        assert!(put(&mut dst, &[1], &[3], |_, b| b).is_err());
    }
}
