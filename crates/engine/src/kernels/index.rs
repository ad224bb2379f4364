//! Index kernels: reading and writing the elements of a row-major buffer at a list of
//! flat positions (PyTorch's gather / index_select / scatter family all reduce to
//! these once the positions are known). Positions are checked at entry: an index past
//! the end is an error, never an out-of-bounds access.

use crate::error::{Error, Result};

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

    #[test]
    fn take_and_put_follow_positions() {
        assert_eq!(take(&[1, 2, 3], &[2, 0, 2]).unwrap(), vec![3, 1, 3]);
        let mut dst = [0, 0, 0];
        put(&mut dst, &[1, 2, 3], &[2, 0, 2], |a, b| a + b).unwrap();
        assert_eq!(dst, [2, 0, 4]);
        assert!(take(&[1, 2], &[2]).is_err());
        assert!(put(&mut dst, &[1], &[3], |_, b| b).is_err());
    }
}
