//! The [`Optimizer`] trait, parameter groups, per-parameter state and the serialised
//! [`OptimizerState`] shared by every optimizer.

use kiln_core::{DType, Error, Result, Tensor};
use kiln_nn::StateDict;
use std::collections::BTreeMap;

/// An optimizer (PyTorch's `torch.optim.Optimizer`): updates its parameters from their
/// `.grad` on [`Optimizer::step`]. Parameters whose `.grad` is `None` are skipped.
///
/// Per-group hyper-parameters are readable and writable through the trait (what the
/// learning-rate schedulers use) and through each optimizer's typed
/// `param_groups()`/`param_groups_mut()`.
pub trait Optimizer {
    /// Performs one optimization step.
    fn step(&mut self) -> Result<()>;
    /// Resets the gradients of all parameters: `set_to_none` sets `.grad` to `None`
    /// (PyTorch's default), otherwise zeroes it in place.
    fn zero_grad_with(&mut self, set_to_none: bool) -> Result<()> {
        for g in 0..self.num_param_groups() {
            for p in self.group_params(g) {
                if set_to_none {
                    p.set_grad(None)?;
                } else if let Some(grad) = p.grad() {
                    let _g = kiln_core::no_grad();
                    grad.zero_()?;
                }
            }
        }
        Ok(())
    }
    /// `zero_grad(set_to_none=True)`.
    fn zero_grad(&mut self) -> Result<()> {
        self.zero_grad_with(true)
    }
    /// Number of parameter groups.
    fn num_param_groups(&self) -> usize;
    /// The parameters of group `group`.
    fn group_params(&self, group: usize) -> &[Tensor];
    /// Group `group`'s learning rate.
    fn lr(&self, group: usize) -> f64;
    /// Sets group `group`'s learning rate.
    fn set_lr(&mut self, group: usize, lr: f64);
    /// Group `group`'s momentum (`momentum`, or `betas[0]` for the Adam family) if the
    /// optimizer has one (what OneCycleLR's `cycle_momentum` cycles).
    fn momentum(&self, _group: usize) -> Option<f64> {
        None
    }
    /// Sets group `group`'s momentum (or `betas[0]`); an error for optimizers without one.
    fn set_momentum(&mut self, _group: usize, _momentum: f64) -> Result<()> {
        Err(Error::value(
            "set_momentum",
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled",
        ))
    }
    /// All hyper-parameters of group `group`, by PyTorch's names, as text.
    fn group_options(&self, group: usize) -> BTreeMap<String, String>;
    /// The optimizer's state: per-parameter state tensors and the groups' hyper-parameters.
    fn state_dict(&self) -> Result<OptimizerState>;
    /// Restores a state saved by [`Optimizer::state_dict`] from an optimizer of the same kind
    /// over parameters of the same shapes, grouped alike.
    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()>;
}

/// A saved optimizer state, laid out so one safetensors file (tensors + string metadata)
/// holds all of it:
///
/// - `tensors`: PyTorch's flattened `state_dict()["state"]`: `state.<i>.<name>` where `<i>`
///   numbers the parameters across groups in order (as PyTorch packs them) and `<name>` is
///   the state's name (`step`, `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`, `momentum_buffer`,
///   `square_avg`, `grad_avg`, `sum`). `step` is a 0-d float32 tensor, as PyTorch keeps it.
///   A parameter that has not been stepped yet has no entries.
/// - `metadata`: `optimizer` = the optimizer's name (`"Adam"`), `param_groups` = the number
///   of groups, and for each group `g`: `param_groups.<g>.params` = the comma-separated
///   parameter indices, and `param_groups.<g>.<option>` = each hyper-parameter by PyTorch's
///   name (`lr`, `betas` as `"0.9,0.999"`, `amsgrad` as `true`/`false`, ...), numbers
///   printed so they read back exactly.
#[derive(Clone, Debug, Default)]
pub struct OptimizerState {
    pub tensors: StateDict,
    pub metadata: BTreeMap<String, String>,
}

/// One parameter group: parameters with their own hyper-parameters.
#[derive(Clone, Debug)]
pub struct ParamGroup<O> {
    pub params: Vec<Tensor>,
    pub options: O,
}

impl<O> ParamGroup<O> {
    pub fn new(params: Vec<Tensor>, options: O) -> Self {
        ParamGroup { params, options }
    }
}

/// Hyper-parameters of one group of one optimizer kind.
pub trait GroupOptions: Clone {
    /// PyTorch's class name of the optimizer these options are for (`"Adam"`).
    const NAME: &'static str;
    fn lr(&self) -> f64;
    fn set_lr(&mut self, lr: f64);
    fn momentum(&self) -> Option<f64> {
        None
    }
    fn set_momentum(&mut self, _m: f64) -> bool {
        false
    }
    /// Checks the values as PyTorch's constructor does; errors name the optimizer `name`.
    fn validate(&self, name: &str) -> Result<()>;
    /// `(name, value)` for every hyper-parameter.
    fn to_metadata(&self) -> Vec<(&'static str, String)>;
    /// Reads every hyper-parameter back from `get(name)`.
    fn read_metadata(&mut self, get: &dyn Fn(&str) -> Result<String>) -> Result<()>;
}

/// The state of one parameter: its step count (for optimizers that count steps) and named
/// buffers. Empty until the parameter's first step.
#[derive(Clone, Debug, Default)]
pub struct ParamState {
    pub step: Option<f64>,
    pub bufs: BTreeMap<String, Tensor>,
}

impl ParamState {
    pub(crate) fn is_empty(&self) -> bool {
        self.step.is_none() && self.bufs.is_empty()
    }
    pub(crate) fn buf(&self, name: &str) -> Result<&Tensor> {
        self.bufs.get(name).ok_or_else(|| {
            Error::value(
                "optimizer.step",
                format!("parameter state has no '{name}' (was the state loaded from another configuration?)"),
            )
        })
    }
}

/// Groups and state, the part every optimizer shares.
#[derive(Clone, Debug)]
pub(crate) struct Core<O> {
    /// PyTorch's class name, for messages and the saved metadata.
    pub name: &'static str,
    pub groups: Vec<ParamGroup<O>>,
    pub state: Vec<Vec<ParamState>>,
    pub defaults: O,
}

pub(crate) fn parse_f64(key: &str, v: &str) -> Result<f64> {
    v.trim().parse::<f64>().map_err(|_| {
        Error::value(
            "load_state_dict",
            format!("param group entry '{key}' = '{v}' is not a number"),
        )
    })
}

pub(crate) fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim() {
        "true" | "True" => Ok(true),
        "false" | "False" => Ok(false),
        _ => Err(Error::value(
            "load_state_dict",
            format!("param group entry '{key}' = '{v}' is not true/false"),
        )),
    }
}

impl<O: GroupOptions> Core<O> {
    pub fn new(name: &'static str, groups: Vec<ParamGroup<O>>, defaults: O) -> Result<Self> {
        defaults.validate(name)?;
        if groups.is_empty() {
            return Err(Error::value(name, "optimizer got an empty parameter list"));
        }
        let mut core = Core {
            name,
            groups: Vec::new(),
            state: Vec::new(),
            defaults,
        };
        for g in groups {
            core.add_param_group(g)?;
        }
        Ok(core)
    }

    /// One group of `params` with `options` (what each optimizer's `new` builds): like
    /// PyTorch, an empty list is an error, checked after the options.
    pub fn from_params(name: &'static str, params: Vec<Tensor>, options: O) -> Result<Self> {
        options.validate(name)?;
        if params.is_empty() {
            return Err(Error::value(name, "optimizer got an empty parameter list"));
        }
        Self::new(
            name,
            vec![ParamGroup::new(params, options.clone())],
            options,
        )
    }

    pub fn add_param_group(&mut self, mut group: ParamGroup<O>) -> Result<()> {
        group.options.validate(self.name)?;
        for p in &group.params {
            if !p.is_leaf() {
                return Err(Error::value(self.name, "can't optimize a non-leaf Tensor"));
            }
        }
        // A tensor listed twice in one group is kept once, with PyTorch's warning (PyTorch
        // keeps both entries and so updates the tensor twice per step).
        let listed = group.params.len();
        let mut unique: Vec<Tensor> = Vec::with_capacity(listed);
        for p in group.params.drain(..) {
            if !unique.iter().any(|q| q.is_same(&p)) {
                unique.push(p);
            }
        }
        group.params = unique;
        if group.params.len() != listed {
            kiln_core::warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
            );
        }
        for p in &group.params {
            if self
                .groups
                .iter()
                .any(|g| g.params.iter().any(|q| q.is_same(p)))
            {
                return Err(Error::value(
                    self.name,
                    "some parameters appear in more than one parameter group",
                ));
            }
        }
        self.state
            .push(vec![ParamState::default(); group.params.len()]);
        self.groups.push(group);
        Ok(())
    }

    /// Fails when a parameter was replaced by a converted copy (`Module::to_dtype` /
    /// `Module::to_device`) after the optimizer was built: stepping would update a tensor
    /// the model no longer uses.
    pub fn check_not_superseded(&self) -> Result<()> {
        let mut index = 0usize;
        for group in &self.groups {
            for p in &group.params {
                if p.is_superseded() {
                    return Err(Error::value(
                        format!("{}.step", self.name),
                        format!(
                            "parameter {index} (shape {:?}, {}, {}) was converted by Module::to_dtype or Module::to_device after the optimizer was built, so the model no longer uses the tensor this optimizer holds; build the optimizer after converting the model (its state carries over with load_state_dict(old.state_dict()))",
                            p.shape(),
                            p.dtype(),
                            p.device()
                        ),
                    ));
                }
                index += 1;
            }
        }
        Ok(())
    }

    pub fn group_options(&self, g: usize) -> BTreeMap<String, String> {
        self.groups[g]
            .options
            .to_metadata()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    pub fn state_dict(&self) -> Result<OptimizerState> {
        let mut tensors = StateDict::new();
        let mut metadata = BTreeMap::new();
        metadata.insert("optimizer".to_string(), self.name.to_string());
        metadata.insert("param_groups".to_string(), self.groups.len().to_string());
        let mut index = 0usize;
        for (g, group) in self.groups.iter().enumerate() {
            let ids: Vec<String> = (index..index + group.params.len())
                .map(|i| i.to_string())
                .collect();
            metadata.insert(format!("param_groups.{g}.params"), ids.join(","));
            for (k, v) in group.options.to_metadata() {
                metadata.insert(format!("param_groups.{g}.{k}"), v);
            }
            for st in &self.state[g] {
                if let Some(step) = st.step {
                    tensors.insert(
                        format!("state.{index}.step"),
                        Tensor::scalar_tensor(step, DType::F32)?,
                    );
                }
                for (name, t) in &st.bufs {
                    tensors.insert(format!("state.{index}.{name}"), t.detach().clone_tensor()?);
                }
                index += 1;
            }
        }
        Ok(OptimizerState { tensors, metadata })
    }

    pub fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        let op = "load_state_dict";
        let meta = &state.metadata;
        let get = |k: &str| -> Result<String> {
            meta.get(k).cloned().ok_or_else(|| {
                Error::value(
                    op,
                    format!("loaded state dict has no '{k}' entry in its metadata"),
                )
            })
        };
        let name = get("optimizer")?;
        if name != self.name {
            return Err(Error::value(
                op,
                format!(
                    "loaded state dict is for a {name} optimizer, this one is {}",
                    self.name
                ),
            ));
        }
        let ngroups: usize = get("param_groups")?
            .parse()
            .map_err(|_| Error::value(op, "metadata entry 'param_groups' is not a group count"))?;
        if ngroups != self.groups.len() {
            return Err(Error::value(
                op,
                "loaded state dict has a different number of parameter groups",
            ));
        }
        // Check everything before changing anything.
        let mut new_options = Vec::with_capacity(ngroups);
        let mut new_state = Vec::with_capacity(ngroups);
        let mut used = std::collections::BTreeSet::new();
        let mut index = 0usize;
        for (g, group) in self.groups.iter().enumerate() {
            let ids = get(&format!("param_groups.{g}.params"))?;
            let count = if ids.is_empty() {
                0
            } else {
                ids.split(',').count()
            };
            if count != group.params.len() {
                return Err(Error::value(
                    op,
                    "loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
                ));
            }
            let mut opts = group.options.clone();
            let prefix = format!("param_groups.{g}.");
            opts.read_metadata(&|k| get(&format!("{prefix}{k}")))?;
            opts.validate(self.name)?;
            new_options.push(opts);
            let mut states = Vec::with_capacity(group.params.len());
            for p in &group.params {
                let mut st = ParamState::default();
                let pre = format!("state.{index}.");
                for (k, t) in state.tensors.iter() {
                    let Some(name) = k.strip_prefix(&pre) else {
                        continue;
                    };
                    if name.contains('.') {
                        continue;
                    }
                    used.insert(k.to_string());
                    if name == "step" {
                        if t.numel() != 1 {
                            return Err(Error::shape(
                                op,
                                format!(
                                    "{k}: expected a single step count, got shape {:?}",
                                    t.shape()
                                ),
                            ));
                        }
                        st.step = Some(t.to_dtype(DType::F64)?.item::<f64>()?);
                        continue;
                    }
                    if t.shape() != p.shape() {
                        return Err(Error::shape(
                            op,
                            format!(
                                "size mismatch for {k}: the state has shape {:?}, the parameter has shape {:?}",
                                t.shape(),
                                p.shape()
                            ),
                        ));
                    }
                    // Like PyTorch: state takes the parameter's dtype and device.
                    let dst = crate::zeros_like_param(p)?;
                    {
                        let _g = kiln_core::no_grad();
                        dst.copy_(&t.to_device(p.device())?.to_dtype(p.dtype())?)?;
                    }
                    st.bufs.insert(name.to_string(), dst);
                }
                states.push(st);
                index += 1;
            }
            new_state.push(states);
        }
        if let Some(k) = state.tensors.keys().find(|k| !used.contains(*k)) {
            return Err(Error::value(
                op,
                format!("unexpected key in loaded state dict: '{k}' (it names no parameter of this optimizer)"),
            ));
        }
        for (g, o) in new_options.into_iter().enumerate() {
            self.groups[g].options = o;
        }
        self.state = new_state;
        Ok(())
    }
}

/// Implements [`Optimizer`]'s group accessors and state_dict plumbing over a `core` field,
/// plus the typed group accessors.
macro_rules! common_optimizer_impl {
    ($ty:ty, $opts:ty) => {
        impl $ty {
            /// The parameter groups, with their typed options.
            pub fn param_groups(&self) -> &[$crate::ParamGroup<$opts>] {
                &self.core.groups
            }
            /// The parameter groups, writable (e.g. `groups[0].options.lr = 0.1`).
            pub fn param_groups_mut(&mut self) -> &mut [$crate::ParamGroup<$opts>] {
                &mut self.core.groups
            }
            /// Adds a group (PyTorch's `add_param_group`); its parameters must not be in
            /// another group.
            pub fn add_param_group(
                &mut self,
                group: $crate::ParamGroup<$opts>,
            ) -> kiln_core::Result<()> {
                self.core.add_param_group(group)
            }
            /// The defaults the optimizer was built with.
            pub fn defaults(&self) -> &$opts {
                &self.core.defaults
            }
            /// The state of parameter `index` of group `group`.
            pub fn param_state(&self, group: usize, index: usize) -> Option<&$crate::ParamState> {
                self.core.state.get(group)?.get(index)
            }
        }
    };
}
pub(crate) use common_optimizer_impl;

macro_rules! trait_common {
    () => {
        fn num_param_groups(&self) -> usize {
            self.core.groups.len()
        }
        fn group_params(&self, group: usize) -> &[kiln_core::Tensor] {
            &self.core.groups[group].params
        }
        fn lr(&self, group: usize) -> f64 {
            $crate::GroupOptions::lr(&self.core.groups[group].options)
        }
        fn set_lr(&mut self, group: usize, lr: f64) {
            $crate::GroupOptions::set_lr(&mut self.core.groups[group].options, lr)
        }
        fn momentum(&self, group: usize) -> Option<f64> {
            $crate::GroupOptions::momentum(&self.core.groups[group].options)
        }
        fn set_momentum(&mut self, group: usize, m: f64) -> kiln_core::Result<()> {
            if $crate::GroupOptions::set_momentum(&mut self.core.groups[group].options, m) {
                Ok(())
            } else {
                Err(kiln_core::Error::value(
                    "set_momentum",
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled",
                ))
            }
        }
        fn group_options(&self, group: usize) -> std::collections::BTreeMap<String, String> {
            self.core.group_options(group)
        }
        fn state_dict(&self) -> kiln_core::Result<$crate::OptimizerState> {
            self.core.state_dict()
        }
        fn load_state_dict(&mut self, state: &$crate::OptimizerState) -> kiln_core::Result<()> {
            self.core.load_state_dict(state)
        }
    };
}
pub(crate) use trait_common;
