//! Reductions: sum and mean over all or some dims, and `sum_to_size` (the reduction a
//! broadcast gradient needs).
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{ints, Grads};
use crate::error::{Error, Result};
use crate::shape::{self, Dims};
use crate::tensor::{BinaryOp, Tensor};
use crate::variable::Variable;
use smallvec::{smallvec, SmallVec};

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// Sum over all dims (`dims: None`) or some dims.
    Sum(Box<Reduction>),
    /// Mean over all dims (`dims: None`) or some dims, of `count` elements each.
    Mean(Box<Reduction>),
}

/// What the backward of a reduction needs (boxed: it holds two shapes).
#[derive(Clone, Debug)]
pub(crate) struct Reduction {
    input: Dims,
    dims: Option<Dims>,
    keepdim: bool,
    /// The number of elements reduced into each output element (for the mean).
    count: usize,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Sum(r) if r.dims.is_none() => "SumBackward0",
            Rule::Sum(_) => "SumBackward1",
            Rule::Mean(r) if r.dims.is_none() => "MeanBackward0",
            Rule::Mean(_) => "MeanBackward1",
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
            Rule::Sum(r) => smallvec![Some(expand_reduced(g, &r.input, &r.dims, r.keepdim)?)],
            Rule::Mean(r) => {
                let expanded = expand_reduced(g, &r.input, &r.dims, r.keepdim)?;
                smallvec![Some(expanded.div_scalar(r.count as f64)?)]
            }
        })
    }
}

impl Variable {
    fn reduce_dims(&self, dims: Option<&[i64]>) -> Result<Dims> {
        match dims {
            None => Ok((0..self.dim()).collect()),
            // PyTorch: an empty dim list reduces over every dim, like no dim at all.
            Some([]) => Ok((0..self.dim()).collect()),
            Some(ds) => {
                let mut out: Dims = SmallVec::new();
                for &d in ds {
                    let w = shape::wrap_dim(d, self.dim())?;
                    if out.contains(&w) {
                        return Err(Error::InvalidArgument(format!(
                            "dim {w} appears multiple times in the list of dims"
                        )));
                    }
                    out.push(w);
                }
                // A 0-d tensor reduced over dim 0 / -1 reduces nothing.
                if self.dim() == 0 {
                    out.clear();
                }
                Ok(out)
            }
        }
    }

    /// Sum of all elements (a 0-d variable).
    pub fn sum(&self) -> Result<Variable> {
        self.sum_impl(None, false)
    }

    /// Sum over `dims` (negative dims allowed), keeping them as size 1 if `keepdim`.
    pub fn sum_dims(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        self.sum_impl(Some(dims), keepdim)
    }

    fn sum_impl(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        let wrapped = self.reduce_dims(dims)?;
        let result = self.tensor().sum_dims(&wrapped, keepdim)?;
        Ok(Variable::record(result, &[self], |_, _| {
            let reduction = Reduction {
                input: self.shape(),
                dims: dims.map(|_| wrapped.clone()),
                keepdim,
                count: 0,
            };
            (Rule::Sum(Box::new(reduction)), smallvec![])
        }))
    }

    /// Mean of all elements.
    pub fn mean(&self) -> Result<Variable> {
        self.mean_impl(None, false)
    }

    /// Mean over `dims`, keeping them as size 1 if `keepdim`.
    pub fn mean_dims(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        self.mean_impl(Some(dims), keepdim)
    }

    fn mean_impl(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        if !self.dtype().is_floating_point() {
            return Err(Error::dtype("mean", format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                self.dtype().scalar_type_name()
            )));
        }
        let wrapped = self.reduce_dims(dims)?;
        let count: usize = wrapped.iter().map(|&d| self.shape()[d]).product();
        let sum = self.tensor().sum_dims(&wrapped, keepdim)?;
        let result = sum.binary(&Tensor::scalar(count as f64, self.dtype()), BinaryOp::Div)?;
        Ok(Variable::record(result, &[self], |_, _| {
            let reduction = Reduction {
                input: self.shape(),
                dims: dims.map(|_| wrapped.clone()),
                keepdim,
                count,
            };
            (Rule::Mean(Box::new(reduction)), smallvec![])
        }))
    }

    /// Reduces a broadcast gradient back to `shape` by summing.
    pub fn sum_to_size(&self, shape: &[usize]) -> Result<Variable> {
        if self.shape().as_slice() == shape {
            return Ok(self.clone());
        }
        let lead = self.dim().saturating_sub(shape.len());
        let mut dims: Vec<i64> = (0..lead as i64).collect();
        for (i, &s) in shape.iter().enumerate() {
            if s == 1 && self.shape().get(lead + i) != Some(&1) {
                dims.push((lead + i) as i64);
            }
        }
        let target: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        if dims.is_empty() {
            // Nothing to sum (an empty dim list would mean "all dims").
            return self.reshape(&target);
        }
        self.sum_dims(&dims, true)?.reshape(&target)
    }
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
