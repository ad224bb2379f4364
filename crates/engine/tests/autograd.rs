//! Autograd semantics checked against independent expectations: closed-form
//! derivatives, central finite differences in float64, and PyTorch's documented
//! behaviour for flags, errors, in-place ops and grad mode.
//!
//! Tests that read or change process-wide state (`live_nodes`, the thread count) live
//! in their own test binaries (`memory.rs`, `determinism.rs`), since the tests of one
//! binary run on parallel threads.

use rustgrad::autograd::{self, enable_grad, is_grad_enabled, no_grad, set_grad_enabled};
use rustgrad::optim::Sgd;
use rustgrad::tensor::CmpOp;
use rustgrad::{DType, Error, Result, Scalar, Tensor, Variable};
use Dist::{AwayFromZero, Positive, Signed};

// ----- helpers --------------------------------------------------------------------------

/// A float64 leaf.
fn leaf(data: &[f64], shape: &[usize], requires_grad: bool) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), shape).unwrap(),
        requires_grad,
    )
    .unwrap()
}

/// A float64 constant that does not require grad.
fn constant(value: f64) -> Variable {
    Variable::from_tensor(Tensor::scalar(value, DType::F64))
}

fn values(v: &Variable) -> Vec<f64> {
    v.to_vec::<f64>()
}

fn grad_values(v: &Variable) -> Vec<f64> {
    values(&v.grad().expect("expected a gradient"))
}

fn assert_close(actual: &[f64], expected: &[f64], tol: f64) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            (a - e).abs() <= tol * (1.0 + e.abs()),
            "element {i}: {a} vs {e}\nactual   {actual:?}\nexpected {expected:?}"
        );
    }
}

/// SplitMix64: deterministic inputs without touching the engine's global generator,
/// which other tests of this binary use concurrently.
struct Rng(u64);

impl Rng {
    fn new(seed: &str) -> Rng {
        Rng(seed.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        }))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }
}

/// How gradcheck inputs are drawn.
#[derive(Copy, Clone)]
enum Dist {
    /// Uniform in `[-1, 1)`.
    Signed,
    /// Uniform in `[0.5, 2)`: for log, sqrt, fractional powers, divisors.
    Positive,
    /// `|x|` uniform in `[0.2, 2)` with a random sign: away from the kinks of relu, abs.
    AwayFromZero,
}

struct Input {
    shape: Vec<usize>,
    dist: Dist,
}

fn input(shape: &[usize], dist: Dist) -> Input {
    Input {
        shape: shape.to_vec(),
        dist,
    }
}

fn draw(rng: &mut Rng, spec: &Input) -> Vec<f64> {
    let n: usize = spec.shape.iter().product();
    (0..n)
        .map(|_| match spec.dist {
            Dist::Signed => rng.uniform(-1.0, 1.0),
            Dist::Positive => rng.uniform(0.5, 2.0),
            Dist::AwayFromZero => {
                let m = rng.uniform(0.2, 2.0);
                if rng.next_u64() & 1 == 0 {
                    m
                } else {
                    -m
                }
            }
        })
        .collect()
}

type OpFn = Box<dyn Fn(&[Variable]) -> Result<Variable>>;

struct Check {
    name: String,
    inputs: Vec<Input>,
    f: OpFn,
}

fn check(
    name: &str,
    inputs: Vec<Input>,
    f: impl Fn(&[Variable]) -> Result<Variable> + 'static,
) -> Check {
    Check {
        name: name.to_string(),
        inputs,
        f: Box::new(f),
    }
}

const EPS: f64 = 1e-6;
const ATOL: f64 = 1e-6;
const RTOL: f64 = 1e-5;

/// Compares the analytic gradient of `sum(f(inputs) * w)` (random `w`) with central
/// differences in float64. Returns the first mismatch.
fn gradcheck(c: &Check) -> std::result::Result<(), String> {
    let mut rng = Rng::new(&c.name);
    let data: Vec<Vec<f64>> = c.inputs.iter().map(|spec| draw(&mut rng, spec)).collect();
    let build = |data: &[Vec<f64>], requires_grad: bool| -> Vec<Variable> {
        data.iter()
            .zip(&c.inputs)
            .map(|(d, spec)| leaf(d, &spec.shape, requires_grad))
            .collect()
    };

    let leaves = build(&data, true);
    let out = (c.f)(&leaves).map_err(|e| format!("forward failed: {e}"))?;
    if out.dtype() != DType::F64 {
        return Err(format!("output dtype {:?}", out.dtype()));
    }
    let weights: Vec<f64> = (0..out.numel()).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let weighted_sum =
        |out: &Variable| -> f64 { values(out).iter().zip(&weights).map(|(o, w)| o * w).sum() };
    let gradient = leaf(&weights, out.shape().as_slice(), false);
    out.backward_with(Some(&gradient), false, false)
        .map_err(|e| format!("backward failed: {e}"))?;

    for (i, leaf_var) in leaves.iter().enumerate() {
        let analytic = match leaf_var.grad() {
            Some(g) => {
                if g.shape() != leaf_var.shape() {
                    return Err(format!(
                        "input {i}: grad shape {:?}, expected {:?}",
                        g.shape(),
                        leaf_var.shape()
                    ));
                }
                values(&g)
            }
            None => vec![0.0; leaf_var.numel()],
        };
        for j in 0..data[i].len() {
            let mut plus = data.clone();
            plus[i][j] += EPS;
            let mut minus = data.clone();
            minus[i][j] -= EPS;
            let eval = |d: &[Vec<f64>]| -> std::result::Result<f64, String> {
                let out = (c.f)(&build(d, false))
                    .map_err(|e| format!("perturbed forward failed: {e}"))?;
                Ok(weighted_sum(&out))
            };
            let numeric = (eval(&plus)? - eval(&minus)?) / (2.0 * EPS);
            if (analytic[j] - numeric).abs() > ATOL + RTOL * numeric.abs() {
                return Err(format!(
                    "input {i}, element {j}: analytic {} vs numeric {numeric}",
                    analytic[j]
                ));
            }
        }
    }
    Ok(())
}

fn gradcheck_all(checks: Vec<Check>) {
    let failures: Vec<String> = checks
        .iter()
        .filter_map(|c| gradcheck(c).err().map(|e| format!("  {}: {e}", c.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} gradchecks failed:\n{}",
        failures.len(),
        checks.len(),
        failures.join("\n")
    );
}

// ----- requires_grad and volatile ---------------------------------------------------------

#[test]
fn requires_grad_propagates_from_any_input() -> Result<()> {
    let a = leaf(&[1.0, 2.0], &[2], true);
    let b = leaf(&[3.0, 4.0], &[2], false);
    let c = leaf(&[5.0, 6.0], &[2], false);

    let ab = a.mul(&b)?;
    assert!(ab.requires_grad());
    assert!(!ab.is_leaf());
    assert!(ab.grad_fn().is_some());

    let bc = b.mul(&c)?;
    assert!(!bc.requires_grad());
    assert!(bc.is_leaf());
    assert!(bc.grad_fn().is_none());

    // A chain stays recorded through ops on constants.
    let chain = bc.add(&ab)?.exp()?.sum()?;
    assert!(chain.requires_grad());
    assert_eq!(
        autograd::node_name(chain.grad_fn().unwrap().id())?,
        "SumBackward0"
    );

    // Only floating-point tensors can require grad.
    let ints = Variable::from_tensor(Tensor::from_vec(vec![1i64, 2], &[2])?);
    assert_eq!(
        ints.set_requires_grad(true),
        Err(Error::RequiresGradNonFloat)
    );
    // And a non-leaf cannot be switched off.
    assert_eq!(ab.set_requires_grad(false), Err(Error::NonLeafRequiresGrad));
    Ok(())
}

#[test]
fn no_grad_records_nothing() -> Result<()> {
    let a = leaf(&[1.0, 2.0], &[2], true);
    let out = {
        let _guard = no_grad();
        a.mul(&a)?.sum()?
    };
    assert!(!out.requires_grad());
    assert!(out.grad_fn().is_none());
    assert!(is_grad_enabled(), "the guard restores grad mode");
    assert_eq!(out.backward(), Err(Error::DoesNotRequireGrad { index: 0 }));
    Ok(())
}

#[test]
fn volatile_beats_requires_grad() -> Result<()> {
    let weight = leaf(&[1.0, 2.0, 3.0], &[3], true);
    let data = Variable::new_volatile(Tensor::from_vec(vec![4.0f64, 5.0, 6.0], &[3])?);
    assert!(data.is_volatile());
    assert!(!data.requires_grad());

    let out = data.mul(&weight)?;
    assert!(out.is_volatile());
    assert!(!out.requires_grad());
    assert!(out.grad_fn().is_none());
    assert_eq!(values(&out), vec![4.0, 10.0, 18.0]);

    // Volatility is contagious through further ops, including with parameters.
    let further = out.add(&weight)?.tanh()?.sum()?;
    assert!(further.is_volatile());
    assert!(!further.requires_grad());

    // ...and survives enable_grad, unlike no_grad.
    let _guard = enable_grad();
    assert!(weight.matmul(&data)?.is_volatile());
    assert!(weight.grad().is_none());
    Ok(())
}

// ----- backward: accumulation, errors -----------------------------------------------------

#[test]
fn gradients_accumulate_across_backward_calls() -> Result<()> {
    let x = leaf(&[1.0, -2.0, 3.0], &[3], true);
    x.mul(&x)?.sum()?.backward()?;
    assert_eq!(grad_values(&x), vec![2.0, -4.0, 6.0]);
    // A second graph adds to the same .grad.
    x.mul(&x)?.sum()?.backward()?;
    assert_eq!(grad_values(&x), vec![4.0, -8.0, 12.0]);
    // A third, different function: d/dx sum(3x) = 3.
    x.mul_scalar(3.0)?.sum()?.backward()?;
    assert_eq!(grad_values(&x), vec![7.0, -5.0, 15.0]);

    // The stored gradient holds no history (no parameter -> grad -> graph cycle).
    let g = x.grad().unwrap();
    assert!(g.grad_fn().is_none());
    assert!(!g.requires_grad());

    // Zeroing starts over.
    x.set_grad(None)?;
    x.mul(&x)?.sum()?.backward()?;
    assert_eq!(grad_values(&x), vec![2.0, -4.0, 6.0]);
    Ok(())
}

#[test]
fn fan_in_gradients_are_summed() -> Result<()> {
    // y = x * x + exp(x) + x, all using x: dy/dx = 2x + e^x + 1.
    let xs = [0.5, -1.0];
    let x = leaf(&xs, &[2], true);
    let y = x.mul(&x)?.add(&x.exp()?)?.add(&x)?;
    y.sum()?.backward()?;
    let expected: Vec<f64> = xs.iter().map(|v| 2.0 * v + v.exp() + 1.0).collect();
    assert_close(&grad_values(&x), &expected, 1e-12);
    Ok(())
}

#[test]
fn backward_twice_needs_retain_graph() -> Result<()> {
    let x = leaf(&[0.5, 1.5], &[2], true);
    let loss = x.exp()?.sum()?;
    loss.backward_with(None, true, false)?;
    loss.backward_with(None, true, false)?;
    loss.backward()?; // frees the saved tensors
    let e: Vec<f64> = [0.5f64, 1.5].iter().map(|v| 3.0 * v.exp()).collect();
    assert_close(&grad_values(&x), &e, 1e-12);
    assert_eq!(loss.backward(), Err(Error::BackwardTwice));
    assert_eq!(
        loss.backward_with(None, true, false),
        Err(Error::BackwardTwice)
    );
    assert!(Error::BackwardTwice
        .to_string()
        .starts_with("Trying to backward through the graph a second time"));

    // A graph that saves nothing can be run again, as in PyTorch.
    let z = leaf(&[1.0], &[1], true);
    let sum = z.add_scalar(1.0)?.sum()?;
    sum.backward()?;
    sum.backward()?;
    assert_eq!(grad_values(&z), vec![2.0]);
    Ok(())
}

#[test]
fn non_scalar_backward_needs_a_gradient() -> Result<()> {
    let x = leaf(&[1.0, 2.0], &[2], true);
    let y = x.mul_scalar(2.0)?;
    assert_eq!(y.backward(), Err(Error::ImplicitGradNonScalar));
    assert_eq!(
        Error::ImplicitGradNonScalar.to_string(),
        "grad can be implicitly created only for scalar outputs"
    );
    let wrong = leaf(&[1.0, 1.0, 1.0], &[3], false);
    assert!(matches!(
        y.backward_with(Some(&wrong), false, false),
        Err(Error::GradShapeMismatch { .. })
    ));
    y.backward_with(Some(&leaf(&[1.0, 10.0], &[2], false)), false, false)?;
    assert_eq!(grad_values(&x), vec![2.0, 20.0]);

    // A one-element non-0-d output is fine without a gradient.
    let z = leaf(&[3.0], &[1, 1], true);
    z.mul(&z)?.backward()?;
    assert_eq!(grad_values(&z), vec![6.0]);
    Ok(())
}

#[test]
fn stale_node_ids_are_detected() -> Result<()> {
    let x = leaf(&[1.0], &[1], true);
    let y = x.exp()?;
    let id = y.grad_fn().unwrap().id();
    assert_eq!(autograd::node_name(id)?, "ExpBackward0");
    drop(y);
    assert_eq!(autograd::node_name(id), Err(Error::StaleNode));
    assert_eq!(autograd::graph::sequence_nr(id), Err(Error::StaleNode));
    Ok(())
}

#[test]
fn next_functions_follow_the_inputs() -> Result<()> {
    let a = leaf(&[1.0], &[1], true);
    let b = leaf(&[2.0], &[1], false);
    let y = a.mul(&b)?;
    let f = y.grad_fn().unwrap();
    assert_eq!(autograd::node_name(f.id())?, "MulBackward0");
    let next = autograd::next_functions(f.id())?;
    assert_eq!(next.len(), 2);
    let (acc, input_nr) = next[0].as_ref().expect("a requires grad");
    assert_eq!(autograd::node_name(acc.id())?, "AccumulateGrad");
    assert_eq!(*input_nr, 0);
    let owner = autograd::graph::accumulate_grad_variable(acc.id())?.unwrap();
    assert!(owner.same(&a));
    assert!(next[1].is_none(), "b does not require grad");
    Ok(())
}

#[test]
fn double_backward_through_create_graph() -> Result<()> {
    // y = x^3: dy/dx = 3x^2, d2y/dx2 = 6x.
    let x = leaf(&[0.5, -2.0], &[2], true);
    x.pow_scalar(3.0)?.sum()?.backward_with(None, false, true)?;
    let first = x.grad().unwrap();
    assert_close(&values(&first), &[0.75, 12.0], 1e-12);
    assert!(
        first.requires_grad(),
        "create_graph records the backward pass"
    );
    x.set_grad(None)?;
    first.sum()?.backward()?;
    assert_close(&grad_values(&x), &[3.0, -12.0], 1e-12);
    Ok(())
}

// ----- in-place ops and version counters -------------------------------------------------

#[test]
fn in_place_on_a_leaf_that_requires_grad_fails() -> Result<()> {
    let x = leaf(&[1.0, 2.0], &[2], true);
    let one = constant(1.0);
    assert_eq!(x.add_(&one), Err(Error::LeafInplace));
    assert_eq!(x.mul_(&one), Err(Error::LeafInplace));
    assert_eq!(x.zero_(), Err(Error::LeafInplace));
    assert_eq!(
        Error::LeafInplace.to_string(),
        "a leaf Variable that requires grad is being used in an in-place operation."
    );
    assert_eq!(
        values(&x),
        vec![1.0, 2.0],
        "a refused write leaves the data alone"
    );

    // A view of such a leaf is refused too.
    let view = x.slice(0, Some(0), Some(1), 1)?;
    assert_eq!(view.add_(&one), Err(Error::ViewOfLeafInplace));

    // Under no_grad (an optimizer step) the write is allowed.
    {
        let _guard = no_grad();
        x.add_(&one)?;
    }
    assert_eq!(values(&x), vec![2.0, 3.0]);
    assert!(x.is_leaf() && x.requires_grad());
    Ok(())
}

#[test]
fn modified_saved_tensor_is_reported_with_the_write_site() -> Result<()> {
    let x = leaf(&[0.0, 1.0], &[2], true);
    let y = x.exp()?;
    let one = constant(1.0);
    let (written, add_line) = (y.add_(&one), line!());
    written?;
    let err = y.sum()?.backward().unwrap_err();
    assert!(matches!(err, Error::ModifiedByInplace { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("one of the variables needed for gradient computation has been modified by an inplace operation: [torch.DoubleTensor [2]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead."),
        "{message}"
    );
    let site = format!("{}:{add_line}", file!());
    assert!(message.contains(&site), "{message:?} does not name {site}");
    Ok(())
}

#[test]
fn optimizer_step_invalidates_a_graph_that_saved_the_parameter() -> Result<()> {
    let w = leaf(&[1.0, 2.0], &[2], true);
    let loss = w.mul(&w)?.sum()?;
    loss.backward_with(None, true, false)?;
    let mut sgd = Sgd::new(vec![w.clone()], 0.1)?;
    let before = w.tensor().version();
    let step_line = line!() + 1;
    sgd.step()?;
    assert_eq!(w.tensor().version(), before + 1);
    assert_close(&values(&w), &[0.8, 1.6], 1e-12);
    let err = loss.backward().unwrap_err();
    assert!(
        matches!(
            err,
            Error::ModifiedByInplace {
                version: 1,
                expected: 0,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("{}:{step_line}", file!())),
        "{err}"
    );
    Ok(())
}

#[test]
fn version_counter_counts_writes_and_is_shared_by_views() -> Result<()> {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], false);
    let one = constant(1.0);
    let t = x.transpose(0, 1)?;
    let row = x.select(0, 1)?;
    let alias = x.detach();
    assert!(t.tensor().shares_storage(&x.tensor()));
    assert_eq!(x.tensor().version(), 0);

    let mut expected = 0;
    let mut bump = |r: Result<()>| {
        r.unwrap();
        expected += 1;
        for v in [&x, &t, &row, &alias] {
            assert_eq!(
                v.tensor().version(),
                expected,
                "every view sees each write once"
            );
        }
    };
    bump(x.add_(&one));
    bump(x.sub_(&one));
    bump(x.mul_(&constant(2.0)));
    bump(x.div_(&constant(2.0)));
    bump(x.clamp_(Some(0.0), Some(10.0)));
    bump(x.relu_());
    bump(t.add_(&one)); // through a view
    bump(row.mul_(&constant(10.0))); // through another view
    bump(alias.sub_(&one)); // through a detached alias
    bump(x.copy_(&leaf(&[7.0, 8.0, 9.0], &[3], false))); // broadcast copy
    bump(x.fill_(3.0));
    bump(x.zero_());
    assert_eq!(values(&x), vec![0.0; 6]);

    // Out-of-place ops do not bump.
    let _ = x.add(&one)?;
    let _ = t.exp()?;
    assert_eq!(x.tensor().version(), expected);
    Ok(())
}

#[test]
fn views_write_through_to_their_base() -> Result<()> {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], false);
    x.transpose(0, 1)?
        .slice(0, Some(1), None, 1)?
        .mul_(&constant(10.0))?;
    assert_eq!(values(&x), vec![1.0, 20.0, 30.0, 4.0, 50.0, 60.0]);
    x.select(1, -1)?.fill_(0.0)?;
    assert_eq!(values(&x), vec![1.0, 20.0, 0.0, 4.0, 50.0, 0.0]);
    Ok(())
}

#[test]
fn in_place_on_non_leaves_rebases_history() -> Result<()> {
    let xs = [0.5, -1.5, 2.0];
    let x = leaf(&xs, &[3], true);
    let c = leaf(&[2.0, 3.0, -1.0], &[3], true);
    // y = ((2x + x) * c - x)  =>  dy/dx = 3c - 1, dy/dc = 3x.
    let y = x.mul_scalar(2.0)?;
    let v0 = y.tensor().version();
    y.add_(&x)?;
    y.mul_(&c)?;
    y.sub_(&x)?;
    assert_eq!(y.tensor().version(), v0 + 3);
    assert!(!y.is_leaf());
    assert_eq!(
        autograd::node_name(y.grad_fn().unwrap().id())?,
        "SubBackward0"
    );
    let expected_y: Vec<f64> = xs
        .iter()
        .zip([2.0, 3.0, -1.0])
        .map(|(x, c)| 3.0 * x * c - x)
        .collect();
    assert_close(&values(&y), &expected_y, 1e-12);

    y.sum()?.backward()?;
    assert_close(&grad_values(&x), &[5.0, 8.0, -4.0], 1e-12);
    assert_close(&grad_values(&c), &[1.5, -4.5, 6.0], 1e-12);

    // In-place relu / clamp on non-leaves: gradient masked by the op.
    let z = leaf(&[-1.0, 0.5, 3.0], &[3], true);
    let w = z.mul_scalar(1.0)?;
    w.relu_()?;
    w.sum()?.backward()?;
    assert_eq!(grad_values(&z), vec![0.0, 1.0, 1.0]);
    z.set_grad(None)?;
    let w = z.mul_scalar(1.0)?;
    w.clamp_(None, Some(2.0))?;
    w.sum()?.backward()?;
    assert_eq!(grad_values(&z), vec![1.0, 1.0, 0.0]);

    // An in-place fill cuts the history: no gradient reaches the input.
    let p = leaf(&[1.0, 2.0], &[2], true);
    let q = p.mul(&p)?;
    q.fill_(5.0)?;
    q.mul(&p)?.sum()?.backward()?;
    assert_eq!(grad_values(&p), vec![5.0, 5.0]);

    // An in-place copy of a differentiable source routes the gradient to the source.
    let src = leaf(&[1.0, 2.0], &[2], true);
    let dst = leaf(&[0.0, 0.0], &[2], true).mul_scalar(1.0)?;
    dst.copy_(&src.mul_scalar(4.0)?)?;
    dst.sum()?.backward()?;
    assert_eq!(grad_values(&src), vec![4.0, 4.0]);
    Ok(())
}

#[test]
fn in_place_on_a_view_of_a_non_leaf_rebases_the_base() -> Result<()> {
    // y = 2x; y[1] *= c; loss = sum(y * w):
    //   dL/dx[0, j] = 2 w[0, j], dL/dx[1, j] = 2 c[j] w[1, j], dL/dc[j] = 2 x[1, j] w[1, j].
    let xs = [0.5, -1.0, 2.0, 1.5, -0.5, 3.0];
    let cs = [2.0, -3.0, 0.5];
    let ws = [1.0, 2.0, 3.0, -1.0, 0.5, 4.0];
    let x = leaf(&xs, &[2, 3], true);
    let c = leaf(&cs, &[3], true);
    let w = leaf(&ws, &[2, 3], false);
    let y = x.mul_scalar(2.0)?;
    let row = y.select(0, 1)?;
    row.mul_(&c)?;
    assert_eq!(
        autograd::node_name(y.grad_fn().unwrap().id())?,
        "CopySlices"
    );
    assert_close(&values(&y), &[1.0, -2.0, 4.0, 6.0, 3.0, 3.0], 1e-12);
    y.mul(&w)?.sum()?.backward()?;
    let mut dx = [0.0; 6];
    for j in 0..3 {
        dx[j] = 2.0 * ws[j];
        dx[3 + j] = 2.0 * cs[j] * ws[3 + j];
    }
    assert_close(&grad_values(&x), &dx, 1e-12);
    let dc: Vec<f64> = (0..3).map(|j| 2.0 * xs[3 + j] * ws[3 + j]).collect();
    assert_close(&grad_values(&c), &dc, 1e-12);

    // The view's own history follows the write: d/dx sum(row) = 2 c on row 1.
    x.set_grad(None)?;
    let y = x.mul_scalar(2.0)?;
    let row = y.select(0, 1)?;
    row.mul_(&c)?;
    row.sum()?.backward()?;
    let expected: Vec<f64> = [0.0, 0.0, 0.0]
        .into_iter()
        .chain(cs.iter().map(|c| 2.0 * c))
        .collect();
    assert_close(&grad_values(&x), &expected, 1e-12);

    // A transposed, strided view.
    x.set_grad(None)?;
    let y = x.mul_scalar(1.0)?;
    y.t()?.slice(0, Some(0), None, 2)?.mul_(&constant(3.0))?; // columns 0 and 2, times 3
    y.sum()?.backward()?;
    assert_close(&grad_values(&x), &[3.0, 1.0, 3.0, 3.0, 1.0, 3.0], 1e-12);

    // Writing through a view still trips the saved-tensor check of the base's producer.
    let e = x.exp()?;
    e.slice(1, Some(0), Some(1), 1)?.add_(&constant(1.0))?;
    let err = e.sum()?.backward().unwrap_err();
    assert!(matches!(err, Error::ModifiedByInplace { .. }), "{err:?}");
    Ok(())
}

#[test]
fn in_place_with_a_differentiable_operand_on_a_plain_tensor_records() -> Result<()> {
    // buf does not require grad but becomes part of the graph through w.
    let w = leaf(&[2.0, 3.0], &[2], true);
    let buf = leaf(&[1.0, 1.0], &[2], false);
    buf.mul_(&w)?;
    assert!(buf.requires_grad());
    assert!(!buf.is_leaf());
    buf.mul(&buf)?.sum()?.backward()?;
    // buf = w, d/dw sum(w^2) = 2w.
    assert_eq!(grad_values(&w), vec![4.0, 6.0]);
    Ok(())
}

// ----- regression: gradients with one side not requiring grad ----------------------------

#[test]
fn div_and_pow_with_a_constant_operand() -> Result<()> {
    // DivBackward0 saved `a` only when `b` needs grad, but read it unconditionally.
    let x = leaf(&[1.0, 2.0], &[2], true);
    x.div(&constant(4.0))?.sum()?.backward()?;
    assert_eq!(grad_values(&x), vec![0.25, 0.25]);
    x.set_grad(None)?;
    x.div_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(grad_values(&x), vec![0.5, 0.5]);

    // PowBackward1 saved its output only when the exponent needs grad, likewise.
    let b = leaf(&[2.0, 3.0], &[2], true);
    b.pow(&constant(3.0))?.sum()?.backward()?;
    assert_eq!(grad_values(&b), vec![12.0, 27.0]);

    // The other side alone.
    let e = leaf(&[2.0], &[1], true);
    constant(3.0).pow(&e)?.sum()?.backward()?;
    assert_close(&grad_values(&e), &[9.0 * 3f64.ln()], 1e-12);
    let d = leaf(&[4.0], &[1], true);
    constant(2.0).div(&d)?.sum()?.backward()?;
    assert_close(&grad_values(&d), &[-2.0 / 16.0], 1e-12);
    Ok(())
}

// ----- grad mode is thread-local ---------------------------------------------------------

#[test]
fn grad_mode_is_thread_local() -> Result<()> {
    let x = leaf(&[1.0, 2.0], &[2], true);
    let _guard = no_grad();
    assert!(!is_grad_enabled());
    assert!(!x.mul(&x)?.requires_grad());

    let shared = x.clone();
    let recorded_elsewhere = std::thread::spawn(move || -> Result<bool> {
        // A new thread starts with grad mode on, whatever the spawning thread's guard.
        let enabled = is_grad_enabled();
        let y = shared.mul(&shared)?.sum()?;
        y.backward()?;
        Ok(enabled && y.requires_grad())
    })
    .join()
    .expect("thread panicked")?;
    assert!(recorded_elsewhere);
    assert_eq!(grad_values(&x), vec![2.0, 4.0]);

    // A guard in another thread does not leak here.
    assert!(!is_grad_enabled());
    {
        let _inner = enable_grad();
        std::thread::spawn(|| {
            let _off = no_grad();
            set_grad_enabled(false);
            assert!(!is_grad_enabled());
        })
        .join()
        .unwrap();
        assert!(is_grad_enabled());
        assert!(x.exp()?.requires_grad());
    }
    assert!(!is_grad_enabled(), "nested guards restore in order");
    Ok(())
}

#[test]
fn set_grad_enabled_guard_nests() {
    assert!(is_grad_enabled());
    {
        let _a = autograd::GradModeGuard::new(false);
        {
            let _b = autograd::GradModeGuard::new(true);
            assert!(is_grad_enabled());
        }
        assert!(!is_grad_enabled());
    }
    assert!(is_grad_enabled());
}

// ----- closed forms ----------------------------------------------------------------------

#[test]
fn closed_form_gradients() -> Result<()> {
    let xs = [0.3, -0.7, 1.2];
    let x = leaf(&xs, &[3], true);
    // sum(sigmoid(x)) => s(1-s)
    x.sigmoid()?.sum()?.backward()?;
    let s = |v: f64| 1.0 / (1.0 + (-v).exp());
    let expected: Vec<f64> = xs.iter().map(|&v| s(v) * (1.0 - s(v))).collect();
    assert_close(&grad_values(&x), &expected, 1e-12);

    // mean(tanh(x)^2) => 2 tanh (1 - tanh^2) / n
    x.set_grad(None)?;
    x.tanh()?.pow_scalar(2.0)?.mean()?.backward()?;
    let expected: Vec<f64> = xs
        .iter()
        .map(|v| 2.0 * v.tanh() * (1.0 - v.tanh().powi(2)) / 3.0)
        .collect();
    assert_close(&grad_values(&x), &expected, 1e-12);

    // Matrix: d/dA sum(A @ B) = ones @ B^T, d/dB = A^T @ ones.
    let a = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], true);
    let b = leaf(&[1.0, -1.0, 0.5, 2.0, -3.0, 1.0], &[3, 2], true);
    a.matmul(&b)?.sum()?.backward()?;
    assert_close(&grad_values(&a), &[0.0, 2.5, -2.0, 0.0, 2.5, -2.0], 1e-12);
    assert_close(&grad_values(&b), &[5.0, 5.0, 7.0, 7.0, 9.0, 9.0], 1e-12);
    Ok(())
}

#[test]
fn scalar_operands_keep_the_tensor_dtype() -> Result<()> {
    let x = Variable::new(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?, true)?;
    let y = x.mul(&x.wrap_scalar(Scalar::Float(2.5)))?;
    assert_eq!(y.dtype(), DType::F32);
    let z = x.add(&x.wrap_scalar(Scalar::Int(3)))?;
    assert_eq!(z.dtype(), DType::F32);
    y.add(&z)?.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().dtype(), DType::F32);
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![3.5, 3.5]);

    // Mixed float dtypes promote, and each gradient has its input's dtype.
    let d = leaf(&[1.0, 1.0], &[2], true);
    x.mul(&d)?.sum()?.backward()?;
    assert_eq!(d.grad().unwrap().dtype(), DType::F64);
    assert_eq!(x.grad().unwrap().dtype(), DType::F32);
    Ok(())
}

// ----- finite-difference gradchecks --------------------------------------------------------

#[test]
fn gradcheck_detects_a_wrong_gradient() {
    // d/dx (detach(x) * x) is x analytically but 2x numerically.
    let wrong = check("detached_factor", vec![input(&[3], Positive)], |v| {
        v[0].detach().mul(&v[0])
    });
    let err = gradcheck(&wrong).expect_err("gradcheck accepted a wrong gradient");
    assert!(err.contains("analytic"), "{err}");
}

#[test]
fn gradcheck_unary() {
    let s = |shape: &[usize], d| vec![input(shape, d)];
    gradcheck_all(vec![
        check("neg", s(&[3, 4], Signed), |v| v[0].neg()),
        check("exp", s(&[3, 4], Signed), |v| v[0].exp()),
        check("log", s(&[3, 4], Positive), |v| v[0].log()),
        check("sqrt", s(&[3, 4], Positive), |v| v[0].sqrt()),
        check("tanh", s(&[3, 4], Signed), |v| v[0].tanh()),
        check("sigmoid", s(&[3, 4], Signed), |v| v[0].sigmoid()),
        check("relu", s(&[3, 4], AwayFromZero), |v| v[0].relu()),
        check("abs", s(&[3, 4], AwayFromZero), |v| v[0].abs()),
        check("sign", s(&[5], AwayFromZero), |v| v[0].sign()),
        check("pow_2", s(&[5], Signed), |v| v[0].pow_scalar(2.0)),
        check("pow_3", s(&[5], Signed), |v| v[0].pow_scalar(3.0)),
        check("pow_0", s(&[5], Signed), |v| v[0].pow_scalar(0.0)),
        check("pow_neg1", s(&[5], Positive), |v| v[0].pow_scalar(-1.0)),
        check("pow_half", s(&[5], Positive), |v| v[0].pow_scalar(0.5)),
        check("pow_2_5", s(&[5], Positive), |v| v[0].pow_scalar(2.5)),
        check("clamp_min", s(&[4, 3], AwayFromZero), |v| {
            v[0].clamp(Some(0.0), None)
        }),
        check("clamp_max", s(&[4, 3], AwayFromZero), |v| {
            v[0].clamp(None, Some(0.1))
        }),
        // Bounds chosen away from the drawn values (|x| >= 0.2).
        check("clamp_both", s(&[4, 3], AwayFromZero), |v| {
            v[0].clamp(Some(-0.1), Some(0.15))
        }),
        check("clamp_wide", s(&[4, 3], AwayFromZero), |v| {
            v[0].clamp(Some(-1.0), Some(1.0))
        }),
        check("unary_on_transposed", s(&[3, 4], Signed), |v| {
            v[0].t()?.tanh()
        }),
        check("chain", s(&[2, 3], Positive), |v| {
            v[0].log()?.mul(&v[0].sqrt()?)?.sigmoid()
        }),
    ]);
}

#[test]
fn gradcheck_binary_broadcasting() {
    let shapes: [(&[usize], &[usize]); 7] = [
        (&[3, 4], &[3, 4]),
        (&[3, 4], &[4]),
        (&[3, 4], &[3, 1]),
        (&[], &[2, 3]),
        (&[2, 3], &[]),
        (&[2, 3, 4], &[3, 4]),
        (&[2, 1, 4], &[3, 1]),
    ];
    type Bin = fn(&Variable, &Variable) -> Result<Variable>;
    let ops: [(&str, Bin, Dist); 6] = [
        ("add", |a, b| a.add(b), Signed),
        ("sub", |a, b| a.sub(b), Signed),
        ("mul", |a, b| a.mul(b), Signed),
        ("div", |a, b| a.div(b), Positive),
        ("pow", |a, b| a.pow(b), Positive),
        ("rsub", |a, b| a.rsub(b), Signed),
    ];
    let mut checks = Vec::new();
    for (name, op, dist) in ops {
        for (sa, sb) in shapes {
            checks.push(check(
                &format!("{name}_{sa:?}_{sb:?}"),
                vec![input(sa, dist), input(sb, dist)],
                move |v| op(&v[0], &v[1]),
            ));
        }
        // Non-contiguous operands.
        checks.push(check(
            &format!("{name}_transposed_expanded"),
            vec![input(&[4, 3], dist), input(&[1, 4], dist)],
            move |v| op(&v[0].t()?, &v[1].expand(&[3, -1])?.t()?.t()?),
        ));
        // The same variable on both sides.
        checks.push(check(
            &format!("{name}_self"),
            vec![input(&[5], dist)],
            move |v| op(&v[0], &v[0]),
        ));
    }
    // Scalar operands through wrap_scalar.
    checks.push(check("add_scalar", vec![input(&[3], Signed)], |v| {
        v[0].add_scalar(2.5)
    }));
    checks.push(check("mul_scalar", vec![input(&[3], Signed)], |v| {
        v[0].mul_scalar(-1.5)
    }));
    checks.push(check("div_scalar", vec![input(&[3], Signed)], |v| {
        v[0].div_scalar(4.0)
    }));
    checks.push(check("rsub_scalar", vec![input(&[3], Signed)], |v| {
        v[0].rsub_scalar(1.0)
    }));
    checks.push(check("rdiv_scalar", vec![input(&[3], Positive)], |v| {
        v[0].wrap_scalar(Scalar::Float(2.0)).div(&v[0])
    }));
    checks.push(check("pow_scalar_base", vec![input(&[3], Signed)], |v| {
        v[0].wrap_scalar(Scalar::Float(1.7)).pow(&v[0])
    }));
    gradcheck_all(checks);
}

#[test]
fn gradcheck_where_cond() {
    let cond = Tensor::from_vec(vec![true, false, false, true, true, false], &[2, 3]).unwrap();
    let row_cond = Tensor::from_vec(vec![false, true, true], &[3]).unwrap();
    let (c1, c2, c3) = (cond.clone(), cond.clone(), row_cond.clone());
    gradcheck_all(vec![
        check(
            "where_same",
            vec![input(&[2, 3], Signed), input(&[2, 3], Signed)],
            move |v| Variable::where_cond(&c1, &v[0], &v[1]),
        ),
        check(
            "where_broadcast",
            vec![input(&[3], Signed), input(&[2, 1], Signed)],
            move |v| Variable::where_cond(&c2, &v[0], &v[1]),
        ),
        check(
            "where_broadcast_cond",
            vec![input(&[4, 3], Signed), input(&[], Signed)],
            move |v| Variable::where_cond(&c3, &v[0], &v[1]),
        ),
        check("where_self", vec![input(&[2, 3], Signed)], move |v| {
            Variable::where_cond(&cond, &v[0], &v[0].exp()?)
        }),
    ]);
}

#[test]
fn gradcheck_reductions() {
    let x3 = || vec![input(&[2, 3, 4], Signed)];
    gradcheck_all(vec![
        check("sum_all", x3(), |v| v[0].sum()),
        check("mean_all", x3(), |v| v[0].mean()),
        check("sum_0", x3(), |v| v[0].sum_dims(&[0], false)),
        check("sum_neg1_keep", x3(), |v| v[0].sum_dims(&[-1], true)),
        check("sum_0_2", x3(), |v| v[0].sum_dims(&[0, 2], false)),
        check("sum_2_0_keep", x3(), |v| v[0].sum_dims(&[2, 0], true)),
        check("sum_all_dims", x3(), |v| v[0].sum_dims(&[0, 1, 2], false)),
        check("mean_1", x3(), |v| v[0].mean_dims(&[1], false)),
        check("mean_neg1_neg3_keep", x3(), |v| {
            v[0].mean_dims(&[-1, -3], true)
        }),
        check("mean_1_keep", x3(), |v| v[0].mean_dims(&[1], true)),
        check("sum_0d", vec![input(&[], Signed)], |v| v[0].sum()),
        check("sum_0d_dim", vec![input(&[], Signed)], |v| {
            v[0].sum_dims(&[0], true)
        }),
        check("sum_of_transposed", x3(), |v| {
            v[0].transpose(0, 2)?.sum_dims(&[1], false)
        }),
        check("mean_of_expanded", vec![input(&[3, 1], Signed)], |v| {
            v[0].expand(&[2, 3, 5])?.mean_dims(&[0, 2], false)
        }),
        check("sum_then_nonlinear", x3(), |v| {
            v[0].sum_dims(&[1], true)?.tanh()?.mul(&v[0])
        }),
    ]);
}

#[test]
fn gradcheck_matmul() {
    let mm = |name: &str, a: &[usize], b: &[usize]| {
        check(name, vec![input(a, Signed), input(b, Signed)], |v| {
            v[0].matmul(&v[1])
        })
    };
    gradcheck_all(vec![
        mm("mm_2d_2d", &[3, 4], &[4, 5]),
        mm("mm_3d_3d", &[2, 3, 4], &[2, 4, 5]),
        mm("mm_3d_2d", &[2, 3, 4], &[4, 5]),
        mm("mm_2d_3d", &[3, 4], &[2, 4, 5]),
        mm("mm_broadcast_batch", &[1, 3, 4], &[2, 4, 5]),
        mm("mm_4d_3d", &[2, 1, 3, 4], &[3, 4, 2]),
        mm("mm_1d_2d", &[4], &[4, 5]),
        mm("mm_2d_1d", &[3, 4], &[4]),
        mm("mm_1d_1d", &[4], &[4]),
        mm("mm_3d_1d", &[2, 3, 4], &[4]),
        mm("mm_1d_3d", &[4], &[2, 4, 5]),
        mm("mm_inner_1", &[3, 1], &[1, 2]),
        check(
            "mm_transposed",
            vec![input(&[4, 3], Signed), input(&[5, 4], Signed)],
            |v| v[0].t()?.matmul(&v[1].t()?),
        ),
        check(
            "mm_sliced",
            vec![input(&[3, 8], Signed), input(&[4, 5], Signed)],
            |v| v[0].slice(1, Some(0), None, 2)?.matmul(&v[1]),
        ),
        check(
            "mm_expanded",
            vec![input(&[3, 4], Signed), input(&[4, 5], Signed)],
            |v| v[0].expand(&[2, 3, 4])?.matmul(&v[1]),
        ),
        check(
            "mm_permuted",
            vec![input(&[4, 2, 3], Signed), input(&[2, 4, 5], Signed)],
            |v| v[0].permute(&[1, 2, 0])?.matmul(&v[1]),
        ),
        check("mm_self", vec![input(&[3, 3], Signed)], |v| {
            v[0].matmul(&v[0])
        }),
    ]);
}

#[test]
fn gradcheck_views() {
    let x = |shape: &[usize]| vec![input(shape, Signed)];
    // Views are linear, so a nonlinear tail makes the check sensitive to which element
    // each gradient lands on.
    gradcheck_all(vec![
        check("view", x(&[2, 6]), |v| v[0].view(&[3, -1])?.tanh()),
        check("view_0d", x(&[1]), |v| v[0].view(&[])?.exp()),
        check("view_transposed_split", x(&[4, 3]), |v| {
            v[0].t()?.view(&[3, 2, 2])?.exp()
        }),
        check("reshape_view", x(&[2, 6]), |v| v[0].reshape(&[4, 3])?.exp()),
        check("reshape_copy", x(&[3, 4]), |v| {
            v[0].t()?.reshape(&[-1])?.exp()
        }),
        check("transpose", x(&[2, 3, 4]), |v| {
            v[0].transpose(0, -1)?.tanh()
        }),
        check("t", x(&[2, 3]), |v| v[0].t()?.exp()),
        check("t_1d", x(&[3]), |v| v[0].t()?.exp()),
        check("permute", x(&[2, 3, 4]), |v| {
            v[0].permute(&[2, 0, 1])?.tanh()
        }),
        check("expand", x(&[3, 1]), |v| v[0].expand(&[2, 3, 4])?.tanh()),
        check("expand_keep", x(&[1, 3]), |v| {
            v[0].expand(&[-1, 3])?.mul(&v[0])
        }),
        check("unsqueeze", x(&[2, 3]), |v| v[0].unsqueeze(-1)?.exp()),
        check("squeeze", x(&[2, 1, 3, 1]), |v| v[0].squeeze()?.exp()),
        check("squeeze_dim", x(&[2, 1, 3]), |v| v[0].squeeze_dim(1)?.exp()),
        check("squeeze_dim_noop", x(&[2, 3]), |v| {
            v[0].squeeze_dim(1)?.exp()
        }),
        check("slice", x(&[5, 4]), |v| {
            v[0].slice(0, Some(1), Some(4), 1)?.exp()
        }),
        check("slice_step", x(&[4, 7]), |v| {
            v[0].slice(1, Some(1), None, 3)?.exp()
        }),
        check("slice_negative", x(&[6]), |v| {
            v[0].slice(0, Some(-3), None, 1)?.exp()
        }),
        check("slice_clamped", x(&[4]), |v| {
            v[0].slice(0, Some(1), Some(100), 2)?.exp()
        }),
        check("select", x(&[3, 4]), |v| v[0].select(1, -2)?.exp()),
        check("select_then_slice", x(&[3, 4, 5]), |v| {
            v[0].select(0, 1)?.slice(1, None, None, 2)?.exp()
        }),
        check("overlapping_views", x(&[3, 4]), |v| {
            v[0].select(0, 0)?
                .mul(&v[0].slice(0, Some(0), Some(2), 1)?.sum_dims(&[0], false)?)
        }),
        check("contiguous", x(&[3, 4]), |v| v[0].t()?.contiguous()?.exp()),
        check("clone", x(&[3]), |v| v[0].clone_data()?.exp()),
        check("to_same_dtype", x(&[3]), |v| {
            v[0].to_dtype(DType::F64)?.exp()
        }),
        check("to_copy_same_dtype", x(&[3]), |v| {
            v[0].t()?.to_dtype_copy(DType::F64)?.exp()
        }),
    ]);
}

#[test]
fn to_dtype_copy_always_copies_and_records_to_copy() -> Result<()> {
    // PyTorch: `x.to(x.dtype, copy=True)` is a new tensor with grad_fn ToCopyBackward0,
    // and a copy of a transposed tensor keeps its strides (preserve_format).
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], true).t()?;
    let y = x.to_dtype_copy(DType::F64)?;
    assert!(!y.tensor().shares_storage(&x.tensor()));
    assert_eq!(y.tensor().strides(), x.tensor().strides());
    assert_eq!(y.tensor().to_vec::<f64>(), x.tensor().to_vec::<f64>());
    let node = y.grad_fn().expect("a recorded copy");
    assert_eq!(autograd::node_name(node.id())?, "ToCopyBackward0");
    // An int64 copy is a new leaf that does not require grad.
    let i = Variable::from_tensor(Tensor::from_vec(vec![1i64, 2], &[2])?);
    let j = i.to_dtype_copy(DType::I64)?;
    assert!(!j.tensor().shares_storage(&i.tensor()) && !j.requires_grad());
    Ok(())
}

#[test]
fn comparisons_never_require_grad() -> Result<()> {
    let a = leaf(&[1.0, 2.0, 3.0], &[3], true);
    let b = leaf(&[2.0], &[1], true);
    for op in [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ] {
        let c = a.compare(&b, op)?;
        assert_eq!(c.dtype(), DType::Bool);
        assert!(!c.requires_grad());
    }
    assert_eq!(
        a.compare(&b, CmpOp::Lt)?.to_vec::<bool>(),
        vec![true, false, false]
    );
    Ok(())
}

/// Graph statistics from the Rust API: `mul` saves both operands (2 × 6 doubles), and
/// backward without `retain_graph` releases them.
#[test]
fn saved_summary_and_output_shapes_of_nodes() -> Result<()> {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], true);
    let y = x.mul(&x)?;
    let node = y.grad_fn().expect("mul records a node");
    assert_eq!(autograd::graph::saved_summary(node.id())?, (2, 2 * 6 * 8));
    assert_eq!(
        autograd::graph::output_shapes(node.id())?[0].as_slice(),
        &[2, 3]
    );
    y.sum()?.backward()?;
    assert_eq!(autograd::graph::saved_summary(node.id())?, (0, 0));
    Ok(())
}
