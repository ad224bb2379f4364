//! Indexing views (slice, select, as_strided) and the scatters that are their backward.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::Grads;
use crate::error::Result;
use crate::layout::Layout;
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
    /// `input[..., start:end:step, ...]` along `dim`, of an input of the shape given.
    Slice(Box<(Dims, SliceRange)>),
    /// `input[..., index, ...]` along `dim`, of an input of the shape given.
    Select(Box<(Dims, usize, usize)>),
    /// The backward of `Slice` as an op (zero tensor with the slice filled), for double
    /// backward.
    SliceScatter(Box<SliceRange>),
    /// The backward of `Select` as an op.
    SelectScatter { dim: usize, index: usize },
    /// A view of a contiguous tensor of shape `base` through `layout` (how a view is
    /// re-derived from its base's current history).
    AsStrided(Box<(Dims, Layout)>),
    /// The backward of `AsStrided` as an op: zeros of the base shape with the view's
    /// elements filled.
    AsStridedScatter(Box<Layout>),
}

/// `start:end:step` along `dim`, with Python's bounds already clamped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SliceRange {
    pub dim: usize,
    pub start: usize,
    pub end: usize,
    pub step: usize,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Slice(_) => "SliceBackward0",
            Rule::Select(_) => "SelectBackward0",
            Rule::SliceScatter(_) => "SliceBackwardBackward0",
            Rule::SelectScatter { .. } => "SelectBackwardBackward0",
            Rule::AsStrided(_) => "AsStridedBackward0",
            Rule::AsStridedScatter(_) => "AsStridedScatterBackward0",
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
            Rule::Slice(slice) => {
                let (input, r) = &**slice;
                smallvec![Some(g.slice_scatter(input, r.dim, r.start, r.end, r.step)?)]
            }
            Rule::Select(select) => {
                let (input, dim, index) = &**select;
                smallvec![Some(g.select_scatter(input, *dim, *index)?)]
            }
            Rule::SliceScatter(r) => smallvec![Some(g.slice(
                r.dim as i64,
                Some(r.start as i64),
                Some(r.end as i64),
                r.step as i64
            )?)],
            Rule::SelectScatter { dim, index } => {
                smallvec![Some(g.select(*dim as i64, *index as i64)?)]
            }
            Rule::AsStrided(view) => {
                let (base, layout) = &**view;
                smallvec![Some(g.as_strided_scatter(base, layout)?)]
            }
            Rule::AsStridedScatter(layout) => smallvec![Some(g.as_strided(layout)?)],
        })
    }
}

impl Variable {
    /// `self[..., start:end:step, ...]` along `dim` (Python's bound clamping).
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Variable> {
        let result = self.tensor().slice(dim, start, end, step)?;
        let d = shape::wrap_dim(dim, self.dim())?;
        let (s, e) = self.tensor().slice_params(d, start, end);
        Ok(self.record_view(result, || {
            let range = SliceRange {
                dim: d,
                start: s,
                end: e,
                step: step as usize,
            };
            Rule::Slice(Box::new((self.shape(), range)))
        }))
    }

    /// `self[..., index, ...]` along `dim`, removing the dim.
    pub fn select(&self, dim: i64, index: i64) -> Result<Variable> {
        let result = self.tensor().select(dim, index)?;
        let d = shape::wrap_dim(dim, self.dim())?;
        let i = if index < 0 {
            index + self.shape()[d] as i64
        } else {
            index
        } as usize;
        Ok(self.record_view(result, || Rule::Select(Box::new((self.shape(), d, i)))))
    }

    /// A zero tensor of `shape` with `self` written into the slice (slice's backward).
    pub(crate) fn slice_scatter(
        &self,
        shape: &[usize],
        dim: usize,
        start: usize,
        end: usize,
        step: usize,
    ) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype());
        out.slice(
            dim as i64,
            Some(start as i64),
            Some(end as i64),
            step as i64,
        )?
        .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            let range = SliceRange {
                dim,
                start,
                end,
                step,
            };
            (Rule::SliceScatter(Box::new(range)), smallvec![])
        }))
    }

    /// A zero tensor of `shape` with `self` written at `index` of `dim` (select's backward).
    pub(crate) fn select_scatter(
        &self,
        shape: &[usize],
        dim: usize,
        index: usize,
    ) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype());
        out.select(dim as i64, index as i64)?
            .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            (Rule::SelectScatter { dim, index }, smallvec![])
        }))
    }

    /// The elements of this tensor (made contiguous) seen through `layout`.
    pub(crate) fn as_strided(&self, layout: &Layout) -> Result<Variable> {
        let c = self.contiguous()?;
        let result = c.tensor().as_strided(layout)?;
        Ok(Variable::record(result, &[&c], |_, _| {
            let view = Box::new((c.shape(), layout.clone()));
            (Rule::AsStrided(view), smallvec![])
        }))
    }

    /// Zeros of `shape` with `self` written at the elements `layout` selects.
    pub(crate) fn as_strided_scatter(&self, shape: &[usize], layout: &Layout) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype());
        out.as_strided(layout)?
            .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            (
                Rule::AsStridedScatter(Box::new(layout.clone())),
                smallvec![],
            )
        }))
    }
}
