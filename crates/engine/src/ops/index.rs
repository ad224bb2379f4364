//! Indexing views (slice, select, as_strided) and the scatters that are their backward.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{saved_at, zero_like, Grads};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels;
use crate::layout::Layout;
use crate::shape::{self, Dims};
use crate::storage::WriteSite;
use crate::tensor::{CmpOp, Scalar, Tensor};
use crate::variable::SavedTensor;
use crate::variable::Variable;
use smallvec::smallvec;
use std::panic::Location;
use std::sync::Arc;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `input[..., start:end:step, ...]` along `dim`, of an input of the shape given.
    Slice(Box<(Dims, SliceRange)>),
    /// `input[..., index, ...]` along `dim`, of an input of the shape given.
    Select(Box<(Dims, usize, usize)>),
    /// The backward of `Slice` as an op (zero tensor with the slice filled), for double
    /// backward.
    SliceScatter(Box<SliceRange>),
    /// The backward of `Select` as an op.
    SelectScatter { dim: usize, index: usize },
    /// A view of a contiguous tensor of shape `base` through `layout` (how a view is
    /// re-derived from its base's current history).
    AsStrided(Box<(Dims, Layout)>),
    /// The backward of `AsStrided` as an op: zeros of the base shape with the view's
    /// elements filled.
    AsStridedScatter(Box<Layout>),
    /// An output read from the input at `map`'s positions (gather, index_select, flip,
    /// advanced indexing, the strided views diagonal / unfold / as_strided, ...).
    Take { name: Taken, map: Arc<IndexMap> },
    /// Zeros with the input added at `map`'s positions (the backward of `Take`).
    PutAdd { map: Arc<IndexMap> },
    /// `self` with `src` written or added at positions; saved `[mask]` (the positions
    /// written) when overwriting.
    Scatter(Box<ScatterInfo>),
    /// `self` with a 0-d `value` where a mask is true; saved `[mask]`.
    Fill { name: Scattered },
    /// `scatter_reduce(dim, index, src, reduce, include_self)`; saved `[self, src]`.
    ScatterReduce(Box<ScatterReduceInfo>),
}

fn scattered_name(name: Scattered) -> &'static str {
    match name {
        Scattered::Scatter => "ScatterBackward0",
        Scattered::ScatterValue => "ScatterBackward1",
        Scattered::ScatterAdd => "ScatterAddBackward0",
        Scattered::IndexAdd => "IndexAddBackward0",
        Scattered::IndexPut => "IndexPutBackward0",
        Scattered::IndexFill => "IndexFillBackward0",
        Scattered::IndexFillTensor => "IndexFillBackward1",
        Scattered::MaskedFill => "MaskedFillBackward0",
        Scattered::MaskedFillTensor => "MaskedFillBackward1",
        Scattered::DiagEmbed => "DiagEmbedBackward0",
        Scattered::IndexCopy => "IndexCopyBackward0",
        Scattered::MaskedScatter => "MaskedScatterBackward0",
        Scattered::Put => "PutBackward0",
    }
}

/// `start:end:step` along `dim`, with Python's bounds already clamped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SliceRange {
    pub dim: usize,
    pub start: usize,
    pub end: usize,
    pub step: usize,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Slice(_) => "SliceBackward0",
            Rule::Select(_) => "SelectBackward0",
            Rule::SliceScatter(_) => "SliceBackwardBackward0",
            Rule::SelectScatter { .. } => "SelectBackwardBackward0",
            Rule::AsStrided(_) => "AsStridedBackward0",
            Rule::AsStridedScatter(_) => "AsStridedScatterBackward0",
            Rule::Take { name, .. } => match name {
                Taken::Flip => "FlipBackward0",
                Taken::Roll => "RollBackward0",
                Taken::Repeat => "RepeatBackward0",
                Taken::IndexSelect | Taken::Backward => "IndexSelectBackward0",
                Taken::Gather => "GatherBackward0",
                Taken::Take => "TakeBackward0",
                Taken::Index => "IndexBackward0",
                Taken::MaskedSelect => "MaskedSelectBackward0",
                Taken::Diagonal => "DiagonalBackward0",
                Taken::Unfold => "UnfoldBackward0",
                Taken::AsStrided => "AsStridedBackward0",
                Taken::AsStridedInPlace => "AsStridedBackward1",
            },
            Rule::PutAdd { .. } => "IndexAddBackward0",
            Rule::Scatter(info) => scattered_name(info.name),
            Rule::Fill { name } => scattered_name(*name),
            Rule::ScatterReduce(_) => "ScatterReduceBackward0",
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output; `needs[i]`
    /// says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let g = grad;
        Ok(match self {
            Rule::Slice(slice) => {
                let (input, r) = &**slice;
                smallvec![Some(g.slice_scatter(input, r.dim, r.start, r.end, r.step)?)]
            }
            Rule::Select(select) => {
                let (input, dim, index) = &**select;
                smallvec![Some(g.select_scatter(input, *dim, *index)?)]
            }
            Rule::SliceScatter(r) => smallvec![Some(g.slice(
                r.dim as i64,
                Some(r.start as i64),
                Some(r.end as i64),
                r.step as i64
            )?)],
            Rule::SelectScatter { dim, index } => {
                smallvec![Some(g.select(*dim as i64, *index as i64)?)]
            }
            Rule::AsStrided(view) => {
                let (base, layout) = &**view;
                smallvec![Some(g.as_strided_scatter(base, layout)?)]
            }
            Rule::AsStridedScatter(layout) => smallvec![Some(g.as_strided(layout)?)],
            Rule::Take { map, .. } => smallvec![Some(g.put_map(map.clone())?)],
            Rule::PutAdd { map } => smallvec![Some(g.take_map(map.clone(), Taken::Backward)?)],
            Rule::Scatter(info) => {
                let grad_self = if !needs[0] {
                    None
                } else if info.add {
                    Some(g.clone())
                } else {
                    let mask = saved_at(saved, 0)?;
                    Some(Variable::where_cond(&mask.tensor(), &zero_like(g), g)?)
                };
                let grad_src = if needs.get(1).copied().unwrap_or(false) {
                    let part = g.take_map(info.map.clone(), Taken::Backward)?;
                    Some(match &info.src_map {
                        Some(m) => part.put_map(m.clone())?,
                        None => part,
                    })
                } else {
                    None
                };
                smallvec![grad_self, grad_src]
            }
            Rule::Fill { .. } => {
                let mask = saved_at(saved, 0)?;
                let grad_self = if needs[0] {
                    Some(Variable::where_cond(&mask.tensor(), &zero_like(g), g)?)
                } else {
                    None
                };
                let grad_value = if needs.get(1).copied().unwrap_or(false) {
                    Some(Variable::where_cond(&mask.tensor(), g, &zero_like(g))?.sum()?)
                } else {
                    None
                };
                smallvec![grad_self, grad_value]
            }
            Rule::ScatterReduce(info) => {
                let (this, src) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                scatter_reduce_backward(info, this, src, g, needs)?
            }
        })
    }
}

impl Variable {
    /// `self[..., start:end:step, ...]` along `dim` (Python's bound clamping).
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Variable> {
        let result = self.tensor().slice(dim, start, end, step)?;
        let d = shape::wrap_dim(dim, self.dim())?;
        let (s, e) = self.tensor().slice_params(d, start, end);
        Ok(self.record_view(result, || {
            let range = SliceRange {
                dim: d,
                start: s,
                end: e,
                step: step as usize,
            };
            Rule::Slice(Box::new((self.shape(), range)))
        }))
    }

    /// `self[..., index, ...]` along `dim`, removing the dim.
    pub fn select(&self, dim: i64, index: i64) -> Result<Variable> {
        let result = self.tensor().select(dim, index)?;
        let d = shape::wrap_dim(dim, self.dim())?;
        let i = if index < 0 {
            index + self.shape()[d] as i64
        } else {
            index
        } as usize;
        Ok(self.record_view(result, || Rule::Select(Box::new((self.shape(), d, i)))))
    }

    /// A zero tensor of `shape` with `self` written into the slice (slice's backward).
    pub(crate) fn slice_scatter(
        &self,
        shape: &[usize],
        dim: usize,
        start: usize,
        end: usize,
        step: usize,
    ) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype())?;
        out.slice(
            dim as i64,
            Some(start as i64),
            Some(end as i64),
            step as i64,
        )?
        .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            let range = SliceRange {
                dim,
                start,
                end,
                step,
            };
            (Rule::SliceScatter(Box::new(range)), smallvec![])
        }))
    }

    /// A zero tensor of `shape` with `self` written at `index` of `dim` (select's backward).
    pub(crate) fn select_scatter(
        &self,
        shape: &[usize],
        dim: usize,
        index: usize,
    ) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype())?;
        out.select(dim as i64, index as i64)?
            .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            (Rule::SelectScatter { dim, index }, smallvec![])
        }))
    }

    /// The elements of this tensor (made contiguous) seen through `layout`.
    pub(crate) fn as_strided(&self, layout: &Layout) -> Result<Variable> {
        let c = self.contiguous()?;
        let result = c.tensor().as_strided(layout)?;
        Ok(Variable::record(result, &[&c], |_, _| {
            let view = Box::new((c.shape(), layout.clone()));
            (Rule::AsStrided(view), smallvec![])
        }))
    }

    /// `self` with the elements that `layout` selects replaced by `value` (by zeros
    /// when `None`): the gradient CopySlices passes to the base's old history.
    /// Differentiable in `self` and `value` (a `where` over the region's mask), and
    /// exact: the elements outside the region are `self`'s, bit for bit.
    pub(crate) fn replace_region(
        &self,
        layout: &Layout,
        value: Option<&Variable>,
    ) -> Result<Variable> {
        let shape = self.shape();
        let mask = Tensor::zeros(&shape, DType::Bool)?;
        mask.as_strided(layout)?
            .fill(1.0, WriteSite::Rust(Location::caller()))?;
        let inside = match value {
            Some(v) => v.as_strided_scatter(&shape, layout)?,
            None => Variable::from_tensor(Tensor::scalar(0.0, self.dtype())),
        };
        Variable::where_cond(&mask, &inside, self)
    }

    /// Zeros of `shape` with `self` written at the elements `layout` selects.
    pub(crate) fn as_strided_scatter(&self, shape: &[usize], layout: &Layout) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype())?;
        out.as_strided(layout)?
            .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            (
                Rule::AsStridedScatter(Box::new(layout.clone())),
                smallvec![],
            )
        }))
    }
}

// ----- indexing by positions (gather, scatter, advanced indexing) -------------------

/// Where each element of an indexing op's output comes from in its input: `positions`
/// are row-major flat indices into a tensor of shape `src`, one per element of an
/// output of shape `out`. Built (and bounds-checked) once in the forward, shared by the
/// node and by its backward.
#[derive(Debug)]
pub(crate) struct IndexMap {
    /// The shape of the indexed tensor.
    pub src: Dims,
    /// The shape of the output.
    pub out: Dims,
    /// For each output element, its position in the indexed tensor.
    pub positions: Vec<usize>,
}

impl IndexMap {
    /// A map checked against its shapes (every position inside `src`, one per output
    /// element).
    pub(crate) fn new(src: Dims, out: Dims, positions: Vec<usize>) -> Result<Arc<IndexMap>> {
        let (n_src, n_out) = (shape::checked_numel(&src)?, shape::checked_numel(&out)?);
        if positions.len() != n_out || positions.iter().any(|&p| p >= n_src) {
            return Err(Error::InvalidArgument(
                "rustgrad internal error: index map outside its shapes".into(),
            ));
        }
        Ok(Arc::new(IndexMap {
            src,
            out,
            positions,
        }))
    }

    /// A map whose positions separate by dim: output index `i` along dim `d` reads
    /// input index `tables[d][i]` (the output has shape `tables[d].len()`), as flip,
    /// roll, repeat and index_select do.
    pub(crate) fn separable(src: &[usize], tables: &[Vec<usize>]) -> Result<Arc<IndexMap>> {
        let strides = crate::layout::contiguous_strides(src);
        let out: Dims = tables.iter().map(Vec::len).collect();
        let n = shape::checked_numel(&out)?;
        crate::tensor::check_allocation(n, DType::I64)?;
        let mut positions = vec![0usize];
        for (table, &stride) in tables.iter().zip(&strides) {
            let mut next = crate::kernels::try_with_capacity(positions.len() * table.len())?;
            for &p in &positions {
                next.extend(table.iter().map(|&t| p + t * stride));
            }
            positions = next;
        }
        IndexMap::new(src.into(), out, positions)
    }

    /// The positions a layout reaches in a contiguous tensor of shape `src` (the layout
    /// is in that tensor's coordinates): the map of a view op for its backward.
    pub(crate) fn of_layout(src: &[usize], layout: &Layout) -> Result<Arc<IndexMap>> {
        let n = layout.numel();
        crate::tensor::check_allocation(n, DType::I64)?;
        let mut positions = crate::kernels::try_vec(n, 0usize)?;
        crate::kernels::for_each_strided(
            layout.shape(),
            [layout.strides()],
            [layout.offset()],
            0,
            n,
            |i, [o]| positions[i] = o,
        );
        IndexMap::new(src.into(), layout.shape().into(), positions)
    }
}

/// What an op built on [`Variable::take_map`] is called in PyTorch.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Taken {
    Flip,
    Roll,
    Repeat,
    IndexSelect,
    Gather,
    Take,
    Index,
    MaskedSelect,
    Diagonal,
    Unfold,
    AsStrided,
    /// `as_strided_` (AsStridedBackward1).
    AsStridedInPlace,
    /// The backward of a scatter (double backward).
    Backward,
}

/// What an op built on [`Variable::scatter_map`] or [`Variable::fill_mask`] is called in
/// PyTorch.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Scattered {
    /// `scatter(dim, index, src)`.
    Scatter,
    /// `scatter(dim, index, value)`.
    ScatterValue,
    ScatterAdd,
    IndexAdd,
    IndexPut,
    IndexFill,
    IndexFillTensor,
    MaskedFill,
    MaskedFillTensor,
    DiagEmbed,
    /// `index_copy(dim, index, source)`.
    IndexCopy,
    /// `masked_scatter(mask, source)`.
    MaskedScatter,
    /// `put(index, source, accumulate)`.
    Put,
}

/// A scatter: `self` with the values of `src` written (or added) at `map`'s positions.
#[derive(Clone, Debug)]
pub(crate) struct ScatterInfo {
    /// Positions in `self` (of shape `map.src`), one per scattered value.
    pub map: Arc<IndexMap>,
    /// Where the scattered values come from in `src` when it is larger than the index
    /// (`scatter(dim, index, src)` reads only `src[:index.shape]`); `None`: all of it.
    pub src_map: Option<Arc<IndexMap>>,
    /// Adds instead of overwriting.
    pub add: bool,
    pub name: Scattered,
}

fn take_tensor(t: &Tensor, map: &IndexMap) -> Result<Tensor> {
    fn go<T: Element>(t: &Tensor, map: &IndexMap) -> Result<Tensor> {
        if !t.is_contiguous() && map.positions.len() < t.numel() {
            // Fewer reads than the view has elements (`diag` of a huge expanded view):
            // read them where they are stored, not from a materialised copy.
            let out =
                t.read(|s: &[T]| kernels::index::take_strided(s, t.layout(), &map.positions))?;
            return Tensor::from_vec(out, &map.out);
        }
        let v: Vec<T> = t.try_to_vec()?;
        Tensor::from_vec(kernels::index::take(&v, &map.positions)?, &map.out)
    }
    if t.shape() != map.src.as_slice() {
        return Err(Error::InvalidArgument(
            "rustgrad internal error: index map of another shape".into(),
        ));
    }
    crate::tensor::dispatch!(t.dtype(), T => go::<T>(t, map))
}

/// How a scatter combines a value with the element already at its place.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Combine {
    Write,
    Add,
    Multiply,
}

/// `base` (of shape `map.src`) with `src` (of shape `map.out`, converted to `base`'s
/// dtype) written or added at the positions.
fn put_tensor(base: &Tensor, src: &Tensor, map: &IndexMap, add: bool) -> Result<Tensor> {
    let how = if add { Combine::Add } else { Combine::Write };
    put_tensor_with(base, src, map, how)
}

fn put_tensor_with(base: &Tensor, src: &Tensor, map: &IndexMap, how: Combine) -> Result<Tensor> {
    fn write<T: Element>(base: &Tensor, src: &Tensor, map: &IndexMap) -> Result<Tensor> {
        let mut d: Vec<T> = base.try_to_vec()?;
        let s: Vec<T> = src.try_to_vec()?;
        kernels::index::put(&mut d, &s, &map.positions, |_, b| b)?;
        Tensor::from_vec(d, &map.src)
    }
    fn accumulate<T: crate::dtype::Num>(
        base: &Tensor,
        src: &Tensor,
        map: &IndexMap,
        how: Combine,
    ) -> Result<Tensor> {
        let mut d: Vec<T> = base.try_to_vec()?;
        let s: Vec<T> = src.try_to_vec()?;
        if how == Combine::Multiply {
            kernels::index::put(&mut d, &s, &map.positions, |a: T, b| a.mul_w(b))?;
        } else {
            kernels::index::put(&mut d, &s, &map.positions, |a: T, b| a.add_w(b))?;
        }
        Tensor::from_vec(d, &map.src)
    }
    if base.shape() != map.src.as_slice() || src.shape() != map.out.as_slice() {
        return Err(Error::InvalidArgument(
            "rustgrad internal error: index map of another shape".into(),
        ));
    }
    if how == Combine::Write {
        return crate::tensor::dispatch!(base.dtype(), T => write::<T>(base, src, map));
    }
    match base.dtype() {
        DType::F32 => accumulate::<f32>(base, src, map, how),
        DType::F64 => accumulate::<f64>(base, src, map, how),
        DType::I64 => accumulate::<i64>(base, src, map, how),
        DType::I32 => accumulate::<i32>(base, src, map, how),
        DType::I16 => accumulate::<i16>(base, src, map, how),
        DType::I8 => accumulate::<i8>(base, src, map, how),
        DType::U8 => accumulate::<u8>(base, src, map, how),
        // Accumulated in float32 and rounded back once (Note [Storage dtypes]).
        DType::F16 | DType::BF16 => {
            let src = src.to_dtype(DType::F32)?;
            base.via_f32(|b| accumulate::<f32>(b, &src, map, how))
        }
        DType::Bool => Err(Error::unsupported_dtype(
            "scatter_reduce / index_put_with_accumulate",
            DType::Bool,
        )),
    }
}

/// The values of an integer index tensor; `op` names the op in PyTorch's dtype error.
/// The map of `index_add` / `index_copy`: element `j` of the source along `dim` goes to
/// position `table[j]` of `this` (the destination's shape, at least 1-d), every other
/// dim in place; `(dst, src)` are the two tensors' own shapes.
fn along_dim_map(
    this: &[usize],
    dim: usize,
    table: Vec<usize>,
    (dst, src): (&[usize], &[usize]),
) -> Result<Arc<IndexMap>> {
    let mut table = Some(table);
    let tables: Vec<Vec<usize>> = this
        .iter()
        .enumerate()
        .map(|(k, &n)| match k == dim {
            true => Ok(table.take().unwrap_or_default()),
            false => crate::kernels::try_collect(0..n),
        })
        .collect::<Result<_>>()?;
    let m = IndexMap::separable(this, &tables)?;
    IndexMap::new(dst.into(), src.into(), m.positions.clone())
}

pub(crate) fn index_values(index: &Tensor, op: &str) -> Result<Vec<i64>> {
    if index.dtype() == DType::I32 {
        // PyTorch's index kernels take int32 indices too (index_select, gather,
        // scatter, index_add, advanced indexing); the few that insist on int64 check
        // before calling this (`require_long`).
        return index.to_dtype(DType::I64)?.try_to_vec::<i64>();
    }
    if index.dtype() != DType::I64 {
        return Err(Error::InvalidArgument(if op == "index_select" {
            format!("{op}(): Expected dtype int32 or int64 for index")
        } else {
            format!("{op}(): Expected dtype int32/int64 for index")
        }));
    }
    index.try_to_vec::<i64>()
}

impl Variable {
    /// `out[i] = self.flat[map.positions[i]]`, recorded under `name`; the backward adds
    /// the gradient back at the positions.
    pub(crate) fn take_map(&self, map: Arc<IndexMap>, name: Taken) -> Result<Variable> {
        let result = take_tensor(&self.tensor(), &map)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::Take { name, map }, smallvec![])
        }))
    }

    /// Zeros of shape `map.src` with `self` (of shape `map.out`) added at the positions:
    /// the backward of [`Variable::take_map`].
    pub(crate) fn put_map(&self, map: Arc<IndexMap>) -> Result<Variable> {
        let base = Tensor::zeros(&map.src, self.dtype())?;
        let result = put_tensor(&base, &self.tensor(), &map, true)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::PutAdd { map }, smallvec![])
        }))
    }

    /// `self` with `src`'s values written (`add`: added) at `map`'s positions (of
    /// `src_map`'s part of `src` when given). `self` and `src` have one dtype.
    pub(crate) fn scatter_map(
        &self,
        src: &Variable,
        map: Arc<IndexMap>,
        src_map: Option<Arc<IndexMap>>,
        add: bool,
        name: Scattered,
    ) -> Result<Variable> {
        let part = match &src_map {
            Some(m) => take_tensor(&src.tensor(), m)?,
            None => src.tensor().clone(),
        };
        let result = put_tensor(&self.tensor(), &part, &map, add)?;
        let mask = if add { None } else { Some(touched_mask(&map)?) };
        Ok(Variable::record(result, &[self, src], |_, _| {
            let saved = match mask {
                Some(m) => smallvec![Some(SavedTensor::input(&Variable::from_tensor(m)))],
                None => smallvec![],
            };
            let info = ScatterInfo {
                map,
                src_map,
                add,
                name,
            };
            (Rule::Scatter(Box::new(info)), saved)
        }))
    }

    /// `self` with the 0-d `value` where `mask` (bool, broadcastable to `self`) is true.
    pub(crate) fn fill_mask(
        &self,
        mask: &Tensor,
        value: &Variable,
        name: Scattered,
    ) -> Result<Variable> {
        if value.dim() != 0 {
            return Err(Error::InvalidArgument(format!(
                "{} only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                match name {
                    Scattered::IndexFill | Scattered::IndexFillTensor => "index_fill_",
                    _ => "masked_fill_",
                },
                value.dim()
            )));
        }
        // PyTorch fills with `value.item()` converted with its range check ("value cannot
        // be converted to type uint8_t without overflow"), a 0-d tensor value too.
        value.tensor().item()?.check_fits(self.dtype())?;
        let v = value.tensor().to_dtype(self.dtype())?;
        let result = Tensor::where_cond(mask, &v, &self.tensor())?;
        if result.shape() != self.tensor().shape() {
            return Err(Error::ShapeMismatch {
                op: "masked_fill",
                message: format!(
                    "The shape of the mask {:?} does not match the shape of the indexed tensor {:?}",
                    mask.shape(),
                    self.shape()
                ),
            });
        }
        let mask = Variable::from_tensor(mask.clone());
        Ok(Variable::record(result, &[self, value], |_, _| {
            (
                Rule::Fill { name },
                smallvec![Some(SavedTensor::input(&mask))],
            )
        }))
    }
}

/// A bool tensor of shape `map.src`, true at the map's positions.
fn touched_mask(map: &IndexMap) -> Result<Tensor> {
    let mut mask = crate::kernels::try_vec(shape::checked_numel(&map.src)?, false)?;
    for &p in &map.positions {
        if let Some(m) = mask.get_mut(p) {
            *m = true;
        }
    }
    Tensor::from_vec(mask, &map.src)
}

// ----- the public indexing ops --------------------------------------------------------

/// Row-major coordinates of each element of `shape`, visited in order.
fn for_each_coord(shape: &[usize], mut f: impl FnMut(&[usize]) -> Result<()>) -> Result<()> {
    let n = shape::checked_numel(shape)?;
    let mut idx: Dims = smallvec::SmallVec::from_elem(0, shape.len());
    for _ in 0..n {
        f(&idx)?;
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

/// The shape an op treats a tensor as: 0-d counts as 1-d of size 1.
fn at_least_1d(shape: &[usize]) -> Dims {
    if shape.is_empty() {
        smallvec![1]
    } else {
        shape.into()
    }
}

/// The map of `gather(dim, index)` into `src` (also the positions of scatters).
fn gather_map(src: &[usize], dim: usize, index: &Tensor, op: &str) -> Result<Arc<IndexMap>> {
    let values = index_values(index, op)?;
    let ishape = at_least_1d(index.shape());
    let sshape = at_least_1d(src);
    let strides = crate::layout::contiguous_strides(&sshape);
    let mut positions = Vec::with_capacity(values.len());
    let mut i = 0;
    for_each_coord(&ishape, |coord| {
        let v = values[i];
        i += 1;
        let size = sshape[dim];
        let w = if v < 0 { v + size as i64 } else { v };
        if w < 0 || w >= size as i64 {
            return Err(Error::InvalidArgument(format!(
                "index {v} is out of bounds for dimension {dim} with size {size}"
            )));
        }
        let mut p = 0;
        for (k, &c) in coord.iter().enumerate() {
            p += if k == dim { w as usize } else { c } * strides[k];
        }
        positions.push(p);
        Ok(())
    })?;
    IndexMap::new(src.into(), index.shape().into(), positions)
}

/// Checks the shapes of `gather` / `scatter` (same ndim; the index no larger than
/// `self` apart from `dim`, nor than `src`).
fn check_scatter_shapes(
    op: &str,
    this: &[usize],
    dim: usize,
    index: &[usize],
    src: Option<&[usize]>,
) -> Result<()> {
    let nd = |s: &[usize]| s.len().max(1);
    if nd(index) != nd(this) {
        return Err(Error::InvalidArgument(format!(
            "Index tensor must have the same number of dimensions as {} tensor",
            if op == "gather" { "input" } else { "self" }
        )));
    }
    if let Some(src) = src {
        if nd(src) != nd(index) {
            return Err(Error::InvalidArgument(
                "Index tensor must have the same number of dimensions as src tensor".into(),
            ));
        }
    }
    let (i1, s1) = (at_least_1d(index), at_least_1d(this));
    let bad_self = (0..i1.len()).any(|k| k != dim && i1[k] > s1[k]);
    let bad_src = src.is_some_and(|s| {
        let s = at_least_1d(s);
        (0..i1.len()).any(|k| i1[k] > s[k])
    });
    if op == "gather" && bad_self {
        let k = (0..i1.len())
            .find(|&k| k != dim && i1[k] > s1[k])
            .unwrap_or(0);
        return Err(Error::InvalidArgument(format!(
            "Size does not match at dimension {k} expected index {index:?} to be no larger than self {this:?} apart from dimension {dim}"
        )));
    }
    if bad_self || bad_src {
        return Err(Error::InvalidArgument(format!(
            "Expected index {index:?} to be no larger than self {this:?} apart from dimension {dim} and to be no larger size than src {:?}",
            src.unwrap_or(this)
        )));
    }
    Ok(())
}

/// The map selecting `index` (0-d or 1-d) along `dim`, identity elsewhere.
fn select_map(src: &[usize], dim: usize, index: &Tensor, op: &str) -> Result<Arc<IndexMap>> {
    // index_select reports "index out of range in self"; index_fill names the index.
    let out_of_range = |v: i64, size: usize| {
        if op == "index_select" {
            Error::Index("index out of range in self".into())
        } else {
            Error::IndexOutOfRange {
                index: v,
                dim,
                size,
            }
        }
    };
    if index.dim() > 1 {
        return Err(Error::Index(format!(
            "{op}(): Index is supposed to be a vector"
        )));
    }
    let sshape = at_least_1d(src);
    let size = sshape[dim];
    let table = index_values(index, op)?
        .into_iter()
        .map(|v| {
            let w = if v < 0 { v + size as i64 } else { v };
            if w < 0 || w >= size as i64 {
                Err(out_of_range(v, size))
            } else {
                Ok(w as usize)
            }
        })
        .collect::<Result<Vec<usize>>>()?;
    let tables: Vec<Vec<usize>> = sshape
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            if k == dim {
                Ok(table.clone())
            } else {
                crate::kernels::try_collect(0..n)
            }
        })
        .collect::<Result<_>>()?;
    let m = IndexMap::separable(&sshape, &tables)?;
    let out: Dims = if src.is_empty() && index.dim() == 0 {
        Dims::new()
    } else {
        m.out.clone()
    };
    IndexMap::new(src.into(), out, m.positions.clone())
}

fn bool_mask(mask: &Tensor, op: &str) -> Result<()> {
    if mask.dtype() != DType::Bool {
        return Err(Error::InvalidArgument(format!(
            "{op} only supports boolean masks, but got mask with dtype {}",
            mask.dtype().scalar_type_name().to_lowercase()
        )));
    }
    Ok(())
}

impl Variable {
    /// The entries `index` (a 0-d or 1-d int64 tensor) along `dim`.
    pub fn index_select(&self, dim: i64, index: &Tensor) -> Result<Variable> {
        let d = shape::wrap_dim(dim, self.dim())?;
        let map = select_map(&self.shape(), d, index, "index_select")?;
        self.take_map(map, Taken::IndexSelect)
    }

    /// `out[i][j] = self[index[i][j]][j]` (for `dim` 0), PyTorch's `gather`.
    pub fn gather(&self, dim: i64, index: &Tensor) -> Result<Variable> {
        let d = shape::wrap_dim(dim, self.dim())?;
        index_values(index, "gather")?;
        check_scatter_shapes("gather", &self.shape(), d, index.shape(), None)?;
        let map = gather_map(&self.shape(), d, index, "gather")?;
        self.take_map(map, Taken::Gather)
    }

    /// Scatters `src` into a copy of `self` at `index` along `dim` (`add`: accumulate,
    /// PyTorch's `scatter_add`).
    pub fn scatter(&self, dim: i64, index: &Tensor, src: &Variable, add: bool) -> Result<Variable> {
        let op = if add { "scatter_add" } else { "scatter" };
        let d = shape::wrap_dim(dim, self.dim())?;
        index_values(index, op)?;
        if src.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(format!(
                "{op}(): Expected self.dtype to be equal to src.dtype"
            )));
        }
        let (this, sshape) = (self.shape(), src.shape());
        check_scatter_shapes(op, &this, d, index.shape(), Some(&sshape))?;
        let map = gather_map(&this, d, index, op)?;
        let src_map = if sshape.as_slice() == index.shape() {
            None
        } else {
            let strides = crate::layout::contiguous_strides(&at_least_1d(&sshape));
            let mut positions = Vec::with_capacity(map.positions.len());
            for_each_coord(&at_least_1d(index.shape()), |c| {
                positions.push(c.iter().zip(&strides).map(|(a, b)| a * b).sum());
                Ok(())
            })?;
            Some(IndexMap::new(
                sshape.clone(),
                index.shape().into(),
                positions,
            )?)
        };
        let name = if add {
            Scattered::ScatterAdd
        } else {
            Scattered::Scatter
        };
        self.scatter_map(src, map, src_map, add, name)
    }

    /// `scatter(dim, index, src, reduce='multiply')`: `self` with its elements at
    /// `index` multiplied by `src`'s. Not differentiable, as in PyTorch ("derivative for
    /// aten::scatter is not implemented"), so it refuses inputs that require grad.
    pub fn scatter_multiply(&self, dim: i64, index: &Tensor, src: &Variable) -> Result<Variable> {
        let d = shape::wrap_dim(dim, self.dim())?;
        index_values(index, "scatter")?;
        if src.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(
                "scatter(): Expected self.dtype to be equal to src.dtype".into(),
            ));
        }
        let (this, sshape) = (self.shape(), src.shape());
        check_scatter_shapes("scatter", &this, d, index.shape(), Some(&sshape))?;
        if crate::autograd::grad_mode::is_grad_enabled()
            && (self.requires_grad() || src.requires_grad())
        {
            return Err(Error::NotImplemented(
                "derivative for aten::scatter is not implemented".into(),
            ));
        }
        let map = gather_map(&this, d, index, "scatter")?;
        let strides = crate::layout::contiguous_strides(&at_least_1d(&sshape));
        let mut positions = Vec::with_capacity(map.positions.len());
        for_each_coord(&at_least_1d(index.shape()), |c| {
            positions.push(c.iter().zip(&strides).map(|(a, b)| a * b).sum());
            Ok(())
        })?;
        let src_map = IndexMap::new(sshape.clone(), index.shape().into(), positions)?;
        let part = take_tensor(&src.tensor(), &src_map)?;
        let result = put_tensor_with(&self.tensor(), &part, &map, Combine::Multiply)?;
        Ok(Variable::from_tensor(result))
    }

    /// A view of this tensor's storage with explicit sizes, strides and storage offset
    /// (default: this tensor's), checked to stay inside the storage. Its gradient goes
    /// to the elements of `self` that view the storage positions it reads.
    pub fn as_strided_view(
        &self,
        size: &[i64],
        stride: &[i64],
        storage_offset: Option<i64>,
    ) -> Result<Variable> {
        let (result, rule) = self.as_strided_parts(size, stride, storage_offset, false)?;
        Ok(self.record_view(result, || rule))
    }

    /// `as_strided_`: this tensor becomes the strided view `as_strided` would return
    /// (Note [In-place view ops]).
    #[track_caller]
    pub fn as_strided_(
        &self,
        size: &[i64],
        stride: &[i64],
        storage_offset: Option<i64>,
    ) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        let (result, rule) = self.as_strided_parts(size, stride, storage_offset, true)?;
        self.in_place_view(result, rule, site)
    }

    /// The view `as_strided` makes and the rule recording it (AsStridedBackward0, or
    /// AsStridedBackward1 for the in-place form).
    fn as_strided_parts(
        &self,
        size: &[i64],
        stride: &[i64],
        storage_offset: Option<i64>,
        in_place: bool,
    ) -> Result<(Tensor, super::Rule)> {
        let t = self.tensor();
        if size.len() != stride.len() {
            return Err(Error::InvalidArgument(
                "mismatch in length of strides and shape".into(),
            ));
        }
        if stride.iter().any(|&s| s < 0) {
            return Err(Error::InvalidArgument(format!(
                "as_strided: Negative strides are not supported at the moment, got strides: {stride:?}"
            )));
        }
        if size.iter().any(|&s| s < 0) {
            return Err(Error::InvalidArgument(format!(
                "Storage size calculation overflowed with sizes={size:?} and strides={stride:?}"
            )));
        }
        let offset = storage_offset.unwrap_or(t.layout().offset() as i64);
        if offset < 0 {
            return Err(Error::InvalidArgument(format!(
                "Tensor: invalid storage offset {offset}"
            )));
        }
        let layout = Layout::new(
            size.iter().map(|&s| s as usize).collect(),
            stride.iter().map(|&s| s as usize).collect(),
            offset as usize,
        );
        shape::checked_numel(layout.shape())?;
        let len = t.storage().read().len();
        let item = self.dtype().size_in_bytes();
        // PyTorch's computeStorageNbytes: an overflow names the layout.
        let needed = layout.storage_nbytes(item)?;
        if needed > len.saturating_mul(item) {
            return Err(Error::InvalidArgument(format!(
                "setStorage: sizes {size:?}, strides {stride:?}, storage offset {offset}, and itemsize {item} requiring a storage size of {needed} are out of bounds for storage of size {}",
                len.saturating_mul(item)
            )));
        }
        let result = t.strided_view(layout.clone())?;
        let recording = crate::autograd::grad_mode::is_grad_enabled()
            && self.requires_grad()
            && self.dtype().is_floating_point();
        if !recording {
            return Ok((result, super::shape::Rule::Alias.into()));
        }
        // Storage position → the element of `self` that views it.
        let n = self.numel();
        let mut owner: std::collections::HashMap<usize, usize> = Default::default();
        // User-sized (a huge expanded view): fallible, Note [Allocation failures].
        owner.try_reserve(n).map_err(|_| Error::OutOfMemory {
            bytes: n.saturating_mul(3 * std::mem::size_of::<usize>()),
        })?;
        let mut overlapping = false;
        crate::kernels::for_each_strided(
            t.shape(),
            [t.strides()],
            [t.layout().offset()],
            0,
            n,
            |i, [p]| overlapping |= owner.insert(p, i).is_some(),
        );
        let mut positions = crate::kernels::try_with_capacity(layout.numel())?;
        let mut outside = false;
        crate::kernels::for_each_strided(
            layout.shape(),
            [layout.strides()],
            [layout.offset()],
            0,
            layout.numel(),
            |_, [p]| match owner.get(&p) {
                Some(&i) => positions.push(i),
                None => outside = true,
            },
        );
        if overlapping || outside {
            return Err(Error::NotImplemented(
                "rustgrad: as_strided of a tensor that requires grad must read only storage elements its input views exactly once".into(),
            ));
        }
        let map = IndexMap::new(self.shape(), layout.shape().into(), positions)?;
        let name = match in_place {
            false => Taken::AsStrided,
            true => Taken::AsStridedInPlace,
        };
        drop(t);
        Ok((result, Rule::Take { name, map }.into()))
    }

    /// A copy of `self` with the 0-d `value` written at `index` along `dim`.
    pub fn scatter_value(&self, dim: i64, index: &Tensor, value: &Variable) -> Result<Variable> {
        let d = shape::wrap_dim(dim, self.dim())?;
        index_values(index, "scatter")?;
        check_scatter_shapes("scatter", &self.shape(), d, index.shape(), None)?;
        let map = gather_map(&self.shape(), d, index, "scatter")?;
        let mask = touched_mask(&map)?;
        let v = Variable::from_tensor(value.tensor().to_dtype(self.dtype())?);
        self.fill_mask(&mask, &v, Scattered::ScatterValue)
    }

    /// `self` with `alpha * source` added at `index` (0-d or 1-d) along `dim`.
    pub fn index_add(&self, dim: i64, index: &Tensor, source: &Variable) -> Result<Variable> {
        let d = shape::wrap_dim(dim, self.dim())?;
        if index.dim() > 1 {
            return Err(Error::Index(
                "index_add_(): Index is supposed to be a vector".into(),
            ));
        }
        let values = index_values(index, "index_add_")?;
        if source.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(format!(
                "index_add_(): self ({}) and source ({}) must have the same scalar type",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        let this = at_least_1d(&self.shape());
        let sshape = at_least_1d(&source.shape());
        if sshape.len() == this.len() && sshape[d] != values.len() {
            return Err(Error::InvalidArgument(format!(
                "index_add_(): Number of indices ({}) should be equal to source.size(dim): ({}), for dim: {d}",
                values.len(),
                sshape[d]
            )));
        }
        let mut expected = this.clone();
        expected[d] = values.len();
        if sshape != expected {
            return Err(Error::InvalidArgument(format!(
                "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {:?} source.shape = {:?}",
                self.shape().as_slice(),
                source.shape().as_slice()
            )));
        }
        let size = this[d];
        let table = values
            .iter()
            .map(|&v| {
                let w = if v < 0 { v + size as i64 } else { v };
                if w < 0 || w >= size as i64 {
                    Err(Error::InvalidArgument(format!(
                        "index {v} is out of bounds for dimension {d} with size {size}"
                    )))
                } else {
                    Ok(w as usize)
                }
            })
            .collect::<Result<Vec<usize>>>()?;
        let map = along_dim_map(&this, d, table, (&self.shape(), &source.shape()))?;
        self.scatter_map(source, map, None, true, Scattered::IndexAdd)
    }

    /// `self` with the 0-d `value` at `index` (0-d or 1-d) along `dim`.
    pub fn index_fill(&self, dim: i64, index: &Tensor, value: &Variable) -> Result<Variable> {
        if index.dtype() == DType::I32 {
            // PyTorch's index_fill alone refuses int32 among the index_* ops.
            return Err(Error::Index(
                "index_fill_(): Expected dtype int64 for index.".into(),
            ));
        }
        let d = shape::wrap_dim(dim, self.dim())?;
        let map = select_map(&self.shape(), d, index, "index_fill_")?;
        let mask = touched_mask(&map)?;
        let name = if value.requires_grad() {
            Scattered::IndexFillTensor
        } else {
            Scattered::IndexFill
        };
        self.fill_mask(&mask, value, name)
    }

    /// `self` with the 0-d `value` where the bool `mask` (broadcast to `self`) is true.
    pub fn masked_fill(&self, mask: &Tensor, value: &Variable) -> Result<Variable> {
        bool_mask(mask, "masked_fill_")?;
        let name = if value.requires_grad() {
            Scattered::MaskedFillTensor
        } else {
            Scattered::MaskedFill
        };
        self.fill_mask(mask, value, name)
    }

    /// The elements where the bool `mask` is true (both broadcast), as a 1-d tensor.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Variable> {
        if mask.dtype() != DType::Bool {
            return Err(Error::InvalidArgument(
                "masked_select: expected BoolTensor for mask".into(),
            ));
        }
        let shape = shape::broadcast_shapes(&self.shape(), mask.shape())?;
        let x = if self.shape() == shape {
            self.clone()
        } else {
            self.expand(&super::ints(&shape))?
        };
        let m: Vec<bool> = mask.broadcast_to(&shape)?.try_to_vec()?;
        let positions: Vec<usize> = (0..m.len()).filter(|&i| m[i]).collect();
        let map = IndexMap::new(shape.clone(), smallvec![positions.len()], positions)?;
        x.take_map(map, Taken::MaskedSelect)
    }

    /// The elements at flat `index` positions (negative count from the end), in
    /// `index`'s shape.
    pub fn take(&self, index: &Tensor) -> Result<Variable> {
        if index.dtype() != DType::I64 {
            return Err(Error::InvalidArgument(format!(
                "take(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            )));
        }
        let values = index_values(index, "take")?;
        let n = self.numel();
        let positions = values
            .iter()
            .map(|&v| {
                let w = if v < 0 { v + n as i64 } else { v };
                if w < 0 || w >= n as i64 {
                    Err(Error::Index(format!(
                        "out of range: tried to access index {v} on a tensor of {n} elements."
                    )))
                } else {
                    Ok(w as usize)
                }
            })
            .collect::<Result<Vec<usize>>>()?;
        let map = IndexMap::new(self.shape(), index.shape().into(), positions)?;
        self.take_map(map, Taken::Take)
    }

    /// PyTorch's `aten::index`: `indices[k]` (int64, or bool masks that cover as many
    /// dims as they have) indexes dim `k`; `None` keeps it. The indexed dims are
    /// replaced by the broadcast index shape, in place when they are adjacent, first
    /// otherwise.
    pub fn index(&self, indices: &[Option<Tensor>]) -> Result<Variable> {
        let map = self.advanced_map(indices)?;
        self.take_map(map, Taken::Index)
    }

    /// `self` with the slices of `source` along `dim` copied to the places `index`
    /// (0-d or 1-d int64) names (PyTorch's `index_copy`; a repeated index keeps the
    /// last slice). Gradients: `self` gets `grad` with the copied slices zeroed,
    /// `source` the slices of `grad` at `index` (IndexCopyBackward0).
    pub fn index_copy(&self, dim: i64, index: &Tensor, source: &Variable) -> Result<Variable> {
        let map = self.index_copy_map(dim, index, source)?;
        self.scatter_map(source, map, None, false, Scattered::IndexCopy)
    }

    /// [`Variable::index_copy`] in place.
    #[track_caller]
    pub fn index_copy_(&self, dim: i64, index: &Tensor, source: &Variable) -> Result<()> {
        let map = self.index_copy_map(dim, index, source)?;
        self.in_place(Some(source), WriteSite::Rust(Location::caller()), |s| {
            s.scatter_map(source, map, None, false, Scattered::IndexCopy)
        })
    }

    /// The positions in `self` of each element of `source` for `index_copy`, with
    /// PyTorch's checks (all before any memory is touched).
    fn index_copy_map(&self, dim: i64, index: &Tensor, source: &Variable) -> Result<Arc<IndexMap>> {
        let d = shape::wrap_dim(dim, self.dim())?;
        if index.dtype() != DType::I64 {
            return Err(Error::InvalidArgument(format!(
                "index_copy_(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            )));
        }
        if index.dim() > 1 {
            return Err(Error::Index(format!(
                "index_copy_(): Index should have dimension 1 or 0 (got {})",
                index.dim()
            )));
        }
        if source.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(format!(
                "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        let values = index.try_to_vec::<i64>()?;
        let this = at_least_1d(&self.shape());
        let sshape = at_least_1d(&source.shape());
        let slice_matches =
            sshape.len() == this.len() && (0..this.len()).all(|k| k == d || this[k] == sshape[k]);
        if !slice_matches {
            let k = (0..this.len().min(sshape.len()))
                .find(|&k| k != d && this[k] != sshape[k])
                .unwrap_or(d);
            return Err(Error::InvalidArgument(format!(
                "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: {} at dimension {k} and source slice shape: {} at dimension {k}.",
                this.get(k).copied().unwrap_or(0),
                sshape.get(k).copied().unwrap_or(0)
            )));
        }
        if sshape[d] != values.len() {
            return Err(Error::Index(format!(
                "index_copy_(): Number of indices ({}) should be equal to source.size(dim) ({})",
                values.len(),
                sshape[d]
            )));
        }
        let size = this[d];
        let table = values
            .iter()
            .map(|&v| {
                // PyTorch's index_copy does not wrap negative indices.
                if v < 0 || v >= size as i64 {
                    Err(Error::Index(format!(
                        "index_copy_(): index {v} is out of bounds for dimension {d} with size {size}"
                    )))
                } else {
                    Ok(v as usize)
                }
            })
            .collect::<Result<Vec<usize>>>()?;
        along_dim_map(&this, d, table, (&self.shape(), &source.shape()))
    }

    /// `self` with the elements where the bool `mask` (broadcast to `self`) is true
    /// replaced, in row-major order, by the first elements of `source` (PyTorch's
    /// `masked_scatter`). Gradients: `self` gets `grad` where the mask is false,
    /// `source` the masked elements of `grad` in its first places and zeros after
    /// (MaskedScatterBackward0).
    pub fn masked_scatter(&self, mask: &Tensor, source: &Variable) -> Result<Variable> {
        let (map, src_map) = self.masked_scatter_maps(mask, source)?;
        self.scatter_map(source, map, Some(src_map), false, Scattered::MaskedScatter)
    }

    /// [`Variable::masked_scatter`] in place.
    #[track_caller]
    pub fn masked_scatter_(&self, mask: &Tensor, source: &Variable) -> Result<()> {
        let (map, src_map) = self.masked_scatter_maps(mask, source)?;
        self.in_place(Some(source), WriteSite::Rust(Location::caller()), |s| {
            s.scatter_map(source, map, Some(src_map), false, Scattered::MaskedScatter)
        })
    }

    fn masked_scatter_maps(
        &self,
        mask: &Tensor,
        source: &Variable,
    ) -> Result<(Arc<IndexMap>, Arc<IndexMap>)> {
        bool_mask(mask, "masked_scatter_")?;
        if source.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(format!(
                "masked_scatter: expected self and source to have same dtypes but got{} and {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        let shape = self.shape();
        let m: Vec<bool> = mask.broadcast_to(&shape)?.try_to_vec()?;
        let positions: Vec<usize> = (0..m.len()).filter(|&i| m[i]).collect();
        let k = positions.len();
        if source.numel() < k {
            return Err(Error::InvalidArgument(
                "Number of elements of source < number of ones in mask".into(),
            ));
        }
        let map = IndexMap::new(shape, smallvec![k], positions)?;
        let src_map = IndexMap::new(source.shape(), smallvec![k], (0..k).collect())?;
        Ok((map, src_map))
    }

    /// `self` with `source`'s elements written (`accumulate`: added) at the flat
    /// positions `index` (negative count from the end), PyTorch's `put`. Gradients:
    /// `self` gets `grad` (with the written places zeroed unless accumulating),
    /// `source` `grad.take(index)` (PutBackward0).
    pub fn put(&self, index: &Tensor, source: &Variable, accumulate: bool) -> Result<Variable> {
        let map = self.put_positions(index, source)?;
        self.scatter_map(source, map, None, accumulate, Scattered::Put)
    }

    /// [`Variable::put`] in place (PyTorch's `put_`).
    #[track_caller]
    pub fn put_(&self, index: &Tensor, source: &Variable, accumulate: bool) -> Result<()> {
        let map = self.put_positions(index, source)?;
        self.in_place(Some(source), WriteSite::Rust(Location::caller()), |s| {
            s.scatter_map(source, map, None, accumulate, Scattered::Put)
        })
    }

    fn put_positions(&self, index: &Tensor, source: &Variable) -> Result<Arc<IndexMap>> {
        if index.dtype() != DType::I64 {
            return Err(Error::InvalidArgument(format!(
                "put_(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            )));
        }
        if source.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(format!(
                "put_(): self and source expected to have the same dtype, but got self.dtype = {} and source.dtype = {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        if source.numel() != index.numel() {
            return Err(Error::Index(format!(
                "put_(): Expected source and index to have the same number of elements, but got source.numel() = {}, index.numel() = {}",
                source.numel(),
                index.numel()
            )));
        }
        let n = self.numel();
        let positions = index
            .try_to_vec::<i64>()?
            .into_iter()
            .map(|v| {
                let w = if v < 0 { v + n as i64 } else { v };
                if w < 0 || w >= n as i64 {
                    Err(Error::Index(format!(
                        "out of range: tried to access index {v} on a tensor of {n} elements."
                    )))
                } else {
                    Ok(w as usize)
                }
            })
            .collect::<Result<Vec<usize>>>()?;
        IndexMap::new(self.shape(), source.shape(), positions)
    }

    /// Fills the main diagonal (all indices equal) with `value`, in place (PyTorch's
    /// `fill_diagonal_`): as PyTorch, a strided view of the diagonal is filled, so the
    /// write is recorded as CopySlices. A 2-d tensor taller than wide restarts the
    /// diagonal every `cols + 1` rows when `wrap` is true.
    #[track_caller]
    pub fn fill_diagonal_(&self, value: Scalar, wrap: bool) -> Result<()> {
        let shape = self.shape();
        if shape.len() < 2 {
            return Err(Error::InvalidArgument(
                "dimensions must larger than 1".into(),
            ));
        }
        if shape.len() > 2 && shape.iter().any(|&n| n != shape[0]) {
            return Err(Error::InvalidArgument(
                "all dimensions of input must be of equal length".into(),
            ));
        }
        let t = self.tensor();
        let stride: usize = t.strides().iter().sum();
        let offset = t.layout().offset();
        let mut runs = vec![(shape.iter().copied().min().unwrap_or(0), offset)];
        if wrap && shape.len() == 2 && shape[0] > shape[1] + 1 {
            let (rows, cols) = (shape[0], shape[1]);
            let mut row = cols + 1;
            while row < rows {
                runs.push(((rows - row).min(cols), offset + row * t.strides()[0]));
                row += cols + 1;
            }
        }
        for (size, start) in runs {
            let diagonal =
                self.as_strided_view(&[size as i64], &[stride as i64], Some(start as i64))?;
            diagonal.fill_scalar_(value)?;
        }
        Ok(())
    }

    /// `self[indices] = values` (`accumulate`: `+=`), written in place (PyTorch's
    /// `index_put_`).
    pub fn index_put_(
        &self,
        indices: &[Option<Tensor>],
        values: &Variable,
        accumulate: bool,
    ) -> Result<()> {
        let map = self.advanced_map(indices)?;
        let values = if values.dtype() == self.dtype() {
            values.clone()
        } else {
            values.to_dtype(self.dtype())?
        };
        let values = values.expand(&super::ints(&map.out)).map_err(|_| {
            Error::InvalidArgument(format!(
                "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}",
                values.shape().as_slice(),
                map.out.as_slice()
            ))
        })?;
        self.in_place(Some(&values), WriteSite::Rust(Location::caller()), |s| {
            s.scatter_map(&values, map, None, accumulate, Scattered::IndexPut)
        })
    }

    fn advanced_map(&self, indices: &[Option<Tensor>]) -> Result<Arc<IndexMap>> {
        let shape = self.shape();
        // Bool masks become one int64 index per dim they cover.
        let mut per_dim: Vec<Option<Vec<i64>>> = Vec::new();
        let mut index_shapes: Vec<Dims> = Vec::new();
        let mut dims_of: Vec<usize> = Vec::new();
        for idx in indices {
            let d = per_dim.len();
            match idx {
                None => per_dim.push(None),
                Some(t) if t.dtype() == DType::Bool => {
                    let k = t.dim();
                    for j in 0..k {
                        if d + j >= shape.len() || t.shape()[j] != shape[d + j] {
                            return Err(Error::Index(format!(
                                "The shape of the mask {:?} at index {j} does not match the shape of the indexed tensor {:?} at index {}",
                                t.shape(),
                                shape.as_slice(),
                                d + j
                            )));
                        }
                    }
                    let m: Vec<bool> = t.try_to_vec()?;
                    let strides = crate::layout::contiguous_strides(t.shape());
                    let hits: Vec<usize> = (0..m.len()).filter(|&i| m[i]).collect();
                    for j in 0..k {
                        let col = hits
                            .iter()
                            .map(|&h| ((h / strides[j]) % t.shape()[j]) as i64)
                            .collect();
                        per_dim.push(Some(col));
                        index_shapes.push(smallvec![hits.len()]);
                        dims_of.push(d + j);
                    }
                    if k == 0 {
                        return Err(Error::NotImplemented(
                            "rustgrad: a 0-d bool index inside aten::index".into(),
                        ));
                    }
                }
                Some(t) if matches!(t.dtype(), DType::I64 | DType::I32) => {
                    per_dim.push(Some(index_values(t, "index")?));
                    index_shapes.push(t.shape().into());
                    dims_of.push(d);
                }
                Some(_) => {
                    return Err(Error::Index(
                        "tensors used as indices must be long, int, byte or bool tensors".into(),
                    ))
                }
            }
        }
        if per_dim.len() > shape.len() {
            return Err(Error::Index(format!(
                "too many indices for tensor of dimension {}",
                shape.len()
            )));
        }
        per_dim.resize(shape.len(), None);
        let mut bshape: Dims = Dims::new();
        for s in &index_shapes {
            bshape = shape::broadcast_shapes(&bshape, s).map_err(|_| {
                Error::Index(format!(
                    "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                    index_shapes
                        .iter()
                        .map(|s| format!("{:?}", s.as_slice()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        }
        let adjacent = dims_of.windows(2).all(|w| w[1] == w[0] + 1);
        let first = dims_of.first().copied().unwrap_or(0);
        let rest: Vec<usize> = (0..shape.len()).filter(|d| per_dim[*d].is_none()).collect();
        // The output's dims: (Some(d)) a kept input dim, (None) the broadcast block.
        let mut layout_dims: Vec<Option<usize>> = Vec::new();
        if adjacent {
            layout_dims.extend(rest.iter().filter(|&&d| d < first).map(|&d| Some(d)));
            layout_dims.push(None);
            layout_dims.extend(rest.iter().filter(|&&d| d > first).map(|&d| Some(d)));
        } else {
            layout_dims.push(None);
            layout_dims.extend(rest.iter().map(|&d| Some(d)));
        }
        let mut out: Dims = Dims::new();
        for ld in &layout_dims {
            match ld {
                Some(d) => out.push(shape[*d]),
                None => out.extend(bshape.iter().copied()),
            }
        }
        // Broadcast each index to `bshape` and check it.
        let bn = shape::checked_numel(&bshape)?;
        let mut wrapped: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut k = 0;
        for (d, values) in per_dim.iter().enumerate() {
            let Some(values) = values else { continue };
            let ishape = &index_shapes[k];
            k += 1;
            let t = Tensor::from_vec(values.clone(), ishape)?.broadcast_to(&bshape)?;
            let size = shape[d];
            let w = t
                .try_to_vec::<i64>()?
                .into_iter()
                .map(|v| {
                    let w = if v < 0 { v + size as i64 } else { v };
                    if w < 0 || w >= size as i64 {
                        Err(Error::IndexOutOfRange {
                            index: v,
                            dim: d,
                            size,
                        })
                    } else {
                        Ok(w as usize)
                    }
                })
                .collect::<Result<Vec<usize>>>()?;
            debug_assert_eq!(w.len(), bn);
            wrapped.push((d, w));
        }
        let strides = crate::layout::contiguous_strides(&shape);
        crate::tensor::check_allocation(shape::checked_numel(&out)?, DType::I64)?;
        let mut positions = Vec::new();
        let nb = bshape.len();
        for_each_coord(&out, |coord| {
            let mut p = 0;
            let mut c = 0;
            let mut b = 0usize;
            for ld in &layout_dims {
                match ld {
                    Some(d) => {
                        p += coord[c] * strides[*d];
                        c += 1;
                    }
                    None => {
                        for j in 0..nb {
                            b = b * bshape[j] + coord[c + j];
                        }
                        c += nb;
                    }
                }
            }
            for (d, w) in &wrapped {
                p += w[b] * strides[*d];
            }
            positions.push(p);
            Ok(())
        })?;
        IndexMap::new(shape, out, positions)
    }

    /// Runs an out-of-place op in place (`scatter_`, `masked_fill_`, `tril_`, ...):
    /// `f(self)` is written into `self` with the autograd semantics of Note [In-place
    /// ops]; `other` is the operand that may carry history into the result.
    #[track_caller]
    pub fn in_place_with(
        &self,
        other: Option<&Variable>,
        f: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<()> {
        self.in_place(other, WriteSite::Rust(Location::caller()), f)
    }

    /// The coordinates of the nonzero (true) elements, one row each (`[n, ndim]`).
    pub fn nonzero(&self) -> Result<Variable> {
        let flags: Vec<bool> = self.tensor().try_to_vec()?;
        let shape = self.shape();
        let strides = crate::layout::contiguous_strides(&shape);
        let mut out: Vec<i64> = Vec::new();
        let mut n = 0;
        for (i, &f) in flags.iter().enumerate() {
            if f {
                n += 1;
                for d in 0..shape.len() {
                    out.push(((i / strides[d]) % shape[d]) as i64);
                }
            }
        }
        Ok(Variable::from_tensor(Tensor::from_vec(
            out,
            &[n, shape.len()],
        )?))
    }
}

// ----- scatter_reduce -----------------------------------------------------------------

/// The reductions of `scatter_reduce` (PyTorch's `reduce=` strings).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ScatterReduction {
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

impl ScatterReduction {
    /// PyTorch's parse of `reduce=`; it also takes the legacy spellings `max` / `min`.
    fn parse(reduce: &str) -> Result<ScatterReduction> {
        Ok(match reduce {
            "sum" => ScatterReduction::Sum,
            "prod" => ScatterReduction::Prod,
            "mean" => ScatterReduction::Mean,
            "amax" | "max" => ScatterReduction::Amax,
            "amin" | "min" => ScatterReduction::Amin,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
                )))
            }
        })
    }
}

/// What the backward of `scatter_reduce` needs besides `self` and `src`.
#[derive(Clone, Debug)]
pub(crate) struct ScatterReduceInfo {
    /// Positions in `self` of each element of the index.
    map: Arc<IndexMap>,
    /// Where the reduced values come from in `src` when it is larger than the index.
    src_map: Option<Arc<IndexMap>>,
    dim: usize,
    /// The index as int64 (for the differentiable `gather`s of the backward).
    index: Tensor,
    reduce: ScatterReduction,
    include_self: bool,
}

/// The forward kernel of `scatter_reduce`: `base` with `src` (of the index's shape)
/// reduced into `map`'s positions. Integer means round down, as PyTorch's
/// `div_(count, rounding_mode="floor")`; a NaN wins amax / amin, as PyTorch's.
fn scatter_reduce_tensor(
    base: &Tensor,
    src: &Tensor,
    map: &IndexMap,
    reduce: ScatterReduction,
    include_self: bool,
) -> Result<Tensor> {
    fn go<T: crate::dtype::Num>(
        base: &Tensor,
        src: &Tensor,
        map: &IndexMap,
        reduce: ScatterReduction,
        include_self: bool,
    ) -> Result<Tensor> {
        let mut d: Vec<T> = base.try_to_vec()?;
        let s: Vec<T> = src.try_to_vec()?;
        let mut count: Vec<u32> = kernels::try_vec(d.len(), 0)?;
        for (&p, &v) in map.positions.iter().zip(&s) {
            let (Some(slot), Some(c)) = (d.get_mut(p), count.get_mut(p)) else {
                return Err(Error::InvalidArgument(
                    "rustgrad internal error: scatter_reduce position outside self".into(),
                ));
            };
            if *c == 0 && !include_self {
                *slot = v;
            } else {
                *slot = match reduce {
                    ScatterReduction::Sum | ScatterReduction::Mean => slot.add_w(v),
                    ScatterReduction::Prod => slot.mul_w(v),
                    #[allow(clippy::eq_op)]
                    ScatterReduction::Amax if v != v || v > *slot => v,
                    #[allow(clippy::eq_op)]
                    ScatterReduction::Amin if v != v || v < *slot => v,
                    ScatterReduction::Amax | ScatterReduction::Amin => *slot,
                };
            }
            *c += 1;
        }
        if reduce == ScatterReduction::Mean {
            let float = T::DTYPE.is_floating_point();
            for (slot, &c) in d.iter_mut().zip(&count) {
                if c == 0 {
                    continue;
                }
                let n = T::from_i64(i64::from(c) + i64::from(include_self));
                let q = slot.div(n);
                // Floor division: truncation rounds negative quotients up.
                *slot = if !float && *slot < T::ZERO && q.mul_w(n) != *slot {
                    q.sub_w(T::ONE)
                } else {
                    q
                };
            }
        }
        Tensor::from_vec(d, &map.src)
    }
    if base.shape() != map.src.as_slice() || src.shape() != map.out.as_slice() {
        return Err(Error::InvalidArgument(
            "rustgrad internal error: index map of another shape".into(),
        ));
    }
    match base.dtype() {
        DType::F32 => go::<f32>(base, src, map, reduce, include_self),
        DType::F64 => go::<f64>(base, src, map, reduce, include_self),
        DType::I64 => go::<i64>(base, src, map, reduce, include_self),
        DType::I32 => go::<i32>(base, src, map, reduce, include_self),
        DType::I16 => go::<i16>(base, src, map, reduce, include_self),
        DType::I8 => go::<i8>(base, src, map, reduce, include_self),
        DType::U8 => go::<u8>(base, src, map, reduce, include_self),
        // Reduced in float32 and rounded back once (Note [Storage dtypes]).
        DType::F16 | DType::BF16 => {
            let src = src.to_dtype(DType::F32)?;
            base.via_f32(|b| go::<f32>(b, &src, map, reduce, include_self))
        }
        DType::Bool => Err(Error::unsupported_dtype("scatter_reduce", DType::Bool)),
    }
}

impl Variable {
    /// Reduces the elements of `src` into a copy of `self` at `index` along `dim`
    /// (PyTorch's `scatter_reduce`): `reduce` is one of `sum`, `prod`, `mean`, `amax`,
    /// `amin`; with `include_self` false the elements of `self` that receive a value
    /// take no part in the reduction. All of PyTorch's checks run before any memory is
    /// touched. Gradients follow PyTorch's `scatter_reduce_backward`
    /// (ScatterReduceBackward0).
    pub fn scatter_reduce(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Variable,
        reduce: &str,
        include_self: bool,
    ) -> Result<Variable> {
        let reduce = ScatterReduction::parse(reduce)?;
        let info = self.scatter_reduce_info(dim, index, src, reduce, include_self)?;
        self.scatter_reduce_with(src, Arc::new(info))
    }

    /// [`Variable::scatter_reduce`] in place.
    #[track_caller]
    pub fn scatter_reduce_(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Variable,
        reduce: &str,
        include_self: bool,
    ) -> Result<()> {
        let reduce = ScatterReduction::parse(reduce)?;
        let info = Arc::new(self.scatter_reduce_info(dim, index, src, reduce, include_self)?);
        self.in_place(Some(src), WriteSite::Rust(Location::caller()), |s| {
            s.scatter_reduce_with(src, info)
        })
    }

    /// PyTorch's checks of `scatter_reduce` and the positions it reduces into.
    fn scatter_reduce_info(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Variable,
        reduce: ScatterReduction,
        include_self: bool,
    ) -> Result<ScatterReduceInfo> {
        let d = shape::wrap_dim(dim, self.dim())?;
        // PyTorch takes int32 indices here (unlike `scatter`).
        let index = if index.dtype() == DType::I32 {
            index.to_dtype(DType::I64)?
        } else {
            index.clone()
        };
        index_values(&index, "scatter")?;
        if src.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(
                "scatter(): Expected self.dtype to be equal to src.dtype".into(),
            ));
        }
        let (this, sshape) = (self.shape(), src.shape());
        check_scatter_shapes("scatter", &this, d, index.shape(), Some(&sshape))?;
        let map = gather_map(&this, d, &index, "scatter")?;
        let src_map = if sshape.as_slice() == index.shape() {
            None
        } else {
            let strides = crate::layout::contiguous_strides(&at_least_1d(&sshape));
            let mut positions = Vec::with_capacity(map.positions.len());
            for_each_coord(&at_least_1d(index.shape()), |c| {
                positions.push(c.iter().zip(&strides).map(|(a, b)| a * b).sum());
                Ok(())
            })?;
            Some(IndexMap::new(sshape, index.shape().into(), positions)?)
        };
        Ok(ScatterReduceInfo {
            map,
            src_map,
            dim: d,
            index,
            reduce,
            include_self,
        })
    }

    /// The checked `scatter_reduce`, recorded.
    fn scatter_reduce_with(
        &self,
        src: &Variable,
        info: Arc<ScatterReduceInfo>,
    ) -> Result<Variable> {
        let part = match &info.src_map {
            Some(m) => take_tensor(&src.tensor(), m)?,
            None => src.tensor().clone(),
        };
        let result = scatter_reduce_tensor(
            &self.tensor(),
            &part,
            &info.map,
            info.reduce,
            info.include_self,
        )?;
        Ok(Variable::record(result, &[self, src], |_, _| {
            (
                Rule::ScatterReduce(Box::new((*info).clone())),
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::input(src))
                ],
            )
        }))
    }
}

/// A constant (non-differentiable) variable.
fn constant(t: Tensor) -> Variable {
    Variable::from_tensor(t)
}

/// How many elements of `src` (where `flags`, of the index's shape, is true) land on
/// each element of a tensor of shape `map.src`, plus `base` (bool, of that shape) when
/// given; as `dtype`.
fn count_at(map: &IndexMap, flags: &Tensor, base: Option<&Tensor>, dtype: DType) -> Result<Tensor> {
    let mut n: Vec<f64> = match base {
        Some(b) => b.to_dtype(DType::F64)?.try_to_vec()?,
        None => kernels::try_vec(shape::checked_numel(&map.src)?, 0.0)?,
    };
    let f: Vec<bool> = flags.try_to_vec()?;
    for (&p, &on) in map.positions.iter().zip(&f) {
        if on {
            if let Some(slot) = n.get_mut(p) {
                *slot += 1.0;
            }
        }
    }
    Tensor::from_vec(n, &map.src)?.to_dtype(dtype)
}

/// PyTorch's `scatter_reduce_backward` (derivatives.yaml), written with differentiable
/// ops so that it serves double backward; masks and counts are constants.
fn scatter_reduce_backward(
    info: &ScatterReduceInfo,
    this: &Variable,
    src: &Variable,
    g: &Variable,
    needs: &[bool],
) -> Result<Grads> {
    let (dim, index, map) = (info.dim as i64, &info.index, &info.map);
    let src_part = match &info.src_map {
        Some(m) => src.take_map(m.clone(), Taken::Gather)?,
        None => src.clone(),
    };
    let dtype = g.dtype();
    let all = Tensor::full(index.shape(), 1.0, DType::Bool)?;
    let reduce_again = |s: &Variable, r: &Variable| {
        let info = ScatterReduceInfo {
            src_map: None,
            ..info.clone()
        };
        s.scatter_reduce_with(r, Arc::new(info))
    };
    let (grad_self, grad_src) = match info.reduce {
        ScatterReduction::Sum => (g.clone(), g.gather(dim, index)?),
        ScatterReduction::Mean => {
            let base = Tensor::full(
                &map.src,
                if info.include_self { 1.0 } else { 0.0 },
                DType::Bool,
            )?;
            let n = count_at(map, &all, Some(&base), dtype)?;
            let one = Tensor::scalar(1.0, dtype);
            let n = Tensor::where_cond(
                &n.compare(&Tensor::scalar(0.0, dtype), CmpOp::Eq)?,
                &one,
                &n,
            )?;
            let n_src = take_tensor(&n, map)?;
            (
                g.div(&constant(n))?,
                g.gather(dim, index)?.div(&constant(n_src))?,
            )
        }
        ScatterReduction::Amax | ScatterReduction::Amin => {
            let result = scatter_reduce_tensor(
                &this.tensor(),
                &src_part.tensor(),
                map,
                info.reduce,
                info.include_self,
            )?;
            let value = take_tensor(&result, map)?;
            let self_is = this.tensor().compare(&result, CmpOp::Eq)?;
            let src_is = src_part.tensor().compare(&value, CmpOp::Eq)?;
            // PyTorch counts `self` among the ties even when `include_self` is false.
            let n = count_at(map, &src_is, Some(&self_is), dtype)?;
            let share = g.div(&constant(n))?;
            let zero = zero_like(g);
            (
                Variable::where_cond(&self_is, &share, &zero)?,
                Variable::where_cond(&src_is, &share.gather(dim, index)?, &zero)?,
            )
        }
        ScatterReduction::Prod => {
            let zero_t = Tensor::scalar(0.0, dtype);
            let one = constant(Tensor::scalar(1.0, dtype));
            let self_zero = this.tensor().compare(&zero_t, CmpOp::Eq)?;
            let masked_self = this.masked_fill(&self_zero, &one)?;
            let masked_self_result = reduce_again(&masked_self, &src_part)?;
            let grad_self = g.mul(&masked_self_result)?.div(&masked_self)?;
            let src_zero = src_part.tensor().compare(&zero_t, CmpOp::Eq)?;
            let zeros_at = take_tensor(&count_at(map, &src_zero, None, DType::F64)?, map)?;
            let single = zeros_at.compare(&Tensor::scalar(1.0, DType::F64), CmpOp::Eq)?;
            let src_single_zero = Tensor::where_cond(&src_zero, &single, &src_zero)?;
            let masked_src = src_part.masked_fill(&src_single_zero, &one)?;
            let masked_src_result = reduce_again(this, &masked_src)?;
            let result = reduce_again(this, &src_part)?;
            let from_single = g.mul(&masked_src_result)?.gather(dim, index)?;
            let from_product = g
                .mul(&result)?
                .gather(dim, index)?
                .div(&src_part.masked_fill(&src_zero, &one)?)?;
            (
                grad_self,
                Variable::where_cond(&src_single_zero, &from_single, &from_product)?,
            )
        }
    };
    let grad_self = if !needs[0] {
        None
    } else if info.include_self {
        Some(grad_self)
    } else {
        let touched = touched_mask(map)?;
        Some(Variable::where_cond(&touched, &zero_like(g), &grad_self)?)
    };
    let grad_src = if needs.get(1).copied().unwrap_or(false) {
        Some(match &info.src_map {
            Some(m) => grad_src.put_map(m.clone())?,
            None => grad_src,
        })
    } else {
        None
    };
    Ok(smallvec![grad_self, grad_src])
}
