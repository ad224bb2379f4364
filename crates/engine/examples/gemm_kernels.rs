//! The GEMM choice in numbers (Note [GEMM plans], BENCHMARKS.md "GEMM kernels"): the
//! measured AVX2 FMA peak of one core (12 independent chains; benchmarks/fma_peak.c
//! measures AVX-512 too),
//! and single-thread GFLOP/s of the engine's `Gemm::gemm` (the `gemm` crate, runtime
//! dispatched) beside `matrixmultiply` (AVX2+FMA only) for square and network shapes.
//! Then the engine's `matmul` on the whole pool (`RUSTGRAD_NUM_THREADS`).
//!
//!     cargo run --release -p rustgrad --example gemm_kernels

use rustgrad::kernels::matmul::{matmul, Gemm, MatOperand};
use std::hint::black_box;
use std::time::Instant;

fn best_secs(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// GFLOP/s of 12 independent chains of 8-lane f32 FMAs.
#[cfg(target_arch = "x86_64")]
fn fma_peak() {
    use std::arch::x86_64::*;
    const ITERS: usize = 20_000_000;
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(b: f32, c: f32) -> f32 {
        let (b, c) = (_mm256_set1_ps(b), _mm256_set1_ps(c));
        let mut acc = [_mm256_setzero_ps(); 12];
        for _ in 0..ITERS {
            for a in acc.iter_mut() {
                *a = _mm256_fmadd_ps(*a, b, c);
            }
        }
        let mut out = [0f32; 8];
        let sum = acc
            .iter()
            .fold(_mm256_setzero_ps(), |s, &a| _mm256_add_ps(s, a));
        _mm256_storeu_ps(out.as_mut_ptr(), sum);
        out.iter().sum()
    }
    let flops = |lanes: usize| (ITERS * 12 * lanes * 2) as f64;
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        let t = best_secs(3, || {
            black_box(unsafe { avx2(black_box(1.000_000_1), black_box(1e-7)) });
        });
        println!(
            "FMA peak, one core, AVX2:    {:6.1} GFLOP/s",
            flops(8) / t / 1e9
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn fma_peak() {}

fn main() {
    fma_peak();
    let shapes = [
        (256, 256, 256),
        (1024, 1024, 1024),
        (2048, 2048, 2048),
        (64, 576, 3136),   // ResNet-18 layer1 3x3 conv GEMM, 56x56 output
        (128, 784, 1024),  // MLP first layer, batch 128
        (128, 1024, 1024), // MLP hidden layer
        (512, 4608, 64),   // ResNet-18 layer4 conv, 16 samples of 2x2 side by side
    ];
    println!("single thread, GFLOP/s: engine Gemm (gemm crate) / matrixmultiply");
    for &(m, k, n) in &shapes {
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
        let mut c = vec![0f32; m * n];
        let flops = 2.0 * (m * k * n) as f64;
        let reps = (2e10 / flops).clamp(3.0, 200.0) as usize;
        // SAFETY: `a` is m x k, `b` k x n, `c` m x n, all row-major and disjoint.
        let ours = best_secs(reps, || unsafe {
            f32::gemm(
                m,
                k,
                n,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
            )
        });
        // SAFETY: as above.
        let theirs = best_secs(reps, || unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            )
        });
        println!(
            "  {m:5} x {k:5} x {n:5}: {:6.1} / {:6.1}",
            flops / ours / 1e9,
            flops / theirs / 1e9
        );
    }
    println!(
        "engine matmul on {} threads, GFLOP/s",
        rustgrad::get_num_threads()
    );
    for &(m, k, n) in &shapes {
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
        let (ao, bo) = (
            MatOperand {
                data: &a,
                batch_strides: &[],
                offset: 0,
                row_stride: k,
                col_stride: 1,
            },
            MatOperand {
                data: &b,
                batch_strides: &[],
                offset: 0,
                row_stride: n,
                col_stride: 1,
            },
        );
        let flops = 2.0 * (m * k * n) as f64;
        let reps = (2e10 / flops).clamp(3.0, 200.0) as usize;
        let t = best_secs(reps, || {
            drop(black_box(matmul(&[], (m, k, n), &ao, &bo).unwrap()))
        });
        println!("  {m:5} x {k:5} x {n:5}: {:6.1}", flops / t / 1e9);
    }
}
