//! Fits a small model to a synthetic regression problem with the Rust engine alone: no
//! Python. The data is a noisy linear function of 4 features plus a mild nonlinearity;
//! the model is a two-layer MLP (4 -> 16 -> 1, tanh) trained on the mean squared error
//! with SGD and momentum.
//!
//! ```sh
//! cargo run -p rustgrad --example fit_linear --release
//! ```
//!
//! Exits with a non-zero status if the loss did not fall at least tenfold.

use rustgrad::optim::Sgd;
use rustgrad::{random, DType, Result, Variable};
use std::process::ExitCode;

const SAMPLES: usize = 256;
const FEATURES: usize = 4;
const HIDDEN: usize = 16;
const STEPS: usize = 300;
const LOG_EVERY: usize = 50;
const LEARNING_RATE: f64 = 0.05;
const MOMENTUM: f64 = 0.9;
/// The loss must end at most this fraction of where it started.
const REQUIRED_DROP: f64 = 10.0;

/// `randn(shape) * scale` as a leaf that requires grad.
fn parameter(shape: &[usize], scale: f64) -> Result<Variable> {
    let p = Variable::from_tensor(random::randn(shape, DType::F32)?).mul_scalar(scale)?;
    p.set_requires_grad(true)?;
    Ok(p)
}

/// `y = x @ w + 0.5 * tanh(x @ v) + 0.3 + noise`, with fixed random `w` and `v`.
fn dataset() -> Result<(Variable, Variable)> {
    let sample = |shape: &[usize]| -> Result<Variable> {
        Ok(Variable::from_tensor(random::randn(shape, DType::F32)?))
    };
    let x = sample(&[SAMPLES, FEATURES])?;
    let w = sample(&[FEATURES, 1])?;
    let v = sample(&[FEATURES, 1])?;
    let noise = sample(&[SAMPLES, 1])?.mul_scalar(0.05)?;
    let y = x
        .matmul(&w)?
        .add(&x.matmul(&v)?.tanh()?.mul_scalar(0.5)?)?
        .add_scalar(0.3)?
        .add(&noise)?;
    Ok((x, y))
}

/// Two linear layers with a tanh between them.
pub struct Mlp {
    w1: Variable,
    b1: Variable,
    w2: Variable,
    b2: Variable,
}

impl Mlp {
    /// Weights scaled by 1/sqrt(fan_in), zero biases.
    pub fn new() -> Result<Mlp> {
        Ok(Mlp {
            w1: parameter(&[FEATURES, HIDDEN], 1.0 / (FEATURES as f64).sqrt())?,
            b1: parameter(&[HIDDEN], 0.0)?,
            w2: parameter(&[HIDDEN, 1], 1.0 / (HIDDEN as f64).sqrt())?,
            b2: parameter(&[1], 0.0)?,
        })
    }

    /// The model's prediction for a batch `[n, FEATURES]`.
    pub fn forward(&self, x: &Variable) -> Result<Variable> {
        x.matmul(&self.w1)?
            .add(&self.b1)?
            .tanh()?
            .matmul(&self.w2)?
            .add(&self.b2)
    }

    /// Every trainable variable.
    pub fn parameters(&self) -> Vec<Variable> {
        vec![
            self.w1.clone(),
            self.b1.clone(),
            self.w2.clone(),
            self.b2.clone(),
        ]
    }
}

fn mse(prediction: &Variable, target: &Variable) -> Result<Variable> {
    let diff = prediction.sub(target)?;
    diff.mul(&diff)?.mean()
}

fn scalar(v: &Variable) -> Result<f64> {
    Ok(v.item()?.to_f64())
}

/// Trains from `seed`, printing the loss every `LOG_EVERY` steps when `verbose`.
/// Returns the loss before the first step and after the last.
pub fn train(seed: u64, verbose: bool) -> Result<(f64, f64)> {
    random::manual_seed(seed);
    let (x, y) = dataset()?;
    let model = Mlp::new()?;
    let mut sgd = Sgd::new(model.parameters(), LEARNING_RATE)?.with_momentum(MOMENTUM);

    let initial = scalar(&mse(&model.forward(&x)?, &y)?)?;
    for step in 1..=STEPS {
        sgd.zero_grad()?;
        let loss = mse(&model.forward(&x)?, &y)?;
        loss.backward()?;
        sgd.step()?;
        if verbose && (step == 1 || step % LOG_EVERY == 0) {
            println!("step {step:4}  loss {:.6}", scalar(&loss)?);
        }
    }
    let last = scalar(&mse(&model.forward(&x)?, &y)?)?;
    Ok((initial, last))
}

/// Whether training reduced the loss enough.
pub fn dropped_enough(initial: f64, last: f64) -> bool {
    last.is_finite() && last * REQUIRED_DROP <= initial
}

fn main() -> ExitCode {
    match train(0, true) {
        Ok((initial, last)) => {
            println!(
                "initial loss {initial:.6}, final loss {last:.6} ({:.1}x lower)",
                initial / last
            );
            if dropped_enough(initial, last) {
                ExitCode::SUCCESS
            } else {
                eprintln!("error: the loss fell less than {REQUIRED_DROP}x");
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
