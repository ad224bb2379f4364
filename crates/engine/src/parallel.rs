//! The engine's own rayon pool. See Note \[Determinism\]: work is always split into chunks
//! whose boundaries depend only on the problem size, never on the thread count, so the
//! pool size changes speed, not results.

use crate::error::{Error, Result};
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::{mpsc, Arc, Mutex};

/// Elementwise ops on fewer elements than this run inline on the calling thread:
/// handing work to the pool costs more than it saves below it.
pub const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// Fixed chunk length for splitting elementwise work and reductions.
pub const CHUNK: usize = 1 << 13;

/// Largest thread count `set_num_threads` and `RUSTGRAD_NUM_THREADS` accept. Far
/// above any CPU count this engine runs on; larger requests are mistakes that would
/// spend seconds spawning threads (or fail to) on every attempt.
pub const MAX_THREADS: usize = 1024;

struct PoolState {
    threads: usize,
    pool: Option<Arc<ThreadPool>>,
    /// The thread that built `pool` and is its worker 0 (Note [The calling thread
    /// works]), if it could be made one.
    driver: Option<std::thread::ThreadId>,
    /// Process that built `pool`: after a fork the child has the pool object but none of
    /// its threads, so it must build a new one rather than wait on dead workers.
    pid: u32,
}

static POOL: Mutex<Option<PoolState>> = Mutex::new(None);

fn default_threads() -> usize {
    std::env::var("RUSTGRAD_NUM_THREADS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| (1..=MAX_THREADS).contains(&n))
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
        driver: None,
        pid,
    });
    if state.pid != pid {
        // Forked child: the old pool's threads do not exist here. Leak it instead of
        // dropping it, since dropping would try to signal threads that are gone.
        if let Some(old) = state.pool.take() {
            std::mem::forget(old);
        }
        state.driver = None;
        state.pid = pid;
    }
    f(state)
}

/// Number of threads kernels may use (`RUSTGRAD_NUM_THREADS`, else the CPU count).
pub fn get_num_threads() -> usize {
    with_state(|s| s.threads)
}

/// Sets the number of threads kernels may use, `1..=MAX_THREADS`, and starts the pool
/// of that size now, so that a pool the system cannot provide is reported here, once,
/// and the previous setting is kept. See Note [Thread pool and fork].
pub fn set_num_threads(threads: usize) -> Result<()> {
    if !(1..=MAX_THREADS).contains(&threads) {
        return Err(Error::InvalidArgument(format!(
            "set_num_threads expects a positive integer of at most {MAX_THREADS}, got {threads}"
        )));
    }
    with_state(|s| {
        if s.threads == threads {
            return Ok(());
        }
        let (pool, driver) = if threads > 1 {
            let (pool, driver) = build_pool(threads)?;
            (Some(pool), driver)
        } else {
            (None, None)
        };
        s.threads = threads;
        s.pool = pool;
        s.driver = driver;
        Ok(())
    })
}

/// A pool of `threads` threads, with the calling thread as its worker 0 when it can be
/// one (it is not a worker of any pool yet, and `RUSTGRAD_POOL_DRIVER` is not `0`), and
/// that thread's id then. See Note [The calling thread works].
fn build_pool(threads: usize) -> Result<(Arc<ThreadPool>, Option<std::thread::ThreadId>)> {
    let adopt = rayon::current_thread_index().is_none()
        && std::env::var_os("RUSTGRAD_POOL_DRIVER").is_none_or(|v| v != "0");
    let mut builder = ThreadPoolBuilder::new();
    if adopt {
        builder = builder.use_current_thread();
    }
    builder
        .num_threads(threads)
        .thread_name(|i| format!("rustgrad-{i}"))
        .build()
        .map(|pool| (Arc::new(pool), adopt.then(|| std::thread::current().id())))
        .map_err(|e| {
            Error::InvalidArgument(format!(
                "rustgrad: could not start a pool of {threads} threads: {e}"
            ))
        })
}

/// The pool to run parallel work on, or `None` when only one thread is allowed.
///
/// The pool is built lazily for the size from the environment (and again after a
/// fork). If that fails, kernels run on the calling thread from then on: the failure
/// is reported once on stderr and the thread count drops to 1, instead of every op
/// retrying the build.
fn pool() -> Option<Arc<ThreadPool>> {
    with_state(|s| {
        if s.threads <= 1 {
            return None;
        }
        if s.pool.is_none() {
            match build_pool(s.threads) {
                Ok((pool, driver)) => {
                    s.pool = Some(pool);
                    s.driver = driver;
                }
                Err(e) => {
                    eprintln!("{e}; running kernels single-threaded");
                    s.threads = 1;
                }
            }
        }
        s.pool.clone()
    })
}

/// The engine's pool for the backward scheduler to spawn node tasks on, or `None` when
/// only one thread is allowed or the caller is one of the pool's spawned workers (a
/// task there must not block waiting on the pool; the worker 0 that drives the pool
/// may). See Note [Parallel backward].
pub(crate) fn backward_pool() -> Option<Arc<ThreadPool>> {
    let pool = pool()?;
    if pool.current_thread_index().is_none() {
        return Some(pool);
    }
    // The pool's worker 0 is the thread that drives it: it may wait for the node tasks
    // (the other workers take them from its queue).
    let me = std::thread::current().id();
    with_state(|s| s.driver == Some(me)).then_some(pool)
}

/// Idle rounds (each an attempt to run a pool job, then a `sched_yield`) a pool thread
/// waiting in [`recv_helping`] spins before it polls with short sleeps.
const HELP_SPIN_ROUNDS: u32 = 2000;

/// Receives from `rx`. A thread that is one of the pool's workers (the thread that
/// drives the pool, Note [The calling thread works]) runs pool jobs meanwhile instead of
/// sleeping: what it waits for (a backward node task on another worker) splits its
/// kernels into jobs that only pool threads take, so a sleeping worker 0 would leave
/// them to the others alone. After [`HELP_SPIN_ROUNDS`] rounds without work it polls
/// every 100 µs.
pub(crate) fn recv_helping<T>(rx: &mpsc::Receiver<T>) -> std::result::Result<T, mpsc::RecvError> {
    if rayon::current_thread_index().is_none() {
        return rx.recv();
    }
    let mut idle = 0u32;
    loop {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if idle < HELP_SPIN_ROUNDS {
            std::thread::yield_now();
            continue;
        }
        match rx.recv_timeout(std::time::Duration::from_micros(100)) {
            Ok(v) => return Ok(v),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(mpsc::RecvError),
        }
    }
}

/// Calls `f(i, chunk)` for every `chunk_len`-element chunk of `data` (the last may be
/// shorter): concurrently on the engine's pool when it has more than one thread, else
/// in order on this thread.
///
/// This is the one way kernels go parallel. A rayon parallel iterator used outside
/// the engine's pool would run on rayon's global pool, which has one thread per CPU
/// whatever `set_num_threads` says, so a one-thread setting would still use every
/// core. See Note [Thread count].
pub fn for_each_chunk_mut<T: Send>(
    data: &mut [T],
    chunk_len: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    let chunk_len = chunk_len.max(1);
    match pool() {
        Some(p) => par_chunks(&p, data, chunk_len, &f),
        None => data
            .chunks_mut(chunk_len)
            .enumerate()
            .for_each(|(i, c)| f(i, c)),
    }
}

/// The parallel half of [`for_each_chunk_mut`], generic over the element type only:
/// `f` arrives as a trait object, so rayon's splitting and joining machinery is
/// compiled once per element type instead of once per kernel closure (it was half of
/// the extension's machine code and of its build time; Note [One parallel loop]). The
/// price is one indirect call per chunk, and a chunk is a kernel's whole inner loop.
#[inline(never)]
fn par_chunks<T: Send>(
    pool: &ThreadPool,
    data: &mut [T],
    chunk_len: usize,
    f: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    use rayon::prelude::*;
    pool.install(|| {
        data.par_chunks_mut(chunk_len)
            .enumerate()
            .for_each(|(i, c)| f(i, c))
    })
}

/// `out[i] = f(i)` for every element, through [`for_each_chunk_mut`].
pub fn fill_each<T: Send>(out: &mut [T], f: impl Fn(usize) -> T + Sync + Send) {
    for_each_chunk_mut(out, 1, |i, c| c[0] = f(i));
}

/// Runs `f` on one of the engine's pool threads (on this thread when the pool has one
/// thread, or when this thread is the pool's worker 0: Note [The calling thread
/// works]), returning its result. For kernels that run many small parallel jobs in a
/// sequence (a recurrent layer's time loop: a GEMM and the gate arithmetic per step):
/// inside the pool each job is split by work-stealing among threads that are still
/// awake from the last one, instead of being handed in from outside and waking them.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Calls `f(i)` for every task `i` in `0..tasks`: concurrently on the engine's pool
/// when it has more than one thread and there is more than one task, else in order on
/// this thread. Kernels that split 2-D work (GEMM tiles) use it; the tasks must touch
/// disjoint outputs. Like [`for_each_chunk_mut`], `f` reaches the pool as a trait
/// object (Note [One parallel loop]).
pub fn for_each_task(tasks: usize, f: impl Fn(usize) + Sync + Send) {
    if tasks <= 1 {
        if tasks == 1 {
            f(0);
        }
        return;
    }
    match pool() {
        Some(p) => par_tasks(&p, tasks, &f),
        None => (0..tasks).for_each(f),
    }
}

#[inline(never)]
fn par_tasks(pool: &ThreadPool, tasks: usize, f: &(dyn Fn(usize) + Sync)) {
    use rayon::prelude::*;
    pool.install(|| (0..tasks).into_par_iter().for_each(f))
}

/// One kernel call's parallel plan, as recorded by [`record_plan`]: the kernel's name,
/// the number of tasks its work was split into, and the work (multiply-adds or
/// elements) of its smallest and largest task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanRecord {
    /// Kernel name, e.g. `"matmul"` or `"conv_forward"`.
    pub kernel: &'static str,
    /// Tasks the call was split into.
    pub tasks: usize,
    /// Work of the smallest task.
    pub min_work: u64,
    /// Work of the largest task.
    pub max_work: u64,
}

static RECORDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static RECORDS: Mutex<Vec<PlanRecord>> = Mutex::new(Vec::new());

/// Whether plans are being recorded (see [`start_recording`]); kernels skip computing
/// their statistics otherwise.
pub fn recording() -> bool {
    RECORDING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Starts recording the parallel plan of every GEMM and convolution call (clearing
/// earlier records). A plan depends on the sizes and on [`get_num_threads`], so
/// recording under `set_num_threads(16)` shows on any machine how 16 threads would
/// split the work. See Note [GEMM plans].
pub fn start_recording() {
    RECORDS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    RECORDING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Stops recording and returns the plans recorded since [`start_recording`].
pub fn stop_recording() -> Vec<PlanRecord> {
    RECORDING.store(false, std::sync::atomic::Ordering::Relaxed);
    std::mem::take(&mut *RECORDS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Adds one kernel call's plan to the records when recording is on.
pub fn record_plan(kernel: &'static str, tasks: usize, min_work: u64, max_work: u64) {
    if recording() {
        RECORDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(PlanRecord {
                kernel,
                tasks,
                min_work,
                max_work,
            });
    }
}
