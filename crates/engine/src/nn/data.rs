//! A minimal batching iterator over in-memory tensors.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::random::default_generator;
use crate::tensor::Tensor;
use crate::variable::Variable;

/// Mini-batches of rows of equally long tensors (inputs and targets), optionally
/// shuffled once per epoch with the default generator (`torch.randperm`, as a
/// `DataLoader(shuffle=True)` draws its order), the last short batch kept or dropped.
///
/// ```
/// use rustgrad::nn::Batches;
/// use rustgrad::Tensor;
/// let x = Tensor::from_vec((0..10).map(|v| v as f32).collect(), &[5, 2])?;
/// let y = Tensor::from_vec(vec![0i64, 1, 0, 1, 0], &[5])?;
/// let sizes: Vec<usize> = Batches::new(vec![x, y], 2)?
///     .map(|b| b.map(|b| b[0].shape()[0]))
///     .collect::<rustgrad::Result<_>>()?;
/// assert_eq!(sizes, [2, 2, 1]);
/// # Ok::<(), rustgrad::Error>(())
/// ```
pub struct Batches {
    tensors: Vec<Tensor>,
    order: Vec<i64>,
    batch_size: usize,
    position: usize,
    drop_last: bool,
}

impl Batches {
    /// Batches of `batch_size` rows of `tensors` (dim 0 is the sample dim; every tensor
    /// must have as many rows), in order, the last short batch kept.
    pub fn new(tensors: Vec<Tensor>, batch_size: usize) -> Result<Batches> {
        if batch_size == 0 {
            return Err(Error::InvalidArgument(
                "batch_size should be a positive integer value, but got batch_size=0".into(),
            ));
        }
        let rows = match tensors.first() {
            Some(t) if t.shape().is_empty() => {
                return Err(Error::InvalidArgument(
                    "a batched tensor must have at least one dimension".into(),
                ))
            }
            Some(t) => t.shape()[0],
            None => 0,
        };
        if tensors.iter().any(|t| t.shape().first() != Some(&rows)) {
            return Err(Error::InvalidArgument(
                "Size mismatch between tensors".into(),
            ));
        }
        Ok(Batches {
            tensors,
            order: (0..rows as i64).collect(),
            batch_size,
            position: 0,
            drop_last: false,
        })
    }

    /// Visits the rows in the order of `randperm(rows)` drawn now from the default
    /// generator.
    pub fn shuffle(mut self) -> Result<Batches> {
        let rows = self.order.len();
        self.order = default_generator()
            .randperm(rows, DType::I64)?
            .to_vec::<i64>();
        Ok(self)
    }

    /// Drops the last batch when it is shorter than `batch_size`.
    pub fn drop_last(mut self, drop_last: bool) -> Batches {
        self.drop_last = drop_last;
        self
    }
}

impl Iterator for Batches {
    type Item = Result<Vec<Variable>>;

    fn next(&mut self) -> Option<Self::Item> {
        let rows = self.order.len();
        let end = (self.position + self.batch_size).min(rows);
        let short = end - self.position < self.batch_size;
        if self.position >= rows || (short && self.drop_last) {
            return None;
        }
        let indices = &self.order[self.position..end];
        self.position = end;
        let batch = (|| {
            let index = Tensor::from_vec(indices.to_vec(), &[indices.len()])?;
            self.tensors
                .iter()
                .map(|t| Variable::from_tensor(t.clone()).index_select(0, &index))
                .collect()
        })();
        Some(batch)
    }
}
