//! Models with torchvision's module trees and names, so the state dicts the Python
//! package (`rustgrad.models`) and torchvision write load here by name:
//! [`resnet18`], [`resnet34`], [`resnet50`] and the seed notes' [`lenet`].
//!
//! ```no_run
//! use rustgrad::nn::{self, Module};
//! // In Python: rustgrad.save(rustgrad.models.resnet18().state_dict(), "resnet18.safetensors")
//! let model = rustgrad::models::resnet18(1000)?;
//! model.load_state_dict(&nn::load_file("resnet18.safetensors")?, true)?;
//! model.eval();
//! # Ok::<(), rustgrad::Error>(())
//! ```

mod lenet;
mod resnet;

pub use lenet::{lenet, LeNet};
pub use resnet::{resnet18, resnet34, resnet50, BasicBlock, Block, Bottleneck, ResNet};
