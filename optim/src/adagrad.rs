//! Adagrad (PyTorch's `torch.optim.Adagrad`): the fused kernel (`kiln::_fused_adagrad_`)
//! where the layouts allow, the op-by-op update otherwise.

use crate::optimizer::{
    common_optimizer_impl, parse_bool, parse_f64, trait_common, Core, GroupOptions,
};
use crate::{fmt_f64, fusable, zeros_like_param, Optimizer, ParamGroup, ParamState};
use kiln_core::{no_grad, Error, Result, Tensor};

/// Adagrad's hyper-parameters, PyTorch's names and defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct AdagradOptions {
    pub lr: f64,
    pub lr_decay: f64,
    pub weight_decay: f64,
    pub initial_accumulator_value: f64,
    pub eps: f64,
    pub maximize: bool,
    /// Use the fused kernel (`kiln::_fused_adagrad_`) where the layouts allow; `false`
    /// forces the op-by-op update.
    pub fused: bool,
}

impl Default for AdagradOptions {
    fn default() -> Self {
        AdagradOptions {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
            maximize: false,
            fused: true,
        }
    }
}

impl GroupOptions for AdagradOptions {
    const NAME: &'static str = "Adagrad";
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn validate(&self, name: &str) -> Result<()> {
        let checks = [
            (self.lr, "Invalid learning rate"),
            (self.lr_decay, "Invalid lr_decay value"),
            (self.weight_decay, "Invalid weight_decay value"),
            (
                self.initial_accumulator_value,
                "Invalid initial_accumulator_value value",
            ),
            (self.eps, "Invalid epsilon value"),
        ];
        for (v, msg) in checks {
            if crate::negative_or_nan(v) {
                return Err(Error::value(name, format!("{msg}: {v}")));
            }
        }
        Ok(())
    }
    fn to_metadata(&self) -> Vec<(&'static str, String)> {
        vec![
            ("lr", fmt_f64(self.lr)),
            ("lr_decay", fmt_f64(self.lr_decay)),
            ("weight_decay", fmt_f64(self.weight_decay)),
            (
                "initial_accumulator_value",
                fmt_f64(self.initial_accumulator_value),
            ),
            ("eps", fmt_f64(self.eps)),
            ("maximize", self.maximize.to_string()),
            ("fused", self.fused.to_string()),
        ]
    }
    fn read_metadata(&mut self, get: &dyn Fn(&str) -> Result<String>) -> Result<()> {
        self.lr = parse_f64("lr", &get("lr")?)?;
        self.lr_decay = parse_f64("lr_decay", &get("lr_decay")?)?;
        self.weight_decay = parse_f64("weight_decay", &get("weight_decay")?)?;
        self.initial_accumulator_value = parse_f64(
            "initial_accumulator_value",
            &get("initial_accumulator_value")?,
        )?;
        self.eps = parse_f64("eps", &get("eps")?)?;
        self.maximize = parse_bool("maximize", &get("maximize")?)?;
        self.fused = parse_bool("fused", &get("fused")?)?;
        Ok(())
    }
}

/// Adagrad (PyTorch's `torch.optim.Adagrad`). Like PyTorch, the state (`step` = 0 and
/// `sum` = `initial_accumulator_value`) is created for every parameter at construction.
#[derive(Clone, Debug)]
pub struct Adagrad {
    core: Core<AdagradOptions>,
}

fn init_state(p: &Tensor, o: &AdagradOptions) -> Result<ParamState> {
    let mut st = ParamState {
        step: Some(0.0),
        ..Default::default()
    };
    let sum = zeros_like_param(p)?;
    {
        let _g = no_grad();
        sum.fill_(o.initial_accumulator_value)?;
    }
    st.bufs.insert("sum".into(), sum);
    Ok(st)
}

impl Adagrad {
    /// One group of `params` with `options`.
    pub fn new(params: Vec<Tensor>, options: AdagradOptions) -> Result<Adagrad> {
        let core = Core::from_params(<AdagradOptions as GroupOptions>::NAME, params, options)?;
        Self::init_states(core)
    }
    /// Several groups, each with its own options.
    pub fn with_groups(
        groups: Vec<ParamGroup<AdagradOptions>>,
        defaults: AdagradOptions,
    ) -> Result<Adagrad> {
        let core = Core::new(<AdagradOptions as GroupOptions>::NAME, groups, defaults)?;
        Self::init_states(core)
    }
    /// PyTorch's Adagrad makes each parameter's state (`step`, `sum`) at construction.
    fn init_states(mut core: Core<AdagradOptions>) -> Result<Adagrad> {
        for (group, states) in core.groups.iter().zip(core.state.iter_mut()) {
            for (p, st) in group.params.iter().zip(states.iter_mut()) {
                *st = init_state(p, &group.options)?;
            }
        }
        Ok(Adagrad { core })
    }
}

common_optimizer_impl!(Adagrad, AdagradOptions);

impl Optimizer for Adagrad {
    trait_common!();

    fn step(&mut self) -> Result<()> {
        self.core.check_not_superseded()?;
        let _g = no_grad();
        for (group, states) in self.core.groups.iter().zip(self.core.state.iter_mut()) {
            let o = &group.options;
            for (p, st) in group.params.iter().zip(states.iter_mut()) {
                let Some(grad) = p.grad() else { continue };
                if st.is_empty() {
                    // A group added after construction.
                    *st = init_state(p, o)?;
                }
                let step = st.step.unwrap_or(0.0) + 1.0;
                st.step = Some(step);
                let sum = st.buf("sum")?;
                if o.fused && fusable(p, &grad, &[sum]) {
                    kiln_core::_fused_adagrad_(
                        std::slice::from_ref(p),
                        std::slice::from_ref(&grad),
                        std::slice::from_ref(sum),
                        &[step],
                        o.lr,
                        o.lr_decay,
                        o.weight_decay,
                        o.eps,
                        o.maximize,
                    )?;
                    continue;
                }
                // PyTorch's _single_tensor_adagrad.
                let mut g = if o.maximize {
                    grad.neg()?
                } else {
                    grad.clone()
                };
                if o.weight_decay != 0.0 {
                    g = g.add_with(p, o.weight_decay)?;
                }
                let clr = o.lr / (1.0 + (step - 1.0) * o.lr_decay);
                sum.copy_(&sum.addcmul(&g, &g)?)?;
                let std = sum.sqrt()?.add_scalar(o.eps)?;
                p.copy_(&p.addcdiv_with(&g, &std, -clr)?)?;
            }
        }
        Ok(())
    }
}
