//! Shape arithmetic: dimension wrapping, broadcasting, `-1` inference.

use crate::error::{Error, Result};
use smallvec::SmallVec;

/// A small inline vector of sizes or strides; tensors rarely have more than 6 dims.
pub type Dims = SmallVec<[usize; 6]>;

/// Number of elements of a shape (1 for a 0-d tensor).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Wraps a possibly negative `dim` into `[0, ndim)`, PyTorch's `maybe_wrap_dim`.
/// A 0-d tensor accepts dims -1 and 0, as in PyTorch.
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(Error::DimOutOfRange {
            dim,
            min: -n,
            max: n - 1,
        });
    }
    Ok(if dim < 0 { dim + n } else { dim } as usize)
}

/// Wraps a dim for insertion (`unsqueeze`), where `ndim + 1` positions are valid.
pub fn wrap_insert_dim(dim: i64, ndim: usize) -> Result<usize> {
    wrap_dim(dim, ndim + 1)
}

/// The broadcast shape of two shapes (numpy/PyTorch rules).
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Dims> {
    let ndim = a.len().max(b.len());
    let mut out: Dims = SmallVec::from_elem(0, ndim);
    for i in 0..ndim {
        let da = if i + a.len() >= ndim {
            a[i + a.len() - ndim]
        } else {
            1
        };
        let db = if i + b.len() >= ndim {
            b[i + b.len() - ndim]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::BroadcastMismatch {
                size_a: da,
                size_b: db,
                dim: i,
            });
        };
    }
    Ok(out)
}

/// Resolves a requested shape that may contain one `-1` against `numel` elements.
pub fn infer_shape(requested: &[i64], numel: usize) -> Result<Dims> {
    let invalid = || Error::InvalidShape {
        shape: requested.to_vec(),
        numel,
    };
    let mut inferred = None;
    let mut known: usize = 1;
    for (i, &s) in requested.iter().enumerate() {
        if s == -1 {
            if inferred.is_some() {
                return Err(Error::InvalidArgument(
                    "only one dimension can be inferred".into(),
                ));
            }
            inferred = Some(i);
        } else if s < 0 {
            return Err(Error::InvalidArgument(format!(
                "invalid shape dimension {s}"
            )));
        } else {
            known *= s as usize;
        }
    }
    let mut out: Dims = requested.iter().map(|&s| s.max(0) as usize).collect();
    match inferred {
        Some(i) => {
            if known == 0 || numel % known != 0 {
                return Err(invalid());
            }
            out[i] = numel / known;
        }
        None if known != numel => return Err(invalid()),
        None => {}
    }
    Ok(out)
}

/// Converts sizes given as i64 (from users) into a shape, rejecting negatives and
/// element counts that overflow.
pub fn checked_shape(sizes: &[i64]) -> Result<Dims> {
    let shape: Dims = sizes
        .iter()
        .map(|&s| {
            usize::try_from(s).map_err(|_| {
                Error::InvalidArgument(format!(
                    "Trying to create tensor with negative dimension {s}: {sizes:?}"
                ))
            })
        })
        .collect::<Result<Dims>>()?;
    checked_numel(&shape)?;
    Ok(shape)
}

/// Number of elements of a shape, or an error when it overflows.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &s| acc.checked_mul(s))
        .ok_or(Error::OutOfMemory { bytes: usize::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy_rules() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap().as_slice(), &[3, 4]);
        assert_eq!(broadcast_shapes(&[], &[2, 2]).unwrap().as_slice(), &[2, 2]);
        assert!(matches!(
            broadcast_shapes(&[3], &[4]),
            Err(Error::BroadcastMismatch {
                size_a: 3,
                size_b: 4,
                dim: 0
            })
        ));
    }

    #[test]
    fn wrap_dim_accepts_negative_and_rejects_out_of_range() {
        assert_eq!(wrap_dim(-1, 3).unwrap(), 2);
        assert_eq!(wrap_dim(0, 0).unwrap(), 0);
        assert!(matches!(
            wrap_dim(3, 3),
            Err(Error::DimOutOfRange {
                min: -3,
                max: 2,
                ..
            })
        ));
    }

    #[test]
    fn infer_shape_fills_minus_one() {
        assert_eq!(infer_shape(&[-1, 2], 6).unwrap().as_slice(), &[3, 2]);
        assert!(infer_shape(&[4, 2], 6).is_err());
        assert!(infer_shape(&[-1, 4], 6).is_err());
    }
}
