//! kiln's `optim` (PyTorch's `torch.optim`): optimizers, learning-rate schedulers and
//! gradient clipping. Used as `kiln::optim`.
//!
//! ```
//! use kiln_optim::{Adam, AdamOptions, Optimizer};
//! use kiln_core::Tensor;
//! let w = Tensor::from([1.0f32, -2.0]).requires_grad_(true)?;
//! let mut opt = Adam::new(vec![w.clone()], AdamOptions { lr: 0.1, ..Default::default() })?;
//! w.mul(&w)?.sum()?.backward()?;
//! opt.step()?;
//! opt.zero_grad()?;
//! assert!(w.grad().is_none());
//! # Ok::<(), kiln_core::Error>(())
//! ```
//!
//! Differences from PyTorch: hyper-parameters are typed option structs instead of dicts;
//! `step()` takes no closure; the optimizers with a fused kernel (SGD, Adam, AdamW, RMSprop,
//! Adagrad) use it by default (`fused: true`) wherever a parameter, its gradient and its
//! state are dense with matching strides (CPU or CUDA), and the op-by-op ("composite")
//! update otherwise; PyTorch's default is its foreach path. Both compute PyTorch's formulas.

mod adagrad;
mod adam;
mod clip;
mod grad_scaler;
pub mod lr_scheduler;
mod optimizer;
mod rmsprop;
mod sgd;

pub use adagrad::{Adagrad, AdagradOptions};
pub use adam::{Adam, AdamOptions, AdamW};
pub use clip::{clip_grad_norm_, clip_grad_norm_with, clip_grad_value_};
pub use grad_scaler::{GradScaler, GradScalerBuilder, GradScalerState};
pub use optimizer::{GroupOptions, Optimizer, OptimizerState, ParamGroup, ParamState};
pub use rmsprop::{RMSprop, RMSpropOptions};
pub use sgd::{SGDOptions, SGD};

use kiln_core::{DType, Result, Tensor};

/// Zeros shaped and laid out like `p` (PyTorch's `zeros_like(p,
/// memory_format=torch.preserve_format)`): with `p`'s strides when `p` is dense, so the
/// fused kernels can run over the parameter and its state as one block.
pub(crate) fn zeros_like_param(p: &Tensor) -> Result<Tensor> {
    let z = p.detach().zeros_like()?.reshape([p.numel() as i64])?;
    if p.layout().is_non_overlapping_and_dense() && !p.is_contiguous() {
        let size: Vec<i64> = p.shape().iter().map(|&s| s as i64).collect();
        let stride: Vec<i64> = p.strides().iter().map(|&s| s as i64).collect();
        z.as_strided(&size, &stride)
    } else {
        let size: Vec<i64> = p.shape().iter().map(|&s| s as i64).collect();
        z.reshape(&size)
    }
}

/// True when the fused kernel can update `p` with `grad` and `state` (CPU or CUDA): floating,
/// dense, and every tensor with `p`'s strides.
pub(crate) fn fusable(p: &Tensor, grad: &Tensor, state: &[&Tensor]) -> bool {
    let same = |t: &Tensor| {
        t.dtype() == p.dtype()
            && t.device() == p.device()
            && t.shape() == p.shape()
            && p.shape()
                .iter()
                .zip(p.strides().iter().zip(t.strides()))
                .all(|(&s, (a, b))| s == 1 || a == b)
    };
    matches!(
        p.dtype(),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16
    ) && p.layout().is_non_overlapping_and_dense()
        && same(grad)
        && state.iter().all(|t| same(t))
        && !grad.shares_storage_with(p)
}

/// Formats a float so it parses back to the same value.
pub(crate) fn fmt_f64(v: f64) -> String {
    format!("{v:?}")
}

/// True for a hyper-parameter PyTorch's `not 0.0 <= v` refuses.
pub(crate) fn negative_or_nan(v: f64) -> bool {
    v < 0.0 || v.is_nan()
}
