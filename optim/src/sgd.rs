//! SGD with momentum, dampening, Nesterov momentum, weight decay and `maximize`
//! (PyTorch's `torch.optim.SGD`).

use crate::optimizer::{
    common_optimizer_impl, parse_bool, parse_f64, trait_common, Core, GroupOptions,
};
use crate::{fmt_f64, fusable, zeros_like_param, Optimizer, ParamGroup};
use kiln_core::{no_grad, Error, Result, Tensor};

/// SGD's hyper-parameters, PyTorch's names and defaults (`lr=1e-3`).
#[derive(Clone, Debug, PartialEq)]
pub struct SGDOptions {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
    /// Use the fused kernel (`kiln::_fused_sgd_`) where the layouts allow; `false` forces
    /// the op-by-op update.
    pub fused: bool,
}

impl Default for SGDOptions {
    fn default() -> Self {
        SGDOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
            fused: true,
        }
    }
}

impl GroupOptions for SGDOptions {
    const NAME: &'static str = "SGD";
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.momentum)
    }
    fn set_momentum(&mut self, m: f64) -> bool {
        self.momentum = m;
        true
    }
    fn validate(&self, name: &str) -> Result<()> {
        if self.lr < 0.0 || self.lr.is_nan() {
            return Err(Error::value(
                name,
                format!("Invalid learning rate: {}", self.lr),
            ));
        }
        if self.momentum < 0.0 || self.momentum.is_nan() {
            return Err(Error::value(
                name,
                format!("Invalid momentum value: {}", self.momentum),
            ));
        }
        if self.weight_decay < 0.0 || self.weight_decay.is_nan() {
            return Err(Error::value(
                name,
                format!("Invalid weight_decay value: {}", self.weight_decay),
            ));
        }
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::value(
                name,
                "Nesterov momentum requires a momentum and zero dampening",
            ));
        }
        Ok(())
    }
    fn to_metadata(&self) -> Vec<(&'static str, String)> {
        vec![
            ("lr", fmt_f64(self.lr)),
            ("momentum", fmt_f64(self.momentum)),
            ("dampening", fmt_f64(self.dampening)),
            ("weight_decay", fmt_f64(self.weight_decay)),
            ("nesterov", self.nesterov.to_string()),
            ("maximize", self.maximize.to_string()),
            ("fused", self.fused.to_string()),
        ]
    }
    fn read_metadata(&mut self, get: &dyn Fn(&str) -> Result<String>) -> Result<()> {
        self.lr = parse_f64("lr", &get("lr")?)?;
        self.momentum = parse_f64("momentum", &get("momentum")?)?;
        self.dampening = parse_f64("dampening", &get("dampening")?)?;
        self.weight_decay = parse_f64("weight_decay", &get("weight_decay")?)?;
        self.nesterov = parse_bool("nesterov", &get("nesterov")?)?;
        self.maximize = parse_bool("maximize", &get("maximize")?)?;
        self.fused = parse_bool("fused", &get("fused")?)?;
        Ok(())
    }
}

/// Stochastic gradient descent (PyTorch's `torch.optim.SGD`).
#[derive(Clone, Debug)]
pub struct SGD {
    core: Core<SGDOptions>,
}

impl SGD {
    /// One group of `params` with `options`.
    pub fn new(params: Vec<Tensor>, options: SGDOptions) -> Result<SGD> {
        Ok(SGD {
            core: Core::from_params(<SGDOptions as GroupOptions>::NAME, params, options)?,
        })
    }
    /// Several groups, each with its own options; `defaults` is what
    /// [`SGD::defaults`] reports.
    pub fn with_groups(groups: Vec<ParamGroup<SGDOptions>>, defaults: SGDOptions) -> Result<SGD> {
        Ok(SGD {
            core: Core::new(<SGDOptions as GroupOptions>::NAME, groups, defaults)?,
        })
    }
}

common_optimizer_impl!(SGD, SGDOptions);

impl Optimizer for SGD {
    trait_common!();

    fn step(&mut self) -> Result<()> {
        self.core.check_not_superseded()?;
        let _g = no_grad();
        for (group, states) in self.core.groups.iter().zip(self.core.state.iter_mut()) {
            let o = &group.options;
            for (p, st) in group.params.iter().zip(states.iter_mut()) {
                let Some(grad) = p.grad() else { continue };
                let first = !st.bufs.contains_key("momentum_buffer");
                let has_mom = o.momentum != 0.0;
                if has_mom && first {
                    st.bufs
                        .insert("momentum_buffer".into(), zeros_like_param(p)?);
                }
                let buf = st.bufs.get("momentum_buffer").cloned();
                let state: Vec<&Tensor> = buf.iter().filter(|_| has_mom).collect();
                if o.fused && fusable(p, &grad, &state) {
                    kiln_core::_fused_sgd_(
                        std::slice::from_ref(p),
                        std::slice::from_ref(&grad),
                        &buf.iter().filter(|_| has_mom).cloned().collect::<Vec<_>>(),
                        o.weight_decay,
                        o.momentum,
                        o.lr,
                        o.dampening,
                        o.nesterov,
                        o.maximize,
                        first,
                    )?;
                    continue;
                }
                // PyTorch's _single_tensor_sgd.
                let mut g = if o.maximize {
                    grad.neg()?
                } else {
                    grad.clone()
                };
                if o.weight_decay != 0.0 {
                    g = g.add_with(p, o.weight_decay)?;
                }
                if has_mom {
                    let buf = buf.expect("created above");
                    if first {
                        buf.copy_(&g)?;
                    } else {
                        buf.mul_scalar_(o.momentum)?;
                        buf.add_with_(&g, 1.0 - o.dampening)?;
                    }
                    g = if o.nesterov {
                        g.add_with(&buf, o.momentum)?
                    } else {
                        buf
                    };
                }
                p.add_with_(&g, -o.lr)?;
            }
        }
        Ok(())
    }
}
