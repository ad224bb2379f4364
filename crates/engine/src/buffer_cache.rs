//! A global allocator that keeps a bounded cache of large freed blocks for reuse, so a
//! training step that frees and allocates the same large buffers every step does not
//! fault their pages in again. See Note [Buffer cache].
//!
//! The engine does not install it; a program opts in (the Python extension does):
//!
//! ```
//! #[global_allocator]
//! static ALLOCATOR: rustgrad::buffer_cache::BufferCache = rustgrad::buffer_cache::BufferCache::new();
//!
//! let v = vec![0f32; 1 << 20]; // 4 MiB: a large block
//! drop(v); // kept in the cache
//! let w = vec![1f32; 1 << 20]; // the same block again, without a page fault
//! assert_eq!(w[12345], 1.0);
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Blocks below this size go straight to the system allocator (whose thread caches
/// serve them well).
pub const MIN_CACHED: usize = 256 << 10;

/// The most blocks the cache holds.
const SLOTS: usize = 64;

/// Cached bytes kept even when an allocation misses, at least (see [`BufferCache`]).
pub const MIN_SLACK: usize = 8 << 20;

/// Cached bytes kept when an allocation misses: a quarter of the most tensor memory
/// live at once ([`crate::memory::peak`]), at least [`MIN_SLACK`].
fn slack() -> usize {
    (crate::memory::peak() / 2).max(MIN_SLACK)
}

/// The most bytes the cache holds.
pub const LIMIT: usize = 1 << 30;

/// Alignment the system allocator gives every block (glibc's `malloc`); blocks that
/// need more are not cached.
const SYSTEM_ALIGN: usize = 16;

/// The capacity of a block serving `size` bytes: `size` rounded up to a multiple of an
/// eighth of the power of two at or below it (at most 12.5% more, untouched pages of which are never
/// resident), so that slightly different sizes share blocks.
fn class_of(size: usize) -> usize {
    let floor_power = 1usize << (usize::BITS - 1 - size.leading_zeros());
    let step = (floor_power >> 3).max(4096);
    size.div_ceil(step) * step
}

/// Whether a block of this layout goes through the cache.
fn cached(layout: Layout) -> bool {
    layout.size() >= MIN_CACHED && layout.align() <= SYSTEM_ALIGN
}

/// Free blocks, oldest first.
struct Slots {
    blocks: [(usize, usize); SLOTS],
    len: usize,
    bytes: usize,
}

impl Slots {
    /// Takes the newest block of capacity `class`.
    fn take(&mut self, class: usize) -> Option<*mut u8> {
        let i = (0..self.len).rev().find(|&i| self.blocks[i].0 == class)?;
        let (_, ptr) = self.blocks[i];
        self.blocks.copy_within(i + 1..self.len, i);
        self.len -= 1;
        self.bytes -= class;
        Some(ptr as *mut u8)
    }

    /// Removes the oldest block.
    fn pop_oldest(&mut self) -> Option<(usize, usize)> {
        if self.len == 0 {
            return None;
        }
        let block = self.blocks[0];
        self.blocks.copy_within(1..self.len, 0);
        self.len -= 1;
        self.bytes -= block.0;
        Some(block)
    }
}

/// A global allocator over [`System`] that caches freed blocks of at least
/// [`MIN_CACHED`] bytes (by size class, shared by all threads, at most 64 blocks and
/// [`LIMIT`] bytes) and hands them back to allocations of the same class.
///
/// Peak memory stays what the live blocks need: an allocation that finds no block of
/// its class first releases the oldest cached blocks until at most a quarter of the peak
/// of live tensor memory (at least [`MIN_SLACK`]) remains cached, so cached memory
/// stands in for memory the program freed, and peak memory grows by at most that
/// quarter.
pub struct BufferCache {
    slots: Mutex<Slots>,
    disabled: AtomicBool,
    /// The bytes a miss leaves cached ([`slack`]; tests fix it).
    slack: fn() -> usize,
}

impl Default for BufferCache {
    fn default() -> Self {
        Self::new()
    }
}

impl BufferCache {
    /// An empty cache.
    pub const fn new() -> BufferCache {
        BufferCache {
            slots: Mutex::new(Slots {
                blocks: [(0, 0); SLOTS],
                len: 0,
                bytes: 0,
            }),
            disabled: AtomicBool::new(false),
            slack,
        }
    }

    /// Stops caching for good (`RUSTGRAD_BUFFER_CACHE=0` in the Python extension, for
    /// memory debuggers and A/B measurements): cached blocks are released and every
    /// later block goes straight to [`System`]. There is no way back, because a block
    /// allocated while disabled lacks its class's capacity.
    pub fn disable(&self) {
        self.disabled.store(true, Ordering::Relaxed);
        // No block has capacity usize::MAX: this releases every cached block.
        let _ = self.reuse_or_evict(usize::MAX);
    }

    /// Whether a block of this layout goes through the cache.
    fn cached(&self, layout: Layout) -> bool {
        cached(layout) && !self.disabled.load(Ordering::Relaxed)
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        // The critical sections cannot panic, but stay usable if one ever did.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A cached block of `class` bytes, or none after making room for a new one.
    fn reuse_or_evict(&self, class: usize) -> Option<*mut u8> {
        let mut evicted = [(0usize, 0usize); SLOTS];
        let mut n = 0;
        {
            let mut slots = self.slots();
            if let Some(ptr) = slots.take(class) {
                return Some(ptr);
            }
            let keep = if self.disabled.load(Ordering::Relaxed) {
                0
            } else {
                (self.slack)().saturating_sub(class)
            };
            while slots.bytes > keep {
                match slots.pop_oldest() {
                    Some(block) => {
                        evicted[n] = block;
                        n += 1;
                    }
                    None => break,
                }
            }
        }
        for &(size, ptr) in &evicted[..n] {
            // SAFETY: cached blocks were allocated by System with this size and
            // SYSTEM_ALIGN-compatible alignment, and nothing else refers to them.
            unsafe {
                System.dealloc(
                    ptr as *mut u8,
                    Layout::from_size_align_unchecked(size, SYSTEM_ALIGN),
                )
            };
        }
        None
    }
}

// SAFETY: every block handed out is either fresh from `System` or a cached block no one
// else holds (taken out of the cache under its lock), of at least the requested size
// and alignment; `dealloc` receives blocks this allocator returned, whose capacity is
// `class_of` of the size the caller states (Rust's allocator contract).
unsafe impl GlobalAlloc for BufferCache {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.cached(layout) {
            return System.alloc(layout);
        }
        let class = class_of(layout.size());
        match self.reuse_or_evict(class) {
            Some(ptr) => ptr,
            None => System.alloc(Layout::from_size_align_unchecked(class, layout.align())),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !self.cached(layout) {
            return System.alloc_zeroed(layout);
        }
        let class = class_of(layout.size());
        match self.reuse_or_evict(class) {
            Some(ptr) => {
                std::ptr::write_bytes(ptr, 0, layout.size());
                ptr
            }
            None => System.alloc_zeroed(Layout::from_size_align_unchecked(class, layout.align())),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !self.cached(layout) {
            return System.dealloc(ptr, layout);
        }
        let class = class_of(layout.size());
        {
            let mut slots = self.slots();
            if slots.len < SLOTS && slots.bytes + class <= LIMIT {
                let len = slots.len;
                slots.blocks[len] = (class, ptr as usize);
                slots.len += 1;
                slots.bytes += class;
                return;
            }
        }
        System.dealloc(
            ptr,
            Layout::from_size_align_unchecked(class, layout.align()),
        )
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        if self.disabled.load(Ordering::Relaxed) {
            // glibc's realloc takes any block it made, whatever capacity it was given.
            return System.realloc(ptr, layout, new_size);
        }
        match (cached(layout), cached(new_layout)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) if class_of(layout.size()) == class_of(new_size) => ptr,
            _ => {
                let new = self.alloc(new_layout);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_by_at_most_an_eighth() {
        for size in [
            MIN_CACHED,
            MIN_CACHED + 1,
            300_000,
            1 << 20,
            (1 << 20) + 1,
            123_456_789,
        ] {
            let class = class_of(size);
            assert!(
                class >= size && class - size <= size / 8 + 4096,
                "{size} -> {class}"
            );
            assert_eq!(class_of(class), class, "a class is its own class");
        }
    }

    #[test]
    fn a_freed_block_serves_the_next_allocation_of_its_class() {
        let cache = BufferCache::new();
        let layout = Layout::from_size_align(1 << 20, 4).unwrap();
        // SAFETY: layouts are non-zero; blocks are used within their size and freed once.
        unsafe {
            let a = cache.alloc(layout);
            a.write_bytes(7, layout.size());
            cache.dealloc(a, layout);
            let b = cache.alloc_zeroed(Layout::from_size_align(1_000_000, 4).unwrap());
            assert_eq!(a, b, "same class, same block");
            assert!(std::slice::from_raw_parts(b, 1_000_000)
                .iter()
                .all(|&x| x == 0));
            // A different class misses, and the cache (below the slack) keeps what it
            // holds.
            let c = cache.alloc(Layout::from_size_align(4 << 20, 4).unwrap());
            assert_ne!(c, b);
            let grown = cache.realloc(b, Layout::from_size_align(1_000_000, 4).unwrap(), 1 << 20);
            assert_eq!(grown, b, "growing within the class keeps the block");
            cache.dealloc(grown, layout);
            cache.dealloc(c, Layout::from_size_align(4 << 20, 4).unwrap());
            assert_eq!(cache.slots().bytes, class_of(1 << 20) + (4 << 20));
        }
    }

    #[test]
    fn a_miss_releases_cached_blocks_beyond_the_slack() {
        let cache = BufferCache {
            slack: || MIN_SLACK,
            ..BufferCache::new()
        };
        let big = Layout::from_size_align(MIN_SLACK, 8).unwrap();
        // SAFETY: as above.
        unsafe {
            let a = cache.alloc(big);
            cache.dealloc(a, big);
            assert_eq!(cache.slots().len, 1);
            let other = Layout::from_size_align(MIN_SLACK / 2 + 12_345, 8).unwrap();
            let b = cache.alloc(other);
            assert_eq!(
                cache.slots().len,
                0,
                "the cached block made room for the miss"
            );
            cache.dealloc(b, other);
            cache.disable();
            assert_eq!(cache.slots().len, 0, "disabling releases the cache");
            let c = cache.alloc(big);
            cache.dealloc(c, big);
            assert_eq!(cache.slots().len, 0, "nothing is cached once disabled");
        }
    }
}
