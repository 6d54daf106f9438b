//! Adam and AdamW (PyTorch's `torch.optim.Adam`, `torch.optim.AdamW`): one implementation,
//! AdamW being Adam with decoupled weight decay.

use crate::optimizer::{
    common_optimizer_impl, parse_bool, parse_f64, trait_common, Core, GroupOptions,
};
use crate::{fmt_f64, fusable, zeros_like_param, Optimizer, ParamGroup};
use kiln_core::{no_grad, Error, Result, Tensor};

/// Adam's (and AdamW's) hyper-parameters, PyTorch's names. `Default` is Adam's defaults;
/// [`AdamOptions::adamw`] is AdamW's (`weight_decay=1e-2`).
#[derive(Clone, Debug, PartialEq)]
pub struct AdamOptions {
    pub lr: f64,
    pub betas: (f64, f64),
    pub eps: f64,
    pub weight_decay: f64,
    pub amsgrad: bool,
    pub maximize: bool,
    /// Use the fused kernel (`kiln::_fused_adam_`/`_fused_adamw_`) where the layouts
    /// allow; `false` forces the op-by-op update.
    pub fused: bool,
}

impl Default for AdamOptions {
    fn default() -> Self {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
            fused: true,
        }
    }
}

impl AdamOptions {
    /// AdamW's defaults: Adam's with `weight_decay=1e-2`.
    pub fn adamw() -> Self {
        AdamOptions {
            weight_decay: 1e-2,
            ..Default::default()
        }
    }
}

impl GroupOptions for AdamOptions {
    const NAME: &'static str = "Adam";
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.betas.0)
    }
    fn set_momentum(&mut self, m: f64) -> bool {
        self.betas.0 = m;
        true
    }
    fn validate(&self, name: &str) -> Result<()> {
        let o = self;
        if crate::negative_or_nan(o.lr) {
            return Err(Error::value(
                name,
                format!("Invalid learning rate: {}", o.lr),
            ));
        }
        if crate::negative_or_nan(o.eps) {
            return Err(Error::value(
                name,
                format!("Invalid epsilon value: {}", o.eps),
            ));
        }
        if !(0.0..1.0).contains(&o.betas.0) {
            return Err(Error::value(
                name,
                format!("Invalid beta parameter at index 0: {}", o.betas.0),
            ));
        }
        if !(0.0..1.0).contains(&o.betas.1) {
            return Err(Error::value(
                name,
                format!("Invalid beta parameter at index 1: {}", o.betas.1),
            ));
        }
        if crate::negative_or_nan(o.weight_decay) {
            return Err(Error::value(
                name,
                format!("Invalid weight_decay value: {}", o.weight_decay),
            ));
        }
        Ok(())
    }
    fn to_metadata(&self) -> Vec<(&'static str, String)> {
        let o = self;
        vec![
            ("lr", fmt_f64(o.lr)),
            (
                "betas",
                format!("{},{}", fmt_f64(o.betas.0), fmt_f64(o.betas.1)),
            ),
            ("eps", fmt_f64(o.eps)),
            ("weight_decay", fmt_f64(o.weight_decay)),
            ("amsgrad", o.amsgrad.to_string()),
            ("maximize", o.maximize.to_string()),
            ("fused", o.fused.to_string()),
        ]
    }
    fn read_metadata(&mut self, get: &dyn Fn(&str) -> Result<String>) -> Result<()> {
        let o = self;
        o.lr = parse_f64("lr", &get("lr")?)?;
        let betas = get("betas")?;
        let Some((b1, b2)) = betas.split_once(',') else {
            return Err(Error::value(
                "load_state_dict",
                format!("param group entry 'betas' = '{betas}' is not two numbers"),
            ));
        };
        o.betas = (parse_f64("betas", b1)?, parse_f64("betas", b2)?);
        o.eps = parse_f64("eps", &get("eps")?)?;
        o.weight_decay = parse_f64("weight_decay", &get("weight_decay")?)?;
        o.amsgrad = parse_bool("amsgrad", &get("amsgrad")?)?;
        o.maximize = parse_bool("maximize", &get("maximize")?)?;
        o.fused = parse_bool("fused", &get("fused")?)?;
        Ok(())
    }
}

/// One step of Adam (`decoupled = false`) or AdamW over a core's groups.
fn adam_step<const W: bool>(core: &mut Core<AdamOptions>) -> Result<()> {
    core.check_not_superseded()?;
    let _g = no_grad();
    for (group, states) in core.groups.iter().zip(core.state.iter_mut()) {
        let o = &group.options;
        let (beta1, beta2) = o.betas;
        for (p, st) in group.params.iter().zip(states.iter_mut()) {
            let Some(grad) = p.grad() else { continue };
            if st.is_empty() {
                st.step = Some(0.0);
                st.bufs.insert("exp_avg".into(), zeros_like_param(p)?);
                st.bufs.insert("exp_avg_sq".into(), zeros_like_param(p)?);
            }
            if o.amsgrad && !st.bufs.contains_key("max_exp_avg_sq") {
                st.bufs
                    .insert("max_exp_avg_sq".into(), zeros_like_param(p)?);
            }
            let step = st.step.unwrap_or(0.0) + 1.0;
            st.step = Some(step);
            let exp_avg = st.buf("exp_avg")?.clone();
            let exp_avg_sq = st.buf("exp_avg_sq")?.clone();
            let max_sq = if o.amsgrad {
                vec![st.buf("max_exp_avg_sq")?.clone()]
            } else {
                vec![]
            };
            let mut state = vec![&exp_avg, &exp_avg_sq];
            state.extend(max_sq.iter());
            if o.fused && fusable(p, &grad, &state) {
                let f = if W {
                    kiln_core::_fused_adamw_
                } else {
                    kiln_core::_fused_adam_
                };
                f(
                    std::slice::from_ref(p),
                    std::slice::from_ref(&grad),
                    std::slice::from_ref(&exp_avg),
                    std::slice::from_ref(&exp_avg_sq),
                    &max_sq,
                    &[step],
                    o.lr,
                    beta1,
                    beta2,
                    o.weight_decay,
                    o.eps,
                    o.amsgrad,
                    o.maximize,
                )?;
                continue;
            }
            // PyTorch's _single_tensor_adam.
            let mut g = if o.maximize {
                grad.neg()?
            } else {
                grad.clone()
            };
            if o.weight_decay != 0.0 {
                if W {
                    p.mul_scalar_(1.0 - o.lr * o.weight_decay)?;
                } else {
                    g = g.add_with(p, o.weight_decay)?;
                }
            }
            exp_avg.copy_(&exp_avg.lerp(&g, 1.0 - beta1)?)?;
            exp_avg_sq.mul_scalar_(beta2)?;
            exp_avg_sq.copy_(&exp_avg_sq.addcmul_with(&g, &g, 1.0 - beta2)?)?;
            let bias_correction1 = 1.0 - beta1.powf(step);
            let bias_correction2 = 1.0 - beta2.powf(step);
            let step_size = o.lr / bias_correction1;
            let bc2_sqrt = bias_correction2.sqrt();
            let second = if o.amsgrad {
                let m = &max_sq[0];
                m.copy_(&m.maximum(&exp_avg_sq)?)?;
                m.clone()
            } else {
                exp_avg_sq.clone()
            };
            let denom = second.sqrt()?.div_scalar(bc2_sqrt)?.add_scalar(o.eps)?;
            p.copy_(&p.addcdiv_with(&exp_avg, &denom, -step_size)?)?;
        }
    }
    Ok(())
}

macro_rules! adam_like {
    ($ty:ident, $w:literal, $doc:literal, $defaults:expr) => {
        #[doc = $doc]
        #[derive(Clone, Debug)]
        pub struct $ty {
            core: Core<AdamOptions>,
        }

        impl $ty {
            /// One group of `params` with `options`.
            pub fn new(params: Vec<Tensor>, options: AdamOptions) -> Result<$ty> {
                Ok($ty {
                    core: Core::from_params(stringify!($ty), params, options)?,
                })
            }
            /// Several groups, each with its own options; `defaults` is what
            /// `defaults()` reports.
            pub fn with_groups(
                groups: Vec<ParamGroup<AdamOptions>>,
                defaults: AdamOptions,
            ) -> Result<$ty> {
                Ok($ty {
                    core: Core::new(stringify!($ty), groups, defaults)?,
                })
            }
            /// PyTorch's defaults for this optimizer.
            pub fn default_options() -> AdamOptions {
                $defaults
            }
        }

        common_optimizer_impl!($ty, AdamOptions);

        impl Optimizer for $ty {
            trait_common!();
            fn step(&mut self) -> Result<()> {
                adam_step::<$w>(&mut self.core)
            }
        }
    };
}

adam_like!(
    Adam,
    false,
    "Adam (PyTorch's `torch.optim.Adam`), with `amsgrad` and `maximize`.",
    AdamOptions::default()
);
adam_like!(
    AdamW,
    true,
    "AdamW (PyTorch's `torch.optim.AdamW`): Adam with decoupled weight decay; build it \
     with [`AdamOptions::adamw`] for PyTorch's defaults (`weight_decay=1e-2`).",
    AdamOptions::adamw()
);
