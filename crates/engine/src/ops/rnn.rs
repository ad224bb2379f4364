//! Recurrent layers: one layer and direction of `nn.RNN`, `nn.LSTM` or `nn.GRU` as ONE
//! node (`rnn_layer`) whose forward runs the whole time loop in `kernels/rnn.rs` and
//! whose backward runs the fused backward through time, as PyTorch's `_VF.lstm`. The
//! Python modules stack layers and directions, dropout and packing around it. The
//! backward is not itself differentiable: under `create_graph` its results carry a node
//! that refuses a second backward. See Note [Recurrent layers].

use super::{saved_at, Grads};
use crate::autograd::grad_mode;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::rnn::{self as kernel, CellKind, RnnGeom, Wants, Weights, Workspace};
use crate::tensor::Tensor;
use crate::variable::{SavedTensor, Variable};
use smallvec::SmallVec;

pub use crate::kernels::rnn::CellKind as RnnMode;

/// What the backward of a layer needs besides its saved tensors.
#[derive(Clone, Debug)]
pub(crate) struct LayerInfo {
    geom: RnnGeom,
    /// Whether the input was `[T, B, I]` (else packed rows `[N, I]`).
    padded: bool,
    has_bias: bool,
}

/// The backward rules of this family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// One layer and direction; inputs `[x, h0, c0 (LSTM), w_ih, w_hh, b_ih?, b_hh?,
    /// w_hr?]`, outputs `[output, h_n, c_n (LSTM)]`; saved `[x, w_ih, w_hh, w_hr,
    /// gates, cell, cell_prev, hidden_raw, hidden_prev]`.
    Layer(Box<LayerInfo>),
    /// The results of a layer's backward under `create_graph`: differentiating them
    /// again is refused.
    NoDoubleBackward,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Layer(info) => match info.geom.cell {
                CellKind::Lstm => "LstmLayerBackward0",
                CellKind::Gru => "GruLayerBackward0",
                _ => "RnnLayerBackward0",
            },
            Rule::NoDoubleBackward => "RnnLayerBackwardBackward0",
        }
    }

    /// Single-gradient entry (the scheduler calls `apply_multi` for this family).
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        self.apply_multi(saved, &[Some(grad.clone())], needs)
    }

    /// The gradients of the inputs given every output's gradient (`None`: zeros).
    pub(crate) fn apply_multi(
        &self,
        saved: &[Option<Variable>],
        grads: &[Option<Variable>],
        needs: &[bool],
    ) -> Result<Grads> {
        match self {
            Rule::Layer(info) => layer_backward(info, saved, grads, needs),
            Rule::NoDoubleBackward => Err(Error::NotImplemented(
                "the derivative for 'rnn_layer_backward' is not implemented: rustgrad's \
                 fused nn.RNN/nn.LSTM/nn.GRU layers support one backward (use \
                 nn.RNNCell/LSTMCell/GRUCell for higher-order gradients)"
                    .into(),
            )),
        }
    }
}

fn dims_err(message: String) -> Error {
    Error::InvalidArgument(message)
}

/// Copies a tensor's elements out as `T`.
fn vec_of<T: crate::dtype::Element>(v: &Variable) -> Result<Vec<T>> {
    v.tensor().try_to_vec()
}

impl Variable {
    /// One layer and direction of a recurrent network over `self`: `[T, B, input]`, or
    /// packed rows `[N, input]` with `batch_sizes` (non-increasing, summing to `N`).
    /// `hx` is `[B, proj]`, `cx` (LSTM) `[B, hidden]`. Returns `[output, h_n]` (and
    /// `c_n` for an LSTM), the output `[T, B, proj]` or `[N, proj]`. Differentiable
    /// once (one node, fused backward through time).
    #[allow(clippy::too_many_arguments)]
    pub fn rnn_layer(
        &self,
        hx: &Variable,
        cx: Option<&Variable>,
        w_ih: &Variable,
        w_hh: &Variable,
        b_ih: Option<&Variable>,
        b_hh: Option<&Variable>,
        w_hr: Option<&Variable>,
        cell: CellKind,
        reverse: bool,
        batch_sizes: Option<&[i64]>,
    ) -> Result<Vec<Variable>> {
        let dtype = self.dtype();
        let lstm = cell == CellKind::Lstm;
        let xs = self.shape();
        let (padded, batch_sizes, input) = match batch_sizes {
            None => {
                if xs.len() != 3 {
                    return Err(dims_err(format!(
                        "rnn_layer: input must have 3 dimensions, got {}",
                        xs.len()
                    )));
                }
                (true, vec![xs[1]; xs[0]], xs[2])
            }
            Some(bs) => {
                if xs.len() != 2 {
                    return Err(dims_err(format!(
                        "rnn_layer: packed input must have 2 dimensions, got {}",
                        xs.len()
                    )));
                }
                let bs: Vec<usize> = bs
                    .iter()
                    .map(|&b| {
                        usize::try_from(b)
                            .map_err(|_| dims_err("rnn_layer: negative batch size".into()))
                    })
                    .collect::<Result<_>>()?;
                if bs.iter().sum::<usize>() != xs[0] {
                    return Err(dims_err(format!(
                        "rnn_layer: batch_sizes sum to {}, but the packed input has {} rows",
                        bs.iter().sum::<usize>(),
                        xs[0]
                    )));
                }
                (false, bs, xs[1])
            }
        };
        let ws = w_ih.shape();
        let gates = cell.gates();
        if ws.len() != 2 || !ws[0].is_multiple_of(gates) || ws[1] != input {
            return Err(dims_err(format!(
                "rnn_layer: w_ih of shape {:?} does not fit input size {input}",
                ws.as_slice()
            )));
        }
        let hidden = ws[0] / gates;
        let proj = match w_hr {
            Some(w) => {
                let s = w.shape();
                if s.len() != 2 || s[1] != hidden || !lstm {
                    return Err(dims_err(format!(
                        "rnn_layer: w_hr of shape {:?} does not fit hidden size {hidden}",
                        s.as_slice()
                    )));
                }
                s[0]
            }
            None => hidden,
        };
        let geom = RnnGeom {
            cell,
            input,
            hidden,
            proj,
            batch_sizes,
            reverse,
            has_proj: w_hr.is_some(),
        };
        let batch = geom.batch();
        let expect = |what: &str, v: &Variable, shape: &[usize]| -> Result<()> {
            if v.shape().as_slice() != shape {
                return Err(dims_err(format!(
                    "rnn_layer: {what} has shape {:?}, expected {shape:?}",
                    v.shape().as_slice()
                )));
            }
            if v.dtype() != dtype {
                return Err(Error::InvalidArgument(format!(
                    "rnn_layer: {what} has dtype {}, expected {}",
                    v.dtype().scalar_type_name(),
                    dtype.scalar_type_name()
                )));
            }
            Ok(())
        };
        expect("hx", hx, &[batch, proj])?;
        expect("w_hh", w_hh, &[gates * hidden, proj])?;
        expect("w_ih", w_ih, &[gates * hidden, input])?;
        if lstm {
            let c = cx.ok_or_else(|| dims_err("rnn_layer: an LSTM needs cx".into()))?;
            expect("cx", c, &[batch, hidden])?;
        }
        if b_ih.is_some() != b_hh.is_some() {
            return Err(dims_err("rnn_layer: give both biases or neither".into()));
        }
        for b in [b_ih, b_hh].into_iter().flatten() {
            expect("bias", b, &[gates * hidden])?;
        }
        if let Some(w) = w_hr {
            expect("w_hr", w, &[proj, hidden])?;
        }
        let rows = geom.rows();
        let out_shape: SmallVec<[usize; 3]> = match padded {
            true => SmallVec::from_slice(&[xs[0], batch, proj]),
            false => SmallVec::from_slice(&[rows, proj]),
        };
        let (tensors, ws) = dispatch(dtype, |t| -> Result<(Vec<Tensor>, [Option<Tensor>; 5])> {
            t.forward(
                &geom, self, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, &out_shape,
            )
        })?;
        let mut inputs: Vec<&Variable> = vec![self, hx];
        if let Some(c) = cx.filter(|_| lstm) {
            inputs.push(c);
        }
        inputs.extend([w_ih, w_hh]);
        inputs.extend(b_ih);
        inputs.extend(b_hh);
        inputs.extend(w_hr);
        let info = LayerInfo {
            geom: geom.clone(),
            padded,
            has_bias: b_ih.is_some(),
        };
        let [g0, g1, g2, g3, g4] = ws;
        let wrap = |t: Option<Tensor>| t.map(|t| SavedTensor::input(&Variable::from_tensor(t)));
        let outs = Variable::record_multi(tensors, &inputs, |_, _| {
            let saved = smallvec::smallvec![
                Some(SavedTensor::input(self)),
                Some(SavedTensor::input(w_ih)),
                Some(SavedTensor::input(w_hh)),
                w_hr.map(SavedTensor::input),
                wrap(g0),
                wrap(g1),
                wrap(g2),
                wrap(g3),
                wrap(g4),
            ];
            (Rule::Layer(Box::new(info)), saved)
        });
        Ok(outs)
    }
}

/// The float type a layer computes in, as a value for [`dispatch`].
struct Typed<T>(std::marker::PhantomData<T>);

/// Runs `f` with the layer's float type.
fn dispatch<R>(dtype: DType, f: impl FnOnce(&dyn Layer) -> Result<R>) -> Result<R> {
    match dtype {
        DType::F32 => f(&Typed::<f32>(std::marker::PhantomData)),
        DType::F64 => f(&Typed::<f64>(std::marker::PhantomData)),
        other => Err(Error::unsupported_dtype("rnn_layer", other)),
    }
}

/// The dtype-specific halves of the op.
trait Layer {
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        geom: &RnnGeom,
        x: &Variable,
        hx: &Variable,
        cx: Option<&Variable>,
        w_ih: &Variable,
        w_hh: &Variable,
        b_ih: Option<&Variable>,
        b_hh: Option<&Variable>,
        w_hr: Option<&Variable>,
        out_shape: &[usize],
    ) -> Result<(Vec<Tensor>, [Option<Tensor>; 5])>;

    fn backward(
        &self,
        info: &LayerInfo,
        saved: &[Option<Variable>],
        grads: &[Option<Variable>],
        want: Wants,
    ) -> Result<[Option<Tensor>; 8]>;
}

fn opt_vec<T: crate::dtype::Element>(v: Option<&Variable>) -> Result<Option<Vec<T>>> {
    v.map(vec_of).transpose()
}

fn tensor_of<T: crate::dtype::Element>(v: Vec<T>, shape: &[usize]) -> Result<Option<Tensor>> {
    Ok(Some(Tensor::from_vec(v, shape)?))
}

impl<T> Layer for Typed<T>
where
    T: crate::kernels::matmul::Gemm + crate::dtype::Float + Send + Sync,
{
    fn forward(
        &self,
        geom: &RnnGeom,
        x: &Variable,
        hx: &Variable,
        cx: Option<&Variable>,
        w_ih: &Variable,
        w_hh: &Variable,
        b_ih: Option<&Variable>,
        b_hh: Option<&Variable>,
        w_hr: Option<&Variable>,
        out_shape: &[usize],
    ) -> Result<(Vec<Tensor>, [Option<Tensor>; 5])> {
        let xv: Vec<T> = vec_of(x)?;
        let h0: Vec<T> = vec_of(hx)?;
        let c0: Vec<T> = opt_vec(cx.filter(|_| geom.cell == CellKind::Lstm))?.unwrap_or_default();
        let (wi, wh): (Vec<T>, Vec<T>) = (vec_of(w_ih)?, vec_of(w_hh)?);
        let (bi, bh, wr) = (
            opt_vec::<T>(b_ih)?,
            opt_vec::<T>(b_hh)?,
            opt_vec::<T>(w_hr)?,
        );
        let weights = Weights {
            w_ih: &wi,
            w_hh: &wh,
            b_ih: bi.as_deref(),
            b_hh: bh.as_deref(),
            w_hr: wr.as_deref(),
        };
        let f = kernel::forward(geom, &xv, &h0, &c0, &weights)?;
        let (b, h, p, rows) = (geom.batch(), geom.hidden, geom.proj, geom.rows());
        let mut outs = vec![
            Tensor::from_vec(f.output, out_shape)?,
            Tensor::from_vec(f.h_n, &[b, p])?,
        ];
        let lstm = geom.cell == CellKind::Lstm;
        if lstm {
            outs.push(Tensor::from_vec(f.c_n, &[b, h])?);
        }
        let w = f.ws;
        let sg = w.gates.len() / rows.max(1);
        let some = |v: Vec<T>, shape: &[usize]| -> Result<Option<Tensor>> {
            match v.is_empty() && shape.iter().product::<usize>() != 0 {
                true => Ok(None),
                false => tensor_of(v, shape),
            }
        };
        let ws = [
            tensor_of(w.gates, &[rows, sg])?,
            if lstm {
                some(w.cell, &[rows, h])?
            } else {
                None
            },
            if lstm {
                some(w.cell_prev, &[rows, h])?
            } else {
                None
            },
            if geom.has_proj {
                some(w.hidden_raw, &[rows, h])?
            } else {
                None
            },
            tensor_of(w.hidden_prev, &[rows, p])?,
        ];
        Ok((outs, ws))
    }

    fn backward(
        &self,
        info: &LayerInfo,
        saved: &[Option<Variable>],
        grads: &[Option<Variable>],
        want: Wants,
    ) -> Result<[Option<Tensor>; 8]> {
        let g = &info.geom;
        let lstm = g.cell == CellKind::Lstm;
        let x: Vec<T> = vec_of(saved_at(saved, 0)?)?;
        let wi: Vec<T> = vec_of(saved_at(saved, 1)?)?;
        let wh: Vec<T> = vec_of(saved_at(saved, 2)?)?;
        let wr: Option<Vec<T>> = opt_vec(saved.get(3).and_then(Option::as_ref))?;
        let opt = |i: usize| -> Result<Vec<T>> {
            Ok(opt_vec(saved.get(i).and_then(Option::as_ref))?.unwrap_or_default())
        };
        let ws = Workspace {
            gates: vec_of(saved_at(saved, 4)?)?,
            cell: opt(5)?,
            cell_prev: opt(6)?,
            hidden_raw: opt(7)?,
            hidden_prev: vec_of(saved_at(saved, 8)?)?,
        };
        let weights = Weights {
            w_ih: &wi,
            w_hh: &wh,
            b_ih: None,
            b_hh: None,
            w_hr: wr.as_deref(),
        };
        let grad = |i: usize| -> Result<Vec<T>> {
            match grads.get(i).and_then(Option::as_ref) {
                Some(v) => v.tensor().to_dtype(T::DTYPE)?.try_to_vec(),
                None => Ok(Vec::new()),
            }
        };
        let (d_out, d_hn) = (grad(0)?, grad(1)?);
        let d_cn = if lstm { grad(2)? } else { Vec::new() };
        let r = kernel::backward(g, &x, &weights, &ws, &d_out, &d_hn, &d_cn, want)?;
        let (b, h, p, rows) = (g.batch(), g.hidden, g.proj, g.rows());
        let gh = g.cell.gates() * h;
        let x_shape = saved_at(saved, 0)?.shape();
        let maybe = |v: Vec<T>, shape: &[usize]| -> Result<Option<Tensor>> {
            match v.is_empty() && shape.iter().product::<usize>() != 0 {
                true => Ok(None),
                false => tensor_of(v, shape),
            }
        };
        let _ = rows;
        Ok([
            if want.x { maybe(r.dx, &x_shape)? } else { None },
            maybe(r.dh0, &[b, p])?,
            if lstm { maybe(r.dc0, &[b, h])? } else { None },
            maybe(r.dw_ih, &[gh, g.input])?,
            maybe(r.dw_hh, &[gh, p])?,
            maybe(r.db_ih, &[gh])?,
            maybe(r.db_hh, &[gh])?,
            if g.has_proj {
                maybe(r.dw_hr, &[p, h])?
            } else {
                None
            },
        ])
    }
}

/// The backward of one layer: the fused kernel, its results handed to the inputs that
/// need them (in the order of `rnn_layer`'s inputs).
fn layer_backward(
    info: &LayerInfo,
    saved: &[Option<Variable>],
    grads: &[Option<Variable>],
    needs: &[bool],
) -> Result<Grads> {
    let g = &info.geom;
    let lstm = g.cell == CellKind::Lstm;
    // Input slots: which of the eight possible inputs each `needs` entry is.
    let mut slots: Vec<usize> = vec![0, 1];
    if lstm {
        slots.push(2);
    }
    slots.extend([3, 4]);
    if info.has_bias {
        slots.extend([5, 6]);
    }
    if g.has_proj {
        slots.push(7);
    }
    let mut want_slot = [false; 8];
    for (&s, &n) in slots.iter().zip(needs) {
        want_slot[s] = n;
    }
    if !grads.iter().any(Option::is_some) {
        return Ok(needs.iter().map(|_| None).collect());
    }
    let want = Wants {
        x: want_slot[0],
        weights: want_slot[3..].iter().any(|&w| w),
    };
    let dtype = saved_at(saved, 0)?.dtype();
    let all = dispatch(dtype, |t| t.backward(info, saved, grads, want))?;
    let mut results: Vec<Option<Variable>> = slots
        .iter()
        .map(|&s| match want_slot[s] {
            true => all[s].clone().map(Variable::from_tensor),
            false => None,
        })
        .collect();
    if grad_mode::is_grad_enabled() {
        // create_graph: the gradients depend on the incoming gradients and the saved
        // tensors, but this backward cannot be differentiated. Attach a node that says
        // so when someone tries.
        let mut sources: Vec<&Variable> = grads.iter().flatten().collect();
        sources.extend(saved.iter().take(4).flatten());
        let present: Vec<usize> = (0..results.len())
            .filter(|&i| results[i].is_some())
            .collect();
        let tensors: Vec<Tensor> = present
            .iter()
            .filter_map(|&i| results[i].as_ref().map(|v| v.tensor().clone()))
            .collect();
        let wrapped = Variable::record_multi(tensors, &sources, |_, _| {
            (Rule::NoDoubleBackward, SmallVec::new())
        });
        for (i, v) in present.into_iter().zip(wrapped) {
            results[i] = Some(v);
        }
    }
    let _ = info.padded;
    Ok(results.into_iter().collect())
}
