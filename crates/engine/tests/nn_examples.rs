//! Runs `examples/train_lenet.rs` and `examples/finetune_resnet.rs` at small sizes, so
//! that `cargo test` checks their claims, not only that they compile. One test per
//! example, run one after the other: both seed the process-wide generator.

// Each example includes examples/shared/images.rs as its own module.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)] // the example's `main`
#[path = "../examples/train_lenet.rs"]
mod train_lenet;

use std::sync::Mutex;

static SEED: Mutex<()> = Mutex::new(());

#[test]
fn train_lenet_learns_and_its_checkpoint_reloads() -> rustgrad::Result<()> {
    let _lock = SEED.lock().unwrap_or_else(|e| e.into_inner());
    let small = train_lenet::Config {
        classes: 3,
        train_per_class: 40,
        test_per_class: 20,
        epochs: 8,
        batch_size: 10,
        lr: 0.03,
    };
    let (accuracy, same) = train_lenet::train(&small, 0, false)?;
    // Chance is 1/3.
    assert!(accuracy >= 0.8, "test accuracy {accuracy}");
    assert!(same, "the reloaded model's logits differ");
    Ok(())
}

#[allow(dead_code)] // the example's `main` and FULL
#[path = "../examples/finetune_resnet.rs"]
mod finetune_resnet;

#[test]
fn finetune_resnet_trains_only_the_new_head_and_reaches_its_accuracy() -> rustgrad::Result<()> {
    let _lock = SEED.lock().unwrap_or_else(|e| e.into_inner());
    let small = finetune_resnet::Config {
        widths: [8, 16, 16, 32],
        train_per_class: 30,
        test_per_class: 20,
        pretrain_epochs: 3,
        finetune_epochs: 4,
        batch_size: 10,
        head_lr: 0.01,
    };
    let outcome = finetune_resnet::run(&small, None, 0, false)?;
    assert!(outcome.base_unchanged, "the frozen base changed");
    assert!(
        outcome.only_fc_has_grads,
        "a frozen parameter got a gradient"
    );
    assert!(outcome.fc_changed, "fc did not train");
    assert!(outcome.holds(), "accuracy per epoch {:?}", outcome.accuracy);
    Ok(())
}
