//! `Tensor`: a strided view of a shared storage, with its dtype. No autograd state:
//! that lives in `Variable`. Views share the storage (and so the version counter);
//! compute ops return new contiguous tensors.

use crate::dtype::{DType, Element, Float, Num, Tier};
use crate::error::{Error, Result};
use crate::kernels::{elementwise, matmul, reduce};
use crate::layout::Layout;
use crate::shape::{self, Dims};
use crate::storage::{Buffer, CounterRef, ExternalBuffer, Storage, VersionCounter, WriteSite};
use smallvec::SmallVec;
use std::sync::Arc;

/// A strided, typed view of a [`Storage`].
#[derive(Clone, Debug)]
pub struct Tensor {
    storage: Arc<Storage>,
    layout: Layout,
    dtype: DType,
    /// The version counter, when it is not the storage's (`x.data`, `x.data = src`);
    /// shared by views of this tensor. See Note [Version counters].
    own_counter: Option<CounterRef>,
    /// Whether this is a Python number wrapped by [`Tensor::wrapped_number`]: it takes
    /// part in type promotion below 0-d tensors (Note [Wrapped scalars]).
    wrapped: bool,
}

/// A single element read out of a tensor.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    /// A floating-point value.
    Float(f64),
    /// An integer value.
    Int(i64),
    /// A boolean value.
    Bool(bool),
}

impl Scalar {
    /// The value widened to f64.
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Float(v) => v,
            Scalar::Int(v) => v as f64,
            Scalar::Bool(v) => v as u8 as f64,
        }
    }

    /// The value as element type `T`, without a detour through f64 for integers, so an
    /// int64 above 2^53 stays exact (Note [Exact scalars]). Floats convert with Rust
    /// `as` semantics; use [`Scalar::checked_cast`] where PyTorch checks the range.
    #[inline]
    pub fn cast<T: Element>(self) -> T {
        match self {
            Scalar::Float(v) => T::from_f64(v),
            Scalar::Int(v) => T::from_i64(v),
            Scalar::Bool(v) => T::from_bool(v),
        }
    }

    /// Like [`Scalar::cast`], but for an integer `T` a value the dtype cannot hold (NaN,
    /// infinities, out of range) is the error `torch.tensor` gives ("value cannot be
    /// converted to type int64 without overflow", `uint8`, ...) instead of a wrapped one.
    #[inline]
    pub fn checked_cast<T: Element>(self) -> Result<T> {
        self.check_fits_tensor(T::DTYPE)?;
        Ok(self.cast())
    }

    /// The range check of `torch.tensor(data, dtype=...)`: an integer `dtype` refuses
    /// values it cannot hold ("value cannot be converted to type uint8 without
    /// overflow"); float dtypes take any value (an out-of-range one becomes infinite).
    pub fn check_fits_tensor(self, dtype: DType) -> Result<()> {
        if dtype.is_integer() && self.overflows(dtype) {
            let name = dtype.torch_name().trim_start_matches("torch.");
            return Err(Error::InvalidArgument(format!(
                "value cannot be converted to type {name} without overflow"
            )));
        }
        Ok(())
    }

    /// Checks this value fits `dtype` as PyTorch's `fill_` / `full` / in-place scalar
    /// ops check it ("value cannot be converted to type uint8_t without overflow").
    pub fn check_fits(self, dtype: DType) -> Result<()> {
        if self.overflows(dtype) {
            return Err(Error::InvalidArgument(format!(
                "value cannot be converted to type {} without overflow",
                dtype.overflow_type_name()
            )));
        }
        Ok(())
    }

    /// PyTorch's `c10::overflows<dtype>(value)`: integers outside the integer dtype's
    /// range (uint8 also takes -255..-1, which wrap); floats that are NaN, infinite or
    /// whose floor is outside the range of an integer dtype, or finite and beyond the
    /// largest value of a float dtype. Nothing overflows bool.
    pub fn overflows(self, dtype: DType) -> bool {
        let float_max = match dtype {
            DType::F16 => 65504.0,
            DType::BF16 => 3.389_531_389_251_535_5e38,
            DType::F32 => f32::MAX as f64,
            DType::F64 | DType::Bool => return false,
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 => {
                let (lo, hi) = dtype.int_range();
                return match self {
                    Scalar::Bool(_) => false,
                    Scalar::Int(v) if dtype == DType::U8 => v.unsigned_abs() > hi as u64,
                    Scalar::Int(v) => v < lo || v > hi,
                    // -2^63 is exact in f64; 2^63 is the first value past i64::MAX.
                    Scalar::Float(v) if dtype == DType::I64 => {
                        !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v)
                    }
                    Scalar::Float(v) => {
                        let f = v.floor();
                        !(f >= lo as f64 && f <= hi as f64)
                    }
                };
            }
        };
        match self {
            Scalar::Float(v) => v.is_finite() && v.abs() > float_max,
            Scalar::Int(v) => (v as f64).abs() > float_max,
            Scalar::Bool(_) => false,
        }
    }

    /// Whether this is a floating-point value.
    pub fn is_floating_point(self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    /// The dtype of a 0-d tensor holding this value on its own (`torch.tensor(v)`).
    pub fn natural_dtype(self) -> DType {
        match self {
            Scalar::Float(_) => DType::default_float(),
            Scalar::Int(_) => DType::I64,
            Scalar::Bool(_) => DType::Bool,
        }
    }

    /// The dtype of `tensor op scalar` for a tensor of dtype `tensor`: PyTorch's
    /// wrapped-number rule, under which a scalar never widens a tensor of its own
    /// category (Note [Wrapped scalars]).
    pub fn result_type_with(self, tensor: DType) -> DType {
        DType::result_type_of(&[(tensor, Tier::Dim), (self.wide_dtype(), Tier::Wrapped)])
    }

    /// The dtype that holds this value exactly: int64, float64 or bool (that of
    /// [`Tensor::wrapped_number`]).
    pub fn wide_dtype(self) -> DType {
        match self {
            Scalar::Float(_) => DType::F64,
            Scalar::Int(_) => DType::I64,
            Scalar::Bool(_) => DType::Bool,
        }
    }
}

/// Elementwise functions of one tensor.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `e^x`
    Exp,
    /// `ln x`
    Log,
    /// `sqrt x`
    Sqrt,
    /// `tanh x`
    Tanh,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// `max(x, 0)`
    Relu,
    /// `|x|`
    Abs,
    /// `-1, 0 or 1`
    Sign,
}

impl UnaryOp {
    /// The name of PyTorch's CPU kernel, as its dtype errors print it.
    fn kernel_name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg_cpu",
            UnaryOp::Exp => "exp_vml_cpu",
            UnaryOp::Log => "log_vml_cpu",
            UnaryOp::Sqrt => "sqrt_vml_cpu",
            UnaryOp::Tanh => "tanh_vml_cpu",
            UnaryOp::Sigmoid => "sigmoid_cpu",
            UnaryOp::Relu => "clamp_min_scalar_cpu",
            UnaryOp::Abs => "abs_cpu",
            UnaryOp::Sign => "sign_cpu",
        }
    }

    /// Whether integer inputs are computed in floating point (PyTorch promotes them).
    fn promotes_integers(self) -> bool {
        matches!(
            self,
            UnaryOp::Exp | UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Tanh | UnaryOp::Sigmoid
        )
    }
}

/// Elementwise functions of two broadcast tensors.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b` (true division: integers give float32)
    Div,
    /// `a ** b`
    Pow,
}

impl BinaryOp {
    fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
        }
    }
}

/// Elementwise comparisons; results are bool tensors.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// Runs `$body` with `$T` bound to the Rust element type of a dtype.
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = crate::dtype::f16;
                $body
            }
            DType::BF16 => {
                type $T = crate::dtype::bf16;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::Bool => {
                type $T = bool;
                $body
            }
        }
    };
}
pub(crate) use dispatch;

/// Like `dispatch!` for the float dtypes that have arithmetic (float32, float64); other
/// dtypes return `$err()` (a closure, so that the error and its message are only built
/// on that path). The 16-bit floats never get here: the ops convert them to their
/// [`DType::compute_dtype`] first (Note [Storage dtypes]).
macro_rules! dispatch_float {
    ($dtype:expr, $err:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16
            | DType::BF16
            | DType::I64
            | DType::I32
            | DType::I16
            | DType::I8
            | DType::U8
            | DType::Bool => return Err($err()),
        }
    };
}

/// Like `dispatch!` for the dtypes with arithmetic (not bool, not the 16-bit floats,
/// which compute in float32).
macro_rules! dispatch_num {
    ($dtype:expr, $err:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::F16 | DType::BF16 | DType::Bool => return Err($err()),
        }
    };
}

/// Maps every element of `$src` through `|$x| $body` into a new contiguous tensor,
/// for the dtypes `$dispatch` accepts (a closure cannot be generic over `T`).
macro_rules! map_elems {
    ($dispatch:ident, $src:expr, $err:expr, |$x:ident| $body:expr) => {{
        let src: &Tensor = &$src;
        $dispatch!(src.dtype, $err, T => {
            let v = src.read(|s: &[T]| elementwise::map1(s, &src.layout, |$x: T| $body))?;
            Ok(Tensor::from_buffer(T::into_buffer(v), src.shape()))
        })
    }};
}

/// Fails with PyTorch's allocator error when `numel` elements of `dtype` cannot be
/// allocated, instead of letting the allocation abort the process. Small tensors skip
/// the probe (it costs an allocation).
pub fn check_allocation(numel: usize, dtype: DType) -> Result<()> {
    const PROBE_ABOVE: usize = 1 << 24;
    if numel <= PROBE_ABOVE {
        return Ok(());
    }
    let bytes = numel
        .checked_mul(dtype.size_in_bytes())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
    let mut probe: Vec<u8> = Vec::new();
    probe
        .try_reserve_exact(bytes)
        .map_err(|_| Error::OutOfMemory { bytes })
}

fn internal_dtype() -> ! {
    panic!("rustgrad internal error: storage dtype differs from tensor dtype")
}

impl Tensor {
    // ----- construction -------------------------------------------------------------

    /// A tensor owning `data`, reshaped to `shape`.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        if data.len() != shape::checked_numel(shape)? {
            return Err(Error::InvalidShape {
                shape: shape.iter().map(|&s| s as i64).collect(),
                numel: data.len(),
            });
        }
        Ok(Tensor::from_buffer(T::into_buffer(data), shape))
    }

    /// A contiguous tensor over a buffer whose length matches `shape`.
    pub(crate) fn from_buffer(buffer: Buffer, shape: &[usize]) -> Tensor {
        debug_assert_eq!(buffer.len(), shape::numel(shape));
        let dtype = buffer.dtype();
        Tensor {
            storage: Storage::new(buffer),
            layout: Layout::contiguous(shape),
            dtype,
            own_counter: None,
            wrapped: false,
        }
    }

    /// A tensor over memory another owner keeps alive (a numpy array, shared as by
    /// PyTorch's `from_numpy`), seen through `layout`. See Note [Shared memory].
    ///
    /// # Safety
    /// As [`ExternalBuffer::new`]: `ptr` points to `len` initialised, aligned elements of
    /// `dtype` (not bool) that stay valid and in place while `owner` lives, and nothing
    /// else accesses them while the engine writes them.
    pub unsafe fn from_external(
        ptr: std::ptr::NonNull<u8>,
        len: usize,
        dtype: DType,
        owner: Box<dyn std::any::Any + Send + Sync>,
        layout: Layout,
    ) -> Result<Tensor> {
        if dtype == DType::Bool {
            return Err(Error::NotImplemented(
                "rustgrad: bool memory cannot be shared; copy it".into(),
            ));
        }
        layout.check_in_bounds(len)?;
        // SAFETY: forwarded from this function's contract.
        let buffer = unsafe { ExternalBuffer::new(ptr, len, dtype, owner) };
        Ok(Tensor {
            storage: Storage::new(Buffer::External(buffer)),
            layout,
            dtype,
            own_counter: None,
            wrapped: false,
        })
    }

    /// A 0-d tensor holding `value` converted to `dtype`.
    pub fn scalar(value: f64, dtype: DType) -> Tensor {
        Tensor::from_scalar(Scalar::Float(value), dtype)
    }

    /// A tensor of `shape` filled with `value` converted to `dtype`, or PyTorch's
    /// allocator error (Note [Allocation failures]).
    pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
        Tensor::full_scalar(shape, Scalar::Float(value), dtype)
    }

    /// A tensor of `shape` filled with `value` converted to `dtype`; integers convert
    /// exactly (Note [Exact scalars]). Fails with PyTorch's allocator error, or its
    /// overflow error, when the elements cannot be had (Note [Allocation failures]).
    pub fn full_scalar(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        let n = shape::checked_numel(shape)?;
        Ok(dispatch!(dtype, T => {
            Tensor::from_buffer(T::into_buffer(crate::kernels::try_vec(n, value.cast::<T>())?), shape)
        }))
    }

    /// A 0-d tensor holding `value` converted to `dtype` (exactly, for integers).
    pub fn from_scalar(value: Scalar, dtype: DType) -> Tensor {
        dispatch!(dtype, T => Tensor::from_buffer(T::into_buffer(vec![value.cast::<T>()]), &[]))
    }

    /// A Python number as an operand (PyTorch's `wrapped_scalar_tensor`): a 0-d tensor
    /// that keeps the value exactly (int64 for ints, float64 for floats, bool) and is
    /// marked as wrapped, so that it decides the result dtype only below 0-d tensors and
    /// counts as the default float dtype when a float (Note [Wrapped scalars]). Ops cast
    /// it to the result dtype (wrapping, as PyTorch: `uint8 + 300` adds 44) or straight
    /// to a float compute dtype (`int16 / 32768` is exact).
    pub fn wrapped_number(value: Scalar) -> Tensor {
        let mut t = Tensor::from_scalar(value, value.wide_dtype());
        t.wrapped = true;
        t
    }

    /// Whether this tensor is a wrapped Python number ([`Tensor::wrapped_number`]).
    pub fn is_wrapped_number(&self) -> bool {
        self.wrapped
    }

    /// This tensor's promotion tier: dims, 0-d, or a wrapped number.
    pub fn tier(&self) -> Tier {
        match (self.wrapped, self.dim()) {
            (true, _) => Tier::Wrapped,
            (false, 0) => Tier::ZeroDim,
            _ => Tier::Dim,
        }
    }

    /// The result dtype of an elementwise op of `a` and `b` (PyTorch's `result_type`
    /// with its three tiers, [`DType::result_type_of`]).
    pub fn result_type(a: &Tensor, b: &Tensor) -> DType {
        DType::result_type_of(&[(a.dtype, a.tier()), (b.dtype, b.tier())])
    }

    /// This operand converted for a kernel whose result dtype is `dtype` and that
    /// computes in `compute`: first to `dtype` (PyTorch's TensorIterator casts inputs to
    /// the common dtype, so `uint8 + 300` adds 44 and `bfloat16 - tensor(5.2922)`
    /// subtracts 5.28125), then to `compute` (float32 for the 16-bit floats, int64 for
    /// the rarer integer kernels). A cast straight to a float `compute` keeps the value
    /// when `dtype` is not a float (`int16 / 32768` divides by 32768, not -32768), and
    /// `exact` skips the first step (PyTorch's `original_scalar_value` of a 0-d second
    /// operand of mul and div on 16-bit floats).
    pub(crate) fn cast_operand(&self, dtype: DType, compute: DType, exact: bool) -> Result<Tensor> {
        if exact || (compute.is_floating_point() && !dtype.is_floating_point()) {
            return self.to_dtype(compute);
        }
        self.to_dtype(dtype)?.to_dtype(compute)
    }

    /// A tensor of zeros, or PyTorch's allocator error ([`Tensor::full`]).
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 0.0, dtype)
    }

    /// Zeros of `dtype` shaped and laid out as PyTorch's `torch.empty_like(self,
    /// dtype=dtype)` (`preserve_format`, [`Layout::preserved_strides`]): the strides of a
    /// non-overlapping and dense `self`, else dense strides in its dims' memory order.
    /// The target of `empty_like`, `zeros_like`, `ones_like`, `full_like` and the `*_like`
    /// samplers.
    pub fn zeros_like_preserving(&self, dtype: DType) -> Result<Tensor> {
        let strides = self.layout.preserved_strides();
        // Dense strides over `numel` elements: a buffer of `numel` covers the layout.
        let flat = Tensor::zeros(&[shape::checked_numel(self.shape())?], dtype)?;
        Ok(flat.with_layout(Layout::new(
            self.shape().iter().copied().collect(),
            strides,
            0,
        )))
    }

    /// A tensor of ones, or PyTorch's allocator error ([`Tensor::full`]).
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 1.0, dtype)
    }

    /// `start, start + step, ...` up to (excluding) `end`, like `torch.arange`. When all
    /// three are integers the values are computed in i64, exactly.
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
        Tensor::arange_scalar(
            Scalar::Float(start),
            Scalar::Float(end),
            Scalar::Float(step),
            dtype,
        )
    }

    /// [`Tensor::arange`] over scalars: integer bounds and step stay exact.
    pub fn arange_scalar(start: Scalar, end: Scalar, step: Scalar, dtype: DType) -> Result<Tensor> {
        if dtype == DType::Bool {
            return Err(Error::unsupported_dtype("arange_cpu", dtype));
        }
        let (fs, fe, fst) = (start.to_f64(), end.to_f64(), step.to_f64());
        if !fst.is_finite() {
            return Err(Error::InvalidArgument(format!(
                "step must be finite but got {}",
                fmt_float(fst)
            )));
        }
        if !(fs.is_finite() && fe.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "unsupported range: {} -> {}",
                fmt_float(fs),
                fmt_float(fe)
            )));
        }
        if fst == 0.0 {
            return Err(Error::InvalidArgument("step must be nonzero".into()));
        }
        let ints = match (start, end, step) {
            (Scalar::Int(a), Scalar::Int(b), Scalar::Int(c)) => Some((a, b, c)),
            _ => None,
        };
        let wrong_sign = match ints {
            Some((a, b, c)) => (c > 0 && b < a) || (c < 0 && b > a),
            None => (fst > 0.0 && fe < fs) || (fst < 0.0 && fe > fs),
        };
        if wrong_sign {
            return Err(Error::InvalidArgument(
                "upper bound and larger bound inconsistent with step sign".into(),
            ));
        }
        let n = match ints {
            Some((a, b, c)) => {
                let (span, c) = ((b as i128) - (a as i128), c as i128);
                let count = (span + c - c.signum()) / c;
                usize::try_from(count.max(0))
                    .map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?
            }
            None => {
                let count = ((fe - fs) / fst).ceil().max(0.0);
                if count >= usize::MAX as f64 {
                    return Err(Error::OutOfMemory { bytes: usize::MAX });
                }
                count as usize
            }
        };
        check_allocation(n, dtype)?;
        let shape = [n];
        Ok(dispatch!(dtype, T => {
            let v: Vec<T> = match ints {
                Some((a, _, c)) => (0..n)
                    .map(|i| T::from_i64(a.wrapping_add((i as i64).wrapping_mul(c))))
                    .collect(),
                None => (0..n).map(|i| T::from_f64(fs + i as f64 * fst)).collect(),
            };
            Tensor::from_buffer(T::into_buffer(v), &shape)
        }))
    }

    // ----- accessors ----------------------------------------------------------------

    /// Sizes of each dimension.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// Element strides of each dimension.
    pub fn strides(&self) -> &[usize] {
        self.layout.strides()
    }

    /// The layout (shape, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.layout.ndim()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shared storage.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// The version counter (shared with every view; the storage's unless this tensor
    /// was given its own by `with_own_version_counter`).
    pub fn version_counter(&self) -> &VersionCounter {
        match &self.own_counter {
            Some(c) => c.get(),
            None => self.storage.counter(),
        }
    }

    /// The number of in-place writes counted by the version counter.
    pub fn version(&self) -> u64 {
        self.version_counter().version()
    }

    /// The same elements with a new version counter at 0 (PyTorch's `x.data`: writes
    /// through it are not counted on `x`, nor `x`'s on it).
    pub fn with_own_version_counter(&self) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            layout: self.layout.clone(),
            dtype: self.dtype,
            own_counter: Some(CounterRef::Own(Arc::new(VersionCounter::default()))),
            wrapped: false,
        }
    }

    /// The same elements with `other`'s version counter (the data a variable takes on in
    /// `x.data = src`: `src`'s elements, `x`'s counter, still shared with `x`'s views).
    pub fn with_version_counter_of(&self, other: &Tensor) -> Tensor {
        let counter = match &other.own_counter {
            Some(c) => c.clone(),
            None => CounterRef::Of(other.storage.clone()),
        };
        Tensor {
            storage: self.storage.clone(),
            layout: self.layout.clone(),
            dtype: self.dtype,
            own_counter: Some(counter),
            wrapped: false,
        }
    }

    /// Whether the elements are row-major without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// Whether two tensors view the same storage.
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// The same storage seen through another layout.
    fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
            own_counter: self.own_counter.clone(),
            wrapped: false,
        }
    }

    /// Reads the elements as `T` while holding the storage's read lock.
    pub(crate) fn read<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        let guard = self.storage.read();
        match T::slice(&guard) {
            Some(s) => f(s),
            None => internal_dtype(),
        }
    }

    /// Reads two tensors of the same dtype; one lock when they share storage. Two locks
    /// are taken in storage address order, never argument order: see Note [Locking of
    /// storages].
    pub(crate) fn read2<T: Element, R>(
        &self,
        other: &Tensor,
        f: impl FnOnce(&[T], &[T]) -> R,
    ) -> R {
        if self.shares_storage(other) {
            self.read(|s: &[T]| f(s, s))
        } else if self.storage_order_key() < other.storage_order_key() {
            self.read(|a: &[T]| other.read(|b: &[T]| f(a, b)))
        } else {
            other.read(|b: &[T]| self.read(|a: &[T]| f(a, b)))
        }
    }

    /// The global order in which storage locks are taken: the storage's address, which
    /// is unique while both tensors keep their storages alive.
    fn storage_order_key(&self) -> usize {
        Arc::as_ptr(&self.storage) as usize
    }

    /// The elements in logical row-major order, converted to `T`.
    ///
    /// # Panics
    /// When the values cannot be allocated (a huge expanded view); use
    /// [`Tensor::try_to_vec`] where that can happen.
    pub fn to_vec<T: Element>(&self) -> Vec<T> {
        self.try_to_vec()
            .unwrap_or_else(|e| panic!("Tensor::to_vec: {e}"))
    }

    /// The elements in logical row-major order, converted to `T`; PyTorch's allocator
    /// error when they do not fit in memory.
    pub fn try_to_vec<T: Element>(&self) -> Result<Vec<T>> {
        dispatch!(self.dtype, S => self.read(|s: &[S]| {
            elementwise::map1(s, &self.layout, |x: S| convert::<S, T>(x))
        }))
    }

    /// The elements at the cartesian product of per-dimension `indices` (one list per
    /// dim, each index below that dim's size), row-major, converted to `T`. Reads only
    /// those elements: `repr` uses it to print a huge tensor's edges.
    pub fn gather_to_vec<T: Element>(&self, indices: &[Vec<usize>]) -> Result<Vec<T>> {
        if indices.len() != self.dim() {
            return Err(Error::InvalidArgument(format!(
                "gather_to_vec: {} index lists for {} dims",
                indices.len(),
                self.dim()
            )));
        }
        for (d, list) in indices.iter().enumerate() {
            if let Some(&bad) = list.iter().find(|&&i| i >= self.shape()[d]) {
                return Err(Error::IndexOutOfRange {
                    index: bad as i64,
                    dim: d,
                    size: self.shape()[d],
                });
            }
        }
        let picked_shape: Dims = indices.iter().map(Vec::len).collect();
        let n = shape::checked_numel(&picked_shape)?;
        let mut out = crate::kernels::try_vec(n, T::default())?;
        if n == 0 {
            return Ok(out);
        }
        dispatch!(self.dtype, S => self.read(|s: &[S]| {
            // The indices are inside the shape and the layout inside the storage.
            let strides = self.strides();
            let mut idx: Dims = SmallVec::from_elem(0, self.dim());
            for o in out.iter_mut() {
                let off = self.layout.offset()
                    + idx
                        .iter()
                        .enumerate()
                        .map(|(d, &i)| indices[d][i] * strides[d])
                        .sum::<usize>();
                *o = convert::<S, T>(s[off]);
                for d in (0..idx.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < indices[d].len() {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }));
        Ok(out)
    }

    /// The single element of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::NotAScalar {
                numel: self.numel(),
            });
        }
        let off = self.layout.offset();
        Ok(dispatch!(self.dtype, T => {
            let v: T = self.read(|s: &[T]| s[off]);
            match self.dtype.category() {
                0 => Scalar::Bool(v.to_bool()),
                1 => Scalar::Int(v.to_i64()),
                _ => Scalar::Float(v.to_f64()),
            }
        }))
    }

    // ----- copies and conversions ---------------------------------------------------

    /// A contiguous tensor with the same values: `self` when already contiguous.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            Ok(self.clone())
        } else {
            self.deep_clone()
        }
    }

    /// A copy into new, contiguous storage (the allocator error when it does not fit).
    pub fn deep_clone(&self) -> Result<Tensor> {
        dispatch!(self.dtype, T => {
            let v = self.read(|s: &[T]| elementwise::map1(s, &self.layout, |x| x))?;
            Ok(Tensor::from_buffer(T::into_buffer(v), self.shape()))
        })
    }

    /// A copy with PyTorch's `memory_format=torch.preserve_format`
    /// ([`Layout::preserved_strides`]): a non-overlapping and dense tensor keeps its
    /// strides (`x.t().clone()` is still transposed), any other gets dense strides in its
    /// dims' memory order (`b[:, :3].t().clone()` of a 4×4 `b` has strides `(1, 3)`).
    /// Dense elements fill the storage range `offset..offset + numel` exactly once, so
    /// that range is copied as it is; otherwise the view permuted to memory order is
    /// copied row-major and permuted back.
    pub fn clone_preserving_strides(&self) -> Result<Tensor> {
        // Not `is_contiguous()`, which ignores the strides of size-1 dims: PyTorch keeps
        // them (`zeros(4, 4)[:1, :3].t().clone().stride()` is `(1, 4)`).
        if self.strides() == crate::layout::contiguous_strides(self.shape()).as_slice() {
            return self.deep_clone();
        }
        if !self.layout.is_non_overlapping_and_dense() {
            let order: Vec<i64> = self
                .layout
                .dense_order()
                .iter()
                .map(|&d| d as i64)
                .collect();
            let mut inverse = vec![0i64; order.len()];
            for (k, &d) in order.iter().enumerate() {
                inverse[d as usize] = k as i64;
            }
            return self.permute(&order)?.deep_clone()?.permute(&inverse);
        }
        let (start, n) = (self.layout.offset(), self.numel());
        self.layout.check_in_bounds(self.storage.read().len())?;
        let buffer = dispatch!(self.dtype, T => {
            let mut v: Vec<T> = Vec::new();
            v.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
                bytes: n.saturating_mul(std::mem::size_of::<T>()),
            })?;
            self.read(|s: &[T]| v.extend_from_slice(&s[start..start + n]));
            T::into_buffer(v)
        });
        let layout = Layout::new(
            self.shape().iter().copied().collect(),
            self.strides().iter().copied().collect(),
            0,
        );
        Ok(Tensor::from_buffer(buffer, self.shape()).with_layout(layout))
    }

    /// The values converted to `dtype` (`self` when it already has it).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        dispatch!(dtype, T => Ok(Tensor::from_buffer(T::into_buffer(self.try_to_vec::<T>()?), self.shape())))
    }

    /// Runs `f` on this tensor converted to float32 and rounds a float32 result back to
    /// this tensor's dtype: how the 16-bit floats compute (Note [Storage dtypes]).
    /// Results of another dtype (bool masks, int64 indices) are returned as they are.
    pub(crate) fn via_f32(&self, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let out = f(&self.to_dtype(DType::F32)?)?;
        if out.dtype == DType::F32 {
            out.to_dtype(self.dtype)
        } else {
            Ok(out)
        }
    }

    // ----- views --------------------------------------------------------------------

    /// A view with another shape (one size may be -1); fails when strides forbid it.
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = shape::infer_shape(shape, self.numel())?;
        self.layout
            .view(&shape)
            .map(|l| self.with_layout(l))
            .ok_or(Error::NonViewable)
    }

    /// Like `view`, copying when the strides do not allow a view.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = shape::infer_shape(shape, self.numel())?;
        Ok(match self.layout.view(&shape) {
            Some(l) => self.with_layout(l),
            None => self.deep_clone()?.with_layout(Layout::contiguous(&shape)),
        })
    }

    /// Whether `reshape` to `shape` would be a view (no copy).
    pub fn can_view(&self, shape: &[usize]) -> bool {
        self.layout.view(shape).is_some()
    }

    /// Swaps two dims.
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Tensor> {
        let nd = self.dim();
        let (d0, d1) = (shape::wrap_dim(dim0, nd)?, shape::wrap_dim(dim1, nd)?);
        if nd == 0 {
            return Ok(self.clone());
        }
        Ok(self.with_layout(self.layout.transpose(d0, d1)))
    }

    /// Transpose of a tensor with at most 2 dims.
    pub fn t(&self) -> Result<Tensor> {
        if self.dim() > 2 {
            return Err(Error::InvalidArgument(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.dim()
            )));
        }
        if self.dim() < 2 {
            return Ok(self.clone());
        }
        self.transpose(0, 1)
    }

    /// Reorders dims.
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let nd = self.dim();
        if dims.len() != nd {
            return Err(Error::InvalidArgument(format!(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {}",
                dims.len()
            )));
        }
        let wrapped = dims
            .iter()
            .map(|&d| shape::wrap_dim(d, nd))
            .collect::<Result<Dims>>()?;
        let mut seen = vec![false; nd];
        for &d in &wrapped {
            if std::mem::replace(&mut seen[d], true) {
                return Err(Error::InvalidArgument(
                    "permute(): duplicate dims are not allowed.".into(),
                ));
            }
        }
        Ok(self.with_layout(self.layout.permute(&wrapped)))
    }

    /// Broadcasts to `sizes` (-1 keeps a size), without copying.
    pub fn expand(&self, sizes: &[i64]) -> Result<Tensor> {
        if sizes.len() < self.dim() {
            let list = |s: &mut dyn Iterator<Item = String>| s.collect::<Vec<_>>().join(", ");
            return Err(Error::InvalidArgument(format!(
                "expand(torch.{}Tensor{{[{}]}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                self.dtype().scalar_type_name(),
                list(&mut self.shape().iter().map(|d| d.to_string())),
                list(&mut sizes.iter().map(|d| d.to_string())),
                sizes.len(),
                self.dim()
            )));
        }
        let lead = sizes.len() - self.dim();
        let mut target: Dims = SmallVec::with_capacity(sizes.len());
        for (i, &s) in sizes.iter().enumerate() {
            target.push(if s == -1 && i >= lead {
                self.shape()[i - lead]
            } else if s < 0 {
                return Err(Error::InvalidArgument(format!(
                    "The expanded size of the tensor ({s}) isn't allowed in a leading, non-existing dimension {i}"
                )));
            } else {
                s as usize
            });
        }
        self.broadcast_to(&target)
    }

    /// Broadcasts to `shape` without copying.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout.broadcast_to(shape)?))
    }

    /// Inserts a size-1 dim.
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = shape::wrap_insert_dim(dim, self.dim())?;
        Ok(self.with_layout(self.layout.unsqueeze(d)))
    }

    /// Removes every size-1 dim.
    pub fn squeeze(&self) -> Tensor {
        let dims: Vec<usize> = (0..self.dim()).filter(|&d| self.shape()[d] == 1).collect();
        self.with_layout(self.layout.remove_unit_dims(&dims))
    }

    /// Removes `dim` if it has size 1 (otherwise returns the same shape, as PyTorch).
    pub fn squeeze_dim(&self, dim: i64) -> Result<Tensor> {
        let d = shape::wrap_dim(dim, self.dim())?;
        if self.dim() == 0 || self.shape()[d] != 1 {
            return Ok(self.clone());
        }
        Ok(self.with_layout(self.layout.remove_unit_dims(&[d])))
    }

    /// Removes those of `dims` that have size 1 (`squeeze(dims)`); a 0-d tensor accepts
    /// dims 0 and -1, and a repeated dim raises PyTorch's error.
    pub fn squeeze_dims(&self, dims: &[i64]) -> Result<Tensor> {
        let nd = self.dim();
        let mut unit: Vec<usize> = Vec::with_capacity(dims.len());
        let mut seen: Vec<usize> = Vec::with_capacity(dims.len());
        for &d in dims {
            let w = shape::wrap_dim(d, nd.max(1))?;
            if seen.contains(&w) {
                return Err(Error::InvalidArgument(format!(
                    "dim {w} appears multiple times in the list of dims"
                )));
            }
            seen.push(w);
            if w < nd && self.shape()[w] == 1 {
                unit.push(w);
            }
        }
        unit.sort_unstable();
        Ok(self.with_layout(self.layout.remove_unit_dims(&unit)))
    }

    /// `self[..., start:end:step, ...]` along `dim`, with Python's clamping of bounds.
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(Error::IndexOutOfRange {
                index: 0,
                dim: 0,
                size: 0,
            });
        }
        let d = shape::wrap_dim(dim, self.dim())?;
        if step <= 0 {
            return Err(Error::InvalidArgument("slice step must be positive".into()));
        }
        let (s, e) = slice_bounds(self.shape()[d], start, end);
        Ok(self.with_layout(self.layout.slice(d, s, e, step as usize)))
    }

    /// The resolved `(start, end, step)` that `slice` would use, for autograd.
    pub fn slice_params(&self, dim: usize, start: Option<i64>, end: Option<i64>) -> (usize, usize) {
        slice_bounds(self.shape()[dim], start, end)
    }

    /// `self[..., index, ...]` along `dim`, removing it.
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(Error::InvalidArgument(
                "select() cannot be applied to a 0-dim tensor.".into(),
            ));
        }
        let d = shape::wrap_dim(dim, self.dim())?;
        let size = self.shape()[d];
        let i = if index < 0 {
            index + size as i64
        } else {
            index
        };
        if i < 0 || i >= size as i64 {
            return Err(Error::IndexOutOfRange {
                index,
                dim: d,
                size,
            });
        }
        Ok(self.with_layout(self.layout.select(d, i as usize)))
    }

    /// The layout of `self` in the coordinates of a contiguous tensor of `base`'s shape:
    /// replaying it on such a tensor selects the elements `self` views. `None` when
    /// `self` does not view `base`'s storage, or `base` is neither contiguous nor dense,
    /// or `self` reaches outside `base`'s elements. See Note [Views of dense bases].
    pub fn layout_within(&self, base: &Tensor) -> Option<Layout> {
        if !self.shares_storage(base) || self.layout.offset() < base.layout.offset() {
            return None;
        }
        let offset = self.layout.offset() - base.layout.offset();
        if base.is_contiguous() {
            return Some(Layout::new(
                self.shape().into(),
                self.strides().into(),
                offset,
            ));
        }
        if !base.layout.is_non_overlapping_and_dense() {
            return None;
        }
        // The base's dims by increasing stride are the digits of a mixed-radix number:
        // a storage position (relative to the base) is Σ digit_d · stride_d. Written in
        // those digits, the view's offset and strides translate digit by digit into
        // the contiguous base's strides, provided no digit ever carries.
        let mut dims: SmallVec<[usize; 6]> =
            (0..base.dim()).filter(|&d| base.shape()[d] > 1).collect();
        dims.sort_unstable_by_key(|&d| base.strides()[d]);
        let contiguous = crate::layout::contiguous_strides(base.shape());
        let digits = |mut position: usize| -> Option<SmallVec<[usize; 6]>> {
            let mut out: SmallVec<[usize; 6]> = SmallVec::new();
            for &d in dims.iter().rev() {
                let stride = base.strides()[d];
                out.push(position / stride);
                position %= stride;
            }
            out.reverse();
            (position == 0).then_some(out)
        };
        let translate = |digits: &[usize]| -> usize {
            dims.iter()
                .zip(digits)
                .map(|(&d, &k)| k * contiguous[d])
                .sum()
        };
        let offset_digits = digits(offset)?;
        let mut reach: SmallVec<[usize; 6]> = offset_digits.clone();
        let mut strides: Dims = Dims::new();
        for (&size, &stride) in self.shape().iter().zip(self.strides()) {
            if size <= 1 {
                // The stride of a size-1 dim is never followed.
                strides.push(0);
                continue;
            }
            let stride_digits = digits(stride)?;
            for (r, k) in reach.iter_mut().zip(&stride_digits) {
                *r = r.checked_add(k.checked_mul(size - 1)?)?;
            }
            strides.push(translate(&stride_digits));
        }
        if dims.iter().zip(&reach).any(|(&d, &r)| r >= base.shape()[d]) {
            return None;
        }
        Some(Layout::new(
            self.shape().into(),
            strides,
            translate(&offset_digits),
        ))
    }

    /// A view of the same storage through `layout` (storage positions), checked to stay
    /// inside the storage: the strided views `diagonal`, `unfold` and `as_strided`.
    pub fn strided_view(&self, layout: Layout) -> Result<Tensor> {
        layout.check_in_bounds(self.storage.read().len())?;
        Ok(self.with_layout(layout))
    }

    /// A view of this tensor's elements (made contiguous first) through `layout`.
    pub fn as_strided(&self, layout: &Layout) -> Result<Tensor> {
        let t = self.contiguous()?;
        layout.storage_nbytes(self.dtype().size_in_bytes())?;
        if layout.storage_extent()? > t.numel() {
            return Err(Error::InvalidArgument(format!(
                "setStorage: sizes {:?}, strides {:?}, storage offset {} require more elements than the {} available",
                layout.shape(),
                layout.strides(),
                layout.offset(),
                t.numel()
            )));
        }
        let shifted = Layout::new(
            layout.shape().into(),
            layout.strides().into(),
            layout.offset() + t.layout.offset(),
        );
        Ok(t.with_layout(shifted))
    }

    // ----- compute ------------------------------------------------------------------

    /// An elementwise function; integer inputs to float functions are promoted to the
    /// default float dtype.
    /// On bool tensors PyTorch refuses `-`, `abs` and `relu`, and `sign` is the identity.
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        let src = if op.promotes_integers() && !self.dtype.is_floating_point() {
            self.to_dtype(DType::default_float())?
        } else if self.dtype == DType::Bool {
            return match op {
                UnaryOp::Neg => Err(Error::not_implemented_for_dtype(
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
                )),
                UnaryOp::Relu => Err(Error::not_implemented_for_dtype(
                    "Boolean inputs not supported for relu",
                )),
                UnaryOp::Sign => self.deep_clone(),
                _ => Err(Error::unsupported_dtype(op.kernel_name(), DType::Bool)),
            };
        } else {
            self.clone()
        };
        if src.dtype.is_half() {
            return src.via_f32(|t| t.unary(op));
        }
        let err = || Error::unsupported_dtype(op.kernel_name(), src.dtype);
        // `x < 0` is always false for uint8 (relu is the identity there).
        #[allow(clippy::absurd_extreme_comparisons)]
        match op {
            UnaryOp::Neg => map_elems!(dispatch_num, src, err, |x| Num::neg(x)),
            UnaryOp::Abs => map_elems!(dispatch_num, src, err, |x| Num::abs(x)),
            UnaryOp::Sign => map_elems!(dispatch_num, src, err, |x| Num::sign(x)),
            // `x < 0` is false for NaN, so NaN propagates as in PyTorch.
            UnaryOp::Relu => map_elems!(dispatch_num, src, err, |x| if x < Num::ZERO {
                Num::ZERO
            } else {
                x
            }),
            UnaryOp::Exp => map_elems!(dispatch_float, src, err, |x| Float::exp(x)),
            UnaryOp::Log => map_elems!(dispatch_float, src, err, |x| Float::ln(x)),
            UnaryOp::Sqrt => map_elems!(dispatch_float, src, err, |x| Float::sqrt(x)),
            UnaryOp::Tanh => map_elems!(dispatch_float, src, err, |x| Float::tanh(x)),
            UnaryOp::Sigmoid => map_elems!(dispatch_float, src, err, |x| Float::sigmoid(x)),
        }
    }

    /// `x ** exponent` for a scalar exponent, with PyTorch's dtype rules: the result
    /// dtype is the wrapped-number promotion of the tensor and the exponent (`int ** 2`
    /// stays int64 and exact, `int ** 2.0` is float32, `bool ** True` stays bool); an
    /// integer tensor to a negative integer power is an error.
    pub fn pow_scalar(&self, exponent: Scalar) -> Result<Tensor> {
        let dtype = exponent.result_type_with(self.dtype);
        if !dtype.is_floating_point() {
            let e = match exponent {
                Scalar::Int(e) => e,
                Scalar::Bool(e) => e as i64,
                Scalar::Float(_) => unreachable!("rustgrad internal error: float exponent"),
            };
            if e < 0 {
                return Err(Error::InvalidArgument(
                    "Integers to negative integer powers are not allowed.".into(),
                ));
            }
            // PyTorch converts the exponent to the result dtype with its range check.
            exponent.check_fits(dtype)?;
            // Computed in int64 and truncated: the same bits as wrapping in the dtype.
            let ints = self.to_dtype(DType::I64)?;
            let v =
                ints.read(|s: &[i64]| elementwise::map1(s, &ints.layout, |x| Num::pow(x, e)))?;
            return Tensor::from_buffer(Buffer::I64(v), ints.shape()).to_dtype(dtype);
        }
        if dtype.is_half() {
            // The 16-bit floats check the exponent's range too (`float16 ** 70000` is
            // an error); float32 and float64 take any exponent.
            exponent.check_fits(dtype)?;
            // ... and PyTorch's kernel takes it in the tensor's dtype: `bfloat16 ** 257`
            // raises to the 256th power.
            let rounded = match dtype {
                DType::F16 => exponent.cast::<crate::dtype::f16>().to_f64(),
                _ => exponent.cast::<crate::dtype::bf16>().to_f64(),
            };
            let exponent = if exponent.to_f64() == rounded {
                exponent
            } else {
                Scalar::Float(rounded)
            };
            return self.to_dtype(dtype)?.via_f32(|t| t.pow_scalar(exponent));
        }
        let src = self.to_dtype(dtype)?;
        let err = || Error::unsupported_dtype("pow", dtype);
        if exponent == Scalar::Int(2) || exponent == Scalar::Float(2.0) {
            return map_elems!(dispatch_float, src, err, |x| x * x);
        }
        map_elems!(dispatch_float, src, err, |x| Num::pow(x, exponent.cast()))
    }

    /// The dtype a binary op computes in (PyTorch's promotion; `/` makes integers float).
    pub fn result_dtype(a: &Tensor, b: &Tensor, op: BinaryOp) -> DType {
        let promoted = Tensor::result_type(a, b);
        match (op, promoted) {
            (BinaryOp::Div, d) if !d.is_floating_point() => DType::default_float(),
            (_, DType::Bool)
                if op != BinaryOp::Add && op != BinaryOp::Mul && op != BinaryOp::Pow =>
            {
                DType::I64
            }
            _ => promoted,
        }
    }

    /// An elementwise binary op with broadcasting and type promotion.
    pub fn binary(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        let out_shape = shape::broadcast_shapes(self.shape(), other.shape())?;
        let dtype = Tensor::result_dtype(self, other, op);
        check_allocation(shape::checked_numel(&out_shape)?, dtype)?;
        if op == BinaryOp::Pow && dtype == DType::Bool {
            // PyTorch has no bool pow kernel (`bool_tensor ** True` is `pow_scalar`).
            return Err(Error::unsupported_dtype("pow", DType::Bool));
        }
        if op == BinaryOp::Sub {
            match (self.dtype, other.dtype) {
                (DType::Bool, DType::Bool) => return Err(Error::not_implemented_for_dtype(
                    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
                )),
                (DType::Bool, _) | (_, DType::Bool) => return Err(Error::not_implemented_for_dtype(
                    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
                )),
                _ => {}
            }
        }
        // Bool add/mul compute as integers and convert back (logical or / and); the
        // 16-bit floats compute in float32 and round back once (Note [Storage dtypes]).
        let compute = if dtype == DType::Bool {
            DType::I64
        } else {
            dtype.compute_dtype()
        };
        // A 0-d second operand of mul and div keeps its value on the 16-bit floats.
        let exact =
            dtype.is_half() && other.dim() == 0 && matches!(op, BinaryOp::Mul | BinaryOp::Div);
        let a = self.cast_operand(dtype, compute, false)?;
        let b = other.cast_operand(dtype, compute, exact)?;
        let la = a.layout.broadcast_to(&out_shape)?;
        let lb = b.layout.broadcast_to(&out_shape)?;
        let err = || Error::unsupported_dtype(op.name(), compute);
        let out = dispatch_num!(compute, err, T => {
            let v: Vec<T> = a.read2(&b, |sa: &[T], sb: &[T]| match op {
                BinaryOp::Add => elementwise::map2(sa, &la, sb, &lb, |x: T, y| x.add_w(y)),
                BinaryOp::Sub => elementwise::map2(sa, &la, sb, &lb, |x: T, y| x.sub_w(y)),
                BinaryOp::Mul => elementwise::map2(sa, &la, sb, &lb, |x: T, y| x.mul_w(y)),
                BinaryOp::Div => elementwise::map2(sa, &la, sb, &lb, |x: T, y| Num::div(x, y)),
                BinaryOp::Pow => elementwise::map2(sa, &la, sb, &lb, |x: T, y| Num::pow(x, y)),
            })?;
            Tensor::from_buffer(T::into_buffer(v), &out_shape)
        });
        out.to_dtype(dtype)
    }

    /// Softmax, or with `log` log-softmax, along dim `d` (an index below `dim()`, or 0
    /// for a 0-d tensor) in one fused kernel (`kernels::softmax`, Note [Vectorised
    /// exp]); the 16-bit floats compute in float32. `kernel` names the op in the error
    /// for a non-float dtype.
    pub(crate) fn softmax_dim(&self, d: usize, log: bool, kernel: &'static str) -> Result<Tensor> {
        if self.dtype.is_half() {
            return self.via_f32(|x| x.softmax_dim(d, log, kernel));
        }
        let x = self.contiguous()?;
        let dims = x.shape();
        let block = crate::kernels::softmax::SoftmaxBlock {
            outer: dims[..d.min(dims.len())].iter().product(),
            size: dims.get(d).copied().unwrap_or(1),
            inner: dims[(d + 1).min(dims.len())..].iter().product(),
        };
        let (start, n) = (x.layout.offset(), x.numel());
        let err = || Error::unsupported_dtype(kernel, x.dtype);
        dispatch_float!(x.dtype, err, T => {
            let v = x.read(|s: &[T]| crate::kernels::softmax::softmax(&s[start..start + n], block, log))?;
            Ok(Tensor::from_buffer(T::into_buffer(v), dims))
        })
    }

    /// An elementwise comparison with broadcasting; the result is a bool tensor.
    // The comparison closures are instantiated for every dtype, bool included.
    #[allow(clippy::bool_comparison)]
    pub fn compare(&self, other: &Tensor, op: CmpOp) -> Result<Tensor> {
        let out_shape = shape::broadcast_shapes(self.shape(), other.shape())?;
        let dtype = Tensor::result_type(self, other);
        check_allocation(shape::checked_numel(&out_shape)?, dtype)?;
        let a = self.to_dtype(dtype)?;
        let b = other.to_dtype(dtype)?;
        let la = a.layout.broadcast_to(&out_shape)?;
        let lb = b.layout.broadcast_to(&out_shape)?;
        let v: Vec<bool> = dispatch!(dtype, T => a.read2(&b, |sa: &[T], sb: &[T]| match op {
            CmpOp::Eq => elementwise::map2(sa, &la, sb, &lb, |x, y| x == y),
            CmpOp::Ne => elementwise::map2(sa, &la, sb, &lb, |x, y| x != y),
            CmpOp::Lt => elementwise::map2(sa, &la, sb, &lb, |x, y| x < y),
            CmpOp::Le => elementwise::map2(sa, &la, sb, &lb, |x, y| x <= y),
            CmpOp::Gt => elementwise::map2(sa, &la, sb, &lb, |x, y| x > y),
            CmpOp::Ge => elementwise::map2(sa, &la, sb, &lb, |x, y| x >= y),
        }))?;
        Ok(Tensor::from_buffer(Buffer::Bool(v), &out_shape))
    }

    /// `cond ? a : b` elementwise, with broadcasting; `cond` must be bool.
    pub fn where_cond(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        if cond.dtype != DType::Bool {
            return Err(Error::dtype(
                "where",
                format!(
                "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                cond.dtype.scalar_type_name()
            ),
            ));
        }
        let shape = shape::broadcast_shapes(
            &shape::broadcast_shapes(cond.shape(), a.shape())?,
            b.shape(),
        )?;
        let dtype = Tensor::result_type(a, b);
        check_allocation(shape::checked_numel(&shape)?, dtype)?;
        // A wrapped number must fit the result dtype (PyTorch's "value cannot be
        // converted to type uint8_t without overflow"); the 16-bit floats round instead.
        for t in [a, b] {
            if t.wrapped && !dtype.is_half() {
                t.item()?.check_fits(dtype)?;
            }
        }
        let (a, b) = (a.to_dtype(dtype)?, b.to_dtype(dtype)?);
        let (lc, la, lb) = (
            cond.layout.broadcast_to(&shape)?,
            a.layout.broadcast_to(&shape)?,
            b.layout.broadcast_to(&shape)?,
        );
        // Three distinct storages (aliases are copied), read-locked in address order
        // (Note [Locking of storages]).
        let a = if a.shares_storage(&b) || a.shares_storage(cond) {
            a.deep_clone()?
        } else {
            a
        };
        let b = if b.shares_storage(cond) {
            b.deep_clone()?
        } else {
            b
        };
        dispatch!(dtype, T => {
            let v: Vec<T> = with_read_locks(cond, &a, &b, |sc: &[bool], sa: &[T], sb: &[T]| {
                elementwise::map3((sc, &lc), (sa, &la), (sb, &lb), |c, x, y| if c { x } else { y })
            })?;
            Ok(Tensor::from_buffer(T::into_buffer(v), &shape))
        })
    }

    /// Clamps into `[min, max]` (either bound optional). The result dtype is the
    /// wrapped-number promotion of the tensor and the bounds (an int64 tensor clamped to
    /// 2.5 is float32); a NaN element or a NaN bound gives NaN, as in PyTorch.
    pub fn clamp(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::InvalidArgument(
                "torch.clamp: At least one of 'min' or 'max' must not be None".into(),
            ));
        }
        let mut operands: SmallVec<[(DType, Tier); 3]> = SmallVec::new();
        operands.push((self.dtype, Tier::Dim));
        for bound in [min, max].into_iter().flatten() {
            operands.push((bound.wide_dtype(), Tier::Wrapped));
        }
        let dtype = DType::result_type_of(&operands);
        if dtype == DType::Bool {
            let name = if min.is_some() {
                "clamp_min_scalar_cpu"
            } else {
                "clamp_max_scalar_cpu"
            };
            return Err(Error::unsupported_dtype(name, DType::Bool));
        }
        let (min, max) = (
            clamp_bound(min, dtype, true)?,
            clamp_bound(max, dtype, false)?,
        );
        if dtype.is_half() {
            return self.to_dtype(dtype)?.via_f32(|t| t.clamp(min, max));
        }
        let src = self.to_dtype(dtype)?;
        let err = || Error::unsupported_dtype("clamp", dtype);
        dispatch_num!(dtype, err, T => {
            let (lo, hi) = (min.map(Scalar::cast::<T>), max.map(Scalar::cast::<T>));
            // `v != v` only for NaN: a NaN element or bound wins.
            #[allow(clippy::eq_op)]
            let v = src.read(|s: &[T]| elementwise::map1(s, &src.layout, |x: T| {
                let x = match lo { Some(l) if x == x && (l != l || x < l) => l, _ => x };
                match hi { Some(h) if x == x && (h != h || x > h) => h, _ => x }
            }))?;
            Ok(Tensor::from_buffer(T::into_buffer(v), src.shape()))
        })
    }

    /// Sums over `dims` (all dims when empty and `all` is true); bool and every integer
    /// dtype sum to int64, the 16-bit floats in float32 (rounded back).
    pub fn sum_dims(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        let src = match self.dtype {
            DType::F32 | DType::F64 | DType::I64 => self.clone(),
            DType::F16 | DType::BF16 => return self.via_f32(|t| t.sum_dims(dims, keepdim)),
            DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
                self.to_dtype(DType::I64)?
            }
        };
        let mut sorted: Dims = dims.iter().copied().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let out_shape: Dims = (0..src.dim())
            .filter_map(|d| {
                if sorted.contains(&d) {
                    keepdim.then_some(1)
                } else {
                    Some(src.shape()[d])
                }
            })
            .collect();
        let buffer = match src.dtype {
            DType::F32 => Buffer::F32(src.read(|s: &[f32]| reduce::sum(s, &src.layout, &sorted))?),
            DType::F64 => Buffer::F64(src.read(|s: &[f64]| reduce::sum(s, &src.layout, &sorted))?),
            DType::I64 => Buffer::I64(src.read(|s: &[i64]| reduce::sum(s, &src.layout, &sorted))?),
            DType::F16
            | DType::BF16
            | DType::I32
            | DType::I16
            | DType::I8
            | DType::U8
            | DType::Bool => internal_dtype(),
        };
        Ok(Tensor::from_buffer(buffer, &out_shape))
    }

    /// Sums broadcast dims away so the result has `shape` (the reverse of broadcasting).
    pub fn sum_to_size(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let lead = self
            .dim()
            .checked_sub(shape.len())
            .ok_or_else(|| Error::ShapeMismatch {
                op: "sum_to_size",
                message: format!(
                    "size {{{:?}}} is not expandable to size {{{:?}}}.",
                    shape,
                    self.shape()
                ),
            })?;
        let mut dims: Dims = (0..lead).collect();
        for (i, &s) in shape.iter().enumerate() {
            if s == 1 && self.shape()[lead + i] != 1 {
                dims.push(lead + i);
            } else if s != self.shape()[lead + i] {
                return Err(Error::ShapeMismatch {
                    op: "sum_to_size",
                    message: format!(
                        "size {{{:?}}} is not expandable to size {{{:?}}}.",
                        shape,
                        self.shape()
                    ),
                });
            }
        }
        let summed = self.sum_dims(&dims, true)?;
        let target: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        summed.reshape(&target)
    }

    /// Matrix product of two tensors with at least 2 dims each (batch dims broadcast).
    pub fn matmul_nd(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b) = (self, other);
        if a.dim() < 2 || b.dim() < 2 {
            return Err(Error::InvalidArgument(
                "rustgrad internal: matmul_nd needs >= 2 dims".into(),
            ));
        }
        if a.dtype != b.dtype {
            return Err(Error::dtype(
                "matmul",
                format!(
                    "expected m1 and m2 to have the same dtype, but got: {} != {}",
                    a.dtype.cpp_type_name(),
                    b.dtype.cpp_type_name()
                ),
            ));
        }
        let (m, k) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
        let (k2, n) = (b.shape()[b.dim() - 2], b.shape()[b.dim() - 1]);
        if k != k2 {
            // PyTorch folds a matrix product into `mm` and reports it so.
            return Err(Error::ShapeMismatch {
                op: "mm",
                message: format!(
                    "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
                    a.shape()[..a.dim() - 1].iter().product::<usize>(),
                    k,
                    k2,
                    n
                ),
            });
        }
        let batch = shape::broadcast_shapes(&a.shape()[..a.dim() - 2], &b.shape()[..b.dim() - 2])?;
        let mut a_full: Dims = batch.clone();
        a_full.extend_from_slice(&[m, k]);
        let mut b_full: Dims = batch.clone();
        b_full.extend_from_slice(&[k, n]);
        let la = a.layout.broadcast_to(&a_full)?;
        let lb = b.layout.broadcast_to(&b_full)?;
        let nb = batch.len();
        let mut out_shape = batch.clone();
        out_shape.extend_from_slice(&[m, n]);
        check_allocation(shape::checked_numel(&out_shape)?, a.dtype)?;
        // The 16-bit floats multiply in float32 and round back; integers and bool
        // multiply exactly in int64 (wrapping) and truncate back (Note [Storage dtypes]).
        let compute = match a.dtype {
            DType::F32 | DType::F64 => a.dtype,
            DType::F16 | DType::BF16 => DType::F32,
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 => DType::I64,
            DType::Bool => return Err(Error::unsupported_dtype("addmm_impl_cpu_", a.dtype)),
        };
        if compute != a.dtype {
            let (wa, wb) = (a.to_dtype(compute)?, b.to_dtype(compute)?);
            return wa.matmul_nd(&wb)?.to_dtype(a.dtype);
        }
        if compute == DType::I64 {
            let v = a.read2(b, |sa: &[i64], sb: &[i64]| {
                let (oa, ob) = (
                    matmul::MatOperand {
                        data: sa,
                        batch_strides: &la.strides()[..nb],
                        offset: la.offset(),
                        row_stride: la.strides()[nb],
                        col_stride: la.strides()[nb + 1],
                    },
                    matmul::MatOperand {
                        data: sb,
                        batch_strides: &lb.strides()[..nb],
                        offset: lb.offset(),
                        row_stride: lb.strides()[nb],
                        col_stride: lb.strides()[nb + 1],
                    },
                );
                matmul::matmul_i64(&batch, (m, k, n), &oa, &ob)
            })?;
            return Ok(Tensor::from_buffer(Buffer::I64(v), &out_shape));
        }
        let err = || Error::unsupported_dtype("matmul", a.dtype);
        dispatch_float!(a.dtype, err, T => {
            let v: Vec<T> = a.read2(b, |sa: &[T], sb: &[T]| {
                let oa = matmul::MatOperand {
                    data: sa,
                    batch_strides: &la.strides()[..nb],
                    offset: la.offset(),
                    row_stride: la.strides()[nb],
                    col_stride: la.strides()[nb + 1],
                };
                let ob = matmul::MatOperand {
                    data: sb,
                    batch_strides: &lb.strides()[..nb],
                    offset: lb.offset(),
                    row_stride: lb.strides()[nb],
                    col_stride: lb.strides()[nb + 1],
                };
                matmul::matmul(&batch, (m, k, n), &oa, &ob)
            })?;
            Ok(Tensor::from_buffer(T::into_buffer(v), &out_shape))
        })
    }

    // ----- in-place writes ----------------------------------------------------------

    /// Writes `src` (broadcast to this shape, converted to this dtype) into this
    /// tensor's elements; bumps the version counter once.
    pub fn copy_from(&self, src: &Tensor, site: WriteSite) -> Result<()> {
        let src = src
            .broadcast_to(self.shape())
            .map_err(|_| Error::ShapeMismatch {
                op: "copy_",
                message: format!(
                    "The size of tensor a ({:?}) must match the size of tensor b ({:?})",
                    self.shape(),
                    src.shape()
                ),
            })?;
        // One value broadcast everywhere (a scalar, `fill_`): write it, without
        // materialising `numel` copies of it.
        if src.numel() > 0 && src.strides().iter().all(|&st| st == 0) {
            let value = src.with_layout(Layout::new(Dims::new(), Dims::new(), src.layout.offset()));
            return dispatch!(self.dtype, T => {
                let v: T = value.try_to_vec::<T>()?[0];
                self.write_with(site, |dst: &mut [T]| elementwise::fill(dst, &self.layout, v))
            });
        }
        // A source in another storage is read straight into the destination (Note
        // [In-place kernels]); one that aliases it is materialised first, so no read
        // lock of the storage is held while its write lock is taken (Note [Locking of
        // storages]).
        if src.dtype == self.dtype && !self.shares_storage(&src) {
            return dispatch!(self.dtype, T => self.update_from(&src, site, |_, x: T| x));
        }
        dispatch!(self.dtype, T => {
            let values = src.try_to_vec::<T>()?;
            self.write_with(site, |dst: &mut [T]| elementwise::scatter(dst, &self.layout, &values))
        })
    }

    /// `self = self op other` computed straight into this tensor's elements, with no
    /// temporary (Note [In-place kernels]). Applies when that is exactly what `binary`
    /// followed by `copy_from` would write: `op` is `+ - * /`, the result dtype is this
    /// tensor's (which computes in its own dtype, so not bool or a 16-bit float),
    /// `other` is not bool, broadcasts to this shape and lives in another storage, and no two
    /// elements of `self` share memory. Returns `Ok(false)`, having written nothing,
    /// when it does not apply; bumps the version counter once when it does.
    pub(crate) fn binary_in_place(
        &self,
        other: &Tensor,
        op: BinaryOp,
        site: &WriteSite,
    ) -> Result<bool> {
        let dtype = self.dtype;
        // A bool operand takes the general path, which refuses `-` with PyTorch's error.
        if op == BinaryOp::Pow
            || dtype == DType::Bool
            || other.dtype == DType::Bool
            || dtype.compute_dtype() != dtype
            || Tensor::result_dtype(self, other, op) != dtype
            || self.shares_storage(other)
            || !self.layout.is_non_overlapping()
            || shape::broadcast_shapes(self.shape(), other.shape())
                .ok()
                .as_deref()
                != Some(self.shape())
        {
            return Ok(false);
        }
        // Converted before broadcasting: a wrapped scalar stays one element.
        let src = other.to_dtype(dtype)?.broadcast_to(self.shape())?;
        let site = site.clone();
        let err = || Error::unsupported_dtype(op.name(), dtype);
        dispatch_num!(dtype, err, T => match op {
            BinaryOp::Add => self.update_from(&src, site, |x: T, y| x.add_w(y)),
            BinaryOp::Sub => self.update_from(&src, site, |x: T, y| x.sub_w(y)),
            BinaryOp::Mul => self.update_from(&src, site, |x: T, y| x.mul_w(y)),
            BinaryOp::Div => self.update_from(&src, site, |x: T, y| Num::div(x, y)),
            BinaryOp::Pow => return Ok(false),
        })?;
        Ok(true)
    }

    /// `self[i] = f(self[i], src[i])` under this storage's write lock and `src`'s read
    /// lock, taken in storage address order (Note [Locking of storages]); one version
    /// bump. `src` has this tensor's shape and dtype and lives in another storage.
    fn update_from<T: Element>(
        &self,
        src: &Tensor,
        site: WriteSite,
        f: impl Fn(T, T) -> T + Sync + Send,
    ) -> Result<()> {
        debug_assert!(!self.shares_storage(src));
        let update =
            |dst: &mut [T], s: &[T]| elementwise::update(dst, &self.layout, s, &src.layout, &f);
        if src.storage_order_key() < self.storage_order_key() {
            src.read(|s: &[T]| self.write_with(site, |dst: &mut [T]| update(dst, s)))
        } else {
            self.write_with(site, |dst: &mut [T]| src.read(|s: &[T]| update(dst, s)))
        }
    }

    /// Fills every element with `value`; bumps the version counter once. A location
    /// that several elements share (an expanded view) is written once, as PyTorch's
    /// `fill_` allows.
    pub fn fill(&self, value: f64, site: WriteSite) -> Result<()> {
        dispatch!(self.dtype, T => self.write_with(site, |dst: &mut [T]| {
            elementwise::fill(dst, &self.layout, T::from_f64(value))
        }))
    }

    /// Runs `write` on the elements under the storage's write lock (one version bump).
    fn write_with<T: Element>(
        &self,
        site: WriteSite,
        write: impl FnOnce(&mut [T]) -> Result<()>,
    ) -> Result<()> {
        let mut guard = self.storage.write_unversioned();
        self.version_counter().bump(site);
        match T::slice_mut(&mut guard) {
            Some(dst) => write(dst),
            None => internal_dtype(),
        }
    }

    /// PyTorch's memory-overlap checks before an in-place write into `self` that reads
    /// `inputs`: `assert_no_internal_overlap(self)` ("more than one element of the
    /// written-to tensor refers to a single memory location") and, for each input,
    /// `assert_no_partial_overlap` ("some elements of the input tensor and the
    /// written-to tensor refer to a single memory location"). An input that views
    /// exactly the destination's elements in the same order (`a.add_(a)`) is allowed.
    /// O(ndim) per tensor, no allocation. See Note [Overlapping writes].
    pub fn check_write_overlap(&self, inputs: &[&Tensor]) -> Result<()> {
        if self.layout.has_internal_overlap() {
            return Err(Error::InternalOverlap);
        }
        for input in inputs {
            if self.partially_overlaps(input) {
                return Err(Error::PartialOverlap);
            }
        }
        Ok(())
    }

    /// PyTorch's `get_overlap_status(self, other) == Partial`. Only tensors that are
    /// both non-overlapping and dense are compared (otherwise PyTorch says "too hard"
    /// and lets the op run).
    fn partially_overlaps(&self, other: &Tensor) -> bool {
        if !self.shares_storage(other)
            || self.numel() == 0
            || other.numel() == 0
            || !self.layout.is_non_overlapping_and_dense()
            || !other.layout.is_non_overlapping_and_dense()
        {
            return false;
        }
        let (a_begin, b_begin) = (self.layout.offset(), other.layout.offset());
        let (a_end, b_end) = (a_begin + self.numel(), b_begin + other.numel());
        if a_begin == b_begin && a_end == b_end {
            return self.strides() != other.strides();
        }
        a_begin < b_end && b_begin < a_end
    }
}

/// Read-locks three distinct storages in address order (Note [Locking of storages]) and
/// calls `f` with their elements in argument order.
fn with_read_locks<A: Element, B: Element, C: Element, R>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f: impl FnOnce(&[A], &[B], &[C]) -> R,
) -> R {
    let mut order = [
        (a.storage_order_key(), 0usize),
        (b.storage_order_key(), 1),
        (c.storage_order_key(), 2),
    ];
    order.sort_unstable();
    let storages = [a.storage(), b.storage(), c.storage()];
    let g0 = storages[order[0].1].read();
    let g1 = storages[order[1].1].read();
    let g2 = storages[order[2].1].read();
    let mut guards: [Option<&Buffer>; 3] = [None, None, None];
    guards[order[0].1] = Some(&*g0);
    guards[order[1].1] = Some(&*g1);
    guards[order[2].1] = Some(&*g2);
    match (
        guards[0].and_then(A::slice),
        guards[1].and_then(B::slice),
        guards[2].and_then(C::slice),
    ) {
        (Some(sa), Some(sb), Some(sc)) => f(sa, sb, sc),
        _ => internal_dtype(),
    }
}

/// Converts one element between element types as PyTorch's casts do: bool ↔ numbers
/// via 0/1, integers exactly (wrapping into a narrower integer, one rounding into a
/// float), floats through f64 (x86's truncation into integers, see `Element::from_f64`).
#[inline(always)]
pub(crate) fn convert<S: Element, T: Element>(x: S) -> T {
    if T::DTYPE == DType::Bool {
        T::from_bool(x.to_bool())
    } else if !S::DTYPE.is_floating_point() {
        T::from_i64(x.to_i64())
    } else {
        T::from_f64(x.to_f64())
    }
}

/// A float as C++ streams print it in PyTorch's messages: `0`, `1.5`, `inf`, `nan`.
fn fmt_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v}")
    }
}

/// Python's slice clamping for one dim of `size`.
fn slice_bounds(size: usize, start: Option<i64>, end: Option<i64>) -> (usize, usize) {
    let size_i = size as i64;
    let clamp = |v: i64| -> usize {
        let v = if v < 0 { v + size_i } else { v };
        v.clamp(0, size_i) as usize
    };
    let s = start.map_or(0, clamp);
    let e = end.map_or(size, clamp);
    (s, e.max(s))
}

/// A scalar bound of `clamp` for a result of `dtype`, as PyTorch 2.15 takes it: on an
/// integer result an integer bound beyond the dtype's range saturates where it clamps
/// nothing (`uint8.clamp(min=-1)`, `int8.clamp(max=1000)`) and is an error where it
/// would clamp everything ("Clamp min value 300 is outside the representable range of
/// Byte"); on a float result other than float64 an out-of-range finite bound is the
/// conversion error ("value cannot be converted to type c10::Half without overflow").
fn clamp_bound(bound: Option<Scalar>, dtype: DType, is_min: bool) -> Result<Option<Scalar>> {
    let Some(b) = bound else { return Ok(None) };
    if dtype.is_floating_point() {
        b.check_fits(dtype)?;
        return Ok(Some(b));
    }
    let Scalar::Int(v) = b else {
        return Ok(Some(b));
    };
    let (lo, hi) = dtype.int_range();
    let (clamps_nothing, clamps_all) = if is_min {
        (v < lo, v > hi)
    } else {
        (v > hi, v < lo)
    };
    if clamps_all {
        return Err(Error::InvalidArgument(format!(
            "Clamp {} value {} is outside the representable range of {}",
            if is_min { "min" } else { "max" },
            format_g(v as f64),
            dtype.scalar_type_name()
        )));
    }
    Ok(Some(if clamps_nothing {
        Scalar::Int(if is_min { lo } else { hi })
    } else {
        b
    }))
}

/// `v` as C++'s default stream output (`printf("%g")`: six significant digits, the
/// exponent form below 1e-4 and from 1e6), which PyTorch's messages print doubles with.
pub(crate) fn format_g(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim(&format!("{v:.decimals$}"))
    }
}

#[cfg(test)]
mod format_g_tests {
    use super::format_g;

    /// As C's `printf("%g")` (and Python's `'%g'`), which PyTorch's clamp message uses.
    #[test]
    fn format_g_is_printf_g() {
        for (v, want) in [
            (300.0, "300"),
            (-1.0, "-1"),
            (999_999.0, "999999"),
            (1e6, "1e+06"),
            (1_234_567.0, "1.23457e+06"),
            (2_147_483_653.0, "2.14748e+09"),
            (-9.223_372_036_854_776e18, "-9.22337e+18"),
            (0.5, "0.5"),
            (1e-5, "1e-05"),
            (0.000_123_456_7, "0.000123457"),
        ] {
            assert_eq!(format_g(v), want, "{v}");
        }
    }
}
