//! `Sgd`: a one-group [`Optimizer`] with SGD's options, built with small setters.

use super::{Optimizer, Options, SgdOptions};
use crate::error::Result;
use crate::variable::Variable;

/// `torch.optim.SGD` over one group of parameters.
#[derive(Clone, Debug)]
pub struct Sgd {
    inner: Optimizer,
}

impl Sgd {
    /// An optimizer over `params` with learning rate `lr` and no momentum.
    pub fn new(params: Vec<Variable>, lr: f64) -> Result<Sgd> {
        Sgd::with_options(
            params,
            SgdOptions {
                lr,
                ..SgdOptions::default()
            },
        )
    }

    /// An optimizer over `params` with every SGD option.
    pub fn with_options(params: Vec<Variable>, options: SgdOptions) -> Result<Sgd> {
        Ok(Sgd {
            inner: Optimizer::new(params, Options::Sgd(options))?,
        })
    }

    /// Sets the momentum factor.
    pub fn with_momentum(mut self, momentum: f64) -> Sgd {
        if let Options::Sgd(o) = &mut self.inner.param_groups_mut()[0].options {
            o.momentum = momentum;
        }
        self
    }

    /// The parameters being optimized.
    pub fn params(&self) -> &[Variable] {
        &self.inner.param_groups()[0].params
    }

    /// Sets every parameter's `.grad` to `None`.
    pub fn zero_grad(&self) -> Result<()> {
        self.inner.zero_grad()
    }

    /// One update of every parameter that has a gradient.
    #[track_caller]
    pub fn step(&mut self) -> Result<()> {
        self.inner.step()
    }
}
