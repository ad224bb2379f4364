//! PyTorch's parameter initialisers (`torch.nn.init`) on the engine's default
//! generator, with the bounds computed in the same floating-point steps as the Python
//! package's `rustgrad.nn.init`, so the same seed fills the same bits.

use crate::error::{Error, Result};
use crate::random::default_generator;
use crate::variable::Variable;
use std::cell::Cell;

/// `(fan_in, fan_out)` of a weight of shape `(out, in, *kernel)`.
pub fn fan_in_and_fan_out(shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::InvalidArgument(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions".into(),
        ));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

/// The fan `init.kaiming_*_` divides by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fan {
    /// Input features times the receptive field (`mode="fan_in"`).
    In,
    /// Output features times the receptive field (`mode="fan_out"`).
    Out,
}

/// The gain `init.calculate_gain` gives: `"relu"` is sqrt(2), `"leaky_relu"` with
/// slope `a` is sqrt(2 / (1 + a^2)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gain {
    /// `calculate_gain("relu")`.
    Relu,
    /// `calculate_gain("leaky_relu", a)`.
    LeakyRelu(f64),
}

fn kaiming_std(var: &Variable, fan: Fan, gain: Gain) -> Result<f64> {
    let (fan_in, fan_out) = fan_in_and_fan_out(&var.shape())?;
    let fan = match fan {
        Fan::In => fan_in,
        Fan::Out => fan_out,
    };
    let gain = match gain {
        Gain::Relu => 2f64.sqrt(),
        Gain::LeakyRelu(a) => (2.0 / (1.0 + a.powi(2))).sqrt(),
    };
    Ok(gain / (fan as f64).sqrt())
}

thread_local! {
    static SKIP: Cell<bool> = const { Cell::new(false) };
}

/// Runs `build` with the random initialisers turned off on this thread
/// (`torch.nn.utils.skip_init`): parameters keep their zeros (norm layers their
/// ones) and nothing is drawn from the generator. For models whose weights are
/// loaded right after, e.g. `skip_init(|| resnet50(1000))` then `load_state_dict`.
pub fn skip_init<T>(build: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SKIP.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SKIP.with(|s| s.replace(true)));
    build()
}

fn skipping() -> bool {
    SKIP.with(Cell::get)
}

/// Fills `var` from U(from, to) (`init.uniform_`), under no_grad.
pub fn uniform_(var: &Variable, from: f64, to: f64) -> Result<()> {
    if skipping() {
        return Ok(());
    }
    default_generator().uniform_(&var.tensor(), from, to)
}

/// Fills `var` from N(mean, std^2) (`init.normal_`), under no_grad.
pub fn normal_(var: &Variable, mean: f64, std: f64) -> Result<()> {
    if skipping() {
        return Ok(());
    }
    default_generator().normal_(&var.tensor(), mean, std)
}

/// He uniform (`init.kaiming_uniform_(var, a, mode, nonlinearity)`): U(-b, b) with
/// b = sqrt(3) * gain / sqrt(fan). Nothing is drawn for an empty tensor.
pub fn kaiming_uniform_(var: &Variable, fan: Fan, gain: Gain) -> Result<()> {
    if var.numel() == 0 {
        return Ok(());
    }
    let bound = 3f64.sqrt() * kaiming_std(var, fan, gain)?;
    uniform_(var, -bound, bound)
}

/// He normal (`init.kaiming_normal_(var, a, mode, nonlinearity)`): N(0, (gain /
/// sqrt(fan))^2). Nothing is drawn for an empty tensor.
pub fn kaiming_normal_(var: &Variable, fan: Fan, gain: Gain) -> Result<()> {
    if var.numel() == 0 {
        return Ok(());
    }
    normal_(var, 0.0, kaiming_std(var, fan, gain)?)
}

/// PyTorch's default initialisation of a linear or convolution layer
/// (`reset_parameters`): `kaiming_uniform_(weight, a=sqrt(5))`, then the bias from
/// U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
pub fn default_layer_init(weight: &Variable, bias: Option<&Variable>) -> Result<()> {
    kaiming_uniform_(weight, Fan::In, Gain::LeakyRelu(5f64.sqrt()))?;
    if let Some(bias) = bias {
        let (fan_in, _) = fan_in_and_fan_out(&weight.shape())?;
        let bound = if fan_in > 0 {
            1.0 / (fan_in as f64).sqrt()
        } else {
            0.0
        };
        uniform_(bias, -bound, bound)?;
    }
    Ok(())
}
