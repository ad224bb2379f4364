//! Byte counts of the tensor memory the engine owns: what is allocated now, and the
//! most that was at once since the last reset. See Note [Memory statistics].
//!
//! ```
//! use rustgrad::{memory, DType, Tensor};
//!
//! memory::reset_peak();
//! let before = memory::allocated();
//! let t = Tensor::zeros(&[1000], DType::F32)?;
//! assert!(memory::allocated() >= before + 4000);
//! drop(t);
//! assert!(memory::peak() >= before + 4000);
//! # Ok::<(), rustgrad::Error>(())
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Bytes of element memory held by live storages the engine allocated (memory shared
/// with numpy through `from_numpy` is its owner's and is not counted).
pub fn allocated() -> usize {
    ALLOCATED.load(Ordering::Relaxed)
}

/// The highest [`allocated`] since the process started or [`reset_peak`] was called.
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Starts a new peak measurement from the bytes allocated now.
pub fn reset_peak() {
    PEAK.store(ALLOCATED.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Counts `bytes` of storage memory as allocated.
pub(crate) fn track_alloc(bytes: usize) {
    let now = ALLOCATED.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

/// Counts `bytes` of storage memory as released.
pub(crate) fn track_free(bytes: usize) {
    ALLOCATED.fetch_sub(bytes, Ordering::Relaxed);
}
