//! The seed notes' `TheModelClass` (LeNet-5 for 3x32x32 images) trained from scratch in
//! Rust: `rustgrad::models::lenet`, SGD with momentum, mini-batches shuffled by the
//! seed, on synthetic images of 10 classes (examples/shared/images.rs); then saved,
//! loaded into a fresh model and checked to give the same logits.
//!
//! ```sh
//! cargo run -p rustgrad --release --example train_lenet
//! ```
//!
//! Exits with a non-zero status if the test accuracy stays below 80% (chance: 10%) or
//! the reloaded model's logits differ.

#[path = "shared/images.rs"]
mod images;

use rustgrad::models::lenet;
use rustgrad::nn::{self, Batches, Module};
use rustgrad::optim::Sgd;
use rustgrad::{Result, Variable};
use std::process::ExitCode;

/// Sizes of a run.
pub struct Config {
    /// Classes of the synthetic task (at most 10, LeNet's outputs).
    pub classes: usize,
    /// Training images per class.
    pub train_per_class: usize,
    /// Test images per class.
    pub test_per_class: usize,
    /// Passes over the training set.
    pub epochs: usize,
    /// Mini-batch size.
    pub batch_size: usize,
    /// SGD's learning rate (momentum 0.9).
    pub lr: f64,
}

/// The sizes `main` uses.
pub const FULL: Config = Config {
    classes: 10,
    train_per_class: 100,
    test_per_class: 50,
    epochs: 8,
    batch_size: 32,
    lr: 0.01,
};

/// Test accuracy the run must reach.
pub const REQUIRED_ACCURACY: f64 = 0.8;

/// The fraction of `images` that `model` classifies right, in evaluation mode.
pub fn accuracy(model: &dyn Module, images: &images::Images) -> Result<f64> {
    model.eval();
    let _guard = rustgrad::autograd::no_grad();
    let logits = model.forward(&Variable::from_tensor(images.x.clone()))?;
    let predicted = logits.argmax(Some(1), false)?.to_vec::<i64>();
    let labels = images.y.to_vec::<i64>();
    let right = predicted
        .iter()
        .zip(&labels)
        .filter(|(p, l)| p == l)
        .count();
    Ok(right as f64 / labels.len() as f64)
}

/// Trains LeNet from `manual_seed(seed)`; returns the final test accuracy and whether
/// the saved-and-reloaded model gives the same logits.
pub fn train(config: &Config, seed: u64, verbose: bool) -> Result<(f64, bool)> {
    rustgrad::manual_seed(seed);
    let classes = images::Classes::new(config.classes)?;
    let train_set = classes.sample(0..config.classes, config.train_per_class)?;
    let test_set = classes.sample(0..config.classes, config.test_per_class)?;
    let model = lenet(10)?;
    let mut sgd = Sgd::new(model.parameters(), config.lr)?.with_momentum(0.9);
    let mut test_accuracy = 0.0;
    for epoch in 1..=config.epochs {
        model.train(true);
        let batches = Batches::new(
            vec![train_set.x.clone(), train_set.y.clone()],
            config.batch_size,
        )?
        .shuffle()?;
        let mut total = 0.0;
        let mut count = 0;
        for batch in batches {
            let batch = batch?;
            sgd.zero_grad()?;
            let loss = nn::cross_entropy(&model.forward(&batch[0])?, &batch[1])?;
            loss.backward()?;
            sgd.step()?;
            total += loss.item()?.to_f64();
            count += 1;
        }
        test_accuracy = accuracy(&model, &test_set)?;
        if verbose {
            println!(
                "epoch {epoch}/{}: mean loss {:.4}, test accuracy {:.1}%",
                config.epochs,
                total / count as f64,
                100.0 * test_accuracy
            );
        }
    }
    // Save, load into a fresh (uninitialised) model, compare the logits bit for bit.
    let path = std::env::temp_dir().join(format!(
        "rustgrad_train_lenet_{}.safetensors",
        std::process::id()
    ));
    nn::save_file(&model.state_dict(), &path)?;
    let reloaded = nn::init::skip_init(|| lenet(10))?;
    let loaded = nn::load_file(&path);
    let _ = std::fs::remove_file(&path);
    reloaded.load_state_dict(&loaded?, true)?;
    reloaded.eval();
    let _guard = rustgrad::autograd::no_grad();
    let x = Variable::from_tensor(test_set.x.clone());
    let same = model.forward(&x)?.to_vec::<f32>() == reloaded.forward(&x)?.to_vec::<f32>();
    Ok((test_accuracy, same))
}

fn main() -> ExitCode {
    match train(&FULL, 0, true) {
        Ok((acc, same)) => {
            println!("test accuracy {:.1}% (chance: 10%)", 100.0 * acc);
            println!("reloaded checkpoint gives the same logits: {same}");
            if acc >= REQUIRED_ACCURACY && same {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "error: accuracy below {:.0}% or a reloaded model differs",
                    100.0 * REQUIRED_ACCURACY
                );
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
