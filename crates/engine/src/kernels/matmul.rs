//! Batched matrix multiply on strided operands through `matrixmultiply`'s SIMD GEMM.
//! Work is split by batch and by fixed blocks of rows, so each output element is
//! computed by the same sequence of operations whatever the thread count.

use super::{for_each_strided, try_vec};
use crate::error::{Error, Result};
use crate::parallel::{self, PARALLEL_MIN_ELEMENTS};

/// Rows of the output computed by one task.
const ROW_BLOCK: usize = 64;

/// Float types with a GEMM kernel (matrixmultiply's), shared by `matmul` and the
/// convolution kernels.
pub trait Gemm: crate::dtype::Float {
    /// `c = a @ b + beta * c` for strided `a` (`m x k`), `b` (`k x n`) and `c` (`m x n`,
    /// row stride `rsc`, column stride 1). With `beta == 0`, `c` is only written.
    ///
    /// # Safety
    /// `a` and `b` must be valid for reads at every index their strides reach for the
    /// given sizes, and `c` valid for reads and writes at every index its row stride
    /// reaches, not aliased by `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        beta: Self,
        c: *mut Self,
        rsc: isize,
    );
}

macro_rules! impl_gemm {
    ($t:ty, $f:path) => {
        impl Gemm for $t {
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                a: *const Self,
                rsa: isize,
                csa: isize,
                b: *const Self,
                rsb: isize,
                csb: isize,
                beta: Self,
                c: *mut Self,
                rsc: isize,
            ) {
                // SAFETY: the caller guarantees (this function's contract) that `a`, `b`
                // and `c` are valid for every index these sizes and strides reach, which
                // is `matrixmultiply`'s contract.
                unsafe { $f(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, beta, c, rsc, 1) }
            }
        }
    };
}
impl_gemm!(f32, matrixmultiply::sgemm);
impl_gemm!(f64, matrixmultiply::dgemm);

/// One operand: its elements, the strides of its batch dims (broadcast to the output
/// batch shape, 0 where broadcast), its offset, and its matrix row/column strides.
pub struct MatOperand<'a, T> {
    /// The storage elements.
    pub data: &'a [T],
    /// Strides of the batch dims, aligned with the output's batch shape.
    pub batch_strides: &'a [usize],
    /// Storage offset of the first element.
    pub offset: usize,
    /// Stride between rows.
    pub row_stride: usize,
    /// Stride between columns.
    pub col_stride: usize,
}

impl<T> MatOperand<'_, T> {
    /// Checks that every element of this `batch_shape + [rows, cols]` operand lies
    /// inside `data` (nothing to check when it is empty). O(ndim), before any raw
    /// pointer is formed. See Note [Checked size arithmetic].
    fn check_in_bounds(&self, batch_shape: &[usize], rows: usize, cols: usize) -> Result<()> {
        if self.batch_strides.len() != batch_shape.len() {
            return Err(Error::InvalidArgument(format!(
                "matmul: {} batch strides for {} batch dims",
                self.batch_strides.len(),
                batch_shape.len()
            )));
        }
        let sizes = batch_shape.iter().chain([&rows, &cols]);
        let strides = self
            .batch_strides
            .iter()
            .chain([&self.row_stride, &self.col_stride]);
        let layout = crate::layout::Layout::new(
            sizes.copied().collect(),
            strides.copied().collect(),
            self.offset,
        );
        layout.check_in_bounds(self.data.len())
    }
}

/// `out[batch] = a[batch] @ b[batch]` for `a: m x k`, `b: k x n`; returns the
/// contiguous `batch_shape + [m, n]` result.
///
/// Fails (before touching memory) when an operand's strides reach outside its
/// `data`, when the output size overflows, or when it cannot be allocated.
pub fn matmul<T: Gemm>(
    batch_shape: &[usize],
    (m, k, n): (usize, usize, usize),
    a: &MatOperand<'_, T>,
    b: &MatOperand<'_, T>,
) -> Result<Vec<T>> {
    a.check_in_bounds(batch_shape, m, k)?;
    b.check_in_bounds(batch_shape, k, n)?;
    let mut out_shape: crate::shape::Dims = batch_shape.into();
    out_shape.extend_from_slice(&[m, n]);
    let batches: usize = crate::shape::checked_numel(batch_shape)?;
    let mut out = try_vec(crate::shape::checked_numel(&out_shape)?, T::ZERO)?;
    if out.is_empty() || k == 0 {
        return Ok(out);
    }
    // Row and column strides are passed to the GEMM as isize.
    let to_isize = |s: usize| isize::try_from(s).map_err(|_| Error::NumelOverflow);
    let (rsa, csa) = (to_isize(a.row_stride)?, to_isize(a.col_stride)?);
    let (rsb, csb) = (to_isize(b.row_stride)?, to_isize(b.col_stride)?);
    // `batches <= out.len()`, which was just allocated.
    let mut a_offsets = Vec::with_capacity(batches);
    let mut b_offsets = Vec::with_capacity(batches);
    for_each_strided(
        batch_shape,
        [a.batch_strides, b.batch_strides],
        [a.offset, b.offset],
        0,
        batches,
        |_, [oa, ob]| {
            a_offsets.push(oa);
            b_offsets.push(ob);
        },
    );
    let block = |batch: usize, row_block: usize, c: &mut [T]| {
        let row0 = row_block * ROW_BLOCK;
        let rows = c.len() / n;
        let a_start = a_offsets[batch] + row0 * a.row_stride;
        // SAFETY: `check_in_bounds` above proved that for every batch index, row < m,
        // inner index < k and column < n, `offset + batch offset + row * row_stride +
        // col * col_stride` (without overflow) is below `data.len()` for `a` and `b`.
        // `a_start` is that sum for row `row0` (< m) and column 0, and the GEMM reaches
        // rows `row0..row0 + rows` (<= m) and columns `..k` from it; `b_offsets[batch]`
        // is that sum for row 0 and column 0, reaching `..k` rows and `..n` columns. So
        // both pointers and every element the GEMM reads stay inside the slices. `c` is
        // a `rows * n` chunk of `out`, exactly the `rows x n` row-major matrix written.
        // Strides were converted to isize without loss.
        unsafe {
            T::gemm(
                rows,
                k,
                n,
                a.data.as_ptr().add(a_start),
                rsa,
                csa,
                b.data.as_ptr().add(b_offsets[batch]),
                rsb,
                csb,
                T::ZERO,
                c.as_mut_ptr(),
                n as isize,
            )
        }
    };
    let work = batches * m * n * k;
    if work < PARALLEL_MIN_ELEMENTS * 16 {
        for (batch, c) in out.chunks_mut(m * n).enumerate() {
            for (rb, cb) in c.chunks_mut(ROW_BLOCK * n).enumerate() {
                block(batch, rb, cb);
            }
        }
    } else {
        parallel::for_each_chunk_mut(&mut out, m * n, |batch, c| {
            parallel::for_each_chunk_mut(c, ROW_BLOCK * n, |rb, cb| block(batch, rb, cb));
        });
    }
    Ok(out)
}

/// `out[batch] = a[batch] @ b[batch]` of int64 matrices with wrapping arithmetic (the
/// integer matmul PyTorch's CPU kernels compute; narrower integers are computed on their
/// int64 values and truncated, which gives the same bits). Safe indexing, no GEMM.
pub fn matmul_i64(
    batch_shape: &[usize],
    (m, k, n): (usize, usize, usize),
    a: &MatOperand<'_, i64>,
    b: &MatOperand<'_, i64>,
) -> Result<Vec<i64>> {
    a.check_in_bounds(batch_shape, m, k)?;
    b.check_in_bounds(batch_shape, k, n)?;
    let batches: usize = crate::shape::checked_numel(batch_shape)?;
    let mut out = try_vec(
        batches
            .checked_mul(m)
            .and_then(|x| x.checked_mul(n))
            .ok_or(Error::NumelOverflow)?,
        0i64,
    )?;
    if out.is_empty() || k == 0 {
        return Ok(out);
    }
    let mut offsets = Vec::with_capacity(batches);
    for_each_strided(
        batch_shape,
        [a.batch_strides, b.batch_strides],
        [a.offset, b.offset],
        0,
        batches,
        |_, [oa, ob]| offsets.push((oa, ob)),
    );
    for (c, &(oa, ob)) in out.chunks_mut(m * n).zip(&offsets) {
        for i in 0..m {
            for p in 0..k {
                let x = a.data[oa + i * a.row_stride + p * a.col_stride];
                let row = ob + p * b.row_stride;
                for (j, cij) in c[i * n..(i + 1) * n].iter_mut().enumerate() {
                    *cij = cij.wrapping_add(x.wrapping_mul(b.data[row + j * b.col_stride]));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplies_a_transposed_operand() {
        // a = [[1, 2], [3, 4]] stored transposed; b = identity.
        let a_data = [1.0f64, 3.0, 2.0, 4.0];
        let b_data = [1.0f64, 0.0, 0.0, 1.0];
        let a = MatOperand {
            data: &a_data,
            batch_strides: &[],
            offset: 0,
            row_stride: 1,
            col_stride: 2,
        };
        let b = MatOperand {
            data: &b_data,
            batch_strides: &[],
            offset: 0,
            row_stride: 2,
            col_stride: 1,
        };
        assert_eq!(
            matmul(&[], (2, 2, 2), &a, &b).unwrap(),
            vec![1.0, 2.0, 3.0, 4.0]
        );
    }

    #[test]
    fn rejects_operands_that_reach_outside_their_data() {
        let data = [1.0f64; 4];
        let ok = MatOperand {
            data: &data,
            batch_strides: &[],
            offset: 0,
            row_stride: 2,
            col_stride: 1,
        };
        let past_end = MatOperand { offset: 1, ..ok };
        assert!(matches!(
            matmul(&[], (2, 2, 2), &past_end, &ok),
            Err(Error::OutOfBounds { .. })
        ));
        // A batch stride that wraps the offset arithmetic.
        let wrapping = MatOperand {
            batch_strides: &[usize::MAX / 2],
            ..ok
        };
        assert!(matmul(&[3], (2, 2, 2), &wrapping, &wrapping).is_err());
        // An empty operand reaches nothing, whatever its offset.
        let empty: [f64; 0] = [];
        let e = MatOperand {
            data: &empty,
            offset: 7,
            ..ok
        };
        assert_eq!(matmul(&[], (0, 2, 0), &e, &e).unwrap(), Vec::<f64>::new());
    }
}
