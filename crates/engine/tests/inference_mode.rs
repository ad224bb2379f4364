//! Inference mode and inference tensors (Note [Inference mode]), checked against
//! PyTorch 2.15's documented behaviour.

use rustgrad::autograd::{enable_grad, inference_mode, is_grad_enabled, InferenceModeGuard};
use rustgrad::variable::take_deferred_error;
use rustgrad::{Tensor, Variable};

fn leaf(data: &[f64], requires_grad: bool) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), &[data.len()]).unwrap(),
        requires_grad,
    )
    .unwrap()
}

#[test]
fn nothing_records_in_inference_mode_even_under_enable_grad() {
    let x = leaf(&[1.0, 2.0], true);
    let _g = inference_mode();
    let y = x.mul(&x).unwrap();
    assert!(y.grad_fn().is_none() && y.is_inference() && !y.requires_grad());
    let _e = enable_grad();
    assert!(is_grad_enabled());
    let w = x.exp().unwrap();
    assert!(w.grad_fn().is_none() && w.is_inference());
    let _off = InferenceModeGuard::new(false);
    let u = x.mul(&x).unwrap();
    assert!(u.grad_fn().is_some() && !u.is_inference());
}

#[test]
fn inference_tensors_have_no_version_and_refuse_writes_outside() {
    let y = {
        let _g = inference_mode();
        let y = leaf(&[1.0, 2.0], false);
        y.add_(&leaf(&[1.0, 1.0], false)).unwrap();
        y
    };
    let err = y.version().unwrap_err().to_string();
    assert!(
        err.contains("Inference tensors do not track version counter"),
        "{err}"
    );
    let err = y.add_(&leaf(&[1.0, 1.0], false)).unwrap_err().to_string();
    assert!(err.contains("Inplace update to inference tensor outside InferenceMode"));
    assert_eq!(y.to_vec::<f64>(), vec![2.0, 3.0]);
    let err = y.set_requires_grad(true).unwrap_err().to_string();
    assert!(err.contains("Setting requires_grad=True on inference tensor"));
    let n = leaf(&[1.0], false);
    assert_eq!(n.version().unwrap(), 0);
}

#[test]
fn saving_an_inference_tensor_defers_an_error_and_records_nothing() {
    let x = leaf(&[1.0, 2.0], true);
    let y = {
        let _g = inference_mode();
        x.mul(&x).unwrap()
    };
    assert!(take_deferred_error().is_none());
    let z = y.mul(&x).unwrap();
    assert!(z.grad_fn().is_none());
    let err = take_deferred_error().expect("an error").to_string();
    assert!(
        err.contains("Inference tensors cannot be saved for backward"),
        "{err}"
    );
    assert!(take_deferred_error().is_none());
    // A clone is a normal tensor and trains.
    let c = y.clone_data().unwrap();
    assert!(!c.is_inference());
    c.mul(&x).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![1.0, 4.0]);
}
