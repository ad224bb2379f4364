//! The pooling and normalisation vectors (tests/vectors/nn_poolnorm.json, written by
//! generate_nn_poolnorm.py from PyTorch) replayed through the engine's Rust API:
//! `max_pool2d_with_indices`, `avg_pool2d`, `adaptive_avg_pool2d`,
//! `adaptive_max_pool2d`, `max_unpool2d`, `batch_norm`, `layer_norm`, `group_norm` (the
//! 1-d forms on an unsqueezed input, as the Python layer does) and the compositions
//! `instance_norm`, `rms_norm`, `local_response_norm` and `normalize`: every case.

use rustgrad::{DType, Pool2d, Tensor, Variable};
use serde_json::{Map, Value};

type CaseResult<T> = Result<T, String>;

fn load_cases() -> Vec<Value> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/nn_poolnorm.json");
    let text = std::fs::read_to_string(&path).expect("nn_poolnorm.json is readable");
    let root: Value = serde_json::from_str(&text).expect("nn_poolnorm.json is JSON");
    root["cases"].as_array().expect("a cases array").clone()
}

fn field<'a>(v: &'a Value, key: &str) -> CaseResult<&'a Value> {
    v.get(key).ok_or_else(|| format!("missing field {key}"))
}

fn dtype_of(v: &Value) -> CaseResult<DType> {
    match v.as_str() {
        Some("float64") => Ok(DType::F64),
        Some("float32") => Ok(DType::F32),
        Some("int64") => Ok(DType::I64),
        _ => Err(format!("unexpected dtype {v}")),
    }
}

fn build(obj: &Value) -> CaseResult<Tensor> {
    let shape: Vec<usize> = field(obj, "shape")?
        .as_array()
        .ok_or("shape")?
        .iter()
        .map(|d| d.as_u64().map(|d| d as usize).ok_or("dim"))
        .collect::<Result<_, _>>()?;
    let dtype = dtype_of(field(obj, "dtype")?)?;
    let data = field(obj, "data")?.as_array().ok_or("data")?;
    let t = if dtype == DType::I64 {
        Tensor::from_vec(
            data.iter()
                .map(|v| v.as_i64().unwrap_or(i64::MIN))
                .collect(),
            &shape,
        )
    } else {
        Tensor::from_vec(
            data.iter()
                .map(|v| v.as_f64().unwrap_or(f64::NAN))
                .collect(),
            &shape,
        )
        .and_then(|t| t.to_dtype(dtype))
    };
    t.map_err(|e| format!("building a tensor: {e}"))
}

fn check(what: &str, actual: &Variable, expected: &Value) -> CaseResult<()> {
    let t = build(expected)?;
    if actual.shape().as_slice() != t.shape() {
        return Err(format!(
            "{what}: shape {:?}, expected {:?}",
            actual.shape(),
            t.shape()
        ));
    }
    if actual.dtype() != t.dtype() {
        return Err(format!(
            "{what}: dtype {:?}, expected {:?}",
            actual.dtype(),
            t.dtype()
        ));
    }
    let (rtol, atol) = match t.dtype() {
        DType::F64 => (1e-6, 1e-9),
        DType::F32 => (1e-5, 1e-5),
        _ => (0.0, 0.0),
    };
    for (i, (g, e)) in actual
        .to_vec::<f64>()
        .iter()
        .zip(t.to_vec::<f64>())
        .enumerate()
    {
        if (g - e).abs() > atol + rtol * e.abs() || g.is_nan() {
            return Err(format!("{what}[{i}]: {g:e}, expected {e:e}"));
        }
    }
    Ok(())
}

/// An int or a list of ints, as `n` values (one int repeats).
fn ints(v: Option<&Value>, default: &[i64], n: usize) -> CaseResult<Vec<i64>> {
    let v = match v {
        None | Some(Value::Null) => return Ok(default.to_vec()),
        Some(v) => v,
    };
    let list: Vec<i64> = match v.as_array() {
        Some(a) => a
            .iter()
            .map(|x| x.as_i64().ok_or("int"))
            .collect::<Result<_, _>>()?,
        None => vec![v.as_i64().ok_or("int")?],
    };
    Ok(if list.len() == 1 {
        vec![list[0]; n]
    } else {
        list
    })
}

fn flag(kw: &Map<String, Value>, key: &str, default: bool) -> bool {
    kw.get(key).and_then(Value::as_bool).unwrap_or(default)
}

fn num(kw: &Map<String, Value>, key: &str, default: f64) -> f64 {
    kw.get(key).and_then(Value::as_f64).unwrap_or(default)
}

fn pool_args(kw: &Map<String, Value>, one_d: bool, dilation: bool) -> CaseResult<Pool2d> {
    let n = if one_d { 1 } else { 2 };
    let k = ints(kw.get("kernel_size"), &[], n)?;
    let s = ints(kw.get("stride"), &k, n)?;
    let p = ints(kw.get("padding"), &vec![0; n], n)?;
    let d = if dilation {
        ints(kw.get("dilation"), &vec![1; n], n)?
    } else {
        vec![1; n]
    };
    let pair = |v: &[i64], fill: i64| if one_d { [fill, v[0]] } else { [v[0], v[1]] };
    Ok(Pool2d {
        kernel_size: pair(&k, 1),
        stride: pair(&s, 1),
        padding: pair(&p, 0),
        dilation: pair(&d, 1),
        ceil_mode: flag(kw, "ceil_mode", false),
    })
}

fn adaptive_size(kw: &Map<String, Value>, x: &Variable, one_d: bool) -> CaseResult<[i64; 2]> {
    let v = kw.get("output_size").ok_or("output_size")?;
    let shape = x.shape();
    let n = shape.len();
    let list: Vec<Value> = match v.as_array() {
        Some(a) => a.clone(),
        None if one_d => vec![Value::from(1), v.clone()],
        None => vec![v.clone(), v.clone()],
    };
    let pick = |i: usize| -> i64 { list[i].as_i64().unwrap_or(shape[n - 2 + i] as i64) };
    Ok([pick(0), pick(1)])
}

fn e<T>(r: rustgrad::Result<T>) -> CaseResult<T> {
    r.map_err(|e| format!("engine error: {e}"))
}

/// Runs one case.
fn run(case: &Value) -> CaseResult<()> {
    let op = field(case, "op")?.as_str().ok_or("op")?;
    let kw = field(case, "kwargs")?.as_object().ok_or("kwargs")?;
    let names: Vec<&str> = kw["tensor_args"]
        .as_array()
        .ok_or("tensor_args")?
        .iter()
        .map(|v| v.as_str().unwrap_or(""))
        .collect();
    let specs = field(case, "inputs")?.as_array().ok_or("inputs")?;
    let mut leaves = Vec::new();
    let mut args = std::collections::HashMap::new();
    for (name, spec) in names.iter().zip(specs) {
        let rg = spec["requires_grad"].as_bool().unwrap_or(false);
        let leaf = e(Variable::new(build(spec)?, rg))?;
        let arg = match spec["view"].as_object() {
            Some(v) => e(leaf.transpose(
                v["dim0"].as_i64().unwrap_or(0),
                v["dim1"].as_i64().unwrap_or(0),
            ))?,
            None => leaf.clone(),
        };
        args.insert(*name, arg);
        leaves.push(leaf);
    }
    let x = args.get("input").ok_or("no input")?.clone();
    let get = |n: &str| args.get(n);
    let one_d = op.ends_with("1d");
    let xin = if one_d {
        e(x.unsqueeze(-2))?
    } else {
        x.clone()
    };
    let squeeze = |v: Variable| -> CaseResult<Variable> {
        if one_d {
            e(v.squeeze_dim(-2))
        } else {
            Ok(v)
        }
    };
    let (out, indices) = match op {
        "max_pool2d" | "max_pool1d" => {
            let (v, i) = e(xin.max_pool2d_with_indices(&pool_args(kw, one_d, true)?))?;
            let i = flag(kw, "return_indices", false).then_some(squeeze(i)?);
            (squeeze(v)?, i)
        }
        "avg_pool2d" | "avg_pool1d" => {
            let div = kw.get("divisor_override").and_then(Value::as_i64);
            let v = e(xin.avg_pool2d(
                &pool_args(kw, one_d, false)?,
                flag(kw, "count_include_pad", true),
                div,
            ))?;
            (squeeze(v)?, None)
        }
        "adaptive_avg_pool2d" | "adaptive_avg_pool1d" => {
            let size = adaptive_size(kw, &xin, one_d)?;
            (squeeze(e(xin.adaptive_avg_pool2d(&size))?)?, None)
        }
        "adaptive_max_pool2d" => {
            let (v, i) = e(xin.adaptive_max_pool2d(&adaptive_size(kw, &xin, false)?))?;
            (v, flag(kw, "return_indices", false).then_some(i))
        }
        "max_unpool2d" => {
            let p = pool_args(kw, false, false)?;
            let shape = x.shape();
            let n = shape.len();
            let size = [0, 1].map(|d| {
                (shape[n - 2 + d] as i64 - 1) * p.stride[d] + p.kernel_size[d] - 2 * p.padding[d]
            });
            (
                e(x.max_unpool2d(get("indices").ok_or("indices")?, &size))?,
                None,
            )
        }
        "batch_norm" => (
            e(x.batch_norm(
                get("running_mean"),
                get("running_var"),
                get("weight"),
                get("bias"),
                flag(kw, "training", false),
                num(kw, "momentum", 0.1),
                num(kw, "eps", 1e-5),
            ))?,
            None,
        ),
        "layer_norm" => {
            let shape = ints(kw.get("normalized_shape"), &[], 1)?;
            (
                e(x.layer_norm(&shape, get("weight"), get("bias"), num(kw, "eps", 1e-5)))?,
                None,
            )
        }
        "group_norm" => {
            let groups = kw["num_groups"].as_i64().ok_or("num_groups")?;
            (
                e(x.group_norm(groups, get("weight"), get("bias"), num(kw, "eps", 1e-5)))?,
                None,
            )
        }
        "instance_norm" => (
            e(x.instance_norm(
                get("running_mean"),
                get("running_var"),
                get("weight"),
                get("bias"),
                flag(kw, "use_input_stats", true),
                num(kw, "momentum", 0.1),
                num(kw, "eps", 1e-5),
            ))?,
            None,
        ),
        "rms_norm" => {
            let shape = ints(kw.get("normalized_shape"), &[], 1)?;
            let eps = kw.get("eps").and_then(Value::as_f64);
            (e(x.rms_norm(&shape, get("weight"), eps))?, None)
        }
        "local_response_norm" => {
            let size = kw.get("size").and_then(Value::as_i64).ok_or("size")?;
            let (alpha, beta, k) = (
                num(kw, "alpha", 1e-4),
                num(kw, "beta", 0.75),
                num(kw, "k", 1.0),
            );
            (e(x.local_response_norm(size, alpha, beta, k))?, None)
        }
        "normalize" => {
            let dim = kw.get("dim").and_then(Value::as_i64).unwrap_or(1);
            (
                e(x.normalize(num(kw, "p", 2.0), dim, num(kw, "eps", 1e-12)))?,
                None,
            )
        }
        other => return Err(format!("no Rust reader for op {other}")),
    };
    check("output", &out, field(case, "output")?)?;
    if let (Some(i), Some(expected)) = (&indices, case.get("indices")) {
        check("indices", i, expected)?;
    }
    if indices.is_some() != case.get("indices").is_some() {
        return Err("indices returned and expected differ".into());
    }
    let updated = field(case, "updated")?.as_array().ok_or("updated")?;
    for ((leaf, expected), name) in leaves.iter().zip(updated).zip(&names) {
        if !expected.is_null() {
            check(&format!("{name} after the op"), leaf, expected)?;
        }
    }
    let grad_output = field(case, "grad_output")?;
    if grad_output.is_null() {
        return if out.requires_grad() {
            Err("output requires grad".into())
        } else {
            Ok(())
        };
    }
    let go = Variable::from_tensor(build(grad_output)?);
    e(out.backward_with(Some(&go), false, false))?;
    let grads = field(case, "grads")?.as_array().ok_or("grads")?;
    for ((leaf, expected), name) in leaves.iter().zip(grads).zip(&names) {
        match (leaf.grad(), expected.is_null()) {
            (None, true) => {}
            (Some(g), false) => check(&format!("grad of {name}"), &g, expected)?,
            (g, _) => return Err(format!("grad of {name}: got {:?}", g.map(|g| g.shape()))),
        }
    }
    Ok(())
}

#[test]
fn nn_poolnorm_vectors() {
    let cases = load_cases();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        match run(case) {
            Ok(()) => ran += 1,
            Err(m) => failures.push(format!("  {name}: {m}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(ran, cases.len(), "every case runs through the Rust API");
}

/// Bad windows (zero, negative, absurdly large) are errors with PyTorch's messages,
/// never panics or out-of-bounds reads.
#[test]
fn bad_windows_are_errors() {
    let x = Variable::from_tensor(Tensor::zeros(&[1, 2, 5, 5], DType::F32).unwrap());
    let big = i64::MAX;
    // (kernel_size, stride, padding, dilation, message)
    type Bad = ([i64; 2], [i64; 2], [i64; 2], [i64; 2], &'static str);
    let cases: [Bad; 6] = [
        (
            [0, 0],
            [1, 1],
            [0, 0],
            [1, 1],
            "kernel size should be greater than zero",
        ),
        ([2, 2], [0, 0], [0, 0], [1, 1], "stride should not be zero"),
        (
            [2, 2],
            [-1, -1],
            [0, 0],
            [1, 1],
            "stride should be greater than zero",
        ),
        ([2, 2], [1, 1], [-5, -5], [1, 1], "pad must be non-negative"),
        (
            [3, 3],
            [1, 1],
            [1, 1],
            [big, big],
            "Output size is too small",
        ),
        (
            [big, big],
            [1, 1],
            [big / 2, big / 2],
            [1, 1],
            "pooling window too large",
        ),
    ];
    for (kernel_size, stride, padding, dilation, message) in cases {
        let p = Pool2d {
            kernel_size,
            stride,
            padding,
            dilation,
            ceil_mode: false,
        };
        let Err(err) = x.max_pool2d_with_indices(&p) else {
            panic!("no error for {p:?}");
        };
        assert!(err.to_string().contains(message), "{err} / {message}");
        assert!(x.avg_pool2d(&p, true, None).is_err());
    }
}

/// Outputs and gradients are bitwise identical for 1 and 2 threads.
#[test]
fn one_and_two_threads_agree_bitwise() {
    let data: Vec<f32> = (0..4 * 8 * 30 * 30)
        .map(|i| ((i * 7919) % 1000) as f32 / 333.0 - 1.5)
        .collect();
    let run = |threads: usize| -> Vec<Vec<f32>> {
        rustgrad::set_num_threads(threads).expect("threads");
        let x = Variable::new(
            Tensor::from_vec(data.clone(), &[4, 8, 30, 30]).unwrap(),
            true,
        )
        .unwrap();
        let w = Variable::new(Tensor::ones(&[8], DType::F32).unwrap(), true).unwrap();
        let p = Pool2d {
            kernel_size: [3, 3],
            stride: [2, 2],
            padding: [1, 1],
            dilation: [1, 1],
            ceil_mode: false,
        };
        let pooled = x.max_pool2d_with_indices(&p).unwrap().0;
        let normed = x
            .batch_norm(None, None, Some(&w), None, true, 0.1, 1e-5)
            .unwrap();
        let layer = x.layer_norm(&[30, 30], None, None, 1e-5).unwrap();
        let total = pooled
            .mul(&pooled)
            .unwrap()
            .sum()
            .unwrap()
            .add(&normed.mul(&normed).unwrap().sum().unwrap())
            .unwrap()
            .add(&layer.mul(&layer).unwrap().sum().unwrap())
            .unwrap();
        total.backward().unwrap();
        [pooled, normed, layer, x.grad().unwrap(), w.grad().unwrap()]
            .iter()
            .map(|v| v.to_vec::<f32>())
            .collect()
    };
    let one = run(1);
    let two = run(2);
    for (a, b) in one.iter().zip(&two) {
        assert!(a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits()));
    }
}
