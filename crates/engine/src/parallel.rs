//! The engine's own rayon pool. See Note [Determinism]: work is always split into chunks
//! whose boundaries depend only on the problem size, never on the thread count, so the
//! pool size changes speed, not results.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::{Arc, Mutex};

/// Elementwise ops on fewer elements than this run inline on the calling thread:
/// handing work to the pool costs more than it saves below it.
pub const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// Fixed chunk length for splitting elementwise work and reductions.
pub const CHUNK: usize = 1 << 13;

struct PoolState {
    threads: usize,
    pool: Option<Arc<ThreadPool>>,
    /// Process that built `pool`: after a fork the child has the pool object but none of
    /// its threads, so it must build a new one rather than wait on dead workers.
    pid: u32,
}

static POOL: Mutex<Option<PoolState>> = Mutex::new(None);

fn default_threads() -> usize {
    std::env::var("RUSTGRAD_NUM_THREADS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
}

fn with_state<R>(f: impl FnOnce(&mut PoolState) -> R) -> R {
    let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let state = guard.get_or_insert_with(|| PoolState {
        threads: default_threads(),
        pool: None,
        pid,
    });
    if state.pid != pid {
        // Forked child: the old pool's threads do not exist here. Leak it instead of
        // dropping it, since dropping would try to signal threads that are gone.
        if let Some(old) = state.pool.take() {
            std::mem::forget(old);
        }
        state.pid = pid;
    }
    f(state)
}

/// Number of threads kernels may use (`RUSTGRAD_NUM_THREADS`, else the CPU count).
pub fn get_num_threads() -> usize {
    with_state(|s| s.threads)
}

/// Sets the number of threads kernels may use (at least 1).
pub fn set_num_threads(threads: usize) {
    with_state(|s| {
        let threads = threads.max(1);
        if s.threads != threads {
            s.threads = threads;
            s.pool = None;
        }
    })
}

/// The pool to run parallel work on, or `None` when only one thread is allowed.
fn pool() -> Option<Arc<ThreadPool>> {
    with_state(|s| {
        if s.threads <= 1 {
            return None;
        }
        if s.pool.is_none() {
            s.pool = ThreadPoolBuilder::new()
                .num_threads(s.threads)
                .thread_name(|i| format!("rustgrad-{i}"))
                .build()
                .ok()
                .map(Arc::new);
        }
        s.pool.clone()
    })
}

/// Runs `f` inside the engine's pool (so rayon's parallel iterators inside use it),
/// or directly on this thread when the pool has one thread.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(p) => p.install(f),
        None => f(),
    }
}
