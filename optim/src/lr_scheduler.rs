//! Learning-rate schedulers (PyTorch's `torch.optim.lr_scheduler`).
//!
//! A scheduler is built over an optimizer, reads the groups' learning rates as its base
//! rates (PyTorch's `initial_lr`), and sets the rates for epoch 0 at once, as PyTorch's
//! constructors do; each [`LRScheduler::step`] then advances one epoch and writes the new
//! rates into the optimizer. Rust's borrow rules make the optimizer an argument of `step`
//! instead of a field:
//!
//! ```
//! use kiln_optim::{lr_scheduler::{LRScheduler, StepLR}, Optimizer, SGD, SGDOptions};
//! let w = kiln_core::Tensor::from([1.0f32]).requires_grad_(true)?;
//! let mut opt = SGD::new(vec![w], SGDOptions { lr: 0.1, ..Default::default() })?;
//! let mut sched = StepLR::new(&mut opt, 2, 0.5)?;
//! for _ in 0..4 {
//!     opt.step()?;
//!     sched.step(&mut opt)?;
//! }
//! assert_eq!(sched.get_last_lr(), &[0.025]);
//! # Ok::<(), kiln_core::Error>(())
//! ```
//!
//! The epoch-based schedulers compute PyTorch's closed forms (`_get_closed_form_lr`, or
//! `get_lr` where that is already closed), which equal PyTorch's recursive updates when one
//! scheduler drives the optimizer. Deviation: two such schedulers stepping the same
//! optimizer at once do not compose multiplicatively as PyTorch's chainable forms do (the
//! last one to step sets the rates); use [`SequentialLR`] to run them one after another.
//!
//! Degenerate arguments follow what PyTorch's `step()` does with them: a negative
//! `step_size` or `T_max` acts as its absolute value, `total_iters <= 0` keeps LinearLR at
//! `start_factor` times the rate, negative milestones are never reached. Where PyTorch would
//! divide by zero (`step_size=0`, `T_max=0`, OneCycleLR's `div_factor=0` or a phase of
//! length zero) kiln returns an error, at construction when the arguments alone decide it.

use crate::Optimizer;
use kiln_core::{Error, Result};
use std::f64::consts::PI;

/// A learning-rate scheduler.
pub trait LRScheduler {
    /// Advances one epoch and writes the new learning rates into `opt`.
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()>;
    /// The learning rates it set last, one per group.
    fn get_last_lr(&self) -> &[f64];
    /// The current epoch (0 right after construction).
    fn last_epoch(&self) -> i64;
}

/// A scheduler whose rates are a function of the epoch and the base rates: what
/// [`SequentialLR`] can chain. Implemented by every epoch-based scheduler here.
pub trait EpochSchedule {
    /// The learning rate of a group with base rate `base_lr` at `epoch`.
    fn lr_at(&self, base_lr: f64, epoch: i64) -> Result<f64>;
    /// The scheduler's epoch counter and rates.
    fn state(&self) -> &EpochState;
    fn state_mut(&mut self) -> &mut EpochState;
}

/// The bookkeeping every epoch-based scheduler shares.
#[derive(Clone, Debug)]
pub struct EpochState {
    pub base_lrs: Vec<f64>,
    pub last_epoch: i64,
    pub last_lr: Vec<f64>,
}

impl EpochState {
    fn new(opt: &dyn Optimizer) -> Self {
        let base_lrs: Vec<f64> = (0..opt.num_param_groups()).map(|g| opt.lr(g)).collect();
        EpochState {
            last_lr: base_lrs.clone(),
            base_lrs,
            last_epoch: -1,
        }
    }
}

fn apply<S: EpochSchedule + ?Sized>(s: &mut S, opt: &mut dyn Optimizer, epoch: i64) -> Result<()> {
    let lrs = s
        .state()
        .base_lrs
        .iter()
        .map(|&b| s.lr_at(b, epoch))
        .collect::<Result<Vec<_>>>()?;
    if lrs.len() != opt.num_param_groups() {
        return Err(Error::value(
            "lr_scheduler.step",
            format!(
                "the scheduler has {} base learning rates but the optimizer has {} param groups",
                lrs.len(),
                opt.num_param_groups()
            ),
        ));
    }
    for (g, &lr) in lrs.iter().enumerate() {
        opt.set_lr(g, lr);
    }
    let st = s.state_mut();
    st.last_epoch = epoch;
    st.last_lr = lrs;
    Ok(())
}

/// `gamma ** n` for an epoch count of any size (Python's float power with an int exponent).
fn pow_epochs(gamma: f64, n: i64) -> f64 {
    match i32::try_from(n) {
        Ok(n) => gamma.powi(n),
        Err(_) => gamma.powf(n as f64),
    }
}

fn init<S: EpochSchedule>(mut s: S, opt: &mut dyn Optimizer) -> Result<S> {
    apply(&mut s, opt, 0)?;
    Ok(s)
}

macro_rules! epoch_scheduler {
    ($ty:ident) => {
        impl LRScheduler for $ty {
            fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
                let e = self.state.last_epoch + 1;
                apply(self, opt, e)
            }
            fn get_last_lr(&self) -> &[f64] {
                &self.state.last_lr
            }
            fn last_epoch(&self) -> i64 {
                self.state.last_epoch
            }
        }
    };
}

macro_rules! state_access {
    () => {
        fn state(&self) -> &EpochState {
            &self.state
        }
        fn state_mut(&mut self) -> &mut EpochState {
            &mut self.state
        }
    };
}

/// Multiplies the rate by `gamma` every `step_size` epochs (PyTorch's `StepLR`,
/// `gamma=0.1`). A negative `step_size` acts as its absolute value, as PyTorch's
/// `epoch % step_size` test makes it; zero is an error (PyTorch's first step divides by it).
#[derive(Clone, Debug)]
pub struct StepLR {
    pub step_size: i64,
    pub gamma: f64,
    state: EpochState,
}

impl StepLR {
    pub fn new(opt: &mut dyn Optimizer, step_size: i64, gamma: f64) -> Result<StepLR> {
        if step_size == 0 {
            return Err(Error::value(
                "StepLR",
                "step_size must not be 0: the schedule takes the epoch modulo step_size (integer modulo by zero)",
            ));
        }
        init(
            StepLR {
                step_size,
                gamma,
                state: EpochState::new(opt),
            },
            opt,
        )
    }
}

impl EpochSchedule for StepLR {
    fn lr_at(&self, base: f64, epoch: i64) -> Result<f64> {
        Ok(base * pow_epochs(self.gamma, epoch / self.step_size.abs()))
    }
    state_access!();
}
epoch_scheduler!(StepLR);

/// Multiplies the rate by `gamma` at each milestone epoch (PyTorch's `MultiStepLR`; a
/// milestone listed twice counts twice, a negative one is never reached).
#[derive(Clone, Debug)]
pub struct MultiStepLR {
    pub milestones: Vec<i64>,
    pub gamma: f64,
    state: EpochState,
}

impl MultiStepLR {
    pub fn new(opt: &mut dyn Optimizer, milestones: &[i64], gamma: f64) -> Result<MultiStepLR> {
        let mut milestones = milestones.to_vec();
        milestones.sort();
        init(
            MultiStepLR {
                milestones,
                gamma,
                state: EpochState::new(opt),
            },
            opt,
        )
    }
}

impl EpochSchedule for MultiStepLR {
    fn lr_at(&self, base: f64, epoch: i64) -> Result<f64> {
        // The milestones in 0..=epoch: PyTorch's step() multiplies by gamma at each epoch
        // it reaches that is a milestone, so one below 0 never counts.
        let n = self.milestones.partition_point(|&m| m <= epoch)
            - self.milestones.partition_point(|&m| m < 0);
        Ok(base * pow_epochs(self.gamma, n as i64))
    }
    state_access!();
}
epoch_scheduler!(MultiStepLR);

/// Multiplies the rate by `gamma` every epoch (PyTorch's `ExponentialLR`).
#[derive(Clone, Debug)]
pub struct ExponentialLR {
    pub gamma: f64,
    state: EpochState,
}

impl ExponentialLR {
    pub fn new(opt: &mut dyn Optimizer, gamma: f64) -> Result<ExponentialLR> {
        init(
            ExponentialLR {
                gamma,
                state: EpochState::new(opt),
            },
            opt,
        )
    }
}

impl EpochSchedule for ExponentialLR {
    fn lr_at(&self, base: f64, epoch: i64) -> Result<f64> {
        Ok(base * pow_epochs(self.gamma, epoch))
    }
    state_access!();
}
epoch_scheduler!(ExponentialLR);

/// Cosine annealing from the base rate to `eta_min` over `t_max` epochs (PyTorch's
/// `CosineAnnealingLR(T_max, eta_min=0)`), continuing periodically after `t_max`. A
/// negative `t_max` acts as its absolute value (the cosine is even), as in PyTorch; zero is
/// an error (PyTorch's first step divides by it).
#[derive(Clone, Debug)]
pub struct CosineAnnealingLR {
    pub t_max: i64,
    pub eta_min: f64,
    state: EpochState,
}

impl CosineAnnealingLR {
    pub fn new(opt: &mut dyn Optimizer, t_max: i64, eta_min: f64) -> Result<CosineAnnealingLR> {
        if t_max == 0 {
            return Err(Error::value(
                "CosineAnnealingLR",
                "T_max must not be 0: the schedule divides the epoch by T_max (integer modulo by zero)",
            ));
        }
        init(
            CosineAnnealingLR {
                t_max,
                eta_min,
                state: EpochState::new(opt),
            },
            opt,
        )
    }
}

impl EpochSchedule for CosineAnnealingLR {
    fn lr_at(&self, base: f64, epoch: i64) -> Result<f64> {
        Ok(self.eta_min
            + (base - self.eta_min) * (1.0 + (PI * epoch as f64 / self.t_max as f64).cos()) / 2.0)
    }
    state_access!();
}
epoch_scheduler!(CosineAnnealingLR);

/// Scales the rate linearly from `start_factor` to `end_factor` over `total_iters` epochs
/// (PyTorch's `LinearLR(start_factor=1/3, end_factor=1.0, total_iters=5)`). With
/// `total_iters <= 0` the rate stays at `start_factor` times the base rate, as PyTorch's
/// steps leave it.
#[derive(Clone, Debug)]
pub struct LinearLR {
    pub start_factor: f64,
    pub end_factor: f64,
    pub total_iters: i64,
    state: EpochState,
}

impl LinearLR {
    pub fn new(
        opt: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: i64,
    ) -> Result<LinearLR> {
        if !(start_factor > 0.0 && start_factor <= 1.0) {
            return Err(Error::value(
                "LinearLR",
                "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.",
            ));
        }
        if !(0.0..=1.0).contains(&end_factor) {
            return Err(Error::value(
                "LinearLR",
                "Ending multiplicative factor expected to be between 0 and 1.",
            ));
        }
        init(
            LinearLR {
                start_factor,
                end_factor,
                total_iters,
                state: EpochState::new(opt),
            },
            opt,
        )
    }
    /// PyTorch's defaults: `start_factor=1/3`, `end_factor=1.0`, `total_iters=5`.
    pub fn with_defaults(opt: &mut dyn Optimizer) -> Result<LinearLR> {
        Self::new(opt, 1.0 / 3.0, 1.0, 5)
    }
}

impl EpochSchedule for LinearLR {
    fn lr_at(&self, base: f64, epoch: i64) -> Result<f64> {
        if self.total_iters <= 0 {
            // PyTorch's step() sets start_factor * lr at epoch 0 and leaves every later
            // epoch alone (they are all past total_iters); the closed form would be 0/0.
            return Ok(base * self.start_factor);
        }
        let t = epoch.min(self.total_iters) as f64;
        Ok(base
            * (self.start_factor
                + (self.end_factor - self.start_factor) * t / self.total_iters as f64))
    }
    state_access!();
}
epoch_scheduler!(LinearLR);

/// Runs schedulers one after another (PyTorch's `SequentialLR`): scheduler `i + 1` takes
/// over at `milestones[i]`, restarting from its epoch 0. Every scheduler is built over the
/// same optimizer before this one; all take the first one's base rates (PyTorch's
/// `initial_lr`).
pub struct SequentialLR {
    schedulers: Vec<Box<dyn EpochSchedule>>,
    milestones: Vec<i64>,
    last_epoch: i64,
    last_lr: Vec<f64>,
}

impl SequentialLR {
    pub fn new(
        opt: &mut dyn Optimizer,
        mut schedulers: Vec<Box<dyn EpochSchedule>>,
        milestones: &[i64],
    ) -> Result<SequentialLR> {
        if schedulers.is_empty() {
            return Err(Error::value(
                "SequentialLR",
                "SequentialLR expects at least one scheduler, but got no scheduler.",
            ));
        }
        if milestones.len() != schedulers.len() - 1 {
            return Err(Error::value(
                "SequentialLR",
                format!(
                    "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, but got number of schedulers {} and the number of milestones to be equal to {}",
                    schedulers.len(),
                    milestones.len()
                ),
            ));
        }
        let base = schedulers[0].state().base_lrs.clone();
        for s in schedulers.iter_mut() {
            s.state_mut().base_lrs = base.clone();
        }
        // The scheduler meant to run at epoch 0: the first, unless milestones are <= 0.
        let idx = milestones.partition_point(|&m| m <= 0);
        apply(schedulers[idx].as_mut(), opt, 0)?;
        let last_lr = schedulers[idx].state().last_lr.clone();
        Ok(SequentialLR {
            schedulers,
            milestones: milestones.to_vec(),
            last_epoch: 0,
            last_lr,
        })
    }
}

impl LRScheduler for SequentialLR {
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        self.last_epoch += 1;
        let idx = self.milestones.partition_point(|&m| m <= self.last_epoch);
        let s = &mut self.schedulers[idx];
        let epoch = if idx > 0 && self.milestones[idx - 1] == self.last_epoch {
            0
        } else {
            s.state().last_epoch + 1
        };
        apply(s.as_mut(), opt, epoch)?;
        self.last_lr = s.state().last_lr.clone();
        Ok(())
    }
    fn get_last_lr(&self) -> &[f64] {
        &self.last_lr
    }
    fn last_epoch(&self) -> i64 {
        self.last_epoch
    }
}

/// How [`OneCycleLR`] anneals within a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnealStrategy {
    Cos,
    Linear,
}

/// [`OneCycleLR`]'s settings, PyTorch's names and defaults (`max_lr` has none: set it).
#[derive(Clone, Debug)]
pub struct OneCycleOptions {
    pub max_lr: f64,
    /// The cycle's length; or give `epochs` and `steps_per_epoch`.
    pub total_steps: Option<i64>,
    pub epochs: Option<i64>,
    pub steps_per_epoch: Option<i64>,
    pub pct_start: f64,
    pub anneal_strategy: AnnealStrategy,
    pub cycle_momentum: bool,
    pub base_momentum: f64,
    pub max_momentum: f64,
    pub div_factor: f64,
    pub final_div_factor: f64,
    pub three_phase: bool,
}

impl Default for OneCycleOptions {
    fn default() -> Self {
        OneCycleOptions {
            max_lr: 0.1,
            total_steps: None,
            epochs: None,
            steps_per_epoch: None,
            pct_start: 0.3,
            anneal_strategy: AnnealStrategy::Cos,
            cycle_momentum: true,
            base_momentum: 0.85,
            max_momentum: 0.95,
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
        }
    }
}

struct Phase {
    end_step: f64,
    lr: (usize, usize),
    momentum: (usize, usize),
}

/// The 1cycle policy (PyTorch's `OneCycleLR`): the rate rises from `max_lr / div_factor`
/// to `max_lr`, then falls to `max_lr / div_factor / final_div_factor` (with
/// `three_phase`, back to the start first), while the momentum (or Adam's `beta1`) cycles
/// the opposite way between `max_momentum` and `base_momentum`. Step once per batch.
///
/// `epochs * steps_per_epoch` may exceed `i64` (PyTorch's integers do not overflow); the
/// phase boundaries are computed in floats, as PyTorch does. Arguments that make PyTorch
/// divide by zero (`div_factor=0`, `final_div_factor=0`, a phase of length zero) are an
/// error at the step that would divide, never a NaN rate.
pub struct OneCycleLR {
    opts: OneCycleOptions,
    /// Wide enough for any `epochs * steps_per_epoch` of two `i64`s.
    total_steps: i128,
    phases: Vec<Phase>,
    last_epoch: i64,
    last_lr: Vec<f64>,
}

impl OneCycleLR {
    pub fn new(opt: &mut dyn Optimizer, opts: OneCycleOptions) -> Result<OneCycleLR> {
        let name = "OneCycleLR";
        let total_steps = match (opts.total_steps, opts.epochs, opts.steps_per_epoch) {
            (Some(t), _, _) => {
                if t <= 0 {
                    return Err(Error::value(
                        name,
                        format!("Expected positive integer total_steps, but got {t}"),
                    ));
                }
                i128::from(t)
            }
            (None, Some(e), Some(s)) => {
                if e <= 0 {
                    return Err(Error::value(
                        name,
                        format!("Expected positive integer epochs, but got {e}"),
                    ));
                }
                if s <= 0 {
                    return Err(Error::value(
                        name,
                        format!("Expected positive integer steps_per_epoch, but got {s}"),
                    ));
                }
                i128::from(e) * i128::from(s)
            }
            _ => {
                return Err(Error::value(
                    name,
                    "You must define either total_steps OR (epochs AND steps_per_epoch)",
                ))
            }
        };
        if !(0.0..=1.0).contains(&opts.pct_start) {
            return Err(Error::value(
                name,
                format!(
                    "Expected float between 0 and 1 pct_start, but got {}",
                    opts.pct_start
                ),
            ));
        }
        // PyTorch's `max_lr / div_factor` and `initial_lr / final_div_factor` (Python
        // raises on a zero divisor).
        if opts.div_factor == 0.0 || opts.final_div_factor == 0.0 {
            let which = if opts.div_factor == 0.0 {
                "div_factor"
            } else {
                "final_div_factor"
            };
            return Err(Error::value(
                name,
                format!("float division by zero: {which} must not be 0"),
            ));
        }
        // Indices into [initial_lr, max_lr, min_lr] and [max_momentum, base_momentum].
        let (init, max, min) = (0, 1, 2);
        let (mmax, mbase) = (0, 1);
        let t = total_steps as f64;
        // PyTorch's last boundary is the integer `total_steps - 1`, made a float where used.
        let last = (total_steps - 1) as f64;
        let phases = if opts.three_phase {
            vec![
                Phase {
                    end_step: opts.pct_start * t - 1.0,
                    lr: (init, max),
                    momentum: (mmax, mbase),
                },
                Phase {
                    end_step: 2.0 * opts.pct_start * t - 2.0,
                    lr: (max, init),
                    momentum: (mbase, mmax),
                },
                Phase {
                    end_step: last,
                    lr: (init, min),
                    momentum: (mmax, mmax),
                },
            ]
        } else {
            vec![
                Phase {
                    end_step: opts.pct_start * t - 1.0,
                    lr: (init, max),
                    momentum: (mmax, mbase),
                },
                Phase {
                    end_step: last,
                    lr: (max, min),
                    momentum: (mbase, mmax),
                },
            ]
        };
        if opts.cycle_momentum {
            for g in 0..opt.num_param_groups() {
                if opt.momentum(g).is_none() {
                    return Err(Error::value(
                        name,
                        "optimizer must support momentum or beta1 with `cycle_momentum` option enabled",
                    ));
                }
                opt.set_momentum(g, opts.max_momentum)?;
            }
        }
        let mut s = OneCycleLR {
            opts,
            total_steps,
            phases,
            last_epoch: -1,
            last_lr: Vec::new(),
        };
        s.step(opt)?;
        Ok(s)
    }

    fn anneal(&self, start: f64, end: f64, pct: f64) -> f64 {
        match self.opts.anneal_strategy {
            AnnealStrategy::Cos => end + (start - end) / 2.0 * ((PI * pct).cos() + 1.0),
            AnnealStrategy::Linear => (end - start) * pct + start,
        }
    }
}

impl LRScheduler for OneCycleLR {
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        let step_num = self.last_epoch + 1;
        if i128::from(step_num) > self.total_steps {
            return Err(Error::value(
                "OneCycleLR",
                format!(
                    "Tried to step {step_num} times. The specified number of total steps is {}",
                    self.total_steps
                ),
            ));
        }
        let o = &self.opts;
        let initial_lr = o.max_lr / o.div_factor;
        let lrs = [initial_lr, o.max_lr, initial_lr / o.final_div_factor];
        let moms = [o.max_momentum, o.base_momentum];
        let s = step_num as f64;
        let mut start_step = 0.0;
        let mut lr = 0.0;
        let mut mom = 0.0;
        for (i, ph) in self.phases.iter().enumerate() {
            if s <= ph.end_step || i == self.phases.len() - 1 {
                let span = ph.end_step - start_step;
                if span == 0.0 {
                    return Err(Error::value(
                        "OneCycleLR",
                        format!(
                            "float division by zero: step {step_num} falls in phase {i}, which starts and ends at step {start_step} (total_steps={}, pct_start={})",
                            self.total_steps, o.pct_start
                        ),
                    ));
                }
                let pct = (s - start_step) / span;
                lr = self.anneal(lrs[ph.lr.0], lrs[ph.lr.1], pct);
                mom = self.anneal(moms[ph.momentum.0], moms[ph.momentum.1], pct);
                break;
            }
            start_step = ph.end_step;
        }
        for g in 0..opt.num_param_groups() {
            opt.set_lr(g, lr);
            if self.opts.cycle_momentum {
                opt.set_momentum(g, mom)?;
            }
        }
        self.last_epoch = step_num;
        self.last_lr = vec![lr; opt.num_param_groups()];
        Ok(())
    }
    fn get_last_lr(&self) -> &[f64] {
        &self.last_lr
    }
    fn last_epoch(&self) -> i64 {
        self.last_epoch
    }
}

/// Whether [`ReduceLROnPlateau`] watches a metric that should fall or rise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlateauMode {
    Min,
    Max,
}

/// How [`ReduceLROnPlateau`]'s `threshold` is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThresholdMode {
    Rel,
    Abs,
}

/// [`ReduceLROnPlateau`]'s settings, PyTorch's names and defaults.
#[derive(Clone, Debug)]
pub struct PlateauOptions {
    pub mode: PlateauMode,
    pub factor: f64,
    pub patience: i64,
    pub threshold: f64,
    pub threshold_mode: ThresholdMode,
    pub cooldown: i64,
    /// One value for every group (PyTorch's scalar `min_lr`, which also covers groups added
    /// later), or one per group (PyTorch's list; a group added later is then an error at
    /// the next reduction). With a single group one value reads as the scalar.
    pub min_lr: Vec<f64>,
    pub eps: f64,
}

impl Default for PlateauOptions {
    fn default() -> Self {
        PlateauOptions {
            mode: PlateauMode::Min,
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: ThresholdMode::Rel,
            cooldown: 0,
            min_lr: vec![0.0],
            eps: 1e-8,
        }
    }
}

/// Cuts the rate by `factor` once a metric has stopped improving for `patience` epochs
/// (PyTorch's `ReduceLROnPlateau`). Step it with the metric: [`ReduceLROnPlateau::step_with`];
/// [`LRScheduler::step`] is an error (it needs the metric).
pub struct ReduceLROnPlateau {
    opts: PlateauOptions,
    /// One `min_lr` for every group (PyTorch's scalar `min_lr`): extended to groups added
    /// later. `None` when one was given per group (PyTorch's list).
    default_min_lr: Option<f64>,
    min_lrs: Vec<f64>,
    best: f64,
    num_bad_epochs: i64,
    cooldown_counter: i64,
    last_epoch: i64,
    last_lr: Vec<f64>,
}

impl ReduceLROnPlateau {
    pub fn new(opt: &mut dyn Optimizer, opts: PlateauOptions) -> Result<ReduceLROnPlateau> {
        let name = "ReduceLROnPlateau";
        if opts.factor >= 1.0 {
            return Err(Error::value(name, "Factor should be < 1.0."));
        }
        let n = opt.num_param_groups();
        let (default_min_lr, min_lrs) = match opts.min_lr.len() {
            1 => (Some(opts.min_lr[0]), vec![opts.min_lr[0]; n]),
            k if k == n => (None, opts.min_lr.clone()),
            k => return Err(Error::value(name, format!("expected {n} min_lrs, got {k}"))),
        };
        Ok(ReduceLROnPlateau {
            best: match opts.mode {
                PlateauMode::Min => f64::INFINITY,
                PlateauMode::Max => f64::NEG_INFINITY,
            },
            opts,
            default_min_lr,
            min_lrs,
            num_bad_epochs: 0,
            cooldown_counter: 0,
            last_epoch: 0,
            last_lr: (0..n).map(|g| opt.lr(g)).collect(),
        })
    }

    fn is_better(&self, a: f64) -> bool {
        let (best, th) = (self.best, self.opts.threshold);
        match (self.opts.mode, self.opts.threshold_mode) {
            (PlateauMode::Min, ThresholdMode::Rel) => a < best * (1.0 - th),
            (PlateauMode::Min, ThresholdMode::Abs) => a < best - th,
            (PlateauMode::Max, ThresholdMode::Rel) => a > best * (th + 1.0),
            (PlateauMode::Max, ThresholdMode::Abs) => a > best + th,
        }
    }

    /// One epoch with the watched metric's value.
    pub fn step_with(&mut self, opt: &mut dyn Optimizer, metric: f64) -> Result<()> {
        self.last_epoch += 1;
        if self.is_better(metric) {
            self.best = metric;
            self.num_bad_epochs = 0;
        } else {
            self.num_bad_epochs += 1;
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            self.num_bad_epochs = 0;
        }
        if self.num_bad_epochs > self.opts.patience {
            let n = opt.num_param_groups();
            if n != self.min_lrs.len() {
                match self.default_min_lr {
                    Some(m) => self.min_lrs = vec![m; n],
                    None => {
                        return Err(Error::value(
                            "ReduceLROnPlateau",
                            format!(
                                "The number of param groups in the `optimizer` ({n}) differs from when `ReduceLROnPlateau` was initialized ({}), usually due to a new param group being added to the optimizer. Please modify the `min_lrs` field to match the length of the `optimizer` param groups.",
                                self.min_lrs.len()
                            ),
                        ))
                    }
                }
            }
            for g in 0..n {
                let old = opt.lr(g);
                // Python's max(old * factor, min_lr): a NaN product stays NaN (and then
                // changes nothing), where f64::max would pick min_lr.
                let scaled = old * self.opts.factor;
                let new = if self.min_lrs[g] > scaled {
                    self.min_lrs[g]
                } else {
                    scaled
                };
                if old - new > self.opts.eps {
                    opt.set_lr(g, new);
                }
            }
            self.cooldown_counter = self.opts.cooldown;
            self.num_bad_epochs = 0;
        }
        self.last_lr = (0..opt.num_param_groups()).map(|g| opt.lr(g)).collect();
        Ok(())
    }
}

impl LRScheduler for ReduceLROnPlateau {
    fn step(&mut self, _opt: &mut dyn Optimizer) -> Result<()> {
        Err(Error::value(
            "ReduceLROnPlateau",
            "ReduceLROnPlateau.step needs the metric: call step_with(optimizer, metric)",
        ))
    }
    fn get_last_lr(&self) -> &[f64] {
        &self.last_lr
    }
    fn last_epoch(&self) -> i64 {
        self.last_epoch
    }
}
