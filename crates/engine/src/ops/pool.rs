//! Pooling: max pooling (with indices), average pooling, adaptive average and max
//! pooling, `max_unpool` and fractional max pooling, in 2-d over `(N, C, H, W)` or
//! unbatched `(C, H, W)` inputs and in 3-d over `(N, C, D, H, W)` or `(C, D, H, W)` (the
//! 1-d forms are the 2-d ones on an unsqueezed input, as in PyTorch). Every form is one
//! kernel over `(planes, D, H, W)` with per-axis window spans (`kernels/pool.rs`): a
//! 2-d pool is a 3-d one with a unit depth axis.
//!
//! Forward and backward are single-pass kernels. Each backward is
//! itself a recorded op, so double backward works: max pooling's backward scatters the
//! gradient to the argmax and its own backward gathers by the same indices; the average
//! pools are linear, so the backward of their backward is the forward again. See Note
//! [Pooling and normalisation].

use super::{saved_at, Grads};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::pool::{self as kernel, Span, Window};
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

/// The arguments of a 3-d pooling window as the user gives them (before checks):
/// `(D, H, W)` triples of kernel size, stride, padding and dilation, and `ceil_mode`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool3d {
    /// Window size.
    pub kernel_size: [i64; 3],
    /// Step between windows (PyTorch's default is the kernel size: pass it).
    pub stride: [i64; 3],
    /// Implicit negative-infinity (max) or zero (avg) padding on both sides.
    pub padding: [i64; 3],
    /// Spacing between window elements (1 for average pooling).
    pub dilation: [i64; 3],
    /// Round the output size up instead of down.
    pub ceil_mode: bool,
}

/// A pooling window's arguments in three axes: a 2-d pool's with a unit depth axis in
/// front. `rank` is the pool's own rank (2 or 3), for its messages and names.
#[derive(Clone, Debug)]
struct Args {
    rank: usize,
    kernel: [i64; 3],
    stride: [i64; 3],
    padding: [i64; 3],
    dilation: [i64; 3],
    ceil_mode: bool,
}

impl From<&Pool2d> for Args {
    fn from(p: &Pool2d) -> Args {
        let lift = |a: [i64; 2], unit: i64| [unit, a[0], a[1]];
        Args {
            rank: 2,
            kernel: lift(p.kernel_size, 1),
            stride: lift(p.stride, 1),
            padding: lift(p.padding, 0),
            dilation: lift(p.dilation, 1),
            ceil_mode: p.ceil_mode,
        }
    }
}

impl From<&Pool3d> for Args {
    fn from(p: &Pool3d) -> Args {
        Args {
            rank: 3,
            kernel: p.kernel_size,
            stride: p.stride,
            padding: p.padding,
            dilation: p.dilation,
            ceil_mode: p.ceil_mode,
        }
    }
}

/// What average pooling (fixed or adaptive) and its backward need (boxed in the rule).
#[derive(Clone, Debug)]
pub(crate) struct AvgInfo {
    input: Dims,
    rank: usize,
    adaptive: bool,
    win: Window,
    count_include_pad: bool,
    divisor: Option<usize>,
}

/// Which max pool a rule belongs to (its name).
#[derive(Copy, Clone, Debug)]
pub(crate) enum MaxKind {
    Fixed,
    Adaptive,
    Fractional,
}

/// The backward rules of this family; saved tensors in the order each variant says.
/// The `u8` is the pool's rank (2 or 3), for the names.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// A max pool of an input of this shape; saved `[indices]`.
    MaxPool(Box<Dims>, MaxKind, u8),
    /// A max pool's backward: the gradient scattered to the argmax in a zero tensor of
    /// the input's shape. Its backward gathers by the same indices (output shape kept);
    /// saved `[indices]`.
    MaxPoolBackward(Box<Dims>, MaxKind, u8),
    /// `max_unpool` of an input of this shape; saved `[indices]`.
    MaxUnpool(Box<Dims>, u8),
    /// Average pooling, fixed or adaptive.
    AvgPool(Box<AvgInfo>),
    /// Its backward (its backward is the forward again).
    AvgPoolBackward(Box<AvgInfo>),
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        use MaxKind::*;
        match self {
            Rule::MaxPool(_, Fixed, 2) => "MaxPool2DWithIndicesBackward0",
            Rule::MaxPool(_, Fixed, _) => "MaxPool3DWithIndicesBackward0",
            Rule::MaxPool(_, Adaptive, 2) => "AdaptiveMaxPool2DBackward0",
            Rule::MaxPool(_, Adaptive, _) => "AdaptiveMaxPool3DBackward0",
            Rule::MaxPool(_, Fractional, 2) => "FractionalMaxPool2DBackward0",
            Rule::MaxPool(_, Fractional, _) => "FractionalMaxPool3DBackward0",
            Rule::MaxPoolBackward(_, Fixed, 2) => "MaxPool2DWithIndicesBackwardBackward0",
            Rule::MaxPoolBackward(_, Fixed, _) => "MaxPool3DWithIndicesBackwardBackward0",
            Rule::MaxPoolBackward(_, Adaptive, 2) => "AdaptiveMaxPool2DBackwardBackward0",
            Rule::MaxPoolBackward(_, Adaptive, _) => "AdaptiveMaxPool3DBackwardBackward0",
            Rule::MaxPoolBackward(_, Fractional, 2) => "FractionalMaxPool2DBackwardBackward0",
            Rule::MaxPoolBackward(_, Fractional, _) => "FractionalMaxPool3DBackwardBackward0",
            Rule::MaxUnpool(_, 2) => "MaxUnpool2DBackward0",
            Rule::MaxUnpool(_, _) => "MaxUnpool3DBackward0",
            Rule::AvgPool(i) => match (i.adaptive, i.rank) {
                (false, 2) => "AvgPool2DBackward0",
                (false, _) => "AvgPool3DBackward0",
                (true, 2) => "AdaptiveAvgPool2DBackward0",
                (true, _) => "AdaptiveAvgPool3DBackward0",
            },
            Rule::AvgPoolBackward(i) => match (i.adaptive, i.rank) {
                (false, 2) => "AvgPool2DBackwardBackward0",
                (false, _) => "AvgPool3DBackwardBackward0",
                (true, 2) => "AdaptiveAvgPool2DBackwardBackward0",
                (true, _) => "AdaptiveAvgPool3DBackwardBackward0",
            },
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
            Rule::MaxPool(input, kind, rank) => {
                grad.max_pool_backward(saved_at(saved, 0)?, input, *kind, *rank)?
            }
            Rule::MaxPoolBackward(output, _, rank) | Rule::MaxUnpool(output, rank) => {
                gather_planes(grad, saved_at(saved, 0)?, output, *rank as usize)?
            }
            Rule::AvgPool(info) => grad.avg_pool_backward(info)?,
            Rule::AvgPoolBackward(info) => grad.avg_pool_with(info)?,
        };
        Ok(smallvec![Some(g)])
    }
}

/// Values of `src` (of shape `(lead..., *spatial)`, `rank` spatial dims) gathered per
/// plane at the flat plane positions `indices` (of shape `output`).
fn gather_planes(
    src: &Variable,
    indices: &Variable,
    output: &[usize],
    rank: usize,
) -> Result<Variable> {
    let shape = src.shape();
    let n = shape.len();
    let planes: usize = shape[..n - rank].iter().product();
    let in_plane: usize = shape[n - rank..].iter().product();
    let out_plane: usize = output[output.len() - rank..].iter().product();
    let flat = src.reshape(&[planes as i64, in_plane as i64])?;
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

/// The number of planes and the `(D, H, W)` plane of a pooling input of `rank` spatial
/// dims (a 2-d pool's plane has `D = 1`), after PyTorch's dimension check.
fn split_planes(shape: &[usize], rank: usize) -> Result<(usize, [usize; 3])> {
    let n = shape.len();
    if n != rank + 1 && n != rank + 2 {
        return Err(Error::InvalidArgument(format!(
            "non-empty {}D or {}D (batch mode) tensor expected for input",
            rank + 1,
            rank + 2
        )));
    }
    Ok((shape[..n - rank].iter().product(), plane_of(shape, rank)))
}

/// The last `rank` dims of `shape` as a `(D, H, W)` plane with unit leading axes.
fn plane_of(shape: &[usize], rank: usize) -> [usize; 3] {
    let n = shape.len();
    std::array::from_fn(|a| if a + rank < 3 { 1 } else { shape[n + a - 3] })
}

/// The last `rank` entries of a three-axis size.
fn last(v: [usize; 3], rank: usize) -> Vec<usize> {
    v[3 - rank..].to_vec()
}

/// `shape` with its last `rank` dims replaced by those of `plane`.
fn with_plane(shape: &[usize], plane: [usize; 3], rank: usize) -> Vec<usize> {
    let n = shape.len();
    let mut out = shape[..n - rank].to_vec();
    out.extend(last(plane, rank));
    out
}

/// The checked window of a fixed pool of `shape` (PyTorch's `pooling_output_shape`
/// and `pool2d_shape_check` / `pool3d_shape_check`, with their messages, in their
/// order). `avg3d` is average pooling in 3-d, which checks the input against the
/// kernel first, under the name `op` of its empty-dimension message.
fn window(shape: &[usize], p: &Args, op: &str, avg3d: bool) -> Result<(usize, Window)> {
    let rank = p.rank;
    let (planes, input) = split_planes(shape, rank)?;
    let mut out = [1i64; 3];
    for a in 3 - rank..3 {
        out[a] = pooling_output_size(
            input[a] as i64,
            p.kernel[a],
            p.padding[a],
            p.stride[a],
            p.dilation[a],
            p.ceil_mode,
        )?;
    }
    let axes: &[&str] = if rank == 2 {
        &["H", "W"]
    } else {
        &["T", "H", "W"]
    };
    let list = |prefix: &str, v: [i64; 3]| {
        axes.iter()
            .zip(&v[3 - rank..])
            .map(|(a, x)| format!("{prefix}{a}: {x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if p.kernel.iter().any(|&k| k <= 0) {
        return Err(Error::InvalidArgument(format!(
            "kernel size should be greater than zero, but got {}",
            list("k", p.kernel)
        )));
    }
    if p.stride.iter().any(|&s| s <= 0) {
        return Err(Error::InvalidArgument(format!(
            "stride should be greater than zero, but got {}",
            list("d", p.stride)
        )));
    }
    if p.dilation.iter().any(|&d| d <= 0) {
        return Err(Error::InvalidArgument(format!(
            "dilation should be greater than zero, but got {}",
            list("dilation", p.dilation)
        )));
    }
    let n = shape.len();
    if rank == 2 {
        // The batch dim (of a 4-d input) may be empty; the others may not.
        if shape[n - 3..].contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for \
                 input, but got:{shape:?}"
            )));
        }
    } else {
        let skip = usize::from(n == 5);
        if let Some(i) = (skip..n).find(|&i| shape[i] == 0) {
            return Err(Error::InvalidArgument(format!(
                "{op}(): Expected input to have non-zero size for non-batch dimensions, but \
                 input has sizes {shape:?} with dimension {i} being empty"
            )));
        }
        if avg3d && (0..3).any(|a| (input[a] as i64) < p.kernel[a]) {
            let [t, h, w] = input;
            let [kt, kh, kw] = p.kernel;
            return Err(Error::InvalidArgument(format!(
                "input image (T: {t} H: {h} W: {w}) smaller than kernel size \
                 (kT: {kt} kH: {kh} kW: {kw})"
            )));
        }
    }
    let channels = shape[n - rank - 1];
    if out.iter().any(|&o| o < 1) {
        let sizes = |v: Vec<String>| v.join("x");
        let ins = sizes(input[3 - rank..].iter().map(|d| d.to_string()).collect());
        let outs = sizes(out[3 - rank..].iter().map(|d| d.to_string()).collect());
        return Err(Error::InvalidArgument(format!(
            "Given input size: ({channels}x{ins}). Calculated output size: \
             ({channels}x{outs}). Output size is too small"
        )));
    }
    // Far beyond any real window (PyTorch would allocate or overflow first); keeping the
    // window's reach well inside isize keeps the kernels' index arithmetic exact.
    const LIMIT: i128 = 1 << 40;
    for a in 0..3 {
        let reach = (p.kernel[a] as i128 - 1) * p.dilation[a] as i128 + 1;
        if reach > LIMIT || p.padding[a] as i128 > LIMIT || p.stride[a] as i128 > LIMIT {
            return Err(Error::InvalidArgument(format!(
                "rustgrad: pooling window too large (kernel_size={:?}, stride={:?}, \
                 padding={:?}, dilation={:?})",
                &p.kernel[3 - rank..],
                &p.stride[3 - rank..],
                &p.padding[3 - rank..],
                &p.dilation[3 - rank..]
            )));
        }
    }
    let [d, h, w] = std::array::from_fn(|a| {
        let u = |v: i64| v as usize;
        let (k, s, pad, dil) = (
            u(p.kernel[a]),
            u(p.stride[a]),
            u(p.padding[a]),
            u(p.dilation[a]),
        );
        kernel::spans(u(out[a]), |o| Span::fixed(o, input[a], k, s, pad, dil))
    });
    Ok((planes, Window::shared(input, [d?, h?, w?])))
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
        crate::jit::op(
            || crate::jit::Op::MaxPool2d(p.clone()),
            &[self],
            || self.max_pool_fixed(&p.into(), "max_pool2d_with_indices"),
        )
    }

    /// `max_pool3d(..., return_indices=True)` over `(N, C, D, H, W)` or `(C, D, H, W)`:
    /// values and flat positions `(d * H + h) * W + w` (see `max_pool2d_with_indices`).
    pub fn max_pool3d_with_indices(&self, p: &Pool3d) -> Result<(Variable, Variable)> {
        self.max_pool_fixed(&p.into(), "max_pool3d")
    }

    fn max_pool_fixed(&self, p: &Args, op: &'static str) -> Result<(Variable, Variable)> {
        let shape = self.shape();
        let (planes, win) = window(&shape, p, "max_pool3d_with_indices_out_cpu_template", false)?;
        self.max_pool_with(planes, &win, p.rank, MaxKind::Fixed, op)
    }

    /// Runs the max kernel over a checked window and records the rule.
    fn max_pool_with(
        &self,
        planes: usize,
        win: &Window,
        rank: usize,
        kind: MaxKind,
        op: &'static str,
    ) -> Result<(Variable, Variable)> {
        let floats_only = !matches!(kind, MaxKind::Fixed);
        if self.dtype() == DType::Bool || floats_only && !self.dtype().is_floating_point() {
            return Err(Error::unsupported_dtype(op, self.dtype()));
        }
        let shape = self.shape();
        let out_shape = with_plane(&shape, win.output, rank);
        crate::shape::checked_numel(&out_shape)?;
        let (values, indices) = dispatch!(self.dtype(), T => {
            let (v, i) = with_slice(&self.tensor(), |x: &[T]| kernel::max_pool(x, planes, win))?;
            (Tensor::from_vec(v, &out_shape)?, Tensor::from_vec(i, &out_shape)?)
        });
        let indices = Variable::from_tensor(indices);
        let out = Variable::record(values, &[self], |_, _| {
            (
                Rule::MaxPool(Box::new(shape.clone()), kind, rank as u8),
                smallvec![Some(SavedTensor::input(&indices))],
            )
        });
        Ok((out, indices))
    }

    /// `adaptive_max_pool2d(input, output_size, return_indices=True)`: PyTorch's
    /// adaptive windows (`floor(i * H / oH) .. ceil((i + 1) * H / oH)`), values and flat
    /// indices.
    pub fn adaptive_max_pool2d(&self, output_size: &[i64; 2]) -> Result<(Variable, Variable)> {
        crate::jit::op(
            || crate::jit::Op::AdaptiveMaxPool2d(*output_size),
            &[self],
            || {
                self.adaptive_max(
                    &[1, output_size[0], output_size[1]],
                    2,
                    "adaptive_max_pool2d",
                )
            },
        )
    }

    /// `adaptive_max_pool3d(input, output_size, return_indices=True)` over 4-d or 5-d
    /// input: values and flat indices `(d * H + h) * W + w`.
    pub fn adaptive_max_pool3d(&self, output_size: &[i64; 3]) -> Result<(Variable, Variable)> {
        self.adaptive_max(output_size, 3, "adaptive_max_pool3d")
    }

    fn adaptive_max(
        &self,
        output_size: &[i64; 3],
        rank: usize,
        op: &'static str,
    ) -> Result<(Variable, Variable)> {
        let shape = self.shape();
        let (planes, input, output) = adaptive_geometry(op, &shape, output_size, rank)?;
        let win = Window::adaptive(input, output)?;
        let kernel_name = if rank == 2 {
            op
        } else {
            "adaptive_max_pool3d_cpu"
        };
        self.max_pool_with(planes, &win, rank, MaxKind::Adaptive, kernel_name)
    }

    /// `fractional_max_pool2d(input, kernel_size, output_size, _random_samples)` over
    /// `(N, C, H, W)` or `(C, H, W)`: windows of `kernel_size` at PyTorch's
    /// pseudo-random starts drawn from `samples` (`(N, C, 2)`, uniform in `[0, 1)`,
    /// `(w, h)` per plane); values and flat indices.
    pub fn fractional_max_pool2d(
        &self,
        kernel_size: &[i64; 2],
        output_size: &[i64; 2],
        samples: &Variable,
    ) -> Result<(Variable, Variable)> {
        let k = [1, kernel_size[0], kernel_size[1]];
        let o = [1, output_size[0], output_size[1]];
        self.fractional_max(&k, &o, samples, 2)
    }

    /// `fractional_max_pool3d(input, kernel_size, output_size, _random_samples)` over
    /// `(N, C, T, H, W)` or `(C, T, H, W)`, samples `(N, C, 3)` (`(t, h, w)` per plane).
    pub fn fractional_max_pool3d(
        &self,
        kernel_size: &[i64; 3],
        output_size: &[i64; 3],
        samples: &Variable,
    ) -> Result<(Variable, Variable)> {
        self.fractional_max(kernel_size, output_size, samples, 3)
    }

    fn fractional_max(
        &self,
        kernel: &[i64; 3],
        output: &[i64; 3],
        samples: &Variable,
        rank: usize,
    ) -> Result<(Variable, Variable)> {
        let (op, out_op) = if rank == 2 {
            ("fractional_max_pool2d", "fractional_max_pool2d")
        } else {
            ("fractional_max_pool3d", "fractional_max_pool3d_out")
        };
        // PyTorch's checks, in its order.
        if kernel[3 - rank..].iter().any(|&k| k <= 0) {
            let list: Vec<String> = kernel[3 - rank..].iter().map(|k| k.to_string()).collect();
            return Err(Error::InvalidArgument(format!(
                "{op}(): kernel size should be greater than zero, but got {}",
                list.join("x")
            )));
        }
        if samples.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(
                "Expect _random_samples to have the same dtype as input".into(),
            ));
        }
        let shape = self.shape();
        let n = shape.len();
        if !(n == rank + 2 || n == rank + 1 && self.numel() > 0) {
            return Err(Error::InvalidArgument(format!(
                "{out_op}(): Expected {}D or {}D tensor, but got: {shape:?}",
                rank + 1,
                rank + 2
            )));
        }
        if let Some(i) = (1..n).find(|&i| shape[i] == 0) {
            return Err(Error::InvalidArgument(format!(
                "{out_op}(): Expected input to have non-zero size for non-batch dimensions, \
                 but got{shape:?} with dimension {i} being empty."
            )));
        }
        let input = plane_of(&shape, rank);
        let names = ["time", "height", "width"];
        for a in 3 - rank..3 {
            if output[a] < 0 {
                return Err(Error::InvalidArgument(format!(
                    "{op}(): output_size must be non-negative, but got {:?}",
                    &output[3 - rank..]
                )));
            }
            if output[a] as i128 + kernel[a] as i128 - 1 > input[a] as i128 {
                return Err(Error::InvalidArgument(format!(
                    "{out_op}(): pool {} {} too large relative to input {} {}",
                    names[a], kernel[a], names[a], input[a]
                )));
            }
        }
        check_float(op, self.dtype())?;
        let sshape = samples.shape();
        if sshape.len() != 3 {
            return Err(Error::InvalidArgument(format!(
                "Expect _random_samples to have 3 dimensions, got {}",
                sshape.len()
            )));
        }
        let (batch, channels) = if n == rank + 2 {
            (shape[0], shape[1])
        } else {
            (1, shape[0])
        };
        if sshape[0] < batch {
            return Err(Error::InvalidArgument(
                "Expect _random_samples.size(0) no less then input batch size.".into(),
            ));
        }
        if sshape[1] != channels {
            return Err(Error::InvalidArgument(
                "Expect _random_samples.size(1) equals to input channel size.".into(),
            ));
        }
        if sshape[2] != rank {
            return Err(Error::InvalidArgument(format!(
                "Expect _random_samples.size(2) equals to {rank}; got {}.",
                sshape[2]
            )));
        }
        let out = output.map(|o| o as usize);
        let planes = batch * channels;
        // The samples of plane (b, c), one per axis in the pool's axis order.
        let s: Vec<f64> = samples
            .tensor()
            .to_dtype(DType::F64)?
            .contiguous()?
            .try_to_vec()?;
        let spans: [Result<Vec<Span>>; 3] = dispatch_float!(self.dtype(), op, T => {
            std::array::from_fn(|a| {
                if a + rank < 3 {
                    return kernel::spans(planes, |_| Span::UNIT);
                }
                // PyTorch's sample order is (w, h) in 2-d and (t, h, w) in 3-d.
                let slot = if rank == 2 { 2 - a } else { a };
                let k = kernel[a] as usize;
                let mut v = crate::kernels::try_with_capacity(planes.saturating_mul(out[a]))?;
                for b in 0..batch {
                    for c in 0..channels {
                        let sample = s[(b * sshape[1] + c) * rank + slot];
                        let starts = kernel::fractional_starts::<T>(sample, input[a], out[a], k);
                        v.extend(starts.into_iter().map(|st| Span::at(st, k)));
                    }
                }
                Ok(v)
            })
        });
        let [d, h, w] = spans;
        let spans = [d?, h?, w?];
        let win = Window {
            input,
            output: out,
            spans,
            sets: planes,
        };
        self.max_pool_with(planes, &win, rank, MaxKind::Fractional, op)
    }

    /// The backward of a max pool: `self` (the output's gradient) added at `indices`
    /// into zeros of shape `input`. Recorded, so that double backward gathers.
    fn max_pool_backward(
        &self,
        indices: &Variable,
        input: &[usize],
        kind: MaxKind,
        rank: u8,
    ) -> Result<Variable> {
        let result = scatter(self, indices, input, rank as usize, true)?;
        let out_shape = self.shape();
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::MaxPoolBackward(Box::new(out_shape), kind, rank),
                smallvec![Some(SavedTensor::input(indices))],
            )
        }))
    }

    /// `max_unpool2d(input, indices, output_size)`: each value written at its flat index
    /// in a zero plane of `output_size` (`(oH, oW)`). An index outside the plane raises
    /// PyTorch's "Found an invalid max index".
    pub fn max_unpool2d(&self, indices: &Variable, output_size: &[i64; 2]) -> Result<Variable> {
        self.max_unpool(indices, &[1, output_size[0], output_size[1]], 2)
    }

    /// `max_unpool3d(input, indices, output_size)` over 4-d or 5-d input: each value
    /// written at its flat index in a zero volume of `output_size` (`(oT, oH, oW)`).
    pub fn max_unpool3d(&self, indices: &Variable, output_size: &[i64; 3]) -> Result<Variable> {
        self.max_unpool(indices, output_size, 3)
    }

    fn max_unpool(
        &self,
        indices: &Variable,
        output_size: &[i64; 3],
        rank: usize,
    ) -> Result<Variable> {
        let shape = self.shape();
        if indices.dtype() != DType::I64 {
            return Err(Error::InvalidArgument(format!(
                "elements in indices should be type int64 but got: {}",
                indices.dtype().scalar_type_name()
            )));
        }
        if shape.len() != rank + 1 && shape.len() != rank + 2 {
            return Err(Error::InvalidArgument(format!(
                "Input to max_unpooling{rank}d should be a {}d or {}d Tensor, but got a tensor \
                 with {} dimensions.",
                rank + 1,
                rank + 2,
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
        let wanted = &output_size[3 - rank..];
        if wanted.iter().any(|&o| o <= 0) {
            let list: Vec<String> = wanted.iter().map(|o| o.to_string()).collect();
            return Err(Error::InvalidArgument(format!(
                "maxunpooling{rank}d: output_size must be positive, got ({})",
                list.join(", ")
            )));
        }
        if let Some(i) = (1..shape.len()).find(|&i| shape[i] == 0) {
            let op = if rank == 2 {
                "max_unpooling2d()"
            } else {
                "max_unpooling3d_forward_out_cpu()"
            };
            return Err(Error::InvalidArgument(format!(
                "{op}: Expected input to have non-zero size for non-batch dimensions, but got \
                 {shape:?} with dimension {i} being empty."
            )));
        }
        let out_shape = with_plane(&shape, output_size.map(|o| o as usize), rank);
        crate::shape::checked_numel(&out_shape)?;
        let result = scatter(self, indices, &out_shape, rank, false)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::MaxUnpool(Box::new(shape.clone()), rank as u8),
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
        crate::jit::op(
            || crate::jit::Op::AvgPool2d(p.clone(), count_include_pad, divisor_override),
            &[self],
            || self.avg_pool_fixed(&p.into(), count_include_pad, divisor_override),
        )
    }

    /// `avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
    /// divisor_override)` over 4-d or 5-d input (the dilation of `p` must be 1).
    pub fn avg_pool3d(
        &self,
        p: &Pool3d,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> Result<Variable> {
        self.avg_pool_fixed(&p.into(), count_include_pad, divisor_override)
    }

    fn avg_pool_fixed(
        &self,
        p: &Args,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> Result<Variable> {
        let divisor = match divisor_override {
            Some(0) => return Err(Error::InvalidArgument("divisor must be not zero".into())),
            // PyTorch accepts a negative divisor (negating the result): keep it exact.
            Some(d) if d < 0 => {
                return self
                    .avg_pool_fixed(
                        p,
                        count_include_pad,
                        Some(d.checked_neg().unwrap_or(i64::MAX)),
                    )?
                    .neg();
            }
            Some(d) => Some(d as usize),
            None => None,
        };
        let shape = self.shape();
        let rank = p.rank;
        if rank == 2 && shape.len() < 3 {
            return Err(Error::Index(format!(
                "Dimension out of range (expected to be in range of [-{n}, {m}], but got -3)",
                n = shape.len().max(1),
                m = shape.len().max(1) - 1
            )));
        }
        if rank == 2 && shape.len() > 4 {
            return Err(Error::InvalidArgument(format!(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for \
                 input, but got:{shape:?}"
            )));
        }
        let (_, win) = window(&shape, p, "avg_pool3d", rank == 3)?;
        // As PyTorch: floats and int64 (truncating division); no 16-bit floats in 3-d.
        let dtype = self.dtype();
        let ok = dtype == DType::I64
            || dtype.is_floating_point()
                && (rank == 2 || !matches!(dtype, DType::F16 | DType::BF16));
        if !ok {
            let op = if rank == 2 {
                "avg_pool2d"
            } else {
                "avg_pool3d_out_frame"
            };
            return Err(Error::unsupported_dtype(op, dtype));
        }
        let info = AvgInfo {
            input: shape,
            rank,
            adaptive: false,
            win,
            count_include_pad,
            divisor,
        };
        self.avg_pool_with(&info)
    }

    /// Average pooling over a checked window.
    fn avg_pool_with(&self, info: &AvgInfo) -> Result<Variable> {
        let shape = self.shape();
        let rank = info.rank;
        let planes: usize = shape[..shape.len() - rank].iter().product();
        let out_shape = with_plane(&shape, info.win.output, rank);
        let run =
            |x: &[_]| kernel::avg_pool(x, planes, &info.win, info.count_include_pad, info.divisor);
        let result = if self.dtype() == DType::I64 {
            Tensor::from_vec(with_slice(&self.tensor(), |x: &[i64]| run(x))?, &out_shape)?
        } else {
            dispatch_float!(self.dtype(), "avg_pool2d", T => {
                let v = with_slice(&self.tensor(), |x: &[T]| {
                    kernel::avg_pool(x, planes, &info.win, info.count_include_pad, info.divisor)
                })?;
                Tensor::from_vec(v, &out_shape)?
            })
        };
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::AvgPool(Box::new(info.clone())), smallvec![])
        }))
    }

    /// Average pooling's backward (recorded: its backward is the forward).
    fn avg_pool_backward(&self, info: &AvgInfo) -> Result<Variable> {
        let planes: usize = info.input[..info.input.len() - info.rank].iter().product();
        let result = dispatch_float!(self.dtype(), "avg_pool2d_backward", T => {
            let v = with_slice(&self.tensor(), |g: &[T]| {
                kernel::avg_pool_backward(g, planes, &info.win, info.count_include_pad, info.divisor)
            })?;
            Tensor::from_vec(v, &info.input)?
        });
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::AvgPoolBackward(Box::new(info.clone())), smallvec![])
        }))
    }

    /// `adaptive_avg_pool2d(input, output_size)`: the mean of each adaptive window.
    pub fn adaptive_avg_pool2d(&self, output_size: &[i64; 2]) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::AdaptiveAvgPool2d(*output_size),
            &[self],
            || {
                self.adaptive_avg(
                    &[1, output_size[0], output_size[1]],
                    2,
                    "adaptive_avg_pool2d",
                )
            },
        )
    }

    /// `adaptive_avg_pool3d(input, output_size)` over 4-d or 5-d input.
    pub fn adaptive_avg_pool3d(&self, output_size: &[i64; 3]) -> Result<Variable> {
        self.adaptive_avg(output_size, 3, "adaptive_avg_pool3d")
    }

    fn adaptive_avg(
        &self,
        output_size: &[i64; 3],
        rank: usize,
        op: &'static str,
    ) -> Result<Variable> {
        let shape = self.shape();
        let (_, input, output) = adaptive_geometry(op, &shape, output_size, rank)?;
        let kernel_name = if rank == 2 {
            op
        } else {
            "adaptive_avg_pool3d_cpu"
        };
        check_float(kernel_name, self.dtype())?;
        let info = AvgInfo {
            input: shape,
            rank,
            adaptive: true,
            win: Window::adaptive(input, output)?,
            count_include_pad: false,
            divisor: None,
        };
        self.avg_pool_with(&info)
    }
}

/// Checks an adaptive pool's input and output size (`rank` spatial dims, the sizes as
/// three axes): planes, input plane, output plane.
fn adaptive_geometry(
    op: &str,
    shape: &[usize],
    output_size: &[i64; 3],
    rank: usize,
) -> Result<(usize, [usize; 3], [usize; 3])> {
    let n = shape.len();
    let max = op.starts_with("adaptive_max");
    if n != rank + 1 && n != rank + 2 {
        // PyTorch's avg and max messages differ by a colon.
        let colon = if max { ":" } else { "" };
        return Err(Error::InvalidArgument(format!(
            "{op}(): Expected {}D or {}D tensor, but got{colon} {shape:?}",
            rank + 1,
            rank + 2
        )));
    }
    // 2-d adaptive average pooling accepts empty channels, as PyTorch; not empty planes.
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
    let sizes = &output_size[3 - rank..];
    if let Some(&bad) = sizes.iter().find(|&&o| o < 0) {
        if max {
            let mut dims: Vec<i64> = shape[..n - rank].iter().map(|&d| d as i64).collect();
            dims.extend_from_slice(sizes);
            return Err(Error::InvalidArgument(format!(
                "Trying to create tensor with negative dimension {bad}: {dims:?}"
            )));
        }
        // PyTorch's own spacing.
        let list = if rank == 2 {
            format!("{}, {}", sizes[0], sizes[1])
        } else {
            format!("{}, {},{}", sizes[0], sizes[1], sizes[2])
        };
        return Err(Error::InvalidArgument(format!(
            "{op}: elements of output_size must be greater than or equal to 0 but received \
             {{{list}}}"
        )));
    }
    let (planes, input) = split_planes(shape, rank)?;
    let out = output_size.map(|o| o as usize);
    crate::shape::checked_numel(&with_plane(shape, out, rank))?;
    Ok((planes, input, out))
}

/// `src` (planes of `indices`' shape) written at its flat per-plane indices into zeros
/// of `out_shape` (`rank` spatial dims): added (`accumulate`) or assigned.
fn scatter(
    src: &Variable,
    indices: &Variable,
    out_shape: &[usize],
    rank: usize,
    accumulate: bool,
) -> Result<Tensor> {
    let sshape = src.shape();
    let n = out_shape.len();
    let planes: usize = out_shape[..n - rank].iter().product();
    let out_plane: usize = out_shape[n - rank..].iter().product();
    let src_plane = src.numel().checked_div(planes).unwrap_or(0);
    if sshape.len() != n || indices.shape() != sshape || sshape[..n - rank] != out_shape[..n - rank]
    {
        return Err(Error::NotImplemented(
            "rustgrad internal error: max pool gradient of the wrong shape".into(),
        ));
    }
    let idx: Vec<i64> = indices.tensor().try_to_vec()?;
    let desc: Vec<String> = out_shape[n - rank..]
        .iter()
        .map(|d| d.to_string())
        .collect();
    let desc = desc.join("x");
    Ok(dispatch_float!(src.dtype(), "max_pool2d_backward", T => {
        let v = with_slice(&src.tensor(), |s: &[T]| {
            kernel::scatter_planes(s, &idx, planes, src_plane, out_plane, accumulate, &desc)
        })?;
        Tensor::from_vec(v, out_shape)?
    }))
}
