//! [`GradScaler`]: PyTorch's `torch.amp.GradScaler`, dynamic loss scaling for training in
//! float16.

use crate::Optimizer;
use kiln_core::{DType, Device, Error, Result, Tensor};
use std::collections::BTreeMap;

/// Where one optimizer is in the current iteration (PyTorch's `OptState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Ready,
    Unscaled,
    Stepped,
}

/// One optimizer's record for the current iteration: its stage and, once unscaled, one
/// `found_inf` (0-d float32, 1.0 if some gradient held an inf or NaN) per device its
/// gradients are on.
#[derive(Debug)]
struct OptimizerRecord {
    /// The optimizer's identity: its first parameter (see [`GradScaler`]).
    key: Option<Tensor>,
    stage: Stage,
    found_inf_per_device: Vec<(Device, Tensor)>,
}

/// The state PyTorch's `GradScaler.state_dict()` returns, by its keys: `scale`,
/// `growth_factor`, `backoff_factor`, `growth_interval` and `_growth_tracker` (the last two
/// integers, exact in an `f64`). Empty for a disabled scaler.
pub type GradScalerState = BTreeMap<String, f64>;

/// Dynamic loss scaling for mixed precision (PyTorch's `torch.amp.GradScaler`): multiplies
/// the loss by a scale factor so small float16 gradients do not flush to zero, divides the
/// gradients by it before the optimizer steps, skips steps whose gradients hold an inf or
/// NaN, and adjusts the scale: times `backoff_factor` after a skipped step, times
/// `growth_factor` after `growth_interval` steps in a row without one.
///
/// ```
/// use kiln_core::{Device, Tensor};
/// use kiln_optim::{GradScaler, Optimizer, SGD, SGDOptions};
/// let w = Tensor::from([1.0f32, -2.0]).requires_grad_(true)?;
/// let mut opt = SGD::new(vec![w.clone()], SGDOptions { lr: 0.1, ..Default::default() })?;
/// let mut scaler = GradScaler::new(Device::Cpu);
/// let loss = w.mul(&w)?.sum()?;
/// scaler.scale(&loss)?.backward()?;     // scaler.scale(loss).backward()
/// assert!(scaler.step(&mut opt)?);      // scaler.step(optimizer): unscales, then steps
/// scaler.update()?;                     // scaler.update()
/// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, [2.0, -4.0]); // unscaled
/// assert_eq!(scaler.get_scale()?, 65536.0);
/// # Ok::<(), kiln_core::Error>(())
/// ```
///
/// Per iteration, each optimizer may be unscaled once ([`GradScaler::unscale_`], e.g. to
/// clip gradients) and stepped once; [`GradScaler::update`] ends the iteration. Optimizers
/// are told apart by identity, as PyTorch's `id(optimizer)` does: here by their first
/// parameter (the same tensor, [`Tensor::is_same`]), which stays put when the optimizer value
/// is moved, so two optimizers whose first parameter is the same tensor count as one.
///
/// Gradients are unscaled by `_amp_foreach_non_finite_check_and_unscale_`, one call per
/// (device, dtype) group, as PyTorch groups them; `found_inf` is kept per device and summed
/// on the scale's device by `update`, which calls `_amp_update_scale_`.
///
/// A disabled scaler ([`GradScalerBuilder::enabled`]) passes everything through: `scale`
/// returns its input, `step` just steps, `unscale_` and `update` do nothing.
#[derive(Debug)]
pub struct GradScaler {
    enabled: bool,
    init_scale: f64,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: i64,
    init_growth_tracker: i64,
    /// 0-d float32 and int32, on the device of the first tensor scaled (created then, as
    /// PyTorch does).
    scale: Option<Tensor>,
    growth_tracker: Option<Tensor>,
    optimizers: Vec<OptimizerRecord>,
}

/// Options of a [`GradScaler`], PyTorch's constructor arguments with its defaults.
#[derive(Clone, Debug)]
pub struct GradScalerBuilder {
    device: Device,
    init_scale: f64,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: i64,
    enabled: bool,
}

impl GradScalerBuilder {
    /// The scale before the first update (default 2^16).
    pub fn init_scale(mut self, v: f64) -> Self {
        self.init_scale = v;
        self
    }
    /// The factor the scale grows by after `growth_interval` unskipped steps (default 2.0;
    /// must be > 1).
    pub fn growth_factor(mut self, v: f64) -> Self {
        self.growth_factor = v;
        self
    }
    /// The factor the scale shrinks by after a skipped step (default 0.5; must be < 1).
    pub fn backoff_factor(mut self, v: f64) -> Self {
        self.backoff_factor = v;
        self
    }
    /// How many unskipped steps in a row grow the scale (default 2000).
    pub fn growth_interval(mut self, v: i64) -> Self {
        self.growth_interval = v;
        self
    }
    /// Whether the scaler scales at all (default true).
    pub fn enabled(mut self, v: bool) -> Self {
        self.enabled = v;
        self
    }
    /// The scaler. As PyTorch: a CUDA scaler on a machine without CUDA is disabled with a
    /// warning; an enabled one needs `growth_factor > 1` and `backoff_factor < 1`.
    pub fn build(self) -> Result<GradScaler> {
        let mut enabled = self.enabled;
        if enabled && self.device.is_cuda() && self.device.ensure_available().is_err() {
            kiln_core::warn("GradScaler is enabled, but CUDA is not available.  Disabling.");
            enabled = false;
        }
        if enabled {
            // PyTorch's tests, as written (a NaN passes both).
            if self.growth_factor <= 1.0 {
                return Err(Error::value(
                    "GradScaler",
                    "The growth factor must be > 1.0.",
                ));
            }
            if self.backoff_factor >= 1.0 {
                return Err(Error::value(
                    "GradScaler",
                    "The backoff factor must be < 1.0.",
                ));
            }
        }
        Ok(GradScaler {
            enabled,
            init_scale: self.init_scale,
            growth_factor: self.growth_factor,
            backoff_factor: self.backoff_factor,
            growth_interval: self.growth_interval,
            init_growth_tracker: 0,
            scale: None,
            growth_tracker: None,
            optimizers: Vec::new(),
        })
    }
}

/// The message of PyTorch's `_check_scale_growth_tracker`.
fn no_scale_yet(op: &str, what: &str) -> Error {
    Error::value(
        format!("GradScaler.{op}"),
        format!("Attempted {op} but {what} is None.  This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."),
    )
}

/// The identity [`GradScaler`] keys an optimizer by: its first parameter.
fn optimizer_key(optimizer: &dyn Optimizer) -> Option<Tensor> {
    (0..optimizer.num_param_groups())
        .flat_map(|g| optimizer.group_params(g).first())
        .next()
        .cloned()
}

fn same_key(a: &Option<Tensor>, b: &Option<Tensor>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.is_same(b),
        (None, None) => true,
        _ => false,
    }
}

impl GradScaler {
    /// A scaler with PyTorch's defaults (init_scale 2^16, growth_factor 2, backoff_factor
    /// 0.5, growth_interval 2000, enabled) for tensors on `device`; a CUDA scaler on a
    /// machine without CUDA is disabled with a warning, as PyTorch's is.
    pub fn new(device: Device) -> GradScaler {
        GradScaler::builder(device)
            .build()
            .expect("the default growth and backoff factors are valid")
    }

    /// A builder over PyTorch's constructor arguments, starting from its defaults.
    pub fn builder(device: Device) -> GradScalerBuilder {
        GradScalerBuilder {
            device,
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }

    /// The scale and growth tracker tensors, or PyTorch's error naming `op`.
    fn scale_tensors(&self, op: &str) -> Result<(Tensor, Tensor)> {
        let scale = self
            .scale
            .clone()
            .ok_or_else(|| no_scale_yet(op, "_scale"))?;
        let tracker = self
            .growth_tracker
            .clone()
            .ok_or_else(|| no_scale_yet(op, "_growth_tracker"))?;
        Ok((scale, tracker))
    }

    /// `outputs * scale` (differentiable; the scale is created on `outputs`' device on first
    /// use). A disabled scaler returns `outputs` itself.
    pub fn scale(&mut self, outputs: &Tensor) -> Result<Tensor> {
        if !self.enabled {
            return Ok(outputs.clone());
        }
        let scale = match &self.scale {
            Some(s) => s.clone(),
            None => {
                let device = outputs.device();
                let s = Tensor::full_on((), self.init_scale, DType::F32, device)?;
                self.growth_tracker = Some(Tensor::full_on(
                    (),
                    self.init_growth_tracker,
                    DType::I32,
                    device,
                )?);
                self.scale = Some(s.clone());
                s
            }
        };
        // A 0-d float32 factor: a float16 output stays float16, as in PyTorch.
        outputs.mul(&scale.to_device(outputs.device())?)
    }

    /// [`GradScaler::scale`] of each tensor (PyTorch's `scale` of a list).
    pub fn scale_all(&mut self, outputs: &[Tensor]) -> Result<Vec<Tensor>> {
        outputs.iter().map(|t| self.scale(t)).collect()
    }

    /// The index of `optimizer`'s record, created in the `Ready` stage if new.
    fn record(&mut self, optimizer: &dyn Optimizer) -> usize {
        let key = optimizer_key(optimizer);
        match self.optimizers.iter().position(|r| same_key(&r.key, &key)) {
            Some(i) => i,
            None => {
                self.optimizers.push(OptimizerRecord {
                    key,
                    stage: Stage::Ready,
                    found_inf_per_device: Vec::new(),
                });
                self.optimizers.len() - 1
            }
        }
    }

    /// Divides `optimizer`'s gradients by the scale in place (PyTorch's `unscale_`), noting
    /// whether any holds an inf or NaN; once per optimizer per iteration, before its
    /// [`GradScaler::step`] (which otherwise unscales itself). Call it to work on the true
    /// gradients, e.g. to clip them. Float16 gradients are an error, as in PyTorch (the
    /// parameters a scaler serves are float32; the model's float16 copies are not).
    pub fn unscale_(&mut self, optimizer: &dyn Optimizer) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let (scale, _) = self.scale_tensors("unscale_")?;
        let i = self.record(optimizer);
        match self.optimizers[i].stage {
            Stage::Unscaled => {
                return Err(Error::value(
                    "GradScaler.unscale_",
                    "unscale_() has already been called on this optimizer since the last update().",
                ))
            }
            Stage::Stepped => {
                return Err(Error::value(
                    "GradScaler.unscale_",
                    "unscale_() is being called after step().",
                ))
            }
            Stage::Ready => {}
        }
        let _g = kiln_core::no_grad();
        // The reciprocal in float64, as PyTorch does (float32 division may be imprecise).
        let inv_scale = scale
            .to_dtype(DType::F64)?
            .reciprocal()?
            .to_dtype(DType::F32)?;
        let found_inf = Tensor::full_on((), 0.0, DType::F32, scale.device())?;
        let found = unscale_grads(optimizer, &inv_scale, &found_inf)?;
        let record = &mut self.optimizers[i];
        record.found_inf_per_device = found;
        record.stage = Stage::Unscaled;
        Ok(())
    }

    /// Steps `optimizer` unless its gradients held an inf or NaN (PyTorch's `step`),
    /// unscaling them first unless [`GradScaler::unscale_`] already did. Returns whether the
    /// optimizer stepped. Once per optimizer per iteration.
    pub fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<bool> {
        if !self.enabled {
            optimizer.step()?;
            return Ok(true);
        }
        self.scale_tensors("step")?;
        let i = self.record(optimizer);
        match self.optimizers[i].stage {
            Stage::Stepped => {
                return Err(Error::value(
                    "GradScaler.step",
                    "step() has already been called since the last update().",
                ))
            }
            Stage::Ready => self.unscale_(optimizer)?,
            Stage::Unscaled => {}
        }
        let record = &self.optimizers[i];
        if record.found_inf_per_device.is_empty() {
            return Err(Error::value(
                "GradScaler.step",
                "No inf checks were recorded for this optimizer.",
            ));
        }
        let mut infs = 0.0;
        for (_, found_inf) in &record.found_inf_per_device {
            infs += found_inf.item::<f32>()?;
        }
        let stepped = infs == 0.0;
        if stepped {
            optimizer.step()?;
        }
        self.optimizers[i].stage = Stage::Stepped;
        Ok(stepped)
    }

    /// Ends the iteration (PyTorch's `update()`): the scale backs off if any optimizer's
    /// gradients held an inf or NaN, and grows after `growth_interval` clean iterations in a
    /// row; every optimizer may then be unscaled and stepped again.
    pub fn update(&mut self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let (scale, tracker) = self.scale_tensors("update")?;
        let found_infs: Vec<Tensor> = self
            .optimizers
            .iter()
            .flat_map(|r| r.found_inf_per_device.iter().map(|(_, t)| t))
            .map(|t| t.to_device(scale.device()))
            .collect::<Result<_>>()?;
        let Some((first, rest)) = found_infs.split_first() else {
            return Err(Error::value(
                "GradScaler.update",
                "No inf checks were recorded prior to update.",
            ));
        };
        let _g = kiln_core::no_grad();
        let mut combined = first.clone();
        for t in rest {
            combined = combined.add(t)?;
        }
        kiln_core::_amp_update_scale_(
            &scale,
            &tracker,
            &combined,
            self.growth_factor,
            self.backoff_factor,
            self.growth_interval,
        )?;
        self.optimizers.clear();
        Ok(())
    }

    /// Ends the iteration with the scale set to `new_scale` (PyTorch's `update(new_scale)`
    /// with a float); the growth tracker is left as it is.
    pub fn update_with(&mut self, new_scale: f64) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let (scale, _) = self.scale_tensors("update")?;
        let _g = kiln_core::no_grad();
        scale.fill_(new_scale)?;
        self.optimizers.clear();
        Ok(())
    }

    /// [`GradScaler::update_with`] a 1-element tensor on the scale's device that does not
    /// require grad (PyTorch's `update(new_scale)` with a tensor); its value is copied.
    pub fn update_with_tensor(&mut self, new_scale: &Tensor) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let (scale, _) = self.scale_tensors("update")?;
        if new_scale.device() != scale.device()
            || new_scale.numel() != 1
            || new_scale.requires_grad()
        {
            return Err(Error::value(
                "GradScaler.update",
                "new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with requires_grad=False.",
            ));
        }
        let _g = kiln_core::no_grad();
        scale.copy_(&new_scale.reshape(())?)?;
        self.optimizers.clear();
        Ok(())
    }

    /// The current scale (`init_scale` before the first [`GradScaler::scale`]), or 1.0 when
    /// disabled. Reads the scale from its device.
    pub fn get_scale(&self) -> Result<f64> {
        if !self.enabled {
            return Ok(1.0);
        }
        match &self.scale {
            None => Ok(self.init_scale),
            Some(s) => Ok(s.item::<f32>()? as f64),
        }
    }

    /// The number of unskipped steps in a row since the scale last changed (PyTorch's
    /// `_get_growth_tracker`), 0 when disabled.
    pub fn get_growth_tracker(&self) -> Result<i64> {
        if !self.enabled {
            return Ok(0);
        }
        match &self.growth_tracker {
            None => Ok(self.init_growth_tracker),
            Some(t) => Ok(t.item::<i32>()? as i64),
        }
    }

    /// The factor the scale grows by.
    pub fn get_growth_factor(&self) -> f64 {
        self.growth_factor
    }

    /// Sets the factor the scale grows by.
    pub fn set_growth_factor(&mut self, v: f64) {
        self.growth_factor = v;
    }

    /// The factor the scale shrinks by.
    pub fn get_backoff_factor(&self) -> f64 {
        self.backoff_factor
    }

    /// Sets the factor the scale shrinks by.
    pub fn set_backoff_factor(&mut self, v: f64) {
        self.backoff_factor = v;
    }

    /// How many unskipped steps in a row grow the scale.
    pub fn get_growth_interval(&self) -> i64 {
        self.growth_interval
    }

    /// Sets how many unskipped steps in a row grow the scale.
    pub fn set_growth_interval(&mut self, v: i64) {
        self.growth_interval = v;
    }

    /// Whether the scaler scales (false: it passes everything through).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The scaler's state by PyTorch's keys (`scale`, `growth_factor`, `backoff_factor`,
    /// `growth_interval`, `_growth_tracker`); empty when disabled. Call it after
    /// [`GradScaler::update`].
    pub fn state_dict(&self) -> Result<GradScalerState> {
        if !self.enabled {
            return Ok(GradScalerState::new());
        }
        Ok(BTreeMap::from([
            ("scale".to_string(), self.get_scale()?),
            ("growth_factor".to_string(), self.growth_factor),
            ("backoff_factor".to_string(), self.backoff_factor),
            ("growth_interval".to_string(), self.growth_interval as f64),
            (
                "_growth_tracker".to_string(),
                self.get_growth_tracker()? as f64,
            ),
        ]))
    }

    /// Restores a state from [`GradScaler::state_dict`] (a no-op when disabled). An empty
    /// state (from a disabled scaler) or one missing a key is an error.
    pub fn load_state_dict(&mut self, state: &GradScalerState) -> Result<()> {
        let op = "GradScaler.load_state_dict";
        if !self.enabled {
            return Ok(());
        }
        if state.is_empty() {
            return Err(Error::value(
                op,
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.",
            ));
        }
        let get = |k: &str| {
            state
                .get(k)
                .copied()
                .ok_or_else(|| Error::value(op, format!("the state dict has no '{k}' entry")))
        };
        let integer = |k: &str| -> Result<i64> {
            let v = get(k)?;
            if v.fract() != 0.0 || !v.is_finite() {
                return Err(Error::value(
                    op,
                    format!("'{k}' must be an integer, got {v}"),
                ));
            }
            Ok(v as i64)
        };
        // Read everything before changing anything.
        let (scale, growth_factor, backoff_factor) =
            (get("scale")?, get("growth_factor")?, get("backoff_factor")?);
        let (growth_interval, tracker) = (integer("growth_interval")?, integer("_growth_tracker")?);
        let _g = kiln_core::no_grad();
        if let Some(s) = &self.scale {
            s.fill_(scale)?;
        }
        if let Some(t) = &self.growth_tracker {
            t.fill_(tracker)?;
        }
        self.init_scale = scale;
        self.growth_factor = growth_factor;
        self.backoff_factor = backoff_factor;
        self.growth_interval = growth_interval;
        self.init_growth_tracker = tracker;
        Ok(())
    }
}

/// PyTorch's `_unscale_grads_`: `optimizer`'s gradients grouped by device and dtype (in the
/// order first seen), each group unscaled by one fused call with that device's copies of
/// `inv_scale` and `found_inf`. Returns each device's `found_inf`.
fn unscale_grads(
    optimizer: &dyn Optimizer,
    inv_scale: &Tensor,
    found_inf: &Tensor,
) -> Result<Vec<(Device, Tensor)>> {
    let mut groups: Vec<((Device, DType), Vec<Tensor>)> = Vec::new();
    for g in 0..optimizer.num_param_groups() {
        for p in optimizer.group_params(g) {
            let Some(grad) = p.grad() else {
                continue;
            };
            if grad.dtype() == DType::F16 {
                return Err(Error::value(
                    "GradScaler.unscale_",
                    "Attempting to unscale FP16 gradients.",
                ));
            }
            let key = (grad.device(), grad.dtype());
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, list)) => list.push(grad),
                None => groups.push((key, vec![grad])),
            }
        }
    }
    // Per device, its own copies (PyTorch's `_MultiDeviceReplicator`).
    let mut per_device: Vec<(Device, Tensor, Tensor)> = Vec::new();
    for ((device, _), grads) in &groups {
        let i = match per_device.iter().position(|(d, _, _)| d == device) {
            Some(i) => i,
            None => {
                per_device.push((
                    *device,
                    inv_scale.to_device(*device)?.clone_tensor()?,
                    found_inf.to_device(*device)?.clone_tensor()?,
                ));
                per_device.len() - 1
            }
        };
        let (_, inv, found) = &per_device[i];
        kiln_core::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv)?;
    }
    Ok(per_device
        .into_iter()
        .map(|(device, _, found)| (device, found))
        .collect())
}
