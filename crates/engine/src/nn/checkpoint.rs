//! State dicts in the Python package's checkpoint format: a safetensors file whose
//! header holds the object's structure (`rustgrad`) and a SHA-256 over the structure
//! and every entry (`rustgrad_sha256`), as `rustgrad.save(model.state_dict(), path)`
//! writes it; plain safetensors files (no such metadata) are read as flat state dicts.
//! See Note \[Checkpoints\] and Note [Rust modules].

use super::state::StateDict;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::serialize::{from_safetensors, to_safetensors, RawTensor};
use crate::shape::Dims;
use crate::tensor::Tensor;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

const STRUCTURE_KEY: &str = "rustgrad";
const CHECKSUM_KEY: &str = "rustgrad_sha256";

/// `"(2, 3)"`, `"(3,)"`, `"()"`: Python's `str(tuple(shape))`.
fn python_tuple(shape: &[usize]) -> String {
    match shape {
        [] => "()".into(),
        [n] => format!("({n},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// The Python package's `_checksum`: SHA-256 of the structure, then of each entry's
/// name, dtype, shape and bytes in name order.
fn checksum(structure: &str, entries: &BTreeMap<&str, &RawTensor>) -> String {
    let mut digest = Sha256::new();
    digest.update(structure.as_bytes());
    for (name, raw) in entries {
        digest.update(
            format!(
                "\0{name}\0{}\0{}\0",
                raw.dtype.torch_name(),
                python_tuple(&raw.shape)
            )
            .as_bytes(),
        );
        digest.update(&raw.data);
    }
    digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The bytes of a checkpoint holding `state_dict` as the Python package's
/// `rustgrad.save(model.state_dict(), f)` writes it (an `OrderedDict` of detached
/// tensors), so `rustgrad.load` in Python reads it back with its checksum checked.
pub fn state_dict_to_bytes(state_dict: &StateDict) -> Result<Vec<u8>> {
    let raws: Vec<RawTensor> = state_dict
        .iter()
        .map(|(name, t)| RawTensor::from_tensor(name, t))
        .collect();
    let items: Vec<String> = state_dict
        .keys()
        .map(|k| {
            let k = json_string(k);
            format!("[{k},{{\"requires_grad\":false,\"parameter\":false,\"tensor\":{k}}}]")
        })
        .collect();
    let structure = format!("{{\"odict\":[{}]}}", items.join(","));
    let by_name: BTreeMap<&str, &RawTensor> = raws.iter().map(|r| (r.name.as_str(), r)).collect();
    let metadata = BTreeMap::from([
        ("format".to_string(), "pt".to_string()),
        (CHECKSUM_KEY.to_string(), checksum(&structure, &by_name)),
        (STRUCTURE_KEY.to_string(), structure),
    ]);
    to_safetensors(&raws, metadata)
}

fn corrupted(reason: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "rustgrad.load: the file is truncated, corrupted or not a checkpoint ({reason})"
    ))
}

/// One tensor node of the structure: the entry it names, as a view when it has
/// `shape`, `stride` and `offset`.
fn tensor_node(node: &Value, entries: &BTreeMap<&str, &RawTensor>) -> Result<Tensor> {
    let name = node
        .get("tensor")
        .and_then(Value::as_str)
        .ok_or_else(|| corrupted("a state dict value is not a tensor"))?;
    let raw = entries
        .get(name)
        .ok_or_else(|| corrupted(format!("no entry '{name}'")))?;
    let flat = raw.to_tensor()?;
    let Some(shape) = node.get("shape") else {
        return Ok(flat);
    };
    let numbers = |v: Option<&Value>| -> Result<Vec<i64>> {
        v.and_then(Value::as_array)
            .ok_or_else(|| corrupted("bad view node"))?
            .iter()
            .map(|x| x.as_i64().ok_or_else(|| corrupted("bad view node")))
            .collect()
    };
    let sizes = numbers(Some(shape))?;
    let strides = numbers(node.get("stride"))?;
    let offset = node
        .get("offset")
        .and_then(Value::as_i64)
        .ok_or_else(|| corrupted("bad view node"))?;
    if sizes.len() != strides.len() || sizes.iter().chain(&strides).any(|&v| v < 0) || offset < 0 {
        return Err(corrupted("bad view node"));
    }
    let sizes: Dims = sizes.iter().map(|&v| v as usize).collect();
    let strides: Dims = strides.iter().map(|&v| v as usize).collect();
    let layout = Layout::new(sizes, strides, offset as usize);
    flat.as_strided(&layout)?.contiguous()
}

/// The state dict in a checkpoint's bytes: a file `rustgrad.save(state_dict)` wrote
/// (its checksum verified; views of shared storage resolved), a plain safetensors
/// file, or a `torch.save(state_dict)` zip file (read by [`super::load_pth_bytes`]).
/// A truncated, corrupted or hostile file is an error, never a panic.
pub fn load_state_dict_bytes(bytes: &[u8]) -> Result<StateDict> {
    if bytes.starts_with(b"PK\x03\x04") {
        // PyTorch's zip format (`torch.save(model.state_dict(), "x.pth")`).
        return super::pth::load_pth_bytes(bytes)?.to_state_dict();
    }
    let (metadata, raws) = from_safetensors(bytes)?;
    let entries: BTreeMap<&str, &RawTensor> = raws.iter().map(|r| (r.name.as_str(), r)).collect();
    let (structure, expected) = (metadata.get(STRUCTURE_KEY), metadata.get(CHECKSUM_KEY));
    let (structure, expected) = match (structure, expected) {
        (None, None) => {
            return raws
                .iter()
                .map(|r| Ok((r.name.clone(), r.to_tensor()?)))
                .collect();
        }
        (Some(s), Some(e)) => (s, e),
        _ => return Err(corrupted("checksum mismatch")),
    };
    if checksum(structure, &entries) != *expected {
        return Err(corrupted("checksum mismatch"));
    }
    let root: Value = serde_json::from_str(structure).map_err(corrupted)?;
    let items = root
        .get("odict")
        .or_else(|| root.get("dict"))
        .and_then(Value::as_array)
        .ok_or_else(|| {
            Error::InvalidArgument(
                "the checkpoint does not hold a state dict (a dict of tensors by name)".into(),
            )
        })?;
    items
        .iter()
        .map(|item| {
            let pair = item
                .as_array()
                .filter(|p| p.len() == 2)
                .ok_or_else(|| corrupted("bad dict item"))?;
            let key = pair[0].as_str().ok_or_else(|| {
                Error::InvalidArgument("a state dict's keys must be strings".into())
            })?;
            Ok((key.to_string(), tensor_node(&pair[1], &entries)?))
        })
        .collect()
}

/// Writes `state_dict` to `path` in the Python package's checkpoint format.
pub fn save_file(state_dict: &StateDict, path: impl AsRef<Path>) -> Result<()> {
    let bytes = state_dict_to_bytes(state_dict)?;
    std::fs::write(path.as_ref(), bytes).map_err(|e| {
        Error::InvalidArgument(format!("cannot write {}: {e}", path.as_ref().display()))
    })
}

/// Reads the state dict in the checkpoint at `path` (see [`load_state_dict_bytes`]).
pub fn load_file(path: impl AsRef<Path>) -> Result<StateDict> {
    let bytes = std::fs::read(path.as_ref()).map_err(|e| {
        Error::InvalidArgument(format!("cannot read {}: {e}", path.as_ref().display()))
    })?;
    load_state_dict_bytes(&bytes)
}
