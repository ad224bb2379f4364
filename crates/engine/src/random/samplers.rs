//! The samplers beyond `uniform_`/`normal_`: `random_`, `bernoulli_` (scalar and
//! tensor `p`), `bernoulli`, `exponential_`, `geometric_`, `log_normal_`, `cauchy_` and
//! `multinomial`. Each draws from the [`Generator`] in the order and with the
//! transforms of PyTorch's CPU kernels (`DistributionTemplates.h`,
//! `DistributionsHelper.h`, `TransformationHelper.h`), so a seed gives PyTorch's
//! numbers; see Note [Random samplers] in docs/architecture.md for the one exception
//! (`bernoulli_(float p)` on an Intel CPU with MKL).

use super::{check_writable, not_implemented, Generator, GeneratorState, MemoryOrder};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::try_vec;
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::variable::Variable;

/// An in-place distribution of [`sample_`]: the element transform of one PyTorch
/// kernel and its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    /// `random_()`: integers over the dtype's range (floats: `[0, 2^mantissa]`).
    Random,
    /// `random_(from, to)`: integers uniform in `[from, to)`; `to = None` is up to the
    /// dtype's largest value (inclusive).
    RandomFromTo(i64, Option<i64>),
    /// `bernoulli_(p)`: 1 with probability `p`, else 0.
    Bernoulli(f64),
    /// `exponential_(lambd)`.
    Exponential(f64),
    /// `geometric_(p)`: trials until the first success (1, 2, ...).
    Geometric(f64),
    /// `log_normal_(mean, std)`: `exp` of a normal sample.
    LogNormal(f64, f64),
    /// `cauchy_(median, sigma)`.
    Cauchy(f64, f64),
}

/// A double as C++'s `ostream` prints it in PyTorch's messages (`1`, `0.5`, `nan`,
/// `inf`).
fn fmt_double(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        super::fmt_number(x)
    }
}

/// The dtype's C++ type name (`caffe2::TypeMeta`), which some PyTorch messages print.
fn type_meta_name(dtype: DType) -> &'static str {
    dtype.cpp_type_name()
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}

/// `tensor.<dist>_(..., generator=gen)` on a variable: the checks PyTorch makes
/// (leaf rules, then the dtype and parameters), then the samples drawn in memory order
/// and written through `copy_` (one version bump; while recording, the old history
/// gets a zero gradient). Nothing is drawn when a check fails.
#[track_caller]
pub fn sample_(var: &Variable, dist: Distribution, gen: &Generator) -> Result<()> {
    check_writable(var)?;
    let samples = gen.samples(&var.tensor(), dist)?;
    var.copy_(&Variable::from_tensor(samples))
}

/// `tensor.bernoulli_(p, generator=gen)` with a tensor `p` (broadcast to the tensor's
/// shape): element `i` is 1 with probability `p[i]`.
#[track_caller]
pub fn bernoulli_tensor_(var: &Variable, p: &Tensor, gen: &Generator) -> Result<()> {
    check_writable(var)?;
    let samples = {
        let t = var.tensor();
        gen.bernoulli_tensor_samples(t.shape(), t.dtype(), &MemoryOrder::of(&t), p)?
    };
    var.copy_(&Variable::from_tensor(samples))
}

/// `torch.bernoulli(input, generator=gen)`: a new tensor like `input` whose element
/// `i` is 1 with probability `input[i]`. When `input` requires grad the result records
/// a node whose gradient is zero (PyTorch's `BernoulliBackward0`; ours is
/// `CopyBackwards` after a clone).
#[track_caller]
pub fn bernoulli(input: &Variable, gen: &Generator) -> Result<Variable> {
    let samples = {
        let p = input.tensor();
        let order = MemoryOrder::contiguous(p.shape());
        gen.bernoulli_tensor_samples(p.shape(), p.dtype(), &order, &p)?
    };
    let recording = crate::autograd::is_grad_enabled() && input.requires_grad();
    if !recording {
        return Ok(Variable::from_tensor(samples));
    }
    let out = input.clone_data()?;
    out.copy_(&Variable::from_tensor(samples))?;
    Ok(out)
}

/// `torch.bernoulli(input, p, generator=gen)`: a new contiguous Bernoulli(`p`) tensor
/// of `input`'s shape and dtype ([`bernoulli_scalar`]). When `input` requires grad the
/// result records PyTorch's "NotImplemented" node: it requires grad, and its backward
/// fails with "derivative for aten::bernoulli is not implemented".
pub fn bernoulli_p(input: &Variable, p: f64, gen: &Generator) -> Result<Variable> {
    let samples = bernoulli_scalar(&input.shape(), input.dtype(), p, gen)?;
    Ok(Variable::record_not_differentiable(
        samples,
        &[input],
        "derivative for aten::bernoulli is not implemented",
    ))
}

/// `torch.empty_like(template).bernoulli_(p, generator=gen)`: a Bernoulli(`p`) tensor
/// of `template`'s shape and dtype, drawn in the memory order `empty_like` gives it
/// (`template`'s strides when it is non-overlapping and dense, else dense strides in
/// its dimension order) and laid out with those strides. The keep mask of `dropout` (PyTorch's `_dropout_impl`); the same
/// sampler as `bernoulli_` (one double uniform per element, `u < p`).
pub fn bernoulli_like(template: &Tensor, p: f64, gen: &Generator) -> Result<Tensor> {
    gen.samples_in(
        template.shape(),
        template.dtype(),
        &MemoryOrder::like(template),
        Distribution::Bernoulli(p),
    )
}

/// A tensor of zeros laid out as `torch.empty_like(template, dtype=dtype)` lays out its
/// result (`preserve_format`: `template`'s strides when it is non-overlapping and dense,
/// else dense strides in its dimension order). The target of `rand_like`,
/// `randn_like` and `randint_like`, so that they draw in PyTorch's order.
pub fn empty_like(template: &Tensor, dtype: DType) -> Result<Tensor> {
    template.zeros_like_preserving(dtype)
}

/// `torch.empty(shape, dtype=dtype).bernoulli_(p, generator=gen)`: a new contiguous
/// Bernoulli(`p`) tensor, drawn in row-major order by `bernoulli_`'s sampler. The noise of
/// feature dropout and `torch.bernoulli(input, p)`.
pub fn bernoulli_scalar(shape: &[usize], dtype: DType, p: f64, gen: &Generator) -> Result<Tensor> {
    gen.samples_in(
        shape,
        dtype,
        &MemoryOrder::contiguous(shape),
        Distribution::Bernoulli(p),
    )
}

/// The training noise of `rrelu` (PyTorch's `_rrelu_with_noise_train`): for each element
/// of `input` in row-major order, a slope `uniform_real_distribution<double>(lower,
/// upper)` where the element is `<= 0`, else 1. As in PyTorch's kernel the bounds are
/// first rounded to the op-math type (float32 unless `input` is float64), the draw is
/// `x * (upper - lower) + lower` without an FMA, and the slope is rounded to the op-math
/// type again; the slopes are returned as float64 values. Only non-positive elements
/// consume random numbers.
pub fn rrelu_noise(input: &Tensor, lower: f64, upper: f64, gen: &Generator) -> Result<Vec<f64>> {
    let values = input.to_dtype(DType::F64)?.try_to_vec::<f64>()?;
    let f64_math = input.dtype() == DType::F64;
    let (lower, upper) = if f64_math {
        (lower, upper)
    } else {
        (f64::from(lower as f32), f64::from(upper as f32))
    };
    let mut noise = try_vec(values.len(), 1.0f64)?;
    let mut s = gen.lock();
    for (n, &v) in noise.iter_mut().zip(&values) {
        if v <= 0.0 {
            let r = s.uniform_f64_unfused(lower, upper);
            *n = if f64_math { r } else { f64::from(r as f32) };
        }
    }
    Ok(noise)
}

/// `torch.multinomial(input, num_samples, replacement, generator=gen)` from the given
/// generator (see [`Generator::multinomial`]).
pub fn multinomial(
    input: &Tensor,
    num_samples: i64,
    replacement: bool,
    gen: &Generator,
) -> Result<Tensor> {
    gen.multinomial(input, num_samples, replacement)
}

/// PyTorch's `update_from` (`DistributionTemplates.h`): a `from` that the float dtype
/// rounds below itself moves up to the next representable integer.
fn update_from(from: i64, digits: u32, round: fn(i64) -> i64) -> i64 {
    let from_plus_1 = round(from.wrapping_add(1));
    if from_plus_1 < from {
        let n = 63 - from.wrapping_add(1).unsigned_abs().leading_zeros() as i64;
        return from_plus_1 + (1i64 << (n - i64::from(digits) + 1).max(0));
    }
    from
}

/// PyTorch's `update_to`: a `to` that the float dtype rounds above `to - 1` moves down.
fn update_to(to: i64, digits: u32, round: fn(i64) -> i64) -> i64 {
    let to_minus_1 = round(to.wrapping_sub(1));
    if to_minus_1 >= to {
        let n = 63 - to.wrapping_sub(1).unsigned_abs().leading_zeros() as i64;
        return to_minus_1 - (1i64 << (n - i64::from(digits) + 1).max(0));
    }
    to
}

/// The float dtype's mantissa digits and its round trip `int64 -> T -> int64`.
/// A float dtype's round trip `int64 -> T -> int64`.
type RoundTrip = fn(i64) -> i64;

fn float_digits(dtype: DType) -> Option<(u32, RoundTrip)> {
    match dtype {
        DType::F32 => Some((24, |v| v as f32 as i64)),
        DType::F64 => Some((53, |v| v as f64 as i64)),
        // c10::Half / c10::BFloat16 convert from int64 through float.
        DType::F16 => Some((11, |v| half::f16::from_f32(v as f32).to_f32() as i64)),
        DType::BF16 => Some((8, |v| half::bf16::from_f32(v as f32).to_f32() as i64)),
        DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => None,
    }
}

/// The largest value `random_(from)` reaches for the dtype (inclusive).
fn dtype_max(dtype: DType) -> i64 {
    match dtype {
        DType::F32 => 1 << 24,
        DType::F64 => 1 << 53,
        DType::F16 => 1 << 11,
        DType::BF16 => 1 << 8,
        DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
            dtype.int_range().1
        }
    }
}

/// PyTorch's `check_from_to_in_range`: both bounds representable in the dtype. For
/// floats that is `[lowest, max]` of the type, which every int64 is in (PyTorch only
/// warns beyond `2^digits`).
pub(super) fn check_from_to_in_range(from: i64, to_inc: i64, dtype: DType) -> Result<()> {
    let (min, max) = match dtype {
        // Every int64 is within float, double and bfloat16's [lowest, max].
        DType::F32 | DType::F64 | DType::BF16 => return Ok(()),
        DType::F16 => (-65504, 65504),
        DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
            dtype.int_range()
        }
    };
    let name = type_meta_name(dtype);
    if from < min || from > max {
        return Err(invalid(format!("from is out of bounds for {name}")));
    }
    if to_inc < min || to_inc > max {
        return Err(invalid(format!("to - 1 is out of bounds for {name}")));
    }
    Ok(())
}

/// The `(range, base)` of `random_(from, to)` after PyTorch's checks, or `None` for the
/// full 64-bit range (`from = i64::MIN`, `to = None`).
pub(super) fn from_to_range(
    from: i64,
    to: Option<i64>,
    dtype: DType,
) -> Result<Option<(u64, i64)>> {
    let mut from = from;
    match to {
        Some(mut to) => {
            if from >= to {
                return Err(invalid(format!(
                    "random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
                )));
            }
            if let Some((digits, round)) = float_digits(dtype) {
                from = update_from(from, digits, round);
                to = update_to(to, digits, round);
                if from >= to {
                    return Err(invalid(format!(
                        "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from={from} >= to={to}"
                    )));
                }
            }
            check_from_to_in_range(from, to - 1, dtype)?;
            Ok(Some(((to as u64).wrapping_sub(from as u64), from)))
        }
        None if from != i64::MIN => {
            let to_inc = dtype_max(dtype);
            if let Some((digits, round)) = float_digits(dtype) {
                from = update_from(from, digits, round);
                if from >= to_inc {
                    return Err(invalid(format!(
                        "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but got from={from} > to_inc={to_inc}"
                    )));
                }
            }
            check_from_to_in_range(from, to_inc, dtype)?;
            Ok(Some((
                (to_inc as u64).wrapping_sub(from as u64).wrapping_add(1),
                from,
            )))
        }
        None => {
            if dtype == DType::Bool {
                return Err(not_implemented(
                    "random_full_64_bits_range_kernel_cpu",
                    dtype,
                ));
            }
            Ok(None)
        }
    }
}

impl Distribution {
    /// PyTorch's dtype and parameter checks, in its order.
    fn check(self, dtype: DType) -> Result<()> {
        match self {
            Distribution::Random => Ok(()),
            Distribution::RandomFromTo(from, to) => from_to_range(from, to, dtype).map(|_| ()),
            Distribution::Bernoulli(p) => {
                let ok = (0.0..=1.0).contains(&p);
                if !ok {
                    return Err(invalid(format!(
                        "bernoulli_ expects p to be in [0, 1], but got p={}",
                        fmt_double(p)
                    )));
                }
                Ok(())
            }
            Distribution::Exponential(lambd) => {
                let ok = lambd > 0.0;
                if !ok {
                    return Err(invalid(format!(
                        "exponential_ expects lambda > 0.0, but found lambda={}",
                        fmt_double(lambd)
                    )));
                }
                if !dtype.is_floating_point() {
                    return Err(invalid(format!(
                        "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you specified {}",
                        dtype.scalar_type_name()
                    )));
                }
                Ok(())
            }
            Distribution::Geometric(p) => {
                let ok = p > 0.0 && p < 1.0;
                if !ok {
                    return Err(invalid(format!(
                        "geometric_ expects p to be in (0, 1), but got p={}",
                        fmt_double(p)
                    )));
                }
                if dtype == DType::Bool {
                    return Err(not_implemented("geometric_cpu", dtype));
                }
                Ok(())
            }
            Distribution::LogNormal(_, std) => {
                let ok = std > 0.0;
                if !ok {
                    return Err(invalid(format!(
                        "log_normal_ expects std > 0.0, but found std={}",
                        fmt_double(std)
                    )));
                }
                if !dtype.is_floating_point() {
                    return Err(not_implemented("log_normal_cpu", dtype));
                }
                Ok(())
            }
            Distribution::Cauchy(_, sigma) => {
                let ok = sigma > 0.0;
                if !ok {
                    return Err(invalid(format!(
                        "cauchy_ expects sigma > 0.0, but found sigma={}",
                        fmt_double(sigma)
                    )));
                }
                if !dtype.is_floating_point() {
                    return Err(invalid(format!(
                        "Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you specified {}",
                        type_meta_name(dtype)
                    )));
                }
                Ok(())
            }
        }
    }
}

impl GeneratorState {
    /// `uniform_int_distribution<T>` of `random_()`: a 64-bit output for int64 and
    /// double, a 32-bit one otherwise, reduced to the dtype's range.
    fn random_value(&mut self, dtype: DType) -> i64 {
        match dtype {
            DType::F32 => (u64::from(self.engine.next_u32()) % ((1 << 24) + 1)) as i64,
            DType::F64 => (self.random64() % ((1 << 53) + 1)) as i64,
            DType::F16 => (u64::from(self.engine.next_u32()) % ((1 << 11) + 1)) as i64,
            DType::BF16 => (u64::from(self.engine.next_u32()) % ((1 << 8) + 1)) as i64,
            DType::I64 => (self.random64() % (1 << 63)) as i64,
            // `val % (max + 1)` of a 32-bit output for the narrower integers.
            DType::I32 | DType::I16 | DType::I8 | DType::U8 => {
                (u64::from(self.engine.next_u32()) % (dtype.int_range().1 as u64 + 1)) as i64
            }
            DType::Bool => i64::from(self.engine.next_u32() & 1),
        }
    }

    /// `uniform_int_from_to_distribution<T>`: `x % range + base`, with a 64-bit output
    /// when the range needs it (not for bool).
    pub(super) fn range_value(&mut self, range: u64, base: i64, dtype: DType) -> i64 {
        let bits = if range >= 1 << 32 && dtype != DType::Bool {
            self.random64()
        } else {
            u64::from(self.engine.next_u32())
        };
        (bits % range).wrapping_add(base as u64) as i64
    }
}

impl Generator {
    /// Samples of `dist` for every element of `tensor`, drawn in memory order and
    /// shaped like it, in its dtype.
    fn samples(&self, tensor: &Tensor, dist: Distribution) -> Result<Tensor> {
        self.samples_in(
            tensor.shape(),
            tensor.dtype(),
            &MemoryOrder::of(tensor),
            dist,
        )
    }

    /// Samples of `dist` for a tensor of `shape` and `dtype` whose elements are visited
    /// in `order`, viewed in `shape` (strides as that order lays them out). Every
    /// in-place sampler and every random mask goes through here.
    fn samples_in(
        &self,
        shape: &[usize],
        dtype: DType,
        order: &MemoryOrder,
        dist: Distribution,
    ) -> Result<Tensor> {
        dist.check(dtype)?;
        let numel = crate::shape::checked_numel(shape)?;
        let buffer = match dist {
            // Masks (dropout's): straight into float32 when that is the dtype, with the
            // unit uniform's 53 bits compared to `p` (what `uniform_f64(0.0, 1.0) < p`
            // computes: `x * 1 + 0` is `x`), without a float64 buffer to convert.
            Distribution::Bernoulli(p) if dtype == DType::F32 => {
                Buffer::F32(self.lock().bernoulli_f32(numel, p)?)
            }
            Distribution::Random | Distribution::RandomFromTo(..) => {
                let range = match dist {
                    Distribution::RandomFromTo(from, to) => Some(from_to_range(from, to, dtype)?),
                    _ => None,
                };
                let mut v = try_vec(numel, 0i64)?;
                let mut s = self.lock();
                for x in v.iter_mut() {
                    *x = match range {
                        None => s.random_value(dtype),
                        Some(Some((range, base))) => s.range_value(range, base, dtype),
                        // The full 64-bit range: one 64-bit output as int64.
                        Some(None) => s.random64() as i64,
                    };
                }
                Buffer::I64(v)
            }
            _ => {
                let mut v = try_vec(numel, 0.0f64)?;
                let mut s = self.lock();
                for x in v.iter_mut() {
                    *x = match dist {
                        Distribution::Bernoulli(p) => f64::from(u8::from(s.unit_f64() < p)),
                        Distribution::Exponential(lambd) => {
                            (-1.0 / lambd) * (-s.uniform_f64(0.0, 1.0)).ln_1p()
                        }
                        Distribution::Geometric(p) => {
                            (s.uniform_f64(0.0, 1.0).ln() / (-p).ln_1p()).ceil()
                        }
                        Distribution::LogNormal(mean, std) => s.normal_f64(mean, std).exp(),
                        Distribution::Cauchy(median, sigma) => {
                            let u = s.uniform_f64(0.0, 1.0);
                            median + sigma * (std::f64::consts::PI * (u - 0.5)).tan()
                        }
                        Distribution::Random | Distribution::RandomFromTo(..) => unreachable!(),
                    };
                }
                Buffer::F64(v)
            }
        };
        let values = Tensor::from_buffer(buffer, &order.permuted_shape).to_dtype(dtype)?;
        order.arrange_tensor(values)
    }

    /// What `bernoulli_(p)` with a tensor `p` writes into a tensor of `shape` and
    /// `dtype`: `p` broadcast to the shape, one uniform per element in `order` (a
    /// double one when `p` is float64, else a float one), 1 where it is below `p`.
    fn bernoulli_tensor_samples(
        &self,
        shape: &[usize],
        dtype: DType,
        order: &MemoryOrder,
        p: &Tensor,
    ) -> Result<Tensor> {
        let p_dtype = p.dtype();
        if !p_dtype.is_floating_point() {
            return Err(not_implemented("bernoulli_tensor_cpu_p_", p_dtype));
        }
        let sizes: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        let p = p.expand(&sizes)?;
        // p's values in the tensor's memory order.
        let p_ordered = p
            .permute(&order.forward)?
            .to_dtype(DType::F64)?
            .try_to_vec::<f64>()?;
        let valid = p_ordered.iter().all(|&q| (0.0..=1.0).contains(&q));
        if !valid {
            return Err(invalid(
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)".into(),
            ));
        }
        let mut v = try_vec(p_ordered.len(), 0.0f64)?;
        {
            let mut s = self.lock();
            for (x, &q) in v.iter_mut().zip(&p_ordered) {
                let hit = if p_dtype == DType::F64 {
                    s.uniform_f64(0.0, 1.0) < q
                } else {
                    s.uniform_f32(0.0, 1.0) < q as f32
                };
                *x = f64::from(u8::from(hit));
            }
        }
        let values = Tensor::from_buffer(Buffer::F64(v), &order.permuted_shape).to_dtype(dtype)?;
        order.arrange_tensor(values)
    }

    /// `torch.multinomial(input, num_samples, replacement, generator=self)`: int64
    /// indices of shape `(num_samples,)` or `(rows, num_samples)`. Without replacement
    /// (or for one sample) PyTorch's exponential trick: `argmax`/`topk` of
    /// `input / q` with `q ~ Exp(1)` drawn like `exponential_`; with replacement a
    /// binary search of one double uniform per sample in the normalized cumulative
    /// sums (accumulated in the input's dtype). Every row is checked before any draw.
    pub fn multinomial(
        &self,
        input: &Tensor,
        num_samples: i64,
        replacement: bool,
    ) -> Result<Tensor> {
        if input.dim() == 0 || input.dim() > 2 {
            return Err(invalid("prob_dist must be 1 or 2 dim".into()));
        }
        let dtype = input.dtype();
        if !dtype.is_floating_point() {
            return Err(invalid(format!(
                "multinomial only supports floating-point dtypes for input, got: {}",
                dtype.scalar_type_name()
            )));
        }
        if num_samples <= 0 {
            return Err(invalid("cannot sample n_sample <= 0 samples".into()));
        }
        let n_samples = num_samples as usize;
        let n_cat = input.shape()[input.dim() - 1];
        if !replacement && n_samples > n_cat {
            return Err(invalid(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement".into(),
            ));
        }
        if n_cat > 1 << 24 {
            return Err(invalid("number of categories cannot exceed 2^24".into()));
        }
        let n_dist = if input.dim() == 2 {
            input.shape()[0]
        } else {
            1
        };
        let out_shape: Vec<usize> = if input.dim() == 2 {
            vec![n_dist, n_samples]
        } else {
            vec![n_samples]
        };
        let out_numel = crate::shape::checked_numel(&out_shape)?;
        if out_numel == 0 {
            return Ok(Tensor::from_buffer(Buffer::I64(Vec::new()), &out_shape));
        }
        let probs = input.to_dtype(DType::F64)?.try_to_vec::<f64>()?;
        let rows: Vec<&[f64]> = if n_cat == 0 {
            vec![&[][..]; n_dist]
        } else {
            probs.chunks(n_cat).collect()
        };
        let mut out = try_vec(out_numel, 0i64)?;
        if !replacement || n_samples == 1 {
            let valid = probs.iter().all(|p| (0.0..f64::INFINITY).contains(p));
            if !valid {
                return Err(invalid(
                    "probability tensor contains either `inf`, `nan` or element < 0".into(),
                ));
            }
            if rows.iter().any(|r| r.iter().sum::<f64>() == 0.0) {
                return Err(invalid(
                    "invalid multinomial distribution (sum of probabilities <= 0)".into(),
                ));
            }
            // q = empty_like(input).exponential_(1): drawn in the input's memory order.
            let q = self.samples(input, Distribution::Exponential(1.0))?;
            let q = q.to_dtype(DType::F64)?.try_to_vec::<f64>()?;
            let qrows: Vec<&[f64]> = q.chunks(n_cat).collect();
            for ((row, qrow), dst) in rows.iter().zip(&qrows).zip(out.chunks_mut(n_samples)) {
                // p / q in the input's dtype.
                let ratio: Vec<f64> = row
                    .iter()
                    .zip(qrow.iter())
                    .map(|(&p, &e)| match dtype {
                        DType::F64 => p / e,
                        _ => f64::from(p as f32 / e as f32),
                    })
                    .collect();
                let mut idx: Vec<usize> = (0..n_cat).collect();
                // Largest first; equal values keep index order (PyTorch's argmax picks
                // the first maximum).
                idx.sort_by(|&a, &b| ratio[b].total_cmp(&ratio[a]));
                for (d, &i) in dst.iter_mut().zip(&idx) {
                    *d = i as i64;
                }
            }
        } else {
            let mut cums: Vec<Vec<f64>> = Vec::with_capacity(n_dist);
            for row in &rows {
                let mut sum = 0.0f64;
                let mut cum = try_vec(n_cat, 0.0f64)?;
                for (c, &p) in cum.iter_mut().zip(row.iter()) {
                    let ok = p >= 0.0;
                    if !ok {
                        return Err(invalid(
                            "invalid multinomial distribution (encountering probability entry < 0)"
                                .into(),
                        ));
                    }
                    if !p.is_finite() {
                        return Err(invalid(
                            "invalid multinomial distribution (encountering probability entry = infinity or NaN)"
                                .into(),
                        ));
                    }
                    sum = if dtype == DType::F64 {
                        sum + p
                    } else {
                        f64::from(sum as f32 + p as f32)
                    };
                    *c = sum;
                }
                let positive = sum > 0.0;
                if !positive {
                    return Err(invalid(
                        "invalid multinomial distribution (sum of probabilities <= 0)".into(),
                    ));
                }
                for c in cum.iter_mut() {
                    *c = if dtype == DType::F64 {
                        *c / sum
                    } else {
                        f64::from(*c as f32 / sum as f32)
                    };
                }
                if let Some(last) = cum.last_mut() {
                    *last = 1.0;
                }
                cums.push(cum);
            }
            let mut s = self.lock();
            for (cum, dst) in cums.iter().zip(out.chunks_mut(n_samples)) {
                for d in dst.iter_mut() {
                    let u = s.uniform_f64(0.0, 1.0);
                    // The first slot whose cumulative probability reaches u.
                    *d = cum.partition_point(|&c| c < u) as i64;
                }
            }
        }
        Ok(Tensor::from_buffer(Buffer::I64(out), &out_shape))
    }
}
