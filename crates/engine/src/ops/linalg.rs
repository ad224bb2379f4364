//! Linear algebra: matmul with PyTorch's broadcasting rules, mm, bmm, mv, dot, outer,
//! the scaled sums addmm, addmv, baddbmm and addbmm, and tensordot.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

mod einsum;

use super::{saved_at, Grads};
use crate::error::{Error, Result};
use crate::shape::Dims;
use crate::tensor::{Scalar, Tensor};
use crate::variable::SavedTensor;
use crate::variable::Variable;
use smallvec::smallvec;

/// The product that an `addmm`-like op scales and adds to its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Product {
    /// `mat1 @ mat2` (addmm).
    Mm,
    /// `mat @ vec` (addmv).
    Mv,
    /// `batch1 @ batch2`, batch by batch (baddbmm).
    Bmm,
    /// The sum over the batch of `batch1 @ batch2` (addbmm).
    SumBmm,
}

/// What an `addmm`-like node keeps: `beta * input + alpha * product`.
#[derive(Clone, Debug)]
pub(crate) struct ScaledProduct {
    product: Product,
    beta: Scalar,
    alpha: Scalar,
    /// The shape of `input` (it broadcasts to the output's).
    input: Dims,
    /// Whether `a` and `b` were column-major matrices (Note [Gradient layouts]).
    column_major: [bool; 2],
}

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// Matrix product; saved `[a if b needs grad, b if a needs grad]`. `batched`
    /// distinguishes BmmBackward0 from MmBackward0.
    Matmul {
        /// The shapes of `a` and `b` (boxed: two shapes).
        shapes: Box<[Dims; 2]>,
        batched: bool,
        /// Whether `a` and `b` were column-major matrices (Note [Gradient layouts]).
        column_major: [bool; 2],
    },
    /// Matrix-vector product; saved `[mat if vec needs grad, vec if mat needs grad]`.
    Mv,
    /// Dot product of two vectors; saved `[other if self needs grad, self if other
    /// needs grad]`.
    Dot,
    /// `beta * input + alpha * product(a, b)`; inputs `[input, a, b]`, saved
    /// `[a if b needs grad, b if a needs grad]`.
    Scaled(Box<ScaledProduct>),
}

fn is_one(s: Scalar) -> bool {
    matches!(s, Scalar::Float(1.0) | Scalar::Int(1) | Scalar::Bool(true))
}

fn is_zero(s: Scalar) -> bool {
    matches!(s, Scalar::Float(0.0) | Scalar::Int(0) | Scalar::Bool(false))
}

/// `v * s`, skipping the multiplication when `s` is one.
fn scale(v: Variable, s: Scalar) -> Result<Variable> {
    if is_one(s) {
        Ok(v)
    } else {
        v.mul(&v.wrap_scalar(s))
    }
}

/// The gradients of the two factors of `product(a, b)` given `g`, the gradient of the
/// product (differentiable, so double backward works).
fn product_grads(
    product: Product,
    column_major: [bool; 2],
    saved: &[Option<Variable>],
    g: &Variable,
    need_a: bool,
    need_b: bool,
) -> Result<(Option<Variable>, Option<Variable>)> {
    let g = match product {
        Product::SumBmm => {
            // Every batch element of the product received the same gradient.
            let batch = saved_at(saved, if need_a { 1 } else { 0 })?.shape()[0];
            let mut sizes: Vec<i64> = vec![batch as i64];
            sizes.extend(g.shape().iter().map(|&s| s as i64));
            g.unsqueeze(0)?.expand(&sizes)?
        }
        _ => g.clone(),
    };
    let ga = if need_a {
        let b = saved_at(saved, 1)?;
        Some(match product {
            Product::Mv => g.outer(b)?,
            Product::Mm => mm_mat1_grad(&g, b, column_major[0])?,
            _ => g.matmul(&b.transpose(-1, -2)?)?,
        })
    } else {
        None
    };
    let gb = if need_b {
        let a = saved_at(saved, 0)?;
        Some(match product {
            Product::Mm => mm_mat2_grad(a, &g, column_major[1])?,
            _ => a.transpose(-1, -2)?.matmul(&g)?,
        })
    } else {
        None
    };
    Ok((ga, gb))
}

/// Whether an operand is a matrix stored column-major (a transposed contiguous matrix,
/// such as `linear`'s `weight.t()`).
fn is_column_major(v: &Variable) -> bool {
    let t = v.tensor();
    let (shape, strides) = (t.shape(), t.strides());
    shape.len() == 2 && shape[0] > 1 && shape[1] > 1 && strides == [1, shape[0]]
}

/// The gradient of `a` in `a @ b` (2-D), `g @ b^T`, laid out like `a`: for a
/// column-major `a` it is computed as `(b @ g^T)^T`, PyTorch's `mm_mat1_backward`.
/// See Note [Gradient layouts].
fn mm_mat1_grad(g: &Variable, b: &Variable, a_column_major: bool) -> Result<Variable> {
    if a_column_major {
        b.matmul(&g.t()?)?.t()
    } else {
        g.matmul(&b.t()?)
    }
}

/// The gradient of `b` in `a @ b` (2-D), `a^T @ g`, laid out like `b`: for a
/// column-major `b` (`linear`'s `weight.t()`) it is computed as `(g^T @ a)^T`, so that
/// the weight's gradient comes out contiguous and `AccumulateGrad` keeps it without a
/// copy (PyTorch's `mm_mat2_backward`). See Note [Gradient layouts].
fn mm_mat2_grad(a: &Variable, g: &Variable, b_column_major: bool) -> Result<Variable> {
    if b_column_major {
        g.t()?.matmul(a)?.t()
    } else {
        a.t()?.matmul(g)
    }
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Matmul { batched: false, .. } => "MmBackward0",
            Rule::Matmul { batched: true, .. } => "BmmBackward0",
            Rule::Mv => "MvBackward0",
            Rule::Dot => "DotBackward0",
            Rule::Scaled(s) => match s.product {
                Product::Mm => "AddmmBackward0",
                Product::Mv => "AddmvBackward0",
                Product::Bmm => "BaddbmmBackward0",
                Product::SumBmm => "AddbmmBackward0",
            },
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output; `needs[i]`
    /// says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        let g = grad;
        Ok(match self {
            Rule::Matmul {
                shapes,
                batched: false,
                column_major,
            } if shapes.iter().all(|s| s.len() == 2) => {
                let (ga, gb) =
                    product_grads(Product::Mm, *column_major, saved, g, need(0), need(1))?;
                smallvec![ga, gb]
            }
            Rule::Matmul { shapes, .. } => {
                let [a, b] = &**shapes;
                smallvec![
                    if need(0) {
                        Some(
                            g.matmul(&saved_at(saved, 1)?.transpose(-1, -2)?)?
                                .sum_to_size(a)?,
                        )
                    } else {
                        None
                    },
                    if need(1) {
                        Some(
                            saved_at(saved, 0)?
                                .transpose(-1, -2)?
                                .matmul(g)?
                                .sum_to_size(b)?,
                        )
                    } else {
                        None
                    },
                ]
            }
            Rule::Mv => {
                let (ga, gb) = product_grads(Product::Mv, [false; 2], saved, g, need(0), need(1))?;
                smallvec![ga, gb]
            }
            Rule::Dot => smallvec![
                if need(0) {
                    Some(saved_at(saved, 1)?.mul(g)?)
                } else {
                    None
                },
                if need(1) {
                    Some(saved_at(saved, 0)?.mul(g)?)
                } else {
                    None
                },
            ],
            Rule::Scaled(s) => {
                let input = if !need(0) {
                    None
                } else if is_zero(s.beta) {
                    // Note [Zero gradients]: beta = 0 ignores the input entirely.
                    Some(super::zeros_like(g)?.sum_to_size(&s.input)?)
                } else {
                    Some(scale(g.clone(), s.beta)?.sum_to_size(&s.input)?)
                };
                let (ga, gb) =
                    product_grads(s.product, s.column_major, saved, g, need(1), need(2))?;
                let alpha = |v: Option<Variable>| v.map(|v| scale(v, s.alpha)).transpose();
                smallvec![input, alpha(ga)?, alpha(gb)?]
            }
        })
    }
}

/// `"2x3"`: a shape as PyTorch's matrix messages write it.
fn by(shape: &[usize]) -> String {
    shape
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// Checks that `input` broadcasts to `target` (an `addmm`-like op's input against the
/// product), with PyTorch's `expand` messages.
fn check_expand(input: &[usize], target: &[usize]) -> Result<()> {
    let list = |s: &[usize]| {
        s.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if input.len() > target.len() {
        return Err(Error::InvalidArgument(format!(
            "expand(torch.Tensor{{[{}]}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            list(input),
            list(target),
            target.len(),
            input.len()
        )));
    }
    // The size check and its message are the layout's (PyTorch's expand message).
    crate::layout::Layout::contiguous(input)
        .broadcast_to(target)
        .map(|_| ())
}

/// PyTorch's `mv` size error for a `rows x cols` matrix times a vector of `len`.
fn mv_size_mismatch(rows: usize, cols: usize, len: usize) -> Error {
    mismatch(
        "matmul",
        format!("size mismatch, got input ({rows}), mat ({rows}x{cols}), vec ({len})"),
    )
}

fn mismatch(op: &'static str, message: String) -> Error {
    Error::ShapeMismatch { op, message }
}

/// PyTorch's "self must be a matrix, got 1-D tensor" for `op`'s argument `name`.
fn check_dim(op: &'static str, name: &str, v: &Variable, dim: usize) -> Result<()> {
    if v.dim() == dim {
        return Ok(());
    }
    Err(mismatch(
        op,
        match dim {
            2 => format!("{name} must be a matrix, got {}-D tensor", v.dim()),
            _ => format!("{name} must be a {dim}D tensor"),
        },
    ))
}

fn check_same_dtype(a: &Variable, b: &Variable) -> Result<()> {
    if a.dtype() == b.dtype() {
        return Ok(());
    }
    Err(Error::dtype(
        "matmul",
        format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            a.dtype().cpp_type_name(),
            b.dtype().cpp_type_name()
        ),
    ))
}

/// `self` and `other` as matrices of a product, checked as `mm` does.
fn check_mm(op: &'static str, a: &Variable, b: &Variable) -> Result<()> {
    check_dim(op, "self", a, 2)?;
    check_dim(op, "mat2", b, 2)?;
    if a.shape()[1] != b.shape()[0] {
        return Err(mismatch(
            op,
            format!(
                "mat1 and mat2 shapes cannot be multiplied ({} and {})",
                by(&a.shape()),
                by(&b.shape())
            ),
        ));
    }
    check_same_dtype(a, b)
}

/// Checks `bmm`'s operands: two 3-D tensors with equal batch sizes and inner sizes.
fn check_bmm(op: &'static str, a: &Variable, b: &Variable) -> Result<()> {
    check_dim(op, "batch1", a, 3)?;
    check_dim(op, "batch2", b, 3)?;
    let (sa, sb) = (a.shape(), b.shape());
    if sb[0] != sa[0] || sb[1] != sa[2] {
        return Err(mismatch(
            op,
            format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                sa[0], sa[2], sb[0], sb[1]
            ),
        ));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "expected scalar type {} but found {}",
                a.dtype().scalar_type_name(),
                b.dtype().scalar_type_name()
            ),
        ));
    }
    Ok(())
}

/// Checks `mv`'s operands (`input` is `addmv`'s, checked against the product).
fn check_mv(op: &'static str, input: Option<&Variable>, m: &Variable, v: &Variable) -> Result<()> {
    let input_ok = input.is_none_or(|i| i.dim() <= 1);
    if m.dim() != 2 || v.dim() != 1 || !input_ok {
        return Err(mismatch(
            op,
            format!(
                "vector + matrix @ vector expected, got {}, {}, {}",
                input.map_or(1, Variable::dim),
                m.dim(),
                v.dim()
            ),
        ));
    }
    let (sm, sv) = (m.shape(), v.shape());
    let input_size = input.map_or(sm[0], |i| i.shape().first().copied().unwrap_or(1));
    if sm[1] != sv[0] || (input_size != sm[0] && input_size != 1) {
        return Err(mismatch(
            op,
            format!(
                "size mismatch, got input ({}), mat ({}), vec ({})",
                input.map_or(sm[0], Variable::numel),
                by(&sm),
                sv[0]
            ),
        ));
    }
    let dtypes = [
        input.map_or(m.dtype(), Variable::dtype),
        m.dtype(),
        v.dtype(),
    ];
    if dtypes.iter().any(|&d| d != m.dtype()) {
        return Err(Error::dtype(
            op,
            format!(
                "{op} input tensors must have the same dtype, but got {}, {}, and {}",
                dtypes[0].scalar_type_name(),
                dtypes[1].scalar_type_name(),
                dtypes[2].scalar_type_name()
            ),
        ));
    }
    Ok(())
}

/// Saved slots for a two-factor product whose factors are inputs `first` and
/// `first + 1`: each factor is saved when the other needs a gradient.
fn save_factors(
    needs: &[bool],
    first: usize,
    a: &Variable,
    b: &Variable,
) -> crate::variable::SavedSlots {
    let save_if = |cond: bool, v: &Variable| cond.then(|| SavedTensor::input(v));
    smallvec![save_if(needs[first + 1], a), save_if(needs[first], b)]
}

impl Variable {
    /// Matrix product with PyTorch's `matmul` semantics (1-D operands are promoted and
    /// the added dim removed; batch dims broadcast).
    pub fn matmul(&self, other: &Variable) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Matmul,
            &[self, other],
            || {
                match (self.dim(), other.dim()) {
                    (0, _) | (_, 0) => Err(Error::InvalidArgument(format!(
                        "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
                        self.dim(),
                        other.dim()
                    ))),
                    (1, 1) => {
                        if self.shape() != other.shape() {
                            return Err(Error::ShapeMismatch {
                        op: "dot",
                        message: format!(
                            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                            self.numel(), other.numel(), self.numel(), other.numel()
                        ),
                    });
                        }
                        self.unsqueeze(0)?
                            .matmul(&other.unsqueeze(1)?)?
                            .reshape(&[])
                    }
                    (1, 2) => self.unsqueeze(0)?.matmul(other)?.squeeze_dim(-2),
                    (1, _) => {
                        let sb = other.shape();
                        if sb[sb.len() - 2] != self.numel() {
                            // PyTorch computes this as `other.mT` folded to a matrix @ `self`.
                            let rows = other.numel() / sb[sb.len() - 2].max(1);
                            return Err(mv_size_mismatch(rows, sb[sb.len() - 2], self.numel()));
                        }
                        self.unsqueeze(0)?.matmul(other)?.squeeze_dim(-2)
                    }
                    (_, 1) => {
                        let sa = self.shape();
                        if sa[sa.len() - 1] != other.numel() {
                            let rows = self.numel() / sa[sa.len() - 1].max(1);
                            return Err(mv_size_mismatch(rows, sa[sa.len() - 1], other.numel()));
                        }
                        self.matmul(&other.unsqueeze(1)?)?.squeeze_dim(-1)
                    }
                    (da, db) => {
                        let (sa, sb) = (self.shape(), other.shape());
                        if db >= 3 && sa[da - 1] != sb[db - 2] {
                            // PyTorch runs a batched product through bmm, and reports it so.
                            let batch =
                                crate::shape::broadcast_shapes(&sa[..da - 2], &sb[..db - 2])?;
                            let batch: usize = batch.iter().product();
                            // PyTorch's message has no op prefix here.
                            return Err(Error::InvalidArgument(format!(
                        "Expected size for first two dimensions of batch2 tensor to be: [{batch}, {}] but got: [{batch}, {}].",
                        sa[da - 1],
                        sb[db - 2]
                    )));
                        }
                        if da >= 3 && db == 2 {
                            // PyTorch folds the batch dims of `self` into rows (at::matmul's
                            // `should_fold`): one `mm` over every row, so the weight gradient
                            // of a `Linear` on `(L, N, E)` input is one GEMM over `L·N` rows,
                            // not `L` products summed. grad_fn UnsafeViewBackward0 over
                            // MmBackward0, as PyTorch's.
                            let k = sa[da - 1] as i64;
                            let product = self.reshape(&[-1, k])?.matmul(other)?;
                            let mut shape: Vec<i64> =
                                sa[..da - 1].iter().map(|&s| s as i64).collect();
                            shape.push(sb[1] as i64);
                            return product.unsafe_view(&shape);
                        }
                        let result = self.tensor().matmul_nd(&other.tensor())?;
                        let batched = da > 2 || db > 2;
                        Ok(Variable::record(result, &[self, other], |needs, _| {
                            let shapes = Box::new([self.shape(), other.shape()]);
                            let column_major = [is_column_major(self), is_column_major(other)];
                            (
                                Rule::Matmul {
                                    shapes,
                                    batched,
                                    column_major,
                                },
                                save_factors(needs, 0, self, other),
                            )
                        }))
                    }
                }
            },
        )
    }

    /// Product of two matrices (`torch.mm`): no broadcasting, no 1-D operands.
    pub fn mm(&self, mat2: &Variable) -> Result<Variable> {
        check_mm("mm", self, mat2)?;
        self.matmul(mat2)
    }

    /// Batched product of two 3-D tensors with equal batch sizes (`torch.bmm`).
    pub fn bmm(&self, mat2: &Variable) -> Result<Variable> {
        check_bmm("bmm", self, mat2)?;
        let result = self.tensor().matmul_nd(&mat2.tensor())?;
        Ok(Variable::record(result, &[self, mat2], |needs, _| {
            let shapes = Box::new([self.shape(), mat2.shape()]);
            let rule = Rule::Matmul {
                shapes,
                batched: true,
                column_major: [false; 2],
            };
            (rule, save_factors(needs, 0, self, mat2))
        }))
    }

    /// Matrix-vector product (`torch.mv`).
    pub fn mv(&self, vec: &Variable) -> Result<Variable> {
        check_mv("mv", None, self, vec)?;
        let result = self
            .tensor()
            .matmul_nd(&vec.tensor().unsqueeze(1)?)?
            .squeeze_dim(1)?;
        Ok(Variable::record(result, &[self, vec], |needs, _| {
            (Rule::Mv, save_factors(needs, 0, self, vec))
        }))
    }

    /// Dot product of two 1-D tensors with the same number of elements (`torch.dot`).
    pub fn dot(&self, other: &Variable) -> Result<Variable> {
        if self.dim() != 1 || other.dim() != 1 {
            return Err(mismatch(
                "dot",
                format!(
                    "1D tensors expected, but got {}D and {}D tensors",
                    self.dim(),
                    other.dim()
                ),
            ));
        }
        if self.numel() != other.numel() {
            return Err(mismatch(
                "dot",
                format!(
                    "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                    self.numel(), other.numel(), self.numel(), other.numel()
                ),
            ));
        }
        if self.dtype() != other.dtype() {
            return Err(Error::dtype(
                "dot",
                format!(
                    "dot : expected both vectors to have same dtype, but found {} and {}",
                    self.dtype().scalar_type_name(),
                    other.dtype().scalar_type_name()
                ),
            ));
        }
        let result = self
            .tensor()
            .unsqueeze(0)?
            .matmul_nd(&other.tensor().unsqueeze(1)?)?
            .reshape(&[])?;
        Ok(Variable::record(result, &[self, other], |needs, _| {
            (Rule::Dot, save_factors(needs, 0, self, other))
        }))
    }

    /// Outer product of two 1-D tensors (`torch.outer`): `self[i] * vec2[j]`, with
    /// PyTorch's type promotion (recorded as MulBackward0, as PyTorch does).
    pub fn outer(&self, vec2: &Variable) -> Result<Variable> {
        for (name, v) in [("self", self), ("vec2", vec2)] {
            if v.dim() != 1 {
                return Err(mismatch(
                    "outer",
                    format!("Expected 1-D argument {name}, but got {}-D", v.dim()),
                ));
            }
        }
        self.unsqueeze(1)?.mul(vec2)
    }

    /// `beta * self + alpha * (mat1 @ mat2)` (`torch.addmm`); `self` broadcasts to the
    /// product's shape. With `beta = 0`, `self`'s values (even NaN) are ignored.
    pub fn addmm(
        &self,
        mat1: &Variable,
        mat2: &Variable,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Addmm(beta, alpha),
            &[self, mat1, mat2],
            || {
                check_mm("addmm", mat1, mat2)?;
                self.scaled_product(Product::Mm, mat1, mat2, beta, alpha)
            },
        )
    }

    /// `beta * self + alpha * (mat @ vec)` (`torch.addmv`).
    pub fn addmv(
        &self,
        mat: &Variable,
        vec: &Variable,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Variable> {
        check_mv("addmv", Some(self), mat, vec)?;
        self.scaled_product(Product::Mv, mat, vec, beta, alpha)
    }

    /// `beta * self + alpha * (batch1 @ batch2)`, batch by batch (`torch.baddbmm`).
    pub fn baddbmm(
        &self,
        batch1: &Variable,
        batch2: &Variable,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Variable> {
        check_bmm("baddbmm", batch1, batch2)?;
        self.scaled_product(Product::Bmm, batch1, batch2, beta, alpha)
    }

    /// `beta * self + alpha * sum_b(batch1[b] @ batch2[b])` (`torch.addbmm`).
    pub fn addbmm(
        &self,
        batch1: &Variable,
        batch2: &Variable,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Variable> {
        check_dim("addbmm", "batch1", batch1, 3)?;
        check_dim("addbmm", "batch2", batch2, 3)?;
        let (s1, s2) = (batch1.shape(), batch2.shape());
        // PyTorch checks `self` against the result's shape first.
        check_expand(&self.shape(), &[s1[1], s2[2]])?;
        check_bmm("addbmm", batch1, batch2)?;
        self.scaled_product(Product::SumBmm, batch1, batch2, beta, alpha)
    }

    /// Contracts `dims_a` of `self` with `dims_b` of `other` (`torch.tensordot`): the
    /// result has `self`'s other dims then `other`'s. A contracted dim of size 1 on one
    /// side broadcasts (the other side is summed over it), as in PyTorch. Lowered to
    /// permute, reshape and one matrix product, so its backward is theirs.
    pub fn tensordot(&self, other: &Variable, dims_a: &[i64], dims_b: &[i64]) -> Result<Variable> {
        if dims_a.len() != dims_b.len() {
            return Err(Error::InvalidArgument(
                "both dimension lists should have same length".into(),
            ));
        }
        let wrap = |dims: &[i64], ndim: usize| -> Result<Vec<usize>> {
            let mut seen = vec![false; ndim];
            dims.iter()
                .map(|&d| {
                    let w = crate::shape::wrap_dim(d, ndim)?;
                    if std::mem::replace(&mut seen[w], true) {
                        return Err(Error::InvalidArgument(format!(
                            "dim {w} appears multiple times in the list of dims"
                        )));
                    }
                    Ok(w)
                })
                .collect()
        };
        let (ca, cb) = (wrap(dims_a, self.dim())?, wrap(dims_b, other.dim())?);
        let (mut a, mut b) = (self.clone(), other.clone());
        for (&i, &j) in ca.iter().zip(&cb) {
            let (sa, sb) = (a.shape()[i], b.shape()[j]);
            if sa == sb {
                continue;
            }
            if sa == 1 {
                b = b.sum_dims(&[j as i64], true)?;
            } else if sb == 1 {
                a = a.sum_dims(&[i as i64], true)?;
            } else {
                return Err(mismatch(
                    "tensordot",
                    format!(
                        "contracted dimensions need to match, but first has size {sa} in dim {i} and second has size {sb} in dim {j}"
                    ),
                ));
            }
        }
        let free_a: Vec<usize> = (0..a.dim()).filter(|d| !ca.contains(d)).collect();
        let free_b: Vec<usize> = (0..b.dim()).filter(|d| !cb.contains(d)).collect();
        let (sa, sb) = (a.shape(), b.shape());
        let size =
            |shape: &[usize], dims: &[usize]| dims.iter().map(|&d| shape[d]).product::<usize>();
        let (m, k, n) = (size(&sa, &free_a), size(&sa, &ca), size(&sb, &free_b));
        let perm = |first: &[usize], second: &[usize]| -> Vec<i64> {
            first.iter().chain(second).map(|&d| d as i64).collect()
        };
        let am = a
            .permute(&perm(&free_a, &ca))?
            .reshape(&[m as i64, k as i64])?;
        let bm = b
            .permute(&perm(&cb, &free_b))?
            .reshape(&[k as i64, n as i64])?;
        let out_shape: Vec<i64> = free_a
            .iter()
            .map(|&d| sa[d] as i64)
            .chain(free_b.iter().map(|&d| sb[d] as i64))
            .collect();
        am.matmul(&bm)?.reshape(&out_shape)
    }

    /// The forward of the `addmm` family once the factors are checked.
    fn scaled_product(
        &self,
        product: Product,
        a: &Variable,
        b: &Variable,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Variable> {
        if self.dtype() != a.dtype() {
            return Err(Error::dtype(
                "addmm",
                format!(
                    "self and mat2 must have the same dtype, but got {} and {}",
                    self.dtype().scalar_type_name(),
                    a.dtype().scalar_type_name()
                ),
            ));
        }
        // float16 / bfloat16 compute `beta * input + alpha * product` in float32 with
        // `beta` and `alpha` in float32 and round once, as ATen's gemm for them.
        let compute = self.dtype().compute_dtype();
        let op_math = |v: &Variable| -> Result<Variable> {
            Ok(Variable::from_tensor(v.tensor().to_dtype(compute)?))
        };
        let (da, db) = (op_math(a)?, op_math(b)?);
        let prod = match product {
            Product::Mm | Product::Bmm => da.matmul(&db)?,
            Product::Mv => da.matmul(&db.unsqueeze(1)?)?.squeeze_dim(1)?,
            Product::SumBmm => da.matmul(&db)?.sum_dims(&[0], false)?,
        };
        let sizes: Vec<i64> = prod.shape().iter().map(|&s| s as i64).collect();
        check_expand(&self.shape(), &prod.shape())?;
        let input = op_math(self)?.expand(&sizes)?;
        let prod = scale(prod, alpha)?;
        let result: Tensor = if is_zero(beta) {
            prod.tensor().to_dtype(self.dtype())?
        } else {
            scale(input, beta)?
                .add(&prod)?
                .tensor()
                .to_dtype(self.dtype())?
        };
        Ok(Variable::record(result, &[self, a, b], |needs, _| {
            let rule = Rule::Scaled(Box::new(ScaledProduct {
                product,
                beta,
                alpha,
                input: self.shape(),
                column_major: [is_column_major(a), is_column_major(b)],
            }));
            (rule, save_factors(needs, 1, a, b))
        }))
    }
}
