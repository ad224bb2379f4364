//! Batched matrix multiply on strided operands through `matrixmultiply`'s SIMD GEMM.
//! Work is split by batch and by fixed blocks of rows, so each output element is
//! computed by the same sequence of operations whatever the thread count.

use super::for_each_strided;
use crate::parallel::{self, PARALLEL_MIN_ELEMENTS};
use rayon::prelude::*;

/// Rows of the output computed by one task.
const ROW_BLOCK: usize = 64;

/// Float types with a GEMM kernel.
pub trait Gemm: crate::dtype::Float {
    /// `c = a @ b` for one strided matrix each (`c` row-major `m x n`, overwritten).
    ///
    /// # Safety
    /// `a` and `b` must be valid for reads at every index their strides reach for the
    /// given sizes, and `c` valid for writes of `m * n` elements.
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
        c: *mut Self,
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
                c: *mut Self,
            ) {
                // SAFETY: forwarded from this function's contract.
                unsafe {
                    $f(
                        m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, n as isize, 1,
                    )
                }
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

/// `out[batch] = a[batch] @ b[batch]` for `a: m x k`, `b: k x n`; returns the
/// contiguous `batch_shape + [m, n]` result.
pub fn matmul<T: Gemm>(
    batch_shape: &[usize],
    (m, k, n): (usize, usize, usize),
    a: &MatOperand<'_, T>,
    b: &MatOperand<'_, T>,
) -> Vec<T> {
    let batches: usize = batch_shape.iter().product();
    let mut out = vec![T::ZERO; batches * m * n];
    if out.is_empty() || k == 0 {
        return out;
    }
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
        // SAFETY: the tensor layer checked that every index reachable through these
        // layouts lies inside the storages, and `c` holds exactly `rows * n` elements.
        unsafe {
            T::gemm(
                rows,
                k,
                n,
                a.data.as_ptr().add(a_start),
                a.row_stride as isize,
                a.col_stride as isize,
                b.data.as_ptr().add(b_offsets[batch]),
                b.row_stride as isize,
                b.col_stride as isize,
                c.as_mut_ptr(),
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
        parallel::install(|| {
            out.par_chunks_mut(m * n)
                .enumerate()
                .for_each(|(batch, c)| {
                    c.par_chunks_mut(ROW_BLOCK * n)
                        .enumerate()
                        .for_each(|(rb, cb)| block(batch, rb, cb));
                });
        });
    }
    out
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
        assert_eq!(matmul(&[], (2, 2, 2), &a, &b), vec![1.0, 2.0, 3.0, 4.0]);
    }
}
