//! Normalization layers on CUDA (kernels/cuda/norm.cu.j2): layer and RMS norm one block per
//! row, group norm one block per (sample, group), batch norm one block per channel for the
//! statistics and one thread per element for the transform; parameter gradients by
//! deterministic block reductions. Shapes were checked by the ops' meta functions; every
//! operand is made contiguous here, so the kernels index it linearly.

use super::{alloc, copy, gpu_of, grid, operand, rows};
use crate::backends::cuda::launchers::norm as kernels;
use crate::{Result, Tensor};
use cudarc::driver::LaunchConfig;

/// `t` itself when contiguous, else a contiguous copy.
fn dense(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        Ok(t.clone())
    } else {
        t.fresh_copy()
    }
}

/// A contiguous optional operand: the tensor and whether it was given (an absent one is
/// passed as `stand_in`, never read).
fn optional(t: Option<&Tensor>, stand_in: &Tensor) -> Result<(Tensor, bool)> {
    match t {
        Some(t) => Ok((dense(t)?, true)),
        None => Ok((stand_in.clone(), false)),
    }
}

/// Blocks of 32 columns x 16 row lanes over `n` columns.
fn column_tiles(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(32).clamp(1, 65_535) as u32, 1, 1),
        block_dim: (32, 16, 1),
        shared_mem_bytes: 0,
    }
}

/// The product of `sizes`, saturating (an empty tensor may have huge other dims).
fn prod(sizes: &[usize]) -> usize {
    sizes.iter().fold(1usize, |a, &b| a.saturating_mul(b))
}

/// `(M, N)` of an input normalized over its trailing `k` dims.
fn rows_cols(t: &Tensor, k: usize) -> (usize, usize) {
    let axis = t.dim() - k;
    (prod(&t.shape()[..axis]), prod(&t.shape()[axis..]))
}

/// Layer norm (`mean` given) or RMS norm forward.
#[allow(clippy::too_many_arguments)]
fn rows_forward(
    op: &str,
    input: &Tensor,
    k: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    out: &Tensor,
    mean: Option<&Tensor>,
    rstd: &Tensor,
) -> Result<()> {
    let (m, n) = rows_cols(input, k);
    if m == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let x = dense(input)?;
    let (w, has_w) = optional(weight, rstd)?;
    let (b, has_b) = optional(bias, rstd)?;
    let has_mean = mean.is_some();
    let (o, mo, ro) = (
        operand(op, out)?,
        operand(op, mean.unwrap_or(rstd))?,
        operand(op, rstd)?,
    );
    let (xo, wo, bo) = (operand(op, &x)?, operand(op, &w)?, operand(op, &b)?);
    let (mi, ni) = (m as i64, n as i64);
    // SAFETY: `norm_rows_fwd_<T>(KilnTensor out, KilnTensor mean, bool has_mean, KilnTensor
    // rstd, KilnTensor x, KilnTensor w, bool has_w, KilnTensor b, bool has_b, long long M,
    // long long N, double eps)`: x and out hold M*N contiguous T, rstd (and mean when
    // has_mean) M of the acc type, w and b N when flagged; stand-ins are never read.
    unsafe {
        kernels::norm_rows_fwd(
            &gpu,
            op,
            input.dtype(),
            rows(m),
            &o,
            &mo,
            has_mean,
            &ro,
            &xo,
            &wo,
            has_w,
            &bo,
            has_b,
            mi,
            ni,
            eps,
        )
    }?;
    Ok(())
}

/// Layer norm (`mean` given) or RMS norm backward: dx by rows, dw / db by column tiles.
#[allow(clippy::too_many_arguments)]
fn rows_backward(
    op: &str,
    grad_out: &Tensor,
    input: &Tensor,
    k: usize,
    mean: Option<&Tensor>,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    want: [bool; 3],
    grad_input: &Tensor,
    grad_weight: &Tensor,
    grad_bias: Option<&Tensor>,
) -> Result<()> {
    let (m, n) = rows_cols(input, k);
    if m == 0 || n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, grad_input)?;
    let (g, x, r) = (dense(grad_out)?, dense(input)?, dense(rstd)?);
    let (mu, has_mean) = optional(mean, &r)?;
    let (w, has_w) = optional(weight, &r)?;
    let (go, xo, muo, ro, wo) = (
        operand(op, &g)?,
        operand(op, &x)?,
        operand(op, &mu)?,
        operand(op, &r)?,
        operand(op, &w)?,
    );
    let (mi, ni) = (m as i64, n as i64);
    if want[0] {
        let dxo = operand(op, grad_input)?;
        // SAFETY: `norm_rows_bwd_<T>(KilnTensor dx, KilnTensor g, KilnTensor x, KilnTensor
        // mean, bool has_mean, KilnTensor rstd, KilnTensor w, bool has_w, long long M, long
        // long N)`: dx, g, x hold M*N contiguous T; mean and rstd M, w N of the acc type.
        unsafe {
            kernels::norm_rows_bwd(
                &gpu,
                op,
                input.dtype(),
                rows(m),
                &dxo,
                &go,
                &xo,
                &muo,
                has_mean,
                &ro,
                &wo,
                has_w,
                mi,
                ni,
            )
        }?;
    }
    let want_b = want[2] && grad_bias.is_some();
    if want[1] || want_b {
        let dwo = operand(op, grad_weight)?;
        let dbo = operand(op, grad_bias.unwrap_or(grad_weight))?;
        // SAFETY: `norm_rows_params_<T>(KilnTensor dw, bool want_w, KilnTensor db, bool
        // want_b, KilnTensor g, KilnTensor x, KilnTensor mean, bool has_mean, KilnTensor
        // rstd, long long M, long long N)`: dw / db hold N acc values when wanted (else
        // never written), the rest as in `norm_rows_bwd`; blocks are 32 x 16 threads.
        unsafe {
            kernels::norm_rows_params(
                &gpu,
                op,
                input.dtype(),
                column_tiles(n),
                &dwo,
                want[1],
                &dbo,
                want_b,
                &go,
                &xo,
                &muo,
                has_mean,
                &ro,
                mi,
                ni,
            )
        }?;
    }
    Ok(())
}

/// `native_layer_norm` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn native_layer_norm(
    op: &str,
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    out: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
) -> Result<()> {
    rows_forward(
        op,
        input,
        normalized_shape.len(),
        weight,
        bias,
        eps,
        out,
        Some(mean),
        rstd,
    )
}

/// `native_layer_norm_backward` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn native_layer_norm_backward(
    op: &str,
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[i64],
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    _bias: Option<&Tensor>,
    output_mask: &[bool],
    grad_input: &Tensor,
    grad_weight: &Tensor,
    grad_bias: &Tensor,
) -> Result<()> {
    rows_backward(
        op,
        grad_out,
        input,
        normalized_shape.len(),
        Some(mean),
        rstd,
        weight,
        [output_mask[0], output_mask[1], output_mask[2]],
        grad_input,
        grad_weight,
        Some(grad_bias),
    )
}

/// `_fused_rms_norm` on CUDA; `eps` defaults to the opmath type's machine epsilon.
pub fn fused_rms_norm(
    op: &str,
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    eps: Option<f64>,
    out: &Tensor,
    rstd: &Tensor,
) -> Result<()> {
    let eps = eps.unwrap_or(if input.dtype() == crate::DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    });
    rows_forward(
        op,
        input,
        normalized_shape.len(),
        weight,
        None,
        eps,
        out,
        None,
        rstd,
    )
}

/// `_fused_rms_norm_backward` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn fused_rms_norm_backward(
    op: &str,
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[i64],
    rstd: &Tensor,
    weight: Option<&Tensor>,
    output_mask: &[bool],
    grad_input: &Tensor,
    grad_weight: &Tensor,
) -> Result<()> {
    rows_backward(
        op,
        grad_out,
        input,
        normalized_shape.len(),
        None,
        rstd,
        weight,
        [output_mask[0], output_mask[1], false],
        grad_input,
        grad_weight,
        None,
    )
}

/// `native_group_norm` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm(
    op: &str,
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    eps: f64,
    out: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
) -> Result<()> {
    let rows_n = n.saturating_mul(group) as usize;
    if rows_n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let x = dense(input)?;
    let (w, has_w) = optional(weight, rstd)?;
    let (b, has_b) = optional(bias, rstd)?;
    let (o, mo, ro) = (operand(op, out)?, operand(op, mean)?, operand(op, rstd)?);
    let (xo, wo, bo) = (operand(op, &x)?, operand(op, &w)?, operand(op, &b)?);
    let (ri, cg) = (rows_n as i64, c / group);
    // SAFETY: `group_norm_fwd_<T>(KilnTensor out, KilnTensor mean, KilnTensor rstd,
    // KilnTensor x, KilnTensor w, bool has_w, KilnTensor b, bool has_b, long long rows, long
    // long G, long long Cg, long long HxW, double eps)`: x and out hold rows*Cg*HxW contiguous
    // T (the meta function checked N*C*HxW), mean / rstd `rows`, w / b C acc values.
    unsafe {
        kernels::group_norm_fwd(
            &gpu,
            op,
            input.dtype(),
            rows(rows_n),
            &o,
            &mo,
            &ro,
            &xo,
            &wo,
            has_w,
            &bo,
            has_b,
            ri,
            group,
            cg,
            hxw,
            eps,
        )
    }?;
    Ok(())
}

/// `native_group_norm_backward` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm_backward(
    op: &str,
    grad_out: &Tensor,
    input: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    output_mask: &[bool],
    grad_input: &Tensor,
    grad_weight: &Tensor,
    grad_bias: &Tensor,
) -> Result<()> {
    let rows_n = n.saturating_mul(group) as usize;
    if rows_n == 0 || c == 0 || hxw == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, grad_input)?;
    let (g, x, mu, r) = (dense(grad_out)?, dense(input)?, dense(mean)?, dense(rstd)?);
    let (w, has_w) = optional(weight, &r)?;
    let (go, xo, muo, ro, wo) = (
        operand(op, &g)?,
        operand(op, &x)?,
        operand(op, &mu)?,
        operand(op, &r)?,
        operand(op, &w)?,
    );
    if output_mask[0] {
        let dxo = operand(op, grad_input)?;
        let (ri, cg) = (rows_n as i64, c / group);
        // SAFETY: `group_norm_bwd_<T>(KilnTensor dx, KilnTensor g, KilnTensor x, KilnTensor
        // mean, KilnTensor rstd, KilnTensor w, bool has_w, long long rows, long long G, long
        // long Cg, long long HxW)`: as in `group_norm_fwd`, dx fresh storage like x.
        unsafe {
            kernels::group_norm_bwd(
                &gpu,
                op,
                input.dtype(),
                rows(rows_n),
                &dxo,
                &go,
                &xo,
                &muo,
                &ro,
                &wo,
                has_w,
                ri,
                group,
                cg,
                hxw,
            )
        }?;
    }
    if output_mask[1] || output_mask[2] {
        let (dwo, dbo) = (operand(op, grad_weight)?, operand(op, grad_bias)?);
        // SAFETY: `group_norm_params_<T>(KilnTensor dw, bool want_w, KilnTensor db, bool
        // want_b, KilnTensor g, KilnTensor x, KilnTensor mean, KilnTensor rstd, long long N,
        // long long C, long long G, long long HxW)`: dw / db hold C acc values when wanted.
        unsafe {
            kernels::group_norm_params(
                &gpu,
                op,
                input.dtype(),
                rows(c as usize),
                &dwo,
                output_mask[1],
                &dbo,
                output_mask[2],
                &go,
                &xo,
                &muo,
                &ro,
                n,
                c,
                group,
                hxw,
            )
        }?;
    }
    Ok(())
}

/// `(N, C, HxW)` of a batch norm input `[N, C, *]`.
fn batch_dims(t: &Tensor) -> (usize, usize, usize) {
    let s = t.shape();
    (s[0], s[1], prod(&s[2..]))
}

/// `_native_batch_norm_legit_functional` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_functional(
    op: &str,
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    out: &Tensor,
    save_mean: &Tensor,
    save_invstd: &Tensor,
    running_mean_out: &Tensor,
    running_var_out: &Tensor,
) -> Result<()> {
    let (n, c, hxw) = batch_dims(input);
    if c == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let x = dense(input)?;
    let (ni, ci, hi) = (n as i64, c as i64, hxw as i64);
    let (rm, has_rm) = optional(running_mean, running_mean_out)?;
    let (rv, has_rv) = optional(running_var, running_var_out)?;
    let xo = operand(op, &x)?;
    let (mean, istat) = if training {
        let (smo, sio) = (operand(op, save_mean)?, operand(op, save_invstd)?);
        let (rmo, rvo) = (
            operand(op, running_mean_out)?,
            operand(op, running_var_out)?,
        );
        let (rmi, rvi) = (operand(op, &rm)?, operand(op, &rv)?);
        // SAFETY: `batch_norm_stats_<T>(KilnTensor save_mean, KilnTensor save_invstd,
        // KilnTensor rm_out, bool has_rm, KilnTensor rv_out, bool has_rv, KilnTensor x,
        // KilnTensor rm, KilnTensor rv, long long N, long long C, long long HxW, double
        // momentum, double eps)`: x holds N*C*HxW contiguous T, the statistics C acc
        // values each (running ones only when flagged).
        unsafe {
            kernels::batch_norm_stats(
                &gpu,
                op,
                input.dtype(),
                rows(c),
                &smo,
                &sio,
                &rmo,
                has_rm,
                &rvo,
                has_rv,
                &xo,
                &rmi,
                &rvi,
                ni,
                ci,
                hi,
                momentum,
                eps,
            )
        }?;
        (save_mean.clone(), save_invstd.clone())
    } else {
        // Evaluation: the running statistics (checked present by the meta function) are
        // returned unchanged.
        copy(op, &rm, running_mean_out)?;
        copy(op, &rv, running_var_out)?;
        (rm, rv)
    };
    let total = out.numel();
    if total == 0 {
        return Ok(());
    }
    let (w, has_w) = optional(weight, &mean)?;
    let (b, has_b) = optional(bias, &mean)?;
    let (o, mo, io, wo, bo) = (
        operand(op, out)?,
        operand(op, &mean)?,
        operand(op, &istat)?,
        operand(op, &w)?,
        operand(op, &b)?,
    );
    let from_var = !training;
    let ti = total as i64;
    // SAFETY: `batch_norm_apply_<T>(KilnTensor out, KilnTensor x, KilnTensor mean,
    // KilnTensor istat, bool from_var, KilnTensor w, bool has_w, KilnTensor b, bool has_b,
    // long long n, long long C, long long HxW, double eps)`: out and x hold n contiguous T,
    // the per-channel operands C acc values.
    unsafe {
        kernels::batch_norm_apply(
            &gpu,
            op,
            input.dtype(),
            grid(total),
            &o,
            &xo,
            &mo,
            &io,
            from_var,
            &wo,
            has_w,
            &bo,
            has_b,
            ti,
            ci,
            hi,
            eps,
        )
    }?;
    Ok(())
}

/// `native_batch_norm_backward` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm_backward(
    op: &str,
    grad_out: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    save_mean: Option<&Tensor>,
    save_invstd: Option<&Tensor>,
    train: bool,
    eps: f64,
    output_mask: &[bool],
    grad_input: &Tensor,
    grad_weight: &Tensor,
    grad_bias: &Tensor,
) -> Result<()> {
    let (n, c, hxw) = batch_dims(input);
    if c == 0 {
        return Ok(());
    }
    let (mean, istat) = match (
        train,
        save_mean.zip(save_invstd),
        running_mean.zip(running_var),
    ) {
        (true, Some((m, v)), _) | (false, _, Some((m, v))) => (dense(m)?, dense(v)?),
        _ => {
            return Err(crate::Error::shape(
                op,
                "internal error: batch norm statistics missing",
            ))
        }
    };
    let from_var = !train;
    let gpu = gpu_of(op, grad_input)?;
    let (g, x) = (dense(grad_out)?, dense(input)?);
    let sums = alloc(op, &[2 * c], mean.dtype(), grad_input.device().index())?;
    let (ni, ci, hi) = (n as i64, c as i64, hxw as i64);
    let (go, xo, mo, io, so) = (
        operand(op, &g)?,
        operand(op, &x)?,
        operand(op, &mean)?,
        operand(op, &istat)?,
        operand(op, &sums)?,
    );
    let (dwo, dbo) = (operand(op, grad_weight)?, operand(op, grad_bias)?);
    // SAFETY: `batch_norm_bwd_sums_<T>(KilnTensor sums, KilnTensor dw, bool want_w,
    // KilnTensor db, bool want_b, KilnTensor g, KilnTensor x, KilnTensor mean, KilnTensor
    // istat, bool from_var, long long N, long long C, long long HxW, double eps)`: g and x
    // hold N*C*HxW contiguous T, sums 2*C acc values, mean / istat C, dw / db C when wanted.
    unsafe {
        kernels::batch_norm_bwd_sums(
            &gpu,
            op,
            input.dtype(),
            rows(c),
            &so,
            &dwo,
            output_mask[1],
            &dbo,
            output_mask[2],
            &go,
            &xo,
            &mo,
            &io,
            from_var,
            ni,
            ci,
            hi,
            eps,
        )
    }?;
    let total = grad_input.numel();
    if !output_mask[0] || total == 0 {
        return Ok(());
    }
    let (w, has_w) = optional(weight, &mean)?;
    let (dxo, wo) = (operand(op, grad_input)?, operand(op, &w)?);
    let ti = total as i64;
    // SAFETY: `batch_norm_bwd_dx_<T>(KilnTensor dx, KilnTensor g, KilnTensor x, KilnTensor
    // mean, KilnTensor istat, bool from_var, KilnTensor w, bool has_w, KilnTensor sums, bool
    // train, long long n, long long C, long long HxW, double eps)`: dx, g, x hold n
    // contiguous T, the per-channel operands as in `batch_norm_bwd_sums`.
    unsafe {
        kernels::batch_norm_bwd_dx(
            &gpu,
            op,
            input.dtype(),
            grid(total),
            &dxo,
            &go,
            &xo,
            &mo,
            &io,
            from_var,
            &wo,
            has_w,
            &so,
            train,
            ti,
            ci,
            hi,
            eps,
        )
    }?;
    Ok(())
}
