//! Checkpoints shared with the Python package (Note [Rust modules]). The fixtures in
//! tests/vectors were written by `tests/vectors/generate_rust_nn_checkpoints.py` (the
//! Python package: LeNet and a width-reduced ResNet trained three SGD steps from seed 0)
//! and by `examples/nn_fixtures.rs` (the same in Rust); `tests/python/test_rust_nn.py`
//! loads the Rust-written ones in Python.

use rustgrad::models::{lenet, Block, ResNet};
use rustgrad::nn::{self, Module, StateDict};
use rustgrad::optim::Sgd;
use rustgrad::serialize::RawTensor;
use rustgrad::{random, DType, Result, Tensor, Variable};
use std::sync::Mutex;

static SEED: Mutex<()> = Mutex::new(());

fn fixture(name: &str) -> String {
    format!(
        "{}/../../tests/vectors/rust_nn_from_{name}.safetensors",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn bits(t: &Tensor) -> RawTensor {
    RawTensor::from_tensor("", t)
}

fn model(name: &str) -> Box<dyn Module> {
    match name {
        "lenet" => Box::new(lenet(10).unwrap()),
        _ => Box::new(ResNet::with_widths(Block::Basic, [1, 1, 1, 1], [4, 8, 8, 16], 5).unwrap()),
    }
}

fn classes(name: &str) -> usize {
    if name == "lenet" {
        10
    } else {
        5
    }
}

#[test]
fn checkpoints_saved_by_python_load_by_name_and_give_bit_identical_logits() {
    for name in ["lenet", "resnet"] {
        // Building draws from the default generator, which the other test seeds.
        let model = {
            let _lock = SEED.lock().unwrap_or_else(|e| e.into_inner());
            model(name)
        };
        let state = nn::load_file(fixture(&format!("python_{name}"))).unwrap();
        model.load_state_dict(&state, true).unwrap();
        model.eval();
        let io = nn::load_file(fixture(&format!("python_{name}_io"))).unwrap();
        let input = Variable::from_tensor(io.get("input").unwrap().clone());
        let logits = model.forward(&input).unwrap();
        assert_eq!(
            bits(&logits.tensor()),
            bits(io.get("logits").unwrap()),
            "{name}: logits"
        );
        // The model's own state dict is the file's, entry for entry.
        let own = model.state_dict();
        assert_eq!(
            own.keys().collect::<Vec<_>>(),
            state.keys().collect::<Vec<_>>()
        );
        for ((k, a), (_, b)) in own.iter().zip(state.iter()) {
            assert_eq!(bits(a), bits(b), "{name}: {k}");
        }
    }
}

/// As `examples/nn_fixtures.rs`: three SGD steps in training mode on random data,
/// then a fresh input and the evaluation-mode logits for it.
fn train_and_probe(model: &dyn Module, classes: usize) -> Result<(Tensor, Tensor)> {
    let x = Variable::from_tensor(random::randn(&[4, 3, 32, 32], DType::F32)?);
    let y = Variable::from_tensor(random::randint(0, classes as i64, &[4], DType::I64)?);
    let mut sgd = Sgd::new(model.parameters(), 0.05)?.with_momentum(0.9);
    model.train(true);
    for _ in 0..3 {
        sgd.zero_grad()?;
        nn::cross_entropy(&model.forward(&x)?, &y)?.backward()?;
        sgd.step()?;
    }
    model.eval();
    let probe = random::randn(&[2, 3, 32, 32], DType::F32)?;
    let _guard = rustgrad::autograd::no_grad();
    let logits = model.forward(&Variable::from_tensor(probe.clone()))?;
    Ok((probe, logits.tensor().clone()))
}

#[test]
fn the_same_seed_and_training_in_rust_give_the_python_packages_weights_bit_for_bit() {
    for name in ["lenet", "resnet"] {
        let (model, (input, logits)) = {
            let _lock = SEED.lock().unwrap_or_else(|e| e.into_inner());
            rustgrad::manual_seed(0);
            let model = model(name);
            let probe = train_and_probe(&*model, classes(name)).unwrap();
            (model, probe)
        };
        let state = model.state_dict();
        // The Rust-written fixture is what this code writes now (not stale)...
        let bytes = nn::state_dict_to_bytes(&state).unwrap();
        let committed = std::fs::read(fixture(&format!("rust_{name}"))).unwrap();
        assert!(bytes == committed, "{name}: rerun examples/nn_fixtures.rs");
        let io: StateDict = [("input".into(), input), ("logits".into(), logits)]
            .into_iter()
            .collect();
        let io_bytes = nn::state_dict_to_bytes(&io).unwrap();
        assert!(
            io_bytes == std::fs::read(fixture(&format!("rust_{name}_io"))).unwrap(),
            "{name}: rerun examples/nn_fixtures.rs"
        );
        // ...and the trained weights and logits are those the Python package got.
        let python = nn::load_file(fixture(&format!("python_{name}"))).unwrap();
        for ((k, a), (_, b)) in state.iter().zip(python.iter()) {
            assert_eq!(bits(a), bits(b), "{name}: {k} after training");
        }
        let python_io = nn::load_file(fixture(&format!("python_{name}_io"))).unwrap();
        for key in ["input", "logits"] {
            assert_eq!(
                bits(io.get(key).unwrap()),
                bits(python_io.get(key).unwrap()),
                "{name}: {key}"
            );
        }
    }
}
