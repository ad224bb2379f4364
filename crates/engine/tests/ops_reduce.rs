//! The Rust API of the reductions, scans and sorts, on hand-picked cases checked
//! against closed forms (the PyTorch-generated cases are in vectors.rs).

use rustgrad::{DType, Tensor, Variable};

fn leaf(data: &[f64], shape: &[usize]) -> Variable {
    Variable::new(Tensor::from_vec(data.to_vec(), shape).unwrap(), true).unwrap()
}

fn grad(x: &Variable) -> Vec<f64> {
    x.grad().expect("a gradient").to_vec::<f64>()
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
}

#[test]
fn max_over_a_dim_returns_values_indices_and_sends_the_gradient_to_the_index() {
    let x = leaf(&[1.0, 3.0, 3.0, 2.0, 0.0, 2.0], &[2, 3]);
    let (values, indices) = x.max_dim(1, false).unwrap();
    assert_eq!(values.to_vec::<f64>(), vec![3.0, 2.0]);
    assert_eq!(indices.to_vec::<i64>(), vec![1, 0]);
    assert_eq!(indices.dtype(), DType::I64);
    assert!(!indices.requires_grad());
    values.sum().unwrap().backward().unwrap();
    assert_eq!(grad(&x), vec![0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
}

#[test]
fn amax_shares_the_gradient_among_ties() {
    let x = leaf(&[1.0, 3.0, 3.0, 2.0, 0.0, 2.0], &[2, 3]);
    x.amax(&[1], false)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(grad(&x), vec![0.0, 0.5, 0.5, 0.5, 0.0, 0.5]);
}

#[test]
fn softmax_rows_sum_to_one_and_its_gradient_of_a_sum_is_zero() {
    let x = leaf(&[1.0, 2.0, 3.0, -1.0, 0.0, 1000.0], &[2, 3]);
    let y = x.softmax(-1).unwrap();
    let rows = y.sum_dims(&[1], false).unwrap().to_vec::<f64>();
    assert!(close(&rows, &[1.0, 1.0]), "{rows:?}");
    // exp(1000) overflows without the max shift.
    assert!(y.to_vec::<f64>().iter().all(|v| v.is_finite()));
    y.sum().unwrap().backward().unwrap();
    assert!(grad(&x).iter().all(|g| g.abs() < 1e-12));
}

#[test]
fn logsumexp_is_stable_and_its_gradient_is_the_softmax() {
    let x = leaf(&[1000.0, 1000.0], &[2]);
    let y = x.logsumexp(&[0], false).unwrap();
    assert!(close(
        &y.to_vec::<f64>(),
        &[1000.0 + std::f64::consts::LN_2]
    ));
    y.backward().unwrap();
    assert!(close(&grad(&x), &[0.5, 0.5]));
}

#[test]
fn prod_gradient_is_the_product_of_the_others_even_with_a_zero() {
    let x = leaf(&[2.0, 0.0, 3.0], &[3]);
    let p = x.prod().unwrap();
    assert_eq!(p.to_vec::<f64>(), vec![0.0]);
    p.backward().unwrap();
    assert_eq!(grad(&x), vec![0.0, 6.0, 0.0]);
}

#[test]
fn cumsum_and_cumprod_with_their_gradients() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let s = x.cumsum(0).unwrap();
    assert_eq!(s.to_vec::<f64>(), vec![1.0, 3.0, 6.0]);
    s.sum().unwrap().backward().unwrap();
    assert_eq!(grad(&x), vec![3.0, 2.0, 1.0]);
    let z = leaf(&[2.0, 0.0, 3.0], &[3]);
    let c = z.cumprod(0).unwrap();
    assert_eq!(c.to_vec::<f64>(), vec![2.0, 0.0, 0.0]);
    c.sum().unwrap().backward().unwrap();
    // d/dz of 2 + 2*z1 + 2*z1*z2 at (2, 0, 3): (1 + z1 + z1*z2, 2 + 2*z2, 2*z1).
    assert_eq!(grad(&z), vec![1.0, 8.0, 0.0]);
}

#[test]
fn var_and_std_with_corrections() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    assert!(close(
        &x.var(None, 1.0, false).unwrap().to_vec::<f64>(),
        &[5.0 / 3.0]
    ));
    assert!(close(
        &x.var(None, 0.0, false).unwrap().to_vec::<f64>(),
        &[1.25]
    ));
    let s = x.std(Some(&[0]), 0.0, true).unwrap();
    assert_eq!(s.shape().as_slice(), &[1]);
    assert!(close(&s.to_vec::<f64>(), &[1.25f64.sqrt()]));
    x.var(None, 1.0, false).unwrap().backward().unwrap();
    // d var / dx_i = 2 (x_i - mean) / (N - 1).
    assert!(close(&grad(&x), &[-1.0, -1.0 / 3.0, 1.0 / 3.0, 1.0]));
}

#[test]
fn vector_norms_of_several_orders() {
    let x = leaf(&[3.0, -4.0, 0.0], &[3]);
    let norm = |ord: f64| x.vector_norm(ord, None, false).unwrap().to_vec::<f64>()[0];
    assert!((norm(2.0) - 5.0).abs() < 1e-12);
    assert_eq!(norm(1.0), 7.0);
    assert_eq!(norm(f64::INFINITY), 4.0);
    assert_eq!(norm(f64::NEG_INFINITY), 0.0);
    assert_eq!(norm(0.0), 2.0);
    assert!((norm(3.0) - 91f64.cbrt()).abs() < 1e-12);
    x.vector_norm(2.0, None, false).unwrap().backward().unwrap();
    assert!(close(&grad(&x), &[0.6, -0.8, 0.0]));
}

#[test]
fn sort_topk_median_and_unique() {
    let x = leaf(&[3.0, 1.0, 2.0, 1.0], &[4]);
    let (values, indices) = x.sort(0, false).unwrap();
    assert_eq!(values.to_vec::<f64>(), vec![1.0, 1.0, 2.0, 3.0]);
    assert_eq!(indices.to_vec::<i64>(), vec![1, 3, 2, 0]); // stable
    let (top, at) = x.topk(2, 0, true).unwrap();
    assert_eq!(top.to_vec::<f64>(), vec![3.0, 2.0]);
    assert_eq!(at.to_vec::<i64>(), vec![0, 2]);
    top.sum().unwrap().backward().unwrap();
    assert_eq!(grad(&x), vec![1.0, 0.0, 1.0, 0.0]);
    assert_eq!(x.median().unwrap().to_vec::<f64>(), vec![1.0]);
    let (u, inverse, counts) = x.unique().unwrap();
    assert_eq!(u.to_vec::<f64>(), vec![1.0, 2.0, 3.0]);
    assert_eq!(inverse.to_vec::<i64>(), vec![2, 0, 1, 0]);
    assert_eq!(counts.to_vec::<i64>(), vec![2, 1, 1]);
}

#[test]
fn argmax_all_any_count_nonzero() {
    let x = Variable::from_tensor(Tensor::from_vec(vec![0i64, 5, -2, 5], &[2, 2]).unwrap());
    assert_eq!(x.argmax(None, false).unwrap().to_vec::<i64>(), vec![1]);
    assert_eq!(
        x.argmin(Some(1), false).unwrap().to_vec::<i64>(),
        vec![0, 0]
    );
    assert_eq!(x.all(None, false).unwrap().to_vec::<bool>(), vec![false]);
    assert_eq!(
        x.any(Some(&[1]), false).unwrap().to_vec::<bool>(),
        vec![true, true]
    );
    assert_eq!(
        x.count_nonzero(Some(&[0])).unwrap().to_vec::<i64>(),
        vec![1, 2]
    );
}

#[test]
fn reductions_over_empty_dims_are_errors_with_pytorchs_messages() {
    let e = Variable::from_tensor(Tensor::zeros(&[0, 3], DType::F32).unwrap());
    let err = e.max().unwrap_err().to_string();
    assert!(
        err.contains("Expected reduction dim to be specified"),
        "{err}"
    );
    let err = e.max_dim(0, false).unwrap_err().to_string();
    assert_eq!(
        err,
        "max(): Expected reduction dim 0 to have non-zero size."
    );
    assert_eq!(e.prod().unwrap().to_vec::<f32>(), vec![1.0]);
    let err = e.topk(1, 0, true).unwrap_err().to_string();
    assert_eq!(err, "selected index k out of range");
}
