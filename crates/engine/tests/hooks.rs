//! Autograd hooks from Rust (Note [Hooks]): tensor hooks on leaves and non-leaves,
//! retain_grad, node pre- and post-hooks, post-accumulate-grad hooks, node metadata,
//! and errors raised by hooks. Expected values are closed forms.

use rustgrad::autograd::{self, graph, NodeMetadata};
use rustgrad::{Error, ExternalError, Tensor, Variable};
use std::sync::{Arc, Mutex};

fn leaf(data: &[f64]) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), &[data.len()]).unwrap(),
        true,
    )
    .unwrap()
}

fn values(v: &Variable) -> Vec<f64> {
    v.to_vec()
}

#[test]
fn nonleaf_hook_replaces_the_gradient() {
    let x = leaf(&[1.0, 2.0]);
    let y = x.mul_scalar(2.0).unwrap();
    let z = y.mul_scalar(3.0).unwrap().sum().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    y.register_hook(Arc::new(move |g: Option<&Variable>| {
        let g = g.unwrap();
        s.lock().unwrap().push(values(g));
        Ok(Some(g.mul_scalar(10.0)?))
    }))
    .unwrap();
    z.backward().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![vec![3.0, 3.0]]);
    assert_eq!(values(&x.grad().unwrap()), vec![60.0, 60.0]);
}

#[test]
fn leaf_hook_runs_before_capture_and_accumulation_and_can_be_removed() {
    let x = leaf(&[1.0, 2.0]);
    let h = x
        .register_hook(Arc::new(|g: Option<&Variable>| {
            Ok(Some(g.unwrap().mul_scalar(10.0)?))
        }))
        .unwrap();
    let y = x.mul_scalar(2.0).unwrap().sum().unwrap();
    let g = Variable::autograd_grad(&[y], std::slice::from_ref(&x), &[None], false, false, false)
        .unwrap();
    assert_eq!(values(g[0].as_ref().unwrap()), vec![20.0, 20.0]);
    assert!(x.grad().is_none());
    x.mul_scalar(2.0)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(values(&x.grad().unwrap()), vec![20.0, 20.0]);
    h.remove();
    x.mul_scalar(2.0)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(values(&x.grad().unwrap()), vec![22.0, 22.0]);
}

#[test]
fn hook_on_a_tensor_without_grad_and_wrong_shape_are_errors() {
    let c = Variable::from_slice(&[1.0f64], &[1]).unwrap();
    assert!(c
        .register_hook(Arc::new(|_: Option<&Variable>| Ok(None)))
        .is_err());
    let x = leaf(&[1.0, 2.0]);
    let y = x.mul_scalar(2.0).unwrap();
    y.register_hook(Arc::new(|_: Option<&Variable>| {
        Ok(Some(Variable::from_slice(&[1.0f64; 3], &[3])?))
    }))
    .unwrap();
    let err = y.sum().unwrap().backward().unwrap_err();
    assert!(
        err.to_string().contains("has changed the size of value"),
        "{err}"
    );
}

#[test]
fn retain_grad_accumulates_and_follows_inplace() {
    let x = leaf(&[1.0, 1.0]);
    let y = x.mul_scalar(2.0).unwrap();
    y.retain_grad().unwrap();
    assert!(y.retains_grad());
    let s = y.sum().unwrap();
    s.backward_with(None, true, false).unwrap();
    s.backward_with(None, false, false).unwrap();
    assert_eq!(values(&y.grad().unwrap()), vec![2.0, 2.0]);

    let x = leaf(&[1.0, 1.0]);
    let y = x.mul_scalar(2.0).unwrap();
    y.retain_grad().unwrap();
    y.mul_(&Variable::from_slice(&[3.0f64], &[1]).unwrap())
        .unwrap();
    y.mul_scalar(5.0)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(values(&y.grad().unwrap()), vec![5.0, 5.0]);
    assert_eq!(values(&x.grad().unwrap()), vec![30.0, 30.0]);
    // A leaf's retain_grad is a no-op.
    x.retain_grad().unwrap();
    assert!(!x.retains_grad());
}

#[test]
fn node_hooks_run_in_pytorch_order() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let x = leaf(&[1.0, 2.0]);
    let y = x.mul(&x).unwrap();
    let l = log.clone();
    y.register_hook(Arc::new(move |_: Option<&Variable>| {
        l.lock().unwrap().push("tensor".into());
        Ok(None)
    }))
    .unwrap();
    let node = y.grad_fn().unwrap();
    let l = log.clone();
    autograd::register_node_prehook(
        &node,
        Arc::new(move |go: &[Option<Variable>]| {
            l.lock().unwrap().push("pre".into());
            Ok(Some(vec![Some(go[0].as_ref().unwrap().mul_scalar(3.0)?)]))
        }),
    )
    .unwrap();
    let l = log.clone();
    autograd::register_node_hook(
        &node,
        Arc::new(move |gi: &[Option<Variable>], go: &[Option<Variable>]| {
            l.lock()
                .unwrap()
                .push(format!("post {} {}", gi.len(), go.len()));
            Ok(None)
        }),
    )
    .unwrap();
    let l = log.clone();
    x.register_post_accumulate_grad_hook(Arc::new(move |v: &Variable| {
        l.lock()
            .unwrap()
            .push(format!("accumulated {:?}", values(&v.grad().unwrap())));
        Ok(())
    }))
    .unwrap();
    y.sum().unwrap().backward().unwrap();
    // d(x²)/dx = 2x, times the pre-hook's 3.
    assert_eq!(values(&x.grad().unwrap()), vec![6.0, 12.0]);
    assert_eq!(
        *log.lock().unwrap(),
        vec!["tensor", "pre", "post 2 1", "accumulated [6.0, 12.0]"]
    );
}

#[test]
fn an_error_from_a_hook_is_returned_unchanged_and_the_engine_stays_usable() {
    let x = leaf(&[1.0, 2.0]);
    let y = x.mul_scalar(2.0).unwrap();
    y.register_hook(Arc::new(|_: Option<&Variable>| {
        Err(Error::External(ExternalError::new("boom", 42u32)))
    }))
    .unwrap();
    match y.sum().unwrap().backward() {
        Err(Error::External(e)) => {
            assert_eq!(e.to_string(), "boom");
            assert_eq!(e.payload().downcast_ref::<u32>(), Some(&42));
        }
        other => panic!("expected the hook's error, got {other:?}"),
    }
    let z = leaf(&[1.0]);
    z.mul_scalar(4.0)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(values(&z.grad().unwrap()), vec![4.0]);
}

#[test]
fn metadata_lives_with_the_node() {
    let x = leaf(&[1.0]);
    let y = x.mul_scalar(2.0).unwrap();
    let id = y.grad_fn().unwrap().id();
    let m = graph::metadata(id, || Arc::new(7u8) as NodeMetadata).unwrap();
    assert_eq!(m.downcast_ref::<u8>(), Some(&7));
    let again = graph::metadata(id, || Arc::new(9u8) as NodeMetadata).unwrap();
    assert!(Arc::ptr_eq(&m, &again));
}

#[test]
fn multi_output_hooks_see_none_for_unused_outputs() {
    let x = leaf(&[0.0, 1.0, 2.0, 3.0]);
    let parts = x.split(2, 0).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    parts[1]
        .register_hook(Arc::new(move |g: Option<&Variable>| {
            s.lock().unwrap().push(g.is_none());
            Ok(None)
        }))
        .unwrap();
    parts[0].sum().unwrap().backward().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![true]);
    assert_eq!(values(&x.grad().unwrap()), vec![1.0, 1.0, 0.0, 0.0]);
}

#[test]
fn backward_inputs_on_a_nonleaf_retains_its_grad_once() {
    let x = leaf(&[1.0, 1.0]);
    let y = x.mul_scalar(2.0).unwrap();
    y.retain_grad().unwrap();
    let loss = y.mul_scalar(3.0).unwrap().sum().unwrap();
    Variable::backward_inputs(&[loss], &[None], std::slice::from_ref(&y), false, false).unwrap();
    assert_eq!(values(&y.grad().unwrap()), vec![3.0, 3.0]);
    assert!(x.grad().is_none());
}
