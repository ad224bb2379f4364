//! Losses: `nll_loss` and `cross_entropy` (class indices through one fused log-softmax
//! + negative log-likelihood node; class probabilities composed of differentiable ops).
//!
//! The forward of each op is a `Variable` method computing through the kernels of
//! `kernels/loss.rs`; the family's [`Rule`] is its backward, with a fused kernel for a
//! first-order backward and a composition of differentiable ops when the backward is
//! itself recorded (`create_graph`), so double backward works. See Note [Class-index
//! losses].

use super::pool::with_slice;
use super::{saved_at, Grads};
use crate::autograd::grad_mode;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::loss::{self as kernel, ClassBlock, ClassOptions};
use crate::tensor::{CmpOp, Scalar, Tensor};
use crate::variable::{SavedTensor, Variable};
use smallvec::smallvec;

/// How a loss reduces its per-element values: PyTorch's `reduction=` argument.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Keep one loss per element (per sample).
    None,
    /// The (weighted) mean.
    Mean,
    /// The sum.
    Sum,
}

impl Reduction {
    /// Parses PyTorch's names `"none"`, `"mean"`, `"sum"`; PyTorch's message otherwise.
    pub fn from_name(name: &str) -> Result<Reduction> {
        match name {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::InvalidArgument(format!(
                "{other} is not a valid value for reduction"
            ))),
        }
    }
}

/// The backward rules of this family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `nll_loss` (`log_softmax: false`) or fused `cross_entropy` with class indices;
    /// saved `[target, weight or None, input (cross_entropy only)]`.
    Class(Box<ClassLoss>),
    /// A pointwise loss (`mse_loss`, `smooth_l1_loss`, `huber_loss`,
    /// `binary_cross_entropy`, `binary_cross_entropy_with_logits`); saved `[input,
    /// target, weight or None, pos_weight or None]`.
    Pointwise(Box<Pointwise>),
    /// `multi_margin_loss` or `multilabel_margin_loss`; saved `[input]`.
    Margin(Box<MarginLoss>),
    /// The per-sample negative log-likelihoods of `ctc_loss`; saved `[log_probs]`.
    Ctc(Box<CtcLoss>),
}

/// What a class-index loss node keeps besides its saved tensors.
#[derive(Clone, Debug)]
pub(crate) struct ClassLoss {
    block: ClassBlock,
    /// The input's shape (`(C,)`, `(N, C)` or `(N, C, d1, ...)`).
    input_shape: Box<[usize]>,
    reduction: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
    log_softmax: bool,
    /// The sum of the targets' weights over the rows not ignored (`mean`'s divisor).
    total_weight: f64,
    /// Each row's log-sum-exp (cross_entropy), kept for the fused backward; the saved
    /// input's version check guarantees it still matches the input.
    lse: Option<Box<[f64]>>,
}

impl Rule {
    /// PyTorch's grad_fn class name: the name of the last node PyTorch records for the
    /// same call, since one fused node stands for its whole chain (Note [Class-index
    /// losses]): AddBackward0 with label smoothing, ViewBackward0 for an unreduced 3-D
    /// or >4-D input (PyTorch reshapes it to 4-D and back), NllLoss2DBackward0 for
    /// other N-D inputs, else NllLossBackward0.
    pub(crate) fn name(&self) -> &'static str {
        let c = match self {
            Rule::Class(c) => c,
            Rule::Pointwise(p) => return p.kind.name(),
            Rule::Margin(m) => return m.name(),
            Rule::Ctc(_) => return "CtcLossBackward0",
        };
        let ndim = c.input_shape.len();
        if c.label_smoothing > 0.0 {
            "AddBackward0"
        } else if c.reduction == Reduction::None && (ndim == 3 || ndim > 4) {
            "ViewBackward0"
        } else if ndim > 2 {
            "NllLoss2DBackward0"
        } else {
            "NllLossBackward0"
        }
    }

    /// The gradient of the input given `grad`, the gradient of the loss.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let c = match self {
            Rule::Class(c) => c,
            Rule::Pointwise(p) => return p.apply(saved, grad, needs),
            Rule::Margin(m) => return m.apply(saved, grad, needs),
            Rule::Ctc(c) => return c.apply(saved, grad, needs),
        };
        if !needs.first().copied().unwrap_or(false) {
            return Ok(smallvec![None]);
        }
        let target = saved_at(saved, 0)?
            .tensor()
            .contiguous()?
            .try_to_vec::<i64>()?;
        let weight = match saved.get(1).and_then(Option::as_ref) {
            Some(w) => Some(w.tensor().try_to_vec::<f64>()?),
            None => None,
        };
        let opts = ClassOptions {
            weight: weight.as_deref(),
            ignore_index: c.ignore_index,
            label_smoothing: c.label_smoothing,
            log_softmax: c.log_softmax,
        };
        let grad_input = if grad_mode::is_grad_enabled() {
            c.differentiable_backward(saved, grad, &target, &opts)?
        } else {
            c.fused_backward(saved, grad, &target, &opts)?
        };
        Ok(smallvec![Some(grad_input)])
    }
}

impl ClassLoss {
    /// The class dim of the input: 0 for `(C,)`, else 1.
    fn class_dim(&self) -> usize {
        usize::from(self.input_shape.len() > 1)
    }

    /// The first-order backward: one kernel pass, nothing recorded.
    fn fused_backward(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        target: &[i64],
        opts: &ClassOptions<'_>,
    ) -> Result<Variable> {
        if self.reduction == Reduction::Mean && self.total_weight == 0.0 {
            // Every row ignored: PyTorch writes no gradient anywhere (not G / 0 * 0).
            return Ok(Variable::from_tensor(Tensor::zeros(
                &self.input_shape,
                grad.dtype(),
            )?));
        }
        let g = grad.tensor().contiguous()?.try_to_vec::<f64>()?;
        let per_row = self.reduction == Reduction::None;
        let divisor = if self.reduction == Reduction::Mean {
            self.total_weight
        } else {
            1.0
        };
        let scale = |r: usize| if per_row { g[r] } else { g[0] / divisor };
        let dtype = grad.dtype();
        if self.log_softmax {
            let x = compute_input(&saved_at(saved, 2)?.tensor())?;
            let values = match x.dtype() {
                DType::F32 => Tensor::from_vec(
                    with_slice(&x, |s: &[f32]| {
                        kernel::class_loss_backward(
                            s,
                            target,
                            self.block,
                            opts,
                            self.lse.as_deref(),
                            &scale,
                        )
                    })?,
                    &self.input_shape,
                )?,
                DType::F64 => Tensor::from_vec(
                    with_slice(&x, |s: &[f64]| {
                        kernel::class_loss_backward(
                            s,
                            target,
                            self.block,
                            opts,
                            self.lse.as_deref(),
                            &scale,
                        )
                    })?,
                    &self.input_shape,
                )?,
                other => return Err(Error::unsupported_dtype("nll_loss_backward", other)),
            };
            return Ok(Variable::from_tensor(values.to_dtype(dtype)?));
        }
        let (q, _) = kernel::class_loss_targets(target, self.block, opts)?;
        let block = self.block;
        let mut values = q;
        for (k, v) in values.iter_mut().enumerate() {
            let r = (k / (block.classes * block.inner)) * block.inner + k % block.inner;
            *v *= -scale(r);
        }
        let values = Tensor::from_vec(values, &self.input_shape)?;
        Ok(Variable::from_tensor(values.to_dtype(dtype)?))
    }

    /// The backward as differentiable ops (under `create_graph`): with `Q` the weighted
    /// target distribution and `S` its row sums, `G * (S * softmax(x) - Q)` for
    /// cross_entropy and `-G * Q` for nll_loss, where `G` is the incoming gradient per
    /// row (divided by the total weight for `mean`).
    fn differentiable_backward(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        target: &[i64],
        opts: &ClassOptions<'_>,
    ) -> Result<Variable> {
        let dtype = grad.dtype();
        let cdim = self.class_dim();
        if self.reduction == Reduction::Mean && self.total_weight == 0.0 {
            // Every row ignored: PyTorch writes no gradient anywhere.
            return Ok(Variable::from_tensor(Tensor::zeros(
                &self.input_shape,
                dtype,
            )?));
        }
        let (q, s) = kernel::class_loss_targets(target, self.block, opts)?;
        let q = Variable::from_tensor(Tensor::from_vec(q, &self.input_shape)?.to_dtype(dtype)?);
        let g = match self.reduction {
            Reduction::None if self.input_shape.len() > 1 => grad.unsqueeze(1)?,
            Reduction::None | Reduction::Sum => grad.clone(),
            Reduction::Mean => grad.div_scalar(self.total_weight)?,
        };
        if !self.log_softmax {
            return q.mul(&g)?.neg();
        }
        let mut row_shape = self.input_shape.to_vec();
        row_shape[cdim] = 1;
        let s = Variable::from_tensor(Tensor::from_vec(s, &row_shape)?.to_dtype(dtype)?);
        let x = saved_at(saved, 2)?;
        x.softmax(cdim as i64)?.mul(&s)?.sub(&q)?.mul(&g)
    }
}

impl Variable {
    /// `nll_loss(input, target, weight, ignore_index, reduction)`: the negative
    /// log-likelihood of log-probabilities `self` (`(C,)`, `(N, C)` or
    /// `(N, C, d1, ...)`) at the class indices `target` (int64 or uint8, shape `()`,
    /// `(N,)` or `(N, d1, ...)`), each weighted by `weight[target]`; `mean` divides by
    /// the total weight of the rows whose target is not `ignore_index`.
    pub fn nll_loss(
        &self,
        target: &Tensor,
        weight: Option<&Variable>,
        reduction: Reduction,
        ignore_index: i64,
    ) -> Result<Variable> {
        self.class_loss(target, weight, reduction, ignore_index, 0.0, false)
    }

    /// `cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)`:
    /// with class indices (`target` int64/uint8, shaped as for [`Variable::nll_loss`]),
    /// one fused log-softmax + NLL node (grad_fn NllLossBackward0); with class
    /// probabilities (`target` floating point of `self`'s shape), the composition
    /// `-(log_softmax(input) * target * weight).sum(...)`, as in PyTorch.
    pub fn cross_entropy(
        &self,
        target: &Variable,
        weight: Option<&Variable>,
        reduction: Reduction,
        ignore_index: i64,
        label_smoothing: f64,
    ) -> Result<Variable> {
        crate::jit::op_opt(
            || crate::jit::Op::CrossEntropy {
                has_weight: weight.is_some(),
                reduction,
                ignore_index,
                label_smoothing,
            },
            &[self, target],
            &[weight],
            || {
                if !(0.0..=1.0).contains(&label_smoothing) {
                    return Err(Error::InvalidArgument(format!(
                        "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
                    )));
                }
                if self.dim() >= 1 && self.shape() == target.shape() {
                    return self.cross_entropy_probabilities(
                        target,
                        weight,
                        reduction,
                        label_smoothing,
                    );
                }
                if self.dim() == 0 && target.dim() == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "Expected floating point type for target with class probabilities, got {}",
                        target.dtype().scalar_type_name()
                    )));
                }
                let target = target.tensor().clone();
                self.class_loss(
                    &target,
                    weight,
                    reduction,
                    ignore_index,
                    label_smoothing,
                    true,
                )
            },
        )
    }

    fn cross_entropy_probabilities(
        &self,
        target: &Variable,
        weight: Option<&Variable>,
        reduction: Reduction,
        label_smoothing: f64,
    ) -> Result<Variable> {
        if !target.dtype().is_floating_point() {
            return Err(Error::InvalidArgument(format!(
                "Expected floating point type for target with class probabilities, got {}",
                target.dtype().scalar_type_name()
            )));
        }
        let cdim = usize::from(self.dim() > 1);
        let classes = self.shape()[cdim];
        check_weight(weight, classes)?;
        let mut logp = self.log_softmax(cdim as i64)?;
        let target = if label_smoothing > 0.0 {
            target
                .mul_scalar(1.0 - label_smoothing)?
                .add_scalar(label_smoothing / classes as f64)?
        } else {
            target.clone()
        };
        if let Some(w) = weight {
            let mut shape = vec![1i64; self.dim()];
            shape[cdim] = classes as i64;
            logp = logp.mul(&w.reshape(&shape)?)?;
        }
        let product = logp.mul(&target)?;
        match reduction {
            Reduction::None => product.sum_dims(&[cdim as i64], false)?.neg(),
            Reduction::Sum => product.sum()?.neg(),
            Reduction::Mean => {
                // ATen divides by the C++ integer `numel / n_classes` (DivBackward1).
                let rows = self.numel() / classes.max(1);
                product.sum()?.neg()?.div_number(Scalar::Int(rows as i64))
            }
        }
    }

    fn class_loss(
        &self,
        target: &Tensor,
        weight: Option<&Variable>,
        reduction: Reduction,
        ignore_index: i64,
        label_smoothing: f64,
        log_softmax: bool,
    ) -> Result<Variable> {
        let shape = self.shape();
        let block = check_class_shapes(&shape, target)?;
        if !matches!(target.dtype(), DType::I64 | DType::U8) {
            return Err(Error::InvalidArgument(format!(
                "expected target dtype to be Long or Byte, but got {}",
                target.dtype().scalar_type_name()
            )));
        }
        check_weight(weight, block.classes)?;
        if let Some(w) = weight {
            if w.dtype() != self.dtype() {
                return Err(Error::InvalidArgument(format!(
                    "expected scalar type {} but found {}",
                    self.dtype().scalar_type_name(),
                    w.dtype().scalar_type_name()
                )));
            }
            if w.requires_grad() && grad_mode::is_grad_enabled() {
                return Err(Error::InvalidArgument(
                    "The function 'nll_loss_forward' is not differentiable with respect to \
                     argument 'weight'. This input cannot have requires_grad True."
                        .into(),
                ));
            }
        }
        let dtype = self.dtype();
        let op = if log_softmax {
            "log_softmax_lastdim_kernel_impl"
        } else {
            "nll_loss_forward_out_frame"
        };
        if !dtype.is_floating_point() {
            return Err(Error::unsupported_dtype(op, dtype));
        }
        let targets = target.contiguous()?.try_to_vec::<i64>()?;
        let weights = match weight {
            Some(w) => Some(w.tensor().try_to_vec::<f64>()?),
            None => None,
        };
        let opts = ClassOptions {
            weight: weights.as_deref(),
            ignore_index,
            label_smoothing,
            log_softmax,
        };
        // The view's own elements (a slice of a larger tensor starts at its offset):
        // `with_slice` hands the kernel exactly `numel` contiguous values.
        let x = compute_input(&self.tensor())?;
        let forward = match x.dtype() {
            DType::F64 => with_slice(&x, |s: &[f64]| {
                kernel::class_loss_forward(s, &targets, block, &opts)
            }),
            _ => with_slice(&x, |s: &[f32]| {
                kernel::class_loss_forward(s, &targets, block, &opts)
            }),
        }?;
        let total_weight = forward.total_weight;
        let losses: Vec<f64> = forward.rows.iter().map(|r| r.0).collect();
        let lse: Option<Box<[f64]>> =
            log_softmax.then(|| forward.rows.iter().map(|r| r.1).collect());
        let result = match reduction {
            Reduction::None => {
                let out_shape: &[usize] = if shape.len() == 1 {
                    &[]
                } else {
                    target.shape()
                };
                Tensor::from_vec(losses, out_shape)?.to_dtype(dtype)?
            }
            Reduction::Sum => Tensor::scalar(losses.iter().sum(), dtype),
            Reduction::Mean => Tensor::scalar(losses.iter().sum::<f64>() / total_weight, dtype),
        };
        let params = ClassLoss {
            block,
            input_shape: shape.as_slice().into(),
            reduction,
            ignore_index,
            label_smoothing,
            log_softmax,
            total_weight,
            lse,
        };
        let target = Variable::from_tensor(target.clone());
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::Class(Box::new(params)),
                smallvec![
                    Some(SavedTensor::input(&target)),
                    weight.map(SavedTensor::input),
                    log_softmax.then(|| SavedTensor::input(self)),
                ],
            )
        }))
    }
}

/// The input of a class-index kernel: float32 and float64 as they are, float16 and
/// bfloat16 converted to float32 (the kernels accumulate in f64 and the result is
/// rounded to the input's dtype, where ATen computes in float32 and rounds its
/// log-softmax to the half dtype first: within the half dtype's precision).
fn compute_input(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::F16 | DType::BF16 => x.to_dtype(DType::F32),
        _ => Ok(x.clone()),
    }
}

/// PyTorch's checks of a class-index loss's shapes; the problem's block.
fn check_class_shapes(input: &[usize], target: &Tensor) -> Result<ClassBlock> {
    let tshape = target.shape();
    match input.len() {
        0 => Err(Error::InvalidArgument(
            "Expected 1 or more dimensions (got 0)".into(),
        )),
        1 => {
            if tshape.len() > 1 || (tshape.len() == 1 && tshape[0] != 1) {
                return Err(Error::InvalidArgument(format!(
                    "For 1D input, 1D target must have size 1, but got target size: {}",
                    tshape.first().copied().unwrap_or(0)
                )));
            }
            Ok(ClassBlock {
                outer: 1,
                classes: input[0],
                inner: 1,
            })
        }
        _ => {
            if tshape.first().is_some_and(|&n| n != input[0]) {
                return Err(Error::InvalidArgument(format!(
                    "Expected input batch_size ({}) to match target batch_size ({}).",
                    input[0], tshape[0]
                )));
            }
            if input.len() == 2 && tshape.len() != 1 {
                return Err(Error::InvalidArgument(
                    "0D or 1D target tensor expected, multi-target not supported".into(),
                ));
            }
            let expected: Vec<usize> = std::iter::once(input[0])
                .chain(input[2..].iter().copied())
                .collect();
            if input.len() > 2 && tshape != expected.as_slice() {
                return Err(Error::InvalidArgument(format!(
                    "Expected target size {expected:?}, got {tshape:?}"
                )));
            }
            Ok(ClassBlock {
                outer: input[0],
                classes: input[1],
                inner: input[2..].iter().product(),
            })
        }
    }
}

/// PyTorch's check that a class weight has one entry per class.
fn check_weight(weight: Option<&Variable>, classes: usize) -> Result<()> {
    match weight {
        Some(w) if w.numel() != classes || w.dim() != 1 => {
            Err(Error::InvalidArgument(format!(
                "weight tensor should be defined either for all {classes} classes or no classes but got weight tensor of shape: {:?}",
                w.shape().as_slice()
            )))
        }
        _ => Ok(()),
    }
}

// ----- pointwise losses ------------------------------------------------------------------

/// A pointwise loss between an input and a target of one (broadcast) shape.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum PointwiseLoss {
    /// `(x - y)^2` (`mse_loss`).
    Mse,
    /// `0.5 (x - y)^2 / beta` where `|x - y| < beta`, else `|x - y| - 0.5 beta`
    /// (`smooth_l1_loss`; `beta = 0` is the L1 loss).
    SmoothL1 {
        /// The threshold between the quadratic and linear parts.
        beta: f64,
    },
    /// `0.5 (x - y)^2` where `|x - y| < delta`, else `delta (|x - y| - 0.5 delta)`
    /// (`huber_loss`).
    Huber {
        /// The threshold between the quadratic and linear parts.
        delta: f64,
    },
    /// `-w (y max(log x, -100) + (1 - y) max(log(1 - x), -100))`
    /// (`binary_cross_entropy`; `x` in `[0, 1]`).
    BinaryCrossEntropy,
    /// `w ((1 - y) x - (1 + (p - 1) y) log(sigmoid(x)))` with `p` the positive weight
    /// (`binary_cross_entropy_with_logits`).
    BinaryCrossEntropyWithLogits,
    /// `log(1 + exp(-y x))` (`soft_margin_loss`; the target is not differentiable).
    SoftMargin,
}

/// What a pointwise loss node keeps besides its saved tensors.
#[derive(Clone, Debug)]
pub(crate) struct Pointwise {
    kind: PointwiseLoss,
    reduction: Reduction,
    /// The broadcast shape of input and target.
    shape: Box<[usize]>,
}

impl PointwiseLoss {
    fn name(&self) -> &'static str {
        match self {
            PointwiseLoss::Mse => "MseLossBackward0",
            PointwiseLoss::SmoothL1 { .. } => "SmoothL1LossBackward0",
            PointwiseLoss::Huber { .. } => "HuberLossBackward0",
            PointwiseLoss::BinaryCrossEntropy => "BinaryCrossEntropyBackward0",
            PointwiseLoss::BinaryCrossEntropyWithLogits => "BinaryCrossEntropyWithLogitsBackward0",
            PointwiseLoss::SoftMargin => "SoftMarginLossBackward0",
        }
    }

    /// The name of PyTorch's CPU kernel, for its dtype error.
    fn kernel_name(&self) -> &'static str {
        match self {
            PointwiseLoss::Mse => "mse_cpu",
            PointwiseLoss::SmoothL1 { .. } => "smooth_l1_cpu",
            PointwiseLoss::Huber { .. } => "huber_cpu",
            PointwiseLoss::BinaryCrossEntropy => "binary_cross_entropy",
            PointwiseLoss::BinaryCrossEntropyWithLogits => "log_sigmoid_cpu",
            PointwiseLoss::SoftMargin => "exp_vml_cpu",
        }
    }

    /// The unreduced loss, with differentiable ops (the forward runs it without
    /// recording).
    fn elementwise(
        &self,
        x: &Variable,
        y: &Variable,
        weight: Option<&Variable>,
        pos_weight: Option<&Variable>,
    ) -> Result<Variable> {
        let loss = match *self {
            PointwiseLoss::Mse => {
                let d = x.sub(y)?;
                d.mul(&d)?
            }
            PointwiseLoss::SmoothL1 { beta } => {
                let d = x.sub(y)?.abs()?;
                if beta == 0.0 {
                    d
                } else {
                    let small = d
                        .tensor()
                        .compare(&Tensor::scalar(beta, d.dtype()), CmpOp::Lt)?;
                    let quadratic = d.mul(&d)?.mul_scalar(0.5 / beta)?;
                    Variable::where_cond(&small, &quadratic, &d.add_scalar(-0.5 * beta)?)?
                }
            }
            PointwiseLoss::Huber { delta } => {
                let d = x.sub(y)?.abs()?;
                let small = d
                    .tensor()
                    .compare(&Tensor::scalar(delta, d.dtype()), CmpOp::Lt)?;
                let quadratic = d.mul(&d)?.mul_scalar(0.5)?;
                let linear = d.add_scalar(-0.5 * delta)?.mul_scalar(delta)?;
                Variable::where_cond(&small, &quadratic, &linear)?
            }
            PointwiseLoss::BinaryCrossEntropy => {
                let log_x = x.log()?.clamp(Some(-100.0), None)?;
                let log_1mx = x.rsub_scalar(1.0)?.log()?.clamp(Some(-100.0), None)?;
                let term = y.mul(&log_x)?.add(&y.rsub_scalar(1.0)?.mul(&log_1mx)?)?;
                term.neg()?
            }
            PointwiseLoss::BinaryCrossEntropyWithLogits => {
                let linear = y.rsub_scalar(1.0)?.mul(x)?;
                let log_weight = match pos_weight {
                    Some(p) => Some(p.add_scalar(-1.0)?.mul(y)?.add_scalar(1.0)?),
                    None => None,
                };
                let soft = x.log_sigmoid()?;
                let soft = match &log_weight {
                    Some(lw) => lw.mul(&soft)?,
                    None => soft,
                };
                linear.sub(&soft)?
            }
            PointwiseLoss::SoftMargin => x.neg()?.mul(y)?.exp()?.log1p()?,
        };
        match weight {
            Some(w) => loss.mul(w),
            None => Ok(loss),
        }
    }

    /// The gradients of the unreduced loss times `g` (of the loss's shape) with respect
    /// to the input and the target, as differentiable ops.
    fn backward(
        &self,
        x: &Variable,
        y: &Variable,
        weight: Option<&Variable>,
        pos_weight: Option<&Variable>,
        g: &Variable,
    ) -> Result<(Variable, Variable)> {
        let g = match weight {
            Some(w) => g.mul(w)?,
            None => g.clone(),
        };
        let (gx, gy) = match *self {
            PointwiseLoss::Mse => {
                let gx = x.sub(y)?.mul_scalar(2.0)?.mul(&g)?;
                let gy = gx.neg()?;
                (gx, gy)
            }
            PointwiseLoss::SmoothL1 { beta } => {
                let d = x.sub(y)?;
                let slope = if beta == 0.0 {
                    d.sign()?
                } else {
                    d.div_scalar(beta)?.clamp(Some(-1.0), Some(1.0))?
                };
                let gx = slope.mul(&g)?;
                (gx.clone(), gx.neg()?)
            }
            PointwiseLoss::Huber { delta } => {
                let gx = x.sub(y)?.clamp(Some(-delta), Some(delta))?.mul(&g)?;
                (gx.clone(), gx.neg()?)
            }
            PointwiseLoss::BinaryCrossEntropy => {
                let one_minus_x = x.rsub_scalar(1.0)?;
                let denom = one_minus_x.mul(x)?.clamp(Some(1e-12), None)?;
                let gx = x.sub(y)?.div(&denom)?.mul(&g)?;
                let log_x = x.log()?.clamp(Some(-100.0), None)?;
                let log_1mx = one_minus_x.log()?.clamp(Some(-100.0), None)?;
                let gy = log_1mx.sub(&log_x)?.mul(&g)?;
                (gx, gy)
            }
            PointwiseLoss::BinaryCrossEntropyWithLogits => {
                let (gx, gy) = match pos_weight {
                    Some(p) => {
                        let log_weight = p.add_scalar(-1.0)?.mul(y)?.add_scalar(1.0)?;
                        let gx = x.sigmoid()?.mul(&log_weight)?.sub(&p.mul(y)?)?;
                        let gy = x.neg()?.sub(&p.add_scalar(-1.0)?.mul(&x.log_sigmoid()?)?)?;
                        (gx, gy)
                    }
                    None => (x.sigmoid()?.sub(y)?, x.neg()?),
                };
                (gx.mul(&g)?, gy.mul(&g)?)
            }
            PointwiseLoss::SoftMargin => {
                // d/dx log(1 + exp(-y x)) = -y exp(-y x) / (1 + exp(-y x)).
                let z = x.neg()?.mul(y)?.exp()?;
                let s = z.div(&z.add_scalar(1.0)?)?.mul(&g)?;
                (y.mul(&s)?.neg()?, x.mul(&s)?.neg()?)
            }
        };
        Ok((gx, gy))
    }
}

impl Pointwise {
    fn apply(&self, saved: &[Option<Variable>], grad: &Variable, needs: &[bool]) -> Result<Grads> {
        let x = saved_at(saved, 0)?;
        let y = saved_at(saved, 1)?;
        let weight = saved.get(2).and_then(Option::as_ref);
        let pos_weight = saved.get(3).and_then(Option::as_ref);
        let dims: Vec<i64> = self.shape.iter().map(|&s| s as i64).collect();
        let g = match self.reduction {
            Reduction::None => grad.clone(),
            Reduction::Sum => grad.expand(&dims)?,
            Reduction::Mean => {
                let n = self.shape.iter().product::<usize>();
                grad.div_scalar(n as f64)?.expand(&dims)?
            }
        };
        let (gx, gy) = self.kind.backward(x, y, weight, pos_weight, &g)?;
        // A broadcast weight can make the products larger than the operands.
        let gx = gx.sum_to_size(&x.shape())?;
        let gy = gy.sum_to_size(&y.shape())?;
        Ok(smallvec![
            needs.first().copied().unwrap_or(false).then_some(gx),
            needs.get(1).copied().unwrap_or(false).then_some(gy),
        ])
    }
}

impl Variable {
    /// A pointwise loss between `self` and `target` (broadcast together), optionally
    /// weighted (`weight`, broadcast) and, for `BinaryCrossEntropyWithLogits`, with a
    /// positive-class weight; reduced by `reduction`. One node with PyTorch's grad_fn
    /// name (MseLossBackward0, ...) whose backward is written with differentiable ops.
    ///
    /// A weighted `Mse` or `Huber` loss is instead PyTorch's functional composite (its
    /// weight is differentiable): `pow(self - target, 2) * weight` with the mean divided
    /// by `weight.sum()`, and the unweighted Huber loss times `weight` with a plain mean
    /// (see [`Variable::weighted_loss`]).
    pub fn pointwise_loss(
        &self,
        target: &Variable,
        kind: PointwiseLoss,
        weight: Option<&Variable>,
        pos_weight: Option<&Variable>,
        reduction: Reduction,
    ) -> Result<Variable> {
        crate::jit::op_opt(
            || crate::jit::Op::PointwiseLoss {
                kind,
                has_weight: weight.is_some(),
                has_pos_weight: pos_weight.is_some(),
                reduction,
            },
            &[self, target],
            &[weight, pos_weight],
            || {
                match (kind, weight) {
                    (PointwiseLoss::Mse, Some(w)) => {
                        let squared = self.sub(target)?.pow_scalar_value(Scalar::Int(2))?;
                        return squared.weighted_loss(w, reduction, WeightedMean::ByWeightSum);
                    }
                    (PointwiseLoss::Huber { .. }, Some(w)) => {
                        let loss =
                            self.pointwise_loss(target, kind, None, None, Reduction::None)?;
                        return loss.weighted_loss(w, reduction, WeightedMean::ByCount);
                    }
                    _ => {}
                }
                for operand in [self, target] {
                    if !operand.dtype().is_floating_point() {
                        return Err(Error::unsupported_dtype(
                            kind.kernel_name(),
                            operand.dtype(),
                        ));
                    }
                }
                if kind == PointwiseLoss::SoftMargin
                    && target.requires_grad()
                    && grad_mode::is_grad_enabled()
                {
                    return Err(Error::InvalidArgument(
                "The function 'soft_margin_loss' is not differentiable with respect to argument \
                 'target'. This input cannot have requires_grad True."
                    .into(),
            ));
                }
                let shape = crate::shape::broadcast_shapes(&self.shape(), &target.shape())?;
                let dims: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
                let x = if self.shape() == shape {
                    self.clone()
                } else {
                    self.expand(&dims)?
                };
                let y = if target.shape() == shape {
                    target.clone()
                } else {
                    target.expand(&dims)?
                };
                if kind == PointwiseLoss::BinaryCrossEntropy {
                    let t = x.tensor().to_dtype(DType::F64)?;
                    let values = t.try_to_vec::<f64>()?;
                    if values.iter().any(|v| !(0.0..=1.0).contains(v)) {
                        return Err(Error::InvalidArgument(
                            "all elements of input should be between 0 and 1".into(),
                        ));
                    }
                }
                let (loss, loss_shape) = {
                    let _no_grad = grad_mode::GradModeGuard::new(false);
                    let elementwise = kind.elementwise(&x, &y, weight, pos_weight)?;
                    let loss_shape = elementwise.shape();
                    let loss = match reduction {
                        Reduction::None => elementwise,
                        Reduction::Mean => elementwise.mean()?,
                        Reduction::Sum => elementwise.sum()?,
                    };
                    (loss, loss_shape)
                };
                let result = loss.tensor().clone();
                let params = Pointwise {
                    kind,
                    reduction,
                    shape: loss_shape.as_slice().into(),
                };
                Ok(Variable::record(result, &[&x, &y], |_, _| {
                    (
                        Rule::Pointwise(Box::new(params)),
                        smallvec![
                            Some(SavedTensor::input(&x)),
                            Some(SavedTensor::input(&y)),
                            weight.map(SavedTensor::input),
                            pos_weight.map(SavedTensor::input),
                        ],
                    )
                }))
            },
        )
    }
}

// ----- composite losses ------------------------------------------------------------------
//
// PyTorch composes these of differentiable ops (in ATen or in torch.nn.functional); so do
// we, with the same ops in the same order, so their grad_fn names are PyTorch's. See Note
// [Functional losses and norms in Rust].

/// The reduction of PyTorch's `apply_loss_reduction`.
fn reduce(loss: Variable, reduction: Reduction) -> Result<Variable> {
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Mean => loss.mean(),
        Reduction::Sum => loss.sum(),
    }
}

/// What the `"mean"` of a weighted elementwise loss divides by (PyTorch 2.15's
/// `torch.nn.functional` weighted paths differ per loss).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WeightedMean {
    /// `sum(loss * weight) / sum(weight)` (`mse_loss`, `l1_loss`).
    ByWeightSum,
    /// `mean(loss * weight)` (`huber_loss`).
    ByCount,
}

impl Variable {
    /// The weighted path of PyTorch's elementwise losses, on the unweighted elementwise
    /// loss `self`: `self * weight` (broadcast, both differentiable), then summed, or
    /// averaged as `mean` says (MulBackward0 / SumBackward0 / DivBackward0 or
    /// MeanBackward0, as PyTorch's).
    pub fn weighted_loss(
        &self,
        weight: &Variable,
        reduction: Reduction,
        mean: WeightedMean,
    ) -> Result<Variable> {
        let loss = self.mul(weight)?;
        match (reduction, mean) {
            (Reduction::Mean, WeightedMean::ByWeightSum) => loss.sum()?.div(&weight.sum()?),
            _ => reduce(loss, reduction),
        }
    }
}

/// How `kl_div` reduces: PyTorch's reductions plus `"batchmean"` (the sum divided by
/// the batch size).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum KlReduction {
    /// One of the usual reductions.
    Plain(Reduction),
    /// The sum divided by `input.size(0)`.
    BatchMean,
}

impl KlReduction {
    /// Parses `"none"`, `"mean"`, `"sum"`, `"batchmean"`.
    pub fn from_name(name: &str) -> Result<KlReduction> {
        if name == "batchmean" {
            Ok(KlReduction::BatchMean)
        } else {
            Reduction::from_name(name).map(KlReduction::Plain)
        }
    }
}

impl Variable {
    /// `l1_loss(input, target, reduction, weight)`: `|input - target|`, reduced
    /// (AbsBackward0 / MeanBackward0 / SumBackward0, as PyTorch's composite); with a
    /// weight, [`Variable::weighted_loss`] (the mean divided by `weight.sum()`).
    pub fn l1_loss(
        &self,
        target: &Variable,
        weight: Option<&Variable>,
        reduction: Reduction,
    ) -> Result<Variable> {
        let loss = self.sub(target)?.abs()?;
        match weight {
            Some(w) => loss.weighted_loss(w, reduction, WeightedMean::ByWeightSum),
            None => reduce(loss, reduction),
        }
    }

    /// `kl_div(input, target, reduction, log_target)`: `target * (log(target) - input)`
    /// pointwise (`exp(target) * (target - input)` with `log_target`), reduced.
    pub fn kl_div(
        &self,
        target: &Variable,
        reduction: KlReduction,
        log_target: bool,
    ) -> Result<Variable> {
        let loss = if log_target {
            target.exp()?.mul(&target.sub(self)?)?
        } else {
            target.xlogy(target)?.sub(&target.mul(self)?)?
        };
        match reduction {
            KlReduction::Plain(r) => reduce(loss, r),
            KlReduction::BatchMean if self.dim() == 0 => loss.sum(),
            KlReduction::BatchMean => loss.sum()?.div_scalar(self.shape()[0] as f64),
        }
    }

    /// `poisson_nll_loss(input, target, log_input, full, eps, reduction)`:
    /// `exp(input) - target * input` (or `input - target * log(input + eps)`), plus
    /// Stirling's approximation of `log(target!)` for targets above 1 when `full`.
    pub fn poisson_nll_loss(
        &self,
        target: &Variable,
        log_input: bool,
        full: bool,
        eps: f64,
        reduction: Reduction,
    ) -> Result<Variable> {
        let mut loss = if log_input {
            self.exp()?.sub(&target.mul(self)?)?
        } else {
            self.sub(&target.mul(&self.add_scalar(eps)?.log()?)?)?
        };
        if full {
            let stirling = target.mul(&target.log()?)?.sub(target)?.add(
                &target
                    .mul_scalar(2.0 * std::f64::consts::PI)?
                    .log()?
                    .mul_scalar(0.5)?,
            )?;
            let small = target
                .tensor()
                .compare(&Tensor::scalar(1.0, target.dtype()), CmpOp::Le)?;
            let zero = Variable::from_tensor(Tensor::scalar(0.0, stirling.dtype()));
            loss = loss.add(&stirling.masked_fill(&small, &zero)?)?;
        }
        reduce(loss, reduction)
    }

    /// `cosine_similarity(x1, x2, dim, eps)`: `sum(x1 / max(|x1|, eps) * x2 / max(|x2|,
    /// eps))` along `dim`, after broadcasting; the norms are clamped without recording
    /// the clamp, as PyTorch clamps them in place under no-grad (SumBackward1).
    pub fn cosine_similarity(&self, other: &Variable, dim: i64, eps: f64) -> Result<Variable> {
        let common = DType::promote(self.dtype(), other.dtype());
        if !common.is_floating_point() {
            return Err(Error::InvalidArgument(format!(
                "expected common dtype to be floating point, yet common dtype is {}",
                common.scalar_type_name()
            )));
        }
        let shape = crate::shape::broadcast_shapes(&self.shape(), &other.shape())?;
        let dims: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        let expand = |v: &Variable| {
            if v.shape() == shape {
                Ok(v.clone())
            } else {
                v.expand(&dims)
            }
        };
        let (x1, x2) = (expand(self)?, expand(other)?);
        let clamped_norm = |x: &Variable| -> Result<Variable> {
            let norm = x.vector_norm(2.0, Some(&[dim]), true)?;
            let lift = {
                let _no_grad = grad_mode::GradModeGuard::new(false);
                norm.clamp(Some(eps), None)?.sub(&norm)?
            };
            norm.add(&lift)
        };
        let (n1, n2) = (clamped_norm(&x1)?, clamped_norm(&x2)?);
        x1.div(&n1)?.mul(&x2.div(&n2)?)?.sum_dims(&[dim], false)
    }

    /// `pairwise_distance(x1, x2, p, eps, keepdim)`: the `p`-norm of `x1 - x2 + eps` over
    /// the last dim of the broadcast shape.
    pub fn pairwise_distance(
        &self,
        other: &Variable,
        p: f64,
        eps: f64,
        keepdim: bool,
    ) -> Result<Variable> {
        let last = self.dim().max(other.dim()) as i64 - 1;
        let dims = [last];
        let dims: Option<&[i64]> = if last < 0 { None } else { Some(&dims) };
        self.sub(other)?
            .add_scalar(eps)?
            .vector_norm(p, dims, keepdim)
    }

    /// `cosine_embedding_loss(input1, input2, target, margin, reduction)`: `1 - cos`
    /// where `target == 1`, `max(0, cos - margin)` where `target == -1`, with PyTorch's
    /// `1e-12` added to the squared magnitudes.
    pub fn cosine_embedding_loss(
        &self,
        other: &Variable,
        target: &Variable,
        margin: f64,
        reduction: Reduction,
    ) -> Result<Variable> {
        let tdim = target.dim();
        let sizes = || {
            format!(
                "{:?} and {:?}",
                self.shape().as_slice(),
                other.shape().as_slice()
            )
        };
        match tdim {
            1 if self.dim() != 2 || other.dim() != 2 => {
                return Err(Error::InvalidArgument(format!(
                    "1D target tensor expects 2D input tensors, but found inputs with sizes {}.",
                    sizes()
                )))
            }
            0 if self.dim() != 1 || other.dim() != 1 => {
                return Err(Error::InvalidArgument(format!(
                    "0D target tensor expects 1D input tensors, but found inputs with sizes {}.",
                    sizes()
                )))
            }
            0 | 1 => {}
            _ => {
                return Err(Error::InvalidArgument(
                    "0D or 1D target tensor expected, multi-target not supported".into(),
                ))
            }
        }
        let d = [tdim as i64];
        let prod_sum = self.mul(other)?.sum_dims(&d, false)?;
        let mag1 = self.mul(self)?.sum_dims(&d, false)?.add_scalar(1e-12)?;
        let mag2 = other.mul(other)?.sum_dims(&d, false)?.add_scalar(1e-12)?;
        let cos = prod_sum.div(&mag1.mul(&mag2)?.sqrt()?)?;
        let zeros = Variable::from_tensor(Tensor::scalar(0.0, cos.dtype()));
        let pos = cos.rsub_scalar(1.0)?;
        let neg = cos.add_scalar(-margin)?.clamp_min(Scalar::Int(0))?;
        let t = target.tensor();
        let is = |v: f64| t.compare(&Tensor::scalar(v, t.dtype()), CmpOp::Eq);
        let out = Variable::where_cond(&is(1.0)?, &pos, &zeros)?.add(&Variable::where_cond(
            &is(-1.0)?,
            &neg,
            &zeros,
        )?)?;
        reduce(out, reduction)
    }

    /// `margin_ranking_loss(input1, input2, target, margin, reduction)`:
    /// `max(0, -target * (input1 - input2) + margin)`, reduced.
    pub fn margin_ranking_loss(
        &self,
        other: &Variable,
        target: &Variable,
        margin: f64,
        reduction: Reduction,
    ) -> Result<Variable> {
        if self.dim() != other.dim() || self.dim() != target.dim() {
            return Err(Error::InvalidArgument(format!(
                "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: {:?}, input2: {:?}, target: {:?} ",
                self.shape().as_slice(),
                other.shape().as_slice(),
                target.shape().as_slice()
            )));
        }
        let loss = target
            .neg()?
            .mul(&self.sub(other)?)?
            .add_scalar(margin)?
            .clamp_min(Scalar::Int(0))?;
        reduce(loss, reduction)
    }

    /// `triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
    /// reduction)`: `max(0, margin + d(a, p) - d(a, n))` with `d` the pairwise distance
    /// (`swap`: the smaller of `d(a, n)` and `d(p, n)`).
    #[allow(clippy::too_many_arguments)]
    pub fn triplet_margin_loss(
        &self,
        positive: &Variable,
        negative: &Variable,
        margin: f64,
        p: f64,
        eps: f64,
        swap: bool,
        reduction: Reduction,
    ) -> Result<Variable> {
        let (a, pd, n) = (self.dim(), positive.dim(), negative.dim());
        if a != pd || pd != n {
            return Err(Error::InvalidArgument(format!(
                "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor {a}D, positive {pd}D, and negative {n}D inputs"
            )));
        }
        let dist_pos = self.pairwise_distance(positive, p, eps, false)?;
        let mut dist_neg = self.pairwise_distance(negative, p, eps, false)?;
        if swap {
            dist_neg = dist_neg.minimum(&positive.pairwise_distance(negative, p, eps, false)?)?;
        }
        let loss = dist_pos
            .add_scalar(margin)?
            .sub(&dist_neg)?
            .clamp_min(Scalar::Int(0))?;
        reduce(loss, reduction)
    }
}

// ----- margin and CTC losses ---------------------------------------------------------------
//
// PyTorch has dedicated CPU kernels for these (`multi_margin_loss`,
// `multilabel_margin_loss`, `_ctc_loss`); so does the engine (`kernels/loss.rs`). Their
// backwards are kernels too, and, as in PyTorch, not differentiable again. See Note
// [Margin and CTC losses].

/// Which margin loss a [`MarginLoss`] node computes.
#[derive(Clone, Debug)]
enum MarginKind {
    Multi {
        p: u8,
        margin: f64,
        weight: Option<Box<[f64]>>,
    },
    Multilabel,
}

/// What a margin loss node keeps besides its saved input.
#[derive(Clone, Debug)]
pub(crate) struct MarginLoss {
    kind: MarginKind,
    reduction: Reduction,
    targets: Box<[i64]>,
    /// The classes per row.
    dim: usize,
    input_shape: Box<[usize]>,
}

/// What a CTC node keeps besides its saved log-probabilities.
#[derive(Clone, Debug)]
pub(crate) struct CtcLoss {
    targets: Box<[i64]>,
    target_offsets: Box<[usize]>,
    target_stride: usize,
    input_lengths: Box<[usize]>,
    target_lengths: Box<[usize]>,
    blank: usize,
    zero_infinity: bool,
    nll: Box<[f64]>,
    log_alpha: Box<[f64]>,
    /// `(time, batch, classes)`.
    shape: [usize; 3],
}

impl CtcLoss {
    fn problem<'a>(&'a self, log_probs: &'a [f64]) -> kernel::Ctc<'a> {
        kernel::Ctc {
            log_probs,
            time: self.shape[0],
            batch: self.shape[1],
            classes: self.shape[2],
            targets: &self.targets,
            target_offsets: &self.target_offsets,
            target_stride: self.target_stride,
            input_lengths: &self.input_lengths,
            target_lengths: &self.target_lengths,
            blank: self.blank,
        }
    }

    fn apply(&self, saved: &[Option<Variable>], grad: &Variable, needs: &[bool]) -> Result<Grads> {
        if !needs.first().copied().unwrap_or(false) {
            return Ok(smallvec![None]);
        }
        let x = saved_at(saved, 0)?;
        let log_probs = x.tensor().try_to_vec::<f64>()?;
        let grad_out = grad.tensor().try_to_vec::<f64>()?;
        let values = kernel::ctc_backward(
            &self.problem(&log_probs),
            &self.nll,
            &self.log_alpha,
            &grad_out,
            self.zero_infinity,
        )?;
        let result = Tensor::from_vec(values, &self.shape)?.to_dtype(x.dtype())?;
        Ok(smallvec![Some(Variable::record_not_differentiable(
            result,
            &[x, grad],
            "derivative for aten::_ctc_loss_backward is not implemented",
        ))])
    }
}

impl MarginLoss {
    fn name(&self) -> &'static str {
        match self.kind {
            MarginKind::Multi { .. } => "MultiMarginLossBackward0",
            MarginKind::Multilabel => "MultilabelMarginLossBackward0",
        }
    }

    fn apply(&self, saved: &[Option<Variable>], grad: &Variable, needs: &[bool]) -> Result<Grads> {
        if !needs.first().copied().unwrap_or(false) {
            return Ok(smallvec![None]);
        }
        let x = saved_at(saved, 0)?;
        let values = x.tensor().try_to_vec::<f64>()?;
        let g = grad.tensor().try_to_vec::<f64>()?;
        let rows = values.len().checked_div(self.dim).unwrap_or(0);
        let per_row = self.reduction == Reduction::None;
        let divisor = match self.reduction {
            Reduction::Mean => (rows * self.dim) as f64,
            _ => self.dim as f64,
        };
        let scale = |r: usize| if per_row { g[r] } else { g[0] } / divisor;
        let (result, message) = match &self.kind {
            MarginKind::Multi { p, margin, weight } => {
                let opts = kernel::MultiMargin {
                    p: *p,
                    margin: *margin,
                    weight: weight.as_deref(),
                };
                (
                    kernel::multi_margin_backward(&values, &self.targets, self.dim, &opts, &scale)?,
                    "derivative for aten::multi_margin_loss_backward is not implemented",
                )
            }
            MarginKind::Multilabel => (
                kernel::multilabel_margin_backward(&values, &self.targets, self.dim, &scale)?,
                "derivative for aten::multilabel_margin_loss_backward is not implemented",
            ),
        };
        let result = Tensor::from_vec(result, &self.input_shape)?.to_dtype(x.dtype())?;
        Ok(smallvec![Some(Variable::record_not_differentiable(
            result,
            &[x, grad],
            message,
        ))])
    }
}

/// PyTorch's shape check of the margin losses: a non-empty vector or matrix, or a
/// scalar; `(frames, dim)`.
fn margin_frames(shape: &[usize]) -> Result<(usize, usize)> {
    match shape {
        [] => Ok((1, 1)),
        [d] if *d != 0 => Ok((1, *d)),
        [n, d] if *d != 0 => Ok((*n, *d)),
        _ => Err(Error::InvalidArgument(format!(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: {shape:?}"
        ))),
    }
}

/// PyTorch's "expected scalar type Long" check of a class-index target.
fn check_long(target: &Tensor) -> Result<()> {
    if target.dtype() != DType::I64 {
        return Err(Error::InvalidArgument(format!(
            "expected scalar type Long but found {}",
            target.dtype().scalar_type_name()
        )));
    }
    Ok(())
}

impl Variable {
    fn record_margin(
        &self,
        losses: Vec<f64>,
        out_shape: &[usize],
        params: MarginLoss,
    ) -> Result<Variable> {
        let rows = losses.len();
        let dtype = self.dtype();
        let result = match params.reduction {
            Reduction::None => Tensor::from_vec(losses, out_shape)?.to_dtype(dtype)?,
            Reduction::Sum => Tensor::scalar(losses.iter().sum(), dtype),
            Reduction::Mean => Tensor::scalar(losses.iter().sum::<f64>() / rows as f64, dtype),
        };
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::Margin(Box::new(params)),
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    /// `multi_margin_loss(input, target, p, margin, weight, reduction)`: per row of
    /// `self` (`()`, `(C,)` or `(N, C)`), `sum_{c != y} w_y max(0, margin - x_y +
    /// x_c)^p / C` with `y` the row's class index (`target` int64, `()` or `(N,)`).
    /// `p` is 1 or 2; the weight is not differentiable.
    pub fn multi_margin_loss(
        &self,
        target: &Tensor,
        p: i64,
        margin: f64,
        weight: Option<&Variable>,
        reduction: Reduction,
    ) -> Result<Variable> {
        if p != 1 && p != 2 {
            return Err(Error::InvalidArgument(
                "only p == 1 and p == 2 supported".into(),
            ));
        }
        let shape = self.shape();
        let (frames, dim) = margin_frames(&shape)?;
        if target.dim() > 1 || target.numel() != frames {
            return Err(Error::InvalidArgument(format!(
                "multi_margin_loss: target tensor should be 1-D with size equal to the number \
                 of input samples (batch size). Expected target size [{frames}], but got {:?}. \
                 Input has shape {shape:?}.",
                target.shape()
            )));
        }
        let weights = match weight {
            Some(w) => {
                if w.dim() > 1 || w.numel() != dim {
                    return Err(Error::InvalidArgument(format!(
                        "inconsistent weight size, expected {dim} but got {:?}",
                        w.shape()
                    )));
                }
                if w.dtype() != self.dtype() {
                    return Err(Error::InvalidArgument(format!(
                        "expected scalar type {} but found {}",
                        self.dtype().scalar_type_name(),
                        w.dtype().scalar_type_name()
                    )));
                }
                if w.requires_grad() && grad_mode::is_grad_enabled() {
                    return Err(Error::InvalidArgument(
                        "The function 'multi_margin_loss' is not differentiable with respect \
                         to argument 'weight'. This input cannot have requires_grad True."
                            .into(),
                    ));
                }
                Some(w.tensor().try_to_vec::<f64>()?.into_boxed_slice())
            }
            None => None,
        };
        check_long(target)?;
        if !matches!(self.dtype(), DType::F32 | DType::F64) {
            return Err(Error::unsupported_dtype(
                "multi_margin_loss_cpu_kernel",
                self.dtype(),
            ));
        }
        let targets = target.try_to_vec::<i64>()?;
        if targets.iter().any(|&t| t < 0 || t as usize >= dim) {
            return Err(Error::InvalidArgument("target out of range".into()));
        }
        let values = self.tensor().try_to_vec::<f64>()?;
        let opts = kernel::MultiMargin {
            p: p as u8,
            margin,
            weight: weights.as_deref(),
        };
        let losses = kernel::multi_margin_forward(&values, &targets, dim, &opts)?;
        let out_shape: &[usize] = if target.dim() > 0 { &[frames] } else { &[] };
        let params = MarginLoss {
            kind: MarginKind::Multi {
                p: p as u8,
                margin,
                weight: weights,
            },
            reduction,
            targets: targets.into(),
            dim,
            input_shape: shape.as_slice().into(),
        };
        self.record_margin(losses, out_shape, params)
    }

    /// `multilabel_margin_loss(input, target, reduction)`: per row of `self` (`()`,
    /// `(C,)` or `(N, C)`), `sum_{j, d} max(0, 1 - x_j + x_d) / C` over the row's target
    /// classes `j` (the entries of `target`, int64 of `self`'s shape, up to the first
    /// `-1`) and the classes `d` that are not targets.
    pub fn multilabel_margin_loss(
        &self,
        target: &Tensor,
        reduction: Reduction,
    ) -> Result<Variable> {
        let shape = self.shape();
        let (frames, dim) = margin_frames(&shape)?;
        let consistent = if shape.len() <= 1 {
            target.dim() <= 1 && target.numel() == dim
        } else {
            target.shape() == [frames, dim]
        };
        if !consistent {
            return Err(Error::InvalidArgument(format!(
                "inconsistent target size: {:?} for input of size: {shape:?}",
                target.shape()
            )));
        }
        check_long(target)?;
        if !matches!(self.dtype(), DType::F32 | DType::F64) {
            return Err(Error::unsupported_dtype(
                "multilabel_margin_loss_forward_out_frame",
                self.dtype(),
            ));
        }
        let targets = target.try_to_vec::<i64>()?;
        if targets.iter().any(|&t| t < -1 || t >= dim as i64) {
            return Err(Error::InvalidArgument(
                "argument #2 'target' is out of range".into(),
            ));
        }
        let values = self.tensor().try_to_vec::<f64>()?;
        let losses = kernel::multilabel_margin_forward(&values, &targets, dim)?;
        let out_shape: &[usize] = if target.dim() <= 1 { &[] } else { &[frames] };
        let params = MarginLoss {
            kind: MarginKind::Multilabel,
            reduction,
            targets: targets.into(),
            dim,
            input_shape: shape.as_slice().into(),
        };
        self.record_margin(losses, out_shape, params)
    }

    /// `ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
    /// zero_infinity)`: the connectionist temporal classification loss of
    /// log-probabilities `self` (`(T, N, C)`, or `(T, C)` unbatched) against `targets`
    /// (padded `(N, S)` or concatenated 1-D, integer). One CtcLossBackward0 node gives
    /// each sample's negative log-likelihood; `zero_infinity`, `mean` (each loss over its
    /// target length, clamped to 1, then averaged) and `sum` are composed on it as
    /// ATen's `ctc_loss` composes them.
    #[allow(clippy::too_many_arguments)]
    pub fn ctc_loss(
        &self,
        targets: &Tensor,
        input_lengths: &[i64],
        target_lengths: &[i64],
        blank: i64,
        reduction: Reduction,
        zero_infinity: bool,
    ) -> Result<Variable> {
        let batched = self.dim() == 3;
        let log_probs = if batched {
            self.clone()
        } else {
            self.unsqueeze(1)?
        };
        let mut res =
            log_probs.ctc_nll(targets, input_lengths, target_lengths, blank, zero_infinity)?;
        if zero_infinity {
            let inf = Tensor::scalar(f64::INFINITY, res.dtype());
            let is_inf = res.tensor().compare(&inf, CmpOp::Eq)?;
            let zero = Variable::from_tensor(Tensor::zeros(&[], res.dtype())?);
            res = Variable::where_cond(&is_inf, &zero, &res)?;
        }
        match reduction {
            Reduction::Mean => {
                let lengths: Vec<f64> = target_lengths.iter().map(|&l| l as f64).collect();
                let n = lengths.len();
                let lengths =
                    Variable::from_tensor(Tensor::from_vec(lengths, &[n])?.to_dtype(res.dtype())?)
                        .clamp_min(Scalar::Int(1))?;
                res.div(&lengths)?.mean()
            }
            Reduction::Sum => res.sum(),
            Reduction::None if batched => Ok(res),
            Reduction::None => res.squeeze_dim(0),
        }
    }

    /// The per-sample negative log-likelihoods of [`Variable::ctc_loss`] (`self` is
    /// `(T, N, C)`): ATen's `_ctc_loss`, with its checks and messages.
    fn ctc_nll(
        &self,
        targets: &Tensor,
        input_lengths: &[i64],
        target_lengths: &[i64],
        blank: i64,
        zero_infinity: bool,
    ) -> Result<Variable> {
        const CHECKING: &str = "(while checking arguments for ctc_loss_allocate_outputs)";
        let shape = self.shape();
        if shape.len() != 3 {
            return Err(Error::InvalidArgument(format!(
                "ctc_loss: expected log_probs to be 2-D or 3-D, but got {}-D",
                shape.len().saturating_sub(usize::from(shape.len() < 3))
            )));
        }
        let (time, batch, classes) = (shape[0], shape[1], shape[2]);
        if !matches!(self.dtype(), DType::F32 | DType::F64) {
            return Err(Error::unsupported_dtype("ctc_loss_cpu", self.dtype()));
        }
        if blank < 0 || blank >= classes as i64 {
            return Err(Error::InvalidArgument(
                "blank must be in label range".into(),
            ));
        }
        if input_lengths.len() != batch {
            return Err(Error::InvalidArgument(
                "input_lengths must be of size batch_size".into(),
            ));
        }
        if target_lengths.len() != batch {
            return Err(Error::InvalidArgument(
                "target_lengths must be of size batch_size".into(),
            ));
        }
        for &l in target_lengths {
            if l < 0 {
                return Err(Error::InvalidArgument(format!(
                    "Expected target_lengths to have value at least 0, but got value {l} {CHECKING}"
                )));
            }
        }
        let max_target = target_lengths.iter().copied().max().unwrap_or(0) as usize;
        let tshape = targets.shape();
        let (target_offsets, target_stride): (Vec<usize>, usize) = match tshape.len() {
            1 => {
                let mut pos = 0usize;
                let offsets = target_lengths
                    .iter()
                    .map(|&l| {
                        let start = pos;
                        pos += l as usize;
                        start
                    })
                    .collect();
                if tshape[0] != pos {
                    return Err(Error::InvalidArgument(format!(
                        "Expected tensor to have size {pos} at dimension 0, but got size {} for \
                         argument #2 'targets' {CHECKING}",
                        tshape[0]
                    )));
                }
                (offsets, 1)
            }
            2 => {
                if tshape[0] != batch {
                    return Err(Error::InvalidArgument(format!(
                        "Expected tensor to have size {batch} at dimension 0, but got size {} \
                         for argument #2 'targets' {CHECKING}",
                        tshape[0]
                    )));
                }
                if tshape[1] < max_target {
                    return Err(Error::InvalidArgument(format!(
                        "Expected tensor to have size at least {max_target} at dimension 1, but \
                         got size {} for argument #2 'targets' {CHECKING}",
                        tshape[1]
                    )));
                }
                ((0..batch).map(|b| b * tshape[1]).collect(), 1)
            }
            n => {
                return Err(Error::InvalidArgument(format!(
                    "Expected 1 to 2 dimensions, but got {n}-dimensional tensor for argument \
                     #2 'targets' {CHECKING}"
                )))
            }
        };
        for &l in input_lengths {
            if l < 0 {
                return Err(Error::InvalidArgument(format!(
                    "Expected input_lengths to have value at least 0, but got value {l} {CHECKING}"
                )));
            }
            if l as usize > time {
                return Err(Error::InvalidArgument(format!(
                    "Expected input_lengths to have value at most {time}, but got value {l} \
                     {CHECKING}"
                )));
            }
        }
        let target_values = targets.try_to_vec::<i64>()?;
        for (b, &l) in target_lengths.iter().enumerate() {
            for k in 0..l as usize {
                let label = target_values[target_offsets[b] + k * target_stride];
                if label < 0 || label >= classes as i64 {
                    return Err(Error::Index(format!(
                        "ctc_loss: target {label} is out of bounds for {classes} classes"
                    )));
                }
            }
        }
        let log_probs = self.tensor().try_to_vec::<f64>()?;
        let input_lengths: Vec<usize> = input_lengths.iter().map(|&l| l as usize).collect();
        let target_lengths: Vec<usize> = target_lengths.iter().map(|&l| l as usize).collect();
        let mut params = CtcLoss {
            targets: target_values.into(),
            target_offsets: target_offsets.into(),
            target_stride,
            input_lengths: input_lengths.into(),
            target_lengths: target_lengths.into(),
            blank: blank as usize,
            zero_infinity,
            nll: Box::new([]),
            log_alpha: Box::new([]),
            shape: [time, batch, classes],
        };
        let (nll, log_alpha) = kernel::ctc_forward(&params.problem(&log_probs))?;
        let result = Tensor::from_vec(nll.clone(), &[batch])?.to_dtype(self.dtype())?;
        params.nll = nll.into();
        params.log_alpha = log_alpha.into();
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::Ctc(Box::new(params)),
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loss of a view of a larger tensor (a slice at a storage offset, a slice of
    /// `log_softmax`'s output) and its gradient equal those of a contiguous copy: the
    /// kernels got the whole storage and raised "class loss operands do not match their
    /// block" (issue 19).
    #[test]
    fn class_losses_of_views_match_contiguous_copies() -> Result<()> {
        let values: Vec<f64> = (0..20).map(|i| ((i * 7) % 11) as f64 * 0.3 - 1.2).collect();
        let target = Tensor::from_vec(vec![2i64, 0, 3], &[3])?;
        for log_softmax in [true, false] {
            let base = Variable::new(Tensor::from_vec(values.clone(), &[5, 4])?, true)?;
            let view = if log_softmax {
                base.narrow(0, 2, 3)?
            } else {
                base.log_softmax(1)?.narrow(0, 2, 3)?
            };
            let copy = Variable::new(Tensor::from_vec(values[8..].to_vec(), &[3, 4])?, true)?;
            let copy_in = if log_softmax {
                copy.clone()
            } else {
                copy.log_softmax(1)?
            };
            let loss = |x: &Variable| {
                if log_softmax {
                    x.cross_entropy(
                        &Variable::from_tensor(target.clone()),
                        None,
                        Reduction::Sum,
                        -100,
                        0.1,
                    )
                } else {
                    x.nll_loss(&target, None, Reduction::Mean, -100)
                }
            };
            let (got, want) = (loss(&view)?, loss(&copy_in)?);
            assert_eq!(got.tensor().to_vec::<f64>(), want.tensor().to_vec::<f64>());
            got.backward()?;
            want.backward()?;
            let g = base.grad().expect("a gradient").tensor().to_vec::<f64>();
            let w = copy.grad().expect("a gradient").tensor().to_vec::<f64>();
            assert!(g[..8].iter().all(|&v| v == 0.0), "rows outside the view");
            assert_eq!(&g[8..], w.as_slice());
        }
        Ok(())
    }
}
