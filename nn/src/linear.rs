//! `Linear`: y = x Wᵀ + b.

use crate::init::{self, FanMode, Nonlinearity};
use crate::module::Forward;
use crate::Module;
use kiln_core::{DType, Result, Tensor};

/// `nn.Linear(in_features, out_features, bias=True)`: weight `[out, in]`, bias `[out]`,
/// initialised as PyTorch does (kaiming_uniform with a = √5, bias U(±1/√in)).
#[derive(Module)]
#[module(crate = crate)]
pub struct Linear {
    pub weight: Tensor,
    pub bias: Option<Tensor>,
}

impl Linear {
    /// A float32 layer with a bias.
    pub fn new(in_features: usize, out_features: usize) -> Result<Self> {
        Self::with_options(in_features, out_features, true, DType::F32)
    }

    /// `Linear(in_features, out_features, bias, dtype=dtype)`.
    pub fn with_options(
        in_features: usize,
        out_features: usize,
        bias: bool,
        dtype: DType,
    ) -> Result<Self> {
        let weight = Tensor::empty([out_features, in_features], dtype)?;
        init::kaiming_uniform_(
            &weight,
            5f64.sqrt(),
            FanMode::FanIn,
            Nonlinearity::LeakyRelu(0.0),
        )?;
        let bias = if bias {
            let b = Tensor::empty([out_features], dtype)?;
            let bound = if in_features > 0 {
                1.0 / (in_features as f64).sqrt()
            } else {
                0.0
            };
            init::uniform_(&b, -bound, bound)?;
            Some(b.requires_grad_(true)?)
        } else {
            None
        };
        Ok(Linear {
            weight: weight.requires_grad_(true)?,
            bias,
        })
    }

    pub fn in_features(&self) -> usize {
        self.weight.shape()[1]
    }

    pub fn out_features(&self) -> usize {
        self.weight.shape()[0]
    }
}

impl Forward for Linear {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::linear_with(input, &self.weight, self.bias.as_ref())
    }
}
