//! The storage dtypes through the Rust API: promotion, wrapping integer arithmetic,
//! conversions, float16 / bfloat16 compute and gradients, integer matmul. Expected values
//! are closed forms (two's complement wrapping, IEEE rounding) or PyTorch's documented
//! results (its promotion table); the full tables are in tests/vectors/dtype_ops.json.

use rustgrad::tensor::BinaryOp;
use rustgrad::{DType, Tensor, Variable};

fn ints(v: &[i64], dtype: DType) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()])
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

#[test]
fn promotion_is_pytorchs_table() {
    use DType::*;
    assert_eq!(DType::promote(U8, I8), I16);
    assert_eq!(DType::promote(I32, I64), I64);
    assert_eq!(DType::promote(I16, U8), I16);
    assert_eq!(DType::promote(F16, BF16), F32);
    assert_eq!(DType::promote(I64, F16), F16);
    assert_eq!(DType::promote(Bool, U8), U8);
    assert_eq!(DType::promote(BF16, F64), F64);
    // A 0-d operand of the same category never widens: uint8 + int64 scalar is uint8.
    assert_eq!(DType::result_type(U8, false, I64, true), U8);
    assert_eq!(DType::result_type(I32, false, F64, true), F64);
    let every = DType::ALL;
    for a in every {
        for b in every {
            assert_eq!(DType::promote(a, b), DType::promote(b, a), "{a:?} {b:?}");
        }
    }
}

#[test]
fn narrow_integers_wrap() {
    let a = ints(&[200, 100, 255], DType::U8);
    let b = ints(&[100, 200, 1], DType::U8);
    let sum = a.binary(&b, BinaryOp::Add).unwrap();
    assert_eq!(sum.dtype(), DType::U8);
    assert_eq!(sum.to_vec::<i64>(), vec![44, 44, 0]);
    let p = ints(&[100, -100, 127], DType::I8)
        .binary(&ints(&[2, 3, -1], DType::I8), BinaryOp::Mul)
        .unwrap();
    assert_eq!(p.to_vec::<i64>(), vec![-56, -44, -127]);
    // Sums of narrow integers are int64, not wrapped.
    let total = Variable::from_tensor(a).sum().unwrap();
    assert_eq!(total.dtype(), DType::I64);
    assert_eq!(total.to_vec::<i64>(), vec![555]);
    // True division of integers is the default float.
    let q = ints(&[1, 3], DType::I32)
        .binary(&ints(&[2, 2], DType::I32), BinaryOp::Div)
        .unwrap();
    assert_eq!(q.dtype(), DType::F32);
    assert_eq!(q.to_vec::<f64>(), vec![0.5, 1.5]);
}

#[test]
fn conversions_follow_x86_and_round_to_nearest_even() {
    let x = Tensor::from_vec(vec![300.0f64, -2.5, 5_000_000_007.0, 2049.0], &[4]).unwrap();
    assert_eq!(
        x.to_dtype(DType::U8).unwrap().to_vec::<i64>(),
        vec![44, 254, 7, 1]
    );
    assert_eq!(
        x.to_dtype(DType::I8).unwrap().to_vec::<i64>(),
        vec![44, -2, 0, 1]
    );
    assert_eq!(
        x.to_dtype(DType::I32).unwrap().to_vec::<i64>(),
        vec![300, -2, i32::MIN as i64, 2049]
    );
    // 2049 lies halfway between the float16 neighbours 2048 and 2050: even wins.
    assert_eq!(
        x.to_dtype(DType::F16).unwrap().to_vec::<f64>(),
        vec![300.0, -2.5, f64::INFINITY, 2048.0]
    );
    // 1 + 2^-8 is halfway between bfloat16's 1 and 1 + 2^-7.
    let y = Tensor::from_vec(vec![1.0 + 2f64.powi(-8), 1.0 + 3.0 * 2f64.powi(-8)], &[2]).unwrap();
    assert_eq!(
        y.to_dtype(DType::BF16).unwrap().to_vec::<f64>(),
        vec![1.0, 1.0 + 2.0 * 2f64.powi(-7)]
    );
}

#[test]
fn half_computes_in_float32_and_gradients_keep_the_dtype() {
    let x = Variable::new(
        Tensor::from_vec(vec![1.0f64, 2.0, -3.0], &[3])
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap(),
        true,
    )
    .unwrap();
    let y = x.mul(&x).unwrap().sum().unwrap();
    assert_eq!(y.dtype(), DType::F16);
    assert_eq!(y.to_vec::<f64>(), vec![14.0]);
    y.backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.dtype(), DType::F16);
    assert_eq!(g.to_vec::<f64>(), vec![2.0, 4.0, -6.0]);
    // exp(1) in float32, rounded once to float16: 2.71875.
    let e = x.exp().unwrap();
    assert_eq!(e.dtype(), DType::F16);
    assert_eq!(e.to_vec::<f64>()[0], 2.71875);
}

#[test]
fn integer_matmul_is_exact_with_wrapping() {
    let a = Variable::from_tensor(
        Tensor::from_vec(vec![1i64 << 62, 3, 2, 5], &[2, 2])
            .unwrap()
            .to_dtype(DType::I64)
            .unwrap(),
    );
    let b = Variable::from_tensor(Tensor::from_vec(vec![4i64, 1, 5, 2], &[2, 2]).unwrap());
    let c = a.matmul(&b).unwrap();
    // 2^64 wraps to 0: [[0 + 15, 2^62 + 6], [8 + 25, 2 + 10]].
    assert_eq!(c.to_vec::<i64>(), vec![15, (1i64 << 62) + 6, 33, 12]);
    let a8 = Variable::from_tensor(
        ints(&[100, 100, -128, 1], DType::I8)
            .reshape(&[2, 2])
            .unwrap(),
    );
    let b8 = Variable::from_tensor(ints(&[2, 0, 1, 1], DType::I8).reshape(&[2, 2]).unwrap());
    let c8 = a8.matmul(&b8).unwrap();
    assert_eq!(c8.dtype(), DType::I8);
    assert_eq!(c8.to_vec::<i64>(), vec![44, 100, -255i64 as i8 as i64, 1]);
    let mixed = a8.matmul(&Variable::from_tensor(
        ints(&[1, 2, 3, 4], DType::I64).reshape(&[2, 2]).unwrap(),
    ));
    let message = mixed.unwrap_err().to_string();
    assert!(
        message.contains(
            "expected m1 and m2 to have the same dtype, but got: signed char != long int"
        ),
        "{message}"
    );
}
