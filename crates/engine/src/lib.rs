//! # rustgrad
//!
//! A CPU autograd engine with PyTorch's semantics: strided tensors that share storage,
//! an arena-allocated autograd graph rebuilt on every forward pass, a backward
//! scheduler whose results are bitwise identical for any thread count, version-counter
//! checks of in-place writes, and optimizers. This crate has no Python dependency; the
//! `rustgrad` Python package is a thin PyO3 layer over it.
//!
//! ```
//! use rustgrad::{Tensor, Variable};
//!
//! // x = torch.ones(2, 2, requires_grad=True); out = ((x + 2) * (x + 2) * 3).mean()
//! let x = Variable::new(Tensor::ones(&[2, 2], rustgrad::DType::F32)?, true)?;
//! let y = x.add_scalar(2.0)?;
//! let out = y.mul(&y)?.mul_scalar(3.0)?.mean()?;
//! assert_eq!(out.to_string(), "tensor(27., grad_fn=<MeanBackward0>)");
//! out.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![4.5; 4]);
//! # Ok::<(), rustgrad::Error>(())
//! ```
//!
//! The main types are [`Tensor`] (data and views, no autograd), [`Variable`] (a tensor
//! plus autograd state, with every differentiable op) and [`optim::Optimizer`]
//! (PyTorch's optimizers: SGD, Adam, AdamW, Adamax, NAdam, RAdam, RMSprop, Adagrad,
//! Adadelta).
#![warn(missing_docs)]

// `#[derive(Module)]` names `::rustgrad::nn`; this lets the crate derive it too.
extern crate self as rustgrad;

pub mod autograd;
pub mod dtype;
pub mod error;
pub mod factory;
pub mod format;
pub mod kernels;
pub mod layout;
pub mod memory;
pub mod models;
pub mod nn;
pub(crate) mod ops;
pub mod optim;
pub mod parallel;
pub mod random;
pub mod serialize;
pub mod shape;
pub mod storage;
pub mod tensor;
pub mod variable;

pub use dtype::DType;
pub use error::{Error, ExternalError, Result};
pub use ops::conv::ConvPadding;
pub use ops::custom::{intern_name, CustomBackward, CustomOptions, SavedValues};
pub use ops::dropout::DropoutKind;
pub use ops::embedding::{BagMode, BagOptions};
pub use ops::loss::{KlReduction, PointwiseLoss, Reduction, WeightedMean};
pub use ops::pool::{Pool2d, Pool3d};
pub use ops::rnn::RnnMode;
pub use ops::shape::Squeeze;
pub use ops::spatial::{GridPaddingMode, GridSampleMode, PadMode, UpsampleMode};
pub use parallel::{get_num_threads, set_num_threads};
pub use random::manual_seed;
pub use tensor::{Scalar, Tensor};
pub use variable::Variable;
