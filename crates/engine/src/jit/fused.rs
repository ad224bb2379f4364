//! Elementwise chains of a captured graph fused into one node: its forward runs each
//! op's tensor kernel in turn with no `Variable` or graph node in between, and its
//! backward evaluates each op's derivative rule with the same tensor ops, in the order
//! the eager engine would. See Note [Capture and replay].

use std::sync::Arc;

use smallvec::SmallVec;

use super::{Node, Op, ValueId, ValueMeta};
use crate::dtype::{DType, Float, Num};
use crate::error::{Error, Result};
use crate::ops::unary::Rule as UnaryRule;
use crate::ops::Grads;
use crate::shape::Dims;
use crate::tensor::{BinaryOp, Scalar, Tensor, UnaryOp};
use crate::variable::Variable;

/// The ops a chain may hold: those whose rule here is the eager rule, op for op.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Exp,
    Tanh,
    Sigmoid,
}

/// Where a step reads an operand: the fused node's `k`-th input, or step `j`'s result.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Operand {
    Input(usize),
    Local(usize),
}

#[derive(Debug)]
struct Step {
    kind: Kind,
    a: Operand,
    b: Option<Operand>,
}

/// A fused chain: its steps in recorded order.
#[derive(Debug)]
pub(crate) struct Program {
    steps: Vec<Step>,
    /// Per input: a wrapped Python number (never differentiated).
    wrapped: Vec<bool>,
    /// The shape and dtype of every tensor operand and result.
    shape: Dims,
    dtype: DType,
    /// Per step: whether the backward reads its result.
    saved: Vec<bool>,
}

/// What the fused node's backward keeps: the program, the steps' results it reads, and
/// the inputs.
#[derive(Debug)]
struct Saved {
    program: Arc<Program>,
    kept: Kept,
}

/// The values a backward reads: tensors (large chains, which run each op's tensor
/// kernel), or plain vectors (small ones, run as one flat loop per op).
#[derive(Debug)]
enum Kept {
    Tensors {
        locals: Vec<Option<Tensor>>,
        inputs: Vec<Tensor>,
    },
    F32(Flat<f32>),
    F64(Flat<f64>),
}

/// A flat chain's values: per step its result (empty when the backward does not read
/// it), per input its elements (one element for a wrapped number, converted as the
/// tensor kernel converts it).
#[derive(Debug)]
struct Flat<T> {
    locals: Vec<Vec<T>>,
    inputs: Vec<Vec<T>>,
}

/// The element types of flat chains.
trait FlatElem: Float {
    fn keep(flat: Flat<Self>) -> Kept;
}

impl FlatElem for f32 {
    fn keep(flat: Flat<f32>) -> Kept {
        Kept::F32(flat)
    }
}

impl FlatElem for f64 {
    fn keep(flat: Flat<f64>) -> Kept {
        Kept::F64(flat)
    }
}

/// An operand of a flat step: its elements, and whether it is one broadcast number.
type Val<'a, T> = (&'a [T], bool);

/// `f(a, b)` elementwise over `n` elements, broadcasting a one-number operand.
fn bin<T: Copy>(a: Val<'_, T>, b: Val<'_, T>, n: usize, f: impl Fn(T, T) -> T) -> Vec<T> {
    match (a.1, b.1) {
        (false, false) => a.0.iter().zip(b.0).map(|(&x, &y)| f(x, y)).collect(),
        (false, true) => {
            let y = b.0[0];
            a.0.iter().map(|&x| f(x, y)).collect()
        }
        (true, false) => {
            let x = a.0[0];
            b.0.iter().map(|&y| f(x, y)).collect()
        }
        (true, true) => vec![f(a.0[0], b.0[0]); n],
    }
}

fn un<T: Copy>(a: &[T], f: impl Fn(T) -> T) -> Vec<T> {
    a.iter().map(|&x| f(x)).collect()
}

/// Runs a flat chain: each step one loop with the scalar function the tensor kernel
/// applies per element (`Num::add_w`, `Float::tanh`, ...), so each element is the same.
fn flat_forward<T: FlatElem>(p: &Program, tensors: &[Tensor]) -> Result<(Tensor, Kept)> {
    let n = crate::shape::numel(&p.shape);
    let inputs: Vec<Vec<T>> = tensors
        .iter()
        .zip(&p.wrapped)
        .map(|(t, &wrapped)| {
            if wrapped {
                t.cast_operand(p.dtype, p.dtype, false)?.try_to_vec::<T>()
            } else {
                t.try_to_vec::<T>()
            }
        })
        .collect::<Result<_>>()?;
    let mut locals: Vec<Vec<T>> = Vec::with_capacity(p.steps.len());
    for step in &p.steps {
        let get = |o: Operand| -> Val<'_, T> {
            match o {
                Operand::Input(k) => (&inputs[k], p.wrapped[k]),
                Operand::Local(j) => (&locals[j], false),
            }
        };
        let a = get(step.a);
        let b = get(step.b.unwrap_or(step.a));
        let out = match step.kind {
            Kind::Add => bin(a, b, n, |x, y| x.add_w(y)),
            Kind::Sub => bin(a, b, n, |x, y| x.sub_w(y)),
            Kind::Mul => bin(a, b, n, |x, y| x.mul_w(y)),
            Kind::Div => bin(a, b, n, |x, y| Num::div(x, y)),
            Kind::Neg => un(a.0, Num::neg),
            Kind::Exp => un(a.0, Float::exp),
            Kind::Tanh => un(a.0, Float::tanh),
            Kind::Sigmoid => un(a.0, Float::sigmoid),
        };
        locals.push(out);
    }
    let last = locals.last().cloned().unwrap_or_default();
    for (l, &keep) in locals.iter_mut().zip(&p.saved) {
        if !keep {
            *l = Vec::new();
        }
    }
    let result = Tensor::from_buffer(T::into_buffer(last), &p.shape);
    Ok((result, T::keep(Flat { locals, inputs })))
}

/// The backward of a flat chain: [`FusedRule::apply`]'s formulas, element by element.
fn flat_backward<T: FlatElem>(
    p: &Program,
    flat: &Flat<T>,
    grad: &Tensor,
    input_needs: &dyn Fn(usize) -> bool,
    local_needs: &[bool],
) -> Result<Vec<Option<Tensor>>> {
    let n = crate::shape::numel(&p.shape);
    let steps = p.steps.len();
    let need = |o: Operand| match o {
        Operand::Input(k) => input_needs(k),
        Operand::Local(j) => local_needs[j],
    };
    let val = |o: Operand| -> Val<'_, T> {
        match o {
            Operand::Input(k) => (&flat.inputs[k], p.wrapped[k]),
            Operand::Local(j) => (&flat.locals[j], false),
        }
    };
    let mut local_grads: Vec<Option<Vec<T>>> = vec![None; steps];
    let mut input_grads: Vec<Option<Vec<T>>> = vec![None; p.wrapped.len()];
    local_grads[steps - 1] = Some(grad.try_to_vec::<T>()?);
    let one = [T::ONE];
    let one: Val<'_, T> = (&one, true);
    for i in (0..steps).rev() {
        let Some(g) = local_grads[i].take() else {
            continue;
        };
        let step = &p.steps[i];
        let b = step.b.unwrap_or(step.a);
        let (need_a, need_b) = (need(step.a), step.b.is_some_and(need));
        let gv: Val<'_, T> = (&g, false);
        let mul = |x: Val<'_, T>, y: Val<'_, T>| bin(x, y, n, |x, y| x.mul_w(y));
        let (ga, gb): (Option<Vec<T>>, Option<Vec<T>>) = match step.kind {
            Kind::Add => (need_a.then(|| g.clone()), need_b.then(|| g.clone())),
            Kind::Sub => (need_a.then(|| g.clone()), need_b.then(|| un(&g, Num::neg))),
            Kind::Mul => (
                need_a.then(|| mul(gv, val(b))),
                need_b.then(|| mul(gv, val(step.a))),
            ),
            Kind::Div => (
                need_a.then(|| bin(gv, val(b), n, |x, y| Num::div(x, y))),
                need_b.then(|| {
                    let t = mul(gv, val(step.a));
                    let yy = mul(val(b), val(b));
                    un(
                        &bin((&t, false), (&yy, false), n, |x, y| Num::div(x, y)),
                        Num::neg,
                    )
                }),
            ),
            Kind::Neg => (need_a.then(|| un(&g, Num::neg)), None),
            Kind::Exp => (need_a.then(|| mul(gv, val(Operand::Local(i)))), None),
            Kind::Tanh => (
                need_a.then(|| {
                    let y = val(Operand::Local(i));
                    let yy = mul(y, y);
                    let t = bin(one, (&yy, false), n, |x, y| x.sub_w(y));
                    mul(gv, (&t, false))
                }),
                None,
            ),
            Kind::Sigmoid => (
                need_a.then(|| {
                    let y = val(Operand::Local(i));
                    let t = bin(one, y, n, |x, y| x.sub_w(y));
                    let u = mul(y, (&t, false));
                    mul(gv, (&u, false))
                }),
                None,
            ),
        };
        accumulate(
            (&mut input_grads, &mut local_grads),
            [(Some(step.a), ga), (step.b, gb)],
            |acc, c| Ok(bin((acc, false), (c, false), n, |x, y| x.add_w(y))),
        )?;
    }
    Ok(input_grads
        .into_iter()
        .map(|g| g.map(|g| Tensor::from_buffer(T::into_buffer(g), &p.shape)))
        .collect())
}

/// The backward rule of a fused chain (one pointer in the node).
#[derive(Clone, Debug)]
pub(crate) struct FusedRule(Arc<Saved>);

fn kind_of(op: &Op) -> Option<Kind> {
    Some(match op {
        Op::Binary(BinaryOp::Add) => Kind::Add,
        // `rsub(self, other)` is `other - self` with Sub's rule (inputs swapped).
        Op::Binary(BinaryOp::Sub) | Op::Rsub => Kind::Sub,
        Op::Binary(BinaryOp::Mul) => Kind::Mul,
        Op::Binary(BinaryOp::Div) => Kind::Div,
        Op::Unary(UnaryOp::Neg, UnaryRule::Neg, _) => Kind::Neg,
        Op::Unary(UnaryOp::Exp, UnaryRule::Exp, _) => Kind::Exp,
        Op::Unary(UnaryOp::Tanh, UnaryRule::Tanh, _) => Kind::Tanh,
        Op::Unary(UnaryOp::Sigmoid, UnaryRule::Sigmoid, _) => Kind::Sigmoid,
        _ => return None,
    })
}

/// Runs a fused chain on `inputs` (the fused node's inputs, in order).
pub(crate) fn run(program: &Arc<Program>, inputs: &[Variable]) -> Result<Variable> {
    let p = program;
    if inputs.len() != p.wrapped.len() {
        return Err(Error::InvalidArgument(
            "replay: a fused chain got the wrong number of inputs".into(),
        ));
    }
    let tensors: Vec<Tensor> = inputs.iter().map(|v| v.tensor().clone()).collect();
    for (t, &wrapped) in tensors.iter().zip(&p.wrapped) {
        if !wrapped && (t.shape() != p.shape.as_slice() || t.dtype() != p.dtype) {
            return Err(Error::InvalidArgument(format!(
                "replay: a tensor the capture read with shape {:?} and dtype {:?} now has \
                 shape {:?} and dtype {:?}",
                p.shape.as_slice(),
                p.dtype,
                t.shape(),
                t.dtype()
            )));
        }
    }
    let small = crate::shape::numel(&p.shape) < crate::parallel::PARALLEL_MIN_ELEMENTS;
    let (result, kept) = match p.dtype {
        DType::F32 if small => flat_forward::<f32>(p, &tensors)?,
        DType::F64 if small => flat_forward::<f64>(p, &tensors)?,
        _ => tensor_forward(p, tensors)?,
    };
    let refs: Vec<&Variable> = inputs.iter().collect();
    let program = Arc::clone(program);
    Ok(Variable::record(result, &refs, move |_, _| {
        (
            FusedRule(Arc::new(Saved { program, kept })),
            SmallVec::new(),
        )
    }))
}

/// Runs a chain with each op's tensor kernel (parallel on large tensors).
fn tensor_forward(p: &Program, tensors: Vec<Tensor>) -> Result<(Tensor, Kept)> {
    let mut locals: Vec<Tensor> = Vec::with_capacity(p.steps.len());
    for step in &p.steps {
        let out = {
            let get = |o: Operand| -> &Tensor {
                match o {
                    Operand::Input(k) => &tensors[k],
                    Operand::Local(j) => &locals[j],
                }
            };
            let a = get(step.a);
            let b = step.b.map(get);
            let binary = |op: BinaryOp| match b {
                Some(b) => a.binary(b, op),
                None => Err(Error::NotImplemented(
                    "rustgrad internal error: fused binary step without operand".into(),
                )),
            };
            match step.kind {
                Kind::Add => binary(BinaryOp::Add)?,
                Kind::Sub => binary(BinaryOp::Sub)?,
                Kind::Mul => binary(BinaryOp::Mul)?,
                Kind::Div => binary(BinaryOp::Div)?,
                Kind::Neg => a.unary(UnaryOp::Neg)?,
                Kind::Exp => a.unary(UnaryOp::Exp)?,
                Kind::Tanh => a.unary(UnaryOp::Tanh)?,
                Kind::Sigmoid => a.unary(UnaryOp::Sigmoid)?,
            }
        };
        locals.push(out);
    }
    let result = locals
        .last()
        .cloned()
        .ok_or_else(|| Error::NotImplemented("rustgrad internal error: empty chain".into()))?;
    let locals = locals
        .into_iter()
        .zip(&p.saved)
        .map(|(t, &s)| s.then_some(t))
        .collect();
    Ok((
        result,
        Kept::Tensors {
            locals,
            inputs: tensors,
        },
    ))
}

impl FusedRule {
    /// PyTorch has no such node; the name says what it is.
    pub(crate) fn name(&self) -> &'static str {
        "FusedElementwiseBackward0"
    }

    /// The inputs' gradients: each step's eager rule in reverse order, contributions
    /// summed per operand in the order the eager engine sums them (Note [Capture and
    /// replay]).
    pub(crate) fn apply(&self, grad: &Variable, needs: &[bool]) -> Result<Grads> {
        let s = &*self.0;
        let p = &*s.program;
        let n = p.steps.len();
        let input_needs = |k: usize| !p.wrapped[k] && needs.get(k).copied().unwrap_or(false);
        let mut local_needs = vec![false; n];
        for (i, step) in p.steps.iter().enumerate() {
            let need = |o: Operand| match o {
                Operand::Input(k) => input_needs(k),
                Operand::Local(j) => local_needs[j],
            };
            local_needs[i] = need(step.a) || step.b.is_some_and(need);
        }
        let to_grads = |grads: Vec<Option<Tensor>>| -> Grads {
            grads
                .into_iter()
                .enumerate()
                .map(|(k, g)| g.filter(|_| input_needs(k)).map(Variable::from_tensor))
                .collect()
        };
        let (s_locals, s_inputs) = match &s.kept {
            Kept::Tensors { locals, inputs } => (locals, inputs),
            Kept::F32(flat) => {
                let g = flat_backward(p, flat, &grad.tensor(), &input_needs, &local_needs)?;
                return Ok(to_grads(g));
            }
            Kept::F64(flat) => {
                let g = flat_backward(p, flat, &grad.tensor(), &input_needs, &local_needs)?;
                return Ok(to_grads(g));
            }
        };
        let need = |o: Operand| match o {
            Operand::Input(k) => input_needs(k),
            Operand::Local(j) => local_needs[j],
        };
        let value = |o: Operand| -> Result<&Tensor> {
            match o {
                Operand::Input(k) => Ok(&s_inputs[k]),
                Operand::Local(j) => s_locals[j].as_ref().ok_or_else(|| {
                    Error::NotImplemented("rustgrad internal error: fused value not kept".into())
                }),
            }
        };
        let mut local_grads: Vec<Option<Tensor>> = vec![None; n];
        let mut input_grads: Vec<Option<Tensor>> = vec![None; p.wrapped.len()];
        local_grads[n - 1] = Some(grad.tensor().clone());
        let one = || Tensor::wrapped_number(Scalar::Float(1.0));
        for i in (0..n).rev() {
            let Some(g) = local_grads[i].take() else {
                continue;
            };
            let step = &p.steps[i];
            let b = step.b;
            let need_a = need(step.a);
            let need_b = b.is_some_and(need);
            let b_value = || value(b.unwrap_or(step.a));
            let (ga, gb): (Option<Tensor>, Option<Tensor>) = match step.kind {
                Kind::Add => (need_a.then(|| g.clone()), need_b.then(|| g.clone())),
                Kind::Sub => (
                    need_a.then(|| g.clone()),
                    need_b.then(|| g.unary(UnaryOp::Neg)).transpose()?,
                ),
                Kind::Mul => (
                    need_a
                        .then(|| g.binary(b_value()?, BinaryOp::Mul))
                        .transpose()?,
                    need_b
                        .then(|| g.binary(value(step.a)?, BinaryOp::Mul))
                        .transpose()?,
                ),
                Kind::Div => {
                    let ga = need_a
                        .then(|| g.binary(b_value()?, BinaryOp::Div))
                        .transpose()?;
                    let gb = need_b
                        .then(|| -> Result<Tensor> {
                            let y = b_value()?;
                            g.binary(value(step.a)?, BinaryOp::Mul)?
                                .binary(&y.binary(y, BinaryOp::Mul)?, BinaryOp::Div)?
                                .unary(UnaryOp::Neg)
                        })
                        .transpose()?;
                    (ga, gb)
                }
                Kind::Neg => (need_a.then(|| g.unary(UnaryOp::Neg)).transpose()?, None),
                Kind::Exp => {
                    let y = value(Operand::Local(i))?;
                    (
                        need_a.then(|| g.binary(y, BinaryOp::Mul)).transpose()?,
                        None,
                    )
                }
                Kind::Tanh => {
                    let y = value(Operand::Local(i))?;
                    let ga = need_a
                        .then(|| -> Result<Tensor> {
                            let t = one().binary(&y.binary(y, BinaryOp::Mul)?, BinaryOp::Sub)?;
                            g.binary(&t, BinaryOp::Mul)
                        })
                        .transpose()?;
                    (ga, None)
                }
                Kind::Sigmoid => {
                    let y = value(Operand::Local(i))?;
                    let ga = need_a
                        .then(|| -> Result<Tensor> {
                            let t = y.binary(&one().binary(y, BinaryOp::Sub)?, BinaryOp::Mul)?;
                            g.binary(&t, BinaryOp::Mul)
                        })
                        .transpose()?;
                    (ga, None)
                }
            };
            accumulate(
                (&mut input_grads, &mut local_grads),
                [(Some(step.a), ga), (b, gb)],
                |acc, c| acc.binary(c, BinaryOp::Add),
            )?;
        }
        Ok(to_grads(input_grads))
    }
}

/// Adds one step's gradient contributions `(target, c)` into their slots: the first
/// contribution to a slot is moved in, later ones are added to it with `add`, in the
/// order the eager engine sums them.
fn accumulate<G>(
    (input_grads, local_grads): (&mut [Option<G>], &mut [Option<G>]),
    contributions: [(Option<Operand>, Option<G>); 2],
    add: impl Fn(&G, &G) -> Result<G>,
) -> Result<()> {
    for (target, contribution) in contributions {
        let (Some(target), Some(c)) = (target, contribution) else {
            continue;
        };
        let slot = match target {
            Operand::Input(k) => &mut input_grads[k],
            Operand::Local(j) => &mut local_grads[j],
        };
        *slot = Some(match slot.take() {
            None => c,
            Some(acc) => add(&acc, &c)?,
        });
    }
    Ok(())
}

/// Replaces the chains it can fuse exactly by one node each; the other nodes stay.
///
/// A chain is a run of consecutive nodes of [`Kind`]s whose tensor operands and
/// results all have one shape and floating dtype (other operands are wrapped Python
/// numbers), at least two long, such that
/// - a value made inside the chain, except the last node's result, is read only by
///   the chain and is not a graph output;
/// - a tensor the chain reads from outside is read by no node after the chain's start
///   outside the chain (so the eager engine would sum its gradient contributions in
///   the same order), and no backward records a graph (`create_graph`).
pub(crate) fn fuse(nodes: Vec<Node>, meta: &[ValueMeta], outputs: &[ValueId]) -> Vec<Node> {
    let create_graph = nodes.iter().any(|n| {
        matches!(
            n.op,
            Op::Backward {
                create_graph: true,
                ..
            }
        )
    });
    if create_graph {
        return nodes;
    }
    let mut uses: Vec<Vec<usize>> = vec![Vec::new(); meta.len()];
    for (i, n) in nodes.iter().enumerate() {
        for &v in &n.inputs {
            uses[v].push(i);
        }
    }
    // Per node: its kind and its result's (shape, dtype) when it may join a chain.
    let fusable: Vec<Option<(Kind, &ValueMeta)>> = nodes
        .iter()
        .map(|n| {
            let kind = kind_of(&n.op)?;
            let [out] = n.outputs[..] else { return None };
            let m = &meta[out];
            let ok = m.dtype.is_floating_point()
                && !n.inputs.contains(&out)
                && n.inputs.iter().all(|&v| {
                    let i = &meta[v];
                    i.wrapped || (i.shape == m.shape && i.dtype == m.dtype)
                });
            ok.then_some((kind, m))
        })
        .collect();
    let valid = |start: usize, end: usize| -> bool {
        let inside = |i: usize| (start..=end).contains(&i);
        let mut made = Vec::new();
        for n in &nodes[start..=end] {
            for &v in &n.inputs {
                if !made.contains(&v)
                    && !meta[v].wrapped
                    && uses[v].iter().any(|&u| u >= start && !inside(u))
                {
                    return false;
                }
            }
            made.extend(&n.outputs);
        }
        let last = nodes[end].outputs[0];
        made.iter()
            .filter(|&&v| v != last)
            .all(|&v| !outputs.contains(&v) && uses[v].iter().all(|&u| inside(u)))
    };
    let mut chains: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        let Some((_, m)) = fusable[i] else {
            i += 1;
            continue;
        };
        let mut j = i;
        while j + 1 < nodes.len()
            && fusable[j + 1].is_some_and(|(_, m2)| m2.shape == m.shape && m2.dtype == m.dtype)
        {
            j += 1;
        }
        match (i + 1..=j).rev().find(|&e| valid(i, e)) {
            Some(e) => {
                chains.push((i, e));
                i = e + 1;
            }
            None => i += 1,
        }
    }
    if chains.is_empty() {
        return nodes;
    }
    let mut out = Vec::with_capacity(nodes.len());
    let mut nodes = nodes.into_iter().enumerate().peekable();
    for (start, end) in chains {
        while nodes.peek().is_some_and(|(i, _)| *i < start) {
            if let Some((_, n)) = nodes.next() {
                out.push(n);
            }
        }
        let run: Vec<Node> = nodes
            .by_ref()
            .take(end - start + 1)
            .map(|(_, n)| n)
            .collect();
        out.push(build(run, meta));
    }
    out.extend(nodes.map(|(_, n)| n));
    out
}

/// The fused node of a valid chain.
fn build(run: Vec<Node>, meta: &[ValueMeta]) -> Node {
    let mut inputs: Vec<ValueId> = Vec::new();
    let mut made: Vec<ValueId> = Vec::new();
    let mut steps = Vec::with_capacity(run.len());
    let mut operand = |v: ValueId, made: &[ValueId]| match made.iter().position(|&m| m == v) {
        Some(j) => Operand::Local(j),
        None => Operand::Input(match inputs.iter().position(|&i| i == v) {
            Some(k) => k,
            None => {
                inputs.push(v);
                inputs.len() - 1
            }
        }),
    };
    for n in &run {
        let kind = kind_of(&n.op).unwrap_or(Kind::Neg);
        let (first, second) = match n.op {
            Op::Rsub => (n.inputs[1], n.inputs.first().copied()),
            _ => (n.inputs[0], n.inputs.get(1).copied()),
        };
        let a = operand(first, &made);
        let b = second.map(|v| operand(v, &made));
        steps.push(Step { kind, a, b });
        made.push(n.outputs[0]);
    }
    let mut saved = vec![false; steps.len()];
    for (i, step) in steps.iter().enumerate() {
        if matches!(step.kind, Kind::Exp | Kind::Tanh | Kind::Sigmoid) {
            saved[i] = true;
        }
        if matches!(step.kind, Kind::Mul | Kind::Div) {
            for o in [Some(step.a), step.b].into_iter().flatten() {
                if let Operand::Local(j) = o {
                    saved[j] = true;
                }
            }
        }
    }
    let last = made[made.len() - 1];
    let program = Program {
        wrapped: inputs.iter().map(|&v| meta[v].wrapped).collect(),
        shape: meta[last].shape.clone(),
        dtype: meta[last].dtype,
        steps,
        saved,
    };
    Node {
        op: Op::Fused(Arc::new(program)),
        inputs,
        outputs: vec![last],
    }
}
