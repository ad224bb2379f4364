//! Engine-level rules behind the binding's scalar and dtype handling: exact integers
//! (Note [Exact scalars]), integer pow, NaN through clamp/relu, empty dim lists, dtype
//! checks of the random factories. Expected values are exact arithmetic or PyTorch's.

use rustgrad::{random, DType, Error, Scalar, Tensor, Variable};

const BIG: i64 = (1 << 53) + 1; // the first int64 that f64 cannot hold

#[test]
fn integer_scalars_are_exact() {
    let t = Tensor::full_scalar(&[2], Scalar::Int(BIG), DType::I64).unwrap();
    assert_eq!(t.to_vec::<i64>(), vec![BIG, BIG]);
    let x =
        Variable::from_tensor(Tensor::full_scalar(&[1], Scalar::Int(1 << 53), DType::I64).unwrap());
    let y = x.add(&x.wrap_scalar(Scalar::Int(1))).unwrap();
    assert_eq!(y.to_vec::<i64>(), vec![BIG]);
    let r = Tensor::arange_scalar(
        Scalar::Int(BIG),
        Scalar::Int(BIG + 3),
        Scalar::Int(2),
        DType::I64,
    )
    .unwrap();
    assert_eq!(r.to_vec::<i64>(), vec![BIG, BIG + 2]);
    assert!(Scalar::Float(f64::NAN).checked_cast::<i64>().is_err());
    assert!(Scalar::Float(9.3e18).checked_cast::<i64>().is_err());
    assert_eq!(Scalar::Float(-2.5).checked_cast::<i64>().unwrap(), -2);
}

#[test]
fn arange_rejects_non_finite_steps() {
    for step in [f64::NAN, f64::INFINITY] {
        let e = Tensor::arange(0.0, 1.0, step, DType::F32).unwrap_err();
        assert!(e.to_string().starts_with("step must be finite"), "{e}");
    }
}

#[test]
fn integer_pow_is_exact_and_wraps() {
    let x = Tensor::from_vec(vec![-1i64, 2, 3], &[3]).unwrap();
    let p = x.pow_scalar(Scalar::Int(1 << 32)).unwrap();
    // 3^(2^32) mod 2^64, computed with Python's pow(3, 2**32, 2**64).
    assert_eq!(p.to_vec::<i64>(), vec![1, 0, 2_491_309_678_558_969_857]);
    assert_eq!(
        x.pow_scalar(Scalar::Float(2.0)).unwrap().dtype(),
        DType::F32
    );
    assert!(x.pow_scalar(Scalar::Int(-1)).is_err());
}

#[test]
fn clamp_and_relu_propagate_nan() {
    let x = Tensor::from_vec(vec![f32::NAN, -1.0, 2.0], &[3]).unwrap();
    let c = x
        .clamp(Some(Scalar::Float(0.0)), Some(Scalar::Float(1.0)))
        .unwrap();
    let v = c.to_vec::<f32>();
    assert!(v[0].is_nan() && v[1] == 0.0 && v[2] == 1.0);
    let n = x.clamp(Some(Scalar::Float(f64::NAN)), None).unwrap();
    assert!(n.to_vec::<f32>().iter().all(|v| v.is_nan()));
    let r = Variable::from_tensor(x).relu().unwrap().to_vec::<f32>();
    assert!(r[0].is_nan() && r[1] == 0.0 && r[2] == 2.0);
    let ints = Tensor::from_vec(vec![1i64, 5], &[2]).unwrap();
    let f = ints.clamp(Some(Scalar::Float(2.5)), None).unwrap();
    assert_eq!((f.dtype(), f.to_vec::<f32>()), (DType::F32, vec![2.5, 5.0]));
}

#[test]
fn an_empty_dim_list_reduces_every_dim() {
    let x = Variable::from_tensor(Tensor::ones(&[2, 3], DType::F32).unwrap());
    let s = x.sum_dims(&[], false).unwrap();
    assert_eq!(
        (s.shape().as_slice(), s.to_vec::<f32>()),
        (&[][..], vec![6.0])
    );
    assert_eq!(x.mean_dims(&[], true).unwrap().shape().as_slice(), &[1, 1]);
}

#[test]
fn random_factories_refuse_integer_dtypes() {
    assert!(
        matches!(random::rand(&[2], DType::I64), Err(Error::NoKernel(m)) if m.contains("check_uniform_bounds"))
    );
    assert!(
        matches!(random::randn(&[0], DType::Bool), Err(Error::NoKernel(m)) if m.contains("normal_kernel_cpu"))
    );
}

#[test]
fn a_wrapped_bool_is_a_bool_operand() {
    // PyTorch wraps a Python bool as a bool tensor: it never changes the result type,
    // and subtraction refuses it as it refuses a bool tensor.
    let x = Variable::from_tensor(Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap());
    let t = x.wrap_scalar(Scalar::Bool(true));
    assert_eq!(t.dtype(), DType::Bool);
    assert_eq!(x.add(&t).unwrap().dtype(), DType::F32);
    assert_eq!(x.add(&t).unwrap().to_vec::<f32>(), vec![2.0, 3.0]);
    for e in [x.sub(&t).unwrap_err(), x.rsub(&t).unwrap_err()] {
        assert!(
            e.to_string()
                .contains("with a bool tensor is not supported"),
            "{e}"
        );
    }
}
