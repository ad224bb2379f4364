//! Linear algebra: matmul with PyTorch's broadcasting rules.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{saved_at, Grads};
use crate::autograd::saved::SavedTensor;
use crate::error::{Error, Result};
use crate::shape::Dims;
use crate::variable::Variable;
use smallvec::smallvec;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// Matrix product; saved `[a if b needs grad, b if a needs grad]`. `batched`
    /// distinguishes BmmBackward0 from MmBackward0.
    Matmul {
        /// The shapes of `a` and `b` (boxed: two shapes).
        shapes: Box<[Dims; 2]>,
        batched: bool,
    },
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Matmul { batched: false, .. } => "MmBackward0",
            Rule::Matmul { batched: true, .. } => "BmmBackward0",
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output; `needs[i]`
    /// says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        let g = grad;
        Ok(match self {
            Rule::Matmul { shapes, .. } => {
                let [a, b] = &**shapes;
                smallvec![
                    if need(0) {
                        Some(
                            g.matmul(&saved_at(saved, 1)?.transpose(-1, -2)?)?
                                .sum_to_size(a)?,
                        )
                    } else {
                        None
                    },
                    if need(1) {
                        Some(
                            saved_at(saved, 0)?
                                .transpose(-1, -2)?
                                .matmul(g)?
                                .sum_to_size(b)?,
                        )
                    } else {
                        None
                    },
                ]
            }
        })
    }
}

impl Variable {
    /// Matrix product with PyTorch's `matmul` semantics (1-D operands are promoted and
    /// the added dim removed; batch dims broadcast).
    pub fn matmul(&self, other: &Variable) -> Result<Variable> {
        match (self.dim(), other.dim()) {
            (0, _) | (_, 0) => Err(Error::InvalidArgument(format!(
                "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
                self.dim(),
                other.dim()
            ))),
            (1, 1) => {
                if self.shape() != other.shape() {
                    return Err(Error::ShapeMismatch {
                        op: "dot",
                        message: format!(
                            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                            self.numel(), other.numel(), self.numel(), other.numel()
                        ),
                    });
                }
                self.unsqueeze(0)?
                    .matmul(&other.unsqueeze(1)?)?
                    .reshape(&[])
            }
            (1, _) => self.unsqueeze(0)?.matmul(other)?.squeeze_dim(-2),
            (_, 1) => self.matmul(&other.unsqueeze(1)?)?.squeeze_dim(-1),
            (da, db) => {
                let result = self.tensor().matmul_nd(&other.tensor())?;
                let batched = da > 2 || db > 2;
                Ok(Variable::record(result, &[self, other], |needs, _| {
                    let save_if = |cond: bool, v: &Variable| cond.then(|| SavedTensor::input(v));
                    let shapes = Box::new([self.shape(), other.shape()]);
                    (
                        Rule::Matmul { shapes, batched },
                        smallvec![save_if(needs[1], self), save_if(needs[0], other)],
                    )
                }))
            }
        }
    }
}
