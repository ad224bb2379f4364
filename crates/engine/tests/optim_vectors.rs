//! The PyTorch float32 optimizer trajectories of tests/vectors/optim.json (written by
//! tests/vectors/generate_optim.py), replayed through the engine's Rust API
//! (`rustgrad::optim::Optimizer`): each step sets the recorded gradients, steps, and
//! compares the parameters with PyTorch's. (The file's LBFGS cases are Python-only:
//! tests/python/test_optim.py.)

use rustgrad::optim::{
    AdadeltaOptions, AdagradOptions, AdamOptions, AdamaxOptions, Lbfgs, LbfgsOptions, NAdamOptions,
    Optimizer, Options, ParamState, RAdamOptions, RmsPropOptions, SgdOptions,
};
use rustgrad::{DType, Error, Result, Tensor, Variable};
use serde_json::Value;
use std::path::PathBuf;

fn root() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/optim.json");
    let text = std::fs::read_to_string(&path).expect("optim.json is readable");
    serde_json::from_str(&text).expect("optim.json is JSON")
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .expect("an array of numbers")
        .iter()
        .map(|x| x.as_f64().expect("a number") as f32)
        .collect()
}

fn shape(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("a shape")
        .iter()
        .map(|s| s.as_u64().expect("a size") as usize)
        .collect()
}

/// The case's PyTorch keyword arguments as options (PyTorch's defaults elsewhere).
fn options(name: &str, kw: &Value) -> Options {
    let f = |key: &str, default: f64| kw.get(key).and_then(Value::as_f64).unwrap_or(default);
    let b = |key: &str| kw.get(key).and_then(Value::as_bool).unwrap_or(false);
    let betas = |default: (f64, f64)| match kw.get("betas") {
        Some(v) => (v[0].as_f64().expect("beta"), v[1].as_f64().expect("beta")),
        None => default,
    };
    match name {
        "SGD" => {
            let d = SgdOptions::default();
            Options::Sgd(SgdOptions {
                lr: f("lr", d.lr),
                momentum: f("momentum", d.momentum),
                dampening: f("dampening", d.dampening),
                weight_decay: f("weight_decay", d.weight_decay),
                nesterov: b("nesterov"),
                maximize: b("maximize"),
            })
        }
        "Adam" | "AdamW" => {
            let d = if name == "AdamW" {
                AdamOptions::adamw()
            } else {
                AdamOptions::default()
            };
            Options::Adam(AdamOptions {
                lr: f("lr", d.lr),
                betas: betas(d.betas),
                eps: f("eps", d.eps),
                weight_decay: f("weight_decay", d.weight_decay),
                amsgrad: b("amsgrad"),
                maximize: b("maximize"),
                decoupled_weight_decay: d.decoupled_weight_decay || b("decoupled_weight_decay"),
            })
        }
        "Adamax" => {
            let d = AdamaxOptions::default();
            Options::Adamax(AdamaxOptions {
                lr: f("lr", d.lr),
                betas: betas(d.betas),
                eps: f("eps", d.eps),
                weight_decay: f("weight_decay", d.weight_decay),
                maximize: b("maximize"),
            })
        }
        "NAdam" => {
            let d = NAdamOptions::default();
            Options::NAdam(NAdamOptions {
                lr: f("lr", d.lr),
                betas: betas(d.betas),
                eps: f("eps", d.eps),
                weight_decay: f("weight_decay", d.weight_decay),
                momentum_decay: f("momentum_decay", d.momentum_decay),
                decoupled_weight_decay: b("decoupled_weight_decay"),
                maximize: b("maximize"),
            })
        }
        "RAdam" => {
            let d = RAdamOptions::default();
            Options::RAdam(RAdamOptions {
                lr: f("lr", d.lr),
                betas: betas(d.betas),
                eps: f("eps", d.eps),
                weight_decay: f("weight_decay", d.weight_decay),
                decoupled_weight_decay: b("decoupled_weight_decay"),
                maximize: b("maximize"),
            })
        }
        "RMSprop" => {
            let d = RmsPropOptions::default();
            Options::RmsProp(RmsPropOptions {
                lr: f("lr", d.lr),
                alpha: f("alpha", d.alpha),
                eps: f("eps", d.eps),
                weight_decay: f("weight_decay", d.weight_decay),
                momentum: f("momentum", d.momentum),
                centered: b("centered"),
                maximize: b("maximize"),
            })
        }
        "Adagrad" => {
            let d = AdagradOptions::default();
            Options::Adagrad(AdagradOptions {
                lr: f("lr", d.lr),
                lr_decay: f("lr_decay", d.lr_decay),
                weight_decay: f("weight_decay", d.weight_decay),
                initial_accumulator_value: f(
                    "initial_accumulator_value",
                    d.initial_accumulator_value,
                ),
                eps: f("eps", d.eps),
                maximize: b("maximize"),
            })
        }
        "Adadelta" => {
            let d = AdadeltaOptions::default();
            Options::Adadelta(AdadeltaOptions {
                lr: f("lr", d.lr),
                rho: f("rho", d.rho),
                eps: f("eps", d.eps),
                weight_decay: f("weight_decay", d.weight_decay),
                maximize: b("maximize"),
            })
        }
        other => panic!("unexpected optimizer {other}"),
    }
}

fn close(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| (g - w).abs() <= 2e-6 + 2e-6 * w.abs())
}

#[test]
fn pytorch_float32_trajectories() -> Result<()> {
    let root = root();
    let cases = root["trajectories"].as_array().expect("trajectories");
    assert!(cases.len() >= 20);
    for (i, case) in cases.iter().enumerate() {
        let name = case["optimizer"].as_str().expect("a name");
        let shapes: Vec<Vec<usize>> = case["shapes"]
            .as_array()
            .expect("shapes")
            .iter()
            .map(shape)
            .collect();
        let params: Vec<Variable> = case["init"]
            .as_array()
            .expect("init")
            .iter()
            .zip(&shapes)
            .map(|(x, s)| Variable::new(Tensor::from_vec(floats(x), s)?, true))
            .collect::<Result<_>>()?;
        let mut opt = Optimizer::new(params.clone(), options(name, &case["kwargs"]))?;
        let steps = case["grads"].as_array().expect("grads");
        let expected = case["expected"].as_array().expect("expected");
        for (step, (grads, want)) in steps.iter().zip(expected).enumerate() {
            for ((p, g), s) in params
                .iter()
                .zip(grads.as_array().expect("grads"))
                .zip(&shapes)
            {
                p.set_grad(Some(Variable::from_tensor(Tensor::from_vec(floats(g), s)?)))?;
            }
            opt.step()?;
            for (p, w) in params.iter().zip(want.as_array().expect("params")) {
                assert_eq!(p.dtype(), DType::F32);
                let got = p.tensor().to_vec::<f32>();
                assert!(
                    close(&got, &floats(w)),
                    "case {i} ({name} {}), step {step}: {got:?} vs {w}",
                    case["kwargs"]
                );
            }
        }
    }
    Ok(())
}

#[test]
fn invalid_options_and_params_are_errors_with_pytorch_messages() -> Result<()> {
    let w = Variable::new(Tensor::from_vec(vec![1.0f64], &[1])?, true)?;
    let message = |r: Result<Optimizer>| match r {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!(
            "expected an invalid-argument error, got {:?}",
            other.map(|_| ())
        ),
    };
    let sgd = |o: SgdOptions| Optimizer::new(vec![w.clone()], Options::Sgd(o));
    assert_eq!(
        message(sgd(SgdOptions {
            lr: -0.1,
            ..SgdOptions::default()
        })),
        "Invalid learning rate: -0.1"
    );
    assert_eq!(
        message(sgd(SgdOptions {
            nesterov: true,
            ..SgdOptions::default()
        })),
        "Nesterov momentum requires a momentum and zero dampening"
    );
    assert_eq!(
        message(Optimizer::new(
            vec![w.clone()],
            Options::Adam(AdamOptions {
                betas: (1.0, 0.9),
                ..AdamOptions::default()
            })
        )),
        "Invalid beta parameter at index 0: 1"
    );
    assert_eq!(
        message(Optimizer::new(vec![], Options::Sgd(SgdOptions::default()))),
        "optimizer got an empty parameter list"
    );
    assert_eq!(
        message(Optimizer::new(
            vec![w.clone(), w.clone()],
            Options::Sgd(SgdOptions::default())
        )),
        "some parameters appear in more than one parameter group"
    );
    let mut opt = Optimizer::new(vec![w.clone()], Options::Sgd(SgdOptions::default()))?;
    assert!(opt
        .add_param_group(vec![w.clone()], Options::Sgd(SgdOptions::default()))
        .is_err());
    Ok(())
}

#[test]
fn groups_state_skipping_and_version_bumps() -> Result<()> {
    let w = Variable::new(Tensor::from_vec(vec![1.0f64, 2.0], &[2])?, true)?;
    let b = Variable::new(Tensor::from_vec(vec![3.0f64], &[1])?, true)?;
    let mut opt = Optimizer::new(
        vec![w.clone()],
        Options::Sgd(SgdOptions {
            lr: 0.1,
            momentum: 0.9,
            ..SgdOptions::default()
        }),
    )?;
    opt.add_param_group(vec![b.clone()], Options::Adam(AdamOptions::default()))?;
    w.set_grad(Some(Variable::from_tensor(Tensor::from_vec(
        vec![1.0f64, -1.0],
        &[2],
    )?)))?;
    let (vw, vb) = (w.tensor().version(), b.tensor().version());
    opt.step()?;
    // w: p - lr * g (the momentum buffer starts as the gradient); b has no gradient.
    assert_eq!(w.tensor().to_vec::<f64>(), vec![1.0 - 0.1, 2.0 + 0.1]);
    assert_eq!(w.tensor().version(), vw + 1);
    assert_eq!(b.tensor().to_vec::<f64>(), vec![3.0]);
    assert_eq!(b.tensor().version(), vb);
    let state: &ParamState = &opt.param_groups()[0].state[0];
    let buffer = state.buffers[0].as_ref().expect("a momentum buffer");
    assert_eq!(buffer.to_vec::<f64>(), vec![1.0, -1.0]);
    assert!(state.step.is_none(), "SGD keeps no step");
    assert!(opt.param_groups()[1].state[0].step.is_none());
    // Editing the learning rate between steps applies.
    opt.param_groups_mut()[0].options.set_lr(1.0);
    opt.step()?;
    // buf = 0.9 * 1 + 1 = 1.9 (and -1.9); p -= 1.0 * buf
    let got = w.tensor().to_vec::<f64>();
    assert!((got[0] - (0.9 - 1.9)).abs() < 1e-15 && (got[1] - (2.1 + 1.9)).abs() < 1e-15);
    opt.zero_grad()?;
    assert!(w.grad().is_none());
    Ok(())
}

#[test]
fn one_and_two_threads_give_identical_bits() -> Result<()> {
    let run = |threads: usize| -> Result<Vec<Vec<u64>>> {
        rustgrad::set_num_threads(threads)?;
        let params: Vec<Variable> = [50_000usize, 7, 33_000]
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                let v: Vec<f64> = (0..n)
                    .map(|i| ((i * 7 + k) % 13) as f64 / 13.0 - 0.4)
                    .collect();
                Variable::new(Tensor::from_vec(v, &[n])?, true)
            })
            .collect::<Result<_>>()?;
        let mut opt = Optimizer::new(
            params.clone(),
            Options::NAdam(NAdamOptions {
                weight_decay: 0.1,
                ..NAdamOptions::default()
            }),
        )?;
        for _ in 0..3 {
            opt.zero_grad()?;
            for p in &params {
                p.mul(p)?.mul(p)?.sum()?.backward()?;
            }
            opt.step()?;
        }
        Ok(params
            .iter()
            .map(|p| {
                p.tensor()
                    .to_vec::<f64>()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect()
            })
            .collect())
    };
    let before = rustgrad::get_num_threads();
    let one = run(1)?;
    let two = run(2)?;
    rustgrad::set_num_threads(before)?;
    assert_eq!(one, two);
    Ok(())
}

#[test]
fn a_large_parameter_stepped_in_pieces_equals_the_same_elements_in_small_parameters() -> Result<()>
{
    // 70 000 elements are cut into pieces that run on the pool; the same values as 70
    // parameters of 1000 elements each are each updated in one pass.
    let n = 70_000usize;
    let values: Vec<f32> = (0..n)
        .map(|i| ((i * 31) % 97) as f32 / 97.0 - 0.5)
        .collect();
    let grads: Vec<f32> = (0..n)
        .map(|i| ((i * 17) % 89) as f32 / 89.0 - 0.3)
        .collect();
    let options = Options::RmsProp(RmsPropOptions {
        momentum: 0.9,
        centered: true,
        weight_decay: 0.01,
        ..RmsPropOptions::default()
    });
    let big = Variable::new(Tensor::from_vec(values.clone(), &[n])?, true)?;
    let small: Vec<Variable> = values
        .chunks(1000)
        .map(|c| Variable::new(Tensor::from_vec(c.to_vec(), &[c.len()])?, true))
        .collect::<Result<_>>()?;
    let mut big_opt = Optimizer::new(vec![big.clone()], options.clone())?;
    let mut small_opt = Optimizer::new(small.clone(), options)?;
    for _ in 0..3 {
        big.set_grad(Some(Variable::from_tensor(Tensor::from_vec(
            grads.clone(),
            &[n],
        )?)))?;
        for (p, g) in small.iter().zip(grads.chunks(1000)) {
            p.set_grad(Some(Variable::from_tensor(Tensor::from_vec(
                g.to_vec(),
                &[g.len()],
            )?)))?;
        }
        big_opt.step()?;
        small_opt.step()?;
    }
    let joined: Vec<u32> = small
        .iter()
        .flat_map(|p| p.tensor().to_vec::<f32>())
        .map(f32::to_bits)
        .collect();
    let whole: Vec<u32> = big
        .tensor()
        .to_vec::<f32>()
        .into_iter()
        .map(f32::to_bits)
        .collect();
    assert_eq!(whole, joined);
    Ok(())
}

fn rosenbrock(x: &Variable) -> Result<Variable> {
    let n = x.shape()[0] as i64;
    let (head, tail) = (x.narrow(0, 0, n - 1)?, x.narrow(0, 1, n - 1)?);
    let valley = tail
        .sub(&head.pow_scalar(2.0)?)?
        .pow_scalar(2.0)?
        .mul_scalar(100.0)?;
    valley.add(&head.rsub_scalar(1.0)?.pow_scalar(2.0)?)?.sum()
}

#[test]
fn lbfgs_matches_pytorch() -> Result<()> {
    let root = root();
    let cases = root["lbfgs"].as_array().expect("lbfgs cases");
    assert!(cases
        .iter()
        .any(|c| c["kwargs"]["line_search_fn"] == "strong_wolfe"));
    assert!(cases
        .iter()
        .any(|c| c["kwargs"].get("line_search_fn").is_none()));
    for case in cases {
        let kw = &case["kwargs"];
        let d = LbfgsOptions::default();
        let options = LbfgsOptions {
            lr: kw.get("lr").and_then(Value::as_f64).unwrap_or(d.lr),
            max_iter: kw
                .get("max_iter")
                .and_then(Value::as_u64)
                .map_or(d.max_iter, |v| v as usize),
            history_size: kw
                .get("history_size")
                .and_then(Value::as_u64)
                .map_or(d.history_size, |v| v as usize),
            strong_wolfe: kw.get("line_search_fn").and_then(Value::as_str) == Some("strong_wolfe"),
            maximize: kw.get("maximize").and_then(Value::as_bool).unwrap_or(false),
            ..d
        };
        let x0: Vec<f64> = case["x0"]
            .as_array()
            .expect("x0")
            .iter()
            .map(|v| v.as_f64().expect("x"))
            .collect();
        let x = Variable::new(Tensor::from_vec(x0, &[4])?, true)?;
        let mut opt = Lbfgs::new(vec![x.clone()], options)?;
        let steps = case["expected"].as_array().expect("expected");
        let losses = case["losses"].as_array().expect("losses");
        for (want, want_loss) in steps.iter().zip(losses) {
            let loss = opt.step(|| {
                x.set_grad(None)?;
                let loss = rosenbrock(&x)?;
                loss.backward()?;
                Ok(loss.tensor().item()?.to_f64())
            })?;
            let want_loss = want_loss.as_f64().expect("a loss");
            assert!(
                (loss - want_loss).abs() <= 1e-9 * want_loss.abs() + 1e-12,
                "{kw}: loss {loss} vs {want_loss}"
            );
            let got = x.tensor().to_vec::<f64>();
            for (g, w) in got.iter().zip(want.as_array().expect("x")) {
                let w = w.as_f64().expect("x");
                assert!(
                    (g - w).abs() <= 1e-9 * w.abs() + 1e-12,
                    "{kw}: x {got:?} vs {want}"
                );
            }
        }
        assert_eq!(
            opt.func_evals() as u64,
            case["func_evals"].as_u64().expect("func_evals")
        );
        assert_eq!(
            opt.n_iter() as u64,
            case["n_iter"].as_u64().expect("n_iter")
        );
    }
    Ok(())
}

/// The float16 / bfloat16 trajectories of tests/vectors/optim_half.json (written by
/// tests/vectors/generate_optim_half.py): parameters of whole ATen vectors (64 and 128
/// elements) must match PyTorch bitwise; the 15-element one, which ATen updates in its
/// scalar loop (one more rounding in `add`'s `alpha * other`), within four units of the
/// dtype's precision. See Note [Optimizer steps].
#[test]
fn pytorch_half_trajectories() -> Result<()> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/optim_half.json");
    let text = std::fs::read_to_string(&path).expect("optim_half.json is readable");
    let root: Value = serde_json::from_str(&text).expect("optim_half.json is JSON");
    let cases = root["cases"].as_array().expect("cases");
    assert!(cases.len() >= 40);
    let f64s = |v: &Value| -> Vec<f64> {
        v.as_array()
            .expect("numbers")
            .iter()
            .map(|x| match x.as_str() {
                // Non-finite values are written as "nan", "inf", "-inf".
                Some(text) => text.parse().expect("a float spelled out"),
                None => x.as_f64().expect("a number"),
            })
            .collect()
    };
    for (i, case) in cases.iter().enumerate() {
        let name = case["optimizer"].as_str().expect("a name");
        let (dtype, eps) = match case["dtype"].as_str().expect("a dtype") {
            "float16" => (DType::F16, 2f64.powi(-10)),
            _ => (DType::BF16, 2f64.powi(-7)),
        };
        let shapes: Vec<Vec<usize>> = case["shapes"]
            .as_array()
            .expect("shapes")
            .iter()
            .map(shape)
            .collect();
        let tensor = |v: &Value, s: &[usize]| Tensor::from_vec(f64s(v), s)?.to_dtype(dtype);
        let params: Vec<Variable> = case["init"]
            .as_array()
            .expect("init")
            .iter()
            .zip(&shapes)
            .map(|(x, s)| Variable::new(tensor(x, s)?, true))
            .collect::<Result<_>>()?;
        let mut opt = Optimizer::new(params.clone(), options(name, &case["kwargs"]))?;
        let steps = case["grads"].as_array().expect("grads");
        let expected = case["expected"].as_array().expect("expected");
        for (step, (grads, want)) in steps.iter().zip(expected).enumerate() {
            for ((p, g), s) in params
                .iter()
                .zip(grads.as_array().expect("grads"))
                .zip(&shapes)
            {
                p.set_grad(Some(Variable::from_tensor(tensor(g, s)?)))?;
            }
            opt.step()?;
            for (p, w) in params.iter().zip(want.as_array().expect("params")) {
                assert_eq!(p.dtype(), dtype);
                let got = p.tensor().to_vec::<f64>();
                let want = f64s(w);
                let scale = want
                    .iter()
                    .filter(|x| x.is_finite())
                    .fold(0.0f64, |m, x| m.max(x.abs()));
                let exact = want.len() % 64 == 0;
                let ok = got.iter().zip(&want).all(|(g, w)| {
                    if w.is_nan() {
                        g.is_nan()
                    } else if exact || w.is_infinite() {
                        g == w
                    } else {
                        (g - w).abs() <= 4.0 * eps * (w.abs() + scale)
                    }
                });
                assert!(
                    ok,
                    "case {i} ({name} {} {dtype:?}), step {step}: {got:?} vs {want:?}",
                    case["kwargs"]
                );
            }
        }
    }
    Ok(())
}
