//! The default random generator: `manual_seed`, `rand`, `randn`. Generation is
//! sequential, so a seed gives the same numbers for any thread count.

use crate::dtype::DType;
use crate::error::{Error, Result};
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

/// PyTorch samples only floating-point dtypes; for others it raises NotImplementedError
/// naming its kernel (`"check_uniform_bounds" not implemented for 'Long'`).
fn check_float(kernel: &'static str, dtype: DType) -> Result<()> {
    if dtype.is_floating_point() {
        Ok(())
    } else {
        Err(Error::unsupported_dtype(kernel, dtype))
    }
}

/// Uniform samples in `[0, 1)`; an integer or bool dtype is an error, as in PyTorch.
pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
    check_float("check_uniform_bounds", dtype)?;
    let n = crate::shape::numel(shape);
    let buffer = with_rng(|rng| match dtype {
        DType::F64 => Buffer::F64((0..n).map(|_| rng.random::<f64>()).collect()),
        _ => Buffer::F32((0..n).map(|_| rng.random::<f32>()).collect()),
    });
    Tensor::from_buffer(buffer, shape).to_dtype(dtype)
}

/// Standard normal samples (Box-Muller on the default generator); an integer or bool
/// dtype is an error, as in PyTorch.
pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
    check_float("normal_kernel_cpu", dtype)?;
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
    Tensor::from_buffer(Buffer::F64(values), shape).to_dtype(dtype)
}
