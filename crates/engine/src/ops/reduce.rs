//! Reductions, scans and sorts: sum, mean, max/min (all, over a dim with indices),
//! amax/amin, argmax/argmin, softmax, log_softmax, logsumexp, prod, var/std (and the
//! `_mean` pairs), cumsum, cumprod, vector norms, nansum, nanmean, all, any,
//! count_nonzero, median, topk, sort, argsort, unique, and `sum_to_size` (the reduction
//! a broadcast gradient needs).
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` (the
//! lane kernels are in `compute.rs`) and records a node holding this family's
//! [`Rule`]; the rule's `apply` is its backward, written with differentiable ops so that
//! it serves double backward too.

mod compute;

pub use compute::{Extremum, ScanOp};

use super::{ints, saved_at, zero_like, zeros_like, Grads};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{self, Dims};
use crate::tensor::{BinaryOp, CmpOp, Scalar, Tensor, UnaryOp};
use crate::variable::SavedTensor;
use crate::variable::Variable;
use compute::reduced_shape;
use smallvec::{smallvec, SmallVec};

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// Sum over all dims (`dims: None`) or some dims.
    Sum(Box<Reduction>),
    /// Mean over all dims (`dims: None`) or some dims, of `count` elements each.
    Mean(Box<Reduction>),
    /// The gradient shared evenly among the elements equal to the result (`max()`,
    /// `min()`, `amax`, `amin`, `median()`, as PyTorch's `evenly_distribute_backward`
    /// and `scale_grad_by_count`); saved `[input, out]`.
    Spread(Box<Reduced>, Spread),
    /// The gradient sent to the elements at the saved indices along the one dim of
    /// `dims` (`max(dim)`, `min(dim)`, `median(dim)`, `topk`, `sort`); saved `[indices]`.
    Pick(Box<Reduced>, Pick),
    /// `gather` along `dim` of an input of the shape given; saved `[index]`.
    Gather(Box<(Dims, usize)>),
    /// Zeros with the input added at indices along `dim` (gather's backward); saved
    /// `[index]`.
    ScatterAdd { dim: usize },
    /// `softmax(dim)`; saved `[out]`.
    Softmax { dim: usize },
    /// `log_softmax(dim)`; saved `[out]`.
    LogSoftmax { dim: usize },
    /// `logsumexp(dims)`; saved `[input, out]`.
    Logsumexp(Box<Reduced>),
    /// `prod()` (`all`) or `prod(dim)`; saved `[input, out]`.
    Prod(Box<Reduced>, bool),
    /// `var` with the correction given; saved `[input]`.
    Var(Box<Reduced>, f64),
    /// `std` with the correction given; saved `[input, out]`.
    Std(Box<Reduced>, f64),
    /// `var_mean`: one node with outputs `(var, mean)` (Note [Multi-output nodes]);
    /// saved `[input]`.
    VarMean(Box<Reduced>, f64),
    /// `std_mean`: one node with outputs `(std, mean)`; saved `[input, std]`.
    StdMean(Box<Reduced>, f64),
    /// `cumsum(dim)`, or its reverse (sums from the end: cumsum's backward).
    Cumsum { dim: usize, reverse: bool },
    /// `cumprod(dim)`; saved `[input, out]`.
    Cumprod { dim: usize },
    /// `linalg.vector_norm` of the order given; saved `[input, out]`.
    Norm(Box<Reduced>, f64),
    /// `nansum`; saved `[input]`.
    Nansum(Box<Reduced>),
}

/// Which op a [`Rule::Spread`] is (its name).
#[derive(Copy, Clone, Debug)]
pub(crate) enum Spread {
    Max,
    Min,
    Amax,
    Amin,
    Median,
}

/// Which op a [`Rule::Pick`] is (its name).
#[derive(Copy, Clone, Debug)]
pub(crate) enum Pick {
    Max,
    Min,
    Median,
    Topk,
    Sort,
}

/// What the backward of a sum or mean needs (boxed: it holds two shapes).
#[derive(Clone, Debug)]
pub(crate) struct Reduction {
    input: Dims,
    dims: Option<Dims>,
    keepdim: bool,
    /// The number of elements reduced into each output element (for the mean).
    count: usize,
}

/// What the backward of the other reductions needs: the input's shape, the reduced
/// dims (wrapped; every dim for a full reduction, none for a 0-d input) and whether
/// they were kept.
#[derive(Clone, Debug)]
pub(crate) struct Reduced {
    input: Dims,
    dims: Dims,
    keepdim: bool,
}

impl Reduced {
    fn new(input: &Variable, dims: &[usize], keepdim: bool) -> Box<Reduced> {
        Box::new(Reduced {
            input: input.shape(),
            dims: dims.iter().copied().collect(),
            keepdim,
        })
    }

    /// `v` (of the output's shape) with the reduced dims back as size 1, so that it
    /// broadcasts against the input.
    fn restore(&self, v: &Variable) -> Result<Variable> {
        let mut v = v.clone();
        if !self.keepdim {
            let mut sorted = self.dims.clone();
            sorted.sort_unstable();
            for &d in &sorted {
                v = v.unsqueeze(d as i64)?;
            }
        }
        Ok(v)
    }

    /// Like `restore`, for a tensor.
    fn restore_tensor(&self, t: &Tensor) -> Result<Tensor> {
        let mut t = t.clone();
        if !self.keepdim {
            let mut sorted = self.dims.clone();
            sorted.sort_unstable();
            for &d in &sorted {
                t = t.unsqueeze(d as i64)?;
            }
        }
        Ok(t)
    }

    /// The number of input elements in each reduced group.
    fn count(&self) -> usize {
        self.dims.iter().map(|&d| self.input[d]).product()
    }

    fn dims_i64(&self) -> Vec<i64> {
        ints(&self.dims)
    }

    /// The dim of a one-dim op (0 for a 0-d input).
    fn dim(&self) -> usize {
        self.dims.first().copied().unwrap_or(0)
    }
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Sum(r) if r.dims.is_none() => "SumBackward0",
            Rule::Sum(_) => "SumBackward1",
            Rule::Mean(r) if r.dims.is_none() => "MeanBackward0",
            Rule::Mean(_) => "MeanBackward1",
            Rule::Spread(_, kind) => match kind {
                Spread::Max => "MaxBackward1",
                Spread::Min => "MinBackward1",
                Spread::Amax => "AmaxBackward0",
                Spread::Amin => "AminBackward0",
                Spread::Median => "MedianBackward0",
            },
            Rule::Pick(_, kind) => match kind {
                Pick::Max => "MaxBackward0",
                Pick::Min => "MinBackward0",
                Pick::Median => "MedianBackward1",
                Pick::Topk => "TopkBackward0",
                Pick::Sort => "SortBackward0",
            },
            Rule::Gather(_) => "GatherBackward0",
            Rule::ScatterAdd { .. } => "ScatterAddBackward0",
            Rule::Softmax { .. } => "SoftmaxBackward0",
            Rule::LogSoftmax { .. } => "LogSoftmaxBackward0",
            Rule::Logsumexp(_) => "LogsumexpBackward0",
            Rule::Prod(_, true) => "ProdBackward0",
            Rule::Prod(_, false) => "ProdBackward1",
            Rule::Var(..) => "VarBackward0",
            Rule::Std(..) => "StdBackward0",
            Rule::VarMean(..) => "VarMeanBackward0",
            Rule::StdMean(..) => "StdMeanBackward0",
            Rule::Cumsum { reverse: false, .. } => "CumsumBackward0",
            // Not a PyTorch op: PyTorch writes cumsum's backward as flip, cumsum, flip.
            Rule::Cumsum { reverse: true, .. } => "ReversedCumsumBackward0",
            Rule::Cumprod { .. } => "CumprodBackward0",
            Rule::Norm(..) => "LinalgVectorNormBackward0",
            Rule::Nansum(_) => "NansumBackward0",
        }
    }

    /// Whether the rule belongs to a node with several outputs (`apply_multi`).
    pub(crate) fn is_multi_output(&self) -> bool {
        matches!(self, Rule::VarMean(..) | Rule::StdMean(..))
    }

    /// The backward of `var_mean` / `std_mean` given the gradients of `(var or std,
    /// mean)`, either of which may be `None` (undefined: it adds nothing, as in
    /// PyTorch's `var_mean_backward`; Note [Zero gradients]).
    pub(crate) fn apply_multi(
        &self,
        saved: &[Option<Variable>],
        grads: &[Option<Variable>],
    ) -> Result<Grads> {
        let (Rule::VarMean(r, correction) | Rule::StdMean(r, correction)) = self else {
            return Err(Error::NotImplemented(
                "rustgrad internal error: apply_multi of a single-output rule".into(),
            ));
        };
        let first = match grads.first().cloned().flatten() {
            Some(g) if matches!(self, Rule::VarMean(..)) => Some(var_backward(
                &r.restore(&g)?,
                saved_at(saved, 0)?,
                r,
                *correction,
            )?),
            Some(g) => Some(std_backward(&g, saved, r, *correction)?),
            None => None,
        };
        let mean = match grads.get(1).cloned().flatten() {
            Some(g) => {
                let count: usize = r.dims.iter().map(|&d| r.input[d]).product();
                Some(
                    r.restore(&g)?
                        .expand(&ints(&r.input))?
                        .div_scalar(count as f64)?,
                )
            }
            None => None,
        };
        let grad = match (first, mean) {
            (Some(a), Some(b)) => a.add(&b)?,
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => {
                return Err(Error::NotImplemented(
                    "rustgrad internal error: a multi-output node ran without gradients".into(),
                ))
            }
        };
        Ok(smallvec![Some(grad)])
    }

    /// The gradients of the inputs given `grad`, the gradient of the output; `needs[i]`
    /// says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let _ = needs;
        let g = grad;
        let grad = match self {
            Rule::Sum(r) => expand_reduced(g, &r.input, &r.dims, r.keepdim)?,
            Rule::Mean(r) => {
                let expanded = expand_reduced(g, &r.input, &r.dims, r.keepdim)?;
                expanded.div_scalar(r.count as f64)?
            }
            Rule::Spread(r, _) => {
                let (x, y) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                let selected = x
                    .tensor()
                    .compare(&r.restore_tensor(&y.tensor())?, CmpOp::Eq)?;
                spread(&r.restore(g)?, &selected, &r.dims)?
            }
            Rule::Pick(r, _) => {
                let index = r.restore_tensor(&saved_at(saved, 0)?.tensor())?;
                r.restore(g)?.scatter_add_dim(&r.input, r.dim(), &index)?
            }
            Rule::Gather(gather) => {
                let (input, dim) = &**gather;
                let index = saved_at(saved, 0)?.tensor().clone();
                g.scatter_add_dim(input, *dim, &index)?
            }
            Rule::ScatterAdd { dim } => {
                let index = saved_at(saved, 0)?.tensor().clone();
                g.gather_dim(*dim, &index)?
            }
            Rule::Softmax { dim } => {
                let y = saved_at(saved, 0)?;
                let dot = g.mul(y)?.sum_dims(&[*dim as i64], true)?;
                y.mul(&g.sub(&dot)?)?
            }
            Rule::LogSoftmax { dim } => {
                let y = saved_at(saved, 0)?;
                g.sub(&y.exp()?.mul(&g.sum_dims(&[*dim as i64], true)?)?)?
            }
            Rule::Logsumexp(r) => {
                let (x, y) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                r.restore(g)?.mul(&x.sub(&r.restore(y)?)?.exp()?)?
            }
            Rule::Prod(r, all) => {
                prod_backward(g, saved_at(saved, 0)?, saved_at(saved, 1)?, r, *all)?
            }
            Rule::Var(r, correction) => {
                var_backward(&r.restore(g)?, saved_at(saved, 0)?, r, *correction)?
            }
            Rule::Std(r, correction) => std_backward(g, saved, r, *correction)?,
            Rule::VarMean(..) | Rule::StdMean(..) => {
                return self.apply_multi(saved, &[Some(g.clone())]);
            }
            Rule::Cumsum { dim, reverse } => g.cumsum_impl(*dim, !reverse)?,
            Rule::Cumprod { dim } => {
                cumprod_backward(g, saved_at(saved, 0)?, saved_at(saved, 1)?, *dim)?
            }
            Rule::Norm(r, ord) => {
                norm_backward(g, saved_at(saved, 0)?, saved_at(saved, 1)?, r, *ord)?
            }
            Rule::Nansum(r) => {
                let x = saved_at(saved, 0)?;
                let nan = x.tensor().compare(&x.tensor(), CmpOp::Ne)?;
                let expanded = r.restore(g)?.expand(&ints(&r.input))?;
                Variable::where_cond(&nan, &zero_like(g), &expanded)?
            }
        };
        Ok(smallvec![Some(grad)])
    }
}

/// `grad` shared evenly among the `selected` elements of each group reduced over `dims`
/// (0 elsewhere): `grad / count` where selected.
fn spread(grad: &Variable, selected: &Tensor, dims: &[usize]) -> Result<Variable> {
    let count = selected.sum_dims(dims, true)?.to_dtype(grad.dtype())?;
    let share = grad.div(&Variable::from_tensor(count))?;
    Variable::where_cond(selected, &share, &zero_like(grad))
}

/// `[n, 1, ..., n at position at, ..., 1]` (`ndim` dims): `lane_pos op k`, where `k` is
/// the index along the leading dim and `lane_pos` the index along `at`.
fn lane_mask(n: usize, ndim: usize, at: usize, op: CmpOp) -> Result<Tensor> {
    let range = Tensor::arange(0.0, n as f64, 1.0, DType::I64)?;
    let mut k_shape = vec![1i64; ndim];
    k_shape[0] = n as i64;
    let mut pos_shape = vec![1i64; ndim];
    pos_shape[at] = n as i64;
    range
        .reshape(&pos_shape)?
        .compare(&range.reshape(&k_shape)?, op)
}

/// `v` (shape `[n, rest...]`, `rest` the input's shape without `dim`) with its leading
/// dim moved to position `dim`.
fn leading_to(v: &Variable, dim: usize) -> Result<Variable> {
    let order: Vec<i64> = (0..v.dim())
        .map(|j| match j.cmp(&dim) {
            std::cmp::Ordering::Less => j as i64 + 1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => j as i64,
        })
        .collect();
    v.permute(&order)
}

/// `[n] + x.shape`: `x` repeated along a new leading dim with, in copy `k`, the element
/// at `k` along `dim` replaced by 1. The base of the exact gradients of `prod` and
/// `cumprod` when the input holds zeros (no division).
fn ones_at_diagonal(x: &Variable, dim: usize) -> Result<Variable> {
    let n = x.shape()[dim];
    let mut big = vec![n as i64];
    big.extend(ints(&x.shape()));
    let repeated = x.unsqueeze(0)?.expand(&big)?;
    let diagonal = lane_mask(n, x.dim() + 1, dim + 1, CmpOp::Eq)?;
    let one = Variable::from_tensor(Tensor::scalar(1.0, x.dtype()));
    Variable::where_cond(&diagonal, &one, &repeated)
}

fn has_zero(x: &Variable) -> Result<bool> {
    let t = x.tensor();
    let zeros = t.compare(&Tensor::scalar(0.0, t.dtype()), CmpOp::Eq)?;
    let all: Dims = (0..t.dim()).collect();
    Ok(zeros.all_any_dims(&all, false, false)?.item()? == Scalar::Bool(true))
}

/// PyTorch's prod_backward: `grad * out / x` without zeros; with zeros, the product of
/// the other elements of each group, computed exactly (no division), so that double
/// backward is right too.
fn prod_backward(
    g: &Variable,
    x: &Variable,
    y: &Variable,
    r: &Reduced,
    all: bool,
) -> Result<Variable> {
    if x.dim() == 0 {
        return Ok(g.clone());
    }
    let g = r.restore(g)?;
    if !has_zero(x)? {
        return g.mul(&r.restore(y)?)?.div(x);
    }
    let others = if all {
        let flat = x.reshape(&[-1])?;
        leading_to(&ones_at_diagonal(&flat, 0)?.prod_dim(1, false)?, 0)?.reshape(&ints(&r.input))?
    } else {
        let d = r.dim();
        leading_to(&ones_at_diagonal(x, d)?.prod_dim(d as i64 + 1, false)?, d)?
    };
    g.mul(&others)
}

/// `grad * 2 (x - mean) / (N - correction)`, with `grad` already restored.
fn var_backward(g: &Variable, x: &Variable, r: &Reduced, correction: f64) -> Result<Variable> {
    let denominator = (r.count() as f64 - correction).max(0.0);
    let mean = x.mean_dims(&r.dims_i64(), true)?;
    x.sub(&mean)?.mul(g)?.mul_scalar(2.0 / denominator)
}

/// PyTorch's cumprod_backward: the reversed cumsum of `grad * out`, divided by `x`,
/// without zeros; with zeros, `sum_{j >= k} grad_j prod_{i <= j, i != k} x_i` exactly.
fn cumprod_backward(g: &Variable, x: &Variable, y: &Variable, dim: usize) -> Result<Variable> {
    if x.numel() <= 1 || x.shape()[dim] == 1 {
        return Ok(g.clone());
    }
    if !has_zero(x)? {
        return g.mul(y)?.cumsum_impl(dim, true)?.div(x);
    }
    let n = x.shape()[dim];
    let partial = ones_at_diagonal(x, dim)?.cumprod_impl(dim + 1)?;
    let terms = partial.mul(&g.unsqueeze(0)?)?;
    let from_k = lane_mask(n, x.dim() + 1, dim + 1, CmpOp::Ge)?;
    let kept = Variable::where_cond(&from_k, &terms, &zero_like(&terms))?;
    leading_to(&kept.sum_dims(&[dim as i64 + 1], false)?, dim)
}

/// PyTorch's linalg_vector_norm_backward, including its subgradients at 0.
fn norm_backward(
    g: &Variable,
    x: &Variable,
    y: &Variable,
    r: &Reduced,
    ord: f64,
) -> Result<Variable> {
    let g = r.restore(g)?;
    let y = r.restore(y)?;
    let zero_norm = || {
        y.tensor()
            .compare(&Tensor::scalar(0.0, y.dtype()), CmpOp::Eq)
    };
    // grad / norm^(ord - 1), 0 where the norm is 0.
    let scaled = |power: f64| -> Result<Variable> {
        let v = if power == 1.0 {
            g.div(&y)?
        } else {
            g.div(&y.pow_scalar(power)?)?
        };
        Variable::where_cond(&zero_norm()?, &zero_like(&v), &v)
    };
    if ord == 0.0 {
        return zeros_like(x);
    }
    if ord == 1.0 {
        return x.sign()?.mul(&g);
    }
    if ord == 2.0 {
        return x.mul(&scaled(1.0)?);
    }
    if ord.is_infinite() {
        let selected = x
            .tensor()
            .unary(UnaryOp::Abs)?
            .compare(&y.tensor(), CmpOp::Eq)?;
        return x.sign()?.mul(&spread(&g, &selected, &r.dims)?);
    }
    let abs = x.abs()?;
    if ord < 1.0 {
        let zero_x = x
            .tensor()
            .compare(&Tensor::scalar(0.0, x.dtype()), CmpOp::Eq)?;
        let p = abs.pow_scalar(ord - 1.0)?;
        let p = Variable::where_cond(&zero_x, &zero_like(&p), &p)?;
        return x.sign()?.mul(&p)?.mul(&g)?.mul(&y.pow_scalar(1.0 - ord)?);
    }
    if ord < 2.0 {
        return x
            .sign()?
            .mul(&abs.pow_scalar(ord - 1.0)?)?
            .mul(&scaled(ord - 1.0)?);
    }
    x.mul(&abs.pow_scalar(ord - 2.0)?)?.mul(&scaled(ord - 1.0)?)
}

fn empty_reduction(op: &str) -> Error {
    Error::InvalidArgument(format!(
        "{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
    ))
}

fn saved_index(index: &Tensor) -> SavedTensor {
    SavedTensor::input(&Variable::from_tensor(index.clone()))
}

impl Variable {
    fn reduce_dims(&self, dims: Option<&[i64]>) -> Result<Dims> {
        match dims {
            None => Ok((0..self.dim()).collect()),
            // PyTorch: an empty dim list reduces over every dim, like no dim at all.
            Some([]) => Ok((0..self.dim()).collect()),
            Some(ds) => {
                let mut out: Dims = SmallVec::new();
                for &d in ds {
                    let w = shape::wrap_dim(d, self.dim())?;
                    if out.contains(&w) {
                        return Err(Error::InvalidArgument(format!(
                            "dim {w} appears multiple times in the list of dims"
                        )));
                    }
                    out.push(w);
                }
                // A 0-d tensor reduced over dim 0 / -1 reduces nothing.
                if self.dim() == 0 {
                    out.clear();
                }
                Ok(out)
            }
        }
    }

    /// The wrapped `dim` of a one-dim op and its lane (no dims for a 0-d tensor).
    fn lane_dim(&self, dim: i64) -> Result<(usize, Dims)> {
        let d = shape::wrap_dim(dim, self.dim())?;
        let lane = if self.dim() == 0 {
            smallvec![]
        } else {
            smallvec![d]
        };
        Ok((d, lane))
    }

    /// PyTorch's check that the dims reduced by `op` are not empty.
    fn check_nonempty(&self, op: &str, dims: &[usize]) -> Result<()> {
        match dims.iter().find(|&&d| self.shape()[d] == 0) {
            Some(d) => Err(Error::Index(format!(
                "{op}(): Expected reduction dim {d} to have non-zero size."
            ))),
            None => Ok(()),
        }
    }

    fn check_float(&self, message: impl FnOnce(DType) -> String) -> Result<()> {
        if self.dtype().is_floating_point() {
            Ok(())
        } else {
            Err(Error::NoKernel(message(self.dtype())))
        }
    }

    // ----- sum, mean ------------------------------------------------------------------

    /// Sum of all elements (a 0-d variable).
    pub fn sum(&self) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Sum,
            &[self],
            || self.sum_impl(None, false),
        )
    }

    /// Sum over `dims` (negative dims allowed), keeping them as size 1 if `keepdim`.
    pub fn sum_dims(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::SumDims(dims.into(), keepdim),
            &[self],
            || self.sum_impl(Some(dims), keepdim),
        )
    }

    fn sum_impl(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        let wrapped = self.reduce_dims(dims)?;
        let result = self.tensor().sum_dims(&wrapped, keepdim)?;
        Ok(Variable::record(result, &[self], |_, _| {
            let reduction = Reduction {
                input: self.shape(),
                dims: dims.map(|_| wrapped.clone()),
                keepdim,
                count: 0,
            };
            (Rule::Sum(Box::new(reduction)), smallvec![])
        }))
    }

    /// Mean of all elements.
    pub fn mean(&self) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Mean,
            &[self],
            || self.mean_impl(None, false),
        )
    }

    /// Mean over `dims`, keeping them as size 1 if `keepdim`.
    pub fn mean_dims(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::MeanDims(dims.into(), keepdim),
            &[self],
            || self.mean_impl(Some(dims), keepdim),
        )
    }

    fn mean_impl(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        if !self.dtype().is_floating_point() {
            // NotImplementedError in PyTorch, without an op prefix.
            return Err(Error::not_implemented_for_dtype(&format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                self.dtype().scalar_type_name()
            )));
        }
        let wrapped = self.reduce_dims(dims)?;
        let count: usize = wrapped.iter().map(|&d| self.shape()[d]).product();
        let result = self.tensor().mean_dims(&wrapped, keepdim)?;
        Ok(Variable::record(result, &[self], |_, _| {
            let reduction = Reduction {
                input: self.shape(),
                dims: dims.map(|_| wrapped.clone()),
                keepdim,
                count,
            };
            (Rule::Mean(Box::new(reduction)), smallvec![])
        }))
    }

    /// Reduces a broadcast gradient back to `shape` by summing.
    pub fn sum_to_size(&self, shape: &[usize]) -> Result<Variable> {
        if self.shape().as_slice() == shape {
            return Ok(self.clone());
        }
        let lead = self.dim().saturating_sub(shape.len());
        let mut dims: Vec<i64> = (0..lead as i64).collect();
        for (i, &s) in shape.iter().enumerate() {
            if s == 1 && self.shape().get(lead + i) != Some(&1) {
                dims.push((lead + i) as i64);
            }
        }
        let target: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        if dims.is_empty() {
            // Nothing to sum (an empty dim list would mean "all dims").
            return self.reshape(&target);
        }
        self.sum_dims(&dims, true)?.reshape(&target)
    }

    // ----- max, min, amax, amin, argmax, argmin ---------------------------------------

    fn spread_extremum(
        &self,
        dims: &[usize],
        keepdim: bool,
        kind: Extremum,
        rule: Spread,
    ) -> Result<Variable> {
        let result = self.tensor().extremum_dims(dims, keepdim, kind)?;
        Ok(Variable::record(result, &[self], |_, out| {
            let rule = Rule::Spread(Reduced::new(self, dims, keepdim), rule);
            let saved_out = SavedTensor::output(out, rule.name());
            (
                rule,
                smallvec![Some(SavedTensor::input(self)), Some(saved_out)],
            )
        }))
    }

    /// The largest element (`max()`): NaN if any element is NaN; the gradient is shared
    /// evenly among the elements equal to it (MaxBackward1).
    pub fn max(&self) -> Result<Variable> {
        self.full_extremum("max", Extremum::Max, Spread::Max)
    }

    /// The smallest element (`min()`), as [`Variable::max`].
    pub fn min(&self) -> Result<Variable> {
        self.full_extremum("min", Extremum::Min, Spread::Min)
    }

    fn full_extremum(&self, op: &str, kind: Extremum, rule: Spread) -> Result<Variable> {
        if self.numel() == 0 {
            return Err(empty_reduction(op));
        }
        let all: Dims = (0..self.dim()).collect();
        self.spread_extremum(&all, false, kind, rule)
    }

    /// `amax(dims, keepdim)`: the largest element over `dims` (every dim when empty); the
    /// gradient is shared evenly among ties.
    pub fn amax(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        self.amax_amin("amax", dims, keepdim, Extremum::Max, Spread::Amax)
    }

    /// `amin(dims, keepdim)`, as [`Variable::amax`].
    pub fn amin(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        self.amax_amin("amin", dims, keepdim, Extremum::Min, Spread::Amin)
    }

    fn amax_amin(
        &self,
        op: &str,
        dims: &[i64],
        keepdim: bool,
        kind: Extremum,
        rule: Spread,
    ) -> Result<Variable> {
        let wrapped = self.reduce_dims(Some(dims))?;
        if dims.is_empty() && self.numel() == 0 {
            return Err(empty_reduction(op));
        }
        self.check_nonempty(op, &wrapped)?;
        self.spread_extremum(&wrapped, keepdim, kind, rule)
    }

    /// `max(dim, keepdim)`: the largest values along `dim` and their indices (int64, the
    /// first among ties); the gradient goes to the selected index (MaxBackward0).
    pub fn max_dim(&self, dim: i64, keepdim: bool) -> Result<(Variable, Variable)> {
        self.extremum_dim("max", dim, keepdim, Extremum::Max, Pick::Max)
    }

    /// `min(dim, keepdim)`, as [`Variable::max_dim`].
    pub fn min_dim(&self, dim: i64, keepdim: bool) -> Result<(Variable, Variable)> {
        self.extremum_dim("min", dim, keepdim, Extremum::Min, Pick::Min)
    }

    fn extremum_dim(
        &self,
        op: &str,
        dim: i64,
        keepdim: bool,
        kind: Extremum,
        rule: Pick,
    ) -> Result<(Variable, Variable)> {
        let (d, lane) = self.lane_dim(dim)?;
        self.check_nonempty(op, &lane)?;
        let (values, indices) = self.tensor().arg_extremum(Some(d), keepdim, kind)?;
        Ok(self.picked(values, indices, &lane, keepdim, rule))
    }

    /// Records a value-selecting op: `values` get a node that sends the gradient to
    /// `indices` along the one dim of `lane`.
    fn picked(
        &self,
        values: Tensor,
        indices: Tensor,
        lane: &[usize],
        keepdim: bool,
        rule: Pick,
    ) -> (Variable, Variable) {
        let out = Variable::record(values, &[self], |_, _| {
            (
                Rule::Pick(Reduced::new(self, lane, keepdim), rule),
                smallvec![Some(saved_index(&indices))],
            )
        });
        (out, Variable::from_tensor(indices))
    }

    /// `argmax(dim, keepdim)`: the index (int64) of the largest value along `dim`, or in
    /// the flattened tensor without `dim`. Never requires grad.
    pub fn argmax(&self, dim: Option<i64>, keepdim: bool) -> Result<Variable> {
        self.arg_extremum("argmax", dim, keepdim, Extremum::Max)
    }

    /// `argmin(dim, keepdim)`, as [`Variable::argmax`].
    pub fn argmin(&self, dim: Option<i64>, keepdim: bool) -> Result<Variable> {
        self.arg_extremum("argmin", dim, keepdim, Extremum::Min)
    }

    fn arg_extremum(
        &self,
        op: &str,
        dim: Option<i64>,
        keepdim: bool,
        kind: Extremum,
    ) -> Result<Variable> {
        if self.dtype() == DType::Bool {
            return Err(Error::NoKernel(format!(
                "{op}(): does not support bool input"
            )));
        }
        let d = match dim {
            Some(dim) => {
                let (d, lane) = self.lane_dim(dim)?;
                self.check_nonempty(op, &lane)?;
                Some(d)
            }
            None if self.numel() == 0 => {
                return Err(Error::Index(format!(
                    "{op}(): Expected reduction dim to be specified for input.numel() == 0."
                )))
            }
            None => None,
        };
        let (_, indices) = self.tensor().arg_extremum(d, keepdim, kind)?;
        Ok(Variable::from_tensor(indices))
    }

    // ----- softmax, log_softmax, logsumexp --------------------------------------------

    /// `softmax(dim)`: `exp(x - max) / sum(exp(x - max))` along `dim` (float only).
    pub fn softmax(&self, dim: i64) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Softmax(dim),
            &[self],
            || self.softmax_impl(dim, false),
        )
    }

    /// `log_softmax(dim)`: `(x - max) - log(sum(exp(x - max)))` along `dim`.
    pub fn log_softmax(&self, dim: i64) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::LogSoftmax(dim),
            &[self],
            || self.softmax_impl(dim, true),
        )
    }

    fn softmax_impl(&self, dim: i64, log: bool) -> Result<Variable> {
        let d = shape::wrap_dim(dim, self.dim())?;
        let last = d + 1 >= self.dim();
        let kernel = match (log, last) {
            (false, true) => "softmax_lastdim_kernel_impl",
            (false, false) => "softmax_kernel_impl",
            (true, true) => "log_softmax_lastdim_kernel_impl",
            (true, false) => "log_softmax_kernel_impl",
        };
        if !self.dtype().is_floating_point() {
            return Err(Error::unsupported_dtype(kernel, self.dtype()));
        }
        let result = self.tensor().softmax_dim(d, log, kernel)?;
        Ok(Variable::record(result, &[self], |_, out| {
            if log {
                (
                    Rule::LogSoftmax { dim: d },
                    smallvec![Some(SavedTensor::output(out, "LogSoftmaxBackward0"))],
                )
            } else {
                (
                    Rule::Softmax { dim: d },
                    smallvec![Some(SavedTensor::output(out, "SoftmaxBackward0"))],
                )
            }
        }))
    }

    /// `logsumexp(dims, keepdim)`: `log(sum(exp(x)))` over `dims`, computed as
    /// `max + log(sum(exp(x - max)))` (an infinite max shifts by 0, as PyTorch). Integer
    /// inputs give the default float dtype.
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        let src = if self.dtype().is_floating_point() {
            self.clone()
        } else {
            self.to_dtype(DType::default_float())?
        };
        let wrapped = src.reduce_dims(Some(dims))?;
        let x = src.tensor();
        let max = x.extremum_dims(&wrapped, true, Extremum::Max)?;
        let infinite = max
            .unary(UnaryOp::Abs)?
            .compare(&Tensor::scalar(f64::INFINITY, max.dtype()), CmpOp::Eq)?;
        let max = Tensor::where_cond(&infinite, &Tensor::scalar(0.0, max.dtype()), &max)?;
        let total = x
            .binary(&max, BinaryOp::Sub)?
            .unary(UnaryOp::Exp)?
            .sum_dims(&wrapped, keepdim)?;
        let out_shape = reduced_shape(x.shape(), &wrapped, keepdim);
        let result = total
            .unary(UnaryOp::Log)?
            .binary(&max.reshape(&ints(&out_shape))?, BinaryOp::Add)?;
        Ok(Variable::record(result, &[&src], |_, out| {
            (
                Rule::Logsumexp(Reduced::new(&src, &wrapped, keepdim)),
                smallvec![
                    Some(SavedTensor::input(&src)),
                    Some(SavedTensor::output(out, "LogsumexpBackward0"))
                ],
            )
        }))
    }

    // ----- prod, cumsum, cumprod ------------------------------------------------------

    /// Product of all elements (int64 for integer and bool inputs).
    pub fn prod(&self) -> Result<Variable> {
        let all: Dims = (0..self.dim()).collect();
        self.prod_impl(&all, false, true)
    }

    /// Product along `dim`. With zeros in the input the gradient is still exact
    /// (PyTorch's: the product of the other elements).
    pub fn prod_dim(&self, dim: i64, keepdim: bool) -> Result<Variable> {
        let (_, lane) = self.lane_dim(dim)?;
        self.prod_impl(&lane, keepdim, false)
    }

    fn prod_impl(&self, dims: &[usize], keepdim: bool, all: bool) -> Result<Variable> {
        let result = self.tensor().prod_dims(dims, keepdim)?;
        Ok(Variable::record(result, &[self], |_, out| {
            (
                Rule::Prod(Reduced::new(self, dims, keepdim), all),
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::output(out, "ProdBackward0"))
                ],
            )
        }))
    }

    /// Running sums along `dim` (int64 for integer and bool inputs).
    pub fn cumsum(&self, dim: i64) -> Result<Variable> {
        let (d, _) = self.lane_dim(dim)?;
        self.cumsum_impl(d, false)
    }

    fn cumsum_impl(&self, dim: usize, reverse: bool) -> Result<Variable> {
        let result = self.tensor().cumulative(dim, ScanOp::Sum, reverse)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::Cumsum { dim, reverse }, smallvec![])
        }))
    }

    /// Running products along `dim` (int64 for integer and bool inputs); the gradient is
    /// exact with zeros in the input.
    pub fn cumprod(&self, dim: i64) -> Result<Variable> {
        let (d, _) = self.lane_dim(dim)?;
        self.cumprod_impl(d)
    }

    fn cumprod_impl(&self, dim: usize) -> Result<Variable> {
        let result = self.tensor().cumulative(dim, ScanOp::Prod, false)?;
        Ok(Variable::record(result, &[self], |_, out| {
            (
                Rule::Cumprod { dim },
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::output(out, "CumprodBackward0"))
                ],
            )
        }))
    }

    // ----- var, std ---------------------------------------------------------------------

    /// Variance over `dims` (all when `None` or empty) with `correction` (1: unbiased, 0:
    /// population); `sum((x - mean)^2) / max(0, N - correction)`.
    pub fn var(&self, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Variable> {
        let (wrapped, result) = self.var_forward(dims, correction, keepdim, false)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::Var(Reduced::new(self, &wrapped, keepdim), correction),
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    /// Standard deviation, the square root of [`Variable::var`]; its gradient is 0
    /// where it is 0 (PyTorch).
    pub fn std(&self, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Variable> {
        let (wrapped, result) = self.var_forward(dims, correction, keepdim, true)?;
        Ok(Variable::record(result, &[self], |_, out| {
            (
                Rule::Std(Reduced::new(self, &wrapped, keepdim), correction),
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::output(out, "StdBackward0"))
                ],
            )
        }))
    }

    /// `(var, mean)` over the same dims: one node, VarMeanBackward0, whose outputs 0 and
    /// 1 they are (Note [Multi-output nodes]).
    pub fn var_mean(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<(Variable, Variable)> {
        let (wrapped, var) = self.var_forward(dims, correction, keepdim, false)?;
        let mean = self.tensor().mean_dims(&wrapped, keepdim)?;
        let mut outs = Variable::record_multi(vec![var, mean], &[self], |_, _| {
            (
                Rule::VarMean(Reduced::new(self, &wrapped, keepdim), correction),
                smallvec![Some(SavedTensor::input(self))],
            )
        })
        .into_iter();
        match (outs.next(), outs.next()) {
            (Some(var), Some(mean)) => Ok((var, mean)),
            _ => Err(Error::NotImplemented(
                "rustgrad internal error: var_mean lost an output".into(),
            )),
        }
    }

    /// `(std, mean)` over the same dims: one node, StdMeanBackward0, as
    /// [`Variable::var_mean`].
    pub fn std_mean(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<(Variable, Variable)> {
        let (wrapped, std) = self.var_forward(dims, correction, keepdim, true)?;
        let mean = self.tensor().mean_dims(&wrapped, keepdim)?;
        let mut outs = Variable::record_multi(vec![std, mean], &[self], |_, outs| {
            (
                Rule::StdMean(Reduced::new(self, &wrapped, keepdim), correction),
                smallvec![
                    Some(SavedTensor::input(self)),
                    outs.first()
                        .map(|std| SavedTensor::output_nr(std, "StdMeanBackward0", 0))
                ],
            )
        })
        .into_iter();
        match (outs.next(), outs.next()) {
            (Some(std), Some(mean)) => Ok((std, mean)),
            _ => Err(Error::NotImplemented(
                "rustgrad internal error: std_mean lost an output".into(),
            )),
        }
    }

    /// The variance over `dims` (its square root when `sqrt`), checked and computed by
    /// [`Tensor::var_dims`].
    fn var_forward(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
        sqrt: bool,
    ) -> Result<(Dims, Tensor)> {
        self.check_float(|_| "std and var only support floating point and complex dtypes".into())?;
        let wrapped = self.reduce_dims(dims)?;
        let result = self
            .tensor()
            .var_dims(&wrapped, correction, keepdim, sqrt)?;
        Ok((wrapped, result))
    }

    // ----- norms, nansum, nanmean -----------------------------------------------------

    /// `linalg.vector_norm(x, ord, dims, keepdim)`: `sum(|x|^ord)^(1/ord)` over `dims`
    /// (all when `None` or empty); `ord` 0 counts nonzeros, ±inf is the largest /
    /// smallest `|x|`. Gradients are PyTorch's, with its subgradients at 0.
    pub fn vector_norm(&self, ord: f64, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        self.check_float(|d| {
            format!(
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
                d.scalar_type_name()
            )
        })?;
        let wrapped = self.reduce_dims(dims)?;
        if ord.is_infinite() {
            let name = if ord > 0.0 { "inf" } else { "-inf" };
            let full = dims.is_none_or(|d| d.is_empty());
            if full && self.numel() == 0 {
                return Err(Error::InvalidArgument(format!(
                    "linalg.vector_norm cannot compute the {name} norm on an empty tensor because the operation does not have an identity"
                )));
            }
            if let Some(d) = wrapped.iter().find(|&&d| self.shape()[d] == 0) {
                return Err(Error::InvalidArgument(format!(
                    "linalg.vector_norm cannot compute the {name} norm on the dimension {d}because this dimension is empty and the operation does not have an identity"
                )));
            }
        }
        let result = self.tensor().norm_dims(ord, &wrapped, keepdim)?;
        Ok(Variable::record(result, &[self], |_, out| {
            (
                Rule::Norm(Reduced::new(self, &wrapped, keepdim), ord),
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::output(out, "LinalgVectorNormBackward0"))
                ],
            )
        }))
    }

    /// Sum over `dims` treating NaN as 0 (for integer inputs, `sum`).
    pub fn nansum(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        if !self.dtype().is_floating_point() {
            return self.sum_impl(dims.filter(|d| !d.is_empty()), keepdim);
        }
        let wrapped = self.reduce_dims(dims)?;
        let x = self.tensor();
        let nan = x.compare(&x, CmpOp::Ne)?;
        let clean = Tensor::where_cond(&nan, &Tensor::scalar(0.0, x.dtype()), &x)?;
        let result = clean.sum_dims(&wrapped, keepdim)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::Nansum(Reduced::new(self, &wrapped, keepdim)),
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    /// Mean over `dims` of the elements that are not NaN: `nansum / count` (float only).
    pub fn nanmean(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        self.check_float(|d| {
            format!(
                "nanmean(): expected input to have floating point or complex dtype but got {}",
                d.scalar_type_name()
            )
        })?;
        let wrapped = self.reduce_dims(dims)?;
        let x = self.tensor();
        let count = x
            .compare(&x, CmpOp::Eq)?
            .sum_dims(&wrapped, keepdim)?
            .to_dtype(x.dtype())?;
        self.nansum(dims, keepdim)?
            .div(&Variable::from_tensor(count))
    }

    // ----- all, any, count_nonzero ----------------------------------------------------

    /// Whether every element over `dims` (all when `None` or empty) is nonzero (bool).
    pub fn all(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        let wrapped = self.reduce_dims(dims)?;
        Ok(Variable::from_tensor(
            self.tensor().all_any_dims(&wrapped, keepdim, true)?,
        ))
    }

    /// Whether any element over `dims` is nonzero (bool).
    pub fn any(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        let wrapped = self.reduce_dims(dims)?;
        Ok(Variable::from_tensor(
            self.tensor().all_any_dims(&wrapped, keepdim, false)?,
        ))
    }

    /// The number of nonzero elements over `dims` (int64).
    pub fn count_nonzero(&self, dims: Option<&[i64]>) -> Result<Variable> {
        let wrapped = self.reduce_dims(dims)?;
        Ok(Variable::from_tensor(
            self.tensor().count_nonzero_dims(&wrapped, false)?,
        ))
    }

    // ----- median, topk, sort, argsort, unique ----------------------------------------

    /// The lower median of all elements (NaN if any is NaN or the tensor is empty); the
    /// gradient is shared evenly among the elements equal to it (MedianBackward0).
    pub fn median(&self) -> Result<Variable> {
        self.check_median_dtype()?;
        let result = if self.numel() == 0 {
            self.check_float(|_| "median() of an empty integer tensor".into())?;
            Tensor::scalar(f64::NAN, self.dtype())
        } else {
            self.tensor().median_dim(None, false)?.0
        };
        let all: Dims = (0..self.dim()).collect();
        Ok(Variable::record(result, &[self], |_, out| {
            (
                Rule::Spread(Reduced::new(self, &all, false), Spread::Median),
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::output(out, "MedianBackward0"))
                ],
            )
        }))
    }

    /// The lower median along `dim` and its index (MedianBackward1: the gradient goes to
    /// that index).
    pub fn median_dim(&self, dim: i64, keepdim: bool) -> Result<(Variable, Variable)> {
        self.check_median_dtype()?;
        let (d, lane) = self.lane_dim(dim)?;
        self.check_nonempty("median", &lane)?;
        let (values, indices) = self.tensor().median_dim(Some(d), keepdim)?;
        Ok(self.picked(values, indices, &lane, keepdim, Pick::Median))
    }

    fn check_median_dtype(&self) -> Result<()> {
        if self.dtype() == DType::Bool {
            return Err(Error::unsupported_dtype("median_cpu", DType::Bool));
        }
        Ok(())
    }

    /// The `k` largest (or smallest) values along `dim`, sorted, and their indices
    /// (TopkBackward0). NaN counts as the largest value.
    pub fn topk(&self, k: i64, dim: i64, largest: bool) -> Result<(Variable, Variable)> {
        if self.dtype() == DType::Bool {
            return Err(Error::NoKernel(
                "topk does not support bool dtypes on CPU".into(),
            ));
        }
        let (d, lane) = self.lane_dim(dim)?;
        let size = lane.first().map_or(1, |&l| self.shape()[l]);
        let k = usize::try_from(k)
            .ok()
            .filter(|&k| k <= size)
            .ok_or_else(|| Error::InvalidArgument("selected index k out of range".into()))?;
        let (values, indices) = self.tensor().sort_dim(d, largest, Some(k))?;
        Ok(self.picked(values, indices, &lane, true, Pick::Topk))
    }

    /// Sorts along `dim` (stably; NaN last, or first when `descending`), returning the
    /// values and their indices (SortBackward0).
    pub fn sort(&self, dim: i64, descending: bool) -> Result<(Variable, Variable)> {
        let (d, lane) = self.lane_dim(dim)?;
        let (values, indices) = self.tensor().sort_dim(d, descending, None)?;
        Ok(self.picked(values, indices, &lane, true, Pick::Sort))
    }

    /// The indices that sort along `dim` (int64).
    pub fn argsort(&self, dim: i64, descending: bool) -> Result<Variable> {
        let (d, _) = self.lane_dim(dim)?;
        Ok(Variable::from_tensor(
            self.tensor().sort_dim(d, descending, None)?.1,
        ))
    }

    /// The sorted distinct elements (1-D), the index of each element's value in them
    /// (shaped like `self`) and the count of each. Never requires grad.
    pub fn unique(&self) -> Result<(Variable, Variable, Variable)> {
        let (values, inverse, counts) = self.tensor().unique_sorted()?;
        Ok((
            Variable::from_tensor(values),
            Variable::from_tensor(inverse),
            Variable::from_tensor(counts),
        ))
    }

    // ----- gather and scatter_add (the backward of the value-selecting ops) -----------

    /// `self` gathered at `index` along `dim` (see [`Tensor::gather_dim`]).
    pub(crate) fn gather_dim(&self, dim: usize, index: &Tensor) -> Result<Variable> {
        let result = self.tensor().gather_dim(dim, index)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::Gather(Box::new((self.shape(), dim))),
                smallvec![Some(saved_index(index))],
            )
        }))
    }

    /// Zeros of `shape` with `self` added at `index` along `dim` (see
    /// [`Tensor::scatter_add_dim`]).
    pub(crate) fn scatter_add_dim(
        &self,
        shape: &[usize],
        dim: usize,
        index: &Tensor,
    ) -> Result<Variable> {
        let result = self.tensor().scatter_add_dim(shape, dim, index)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::ScatterAdd { dim },
                smallvec![Some(saved_index(index))],
            )
        }))
    }
}

/// Expands the gradient of a reduction back to the input shape.
/// PyTorch's std_backward: `grad / (2 std)`, 0 where std is 0, through var's backward;
/// saved `[input, std]`.
fn std_backward(
    g: &Variable,
    saved: &[Option<Variable>],
    r: &Reduced,
    correction: f64,
) -> Result<Variable> {
    let y = r.restore(saved_at(saved, 1)?)?;
    let zero_std = y
        .tensor()
        .compare(&Tensor::scalar(0.0, y.dtype()), CmpOp::Eq)?;
    let half = r.restore(g)?.div(&y.mul_scalar(2.0)?)?;
    let grad_var = Variable::where_cond(&zero_std, &zero_like(&half), &half)?;
    var_backward(&grad_var, saved_at(saved, 0)?, r, correction)
}

fn expand_reduced(
    grad: &Variable,
    input: &[usize],
    dims: &Option<Dims>,
    keepdim: bool,
) -> Result<Variable> {
    let mut g = grad.clone();
    if let (Some(dims), false) = (dims, keepdim) {
        let mut sorted = dims.clone();
        sorted.sort_unstable();
        for &d in &sorted {
            g = g.unsqueeze(d as i64)?;
        }
    }
    g.expand(&ints(input))
}
