//! Fused optimizer updates: PyTorch's `_fused_adam_`, `_fused_adamw_`, `_fused_sgd_` and
//! `_fused_adagrad_` (what `torch.optim.Adam(fused=True)` and friends call), plus
//! `_fused_rmsprop_` (named the same way; PyTorch has no fused RMSprop), for `kiln::optim`.
//!
//! Hand-written rather than declared in native_functions.yaml: the generator now takes
//! schemas that mutate lists of tensors (`_amp_foreach_non_finite_check_and_unscale_` is
//! declared so), but these differ from PyTorch's (`state_steps` are plain floats here, and
//! there is no `grad_scale` / `found_inf`), so they stay out of the YAML until they take
//! PyTorch's schemas. They are not differentiable; like `copy_`, they check their
//! arguments here and call the CPU kernels in `kiln_kernels::cpu::optim` directly, or on
//! CUDA the launchers in `src/backends/cuda/ops/optim.rs` (kernels/cuda/optim.cu.j2).
//!
//! Every tensor of one parameter (the parameter, its gradient and its state buffers) must
//! have the parameter's shape, dtype and device and the parameter's strides, and the
//! parameter must be non-overlapping and dense (contiguous or a permutation of it: what the
//! gradient layout contract and `zeros_like` state give); the update then runs over each as
//! one flat block. Callers with other layouts use the composite (op-by-op) update instead.

use crate::dispatch::backend;
use crate::tensor::FusedStep;
use crate::{autograd, DType, Error, Result, Tensor};
use kiln_kernels::cpu::optim::{AdagradStep, AdamStep, RmspropStep, SgdStep};

/// True when `t` has `p`'s strides on every dim of size > 1.
fn same_strides(p: &Tensor, t: &Tensor) -> bool {
    p.shape()
        .iter()
        .zip(p.strides().iter().zip(t.strides()))
        .all(|(&s, (a, b))| s == 1 || a == b)
}

/// Checks one parameter's tensors: `group[0]` is the parameter, `group[1]` its gradient,
/// the rest its state.
fn check_group(op: &str, index: usize, names: &[&str], group: &[&Tensor]) -> Result<()> {
    let p = group[0];
    if !matches!(
        p.dtype(),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16
    ) {
        return Err(Error::dtype(
            op,
            format!(
                "expected floating-point params (float, double, half, bfloat16), but params[{index}] has dtype {}",
                p.dtype()
            ),
        ));
    }
    p.device()
        .ensure_available()
        .map_err(|e| Error::new(e.kind(), op, format!("params[{index}]: {e}")))?;
    if !p.layout().is_non_overlapping_and_dense() {
        return Err(Error::shape(
            op,
            format!(
                "params[{index}] must be non-overlapping and dense (contiguous or a permutation of contiguous), got sizes {:?} strides {:?}",
                p.shape(),
                p.strides()
            ),
        ));
    }
    match autograd::is_grad_enabled() && p.requires_grad() {
        true if p.is_leaf() => {
            return Err(Error::Autograd(format!(
                "{op}: a leaf Variable that requires grad is being used in an in-place operation."
            )))
        }
        true => {
            return Err(Error::Autograd(format!(
                "{op} is not differentiable: params[{index}] requires grad; call it under no_grad"
            )))
        }
        false => {}
    }
    for (t, name) in group.iter().zip(names).skip(1) {
        if t.shape() != p.shape() || t.dtype() != p.dtype() || t.device() != p.device() {
            return Err(Error::dtype(
                op,
                format!(
                    "{name}[{index}] must match params[{index}] in shape, dtype and device: got {:?} {} {} for params {:?} {} {}",
                    t.shape(),
                    t.dtype(),
                    t.device(),
                    p.shape(),
                    p.dtype(),
                    p.device()
                ),
            ));
        }
        if !same_strides(p, t) {
            return Err(Error::shape(
                op,
                format!(
                    "{name}[{index}] must have the strides of params[{index}] ({:?}), got {:?}",
                    p.strides(),
                    t.strides()
                ),
            ));
        }
    }
    for (i, a) in group.iter().enumerate() {
        for (j, b) in group.iter().enumerate().skip(i + 1) {
            if a.shares_storage_with(b) {
                return Err(Error::value(
                    op,
                    format!(
                        "{}[{index}] and {}[{index}] share memory; each must have its own",
                        names[i], names[j]
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn check_lens(op: &str, params: &[Tensor], lists: &[(&str, usize)]) -> Result<()> {
    for (name, len) in lists {
        if *len != params.len() {
            return Err(Error::shape(
                op,
                format!(
                    "Tensor list must have same number of elements as params: params has {}, {name} has {len}",
                    params.len()
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a NaN step or one below 1 (`state_steps` hold the count after the increment).
fn check_step(op: &str, i: usize, step: f64) -> Result<()> {
    // Also refuses NaN.
    if step.partial_cmp(&1.0).is_none_or(|o| o.is_lt()) {
        return Err(Error::value(
            op,
            format!("state_steps[{i}] must be >= 1 (the step count after this step's increment), got {step}"),
        ));
    }
    Ok(())
}

/// One parameter's fused step on its device's backend; then every tensor written (all of the
/// group but the gradient, `group[1]`) gets a new version.
fn step_one(op: &str, group: &[&Tensor], step: FusedStep<'_>) -> Result<()> {
    backend(group[0].device()).fused_step(op, group, step)?;
    for (j, t) in group.iter().enumerate() {
        if j != 1 {
            t.storage().bump_version();
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn adam_impl(
    op: &str,
    params: &[Tensor],
    grads: &[Tensor],
    exp_avgs: &[Tensor],
    exp_avg_sqs: &[Tensor],
    max_exp_avg_sqs: &[Tensor],
    state_steps: &[f64],
    h: AdamStep,
) -> Result<()> {
    let mut lists = vec![
        ("grads", grads.len()),
        ("exp_avgs", exp_avgs.len()),
        ("exp_avg_sqs", exp_avg_sqs.len()),
        ("state_steps", state_steps.len()),
    ];
    if h.amsgrad {
        lists.push(("max_exp_avg_sqs", max_exp_avg_sqs.len()));
    }
    check_lens(op, params, &lists)?;
    let names = [
        "params",
        "grads",
        "exp_avgs",
        "exp_avg_sqs",
        "max_exp_avg_sqs",
    ];
    let group = |i: usize| {
        let mut g = vec![&params[i], &grads[i], &exp_avgs[i], &exp_avg_sqs[i]];
        if h.amsgrad {
            g.push(&max_exp_avg_sqs[i]);
        }
        g
    };
    // Check everything before writing anything.
    for (i, &step) in state_steps.iter().enumerate() {
        check_group(op, i, &names, &group(i))?;
        check_step(op, i, step)?;
    }
    for (i, &step) in state_steps.iter().enumerate() {
        let g = group(i);
        let h = AdamStep { step, ..h };
        step_one(op, &g, FusedStep::Adam(&h))?;
    }
    Ok(())
}

/// PyTorch's `torch._fused_adam_`: one Adam step over every parameter, updating `params`,
/// `exp_avgs`, `exp_avg_sqs` (and, with `amsgrad`, `max_exp_avg_sqs`) in place from
/// `grads`. `state_steps[i]` is parameter `i`'s step count *after* this step's increment
/// (PyTorch passes the step tensors, already incremented). `max_exp_avg_sqs` may be empty
/// without `amsgrad`. Not differentiable: call it under `no_grad` when params require grad.
#[allow(clippy::too_many_arguments)]
pub fn _fused_adam_(
    params: &[Tensor],
    grads: &[Tensor],
    exp_avgs: &[Tensor],
    exp_avg_sqs: &[Tensor],
    max_exp_avg_sqs: &[Tensor],
    state_steps: &[f64],
    lr: f64,
    beta1: f64,
    beta2: f64,
    weight_decay: f64,
    eps: f64,
    amsgrad: bool,
    maximize: bool,
) -> Result<()> {
    let h = AdamStep {
        lr,
        beta1,
        beta2,
        weight_decay,
        eps,
        step: 1.0,
        amsgrad,
        maximize,
        decoupled: false,
    };
    adam_impl(
        "_fused_adam_",
        params,
        grads,
        exp_avgs,
        exp_avg_sqs,
        max_exp_avg_sqs,
        state_steps,
        h,
    )
}

/// PyTorch's `torch._fused_adamw_`: as [`_fused_adam_`] with decoupled weight decay
/// (`param *= 1 - lr * weight_decay` before the Adam update).
#[allow(clippy::too_many_arguments)]
pub fn _fused_adamw_(
    params: &[Tensor],
    grads: &[Tensor],
    exp_avgs: &[Tensor],
    exp_avg_sqs: &[Tensor],
    max_exp_avg_sqs: &[Tensor],
    state_steps: &[f64],
    lr: f64,
    beta1: f64,
    beta2: f64,
    weight_decay: f64,
    eps: f64,
    amsgrad: bool,
    maximize: bool,
) -> Result<()> {
    let h = AdamStep {
        lr,
        beta1,
        beta2,
        weight_decay,
        eps,
        step: 1.0,
        amsgrad,
        maximize,
        decoupled: true,
    };
    adam_impl(
        "_fused_adamw_",
        params,
        grads,
        exp_avgs,
        exp_avg_sqs,
        max_exp_avg_sqs,
        state_steps,
        h,
    )
}

/// PyTorch's `torch._fused_sgd_`: one SGD step over every parameter, updating `params` and
/// (when `momentum != 0`) `momentum_buffer_list` in place from `grads`. With
/// `is_first_step` the momentum buffers are overwritten with the (decayed) gradient, as
/// PyTorch does when it creates them. `momentum_buffer_list` may be empty when
/// `momentum == 0`. Not differentiable: call it under `no_grad` when params require grad.
#[allow(clippy::too_many_arguments)]
pub fn _fused_sgd_(
    params: &[Tensor],
    grads: &[Tensor],
    momentum_buffer_list: &[Tensor],
    weight_decay: f64,
    momentum: f64,
    lr: f64,
    dampening: f64,
    nesterov: bool,
    maximize: bool,
    is_first_step: bool,
) -> Result<()> {
    let op = "_fused_sgd_";
    let mut lists = vec![("grads", grads.len())];
    let has_mom = momentum != 0.0;
    if has_mom {
        lists.push(("momentum_buffer_list", momentum_buffer_list.len()));
    }
    check_lens(op, params, &lists)?;
    let names = ["params", "grads", "momentum_buffer_list"];
    let group = |i: usize| {
        let mut g = vec![&params[i], &grads[i]];
        if has_mom {
            g.push(&momentum_buffer_list[i]);
        }
        g
    };
    for i in 0..params.len() {
        check_group(op, i, &names, &group(i))?;
    }
    let h = SgdStep {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
        maximize,
        first_step: is_first_step,
    };
    for i in 0..params.len() {
        let g = group(i);
        step_one(op, &g, FusedStep::Sgd(&h))?;
    }
    Ok(())
}

/// One RMSprop step over every parameter (PyTorch's `_single_tensor_rmsprop` formulas in
/// one pass; PyTorch has no `_fused_rmsprop_`, the name follows its fused ops), updating
/// `params`, `square_avgs`, and (with `centered`) `grad_avgs` and (with `momentum > 0`)
/// `momentum_buffer_list` in place from `grads`. `grad_avgs` may be empty without
/// `centered`, `momentum_buffer_list` without momentum. The step count does not enter
/// RMSprop's update, so there are no `state_steps`. Not differentiable: call it under
/// `no_grad` when params require grad.
#[allow(clippy::too_many_arguments)]
pub fn _fused_rmsprop_(
    params: &[Tensor],
    grads: &[Tensor],
    square_avgs: &[Tensor],
    grad_avgs: &[Tensor],
    momentum_buffer_list: &[Tensor],
    lr: f64,
    alpha: f64,
    eps: f64,
    weight_decay: f64,
    momentum: f64,
    centered: bool,
    maximize: bool,
) -> Result<()> {
    let op = "_fused_rmsprop_";
    let has_mom = momentum > 0.0;
    let mut lists = vec![("grads", grads.len()), ("square_avgs", square_avgs.len())];
    if centered {
        lists.push(("grad_avgs", grad_avgs.len()));
    }
    if has_mom {
        lists.push(("momentum_buffer_list", momentum_buffer_list.len()));
    }
    check_lens(op, params, &lists)?;
    let mut names = vec!["params", "grads", "square_avgs"];
    if centered {
        names.push("grad_avgs");
    }
    if has_mom {
        names.push("momentum_buffer_list");
    }
    let group = |i: usize| {
        let mut g = vec![&params[i], &grads[i], &square_avgs[i]];
        if centered {
            g.push(&grad_avgs[i]);
        }
        if has_mom {
            g.push(&momentum_buffer_list[i]);
        }
        g
    };
    // Check everything before writing anything.
    for i in 0..params.len() {
        check_group(op, i, &names, &group(i))?;
    }
    let h = RmspropStep {
        lr,
        alpha,
        eps,
        weight_decay,
        momentum,
        centered,
        maximize,
    };
    for i in 0..params.len() {
        let g = group(i);
        step_one(op, &g, FusedStep::Rmsprop(&h))?;
    }
    Ok(())
}

/// PyTorch's `torch._fused_adagrad_`: one Adagrad step over every parameter, updating
/// `params` and `state_sums` in place from `grads`. `state_steps[i]` is parameter `i`'s
/// step count *after* this step's increment (PyTorch passes the step tensors, already
/// incremented); the learning rate is `lr / (1 + (step - 1) * lr_decay)`. Not
/// differentiable: call it under `no_grad` when params require grad.
#[allow(clippy::too_many_arguments)]
pub fn _fused_adagrad_(
    params: &[Tensor],
    grads: &[Tensor],
    state_sums: &[Tensor],
    state_steps: &[f64],
    lr: f64,
    lr_decay: f64,
    weight_decay: f64,
    eps: f64,
    maximize: bool,
) -> Result<()> {
    let op = "_fused_adagrad_";
    check_lens(
        op,
        params,
        &[
            ("grads", grads.len()),
            ("state_sums", state_sums.len()),
            ("state_steps", state_steps.len()),
        ],
    )?;
    let names = ["params", "grads", "state_sums"];
    let group = |i: usize| vec![&params[i], &grads[i], &state_sums[i]];
    // Check everything before writing anything.
    for (i, &step) in state_steps.iter().enumerate() {
        check_group(op, i, &names, &group(i))?;
        check_step(op, i, step)?;
    }
    for (i, &step) in state_steps.iter().enumerate() {
        let g = group(i);
        let h = AdagradStep {
            lr,
            lr_decay,
            weight_decay,
            eps,
            step,
            maximize,
        };
        step_one(op, &g, FusedStep::Adagrad(&h))?;
    }
    Ok(())
}
