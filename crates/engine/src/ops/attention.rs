//! `scaled_dot_product_attention`: PyTorch's checks and broadcasting, then one fused
//! node (`kernels/attention.rs`) over contiguous `[B, Hq, L, E]` operands. Its backward
//! is the fused FlashAttention-2 kernel, or under `create_graph` the same formula in
//! differentiable ops, so double backward works. See Note [Fused attention].

use super::pool::with_slice;
use super::{saved_at, Grads};
use crate::autograd::grad_mode;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::attention::{self as kernel, AttnGeom, BackwardInputs, MaskView};
use crate::random::Generator;
use crate::shape::broadcast_shapes;
use crate::tensor::{Scalar, Tensor};
use crate::variable::{SavedTensor, Variable};
use smallvec::smallvec;

/// PyTorch's grad_fn name for the CPU fused attention.
const NAME: &str = "ScaledDotProductFlashAttentionForCpuBackward0";

/// The backward rules of this family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// Fused attention; inputs `[q, k, v, mask?]`, saved `[q, k, v, mask or none, out,
    /// lse]`.
    Sdpa(Box<AttnGeom>),
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        NAME
    }

    /// The gradients of `[q, k, v, mask?]`.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let Rule::Sdpa(g) = self;
        let q = saved_at(saved, 0)?;
        let k = saved_at(saved, 1)?;
        let v = saved_at(saved, 2)?;
        let mask = saved.get(3).cloned().flatten();
        let want_mask = mask.is_some() && needs.get(3).copied().unwrap_or(false);
        let (dq, dk, dv, dm) = if grad_mode::is_grad_enabled() {
            composed_backward(g, q, k, v, mask.as_ref(), grad, want_mask)?
        } else {
            let out = saved_at(saved, 4)?;
            let lse = saved_at(saved, 5)?;
            fused_backward(g, q, k, v, mask.as_ref(), out, lse, grad, want_mask)?
        };
        let mut grads: Grads = smallvec![Some(dq), Some(dk), Some(dv)];
        if let Some(m) = &mask {
            grads.push(
                dm.map(|d| d.reshape(&super::ints(&m.shape())))
                    .transpose()?,
            );
        }
        for (g, &need) in grads.iter_mut().zip(needs) {
            if !need {
                *g = None;
            }
        }
        Ok(grads)
    }
}

type Four = (Variable, Variable, Variable, Option<Variable>);

/// Reads a mask broadcast to `[B, Hq, L, S]` as the kernel's [`MaskView`] and calls `f`.
fn with_mask<T: crate::dtype::Element, R>(
    mask: Option<&Variable>,
    g: &AttnGeom,
    f: impl FnOnce(Option<&MaskView<'_, T>>) -> Result<R>,
) -> Result<R> {
    let Some(mask) = mask else { return f(None) };
    // `[batch dims..., Hq, L, S]`, a broadcast view: the offset of each `(b, h)`
    // matrix walks the leading dims through their strides.
    let t = mask.tensor().clone();
    let (shape, strides) = (t.shape().to_vec(), t.strides().to_vec());
    let nd = shape.len();
    let base = t.layout().offset();
    let offsets: Vec<usize> = (0..g.batch * g.hq)
        .map(|mut bh| {
            let mut off = base;
            for d in (0..nd - 2).rev() {
                off += (bh % shape[d]) * strides[d];
                bh /= shape[d];
            }
            off
        })
        .collect();
    t.read(|data: &[T]| {
        let view = MaskView {
            data,
            offsets,
            row_stride: strides[nd - 2],
            col_stride: strides[nd - 1],
        };
        f(Some(&view))
    })
}

#[allow(clippy::too_many_arguments)]
fn fused_backward(
    g: &AttnGeom,
    q: &Variable,
    k: &Variable,
    v: &Variable,
    mask: Option<&Variable>,
    out: &Variable,
    lse: &Variable,
    grad: &Variable,
    want_mask: bool,
) -> Result<Four> {
    let dtype = q.dtype();
    let grad = grad.tensor().to_dtype(dtype)?;
    macro_rules! run {
        ($T:ty) => {{
            let (dq, dk, dv, dm) = with_slice(&q.tensor(), |qs: &[$T]| {
                with_slice(&k.tensor(), |ks: &[$T]| {
                    with_slice(&v.tensor(), |vs: &[$T]| {
                        with_slice(&out.tensor(), |os: &[$T]| {
                            with_slice(&lse.tensor(), |ls: &[$T]| {
                                with_slice(&grad, |gs: &[$T]| {
                                    with_mask(mask, g, |m| {
                                        let inputs = BackwardInputs {
                                            q: qs,
                                            k: ks,
                                            v: vs,
                                            out: os,
                                            lse: ls,
                                            dout: gs,
                                            mask: m,
                                        };
                                        kernel::backward(&inputs, g, want_mask)
                                    })
                                })
                            })
                        })
                    })
                })
            })?;
            let wrap = |d: Vec<$T>, s: &[usize]| -> Result<Variable> {
                Ok(Variable::from_tensor(Tensor::from_vec(d, s)?))
            };
            let dm = match dm {
                Some(d) => Some(wrap(d, &[g.batch, g.hq, g.l, g.s])?),
                None => None,
            };
            (
                wrap(dq, &q.shape())?,
                wrap(dk, &k.shape())?,
                wrap(dv, &v.shape())?,
                dm,
            )
        }};
    }
    Ok(match dtype {
        DType::F32 => run!(f32),
        DType::F64 => run!(f64),
        other => {
            return Err(Error::unsupported_dtype(
                "_scaled_dot_product_attention",
                other,
            ))
        }
    })
}

/// `P = softmax(S)` per row, 0 for a row that sees no key (PyTorch's fully masked
/// rows), written with differentiable ops.
fn safe_softmax(scores: &Variable) -> Result<Variable> {
    if scores.shape().last() == Some(&0) {
        // No keys: nothing to normalise (the product with the values is zeros).
        return Ok(scores.clone());
    }
    // A row's max, -inf for a fully masked row made finite so that `exp` gives 0s.
    let shift = scores
        .amax(&[-1], true)?
        .detach()
        .clamp_min(Scalar::Float(-(f32::MAX as f64)))?;
    let e = scores.sub(&shift)?.exp()?;
    let total = e
        .sum_dims(&[-1], true)?
        .clamp_min(Scalar::Float(f64::MIN_POSITIVE))?;
    e.div(&total)
}

/// The scores `q k^T * scale + mask` (causal cut applied) of `[B, Hk, G, L, S]`.
fn scores(g: &AttnGeom, q5: &Variable, k5: &Variable, mask: Option<&Variable>) -> Result<Variable> {
    let group = (g.hq / g.hk.max(1)) as i64;
    let mut s = q5.matmul(&k5.transpose(-2, -1)?)?;
    if g.e > 0 {
        // With no features the scores are 0 (PyTorch's uniform weights), not 0 * inf.
        s = s.mul_scalar(g.scale)?;
    }
    if let Some(m) = mask {
        let m5 = m.reshape(&[g.batch as i64, g.hk as i64, group, g.l as i64, g.s as i64])?;
        s = s.add(&m5)?;
    }
    if g.causal {
        let cut: Vec<bool> = (0..g.l)
            .flat_map(|i| (0..g.s).map(move |j| j > i))
            .collect();
        let cut = Tensor::from_vec(cut, &[g.l, g.s])?;
        let ninf = Variable::from_tensor(Tensor::scalar(f64::NEG_INFINITY, s.dtype()));
        s = Variable::where_cond(&cut, &ninf, &s)?;
    }
    Ok(s)
}

/// The backward in differentiable ops (for `create_graph`): the scores and softmax are
/// recomputed, then `dS = P * (dP - rowsum(P * dP))`.
fn composed_backward(
    g: &AttnGeom,
    q: &Variable,
    k: &Variable,
    v: &Variable,
    mask: Option<&Variable>,
    grad: &Variable,
    want_mask: bool,
) -> Result<Four> {
    let (b, hk, group) = (g.batch as i64, g.hk as i64, (g.hq / g.hk) as i64);
    let (l, s, e, ev) = (g.l as i64, g.s as i64, g.e as i64, g.ev as i64);
    let q5 = q.reshape(&[b, hk, group, l, e])?;
    let k5 = k.reshape(&[b, hk, 1, s, e])?;
    let v5 = v.reshape(&[b, hk, 1, s, ev])?;
    let do5 = grad.reshape(&[b, hk, group, l, ev])?;
    let p = safe_softmax(&scores(g, &q5, &k5, mask)?)?;
    // The dropout mask (kept / (1 - p), else 0) as the kernel drew it.
    let keep = if g.dropout > 0.0 {
        Some(dropout_mask(g, q.dtype())?.reshape(&[b, hk, group, l, s])?)
    } else {
        None
    };
    let pd = match &keep {
        Some(m) => p.mul(m)?,
        None => p.clone(),
    };
    let dv = pd
        .transpose(-2, -1)?
        .matmul(&do5)?
        .sum_dims(&[2], false)?
        .reshape(&[b, hk, s, ev])?;
    let mut dp = do5.matmul(&v5.transpose(-2, -1)?)?;
    if let Some(m) = &keep {
        dp = dp.mul(m)?;
    }
    let d = p.mul(&dp)?.sum_dims(&[-1], true)?;
    let ds = p.mul(&dp.sub(&d)?)?;
    let dss = ds.mul_scalar(g.scale)?;
    let dq = dss.matmul(&k5)?.reshape(&[b, g.hq as i64, l, e])?;
    let dk = dss
        .transpose(-2, -1)?
        .matmul(&q5)?
        .sum_dims(&[2], false)?
        .reshape(&[b, hk, s, e])?;
    let dm = if want_mask {
        Some(ds.reshape(&[b, g.hq as i64, l, s])?)
    } else {
        None
    };
    Ok((dq, dk, dv, dm))
}

/// The kernel's dropout mask for `g` as a `[B, Hq, L, S]` tensor of `1 / (1 - p)` (kept)
/// and 0 (dropped), for the differentiable backward.
fn dropout_mask(g: &AttnGeom, dtype: DType) -> Result<Variable> {
    let keep = g.keep_scale();
    let n = g.batch * g.hq * g.l * g.s;
    let values = crate::kernels::try_collect((0..n).map(|idx| {
        let (bh, rest) = (idx / (g.l * g.s), idx % (g.l * g.s));
        if g.keeps(bh, rest / g.s, rest % g.s) {
            keep
        } else {
            0.0
        }
    }))?;
    let t = Tensor::from_vec(values, &[g.batch, g.hq, g.l, g.s])?.to_dtype(dtype)?;
    Ok(Variable::from_tensor(t))
}

/// Broadcasts shapes, reporting PyTorch's mismatch message with dims counted in the
/// broadcast result.
fn broadcast(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    Ok(broadcast_shapes(a, b)?.to_vec())
}

fn left_pad(shape: &[usize], nd: usize) -> Vec<usize> {
    let mut out = vec![1; nd - shape.len()];
    out.extend_from_slice(shape);
    out
}

impl Variable {
    /// `scaled_dot_product_attention(query, key, value, attn_mask, dropout_p=0,
    /// is_causal, scale, enable_gqa)`: `dropout(softmax(q k^T * scale + mask)) v` over `(..., L, E)`, `(..., S, E)`, `(..., S, Ev)` with the leading dims
    /// broadcast (with `enable_gqa`, the head dim `-3` of `key`/`value` may divide the
    /// query's instead). `attn_mask` is bool (True attends) or of the query's dtype
    /// (added) and broadcasts to `(..., L, S)`; `is_causal` masks keys after the query
    /// row (top-left aligned). A row that sees no key gives 0, as PyTorch on CPU. With
    /// `dropout_p > 0` each weight is dropped (or scaled by `1 / (1 - p)`) by a mask drawn
    /// from one 64-bit seed of `generator`, which the backward regenerates.
    #[allow(clippy::too_many_arguments)]
    pub fn scaled_dot_product_attention(
        &self,
        key: &Variable,
        value: &Variable,
        attn_mask: Option<&Variable>,
        dropout_p: f64,
        is_causal: bool,
        scale: Option<f64>,
        enable_gqa: bool,
        generator: &Generator,
    ) -> Result<Variable> {
        if !(0.0..=1.0).contains(&dropout_p) {
            return Err(Error::InvalidArgument(format!(
                "dropout probability has to be between 0 and 1, but got {dropout_p}"
            )));
        }
        let (q, k, v) = (self, key, value);
        if q.dim() < 2 || k.dim() < 2 || v.dim() < 2 {
            return Err(Error::InvalidArgument(format!(
                "Expected query, key, and value to all be  at least 2 dimensional, but got \
                 query.dim: {} key.dim: {} and value.dim: {} instead.",
                q.dim(),
                k.dim(),
                v.dim()
            )));
        }
        let dtype = q.dtype();
        if k.dtype() != dtype || v.dtype() != dtype {
            return Err(Error::InvalidArgument(format!(
                "Expected query, key, and value to have the same dtype, but got query.dtype: \
                 {} key.dtype: {} and value.dtype: {} instead.",
                dtype.cpp_type_name(),
                k.dtype().cpp_type_name(),
                v.dtype().cpp_type_name()
            )));
        }
        if let Some(m) = attn_mask {
            if m.dtype() != DType::Bool && m.dtype() != dtype {
                return Err(Error::InvalidArgument(format!(
                    "Expected attn_mask dtype to be bool or float or to match query dtype, but \
                     got attn_mask.dtype: {} and  query.dtype: {} instead.",
                    m.dtype().cpp_type_name(),
                    dtype.cpp_type_name()
                )));
            }
            if is_causal {
                return Err(Error::InvalidArgument(
                    "_scaled_dot_product_attention: Explicit attn_mask should not be set when \
                     is_causal=True"
                        .into(),
                ));
            }
        }
        if !dtype.is_floating_point() {
            return Err(Error::InvalidArgument(format!(
                "expected scalar type Float but found {}",
                dtype.scalar_type_name()
            )));
        }
        if matches!(dtype, DType::F16 | DType::BF16) {
            // Computed in float32 (the GEMM's types), rounded back once.
            let up = |x: &Variable| x.to_dtype(DType::F32);
            let m = match attn_mask {
                Some(m) if m.dtype() != DType::Bool => Some(up(m)?),
                other => other.cloned(),
            };
            return up(q)?
                .scaled_dot_product_attention(
                    &up(k)?,
                    &up(v)?,
                    m.as_ref(),
                    dropout_p,
                    is_causal,
                    scale,
                    enable_gqa,
                    generator,
                )?
                .to_dtype(dtype);
        }
        let nd = q.dim().max(k.dim()).max(v.dim()).max(3);
        let (qs, ks, vs) = (
            left_pad(&q.shape(), nd),
            left_pad(&k.shape(), nd),
            left_pad(&v.shape(), nd),
        );
        let (l, e) = (qs[nd - 2], qs[nd - 1]);
        let (s, ev) = (ks[nd - 2], vs[nd - 1]);
        let lead = nd - 3;
        let (hq, hk, hv) = (qs[lead], ks[lead], vs[lead]);
        let gqa = enable_gqa && (hq != hk || hq != hv);
        let (batch_dims, hk_final) = if gqa {
            if hk == 0 || hv == 0 || hq % hk != 0 || hq % hv != 0 || hk != hv {
                return Err(Error::InvalidArgument(
                    "Number of heads in key and value must divide the number of heads in query"
                        .into(),
                ));
            }
            let bd = broadcast(&broadcast(&qs[..lead], &ks[..lead])?, &vs[..lead])?;
            (bd, hk)
        } else {
            let bd = broadcast(&broadcast(&qs[..=lead], &ks[..=lead])?, &vs[..=lead])?;
            let h = bd[lead];
            (bd[..lead].to_vec(), h)
        };
        let hq_final = if gqa { hq } else { hk_final };
        if ks[nd - 1] != e {
            let bh: usize = batch_dims.iter().product::<usize>() * hq_final;
            return Err(Error::InvalidArgument(format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{bh}, {e}] but \
                 got: [{bh}, {}].",
                ks[nd - 1]
            )));
        }
        if vs[nd - 2] != s {
            return Err(Error::InvalidArgument(format!(
                "Expected key and value to have the same sequence length, but got key of \
                 length {s} and value of length {}",
                vs[nd - 2]
            )));
        }
        let batch: usize = batch_dims.iter().product();
        let full = |h: usize, a: usize, c: usize| -> Vec<i64> {
            let mut d: Vec<i64> = batch_dims.iter().map(|&x| x as i64).collect();
            d.extend([h as i64, a as i64, c as i64]);
            d
        };
        let prep = |x: &Variable, padded: &[usize], h: usize, a: usize, c: usize| {
            let p: Vec<i64> = padded.iter().map(|&d| d as i64).collect();
            x.reshape(&p)?
                .expand(&full(h, a, c))?
                .contiguous()?
                .reshape(&[batch as i64, h as i64, a as i64, c as i64])
        };
        let q4 = prep(q, &qs, hq_final, l, e)?;
        let k4 = prep(k, &ks, hk_final, s, e)?;
        let v4 = prep(v, &vs, hk_final, s, ev)?;
        let out_shape = {
            let mut o: Vec<usize> = batch_dims.clone();
            o.extend([hq_final, l, ev]);
            o[nd - q.dim().max(k.dim()).max(v.dim())..].to_vec()
        };
        let scale = scale.unwrap_or(1.0 / (e as f64).sqrt());
        let g = AttnGeom {
            batch,
            hq: hq_final,
            hk: hk_final,
            l,
            s,
            e,
            ev,
            scale,
            causal: is_causal,
            dropout: dropout_p,
            // Drawn only when dropping, so dropout-free calls leave the generator alone.
            seed: if dropout_p > 0.0 {
                generator.random_u64()
            } else {
                0
            },
        };
        // The mask as an additive float, broadcast (a view) to `[B, Hq, L, S]`.
        let mask4 = match attn_mask {
            None => None,
            Some(m) => {
                let m = if m.dtype() == DType::Bool {
                    let zero = Variable::from_tensor(Tensor::scalar(0.0, dtype));
                    let ninf = Variable::from_tensor(Tensor::scalar(f64::NEG_INFINITY, dtype));
                    Variable::where_cond(&m.tensor(), &zero, &ninf)?
                } else {
                    m.clone()
                };
                let target: Vec<usize> = full(hq_final, l, s).iter().map(|&d| d as usize).collect();
                if m.dim() > target.len() {
                    return Err(Error::InvalidArgument(format!(
                        "attn_mask of {} dims does not broadcast to the attention weights of \
                         {} dims",
                        m.dim(),
                        target.len()
                    )));
                }
                let b = broadcast(&target, &m.shape())?;
                if b != target {
                    let d = b.iter().zip(&target).position(|(x, y)| x != y).unwrap_or(0);
                    return Err(Error::BroadcastMismatch {
                        size_a: target[d],
                        size_b: b[d],
                        dim: d,
                    });
                }
                let padded: Vec<i64> = left_pad(&m.shape(), target.len())
                    .iter()
                    .map(|&d| d as i64)
                    .collect();
                Some(m.reshape(&padded)?.expand(&full(hq_final, l, s))?)
            }
        };
        let zero_work = batch == 0 || hq_final == 0 || l == 0 || ev == 0;
        let (out, lse) = if zero_work || s == 0 || e == 0 {
            // Degenerate sizes: the composed formula handles them.
            let q5 = q4.reshape(&[
                batch as i64,
                hk_final as i64,
                (hq_final / hk_final.max(1)) as i64,
                l as i64,
                e as i64,
            ])?;
            let k5 = k4.reshape(&[batch as i64, hk_final as i64, 1, s as i64, e as i64])?;
            let v5 = v4.reshape(&[batch as i64, hk_final as i64, 1, s as i64, ev as i64])?;
            let p = safe_softmax(&scores(&g, &q5, &k5, mask4.as_ref())?)?;
            let out =
                p.matmul(&v5)?
                    .reshape(&[batch as i64, hq_final as i64, l as i64, ev as i64])?;
            let shape: Vec<i64> = out_shape.iter().map(|&d| d as i64).collect();
            return out.reshape(&shape);
        } else {
            match dtype {
                DType::F32 => attention_forward::<f32>(&q4, &k4, &v4, mask4.as_ref(), &g)?,
                DType::F64 => attention_forward::<f64>(&q4, &k4, &v4, mask4.as_ref(), &g)?,
                other => {
                    return Err(Error::unsupported_dtype(
                        "_scaled_dot_product_attention",
                        other,
                    ))
                }
            }
        };
        let mut inputs: Vec<&Variable> = vec![&q4, &k4, &v4];
        inputs.extend(mask4.as_ref());
        let lse = Variable::from_tensor(lse);
        let out = Variable::record(out, &inputs, |_, out| {
            (
                Rule::Sdpa(Box::new(g.clone())),
                smallvec![
                    Some(SavedTensor::input(&q4)),
                    Some(SavedTensor::input(&k4)),
                    Some(SavedTensor::input(&v4)),
                    mask4.as_ref().map(SavedTensor::input),
                    Some(SavedTensor::output(out, NAME)),
                    Some(SavedTensor::input(&lse)),
                ],
            )
        });
        if out_shape == [batch, hq_final, l, ev] {
            return Ok(out);
        }
        let shape: Vec<i64> = out_shape.iter().map(|&d| d as i64).collect();
        out.reshape(&shape)
    }
}

fn attention_forward<T: crate::kernels::matmul::Gemm + Send + Sync>(
    q: &Variable,
    k: &Variable,
    v: &Variable,
    mask: Option<&Variable>,
    g: &AttnGeom,
) -> Result<(Tensor, Tensor)> {
    let (out, lse) = with_slice(&q.tensor(), |qs: &[T]| {
        with_slice(&k.tensor(), |ks: &[T]| {
            with_slice(&v.tensor(), |vs: &[T]| {
                with_mask(mask, g, |m| kernel::forward(qs, ks, vs, m, g))
            })
        })
    })?;
    Ok((
        Tensor::from_vec(out, &[g.batch, g.hq, g.l, g.ev])?,
        Tensor::from_vec(lse, &[g.batch, g.hq, g.l])?,
    ))
}
