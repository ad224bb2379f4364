//! Tensor-level compute of the reductions, scans and sorts (no autograd). Each op reads
//! its input as rows with the reduced dims last (`Tensor::rows`, one contiguous copy)
//! and runs a kernel of `kernels::lanes`; see that module for why the results are the
//! same for any thread count.

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::lanes::{fold_rows, map_rows};
use crate::shape::Dims;
use crate::tensor::{BinaryOp, CmpOp, Scalar, Tensor, UnaryOp};
use smallvec::smallvec;
use std::cmp::Ordering;

use crate::tensor::dispatch as with_dtype;

/// Whether an extremum is the largest or the smallest value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Extremum {
    /// The largest value (`max`, `amax`, `argmax`).
    Max,
    /// The smallest value (`min`, `amin`, `argmin`).
    Min,
}

/// The combining op of a scan.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ScanOp {
    /// Running sums (`cumsum`).
    Sum,
    /// Running products (`cumprod`).
    Prod,
}

/// The shape of a reduction's result: `dims` removed, or kept as 1 with `keepdim`.
pub(crate) fn reduced_shape(shape: &[usize], dims: &[usize], keepdim: bool) -> Dims {
    (0..shape.len())
        .filter_map(|d| match (dims.contains(&d), keepdim) {
            (false, _) => Some(shape[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// `x != x`: true only for NaN, whatever the element type.
#[inline(always)]
#[allow(clippy::eq_op)]
fn is_nan<T: PartialEq + Copy>(x: T) -> bool {
    x != x
}

/// Whether `x` replaces `current` as the running extremum: a NaN wins and stays (PyTorch
/// propagates NaN and reports its first index), otherwise strictly better; ties keep
/// the first.
#[inline(always)]
fn beats<T: Element>(x: T, current: T, kind: Extremum) -> bool {
    if is_nan(current) {
        return false;
    }
    if is_nan(x) {
        return true;
    }
    match kind {
        Extremum::Max => x > current,
        Extremum::Min => x < current,
    }
}

/// PyTorch's sort order: NaN above every number (last ascending, first descending).
fn cmp_nan_last<T: Element>(a: &T, b: &T) -> Ordering {
    a.partial_cmp(b)
        .unwrap_or_else(|| is_nan(*a).cmp(&is_nan(*b)))
}

fn index_dtype_error(what: &str, dtype: DType) -> Error {
    Error::dtype(
        "index",
        format!(
            "{what}(): Expected dtype int64 for index, but got {}",
            dtype.scalar_type_name()
        ),
    )
}

impl Tensor {
    /// The elements as `outer` rows of `inner`: the dims not in `dims` outer (in order),
    /// `dims` inner (in the order given), copied contiguous.
    fn rows<T: Element>(&self, dims: &[usize]) -> Result<(Vec<T>, usize, usize)> {
        let kept = (0..self.dim()).filter(|d| !dims.contains(d));
        let outer: usize = kept.clone().map(|d| self.shape()[d]).product();
        let inner: usize = dims.iter().map(|&d| self.shape()[d]).product();
        let order: Vec<i64> = kept.chain(dims.iter().copied()).map(|d| d as i64).collect();
        let values = if order.iter().enumerate().all(|(i, &d)| i as i64 == d) {
            self.try_to_vec::<T>()?
        } else {
            self.permute(&order)?.try_to_vec::<T>()?
        };
        Ok((values, outer, inner))
    }

    /// The lane dims of `dim`: none for a 0-d tensor (its one element is a lane of 1).
    fn lane(&self, dim: usize) -> Dims {
        if self.dim() == 0 {
            smallvec![]
        } else {
            smallvec![dim]
        }
    }

    /// A tensor of `self`'s shape with `dim` resized to `size`, from rows laid out with
    /// `dim` last (what `rows(lane(dim))` reads); contiguous.
    fn with_lane_rows<T: Element>(&self, data: Vec<T>, dim: usize, size: usize) -> Result<Tensor> {
        if self.dim() == 0 {
            return Tensor::from_vec(data, &[]);
        }
        let last = self.dim() - 1;
        let mut permuted: Dims = (0..self.dim())
            .filter(|&d| d != dim)
            .map(|d| self.shape()[d])
            .collect();
        permuted.push(size);
        let t = Tensor::from_vec(data, &permuted)?;
        if dim == last {
            return Ok(t);
        }
        let inverse: Vec<i64> = (0..self.dim())
            .map(|j| match j.cmp(&dim) {
                Ordering::Less => j as i64,
                Ordering::Equal => last as i64,
                Ordering::Greater => j as i64 - 1,
            })
            .collect();
        t.permute(&inverse)?.contiguous()
    }

    /// The largest or smallest element over `dims` (wrapped, distinct; the caller passes
    /// every dim for a full reduction), NaN when a NaN is among them. Same dtype.
    pub fn extremum_dims(&self, dims: &[usize], keepdim: bool, kind: Extremum) -> Result<Tensor> {
        let out_shape = reduced_shape(self.shape(), dims, keepdim);
        with_dtype!(self.dtype(), T => {
            let (v, outer, inner) = self.rows::<T>(dims)?;
            let r = fold_rows(
                &v,
                outer,
                inner,
                None,
                |acc: Option<T>, _, x| match acc {
                    Some(a) if !beats(x, a, kind) => Some(a),
                    _ => Some(x),
                },
                |a, b| match (a, b) {
                    (Some(x), Some(y)) if beats(y, x, kind) => Some(y),
                    (Some(x), _) => Some(x),
                    (None, y) => y,
                },
            )?;
            Tensor::from_vec(r.into_iter().map(Option::unwrap_or_default).collect(), &out_shape)
        })
    }

    /// The extremum along `dim` and its index (the first one among ties; the first NaN),
    /// or, with `dim` `None`, over the flattened tensor. Values keep the dtype; indices
    /// are int64.
    pub fn arg_extremum(
        &self,
        dim: Option<usize>,
        keepdim: bool,
        kind: Extremum,
    ) -> Result<(Tensor, Tensor)> {
        let dims: Dims = match dim {
            Some(d) => self.lane(d),
            None => (0..self.dim()).collect(),
        };
        let out_shape: Dims = match dim {
            Some(_) => reduced_shape(self.shape(), &dims, keepdim),
            None if keepdim => smallvec![1; self.dim()],
            None => smallvec![],
        };
        with_dtype!(self.dtype(), T => {
            let (v, outer, inner) = self.rows::<T>(&dims)?;
            let r = fold_rows(
                &v,
                outer,
                inner,
                None,
                |acc: Option<(T, usize)>, i, x| match acc {
                    Some(a) if !beats(x, a.0, kind) => Some(a),
                    _ => Some((x, i)),
                },
                |a, b| match (a, b) {
                    (Some(x), Some(y)) if beats(y.0, x.0, kind) => Some(y),
                    (Some(x), _) => Some(x),
                    (None, y) => y,
                },
            )?;
            let (values, indices): (Vec<T>, Vec<i64>) = r
                .into_iter()
                .map(|o| o.map_or((T::default(), 0), |(x, i)| (x, i as i64)))
                .unzip();
            Ok((
                Tensor::from_vec(values, &out_shape)?,
                Tensor::from_vec(indices, &out_shape)?,
            ))
        })
    }

    /// The mean over `dims` (sorted or not, distinct): the sum divided by the number of
    /// elements reduced into each output. float16 / bfloat16 sum and divide in float32
    /// (their op-math type) and round once, as PyTorch's `mean`, so a mean of large
    /// values does not overflow through a rounded sum (Note [Reductions, scans and sorts]).
    pub fn mean_dims(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        if self.dtype().is_half() {
            return self.via_f32(|t| t.mean_dims(dims, keepdim));
        }
        let count: usize = dims.iter().map(|&d| self.shape()[d]).product();
        self.sum_dims(dims, keepdim)?
            .binary(&Tensor::scalar(count as f64, self.dtype()), BinaryOp::Div)
    }

    /// The variance over `dims` with `correction` (its square root, the standard
    /// deviation, when `sqrt`), two-pass: `sum((x - mean)^2) / max(0, N - correction)`.
    /// float16 / bfloat16 compute every step in float32 and round once, as PyTorch's
    /// `var` / `std` (a std whose variance overflows float16 is still finite).
    pub fn var_dims(
        &self,
        dims: &[usize],
        correction: f64,
        keepdim: bool,
        sqrt: bool,
    ) -> Result<Tensor> {
        if self.dtype().is_half() {
            return self.via_f32(|t| t.var_dims(dims, correction, keepdim, sqrt));
        }
        let dtype = self.dtype();
        let count: usize = dims.iter().map(|&d| self.shape()[d]).product();
        let mean = self.mean_dims(dims, true)?;
        let deviation = self.binary(&mean, BinaryOp::Sub)?;
        let squares = deviation.binary(&deviation, BinaryOp::Mul)?;
        let denominator = (count as f64 - correction).max(0.0);
        let var = squares
            .sum_dims(dims, keepdim)?
            .binary(&Tensor::scalar(denominator, dtype), BinaryOp::Div)?;
        if sqrt {
            var.unary(UnaryOp::Sqrt)
        } else {
            Ok(var)
        }
    }

    /// `sum(|x|^ord)^(1/ord)` over `dims` (`ord` 0 counts nonzeros, ±inf is the largest
    /// / smallest `|x|`). float16 / bfloat16 compute in float32 and round once, as
    /// PyTorch's `linalg.vector_norm` (the squares of a 2-norm do not overflow).
    pub fn norm_dims(&self, ord: f64, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        if self.dtype().is_half() {
            return self.via_f32(|t| t.norm_dims(ord, dims, keepdim));
        }
        let (x, dtype) = (self, self.dtype());
        let abs = x.unary(UnaryOp::Abs)?;
        if ord == 2.0 {
            x.binary(x, BinaryOp::Mul)?
                .sum_dims(dims, keepdim)?
                .unary(UnaryOp::Sqrt)
        } else if ord == 1.0 {
            abs.sum_dims(dims, keepdim)
        } else if ord == f64::INFINITY {
            abs.extremum_dims(dims, keepdim, Extremum::Max)
        } else if ord == f64::NEG_INFINITY {
            abs.extremum_dims(dims, keepdim, Extremum::Min)
        } else if ord == 0.0 {
            x.compare(&Tensor::scalar(0.0, dtype), CmpOp::Ne)?
                .to_dtype(dtype)?
                .sum_dims(dims, keepdim)
        } else {
            abs.pow_scalar(Scalar::Float(ord))?
                .sum_dims(dims, keepdim)?
                .pow_scalar(Scalar::Float(1.0 / ord))
        }
    }

    /// The product over `dims` (every dim for a full reduction). float32 multiplies in
    /// float64; float16 and bfloat16 multiply in their own dtype, each step rounded
    /// (PyTorch's `prod` kernel has no wider accumulator for them, so `300 * 300`
    /// overflows float16); int64 and bool give int64 with wrapping, as PyTorch's.
    pub fn prod_dims(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        let out_shape = reduced_shape(self.shape(), dims, keepdim);
        macro_rules! half_prod {
            ($T:ty) => {{
                let (v, outer, inner) = self.rows::<$T>(dims)?;
                let one = <$T>::ONE;
                let r = fold_rows(&v, outer, inner, one, |a, _, x| a * x, |a, b| a * b)?;
                Tensor::from_vec(r, &out_shape)
            }};
        }
        match self.dtype() {
            DType::F32 => {
                let (v, outer, inner) = self.rows::<f32>(dims)?;
                let r = fold_rows(
                    &v,
                    outer,
                    inner,
                    1.0f64,
                    |a, _, x| a * x as f64,
                    |a, b| a * b,
                )?;
                Tensor::from_vec(r.into_iter().map(|p| p as f32).collect(), &out_shape)
            }
            DType::F64 => {
                let (v, outer, inner) = self.rows::<f64>(dims)?;
                let r = fold_rows(&v, outer, inner, 1.0f64, |a, _, x| a * x, |a, b| a * b)?;
                Tensor::from_vec(r, &out_shape)
            }
            DType::F16 => half_prod!(half::f16),
            DType::BF16 => half_prod!(half::bf16),
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
                let (v, outer, inner) = self.rows::<i64>(dims)?;
                let r = fold_rows(
                    &v,
                    outer,
                    inner,
                    1i64,
                    |a, _, x| a.wrapping_mul(x),
                    |a, b| a.wrapping_mul(b),
                )?;
                Tensor::from_vec(r, &out_shape)
            }
        }
    }

    /// The number of nonzero elements over `dims` (int64).
    pub fn count_nonzero_dims(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        let out_shape = reduced_shape(self.shape(), dims, keepdim);
        with_dtype!(self.dtype(), T => {
            let (v, outer, inner) = self.rows::<T>(dims)?;
            let r = fold_rows(&v, outer, inner, 0i64, |a, _, x: T| a + x.to_bool() as i64, |a, b| a + b)?;
            Tensor::from_vec(r, &out_shape)
        })
    }

    /// Whether all (`all`) or any (`!all`) elements over `dims` are nonzero (bool; NaN
    /// counts as nonzero).
    pub fn all_any_dims(&self, dims: &[usize], keepdim: bool, all: bool) -> Result<Tensor> {
        let out_shape = reduced_shape(self.shape(), dims, keepdim);
        with_dtype!(self.dtype(), T => {
            let (v, outer, inner) = self.rows::<T>(dims)?;
            let r = if all {
                fold_rows(&v, outer, inner, true, |a, _, x: T| a && x.to_bool(), |a, b| a && b)?
            } else {
                fold_rows(&v, outer, inner, false, |a, _, x: T| a || x.to_bool(), |a, b| a || b)?
            };
            Tensor::from_vec(r, &out_shape)
        })
    }

    /// Running sums or products along `dim`, from the last element backwards when
    /// `reverse`. int64 and bool give int64 (wrapping); float32 accumulates in float64.
    pub fn cumulative(&self, dim: usize, op: ScanOp, reverse: bool) -> Result<Tensor> {
        if self.dtype().is_half() {
            return self.via_f32(|t| t.cumulative(dim, op, reverse));
        }
        let lane = self.lane(dim);
        fn scan<T: Copy, A: Copy>(
            row: &[T],
            out: &mut [T],
            reverse: bool,
            init: A,
            step: impl Fn(A, T) -> A,
            narrow: impl Fn(A) -> T,
        ) {
            let mut acc = init;
            let mut visit = |i: usize| {
                acc = step(acc, row[i]);
                out[i] = narrow(acc);
            };
            if reverse {
                (0..row.len()).rev().for_each(&mut visit);
            } else {
                (0..row.len()).for_each(&mut visit);
            }
        }
        macro_rules! run {
            ($T:ty, $init:expr, $step:expr, $narrow:expr) => {{
                let (v, outer, inner) = self.rows::<$T>(&lane)?;
                let out = map_rows(&v, outer, inner, inner, <$T>::default(), |row, out| {
                    scan(row, out, reverse, $init, $step, $narrow)
                })?;
                self.with_lane_rows(out, dim, inner)
            }};
        }
        match (self.dtype(), op) {
            (DType::F32, ScanOp::Sum) => run!(f32, 0.0f64, |a, x| a + x as f64, |a| a as f32),
            (DType::F32, ScanOp::Prod) => run!(f32, 1.0f64, |a, x| a * x as f64, |a| a as f32),
            (DType::F64, ScanOp::Sum) => run!(f64, 0.0f64, |a, x| a + x, |a| a),
            (DType::F64, ScanOp::Prod) => run!(f64, 1.0f64, |a, x| a * x, |a| a),
            (DType::F16 | DType::BF16, _) => unreachable!("rustgrad internal error: half scan"),
            (
                DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool,
                ScanOp::Sum,
            ) => run!(i64, 0i64, |a: i64, x| a.wrapping_add(x), |a| a),
            (
                DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool,
                ScanOp::Prod,
            ) => run!(i64, 1i64, |a: i64, x| a.wrapping_mul(x), |a| a),
        }
    }

    /// Sorts along `dim` (stably; NaN counts as the largest value), returning the
    /// values and their original indices (int64). Keeps the first `k` of each lane
    /// when `k` is given (`topk`).
    pub fn sort_dim(
        &self,
        dim: usize,
        descending: bool,
        k: Option<usize>,
    ) -> Result<(Tensor, Tensor)> {
        let lane = self.lane(dim);
        with_dtype!(self.dtype(), T => {
            let (v, outer, inner) = self.rows::<T>(&lane)?;
            let keep = k.unwrap_or(inner).min(inner);
            let pairs = map_rows(&v, outer, inner, keep, (T::default(), 0i64), |row, out| {
                let mut order: Vec<usize> = (0..row.len()).collect();
                if descending {
                    order.sort_by(|&a, &b| cmp_nan_last(&row[b], &row[a]));
                } else {
                    order.sort_by(|&a, &b| cmp_nan_last(&row[a], &row[b]));
                }
                for (o, &i) in out.iter_mut().zip(&order) {
                    *o = (row[i], i as i64);
                }
            })?;
            let (values, indices): (Vec<T>, Vec<i64>) = pairs.into_iter().unzip();
            Ok((
                self.with_lane_rows(values, dim, keep)?,
                self.with_lane_rows(indices, dim, keep)?,
            ))
        })
    }

    /// The lower median along `dim` and its index (NaN, at its first index, when the
    /// lane holds a NaN); with `dim` `None`, over the flattened tensor (index 0-d).
    pub fn median_dim(&self, dim: Option<usize>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (src, d) = match dim {
            Some(d) => (self.clone(), d),
            None => (self.reshape(&[-1])?, 0),
        };
        let lane = src.lane(d);
        let out_shape: Dims = match dim {
            Some(_) => reduced_shape(self.shape(), &lane, keepdim),
            None => smallvec![],
        };
        with_dtype!(self.dtype(), T => {
            let (v, outer, inner) = src.rows::<T>(&lane)?;
            let pairs = map_rows(&v, outer, inner, 1, (T::default(), 0i64), |row, out| {
                if let Some(first_nan) = row.iter().position(|&x| is_nan(x)) {
                    out[0] = (row[first_nan], first_nan as i64);
                    return;
                }
                let mut order: Vec<usize> = (0..row.len()).collect();
                order.sort_by(|&a, &b| cmp_nan_last(&row[a], &row[b]));
                if let Some(&i) = order.get(row.len().saturating_sub(1) / 2) {
                    out[0] = (row[i], i as i64);
                }
            })?;
            let (values, indices): (Vec<T>, Vec<i64>) = pairs.into_iter().unzip();
            Ok((
                Tensor::from_vec(values, &out_shape)?,
                Tensor::from_vec(indices, &out_shape)?,
            ))
        })
    }

    /// `out[..., j, ...] = self[..., index[..., j, ...], ...]` along `dim`, for an int64
    /// `index` whose shape is `self`'s except along `dim` (the indices `max`, `sort`,
    /// `topk` and `median` return).
    pub fn gather_dim(&self, dim: usize, index: &Tensor) -> Result<Tensor> {
        self.check_lane_index("gather", dim, index)?;
        let lane = self.lane(dim);
        let (idx, _, k) = index.rows::<i64>(&lane)?;
        with_dtype!(self.dtype(), T => {
            let (v, outer, inner) = self.rows::<T>(&lane)?;
            let mut out = crate::kernels::try_vec(outer * k, T::default())?;
            for r in 0..outer {
                for j in 0..k {
                    let i = checked_index(idx[r * k + j], inner, dim)?;
                    out[r * k + j] = v[r * inner + i];
                }
            }
            index.with_lane_rows(out, dim, k)
        })
    }

    /// Zeros of `shape` with `self` added at `index` along `dim` (`gather_dim`'s
    /// backward): `out[..., index[..., j, ...], ...] += self[..., j, ...]`, in order.
    pub fn scatter_add_dim(&self, shape: &[usize], dim: usize, index: &Tensor) -> Result<Tensor> {
        if index.shape() != self.shape() {
            return Err(Error::InvalidArgument(format!(
                "scatter_add(): Expected index {:?} and src {:?} to have the same size",
                index.shape(),
                self.shape()
            )));
        }
        let target = Tensor::zeros(shape, self.dtype())?;
        target.check_lane_index("scatter_add", dim, index)?;
        let lane = target.lane(dim);
        let n: usize = lane.iter().map(|&d| shape[d]).product();
        let (idx, outer, k) = index.rows::<i64>(&lane)?;
        macro_rules! run {
            ($T:ty) => {{
                let (src, _, _) = self.rows::<$T>(&lane)?;
                let mut out = crate::kernels::try_vec(outer * n, 0.0 as $T)?;
                for r in 0..outer {
                    for j in 0..k {
                        let i = checked_index(idx[r * k + j], n, dim)?;
                        out[r * n + i] += src[r * k + j];
                    }
                }
                target.with_lane_rows(out, dim, n)
            }};
        }
        match self.dtype() {
            DType::F32 => run!(f32),
            DType::F64 => run!(f64),
            DType::F16 | DType::BF16 => self.via_f32(|t| t.scatter_add_dim(shape, dim, index)),
            other
            @ (DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool) => {
                Err(Error::unsupported_dtype("scatter_add_cpu", other))
            }
        }
    }

    fn check_lane_index(&self, op: &str, dim: usize, index: &Tensor) -> Result<()> {
        if index.dtype() != DType::I64 {
            return Err(index_dtype_error(op, index.dtype()));
        }
        let same_rank = index.dim() == self.dim();
        let same_elsewhere =
            (0..self.dim()).all(|d| d == dim || index.shape()[d] == self.shape()[d]);
        if !same_rank || !same_elsewhere {
            return Err(Error::InvalidArgument(format!(
                "{op}(): Expected index {:?} to match the size of {:?} except at dimension {dim}",
                index.shape(),
                self.shape()
            )));
        }
        Ok(())
    }

    /// The sorted distinct elements of the flattened tensor (NaNs are each distinct, as
    /// PyTorch's `==`), with the index of each element's value in them (shaped like
    /// `self`) and how often each occurs.
    pub fn unique_sorted(&self) -> Result<(Tensor, Tensor, Tensor)> {
        with_dtype!(self.dtype(), T => {
            let v = self.try_to_vec::<T>()?;
            let mut order: Vec<usize> = (0..v.len()).collect();
            order.sort_by(|&a, &b| cmp_nan_last(&v[a], &v[b]));
            let mut values: Vec<T> = Vec::new();
            let mut counts: Vec<i64> = Vec::new();
            let mut inverse = crate::kernels::try_vec(v.len(), 0i64)?;
            for &i in &order {
                match values.last() {
                    Some(&last) if last == v[i] => {
                        if let Some(c) = counts.last_mut() {
                            *c += 1;
                        }
                    }
                    _ => {
                        values.push(v[i]);
                        counts.push(1);
                    }
                }
                inverse[i] = values.len() as i64 - 1;
            }
            let n = values.len();
            Ok((
                Tensor::from_vec(values, &[n])?,
                Tensor::from_vec(inverse, self.shape())?,
                Tensor::from_vec(counts, &[n])?,
            ))
        })
    }
}

/// An index read from an index tensor, checked against the lane length.
fn checked_index(i: i64, size: usize, dim: usize) -> Result<usize> {
    usize::try_from(i)
        .ok()
        .filter(|&i| i < size)
        .ok_or(Error::IndexOutOfRange {
            index: i,
            dim,
            size,
        })
}
