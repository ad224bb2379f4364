//! Stochastic gradient descent with momentum, dampening, Nesterov and weight decay,
//! following `torch.optim.SGD`'s update rule.

use crate::autograd::grad_mode::no_grad;
use crate::error::{Error, Result};
use crate::storage::WriteSite;
use crate::tensor::{BinaryOp, Tensor};
use crate::variable::Variable;
use std::panic::Location;

/// `torch.optim.SGD`.
pub struct Sgd {
    params: Vec<Variable>,
    momentum_buffers: Vec<Option<Tensor>>,
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (0 disables momentum).
    pub momentum: f64,
    /// Dampening for momentum.
    pub dampening: f64,
    /// L2 penalty.
    pub weight_decay: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
}

impl Sgd {
    /// An optimizer over `params` with learning rate `lr` and no momentum.
    pub fn new(params: Vec<Variable>, lr: f64) -> Result<Sgd> {
        if lr < 0.0 {
            return Err(Error::InvalidArgument(format!(
                "Invalid learning rate: {lr}"
            )));
        }
        let n = params.len();
        Ok(Sgd {
            params,
            momentum_buffers: vec![None; n],
            lr,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
        })
    }

    /// Sets the momentum factor.
    pub fn with_momentum(mut self, momentum: f64) -> Sgd {
        self.momentum = momentum;
        self
    }

    /// The parameters being optimized.
    pub fn params(&self) -> &[Variable] {
        &self.params
    }

    /// Sets every parameter's `.grad` to `None`.
    pub fn zero_grad(&self) -> Result<()> {
        for p in &self.params {
            p.set_grad(None)?;
        }
        Ok(())
    }

    /// One update: `p -= lr * d_p` for every parameter that has a gradient.
    #[track_caller]
    pub fn step(&mut self) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        let _guard = no_grad();
        for (p, buf) in self.params.iter().zip(self.momentum_buffers.iter_mut()) {
            let Some(grad) = p.grad() else { continue };
            let dtype = p.dtype();
            let scalar = |v: f64| Tensor::scalar(v, dtype);
            let mut d_p = grad.tensor().clone();
            if self.weight_decay != 0.0 {
                d_p = d_p.binary(
                    &p.tensor()
                        .binary(&scalar(self.weight_decay), BinaryOp::Mul)?,
                    BinaryOp::Add,
                )?;
            }
            if self.momentum != 0.0 {
                let next = match buf.take() {
                    None => d_p.deep_clone()?,
                    Some(b) => b.binary(&scalar(self.momentum), BinaryOp::Mul)?.binary(
                        &d_p.binary(&scalar(1.0 - self.dampening), BinaryOp::Mul)?,
                        BinaryOp::Add,
                    )?,
                };
                d_p = if self.nesterov {
                    d_p.binary(
                        &next.binary(&scalar(self.momentum), BinaryOp::Mul)?,
                        BinaryOp::Add,
                    )?
                } else {
                    next.clone()
                };
                *buf = Some(next);
            }
            let updated = p
                .tensor()
                .binary(&d_p.binary(&scalar(self.lr), BinaryOp::Mul)?, BinaryOp::Sub)?;
            p.tensor().copy_from(&updated, site.clone())?;
        }
        Ok(())
    }
}
