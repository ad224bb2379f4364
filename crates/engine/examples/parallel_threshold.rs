//! Measures where splitting an elementwise kernel over the engine's pool starts to pay:
//! for sizes around the thresholds, the median time of one pass run serially and run
//! through `parallel::for_each_chunk_mut` (chunks of `CHUNK`), for a cheap kernel (an
//! add: memory-bound, ~0.1 ns per element) and an expensive one (an Adam-like update,
//! ~1 ns per element), plus the cost of handing an empty job to the pool.
//!
//!     cargo run --profile quick -p rustgrad --example parallel_threshold [threads]
//!
//! The numbers recorded in the kernels' threshold comments and BENCHMARKS.md
//! ("Kernel parallelism (issue 20)") come from this program.

use rustgrad::parallel::{self, CHUNK};
use std::hint::black_box;
use std::time::Instant;

fn median_ns(reps: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..reps.div_ceil(10) {
        f();
    }
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_nanos() as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[reps / 2]
}

fn add(out: &mut [f32], a: &[f32], b: &[f32]) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = x + y;
    }
}

fn adam_like(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32]) {
    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        *m = 0.9 * *m + 0.1 * g;
        *v = 0.999 * *v + 0.001 * g * g;
        *p -= 1e-3 * *m / (v.sqrt() + 1e-8);
    }
}

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    parallel::set_num_threads(threads).expect("a pool of that size");
    let max = 1 << 20;
    let a: Vec<f32> = (0..max).map(|i| i as f32).collect();
    let b = a.clone();
    let mut out = vec![0.0f32; max];
    let (mut m, mut v) = (vec![0.0f32; max], vec![0.0f32; max]);

    let mut empty = [0u8; 2];
    let handoff = median_ns(2000, || {
        parallel::for_each_chunk_mut(&mut empty, 1, |_, c| {
            black_box(c);
        })
    });
    println!(
        "{threads} threads: pool hand-off of a 2-task job {:.1} us",
        handoff / 1e3
    );
    println!(
        "{:>9} {:>12} {:>12} {:>12} {:>12}",
        "elements", "add serial", "add pool", "adam serial", "adam pool"
    );
    for shift in 11..=20 {
        let n = 1usize << shift;
        let reps = (1 << 24) / n;
        let add_serial = median_ns(reps, || add(&mut out[..n], &a[..n], &b[..n]));
        let add_pool = median_ns(reps, || {
            parallel::for_each_chunk_mut(&mut out[..n], CHUNK, |c, o| {
                let s = c * CHUNK;
                add(o, &a[s..s + o.len()], &b[s..s + o.len()]);
            })
        });
        let adam_serial = median_ns(reps, || {
            adam_like(&mut out[..n], &a[..n], &mut m[..n], &mut v[..n])
        });
        // The pieces of the optimizer's split: parameter chunks with their buffers.
        let adam_pool = median_ns(reps, || {
            let mut pieces: Vec<(&mut [f32], &mut [f32], &mut [f32])> = out[..n]
                .chunks_mut(CHUNK)
                .zip(m[..n].chunks_mut(CHUNK))
                .zip(v[..n].chunks_mut(CHUNK))
                .map(|((p, m), v)| (p, m, v))
                .collect();
            parallel::for_each_chunk_mut(&mut pieces, 1, |c, piece| {
                let (p, m, v) = &mut piece[0];
                let s = c * CHUNK;
                adam_like(p, &a[s..s + p.len()], m, v);
            })
        });
        println!(
            "{n:>9} {:>10.1}us {:>10.1}us {:>10.1}us {:>10.1}us",
            add_serial / 1e3,
            add_pool / 1e3,
            adam_serial / 1e3,
            adam_pool / 1e3
        );
    }
}
