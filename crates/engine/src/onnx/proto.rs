//! A reader for the subset of `onnx.proto` (ONNX's protobuf schema) that the importer
//! needs, written against the protobuf wire format directly (see Note [ONNX import from
//! Rust]): every length is checked against the bytes that remain before anything is
//! sliced, fields the importer does not read are skipped without being decoded,
//! subgraphs (`If`/`Loop` bodies) are only noted, never parsed, so there is no recursion,
//! and the number of decoded messages and strings has a ceiling, so a hostile file
//! cannot make the reader allocate much more than a small multiple of its own size.
//!
//! Field numbers are those of onnx/onnx.proto (ModelProto, GraphProto, NodeProto,
//! AttributeProto, TensorProto, ValueInfoProto, OperatorSetIdProto,
//! StringStringEntryProto).

use crate::error::{Error, Result};

/// The most bytes of messages and strings (nodes, attributes, initializers, names, ...)
/// one file may decode to: 128 MiB. A graph of 100,000 nodes needs well under 100 MiB;
/// a hostile file of many tiny messages (an empty node is 2 bytes of file and over 100
/// bytes of struct) stops here instead of multiplying its size in memory.
pub(crate) const MAX_DECODED_BYTES: usize = 1 << 27;

/// A wire-format error; `load_model` prefixes "could not parse ONNX model '<path>'".
fn malformed(what: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(what.to_string())
}

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// A cursor over one message's bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(malformed("truncated varint"));
            };
            self.pos += 1;
            if i == 9 && byte > 1 {
                return Err(malformed("varint longer than 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("varint longer than 10 bytes"))
    }

    /// The next field's number and wire type.
    fn key(&mut self) -> Result<(u64, u8)> {
        let key = self.varint()?;
        let field = key >> 3;
        if field == 0 {
            return Err(malformed("field number 0"));
        }
        Ok((field, (key & 7) as u8))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| malformed("a length runs past the end of its message"))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn len_delimited(&mut self) -> Result<&'a [u8]> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| malformed("length too large"))?;
        self.take(n)
    }

    fn fixed32(&mut self) -> Result<[u8; 4]> {
        let b = self.take(4)?;
        Ok([b[0], b[1], b[2], b[3]])
    }

    fn fixed64(&mut self) -> Result<[u8; 8]> {
        let b = self.take(8)?;
        let mut out = [0u8; 8];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// Skips a field the reader does not use.
    fn skip(&mut self, wire: u8) -> Result<()> {
        match wire {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8).map(drop),
            LEN => self.len_delimited().map(drop),
            FIXED32 => self.take(4).map(drop),
            _ => Err(malformed(format!("unsupported wire type {wire}"))),
        }
    }
}

/// Counts the bytes of decoded messages and strings against [`MAX_DECODED_BYTES`].
pub(crate) struct Budget(usize);

impl Budget {
    pub(crate) fn new() -> Budget {
        Budget(MAX_DECODED_BYTES)
    }

    /// Spends the size of one `T`.
    fn spend<T>(&mut self) -> Result<()> {
        self.spend_bytes(std::mem::size_of::<T>())
    }

    fn spend_bytes(&mut self, n: usize) -> Result<()> {
        self.0 = self.0.checked_sub(n).ok_or_else(|| {
            malformed(format!(
                "the file decodes to more than {} MiB of graph structure",
                MAX_DECODED_BYTES >> 20
            ))
        })?;
        Ok(())
    }
}

fn expect(wire: u8, want: u8, what: &str) -> Result<()> {
    if wire == want {
        Ok(())
    } else {
        Err(malformed(format!("field '{what}' has wire type {wire}")))
    }
}

fn string(r: &mut Reader<'_>, wire: u8, what: &str, budget: &mut Budget) -> Result<String> {
    expect(wire, LEN, what)?;
    let bytes = r.len_delimited()?;
    // Lossy conversion writes at most 3 bytes per input byte.
    budget.spend_bytes(std::mem::size_of::<String>() + 3 * bytes.len())?;
    // Invalid UTF-8 is replaced, not refused: names are only compared with each other.
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn int64(r: &mut Reader<'_>, wire: u8, what: &str) -> Result<i64> {
    expect(wire, VARINT, what)?;
    Ok(r.varint()? as i64)
}

/// A repeated varint field, packed (one length-delimited run) or not.
fn push_varints(r: &mut Reader<'_>, wire: u8, what: &str, out: &mut Vec<u64>) -> Result<()> {
    match wire {
        VARINT => out.push(r.varint()?),
        LEN => {
            let mut packed = Reader::new(r.len_delimited()?);
            while !packed.done() {
                out.push(packed.varint()?);
            }
        }
        _ => return Err(malformed(format!("field '{what}' has wire type {wire}"))),
    }
    Ok(())
}

fn push_fixed32(r: &mut Reader<'_>, wire: u8, what: &str, out: &mut Vec<[u8; 4]>) -> Result<()> {
    match wire {
        FIXED32 => out.push(r.fixed32()?),
        LEN => {
            let bytes = r.len_delimited()?;
            if bytes.len() % 4 != 0 {
                return Err(malformed(format!(
                    "packed field '{what}' is not whole 4-byte values"
                )));
            }
            out.extend(bytes.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]));
        }
        _ => return Err(malformed(format!("field '{what}' has wire type {wire}"))),
    }
    Ok(())
}

fn push_fixed64(r: &mut Reader<'_>, wire: u8, what: &str, out: &mut Vec<[u8; 8]>) -> Result<()> {
    match wire {
        FIXED64 => out.push(r.fixed64()?),
        LEN => {
            let bytes = r.len_delimited()?;
            if bytes.len() % 8 != 0 {
                return Err(malformed(format!(
                    "packed field '{what}' is not whole 8-byte values"
                )));
            }
            out.extend(bytes.chunks_exact(8).map(|c| {
                let mut v = [0u8; 8];
                v.copy_from_slice(c);
                v
            }));
        }
        _ => return Err(malformed(format!("field '{what}' has wire type {wire}"))),
    }
    Ok(())
}

/// `ModelProto`: the opsets and the graph.
pub(crate) struct ModelProto<'a> {
    /// `opset_import`: (domain, version).
    pub opset_import: Vec<(String, i64)>,
    pub graph: Option<GraphProto<'a>>,
}

/// `GraphProto`.
pub(crate) struct GraphProto<'a> {
    pub node: Vec<NodeProto<'a>>,
    pub initializer: Vec<TensorProto<'a>>,
    pub sparse_initializers: usize,
    /// `input` / `output`: the ValueInfoProtos' names (their types are not read).
    pub input: Vec<String>,
    pub output: Vec<String>,
}

/// `NodeProto`.
pub(crate) struct NodeProto<'a> {
    pub input: Vec<String>,
    pub output: Vec<String>,
    pub name: String,
    pub op_type: String,
    pub domain: String,
    pub attribute: Vec<AttributeProto<'a>>,
}

/// `AttributeProto`: every value field; `type` says which one is meant.
pub(crate) struct AttributeProto<'a> {
    pub name: String,
    pub kind: i64,
    pub f: f32,
    pub i: i64,
    pub s: &'a [u8],
    pub t: Option<Box<TensorProto<'a>>>,
    pub floats: Vec<f32>,
    pub ints: Vec<i64>,
    pub strings: Vec<String>,
    /// Subgraphs, sparse tensors, tensor lists and type protos are counted, not parsed.
    pub unsupported: usize,
    pub ref_attr_name: bool,
}

/// `AttributeProto.AttributeType` values the importer reads.
pub(crate) mod attr_type {
    pub const FLOAT: i64 = 1;
    pub const INT: i64 = 2;
    pub const STRING: i64 = 3;
    pub const TENSOR: i64 = 4;
    pub const GRAPH: i64 = 5;
    pub const FLOATS: i64 = 6;
    pub const INTS: i64 = 7;
    pub const STRINGS: i64 = 8;
    pub const GRAPHS: i64 = 10;
}

/// `TensorProto`, its data borrowed from the file.
pub(crate) struct TensorProto<'a> {
    pub dims: Vec<i64>,
    pub data_type: i64,
    pub name: String,
    pub raw_data: Option<&'a [u8]>,
    pub float_data: Vec<[u8; 4]>,
    pub int32_data: Vec<u64>,
    pub int64_data: Vec<u64>,
    pub double_data: Vec<[u8; 8]>,
    pub uint64_data: Vec<u64>,
    pub string_data: usize,
    pub segment: bool,
    pub external_data: Vec<(String, String)>,
    pub data_location: i64,
}

/// Parses a whole `ModelProto`.
pub(crate) fn parse_model(bytes: &[u8]) -> Result<ModelProto<'_>> {
    let mut budget = Budget::new();
    let mut r = Reader::new(bytes);
    let mut model = ModelProto {
        opset_import: Vec::new(),
        graph: None,
    };
    while !r.done() {
        let (field, wire) = r.key()?;
        match field {
            7 => {
                expect(wire, LEN, "graph")?;
                // A repeated occurrence of a singular message field is merged by protobuf;
                // a second graph is refused instead (no real exporter writes one).
                if model.graph.is_some() {
                    return Err(malformed("ModelProto has two graphs"));
                }
                model.graph = Some(parse_graph(r.len_delimited()?, &mut budget)?);
            }
            8 => {
                expect(wire, LEN, "opset_import")?;
                budget.spend::<(String, i64)>()?;
                let mut o = Reader::new(r.len_delimited()?);
                let (mut domain, mut version) = (String::new(), 0i64);
                while !o.done() {
                    let (f, w) = o.key()?;
                    match f {
                        1 => domain = string(&mut o, w, "domain", &mut budget)?,
                        2 => version = int64(&mut o, w, "version")?,
                        _ => o.skip(w)?,
                    }
                }
                model.opset_import.push((domain, version));
            }
            _ => r.skip(wire)?,
        }
    }
    Ok(model)
}

fn value_info_name(bytes: &[u8], budget: &mut Budget) -> Result<String> {
    let mut r = Reader::new(bytes);
    let mut name = String::new();
    while !r.done() {
        let (f, w) = r.key()?;
        match f {
            1 => name = string(&mut r, w, "ValueInfoProto.name", budget)?,
            _ => r.skip(w)?,
        }
    }
    Ok(name)
}

fn parse_graph<'a>(bytes: &'a [u8], budget: &mut Budget) -> Result<GraphProto<'a>> {
    let mut r = Reader::new(bytes);
    let mut g = GraphProto {
        node: Vec::new(),
        initializer: Vec::new(),
        sparse_initializers: 0,
        input: Vec::new(),
        output: Vec::new(),
    };
    while !r.done() {
        let (field, wire) = r.key()?;
        match field {
            1 => {
                expect(wire, LEN, "node")?;
                budget.spend::<NodeProto<'_>>()?;
                g.node.push(parse_node(r.len_delimited()?, budget)?);
            }
            5 => {
                expect(wire, LEN, "initializer")?;
                budget.spend::<TensorProto<'_>>()?;
                g.initializer
                    .push(parse_tensor(r.len_delimited()?, budget)?);
            }
            11 | 12 => {
                expect(wire, LEN, "input/output")?;
                let name = value_info_name(r.len_delimited()?, budget)?;
                if field == 11 {
                    &mut g.input
                } else {
                    &mut g.output
                }
                .push(name);
            }
            15 => {
                r.skip(wire)?;
                g.sparse_initializers += 1;
            }
            _ => r.skip(wire)?,
        }
    }
    Ok(g)
}

fn parse_node<'a>(bytes: &'a [u8], budget: &mut Budget) -> Result<NodeProto<'a>> {
    let mut r = Reader::new(bytes);
    let mut n = NodeProto {
        input: Vec::new(),
        output: Vec::new(),
        name: String::new(),
        op_type: String::new(),
        domain: String::new(),
        attribute: Vec::new(),
    };
    while !r.done() {
        let (field, wire) = r.key()?;
        match field {
            1 => n.input.push(string(&mut r, wire, "input", budget)?),
            2 => n.output.push(string(&mut r, wire, "output", budget)?),
            3 => n.name = string(&mut r, wire, "name", budget)?,
            4 => n.op_type = string(&mut r, wire, "op_type", budget)?,
            7 => n.domain = string(&mut r, wire, "domain", budget)?,
            5 => {
                expect(wire, LEN, "attribute")?;
                budget.spend::<AttributeProto<'_>>()?;
                n.attribute
                    .push(parse_attribute(r.len_delimited()?, budget)?);
            }
            _ => r.skip(wire)?,
        }
    }
    Ok(n)
}

fn parse_attribute<'a>(bytes: &'a [u8], budget: &mut Budget) -> Result<AttributeProto<'a>> {
    let mut r = Reader::new(bytes);
    let mut a = AttributeProto {
        name: String::new(),
        kind: 0,
        f: 0.0,
        i: 0,
        s: &[],
        t: None,
        floats: Vec::new(),
        ints: Vec::new(),
        strings: Vec::new(),
        unsupported: 0,
        ref_attr_name: false,
    };
    while !r.done() {
        let (field, wire) = r.key()?;
        match field {
            1 => a.name = string(&mut r, wire, "name", budget)?,
            20 => a.kind = int64(&mut r, wire, "type")?,
            2 => {
                expect(wire, FIXED32, "f")?;
                a.f = f32::from_le_bytes(r.fixed32()?);
            }
            3 => a.i = int64(&mut r, wire, "i")?,
            4 => {
                expect(wire, LEN, "s")?;
                a.s = r.len_delimited()?;
            }
            5 => {
                expect(wire, LEN, "t")?;
                if a.t.is_some() {
                    return Err(malformed("attribute with two 't' fields"));
                }
                budget.spend::<TensorProto<'_>>()?;
                a.t = Some(Box::new(parse_tensor(r.len_delimited()?, budget)?));
            }
            7 => {
                let mut raw = Vec::new();
                push_fixed32(&mut r, wire, "floats", &mut raw)?;
                a.floats.extend(raw.into_iter().map(f32::from_le_bytes));
            }
            8 => {
                let mut raw = Vec::new();
                push_varints(&mut r, wire, "ints", &mut raw)?;
                a.ints.extend(raw.into_iter().map(|v| v as i64));
            }
            9 => a.strings.push(string(&mut r, wire, "strings", budget)?),
            21 => {
                r.skip(wire)?;
                a.ref_attr_name = true;
            }
            6 | 10 | 11 | 14 | 15 | 22 | 23 => {
                r.skip(wire)?;
                a.unsupported += 1;
            }
            _ => r.skip(wire)?,
        }
    }
    Ok(a)
}

fn parse_tensor<'a>(bytes: &'a [u8], budget: &mut Budget) -> Result<TensorProto<'a>> {
    let mut r = Reader::new(bytes);
    let mut t = TensorProto {
        dims: Vec::new(),
        data_type: 0,
        name: String::new(),
        raw_data: None,
        float_data: Vec::new(),
        int32_data: Vec::new(),
        int64_data: Vec::new(),
        double_data: Vec::new(),
        uint64_data: Vec::new(),
        string_data: 0,
        segment: false,
        external_data: Vec::new(),
        data_location: 0,
    };
    while !r.done() {
        let (field, wire) = r.key()?;
        match field {
            1 => {
                let mut raw = Vec::new();
                push_varints(&mut r, wire, "dims", &mut raw)?;
                t.dims.extend(raw.into_iter().map(|v| v as i64));
            }
            2 => t.data_type = int64(&mut r, wire, "data_type")?,
            3 => {
                r.skip(wire)?;
                t.segment = true;
            }
            4 => push_fixed32(&mut r, wire, "float_data", &mut t.float_data)?,
            5 => push_varints(&mut r, wire, "int32_data", &mut t.int32_data)?,
            6 => {
                r.skip(wire)?;
                t.string_data += 1;
            }
            7 => push_varints(&mut r, wire, "int64_data", &mut t.int64_data)?,
            8 => t.name = string(&mut r, wire, "name", budget)?,
            9 => {
                expect(wire, LEN, "raw_data")?;
                t.raw_data = Some(r.len_delimited()?);
            }
            10 => push_fixed64(&mut r, wire, "double_data", &mut t.double_data)?,
            11 => push_varints(&mut r, wire, "uint64_data", &mut t.uint64_data)?,
            13 => {
                expect(wire, LEN, "external_data")?;
                budget.spend::<(String, String)>()?;
                let mut e = Reader::new(r.len_delimited()?);
                let (mut key, mut value) = (String::new(), String::new());
                while !e.done() {
                    let (f, w) = e.key()?;
                    match f {
                        1 => key = string(&mut e, w, "key", budget)?,
                        2 => value = string(&mut e, w, "value", budget)?,
                        _ => e.skip(w)?,
                    }
                }
                t.external_data.push((key, value));
            }
            14 => t.data_location = int64(&mut r, wire, "data_location")?,
            _ => r.skip(wire)?,
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_lengths_are_checked() {
        assert_eq!(Reader::new(&[0x96, 0x01]).varint().unwrap(), 150);
        assert!(Reader::new(&[0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        // Ten bytes whose last carries more than the 64th bit.
        let mut too_big = [0xffu8; 10];
        too_big[9] = 0x02;
        assert!(Reader::new(&too_big).varint().is_err());
        // A length of 2**63 on a 3-byte message.
        let mut huge = vec![0x0a];
        huge.extend([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
        assert!(parse_model(&huge).is_err());
        // Groups are refused.
        assert!(parse_model(&[0x0b]).is_err());
    }
}
