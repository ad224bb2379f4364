//! Scalar definitions of the elementwise math functions and activations
//! ([`MathOp`]) and of the elementwise binary functions ([`MathBinaryOp`]), for f32 and
//! f64. Nothing here knows about tensors or autograd: `ops/unary.rs` and
//! `ops/binary.rs` map these over tensors and hold their backward rules.
//!
//! Formulas follow PyTorch's CPU kernels (`aten/src/ATen/native/cpu`), so that edge
//! cases agree: `round` is half-to-even, `logsigmoid` and `softplus` are written to not
//! overflow, `remainder` takes the divisor's sign, `fmax`/`fmin` ignore a NaN operand.

/// Float element types with the functions the math ops need (f32 and f64).
pub trait MathFloat:
    crate::dtype::Float + std::ops::Div<Output = Self> + std::ops::Neg<Output = Self>
{
    /// `v` rounded to this type.
    fn c(v: f64) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Arcsine.
    fn asin(self) -> Self;
    /// Arccosine.
    fn acos(self) -> Self;
    /// Arctangent.
    fn atan(self) -> Self;
    /// Hyperbolic sine.
    fn sinh(self) -> Self;
    /// Hyperbolic cosine.
    fn cosh(self) -> Self;
    /// `2^x`.
    fn exp2(self) -> Self;
    /// `e^x - 1`, accurate near 0.
    fn expm1(self) -> Self;
    /// `ln(1 + x)`, accurate near 0.
    fn log1p(self) -> Self;
    /// Base-2 logarithm.
    fn log2(self) -> Self;
    /// Base-10 logarithm.
    fn log10(self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// Largest integer not above.
    fn floor(self) -> Self;
    /// Smallest integer not below.
    fn ceil(self) -> Self;
    /// Nearest integer, ties to even (C's `nearbyint`).
    fn round_even(self) -> Self;
    /// Integer part, toward zero.
    fn trunc(self) -> Self;
    /// `atan2(self, other)`.
    fn atan2(self, other: Self) -> Self;
    /// Magnitude of `self`, sign of `other`.
    fn copysign(self, other: Self) -> Self;
    /// C's `fmod`: the remainder with the dividend's sign.
    fn fmod(self, other: Self) -> Self;
    /// Whether this is NaN.
    fn is_nan(self) -> bool;
    /// Whether this is +-infinity.
    fn is_inf(self) -> bool;
    /// The largest finite value.
    const MAX: Self;
    /// The smallest (most negative) finite value.
    const LOWEST: Self;
}

macro_rules! impl_math_float {
    ($t:ident, $erf:path) => {
        impl MathFloat for $t {
            #[inline(always)]
            fn c(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn sin(self) -> Self {
                $t::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                $t::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                $t::tan(self)
            }
            #[inline(always)]
            fn asin(self) -> Self {
                $t::asin(self)
            }
            #[inline(always)]
            fn acos(self) -> Self {
                $t::acos(self)
            }
            #[inline(always)]
            fn atan(self) -> Self {
                $t::atan(self)
            }
            #[inline(always)]
            fn sinh(self) -> Self {
                $t::sinh(self)
            }
            #[inline(always)]
            fn cosh(self) -> Self {
                $t::cosh(self)
            }
            #[inline(always)]
            fn exp2(self) -> Self {
                $t::exp2(self)
            }
            #[inline(always)]
            fn expm1(self) -> Self {
                $t::exp_m1(self)
            }
            #[inline(always)]
            fn log1p(self) -> Self {
                $t::ln_1p(self)
            }
            #[inline(always)]
            fn log2(self) -> Self {
                $t::log2(self)
            }
            #[inline(always)]
            fn log10(self) -> Self {
                $t::log10(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $t::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                $t::ceil(self)
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                $t::round_ties_even(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                $t::trunc(self)
            }
            #[inline(always)]
            fn atan2(self, other: Self) -> Self {
                $t::atan2(self, other)
            }
            #[inline(always)]
            fn copysign(self, other: Self) -> Self {
                $t::copysign(self, other)
            }
            #[inline(always)]
            fn fmod(self, other: Self) -> Self {
                // Rust's `%` on floats is C's fmod.
                self % other
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            #[inline(always)]
            fn is_inf(self) -> bool {
                $t::is_infinite(self)
            }
            const MAX: Self = $t::MAX;
            const LOWEST: Self = $t::MIN;
        }
    };
}
impl_math_float!(f32, libm::erff);
impl_math_float!(f64, libm::erf);

/// SELU's `alpha` and `scale` (Klambauer et al.), as PyTorch spells them.
pub const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
/// SELU's `scale`.
pub const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// Elementwise functions of one float tensor, with their parameters. Each has PyTorch's
/// forward kernel here; its backward is in `ops/unary.rs`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum MathOp {
    /// `1 / sqrt(x)`
    Rsqrt,
    /// `2^x`
    Exp2,
    /// `e^x - 1`
    Expm1,
    /// `ln(1 + x)`
    Log1p,
    /// `log2 x`
    Log2,
    /// `log10 x`
    Log10,
    /// `sin x`
    Sin,
    /// `cos x`
    Cos,
    /// `tan x`
    Tan,
    /// `asin x`
    Asin,
    /// `acos x`
    Acos,
    /// `atan x`
    Atan,
    /// `sinh x`
    Sinh,
    /// `cosh x`
    Cosh,
    /// `1 / x`
    Reciprocal,
    /// The error function.
    Erf,
    /// The inverse error function.
    Erfinv,
    /// Round down.
    Floor,
    /// Round up.
    Ceil,
    /// Round half to even, to `decimals` decimal places (0: to an integer).
    Round {
        /// Decimal places (negative: to tens, hundreds, ...).
        decimals: i64,
    },
    /// Round toward zero.
    Trunc,
    /// `x - trunc(x)`
    Frac,
    /// `log(sigmoid(x))`
    LogSigmoid,
    /// `x * sigmoid(x)`
    Silu,
    /// `x * tanh(softplus(x))`
    Mish,
    /// `scale * x` above 0, else `alpha * scale * (exp(x * input_scale) - 1)`, with
    /// `scale` and `input_scale` given by `kind` (see [`EluKind::params`]).
    Elu {
        /// Negative-side coefficient.
        alpha: f64,
        /// elu, selu or celu.
        kind: EluKind,
    },
    /// `x * cdf(x)` of the standard normal (`approximate='none'`), or its tanh form.
    Gelu {
        /// `approximate='tanh'`.
        tanh: bool,
    },
    /// `log(1 + exp(beta * x)) / beta`, linear above `threshold`.
    Softplus {
        /// Sharpness.
        beta: f64,
        /// `beta * x` above this is taken as linear.
        threshold: f64,
    },
    /// `x` above 0, else `negative_slope * x`.
    LeakyRelu {
        /// Slope for negative inputs.
        negative_slope: f64,
    },
    /// Clamp into `[min_val, max_val]` (relu6 is `[0, 6]`).
    Hardtanh {
        /// Lower bound.
        min_val: f64,
        /// Upper bound.
        max_val: f64,
    },
    /// `clamp(x + 3, 0, 6) / 6`
    Hardsigmoid,
    /// `x * clamp(x + 3, 0, 6) / 6`
    Hardswish,
}

impl MathOp {
    /// The name of PyTorch's CPU kernel, as its dtype errors print it.
    pub fn kernel_name(self) -> &'static str {
        match self {
            MathOp::Rsqrt => "rsqrt_cpu",
            MathOp::Exp2 => "exp2_cpu",
            MathOp::Expm1 => "expm1_vml_cpu",
            MathOp::Log1p => "log1p_vml_cpu",
            MathOp::Log2 => "log2_vml_cpu",
            MathOp::Log10 => "log10_vml_cpu",
            MathOp::Sin => "sin_vml_cpu",
            MathOp::Cos => "cos_vml_cpu",
            MathOp::Tan => "tan_vml_cpu",
            MathOp::Asin => "asin_vml_cpu",
            MathOp::Acos => "acos_vml_cpu",
            MathOp::Atan => "atan_vml_cpu",
            MathOp::Sinh => "sinh_cpu",
            MathOp::Cosh => "cosh_cpu",
            MathOp::Reciprocal => "reciprocal_cpu",
            MathOp::Erf => "erf_vml_cpu",
            MathOp::Erfinv => "erfinv_cpu",
            MathOp::Floor => "floor_vml_cpu",
            MathOp::Ceil => "ceil_vml_cpu",
            MathOp::Round { decimals: 0 } => "round_vml_cpu",
            MathOp::Round { .. } => "round_cpu",
            MathOp::Trunc => "trunc_vml_cpu",
            MathOp::Frac => "frac_cpu",
            MathOp::LogSigmoid => "log_sigmoid_cpu",
            MathOp::Silu => "silu_cpu",
            MathOp::Mish => "mish_cpu",
            MathOp::Elu { .. } => "elu_cpu",
            MathOp::Gelu { .. } => "GeluKernelImpl",
            MathOp::Softplus { .. } => "softplus_cpu",
            MathOp::LeakyRelu { .. } => "leaky_relu_cpu",
            MathOp::Hardtanh { .. } => "hardtanh_cpu",
            MathOp::Hardsigmoid => "hardsigmoid_cpu",
            MathOp::Hardswish => "hardswish_cpu",
        }
    }

    /// What PyTorch does with an int64 input: compute in the default float dtype (the
    /// "floating" unary functions), keep the value (rounding functions, hardtanh), or
    /// refuse (frac and the activations).
    pub fn on_integers(self) -> OnIntegers {
        match self {
            MathOp::Floor | MathOp::Ceil | MathOp::Round { decimals: 0 } | MathOp::Trunc => {
                OnIntegers::Identity
            }
            MathOp::Hardtanh { .. } => OnIntegers::Clamp,
            MathOp::Round { .. }
            | MathOp::Frac
            | MathOp::LogSigmoid
            | MathOp::Silu
            | MathOp::Mish
            | MathOp::Elu { .. }
            | MathOp::Gelu { .. }
            | MathOp::Softplus { .. }
            | MathOp::LeakyRelu { .. }
            | MathOp::Hardsigmoid
            | MathOp::Hardswish => OnIntegers::Refuse,
            _ => OnIntegers::Promote,
        }
    }

    /// The function at `x`.
    #[inline]
    pub fn apply<T: MathFloat>(self, x: T) -> T {
        let zero = T::ZERO;
        let one = T::ONE;
        match self {
            MathOp::Rsqrt => one / x.sqrt(),
            MathOp::Exp2 => x.exp2(),
            MathOp::Expm1 => x.expm1(),
            MathOp::Log1p => x.log1p(),
            MathOp::Log2 => x.log2(),
            MathOp::Log10 => x.log10(),
            MathOp::Sin => x.sin(),
            MathOp::Cos => x.cos(),
            MathOp::Tan => x.tan(),
            MathOp::Asin => x.asin(),
            MathOp::Acos => x.acos(),
            MathOp::Atan => x.atan(),
            MathOp::Sinh => x.sinh(),
            MathOp::Cosh => x.cosh(),
            MathOp::Reciprocal => one / x,
            MathOp::Erf => x.erf(),
            MathOp::Erfinv => erfinv(x),
            MathOp::Floor => x.floor(),
            MathOp::Ceil => x.ceil(),
            MathOp::Round { decimals } => round_decimals(x, decimals),
            MathOp::Trunc => x.trunc(),
            MathOp::Frac => x - x.trunc(),
            MathOp::LogSigmoid => {
                // min(x, 0) - log1p(exp(-|x|)): no overflow for large |x|.
                let min = if x < zero { x } else { zero };
                min - (-x.abs()).exp().log1p()
            }
            MathOp::Silu => x / (one + (-x).exp()),
            MathOp::Mish => x * softplus(x, one, T::c(20.0)).tanh(),
            MathOp::Elu { alpha, kind } => {
                let (alpha, scale, input_scale) = kind.params(alpha);
                if x > zero {
                    x * T::c(scale)
                } else {
                    (x * T::c(input_scale)).expm1() * T::c(alpha * scale)
                }
            }
            MathOp::Gelu { tanh: false } => {
                x * T::c(0.5) * (one + (x * T::c(std::f64::consts::FRAC_1_SQRT_2)).erf())
            }
            MathOp::Gelu { tanh: true } => {
                let beta = T::c(std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5);
                let inner = beta * (x + T::c(0.044715) * x * x * x);
                T::c(0.5) * x * (one + inner.tanh())
            }
            MathOp::Softplus { beta, threshold } => softplus(x, T::c(beta), T::c(threshold)),
            MathOp::LeakyRelu { negative_slope } => {
                if x > zero {
                    x
                } else {
                    x * T::c(negative_slope)
                }
            }
            MathOp::Hardtanh { min_val, max_val } => clamp_nan(x, T::c(min_val), T::c(max_val)),
            MathOp::Hardsigmoid => clamp_nan(x + T::c(3.0), zero, T::c(6.0)) / T::c(6.0),
            MathOp::Hardswish => x * clamp_nan(x + T::c(3.0), zero, T::c(6.0)) / T::c(6.0),
        }
    }
}

/// The three members of the ELU family, which share a kernel (so a rule keeps one
/// parameter, not three).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum EluKind {
    /// `elu(alpha)`: scale 1, input scale 1.
    Elu,
    /// `selu`: PyTorch's fixed alpha and scale, input scale 1.
    Selu,
    /// `celu(alpha)`: scale 1, input scale `1 / alpha`.
    Celu,
}

impl EluKind {
    /// `(alpha, scale, input_scale)` of the kernel for this kind and `alpha`.
    pub fn params(self, alpha: f64) -> (f64, f64, f64) {
        match self {
            EluKind::Elu => (alpha, 1.0, 1.0),
            EluKind::Selu => (SELU_ALPHA, SELU_SCALE, 1.0),
            EluKind::Celu => (alpha, 1.0, 1.0 / alpha),
        }
    }
}

/// How a [`MathOp`] treats integer inputs.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum OnIntegers {
    /// Computed in the default float dtype.
    Promote,
    /// The value is returned unchanged (a copy).
    Identity,
    /// Clamped in int64 (hardtanh).
    Clamp,
    /// A dtype error.
    Refuse,
}

/// `min(max(x, lo), hi)`, NaN staying NaN (PyTorch's clamp).
#[inline]
fn clamp_nan<T: MathFloat>(x: T, lo: T, hi: T) -> T {
    if x.is_nan() {
        return x;
    }
    let x = if x < lo { lo } else { x };
    if x > hi {
        hi
    } else {
        x
    }
}

/// PyTorch's softplus: `x` where `x * beta > threshold`, else `log1p(exp(x * beta)) / beta`.
#[inline]
fn softplus<T: MathFloat>(x: T, beta: T, threshold: T) -> T {
    if x * beta > threshold {
        x
    } else {
        (x * beta).exp().log1p() / beta
    }
}

/// PyTorch's `round(decimals=d)`: `nearbyint(x * 10^d) / 10^d` for `d > 0`, else
/// `nearbyint(x / 10^-d) * 10^-d`, in the element type.
#[inline]
fn round_decimals<T: MathFloat>(x: T, decimals: i64) -> T {
    if decimals == 0 {
        return x.round_even();
    }
    let exponent = decimals.unsigned_abs().min(i32::MAX as u64) as i32;
    let ten_pow = T::c(10f64.powi(exponent));
    if decimals > 0 {
        (x * ten_pow).round_even() / ten_pow
    } else {
        (x / ten_pow).round_even() * ten_pow
    }
}

/// PyTorch's `calc_erfinv`: a rational approximation (central range and tails), then
/// two Newton steps on `erf(x) = y`.
pub fn erfinv<T: MathFloat>(y: T) -> T {
    const A: [f64; 4] = [0.886226899, -1.645349621, 0.914624893, -0.140543331];
    const B: [f64; 4] = [-2.118377725, 1.442710462, -0.329097515, 0.012229801];
    const C: [f64; 4] = [-1.970840454, -1.624906493, 3.429567803, 1.641345311];
    const D: [f64; 2] = [3.543889200, 1.637067800];
    let c = T::c;
    let one = T::ONE;
    let y_abs = y.abs();
    if y_abs > one || y.is_nan() {
        return c(f64::NAN);
    }
    if y_abs == one {
        return c(f64::INFINITY).copysign(y);
    }
    let mut x = if y_abs <= c(0.7) {
        let z = y * y;
        let num = ((c(A[3]) * z + c(A[2])) * z + c(A[1])) * z + c(A[0]);
        let dem = (((c(B[3]) * z + c(B[2])) * z + c(B[1])) * z + c(B[0])) * z + one;
        y * num / dem
    } else {
        let z = (-((one - y_abs) / c(2.0)).ln()).sqrt();
        let num = ((c(C[3]) * z + c(C[2])) * z + c(C[1])) * z + c(C[0]);
        let dem = (c(D[1]) * z + c(D[0])) * z + one;
        num.copysign(y) / dem
    };
    let two_over_sqrt_pi = c(std::f64::consts::FRAC_2_SQRT_PI);
    for _ in 0..2 {
        x = x - (x.erf() - y) / (two_over_sqrt_pi * (-x * x).exp());
    }
    x
}

/// Elementwise functions of two broadcast float or integer tensors.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum MathBinaryOp {
    /// `atan2(a, b)`
    Atan2,
    /// The larger; NaN if either is NaN.
    Maximum,
    /// The smaller; NaN if either is NaN.
    Minimum,
    /// The larger, ignoring a NaN operand.
    Fmax,
    /// The smaller, ignoring a NaN operand.
    Fmin,
    /// C's `fmod`: `a - trunc(a / b) * b` (the dividend's sign).
    Fmod,
    /// Python's `%`: `a - floor(a / b) * b` (the divisor's sign).
    Remainder,
    /// `|a|` with the sign of `b`.
    Copysign,
    /// `sqrt(a^2 + b^2)` without overflow (floats only).
    Hypot,
    /// `log(exp(a) + exp(b))` without overflow (floats only).
    Logaddexp,
    /// `log2(2^a + 2^b)` without overflow (floats only).
    Logaddexp2,
    /// `a / b` rounded toward zero (`div(rounding_mode='trunc')`).
    DivTrunc,
    /// `a / b` rounded down (`div(rounding_mode='floor')`, `floor_divide`, `//`).
    DivFloor,
    /// `a * log(b)`, 0 where `a == 0` (also for `b == 0`), NaN where `b` is NaN.
    Xlogy,
    /// `a * log1p(b)`, 0 where `a == 0`, NaN where `b` is NaN (`special.xlog1py`).
    Xlog1py,
}

impl MathBinaryOp {
    /// The function at `(a, b)` for floats.
    #[inline]
    pub fn apply<T: MathFloat>(self, a: T, b: T) -> T {
        let nan = T::c(f64::NAN);
        match self {
            MathBinaryOp::Atan2 => a.atan2(b),
            MathBinaryOp::Maximum => {
                if a.is_nan() || b.is_nan() {
                    nan
                } else if a > b {
                    a
                } else {
                    b
                }
            }
            MathBinaryOp::Minimum => {
                if a.is_nan() || b.is_nan() {
                    nan
                } else if a < b {
                    a
                } else {
                    b
                }
            }
            MathBinaryOp::Fmax => {
                if a.is_nan() || (!b.is_nan() && b > a) {
                    b
                } else {
                    a
                }
            }
            MathBinaryOp::Fmin => {
                if a.is_nan() || (!b.is_nan() && b < a) {
                    b
                } else {
                    a
                }
            }
            MathBinaryOp::Fmod => a.fmod(b),
            MathBinaryOp::Remainder => {
                // PyTorch: mod = fmod(a, b); add b when mod and b differ in sign.
                let m = a.fmod(b);
                if m != T::ZERO && ((b < T::ZERO) != (m < T::ZERO)) {
                    m + b
                } else {
                    m
                }
            }
            MathBinaryOp::Copysign => a.copysign(b),
            MathBinaryOp::DivTrunc => (a / b).trunc(),
            MathBinaryOp::DivFloor => {
                // PyTorch's div_floor_floating: from fmod, so that the quotient of exact
                // multiples is exact; a zero divisor gives a / b.
                if b == T::ZERO {
                    return a / b;
                }
                let m = a.fmod(b);
                let mut div = (a - m) / b;
                if m != T::ZERO && ((b < T::ZERO) != (m < T::ZERO)) {
                    div = div - T::ONE;
                }
                if div == T::ZERO {
                    return T::ZERO.copysign(a / b);
                }
                let floored = div.floor();
                if div - floored > T::c(0.5) {
                    floored + T::ONE
                } else {
                    floored
                }
            }
            // Computed in f64 (PyTorch's float32 kernels may differ in the last bit).
            MathBinaryOp::Hypot => T::c(a.to_f64().hypot(b.to_f64())),
            // PyTorch's kernels: NaN in `b` wins, then `0 * log(anything) = 0`.
            MathBinaryOp::Xlogy | MathBinaryOp::Xlog1py => {
                if b.is_nan() {
                    nan
                } else if a == T::ZERO {
                    T::ZERO
                } else if self == MathBinaryOp::Xlogy {
                    a * b.ln()
                } else {
                    a * b.log1p()
                }
            }
            MathBinaryOp::Logaddexp | MathBinaryOp::Logaddexp2 => {
                let (x, y) = (a.to_f64(), b.to_f64());
                // PyTorch: equal infinities give themselves (not inf - inf = NaN).
                if x.is_infinite() && x == y {
                    return a;
                }
                let (m, d) = (x.max(y), -(x - y).abs());
                if x.is_nan() || y.is_nan() {
                    return nan;
                }
                T::c(if self == MathBinaryOp::Logaddexp {
                    m + d.exp().ln_1p()
                } else {
                    m + d.exp2().ln_1p() / std::f64::consts::LN_2
                })
            }
        }
    }

    /// The function at `(a, b)` for int64, or `None` for a zero divisor of `fmod` /
    /// `remainder` (PyTorch's "ZeroDivisionError").
    #[inline]
    pub fn apply_i64(self, a: i64, b: i64) -> Option<i64> {
        Some(match self {
            MathBinaryOp::Maximum | MathBinaryOp::Fmax => a.max(b),
            MathBinaryOp::Minimum | MathBinaryOp::Fmin => a.min(b),
            MathBinaryOp::Fmod => a.checked_rem(b).or(if b == 0 { None } else { Some(0) })?,
            MathBinaryOp::Remainder => {
                if b == 0 {
                    return None;
                }
                let m = a.wrapping_rem(b);
                if m != 0 && ((b < 0) != (m < 0)) {
                    m + b
                } else {
                    m
                }
            }
            // Float-only ops never reach here: the caller promotes their operands.
            MathBinaryOp::DivTrunc => {
                if b == 0 {
                    return None;
                }
                a.wrapping_div(b)
            }
            MathBinaryOp::DivFloor => {
                if b == 0 {
                    return None;
                }
                let q = a.wrapping_div(b);
                if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
                    q - 1
                } else {
                    q
                }
            }
            MathBinaryOp::Atan2
            | MathBinaryOp::Copysign
            | MathBinaryOp::Hypot
            | MathBinaryOp::Logaddexp
            | MathBinaryOp::Logaddexp2
            | MathBinaryOp::Xlogy
            | MathBinaryOp::Xlog1py => a,
        })
    }

    /// Whether integer operands are computed in the default float dtype.
    pub fn promotes_integers(self) -> bool {
        matches!(
            self,
            MathBinaryOp::Atan2
                | MathBinaryOp::Copysign
                | MathBinaryOp::Xlogy
                | MathBinaryOp::Xlog1py
        )
    }

    /// Whether only floating dtypes have a kernel (PyTorch's "not implemented for
    /// 'Long'").
    pub fn floats_only(self) -> bool {
        matches!(
            self,
            MathBinaryOp::Hypot | MathBinaryOp::Logaddexp | MathBinaryOp::Logaddexp2
        )
    }

    /// PyTorch's name of the op, for dtype errors.
    pub fn name(self) -> &'static str {
        match self {
            MathBinaryOp::Atan2 => "atan2_cpu",
            MathBinaryOp::Maximum => "maximum_cpu",
            MathBinaryOp::Minimum => "minimum_cpu",
            MathBinaryOp::Fmax => "fmax_cpu",
            MathBinaryOp::Fmin => "fmin_cpu",
            MathBinaryOp::Fmod => "fmod_cpu",
            MathBinaryOp::Remainder => "remainder_cpu",
            MathBinaryOp::Copysign => "copysign_cpu",
            MathBinaryOp::Hypot => "hypot_cpu",
            MathBinaryOp::Logaddexp => "logaddexp_cpu",
            MathBinaryOp::Logaddexp2 => "logaddexp2_cpu",
            MathBinaryOp::DivTrunc => "div_trunc_cpu",
            MathBinaryOp::DivFloor => "div_floor_cpu",
            MathBinaryOp::Xlogy => "xlogy_cpu",
            MathBinaryOp::Xlog1py => "special_xlog1py_cpu",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfinv_inverts_erf() {
        for &y in &[-0.999, -0.7, -0.3, 0.0, 0.2, 0.69, 0.71, 0.95, 0.999_999] {
            let x: f64 = erfinv(y);
            assert!((libm::erf(x) - y).abs() < 1e-15, "erfinv({y}) = {x}");
        }
        assert_eq!(erfinv(1.0f64), f64::INFINITY);
        assert_eq!(erfinv(-1.0f32), f32::NEG_INFINITY);
        assert!(erfinv(1.5f64).is_nan());
    }

    #[test]
    fn round_is_half_to_even_and_remainder_takes_the_divisor_sign() {
        assert_eq!(MathOp::Round { decimals: 0 }.apply(2.5f64), 2.0);
        assert_eq!(MathOp::Round { decimals: 0 }.apply(-0.5f64), -0.0);
        assert_eq!(MathOp::Round { decimals: 1 }.apply(0.25f64), 0.2);
        assert_eq!(MathOp::Round { decimals: -1 }.apply(15.0f64), 20.0);
        assert_eq!(MathBinaryOp::Remainder.apply(-7.0f64, 3.0), 2.0);
        assert_eq!(MathBinaryOp::Fmod.apply(-7.0f64, 3.0), -1.0);
        assert_eq!(MathBinaryOp::Remainder.apply_i64(-7, 3), Some(2));
        assert_eq!(MathBinaryOp::Remainder.apply_i64(7, -3), Some(-2));
        assert_eq!(MathBinaryOp::Fmod.apply_i64(-7, 3), Some(-1));
        assert_eq!(MathBinaryOp::Fmod.apply_i64(i64::MIN, -1), Some(0));
        assert_eq!(MathBinaryOp::Fmod.apply_i64(1, 0), None);
    }

    #[test]
    fn log_sigmoid_and_softplus_do_not_overflow() {
        assert_eq!(MathOp::LogSigmoid.apply(-1000.0f64), -1000.0);
        assert_eq!(MathOp::LogSigmoid.apply(1000.0f64), 0.0);
        let sp = MathOp::Softplus {
            beta: 1.0,
            threshold: 20.0,
        };
        assert_eq!(sp.apply(1000.0f32), 1000.0);
    }
}
