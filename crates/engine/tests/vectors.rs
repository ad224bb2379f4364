//! Cross-language vectors: forward values and gradients computed by PyTorch (see
//! tests/vectors/README.md), replayed through the `Variable` API.
//!
//! Every case of a file is run even when an earlier one fails, so one run reports all
//! mismatches together.

use rustgrad::tensor::CmpOp;
use rustgrad::{DType, Scalar, Squeeze, Tensor, Variable};
use serde_json::{Map, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

const FILES: [&str; 16] = [
    "unary.json",
    "binary.json",
    "compare.json",
    "scalar.json",
    "reduce.json",
    "matmul.json",
    "views.json",
    "elementwise_ops.json",
    "reduce_ops.json",
    "shape_ops.json",
    "linalg_ops.json",
    "coverage_ops.json",
    "extra_ops.json",
    "forms_ops.json",
    "scatter_reduce_ops.json",
    "dtype_ops.json",
];

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

fn load_cases(file: &str) -> Vec<Value> {
    let path = vectors_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let root: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()));
    root["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{} has no \"cases\" array", path.display()))
        .clone()
}

// ----- JSON helpers ---------------------------------------------------------------------

type CaseResult<T> = Result<T, String>;

fn field<'a>(obj: &'a Value, key: &str) -> CaseResult<&'a Value> {
    obj.get(key).ok_or_else(|| format!("missing field {key:?}"))
}

fn as_i64(v: &Value, what: &str) -> CaseResult<i64> {
    v.as_i64()
        .ok_or_else(|| format!("{what}: expected an integer, got {v}"))
}

fn as_opt_i64(v: &Value, what: &str) -> CaseResult<Option<i64>> {
    if v.is_null() {
        Ok(None)
    } else {
        as_i64(v, what).map(Some)
    }
}

fn i64_list(v: &Value, what: &str) -> CaseResult<Vec<i64>> {
    v.as_array()
        .ok_or_else(|| format!("{what}: expected a list, got {v}"))?
        .iter()
        .map(|x| as_i64(x, what))
        .collect()
}

fn usize_list(v: &Value, what: &str) -> CaseResult<Vec<usize>> {
    i64_list(v, what)?
        .into_iter()
        .map(|x| usize::try_from(x).map_err(|_| format!("{what}: negative size {x}")))
        .collect()
}

fn parse_dtype(v: &Value) -> CaseResult<DType> {
    DType::ALL
        .into_iter()
        .find(|d| Some(d.torch_name().trim_start_matches("torch.")) == v.as_str())
        .ok_or_else(|| format!("unknown dtype {v}"))
}

/// A number from kwargs, as the Python number it stands for: `int` when written
/// without a decimal point.
fn scalar_arg(v: &Value) -> CaseResult<Scalar> {
    if let Some(i) = v.as_i64() {
        Ok(Scalar::Int(i))
    } else {
        v.as_f64()
            .map(Scalar::Float)
            .ok_or_else(|| format!("expected a number, got {v}"))
    }
}

/// A tensor described by `{"data", "shape", "dtype"}`.
fn build_tensor(obj: &Value) -> CaseResult<Tensor> {
    let shape = usize_list(field(obj, "shape")?, "shape")?;
    let dtype = parse_dtype(field(obj, "dtype")?)?;
    let data = field(obj, "data")?.as_array().ok_or("data is not a list")?;
    let floats = || -> CaseResult<Vec<f64>> {
        data.iter()
            .map(|x| x.as_f64().ok_or_else(|| format!("non-numeric element {x}")))
            .collect()
    };
    // Floats are parsed as f64 and rounded to the dtype, like torch.tensor(list, dtype=...);
    // integers are exact.
    let tensor = match dtype.category() {
        2 => Tensor::from_vec(floats()?, &shape).and_then(|t| t.to_dtype(dtype)),
        1 => Tensor::from_vec(
            data.iter()
                .map(|x| as_i64(x, "integer data"))
                .collect::<CaseResult<Vec<i64>>>()?,
            &shape,
        )
        .and_then(|t| t.to_dtype(dtype)),
        _ => Tensor::from_vec(
            data.iter()
                .map(|x| x.as_bool().ok_or_else(|| format!("non-bool element {x}")))
                .collect::<CaseResult<Vec<bool>>>()?,
            &shape,
        ),
    };
    tensor.map_err(|e| format!("building tensor: {e}"))
}

fn engine<T>(what: &str, r: rustgrad::Result<T>) -> CaseResult<T> {
    r.map_err(|e| format!("{what} failed: {e}"))
}

// ----- building the case ----------------------------------------------------------------

/// Applies the `view` field of an input to its base leaf.
fn apply_view(base: &Variable, view: &Value) -> CaseResult<Variable> {
    if view.is_null() {
        return Ok(base.clone());
    }
    let kind = field(view, "kind")?
        .as_str()
        .ok_or("view kind is not a string")?;
    let r = match kind {
        "transpose" => base.transpose(
            as_i64(field(view, "dim0")?, "dim0")?,
            as_i64(field(view, "dim1")?, "dim1")?,
        ),
        "slice" => base.slice(
            as_i64(field(view, "dim")?, "dim")?,
            as_opt_i64(field(view, "start")?, "start")?,
            as_opt_i64(field(view, "end")?, "end")?,
            as_i64(field(view, "step")?, "step")?,
        ),
        "expand" => base.expand(&i64_list(field(view, "shape")?, "shape")?),
        "permute" => base.permute(&i64_list(field(view, "dims")?, "dims")?),
        other => return Err(format!("unknown view kind {other:?}")),
    };
    engine(&format!("view {kind}"), r)
}

fn compare_op(op: &str) -> Option<CmpOp> {
    Some(match op {
        "eq" => CmpOp::Eq,
        "ne" => CmpOp::Ne,
        "lt" => CmpOp::Lt,
        "le" => CmpOp::Le,
        "gt" => CmpOp::Gt,
        "ge" => CmpOp::Ge,
        _ => return None,
    })
}

fn f64_kwarg(kwargs: &Map<String, Value>, key: &str, default: f64) -> CaseResult<f64> {
    match kwargs.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_f64()
            .ok_or_else(|| format!("{key}: expected a number, got {v}")),
    }
}

/// `x > 0` (bool operands of the bitwise cases).
fn positive(x: &Variable) -> rustgrad::Result<Variable> {
    x.compare(
        &Variable::from_tensor(Tensor::scalar(0.0, x.dtype())),
        CmpOp::Gt,
    )
}

/// generate.py's `specials`: a float `x` with +inf above 1.2, -inf below -1.2 and NaN
/// where `|x| < 0.2` (differentiable where it keeps `x`).
fn specials(x: &Variable) -> rustgrad::Result<Variable> {
    if !x.dtype().is_floating_point() {
        return Ok(x.clone());
    }
    let c = |v: f64| Variable::from_tensor(Tensor::scalar(v, x.dtype()));
    let t = x.tensor().clone();
    let near_zero = x
        .abs()?
        .tensor()
        .compare(&Tensor::scalar(0.2, x.dtype()), CmpOp::Lt)?;
    let x = Variable::where_cond(&near_zero, &c(f64::NAN), x)?;
    let above = t.compare(&Tensor::scalar(1.2, t.dtype()), CmpOp::Gt)?;
    let below = t.compare(&Tensor::scalar(-1.2, t.dtype()), CmpOp::Lt)?;
    let x = Variable::where_cond(&below, &c(f64::NEG_INFINITY), &x)?;
    Variable::where_cond(&above, &c(f64::INFINITY), &x)
}

/// The ops of `elementwise_ops.json`; `None` for other ops.
fn run_elementwise_op(
    op: &str,
    kwargs: &Map<String, Value>,
    args: &[Variable],
) -> CaseResult<Option<rustgrad::Result<Variable>>> {
    use rustgrad::kernels::logical::{FloatClass, LogicalOp};
    use rustgrad::kernels::math::MathBinaryOp;
    let x = &args[0];
    let y = || args.get(1).ok_or_else(|| format!("op {op} needs 2 inputs"));
    let z = || args.get(2).ok_or_else(|| format!("op {op} needs 3 inputs"));
    let kw = |key: &str, default: f64| f64_kwarg(kwargs, key, default);
    let value =
        || -> CaseResult<Scalar> { kwargs.get("value").map_or(Ok(Scalar::Int(1)), scalar_arg) };
    let other = || -> CaseResult<Scalar> {
        scalar_arg(kwargs.get("other").ok_or("missing kwarg \"other\"")?)
    };
    Ok(Some(match op {
        "rsqrt" => x.rsqrt(),
        "exp2" => x.exp2(),
        "expm1" => x.expm1(),
        "log1p" => x.log1p(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "reciprocal" => x.reciprocal(),
        "square" => x.square(),
        "erf" => x.erf(),
        "erfinv" => x.erfinv(),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "round" => x.round(kw("decimals", 0.0)? as i64),
        "trunc" => x.trunc(),
        "frac" => x.frac(),
        "logsigmoid" => x.log_sigmoid(),
        "relu6" => x.relu6(),
        "leaky_relu" => x.leaky_relu(kw("negative_slope", 0.01)?),
        "elu" => x.elu(kw("alpha", 1.0)?),
        "selu" => x.selu(),
        "celu" => x.celu(kw("alpha", 1.0)?),
        "gelu" => x.gelu(kwargs.get("approximate").and_then(Value::as_str) == Some("tanh")),
        "silu" => x.silu(),
        "mish" => x.mish(),
        "softplus" => x.softplus(kw("beta", 1.0)?, kw("threshold", 20.0)?),
        "softsign" => x.softsign(),
        "hardtanh" => x.hardtanh(kw("min_val", -1.0)?, kw("max_val", 1.0)?),
        "hardsigmoid" => x.hardsigmoid(),
        "hardswish" => x.hardswish(),
        "atan2" => x.atan2(y()?),
        "maximum" => x.maximum(y()?),
        "minimum" => x.minimum(y()?),
        "fmax" => x.fmax(y()?),
        "fmin" => x.fmin(y()?),
        "fmod" => x.fmod(y()?),
        "remainder" => x.remainder(y()?),
        "copysign" => x.copysign(y()?),
        "hypot" => x.math_binary(y()?, MathBinaryOp::Hypot),
        "logaddexp" => x.math_binary(y()?, MathBinaryOp::Logaddexp),
        "logaddexp2" => x.math_binary(y()?, MathBinaryOp::Logaddexp2),
        "sgn" => x.sgn(),
        "div_trunc" => x.math_binary(y()?, MathBinaryOp::DivTrunc),
        "div_floor" => x.math_binary(y()?, MathBinaryOp::DivFloor),
        "floor_divide" => x.floor_divide(y()?),
        "signbit" => x.signbit(),
        "fmod_scalar" => x.math_binary_scalar(other()?, MathBinaryOp::Fmod),
        "remainder_scalar" => x.math_binary_scalar(other()?, MathBinaryOp::Remainder),
        "copysign_scalar" => x.math_binary_scalar(other()?, MathBinaryOp::Copysign),
        "lerp_scalar" => x.lerp_scalar(y()?, kw("weight", f64::NAN)?),
        "lerp" => x.lerp(y()?, z()?),
        "addcmul" => x.addcmul(y()?, z()?, value()?),
        "addcdiv" => x.addcdiv(y()?, z()?, value()?),
        "clamp_tensor" => x.clamp_tensor(Some(y()?), Some(z()?)),
        "clamp_min_tensor" => x.clamp_tensor(Some(y()?), None),
        "clamp_max_tensor" => x.clamp_tensor(None, Some(y()?)),
        "isnan" => specials(x).and_then(|v| v.is_class(FloatClass::Nan)),
        "isinf" => specials(x).and_then(|v| v.is_class(FloatClass::Inf)),
        "isfinite" => specials(x).and_then(|v| v.is_class(FloatClass::Finite)),
        "isposinf" => specials(x).and_then(|v| v.is_class(FloatClass::PosInf)),
        "isneginf" => specials(x).and_then(|v| v.is_class(FloatClass::NegInf)),
        "nan_to_num" => {
            let opt = |k: &str| kwargs.get(k).and_then(Value::as_f64);
            let (n, p, m) = (opt("nan"), opt("posinf"), opt("neginf"));
            specials(x).and_then(|v| v.nan_to_num(n, p, m))
        }
        "logical_and" => x.logical(y()?, LogicalOp::And),
        "logical_or" => x.logical(y()?, LogicalOp::Or),
        "logical_xor" => x.logical(y()?, LogicalOp::Xor),
        "logical_not" => x.logical_not(),
        "bitwise_and" => x.bitwise(y()?, LogicalOp::And),
        "bitwise_or" => x.bitwise(y()?, LogicalOp::Or),
        "bitwise_xor" => x.bitwise(y()?, LogicalOp::Xor),
        "bitwise_not" => x.bitwise_not(),
        "bitwise_and_bool" | "bitwise_xor_bool" => {
            let op = if op == "bitwise_and_bool" {
                LogicalOp::And
            } else {
                LogicalOp::Xor
            };
            let b = y()?;
            positive(x).and_then(|p| p.bitwise(&positive(b)?, op))
        }
        "bitwise_not_bool" => positive(x).and_then(|p| p.bitwise_not()),
        "where" => {
            let (a, b) = (y()?, z()?);
            x.tensor()
                .compare(&Tensor::scalar(0.0, x.dtype()), CmpOp::Gt)
                .and_then(|cond| Variable::where_cond(&cond, a, b))
        }
        _ => return Ok(None),
    }))
}

/// Runs `op` on the (viewed) inputs.
fn run_op(op: &str, kwargs: &Map<String, Value>, args: &[Variable]) -> CaseResult<Variable> {
    let kw = |key: &str| {
        kwargs
            .get(key)
            .ok_or_else(|| format!("missing kwarg {key:?}"))
    };
    let arg = |i: usize| {
        args.get(i)
            .ok_or_else(|| format!("op {op} needs at least {} inputs", i + 1))
    };
    let x = arg(0)?;
    if let Some(r) = run_forms_op(op, kwargs, args)? {
        return engine(&format!("op {op}"), r);
    }
    if let Some(r) = run_scatter_reduce_op(op, kwargs, args)? {
        return engine(&format!("op {op}"), r);
    }
    if let Some(r) = run_elementwise_op(op, kwargs, args)? {
        return engine(&format!("op {op}"), r);
    }
    let other = || -> CaseResult<Variable> { Ok(x.wrap_scalar(scalar_arg(kw("other")?)?)) };
    let r = match op {
        "neg" => x.neg(),
        "exp" => x.exp(),
        "log" => x.log(),
        "sqrt" => x.sqrt(),
        "tanh" => x.tanh(),
        "sigmoid" => x.sigmoid(),
        "relu" => x.relu(),
        "abs" => x.abs(),
        "pow" if kwargs.contains_key("exponent") => {
            // An int exponent keeps an integer tensor integral (as Python's `x ** 3`).
            match scalar_arg(kw("exponent")?)? {
                e @ Scalar::Int(_) if !x.dtype().is_floating_point() => x.pow_scalar_value(e),
                e => x.pow_scalar(e.to_f64()),
            }
        }
        "pow" => x.pow(arg(1)?),
        "add" => x.add(arg(1)?),
        "sub" => x.sub(arg(1)?),
        "mul" => x.mul(arg(1)?),
        "div" => x.div(arg(1)?),
        "add_scalar" => x.add(&other()?),
        "radd_scalar" => other()?.add(x),
        "sub_scalar" => x.sub(&other()?),
        "rsub_scalar" => x.rsub(&other()?),
        "mul_scalar" => x.mul(&other()?),
        "rmul_scalar" => other()?.mul(x),
        "div_scalar" => x.div(&other()?),
        "rdiv_scalar" => other()?.div(x),
        "pow_scalar_base" => other()?.pow(x),
        "sum" | "mean" => {
            let mean = op == "mean";
            match kwargs.get("dim") {
                None => {
                    if mean {
                        x.mean()
                    } else {
                        x.sum()
                    }
                }
                Some(dim) => {
                    let dims = i64_list(dim, "dim")?;
                    let keepdim = kw("keepdim")?.as_bool().ok_or("keepdim is not a bool")?;
                    if mean {
                        x.mean_dims(&dims, keepdim)
                    } else {
                        x.sum_dims(&dims, keepdim)
                    }
                }
            }
        }
        "matmul" => x.matmul(arg(1)?),
        "to" => {
            let name = kw("dtype")?;
            x.to_dtype(parse_dtype(name)?)
        }
        "view" => x.view(&i64_list(kw("shape")?, "shape")?),
        "reshape" => x.reshape(&i64_list(kw("shape")?, "shape")?),
        "transpose" => x.transpose(as_i64(kw("dim0")?, "dim0")?, as_i64(kw("dim1")?, "dim1")?),
        "t" => x.t(),
        "permute" => x.permute(&i64_list(kw("dims")?, "dims")?),
        "expand" => x.expand(&i64_list(kw("shape")?, "shape")?),
        "unsqueeze" => x.unsqueeze(as_i64(kw("dim")?, "dim")?),
        "squeeze" => match kwargs.get("dim") {
            None => x.squeeze(),
            Some(d) => x.squeeze_dim(as_i64(d, "dim")?),
        },
        "slice" => x.slice(
            as_i64(kw("dim")?, "dim")?,
            as_opt_i64(kw("start")?, "start")?,
            as_opt_i64(kw("end")?, "end")?,
            as_i64(kw("step")?, "step")?,
        ),
        other_op if SHAPE_OPS.contains(&other_op) => return shape_op(op, kwargs, args),
        other_op if COVERAGE_OPS.contains(&other_op) => return coverage_op(op, kwargs, args),
        "mm" => x.mm(arg(1)?),
        "bmm" => x.bmm(arg(1)?),
        "mv" => x.mv(arg(1)?),
        "dot" => x.dot(arg(1)?),
        "outer" => x.outer(arg(1)?),
        "einsum" => {
            let equation = kw("equation")?.as_str().ok_or("equation is not a string")?;
            Variable::einsum(equation, args)
        }
        "xlogy" => x.xlogy(arg(1)?),
        "xlog1py" => x.xlog1py(arg(1)?),
        "xlogy_scalar_other" | "xlog1py_scalar_other" => {
            x.xlogy_scalar(scalar_arg(kw("other")?)?, op.starts_with("xlog1py"))
        }
        "xlogy_scalar_self" | "xlog1py_scalar_self" => {
            x.xlogy_scalar_self(scalar_arg(kw("self")?)?, op.starts_with("xlog1py"))
        }
        "float_power" => x.float_power(arg(1)?),
        "float_power_scalar" => x.float_power_scalar(scalar_arg(kw("exponent")?)?),
        "float_power_scalar_base" => x.float_power_scalar_base(scalar_arg(kw("base")?)?),
        "einsum_sublist" => {
            // PyTorch's sublist format lowered to the equation (0-25 'A'-'Z', 26-51 'a'-'z').
            let letters = |v: &Value| -> CaseResult<String> {
                Ok(i64_list(v, "subscripts")?
                    .iter()
                    .map(|&n| {
                        if n < 26 {
                            (b'A' + n as u8) as char
                        } else {
                            (b'a' + (n - 26) as u8) as char
                        }
                    })
                    .collect())
            };
            let subs = kw("sublists")?.as_array().ok_or("sublists is not a list")?;
            let mut equation = subs
                .iter()
                .map(letters)
                .collect::<CaseResult<Vec<_>>>()?
                .join(",");
            let output = kw("output")?;
            if !output.is_null() {
                equation = format!("{equation}->{}", letters(output)?);
            }
            Variable::einsum(&equation, args)
        }
        "tensordot" => {
            let dims = kw("dims")?;
            let (dims_a, dims_b) = match dims.as_i64() {
                Some(n) => (
                    ((x.dim() as i64 - n)..x.dim() as i64).collect(),
                    (0..n).collect(),
                ),
                None => {
                    let pair = dims.as_array().ok_or("dims is neither an int nor a pair")?;
                    let lists = pair
                        .iter()
                        .map(|l| i64_list(l, "dims"))
                        .collect::<CaseResult<Vec<_>>>()?;
                    let [a, b]: [Vec<i64>; 2] =
                        lists.try_into().map_err(|_| "dims is not a pair")?;
                    (a, b)
                }
            };
            x.tensordot(arg(1)?, &dims_a, &dims_b)
        }
        "addmm" | "addmv" | "baddbmm" | "addbmm" => {
            // beta and alpha default to 1, as in PyTorch.
            let coefficient = |key: &str| -> CaseResult<Scalar> {
                kwargs.get(key).map_or(Ok(Scalar::Int(1)), scalar_arg)
            };
            let (beta, alpha) = (coefficient("beta")?, coefficient("alpha")?);
            let f = match op {
                "addmm" => Variable::addmm,
                "addmv" => Variable::addmv,
                "baddbmm" => Variable::baddbmm,
                _ => Variable::addbmm,
            };
            f(x, arg(1)?, arg(2)?, beta, alpha)
        }
        other_op => match compare_op(other_op) {
            Some(cmp) => x.compare(arg(1)?, cmp),
            None => return Err(format!("unknown op {other_op:?}")),
        },
    };
    engine(&format!("op {op}"), r)
}

/// The ops of scatter_reduce_ops.json (`scatter_reduce_` on a clone of `x`); `None`
/// for other ops.
fn run_scatter_reduce_op(
    op: &str,
    kwargs: &Map<String, Value>,
    args: &[Variable],
) -> CaseResult<Option<rustgrad::Result<Variable>>> {
    if op != "scatter_reduce" && op != "scatter_reduce_" {
        return Ok(None);
    }
    let field = |key: &str| {
        kwargs
            .get(key)
            .ok_or_else(|| format!("missing kwarg {key:?}"))
    };
    let dim = as_i64(field("dim")?, "dim")?;
    let index = build_tensor(field("index")?)?;
    let reduce = field("reduce")?.as_str().ok_or("reduce is not a string")?;
    let include_self = field("include_self")?
        .as_bool()
        .ok_or("include_self is not a bool")?;
    let (x, src) = (
        &args[0],
        args.get(1).ok_or("scatter_reduce needs 2 inputs")?,
    );
    if op == "scatter_reduce" {
        return Ok(Some(x.scatter_reduce(
            dim,
            &index,
            src,
            reduce,
            include_self,
        )));
    }
    let y = engine("clone", x.clone_preserving_strides())?;
    Ok(Some(
        y.scatter_reduce_(dim, &index, src, reduce, include_self)
            .map(|()| y),
    ))
}

/// A JSON list of integers.
fn int_list(v: &Value) -> CaseResult<Vec<i64>> {
    v.as_array()
        .ok_or_else(|| format!("expected a list of ints, got {v}"))?
        .iter()
        .map(|x| as_i64(x, "int"))
        .collect()
}

/// The ops of forms_ops.json (in-place forms, run on a clone of `x` or on a region of
/// it, and clamp_min / clamp_max); `None` for other ops.
fn run_forms_op(
    op: &str,
    kwargs: &Map<String, Value>,
    args: &[Variable],
) -> CaseResult<Option<rustgrad::Result<Variable>>> {
    let x = &args[0];
    let list = kwargs.get("args").and_then(Value::as_array);
    let first = || -> CaseResult<Scalar> {
        scalar_arg(list.and_then(|l| l.first()).ok_or("missing args[0]")?)
    };
    let int_first = || -> CaseResult<i64> {
        as_i64(
            list.and_then(|l| l.first()).ok_or("missing args[0]")?,
            "dim",
        )
    };
    let kt = |key: &str| -> CaseResult<Tensor> {
        build_tensor(
            kwargs
                .get(key)
                .ok_or_else(|| format!("missing kwarg {key:?}"))?,
        )
    };
    let int_kw = |key: &str| -> CaseResult<i64> {
        as_i64(
            kwargs
                .get(key)
                .ok_or_else(|| format!("missing kwarg {key:?}"))?,
            key,
        )
    };
    let accumulate = kwargs
        .get("accumulate")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let source = || args.get(1).ok_or_else(|| format!("op {op} needs 2 inputs"));
    // The index ops: out of place, or in place on a clone of `x`.
    let indexed = |v: &Variable, in_place: bool| -> CaseResult<rustgrad::Result<()>> {
        Ok(match op.trim_end_matches('_') {
            "index_copy" if in_place => v.index_copy_(int_kw("dim")?, &kt("index")?, source()?),
            "masked_scatter" if in_place => v.masked_scatter_(&kt("mask")?, source()?),
            "put" if in_place => v.put_(&kt("index")?, source()?, accumulate),
            "fill_diagonal" => {
                let value = kwargs.get("value").and_then(Value::as_f64).unwrap_or(0.0);
                let wrap = kwargs.get("wrap").and_then(Value::as_bool).unwrap_or(false);
                v.fill_diagonal_(Scalar::Float(value), wrap)
            }
            _ => return Err(format!("unknown op {op:?}")),
        })
    };
    match op {
        "index_copy" => return Ok(Some(x.index_copy(int_kw("dim")?, &kt("index")?, source()?))),
        "masked_scatter" => return Ok(Some(x.masked_scatter(&kt("mask")?, source()?))),
        "put" => return Ok(Some(x.put(&kt("index")?, source()?, accumulate))),
        "index_copy_" | "masked_scatter_" | "put_" | "fill_diagonal_" => {
            let y = engine("clone", x.clone_preserving_strides())?;
            return Ok(Some(indexed(&y, true)?.map(|()| y)));
        }
        "clamp_min" => return Ok(Some(x.clamp_min(first()?))),
        "clamp_max" => return Ok(Some(x.clamp_max(first()?))),
        "squeeze_dims" => {
            let dims = int_list(kwargs.get("dims").ok_or("missing kwarg dims")?)?;
            return Ok(Some(x.squeeze_dims(&dims)));
        }
        _ if !op.ends_with('_') => return Ok(None),
        _ => {}
    }
    let y = engine("clone", x.clone_preserving_strides())?;
    let target = match kwargs.get("region") {
        Some(r) => engine(
            "region",
            y.slice(
                as_i64(field(r, "dim")?, "dim")?,
                as_opt_i64(field(r, "start")?, "start")?,
                as_opt_i64(field(r, "end")?, "end")?,
                as_i64(field(r, "step")?, "step")?,
            ),
        )?,
        None => y.clone(),
    };
    let t = &target;
    // The second operand: a tensor input, else the number in args.
    let other = || -> CaseResult<Option<Variable>> { Ok(args.get(1).cloned()) };
    let cmp = match op {
        "eq_" => Some(CmpOp::Eq),
        "ne_" | "not_equal_" => Some(CmpOp::Ne),
        "lt_" | "less_" => Some(CmpOp::Lt),
        "le_" | "less_equal_" => Some(CmpOp::Le),
        "gt_" | "greater_" => Some(CmpOp::Gt),
        "ge_" | "greater_equal_" => Some(CmpOp::Ge),
        _ => None,
    };
    let r = if let Some(cmp) = cmp {
        match other()? {
            Some(o) => t.compare_(&o, cmp),
            None => t.compare_scalar_(first()?, cmp),
        }
    } else {
        match op {
            "abs_" | "absolute_" => t.abs_(),
            "neg_" | "negative_" => t.neg_(),
            "exp_" => t.exp_(),
            "log_" => t.log_(),
            "sqrt_" => t.sqrt_(),
            "sigmoid_" => t.sigmoid_(),
            "tanh_" => t.tanh_(),
            "sign_" => t.sign_(),
            "pow_" => match other()? {
                Some(e) => t.pow_(&e),
                None => t.pow_scalar_(first()?),
            },
            "cumsum_" => {
                let dim = int_first()?;
                t.unary_(|s| s.cumsum(dim))
            }
            "cumprod_" => {
                let dim = int_first()?;
                t.unary_(|s| s.cumprod(dim))
            }
            "clamp_min_" => t.clamp_min_(first()?),
            "clamp_max_" => t.clamp_max_(first()?),
            // In-place view ops: `args` holds their ints (a list for squeeze's dims and
            // as_strided's size and stride).
            "squeeze_" => match list.and_then(|l| l.first()) {
                None => t.squeeze_(Squeeze::All),
                Some(v) if v.is_array() => t.squeeze_(Squeeze::Dims(&int_list(v)?)),
                Some(_) => t.squeeze_(Squeeze::Dim(int_first()?)),
            },
            "unsqueeze_" => t.unsqueeze_(int_first()?),
            "transpose_" | "swapaxes_" | "swapdims_" => {
                let ints = int_list(&Value::Array(list.cloned().unwrap_or_default()))?;
                t.transpose_(ints[0], ints[1])
            }
            "t_" => t.t_(),
            "as_strided_" => {
                let l = list.ok_or("missing args")?;
                let size = int_list(l.first().ok_or("missing size")?)?;
                let stride = int_list(l.get(1).ok_or("missing stride")?)?;
                let offset = l.get(2).map(|v| as_i64(v, "offset")).transpose()?;
                t.as_strided_(&size, &stride, offset)
            }
            "multiply_" | "subtract_" => {
                let o = match other()? {
                    Some(o) => o,
                    None => t.wrap_scalar(first()?),
                };
                if op == "multiply_" {
                    t.mul_(&o)
                } else {
                    t.sub_(&o)
                }
            }
            _ => return Ok(None),
        }
    };
    Ok(Some(r.map(|()| y)))
}

/// The ops of reduce_ops.json: the output, and the indices of the ops that return
/// `(values, indices)`. `None` for other ops.
fn run_reduce_op(
    op: &str,
    kwargs: &Map<String, Value>,
    x: &Variable,
) -> Option<CaseResult<(Variable, Option<Variable>)>> {
    let kw = |key: &str| {
        kwargs
            .get(key)
            .ok_or_else(|| format!("missing kwarg {key:?}"))
    };
    let flag = |key: &str| -> CaseResult<bool> {
        kw(key)?
            .as_bool()
            .ok_or_else(|| format!("{key} is not a bool"))
    };
    let int = |key: &str| -> CaseResult<i64> { as_i64(kw(key)?, key) };
    // `dim` as a list of dims, absent meaning all dims.
    let dims = || -> CaseResult<Option<Vec<i64>>> {
        kwargs.get("dim").map(|d| i64_list(d, "dim")).transpose()
    };
    let has_dim = kwargs.contains_key("dim");
    let value = |r: rustgrad::Result<Variable>| engine(op, r).map(|v| (v, None));
    let pair = |r: rustgrad::Result<(Variable, Variable)>| engine(op, r).map(|(v, i)| (v, Some(i)));
    let run = || -> CaseResult<(Variable, Option<Variable>)> {
        match op {
            "max" | "min" | "median" if has_dim => {
                let (d, k) = (int("dim")?, flag("keepdim")?);
                pair(match op {
                    "max" => x.max_dim(d, k),
                    "min" => x.min_dim(d, k),
                    _ => x.median_dim(d, k),
                })
            }
            "max" => value(x.max()),
            "min" => value(x.min()),
            "median" => value(x.median()),
            "prod" if has_dim => value(x.prod_dim(int("dim")?, flag("keepdim")?)),
            "prod" => value(x.prod()),
            "amax" => value(x.amax(&dims()?.unwrap_or_default(), flag("keepdim")?)),
            "amin" => value(x.amin(&dims()?.unwrap_or_default(), flag("keepdim")?)),
            "logsumexp" => value(x.logsumexp(&dims()?.unwrap_or_default(), flag("keepdim")?)),
            "nansum" => value(x.nansum(dims()?.as_deref(), flag("keepdim")?)),
            "nanmean" => value(x.nanmean(dims()?.as_deref(), flag("keepdim")?)),
            "all" => value(x.all(dims()?.as_deref(), flag("keepdim")?)),
            "any" => value(x.any(dims()?.as_deref(), flag("keepdim")?)),
            "count_nonzero" => value(x.count_nonzero(dims()?.as_deref())),
            "argmax" | "argmin" => {
                let d = as_opt_i64(kw("dim")?, "dim")?;
                let k = flag("keepdim")?;
                value(if op == "argmax" {
                    x.argmax(d, k)
                } else {
                    x.argmin(d, k)
                })
            }
            "softmax" => value(x.softmax(int("dim")?)),
            "log_softmax" => value(x.log_softmax(int("dim")?)),
            "cumsum" => value(x.cumsum(int("dim")?)),
            "cumprod" => value(x.cumprod(int("dim")?)),
            "var" | "std" => {
                let c = kw("correction")?
                    .as_f64()
                    .ok_or("correction is not a number")?;
                let (d, k) = (dims()?, flag("keepdim")?);
                value(if op == "var" {
                    x.var(d.as_deref(), c, k)
                } else {
                    x.std(d.as_deref(), c, k)
                })
            }
            "vector_norm" => {
                let ord = match kw("ord")? {
                    Value::String(s) => s.parse::<f64>().map_err(|e| format!("ord {s}: {e}"))?,
                    v => v.as_f64().ok_or("ord is not a number")?,
                };
                value(x.vector_norm(ord, dims()?.as_deref(), flag("keepdim")?))
            }
            "topk" => pair(x.topk(int("k")?, int("dim")?, flag("largest")?)),
            "sort" => pair(x.sort(int("dim")?, flag("descending")?)),
            "argsort" => value(x.argsort(int("dim")?, flag("descending")?)),
            _ => Err(String::new()),
        }
    };
    match run() {
        Err(e) if e.is_empty() => None,
        other => Some(other),
    }
}

/// The ops of `shape_ops.json` (integer and bool tensors in kwargs are tensor objects).
const SHAPE_OPS: [&str; 32] = [
    "cat",
    "stack",
    "split",
    "chunk",
    "unbind",
    "narrow",
    "select",
    "flip",
    "roll",
    "repeat",
    "tile",
    "tril",
    "triu",
    "diagonal",
    "diag",
    "diag_embed",
    "movedim",
    "unfold",
    "repeat_interleave",
    "index_select",
    "gather",
    "take",
    "masked_select",
    "masked_fill",
    "index_fill",
    "scatter",
    "scatter_value",
    "scatter_add",
    "index_add",
    "index",
    "as_strided",
    "scatter_multiply",
];

fn shape_op(op: &str, kwargs: &Map<String, Value>, args: &[Variable]) -> CaseResult<Variable> {
    let kw = |key: &str| {
        kwargs
            .get(key)
            .ok_or_else(|| format!("missing kwarg {key:?}"))
    };
    let int = |key: &str| -> CaseResult<i64> { as_i64(kw(key)?, key) };
    let ints = |key: &str| -> CaseResult<Vec<i64>> { i64_list(kw(key)?, key) };
    let tensor = |key: &str| -> CaseResult<Tensor> { build_tensor(kw(key)?) };
    let x = args.first().ok_or("no input")?;
    let value = || -> CaseResult<Variable> { Ok(x.wrap_scalar(scalar_arg(kw("value")?)?)) };
    let part = |pieces: rustgrad::Result<Vec<Variable>>| -> CaseResult<Variable> {
        let pieces = engine("split", pieces)?;
        let p = int("part")? as usize;
        pieces.get(p).cloned().ok_or_else(|| format!("no part {p}"))
    };
    let r = match op {
        "cat" => Variable::cat(args, int("dim")?),
        "stack" => Variable::stack(args, int("dim")?),
        "split" => {
            return part(match kw("split")?.as_i64() {
                Some(size) => x.split(size, int("dim")?),
                None => x.split_with_sizes(&ints("split")?, int("dim")?),
            })
        }
        "chunk" => return part(x.chunk(int("chunks")?, int("dim")?)),
        "unbind" => return part(x.unbind(int("dim")?)),
        "narrow" => x.narrow(int("dim")?, int("start")?, int("length")?),
        "select" => x.select(int("dim")?, int("index")?),
        "flip" => x.flip(&ints("dims")?),
        "roll" => x.roll(&ints("shifts")?, &ints("dims")?),
        "repeat" => x.repeat(&ints("sizes")?),
        "tile" => {
            let mut dims = ints("dims")?;
            while dims.len() < x.dim() {
                dims.insert(0, 1);
            }
            x.repeat(&dims)
        }
        "tril" => x.tril_triu(int("diagonal")?, false),
        "triu" => x.tril_triu(int("diagonal")?, true),
        "diagonal" => x.diagonal(int("offset")?, int("dim1")?, int("dim2")?),
        "diag" => x.diag(int("diagonal")?),
        "diag_embed" => x.diag_embed(int("offset")?, int("dim1")?, int("dim2")?),
        "movedim" => x.movedim(&ints("source")?, &ints("destination")?),
        "unfold" => x.unfold(int("dim")?, int("size")?, int("step")?),
        "repeat_interleave" => {
            x.repeat_interleave(&[int("repeats")?], as_opt_i64(kw("dim")?, "dim")?)
        }
        "index_select" => x.index_select(int("dim")?, &tensor("index")?),
        "gather" => x.gather(int("dim")?, &tensor("index")?),
        "take" => x.take(&tensor("index")?),
        "masked_select" => x.masked_select(&tensor("mask")?),
        "masked_fill" => x.masked_fill(&tensor("mask")?, &value()?),
        "index_fill" => x.index_fill(int("dim")?, &tensor("index")?, &value()?),
        "scatter" => x.scatter(int("dim")?, &tensor("index")?, &args[1], false),
        "scatter_value" => x.scatter_value(int("dim")?, &tensor("index")?, &value()?),
        "scatter_add" => x.scatter(int("dim")?, &tensor("index")?, &args[1], true),
        "index_add" => x.index_add(int("dim")?, &tensor("index")?, &args[1]),
        "as_strided" => x.as_strided_view(
            &ints("size")?,
            &ints("stride")?,
            as_opt_i64(kw("storage_offset")?, "storage_offset")?,
        ),
        "scatter_multiply" => x.scatter_multiply(int("dim")?, &tensor("index")?, &args[1]),
        "index" => {
            let list = kw("indices")?.as_array().ok_or("indices is not a list")?;
            let indices = list
                .iter()
                .map(|i| {
                    if i.is_null() {
                        Ok(None)
                    } else {
                        build_tensor(i).map(Some)
                    }
                })
                .collect::<CaseResult<Vec<_>>>()?;
            x.index(&indices)
        }
        other => return Err(format!("unknown shape op {other:?}")),
    };
    engine(&format!("op {op}"), r)
}

/// The ops of `coverage_ops.json`: aliases and composites, each run through the Rust
/// API a Rust user calls for it (composites spelled out with the engine's primitives,
/// as the Python package composes them), and one output ("part") of multi-output ops.
const COVERAGE_OPS: [&str; 25] = [
    "sign",
    "clamp",
    "clip",
    "norm",
    "matrix_norm",
    "linalg_norm",
    "var_mean",
    "std_mean",
    "unique",
    "nonzero",
    "where_cond",
    "flatten",
    "unflatten",
    "hstack",
    "vstack",
    "concat",
    "broadcast_to",
    "expand_as",
    "view_as",
    "reshape_as",
    "swapaxes",
    "mT",
    "contiguous",
    "take_along_dim",
    "meshgrid",
];

/// A norm order from the vectors: a number, or "inf" / "-inf" / "fro" (as 2).
fn norm_order(v: Option<&Value>, default: f64) -> CaseResult<f64> {
    match v {
        None => Ok(default),
        Some(Value::String(s)) if s == "fro" => Ok(2.0),
        Some(Value::String(s)) => s.parse::<f64>().map_err(|e| format!("ord {s}: {e}")),
        Some(v) => v.as_f64().ok_or_else(|| "ord is not a number".into()),
    }
}

/// `linalg.matrix_norm` for ord fro / 1 / -1 / inf / -inf over dims (d0, d1).
fn matrix_norm(
    x: &Variable,
    ord: f64,
    d0: i64,
    d1: i64,
    keepdim: bool,
) -> rustgrad::Result<Variable> {
    if ord == 2.0 {
        return x.vector_norm(2.0, Some(&[d0, d1]), keepdim);
    }
    let n = x.dim() as i64;
    let (d0, d1) = (d0.rem_euclid(n), d1.rem_euclid(n));
    let (summed, reduced) = if ord.abs() == 1.0 { (d0, d1) } else { (d1, d0) };
    let sums = x.abs()?.sum_dims(&[summed], true)?;
    let out = if ord > 0.0 {
        sums.amax(&[reduced], true)?
    } else {
        sums.amin(&[reduced], true)?
    };
    if keepdim {
        Ok(out)
    } else {
        out.squeeze_dim(d0.max(d1))?.squeeze_dim(d0.min(d1))
    }
}

fn coverage_op(op: &str, kwargs: &Map<String, Value>, args: &[Variable]) -> CaseResult<Variable> {
    let kw = |key: &str| {
        kwargs
            .get(key)
            .ok_or_else(|| format!("missing kwarg {key:?}"))
    };
    let int = |key: &str| -> CaseResult<i64> { as_i64(kw(key)?, key) };
    let ints = |key: &str| -> CaseResult<Vec<i64>> { i64_list(kw(key)?, key) };
    let flag = |key: &str| kwargs.get(key).and_then(Value::as_bool).unwrap_or(false);
    let bound = |key: &str| kwargs.get(key).map(scalar_arg).transpose();
    // `dim` as an int or a list; absent meaning all dims.
    let dims = || -> CaseResult<Option<Vec<i64>>> {
        kwargs
            .get("dim")
            .map(|d| match d.as_i64() {
                Some(i) => Ok(vec![i]),
                None => i64_list(d, "dim"),
            })
            .transpose()
    };
    let x = args.first().ok_or("no input")?;
    let part = || -> CaseResult<usize> { Ok(int("part")? as usize) };
    let pick = |pieces: Vec<Variable>| -> CaseResult<Variable> {
        let p = part()?;
        pieces.get(p).cloned().ok_or_else(|| format!("no part {p}"))
    };
    let shape_of = |v: &Variable| -> Vec<i64> { v.shape().iter().map(|&s| s as i64).collect() };
    let r = match op {
        "sign" => x.sign(),
        "clamp" | "clip" => x.clamp_scalar(bound("min")?, bound("max")?),
        "norm" => {
            let ord = norm_order(kwargs.get("p"), 2.0)?;
            x.vector_norm(ord, dims()?.as_deref(), flag("keepdim"))
        }
        "matrix_norm" | "linalg_norm" => {
            let ord = kwargs.get("ord");
            let matrix_dims = match dims()? {
                Some(d) if d.len() == 2 => Some((d[0], d[1])),
                Some(_) => None,
                None if op == "matrix_norm" || (x.dim() == 2 && ord.is_some()) => Some((-2, -1)),
                None => None,
            };
            match matrix_dims {
                Some((d0, d1)) => matrix_norm(x, norm_order(ord, 2.0)?, d0, d1, flag("keepdim")),
                None => x.vector_norm(norm_order(ord, 2.0)?, dims()?.as_deref(), flag("keepdim")),
            }
        }
        "var_mean" | "std_mean" => {
            let c = kw("correction")?
                .as_f64()
                .ok_or("correction is not a number")?;
            let d = dims()?;
            let (a, b) = engine(
                op,
                if op == "var_mean" {
                    x.var_mean(d.as_deref(), c, false)
                } else {
                    x.std_mean(d.as_deref(), c, false)
                },
            )?;
            return pick(vec![a, b]);
        }
        "unique" => {
            let (values, inverse, counts) = engine(op, x.unique())?;
            return pick(vec![values, inverse, counts]);
        }
        "nonzero" => x.nonzero(),
        "where_cond" => {
            // torch.where(cond): the columns of nonzero(cond).
            let nz = engine(op, x.nonzero())?;
            nz.select(1, part()? as i64)
        }
        "flatten" => {
            let n = x.dim() as i64;
            let (start, end) = (
                int("start_dim")?.rem_euclid(n),
                int("end_dim")?.rem_euclid(n),
            );
            let shape = shape_of(x);
            let mut target: Vec<i64> = shape[..start as usize].to_vec();
            target.push(shape[start as usize..=end as usize].iter().product());
            target.extend_from_slice(&shape[end as usize + 1..]);
            x.reshape(&target)
        }
        "unflatten" => {
            let d = int("dim")?.rem_euclid(x.dim() as i64) as usize;
            let shape = shape_of(x);
            let mut target: Vec<i64> = shape[..d].to_vec();
            target.extend(ints("sizes")?);
            target.extend_from_slice(&shape[d + 1..]);
            x.reshape(&target)
        }
        "hstack" => {
            let dim = if x.dim() == 1 { 0 } else { 1 };
            Variable::cat(args, dim)
        }
        "vstack" => {
            let rows = args
                .iter()
                .map(|a| {
                    if a.dim() == 1 {
                        a.unsqueeze(0)
                    } else {
                        Ok(a.clone())
                    }
                })
                .collect::<rustgrad::Result<Vec<_>>>();
            Variable::cat(&engine(op, rows)?, 0)
        }
        "concat" => Variable::cat(args, int("dim")?),
        "broadcast_to" => x.expand(&ints("shape")?),
        "expand_as" => x.expand(&shape_of(&args[1])),
        "view_as" => x.view(&shape_of(&args[1])),
        "reshape_as" => x.reshape(&shape_of(&args[1])),
        "swapaxes" => x.transpose(int("dim0")?, int("dim1")?),
        "mT" => x.transpose(-2, -1),
        "contiguous" => x.contiguous(),
        "take_along_dim" => {
            // Broadcast the indices against the input except along `dim`, then gather.
            let index = build_tensor(kw("indices")?)?;
            let d = int("dim")?.rem_euclid(x.dim() as i64) as usize;
            let mut input_shape = x.shape().to_vec();
            let mut index_shape = index.shape().to_vec();
            for i in 0..x.dim() {
                if i != d {
                    let m = input_shape[i].max(index_shape[i]);
                    input_shape[i] = m;
                    index_shape[i] = m;
                }
            }
            let index = engine(op, index.broadcast_to(&index_shape))?;
            let wide: Vec<i64> = input_shape.iter().map(|&s| s as i64).collect();
            engine(op, x.expand(&wide))?.gather(d as i64, &index)
        }
        "meshgrid" => {
            let xy = kw("indexing")?.as_str() == Some("xy");
            let sizes: Vec<i64> = args.iter().map(|a| a.numel() as i64).collect();
            let mut order: Vec<usize> = (0..args.len()).collect();
            if xy && args.len() >= 2 {
                order.swap(0, 1);
            }
            let out_shape: Vec<i64> = order.iter().map(|&i| sizes[i]).collect();
            let p = part()?;
            let at = order.iter().position(|&i| i == p).ok_or("bad part")?;
            let mut view = vec![1i64; args.len()];
            view[at] = sizes[p];
            engine(op, args[p].reshape(&view))?.expand(&out_shape)
        }
        other => return Err(format!("unknown coverage op {other:?}")),
    };
    engine(&format!("op {op}"), r)
}

// ----- comparing --------------------------------------------------------------------

fn tolerances(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F32 => (1e-5, 1e-6),
        // A few units in the last place (see test_vectors.py's TOLERANCES).
        DType::F16 => (5e-3, 1e-4),
        DType::BF16 => (4e-2, 1e-3),
        _ => (1e-6, 1e-9),
    }
}

/// Checks `actual` against the JSON tensor `expected`: shape and dtype exactly, values
/// within the dtype's tolerance. Reports the first mismatching element.
fn check_tensor(what: &str, actual: &Variable, expected: &Value) -> CaseResult<()> {
    check_tensor_within(what, actual, expected, false)
}

/// [`check_tensor`], bit for bit when `exact` (the cases marked `"exact": true`).
fn check_tensor_within(
    what: &str,
    actual: &Variable,
    expected: &Value,
    exact: bool,
) -> CaseResult<()> {
    let shape = usize_list(field(expected, "shape")?, "shape")?;
    let dtype = parse_dtype(field(expected, "dtype")?)?;
    if actual.shape().as_slice() != shape.as_slice() {
        return Err(format!(
            "{what}: shape {:?}, expected {shape:?}",
            actual.shape()
        ));
    }
    if actual.dtype() != dtype {
        return Err(format!(
            "{what}: dtype {:?}, expected {dtype:?}",
            actual.dtype()
        ));
    }
    let data = field(expected, "data")?
        .as_array()
        .ok_or("data is not a list")?;
    if dtype.category() == 1 {
        let got = actual.to_vec::<i64>();
        if got.len() != data.len() {
            return Err(format!(
                "{what}: {} values, expected {}",
                got.len(),
                data.len()
            ));
        }
        for (i, (g, e)) in got.iter().zip(data).enumerate() {
            if Some(*g) != e.as_i64() {
                return Err(format!("{what}[{i}]: {g}, expected {e}"));
            }
        }
        return Ok(());
    }
    if dtype == DType::Bool {
        let got = actual.to_vec::<bool>();
        for (i, (g, e)) in got.iter().zip(data).enumerate() {
            if Some(*g) != e.as_bool() {
                return Err(format!("{what}[{i}]: {g}, expected {e}"));
            }
        }
        return Ok(());
    }
    let (rtol, atol) = if exact { (0.0, 0.0) } else { tolerances(dtype) };
    let got = actual.to_vec::<f64>();
    if got.len() != data.len() {
        return Err(format!(
            "{what}: {} values, expected {}",
            got.len(),
            data.len()
        ));
    }
    for (i, (g, e)) in got.iter().zip(data).enumerate() {
        let e = e
            .as_f64()
            .ok_or_else(|| format!("{what}[{i}]: non-numeric {e}"))?;
        // Written so that a NaN result counts as a mismatch.
        let within = (g - e).abs() <= atol + rtol * e.abs();
        if !within {
            return Err(format!(
                "{what}[{i}] (flat): {g:e}, expected {e:e} (rtol {rtol:e}, atol {atol:e})"
            ));
        }
    }
    Ok(())
}

fn run_case(case: &Value) -> CaseResult<()> {
    let op = field(case, "op")?.as_str().ok_or("op is not a string")?;
    let empty = Map::new();
    let kwargs = field(case, "kwargs")?.as_object().unwrap_or(&empty);
    let specs = field(case, "inputs")?
        .as_array()
        .ok_or("inputs is not a list")?;

    let mut leaves = Vec::with_capacity(specs.len());
    let mut args = Vec::with_capacity(specs.len());
    for spec in specs {
        let requires_grad = field(spec, "requires_grad")?
            .as_bool()
            .ok_or("requires_grad is not a bool")?;
        let leaf = engine(
            "Variable::new",
            Variable::new(build_tensor(spec)?, requires_grad),
        )?;
        args.push(apply_view(&leaf, field(spec, "view")?)?);
        leaves.push(leaf);
    }

    let out = match args.first().and_then(|x| run_reduce_op(op, kwargs, x)) {
        Some(result) => {
            let (out, indices) = result?;
            match (indices, case.get("indices")) {
                (Some(i), Some(expected)) => check_tensor("indices", &i, expected)?,
                (None, None) => {}
                _ => return Err("indices returned and expected differ".into()),
            }
            out
        }
        None => run_op(op, kwargs, &args)?,
    };
    let exact = case.get("exact").and_then(Value::as_bool).unwrap_or(false);
    check_tensor_within("output", &out, field(case, "output")?, exact)?;

    let grad_output = field(case, "grad_output")?;
    if grad_output.is_null() {
        if out.requires_grad() {
            return Err("output requires grad but the case has no grad_output".into());
        }
        return Ok(());
    }
    if !out.requires_grad() {
        return Err("output does not require grad".into());
    }
    let gradient = Variable::from_tensor(build_tensor(grad_output)?);
    engine("backward", out.backward_with(Some(&gradient), false, false))?;

    let grads = field(case, "grads")?
        .as_array()
        .ok_or("grads is not a list")?;
    if grads.len() != leaves.len() {
        return Err(format!("{} grads for {} inputs", grads.len(), leaves.len()));
    }
    for (i, (leaf, expected)) in leaves.iter().zip(grads).enumerate() {
        let what = format!("grad of input {i}");
        match (leaf.grad(), expected.is_null()) {
            (None, true) => {}
            (Some(_), true) => return Err(format!("{what}: set, expected none")),
            (None, false) => return Err(format!("{what}: none, expected a gradient")),
            (Some(g), false) => check_tensor(&what, &g, expected)?,
        }
    }
    Ok(())
}

/// Runs every case of `file`, returning the number of cases, and fails with all
/// mismatches listed.
fn check_file(file: &str) -> usize {
    let cases = load_cases(file);
    assert!(!cases.is_empty(), "{file} has no cases");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>");
        let outcome = catch_unwind(AssertUnwindSafe(|| run_case(case)));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(message)) => failures.push(format!("  {name}: {message}")),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "<non-string panic>".into());
                failures.push(format!("  {name}: PANIC {message}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases in {file} failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    cases.len()
}

#[test]
fn unary_vectors() {
    check_file("unary.json");
}

#[test]
fn binary_vectors() {
    check_file("binary.json");
}

#[test]
fn compare_vectors() {
    check_file("compare.json");
}

#[test]
fn scalar_vectors() {
    check_file("scalar.json");
}

#[test]
fn reduce_vectors() {
    check_file("reduce.json");
}

#[test]
fn matmul_vectors() {
    check_file("matmul.json");
}

#[test]
fn views_vectors() {
    check_file("views.json");
}

#[test]
fn elementwise_ops_vectors() {
    check_file("elementwise_ops.json");
}

#[test]
fn reduce_ops_vectors() {
    check_file("reduce_ops.json");
}

#[test]
fn shape_ops_vectors() {
    check_file("shape_ops.json");
}

#[test]
fn linalg_ops_vectors() {
    check_file("linalg_ops.json");
}

#[test]
fn coverage_ops_vectors() {
    check_file("coverage_ops.json");
}

#[test]
fn extra_ops_vectors() {
    check_file("extra_ops.json");
}

#[test]
fn forms_ops_vectors() {
    check_file("forms_ops.json");
}

#[test]
fn scatter_reduce_ops_vectors() {
    check_file("scatter_reduce_ops.json");
}

#[test]
fn dtype_ops_vectors() {
    check_file("dtype_ops.json");
}

/// Every vector file is read by a test above, and together they hold enough cases.
#[test]
fn vector_files_are_all_covered() {
    let mut on_disk: Vec<String> = std::fs::read_dir(vectors_dir())
        .expect("cannot list tests/vectors")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // random.json (PyTorch's random streams) is read by tests/random.rs, and
        // factory.json (bit-exact factories) by tests/factory.rs, samplers_ops.json
        // (the other samplers) by tests/python/test_ops_random.py.
        .filter(|n| {
            n.ends_with(".json")
                && n != "random.json"
                && n != "factory.json"
                && n != "samplers_ops.json"
                // random_masks.json (bernoulli_, dropout and rrelu masks for a seed):
                // tests/python/test_random_masks.py.
                && n != "random_masks.json"
                // data_samplers.json and lr_scheduler.json: data loading and the
                // schedulers are Python-only, so tests/python/test_data.py and
                // tests/python/test_lr_scheduler.py read them.
                && n != "data_samplers.json"
                // data_workers.json (DataLoader worker processes, its own schema):
                // tests/python/test_data_workers.py.
                && n != "data_workers.json"
                && n != "lr_scheduler.json"
                // nn_*.json: see below.
                && !n.starts_with("nn_")
                // optim*.json (optimizer trajectories, a PyTorch state_dict): read by
                // tests/optim_vectors.rs and tests/python/test_optim.py.
                && !n.starts_with("optim")
                // models_resnet.json (torchvision's ResNet names and outputs, its own
                // schema): the models exist only in Python, tests/python/test_models.py.
                && n != "models_resnet.json"
                // scalar_promotion.json (Python expressions with numbers, its own
                // schema): tests/python/test_scalar_promotion.py.
                && n != "scalar_promotion.json"
                // weighted_losses.json (the losses' weight= paths, its own schema):
                // tests/python/test_weighted_losses.py.
                && n != "weighted_losses.json"
                // index_scalars.json (Python index expressions, its own schema):
                // tests/python/test_index_scalars.py.
                && n != "index_scalars.json"
                // preserved_strides.json (strides of clone and the *_like factories, its
                // own schema): tests/python/test_preserved_strides.py.
                && n != "preserved_strides.json"
                // half_op_math.json (float16 / bfloat16 Python expressions, its own
                // schema): tests/python/test_half_op_math.py.
                && n != "half_op_math.json"
                // type_promotion.json (promote_types / can_cast / result_type tables,
                // its own schema): tests/python/test_type_promotion.py.
                && n != "type_promotion.json"
                // out_and_range_index.json (range indices and out=, Python-only, its own
                // schema): tests/python/test_out_and_range_index.py.
                && n != "out_and_range_index.json"
                // losses_21.json and parametrize_21.json (issue 21's losses and
                // parametrizations, own readers with grad_fn names and module state):
                // tests/python/test_nn_loss_21.py and tests/python/test_parametrize.py.
                && n != "losses_21.json"
                && n != "parametrize_21.json"
                // device_meta.json (the meta device and default-device behaviour,
                // Python-only): tests/python/test_device_meta.py.
                && n != "device_meta.json"
                // rust_nn_init.json (initial weights of the rustgrad::nn layers, its own
                // schema): tests/nn_modules.rs.
                && n != "rust_nn_init.json"
                // ddp_torchrun.json and distributed_sampler.json (rustgrad.distributed's
                // DDP losses and DistributedSampler's indices, Python-only):
                // tests/python/test_distributed_ddp.py, test_distributed_sampler.py.
                && n != "ddp_torchrun.json"
                && n != "distributed_sampler.json"
        })
        .collect();
    // Each nn functional family's file has its own Rust reader, tests/vectors_<stem>.rs
    // (grad_fn names, errors, extra schema); nn_models.json (whole networks written in
    // Python) is read by tests/python/test_nn_models.py, and nn_layers.json (the
    // nn.Module layers, which exist only in Python) by tests/python/test_nn_layers.py.
    let tests_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    for entry in std::fs::read_dir(vectors_dir()).expect("cannot list tests/vectors") {
        let name = entry.expect("dir entry").file_name();
        let name = name.to_string_lossy();
        if let Some(stem) = name
            .strip_prefix("nn_")
            .and_then(|n| n.strip_suffix(".json"))
        {
            // nn_loss_slices.json (losses of views, its own schema) is read by
            // tests/python/test_loss_slices.py; the engine's side of it is
            // ops::loss's class_losses_of_views_match_contiguous_copies.
            // nn_rnn.json, nn_attention.json and nn_pool3d.json (layers with PyTorch
            // state dicts, masks and module options) are read by
            // tests/python/test_nn_rnn.py, test_attention.py and test_nn_pool3d.py.
            let python_only = [
                "models",
                "layers",
                "loss_slices",
                "rnn",
                "attention",
                "pool3d",
            ];
            if !python_only.contains(&stem) {
                let reader = tests_dir.join(format!("vectors_nn_{stem}.rs"));
                assert!(reader.exists(), "{name} has no reader {}", reader.display());
            }
        }
    }
    on_disk.sort();
    let mut known: Vec<String> = FILES.iter().map(|s| s.to_string()).collect();
    known.sort();
    assert_eq!(on_disk, known, "a vector file has no #[test] in vectors.rs");

    let total: usize = FILES.iter().map(|f| load_cases(f).len()).sum();
    assert!(total > 200, "only {total} vector cases read");

    let mut names: Vec<String> = FILES
        .iter()
        .flat_map(|f| load_cases(f))
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "case names are not unique across files");
}
