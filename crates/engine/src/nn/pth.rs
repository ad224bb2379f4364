//! PyTorch's `torch.save` zip checkpoints (`.pth`, `.pt`) read in Rust, with the
//! guarantees of the Python package's weights-only load: the pickle runs on a small
//! interpreter that knows only the opcodes a checkpoint of tensors and plain values
//! uses, resolves only the globals that rebuild tensors and `OrderedDict`s (anything
//! else is PyTorch's "Unsupported global" error), never executes code from the file,
//! and checks every size, offset and storage record. See Note [Rust modules].
//!
//! Not read here: the legacy (pre-1.6) format, zip64 archives, compressed records,
//! and the other globals PyTorch's weights-only unpickler allows (`Counter`, `set`,
//! `complex`, `torch.Size`, ...): the Python package's `rustgrad.load` reads those.

use super::state::StateDict;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::serialize::RawTensor;
use crate::shape::Dims;
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

/// A value of a PyTorch checkpoint's pickle.
#[derive(Clone, Debug)]
pub enum TorchValue {
    /// `None`.
    None,
    /// A bool.
    Bool(bool),
    /// An int (at most 64 bits).
    Int(i64),
    /// A float.
    Float(f64),
    /// A str.
    Str(String),
    /// A tuple.
    Tuple(Vec<TorchValue>),
    /// A list.
    List(Vec<TorchValue>),
    /// A dict or `OrderedDict`, in insertion order.
    Dict(Vec<(TorchValue, TorchValue)>),
    /// A tensor (a contiguous copy of its elements) or a `Parameter`'s data.
    Tensor(Tensor),
}

impl TorchValue {
    /// The value under the string key `key` of a dict.
    pub fn get(&self, key: &str) -> Option<&TorchValue> {
        match self {
            TorchValue::Dict(items) => items
                .iter()
                .find(|(k, _)| matches!(k, TorchValue::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// This dict of tensors by name as a state dict; an error for anything else.
    pub fn to_state_dict(&self) -> Result<StateDict> {
        let TorchValue::Dict(items) = self else {
            return Err(not_a_state_dict());
        };
        items
            .iter()
            .map(|(k, v)| match (k, v) {
                (TorchValue::Str(k), TorchValue::Tensor(t)) => Ok((k.clone(), t.clone())),
                _ => Err(not_a_state_dict()),
            })
            .collect()
    }
}

fn not_a_state_dict() -> Error {
    Error::InvalidArgument(
        "the checkpoint is not a state dict (a dict of tensors by name); take one of its \
         entries with TorchValue::get, e.g. checkpoint.get(\"model\")"
            .into(),
    )
}

fn corrupted(reason: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "rustgrad.load: the file is truncated, corrupted or not a checkpoint ({reason})"
    ))
}

/// The records of an uncompressed zip archive, by name: `(offset, length)` of each
/// record's data in the archive's bytes.
fn zip_records(bytes: &[u8]) -> Result<BTreeMap<String, (usize, usize)>> {
    let u16_at = |at: usize| -> Result<usize> {
        let b = bytes
            .get(at..at + 2)
            .ok_or_else(|| corrupted("zip: truncated"))?;
        Ok(u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u32_at = |at: usize| -> Result<usize> {
        let b = bytes
            .get(at..at + 4)
            .ok_or_else(|| corrupted("zip: truncated"))?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    // The end-of-central-directory record: its signature, searched from the end (a
    // comment of up to 64 KiB may follow it).
    let earliest = bytes.len().saturating_sub(22 + 0xffff);
    let eocd = (earliest..bytes.len().saturating_sub(21))
        .rev()
        .find(|&i| bytes[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])
        .ok_or_else(|| corrupted("zip: no end of central directory"))?;
    let count = u16_at(eocd + 10)?;
    let mut at = u32_at(eocd + 16)?;
    if count == 0xffff || at == 0xffff_ffff {
        return Err(corrupted("zip64 archives are not supported"));
    }
    let mut records = BTreeMap::new();
    for _ in 0..count {
        if u32_at(at)? != 0x0201_4b50 {
            return Err(corrupted("zip: bad central directory entry"));
        }
        let method = u16_at(at + 10)?;
        let (compressed, size) = (u32_at(at + 20)?, u32_at(at + 24)?);
        let (name_len, extra_len, comment_len) =
            (u16_at(at + 28)?, u16_at(at + 30)?, u16_at(at + 32)?);
        let local = u32_at(at + 42)?;
        let name = bytes
            .get(at + 46..at + 46 + name_len)
            .ok_or_else(|| corrupted("zip: truncated"))?;
        let name = String::from_utf8(name.to_vec()).map_err(|_| corrupted("zip: bad name"))?;
        if method != 0 || compressed != size {
            return Err(corrupted(format!("zip: record {name} is compressed")));
        }
        if size == 0xffff_ffff || local == 0xffff_ffff {
            return Err(corrupted("zip64 archives are not supported"));
        }
        if u32_at(local)? != 0x0403_4b50 {
            return Err(corrupted("zip: bad local header"));
        }
        let start = local + 30 + u16_at(local + 26)? + u16_at(local + 28)?;
        if start.checked_add(size).is_none_or(|end| end > bytes.len()) {
            return Err(corrupted(format!("zip: record {name} runs past the end")));
        }
        records.insert(name, (start, size));
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(records)
}

/// The storage dtypes PyTorch names in checkpoints (`torch.FloatStorage`, ...).
fn storage_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "FloatStorage" => DType::F32,
        "DoubleStorage" => DType::F64,
        "HalfStorage" => DType::F16,
        "BFloat16Storage" => DType::BF16,
        "LongStorage" => DType::I64,
        "IntStorage" => DType::I32,
        "ShortStorage" => DType::I16,
        "CharStorage" => DType::I8,
        "ByteStorage" => DType::U8,
        "BoolStorage" => DType::Bool,
        _ => return None,
    })
}

/// The globals a weights-only load of tensors resolves.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Global {
    OrderedDict,
    RebuildTensorV2,
    RebuildParameter,
    Storage(DType),
}

/// A value on the interpreter's stack: lists and dicts are shared, so that the memo
/// and the stack see the same object as PyTorch's unpickler does.
#[derive(Clone, Debug)]
enum Obj {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Tuple(Rc<Vec<Obj>>),
    List(Rc<RefCell<Vec<Obj>>>),
    Dict(Rc<RefCell<Vec<(Obj, Obj)>>>),
    Global(Global),
    Storage(Rc<Tensor>),
    Tensor(Tensor),
}

/// How deep a value may nest (a hostile pickle could nest lists a million deep and
/// overflow the stack when converted).
const MAX_DEPTH: usize = 256;

impl Obj {
    fn into_value(self, depth: usize) -> Result<TorchValue> {
        if depth > MAX_DEPTH {
            return Err(corrupted("values nested too deep"));
        }
        Ok(match self {
            Obj::None => TorchValue::None,
            Obj::Bool(b) => TorchValue::Bool(b),
            Obj::Int(i) => TorchValue::Int(i),
            Obj::Float(f) => TorchValue::Float(f),
            Obj::Str(s) => TorchValue::Str(s),
            Obj::Tuple(items) => TorchValue::Tuple(
                items
                    .iter()
                    .map(|o| o.clone().into_value(depth + 1))
                    .collect::<Result<_>>()?,
            ),
            Obj::List(items) => TorchValue::List(
                items
                    .borrow()
                    .iter()
                    .map(|o| o.clone().into_value(depth + 1))
                    .collect::<Result<_>>()?,
            ),
            Obj::Dict(items) => TorchValue::Dict(
                items
                    .borrow()
                    .iter()
                    .map(|(k, v)| {
                        Ok((
                            k.clone().into_value(depth + 1)?,
                            v.clone().into_value(depth + 1)?,
                        ))
                    })
                    .collect::<Result<_>>()?,
            ),
            Obj::Tensor(t) => TorchValue::Tensor(t),
            Obj::Global(_) | Obj::Storage(_) => {
                return Err(corrupted("a bare global or storage in the checkpoint"))
            }
        })
    }

    fn int(&self) -> Result<i64> {
        match self {
            Obj::Int(i) => Ok(*i),
            Obj::Bool(b) => Ok(i64::from(*b)),
            _ => Err(corrupted("expected an int")),
        }
    }

    fn ints(&self) -> Result<Vec<usize>> {
        match self {
            Obj::Tuple(items) => items
                .iter()
                .map(|o| usize::try_from(o.int()?).map_err(|_| corrupted("negative size")))
                .collect(),
            _ => Err(corrupted("expected a tuple of ints")),
        }
    }
}

/// PyTorch's weights-only error for a global it does not allow.
fn unsupported_global(full: &str) -> Error {
    Error::InvalidArgument(format!(
        "Weights only load failed. WeightsUnpickler error: Unsupported global: GLOBAL {full} \
         was not an allowed global by default. rustgrad's Rust reader resolves only the \
         globals of tensors and OrderedDicts; the Python package's rustgrad.load reads more."
    ))
}

/// Loads storage `key` of `numel` elements of a dtype at a location (`persistent_load`).
type StorageLoader<'a> = dyn FnMut(DType, &str, &str, usize) -> Result<Rc<Tensor>> + 'a;

/// The pickle interpreter (protocols 2 to 5, the opcodes of `torch.save`).
struct Unpickler<'a> {
    data: &'a [u8],
    at: usize,
    stack: Vec<Obj>,
    marks: Vec<Vec<Obj>>,
    memo: BTreeMap<u32, Obj>,
    storage: &'a mut StorageLoader<'a>,
}

impl Unpickler<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| corrupted("pickle: truncated"))?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn pop(&mut self) -> Result<Obj> {
        self.stack
            .pop()
            .ok_or_else(|| corrupted("pickle: stack underflow"))
    }

    fn top(&self) -> Result<&Obj> {
        self.stack
            .last()
            .ok_or_else(|| corrupted("pickle: stack underflow"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Obj>> {
        let items = std::mem::take(&mut self.stack);
        self.stack = self
            .marks
            .pop()
            .ok_or_else(|| corrupted("pickle: no mark"))?;
        Ok(items)
    }

    fn line(&mut self) -> Result<String> {
        let rest = &self.data[self.at..];
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| corrupted("pickle: truncated"))?;
        let s = String::from_utf8(rest[..n].to_vec()).map_err(|_| corrupted("bad global"))?;
        self.at += n + 1;
        Ok(s)
    }

    fn string(&mut self, n: usize) -> Result<Obj> {
        let bytes = self.take(n)?.to_vec();
        Ok(Obj::Str(
            String::from_utf8(bytes).map_err(|_| corrupted("bad utf-8"))?,
        ))
    }

    fn global(module: &str, name: &str) -> Result<Global> {
        match (module, name) {
            ("collections", "OrderedDict") => Ok(Global::OrderedDict),
            ("torch._utils", "_rebuild_tensor_v2") => Ok(Global::RebuildTensorV2),
            ("torch._utils", "_rebuild_parameter") => Ok(Global::RebuildParameter),
            ("torch", storage) => storage_dtype(storage)
                .map(Global::Storage)
                .ok_or_else(|| unsupported_global(&format!("{module}.{name}"))),
            _ => Err(unsupported_global(&format!("{module}.{name}"))),
        }
    }

    fn reduce(&mut self, callable: Obj, args: Obj) -> Result<Obj> {
        let Obj::Tuple(args) = args else {
            return Err(corrupted("REDUCE without an argument tuple"));
        };
        match callable {
            Obj::Global(Global::OrderedDict) if args.is_empty() => {
                Ok(Obj::Dict(Rc::new(RefCell::new(Vec::new()))))
            }
            Obj::Global(Global::RebuildTensorV2) if (6..=7).contains(&args.len()) => {
                let Obj::Storage(storage) = &args[0] else {
                    return Err(corrupted("_rebuild_tensor_v2 without a storage"));
                };
                let offset = usize::try_from(args[1].int()?)
                    .map_err(|_| corrupted("negative storage offset"))?;
                let (size, stride) = (args[2].ints()?, args[3].ints()?);
                if size.len() != stride.len() {
                    return Err(corrupted("size and stride of different ranks"));
                }
                let layout = Layout::new(
                    size.into_iter().collect::<Dims>(),
                    stride.into_iter().collect::<Dims>(),
                    offset,
                );
                Ok(Obj::Tensor(storage.as_strided(&layout)?.contiguous()?))
            }
            Obj::Global(Global::RebuildParameter) if args.len() == 3 => match &args[0] {
                Obj::Tensor(t) => Ok(Obj::Tensor(t.clone())),
                _ => Err(corrupted("_rebuild_parameter without a tensor")),
            },
            _ => Err(corrupted("REDUCE of an unexpected callable")),
        }
    }

    fn run(&mut self) -> Result<Obj> {
        loop {
            let op = self.u8()?;
            match op {
                0x80 => {
                    let protocol = self.u8()?;
                    if !(2..=5).contains(&protocol) {
                        return Err(corrupted(format!("pickle protocol {protocol}")));
                    }
                }
                0x95 => {
                    self.take(8)?; // FRAME: its length only
                }
                b'.' => return self.pop(),
                b'}' => self
                    .stack
                    .push(Obj::Dict(Rc::new(RefCell::new(Vec::new())))),
                b']' => self
                    .stack
                    .push(Obj::List(Rc::new(RefCell::new(Vec::new())))),
                b')' => self.stack.push(Obj::Tuple(Rc::new(Vec::new()))),
                b'(' => self.marks.push(std::mem::take(&mut self.stack)),
                b't' => {
                    let items = self.pop_mark()?;
                    self.stack.push(Obj::Tuple(Rc::new(items)));
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    if self.stack.len() < n {
                        return Err(corrupted("pickle: stack underflow"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.stack.push(Obj::Tuple(Rc::new(items)));
                }
                b'N' => self.stack.push(Obj::None),
                0x88 => self.stack.push(Obj::Bool(true)),
                0x89 => self.stack.push(Obj::Bool(false)),
                b'K' => {
                    let v = self.u8()?;
                    self.stack.push(Obj::Int(v.into()));
                }
                b'M' => {
                    let b = self.take(2)?;
                    let v = u16::from_le_bytes([b[0], b[1]]);
                    self.stack.push(Obj::Int(v.into()));
                }
                b'J' => {
                    let v = self.u32()? as i32;
                    self.stack.push(Obj::Int(v.into()));
                }
                0x8a => {
                    let n = self.u8()? as usize;
                    if n > 8 {
                        return Err(corrupted("an int wider than 64 bits"));
                    }
                    let bytes = self.take(n)?;
                    let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
                    let mut full = [if negative { 0xff } else { 0 }; 8];
                    full[..n].copy_from_slice(bytes);
                    self.stack.push(Obj::Int(i64::from_le_bytes(full)));
                }
                b'G' => {
                    let b = self.take(8)?;
                    let v = f64::from_be_bytes(b.try_into().map_err(|_| corrupted("float"))?);
                    self.stack.push(Obj::Float(v));
                }
                b'X' => {
                    let n = self.u32()? as usize;
                    let s = self.string(n)?;
                    self.stack.push(s);
                }
                0x8c => {
                    let n = self.u8()? as usize;
                    let s = self.string(n)?;
                    self.stack.push(s);
                }
                b'q' => {
                    let key = self.u8()?.into();
                    let top = self.top()?.clone();
                    self.memo.insert(key, top);
                }
                b'r' => {
                    let key = self.u32()?;
                    let top = self.top()?.clone();
                    self.memo.insert(key, top);
                }
                0x94 => {
                    let key = self.memo.len() as u32;
                    let top = self.top()?.clone();
                    self.memo.insert(key, top);
                }
                b'h' | b'j' => {
                    let key = if op == b'h' {
                        self.u8()?.into()
                    } else {
                        self.u32()?
                    };
                    let value = self
                        .memo
                        .get(&key)
                        .cloned()
                        .ok_or_else(|| corrupted("pickle: unknown memo key"))?;
                    self.stack.push(value);
                }
                b'c' => {
                    let (module, name) = (self.line()?, self.line()?);
                    self.stack.push(Obj::Global(Self::global(&module, &name)?));
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Obj::Str(module), Obj::Str(name)) = (module, name) else {
                        return Err(corrupted("STACK_GLOBAL of non-strings"));
                    };
                    self.stack.push(Obj::Global(Self::global(&module, &name)?));
                }
                b'Q' => {
                    let pid = self.pop()?;
                    let storage = self.persistent(pid)?;
                    self.stack.push(storage);
                }
                b'R' => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let value = self.reduce(callable, args)?;
                    self.stack.push(value);
                }
                b'b' => {
                    // BUILD: an OrderedDict's attributes (`_metadata`) are dropped; a
                    // Parameter's or tensor's state is not allowed.
                    let _state = self.pop()?;
                    if !matches!(self.top()?, Obj::Dict(_)) {
                        return Err(corrupted("BUILD on a value other than a dict"));
                    }
                }
                b'a' => {
                    let item = self.pop()?;
                    match self.top()? {
                        Obj::List(list) => list.borrow_mut().push(item),
                        _ => return Err(corrupted("APPEND to a non-list")),
                    }
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    match self.top()? {
                        Obj::List(list) => list.borrow_mut().extend(items),
                        _ => return Err(corrupted("APPENDS to a non-list")),
                    }
                }
                b's' | b'u' => {
                    let items = if op == b's' {
                        let v = self.pop()?;
                        let k = self.pop()?;
                        vec![k, v]
                    } else {
                        self.pop_mark()?
                    };
                    if items.len() % 2 != 0 {
                        return Err(corrupted("SETITEMS with an odd count"));
                    }
                    let Obj::Dict(dict) = self.top()? else {
                        return Err(corrupted("SETITEM on a non-dict"));
                    };
                    let mut dict = dict.borrow_mut();
                    let mut items = items.into_iter();
                    while let (Some(k), Some(v)) = (items.next(), items.next()) {
                        let key = |o: &Obj| match o {
                            Obj::Str(s) => Some(s.clone()),
                            _ => None,
                        };
                        // A repeated str key replaces the value, as in a dict.
                        match key(&k).and_then(|s| {
                            dict.iter().position(|(e, _)| key(e).as_deref() == Some(&s))
                        }) {
                            Some(i) => dict[i].1 = v,
                            None => dict.push((k, v)),
                        }
                    }
                }
                other => {
                    return Err(corrupted(format!(
                        "unsupported pickle opcode 0x{other:02x}"
                    )))
                }
            }
        }
    }

    fn persistent(&mut self, pid: Obj) -> Result<Obj> {
        let Obj::Tuple(fields) = pid else {
            return Err(corrupted("bad persistent id"));
        };
        let [Obj::Str(kind), Obj::Global(Global::Storage(dtype)), key, Obj::Str(location), numel] =
            fields.as_slice()
        else {
            return Err(corrupted("bad storage record"));
        };
        if kind != "storage" {
            return Err(corrupted("bad storage record"));
        }
        let key = match key {
            Obj::Str(s) => s.clone(),
            Obj::Int(i) => i.to_string(),
            _ => return Err(corrupted("bad storage key")),
        };
        let numel = usize::try_from(numel.int()?).map_err(|_| corrupted("negative numel"))?;
        Ok(Obj::Storage((self.storage)(*dtype, &key, location, numel)?))
    }
}

/// The object a `torch.save` zip checkpoint holds, read with the weights-only rules
/// (module docs). Storages on another device than the CPU are refused, as PyTorch
/// refuses them on a machine without that device.
pub fn load_pth_bytes(bytes: &[u8]) -> Result<TorchValue> {
    if !bytes.starts_with(b"PK\x03\x04") {
        return Err(corrupted(
            "not a zip archive: PyTorch's legacy format is read only by the Python package",
        ));
    }
    let records = zip_records(bytes)?;
    let pickles: Vec<&String> = records
        .keys()
        .filter(|n| n.ends_with("/data.pkl") && n.matches('/').count() == 1)
        .collect();
    let [pickle] = pickles.as_slice() else {
        return Err(corrupted("no <archive>/data.pkl record"));
    };
    let prefix = &pickle[..pickle.len() - "data.pkl".len()];
    let record = |name: &str| records.get(name).map(|&(at, n)| &bytes[at..at + n]);
    if record(&format!("{prefix}byteorder")).is_some_and(|b| b != b"little") {
        return Err(corrupted("big-endian checkpoints are not supported"));
    }
    let mut storages: BTreeMap<String, Rc<Tensor>> = BTreeMap::new();
    let mut load_storage = |dtype: DType, key: &str, location: &str, numel: usize| {
        if let Some(s) = storages.get(key) {
            return Ok(Rc::clone(s));
        }
        if location != "cpu" {
            return Err(Error::InvalidArgument(format!(
                "Attempting to deserialize object on a {} device but no such device is \
                 available: rustgrad's Rust reader loads CPU storages only",
                location
                    .split(':')
                    .next()
                    .unwrap_or(location)
                    .to_uppercase()
            )));
        }
        let data = record(&format!("{prefix}data/{key}"))
            .filter(|d| Some(d.len()) == numel.checked_mul(dtype.size_in_bytes()))
            .ok_or_else(|| {
                corrupted(format!(
                    "storage {key}: record missing or of the wrong size"
                ))
            })?;
        let raw = RawTensor {
            name: key.to_string(),
            dtype,
            shape: vec![numel],
            data: data.to_vec(),
        };
        let storage = Rc::new(raw.to_tensor()?);
        storages.insert(key.to_string(), Rc::clone(&storage));
        Ok(storage)
    };
    let data = record(pickle).unwrap_or_default();
    let mut unpickler = Unpickler {
        data,
        at: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: BTreeMap::new(),
        storage: &mut load_storage,
    };
    let result = unpickler.run();
    let value = match &result {
        Ok(obj) => obj.clone().into_value(0),
        Err(e) => Err(e.clone()),
    };
    let mut objects: Vec<Obj> = result.into_iter().collect();
    objects.append(&mut unpickler.stack);
    objects.extend(unpickler.marks.drain(..).flatten());
    objects.extend(std::mem::take(&mut unpickler.memo).into_values());
    dismantle(objects);
    value
}

/// Drops an object graph without recursion: a hostile pickle can nest containers
/// arbitrarily deep (or in cycles), and the recursive drop of the `Rc`s would
/// overflow the stack (or leak).
fn dismantle(mut work: Vec<Obj>) {
    while let Some(obj) = work.pop() {
        match obj {
            Obj::List(list) => work.append(&mut list.borrow_mut()),
            Obj::Dict(dict) => {
                for (k, v) in std::mem::take(&mut *dict.borrow_mut()) {
                    work.push(k);
                    work.push(v);
                }
            }
            Obj::Tuple(items) => {
                if let Ok(items) = Rc::try_unwrap(items) {
                    work.extend(items);
                }
            }
            _ => {}
        }
    }
}

/// [`load_pth_bytes`] of the file at `path`.
pub fn load_pth(path: impl AsRef<Path>) -> Result<TorchValue> {
    let bytes = std::fs::read(path.as_ref()).map_err(|e| {
        Error::InvalidArgument(format!("cannot read {}: {e}", path.as_ref().display()))
    })?;
    load_pth_bytes(&bytes)
}
