//! Property tests: the forward values of representative ops of each family, over random
//! shapes, broadcasts, strided inputs (transposes, slices with steps, expands) and dims
//! (negative ones too), against reference implementations written here on plain
//! `Vec<f64>` with explicit index arithmetic. Bounded (32 cases per property).

use proptest::prelude::*;
use rustgrad::{Tensor, Variable};

/// A contiguous reference array: row-major `data` of `shape`.
#[derive(Clone, Debug)]
struct Arr {
    shape: Vec<usize>,
    data: Vec<f64>,
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The multi-index of flat position `i` in row-major order.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
    idx
}

/// The flat row-major position of `idx`.
fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

impl Arr {
    fn at(&self, idx: &[usize]) -> f64 {
        self.data[ravel(idx, &self.shape)]
    }

    /// A new array of `shape` whose element at `idx` is `f(idx)`.
    fn build(shape: Vec<usize>, f: impl Fn(&[usize]) -> f64) -> Arr {
        let data = (0..numel(&shape)).map(|i| f(&unravel(i, &shape))).collect();
        Arr { shape, data }
    }

    fn variable(&self) -> Variable {
        Variable::from_tensor(Tensor::from_vec(self.data.clone(), &self.shape).unwrap())
    }
}

/// A view applied to an input before the op; its parameters are reduced modulo the
/// input's dims when applied.
#[derive(Clone, Debug)]
enum View {
    None,
    Transpose(usize, usize),
    /// `[start::step]` along a dim.
    Slice {
        dim: usize,
        start: usize,
        step: usize,
    },
    /// Insert a size-1 dim and expand it to `size`.
    Expand {
        dim: usize,
        size: usize,
    },
}

fn view_strategy() -> impl Strategy<Value = View> {
    prop_oneof![
        Just(View::None),
        (0usize..4, 0usize..4).prop_map(|(a, b)| View::Transpose(a, b)),
        (0usize..4, 0usize..2, 1usize..3).prop_map(|(dim, start, step)| View::Slice {
            dim,
            start,
            step
        }),
        (0usize..4, 1usize..4).prop_map(|(dim, size)| View::Expand { dim, size }),
    ]
}

/// Applies `view` to both the engine variable and the reference.
fn apply(view: &View, v: &Variable, r: &Arr) -> (Variable, Arr) {
    let n = r.shape.len();
    match *view {
        View::None => (v.clone(), r.clone()),
        View::Transpose(a, b) => {
            let (a, b) = (a % n, b % n);
            let mut shape = r.shape.clone();
            shape.swap(a, b);
            let out = Arr::build(shape, |idx| {
                let mut src = idx.to_vec();
                src.swap(a, b);
                r.at(&src)
            });
            (v.transpose(a as i64, b as i64).unwrap(), out)
        }
        View::Slice { dim, start, step } => {
            let dim = dim % n;
            let start = start.min(r.shape[dim] - 1);
            let len = (r.shape[dim] - start).div_ceil(step);
            let mut shape = r.shape.clone();
            shape[dim] = len;
            let out = Arr::build(shape, |idx| {
                let mut src = idx.to_vec();
                src[dim] = start + idx[dim] * step;
                r.at(&src)
            });
            let sliced = v
                .slice(dim as i64, Some(start as i64), None, step as i64)
                .unwrap();
            (sliced, out)
        }
        View::Expand { dim, size } => {
            let dim = dim % (n + 1);
            let mut shape = r.shape.clone();
            shape.insert(dim, size);
            let out = Arr::build(shape.clone(), |idx| {
                let mut src = idx.to_vec();
                src.remove(dim);
                r.at(&src)
            });
            let sizes: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
            let expanded = v.unsqueeze(dim as i64).unwrap().expand(&sizes).unwrap();
            (expanded, out)
        }
    }
}

/// A random array of 1 to 3 dims of sizes 1 to 4.
fn arr_strategy() -> impl Strategy<Value = Arr> {
    prop::collection::vec(1usize..=4, 1..=3).prop_flat_map(|shape| {
        let n = numel(&shape);
        prop::collection::vec(-3.0f64..3.0, n).prop_map(move |data| Arr {
            shape: shape.clone(),
            data,
        })
    })
}

/// A random strided input: an array with a view applied.
fn input_strategy() -> impl Strategy<Value = (Arr, View)> {
    (arr_strategy(), view_strategy())
}

fn strided((arr, view): &(Arr, View)) -> (Variable, Arr) {
    apply(view, &arr.variable(), arr)
}

fn assert_close(v: &Variable, expected: &Arr, what: &str) {
    assert_eq!(
        v.shape().as_slice(),
        expected.shape.as_slice(),
        "{what}: shape"
    );
    let got = v.to_vec::<f64>();
    for (i, (g, e)) in got.iter().zip(&expected.data).enumerate() {
        let tol = 1e-12 * (1.0 + e.abs()) * 16.0;
        assert!((g - e).abs() <= tol, "{what}: element {i}: {g} != {e}");
    }
}

/// A dim of an `n`-dim array given as `raw % n`, negative half of the time.
fn dim_arg(raw: usize, n: usize) -> (usize, i64) {
    let d = raw % n;
    if raw / n % 2 == 1 {
        (d, d as i64 - n as i64)
    } else {
        (d, d as i64)
    }
}

/// Random values for `shape` drawn from a seed (a small LCG: inputs whose shape depends
/// on another input's).
fn values_for(shape: &[usize], seed: u64) -> Arr {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let data = (0..numel(shape))
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f64 / (1u64 << 31) as f64) * 6.0 - 3.0
        })
        .collect();
    Arr {
        shape: shape.to_vec(),
        data,
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn unary_ops_match_the_reference(input in input_strategy()) {
        let (x, r) = strided(&input);
        let exp = Arr { shape: r.shape.clone(), data: r.data.iter().map(|v| v.exp()).collect() };
        assert_close(&x.exp().unwrap(), &exp, "exp");
        let tanh = Arr { shape: r.shape.clone(), data: r.data.iter().map(|v| v.tanh()).collect() };
        assert_close(&x.tanh().unwrap(), &tanh, "tanh");
        let neg = Arr { shape: r.shape.clone(), data: r.data.iter().map(|v| -v).collect() };
        assert_close(&x.neg().unwrap(), &neg, "neg");
    }

    #[test]
    fn binary_ops_broadcast_as_the_reference(
        out_shape in prop::collection::vec(1usize..=4, 1..=3),
        ones_a in prop::collection::vec(any::<bool>(), 3),
        ones_b in prop::collection::vec(any::<bool>(), 3),
        drop_a in 0usize..3,
        transpose_b in any::<bool>(),
        seed in any::<u64>(),
    ) {
        // Each operand: the output shape with some dims set to 1 and leading dims
        // dropped (a's), so both broadcast to `out_shape`.
        let n = out_shape.len();
        let shape_a: Vec<usize> = out_shape.iter().enumerate()
            .map(|(d, &s)| if ones_a[d] { 1 } else { s })
            .skip(drop_a.min(n - 1)).collect();
        let shape_b: Vec<usize> = out_shape.iter().enumerate()
            .map(|(d, &s)| if ones_b[d] { 1 } else { s }).collect();
        let ra = values_for(&shape_a, seed);
        let rb = values_for(&shape_b, seed ^ 0x9e37);
        let a = ra.variable();
        // b, optionally as a transposed view of a transposed contiguous copy.
        let b = if transpose_b && n >= 2 {
            let mut t_shape = shape_b.clone();
            t_shape.swap(0, n - 1);
            let t = Arr::build(t_shape, |idx| {
                let mut src = idx.to_vec();
                src.swap(0, n - 1);
                rb.at(&src)
            });
            t.variable().transpose(0, -1).unwrap()
        } else {
            rb.variable()
        };
        let offset = n - shape_a.len();
        let bcast = |r: &Arr, idx: &[usize], lead: usize| -> f64 {
            let src: Vec<usize> = r.shape.iter().enumerate()
                .map(|(d, &s)| if s == 1 { 0 } else { idx[d + lead] }).collect();
            r.at(&src)
        };
        // Where both operands have size 1 the broadcast size is 1 too.
        let bshape: Vec<usize> = (0..n)
            .map(|d| shape_b[d].max(if d >= offset { shape_a[d - offset] } else { 1 }))
            .collect();
        let reference = |f: fn(f64, f64) -> f64| Arr::build(bshape.clone(), |idx| {
            f(bcast(&ra, idx, offset), bcast(&rb, idx, 0))
        });
        assert_close(&a.add(&b).unwrap(), &reference(|x, y| x + y), "add");
        assert_close(&a.mul(&b).unwrap(), &reference(|x, y| x * y), "mul");
        assert_close(&a.sub(&b).unwrap(), &reference(|x, y| x - y), "sub");
        assert_close(&a.maximum(&b).unwrap(), &reference(f64::max), "maximum");
    }

    #[test]
    fn reductions_over_a_dim_match_the_reference(
        input in input_strategy(),
        raw_dim in 0usize..12,
        keepdim in any::<bool>(),
    ) {
        let (x, r) = strided(&input);
        let n = r.shape.len();
        let (d, dim) = dim_arg(raw_dim, n);
        let mut out_shape = r.shape.clone();
        out_shape[d] = 1;
        let fold = |init: f64, f: fn(f64, f64) -> f64| {
            let mut arr = Arr::build(out_shape.clone(), |idx| {
                let mut src = idx.to_vec();
                (0..r.shape[d]).fold(init, |acc, k| {
                    src[d] = k;
                    f(acc, r.at(&src))
                })
            });
            if !keepdim {
                arr.shape.remove(d);
            }
            arr
        };
        assert_close(&x.sum_dims(&[dim], keepdim).unwrap(), &fold(0.0, |a, b| a + b), "sum");
        assert_close(&x.amax(&[dim], keepdim).unwrap(), &fold(f64::NEG_INFINITY, f64::max), "amax");
        let mut mean = fold(0.0, |a, b| a + b);
        mean.data.iter_mut().for_each(|v| *v /= r.shape[d] as f64);
        assert_close(&x.mean_dims(&[dim], keepdim).unwrap(), &mean, "mean");
        let mut cumsum = r.clone();
        for i in 0..numel(&r.shape) {
            let idx = unravel(i, &r.shape);
            let mut src = idx.clone();
            cumsum.data[i] = (0..=idx[d]).map(|k| { src[d] = k; r.at(&src) }).sum();
        }
        assert_close(&x.cumsum(dim).unwrap(), &cumsum, "cumsum");
    }

    #[test]
    fn matmul_matches_the_reference(
        batch in 0usize..3,
        n in 1usize..5,
        k in 1usize..5,
        m in 1usize..5,
        transpose_a in any::<bool>(),
        transpose_b in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let lead: Vec<usize> = if batch == 0 { vec![] } else { vec![batch] };
        let shape_a = [lead.clone(), vec![n, k]].concat();
        let shape_b = [lead.clone(), vec![k, m]].concat();
        let ra = values_for(&shape_a, seed);
        let rb = values_for(&shape_b, seed.wrapping_add(7));
        // A transposed operand is the transposed view of its transposed copy.
        let operand = |r: &Arr, transpose: bool| -> Variable {
            if !transpose {
                return r.variable();
            }
            let nd = r.shape.len();
            let mut t_shape = r.shape.clone();
            t_shape.swap(nd - 2, nd - 1);
            let t = Arr::build(t_shape, |idx| {
                let mut src = idx.to_vec();
                src.swap(nd - 2, nd - 1);
                r.at(&src)
            });
            t.variable().transpose(-2, -1).unwrap()
        };
        let (a, b) = (operand(&ra, transpose_a), operand(&rb, transpose_b));
        let out_shape = [lead, vec![n, m]].concat();
        let expected = Arr::build(out_shape, |idx| {
            let nd = idx.len();
            let (i, j) = (idx[nd - 2], idx[nd - 1]);
            let batch_idx = &idx[..nd - 2];
            (0..k).map(|p| {
                let ia = [batch_idx, &[i, p]].concat();
                let ib = [batch_idx, &[p, j]].concat();
                ra.at(&ia) * rb.at(&ib)
            }).sum()
        });
        assert_close(&a.matmul(&b).unwrap(), &expected, "matmul");
    }

    #[test]
    fn cat_and_stack_match_the_reference(
        input in input_strategy(),
        raw_dim in 0usize..12,
        extra in 1usize..4,
        seed in any::<u64>(),
    ) {
        let (x, r) = strided(&input);
        let nd = r.shape.len();
        let (d, dim) = dim_arg(raw_dim, nd);
        // cat: a second operand that differs only in `d`'s size.
        let mut shape_y = r.shape.clone();
        shape_y[d] = extra;
        let ry = values_for(&shape_y, seed);
        let mut out_shape = r.shape.clone();
        out_shape[d] += extra;
        let expected = Arr::build(out_shape, |idx| {
            if idx[d] < r.shape[d] {
                r.at(idx)
            } else {
                let mut src = idx.to_vec();
                src[d] -= r.shape[d];
                ry.at(&src)
            }
        });
        let cat = Variable::cat(&[x.clone(), ry.variable()], dim).unwrap();
        assert_close(&cat, &expected, "cat");
        // stack: two operands of the same shape along a new dim in [-(nd+1), nd].
        let (sd, sdim) = dim_arg(raw_dim, nd + 1);
        let rz = values_for(&r.shape, seed ^ 1);
        let mut st_shape = r.shape.clone();
        st_shape.insert(sd, 2);
        let expected = Arr::build(st_shape, |idx| {
            let mut src = idx.to_vec();
            let which = src.remove(sd);
            if which == 0 { r.at(&src) } else { rz.at(&src) }
        });
        let stack = Variable::stack(&[x, rz.variable()], sdim).unwrap();
        assert_close(&stack, &expected, "stack");
    }

    #[test]
    fn permute_and_reshape_match_the_reference(
        input in input_strategy(),
        perm_seed in any::<u64>(),
    ) {
        let (x, r) = strided(&input);
        let nd = r.shape.len();
        // A permutation from the seed (Fisher-Yates on a small LCG).
        let mut perm: Vec<usize> = (0..nd).collect();
        let mut s = perm_seed;
        for i in (1..nd).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            perm.swap(i, (s >> 33) as usize % (i + 1));
        }
        let shape: Vec<usize> = perm.iter().map(|&p| r.shape[p]).collect();
        let expected = Arr::build(shape, |idx| {
            let mut src = vec![0; nd];
            for (k, &p) in perm.iter().enumerate() {
                src[p] = idx[k];
            }
            r.at(&src)
        });
        let dims: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        let permuted = x.permute(&dims).unwrap();
        assert_close(&permuted, &expected, "permute");
        // reshape of the (non-contiguous) permuted view: row-major order is kept.
        let total = numel(&expected.shape);
        let flat = Arr { shape: vec![total], data: expected.data.clone() };
        assert_close(&permuted.reshape(&[-1]).unwrap(), &flat, "reshape(-1)");
        let first = expected.shape[0];
        let two_d = Arr { shape: vec![first, total / first], data: expected.data.clone() };
        assert_close(
            &permuted.reshape(&[first as i64, -1]).unwrap(),
            &two_d,
            "reshape(first, -1)",
        );
    }

    #[test]
    fn index_select_and_gather_match_the_reference(
        input in input_strategy(),
        raw_dim in 0usize..12,
        picks in prop::collection::vec(0usize..64, 1..6),
    ) {
        let (x, r) = strided(&input);
        let nd = r.shape.len();
        let (d, dim) = dim_arg(raw_dim, nd);
        let size = r.shape[d];
        // index_select: any indices in [0, size), repeats allowed.
        let index: Vec<i64> = picks.iter().map(|&p| (p % size) as i64).collect();
        let mut shape = r.shape.clone();
        shape[d] = index.len();
        let expected = Arr::build(shape, |idx| {
            let mut src = idx.to_vec();
            src[d] = index[idx[d]] as usize;
            r.at(&src)
        });
        let index_t = Tensor::from_vec(index.clone(), &[index.len()]).unwrap();
        assert_close(&x.index_select(dim, &index_t).unwrap(), &expected, "index_select");
        // gather: an index of the input's shape with `d` resized, values from `picks`.
        let mut gshape = r.shape.clone();
        gshape[d] = picks.len();
        let gindex: Vec<i64> = (0..numel(&gshape))
            .map(|i| ((picks[i % picks.len()] + i) % size) as i64)
            .collect();
        let expected = Arr::build(gshape.clone(), |idx| {
            let mut src = idx.to_vec();
            src[d] = gindex[ravel(idx, &gshape)] as usize;
            r.at(&src)
        });
        let gindex_t = Tensor::from_vec(gindex, &gshape).unwrap();
        assert_close(&x.gather(dim, &gindex_t).unwrap(), &expected, "gather");
    }
}
