//! The op registry: every `Tensor` op of the binding listed once, in one table
//! (Note [Op registry]).
//!
//! Each entry names the op (its Python name), its family (the file
//! `crates/python/src/ops/<family>.rs` that holds its helpers) and its *form*: the
//! signature shape that [`shell!`] turns into the `#[pymethods]` method, with the
//! engine call the entry gives. `manual` marks an op whose method is written by hand
//! in its family file (a signature no form covers). From the same table come
//! [`OPS`], which `rustgrad._rustgrad._op_registry()` returns and from which
//! docs/ops.md, the fuzzer's and the bad-input sweep's op coverage are derived.
//!
//! Adding an op: its forward and rule in the engine's family file, and one entry
//! here (plus a helper in the binding's family file when no form fits).
//!
//! The module-level op functions (`_rustgrad._conv`, `_batch_norm`, ... behind
//! `rustgrad.nn.functional`) are the table's second section, [`FUNCTIONS`]
//! (`function_table!`): each is a `#[pyfunction]` written and registered by its family
//! file (`manual`), listed here with its family and ONNX operator.

use super::reduce::whole_or_dims;
use crate::errors::IntoPyResult;
use crate::tensor::{binary, compare_method, new_tensor, reflected, scaled_operand, subtrahend};
use crate::PyTensor;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyModule, PyTuple};
use rustgrad::kernels::logical::{FloatClass, LogicalOp};
use rustgrad::kernels::math::{MathBinaryOp, MathOp};
use rustgrad::tensor::CmpOp;
use rustgrad::Variable;

/// An object argument, as the index helpers take it (keeps the table's entries short).
type Obj<'py> = &'py Bound<'py, PyAny>;

/// One row of the registry: what `_op_registry()` reports for a method.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpEntry {
    /// The Python method name (`sum`, `__add__`, `addmm_`).
    pub name: &'static str,
    /// The binding family file (`reduce`, `binary`, ...).
    pub family: &'static str,
    /// The signature form that writes the method, or `manual`.
    pub form: &'static str,
    /// The ONNX operator the op maps to directly, where there is one.
    pub onnx: Option<&'static str>,
    /// For an in-place method written by the same entry (`addmm_`), the
    /// out-of-place op's name (`addmm`).
    pub in_place_of: Option<&'static str>,
}

/// `Some(name)` for an entry that gives `onnx "Name"`.
const fn onnx(names: &[&'static str]) -> Option<&'static str> {
    match names {
        [name] => Some(*name),
        _ => None,
    }
}

/// The Python name of an entry: `r#where` is `where`.
const fn python_name(name: &'static str) -> &'static str {
    match name.as_bytes() {
        [b'r', b'#', ..] => name.split_at(2).1,
        _ => name,
    }
}

/// The `#[pymethods]` method(s) of one registry entry, by form. Each arm fixes the
/// Python signature shape and the argument conversion, and calls the family's helper
/// with the entry's engine call; the argument parsing, error messages and GIL release
/// (`maybe_detach`) are the helper's, shared by every op of the form.
macro_rules! shell {
    // Wraps a form's method(s) in a `#[pymethods]` block, the entry's doc on the first.
    (@method [$($doc:literal)*] $($item:tt)*) => {
        #[pymethods]
        impl PyTensor {
            $(#[doc = $doc])*
            $($item)*
        }
    };

    // `(other)` through the family's helper, `self.$helper(py, other, $arg)`, and with
    // `[name_]` its in-place form, `Self::$helper_(slf, other, $arg)`.
    (@other $name:ident [] [$($doc:literal)*] $helper:ident, $helper_:ident, $arg:expr) => {
        shell!(@method [$($doc)*]
            fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
                self.$helper(py, other, $arg)
            }
        );
    };
    (@other $name:ident [$in_place:ident] [$($doc:literal)*]
        $helper:ident, $helper_:ident, $arg:expr
    ) => {
        shell!(@other $name [] [$($doc)*] $helper, $helper_, $arg);
        shell!(@method []
            fn $in_place<'py>(
                slf: Bound<'py, Self>,
                other: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, Self>> {
                Self::$helper_(slf, other, $arg)
            }
        );
    };

    // Written by hand in the family file.
    (manual $name:ident [] [$($doc:literal)*] {}) => {};

    // ---- reduce: `(dim=None, keepdim=False, *, dtype=None)` over an int or a tuple
    // of dims (`reduce_dims_dtype`) or one optional int dim (`reduce_opt_dim_dtype`),
    // and the same without `dtype`.
    (reduce_dims_dtype $name:ident [] [$($doc:literal)*] { keepdim = $kd:ident; $call:expr }) => {
        shell!(@keepdim_dtype reduce_dims $name [$($doc)*] $kd $call);
    };
    (reduce_opt_dim_dtype $name:ident [] [$($doc:literal)*] {
        keepdim = $kd:ident; $call:expr
    }) => {
        shell!(@keepdim_dtype reduce_opt_dim $name [$($doc)*] $kd $call);
    };
    (reduce_dims $name:ident [] [$($doc:literal)*] { keepdim = $kd:ident; $call:expr }) => {
        shell!(@keepdim reduce_dims $name [$($doc)*] $kd $call);
    };
    (reduce_opt_dim $name:ident [] [$($doc:literal)*] { keepdim = $kd:ident; $call:expr }) => {
        shell!(@keepdim reduce_opt_dim $name [$($doc)*] $kd $call);
    };
    (@keepdim_dtype $helper:ident $name:ident [$($doc:literal)*] $kd:ident $call:expr) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (dim = None, keepdim = false, *, dtype = None))]
            fn $name(
                &self,
                py: Python<'_>,
                dim: Option<&Bound<'_, PyAny>>,
                #[pyo3(from_py_with = crate::flag::$kd)] keepdim: bool,
                dtype: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyTensor>> {
                self.$helper(py, dim, keepdim, dtype, $call)
            }
        );
    };
    (@keepdim $helper:ident $name:ident [$($doc:literal)*] $kd:ident $call:expr) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (dim = None, keepdim = false))]
            fn $name(
                &self,
                py: Python<'_>,
                dim: Option<&Bound<'_, PyAny>>,
                #[pyo3(from_py_with = crate::flag::$kd)] keepdim: bool,
            ) -> PyResult<Py<PyTensor>> {
                self.$helper(py, dim, keepdim, None, $call)
            }
        );
    };
    // `(dim, dtype=None)` or `(dim, *, dtype=None)`: the entry gives the signature.
    (along_dim $name:ident [] [$($doc:literal)*] { signature = $sig:tt; $call:expr }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = $sig)]
            fn $name(
                &self,
                py: Python<'_>,
                dim: &Bound<'_, PyAny>,
                dtype: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyTensor>> {
                self.along_dim(py, dim, dtype, $call)
            }
        );
    };
    // `max` / `min`: `()`, `(dim, keepdim=False)` or `(other)`.
    (extremum $name:ident [] [$($doc:literal)*] { keepdim = $kd:ident }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (dim = None, keepdim = false))]
            fn $name(
                &self,
                py: Python<'_>,
                dim: Option<&Bound<'_, PyAny>>,
                #[pyo3(from_py_with = crate::flag::$kd)] keepdim: bool,
            ) -> PyResult<Py<PyAny>> {
                self.extremum(py, stringify!($name), dim, keepdim)
            }
        );
    };
    // `var` / `std`: `(dim=None, unbiased=None, keepdim=False, *, correction=None)`.
    (corrected $name:ident [] [$($doc:literal)*] {
        unbiased = $ub:ident, keepdim = $kd:ident; $call:expr
    }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (
                dim = None, unbiased = None, keepdim = false, *, correction = None
            ))]
            fn $name(
                &self,
                py: Python<'_>,
                dim: Option<&Bound<'_, PyAny>>,
                #[pyo3(from_py_with = crate::flag::$ub)] unbiased: Option<bool>,
                #[pyo3(from_py_with = crate::flag::$kd)] keepdim: bool,
                correction: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyTensor>> {
                self.corrected(py, stringify!($name), dim, unbiased, keepdim, correction, $call)
            }
        );
    };

    // ---- binary: `(other)` operators, returning NotImplemented for other types ---
    (operator $name:ident [] [$($doc:literal)*] { $helper:ident; $call:expr }) => {
        shell!(@method [$($doc)*]
            fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                $helper(py, &self.var, other, $call)
            }
        );
    };
    // `eq`, `lt`, ...: a TypeError for other types.
    (compare $name:ident [] [$($doc:literal)*] { $op:ident }) => {
        shell!(@method [$($doc)*]
            fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                compare_method(py, &self.var, other, CmpOp::$op)
            }
        );
    };
    // `(other)`: a tensor or a number.
    (with_operand $name:ident [] [$($doc:literal)*] { $call:expr }) => {
        shell!(@other $name [] [$($doc)*] with_operand, with_operand, $call);
    };
    // `(other, *, alpha=None)`.
    (with_alpha $name:ident [] [$($doc:literal)*] { $operand:ident; $call:expr }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (other, *, alpha = None))]
            fn $name(
                &self,
                py: Python<'_>,
                other: &Bound<'_, PyAny>,
                alpha: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyTensor>> {
                self.with_alpha(py, other, alpha, $operand, $call)
            }
        );
    };
    // `(other, *, rounding_mode=None)`.
    (divide $name:ident [] [$($doc:literal)*] {}) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (other, *, rounding_mode = None))]
            fn $name(
                &self,
                py: Python<'_>,
                other: &Bound<'_, PyAny>,
                rounding_mode: Option<&str>,
            ) -> PyResult<Py<PyTensor>> {
                self.div_any(py, other, rounding_mode)
            }
        );
    };
    // `(other)` of a `MathBinaryOp`, and with `name / name_` its in-place form.
    (math_binary $name:ident [$($in_place:ident)?] [$($doc:literal)*] { $op:ident }) => {
        shell!(@other $name [$($in_place)?] [$($doc)*]
            math_binary, math_binary_in_place, MathBinaryOp::$op);
    };

    // ---- linalg: `@` with a tensor (NotImplemented for anything else) ------------
    (tensor_operator $name:ident [] [$($doc:literal)*] { $helper:ident; $call:expr }) => {
        shell!(@method [$($doc)*]
            fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                if other.cast::<PyTensor>().is_err() {
                    return Ok(py.NotImplemented());
                }
                $helper(py, &self.var, other, $call)
            }
        );
    };
    // `(other)` with a tensor `other` named as PyTorch names it (`mat2`, `vec`, ...).
    (product $name:ident [] [$($doc:literal)*] { $other:ident; $call:expr }) => {
        shell!(@method [$($doc)*]
            fn $name(
                &self,
                py: Python<'_>,
                $other: &Bound<'_, PyTensor>,
            ) -> PyResult<Py<PyTensor>> {
                super::linalg::product(py, &self.var, $other, $call)
            }
        );
    };
    // `(a, b, *, beta=None, alpha=None)` of the `addmm` family and its in-place form.
    (scaled $name:ident [$in_place:ident] [$($doc:literal)*] { $a:ident, $b:ident; $op:ident }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = ($a, $b, *, beta = None, alpha = None))]
            fn $name(
                &self,
                py: Python<'_>,
                $a: &Bound<'_, PyTensor>,
                $b: &Bound<'_, PyTensor>,
                beta: Option<&Bound<'_, PyAny>>,
                alpha: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyTensor>> {
                let op = super::linalg::ScaledOp::$op;
                super::linalg::scaled(py, &self.var, $a, $b, beta, alpha, op)
            }

            #[doc = concat!("In-place `", stringify!($name), "`.")]
            #[pyo3(signature = ($a, $b, *, beta = None, alpha = None))]
            fn $in_place<'py>(
                slf: Bound<'py, Self>,
                $a: &Bound<'py, PyTensor>,
                $b: &Bound<'py, PyTensor>,
                beta: Option<&Bound<'py, PyAny>>,
                alpha: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, Self>> {
                super::linalg::scaled_(slf, $a, $b, beta, alpha, super::linalg::ScaledOp::$op)
            }
        );
    };

    // ---- an op and its in-place form: one helper of the family file with a final
    // `in_place` (index, ternary).
    (pair $name:ident [$in_place:ident] [$($doc:literal)*] {
        signature = $sig:tt; $family:ident::$helper:ident($($arg:ident: $ty:ty),* $(,)?)
    }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = $sig)]
            fn $name(slf: &Bound<'_, Self>, $($arg: $ty),*) -> PyResult<Py<PyAny>> {
                super::$family::$helper(slf, $($arg,)* false)
            }

            #[doc = concat!("In-place `", stringify!($name), "`.")]
            #[pyo3(signature = $sig)]
            fn $in_place(slf: &Bound<'_, Self>, $($arg: $ty),*) -> PyResult<Py<PyAny>> {
                super::$family::$helper(slf, $($arg,)* true)
            }
        );
    };

    // ---- unary: `()`, and with `name / name_` its in-place form -------------------
    // A `Variable` method, with the GIL released for large tensors.
    (elementwise $name:ident [$($in_place:ident)?] [$($doc:literal)*] { $op:ident }) => {
        shell!(@method [$($doc)*]
            fn $name(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
                self.elementwise(py, Variable::$op)
            }
        );
        $(shell!(unary_ $in_place [] [] { $op });)?
    };
    // A `Variable` method called with the GIL held.
    (direct $name:ident [$($in_place:ident)?] [$($doc:literal)*] { $op:ident }) => {
        shell!(@method [$($doc)*]
            fn $name(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
                new_tensor(py, self.var.$op().py()?)
            }
        );
        $(shell!(unary_ $in_place [] [] { $op });)?
    };
    // A `MathOp` (Note [Op families]).
    (math $name:ident [$($in_place:ident)?] [$($doc:literal)*] { $op:ident }) => {
        shell!(@method [$($doc)*]
            fn $name(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
                self.math(py, MathOp::$op)
            }
        );
        $(shell!(math_ $in_place [] [] { $op });)?
    };
    // In-place forms: `Variable::unary_` of a `Variable` method, or a `MathOp`.
    (unary_ $name:ident [] [$($doc:literal)*] { $op:ident }) => {
        shell!(@method [$($doc)*]
            fn $name(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
                Self::unary_in_place(slf, Variable::$op)
            }
        );
    };
    (math_ $name:ident [] [$($doc:literal)*] { $op:ident }) => {
        shell!(@method [$($doc)*]
            fn $name(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
                Self::math_in_place(slf, MathOp::$op)
            }
        );
    };

    // ---- logical: predicates `()` over the float classes ----------------------------
    (float_class $name:ident [] [$($doc:literal)*] { $class:ident }) => {
        shell!(@method [$($doc)*]
            fn $name(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
                self.class(py, FloatClass::$class)
            }
        );
    };
    // `(other)` of a `LogicalOp`, logical (tensors only) or bitwise (numbers too), with
    // its in-place form.
    (logical $name:ident [$in_place:ident] [$($doc:literal)*] { $op:ident }) => {
        shell!(@other $name [$in_place] [$($doc)*]
            logical_op, logical_op_in_place, LogicalOp::$op);
    };
    (bitwise $name:ident [$in_place:ident] [$($doc:literal)*] { $op:ident }) => {
        shell!(@other $name [$in_place] [$($doc)*]
            bitwise_op, bitwise_op_in_place, LogicalOp::$op);
    };
    // `&=`, `|=`, `^=`.
    (bitwise_assign $name:ident [] [$($doc:literal)*] { $op:ident }) => {
        shell!(@method [$($doc)*]
            fn $name<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<()> {
                Self::bitwise_op_in_place(slf, other, LogicalOp::$op).map(|_| ())
            }
        );
    };
    // `eq_`, `lt_`, ...: `self` becomes 1 where the comparison holds, 0 elsewhere.
    (compare_ $name:ident [] [$($doc:literal)*] { $op:ident }) => {
        shell!(@method [$($doc)*]
            fn $name<'py>(
                slf: Bound<'py, Self>,
                other: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, Self>> {
                Self::compare_in_place(slf, other, CmpOp::$op, stringify!($name))
            }
        );
    };

    // ---- copy: `t.float()` and the like (the tensor itself when it has the dtype) --
    (convert $name:ident [] [$($doc:literal)*] { $dtype:ident }) => {
        shell!(@method [$($doc)*]
            fn $name(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
                super::copy::convert_dtype(slf, rustgrad::DType::$dtype)
            }
        );
    };

    // ---- ternary: `clamp` / `clip` and their in-place forms ------------------------
    (clamp $name:ident [$in_place:ident] [$($doc:literal)*] {}) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (min = None, max = None))]
            fn $name(
                &self,
                py: Python<'_>,
                min: Option<&Bound<'_, PyAny>>,
                max: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyTensor>> {
                self.clamp_any(py, min, max)
            }

            #[doc = concat!("`", stringify!($name), "` in place.")]
            #[pyo3(signature = (min = None, max = None))]
            fn $in_place<'py>(
                slf: Bound<'py, Self>,
                min: Option<&Bound<'py, PyAny>>,
                max: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, Self>> {
                Self::clamp_any_(slf, min, max)
            }
        );
    };

    // ---- shape: sizes as varargs or one sequence (`(*shape)`) ----------------------
    (sizes_view $name:ident [] [$($doc:literal)*] { $sizes:ident; $call:expr }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (*$sizes))]
            fn $name(
                slf: &Bound<'_, Self>,
                py: Python<'_>,
                $sizes: &Bound<'_, PyTuple>,
            ) -> PyResult<Py<PyTensor>> {
                Self::sizes_view(slf, py, $sizes, $call)
            }
        );
    };
    (with_sizes $name:ident [] [$($doc:literal)*] { $sizes:ident; $call:expr }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (*$sizes))]
            fn $name(&self, py: Python<'_>, $sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
                self.with_sizes(py, $sizes, $call)
            }
        );
    };
    // `tril` / `triu` and their in-place forms: `(diagonal=0)`.
    (triangle $name:ident [$in_place:ident] [$($doc:literal)*] { upper = $upper:literal }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (diagonal = None))]
            fn $name(
                &self,
                py: Python<'_>,
                diagonal: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyTensor>> {
                self.triangle(py, diagonal, $upper)
            }

            #[doc = concat!("In-place `", stringify!($name), "`.")]
            #[pyo3(signature = (diagonal = None))]
            fn $in_place<'py>(
                slf: Bound<'py, Self>,
                diagonal: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, Self>> {
                Self::triangle_(slf, diagonal, $upper)
            }
        );
    };

    // ---- inplace: `(other, *, alpha=None)` in place -----------------------------
    (with_alpha_ $name:ident [] [$($doc:literal)*] { $operand:ident; $call:expr }) => {
        shell!(@method [$($doc)*]
            #[pyo3(signature = (other, *, alpha = None))]
            // `pub`: `+=` / `-=` (inplace.rs) call them.
            pub(crate) fn $name<'py>(
                slf: Bound<'py, Self>,
                other: &Bound<'py, PyAny>,
                alpha: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, Self>> {
                Self::with_alpha_in_place(slf, other, alpha, $operand, $call)
            }
        );
    };
}

/// The registry table: writes every entry's method(s) through [`shell!`] and the
/// rows of [`OPS`], in table order (the order of docs/ops.md).
macro_rules! op_table {
    ($(
        $family:ident {
            $(
                $(#[doc = $doc:literal])*
                $name:ident $(/ $in_place:ident)? : $form:ident $args:tt $(onnx $onnx:literal)?;
            )*
        }
    )*) => {
        $($(
            shell!($form $name [$($in_place)?] [$($doc)*] $args);
        )*)*

        /// Every `Tensor` op of the binding, in table order (an entry that also writes
        /// an in-place method gives a second row for it).
        pub(crate) const OPS: &[OpEntry] = &[$($(
            OpEntry {
                name: python_name(stringify!($name)),
                family: stringify!($family),
                form: stringify!($form),
                onnx: onnx(&[$($onnx)?]),
                in_place_of: None,
            },
            $(OpEntry {
                name: stringify!($in_place),
                family: stringify!($family),
                form: stringify!($form),
                onnx: None,
                in_place_of: Some(stringify!($name)),
            },)?
        )*)*];
    };
}

/// The table's second section: the module-level op functions of the binding, each a
/// `#[pyfunction]` written by hand and registered (`register`) in its family file
/// `crates/python/src/ops/<family>.rs`. Writes the rows of [`FUNCTIONS`], in table
/// order; only the `manual` form exists for functions.
macro_rules! function_table {
    ($(
        $family:ident {
            $(
                $(#[doc = $doc:literal])*
                $name:ident : manual {} $(onnx $onnx:literal)?;
            )*
        }
    )*) => {
        /// Every module-level op function of the binding (`_rustgrad.<name>`), in
        /// table order.
        pub(crate) const FUNCTIONS: &[OpEntry] = &[$($(
            OpEntry {
                name: stringify!($name),
                family: stringify!($family),
                form: "manual",
                onnx: onnx(&[$($onnx)?]),
                in_place_of: None,
            },
        )*)*];
    };
}

/// The registry's rows as a list of dicts (`name`, `family`, `form`, `onnx`,
/// `in_place_of`, `kind`: `method` for a `Tensor` method of [`OPS`], `function` for a
/// module function of [`FUNCTIONS`], listed after the methods; and `signature`: the
/// Python signature as PyO3 writes it, `($self, dim=None, keepdim=False, *,
/// dtype=None)`, None where Python has none or the module lacks the function): the
/// source docs/ops.md and the tests derive their op lists from.
#[pyfunction(pass_module)]
pub(crate) fn _op_registry(module: &Bound<'_, PyModule>) -> PyResult<Py<PyList>> {
    let py = module.py();
    let rows = PyList::empty(py);
    let tensor = py.get_type::<PyTensor>();
    let methods = OPS.iter().map(|op| (op, "method"));
    let functions = FUNCTIONS.iter().map(|op| (op, "function"));
    for (op, kind) in methods.chain(functions) {
        let row = PyDict::new(py);
        let signature = match kind {
            "method" => Some(tensor.getattr(op.name)?),
            _ => module.getattr(op.name).ok(),
        }
        .and_then(|f| f.getattr("__text_signature__").ok())
        .filter(|s| !s.is_none());
        row.set_item("signature", signature)?;
        row.set_item("name", op.name)?;
        row.set_item("family", op.family)?;
        row.set_item("form", op.form)?;
        row.set_item("onnx", op.onnx)?;
        row.set_item("in_place_of", op.in_place_of)?;
        row.set_item("kind", kind)?;
        rows.append(row)?;
    }
    Ok(rows.unbind())
}

op_table! {
    binary {
        __add__: operator { binary; |a, b| a.add(b) } onnx "Add";
        __radd__: operator { binary; |a, b| a.add(b) } onnx "Add";
        __sub__: operator { binary; |a, b| a.sub(b) } onnx "Sub";
        __rsub__: operator { binary; |a, b| a.rsub(b) } onnx "Sub";
        __mul__: operator { binary; |a, b| a.mul(b) } onnx "Mul";
        __rmul__: operator { binary; |a, b| a.mul(b) } onnx "Mul";
        __truediv__: operator { binary; |a, b| a.div(b) } onnx "Div";
        /// `number / self`: PyTorch's `__rdiv__`, `self.reciprocal() * number` (MulBackward0),
        /// whose bits differ from a true division's (`3 / tensor([7.])` is 0.42857146).
        __rtruediv__: operator { binary; |a, b| a.reciprocal()?.mul(b) };
        __pow__: manual {} onnx "Pow";
        __rpow__: manual {} onnx "Pow";
        __eq__: manual {} onnx "Equal";
        __ne__: manual {};
        __lt__: manual {} onnx "Less";
        __le__: manual {} onnx "LessOrEqual";
        __gt__: manual {} onnx "Greater";
        __ge__: manual {} onnx "GreaterOrEqual";
        /// `self + alpha * other`.
        add: with_alpha { scaled_operand; |a, b| a.add(b) } onnx "Add";
        /// `self - alpha * other`.
        sub: with_alpha { subtrahend; |a, b| a.sub(b) } onnx "Sub";
        /// `self * other`.
        mul: with_operand { |a, b| a.mul(b) } onnx "Mul";
        /// `self / other`, rounded when `rounding_mode` is 'trunc' or 'floor'.
        div: divide {} onnx "Div";
        /// Alias of `div`.
        divide: divide {} onnx "Div";
        /// `self / other` (true division).
        true_divide: with_operand { |a, b| a.div(b) } onnx "Div";
        /// `self / other` rounded down (not differentiable, as in PyTorch).
        floor_divide: with_operand { |a, b| a.floor_divide(b) };
        floor_divide_: manual {};
        __floordiv__: operator { binary; |a, b| a.floor_divide(b) };
        __rfloordiv__: operator { reflected; |a, b| a.floor_divide(b) };
        __ifloordiv__: manual {};
        pow: manual {} onnx "Pow";
        atan2 / atan2_: math_binary { Atan2 };
        arctan2 / arctan2_: math_binary { Atan2 };
        maximum: math_binary { Maximum } onnx "Max";
        minimum: math_binary { Minimum } onnx "Min";
        fmax: math_binary { Fmax };
        fmin: math_binary { Fmin };
        fmod / fmod_: math_binary { Fmod } onnx "Mod";
        remainder / remainder_: math_binary { Remainder };
        copysign / copysign_: math_binary { Copysign };
        hypot / hypot_: math_binary { Hypot };
        logaddexp: math_binary { Logaddexp };
        logaddexp2: math_binary { Logaddexp2 };
        xlogy / xlogy_: math_binary { Xlogy };
        /// `rustgrad.special.xlog1py(self, other)` (no Tensor method in PyTorch).
        _xlog1py: math_binary { Xlog1py };
        _xlogy_scalar_self: manual {};
        float_power: manual {};
        float_power_: manual {};
        _float_power_scalar_base: manual {};
        __mod__: manual {};
        /// `other % self`, computed with `other` as a 0-d tensor (PyTorch records no
        /// gradient formula for a number dividend; here the gradient of `self` is defined).
        __rmod__: operator {
            reflected;
            |a, b| a.math_binary(b, MathBinaryOp::Remainder)
        };
        __imod__: manual {};
        eq: compare { Eq } onnx "Equal";
        ne: compare { Ne };
        lt: compare { Lt } onnx "Less";
        le: compare { Le } onnx "LessOrEqual";
        gt: compare { Gt } onnx "Greater";
        ge: compare { Ge } onnx "GreaterOrEqual";
    }
    copy {
        /// Converts to float32 (the tensor itself when it is float32 already).
        float: convert { F32 } onnx "Cast";
        /// Converts to float64 (the tensor itself when it is float64 already).
        double: convert { F64 } onnx "Cast";
        /// Converts to int64 (the tensor itself when it is int64 already).
        long: convert { I64 } onnx "Cast";
        /// Converts to int32 (the tensor itself when it is int32 already).
        int: convert { I32 } onnx "Cast";
        /// Converts to int16 (the tensor itself when it is int16 already).
        short: convert { I16 } onnx "Cast";
        /// Converts to int8 (the tensor itself when it is int8 already).
        char: convert { I8 } onnx "Cast";
        /// Converts to uint8 (the tensor itself when it is uint8 already).
        byte: convert { U8 } onnx "Cast";
        /// Converts to float16, rounding to nearest even (the tensor itself when it is
        /// float16 already; differentiable).
        half: convert { F16 } onnx "Cast";
        /// Converts to bfloat16, rounding to nearest even (the tensor itself when it is
        /// bfloat16 already; differentiable).
        bfloat16: convert { BF16 } onnx "Cast";
        /// Converts to bool (the tensor itself when it is bool already).
        bool: convert { Bool } onnx "Cast";
        contiguous: manual {};
        clone: manual {};
    }
    forms {
        cumsum_: manual {};
        cumprod_: manual {};
    }
    index {
        __getitem__: manual {};
        __setitem__: manual {};
        index_select: manual {} onnx "Gather";
        gather: manual {} onnx "GatherElements";
        /// A copy with `src` (or `value`) written at `index` along `dim`.
        scatter / scatter_: pair {
            signature = (dim, index, src = None, value = None, *, reduce = None);
            index::scatter_any(
                dim: Obj<'_>,
                index: Obj<'_>,
                src: Option<Obj<'_>>,
                value: Option<Obj<'_>>,
                reduce: Option<&str>,
            )
        } onnx "ScatterElements";
        /// A copy with `src` added at `index` along `dim`.
        scatter_add / scatter_add_: pair {
            signature = (dim, index, src);
            index::scatter_add_any(dim: Obj<'_>, index: Obj<'_>, src: Obj<'_>)
        } onnx "ScatterElements";
        /// A copy with `src` reduced into it at `index` along `dim` (`reduce`: `sum`,
        /// `prod`, `mean`, `amax` or `amin`).
        scatter_reduce / scatter_reduce_: pair {
            signature = (dim, index, src, reduce, *, include_self = true);
            index::scatter_reduce_any(
                dim: Obj<'_>,
                index: Obj<'_>,
                src: Obj<'_>,
                reduce: &str,
                include_self: bool,
            )
        } onnx "ScatterElements";
        /// A copy with `alpha * source` added at `index` along `dim`.
        index_add / index_add_: pair {
            signature = (dim, index, source, *, alpha = None);
            index::index_add_any(
                dim: Obj<'_>,
                index: Obj<'_>,
                source: &Bound<'_, PyTensor>,
                alpha: Option<Obj<'_>>,
            )
        };
        /// A copy with `value` at `index` along `dim`.
        index_fill / index_fill_: pair {
            signature = (dim, index, value);
            index::index_fill_any(dim: Obj<'_>, index: Obj<'_>, value: Obj<'_>)
        };
        /// A copy with `value` where the bool `mask` is true.
        masked_fill / masked_fill_: pair {
            signature = (mask, value);
            index::masked_fill_any(mask: Obj<'_>, value: Obj<'_>)
        };
        /// A copy with the slices of `source` copied at `index` along `dim`.
        index_copy / index_copy_: pair {
            signature = (dim, index, source);
            index::index_copy_any(dim: Obj<'_>, index: Obj<'_>, source: Obj<'_>)
        };
        /// A copy with the elements where `mask` is true taken from `source` in order.
        masked_scatter / masked_scatter_: pair {
            signature = (mask, source);
            index::masked_scatter_any(mask: Obj<'_>, source: Obj<'_>)
        };
        put: manual {};
        put_: manual {};
        fill_diagonal_: manual {};
        masked_select: manual {};
        take: manual {};
        _index: manual {};
        index_put_: manual {};
        as_strided: manual {};
        as_strided_: manual {};
        nonzero: manual {} onnx "NonZero";
    }
    inplace {
        /// In-place `self += alpha * other`.
        add_: with_alpha_ { scaled_operand; |v, b| v.add_(b) };
        /// In-place `self -= alpha * other`.
        sub_: with_alpha_ { subtrahend; |v, b| v.sub_(b) };
        mul_: manual {};
        div_: manual {};
        divide_: manual {};
        true_divide_: manual {};
        zero_: manual {};
        fill_: manual {};
        copy_: manual {};
        relu_: manual {};
        __iadd__: manual {};
        __isub__: manual {};
        __imul__: manual {};
        __itruediv__: manual {};
    }
    linalg {
        __matmul__: tensor_operator { binary; |a, b| a.matmul(b) } onnx "MatMul";
        __rmatmul__: tensor_operator { reflected; |a, b| a.matmul(b) } onnx "MatMul";
        /// Matrix product (`@`).
        matmul: product { other; |a, b| a.matmul(b) } onnx "MatMul";
        /// 2-D matrix product.
        mm: product { mat2; |a, b| a.mm(b) } onnx "MatMul";
        /// Batched matrix product of two 3-D tensors.
        bmm: product { mat2; |a, b| a.bmm(b) } onnx "MatMul";
        /// Matrix-vector product.
        mv: product { vec; |a, b| a.mv(b) } onnx "MatMul";
        /// Dot product of two 1-D tensors.
        dot: product { other; |a, b| a.dot(b) };
        /// Outer product of two 1-D tensors.
        outer: product { vec2; |a, b| a.outer(b) };
        /// `beta * self + alpha * (mat1 @ mat2)`.
        addmm / addmm_: scaled { mat1, mat2; Addmm } onnx "Gemm";
        /// `beta * self + alpha * (mat @ vec)`.
        addmv / addmv_: scaled { mat, vec; Addmv };
        /// `beta * self + alpha * (batch1 @ batch2)`, batch by batch.
        baddbmm / baddbmm_: scaled { batch1, batch2; Baddbmm };
        /// `beta * self + alpha * sum_b(batch1[b] @ batch2[b])`.
        addbmm / addbmm_: scaled { batch1, batch2; Addbmm };
        _tensordot: manual {};
        _einsum: manual {} onnx "Einsum";
    }
    logical {
        /// True where the element is NaN.
        isnan: float_class { Nan } onnx "IsNaN";
        /// True where the element is +inf or -inf.
        isinf: float_class { Inf } onnx "IsInf";
        /// True where the element is neither NaN nor infinite.
        isfinite: float_class { Finite };
        /// True where the element is +inf.
        isposinf: float_class { PosInf };
        /// True where the element is -inf.
        isneginf: float_class { NegInf };
        signbit: manual {};
        nan_to_num: manual {};
        nan_to_num_: manual {};
        /// Elementwise logical and (bool result).
        logical_and / logical_and_: logical { And } onnx "And";
        /// Elementwise logical or (bool result).
        logical_or / logical_or_: logical { Or } onnx "Or";
        /// Elementwise logical exclusive or (bool result).
        logical_xor / logical_xor_: logical { Xor } onnx "Xor";
        logical_not: manual {} onnx "Not";
        logical_not_: manual {};
        /// Elementwise bitwise and of bool or int64 tensors (and numbers).
        bitwise_and / bitwise_and_: bitwise { And } onnx "BitwiseAnd";
        /// Elementwise bitwise or.
        bitwise_or / bitwise_or_: bitwise { Or } onnx "BitwiseOr";
        /// Elementwise bitwise exclusive or.
        bitwise_xor / bitwise_xor_: bitwise { Xor } onnx "BitwiseXor";
        bitwise_not: manual {} onnx "BitwiseNot";
        bitwise_not_: manual {};
        __and__: operator { binary; |a, b| a.bitwise(b, LogicalOp::And) };
        __rand__: operator { reflected; |a, b| a.bitwise(b, LogicalOp::And) };
        __or__: operator { binary; |a, b| a.bitwise(b, LogicalOp::Or) };
        __ror__: operator { reflected; |a, b| a.bitwise(b, LogicalOp::Or) };
        __xor__: operator { binary; |a, b| a.bitwise(b, LogicalOp::Xor) };
        __rxor__: operator { reflected; |a, b| a.bitwise(b, LogicalOp::Xor) };
        __iand__: bitwise_assign { And };
        __ior__: bitwise_assign { Or };
        __ixor__: bitwise_assign { Xor };
        __invert__: manual {};
        eq_: compare_ { Eq };
        ne_: compare_ { Ne };
        lt_: compare_ { Lt };
        le_: compare_ { Le };
        gt_: compare_ { Gt };
        ge_: compare_ { Ge };
    }
    reduce {
        /// Sum of all elements, or over `dim` (int or tuple), keeping dims if `keepdim`.
        sum: reduce_dims_dtype {
            keepdim = sum_keepdim;
            |v, dims, keepdim| whole_or_dims(v, dims, keepdim, Variable::sum, Variable::sum_dims)
        } onnx "ReduceSum";
        /// Mean of all elements, or over `dim`.
        mean: reduce_dims_dtype {
            keepdim = mean_keepdim;
            |v, dims, keepdim| whole_or_dims(v, dims, keepdim, Variable::mean, Variable::mean_dims)
        } onnx "ReduceMean";
        /// `max()`: the largest element; `max(dim, keepdim)`: `(values, indices)`.
        max: extremum { keepdim = max_keepdim } onnx "ReduceMax";
        /// `min()`: the smallest element; `min(dim, keepdim)`: `(values, indices)`.
        min: extremum { keepdim = min_keepdim } onnx "ReduceMin";
        /// The largest element over `dim` (int or tuple; every dim by default).
        amax: reduce_dims {
            keepdim = amax_keepdim;
            |v, dims, keepdim| v.amax(dims.unwrap_or_default(), keepdim)
        } onnx "ReduceMax";
        /// The smallest element over `dim` (int or tuple; every dim by default).
        amin: reduce_dims {
            keepdim = amin_keepdim;
            |v, dims, keepdim| v.amin(dims.unwrap_or_default(), keepdim)
        } onnx "ReduceMin";
        /// The index of the largest element (along `dim`, or of the flattened tensor).
        argmax: reduce_opt_dim { keepdim = argmax_keepdim; Variable::argmax } onnx "ArgMax";
        /// The index of the smallest element (along `dim`, or of the flattened tensor).
        argmin: reduce_opt_dim { keepdim = argmin_keepdim; Variable::argmin } onnx "ArgMin";
        /// `softmax` along `dim` (after converting to `dtype` if given).
        softmax: along_dim { signature = (dim, dtype = None); Variable::softmax } onnx "Softmax";
        /// `log_softmax` along `dim` (after converting to `dtype` if given).
        log_softmax: along_dim {
            signature = (dim, dtype = None);
            Variable::log_softmax
        } onnx "LogSoftmax";
        logsumexp: manual {} onnx "ReduceLogSumExp";
        /// Product of all elements, or along `dim` (an int).
        prod: reduce_opt_dim_dtype {
            keepdim = prod_keepdim;
            |v, dim, keepdim| match dim {
                None => v.prod(),
                Some(d) => v.prod_dim(d, keepdim),
            }
        } onnx "ReduceProd";
        /// Variance over `dim` with `correction` (or `unbiased`).
        var: corrected {
            unbiased = var_unbiased, keepdim = var_keepdim_overloaded;
            Variable::var
        };
        /// Standard deviation over `dim` with `correction` (or `unbiased`).
        std: corrected {
            unbiased = std_unbiased, keepdim = std_keepdim_overloaded;
            Variable::std
        };
        _var_mean: manual {};
        /// Running sums along `dim`.
        cumsum: along_dim { signature = (dim, *, dtype = None); Variable::cumsum } onnx "CumSum";
        /// Running products along `dim`.
        cumprod: along_dim { signature = (dim, *, dtype = None); Variable::cumprod };
        norm: manual {};
        /// Sum over `dim` treating NaN as zero.
        nansum: reduce_dims_dtype { keepdim = nansum_keepdim; Variable::nansum };
        /// Mean over `dim` of the elements that are not NaN.
        nanmean: reduce_dims_dtype { keepdim = nanmean_keepdim; Variable::nanmean };
        /// Whether every element (over `dim`) is nonzero.
        all: reduce_dims { keepdim = all_keepdim_overloaded; Variable::all };
        /// Whether any element (over `dim`) is nonzero.
        any: reduce_dims { keepdim = any_keepdim_overloaded; Variable::any };
        count_nonzero: manual {};
        median: manual {};
        topk: manual {} onnx "TopK";
        sort: manual {};
        argsort: manual {};
        unique: manual {} onnx "Unique";
    }
    shape {
        view: manual {} onnx "Reshape";
        /// Like view, copying when needed.
        reshape: sizes_view { shape; |v, s| v.reshape(s) } onnx "Reshape";
        transpose: manual {} onnx "Transpose";
        flatten: manual {} onnx "Flatten";
        t: manual {};
        /// Reorders dims (`permute(1, 0)` or `permute((1, 0))`).
        permute: sizes_view { dims; |v, s| v.permute(s) } onnx "Transpose";
        /// Broadcasts to a larger size without copying (-1 keeps a size).
        expand: sizes_view { sizes; |v, s| v.expand(s) } onnx "Expand";
        unsqueeze: manual {} onnx "Unsqueeze";
        squeeze: manual {} onnx "Squeeze";
        squeeze_: manual {};
        unsqueeze_: manual {};
        transpose_: manual {};
        t_: manual {};
        _cat: manual {} onnx "Concat";
        _stack: manual {};
        split: manual {} onnx "Split";
        split_with_sizes: manual {};
        chunk: manual {};
        unbind: manual {};
        narrow: manual {};
        select: manual {};
        /// Reverses the order of elements along `dims`.
        flip: with_sizes { dims; |v, s| v.flip(s) };
        roll: manual {};
        /// Repeats the tensor along each dim (`repeat(2, 3)` or `repeat((2, 3))`).
        repeat: with_sizes { sizes; |v, s| v.repeat(s) } onnx "Tile";
        tile: manual {};
        /// The lower triangle of the last two dims (zero above diagonal `diagonal`).
        tril / tril_: triangle { upper = false } onnx "Trilu";
        /// The upper triangle of the last two dims (zero below diagonal `diagonal`).
        triu / triu_: triangle { upper = true } onnx "Trilu";
        diagonal: manual {};
        diag: manual {};
        diag_embed: manual {};
        movedim: manual {};
        moveaxis: manual {};
        unfold: manual {};
        repeat_interleave: manual {};
    }
    spatial {
        _pad: manual {};
        _upsample_antialias: manual {};
        _upsample: manual {};
        _grid_sample: manual {};
        _affine_grid: manual {};
    }
    ternary {
        /// Clamps into `[min, max]` (numbers, or tensors that broadcast).
        clamp / clamp_: clamp {} onnx "Clip";
        /// Alias of `clamp`.
        clip / clip_: clamp {} onnx "Clip";
        /// `self + weight * (end - self)`; `weight` is a number or a tensor.
        lerp / lerp_: pair {
            signature = (end, weight);
            ternary::lerp_any(end: Obj<'_>, weight: Obj<'_>)
        };
        /// `self + value * tensor1 * tensor2`.
        addcmul / addcmul_: pair {
            signature = (tensor1, tensor2, *, value = None);
            ternary::addcmul_any(tensor1: Obj<'_>, tensor2: Obj<'_>, value: Option<Obj<'_>>)
        };
        /// `self + value * tensor1 / tensor2`.
        addcdiv / addcdiv_: pair {
            signature = (tensor1, tensor2, *, value = None);
            ternary::addcdiv_any(tensor1: Obj<'_>, tensor2: Obj<'_>, value: Option<Obj<'_>>)
        };
        r#where: manual {} onnx "Where";
    }
    unary {
        __neg__: direct { neg } onnx "Neg";
        __pos__: manual {};
        __abs__: direct { abs } onnx "Abs";
        neg / neg_: direct { neg } onnx "Neg";
        exp / exp_: elementwise { exp } onnx "Exp";
        log / log_: elementwise { log } onnx "Log";
        sqrt / sqrt_: elementwise { sqrt } onnx "Sqrt";
        tanh / tanh_: elementwise { tanh } onnx "Tanh";
        sigmoid / sigmoid_: elementwise { sigmoid } onnx "Sigmoid";
        relu: elementwise { relu } onnx "Relu";
        abs / abs_: direct { abs } onnx "Abs";
        sign / sign_: direct { sign } onnx "Sign";
        /// The sign for real dtypes (SgnBackward0).
        sgn: direct { sgn };
        sgn_: manual {};
        rsqrt / rsqrt_: math { Rsqrt };
        exp2 / exp2_: math { Exp2 };
        expm1 / expm1_: math { Expm1 };
        log1p / log1p_: math { Log1p };
        log2 / log2_: math { Log2 };
        log10 / log10_: math { Log10 };
        sin / sin_: math { Sin } onnx "Sin";
        cos / cos_: math { Cos } onnx "Cos";
        tan / tan_: math { Tan } onnx "Tan";
        asin / asin_: math { Asin } onnx "Asin";
        arcsin / arcsin_: math { Asin } onnx "Asin";
        acos / acos_: math { Acos } onnx "Acos";
        arccos / arccos_: math { Acos } onnx "Acos";
        atan / atan_: math { Atan } onnx "Atan";
        arctan / arctan_: math { Atan } onnx "Atan";
        sinh / sinh_: math { Sinh } onnx "Sinh";
        cosh / cosh_: math { Cosh } onnx "Cosh";
        reciprocal / reciprocal_: math { Reciprocal } onnx "Reciprocal";
        square: elementwise { square };
        erf / erf_: math { Erf } onnx "Erf";
        erfinv / erfinv_: math { Erfinv };
        floor / floor_: math { Floor } onnx "Floor";
        ceil / ceil_: math { Ceil } onnx "Ceil";
        round: manual {} onnx "Round";
        trunc / trunc_: math { Trunc };
        fix / fix_: math { Trunc };
        frac / frac_: math { Frac };
        negative_: unary_ { neg };
        absolute_: unary_ { abs };
        pow_: manual {};
        clamp_min: manual {};
        clamp_max: manual {};
        clamp_min_: manual {};
        clamp_max_: manual {};
        square_: manual {};
        round_: manual {};
        _selu: manual {} onnx "Selu";
        _celu: manual {} onnx "Celu";
        _elu: manual {} onnx "Elu";
        _leaky_relu: manual {} onnx "LeakyRelu";
        _hardtanh: manual {};
        _silu: manual {};
        _mish: manual {} onnx "Mish";
        _hardsigmoid: manual {} onnx "HardSigmoid";
        _hardswish: manual {} onnx "HardSwish";
        _logsigmoid: math { LogSigmoid };
        _gelu: manual {};
        _softplus: manual {} onnx "Softplus";
        _softsign: elementwise { softsign } onnx "Softsign";
    }
}

function_table! {
    activation {
        _glu: manual {};
        _hardshrink: manual {} onnx "Shrink";
        _softshrink: manual {} onnx "Shrink";
        _tanhshrink: manual {};
        _threshold: manual {};
        _prelu: manual {} onnx "PRelu";
        _rrelu: manual {};
        _dropout: manual {} onnx "Dropout";
    }
    attention {
        _scaled_dot_product_attention: manual {} onnx "Attention";
    }
    conv {
        _conv: manual {} onnx "Conv";
        _conv_transpose: manual {} onnx "ConvTranspose";
        /// `torch.convolution`: `Conv` or `ConvTranspose` by its `transposed` flag.
        convolution: manual {};
        _linear: manual {};
        _bilinear: manual {};
        _unfold: manual {};
        _fold: manual {} onnx "Col2Im";
        _pixel_shuffle: manual {} onnx "DepthToSpace";
        _pixel_unshuffle: manual {};
    }
    embedding {
        _embedding: manual {} onnx "Gather";
        _embedding_bag: manual {};
        _one_hot: manual {} onnx "OneHot";
    }
    loss {
        _nll_loss: manual {} onnx "NegativeLogLikelihoodLoss";
        _cross_entropy: manual {} onnx "SoftmaxCrossEntropyLoss";
        _pointwise_loss: manual {};
        _l1_loss: manual {};
        _weighted_loss: manual {};
        _kl_div: manual {};
        _poisson_nll_loss: manual {};
        _cosine_similarity: manual {};
        _pairwise_distance: manual {};
        _cosine_embedding_loss: manual {};
        _margin_ranking_loss: manual {};
        _triplet_margin_loss: manual {};
        _multi_margin_loss: manual {};
        _multilabel_margin_loss: manual {};
        _ctc_loss: manual {};
    }
    norm {
        _batch_norm: manual {} onnx "BatchNormalization";
        _layer_norm: manual {} onnx "LayerNormalization";
        _group_norm: manual {} onnx "GroupNormalization";
        _instance_norm: manual {} onnx "InstanceNormalization";
        _rms_norm: manual {} onnx "RMSNormalization";
        _local_response_norm: manual {} onnx "LRN";
        _normalize: manual {};
    }
    pool {
        _max_pool2d_with_indices: manual {} onnx "MaxPool";
        _avg_pool2d: manual {} onnx "AveragePool";
        _adaptive_avg_pool2d: manual {};
        _adaptive_max_pool2d: manual {};
        _max_unpool2d: manual {} onnx "MaxUnpool";
        _max_pool3d_with_indices: manual {} onnx "MaxPool";
        _avg_pool3d: manual {} onnx "AveragePool";
        _adaptive_avg_pool3d: manual {};
        _adaptive_max_pool3d: manual {};
        _max_unpool3d: manual {} onnx "MaxUnpool";
        _fractional_max_pool2d: manual {};
        _fractional_max_pool3d: manual {};
    }
    rnn {
        /// One layer of `RNN` / `LSTM` / `GRU` (ONNX `RNN`, `LSTM`, `GRU` by its mode).
        _rnn_layer: manual {};
    }
}
