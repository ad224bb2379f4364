//! Shape and movement ops that return views: view, reshape, transpose, t, permute,
//! expand, unsqueeze, squeeze, alias.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{ints, shape_of, Grads, Shape};
use crate::error::Result;
use crate::shape::{self};
use crate::variable::Variable;
use smallvec::smallvec;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// A view or reshape to another shape. `copied` is a reshape that had to copy.
    View { input: Shape, copied: bool },
    /// `transpose(dim0, dim1)`; `t` names the `.t()` form.
    Transpose { dim0: usize, dim1: usize, t: bool },
    /// `permute(dims)`.
    Permute { dims: Shape },
    /// `expand(...)` of an input of shape `input`.
    Expand { input: Shape },
    /// `unsqueeze(dim)`.
    Unsqueeze { dim: usize },
    /// `squeeze()` / `squeeze(dim)` of an input of shape `input`.
    Squeeze { input: Shape, all: bool },
    /// A view of the whole tensor (`x[...]`).
    Alias,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::View { copied: false, .. } => "ViewBackward0",
            Rule::View { copied: true, .. } => "UnsafeViewBackward0",
            Rule::Transpose { t: false, .. } => "TransposeBackward0",
            Rule::Transpose { t: true, .. } => "TBackward0",
            Rule::Permute { .. } => "PermuteBackward0",
            Rule::Expand { .. } => "ExpandBackward0",
            Rule::Unsqueeze { .. } => "UnsqueezeBackward0",
            Rule::Squeeze { all: true, .. } => "SqueezeBackward0",
            Rule::Squeeze { all: false, .. } => "SqueezeBackward1",
            Rule::Alias => "AliasBackward0",
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output; `needs[i]`
    /// says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        _saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let _ = needs;
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
            Rule::Unsqueeze { dim } => smallvec![Some(g.squeeze_dim(*dim as i64)?)],
            Rule::Alias => smallvec![Some(g.clone())],
        })
    }
}

impl Variable {
    /// A view with another shape (one size may be -1).
    pub fn view(&self, shape: &[i64]) -> Result<Variable> {
        let result = self.tensor().view(shape)?;
        Ok(self.record_view(result, || Rule::View {
            input: shape_of(self),
            copied: false,
        }))
    }

    /// Like `view`, copying when the strides do not allow a view.
    pub fn reshape(&self, shape: &[i64]) -> Result<Variable> {
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
    }

    /// Swaps two dims.
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Variable> {
        let result = self.tensor().transpose(dim0, dim1)?;
        let nd = self.dim();
        let (d0, d1) = (shape::wrap_dim(dim0, nd)?, shape::wrap_dim(dim1, nd)?);
        Ok(self.record_view(result, || Rule::Transpose {
            dim0: d0,
            dim1: d1,
            t: false,
        }))
    }

    /// Transpose of a tensor with at most 2 dims.
    pub fn t(&self) -> Result<Variable> {
        let result = self.tensor().t()?;
        let (d0, d1) = if self.dim() == 2 { (0, 1) } else { (0, 0) };
        Ok(self.record_view(result, || Rule::Transpose {
            dim0: d0,
            dim1: d1,
            t: true,
        }))
    }

    /// Reorders dims.
    pub fn permute(&self, dims: &[i64]) -> Result<Variable> {
        let result = self.tensor().permute(dims)?;
        let wrapped = dims
            .iter()
            .map(|&d| shape::wrap_dim(d, self.dim()))
            .collect::<Result<Shape>>()?;
        Ok(self.record_view(result, || Rule::Permute { dims: wrapped }))
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
        let result = self.tensor().unsqueeze(dim)?;
        let d = shape::wrap_insert_dim(dim, self.dim())?;
        Ok(self.record_view(result, || Rule::Unsqueeze { dim: d }))
    }

    /// Removes every size-1 dim.
    pub fn squeeze(&self) -> Result<Variable> {
        let result = self.tensor().squeeze();
        Ok(self.record_view(result, || Rule::Squeeze {
            input: shape_of(self),
            all: true,
        }))
    }

    /// Removes `dim` if it has size 1.
    pub fn squeeze_dim(&self, dim: i64) -> Result<Variable> {
        let result = self.tensor().squeeze_dim(dim)?;
        Ok(self.record_view(result, || Rule::Squeeze {
            input: shape_of(self),
            all: false,
        }))
    }

    /// A view of the whole tensor (`x[...]`, `x[()]`): a distinct variable, so changing
    /// its autograd state (`requires_grad_`, `detach_`, `.grad`) leaves `self` alone.
    pub fn alias(&self) -> Variable {
        self.record_view(self.tensor().clone(), || Rule::Alias)
    }
}
