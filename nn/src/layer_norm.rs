//! `LayerNorm`: normalisation over the trailing `normalized_shape` dimensions.

use crate::init;
use crate::module::Forward;
use crate::Module;
use kiln::{DType, Error, Result, Tensor};

/// `nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True)`: weight
/// (ones) and bias (zeros) of shape `normalized_shape` when `elementwise_affine`.
#[derive(Module)]
#[module(crate = crate)]
pub struct LayerNorm {
    pub weight: Option<Tensor>,
    pub bias: Option<Tensor>,
    #[module(skip)]
    pub normalized_shape: Vec<usize>,
    pub eps: f64,
    pub elementwise_affine: bool,
}

impl LayerNorm {
    /// A float32 layer with PyTorch's defaults (`eps=1e-5`, affine with a bias).
    pub fn new(normalized_shape: &[usize]) -> Result<Self> {
        Self::with_options(normalized_shape, 1e-5, true, true, DType::F32)
    }

    /// `LayerNorm(normalized_shape, eps, elementwise_affine, bias, dtype=dtype)`.
    pub fn with_options(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
        dtype: DType,
    ) -> Result<Self> {
        let (weight, bias) = if elementwise_affine {
            let w = Tensor::empty(normalized_shape, dtype)?;
            init::ones_(&w)?;
            let b = if bias {
                let b = Tensor::empty(normalized_shape, dtype)?;
                init::zeros_(&b)?;
                Some(b.requires_grad_(true)?)
            } else {
                None
            };
            (Some(w.requires_grad_(true)?), b)
        } else {
            (None, None)
        };
        Ok(LayerNorm {
            weight,
            bias,
            normalized_shape: normalized_shape.to_vec(),
            eps,
            elementwise_affine,
        })
    }
}

impl Forward for LayerNorm {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let n = self.normalized_shape.len();
        let s = input.shape();
        if s.len() < n || s[s.len() - n..] != self.normalized_shape[..] {
            return Err(Error::shape(
                "LayerNorm",
                format!(
                    "Given normalized_shape={:?}, expected input with shape [*, {}], but got input of size{:?}",
                    self.normalized_shape,
                    self.normalized_shape
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    s
                ),
            ));
        }
        let shape: Vec<i64> = self.normalized_shape.iter().map(|&d| d as i64).collect();
        kiln::layer_norm_with(
            input,
            &shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
            true,
        )
    }
}
