//! `Variable::autograd_grad` / `backward_inputs` (PyTorch's `autograd.grad` and
//! `backward(inputs=)`): closed-form expectations, leaves untouched, pruning.

use rustgrad::{Tensor, Variable};

fn leaf(data: &[f64]) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), &[data.len()]).unwrap(),
        true,
    )
    .unwrap()
}

#[test]
fn grad_third_derivative_and_no_accumulation() {
    let x = leaf(&[1.5, -0.5]);
    let y = x
        .mul(&x)
        .unwrap()
        .mul(&x)
        .unwrap()
        .mul(&x)
        .unwrap()
        .sum()
        .unwrap(); // x⁴
    let g1 = Variable::autograd_grad(&[y], std::slice::from_ref(&x), &[None], false, true, false)
        .unwrap();
    let g1 = g1[0].clone().unwrap();
    let g2 = Variable::autograd_grad(
        &[g1.sum().unwrap()],
        std::slice::from_ref(&x),
        &[None],
        false,
        true,
        false,
    )
    .unwrap()[0]
        .clone()
        .unwrap();
    let g3 = Variable::autograd_grad(
        &[g2.sum().unwrap()],
        std::slice::from_ref(&x),
        &[None],
        false,
        false,
        false,
    )
    .unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(
        g1.to_vec::<f64>(),
        vec![4.0 * 1.5f64.powi(3), 4.0 * (-0.5f64).powi(3)]
    );
    assert_eq!(g2.to_vec::<f64>(), vec![12.0 * 2.25, 12.0 * 0.25]);
    assert_eq!(g3.to_vec::<f64>(), vec![36.0, -12.0]);
    assert!(x.grad().is_none());
}

#[test]
fn unused_input_is_none_or_an_error() {
    let x = leaf(&[1.0]);
    let z = leaf(&[2.0]);
    let y = x.mul(&x).unwrap().sum().unwrap();
    let g = Variable::autograd_grad(
        std::slice::from_ref(&y),
        &[x.clone(), z.clone()],
        &[None],
        true,
        false,
        true,
    )
    .unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>(), vec![2.0]);
    assert!(g[1].is_none());
    let err = Variable::autograd_grad(&[y], &[x, z], &[None], false, false, false).unwrap_err();
    assert!(err
        .to_string()
        .contains("index 1 appears to not have been used in the graph"));
}

#[test]
fn non_leaf_input_and_pruned_branch() {
    let x = leaf(&[1.0, 2.0]);
    let other = leaf(&[0.5, 0.1]);
    let h = x.mul(&x).unwrap(); // non-leaf input
    let e = other.exp().unwrap();
    let one = Variable::from_tensor(Tensor::from_vec(vec![1.0f64, 1.0], &[2]).unwrap());
    e.add_(&one).unwrap(); // ExpBackward0's saved result is now stale: it must not run
    let loss = h.sum().unwrap().add(&e.sum().unwrap()).unwrap();
    let g = Variable::autograd_grad(
        std::slice::from_ref(&loss),
        &[h],
        &[None],
        true,
        false,
        false,
    )
    .unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>(), vec![1.0, 1.0]);
    Variable::backward_inputs(
        std::slice::from_ref(&loss),
        &[None],
        std::slice::from_ref(&x),
        true,
        false,
    )
    .unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![2.0, 4.0]);
    assert!(other.grad().is_none());
    assert!(loss.backward().is_err()); // the full pass does reach the stale node
}
