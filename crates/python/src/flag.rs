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
//! so each (function, argument) pair gets its own small function, written by the
//! `per_function!` macro from the argument kinds of `flags!`: the message starts with
//! the function's name as PyTorch's does ("sum(): argument 'keepdim' must be bool, not
//! int", "std() received an invalid combination of arguments - ...").
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
fn check(obj: &Bound<'_, PyAny>, (name, overloaded): Flag, function: &str) -> PyResult<bool> {
    if let Ok(b) = obj.cast_exact::<PyBool>() {
        return Ok(b.is_true());
    }
    let what = format!(
        "argument '{name}' must be bool, not {}",
        parser_type_name(obj)
    );
    let prefix = if function.is_empty() {
        String::new()
    } else if overloaded {
        format!("{function}() ")
    } else {
        format!("{function}(): ")
    };
    Err(PyTypeError::new_err(if overloaded {
        format!("{prefix}received an invalid combination of arguments - {what}")
    } else {
        format!("{prefix}{what}")
    }))
}

/// A bool argument: its name, and whether PyTorch's function has several overloads.
type Flag = (&'static str, bool);

/// Names each kind of bool argument: `const KEEPDIM: Flag = ("keepdim", false)`.
macro_rules! flags {
    ($($(#[$doc:meta])* $func:ident = $arg:literal, overloaded = $over:literal;)*) => {
        $(
            $(#[$doc])*
            #[allow(non_upper_case_globals)]
            const $func: Flag = ($arg, $over);
        )*
    };
}

/// Writes one extractor per (function, argument): `fn sum_keepdim(obj)`.
macro_rules! per_function {
    ($($func:ident = ($name:literal, $flag:ident);)*) => {
        $(
            #[doc = concat!("`", stringify!($flag), "` of `", $name, "`.")]
            pub(crate) fn $func(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
                check(obj, $flag, $name)
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

per_function! {
    all_keepdim_overloaded = ("all", keepdim_overloaded);
    amax_keepdim = ("amax", keepdim);
    amin_keepdim = ("amin", keepdim);
    any_keepdim_overloaded = ("any", keepdim_overloaded);
    arange_requires_grad_overloaded = ("arange", requires_grad_overloaded);
    argmax_keepdim = ("argmax", keepdim);
    argmin_keepdim = ("argmin", keepdim);
    argsort_descending = ("argsort", descending);
    argsort_stable = ("argsort", stable);
    cuda_non_blocking = ("cuda", non_blocking);
    empty_requires_grad = ("empty", requires_grad);
    eye_requires_grad_overloaded = ("eye", requires_grad_overloaded);
    fill_diagonal_inplace_wrap = ("fill_diagonal_", wrap);
    full_requires_grad = ("full", requires_grad);
    gather_sparse_grad = ("gather", sparse_grad);
    index_put_inplace_accumulate = ("index_put_", accumulate);
    linspace_requires_grad_overloaded = ("linspace", requires_grad_overloaded);
    logspace_requires_grad_overloaded = ("logspace", requires_grad_overloaded);
    logsumexp_keepdim = ("logsumexp", keepdim);
    max_keepdim = ("max", keepdim);
    mean_keepdim = ("mean", keepdim);
    median_keepdim = ("median", keepdim);
    min_keepdim = ("min", keepdim);
    multinomial_replacement = ("multinomial", replacement);
    nanmean_keepdim = ("nanmean", keepdim);
    nansum_keepdim = ("nansum", keepdim);
    nonzero_as_tuple = ("nonzero", as_tuple);
    norm_keepdim = ("norm", keepdim);
    ones_requires_grad = ("ones", requires_grad);
    prod_keepdim = ("prod", keepdim);
    put_inplace_accumulate = ("put_", accumulate);
    put_accumulate = ("put", accumulate);
    py_new_requires_grad = ("", requires_grad);
    rand_requires_grad_overloaded = ("rand", requires_grad_overloaded);
    randint_requires_grad_overloaded = ("randint", requires_grad_overloaded);
    randn_requires_grad_overloaded = ("randn", requires_grad_overloaded);
    randperm_requires_grad_overloaded = ("randperm", requires_grad_overloaded);
    requires_grad_inplace_requires_grad = ("requires_grad_", requires_grad);
    sort_descending = ("sort", descending);
    sort_stable = ("sort", stable);
    std_keepdim_overloaded = ("std", keepdim_overloaded);
    sum_keepdim = ("sum", keepdim);
    tensor_requires_grad = ("tensor", requires_grad);
    topk_largest = ("topk", largest);
    topk_sorted = ("topk", sorted);
    type_non_blocking = ("type", non_blocking);
    unique_return_counts = ("unique", return_counts);
    unique_return_inverse = ("unique", return_inverse);
    unique_sorted = ("unique", sorted);
    var_keepdim_overloaded = ("var", keepdim_overloaded);
    var_mean_keepdim_overloaded = ("var_mean", keepdim_overloaded);
    zeros_requires_grad = ("zeros", requires_grad);
}

/// `unbiased` of `std`/`var` (several overloads in PyTorch). PyO3 calls the extractor
/// only for a given argument, so an explicit `None` is refused as PyTorch refuses it;
/// an omitted one is the signature's default.
fn unbiased(obj: &Bound<'_, PyAny>, function: &str) -> PyResult<Option<bool>> {
    check(obj, ("unbiased", true), function).map(Some)
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

/// `unbiased` of `std`.
pub(crate) fn std_unbiased(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    unbiased(obj, "std")
}

/// `unbiased` of `var`.
pub(crate) fn var_unbiased(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    unbiased(obj, "var")
}

/// `unbiased` of `var_mean`.
pub(crate) fn var_mean_unbiased(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    unbiased(obj, "var_mean")
}
