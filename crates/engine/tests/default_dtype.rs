//! `DType::set_default_float` is process-global, so its test lives in its own test
//! binary (its own process) with a single test function: no other test can observe the
//! switch. See Note [Devices and default dtype].

use rustgrad::format::repr_tensor;
use rustgrad::{DType, Error, Scalar, Tensor, Variable};

#[test]
fn the_default_float_dtype_is_global_and_drives_every_default() {
    assert_eq!(DType::default_float(), DType::F32);
    for bad in [DType::I64, DType::Bool] {
        let err = DType::set_default_float(bad).unwrap_err();
        assert!(matches!(err, Error::Type(_)));
        assert_eq!(
            err.to_string(),
            "only floating-point types are supported as the default type"
        );
    }
    assert_eq!(DType::default_float(), DType::F32);

    DType::set_default_float(DType::F64).unwrap();
    assert_eq!(DType::default_float(), DType::F64);
    let ints = Variable::from_tensor(
        Tensor::arange_scalar(Scalar::Int(0), Scalar::Int(3), Scalar::Int(1), DType::I64).unwrap(),
    );
    // Python floats, wrapped scalars with int tensors, int division and float functions
    // of ints all take the default.
    assert_eq!(Scalar::Float(2.5).natural_dtype(), DType::F64);
    assert_eq!(ints.wrap_scalar(Scalar::Float(2.5)).dtype(), DType::F64);
    assert_eq!(ints.mul_scalar(2.5).unwrap().dtype(), DType::F64);
    assert_eq!(
        ints.div(&ints.wrap_scalar(Scalar::Int(2))).unwrap().dtype(),
        DType::F64
    );
    assert_eq!(ints.sqrt().unwrap().dtype(), DType::F64);
    // A float32 tensor keeps its dtype, and now prints it, as PyTorch's repr does.
    let f32s = Tensor::ones(&[2], DType::F32).unwrap();
    assert_eq!(
        Variable::from_tensor(f32s.clone())
            .mul_scalar(2.5)
            .unwrap()
            .dtype(),
        DType::F32
    );
    assert_eq!(
        repr_tensor(&f32s, None),
        "tensor([1., 1.], dtype=torch.float32)"
    );
    assert_eq!(
        repr_tensor(&Tensor::ones(&[2], DType::F64).unwrap(), None),
        "tensor([1., 1.])"
    );
    assert_eq!(
        repr_tensor(&Tensor::zeros(&[0], DType::F32).unwrap(), None),
        "tensor([], dtype=torch.float32)"
    );

    DType::set_default_float(DType::F32).unwrap();
    assert_eq!(ints.sqrt().unwrap().dtype(), DType::F32);
    assert_eq!(repr_tensor(&f32s, None), "tensor([1., 1.])");
}
