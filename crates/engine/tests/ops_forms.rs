//! The Rust API of the in-place forms and of index_copy / masked_scatter / put /
//! fill_diagonal_, on hand-picked cases whose values and gradients are written out by
//! hand (closed forms, not the code under test).

use rustgrad::tensor::CmpOp;
use rustgrad::{Scalar, Tensor, Variable};

fn leaf(data: &[f64], shape: &[usize]) -> Variable {
    Variable::new(Tensor::from_vec(data.to_vec(), shape).unwrap(), true).unwrap()
}

fn index(data: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

fn values(v: &Variable) -> Vec<f64> {
    v.to_vec::<f64>()
}

/// The grad_fn class name of `v`'s history.
fn name_of(v: &Variable) -> &'static str {
    rustgrad::autograd::graph::node_name(v.grad_fn().unwrap().id()).unwrap()
}

/// Backpropagates `weights · out` (distinct weights show where each gradient went).
fn backward_weighted(out: &Variable, weights: &[f64]) {
    let w = Variable::from_tensor(Tensor::from_vec(weights.to_vec(), &out.shape()).unwrap());
    out.mul(&w).unwrap().sum().unwrap().backward().unwrap();
}

#[test]
fn exp_in_place_on_a_non_leaf_has_exps_gradient() {
    let x = leaf(&[0.0, 1.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    y.exp_().unwrap();
    let e2 = 2f64.exp();
    assert_eq!(values(&y), [1.0, e2]);
    assert_eq!(name_of(&y), "ExpBackward0");
    backward_weighted(&y, &[1.0, 3.0]);
    // d/dx exp(2x) = 2 exp(2x)
    assert_eq!(values(&x.grad().unwrap()), [2.0, 6.0 * e2]);
}

#[test]
fn a_leaf_that_requires_grad_refuses_in_place_forms() {
    let x = leaf(&[1.0], &[1]);
    assert!(x.sqrt_().is_err());
    assert!(x.compare_scalar_(Scalar::Float(1.0), CmpOp::Eq).is_err());
    assert_eq!(values(&x), [1.0]);
}

#[test]
fn in_place_comparisons_write_ones_and_zeros_with_zero_gradients() {
    let x = leaf(&[-1.0, 0.5, 2.0], &[3]);
    let other = leaf(&[0.5], &[1]);
    let y = x.mul_scalar(1.0).unwrap();
    y.compare_(&other, CmpOp::Lt).unwrap();
    assert_eq!(values(&y), [1.0, 0.0, 0.0]);
    assert_eq!(name_of(&y), "LtBackward1");
    backward_weighted(&y, &[1.0, 2.0, 3.0]);
    assert_eq!(values(&x.grad().unwrap()), [0.0, 0.0, 0.0]);
    assert_eq!(values(&other.grad().unwrap()), [0.0]);
}

#[test]
fn pow_and_clamp_min_in_place() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = x.mul_scalar(1.0).unwrap();
    y.pow_scalar_(Scalar::Int(2)).unwrap();
    y.clamp_min_(Scalar::Float(2.0)).unwrap();
    assert_eq!(values(&y), [2.0, 4.0, 9.0]);
    assert_eq!(name_of(&y), "ClampMinBackward0");
    backward_weighted(&y, &[1.0, 1.0, 1.0]);
    // x**2 = 1 is clamped (zero gradient); elsewhere 2x.
    assert_eq!(values(&x.grad().unwrap()), [0.0, 4.0, 6.0]);
}

#[test]
fn index_copy_masked_scatter_and_put() {
    let x = leaf(&[0.0; 6], &[3, 2]);
    let s = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let out = x.index_copy(0, &index(&[2, 0], &[2]), &s).unwrap();
    assert_eq!(values(&out), [3.0, 4.0, 0.0, 0.0, 1.0, 2.0]);
    assert_eq!(name_of(&out), "IndexCopyBackward0");
    backward_weighted(&out, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(values(&x.grad().unwrap()), [0.0, 0.0, 3.0, 4.0, 0.0, 0.0]);
    assert_eq!(values(&s.grad().unwrap()), [5.0, 6.0, 1.0, 2.0]);

    let a = leaf(&[1.0, 2.0, 3.0], &[3]);
    let src = leaf(&[7.0, 8.0, 9.0], &[3]);
    let mask = Tensor::from_vec(vec![false, true, true], &[3]).unwrap();
    let m = a.masked_scatter(&mask, &src).unwrap();
    assert_eq!(values(&m), [1.0, 7.0, 8.0]);
    backward_weighted(&m, &[1.0, 2.0, 3.0]);
    assert_eq!(values(&a.grad().unwrap()), [1.0, 0.0, 0.0]);
    assert_eq!(values(&src.grad().unwrap()), [2.0, 3.0, 0.0]);

    let b = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let v = leaf(&[10.0, 20.0, 30.0], &[3]);
    let p = b.put(&index(&[-1, 0, 3], &[3]), &v, true).unwrap();
    assert_eq!(values(&p), [21.0, 2.0, 3.0, 44.0]);
    backward_weighted(&p, &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(values(&b.grad().unwrap()), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(values(&v.grad().unwrap()), [4.0, 1.0, 4.0]);
    let bad = b.put(&index(&[4], &[1]), &leaf(&[1.0], &[1]), false);
    assert!(bad.unwrap_err().to_string().contains("out of range"));
}

#[test]
fn fill_diagonal_wraps_and_records_copy_slices() {
    let z = Variable::from_tensor(Tensor::zeros(&[5, 2], rustgrad::DType::F64).unwrap());
    z.fill_diagonal_(Scalar::Float(1.0), true).unwrap();
    assert_eq!(
        values(&z),
        [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    );
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = x.mul_scalar(1.0).unwrap();
    y.fill_diagonal_(Scalar::Float(5.0), false).unwrap();
    assert_eq!(values(&y), [5.0, 2.0, 3.0, 5.0]);
    backward_weighted(&y, &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(values(&x.grad().unwrap()), [0.0, 2.0, 3.0, 0.0]);
}
