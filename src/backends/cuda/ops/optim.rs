//! Fused optimizer steps on CUDA (kernels/cuda/optim.cu.j2): the launchers of
//! `kiln::_fused_adam_`, `_fused_adamw_`, `_fused_sgd_`, `_fused_rmsprop_` and
//! `_fused_adagrad_` (src/ops/optim.rs checks the arguments). Each tensor goes to the kernel as a 1-d view of its dense block.

use super::{gpu_of, grid, operand_with, KilnTensor};
use crate::backends::cuda::launchers::optim as kernels;
use crate::{Layout, Result, Tensor};
use kiln_kernels::cpu::optim::{adagrad_clr, AdagradStep, AdamStep, RmspropStep, SgdStep};

/// `t`'s dense block as a 1-d view (every tensor of one parameter has the same strides, so
/// element i of each block is the same entry).
fn block(op: &str, t: &Tensor) -> Result<KilnTensor> {
    let layout = Layout {
        sizes: smallvec::smallvec![t.numel()],
        strides: smallvec::smallvec![1],
        offset: t.storage_offset(),
    };
    operand_with(op, t, &layout)
}

/// One Adam/AdamW step: `group` = [param, grad, exp_avg, exp_avg_sq, (max_exp_avg_sq)].
pub(crate) fn fused_adam(op: &str, group: &[&Tensor], h: &AdamStep) -> Result<()> {
    let p = group[0];
    let n = p.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, p)?;
    let k: Vec<KilnTensor> = group.iter().map(|t| block(op, t)).collect::<Result<_>>()?;
    // Without amsgrad the kernel never reads `vmax`; the parameter stands in.
    let vmax = if h.amsgrad { k[4] } else { k[0] };
    let bias_correction1 = 1.0 - h.beta1.powf(h.step);
    let bias_correction2 = 1.0 - h.beta2.powf(h.step);
    let step_size = h.lr / bias_correction1;
    let bc2_sqrt = bias_correction2.sqrt();
    let (one_m_beta1, one_m_beta2) = (1.0 - h.beta1, 1.0 - h.beta2);
    let decay = 1.0 - h.lr * h.weight_decay;
    let has_wd = h.weight_decay != 0.0;
    let nn = n as i64;
    // SAFETY: `fused_adam_<T>(p, g, m, v, vmax, bool x4, double x8, long long n)`: every
    // view is a dense block of n elements of T on this device (checked by the caller), the
    // written ones distinct storages; `vmax` is only read and written with amsgrad.
    unsafe {
        kernels::fused_adam(
            &gpu,
            op,
            p.dtype(),
            grid(n),
            &k[0],
            &k[1],
            &k[2],
            &k[3],
            &vmax,
            h.amsgrad,
            h.decoupled,
            h.maximize,
            has_wd,
            step_size,
            bc2_sqrt,
            h.beta2,
            one_m_beta1,
            one_m_beta2,
            h.weight_decay,
            decay,
            h.eps,
            nn,
        )
    }?;
    Ok(())
}

/// One SGD step: `group` = [param, grad, (momentum_buffer)].
pub(crate) fn fused_sgd(op: &str, group: &[&Tensor], h: &SgdStep) -> Result<()> {
    let p = group[0];
    let n = p.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, p)?;
    let k: Vec<KilnTensor> = group.iter().map(|t| block(op, t)).collect::<Result<_>>()?;
    let has_mom = group.len() > 2;
    // Without momentum the kernel never touches `buf`; the parameter stands in.
    let buf = if has_mom { k[2] } else { k[0] };
    let has_wd = h.weight_decay != 0.0;
    let one_m_damp = 1.0 - h.dampening;
    let nn = n as i64;
    // SAFETY: `fused_sgd_<T>(p, g, buf, bool x5, double x4, long long n)`: dense blocks of n
    // elements of T on this device, the written ones distinct storages; `buf` is only used
    // with momentum.
    unsafe {
        kernels::fused_sgd(
            &gpu,
            op,
            p.dtype(),
            grid(n),
            &k[0],
            &k[1],
            &buf,
            has_mom,
            h.first_step,
            h.nesterov,
            h.maximize,
            has_wd,
            h.lr,
            h.weight_decay,
            h.momentum,
            one_m_damp,
            nn,
        )
    }?;
    Ok(())
}

/// One RMSprop step: `group` = [param, grad, square_avg, (grad_avg), (momentum_buffer)].
pub(crate) fn fused_rmsprop(op: &str, group: &[&Tensor], h: &RmspropStep) -> Result<()> {
    let p = group[0];
    let n = p.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, p)?;
    let k: Vec<KilnTensor> = group.iter().map(|t| block(op, t)).collect::<Result<_>>()?;
    let has_mom = h.momentum > 0.0;
    // An absent buffer is never touched by the kernel; the parameter stands in.
    let ga = if h.centered { k[3] } else { k[0] };
    let buf = match (has_mom, h.centered) {
        (true, true) => k[4],
        (true, false) => k[3],
        (false, _) => k[0],
    };
    let has_wd = h.weight_decay != 0.0;
    let one_m_alpha = 1.0 - h.alpha;
    let nn = n as i64;
    // SAFETY: `fused_rmsprop_<T>(p, g, sq, ga, buf, bool x4, double x6, long long n)`: every
    // view is a dense block of n elements of T on this device (checked by the caller), the
    // written ones distinct storages; `ga` is only used when centered, `buf` with momentum.
    unsafe {
        kernels::fused_rmsprop(
            &gpu,
            op,
            p.dtype(),
            grid(n),
            &k[0],
            &k[1],
            &k[2],
            &ga,
            &buf,
            h.centered,
            has_mom,
            h.maximize,
            has_wd,
            h.lr,
            h.alpha,
            one_m_alpha,
            h.eps,
            h.weight_decay,
            h.momentum,
            nn,
        )
    }?;
    Ok(())
}

/// One Adagrad step: `group` = [param, grad, state_sum].
pub(crate) fn fused_adagrad(op: &str, group: &[&Tensor], h: &AdagradStep) -> Result<()> {
    let p = group[0];
    let n = p.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, p)?;
    let k: Vec<KilnTensor> = group.iter().map(|t| block(op, t)).collect::<Result<_>>()?;
    let has_wd = h.weight_decay != 0.0;
    let clr = adagrad_clr(h);
    let nn = n as i64;
    // SAFETY: `fused_adagrad_<T>(p, g, sum, bool x2, double x3, long long n)`: dense blocks
    // of n elements of T on this device (checked by the caller), `p` and `sum` distinct
    // storages.
    unsafe {
        kernels::fused_adagrad(
            &gpu,
            op,
            p.dtype(),
            grid(n),
            &k[0],
            &k[1],
            &k[2],
            h.maximize,
            has_wd,
            clr,
            h.weight_decay,
            h.eps,
            nn,
        )
    }?;
    Ok(())
}
