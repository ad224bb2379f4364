//! Padding, resampling and grids: `pad` (constant, reflect, replicate, circular),
//! `upsample` (nearest, nearest-exact, linear / bilinear / trilinear, bicubic),
//! `grid_sample` (bilinear, nearest, bicubic; zeros, border, reflection) and `affine_grid`.
//!
//! Padding and upsampling are fixed linear maps of the input, one table per plane
//! (Note [Sample maps]): the forward gathers through the table, the backward scatters
//! through it, and the scatter's backward is the gather again, so double backward
//! needs no further formula. `grid_sample`'s sampling places depend on the grid, so
//! its backward is written with differentiable ops (Note [Grid sampling]).

use super::index::{IndexMap, Taken};
use super::{saved_at, Grads};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::spatial::{self as kernel, Planes, NONE};
use crate::kernels::{try_vec, try_with_capacity};
use crate::shape::{self, Dims};
use crate::tensor::Tensor;
use crate::variable::{SavedTensor, Variable};
use smallvec::smallvec;
use std::sync::Arc;

/// `pad`'s `mode`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// Pad with a constant value (negative padding crops).
    Constant,
    /// Reflect about the edge, not repeating it.
    Reflect,
    /// Repeat the edge value.
    Replicate,
    /// Wrap around.
    Circular,
}

impl PadMode {
    fn name(self) -> &'static str {
        match self {
            PadMode::Constant => "constant",
            PadMode::Reflect => "reflect",
            PadMode::Replicate => "replicate",
            PadMode::Circular => "circular",
        }
    }
}

/// `upsample`'s interpolation (PyTorch's `interpolate` modes).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UpsampleMode {
    /// `nearest`: PyTorch's legacy nearest neighbour (`floor(dst * scale)`).
    Nearest,
    /// `nearest-exact`: `floor((dst + 0.5) * scale)`.
    NearestExact,
    /// `linear`, `bilinear`, `trilinear` by the number of spatial dims.
    Linear,
    /// `bicubic` (cubic convolution, A = -0.75), 2 spatial dims.
    Cubic,
}

/// `grid_sample`'s `mode`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GridSampleMode {
    /// Weighted mean of the 4 nearest pixels.
    Bilinear,
    /// The nearest pixel (ties to even).
    Nearest,
    /// Cubic convolution (A = -0.75) of the 4 nearest pixels along each axis (16 in
    /// 2-D, 64 in 3-D); the padding applies to each of them, not to the place.
    Bicubic,
}

impl GridSampleMode {
    /// The taps per grid axis and the first one's offset from the place's floor.
    fn taps(self) -> (usize, f64) {
        match self {
            GridSampleMode::Bilinear => (2, 0.0),
            GridSampleMode::Nearest => (1, 0.0),
            GridSampleMode::Bicubic => (4, -1.0),
        }
    }
}

/// `grid_sample`'s `padding_mode`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GridPaddingMode {
    /// Zeros outside the input.
    Zeros,
    /// Coordinates clipped to the border.
    Border,
    /// Coordinates reflected at the border until inside.
    Reflection,
}

/// What a sample-map op is called in PyTorch; the digit is the number of spatial dims.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Sampled {
    ConstantPad,
    ReflectionPad(u8),
    ReplicationPad(u8),
    CircularPad,
    Nearest(u8),
    NearestExact(u8),
    Linear(u8),
    Bicubic,
    /// Antialiased bilinear (`false`) or bicubic (`true`) 2-d interpolation.
    Antialias(bool),
}

/// The backward rules of this family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// The output gathered from the input through `map`.
    Sample { name: Sampled, map: Arc<SampleMap> },
    /// The transpose of `Sample` (its backward as an op, for double backward).
    SampleBackward { name: Sampled, map: Arc<SampleMap> },
    /// `grid_sample(input, grid)`; saved `[input, grid]`.
    GridSampler(GridOptions),
    /// `affine_grid(theta, size)`: the output size and align_corners.
    AffineGrid(Box<(Dims, bool)>),
}

/// `grid_sample`'s options, as its rule keeps them.
#[derive(Copy, Clone, Debug)]
pub(crate) struct GridOptions {
    mode: GridSampleMode,
    padding: GridPaddingMode,
    align_corners: bool,
    /// Spatial dims: 2 (4-D input) or 3 (5-D, volumetric).
    rank: u8,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Sample { name, .. } => match name {
                Sampled::ConstantPad => "ConstantPadNdBackward0",
                Sampled::ReflectionPad(1) => "ReflectionPad1DBackward0",
                Sampled::ReflectionPad(2) => "ReflectionPad2DBackward0",
                Sampled::ReflectionPad(_) => "ReflectionPad3DBackward0",
                Sampled::ReplicationPad(1) => "ReplicationPad1DBackward0",
                Sampled::ReplicationPad(2) => "ReplicationPad2DBackward0",
                Sampled::ReplicationPad(_) => "ReplicationPad3DBackward0",
                // PyTorch's circular padding is a composite whose last op writes into
                // slices of the output.
                Sampled::CircularPad => "CopySlices",
                Sampled::Nearest(1) => "UpsampleNearest1DBackward0",
                Sampled::Nearest(2) => "UpsampleNearest2DBackward0",
                Sampled::Nearest(_) => "UpsampleNearest3DBackward0",
                Sampled::NearestExact(1) => "UpsampleNearestExact1DBackward0",
                Sampled::NearestExact(2) => "UpsampleNearestExact2DBackward0",
                Sampled::NearestExact(_) => "UpsampleNearestExact3DBackward0",
                Sampled::Linear(1) => "UpsampleLinear1DBackward0",
                Sampled::Linear(2) => "UpsampleBilinear2DBackward0",
                Sampled::Linear(_) => "UpsampleTrilinear3DBackward0",
                Sampled::Bicubic => "UpsampleBicubic2DBackward0",
                Sampled::Antialias(false) => "UpsampleBilinear2DAaBackward0",
                Sampled::Antialias(true) => "UpsampleBicubic2DAaBackward0",
            },
            Rule::SampleBackward { name, .. } => match name {
                Sampled::ConstantPad | Sampled::CircularPad => "SliceBackward0",
                Sampled::ReflectionPad(1) => "ReflectionPad1DBackwardBackward0",
                Sampled::ReflectionPad(2) => "ReflectionPad2DBackwardBackward0",
                Sampled::ReflectionPad(_) => "ReflectionPad3DBackwardBackward0",
                Sampled::ReplicationPad(1) => "ReplicationPad1DBackwardBackward0",
                Sampled::ReplicationPad(2) => "ReplicationPad2DBackwardBackward0",
                Sampled::ReplicationPad(_) => "ReplicationPad3DBackwardBackward0",
                Sampled::Nearest(1) => "UpsampleNearest1DBackwardBackward0",
                Sampled::Nearest(2) => "UpsampleNearest2DBackwardBackward0",
                Sampled::Nearest(_) => "UpsampleNearest3DBackwardBackward0",
                Sampled::NearestExact(1) => "UpsampleNearestExact1DBackwardBackward0",
                Sampled::NearestExact(2) => "UpsampleNearestExact2DBackwardBackward0",
                Sampled::NearestExact(_) => "UpsampleNearestExact3DBackwardBackward0",
                Sampled::Linear(1) => "UpsampleLinear1DBackwardBackward0",
                Sampled::Linear(2) => "UpsampleBilinear2DBackwardBackward0",
                Sampled::Linear(_) => "UpsampleTrilinear3DBackwardBackward0",
                Sampled::Bicubic => "UpsampleBicubic2DBackwardBackward0",
                Sampled::Antialias(false) => "UpsampleBilinear2DAaBackwardBackward0",
                Sampled::Antialias(true) => "UpsampleBicubic2DAaBackwardBackward0",
            },
            Rule::GridSampler(o) if o.rank == 2 => "GridSampler2DBackward0",
            Rule::GridSampler(_) => "GridSampler3DBackward0",
            Rule::AffineGrid(_) => "AffineGridGeneratorBackward0",
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        Ok(match self {
            Rule::Sample { name, map } => {
                smallvec![Some(grad.sample_transpose(map.clone(), *name)?)]
            }
            Rule::SampleBackward { name, map } => {
                smallvec![Some(grad.sample(map.clone(), *name, 0.0)?)]
            }
            Rule::GridSampler(options) => {
                let (input, grid) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                grid_sample_backward(input, grid, grad, *options, needs)?
            }
            Rule::AffineGrid(info) => {
                let (size, align_corners) = &**info;
                smallvec![Some(affine_grid_backward(grad, size, *align_corners)?)]
            }
        })
    }
}

// ----- sample maps ---------------------------------------------------------------------

/// A fixed linear map from an input to an output that share their leading (batch) dims:
/// each output element of a plane (the trailing spatial dims) is a weighted sum of at
/// most `k` elements of the same input plane, by a table shared by all planes. See
/// Note [Sample maps].
#[derive(Debug)]
pub(crate) struct SampleMap {
    src: Dims,
    out: Dims,
    planes: Planes,
    /// `plane_out × k` positions in an input plane ([`NONE`]: no read).
    idx: Vec<usize>,
    /// Their weights (`None`: one entry of weight 1 per output).
    w: Option<Vec<f64>>,
}

/// The taps of one spatial dim: for each output index, `k` input indices (or
/// [`NONE`]) and weights.
struct Axis {
    k: usize,
    idx: Vec<usize>,
    w: Vec<f64>,
}

impl Axis {
    /// One tap of weight 1 per output index (`None`: no read).
    fn single(taps: impl Iterator<Item = Option<usize>>) -> Axis {
        let idx: Vec<usize> = taps.map(|t| t.unwrap_or(NONE)).collect();
        let w = vec![1.0; idx.len()];
        Axis { k: 1, idx, w }
    }

    fn len(&self) -> usize {
        self.idx.len() / self.k
    }
}

impl SampleMap {
    /// The map whose taps separate by spatial dim (the product of the axes' taps) for an
    /// input of shape `src` whose last `axes.len()` dims are spatial.
    fn separable(src: &[usize], axes: &[Axis], weighted: bool) -> Result<Arc<SampleMap>> {
        let batch = &src[..src.len() - axes.len()];
        let in_spatial = &src[src.len() - axes.len()..];
        let mut out: Dims = batch.into();
        out.extend(axes.iter().map(Axis::len));
        let planes = shape::checked_numel(batch)?;
        let plane_in = shape::checked_numel(in_spatial)?;
        let plane_out = shape::checked_numel(&out[batch.len()..])?;
        shape::checked_numel(&out)?;
        let k: usize = axes.iter().map(|a| a.k).product();
        let entries = plane_out.checked_mul(k).ok_or(Error::NumelOverflow)?;
        crate::tensor::check_allocation(entries.saturating_mul(2), DType::I64)?;
        let strides = crate::layout::contiguous_strides(in_spatial);
        let (mut idx, mut w) = (vec![0usize], vec![1.0f64]);
        let mut cur_k = 1;
        for (axis, &stride) in axes.iter().zip(&strides) {
            let n_prev = idx.len() / cur_k;
            let next_k = cur_k * axis.k;
            let mut next_idx = Vec::with_capacity(n_prev * axis.len() * next_k);
            let mut next_w = Vec::with_capacity(next_idx.capacity());
            for p in 0..n_prev {
                for o in 0..axis.len() {
                    for e in 0..cur_k {
                        let (a, wa) = (idx[p * cur_k + e], w[p * cur_k + e]);
                        for j in 0..axis.k {
                            let (b, wb) = (axis.idx[o * axis.k + j], axis.w[o * axis.k + j]);
                            next_idx.push(if a == NONE || b == NONE {
                                NONE
                            } else {
                                a + b * stride
                            });
                            next_w.push(wa * wb);
                        }
                    }
                }
            }
            idx = next_idx;
            w = next_w;
            cur_k = next_k;
        }
        Ok(Arc::new(SampleMap {
            src: src.into(),
            out,
            planes: Planes {
                planes,
                plane_in,
                plane_out,
                k,
            },
            idx,
            w: weighted.then_some(w),
        }))
    }
}

/// Checks an output shape (`batch` dims then `spatial`) and its table of `k` entries per
/// plane element before any table is built: PyTorch's overflow error, or an allocation
/// error, instead of an attempt to allocate.
fn check_output(batch: &[usize], spatial: &[usize], k: usize) -> Result<()> {
    let mut out: Dims = batch.into();
    out.extend_from_slice(spatial);
    let numel = shape::checked_numel(&out)?;
    let plane = shape::checked_numel(spatial)?;
    crate::tensor::check_allocation(numel, DType::F64)?;
    crate::tensor::check_allocation(plane.saturating_mul(k).saturating_mul(2), DType::I64)
}

impl Variable {
    /// The output of `map` on `self` (`fill` where an output reads nothing), recorded
    /// as `name`.
    pub(crate) fn sample(&self, map: Arc<SampleMap>, name: Sampled, fill: f64) -> Result<Variable> {
        fn go<T: Element>(t: &Tensor, map: &SampleMap, fill: f64) -> Result<Tensor> {
            let src: Vec<T> = t.try_to_vec()?;
            let out = kernel::gather(
                &src,
                map.planes,
                &map.idx,
                map.w.as_deref(),
                T::from_f64(fill),
            )?;
            Tensor::from_vec(out, &map.out)
        }
        let t = self.tensor();
        if t.shape() != map.src.as_slice() {
            return Err(Error::InvalidArgument(
                "rustgrad internal error: sample map of another shape".into(),
            ));
        }
        let result = crate::tensor::dispatch!(t.dtype(), T => go::<T>(&t, &map, fill))?;
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::Sample { name, map }, smallvec![])
        }))
    }

    /// The transpose of [`Variable::sample`]: `self` has `map`'s output shape, the result
    /// its input shape.
    pub(crate) fn sample_transpose(&self, map: Arc<SampleMap>, name: Sampled) -> Result<Variable> {
        fn go<T: Element>(t: &Tensor, map: &SampleMap) -> Result<Tensor> {
            let g: Vec<T> = t.try_to_vec()?;
            let out = kernel::scatter(&g, map.planes, &map.idx, map.w.as_deref())?;
            Tensor::from_vec(out, &map.src)
        }
        let t = self.tensor();
        if t.shape() != map.out.as_slice() {
            return Err(Error::InvalidArgument(
                "rustgrad internal error: sample map of another shape".into(),
            ));
        }
        let result = crate::tensor::dispatch!(t.dtype(), T => go::<T>(&t, &map))?;
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::SampleBackward { name, map }, smallvec![])
        }))
    }
}

// ----- pad -----------------------------------------------------------------------------

fn runtime(message: String) -> Error {
    Error::InvalidArgument(message)
}

impl Variable {
    /// `torch.nn.functional.pad(input, pad, mode, value)`: `pad` holds (before, after)
    /// pairs starting from the last dim. Constant padding pads any number of dims (a
    /// negative amount crops); the other modes pad the last 1, 2 or 3 dims of an input
    /// with one or two more dims. `value` is only for `Constant` (or 0).
    pub fn pad(&self, pad: &[i64], mode: PadMode, value: Option<f64>) -> Result<Variable> {
        let shape = self.shape();
        let ndim = shape.len();
        if !pad.len().is_multiple_of(2) {
            return Err(runtime("Padding length must be divisible by 2".into()));
        }
        if pad.len() > 2 * ndim {
            return Err(runtime(format!(
                "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {}",
                pad.len(),
                ndim
            )));
        }
        let n = pad.len() / 2;
        // The padded dims, first to last, with their (before, after) amounts.
        let dims: Vec<(usize, i64, i64)> = (0..n)
            .map(|i| {
                let dim = ndim - n + i;
                let pair = n - 1 - i;
                (dim, pad[2 * pair], pad[2 * pair + 1])
            })
            .collect();
        if mode == PadMode::Constant {
            return self.constant_pad(&shape, &dims, value.unwrap_or(0.0));
        }
        if value.is_some_and(|v| v != 0.0) {
            return Err(runtime(format!(
                "Padding mode \"{}\" doesn't take in value argument",
                mode.name()
            )));
        }
        if !(1..=3).contains(&n) || !(ndim == n + 1 || ndim == n + 2) {
            return Err(Error::NoKernel(format!(
                "Padding size {} is not supported for {}D input tensor.\nSupported combinations for non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)",
                pad.len(),
                ndim
            )));
        }
        if self.dtype() == DType::Bool && mode != PadMode::Circular {
            let kind = if mode == PadMode::Reflect {
                "reflection"
            } else {
                "replication"
            };
            return Err(Error::NoKernel(format!(
                "\"{kind}_pad{n}d\" not implemented for 'Bool'"
            )));
        }
        let name = match mode {
            PadMode::Reflect => Sampled::ReflectionPad(n as u8),
            PadMode::Replicate => Sampled::ReplicationPad(n as u8),
            _ => Sampled::CircularPad,
        };
        if mode != PadMode::Circular {
            // Every dim but the batch dim non-empty, as PyTorch's reflection and
            // replication kernels check.
            if shape[ndim - n - 1..].contains(&0) {
                return Err(runtime(format!(
                    "Expected {}D or {}D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {:?}",
                    n + 1,
                    n + 2,
                    shape.as_slice()
                )));
            }
        }
        let mut axes = Vec::with_capacity(n);
        for &(dim, before, after) in &dims {
            let size = shape[dim] as i64;
            if mode == PadMode::Reflect && (before >= size || after >= size) {
                return Err(runtime(format!(
                    "Argument #{}: Padding size should be less than the corresponding input dimension, but got: padding ({before}, {after}) at dimension {dim} of input {:?}",
                    2 + 2 * n,
                    shape.as_slice()
                )));
            }
            if mode == PadMode::Circular && (before > size || after > size) {
                return Err(runtime(
                    "Padding value causes wrapping around more than once.".into(),
                ));
            }
        }
        let out: Vec<i64> = dims
            .iter()
            .map(|&(d, b, a)| (shape[d] as i64).saturating_add(b).saturating_add(a))
            .collect();
        if out.iter().any(|&o| o < 1) {
            let labels = ["D", "H", "W"];
            let label = &labels[3 - n..];
            return Err(runtime(match mode {
                PadMode::Circular => {
                    "Negative padding value is resulting in an empty dimension".into()
                }
                PadMode::Replicate if n > 1 => {
                    let outs: Vec<String> = label
                        .iter()
                        .zip(&out)
                        .map(|(l, o)| format!("{l}: {o}"))
                        .collect();
                    let ins: Vec<String> = label
                        .iter()
                        .zip(&dims)
                        .map(|(l, d)| format!("{l}: {}", shape[d.0]))
                        .collect();
                    format!(
                        "Calculated output {} must be >= 1 in every dimension (input {})",
                        outs.join(" "),
                        ins.join(", ")
                    )
                }
                _ => {
                    let ins: Vec<String> = label
                        .iter()
                        .zip(&dims)
                        .map(|(l, d)| format!("{l}: {}", shape[d.0]))
                        .collect();
                    let outs: Vec<String> = label
                        .iter()
                        .zip(&out)
                        .map(|(l, o)| format!("{l}: {o}"))
                        .collect();
                    format!(
                        "input ({}) is too small. Calculated output {}",
                        ins.join(", "),
                        outs.join(" ")
                    )
                }
            }));
        }
        let spatial: Vec<usize> = out.iter().map(|&o| o as usize).collect();
        check_output(&shape[..ndim - n], &spatial, 1)?;
        for (&(dim, before, after), &len) in dims.iter().zip(&out) {
            let size = shape[dim] as i64;
            let taps = (0..len).map(move |o| {
                let i = o - before;
                Some(match mode {
                    PadMode::Reflect => {
                        let r = if i < 0 { -i } else { i };
                        (if r >= size { 2 * (size - 1) - r } else { r }) as usize
                    }
                    PadMode::Replicate => i.clamp(0, size - 1) as usize,
                    _ => {
                        // PyTorch crops by the negative amounts first, then wraps
                        // around the cropped extent.
                        let start = (-before).max(0);
                        let kept = size + before.min(0) + after.min(0);
                        (start + (o - before.max(0)).rem_euclid(kept.max(1))) as usize
                    }
                })
            });
            axes.push(Axis::single(taps));
        }
        let map = SampleMap::separable(&shape, &axes, false)?;
        self.sample(map, name, 0.0)
    }

    /// `constant_pad_nd`: `dims` are (dim, before, after), first to last.
    fn constant_pad(
        &self,
        shape: &[usize],
        dims: &[(usize, i64, i64)],
        value: f64,
    ) -> Result<Variable> {
        let mut lens = Vec::with_capacity(dims.len());
        for &(dim, before, after) in dims {
            let len = (shape[dim] as i64)
                .checked_add(before)
                .and_then(|s| s.checked_add(after))
                .ok_or(Error::NumelOverflow)?;
            if len < 0 {
                return Err(runtime("narrow(): length must be non-negative.".into()));
            }
            lens.push(len as usize);
        }
        check_output(&shape[..shape.len() - dims.len()], &lens, 1)?;
        let mut axes = Vec::with_capacity(dims.len());
        for &(dim, before, after) in dims {
            let size = shape[dim] as i64;
            let len = size
                .checked_add(before)
                .and_then(|s| s.checked_add(after))
                .ok_or(Error::NumelOverflow)?;
            if len < 0 {
                return Err(runtime("narrow(): length must be non-negative.".into()));
            }
            let taps = (0..len).map(move |o| {
                let i = o - before;
                (0..size).contains(&i).then_some(i as usize)
            });
            axes.push(Axis::single(taps));
        }
        let map = SampleMap::separable(shape, &axes, false)?;
        self.sample(map, Sampled::ConstantPad, value)
    }
}

// ----- upsample ------------------------------------------------------------------------

/// PyTorch's `area_pixel_compute_scale`.
/// The taps of antialiased (bi)linear or bicubic interpolation along one axis
/// (PyTorch's `_compute_index_ranges_weights`): when downsampling, the filter (a
/// triangle, or the cubic with `a = -0.5`) is stretched by the scale, so each output
/// averages every input it covers; weights are normalised to sum to 1. Outputs with
/// fewer taps than the widest pad with no-read entries of weight 0.
fn antialias_axis(
    cubic: bool,
    input: usize,
    output: usize,
    scale: Option<f64>,
    align_corners: bool,
) -> Axis {
    let filter = |x: f64| {
        let x = x.abs();
        if !cubic {
            return if x < 1.0 { 1.0 - x } else { 0.0 };
        }
        const A: f64 = -0.5;
        if x < 1.0 {
            ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
        } else if x < 2.0 {
            ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A
        } else {
            0.0
        }
    };
    let s = pixel_scale(input, output, align_corners, scale);
    let half = if cubic { 2.0 } else { 1.0 };
    let (support, invscale) = if s >= 1.0 {
        (half * s, 1.0 / s)
    } else {
        (half, 1.0)
    };
    let ranges: Vec<(usize, usize)> = (0..output)
        .map(|o| {
            let center = s * (o as f64 + 0.5);
            // Truncation toward zero, as PyTorch's int64 casts.
            let lo = ((center - support + 0.5) as i64).max(0) as usize;
            let hi = ((center + support + 0.5) as i64).clamp(0, input as i64) as usize;
            (lo, hi.max(lo))
        })
        .collect();
    let k = ranges
        .iter()
        .map(|(lo, hi)| hi - lo)
        .max()
        .unwrap_or(0)
        .max(1);
    let (mut idx, mut w) = (
        Vec::with_capacity(k * output),
        Vec::with_capacity(k * output),
    );
    for (o, &(lo, hi)) in ranges.iter().enumerate() {
        let center = s * (o as f64 + 0.5);
        let taps: Vec<f64> = (lo..hi)
            .map(|j| filter((j as f64 - center + 0.5) * invscale))
            .collect();
        let total: f64 = taps.iter().sum();
        for (j, t) in taps.iter().enumerate() {
            idx.push(lo + j);
            w.push(if total != 0.0 { t / total } else { *t });
        }
        for _ in hi - lo..k {
            idx.push(NONE);
            w.push(0.0);
        }
    }
    Axis { k, idx, w }
}

fn pixel_scale(input: usize, output: usize, align_corners: bool, scale: Option<f64>) -> f64 {
    if align_corners {
        if output > 1 {
            (input as f64 - 1.0) / (output as f64 - 1.0)
        } else {
            0.0
        }
    } else {
        match scale {
            Some(s) if s > 0.0 => 1.0 / s,
            _ => input as f64 / output as f64,
        }
    }
}

/// PyTorch's `area_pixel_compute_source_index`.
fn source_index(scale: f64, dst: usize, align_corners: bool, cubic: bool) -> f64 {
    if align_corners {
        scale * dst as f64
    } else {
        let src = scale * (dst as f64 + 0.5) - 0.5;
        if !cubic && src < 0.0 {
            0.0
        } else {
            src
        }
    }
}

/// PyTorch's `guard_index_and_lambda`: the index below `real` (at most `input - 1`)
/// and the distance from it, in [0, 1].
fn index_and_lambda(real: f64, input: usize) -> (i64, f64) {
    let index = (real.floor() as i64).min(input as i64 - 1);
    (index, (real - index as f64).clamp(0.0, 1.0))
}

fn upsample_axis(
    mode: UpsampleMode,
    input: usize,
    output: usize,
    scale: Option<f64>,
    align_corners: bool,
) -> Axis {
    match mode {
        UpsampleMode::Nearest | UpsampleMode::NearestExact => {
            // PyTorch computes these indices in float32.
            let s = match scale {
                Some(s) if s > 0.0 => (1.0 / s) as f32,
                _ => input as f32 / output as f32,
            };
            let last = input - 1;
            Axis::single((0..output).map(move |o| {
                Some(if mode == UpsampleMode::NearestExact {
                    ((((o as f64 + 0.5) * s as f64) as f32).floor() as usize).min(last)
                } else if output == input {
                    o
                } else if output == 2 * input {
                    o >> 1
                } else {
                    ((o as f32 * s).floor() as usize).min(last)
                })
            }))
        }
        UpsampleMode::Linear => {
            let s = pixel_scale(input, output, align_corners, scale);
            let (mut idx, mut w) = (
                Vec::with_capacity(2 * output),
                Vec::with_capacity(2 * output),
            );
            for o in 0..output {
                if output == input {
                    idx.extend([o, o]);
                    w.extend([1.0, 0.0]);
                    continue;
                }
                let real = source_index(s, o, align_corners, false);
                let (i0, l1) = index_and_lambda(real, input);
                let i0 = i0.max(0) as usize;
                let i1 = if i0 + 1 < input { i0 + 1 } else { i0 };
                idx.extend([i0, i1]);
                w.extend([1.0 - l1, l1]);
            }
            Axis { k: 2, idx, w }
        }
        UpsampleMode::Cubic => {
            const A: f64 = -0.75;
            let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
            let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
            let s = pixel_scale(input, output, align_corners, scale);
            let (mut idx, mut w) = (
                Vec::with_capacity(4 * output),
                Vec::with_capacity(4 * output),
            );
            for o in 0..output {
                let real = source_index(s, o, align_corners, true);
                let (i, t) = index_and_lambda(real, input);
                for j in 0..4 {
                    idx.push((i - 1 + j).clamp(0, input as i64 - 1) as usize);
                }
                w.extend([far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]);
            }
            Axis { k: 4, idx, w }
        }
    }
}

impl Variable {
    /// `upsample_{nearest,linear,bilinear,trilinear,bicubic}{1,2,3}d` and the
    /// nearest-exact forms: resizes the trailing `output_size.len()` (1 to 3) spatial
    /// dims of an `(N, C, ...)` input to `output_size`. `scales[d]`, when given, is the
    /// user's scale factor, which PyTorch uses instead of `input / output` to place the
    /// samples (unless `align_corners`).
    pub fn upsample(
        &self,
        mode: UpsampleMode,
        output_size: &[usize],
        scales: &[Option<f64>],
        align_corners: bool,
    ) -> Result<Variable> {
        let shape = self.shape();
        let n = output_size.len();
        let op = match (mode, n) {
            (UpsampleMode::Nearest, _) => format!("upsample_nearest{n}d"),
            (UpsampleMode::NearestExact, _) => format!("_upsample_nearest_exact{n}d"),
            (UpsampleMode::Linear, 1) => "upsample_linear1d".into(),
            (UpsampleMode::Linear, 2) => "upsample_bilinear2d".into(),
            (UpsampleMode::Linear, _) => "upsample_trilinear3d".into(),
            (UpsampleMode::Cubic, _) => "upsample_bicubic2d".into(),
        };
        if !(1..=3).contains(&n) || (mode == UpsampleMode::Cubic && n != 2) {
            return Err(Error::NoKernel(format!(
                "{op}: {n} spatial dims are not supported"
            )));
        }
        if scales.len() != n {
            return Err(runtime(format!(
                "{op}: expected {n} scale factors, got {}",
                scales.len()
            )));
        }
        if shape.len() != n + 2 {
            return Err(runtime(format!(
                "It is expected input_size equals to {}, but got size {}",
                n + 2,
                shape.len()
            )));
        }
        let labels = ["D", "H", "W"];
        let label = &labels[3 - n..];
        let spatial = &shape[2..];
        if spatial.contains(&0) || output_size.contains(&0) {
            let ins: Vec<String> = label
                .iter()
                .zip(spatial)
                .map(|(l, s)| format!("{l}: {s}"))
                .collect();
            let outs: Vec<String> = label
                .iter()
                .zip(output_size)
                .map(|(l, s)| format!("{l}: {s}"))
                .collect();
            return Err(runtime(format!(
                "Input and output sizes should be greater than 0, but got input ({}) output ({})",
                ins.join(", "),
                outs.join(", ")
            )));
        }
        // PyTorch 2.15 takes an empty batch (the result is empty) but not zero channels.
        if shape[1] == 0 {
            return Err(runtime(format!(
                "Non-empty {}D data tensor expected but got a tensor with sizes {:?}",
                n + 2,
                shape.as_slice()
            )));
        }
        let weighted = matches!(mode, UpsampleMode::Linear | UpsampleMode::Cubic);
        let taps = match mode {
            UpsampleMode::Linear => 2usize.pow(n as u32),
            UpsampleMode::Cubic => 16,
            _ => 1,
        };
        check_output(&shape[..2], output_size, taps)?;
        if weighted && !self.dtype().is_floating_point() {
            return Err(Error::NoKernel(format!(
                "\"{op}\" not implemented for '{}'",
                self.dtype().scalar_type_name()
            )));
        }
        let axes: Vec<Axis> = (0..n)
            .map(|d| upsample_axis(mode, spatial[d], output_size[d], scales[d], align_corners))
            .collect();
        let map = SampleMap::separable(&shape, &axes, weighted)?;
        let name = match mode {
            UpsampleMode::Nearest => Sampled::Nearest(n as u8),
            UpsampleMode::NearestExact => Sampled::NearestExact(n as u8),
            UpsampleMode::Linear => Sampled::Linear(n as u8),
            UpsampleMode::Cubic => Sampled::Bicubic,
        };
        self.sample(map, name, 0.0)
    }
}

impl Variable {
    /// `interpolate(input, output_size, mode="bilinear" | "bicubic", antialias=True)`
    /// over `(N, C, H, W)`: each output a normalised, scale-stretched filter over the
    /// inputs it covers (PyTorch's `_upsample_bilinear2d_aa` / `_upsample_bicubic2d_aa`).
    pub fn upsample_antialias(
        &self,
        cubic: bool,
        output_size: &[usize],
        scales: &[Option<f64>],
        align_corners: bool,
    ) -> Result<Variable> {
        let shape = self.shape();
        let op = if cubic {
            "_upsample_bicubic2d_aa"
        } else {
            "_upsample_bilinear2d_aa"
        };
        if shape.len() != 4 || output_size.len() != 2 || scales.len() != 2 {
            return Err(runtime(format!(
                "{op}: expected a 4-D input and 2 output sizes, got {} and {}",
                shape.len(),
                output_size.len()
            )));
        }
        if shape[2..].contains(&0) || output_size.contains(&0) {
            return Err(runtime(format!(
                "Input and output sizes should be greater than 0, but got input (H: {}, W: {}) \
                 output (H: {}, W: {})",
                shape[2], shape[3], output_size[0], output_size[1]
            )));
        }
        if shape[1] == 0 {
            return Err(runtime(format!(
                "Non-empty 4D data tensor expected but got a tensor with sizes {:?}",
                shape.as_slice()
            )));
        }
        if !matches!(self.dtype(), DType::F32 | DType::F64) {
            return Err(Error::NoKernel(format!(
                "\"compute_index_ranges_weights\" not implemented for '{}'",
                self.dtype().scalar_type_name()
            )));
        }
        // The widest window: the filter's support times the downsampling factor.
        let taps: usize = (0..2)
            .map(|d| {
                let factor = shape[2 + d].div_ceil(output_size[d]).max(1);
                (if cubic { 4 } else { 2 }) * factor + 2
            })
            .product();
        check_output(&shape[..2], output_size, taps)?;
        let axes: Vec<Axis> = (0..2)
            .map(|d| {
                antialias_axis(
                    cubic,
                    shape[2 + d],
                    output_size[d],
                    scales[d],
                    align_corners,
                )
            })
            .collect();
        let map = SampleMap::separable(&shape, &axes, true)?;
        self.sample(map, Sampled::Antialias(cubic), 0.0)
    }
}

// ----- grid_sample ---------------------------------------------------------------------

/// PyTorch's `reflect_coordinates` and the derivative of the result by the input.
fn reflect(x: f64, twice_low: f64, twice_high: f64) -> (f64, f64) {
    if twice_low == twice_high {
        return (0.0, 0.0);
    }
    let min = twice_low / 2.0;
    let span = (twice_high - twice_low) / 2.0;
    let (mut x, mut sign) = (x - min, 1.0);
    if x < 0.0 {
        x = -x;
        sign = -1.0;
    }
    let extra = x % span;
    let flips = (x / span).floor();
    if flips % 2.0 == 0.0 {
        (extra + min, sign)
    } else {
        (span - extra + min, -sign)
    }
}

/// A normalised grid coordinate as a pixel coordinate of a dim of `size`, with the
/// derivative of one by the other (PyTorch's `grid_sampler_unnormalize`).
fn unnormalize(coord: f64, size: usize, align_corners: bool) -> (f64, f64) {
    let s = size as f64;
    if align_corners {
        ((coord + 1.0) / 2.0 * (s - 1.0), (s - 1.0) / 2.0)
    } else {
        (((coord + 1.0) * s - 1.0) / 2.0, s / 2.0)
    }
}

/// A pixel coordinate with the padding applied (reflected, then clipped to the dim;
/// zeros padding leaves it), with its derivative `d` carried through.
fn pad_coordinate(
    x: f64,
    d: f64,
    size: usize,
    padding: GridPaddingMode,
    align_corners: bool,
) -> (f64, f64) {
    let s = size as f64;
    let clip = |x: f64, d: f64| {
        if x <= 0.0 {
            (0.0, 0.0)
        } else if x >= s - 1.0 {
            (s - 1.0, 0.0)
        } else {
            (x, d)
        }
    };
    match padding {
        GridPaddingMode::Zeros => (x, d),
        GridPaddingMode::Border => clip(x, d),
        GridPaddingMode::Reflection => {
            let (r, sign) = if align_corners {
                reflect(x, 0.0, 2.0 * (s - 1.0))
            } else {
                reflect(x, -1.0, 2.0 * s - 1.0)
            };
            clip(r, d * sign)
        }
    }
}

/// A normalised grid coordinate as a pixel coordinate of a dim of `size`, with the
/// derivative of one by the other (PyTorch's `grid_sampler_compute_source_index`).
fn grid_source(
    coord: f64,
    size: usize,
    padding: GridPaddingMode,
    align_corners: bool,
) -> (f64, f64) {
    if coord.is_nan() {
        // As PyTorch: a NaN place reads nothing with zeros padding (bilinear weights
        // are NaN, so the output is too) and the first pixel (clipped) otherwise.
        return match padding {
            GridPaddingMode::Zeros => (f64::NAN, f64::NAN),
            _ => (0.0, 0.0),
        };
    }
    let (x, d) = unnormalize(coord, size, align_corners);
    pad_coordinate(x, d, size, padding, align_corners)
}

/// Where `grid_sample` reads, computed from the grid's values: the taps' position
/// maps (output `(N, C, *out)` into the input), whether each tap is inside, and the
/// pixel coordinates as affine functions of the grid, `ix = gx · scale + shift` with
/// `shift` relative to the place's floor (so `ix - floor(ix)` is `tx`). Grid axis `a`
/// (x, y, z) indexes the input's spatial dim `rank - 1 - a`; the `k^rank` taps (`k`
/// per axis: [`GridSampleMode::taps`]) are listed with x varying fastest.
struct GridTaps {
    /// Where the grid is NaN, when bilinear padding clips NaN places to pixel 0.
    nan: Option<Tensor>,
    /// Taps per grid axis.
    k: usize,
    maps: Vec<Arc<IndexMap>>,
    inside: Vec<Tensor>,
    scale: Vec<Tensor>,
    shift: Vec<Tensor>,
}

fn grid_taps(input: &[usize], grid: &Tensor, options: GridOptions) -> Result<GridTaps> {
    let rank = input.len() - 2;
    let (n, c) = (input[0], input[1]);
    let spatial = &input[2..];
    let size = |a: usize| spatial[rank - 1 - a];
    let gshape = grid.shape();
    let out_sp = &gshape[1..1 + rank];
    let per_batch: usize = out_sp.iter().product();
    let values: Vec<f64> = grid.to_dtype(DType::F64)?.try_to_vec()?;
    let points = n * per_batch;
    let (k, first) = options.mode.taps();
    let cubic = options.mode == GridSampleMode::Bicubic;
    let corners = k.pow(rank as u32);
    // Each place's floor (the nearest pixel for nearest) per axis.
    let mut base = try_vec(points * rank, 0.0f64)?;
    let mut scale = Vec::with_capacity(rank);
    let mut shift = Vec::with_capacity(rank);
    for _ in 0..rank {
        scale.push(try_vec(points, 0.0)?);
        shift.push(try_vec(points, 0.0)?);
    }
    for p in 0..points {
        let g = &values[rank * p..rank * (p + 1)];
        for a in 0..rank {
            // Bicubic pads each tap, not the place (PyTorch's `get_value_bounded`), so
            // its place is only unnormalised and a NaN stays NaN.
            let (i, d) = if cubic {
                unnormalize(g[a], size(a), options.align_corners)
            } else {
                grid_source(g[a], size(a), options.padding, options.align_corners)
            };
            let f = match options.mode {
                GridSampleMode::Nearest => i.round_ties_even(),
                _ => i.floor(),
            };
            base[p * rank + a] = f;
            // A NaN place clipped to pixel 0 has scale 0 and reads the grid as 0 (`nan`).
            let ga = if g[a].is_nan() { 0.0 } else { g[a] };
            scale[a][p] = d;
            shift[a][p] = i - d * ga - f;
        }
    }
    let plane: usize = spatial.iter().product();
    let mut out_shape: Dims = smallvec![n, c];
    out_shape.extend_from_slice(out_sp);
    let mut mask_shape: Dims = smallvec![n, 1];
    mask_shape.extend_from_slice(out_sp);
    let count = shape::checked_numel(&out_shape)?;
    crate::tensor::check_allocation(count.saturating_mul(corners), DType::I64)?;
    let mut maps = Vec::with_capacity(corners);
    let mut inside = Vec::with_capacity(corners);
    for corner in 0..corners {
        let mut positions = try_with_capacity(count)?;
        let mut mask = try_with_capacity(points)?;
        let mut flat = try_with_capacity(points)?;
        for p in 0..points {
            let (mut ok, mut at) = (true, 0usize);
            // The flat position in the plane: the slowest spatial dim (grid axis
            // rank - 1) first.
            for a in (0..rank).rev() {
                let tap = (corner / k.pow(a as u32)) % k;
                let mut x = base[p * rank + a] + first + tap as f64;
                if cubic && options.padding != GridPaddingMode::Zeros {
                    // PyTorch clamps a NaN tap to pixel 0.
                    x = pad_coordinate(x, 0.0, size(a), options.padding, options.align_corners).0;
                    if x.is_nan() {
                        x = 0.0;
                    }
                }
                // NaN and far places fail the comparison and read nothing.
                ok &= x >= 0.0 && x < size(a) as f64;
                at = at * size(a) + if ok { x as usize } else { 0 };
            }
            mask.push(ok);
            flat.push(if ok { at } else { 0 });
        }
        for b in 0..n {
            for ch in 0..c {
                for q in 0..per_batch {
                    positions.push((b * c + ch) * plane + flat[b * per_batch + q]);
                }
            }
        }
        maps.push(IndexMap::new(input.into(), out_shape.clone(), positions)?);
        inside.push(Tensor::from_vec(mask, &mask_shape)?);
    }
    let dtype = grid.dtype();
    let mut point_shape: Dims = smallvec![n];
    point_shape.extend_from_slice(out_sp);
    let to = |v: Vec<f64>| Tensor::from_vec(v, &point_shape)?.to_dtype(dtype);
    let nan = (options.mode == GridSampleMode::Bilinear
        && options.padding != GridPaddingMode::Zeros
        && values.iter().any(|v| v.is_nan()))
    .then(|| Tensor::from_vec(values.iter().map(|v| v.is_nan()).collect(), gshape))
    .transpose()?;
    Ok(GridTaps {
        nan,
        k,
        maps,
        inside,
        scale: scale.into_iter().map(to).collect::<Result<_>>()?,
        shift: shift.into_iter().map(to).collect::<Result<_>>()?,
    })
}

/// PyTorch's cubic convolution constant (`UpSample.h`, `GridSamplerKernel.cpp`).
const CUBIC_A: f64 = -0.75;

/// `((A + 2) x - (A + 3)) x² + 1`, the cubic kernel on `|x| ≤ 1`, and its derivative
/// `(3 (A + 2) x - 2 (A + 3)) x`.
fn cubic_near(x: &Variable, slope: bool) -> Result<Variable> {
    let a = CUBIC_A;
    if slope {
        x.mul_scalar(3.0 * (a + 2.0))?
            .add_scalar(-2.0 * (a + 3.0))?
            .mul(x)
    } else {
        x.mul_scalar(a + 2.0)?
            .add_scalar(-(a + 3.0))?
            .mul(x)?
            .mul(x)?
            .add_scalar(1.0)
    }
}

/// `((A x - 5 A) x + 8 A) x - 4 A`, the cubic kernel on `1 < |x| < 2`, and its
/// derivative `(3 A x - 10 A) x + 8 A`.
fn cubic_far(x: &Variable, slope: bool) -> Result<Variable> {
    let a = CUBIC_A;
    if slope {
        x.mul_scalar(3.0 * a)?
            .add_scalar(-10.0 * a)?
            .mul(x)?
            .add_scalar(8.0 * a)
    } else {
        x.mul_scalar(a)?
            .add_scalar(-5.0 * a)?
            .mul(x)?
            .add_scalar(8.0 * a)?
            .mul(x)?
            .add_scalar(-4.0 * a)
    }
}

/// The weights of an axis's taps as functions of `t` (the place minus its floor):
/// `[1 - t, t]` (bilinear) or the cubic convolution coefficients of the taps at
/// `-1, 0, 1, 2` (PyTorch's `get_cubic_upsample_coefficients`); with `slope`, their
/// derivatives by `t` (bicubic only: bilinear's are the constants `[-1, 1]`).
fn tap_weights(t: &Variable, mode: GridSampleMode, slope: bool) -> Result<Vec<Variable>> {
    Ok(match mode {
        GridSampleMode::Nearest => vec![],
        GridSampleMode::Bilinear => vec![t.rsub_scalar(1.0)?, t.clone()],
        GridSampleMode::Bicubic => {
            let s = |v: Variable| if slope { v.neg() } else { Ok(v) };
            let rest = t.rsub_scalar(1.0)?;
            vec![
                cubic_far(&t.add_scalar(1.0)?, slope)?,
                cubic_near(t, slope)?,
                s(cubic_near(&rest, slope)?)?,
                s(cubic_far(&t.rsub_scalar(2.0)?, slope)?)?,
            ]
        }
    })
}

/// The taps' values (zero outside) and each grid axis's `t` (the place minus its
/// floor, `(N, 1, *out)`) and tap weights, as differentiable functions of `input` and
/// `grid` (no `t` and no weights for nearest).
struct Sampling {
    values: Vec<Variable>,
    t: Vec<Variable>,
    weights: Vec<Vec<Variable>>,
}

fn sampling(
    input: &Variable,
    grid: &Variable,
    taps: &GridTaps,
    mode: GridSampleMode,
) -> Result<Sampling> {
    let zero = Variable::from_tensor(Tensor::scalar(0.0, input.dtype()));
    let mut values = Vec::with_capacity(taps.maps.len());
    for (map, inside) in taps.maps.iter().zip(&taps.inside) {
        let read = input.take_map(map.clone(), Taken::Gather)?;
        values.push(Variable::where_cond(inside, &read, &zero)?);
    }
    let (mut t, mut weights) = (Vec::new(), Vec::new());
    if mode != GridSampleMode::Nearest {
        let grid = match &taps.nan {
            Some(nan) => Variable::where_cond(nan, &zero, grid)?,
            None => grid.clone(),
        };
        for (axis, (scale, shift)) in taps.scale.iter().zip(&taps.shift).enumerate() {
            let ta = grid
                .select(-1, axis as i64)?
                .mul(&Variable::from_tensor(scale.clone()))?
                .add(&Variable::from_tensor(shift.clone()))?
                .unsqueeze(1)?;
            weights.push(tap_weights(&ta, mode, false)?);
            t.push(ta);
        }
    }
    Ok(Sampling { values, t, weights })
}

/// `values` (one per tap, x varying fastest, `k` taps per axis) combined along the
/// axis of stride `stride` in that list: each group of `k` taps along it becomes
/// `combine(group)`, and the result lists the other axes' taps in the same order.
fn reduce_axis(
    values: &[Variable],
    stride: usize,
    k: usize,
    combine: impl Fn(&[&Variable]) -> Result<Variable>,
) -> Result<Vec<Variable>> {
    (0..values.len())
        .filter(|c| (c / stride).is_multiple_of(k))
        .map(|c| combine(&(0..k).map(|j| &values[c + j * stride]).collect::<Vec<_>>()))
        .collect()
}

/// `Σ_j group[j] · weights[j]`.
fn weighted(group: &[&Variable], weights: &[Variable]) -> Result<Variable> {
    let mut acc = group[0].mul(&weights[0])?;
    for (v, w) in group.iter().zip(weights).skip(1) {
        acc = acc.add(&v.mul(w)?)?;
    }
    Ok(acc)
}

/// `values` (one per tap, x varying fastest) interpolated along each axis in turn
/// with its tap weights: `Σ_j v_j · w_j` along x, then the same along y and z.
fn collapse(mut values: Vec<Variable>, weights: &[&[Variable]]) -> Result<Variable> {
    for w in weights {
        values = reduce_axis(&values, 1, w.len(), |group| weighted(group, w))?;
    }
    values
        .pop()
        .ok_or_else(|| Error::NotImplemented("rustgrad internal error: no grid taps".into()))
}

fn grid_sample_backward(
    input: &Variable,
    grid: &Variable,
    grad: &Variable,
    options: GridOptions,
    needs: &[bool],
) -> Result<Grads> {
    let taps = grid_taps(&input.shape(), &grid.tensor(), options)?;
    let s = sampling(input, grid, &taps, options.mode)?;
    let k = taps.k;
    let zero = Variable::from_tensor(Tensor::scalar(0.0, grad.dtype()));
    let grad_input = if needs[0] {
        let parts: Vec<Variable> = match s.weights.split_first() {
            None => vec![grad.clone()],
            Some((wx, rest)) => (0..taps.maps.len())
                .map(|corner| {
                    let mut wt = wx[corner % k].clone();
                    let mut stride = k;
                    for wa in rest {
                        wt = wt.mul(&wa[(corner / stride) % k])?;
                        stride *= k;
                    }
                    grad.mul(&wt)
                })
                .collect::<Result<_>>()?,
        };
        let mut total: Option<Variable> = None;
        for ((part, map), inside) in parts.iter().zip(&taps.maps).zip(&taps.inside) {
            let put = Variable::where_cond(inside, part, &zero)?.put_map(map.clone())?;
            total = Some(match total {
                None => put,
                Some(t) => t.add(&put)?,
            });
        }
        total
    } else {
        None
    };
    let grad_grid = if needs.get(1).copied().unwrap_or(false) {
        Some(if s.weights.is_empty() {
            Variable::from_tensor(Tensor::zeros(&grid.shape(), grid.dtype())?)
        } else {
            let w = &s.weights;
            let rank = w.len();
            let mut parts = Vec::with_capacity(rank);
            for a in 0..rank {
                // The derivative along axis a at each tap of the other axes (the
                // taps' differences for bilinear), interpolated along those (x
                // fastest).
                let stride = k.pow(a as u32);
                let along = if options.mode == GridSampleMode::Bicubic {
                    let slopes = tap_weights(&s.t[a], options.mode, true)?;
                    reduce_axis(&s.values, stride, k, |group| weighted(group, &slopes))?
                } else {
                    reduce_axis(&s.values, stride, k, |group| group[1].sub(group[0]))?
                };
                let others: Vec<&[Variable]> = (0..rank)
                    .filter(|&b| b != a)
                    .map(|b| w[b].as_slice())
                    .collect();
                let d = collapse(along, &others)?;
                let g = grad.mul(&d)?.sum_dims(&[1], false)?;
                parts.push(g.mul(&Variable::from_tensor(taps.scale[a].clone()))?);
            }
            Variable::stack(&parts, -1)?
        })
    } else {
        None
    };
    Ok(smallvec![grad_input, grad_grid])
}

impl Variable {
    /// `torch.grid_sampler` for a 4-D input `(N, C, H, W)` and grid `(N, Ho, Wo, 2)`
    /// (x then y, normalised to [-1, 1]), or a 5-D input `(N, C, D, H, W)` and grid
    /// `(N, Do, Ho, Wo, 3)` (x, y, z; bilinear and bicubic are trilinear and tricubic
    /// there): the output `(N, C, *out)` samples the input at the grid's places.
    /// Differentiable in both.
    pub fn grid_sample(
        &self,
        grid: &Variable,
        mode: GridSampleMode,
        padding_mode: GridPaddingMode,
        align_corners: bool,
    ) -> Result<Variable> {
        let (shape, gshape) = (self.shape(), grid.shape());
        // PyTorch's order: the shared shape checks, then the rank's, then the kernel's
        // dtype dispatch.
        if shape.is_empty() || gshape.is_empty() {
            return Err(Error::NoDimensions { dim: 0 });
        }
        if shape[0] != gshape[0] {
            return Err(runtime(format!(
                "grid_sampler(): expected grid and input to have same batch size, but got input with sizes {:?} and grid with sizes {:?}",
                shape.as_slice(),
                gshape.as_slice()
            )));
        }
        let coords = shape.len() as i64 - 2;
        if gshape[gshape.len() - 1] as i64 != coords {
            return Err(runtime(format!(
                "grid_sampler(): expected grid to have size {coords} in last dimension, but got grid with sizes {:?}",
                gshape.as_slice()
            )));
        }
        if let Some(d) = (2..shape.len()).find(|&d| shape[d] == 0) {
            return Err(runtime(format!(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes {:?} with dimension {d} being empty",
                shape.as_slice()
            )));
        }
        let dims = if shape.len() == 4 { 4 } else { 5 };
        if shape.len() != dims || gshape.len() != dims {
            return Err(runtime(format!(
                "grid_sampler(): expected {dims}D input and grid with same number of dimensions, but got input with sizes {:?} and grid with sizes {:?}",
                shape.as_slice(),
                gshape.as_slice()
            )));
        }
        if !self.dtype().is_floating_point() {
            let kernel = if dims == 4 {
                "grid_sampler_2d_cpu_kernel_impl"
            } else {
                "grid_sampler3d_cpu"
            };
            return Err(Error::unsupported_dtype(kernel, self.dtype()));
        }
        if self.dtype() != grid.dtype() {
            return Err(runtime(format!(
                "grid_sampler(): expected input and grid to have same dtype, but input has {} and grid has {}",
                self.dtype().torch_name(),
                grid.dtype().torch_name()
            )));
        }
        let options = GridOptions {
            mode,
            padding: padding_mode,
            align_corners,
            rank: (shape.len() - 2) as u8,
        };
        let result = {
            let _guard = crate::autograd::grad_mode::no_grad();
            let input = Variable::from_tensor(self.tensor().clone());
            let g = Variable::from_tensor(grid.tensor().clone());
            let taps = grid_taps(&shape, &grid.tensor(), options)?;
            let s = sampling(&input, &g, &taps, mode)?;
            let weights: Vec<&[Variable]> = s.weights.iter().map(Vec::as_slice).collect();
            collapse(s.values, &weights)?.tensor().clone()
        };
        Ok(Variable::record(result, &[self, grid], |_, _| {
            (
                Rule::GridSampler(options),
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::input(grid))
                ],
            )
        }))
    }
}

// ----- affine_grid ---------------------------------------------------------------------

/// `linspace(-1, 1, steps)`, scaled by `(steps - 1) / steps` unless `align_corners`
/// (PyTorch's `linspace_from_neg_one`).
fn neg_one_to_one(steps: usize, align_corners: bool) -> Result<Vec<f64>> {
    if steps <= 1 {
        return Ok(vec![0.0; steps]);
    }
    let step = 2.0 / (steps as f64 - 1.0);
    let half = steps / 2;
    crate::kernels::try_collect((0..steps).map(|i| {
        let v = if i < half {
            -1.0 + step * i as f64
        } else {
            1.0 - step * (steps - 1 - i) as f64
        };
        if align_corners {
            v
        } else {
            v * (steps as f64 - 1.0) / steps as f64
        }
    }))
}

/// The base grid `(D·H·W, k + 1)`: each point's (x, y[, z], 1).
fn base_grid(spatial: &[usize], align_corners: bool, dtype: DType) -> Result<Tensor> {
    let count = shape::checked_numel(spatial)?;
    let k = spatial.len();
    // Built in float64, then converted: refused before any table is built.
    crate::tensor::check_allocation(count.saturating_mul(k + 1), DType::F64)?;
    let axes: Vec<Vec<f64>> = spatial
        .iter()
        .map(|&s| neg_one_to_one(s, align_corners))
        .collect::<Result<_>>()?;
    let mut data = crate::kernels::try_with_capacity(count * (k + 1))?;
    let mut coord = vec![0usize; k];
    for _ in 0..count {
        // x is the last spatial dim, then y, then z.
        for d in (0..k).rev() {
            data.push(axes[d][coord[d]]);
        }
        data.push(1.0);
        for d in (0..k).rev() {
            coord[d] += 1;
            if coord[d] < spatial[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    Tensor::from_vec(data, &[count, k + 1])?.to_dtype(dtype)
}

fn affine_grid_backward(grad: &Variable, size: &[usize], align_corners: bool) -> Result<Variable> {
    let spatial = &size[2..];
    let k = spatial.len();
    let count = shape::checked_numel(spatial)? as i64;
    let base = Variable::from_tensor(base_grid(spatial, align_corners, grad.dtype())?);
    grad.reshape(&[size[0] as i64, count, k as i64])?
        .transpose(1, 2)?
        .matmul(&base)
}

impl Variable {
    /// `torch.affine_grid_generator(theta, size, align_corners)`: for `theta` of shape
    /// `(N, 2, 3)` and `size = (N, C, H, W)` (or `(N, 3, 4)` and `(N, C, D, H, W)`), the
    /// grid `(N, H, W, 2)` of `theta` applied to the normalised pixel centres.
    pub fn affine_grid(&self, size: &[usize], align_corners: bool) -> Result<Variable> {
        let shape = self.shape();
        let k = size.len().saturating_sub(2);
        if !(k == 2 || k == 3) || shape.len() != 3 || shape[1] != k || shape[2] != k + 1 {
            return Err(runtime(format!(
                "affine_grid: expected theta of shape (N, {k}, {}) for size {size:?}, got {:?}",
                k + 1,
                shape.as_slice()
            )));
        }
        if shape[0] != size[0] {
            return Err(runtime(format!(
                "affine_grid: theta has batch size {} but size has {}",
                shape[0], size[0]
            )));
        }
        if !self.dtype().is_floating_point() {
            return Err(runtime(format!(
                "Expected theta to have floating point type, but got {}",
                self.dtype().torch_name()
            )));
        }
        let spatial = &size[2..];
        let result = {
            let _guard = crate::autograd::grad_mode::no_grad();
            let base = Variable::from_tensor(base_grid(spatial, align_corners, self.dtype())?);
            let theta = Variable::from_tensor(self.tensor().clone());
            let mut out_shape: Vec<i64> = vec![size[0] as i64];
            out_shape.extend(spatial.iter().map(|&s| s as i64));
            out_shape.push(k as i64);
            base.matmul(&theta.transpose(1, 2)?)?
                .reshape(&out_shape)?
                .tensor()
                .clone()
        };
        let info: Dims = size.into();
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::AffineGrid(Box::new((info, align_corners))),
                smallvec![],
            )
        }))
    }
}
