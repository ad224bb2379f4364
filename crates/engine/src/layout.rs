//! Layout: shape, strides and storage offset of a strided view. All view ops are pure
//! functions from one layout to another; no data moves.

use crate::error::{Error, Result};
use crate::shape::{self, Dims};
use smallvec::SmallVec;

/// Where a tensor's elements live inside its storage: element `(i0, i1, ...)` is at
/// `offset + i0 * strides[0] + i1 * strides[1] + ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    shape: Dims,
    strides: Dims,
    offset: usize,
}

/// Row-major strides of a shape.
///
/// For a non-empty shape whose element count fits (every `Layout`'s does) the products
/// cannot overflow. An empty shape may have sizes whose product does (`(0, 2**62,
/// 2**62)`); its strides address nothing, so they saturate instead of wrapping.
pub fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut strides: Dims = SmallVec::from_elem(1, shape.len());
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc = acc.saturating_mul(shape[i].max(1));
    }
    strides
}

impl Layout {
    /// A row-major layout of `shape` starting at offset 0.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: shape.into(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    /// A layout from explicit parts.
    pub fn new(shape: Dims, strides: Dims, offset: usize) -> Self {
        Layout {
            shape,
            strides,
            offset,
        }
    }

    /// Sizes of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Element strides of each dimension.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Offset of the first element in the storage.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        shape::numel(&self.shape)
    }

    /// Whether elements are laid out row-major without gaps (sizes-1 dims ignored). An
    /// empty layout is contiguous whatever its strides, as PyTorch's
    /// `compute_contiguous` says.
    pub fn is_contiguous(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        let mut expected = 1usize;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] != 1 {
                if self.strides[i] != expected {
                    return false;
                }
                expected *= self.shape[i];
            }
        }
        true
    }

    /// Whether no two elements share a storage index (no stride-0 dim of size > 1, no
    /// overlapping strides). Sufficient test: sorted by stride, each dim's stride exceeds
    /// the span of the smaller ones.
    pub fn is_non_overlapping(&self) -> bool {
        let mut dims: SmallVec<[(usize, usize); 6]> = self
            .shape
            .iter()
            .zip(&self.strides)
            .filter(|(&size, _)| size > 1)
            .map(|(&size, &stride)| (stride, size))
            .collect();
        dims.sort_unstable();
        let mut span = 0usize;
        for (stride, size) in dims {
            if stride <= span {
                return false;
            }
            span = span.saturating_add((size - 1).saturating_mul(stride));
        }
        true
    }

    /// One past the largest storage index this layout touches: the storage length it
    /// needs. 0 when empty, whatever the offset (an empty view past the end of its
    /// buffer, like `zeros(3, 0)[2]`, needs nothing), as PyTorch's
    /// `computeStorageNbytes`. `NumelOverflow` when the sum does not fit.
    /// See Note [Checked size arithmetic].
    pub fn storage_extent(&self) -> Result<usize> {
        if self.shape.contains(&0) {
            return Ok(0);
        }
        let mut max_offset = self.offset;
        for (&size, &stride) in self.shape.iter().zip(&self.strides) {
            max_offset = (size - 1)
                .checked_mul(stride)
                .and_then(|reach| max_offset.checked_add(reach))
                .ok_or(Error::NumelOverflow)?;
        }
        max_offset
            .checked_add(1)
            .filter(|&e| e <= shape::MAX_NUMEL)
            .ok_or(Error::NumelOverflow)
    }

    /// The dims from outermost to innermost in PyTorch's memory order of this layout
    /// (`infer_dense_strides`, whose sort is TensorIterator's: dims by stride, a stride
    /// of 0 compares as "ambiguous" and keeps the row-major order, equal strides put the
    /// smaller size inside). The order `preserve_format` lays a new tensor out in.
    pub fn dense_order(&self) -> Vec<usize> {
        let (shape, strides) = (&self.shape, &self.strides);
        let ndim = shape.len();
        // perm[0] is the innermost dim; start from row-major.
        let mut perm: Vec<usize> = (0..ndim).rev().collect();
        let should_swap = |d0: usize, d1: usize| -> std::cmp::Ordering {
            use std::cmp::Ordering::{Equal, Greater, Less};
            let (s0, s1) = (strides[d0], strides[d1]);
            if s0 == 0 || s1 == 0 {
                Equal
            } else if s0 < s1 {
                Less
            } else if s0 > s1 || shape[d0] > shape[d1] {
                Greater
            } else {
                Equal
            }
        };
        // TensorIterator's insertion sort (stable, ambiguous pairs are skipped).
        for i in 1..ndim {
            let mut dim1 = i;
            for dim0 in (0..i).rev() {
                match should_swap(perm[dim0], perm[dim1]) {
                    std::cmp::Ordering::Greater => {
                        perm.swap(dim0, dim1);
                        dim1 = dim0;
                    }
                    std::cmp::Ordering::Less => break,
                    std::cmp::Ordering::Equal => {}
                }
            }
        }
        perm.reverse();
        perm
    }

    /// The strides of a new tensor made from this layout with PyTorch's
    /// `memory_format=torch.preserve_format` (`clone`, `empty_like` and the other `*_like`
    /// factories): these strides when the layout is non-overlapping and dense, else
    /// dense strides in [`Layout::dense_order`] (`infer_dense_strides`: a size of 0 or
    /// 1 does not grow the stride), so `b[:, :3].t()` of a 4×4 `b` gives `(1, 3)`.
    pub fn preserved_strides(&self) -> Dims {
        if self.is_non_overlapping_and_dense() {
            return self.strides.clone();
        }
        let mut strides: Dims = SmallVec::from_elem(1, self.ndim());
        let mut step = 1usize;
        for &d in self.dense_order().iter().rev() {
            strides[d] = step;
            step = step.saturating_mul(self.shape[d].max(1));
        }
        strides
    }

    /// The bytes a storage needs for this layout with `itemsize`-byte elements:
    /// PyTorch's `computeStorageNbytes` (0 when empty; `(offset + 1 + Σ (size−1)·stride)
    /// · itemsize` otherwise), with its "Storage size calculation overflowed with
    /// sizes=[..] and strides=[..]" when that does not fit in an `i64`, so the message
    /// names the layout instead of a capped byte count. See Note [Checked size
    /// arithmetic].
    pub fn storage_nbytes(&self, itemsize: usize) -> Result<usize> {
        let overflow = || Error::StridedStorageSizeOverflow {
            sizes: self.shape.to_vec(),
            strides: self.strides.to_vec(),
        };
        if self.shape.contains(&0) {
            return Ok(0);
        }
        let mut size = self.offset.checked_add(1).ok_or_else(overflow)?;
        for (&n, &stride) in self.shape.iter().zip(&self.strides) {
            size = (n - 1)
                .checked_mul(stride)
                .and_then(|reach| size.checked_add(reach))
                .ok_or_else(overflow)?;
        }
        size.checked_mul(itemsize)
            .filter(|&bytes| bytes <= shape::MAX_NUMEL)
            .ok_or_else(overflow)
    }

    /// Checks that every element this layout addresses lies inside a storage of `len`
    /// elements (always true when empty). O(ndim), no allocation: kernels call it at
    /// entry. See Note [Checked size arithmetic].
    pub fn check_in_bounds(&self, len: usize) -> Result<()> {
        match self.storage_extent() {
            Ok(needed) if needed <= len => Ok(()),
            extent => Err(Error::OutOfBounds {
                sizes: self.shape.to_vec(),
                strides: self.strides.to_vec(),
                offset: self.offset,
                needed: extent.unwrap_or(usize::MAX),
                len,
            }),
        }
    }

    /// PyTorch's `is_non_overlapping_and_dense`: the elements fill a contiguous range
    /// of the storage exactly once, in some dimension order. An empty tensor is (PyTorch
    /// computes `is_contiguous() || ...`, and an empty tensor is contiguous), whatever
    /// its strides: `zeros(1).expand(0, 3)` has no overlap to refuse writes for.
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        let mut dims: SmallVec<[usize; 6]> =
            (0..self.ndim()).filter(|&d| self.shape[d] >= 2).collect();
        dims.sort_unstable_by_key(|&d| self.strides[d]);
        let mut required = 1usize;
        for d in dims {
            if self.strides[d] != required {
                return false;
            }
            required = required.saturating_mul(self.shape[d]);
        }
        true
    }

    /// PyTorch's `has_internal_overlap` answering "yes": some dim of size > 1 has
    /// stride 0, so several elements are one memory location. (Overlap that only an
    /// arbitrary `as_strided` can make is "too hard" to detect there, and here.)
    pub fn has_internal_overlap(&self) -> bool {
        !self.is_non_overlapping_and_dense()
            && self
                .shape
                .iter()
                .zip(&self.strides)
                .any(|(&size, &stride)| stride == 0 && size > 1)
    }

    /// Swaps two dimensions.
    pub fn transpose(&self, dim0: usize, dim1: usize) -> Layout {
        let mut out = self.clone();
        out.shape.swap(dim0, dim1);
        out.strides.swap(dim0, dim1);
        out
    }

    /// Reorders dimensions; `dims` must be a permutation (checked by the caller).
    pub fn permute(&self, dims: &[usize]) -> Layout {
        Layout {
            shape: dims.iter().map(|&d| self.shape[d]).collect(),
            strides: dims.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        }
    }

    /// Broadcasts to `target` by giving new and size-1 dims stride 0.
    pub fn broadcast_to(&self, target: &[usize]) -> Result<Layout> {
        let nd = target.len();
        if nd < self.ndim() {
            return Err(self.expand_error(target));
        }
        shape::checked_numel(target)?;
        let lead = nd - self.ndim();
        let mut strides: Dims = SmallVec::from_elem(0, nd);
        for i in 0..nd {
            if i < lead {
                continue;
            }
            let (s, st) = (self.shape[i - lead], self.strides[i - lead]);
            if s == target[i] {
                strides[i] = st;
            } else if s == 1 {
                strides[i] = 0;
            } else {
                return Err(self.size_mismatch_error(target, i));
            }
        }
        Ok(Layout {
            shape: target.into(),
            strides,
            offset: self.offset,
        })
    }

    /// PyTorch's message for a target size that differs from a non-1 size at `dim`.
    fn size_mismatch_error(&self, target: &[usize], dim: usize) -> Error {
        let list = |v: &[usize]| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let lead = target.len() - self.ndim();
        Error::InvalidArgument(format!(
            "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {dim}.  Target sizes: [{}].  Tensor sizes: [{}]",
            target[dim],
            self.shape[dim - lead],
            list(target),
            list(&self.shape)
        ))
    }

    fn expand_error(&self, target: &[usize]) -> Error {
        Error::ShapeMismatch {
            op: "expand",
            message: format!(
                "The expanded size of the tensor must match the existing size at non-singleton dimensions. Target sizes: {:?}. Tensor sizes: {:?}",
                target,
                self.shape.as_slice()
            ),
        }
    }

    /// Inserts a size-1 dimension at `dim` (already wrapped into `0..=ndim`).
    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut out = self.clone();
        // Saturating: the new dim has size 1, so its stride addresses nothing.
        let stride = if dim < self.ndim() {
            self.strides[dim].saturating_mul(self.shape[dim])
        } else {
            1
        };
        out.shape.insert(dim, 1);
        out.strides.insert(dim, stride);
        out
    }

    /// Removes the given dims, which must all have size 1.
    pub fn remove_unit_dims(&self, dims: &[usize]) -> Layout {
        let mut out = Layout {
            shape: SmallVec::new(),
            strides: SmallVec::new(),
            offset: self.offset,
        };
        for i in 0..self.ndim() {
            if !dims.contains(&i) {
                out.shape.push(self.shape[i]);
                out.strides.push(self.strides[i]);
            }
        }
        out
    }

    /// `start:end:step` along `dim`, with bounds already clamped by the caller
    /// (`start <= end <= size`).
    ///
    /// Offsets and strides saturate: for a non-empty result they stay within the
    /// source's extent (`start < size`, and a stride times `step` reaches an element
    /// only when the result has 2 elements or more), so saturation only happens where
    /// nothing is addressed (an empty result, a size-1 dim).
    pub fn slice(&self, dim: usize, start: usize, end: usize, step: usize) -> Layout {
        let mut out = self.clone();
        let len = if end > start {
            (end - start).div_ceil(step)
        } else {
            0
        };
        out.offset = out
            .offset
            .saturating_add(start.saturating_mul(self.strides[dim]));
        out.shape[dim] = len;
        out.strides[dim] = out.strides[dim].saturating_mul(step);
        out
    }

    /// Element `index` of `dim`, removing the dim (`index < size`, checked by the
    /// caller; saturating for the same reason as `slice`).
    pub fn select(&self, dim: usize, index: usize) -> Layout {
        let mut out = self.clone();
        out.offset = out
            .offset
            .saturating_add(index.saturating_mul(self.strides[dim]));
        out.shape.remove(dim);
        out.strides.remove(dim);
        out
    }

    /// A layout of `new_shape` over the same elements without copying, when the
    /// strides allow it (PyTorch's `computeStride`); `None` when a copy is needed.
    pub fn view(&self, new_shape: &[usize]) -> Option<Layout> {
        let old_numel = self.numel();
        if old_numel == 0 || self.is_contiguous() {
            let mut out = Layout::contiguous(new_shape);
            out.offset = self.offset;
            return Some(out);
        }
        // Walk chunks of old dims that are contiguous with each other and match them
        // against runs of new dims with the same element count.
        let mut new_strides: Dims = SmallVec::from_elem(0, new_shape.len());
        let mut view_d = new_shape.len() as isize - 1;
        let mut chunk_base_stride = *self.strides.last()?;
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..self.ndim()).rev() {
            tensor_numel *= self.shape[tensor_d];
            let chunk_ends = tensor_d == 0
                || (self.shape[tensor_d - 1] != 1
                    && self.strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
            if chunk_ends {
                while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1)
                {
                    new_strides[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= new_shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = self.strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout {
            shape: new_shape.into(),
            strides: new_strides,
            offset: self.offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_nbytes_is_computestoragenbytes() {
        // PyTorch: (offset + 1 + sum (size - 1) * stride) * itemsize; 0 when empty.
        assert_eq!(
            Layout::new(Dims::from_slice(&[2, 3]), Dims::from_slice(&[3, 1]), 2)
                .storage_nbytes(4)
                .unwrap(),
            32
        );
        assert_eq!(
            Layout::new(
                Dims::from_slice(&[0, 3]),
                Dims::from_slice(&[1 << 62, 1]),
                9
            )
            .storage_nbytes(8)
            .unwrap(),
            0
        );
        // The element reach fits, the bytes do not: the error names the layout
        // (PyTorch's message for `as_strided((2**61,), (2,))` of float32).
        let err = Layout::new(Dims::from_slice(&[1 << 61]), Dims::from_slice(&[2]), 0)
            .storage_nbytes(4)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Storage size calculation overflowed with sizes=[2305843009213693952] and strides=[2]"
        );
        let l = Layout::new(
            Dims::from_slice(&[1 << 31, 1 << 31]),
            Dims::from_slice(&[1 << 31, 1]),
            0,
        );
        assert!(matches!(
            l.storage_nbytes(4),
            Err(Error::StridedStorageSizeOverflow { .. })
        ));
    }

    #[test]
    fn transpose_is_not_contiguous_and_views_back() {
        let l = Layout::contiguous(&[2, 3]);
        let t = l.transpose(0, 1);
        assert_eq!(t.strides(), &[1, 3]);
        assert!(!t.is_contiguous());
        assert!(t.view(&[6]).is_none());
        // PyTorch gives (1, 3, 3) for `zeros(2, 3).t().view(3, 2, 1).stride()`.
        assert_eq!(t.view(&[3, 2, 1]).unwrap().strides(), &[1, 3, 3]);
    }

    #[test]
    fn slice_and_select_move_the_offset() {
        let l = Layout::contiguous(&[4, 5]);
        let s = l.slice(1, 1, 5, 2);
        assert_eq!(
            (s.shape(), s.strides(), s.offset()),
            (&[4, 2][..], &[5, 2][..], 1)
        );
        let r = l.select(0, 2);
        assert_eq!((r.shape(), r.offset()), (&[5][..], 10));
    }

    #[test]
    fn extent_of_empty_views_is_zero_and_overflow_is_an_error() {
        // zeros(3, 0)[2]: offset 2 past an empty buffer, addresses nothing.
        let empty = Layout::contiguous(&[3, 0]).select(0, 2);
        assert_eq!(empty.storage_extent(), Ok(0));
        assert!(empty.check_in_bounds(0).is_ok());
        let huge = Layout::new(
            smallvec::smallvec![2, 2],
            smallvec::smallvec![usize::MAX / 2, 1],
            5,
        );
        assert_eq!(huge.storage_extent(), Err(Error::NumelOverflow));
        assert!(huge.check_in_bounds(usize::MAX).is_err());
        assert!(Layout::contiguous(&[2, 3]).check_in_bounds(6).is_ok());
        assert!(Layout::contiguous(&[2, 3]).check_in_bounds(5).is_err());
        let expanded = Layout::contiguous(&[1]).broadcast_to(&[1 << 32, 1 << 32]);
        assert_eq!(expanded, Err(Error::NumelOverflow));
    }

    #[test]
    fn overlap_classification_follows_pytorch() {
        let l = Layout::contiguous(&[3, 3]);
        assert!(l.is_non_overlapping_and_dense());
        assert!(l.transpose(0, 1).is_non_overlapping_and_dense());
        assert!(!l.slice(0, 0, 3, 2).is_non_overlapping_and_dense());
        let expanded = Layout::contiguous(&[1]).broadcast_to(&[3]).unwrap();
        assert!(expanded.has_internal_overlap());
        assert!(!l.has_internal_overlap());
        assert!(!l.slice(0, 0, 3, 2).has_internal_overlap());
        let empty = Layout::contiguous(&[1]).broadcast_to(&[0, 3]).unwrap();
        assert!(empty.is_non_overlapping_and_dense());
        assert!(!empty.has_internal_overlap());
    }

    #[test]
    fn broadcast_gives_zero_strides() {
        let l = Layout::contiguous(&[3, 1]);
        let b = l.broadcast_to(&[2, 3, 4]).unwrap();
        assert_eq!(b.strides(), &[0, 1, 0]);
        assert!(l.broadcast_to(&[3, 2]).is_ok());
        assert!(Layout::contiguous(&[3]).broadcast_to(&[4]).is_err());
    }
}
