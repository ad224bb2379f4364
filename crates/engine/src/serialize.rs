//! Safetensors files: named tensors as raw little-endian bytes behind a JSON header,
//! through the `safetensors` crate. The structure of a checkpoint (nested dicts, views
//! sharing storage, plain values) is the Python layer's business; this module only
//! turns named byte buffers into a file's bytes and back, checking every offset and
//! size of a file it did not write. See Note \[Checkpoints\].

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::BTreeMap;

/// One named tensor as it is stored in a safetensors file: dtype, shape and the
/// elements' little-endian bytes in row-major order.
#[derive(Debug, Clone, PartialEq)]
pub struct RawTensor {
    /// The tensor's key in the file.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Sizes, outermost first.
    pub shape: Vec<usize>,
    /// `numel * dtype.size_in_bytes()` bytes, little-endian.
    pub data: Vec<u8>,
}

/// Applies `$body` with `$t` bound to the element type of `$dtype`.
macro_rules! with_element_type {
    ($dtype:expr, $t:ident, $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
            DType::F16 => {
                type $t = half::f16;
                $body
            }
            DType::BF16 => {
                type $t = half::bf16;
                $body
            }
            DType::I64 => {
                type $t = i64;
                $body
            }
            DType::I32 => {
                type $t = i32;
                $body
            }
            DType::I16 => {
                type $t = i16;
                $body
            }
            DType::I8 => {
                type $t = i8;
                $body
            }
            DType::U8 => {
                type $t = u8;
                $body
            }
            DType::Bool => {
                type $t = bool;
                $body
            }
        }
    };
}

/// Little-endian byte conversions of the element types.
trait LeBytes: Sized {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut array = [0u8; std::mem::size_of::<$t>()];
                array.copy_from_slice(bytes);
                <$t>::from_le_bytes(array)
            }
        }
    )*};
}
le_bytes!(f32, f64, half::f16, half::bf16, i64, i32, i16, i8, u8);

impl LeBytes for bool {
    const SIZE: usize = 1;
    fn put(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn get(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

impl RawTensor {
    /// The bytes of `tensor`'s elements in row-major order (any layout), under `name`.
    pub fn from_tensor(name: &str, tensor: &Tensor) -> RawTensor {
        let dtype = tensor.dtype();
        let data = with_element_type!(dtype, T, {
            let values = tensor.to_vec::<T>();
            let mut data = Vec::with_capacity(values.len() * <T as LeBytes>::SIZE);
            values.into_iter().for_each(|v| v.put(&mut data));
            data
        });
        RawTensor {
            name: name.to_string(),
            dtype,
            shape: tensor.layout().shape().to_vec(),
            data,
        }
    }

    /// A new contiguous tensor holding these bytes; an error when their length does
    /// not match dtype and shape.
    pub fn to_tensor(&self) -> Result<Tensor> {
        let numel = crate::shape::checked_numel(&self.shape)?;
        let expected = numel.checked_mul(self.dtype.size_in_bytes());
        if expected != Some(self.data.len()) {
            return Err(Error::InvalidArgument(format!(
                "tensor '{}' of shape {:?} needs {:?} bytes but has {}",
                self.name,
                self.shape,
                expected,
                self.data.len()
            )));
        }
        with_element_type!(self.dtype, T, {
            let values: Vec<T> = self
                .data
                .chunks_exact(<T as LeBytes>::SIZE)
                .map(<T as LeBytes>::get)
                .collect();
            Tensor::from_vec(values, &self.shape)
        })
    }
}

/// The safetensors dtype that stores `dtype`.
fn to_safetensors_dtype(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::I64 => Dtype::I64,
        DType::I32 => Dtype::I32,
        DType::I16 => Dtype::I16,
        DType::I8 => Dtype::I8,
        DType::U8 => Dtype::U8,
        DType::Bool => Dtype::BOOL,
    }
}

/// The engine dtype of a safetensors dtype, or an error for the ones rustgrad has not
/// (unsigned 16/32/64-bit, complex, 4/6/8-bit floats).
fn from_safetensors_dtype(dtype: Dtype, name: &str) -> Result<DType> {
    Ok(match dtype {
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::I64 => DType::I64,
        Dtype::I32 => DType::I32,
        Dtype::I16 => DType::I16,
        Dtype::I8 => DType::I8,
        Dtype::U8 => DType::U8,
        Dtype::BOOL => DType::Bool,
        other => {
            return Err(Error::InvalidArgument(format!(
                "safetensors: tensor '{name}' has dtype {other:?}, which rustgrad does not support"
            )));
        }
    })
}

fn safetensors_error(error: safetensors::SafeTensorError) -> Error {
    Error::InvalidArgument(format!("safetensors: {error}"))
}

/// The bytes of a safetensors file holding `tensors` (their names must be distinct)
/// and the string-to-string `metadata` of its header (`__metadata__`).
///
/// ```
/// use rustgrad::serialize::{from_safetensors, to_safetensors, RawTensor};
/// let t = RawTensor { name: "w".into(), dtype: rustgrad::DType::F32, shape: vec![2],
///                     data: [1f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect() };
/// let bytes = to_safetensors(&[t.clone()], Default::default())?;
/// let (_, back) = from_safetensors(&bytes)?;
/// assert_eq!(back, vec![t]);
/// # Ok::<(), rustgrad::Error>(())
/// ```
pub fn to_safetensors(
    tensors: &[RawTensor],
    metadata: BTreeMap<String, String>,
) -> Result<Vec<u8>> {
    let mut views = Vec::with_capacity(tensors.len());
    for tensor in tensors {
        let view = TensorView::new(
            to_safetensors_dtype(tensor.dtype),
            tensor.shape.clone(),
            &tensor.data,
        )
        .map_err(safetensors_error)?;
        views.push((tensor.name.as_str(), view));
    }
    let bytes = safetensors::serialize(views, None).map_err(safetensors_error)?;
    if metadata.is_empty() {
        return Ok(bytes);
    }
    with_sorted_metadata(&bytes, &metadata)
}

/// `bytes` (a safetensors file without metadata) with `metadata` as the header's
/// `__metadata__`, keys in sorted order. The crate takes the metadata as a `HashMap`
/// and writes it in that map's order, which differs from run to run, so the same
/// checkpoint would not be the same bytes; rustgrad splices it in itself. The header
/// stays valid JSON padded with spaces to a multiple of 8 bytes, as the crate pads it.
fn with_sorted_metadata(bytes: &[u8], metadata: &BTreeMap<String, String>) -> Result<Vec<u8>> {
    let malformed = || Error::InvalidArgument("safetensors: unexpected header layout".into());
    let len = bytes
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(malformed)?;
    let (header, data) = bytes
        .get(8..)
        .filter(|rest| rest.len() >= len)
        .map(|rest| rest.split_at(len))
        .ok_or_else(malformed)?;
    let entries = std::str::from_utf8(header)
        .ok()
        .and_then(|h| h.trim_end().strip_prefix('{'))
        .ok_or_else(malformed)?;
    let metadata = serde_json::to_string(metadata)
        .map_err(|e| Error::InvalidArgument(format!("safetensors: {e}")))?;
    let mut out = format!("{{\"__metadata__\":{metadata}");
    if entries != "}" {
        out.push(',');
    }
    out.push_str(entries);
    while out.len() % 8 != 0 {
        out.push(' ');
    }
    let mut file = Vec::with_capacity(8 + out.len() + data.len());
    file.extend_from_slice(&(out.len() as u64).to_le_bytes());
    file.extend_from_slice(out.as_bytes());
    file.extend_from_slice(data);
    Ok(file)
}

/// The header metadata and the tensors of a safetensors file's `bytes`, sorted by
/// name. A truncated, corrupted or inconsistent file (bad header
/// length or JSON, offsets outside the buffer or overlapping, a size that does not
/// match dtype and shape, an unsupported dtype) is an error, never a panic.
pub fn from_safetensors(bytes: &[u8]) -> Result<(BTreeMap<String, String>, Vec<RawTensor>)> {
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(safetensors_error)?;
    let metadata = header.metadata().clone().unwrap_or_default();
    let file = SafeTensors::deserialize(bytes).map_err(safetensors_error)?;
    let mut tensors = file
        .iter()
        .map(|(name, view)| {
            Ok(RawTensor {
                name: name.to_string(),
                dtype: from_safetensors_dtype(view.dtype(), name)?,
                shape: view.shape().to_vec(),
                data: view.data().to_vec(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((metadata.into_iter().collect(), tensors))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let t = RawTensor {
            name: "a".into(),
            dtype: DType::F64,
            shape: vec![2, 2],
            data: (0..32).collect(),
        };
        to_safetensors(&[t], BTreeMap::from([("k".into(), "v".into())])).unwrap()
    }

    #[test]
    fn metadata_is_written_in_sorted_order_so_equal_files_are_equal_bytes() {
        let metadata: BTreeMap<String, String> = (0..20)
            .map(|i| (format!("key{i:02}"), format!("\"quoted\" {i}")))
            .collect();
        let t = RawTensor {
            name: "w".into(),
            dtype: DType::F32,
            shape: vec![3],
            data: (0..12).collect(),
        };
        let bytes = to_safetensors(std::slice::from_ref(&t), metadata.clone()).unwrap();
        // A fresh map each time: a HashMap-ordered header would differ between them.
        for _ in 0..5 {
            assert_eq!(
                to_safetensors(std::slice::from_ref(&t), metadata.clone()).unwrap(),
                bytes
            );
        }
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(n % 8, 0);
        let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
        let positions: Vec<usize> = metadata
            .keys()
            .map(|k| header.find(k.as_str()).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{header}");
        let (back, tensors) = from_safetensors(&bytes).unwrap();
        assert_eq!((back, tensors), (metadata, vec![t]));
        // No tensors at all: the header is the metadata alone.
        let empty = to_safetensors(&[], BTreeMap::from([("k".into(), "v".into())])).unwrap();
        assert_eq!(from_safetensors(&empty).unwrap().0["k"], "v");
    }

    #[test]
    fn round_trip_keeps_bytes_and_metadata() {
        let (metadata, tensors) = from_safetensors(&sample()).unwrap();
        assert_eq!(metadata["k"], "v");
        assert_eq!(tensors[0].data, (0..32).collect::<Vec<u8>>());
        assert_eq!(tensors[0].shape, vec![2, 2]);
    }

    #[test]
    fn every_truncation_and_bit_flip_is_an_error_or_a_valid_file() {
        let bytes = sample();
        for len in 0..bytes.len() {
            assert!(
                from_safetensors(&bytes[..len]).is_err(),
                "truncated at {len}"
            );
        }
        for i in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[i / 8] ^= 1 << (i % 8);
            // Must not panic; data bytes may flip undetected (the Python layer checksums).
            let _ = from_safetensors(&flipped);
        }
    }
}
