//! The Rust API of the shape, movement and indexing ops, on hand-picked cases whose
//! values and gradients are written out by hand (closed forms, not the code under test).

use rustgrad::{DType, Error, Tensor, Variable};

fn leaf(data: &[f64], shape: &[usize]) -> Variable {
    Variable::new(Tensor::from_vec(data.to_vec(), shape).unwrap(), true).unwrap()
}

fn index(data: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

fn values(v: &Variable) -> Vec<f64> {
    v.to_vec::<f64>()
}

/// Backpropagates `weights · out` (distinct weights show where each gradient went).
fn backward_weighted(out: &Variable, weights: &[f64]) {
    let w = Variable::from_tensor(Tensor::from_vec(weights.to_vec(), &out.shape()).unwrap());
    out.mul(&w).unwrap().sum().unwrap().backward().unwrap();
}

#[test]
fn cat_and_stack_route_gradients_back_to_their_inputs() {
    let a = leaf(&[1.0, 2.0], &[1, 2]);
    let b = leaf(&[3.0, 4.0, 5.0, 6.0], &[2, 2]);
    let c = Variable::cat(&[a.clone(), b.clone()], 0).unwrap();
    assert_eq!(c.shape().as_slice(), &[3, 2]);
    assert_eq!(values(&c), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    backward_weighted(&c, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(values(&a.grad().unwrap()), [1.0, 2.0]);
    assert_eq!(values(&b.grad().unwrap()), [3.0, 4.0, 5.0, 6.0]);

    let x = leaf(&[1.0, 2.0], &[2]);
    let y = leaf(&[3.0, 4.0], &[2]);
    let s = Variable::stack(&[x.clone(), y.clone()], 1).unwrap();
    assert_eq!(values(&s), [1.0, 3.0, 2.0, 4.0]);
    let node = s.grad_fn().unwrap().id();
    assert_eq!(
        rustgrad::autograd::graph::node_name(node).unwrap(),
        "StackBackward0"
    );
    backward_weighted(&s, &[10.0, 20.0, 30.0, 40.0]);
    assert_eq!(values(&x.grad().unwrap()), [10.0, 30.0]);
    assert_eq!(values(&y.grad().unwrap()), [20.0, 40.0]);
}

#[test]
fn cat_refuses_mismatched_shapes_with_pytorchs_message() {
    let a = leaf(&[0.0; 6], &[2, 3]);
    let b = leaf(&[0.0; 8], &[2, 4]);
    let err = Variable::cat(&[a, b], 0).unwrap_err();
    assert!(err
        .to_string()
        .contains("Sizes of tensors must match except in dimension 0"));
}

#[test]
fn flip_roll_and_repeat_permute_elements() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    assert_eq!(
        values(&x.flip(&[1]).unwrap()),
        [3.0, 2.0, 1.0, 6.0, 5.0, 4.0]
    );
    assert_eq!(
        values(&x.roll(&[1], &[1]).unwrap()),
        [3.0, 1.0, 2.0, 6.0, 4.0, 5.0]
    );
    assert_eq!(
        values(&x.roll(&[2], &[]).unwrap()),
        [5.0, 6.0, 1.0, 2.0, 3.0, 4.0]
    );
    let r = x.repeat(&[1, 2]).unwrap();
    assert_eq!(r.shape().as_slice(), &[2, 6]);
    // Each input element appears twice, so its gradient is the sum of two weights.
    backward_weighted(
        &r,
        &[
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
        ],
    );
    assert_eq!(
        values(&x.grad().unwrap()),
        [5.0, 7.0, 9.0, 17.0, 19.0, 21.0]
    );
}

#[test]
fn gather_backward_adds_up_repeated_indices() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let g = x.gather(0, &index(&[2, 2, 0], &[3])).unwrap();
    assert_eq!(values(&g), [3.0, 3.0, 1.0]);
    backward_weighted(&g, &[1.0, 10.0, 100.0]);
    assert_eq!(values(&x.grad().unwrap()), [100.0, 0.0, 11.0]);
}

#[test]
fn out_of_range_indices_are_errors() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    assert!(matches!(
        x.gather(0, &index(&[3], &[1])),
        Err(Error::InvalidArgument(m)) if m == "index 3 is out of bounds for dimension 0 with size 3"
    ));
    assert!(matches!(
        x.index_select(0, &index(&[i64::MIN], &[1])),
        Err(Error::Index(m)) if m == "index out of range in self"
    ));
    assert!(x.take(&index(&[-4], &[1])).is_err());
    assert!(x.index(&[Some(index(&[5], &[1]))]).is_err());
    let float_index = Tensor::from_vec(vec![0.0f64], &[1]).unwrap();
    assert!(x.gather(0, &float_index).is_err());
}

#[test]
fn tril_and_diagonal_select_the_triangle_and_the_diagonal() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], &[3, 3]);
    assert_eq!(
        values(&x.tril_triu(0, false).unwrap()),
        [1.0, 0.0, 0.0, 4.0, 5.0, 0.0, 7.0, 8.0, 9.0]
    );
    let d = x.diagonal(1, 0, 1).unwrap();
    assert_eq!(values(&d), [2.0, 6.0]);
    backward_weighted(&d, &[1.0, 2.0]);
    assert_eq!(
        values(&x.grad().unwrap()),
        [0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0]
    );
}

#[test]
fn advanced_index_and_index_put() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let picked = x
        .index(&[Some(index(&[1, 0], &[2])), Some(index(&[2, 2], &[2]))])
        .unwrap();
    assert_eq!(values(&picked), [6.0, 3.0]);
    let buf = Variable::from_tensor(Tensor::zeros(&[2, 3], DType::F64).unwrap());
    let v = Variable::from_tensor(Tensor::from_vec(vec![7.0, 8.0], &[2]).unwrap());
    buf.index_put_(&[None, Some(index(&[0, 2], &[2]))], &v, true)
        .unwrap();
    assert_eq!(values(&buf), [7.0, 0.0, 8.0, 7.0, 0.0, 8.0]);
}

#[test]
fn split_and_unbind_give_views_of_the_pieces() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    let parts = x.split(2, 0).unwrap();
    let sizes: Vec<usize> = parts.iter().map(|p| p.numel()).collect();
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(values(&parts[2]), [5.0]);
    let m = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let cols = m.unbind(1).unwrap();
    assert_eq!(values(&cols[1]), [2.0, 4.0]);
}
