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

// `p = p + x` rather than `p += x`: each line reads as the PyTorch op it transcribes.
#![allow(clippy::assign_op_pattern)]

use super::options::{
    AdadeltaOptions, AdagradOptions, AdamOptions, AdamaxOptions, NAdamOptions, Options,
    RAdamOptions, RmsPropOptions, SgdOptions,
};
use crate::dtype::{bf16, f16, Element, Float, Num};
use crate::kernels::math::MathFloat;

/// A parameter dtype the optimizers update: `C` is the type its ops compute in (ATen's
/// opmath type), `q` rounds one op's result to the dtype.
pub(crate) trait OptimElement: Element {
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
#[inline(always)]
pub(crate) fn round_f16(v: f32) -> f32 {
    let a = v.abs();
    if a.is_nan() {
        return v;
    }
    if a >= 65520.0 {
        // Infinity, or past the midpoint above float16's largest finite 65504.
        return f32::INFINITY.copysign(v);
    }
    if a < 6.103_515_6e-5 {
        // Below 2^-14: float16's subnormals, multiples of 2^-24 (exact in f32).
        return (v * 16_777_216.0).round_ties_even() * 5.960_464_5e-8;
    }
    // Keep 10 of the 23 mantissa bits, rounding to nearest even (a carry into the
    // exponent is the right result).
    let b = v.to_bits();
    f32::from_bits((b + 0xFFF + ((b >> 13) & 1)) & !0x1FFF)
}

/// `v` rounded to bfloat16 (to nearest, ties to even), as an f32:
/// `bf16::from_f32(v).to_f32()` as bit arithmetic.
#[inline(always)]
pub(crate) fn round_bf16(v: f32) -> f32 {
    if v.is_nan() {
        return v;
    }
    let b = v.to_bits();
    f32::from_bits(b.wrapping_add(0x7FFF + ((b >> 16) & 1)) & 0xFFFF_0000)
}

macro_rules! half_optim_element {
    ($t:ty, $round:ident) => {
        impl OptimElement for $t {
            type C = f32;
            #[inline(always)]
            fn load(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn store(v: f32) -> $t {
                <$t>::from_f32(v)
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
half_optim_element!(f16, round_f16);
half_optim_element!(bf16, round_bf16);

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
    let g = if maximize { -g } else { g };
    match l2 {
        Some(wd) => S::q(g + wd * p),
        None => g,
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

/// Runs `options`' update over one parameter's elements: `p` the parameter, `g` its
/// gradient, `bufs` its buffers in [`Options::buffer_names`] order, all of one length.
pub(crate) fn apply<S: OptimElement>(
    options: &Options,
    s: &StepScalars,
    p: &mut [S],
    g: &[S],
    bufs: &mut [&mut [S]],
) {
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

    /// Updates element `i`'s moments; returns the (decayed) parameter, the effective
    /// gradient and the new first and second moments.
    #[inline(always)]
    fn update(&self, p: S, g: S, exp_avg: &mut S, exp_avg_sq: &mut S) -> (S::C, S::C, S::C, S::C) {
        let q = S::q;
        let mut pv = p.load();
        if let Some(decay) = self.decay {
            pv = q(pv * decay);
        }
        let d = effective_grad::<S>(g.load(), pv, self.maximize, self.l2);
        let m = q(lerp::<S>(exp_avg.load(), d, self.w1, self.small1));
        *exp_avg = S::store(m);
        let v = q(addcmul::<S>(
            q(exp_avg_sq.load() * self.b2),
            self.one_minus_b2,
            d,
            d,
        ));
        *exp_avg_sq = S::store(v);
        (pv, d, m, v)
    }
}

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
    let mut max_sq = rest.first_mut();
    for i in 0..p.len() {
        let (pv, _, m, v) = moments.update(p[i], g[i], &mut exp_avg[i], &mut exp_avg_sq[i]);
        let second = match max_sq.as_deref_mut() {
            Some(mx) => {
                let v = maximum(mx[i].load(), v);
                mx[i] = S::store(v);
                v
            }
            None => v,
        };
        let denom = q(q(q(second.sqrt()) / bc2_sqrt) + eps);
        p[i] = S::store(q(pv + neg_step_size * m / denom));
    }
}

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
        let (mut pv, d, m, v) = moments.update(p[i], g[i], &mut exp_avg[i], &mut exp_avg_sq[i]);
        let denom = q(q(q(v / bias_correction2).sqrt()) + eps);
        pv = q(pv + grad_scale * d / denom);
        p[i] = S::store(q(pv + avg_scale * m / denom));
    }
}

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
        let (pv, _, m, v) = moments.update(p[i], g[i], &mut exp_avg[i], &mut exp_avg_sq[i]);
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
