//! One derivative rule per op, written with the engine's own differentiable ops so that
//! the same rules serve double backward (`create_graph=True`): when backward runs with
//! grad mode on, these ops record a graph of their own.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Dims;
use crate::tensor::{CmpOp, Tensor};
use crate::variable::Variable;
use smallvec::{smallvec, SmallVec};

/// Gradients for each input of a node (`None` where not needed).
pub(crate) type Grads = SmallVec<[Option<Variable>; 2]>;

/// The backward rule of a recorded op and the non-tensor data it needs. Saved tensors
/// are kept beside it in the node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum OpKind {
    /// `a + b`; no saved tensors.
    Add { a: Dims, b: Dims },
    /// `a - b`; no saved tensors. `reversed` names the scalar-minus-tensor form.
    Sub { a: Dims, b: Dims, reversed: bool },
    /// `a * b`; saved `[a if b needs grad, b if a needs grad]`.
    Mul { a: Dims, b: Dims },
    /// `a / b`; saved `[a, b]`.
    Div { a: Dims, b: Dims },
    /// `a ** b` (tensor exponent); saved `[a, b, out]`.
    Pow { a: Dims, b: Dims },
    /// `a ** exponent`; saved `[a]`.
    PowScalar { exponent: f64 },
    /// `-a`.
    Neg,
    /// `exp(a)`; saved `[out]`.
    Exp,
    /// `log(a)`; saved `[a]`.
    Log,
    /// `sqrt(a)`; saved `[out]`.
    Sqrt,
    /// `tanh(a)`; saved `[out]`.
    Tanh,
    /// `sigmoid(a)`; saved `[out]`.
    Sigmoid,
    /// `relu(a)`; saved `[out]`.
    Relu,
    /// `abs(a)`; saved `[a]`.
    Abs,
    /// `sign(a)`: zero gradient.
    Sign,
    /// `clamp(a, min, max)`; saved `[a]`.
    Clamp { min: Option<f64>, max: Option<f64> },
    /// `where(cond, a, b)`; saved `[cond]`.
    Where { a: Dims, b: Dims },
    /// Sum over all dims (`dims: None`) or some dims.
    Sum {
        input: Dims,
        dims: Option<Dims>,
        keepdim: bool,
    },
    /// Mean over all dims (`dims: None`) or some dims, of `count` elements each.
    Mean {
        input: Dims,
        dims: Option<Dims>,
        keepdim: bool,
        count: usize,
    },
    /// Matrix product; saved `[a if b needs grad, b if a needs grad]`. `batched`
    /// distinguishes BmmBackward0 from MmBackward0.
    Matmul { a: Dims, b: Dims, batched: bool },
    /// A view or reshape to another shape. `copied` is a reshape that had to copy.
    View { input: Dims, copied: bool },
    /// `transpose(dim0, dim1)`; `t` names the `.t()` form.
    Transpose { dim0: usize, dim1: usize, t: bool },
    /// `permute(dims)`.
    Permute { dims: Dims },
    /// `expand(...)` of an input of shape `input`.
    Expand { input: Dims },
    /// `unsqueeze(dim)`.
    Unsqueeze { dim: usize },
    /// `squeeze()` / `squeeze(dim)` of an input of shape `input`.
    Squeeze { input: Dims, all: bool },
    /// `input[..., start:end:step, ...]` along `dim`.
    Slice {
        input: Dims,
        dim: usize,
        start: usize,
        end: usize,
        step: usize,
    },
    /// `input[..., index, ...]` along `dim`.
    Select {
        input: Dims,
        dim: usize,
        index: usize,
    },
    /// The backward of `Slice` as an op (zero tensor with the slice filled), for double backward.
    SliceScatter {
        dim: usize,
        start: usize,
        end: usize,
        step: usize,
    },
    /// The backward of `Select` as an op.
    SelectScatter { dim: usize, index: usize },
    /// A view of a contiguous tensor of shape `base` through `layout` (how a view is
    /// re-derived from its base's current history).
    AsStrided { base: Dims, layout: Layout },
    /// The backward of `AsStrided` as an op: zeros of the base shape with the view's
    /// elements filled.
    AsStridedScatter { layout: Layout },
    /// `clone()` / `contiguous()` copy.
    Clone,
    /// A view of the whole tensor (`x[...]`).
    Alias,
    /// A dtype conversion from `from`.
    ToCopy { from: DType },
    /// In-place `fill_` / `zero_`: the old values do not reach the output.
    Fill { zero: bool },
    /// In-place `copy_(src)`; `src` of shape and dtype given.
    Copy { src: Dims, src_dtype: DType },
}

impl OpKind {
    /// PyTorch's grad_fn class name.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Add { .. } => "AddBackward0",
            OpKind::Sub {
                reversed: false, ..
            } => "SubBackward0",
            OpKind::Sub { reversed: true, .. } => "RsubBackward1",
            OpKind::Mul { .. } => "MulBackward0",
            OpKind::Div { .. } => "DivBackward0",
            OpKind::Pow { .. } => "PowBackward1",
            OpKind::PowScalar { .. } => "PowBackward0",
            OpKind::Neg => "NegBackward0",
            OpKind::Exp => "ExpBackward0",
            OpKind::Log => "LogBackward0",
            OpKind::Sqrt => "SqrtBackward0",
            OpKind::Tanh => "TanhBackward0",
            OpKind::Sigmoid => "SigmoidBackward0",
            OpKind::Relu => "ReluBackward0",
            OpKind::Abs => "AbsBackward0",
            OpKind::Sign => "SignBackward0",
            OpKind::Clamp { .. } => "ClampBackward1",
            OpKind::Where { .. } => "WhereBackward0",
            OpKind::Sum { dims: None, .. } => "SumBackward0",
            OpKind::Sum { .. } => "SumBackward1",
            OpKind::Mean { dims: None, .. } => "MeanBackward0",
            OpKind::Mean { .. } => "MeanBackward1",
            OpKind::Matmul { batched: false, .. } => "MmBackward0",
            OpKind::Matmul { batched: true, .. } => "BmmBackward0",
            OpKind::View { copied: false, .. } => "ViewBackward0",
            OpKind::View { copied: true, .. } => "UnsafeViewBackward0",
            OpKind::Transpose { t: false, .. } => "TransposeBackward0",
            OpKind::Transpose { t: true, .. } => "TBackward0",
            OpKind::Permute { .. } => "PermuteBackward0",
            OpKind::Expand { .. } => "ExpandBackward0",
            OpKind::Unsqueeze { .. } => "UnsqueezeBackward0",
            OpKind::Squeeze { all: true, .. } => "SqueezeBackward0",
            OpKind::Squeeze { all: false, .. } => "SqueezeBackward1",
            OpKind::Slice { .. } => "SliceBackward0",
            OpKind::Select { .. } => "SelectBackward0",
            OpKind::SliceScatter { .. } => "SliceBackwardBackward0",
            OpKind::SelectScatter { .. } => "SelectBackwardBackward0",
            OpKind::AsStrided { .. } => "AsStridedBackward0",
            OpKind::AsStridedScatter { .. } => "AsStridedScatterBackward0",
            OpKind::Clone => "CloneBackward0",
            OpKind::Alias => "AliasBackward0",
            OpKind::ToCopy { .. } => "ToCopyBackward0",
            OpKind::Fill { zero: false } => "FillBackward0",
            OpKind::Fill { zero: true } => "ZeroBackward0",
            OpKind::Copy { .. } => "CopyBackwards",
        }
    }
}

fn saved_at(saved: &[Option<Variable>], i: usize) -> Result<&Variable> {
    saved.get(i).and_then(|s| s.as_ref()).ok_or_else(|| {
        Error::NotImplemented(format!("rustgrad internal error: saved tensor {i} missing"))
    })
}

fn ints(dims: &[usize]) -> Vec<i64> {
    dims.iter().map(|&d| d as i64).collect()
}

/// Zero tensor of the gradient's dtype, as a 0-d variable (broadcasts anywhere).
fn zero_like(grad: &Variable) -> Variable {
    Variable::from_tensor(Tensor::scalar(0.0, grad.dtype()))
}

/// A zero gradient of `grad`'s shape, for inputs that do not reach the output. Not
/// `grad * 0`: that is NaN where the incoming gradient is infinite or NaN.
fn zeros_like(grad: &Variable) -> Variable {
    Variable::from_tensor(Tensor::zeros(&grad.shape(), grad.dtype()))
}

/// Expands the gradient of a reduction back to the input shape.
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

/// Applies the backward rule of `op` to `grad` (the gradient of the op's output).
/// `needs[i]` says whether input `i` wants a gradient.
pub(crate) fn apply(
    op: &OpKind,
    saved: &[Option<Variable>],
    grad: &Variable,
    needs: &[bool],
) -> Result<Grads> {
    let need = |i: usize| needs.get(i).copied().unwrap_or(false);
    let g = grad;
    Ok(match op {
        OpKind::Add { a, b } => smallvec![
            if need(0) {
                Some(g.sum_to_size(a)?)
            } else {
                None
            },
            if need(1) {
                Some(g.sum_to_size(b)?)
            } else {
                None
            },
        ],
        OpKind::Sub { a, b, .. } => smallvec![
            if need(0) {
                Some(g.sum_to_size(a)?)
            } else {
                None
            },
            if need(1) {
                Some(g.neg()?.sum_to_size(b)?)
            } else {
                None
            },
        ],
        OpKind::Mul { a, b } => smallvec![
            if need(0) {
                Some(g.mul(saved_at(saved, 1)?)?.sum_to_size(a)?)
            } else {
                None
            },
            if need(1) {
                Some(g.mul(saved_at(saved, 0)?)?.sum_to_size(b)?)
            } else {
                None
            },
        ],
        OpKind::Div { a, b } => {
            let y = saved_at(saved, 1)?;
            smallvec![
                if need(0) {
                    Some(g.div(y)?.sum_to_size(a)?)
                } else {
                    None
                },
                if need(1) {
                    Some(
                        g.mul(saved_at(saved, 0)?)?
                            .div(&y.mul(y)?)?
                            .neg()?
                            .sum_to_size(b)?,
                    )
                } else {
                    None
                },
            ]
        }
        OpKind::Pow { a, b } => {
            // `out` is saved only when the exponent needs a gradient.
            let (x, e) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
            let ga = if need(0) {
                // PyTorch's pow_backward_self: 0 where the exponent is 0 (not
                // `g * 0 * 0^-1`, which is NaN at a zero base).
                let one = Variable::from_tensor(Tensor::scalar(1.0, e.dtype()));
                let term = g.mul(e)?.mul(&x.pow(&e.sub(&one)?)?)?;
                let exponent_zero = e
                    .tensor()
                    .compare(&Tensor::scalar(0.0, e.dtype()), CmpOp::Eq)?;
                Some(
                    Variable::where_cond(&exponent_zero, &zero_like(&term), &term)?
                        .sum_to_size(a)?,
                )
            } else {
                None
            };
            let gb = if need(1) {
                // d/db a^b = a^b ln a, defined as 0 where a == 0 and b >= 0 (PyTorch).
                let zero = Tensor::scalar(0.0, x.dtype());
                let cond = x.tensor().compare(&zero, CmpOp::Eq)?.binary(
                    &e.tensor()
                        .compare(&Tensor::scalar(0.0, e.dtype()), CmpOp::Ge)?,
                    crate::tensor::BinaryOp::Mul,
                )?;
                let term = saved_at(saved, 2)?.mul(&x.log()?)?;
                Some(
                    g.mul(&Variable::where_cond(&cond, &zero_like(&term), &term)?)?
                        .sum_to_size(b)?,
                )
            } else {
                None
            };
            smallvec![ga, gb]
        }
        OpKind::PowScalar { exponent } => {
            let x = saved_at(saved, 0)?;
            let ga = if *exponent == 0.0 {
                zeros_like(g)
            } else {
                g.mul(&x.pow_scalar(exponent - 1.0)?.mul_scalar(*exponent)?)?
            };
            smallvec![Some(ga)]
        }
        OpKind::Neg => smallvec![Some(g.neg()?)],
        OpKind::Exp => smallvec![Some(g.mul(saved_at(saved, 0)?)?)],
        OpKind::Log => smallvec![Some(g.div(saved_at(saved, 0)?)?)],
        OpKind::Sqrt => smallvec![Some(g.div(&saved_at(saved, 0)?.mul_scalar(2.0)?)?)],
        OpKind::Tanh => {
            let y = saved_at(saved, 0)?;
            smallvec![Some(g.mul(&y.mul(y)?.rsub_scalar(1.0)?)?)]
        }
        OpKind::Sigmoid => {
            let y = saved_at(saved, 0)?;
            smallvec![Some(g.mul(&y.mul(&y.rsub_scalar(1.0)?)?)?)]
        }
        OpKind::Relu => {
            // PyTorch's threshold_backward: 0 where `y <= 0`, so a NaN output (from a
            // NaN input) passes the gradient through.
            let y = saved_at(saved, 0)?;
            let blocked = y
                .tensor()
                .compare(&Tensor::scalar(0.0, y.dtype()), CmpOp::Le)?;
            smallvec![Some(Variable::where_cond(&blocked, &zero_like(g), g)?)]
        }
        OpKind::Abs => smallvec![Some(g.mul(&saved_at(saved, 0)?.sign()?)?)],
        OpKind::Sign => smallvec![Some(zeros_like(g))],
        OpKind::Clamp { min, max } => {
            // PyTorch 2.x with number bounds: the gradient passes strictly inside
            // (min < x < max); at a bound and outside it is 0, and so for NaN.
            let x = saved_at(saved, 0)?.tensor();
            let mut mask = Tensor::full(x.shape(), 1.0, DType::Bool);
            if let Some(lo) = min {
                mask = mask.binary(
                    &x.compare(&Tensor::scalar(*lo, x.dtype()), CmpOp::Gt)?,
                    crate::tensor::BinaryOp::Mul,
                )?;
            }
            if let Some(hi) = max {
                mask = mask.binary(
                    &x.compare(&Tensor::scalar(*hi, x.dtype()), CmpOp::Lt)?,
                    crate::tensor::BinaryOp::Mul,
                )?;
            }
            smallvec![Some(Variable::where_cond(&mask, g, &zero_like(g))?)]
        }
        OpKind::Where { a, b } => {
            let cond = saved_at(saved, 0)?.tensor().clone();
            smallvec![
                if need(0) {
                    Some(Variable::where_cond(&cond, g, &zero_like(g))?.sum_to_size(a)?)
                } else {
                    None
                },
                if need(1) {
                    Some(Variable::where_cond(&cond, &zero_like(g), g)?.sum_to_size(b)?)
                } else {
                    None
                },
            ]
        }
        OpKind::Sum {
            input,
            dims,
            keepdim,
        } => smallvec![Some(expand_reduced(g, input, dims, *keepdim)?)],
        OpKind::Mean {
            input,
            dims,
            keepdim,
            count,
        } => {
            smallvec![Some(
                expand_reduced(g, input, dims, *keepdim)?.div_scalar(*count as f64)?
            )]
        }
        OpKind::Matmul { a, b, .. } => smallvec![
            if need(0) {
                Some(
                    g.matmul(&saved_at(saved, 1)?.transpose(-1, -2)?)?
                        .sum_to_size(a)?,
                )
            } else {
                None
            },
            if need(1) {
                Some(
                    saved_at(saved, 0)?
                        .transpose(-1, -2)?
                        .matmul(g)?
                        .sum_to_size(b)?,
                )
            } else {
                None
            },
        ],
        OpKind::View { input, .. } | OpKind::Squeeze { input, .. } => {
            smallvec![Some(g.reshape(&ints(input))?)]
        }
        OpKind::Transpose { dim0, dim1, .. } => {
            smallvec![Some(g.transpose(*dim0 as i64, *dim1 as i64)?)]
        }
        OpKind::Permute { dims } => {
            let mut inverse = vec![0i64; dims.len()];
            for (i, &d) in dims.iter().enumerate() {
                inverse[d] = i as i64;
            }
            smallvec![Some(g.permute(&inverse)?)]
        }
        OpKind::Expand { input } => smallvec![Some(g.sum_to_size(input)?)],
        OpKind::Unsqueeze { dim } => smallvec![Some(g.squeeze_dim(*dim as i64)?)],
        OpKind::Slice {
            input,
            dim,
            start,
            end,
            step,
        } => {
            smallvec![Some(g.slice_scatter(input, *dim, *start, *end, *step)?)]
        }
        OpKind::Select { input, dim, index } => {
            smallvec![Some(g.select_scatter(input, *dim, *index)?)]
        }
        OpKind::SliceScatter {
            dim,
            start,
            end,
            step,
        } => smallvec![Some(g.slice(
            *dim as i64,
            Some(*start as i64),
            Some(*end as i64),
            *step as i64
        )?)],
        OpKind::SelectScatter { dim, index } => {
            smallvec![Some(g.select(*dim as i64, *index as i64)?)]
        }
        OpKind::AsStrided { base, layout } => smallvec![Some(g.as_strided_scatter(base, layout)?)],
        OpKind::AsStridedScatter { layout } => smallvec![Some(g.as_strided(layout)?)],
        OpKind::Clone | OpKind::Alias => smallvec![Some(g.clone())],
        OpKind::ToCopy { from } => smallvec![Some(g.to_dtype(*from)?)],
        OpKind::Fill { .. } => smallvec![Some(zeros_like(g))],
        OpKind::Copy { src, src_dtype } => smallvec![
            if need(0) { Some(zeros_like(g)) } else { None },
            if need(1) {
                Some(g.sum_to_size(src)?.to_dtype(*src_dtype)?)
            } else {
                None
            },
        ],
    })
}
