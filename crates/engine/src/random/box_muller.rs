//! The Box-Muller transform that PyTorch's `normal_` applies to 16 elements at a
//! time (contiguous tensors of 16 elements or more). See Note [Random numbers].
//!
//! For float32, PyTorch's AVX2 kernel computes the logarithm, sine and cosine with the
//! Cephes-derived polynomials of `avx_mathfun.h`, not with libm. `log_f32` and
//! `sincos_f32` below are our own scalar renderings of those algorithms, operation for
//! operation: each lane of a SIMD instruction is an IEEE float32 operation, so the
//! same sequence of `f32` operations gives the same bits. Where the compiled kernel
//! fuses a multiply and an add into one FMA, we call `mul_add` (checked against
//! PyTorch's output by the vectors in `tests/vectors/random.json`).
//!
//! For float64, PyTorch's kernel is scalar and calls the C library's `log`, `cos` and
//! `sin`; Rust's `f64::ln`, `cos` and `sin` call the same libm on Linux.

/// Elements per Box-Muller block: 8 pairs `(data[j], data[j + 8])`.
pub const BLOCK: usize = 16;

// The kernel's constants are double literals rounded to float; they are transcribed
// digit for digit and rounded the same way.
// (The kernel's 0.707106781186547524 is this double.)
const SQRT_HALF: f32 = std::f64::consts::FRAC_1_SQRT_2 as f32;
const LOG_P: [f32; 9] = [
    7.0376836292E-2_f64 as f32,
    -1.1514610310E-1_f64 as f32,
    1.1676998740E-1_f64 as f32,
    -1.2420140846E-1_f64 as f32,
    1.4249322787E-1_f64 as f32,
    -1.6668057665E-1_f64 as f32,
    2.0000714765E-1_f64 as f32,
    -2.4999993993E-1_f64 as f32,
    3.3333331174E-1_f64 as f32,
];
const LOG_Q1: f32 = -2.12194440e-4_f64 as f32;
const LOG_Q2: f32 = 0.693359375_f64 as f32;
const MIN_NORM_POS: f32 = f32::MIN_POSITIVE;

/// `log256_ps` for one lane: natural log, NaN for `x <= 0`.
pub fn log_f32(x: f32) -> f32 {
    let invalid = x <= 0.0;
    // `_mm256_max_ps(x, m)` returns `m` when either is NaN.
    let x = if x > MIN_NORM_POS { x } else { MIN_NORM_POS };
    let bits = x.to_bits();
    let exponent = (bits >> 23) as i32 - 0x7f;
    let mut x = f32::from_bits((bits & !0x7f80_0000) | 0.5f32.to_bits());
    let mut e = exponent as f32 + 1.0;
    let below = x < SQRT_HALF;
    let tmp = if below { x } else { 0.0 };
    x -= 1.0;
    e -= if below { 1.0 } else { 0.0 };
    x += tmp;
    let z = x * x;
    let mut y = LOG_P[0];
    for &p in &LOG_P[1..] {
        y = y.mul_add(x, p);
    }
    y *= x;
    y = y.mul_add(z, e * LOG_Q1);
    y -= z * 0.5;
    x = e.mul_add(LOG_Q2, x + y);
    if invalid {
        f32::from_bits(x.to_bits() | 0xffff_ffff)
    } else {
        x
    }
}

const FOUR_OVER_PI: f32 = 1.27323954473516_f64 as f32;
#[allow(clippy::excessive_precision)]
const MINUS_DP: [f32; 3] = [
    -0.78515625_f64 as f32,
    -2.4187564849853515625e-4_f64 as f32,
    -3.77489497744594108e-8_f64 as f32,
];
const SIN_P: [f32; 3] = [
    -1.9515295891E-4_f64 as f32,
    8.3321608736E-3_f64 as f32,
    -1.6666654611E-1_f64 as f32,
];
#[allow(clippy::excessive_precision)]
const COS_P: [f32; 3] = [
    2.443315711809948E-005_f64 as f32,
    -1.388731625493765E-003_f64 as f32,
    4.166664568298827E-002_f64 as f32,
];

/// `sincos256_ps` for one lane: `(sin x, cos x)`.
pub fn sincos_f32(x: f32) -> (f32, f32) {
    const SIGN: u32 = 0x8000_0000;
    let sign_sin = x.to_bits() & SIGN;
    let mut x = f32::from_bits(x.to_bits() & !SIGN);
    // Truncation toward zero, then j = (j + 1) & !1 (Cephes' octant).
    let mut j = (x * FOUR_OVER_PI) as i32;
    j = j.wrapping_add(1) & !1;
    let y = j as f32;
    let swap_sign_sin = ((j & 4) as u32) << 29;
    let use_sin_poly = (j & 2) == 0;
    for dp in MINUS_DP {
        x = y.mul_add(dp, x);
    }
    let sign_cos = ((!(j.wrapping_sub(2)) & 4) as u32) << 29;
    let sign_sin = sign_sin ^ swap_sign_sin;

    let z = x * x;
    let mut cos_poly = COS_P[0];
    cos_poly = cos_poly.mul_add(z, COS_P[1]);
    cos_poly = cos_poly.mul_add(z, COS_P[2]);
    cos_poly *= z;
    cos_poly = cos_poly.mul_add(z, -(z * 0.5));
    cos_poly += 1.0;

    let mut sin_poly = SIN_P[0];
    sin_poly = sin_poly.mul_add(z, SIN_P[1]);
    sin_poly = sin_poly.mul_add(z, SIN_P[2]);
    sin_poly *= z;
    sin_poly = sin_poly.mul_add(x, x);

    // The kernel selects with bit masks and adds the zeroed lane back: reproduce the
    // additions too, they decide the sign of a zero.
    let (ysin1, ysin2) = if use_sin_poly {
        (0.0, sin_poly)
    } else {
        (cos_poly, 0.0)
    };
    let rest_sin = sin_poly - ysin2;
    let rest_cos = cos_poly - ysin1;
    let s = ysin1 + ysin2;
    let c = rest_cos + rest_sin;
    (
        f32::from_bits(s.to_bits() ^ sign_sin),
        f32::from_bits(c.to_bits() ^ sign_cos),
    )
}

/// Turns 16 uniforms in `[0, 1)` into 16 normals, in place: PyTorch's AVX2
/// `normal_fill_16` for float32.
pub fn fill_16_f32(data: &mut [f32], mean: f32, std: f32) {
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    for j in 0..BLOCK / 2 {
        let u1 = 1.0 - data[j];
        let u2 = data[j + 8];
        let radius = (-2.0 * log_f32(u1)).sqrt();
        let (sin, cos) = sincos_f32(two_pi * u2);
        data[j] = (radius * cos).mul_add(std, mean);
        data[j + 8] = (radius * sin).mul_add(std, mean);
    }
}

/// PyTorch's scalar `normal_fill_16` for float64 (libm's `log`, `cos`, `sin`).
pub fn fill_16_f64(data: &mut [f64], mean: f64, std: f64) {
    for j in 0..BLOCK / 2 {
        let u1 = 1.0 - data[j];
        let u2 = data[j + 8];
        let radius = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        data[j] = (radius * theta.cos()).mul_add(std, mean);
        data[j + 8] = (radius * theta.sin()).mul_add(std, mean);
    }
}
