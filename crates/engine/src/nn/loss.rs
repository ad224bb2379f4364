//! The common losses as functions (`torch.nn.functional`), mean-reduced as PyTorch's
//! defaults; the engine's ops take the other reductions and options.

use crate::error::Result;
use crate::ops::loss::{PointwiseLoss, Reduction};
use crate::variable::Variable;

/// `F.cross_entropy(input, target)`: logits `(N, C)` (or `(N, C, d...)`) against
/// int64 class indices, or against class probabilities of the input's shape.
pub fn cross_entropy(input: &Variable, target: &Variable) -> Result<Variable> {
    input.cross_entropy(target, None, Reduction::Mean, -100, 0.0)
}

/// `F.nll_loss(input, target)`: log-probabilities against int64 class indices.
pub fn nll_loss(input: &Variable, target: &Variable) -> Result<Variable> {
    input.nll_loss(&target.tensor(), None, Reduction::Mean, -100)
}

/// `F.mse_loss(input, target)`: the mean squared error.
pub fn mse_loss(input: &Variable, target: &Variable) -> Result<Variable> {
    input.pointwise_loss(target, PointwiseLoss::Mse, None, None, Reduction::Mean)
}

/// `F.binary_cross_entropy_with_logits(input, target)`: the mean binary cross-entropy
/// of `sigmoid(input)` against targets in `[0, 1]`, computed stably from the logits.
pub fn binary_cross_entropy_with_logits(input: &Variable, target: &Variable) -> Result<Variable> {
    input.pointwise_loss(
        target,
        PointwiseLoss::BinaryCrossEntropyWithLogits,
        None,
        None,
        Reduction::Mean,
    )
}
