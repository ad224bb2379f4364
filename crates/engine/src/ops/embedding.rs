//! Embeddings: `embedding` (EmbeddingBackward0), `embedding_bag` (EmbeddingBagBackward0)
//! and `one_hot`. The forwards gather rows of the weight (per bag: a sum, mean or
//! maximum, accumulated in f64); the backwards scatter the gradient back with
//! `index_add`, a differentiable op, so double backward works. See Note [Functional
//! activations in Rust].

use super::{saved_at, Grads};
use crate::autograd::grad_mode::GradModeGuard;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::variable::{SavedTensor, Variable};
use smallvec::smallvec;

/// How `embedding_bag` reduces the rows of a bag.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BagMode {
    /// The (per-sample weighted) sum.
    Sum,
    /// The mean (an empty bag is zeros).
    Mean,
    /// The elementwise maximum (an empty bag is zeros).
    Max,
}

impl BagMode {
    /// Parses PyTorch's names `"sum"`, `"mean"`, `"max"`.
    pub fn from_name(name: &str) -> Result<BagMode> {
        match name {
            "sum" => Ok(BagMode::Sum),
            "mean" => Ok(BagMode::Mean),
            "max" => Ok(BagMode::Max),
            _ => Err(Error::InvalidArgument(
                "mode has to be one of sum, mean or max".into(),
            )),
        }
    }
}

/// The options of `embedding_bag` besides its tensors (PyTorch's defaults from
/// [`BagOptions::new`]).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct BagOptions {
    /// How a bag's rows are reduced.
    pub mode: BagMode,
    /// The last offset ends the last bag (instead of the input's end).
    pub include_last_offset: bool,
    /// Rows at this index are left out of their bag.
    pub padding_idx: Option<i64>,
    /// Renormalise the rows used to at most this `norm_type`-norm first, in place.
    pub max_norm: Option<f64>,
    /// The norm of `max_norm`.
    pub norm_type: f64,
    /// Divide each row's gradient by its index's frequency in the input (sum and mean).
    pub scale_grad_by_freq: bool,
}

impl BagOptions {
    /// `mode` with PyTorch's other defaults.
    pub fn new(mode: BagMode) -> BagOptions {
        BagOptions {
            mode,
            include_last_offset: false,
            padding_idx: None,
            max_norm: None,
            norm_type: 2.0,
            scale_grad_by_freq: false,
        }
    }
}

/// The backward rules of this family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `embedding`; nothing saved.
    Embedding(Box<EmbeddingGrad>),
    /// `embedding_bag`; saved `[weight or None, per_sample_weights or None]`.
    Bag(Box<BagGrad>),
}

/// What an embedding node keeps.
#[derive(Clone, Debug)]
pub(crate) struct EmbeddingGrad {
    /// The indices, flattened (int64).
    rows: Tensor,
    num_weights: usize,
    /// `(n, 1)`: false where the index is `padding_idx` (no gradient there).
    keep: Option<Tensor>,
    /// `(n, 1)`: one over the index's frequency (`scale_grad_by_freq`).
    freq: Option<Tensor>,
}

/// What an embedding-bag node keeps. For sum and mean, `entries` lists the indices that
/// take part (padding left out): their weight row, bag and position in the input.
#[derive(Clone, Debug)]
pub(crate) struct BagGrad {
    mode: BagMode,
    num_weights: usize,
    width: usize,
    /// The indices' count (the per-sample weights' length).
    count: usize,
    rows: Tensor,
    bags: Tensor,
    positions: Tensor,
    /// `(k, 1)`: the factor of each entry's weight gradient: one over the bag's size
    /// (mean), over the index's frequency (`scale_grad_by_freq`).
    weight_scale: Option<Tensor>,
    /// Max: the output positions `b * D + d` of non-empty bags and the weight positions
    /// `row * D + d` of their maxima.
    max_from: Tensor,
    max_to: Tensor,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Embedding(_) => "EmbeddingBackward0",
            Rule::Bag(_) => "EmbeddingBagBackward0",
        }
    }

    /// The gradients of the weight (and the per-sample weights) given `grad`.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        match self {
            Rule::Embedding(e) => {
                let width = grad.shape().last().copied().unwrap_or(0);
                let mut g = grad.reshape(&[-1, width as i64])?;
                if let Some(keep) = &e.keep {
                    g = Variable::where_cond(keep, &g, &super::zero_like(&g))?;
                }
                if let Some(freq) = &e.freq {
                    g = g.mul(&Variable::from_tensor(freq.clone()))?;
                }
                let zeros =
                    Variable::from_tensor(Tensor::zeros(&[e.num_weights, width], g.dtype())?);
                Ok(smallvec![Some(zeros.index_add(0, &e.rows, &g)?)])
            }
            Rule::Bag(b) => b.apply(saved, grad, needs),
        }
    }
}

impl BagGrad {
    fn apply(&self, saved: &[Option<Variable>], grad: &Variable, needs: &[bool]) -> Result<Grads> {
        let dtype = grad.dtype();
        if self.mode == BagMode::Max {
            let src = grad.reshape(&[-1])?.index_select(0, &self.max_from)?;
            let zeros =
                Variable::from_tensor(Tensor::zeros(&[self.num_weights * self.width], dtype)?);
            let g = zeros
                .index_add(0, &self.max_to, &src)?
                .reshape(&[self.num_weights as i64, self.width as i64])?;
            return Ok(smallvec![Some(g), None]);
        }
        let per_entry = grad.index_select(0, &self.bags)?;
        let psw = saved.get(1).and_then(Option::as_ref);
        let grad_weight = if needs.first().copied().unwrap_or(false) {
            let mut rows = match &self.weight_scale {
                Some(scale) => per_entry.mul(&Variable::from_tensor(scale.clone()))?,
                None => per_entry.clone(),
            };
            if let Some(p) = psw {
                rows = rows.mul(&p.index_select(0, &self.positions)?.unsqueeze(1)?)?;
            }
            let zeros =
                Variable::from_tensor(Tensor::zeros(&[self.num_weights, self.width], dtype)?);
            Some(zeros.index_add(0, &self.rows, &rows)?)
        } else {
            None
        };
        let grad_psw = if needs.get(1).copied().unwrap_or(false) {
            let weight = saved_at(saved, 0)?;
            let dots = per_entry
                .mul(&weight.index_select(0, &self.rows)?)?
                .sum_dims(&[1], false)?;
            let zeros = Variable::from_tensor(Tensor::zeros(&[self.count], dtype)?);
            Some(zeros.index_add(0, &self.positions, &dots)?)
        } else {
            None
        };
        Ok(smallvec![grad_weight, grad_psw])
    }
}

/// The indices as int64 values, with PyTorch's dtype error for `op`.
fn index_list(indices: &Tensor, op: &str) -> Result<Vec<i64>> {
    match indices.dtype() {
        DType::I64 | DType::I32 => indices.to_dtype(DType::I64)?.try_to_vec::<i64>(),
        other => Err(Error::InvalidArgument(format!(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for {op})",
            other.legacy_type_name()
        ))),
    }
}

/// PyTorch's `embedding_renorm_`: each row used by `rows` whose `norm_type`-norm
/// exceeds `max_norm` is scaled in place by `max_norm / (norm + 1e-7)`, unrecorded.
fn renorm_rows(weight: &Variable, rows: &[i64], max_norm: f64, norm_type: f64) -> Result<()> {
    let _no_grad = GradModeGuard::new(false);
    let mut unique = rows.to_vec();
    unique.sort_unstable();
    unique.dedup();
    for row in unique {
        let slice = weight.select(0, row)?;
        let norm = slice.vector_norm(norm_type, None, false)?.to_vec::<f64>()[0];
        if norm > max_norm {
            slice.mul_(&Variable::from_tensor(Tensor::scalar(
                max_norm / (norm + 1e-7),
                weight.dtype(),
            )))?;
        }
    }
    Ok(())
}

/// How often each index occurs (`scale_grad_by_freq`).
fn frequencies(rows: &[i64]) -> std::collections::HashMap<i64, usize> {
    let mut counts = std::collections::HashMap::new();
    for &r in rows {
        *counts.entry(r).or_insert(0usize) += 1;
    }
    counts
}

/// `padding_idx` wrapped into `[0, rows)`, with PyTorch's check.
fn wrap_padding(padding_idx: Option<i64>, rows: usize) -> Result<Option<i64>> {
    let rows = rows as i64;
    match padding_idx {
        Some(p) if p >= rows || p < -rows => Err(Error::InvalidArgument(
            "Padding_idx must be within num_embeddings".into(),
        )),
        Some(p) if p < 0 => Ok(Some(p + rows)),
        other => Ok(other),
    }
}

impl Variable {
    /// `embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)`
    /// with `self` the `(num_embeddings, D)` weight: the rows at `indices`, shape
    /// `indices.shape + (D,)`. The row at `padding_idx` gets no gradient; with
    /// `scale_grad_by_freq` each row's gradient is divided by its index's frequency;
    /// `max_norm` first renormalises the rows used, in place (PyTorch's
    /// `embedding_renorm_`).
    pub fn embedding(
        &self,
        indices: &Tensor,
        padding_idx: Option<i64>,
        max_norm: Option<f64>,
        norm_type: f64,
        scale_grad_by_freq: bool,
    ) -> Result<Variable> {
        if self.dim() != 2 {
            return Err(Error::InvalidArgument("'weight' must be 2-D".into()));
        }
        let (num_weights, width) = (self.shape()[0], self.shape()[1]);
        let padding_idx = wrap_padding(padding_idx, num_weights)?;
        let rows = index_list(indices, "embedding")?;
        if rows.iter().any(|&r| r < 0 || r >= num_weights as i64) {
            return Err(Error::Index("index out of range in self".into()));
        }
        if let Some(max_norm) = max_norm {
            renorm_rows(self, &rows, max_norm, norm_type)?;
        }
        let n = rows.len();
        let flat = Tensor::from_vec(rows.clone(), &[n])?;
        let mut out_shape: Vec<i64> = indices.shape().iter().map(|&s| s as i64).collect();
        out_shape.push(width as i64);
        let out = {
            let _no_grad = GradModeGuard::new(false);
            self.index_select(0, &flat)?.reshape(&out_shape)?
        };
        let keep = match padding_idx {
            Some(p) => Some(Tensor::from_vec(
                rows.iter().map(|&r| r != p).collect::<Vec<bool>>(),
                &[n, 1],
            )?),
            None => None,
        };
        let freq = if scale_grad_by_freq {
            let counts = frequencies(&rows);
            let scale: Vec<f64> = rows.iter().map(|r| 1.0 / counts[r] as f64).collect();
            Some(Tensor::from_vec(scale, &[n, 1])?.to_dtype(self.dtype())?)
        } else {
            None
        };
        let rule = EmbeddingGrad {
            rows: flat,
            num_weights,
            keep,
            freq,
        };
        let result = out.tensor().clone();
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::Embedding(Box::new(rule)), smallvec![])
        }))
    }

    /// `embedding_bag(input, weight, offsets, ..., per_sample_weights, ...)` with `self`
    /// the `(num_embeddings, D)` weight: a 2-D `indices` is one bag per row; a 1-D
    /// `indices` is split into bags starting at `offsets` (with
    /// `include_last_offset`, the last offset ends the last bag). Each bag's rows (those
    /// at `padding_idx` left out) are summed (times `per_sample_weights`, `Sum` only),
    /// averaged or maximised; an empty bag is zeros. See [`BagOptions`].
    pub fn embedding_bag(
        &self,
        indices: &Tensor,
        offsets: Option<&Tensor>,
        per_sample_weights: Option<&Variable>,
        options: &BagOptions,
    ) -> Result<Variable> {
        let BagOptions {
            mode,
            include_last_offset,
            padding_idx,
            ..
        } = *options;
        if self.dim() != 2 {
            return Err(Error::InvalidArgument(format!(
                "weight has to be a 2D Tensor, but got Tensor of dimension {}",
                self.dim()
            )));
        }
        if !self.dtype().is_floating_point() {
            return Err(Error::InvalidArgument(format!(
                "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, Float, Double; but got {} instead (while checking arguments for embedding_bag)",
                self.dtype().legacy_type_name()
            )));
        }
        let (num_weights, width) = (self.shape()[0], self.shape()[1]);
        let padding_idx = wrap_padding(padding_idx, num_weights)?;
        let idx = index_list(indices, "embedding_bag")?;
        let n = idx.len();
        let bounds = bag_bounds(indices, offsets, include_last_offset, n)?;
        if let Some((i, bad)) = idx
            .iter()
            .enumerate()
            .find(|(_, &r)| r < 0 || r >= num_weights as i64)
        {
            return Err(Error::InvalidArgument(format!(
                "Index {i} of input takes value {bad} which is not in the valid range [0, {num_weights})"
            )));
        }
        if let Some(p) = per_sample_weights {
            if mode != BagMode::Sum {
                return Err(Error::NotImplemented(format!(
                    "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{}'). Please open a feature request on GitHub.",
                    match mode {
                        BagMode::Mean => "mean",
                        _ => "max",
                    }
                )));
            }
            if p.numel() != n || p.dim() > 2 {
                return Err(Error::InvalidArgument(format!(
                    "embedding_bag: If per_sample_weights ({:?}) is not None, then it must have the same shape as the input ({:?})",
                    p.shape().as_slice(),
                    indices.shape()
                )));
            }
            if p.dtype() != self.dtype() {
                return Err(Error::InvalidArgument(format!(
                    "expected scalar type {} but found {}",
                    self.dtype().scalar_type_name(),
                    p.dtype().scalar_type_name()
                )));
            }
        }
        if let Some(max_norm) = options.max_norm {
            renorm_rows(self, &idx, max_norm, options.norm_type)?;
        }
        let freq = options.scale_grad_by_freq.then(|| frequencies(&idx));
        let psw = match per_sample_weights {
            Some(p) => Some(p.tensor().to_dtype(DType::F64)?.try_to_vec::<f64>()?),
            None => None,
        };
        let w = self.tensor().to_dtype(DType::F64)?.try_to_vec::<f64>()?;
        let bags = bounds.len();
        let mut out = crate::kernels::try_vec(bags.saturating_mul(width), 0.0f64)?;
        let (mut rows, mut bag_of, mut positions, mut scale) = (vec![], vec![], vec![], vec![]);
        let (mut max_from, mut max_to) = (vec![], vec![]);
        for (b, &(start, end)) in bounds.iter().enumerate() {
            let members: Vec<usize> = (start..end)
                .filter(|&i| Some(idx[i]) != padding_idx)
                .collect();
            let acc = &mut out[b * width..(b + 1) * width];
            if mode == BagMode::Max {
                let mut arg = vec![-1i64; width];
                for &i in &members {
                    let row = &w[idx[i] as usize * width..(idx[i] as usize + 1) * width];
                    for d in 0..width {
                        if arg[d] < 0 || row[d] > acc[d] {
                            acc[d] = row[d];
                            arg[d] = idx[i];
                        }
                    }
                }
                for (d, &a) in arg.iter().enumerate() {
                    if a >= 0 {
                        max_from.push((b * width + d) as i64);
                        max_to.push(a * width as i64 + d as i64);
                    }
                }
                continue;
            }
            for &i in &members {
                let row = &w[idx[i] as usize * width..(idx[i] as usize + 1) * width];
                let factor = psw.as_ref().map_or(1.0, |p| p[i]);
                for (a, &v) in acc.iter_mut().zip(row) {
                    *a += factor * v;
                }
                rows.push(idx[i]);
                bag_of.push(b as i64);
                positions.push(i as i64);
                let mean = if mode == BagMode::Mean {
                    members.len() as f64
                } else {
                    1.0
                };
                let count = freq.as_ref().map_or(1.0, |f| f[&idx[i]] as f64);
                scale.push(1.0 / (mean * count));
            }
            if mode == BagMode::Mean && !members.is_empty() {
                let count = members.len() as f64;
                acc.iter_mut().for_each(|a| *a /= count);
            }
        }
        let dtype = self.dtype();
        let k = rows.len();
        let result = Tensor::from_vec(out, &[bags, width])?.to_dtype(dtype)?;
        let rule = BagGrad {
            mode,
            num_weights,
            width,
            count: n,
            rows: Tensor::from_vec(rows, &[k])?,
            bags: Tensor::from_vec(bag_of, &[k])?,
            positions: Tensor::from_vec(positions, &[k])?,
            weight_scale: (mode == BagMode::Mean || freq.is_some())
                .then(|| Tensor::from_vec(scale, &[k, 1]).and_then(|t| t.to_dtype(dtype)))
                .transpose()?,
            max_from: Tensor::from_vec(max_from.clone(), &[max_from.len()])?,
            max_to: Tensor::from_vec(max_to.clone(), &[max_to.len()])?,
        };
        let psw_flat = per_sample_weights.map(|p| p.reshape(&[-1])).transpose()?;
        let mut inputs = vec![self];
        if let Some(p) = &psw_flat {
            inputs.push(p);
        }
        Ok(Variable::record(result, &inputs, |needs, _| {
            let psw_needs = needs.get(1).copied().unwrap_or(false);
            (
                Rule::Bag(Box::new(rule)),
                smallvec![
                    psw_needs.then(|| SavedTensor::input(self)),
                    psw_flat.as_ref().map(SavedTensor::input),
                ],
            )
        }))
    }

    /// `one_hot(tensor, num_classes)` of int64 class indices: int64 one-hot vectors of
    /// shape `self.shape + (num_classes,)`; `num_classes = -1` means `max + 1`.
    pub fn one_hot(&self, num_classes: i64) -> Result<Variable> {
        if self.dtype() != DType::I64 {
            return Err(Error::InvalidArgument(
                "one_hot is only applicable to index tensor of type LongTensor.".into(),
            ));
        }
        let values = self.tensor().try_to_vec::<i64>()?;
        let mut shape = self.shape().to_vec();
        if values.is_empty() {
            if num_classes <= 0 {
                return Err(Error::InvalidArgument(
                    "Can not infer total number of classes from empty tensor.".into(),
                ));
            }
            shape.push(num_classes as usize);
            return Ok(Variable::from_tensor(Tensor::zeros(&shape, DType::I64)?));
        }
        let (min, max) = values
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        if min < 0 {
            return Err(Error::InvalidArgument(
                "Class values must be non-negative.".into(),
            ));
        }
        let classes = if num_classes == -1 {
            max.checked_add(1).ok_or_else(|| {
                Error::InvalidArgument("Class values must be smaller than num_classes.".into())
            })?
        } else if max >= num_classes {
            return Err(Error::InvalidArgument(
                "Class values must be smaller than num_classes.".into(),
            ));
        } else {
            num_classes
        };
        let classes = classes as usize;
        let total = crate::shape::checked_numel(&[values.len(), classes])?;
        crate::tensor::check_allocation(total, DType::I64)?;
        let mut out = vec![0i64; total];
        for (i, &v) in values.iter().enumerate() {
            out[i * classes + v as usize] = 1;
        }
        shape.push(classes);
        Ok(Variable::from_tensor(Tensor::from_vec(out, &shape)?))
    }
}

/// The `[start, end)` of each bag: the rows of a 2-D `indices`, or the runs that
/// `offsets` start (PyTorch's checks: offsets 1-D, starting at 0, within the input).
fn bag_bounds(
    indices: &Tensor,
    offsets: Option<&Tensor>,
    include_last_offset: bool,
    n: usize,
) -> Result<Vec<(usize, usize)>> {
    if indices.dim() == 2 {
        let (rows, len) = (indices.shape()[0], indices.shape()[1]);
        return Ok((0..rows).map(|r| (r * len, (r + 1) * len)).collect());
    }
    if indices.dim() != 1 {
        return Err(Error::InvalidArgument(format!(
            "input has to be 1D or 2D Tensor, but got Tensor of dimension {}",
            indices.dim()
        )));
    }
    let offsets = offsets.ok_or_else(|| {
        Error::InvalidArgument("offsets has to be a 1D Tensor but got None".into())
    })?;
    if offsets.dim() != 1 {
        return Err(Error::InvalidArgument(
            "offsets has to be a 1D Tensor".into(),
        ));
    }
    let mut starts = index_list(offsets, "embedding_bag")?;
    if let Some(&first) = starts.first() {
        if first != 0 {
            return Err(Error::InvalidArgument(format!(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {first}"
            )));
        }
    }
    if let Some(&last) = starts.last() {
        if last > n as i64 {
            return Err(Error::InvalidArgument(format!(
                "offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {last}"
            )));
        }
    }
    if starts.windows(2).any(|w| w[0] > w[1]) {
        return Err(Error::InvalidArgument(
            "embedding_bag: offsets must be non-decreasing".into(),
        ));
    }
    let mut ends: Vec<i64> = starts.iter().skip(1).copied().collect();
    if include_last_offset {
        starts.pop();
    } else {
        ends.push(n as i64);
    }
    Ok(starts
        .iter()
        .zip(&ends)
        .map(|(&s, &e)| (s as usize, e as usize))
        .collect())
}
