//! Writes the Rust half of the cross-language checkpoint fixtures (Note [Rust
//! modules]): LeNet and a width-reduced ResNet-18-style network, each trained for a few
//! SGD steps in Rust from `manual_seed(0)`, saved with `nn::save_file`, plus an input
//! and the model's evaluation-mode logits for it (and `simd`, the GEMM kernel family
//! that computed them). `tests/python/test_rust_nn.py` loads
//! them into the Python package's models and checks the logits bit for bit;
//! `crates/engine/tests/nn_checkpoints.rs` checks the files still match what this
//! program computes.
//!
//! ```sh
//! cargo run -p rustgrad --example nn_fixtures -- tests/vectors   # from the repo root
//! ```

use rustgrad::models::{lenet, Block, ResNet};
use rustgrad::nn::{self, Module, StateDict};
use rustgrad::optim::Sgd;
use rustgrad::{random, DType, Result, Tensor, Variable};
use std::path::Path;
use std::process::ExitCode;

/// Trains `model` for three SGD steps (momentum 0.9) on random images and labels in
/// training mode, then returns a fresh input and the evaluation-mode logits for it.
pub fn train_and_probe(model: &dyn Module, classes: usize) -> Result<(Tensor, Tensor)> {
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

/// The width-reduced ResNet of the fixtures: BasicBlock, stages [1, 1, 1, 1] of widths
/// [4, 8, 8, 16], 5 classes.
pub fn small_resnet() -> Result<ResNet> {
    ResNet::with_widths(Block::Basic, [1, 1, 1, 1], [4, 8, 8, 16], 5)
}

/// The GEMM micro-kernel family this CPU runs (the `gemm` crate's dispatch): `v4`
/// (AVX-512), `v3` (AVX2 + FMA) or `scalar`. Results are bitwise reproducible within
/// one family, not across them (Note [GEMM plans]), so the cross-language fixtures
/// record the family they were computed with (`tests/python/rust_nn_models.py` has
/// the same function).
pub fn simd_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512cd")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            return "v4";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "v3";
        }
    }
    "scalar"
}

fn write(dir: &Path, name: &str, model: &dyn Module, classes: usize) -> Result<()> {
    let (input, logits) = train_and_probe(model, classes)?;
    nn::save_file(
        &model.state_dict(),
        dir.join(format!("rust_nn_from_rust_{name}.safetensors")),
    )?;
    let simd = Tensor::from_vec(simd_path().as_bytes().to_vec(), &[simd_path().len()])?;
    let io: StateDict = [
        ("input".to_string(), input),
        ("logits".to_string(), logits),
        ("simd".to_string(), simd),
    ]
    .into_iter()
    .collect();
    nn::save_file(
        &io,
        dir.join(format!("rust_nn_from_rust_{name}_io.safetensors")),
    )
}

fn run(dir: &Path) -> Result<()> {
    rustgrad::manual_seed(0);
    write(dir, "lenet", &lenet(10)?, 10)?;
    rustgrad::manual_seed(0);
    write(dir, "resnet", &small_resnet()?, 5)
}

fn main() -> ExitCode {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tests/vectors".into());
    match run(Path::new(&dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
