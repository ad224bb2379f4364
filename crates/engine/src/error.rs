//! The engine's one error type. Every variant carries what a user needs to find the
//! mistake (op, shapes, dtypes, versions); messages contain PyTorch's key phrases.

use crate::dtype::DType;

/// Errors the engine reports to its callers. User-reachable failures are always an
/// `Error`, never a panic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Two shapes cannot be broadcast together.
    #[error("The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at non-singleton dimension {dim}")]
    BroadcastMismatch {
        /// Size of the first operand at the failing dimension.
        size_a: usize,
        /// Size of the second operand at the failing dimension.
        size_b: usize,
        /// The failing (right-aligned) dimension of the output.
        dim: usize,
    },
    /// Shapes that are wrong for an op (matmul inner sizes, expand, ...).
    #[error("{op}: {message}")]
    ShapeMismatch {
        /// The op that failed.
        op: &'static str,
        /// What was wrong, PyTorch's phrasing.
        message: String,
    },
    /// A view or reshape to a shape with another number of elements.
    #[error("shape '{shape:?}' is invalid for input of size {numel}")]
    InvalidShape {
        /// The requested shape as given (may contain -1).
        shape: Vec<i64>,
        /// The number of elements of the input.
        numel: usize,
    },
    /// A view whose strides cannot express the requested shape.
    #[error("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")]
    NonViewable,
    /// A dimension argument outside `[-ndim, ndim-1]`.
    #[error("Dimension out of range (expected to be in range of [{min}, {max}], but got {dim})")]
    DimOutOfRange {
        /// The dimension given.
        dim: i64,
        /// Smallest valid dimension.
        min: i64,
        /// Largest valid dimension.
        max: i64,
    },
    /// A dimension argument to a 0-d tensor where PyTorch does not wrap scalars
    /// (`size(dim)`, `stride(dim)`).
    #[error("Dimension specified as {dim} but tensor has no dimensions")]
    NoDimensions {
        /// The dimension given.
        dim: i64,
    },
    /// An index outside a dimension.
    #[error("index {index} is out of bounds for dimension {dim} with size {size}")]
    IndexOutOfRange {
        /// The index given.
        index: i64,
        /// The dimension indexed.
        dim: usize,
        /// The size of that dimension.
        size: usize,
    },
    /// An index error with PyTorch's own message (`index out of range in self`, a bool
    /// mask of the wrong shape, a reduction over an empty dim, ...), raised as
    /// IndexError.
    #[error("{0}")]
    Index(String),
    /// An op that does not support a dtype, or two dtypes that do not fit together.
    #[error("{op}: {message}")]
    DType {
        /// The op that failed.
        op: &'static str,
        /// What was wrong, PyTorch's phrasing.
        message: String,
    },
    /// An op with no kernel for a dtype: PyTorch raises these as NotImplementedError
    /// (`"abs_cpu" not implemented for 'Bool'`).
    #[error("{0}")]
    NoKernel(String),
    /// An in-place op whose result dtype cannot be written into the destination.
    #[error("result type {from} can't be cast to the desired output type {to}")]
    CastError {
        /// The dtype of the computed result.
        from: &'static str,
        /// The dtype of the destination.
        to: &'static str,
    },
    /// A tensor too large to allocate.
    #[error("DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes.")]
    OutOfMemory {
        /// The size of the failed allocation (saturated at `usize::MAX`).
        bytes: usize,
    },
    /// A product or sum of sizes, strides or offsets that does not fit in an `i64`
    /// (PyTorch's `safe_compute_numel`). See Note [Checked size arithmetic].
    #[error("numel: integer multiplication overflow")]
    NumelOverflow,
    /// A new tensor whose size in bytes does not fit in an `i64` (PyTorch's
    /// `computeStorageNbytes`).
    #[error("Storage size calculation overflowed with sizes={sizes:?}")]
    StorageSizeOverflow {
        /// The requested sizes.
        sizes: Vec<usize>,
    },
    /// A strided layout whose storage size in bytes (offset + 1 + Σ (size−1)·stride, times
    /// the item size) does not fit in an `i64` (PyTorch's `computeStorageNbytes`).
    #[error("Storage size calculation overflowed with sizes={sizes:?} and strides={strides:?}")]
    StridedStorageSizeOverflow {
        /// The layout's sizes.
        sizes: Vec<usize>,
        /// The layout's strides.
        strides: Vec<usize>,
    },
    /// A layout that reaches outside the storage it is applied to. Unreachable through
    /// the tensor API; kernels report it instead of reading out of bounds.
    #[error("setStorage: sizes {sizes:?}, strides {strides:?}, storage offset {offset} require a storage of {needed} elements, but the storage has {len}")]
    OutOfBounds {
        /// The layout's sizes.
        sizes: Vec<usize>,
        /// The layout's strides.
        strides: Vec<usize>,
        /// The layout's storage offset.
        offset: usize,
        /// One past the largest element index it reaches (saturated).
        needed: usize,
        /// The storage length.
        len: usize,
    },
    /// An in-place write to a tensor whose elements share memory (PyTorch's
    /// `assert_no_internal_overlap`).
    #[error("unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.")]
    InternalOverlap,
    /// An in-place write whose input partly overlaps the destination (PyTorch's
    /// `assert_no_partial_overlap`).
    #[error("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.")]
    PartialOverlap,
    /// A bad value for an argument (e.g. a negative size).
    #[error("{0}")]
    InvalidArgument(String),
    /// An argument of the wrong type (raised as TypeError by the binding).
    #[error("{0}")]
    Type(String),
    /// `item()` on a tensor that does not hold exactly one element.
    #[error("a Tensor with {numel} elements cannot be converted to Scalar")]
    NotAScalar {
        /// Its number of elements.
        numel: usize,
    },
    /// `backward()` on a non-scalar without an explicit gradient.
    #[error("grad can be implicitly created only for scalar outputs")]
    ImplicitGradNonScalar,
    /// Backward reached a node whose saved tensors were already freed.
    #[error("Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.")]
    BackwardTwice,
    /// `backward()` on a tensor outside any graph.
    #[error("element {index} of tensors does not require grad and does not have a grad_fn")]
    DoesNotRequireGrad {
        /// Which root.
        index: usize,
    },
    /// A gradient whose shape differs from its output's.
    #[error("Mismatch in shape: grad_output[{index}] has a shape of torch.Size({grad_shape:?}) and output[{index}] has a shape of torch.Size({output_shape:?}).")]
    GradShapeMismatch {
        /// Which root.
        index: usize,
        /// The gradient's shape.
        grad_shape: Vec<usize>,
        /// The output's shape.
        output_shape: Vec<usize>,
    },
    /// In-place op on a leaf that requires grad while grad mode is on.
    #[error("a leaf Variable that requires grad is being used in an in-place operation.")]
    LeafInplace,
    /// In-place op on a view of a leaf that requires grad.
    #[error(
        "a view of a leaf Variable that requires grad is being used in an in-place operation."
    )]
    ViewOfLeafInplace,
    /// Recorded in-place op on a view that was created under no_grad.
    #[error("A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).")]
    NoGradViewInplace,
    /// Recorded in-place op on an output of a function that returns several views
    /// (`split`, `chunk`, `unbind`) or on a view of one. The text is the first sentence
    /// ("Output 0 of Split is a view and is being modified inplace.").
    #[error("{0} This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.")]
    MultiOutputViewInplace(String),
    /// Recorded in-place op on an input a custom Function returned as-is (or a view of
    /// it). The text is the first sentence ("Output 0 of F is a view and is being
    /// modified inplace.").
    #[error("{0} This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.")]
    CustomFunctionViewInplace(String),
    /// A saved tensor was written in place after being saved.
    #[error("one of the variables needed for gradient computation has been modified by an inplace operation: [{type_name} {shape:?}]{origin}, is at version {version}; expected version {expected} instead.{site}")]
    ModifiedByInplace {
        /// Legacy type name, e.g. `torch.FloatTensor`.
        type_name: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// ", which is output 0 of ExpBackward0" or empty.
        origin: String,
        /// Its version now.
        version: u64,
        /// Its version when saved.
        expected: u64,
        /// " The in-place write happened at file:line." or empty.
        site: String,
    },
    /// Setting requires_grad (`requires_grad_()`) on a tensor whose dtype cannot hold
    /// gradients.
    #[error("only Tensors of floating point dtype can require gradients")]
    RequiresGradNonFloat,
    /// Making a leaf that requires grad (a factory's `requires_grad=True`) of a dtype
    /// that cannot hold gradients; PyTorch's factories word it differently from
    /// `requires_grad_()`.
    #[error("Only Tensors of floating point and complex dtype can require gradients")]
    NewLeafRequiresGradNonFloat,
    /// `x.data = src` with a non-floating `src` while `x` requires grad.
    #[error(
        "data set to a tensor that requires gradients must be floating point or complex dtype"
    )]
    DataRequiresGradNonFloat,
    /// Changing requires_grad of a non-leaf.
    #[error("you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")]
    NonLeafRequiresGrad,
    /// Something rustgrad does not implement yet, said plainly rather than computed wrong.
    #[error("{0}")]
    NotImplemented(String),
    /// Anomaly detection with `check_nan` found a NaN in a gradient a node returned
    /// (Note [Anomaly detection]).
    #[error("Function '{name}' returned nan values in its {index}th output.")]
    AnomalyNan {
        /// The node's name (`MulBackward0`).
        name: &'static str,
        /// Which of its gradients (input number of the forward op).
        index: usize,
    },
    /// A graph node handle that outlived its node.
    #[error("rustgrad: stale autograd node handle (the node was freed)")]
    StaleNode,
    /// An error raised by user code the engine called (a hook, a custom Function's
    /// backward), carried through the scheduler unchanged so the caller of backward can
    /// re-raise the original. See Note [Errors from callbacks].
    #[error("{0}")]
    External(ExternalError),
}

/// An opaque error from a callback: the message, and the original error object for the
/// layer that raised it to take back (`payload().downcast_ref`).
#[derive(Clone)]
pub struct ExternalError {
    message: String,
    payload: std::sync::Arc<dyn std::any::Any + Send + Sync>,
}

impl ExternalError {
    /// Wraps `payload` (the caller's own error object) with its message.
    pub fn new(message: impl Into<String>, payload: impl std::any::Any + Send + Sync) -> Self {
        ExternalError {
            message: message.into(),
            payload: std::sync::Arc::new(payload),
        }
    }

    /// The original error object.
    pub fn payload(&self) -> &(dyn std::any::Any + Send + Sync) {
        &*self.payload
    }
}

impl std::fmt::Display for ExternalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::fmt::Debug for ExternalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ExternalError({:?})", self.message)
    }
}

/// Two external errors are equal when they carry the same error object.
impl PartialEq for ExternalError {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.payload, &other.payload)
    }
}

/// The engine's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A dtype error for `op`.
    pub(crate) fn dtype(op: &'static str, message: impl Into<String>) -> Self {
        Error::DType {
            op,
            message: message.into(),
        }
    }

    /// The error PyTorch raises for an op that has no kernel for `dtype`.
    pub(crate) fn unsupported_dtype(op: &'static str, dtype: DType) -> Self {
        Error::NoKernel(format!(
            "\"{op}\" not implemented for '{}'",
            dtype.scalar_type_name()
        ))
    }

    /// A dtype PyTorch refuses for an op with a message of its own (NotImplementedError).
    pub(crate) fn not_implemented_for_dtype(message: &str) -> Self {
        Error::NoKernel(message.into())
    }
}
