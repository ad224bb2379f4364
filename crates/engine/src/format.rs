//! PyTorch's tensor `repr`, reproduced byte for byte.
//!
//! This follows `torch/_tensor_str.py` with the default print options
//! (precision 4, threshold 1000, edgeitems 3, linewidth 80, `sci_mode=None`).
//! The Python function each piece mirrors is named in its doc comment, so the
//! two can be read side by side.

use std::ops::Range;

/// Digits after the point in fixed and scientific notation (`PRINT_OPTS.precision`).
const PRECISION: usize = 4;
/// Element count above which the repr is summarized (`PRINT_OPTS.threshold`).
const THRESHOLD: usize = 1000;
/// Items kept at each end of a summarized dimension (`PRINT_OPTS.edgeitems`).
const EDGEITEMS: usize = 3;
/// Target line width (`PRINT_OPTS.linewidth`).
const LINEWIDTH: usize = 80;
/// Text before the data; its length is the indent of continuation lines.
const PREFIX: &str = "tensor(";

/// Element values of a tensor in logical row-major order, widened for printing.
#[derive(Clone, Copy, Debug)]
pub enum FormatValues<'a> {
    /// float32 / float64 values (float32 values already widened to f64 exactly).
    Float(&'a [f64]),
    /// int64 values.
    Int(&'a [i64]),
    /// bool values.
    Bool(&'a [bool]),
}

impl FormatValues<'_> {
    fn len(&self) -> usize {
        match self {
            FormatValues::Float(v) => v.len(),
            FormatValues::Int(v) => v.len(),
            FormatValues::Bool(v) => v.len(),
        }
    }
}

/// PyTorch's `repr` of a tensor: `tensor(...)` with the data, then the suffixes.
/// `dtype_name` is PyTorch's name of the dtype, e.g. `"torch.float32"`, `"torch.float64"`,
/// `"torch.int64"`, `"torch.bool"`.
/// `autograd_suffix` is e.g. `Some("grad_fn=<MeanBackward0>")` or `Some("requires_grad=True")`
/// or `None`; it is appended as the last suffix using PyTorch's `_add_suffixes` line-wrapping rule.
///
/// ```text
/// tensor([[1., 1.],
///         [1., 1.]], requires_grad=True)
/// ```
///
/// # Panics
///
/// If the number of values is not the product of `shape` (an internal invariant
/// of the caller).
#[must_use]
pub fn tensor_repr(
    shape: &[usize],
    values: FormatValues<'_>,
    dtype_name: &str,
    autograd_suffix: Option<&str>,
) -> String {
    let numel: usize = shape.iter().product();
    assert_eq!(
        values.len(),
        numel,
        "rustgrad internal error: tensor_repr got {} values for shape {:?}",
        values.len(),
        shape
    );
    if numel <= THRESHOLD {
        return repr_parts(shape, shape, values, dtype_name, autograd_suffix);
    }
    let mut flat = Vec::new();
    summarized_indices(shape, 0, &mut flat);
    let compact: Vec<usize> = kept_indices(shape).iter().map(Vec::len).collect();
    match values {
        FormatValues::Float(v) => {
            let kept: Vec<f64> = flat.iter().map(|&i| v[i]).collect();
            repr_parts(
                shape,
                &compact,
                FormatValues::Float(&kept),
                dtype_name,
                autograd_suffix,
            )
        }
        FormatValues::Int(v) => {
            let kept: Vec<i64> = flat.iter().map(|&i| v[i]).collect();
            repr_parts(
                shape,
                &compact,
                FormatValues::Int(&kept),
                dtype_name,
                autograd_suffix,
            )
        }
        FormatValues::Bool(v) => {
            let kept: Vec<bool> = flat.iter().map(|&i| v[i]).collect();
            repr_parts(
                shape,
                &compact,
                FormatValues::Bool(&kept),
                dtype_name,
                autograd_suffix,
            )
        }
    }
}

/// For each dim, the indices `get_summarized_data` keeps: all of them, or, when the
/// tensor is summarized (more than `THRESHOLD` elements), the first and last
/// `EDGEITEMS` of a dim longer than `2 * EDGEITEMS`.
fn kept_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let summarize = shape
        .iter()
        .try_fold(1usize, |n, &s| n.checked_mul(s))
        .is_none_or(|n| n > THRESHOLD);
    shape
        .iter()
        .map(|&size| {
            let (head, tail) = printed_rows(size, summarize);
            head.chain(tail.unwrap_or_default()).collect()
        })
        .collect()
}

/// The repr from the kept (summarized) data: `compact` is the shape of `values`, which
/// differs from `shape` in the dims that are summarized.
fn repr_parts(
    shape: &[usize],
    compact: &[usize],
    values: FormatValues<'_>,
    dtype_name: &str,
    autograd_suffix: Option<&str>,
) -> String {
    let numel: usize = shape.iter().product();
    let indent = PREFIX.len();
    let default_float = crate::DType::default_float().torch_name();
    let mut suffixes: Vec<String> = Vec::new();
    let tensor_str = if numel == 0 {
        // NumPy prints the shape of an empty array unless it is (0,).
        if shape.len() != 1 {
            suffixes.push(format!("size={}", python_tuple(shape)));
        }
        // No element can tell the reader the dtype, so anything but the
        // default float dtype is shown.
        if dtype_name != default_float {
            suffixes.push(format!("dtype={dtype_name}"));
        }
        "[]".to_string()
    } else {
        if dtype_name != default_float && !matches!(dtype_name, "torch.int64" | "torch.bool") {
            suffixes.push(format!("dtype={dtype_name}"));
        }
        tensor_str(shape, compact, values, indent)
    };
    if let Some(suffix) = autograd_suffix {
        suffixes.push(suffix.to_string());
    }
    add_suffixes(&format!("{PREFIX}{tensor_str}"), &suffixes, indent)
}

/// Python's `str(tuple(shape))`: `(0, 3)`, `(0,)`, `()`.
fn python_tuple(shape: &[usize]) -> String {
    match shape {
        [only] => format!("({only},)"),
        _ => {
            let items: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", items.join(", "))
        }
    }
}

/// `_add_suffixes` with `force_newline=False`.
fn add_suffixes(tensor_str: &str, suffixes: &[String], indent: usize) -> String {
    let mut out = tensor_str.to_string();
    // Python: len(s) - s.rfind("\n") + 1, where rfind gives -1 when absent,
    // so the count is two more than the characters after the last newline.
    let mut last_line_len = match tensor_str.rfind('\n') {
        Some(pos) => tensor_str[pos..].chars().count() + 1,
        None => tensor_str.chars().count() + 2,
    };
    for suffix in suffixes {
        let suffix_len = suffix.chars().count();
        if last_line_len + suffix_len + 2 > LINEWIDTH {
            out.push_str(",\n");
            out.push_str(&" ".repeat(indent));
            out.push_str(suffix);
            last_line_len = indent + suffix_len;
        } else {
            out.push_str(", ");
            out.push_str(suffix);
            last_line_len += suffix_len + 2;
        }
    }
    out.push(')');
    out
}

/// `_tensor_str` for a non-empty tensor, from its summarized data (`values`, of shape
/// `compact`): the formatter sees only the printed elements, as in PyTorch.
fn tensor_str(
    shape: &[usize],
    compact: &[usize],
    values: FormatValues<'_>,
    indent: usize,
) -> String {
    let summarize = shape
        .iter()
        .try_fold(1usize, |n, &s| n.checked_mul(s))
        .is_none_or(|n| n > THRESHOLD);
    let formatter = Formatter::new(values, 0..values.len());
    let tensor = View {
        shape,
        compact,
        offset: 0,
        values,
    };
    tensor_str_with_formatter(tensor, indent, summarize, &formatter)
}

/// The rows of a dimension of `size` that are printed: all of them, or, when
/// summarizing a dimension longer than `2 * EDGEITEMS`, the first `EDGEITEMS`
/// and then (after an ellipsis) the last `EDGEITEMS`.
fn printed_rows(size: usize, summarize: bool) -> (Range<usize>, Option<Range<usize>>) {
    if summarize && size > 2 * EDGEITEMS {
        (0..EDGEITEMS, Some(size - EDGEITEMS..size))
    } else {
        (0..size, None)
    }
}

/// `get_summarized_data`, as the flat indices of the elements it keeps.
fn summarized_indices(shape: &[usize], offset: usize, out: &mut Vec<usize>) {
    let Some((&size, inner)) = shape.split_first() else {
        out.push(offset);
        return;
    };
    let stride: usize = inner.iter().product();
    let (head, tail) = printed_rows(size, true);
    for i in head.chain(tail.unwrap_or_default()) {
        summarized_indices(inner, offset + i * stride, out);
    }
}

/// A sub-tensor of the kept data: the trailing `shape` of the tensor, whose kept
/// elements (row-major, of shape `compact`) start at `offset`.
#[derive(Clone, Copy)]
struct View<'a> {
    shape: &'a [usize],
    compact: &'a [usize],
    offset: usize,
    values: FormatValues<'a>,
}

impl<'a> View<'a> {
    /// Where printed index `i` of the first dimension is in the kept data: the tail of
    /// a summarized dim follows its head directly.
    fn kept_index(&self, i: usize) -> usize {
        let skipped = self.shape[0] - self.compact[0];
        if i >= self.compact[0] {
            i - skipped
        } else {
            i
        }
    }

    /// `self[i]` along the first dimension.
    fn row(&self, i: usize) -> View<'a> {
        let inner = &self.compact[1..];
        View {
            shape: &self.shape[1..],
            compact: inner,
            offset: self.offset + self.kept_index(i) * inner.iter().product::<usize>(),
            values: self.values,
        }
    }
}

/// Formats the printed rows of a dimension with `item`, putting `ellipsis`
/// where rows were left out.
fn printed_items(
    size: usize,
    summarize: bool,
    ellipsis: &str,
    mut item: impl FnMut(usize) -> String,
) -> Vec<String> {
    let (head, tail) = printed_rows(size, summarize);
    let mut items: Vec<String> = head.map(&mut item).collect();
    if let Some(tail) = tail {
        items.push(ellipsis.to_string());
        items.extend(tail.map(item));
    }
    items
}

/// `_tensor_str_with_formatter` for real (non-complex) tensors.
fn tensor_str_with_formatter(
    tensor: View<'_>,
    indent: usize,
    summarize: bool,
    formatter: &Formatter,
) -> String {
    match tensor.shape.len() {
        0 => formatter.format(tensor.values, tensor.offset),
        1 => vector_str(tensor, indent, summarize, formatter),
        dim => {
            let slices = printed_items(tensor.shape[0], summarize, "...", |i| {
                tensor_str_with_formatter(tensor.row(i), indent + 1, summarize, formatter)
            });
            // Blank lines between the matrices of a 3-d tensor, two between
            // the blocks of a 4-d one, and so on.
            let separator = format!(",{}{}", "\n".repeat(dim - 1), " ".repeat(indent + 1));
            format!("[{}]", slices.join(&separator))
        }
    }
}

/// `_vector_str` for real (non-complex) tensors.
fn vector_str(tensor: View<'_>, indent: usize, summarize: bool, formatter: &Formatter) -> String {
    // Each element takes its width plus ", ".
    let element_length = formatter.max_width + 2;
    // Python: max(1, floor((linewidth - indent) / element_length)); the
    // saturating subtraction covers its negative numerator.
    let elements_per_line = (LINEWIDTH.saturating_sub(indent) / element_length).max(1);
    let data = printed_items(tensor.shape[0], summarize, " ...", |i| {
        formatter.format(tensor.values, tensor.offset + tensor.kept_index(i))
    });
    let lines: Vec<String> = data
        .chunks(elements_per_line)
        .map(|line| line.join(", "))
        .collect();
    let separator = format!(",\n{}", " ".repeat(indent + 1));
    format!("[{}]", lines.join(&separator))
}

/// `_Formatter`: decides the notation and the common width of all elements.
struct Formatter {
    /// Every nonzero finite float is integral: print `3.` rather than `3.0000`.
    int_mode: bool,
    /// Print floats as `1.0000e+05`.
    sci_mode: bool,
    /// Width every element is right-aligned to.
    max_width: usize,
}

impl Formatter {
    /// `_Formatter.__init__` over the elements at `indices`.
    fn new(values: FormatValues<'_>, indices: impl Iterator<Item = usize>) -> Formatter {
        let mut formatter = Formatter {
            int_mode: true,
            sci_mode: false,
            max_width: 1,
        };
        let FormatValues::Float(floats) = values else {
            for i in indices {
                let width = formatter.text(values, i).len();
                formatter.max_width = formatter.max_width.max(width);
            }
            return formatter;
        };
        let nonzero_finite: Vec<f64> = indices
            .map(|i| floats[i])
            .filter(|v| v.is_finite() && *v != 0.0)
            .collect();
        if nonzero_finite.is_empty() {
            return formatter;
        }
        let abs_min = nonzero_finite
            .iter()
            .map(|v| v.abs())
            .fold(f64::INFINITY, f64::min);
        let abs_max = nonzero_finite.iter().map(|v| v.abs()).fold(0.0, f64::max);
        formatter.int_mode = nonzero_finite.iter().all(|v| *v == v.ceil());
        formatter.sci_mode = abs_max / abs_min > 1000.0 || abs_max > 1.0e8 || abs_min < 1.0e-4;
        for &value in &nonzero_finite {
            let width = if formatter.sci_mode {
                python_sci(value).len()
            } else if formatter.int_mode {
                // One more for the trailing '.'.
                format!("{value:.0}").len() + 1
            } else {
                format!("{value:.PRECISION$}").len()
            };
            formatter.max_width = formatter.max_width.max(width);
        }
        formatter
    }

    /// `_Formatter.format` of the element at flat index `index`: its text,
    /// right-aligned to `max_width`.
    fn format(&self, values: FormatValues<'_>, index: usize) -> String {
        let text = self.text(values, index);
        let padding = self.max_width.saturating_sub(text.len());
        format!("{}{}", " ".repeat(padding), text)
    }

    /// The unpadded text of the element at flat index `index`.
    fn text(&self, values: FormatValues<'_>, index: usize) -> String {
        match values {
            FormatValues::Float(floats) => {
                let value = floats[index];
                if !value.is_finite() {
                    // Even in int mode: no '.' after nan or inf.
                    python_nonfinite(value).to_string()
                } else if self.sci_mode {
                    python_sci(value)
                } else if self.int_mode {
                    format!("{value:.0}.")
                } else {
                    format!("{value:.PRECISION$}")
                }
            }
            FormatValues::Int(ints) => ints[index].to_string(),
            FormatValues::Bool(bools) => if bools[index] { "True" } else { "False" }.to_string(),
        }
    }
}

/// Python's text for nan and the infinities under any float format spec.
/// Python drops the sign of a negative nan; Rust would print "NaN".
fn python_nonfinite(value: f64) -> &'static str {
    if value.is_nan() {
        "nan"
    } else if value > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// Python's `"{:.4e}".format(value)` of a finite value. Rust writes
/// `1.2346e-5` where Python writes `1.2346e-05`, so the exponent is rewritten
/// with a sign and at least two digits. The mantissa digits agree: both round
/// the exact binary value half to even.
fn python_sci(value: f64) -> String {
    let rust = format!("{value:.PRECISION$e}");
    let (mantissa, exponent) = rust
        .split_once('e')
        .expect("rustgrad internal error: Rust's {:e} output has an 'e'");
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// PyTorch's `repr` of a tensor, with an optional autograd suffix
/// (`grad_fn=<...>` or `requires_grad=True`).
///
/// Reads only the printed elements (`Tensor::gather_to_vec`), so a huge tensor, e.g.
/// `ones(1).expand(2**20, 2**20)`, prints without being materialised.
pub fn repr_tensor(tensor: &crate::tensor::Tensor, autograd_suffix: Option<&str>) -> String {
    use crate::dtype::DType;
    let shape = tensor.shape();
    let name = tensor.dtype().torch_name();
    let kept = kept_indices(shape);
    let compact: Vec<usize> = kept.iter().map(Vec::len).collect();
    let text = match tensor.dtype() {
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => {
            tensor.gather_to_vec::<f64>(&kept).map(|v| {
                repr_parts(
                    shape,
                    &compact,
                    FormatValues::Float(&v),
                    name,
                    autograd_suffix,
                )
            })
        }
        DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 => {
            tensor.gather_to_vec::<i64>(&kept).map(|v| {
                repr_parts(
                    shape,
                    &compact,
                    FormatValues::Int(&v),
                    name,
                    autograd_suffix,
                )
            })
        }
        DType::Bool => tensor.gather_to_vec::<bool>(&kept).map(|v| {
            repr_parts(
                shape,
                &compact,
                FormatValues::Bool(&v),
                name,
                autograd_suffix,
            )
        }),
    };
    // The kept data is at most (2 * EDGEITEMS)^ndim elements; should even that not fit
    // in memory, say so instead of failing the repr.
    text.unwrap_or_else(|e| format!("{PREFIX}<{e}>)"))
}

#[cfg(test)]
mod tests {
    //! Every expected string is the `repr` that PyTorch 2.15 printed for the
    //! tensor the test is named after (PyTorch is not a test dependency); the
    //! values are that tensor's `reshape(-1).tolist()`, so float32 values
    //! appear widened to f64.

    use super::*;

    #[track_caller]
    fn check(
        shape: &[usize],
        values: FormatValues<'_>,
        dtype_name: &str,
        autograd_suffix: Option<&str>,
        expected: &str,
    ) {
        assert_eq!(
            tensor_repr(shape, values, dtype_name, autograd_suffix),
            expected
        );
    }

    #[test]
    fn ones_matrix() {
        check(
            &[2, 2],
            FormatValues::Float(&[1.0, 1.0, 1.0, 1.0]),
            "torch.float32",
            None,
            "tensor([[1., 1.],\n        [1., 1.]])",
        );
    }

    #[test]
    fn scalar_with_grad_fn() {
        check(
            &[],
            FormatValues::Float(&[27.0]),
            "torch.float32",
            Some("grad_fn=<MeanBackward0>"),
            "tensor(27., grad_fn=<MeanBackward0>)",
        );
    }

    #[test]
    fn scalar_fractional() {
        check(
            &[],
            FormatValues::Float(&[4.5]),
            "torch.float32",
            None,
            "tensor(4.5000)",
        );
    }

    #[test]
    fn scalar_int() {
        check(
            &[],
            FormatValues::Int(&[3]),
            "torch.int64",
            None,
            "tensor(3)",
        );
    }

    #[test]
    fn scalar_bool() {
        check(
            &[],
            FormatValues::Bool(&[true]),
            "torch.bool",
            None,
            "tensor(True)",
        );
    }

    #[test]
    fn scalar_tiny_is_scientific() {
        check(
            &[],
            FormatValues::Float(&[9.999999747378752e-06]),
            "torch.float32",
            None,
            "tensor(1.0000e-05)",
        );
    }

    #[test]
    fn scalar_nan() {
        check(
            &[],
            FormatValues::Float(&[f64::NAN]),
            "torch.float32",
            None,
            "tensor(nan)",
        );
    }

    #[test]
    fn scalar_negative_zero() {
        check(
            &[],
            FormatValues::Float(&[-0.0]),
            "torch.float32",
            None,
            "tensor(-0.)",
        );
    }

    #[test]
    fn fractional_matrix() {
        check(
            &[2, 2],
            FormatValues::Float(&[4.5, 4.5, 4.5, 4.5]),
            "torch.float32",
            None,
            "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])",
        );
    }

    #[test]
    fn sci_mode_for_tiny_value() {
        check(
            &[2],
            FormatValues::Float(&[9.999999747378752e-06, 1.0]),
            "torch.float32",
            None,
            "tensor([1.0000e-05, 1.0000e+00])",
        );
    }

    #[test]
    fn sci_mode_for_huge_value() {
        check(
            &[2],
            FormatValues::Float(&[1.0, 1000000000.0]),
            "torch.float32",
            None,
            "tensor([1.0000e+00, 1.0000e+09])",
        );
    }

    #[test]
    fn sci_mode_for_wide_integer_range() {
        check(
            &[2],
            FormatValues::Float(&[1.0, 1001.0]),
            "torch.float32",
            None,
            "tensor([1.0000e+00, 1.0010e+03])",
        );
    }

    #[test]
    fn sci_mode_for_wide_fractional_range() {
        check(
            &[2],
            FormatValues::Float(&[0.10000000149011612, 200.0]),
            "torch.float32",
            None,
            "tensor([1.0000e-01, 2.0000e+02])",
        );
    }

    #[test]
    fn fixed_mode_below_ratio_limit() {
        check(
            &[2],
            FormatValues::Float(&[1234.5, 2.5]),
            "torch.float32",
            None,
            "tensor([1234.5000,    2.5000])",
        );
    }

    #[test]
    fn negative_numbers() {
        check(
            &[3],
            FormatValues::Float(&[-1.5, 2.25, -3.0]),
            "torch.float32",
            None,
            "tensor([-1.5000,  2.2500, -3.0000])",
        );
    }

    #[test]
    fn negative_integers() {
        check(
            &[2, 2],
            FormatValues::Float(&[-1.0, 2.0, 30.0, -400.0]),
            "torch.float32",
            None,
            "tensor([[  -1.,    2.],\n        [  30., -400.]])",
        );
    }

    #[test]
    fn negative_sci_matrix() {
        check(
            &[2, 2],
            FormatValues::Float(&[-1.500000053056283e-07, 2.0, 300000.0, -4.25]),
            "torch.float32",
            None,
            "tensor([[-1.5000e-07,  2.0000e+00],\n        [ 3.0000e+05, -4.2500e+00]])",
        );
    }

    #[test]
    fn nan_and_infinities_int_mode() {
        check(
            &[4],
            FormatValues::Float(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.0]),
            "torch.float32",
            None,
            "tensor([nan, inf, -inf, 1.])",
        );
    }

    #[test]
    fn nan_with_fractional() {
        check(
            &[3],
            FormatValues::Float(&[f64::NAN, 1.5, -2.0]),
            "torch.float32",
            None,
            "tensor([    nan,  1.5000, -2.0000])",
        );
    }

    #[test]
    fn infinity_with_sci() {
        check(
            &[3],
            FormatValues::Float(&[f64::INFINITY, 9.999999747378752e-06, 2.0]),
            "torch.float32",
            None,
            "tensor([       inf, 1.0000e-05, 2.0000e+00])",
        );
    }

    #[test]
    fn all_nan() {
        check(
            &[2],
            FormatValues::Float(&[f64::NAN, f64::NAN]),
            "torch.float32",
            None,
            "tensor([nan, nan])",
        );
    }

    #[test]
    fn zeros_and_negative_zero() {
        check(
            &[3],
            FormatValues::Float(&[0.0, -0.0, 0.0]),
            "torch.float32",
            None,
            "tensor([0., -0., 0.])",
        );
    }

    #[test]
    fn zeros_ignored_by_sci_test() {
        check(
            &[3],
            FormatValues::Float(&[0.0, 0.5, 100.0]),
            "torch.float32",
            None,
            "tensor([  0.0000,   0.5000, 100.0000])",
        );
    }

    #[test]
    fn rounding_ties_to_even() {
        check(
            &[3],
            FormatValues::Float(&[0.03125, 1.0, 2.5]),
            "torch.float32",
            None,
            "tensor([0.0312, 1.0000, 2.5000])",
        );
    }

    #[test]
    fn float32_values_widened() {
        check(
            &[3],
            FormatValues::Float(&[0.10000000149011612, 0.20000000298023224, 0.3333333432674408]),
            "torch.float32",
            None,
            "tensor([0.1000, 0.2000, 0.3333])",
        );
    }

    #[test]
    fn int64_vector() {
        check(
            &[3],
            FormatValues::Int(&[1, -20, 300]),
            "torch.int64",
            None,
            "tensor([  1, -20, 300])",
        );
    }

    #[test]
    fn int64_matrix() {
        check(
            &[2, 3],
            FormatValues::Int(&[1, 2, 3, -4, 50, 600]),
            "torch.int64",
            None,
            "tensor([[  1,   2,   3],\n        [ -4,  50, 600]])",
        );
    }

    #[test]
    fn int64_wraps_lines() {
        let values: Vec<_> = (0..100).collect();
        check(&[100], FormatValues::Int(&values), "torch.int64", None, "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,\n        54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,\n        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,\n        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])");
    }

    #[test]
    fn bool_vector() {
        check(
            &[3],
            FormatValues::Bool(&[true, false, true]),
            "torch.bool",
            None,
            "tensor([ True, False,  True])",
        );
    }

    #[test]
    fn bool_all_true() {
        check(
            &[2],
            FormatValues::Bool(&[true, true]),
            "torch.bool",
            None,
            "tensor([True, True])",
        );
    }

    #[test]
    fn bool_matrix() {
        check(
            &[2, 2],
            FormatValues::Bool(&[true, false, false, true]),
            "torch.bool",
            None,
            "tensor([[ True, False],\n        [False,  True]])",
        );
    }

    #[test]
    fn float64_has_dtype_suffix() {
        check(
            &[2],
            FormatValues::Float(&[1.5, 2.0]),
            "torch.float64",
            None,
            "tensor([1.5000, 2.0000], dtype=torch.float64)",
        );
    }

    #[test]
    fn float64_matrix_with_grad() {
        check(
            &[2, 2],
            FormatValues::Float(&[2.0, 4.0, 6.0, 8.0]),
            "torch.float64",
            Some("grad_fn=<MulBackward0>"),
            "tensor([[2., 4.],\n        [6., 8.]], dtype=torch.float64, grad_fn=<MulBackward0>)",
        );
    }

    #[test]
    fn empty_float() {
        check(
            &[0],
            FormatValues::Float(&[]),
            "torch.float32",
            None,
            "tensor([])",
        );
    }

    #[test]
    fn empty_int64() {
        check(
            &[0],
            FormatValues::Int(&[]),
            "torch.int64",
            None,
            "tensor([], dtype=torch.int64)",
        );
    }

    #[test]
    fn empty_bool() {
        check(
            &[0],
            FormatValues::Bool(&[]),
            "torch.bool",
            None,
            "tensor([], dtype=torch.bool)",
        );
    }

    #[test]
    fn empty_rows() {
        check(
            &[0, 3],
            FormatValues::Float(&[]),
            "torch.float32",
            None,
            "tensor([], size=(0, 3))",
        );
    }

    #[test]
    fn empty_three_dims_float64() {
        check(
            &[2, 0, 3],
            FormatValues::Float(&[]),
            "torch.float64",
            None,
            "tensor([], size=(2, 0, 3), dtype=torch.float64)",
        );
    }

    #[test]
    fn empty_requires_grad() {
        check(
            &[0],
            FormatValues::Float(&[]),
            "torch.float32",
            Some("requires_grad=True"),
            "tensor([], requires_grad=True)",
        );
    }

    #[test]
    fn thirty_floats_wrap() {
        check(&[30], FormatValues::Float(&[-1.1258398294448853, -1.152360200881958, -0.2505785822868347, -0.4338788092136383, 0.8487103581428528, 0.6920091509819031, -0.31601276993751526, -2.1152193546295166, 0.32227492332458496, -1.2633347511291504, 0.34998318552970886, 0.30813392996788025, 0.11984150856733322, 1.237657904624939, -0.14347384870052338, -0.1116093322634697, -0.6135830879211426, 0.03159274160861969, -0.4926769733428955, 0.2484147548675537, 0.4396958351135254, 0.11241118609905243, -0.8410648107528687, -2.316041946411133, -0.10230965167284012, 0.7924439907073975, -0.28966769576072693, 0.05250748619437218, 0.5228604674339294, 2.3022053241729736]), "torch.float32", None, "tensor([-1.1258, -1.1524, -0.2506, -0.4339,  0.8487,  0.6920, -0.3160, -2.1152,\n         0.3223, -1.2633,  0.3500,  0.3081,  0.1198,  1.2377, -0.1435, -0.1116,\n        -0.6136,  0.0316, -0.4927,  0.2484,  0.4397,  0.1124, -0.8411, -2.3160,\n        -0.1023,  0.7924, -0.2897,  0.0525,  0.5229,  2.3022])");
    }

    #[test]
    fn thirty_integral_floats_wrap() {
        check(&[30], FormatValues::Float(&[0.0, 7.0, 14.0, 21.0, 28.0, 35.0, 42.0, 49.0, 56.0, 63.0, 70.0, 77.0, 84.0, 91.0, 98.0, 105.0, 112.0, 119.0, 126.0, 133.0, 140.0, 147.0, 154.0, 161.0, 168.0, 175.0, 182.0, 189.0, 196.0, 203.0]), "torch.float32", None, "tensor([  0.,   7.,  14.,  21.,  28.,  35.,  42.,  49.,  56.,  63.,  70.,  77.,\n         84.,  91.,  98., 105., 112., 119., 126., 133., 140., 147., 154., 161.,\n        168., 175., 182., 189., 196., 203.])");
    }

    #[test]
    fn three_dims_blank_lines() {
        check(&[2, 3, 4], FormatValues::Float(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0]), "torch.float32", None, "tensor([[[ 0.,  1.,  2.,  3.],\n         [ 4.,  5.,  6.,  7.],\n         [ 8.,  9., 10., 11.]],\n\n        [[12., 13., 14., 15.],\n         [16., 17., 18., 19.],\n         [20., 21., 22., 23.]]])");
    }

    #[test]
    fn four_dims_two_blank_lines() {
        check(&[2, 2, 2, 2], FormatValues::Int(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]), "torch.int64", None, "tensor([[[[ 0,  1],\n          [ 2,  3]],\n\n         [[ 4,  5],\n          [ 6,  7]]],\n\n\n        [[[ 8,  9],\n          [10, 11]],\n\n         [[12, 13],\n          [14, 15]]]])");
    }

    #[test]
    fn summarized_arange() {
        let values: Vec<_> = (0..2000).map(f64::from).collect();
        check(&[2000], FormatValues::Float(&values), "torch.float32", None, "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])");
    }

    #[test]
    fn summarized_arange_int64() {
        let values: Vec<_> = (0..2000).collect();
        check(
            &[2000],
            FormatValues::Int(&values),
            "torch.int64",
            None,
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])",
        );
    }

    #[test]
    fn summarized_matrix() {
        let values: Vec<_> = (0..1600u16)
            .map(|i| f64::from(f32::from(i) / 7.0))
            .collect();
        check(&[40, 40], FormatValues::Float(&values), "torch.float32", None, "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 5.2857e+00, 5.4286e+00,\n         5.5714e+00],\n        [5.7143e+00, 5.8571e+00, 6.0000e+00,  ..., 1.1000e+01, 1.1143e+01,\n         1.1286e+01],\n        [1.1429e+01, 1.1571e+01, 1.1714e+01,  ..., 1.6714e+01, 1.6857e+01,\n         1.7000e+01],\n        ...,\n        [2.1143e+02, 2.1157e+02, 2.1171e+02,  ..., 2.1671e+02, 2.1686e+02,\n         2.1700e+02],\n        [2.1714e+02, 2.1729e+02, 2.1743e+02,  ..., 2.2243e+02, 2.2257e+02,\n         2.2271e+02],\n        [2.2286e+02, 2.2300e+02, 2.2314e+02,  ..., 2.2814e+02, 2.2829e+02,\n         2.2843e+02]])");
    }

    #[test]
    fn summarized_formatter_sees_only_edges() {
        let values: Vec<_> = [1.0; 3]
            .into_iter()
            .chain([f64::from(1e-7f32); 994])
            .chain([2.0; 4])
            .collect();
        check(
            &[1001],
            FormatValues::Float(&values),
            "torch.float32",
            None,
            "tensor([1., 1., 1.,  ..., 2., 2., 2.])",
        );
    }

    #[test]
    fn summarized_long_rows() {
        let values: Vec<_> = (0..2000).map(|i| f64::from(i) * 1.5).collect();
        check(&[10, 200], FormatValues::Float(&values), "torch.float32", None, "tensor([[0.0000e+00, 1.5000e+00, 3.0000e+00,  ..., 2.9550e+02, 2.9700e+02,\n         2.9850e+02],\n        [3.0000e+02, 3.0150e+02, 3.0300e+02,  ..., 5.9550e+02, 5.9700e+02,\n         5.9850e+02],\n        [6.0000e+02, 6.0150e+02, 6.0300e+02,  ..., 8.9550e+02, 8.9700e+02,\n         8.9850e+02],\n        ...,\n        [2.1000e+03, 2.1015e+03, 2.1030e+03,  ..., 2.3955e+03, 2.3970e+03,\n         2.3985e+03],\n        [2.4000e+03, 2.4015e+03, 2.4030e+03,  ..., 2.6955e+03, 2.6970e+03,\n         2.6985e+03],\n        [2.7000e+03, 2.7015e+03, 2.7030e+03,  ..., 2.9955e+03, 2.9970e+03,\n         2.9985e+03]])");
    }

    #[test]
    fn summarized_three_dims() {
        let values: Vec<_> = (0..2000).collect();
        check(&[20, 10, 10], FormatValues::Int(&values), "torch.int64", None, "tensor([[[   0,    1,    2,  ...,    7,    8,    9],\n         [  10,   11,   12,  ...,   17,   18,   19],\n         [  20,   21,   22,  ...,   27,   28,   29],\n         ...,\n         [  70,   71,   72,  ...,   77,   78,   79],\n         [  80,   81,   82,  ...,   87,   88,   89],\n         [  90,   91,   92,  ...,   97,   98,   99]],\n\n        [[ 100,  101,  102,  ...,  107,  108,  109],\n         [ 110,  111,  112,  ...,  117,  118,  119],\n         [ 120,  121,  122,  ...,  127,  128,  129],\n         ...,\n         [ 170,  171,  172,  ...,  177,  178,  179],\n         [ 180,  181,  182,  ...,  187,  188,  189],\n         [ 190,  191,  192,  ...,  197,  198,  199]],\n\n        [[ 200,  201,  202,  ...,  207,  208,  209],\n         [ 210,  211,  212,  ...,  217,  218,  219],\n         [ 220,  221,  222,  ...,  227,  228,  229],\n         ...,\n         [ 270,  271,  272,  ...,  277,  278,  279],\n         [ 280,  281,  282,  ...,  287,  288,  289],\n         [ 290,  291,  292,  ...,  297,  298,  299]],\n\n        ...,\n\n        [[1700, 1701, 1702,  ..., 1707, 1708, 1709],\n         [1710, 1711, 1712,  ..., 1717, 1718, 1719],\n         [1720, 1721, 1722,  ..., 1727, 1728, 1729],\n         ...,\n         [1770, 1771, 1772,  ..., 1777, 1778, 1779],\n         [1780, 1781, 1782,  ..., 1787, 1788, 1789],\n         [1790, 1791, 1792,  ..., 1797, 1798, 1799]],\n\n        [[1800, 1801, 1802,  ..., 1807, 1808, 1809],\n         [1810, 1811, 1812,  ..., 1817, 1818, 1819],\n         [1820, 1821, 1822,  ..., 1827, 1828, 1829],\n         ...,\n         [1870, 1871, 1872,  ..., 1877, 1878, 1879],\n         [1880, 1881, 1882,  ..., 1887, 1888, 1889],\n         [1890, 1891, 1892,  ..., 1897, 1898, 1899]],\n\n        [[1900, 1901, 1902,  ..., 1907, 1908, 1909],\n         [1910, 1911, 1912,  ..., 1917, 1918, 1919],\n         [1920, 1921, 1922,  ..., 1927, 1928, 1929],\n         ...,\n         [1970, 1971, 1972,  ..., 1977, 1978, 1979],\n         [1980, 1981, 1982,  ..., 1987, 1988, 1989],\n         [1990, 1991, 1992,  ..., 1997, 1998, 1999]]])");
    }

    #[test]
    fn summarized_short_first_dim() {
        let values: Vec<_> = (0..1002).map(|i| f64::from(i) - 500.0).collect();
        check(&[2, 501], FormatValues::Float(&values), "torch.float32", None, "tensor([[-500., -499., -498.,  ...,   -2.,   -1.,    0.],\n        [   1.,    2.,    3.,  ...,  499.,  500.,  501.]])");
    }

    #[test]
    fn requires_grad_wraps_for_long_row() {
        check(&[8], FormatValues::Float(&[-0.7078776955604553, -0.10643401741981506, -1.2427316904067993, -0.47623157501220703, -0.6859184503555298, -1.5051417350769043, 0.25498273968696594, 1.8042484521865845]), "torch.float32", Some("requires_grad=True"), "tensor([-0.7079, -0.1064, -1.2427, -0.4762, -0.6859, -1.5051,  0.2550,  1.8042],\n       requires_grad=True)");
    }

    #[test]
    fn requires_grad_fits_short_row() {
        check(
            &[2],
            FormatValues::Float(&[1.0, 2.0]),
            "torch.float32",
            Some("requires_grad=True"),
            "tensor([1., 2.], requires_grad=True)",
        );
    }

    #[test]
    fn grad_fn_wraps_after_matrix() {
        check(&[2, 7], FormatValues::Float(&[-0.900475025177002, -0.9660641551017761, 1.3154151439666748, 1.8773133754730225, 2.2634613513946533, -1.2909460067749023, -3.5405831336975098, 0.42854589223861694, -1.0764334201812744, 1.175986409187317, 3.2118914127349854, 0.8557117581367493, -1.35527503490448, 2.0843822956085205]), "torch.float32", Some("grad_fn=<MulBackward0>"), "tensor([[-0.9005, -0.9661,  1.3154,  1.8773,  2.2635, -1.2909, -3.5406],\n        [ 0.4285, -1.0764,  1.1760,  3.2119,  0.8557, -1.3553,  2.0844]],\n       grad_fn=<MulBackward0>)");
    }

    #[test]
    fn dtype_and_grad_fn_wrap() {
        check(&[6], FormatValues::Float(&[-1951.2621944733796, 418.615348264961, 3321.414833329895, 876.4007000826305, 1234.5103773405478, -1164.1952205785547]), "torch.float64", Some("grad_fn=<MulBackward0>"), "tensor([-1951.2622,   418.6153,  3321.4148,   876.4007,  1234.5104, -1164.1952],\n       dtype=torch.float64, grad_fn=<MulBackward0>)");
    }

    #[test]
    fn sci_long_vector_wraps() {
        check(&[12], FormatValues::Float(&[-24031.591796875, 647994.625, 1734012.375, -133568.640625, -835108.6875, 985543.25, -5227.18310546875, -94438.046875, -1123593.75, -651263.4375, 569307.0, 178221.421875]), "torch.float32", None, "tensor([  -24031.5918,   647994.6250,  1734012.3750,  -133568.6406,\n         -835108.6875,   985543.2500,    -5227.1831,   -94438.0469,\n        -1123593.7500,  -651263.4375,   569307.0000,   178221.4219])");
    }
}
