//! Optimizers: PyTorch's update rules, run in place under no-grad. See Note [Optimizer
//! steps].
//!
//! [`step_group`] is the one entry point that updates parameters: it runs one group's
//! update over its parameters in parallel on the engine's pool, each parameter in one
//! fused pass over its elements. [`Optimizer`] keeps param groups and their state for
//! Rust users; the Python binding keeps the state in Python dicts and calls
//! [`step_group`] directly.

mod lbfgs;
mod options;
mod sgd;
mod update;

pub use lbfgs::{Lbfgs, LbfgsOptions};
pub use options::{
    AdadeltaOptions, AdagradOptions, AdamOptions, AdamaxOptions, NAdamOptions, Options,
    RAdamOptions, RmsPropOptions, SgdOptions,
};
pub use sgd::Sgd;

use crate::autograd::grad_mode::no_grad;
use crate::dtype::{bf16, f16, DType, Element};
use crate::error::{Error, Result};
use crate::parallel;
use crate::storage::WriteSite;
use crate::tensor::Tensor;
use crate::variable::Variable;
use std::panic::Location;
use std::sync::Arc;
use update::{StepElement, StepScalars};

/// One parameter's optimizer state, as PyTorch's `optimizer.state[p]` holds it.
#[derive(Clone, Debug, Default)]
pub struct ParamState {
    /// `state["step"]`: a 0-d tensor (float32 when created here, like PyTorch's), for
    /// every optimizer but SGD; `None` until the first step.
    pub step: Option<Tensor>,
    /// NAdam's `state["mu_product"]`, a 0-d tensor.
    pub mu_product: Option<Tensor>,
    /// The buffers named by [`Options::buffer_names`], in that order; `None` until the
    /// first step creates them.
    pub buffers: Vec<Option<Tensor>>,
}

impl ParamState {
    /// The state PyTorch creates when the optimizer is constructed: Adagrad's `step`
    /// and `sum` (filled with `initial_accumulator_value`); nothing for the others.
    pub fn initial(options: &Options, param: &Variable) -> Result<ParamState> {
        Ok(match options {
            Options::Adagrad(o) => ParamState {
                step: Some(Tensor::scalar(0.0, DType::F32)),
                mu_product: None,
                buffers: vec![Some(Tensor::full(
                    &param.shape(),
                    o.initial_accumulator_value,
                    param.dtype(),
                )?)],
            },
            _ => ParamState::default(),
        })
    }
}

fn scalar_value(t: &Tensor) -> Result<f64> {
    if t.numel() != 1 {
        return Err(Error::InvalidArgument(format!(
            "rustgrad: optimizer state scalars must have one element, got shape {:?}",
            t.shape()
        )));
    }
    Ok(t.item()?.to_f64())
}

/// `value` rounded to `dtype` (what storing it in a tensor of that dtype does).
fn round_to(dtype: DType, value: f64) -> f64 {
    match dtype {
        DType::F32 => value as f32 as f64,
        DType::F16 => f16::from_f32(value as f32).to_f64(),
        DType::BF16 => bf16::from_f32(value as f32).to_f64(),
        _ => value,
    }
}

/// The type ATen computes an op on a `dtype` tensor in (its opmath type): float32 for
/// the half types.
fn opmath(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// Performs one optimizer step for the parameters of one group: parameters without a
/// gradient are skipped; `states[i]` is `params[i]`'s state, created or completed as
/// needed. Runs under no-grad, writes every parameter and buffer in place (one version
/// bump each) and runs over the parameters in parallel on the engine's pool (a large
/// parameter also in pieces); each element is computed independently, so the result
/// does not depend on the thread count.
#[track_caller]
pub fn step_group(options: &Options, params: &[Variable], states: &mut [ParamState]) -> Result<()> {
    step_group_at(options, params, states, WriteSite::Rust(Location::caller()))
}

/// [`step_group`] recording `site` as the place of the writes (front ends pass their own
/// source location).
pub fn step_group_at(
    options: &Options,
    params: &[Variable],
    states: &mut [ParamState],
    site: WriteSite,
) -> Result<()> {
    let Some(scope) = crate::jit::Scope::enter() else {
        return step_group_impl(options, params, states, site);
    };
    step_group_impl(options, params, states, site)?;
    let inputs: Vec<&Variable> = params.iter().collect();
    let op = || crate::jit::Op::OptimStep {
        options: options.clone(),
        states: std::sync::Mutex::new(states.to_vec()),
    };
    scope.finish(op, &inputs, &[]);
    Ok(())
}

fn step_group_impl(
    options: &Options,
    params: &[Variable],
    states: &mut [ParamState],
    site: WriteSite,
) -> Result<()> {
    if params.len() != states.len() {
        return Err(Error::InvalidArgument(format!(
            "rustgrad: step_group got {} parameters and {} states",
            params.len(),
            states.len()
        )));
    }
    let _guard = no_grad();
    struct Job<'a> {
        param: &'a Variable,
        state: &'a mut ParamState,
        result: Result<()>,
    }
    let mut jobs: Vec<Job<'_>> = params
        .iter()
        .zip(states.iter_mut())
        .map(|(param, state)| Job {
            param,
            state,
            result: Ok(()),
        })
        .collect();
    parallel::for_each_chunk_mut(&mut jobs, 1, |_, chunk| {
        for job in chunk {
            job.result = step_param(options, job.param, job.state, &site);
        }
    });
    jobs.into_iter().try_for_each(|j| j.result)
}

fn step_param(
    options: &Options,
    param: &Variable,
    state: &mut ParamState,
    site: &WriteSite,
) -> Result<()> {
    let Some(grad) = param.grad() else {
        return Ok(());
    };
    let p = param.tensor();
    let g = grad.tensor();
    if g.shape() != p.shape() {
        return Err(Error::InvalidArgument(format!(
            "rustgrad: the gradient of shape {:?} does not match its parameter of shape {:?}",
            g.shape(),
            p.shape()
        )));
    }
    match p.dtype() {
        DType::F32 => step_typed::<f32>(options, &p, &g, state, site),
        DType::F64 => step_typed::<f64>(options, &p, &g, state, site),
        DType::F16 => step_typed::<f16>(options, &p, &g, state, site),
        DType::BF16 => step_typed::<bf16>(options, &p, &g, state, site),
        dtype => Err(Error::NotImplemented(format!(
            "rustgrad: optimizers update floating-point parameters, not {}",
            dtype.torch_name()
        ))),
    }
}

/// Counts the step in `state` and returns the scalars of this step.
fn advance_scalars(
    options: &Options,
    state: &mut ParamState,
    site: &WriteSite,
) -> Result<StepScalars> {
    let mut scalars = StepScalars {
        step: 0.0,
        mu_product: 1.0,
        mu: 0.0,
        fresh_buffer: false,
    };
    if options.has_step() {
        let step = state
            .step
            .get_or_insert_with(|| Tensor::scalar(0.0, DType::F32));
        scalars.step = round_to(step.dtype(), scalar_value(step)? + 1.0);
        step.fill(scalars.step, site.clone())?;
    }
    if let Options::NAdam(o) = options {
        let mu_product = state
            .mu_product
            .get_or_insert_with(|| Tensor::scalar(1.0, DType::F32));
        let dtype = mu_product.dtype();
        let mu = o.betas.0 * (1.0 - 0.5 * 0.96f64.powf(scalars.step * o.momentum_decay));
        // `mu_product *= mu` on a tensor: computed in its opmath type with `mu` rounded to
        // that type, the product rounded to the tensor's dtype.
        scalars.mu = mu;
        let op = opmath(dtype);
        let product = round_to(op, scalar_value(mu_product)? * round_to(op, mu));
        scalars.mu_product = round_to(dtype, product);
        mu_product.fill(scalars.mu_product, site.clone())?;
    }
    Ok(scalars)
}

fn step_typed<T: StepElement>(
    options: &Options,
    p: &Tensor,
    g: &Tensor,
    state: &mut ParamState,
    site: &WriteSite,
) -> Result<()> {
    let names = options.buffer_names();
    state.buffers.resize(names.len(), None);
    // The buffers are checked before the step is counted, so that a refused step leaves
    // the state as it was.
    let mut fresh_buffer = false;
    for buf in state.buffers.iter_mut() {
        match buf {
            None => {
                fresh_buffer = true;
                *buf = Some(Tensor::full(
                    p.shape(),
                    options.initial_buffer_value(),
                    T::DTYPE,
                )?);
            }
            // A loaded buffer that is not a plain contiguous tensor of the parameter's
            // dtype is replaced by one, as PyTorch casts loaded state to the parameter.
            Some(t) if t.dtype() != T::DTYPE || !t.is_contiguous() => {
                if t.shape() != p.shape() {
                    return Err(buffer_shape_error(t, p));
                }
                *t = t.to_dtype(T::DTYPE)?.deep_clone()?;
            }
            Some(t) if t.shape() != p.shape() => return Err(buffer_shape_error(t, p)),
            Some(_) => {}
        }
    }
    let grad: Vec<T> = gradient_values(g)?;
    let scalars = StepScalars {
        fresh_buffer,
        ..advance_scalars(options, state, site)?
    };
    let buffers: Vec<&Tensor> = state
        .buffers
        .iter()
        .map(|b| {
            b.as_ref()
                .expect("rustgrad internal error: buffer created above")
        })
        .collect();
    if p.is_contiguous() {
        let mut targets = buffers;
        targets.push(p);
        with_slices_mut::<T>(&targets, site, |slices| {
            let (param, bufs) = slices
                .split_last_mut()
                .expect("rustgrad internal error: the parameter is a target");
            apply_in_pieces(options, &scalars, param, &grad, bufs);
        })
    } else {
        // A strided parameter: update its values as a contiguous copy, then write them
        // back with one copy (one version bump).
        let mut values: Vec<T> = p.try_to_vec()?;
        with_slices_mut::<T>(&buffers, site, |bufs| {
            apply_in_pieces(options, &scalars, &mut values, &grad, bufs);
        })?;
        p.copy_from(&Tensor::from_vec(values, p.shape())?, site.clone())
    }
}

/// The gradient's elements as `T`, copied (the update then holds no lock on it, so it
/// may share a storage with anything): a contiguous gradient of the parameter's dtype,
/// the usual case, is one `memcpy`; any other goes through `try_to_vec`'s conversion.
fn gradient_values<T: Element>(g: &Tensor) -> Result<Vec<T>> {
    if g.dtype() != T::DTYPE || !g.is_contiguous() {
        return g.try_to_vec();
    }
    let (start, n) = (g.layout().offset(), g.numel());
    g.layout().check_in_bounds(g.storage().read().len())?;
    let mut out = crate::kernels::try_with_capacity(n)?;
    g.read(|s: &[T]| out.extend_from_slice(&s[start..start + n]));
    Ok(out)
}

/// Runs the update over one parameter's elements; a large parameter is cut into
/// `parallel::CHUNK`-element pieces that run concurrently on the pool (every element's
/// update is independent of the others, so the pieces give the same bits as one pass).
fn apply_in_pieces<T: StepElement>(
    options: &Options,
    scalars: &StepScalars,
    param: &mut [T],
    grad: &[T],
    bufs: &mut [&mut [T]],
) {
    // Measured (Note [Parallel thresholds], the `parallel_threshold` example): an Adam
    // update costs ~0.6 ns per element vectorised and a pool hand-off 12-17 us on the
    // 2-core machine, so splitting pays from about 2^15 elements.
    if param.len() < parallel::PARALLEL_MIN_ELEMENTS {
        return T::step(options, scalars, param, grad, bufs);
    }
    struct Piece<'a, T> {
        param: &'a mut [T],
        grad: &'a [T],
        bufs: Vec<&'a mut [T]>,
    }
    let mut pieces: Vec<Piece<'_, T>> = param
        .chunks_mut(parallel::CHUNK)
        .zip(grad.chunks(parallel::CHUNK))
        .map(|(param, grad)| Piece {
            param,
            grad,
            bufs: Vec::with_capacity(bufs.len()),
        })
        .collect();
    for buf in bufs.iter_mut() {
        for (piece, chunk) in pieces.iter_mut().zip(buf.chunks_mut(parallel::CHUNK)) {
            piece.bufs.push(chunk);
        }
    }
    parallel::for_each_chunk_mut(&mut pieces, 1, |_, run| {
        for piece in run {
            T::step(options, scalars, piece.param, piece.grad, &mut piece.bufs);
        }
    });
}

fn buffer_shape_error(buffer: &Tensor, param: &Tensor) -> Error {
    Error::InvalidArgument(format!(
        "rustgrad: optimizer state of shape {:?} does not match its parameter of shape {:?}",
        buffer.shape(),
        param.shape()
    ))
}

/// Runs `f` on the elements of contiguous `tensors` (in that order), under their
/// storages' write locks taken in storage address order (Note [Locking of storages]);
/// bumps each tensor's version once. Tensors sharing a storage are refused: the update
/// would read and write the same elements through two slices.
fn with_slices_mut<T: Element>(
    tensors: &[&Tensor],
    site: &WriteSite,
    f: impl FnOnce(&mut [&mut [T]]),
) -> Result<()> {
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    let key = |i: usize| Arc::as_ptr(tensors[i].storage()) as usize;
    order.sort_by_key(|&i| key(i));
    if order.windows(2).any(|w| key(w[0]) == key(w[1])) {
        return Err(Error::InvalidArgument(
            "rustgrad: an optimizer state tensor shares memory with its parameter or another state tensor".into(),
        ));
    }
    for t in tensors {
        debug_assert!(t.is_contiguous());
        t.layout().check_in_bounds(t.storage().read().len())?;
    }
    let mut guards: Vec<_> = order
        .iter()
        .map(|&i| (i, tensors[i].storage().write_unversioned()))
        .collect();
    for t in tensors {
        t.version_counter().bump(site.clone());
    }
    let mut slots: Vec<Option<&mut [T]>> = (0..tensors.len()).map(|_| None).collect();
    for (i, guard) in guards.iter_mut() {
        let all = T::slice_mut(guard)
            .expect("rustgrad internal error: storage dtype differs from tensor dtype");
        let start = tensors[*i].layout().offset();
        slots[*i] = Some(&mut all[start..start + tensors[*i].numel()]);
    }
    let mut slices: Vec<&mut [T]> = slots
        .into_iter()
        .map(|s| s.expect("rustgrad internal error: every tensor was locked"))
        .collect();
    f(&mut slices);
    Ok(())
}

/// A group of parameters that share options, and their state.
#[derive(Clone, Debug)]
pub struct ParamGroup {
    /// The parameters.
    pub params: Vec<Variable>,
    /// The options (and update rule) of the group; editable between steps.
    pub options: Options,
    /// `state[i]` belongs to `params[i]`.
    pub state: Vec<ParamState>,
}

/// An optimizer for Rust users: param groups, their options and state, and `step`.
///
/// ```
/// use rustgrad::optim::{AdamOptions, Optimizer, Options};
/// use rustgrad::{Tensor, Variable};
/// let w = Variable::new(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?, true)?;
/// let mut opt = Optimizer::new(vec![w.clone()], Options::Adam(AdamOptions::default()))?;
/// w.mul(&w)?.sum()?.backward()?;
/// opt.step()?;
/// opt.zero_grad()?;
/// # Ok::<(), rustgrad::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Optimizer {
    groups: Vec<ParamGroup>,
}

impl Optimizer {
    /// An optimizer with one group of `params` (PyTorch's checks and messages: invalid
    /// options, "optimizer got an empty parameter list").
    pub fn new(params: Vec<Variable>, options: Options) -> Result<Optimizer> {
        if params.is_empty() {
            return Err(Error::InvalidArgument(
                "optimizer got an empty parameter list".into(),
            ));
        }
        let mut optimizer = Optimizer { groups: Vec::new() };
        optimizer.add_param_group(params, options)?;
        Ok(optimizer)
    }

    /// Adds a group with its own options ("some parameters appear in more than one
    /// parameter group" when one is already optimized).
    pub fn add_param_group(&mut self, params: Vec<Variable>, options: Options) -> Result<()> {
        options.validate()?;
        let seen = |p: &Variable, others: &[Variable]| others.iter().any(|q| q.same(p));
        for (i, p) in params.iter().enumerate() {
            if !p.is_leaf() {
                return Err(Error::InvalidArgument(
                    "can't optimize a non-leaf Tensor".into(),
                ));
            }
            if seen(p, &params[..i]) || self.groups.iter().any(|g| seen(p, &g.params)) {
                return Err(Error::InvalidArgument(
                    "some parameters appear in more than one parameter group".into(),
                ));
            }
        }
        let state = params
            .iter()
            .map(|p| ParamState::initial(&options, p))
            .collect::<Result<_>>()?;
        self.groups.push(ParamGroup {
            params,
            options,
            state,
        });
        Ok(())
    }

    /// The groups.
    pub fn param_groups(&self) -> &[ParamGroup] {
        &self.groups
    }

    /// The groups, to edit their options (a learning-rate schedule) or state.
    pub fn param_groups_mut(&mut self) -> &mut [ParamGroup] {
        &mut self.groups
    }

    /// One update of every group (parameters without a gradient are skipped).
    #[track_caller]
    pub fn step(&mut self) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        for group in &mut self.groups {
            step_group_at(
                &group.options,
                &group.params,
                &mut group.state,
                site.clone(),
            )?;
        }
        Ok(())
    }

    /// Sets every parameter's `.grad` to `None` (PyTorch's `set_to_none=True`).
    pub fn zero_grad(&self) -> Result<()> {
        for p in self.groups.iter().flat_map(|g| &g.params) {
            p.set_grad(None)?;
        }
        Ok(())
    }
}
