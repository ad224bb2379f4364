//! ONNX import from Rust: [`load_model`] reads an ONNX file into an [`OnnxModel`], an
//! [`nn::Module`](crate::nn::Module) whose `forward` interprets the graph's nodes in
//! topological order with the engine's [`Variable`] ops, so gradients flow through an
//! imported network and it can be fine-tuned. Initializers are parameters (floating
//! ones, trainable) or buffers. See Note [ONNX import from Rust].
//!
//! ```no_run
//! use rustgrad::nn::{self, Module};
//!
//! # fn main() -> rustgrad::Result<()> {
//! let mut model = rustgrad::onnx::load_model("resnet18.onnx")?;
//! model.requires_grad_(false)?; // freeze the imported weights
//! let last_gemm = model.nodes().iter().rev().find(|n| n.op_type == "Gemm").unwrap();
//! let name = last_gemm.name.clone();
//! model.replace_node(&name, nn::Linear::new(512, 5)?)?; // a new, trainable head
//! # Ok(())
//! # }
//! ```
//!
//! A malformed or hostile file (truncated or garbage bytes, huge or negative dims, data
//! inconsistent with its dims, cycles, values produced twice or never, unknown ops or
//! domains, external data outside the model's folder or its file) is an `Err` at load,
//! before anything large is allocated.

mod ops;
pub use ops::supported_ops;
mod proto;

use crate::error::{Error, Result};
use crate::nn::{Member, Members, Module, Training};
use crate::tensor::Tensor;
use crate::variable::Variable;
use crate::DType;
use proto::{attr_type, TensorProto};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

/// The most elements one initializer or constant may have (2**31), as in the Python
/// importer.
pub const MAX_ELEMENTS: u64 = 1 << 31;

/// The most elements a node may create from attributes or shape inputs
/// (ConstantOfShape, a padded Conv/pool input): 2**28.
pub const MAX_CREATED_ELEMENTS: u64 = 1 << 28;

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}

/// An attribute's value.
#[derive(Clone, Debug)]
pub enum AttrValue {
    /// `FLOAT`.
    Float(f32),
    /// `INT`.
    Int(i64),
    /// `STRING` (invalid UTF-8 replaced).
    String(String),
    /// `TENSOR`, checked and converted.
    Tensor(Tensor),
    /// `FLOATS`.
    Floats(Vec<f32>),
    /// `INTS`.
    Ints(Vec<i64>),
    /// `STRINGS`.
    Strings(Vec<String>),
}

/// One node of an imported graph.
#[derive(Clone, Debug)]
pub struct OnnxNode {
    /// The node's name (`<op_type>_<index>` when the file gives none).
    pub name: String,
    /// The ONNX op (`Gemm`, `Conv`, ...).
    pub op_type: String,
    /// Input value names (empty for an omitted optional input).
    pub inputs: Vec<String>,
    /// Output value names (empty for an unused optional output).
    pub outputs: Vec<String>,
    /// Attributes by name.
    pub attrs: BTreeMap<String, AttrValue>,
}

/// One initializer: its ONNX name, the attribute name it is registered under, and its
/// value (a parameter when floating, else a buffer).
struct Initializer {
    onnx_name: String,
    attr: String,
    value: Variable,
    parameter: bool,
}

/// A module interpreting an ONNX graph with the engine's ops (the Python package's
/// `OnnxModule`).
///
/// Initializers are registered under sanitised names (`fc1.weight` becomes
/// `fc1_weight`; [`OnnxModel::initializer_names`] maps ONNX names to them): floating
/// ones as parameters, the others as buffers. [`OnnxModel::nodes`] lists the nodes in
/// topological order; [`OnnxModel::replace_node`] makes a node compute a submodule
/// instead (a new head for an imported classifier).
pub struct OnnxModel {
    opset: i64,
    initializers: Vec<Initializer>,
    input_names: Vec<String>,
    output_names: Vec<String>,
    nodes: Vec<OnnxNode>,
    /// (node name, attribute name, module), in the order they were replaced.
    replacements: Vec<(String, String, Box<dyn Module>)>,
    training: Training,
}

/// Reads an ONNX model file (`rustgrad.onnx.load_model(path)`). External data is read
/// only from files inside the model's folder, and only within their bounds. A malformed
/// graph is [`Error::InvalidArgument`]; an op or domain the importer does not know is
/// [`Error::NotImplemented`] naming it.
pub fn load_model(path: impl AsRef<Path>) -> Result<OnnxModel> {
    let path = path.as_ref();
    let bytes =
        std::fs::read(path).map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))?;
    let base = path
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                p.to_path_buf()
            }
        })
        .unwrap_or_else(|| PathBuf::from("."));
    build(&bytes, Some(&base), &path.display().to_string())
}

/// Reads an ONNX model from its bytes. A model whose initializers use external data
/// cannot be read this way (there is no folder to read it from): use [`load_model`].
pub fn load_model_bytes(bytes: &[u8]) -> Result<OnnxModel> {
    build(bytes, None, "<bytes>")
}

fn build(bytes: &[u8], base_dir: Option<&Path>, where_: &str) -> Result<OnnxModel> {
    let model = proto::parse_model(bytes)
        .map_err(|e| invalid(format!("could not parse ONNX model '{where_}': {e}")))?;
    let Some(graph) = model.graph else {
        return Err(invalid(format!(
            "ONNX model '{where_}' has no graph (empty, truncated or not ONNX)"
        )));
    };
    let mut opset = 1;
    for (domain, version) in &model.opset_import {
        if domain.is_empty() || domain == "ai.onnx" {
            opset = *version;
        }
    }
    if graph.sparse_initializers > 0 {
        return Err(Error::NotImplemented(
            "ONNX sparse initializers are not supported".into(),
        ));
    }
    let mut taken = HashSet::new();
    let mut initializers: Vec<Initializer> = Vec::new();
    let mut by_name: HashSet<String> = HashSet::new();
    for init in &graph.initializer {
        if !by_name.insert(init.name.clone()) {
            return Err(invalid(format!(
                "initializer '{}' is defined twice",
                init.name
            )));
        }
        let tensor = tensor_from_proto(init, base_dir)?;
        let parameter = tensor.dtype().is_floating_point();
        let value = if parameter {
            Variable::new(tensor, true)?
        } else {
            Variable::from_tensor(tensor)
        };
        initializers.push(Initializer {
            onnx_name: init.name.clone(),
            attr: sanitise(&init.name, &mut taken),
            value,
            parameter,
        });
    }
    let input_names: Vec<String> = graph
        .input
        .iter()
        .filter(|n| !by_name.contains(*n))
        .cloned()
        .collect();
    let output_names = graph.output.clone();
    if output_names.is_empty() {
        return Err(invalid("ONNX graph has no outputs"));
    }
    let nodes = sort_nodes(&graph.node, &input_names, &by_name, &output_names)?;
    Ok(OnnxModel {
        opset,
        initializers,
        input_names,
        output_names,
        nodes,
        replacements: Vec::new(),
        training: Training::default(),
    })
}

/// `fc1.weight` -> `fc1_weight`, unique among `taken`.
fn sanitise(name: &str, taken: &mut HashSet<String>) -> String {
    let mut base: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() {
        base.push('_');
    }
    if base.starts_with(|c: char| c.is_ascii_digit()) {
        base.insert(0, '_');
    }
    let mut out = base.clone();
    let mut k = 1;
    while taken.contains(&out) {
        out = format!("{base}_{k}");
        k += 1;
    }
    taken.insert(out.clone());
    out
}

fn convert_node(i: usize, node: &proto::NodeProto<'_>) -> Result<OnnxNode> {
    let name = if node.name.is_empty() {
        format!("{}_{i}", node.op_type)
    } else {
        node.name.clone()
    };
    let op_type = node.op_type.clone();
    if !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return Err(Error::NotImplemented(format!(
            "ONNX op '{}::{op_type}' (node '{name}') is not supported",
            node.domain
        )));
    }
    let Some(need) = ops::min_inputs(&op_type) else {
        return Err(Error::NotImplemented(format!(
            "ONNX op '{op_type}' (node '{name}') is not supported by rustgrad's importer"
        )));
    };
    let present = node
        .input
        .iter()
        .take(need)
        .filter(|v| !v.is_empty())
        .count();
    if present < need {
        return Err(invalid(format!(
            "node '{name}' ({op_type}) needs {need} input(s), has {:?}",
            node.input
        )));
    }
    if node.output.iter().all(String::is_empty) {
        return Err(invalid(format!("node '{name}' ({op_type}) has no output")));
    }
    let mut attrs = BTreeMap::new();
    for a in &node.attribute {
        if a.ref_attr_name {
            return Err(Error::NotImplemented(format!(
                "node '{name}': attribute '{}' refers to a function attribute",
                a.name
            )));
        }
        let value = match a.kind {
            attr_type::FLOAT => AttrValue::Float(a.f),
            attr_type::INT => AttrValue::Int(a.i),
            attr_type::STRING => AttrValue::String(String::from_utf8_lossy(a.s).into_owned()),
            attr_type::TENSOR => match &a.t {
                Some(t) => AttrValue::Tensor(tensor_from_proto(t, None)?),
                None => {
                    return Err(invalid(format!(
                        "node '{name}': attribute '{}' has no value",
                        a.name
                    )))
                }
            },
            attr_type::FLOATS => AttrValue::Floats(a.floats.clone()),
            attr_type::INTS => AttrValue::Ints(a.ints.clone()),
            attr_type::STRINGS => AttrValue::Strings(a.strings.clone()),
            attr_type::GRAPH | attr_type::GRAPHS => {
                return Err(Error::NotImplemented(format!(
                    "node '{name}': subgraph attributes are not supported"
                )))
            }
            0 => {
                return Err(invalid(format!(
                    "node '{name}': attribute '{}' has no value",
                    a.name
                )))
            }
            other => {
                return Err(Error::NotImplemented(format!(
                    "node '{name}': attribute '{}' of type {other} is not supported",
                    a.name
                )))
            }
        };
        attrs.insert(a.name.clone(), value);
    }
    Ok(OnnxNode {
        name,
        op_type,
        inputs: node.input.clone(),
        outputs: node.output.clone(),
        attrs,
    })
}

/// Checks the graph and orders its nodes (Kahn's algorithm, linear in the graph's size).
fn sort_nodes(
    raw: &[proto::NodeProto<'_>],
    input_names: &[String],
    initializers: &HashSet<String>,
    output_names: &[String],
) -> Result<Vec<OnnxNode>> {
    let available_set: HashSet<&str> = input_names
        .iter()
        .map(String::as_str)
        .chain(initializers.iter().map(String::as_str))
        .collect();
    let mut nodes = Vec::with_capacity(raw.len());
    let mut producer: HashMap<String, usize> = HashMap::new();
    for (i, node) in raw.iter().enumerate() {
        let n = convert_node(i, node)?;
        for out in n.outputs.iter().filter(|o| !o.is_empty()) {
            if producer.contains_key(out) || available_set.contains(out.as_str()) {
                return Err(invalid(format!(
                    "value '{out}' is produced twice (node '{}')",
                    n.name
                )));
            }
            producer.insert(out.clone(), i);
        }
        nodes.push(n);
    }
    let mut remaining = vec![0usize; nodes.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        let mut deps: Vec<usize> = Vec::new();
        for inp in node.inputs.iter().filter(|v| !v.is_empty()) {
            if available_set.contains(inp.as_str()) {
                continue;
            }
            match producer.get(inp) {
                Some(&j) => deps.push(j),
                None => {
                    return Err(invalid(format!(
                    "node '{}' ({}) reads '{inp}', which no node, input or initializer produces",
                    node.name, node.op_type
                )))
                }
            }
        }
        deps.sort_unstable();
        deps.dedup();
        remaining[i] = deps.len();
        for j in deps {
            users[j].push(i);
        }
    }
    let mut ready: VecDeque<usize> = (0..nodes.len()).filter(|&i| remaining[i] == 0).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &u in &users[i] {
            remaining[u] -= 1;
            if remaining[u] == 0 {
                ready.push_back(u);
            }
        }
    }
    if order.len() != nodes.len() {
        let stuck: Vec<&str> = (0..nodes.len())
            .filter(|&i| remaining[i] > 0)
            .take(5)
            .map(|i| nodes[i].name.as_str())
            .collect();
        return Err(invalid(format!(
            "ONNX graph has a cycle through node(s) {stuck:?}"
        )));
    }
    for out in output_names {
        if !producer.contains_key(out) && !available_set.contains(out.as_str()) {
            return Err(invalid(format!("graph output '{out}' is never produced")));
        }
    }
    let mut slots: Vec<Option<OnnxNode>> = nodes.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
}

/// The ONNX element types rustgrad holds, with their size in bytes.
fn onnx_dtype(data_type: i64, name: &str) -> Result<(DType, usize)> {
    Ok(match data_type {
        1 => (DType::F32, 4),
        2 => (DType::U8, 1),
        3 => (DType::I8, 1),
        5 => (DType::I16, 2),
        6 => (DType::I32, 4),
        7 => (DType::I64, 8),
        9 => (DType::Bool, 1),
        10 => (DType::F16, 2),
        11 => (DType::F64, 8),
        16 => (DType::BF16, 2),
        8 => {
            return Err(invalid(format!(
                "tensor '{name}': string tensors are not supported"
            )))
        }
        other => {
            return Err(invalid(format!(
                "tensor '{name}' has unsupported data type {other}"
            )))
        }
    })
}

/// The ONNX data type of a rustgrad dtype (for `Cast`'s `to`), inverse of `onnx_dtype`.
pub(crate) fn dtype_of_onnx(to: i64) -> Option<DType> {
    match to {
        1 | 2 | 3 | 5 | 6 | 7 | 9 | 10 | 11 | 16 => onnx_dtype(to, "").ok().map(|(d, _)| d),
        _ => None,
    }
}

/// A little-endian byte run as a tensor of `dtype` (`bytes.len()` is `numel * size`).
fn tensor_from_le(bytes: &[u8], dtype: DType, shape: &[usize]) -> Result<Tensor> {
    macro_rules! decode {
        ($t:ty, $n:expr, $f:expr) => {
            Tensor::from_vec::<$t>(
                bytes
                    .chunks_exact($n)
                    .map(|c| {
                        let mut b = [0u8; $n];
                        b.copy_from_slice(c);
                        $f(b)
                    })
                    .collect(),
                shape,
            )
        };
    }
    match dtype {
        DType::F32 => decode!(f32, 4, f32::from_le_bytes),
        DType::F64 => decode!(f64, 8, f64::from_le_bytes),
        DType::I64 => decode!(i64, 8, i64::from_le_bytes),
        DType::I32 => decode!(i32, 4, i32::from_le_bytes),
        DType::I16 => decode!(i16, 2, i16::from_le_bytes),
        DType::I8 => decode!(i8, 1, i8::from_le_bytes),
        DType::U8 => Tensor::from_vec::<u8>(bytes.to_vec(), shape),
        DType::Bool => Tensor::from_vec::<bool>(bytes.iter().map(|&b| b != 0).collect(), shape),
        DType::F16 => decode!(half::f16, 2, |b| half::f16::from_bits(u16::from_le_bytes(
            b
        ))),
        DType::BF16 => decode!(half::bf16, 2, |b| half::bf16::from_bits(
            u16::from_le_bytes(b)
        )),
    }
}

/// A TensorProto as a tensor, after checking its dims against its data: nothing is
/// allocated before the element count is known to be at most [`MAX_ELEMENTS`] and to
/// match the stored data.
fn tensor_from_proto(t: &TensorProto<'_>, base_dir: Option<&Path>) -> Result<Tensor> {
    let name = if t.name.is_empty() {
        "<constant>"
    } else {
        t.name.as_str()
    };
    if t.dims.iter().any(|&d| d < 0) {
        return Err(invalid(format!(
            "tensor '{name}' has a negative dimension: {:?}",
            t.dims
        )));
    }
    let numel = t
        .dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| {
            invalid(format!(
                "tensor '{name}' has too many elements ({:?})",
                t.dims
            ))
        })?;
    let (dtype, size) = onnx_dtype(t.data_type, name)?;
    if t.segment {
        return Err(invalid(format!(
            "tensor '{name}': segmented tensors are not supported"
        )));
    }
    let shape: Vec<usize> = t.dims.iter().map(|&d| d as usize).collect();
    let nbytes = numel as usize * size;
    if t.data_location == 1 {
        let raw = read_external(t, name, base_dir, nbytes)?;
        return tensor_from_le(&raw, dtype, &shape);
    }
    if let Some(raw) = t.raw_data {
        if raw.len() != nbytes {
            return Err(invalid(format!(
                "tensor '{name}': raw data has {} bytes, expected {nbytes} for shape {:?}",
                raw.len(),
                t.dims
            )));
        }
        return tensor_from_le(raw, dtype, &shape);
    }
    let numel = numel as usize;
    let stored = match dtype {
        DType::F32 => t.float_data.len(),
        DType::F64 => t.double_data.len(),
        DType::I64 => t.int64_data.len(),
        _ => t.int32_data.len(),
    };
    if stored != numel {
        return Err(invalid(format!(
            "tensor '{name}' holds {stored} values, expected {numel} for {:?}",
            t.dims
        )));
    }
    // The typed fields: float32/float64 bits, int64 varints, and int32 varints for every
    // narrower type (float16/bfloat16 as their 16 bits).
    let i32s = || t.int32_data.iter().map(|&v| v as i32);
    match dtype {
        DType::F32 => Tensor::from_vec(
            t.float_data
                .iter()
                .map(|&b| f32::from_le_bytes(b))
                .collect(),
            &shape,
        ),
        DType::F64 => Tensor::from_vec(
            t.double_data
                .iter()
                .map(|&b| f64::from_le_bytes(b))
                .collect(),
            &shape,
        ),
        DType::I64 => Tensor::from_vec(t.int64_data.iter().map(|&v| v as i64).collect(), &shape),
        DType::I32 => Tensor::from_vec(i32s().collect::<Vec<i32>>(), &shape),
        DType::I16 => Tensor::from_vec(i32s().map(|v| v as i16).collect::<Vec<_>>(), &shape),
        DType::I8 => Tensor::from_vec(i32s().map(|v| v as i8).collect::<Vec<_>>(), &shape),
        DType::U8 => Tensor::from_vec(i32s().map(|v| v as u8).collect::<Vec<_>>(), &shape),
        DType::Bool => Tensor::from_vec(i32s().map(|v| v != 0).collect::<Vec<_>>(), &shape),
        DType::F16 => Tensor::from_vec(
            i32s()
                .map(|v| half::f16::from_bits(v as u16))
                .collect::<Vec<_>>(),
            &shape,
        ),
        DType::BF16 => Tensor::from_vec(
            i32s()
                .map(|v| half::bf16::from_bits(v as u16))
                .collect::<Vec<_>>(),
            &shape,
        ),
    }
}

/// The bytes of an initializer stored outside the model file: read only from a regular
/// file inside the model's folder (after resolving symbolic links), only within that
/// file, and only when the range holds exactly `nbytes`.
fn read_external(
    t: &TensorProto<'_>,
    name: &str,
    base_dir: Option<&Path>,
    nbytes: usize,
) -> Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let get = |key: &str| {
        t.external_data
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let location = match get("location") {
        Some(l) if !l.is_empty() => l,
        _ => {
            return Err(invalid(format!(
                "initializer '{name}' has external data without a location"
            )))
        }
    };
    let Some(base_dir) = base_dir else {
        return Err(invalid(format!(
            "initializer '{name}' has external data: load the model from a file path"
        )));
    };
    let rel = Path::new(location);
    if rel.is_absolute() || rel.has_root() || location.contains('\0') {
        return Err(invalid(format!(
            "initializer '{name}': external data path '{location}' must be relative to the model's folder"
        )));
    }
    let outside = || {
        invalid(format!(
            "initializer '{name}': external data path '{location}' points outside the model's folder"
        ))
    };
    let base = base_dir
        .canonicalize()
        .map_err(|e| invalid(format!("cannot resolve the model's folder: {e}")))?;
    // `..` components are refused before touching the file system, and the resolved
    // path (symbolic links followed) must still be below the folder.
    if rel.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    }) {
        return Err(outside());
    }
    let target = base.join(rel).canonicalize().map_err(|_| {
        invalid(format!(
            "initializer '{name}': external data file '{location}' not found"
        ))
    })?;
    if !target.starts_with(&base) || target == base {
        return Err(outside());
    }
    let meta = std::fs::metadata(&target)
        .map_err(|e| invalid(format!("initializer '{name}': external data: {e}")))?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "initializer '{name}': external data file '{location}' not found"
        )));
    }
    let size = meta.len();
    let parse = |key: &str, default: u64| -> Result<u64> {
        match get(key) {
            None => Ok(default),
            Some(v) => v.trim().parse::<u64>().map_err(|_| {
                invalid(format!(
                    "initializer '{name}': bad external data {key} '{v}'"
                ))
            }),
        }
    };
    let offset = parse("offset", 0)?;
    let length = parse("length", size.saturating_sub(offset))?;
    match offset.checked_add(length) {
        Some(end) if end <= size => {}
        _ => {
            return Err(invalid(format!(
                "initializer '{name}': external data range [{offset}, {offset}+{length}) is outside '{location}' ({size} bytes)"
            )))
        }
    }
    if length != nbytes as u64 {
        return Err(invalid(format!(
            "tensor '{name}': external data has {length} bytes, expected {nbytes} for shape {:?}",
            t.dims
        )));
    }
    let mut file = std::fs::File::open(&target)
        .map_err(|e| invalid(format!("initializer '{name}': external data: {e}")))?;
    let mut out = vec![0u8; nbytes];
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(&mut out))
        .map_err(|e| invalid(format!("initializer '{name}': external data: {e}")))?;
    Ok(out)
}

impl OnnxModel {
    /// The nodes in topological order.
    pub fn nodes(&self) -> &[OnnxNode] {
        &self.nodes
    }

    /// The graph's inputs (those that are not initializers), in order.
    pub fn input_names(&self) -> &[String] {
        &self.input_names
    }

    /// The graph's outputs, in order.
    pub fn output_names(&self) -> &[String] {
        &self.output_names
    }

    /// The default-domain opset the model was written for.
    pub fn opset(&self) -> i64 {
        self.opset
    }

    /// `(ONNX initializer name, attribute name)` for every initializer, in file order.
    pub fn initializer_names(&self) -> Vec<(String, String)> {
        self.initializers
            .iter()
            .map(|i| (i.onnx_name.clone(), i.attr.clone()))
            .collect()
    }

    /// The initializer named `onnx_name` in the file.
    pub fn initializer(&self, onnx_name: &str) -> Option<&Variable> {
        self.initializers
            .iter()
            .find(|i| i.onnx_name == onnx_name)
            .map(|i| &i.value)
    }

    /// Computes node `name` as `module(first input)` from now on. `module` is registered
    /// as a submodule named `replaced_<name>` (sanitised), so its parameters join this
    /// model's. Typical use: the last `Gemm` replaced by a new `nn::Linear` to give an
    /// imported classifier a new head; the old node's initializers stay registered but
    /// are no longer read.
    pub fn replace_node(&mut self, name: &str, module: impl Module + 'static) -> Result<()> {
        if !self.nodes.iter().any(|n| n.name == name) {
            return Err(invalid(format!("no node named '{name}'")));
        }
        let mut taken: HashSet<String> = self
            .initializers
            .iter()
            .map(|i| i.attr.clone())
            .chain(self.replacements.iter().map(|r| r.1.clone()))
            .collect();
        self.replacements.retain(|r| r.0 != name);
        let attr = sanitise(&format!("replaced_{name}"), &mut taken);
        self.replacements
            .push((name.to_string(), attr, Box::new(module)));
        Ok(())
    }

    /// Runs the graph on its inputs, in the order of [`OnnxModel::input_names`], and
    /// returns its outputs in order.
    pub fn run(&self, inputs: &[Variable]) -> Result<Vec<Variable>> {
        if inputs.len() != self.input_names.len() {
            return Err(Error::Type(format!(
                "ONNX graph takes {} input(s) {:?}, got {}",
                self.input_names.len(),
                self.input_names,
                inputs.len()
            )));
        }
        let mut env: HashMap<&str, Variable> = HashMap::new();
        for init in &self.initializers {
            env.insert(&init.onnx_name, init.value.clone());
        }
        for (name, value) in self.input_names.iter().zip(inputs) {
            env.insert(name, value.clone());
        }
        for node in &self.nodes {
            let ins = node
                .inputs
                .iter()
                .map(|i| {
                    if i.is_empty() {
                        Ok(None)
                    } else {
                        env.get(i.as_str()).cloned().map(Some).ok_or_else(|| {
                            invalid(format!(
                                "node '{}' ({}) reads '{i}', which its producer did not compute",
                                node.name, node.op_type
                            ))
                        })
                    }
                })
                .collect::<Result<Vec<Option<Variable>>>>()?;
            let outs = match self.replacements.iter().find(|r| r.0 == node.name) {
                Some((_, _, module)) => {
                    let first = ins.first().cloned().flatten().ok_or_else(|| {
                        invalid(format!("node '{}' has no first input", node.name))
                    })?;
                    vec![module.forward(&first)?]
                }
                None => ops::run(self, node, &ins)?,
            };
            for (name, value) in node.outputs.iter().zip(outs) {
                if !name.is_empty() {
                    env.insert(name, value);
                }
            }
        }
        self.output_names
            .iter()
            .map(|o| {
                env.get(o.as_str())
                    .cloned()
                    .ok_or_else(|| invalid(format!("graph output '{o}' was not computed")))
            })
            .collect()
    }
}

impl Members for OnnxModel {
    fn visit_members<'s>(&'s self, visit: &mut dyn FnMut(&str, Member<'s>)) {
        for init in &self.initializers {
            let member = if init.parameter {
                Member::Parameter(&init.value)
            } else {
                Member::Buffer(&init.value)
            };
            visit(&init.attr, member);
        }
        for (_, attr, module) in &self.replacements {
            visit(attr, Member::Child(module.as_ref()));
        }
    }

    fn training_flag(&self) -> Option<&Training> {
        Some(&self.training)
    }
}

impl Module for OnnxModel {
    /// Runs a graph with one input and one output; [`OnnxModel::run`] takes any number.
    fn forward(&self, input: &Variable) -> Result<Variable> {
        let mut outs = self.run(std::slice::from_ref(input))?;
        if outs.len() != 1 {
            return Err(Error::Type(format!(
                "ONNX graph has {} outputs {:?}: use OnnxModel::run",
                outs.len(),
                self.output_names
            )));
        }
        Ok(outs.remove(0))
    }
}
