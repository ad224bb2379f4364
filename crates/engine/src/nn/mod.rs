//! Modules: layers that own their parameters and buffers, composed into trees whose
//! dotted names (`layer1.0.conv1.weight`, `bn1.running_mean`) and checkpoints are those
//! of the Python package and PyTorch. See Note [Rust modules].
//!
//! ```
//! use rustgrad::nn::{self, Module};
//! use rustgrad::{DType, Result, Tensor, Variable};
//!
//! #[derive(nn::Module)]
//! struct Mlp {
//!     fc1: nn::Linear,
//!     fc2: nn::Linear,
//! }
//!
//! impl Module for Mlp {
//!     fn forward(&self, x: &Variable) -> Result<Variable> {
//!         self.fc2.forward(&self.fc1.forward(x)?.relu()?)
//!     }
//! }
//!
//! rustgrad::manual_seed(0);
//! let model = Mlp { fc1: nn::Linear::new(4, 8)?, fc2: nn::Linear::new(8, 2)? };
//! let names: Vec<String> = model.named_parameters().into_iter().map(|(n, _)| n).collect();
//! assert_eq!(names, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
//! let x = Variable::from_tensor(Tensor::ones(&[3, 4], DType::F32)?);
//! assert_eq!(&*model.forward(&x)?.shape(), &[3, 2]);
//! # Ok::<(), rustgrad::Error>(())
//! ```

mod checkpoint;
mod data;
pub mod init;
mod layers;
mod loss;
mod pth;
mod state;

pub use checkpoint::{load_file, load_state_dict_bytes, save_file, state_dict_to_bytes};
pub use data::Batches;
pub use layers::{
    Activation, AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv1d, Conv2d,
    ConvOptions, ConvTranspose2d, Dropout, Embedding, Flatten, GroupNorm, Identity, LayerNorm,
    Linear, MaxPool2d, Sequential,
};
pub use loss::{binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss};
pub use pth::{load_pth, load_pth_bytes, TorchValue};
/// `#[derive(Module)]`: registers a struct's fields as parameters (`#[param]`), buffers
/// (`#[buffer]`, `#[buffer(missing_ok)]`), its train/eval flag (a field of type
/// [`Training`]), skipped fields (`#[skip]`) and submodules (everything else), under the
/// fields' names, by implementing [`Members`].
pub use rustgrad_derive::Module;
pub use state::{IncompatibleKeys, StateDict};

use crate::error::Result;
use crate::variable::Variable;
use std::sync::atomic::{AtomicBool, Ordering};

/// One entry of a module's own tree level, as [`Members::visit_members`] lists it.
pub enum Member<'a> {
    /// A parameter: trained, in `parameters()` and in the state dict.
    Parameter(&'a Variable),
    /// A persistent buffer: in the state dict, not trained (`running_mean`).
    Buffer(&'a Variable),
    /// A persistent buffer that a state dict may lack, the module then keeping its own
    /// value (PyTorch's rule for `num_batches_tracked` in state dicts without version
    /// metadata, which is every state dict read from a file).
    OptionalBuffer(&'a Variable),
    /// A submodule.
    Child(&'a dyn Module),
}

/// A module's train/eval flag (`module.training`), true when created.
#[derive(Debug)]
pub struct Training(AtomicBool);

impl Default for Training {
    fn default() -> Training {
        Training(AtomicBool::new(true))
    }
}

impl Training {
    /// Whether the module is in training mode.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets training (`true`) or evaluation (`false`) mode.
    pub fn set(&self, mode: bool) {
        self.0.store(mode, Ordering::Relaxed);
    }
}

/// The structure of a module: its own parameters, buffers and submodules under their
/// names. Implemented by `#[derive(Module)]`; the built-in layers implement it too.
pub trait Members {
    /// Calls `visit(name, member)` for each own parameter, buffer and submodule, in
    /// registration order.
    fn visit_members<'s>(&'s self, visit: &mut dyn FnMut(&str, Member<'s>));

    /// The module's own train/eval flag, if it has one.
    fn training_flag(&self) -> Option<&Training> {
        None
    }
}

/// A part of a network (`torch.nn.Module`): a forward pass plus, through [`Members`],
/// the tree of named parameters, buffers and submodules that every other method walks.
/// Modules are `Send + Sync` (their tensors are), so a model can be shared with or
/// moved to other threads.
pub trait Module: Members + Send + Sync {
    /// The module's output for `input`.
    fn forward(&self, input: &Variable) -> Result<Variable>;

    /// Every parameter with its dotted name, the module's own first and then each
    /// submodule's in registration order (`named_parameters()`).
    fn named_parameters(&self) -> Vec<(String, Variable)> {
        let mut out = Vec::new();
        state::walk(self, "", &mut |prefix, name, member| {
            if let Member::Parameter(p) = member {
                out.push((format!("{prefix}{name}"), p.clone()));
            }
        });
        out
    }

    /// Every parameter, in the order of [`Module::named_parameters`].
    fn parameters(&self) -> Vec<Variable> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// Every persistent buffer with its dotted name (`named_buffers()`).
    fn named_buffers(&self) -> Vec<(String, Variable)> {
        let mut out = Vec::new();
        state::walk(self, "", &mut |prefix, name, member| {
            if let Member::Buffer(b) | Member::OptionalBuffer(b) = member {
                out.push((format!("{prefix}{name}"), b.clone()));
            }
        });
        out
    }

    /// The direct submodules with their names (`named_children()`).
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        let mut out = Vec::new();
        self.visit_members(&mut |name, member| {
            if let Member::Child(c) = member {
                out.push((name.to_string(), c));
            }
        });
        out
    }

    /// The direct submodules (`children()`).
    fn children(&self) -> Vec<&dyn Module> {
        self.named_children().into_iter().map(|(_, c)| c).collect()
    }

    /// Every descendant module (not this one) with its dotted name, in pre-order
    /// (`named_modules()` without the root).
    fn named_descendants(&self) -> Vec<(String, &dyn Module)> {
        let mut out = Vec::new();
        for (name, child) in self.named_children() {
            let below = child.named_descendants();
            out.push((name.clone(), child));
            out.extend(below.into_iter().map(|(n, m)| (format!("{name}.{n}"), m)));
        }
        out
    }

    /// Sets training (`true`) or evaluation (`false`) mode here and in every
    /// descendant (`train(mode)`; `eval()` is `train(false)`).
    fn train(&self, mode: bool) {
        if let Some(flag) = self.training_flag() {
            flag.set(mode);
        }
        for child in self.children() {
            child.train(mode);
        }
    }

    /// `train(false)`.
    fn eval(&self) {
        self.train(false);
    }

    /// Whether the module is in training mode (`module.training`). A module without
    /// its own [`Training`] field answers for its submodules: true when all of them
    /// are training (and when it has none).
    fn is_training(&self) -> bool {
        match self.training_flag() {
            Some(flag) => flag.get(),
            None => self.children().iter().all(|c| c.is_training()),
        }
    }

    /// Drops every parameter's gradient (`zero_grad()`, whose default is
    /// `set_to_none=True`).
    fn zero_grad(&self) -> Result<()> {
        for p in self.parameters() {
            p.set_grad(None)?;
        }
        Ok(())
    }

    /// Sets `requires_grad` on every parameter (`requires_grad_(flag)`): `false`
    /// freezes the module, so that a forward pass through it records nothing for its
    /// parameters and backward gives them no gradient.
    fn requires_grad_(&self, requires_grad: bool) -> Result<()> {
        for p in self.parameters() {
            p.set_requires_grad(requires_grad)?;
        }
        Ok(())
    }

    /// Converts every floating-point parameter and buffer to `dtype` (`to(dtype)`,
    /// `double()`, `half()`): parameters keep their identity (PyTorch's
    /// `param.data = ...`), so optimizers built before still hold them; integer buffers
    /// (`num_batches_tracked`) keep their dtype; gradients are dropped.
    fn to_dtype(&self, dtype: crate::DType) -> Result<()> {
        if !dtype.is_floating_point() {
            return Err(crate::Error::InvalidArgument(format!(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={}",
                dtype.torch_name()
            )));
        }
        let mut vars = Vec::new();
        state::walk(self, "", &mut |_, _, member| match member {
            Member::Parameter(v) | Member::Buffer(v) | Member::OptionalBuffer(v) => {
                vars.push(v.clone())
            }
            Member::Child(_) => {}
        });
        for v in vars {
            if v.dtype().is_floating_point() && v.dtype() != dtype {
                let converted = v.tensor().to_dtype(dtype)?;
                v.set_grad(None)?;
                v.set_data(&Variable::from_tensor(converted))?;
            }
        }
        Ok(())
    }

    /// The number of parameter elements.
    fn num_parameters(&self) -> usize {
        self.parameters().iter().map(Variable::numel).sum()
    }

    /// Parameters and persistent buffers by dotted name, detached, in PyTorch's order:
    /// each module's parameters, then its buffers, then its submodules'
    /// (`state_dict()`). The tensors share storage with the module.
    fn state_dict(&self) -> StateDict {
        state::state_dict(self)
    }

    /// Copies `state_dict`'s tensors into the module's parameters and buffers
    /// (`load_state_dict(state_dict, strict)`), converting dtypes as `copy_` does.
    /// Every problem — missing and unexpected keys when `strict`, shape mismatches
    /// always — is reported in one error with the Python package's (and PyTorch's)
    /// messages, and then nothing in the module has changed.
    fn load_state_dict(&self, state_dict: &StateDict, strict: bool) -> Result<IncompatibleKeys> {
        state::load_state_dict(self, self.type_name(), state_dict, strict)
    }

    /// The name in error messages (`Error(s) in loading state_dict for NAME`): the
    /// type's name without its path.
    fn type_name(&self) -> &'static str {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        base.rsplit("::").next().unwrap_or(base)
    }
}

impl<M: Module + ?Sized> Members for Box<M> {
    fn visit_members<'s>(&'s self, visit: &mut dyn FnMut(&str, Member<'s>)) {
        (**self).visit_members(visit)
    }

    fn training_flag(&self) -> Option<&Training> {
        (**self).training_flag()
    }
}

impl<M: Module + ?Sized> Module for Box<M> {
    fn forward(&self, input: &Variable) -> Result<Variable> {
        (**self).forward(input)
    }

    fn type_name(&self) -> &'static str {
        (**self).type_name()
    }
}
