//! `Bilinear`: y = x₁ᵀ A x₂ + b.

use crate::Module;
use kiln_core::{DType, Error, Result, Tensor};

/// `nn.Bilinear(in1_features, in2_features, out_features, bias=True)`: weight
/// `[out, in1, in2]`, bias `[out]`, both U(±1/√in1_features) as PyTorch. Takes two inputs,
/// so it has an inherent `forward(x1, x2)` rather than [`crate::Forward`].
#[derive(Module)]
#[module(crate = crate)]
pub struct Bilinear {
    pub weight: Tensor,
    pub bias: Option<Tensor>,
}

impl Bilinear {
    pub fn new(in1_features: usize, in2_features: usize, out_features: usize) -> Result<Self> {
        Self::with_options(in1_features, in2_features, out_features, true, DType::F32)
    }

    pub fn with_options(
        in1_features: usize,
        in2_features: usize,
        out_features: usize,
        bias: bool,
        dtype: DType,
    ) -> Result<Self> {
        let bound = if in1_features > 0 {
            1.0 / (in1_features as f64).sqrt()
        } else {
            0.0
        };
        let weight = Tensor::empty([out_features, in1_features, in2_features], dtype)?;
        crate::init::uniform_(&weight, -bound, bound)?;
        let bias = if bias {
            let b = Tensor::empty([out_features], dtype)?;
            crate::init::uniform_(&b, -bound, bound)?;
            Some(b.requires_grad_(true)?)
        } else {
            None
        };
        Ok(Bilinear {
            weight: weight.requires_grad_(true)?,
            bias,
        })
    }

    pub fn in1_features(&self) -> usize {
        self.weight.shape()[1]
    }
    pub fn in2_features(&self) -> usize {
        self.weight.shape()[2]
    }
    pub fn out_features(&self) -> usize {
        self.weight.shape()[0]
    }

    /// `input1` `[*, in1]`, `input2` `[*, in2]` → `[*, out]`.
    pub fn forward(&self, input1: &Tensor, input2: &Tensor) -> Result<Tensor> {
        let (s1, s2) = (input1.shape(), input2.shape());
        if s1.last() != Some(&self.in1_features()) || s2.last() != Some(&self.in2_features()) {
            return Err(Error::shape(
                "Bilinear",
                format!(
                    "expected inputs of shape [*, {}] and [*, {}], got {s1:?} and {s2:?}",
                    self.in1_features(),
                    self.in2_features()
                ),
            ));
        }
        kiln_core::bilinear_with(input1, input2, &self.weight, self.bias.as_ref())
    }
}
