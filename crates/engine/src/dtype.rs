//! Element types: the ten dtypes and the `Element` traits kernels are generic over.

use crate::error::{Error, Result};
use crate::storage::Buffer;
pub use half::{bf16, f16};
use std::sync::atomic::{AtomicU8, Ordering};

/// The default floating-point dtype as its [`DType::code`] (float32 at start).
/// Process-global, as PyTorch's `set_default_dtype`; see Note [Devices and default dtype].
static DEFAULT_FLOAT: AtomicU8 = AtomicU8::new(0);

/// The element type of a tensor.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float, the initial default for floating-point data (`torch.float32`).
    F32,
    /// 64-bit float (`torch.float64`).
    F64,
    /// 16-bit IEEE half-precision float (`torch.float16`), computed in float32
    /// (Note [Storage dtypes]).
    F16,
    /// 16-bit brain float (`torch.bfloat16`), computed in float32.
    BF16,
    /// 64-bit signed integer, the default for integer data (`torch.int64`).
    I64,
    /// 32-bit signed integer (`torch.int32`).
    I32,
    /// 16-bit signed integer (`torch.int16`).
    I16,
    /// 8-bit signed integer (`torch.int8`).
    I8,
    /// 8-bit unsigned integer (`torch.uint8`).
    U8,
    /// Boolean (`torch.bool`).
    Bool,
}

impl DType {
    /// Every dtype, in a fixed order (that of [`DType::code`]).
    pub const ALL: [DType; 10] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::Bool,
    ];

    /// The position of this dtype in [`DType::ALL`].
    pub fn code(self) -> u8 {
        match self {
            DType::F32 => 0,
            DType::F64 => 1,
            DType::F16 => 2,
            DType::BF16 => 3,
            DType::I64 => 4,
            DType::I32 => 5,
            DType::I16 => 6,
            DType::I8 => 7,
            DType::U8 => 8,
            DType::Bool => 9,
        }
    }

    /// The default floating-point dtype (`torch.get_default_dtype()`): what factories
    /// without a dtype, Python floats, and integers promoted to float (`int / int`,
    /// `int * 2.5`, `int.sqrt()`) become. float32 until [`DType::set_default_float`].
    #[inline]
    pub fn default_float() -> DType {
        match DEFAULT_FLOAT.load(Ordering::Relaxed) {
            1 => DType::F64,
            2 => DType::F16,
            3 => DType::BF16,
            _ => DType::F32,
        }
    }

    /// Sets the default floating-point dtype for the whole process
    /// (`torch.set_default_dtype`). Every floating dtype is accepted, as in PyTorch
    /// 2.15 (float16 and bfloat16 included), with PyTorch's TypeError message otherwise.
    pub fn set_default_float(dtype: DType) -> Result<()> {
        if !dtype.is_floating_point() {
            return Err(Error::Type(
                "only floating-point types are supported as the default type".into(),
            ));
        }
        DEFAULT_FLOAT.store(dtype.code(), Ordering::Relaxed);
        Ok(())
    }

    /// Whether values of this dtype are floating point (and may require grad).
    pub const fn is_floating_point(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// Whether this is one of the 16-bit floats, stored narrow and computed in float32
    /// (Note [Storage dtypes]).
    #[inline]
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// Whether this is an integer dtype (bool excluded).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8
        )
    }

    /// Whether values can be negative (PyTorch's `dtype.is_signed`).
    pub fn is_signed(self) -> bool {
        !matches!(self, DType::U8 | DType::Bool)
    }

    /// The dtype the shared compute paths run an op of this dtype in: float32 for the
    /// 16-bit floats (the result is rounded back once), itself for the others. See
    /// Note [Storage dtypes].
    #[inline]
    pub fn compute_dtype(self) -> DType {
        if self.is_half() {
            DType::F32
        } else {
            self
        }
    }

    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 | DType::I16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// PyTorch's name of the dtype, e.g. `torch.float32`.
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::F32 => "torch.float32",
            DType::F64 => "torch.float64",
            DType::F16 => "torch.float16",
            DType::BF16 => "torch.bfloat16",
            DType::I64 => "torch.int64",
            DType::I32 => "torch.int32",
            DType::I16 => "torch.int16",
            DType::I8 => "torch.int8",
            DType::U8 => "torch.uint8",
            DType::Bool => "torch.bool",
        }
    }

    /// PyTorch's legacy tensor-type name, used in autograd error messages (`torch.FloatTensor`).
    pub fn legacy_type_name(self) -> &'static str {
        match self {
            DType::F32 => "torch.FloatTensor",
            DType::F64 => "torch.DoubleTensor",
            DType::F16 => "torch.HalfTensor",
            DType::BF16 => "torch.BFloat16Tensor",
            DType::I64 => "torch.LongTensor",
            DType::I32 => "torch.IntTensor",
            DType::I16 => "torch.ShortTensor",
            DType::I8 => "torch.CharTensor",
            DType::U8 => "torch.ByteTensor",
            DType::Bool => "torch.BoolTensor",
        }
    }

    /// PyTorch's scalar-type name used in dtype error messages (`Float`, `Double`, `Long`, `Bool`).
    pub fn scalar_type_name(self) -> &'static str {
        match self {
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::I64 => "Long",
            DType::I32 => "Int",
            DType::I16 => "Short",
            DType::I8 => "Char",
            DType::U8 => "Byte",
            DType::Bool => "Bool",
        }
    }

    /// The C++ type name PyTorch's matmul dtype errors print (`float`, `long int`,
    /// `c10::Half`).
    pub fn cpp_type_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::F64 => "double",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::I64 => "long int",
            DType::I32 => "int",
            DType::I16 => "short int",
            DType::I8 => "signed char",
            DType::U8 => "unsigned char",
            DType::Bool => "bool",
        }
    }

    /// The C++ type name of PyTorch's "value cannot be converted to type ... without
    /// overflow" error from `fill_` and in-place scalar ops (`uint8_t`, `int`, `c10::Half`).
    pub fn overflow_type_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::F64 => "double",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::I64 => "int64_t",
            DType::I32 => "int",
            DType::I16 => "int16_t",
            DType::I8 => "int8_t",
            DType::U8 => "uint8_t",
            DType::Bool => "bool",
        }
    }

    /// The smallest and largest value of an integer dtype (bool: 0 and 1; floats: the
    /// int64 range, unused).
    pub fn int_range(self) -> (i64, i64) {
        match self {
            DType::I32 => (i32::MIN as i64, i32::MAX as i64),
            DType::I16 => (i16::MIN as i64, i16::MAX as i64),
            DType::I8 => (i8::MIN as i64, i8::MAX as i64),
            DType::U8 => (0, u8::MAX as i64),
            DType::Bool => (0, 1),
            DType::I64 | DType::F32 | DType::F64 | DType::F16 | DType::BF16 => (i64::MIN, i64::MAX),
        }
    }

    /// Kind of value: 0 bool, 1 integer, 2 floating point.
    pub fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 => 1,
            DType::F32 | DType::F64 | DType::F16 | DType::BF16 => 2,
        }
    }

    /// The result dtype of an op between operands of dtypes `a` and `b`, where `a_0d` /
    /// `b_0d` say whether an operand is a 0-d tensor: PyTorch's `result_type`, in which a
    /// 0-d operand only decides the dtype when it is of a higher category (so
    /// `float32_vector + float64_scalar_tensor` stays float32).
    pub fn result_type(a: DType, a_0d: bool, b: DType, b_0d: bool) -> DType {
        let tier = |zero_dim| if zero_dim { Tier::ZeroDim } else { Tier::Dim };
        DType::result_type_of(&[(a, tier(a_0d)), (b, tier(b_0d))])
    }

    /// PyTorch's `result_type` over operands of three tiers (Note [Wrapped scalars]):
    /// each tier promotes within itself (a wrapped float counts as the default float
    /// dtype), then a lower tier decides only when it is of a higher category than
    /// every higher tier (`uint8_vector + 300` is uint8, `0-d uint8 + 300` too,
    /// `0-d float16 + 2.5` float16, `int_vector + 0-d float64` float64).
    pub fn result_type_of(operands: &[(DType, Tier)]) -> DType {
        let mut tiers: [Option<DType>; 3] = [None; 3];
        for &(dtype, tier) in operands {
            let dtype = match (tier, dtype.is_floating_point()) {
                (Tier::Wrapped, true) => DType::default_float(),
                _ => dtype,
            };
            let slot = &mut tiers[tier as usize];
            *slot = Some(slot.map_or(dtype, |d| DType::promote(d, dtype)));
        }
        // c10's `combine_categories(higher, lower)`.
        let combine = |higher: Option<DType>, lower: Option<DType>| match (higher, lower) {
            (None, l) => l,
            (h, None) => h,
            (Some(h), Some(_)) if h.is_floating_point() => Some(h),
            (Some(h), Some(l)) if h == DType::Bool || l.is_floating_point() => {
                Some(DType::promote(h, l))
            }
            (h, Some(_)) => h,
        };
        combine(tiers[0], combine(tiers[1], tiers[2])).unwrap_or(DType::Bool)
    }

    /// The result dtype of a binary op between two tensors (PyTorch's `promote_types`):
    /// bool < integers < floats; between integers the wider, with uint8 and int8 meeting
    /// at int16; between floats the wider, with float16 and bfloat16 meeting at float32.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        match (a.category().cmp(&b.category()), a, b) {
            (std::cmp::Ordering::Greater, _, _) => a,
            (std::cmp::Ordering::Less, _, _) => b,
            (_, F16, BF16) | (_, BF16, F16) => F32,
            (_, U8, I8) | (_, I8, U8) => I16,
            _ if a.size_in_bytes() >= b.size_in_bytes() => a,
            _ => b,
        }
    }

    /// Whether a value of dtype `from` may be written into a tensor of dtype `self`
    /// by an in-place op (PyTorch's `canCast`: no float into integer, nothing but bool into bool).
    pub fn can_cast_from(self, from: DType) -> bool {
        match self.category() {
            2 => true,
            1 => !from.is_floating_point(),
            _ => from == DType::Bool,
        }
    }
}

/// How an operand takes part in type promotion (PyTorch's three `ResultTypeState`
/// tiers): a tensor with dims, a 0-d tensor, or a wrapped Python number
/// (Note [Wrapped scalars]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Tier {
    /// A tensor with at least one dim.
    Dim = 0,
    /// A 0-d tensor.
    ZeroDim = 1,
    /// A Python number wrapped as a 0-d tensor (`Tensor::wrapped_number`).
    Wrapped = 2,
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

/// Element types with arithmetic (the integers, float32, float64; the 16-bit floats
/// are computed in float32 and have no arithmetic of their own).
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
    /// `self + other`, wrapping for integers (PyTorch's integer arithmetic wraps).
    fn add_w(self, other: Self) -> Self;
    /// `self - other`, wrapping for integers.
    fn sub_w(self, other: Self) -> Self;
    /// `self * other`, wrapping for integers.
    fn mul_w(self, other: Self) -> Self;
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

/// A float truncated toward zero to int32 as x86's `cvttsd2si` does: NaN and values
/// outside the int32 range give `i32::MIN`. PyTorch's CPU casts to int32, int16 and int8
/// go through it (`tensor([300.]).char()` is 44, `tensor([5e9 + 7]).char()` 0), while
/// its casts to uint8 go through int64 (`tensor([5e9 + 7], dtype=float64).byte()` is 7).
#[inline(always)]
fn float_to_i32(v: f64) -> i32 {
    const LIMIT: f64 = 2_147_483_648.0; // 2^31
    if (-LIMIT..LIMIT).contains(&v) {
        v as i32
    } else {
        i32::MIN
    }
}

impl_element!(f32, F32, F32, |v| to_f64: v as f64, from_f64: v as f32, to_i64: float_to_i64(v as f64), from_i64: v as f32, to_bool: v != 0.0, from_bool: if v { 1.0 } else { 0.0 });
impl_element!(f64, F64, F64, |v| to_f64: v, from_f64: v, to_i64: float_to_i64(v), from_i64: v as f64, to_bool: v != 0.0, from_bool: if v { 1.0 } else { 0.0 });
impl_element!(i64, I64, I64, |v| to_f64: v as f64, from_f64: float_to_i64(v), to_i64: v, from_i64: v, to_bool: v != 0, from_bool: v as i64);
impl_element!(i32, I32, I32, |v| to_f64: v as f64, from_f64: float_to_i32(v), to_i64: v as i64, from_i64: v as i32, to_bool: v != 0, from_bool: v as i32);
impl_element!(i16, I16, I16, |v| to_f64: v as f64, from_f64: float_to_i32(v) as i16, to_i64: v as i64, from_i64: v as i16, to_bool: v != 0, from_bool: v as i16);
impl_element!(i8, I8, I8, |v| to_f64: v as f64, from_f64: float_to_i32(v) as i8, to_i64: v as i64, from_i64: v as i8, to_bool: v != 0, from_bool: v as i8);
impl_element!(u8, U8, U8, |v| to_f64: v as f64, from_f64: float_to_i64(v) as u8, to_i64: v as i64, from_i64: v as u8, to_bool: v != 0, from_bool: v as u8);
impl_element!(bool, Bool, Bool, |v| to_f64: if v { 1.0 } else { 0.0 }, from_f64: v != 0.0, to_i64: v as i64, from_i64: v != 0, to_bool: v, from_bool: v);
// The 16-bit floats round through float32 as PyTorch's `c10::Half(float)` and
// `c10::BFloat16(float)` constructors do (round to nearest even).
impl_element!(f16, F16, F16, |v| to_f64: v.to_f64(), from_f64: f16::from_f32(v as f32), to_i64: float_to_i64(v.to_f64()), from_i64: f16::from_f32(v as f32), to_bool: v.to_f32() != 0.0, from_bool: if v { f16::ONE } else { f16::ZERO });
impl_element!(bf16, BF16, BF16, |v| to_f64: v.to_f64(), from_f64: bf16::from_f32(v as f32), to_i64: float_to_i64(v.to_f64()), from_i64: bf16::from_f32(v as f32), to_bool: v.to_f32() != 0.0, from_bool: if v { bf16::ONE } else { bf16::ZERO });

/// `tanh` of a float32, through float64's `exp`: glibc's `tanhf` costs several times an
/// `exp`, and float64 leaves room for float32's precision.
///
/// Below `4e-4` in magnitude the series `x - x³/3` is exact to float32 (the next term,
/// `2x⁵/15`, is under 1e-14 relative); above 9.1 `tanh` rounds to ±1 in float32; in
/// between `(e - 1) / (e + 1)` with `e = exp(2x)` in float64 has a relative error below
/// 1e-12 (the cancellation in `e - 1` costs at most `1 / (2|x|)` ulps of float64), so
/// the rounded float32 is the correctly rounded result or one ulp from it. NaN
/// propagates through the last branch.
#[inline(always)]
fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    if a < 4e-4 {
        // As a product, so that -0.0 stays -0.0.
        return x * (1.0 - x * x / 3.0);
    }
    if a > 9.1 {
        return 1.0f32.copysign(x);
    }
    let e = (2.0 * x as f64).exp();
    ((e - 1.0) / (e + 1.0)) as f32
}

/// `tanh` of a float64 (glibc's).
#[inline(always)]
fn tanh_f64(x: f64) -> f64 {
    x.tanh()
}

macro_rules! impl_float {
    ($t:ty, $tanh:ident) => {
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
            #[inline(always)]
            fn add_w(self, other: Self) -> Self {
                self + other
            }
            #[inline(always)]
            fn sub_w(self, other: Self) -> Self {
                self - other
            }
            #[inline(always)]
            fn mul_w(self, other: Self) -> Self {
                self * other
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
                $tanh(self)
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                1.0 / (1.0 + <$t>::exp(-self))
            }
        }
    };
}
impl_float!(f32, tanh_f32);
impl_float!(f64, tanh_f64);

macro_rules! impl_int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn div(self, other: Self) -> Self {
                // Wrapping: int8 -128 / -1 is -128 as in PyTorch; / 0 gives 0.
                if other == 0 {
                    0
                } else {
                    self.wrapping_div(other)
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn abs(self) -> Self {
                // Wrapping (abs of int8 -128 is -128); the identity for uint8.
                (self as i64).wrapping_abs() as $t
            }
            #[inline(always)]
            fn sign(self) -> Self {
                (self as i64).signum() as $t
            }
            #[inline(always)]
            fn pow(self, other: Self) -> Self {
                // Products modulo 2^64 truncate to the products modulo 2^bits.
                i64_pow(self as i64, other as i64) as $t
            }
            #[inline(always)]
            fn add_w(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[inline(always)]
            fn sub_w(self, other: Self) -> Self {
                self.wrapping_sub(other)
            }
            #[inline(always)]
            fn mul_w(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
    )*};
}
impl_int_num!(i64, i32, i16, i8, u8);

/// PyTorch's `powi`: exact with wrapping for any exponent up to 2^63 - 1, and
/// integer-division semantics for negative exponents (1 / x truncated).
#[inline(always)]
fn i64_pow(base: i64, exponent: i64) -> i64 {
    if exponent < 0 {
        return match base {
            1 => 1,
            -1 if exponent % 2 != 0 => -1,
            -1 => 1,
            _ => 0,
        };
    }
    let (mut base, mut e, mut acc) = (base, exponent as u64, 1i64);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    acc
}

#[cfg(test)]
mod tanh_tests {
    use super::tanh_f32;

    /// Against float64's `tanh` rounded to float32: at most one ulp apart over a sweep
    /// of magnitudes from 1e-30 to 20 (both signs), exact at the ends, NaN for NaN.
    #[test]
    fn float32_tanh_is_within_one_ulp_of_the_rounded_float64_tanh() {
        let mut x = 1e-30f32;
        while x < 20.0 {
            for v in [x, -x] {
                let want = (v as f64).tanh() as f32;
                let got = tanh_f32(v);
                let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
                assert!(ulps <= 1, "tanh({v}) = {got}, want {want}");
            }
            x *= 1.0009;
        }
        assert_eq!(tanh_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }
}

#[cfg(test)]
mod promotion_tests {
    use super::{DType, Tier};

    /// PyTorch's three tiers (Note [Wrapped scalars]): a wrapped number decides only
    /// across categories, even beside a 0-d tensor, and counts as the default float.
    #[test]
    fn wrapped_numbers_rank_below_zero_dim_tensors() {
        use DType::*;
        use Tier::*;
        let rt = DType::result_type_of;
        assert_eq!(rt(&[(U8, Dim), (I64, Wrapped)]), U8);
        assert_eq!(rt(&[(U8, ZeroDim), (I64, Wrapped)]), U8);
        assert_eq!(rt(&[(F16, ZeroDim), (F64, Wrapped)]), F16);
        assert_eq!(rt(&[(I32, Dim), (F64, Wrapped)]), DType::default_float());
        assert_eq!(rt(&[(Bool, Dim), (I64, Wrapped)]), I64);
        assert_eq!(rt(&[(Bool, Dim), (Bool, Wrapped)]), Bool);
        assert_eq!(rt(&[(I64, Dim), (F64, ZeroDim)]), F64);
        assert_eq!(rt(&[(F32, Dim), (F64, ZeroDim)]), F32);
        assert_eq!(rt(&[(BF16, Dim), (F32, ZeroDim)]), BF16);
        assert_eq!(rt(&[(U8, ZeroDim), (I8, ZeroDim)]), I16);
        assert_eq!(
            rt(&[(U8, Dim), (I64, ZeroDim), (F64, Wrapped)]),
            DType::default_float()
        );
        assert_eq!(
            rt(&[(I64, Wrapped), (F64, Wrapped)]),
            DType::default_float()
        );
    }
}
