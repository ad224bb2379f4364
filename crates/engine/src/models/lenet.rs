//! The seed notes' LeNet (PyTorch's save/load tutorial's `TheModelClass`).

use crate::error::Result;
use crate::nn::{Conv2d, Linear, MaxPool2d, Module, Training};
use crate::variable::Variable;

/// LeNet-5 for 3x32x32 images, as `rustgrad.models.LeNet`: conv 3->6 (5x5), 2x2 max
/// pool, conv 6->16 (5x5), 2x2 max pool, then 400->120->84->`num_classes` with ReLUs.
/// Parameter names `conv1`, `conv2`, `fc1`..`fc3` (`pool` has none).
#[derive(crate::nn::Module)]
pub struct LeNet {
    /// 3 -> 6 channels, 5x5.
    pub conv1: Conv2d,
    /// 2x2 max pool, used after each convolution.
    pub pool: MaxPool2d,
    /// 6 -> 16 channels, 5x5.
    pub conv2: Conv2d,
    /// 400 -> 120.
    pub fc1: Linear,
    /// 120 -> 84.
    pub fc2: Linear,
    /// 84 -> `num_classes`.
    pub fc3: Linear,
    /// The train/eval flag.
    pub training: Training,
}

/// `LeNet(num_classes)`, initialised as the Python package's (same draws, same order).
pub fn lenet(num_classes: usize) -> Result<LeNet> {
    Ok(LeNet {
        conv1: Conv2d::new(3, 6, 5)?,
        pool: MaxPool2d::new(2, 2, 0),
        conv2: Conv2d::new(6, 16, 5)?,
        fc1: Linear::new(16 * 5 * 5, 120)?,
        fc2: Linear::new(120, 84)?,
        fc3: Linear::new(84, num_classes)?,
        training: Training::default(),
    })
}

impl Module for LeNet {
    fn forward(&self, x: &Variable) -> Result<Variable> {
        let x = self.pool.forward(&self.conv1.forward(x)?.relu()?)?;
        let x = self.pool.forward(&self.conv2.forward(&x)?.relu()?)?;
        let x = x.view(&[-1, 16 * 5 * 5])?;
        let x = self.fc1.forward(&x)?.relu()?;
        let x = self.fc2.forward(&x)?.relu()?;
        self.fc3.forward(&x)
    }
}
