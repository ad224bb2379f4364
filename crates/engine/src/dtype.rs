//! Element types: the four dtypes and the `Element` traits kernels are generic over.

use crate::error::{Error, Result};
use crate::storage::Buffer;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the default floating-point dtype is float64 (else float32). Process-global,
/// as PyTorch's `set_default_dtype`; see Note [Devices and default dtype].
static DEFAULT_FLOAT_IS_F64: AtomicBool = AtomicBool::new(false);

/// The element type of a tensor.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float, the initial default for floating-point data (`torch.float32`).
    F32,
    /// 64-bit float (`torch.float64`).
    F64,
    /// 64-bit signed integer, the default for integer data (`torch.int64`).
    I64,
    /// Boolean (`torch.bool`).
    Bool,
}

impl DType {
    /// The default floating-point dtype (`torch.get_default_dtype()`): what factories
    /// without a dtype, Python floats, and integers promoted to float (`int / int`,
    /// `int * 2.5`, `int.sqrt()`) become. float32 until [`DType::set_default_float`].
    #[inline]
    pub fn default_float() -> DType {
        if DEFAULT_FLOAT_IS_F64.load(Ordering::Relaxed) {
            DType::F64
        } else {
            DType::F32
        }
    }

    /// Sets the default floating-point dtype for the whole process
    /// (`torch.set_default_dtype`). Only float32 and float64 are accepted, with
    /// PyTorch's TypeError message otherwise.
    pub fn set_default_float(dtype: DType) -> Result<()> {
        if !dtype.is_floating_point() {
            return Err(Error::Type(
                "only floating-point types are supported as the default type".into(),
            ));
        }
        DEFAULT_FLOAT_IS_F64.store(dtype == DType::F64, Ordering::Relaxed);
        Ok(())
    }

    /// Whether values of this dtype are floating point (and may require grad).
    pub fn is_floating_point(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
        }
    }

    /// PyTorch's name of the dtype, e.g. `torch.float32`.
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::F32 => "torch.float32",
            DType::F64 => "torch.float64",
            DType::I64 => "torch.int64",
            DType::Bool => "torch.bool",
        }
    }

    /// PyTorch's legacy tensor-type name, used in autograd error messages (`torch.FloatTensor`).
    pub fn legacy_type_name(self) -> &'static str {
        match self {
            DType::F32 => "torch.FloatTensor",
            DType::F64 => "torch.DoubleTensor",
            DType::I64 => "torch.LongTensor",
            DType::Bool => "torch.BoolTensor",
        }
    }

    /// PyTorch's scalar-type name used in dtype error messages (`Float`, `Double`, `Long`, `Bool`).
    pub fn scalar_type_name(self) -> &'static str {
        match self {
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::I64 => "Long",
            DType::Bool => "Bool",
        }
    }

    /// Rank in PyTorch's promotion lattice for the dtypes we support: bool < int64 < float32 < float64.
    fn rank(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::I64 => 1,
            DType::F32 => 2,
            DType::F64 => 3,
        }
    }

    /// Kind of value: 0 bool, 1 integer, 2 floating point.
    pub fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::I64 => 1,
            DType::F32 | DType::F64 => 2,
        }
    }

    /// The result dtype of an op between operands of dtypes `a` and `b`, where `a_0d` /
    /// `b_0d` say whether an operand is a 0-d tensor: PyTorch's `result_type`, in which a
    /// 0-d operand only decides the dtype when it is of a higher category (so
    /// `float32_vector + float64_scalar_tensor` stays float32).
    pub fn result_type(a: DType, a_0d: bool, b: DType, b_0d: bool) -> DType {
        match (a_0d, b_0d) {
            (true, false) if a.category() <= b.category() => b,
            (false, true) if b.category() <= a.category() => a,
            _ => DType::promote(a, b),
        }
    }

    /// The result dtype of a binary op between two tensors (PyTorch's `promote_types`).
    pub fn promote(a: DType, b: DType) -> DType {
        if a.rank() >= b.rank() {
            a
        } else {
            b
        }
    }

    /// Whether a value of dtype `from` may be written into a tensor of dtype `self`
    /// by an in-place op (PyTorch's `canCast`: no float into integer, nothing but bool into bool).
    pub fn can_cast_from(self, from: DType) -> bool {
        match self {
            DType::F32 | DType::F64 => true,
            DType::I64 => !from.is_floating_point(),
            DType::Bool => from == DType::Bool,
        }
    }
}

/// A value type that a tensor can hold.
pub trait Element: Copy + Send + Sync + PartialOrd + Default + std::fmt::Debug + 'static {
    /// The dtype tag of this element type.
    const DTYPE: DType;
    /// Widens to f64 (bool → 0/1).
    fn to_f64(self) -> f64;
    /// Narrows from f64 with Rust `as` semantics (bool: nonzero → true).
    fn from_f64(v: f64) -> Self;
    /// Converts to i64 (floats truncate toward zero).
    fn to_i64(self) -> i64;
    /// Converts from i64.
    fn from_i64(v: i64) -> Self;
    /// Converts to bool (nonzero → true).
    fn to_bool(self) -> bool;
    /// Converts from bool.
    fn from_bool(v: bool) -> Self;
    /// Wraps a vector of this type as a storage buffer.
    fn into_buffer(v: Vec<Self>) -> Buffer;
    /// Borrows the buffer's elements when it holds this type.
    fn slice(buffer: &Buffer) -> Option<&[Self]>;
    /// Mutably borrows the buffer's elements when it holds this type.
    fn slice_mut(buffer: &mut Buffer) -> Option<&mut [Self]>;
}

/// Element types with arithmetic (int64, float32, float64).
pub trait Num:
    Element
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::AddAssign
{
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// Division; integer division by zero yields 0 instead of trapping (never reached by
    /// `/`, which promotes integers to float first).
    fn div(self, other: Self) -> Self;
    /// Negation (wrapping for integers).
    fn neg(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Sign: -1, 0 or 1.
    fn sign(self) -> Self;
    /// `self ** other`.
    fn pow(self, other: Self) -> Self;
}

/// Floating-point element types.
pub trait Float: Num {
    /// Widening conversion used for accumulation.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Logistic sigmoid.
    fn sigmoid(self) -> Self;
}

macro_rules! impl_element {
    ($t:ty, $dtype:ident, $variant:ident, |$v:ident| to_f64: $to_f64:expr, from_f64: $from_f64:expr, to_i64: $to_i64:expr, from_i64: $from_i64:expr, to_bool: $to_bool:expr, from_bool: $from_bool:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                let $v = self;
                $to_f64
            }
            #[inline(always)]
            fn from_f64($v: f64) -> Self {
                $from_f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                let $v = self;
                $to_i64
            }
            #[inline(always)]
            fn from_i64($v: i64) -> Self {
                $from_i64
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                let $v = self;
                $to_bool
            }
            #[inline(always)]
            fn from_bool($v: bool) -> Self {
                $from_bool
            }
            fn into_buffer(v: Vec<Self>) -> Buffer {
                Buffer::$variant(v)
            }
            fn slice(buffer: &Buffer) -> Option<&[Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    Buffer::External(e) => e.slice::<Self>(),
                    _ => None,
                }
            }
            fn slice_mut(buffer: &mut Buffer) -> Option<&mut [Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    Buffer::External(e) => e.slice_mut::<Self>(),
                    _ => None,
                }
            }
        }
    };
}

/// A float truncated toward zero to int64 as PyTorch's CPU casts do on x86 (the
/// `cvttsd2si` instruction): NaN and values outside the int64 range give `i64::MIN`,
/// where Rust's `as` would saturate (`tensor([nan, 1e30]).long()` is
/// `[-9223372036854775808, -9223372036854775808]` in PyTorch).
#[inline(always)]
fn float_to_i64(v: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if (-LIMIT..LIMIT).contains(&v) {
        v as i64
    } else {
        i64::MIN
    }
}

impl_element!(f32, F32, F32, |v| to_f64: v as f64, from_f64: v as f32, to_i64: float_to_i64(v as f64), from_i64: v as f32, to_bool: v != 0.0, from_bool: if v { 1.0 } else { 0.0 });
impl_element!(f64, F64, F64, |v| to_f64: v, from_f64: v, to_i64: float_to_i64(v), from_i64: v as f64, to_bool: v != 0.0, from_bool: if v { 1.0 } else { 0.0 });
impl_element!(i64, I64, I64, |v| to_f64: v as f64, from_f64: float_to_i64(v), to_i64: v, from_i64: v, to_bool: v != 0, from_bool: v as i64);
impl_element!(bool, Bool, Bool, |v| to_f64: if v { 1.0 } else { 0.0 }, from_f64: v != 0.0, to_i64: v as i64, from_i64: v != 0, to_bool: v, from_bool: v);

macro_rules! impl_float {
    ($t:ty) => {
        impl Num for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn div(self, other: Self) -> Self {
                self / other
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sign(self) -> Self {
                // PyTorch's `(0 < x) - (x < 0)`: NaN and -0.0 give +0.0.
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            #[inline(always)]
            fn pow(self, other: Self) -> Self {
                <$t>::powf(self, other)
            }
        }
        impl Float for $t {
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                1.0 / (1.0 + <$t>::exp(-self))
            }
        }
    };
}
impl_float!(f32);
impl_float!(f64);

impl Num for i64 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    #[inline(always)]
    fn div(self, other: Self) -> Self {
        self.checked_div(other).unwrap_or(0)
    }
    #[inline(always)]
    fn neg(self) -> Self {
        self.wrapping_neg()
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.wrapping_abs()
    }
    #[inline(always)]
    fn sign(self) -> Self {
        self.signum()
    }
    #[inline(always)]
    fn pow(self, other: Self) -> Self {
        // PyTorch's `powi`: exact with wrapping for any exponent up to 2^63 - 1, and
        // integer-division semantics for negative exponents (1 / x truncated).
        if other < 0 {
            return match self {
                1 => 1,
                -1 if other % 2 != 0 => -1,
                -1 => 1,
                _ => 0,
            };
        }
        let (mut base, mut e, mut acc) = (self, other as u64, 1i64);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.wrapping_mul(base);
            }
            base = base.wrapping_mul(base);
            e >>= 1;
        }
        acc
    }
}
