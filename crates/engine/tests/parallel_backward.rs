//! The parallel backward scheduler (Note [Parallel backward]): independent branches
//! large enough to run on the pool give bitwise the gradients of the sequential
//! scheduler (1 thread) with 2 and 4 threads, and a failing pass returns the error the
//! sequential order meets first.
//!
//! The thread count is process-wide, so this binary holds a single test.

use rustgrad::autograd::no_grad;
use rustgrad::{
    intern_name, CustomBackward, CustomOptions, Error, Result, SavedValues, Tensor, Variable,
};
use std::sync::Arc;

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

fn leaf(shape: &[usize], seed: u64, scale: f64) -> Result<Variable> {
    let n = shape.iter().product();
    let data = values(n, seed).into_iter().map(|v| v * scale).collect();
    Variable::new(Tensor::from_vec(data, shape)?, true)
}

fn bits(v: &Variable) -> Vec<u64> {
    v.to_vec::<f64>().into_iter().map(f64::to_bits).collect()
}

const N: usize = 192;

/// Four branches from one input `x` (so its gradient is a fan-in of four pool
/// results), each two matmul + tanh layers, and a residual term `x * x`.
fn workload() -> Result<Vec<Vec<u64>>> {
    let scale = 1.0 / (N as f64).sqrt();
    let x = leaf(&[N, N], 1, 1.0)?;
    let ws: Vec<Variable> = (0..8)
        .map(|i| leaf(&[N, N], 10 + i, scale))
        .collect::<Result<_>>()?;
    let mut total = x.mul(&x)?.sum()?;
    for b in 0..4 {
        let h = x.matmul(&ws[2 * b])?.tanh()?;
        let h = h.matmul(&ws[2 * b + 1])?.tanh()?;
        total = total.add(&h.sum()?)?;
    }
    total.backward()?;
    let mut out = vec![bits(&total), bits(&x.grad().expect("x has a gradient"))];
    for w in &ws {
        out.push(bits(&w.grad().expect("every weight has a gradient")));
    }
    Ok(out)
}

/// An independent gradient of `workload`'s loss with respect to `x`, written with
/// forward tensor ops only (no autograd): 2x + Σ_b (g1_b) W1_bᵀ, where
/// g2 = 1 - h2², g1 = ((g2) W2ᵀ) ⊙ (1 - h1²).
fn reference_x_grad() -> Result<Vec<f64>> {
    let scale = 1.0 / (N as f64).sqrt();
    let t = |seed: u64, s: f64| {
        Tensor::from_vec(values(N * N, seed).iter().map(|v| v * s).collect(), &[N, N])
    };
    let x = t(1, 1.0)?;
    let x_v = x.to_vec::<f64>();
    let mut grad: Vec<f64> = x_v.iter().map(|v| 2.0 * v).collect();
    for b in 0..4u64 {
        let w1 = t(10 + 2 * b, scale)?;
        let w2 = t(10 + 2 * b + 1, scale)?;
        let h1 = x
            .matmul_nd(&w1)?
            .to_vec::<f64>()
            .iter()
            .map(|v| v.tanh())
            .collect::<Vec<_>>();
        let h1t = Tensor::from_vec(h1.clone(), &[N, N])?;
        let h2 = h1t
            .matmul_nd(&w2)?
            .to_vec::<f64>()
            .iter()
            .map(|v| v.tanh())
            .collect::<Vec<_>>();
        let g2 = Tensor::from_vec(h2.iter().map(|h| 1.0 - h * h).collect(), &[N, N])?;
        let w2t = Tensor::from_vec(transpose(&w2.to_vec::<f64>()), &[N, N])?;
        let g1: Vec<f64> = g2
            .matmul_nd(&w2t)?
            .to_vec::<f64>()
            .iter()
            .zip(&h1)
            .map(|(g, h)| g * (1.0 - h * h))
            .collect();
        let w1t = Tensor::from_vec(transpose(&w1.to_vec::<f64>()), &[N, N])?;
        let gx = Tensor::from_vec(g1, &[N, N])?
            .matmul_nd(&w1t)?
            .to_vec::<f64>();
        for (a, g) in grad.iter_mut().zip(gx) {
            *a += g;
        }
    }
    Ok(grad)
}

fn transpose(m: &[f64]) -> Vec<f64> {
    (0..N * N).map(|k| m[(k % N) * N + k / N]).collect()
}

/// A custom op whose backward fails with `message`.
struct Fails(&'static str);

impl CustomBackward for Fails {
    fn name(&self) -> &'static str {
        intern_name("FailsBackward")
    }

    fn backward(
        &self,
        _grads: &[Option<Variable>],
        _saved: &SavedValues,
        _needs: &[bool],
    ) -> Result<Vec<Option<Variable>>> {
        Err(Error::InvalidArgument(self.0.into()))
    }
}

fn fails(x: &Variable, message: &'static str) -> Result<Variable> {
    let out = {
        let _guard = no_grad();
        x.mul_scalar(1.0)?
    };
    Ok(Variable::record_custom(
        Arc::new(Fails(message)),
        &[x],
        &[out],
        CustomOptions::default(),
    )?
    .remove(0))
}

/// Two branches whose custom nodes fail, behind large pool nodes: branch "second" is
/// recorded later, so the sequential order meets its failure first.
fn failing_pass() -> Result<String> {
    let scale = 1.0 / (N as f64).sqrt();
    let x = leaf(&[N, N], 1, 1.0)?;
    let w = leaf(&[N, N], 2, scale)?;
    let a = fails(&x.matmul(&w)?, "first")?.tanh()?.matmul(&w)?.tanh()?;
    let b = fails(&x.matmul(&w)?, "second")?
        .tanh()?
        .matmul(&w)?
        .tanh()?;
    match a.sum()?.add(&b.sum()?)?.backward() {
        Err(Error::InvalidArgument(m)) => Ok(m),
        other => panic!("expected the custom backward's error, got {other:?}"),
    }
}

#[test]
fn parallel_backward_is_bitwise_the_sequential_one() -> Result<()> {
    rustgrad::set_num_threads(1).unwrap();
    let reference = workload()?;
    let expected = reference_x_grad()?;
    let x_grad: Vec<f64> = reference[1].iter().map(|&b| f64::from_bits(b)).collect();
    for (i, (g, e)) in x_grad.iter().zip(&expected).enumerate() {
        assert!(
            (g - e).abs() <= 1e-9 * (1.0 + e.abs()),
            "x.grad[{i}] = {g}, expected {e}"
        );
    }
    assert_eq!(failing_pass()?, "second");
    assert_eq!(
        rustgrad::autograd::pool_nodes_run(),
        0,
        "1 thread runs no pool node"
    );
    for threads in [2, 4, 2] {
        rustgrad::set_num_threads(threads).unwrap();
        for _ in 0..3 {
            let before = rustgrad::autograd::pool_nodes_run();
            let other = workload()?;
            assert!(
                rustgrad::autograd::pool_nodes_run() >= before + 8,
                "{threads} threads: the branches' nodes did not run on the pool"
            );
            for (i, (r, o)) in reference.iter().zip(&other).enumerate() {
                let first = r.iter().zip(o).position(|(x, y)| x != y);
                assert!(
                    first.is_none(),
                    "{threads} threads: result {i} differs from 1 thread at element {first:?}"
                );
            }
            assert_eq!(failing_pass()?, "second", "{threads} threads");
        }
    }
    Ok(())
}
