//! The samplers of Note [Random samplers] through the Rust API, against values
//! PyTorch 2.15 gives for the same seeds (`torch.Generator().manual_seed(s)`) and
//! closed forms.

use rustgrad::random::{self, Distribution, Generator};
use rustgrad::{DType, Tensor, Variable};

#[test]
fn exponential_is_the_transform_of_double_uniforms() -> rustgrad::Result<()> {
    // exponential_(3) draws one double uniform u per element: (-1/3) * log1p(-u).
    let uniforms = Generator::new(0).rand(&[50], DType::F64)?.to_vec::<f64>();
    let v = Variable::from_tensor(Tensor::zeros(&[50], DType::F64).unwrap());
    random::sample_(&v, Distribution::Exponential(3.0), &Generator::new(0))?;
    let want: Vec<f64> = uniforms
        .iter()
        .map(|u| (-1.0 / 3.0) * (-u).ln_1p())
        .collect();
    assert_eq!(v.to_vec::<f64>(), want);
    Ok(())
}

#[test]
fn random_matches_pytorch() -> rustgrad::Result<()> {
    // torch.zeros(4, dtype=torch.int64).random_(10, generator=torch.Generator().manual_seed(0))
    let v = Variable::from_tensor(Tensor::zeros(&[4], DType::I64).unwrap());
    random::sample_(
        &v,
        Distribution::RandomFromTo(0, Some(10)),
        &Generator::new(0),
    )?;
    assert_eq!(v.to_vec::<i64>(), [4, 9, 3, 0]);
    // Bool: "to - 1 is out of bounds for bool".
    let b = Variable::from_tensor(Tensor::zeros(&[2], DType::Bool).unwrap());
    let err = random::sample_(
        &b,
        Distribution::RandomFromTo(0, Some(3)),
        &Generator::new(0),
    );
    assert!(err
        .unwrap_err()
        .to_string()
        .contains("to - 1 is out of bounds for bool"));
    Ok(())
}

#[test]
fn multinomial_checks_and_shapes() -> rustgrad::Result<()> {
    let gen = Generator::new(1);
    let w = Tensor::from_vec(vec![0.0f32, 1.0, 0.0, 0.0, 0.0, 2.0], &[2, 3])?;
    // Only one category has weight per row, so every draw picks it.
    let with = gen.multinomial(&w, 4, true)?;
    assert_eq!(with.shape(), &[2, 4]);
    assert_eq!(with.to_vec::<i64>(), [1, 1, 1, 1, 2, 2, 2, 2]);
    let one = gen.multinomial(&w, 1, false)?;
    assert_eq!(one.to_vec::<i64>(), [1, 2]);
    assert!(gen.multinomial(&w, 4, false).is_err());
    let negative = Tensor::from_vec(vec![0.5f64, -0.1], &[2])?;
    assert!(gen.multinomial(&negative, 1, false).is_err());
    Ok(())
}
