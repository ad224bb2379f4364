//! The training kernels (batch norm forward and backward, sums over dims, softmax and
//! log-softmax, ReLU's backward, broadcast add and mul, SGD / Adam / AdamW steps in
//! float32 and float16) give bitwise the same results and gradients for 1, 2 and 16
//! threads (16 runs oversubscribed on a small machine). Sizes reach the parallel
//! thresholds (32768 elements), so every kernel takes its split path (Note [Determinism]).
//!
//! The thread count is process-wide, so this binary holds a single test.

use rustgrad::optim::{AdamOptions, Optimizer, Options, SgdOptions};
use rustgrad::{DType, Result, Tensor, Variable};

/// Deterministic values in [-1, 1) without the engine's generator.
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn tensor(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
    Tensor::from_vec(values(shape.iter().product(), seed), shape)?.to_dtype(dtype)
}

fn leaf(shape: &[usize], seed: u64) -> Result<Variable> {
    Variable::new(tensor(shape, DType::F32, seed)?, true)
}

/// Bit patterns of a float tensor (float64 values widen exactly from any float dtype).
fn bits(v: &Variable) -> Vec<u64> {
    v.to_dtype(DType::F64)
        .expect("float dtypes convert to float64")
        .to_vec::<f64>()
        .into_iter()
        .map(f64::to_bits)
        .collect()
}

fn grad_bits(v: &Variable) -> Vec<u64> {
    bits(&v.grad().expect("every leaf gets a gradient"))
}

/// Forward values and gradients of the elementwise, reduction, softmax and norm kernels.
fn kernels() -> Result<Vec<Vec<u64>>> {
    let mut out = Vec::new();
    // Batch norm in training mode, (4, 32, 16, 16): 32768 elements, 1024 per channel.
    let x = leaf(&[4, 32, 16, 16], 1)?;
    let w = leaf(&[32], 2)?;
    let b = leaf(&[32], 3)?;
    let rm = Variable::new(Tensor::zeros(&[32], DType::F32)?, false)?;
    let rv = Variable::new(Tensor::ones(&[32], DType::F32)?, false)?;
    let y = x.batch_norm(Some(&rm), Some(&rv), Some(&w), Some(&b), true, 0.1, 1e-5)?;
    // ReLU's backward and a broadcast multiply by a per-channel scale.
    let scale = leaf(&[1, 32, 1, 1], 4)?;
    let loss = y.relu()?.mul(&scale)?.mul(&y)?.sum()?;
    loss.backward()?;
    out.extend([bits(&y), bits(&loss), bits(&rm), bits(&rv)]);
    for v in [&x, &w, &b, &scale] {
        out.push(grad_bits(v));
    }

    // Sums and means over dims, and a broadcast add with both operands broadcast.
    let a = leaf(&[128, 256], 5)?;
    let row = leaf(&[256], 6)?;
    let col = leaf(&[128, 1], 7)?;
    let s = a.add(&row)?.add(&col)?;
    let s0 = s.sum_dims(&[0], false)?;
    let s1 = s.mean_dims(&[1], true)?;
    let loss = s0.mul(&s0)?.sum()?.add(&s1.mul(&s1)?.sum()?)?;
    loss.backward()?;
    out.extend([bits(&s0), bits(&s1), bits(&loss)]);
    for v in [&a, &row, &col] {
        out.push(grad_bits(v));
    }

    // Softmax and log-softmax over rows of 1024, and over a strided (middle) dim.
    let z = leaf(&[32, 1024], 8)?;
    let weights = Variable::new(tensor(&[32, 1024], DType::F32, 9)?, false)?;
    let p = z.softmax(1)?;
    let lp = z.log_softmax(1)?;
    let mid = z.view(&[32, 16, 64])?.log_softmax(1)?;
    let loss = p
        .mul(&weights)?
        .sum()?
        .add(&lp.mul(&weights)?.sum()?)?
        .add(&mid.sum()?)?;
    loss.backward()?;
    out.extend([bits(&p), bits(&lp), bits(&mid), bits(&loss), grad_bits(&z)]);
    Ok(out)
}

/// Parameters after three steps of SGD (momentum, nesterov, weight decay), Adam and
/// AdamW over a parameter of 40_000 elements and a small one, in float32 and float16.
fn optimizer_steps() -> Result<Vec<Vec<u64>>> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        let sgd = Options::Sgd(SgdOptions {
            lr: 0.01,
            momentum: 0.9,
            weight_decay: 1e-4,
            nesterov: true,
            ..SgdOptions::default()
        });
        let adam = Options::Adam(AdamOptions::default());
        let adamw = Options::Adam(AdamOptions {
            weight_decay: 0.01,
            decoupled_weight_decay: true,
            amsgrad: true,
            ..AdamOptions::default()
        });
        for (k, options) in [sgd, adam, adamw].into_iter().enumerate() {
            let params = [40_000, 77]
                .iter()
                .enumerate()
                .map(|(i, &n)| Variable::new(tensor(&[n], dtype, 10 + i as u64)?, true))
                .collect::<Result<Vec<_>>>()?;
            let mut optimizer = Optimizer::new(params.clone(), options)?;
            for step in 0..3u64 {
                for (i, p) in params.iter().enumerate() {
                    let g = tensor(&p.shape(), dtype, 100 * step + 10 * k as u64 + i as u64)?;
                    p.set_grad(Some(Variable::new(g, false)?))?;
                }
                optimizer.step()?;
            }
            out.extend(params.iter().map(bits));
        }
    }
    Ok(out)
}

fn run() -> Result<Vec<Vec<u64>>> {
    let mut out = kernels()?;
    out.extend(optimizer_steps()?);
    Ok(out)
}

#[test]
fn training_kernels_do_not_depend_on_the_thread_count() -> Result<()> {
    rustgrad::set_num_threads(1).unwrap();
    let reference = run()?;
    for threads in [2, 16] {
        rustgrad::set_num_threads(threads).unwrap();
        let other = run()?;
        assert_eq!(reference.len(), other.len());
        for (i, (r, o)) in reference.iter().zip(&other).enumerate() {
            let first = r.iter().zip(o).position(|(x, y)| x != y);
            assert!(
                first.is_none(),
                "{threads} threads: result {i} differs from 1 thread at element {first:?}"
            );
        }
    }
    Ok(())
}
