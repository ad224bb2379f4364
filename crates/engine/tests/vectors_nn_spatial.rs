//! PyTorch's pad, interpolate, grid_sample and affine_grid vectors
//! (`tests/vectors/nn_spatial.json`, written by `generate_nn_spatial.py`), through the
//! engine's Rust API: forward, grad_fn name and the gradient of every input. The
//! Python-level argument handling of `interpolate` (size or scale factor) is mirrored
//! here the way `rustgrad.nn.functional.interpolate` does it.

use rustgrad::autograd::graph::node_name;
use rustgrad::{DType, GridPaddingMode, GridSampleMode, PadMode, Tensor, UpsampleMode, Variable};
use serde_json::{Map, Value};
use std::path::PathBuf;

type CaseResult<T> = Result<T, String>;

fn load() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/nn_spatial.json");
    let text = std::fs::read_to_string(&path).expect("nn_spatial.json is readable");
    serde_json::from_str(&text).expect("nn_spatial.json is valid JSON")
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
        other => Err(format!("dtype {other:?}")),
    }
}

fn build(obj: &Value) -> CaseResult<Tensor> {
    let shape = usizes(field(obj, "shape")?)?;
    let data: Vec<f64> = field(obj, "data")?
        .as_array()
        .ok_or("data")?
        .iter()
        .map(|x| x.as_f64().ok_or("number"))
        .collect::<Result<_, _>>()?;
    let dt = dtype(field(obj, "dtype")?)?;
    Tensor::from_vec(data, &shape)
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
    let (rtol, atol) = if dt == DType::F64 {
        (1e-9, 1e-11)
    } else {
        (2e-5, 2e-6)
    };
    let want = field(expected, "data")?.as_array().ok_or("data")?;
    for (i, (g, e)) in actual.to_vec::<f64>().iter().zip(want).enumerate() {
        let e = e.as_f64().ok_or("number")?;
        // Written so that a NaN result counts as a mismatch.
        let within = (g - e).abs() <= atol + rtol * e.abs();
        if !within {
            return Err(format!("{what}[{i}]: {g:e}, expected {e:e}"));
        }
    }
    Ok(())
}

fn str_kwarg<'a>(kwargs: &'a Map<String, Value>, key: &str, default: &'a str) -> &'a str {
    kwargs.get(key).and_then(Value::as_str).unwrap_or(default)
}

fn bool_kwarg(kwargs: &Map<String, Value>, key: &str) -> bool {
    kwargs.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// One per spatial dim from an int or a list.
fn per_dim(v: &Value, n: usize) -> Vec<f64> {
    match v.as_array() {
        Some(list) => list
            .iter()
            .map(|x| x.as_f64().unwrap_or(f64::NAN))
            .collect(),
        None => vec![v.as_f64().unwrap_or(f64::NAN); n],
    }
}

fn interpolate(x: &Variable, kwargs: &Map<String, Value>) -> rustgrad::Result<Variable> {
    let shape = x.shape();
    let n = shape.len() - 2;
    let mode = match str_kwarg(kwargs, "mode", "nearest") {
        "nearest" => UpsampleMode::Nearest,
        "nearest-exact" => UpsampleMode::NearestExact,
        "bicubic" => UpsampleMode::Cubic,
        _ => UpsampleMode::Linear,
    };
    let (size, scales): (Vec<usize>, Vec<Option<f64>>) = match kwargs.get("size") {
        Some(size) => (
            per_dim(size, n).iter().map(|&s| s as usize).collect(),
            vec![None; n],
        ),
        None => {
            let factors = per_dim(&kwargs["scale_factor"], n);
            let size = (0..n)
                .map(|d| (shape[d + 2] as f64 * factors[d]).floor() as usize)
                .collect();
            let recompute = bool_kwarg(kwargs, "recompute_scale_factor");
            let scales = factors.iter().map(|&f| (!recompute).then_some(f)).collect();
            (size, scales)
        }
    };
    x.upsample(mode, &size, &scales, bool_kwarg(kwargs, "align_corners"))
}

fn run(op: &str, kwargs: &Map<String, Value>, args: &[Variable]) -> rustgrad::Result<Variable> {
    match op {
        "pad" => {
            let pad: Vec<i64> = kwargs["pad"]
                .as_array()
                .map(|p| p.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default();
            let mode = match str_kwarg(kwargs, "mode", "constant") {
                "reflect" => PadMode::Reflect,
                "replicate" => PadMode::Replicate,
                "circular" => PadMode::Circular,
                _ => PadMode::Constant,
            };
            args[0].pad(&pad, mode, kwargs.get("value").and_then(Value::as_f64))
        }
        "interpolate" => interpolate(&args[0], kwargs),
        "grid_sample" => {
            let mode = match str_kwarg(kwargs, "mode", "bilinear") {
                "nearest" => GridSampleMode::Nearest,
                _ => GridSampleMode::Bilinear,
            };
            let padding = match str_kwarg(kwargs, "padding_mode", "zeros") {
                "border" => GridPaddingMode::Border,
                "reflection" => GridPaddingMode::Reflection,
                _ => GridPaddingMode::Zeros,
            };
            args[0].grid_sample(&args[1], mode, padding, bool_kwarg(kwargs, "align_corners"))
        }
        "affine_grid" => {
            let size: Vec<usize> = kwargs["size"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .filter_map(|s| s.as_u64().map(|u| u as usize))
                        .collect()
                })
                .unwrap_or_default();
            args[0].affine_grid(&size, bool_kwarg(kwargs, "align_corners"))
        }
        other => panic!("unknown op {other}"),
    }
}

fn run_case(case: &Value) -> CaseResult<()> {
    let op = field(case, "op")?.as_str().ok_or("op")?;
    let kwargs = field(case, "kwargs")?.as_object().ok_or("kwargs")?;
    let mut leaves = Vec::new();
    for spec in field(case, "inputs")?.as_array().ok_or("inputs")? {
        let requires_grad = field(spec, "requires_grad")?
            .as_bool()
            .ok_or("requires_grad")?;
        leaves.push(Variable::new(build(spec)?, requires_grad).map_err(|e| e.to_string())?);
    }
    let out = run(op, kwargs, &leaves).map_err(|e| format!("forward: {e}"))?;
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
    for (i, (leaf, expected)) in leaves
        .iter()
        .zip(field(case, "grads")?.as_array().ok_or("grads")?)
        .enumerate()
    {
        match (leaf.grad(), expected.is_null()) {
            (None, true) => {}
            (Some(g), false) => check(&format!("grad of input {i}"), &g, expected)?,
            _ => return Err(format!("grad of input {i}: presence differs")),
        }
    }
    Ok(())
}

#[test]
fn nn_spatial_vectors() {
    let root = load();
    let cases = root["cases"].as_array().expect("cases");
    assert!(cases.len() >= 90);
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

/// The error sweep's engine-level errors (the Python layer's own ValueErrors and
/// TypeErrors are checked by pytest): the engine refuses the same calls.
#[test]
fn nn_spatial_engine_errors() {
    let root = load();
    let mut checked = 0;
    for spec in root["errors"].as_array().expect("errors") {
        let error = spec["error"].as_str().unwrap_or("");
        let fun = spec["fn"].as_str().unwrap_or("");
        let kwargs = spec["kwargs"].as_object().expect("kwargs");
        let engine_level = match fun {
            "pad" => str_kwarg(kwargs, "mode", "constant") != "foo",
            "grid_sample" => error == "RuntimeError",
            _ => false,
        };
        if !engine_level {
            continue;
        }
        let xs: Vec<Variable> = spec["shapes"]
            .as_array()
            .expect("shapes")
            .iter()
            .map(|s| {
                Variable::from_tensor(Tensor::ones(&usizes(s).expect("shape"), DType::F64).unwrap())
            })
            .collect();
        let result = run(fun, kwargs, &xs);
        let message = spec["message"].as_str().unwrap_or("");
        match result {
            Ok(_) => panic!("{}: accepted", spec["name"]),
            Err(e) => assert_eq!(e.to_string(), message, "{}", spec["name"]),
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} engine-level errors");
}

/// Results are bitwise identical for 1 and 2 threads (sizes above the parallel
/// threshold).
#[test]
fn nn_spatial_thread_count_does_not_change_results() {
    let data: Vec<f64> = (0..2 * 4 * 64 * 64)
        .map(|i| ((i * 37 % 101) as f64).sin())
        .collect();
    let run_all = |threads: usize| -> Vec<Vec<f64>> {
        rustgrad::set_num_threads(threads).expect("threads");
        let x = Variable::new(
            Tensor::from_vec(data.clone(), &[2, 4, 64, 64]).unwrap(),
            true,
        )
        .unwrap();
        let up = x
            .upsample(UpsampleMode::Linear, &[128, 100], &[None, None], false)
            .unwrap();
        let cubic = x
            .upsample(UpsampleMode::Cubic, &[90, 70], &[None, None], true)
            .unwrap();
        let padded = x.pad(&[3, 4, 5, 6], PadMode::Reflect, None).unwrap();
        let loss = up
            .mul(&up)
            .unwrap()
            .sum()
            .unwrap()
            .add(&cubic.sum().unwrap())
            .unwrap()
            .add(&padded.mul(&padded).unwrap().sum().unwrap())
            .unwrap();
        loss.backward().unwrap();
        vec![
            up.to_vec::<f64>(),
            cubic.to_vec::<f64>(),
            padded.to_vec::<f64>(),
            x.grad().unwrap().to_vec::<f64>(),
        ]
    };
    let before = rustgrad::get_num_threads();
    let (one, two) = (run_all(1), run_all(2));
    rustgrad::set_num_threads(before).unwrap();
    for (a, b) in one.iter().zip(&two) {
        assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}
