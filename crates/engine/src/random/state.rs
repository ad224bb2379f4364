//! A generator's state as the bytes of PyTorch's `CPUGeneratorImplState` (what
//! `torch.get_rng_state()` returns on x86-64 Linux), so states move between PyTorch
//! and rustgrad. Little-endian, natural alignment:
//!
//! | offset | field |
//! | --- | --- |
//! | 0 | `the_initial_seed: u64` |
//! | 8 | `left: i32` |
//! | 12 | `seeded: i32` |
//! | 16 | `next: u64` |
//! | 24 | `state: [u64; 624]` (each a 32-bit word) |
//! | 5016 | `normal_x: f64` (unused, 0) |
//! | 5024 | `normal_y: f64` (the cached double normal sample) |
//! | 5032 | `normal_rho: f64` (unused, 0) |
//! | 5040 | `normal_is_valid: i32`, then 4 bytes of padding |
//! | 5048 | `next_float_normal_sample: f32` |
//! | 5052 | `is_next_float_normal_sample_valid: bool`, then 3 bytes of padding |

use super::mt19937::{Mt19937, STATE_N};
use super::GeneratorState;
use crate::error::{Error, Result};

/// Size of a generator state in bytes (PyTorch's `sizeof(CPUGeneratorImplState)`).
pub const STATE_BYTES: usize = 5056;

const STATE_WORDS: usize = 24;
const NORMAL_Y: usize = STATE_WORDS + 8 * STATE_N + 8;
const NORMAL_IS_VALID: usize = NORMAL_Y + 16;
const FLOAT_NORMAL: usize = NORMAL_IS_VALID + 8;
const FLOAT_NORMAL_IS_VALID: usize = FLOAT_NORMAL + 4;

pub(super) fn encode(s: &GeneratorState) -> Vec<u8> {
    let mut out = vec![0u8; STATE_BYTES];
    let mut put = |at: usize, bytes: &[u8]| out[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, &s.engine.seed.to_le_bytes());
    put(8, &(s.engine.left as i32).to_le_bytes());
    put(12, &1i32.to_le_bytes());
    put(16, &u64::from(s.engine.next).to_le_bytes());
    for (i, word) in s.engine.state.iter().enumerate() {
        put(STATE_WORDS + 8 * i, &u64::from(*word).to_le_bytes());
    }
    if let Some(y) = s.next_double_normal {
        put(NORMAL_Y, &y.to_le_bytes());
        put(NORMAL_IS_VALID, &1i32.to_le_bytes());
    }
    if let Some(f) = s.next_float_normal {
        put(FLOAT_NORMAL, &f.to_le_bytes());
        put(FLOAT_NORMAL_IS_VALID, &[1]);
    }
    out
}

pub(super) fn decode(bytes: &[u8]) -> Result<GeneratorState> {
    if bytes.len() != STATE_BYTES {
        return Err(Error::InvalidArgument(format!(
            "Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG state size to be {}",
            bytes.len()
        )));
    }
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
    let i32_at = |at: usize| i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    let mut state = [0u32; STATE_N];
    for (i, word) in state.iter_mut().enumerate() {
        // PyTorch copies each u64 into a u32: the high half is dropped.
        *word = u64_at(STATE_WORDS + 8 * i) as u32;
    }
    let (left, seeded) = (i32_at(8), i32_at(12));
    let engine = Mt19937 {
        seed: u64_at(0),
        left: u32::try_from(left).unwrap_or(0),
        next: u64_at(16) as u32,
        state,
    };
    if seeded == 0 || !engine.is_valid() {
        return Err(Error::InvalidArgument("Invalid mt19937 state".into()));
    }
    let next_double_normal =
        (i32_at(NORMAL_IS_VALID) != 0).then(|| f64::from_bits(u64_at(NORMAL_Y)));
    let next_float_normal = (bytes[FLOAT_NORMAL_IS_VALID] != 0).then(|| {
        f32::from_le_bytes(
            bytes[FLOAT_NORMAL..FLOAT_NORMAL + 4]
                .try_into()
                .unwrap_or([0; 4]),
        )
    });
    Ok(GeneratorState {
        engine,
        next_float_normal,
        next_double_normal,
    })
}
