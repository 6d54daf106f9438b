//! Losses as modules (`nn.MSELoss`, `nn.CrossEntropyLoss`, …). A loss takes two tensors, so
//! it has an inherent `forward(&self, input, target)`; it derives `Module` so it can sit in a
//! model (its `weight` / `pos_weight`, when given, are buffers, as in PyTorch's state_dict).
//! `new()` gives PyTorch's defaults; the other keyword arguments are chainable setters
//! (`CrossEntropyLoss::new().label_smoothing(0.1)`).

use crate::Module;
use kiln::{Error, Result, Tensor};
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
            _ => Err(Error::op(
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
        return Err(Error::op(
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
        pub fn reduction(mut self, r: Reduction) -> Self {
            self.reduction = r;
            self
        }
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
        kiln::mse_loss_with(input, target, self.reduction.as_int())
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
        kiln::l1_loss_with(input, target, self.reduction.as_int())
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
    pub fn beta(mut self, b: f64) -> Self {
        self.beta = b;
        self
    }
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("SmoothL1Loss", input, target)?;
        kiln::smooth_l1_loss_with(input, target, self.reduction.as_int(), self.beta)
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
    pub fn delta(mut self, d: f64) -> Self {
        self.delta = d;
        self
    }
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("HuberLoss", input, target)?;
        kiln::huber_loss_with(input, target, self.reduction.as_int(), self.delta)
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
    pub fn weight(mut self, w: Option<Tensor>) -> Self {
        self.weight = w;
        self
    }
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("BCELoss", input, target)?;
        kiln::binary_cross_entropy_with(
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
    pub fn weight(mut self, w: Option<Tensor>) -> Self {
        self.weight = w;
        self
    }
    pub fn pos_weight(mut self, w: Option<Tensor>) -> Self {
        self.pos_weight = w;
        self
    }
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("BCEWithLogitsLoss", input, target)?;
        kiln::binary_cross_entropy_with_logits_with(
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
    pub fn weight(mut self, w: Option<Tensor>) -> Self {
        self.weight = w;
        self
    }
    pub fn ignore_index(mut self, i: i64) -> Self {
        self.ignore_index = i;
        self
    }
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        class_shapes("NLLLoss", input, target, false)?;
        kiln::nll_loss_with(
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
        return Err(Error::op(
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
    pub fn weight(mut self, w: Option<Tensor>) -> Self {
        self.weight = w;
        self
    }
    pub fn ignore_index(mut self, i: i64) -> Self {
        self.ignore_index = i;
        self
    }
    pub fn label_smoothing(mut self, s: f64) -> Self {
        self.label_smoothing = s;
        self
    }
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        class_shapes("CrossEntropyLoss", input, target, true)?;
        kiln::cross_entropy_loss_with(
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
        KLDivReduction::None => kiln::kl_div_with(input, target, 0, log_target),
        KLDivReduction::Mean => kiln::kl_div_with(input, target, 1, log_target),
        KLDivReduction::Sum => kiln::kl_div_with(input, target, 2, log_target),
        KLDivReduction::BatchMean => {
            let s = kiln::kl_div_with(input, target, 2, log_target)?;
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
    pub fn reduction(mut self, r: KLDivReduction) -> Self {
        self.reduction = r;
        self
    }
    pub fn log_target(mut self, l: bool) -> Self {
        self.log_target = l;
        self
    }
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        same_shape("KLDivLoss", input, target)?;
        kl_div(input, target, self.reduction, self.log_target)
    }
}
