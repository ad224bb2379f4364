//! Graph memory: long chains backward and free without deep recursion, and every node
//! is released once nothing reaches it.
//!
//! `live_nodes()` counts nodes of the whole process, so this binary holds a single
//! test: no other test can create nodes while it compares counts.

use rustgrad::autograd::live_nodes;
use rustgrad::optim::Sgd;
use rustgrad::{DType, Result, Tensor, Variable};

const CHAIN: usize = 100_000;

fn scalar_leaf(value: f64, requires_grad: bool) -> Result<Variable> {
    Variable::new(Tensor::from_vec(vec![value], &[1])?, requires_grad)
}

/// `CHAIN` recorded ops: `y = (y * w) + 0.5` repeated, each mul saving `y`, which
/// carries the history before it, so freeing must also unwind saved variables.
fn chain(x: &Variable, w: &Variable) -> Result<Variable> {
    let mut y = x.clone();
    for _ in 0..CHAIN / 2 {
        y = y.mul(w)?.add_scalar(0.5)?;
    }
    Ok(y)
}

/// Drops `v` on a thread with a small stack: freeing must be iterative.
fn drop_on_small_stack(v: Variable) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || drop(v))
        .expect("spawn")
        .join()
        .expect("dropping a long graph overflowed the stack or panicked");
}

#[test]
fn long_chains_and_training_loops_release_every_node() -> Result<()> {
    let baseline = live_nodes();

    // 1. Backward through a 100 000-op chain. With w = 1: y = x + 0.5 n, dy/dx = 1,
    //    dy/dw = sum over the n muls of y_k = n x + 0.5 n (n - 1) / 2.
    let x = scalar_leaf(2.0, true)?;
    let w = scalar_leaf(1.0, true)?;
    let y = chain(&x, &w)?;
    assert!(live_nodes() >= baseline + CHAIN, "every op records a node");
    let n = (CHAIN / 2) as f64;
    assert_eq!(y.to_vec::<f64>(), vec![2.0 + 0.5 * n]);
    y.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![1.0]);
    assert_eq!(
        w.grad().unwrap().to_vec::<f64>(),
        vec![n * 2.0 + 0.5 * n * (n - 1.0) / 2.0]
    );
    drop_on_small_stack(y);
    assert_eq!(
        live_nodes(),
        baseline,
        "a backwarded chain is freed with its output"
    );

    // 2. Dropping a 100 000-op graph that was never backwarded.
    let y = chain(&x, &w)?;
    assert!(live_nodes() >= baseline + CHAIN);
    drop_on_small_stack(y);
    assert_eq!(
        live_nodes(),
        baseline,
        "an un-backwarded chain is freed with its output"
    );

    // 3. Retained graphs are freed as well.
    let y = x.mul(&w)?.exp()?.sum()?;
    y.backward_with(None, true, false)?;
    y.backward_with(None, true, false)?;
    drop(y);
    assert_eq!(live_nodes(), baseline);

    // 4. A training loop does not grow the arena: parameters -> .grad -> graph would
    //    be a cycle if gradients kept history.
    rustgrad::manual_seed(0);
    let inputs = Variable::from_tensor(rustgrad::random::randn(&[16, 4], DType::F32)?);
    let targets = Variable::from_tensor(rustgrad::random::randn(&[16, 1], DType::F32)?);
    let w1 = Variable::new(
        rustgrad::random::randn(&[4, 8], DType::F32)?.mul_scalar_t(0.5),
        true,
    )?;
    let b1 = Variable::new(Tensor::zeros(&[8], DType::F32).unwrap(), true)?;
    let w2 = Variable::new(
        rustgrad::random::randn(&[8, 1], DType::F32)?.mul_scalar_t(0.5),
        true,
    )?;
    let mut sgd = Sgd::new(vec![w1.clone(), b1.clone(), w2.clone()], 0.01)?.with_momentum(0.9);
    for step in 0..1_000 {
        // Everything from the previous iteration has been dropped by now.
        assert_eq!(
            live_nodes(),
            baseline,
            "nodes leak across training iterations (step {step})"
        );
        sgd.zero_grad()?;
        let hidden = inputs.matmul(&w1)?.add(&b1)?.relu()?;
        let diff = hidden.matmul(&w2)?.sub(&targets)?;
        let loss = diff.mul(&diff)?.mean()?;
        loss.backward()?;
        sgd.step()?;
    }
    assert_eq!(live_nodes(), baseline);
    Ok(())
}

/// `tensor * s` without autograd, for initialisation.
trait MulScalar {
    fn mul_scalar_t(&self, s: f64) -> Tensor;
}

impl MulScalar for Tensor {
    fn mul_scalar_t(&self, s: f64) -> Tensor {
        self.binary(
            &Tensor::scalar(s, self.dtype()),
            rustgrad::tensor::BinaryOp::Mul,
        )
        .expect("same dtype")
    }
}
