//! Capture and replay from Rust (Note [Capture and replay]): a training step captured
//! with `rustgrad::jit` and replayed gives bitwise the eager step's parameters.

use rustgrad::optim::{step_group, AdamOptions, Options, ParamState, SgdOptions};
use rustgrad::{jit, manual_seed, random, DType, PointwiseLoss, Reduction, Result, Variable};

fn leaf(shape: &[usize]) -> Result<Variable> {
    let v = Variable::from_tensor(random::randn(shape, DType::F32)?);
    v.set_requires_grad(true)?;
    Ok(v)
}

struct Mlp {
    w1: Variable,
    b1: Variable,
    w2: Variable,
    states: Vec<ParamState>,
    options: Options,
}

impl Mlp {
    fn new(options: Options) -> Result<Mlp> {
        manual_seed(7);
        Ok(Mlp {
            w1: leaf(&[8, 4])?,
            b1: leaf(&[8])?,
            w2: leaf(&[1, 8])?,
            states: vec![ParamState::default(); 3],
            options,
        })
    }

    fn params(&self) -> Vec<Variable> {
        vec![self.w1.clone(), self.b1.clone(), self.w2.clone()]
    }

    /// zero_grad, forward (linear, tanh, linear, mse), backward, optimizer step.
    fn step(&mut self, x: &Variable, y: &Variable) -> Result<Variable> {
        for p in self.params() {
            p.set_grad(None)?;
        }
        let h = x.linear(&self.w1, Some(&self.b1))?.tanh()?;
        let out = h.linear(&self.w2, None)?;
        let loss = out.pointwise_loss(y, PointwiseLoss::Mse, None, None, Reduction::Mean)?;
        loss.backward()?;
        step_group(&self.options, &self.params(), &mut self.states)?;
        Ok(loss)
    }
}

fn data(steps: usize) -> Result<Vec<(Variable, Variable)>> {
    manual_seed(11);
    (0..steps)
        .map(|_| {
            let x = Variable::from_tensor(random::randn(&[16, 4], DType::F32)?);
            let y = Variable::from_tensor(random::randn(&[16, 1], DType::F32)?);
            Ok((x, y))
        })
        .collect()
}

fn bits(v: &Variable) -> Vec<u32> {
    v.to_vec::<f32>().iter().map(|f| f.to_bits()).collect()
}

fn check_replay_matches_eager(options: Options) -> Result<()> {
    let batches = data(12)?;
    let mut eager = Mlp::new(options.clone())?;
    let eager_losses: Vec<u32> = batches
        .iter()
        .map(|(x, y)| Ok(bits(&eager.step(x, y)?)[0]))
        .collect::<Result<_>>()?;

    let mut model = Mlp::new(options)?;
    let (x0, y0) = &batches[0];
    jit::begin(&[x0.clone(), y0.clone()])?;
    let loss = model.step(x0, y0);
    let graph = match loss {
        Ok(loss) => jit::end(std::slice::from_ref(&loss)).map(|g| (g, loss)),
        Err(e) => {
            jit::abort();
            Err(e)
        }
    };
    let (graph, first) = graph?;
    assert!(graph.op_names().contains(&"backward"));
    assert!(graph.op_names().contains(&"optim_step"));
    let mut losses = vec![bits(&first)[0]];
    for (x, y) in &batches[1..] {
        let out = graph.run(&[x.clone(), y.clone()])?;
        losses.push(bits(&out[0])[0]);
    }
    assert_eq!(losses, eager_losses);
    for (a, b) in eager.params().iter().zip(model.params()) {
        assert_eq!(bits(a), bits(&b));
    }
    Ok(())
}

#[test]
fn replayed_sgd_step_matches_eager_bitwise() -> Result<()> {
    check_replay_matches_eager(Options::Sgd(SgdOptions {
        lr: 0.05,
        momentum: 0.9,
        ..SgdOptions::default()
    }))
}

#[test]
fn replayed_adam_step_matches_eager_bitwise() -> Result<()> {
    check_replay_matches_eager(Options::Adam(AdamOptions {
        lr: 0.01,
        ..AdamOptions::default()
    }))
}

#[test]
fn fused_chain_replays_forward_and_backward_bitwise() -> Result<()> {
    let chain = |x: &Variable| -> Result<Variable> {
        let mut y = x.clone();
        for i in 0..40 {
            y = match i % 4 {
                0 => y.add(x)?,
                1 => y.mul_scalar(0.5)?,
                2 => y.tanh()?,
                _ => y.rsub_scalar(0.25)?,
            };
        }
        y.sum()
    };
    let vals: Vec<f32> = (0..16).map(|i| 0.05 * (i as f32 - 8.0)).collect();
    let x = Variable::from_slice(&vals, &[16])?;
    x.set_requires_grad(true)?;
    jit::begin(std::slice::from_ref(&x))?;
    let loss = chain(&x)?;
    loss.backward()?;
    let graph = jit::end(&[loss])?;
    assert_eq!(graph.op_names(), ["fused_elementwise", "sum", "backward"]);
    let x2 = Variable::from_slice(&vals, &[16])?;
    x2.set_requires_grad(true)?;
    let out = graph.run(std::slice::from_ref(&x2))?;
    assert_eq!(bits(&out[0]), bits(&chain(&x)?));
    let (g, g2) = (x.grad().map(|g| bits(&g)), x2.grad().map(|g| bits(&g)));
    assert!(g.is_some());
    assert_eq!(g, g2);
    Ok(())
}

#[test]
fn replay_refuses_inputs_unlike_the_captured_ones() -> Result<()> {
    let x = Variable::from_slice(&[1.0f32, 2.0], &[2])?;
    jit::begin(std::slice::from_ref(&x))?;
    let y = x.mul_scalar(2.0)?;
    let graph = jit::end(&[y])?;
    assert!(graph.run(&[]).is_err());
    assert!(graph
        .run(&[Variable::from_slice(&[1.0f32], &[1])?])
        .is_err());
    assert!(graph
        .run(&[Variable::from_slice(&[1.0f64, 2.0], &[2])?])
        .is_err());
    let out = graph.run(&[Variable::from_slice(&[3.0f32, 4.0], &[2])?])?;
    assert_eq!(out[0].to_vec::<f32>(), vec![6.0, 8.0]);
    Ok(())
}

#[test]
fn unsupported_op_fails_the_capture_naming_it() -> Result<()> {
    let x = Variable::from_slice(&[1.0f32, 2.0], &[2])?;
    jit::begin(std::slice::from_ref(&x))?;
    let y = x.cumsum(0)?.mul_scalar(2.0)?;
    let err = jit::end(&[y]).expect_err("cumsum is not captured");
    assert!(err.to_string().contains("cumsum"), "{err}");
    Ok(())
}
