//! Bool arguments checked as PyTorch's argument parser checks them.
//!
//! PyTorch's parser takes only a Python `bool` where its schema says `bool`: an int,
//! `None`, a `numpy.bool` or a one-element tensor are refused with a TypeError. With a
//! single overload the message is "argument 'keepdim' must be bool, not int"; with
//! several overloads it is "received an invalid combination of arguments". PyO3's own
//! extraction of `bool` says "'int' object is not an instance of 'bool'" instead, so
//! every bool argument of a binding goes through one of the extractors below, named
//! after the argument, with `#[pyo3(from_py_with = flag::keepdim)]`.
//!
//! PyO3 hands an extractor the object but not the argument's or the function's name,
//! so each argument gets its own small function (written by the macro); the function's
//! name is left out of the message (PyO3 adds "while processing 'keepdim'" as a note).
//! Rejected: a `Flag<Name>` newtype, which would have changed every default expression
//! (`keepdim = false`) and every use site of the parameter.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBool;

/// How PyTorch's parser names a rejected argument's type: builtins by their name
/// (`int`, `NoneType`), a tensor as `Tensor`, anything else with its module
/// (`numpy.bool`).
fn parser_type_name(obj: &Bound<'_, PyAny>) -> String {
    if obj.is_instance_of::<crate::tensor::PyTensor>() {
        return "Tensor".into();
    }
    let ty = obj.get_type();
    let name = ty.name().map(|n| n.to_string()).unwrap_or_default();
    match ty.module().map(|m| m.to_string()) {
        Ok(module) if module != "builtins" && !module.starts_with("rustgrad") => {
            format!("{module}.{name}")
        }
        _ => crate::device::type_name(obj),
    }
}

/// `obj` as a bool when it is exactly a Python bool, else PyTorch's TypeError naming
/// `name` (with the "invalid combination" wording when the PyTorch function has several
/// overloads).
fn check(obj: &Bound<'_, PyAny>, name: &str, overloaded: bool) -> PyResult<bool> {
    if let Ok(b) = obj.cast_exact::<PyBool>() {
        return Ok(b.is_true());
    }
    let what = format!(
        "argument '{name}' must be bool, not {}",
        parser_type_name(obj)
    );
    Err(PyTypeError::new_err(if overloaded {
        format!("received an invalid combination of arguments - {what}")
    } else {
        what
    }))
}

/// Writes one extractor per argument: `fn name(obj) -> PyResult<bool>`.
macro_rules! flags {
    ($($(#[$doc:meta])* $func:ident = $arg:literal, overloaded = $over:literal;)*) => {
        $(
            $(#[$doc])*
            pub(crate) fn $func(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
                check(obj, $arg, $over)
            }
        )*
    };
}

flags! {
    /// `keepdim` of single-overload reductions (`sum`, `mean`, `max`, `argmax`, ...).
    keepdim = "keepdim", overloaded = false;
    /// `keepdim` of reductions PyTorch overloads (`all`, `any`, `std`, `var`, ...).
    keepdim_overloaded = "keepdim", overloaded = true;
    /// `largest` of `topk`.
    largest = "largest", overloaded = false;
    /// `sorted` of `topk` / `unique`.
    sorted = "sorted", overloaded = false;
    /// `descending` of `sort` / `argsort` (several overloads in PyTorch).
    descending = "descending", overloaded = true;
    /// `stable` of `sort` / `argsort` (several overloads in PyTorch).
    stable = "stable", overloaded = true;
    /// `return_inverse` of `unique`.
    return_inverse = "return_inverse", overloaded = false;
    /// `return_counts` of `unique`.
    return_counts = "return_counts", overloaded = false;
    /// `sparse_grad` of `gather`.
    sparse_grad = "sparse_grad", overloaded = false;
    /// `accumulate` of `index_put` / `put`.
    accumulate = "accumulate", overloaded = false;
    /// `wrap` of `fill_diagonal_`.
    wrap = "wrap", overloaded = false;
    /// `as_tuple` of `nonzero`.
    as_tuple = "as_tuple", overloaded = false;
    /// `requires_grad` of single-overload factories (`zeros`, `ones`, `tensor`, ...).
    requires_grad = "requires_grad", overloaded = false;
    /// `requires_grad` of factories PyTorch overloads (`rand`, `randn`, `randint`, ...).
    requires_grad_overloaded = "requires_grad", overloaded = true;
    /// `replacement` of `multinomial`.
    replacement = "replacement", overloaded = false;
    /// `non_blocking` of `Tensor.cuda` / `Tensor.type`.
    non_blocking = "non_blocking", overloaded = false;
}

/// `unbiased` of `std`/`var` (several overloads in PyTorch); `None` is taken as "not
/// given", the default.
pub(crate) fn unbiased(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    if obj.is_none() {
        Ok(None)
    } else {
        check(obj, "unbiased", true).map(Some)
    }
}

/// Arguments of what PyTorch writes as plain Python functions that test the
/// argument's truth (`F.elu(x, inplace=1)`, `backward(create_graph=1)` work): any
/// object, taken by its truth value.
pub(crate) fn truthy(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    obj.is_truthy()
}

/// [`truthy`] for an argument whose `None` means "the default" (`retain_graph`).
pub(crate) fn truthy_or_none(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    if obj.is_none() {
        Ok(None)
    } else {
        obj.is_truthy().map(Some)
    }
}
