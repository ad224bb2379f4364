//! Optimizers: in-place parameter updates under no-grad.

mod sgd;

pub use sgd::Sgd;
