//! Synthetic 3x32x32 images for the `rustgrad::nn` examples: each class is a colour
//! wave pattern (per-channel amplitudes and a spatial frequency fixed per class), each
//! image that pattern at a random phase plus Gaussian noise. Everything is drawn from
//! the default generator, so a seed fixes the data.

use rustgrad::{random, DType, Result, Tensor};

/// Images `(n, 3, 32, 32)` float32 and their labels `(n,)` int64.
pub struct Images {
    /// The images.
    pub x: Tensor,
    /// The class of each image.
    pub y: Tensor,
}

/// The class patterns: per class, three channel amplitudes and a frequency pair.
pub struct Classes {
    amplitude: Vec<[f32; 3]>,
    frequency: Vec<[f32; 2]>,
}

impl Classes {
    /// `count` random class patterns.
    pub fn new(count: usize) -> Result<Classes> {
        let a = random::rand(&[count, 3], DType::F32)?.to_vec::<f32>();
        let f = random::randint(1, 6, &[count, 2], DType::I64)?.to_vec::<i64>();
        Ok(Classes {
            amplitude: (0..count)
                .map(|c| [0, 1, 2].map(|k| 0.25 + 1.5 * a[3 * c + k]))
                .collect(),
            frequency: (0..count)
                .map(|c| [f[2 * c] as f32, f[2 * c + 1] as f32])
                .collect(),
        })
    }

    /// `per_class` images of each class in `classes`, labelled `class - classes.start`
    /// (so each task's labels start at 0), in random order.
    pub fn sample(&self, classes: std::ops::Range<usize>, per_class: usize) -> Result<Images> {
        let n = classes.len() * per_class;
        let phase = random::rand(&[n, 2], DType::F32)?.to_vec::<f32>();
        let noise = random::randn(&[n, 3, 32, 32], DType::F32)?.to_vec::<f32>();
        let order = random::randperm(n, DType::I64)?.to_vec::<i64>();
        let mut x = vec![0f32; n * 3 * 32 * 32];
        let mut y = vec![0i64; n];
        for (slot, &i) in order.iter().enumerate() {
            let i = i as usize;
            let class = classes.start + i / per_class;
            y[slot] = (class - classes.start) as i64;
            let [fx, fy] = self.frequency[class];
            let tau = std::f32::consts::TAU;
            for k in 0..3 {
                for r in 0..32 {
                    for c in 0..32 {
                        let wave = (tau * (fx * c as f32 / 32.0 + phase[2 * i])).sin()
                            * (tau * (fy * r as f32 / 32.0 + phase[2 * i + 1])).cos();
                        let at = ((i * 3 + k) * 32 + r) * 32 + c;
                        x[((slot * 3 + k) * 32 + r) * 32 + c] =
                            self.amplitude[class][k] * wave + 0.5 * noise[at];
                    }
                }
            }
        }
        Ok(Images {
            x: Tensor::from_vec(x, &[n, 3, 32, 32])?,
            y: Tensor::from_vec(y, &[n])?,
        })
    }
}
