//! Shape and movement ops that return views: view, reshape, transpose, t, permute,
//! expand, unsqueeze, squeeze, alias, and the multi-output views split, chunk, unbind.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::index::{self, IndexMap, Scattered, Taken};
use super::{ints, shape_of, Grads, Shape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, Layout};
use crate::shape::{self, Dims};
use crate::storage::WriteSite;
use crate::tensor::Tensor;
use crate::variable::Variable;
use smallvec::smallvec;
use std::panic::Location;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// A view or reshape to another shape. `copied` is a reshape that had to copy.
    View { input: Shape, copied: bool },
    /// `transpose(dim0, dim1)`; `t` names the `.t()` form, `in_place` the
    /// `transpose_` / `t_` forms (TransposeBackward1 / TBackward1).
    Transpose {
        dim0: usize,
        dim1: usize,
        t: bool,
        in_place: bool,
    },
    /// `permute(dims)`.
    Permute { dims: Shape },
    /// `expand(...)` of an input of shape `input`.
    Expand { input: Shape },
    /// `unsqueeze(dim)`; `in_place` names `unsqueeze_` (UnsqueezeBackward1).
    Unsqueeze { dim: usize, in_place: bool },
    /// `squeeze()` / `squeeze(dim)` / `squeeze(dims)` of an input of shape `input`;
    /// `in_place` names the `squeeze_` forms (SqueezeBackward3/4/5).
    Squeeze {
        input: Shape,
        form: SqueezeForm,
        in_place: bool,
    },
    /// A view of the whole tensor (`x[...]`).
    Alias,
    /// `cat` / `stack` of several inputs.
    Cat(Box<CatInfo>),
    /// `tril` / `triu`.
    Tril { diagonal: i64, upper: bool },
    /// `split` / `chunk` (SplitBackward0) or `split_with_sizes` (SplitWithSizesBackward0):
    /// ONE node whose outputs are the pieces (Note [Multi-output nodes]).
    Split(Box<SplitInfo>),
    /// `unbind(dim)` of an input of the given shape: one node, one output per slice.
    Unbind(Box<(Shape, usize)>),
}

/// Which overload of `squeeze` made a node (PyTorch numbers their grad_fns apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SqueezeForm {
    /// `squeeze()`: every size-1 dim.
    All,
    /// `squeeze(dim)`.
    Dim,
    /// `squeeze(dims)` with a tuple of dims.
    Dims,
}

/// Which dims a `squeeze` removes.
#[derive(Clone, Copy, Debug)]
pub enum Squeeze<'a> {
    /// Every size-1 dim (`squeeze()`).
    All,
    /// This dim if it has size 1 (`squeeze(dim)`).
    Dim(i64),
    /// Those of these dims that have size 1 (`squeeze(dims)`); a repeated dim raises.
    Dims(&'a [i64]),
}

/// What the backward of a split needs: the input's shape, the dim and the pieces' sizes
/// along it.
#[derive(Clone, Debug)]
pub(crate) struct SplitInfo {
    input: Shape,
    dim: usize,
    sizes: Box<[usize]>,
    /// `split_with_sizes` (named SplitWithSizesBackward0) rather than `split`.
    with_sizes: bool,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::View { copied: false, .. } => "ViewBackward0",
            Rule::View { copied: true, .. } => "UnsafeViewBackward0",
            Rule::Transpose { t, in_place, .. } => match (t, in_place) {
                (false, false) => "TransposeBackward0",
                (true, false) => "TBackward0",
                (false, true) => "TransposeBackward1",
                (true, true) => "TBackward1",
            },
            Rule::Permute { .. } => "PermuteBackward0",
            Rule::Expand { .. } => "ExpandBackward0",
            Rule::Unsqueeze { in_place, .. } => match in_place {
                false => "UnsqueezeBackward0",
                true => "UnsqueezeBackward1",
            },
            Rule::Squeeze { form, in_place, .. } => match (form, in_place) {
                (SqueezeForm::All, false) => "SqueezeBackward0",
                (SqueezeForm::Dim, false) => "SqueezeBackward1",
                (SqueezeForm::Dims, false) => "SqueezeBackward2",
                (SqueezeForm::All, true) => "SqueezeBackward3",
                (SqueezeForm::Dim, true) => "SqueezeBackward4",
                (SqueezeForm::Dims, true) => "SqueezeBackward5",
            },
            Rule::Alias => "AliasBackward0",
            Rule::Cat(info) if info.stack => "StackBackward0",
            Rule::Cat(_) => "CatBackward0",
            Rule::Tril { upper: false, .. } => "TrilBackward0",
            Rule::Tril { upper: true, .. } => "TriuBackward0",
            Rule::Split(info) if info.with_sizes => "SplitWithSizesBackward0",
            Rule::Split(_) => "SplitBackward0",
            Rule::Unbind(_) => "UnbindBackward0",
        }
    }

    /// Whether the rule belongs to a node with several outputs (`apply_multi`).
    pub(crate) fn is_multi_output(&self) -> bool {
        matches!(self, Rule::Split(_) | Rule::Unbind(_))
    }

    /// The backward of a multi-output rule: `grads[i]` is the gradient of output `i`,
    /// `None` where none reached it, which counts as zeros (PyTorch's undefined
    /// gradients; Note [Zero gradients]): `cat` / `stack` of the pieces' gradients.
    pub(crate) fn apply_multi(&self, grads: &[Option<Variable>]) -> Result<Grads> {
        let dtype = grads
            .iter()
            .flatten()
            .map(Variable::dtype)
            .next()
            .ok_or_else(|| {
                Error::NotImplemented(
                    "rustgrad internal error: a multi-output node ran without gradients".into(),
                )
            })?;
        let piece = |i: usize, shape: &[usize]| -> Result<Variable> {
            Ok(match grads.get(i).cloned().flatten() {
                Some(g) => g,
                None => Variable::from_tensor(Tensor::zeros(shape, dtype)?),
            })
        };
        Ok(match self {
            Rule::Split(info) => {
                let mut shape = info.input.to_vec();
                let pieces: Vec<Variable> = info
                    .sizes
                    .iter()
                    .enumerate()
                    .map(|(i, &size)| {
                        shape[info.dim] = size;
                        piece(i, &shape)
                    })
                    .collect::<Result<_>>()?;
                smallvec![Some(Variable::cat(&pieces, info.dim as i64)?)]
            }
            Rule::Unbind(unbind) => {
                let (input, dim) = &**unbind;
                let mut shape = input.to_vec();
                shape.remove(*dim);
                let pieces: Vec<Variable> = (0..input[*dim])
                    .map(|i| piece(i, &shape))
                    .collect::<Result<_>>()?;
                smallvec![Some(Variable::stack(&pieces, *dim as i64)?)]
            }
            _ => {
                return Err(Error::NotImplemented(
                    "rustgrad internal error: apply_multi of a single-output rule".into(),
                ))
            }
        })
    }

    /// The gradients of the inputs given `grad`, the gradient of the output; `needs[i]`
    /// says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        _saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let g = grad;
        Ok(match self {
            Rule::View { input, .. } | Rule::Squeeze { input, .. } => {
                smallvec![Some(g.reshape(&ints(input))?)]
            }
            Rule::Transpose { dim0, dim1, .. } => {
                smallvec![Some(g.transpose(*dim0 as i64, *dim1 as i64)?)]
            }
            Rule::Permute { dims } => {
                let mut inverse = vec![0i64; dims.len()];
                for (i, &d) in dims.iter().enumerate() {
                    inverse[d] = i as i64;
                }
                smallvec![Some(g.permute(&inverse)?)]
            }
            Rule::Expand { input } => smallvec![Some(g.sum_to_size(input)?)],
            Rule::Unsqueeze { dim, .. } => smallvec![Some(g.squeeze_dim(*dim as i64)?)],
            Rule::Alias => smallvec![Some(g.clone())],
            Rule::Cat(info) => {
                let mut grads = Grads::new();
                for (i, &(place, dtype)) in info.parts.iter().enumerate() {
                    if !needs.get(i).copied().unwrap_or(false) {
                        grads.push(None);
                        continue;
                    }
                    let part = match place {
                        None => Variable::from_tensor(Tensor::zeros(&[0], dtype)?),
                        Some((start, _)) if info.stack => {
                            g.select(info.dim as i64, start as i64)?
                        }
                        Some((start, len)) => g.slice(
                            info.dim as i64,
                            Some(start as i64),
                            Some((start + len) as i64),
                            1,
                        )?,
                    };
                    let part = if part.dtype() == dtype {
                        part
                    } else {
                        part.to_dtype(dtype)?
                    };
                    grads.push(Some(part));
                }
                grads
            }
            Rule::Tril { diagonal, upper } => smallvec![Some(g.tril_triu(*diagonal, *upper)?)],
            Rule::Split(_) | Rule::Unbind(_) => return self.apply_multi(&[Some(g.clone())]),
        })
    }
}

impl Variable {
    /// A view with another shape (one size may be -1).
    pub fn view(&self, shape: &[i64]) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::View(shape.into()),
            &[self],
            || {
                let result = self.tensor().view(shape)?;
                Ok(self.record_view(result, || Rule::View {
                    input: shape_of(self),
                    copied: false,
                }))
            },
        )
    }

    /// Like `view`, copying when the strides do not allow a view.
    pub fn reshape(&self, shape: &[i64]) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Reshape(shape.into()),
            &[self],
            || {
                let target = shape::infer_shape(shape, self.numel())?;
                if self.tensor().can_view(&target) {
                    return self.view(shape);
                }
                crate::tensor::check_allocation(self.numel(), self.dtype())?;
                let result = self.tensor().reshape(shape)?;
                Ok(Variable::record(result, &[self], |_, _| {
                    (
                        Rule::View {
                            input: shape_of(self),
                            copied: true,
                        },
                        smallvec![],
                    )
                }))
            },
        )
    }

    /// `_unsafe_view`: this contiguous tensor with another shape, recorded as a new
    /// tensor rather than a view (grad_fn `UnsafeViewBackward0`, no `_base`). For
    /// results nobody else holds, such as the product a folded `matmul` reshapes back.
    pub(crate) fn unsafe_view(&self, shape: &[i64]) -> Result<Variable> {
        let result = self.tensor().reshape(shape)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::View {
                    input: shape_of(self),
                    copied: true,
                },
                smallvec![],
            )
        }))
    }

    /// Swaps two dims.
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Transpose(dim0, dim1),
            &[self],
            || {
                let (result, rule) = self.transposed(dim0, dim1, false)?;
                Ok(self.record_view(result, || rule))
            },
        )
    }

    /// `transpose_` / `swapaxes_` / `swapdims_`: swaps two dims of this tensor in place
    /// (Note [In-place view ops]).
    #[track_caller]
    pub fn transpose_(&self, dim0: i64, dim1: i64) -> Result<()> {
        let (result, rule) = self.transposed(dim0, dim1, true)?;
        self.in_place_view(result, rule, WriteSite::Rust(Location::caller()))
    }

    fn transposed(&self, dim0: i64, dim1: i64, in_place: bool) -> Result<(Tensor, Rule)> {
        let result = self.tensor().transpose(dim0, dim1)?;
        let nd = self.dim();
        let (d0, d1) = (shape::wrap_dim(dim0, nd)?, shape::wrap_dim(dim1, nd)?);
        let rule = Rule::Transpose {
            dim0: d0,
            dim1: d1,
            t: false,
            in_place,
        };
        Ok((result, rule))
    }

    /// Transpose of a tensor with at most 2 dims.
    pub fn t(&self) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::T,
            &[self],
            || {
                let (result, rule) = self.transposed_2d("t", false)?;
                Ok(self.record_view(result, || rule))
            },
        )
    }

    /// `t_`: transposes this tensor of at most 2 dims in place.
    #[track_caller]
    pub fn t_(&self) -> Result<()> {
        let (result, rule) = self.transposed_2d("t_", true)?;
        self.in_place_view(result, rule, WriteSite::Rust(Location::caller()))
    }

    fn transposed_2d(&self, op: &str, in_place: bool) -> Result<(Tensor, Rule)> {
        if self.dim() > 2 {
            return Err(Error::InvalidArgument(format!(
                "{op}() expects a tensor with <= 2 dimensions, but self is {}D",
                self.dim()
            )));
        }
        let result = self.tensor().t()?;
        let (d0, d1) = if self.dim() == 2 { (0, 1) } else { (0, 0) };
        let rule = Rule::Transpose {
            dim0: d0,
            dim1: d1,
            t: true,
            in_place,
        };
        Ok((result, rule))
    }

    /// Reorders dims.
    pub fn permute(&self, dims: &[i64]) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Permute(dims.into()),
            &[self],
            || {
                let result = self.tensor().permute(dims)?;
                let wrapped = dims
                    .iter()
                    .map(|&d| shape::wrap_dim(d, self.dim()))
                    .collect::<Result<Shape>>()?;
                Ok(self.record_view(result, || Rule::Permute { dims: wrapped }))
            },
        )
    }

    /// Broadcasts to `sizes` (-1 keeps a size) without copying.
    pub fn expand(&self, sizes: &[i64]) -> Result<Variable> {
        let result = self.tensor().expand(sizes)?;
        Ok(self.record_view(result, || Rule::Expand {
            input: shape_of(self),
        }))
    }

    /// Inserts a size-1 dim.
    pub fn unsqueeze(&self, dim: i64) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Unsqueeze(dim),
            &[self],
            || {
                let (result, rule) = self.unsqueezed(dim, false)?;
                Ok(self.record_view(result, || rule))
            },
        )
    }

    /// `unsqueeze_`: inserts a size-1 dim into this tensor in place.
    #[track_caller]
    pub fn unsqueeze_(&self, dim: i64) -> Result<()> {
        let (result, rule) = self.unsqueezed(dim, true)?;
        self.in_place_view(result, rule, WriteSite::Rust(Location::caller()))
    }

    fn unsqueezed(&self, dim: i64, in_place: bool) -> Result<(Tensor, Rule)> {
        let result = self.tensor().unsqueeze(dim)?;
        let d = shape::wrap_insert_dim(dim, self.dim())?;
        Ok((result, Rule::Unsqueeze { dim: d, in_place }))
    }

    /// Removes every size-1 dim.
    pub fn squeeze(&self) -> Result<Variable> {
        let (result, rule) = self.squeezed(Squeeze::All, false)?;
        Ok(self.record_view(result, || rule))
    }

    /// Removes `dim` if it has size 1.
    pub fn squeeze_dim(&self, dim: i64) -> Result<Variable> {
        let (result, rule) = self.squeezed(Squeeze::Dim(dim), false)?;
        Ok(self.record_view(result, || rule))
    }

    /// Removes those of `dims` that have size 1 (`squeeze(dims)` with a tuple).
    pub fn squeeze_dims(&self, dims: &[i64]) -> Result<Variable> {
        let (result, rule) = self.squeezed(Squeeze::Dims(dims), false)?;
        Ok(self.record_view(result, || rule))
    }

    /// `squeeze_()`, `squeeze_(dim)` or `squeeze_(dims)`: the squeeze of this tensor,
    /// in place (Note [In-place view ops]).
    #[track_caller]
    pub fn squeeze_(&self, which: Squeeze<'_>) -> Result<()> {
        let (result, rule) = self.squeezed(which, true)?;
        self.in_place_view(result, rule, WriteSite::Rust(Location::caller()))
    }

    fn squeezed(&self, which: Squeeze<'_>, in_place: bool) -> Result<(Tensor, Rule)> {
        let t = self.tensor();
        let (result, form) = match which {
            Squeeze::All => (t.squeeze(), SqueezeForm::All),
            Squeeze::Dim(d) => (t.squeeze_dim(d)?, SqueezeForm::Dim),
            Squeeze::Dims(dims) => (t.squeeze_dims(dims)?, SqueezeForm::Dims),
        };
        drop(t);
        let rule = Rule::Squeeze {
            input: shape_of(self),
            form,
            in_place,
        };
        Ok((result, rule))
    }

    /// A view of the whole tensor (`x[...]`, `x[()]`): a distinct variable, so changing
    /// its autograd state (`requires_grad_`, `detach_`, `.grad`) leaves `self` alone.
    pub fn alias(&self) -> Variable {
        self.record_view(self.tensor().clone(), || Rule::Alias)
    }
}

// ----- joining, splitting and rearranging ---------------------------------------------

/// What `cat` / `stack` keep for backward: the dim, each input's extent along it
/// (`None`: a legacy empty 1-d input that `cat` skips) and dtype.
#[derive(Clone, Debug)]
pub(crate) struct CatInfo {
    dim: usize,
    parts: Vec<(Option<(usize, usize)>, DType)>,
    stack: bool,
}

fn cat_error(message: String) -> Error {
    Error::InvalidArgument(message)
}

/// The layout of the diagonal `offset` of dims `dim1`, `dim2` of a tensor with this
/// shape, strides and storage offset (the diagonal becomes the last dim).
fn diagonal_layout(
    shape: &[usize],
    strides: &[usize],
    base: usize,
    offset: i64,
    dim1: usize,
    dim2: usize,
) -> Layout {
    let (n1, n2) = (shape[dim1] as i64, shape[dim2] as i64);
    let len = if offset >= 0 {
        n1.min(n2.saturating_sub(offset)).max(0)
    } else {
        n1.saturating_add(offset).min(n2).max(0)
    } as usize;
    let start = if len == 0 {
        base
    } else if offset >= 0 {
        base + offset as usize * strides[dim2]
    } else {
        base + (-offset) as usize * strides[dim1]
    };
    let mut out_shape: Dims = Dims::new();
    let mut out_strides: Dims = Dims::new();
    for d in 0..shape.len() {
        if d != dim1 && d != dim2 {
            out_shape.push(shape[d]);
            out_strides.push(strides[d]);
        }
    }
    out_shape.push(len);
    out_strides.push(strides[dim1] + strides[dim2]);
    Layout::new(out_shape, out_strides, start)
}

fn two_dims(dim1: i64, dim2: i64, nd: usize) -> Result<(usize, usize)> {
    let (d1, d2) = (shape::wrap_dim(dim1, nd)?, shape::wrap_dim(dim2, nd)?);
    if d1 == d2 {
        return Err(Error::InvalidArgument(format!(
            "diagonal dimensions cannot be identical {dim1}, {dim2}"
        )));
    }
    Ok((d1, d2))
}

impl Variable {
    /// Concatenates tensors along `dim` (PyTorch's `cat`; dtypes promote, and legacy
    /// empty 1-d tensors are skipped).
    pub fn cat(tensors: &[Variable], dim: i64) -> Result<Variable> {
        let Some(reference) = tensors.iter().find(|t| t.shape().as_slice() != [0]) else {
            let Some(first) = tensors.first() else {
                return Err(cat_error(
                    "torch.cat(): expected a non-empty list of Tensors".into(),
                ));
            };
            let dtype = tensors
                .iter()
                .fold(first.dtype(), |a, t| DType::promote(a, t.dtype()));
            shape::wrap_dim(dim, 1)?;
            return Variable::join(tensors, Tensor::zeros(&[0], dtype)?, 0, false);
        };
        for (i, t) in tensors.iter().enumerate() {
            if t.dim() == 0 {
                return Err(cat_error(format!(
                    "zero-dimensional tensor (at position {i}) cannot be concatenated"
                )));
            }
        }
        let rshape = reference.shape();
        let d = shape::wrap_dim(dim, rshape.len())?;
        let mut out_shape = rshape.clone();
        out_shape[d] = 0;
        let mut dtype = reference.dtype();
        for (i, t) in tensors.iter().enumerate() {
            dtype = DType::promote(dtype, t.dtype());
            let s = t.shape();
            if s.as_slice() == [0] {
                continue;
            }
            if s.len() != rshape.len() {
                return Err(cat_error(format!(
                    "Tensors must have same number of dimensions: got {} and {}",
                    rshape.len(),
                    s.len()
                )));
            }
            for k in 0..s.len() {
                if k != d && s[k] != rshape[k] {
                    return Err(cat_error(format!(
                        "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                        rshape[k], s[k]
                    )));
                }
            }
            out_shape[d] = out_shape[d].checked_add(s[d]).ok_or(Error::NumelOverflow)?;
        }
        crate::tensor::check_allocation(shape::checked_numel(&out_shape)?, dtype)?;
        Variable::join(tensors, Tensor::zeros(&out_shape, dtype)?, d, false)
    }

    /// Stacks equally shaped tensors along a new dim `dim`.
    pub fn stack(tensors: &[Variable], dim: i64) -> Result<Variable> {
        let Some(first) = tensors.first() else {
            return Err(cat_error("stack expects a non-empty TensorList".into()));
        };
        let shape0 = first.shape();
        for (i, t) in tensors.iter().enumerate() {
            if t.shape() != shape0 {
                return Err(cat_error(format!(
                    "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
                    shape0.as_slice(),
                    t.shape().as_slice()
                )));
            }
        }
        let d = shape::wrap_insert_dim(dim, shape0.len())?;
        let mut out_shape = shape0.clone();
        out_shape.insert(d, tensors.len());
        let dtype = tensors
            .iter()
            .fold(first.dtype(), |a, t| DType::promote(a, t.dtype()));
        crate::tensor::check_allocation(shape::checked_numel(&out_shape)?, dtype)?;
        Variable::join(tensors, Tensor::zeros(&out_shape, dtype)?, d, true)
    }

    /// Writes the inputs one after the other along `dim` of `out` (checked shapes) and
    /// records `cat` / `stack`.
    fn join(tensors: &[Variable], out: Tensor, dim: usize, stack: bool) -> Result<Variable> {
        let mut parts = Vec::with_capacity(tensors.len());
        let mut start = 0usize;
        for t in tensors {
            let tensor = t.tensor();
            if !stack && t.shape().as_slice() == [0] && out.dim() != 1 {
                parts.push((None, t.dtype()));
                continue;
            }
            let len = if stack { 1 } else { t.shape()[dim] };
            let place = out.slice(
                dim as i64,
                Some(start as i64),
                Some((start + len) as i64),
                1,
            )?;
            let src = if stack {
                tensor.unsqueeze(dim as i64)?
            } else {
                tensor.clone()
            };
            place.copy_from(&src, WriteSite::Rust(Location::caller()))?;
            parts.push((Some((start, len)), t.dtype()));
            start += len;
        }
        let inputs: Vec<&Variable> = tensors.iter().collect();
        Ok(Variable::record(out, &inputs, |_, _| {
            (
                Rule::Cat(Box::new(CatInfo { dim, parts, stack })),
                smallvec![],
            )
        }))
    }

    /// Splits into pieces of `split_size` along `dim` (the last may be smaller): views.
    pub fn split(&self, split_size: i64, dim: i64) -> Result<Vec<Variable>> {
        if self.dim() == 0 {
            return Err(Error::InvalidArgument(
                "split expects at least a 1-dimensional tensor".into(),
            ));
        }
        let d = shape::wrap_dim(dim, self.dim())?;
        let n = self.shape()[d] as i64;
        if split_size < 0 {
            return Err(Error::InvalidArgument(format!(
                "split expects split_size be non-negative, but got split_size={split_size}"
            )));
        }
        if split_size == 0 && n != 0 {
            return Err(Error::InvalidArgument(format!(
                "split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )));
        }
        let count = if split_size == 0 || split_size >= n {
            1
        } else {
            (n + split_size - 1) / split_size
        };
        let sizes: Vec<i64> = (0..count)
            .map(|i| split_size.min(n - i * split_size))
            .collect();
        self.split_pieces(&sizes, d, false)
    }

    /// Splits into pieces of the given sizes along `dim` (they must sum to its size).
    pub fn split_with_sizes(&self, sizes: &[i64], dim: i64) -> Result<Vec<Variable>> {
        if self.dim() == 0 {
            return Err(Error::InvalidArgument(
                "split expects at least a 1-dimensional tensor".into(),
            ));
        }
        let d = shape::wrap_dim(dim, self.dim())?;
        let n = self.shape()[d] as i64;
        if sizes.iter().any(|&s| s < 0) {
            return Err(Error::InvalidArgument(format!(
                "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={sizes:?}"
            )));
        }
        if sizes.iter().try_fold(0i64, |a, &s| a.checked_add(s)) != Some(n) {
            return Err(Error::InvalidArgument(format!(
                "split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), but got split_sizes={sizes:?}"
            )));
        }
        self.split_pieces(sizes, d, true)
    }

    /// The pieces of `sizes` (checked to sum to the size of `dim`) as views recorded by
    /// one node: SplitWithSizesBackward0 if `with_sizes`, else SplitBackward0.
    fn split_pieces(&self, sizes: &[i64], dim: usize, with_sizes: bool) -> Result<Vec<Variable>> {
        let mut pieces = Vec::new();
        pieces
            .try_reserve_exact(sizes.len())
            .map_err(|_| Error::OutOfMemory {
                bytes: sizes.len().saturating_mul(std::mem::size_of::<Variable>()),
            })?;
        let tensor = self.tensor();
        let mut start = 0;
        for &s in sizes {
            pieces.push(tensor.slice(dim as i64, Some(start), Some(start + s), 1)?);
            start += s;
        }
        drop(tensor);
        Ok(self.record_multi_view(pieces, || {
            Rule::Split(Box::new(SplitInfo {
                input: shape_of(self),
                dim,
                sizes: sizes.iter().map(|&s| s as usize).collect(),
                with_sizes,
            }))
        }))
    }

    /// Splits into `chunks` pieces of equal size along `dim` (the last may be smaller;
    /// fewer pieces when the size does not allow that many).
    pub fn chunk(&self, chunks: i64, dim: i64) -> Result<Vec<Variable>> {
        if self.dim() == 0 {
            return Err(Error::InvalidArgument(
                "chunk expects at least a 1-dimensional tensor".into(),
            ));
        }
        if chunks <= 0 {
            return Err(Error::InvalidArgument(format!(
                "chunk expects `chunks` to be greater than 0, got: {chunks}"
            )));
        }
        let d = shape::wrap_dim(dim, self.dim())?;
        let n = self.shape()[d] as i64;
        let size = if chunks >= n {
            n.min(1)
        } else {
            (n + chunks - 1) / chunks
        };
        if size == 0 {
            // PyTorch: an empty dim gives `chunks` empty pieces, by split_with_sizes.
            let mut sizes = Vec::new();
            sizes
                .try_reserve_exact(chunks as usize)
                .map_err(|_| Error::OutOfMemory {
                    bytes: (chunks as usize).saturating_mul(std::mem::size_of::<i64>()),
                })?;
            sizes.resize(chunks as usize, 0);
            return self.split_pieces(&sizes, d, true);
        }
        self.split(size, dim)
    }

    /// The slices along `dim`, with the dim removed (views).
    pub fn unbind(&self, dim: i64) -> Result<Vec<Variable>> {
        let d = shape::wrap_dim_strict(dim, self.dim())?;
        let tensor = self.tensor();
        let slices = (0..self.shape()[d])
            .map(|i| tensor.select(d as i64, i as i64))
            .collect::<Result<Vec<Tensor>>>()?;
        drop(tensor);
        Ok(self.record_multi_view(slices, || Rule::Unbind(Box::new((shape_of(self), d)))))
    }

    /// `length` elements of `dim` from `start` (a view).
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Variable> {
        if self.dim() == 0 {
            return Err(Error::InvalidArgument(
                "narrow() cannot be applied to a 0-dim tensor.".into(),
            ));
        }
        if length < 0 {
            return Err(Error::InvalidArgument(
                "narrow(): length must be non-negative.".into(),
            ));
        }
        let d = shape::wrap_dim(dim, self.dim())?;
        let size = self.shape()[d] as i64;
        if start < -size || start > size {
            return Err(Error::Index(format!(
                "start out of range (expected to be in range of [{}, {size}], but got {start})",
                -size
            )));
        }
        let start = if start < 0 { start + size } else { start };
        if start.checked_add(length).is_none_or(|end| end > size) {
            return Err(Error::InvalidArgument(format!(
                "start ({start}) + length ({length}) exceeds dimension size ({size})."
            )));
        }
        self.slice(d as i64, Some(start), Some(start + length), 1)
    }

    /// Reverses the order of elements along `dims` (a copy).
    pub fn flip(&self, dims: &[i64]) -> Result<Variable> {
        let shape = self.shape();
        let mut flipped = vec![false; shape.len().max(1)];
        for &dim in dims {
            let d = shape::wrap_dim(dim, shape.len())?;
            if flipped[d] {
                return Err(Error::InvalidArgument(format!(
                    "dim {d} appears multiple times in the list of dims"
                )));
            }
            flipped[d] = true;
        }
        // The tables are user-sized (a dim of 2**40 of an expanded view): allocated
        // fallibly (Note [Allocation failures]).
        let tables: Vec<Vec<usize>> = shape
            .iter()
            .zip(&flipped)
            .map(|(&n, &f)| {
                if f {
                    crate::kernels::try_collect((0..n).rev())
                } else {
                    crate::kernels::try_collect(0..n)
                }
            })
            .collect::<Result<_>>()?;
        self.take_map(IndexMap::separable(&shape, &tables)?, Taken::Flip)
    }

    /// Rolls elements along `dims` by `shifts` (of the flattened tensor when `dims` is
    /// empty).
    pub fn roll(&self, shifts: &[i64], dims: &[i64]) -> Result<Variable> {
        let shape = self.shape();
        let roll_table = |n: usize, shift: i64| -> Result<Vec<usize>> {
            if n == 0 {
                return Ok(vec![]);
            }
            let s = shift.rem_euclid(n as i64) as usize;
            crate::kernels::try_collect((0..n).map(|i| (i + n - s) % n))
        };
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::InvalidArgument(format!(
                    "shifts and dimensions must align. shifts: {}, dims:0",
                    shifts.len()
                )));
            }
            let flat = roll_table(self.numel(), shifts[0])?;
            let map = IndexMap::new(shape.clone(), shape, flat)?;
            return self.take_map(map, Taken::Roll);
        }
        if shifts.len() != dims.len() {
            return Err(Error::InvalidArgument(format!(
                "shifts and dimensions must align. shifts: {}, dims:{}",
                shifts.len(),
                dims.len()
            )));
        }
        let mut total = vec![0i64; shape.len().max(1)];
        for (&s, &dim) in shifts.iter().zip(dims) {
            let d = shape::wrap_dim(dim, shape.len())?;
            total[d] =
                total[d].wrapping_add(s % (shape.get(d).copied().unwrap_or(1).max(1) as i64));
        }
        let tables: Vec<Vec<usize>> = shape
            .iter()
            .enumerate()
            .map(|(d, &n)| roll_table(n, total[d]))
            .collect::<Result<_>>()?;
        self.take_map(IndexMap::separable(&shape, &tables)?, Taken::Roll)
    }

    /// Repeats the tensor `sizes[d]` times along each dim (new leading dims allowed).
    pub fn repeat(&self, sizes: &[i64]) -> Result<Variable> {
        if sizes.len() < self.dim() {
            return Err(Error::InvalidArgument(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor".into(),
            ));
        }
        if sizes.iter().any(|&s| s < 0) {
            return Err(Error::InvalidArgument(format!(
                "Trying to create tensor with negative dimension {}: {sizes:?}",
                sizes.iter().find(|&&s| s < 0).copied().unwrap_or(-1)
            )));
        }
        let mut padded: Vec<i64> = vec![1; sizes.len() - self.dim()];
        padded.extend(self.shape().iter().map(|&s| s as i64));
        let src = self.reshape(&padded)?;
        let padded: Dims = padded.iter().map(|&s| s as usize).collect();
        let out: Dims = padded
            .iter()
            .zip(sizes)
            .map(|(&n, &r)| n.checked_mul(r as usize).ok_or(Error::NumelOverflow))
            .collect::<Result<Dims>>()?;
        // Checked before the per-dim tables (as long as the output's dims) are built.
        crate::tensor::check_allocation(shape::checked_numel(&out)?, self.dtype())?;
        let tables: Vec<Vec<usize>> = padded
            .iter()
            .zip(&out)
            .map(|(&n, &len)| (0..len).map(|i| i % n.max(1)).collect())
            .collect();
        src.take_map(IndexMap::separable(&padded, &tables)?, Taken::Repeat)
    }

    /// The lower (`upper` false) or upper triangle of the last two dims, relative to
    /// the `diagonal`-th diagonal; the rest is zero.
    pub fn tril_triu(&self, diagonal: i64, upper: bool) -> Result<Variable> {
        let name = if upper { "triu" } else { "tril" };
        let nd = self.dim();
        if nd < 2 {
            return Err(Error::InvalidArgument(format!(
                "{name}: input tensor must have at least 2 dimensions"
            )));
        }
        let (rows, cols) = (self.shape()[nd - 2], self.shape()[nd - 1]);
        let mut mask = crate::kernels::try_vec(rows * cols, false)?;
        for i in 0..rows {
            for j in 0..cols {
                let k = j as i64 - i as i64;
                mask[i * cols + j] = if upper { k >= diagonal } else { k <= diagonal };
            }
        }
        let mask = Tensor::from_vec(mask, &[rows, cols])?;
        let zero = Tensor::scalar(0.0, self.dtype());
        let result = Tensor::where_cond(&mask, &self.tensor(), &zero)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::Tril { diagonal, upper }, smallvec![])
        }))
    }

    /// The diagonal `offset` of dims `dim1`, `dim2`, as a view whose last dim it is.
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Variable> {
        let (d1, d2) = two_dims(dim1, dim2, self.dim())?;
        if self.dim() < 2 {
            return Err(Error::DimOutOfRange {
                dim: dim1.max(dim2),
                min: -1,
                max: 0,
            });
        }
        let t = self.tensor();
        let layout = diagonal_layout(t.shape(), t.strides(), t.layout().offset(), offset, d1, d2);
        let result = t.strided_view(layout)?;
        let shape = self.shape();
        let within = diagonal_layout(&shape, &contiguous_strides(&shape), 0, offset, d1, d2);
        let map = IndexMap::of_layout(&shape, &within)?;
        Ok(self.record_view(result, || index::Rule::Take {
            name: Taken::Diagonal,
            map,
        }))
    }

    /// Tensors whose diagonal (`offset`, dims `dim1`, `dim2` of the result) holds the
    /// last dim of `self`; zeros elsewhere.
    pub fn diag_embed(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Variable> {
        let nd = self.dim() + 1;
        let (d1, d2) = two_dims(dim1, dim2, nd)?;
        let shape = self.shape();
        let n = shape.last().copied().unwrap_or(1);
        let m = n
            .checked_add(offset.unsigned_abs() as usize)
            .ok_or(Error::NumelOverflow)?;
        let mut batch = shape.iter().copied();
        let batch_len = shape.len().saturating_sub(1);
        let mut out_shape: Dims = Dims::new();
        let mut taken = 0;
        for d in 0..nd {
            if d == d1 || d == d2 {
                out_shape.push(m);
            } else if taken < batch_len {
                out_shape.push(batch.next().unwrap_or(1));
                taken += 1;
            }
        }
        shape::checked_storage_bytes(&out_shape, self.dtype().size_in_bytes())?;
        crate::tensor::check_allocation(shape::checked_numel(&out_shape)?, self.dtype())?;
        let within = diagonal_layout(
            &out_shape,
            &contiguous_strides(&out_shape),
            0,
            offset,
            d1,
            d2,
        );
        let source = if self.dim() == 0 {
            self.reshape(&[1])?
        } else {
            self.clone()
        };
        let map = IndexMap::of_layout(&out_shape, &within)?;
        let zeros = Variable::from_tensor(Tensor::zeros(&out_shape, self.dtype())?);
        zeros.scatter_map(&source, map, None, true, Scattered::DiagEmbed)
    }

    /// PyTorch's `diag`: a 1-d tensor becomes a square matrix with it on diagonal
    /// `diagonal`; a matrix gives that diagonal (a copy).
    pub fn diag(&self, diagonal: i64) -> Result<Variable> {
        match self.dim() {
            1 => self.diag_embed(diagonal, 0, 1),
            2 => {
                let shape = self.shape();
                let within =
                    diagonal_layout(&shape, &contiguous_strides(&shape), 0, diagonal, 0, 1);
                self.take_map(IndexMap::of_layout(&shape, &within)?, Taken::Diagonal)
            }
            n => Err(Error::InvalidArgument(format!(
                "diag(): Supports 1D or 2D tensors. Got {n}D"
            ))),
        }
    }

    /// Moves dims `source` to positions `destination`, keeping the others in order.
    pub fn movedim(&self, source: &[i64], destination: &[i64]) -> Result<Variable> {
        let nd = self.dim();
        if source.len() != destination.len() {
            return Err(Error::InvalidArgument(format!(
                "movedim: Invalid source or destination dims: source ({source:?} dims) should contain the same number of dims as destination ({destination:?} dims)"
            )));
        }
        let wrap = |dims: &[i64], what: &str| -> Result<Vec<usize>> {
            let w = dims
                .iter()
                .map(|&d| shape::wrap_dim(d, nd))
                .collect::<Result<Vec<usize>>>()?;
            let mut seen = vec![false; nd.max(1)];
            for &d in &w {
                if std::mem::replace(&mut seen[d], true) {
                    return Err(Error::InvalidArgument(format!(
                        "movedim: repeated dim in `{what}` ({dims:?})"
                    )));
                }
            }
            Ok(w)
        };
        let (src, dst) = (wrap(source, "source")?, wrap(destination, "destination")?);
        if nd == 0 {
            return self.permute(&[]);
        }
        let mut order: Vec<Option<usize>> = vec![None; nd];
        for (&s, &d) in src.iter().zip(&dst) {
            order[d] = Some(s);
        }
        let mut rest = (0..nd).filter(|d| !src.contains(d));
        let perm: Vec<i64> = order
            .into_iter()
            .map(|o| o.or_else(|| rest.next()).unwrap_or(0) as i64)
            .collect();
        self.permute(&perm)
    }

    /// Windows of `size` elements of `dim`, `step` apart, as a new last dim (a view).
    pub fn unfold(&self, dimension: i64, size: i64, step: i64) -> Result<Variable> {
        if self.dim() == 0 {
            // PyTorch: a 0-d tensor unfolds into its one element (size 0 or 1).
            shape::wrap_dim(dimension, 0)?;
            if !(0..=1).contains(&size) {
                return Err(Error::InvalidArgument(format!(
                    "maximum size for tensor at dimension 0 is 1 but size is {size}"
                )));
            }
            if step <= 0 {
                return Err(Error::InvalidArgument(format!(
                    "step is {step} but must be > 0"
                )));
            }
            return self.reshape(&[1])?.narrow(0, 0, size);
        }
        let t = self.tensor();
        let (shape, strides): (Dims, Dims) = (t.shape().into(), t.strides().into());
        let d = shape::wrap_dim(dimension, self.dim())?;
        if size < 0 || size as usize > shape[d] {
            return Err(Error::InvalidArgument(format!(
                "maximum size for tensor at dimension {d} is {} but size is {size}",
                shape[d]
            )));
        }
        if step <= 0 {
            return Err(Error::InvalidArgument(format!(
                "step is {step} but must be > 0"
            )));
        }
        let (size, step) = (size as usize, step as usize);
        let windows = (shape[d] - size) / step + 1;
        let make = |mut shape: Dims, mut strides: Dims, offset: usize| {
            let stride = strides[d];
            shape[d] = windows;
            strides[d] = stride.saturating_mul(step);
            shape.push(size);
            strides.push(stride);
            Layout::new(shape, strides, offset)
        };
        let layout = make(shape.clone(), strides, t.layout().offset());
        let result = t.strided_view(layout)?;
        // The backward's positions (one per element of the view) only when the view can
        // be recorded (`record` needs grad mode and an input that requires grad): an
        // unfold of a huge expanded view is a view, as in PyTorch, unless it records
        // (Note [Allocation failures]).
        let map = if crate::autograd::grad_mode::is_grad_enabled() && self.requires_grad() {
            let within = make(shape.clone(), contiguous_strides(&shape), 0);
            IndexMap::of_layout(&self.shape(), &within)?
        } else {
            // Never read: `record` does not build the node without the conditions above.
            std::sync::Arc::new(IndexMap {
                src: Dims::new(),
                out: Dims::new(),
                positions: Vec::new(),
            })
        };
        Ok(self.record_view(result, || index::Rule::Take {
            name: Taken::Unfold,
            map,
        }))
    }

    /// Repeats each element `repeats[i]` times along `dim` (of the flattened tensor
    /// when `dim` is `None`); `repeats` has one entry, or one per element of `dim`.
    pub fn repeat_interleave(&self, repeats: &[i64], dim: Option<i64>) -> Result<Variable> {
        let (src, d) = match dim {
            None => (self.reshape(&[-1])?, 0usize),
            Some(dim) => (self.clone(), shape::wrap_dim(dim, self.dim())?),
        };
        let src = if src.dim() == 0 {
            src.reshape(&[1])?
        } else {
            src
        };
        let shape = src.shape();
        let n = shape[d];
        if repeats.len() != 1 && repeats.len() != n {
            return Err(Error::InvalidArgument(format!(
                "repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size({d}) = {n}",
                repeats.len()
            )));
        }
        if repeats.iter().any(|&r| r < 0) {
            return Err(Error::InvalidArgument(
                "Repeats must be non-negative".into(),
            ));
        }
        let repeat = |i: usize| repeats[if repeats.len() == 1 { 0 } else { i }] as usize;
        // The output length first, so that a huge one is refused before the table is
        // built (Note [Allocation failures]).
        let total = if repeats.len() == 1 {
            n.saturating_mul(repeat(0))
        } else {
            repeats
                .iter()
                .fold(0usize, |t, &r| t.saturating_add(r as usize))
        };
        let mut out = shape.clone();
        out[d] = total;
        crate::tensor::check_allocation(shape::checked_numel(&out)?, DType::I64)?;
        let mut table = crate::kernels::try_with_capacity(total)?;
        for i in 0..n {
            table.extend(std::iter::repeat_n(i, repeat(i)));
        }
        let mut tables: Vec<Vec<usize>> = Vec::with_capacity(shape.len());
        for (k, &s) in shape.iter().enumerate() {
            tables.push(if k == d {
                std::mem::take(&mut table)
            } else {
                crate::kernels::try_collect(0..s)?
            });
        }
        src.take_map(IndexMap::separable(&shape, &tables)?, Taken::IndexSelect)
    }
}
