//! `BatchNorm1d/2d/3d`, `GroupNorm`, `LayerNorm`, `RMSNorm`.

use crate::batch_norm_sync::BatchNormSync;
use crate::init;
use crate::module::{BufferField, Forward, ModuleField, Visitor, VisitorMut};
use crate::Module;
use kiln_core::{no_grad, DType, Error, Result, Tensor};
use std::sync::Arc;

/// The keyword arguments of `nn.BatchNorm{1,2,3}d` after `num_features`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchNormOptions {
    pub eps: f64,
    /// `None` is PyTorch's `momentum=None`: a cumulative moving average
    /// (factor `1 / num_batches_tracked`).
    pub momentum: Option<f64>,
    pub affine: bool,
    pub track_running_stats: bool,
    pub dtype: DType,
}

impl Default for BatchNormOptions {
    /// eps 1e-5, momentum 0.1, affine, tracking running stats, float32.
    fn default() -> Self {
        BatchNormOptions {
            eps: 1e-5,
            momentum: Some(0.1),
            affine: true,
            track_running_stats: true,
            dtype: DType::F32,
        }
    }
}

impl BatchNormOptions {
    crate::setters!(eps: f64, momentum: Option<f64>, affine: bool, track_running_stats: bool, dtype: DType);
}

/// `nn.BatchNorm1d` / `2d` / `3d` (`D`): parameters `weight` (ones) and `bias` (zeros) when
/// affine; buffers `running_mean` (zeros), `running_var` (ones) and `num_batches_tracked`
/// (int64 0) when tracking running stats. In training the batch's statistics normalize and
/// the running ones are updated in place (`running = (1 - m)·running + m·batch`, the variance
/// unbiased); in evaluation the running ones normalize. Threads may share one layer in
/// training: each pass's counter and running-statistic updates are atomic.
///
/// `load_state_dict` accepts a state dict without `num_batches_tracked` and keeps the
/// layer's own counter, as PyTorch's `_NormBase._load_from_state_dict` does for checkpoints
/// written before the buffer existed.
///
/// `sync` (none by default) computes the training statistics over several processes
/// ([`BatchNormSync`]); module walks reach it through [`VisitorMut::batch_norm_sync`].
pub struct BatchNorm<const D: usize> {
    pub weight: Option<Tensor>,
    pub bias: Option<Tensor>,
    pub running_mean: Option<Tensor>,
    pub running_var: Option<Tensor>,
    pub num_batches_tracked: Option<Tensor>,
    pub num_features: usize,
    pub options: BatchNormOptions,
    pub training: bool,
    pub sync: Option<Arc<dyn BatchNormSync>>,
}

// Written out (not derived) for `optional_state_keys`.
impl<const D: usize> Module for BatchNorm<D> {
    fn visit(&self, v: &mut dyn Visitor) {
        self.weight.visit_field("weight", v);
        self.bias.visit_field("bias", v);
        self.running_mean.visit_buffer("running_mean", v);
        self.running_var.visit_buffer("running_var", v);
        self.num_batches_tracked
            .visit_buffer("num_batches_tracked", v);
        v.training(self.training);
    }
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        self.weight.visit_field_mut("weight", v)?;
        self.bias.visit_field_mut("bias", v)?;
        self.running_mean.visit_buffer_mut("running_mean", v)?;
        self.running_var.visit_buffer_mut("running_var", v)?;
        self.num_batches_tracked
            .visit_buffer_mut("num_batches_tracked", v)?;
        v.training(&mut self.training);
        v.batch_norm_sync(&mut self.sync);
        Ok(())
    }
    fn optional_state_keys(&self) -> &'static [&'static str] {
        &["num_batches_tracked"]
    }
}

pub type BatchNorm1d = BatchNorm<1>;
pub type BatchNorm2d = BatchNorm<2>;
pub type BatchNorm3d = BatchNorm<3>;

impl<const D: usize> BatchNorm<D> {
    fn name() -> &'static str {
        ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"][D - 1]
    }

    pub fn new(num_features: usize) -> Result<Self> {
        Self::with_options(num_features, BatchNormOptions::default())
    }

    pub fn with_options(num_features: usize, options: BatchNormOptions) -> Result<Self> {
        let dt = options.dtype;
        if !dt.is_floating_point() {
            return Err(Error::dtype(
                Self::name(),
                format!("dtype must be floating point, got {dt}"),
            ));
        }
        let param = |v: f64| -> Result<Tensor> {
            Tensor::full([num_features], v, dt)?.requires_grad_(true)
        };
        let (weight, bias) = if options.affine {
            (Some(param(1.0)?), Some(param(0.0)?))
        } else {
            (None, None)
        };
        let (running_mean, running_var, num_batches_tracked) = if options.track_running_stats {
            (
                Some(Tensor::zeros([num_features], dt)?),
                Some(Tensor::ones([num_features], dt)?),
                Some(Tensor::zeros((), DType::I64)?),
            )
        } else {
            (None, None, None)
        };
        Ok(BatchNorm {
            weight,
            bias,
            running_mean,
            running_var,
            num_batches_tracked,
            num_features,
            options,
            training: true,
            sync: None,
        })
    }

    /// `reset_running_stats()`: zeros / ones / 0.
    pub fn reset_running_stats(&self) -> Result<()> {
        let _g = no_grad();
        if let Some(m) = &self.running_mean {
            m.zero_()?;
        }
        if let Some(v) = &self.running_var {
            v.fill_(1.0)?;
        }
        if let Some(n) = &self.num_batches_tracked {
            n.zero_()?;
        }
        Ok(())
    }

    fn check_input(&self, input: &Tensor) -> Result<()> {
        let d = input.dim();
        let ok = match D {
            1 => d == 2 || d == 3,
            2 => d == 4,
            _ => d == 5,
        };
        if !ok {
            let want = match D {
                1 => "2D or 3D",
                2 => "4D",
                _ => "5D",
            };
            return Err(Error::shape(
                Self::name(),
                format!("expected {want} input (got {d}D input)"),
            ));
        }
        if input.shape()[1] != self.num_features {
            return Err(Error::shape(
                Self::name(),
                format!(
                    "expected input with {} channels (num_features) in dim 1, got input of size {:?}",
                    self.num_features,
                    input.shape()
                ),
            ));
        }
        Ok(())
    }
}

impl<const D: usize> Forward for BatchNorm<D> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        self.check_input(input)?;
        let o = &self.options;
        let mut factor = o.momentum.unwrap_or(0.0);
        if self.training && o.track_running_stats {
            if let Some(n) = &self.num_batches_tracked {
                let _g = no_grad();
                // In place (read and written under the buffer's lock), as PyTorch's `add_`:
                // threads sharing the layer each count their pass.
                n.add_scalar_(1)?;
                if o.momentum.is_none() {
                    factor = 1.0 / n.item::<i64>()? as f64;
                }
            }
        }
        let bn_training =
            self.training || (self.running_mean.is_none() && self.running_var.is_none());
        // Running stats are used in eval, and updated in training when tracked.
        let use_stats = !self.training || o.track_running_stats;
        let (rm, rv) = if use_stats {
            (self.running_mean.as_ref(), self.running_var.as_ref())
        } else {
            (None, None)
        };
        if let (true, Some(sync)) = (bn_training && self.training, &self.sync) {
            return sync.batch_norm(
                input,
                self.weight.as_ref(),
                self.bias.as_ref(),
                rm,
                rv,
                factor,
                o.eps,
            );
        }
        kiln_core::batch_norm(
            input,
            self.weight.as_ref(),
            self.bias.as_ref(),
            rm,
            rv,
            bn_training,
            factor,
            o.eps,
            true,
        )
    }
}

/// `nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True)`: `weight` (ones) and
/// `bias` (zeros) of `[num_channels]`.
#[derive(Module)]
#[module(crate = crate)]
pub struct GroupNorm {
    pub weight: Option<Tensor>,
    pub bias: Option<Tensor>,
    pub num_groups: usize,
    pub num_channels: usize,
    pub eps: f64,
}

impl GroupNorm {
    pub fn new(num_groups: usize, num_channels: usize) -> Result<Self> {
        Self::with_options(num_groups, num_channels, 1e-5, true, DType::F32)
    }

    pub fn with_options(
        num_groups: usize,
        num_channels: usize,
        eps: f64,
        affine: bool,
        dtype: DType,
    ) -> Result<Self> {
        if num_groups == 0 || !num_channels.is_multiple_of(num_groups) {
            return Err(Error::value(
                "GroupNorm",
                format!("num_channels must be divisible by num_groups (got num_channels={num_channels}, num_groups={num_groups})"),
            ));
        }
        let (weight, bias) = if affine {
            (
                Some(Tensor::ones([num_channels], dtype)?.requires_grad_(true)?),
                Some(Tensor::zeros([num_channels], dtype)?.requires_grad_(true)?),
            )
        } else {
            (None, None)
        };
        Ok(GroupNorm {
            weight,
            bias,
            num_groups,
            num_channels,
            eps,
        })
    }
}

impl Forward for GroupNorm {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        if input.dim() < 2 || input.shape()[1] != self.num_channels {
            return Err(Error::shape(
                "GroupNorm",
                format!(
                    "expected input of shape [N, {}, *], got {:?}",
                    self.num_channels,
                    input.shape()
                ),
            ));
        }
        kiln_core::group_norm_with(
            input,
            self.num_groups as i64,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
            true,
        )
    }
}

/// `nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True)`: `weight` (ones) of
/// `normalized_shape`; `eps=None` uses the dtype's machine epsilon, as PyTorch.
#[derive(Module)]
#[module(crate = crate)]
pub struct RMSNorm {
    pub weight: Option<Tensor>,
    pub normalized_shape: Vec<usize>,
    #[module(skip)]
    pub eps: Option<f64>,
}

impl RMSNorm {
    pub fn new(normalized_shape: &[usize]) -> Result<Self> {
        Self::with_options(normalized_shape, None, true, DType::F32)
    }

    pub fn with_options(
        normalized_shape: &[usize],
        eps: Option<f64>,
        elementwise_affine: bool,
        dtype: DType,
    ) -> Result<Self> {
        let weight = if elementwise_affine {
            Some(Tensor::ones(normalized_shape, dtype)?.requires_grad_(true)?)
        } else {
            None
        };
        Ok(RMSNorm {
            weight,
            normalized_shape: normalized_shape.to_vec(),
            eps,
        })
    }
}

impl Forward for RMSNorm {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let n = self.normalized_shape.len();
        let s = input.shape();
        if s.len() < n || s[s.len() - n..] != self.normalized_shape[..] {
            return Err(Error::shape(
                "RMSNorm",
                format!(
                    "Given normalized_shape={:?}, expected input with shape [*, {}], but got input of size {:?}",
                    self.normalized_shape,
                    self.normalized_shape
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    s
                ),
            ));
        }
        let shape: Vec<i64> = self.normalized_shape.iter().map(|&x| x as i64).collect();
        kiln_core::rms_norm_with(input, &shape, self.weight.as_ref(), self.eps)
    }
}

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
        kiln_core::layer_norm_with(
            input,
            &shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
            true,
        )
    }
}
