//! Losses as modules (`nn.MSELoss`, `nn.CrossEntropyLoss`, …). A loss takes two tensors, so
//! it has an inherent `forward(&self, input, target)` (three, in PyTorch's order, for
//! `MarginRankingLoss`, `CosineEmbeddingLoss`, `TripletMarginLoss` and `GaussianNLLLoss`); it derives `Module` so it can sit in a
//! model (its `weight` / `pos_weight`, when given, are buffers, as in PyTorch's state_dict).
//! `new()` gives PyTorch's defaults; the other keyword arguments are chainable setters
//! (`CrossEntropyLoss::new().label_smoothing(0.1)`).

use crate::Module;
use kiln_core::{Error, Result, Tensor};
use std::str::FromStr;

/// `reduction`: `'none'`, `'mean'` (the default) or `'sum'`. Parses from PyTorch's strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Reduction {
    None,
    #[default]
    Mean,
    Sum,
}

impl Reduction {
    /// The core ops' integer (`at::Reduction`): 0 none, 1 mean, 2 sum.
    pub fn as_int(self) -> i64 {
        match self {
            Reduction::None => 0,
            Reduction::Mean => 1,
            Reduction::Sum => 2,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Reduction::None => "none",
            Reduction::Mean => "mean",
            Reduction::Sum => "sum",
        }
    }
}

impl FromStr for Reduction {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            _ => Err(Error::value(
                "reduction",
                format!("{s} is not a valid value for reduction"),
            )),
        }
    }
}

/// Shape check shared by the elementwise losses: PyTorch broadcasts (with a warning); kiln
/// requires equal shapes, naming the loss.
fn same_shape(loss: &str, input: &Tensor, target: &Tensor) -> Result<()> {
    if input.shape() != target.shape() {
        return Err(Error::value(
            loss,
            format!(
                "Using a target size ({:?}) that is different to the input size ({:?}) is not supported",
                target.shape(),
                input.shape()
            ),
        ));
    }
    Ok(())
}

macro_rules! reduction_setter {
    () => {
        crate::setters!(reduction: Reduction);
    };
}

/// `nn.MSELoss(reduction='mean')`: (input − target)².
#[derive(Module, Clone, Copy, Debug, Default)]
#[module(crate = crate)]
pub struct MSELoss {
    #[module(skip)]
    pub reduction: Reduction,
}

impl MSELoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("MSELoss", input, target)?;
        kiln_core::mse_loss_with(input, target, self.reduction.as_int())
    }
}

/// `nn.L1Loss(reduction='mean')`: |input − target|.
#[derive(Module, Clone, Copy, Debug, Default)]
#[module(crate = crate)]
pub struct L1Loss {
    #[module(skip)]
    pub reduction: Reduction,
}

impl L1Loss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("L1Loss", input, target)?;
        kiln_core::l1_loss_with(input, target, self.reduction.as_int())
    }
}

/// `nn.SmoothL1Loss(reduction='mean', beta=1.0)`.
#[derive(Module, Clone, Copy, Debug)]
#[module(crate = crate)]
pub struct SmoothL1Loss {
    #[module(skip)]
    pub reduction: Reduction,
    pub beta: f64,
}

impl Default for SmoothL1Loss {
    fn default() -> Self {
        SmoothL1Loss {
            reduction: Reduction::Mean,
            beta: 1.0,
        }
    }
}

impl SmoothL1Loss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(beta: f64);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("SmoothL1Loss", input, target)?;
        kiln_core::smooth_l1_loss_with(input, target, self.reduction.as_int(), self.beta)
    }
}

/// `nn.HuberLoss(reduction='mean', delta=1.0)`.
#[derive(Module, Clone, Copy, Debug)]
#[module(crate = crate)]
pub struct HuberLoss {
    #[module(skip)]
    pub reduction: Reduction,
    pub delta: f64,
}

impl Default for HuberLoss {
    fn default() -> Self {
        HuberLoss {
            reduction: Reduction::Mean,
            delta: 1.0,
        }
    }
}

impl HuberLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(delta: f64);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("HuberLoss", input, target)?;
        kiln_core::huber_loss_with(input, target, self.reduction.as_int(), self.delta)
    }
}

/// `nn.BCELoss(weight=None, reduction='mean')`: on probabilities. `weight` (a buffer)
/// rescales each element and broadcasts to the input.
#[derive(Module, Clone, Debug, Default)]
#[module(crate = crate)]
pub struct BCELoss {
    #[module(buffer)]
    pub weight: Option<Tensor>,
    #[module(skip)]
    pub reduction: Reduction,
}

impl BCELoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(weight: Option<Tensor>);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("BCELoss", input, target)?;
        kiln_core::binary_cross_entropy_with(
            input,
            target,
            self.weight.as_ref(),
            self.reduction.as_int(),
        )
    }
}

/// `nn.BCEWithLogitsLoss(weight=None, reduction='mean', pos_weight=None)`: sigmoid + BCE,
/// computed stably. `weight` and `pos_weight` are buffers.
#[derive(Module, Clone, Debug, Default)]
#[module(crate = crate)]
pub struct BCEWithLogitsLoss {
    #[module(buffer)]
    pub weight: Option<Tensor>,
    #[module(buffer)]
    pub pos_weight: Option<Tensor>,
    #[module(skip)]
    pub reduction: Reduction,
}

impl BCEWithLogitsLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(weight: Option<Tensor>, pos_weight: Option<Tensor>);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("BCEWithLogitsLoss", input, target)?;
        kiln_core::binary_cross_entropy_with_logits_with(
            input,
            target,
            self.weight.as_ref(),
            self.pos_weight.as_ref(),
            self.reduction.as_int(),
        )
    }
}

/// `nn.NLLLoss(weight=None, ignore_index=-100, reduction='mean')`: input log-probabilities
/// `[N, C, *]` (or `[C]`), integer targets `[N, *]`.
#[derive(Module, Clone, Debug)]
#[module(crate = crate)]
pub struct NLLLoss {
    #[module(buffer)]
    pub weight: Option<Tensor>,
    pub ignore_index: i64,
    #[module(skip)]
    pub reduction: Reduction,
}

impl Default for NLLLoss {
    fn default() -> Self {
        NLLLoss {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
        }
    }
}

impl NLLLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(weight: Option<Tensor>, ignore_index: i64);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        class_shapes("NLLLoss", input, target, false)?;
        kiln_core::nll_loss_with(
            input,
            target,
            self.weight.as_ref(),
            self.reduction.as_int(),
            self.ignore_index,
        )
    }
}

/// Checks `input [N, C, *]` / `[C]` against a class-index target `[N, *]` / `[]` (or, with
/// `probs_ok`, a probability target of the input's shape).
fn class_shapes(loss: &str, input: &Tensor, target: &Tensor, probs_ok: bool) -> Result<()> {
    if probs_ok && target.is_floating_point() && target.shape() == input.shape() {
        return Ok(());
    }
    let (i, t) = (input.shape(), target.shape());
    let ok = match i.len() {
        0 => false,
        1 => t.is_empty(),
        _ => t.len() + 1 == i.len() && t[0] == i[0] && t[1..] == i[2..],
    };
    if !ok {
        return Err(Error::value(
            loss,
            format!("expected input [N, C, *] or [C] and target [N, *] or [] of class indices, got input {i:?} and target {t:?}"),
        ));
    }
    Ok(())
}

/// `nn.CrossEntropyLoss(weight=None, ignore_index=-100, reduction='mean',
/// label_smoothing=0.0)`: log_softmax over dim 1 + NLL. The target is class indices
/// `[N, *]` or class probabilities shaped as the input.
#[derive(Module, Clone, Debug)]
#[module(crate = crate)]
pub struct CrossEntropyLoss {
    #[module(buffer)]
    pub weight: Option<Tensor>,
    pub ignore_index: i64,
    #[module(skip)]
    pub reduction: Reduction,
    pub label_smoothing: f64,
}

impl Default for CrossEntropyLoss {
    fn default() -> Self {
        CrossEntropyLoss {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
            label_smoothing: 0.0,
        }
    }
}

impl CrossEntropyLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(weight: Option<Tensor>, ignore_index: i64, label_smoothing: f64);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        class_shapes("CrossEntropyLoss", input, target, true)?;
        kiln_core::cross_entropy_loss_with(
            input,
            target,
            self.weight.as_ref(),
            self.reduction.as_int(),
            self.ignore_index,
            self.label_smoothing,
        )
    }
}

/// `reduction` of `nn.KLDivLoss`: [`Reduction`]'s three plus `'batchmean'` (the sum divided
/// by the batch size, the mathematically correct KL divergence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KLDivReduction {
    None,
    #[default]
    Mean,
    Sum,
    BatchMean,
}

impl FromStr for KLDivReduction {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        if s == "batchmean" {
            return Ok(KLDivReduction::BatchMean);
        }
        Ok(match s.parse::<Reduction>()? {
            Reduction::None => KLDivReduction::None,
            Reduction::Mean => KLDivReduction::Mean,
            Reduction::Sum => KLDivReduction::Sum,
        })
    }
}

/// `F.kl_div`'s reduction handling over the core `kl_div`.
pub(crate) fn kl_div(
    input: &Tensor,
    target: &Tensor,
    reduction: KLDivReduction,
    log_target: bool,
) -> Result<Tensor> {
    match reduction {
        KLDivReduction::None => kiln_core::kl_div_with(input, target, 0, log_target),
        KLDivReduction::Mean => kiln_core::kl_div_with(input, target, 1, log_target),
        KLDivReduction::Sum => kiln_core::kl_div_with(input, target, 2, log_target),
        KLDivReduction::BatchMean => {
            let s = kiln_core::kl_div_with(input, target, 2, log_target)?;
            if input.dim() == 0 {
                Ok(s)
            } else {
                s.div_scalar(input.shape()[0] as f64)
            }
        }
    }
}

/// `nn.KLDivLoss(reduction='mean', log_target=False)`: input log-probabilities; target
/// probabilities (log-probabilities with `log_target`).
#[derive(Module, Clone, Copy, Debug, Default)]
#[module(crate = crate)]
pub struct KLDivLoss {
    #[module(skip)]
    pub reduction: KLDivReduction,
    pub log_target: bool,
}

impl KLDivLoss {
    pub fn new() -> Self {
        Self::default()
    }
    crate::setters!(reduction: KLDivReduction, log_target: bool);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("KLDivLoss", input, target)?;
        kl_div(input, target, self.reduction, self.log_target)
    }
}

// ---------------------------------------------------------------------------------------
// Margin, embedding and likelihood losses
// ---------------------------------------------------------------------------------------

/// `F.margin_ranking_loss`'s check: the three inputs have the same number of dims.
pub(crate) fn margin_ranking_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    if input1.dim() != input2.dim() || input1.dim() != target.dim() {
        return Err(Error::shape(
            "margin_ranking_loss",
            format!(
                "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: {:?}, input2: {:?}, target: {:?}",
                input1.shape(),
                input2.shape(),
                target.shape()
            ),
        ));
    }
    kiln_core::margin_ranking_loss_with(input1, input2, target, margin, reduction.as_int())
}

/// `nn.MarginRankingLoss(margin=0.0, reduction='mean')`: `max(0, -y (x1 - x2) + margin)`
/// for labels `y` of ±1.
#[derive(Module, Clone, Copy, Debug, Default)]
#[module(crate = crate)]
pub struct MarginRankingLoss {
    pub margin: f64,
    #[module(skip)]
    pub reduction: Reduction,
}

impl MarginRankingLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(margin: f64);
    pub fn forward(&self, input1: &Tensor, input2: &Tensor, target: &Tensor) -> Result<Tensor> {
        margin_ranking_loss(input1, input2, target, self.margin, self.reduction)
    }
}

/// `nn.HingeEmbeddingLoss(margin=1.0, reduction='mean')`: `x` where `y = 1`,
/// `max(0, margin - x)` where `y = -1`.
#[derive(Module, Clone, Copy, Debug)]
#[module(crate = crate)]
pub struct HingeEmbeddingLoss {
    pub margin: f64,
    #[module(skip)]
    pub reduction: Reduction,
}

impl Default for HingeEmbeddingLoss {
    fn default() -> Self {
        HingeEmbeddingLoss {
            margin: 1.0,
            reduction: Reduction::Mean,
        }
    }
}

impl HingeEmbeddingLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(margin: f64);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        kiln_core::hinge_embedding_loss_with(input, target, self.margin, self.reduction.as_int())
    }
}

/// `nn.SoftMarginLoss(reduction='mean')`: `log(1 + exp(-y x))`.
#[derive(Module, Clone, Copy, Debug, Default)]
#[module(crate = crate)]
pub struct SoftMarginLoss {
    #[module(skip)]
    pub reduction: Reduction,
}

impl SoftMarginLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        kiln_core::soft_margin_loss_with(input, target, self.reduction.as_int())
    }
}

/// `nn.CosineEmbeddingLoss(margin=0.0, reduction='mean')`: `1 - cos(x1, x2)` where `y = 1`,
/// `max(0, cos(x1, x2) - margin)` where `y = -1`; inputs `[N, D]` with `y` `[N]`, or `[D]`
/// with a 0-d `y`.
#[derive(Module, Clone, Copy, Debug, Default)]
#[module(crate = crate)]
pub struct CosineEmbeddingLoss {
    pub margin: f64,
    #[module(skip)]
    pub reduction: Reduction,
}

impl CosineEmbeddingLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(margin: f64);
    pub fn forward(&self, input1: &Tensor, input2: &Tensor, target: &Tensor) -> Result<Tensor> {
        kiln_core::cosine_embedding_loss_with(
            input1,
            input2,
            target,
            self.margin,
            self.reduction.as_int(),
        )
    }
}

/// `F.triplet_margin_loss`'s check (`margin > 0`) over the core op.
#[allow(clippy::too_many_arguments)]
pub(crate) fn triplet_margin_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction: Reduction,
) -> Result<Tensor> {
    if margin <= 0.0 {
        return Err(Error::value(
            "triplet_margin_loss",
            format!("margin must be greater than 0, got {margin}"),
        ));
    }
    kiln_core::triplet_margin_loss_with(
        anchor,
        positive,
        negative,
        margin,
        p,
        eps,
        swap,
        reduction.as_int(),
    )
}

/// `nn.TripletMarginLoss(margin=1.0, p=2.0, eps=1e-6, swap=False, reduction='mean')`:
/// `max(0, margin + d(a, p) - d(a, n))` with the `p`-norm `pairwise_distance`.
#[derive(Module, Clone, Copy, Debug)]
#[module(crate = crate)]
pub struct TripletMarginLoss {
    pub margin: f64,
    pub p: f64,
    pub eps: f64,
    pub swap: bool,
    #[module(skip)]
    pub reduction: Reduction,
}

impl Default for TripletMarginLoss {
    fn default() -> Self {
        TripletMarginLoss {
            margin: 1.0,
            p: 2.0,
            eps: 1e-6,
            swap: false,
            reduction: Reduction::Mean,
        }
    }
}

impl TripletMarginLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(margin: f64, p: f64, eps: f64, swap: bool);
    pub fn forward(&self, anchor: &Tensor, positive: &Tensor, negative: &Tensor) -> Result<Tensor> {
        triplet_margin_loss(
            anchor,
            positive,
            negative,
            self.margin,
            self.p,
            self.eps,
            self.swap,
            self.reduction,
        )
    }
}

/// `nn.PoissonNLLLoss(log_input=True, full=False, eps=1e-8, reduction='mean')`: `exp(x) -
/// t x` (log rates) or `x - t log(x + eps)` (rates); `full` adds Stirling's approximation
/// of `log(t!)` for targets above 1.
#[derive(Module, Clone, Copy, Debug)]
#[module(crate = crate)]
pub struct PoissonNLLLoss {
    pub log_input: bool,
    pub full: bool,
    pub eps: f64,
    #[module(skip)]
    pub reduction: Reduction,
}

impl Default for PoissonNLLLoss {
    fn default() -> Self {
        PoissonNLLLoss {
            log_input: true,
            full: false,
            eps: 1e-8,
            reduction: Reduction::Mean,
        }
    }
}

impl PoissonNLLLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(log_input: bool, full: bool, eps: f64);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        kiln_core::poisson_nll_loss(
            input,
            target,
            self.log_input,
            self.full,
            self.eps,
            self.reduction.as_int(),
        )
    }
}

/// `F.gaussian_nll_loss`: `0.5 (log var + (input - target)^2 / var)` (+ `0.5 log 2 pi` with
/// `full`), `var` clamped to at least `eps` without touching its gradient. `var` is the
/// input's shape, the input's shape less its last dim, or the input's with exactly one
/// mismatched dim (homoscedastic).
pub(crate) fn gaussian_nll_loss(
    input: &Tensor,
    target: &Tensor,
    var: &Tensor,
    full: bool,
    eps: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    let op = "gaussian_nll_loss";
    if var.lt_scalar(0)?.any()?.item::<bool>()? {
        return Err(Error::value(op, "var has negative entry/entries"));
    }
    let (i, v) = (input.shape(), var.shape());
    let var = if i == v {
        var.clone()
    } else if !i.is_empty() && &i[..i.len() - 1] == v {
        var.unsqueeze(-1)?
    } else if i.len() == v.len()
        && i.iter()
            .zip(v)
            .filter(|(a, b)| a != b)
            .map(|(_, b)| b)
            .sum::<usize>()
            == 1
    {
        var.clone()
    } else {
        return Err(Error::value(op, "var is of incorrect size"));
    };
    // PyTorch clamps a clone in place under no_grad: the value is clamped, the gradient
    // passes through as if it were not.
    let clamped = {
        let _g = kiln_core::no_grad();
        let d = var.detach();
        d.clamp_with(Some(eps.into()), None)?.sub(&d)?
    };
    let var = var.add(&clamped)?;
    let diff = input.sub(target)?;
    let mut loss = var
        .log()?
        .add(&diff.mul(&diff)?.div(&var)?)?
        .mul_scalar(0.5)?;
    if full {
        loss = loss.add_scalar(0.5 * (2.0 * std::f64::consts::PI).ln())?;
    }
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Mean => loss.mean(),
        Reduction::Sum => loss.sum(),
    }
}

/// `nn.GaussianNLLLoss(full=False, eps=1e-6, reduction='mean')`: the negative log
/// likelihood of `target` under `N(input, var)`; `forward(input, target, var)`.
#[derive(Module, Clone, Copy, Debug)]
#[module(crate = crate)]
pub struct GaussianNLLLoss {
    pub full: bool,
    pub eps: f64,
    #[module(skip)]
    pub reduction: Reduction,
}

impl Default for GaussianNLLLoss {
    fn default() -> Self {
        GaussianNLLLoss {
            full: false,
            eps: 1e-6,
            reduction: Reduction::Mean,
        }
    }
}

impl GaussianNLLLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(full: bool, eps: f64);
    pub fn forward(&self, input: &Tensor, target: &Tensor, var: &Tensor) -> Result<Tensor> {
        gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)
    }
}

/// `F.multilabel_soft_margin_loss`: `-(t log σ(x) + (1 - t) log σ(-x))`, times `weight`,
/// averaged over the last (class) dim, then reduced.
pub(crate) fn multilabel_soft_margin_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    let mut loss = target
        .mul(&kiln_core::log_sigmoid(input)?)?
        .add(
            &target
                .neg()?
                .add_scalar(1)?
                .mul(&kiln_core::log_sigmoid(&input.neg()?)?)?,
        )?
        .neg()?;
    if let Some(w) = weight {
        loss = loss.mul(w)?;
    }
    let class_dim = input.dim() as i64 - 1;
    let c = if input.dim() == 0 {
        1
    } else {
        input.shape()[class_dim as usize]
    };
    let loss = kiln_core::sum_dim_with(&loss, &[class_dim], false, None)?.div_scalar(c as f64)?;
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Mean => loss.mean(),
        Reduction::Sum => loss.sum(),
    }
}

/// `nn.MultiLabelSoftMarginLoss(weight=None, reduction='mean')`: per-class logistic losses
/// averaged over classes; `weight` (a buffer) rescales each class.
#[derive(Module, Clone, Debug, Default)]
#[module(crate = crate)]
pub struct MultiLabelSoftMarginLoss {
    #[module(buffer)]
    pub weight: Option<Tensor>,
    #[module(skip)]
    pub reduction: Reduction,
}

impl MultiLabelSoftMarginLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(weight: Option<Tensor>);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        multilabel_soft_margin_loss(input, target, self.weight.as_ref(), self.reduction)
    }
}

/// `F.multi_margin_loss`'s check (a 1-d `weight`) over the core op.
pub(crate) fn multi_margin_loss(
    input: &Tensor,
    target: &Tensor,
    p: i64,
    margin: f64,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    if p != 1 && p != 2 {
        return Err(Error::value(
            "multi_margin_loss",
            "only p == 1 and p == 2 supported",
        ));
    }
    if weight.is_some_and(|w| w.dim() != 1) {
        return Err(Error::shape(
            "multi_margin_loss",
            "weight must be one-dimensional",
        ));
    }
    kiln_core::multi_margin_loss_with(input, target, p, margin, weight, reduction.as_int())
}

/// `nn.MultiMarginLoss(p=1, margin=1.0, weight=None, reduction='mean')`: the multi-class
/// hinge `sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C`; `weight` is a buffer.
#[derive(Module, Clone, Debug)]
#[module(crate = crate)]
pub struct MultiMarginLoss {
    pub p: i64,
    pub margin: f64,
    #[module(buffer)]
    pub weight: Option<Tensor>,
    #[module(skip)]
    pub reduction: Reduction,
}

impl Default for MultiMarginLoss {
    fn default() -> Self {
        MultiMarginLoss {
            p: 1,
            margin: 1.0,
            weight: None,
            reduction: Reduction::Mean,
        }
    }
}

impl MultiMarginLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    crate::setters!(p: i64, margin: f64, weight: Option<Tensor>);
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        multi_margin_loss(
            input,
            target,
            self.p,
            self.margin,
            self.weight.as_ref(),
            self.reduction,
        )
    }
}

/// `nn.MultiLabelMarginLoss(reduction='mean')`: each target row lists class indices, ended
/// by the first -1; hinge between every listed class and every class not listed.
#[derive(Module, Clone, Copy, Debug, Default)]
#[module(crate = crate)]
pub struct MultiLabelMarginLoss {
    #[module(skip)]
    pub reduction: Reduction,
}

impl MultiLabelMarginLoss {
    pub fn new() -> Self {
        Self::default()
    }
    reduction_setter!();
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        kiln_core::multilabel_margin_loss_with(input, target, self.reduction.as_int())
    }
}
