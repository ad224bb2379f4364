//! The Rust API of the elementwise math ops, activations and binary math functions
//! (`ops/unary.rs`, `ops/binary.rs`): values and gradients at hand-picked points
//! against closed forms, dtype rules, and second derivatives through `create_graph`.

use rustgrad::kernels::math::{MathBinaryOp, MathOp};
use rustgrad::{DType, Error, Scalar, Tensor, Variable};
use std::f64::consts::{FRAC_2_SQRT_PI, PI};

fn leaf(values: &[f64]) -> Variable {
    Variable::new(
        Tensor::from_vec(values.to_vec(), &[values.len()]).unwrap(),
        true,
    )
    .unwrap()
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "{got:?} != {want:?}"
        );
    }
}

/// `d/dx sum(f(x))` at `values`.
fn gradient(values: &[f64], f: impl Fn(&Variable) -> rustgrad::Result<Variable>) -> Vec<f64> {
    let x = leaf(values);
    f(&x).unwrap().sum().unwrap().backward().unwrap();
    x.grad().unwrap().to_vec::<f64>()
}

#[test]
fn trigonometric_and_exponential_functions_and_their_gradients() {
    let xs = [0.3, -0.6, 0.9];
    let x = leaf(&xs);
    close(&x.sin().unwrap().to_vec(), &xs.map(f64::sin));
    close(&gradient(&xs, Variable::sin), &xs.map(f64::cos));
    close(
        &gradient(&xs, Variable::asin),
        &xs.map(|v| 1.0 / (1.0 - v * v).sqrt()),
    );
    close(
        &gradient(&xs, Variable::tan),
        &xs.map(|v| 1.0 / v.cos().powi(2)),
    );
    close(
        &gradient(&xs, Variable::exp2),
        &xs.map(|v| v.exp2() * 2f64.ln()),
    );
    close(
        &gradient(&xs, Variable::log1p),
        &xs.map(|v| 1.0 / (1.0 + v)),
    );
    close(
        &gradient(&xs, Variable::erf),
        &xs.map(|v| FRAC_2_SQRT_PI * (-v * v).exp()),
    );
    // erfinv' = sqrt(pi)/2 * exp(erfinv(x)^2), and erf(erfinv(x)) = x.
    let y = x.erfinv().unwrap();
    close(&y.erf().unwrap().to_vec(), &xs);
    let ys = y.to_vec::<f64>();
    close(
        &gradient(&xs, Variable::erfinv),
        &ys.iter()
            .map(|v| PI.sqrt() / 2.0 * (v * v).exp())
            .collect::<Vec<_>>(),
    );
    let node = y.grad_fn().unwrap().id();
    assert_eq!(
        rustgrad::autograd::node_name(node).unwrap(),
        "ErfinvBackward0"
    );
}

#[test]
fn second_derivatives_flow_through_the_rules() {
    // d2/dx2 sin = -sin, d2/dx2 rsqrt = 3/4 x^-5/2, d2/dx2 silu via finite differences.
    for (f, second) in [
        (
            Variable::sin as fn(&Variable) -> rustgrad::Result<Variable>,
            (|v: f64| -v.sin()) as fn(f64) -> f64,
        ),
        (Variable::rsqrt, |v: f64| 0.75 * v.powf(-2.5)),
        (Variable::reciprocal, |v: f64| 2.0 / v.powi(3)),
    ] {
        let xs = [0.4, 1.3];
        let x = leaf(&xs);
        let y = f(&x).unwrap().sum().unwrap();
        y.backward_with(None, true, true).unwrap();
        let g = x.grad().unwrap();
        x.set_grad(None).unwrap();
        g.sum().unwrap().backward().unwrap();
        close(&x.grad().unwrap().to_vec::<f64>(), &xs.map(second));
    }
}

#[test]
fn activations_match_their_definitions() {
    let xs = [-2.5, -0.5, 0.5, 4.0, 7.0];
    let x = leaf(&xs);
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    close(&x.silu().unwrap().to_vec(), &xs.map(|v| v * sig(v)));
    close(&x.log_sigmoid().unwrap().to_vec(), &xs.map(|v| sig(v).ln()));
    close(&x.relu6().unwrap().to_vec(), &xs.map(|v| v.clamp(0.0, 6.0)));
    close(
        &x.elu(2.0).unwrap().to_vec(),
        &xs.map(|v| if v > 0.0 { v } else { 2.0 * v.exp_m1() }),
    );
    close(
        &x.hardswish().unwrap().to_vec(),
        &xs.map(|v| v * (v + 3.0).clamp(0.0, 6.0) / 6.0),
    );
    close(
        &x.softplus(2.0, 3.0).unwrap().to_vec(),
        &xs.map(|v| {
            if 2.0 * v > 3.0 {
                v
            } else {
                (2.0 * v).exp().ln_1p() / 2.0
            }
        }),
    );
    // Gradients: the slope on each side of the kinks; 0 beyond hardtanh's bounds.
    close(
        &gradient(&xs, |x| x.leaky_relu(0.1)),
        &[0.1, 0.1, 1.0, 1.0, 1.0],
    );
    close(
        &gradient(&xs, |x| x.hardtanh(-1.0, 5.0)),
        &[0.0, 1.0, 1.0, 1.0, 0.0],
    );
    close(
        &gradient(&xs, Variable::hardsigmoid),
        &[1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 0.0, 0.0],
    );
    close(
        &gradient(&xs, Variable::silu),
        &xs.map(|v| sig(v) * (1.0 + v * (1.0 - sig(v)))),
    );
    assert!(matches!(x.celu(0.0), Err(Error::InvalidArgument(_))));
}

#[test]
fn dtype_rules() {
    let ints = Variable::from_tensor(Tensor::from_vec(vec![1i64, -2, 3], &[3]).unwrap());
    assert_eq!(ints.sin().unwrap().dtype(), DType::F32);
    assert_eq!(ints.floor().unwrap().dtype(), DType::I64);
    assert_eq!(ints.square().unwrap().to_vec::<i64>(), vec![1, 4, 9]);
    assert_eq!(
        ints.hardtanh(-1.5, 2.5).unwrap().to_vec::<i64>(),
        vec![1, -1, 2]
    );
    assert!(matches!(ints.frac(), Err(Error::NoKernel(_))));
    assert!(matches!(ints.gelu(false), Err(Error::NoKernel(_))));
    let bools = Variable::from_tensor(Tensor::from_vec(vec![true, false], &[2]).unwrap());
    assert!(matches!(bools.floor(), Err(Error::NoKernel(_))));
    assert_eq!(bools.exp2().unwrap().dtype(), DType::F32);
    let zero_divisor = Variable::from_tensor(Tensor::from_vec(vec![2i64, 0, 1], &[3]).unwrap());
    assert!(matches!(
        ints.fmod(&zero_divisor),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(
        ints.math_binary_scalar(Scalar::Int(2), MathBinaryOp::Remainder)
            .unwrap()
            .to_vec::<i64>(),
        vec![1, 0, 1]
    );
    assert_eq!(
        Tensor::scalar(2.5, DType::F64)
            .math(MathOp::Round { decimals: 0 })
            .unwrap()
            .to_vec::<f64>(),
        vec![2.0]
    );
}

#[test]
fn binary_gradients() {
    let (xs, ys) = ([1.5, -2.0, 3.0], [1.0, 2.0, 3.0]);
    let (x, y) = (leaf(&xs), leaf(&ys));
    x.atan2(&y).unwrap().sum().unwrap().backward().unwrap();
    let r2: Vec<f64> = xs.iter().zip(&ys).map(|(a, b)| a * a + b * b).collect();
    close(
        &x.grad().unwrap().to_vec::<f64>(),
        &[1.0 / r2[0], 2.0 / r2[1], 3.0 / r2[2]],
    );
    close(
        &y.grad().unwrap().to_vec::<f64>(),
        &[-1.5 / r2[0], 2.0 / r2[1], -3.0 / r2[2]],
    );

    let (x, y) = (leaf(&xs), leaf(&ys));
    x.maximum(&y).unwrap().sum().unwrap().backward().unwrap();
    close(&x.grad().unwrap().to_vec::<f64>(), &[1.0, 0.0, 0.5]);
    close(&y.grad().unwrap().to_vec::<f64>(), &[0.0, 1.0, 0.5]);

    // remainder: d/da = 1, d/db = -floor(a / b).
    let (x, y) = (leaf(&[7.5, -7.5]), leaf(&[2.0, 2.0]));
    let r = x.remainder(&y).unwrap();
    close(&r.to_vec::<f64>(), &[1.5, 0.5]);
    r.sum().unwrap().backward().unwrap();
    close(&x.grad().unwrap().to_vec::<f64>(), &[1.0, 1.0]);
    close(&y.grad().unwrap().to_vec::<f64>(), &[-3.0, 4.0]);
}

#[test]
fn three_operand_values_and_gradients() {
    // lerp with a tensor weight: d/da = 1 - w, d/dend = w, d/dw = end - a.
    let (a, end, w) = (leaf(&[1.0, -2.0]), leaf(&[3.0, 2.0]), leaf(&[0.25, 0.75]));
    let out = a.lerp(&end, &w).unwrap();
    close(&out.to_vec::<f64>(), &[1.5, 1.0]);
    out.sum().unwrap().backward().unwrap();
    close(&a.grad().unwrap().to_vec::<f64>(), &[0.75, 0.25]);
    close(&end.grad().unwrap().to_vec::<f64>(), &[0.25, 0.75]);
    close(&w.grad().unwrap().to_vec::<f64>(), &[2.0, 4.0]);

    // addcdiv: a + v * t1 / t2; d/dt2 = -v * t1 / t2^2.
    let (a, t1, t2) = (leaf(&[1.0, 1.0]), leaf(&[2.0, 3.0]), leaf(&[4.0, -1.0]));
    let out = a.addcdiv(&t1, &t2, Scalar::Float(2.0)).unwrap();
    close(&out.to_vec::<f64>(), &[2.0, -5.0]);
    out.sum().unwrap().backward().unwrap();
    close(&t1.grad().unwrap().to_vec::<f64>(), &[0.5, -2.0]);
    close(&t2.grad().unwrap().to_vec::<f64>(), &[-0.25, -6.0]);

    // addcmul on int64 converts `value` to the dtype (0.5 -> 0), as PyTorch does.
    let ints = Variable::from_tensor(Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap());
    let out = ints.addcmul(&ints, &ints, Scalar::Float(0.5)).unwrap();
    assert_eq!(out.dtype(), DType::I64);
    assert_eq!(out.tensor().to_vec::<i64>(), vec![1, 2, 3]);

    // clamp with tensor bounds: ties split (min < max), min > max gives max.
    let x = leaf(&[0.0, 1.0, 1.5, 5.0]);
    let (lo, hi) = (leaf(&[1.0, 1.0, 1.0, 3.0]), leaf(&[2.0, 2.0, 2.0, 2.0]));
    let out = x.clamp_tensor(Some(&lo), Some(&hi)).unwrap();
    close(&out.to_vec::<f64>(), &[1.0, 1.0, 1.5, 2.0]);
    out.sum().unwrap().backward().unwrap();
    close(&x.grad().unwrap().to_vec::<f64>(), &[0.0, 0.5, 1.0, 0.0]);
    close(&lo.grad().unwrap().to_vec::<f64>(), &[1.0, 0.5, 0.0, 0.0]);
    close(&hi.grad().unwrap().to_vec::<f64>(), &[0.0, 0.0, 0.0, 1.0]);
    assert!(matches!(
        x.clamp_tensor(None, None),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn predicates_logical_and_bitwise() {
    use rustgrad::kernels::logical::{FloatClass, LogicalOp};
    let x = Variable::from_tensor(
        Tensor::from_vec(vec![1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY], &[4]).unwrap(),
    );
    let class = |c| x.is_class(c).unwrap().tensor().to_vec::<bool>();
    assert_eq!(class(FloatClass::Nan), [false, true, false, false]);
    assert_eq!(class(FloatClass::Finite), [true, false, false, false]);
    assert_eq!(class(FloatClass::NegInf), [false, false, false, true]);
    let cleaned = x.nan_to_num(None, Some(5.0), None).unwrap();
    assert_eq!(cleaned.to_vec::<f64>(), [1.0, 0.0, 5.0, f64::MIN]);

    let ints = |v: Vec<i64>| Variable::from_tensor(Tensor::from_vec(v, &[3]).unwrap());
    let (a, b) = (ints(vec![12, -2, 0]), ints(vec![6, 6, 6]));
    let and = a.bitwise(&b, LogicalOp::And).unwrap();
    assert_eq!(and.tensor().to_vec::<i64>(), [4, 6, 0]);
    assert_eq!(
        a.bitwise_not().unwrap().tensor().to_vec::<i64>(),
        [-13, 1, -1]
    );
    let l = a.logical(&b, LogicalOp::Xor).unwrap();
    assert_eq!(l.dtype(), DType::Bool);
    assert_eq!(l.tensor().to_vec::<bool>(), [false, false, true]);
    assert!(matches!(
        x.bitwise(&x, LogicalOp::Or),
        Err(Error::NoKernel(m)) if m == "\"bitwise_or_cpu\" not implemented for 'Double'"
    ));
}

#[test]
fn hypot_and_logaddexp_gradients() {
    let (x, y) = (leaf(&[3.0, -5.0]), leaf(&[4.0, 12.0]));
    let h = x.math_binary(&y, MathBinaryOp::Hypot).unwrap();
    close(&h.to_vec::<f64>(), &[5.0, 13.0]);
    h.sum().unwrap().backward().unwrap();
    close(&x.grad().unwrap().to_vec::<f64>(), &[0.6, -5.0 / 13.0]);
    close(&y.grad().unwrap().to_vec::<f64>(), &[0.8, 12.0 / 13.0]);

    // d/da logaddexp(a, b) = sigmoid(a - b).
    let (x, y) = (leaf(&[0.5, -1.0]), leaf(&[0.5, 2.0]));
    let l = x.math_binary(&y, MathBinaryOp::Logaddexp).unwrap();
    close(
        &l.to_vec::<f64>(),
        &[0.5 + 2f64.ln(), (1f64.exp().recip() + 2f64.exp()).ln()],
    );
    l.sum().unwrap().backward().unwrap();
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    close(&x.grad().unwrap().to_vec::<f64>(), &[0.5, sigmoid(-3.0)]);
    close(&y.grad().unwrap().to_vec::<f64>(), &[0.5, sigmoid(3.0)]);
    let ints = Variable::from_tensor(Tensor::from_vec(vec![1i64], &[1]).unwrap());
    assert!(matches!(
        ints.math_binary(&ints, MathBinaryOp::Logaddexp2),
        Err(Error::NoKernel(_))
    ));
}

#[test]
fn division_with_rounding() {
    let x = leaf(&[-7.5, 7.5, 1.0]);
    let y = leaf(&[2.0, -2.0, 0.5]);
    let floor = x.math_binary(&y, MathBinaryOp::DivFloor).unwrap();
    close(&floor.to_vec::<f64>(), &[-4.0, -4.0, 2.0]);
    let trunc = x.math_binary(&y, MathBinaryOp::DivTrunc).unwrap();
    close(&trunc.to_vec::<f64>(), &[-3.0, -3.0, 2.0]);
    floor.sum().unwrap().backward().unwrap();
    close(&x.grad().unwrap().to_vec::<f64>(), &[0.0, 0.0, 0.0]);
    let ints = |v: Vec<i64>| Variable::from_tensor(Tensor::from_vec(v, &[2]).unwrap());
    let q = ints(vec![-7, 7]).floor_divide(&ints(vec![2, -2])).unwrap();
    assert_eq!(q.tensor().to_vec::<i64>(), [-4, -4]);
    assert!(ints(vec![1, 2]).floor_divide(&ints(vec![1, 0])).is_err());
}
