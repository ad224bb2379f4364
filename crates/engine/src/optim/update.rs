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

// `p = p + x` rather than `p += x`: each line reads as the PyTorch op it transcribes.
#![allow(clippy::assign_op_pattern)]

use super::options::{
    AdadeltaOptions, AdagradOptions, AdamOptions, AdamaxOptions, NAdamOptions, Options,
    RAdamOptions, RmsPropOptions, SgdOptions,
};
use crate::kernels::math::MathFloat;

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
fn lerp<T: MathFloat>(start: T, end: T, weight: T, small_weight: bool) -> T {
    if small_weight {
        start + weight * (end - start)
    } else {
        end - (end - start) * (T::ONE - weight)
    }
}

/// A lerp weight as ATen takes it: rounded to `T`, and whether `|weight| < 0.5`.
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
fn effective_grad<T: MathFloat>(g: T, p: T, maximize: bool, l2: Option<T>) -> T {
    let g = if maximize { -g } else { g };
    match l2 {
        Some(wd) => g + wd * p,
        None => g,
    }
}

fn l2<T: MathFloat>(weight_decay: f64, decoupled: bool) -> Option<T> {
    (weight_decay != 0.0 && !decoupled).then(|| T::c(weight_decay))
}

/// The factor `1 - lr * weight_decay` that decoupled weight decay (AdamW's, and Adam's
/// family with `decoupled_weight_decay`) multiplies the parameter by, if it applies.
fn decoupled_decay<T: MathFloat>(weight_decay: f64, decoupled: bool, lr: f64) -> Option<T> {
    (weight_decay != 0.0 && decoupled).then(|| T::c(1.0 - lr * weight_decay))
}

/// Runs `options`' update over one parameter's elements: `p` the parameter, `g` its
/// gradient, `bufs` its buffers in [`Options::buffer_names`] order, all of one length.
pub(crate) fn apply<T: MathFloat>(
    options: &Options,
    s: &StepScalars,
    p: &mut [T],
    g: &[T],
    bufs: &mut [&mut [T]],
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

fn sgd<T: MathFloat>(o: &SgdOptions, s: &StepScalars, p: &mut [T], g: &[T], bufs: &mut [&mut [T]]) {
    let l2 = l2::<T>(o.weight_decay, false);
    let neg_lr = T::c(-o.lr);
    let (momentum, keep) = (T::c(o.momentum), T::c(1.0 - o.dampening));
    match bufs {
        [] => {
            for (p, &g) in p.iter_mut().zip(g) {
                let d = effective_grad(g, *p, o.maximize, l2);
                *p = *p + neg_lr * d;
            }
        }
        [buf] => {
            for ((p, &g), b) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
                let d = effective_grad(g, *p, o.maximize, l2);
                *b = if s.fresh_buffer {
                    d
                } else {
                    *b * momentum + keep * d
                };
                let d = if o.nesterov { d + momentum * *b } else { *b };
                *p = *p + neg_lr * d;
            }
        }
        _ => unreachable!("rustgrad internal error: SGD has at most one buffer"),
    }
}

fn adam<T: MathFloat>(
    o: &AdamOptions,
    s: &StepScalars,
    p: &mut [T],
    g: &[T],
    bufs: &mut [&mut [T]],
) {
    let (beta1, beta2) = o.betas;
    let l2 = l2::<T>(o.weight_decay, o.decoupled_weight_decay);
    let decay = decoupled_decay::<T>(o.weight_decay, o.decoupled_weight_decay, o.lr);
    let (w1, small1) = lerp_weight::<T>(1.0 - beta1);
    let (b2, one_minus_b2) = (T::c(beta2), T::c(1.0 - beta2));
    let bias_correction1 = 1.0 - beta1.powf(s.step);
    let bias_correction2 = 1.0 - beta2.powf(s.step);
    let neg_step_size = T::c(-(o.lr / bias_correction1));
    let bc2_sqrt = T::c(bias_correction2.powf(0.5));
    let eps = T::c(o.eps);
    let (exp_avg, rest) = bufs
        .split_first_mut()
        .expect("rustgrad internal error: Adam buffers");
    let (exp_avg_sq, rest) = rest
        .split_first_mut()
        .expect("rustgrad internal error: Adam buffers");
    let mut max_sq = rest.first_mut();
    for i in 0..p.len() {
        if let Some(decay) = decay {
            p[i] = p[i] * decay;
        }
        let d = effective_grad(g[i], p[i], o.maximize, l2);
        exp_avg[i] = lerp(exp_avg[i], d, w1, small1);
        exp_avg_sq[i] = exp_avg_sq[i] * b2 + one_minus_b2 * d * d;
        let second = match max_sq.as_deref_mut() {
            Some(m) => {
                m[i] = maximum(m[i], exp_avg_sq[i]);
                m[i]
            }
            None => exp_avg_sq[i],
        };
        let denom = second.sqrt() / bc2_sqrt + eps;
        p[i] = p[i] + neg_step_size * exp_avg[i] / denom;
    }
}

fn adamax<T: MathFloat>(
    o: &AdamaxOptions,
    s: &StepScalars,
    p: &mut [T],
    g: &[T],
    bufs: &mut [&mut [T]],
) {
    let (beta1, beta2) = o.betas;
    let l2 = l2::<T>(o.weight_decay, false);
    let (w1, small1) = lerp_weight::<T>(1.0 - beta1);
    let (b2, eps) = (T::c(beta2), T::c(o.eps));
    let neg_clr = T::c(-(o.lr / (1.0 - beta1.powf(s.step))));
    let [exp_avg, exp_inf] = bufs else {
        unreachable!("rustgrad internal error: Adamax has two buffers")
    };
    for i in 0..p.len() {
        let d = effective_grad(g[i], p[i], o.maximize, l2);
        exp_avg[i] = lerp(exp_avg[i], d, w1, small1);
        exp_inf[i] = maximum(exp_inf[i] * b2, abs(d) + eps);
        p[i] = p[i] + neg_clr * exp_avg[i] / exp_inf[i];
    }
}

fn nadam<T: MathFloat>(
    o: &NAdamOptions,
    s: &StepScalars,
    p: &mut [T],
    g: &[T],
    bufs: &mut [&mut [T]],
) {
    let (beta1, beta2) = o.betas;
    let l2 = l2::<T>(o.weight_decay, o.decoupled_weight_decay);
    let decay = decoupled_decay::<T>(o.weight_decay, o.decoupled_weight_decay, o.lr);
    let bias_correction2 = T::c(1.0 - beta2.powf(s.step));
    let mu_next = beta1 * (1.0 - 0.5 * 0.96f64.powf((s.step + 1.0) * o.momentum_decay));
    let mu_product_next = s.mu_product * mu_next;
    let grad_scale = T::c(-o.lr * (1.0 - s.mu) / (1.0 - s.mu_product));
    let avg_scale = T::c((-o.lr * mu_next) / (1.0 - mu_product_next));
    let (w1, small1) = lerp_weight::<T>(1.0 - beta1);
    let (b2, one_minus_b2, eps) = (T::c(beta2), T::c(1.0 - beta2), T::c(o.eps));
    let [exp_avg, exp_avg_sq] = bufs else {
        unreachable!("rustgrad internal error: NAdam has two buffers")
    };
    for i in 0..p.len() {
        if let Some(decay) = decay {
            p[i] = p[i] * decay;
        }
        let d = effective_grad(g[i], p[i], o.maximize, l2);
        exp_avg[i] = lerp(exp_avg[i], d, w1, small1);
        exp_avg_sq[i] = exp_avg_sq[i] * b2 + one_minus_b2 * d * d;
        let denom = (exp_avg_sq[i] / bias_correction2).sqrt() + eps;
        p[i] = p[i] + grad_scale * d / denom;
        p[i] = p[i] + avg_scale * exp_avg[i] / denom;
    }
}

fn radam<T: MathFloat>(
    o: &RAdamOptions,
    s: &StepScalars,
    p: &mut [T],
    g: &[T],
    bufs: &mut [&mut [T]],
) {
    let (beta1, beta2) = o.betas;
    let l2 = l2::<T>(o.weight_decay, o.decoupled_weight_decay);
    let decay = decoupled_decay::<T>(o.weight_decay, o.decoupled_weight_decay, o.lr);
    let (w1, small1) = lerp_weight::<T>(1.0 - beta1);
    let (b2, one_minus_b2, eps) = (T::c(beta2), T::c(1.0 - beta2), T::c(o.eps));
    let bias_correction1 = 1.0 - beta1.powf(s.step);
    let bias_correction2 = 1.0 - beta2.powf(s.step);
    let rho_inf = 2.0 / (1.0 - beta2) - 1.0;
    let rho_t = rho_inf - 2.0 * s.step * beta2.powf(s.step) / bias_correction2;
    // PyTorch's rectified update only once the variance is tractable (rho_t > 5).
    let rectified = (rho_t > 5.0).then(|| {
        let rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
            / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
            .powf(0.5);
        (T::c(bias_correction2.powf(0.5)), T::c(rect))
    });
    let (bc1, lr) = (T::c(bias_correction1), T::c(o.lr));
    let [exp_avg, exp_avg_sq] = bufs else {
        unreachable!("rustgrad internal error: RAdam has two buffers")
    };
    for i in 0..p.len() {
        if let Some(decay) = decay {
            p[i] = p[i] * decay;
        }
        let d = effective_grad(g[i], p[i], o.maximize, l2);
        exp_avg[i] = lerp(exp_avg[i], d, w1, small1);
        exp_avg_sq[i] = exp_avg_sq[i] * b2 + one_minus_b2 * d * d;
        let corrected = exp_avg[i] / bc1;
        let update = match rectified {
            Some((bc2_sqrt, rect)) => {
                let adaptive_lr = bc2_sqrt / (exp_avg_sq[i].sqrt() + eps);
                corrected * lr * adaptive_lr * rect
            }
            None => corrected * lr,
        };
        p[i] = p[i] - update;
    }
}

fn rmsprop<T: MathFloat>(o: &RmsPropOptions, p: &mut [T], g: &[T], bufs: &mut [&mut [T]]) {
    let l2 = l2::<T>(o.weight_decay, false);
    let (alpha, one_minus_alpha) = (T::c(o.alpha), T::c(1.0 - o.alpha));
    let (w, small) = lerp_weight::<T>(1.0 - o.alpha);
    let (eps, neg_lr, momentum) = (T::c(o.eps), T::c(-o.lr), T::c(o.momentum));
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
    for i in 0..p.len() {
        let d = effective_grad(g[i], p[i], o.maximize, l2);
        square_avg[i] = square_avg[i] * alpha + one_minus_alpha * d * d;
        let avg = match grad_avg.as_deref_mut() {
            Some(ga) => {
                ga[i] = lerp(ga[i], d, w, small);
                (square_avg[i] + -T::ONE * ga[i] * ga[i]).sqrt()
            }
            None => square_avg[i].sqrt(),
        } + eps;
        match momentum_buffer.as_deref_mut() {
            Some(b) => {
                b[i] = b[i] * momentum + T::ONE * d / avg;
                p[i] = p[i] + neg_lr * b[i];
            }
            None => p[i] = p[i] + neg_lr * d / avg,
        }
    }
}

fn adagrad<T: MathFloat>(
    o: &AdagradOptions,
    s: &StepScalars,
    p: &mut [T],
    g: &[T],
    bufs: &mut [&mut [T]],
) {
    let l2 = l2::<T>(o.weight_decay, false);
    let neg_clr = T::c(-(o.lr / (1.0 + (s.step - 1.0) * o.lr_decay)));
    let eps = T::c(o.eps);
    let [sum] = bufs else {
        unreachable!("rustgrad internal error: Adagrad has one buffer")
    };
    for i in 0..p.len() {
        let d = effective_grad(g[i], p[i], o.maximize, l2);
        sum[i] = sum[i] + T::ONE * d * d;
        let std = sum[i].sqrt() + eps;
        p[i] = p[i] + neg_clr * d / std;
    }
}

fn adadelta<T: MathFloat>(o: &AdadeltaOptions, p: &mut [T], g: &[T], bufs: &mut [&mut [T]]) {
    let l2 = l2::<T>(o.weight_decay, false);
    let (rho, one_minus_rho) = (T::c(o.rho), T::c(1.0 - o.rho));
    let (eps, neg_lr) = (T::c(o.eps), T::c(-o.lr));
    let [square_avg, acc_delta] = bufs else {
        unreachable!("rustgrad internal error: Adadelta has two buffers")
    };
    for i in 0..p.len() {
        let d = effective_grad(g[i], p[i], o.maximize, l2);
        square_avg[i] = square_avg[i] * rho + one_minus_rho * d * d;
        let std = (square_avg[i] + eps).sqrt();
        let delta = (acc_delta[i] + eps).sqrt() / std * d;
        acc_delta[i] = acc_delta[i] * rho + one_minus_rho * delta * delta;
        p[i] = p[i] + neg_lr * delta;
    }
}
