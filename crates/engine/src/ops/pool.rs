//! Pooling: `max_pool2d` (with indices), `avg_pool2d`, `adaptive_avg_pool2d`,
//! `adaptive_max_pool2d` and `max_unpool2d`, over `(N, C, H, W)` or unbatched
//! `(C, H, W)` inputs (the 1-d forms are these on an unsqueezed input, as in PyTorch).
//!
//! Forward and backward are single-pass kernels (`kernels/pool.rs`). Each backward is
//! itself a recorded op, so double backward works: max pooling's backward scatters the
//! gradient to the argmax and its own backward gathers by the same indices; the average
//! pools are linear, so the backward of their backward is the forward again. See Note
//! [Pooling and normalisation].

use super::{saved_at, Grads};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::pool::{self as kernel, Window2d};
use crate::shape::Dims;
use crate::tensor::{dispatch, Tensor};
use crate::variable::{SavedTensor, Variable};
use smallvec::smallvec;

/// Runs `$body` with `$T` bound to the element type of a floating-point dtype (the
/// pooling and normalisation kernels widen to f64 themselves, so the 16-bit floats need
/// no float32 detour); other dtypes are `$op`'s "not implemented for" error.
macro_rules! dispatch_float {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = crate::dtype::f16;
                $body
            }
            DType::BF16 => {
                type $T = crate::dtype::bf16;
                $body
            }
            other => return Err(Error::unsupported_dtype($op, other)),
        }
    };
}
pub(crate) use dispatch_float;

/// The arguments of a 2-d pooling window as the user gives them (before checks):
/// `(H, W)` pairs of kernel size, stride, padding and dilation, and `ceil_mode`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool2d {
    /// Window size.
    pub kernel_size: [i64; 2],
    /// Step between windows (PyTorch's default is the kernel size: pass it).
    pub stride: [i64; 2],
    /// Implicit negative-infinity (max) or zero (avg) padding on both sides.
    pub padding: [i64; 2],
    /// Spacing between window elements (1 for average pooling).
    pub dilation: [i64; 2],
    /// Round the output size up instead of down.
    pub ceil_mode: bool,
}

/// What average pooling's backward needs (boxed in the rule).
#[derive(Clone, Debug)]
pub(crate) struct AvgInfo {
    input: Dims,
    win: Window2d,
    count_include_pad: bool,
    divisor: Option<usize>,
}

/// The backward rules of this family; saved tensors in the order each variant says.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `max_pool2d` of an input of this shape; saved `[indices]`.
    MaxPool2d(Box<Dims>),
    /// `adaptive_max_pool2d` of an input of this shape; saved `[indices]`.
    AdaptiveMaxPool2d(Box<Dims>),
    /// A max pool's backward: the gradient scattered to the argmax in a zero tensor of
    /// the input's shape. Its backward gathers by the same indices (output shape kept);
    /// saved `[indices]`.
    MaxPoolBackward(Box<Dims>, MaxKind),
    /// `max_unpool2d` of an input of this shape; saved `[indices]`.
    MaxUnpool2d(Box<Dims>),
    /// `avg_pool2d`.
    AvgPool2d(Box<AvgInfo>),
    /// `avg_pool2d`'s backward (its backward is `avg_pool2d` again).
    AvgPool2dBackward(Box<AvgInfo>),
    /// `adaptive_avg_pool2d` of an input of this shape.
    AdaptiveAvgPool2d(Box<Dims>),
    /// Its backward, of a gradient of this (pooled) shape; its backward is the forward
    /// again, to that size.
    AdaptiveAvgPool2dBackward(Box<Dims>),
}

/// Which max pool a [`Rule::MaxPoolBackward`] belongs to (its name).
#[derive(Copy, Clone, Debug)]
pub(crate) enum MaxKind {
    Fixed,
    Adaptive,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::MaxPool2d(_) => "MaxPool2DWithIndicesBackward0",
            Rule::AdaptiveMaxPool2d(_) => "AdaptiveMaxPool2DBackward0",
            Rule::MaxPoolBackward(_, MaxKind::Fixed) => "MaxPool2DWithIndicesBackwardBackward0",
            Rule::MaxPoolBackward(_, MaxKind::Adaptive) => "AdaptiveMaxPool2DBackwardBackward0",
            Rule::MaxUnpool2d(_) => "MaxUnpool2DBackward0",
            Rule::AvgPool2d(_) => "AvgPool2DBackward0",
            Rule::AvgPool2dBackward(_) => "AvgPool2DBackwardBackward0",
            Rule::AdaptiveAvgPool2d(_) => "AdaptiveAvgPool2DBackward0",
            Rule::AdaptiveAvgPool2dBackward(_) => "AdaptiveAvgPool2DBackwardBackward0",
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        _needs: &[bool],
    ) -> Result<Grads> {
        let g = match self {
            Rule::MaxPool2d(input) => {
                grad.max_pool_backward(saved_at(saved, 0)?, input, MaxKind::Fixed)?
            }
            Rule::AdaptiveMaxPool2d(input) => {
                grad.max_pool_backward(saved_at(saved, 0)?, input, MaxKind::Adaptive)?
            }
            Rule::MaxPoolBackward(output, _) | Rule::MaxUnpool2d(output) => {
                gather_planes(grad, saved_at(saved, 0)?, output)?
            }
            Rule::AvgPool2d(info) => grad.avg_pool2d_backward(info)?,
            Rule::AvgPool2dBackward(info) => grad.avg_pool2d_with(info)?,
            Rule::AdaptiveAvgPool2d(input) => grad.adaptive_avg_pool2d_backward(input)?,
            Rule::AdaptiveAvgPool2dBackward(pooled) => {
                let n = pooled.len();
                grad.adaptive_avg_pool2d(&[pooled[n - 2] as i64, pooled[n - 1] as i64])?
            }
        };
        Ok(smallvec![Some(g)])
    }
}

/// `values[..., i]` gathered at `indices` per plane: the values of `src` (of shape
/// `(lead..., H, W)`) at the flat plane positions `indices` (of shape `output`).
fn gather_planes(src: &Variable, indices: &Variable, output: &[usize]) -> Result<Variable> {
    let shape = src.shape();
    let n = shape.len();
    let planes: usize = shape[..n - 2].iter().product();
    let out_plane: usize = output[output.len() - 2..].iter().product();
    let flat = src.reshape(&[planes as i64, (shape[n - 2] * shape[n - 1]) as i64])?;
    let idx = indices
        .tensor()
        .reshape(&[planes as i64, out_plane as i64])?;
    let dims: Vec<i64> = output.iter().map(|&d| d as i64).collect();
    flat.gather(1, &idx)?.reshape(&dims)
}

/// Reads a tensor's elements as a contiguous slice.
pub(crate) fn with_slice<T: crate::dtype::Element, R>(
    t: &Tensor,
    f: impl FnOnce(&[T]) -> Result<R>,
) -> Result<R> {
    let c = t.contiguous()?;
    let (start, n) = (c.layout().offset(), c.numel());
    c.read(|s: &[T]| match s.get(start..start + n) {
        Some(s) => f(s),
        None => Err(Error::NotImplemented(format!(
            "rustgrad internal error: a contiguous tensor reaches {} of {} elements",
            start + n,
            s.len()
        ))),
    })
}

/// PyTorch's `div_rtn`: division rounding toward negative infinity.
fn div_rtn(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a % b < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// PyTorch's `pooling_output_shape` with its checks: the output size along one axis.
fn pooling_output_size(
    input: i64,
    kernel: i64,
    pad: i64,
    stride: i64,
    dilation: i64,
    ceil_mode: bool,
) -> Result<i64> {
    if stride == 0 {
        return Err(Error::InvalidArgument("stride should not be zero".into()));
    }
    if pad < 0 {
        return Err(Error::InvalidArgument(format!(
            "pad must be non-negative, but got pad: {pad}"
        )));
    }
    let effective = (kernel as i128 - 1) * dilation as i128 + 1;
    if pad as i128 > effective / 2 {
        return Err(Error::InvalidArgument(format!(
            "pad should be at most half of effective kernel size, but got pad={pad}, \
             kernel_size={kernel} and dilation={dilation}"
        )));
    }
    let (input, pad, stride) = (input as i128, pad as i128, stride as i128);
    let ceil = if ceil_mode { stride - 1 } else { 0 };
    let mut out = div_rtn(input + 2 * pad - effective + ceil, stride) + 1;
    if ceil_mode && (out - 1) * stride >= input + pad {
        out -= 1;
    }
    Ok(out.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// The leading dims and `(H, W)` of a 3-d or 4-d pooling input, after PyTorch's checks.
fn split_planes(shape: &[usize]) -> Result<(usize, [usize; 2])> {
    let n = shape.len();
    if n != 3 && n != 4 {
        return Err(Error::InvalidArgument(
            "non-empty 3D or 4D (batch mode) tensor expected for input".into(),
        ));
    }
    Ok((
        shape[..n - 2].iter().product(),
        [shape[n - 2], shape[n - 1]],
    ))
}

fn nonzero_dims(shape: &[usize]) -> Result<()> {
    // The batch dim (of a 4-d input) may be empty; the others may not.
    let n = shape.len();
    if shape[n - 3..].contains(&0) {
        return Err(Error::InvalidArgument(format!(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, \
             but got:{shape:?}"
        )));
    }
    Ok(())
}

/// The checked window of a 2-d pool of `shape` (PyTorch's `pooling_output_shape` and
/// `pool2d_shape_check`, with their messages, in their order).
fn window(shape: &[usize], p: &Pool2d) -> Result<(usize, Window2d)> {
    let (planes, [h, w]) = split_planes(shape)?;
    let oh = pooling_output_size(
        h as i64,
        p.kernel_size[0],
        p.padding[0],
        p.stride[0],
        p.dilation[0],
        p.ceil_mode,
    )?;
    let ow = pooling_output_size(
        w as i64,
        p.kernel_size[1],
        p.padding[1],
        p.stride[1],
        p.dilation[1],
        p.ceil_mode,
    )?;
    let [kh, kw] = p.kernel_size;
    if kh <= 0 || kw <= 0 {
        return Err(Error::InvalidArgument(format!(
            "kernel size should be greater than zero, but got kH: {kh} kW: {kw}"
        )));
    }
    let [sh, sw] = p.stride;
    if sh <= 0 || sw <= 0 {
        return Err(Error::InvalidArgument(format!(
            "stride should be greater than zero, but got dH: {sh} dW: {sw}"
        )));
    }
    let [dh, dw] = p.dilation;
    if dh <= 0 || dw <= 0 {
        return Err(Error::InvalidArgument(format!(
            "dilation should be greater than zero, but got dilationH: {dh} dilationW: {dw}"
        )));
    }
    nonzero_dims(shape)?;
    let channels = shape[shape.len() - 3];
    if oh < 1 || ow < 1 {
        return Err(Error::InvalidArgument(format!(
            "Given input size: ({channels}x{h}x{w}). Calculated output size: \
             ({channels}x{oh}x{ow}). Output size is too small"
        )));
    }
    // Far beyond any real window (PyTorch would allocate or overflow first); keeping the
    // window's reach well inside isize keeps the kernels' index arithmetic exact.
    const LIMIT: i128 = 1 << 40;
    for axis in 0..2 {
        let reach = (p.kernel_size[axis] as i128 - 1) * p.dilation[axis] as i128 + 1;
        if reach > LIMIT || p.padding[axis] as i128 > LIMIT || p.stride[axis] as i128 > LIMIT {
            return Err(Error::InvalidArgument(format!(
                "rustgrad: pooling window too large (kernel_size={:?}, stride={:?}, \
                 padding={:?}, dilation={:?})",
                p.kernel_size, p.stride, p.padding, p.dilation
            )));
        }
    }
    let win = Window2d {
        input: [h, w],
        output: [oh as usize, ow as usize],
        kernel: [kh as usize, kw as usize],
        stride: [sh as usize, sw as usize],
        padding: [p.padding[0] as usize, p.padding[1] as usize],
        dilation: [dh as usize, dw as usize],
    };
    Ok((planes, win))
}

/// `shape` with its last two dims replaced by `hw`.
fn with_plane(shape: &[usize], hw: [usize; 2]) -> Vec<usize> {
    let n = shape.len();
    let mut out = shape[..n - 2].to_vec();
    out.extend_from_slice(&hw);
    out
}

fn check_float(op: &'static str, dtype: DType) -> Result<()> {
    if dtype.is_floating_point() {
        Ok(())
    } else {
        Err(Error::unsupported_dtype(op, dtype))
    }
}

impl Variable {
    /// `max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode,
    /// return_indices=True)`: the maxima of each window and their flat positions
    /// `h * W + w` within the input plane (int64). Input `(N, C, H, W)` or `(C, H, W)`.
    /// NaN propagates (a window with a NaN gives NaN, pointing at its last NaN).
    pub fn max_pool2d_with_indices(&self, p: &Pool2d) -> Result<(Variable, Variable)> {
        let shape = self.shape();
        let (planes, win) = window(&shape, p)?;
        if self.dtype() == DType::Bool {
            return Err(Error::unsupported_dtype(
                "max_pool2d_with_indices",
                DType::Bool,
            ));
        }
        let out_shape = with_plane(&shape, win.output);
        let (values, indices) = dispatch!(self.dtype(), T => {
            let (v, i) = with_slice(&self.tensor(), |x: &[T]| kernel::max_pool2d(x, planes, &win))?;
            (Tensor::from_vec(v, &out_shape)?, Tensor::from_vec(i, &out_shape)?)
        });
        let indices = Variable::from_tensor(indices);
        let out = Variable::record(values, &[self], |_, _| {
            (
                Rule::MaxPool2d(Box::new(shape.clone())),
                smallvec![Some(SavedTensor::input(&indices))],
            )
        });
        Ok((out, indices))
    }

    /// `adaptive_max_pool2d(input, output_size, return_indices=True)`: PyTorch's
    /// adaptive windows (`floor(i * H / oH) .. ceil((i + 1) * H / oH)`), values and flat
    /// indices.
    pub fn adaptive_max_pool2d(&self, output_size: &[i64; 2]) -> Result<(Variable, Variable)> {
        let shape = self.shape();
        let (planes, input, output) =
            adaptive_geometry("adaptive_max_pool2d", &shape, output_size)?;
        if self.dtype() == DType::Bool {
            return Err(Error::unsupported_dtype("adaptive_max_pool2d", DType::Bool));
        }
        let out_shape = with_plane(&shape, output);
        let (values, indices) = dispatch!(self.dtype(), T => {
            let (v, i) = with_slice(&self.tensor(), |x: &[T]| {
                kernel::adaptive_max_pool2d(x, planes, input, output)
            })?;
            (Tensor::from_vec(v, &out_shape)?, Tensor::from_vec(i, &out_shape)?)
        });
        let indices = Variable::from_tensor(indices);
        let out = Variable::record(values, &[self], |_, _| {
            (
                Rule::AdaptiveMaxPool2d(Box::new(shape.clone())),
                smallvec![Some(SavedTensor::input(&indices))],
            )
        });
        Ok((out, indices))
    }

    /// The backward of a max pool: `self` (the output's gradient) added at `indices`
    /// into zeros of shape `input`. Recorded, so that double backward gathers.
    fn max_pool_backward(
        &self,
        indices: &Variable,
        input: &[usize],
        kind: MaxKind,
    ) -> Result<Variable> {
        let result = scatter(self, indices, input, true)?;
        let out_shape = self.shape();
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::MaxPoolBackward(Box::new(out_shape), kind),
                smallvec![Some(SavedTensor::input(indices))],
            )
        }))
    }

    /// `max_unpool2d(input, indices, output_size)`: each value written at its flat index
    /// in a zero plane of `output_size` (`(oH, oW)`). An index outside the plane raises
    /// PyTorch's "Found an invalid max index".
    pub fn max_unpool2d(&self, indices: &Variable, output_size: &[i64; 2]) -> Result<Variable> {
        let shape = self.shape();
        if indices.dtype() != DType::I64 {
            return Err(Error::InvalidArgument(format!(
                "elements in indices should be type int64 but got: {}",
                indices.dtype().scalar_type_name()
            )));
        }
        if shape.len() != 3 && shape.len() != 4 {
            return Err(Error::InvalidArgument(format!(
                "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with {} dimensions.",
                shape.len()
            )));
        }
        if indices.shape() != shape {
            return Err(Error::InvalidArgument(format!(
                "Expected shape of indices to be same as that of the input tensor ({:?}) but got indices tensor with shape: {:?}",
                shape,
                indices.shape()
            )));
        }
        let [oh, ow] = *output_size;
        if oh <= 0 || ow <= 0 {
            return Err(Error::InvalidArgument(format!(
                "maxunpooling2d: output_size must be positive, got ({oh}, {ow})"
            )));
        }
        if shape[1..].contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "max_unpooling2d(): Expected input to have non-zero size for non-batch dimensions, but got {shape:?} with dimension {} being empty.",
                shape.iter().skip(1).position(|&d| d == 0).unwrap_or(0) + 1
            )));
        }
        let out_shape = with_plane(&shape, [oh as usize, ow as usize]);
        crate::shape::checked_numel(&out_shape)?;
        let result = scatter(self, indices, &out_shape, false)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::MaxUnpool2d(Box::new(shape.clone())),
                smallvec![Some(SavedTensor::input(indices))],
            )
        }))
    }

    /// `avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
    /// divisor_override)` (the dilation of `p` must be 1).
    pub fn avg_pool2d(
        &self,
        p: &Pool2d,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> Result<Variable> {
        let divisor = match divisor_override {
            Some(0) => return Err(Error::InvalidArgument("divisor must be not zero".into())),
            // PyTorch accepts a negative divisor (negating the result): keep it exact.
            Some(d) if d < 0 => {
                return self.avg_pool2d(p, count_include_pad, Some(-d))?.neg();
            }
            Some(d) => Some(d as usize),
            None => None,
        };
        let shape = self.shape();
        if shape.len() < 3 {
            return Err(Error::Index(format!(
                "Dimension out of range (expected to be in range of [-{n}, {m}], but got -3)",
                n = shape.len().max(1),
                m = shape.len().max(1) - 1
            )));
        }
        if shape.len() > 4 {
            return Err(Error::InvalidArgument(format!(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for \
                 input, but got:{shape:?}"
            )));
        }
        let (_, win) = window(&shape, p)?;
        check_float("avg_pool2d", self.dtype())?;
        let info = AvgInfo {
            input: shape,
            win,
            count_include_pad,
            divisor,
        };
        self.avg_pool2d_with(&info)
    }

    /// `avg_pool2d` with a checked window.
    fn avg_pool2d_with(&self, info: &AvgInfo) -> Result<Variable> {
        let shape = self.shape();
        let planes: usize = shape[..shape.len() - 2].iter().product();
        let out_shape = with_plane(&shape, info.win.output);
        let result = dispatch_float!(self.dtype(), "avg_pool2d", T => {
            let v = with_slice(&self.tensor(), |x: &[T]| {
                kernel::avg_pool2d(x, planes, &info.win, info.count_include_pad, info.divisor)
            })?;
            Tensor::from_vec(v, &out_shape)?
        });
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::AvgPool2d(Box::new(info.clone())), smallvec![])
        }))
    }

    /// `avg_pool2d`'s backward (recorded: its backward is `avg_pool2d`).
    fn avg_pool2d_backward(&self, info: &AvgInfo) -> Result<Variable> {
        let planes: usize = info.input[..info.input.len() - 2].iter().product();
        let result = dispatch_float!(self.dtype(), "avg_pool2d_backward", T => {
            let v = with_slice(&self.tensor(), |g: &[T]| {
                kernel::avg_pool2d_backward(g, planes, &info.win, info.count_include_pad, info.divisor)
            })?;
            Tensor::from_vec(v, &info.input)?
        });
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::AvgPool2dBackward(Box::new(info.clone())), smallvec![])
        }))
    }

    /// `adaptive_avg_pool2d(input, output_size)`: the mean of each adaptive window.
    pub fn adaptive_avg_pool2d(&self, output_size: &[i64; 2]) -> Result<Variable> {
        let shape = self.shape();
        let (planes, input, output) =
            adaptive_geometry("adaptive_avg_pool2d", &shape, output_size)?;
        check_float("adaptive_avg_pool2d", self.dtype())?;
        let out_shape = with_plane(&shape, output);
        let result = dispatch_float!(self.dtype(), "adaptive_avg_pool2d", T => {
            let v = with_slice(&self.tensor(), |x: &[T]| {
                kernel::adaptive_avg_pool2d(x, planes, input, output)
            })?;
            Tensor::from_vec(v, &out_shape)?
        });
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::AdaptiveAvgPool2d(Box::new(shape.clone())),
                smallvec![],
            )
        }))
    }

    /// `adaptive_avg_pool2d`'s backward to an input of shape `input` (recorded).
    fn adaptive_avg_pool2d_backward(&self, input: &[usize]) -> Result<Variable> {
        let n = input.len();
        let planes: usize = input[..n - 2].iter().product();
        let gshape = self.shape();
        let output = [gshape[n - 2], gshape[n - 1]];
        let result = dispatch_float!(self.dtype(), "adaptive_avg_pool2d_backward", T => {
            let v = with_slice(&self.tensor(), |g: &[T]| {
                kernel::adaptive_avg_pool2d_backward(g, planes, [input[n - 2], input[n - 1]], output)
            })?;
            Tensor::from_vec(v, input)?
        });
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::AdaptiveAvgPool2dBackward(Box::new(gshape)),
                smallvec![],
            )
        }))
    }
}

/// Checks an adaptive pool's input and output size: planes, `(H, W)`, `(oH, oW)`.
fn adaptive_geometry(
    op: &str,
    shape: &[usize],
    output_size: &[i64; 2],
) -> Result<(usize, [usize; 2], [usize; 2])> {
    let n = shape.len();
    if n != 3 && n != 4 {
        // PyTorch's two messages differ by a colon.
        let colon = if op == "adaptive_max_pool2d" { ":" } else { "" };
        return Err(Error::InvalidArgument(format!(
            "{op}(): Expected 3D or 4D tensor, but got{colon} {shape:?}"
        )));
    }
    // Adaptive average pooling accepts empty channels, as PyTorch; not empty planes.
    let first = if op == "adaptive_avg_pool2d" {
        n - 2
    } else {
        1
    };
    for (i, &d) in shape.iter().enumerate().skip(first) {
        if d == 0 {
            return Err(Error::InvalidArgument(format!(
                "{op}(): Expected input to have non-zero size for non-batch dimensions, but \
                 input has sizes {shape:?} with dimension {i} being empty"
            )));
        }
    }
    if output_size.iter().any(|&o| o < 0) && op == "adaptive_max_pool2d" {
        let mut dims: Vec<i64> = shape[..n - 2].iter().map(|&d| d as i64).collect();
        dims.extend_from_slice(output_size);
        let bad = output_size.iter().find(|&&o| o < 0).copied().unwrap_or(-1);
        return Err(Error::InvalidArgument(format!(
            "Trying to create tensor with negative dimension {bad}: {dims:?}"
        )));
    }
    if output_size.iter().any(|&o| o < 0) {
        return Err(Error::InvalidArgument(format!(
            "{op}: elements of output_size must be greater than or equal to 0 but received \
             {{{}, {}}}",
            output_size[0], output_size[1]
        )));
    }
    let (planes, hw) = split_planes(shape)?;
    let out = [output_size[0] as usize, output_size[1] as usize];
    crate::shape::checked_numel(&with_plane(shape, out))?;
    Ok((planes, hw, out))
}

/// `src` (planes of `indices`' shape) written at its flat per-plane indices into zeros
/// of `out_shape`: added (`accumulate`) or assigned.
fn scatter(
    src: &Variable,
    indices: &Variable,
    out_shape: &[usize],
    accumulate: bool,
) -> Result<Tensor> {
    let sshape = src.shape();
    let n = out_shape.len();
    let planes: usize = out_shape[..n - 2].iter().product();
    let out_plane = out_shape[n - 2] * out_shape[n - 1];
    let src_plane = src.numel().checked_div(planes).unwrap_or(0);
    if sshape.len() != n || indices.shape() != sshape || sshape[..n - 2] != out_shape[..n - 2] {
        return Err(Error::NotImplemented(
            "rustgrad internal error: max pool gradient of the wrong shape".into(),
        ));
    }
    let idx: Vec<i64> = indices.tensor().try_to_vec()?;
    Ok(dispatch_float!(src.dtype(), "max_pool2d_backward", T => {
        let v = with_slice(&src.tensor(), |s: &[T]| {
            let desc = format!("{}x{}", out_shape[n - 2], out_shape[n - 1]);
            kernel::scatter_planes(s, &idx, planes, src_plane, out_plane, accumulate, &desc)
        })?;
        Tensor::from_vec(v, out_shape)?
    }))
}
