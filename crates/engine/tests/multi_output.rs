//! Multi-output nodes (Note [Multi-output nodes]): `split`, `split_with_sizes`, `chunk`,
//! `unbind`, `var_mean` and `std_mean` record ONE node whose outputs are the results.
//! Expected gradients are closed forms written out by hand.

use rustgrad::autograd::{self, node_name, num_outputs};
use rustgrad::{Error, Tensor, Variable};

fn leaf(data: &[f64], shape: &[usize]) -> Variable {
    Variable::new(Tensor::from_vec(data.to_vec(), shape).unwrap(), true).unwrap()
}

fn constant(data: &[f64], shape: &[usize]) -> Variable {
    Variable::from_tensor(Tensor::from_vec(data.to_vec(), shape).unwrap())
}

fn grad_of(x: &Variable) -> Vec<f64> {
    x.grad().expect("a gradient").to_vec::<f64>()
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
    }
}

/// Pieces share one node, numbered by `output_nr`, with one edge to the input.
#[test]
fn the_pieces_of_a_split_are_the_outputs_of_one_node() -> rustgrad::Result<()> {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    for (parts, name) in [
        (x.split(2, 0)?, "SplitBackward0"),
        (x.chunk(3, 0)?, "SplitBackward0"),
        (x.split_with_sizes(&[1, 4], 0)?, "SplitWithSizesBackward0"),
        (x.unbind(0)?, "UnbindBackward0"),
    ] {
        let id = parts[0].grad_fn().unwrap().id();
        assert_eq!(node_name(id)?, name);
        assert_eq!(num_outputs(id)?, parts.len());
        for (i, p) in parts.iter().enumerate() {
            assert_eq!(p.grad_fn().unwrap().id(), id);
            assert_eq!(p.output_nr(), i as u32);
        }
        let next = autograd::next_functions(id)?;
        assert_eq!(next.len(), 1);
        let (acc, input_nr) = next[0].as_ref().unwrap();
        assert_eq!((node_name(acc.id())?, *input_nr), ("AccumulateGrad", 0));
    }
    let (v, m) = x.var_mean(None, 1.0, false)?;
    let id = v.grad_fn().unwrap().id();
    assert_eq!(node_name(id)?, "VarMeanBackward0");
    assert_eq!(m.grad_fn().unwrap().id(), id);
    assert_eq!((v.output_nr(), m.output_nr()), (0, 1));
    let (s, _) = x.std_mean(None, 1.0, false)?;
    assert_eq!(node_name(s.grad_fn().unwrap().id())?, "StdMeanBackward0");
    Ok(())
}

/// Backward from some pieces only: the others' gradients are undefined and count as
/// zeros; gradients of one piece used twice are summed in its slot.
#[test]
fn partial_backward_gives_zeros_for_the_other_pieces() -> rustgrad::Result<()> {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[6]);
    let parts = x.split(2, 0)?;
    parts[1]
        .mul(&constant(&[7.0, 8.0], &[2]))?
        .sum()?
        .backward()?;
    close(&grad_of(&x), &[0.0, 0.0, 7.0, 8.0, 0.0, 0.0]);

    let y = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[6]);
    let p = y.split(2, 0)?;
    let loss = p[0]
        .mul_scalar(2.0)?
        .add(&p[0].mul_scalar(3.0)?)?
        .sum()?
        .add(&p[2].sum()?)?;
    loss.backward()?;
    close(&grad_of(&y), &[5.0, 5.0, 0.0, 0.0, 1.0, 1.0]);

    let m = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let cols = m.unbind(1)?;
    cols[2]
        .mul(&constant(&[10.0, 20.0], &[2]))?
        .sum()?
        .backward()?;
    close(&grad_of(&m), &[0.0, 0.0, 10.0, 0.0, 0.0, 20.0]);
    Ok(())
}

/// Gradients of gradients flow through the multi-output rule (cat of the pieces).
#[test]
fn double_backward_through_a_split() -> rustgrad::Result<()> {
    let data = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x = leaf(&data, &[6]);
    let p = x.split(2, 0)?;
    // loss = sum(p0^3) + sum(p2^2): dloss/dx = [3x^2, 3x^2, 0, 0, 2x, 2x].
    let loss = p[0]
        .pow_scalar(3.0)?
        .sum()?
        .add(&p[2].pow_scalar(2.0)?.sum()?)?;
    loss.backward_with(None, false, true)?;
    let g = x.grad().unwrap();
    close(&g.to_vec::<f64>(), &[3.0, 12.0, 0.0, 0.0, 10.0, 12.0]);
    assert!(g.requires_grad());
    x.set_grad(None)?;
    g.sum()?.backward()?;
    close(&grad_of(&x), &[6.0, 12.0, 0.0, 0.0, 2.0, 2.0]);
    Ok(())
}

/// var_mean / std_mean: either output alone, or both, against the closed forms
/// d var / dx = 2 (x - mean) / (n - 1), d mean / dx = 1 / n, d std / dx = (x - mean) /
/// ((n - 1) std).
#[test]
fn var_mean_and_std_mean_gradients() -> rustgrad::Result<()> {
    let data = [1.0, 2.0, 4.0, 9.0];
    let (n, mean) = (4.0, 4.0);
    let var: f64 = data.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    let dvar: Vec<f64> = data.iter().map(|v| 2.0 * (v - mean) / (n - 1.0)).collect();
    let dstd: Vec<f64> = data
        .iter()
        .map(|v| (v - mean) / ((n - 1.0) * var.sqrt()))
        .collect();

    let x = leaf(&data, &[4]);
    let (v, m) = x.var_mean(None, 1.0, false)?;
    close(&v.to_vec::<f64>(), &[var]);
    close(&m.to_vec::<f64>(), &[mean]);
    v.backward()?;
    close(&grad_of(&x), &dvar);

    let x = leaf(&data, &[4]);
    let (_, m) = x.var_mean(None, 1.0, false)?;
    m.mul_scalar(2.0)?.backward()?;
    close(&grad_of(&x), &[0.5; 4]);

    let x = leaf(&data, &[4]);
    let (s, m) = x.std_mean(None, 1.0, false)?;
    close(&s.to_vec::<f64>(), &[var.sqrt()]);
    s.add(&m.mul_scalar(3.0)?)?.backward()?;
    let expected: Vec<f64> = dstd.iter().map(|d| d + 0.75).collect();
    close(&grad_of(&x), &expected);

    // Over a dim, keepdim: rows [1, 3] and [2, 6]; correction 0 → var = ((x-m)^2)/2.
    let x = leaf(&[1.0, 3.0, 2.0, 6.0], &[2, 2]);
    let (v, m) = x.var_mean(Some(&[1]), 0.0, true)?;
    assert_eq!(v.shape().as_slice(), &[2, 1]);
    close(&v.to_vec::<f64>(), &[1.0, 4.0]);
    close(&m.to_vec::<f64>(), &[2.0, 4.0]);
    v.add(&m)?.sum()?.backward()?;
    // d var / dx = (x - mean), d mean / dx = 1/2.
    close(&grad_of(&x), &[-0.5, 1.5, -1.5, 2.5]);
    Ok(())
}

/// Writing a piece in place while recording is refused with PyTorch's message; so is a
/// view of a piece; without grad (or a base that needs none) it is allowed.
#[test]
fn pieces_may_not_be_modified_in_place_while_recording() -> rustgrad::Result<()> {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let y = x.mul_scalar(1.0)?;
    let two = constant(&[2.0], &[1]);
    let parts = y.split(2, 0)?;
    let message = |e: Error| e.to_string();
    let err = parts[0].mul_(&two).unwrap_err();
    assert!(message(err).starts_with(
        "Output 0 of Split is a view and is being modified inplace. This view is the output of a function that returns multiple views."
    ));
    let rows = y.unbind(0)?;
    let err = rows[3].mul_(&two).unwrap_err();
    assert!(message(err).starts_with("Output 3 of Unbind is a view"));
    let err = parts[1].select(0, 0)?.mul_(&two).unwrap_err();
    assert!(message(err).starts_with("Output 0 of Select is a view"));
    // The leaf's own pieces: the multi-output error comes first, as in PyTorch.
    let err = x.split_with_sizes(&[1, 3], 0)?[0].mul_(&two).unwrap_err();
    assert!(message(err).starts_with("Output 0 of SplitWithSizes is a view"));
    // A plain base written with an operand that requires grad.
    let plain = constant(&[1.0, 2.0], &[2]);
    let w = leaf(&[3.0], &[1]);
    let err = plain.split(1, 0)?[0].mul_(&w).unwrap_err();
    assert!(message(err).starts_with(
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled. This view is the output of a function that returns multiple views."
    ));
    // Nothing recorded: allowed, and the write goes through to the base.
    plain.split(1, 0)?[1].mul_(&two)?;
    assert_eq!(plain.to_vec::<f64>(), [1.0, 4.0]);
    {
        let _guard = autograd::no_grad();
        y.split(2, 0)?[0].mul_(&two)?;
    }
    assert_eq!(y.to_vec::<f64>(), [2.0, 4.0, 3.0, 4.0]);
    Ok(())
}
