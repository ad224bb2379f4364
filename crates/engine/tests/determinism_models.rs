//! A training step of an MLP, a small convolutional net and a ResNet-18 basic block
//! gives bitwise the same loss, gradients and updated parameters for 1, 2, 4 and 16
//! threads (16 runs oversubscribed on a smaller machine). The GEMM and convolution
//! plans change with the thread count (Note [GEMM plans]); the results must not.
//!
//! The thread count is process-wide, so this binary holds a single test.

use rustgrad::optim::Sgd;
use rustgrad::{ConvPadding, DType, Pool2d, Reduction, Result, Tensor, Variable};

/// Deterministic values in [-scale, scale) without the engine's generator.
fn values(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0) * scale
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64, scale: f64) -> Result<Tensor> {
    let n = shape.iter().product();
    Tensor::from_vec(values(n, seed, scale), shape)?.to_dtype(DType::F32)
}

fn param(shape: &[usize], seed: u64) -> Result<Variable> {
    let fan_in: usize = shape[1..].iter().product::<usize>().max(1);
    Variable::new(tensor(shape, seed, 1.0 / (fan_in as f64).sqrt())?, true)
}

fn input(shape: &[usize], seed: u64) -> Result<Variable> {
    Variable::new(tensor(shape, seed, 1.0)?, false)
}

fn targets(n: usize, classes: i64) -> Result<Variable> {
    let t: Vec<i64> = (0..n as i64).map(|i| (i * 7 + 3) % classes).collect();
    Variable::new(Tensor::from_vec(t, &[n])?, false)
}

fn bits(v: &Variable) -> Vec<u32> {
    v.to_vec::<f32>().into_iter().map(f32::to_bits).collect()
}

fn conv(x: &Variable, w: &Variable, stride: i64, pad: i64) -> Result<Variable> {
    x.conv2d(
        w,
        None,
        &[stride, stride],
        ConvPadding::Explicit(&[pad, pad]),
        &[1, 1],
        1,
    )
}

fn bn(x: &Variable, gamma: &Variable, beta: &Variable) -> Result<Variable> {
    x.batch_norm(None, None, Some(gamma), Some(beta), true, 0.1, 1e-5)
}

/// One SGD (momentum 0.9) step of `loss(params)`; returns the bits of the loss, every
/// gradient and every updated parameter.
fn step(
    params: Vec<Variable>,
    loss: impl Fn(&[Variable]) -> Result<Variable>,
) -> Result<Vec<Vec<u32>>> {
    let mut opt = Sgd::new(params.clone(), 0.05)?.with_momentum(0.9);
    let l = loss(&params)?;
    l.backward()?;
    let mut out = vec![bits(&l)];
    out.extend(
        params
            .iter()
            .map(|p| bits(&p.grad().expect("every parameter gets a gradient"))),
    );
    opt.step()?;
    out.extend(params.iter().map(bits));
    Ok(out)
}

/// MLP 784-256-256-10, batch 64.
fn mlp() -> Result<Vec<Vec<u32>>> {
    let x = input(&[64, 784], 1)?;
    let y = targets(64, 10)?;
    let params = vec![
        param(&[256, 784], 2)?,
        param(&[256], 3)?,
        param(&[256, 256], 4)?,
        param(&[256], 5)?,
        param(&[10, 256], 6)?,
        param(&[10], 7)?,
    ];
    step(params, |p| {
        let h = x.linear(&p[0], Some(&p[1]))?.relu()?;
        let h = h.linear(&p[2], Some(&p[3]))?.relu()?;
        h.linear(&p[4], Some(&p[5]))?
            .cross_entropy(&y, None, Reduction::Mean, -100, 0.0)
    })
}

/// conv(3->16) - bn - relu - maxpool - conv(16->32) - bn - relu - linear, batch 4, 32x32.
fn conv_net() -> Result<Vec<Vec<u32>>> {
    let x = input(&[4, 3, 32, 32], 11)?;
    let y = targets(4, 10)?;
    let params = vec![
        param(&[16, 3, 3, 3], 12)?,
        param(&[16], 13)?,
        param(&[16], 14)?,
        param(&[32, 16, 3, 3], 15)?,
        param(&[32], 16)?,
        param(&[32], 17)?,
        param(&[10, 32 * 16 * 16], 18)?,
    ];
    let pool = Pool2d {
        kernel_size: [2, 2],
        stride: [2, 2],
        padding: [0, 0],
        dilation: [1, 1],
        ceil_mode: false,
    };
    step(params, |p| {
        let h = bn(&conv(&x, &p[0], 1, 1)?, &p[1], &p[2])?.relu()?;
        let h = h.max_pool2d_with_indices(&pool)?.0;
        let h = bn(&conv(&h, &p[3], 1, 1)?, &p[4], &p[5])?.relu()?;
        h.reshape(&[4, -1])?.linear(&p[6], None)?.cross_entropy(
            &y,
            None,
            Reduction::Mean,
            -100,
            0.0,
        )
    })
}

/// ResNet-18's downsampling basic block (64 -> 128 channels, stride 2, 1x1 projection),
/// batch 4, 16x16, then global average pooling and a squared loss.
fn basic_block() -> Result<Vec<Vec<u32>>> {
    let x = input(&[4, 64, 16, 16], 21)?;
    let params = vec![
        param(&[128, 64, 3, 3], 22)?,
        param(&[128], 23)?,
        param(&[128], 24)?,
        param(&[128, 128, 3, 3], 25)?,
        param(&[128], 26)?,
        param(&[128], 27)?,
        param(&[128, 64, 1, 1], 28)?,
        param(&[128], 29)?,
        param(&[128], 30)?,
    ];
    step(params, |p| {
        let h = bn(&conv(&x, &p[0], 2, 1)?, &p[1], &p[2])?.relu()?;
        let h = bn(&conv(&h, &p[3], 1, 1)?, &p[4], &p[5])?;
        let skip = bn(&conv(&x, &p[6], 2, 0)?, &p[7], &p[8])?;
        let out = h.add(&skip)?.relu()?.adaptive_avg_pool2d(&[1, 1])?;
        out.mul(&out)?.mean()
    })
}

#[test]
fn training_steps_do_not_depend_on_the_thread_count() -> Result<()> {
    type Model = fn() -> Result<Vec<Vec<u32>>>;
    let models: [(&str, Model); 3] = [
        ("mlp", mlp),
        ("conv net", conv_net),
        ("basic block", basic_block),
    ];
    for (name, model) in models {
        rustgrad::set_num_threads(1).unwrap();
        let reference = model()?;
        for threads in [2, 4, 16] {
            rustgrad::set_num_threads(threads).unwrap();
            let other = model()?;
            for (i, (r, o)) in reference.iter().zip(&other).enumerate() {
                let first = r.iter().zip(o).position(|(x, y)| x != y);
                assert!(
                    first.is_none(),
                    "{name}, {threads} threads: result {i} differs from 1 thread at element {first:?}"
                );
            }
        }
    }
    Ok(())
}
