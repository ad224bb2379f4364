//! The PyTorch-generated vectors of tests/vectors/nn_loss.json (written by
//! tests/vectors/generate_nn_loss.py), run through the engine's Rust API: each case's
//! output, grad_fn name and the gradient of every input that requires grad.

use rustgrad::autograd;
use rustgrad::{DType, PointwiseLoss, Reduction, Result, Tensor, Variable};
use serde_json::Value;
use std::path::PathBuf;

fn cases() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/nn_loss.json");
    let text = std::fs::read_to_string(&path).expect("nn_loss.json is readable");
    let root: Value = serde_json::from_str(&text).expect("nn_loss.json is JSON");
    root["cases"].as_array().expect("a cases array").clone()
}

fn dtype(v: &Value) -> DType {
    match v.as_str() {
        Some("float64") => DType::F64,
        Some("float32") => DType::F32,
        Some("int64") => DType::I64,
        other => panic!("unexpected dtype {other:?}"),
    }
}

fn shape(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .expect("a shape")
        .iter()
        .map(|s| s.as_u64().expect("a size") as usize)
        .collect()
}

/// `{"data", "shape", "dtype"}` as a tensor (floats parsed as f64, then rounded).
fn tensor(v: &Value) -> Tensor {
    let data = v["data"].as_array().expect("data");
    let shape = shape(v);
    match dtype(&v["dtype"]) {
        DType::I64 => Tensor::from_vec(
            data.iter().map(|x| x.as_i64().expect("int")).collect(),
            &shape,
        )
        .unwrap(),
        d => Tensor::from_vec(
            data.iter().map(|x| x.as_f64().expect("float")).collect(),
            &shape,
        )
        .and_then(|t| t.to_dtype(d))
        .unwrap(),
    }
}

fn reduction(kw: &Value) -> Reduction {
    Reduction::from_name(kw["reduction"].as_str().unwrap_or("mean")).unwrap()
}

/// The pointwise loss an op name stands for, when the engine has it as one op (the
/// other functionals of the file are compositions in the Python package, and
/// `smooth_l1_loss` with `beta = 0` is PyTorch's `l1_loss` composite).
fn pointwise(op: &str, kw: &Value) -> Option<PointwiseLoss> {
    match op {
        "mse_loss" => Some(PointwiseLoss::Mse),
        "smooth_l1_loss" => {
            let beta = kw["beta"].as_f64().unwrap_or(1.0);
            (beta > 0.0).then_some(PointwiseLoss::SmoothL1 { beta })
        }
        "huber_loss" => Some(PointwiseLoss::Huber {
            delta: kw["delta"].as_f64().unwrap_or(1.0),
        }),
        "binary_cross_entropy" => Some(PointwiseLoss::BinaryCrossEntropy),
        "binary_cross_entropy_with_logits" => Some(PointwiseLoss::BinaryCrossEntropyWithLogits),
        _ => None,
    }
}

fn run(op: &str, xs: &[Variable], kw: &Value) -> Result<Variable> {
    if let Some(kind) = pointwise(op, kw) {
        let named = |name: &str| kw["named"][name].as_u64().map(|i| &xs[i as usize]);
        return xs[0].pointwise_loss(
            &xs[1],
            kind,
            named("weight"),
            named("pos_weight"),
            reduction(kw),
        );
    }
    let weight = kw["weight"]
        .as_bool()
        .unwrap_or(false)
        .then(|| &xs[xs.len() - 1]);
    let ignore_index = kw["ignore_index"].as_i64().unwrap_or(-100);
    match op {
        "cross_entropy" => {
            let target = match kw.get("target") {
                Some(t) => Variable::from_tensor(tensor(t)),
                None => xs[1].clone(),
            };
            let ls = kw["label_smoothing"].as_f64().unwrap_or(0.0);
            xs[0].cross_entropy(&target, weight, reduction(kw), ignore_index, ls)
        }
        "nll_loss" => xs[0].nll_loss(&tensor(&kw["target"]), weight, reduction(kw), ignore_index),
        other => panic!("unknown op {other}"),
    }
}

fn assert_close(what: &str, actual: &Variable, expected: &Value) {
    assert_eq!(
        actual.shape().as_slice(),
        shape(expected).as_slice(),
        "{what}: shape"
    );
    let dt = dtype(&expected["dtype"]);
    assert_eq!(actual.dtype(), dt, "{what}: dtype");
    let (rtol, atol) = if dt == DType::F32 {
        (1e-5, 1e-6)
    } else {
        (1e-6, 1e-9)
    };
    let got = actual.to_vec::<f64>();
    let want: Vec<f64> = expected["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "{what}[{i}]: {g} != {w}"
        );
    }
}

/// PyTorch's C++ composites divide by a C++ Scalar (DivBackward1); the engine's
/// `div_scalar` is DivBackward0, as PyTorch's `x / 2` from Python.
fn expected_name(name: &str) -> &str {
    if name == "DivBackward1" {
        "DivBackward0"
    } else {
        name
    }
}

#[test]
fn nn_loss_vectors_match_pytorch() {
    let cases = cases();
    assert!(cases.len() >= 90);
    let mut ran = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let op = case["op"].as_str().unwrap();
        if !matches!(op, "cross_entropy" | "nll_loss") && pointwise(op, &case["kwargs"]).is_none() {
            continue;
        }
        ran += 1;
        let leaves: Vec<Variable> = case["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|spec| {
                let rg = spec["requires_grad"].as_bool().unwrap();
                Variable::new(tensor(spec), rg).unwrap()
            })
            .collect();
        let viewed: Vec<Variable> = leaves
            .iter()
            .zip(case["inputs"].as_array().unwrap())
            .map(
                |(x, spec)| match spec["view"].get("kind").and_then(Value::as_str) {
                    None => x.clone(),
                    Some("transpose") => x
                        .transpose(
                            spec["view"]["dim0"].as_i64().unwrap(),
                            spec["view"]["dim1"].as_i64().unwrap(),
                        )
                        .unwrap(),
                    Some(other) => panic!("{name}: view {other}"),
                },
            )
            .collect();
        let out = run(op, &viewed, &case["kwargs"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_close(&format!("{name} output"), &out, &case["output"]);
        if case["grad_output"].is_null() {
            assert!(!out.requires_grad(), "{name}");
            continue;
        }
        let node = out.grad_fn().expect("a grad_fn");
        assert_eq!(
            autograd::node_name(node.id()).unwrap(),
            expected_name(case["grad_fn"].as_str().unwrap()),
            "{name}: grad_fn"
        );
        let go = Variable::from_tensor(tensor(&case["grad_output"]));
        out.backward_with(Some(&go), false, false).unwrap();
        for (i, (leaf, want)) in leaves
            .iter()
            .zip(case["grads"].as_array().unwrap())
            .enumerate()
        {
            if want.is_null() {
                assert!(leaf.grad().is_none(), "{name}: grad {i}");
            } else {
                let grad = leaf.grad().unwrap_or_else(|| panic!("{name}: no grad {i}"));
                assert_close(&format!("{name} grad {i}"), &grad, want);
            }
        }
    }
    assert!(ran >= 140, "only {ran} cases ran");
}

/// Out-of-range class indices are errors before any value is read.
#[test]
fn out_of_range_targets_are_errors() {
    let x = Variable::new(Tensor::zeros(&[3, 5], DType::F64), true).unwrap();
    for bad in [5i64, -1, i64::MAX, i64::MIN] {
        let t = Tensor::from_vec(vec![0i64, bad, 1], &[3]).unwrap();
        let err = x.nll_loss(&t, None, Reduction::Mean, -100).unwrap_err();
        assert_eq!(err.to_string(), format!("Target {bad} is out of bounds."));
        let err = x
            .cross_entropy(&Variable::from_tensor(t), None, Reduction::Sum, -100, 0.0)
            .unwrap_err();
        assert_eq!(err.to_string(), format!("Target {bad} is out of bounds."));
    }
}

/// Bitwise identical losses and gradients for 1 and 2 threads, above the parallel
/// threshold.
#[test]
fn cross_entropy_is_deterministic_across_thread_counts() {
    let (n, c) = (257, 300);
    let values: Vec<f32> = (0..n * c)
        .map(|i| ((i * 7919 % 1013) as f32 / 101.0).sin() * 4.0)
        .collect();
    let targets: Vec<i64> = (0..n).map(|i| (i * 31 % c) as i64).collect();
    let run = |threads: usize| {
        rustgrad::set_num_threads(threads).unwrap();
        let x = Variable::new(Tensor::from_vec(values.clone(), &[n, c]).unwrap(), true).unwrap();
        let t = Variable::from_tensor(Tensor::from_vec(targets.clone(), &[n]).unwrap());
        let loss = x
            .cross_entropy(&t, None, Reduction::Mean, -100, 0.1)
            .unwrap();
        loss.backward().unwrap();
        (loss.to_vec::<f32>(), x.grad().unwrap().to_vec::<f32>())
    };
    let one = run(1);
    let two = run(2);
    assert_eq!(one.0[0].to_bits(), two.0[0].to_bits());
    assert!(one
        .1
        .iter()
        .zip(&two.1)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}
