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
//!
//! [`nn`] has PyTorch's layers as modules with the Python package's parameter names and
//! checkpoints, and [`models`] torchvision's ResNets and the seed notes' LeNet. A module
//! defined, trained and saved:
//!
//! ```
//! use rustgrad::nn::{self, Module};
//! use rustgrad::optim::Sgd;
//! use rustgrad::{random, DType, Variable};
//!
//! #[derive(nn::Module)]
//! struct Net {
//!     hidden: nn::Linear,
//!     out: nn::Linear,
//! }
//!
//! impl Module for Net {
//!     fn forward(&self, x: &Variable) -> rustgrad::Result<Variable> {
//!         self.out.forward(&self.hidden.forward(x)?.relu()?)
//!     }
//! }
//!
//! rustgrad::manual_seed(0); // the same initial weights as in Python and PyTorch
//! let net = Net { hidden: nn::Linear::new(4, 16)?, out: nn::Linear::new(16, 3)? };
//! let x = Variable::from_tensor(random::randn(&[32, 4], DType::F32)?);
//! let y = Variable::from_tensor(random::randint(0, 3, &[32], DType::I64)?);
//! let mut sgd = Sgd::new(net.parameters(), 0.1)?.with_momentum(0.9);
//! for _ in 0..20 {
//!     sgd.zero_grad()?;
//!     nn::cross_entropy(&net.forward(&x)?, &y)?.backward()?;
//!     sgd.step()?;
//! }
//! // The Python package's checkpoint format: `rustgrad.load` reads these bytes, and
//! // `net.load_state_dict` takes what `rustgrad.save(model.state_dict(), f)` wrote.
//! let bytes = nn::state_dict_to_bytes(&net.state_dict())?;
//! let keys: Vec<String> = net.state_dict().keys().map(String::from).collect();
//! assert_eq!(keys, ["hidden.weight", "hidden.bias", "out.weight", "out.bias"]);
//! net.load_state_dict(&nn::load_state_dict_bytes(&bytes)?, true)?;
//! # Ok::<(), rustgrad::Error>(())
//! ```
#![warn(missing_docs)]

// `#[derive(Module)]` names `::rustgrad::nn`; this lets the crate derive it too.
extern crate self as rustgrad;

pub mod autograd;
pub mod buffer_cache;
pub mod distributed;
pub mod dtype;
pub mod error;
pub mod factory;
pub mod format;
pub mod jit;
pub mod kernels;
pub mod layout;
pub mod memory;
pub mod models;
pub mod nn;
pub mod onnx;
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
