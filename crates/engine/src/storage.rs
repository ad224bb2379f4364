//! Storage: a typed buffer shared by all views of it, with the version counter that
//! autograd uses to detect in-place writes to saved tensors. See Note [Version counters].

use crate::dtype::DType;
use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The elements of a storage, one variant per dtype, or memory owned by someone else.
#[derive(Debug)]
pub enum Buffer {
    /// float32 elements.
    F32(Vec<f32>),
    /// float64 elements.
    F64(Vec<f64>),
    /// int64 elements.
    I64(Vec<i64>),
    /// float16 elements.
    F16(Vec<half::f16>),
    /// bfloat16 elements.
    BF16(Vec<half::bf16>),
    /// int32 elements.
    I32(Vec<i32>),
    /// int16 elements.
    I16(Vec<i16>),
    /// int8 elements.
    I8(Vec<i8>),
    /// uint8 elements.
    U8(Vec<u8>),
    /// bool elements.
    Bool(Vec<bool>),
    /// Elements in memory another owner keeps alive (a numpy array shared by
    /// `from_numpy`). See Note [Shared memory].
    External(ExternalBuffer),
}

/// Elements of a numeric dtype in memory that `owner` keeps alive and never moves.
pub struct ExternalBuffer {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    dtype: DType,
    /// Dropped (releasing the memory's owner) when the storage is.
    _owner: Box<dyn std::any::Any + Send + Sync>,
}

// SAFETY: the memory is only read through `&Buffer` and written through `&mut Buffer`,
// both obtained from the storage's lock, like a Vec's (Note [Shared memory]).
unsafe impl Send for ExternalBuffer {}
// SAFETY: as for Send.
unsafe impl Sync for ExternalBuffer {}

impl fmt::Debug for ExternalBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalBuffer")
            .field("len", &self.len)
            .field("dtype", &self.dtype)
            .finish_non_exhaustive()
    }
}

impl ExternalBuffer {
    /// Elements in memory owned by `owner`.
    ///
    /// # Safety
    /// `ptr` must point to `len` initialised elements of `dtype` (not bool: any byte
    /// pattern of the other dtypes is a valid value), aligned for that dtype, that stay
    /// valid and in place while `owner` lives; nothing may access the memory while the
    /// engine writes it (the caller's contract with the memory's other users).
    pub unsafe fn new(
        ptr: std::ptr::NonNull<u8>,
        len: usize,
        dtype: DType,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> ExternalBuffer {
        debug_assert!(dtype != DType::Bool);
        ExternalBuffer {
            ptr,
            len,
            dtype,
            _owner: owner,
        }
    }

    /// The elements as a `T` slice, if `T` is their dtype.
    pub fn slice<T: crate::dtype::Element>(&self) -> Option<&[T]> {
        // SAFETY: `new`'s contract: `len` valid, aligned elements of `dtype`.
        (T::DTYPE == self.dtype && T::DTYPE != DType::Bool)
            .then(|| unsafe { std::slice::from_raw_parts(self.ptr.as_ptr() as *const T, self.len) })
    }

    /// The elements as a mutable `T` slice, if `T` is their dtype.
    pub fn slice_mut<T: crate::dtype::Element>(&mut self) -> Option<&mut [T]> {
        // SAFETY: as `slice`; `&mut self` comes from the storage's write lock.
        (T::DTYPE == self.dtype && T::DTYPE != DType::Bool).then(|| unsafe {
            std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut T, self.len)
        })
    }
}

/// Runs `$body` with `$v` bound to the element vector of each owned variant of `$buf`,
/// and `$ext` for shared memory.
macro_rules! each_owned {
    ($buf:expr, $v:ident => $body:expr, $e:ident => $ext:expr) => {
        match $buf {
            Buffer::F32($v) => $body,
            Buffer::F64($v) => $body,
            Buffer::F16($v) => $body,
            Buffer::BF16($v) => $body,
            Buffer::I64($v) => $body,
            Buffer::I32($v) => $body,
            Buffer::I16($v) => $body,
            Buffer::I8($v) => $body,
            Buffer::U8($v) => $body,
            Buffer::Bool($v) => $body,
            Buffer::External($e) => $ext,
        }
    };
}

impl Clone for Buffer {
    /// A copy that owns its elements (a shared buffer is copied out).
    fn clone(&self) -> Buffer {
        fn copy<T: crate::dtype::Element>(e: &ExternalBuffer) -> Buffer {
            T::into_buffer(e.slice::<T>().unwrap_or_default().to_vec())
        }
        match self {
            Buffer::F32(v) => Buffer::F32(v.clone()),
            Buffer::F64(v) => Buffer::F64(v.clone()),
            Buffer::F16(v) => Buffer::F16(v.clone()),
            Buffer::BF16(v) => Buffer::BF16(v.clone()),
            Buffer::I64(v) => Buffer::I64(v.clone()),
            Buffer::I32(v) => Buffer::I32(v.clone()),
            Buffer::I16(v) => Buffer::I16(v.clone()),
            Buffer::I8(v) => Buffer::I8(v.clone()),
            Buffer::U8(v) => Buffer::U8(v.clone()),
            Buffer::Bool(v) => Buffer::Bool(v.clone()),
            Buffer::External(e) => match e.dtype {
                DType::F32 => copy::<f32>(e),
                DType::F64 => copy::<f64>(e),
                DType::F16 => copy::<half::f16>(e),
                DType::BF16 => copy::<half::bf16>(e),
                DType::I64 => copy::<i64>(e),
                DType::I32 => copy::<i32>(e),
                DType::I16 => copy::<i16>(e),
                DType::I8 => copy::<i8>(e),
                DType::U8 => copy::<u8>(e),
                DType::Bool => Buffer::Bool(Vec::new()),
            },
        }
    }
}

impl PartialEq for Buffer {
    fn eq(&self, other: &Buffer) -> bool {
        fn same<T: crate::dtype::Element>(a: &Buffer, b: &Buffer) -> bool {
            match (T::slice(a), T::slice(b)) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            }
        }
        match self.dtype() {
            DType::F32 => same::<f32>(self, other),
            DType::F64 => same::<f64>(self, other),
            DType::F16 => same::<half::f16>(self, other),
            DType::BF16 => same::<half::bf16>(self, other),
            DType::I64 => same::<i64>(self, other),
            DType::I32 => same::<i32>(self, other),
            DType::I16 => same::<i16>(self, other),
            DType::I8 => same::<i8>(self, other),
            DType::U8 => same::<u8>(self, other),
            DType::Bool => same::<bool>(self, other),
        }
    }
}

impl Buffer {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::F16(_) => DType::F16,
            Buffer::BF16(_) => DType::BF16,
            Buffer::I64(_) => DType::I64,
            Buffer::I32(_) => DType::I32,
            Buffer::I16(_) => DType::I16,
            Buffer::I8(_) => DType::I8,
            Buffer::U8(_) => DType::U8,
            Buffer::Bool(_) => DType::Bool,
            Buffer::External(e) => e.dtype,
        }
    }

    /// The address of the first element (numpy arrays sharing the storage view it).
    pub fn as_ptr(&self) -> *const u8 {
        // The u8 variant's pointer is already `*const u8`.
        #[allow(clippy::unnecessary_cast)]
        let ptr = each_owned!(self, v => v.as_ptr() as *const u8, e => e.ptr.as_ptr());
        ptr
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        each_owned!(self, v => v.len(), e => e.len)
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

/// The version counter a tensor uses instead of its storage's (Note [Version counters]).
#[derive(Clone, Debug)]
pub enum CounterRef {
    /// A counter of its own (`x.data`: writes through it are not counted on `x`).
    Own(Arc<VersionCounter>),
    /// The counter of another storage. A variable keeps its counter when its data is
    /// replaced (`x.data = src`), so that it stays shared with the views made before;
    /// that counter lives in the storage the variable was made with.
    Of(Arc<Storage>),
}

impl CounterRef {
    /// The counter.
    pub fn get(&self) -> &VersionCounter {
        match self {
            CounterRef::Own(c) => c,
            CounterRef::Of(s) => s.counter(),
        }
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
    /// Bytes counted in [`crate::memory`] for this storage (0 for shared memory); the
    /// buffer never changes size, so the same count is released on drop.
    owned_bytes: usize,
}

impl Drop for Storage {
    fn drop(&mut self) {
        crate::memory::track_free(self.owned_bytes);
    }
}

impl Storage {
    /// A new storage at version 0.
    pub fn new(mut buffer: Buffer) -> Arc<Storage> {
        // A kernel may hand over a vector with spare capacity (a reduction that kept its
        // first partial, say); the storage would pin the whole allocation for its
        // lifetime, unseen by the count below. Give the spare back (a no-op when there
        // is none; for a large block glibc shrinks the mapping in place).
        each_owned!(&mut buffer, v => v.shrink_to_fit(), _e => ());
        let owned_bytes = match &buffer {
            Buffer::External(_) => 0,
            owned => owned.len() * owned.dtype().size_in_bytes(),
        };
        crate::memory::track_alloc(owned_bytes);
        Arc::new(Storage {
            buffer: RwLock::new(buffer),
            counter: VersionCounter::default(),
            owned_bytes,
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
