//! `Lbfgs`: PyTorch's `torch.optim.LBFGS` for Rust users, closure-driven, with the
//! optional strong-Wolfe line search. See Note [Optimizer steps].
//!
//! A transcription of PyTorch's `torch/optim/lbfgs.py` (itself from torch/optim's Lua
//! `lbfgs.lua` and `polyinterp.lua`), over flat f64 vectors: float64 parameters follow
//! PyTorch's iterates; float32 parameters are updated from f64 directions (PyTorch keeps
//! them in float32), so they agree with PyTorch's to float32 rounding only.

use crate::autograd::grad_mode::{enable_grad, no_grad};
use crate::error::{Error, Result};
use crate::storage::WriteSite;
use crate::tensor::Tensor;
use crate::variable::Variable;
use std::collections::VecDeque;
use std::panic::Location;

/// `torch.optim.LBFGS`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsOptions {
    /// Learning rate (the step length without a line search).
    pub lr: f64,
    /// Iterations per `step`.
    pub max_iter: usize,
    /// Function evaluations per `step`; `None` is `max_iter * 5 / 4`.
    pub max_eval: Option<usize>,
    /// Stop when the gradient's largest magnitude is at most this.
    pub tolerance_grad: f64,
    /// Stop when the loss or the parameters change less than this.
    pub tolerance_change: f64,
    /// Number of curvature pairs kept.
    pub history_size: usize,
    /// Use the strong-Wolfe line search (PyTorch's `line_search_fn="strong_wolfe"`).
    pub strong_wolfe: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

impl Default for LbfgsOptions {
    fn default() -> Self {
        LbfgsOptions {
            lr: 1.0,
            max_iter: 20,
            max_eval: None,
            tolerance_grad: 1e-7,
            tolerance_change: 1e-9,
            history_size: 100,
            strong_wolfe: false,
            maximize: false,
        }
    }
}

/// What PyTorch keeps in `state[params[0]]` between steps.
#[derive(Clone, Debug, Default)]
struct LbfgsState {
    func_evals: usize,
    n_iter: usize,
    d: Vec<f64>,
    t: f64,
    old_dirs: VecDeque<Vec<f64>>,
    old_stps: VecDeque<Vec<f64>>,
    ro: VecDeque<f64>,
    h_diag: f64,
    prev_flat_grad: Option<Vec<f64>>,
}

/// L-BFGS over one group of parameters.
///
/// ```
/// use rustgrad::optim::{Lbfgs, LbfgsOptions};
/// use rustgrad::{Tensor, Variable};
/// let x = Variable::new(Tensor::from_vec(vec![3.0f64, -2.0], &[2])?, true)?;
/// let options = LbfgsOptions { strong_wolfe: true, ..LbfgsOptions::default() };
/// let mut opt = Lbfgs::new(vec![x.clone()], options)?;
/// opt.step(|| {
///     x.set_grad(None)?;
///     let loss = x.mul(&x)?.sum()?;
///     loss.backward()?;
///     Ok(loss.tensor().item()?.to_f64())
/// })?;
/// assert!(x.tensor().to_vec::<f64>().iter().all(|v| v.abs() < 1e-6));
/// # Ok::<(), rustgrad::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Lbfgs {
    params: Vec<Variable>,
    options: LbfgsOptions,
    state: LbfgsState,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn abs_max(a: &[f64]) -> f64 {
    a.iter()
        .fold(0.0, |m, x| if x.abs() > m { x.abs() } else { m })
}

/// `a + alpha * b`, in place.
fn axpy(a: &mut [f64], alpha: f64, b: &[f64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += alpha * y;
    }
}

/// The minimiser of the cubic through two points with their derivatives, clamped to
/// `bounds` (PyTorch's `_cubic_interpolate`).
fn cubic_interpolate(
    (x1, f1, g1): (f64, f64, f64),
    (x2, f2, g2): (f64, f64, f64),
    bounds: Option<(f64, f64)>,
) -> f64 {
    let (lo, hi) = bounds.unwrap_or(if x1 <= x2 { (x1, x2) } else { (x2, x1) });
    let d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2);
    let d2_square = d1 * d1 - g1 * g2;
    if d2_square >= 0.0 {
        let d2 = d2_square.sqrt();
        let min_pos = if x1 <= x2 {
            x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
        } else {
            x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2))
        };
        min_pos.max(lo).min(hi)
    } else {
        (lo + hi) / 2.0
    }
}

impl Lbfgs {
    /// An optimizer over `params` (PyTorch's checks: "Invalid learning rate", "optimizer
    /// got an empty parameter list").
    pub fn new(params: Vec<Variable>, options: LbfgsOptions) -> Result<Lbfgs> {
        if options.lr < 0.0 {
            return Err(Error::InvalidArgument(format!(
                "Invalid learning rate: {}",
                options.lr
            )));
        }
        if params.is_empty() {
            return Err(Error::InvalidArgument(
                "optimizer got an empty parameter list".into(),
            ));
        }
        Ok(Lbfgs {
            params,
            options,
            state: LbfgsState {
                h_diag: 1.0,
                ..LbfgsState::default()
            },
        })
    }

    /// Function evaluations so far (PyTorch's `state["func_evals"]`).
    pub fn func_evals(&self) -> usize {
        self.state.func_evals
    }

    /// Iterations so far (PyTorch's `state["n_iter"]`).
    pub fn n_iter(&self) -> usize {
        self.state.n_iter
    }

    /// Sets every parameter's `.grad` to `None`.
    pub fn zero_grad(&self) -> Result<()> {
        self.params.iter().try_for_each(|p| p.set_grad(None))
    }

    fn gather_flat_grad(&self) -> Result<Vec<f64>> {
        let mut flat = Vec::new();
        for p in &self.params {
            match p.grad() {
                Some(g) => flat.extend(g.tensor().try_to_vec::<f64>()?),
                None => flat.extend(std::iter::repeat_n(0.0, p.tensor().numel())),
            }
        }
        if self.options.maximize {
            flat.iter_mut().for_each(|x| *x = -*x);
        }
        Ok(flat)
    }

    fn add_grad(&self, step: f64, direction: &[f64], site: &WriteSite) -> Result<()> {
        let mut offset = 0;
        for p in &self.params {
            let t = p.tensor();
            let mut values = t.try_to_vec::<f64>()?;
            let n = values.len();
            axpy(&mut values, step, &direction[offset..offset + n]);
            offset += n;
            let updated = Tensor::from_vec(values, t.shape())?;
            t.copy_from(&updated, site.clone())?;
        }
        Ok(())
    }

    fn clone_params(&self) -> Result<Vec<Tensor>> {
        self.params
            .iter()
            .map(|p| p.tensor().deep_clone())
            .collect()
    }

    fn set_params(&self, saved: &[Tensor], site: &WriteSite) -> Result<()> {
        for (p, s) in self.params.iter().zip(saved) {
            p.tensor().copy_from(s, site.clone())?;
        }
        Ok(())
    }

    fn evaluate(&self, closure: &mut impl FnMut() -> Result<f64>) -> Result<f64> {
        let _grad = enable_grad();
        let loss = closure()?;
        Ok(if self.options.maximize { -loss } else { loss })
    }

    /// Loss and flat gradient at `x + t * d`, then the parameters back at `x`.
    fn directional_evaluate(
        &self,
        closure: &mut impl FnMut() -> Result<f64>,
        x: &[Tensor],
        t: f64,
        d: &[f64],
        site: &WriteSite,
    ) -> Result<(f64, Vec<f64>)> {
        self.add_grad(t, d, site)?;
        let loss = self.evaluate(closure)?;
        let flat_grad = self.gather_flat_grad()?;
        self.set_params(x, site)?;
        Ok((loss, flat_grad))
    }

    /// One optimization step: up to `max_iter` L-BFGS iterations, each evaluating the
    /// loss (and filling the gradients) through `closure`. Returns the loss of the first
    /// evaluation, as PyTorch's `step` does.
    #[track_caller]
    pub fn step(&mut self, mut closure: impl FnMut() -> Result<f64>) -> Result<f64> {
        let site = WriteSite::Rust(Location::caller());
        let _no_grad = no_grad();
        let o = self.options.clone();
        let max_eval = o.max_eval.unwrap_or(o.max_iter * 5 / 4);
        let orig_loss = {
            let _grad = enable_grad();
            closure()?
        };
        let mut loss = if o.maximize { -orig_loss } else { orig_loss };
        let mut current_evals = 1;
        self.state.func_evals += 1;
        let mut flat_grad = self.gather_flat_grad()?;
        if abs_max(&flat_grad) <= o.tolerance_grad {
            return Ok(orig_loss);
        }
        let mut st = std::mem::take(&mut self.state);
        let result = (|| -> Result<()> {
            let mut n_iter = 0;
            while n_iter < o.max_iter {
                n_iter += 1;
                st.n_iter += 1;
                if st.n_iter == 1 {
                    st.d = flat_grad.iter().map(|g| -g).collect();
                    st.old_dirs.clear();
                    st.old_stps.clear();
                    st.ro.clear();
                    st.h_diag = 1.0;
                } else {
                    let prev = st
                        .prev_flat_grad
                        .as_ref()
                        .expect("rustgrad internal error: LBFGS keeps the previous gradient");
                    let y: Vec<f64> = flat_grad.iter().zip(prev).map(|(a, b)| a - b).collect();
                    let s: Vec<f64> = st.d.iter().map(|d| d * st.t).collect();
                    let ys = dot(&y, &s);
                    if ys > 1e-10 {
                        if st.old_dirs.len() == o.history_size {
                            st.old_dirs.pop_front();
                            st.old_stps.pop_front();
                            st.ro.pop_front();
                        }
                        st.h_diag = ys / dot(&y, &y);
                        st.old_dirs.push_back(y);
                        st.old_stps.push_back(s);
                        st.ro.push_back(1.0 / ys);
                    }
                    // The two-loop recursion.
                    let num_old = st.old_dirs.len();
                    let mut al = vec![0.0; num_old];
                    let mut q: Vec<f64> = flat_grad.iter().map(|g| -g).collect();
                    for i in (0..num_old).rev() {
                        al[i] = dot(&st.old_stps[i], &q) * st.ro[i];
                        axpy(&mut q, -al[i], &st.old_dirs[i]);
                    }
                    let mut r: Vec<f64> = q.iter().map(|x| x * st.h_diag).collect();
                    for (i, al_i) in al.iter().enumerate() {
                        let be_i = dot(&st.old_dirs[i], &r) * st.ro[i];
                        axpy(&mut r, al_i - be_i, &st.old_stps[i]);
                    }
                    st.d = r;
                }
                st.prev_flat_grad = Some(flat_grad.clone());
                let prev_loss = loss;
                st.t = if st.n_iter == 1 {
                    let inverse_l1 = 1.0 / flat_grad.iter().map(|g| g.abs()).sum::<f64>();
                    (if 1.0 < inverse_l1 { 1.0 } else { inverse_l1 }) * o.lr
                } else {
                    o.lr
                };
                let gtd = dot(&flat_grad, &st.d);
                if gtd > -o.tolerance_change {
                    break;
                }
                let mut ls_func_evals = 0;
                let mut opt_cond = false;
                if o.strong_wolfe {
                    let x_init = self.clone_params()?;
                    let (new_loss, new_grad, t, evals) = self.strong_wolfe(
                        &mut closure,
                        &x_init,
                        (st.t, &st.d),
                        (loss, &flat_grad, gtd),
                        max_eval.saturating_sub(current_evals),
                        &site,
                    )?;
                    (loss, flat_grad, st.t, ls_func_evals) = (new_loss, new_grad, t, evals);
                    self.add_grad(st.t, &st.d, &site)?;
                    opt_cond = abs_max(&flat_grad) <= o.tolerance_grad;
                } else {
                    self.add_grad(st.t, &st.d, &site)?;
                    if n_iter != o.max_iter {
                        loss = self.evaluate(&mut closure)?;
                        flat_grad = self.gather_flat_grad()?;
                        opt_cond = abs_max(&flat_grad) <= o.tolerance_grad;
                        ls_func_evals = 1;
                    }
                }
                current_evals += ls_func_evals;
                st.func_evals += ls_func_evals;
                if n_iter == o.max_iter || current_evals >= max_eval || opt_cond {
                    break;
                }
                if st.d.iter().map(|d| (d * st.t).abs()).fold(0.0, f64::max) <= o.tolerance_change {
                    break;
                }
                if (loss - prev_loss).abs() < o.tolerance_change {
                    break;
                }
            }
            Ok(())
        })();
        self.state = st;
        result.map(|()| orig_loss)
    }

    /// PyTorch's `_strong_wolfe`: returns the loss, flat gradient and step length found,
    /// and the number of evaluations.
    fn strong_wolfe(
        &self,
        closure: &mut impl FnMut() -> Result<f64>,
        x: &[Tensor],
        (mut t, d): (f64, &[f64]),
        (f, g, gtd): (f64, &[f64], f64),
        max_ls: usize,
        site: &WriteSite,
    ) -> Result<(f64, Vec<f64>, f64, usize)> {
        const C1: f64 = 1e-4;
        const C2: f64 = 0.9;
        let tolerance_change = 1e-9;
        let d_norm = abs_max(d);
        let (mut f_new, mut g_new) = self.directional_evaluate(closure, x, t, d, site)?;
        let mut ls_func_evals = 1;
        let mut gtd_new = dot(&g_new, d);
        let (mut t_prev, mut f_prev, mut g_prev, mut gtd_prev) = (0.0, f, g.to_vec(), gtd);
        let mut done = false;
        let mut ls_iter = 0;
        // Points bracketing the step: (t, f, g, gtd).
        let mut bracket: Vec<(f64, f64, Vec<f64>, f64)> = Vec::new();
        while ls_iter < max_ls {
            if f_new > f + C1 * t * gtd || (ls_iter > 1 && f_new >= f_prev) {
                bracket = vec![
                    (t_prev, f_prev, g_prev.clone(), gtd_prev),
                    (t, f_new, g_new.clone(), gtd_new),
                ];
                break;
            }
            if gtd_new.abs() <= -C2 * gtd {
                bracket = vec![(t, f_new, g_new.clone(), gtd_new)];
                done = true;
                break;
            }
            if gtd_new >= 0.0 {
                bracket = vec![
                    (t_prev, f_prev, g_prev.clone(), gtd_prev),
                    (t, f_new, g_new.clone(), gtd_new),
                ];
                break;
            }
            let min_step = t + 0.01 * (t - t_prev);
            let max_step = t * 10.0;
            let tmp = t;
            t = cubic_interpolate(
                (t_prev, f_prev, gtd_prev),
                (t, f_new, gtd_new),
                Some((min_step, max_step)),
            );
            t_prev = tmp;
            f_prev = f_new;
            g_prev = g_new.clone();
            gtd_prev = gtd_new;
            (f_new, g_new) = self.directional_evaluate(closure, x, t, d, site)?;
            ls_func_evals += 1;
            gtd_new = dot(&g_new, d);
            ls_iter += 1;
        }
        if ls_iter == max_ls {
            // PyTorch keeps no derivatives here: the zoom loop below does not run.
            bracket = vec![(0.0, f, g.to_vec(), f64::NAN), (t, f_new, g_new, f64::NAN)];
        }
        let order = |b: &[(f64, f64, Vec<f64>, f64)]| {
            if b[0].1 <= b[b.len() - 1].1 {
                (0, 1)
            } else {
                (1, 0)
            }
        };
        let (mut low, mut high) = order(&bracket);
        let mut insuf_progress = false;
        while !done && ls_iter < max_ls {
            let (b0, b1) = (bracket[0].0, bracket[1].0);
            if (b1 - b0).abs() * d_norm < tolerance_change {
                break;
            }
            t = cubic_interpolate(
                (b0, bracket[0].1, bracket[0].3),
                (b1, bracket[1].1, bracket[1].3),
                None,
            );
            let (bmax, bmin) = (b0.max(b1), b0.min(b1));
            let eps = 0.1 * (bmax - bmin);
            if (bmax - t).min(t - bmin) < eps {
                if insuf_progress || t >= bmax || t <= bmin {
                    t = if (t - bmax).abs() < (t - bmin).abs() {
                        bmax - eps
                    } else {
                        bmin + eps
                    };
                    insuf_progress = false;
                } else {
                    insuf_progress = true;
                }
            } else {
                insuf_progress = false;
            }
            (f_new, g_new) = self.directional_evaluate(closure, x, t, d, site)?;
            ls_func_evals += 1;
            gtd_new = dot(&g_new, d);
            ls_iter += 1;
            if f_new > f + C1 * t * gtd || f_new >= bracket[low].1 {
                bracket[high] = (t, f_new, g_new.clone(), gtd_new);
                (low, high) = order(&bracket);
            } else {
                if gtd_new.abs() <= -C2 * gtd {
                    done = true;
                } else if gtd_new * (bracket[high].0 - bracket[low].0) >= 0.0 {
                    bracket[high] = bracket[low].clone();
                }
                bracket[low] = (t, f_new, g_new.clone(), gtd_new);
            }
        }
        let (t, f_new, g_new, _) = bracket.swap_remove(low);
        Ok((f_new, g_new, t, ls_func_evals))
    }
}
