//! Custom ops defined from Rust (`Variable::record_custom` with a `CustomBackward`):
//! gradients against closed forms, double backward, the checks of returned gradients,
//! errors from the backward and in-place (dirty) outputs.

use rustgrad::autograd::{self, no_grad};
use rustgrad::{
    intern_name, CustomBackward, CustomOptions, DType, Error, Result, SavedValues, Tensor, Variable,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn leaf(data: &[f64], requires_grad: bool) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), &[data.len()]).unwrap(),
        requires_grad,
    )
    .unwrap()
}

fn values(v: &Variable) -> Vec<f64> {
    v.to_vec::<f64>()
}

/// `sin(x)` with backward `grad * cos(x)` written with differentiable ops.
struct Sin;

impl CustomBackward for Sin {
    fn name(&self) -> &'static str {
        intern_name("SinFnBackward")
    }

    fn backward(
        &self,
        grads: &[Option<Variable>],
        saved: &SavedValues,
        _needs: &[bool],
    ) -> Result<Vec<Option<Variable>>> {
        let saved = saved.unpack()?;
        let x = saved[0].as_ref().unwrap();
        let g = grads[0].as_ref().unwrap();
        Ok(vec![Some(g.mul(&x.cos()?)?)])
    }
}

/// Saves `x` and returns the incoming gradient; reads what it saved only when told to.
struct MaybeReads(AtomicBool);

impl CustomBackward for MaybeReads {
    fn name(&self) -> &'static str {
        intern_name("MaybeReadsBackward")
    }

    fn backward(
        &self,
        grads: &[Option<Variable>],
        saved: &SavedValues,
        _needs: &[bool],
    ) -> Result<Vec<Option<Variable>>> {
        assert_eq!(saved.len(), 1);
        if self.0.load(Ordering::SeqCst) {
            saved.unpack()?;
        }
        Ok(vec![grads[0].clone()])
    }
}

/// Saved tensors are version-checked when the backward reads them, as PyTorch's
/// `ctx.saved_tensors`: a backward that never reads a tensor written in place since
/// succeeds, one that reads it gets the in-place error naming the tensor's producer.
#[test]
fn saved_tensors_are_checked_when_read() {
    for reads in [false, true] {
        let x = leaf(&[0.5, 1.0], true);
        let y = x.mul_scalar(2.0).unwrap();
        let out = {
            let _guard = no_grad();
            y.clone_data().unwrap()
        };
        let saved = [Some(y.clone())];
        let options = CustomOptions {
            saved: &saved,
            ..CustomOptions::default()
        };
        let node = Arc::new(MaybeReads(AtomicBool::new(reads)));
        let z = Variable::record_custom(node, &[&y], &[out], options)
            .unwrap()
            .remove(0);
        y.relu_().unwrap();
        let result = z.sum().unwrap().backward();
        if reads {
            let message = result.unwrap_err().to_string();
            assert!(
                message.contains("modified by an inplace operation")
                    && message.contains("which is output 0 of MulBackward0"),
                "{message}"
            );
        } else {
            result.unwrap();
            assert_eq!(values(&x.grad().unwrap()), [2.0, 2.0]);
        }
    }
}

fn custom_sin(x: &Variable) -> Variable {
    let out = {
        let _guard = no_grad();
        x.sin().unwrap()
    };
    let saved = [Some(x.clone())];
    let options = CustomOptions {
        saved: &saved,
        ..CustomOptions::default()
    };
    Variable::record_custom(Arc::new(Sin), &[x], &[out], options)
        .unwrap()
        .remove(0)
}

#[test]
fn a_custom_op_is_one_named_node_with_the_inputs_edges() {
    let x = leaf(&[0.5, 1.0], true);
    let y = custom_sin(&x);
    assert_eq!(
        autograd::node_name(y.grad_fn().unwrap().id()).unwrap(),
        "SinFnBackward"
    );
    assert!(!y.is_leaf());
    assert_close(&values(&y), &[0.5f64.sin(), 1.0f64.sin()]);
    y.sum().unwrap().backward().unwrap();
    assert_close(&values(&x.grad().unwrap()), &[0.5f64.cos(), 1.0f64.cos()]);
}

#[test]
fn double_backward_goes_through_the_custom_backward() {
    let x = leaf(&[0.3, -0.7], true);
    let y = custom_sin(&x).sum().unwrap();
    let g =
        Variable::autograd_grad(&[y], std::slice::from_ref(&x), &[], true, true, false).unwrap();
    let g = g[0].clone().unwrap();
    assert_close(&values(&g), &[0.3f64.cos(), (-0.7f64).cos()]);
    let gg = Variable::autograd_grad(
        &[g.sum().unwrap()],
        std::slice::from_ref(&x),
        &[],
        false,
        false,
        false,
    )
    .unwrap();
    assert_close(
        &values(gg[0].as_ref().unwrap()),
        &[-(0.3f64.sin()), 0.7f64.sin()],
    );
}

#[test]
fn names_are_interned_once() {
    let a = intern_name("SomeClassBackward");
    let b = intern_name(&String::from("SomeClassBackward"));
    assert!(std::ptr::eq(a, b));
}

/// Returns whatever it was built with, to test the checks of returned gradients.
struct Returns(Vec<Option<Variable>>);

impl CustomBackward for Returns {
    fn name(&self) -> &'static str {
        "FBackward"
    }

    fn backward(
        &self,
        _grads: &[Option<Variable>],
        _saved: &SavedValues,
        _needs: &[bool],
    ) -> Result<Vec<Option<Variable>>> {
        Ok(self.0.clone())
    }
}

fn double_with(x: &Variable, backward: Returns) -> Variable {
    let out = {
        let _guard = no_grad();
        x.mul_scalar(2.0).unwrap()
    };
    Variable::record_custom(Arc::new(backward), &[x], &[out], CustomOptions::default())
        .unwrap()
        .remove(0)
}

#[test]
fn wrong_gradient_count_and_shape_are_pytorchs_errors() {
    let x = leaf(&[1.0, 2.0], true);
    let y = double_with(&x, Returns(vec![]));
    let err = y.sum().unwrap().backward().unwrap_err().to_string();
    assert_eq!(
        err,
        "function FBackward returned an incorrect number of gradients (expected 1, got 0)"
    );
    let y = double_with(&x, Returns(vec![Some(leaf(&[1.0, 1.0, 1.0], false))]));
    let err = y.sum().unwrap().backward().unwrap_err().to_string();
    assert_eq!(
        err,
        "Function FBackward returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]"
    );
}

#[test]
fn a_broadcast_gradient_is_summed_and_another_dtype_cast() {
    let x = leaf(&[1.0, 2.0], true);
    let wide = Variable::new(Tensor::ones(&[3, 2], DType::F32).unwrap(), false).unwrap();
    let y = double_with(&x, Returns(vec![Some(wide)]));
    y.sum().unwrap().backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.dtype(), DType::F64);
    assert_eq!(values(&g), vec![3.0, 3.0]);
}

/// Fails with an external error.
struct Fails;

impl CustomBackward for Fails {
    fn name(&self) -> &'static str {
        "FailsBackward"
    }

    fn backward(
        &self,
        _grads: &[Option<Variable>],
        _saved: &SavedValues,
        _needs: &[bool],
    ) -> Result<Vec<Option<Variable>>> {
        Err(Error::InvalidArgument("boom".into()))
    }
}

#[test]
fn an_error_in_the_backward_reaches_the_caller_and_the_engine_stays_usable() {
    let x = leaf(&[1.0], true);
    let out = {
        let _guard = no_grad();
        x.mul_scalar(2.0).unwrap()
    };
    let y = Variable::record_custom(Arc::new(Fails), &[&x], &[out], CustomOptions::default())
        .unwrap()
        .remove(0);
    assert_eq!(y.sum().unwrap().backward().unwrap_err().to_string(), "boom");
    let z = custom_sin(&x);
    z.sum().unwrap().backward().unwrap();
    assert_close(&values(&x.grad().unwrap()), &[1.0f64.cos()]);
}

#[test]
fn a_dirty_input_takes_the_node_as_its_history() {
    let x = leaf(&[1.0, 2.0], true);
    let a = x.mul_scalar(1.0).unwrap();
    let version = a.tensor().version();
    {
        let _guard = no_grad();
        a.add_(&leaf(&[1.0, 1.0], false)).unwrap();
    }
    let outs = Variable::record_custom(
        Arc::new(Returns(vec![Some(leaf(&[5.0, 7.0], false))])),
        &[&a],
        std::slice::from_ref(&a),
        CustomOptions {
            dirty: std::slice::from_ref(&a),
            ..CustomOptions::default()
        },
    )
    .unwrap();
    assert!(outs[0].same(&a));
    assert_eq!(a.tensor().version(), version + 1);
    assert_eq!(
        autograd::node_name(a.grad_fn().unwrap().id()).unwrap(),
        "FBackward"
    );
    a.sum().unwrap().backward().unwrap();
    assert_eq!(values(&x.grad().unwrap()), vec![5.0, 7.0]);

    // A leaf that requires grad cannot be dirty.
    let err = Variable::record_custom(
        Arc::new(Returns(vec![None])),
        &[&x],
        std::slice::from_ref(&x),
        CustomOptions {
            dirty: std::slice::from_ref(&x),
            ..CustomOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "a leaf Variable that requires grad has been used in an in-place operation."
    );
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len());
    for (a, e) in actual.iter().zip(expected) {
        assert!((a - e).abs() < 1e-12, "{actual:?} vs {expected:?}");
    }
}

#[test]
fn an_input_returned_as_is_is_a_view_that_refuses_in_place_writes() {
    let x = leaf(&[1.0, 2.0], true);
    let a = x.mul_scalar(1.0).unwrap();
    let outs = Variable::record_custom(
        Arc::new(Returns(vec![Some(leaf(&[4.0, 4.0], false))])),
        &[&a],
        std::slice::from_ref(&a),
        CustomOptions::default(),
    )
    .unwrap();
    let y = &outs[0];
    assert!(!y.same(&a));
    assert!(y.view_base().unwrap().same(&a));
    let err = y.add_(&leaf(&[1.0, 1.0], false)).unwrap_err().to_string();
    assert!(
        err.starts_with("Output 0 of F is a view and is being modified inplace. This view was created inside a custom Function"),
        "{err}"
    );
    assert_eq!(values(&a), vec![1.0, 2.0]);
    y.sum().unwrap().backward().unwrap();
    assert_eq!(values(&x.grad().unwrap()), vec![4.0, 4.0]);
}

/// `v *= w` on a view `v` of `b`, with `v` the op's second input and marked dirty:
/// `b`'s history becomes CopySlices around the node (whose first edge is the view's),
/// and the gradients reach `a` and `w` in the caller's order. Hand-derived: loss =
/// sum(b * [1, 2, 3, 4]) with b = a, b[1..3] *= w: d/da = [1, 2w, 3w, 4] = [1, 6, 9, 4],
/// d/dw = a[1] * 2 + a[2] * 3 = 4 + 9 = 13.
#[test]
fn a_dirty_view_is_written_through_its_base() {
    /// Returns `[sum(g * x_old), g * w]`: the view's old values are saved as `x_old`.
    struct MulInto;
    impl CustomBackward for MulInto {
        fn name(&self) -> &'static str {
            intern_name("MulIntoBackward")
        }
        fn backward(
            &self,
            grads: &[Option<Variable>],
            saved: &SavedValues,
            needs: &[bool],
        ) -> Result<Vec<Option<Variable>>> {
            assert_eq!(needs, &[true, true]);
            let saved = saved.unpack()?;
            let (x_old, w) = (saved[0].as_ref().unwrap(), saved[1].as_ref().unwrap());
            let g = grads[0].as_ref().unwrap();
            Ok(vec![Some(g.mul(x_old)?), Some(g.mul(w)?)])
        }
    }
    let a = leaf(&[1.0, 2.0, 3.0, 4.0], true);
    let w = leaf(&[3.0], true);
    let b = a.mul_scalar(1.0).unwrap();
    let v = b.narrow(0, 1, 2).unwrap();
    let x_old = {
        let _g = no_grad();
        let old = v.mul_scalar(1.0).unwrap();
        v.mul_(&w).unwrap();
        old
    };
    let saved = [Some(x_old), Some(w.detach())];
    let outs = Variable::record_custom(
        Arc::new(MulInto),
        &[&w, &v],
        std::slice::from_ref(&v),
        CustomOptions {
            dirty: std::slice::from_ref(&v),
            saved: &saved,
            ..CustomOptions::default()
        },
    )
    .unwrap();
    assert!(outs[0].same(&v));
    assert_eq!(
        autograd::node_name(b.grad_fn().unwrap().id()).unwrap(),
        "CopySlices"
    );
    let weights = Variable::new(
        Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]).unwrap(),
        false,
    )
    .unwrap();
    b.mul(&weights).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(values(&a.grad().unwrap()), vec![1.0, 6.0, 9.0, 4.0]);
    assert_eq!(values(&w.grad().unwrap()), vec![13.0]);

    // More than one output refuses, as PyTorch.
    let v = a.mul_scalar(1.0).unwrap().narrow(0, 0, 2).unwrap();
    let err = Variable::record_custom(
        Arc::new(MulInto),
        &[&w, &v],
        std::slice::from_ref(&v),
        CustomOptions {
            dirty: std::slice::from_ref(&v),
            other_outputs: 1,
            ..CustomOptions::default()
        },
    )
    .unwrap_err();
    assert!(err
        .to_string()
        .contains("your Function cannot return more than one Tensor"));
}
