//! Random numbers that follow PyTorch's CPU generator: a [`Generator`] is PyTorch's
//! mt19937 with its seeding, its normal-sample cache and its `get_rng_state` layout,
//! and the samplers draw from it in PyTorch's order with PyTorch's transforms, so that
//! a seed gives PyTorch's numbers bit for bit. Generation is sequential per generator,
//! so results do not depend on the thread count. See Note [Random numbers] in
//! docs/architecture.md.
//!
//! ```
//! use rustgrad::random::Generator;
//! use rustgrad::DType;
//!
//! let gen = Generator::new(0);
//! let x = gen.rand(&[3], DType::F32)?;
//! // torch.manual_seed(0); torch.rand(3) -> tensor([0.4963, 0.7682, 0.0885])
//! assert_eq!(x.to_vec::<f32>(), [0.496_256_6, 0.768_221_8, 0.088_477_43]);
//! # Ok::<(), rustgrad::Error>(())
//! ```

mod box_muller;
mod mt19937;
mod samplers;
mod state;

pub use samplers::{
    bernoulli, bernoulli_like, bernoulli_p, bernoulli_scalar, bernoulli_tensor_, empty_like,
    multinomial, rrelu_noise, sample_, Distribution,
};
pub use state::STATE_BYTES;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::try_vec;
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::variable::Variable;
use mt19937::Mt19937;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// The seed of a new `Generator()` in PyTorch (`default_rng_seed_val`). The process-wide
/// [`default_generator`] does not use it: as PyTorch's, it is seeded from the OS.
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// A 64-bit seed from the operating system's entropy (PyTorch's
/// `getNonDeterministicRandom`, which reads `/dev/urandom`). Falls back to the thread
/// generator (itself seeded from the OS) if the OS source fails.
fn os_seed() -> u64 {
    use rand::TryRngCore;
    rand::rngs::OsRng
        .try_next_u64()
        .unwrap_or_else(|_| rand::random::<u64>())
}

/// A random number generator: PyTorch's `CPUGeneratorImpl` (mt19937, 32-bit outputs,
/// plus the cached second Box-Muller sample). `Send + Sync`: its state is behind a
/// mutex, and each sampling call holds it for the whole tensor, so concurrent calls
/// on one generator each get a contiguous run of the stream.
#[derive(Debug)]
pub struct Generator {
    state: Mutex<GeneratorState>,
}

#[derive(Clone, Debug)]
struct GeneratorState {
    engine: Mt19937,
    /// PyTorch keeps a float cache too; no CPU kernel of ours (or of PyTorch's
    /// `normal_`) uses it, but it is part of the state layout.
    next_float_normal: Option<f32>,
    next_double_normal: Option<f64>,
}

static DEFAULT_GENERATOR: LazyLock<Arc<Generator>> =
    LazyLock::new(|| Arc::new(Generator::new(os_seed())));

/// The process-wide generator that `rand`, `randn`, ... use when none is given
/// (`torch.default_generator`). As PyTorch's, it starts from a seed drawn from the OS,
/// so each process gets other numbers until [`manual_seed`] is called
/// ([`Generator::initial_seed`] tells the seed).
pub fn default_generator() -> Arc<Generator> {
    Arc::clone(&DEFAULT_GENERATOR)
}

/// Reseeds the default generator (`torch.manual_seed`).
pub fn manual_seed(seed: u64) {
    DEFAULT_GENERATOR.manual_seed(seed);
}

/// Uniform samples in `[0, 1)` from the default generator (`torch.rand`). A non-float
/// `dtype` is refused as PyTorch does (`"check_uniform_bounds" not implemented for
/// 'Long'`).
pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
    DEFAULT_GENERATOR.rand(shape, dtype)
}

/// Standard normal samples from the default generator (`torch.randn`); a non-float
/// `dtype` is refused as in [`rand()`].
pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
    DEFAULT_GENERATOR.randn(shape, dtype)
}

/// Integers uniform in `[low, high)` from the default generator (`torch.randint`).
pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    DEFAULT_GENERATOR.randint(low, high, shape, dtype)
}

/// A random permutation of `0..n` from the default generator (`torch.randperm`).
pub fn randperm(n: usize, dtype: DType) -> Result<Tensor> {
    DEFAULT_GENERATOR.randperm(n, dtype)
}

/// `uniform_(from, to)` on a variable: the samples are drawn as PyTorch draws them
/// for this tensor, then written through the engine's in-place path (`copy_`), so a
/// leaf that requires grad is refused, the version counter is bumped and, while
/// recording, the old history gets a zero gradient. Nothing is drawn when the write
/// would be refused.
#[track_caller]
pub fn uniform_(var: &Variable, from: f64, to: f64, gen: &Generator) -> Result<()> {
    check_writable(var)?;
    let samples = gen.uniform_samples(&var.tensor(), from, to)?;
    var.copy_(&Variable::from_tensor(samples))
}

/// `normal_(mean, std)` on a variable, as [`uniform_`].
#[track_caller]
pub fn normal_(var: &Variable, mean: f64, std: f64, gen: &Generator) -> Result<()> {
    check_writable(var)?;
    let samples = gen.normal_samples(&var.tensor(), mean, std)?;
    var.copy_(&Variable::from_tensor(samples))
}

/// The checks PyTorch makes before its kernel runs (so before it draws).
fn check_writable(var: &Variable) -> Result<()> {
    let recording = crate::autograd::is_grad_enabled() && !var.is_volatile();
    if recording && var.requires_grad() {
        if var.is_leaf() {
            return Err(Error::LeafInplace);
        }
        if var
            .view_base()
            .is_some_and(|b| b.is_leaf() && b.requires_grad())
        {
            return Err(Error::ViewOfLeafInplace);
        }
    }
    if var.tensor().layout().has_internal_overlap() {
        return Err(Error::InternalOverlap);
    }
    Ok(())
}

/// A number as C++'s `ostream` prints a double in PyTorch's messages (`1`, `0.5`).
fn fmt_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

fn not_implemented(kernel: &str, dtype: DType) -> Error {
    Error::NoKernel(format!(
        "\"{kernel}\" not implemented for '{}'",
        dtype.scalar_type_name()
    ))
}

impl Default for Generator {
    /// `torch.Generator()`: seeded with [`DEFAULT_SEED`].
    fn default() -> Generator {
        Generator::new(DEFAULT_SEED)
    }
}

impl Generator {
    /// A generator seeded with `seed` (`torch.Generator().manual_seed(seed)`).
    pub fn new(seed: u64) -> Generator {
        Generator {
            state: Mutex::new(GeneratorState {
                engine: Mt19937::new(seed),
                next_float_normal: None,
                next_double_normal: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GeneratorState> {
        // A capture replays ops, not draws: random numbers drawn outside a recorded op
        // (dropout is one) would be constants of the replay (Note [Capture and replay]).
        crate::jit::unsupported(
            "random sampling (rand, randn, normal_, ...) in the captured function",
        );
        // The state is valid after any panic (every update is a plain assignment).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reseeds: the stream restarts and the cached normal sample is dropped. The
    /// twister is seeded with the low 32 bits; `initial_seed` keeps all 64.
    pub fn manual_seed(&self, seed: u64) {
        let mut s = self.lock();
        s.engine = Mt19937::new(seed);
        s.next_float_normal = None;
        s.next_double_normal = None;
    }

    /// Reseeds from the operating system's entropy and returns the seed
    /// (`Generator.seed()`).
    pub fn seed(&self) -> u64 {
        let seed = os_seed();
        self.manual_seed(seed);
        seed
    }

    /// The seed this generator was last seeded with.
    pub fn initial_seed(&self) -> u64 {
        self.lock().engine.seed
    }

    /// The next 32-bit output (`CPUGeneratorImpl::random`).
    pub fn random_u32(&self) -> u32 {
        self.lock().engine.next_u32()
    }

    /// Two outputs as one 64-bit number, the first in the high half
    /// (`CPUGeneratorImpl::random64`).
    pub fn random_u64(&self) -> u64 {
        self.lock().random64()
    }

    /// The state in PyTorch's `get_rng_state` layout: [`STATE_BYTES`] bytes.
    pub fn get_state(&self) -> Vec<u8> {
        state::encode(&self.lock())
    }

    /// Restores a state from [`Generator::get_state`] (or from PyTorch's
    /// `get_rng_state()`). A state of the wrong size or an invalid twister position is
    /// refused with PyTorch's message, and the generator is left unchanged.
    pub fn set_state(&self, bytes: &[u8]) -> Result<()> {
        let decoded = state::decode(bytes)?;
        *self.lock() = decoded;
        Ok(())
    }

    /// `torch.rand(shape, dtype=dtype, generator=self)`: uniform in `[0, 1)`.
    pub fn rand(&self, shape: &[usize], dtype: DType) -> Result<Tensor> {
        if !dtype.is_floating_point() {
            return Err(not_implemented("check_uniform_bounds", dtype));
        }
        let numel = crate::shape::checked_numel(shape)?;
        let buffer = self.lock().uniform_buffer(numel, dtype, 0.0, 1.0)?;
        // float16 / bfloat16 draw as float32 and round (Note [Storage dtypes]).
        Tensor::from_buffer(buffer, shape).to_dtype(dtype)
    }

    /// `torch.randn(shape, dtype=dtype, generator=self)`: standard normal.
    pub fn randn(&self, shape: &[usize], dtype: DType) -> Result<Tensor> {
        if !dtype.is_floating_point() {
            return Err(not_implemented("normal_kernel_cpu", dtype));
        }
        let numel = crate::shape::checked_numel(shape)?;
        let buffer = self.lock().normal_buffer(numel, dtype, 0.0, 1.0, true)?;
        Tensor::from_buffer(buffer, shape).to_dtype(dtype)
    }

    /// `torch.randint(low, high, shape, dtype=dtype, generator=self)`: integers
    /// uniform in `[low, high)` (PyTorch's `random_(from, to)`: `x % range + low`
    /// with one 32-bit output per element, or a 64-bit one when the range needs it).
    pub fn randint(&self, low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
        let (range, base) = samplers::from_to_range(low, Some(high), dtype)?
            .ok_or_else(|| Error::InvalidArgument("random_: empty range".into()))?;
        let numel = crate::shape::checked_numel(shape)?;
        let mut values = try_vec(numel, 0i64)?;
        {
            let mut s = self.lock();
            for v in values.iter_mut() {
                *v = s.range_value(range, base, dtype);
            }
        }
        Tensor::from_buffer(Buffer::I64(values), shape).to_dtype(dtype)
    }

    /// `torch.randperm(n, dtype=dtype, generator=self)`: PyTorch's CPU algorithm for
    /// `n < 2^32 / 20`, a Fisher-Yates shuffle forward from index 0 with one 32-bit
    /// output per swap. Larger `n` is refused.
    pub fn randperm(&self, n: usize, dtype: DType) -> Result<Tensor> {
        if dtype == DType::Bool {
            return Err(Error::unsupported_dtype("randperm", dtype));
        }
        if n as u64 >= u64::from(u32::MAX) / 20 {
            return Err(Error::NotImplemented(format!(
                "rustgrad: randperm of {n} elements (PyTorch switches to another algorithm at 2^32 / 20)"
            )));
        }
        let mut perm: Vec<i64> = try_vec(n, 0i64)?;
        for (i, p) in perm.iter_mut().enumerate() {
            *p = i as i64;
        }
        {
            let mut s = self.lock();
            for i in 0..n.saturating_sub(1) {
                let z = u64::from(s.engine.next_u32()) % (n - i) as u64;
                perm.swap(i, i + z as usize);
            }
        }
        Tensor::from_buffer(Buffer::I64(perm), &[n]).to_dtype(dtype)
    }

    /// `tensor.uniform_(from, to, generator=self)` on a plain tensor: one version bump.
    #[track_caller]
    pub fn uniform_(&self, tensor: &Tensor, from: f64, to: f64) -> Result<()> {
        let samples = self.uniform_samples(tensor, from, to)?;
        tensor.copy_from(
            &samples,
            crate::storage::WriteSite::Rust(std::panic::Location::caller()),
        )
    }

    /// `tensor.normal_(mean, std, generator=self)` on a plain tensor: one version bump.
    #[track_caller]
    pub fn normal_(&self, tensor: &Tensor, mean: f64, std: f64) -> Result<()> {
        let samples = self.normal_samples(tensor, mean, std)?;
        tensor.copy_from(
            &samples,
            crate::storage::WriteSite::Rust(std::panic::Location::caller()),
        )
    }

    /// What `uniform_` writes into `tensor`, shaped like it.
    fn uniform_samples(&self, tensor: &Tensor, from: f64, to: f64) -> Result<Tensor> {
        let dtype = tensor.dtype();
        if !dtype.is_floating_point() {
            return Err(not_implemented("check_uniform_bounds", dtype));
        }
        // Written so that NaN bounds fail the checks too.
        let in_order = from <= to;
        if !in_order {
            return Err(Error::InvalidArgument(format!(
                "uniform_ expects to return a [from, to) range, but found from={} > to={}",
                fmt_number(from),
                fmt_number(to)
            )));
        }
        let max = if dtype == DType::F32 {
            f64::from(f32::MAX)
        } else {
            f64::MAX
        };
        let width_fits = to - from <= max;
        if !width_fits {
            return Err(Error::InvalidArgument(format!(
                "uniform_ expects to-from <= std::numeric_limits<{}>::max(), but found to={} and from={} which result in to-from to exceed the limit",
                dtype.scalar_type_name(),
                fmt_number(to),
                fmt_number(from)
            )));
        }
        let order = MemoryOrder::of(tensor);
        let buffer = self
            .lock()
            .uniform_buffer(tensor.numel(), dtype, from, to)?;
        order.arrange(buffer)
    }

    /// What `normal_` writes into `tensor`, shaped like it.
    fn normal_samples(&self, tensor: &Tensor, mean: f64, std: f64) -> Result<Tensor> {
        let dtype = tensor.dtype();
        if !dtype.is_floating_point() {
            return Err(not_implemented("normal_kernel_cpu", dtype));
        }
        let std_ok = std >= 0.0;
        if !std_ok {
            return Err(Error::InvalidArgument(format!(
                "normal expects std >= 0.0, but found std {}",
                fmt_number(std)
            )));
        }
        let order = MemoryOrder::of(tensor);
        let contiguous = tensor.is_contiguous();
        let buffer = self
            .lock()
            .normal_buffer(tensor.numel(), dtype, mean, std, contiguous)?;
        order.arrange(buffer)
    }
}

impl GeneratorState {
    fn random64(&mut self) -> u64 {
        let hi = u64::from(self.engine.next_u32());
        let lo = u64::from(self.engine.next_u32());
        (hi << 32) | lo
    }

    /// `uniform_real_distribution<float>`: 24 random bits of one 32-bit output.
    fn uniform_f32(&mut self, from: f32, to: f32) -> f32 {
        let bits = self.engine.next_u32() & ((1 << 24) - 1);
        let x = bits as f32 * (1.0 / (1u32 << 24) as f32);
        x.mul_add(to - from, from)
    }

    /// `uniform_real_distribution<double>`: 53 random bits of one 64-bit output.
    fn uniform_f64(&mut self, from: f64, to: f64) -> f64 {
        let bits = self.random64() & ((1 << 53) - 1);
        let x = bits as f64 * (1.0 / (1u64 << 53) as f64);
        x.mul_add(to - from, from)
    }

    /// `uniform_f64(0.0, 1.0)` without the multiply-add (`x * 1 + 0` is `x` exactly,
    /// and `mul_add` is a library call where the build has no FMA instruction).
    fn unit_f64(&mut self) -> f64 {
        let bits = self.random64() & ((1 << 53) - 1);
        bits as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `numel` float32 draws of `unit_f64() < p` (dropout's masks), from the words of
    /// the twister taken in blocks. `bits * 2^-53 < p` is `bits < ceil(p * 2^53)`
    /// exactly (both sides scale by a power of two), so the comparison is on integers
    /// and the loop vectorises.
    fn bernoulli_f32(&mut self, numel: usize, p: f64) -> Result<Vec<f32>> {
        const BLOCK: usize = 512;
        let threshold = (p.clamp(0.0, 1.0) * (1u64 << 53) as f64).ceil() as u64;
        let mut out = try_vec(numel, 0.0f32)?;
        let mut words = [0u32; 2 * BLOCK];
        for chunk in out.chunks_mut(BLOCK) {
            let words = &mut words[..2 * chunk.len()];
            self.engine.fill_u32(words);
            for (m, pair) in chunk.iter_mut().zip(words.chunks_exact(2)) {
                let bits = ((u64::from(pair[0]) << 32) | u64::from(pair[1])) & ((1 << 53) - 1);
                *m = f32::from(u8::from(bits < threshold));
            }
        }
        Ok(out)
    }

    /// `uniform_real_distribution<double>` where PyTorch's compiled code does not fuse
    /// `x * (to - from) + from` into an FMA: its generic (non-AVX2) translation units,
    /// such as the `rrelu` kernel.
    fn uniform_f64_unfused(&mut self, from: f64, to: f64) -> f64 {
        let bits = self.random64() & ((1 << 53) - 1);
        let x = bits as f64 * (1.0 / (1u64 << 53) as f64);
        x * (to - from) + from
    }

    /// `normal_distribution<double>`: Box-Muller on two 53-bit uniforms, the second
    /// sample kept for the next call.
    fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        if let Some(cached) = self.next_double_normal.take() {
            return cached.mul_add(std, mean);
        }
        let u1 = self.uniform_f64(0.0, 1.0);
        let u2 = self.uniform_f64(0.0, 1.0);
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(r * theta.sin());
        (r * theta.cos()).mul_add(std, mean)
    }

    /// `numel` samples of `uniform_(from, to)` in PyTorch's order. A float32 sample
    /// that rounds up to `to` becomes `from`, as in PyTorch's kernel.
    fn uniform_buffer(&mut self, numel: usize, dtype: DType, from: f64, to: f64) -> Result<Buffer> {
        Ok(match dtype {
            DType::F64 => {
                let mut v = try_vec(numel, 0.0f64)?;
                v.iter_mut().for_each(|x| *x = self.uniform_f64(from, to));
                Buffer::F64(v)
            }
            _ => {
                let (from, to) = (from as f32, to as f32);
                let mut v = try_vec(numel, 0.0f32)?;
                for x in v.iter_mut() {
                    let sample = self.uniform_f32(from, to);
                    *x = if sample == to { from } else { sample };
                }
                Buffer::F32(v)
            }
        })
    }

    /// `numel` samples of `normal_(mean, std)` in PyTorch's order: for a contiguous
    /// tensor of 16 or more elements, all uniforms first, then Box-Muller in blocks
    /// of 16 (a partial last block is redrawn as the last 16 elements); otherwise
    /// one `normal_distribution<double>` sample per element, with its cache.
    fn normal_buffer(
        &mut self,
        numel: usize,
        dtype: DType,
        mean: f64,
        std: f64,
        contiguous: bool,
    ) -> Result<Buffer> {
        use box_muller::BLOCK;
        if numel < BLOCK || !contiguous {
            return Ok(match dtype {
                DType::F64 => {
                    let mut v = try_vec(numel, 0.0f64)?;
                    v.iter_mut().for_each(|x| *x = self.normal_f64(mean, std));
                    Buffer::F64(v)
                }
                _ => {
                    let mut v = try_vec(numel, 0.0f32)?;
                    v.iter_mut()
                        .for_each(|x| *x = self.normal_f64(mean, std) as f32);
                    Buffer::F32(v)
                }
            });
        }
        Ok(match dtype {
            DType::F64 => {
                let mut v = try_vec(numel, 0.0f64)?;
                v.iter_mut().for_each(|x| *x = self.uniform_f64(0.0, 1.0));
                blocks(&mut v, |b| box_muller::fill_16_f64(b, mean, std));
                if !numel.is_multiple_of(BLOCK) {
                    let tail = &mut v[numel - BLOCK..];
                    tail.iter_mut()
                        .for_each(|x| *x = self.uniform_f64(0.0, 1.0));
                    box_muller::fill_16_f64(tail, mean, std);
                }
                Buffer::F64(v)
            }
            _ => {
                let (mean, std) = (mean as f32, std as f32);
                let mut v = try_vec(numel, 0.0f32)?;
                v.iter_mut().for_each(|x| *x = self.uniform_f32(0.0, 1.0));
                blocks(&mut v, |b| box_muller::fill_16_f32(b, mean, std));
                if !numel.is_multiple_of(BLOCK) {
                    let tail = &mut v[numel - BLOCK..];
                    tail.iter_mut()
                        .for_each(|x| *x = self.uniform_f32(0.0, 1.0));
                    box_muller::fill_16_f32(tail, mean, std);
                }
                Buffer::F32(v)
            }
        })
    }
}

fn blocks<T>(v: &mut [T], f: impl Fn(&mut [T])) {
    v.chunks_exact_mut(box_muller::BLOCK).for_each(f);
}

/// The order in which PyTorch's TensorIterator visits the elements of a tensor it
/// writes: dimensions sorted by stride, outermost = largest (memory order). Samples
/// drawn in that order are laid out contiguously in the permuted shape, then viewed
/// back in the tensor's own dimension order.
struct MemoryOrder {
    permuted_shape: Vec<usize>,
    /// The tensor's dims in visiting order (outermost first).
    forward: Vec<i64>,
    inverse: Vec<i64>,
}

impl MemoryOrder {
    fn of(tensor: &Tensor) -> MemoryOrder {
        let (shape, strides) = (tensor.shape(), tensor.strides());
        let mut dims: Vec<usize> = (0..shape.len()).collect();
        // Stable: equal strides (size-1 dims) keep their order.
        dims.sort_by(|&a, &b| strides[b].cmp(&strides[a]));
        let mut inverse = vec![0i64; dims.len()];
        for (k, &d) in dims.iter().enumerate() {
            inverse[d] = k as i64;
        }
        MemoryOrder {
            permuted_shape: dims.iter().map(|&d| shape[d]).collect(),
            forward: dims.iter().map(|&d| d as i64).collect(),
            inverse,
        }
    }

    /// The memory order of `torch.empty_like(tensor)` (`preserve_format`):
    /// [`crate::layout::Layout::dense_order`], PyTorch's `infer_dense_strides` order (see
    /// Note [Preserved strides]).
    fn like(tensor: &Tensor) -> MemoryOrder {
        let shape = tensor.shape();
        let ndim = shape.len();
        let dims = tensor.layout().dense_order();
        let mut inverse = vec![0i64; ndim];
        for (k, &d) in dims.iter().enumerate() {
            inverse[d] = k as i64;
        }
        MemoryOrder {
            permuted_shape: dims.iter().map(|&d| shape[d]).collect(),
            forward: dims.iter().map(|&d| d as i64).collect(),
            inverse,
        }
    }

    /// Row-major order over `shape` (a new contiguous tensor's).
    fn contiguous(shape: &[usize]) -> MemoryOrder {
        let dims: Vec<i64> = (0..shape.len() as i64).collect();
        MemoryOrder {
            permuted_shape: shape.to_vec(),
            forward: dims.clone(),
            inverse: dims,
        }
    }

    fn arrange(&self, buffer: Buffer) -> Result<Tensor> {
        self.arrange_tensor(Tensor::from_buffer(buffer, &self.permuted_shape))
    }

    /// A tensor of the permuted shape, viewed back in the original dim order.
    fn arrange_tensor(&self, values: Tensor) -> Result<Tensor> {
        values.permute(&self.inverse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_masks_are_the_per_draw_masks() {
        // Probabilities at and beside representable thresholds, and lengths across
        // block and regeneration boundaries, from a state already partly consumed.
        let ps = [
            0.0,
            1.0,
            0.5,
            0.1,
            0.9,
            1.0 / 3.0,
            f64::from(0.1f32),
            1e-17,
            2.0,
            -1.0,
        ];
        for &p in &ps {
            for numel in [0usize, 1, 511, 512, 513, 1500] {
                let mut a = GeneratorState {
                    engine: Mt19937::new(7),
                    next_float_normal: None,
                    next_double_normal: None,
                };
                a.engine.next_u32();
                let mut b = a.clone();
                let bulk = a.bernoulli_f32(numel, p).unwrap();
                let single: Vec<f32> = (0..numel)
                    .map(|_| f32::from(u8::from(b.unit_f64() < p)))
                    .collect();
                assert_eq!(bulk, single, "p {p} numel {numel}");
                assert_eq!(a.random64(), b.random64(), "same position afterwards");
            }
        }
    }
}
