//! Per-group hyper-parameters of each optimizer, with PyTorch's defaults and checks.

use crate::error::{Error, Result};

/// `torch.optim.SGD`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct SgdOptions {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (0 disables momentum and its buffer).
    pub momentum: f64,
    /// Dampening of the momentum.
    pub dampening: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

impl Default for SgdOptions {
    fn default() -> Self {
        SgdOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
        }
    }
}

/// `torch.optim.Adam`'s and `torch.optim.AdamW`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamOptions {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates of the first and second moment averages.
    pub betas: (f64, f64),
    /// Added to the denominator.
    pub eps: f64,
    /// Weight decay: an L2 penalty for Adam, decoupled for AdamW.
    pub weight_decay: f64,
    /// Normalise by the running maximum of the second moment (`max_exp_avg_sq`).
    pub amsgrad: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
    /// Decoupled weight decay (`p *= 1 - lr * weight_decay`): AdamW.
    pub decoupled_weight_decay: bool,
}

impl Default for AdamOptions {
    fn default() -> Self {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
            decoupled_weight_decay: false,
        }
    }
}

impl AdamOptions {
    /// AdamW's defaults: decoupled weight decay of 1e-2.
    pub fn adamw() -> Self {
        AdamOptions {
            weight_decay: 1e-2,
            decoupled_weight_decay: true,
            ..AdamOptions::default()
        }
    }
}

/// `torch.optim.Adamax`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamaxOptions {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates of the first moment and of the infinity norm.
    pub betas: (f64, f64),
    /// Added to the gradient's magnitude.
    pub eps: f64,
    /// L2 penalty.
    pub weight_decay: f64,
    /// Ascend instead of descend.
    pub maximize: bool,
}

impl Default for AdamaxOptions {
    fn default() -> Self {
        AdamaxOptions {
            lr: 2e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            maximize: false,
        }
    }
}

/// `torch.optim.NAdam`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct NAdamOptions {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates of the moment averages.
    pub betas: (f64, f64),
    /// Added to the denominator.
    pub eps: f64,
    /// Weight decay (L2, or decoupled).
    pub weight_decay: f64,
    /// Momentum decay (psi).
    pub momentum_decay: f64,
    /// Decoupled weight decay, as AdamW.
    pub decoupled_weight_decay: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

impl Default for NAdamOptions {
    fn default() -> Self {
        NAdamOptions {
            lr: 2e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            momentum_decay: 4e-3,
            decoupled_weight_decay: false,
            maximize: false,
        }
    }
}

/// `torch.optim.RAdam`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct RAdamOptions {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates of the moment averages.
    pub betas: (f64, f64),
    /// Added to the denominator.
    pub eps: f64,
    /// Weight decay (L2, or decoupled).
    pub weight_decay: f64,
    /// Decoupled weight decay, as AdamW.
    pub decoupled_weight_decay: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

impl Default for RAdamOptions {
    fn default() -> Self {
        RAdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled_weight_decay: false,
            maximize: false,
        }
    }
}

/// `torch.optim.RMSprop`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct RmsPropOptions {
    /// Learning rate.
    pub lr: f64,
    /// Smoothing constant of the squared-gradient average.
    pub alpha: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// L2 penalty.
    pub weight_decay: f64,
    /// Momentum factor (0: no momentum buffer).
    pub momentum: f64,
    /// Normalise by the estimated variance (keeps `grad_avg`).
    pub centered: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

impl Default for RmsPropOptions {
    fn default() -> Self {
        RmsPropOptions {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
            maximize: false,
        }
    }
}

/// `torch.optim.Adagrad`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct AdagradOptions {
    /// Learning rate.
    pub lr: f64,
    /// Learning rate decay.
    pub lr_decay: f64,
    /// L2 penalty.
    pub weight_decay: f64,
    /// Starting value of the `sum` accumulator.
    pub initial_accumulator_value: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// Ascend instead of descend.
    pub maximize: bool,
}

impl Default for AdagradOptions {
    fn default() -> Self {
        AdagradOptions {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
            maximize: false,
        }
    }
}

/// `torch.optim.Adadelta`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct AdadeltaOptions {
    /// Scale of the delta.
    pub lr: f64,
    /// Decay of the running averages.
    pub rho: f64,
    /// Added inside the square roots.
    pub eps: f64,
    /// L2 penalty.
    pub weight_decay: f64,
    /// Ascend instead of descend.
    pub maximize: bool,
}

impl Default for AdadeltaOptions {
    fn default() -> Self {
        AdadeltaOptions {
            lr: 1.0,
            rho: 0.9,
            eps: 1e-6,
            weight_decay: 0.0,
            maximize: false,
        }
    }
}

/// The options of one parameter group, which also say which update rule it uses.
#[derive(Clone, Debug, PartialEq)]
pub enum Options {
    /// SGD.
    Sgd(SgdOptions),
    /// Adam, or AdamW when `decoupled_weight_decay`.
    Adam(AdamOptions),
    /// Adamax.
    Adamax(AdamaxOptions),
    /// NAdam.
    NAdam(NAdamOptions),
    /// RAdam.
    RAdam(RAdamOptions),
    /// RMSprop.
    RmsProp(RmsPropOptions),
    /// Adagrad.
    Adagrad(AdagradOptions),
    /// Adadelta.
    Adadelta(AdadeltaOptions),
}

fn check(ok: bool, message: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(message()))
    }
}

fn check_lr(lr: f64) -> Result<()> {
    check(lr >= 0.0, || format!("Invalid learning rate: {lr}"))
}

fn check_eps(eps: f64) -> Result<()> {
    check(eps >= 0.0, || format!("Invalid epsilon value: {eps}"))
}

fn check_weight_decay(weight_decay: f64) -> Result<()> {
    check(weight_decay >= 0.0, || {
        format!("Invalid weight_decay value: {weight_decay}")
    })
}

fn check_betas(betas: (f64, f64)) -> Result<()> {
    check((0.0..1.0).contains(&betas.0), || {
        format!("Invalid beta parameter at index 0: {}", betas.0)
    })?;
    check((0.0..1.0).contains(&betas.1), || {
        format!("Invalid beta parameter at index 1: {}", betas.1)
    })
}

impl Options {
    /// PyTorch's checks of the constructor arguments, with its messages.
    pub fn validate(&self) -> Result<()> {
        match self {
            Options::Sgd(o) => {
                check_lr(o.lr)?;
                check(o.momentum >= 0.0, || {
                    format!("Invalid momentum value: {}", o.momentum)
                })?;
                check_weight_decay(o.weight_decay)?;
                check(
                    !o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0),
                    || "Nesterov momentum requires a momentum and zero dampening".into(),
                )
            }
            Options::Adam(o) => {
                check_lr(o.lr)?;
                check_eps(o.eps)?;
                check_betas(o.betas)?;
                check_weight_decay(o.weight_decay)
            }
            Options::Adamax(o) => {
                check_lr(o.lr)?;
                check_eps(o.eps)?;
                check_betas(o.betas)?;
                check_weight_decay(o.weight_decay)
            }
            Options::NAdam(o) => {
                check_lr(o.lr)?;
                check_eps(o.eps)?;
                check_betas(o.betas)?;
                check_weight_decay(o.weight_decay)?;
                check(o.momentum_decay >= 0.0, || {
                    format!("Invalid momentum_decay value: {}", o.momentum_decay)
                })
            }
            Options::RAdam(o) => {
                check_lr(o.lr)?;
                check_eps(o.eps)?;
                check_betas(o.betas)?;
                check_weight_decay(o.weight_decay)
            }
            Options::RmsProp(o) => {
                check_lr(o.lr)?;
                check_eps(o.eps)?;
                check(o.momentum >= 0.0, || {
                    format!("Invalid momentum value: {}", o.momentum)
                })?;
                check_weight_decay(o.weight_decay)?;
                check(o.alpha >= 0.0, || {
                    format!("Invalid alpha value: {}", o.alpha)
                })
            }
            Options::Adagrad(o) => {
                check_lr(o.lr)?;
                check(o.lr_decay >= 0.0, || {
                    format!("Invalid lr_decay value: {}", o.lr_decay)
                })?;
                check_weight_decay(o.weight_decay)?;
                check(o.initial_accumulator_value >= 0.0, || {
                    format!(
                        "Invalid initial_accumulator_value value: {}",
                        o.initial_accumulator_value
                    )
                })?;
                check_eps(o.eps)
            }
            Options::Adadelta(o) => {
                check_lr(o.lr)?;
                check((0.0..=1.0).contains(&o.rho), || {
                    format!("Invalid rho value: {}", o.rho)
                })?;
                check_eps(o.eps)?;
                check_weight_decay(o.weight_decay)
            }
        }
    }

    /// The learning rate.
    pub fn lr(&self) -> f64 {
        match self {
            Options::Sgd(o) => o.lr,
            Options::Adam(o) => o.lr,
            Options::Adamax(o) => o.lr,
            Options::NAdam(o) => o.lr,
            Options::RAdam(o) => o.lr,
            Options::RmsProp(o) => o.lr,
            Options::Adagrad(o) => o.lr,
            Options::Adadelta(o) => o.lr,
        }
    }

    /// Sets the learning rate (what a scheduler does).
    pub fn set_lr(&mut self, lr: f64) {
        match self {
            Options::Sgd(o) => o.lr = lr,
            Options::Adam(o) => o.lr = lr,
            Options::Adamax(o) => o.lr = lr,
            Options::NAdam(o) => o.lr = lr,
            Options::RAdam(o) => o.lr = lr,
            Options::RmsProp(o) => o.lr = lr,
            Options::Adagrad(o) => o.lr = lr,
            Options::Adadelta(o) => o.lr = lr,
        }
    }

    /// Whether the per-parameter state has PyTorch's `step` entry (all but SGD).
    pub fn has_step(&self) -> bool {
        !matches!(self, Options::Sgd(_))
    }

    /// Whether the state has NAdam's `mu_product` entry.
    pub fn has_mu_product(&self) -> bool {
        matches!(self, Options::NAdam(_))
    }

    /// The names of the per-parameter buffers (tensors shaped like the parameter) in
    /// the order PyTorch adds them to the state, for these options.
    pub fn buffer_names(&self) -> Vec<&'static str> {
        match self {
            Options::Sgd(o) if o.momentum != 0.0 => vec!["momentum_buffer"],
            Options::Sgd(_) => vec![],
            Options::Adam(o) if o.amsgrad => vec!["exp_avg", "exp_avg_sq", "max_exp_avg_sq"],
            Options::Adam(_) | Options::NAdam(_) | Options::RAdam(_) => {
                vec!["exp_avg", "exp_avg_sq"]
            }
            Options::Adamax(_) => vec!["exp_avg", "exp_inf"],
            Options::RmsProp(o) => {
                let mut names = vec!["square_avg"];
                if o.momentum > 0.0 {
                    names.push("momentum_buffer");
                }
                if o.centered {
                    names.push("grad_avg");
                }
                names
            }
            Options::Adagrad(_) => vec!["sum"],
            Options::Adadelta(_) => vec!["square_avg", "acc_delta"],
        }
    }

    /// The value a new buffer starts at: Adagrad's `initial_accumulator_value`, else 0.
    pub(crate) fn initial_buffer_value(&self) -> f64 {
        match self {
            Options::Adagrad(o) => o.initial_accumulator_value,
            _ => 0.0,
        }
    }
}
