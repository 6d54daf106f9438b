//! RMSprop (PyTorch's `torch.optim.RMSprop`): the fused kernel (`kiln::_fused_rmsprop_`)
//! where the layouts allow, the op-by-op update otherwise.

use crate::optimizer::{
    common_optimizer_impl, parse_bool, parse_f64, trait_common, Core, GroupOptions,
};
use crate::{fmt_f64, fusable, zeros_like_param, Optimizer, ParamGroup};
use kiln_core::{no_grad, Error, Result, Tensor};

/// RMSprop's hyper-parameters, PyTorch's names and defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct RMSpropOptions {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub centered: bool,
    pub maximize: bool,
    /// Use the fused kernel (`kiln::_fused_rmsprop_`) where the layouts allow; `false`
    /// forces the op-by-op update.
    pub fused: bool,
}

impl Default for RMSpropOptions {
    fn default() -> Self {
        RMSpropOptions {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
            maximize: false,
            fused: true,
        }
    }
}

impl GroupOptions for RMSpropOptions {
    const NAME: &'static str = "RMSprop";
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
        let checks = [
            (self.lr, "Invalid learning rate"),
            (self.eps, "Invalid epsilon value"),
            (self.momentum, "Invalid momentum value"),
            (self.weight_decay, "Invalid weight_decay value"),
            (self.alpha, "Invalid alpha value"),
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
            ("alpha", fmt_f64(self.alpha)),
            ("eps", fmt_f64(self.eps)),
            ("weight_decay", fmt_f64(self.weight_decay)),
            ("momentum", fmt_f64(self.momentum)),
            ("centered", self.centered.to_string()),
            ("maximize", self.maximize.to_string()),
            ("fused", self.fused.to_string()),
        ]
    }
    fn read_metadata(&mut self, get: &dyn Fn(&str) -> Result<String>) -> Result<()> {
        self.lr = parse_f64("lr", &get("lr")?)?;
        self.alpha = parse_f64("alpha", &get("alpha")?)?;
        self.eps = parse_f64("eps", &get("eps")?)?;
        self.weight_decay = parse_f64("weight_decay", &get("weight_decay")?)?;
        self.momentum = parse_f64("momentum", &get("momentum")?)?;
        self.centered = parse_bool("centered", &get("centered")?)?;
        self.maximize = parse_bool("maximize", &get("maximize")?)?;
        self.fused = parse_bool("fused", &get("fused")?)?;
        Ok(())
    }
}

/// RMSprop (PyTorch's `torch.optim.RMSprop`), with `momentum` and `centered`.
#[derive(Clone, Debug)]
pub struct RMSprop {
    core: Core<RMSpropOptions>,
}

impl RMSprop {
    /// One group of `params` with `options`.
    pub fn new(params: Vec<Tensor>, options: RMSpropOptions) -> Result<RMSprop> {
        Ok(RMSprop {
            core: Core::from_params(<RMSpropOptions as GroupOptions>::NAME, params, options)?,
        })
    }
    /// Several groups, each with its own options.
    pub fn with_groups(
        groups: Vec<ParamGroup<RMSpropOptions>>,
        defaults: RMSpropOptions,
    ) -> Result<RMSprop> {
        Ok(RMSprop {
            core: Core::new(<RMSpropOptions as GroupOptions>::NAME, groups, defaults)?,
        })
    }
}

common_optimizer_impl!(RMSprop, RMSpropOptions);

impl Optimizer for RMSprop {
    trait_common!();

    fn step(&mut self) -> Result<()> {
        self.core.check_not_superseded()?;
        let _g = no_grad();
        for (group, states) in self.core.groups.iter().zip(self.core.state.iter_mut()) {
            let o = &group.options;
            for (p, st) in group.params.iter().zip(states.iter_mut()) {
                let Some(grad) = p.grad() else { continue };
                if st.is_empty() {
                    st.step = Some(0.0);
                    st.bufs.insert("square_avg".into(), zeros_like_param(p)?);
                    if o.momentum > 0.0 {
                        st.bufs
                            .insert("momentum_buffer".into(), zeros_like_param(p)?);
                    }
                    if o.centered {
                        st.bufs.insert("grad_avg".into(), zeros_like_param(p)?);
                    }
                }
                st.step = Some(st.step.unwrap_or(0.0) + 1.0);
                if o.fused {
                    let square_avg = st.buf("square_avg")?;
                    let grad_avg = match o.centered {
                        true => vec![st.buf("grad_avg")?.clone()],
                        false => vec![],
                    };
                    let mom = match o.momentum > 0.0 {
                        true => vec![st.buf("momentum_buffer")?.clone()],
                        false => vec![],
                    };
                    let state: Vec<&Tensor> = std::iter::once(square_avg)
                        .chain(&grad_avg)
                        .chain(&mom)
                        .collect();
                    if fusable(p, &grad, &state) {
                        kiln_core::_fused_rmsprop_(
                            std::slice::from_ref(p),
                            std::slice::from_ref(&grad),
                            std::slice::from_ref(square_avg),
                            &grad_avg,
                            &mom,
                            o.lr,
                            o.alpha,
                            o.eps,
                            o.weight_decay,
                            o.momentum,
                            o.centered,
                            o.maximize,
                        )?;
                        continue;
                    }
                }
                // PyTorch's _single_tensor_rmsprop.
                let mut g = if o.maximize {
                    grad.neg()?
                } else {
                    grad.clone()
                };
                if o.weight_decay != 0.0 {
                    g = g.add_with(p, o.weight_decay)?;
                }
                let square_avg = st.buf("square_avg")?;
                square_avg.mul_scalar_(o.alpha)?;
                square_avg.copy_(&square_avg.addcmul_with(&g, &g, 1.0 - o.alpha)?)?;
                let avg = if o.centered {
                    let grad_avg = st.buf("grad_avg")?;
                    grad_avg.copy_(&grad_avg.lerp(&g, 1.0 - o.alpha)?)?;
                    square_avg
                        .addcmul_with(grad_avg, grad_avg, -1.0)?
                        .sqrt()?
                        .add_scalar(o.eps)?
                } else {
                    square_avg.sqrt()?.add_scalar(o.eps)?
                };
                if o.momentum > 0.0 {
                    let buf = st.buf("momentum_buffer")?;
                    buf.mul_scalar_(o.momentum)?;
                    buf.copy_(&buf.addcdiv(&g, &avg)?)?;
                    p.add_with_(buf, -o.lr)?;
                } else {
                    p.copy_(&p.addcdiv_with(&g, &avg, -o.lr)?)?;
                }
            }
        }
        Ok(())
    }
}
