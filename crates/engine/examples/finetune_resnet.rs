//! The seed scenario in pure Rust: load a ResNet-18 checkpoint, freeze every
//! parameter, replace `fc`, train only `fc` with SGD and momentum, print accuracy.
//!
//! Without an argument the "pretrained" checkpoint is made first: a ResNet-18 trained on
//! classes 0-4 of synthetic images (examples/shared/images.rs) and saved with
//! `nn::save_file`. With a path, that checkpoint is used instead: any ResNet-18 state
//! dict, e.g. one the Python package wrote with
//! `rustgrad.save(rustgrad.models.resnet18(num_classes=5).state_dict(), PATH)`, or
//! PyTorch with `torch.save(torchvision.models.resnet18().state_dict(), PATH)`.
//! The new head learns classes 5-9 on top of the frozen features.
//!
//! ```sh
//! cargo run -p rustgrad --release --example finetune_resnet [-- CHECKPOINT]
//! ```
//!
//! Exits with a non-zero status unless the head reaches 80% test accuracy (chance:
//! 20%), the frozen base is bit-identical before and after and got no gradients.

#[path = "shared/images.rs"]
#[allow(dead_code)]
mod images;

use images::{Classes, Images};
use rustgrad::models::{Block, ResNet};
use rustgrad::nn::{self, Batches, Module};
use rustgrad::optim::Sgd;
use rustgrad::serialize::RawTensor;
use rustgrad::{Error, Result, Variable};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Sizes of a run.
pub struct Config {
    /// The four stage widths (ResNet-18: 64, 128, 256, 512).
    pub widths: [usize; 4],
    /// Training images per class.
    pub train_per_class: usize,
    /// Test images per class.
    pub test_per_class: usize,
    /// Passes over task A when making the checkpoint.
    pub pretrain_epochs: usize,
    /// Passes over task B when training the new head.
    pub finetune_epochs: usize,
    /// Mini-batch size.
    pub batch_size: usize,
    /// The new head's learning rate (SGD, momentum 0.9).
    pub head_lr: f64,
}

/// The sizes `main` uses: ResNet-18 itself.
pub const FULL: Config = Config {
    widths: [64, 128, 256, 512],
    train_per_class: 100,
    test_per_class: 40,
    pretrain_epochs: 3,
    finetune_epochs: 5,
    batch_size: 25,
    head_lr: 0.01,
};

/// Test accuracy the new head must reach (5 classes: chance is 20%).
pub const REQUIRED_ACCURACY: f64 = 0.8;

/// What a run measured.
pub struct Outcome {
    /// Test accuracy of the new head on task B after each epoch.
    pub accuracy: Vec<f64>,
    /// Whether every base parameter and buffer is bit-identical before and after.
    pub base_unchanged: bool,
    /// Whether only `fc`'s parameters got gradients.
    pub only_fc_has_grads: bool,
    /// Whether `fc` changed.
    pub fc_changed: bool,
}

impl Outcome {
    /// Whether the run's claims hold.
    pub fn holds(&self) -> bool {
        self.accuracy
            .last()
            .is_some_and(|&a| a >= REQUIRED_ACCURACY)
            && self.base_unchanged
            && self.only_fc_has_grads
            && self.fc_changed
    }
}

fn resnet(widths: [usize; 4], classes: usize) -> Result<ResNet> {
    ResNet::with_widths(Block::Basic, [2, 2, 2, 2], widths, classes)
}

/// The fraction of `images` that `model` classifies right, in evaluation mode.
fn accuracy(model: &dyn Module, images: &Images) -> Result<f64> {
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

/// One epoch of SGD over `data` in shuffled mini-batches; the mean loss.
fn epoch(model: &dyn Module, sgd: &mut Sgd, data: &Images, batch_size: usize) -> Result<f64> {
    let (mut total, mut count) = (0.0, 0);
    for batch in Batches::new(vec![data.x.clone(), data.y.clone()], batch_size)?.shuffle()? {
        let batch = batch?;
        sgd.zero_grad()?;
        let loss = nn::cross_entropy(&model.forward(&batch[0])?, &batch[1])?;
        loss.backward()?;
        sgd.step()?;
        total += loss.item()?.to_f64();
        count += 1;
    }
    Ok(total / count.max(1) as f64)
}

/// Trains a ResNet on task A and saves it to `path` (the "pretrained" checkpoint).
fn pretrain(config: &Config, task_a: (&Images, &Images), path: &Path, verbose: bool) -> Result<()> {
    let model = resnet(config.widths, 5)?;
    let mut sgd = Sgd::new(model.parameters(), 0.01)?.with_momentum(0.9);
    for e in 1..=config.pretrain_epochs {
        model.train(true);
        let loss = epoch(&model, &mut sgd, task_a.0, config.batch_size)?;
        if verbose {
            let acc = accuracy(&model, task_a.1)?;
            println!(
                "pretrain (classes 0-4) epoch {e}: loss {loss:.4}, test accuracy {:.1}%",
                100.0 * acc
            );
        }
    }
    nn::save_file(&model.state_dict(), path)
}

fn state_bytes(model: &dyn Module, fc: bool) -> Vec<(String, Vec<u8>)> {
    model
        .state_dict()
        .iter()
        .filter(|(k, _)| k.starts_with("fc.") == fc)
        .map(|(k, t)| (k.to_string(), RawTensor::from_tensor(k, t).data))
        .collect()
}

/// The scenario from `manual_seed(seed)`: make (or take) the checkpoint, load it,
/// freeze, replace `fc`, train the head.
pub fn run(
    config: &Config,
    checkpoint: Option<&Path>,
    seed: u64,
    verbose: bool,
) -> Result<Outcome> {
    rustgrad::manual_seed(seed);
    let classes = Classes::new(10)?;
    let (a_train, a_test) = (
        classes.sample(0..5, config.train_per_class)?,
        classes.sample(0..5, config.test_per_class)?,
    );
    let (b_train, b_test) = (
        classes.sample(5..10, config.train_per_class)?,
        classes.sample(5..10, config.test_per_class)?,
    );

    let made: PathBuf;
    let path = match checkpoint {
        Some(p) => p,
        None => {
            made = std::env::temp_dir().join(format!(
                "rustgrad_finetune_resnet_{}.safetensors",
                std::process::id()
            ));
            pretrain(config, (&a_train, &a_test), &made, verbose)?;
            &made
        }
    };
    let state = nn::load_file(path);
    if checkpoint.is_none() {
        let _ = std::fs::remove_file(path);
    }
    let state = state?;
    let old_classes = state
        .get("fc.weight")
        .map(|w| w.shape()[0])
        .ok_or_else(|| {
            Error::InvalidArgument("the checkpoint has no fc.weight: not a ResNet".into())
        })?;

    // Load (no random initialisation: every weight comes from the file), freeze,
    // replace the head. The frozen base runs in evaluation mode (running statistics).
    let mut model = nn::init::skip_init(|| resnet(config.widths, old_classes))?;
    model.load_state_dict(&state, true)?;
    model.requires_grad_(false)?;
    model.fc = nn::Linear::new(config.widths[3], 5)?;
    model.eval();
    let base_before = state_bytes(&model, false);
    let fc_before = state_bytes(&model, true);

    let mut sgd = Sgd::new(model.fc.parameters(), config.head_lr)?.with_momentum(0.9);
    let mut accuracies = Vec::new();
    for e in 1..=config.finetune_epochs {
        let loss = epoch(&model, &mut sgd, &b_train, config.batch_size)?;
        accuracies.push(accuracy(&model, &b_test)?);
        if verbose {
            println!(
                "fine-tune fc (classes 5-9) epoch {e}: loss {loss:.4}, test accuracy {:.1}%",
                100.0 * accuracies[e - 1]
            );
        }
    }
    let only_fc_has_grads = model
        .named_parameters()
        .iter()
        .all(|(name, p)| p.grad().is_some() == name.starts_with("fc."));
    Ok(Outcome {
        accuracy: accuracies,
        base_unchanged: state_bytes(&model, false) == base_before,
        only_fc_has_grads,
        fc_changed: state_bytes(&model, true) != fc_before,
    })
}

fn main() -> ExitCode {
    let checkpoint = std::env::args().nth(1).map(PathBuf::from);
    match run(&FULL, checkpoint.as_deref(), 0, true) {
        Ok(outcome) => {
            let last = outcome.accuracy.last().copied().unwrap_or(0.0);
            println!(
                "new head's test accuracy: {:.1}% (chance: 20%)",
                100.0 * last
            );
            println!(
                "frozen base bit-identical before and after: {}",
                outcome.base_unchanged
            );
            println!("gradients only in fc: {}", outcome.only_fc_has_grads);
            if outcome.holds() {
                ExitCode::SUCCESS
            } else {
                eprintln!("error: a claim failed (accuracy >= {:.0}%, frozen base unchanged, only fc trained)", 100.0 * REQUIRED_ACCURACY);
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
