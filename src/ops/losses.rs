//! Losses and distances that PyTorch writes as CompositeImplicitAutograd: `reduction` is
//! PyTorch's `at::Reduction`, 0 none, 1 mean, 2 sum. The losses with kernels of their own
//! (mse, smooth L1, Huber, binary cross entropy, nll) are in kernels/src/cpu/loss.rs;
//! `nll_loss` and `cross_entropy_loss` here check their arguments and call them.

use crate::{DType, Error, Result, Scalar, Tensor};

// ---------------------------------------------------------------------------------------
// Losses (`reduction` is PyTorch's `at::Reduction`: 0 none, 1 mean, 2 sum)
// ---------------------------------------------------------------------------------------

fn reduce_loss(op: &str, loss: Tensor, reduction: i64) -> Result<Tensor> {
    match reduction {
        0 => Ok(loss),
        1 => loss.mean(),
        2 => loss.sum(),
        r => Err(Error::value(
            op,
            format!("{r} is not a valid value for reduction"),
        )),
    }
}

/// `l1_loss(target, reduction)`: `|input - target|`, the two broadcast.
pub fn l1_loss(t: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    reduce_loss("l1_loss", t.sub(target)?.abs()?, reduction)
}

/// `kl_div(target, reduction, log_target)` with `self` holding log-probabilities:
/// `target * (log target - self)`, 0 where `target` is 0; with `log_target`,
/// `exp(target) * (target - self)`.
pub fn kl_div(t: &Tensor, target: &Tensor, reduction: i64, log_target: bool) -> Result<Tensor> {
    let loss = if log_target {
        target.exp()?.mul(&target.sub(t)?)?
    } else {
        let positive = target.gt_scalar(0)?;
        // log of the positive targets only, so a zero target contributes 0 and no NaN
        // reaches the gradient.
        let safe = target.where_cond(&positive, &target.ones_like()?)?;
        let terms = target.mul(&safe.log()?.sub(t)?)?;
        terms.where_cond(&positive, &terms.zeros_like()?)?
    };
    reduce_loss("kl_div", loss, reduction)
}

/// `cosine_similarity(x2, dim, eps)`: `x1 . x2 / sqrt(max(|x1|^2 |x2|^2, eps^2))` along
/// `dim`, after broadcasting the two.
pub fn cosine_similarity(x1: &Tensor, x2: &Tensor, dim: i64, eps: f64) -> Result<Tensor> {
    // PyTorch's formula: each input divided by its norm (clamped to eps), then the sum of
    // the products, so half inputs neither overflow nor round a product of sums of squares.
    let prod = x1.mul(x2)?;
    let (x1, x2) = (&x1.expand_as(&prod)?, &x2.expand_as(&prod)?);
    let norm = |x: &Tensor| {
        crate::linalg_vector_norm_with(x, 2.0, Some(&[dim]), true, None)?
            .clamp_with(Some(eps.into()), None)
    };
    crate::sum_dim_with(
        &x1.div(&norm(x1)?)?.mul(&x2.div(&norm(x2)?)?)?,
        &[dim],
        false,
        None,
    )
}

/// `pairwise_distance(x2, p, eps, keepdim)`: the p-norm of `x1 - x2 + eps` along the last
/// dim.
pub fn pairwise_distance(
    x1: &Tensor,
    x2: &Tensor,
    p: f64,
    eps: f64,
    keepdim: bool,
) -> Result<Tensor> {
    // PyTorch's `norm(x1 - x2 + eps, p, -1, keepdim)`: one norm kernel, which accumulates
    // half inputs in float32 and rounds once.
    let d = x1.sub(x2)?.add_scalar(eps)?;
    crate::linalg_vector_norm_with(&d, p, Some(&[-1]), keepdim, None)
}

// ---------------------------------------------------------------------------------------
// Classification losses
// ---------------------------------------------------------------------------------------

/// PyTorch's checks on class-index targets for an input `[N, C, d...]` or `[C]`.
fn check_class_target(op: &str, input: &Tensor, target: &Tensor) -> Result<()> {
    if target.dtype() != DType::I64 {
        return Err(Error::dtype(
            op,
            format!(
                "expected scalar type Long but found {}",
                target.dtype().scalar_type_name()
            ),
        ));
    }
    let ok = if input.dim() == 1 {
        target.dim() == 0
    } else {
        let mut expect = input.shape().to_vec();
        expect.remove(1);
        target.shape() == expect.as_slice()
    };
    if !ok {
        if input.dim() >= 2 && target.dim() >= 1 && target.shape()[0] != input.shape()[0] {
            return Err(Error::shape(
                op,
                format!(
                    "Expected input batch_size ({}) to match target batch_size ({}).",
                    input.shape()[0],
                    target.shape()[0]
                ),
            ));
        }
        return Err(Error::shape(
            op,
            format!(
                "expected target of size {:?} for input of size {:?}",
                {
                    let mut e = input.shape().to_vec();
                    if !e.is_empty() {
                        e.remove(if e.len() == 1 { 0 } else { 1 });
                    }
                    e
                },
                target.shape()
            ),
        ));
    }
    Ok(())
}

/// The class dim of an input (1, or 0 for an unbatched `[C]`).
pub(crate) fn class_dim(input: &Tensor) -> i64 {
    if input.dim() == 1 {
        0
    } else {
        1
    }
}

/// `nll_loss(target, weight, reduction, ignore_index)`: PyTorch's `nll_loss_nd`, the
/// checks of the public op and then the `nll_loss_forward` kernel: `-weight[t] * input[t]`
/// per element; the mean divides by the total weight of the targets not ignored.
pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    let op = "nll_loss";
    if input.dim() == 0 {
        return Err(Error::shape(op, "input tensor should be 1D or more"));
    }
    check_class_target(op, input, target)?;
    Ok(crate::nll_loss_forward(input, target, weight, reduction, ignore_index)?.0)
}

/// `cross_entropy_loss(target, weight, reduction, ignore_index, label_smoothing)`: class
/// indices (int64, through `nll_loss` of `log_softmax`) or class probabilities (a float
/// target shaped like the input), with PyTorch's label smoothing.
pub fn cross_entropy_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let op = "cross_entropy_loss";
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::value(
            op,
            format!("label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"),
        ));
    }
    if input.dim() == 0 {
        return Err(Error::shape(op, "input tensor should be 1D or more"));
    }
    let cd = class_dim(input);
    let c = input.shape()[cd as usize] as f64;
    let logp = input.log_softmax(cd)?;
    let class_view = |w: &Tensor| -> Result<Tensor> {
        let mut shape = vec![1i64; input.dim()];
        shape[cd as usize] = -1;
        w.to_dtype(input.dtype())?.reshape(&shape)
    };
    if target.dtype().is_floating_point() {
        if target.shape() != input.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "Expected target size {:?}, got {:?}",
                    input.shape(),
                    target.shape()
                ),
            ));
        }
        let t = if label_smoothing > 0.0 {
            target
                .mul_scalar(1.0 - label_smoothing)?
                .add_scalar(label_smoothing / c)?
        } else {
            target.clone()
        };
        let mut terms = logp.mul(&t)?;
        if let Some(w) = weight {
            terms = terms.mul(&class_view(w)?)?;
        }
        let loss = crate::sum_dim_with(&terms, &[cd], false, None)?.neg()?;
        return match reduction {
            0 => Ok(loss),
            // The number of samples: every element of the loss (its shape is the input's
            // without the class dim, which may be empty).
            1 => loss.sum()?.div_scalar(loss.numel() as f64),
            2 => loss.sum(),
            r => Err(Error::value(
                op,
                format!("{r} is not a valid value for reduction"),
            )),
        };
    }
    let nll = nll_loss(&logp, target, weight, reduction, ignore_index)?;
    if label_smoothing == 0.0 {
        return Ok(nll);
    }
    let keep = target.ne_scalar(ignore_index)?.to_dtype(input.dtype())?;
    let per_class = match weight {
        Some(w) => logp.mul(&class_view(w)?)?,
        None => logp.clone(),
    };
    let smooth = crate::sum_dim_with(&per_class, &[cd], false, None)?
        .neg()?
        .mul(&keep)?;
    let smooth = match reduction {
        0 => smooth,
        2 => smooth.sum()?,
        _ => {
            let denom = match weight {
                Some(w) => {
                    let safe = target
                        .where_cond(&target.ne_scalar(ignore_index)?, &target.zeros_like()?)?;
                    w.to_dtype(input.dtype())?
                        .index_select(0, &safe.reshape([-1])?)?
                        .mul(&keep.reshape([-1])?)?
                        .sum()?
                }
                None => keep.sum()?,
            };
            smooth.sum()?.div(&denom)?
        }
    };
    nll.mul_scalar(1.0 - label_smoothing)?
        .add(&smooth.mul_scalar(label_smoothing / c)?)
}

fn check_same_shape(op: &str, input: &Tensor, target: &Tensor) -> Result<()> {
    if input.shape() != target.shape() {
        return Err(Error::value(
            op,
            format!(
                "Using a target size ({:?}) that is different to the input size ({:?}) is deprecated. Please ensure they have the same size.",
                target.shape(),
                input.shape()
            ),
        ));
    }
    Ok(())
}

/// `binary_cross_entropy_with_logits(target, weight, pos_weight, reduction)`: BCE of
/// `sigmoid(x)`, computed as `(1 - t) x + (1 + (pw - 1) t) (log1p(e^-|x|) + max(-x, 0))`.
pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let op = "binary_cross_entropy_with_logits";
    check_same_shape(op, input, target)?;
    // PyTorch's composite, op by op (a half input rounds after each, as there):
    // (1 - t) * x - log_sigmoid(x) * (1 + (pos_weight - 1) * t).
    let mut log_sigmoid_input = crate::log_sigmoid(input)?;
    if let Some(pw) = pos_weight {
        let log_weight = pw.sub_scalar(1)?.mul(target)?.add_scalar(1)?;
        log_sigmoid_input = log_sigmoid_input.mul(&log_weight)?;
    }
    let loss = target
        .neg()?
        .add_scalar(1)?
        .mul(input)?
        .sub(&log_sigmoid_input)?;
    let loss = match weight {
        Some(w) => loss.mul(w)?,
        None => loss,
    };
    reduce_loss(op, loss, reduction)
}

/// `cdist(x1, x2, p)`: the `p`-norm distance between every row of `x1` and of `x2`
/// (`[.., P, M]` × `[.., R, M]` → `[.., P, R]`).
pub fn cdist(x1: &Tensor, x2: &Tensor, p: f64, compute_mode: Option<i64>) -> Result<Tensor> {
    let _ = compute_mode; // the direct difference; no matmul shortcut
    let op = "cdist";
    if x1.dim() < 2 || x2.dim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "cdist only supports at least 2D tensors, X1 got: {}D",
                x1.dim().min(x2.dim())
            ),
        ));
    }
    if x1.shape()[x1.dim() - 1] != x2.shape()[x2.dim() - 1] {
        return Err(Error::shape(
            op,
            format!(
                "X1 and X2 must have the same number of columns. X1: {} X2: {}",
                x1.shape()[x1.dim() - 1],
                x2.shape()[x2.dim() - 1]
            ),
        ));
    }
    if p < 0.0 {
        return Err(Error::value(
            op,
            "cdist only supports non-negative p values",
        ));
    }
    let diff = x1.unsqueeze(-2)?.sub(&x2.unsqueeze(-3)?)?;
    crate::linalg_vector_norm_with(&diff, Scalar::Float(p), Some(&[-1]), false, None)
}

// ---------------------------------------------------------------------------------------
// Margin and embedding losses (PyTorch's aten/src/ATen/native/Loss.cpp composites)
// ---------------------------------------------------------------------------------------

/// `margin_ranking_loss(x1, x2, y, margin, reduction)`: `max(0, -y (x1 - x2) + margin)`,
/// the three broadcast.
pub fn margin_ranking_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: i64,
) -> Result<Tensor> {
    let loss = target
        .neg()?
        .mul(&input1.sub(input2)?)?
        .add_scalar(margin)?
        .clamp_with(Some(Scalar::Int(0)), None)?;
    reduce_loss("margin_ranking_loss", loss, reduction)
}

/// `hinge_embedding_loss(target, margin, reduction)`: `x` where `y == 1`,
/// `max(0, margin - x)` where `y == -1` (PyTorch's: the first where `y != -1`, the second
/// where `y != 1`, summed).
pub fn hinge_embedding_loss(
    t: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: i64,
) -> Result<Tensor> {
    let zeros = t.zeros_like()?;
    let margin_clamp = t
        .neg()?
        .add_scalar(margin)?
        .clamp_with(Some(Scalar::Int(0)), None)?;
    let output_margin = margin_clamp.where_cond(&target.ne_scalar(1)?, &zeros)?;
    let output_self = t.where_cond(&target.ne_scalar(-1)?, &zeros)?;
    reduce_loss(
        "hinge_embedding_loss",
        output_margin.add(&output_self)?,
        reduction,
    )
}

/// `soft_margin_loss(target, reduction)`: `log(1 + exp(-y x))`, computed as
/// `softplus(-y x)` so a large `-y x` does not overflow.
pub fn soft_margin_loss(t: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    let z = t.mul(target)?.neg()?;
    reduce_loss("soft_margin_loss", crate::softplus(&z)?, reduction)
}

/// `cosine_embedding_loss(x1, x2, y, margin, reduction)`: `1 - cos` where `y == 1`,
/// `max(0, cos - margin)` where `y == -1`, with PyTorch's cosine
/// `x1.x2 / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12))` along the last dim.
pub fn cosine_embedding_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: i64,
) -> Result<Tensor> {
    let op = "cosine_embedding_loss";
    const EPSILON: f64 = 1e-12;
    let targ_dim = target.dim();
    if targ_dim > 1 {
        return Err(Error::shape(
            op,
            "0D or 1D target tensor expected, multi-target not supported",
        ));
    }
    if targ_dim == 1 {
        if input1.dim() != 2 || input2.dim() != 2 {
            return Err(Error::shape(
                op,
                format!(
                    "1D target tensor expects 2D input tensors, but found inputs with sizes {:?} and {:?}.",
                    input1.shape(),
                    input2.shape()
                ),
            ));
        }
    } else if input1.dim() != 1 || input2.dim() != 1 {
        return Err(Error::shape(
            op,
            format!(
                "0D target tensor expects 1D input tensors, but found inputs with sizes {:?} and {:?}.",
                input1.shape(),
                input2.shape()
            ),
        ));
    }
    let d = [targ_dim as i64];
    let prod_sum = crate::sum_dim_with(&input1.mul(input2)?, &d, false, None)?;
    let mag1 = crate::sum_dim_with(&input1.mul(input1)?, &d, false, None)?.add_scalar(EPSILON)?;
    let mag2 = crate::sum_dim_with(&input2.mul(input2)?, &d, false, None)?.add_scalar(EPSILON)?;
    let cos = prod_sum.div(&mag1.mul(&mag2)?.sqrt()?)?;
    let zeros = cos.zeros_like()?;
    let pos = cos.neg()?.add_scalar(1)?;
    let neg = cos
        .sub_scalar(margin)?
        .clamp_with(Some(Scalar::Int(0)), None)?;
    let output_pos = pos.where_cond(&target.eq_scalar(1)?, &zeros)?;
    let output_neg = neg.where_cond(&target.eq_scalar(-1)?, &zeros)?;
    reduce_loss(op, output_pos.add(&output_neg)?, reduction)
}

/// `triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)`:
/// `max(0, margin + d(a, p) - d(a, n))` over `pairwise_distance`; with `swap`, `d(a, n)`
/// is replaced by `min(d(a, n), d(p, n))`.
#[allow(clippy::too_many_arguments)]
pub fn triplet_margin_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction: i64,
) -> Result<Tensor> {
    let op = "triplet_margin_loss";
    let (a_dim, p_dim, n_dim) = (anchor.dim(), positive.dim(), negative.dim());
    if a_dim != p_dim || p_dim != n_dim {
        return Err(Error::shape(
            op,
            format!(
                "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs"
            ),
        ));
    }
    let dist_pos = pairwise_distance(anchor, positive, p, eps, false)?;
    let mut dist_neg = pairwise_distance(anchor, negative, p, eps, false)?;
    if swap {
        let dist_swap = pairwise_distance(positive, negative, p, eps, false)?;
        dist_neg = dist_neg.minimum(&dist_swap)?;
    }
    // PyTorch's order, `clamp_min(margin + dist_pos - dist_neg, 0)` (half inputs round after
    // each op).
    let loss = dist_pos
        .add_scalar(margin)?
        .sub(&dist_neg)?
        .clamp_with(Some(Scalar::Int(0)), None)?;
    reduce_loss(op, loss, reduction)
}

/// `poisson_nll_loss(input, target, log_input, full, eps, reduction)`: `exp(x) - t x`
/// (`log_input`) or `x - t log(x + eps)`; `full` adds Stirling's
/// `t log t - t + log(2 pi t) / 2` where `t > 1`.
pub fn poisson_nll_loss(
    input: &Tensor,
    target: &Tensor,
    log_input: bool,
    full: bool,
    eps: f64,
    reduction: i64,
) -> Result<Tensor> {
    let mut loss = if log_input {
        input.exp()?.sub(&target.mul(input)?)?
    } else {
        input.sub(&target.mul(&input.add_scalar(eps)?.log()?)?)?
    };
    if full {
        let big = target.gt_scalar(1)?;
        // Stirling's term of the targets above 1 only, so targets at or below 1 (where
        // PyTorch masks a possibly NaN term) give no NaN to the gradient either.
        let safe = target.where_cond(&big, &target.ones_like()?)?;
        let stirling = safe.mul(&safe.log()?)?.sub(&safe)?.add(
            &safe
                .mul_scalar(2.0 * std::f64::consts::PI)?
                .log()?
                .mul_scalar(0.5)?,
        )?;
        loss = loss.add(&stirling.where_cond(&big, &stirling.zeros_like()?)?)?;
    }
    reduce_loss("poisson_nll_loss", loss, reduction)
}

/// `multi_margin_loss(target, p, margin, weight, reduction)`: for each row `x` with class
/// `y`, `sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C`, `p` 1 or 2.
pub fn multi_margin_loss(
    input: &Tensor,
    target: &Tensor,
    p: Scalar,
    margin: Scalar,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let op = "multi_margin_loss";
    let p = p.to::<f64>();
    let margin = margin.to::<f64>();
    if p != 1.0 && p != 2.0 {
        return Err(Error::value(op, "only p == 1 and p == 2 supported"));
    }
    let nd = input.dim();
    let (n, c) = match nd {
        0 => (1, 1),
        1 => (1, input.shape()[0]),
        2 => (input.shape()[0], input.shape()[1]),
        _ => (0, 0),
    };
    if nd > 2 || (nd > 0 && c == 0) {
        return Err(Error::shape(
            op,
            format!(
                "Expected non-empty vector or matrix with optional 0-dim batch size, but got: {:?}",
                input.shape()
            ),
        ));
    }
    if target.dtype() != DType::I64 {
        return Err(Error::dtype(
            op,
            format!(
                "expected scalar type Long but found {}",
                target.dtype().scalar_type_name()
            ),
        ));
    }
    if target.dim() > 1 || target.numel() != n {
        return Err(Error::shape(
            op,
            format!(
                "inconsistent target size, expected {n} but got {:?}",
                target.shape()
            ),
        ));
    }
    if let Some(w) = weight {
        if w.dim() > 1 || w.numel() != c {
            return Err(Error::shape(
                op,
                format!(
                    "inconsistent weight size, expected {c} but got {:?}",
                    w.shape()
                ),
            ));
        }
    }
    let x = input.reshape([n as i64, c as i64])?;
    let y = target.reshape([n as i64, 1])?;
    let x_y = x.gather(1, &y)?;
    let mut z = x
        .sub(&x_y)?
        .add_scalar(margin)?
        .clamp_with(Some(Scalar::Int(0)), None)?;
    if p == 2.0 {
        z = z.mul(&z)?;
    }
    if let Some(w) = weight {
        let wy = w
            .to_dtype(input.dtype())?
            .reshape([-1])?
            .index_select(0, &y.reshape([-1])?)?
            .reshape([n as i64, 1])?;
        z = z.mul(&wy)?;
    }
    // The target class itself contributes nothing.
    let own = Tensor::arange(0, c as i64, 1, DType::I64)?
        .to_device(input.device())?
        .reshape([1, c as i64])?
        .eq(&y)?;
    let z = z.zeros_like()?.where_cond(&own, &z)?;
    let loss = crate::sum_dim_with(&z, &[1], false, None)?.div_scalar(c as f64)?;
    // Unreduced, one loss per target: `[N]`, or `[]` for a 0-d target.
    let loss = if reduction == 0 {
        loss.reshape(target.shape())?
    } else {
        loss
    };
    reduce_loss(op, loss, reduction)
}

/// `multilabel_margin_loss(target, reduction)`: each row's target lists class indices,
/// ended by the first -1; the loss is `sum_{j listed} sum_{i not listed}
/// max(0, 1 - (x[j] - x[i])) / C`.
pub fn multilabel_margin_loss(input: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    let op = "multilabel_margin_loss";
    let nd = input.dim();
    let (n, c) = match nd {
        0 => (1, 1),
        1 => (1, input.shape()[0]),
        2 => (input.shape()[0], input.shape()[1]),
        _ => (0, 0),
    };
    if nd > 2 || (nd > 0 && c == 0) {
        return Err(Error::shape(
            op,
            format!(
                "Expected non-empty vector or matrix with optional 0-dim batch size, but got: {:?}",
                input.shape()
            ),
        ));
    }
    if target.dtype() != DType::I64 {
        return Err(Error::dtype(
            op,
            format!(
                "expected scalar type Long but found {}",
                target.dtype().scalar_type_name()
            ),
        ));
    }
    let target_ok = if nd <= 1 {
        target.dim() <= 1 && target.numel() == c
    } else {
        target.shape() == [n, c]
    };
    if !target_ok {
        return Err(Error::shape(
            op,
            format!(
                "inconsistent target size: {:?} for input of size: {:?}",
                target.shape(),
                input.shape()
            ),
        ));
    }
    let (ni, ci) = (n as i64, c as i64);
    let x = input.reshape([ni, ci])?;
    let y = target.reshape([ni, ci])?;
    // Entries before the first -1 of each row.
    let listed = y
        .eq_scalar(-1)?
        .to_dtype(DType::I64)?
        .cumsum(1)?
        .eq_scalar(0)?;
    let classes = Tensor::arange(0, ci, 1, DType::I64)?
        .to_device(input.device())?
        .reshape([1, 1, ci])?;
    // is_target[n, i]: class i is listed in row n.
    let hits = y
        .unsqueeze(-1)?
        .eq(&classes)?
        .logical_and(&listed.unsqueeze(-1)?)?
        .to_dtype(DType::I64)?;
    let is_target = crate::sum_dim_with(&hits, &[1], false, None)?.gt_scalar(0)?;
    let safe = y.where_cond(&listed, &y.zeros_like()?)?;
    let x_listed = x.gather(1, &safe)?; // [N, J]
                                        // hinge[n, j, i] = max(0, 1 - x[y_j] + x[i]), kept where j is listed and i is not.
    let hinge = x
        .unsqueeze(1)?
        .sub(&x_listed.unsqueeze(-1)?)?
        .add_scalar(1)?
        .clamp_with(Some(Scalar::Int(0)), None)?;
    let keep = listed
        .unsqueeze(-1)?
        .logical_and(&is_target.logical_not()?.unsqueeze(1)?)?;
    let hinge = hinge.where_cond(&keep, &hinge.zeros_like()?)?;
    let loss = crate::sum_dim_with(&hinge, &[1, 2], false, None)?.div_scalar(c as f64)?;
    // Unreduced: `[N]` for a batch, `[]` for a single sample.
    let loss = if reduction == 0 && nd <= 1 {
        loss.reshape(Vec::<i64>::new())?
    } else {
        loss
    };
    reduce_loss(op, loss, reduction)
}
