//! PyTorch's `grid_sample(mode="bicubic")` vectors (`tests/vectors/nn_grid_sample_bicubic.json`,
//! written by `generate_nn_grid_sample_bicubic.py`) through the engine's Rust API: the
//! output, grad_fn name and the gradients of the input and the grid (4-D and 5-D, every
//! padding mode, non-finite places), and the engine-level errors with PyTorch's messages.

use rustgrad::autograd::graph::node_name;
use rustgrad::{DType, GridPaddingMode, GridSampleMode, Tensor, Variable};
use serde_json::{Map, Value};
use std::path::PathBuf;

type CaseResult<T> = Result<T, String>;

fn load() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/nn_grid_sample_bicubic.json");
    let text = std::fs::read_to_string(&path).expect("nn_grid_sample_bicubic.json is readable");
    serde_json::from_str(&text).expect("nn_grid_sample_bicubic.json is valid JSON")
}

fn field<'a>(obj: &'a Value, key: &str) -> CaseResult<&'a Value> {
    obj.get(key).ok_or_else(|| format!("missing field {key:?}"))
}

fn usizes(v: &Value) -> CaseResult<Vec<usize>> {
    v.as_array()
        .ok_or("not a list")?
        .iter()
        .map(|x| x.as_u64().map(|u| u as usize).ok_or_else(|| format!("{x}")))
        .collect()
}

fn dtype(v: &Value) -> CaseResult<DType> {
    match v.as_str() {
        Some("float64") => Ok(DType::F64),
        Some("float32") => Ok(DType::F32),
        Some("int64") => Ok(DType::I64),
        other => Err(format!("dtype {other:?}")),
    }
}

/// A number, or a non-finite one written as "nan", "inf" or "-inf".
fn number(v: &Value) -> CaseResult<f64> {
    match v {
        Value::String(s) => s.parse().map_err(|_| format!("number {s:?}")),
        _ => v.as_f64().ok_or_else(|| format!("number {v}")),
    }
}

fn values(obj: &Value) -> CaseResult<Vec<f64>> {
    field(obj, "data")?
        .as_array()
        .ok_or("data")?
        .iter()
        .map(number)
        .collect()
}

fn build(obj: &Value) -> CaseResult<Tensor> {
    let shape = usizes(field(obj, "shape")?)?;
    let dt = dtype(field(obj, "dtype")?)?;
    Tensor::from_vec(values(obj)?, &shape)
        .and_then(|t| t.to_dtype(dt))
        .map_err(|e| e.to_string())
}

fn check(what: &str, actual: &Variable, expected: &Value) -> CaseResult<()> {
    let shape = usizes(field(expected, "shape")?)?;
    if actual.shape().as_slice() != shape.as_slice() {
        return Err(format!(
            "{what}: shape {:?}, expected {shape:?}",
            actual.shape()
        ));
    }
    let dt = dtype(field(expected, "dtype")?)?;
    if actual.dtype() != dt {
        return Err(format!("{what}: dtype {:?}", actual.dtype()));
    }
    let tol = if dt == DType::F64 { 1e-10 } else { 1e-5 };
    for (i, (g, e)) in actual
        .to_vec::<f64>()
        .iter()
        .zip(values(expected)?)
        .enumerate()
    {
        let within = if e.is_finite() {
            (g - e).abs() <= tol + tol * e.abs()
        } else {
            // NaN where PyTorch has NaN, the same infinity where it has one.
            g.is_nan() && e.is_nan() || *g == e
        };
        if !within {
            return Err(format!("{what}[{i}]: {g:e}, expected {e:e}"));
        }
    }
    Ok(())
}

fn run(kwargs: &Map<String, Value>, args: &[Variable]) -> rustgrad::Result<Variable> {
    let padding = match kwargs.get("padding_mode").and_then(Value::as_str) {
        Some("border") => GridPaddingMode::Border,
        Some("reflection") => GridPaddingMode::Reflection,
        _ => GridPaddingMode::Zeros,
    };
    let align_corners = kwargs
        .get("align_corners")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    args[0].grid_sample(&args[1], GridSampleMode::Bicubic, padding, align_corners)
}

fn run_case(case: &Value) -> CaseResult<()> {
    let kwargs = field(case, "kwargs")?.as_object().ok_or("kwargs")?;
    let mut leaves = Vec::new();
    for spec in field(case, "inputs")?.as_array().ok_or("inputs")? {
        let requires_grad = field(spec, "requires_grad")?
            .as_bool()
            .ok_or("requires_grad")?;
        leaves.push(Variable::new(build(spec)?, requires_grad).map_err(|e| e.to_string())?);
    }
    let out = run(kwargs, &leaves).map_err(|e| format!("forward: {e}"))?;
    check("output", &out, field(case, "output")?)?;
    let node = out.grad_fn().ok_or("no grad_fn")?;
    let name = node_name(node.id()).map_err(|e| e.to_string())?;
    let want = field(case, "grad_fn")?.as_str().ok_or("grad_fn")?;
    if name != want {
        return Err(format!("grad_fn {name}, expected {want}"));
    }
    let gradient = Variable::from_tensor(build(field(case, "grad_output")?)?);
    out.backward_with(Some(&gradient), false, false)
        .map_err(|e| format!("backward: {e}"))?;
    let grads = field(case, "grads")?.as_array().ok_or("grads")?;
    for ((leaf, expected), what) in leaves.iter().zip(grads).zip(["input", "grid"]) {
        match (leaf.grad(), expected.is_null()) {
            (None, true) => {}
            (Some(g), false) => check(&format!("grad of the {what}"), &g, expected)?,
            _ => return Err(format!("grad of the {what}: presence differs")),
        }
    }
    Ok(())
}

#[test]
fn nn_grid_sample_bicubic_vectors() {
    let root = load();
    let cases = root["cases"].as_array().expect("cases");
    assert!(cases.len() >= 30);
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            run_case(case)
                .err()
                .map(|e| format!("  {}: {e}", case["name"].as_str().unwrap_or("?")))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The engine refuses the calls PyTorch refuses, with its messages (the Python layer's
/// own ValueErrors are checked by pytest).
#[test]
fn nn_grid_sample_bicubic_engine_errors() {
    let root = load();
    let mut checked = 0;
    for spec in root["errors"].as_array().expect("errors") {
        if spec["error"] == "ValueError" {
            continue;
        }
        let dt = dtype(&spec["dtype"]).expect("dtype");
        let xs: Vec<Variable> = spec["shapes"]
            .as_array()
            .expect("shapes")
            .iter()
            .map(|s| Variable::from_tensor(Tensor::ones(&usizes(s).expect("shape"), dt).unwrap()))
            .collect();
        let kwargs = spec["kwargs"].as_object().expect("kwargs");
        let message = spec["message"].as_str().unwrap_or("");
        match run(kwargs, &xs) {
            Ok(_) => panic!("{}: accepted", spec["shapes"]),
            Err(e) => assert_eq!(e.to_string(), message, "{}", spec["shapes"]),
        }
        checked += 1;
    }
    assert!(checked >= 8);
}
