//! `kiln::nn::functional` (PyTorch's `torch.nn.functional`, usually imported as `F`):
//! PyTorch-named functions with PyTorch's argument lists.
//!
//! As everywhere in kiln, Rust has no default arguments: a function whose PyTorch signature
//! has defaults comes as `f(required…)` (every default) and `f_with(…)` (every argument, in
//! PyTorch's order, minus deprecated ones such as `size_average` / `reduce` and `inplace`).
//! Where the core op already has PyTorch's name and arguments it is re-exported; otherwise a
//! thin wrapper adapts it (argument order, `reduction` as [`Reduction`] instead of the core's
//! integer, tuple returns for `return_indices`).
//!
//! ```
//! use kiln_nn::functional as F;
//! use kiln_nn::Reduction;
//! let x = kiln_core::Tensor::from([[1.0f32, -2.0, 3.0]]);
//! let t = kiln_core::Tensor::from([2i64]);
//! let loss = F::cross_entropy_with(&F::relu(&x)?, &t, None, -100, Reduction::Sum, 0.0)?;
//! assert!(loss.item::<f32>()? < 0.2);
//! # Ok::<(), kiln_core::Error>(())
//! ```

use crate::loss::{self, KLDivReduction, Reduction};
use kiln_core::{Error, Result, Scalar, Tensor};

// Same names and arguments as PyTorch's F: re-exported from the core.
pub use kiln_core::{
    adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool1d_with, avg_pool2d,
    avg_pool2d_with, bilinear, bilinear_with, celu, celu_with, conv1d, conv1d_padding_with,
    conv1d_with, conv2d, conv2d_padding_with, conv2d_with, conv3d, conv3d_padding_with,
    conv3d_with, conv_transpose1d, conv_transpose1d_with, conv_transpose2d, conv_transpose2d_with,
    cosine_similarity, cosine_similarity_with, dropout, gelu, gelu_with, glu, glu_with, hardshrink,
    hardshrink_with, hardsigmoid, hardswish, hardtanh, hardtanh_with, leaky_relu, leaky_relu_with,
    linear, linear_with, log_softmax, log_softmax_with, max_pool1d, max_pool1d_with, max_pool2d,
    max_pool2d_with, max_pool2d_with_indices, max_pool2d_with_indices_with, mish, one_hot,
    one_hot_with, pad, pad_with, prelu, relu, relu6, rms_norm, rms_norm_with,
    scaled_dot_product_attention, scaled_dot_product_attention_with, selu, sigmoid, silu, softmax,
    softmax_with, softplus, softplus_with, softshrink, softshrink_with, softsign, tanh, tanhshrink,
    threshold,
};

/// `F.logsigmoid(input)`.
pub fn logsigmoid(input: &Tensor) -> Result<Tensor> {
    kiln_core::log_sigmoid(input)
}

/// `F.elu(input)` (alpha 1).
pub fn elu(input: &Tensor) -> Result<Tensor> {
    kiln_core::elu(input)
}

/// `F.elu(input, alpha)`.
pub fn elu_with(input: &Tensor, alpha: f64) -> Result<Tensor> {
    kiln_core::elu_with(input, alpha, 1.0, 1.0)
}

/// `F.softmin(input, dim)`: softmax(−input).
pub fn softmin(input: &Tensor, dim: i64) -> Result<Tensor> {
    kiln_core::softmax(&input.neg()?, dim)
}

/// `F.adaptive_max_pool1d(input, output_size)`.
pub fn adaptive_max_pool1d(input: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    Ok(kiln_core::adaptive_max_pool1d(input, output_size)?.0)
}

/// `F.adaptive_max_pool1d(input, output_size, return_indices=True)`.
pub fn adaptive_max_pool1d_with_indices(
    input: &Tensor,
    output_size: &[i64],
) -> Result<(Tensor, Tensor)> {
    kiln_core::adaptive_max_pool1d(input, output_size)
}

/// `F.adaptive_max_pool2d(input, output_size)`.
pub fn adaptive_max_pool2d(input: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    Ok(kiln_core::adaptive_max_pool2d(input, output_size)?.0)
}

/// `F.adaptive_max_pool2d(input, output_size, return_indices=True)`.
pub fn adaptive_max_pool2d_with_indices(
    input: &Tensor,
    output_size: &[i64],
) -> Result<(Tensor, Tensor)> {
    kiln_core::adaptive_max_pool2d(input, output_size)
}

/// `F.batch_norm(input, running_mean, running_var)`: evaluation mode with the running
/// statistics.
pub fn batch_norm(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
) -> Result<Tensor> {
    batch_norm_with(
        input,
        running_mean,
        running_var,
        None,
        None,
        false,
        0.1,
        1e-5,
    )
}

/// `F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)`:
/// in training the running statistics (when given) are updated in place.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_with(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    kiln_core::batch_norm(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
        true,
    )
}

/// `F.instance_norm(input)`: per-sample, per-channel statistics.
pub fn instance_norm(input: &Tensor) -> Result<Tensor> {
    instance_norm_with(input, None, None, None, None, true, 0.1, 1e-5)
}

/// `F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
/// momentum, eps)`.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm_with(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    kiln_core::instance_norm(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        use_input_stats,
        momentum,
        eps,
        true,
    )
}

/// `F.layer_norm(input, normalized_shape)`.
pub fn layer_norm(input: &Tensor, normalized_shape: &[i64]) -> Result<Tensor> {
    kiln_core::layer_norm(input, normalized_shape)
}

/// `F.layer_norm(input, normalized_shape, weight, bias, eps)`.
pub fn layer_norm_with(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    kiln_core::layer_norm_with(input, normalized_shape, weight, bias, eps, true)
}

/// `F.group_norm(input, num_groups)`.
pub fn group_norm(input: &Tensor, num_groups: i64) -> Result<Tensor> {
    kiln_core::group_norm(input, num_groups)
}

/// `F.group_norm(input, num_groups, weight, bias, eps)`.
pub fn group_norm_with(
    input: &Tensor,
    num_groups: i64,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    kiln_core::group_norm_with(input, num_groups, weight, bias, eps, true)
}

/// `F.embedding(input, weight)`: rows of `weight` at the integer `input`.
pub fn embedding(input: &Tensor, weight: &Tensor) -> Result<Tensor> {
    kiln_core::embedding(weight, input)
}

/// `F.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)`
/// (`sparse` is not offered). With `max_norm`, the rows read are renormalised in `weight`
/// in place first, as PyTorch.
pub fn embedding_with(
    input: &Tensor,
    weight: &Tensor,
    padding_idx: Option<i64>,
    max_norm: Option<f64>,
    norm_type: f64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let pad = match padding_idx {
        None => -1,
        Some(p) => {
            let n = weight.shape().first().copied().unwrap_or(0) as i64;
            if p >= n || p < -n {
                return Err(Error::value(
                    "embedding",
                    "Padding_idx must be within num_embeddings",
                ));
            }
            if p < 0 {
                p + n
            } else {
                p
            }
        }
    };
    if let Some(m) = max_norm {
        crate::embedding::embedding_renorm_(weight, input, m, norm_type)?;
    }
    crate::embedding::embedding_scaled(weight, input, pad, scale_grad_by_freq)
}

/// `F.cross_entropy(input, target)`.
pub fn cross_entropy(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::cross_entropy_loss(input, target)
}

/// `F.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)`.
pub fn cross_entropy_with(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    kiln_core::cross_entropy_loss_with(
        input,
        target,
        weight,
        reduction.as_int(),
        ignore_index,
        label_smoothing,
    )
}

/// `F.nll_loss(input, target)`.
pub fn nll_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::nll_loss(input, target)
}

/// `F.nll_loss(input, target, weight, ignore_index, reduction)`.
pub fn nll_loss_with(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    kiln_core::nll_loss_with(input, target, weight, reduction.as_int(), ignore_index)
}

/// `F.mse_loss(input, target)`.
pub fn mse_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::mse_loss(input, target)
}

/// `F.mse_loss(input, target, reduction)`.
pub fn mse_loss_with(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    kiln_core::mse_loss_with(input, target, reduction.as_int())
}

/// `F.l1_loss(input, target)`.
pub fn l1_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::l1_loss(input, target)
}

/// `F.l1_loss(input, target, reduction)`.
pub fn l1_loss_with(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    kiln_core::l1_loss_with(input, target, reduction.as_int())
}

/// `F.smooth_l1_loss(input, target)`.
pub fn smooth_l1_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::smooth_l1_loss(input, target)
}

/// `F.smooth_l1_loss(input, target, reduction, beta)`.
pub fn smooth_l1_loss_with(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor> {
    kiln_core::smooth_l1_loss_with(input, target, reduction.as_int(), beta)
}

/// `F.huber_loss(input, target)`.
pub fn huber_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::huber_loss(input, target)
}

/// `F.huber_loss(input, target, reduction, delta)`.
pub fn huber_loss_with(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor> {
    kiln_core::huber_loss_with(input, target, reduction.as_int(), delta)
}

/// `F.binary_cross_entropy(input, target)`.
pub fn binary_cross_entropy(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::binary_cross_entropy(input, target)
}

/// `F.binary_cross_entropy(input, target, weight, reduction)`.
pub fn binary_cross_entropy_with(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    kiln_core::binary_cross_entropy_with(input, target, weight, reduction.as_int())
}

/// `F.binary_cross_entropy_with_logits(input, target)`.
pub fn binary_cross_entropy_with_logits(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::binary_cross_entropy_with_logits(input, target)
}

/// `F.binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight)`.
pub fn binary_cross_entropy_with_logits_with(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    pos_weight: Option<&Tensor>,
) -> Result<Tensor> {
    kiln_core::binary_cross_entropy_with_logits_with(
        input,
        target,
        weight,
        pos_weight,
        reduction.as_int(),
    )
}

/// `F.kl_div(input, target)` (reduction `'mean'`, as PyTorch's default).
pub fn kl_div(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    loss::kl_div(input, target, KLDivReduction::Mean, false)
}

/// `F.kl_div(input, target, reduction, log_target)`, `'batchmean'` included.
pub fn kl_div_with(
    input: &Tensor,
    target: &Tensor,
    reduction: KLDivReduction,
    log_target: bool,
) -> Result<Tensor> {
    loss::kl_div(input, target, reduction, log_target)
}

/// `F.margin_ranking_loss(input1, input2, target)` (margin 0, reduction `'mean'`).
pub fn margin_ranking_loss(input1: &Tensor, input2: &Tensor, target: &Tensor) -> Result<Tensor> {
    loss::margin_ranking_loss(input1, input2, target, 0.0, Reduction::Mean)
}

/// `F.margin_ranking_loss(input1, input2, target, margin, reduction)`.
pub fn margin_ranking_loss_with(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    loss::margin_ranking_loss(input1, input2, target, margin, reduction)
}

/// `F.hinge_embedding_loss(input, target)` (margin 1).
pub fn hinge_embedding_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::hinge_embedding_loss(input, target)
}

/// `F.hinge_embedding_loss(input, target, margin, reduction)`.
pub fn hinge_embedding_loss_with(
    input: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    kiln_core::hinge_embedding_loss_with(input, target, margin, reduction.as_int())
}

/// `F.soft_margin_loss(input, target)`.
pub fn soft_margin_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::soft_margin_loss(input, target)
}

/// `F.soft_margin_loss(input, target, reduction)`.
pub fn soft_margin_loss_with(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
) -> Result<Tensor> {
    kiln_core::soft_margin_loss_with(input, target, reduction.as_int())
}

/// `F.cosine_embedding_loss(input1, input2, target)` (margin 0).
pub fn cosine_embedding_loss(input1: &Tensor, input2: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::cosine_embedding_loss(input1, input2, target)
}

/// `F.cosine_embedding_loss(input1, input2, target, margin, reduction)`.
pub fn cosine_embedding_loss_with(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    kiln_core::cosine_embedding_loss_with(input1, input2, target, margin, reduction.as_int())
}

/// `F.triplet_margin_loss(anchor, positive, negative)` (margin 1, p 2, eps 1e-6, no swap).
pub fn triplet_margin_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
) -> Result<Tensor> {
    loss::triplet_margin_loss(
        anchor,
        positive,
        negative,
        1.0,
        2.0,
        1e-6,
        false,
        Reduction::Mean,
    )
}

/// `F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)`.
#[allow(clippy::too_many_arguments)]
pub fn triplet_margin_loss_with(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction: Reduction,
) -> Result<Tensor> {
    loss::triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)
}

/// `F.poisson_nll_loss(input, target)` (log_input, not full, eps 1e-8).
pub fn poisson_nll_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::poisson_nll_loss(input, target, true, false, 1e-8, 1)
}

/// `F.poisson_nll_loss(input, target, log_input, full, eps, reduction)`.
pub fn poisson_nll_loss_with(
    input: &Tensor,
    target: &Tensor,
    log_input: bool,
    full: bool,
    eps: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    kiln_core::poisson_nll_loss(input, target, log_input, full, eps, reduction.as_int())
}

/// `F.gaussian_nll_loss(input, target, var)` (not full, eps 1e-6).
pub fn gaussian_nll_loss(input: &Tensor, target: &Tensor, var: &Tensor) -> Result<Tensor> {
    loss::gaussian_nll_loss(input, target, var, false, 1e-6, Reduction::Mean)
}

/// `F.gaussian_nll_loss(input, target, var, full, eps, reduction)`.
pub fn gaussian_nll_loss_with(
    input: &Tensor,
    target: &Tensor,
    var: &Tensor,
    full: bool,
    eps: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    loss::gaussian_nll_loss(input, target, var, full, eps, reduction)
}

/// `F.multilabel_soft_margin_loss(input, target)`.
pub fn multilabel_soft_margin_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    loss::multilabel_soft_margin_loss(input, target, None, Reduction::Mean)
}

/// `F.multilabel_soft_margin_loss(input, target, weight, reduction)`.
pub fn multilabel_soft_margin_loss_with(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    loss::multilabel_soft_margin_loss(input, target, weight, reduction)
}

/// `F.multi_margin_loss(input, target)` (p 1, margin 1).
pub fn multi_margin_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    loss::multi_margin_loss(input, target, 1, 1.0, None, Reduction::Mean)
}

/// `F.multi_margin_loss(input, target, p, margin, weight, reduction)`.
pub fn multi_margin_loss_with(
    input: &Tensor,
    target: &Tensor,
    p: i64,
    margin: f64,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    loss::multi_margin_loss(input, target, p, margin, weight, reduction)
}

/// `F.multilabel_margin_loss(input, target)`.
pub fn multilabel_margin_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    kiln_core::multilabel_margin_loss(input, target)
}

/// `F.multilabel_margin_loss(input, target, reduction)`.
pub fn multilabel_margin_loss_with(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
) -> Result<Tensor> {
    kiln_core::multilabel_margin_loss_with(input, target, reduction.as_int())
}

/// `F.normalize(input)`: L2-normalizes along dim 1.
pub fn normalize(input: &Tensor) -> Result<Tensor> {
    normalize_with(input, 2.0, 1, 1e-12)
}

/// `F.normalize(input, p, dim, eps)`: `input / max(‖input‖_p along dim, eps)`.
pub fn normalize_with(input: &Tensor, p: f64, dim: i64, eps: f64) -> Result<Tensor> {
    let norm = kiln_core::linalg_vector_norm_with(input, p, Some(&[dim]), true, None)?;
    let denom = kiln_core::clamp_with(&norm, Some(Scalar::from(eps)), None)?;
    input.div(&denom)
}
