//! Data-parallel training's arithmetic: gradient buckets, the flat buffer a bucket is
//! all-reduced in, and the averaged values written back into the gradients. See
//! Note \[Distributed\].
//!
//! This module has no transport: the Python package drives MPI through mpi4py
//! (`rustgrad.distributed`), and its `DistributedDataParallel` uses exactly these
//! functions for its buckets, so the Python and Rust paths are one mechanism. A Rust
//! program drives the transport with any MPI binding. With the `mpi` crate, one
//! data-parallel step is (not compiled here: this crate has no MPI dependency):
//!
//! ```text
//! use mpi::collective::SystemOperation;
//! use mpi::traits::*;
//! use rustgrad::distributed::{assign_buckets, flatten_bucket, unflatten_bucket};
//! use rustgrad::distributed::{DEFAULT_BUCKET_CAP_BYTES, DEFAULT_FIRST_BUCKET_BYTES};
//!
//! let universe = mpi::initialize().unwrap();
//! let world = universe.world();
//! let params = net.parameters(); // Vec<Variable>, registration order
//! let tensors: Vec<Tensor> = params.iter().map(|p| p.tensor().clone()).collect();
//! let buckets = assign_buckets(&tensors, DEFAULT_FIRST_BUCKET_BYTES, DEFAULT_BUCKET_CAP_BYTES)?;
//! // (rank 0's parameters are broadcast once before training, e.g. with
//! //  world.process_at_rank(0).broadcast_into(&mut values) per parameter)
//! loss.backward()?;
//! for bucket in &buckets {
//!     let grads: Vec<Option<Tensor>> =
//!         bucket.indices().iter().map(|&i| params[i].grad().map(|g| g.tensor().clone())).collect();
//!     let refs: Vec<Option<&Tensor>> = grads.iter().map(Option::as_ref).collect();
//!     // grad / world_size of every parameter of the bucket, one contiguous buffer
//!     let flat = flatten_bucket(bucket, &refs, world.size() as usize)?;
//!     let mine = flat.to_vec::<f32>();
//!     let mut sum = vec![0f32; mine.len()];
//!     world.all_reduce_into(&mine[..], &mut sum[..], SystemOperation::sum());
//!     let reduced = Tensor::from_vec(sum, &[bucket.numel()])?;
//!     // the averages go back into each .grad in place; a missing .grad gets a new tensor
//!     for (k, new) in unflatten_bucket(bucket, &reduced, &refs)?.into_iter().enumerate() {
//!         if let Some(g) = new {
//!             params[bucket.indices()[k]].set_grad(Some(Variable::from_tensor(g)))?;
//!         }
//!     }
//! }
//! optimizer.step()?;
//! ```
//!
//! Everything here is deterministic: the assignment depends only on the parameters'
//! sizes and dtypes, and flattening and writing back are elementwise.

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::storage::WriteSite;
use crate::tensor::Tensor;
use std::panic::Location;

/// PyTorch's `dist._DEFAULT_FIRST_BUCKET_BYTES`: the first bucket's cap (1 MiB) when
/// the bucket size is left at its default, so communication starts early in backward.
pub const DEFAULT_FIRST_BUCKET_BYTES: usize = 1024 * 1024;

/// PyTorch DDP's default `bucket_cap_mb=25`, in bytes.
pub const DEFAULT_BUCKET_CAP_BYTES: usize = 25 * 1024 * 1024;

/// Parameters whose gradients are reduced together, in one flat buffer of one dtype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    indices: Vec<usize>,
    shapes: Vec<Vec<usize>>,
    offsets: Vec<usize>,
    numel: usize,
    dtype: DType,
}

impl Bucket {
    /// The parameters' indices (positions in the list given to [`assign_buckets`]), in
    /// their order in the flat buffer: decreasing, the order backward produces them.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// The parameters' shapes, in [`Bucket::indices`] order.
    pub fn shapes(&self) -> &[Vec<usize>] {
        &self.shapes
    }

    /// Where each parameter's gradient starts in the flat buffer (in elements).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// The flat buffer's number of elements.
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// The dtype of every parameter of the bucket (and of the flat buffer).
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The flat buffer's size in bytes.
    pub fn bytes(&self) -> usize {
        self.numel * self.dtype.size_in_bytes()
    }

    fn new(indices: Vec<usize>, params: &[Tensor]) -> Result<Bucket> {
        let mut offsets = Vec::with_capacity(indices.len());
        let mut numel = 0usize;
        for &i in &indices {
            offsets.push(numel);
            numel = numel
                .checked_add(params[i].numel())
                .ok_or(Error::NumelOverflow)?;
        }
        Ok(Bucket {
            shapes: indices
                .iter()
                .map(|&i| params[i].shape().to_vec())
                .collect(),
            dtype: params[indices[0]].dtype(),
            indices,
            offsets,
            numel,
        })
    }
}

/// PyTorch's `compute_bucket_assignment_by_size` as DDP uses it: `params` (in
/// registration order) are taken in reverse; each dtype has one open bucket, which a
/// parameter joins and which closes once its size reaches its cap: `first_bucket_bytes`
/// for a dtype's first bucket, `bucket_cap_bytes` for the next ones (DDP passes
/// [`DEFAULT_FIRST_BUCKET_BYTES`] only when `bucket_cap_mb` is left at its default;
/// otherwise both caps are `bucket_cap_mb`). The open buckets left at the end close,
/// and the buckets are ordered by their first (largest) index, decreasing: the order
/// backward completes them.
///
/// An empty `params` gives no bucket. Errors when a size overflows.
pub fn assign_buckets(
    params: &[Tensor],
    first_bucket_bytes: usize,
    bucket_cap_bytes: usize,
) -> Result<Vec<Bucket>> {
    // Per dtype: (indices, size in bytes, how many buckets of this dtype closed so far).
    let mut open: Vec<(DType, Vec<usize>, usize, usize)> = Vec::new();
    let mut done: Vec<Vec<usize>> = Vec::new();
    for i in (0..params.len()).rev() {
        let p = &params[i];
        let bytes = p
            .numel()
            .checked_mul(p.dtype().size_in_bytes())
            .ok_or(Error::NumelOverflow)?;
        let slot = match open.iter().position(|(d, ..)| *d == p.dtype()) {
            Some(s) => s,
            None => {
                open.push((p.dtype(), Vec::new(), 0, 0));
                open.len() - 1
            }
        };
        let (_, indices, size, closed) = &mut open[slot];
        indices.push(i);
        *size = size.saturating_add(bytes);
        let cap = if *closed == 0 {
            first_bucket_bytes
        } else {
            bucket_cap_bytes
        };
        if *size >= cap {
            done.push(std::mem::take(indices));
            *size = 0;
            *closed += 1;
        }
    }
    done.extend(
        open.into_iter()
            .filter(|(_, ix, ..)| !ix.is_empty())
            .map(|(_, ix, ..)| ix),
    );
    done.sort_by_key(|ix| std::cmp::Reverse(ix[0]));
    done.into_iter().map(|ix| Bucket::new(ix, params)).collect()
}

/// Checks that `grads` holds one entry per parameter of `bucket`, each of the
/// parameter's shape and the bucket's dtype.
fn check_grads(bucket: &Bucket, grads: &[Option<&Tensor>], op: &'static str) -> Result<()> {
    if grads.len() != bucket.indices.len() {
        return Err(Error::InvalidArgument(format!(
            "{op}: the bucket has {} parameters, got {} gradients",
            bucket.indices.len(),
            grads.len()
        )));
    }
    for (k, g) in grads.iter().enumerate() {
        let Some(g) = g else { continue };
        if g.dtype() != bucket.dtype {
            return Err(Error::dtype(
                op,
                format!(
                    "the gradient of parameter {} has dtype {}, the bucket's is {}",
                    bucket.indices[k],
                    g.dtype().torch_name(),
                    bucket.dtype.torch_name()
                ),
            ));
        }
        if g.shape() != bucket.shapes[k].as_slice() {
            return Err(Error::ShapeMismatch {
                op,
                message: format!(
                    "the gradient of parameter {} has shape {:?}, the parameter {:?}",
                    bucket.indices[k],
                    g.shape(),
                    bucket.shapes[k]
                ),
            });
        }
    }
    Ok(())
}

/// The bucket's gradients, each multiplied by `1 / world_size` (rounded to the dtype,
/// as PyTorch's reducer does while copying a gradient into its bucket), in one new
/// contiguous 1-D tensor of [`Bucket::numel`] elements at [`Bucket::offsets`]; a `None`
/// gradient (a parameter without a gradient on this rank) contributes zeros. A SUM
/// all-reduce of these buffers over `world_size` ranks gives the average gradient.
///
/// `grads` follows [`Bucket::indices`]. Errors for a wrong number of gradients, a
/// gradient of another shape or dtype, a non-float bucket, or `world_size == 0`.
pub fn flatten_bucket(
    bucket: &Bucket,
    grads: &[Option<&Tensor>],
    world_size: usize,
) -> Result<Tensor> {
    const OP: &str = "flatten_bucket";
    check_grads(bucket, grads, OP)?;
    if world_size == 0 {
        return Err(Error::InvalidArgument(format!(
            "{OP}: world_size must be positive, got 0"
        )));
    }
    fn fill<T: Element>(
        bucket: &Bucket,
        grads: &[Option<&Tensor>],
        world_size: usize,
    ) -> Result<Tensor> {
        // The scale is rounded to the dtype first, then each product rounded once: for
        // float16/bfloat16/float32 the product of two values is exact in f64, so this is
        // the dtype's own multiplication.
        let scale = T::from_f64(1.0 / world_size as f64).to_f64();
        let mut out = vec![T::default(); bucket.numel];
        for (k, g) in grads.iter().enumerate() {
            let Some(g) = g else { continue };
            let g = g.contiguous()?;
            let start = g.layout().offset();
            let dst = &mut out[bucket.offsets[k]..bucket.offsets[k] + g.numel()];
            g.read(|src: &[T]| {
                for (d, &s) in dst.iter_mut().zip(&src[start..start + g.numel()]) {
                    *d = T::from_f64(s.to_f64() * scale);
                }
            });
        }
        Tensor::from_vec(out, &[bucket.numel])
    }
    match bucket.dtype {
        DType::F32 => fill::<f32>(bucket, grads, world_size),
        DType::F64 => fill::<f64>(bucket, grads, world_size),
        DType::F16 => fill::<half::f16>(bucket, grads, world_size),
        DType::BF16 => fill::<half::bf16>(bucket, grads, world_size),
        other => Err(Error::dtype(
            OP,
            format!(
                "gradients are floating point, got a bucket of {}",
                other.torch_name()
            ),
        )),
    }
}

/// Writes the reduced flat buffer back: each gradient in `grads` that is `Some` gets
/// its slice of `flat` in place (its storage is written and its version bumped), and
/// each `None` entry gets a new tensor of the parameter's shape holding its slice,
/// returned at the same position (`None` where the gradient was written in place).
/// A caller that must leave a parameter's gradient alone (PyTorch's unused
/// parameters) passes `None` for it and drops the returned tensor.
///
/// `flat` is the buffer [`flatten_bucket`] made, after the SUM all-reduce (any tensor of
/// [`Bucket::numel`] elements and the bucket's dtype). Errors as [`flatten_bucket`],
/// and for a `flat` of another size or dtype.
#[track_caller]
pub fn unflatten_bucket(
    bucket: &Bucket,
    flat: &Tensor,
    grads: &[Option<&Tensor>],
) -> Result<Vec<Option<Tensor>>> {
    const OP: &str = "unflatten_bucket";
    check_grads(bucket, grads, OP)?;
    if flat.dtype() != bucket.dtype {
        return Err(Error::dtype(
            OP,
            format!(
                "the flat buffer has dtype {}, the bucket's is {}",
                flat.dtype().torch_name(),
                bucket.dtype.torch_name()
            ),
        ));
    }
    if flat.numel() != bucket.numel {
        return Err(Error::ShapeMismatch {
            op: OP,
            message: format!(
                "the flat buffer has {} elements, the bucket {}",
                flat.numel(),
                bucket.numel
            ),
        });
    }
    let site = WriteSite::Rust(Location::caller());
    let flat = flat.reshape(&[-1])?;
    let mut out = Vec::with_capacity(grads.len());
    for (k, g) in grads.iter().enumerate() {
        let start = bucket.offsets[k] as i64;
        let n: usize = bucket.shapes[k].iter().product();
        let shape: Vec<i64> = bucket.shapes[k].iter().map(|&s| s as i64).collect();
        let part = flat
            .slice(0, Some(start), Some(start + n as i64), 1)?
            .view(&shape)?;
        match g {
            Some(g) => {
                g.copy_from(&part, site.clone())?;
                out.push(None);
            }
            None => out.push(Some(part.deep_clone()?)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::zeros(shape, dtype).unwrap()
    }

    fn indices(b: &[Bucket]) -> Vec<Vec<usize>> {
        b.iter().map(|b| b.indices().to_vec()).collect()
    }

    // The expected assignments are PyTorch 2.15's
    // `torch.distributed._compute_bucket_assignment_by_size` over the reversed
    // parameters (indices mapped back), with the same caps.
    #[test]
    fn buckets_follow_pytorchs_assignment() {
        // Sizes in bytes (f32): 400, 2000, 40, 4000, 400. Reverse order: 4 (400) then 3
        // (4000) reach the first cap of 1000; 2 and 1 (2040) the next cap of 2000; 0 is
        // left open.
        let params = [
            p(&[100], DType::F32),
            p(&[500], DType::F32),
            p(&[10], DType::F32),
            p(&[10, 100], DType::F32),
            p(&[100], DType::F32),
        ];
        let b = assign_buckets(&params, 1000, 2000).unwrap();
        assert_eq!(indices(&b), vec![vec![4, 3], vec![2, 1], vec![0]]);
        assert_eq!(b[0].offsets(), &[0, 100]);
        assert_eq!(b[0].numel(), 1100);
        assert_eq!(b[0].bytes(), 4400);
        assert_eq!(b[0].shapes(), &[vec![100], vec![10, 100]]);
        // A size equal to the cap closes the bucket (`>=`).
        let b = assign_buckets(&params[..1], 400, 400).unwrap();
        assert_eq!(indices(&b), vec![vec![0]]);
        // Everything fits in one bucket under PyTorch's default caps.
        let b = assign_buckets(
            &params,
            DEFAULT_FIRST_BUCKET_BYTES,
            DEFAULT_BUCKET_CAP_BYTES,
        )
        .unwrap();
        assert_eq!(indices(&b), vec![vec![4, 3, 2, 1, 0]]);
        assert!(assign_buckets(&[], 1, 1).unwrap().is_empty());
    }

    #[test]
    fn one_dtype_per_bucket_with_its_own_caps() {
        // f64 (800 bytes each) and f32 (400 bytes each) interleaved; caps 1000 then 1600.
        let params = [
            p(&[100], DType::F64),
            p(&[100], DType::F32),
            p(&[100], DType::F64),
            p(&[100], DType::F32),
            p(&[100], DType::F64),
            p(&[100], DType::F32),
        ];
        let b = assign_buckets(&params, 1000, 1600).unwrap();
        // f32: 5, 3, 1 (1200 >= 1000) closes at 1. f64: 4, 2 (1600 >= 1000) closes at
        // 2; then 0 stays open (800 < 1600). Sorted by first index, decreasing.
        assert_eq!(indices(&b), vec![vec![5, 3, 1], vec![4, 2], vec![0]]);
        assert_eq!(b[1].dtype(), DType::F64);
        assert_eq!(b[0].dtype(), DType::F32);
    }

    #[test]
    fn flatten_scales_and_unflatten_writes_back() {
        let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let b = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3]).unwrap();
        let params = [a.clone(), b.clone(), p(&[2], DType::F32)];
        let buckets = assign_buckets(&params, 1 << 20, 1 << 20).unwrap();
        let bucket = &buckets[0];
        assert_eq!(bucket.indices(), &[2, 1, 0]);
        // A transposed (non-contiguous) gradient is read in logical order.
        let at = a.t().unwrap();
        let flat = flatten_bucket(bucket, &[None, Some(&b), Some(&at)], 2).unwrap();
        assert_eq!(
            flat.to_vec::<f32>(),
            vec![0.0, 0.0, 5.0, 10.0, 15.0, 0.5, 1.5, 1.0, 2.0]
        );
        // The reduced buffer (as if another rank contributed the same) goes back.
        let reduced = flat.binary(&flat, crate::tensor::BinaryOp::Add).unwrap();
        let ga = Tensor::zeros(&[2, 2], DType::F32).unwrap();
        let v0 = ga.version();
        let out = unflatten_bucket(bucket, &reduced, &[None, Some(&b), Some(&ga)]).unwrap();
        assert!(out[1].is_none() && out[2].is_none());
        assert_eq!(out[0].as_ref().unwrap().to_vec::<f32>(), vec![0.0, 0.0]);
        assert_eq!(out[0].as_ref().unwrap().shape(), &[2]);
        assert_eq!(b.to_vec::<f32>(), vec![10.0, 20.0, 30.0]);
        assert_eq!(ga.to_vec::<f32>(), vec![1.0, 3.0, 2.0, 4.0]);
        assert!(ga.version() > v0);
    }

    #[test]
    fn the_scale_is_rounded_to_the_dtype() {
        // numpy: np.float32(0.1) * np.float32(1/3) == 0.033333335,
        // np.float32(3) * np.float32(1/3) == 1.0, np.float64(0.1) * (1/3) ==
        // 0.03333333333333333.
        let g = Tensor::from_vec(vec![0.1f32, 3.0], &[2]).unwrap();
        let bucket = &assign_buckets(std::slice::from_ref(&g), 1, 1).unwrap()[0];
        let flat = flatten_bucket(bucket, &[Some(&g)], 3).unwrap();
        assert_eq!(flat.to_vec::<f32>(), vec![0.033333335f32, 1.0]);
        let h = Tensor::from_vec(vec![0.1f64], &[1]).unwrap();
        let bucket = &assign_buckets(std::slice::from_ref(&h), 1, 1).unwrap()[0];
        let flat = flatten_bucket(bucket, &[Some(&h)], 3).unwrap();
        assert_eq!(flat.to_vec::<f64>(), vec![0.03333333333333333f64]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let g = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let bucket = &assign_buckets(std::slice::from_ref(&g), 1, 1).unwrap()[0];
        let e = flatten_bucket(bucket, &[], 1).unwrap_err();
        assert!(e.to_string().contains("the bucket has 1 parameters, got 0"));
        let wrong = p(&[3], DType::F32);
        let e = flatten_bucket(bucket, &[Some(&wrong)], 1).unwrap_err();
        assert!(e.to_string().contains("has shape [3], the parameter [2]"));
        let wrong = p(&[2], DType::F64);
        let e = flatten_bucket(bucket, &[Some(&wrong)], 1).unwrap_err();
        assert!(e.to_string().contains("dtype torch.float64"));
        assert!(flatten_bucket(bucket, &[Some(&g)], 0).is_err());
        let e = unflatten_bucket(bucket, &p(&[3], DType::F32), &[None]).unwrap_err();
        assert!(e.to_string().contains("has 3 elements, the bucket 2"));
        assert!(unflatten_bucket(bucket, &p(&[2], DType::F64), &[None]).is_err());
        let ints = p(&[2], DType::I64);
        let bucket = &assign_buckets(std::slice::from_ref(&ints), 1, 1).unwrap()[0];
        let e = flatten_bucket(bucket, &[Some(&ints)], 1).unwrap_err();
        assert!(e.to_string().contains("gradients are floating point"));
    }
}
