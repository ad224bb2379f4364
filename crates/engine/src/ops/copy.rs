//! Copies: clone, contiguous and dtype conversion.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::Grads;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use crate::variable::Variable;
use smallvec::smallvec;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `clone()` / `contiguous()` copy.
    Clone,
    /// A dtype conversion from `from`.
    ToCopy { from: DType },
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Clone => "CloneBackward0",
            Rule::ToCopy { .. } => "ToCopyBackward0",
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
            Rule::Clone => smallvec![Some(g.clone())],
            Rule::ToCopy { from } => smallvec![Some(g.to_dtype(*from)?)],
        })
    }
}

impl Variable {
    /// A copy into new contiguous storage, differentiable.
    pub fn clone_data(&self) -> Result<Variable> {
        crate::tensor::check_allocation(self.numel(), self.dtype())?;
        self.record_clone(self.tensor().deep_clone()?)
    }

    /// `clone()` as PyTorch's default `memory_format=torch.preserve_format`: a dense
    /// tensor keeps its strides, any other is copied contiguous. Differentiable.
    pub fn clone_preserving_strides(&self) -> Result<Variable> {
        crate::tensor::check_allocation(self.numel(), self.dtype())?;
        self.record_clone(self.tensor().clone_preserving_strides()?)
    }

    fn record_clone(&self, result: Tensor) -> Result<Variable> {
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::Clone, smallvec![])
        }))
    }

    /// `self` when contiguous, else a differentiable contiguous copy.
    pub fn contiguous(&self) -> Result<Variable> {
        if self.tensor().is_contiguous() {
            return Ok(self.clone());
        }
        self.clone_data()
    }

    /// The values converted to `dtype`, differentiable between float dtypes.
    pub fn to_dtype(&self, dtype: DType) -> Result<Variable> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let result = self.tensor().to_dtype(dtype)?;
        let from = self.dtype();
        if !dtype.is_floating_point() {
            return Ok(Variable::from_tensor(result));
        }
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::ToCopy { from }, smallvec![])
        }))
    }

    /// `to(dtype, copy=True)`: the values converted to `dtype` in a new tensor even when
    /// the dtype is unchanged (strides kept, as `clone`), recorded as `ToCopyBackward0`
    /// like PyTorch's `_to_copy`.
    pub fn to_dtype_copy(&self, dtype: DType) -> Result<Variable> {
        if dtype != self.dtype() {
            return self.to_dtype(dtype);
        }
        crate::tensor::check_allocation(self.numel(), dtype)?;
        let result = self.tensor().clone_preserving_strides()?;
        if !dtype.is_floating_point() {
            return Ok(Variable::from_tensor(result));
        }
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::ToCopy { from: dtype }, smallvec![])
        }))
    }
}
