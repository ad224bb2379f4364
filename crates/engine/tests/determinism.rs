//! Results are bitwise identical for any number of threads (Note [Determinism]).
//!
//! The thread count is process-wide, so this binary holds a single test.

use rustgrad::{DType, Result, Tensor, Variable};

/// Deterministic values in [-1, 1) without the engine's generator.
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn leaf(shape: &[usize], dtype: DType, seed: u64) -> Result<Variable> {
    let n = shape.iter().product();
    let tensor = Tensor::from_vec(values(n, seed), shape)?.to_dtype(dtype)?;
    Variable::new(tensor, true)
}

/// The bit patterns of every value a workload produces: its loss and the gradients of
/// all its leaves.
fn bits(v: &Variable) -> Vec<u64> {
    match v.dtype() {
        DType::F32 => v
            .to_vec::<f32>()
            .into_iter()
            .map(|x| x.to_bits() as u64)
            .collect(),
        _ => v.to_vec::<f64>().into_iter().map(f64::to_bits).collect(),
    }
}

/// A large matmul, a broadcast bias add (whose gradient is a reduction over rows),
/// reductions over 2^18 elements (32 fixed-size chunks; a million would only make the
/// debug build slower), and fan-in of
/// two gradients into `h` and into `big`. Sizes cross `PARALLEL_MIN_ELEMENTS` and the
/// matmul's parallel threshold, so every kernel takes its parallel path.
fn workload(dtype: DType) -> Result<Vec<Vec<u64>>> {
    let n = 256;
    let a = leaf(&[n, 2 * n], dtype, 1)?;
    let w = leaf(&[2 * n, n], dtype, 2)?;
    let bias = leaf(&[n], dtype, 3)?;
    let big = leaf(&[1 << 18], dtype, 4)?;
    let col = leaf(&[512, 1], dtype, 5)?;

    let h = a.matmul(&w)?.add(&bias)?.tanh()?; // [n, n]
    let s1 = h.sum()?;
    let m = big.view(&[512, 512])?.add(&col)?; // col's gradient sums over 512 columns
    let s2 = m.mul(&m)?.mean()?;
    let s3 = big.sum_dims(&[0], false)?;
    // The loss multiplies reductions, so every gradient depends on their exact bits.
    let loss = s1.mul(&s2)?.add(&s3.mul(&h.mean()?)?)?;
    loss.backward()?;

    let mut out = vec![bits(&loss), bits(&s1), bits(&s2), bits(&s3)];
    for leaf in [&a, &w, &bias, &big, &col] {
        out.push(bits(&leaf.grad().expect("every leaf gets a gradient")));
    }
    Ok(out)
}

#[test]
fn results_do_not_depend_on_the_thread_count() -> Result<()> {
    for dtype in [DType::F64, DType::F32] {
        rustgrad::set_num_threads(1).unwrap();
        let reference = workload(dtype)?;
        for threads in [2, 4] {
            rustgrad::set_num_threads(threads).unwrap();
            assert_eq!(rustgrad::get_num_threads(), threads);
            let other = workload(dtype)?;
            for (i, (r, o)) in reference.iter().zip(&other).enumerate() {
                let first = r.iter().zip(o).position(|(x, y)| x != y);
                assert!(
                    first.is_none(),
                    "{dtype:?}, {threads} threads: result {i} differs from 1 thread at element {first:?}"
                );
            }
        }
    }
    Ok(())
}
