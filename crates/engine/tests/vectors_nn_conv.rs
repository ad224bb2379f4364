//! Convolutions and linear layers against PyTorch's values (tests/vectors/nn_conv.json,
//! written by tests/vectors/generate_nn_conv.py), replayed through the `Variable` API:
//! outputs and the gradients of every input that requires grad.

use rustgrad::{ConvPadding, DType, Tensor, Variable};
use serde_json::{Map, Value};

type CaseResult<T> = Result<T, String>;

fn field<'a>(obj: &'a Value, key: &str) -> CaseResult<&'a Value> {
    obj.get(key).ok_or_else(|| format!("missing field {key:?}"))
}

fn int(v: &Value) -> CaseResult<i64> {
    v.as_i64()
        .ok_or_else(|| format!("expected an integer, got {v}"))
}

/// An int or a list of ints as a list (PyTorch's int-or-tuple arguments).
fn ints(kwargs: &Map<String, Value>, key: &str, default: i64) -> CaseResult<Vec<i64>> {
    match kwargs.get(key) {
        None => Ok(vec![default]),
        Some(Value::Array(a)) => a.iter().map(int).collect(),
        Some(v) => Ok(vec![int(v)?]),
    }
}

fn parse_dtype(v: &Value) -> CaseResult<DType> {
    match v.as_str() {
        Some("float64") => Ok(DType::F64),
        Some("float32") => Ok(DType::F32),
        other => Err(format!("unexpected dtype {other:?}")),
    }
}

fn build_tensor(obj: &Value) -> CaseResult<Tensor> {
    let shape: Vec<usize> = field(obj, "shape")?
        .as_array()
        .ok_or("shape is not a list")?
        .iter()
        .map(|v| int(v).map(|x| x as usize))
        .collect::<CaseResult<_>>()?;
    let data: Vec<f64> = field(obj, "data")?
        .as_array()
        .ok_or("data is not a list")?
        .iter()
        .map(|x| x.as_f64().ok_or_else(|| format!("non-numeric {x}")))
        .collect::<CaseResult<_>>()?;
    let dtype = parse_dtype(field(obj, "dtype")?)?;
    Tensor::from_vec(data, &shape)
        .and_then(|t| t.to_dtype(dtype))
        .map_err(|e| e.to_string())
}

fn engine<T>(what: &str, r: rustgrad::Result<T>) -> CaseResult<T> {
    r.map_err(|e| format!("{what} failed: {e}"))
}

fn apply_view(base: &Variable, view: &Value) -> CaseResult<Variable> {
    if view.is_null() {
        return Ok(base.clone());
    }
    let list = |key: &str| -> CaseResult<Vec<i64>> {
        field(view, key)?
            .as_array()
            .ok_or("not a list")?
            .iter()
            .map(int)
            .collect()
    };
    let r = match field(view, "kind")?.as_str() {
        Some("transpose") => base.transpose(int(field(view, "dim0")?)?, int(field(view, "dim1")?)?),
        Some("permute") => base.permute(&list("dims")?),
        Some("slice") => base.slice(
            int(field(view, "dim")?)?,
            field(view, "start")?.as_i64(),
            field(view, "end")?.as_i64(),
            int(field(view, "step")?)?,
        ),
        other => return Err(format!("unknown view {other:?}")),
    };
    engine("view", r)
}

/// Runs `op` through the engine's Rust API, as tests/python does through Python.
fn run_op(op: &str, kw: &Map<String, Value>, xs: &[Variable]) -> CaseResult<Variable> {
    let bias = xs.get(2);
    let groups = kw.get("groups").map(int).transpose()?.unwrap_or(1);
    let r = match op {
        "conv1d" | "conv2d" | "conv3d" => {
            let explicit = ints(kw, "padding", 0);
            let padding = match kw.get("padding").and_then(Value::as_str) {
                Some("same") => ConvPadding::Same,
                Some("valid") => ConvPadding::Valid,
                _ => ConvPadding::Explicit(explicit.as_deref().unwrap_or(&[0])),
            };
            let (stride, dilation) = (ints(kw, "stride", 1)?, ints(kw, "dilation", 1)?);
            let f = match op {
                "conv1d" => Variable::conv1d,
                "conv2d" => Variable::conv2d,
                _ => Variable::conv3d,
            };
            f(&xs[0], &xs[1], bias, &stride, padding, &dilation, groups)
        }
        "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => {
            let f = match op {
                "conv_transpose1d" => Variable::conv_transpose1d,
                "conv_transpose2d" => Variable::conv_transpose2d,
                _ => Variable::conv_transpose3d,
            };
            f(
                &xs[0],
                &xs[1],
                bias,
                &ints(kw, "stride", 1)?,
                &ints(kw, "padding", 0)?,
                &ints(kw, "output_padding", 0)?,
                groups,
                &ints(kw, "dilation", 1)?,
            )
        }
        "linear" => xs[0].linear(&xs[1], bias),
        "bilinear" => xs[0].bilinear(&xs[1], &xs[2], xs.get(3)),
        "unfold" => xs[0].unfold_blocks(
            &ints(kw, "kernel_size", 0)?,
            &ints(kw, "dilation", 1)?,
            &ints(kw, "padding", 0)?,
            &ints(kw, "stride", 1)?,
        ),
        "fold" => xs[0].fold_blocks(
            &ints(kw, "output_size", 0)?,
            &ints(kw, "kernel_size", 0)?,
            &ints(kw, "dilation", 1)?,
            &ints(kw, "padding", 0)?,
            &ints(kw, "stride", 1)?,
        ),
        "pixel_shuffle" => {
            xs[0].pixel_shuffle(int(field(&Value::Object(kw.clone()), "upscale_factor")?)?)
        }
        "pixel_unshuffle" => {
            xs[0].pixel_unshuffle(int(field(&Value::Object(kw.clone()), "downscale_factor")?)?)
        }
        other => return Err(format!("unknown op {other:?}")),
    };
    engine(op, r)
}

fn check(what: &str, actual: &Variable, expected: &Value) -> CaseResult<()> {
    let want = build_tensor(expected)?;
    if actual.shape().as_slice() != want.shape() {
        return Err(format!(
            "{what}: shape {:?}, expected {:?}",
            actual.shape(),
            want.shape()
        ));
    }
    if actual.dtype() != want.dtype() {
        return Err(format!(
            "{what}: dtype {:?}, expected {:?}",
            actual.dtype(),
            want.dtype()
        ));
    }
    let (rtol, atol) = match want.dtype() {
        DType::F32 => (1e-5, 1e-5),
        _ => (1e-6, 1e-9),
    };
    let got = actual.to_vec::<f64>();
    for (i, (g, e)) in got.iter().zip(want.to_vec::<f64>()).enumerate() {
        // Written so that a NaN result counts as a mismatch.
        let within = (g - e).abs() <= atol + rtol * e.abs();
        if !within {
            return Err(format!("{what}[{i}]: {g:e}, expected {e:e}"));
        }
    }
    Ok(())
}

fn run_case(case: &Value) -> CaseResult<()> {
    let op = field(case, "op")?.as_str().ok_or("op is not a string")?;
    let empty = Map::new();
    let kw = field(case, "kwargs")?.as_object().unwrap_or(&empty);
    let mut leaves = vec![];
    let mut xs = vec![];
    for spec in field(case, "inputs")?.as_array().ok_or("inputs")? {
        let rg = field(spec, "requires_grad")?.as_bool().unwrap_or(false);
        let leaf = engine("leaf", Variable::new(build_tensor(spec)?, rg))?;
        xs.push(apply_view(&leaf, field(spec, "view")?)?);
        leaves.push(leaf);
    }
    let out = run_op(op, kw, &xs)?;
    check("output", &out, field(case, "output")?)?;
    let gradient = Variable::from_tensor(build_tensor(field(case, "grad_output")?)?);
    engine("backward", out.backward_with(Some(&gradient), false, false))?;
    let grads = field(case, "grads")?.as_array().ok_or("grads")?;
    for (i, (leaf, expected)) in leaves.iter().zip(grads).enumerate() {
        match (leaf.grad(), expected.is_null()) {
            (None, true) => {}
            (Some(g), false) => check(&format!("grad of input {i}"), &g, expected)?,
            (g, _) => return Err(format!("grad of input {i}: present = {}", g.is_some())),
        }
    }
    Ok(())
}

#[test]
fn nn_conv_vectors() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/nn_conv.json");
    let text = std::fs::read_to_string(&path).expect("cannot read nn_conv.json");
    let root: Value = serde_json::from_str(&text).expect("nn_conv.json is not JSON");
    let cases = root["cases"].as_array().expect("no cases");
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let name = case["name"].as_str().unwrap_or("?");
            run_case(case).err().map(|e| format!("  {name}: {e}"))
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
