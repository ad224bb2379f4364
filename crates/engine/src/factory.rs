//! Factories with PyTorch's exact values: `linspace`, `logspace` and `eye`. See Note
//! \[Factories\].

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::tensor::{Scalar, Tensor};

fn check_steps(steps: i64) -> Result<usize> {
    usize::try_from(steps)
        .map_err(|_| Error::InvalidArgument("number of steps must be non-negative".into()))
}

fn refuse_bool(op: &'static str, dtype: DType) -> Result<()> {
    if dtype == DType::Bool {
        return Err(Error::unsupported_dtype(op, dtype));
    }
    Ok(())
}

/// The `i`-th of `steps` points from `start` to `end` as PyTorch's CPU kernel computes
/// it: the first half counted up from `start`, the second half counted down from `end`
/// (so both ends are exact), each as one fused multiply-add.
macro_rules! linspace_point {
    ($start:expr, $end:expr, $step:expr, $i:expr, $steps:expr, $t:ty) => {
        if $i < $steps / 2 {
            $step.mul_add($i as $t, $start)
        } else {
            (-$step).mul_add(($steps - $i - 1) as $t, $end)
        }
    };
}

impl Tensor {
    /// PyTorch's `linspace(start, end, steps, dtype=...)`: `steps` evenly spaced values
    /// from `start` to `end`, bit for bit PyTorch's on the CPU.
    pub fn linspace(start: Scalar, end: Scalar, steps: i64, dtype: DType) -> Result<Tensor> {
        let steps = check_steps(steps)?;
        refuse_bool("linspace_cpu", dtype)?;
        crate::tensor::check_allocation(steps, dtype)?;
        if steps == 0 {
            return Tensor::zeros(&[0], dtype);
        }
        if steps == 1 {
            return Tensor::full_scalar(&[1], start, dtype);
        }
        if dtype.is_half() {
            // Computed in float32, rounded once (Note [Storage dtypes]).
            return Tensor::linspace(start, end, steps as i64, DType::F32)?.to_dtype(dtype);
        }
        let last = (steps - 1) as f64;
        Ok(match dtype {
            DType::F32 => {
                let (s, e): (f32, f32) = (start.cast(), end.cast());
                let step = (e - s) / (steps - 1) as f32;
                let v: Vec<f32> = (0..steps)
                    .map(|i| linspace_point!(s, e, step, i, steps, f32))
                    .collect();
                Tensor::from_vec(v, &[steps])?
            }
            DType::F64 => {
                let (s, e): (f64, f64) = (start.cast(), end.cast());
                let step = (e - s) / last;
                let v: Vec<f64> = (0..steps)
                    .map(|i| linspace_point!(s, e, step, i, steps, f64))
                    .collect();
                Tensor::from_vec(v, &[steps])?
            }
            _ => {
                // Integers: the step in double, each point truncated toward zero.
                let (s, e) = (start.cast::<i64>() as f64, end.cast::<i64>() as f64);
                let step = (e - s) / last;
                let v: Vec<i64> = (0..steps)
                    .map(|i| i64::from_f64(linspace_point!(s, e, step, i, steps, f64)))
                    .collect();
                Tensor::from_vec(v, &[steps])?.to_dtype(dtype)?
            }
        })
    }

    /// PyTorch's `logspace(start, end, steps, base)`: `base` raised to the points of a
    /// linspace computed in double precision (PyTorch's CPU formula, without fusing).
    pub fn logspace(
        start: Scalar,
        end: Scalar,
        steps: i64,
        base: f64,
        dtype: DType,
    ) -> Result<Tensor> {
        let steps = check_steps(steps)?;
        refuse_bool("logspace_cpu", dtype)?;
        crate::tensor::check_allocation(steps, dtype)?;
        if steps == 0 {
            return Tensor::zeros(&[0], dtype);
        }
        if steps == 1 {
            let v = base.powf(start.to_f64());
            return Tensor::full_scalar(&[1], Scalar::Float(v), dtype);
        }
        // The start and end in the result dtype, their difference taken there too.
        let (s, e, diff) = match dtype {
            DType::F32 => {
                let (s, e): (f32, f32) = (start.cast(), end.cast());
                (s as f64, e as f64, (e - s) as f64)
            }
            DType::F64 => {
                let (s, e): (f64, f64) = (start.cast(), end.cast());
                (s, e, e - s)
            }
            _ => {
                let (s, e): (i64, i64) = (start.cast(), end.cast());
                (s as f64, e as f64, e.wrapping_sub(s) as f64)
            }
        };
        if dtype.is_half() {
            let wide = Tensor::logspace(start, end, steps as i64, base, DType::F32)?;
            return wide.to_dtype(dtype);
        }
        let step = diff / (steps - 1) as f64;
        let point = |i: usize| {
            let exponent = if i < steps / 2 {
                s + step * i as f64
            } else {
                e - step * (steps - i - 1) as f64
            };
            base.powf(exponent)
        };
        Ok(match dtype {
            DType::F32 => {
                Tensor::from_vec((0..steps).map(|i| point(i) as f32).collect(), &[steps])?
            }
            DType::F64 => Tensor::from_vec((0..steps).map(point).collect(), &[steps])?,
            _ => Tensor::from_vec(
                (0..steps)
                    .map(|i| i64::from_f64(point(i)))
                    .collect::<Vec<i64>>(),
                &[steps],
            )?
            .to_dtype(dtype)?,
        })
    }

    /// PyTorch's `eye(n, m)`: an `n`×`m` matrix with ones on the diagonal.
    pub fn eye(n: i64, m: Option<i64>, dtype: DType) -> Result<Tensor> {
        let rows = usize::try_from(n).map_err(|_| {
            Error::InvalidArgument(format!("n must be greater or equal to 0, got {n}"))
        })?;
        let m = m.unwrap_or(n);
        let cols = usize::try_from(m).map_err(|_| {
            Error::InvalidArgument(format!("m must be greater or equal to 0, got {m}"))
        })?;
        let numel = crate::shape::checked_numel(&[rows, cols])?;
        crate::tensor::check_allocation(numel, dtype)?;
        let out = Tensor::zeros(&[rows, cols], dtype)?;
        let diagonal = rows.min(cols);
        if diagonal > 0 {
            // The diagonal is the view with stride cols + 1.
            let layout = crate::layout::Layout::new(
                smallvec::smallvec![diagonal],
                smallvec::smallvec![cols + 1],
                0,
            );
            out.as_strided(&layout)?.fill(
                1.0,
                crate::storage::WriteSite::Rust(std::panic::Location::caller()),
            )?;
        }
        Ok(out)
    }
}
