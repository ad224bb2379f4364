//! The PyTorch-generated vectors of tests/vectors/nn_loss.json (written by
//! tests/vectors/generate_nn_loss.py), run through the engine's Rust API: each case's
//! output, grad_fn name and the gradient of every input that requires grad.

use rustgrad::autograd;
use rustgrad::{
    BagMode, BagOptions, DType, KlReduction, PointwiseLoss, Reduction, Result, Tensor, Variable,
};
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

/// The pointwise loss an op name stands for, when the engine has it as one op
/// (`smooth_l1_loss` with `beta = 0` is PyTorch's `l1_loss` composite).
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
        _ => run_functional(op, xs, kw),
    }
}

fn num(kw: &Value, key: &str, default: f64) -> f64 {
    kw[key].as_f64().unwrap_or(default)
}

fn flag(kw: &Value, key: &str, default: bool) -> bool {
    kw[key].as_bool().unwrap_or(default)
}

/// The other functionals of the file, through their Rust API, with PyTorch's defaults.
fn run_functional(op: &str, xs: &[Variable], kw: &Value) -> Result<Variable> {
    let margin = num(kw, "margin", 0.0);
    let padding_idx = kw["padding_idx"].as_i64();
    match op {
        "l1_loss" | "smooth_l1_loss" => xs[0].l1_loss(&xs[1], None, reduction(kw)),
        "kl_div" => xs[0].kl_div(
            &xs[1],
            KlReduction::from_name(kw["reduction"].as_str().unwrap_or("mean"))?,
            flag(kw, "log_target", false),
        ),
        "poisson_nll_loss" => xs[0].poisson_nll_loss(
            &xs[1],
            flag(kw, "log_input", true),
            flag(kw, "full", false),
            num(kw, "eps", 1e-8),
            reduction(kw),
        ),
        "cosine_similarity" => xs[0].cosine_similarity(
            &xs[1],
            kw["dim"].as_i64().unwrap_or(1),
            num(kw, "eps", 1e-8),
        ),
        "pairwise_distance" => xs[0].pairwise_distance(
            &xs[1],
            num(kw, "p", 2.0),
            num(kw, "eps", 1e-6),
            flag(kw, "keepdim", false),
        ),
        "cosine_embedding_loss" => {
            xs[0].cosine_embedding_loss(&xs[1], &xs[2], margin, reduction(kw))
        }
        "margin_ranking_loss" => xs[0].margin_ranking_loss(&xs[1], &xs[2], margin, reduction(kw)),
        "triplet_margin_loss" => xs[0].triplet_margin_loss(
            &xs[1],
            &xs[2],
            num(kw, "margin", 1.0),
            num(kw, "p", 2.0),
            num(kw, "eps", 1e-6),
            flag(kw, "swap", false),
            reduction(kw),
        ),
        "glu" => xs[0].glu(kw["dim"].as_i64().unwrap_or(-1)),
        "hardshrink" => xs[0].hardshrink(num(kw, "lambd", 0.5)),
        "softshrink" => xs[0].softshrink(num(kw, "lambd", 0.5)),
        "tanhshrink" => xs[0].tanhshrink(),
        "threshold" => xs[0].threshold(num(kw, "threshold", 0.0), num(kw, "value", 0.0)),
        "prelu" => xs[0].prelu(&xs[1]),
        "rrelu" => xs[0].rrelu(
            num(kw, "lower", 1.0 / 8.0),
            num(kw, "upper", 1.0 / 3.0),
            flag(kw, "training", false),
            &rustgrad::random::default_generator(),
        ),
        "embedding" => xs[0].embedding(
            &tensor(&kw["indices"]),
            padding_idx,
            None,
            2.0,
            flag(kw, "scale_grad_by_freq", false),
        ),
        "embedding_bag" => {
            let offsets = kw.get("offsets").map(tensor);
            let options = BagOptions {
                include_last_offset: flag(kw, "include_last_offset", false),
                padding_idx,
                ..BagOptions::new(BagMode::from_name(kw["mode"].as_str().unwrap_or("mean"))?)
            };
            xs[0].embedding_bag(
                &tensor(&kw["indices"]),
                offsets.as_ref(),
                xs.get(1),
                &options,
            )
        }
        "one_hot" => Variable::from_tensor(tensor(&kw["indices"]))
            .one_hot(kw["num_classes"].as_i64().unwrap_or(-1)),
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

/// PyTorch's `pairwise_distance` calls the legacy `at::norm` (NormBackward1); the
/// engine's norm is `vector_norm`.
fn expected_name(name: &str) -> &str {
    match name {
        "NormBackward1" => "LinalgVectorNormBackward0",
        other => other,
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
    assert_eq!(ran, cases.len(), "every case runs through the Rust API");
}

/// Out-of-range class indices are errors before any value is read.
#[test]
fn out_of_range_targets_are_errors() {
    let x = Variable::new(Tensor::zeros(&[3, 5], DType::F64).unwrap(), true).unwrap();
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

/// Bad arguments of the functionals are errors with PyTorch's messages (checked against
/// PyTorch 2.x, as the pytest sweep), never panics.
#[test]
fn functional_argument_errors() {
    let x = Variable::new(Tensor::zeros(&[3, 4], DType::F64).unwrap(), true).unwrap();
    let w = Variable::new(Tensor::zeros(&[3, 4], DType::F64).unwrap(), true).unwrap();
    let err = |r: Result<Variable>| r.unwrap_err().to_string();
    assert!(err(x.glu(0)).contains("Halving dimension must be even"));
    assert!(err(x.glu(2)).contains("Dimension out of range"));
    assert!(err(x.softshrink(-1.0)).contains("lambda must be in range [0, 1.79769e+308]"));
    assert!(err(x.prelu(&Variable::from_tensor(
        Tensor::ones(&[5], DType::F64).unwrap()
    )))
    .contains("Mismatch of parameter numbers and input channel size"));
    let gen = rustgrad::random::default_generator();
    assert!(err(x.rrelu(0.5, 0.1, true, &gen)).contains("Lower bound should be less"));
    let out_of_range = Tensor::from_vec(vec![0i64, 3], &[2]).unwrap();
    assert_eq!(
        err(w.embedding(&out_of_range, None, None, 2.0, false)),
        "index out of range in self"
    );
    let offsets = Tensor::from_vec(vec![1i64], &[1]).unwrap();
    let indices = Tensor::from_vec(vec![0i64, 1], &[2]).unwrap();
    let sum = BagOptions::new(BagMode::Sum);
    assert!(err(w.embedding_bag(&indices, Some(&offsets), None, &sum))
        .contains("offsets[0] has to be 0"));
    assert!(err(w.embedding_bag(
        &out_of_range,
        Some(&Tensor::from_vec(vec![0i64], &[1]).unwrap()),
        None,
        &sum
    ))
    .contains("Index 1 of input takes value 3 which is not in the valid range [0, 3)"));
    let ints = Variable::from_tensor(Tensor::from_vec(vec![1i64, -1], &[2]).unwrap());
    assert!(err(ints.one_hot(-1)).contains("Class values must be non-negative."));
    let kind = rustgrad::DropoutKind {
        feature: true,
        alpha: false,
    };
    let v = Variable::from_tensor(Tensor::zeros(&[3], DType::F64).unwrap());
    assert!(err(v.dropout(0.5, true, kind, false, &gen)).contains("Feature dropout requires"));
    assert!(err(x.dropout(1.5, true, kind, false, &gen)).contains("dropout probability"));
    assert!(err(x.rms_norm(&[5], None, None)).contains("Given normalized_shape=[5]"));
    let a3 = Variable::from_tensor(Tensor::zeros(&[2, 3], DType::F64).unwrap());
    assert!(err(a3.triplet_margin_loss(
        &x.reshape(&[-1]).unwrap(),
        &a3,
        1.0,
        2.0,
        1e-6,
        false,
        Reduction::Mean
    ))
    .contains("expected to have the same number of dimensions"));
}
