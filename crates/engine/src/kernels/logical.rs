//! The element functions of the predicates (`isnan`, `isinf`, ...) and of the logical
//! and bitwise ops; the Tensor-level ops that broadcast them are in `ops/logical.rs`.

/// A floating-point class tested by `isnan`, `isinf`, `isfinite`, `isposinf`,
/// `isneginf`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FloatClass {
    /// NaN.
    Nan,
    /// Positive or negative infinity.
    Inf,
    /// Neither NaN nor infinite.
    Finite,
    /// Positive infinity.
    PosInf,
    /// Negative infinity.
    NegInf,
}

impl FloatClass {
    /// Whether `x` is of this class.
    pub fn test(self, x: f64) -> bool {
        match self {
            FloatClass::Nan => x.is_nan(),
            FloatClass::Inf => x.is_infinite(),
            FloatClass::Finite => x.is_finite(),
            FloatClass::PosInf => x == f64::INFINITY,
            FloatClass::NegInf => x == f64::NEG_INFINITY,
        }
    }

    /// The answer for every integer or bool element (they are all finite).
    pub fn of_integers(self) -> bool {
        self == FloatClass::Finite
    }
}

/// And, or, exclusive or: of truth values (`logical_*`) or of bits (`bitwise_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LogicalOp {
    /// `a and b`, `a & b`.
    And,
    /// `a or b`, `a | b`.
    Or,
    /// `a xor b`, `a ^ b`.
    Xor,
}

impl LogicalOp {
    /// The op on truth values.
    pub fn apply_bool(self, a: bool, b: bool) -> bool {
        match self {
            LogicalOp::And => a & b,
            LogicalOp::Or => a | b,
            LogicalOp::Xor => a ^ b,
        }
    }

    /// The op on the bits of two int64 values.
    pub fn apply_i64(self, a: i64, b: i64) -> i64 {
        match self {
            LogicalOp::And => a & b,
            LogicalOp::Or => a | b,
            LogicalOp::Xor => a ^ b,
        }
    }

    /// PyTorch's kernel name of the bitwise form, for its "not implemented" error.
    pub fn bitwise_kernel_name(self) -> &'static str {
        match self {
            LogicalOp::And => "bitwise_and_cpu",
            LogicalOp::Or => "bitwise_or_cpu",
            LogicalOp::Xor => "bitwise_xor_cpu",
        }
    }
}
