//! The ONNX ops the importer runs, each a function over the engine's [`Variable`] ops
//! (so autograd records them), with the Python importer's semantics
//! (python/rustgrad/onnx/_import.py). [`OPS`] is the one table of names, required input
//! counts and functions.

use super::{dtype_of_onnx, invalid, AttrValue, OnnxModel, OnnxNode, MAX_CREATED_ELEMENTS};
use crate::error::{Error, Result};
use crate::kernels::math::MathBinaryOp;
use crate::ops::conv::ConvPadding;
use crate::ops::pool::{Pool2d, Pool3d};
use crate::ops::spatial::PadMode;
use crate::tensor::{CmpOp, Scalar, Tensor};
use crate::variable::Variable;
use crate::DType;

type Ins<'a> = &'a [Option<Variable>];
type OpFn = fn(&OnnxModel, &OnnxNode, Ins<'_>) -> Result<Vec<Variable>>;

/// Every supported op: name, the inputs it cannot run without, the function.
const OPS: &[(&str, usize, OpFn)] = &[
    ("Gemm", 2, gemm),
    ("MatMul", 2, |_, n, i| {
        one(req(n, i, 0)?.matmul(req(n, i, 1)?)?)
    }),
    ("Add", 2, |_, n, i| one(req(n, i, 0)?.add(req(n, i, 1)?)?)),
    ("Sub", 2, |_, n, i| one(req(n, i, 0)?.sub(req(n, i, 1)?)?)),
    ("Mul", 2, |_, n, i| one(req(n, i, 0)?.mul(req(n, i, 1)?)?)),
    ("Div", 2, div),
    ("Pow", 2, |_, n, i| one(req(n, i, 0)?.pow(req(n, i, 1)?)?)),
    ("Relu", 1, |_, n, i| one(req(n, i, 0)?.relu()?)),
    ("Sigmoid", 1, |_, n, i| one(req(n, i, 0)?.sigmoid()?)),
    ("Tanh", 1, |_, n, i| one(req(n, i, 0)?.tanh()?)),
    ("Exp", 1, |_, n, i| one(req(n, i, 0)?.exp()?)),
    ("Sqrt", 1, |_, n, i| one(req(n, i, 0)?.sqrt()?)),
    ("Neg", 1, |_, n, i| one(req(n, i, 0)?.neg()?)),
    ("Erf", 1, |_, n, i| one(req(n, i, 0)?.erf()?)),
    ("Identity", 1, |_, n, i| one(req(n, i, 0)?.clone())),
    ("Conv", 2, conv),
    ("BatchNormalization", 5, batch_norm),
    ("LayerNormalization", 2, layer_norm),
    ("MaxPool", 1, max_pool),
    ("AveragePool", 1, avg_pool),
    ("GlobalAveragePool", 1, global_avg_pool),
    ("Flatten", 1, flatten),
    ("Reshape", 2, reshape),
    ("Transpose", 1, transpose),
    ("Concat", 1, concat),
    ("Softmax", 1, softmax),
    ("Gather", 2, gather),
    ("Slice", 1, slice),
    ("Unsqueeze", 1, unsqueeze),
    ("Squeeze", 1, squeeze),
    ("ReduceMean", 1, reduce_mean),
    ("ReduceMax", 1, |m, n, i| reduce_extreme(m, n, i, true)),
    ("ReduceMin", 1, |m, n, i| reduce_extreme(m, n, i, false)),
    ("Where", 3, where_),
    ("Equal", 2, |_, n, i| compare(n, i, CmpOp::Eq)),
    ("Greater", 2, |_, n, i| compare(n, i, CmpOp::Gt)),
    ("Less", 2, |_, n, i| compare(n, i, CmpOp::Lt)),
    ("GreaterOrEqual", 2, |_, n, i| compare(n, i, CmpOp::Ge)),
    ("LessOrEqual", 2, |_, n, i| compare(n, i, CmpOp::Le)),
    ("Not", 1, |_, n, i| one(req(n, i, 0)?.logical_not()?)),
    ("Trilu", 1, trilu),
    ("Expand", 2, expand),
    ("NonZero", 1, nonzero),
    ("GatherND", 2, gather_nd),
    ("Compress", 2, compress),
    ("Constant", 0, constant),
    ("Shape", 1, shape),
    ("Dropout", 1, dropout),
    ("Cast", 1, cast),
    ("ConstantOfShape", 1, constant_of_shape),
    ("LSTM", 3, rnn),
    ("GRU", 3, rnn),
];

/// The inputs op `op_type` cannot run without; `None` for an unsupported op.
pub(super) fn min_inputs(op_type: &str) -> Option<usize> {
    OPS.iter().find(|o| o.0 == op_type).map(|o| o.1)
}

/// The ONNX op types the importer understands, sorted.
pub fn supported_ops() -> Vec<&'static str> {
    let mut names: Vec<&str> = OPS.iter().map(|o| o.0).collect();
    names.sort_unstable();
    names
}

/// Runs `node` on its inputs.
pub(super) fn run(m: &OnnxModel, node: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let op = OPS
        .iter()
        .find(|o| o.0 == node.op_type)
        .ok_or_else(|| Error::NotImplemented(format!("ONNX op '{}'", node.op_type)))?;
    (op.2)(m, node, ins)
}

// ----- helpers -----------------------------------------------------------------------

fn one(v: Variable) -> Result<Vec<Variable>> {
    Ok(vec![v])
}

fn bad(n: &OnnxNode, message: impl std::fmt::Display) -> Error {
    invalid(format!("node '{}' ({}): {message}", n.name, n.op_type))
}

/// Input `k`, which must be present.
fn req<'a>(n: &OnnxNode, ins: Ins<'a>, k: usize) -> Result<&'a Variable> {
    ins.get(k)
        .and_then(Option::as_ref)
        .ok_or_else(|| bad(n, format!("input {k} is missing")))
}

/// Optional input `k`.
fn opt<'a>(ins: Ins<'a>, k: usize) -> Option<&'a Variable> {
    ins.get(k).and_then(Option::as_ref)
}

fn attr<'a>(n: &'a OnnxNode, name: &str) -> Option<&'a AttrValue> {
    n.attrs.get(name)
}

fn attr_int(n: &OnnxNode, name: &str, default: i64) -> Result<i64> {
    match attr(n, name) {
        None => Ok(default),
        Some(AttrValue::Int(v)) => Ok(*v),
        Some(_) => Err(bad(n, format!("attribute '{name}' must be an int"))),
    }
}

fn attr_float(n: &OnnxNode, name: &str, default: f64) -> Result<f64> {
    match attr(n, name) {
        None => Ok(default),
        Some(AttrValue::Float(v)) => Ok(f64::from(*v)),
        Some(_) => Err(bad(n, format!("attribute '{name}' must be a float"))),
    }
}

fn attr_ints(n: &OnnxNode, name: &str) -> Result<Option<Vec<i64>>> {
    match attr(n, name) {
        None => Ok(None),
        Some(AttrValue::Ints(v)) => Ok(Some(v.clone())),
        Some(_) => Err(bad(n, format!("attribute '{name}' must be ints"))),
    }
}

fn attr_str<'a>(n: &'a OnnxNode, name: &str, default: &'a str) -> Result<&'a str> {
    match attr(n, name) {
        None => Ok(default),
        Some(AttrValue::String(v)) => Ok(v),
        Some(_) => Err(bad(n, format!("attribute '{name}' must be a string"))),
    }
}

/// The values of an integer (shape) tensor.
fn ints(v: &Variable) -> Result<Vec<i64>> {
    v.tensor().try_to_vec::<i64>()
}

/// `a` normalised into `[0, rank)`, or an error naming the node.
/// (ONNX's `[-rank, rank - 1]`: a 0-d tensor has no axis, as in the operator
/// definitions; the callers index the shape with the result.)
fn axis(n: &OnnxNode, a: i64, rank: usize) -> Result<i64> {
    let r = rank as i64;
    if a < -r || a >= r {
        return Err(bad(n, format!("axis {a} out of range for rank {rank}")));
    }
    Ok(a.rem_euclid(r))
}

fn product(dims: &[usize]) -> Option<u64> {
    dims.iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
}

fn constant_var(t: Tensor) -> Variable {
    Variable::from_tensor(t)
}

// ----- ops ---------------------------------------------------------------------------

fn gemm(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let (mut a, b) = (req(n, ins, 0)?.clone(), req(n, ins, 1)?);
    let c = opt(ins, 2);
    if a.dim() != 2 || b.dim() != 2 {
        return Err(bad(n, "A and B must be 2-D"));
    }
    let alpha = attr_float(n, "alpha", 1.0)?;
    let beta = attr_float(n, "beta", 1.0)?;
    if attr_int(n, "transA", 0)? != 0 {
        a = a.t()?;
    }
    let mut y = if attr_int(n, "transB", 0)? != 0 {
        if alpha == 1.0 && beta == 1.0 && c.is_none_or(|c| c.dim() == 1) {
            return one(a.linear(b, c)?);
        }
        a.matmul(&b.t()?)?
    } else {
        a.matmul(b)?
    };
    if alpha != 1.0 {
        y = y.mul_scalar(alpha)?;
    }
    if let Some(c) = c {
        y = y.add(&if beta != 1.0 {
            c.mul_scalar(beta)?
        } else {
            c.clone()
        })?;
    }
    one(y)
}

fn div(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let (a, b) = (req(n, ins, 0)?, req(n, ins, 1)?);
    if !a.dtype().is_floating_point() && !b.dtype().is_floating_point() {
        return one(a.math_binary(b, MathBinaryOp::DivTrunc)?);
    }
    one(a.div(b)?)
}

/// The input's spatial rank (1-3), or an error.
fn spatial(n: &OnnxNode, x: &Variable) -> Result<usize> {
    match x.dim() {
        3..=5 => Ok(x.dim() - 2),
        d => Err(bad(n, format!("input of rank {d} is not 3-5"))),
    }
}

/// An ints attribute of exactly `len` values, or `default` repeated.
fn per_dim(n: &OnnxNode, name: &str, len: usize, default: i64) -> Result<Vec<i64>> {
    match attr_ints(n, name)? {
        None => Ok(vec![default; len]),
        Some(v) if v.len() == len => Ok(v),
        Some(v) => Err(bad(n, format!("'{name}' {v:?} must have {len} values"))),
    }
}

/// `(begin..., end...)` pads from `pads` / `auto_pad`, refusing pads that would make
/// the padded input larger than [`MAX_CREATED_ELEMENTS`].
fn pads(
    n: &OnnxNode,
    x: &Variable,
    kernel: &[i64],
    strides: &[i64],
    dil: &[i64],
) -> Result<Vec<i64>> {
    let nd = kernel.len();
    let shape = x.shape();
    let auto = attr_str(n, "auto_pad", "NOTSET")?;
    let pads = match auto {
        "NOTSET" | "" => per_dim(n, "pads", 2 * nd, 0)?,
        "VALID" => vec![0; 2 * nd],
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut p = vec![0; 2 * nd];
            for i in 0..nd {
                if strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0 {
                    return Err(bad(n, "kernel, strides and dilations must be positive"));
                }
                let size = shape[2 + i] as i64;
                let out = (size + strides[i] - 1) / strides[i];
                let total = ((out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - size).max(0);
                let (small, big) = (total / 2, total - total / 2);
                (p[i], p[i + nd]) = if auto == "SAME_UPPER" {
                    (small, big)
                } else {
                    (big, small)
                };
            }
            p
        }
        other => return Err(bad(n, format!("unknown auto_pad '{other}'"))),
    };
    if pads.iter().any(|&p| p < 0) {
        return Err(bad(n, format!("bad pads {pads:?}")));
    }
    let padded = (0..nd).try_fold(product(&shape[..2]).unwrap_or(u64::MAX), |acc, i| {
        let d = (shape[2 + i] as u64)
            .checked_add(pads[i] as u64)?
            .checked_add(pads[i + nd] as u64)?;
        acc.checked_mul(d)
    });
    if padded.is_none_or(|p| p > MAX_CREATED_ELEMENTS) {
        return Err(bad(
            n,
            format!("refusing pads {pads:?} (padded input too large)"),
        ));
    }
    Ok(pads)
}

/// Symmetric pads as one value per dim; asymmetric pads applied with `pad` first.
fn symmetric(x: &Variable, pads: &[i64], value: f64) -> Result<(Variable, Vec<i64>)> {
    let nd = pads.len() / 2;
    let (begin, end) = pads.split_at(nd);
    if begin == end {
        return Ok((x.clone(), begin.to_vec()));
    }
    let mut spec = Vec::with_capacity(2 * nd);
    for i in (0..nd).rev() {
        spec.extend([begin[i], end[i]]);
    }
    Ok((x.pad(&spec, PadMode::Constant, Some(value))?, vec![0; nd]))
}

fn conv(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let (x, w) = (req(n, ins, 0)?, req(n, ins, 1)?);
    let b = opt(ins, 2);
    let nd = spatial(n, x)?;
    let wshape = w.shape();
    if wshape.len() != nd + 2 {
        return Err(bad(
            n,
            format!("weight of rank {} for {nd} spatial dims", wshape.len()),
        ));
    }
    let default_kernel: Vec<i64> = wshape[2..].iter().map(|&k| k as i64).collect();
    let kernel = attr_ints(n, "kernel_shape")?.unwrap_or(default_kernel);
    if kernel.len() != nd {
        return Err(bad(n, "kernel_shape has the wrong length"));
    }
    let strides = per_dim(n, "strides", nd, 1)?;
    let dil = per_dim(n, "dilations", nd, 1)?;
    let p = pads(n, x, &kernel, &strides, &dil)?;
    let (x, pad) = symmetric(x, &p, 0.0)?;
    let group = attr_int(n, "group", 1)?;
    let padding = ConvPadding::Explicit(&pad);
    one(match nd {
        1 => x.conv1d(w, b, &strides, padding, &dil, group)?,
        2 => x.conv2d(w, b, &strides, padding, &dil, group)?,
        _ => x.conv3d(w, b, &strides, padding, &dil, group)?,
    })
}

/// The window arguments of a pool node, its input padded where the pads are uneven.
struct Window {
    x: Variable,
    nd: usize,
    kernel: Vec<i64>,
    strides: Vec<i64>,
    pad: Vec<i64>,
    dil: Vec<i64>,
    ceil: bool,
}

fn window(n: &OnnxNode, x: &Variable, fill: f64, max: bool) -> Result<Window> {
    let nd = spatial(n, x)?;
    let kernel = attr_ints(n, "kernel_shape")?.ok_or_else(|| bad(n, "kernel_shape is required"))?;
    if kernel.len() != nd {
        return Err(bad(n, "kernel_shape has the wrong length"));
    }
    let strides = per_dim(n, "strides", nd, 1)?;
    let dil = per_dim(n, "dilations", nd, 1)?;
    let ceil = attr_int(n, "ceil_mode", 0)? != 0;
    let p = pads(n, x, &kernel, &strides, &dil)?;
    if !max {
        if dil.iter().any(|&d| d != 1) {
            return Err(Error::NotImplemented(format!(
                "node '{}': AveragePool with dilations",
                n.name
            )));
        }
        let include = attr_int(n, "count_include_pad", 0)? != 0;
        if p[..nd] != p[nd..] && !include {
            return Err(Error::NotImplemented(format!(
                "node '{}': asymmetric pads without count_include_pad",
                n.name
            )));
        }
    }
    let (x, pad) = symmetric(x, &p, fill)?;
    Ok(Window {
        x,
        nd,
        kernel,
        strides,
        pad,
        dil,
        ceil,
    })
}

impl Window {
    /// The 2-d window (1-d pools run as 2-d ones over a size-1 height).
    fn pool2d(&self) -> (Variable, Pool2d, bool) {
        let two = |v: &[i64], fill: i64| -> [i64; 2] {
            if self.nd == 1 {
                [fill, v[0]]
            } else {
                [v[0], v[1]]
            }
        };
        let p = Pool2d {
            kernel_size: two(&self.kernel, 1),
            stride: two(&self.strides, 1),
            padding: two(&self.pad, 0),
            dilation: two(&self.dil, 1),
            ceil_mode: self.ceil,
        };
        (self.x.clone(), p, self.nd == 1)
    }

    fn pool3d(&self) -> Pool3d {
        let three = |v: &[i64]| [v[0], v[1], v[2]];
        Pool3d {
            kernel_size: three(&self.kernel),
            stride: three(&self.strides),
            padding: three(&self.pad),
            dilation: three(&self.dil),
            ceil_mode: self.ceil,
        }
    }
}

fn max_pool(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    if n.outputs.get(1).is_some_and(|o| !o.is_empty()) {
        return Err(Error::NotImplemented(format!(
            "node '{}': MaxPool's Indices output",
            n.name
        )));
    }
    let w = window(n, req(n, ins, 0)?, f64::NEG_INFINITY, true)?;
    if w.nd == 3 {
        return one(w.x.max_pool3d_with_indices(&w.pool3d())?.0);
    }
    let (x, p, lifted) = w.pool2d();
    if lifted {
        return one(x
            .unsqueeze(2)?
            .max_pool2d_with_indices(&p)?
            .0
            .squeeze_dim(2)?);
    }
    one(x.max_pool2d_with_indices(&p)?.0)
}

fn avg_pool(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let w = window(n, req(n, ins, 0)?, 0.0, false)?;
    let include = attr_int(n, "count_include_pad", 0)? != 0;
    if w.nd == 3 {
        return one(w.x.avg_pool3d(&w.pool3d(), include, None)?);
    }
    let (x, p, lifted) = w.pool2d();
    if lifted {
        return one(x
            .unsqueeze(2)?
            .avg_pool2d(&p, include, None)?
            .squeeze_dim(2)?);
    }
    one(x.avg_pool2d(&p, include, None)?)
}

fn global_avg_pool(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    if x.dim() < 3 {
        return Err(bad(
            n,
            format!("input of rank {} has no spatial dims", x.dim()),
        ));
    }
    let dims: Vec<i64> = (2..x.dim() as i64).collect();
    one(x.mean_dims(&dims, true)?)
}

fn batch_norm(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    if attr_int(n, "training_mode", 0)? != 0 {
        return Err(Error::NotImplemented(format!(
            "node '{}': BatchNormalization in training mode",
            n.name
        )));
    }
    let [x, scale, bias, mean, var] = [0, 1, 2, 3, 4].map(|k| req(n, ins, k));
    let eps = attr_float(n, "epsilon", 1e-5)?;
    one(x?.batch_norm(
        Some(mean?),
        Some(var?),
        Some(scale?),
        Some(bias?),
        false,
        0.0,
        eps,
    )?)
}

fn layer_norm(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let (x, scale) = (req(n, ins, 0)?, req(n, ins, 1)?);
    let bias = opt(ins, 2);
    if n.outputs.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(Error::NotImplemented(format!(
            "node '{}': LayerNormalization's Mean/InvStdDev outputs",
            n.name
        )));
    }
    let ax = axis(n, attr_int(n, "axis", -1)?, x.dim())? as usize;
    let shape: Vec<i64> = x.shape()[ax..].iter().map(|&d| d as i64).collect();
    let eps = attr_float(n, "epsilon", 1e-5)?;
    let matches = |v: &Variable| {
        v.shape()
            .iter()
            .map(|&d| d as i64)
            .eq(shape.iter().copied())
    };
    if matches(scale) && bias.is_none_or(matches) {
        return one(x.layer_norm(&shape, Some(scale), bias, eps)?);
    }
    let y = x.layer_norm(&shape, None, None, eps)?.mul(scale)?;
    one(match bias {
        Some(b) => y.add(b)?,
        None => y,
    })
}

fn flatten(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    let rank = x.dim() as i64;
    let mut a = attr_int(n, "axis", 1)?;
    if a < 0 {
        a += rank;
    }
    if !(0..=rank).contains(&a) {
        return Err(bad(n, "axis out of range"));
    }
    let shape = x.shape();
    let (outer, inner) = shape.split_at(a as usize);
    let (o, i) = (product(outer), product(inner));
    match (o, i) {
        (Some(o), Some(i)) => one(x.reshape(&[o as i64, i as i64])?),
        _ => Err(bad(n, "size overflow")),
    }
}

fn reshape(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    let spec = ints(req(n, ins, 1)?)?;
    let allowzero = attr_int(n, "allowzero", 0)? != 0;
    let shape = x.shape();
    let mut target = Vec::with_capacity(spec.len());
    for (i, &d) in spec.iter().enumerate() {
        if d == 0 && !allowzero {
            let Some(&s) = shape.get(i) else {
                return Err(bad(
                    n,
                    format!("0 at dim {i} of a rank-{} input", shape.len()),
                ));
            };
            target.push(s as i64);
        } else {
            target.push(d);
        }
    }
    if target.iter().filter(|&&d| d == -1).count() > 1 || target.iter().any(|&d| d < -1) {
        return Err(bad(n, format!("invalid target shape {spec:?}")));
    }
    // PyTorch's "shape '[...]' is invalid for input of size N", also when the known
    // sizes' product overflows.
    let numel = x.numel() as u64;
    let known = target
        .iter()
        .filter(|&&d| d != -1)
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
    let fits = match known {
        None => false,
        Some(k) if target.contains(&-1) => k <= numel.max(1),
        Some(k) => k == numel,
    };
    if !fits {
        return Err(Error::InvalidShape {
            shape: target,
            numel: x.numel(),
        });
    }
    one(x.reshape(&target)?)
}

fn transpose(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    let perm = attr_ints(n, "perm")?.unwrap_or_else(|| (0..x.dim() as i64).rev().collect());
    one(x.permute(&perm)?)
}

fn concat(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let parts: Vec<Variable> = ins.iter().flatten().cloned().collect();
    let Some(AttrValue::Int(a)) = attr(n, "axis") else {
        return Err(bad(n, "attribute 'axis' is required"));
    };
    if parts.is_empty() {
        return Err(bad(n, "no inputs"));
    }
    one(Variable::cat(&parts, *a)?)
}

fn softmax(m: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    if m.opset >= 13 {
        return one(x.softmax(attr_int(n, "axis", -1)?)?);
    }
    // Before opset 13: the input as a 2-d matrix split at `axis`, softmax over rows.
    let a = axis(n, attr_int(n, "axis", 1)?, x.dim())? as usize;
    let shape = x.shape();
    let outer = product(&shape[..a]).ok_or_else(|| bad(n, "size overflow"))?;
    let back: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    one(x.reshape(&[outer as i64, -1])?.softmax(1)?.reshape(&back)?)
}

fn gather(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let (x, idx) = (req(n, ins, 0)?, req(n, ins, 1)?);
    if idx.dtype().is_floating_point() || idx.dtype() == DType::Bool {
        return Err(bad(n, "indices must be integers"));
    }
    let a = axis(n, attr_int(n, "axis", 0)?, x.dim())? as usize;
    let shape = x.shape();
    let Some(&size) = shape.get(a) else {
        return Err(bad(n, "cannot gather from a 0-d tensor"));
    };
    let mut flat = ints(idx)?;
    for v in &mut flat {
        if *v < 0 {
            *v += size as i64;
        }
        if *v < 0 || *v >= size as i64 {
            return Err(Error::Index(format!(
                "node '{}' (Gather): index out of range for dimension of size {size}",
                n.name
            )));
        }
    }
    let count = flat.len();
    let index = Tensor::from_vec(flat, &[count])?;
    let out = x.index_select(a as i64, &index)?;
    let target: Vec<i64> = shape[..a]
        .iter()
        .chain(idx.shape().iter())
        .chain(&shape[a + 1..])
        .map(|&d| d as i64)
        .collect();
    one(out.reshape(&target)?)
}

fn slice(m: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    let (starts, ends, axes, steps) = if m.opset >= 10 {
        let starts = ints(req(n, ins, 1)?)?;
        let ends = ints(req(n, ins, 2)?)?;
        let axes = match opt(ins, 3) {
            Some(a) => ints(a)?,
            None => (0..starts.len() as i64).collect(),
        };
        let steps = match opt(ins, 4) {
            Some(s) => ints(s)?,
            None => vec![1; starts.len()],
        };
        (starts, ends, axes, steps)
    } else {
        let starts = attr_ints(n, "starts")?.ok_or_else(|| bad(n, "'starts' is required"))?;
        let ends = attr_ints(n, "ends")?.ok_or_else(|| bad(n, "'ends' is required"))?;
        let axes = attr_ints(n, "axes")?.unwrap_or_else(|| (0..starts.len() as i64).collect());
        let steps = vec![1; starts.len()];
        (starts, ends, axes, steps)
    };
    if !(starts.len() == ends.len() && ends.len() == axes.len() && axes.len() == steps.len()) {
        return Err(bad(n, "starts/ends/axes/steps lengths differ"));
    }
    let mut y = x.clone();
    for (((&s, &e), &a), &st) in starts.iter().zip(&ends).zip(&axes).zip(&steps) {
        let a = axis(n, a, x.dim())?;
        if st <= 0 {
            return Err(Error::NotImplemented(format!(
                "node '{}' (Slice): step {st} (only positive steps)",
                n.name
            )));
        }
        let size = x.shape()[a as usize] as i64;
        let clamp = |v: i64| if v < 0 { v.saturating_add(size) } else { v }.clamp(0, size);
        let (s, e) = (clamp(s), clamp(e));
        y = y.slice(a, Some(s), Some(e.max(s)), st)?;
    }
    one(y)
}

/// Axes from the second input (from opset `since`) or the `axes` attribute (before).
fn axes_of(m: &OnnxModel, n: &OnnxNode, ins: Ins<'_>, since: i64) -> Result<Option<Vec<i64>>> {
    if m.opset >= since {
        opt(ins, 1).map(ints).transpose()
    } else {
        attr_ints(n, "axes")
    }
}

fn unsqueeze(m: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let mut x = req(n, ins, 0)?.clone();
    let axes = axes_of(m, n, ins, 13)?.unwrap_or_default();
    if axes.is_empty() {
        return Err(bad(n, "no axes"));
    }
    let rank = x.dim() + axes.len();
    let mut norm = axes
        .iter()
        .map(|&a| axis(n, a, rank))
        .collect::<Result<Vec<_>>>()?;
    norm.sort_unstable();
    if norm.windows(2).any(|w| w[0] == w[1]) {
        return Err(bad(n, format!("repeated axes {axes:?}")));
    }
    for a in norm {
        x = x.unsqueeze(a)?;
    }
    one(x)
}

fn squeeze(m: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let mut x = req(n, ins, 0)?.clone();
    let shape = x.shape();
    let axes = match axes_of(m, n, ins, 13)? {
        Some(a) => a,
        None => (0..shape.len() as i64)
            .filter(|&i| shape[i as usize] == 1)
            .collect(),
    };
    let mut norm = axes
        .iter()
        .map(|&a| axis(n, a, shape.len()))
        .collect::<Result<Vec<_>>>()?;
    norm.sort_unstable_by(|a, b| b.cmp(a));
    norm.dedup();
    for a in norm {
        if shape[a as usize] != 1 {
            return Err(bad(
                n,
                format!("dimension {a} has size {}", shape[a as usize]),
            ));
        }
        x = x.squeeze_dim(a)?;
    }
    one(x)
}

fn reduce_mean(m: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    let keep = attr_int(n, "keepdims", 1)? != 0;
    let Some(axes) = reduced_axes(m, n, ins, x)? else {
        return one(x.clone());
    };
    one(x.mean_dims(&axes, keep)?)
}

/// The reduced axes of ReduceMean/Max/Min (an input from opset 18, else the
/// attribute); `None` for `noop_with_empty_axes` with no axes.
fn reduced_axes(
    m: &OnnxModel,
    n: &OnnxNode,
    ins: Ins<'_>,
    x: &Variable,
) -> Result<Option<Vec<i64>>> {
    let axes = axes_of(m, n, ins, 18)?.unwrap_or_default();
    if axes.is_empty() {
        if attr_int(n, "noop_with_empty_axes", 0)? != 0 {
            return Ok(None);
        }
        return Ok(Some((0..x.dim() as i64).collect()));
    }
    axes.iter()
        .map(|&a| axis(n, a, x.dim()))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

fn reduce_extreme(m: &OnnxModel, n: &OnnxNode, ins: Ins<'_>, max: bool) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    let keep = attr_int(n, "keepdims", 1)? != 0;
    let Some(axes) = reduced_axes(m, n, ins, x)? else {
        return one(x.clone());
    };
    one(if max {
        x.amax(&axes, keep)?
    } else {
        x.amin(&axes, keep)?
    })
}

fn where_(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let cond = req(n, ins, 0)?.tensor().to_dtype(DType::Bool)?;
    one(Variable::where_cond(
        &cond,
        req(n, ins, 1)?,
        req(n, ins, 2)?,
    )?)
}

fn compare(n: &OnnxNode, ins: Ins<'_>, op: CmpOp) -> Result<Vec<Variable>> {
    one(req(n, ins, 0)?.compare(req(n, ins, 1)?, op)?)
}

fn trilu(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    let k = match opt(ins, 1) {
        Some(k) => *ints(k)?.first().ok_or_else(|| bad(n, "k is empty"))?,
        None => 0,
    };
    if x.dim() < 2 {
        return Err(bad(n, format!("input of rank {} (at least 2)", x.dim())));
    }
    one(x.tril_triu(k, attr_int(n, "upper", 1)? != 0)?)
}

fn expand(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    let spec = ints(req(n, ins, 1)?)?;
    let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    // numpy's broadcast of the input's shape with `spec` (either may be the longer).
    let rank = shape.len().max(spec.len());
    let dim = |v: &[i64], i: usize| -> i64 {
        let pad = rank - v.len();
        if i < pad {
            1
        } else {
            v[i - pad]
        }
    };
    let mut target = Vec::with_capacity(rank);
    for i in 0..rank {
        let (a, b) = (dim(&shape, i), dim(&spec, i));
        let d = if a == b || b == 1 {
            a
        } else if a == 1 {
            b
        } else {
            -1
        };
        if d < 0 || b < 0 {
            return Err(bad(
                n,
                format!("shape {spec:?} does not broadcast with {shape:?}"),
            ));
        }
        target.push(d);
    }
    let total = target
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
    if total.is_none_or(|t| t > MAX_CREATED_ELEMENTS) {
        return Err(bad(n, format!("refusing to create shape {target:?}")));
    }
    one(x.expand(&target)?)
}

fn nonzero(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let mut x = req(n, ins, 0)?.clone();
    if x.dim() == 0 {
        x = x.reshape(&[1])?;
    }
    one(x.nonzero()?.t()?.contiguous()?)
}

fn gather_nd(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let (x, idx) = (req(n, ins, 0)?, req(n, ins, 1)?);
    if attr_int(n, "batch_dims", 0)? != 0 {
        return Err(Error::NotImplemented(format!(
            "node '{}' (GatherND): batch_dims > 0",
            n.name
        )));
    }
    let ishape = idx.shape();
    let xshape = x.shape();
    let r = ishape.last().copied().unwrap_or(0);
    if ishape.is_empty() || r < 1 || r > xshape.len() {
        return Err(bad(n, format!("index depth {r} for rank {}", xshape.len())));
    }
    if idx.dtype().is_floating_point() || idx.dtype() == DType::Bool {
        return Err(bad(n, "indices must be integers"));
    }
    // Each index tuple becomes one row of x viewed as (prod(shape[..r]), rest...).
    let values = ints(idx)?;
    let mut rows = Vec::with_capacity(values.len() / r);
    for tuple in values.chunks_exact(r) {
        let mut flat = 0i64;
        for (j, &v) in tuple.iter().enumerate() {
            let size = xshape[j] as i64;
            if v < -size || v >= size {
                return Err(Error::Index(format!(
                    "node '{}' (GatherND): index out of range for dimension of size {size}",
                    n.name
                )));
            }
            flat = flat * size + v.rem_euclid(size.max(1));
        }
        rows.push(flat);
    }
    let outer = product(&xshape[..r]).ok_or_else(|| bad(n, "size overflow"))?;
    let mut view: Vec<i64> = vec![outer as i64];
    view.extend(xshape[r..].iter().map(|&d| d as i64));
    let count = rows.len();
    let picked = x
        .reshape(&view)?
        .index_select(0, &Tensor::from_vec(rows, &[count])?)?;
    let target: Vec<i64> = ishape[..ishape.len() - 1]
        .iter()
        .chain(&xshape[r..])
        .map(|&d| d as i64)
        .collect();
    one(picked.reshape(&target)?)
}

fn compress(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let (mut x, cond) = (req(n, ins, 0)?.clone(), req(n, ins, 1)?);
    let a = match attr(n, "axis") {
        None => {
            x = x.reshape(&[-1])?;
            0
        }
        Some(AttrValue::Int(a)) => axis(n, *a, x.dim())?,
        Some(_) => return Err(bad(n, "attribute 'axis' must be an int")),
    };
    let size = x.shape()[a as usize];
    if cond.dim() != 1 || cond.shape()[0] > size {
        return Err(bad(
            n,
            format!(
                "condition of shape {:?} for dimension of size {size}",
                cond.shape()
            ),
        ));
    }
    let keep: Vec<i64> = cond
        .tensor()
        .try_to_vec::<bool>()?
        .iter()
        .enumerate()
        .filter(|(_, &c)| c)
        .map(|(i, _)| i as i64)
        .collect();
    let count = keep.len();
    one(x.index_select(a, &Tensor::from_vec(keep, &[count])?)?)
}

fn constant(_: &OnnxModel, n: &OnnxNode, _: Ins<'_>) -> Result<Vec<Variable>> {
    let t = match (
        attr(n, "value"),
        attr(n, "value_float"),
        attr(n, "value_floats"),
        attr(n, "value_int"),
        attr(n, "value_ints"),
    ) {
        (Some(AttrValue::Tensor(t)), ..) => t.clone(),
        (_, Some(AttrValue::Float(v)), ..) => Tensor::from_vec(vec![*v], &[])?,
        (_, _, Some(AttrValue::Floats(v)), ..) => Tensor::from_vec(v.clone(), &[v.len()])?,
        (.., Some(AttrValue::Int(v)), _) => Tensor::from_vec(vec![*v], &[])?,
        (.., Some(AttrValue::Ints(v))) => Tensor::from_vec(v.clone(), &[v.len()])?,
        _ => {
            return Err(Error::NotImplemented(format!(
                "node '{}' (Constant): unsupported value attribute {:?}",
                n.name,
                n.attrs.keys().collect::<Vec<_>>()
            )))
        }
    };
    one(constant_var(t))
}

fn shape(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let dims: Vec<i64> = req(n, ins, 0)?.shape().iter().map(|&d| d as i64).collect();
    let r = dims.len() as i64;
    let clamp = |v: i64| if v < 0 { v.saturating_add(r) } else { v }.clamp(0, r) as usize;
    let start = clamp(attr_int(n, "start", 0)?);
    let end = clamp(attr_int(n, "end", r)?).max(start);
    let kept = dims[start..end].to_vec();
    let len = kept.len();
    one(constant_var(Tensor::from_vec(kept, &[len])?))
}

fn dropout(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let x = req(n, ins, 0)?;
    if n.outputs.get(1).is_some_and(|o| !o.is_empty()) {
        let mask = Tensor::ones(&x.shape(), DType::Bool)?;
        return Ok(vec![x.clone(), constant_var(mask)]);
    }
    one(x.clone())
}

fn cast(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let Some(AttrValue::Int(to)) = attr(n, "to") else {
        return Err(bad(n, "attribute 'to' is required"));
    };
    let dtype = dtype_of_onnx(*to).ok_or_else(|| {
        Error::NotImplemented(format!("node '{}' (Cast): target type {to}", n.name))
    })?;
    one(req(n, ins, 0)?.to_dtype(dtype)?)
}

fn constant_of_shape(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let spec = ints(req(n, ins, 0)?)?;
    let total = spec.iter().try_fold(1u64, |acc, &d| {
        u64::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    });
    if total.is_none_or(|t| t > MAX_CREATED_ELEMENTS) {
        return Err(bad(n, format!("refusing to create shape {spec:?}")));
    }
    let shape: Vec<usize> = spec.iter().map(|&d| d as usize).collect();
    let t = match attr(n, "value") {
        None => Tensor::zeros(&shape, DType::F32)?,
        Some(AttrValue::Tensor(v)) if v.numel() == 1 => {
            let value: Scalar = v.reshape(&[])?.item()?;
            Tensor::full_scalar(&shape, value, v.dtype())?
        }
        Some(_) => return Err(bad(n, "value must be a tensor holding one element")),
    };
    one(constant_var(t))
}

/// ONNX LSTM (gates i, o, f, c) and GRU (gates z, r, h) with the default activations,
/// unrolled over time in Variable ops: `Y` (seq, directions, batch, hidden), then `Y_h`
/// (and LSTM's `Y_c`).
fn rnn(_: &OnnxModel, n: &OnnxNode, ins: Ins<'_>) -> Result<Vec<Variable>> {
    let lstm = n.op_type == "LSTM";
    let gates = if lstm { 4 } else { 3 };
    let (mut x, w, r) = (req(n, ins, 0)?.clone(), req(n, ins, 1)?, req(n, ins, 2)?);
    let b = opt(ins, 3);
    let seq_lens = opt(ins, 4);
    let mut h0 = opt(ins, 5).cloned();
    let mut c0 = if lstm { opt(ins, 6).cloned() } else { None };
    if lstm && opt(ins, 7).is_some() {
        return Err(Error::NotImplemented(format!(
            "node '{}' (LSTM): peephole weights",
            n.name
        )));
    }
    let rshape = r.shape();
    if rshape.len() != 3 || w.dim() != 3 || x.dim() != 3 {
        return Err(bad(n, "X, W and R must be 3-d"));
    }
    let hidden = attr_int(n, "hidden_size", rshape[2] as i64)?;
    let dirs: &[bool] = match attr_str(n, "direction", "forward")? {
        "forward" => &[false],
        "reverse" => &[true],
        "bidirectional" => &[false, true],
        other => return Err(bad(n, format!("unknown direction '{other}'"))),
    };
    let defaults: &[&str] = if lstm {
        &["Sigmoid", "Tanh", "Tanh"]
    } else {
        &["Sigmoid", "Tanh"]
    };
    let acts_default = match attr(n, "activations") {
        None => true,
        Some(AttrValue::Strings(a)) => {
            a.len() == defaults.len() * dirs.len()
                && a.iter().zip(defaults.iter().cycle()).all(|(x, y)| x == y)
        }
        Some(_) => false,
    };
    if !acts_default || attr(n, "clip").is_some() || attr_int(n, "input_forget", 0)? != 0 {
        return Err(Error::NotImplemented(format!(
            "node '{}' ({}): only the default activations, no clip, no input_forget",
            n.name, n.op_type
        )));
    }
    let before_reset = attr_int(n, "linear_before_reset", 0)? != 0;
    let layout = attr_int(n, "layout", 0)?;
    if layout != 0 {
        x = x.transpose(0, 1)?;
        h0 = h0.map(|h| h.transpose(0, 1)).transpose()?;
        c0 = c0.map(|c| c.transpose(0, 1)).transpose()?;
    }
    let (steps, batch) = (x.shape()[0], x.shape()[1]);
    if let Some(lens) = seq_lens {
        if ints(lens)?.iter().any(|&v| v != steps as i64) {
            return Err(Error::NotImplemented(format!(
                "node '{}' ({}): sequence_lens shorter than the input",
                n.name, n.op_type
            )));
        }
    }
    let nd = dirs.len();
    if hidden != rshape[2] as i64 {
        return Err(bad(
            n,
            format!("W/R shapes do not match hidden_size {hidden}"),
        ));
    }
    let hidden = rshape[2];
    let gh = gates * hidden;
    if w.shape()[..2] != [nd, gh] || rshape[..] != [nd, gh, hidden] {
        return Err(bad(
            n,
            format!("W/R shapes do not match hidden_size {hidden}"),
        ));
    }
    if let Some(b) = b {
        if b.shape()[..] != [nd, 2 * gh] {
            return Err(bad(n, "B must be (directions, 2 * gates * hidden)"));
        }
    }
    let state_ok = |s: &Option<Variable>| {
        s.as_ref()
            .is_none_or(|s| s.shape()[..] == [nd, batch, hidden])
    };
    if !state_ok(&h0) || !state_ok(&c0) {
        return Err(bad(n, "initial states must be (directions, batch, hidden)"));
    }
    let (mut ys, mut hs, mut cs) = (Vec::new(), Vec::new(), Vec::new());
    let h = hidden as i64;
    for (d, &reverse) in dirs.iter().enumerate() {
        let d64 = d as i64;
        let mut gx = x.matmul(&w.select(0, d64)?.t()?)?;
        let mut rb = None;
        if let Some(b) = b {
            let bd = b.select(0, d64)?;
            gx = gx.add(&bd.narrow(0, 0, gh as i64)?)?;
            let rbias = bd.narrow(0, gh as i64, gh as i64)?;
            if lstm {
                gx = gx.add(&rbias)?;
            } else {
                rb = Some(rbias);
            }
        }
        let zeros = constant_var(Tensor::zeros(&[batch, hidden], x.dtype())?);
        let mut hcur = match &h0 {
            Some(h0) => h0.select(0, d64)?,
            None => zeros.clone(),
        };
        let mut ccur = match &c0 {
            Some(c0) => c0.select(0, d64)?,
            None => zeros,
        };
        let rt = r.select(0, d64)?.t()?;
        let mut out: Vec<Option<Variable>> = vec![None; steps];
        let order: Vec<usize> = if reverse {
            (0..steps).rev().collect()
        } else {
            (0..steps).collect()
        };
        for t in order {
            let gxt = gx.select(0, t as i64)?;
            if lstm {
                let parts = gxt.add(&hcur.matmul(&rt)?)?.chunk(4, -1)?;
                let (i, o, f, c) = (&parts[0], &parts[1], &parts[2], &parts[3]);
                ccur = f
                    .sigmoid()?
                    .mul(&ccur)?
                    .add(&i.sigmoid()?.mul(&c.tanh()?)?)?;
                hcur = o.sigmoid()?.mul(&ccur.tanh()?)?;
            } else {
                let xs = gxt.chunk(3, -1)?;
                let (rz, rr, rh) = (
                    rt.narrow(1, 0, h)?,
                    rt.narrow(1, h, h)?,
                    rt.narrow(1, 2 * h, h)?,
                );
                let mut hz = hcur.matmul(&rz)?;
                let mut hr = hcur.matmul(&rr)?;
                let bh = match &rb {
                    Some(rb) => {
                        hz = hz.add(&rb.narrow(0, 0, h)?)?;
                        hr = hr.add(&rb.narrow(0, h, h)?)?;
                        Some(rb.narrow(0, 2 * h, h)?)
                    }
                    None => None,
                };
                let z = xs[0].add(&hz)?.sigmoid()?;
                let rg = xs[1].add(&hr)?.sigmoid()?;
                let hh = if before_reset {
                    let mut hh = hcur.matmul(&rh)?;
                    if let Some(bh) = &bh {
                        hh = hh.add(bh)?;
                    }
                    rg.mul(&hh)?
                } else {
                    let hh = rg.mul(&hcur)?.matmul(&rh)?;
                    match &bh {
                        Some(bh) => hh.add(bh)?,
                        None => hh,
                    }
                };
                let cand = xs[2].add(&hh)?.tanh()?;
                hcur = z.rsub_scalar(1.0)?.mul(&cand)?.add(&z.mul(&hcur)?)?;
            }
            out[t] = Some(hcur.clone());
        }
        let out: Vec<Variable> = out.into_iter().flatten().collect();
        ys.push(Variable::stack(&out, 0)?);
        hs.push(hcur);
        cs.push(ccur);
    }
    let y = Variable::stack(&ys, 1)?;
    let mut states = vec![Variable::stack(&hs, 0)?];
    if lstm {
        states.push(Variable::stack(&cs, 0)?);
    }
    if layout != 0 {
        let mut outs = vec![y.permute(&[2, 0, 1, 3])?];
        for s in states {
            outs.push(s.transpose(0, 1)?);
        }
        return Ok(outs);
    }
    let mut outs = vec![y];
    outs.extend(states);
    Ok(outs)
}
