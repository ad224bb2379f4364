//! The Rust API of xlogy, xlog1py and float_power on hand-picked cases checked against
//! closed forms (values and gradients written out by hand).

use rustgrad::{DType, Scalar, Tensor, Variable};

fn leaf(data: &[f64]) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), &[data.len()]).unwrap(),
        true,
    )
    .unwrap()
}

#[test]
fn xlogy_is_zero_at_zero_and_nan_for_nan() {
    let x = leaf(&[0.0, 0.0, 2.0, 0.0]);
    let y = leaf(&[0.0, f64::NAN, 3.0, -1.0]);
    let out = x.xlogy(&y).unwrap().to_vec::<f64>();
    assert_eq!(out[0], 0.0);
    assert!(out[1].is_nan());
    assert!((out[2] - 2.0 * 3f64.ln()).abs() < 1e-15);
    assert_eq!(out[3], 0.0);
}

#[test]
fn xlogy_gradients_are_log_y_and_x_over_y() {
    let x = leaf(&[0.0, 2.0, 0.0]);
    let y = leaf(&[2.0, 4.0, 0.0]);
    x.xlogy(&y).unwrap().sum().unwrap().backward().unwrap();
    let gx = x.grad().unwrap().to_vec::<f64>();
    let gy = y.grad().unwrap().to_vec::<f64>();
    assert_eq!(gx, [2f64.ln(), 4f64.ln(), 0.0]); // masked where x == 0 and y <= 0
    assert_eq!(gy[..2], [0.0, 0.5]);
    assert!(gy[2].is_nan()); // 0 / 0, as PyTorch
}

#[test]
fn xlog1py_and_the_number_forms() {
    let x = leaf(&[1.0, 0.0]);
    let out = x.xlogy_scalar(Scalar::Float(1.0), true).unwrap();
    assert_eq!(out.to_vec::<f64>(), [2f64.ln(), 0.0]);
    let y = leaf(&[1.0, 3.0]);
    let out = y.xlogy_scalar_self(Scalar::Int(2), false).unwrap();
    assert_eq!(out.to_vec::<f64>(), [0.0, 2.0 * 3f64.ln()]);
    out.sum().unwrap().backward().unwrap();
    assert_eq!(y.grad().unwrap().to_vec::<f64>(), [2.0, 2.0 / 3.0]);
}

#[test]
fn float_power_is_float64_and_in_place_needs_a_float64_base() {
    let ints = Variable::from_tensor(Tensor::from_vec(vec![2i64, 3], &[2]).unwrap());
    let out = ints.float_power_scalar(Scalar::Int(2)).unwrap();
    assert_eq!(out.dtype(), DType::F64);
    assert_eq!(out.to_vec::<f64>(), [4.0, 9.0]);
    let f32s = Variable::from_tensor(Tensor::from_vec(vec![2.0f32], &[1]).unwrap());
    let err = f32s.float_power_scalar_(Scalar::Int(2)).unwrap_err();
    assert!(err
        .to_string()
        .contains("has dtype Float but the operation's result requires dtype Double"));
    let f64s = Variable::from_tensor(Tensor::from_vec(vec![2.0f64], &[1]).unwrap());
    f64s.float_power_scalar_(Scalar::Float(3.0)).unwrap();
    assert_eq!(f64s.to_vec::<f64>(), [8.0]);
}
