//! Convolutions and linear layers: `convolution` (PyTorch's `aten::convolution`), the
//! functionals `conv1d/2d/3d` and `conv_transpose1d/2d/3d`, `unfold` / `fold` (im2col /
//! col2im), `pixel_shuffle` / `pixel_unshuffle`, and `linear` / `bilinear` (composed of
//! the linear-algebra ops, as PyTorch composes them).
//!
//! A convolution is one of three bilinear maps of the same geometry (Note
//! [Convolutions]): the forward `conv(x, w)`, its adjoint in the input (the transposed
//! convolution) and its adjoint in the weight. Each map's derivatives are the other two,
//! so the rules below are written with these same differentiable ops and double
//! backward works to any order.

use super::{saved_at, Grads};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::conv::{self as kernel, ConvGeometry};
use crate::tensor::{Scalar, Tensor};
use crate::variable::{SavedTensor, Variable};
use smallvec::smallvec;

/// Which of the three maps of a convolution geometry a node computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Map {
    /// `y = conv(x, w) + bias`; inputs `[x, w, bias?]`.
    Forward,
    /// `x = conv_transpose(y, w) + bias` (the adjoint in the input); inputs
    /// `[y, w, bias?]`.
    InputAdjoint,
    /// `w = Σ ȳ ⊗ im2col(x)` (the adjoint in the weight); inputs `[x, ȳ]`.
    WeightAdjoint,
    /// `unfold` (im2col); input `[x]`.
    Unfold,
    /// `fold` (col2im); input `[cols]`.
    Fold,
}

/// A convolution's geometry without its batch size: what a node keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConvSpec {
    /// Spatial dims of the user's tensors (1, 2 or 3); the geometry pads to three.
    nd: usize,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    input: [usize; 3],
    output: [usize; 3],
    kernel: [usize; 3],
    stride: [usize; 3],
    padding: [usize; 3],
    dilation: [usize; 3],
}

impl ConvSpec {
    fn geometry(&self, batch: usize) -> ConvGeometry {
        ConvGeometry {
            batch,
            in_channels: self.in_channels,
            out_channels: self.out_channels,
            groups: self.groups,
            input: self.input,
            output: self.output,
            kernel: self.kernel,
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
        }
    }

    /// The last `nd` of three spatial sizes.
    fn spatial(&self, v: [usize; 3]) -> Vec<usize> {
        v[3 - self.nd..].to_vec()
    }
}

/// The backward rules of this family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// One of the maps of a convolution geometry; saved `[input 0 if input 1 needs grad,
    /// input 1 if input 0 needs grad]`.
    Conv(Box<ConvSpec>, Map),
    /// `pixel_shuffle(factor)` (or `pixel_unshuffle` when `unshuffle`).
    PixelShuffle { factor: usize, unshuffle: bool },
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Conv(_, Map::Forward | Map::InputAdjoint) => "ConvolutionBackward0",
            Rule::Conv(_, Map::WeightAdjoint) => "ConvolutionBackwardBackward0",
            Rule::Conv(_, Map::Unfold) => "Im2ColBackward0",
            Rule::Conv(_, Map::Fold) => "Col2ImBackward0",
            Rule::PixelShuffle {
                unshuffle: false, ..
            } => "PixelShuffleBackward0",
            Rule::PixelShuffle {
                unshuffle: true, ..
            } => "PixelUnshuffleBackward0",
        }
    }

    /// The gradients of the inputs given `grad`; `needs[i]` says whether input `i`
    /// wants one.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        let g = grad;
        match self {
            Rule::Conv(spec, map) => {
                let bias_grad = || -> Result<Option<Variable>> {
                    if !need(2) {
                        return Ok(None);
                    }
                    let dims: Vec<i64> = std::iter::once(0).chain(2..g.dim() as i64).collect();
                    Ok(Some(g.sum_dims(&dims, false)?))
                };
                Ok(match map {
                    Map::Forward => {
                        let gx = if need(0) {
                            Some(conv_map(
                                Map::InputAdjoint,
                                g,
                                saved_at(saved, 1)?,
                                None,
                                spec,
                            )?)
                        } else {
                            None
                        };
                        let gw = if need(1) {
                            Some(conv_map(
                                Map::WeightAdjoint,
                                saved_at(saved, 0)?,
                                g,
                                None,
                                spec,
                            )?)
                        } else {
                            None
                        };
                        smallvec![gx, gw, bias_grad()?]
                    }
                    Map::InputAdjoint => {
                        let gy = if need(0) {
                            Some(conv_map(Map::Forward, g, saved_at(saved, 1)?, None, spec)?)
                        } else {
                            None
                        };
                        let gw = if need(1) {
                            Some(conv_map(
                                Map::WeightAdjoint,
                                g,
                                saved_at(saved, 0)?,
                                None,
                                spec,
                            )?)
                        } else {
                            None
                        };
                        smallvec![gy, gw, bias_grad()?]
                    }
                    Map::WeightAdjoint => {
                        let gx = if need(0) {
                            Some(conv_map(
                                Map::InputAdjoint,
                                saved_at(saved, 1)?,
                                g,
                                None,
                                spec,
                            )?)
                        } else {
                            None
                        };
                        let ggy = if need(1) {
                            Some(conv_map(Map::Forward, saved_at(saved, 0)?, g, None, spec)?)
                        } else {
                            None
                        };
                        smallvec![gx, ggy]
                    }
                    Map::Unfold => smallvec![Some(fold_map(Map::Fold, g, spec)?)],
                    Map::Fold => smallvec![Some(fold_map(Map::Unfold, g, spec)?)],
                })
            }
            Rule::PixelShuffle { factor, unshuffle } => {
                let back = if *unshuffle {
                    g.pixel_shuffle(*factor as i64)?
                } else {
                    g.pixel_unshuffle(*factor as i64)?
                };
                Ok(smallvec![Some(back)])
            }
        }
    }
}

// ----- computing one map ------------------------------------------------------------

/// A batch's elements as a contiguous `Vec<T>`-compatible tensor of `dtype`.
fn dense(t: &Tensor, dtype: DType) -> Result<Tensor> {
    t.to_dtype(dtype)?.contiguous()
}

/// Runs `f` on the contiguous elements of `t` (of float type `T`).
fn with_slice<T: crate::dtype::Element, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> R {
    let (start, n) = (t.layout().offset(), t.numel());
    t.read(|s: &[T]| f(&s[start..start + n]))
}

/// The float dtype a convolution computes in, or PyTorch's error for the others.
fn compute_dtype(dtype: DType) -> Result<DType> {
    match dtype {
        DType::F32 | DType::F64 => Ok(dtype),
        DType::F16 | DType::BF16 => Ok(DType::F32),
        _ => Err(Error::unsupported_dtype("slow_conv2d_cpu", dtype)),
    }
}

/// Computes `map` on tensors: `a` is the batch operand (`x`, `ȳ` or `cols`), `b` the
/// second (`w` or `ȳ`), `bias` optional; the result has `a`'s dtype.
fn compute(
    map: Map,
    a: &Tensor,
    b: Option<&Tensor>,
    bias: Option<&Tensor>,
    spec: &ConvSpec,
) -> Result<Tensor> {
    let dtype = a.dtype();
    let work = compute_dtype(dtype)?;
    let batch = a.shape()[0];
    let g = spec.geometry(batch);
    let a = dense(a, work)?;
    let b = b.map(|b| dense(b, work)).transpose()?;
    let bias = bias.map(|b| dense(b, work)).transpose()?;
    let mut shape: Vec<usize> = Vec::with_capacity(5);
    match map {
        Map::Forward => {
            shape.extend([batch, spec.out_channels]);
            shape.extend(spec.spatial(spec.output));
        }
        Map::InputAdjoint => {
            shape.extend([batch, spec.in_channels]);
            shape.extend(spec.spatial(spec.input));
        }
        Map::WeightAdjoint => {
            shape.extend([spec.out_channels, spec.in_channels / spec.groups]);
            shape.extend(spec.spatial(spec.kernel));
        }
        Map::Unfold => {
            let k: usize = spec.kernel.iter().product();
            let l: usize = spec.output.iter().product();
            shape.extend([batch, spec.in_channels * k, l]);
        }
        Map::Fold => {
            shape.extend([batch, spec.in_channels]);
            shape.extend(spec.spatial(spec.input));
        }
    }
    // The bias is small: copied out, so that at most the two big operands are read
    // under storage locks, through `read2` (one lock when they share a storage: Note
    // [Locking of storages]).
    macro_rules! run {
        ($T:ty) => {{
            let bias: Option<Vec<$T>> = bias.as_ref().map(|t| t.try_to_vec()).transpose()?;
            let (oa, na) = (a.layout().offset(), a.numel());
            let v: Vec<$T> = match (&b, map) {
                (_, Map::Unfold) => with_slice(&a, |sa: &[$T]| kernel::unfold(&g, sa)),
                (_, Map::Fold) => with_slice(&a, |sa: &[$T]| kernel::fold(&g, sa)),
                (Some(b), _) => {
                    let (ob, nb) = (b.layout().offset(), b.numel());
                    a.read2(b, |sa: &[$T], sb: &[$T]| {
                        let (sa, sb) = (&sa[oa..oa + na], &sb[ob..ob + nb]);
                        match map {
                            Map::Forward => kernel::conv_forward(&g, sa, sb, bias.as_deref()),
                            Map::InputAdjoint => {
                                let out = kernel::conv_input_adjoint(&g, sa, sb)?;
                                Ok(match &bias {
                                    Some(bias) => add_bias(out, bias, spec.input.iter().product()),
                                    None => out,
                                })
                            }
                            _ => kernel::conv_weight_adjoint(&g, sa, sb),
                        }
                    })
                }
                (None, _) => Err(Error::NotImplemented(
                    "rustgrad internal error: conv operand missing".into(),
                )),
            }?;
            Tensor::from_vec(v, &shape)?
        }};
    }
    let out = match work {
        DType::F64 => run!(f64),
        _ => run!(f32),
    };
    out.to_dtype(dtype)
}

/// Adds `bias[c]` to every element of channel `c` of a contiguous `N x C x L` batch.
fn add_bias<T: crate::dtype::Num>(mut out: Vec<T>, bias: &[T], l: usize) -> Vec<T> {
    if l == 0 || bias.is_empty() {
        return out;
    }
    for (row, &b) in out.chunks_mut(l).zip(bias.iter().cycle()) {
        row.iter_mut().for_each(|v| *v += b);
    }
    out
}

/// Records `map` of `a` and `b` (and `bias`) as a differentiable op.
fn conv_map(
    map: Map,
    a: &Variable,
    b: &Variable,
    bias: Option<&Variable>,
    spec: &ConvSpec,
) -> Result<Variable> {
    let result = {
        let (ta, tb) = (a.tensor().clone(), b.tensor().clone());
        let tbias = bias.map(|v| v.tensor().clone());
        compute(map, &ta, Some(&tb), tbias.as_ref(), spec)?
    };
    let mut inputs: Vec<&Variable> = vec![a, b];
    if let Some(bias) = bias {
        inputs.push(bias);
    }
    Ok(Variable::record(result, &inputs, |needs, _| {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        (
            Rule::Conv(Box::new(spec.clone()), map),
            smallvec![
                need(1).then(|| SavedTensor::input(a)),
                need(0).then(|| SavedTensor::input(b)),
            ],
        )
    }))
}

/// Records `unfold` or `fold` of `a`.
fn fold_map(map: Map, a: &Variable, spec: &ConvSpec) -> Result<Variable> {
    let t = a.tensor().clone();
    // Unbatched: `(C, H, W)` for unfold, `(C·k, L)` for fold.
    let unbatched = t.dim() == if map == Map::Unfold { 3 } else { 2 };
    let result = if unbatched {
        let out = compute(map, &t.unsqueeze(0)?, None, None, spec)?;
        out.squeeze_dim(0)?
    } else {
        compute(map, &t, None, None, spec)?
    };
    Ok(Variable::record(result, &[a], |_, _| {
        (Rule::Conv(Box::new(spec.clone()), map), smallvec![])
    }))
}

// ----- the public ops ---------------------------------------------------------------

/// The `padding` argument of `conv1d/2d/3d`: sizes (one value for every dim, or one
/// per dim), or PyTorch's strings `"same"` and `"valid"`.
#[derive(Clone, Copy, Debug)]
pub enum ConvPadding<'a> {
    /// Zero padding on both sides of each spatial dim.
    Explicit(&'a [i64]),
    /// The output has the input's spatial size (stride 1 only); odd total padding puts
    /// the extra zero after the input, as PyTorch does.
    Same,
    /// No padding.
    Valid,
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}

/// PyTorch's `expand_param_if_needed`: one value for every dim, or one per dim.
fn expand_param(name: &str, values: &[i64], dims: usize) -> Result<Vec<i64>> {
    match values.len() {
        1 => Ok(vec![values[0]; dims]),
        n if n == dims => Ok(values.to_vec()),
        _ => Err(invalid(format!(
            "expected {name} to be a single integer value or a list of {dims} values to match the convolution dimensions, but got {name}={values:?}"
        ))),
    }
}

/// `(a x b x c)`: sizes as PyTorch's convolution messages write them.
fn by(values: impl IntoIterator<Item = i128>) -> String {
    let parts: Vec<String> = values.into_iter().map(|v| v.to_string()).collect();
    format!("({})", parts.join(" x "))
}

/// Three spatial values from `nd` (leading dims filled with `fill`).
fn three(values: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[3 - values.len()..].copy_from_slice(values);
    out
}

fn to_usize(v: i128) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::NumelOverflow)
}

impl Variable {
    /// PyTorch's `torch.convolution(input, weight, bias, stride, padding, dilation,
    /// transposed, output_padding, groups)`: a batched convolution (or transposed
    /// convolution) over `weight.dim() - 2` spatial dims (1 to 3). Each of `stride`,
    /// `padding`, `dilation` and `output_padding` holds one value for every dim or one
    /// per dim. grad_fn `ConvolutionBackward0`.
    #[allow(clippy::too_many_arguments)]
    pub fn convolution(
        &self,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        transposed: bool,
        output_padding: &[i64],
        groups: i64,
    ) -> Result<Variable> {
        self.convolution_padded(
            weight,
            bias,
            stride,
            (padding, padding),
            dilation,
            transposed,
            output_padding,
            groups,
        )
    }

    /// [`Variable::convolution`] with padding `(before, after)` each spatial dim (they
    /// differ only for `padding="same"` with an even kernel extent).
    #[allow(clippy::too_many_arguments)]
    fn convolution_padded(
        &self,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        (pad_lo, pad_hi): (&[i64], &[i64]),
        dilation: &[i64],
        transposed: bool,
        output_padding: &[i64],
        groups: i64,
    ) -> Result<Variable> {
        let wshape = weight.shape().to_vec();
        let ishape = self.shape().to_vec();
        let k = wshape.len();
        if k < 3 {
            return Err(invalid(
                "weight should have at least three dimensions".into(),
            ));
        }
        let nd = k - 2;
        let stride = expand_param("stride", stride, nd)?;
        let pad_lo = expand_param("padding", pad_lo, nd)?;
        let pad_hi = expand_param("padding", pad_hi, nd)?;
        let dilation = expand_param("dilation", dilation, nd)?;
        let output_padding = expand_param("output_padding", output_padding, nd)?;
        if groups <= 0 {
            return Err(invalid("non-positive groups is not supported".into()));
        }
        if pad_lo.iter().chain(&pad_hi).any(|&p| p < 0) {
            return Err(invalid("negative padding is not supported".into()));
        }
        if output_padding.iter().any(|&p| p < 0) {
            return Err(invalid("negative output_padding is not supported".into()));
        }
        if stride.iter().any(|&s| s <= 0) {
            return Err(invalid("non-positive stride is not supported".into()));
        }
        if dilation.iter().any(|&d| d < 0) {
            return Err(invalid("dilation should be greater than zero".into()));
        }
        if dilation.contains(&0) {
            return Err(invalid("non-positive dilation is not supported".into()));
        }
        if ishape.len() != k {
            return Err(invalid(format!(
                "Expected {k}-dimensional input for {k}-dimensional weight {wshape:?}, but got {}-dimensional input of size {ishape:?} instead",
                ishape.len()
            )));
        }
        if nd > 3 {
            return Err(Error::NotImplemented(format!(
                "rustgrad: convolutions over {nd} spatial dims are not implemented (at most 3)"
            )));
        }
        let g = groups as u64 as usize;
        if wshape[0] < g {
            return Err(invalid(format!(
                "Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got weight of size {wshape:?} instead"
            )));
        }
        if !wshape[0].is_multiple_of(g) {
            return Err(invalid(format!(
                "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size [{wshape:?}] instead"
            )));
        }
        let bias_shape = bias.map(|b| b.shape().to_vec());
        let in_spatial = &ishape[2..];
        let kernel = &wshape[2..];
        let ext = |d: usize| dilation[d] as i128 * (kernel[d] as i128 - 1) + 1;
        let (c, o, input, output) = if !transposed {
            let channels = wshape[1].checked_mul(g).ok_or(Error::NumelOverflow)?;
            if ishape[1] != channels {
                return Err(invalid(format!(
                    "Given groups={groups}, weight of size {wshape:?}, expected input{ishape:?} to have {channels} channels, but got {} channels instead",
                    ishape[1]
                )));
            }
            if let Some(bs) = &bias_shape {
                if bs.len() != 1 || bs[0] != wshape[0] {
                    return Err(invalid(format!(
                        "Given weight of size {wshape:?}, expected bias to be 1-dimensional with {} elements, but got bias of size {bs:?} instead",
                        wshape[0]
                    )));
                }
            }
            let padded: Vec<i128> = (0..nd)
                .map(|d| in_spatial[d] as i128 + pad_lo[d] as i128 + pad_hi[d] as i128)
                .collect();
            if (0..nd).any(|d| padded[d] < ext(d)) {
                return Err(invalid(format!(
                    "Calculated padded input size per channel: {}. Kernel size: {}. Kernel size can't be greater than actual input size",
                    by(padded.iter().copied()),
                    by((0..nd).map(ext))
                )));
            }
            let out = (0..nd)
                .map(|d| to_usize((padded[d] - ext(d)) / stride[d] as i128 + 1))
                .collect::<Result<Vec<_>>>()?;
            (channels, wshape[0], in_spatial.to_vec(), out)
        } else {
            if ishape[1] != wshape[0] {
                return Err(invalid(format!(
                    "Given transposed=1, weight of size {wshape:?}, expected input{ishape:?} to have {} channels, but got {} channels instead",
                    wshape[0], ishape[1]
                )));
            }
            let channels = wshape[1].checked_mul(g).ok_or(Error::NumelOverflow)?;
            if let Some(bs) = &bias_shape {
                if bs.len() != 1 || bs[0] != channels {
                    return Err(invalid(format!(
                        "Given transposed=1, weight of size {wshape:?}, expected bias to be 1-dimensional with {channels} elements, but got bias of size {bs:?} instead"
                    )));
                }
            }
            // PyTorch runs 1-D transposed convolutions as 2-D ones: its messages show
            // a leading height of 1 (output padding 0).
            let names: &[&str] = match nd {
                3 => &["depth", "height", "width"],
                _ => &["height", "width"],
            };
            let lead = names.len() - nd;
            let show = |prefix: &str, v: &[i64], fill: i64| -> String {
                names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let x = if i < lead { fill } else { v[i - lead] };
                        format!("{prefix}_{n}: {x}")
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            if (0..nd).any(|d| output_padding[d] >= stride[d] && output_padding[d] >= dilation[d]) {
                return Err(invalid(format!(
                    "output padding must be smaller than either stride or dilation, but got {} {} {}",
                    show("output_padding", &output_padding, 0),
                    show("stride", &stride, 1),
                    show("dilation", &dilation, 1)
                )));
            }
            let out: Vec<i128> = (0..nd)
                .map(|d| {
                    (in_spatial[d] as i128 - 1) * stride[d] as i128
                        - pad_lo[d] as i128
                        - pad_hi[d] as i128
                        + ext(d)
                        + output_padding[d] as i128
                })
                .collect();
            if out.iter().any(|&v| v < 1) {
                let ones = std::iter::repeat_n(1i128, lead);
                return Err(invalid(format!(
                    "Given input size per channel: {}. Calculated output size per channel: {}. Output size is too small",
                    by(ones.clone().chain(in_spatial.iter().map(|&v| v as i128))),
                    by(ones.chain(out.iter().copied()))
                )));
            }
            let out = out.into_iter().map(to_usize).collect::<Result<Vec<_>>>()?;
            // The underlying convolution maps the transposed output back to its input.
            (channels, wshape[0], out, in_spatial.to_vec())
        };
        if self.dtype() != weight.dtype() {
            return Err(invalid(format!(
                "Input type ({}) and weight type ({}) should be the same or input should be a MKLDNN tensor and weight is a dense tensor",
                self.dtype().legacy_type_name(),
                weight.dtype().legacy_type_name()
            )));
        }
        if let Some(b) = bias {
            if b.dtype() != self.dtype() {
                return Err(invalid(format!(
                    "Input type ({}) and bias type ({}) should be the same",
                    self.dtype().cpp_type_name(),
                    b.dtype().cpp_type_name()
                )));
            }
        }
        compute_dtype(self.dtype())?;
        let positive = |v: &[i64]| -> Vec<usize> { v.iter().map(|&x| x as u64 as usize).collect() };
        let spec = ConvSpec {
            nd,
            in_channels: c,
            out_channels: o,
            groups: g,
            input: three(&input, 1),
            output: three(&output, 1),
            kernel: three(kernel, 1),
            stride: three(&positive(&stride), 1),
            padding: three(&positive(&pad_lo), 0),
            dilation: three(&positive(&dilation), 1),
        };
        spec.geometry(ishape[0]).validate()?;
        let map = if transposed {
            Map::InputAdjoint
        } else {
            Map::Forward
        };
        conv_map(map, self, weight, bias, &spec)
    }

    /// The rank check and unbatched handling shared by the functionals.
    fn batched_conv(
        &self,
        name: &str,
        nd: usize,
        run: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<Variable> {
        let d = self.dim();
        if d != nd + 1 && d != nd + 2 {
            return Err(invalid(format!(
                "Expected {}D (unbatched) or {}D (batched) input to {name}, but got input of size: {:?}",
                nd + 1,
                nd + 2,
                self.shape().as_slice()
            )));
        }
        if d == nd + 2 {
            run(self)
        } else {
            run(&self.unsqueeze(0)?)?.squeeze_dim(0)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn conv_functional(
        &self,
        name: &str,
        nd: usize,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: ConvPadding<'_>,
        dilation: &[i64],
        groups: i64,
    ) -> Result<Variable> {
        // The argument parser's IntArrayRef[nd]: one value stands for every dim.
        let ex = |v: &[i64]| {
            if v.len() == 1 {
                vec![v[0]; nd]
            } else {
                v.to_vec()
            }
        };
        let (stride, dilation) = (ex(stride), ex(dilation));
        let (lo, hi) = match padding {
            ConvPadding::Explicit(p) => (ex(p), ex(p)),
            ConvPadding::Valid => (vec![0], vec![0]),
            ConvPadding::Same => {
                if stride.iter().any(|&s| s != 1) {
                    return Err(invalid(
                        "padding='same' is not supported for strided convolutions".into(),
                    ));
                }
                let w = weight.shape();
                if w.len() == nd + 2 && dilation.len() == nd {
                    let total: Vec<i64> = (0..nd)
                        .map(|d| dilation[d].saturating_mul(w[d + 2] as i64 - 1))
                        .collect();
                    let lo: Vec<i64> = total.iter().map(|t| t / 2).collect();
                    let hi = total.iter().zip(&lo).map(|(t, l)| t - l).collect();
                    (lo, hi)
                } else {
                    (vec![0], vec![0])
                }
            }
        };
        self.batched_conv(name, nd, |x| {
            x.convolution_padded(
                weight,
                bias,
                &stride,
                (&lo, &hi),
                &dilation,
                false,
                &[0],
                groups,
            )
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn conv_transpose_functional(
        &self,
        name: &str,
        nd: usize,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        groups: i64,
        dilation: &[i64],
    ) -> Result<Variable> {
        let ex = |v: &[i64]| {
            if v.len() == 1 {
                vec![v[0]; nd]
            } else {
                v.to_vec()
            }
        };
        let (stride, padding, output_padding, dilation) =
            (ex(stride), ex(padding), ex(output_padding), ex(dilation));
        self.batched_conv(name, nd, |x| {
            x.convolution(
                weight,
                bias,
                &stride,
                &padding,
                &dilation,
                true,
                &output_padding,
                groups,
            )
        })
    }

    /// `torch.nn.functional.conv1d(input, weight, bias, stride, padding, dilation,
    /// groups)`: input `(N, C, L)` or unbatched `(C, L)`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv1d(
        &self,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: ConvPadding<'_>,
        dilation: &[i64],
        groups: i64,
    ) -> Result<Variable> {
        self.conv_functional("conv1d", 1, weight, bias, stride, padding, dilation, groups)
    }

    /// `torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation,
    /// groups)`: input `(N, C, H, W)` or unbatched `(C, H, W)`, weight
    /// `(O, C/groups, kH, kW)`, bias `(O,)`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv2d(
        &self,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: ConvPadding<'_>,
        dilation: &[i64],
        groups: i64,
    ) -> Result<Variable> {
        crate::jit::op_opt(
            || crate::jit::Op::Conv2d {
                has_bias: bias.is_some(),
                stride: stride.into(),
                padding: crate::jit::Padding::of(&padding),
                dilation: dilation.into(),
                groups,
            },
            &[self, weight],
            &[bias],
            || self.conv_functional("conv2d", 2, weight, bias, stride, padding, dilation, groups),
        )
    }

    /// `torch.nn.functional.conv3d(...)`: input `(N, C, D, H, W)` or `(C, D, H, W)`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv3d(
        &self,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: ConvPadding<'_>,
        dilation: &[i64],
        groups: i64,
    ) -> Result<Variable> {
        self.conv_functional("conv3d", 3, weight, bias, stride, padding, dilation, groups)
    }

    /// `torch.nn.functional.conv_transpose1d(input, weight, bias, stride, padding,
    /// output_padding, groups, dilation)`: weight `(C_in, C_out/groups, k)`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose1d(
        &self,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        groups: i64,
        dilation: &[i64],
    ) -> Result<Variable> {
        self.conv_transpose_functional(
            "conv_transpose1d",
            1,
            weight,
            bias,
            stride,
            padding,
            output_padding,
            groups,
            dilation,
        )
    }

    /// `torch.nn.functional.conv_transpose2d(...)`: weight `(C_in, C_out/groups, kH, kW)`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose2d(
        &self,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        groups: i64,
        dilation: &[i64],
    ) -> Result<Variable> {
        self.conv_transpose_functional(
            "conv_transpose2d",
            2,
            weight,
            bias,
            stride,
            padding,
            output_padding,
            groups,
            dilation,
        )
    }

    /// `torch.nn.functional.conv_transpose3d(...)`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose3d(
        &self,
        weight: &Variable,
        bias: Option<&Variable>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        groups: i64,
        dilation: &[i64],
    ) -> Result<Variable> {
        self.conv_transpose_functional(
            "conv_transpose3d",
            3,
            weight,
            bias,
            stride,
            padding,
            output_padding,
            groups,
            dilation,
        )
    }

    /// `torch.nn.functional.linear(input, weight, bias)`: `input @ weight.T + bias`.
    /// A 2-D input with a bias is one `addmm` (AddmmBackward0), as in PyTorch; other
    /// ranks go through `matmul`.
    pub fn linear(&self, weight: &Variable, bias: Option<&Variable>) -> Result<Variable> {
        crate::jit::op_opt(
            || crate::jit::Op::Linear {
                has_bias: bias.is_some(),
            },
            &[self, weight],
            &[bias],
            || {
                if self.dim() == 0 || weight.dim() == 0 {
                    return Err(invalid(format!(
                        "both arguments to linear need to be at least 1D, but they are {}D and {}D",
                        self.dim(),
                        weight.dim()
                    )));
                }
                let wt = if weight.dim() == 1 {
                    weight.clone()
                } else {
                    weight.t()?
                };
                match bias {
                    Some(b) if self.dim() == 2 && weight.dim() == 2 => {
                        b.addmm(self, &wt, Scalar::Int(1), Scalar::Int(1))
                    }
                    Some(b) => self.matmul(&wt)?.add(b),
                    None => self.matmul(&wt),
                }
            },
        )
    }

    /// `torch.nn.functional.bilinear(input1, input2, weight, bias)`:
    /// `y[..., o] = Σ_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]`.
    pub fn bilinear(
        &self,
        input2: &Variable,
        weight: &Variable,
        bias: Option<&Variable>,
    ) -> Result<Variable> {
        let (s1, s2, ws) = (self.shape(), input2.shape(), weight.shape());
        if s1.len() != s2.len() {
            return Err(invalid(format!(
                "bilinear(): input dimensions do not match: got {} and {}",
                s1.len(),
                s2.len()
            )));
        }
        if s1.is_empty() {
            return Err(invalid(
                "bilinear(): input must have at least 1 dimension".into(),
            ));
        }
        for i in 0..s1.len() - 1 {
            if s1[i] != s2[i] {
                return Err(invalid(format!(
                    "bilinear(): input batch dimensions do not match at dim {i}: got {} and {}",
                    s1[i], s2[i]
                )));
            }
        }
        if ws.len() != 3 {
            return Err(invalid(format!(
                "bilinear(): weight must be 3-dimensional, but got weight of size {:?}",
                ws.as_slice()
            )));
        }
        let (o, i, j) = (ws[0], ws[1], ws[2]);
        if s1[s1.len() - 1] != i {
            return Err(invalid(format!(
                "bilinear(): input1 size does not match weight size: got {} but expected {i}",
                s1[s1.len() - 1]
            )));
        }
        if s2[s2.len() - 1] != j {
            return Err(invalid(format!(
                "bilinear(): input2 size does not match weight size: got {} but expected {j}",
                s2[s2.len() - 1]
            )));
        }
        if let Some(b) = bias {
            let bs = b.shape();
            if bs.first() != Some(&o) {
                return Err(invalid(format!(
                    "bilinear(): bias size does not match weight size: got {} but expected {o}",
                    bs.first().copied().unwrap_or(0)
                )));
            }
        }
        let lead: Vec<usize> = s1[..s1.len() - 1].to_vec();
        let rows: usize = lead.iter().product();
        let (rows, o, i, j) = (rows as i64, o as i64, i as i64, j as i64);
        let x1 = self.reshape(&[rows, i])?;
        let x2 = input2.reshape(&[rows, j])?;
        // tmp[b, o, j] = Σ_i x1[b, i] w[o, i, j]: one GEMM over (i) x (o j).
        let wmat = weight.permute(&[1, 0, 2])?.reshape(&[i, o * j])?;
        let tmp = x1.matmul(&wmat)?.reshape(&[rows, o, j])?;
        let mut y = tmp.mul(&x2.unsqueeze(1)?)?.sum_dims(&[2], false)?;
        if let Some(b) = bias {
            y = y.add(b)?;
        }
        if lead.len() == 1 {
            return Ok(y);
        }
        let mut shape: Vec<i64> = lead.iter().map(|&d| d as i64).collect();
        shape.push(o);
        y.reshape(&shape)
    }

    /// `torch.nn.functional.unfold(input, kernel_size, dilation, padding, stride)`
    /// (im2col): `(N, C, H, W)` → `(N, C·kH·kW, L)` (or unbatched `(C, H, W)` →
    /// `(C·kH·kW, L)`), each column one sliding block. grad_fn `Im2ColBackward0`.
    pub fn unfold_blocks(
        &self,
        kernel_size: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> Result<Variable> {
        let p = BlockParams::new(kernel_size, dilation, padding, stride)?;
        let shape = self.shape();
        if shape.len() < 3 {
            return Err(Error::DimOutOfRange {
                dim: 2,
                min: -(shape.len() as i64),
                max: shape.len() as i64 - 1,
            });
        }
        let batched = shape.len() == 4;
        if !(shape.len() == 3 || batched) || shape[shape.len() - 3..].contains(&0) {
            return Err(invalid(format!(
                "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {:?}",
                shape.as_slice()
            )));
        }
        let (c, h, w) = (
            shape[shape.len() - 3],
            shape[shape.len() - 2],
            shape[shape.len() - 1],
        );
        let blocks = p.blocks([h, w])?;
        if blocks.iter().any(|&b| b < 1) {
            return Err(invalid(format!(
                "Given input with spatial size ({h}, {w}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), calculated shape of the array of sliding blocks as ({}, {}), but its components must be at least one.",
                p.kernel[0], p.kernel[1], p.dilation[0], p.dilation[1], p.padding[0], p.padding[1], blocks[0], blocks[1]
            )));
        }
        let spec = p.spec(c, [h, w], [to_usize(blocks[0])?, to_usize(blocks[1])?]);
        spec.geometry(if batched { shape[0] } else { 1 })
            .validate()?;
        compute_dtype(self.dtype())?;
        fold_map(Map::Unfold, self, &spec)
    }

    /// `torch.nn.functional.fold(input, output_size, kernel_size, dilation, padding,
    /// stride)` (col2im, the adjoint of `unfold`): `(N, C·kH·kW, L)` → `(N, C,
    /// output_size)`, overlapping values summed. grad_fn `Col2ImBackward0`.
    pub fn fold_blocks(
        &self,
        output_size: &[i64],
        kernel_size: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> Result<Variable> {
        let p = BlockParams::new(kernel_size, dilation, padding, stride)?;
        let out = pair("output_size", output_size)?;
        if out.iter().any(|&v| v <= 0) {
            return Err(invalid(format!(
                "output_size should be greater than zero, but got output_height: {} output_width: {}",
                out[0], out[1]
            )));
        }
        let shape = self.shape();
        let batched = shape.len() == 3;
        if !(shape.len() == 2 || batched) || shape[shape.len() - 2..].contains(&0) {
            return Err(invalid(format!(
                "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: {:?}",
                shape.as_slice()
            )));
        }
        let (rows, l) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let k = (p.kernel[0] * p.kernel[1]) as usize;
        if rows % k != 0 {
            return Err(invalid(format!(
                "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={rows} and kernel_size=({}, {}).",
                p.kernel[0], p.kernel[1]
            )));
        }
        let (h, w) = (out[0] as u64 as usize, out[1] as u64 as usize);
        let blocks = p.blocks([h, w])?;
        if blocks[0] < 1 || blocks[1] < 1 || (blocks[0] * blocks[1]) != l as i128 {
            return Err(invalid(format!(
                "Given output_size=({h}, {w}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), stride=({}, {}), expected size of input's dimension 2 to match the calculated number of sliding blocks {} * {} = {}, but got input.size(2)={l}.",
                p.kernel[0], p.kernel[1], p.dilation[0], p.dilation[1], p.padding[0], p.padding[1], p.stride[0], p.stride[1], blocks[0], blocks[1], blocks[0] * blocks[1]
            )));
        }
        let spec = p.spec(
            rows / k,
            [h, w],
            [to_usize(blocks[0])?, to_usize(blocks[1])?],
        );
        spec.geometry(if batched { shape[0] } else { 1 })
            .validate()?;
        compute_dtype(self.dtype())?;
        fold_map(Map::Fold, self, &spec)
    }

    /// `torch.nn.functional.pixel_shuffle(input, upscale_factor)`: `(*, C·r², H, W)` →
    /// `(*, C, H·r, W·r)`. grad_fn `PixelShuffleBackward0`.
    pub fn pixel_shuffle(&self, upscale_factor: i64) -> Result<Variable> {
        self.shuffle(upscale_factor, false)
    }

    /// `torch.nn.functional.pixel_unshuffle(input, downscale_factor)`: `(*, C, H·r,
    /// W·r)` → `(*, C·r², H, W)`. grad_fn `PixelUnshuffleBackward0`.
    pub fn pixel_unshuffle(&self, downscale_factor: i64) -> Result<Variable> {
        self.shuffle(downscale_factor, true)
    }

    fn shuffle(&self, factor: i64, unshuffle: bool) -> Result<Variable> {
        let (name, what) = if unshuffle {
            ("pixel_unshuffle", "downscale_factor")
        } else {
            ("pixel_shuffle", "upscale_factor")
        };
        let shape = self.shape();
        let d = shape.len();
        if d < 3 {
            return Err(invalid(format!(
                "{name} expects input to have at least 3 dimensions, but got input with {d} dimension(s)"
            )));
        }
        if factor <= 0 {
            return Err(invalid(format!(
                "{name} expects a positive {what}, but got {factor}"
            )));
        }
        let r = factor as u64 as usize;
        let (c, h, w) = (shape[d - 3], shape[d - 2], shape[d - 1]);
        let lead: Vec<i64> = shape[..d - 3].iter().map(|&v| v as i64).collect();
        let nl = lead.len() as i64;
        let with_lead = |tail: &[i64]| -> Vec<i64> { lead.iter().chain(tail).copied().collect() };
        let (ri, ci, hi, wi) = (r as i64, c as i64, h as i64, w as i64);
        let x = self.tensor().clone();
        let result = if !unshuffle {
            let rr = r.checked_mul(r).ok_or(Error::NumelOverflow)?;
            if c % rr != 0 {
                return Err(invalid(format!(
                    "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {rr}"
                )));
            }
            let oc = ci / (ri * ri);
            // (*, oc, r, r, h, w) -> (*, oc, h, r, w, r)
            let perm: Vec<i64> = (0..nl)
                .chain([nl, nl + 3, nl + 1, nl + 4, nl + 2])
                .collect();
            x.reshape(&with_lead(&[oc, ri, ri, hi, wi]))?
                .permute(&perm)?
                .contiguous()?
                .reshape(&with_lead(&[oc, hi * ri, wi * ri]))?
        } else {
            if h % r != 0 {
                return Err(invalid(format!(
                    "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h} is not divisible by {r}"
                )));
            }
            if w % r != 0 {
                return Err(invalid(format!(
                    "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={w} is not divisible by {r}"
                )));
            }
            let (oh, ow) = (hi / ri, wi / ri);
            // (*, c, oh, r, ow, r) -> (*, c, r, r, oh, ow)
            let perm: Vec<i64> = (0..nl)
                .chain([nl, nl + 2, nl + 4, nl + 1, nl + 3])
                .collect();
            x.reshape(&with_lead(&[ci, oh, ri, ow, ri]))?
                .permute(&perm)?
                .contiguous()?
                .reshape(&with_lead(&[ci * ri * ri, oh, ow]))?
        };
        // A fresh tensor: the output never aliases the input.
        let result = if result.shares_storage(&self.tensor()) {
            result.deep_clone()?
        } else {
            result
        };
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::PixelShuffle {
                    factor: r,
                    unshuffle,
                },
                smallvec![],
            )
        }))
    }
}

/// `(height, width)` from one value or two.
fn pair(name: &str, v: &[i64]) -> Result<[i64; 2]> {
    match v {
        [a] => Ok([*a, *a]),
        [a, b] => Ok([*a, *b]),
        _ => Err(invalid(format!(
            "{name} must be an int or a tuple of two ints, but got {v:?}"
        ))),
    }
}

/// The checked sliding-block parameters of `unfold` / `fold` (two spatial dims).
struct BlockParams {
    kernel: [i64; 2],
    dilation: [i64; 2],
    padding: [i64; 2],
    stride: [i64; 2],
}

impl BlockParams {
    fn new(kernel: &[i64], dilation: &[i64], padding: &[i64], stride: &[i64]) -> Result<Self> {
        let p = BlockParams {
            kernel: pair("kernel_size", kernel)?,
            dilation: pair("dilation", dilation)?,
            padding: pair("padding", padding)?,
            stride: pair("stride", stride)?,
        };
        if p.kernel.iter().any(|&v| v <= 0) {
            return Err(invalid(format!(
                "kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}",
                p.kernel[0], p.kernel[1]
            )));
        }
        if p.stride.iter().any(|&v| v <= 0) {
            return Err(invalid(format!(
                "stride should be greater than zero, but got stride_height: {} stride_width: {}",
                p.stride[0], p.stride[1]
            )));
        }
        if p.dilation.iter().any(|&v| v <= 0) {
            return Err(invalid(format!(
                "dilation should be greater than zero, but got dilation_height: {} dilation_width: {}",
                p.dilation[0], p.dilation[1]
            )));
        }
        if p.padding.iter().any(|&v| v < 0) {
            return Err(invalid(format!(
                "padding should be non-negative, but got pad_height: {} pad_width: {}",
                p.padding[0], p.padding[1]
            )));
        }
        Ok(p)
    }

    /// The number of sliding blocks along each dim of an `input`-sized image.
    fn blocks(&self, input: [usize; 2]) -> Result<[i128; 2]> {
        let b = |d: usize| {
            let ext = self.dilation[d] as i128 * (self.kernel[d] as i128 - 1) + 1;
            let span = input[d] as i128 + 2 * self.padding[d] as i128 - ext;
            if span < 0 {
                0
            } else {
                span / self.stride[d] as i128 + 1
            }
        };
        Ok([b(0), b(1)])
    }

    fn spec(&self, channels: usize, input: [usize; 2], blocks: [usize; 2]) -> ConvSpec {
        let u = |v: [i64; 2]| [1, v[0] as u64 as usize, v[1] as u64 as usize];
        ConvSpec {
            nd: 2,
            in_channels: channels,
            out_channels: 1,
            groups: 1,
            input: [1, input[0], input[1]],
            output: [1, blocks[0], blocks[1]],
            kernel: u(self.kernel),
            stride: u(self.stride),
            padding: {
                let p = u(self.padding);
                [0, p[1], p[2]]
            },
            dilation: u(self.dilation),
        }
    }
}
