//! The `Tensor` methods of each op family, one file per family of
//! `rustgrad::ops` (PyO3's `multiple-pymethods`: each file adds a `#[pymethods]` block
//! to `PyTensor`). See Note [Op families].

pub(crate) mod activation;
pub(crate) mod attention;
pub(crate) mod binary;
pub(crate) mod conv;
mod copy;
pub(crate) mod embedding;
mod forms;
mod index;
mod inplace;
mod linalg;
mod logical;
pub(crate) mod loss;
pub(crate) mod norm;
pub(crate) mod pool;
mod reduce;
pub(crate) mod registry;
pub(crate) mod rnn;
mod shape;
mod spatial;
mod ternary;
mod unary;
