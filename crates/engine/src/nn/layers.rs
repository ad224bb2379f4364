//! The layers: PyTorch's modules of the same names over the engine's ops, with
//! PyTorch's default initialisation drawn from the default generator in PyTorch's order
//! (weight, then bias), float32 parameters, and PyTorch's parameter and buffer names.

use super::init::default_layer_init;
use super::{Member, Members, Module, Training};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::conv::ConvPadding;
use crate::ops::dropout::DropoutKind;
use crate::ops::pool::Pool2d;
use crate::random::default_generator;
use crate::tensor::Tensor;
use crate::variable::Variable;

/// A float32 leaf parameter of `shape` (zeros until an initialiser fills it).
fn parameter(shape: &[usize]) -> Result<Variable> {
    Variable::new(Tensor::zeros(shape, DType::F32)?, true)
}

/// A float32 leaf parameter of `shape` filled with `value`.
fn filled(shape: &[usize], value: f64) -> Result<Variable> {
    Variable::new(Tensor::full(shape, value, DType::F32)?, true)
}

/// A buffer: a tensor that does not require grad.
fn buffer(tensor: Tensor) -> Variable {
    Variable::from_tensor(tensor)
}

fn as_i64(values: &[usize]) -> Vec<i64> {
    values.iter().map(|&v| v as i64).collect()
}

/// `y = x W^T + b` (`nn.Linear`); weight `(out_features, in_features)`, bias
/// `(out_features,)`, both from PyTorch's default initialisation.
#[derive(super::Module)]
pub struct Linear {
    /// `(out_features, in_features)`.
    #[param]
    pub weight: Variable,
    /// `(out_features,)`, or `None` without bias.
    #[param]
    pub bias: Option<Variable>,
    /// The train/eval flag.
    pub training: Training,
}

impl Linear {
    /// `nn.Linear(in_features, out_features)`.
    pub fn new(in_features: usize, out_features: usize) -> Result<Linear> {
        Linear::with_bias(in_features, out_features, true)
    }

    /// `nn.Linear(in_features, out_features, bias=bias)`.
    pub fn with_bias(in_features: usize, out_features: usize, bias: bool) -> Result<Linear> {
        let weight = parameter(&[out_features, in_features])?;
        let bias = if bias {
            Some(parameter(&[out_features])?)
        } else {
            None
        };
        default_layer_init(&weight, bias.as_ref())?;
        Ok(Linear {
            weight,
            bias,
            training: Training::default(),
        })
    }
}

impl Module for Linear {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        input.linear(&self.weight, self.bias.as_ref())
    }
}

/// The hyper-parameters of an `N`-d convolution, one size per spatial dim (PyTorch's
/// tuples: `nn.Conv2d(..., stride=(2, 1))` is `stride: [2, 1]`). `Default` is
/// PyTorch's defaults; the builder methods set a size in every dim (`stride=2`):
/// `ConvOptions::default().stride(2).padding(1).bias(false)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvOptions<const N: usize> {
    /// Step between windows.
    pub stride: [usize; N],
    /// Implicit zero padding on each side.
    pub padding: [usize; N],
    /// Spacing between kernel elements.
    pub dilation: [usize; N],
    /// Blocked connections from input to output channels.
    pub groups: usize,
    /// Whether there is a learnable bias.
    pub bias: bool,
    /// Extra size on one side of a transposed convolution's output.
    pub output_padding: [usize; N],
}

impl<const N: usize> Default for ConvOptions<N> {
    fn default() -> ConvOptions<N> {
        ConvOptions {
            stride: [1; N],
            padding: [0; N],
            dilation: [1; N],
            groups: 1,
            bias: true,
            output_padding: [0; N],
        }
    }
}

impl<const N: usize> ConvOptions<N> {
    /// The same stride in every dim.
    pub fn stride(mut self, stride: usize) -> Self {
        self.stride = [stride; N];
        self
    }

    /// The same padding in every dim.
    pub fn padding(mut self, padding: usize) -> Self {
        self.padding = [padding; N];
        self
    }

    /// The same dilation in every dim.
    pub fn dilation(mut self, dilation: usize) -> Self {
        self.dilation = [dilation; N];
        self
    }

    /// The number of groups.
    pub fn groups(mut self, groups: usize) -> Self {
        self.groups = groups;
        self
    }

    /// Whether there is a bias.
    pub fn bias(mut self, bias: bool) -> Self {
        self.bias = bias;
        self
    }

    /// The same output padding in every dim (transposed convolutions).
    pub fn output_padding(mut self, output_padding: usize) -> Self {
        self.output_padding = [output_padding; N];
        self
    }
}

fn as_i64_array<const N: usize>(values: [usize; N]) -> [i64; N] {
    values.map(|v| v as i64)
}

fn check_groups(in_channels: usize, out_channels: usize, groups: usize) -> Result<()> {
    if groups == 0 {
        return Err(Error::InvalidArgument(
            "groups must be a positive integer".into(),
        ));
    }
    if !in_channels.is_multiple_of(groups) {
        return Err(Error::InvalidArgument(
            "in_channels must be divisible by groups".into(),
        ));
    }
    if !out_channels.is_multiple_of(groups) {
        return Err(Error::InvalidArgument(
            "out_channels must be divisible by groups".into(),
        ));
    }
    Ok(())
}

macro_rules! conv_layer {
    ($name:ident, $dims:literal, $torch:literal, $method:ident) => {
        #[doc = concat!("`nn.", $torch, "`: weight `(out, in / groups, k...)`, bias `(out,)`, ")]
        #[doc = "PyTorch's default initialisation."]
        #[derive(super::Module)]
        pub struct $name {
            /// `(out_channels, in_channels / groups, k...)`.
            #[param]
            pub weight: Variable,
            /// `(out_channels,)`, or `None` without bias.
            #[param]
            pub bias: Option<Variable>,
            /// Stride, padding, dilation, groups.
            #[skip]
            pub options: ConvOptions<$dims>,
            /// The train/eval flag.
            pub training: Training,
        }

        impl $name {
            #[doc = concat!("`nn.", $torch, "(in_channels, out_channels, kernel_size)` with ")]
            #[doc = "a square kernel."]
            pub fn new(
                in_channels: usize,
                out_channels: usize,
                kernel_size: usize,
            ) -> Result<$name> {
                $name::with(
                    in_channels,
                    out_channels,
                    [kernel_size; $dims],
                    ConvOptions::default(),
                )
            }

            /// With a kernel size per dim and the given stride, padding, dilation,
            /// groups and bias.
            pub fn with(
                in_channels: usize,
                out_channels: usize,
                kernel_size: [usize; $dims],
                options: ConvOptions<$dims>,
            ) -> Result<$name> {
                check_groups(in_channels, out_channels, options.groups)?;
                let mut shape = vec![out_channels, in_channels / options.groups];
                shape.extend(kernel_size);
                let weight = parameter(&shape)?;
                let bias = if options.bias {
                    Some(parameter(&[out_channels])?)
                } else {
                    None
                };
                default_layer_init(&weight, bias.as_ref())?;
                Ok($name {
                    weight,
                    bias,
                    options,
                    training: Training::default(),
                })
            }
        }

        impl Module for $name {
            fn forward(&self, input: &Variable) -> Result<Variable> {
                let o = &self.options;
                let padding = as_i64_array(o.padding);
                input.$method(
                    &self.weight,
                    self.bias.as_ref(),
                    &as_i64_array(o.stride),
                    ConvPadding::Explicit(&padding),
                    &as_i64_array(o.dilation),
                    o.groups as i64,
                )
            }
        }
    };
}

conv_layer!(Conv1d, 1, "Conv1d", conv1d);
conv_layer!(Conv2d, 2, "Conv2d", conv2d);

/// `nn.ConvTranspose2d`: weight `(in, out / groups, kh, kw)`, bias `(out,)`, PyTorch's
/// default initialisation.
#[derive(super::Module)]
pub struct ConvTranspose2d {
    /// `(in_channels, out_channels / groups, kh, kw)`.
    #[param]
    pub weight: Variable,
    /// `(out_channels,)`, or `None` without bias.
    #[param]
    pub bias: Option<Variable>,
    /// Stride, padding, output padding, dilation, groups.
    #[skip]
    pub options: ConvOptions<2>,
    /// The train/eval flag.
    pub training: Training,
}

impl ConvTranspose2d {
    /// `nn.ConvTranspose2d(in_channels, out_channels, kernel_size)` with a square
    /// kernel.
    pub fn new(in_channels: usize, out_channels: usize, kernel_size: usize) -> Result<Self> {
        ConvTranspose2d::with(
            in_channels,
            out_channels,
            [kernel_size; 2],
            ConvOptions::default(),
        )
    }

    /// With a kernel size per dim and the given stride, padding, output padding,
    /// dilation, groups and bias.
    pub fn with(
        in_channels: usize,
        out_channels: usize,
        kernel_size: [usize; 2],
        options: ConvOptions<2>,
    ) -> Result<Self> {
        check_groups(in_channels, out_channels, options.groups)?;
        let shape = [
            in_channels,
            out_channels / options.groups,
            kernel_size[0],
            kernel_size[1],
        ];
        let weight = parameter(&shape)?;
        let bias = if options.bias {
            Some(parameter(&[out_channels])?)
        } else {
            None
        };
        default_layer_init(&weight, bias.as_ref())?;
        Ok(ConvTranspose2d {
            weight,
            bias,
            options,
            training: Training::default(),
        })
    }
}

impl Module for ConvTranspose2d {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        let o = &self.options;
        input.conv_transpose2d(
            &self.weight,
            self.bias.as_ref(),
            &as_i64_array(o.stride),
            &as_i64_array(o.padding),
            &as_i64_array(o.output_padding),
            o.groups as i64,
            &as_i64_array(o.dilation),
        )
    }
}

macro_rules! batch_norm_layer {
    ($name:ident, $torch:literal, $check:expr, $expect:literal) => {
        #[doc = concat!("`nn.", $torch, "(num_features)`: affine, tracking running statistics, ")]
        #[doc = "momentum 0.1, eps 1e-5."]
        #[derive(super::Module)]
        pub struct $name {
            /// Scale, ones at first.
            #[param]
            pub weight: Variable,
            /// Shift, zeros at first.
            #[param]
            pub bias: Variable,
            /// Running mean, zeros at first.
            #[buffer]
            pub running_mean: Variable,
            /// Running (unbiased) variance, ones at first.
            #[buffer]
            pub running_var: Variable,
            /// Training-mode forward passes so far (int64 scalar).
            #[buffer(missing_ok)]
            pub num_batches_tracked: Variable,
            /// The train/eval flag.
            pub training: Training,
            /// Added to the variance.
            #[skip]
            pub eps: f64,
            /// The running statistics' update factor; `None` is PyTorch's
            /// `momentum=None`, a cumulative average (factor `1 / num_batches_tracked`).
            #[skip]
            pub momentum: Option<f64>,
        }

        impl $name {
            #[doc = concat!("`nn.", $torch, "(num_features)`.")]
            pub fn new(num_features: usize) -> Result<$name> {
                Ok($name {
                    weight: filled(&[num_features], 1.0)?,
                    bias: filled(&[num_features], 0.0)?,
                    running_mean: buffer(Tensor::zeros(&[num_features], DType::F32)?),
                    running_var: buffer(Tensor::ones(&[num_features], DType::F32)?),
                    num_batches_tracked: buffer(Tensor::zeros(&[], DType::I64)?),
                    training: Training::default(),
                    eps: 1e-5,
                    momentum: Some(0.1),
                })
            }
        }

        impl Module for $name {
            fn forward(&self, input: &Variable) -> Result<Variable> {
                let dim = input.dim();
                if !$check(dim) {
                    return Err(Error::InvalidArgument(format!(
                        concat!("expected ", $expect, " input (got {}D input)"),
                        dim
                    )));
                }
                let training = self.training.get();
                let mut factor = self.momentum.unwrap_or(0.0);
                if training {
                    let _guard = crate::autograd::no_grad();
                    let count = self.num_batches_tracked.item()?.to_f64() as i64 + 1;
                    let next = Tensor::from_vec(vec![count], &[])?;
                    self.num_batches_tracked
                        .copy_(&Variable::from_tensor(next))?;
                    if self.momentum.is_none() {
                        factor = 1.0 / count as f64;
                    }
                }
                input.batch_norm(
                    Some(&self.running_mean),
                    Some(&self.running_var),
                    Some(&self.weight),
                    Some(&self.bias),
                    training,
                    factor,
                    self.eps,
                )
            }
        }
    };
}

batch_norm_layer!(BatchNorm1d, "BatchNorm1d", |d| d == 2 || d == 3, "2D or 3D");
batch_norm_layer!(BatchNorm2d, "BatchNorm2d", |d| d == 4, "4D");

/// `nn.LayerNorm(normalized_shape)`: elementwise affine (weight ones, bias zeros), eps
/// 1e-5.
#[derive(super::Module)]
pub struct LayerNorm {
    /// Scale of `normalized_shape`.
    #[param]
    pub weight: Variable,
    /// Shift of `normalized_shape`.
    #[param]
    pub bias: Variable,
    /// The trailing dims normalised over.
    #[skip]
    pub normalized_shape: Vec<usize>,
    /// Added to the variance.
    #[skip]
    pub eps: f64,
    /// The train/eval flag.
    pub training: Training,
}

impl LayerNorm {
    /// `nn.LayerNorm(normalized_shape)`.
    pub fn new(normalized_shape: &[usize]) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: filled(normalized_shape, 1.0)?,
            bias: filled(normalized_shape, 0.0)?,
            normalized_shape: normalized_shape.to_vec(),
            eps: 1e-5,
            training: Training::default(),
        })
    }
}

impl Module for LayerNorm {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        input.layer_norm(
            &as_i64(&self.normalized_shape),
            Some(&self.weight),
            Some(&self.bias),
            self.eps,
        )
    }
}

/// `nn.GroupNorm(num_groups, num_channels)`: affine (weight ones, bias zeros), eps
/// 1e-5.
#[derive(super::Module)]
pub struct GroupNorm {
    /// Per-channel scale.
    #[param]
    pub weight: Variable,
    /// Per-channel shift.
    #[param]
    pub bias: Variable,
    /// Channel groups normalised together.
    #[skip]
    pub num_groups: usize,
    /// Added to the variance.
    #[skip]
    pub eps: f64,
    /// The train/eval flag.
    pub training: Training,
}

impl GroupNorm {
    /// `nn.GroupNorm(num_groups, num_channels)`.
    pub fn new(num_groups: usize, num_channels: usize) -> Result<GroupNorm> {
        if num_groups == 0 || !num_channels.is_multiple_of(num_groups) {
            return Err(Error::InvalidArgument(
                "num_channels must be divisible by num_groups".into(),
            ));
        }
        Ok(GroupNorm {
            weight: filled(&[num_channels], 1.0)?,
            bias: filled(&[num_channels], 0.0)?,
            num_groups,
            eps: 1e-5,
            training: Training::default(),
        })
    }
}

impl Module for GroupNorm {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        input.group_norm(
            self.num_groups as i64,
            Some(&self.weight),
            Some(&self.bias),
            self.eps,
        )
    }
}

/// `nn.Embedding(num_embeddings, embedding_dim)`: weight from N(0, 1). Its forward
/// takes int64 indices and returns their rows.
#[derive(super::Module)]
pub struct Embedding {
    /// `(num_embeddings, embedding_dim)`.
    #[param]
    pub weight: Variable,
    /// The row that starts at zero and gets no gradient (`padding_idx`).
    #[skip]
    pub padding_idx: Option<usize>,
    /// The train/eval flag.
    pub training: Training,
}

impl Embedding {
    /// `nn.Embedding(num_embeddings, embedding_dim)`.
    pub fn new(num_embeddings: usize, embedding_dim: usize) -> Result<Embedding> {
        Embedding::with_padding_idx(num_embeddings, embedding_dim, None)
    }

    /// `nn.Embedding(num_embeddings, embedding_dim, padding_idx=...)`: row
    /// `padding_idx` is zeroed after the normal draw (as PyTorch) and gets no gradient.
    pub fn with_padding_idx(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: Option<usize>,
    ) -> Result<Embedding> {
        if padding_idx.is_some_and(|p| p >= num_embeddings) {
            return Err(Error::InvalidArgument(
                "Padding_idx must be within num_embeddings".into(),
            ));
        }
        let weight = parameter(&[num_embeddings, embedding_dim])?;
        super::init::normal_(&weight, 0.0, 1.0)?;
        if let Some(p) = padding_idx {
            let mut values = weight.to_vec::<f32>();
            values[p * embedding_dim..(p + 1) * embedding_dim].fill(0.0);
            let zeroed = Tensor::from_vec(values, &[num_embeddings, embedding_dim])?;
            weight.tensor().copy_from(
                &zeroed,
                crate::storage::WriteSite::Rust(std::panic::Location::caller()),
            )?;
        }
        Ok(Embedding {
            weight,
            padding_idx,
            training: Training::default(),
        })
    }
}

impl Module for Embedding {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        let padding_idx = self.padding_idx.map(|p| p as i64);
        self.weight
            .embedding(&input.tensor(), padding_idx, None, 2.0, false)
    }
}

/// `nn.Dropout(p)`: zeroes elements with probability `p` in training mode (mask from
/// the default generator), the identity in evaluation mode.
#[derive(super::Module)]
pub struct Dropout {
    /// Drop probability.
    #[skip]
    pub p: f64,
    /// The train/eval flag.
    pub training: Training,
}

impl Dropout {
    /// `nn.Dropout(p)`; an error unless `0 <= p <= 1`.
    pub fn new(p: f64) -> Result<Dropout> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::InvalidArgument(format!(
                "dropout probability has to be between 0 and 1, but got {p}"
            )));
        }
        Ok(Dropout {
            p,
            training: Training::default(),
        })
    }
}

impl Module for Dropout {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        input.dropout(
            self.p,
            self.training.get(),
            DropoutKind {
                feature: false,
                alpha: false,
            },
            false,
            &default_generator(),
        )
    }
}

/// `nn.MaxPool2d(kernel_size, stride, padding)`.
#[derive(super::Module)]
pub struct MaxPool2d {
    /// Window, stride, padding.
    #[skip]
    pub pool: Pool2d,
    /// The train/eval flag.
    pub training: Training,
}

/// A square window with `stride` and `padding` (dilation 1, floor mode).
fn window(kernel_size: usize, stride: usize, padding: usize) -> Pool2d {
    let [k, s, p] = [kernel_size, stride, padding].map(|v| v as i64);
    Pool2d {
        kernel_size: [k, k],
        stride: [s, s],
        padding: [p, p],
        dilation: [1, 1],
        ceil_mode: false,
    }
}

impl MaxPool2d {
    /// `nn.MaxPool2d(kernel_size, stride, padding)`.
    pub fn new(kernel_size: usize, stride: usize, padding: usize) -> MaxPool2d {
        MaxPool2d {
            pool: window(kernel_size, stride, padding),
            training: Training::default(),
        }
    }
}

impl Module for MaxPool2d {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        Ok(input.max_pool2d_with_indices(&self.pool)?.0)
    }
}

/// `nn.AvgPool2d(kernel_size, stride, padding)` (padding counted in the average).
#[derive(super::Module)]
pub struct AvgPool2d {
    /// Window, stride, padding.
    #[skip]
    pub pool: Pool2d,
    /// The train/eval flag.
    pub training: Training,
}

impl AvgPool2d {
    /// `nn.AvgPool2d(kernel_size, stride, padding)`.
    pub fn new(kernel_size: usize, stride: usize, padding: usize) -> AvgPool2d {
        AvgPool2d {
            pool: window(kernel_size, stride, padding),
            training: Training::default(),
        }
    }
}

impl Module for AvgPool2d {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        input.avg_pool2d(&self.pool, true, None)
    }
}

/// `nn.AdaptiveAvgPool2d((h, w))`.
#[derive(super::Module)]
pub struct AdaptiveAvgPool2d {
    /// The output's spatial size.
    #[skip]
    pub output_size: [usize; 2],
    /// The train/eval flag.
    pub training: Training,
}

impl AdaptiveAvgPool2d {
    /// `nn.AdaptiveAvgPool2d(output_size)`.
    pub fn new(output_size: [usize; 2]) -> AdaptiveAvgPool2d {
        AdaptiveAvgPool2d {
            output_size,
            training: Training::default(),
        }
    }
}

impl Module for AdaptiveAvgPool2d {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        let [h, w] = self.output_size;
        input.adaptive_avg_pool2d(&[h as i64, w as i64])
    }
}

/// `nn.Flatten(start_dim, end_dim)`: merges dims `start_dim..=end_dim` (negative
/// counts from the end); `Flatten::default()` is `nn.Flatten()` (1, -1).
#[derive(super::Module)]
pub struct Flatten {
    /// First merged dim.
    #[skip]
    pub start_dim: i64,
    /// Last merged dim.
    #[skip]
    pub end_dim: i64,
    /// The train/eval flag.
    pub training: Training,
}

impl Default for Flatten {
    fn default() -> Flatten {
        Flatten {
            start_dim: 1,
            end_dim: -1,
            training: Training::default(),
        }
    }
}

impl Module for Flatten {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        let shape = input.shape();
        let rank = shape.len().max(1) as i64;
        let wrap = |d: i64| -> Result<usize> {
            let w = if d < 0 { d + rank } else { d };
            if !(0..rank).contains(&w) {
                return Err(Error::DimOutOfRange {
                    min: -rank,
                    max: rank - 1,
                    dim: d,
                });
            }
            Ok(w as usize)
        };
        let (start, end) = (wrap(self.start_dim)?, wrap(self.end_dim)?);
        if shape.is_empty() || start >= end {
            return input.reshape(&as_i64(if shape.is_empty() { &[1] } else { &shape }));
        }
        let mut out = as_i64(&shape[..start]);
        out.push(shape[start..=end].iter().product::<usize>() as i64);
        out.extend(as_i64(&shape[end + 1..]));
        input.reshape(&out)
    }
}

/// The parameter-free activations (`nn.ReLU`, `nn.Sigmoid`, ...), one module type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    /// `nn.ReLU()`.
    ReLU,
    /// `nn.Sigmoid()`.
    Sigmoid,
    /// `nn.Tanh()`.
    Tanh,
    /// `nn.GELU()` (exact; `GELU { tanh: true }` is `approximate="tanh"`).
    GELU {
        /// The tanh approximation.
        tanh: bool,
    },
    /// `nn.SiLU()`.
    SiLU,
    /// `nn.LeakyReLU(negative_slope)` (PyTorch's default slope is 0.01).
    LeakyReLU(f64),
    /// `nn.ELU(alpha)` (PyTorch's default alpha is 1).
    ELU(f64),
    /// `nn.Softmax(dim)`.
    Softmax(i64),
    /// `nn.LogSoftmax(dim)`.
    LogSoftmax(i64),
}

impl Members for Activation {
    fn visit_members<'s>(&'s self, _: &mut dyn FnMut(&str, Member<'s>)) {}
}

impl Module for Activation {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        match *self {
            Activation::ReLU => input.relu(),
            Activation::Sigmoid => input.sigmoid(),
            Activation::Tanh => input.tanh(),
            Activation::GELU { tanh } => input.gelu(tanh),
            Activation::SiLU => input.silu(),
            Activation::LeakyReLU(slope) => input.leaky_relu(slope),
            Activation::ELU(alpha) => input.elu(alpha),
            Activation::Softmax(dim) => input.softmax(dim),
            Activation::LogSoftmax(dim) => input.log_softmax(dim),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Activation::ReLU => "ReLU",
            Activation::Sigmoid => "Sigmoid",
            Activation::Tanh => "Tanh",
            Activation::GELU { .. } => "GELU",
            Activation::SiLU => "SiLU",
            Activation::LeakyReLU(_) => "LeakyReLU",
            Activation::ELU(_) => "ELU",
            Activation::Softmax(_) => "Softmax",
            Activation::LogSoftmax(_) => "LogSoftmax",
        }
    }
}

/// `nn.Identity()`: returns its input.
#[derive(super::Module, Default)]
pub struct Identity {
    /// The train/eval flag.
    pub training: Training,
}

impl Module for Identity {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        Ok(input.clone())
    }
}

/// `nn.Sequential(...)`: submodules named `0`, `1`, ..., applied in order.
#[derive(Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Module>>,
}

impl Sequential {
    /// An empty sequence (the identity).
    pub fn new() -> Sequential {
        Sequential::default()
    }

    /// This sequence with `layer` appended (named by its position).
    #[allow(clippy::should_implement_trait)]
    pub fn add<M: Module + 'static>(mut self, layer: M) -> Sequential {
        self.layers.push(Box::new(layer));
        self
    }

    /// Appends `layer`.
    pub fn push<M: Module + 'static>(&mut self, layer: M) {
        self.layers.push(Box::new(layer));
    }

    /// The layer at `index`.
    pub fn get(&self, index: usize) -> Option<&dyn Module> {
        self.layers.get(index).map(|l| &**l)
    }

    /// The number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether there are no layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}

impl Members for Sequential {
    fn visit_members<'s>(&'s self, visit: &mut dyn FnMut(&str, Member<'s>)) {
        for (i, layer) in self.layers.iter().enumerate() {
            visit(&i.to_string(), Member::Child(&**layer));
        }
    }
}

impl Module for Sequential {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        let mut x = input.clone();
        for layer in &self.layers {
            x = layer.forward(&x)?;
        }
        Ok(x)
    }
}
