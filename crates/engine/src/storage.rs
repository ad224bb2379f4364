//! Storage: a typed buffer shared by all views of it, with the version counter that
//! autograd uses to detect in-place writes to saved tensors. See Note [Version counters].

use crate::dtype::DType;
use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The elements of a storage, one variant per dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    /// float32 elements.
    F32(Vec<f32>),
    /// float64 elements.
    F64(Vec<f64>),
    /// int64 elements.
    I64(Vec<i64>),
    /// bool elements.
    Bool(Vec<bool>),
}

impl Buffer {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::I64(_) => DType::I64,
            Buffer::Bool(_) => DType::Bool,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::Bool(v) => v.len(),
        }
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where an in-place write happened, reported when a saved tensor turns out modified.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteSite {
    /// A Rust call site (captured with `#[track_caller]`).
    Rust(&'static Location<'static>),
    /// A site described by a front end, e.g. a Python `file:line`.
    External(Arc<str>),
}

impl fmt::Display for WriteSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteSite::Rust(loc) => write!(f, "{}:{}", loc.file(), loc.line()),
            WriteSite::External(s) => f.write_str(s),
        }
    }
}

/// How many in-place writes a tensor (and every tensor sharing the counter) has seen,
/// and where the last one happened. See Note [Version counters].
#[derive(Debug, Default)]
pub struct VersionCounter {
    version: AtomicU64,
    last_write: Mutex<Option<WriteSite>>,
}

impl VersionCounter {
    /// A counter that starts at `version` (the counter a variable keeps when its data is
    /// replaced: `x.data = src`).
    pub fn starting_at(version: u64) -> VersionCounter {
        VersionCounter {
            version: AtomicU64::new(version),
            last_write: Mutex::new(None),
        }
    }

    /// The number of writes counted.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Counts one write at `site`.
    pub fn bump(&self, site: WriteSite) {
        self.version.fetch_add(1, Ordering::AcqRel);
        *self.last_write.lock().unwrap_or_else(|e| e.into_inner()) = Some(site);
    }

    /// Replaces the recorded site of the last write.
    pub fn set_last_write_site(&self, site: WriteSite) {
        *self.last_write.lock().unwrap_or_else(|e| e.into_inner()) = Some(site);
    }

    /// Where the last counted write happened, if any.
    pub fn last_write_site(&self) -> Option<WriteSite> {
        self.last_write
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A buffer shared by every view of it, plus its version counter.
///
/// The buffer sits behind a `RwLock`: ops take short read locks, in-place writes a
/// write lock. Kernels never hold a lock while taking another on the same storage.
#[derive(Debug)]
pub struct Storage {
    buffer: RwLock<Buffer>,
    counter: VersionCounter,
}

impl Storage {
    /// A new storage at version 0.
    pub fn new(buffer: Buffer) -> Arc<Storage> {
        Arc::new(Storage {
            buffer: RwLock::new(buffer),
            counter: VersionCounter::default(),
        })
    }

    /// Read access to the elements.
    pub fn read(&self) -> RwLockReadGuard<'_, Buffer> {
        // A panic while writing cannot leave the buffer structurally invalid (it is a
        // Vec of plain values), so a poisoned lock is safe to keep using.
        self.buffer.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Write access to the elements; bumps the version and records where.
    pub fn write(&self, site: WriteSite) -> RwLockWriteGuard<'_, Buffer> {
        let guard = self.write_unversioned();
        self.bump_version(site);
        guard
    }

    /// Write access without counting the write (the caller counts it on the writing
    /// tensor's counter, which `x.data` does not share with `x`).
    pub(crate) fn write_unversioned(&self) -> RwLockWriteGuard<'_, Buffer> {
        self.buffer.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The version counter of tensors made over this storage (those not given their
    /// own, like `x.data`).
    pub fn counter(&self) -> &VersionCounter {
        &self.counter
    }

    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        self.read().dtype()
    }

    /// The version counter: how many in-place writes this storage has seen.
    pub fn version(&self) -> u64 {
        self.counter.version()
    }

    /// Marks the storage as written in place at `site`.
    pub fn bump_version(&self, site: WriteSite) {
        self.counter.bump(site);
    }

    /// Replaces the recorded site of the last write (front ends call this right after an
    /// in-place op to report their own source location instead of the Rust one).
    pub fn set_last_write_site(&self, site: WriteSite) {
        self.counter.set_last_write_site(site);
    }

    /// Where the last in-place write happened, if any.
    pub fn last_write_site(&self) -> Option<WriteSite> {
        self.counter.last_write_site()
    }
}
