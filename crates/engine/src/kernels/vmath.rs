//! Branch-free float32 `exp` that the compiler vectorises, for the kernels whose time is
//! `exp` over long runs (softmax, log-softmax, the fused class losses). See Note
//! [Vectorised exp].

/// `log2(e)`.
const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// `ln(2)` split in two so that `n * LN2_HI` is exact for the `n` that occur.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// `1.5 * 2^23`: adding it rounds a float32 of magnitude below `2^22` to an integer
/// (ties to even) held in the low mantissa bits.
const ROUNDER: f32 = 12_582_912.0;
/// Above this `exp` overflows to infinity; below `LOWEST` it is 0 in float32.
const HIGHEST: f32 = 88.73;
const LOWEST: f32 = -104.0;

/// `exp(x)` in float32 within 2 ulp of the correctly rounded result (a unit test
/// sweeps the range), subnormal results included; `inf`, `-inf` and NaN give `inf`, 0
/// and NaN. No branches, so loops over slices of it vectorise.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // A NaN fails both comparisons and stays NaN through the arithmetic below.
    let x = if x > HIGHEST { HIGHEST } else { x };
    let x = if x < LOWEST { LOWEST } else { x };
    // x = n ln2 + r with |r| <= ln2 / 2.
    let shifted = x * LOG2_E + ROUNDER;
    let n_float = shifted - ROUNDER;
    let n = (shifted.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    let r = x - n_float * LN2_HI - n_float * LN2_LO;
    // exp(r) on [-ln2/2, ln2/2]: Cephes' expf minimax polynomial.
    let p = 1.987_569_1e-4f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 0.166_666_65;
    let p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    // 2^n in two factors, each a normal float32: n in [-150, 128] splits into halves
    // in [-75, 64], so subnormal results are rounded once, by the last product.
    let half = n >> 1;
    let scale1 = f32::from_bits(((half + 127) as u32) << 23);
    let scale2 = f32::from_bits(((n - half + 127) as u32) << 23);
    e * scale1 * scale2
}

/// `1 / (1 + exp(-x))` in float32 through [`exp_f32`]: within 3 ulp (a unit test sweeps
/// the range), 0 and 1 at the far ends, NaN for NaN. No branches, so loops vectorise.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// `tanh(x)` in float32 without branches (loops over it vectorise), within 3 ulp (a
/// unit test sweeps the range): below 0.5 in magnitude the odd Taylor series to `x¹⁷`
/// (the next term is under 1e-9 relative there), above it `1 - 2 / (exp(2|x|) + 1)`
/// (at most one bit lost to the subtraction), with `x`'s sign; ±1 from 9.1 on, -0.0 for
/// -0.0, NaN for NaN.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let big = 1.0 - 2.0 / (exp_f32(2.0 * a) + 1.0);
    let a2 = a * a;
    let p = 6_404_582.0f32 / 10_854_718_875.0;
    let p = p * a2 - 929_569.0 / 638_512_875.0;
    let p = p * a2 + 21_844.0 / 6_081_075.0;
    let p = p * a2 - 1_382.0 / 155_925.0;
    let p = p * a2 + 62.0 / 2_835.0;
    let p = p * a2 - 17.0 / 315.0;
    let p = p * a2 + 2.0 / 15.0;
    let p = p * a2 - 1.0 / 3.0;
    let small = a + a * a2 * p;
    // A NaN fails the comparison and takes `big`, which is NaN.
    let t = if a < 0.5 { small } else { big };
    t.copysign(x)
}

/// `avx2_variant!(pub(crate) fn name<T>(args) -> R = inner);` defines `name`, which
/// calls the `#[inline(always)]` generic function `inner` (bound `T: Float`) compiled
/// for AVX2 when the CPU has it, else as it is: `inner`, and everything it calls that is
/// `#[inline(always)]`, is inlined into a function with the `avx2` target feature, so
/// its loops run on eight float32 lanes instead of SSE2's four. The feature test is a
/// cached load. AVX2 adds wider registers and integer ops only: without FMA (not
/// enabled, and Rust never contracts `a * b + c`) every operation rounds as in the
/// SSE2 build, so both give the same bits (Note [Vectorised exp]).
macro_rules! avx2_variant {
    ($vis:vis fn $name:ident<$t:ident>($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? = $inner:ident) => {
        $vis fn $name<$t: crate::dtype::Float>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn wide<$t: crate::dtype::Float>($($arg: $ty),*) $(-> $ret)? {
                    $inner($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: `wide` needs only AVX2, which the CPU was just found to have.
                    return unsafe { wide($($arg),*) };
                }
            }
            $inner($($arg),*)
        }
    };
}
pub(crate) use avx2_variant;

/// `avx2_fma_variant!(fn name<T: Bound>(args) = inner);` defines `name`, which calls the
/// `#[inline(always)]` generic function `inner` compiled for AVX2 and FMA when the CPU
/// has both, else as it is (as [`avx2_variant`], with any trait bound). FMA changes no
/// result: Rust never contracts `a * b + c`, so only explicit `mul_add` calls fuse, and
/// those are fused (correctly rounded) on either path, by the instruction instead of a
/// call to `fmaf`. For the optimizer updates (`optim::update`).
macro_rules! avx2_fma_variant {
    ($vis:vis fn $name:ident<$t:ident: $bound:path>($($arg:ident: $ty:ty),* $(,)?) = $inner:ident) => {
        $vis fn $name<$t: $bound>($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                fn wide<$t: $bound>($($arg: $ty),*) {
                    $inner::<$t>($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: `wide` needs only AVX2 and FMA, which the CPU was just found
                    // to have.
                    return unsafe { wide::<$t>($($arg),*) };
                }
            }
            $inner::<$t>($($arg),*)
        }
    };
}
pub(crate) use avx2_fma_variant;

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite float32 of equal sign.
    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_f32_is_within_two_ulp_of_the_correctly_rounded_exp() {
        let mut worst = 0;
        let mut x = -104.0f32;
        while x < 88.72 {
            let reference = (x as f64).exp() as f32;
            let got = exp_f32(x);
            worst = worst.max(ulps(got, reference));
            assert!(
                ulps(got, reference) <= 2,
                "exp({x}) = {got}, want {reference}"
            );
            x += 0.000_731;
        }
        assert!(worst >= 1, "the sweep should meet rounding differences");
    }

    #[test]
    fn tanh_and_sigmoid_f32_are_within_three_ulp() {
        let (mut worst_tanh, mut worst_sigmoid) = (0, 0);
        let mut x = -20.0f32;
        while x < 20.0 {
            for v in [x, x * 1e-3, x * 1e-6] {
                let t = tanh_f32(v);
                let want = (v as f64).tanh() as f32;
                assert!(
                    t == want || ulps(t, want) <= 3,
                    "tanh({v}) = {t}, want {want}"
                );
                worst_tanh = worst_tanh.max(ulps(t, want));
                let s = sigmoid_f32(v);
                let want = (1.0 / (1.0 + (-(v as f64)).exp())) as f32;
                assert!(ulps(s, want) <= 3, "sigmoid({v}) = {s}, want {want}");
                worst_sigmoid = worst_sigmoid.max(ulps(s, want));
            }
            x += 0.000_517;
        }
        assert!(
            worst_tanh >= 1 && worst_sigmoid >= 1,
            "the sweep should meet rounding"
        );
        assert_eq!(tanh_f32(0.0), 0.0);
        assert!(tanh_f32(-0.0).is_sign_negative());
        assert_eq!(tanh_f32(9.1), 1.0);
        assert_eq!(tanh_f32(-50.0), -1.0);
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!(sigmoid_f32(-200.0), 0.0);
        assert_eq!(sigmoid_f32(200.0), 1.0);
        assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
        assert!(sigmoid_f32(f32::NAN).is_nan());
    }

    #[test]
    fn exp_f32_handles_the_edges() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(-200.0), 0.0);
        assert!(exp_f32(f32::NAN).is_nan());
        // Subnormal results: exp(-100) = 3.72e-44.
        let sub = exp_f32(-100.0);
        assert!(sub > 0.0 && ulps(sub, (-100.0f64).exp() as f32) <= 1);
    }
}
