//! Engine-level regression tests for the autograd foundation rules (Notes [Gradient
//! ownership], [Zero gradients], [Differentiable dtypes], [Views and in-place checks],
//! [Version counters]). Expected values are closed-form derivatives.

use rustgrad::{DType, Error, Result, Tensor, Variable};

fn leaf(data: &[f64], requires_grad: bool) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), &[data.len()]).unwrap(),
        requires_grad,
    )
    .unwrap()
}

#[test]
fn grad_after_create_graph_is_owned() -> Result<()> {
    let x = leaf(&[1.0, 2.0, 3.0], true);
    let c = leaf(&[10.0, 20.0, 30.0], false);
    x.sum()?.backward_with(None, false, true)?;
    x.mul(&c)?.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![11.0, 21.0, 31.0]);
    Ok(())
}

#[test]
fn fan_in_gradients_are_separate_buffers() -> Result<()> {
    let x1 = leaf(&[1.0, 2.0], true);
    let x2 = leaf(&[3.0, 4.0], true);
    x1.add(&x2)?.sum()?.backward_with(None, false, true)?;
    let (g1, g2) = (x1.grad().unwrap(), x2.grad().unwrap());
    assert!(!g1.tensor().shares_storage(&g2.tensor()));
    Ok(())
}

#[test]
fn pow_tensor_exponent_zero_at_zero_base() -> Result<()> {
    let x = leaf(&[0.0; 4], true);
    let e = leaf(&[0.0; 4], false);
    x.pow(&e)?.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![0.0; 4]);
    Ok(())
}

#[test]
fn zero_gradients_with_infinite_incoming_gradient() -> Result<()> {
    let inf = leaf(&[f64::INFINITY, f64::INFINITY], false);
    let x = leaf(&[1.0, 2.0], true);
    x.sign()?.backward_with(Some(&inf), false, false)?;
    x.pow_scalar(0.0)?.backward_with(Some(&inf), false, false)?;
    let y = x.mul(&leaf(&[1.0, 1.0], false))?;
    y.zero_()?;
    y.backward_with(Some(&inf), false, false)?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![0.0, 0.0]);
    Ok(())
}

#[test]
fn integer_results_have_no_history() -> Result<()> {
    let w = leaf(&[1.5, 2.5], true);
    let b = Variable::from_tensor(Tensor::zeros(&[2], DType::I64).unwrap());
    b.copy_(&w)?;
    assert!(!b.requires_grad() && b.grad_fn().is_none());
    assert_eq!(b.to_vec::<i64>(), vec![1, 2]);
    Ok(())
}

#[test]
fn in_place_on_view_of_plain_buffer_with_grad_operand() -> Result<()> {
    let w = leaf(&[1.0, 2.0], true);
    let buf = Variable::from_tensor(Tensor::zeros(&[2, 3], DType::F64).unwrap());
    buf.select(1, 1)?.mul_(&w)?;
    buf.sum()?.backward()?;
    assert_eq!(w.grad().unwrap().to_vec::<f64>(), vec![0.0, 0.0]);
    Ok(())
}

#[test]
fn view_that_became_a_leaf_refuses_in_place() -> Result<()> {
    let w = Variable::from_tensor(Tensor::from_vec(vec![0.0f64, 1.0, 2.0, 3.0], &[4])?)
        .view(&[2, 2])?;
    w.set_requires_grad(true)?;
    let err = w.select(0, 0)?.mul_(&leaf(&[3.0], false)).unwrap_err();
    assert!(matches!(err, Error::ViewOfLeafInplace), "{err}");
    Ok(())
}

#[test]
fn data_has_its_own_version_counter() -> Result<()> {
    let p = leaf(&[1.0, 1.0], true);
    let d = p.data();
    d.add_(&leaf(&[1.0], false))?;
    assert_eq!((d.tensor().version(), p.tensor().version()), (1, 0));
    assert_eq!(p.to_vec::<f64>(), vec![2.0, 2.0]);
    Ok(())
}

#[test]
fn set_data_is_seen_by_every_handle_and_keeps_the_version() -> Result<()> {
    let p = leaf(&[1.0, 2.0, 3.0], true);
    let handle = p.clone();
    let src = Variable::from_tensor(Tensor::from_vec(vec![4.0f64, 5.0], &[2])?);
    p.set_data(&src)?;
    assert_eq!(handle.shape().as_slice(), &[2]);
    assert_eq!(handle.to_vec::<f64>(), vec![4.0, 5.0]);
    assert!(handle.requires_grad() && handle.is_leaf());
    // The elements are shared; the version counter is p's own.
    src.add_(&leaf(&[1.0], false))?;
    assert_eq!(p.to_vec::<f64>(), vec![5.0, 6.0]);
    assert_eq!((p.tensor().version(), src.tensor().version()), (0, 1));
    p.mul(&p)?.sum()?.backward()?;
    assert_eq!(p.grad().unwrap().to_vec::<f64>(), vec![10.0, 12.0]);
    let ints = Variable::from_tensor(Tensor::from_vec(vec![1i64], &[1])?);
    assert!(matches!(
        p.set_data(&ints),
        Err(Error::DataRequiresGradNonFloat)
    ));
    Ok(())
}
