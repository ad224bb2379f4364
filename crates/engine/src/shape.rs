//! Shape arithmetic: dimension wrapping, broadcasting, `-1` inference.

use crate::error::{Error, Result};
use smallvec::SmallVec;

/// A small inline vector of sizes or strides; tensors rarely have more than 6 dims.
pub type Dims = SmallVec<[usize; 6]>;

/// Largest element count, stride product or storage offset a tensor may have: PyTorch
/// keeps them in `int64_t`. See Note [Checked size arithmetic].
pub const MAX_NUMEL: usize = i64::MAX as usize;

/// Number of elements of a shape (1 for a 0-d tensor). Unchecked: only for shapes
/// already validated (every `Layout` is; see [`checked_numel`]).
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

/// Wraps a dim like [`wrap_dim`], except that a 0-d tensor has no dims at all: PyTorch's
/// `size(dim)` and `stride(dim)` raise "Dimension specified as 0 but tensor has no
/// dimensions" instead of treating the scalar as one-dimensional.
pub fn wrap_dim_strict(dim: i64, ndim: usize) -> Result<usize> {
    if ndim == 0 {
        return Err(Error::NoDimensions { dim });
    }
    wrap_dim(dim, ndim)
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
            known = known
                .checked_mul(s as usize)
                .filter(|&k| k <= MAX_NUMEL)
                .ok_or(Error::NumelOverflow)?;
        }
    }
    let mut out: Dims = requested.iter().map(|&s| s.max(0) as usize).collect();
    match inferred {
        Some(i) => {
            if known == 0 || !numel.is_multiple_of(known) {
                return Err(invalid());
            }
            out[i] = numel / known;
        }
        None if known != numel => return Err(invalid()),
        None => {}
    }
    Ok(out)
}

/// Converts sizes given as i64 (from users) into the shape of a new tensor, rejecting
/// negatives and element counts that overflow ("Storage size calculation overflowed",
/// as PyTorch's factories say).
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
    checked_storage_bytes(&shape, 1)?;
    Ok(shape)
}

/// Number of elements of a shape, or `NumelOverflow` when it exceeds [`MAX_NUMEL`]
/// (PyTorch's `safe_compute_numel`: an empty shape with huge other sizes is fine).
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &s| acc.checked_mul(s))
        .filter(|&n| n <= MAX_NUMEL)
        .ok_or(Error::NumelOverflow)
}

/// Bytes of a new contiguous tensor of `shape` with elements of `itemsize` bytes, or
/// `StorageSizeOverflow` when that exceeds [`MAX_NUMEL`] (PyTorch's
/// `computeStorageNbytesContiguous`).
pub fn checked_storage_bytes(shape: &[usize], itemsize: usize) -> Result<usize> {
    checked_numel(shape)
        .ok()
        .and_then(|n| n.checked_mul(itemsize))
        .filter(|&b| b <= MAX_NUMEL)
        .ok_or_else(|| Error::StorageSizeOverflow {
            sizes: shape.to_vec(),
        })
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
            wrap_dim_strict(0, 0),
            Err(Error::NoDimensions { dim: 0 })
        ));
        assert_eq!(wrap_dim_strict(-1, 2).unwrap(), 1);
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
    fn size_products_that_overflow_are_errors() {
        // Wrapping would give 0 elements (2^64) or a negative int64 (2^63).
        assert_eq!(checked_numel(&[1024, 1 << 54]), Err(Error::NumelOverflow));
        assert_eq!(checked_numel(&[1 << 62, 2]), Err(Error::NumelOverflow));
        assert_eq!(checked_numel(&[0, 1 << 62, 1 << 62]), Ok(0));
        assert_eq!(infer_shape(&[1024, 1 << 54], 0), Err(Error::NumelOverflow));
        assert!(matches!(
            checked_shape(&[1 << 31, 1 << 31]).and_then(|s| checked_storage_bytes(&s, 4)),
            Err(Error::StorageSizeOverflow { .. })
        ));
        assert!(matches!(
            checked_shape(&[1 << 62, 2]),
            Err(Error::StorageSizeOverflow { .. })
        ));
    }

    #[test]
    fn infer_shape_fills_minus_one() {
        assert_eq!(infer_shape(&[-1, 2], 6).unwrap().as_slice(), &[3, 2]);
        assert!(infer_shape(&[4, 2], 6).is_err());
        assert!(infer_shape(&[-1, 4], 6).is_err());
    }
}
