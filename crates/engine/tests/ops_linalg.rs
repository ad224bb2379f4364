//! The Rust API of the linear-algebra ops, on hand-picked cases whose values and
//! gradients are worked out by hand (closed forms, not the code under test).

use rustgrad::autograd;
use rustgrad::{Error, Scalar, Tensor, Variable};

fn leaf(data: &[f64], shape: &[usize]) -> Variable {
    Variable::new(Tensor::from_vec(data.to_vec(), shape).unwrap(), true).unwrap()
}

fn values(v: &Variable) -> Vec<f64> {
    v.to_vec::<f64>()
}

fn name(v: &Variable) -> &'static str {
    autograd::node_name(v.grad_fn().unwrap().id()).unwrap()
}

#[test]
fn dot_and_its_gradients_are_the_other_vector() {
    let a = leaf(&[1.0, 2.0, 3.0], &[3]);
    let b = leaf(&[4.0, 5.0, 6.0], &[3]);
    let d = a.dot(&b).unwrap();
    assert_eq!(values(&d), [32.0]);
    assert_eq!(name(&d), "DotBackward0");
    d.backward().unwrap();
    assert_eq!(values(&a.grad().unwrap()), [4.0, 5.0, 6.0]);
    assert_eq!(values(&b.grad().unwrap()), [1.0, 2.0, 3.0]);
    let err = a.dot(&leaf(&[1.0], &[1])).unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
}

#[test]
fn mv_gradient_of_the_matrix_is_the_outer_product() {
    // [[1, 2], [3, 4]] @ [1, -1] = [-1, -1]
    let m = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let v = leaf(&[1.0, -1.0], &[2]);
    let out = m.mv(&v).unwrap();
    assert_eq!(values(&out), [-1.0, -1.0]);
    assert_eq!(name(&out), "MvBackward0");
    out.sum().unwrap().backward().unwrap();
    // d/dm sum(m v) = ones ⊗ v; d/dv = column sums of m.
    assert_eq!(values(&m.grad().unwrap()), [1.0, -1.0, 1.0, -1.0]);
    assert_eq!(values(&v.grad().unwrap()), [4.0, 6.0]);
}

#[test]
fn addmm_scales_both_terms_and_their_gradients() {
    let input = leaf(&[10.0, 20.0], &[2]); // broadcast over rows
    let a = leaf(&[1.0, 0.0, 0.0, 1.0], &[2, 2]); // identity
    let b = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let out = input
        .addmm(&a, &b, Scalar::Float(0.5), Scalar::Int(2))
        .unwrap();
    assert_eq!(values(&out), [7.0, 14.0, 11.0, 18.0]);
    assert_eq!(name(&out), "AddmmBackward0");
    out.sum().unwrap().backward().unwrap();
    // The broadcast input is summed over the 2 rows: 0.5 * 2.
    assert_eq!(values(&input.grad().unwrap()), [1.0, 1.0]);
    // d/da = 2 * ones @ b^T (row sums of b); d/db = 2 * a^T @ ones.
    assert_eq!(values(&a.grad().unwrap()), [6.0, 14.0, 6.0, 14.0]);
    assert_eq!(values(&b.grad().unwrap()), [2.0, 2.0, 2.0, 2.0]);
}

#[test]
fn addbmm_sums_the_batch_and_beta_zero_ignores_nan() {
    let input = leaf(&[f64::NAN], &[1]);
    let b1 = leaf(&[1.0, 2.0], &[2, 1, 1]);
    let b2 = leaf(&[3.0, 4.0], &[2, 1, 1]);
    let out = input
        .addbmm(&b1, &b2, Scalar::Int(0), Scalar::Int(1))
        .unwrap();
    assert_eq!(values(&out), [11.0]);
    assert_eq!(name(&out), "AddbmmBackward0");
    out.sum().unwrap().backward().unwrap();
    assert_eq!(values(&input.grad().unwrap()), [0.0]);
    assert_eq!(values(&b1.grad().unwrap()), [3.0, 4.0]);
    assert_eq!(values(&b2.grad().unwrap()), [1.0, 2.0]);
}

#[test]
fn bmm_and_mm_refuse_wrong_ranks_and_sizes() {
    let m = leaf(&[0.0; 6], &[2, 3]);
    let err = m.mm(&leaf(&[0.0; 8], &[4, 2])).unwrap_err();
    assert!(err
        .to_string()
        .contains("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)"));
    let err = m.bmm(&m).unwrap_err();
    assert!(err.to_string().contains("batch1 must be a 3D tensor"));
    let b = leaf(&[1.0; 12], &[2, 2, 3]);
    let out = b.bmm(&leaf(&[1.0; 6], &[2, 3, 1])).unwrap();
    assert_eq!(values(&out), [3.0; 4]);
    assert_eq!(name(&out), "BmmBackward0");
}

#[test]
fn einsum_trace_and_matmul_have_their_closed_forms() {
    let m = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let trace = Variable::einsum("ii", std::slice::from_ref(&m)).unwrap();
    assert_eq!(values(&trace), [5.0]);
    trace.backward().unwrap();
    // d trace / d m is the identity.
    assert_eq!(values(&m.grad().unwrap()), [1.0, 0.0, 0.0, 1.0]);

    let a = leaf(&[1.0, 2.0], &[1, 2]);
    let b = leaf(&[3.0, 4.0], &[2, 1]);
    let ab = Variable::einsum("ij,jk->ik", &[a.clone(), b.clone()]).unwrap();
    assert_eq!(values(&ab), [11.0]);
    let err = Variable::einsum("ij,jk", std::slice::from_ref(&a)).unwrap_err();
    assert!(err.to_string().contains("fewer operands"), "{err}");
}

#[test]
fn tensordot_contracts_the_named_dims() {
    // Contracting both dims of two 2x2 matrices is the sum of their elementwise product.
    let a = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let b = leaf(&[5.0, 6.0, 7.0, 8.0], &[2, 2]);
    let full = a.tensordot(&b, &[0, 1], &[0, 1]).unwrap();
    assert_eq!(values(&full), [70.0]);
    // dims [1] with [0] is the matrix product.
    let mm = a.tensordot(&b, &[1], &[0]).unwrap();
    assert_eq!(values(&mm), [19.0, 22.0, 43.0, 50.0]);
}
