//! The fused per-element update of one parameter, for each optimizer. See Note
//! [Optimizer steps].
//!
//! Each function follows PyTorch's single-tensor (`foreach=False`) code in
//! `torch/optim/<name>.py` op by op: scalars are computed in f64 as PyTorch's Python
//! does, then rounded to the parameter's dtype (`T::c`) as ATen rounds a Python number
//! operand; every tensor op of PyTorch becomes one expression in `T`, in PyTorch's
//! operand order (`addcmul`: `self + value * t1 * t2`; `addcdiv`: `self + value * t1 /
//! t2`; `add(other, alpha)`: `self + alpha * other`; `lerp`: ATen's two-sided form), so
//! float64 results agree with a numpy transcription to the last bits and float32 with
//! PyTorch's own float32 arithmetic.
//!
//! float16 and bfloat16 parameters compute as ATen's CPU kernels do for them: each op
//! in float32 (ATen's opmath type), its result rounded to the parameter's dtype
//! ([`OptimElement::q`], the identity for float32 and float64); a Python number is a
//! float32 operand of `mul`, `div`, `lerp`, `addcmul` and `addcdiv`, but is rounded to
//! the parameter's dtype as `add`'s `alpha` or as the other operand of `add(x, eps)`
//! ([`OptimElement::scalar`]: `eps = 1e-8` is 0 in float16, as in PyTorch).
//!
//! Speed (Note [Optimizer steps]): the loops run compiled for AVX2 and FMA when the CPU
//! has them ([`StepElement::step`]); a half-precision parameter is updated in blocks of
//! [`HALF_BLOCK`] elements widened to float32 by the `half` crate's slice conversions
//! (F16C), updated as float32 lanes that round each op's result to the half dtype with
//! branch-free bit arithmetic, and narrowed back (exactly: every stored value was
//! already rounded). The operations and their roundings are the same as element by
//! element, so the bits are too.

// `p = p + x` rather than `p += x`: each line reads as the PyTorch op it transcribes.
#![allow(clippy::assign_op_pattern)]

use super::options::{
    AdadeltaOptions, AdagradOptions, AdamOptions, AdamaxOptions, NAdamOptions, Options,
    RAdamOptions, RmsPropOptions, SgdOptions,
};
use crate::dtype::{bf16, f16, Element, Float, Num};
use crate::kernels::math::MathFloat;
use crate::kernels::vmath::avx2_fma_variant;
use half::slice::HalfFloatSliceExt;

/// An element of the update loops: `C` is the type its ops compute in (ATen's opmath
/// type), `q` rounds one op's result to the parameter's dtype. float32 and float64 are
/// their own elements; float16 and bfloat16 values are updated as [`F16Lane`] and
/// [`Bf16Lane`], float32 values rounded as the half dtype.
pub(crate) trait OptimElement: Copy + Send + Sync + 'static {
    /// The compute type.
    type C: MathFloat;
    /// The value in the compute type (exact).
    fn load(self) -> Self::C;
    /// A compute value already rounded by [`OptimElement::q`], stored.
    fn store(v: Self::C) -> Self;
    /// One op's result rounded to this dtype.
    fn q(v: Self::C) -> Self::C;
    /// A Python number as a tensor operand of this dtype: `add`'s `alpha`, or the
    /// wrapped number of `add(x, eps)`.
    fn scalar(v: f64) -> Self::C {
        Self::q(Self::C::c(v))
    }
    /// `a * b + c` as the last step of ATen's `lerp` and `addcmul` computes it: one
    /// fused multiply-add in its vectorised half kernels; two roundings (as PyTorch's
    /// float32 and float64 results are reproduced) otherwise.
    #[inline(always)]
    fn mul_add(a: Self::C, b: Self::C, c: Self::C) -> Self::C {
        a * b + c
    }
}

macro_rules! exact_optim_element {
    ($t:ty) => {
        impl OptimElement for $t {
            type C = $t;
            #[inline(always)]
            fn load(self) -> $t {
                self
            }
            #[inline(always)]
            fn store(v: $t) -> $t {
                v
            }
            #[inline(always)]
            fn q(v: $t) -> $t {
                v
            }
        }
    };
}
exact_optim_element!(f32);
exact_optim_element!(f64);

/// `v` rounded to float16 (to nearest, ties to even; float16's subnormals; infinity past
/// its largest finite value), as an f32: `f16::from_f32(v).to_f32()` without the
/// software conversions, since an update rounds several times per element.
///
/// Branch-free (every case is computed, then selected), so that loops over it
/// vectorise.
#[inline(always)]
pub(crate) fn round_f16(v: f32) -> f32 {
    let a = v.abs();
    // Normal range: keep 10 of the 23 mantissa bits, rounding to nearest even (a carry
    // into the exponent is the right result).
    let b = v.to_bits();
    let normal = f32::from_bits(b.wrapping_add(0xFFF + ((b >> 13) & 1)) & !0x1FFF);
    // Below 2^-14: float16's subnormals, multiples of 2^-24. `a + 0.75` lies in
    // [0.5, 1), whose float32 spacing is 2^-24, so the addition rounds `a` to a multiple
    // of 2^-24, ties to even (0.75 is an even multiple), and the subtraction is exact.
    let subnormal = ((a + 0.75) - 0.75).copysign(v);
    let r = if a < 6.103_515_6e-5 {
        subnormal
    } else {
        normal
    };
    // Infinity, or past the midpoint above float16's largest finite 65504.
    let r = if a >= 65520.0 {
        f32::INFINITY.copysign(v)
    } else {
        r
    };
    if a.is_nan() {
        v
    } else {
        r
    }
}

/// `v` rounded to bfloat16 (to nearest, ties to even), as an f32:
/// `bf16::from_f32(v).to_f32()` as branch-free bit arithmetic.
#[inline(always)]
pub(crate) fn round_bf16(v: f32) -> f32 {
    let b = v.to_bits();
    let r = f32::from_bits(b.wrapping_add(0x7FFF + ((b >> 16) & 1)) & 0xFFFF_0000);
    if v.is_nan() {
        v
    } else {
        r
    }
}

/// A float16 value as the update loop holds it: the float32 of equal value. Every
/// result is rounded to float16 by `q` before it is stored, so narrowing it back is
/// exact.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(crate) struct F16Lane(f32);

/// A bfloat16 value as the update loop holds it (see [`F16Lane`]).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(crate) struct Bf16Lane(f32);

macro_rules! half_lane {
    ($lane:ident, $round:ident) => {
        impl OptimElement for $lane {
            type C = f32;
            #[inline(always)]
            fn load(self) -> f32 {
                self.0
            }
            #[inline(always)]
            fn store(v: f32) -> $lane {
                $lane(v)
            }
            #[inline(always)]
            fn q(v: f32) -> f32 {
                $round(v)
            }
            #[inline(always)]
            fn mul_add(a: f32, b: f32, c: f32) -> f32 {
                a.mul_add(b, c)
            }
        }
    };
}
half_lane!(F16Lane, round_f16);
half_lane!(Bf16Lane, round_bf16);

/// Elements of one block of a half-precision parameter's update: 2 KiB per slice, the
/// parameter, its gradient and up to three buffers widened side by side in L1.
pub(crate) const HALF_BLOCK: usize = 512;

/// Most buffers an optimizer keeps per parameter (Adam with amsgrad, RMSprop centered
/// with momentum).
const MAX_BUFFERS: usize = 3;

/// A parameter dtype the optimizers update.
pub(crate) trait StepElement: Element {
    /// Runs `options`' update over one parameter's elements: `p` the parameter, `g` its
    /// gradient, `bufs` its buffers in [`Options::buffer_names`] order, all of one length.
    fn step(
        options: &Options,
        s: &StepScalars,
        p: &mut [Self],
        g: &[Self],
        bufs: &mut [&mut [Self]],
    );
}

impl StepElement for f32 {
    fn step(options: &Options, s: &StepScalars, p: &mut [f32], g: &[f32], bufs: &mut [&mut [f32]]) {
        apply(options, s, p, g, bufs);
    }
}

impl StepElement for f64 {
    fn step(options: &Options, s: &StepScalars, p: &mut [f64], g: &[f64], bufs: &mut [&mut [f64]]) {
        apply(options, s, p, g, bufs);
    }
}

macro_rules! half_step_element {
    ($t:ty, $lane:ident) => {
        impl StepElement for $t {
            fn step(
                options: &Options,
                s: &StepScalars,
                p: &mut [$t],
                g: &[$t],
                bufs: &mut [&mut [$t]],
            ) {
                step_widened(
                    options,
                    s,
                    p,
                    g,
                    bufs,
                    |src: &[$t], dst: &mut [$lane], wide: &mut [f32]| {
                        src.convert_to_f32_slice(wide);
                        for (d, &v) in dst.iter_mut().zip(wide.iter()) {
                            *d = $lane(v);
                        }
                    },
                    |src: &[$lane], dst: &mut [$t], wide: &mut [f32]| {
                        for (w, v) in wide.iter_mut().zip(src) {
                            *w = v.0;
                        }
                        dst.convert_from_f32_slice(wide);
                    },
                );
            }
        }
    };
}
half_step_element!(f16, F16Lane);
half_step_element!(bf16, Bf16Lane);

/// The update of a half-precision parameter, [`HALF_BLOCK`] elements at a time:
/// `widen` converts a block of stored values to lanes, `narrow` back (both through a
/// float32 scratch slice of the block's length).
#[allow(clippy::too_many_arguments)]
fn step_widened<H: Copy, L: OptimElement + Default>(
    options: &Options,
    s: &StepScalars,
    p: &mut [H],
    g: &[H],
    bufs: &mut [&mut [H]],
    widen: impl Fn(&[H], &mut [L], &mut [f32]),
    narrow: impl Fn(&[L], &mut [H], &mut [f32]),
) {
    assert!(
        bufs.len() <= MAX_BUFFERS,
        "rustgrad internal error: more optimizer buffers than the update handles"
    );
    let mut wide = [0.0f32; HALF_BLOCK];
    let mut wp = [L::default(); HALF_BLOCK];
    let mut wg = [L::default(); HALF_BLOCK];
    let mut wb = [[L::default(); HALF_BLOCK]; MAX_BUFFERS];
    let mut start = 0;
    while start < p.len() {
        let n = HALF_BLOCK.min(p.len() - start);
        let span = start..start + n;
        widen(&p[span.clone()], &mut wp[..n], &mut wide[..n]);
        widen(&g[span.clone()], &mut wg[..n], &mut wide[..n]);
        for (w, b) in wb.iter_mut().zip(bufs.iter()) {
            widen(&b[span.clone()], &mut w[..n], &mut wide[..n]);
        }
        {
            let mut views: smallvec::SmallVec<[&mut [L]; MAX_BUFFERS]> = wb
                .iter_mut()
                .take(bufs.len())
                .map(|w| &mut w[..n])
                .collect();
            apply(options, s, &mut wp[..n], &wg[..n], &mut views);
        }
        narrow(&wp[..n], &mut p[span.clone()], &mut wide[..n]);
        for (w, b) in wb.iter().zip(bufs.iter_mut()) {
            narrow(&w[..n], &mut b[span.clone()], &mut wide[..n]);
        }
        start += n;
    }
}

/// The scalars of one parameter's step that come from its state.
pub(crate) struct StepScalars {
    /// The step count after this step's increment.
    pub step: f64,
    /// NAdam's `mu_product` after this step's factor.
    pub mu_product: f64,
    /// NAdam's `mu` of this step.
    pub mu: f64,
    /// SGD: the momentum buffer was just created, so it takes the gradient's value.
    pub fresh_buffer: bool,
}

/// ATen's `lerp(self, end, weight)`, precise at both ends of the weight.
#[inline(always)]
fn lerp<S: OptimElement>(start: S::C, end: S::C, weight: S::C, small_weight: bool) -> S::C {
    let diff = end - start;
    if small_weight {
        S::mul_add(weight, diff, start)
    } else {
        S::mul_add(-diff, S::C::ONE - weight, end)
    }
}

/// ATen's `addcmul(self, t1, t2, value)`: `self + value * t1 * t2`.
#[inline(always)]
fn addcmul<S: OptimElement>(this: S::C, value: S::C, t1: S::C, t2: S::C) -> S::C {
    S::mul_add(value * t1, t2, this)
}

/// A lerp weight as ATen takes it: rounded to the compute type, and whether
/// `|weight| < 0.5`.
fn lerp_weight<T: MathFloat>(weight: f64) -> (T, bool) {
    let w = T::c(weight);
    (w, w.to_f64().abs() < 0.5)
}

/// `torch.maximum`: NaN if either is NaN.
#[inline(always)]
fn maximum<T: MathFloat>(a: T, b: T) -> T {
    if a.is_nan() || a > b {
        a
    } else {
        b
    }
}

#[inline(always)]
fn abs<T: MathFloat>(x: T) -> T {
    if x < T::ZERO {
        -x
    } else if x == T::ZERO {
        T::ZERO
    } else {
        x
    }
}

/// The gradient as the update sees it: negated for `maximize`, plus `weight_decay *
/// param` when the decay is an L2 penalty (`grad.add(param, alpha=weight_decay)`).
#[inline(always)]
fn effective_grad<S: OptimElement>(g: S::C, p: S::C, maximize: bool, l2: Option<S::C>) -> S::C {
    // Selects rather than branches (both sides are computed), so loops vectorise.
    let g = if maximize { -g } else { g };
    let decayed = S::q(g + l2.unwrap_or(S::C::ZERO) * p);
    if l2.is_some() {
        decayed
    } else {
        g
    }
}

/// `add`'s `alpha = weight_decay` of an L2 penalty, if it applies.
fn l2<S: OptimElement>(weight_decay: f64, decoupled: bool) -> Option<S::C> {
    (weight_decay != 0.0 && !decoupled).then(|| S::scalar(weight_decay))
}

/// The factor `1 - lr * weight_decay` that decoupled weight decay (AdamW's, and Adam's
/// family with `decoupled_weight_decay`) multiplies the parameter by, if it applies.
fn decoupled_decay<T: MathFloat>(weight_decay: f64, decoupled: bool, lr: f64) -> Option<T> {
    (weight_decay != 0.0 && decoupled).then(|| T::c(1.0 - lr * weight_decay))
}

avx2_fma_variant!(fn apply<S: OptimElement>(
    options: &Options,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) = apply_any);

/// Runs `options`' update over one parameter's elements: `p` the parameter, `g` its
/// gradient, `bufs` its buffers in [`Options::buffer_names`] order, all of one length
/// (each is cut to `p`'s length first, so that the loops index without bounds checks).
#[inline(always)]
fn apply_any<S: OptimElement>(
    options: &Options,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) {
    let n = p.len();
    let g = &g[..n];
    for b in bufs.iter_mut() {
        let whole = std::mem::take(b);
        *b = &mut whole[..n];
    }
    match options {
        Options::Sgd(o) => sgd(o, s, p, g, bufs),
        Options::Adam(o) => adam(o, s, p, g, bufs),
        Options::Adamax(o) => adamax(o, s, p, g, bufs),
        Options::NAdam(o) => nadam(o, s, p, g, bufs),
        Options::RAdam(o) => radam(o, s, p, g, bufs),
        Options::RmsProp(o) => rmsprop(o, p, g, bufs),
        Options::Adagrad(o) => adagrad(o, s, p, g, bufs),
        Options::Adadelta(o) => adadelta(o, p, g, bufs),
    }
}

#[inline(always)]
fn sgd<S: OptimElement>(
    o: &SgdOptions,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) {
    let q = S::q;
    let l2 = l2::<S>(o.weight_decay, false);
    let neg_lr = S::scalar(-o.lr);
    let momentum = S::C::c(o.momentum);
    let (momentum_alpha, keep) = (S::scalar(o.momentum), S::scalar(1.0 - o.dampening));
    match bufs {
        [] => {
            for (p, &g) in p.iter_mut().zip(g) {
                let pv = p.load();
                let d = effective_grad::<S>(g.load(), pv, o.maximize, l2);
                *p = S::store(q(pv + neg_lr * d));
            }
        }
        [buf] => {
            for ((p, &g), b) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
                let pv = p.load();
                let d = effective_grad::<S>(g.load(), pv, o.maximize, l2);
                let bv = if s.fresh_buffer {
                    d
                } else {
                    q(q(b.load() * momentum) + keep * d)
                };
                *b = S::store(bv);
                let d = if o.nesterov {
                    q(d + momentum_alpha * bv)
                } else {
                    bv
                };
                *p = S::store(q(pv + neg_lr * d));
            }
        }
        _ => unreachable!("rustgrad internal error: SGD has at most one buffer"),
    }
}

/// The part of an update that Adam, NAdam and RAdam share: decoupled weight decay of the
/// parameter, the effective gradient, then `exp_avg.lerp_(d, 1 - beta1)` and
/// `exp_avg_sq.mul_(beta2).addcmul_(d, d, value=1 - beta2)`, each rounded as ATen rounds
/// its ops in the parameter's dtype.
struct Moments<S: OptimElement> {
    l2: Option<S::C>,
    decay: Option<S::C>,
    maximize: bool,
    w1: S::C,
    small1: bool,
    b2: S::C,
    one_minus_b2: S::C,
}

impl<S: OptimElement> Moments<S> {
    fn new(betas: (f64, f64), lr: f64, weight_decay: f64, decoupled: bool, maximize: bool) -> Self {
        let (w1, small1) = lerp_weight::<S::C>(1.0 - betas.0);
        Moments {
            l2: l2::<S>(weight_decay, decoupled),
            decay: decoupled_decay::<S::C>(weight_decay, decoupled, lr),
            maximize,
            w1,
            small1,
            b2: S::C::c(betas.1),
            one_minus_b2: S::C::c(1.0 - betas.1),
        }
    }

    /// Updates one element's moments: returns the (decayed) parameter, the effective
    /// gradient and the new first and second moments (computed, not stored, so that the
    /// callers' loops are pure maps that vectorise).
    #[inline(always)]
    fn update(&self, p: S, g: S, exp_avg: S, exp_avg_sq: S) -> (S::C, S::C, S::C, S::C) {
        let q = S::q;
        let mut pv = p.load();
        let decayed = q(pv * self.decay.unwrap_or(S::C::ONE));
        if self.decay.is_some() {
            pv = decayed;
        }
        let d = effective_grad::<S>(g.load(), pv, self.maximize, self.l2);
        let m = q(lerp::<S>(exp_avg.load(), d, self.w1, self.small1));
        let v = q(addcmul::<S>(
            q(exp_avg_sq.load() * self.b2),
            self.one_minus_b2,
            d,
            d,
        ));
        (pv, d, m, v)
    }
}

#[inline(always)]
fn adam<S: OptimElement>(
    o: &AdamOptions,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) {
    type C<S> = <S as OptimElement>::C;
    let q = S::q;
    let (beta1, beta2) = o.betas;
    let moments = Moments::new(
        o.betas,
        o.lr,
        o.weight_decay,
        o.decoupled_weight_decay,
        o.maximize,
    );
    let bias_correction1 = 1.0 - beta1.powf(s.step);
    let bias_correction2 = 1.0 - beta2.powf(s.step);
    let neg_step_size = C::<S>::c(-(o.lr / bias_correction1));
    let bc2_sqrt = C::<S>::c(bias_correction2.powf(0.5));
    let eps = S::scalar(o.eps);
    let (exp_avg, rest) = bufs
        .split_first_mut()
        .expect("rustgrad internal error: Adam buffers");
    let (exp_avg_sq, rest) = rest
        .split_first_mut()
        .expect("rustgrad internal error: Adam buffers");
    let finish = |pv: C<S>, m: C<S>, second: C<S>| {
        let denom = q(q(q(second.sqrt()) / bc2_sqrt) + eps);
        S::store(q(pv + neg_step_size * m / denom))
    };
    // Zipped slices and no stores under a condition: the loops vectorise.
    match rest.first_mut() {
        Some(max_sq) => {
            for ((((p, &g), m_out), v_out), mx) in p
                .iter_mut()
                .zip(g)
                .zip(exp_avg.iter_mut())
                .zip(exp_avg_sq.iter_mut())
                .zip(max_sq.iter_mut())
            {
                let (pv, _, m, v) = moments.update(*p, g, *m_out, *v_out);
                *m_out = S::store(m);
                *v_out = S::store(v);
                let second = maximum(mx.load(), v);
                *mx = S::store(second);
                *p = finish(pv, m, second);
            }
        }
        None => {
            for (((p, &g), m_out), v_out) in p
                .iter_mut()
                .zip(g)
                .zip(exp_avg.iter_mut())
                .zip(exp_avg_sq.iter_mut())
            {
                let (pv, _, m, v) = moments.update(*p, g, *m_out, *v_out);
                *m_out = S::store(m);
                *v_out = S::store(v);
                *p = finish(pv, m, v);
            }
        }
    }
}

#[inline(always)]
fn adamax<S: OptimElement>(
    o: &AdamaxOptions,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) {
    type C<S> = <S as OptimElement>::C;
    let q = S::q;
    let (beta1, beta2) = o.betas;
    let l2 = l2::<S>(o.weight_decay, false);
    let (w1, small1) = lerp_weight::<C<S>>(1.0 - beta1);
    let (b2, eps) = (C::<S>::c(beta2), S::scalar(o.eps));
    let neg_clr = C::<S>::c(-(o.lr / (1.0 - beta1.powf(s.step))));
    let [exp_avg, exp_inf] = bufs else {
        unreachable!("rustgrad internal error: Adamax has two buffers")
    };
    for i in 0..p.len() {
        let pv = p[i].load();
        let d = effective_grad::<S>(g[i].load(), pv, o.maximize, l2);
        let m = q(lerp::<S>(exp_avg[i].load(), d, w1, small1));
        exp_avg[i] = S::store(m);
        let u = maximum(q(exp_inf[i].load() * b2), q(abs(d) + eps));
        exp_inf[i] = S::store(u);
        p[i] = S::store(q(pv + neg_clr * m / u));
    }
}

#[inline(always)]
fn nadam<S: OptimElement>(
    o: &NAdamOptions,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) {
    type C<S> = <S as OptimElement>::C;
    let q = S::q;
    let (beta1, beta2) = o.betas;
    let moments = Moments::new(
        o.betas,
        o.lr,
        o.weight_decay,
        o.decoupled_weight_decay,
        o.maximize,
    );
    let bias_correction2 = C::<S>::c(1.0 - beta2.powf(s.step));
    let mu_next = beta1 * (1.0 - 0.5 * 0.96f64.powf((s.step + 1.0) * o.momentum_decay));
    let mu_product_next = s.mu_product * mu_next;
    let grad_scale = C::<S>::c(-o.lr * (1.0 - s.mu) / (1.0 - s.mu_product));
    let avg_scale = C::<S>::c((-o.lr * mu_next) / (1.0 - mu_product_next));
    let eps = S::scalar(o.eps);
    let [exp_avg, exp_avg_sq] = bufs else {
        unreachable!("rustgrad internal error: NAdam has two buffers")
    };
    for i in 0..p.len() {
        let (mut pv, d, m, v) = moments.update(p[i], g[i], exp_avg[i], exp_avg_sq[i]);
        exp_avg[i] = S::store(m);
        exp_avg_sq[i] = S::store(v);
        let denom = q(q(q(v / bias_correction2).sqrt()) + eps);
        pv = q(pv + grad_scale * d / denom);
        p[i] = S::store(q(pv + avg_scale * m / denom));
    }
}

#[inline(always)]
fn radam<S: OptimElement>(
    o: &RAdamOptions,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) {
    type C<S> = <S as OptimElement>::C;
    let q = S::q;
    let (beta1, beta2) = o.betas;
    let moments = Moments::new(
        o.betas,
        o.lr,
        o.weight_decay,
        o.decoupled_weight_decay,
        o.maximize,
    );
    let eps = S::scalar(o.eps);
    let bias_correction1 = 1.0 - beta1.powf(s.step);
    let bias_correction2 = 1.0 - beta2.powf(s.step);
    let rho_inf = 2.0 / (1.0 - beta2) - 1.0;
    let rho_t = rho_inf - 2.0 * s.step * beta2.powf(s.step) / bias_correction2;
    // PyTorch's rectified update only once the variance is tractable (rho_t > 5).
    let rectified = (rho_t > 5.0).then(|| {
        let rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
            / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
            .powf(0.5);
        (C::<S>::c(bias_correction2.powf(0.5)), C::<S>::c(rect))
    });
    let (bc1, lr) = (C::<S>::c(bias_correction1), C::<S>::c(o.lr));
    let [exp_avg, exp_avg_sq] = bufs else {
        unreachable!("rustgrad internal error: RAdam has two buffers")
    };
    for i in 0..p.len() {
        let (pv, _, m, v) = moments.update(p[i], g[i], exp_avg[i], exp_avg_sq[i]);
        exp_avg[i] = S::store(m);
        exp_avg_sq[i] = S::store(v);
        let corrected = q(m / bc1);
        let update = match rectified {
            Some((bc2_sqrt, rect)) => {
                // `bias_correction2**0.5 / t` is Tensor.__rtruediv__: `t.reciprocal() * x`.
                let adaptive_lr = q(q(C::<S>::ONE / q(q(v.sqrt()) + eps)) * bc2_sqrt);
                q(q(q(corrected * lr) * adaptive_lr) * rect)
            }
            None => q(corrected * lr),
        };
        p[i] = S::store(q(pv - update));
    }
}

#[inline(always)]
fn rmsprop<S: OptimElement>(o: &RmsPropOptions, p: &mut [S], g: &[S], bufs: &mut [&mut [S]]) {
    type C<S> = <S as OptimElement>::C;
    let q = S::q;
    let l2 = l2::<S>(o.weight_decay, false);
    let (alpha, one_minus_alpha) = (C::<S>::c(o.alpha), C::<S>::c(1.0 - o.alpha));
    let (w, small) = lerp_weight::<C<S>>(1.0 - o.alpha);
    let (eps, momentum) = (S::scalar(o.eps), C::<S>::c(o.momentum));
    // `addcdiv`'s value is a compute-type number, `add`'s alpha one of the dtype.
    let (neg_lr, neg_lr_alpha) = (C::<S>::c(-o.lr), S::scalar(-o.lr));
    let (square_avg, rest) = bufs
        .split_first_mut()
        .expect("rustgrad internal error: RMSprop buffers");
    let (mut momentum_buffer, mut grad_avg) = match rest {
        [] => (None, None),
        [b] if o.momentum > 0.0 => (Some(b), None),
        [a] => (None, Some(a)),
        [b, a] => (Some(b), Some(a)),
        _ => unreachable!("rustgrad internal error: RMSprop has at most three buffers"),
    };
    let one = C::<S>::ONE;
    for i in 0..p.len() {
        let pv = p[i].load();
        let d = effective_grad::<S>(g[i].load(), pv, o.maximize, l2);
        let sq = q(addcmul::<S>(
            q(square_avg[i].load() * alpha),
            one_minus_alpha,
            d,
            d,
        ));
        square_avg[i] = S::store(sq);
        let avg = match grad_avg.as_deref_mut() {
            Some(ga) => {
                let a = q(lerp::<S>(ga[i].load(), d, w, small));
                ga[i] = S::store(a);
                q(q(addcmul::<S>(sq, -one, a, a)).sqrt())
            }
            None => q(sq.sqrt()),
        };
        let avg = q(avg + eps);
        match momentum_buffer.as_deref_mut() {
            Some(b) => {
                let bv = q(q(b[i].load() * momentum) + one * d / avg);
                b[i] = S::store(bv);
                p[i] = S::store(q(pv + neg_lr_alpha * bv));
            }
            None => p[i] = S::store(q(pv + neg_lr * d / avg)),
        }
    }
}

#[inline(always)]
fn adagrad<S: OptimElement>(
    o: &AdagradOptions,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) {
    type C<S> = <S as OptimElement>::C;
    let q = S::q;
    let l2 = l2::<S>(o.weight_decay, false);
    let neg_clr = C::<S>::c(-(o.lr / (1.0 + (s.step - 1.0) * o.lr_decay)));
    let eps = S::scalar(o.eps);
    let one = C::<S>::ONE;
    let [sum] = bufs else {
        unreachable!("rustgrad internal error: Adagrad has one buffer")
    };
    for i in 0..p.len() {
        let pv = p[i].load();
        let d = effective_grad::<S>(g[i].load(), pv, o.maximize, l2);
        let sv = q(addcmul::<S>(sum[i].load(), one, d, d));
        sum[i] = S::store(sv);
        let std = q(q(sv.sqrt()) + eps);
        p[i] = S::store(q(pv + neg_clr * d / std));
    }
}

#[inline(always)]
fn adadelta<S: OptimElement>(o: &AdadeltaOptions, p: &mut [S], g: &[S], bufs: &mut [&mut [S]]) {
    type C<S> = <S as OptimElement>::C;
    let q = S::q;
    let l2 = l2::<S>(o.weight_decay, false);
    let (rho, one_minus_rho) = (C::<S>::c(o.rho), C::<S>::c(1.0 - o.rho));
    let (eps, neg_lr) = (S::scalar(o.eps), S::scalar(-o.lr));
    let [square_avg, acc_delta] = bufs else {
        unreachable!("rustgrad internal error: Adadelta has two buffers")
    };
    for i in 0..p.len() {
        let pv = p[i].load();
        let d = effective_grad::<S>(g[i].load(), pv, o.maximize, l2);
        let sq = q(addcmul::<S>(
            q(square_avg[i].load() * rho),
            one_minus_rho,
            d,
            d,
        ));
        square_avg[i] = S::store(sq);
        let std = q(q(sq + eps).sqrt());
        let acc = acc_delta[i].load();
        let delta = q(q(q(q(acc + eps).sqrt()) / std) * d);
        acc_delta[i] = S::store(q(addcmul::<S>(q(acc * rho), one_minus_rho, delta, delta)));
        p[i] = S::store(q(pv + neg_lr * delta));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bit-arithmetic roundings agree with the `half` crate's conversions on edge
    /// cases and on a sweep of f32 bit patterns (every 4099th, both signs).
    #[test]
    fn fast_roundings_match_the_half_crate() {
        let check = |v: f32| {
            let (want16, got16) = (f16::from_f32(v).to_f32(), round_f16(v));
            assert!(
                want16.to_bits() == got16.to_bits() || (want16.is_nan() && got16.is_nan()),
                "f16 {v:e} ({:#x}): {want16:e} vs {got16:e}",
                v.to_bits()
            );
            let (want, got) = (bf16::from_f32(v).to_f32(), round_bf16(v));
            assert!(
                want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                "bf16 {v:e}: {want:e} vs {got:e}"
            );
        };
        for v in [
            0.0,
            -0.0,
            1.0,
            65504.0,
            65519.99,
            65520.0,
            65536.0,
            6.103_515_6e-5,
            6.103_515e-5,
            5.960_464_5e-8,
            2.980_232_2e-8,
            2.980_233e-8,
            1e-8,
            -1e-8,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e-40,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ] {
            check(v);
            check(-v);
        }
        let mut bits = 0u32;
        while let Some(next) = bits.checked_add(4099) {
            check(f32::from_bits(next));
            bits = next;
        }
    }
}
