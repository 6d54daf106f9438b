//! The digits models, shared by `digits`, `digits_cnn` and `digits_ddp`.

use kiln::nn::{
    BatchNorm2d, Conv2d, ConvOptions, Dropout, Flatten, Forward, Linear, MaxPool2d, Module,
};
use kiln::{Result, Tensor};

/// The 64-128-10 MLP of `digits`.
#[derive(Module)]
pub struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

impl Mlp {
    pub fn new() -> Result<Self> {
        Ok(Mlp {
            fc1: Linear::new(64, 128)?,
            fc2: Linear::new(128, 10)?,
        })
    }
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc2.forward(&self.fc1.forward(x)?.relu()?)
    }
}

/// The CNN of `digits_cnn`: two 3×3 convolutions with batch norm, max-pooling, dropout
/// and a linear head.
#[derive(Module)]
pub struct Cnn {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    conv2: Conv2d,
    bn2: BatchNorm2d,
    pool: MaxPool2d,
    flatten: Flatten,
    dropout: Dropout,
    fc: Linear,
}

impl Cnn {
    pub fn new() -> Result<Self> {
        let same = || ConvOptions::default().padding(1);
        Ok(Cnn {
            conv1: Conv2d::with_options(1, 32, 3, same())?,
            bn1: BatchNorm2d::new(32)?,
            conv2: Conv2d::with_options(32, 64, 3, same())?,
            bn2: BatchNorm2d::new(64)?,
            pool: MaxPool2d::new(2),
            flatten: Flatten::default(),
            dropout: Dropout::new(0.3)?,
            fc: Linear::new(64 * 4 * 4, 10)?,
        })
    }
}

impl Forward for Cnn {
    /// `x`: `[n, 64]` pixels, seen as `[n, 1, 8, 8]` images.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = x.reshape([-1, 1, 8, 8])?;
        let x = self.bn1.forward(&self.conv1.forward(&x)?)?.relu()?;
        let x = self.bn2.forward(&self.conv2.forward(&x)?)?.relu()?;
        let x = self.flatten.forward(&self.pool.forward(&x)?)?;
        self.fc.forward(&self.dropout.forward(&x)?)
    }
}
