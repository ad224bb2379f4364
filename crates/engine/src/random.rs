//! The default random generator: `manual_seed`, `rand`, `randn`. Generation is
//! sequential, so a seed gives the same numbers for any thread count.

use crate::dtype::DType;
use crate::storage::Buffer;
use crate::tensor::Tensor;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Mutex;

/// PyTorch's default seed, so a fresh process is deterministic without a call to
/// `manual_seed`.
const DEFAULT_SEED: u64 = 67_280_421_310_721;

static GENERATOR: Mutex<Option<StdRng>> = Mutex::new(None);

fn with_rng<R>(f: impl FnOnce(&mut StdRng) -> R) -> R {
    let mut guard = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(|| StdRng::seed_from_u64(DEFAULT_SEED)))
}

/// Reseeds the default generator.
pub fn manual_seed(seed: u64) {
    *GENERATOR.lock().unwrap_or_else(|e| e.into_inner()) = Some(StdRng::seed_from_u64(seed));
}

/// Uniform samples in `[0, 1)`.
pub fn rand(shape: &[usize], dtype: DType) -> Tensor {
    let n = crate::shape::numel(shape);
    let buffer = with_rng(|rng| match dtype {
        DType::F64 => Buffer::F64((0..n).map(|_| rng.random::<f64>()).collect()),
        _ => Buffer::F32((0..n).map(|_| rng.random::<f32>()).collect()),
    });
    into_dtype(Tensor::from_buffer(buffer, shape), dtype)
}

/// Converts freshly drawn samples; callers checked that `shape` is allocatable (the
/// binding's `check_allocation`), so a failure here is an internal error.
fn into_dtype(samples: Tensor, dtype: DType) -> Tensor {
    samples
        .to_dtype(dtype)
        .unwrap_or_else(|e| panic!("rustgrad internal error: converting samples: {e}"))
}

/// Standard normal samples (Box-Muller on the default generator).
pub fn randn(shape: &[usize], dtype: DType) -> Tensor {
    let n = crate::shape::numel(shape);
    let values: Vec<f64> = with_rng(|rng| {
        let mut out = Vec::with_capacity(n + 1);
        while out.len() < n {
            // 1 - u is in (0, 1], so the log is finite.
            let u1: f64 = 1.0 - rng.random::<f64>();
            let u2: f64 = rng.random::<f64>();
            let r = (-2.0 * u1.ln()).sqrt();
            let theta = 2.0 * std::f64::consts::PI * u2;
            out.push(r * theta.cos());
            out.push(r * theta.sin());
        }
        out.truncate(n);
        out
    });
    into_dtype(Tensor::from_buffer(Buffer::F64(values), shape), dtype)
}
