//! Normalization layers. The public composites (`batch_norm`, `layer_norm`, `group_norm`,
//! `instance_norm`, `rms_norm`) check their arguments with PyTorch's messages and call the
//! fused kernels of `native_batch_norm`, `native_layer_norm`, `native_group_norm` and
//! `_fused_rms_norm` (kernels/src/cpu/norm.rs, kernels/cuda/norm.cu.j2), which compute in
//! float32 for half inputs. `native_batch_norm` updates the running statistics in place,
//! outside autograd, as PyTorch does.
//!
//! The second half holds the gradient formulas derivatives.yaml names: the forward ops'
//! gradients call the backward kernels and add the terms of their statistics outputs; the
//! backward kernels' own gradients (double backward) are composites of differentiable ops.

use crate::ops::backward::i64s;
use crate::{DType, Error, Result, Tensor};

/// The product of `sizes`, saturating (an empty tensor may have huge other dims).
fn prod(sizes: &[usize]) -> usize {
    sizes.iter().fold(1usize, |a, &b| a.saturating_mul(b))
}

fn check_float(op: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::op(
            op,
            format!(
                "\"{op}\" not implemented for '{}'",
                t.dtype().scalar_type_name()
            ),
        ))
    }
}

/// Checks that `input` ends with `normalized_shape`.
fn trailing_dims(op: &str, input: &Tensor, normalized_shape: &[i64]) -> Result<()> {
    let (k, nd) = (normalized_shape.len(), input.dim());
    if k == 0 || k > nd || i64s(&input.shape()[nd - k..]) != normalized_shape {
        let expected: Vec<String> = normalized_shape.iter().map(|v| v.to_string()).collect();
        return Err(Error::op(
            op,
            format!(
                "Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size{:?}",
                expected.join(", "),
                input.shape()
            ),
        ));
    }
    Ok(())
}

fn check_channels(op: &str, name: &str, v: Option<&Tensor>, c: usize) -> Result<()> {
    match v {
        Some(t) if t.numel() != c => Err(Error::op(
            op,
            format!("{name} should contain {c} elements not {}", t.numel()),
        )),
        _ => Ok(()),
    }
}

/// Locks serialising running-statistic updates, picked by the statistic's storage: a
/// read-modify-write of one statistic by two threads (a BatchNorm shared between them) must
/// not lose either update. Only the small `[C]` update runs under the lock, and no code
/// takes two of these at once.
static STAT_LOCKS: [std::sync::Mutex<()>; 64] = [const { std::sync::Mutex::new(()) }; 64];

/// `stat = (1 - momentum) * stat + momentum * batch` in place, outside autograd, with
/// the kernel's arithmetic (in `batch`'s dtype, the opmath one: `1 - momentum` rounded
/// there, then the two products rounded and added), atomic with respect to other updates of
/// `stat`. The write leaves `stat`'s version alone, as PyTorch's kernel does (autograd may
/// have saved it).
fn update_stat(stat: &Tensor, batch: &Tensor, momentum: f64) -> Result<()> {
    let _g = crate::no_grad();
    let dt = batch.dtype();
    let keep = if dt == DType::F64 {
        1.0 - momentum
    } else {
        (1.0f32 - momentum as f32) as f64
    };
    let batch = batch.detach().reshape(i64s(stat.shape()))?;
    let key = std::sync::Arc::as_ptr(stat.storage()) as usize;
    let lock = &STAT_LOCKS[(key >> 6) % STAT_LOCKS.len()];
    let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
    let new = stat
        .to_dtype(dt)?
        .mul_scalar(keep)?
        .add_with(&batch, momentum)?;
    stat.copy_data_from(&new)
}

/// `batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
/// cudnn_enabled)`: normalizes each channel (dim 1) over the batch and spatial dims. In
/// training the batch statistics are used and the running ones updated (the variance
/// unbiased); in evaluation the running statistics are used. `native_batch_norm` computes it.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    let _ = cudnn_enabled;
    let op = "batch_norm";
    if input.numel() == 0 {
        // PyTorch returns a copy (not a view, not a fresh empty tensor, so the graph stays
        // connected) times `weight[0]` plus `bias[0]`, before any other check; the running
        // statistics are left alone.
        let mut out = input.clone_tensor()?;
        if let Some(w) = weight {
            out = out.mul(&w.select(0, 0)?)?;
        }
        if let Some(b) = bias {
            out = out.add(&b.select(0, 0)?)?;
        }
        return Ok(out);
    }
    check_float(op, input)?;
    if input.dim() < 2 {
        return Err(Error::op(
            op,
            format!("expected 2D or higher input (got {}D input)", input.dim()),
        ));
    }
    let c = input.shape()[1];
    for (name, v) in [
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ] {
        check_channels(op, name, v, c)?;
    }
    if training && input.numel() / c.max(1) == 1 {
        return Err(Error::op(
            op,
            format!(
                "Expected more than 1 value per channel when training, got input size {:?}",
                input.shape()
            ),
        ));
    }
    if !training && (running_mean.is_none() || running_var.is_none()) {
        return Err(Error::op(
            op,
            "running_mean and running_var must be defined in evaluation mode",
        ));
    }
    let (y, _, _) = crate::native_batch_norm(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )?;
    Ok(y)
}

/// `native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
/// eps) -> (out, save_mean, save_invstd)`: batch norm by the fused kernel of
/// `_native_batch_norm_legit_functional`; in training the running statistics it returns are
/// written into `running_mean` / `running_var` in place (no autograd), as PyTorch's kernel
/// updates them. `save_mean` / `save_invstd` are the batch's (opmath dtype, `[C]`) in
/// training and `[0]` in evaluation.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    // In training the kernel is given zeros for the running statistics and momentum 1, so
    // the "new running statistics" it returns are exactly the batch mean and unbiased
    // variance (`0 * 0 + 1 * batch`); `update_stat` then folds them into the real ones in
    // one locked step. (Handing the kernel the real statistics and writing its result back
    // would drop an update another thread made in between.)
    let fresh = |t: Option<&Tensor>| t.map(|t| t.zeros_like()).transpose();
    let (zero_mean, zero_var) = if training {
        (fresh(running_mean)?, fresh(running_var)?)
    } else {
        (None, None)
    };
    let (rm, rv, m) = if training {
        (zero_mean.as_ref(), zero_var.as_ref(), 1.0)
    } else {
        (running_mean, running_var, momentum)
    };
    let (out, save_mean, save_invstd, batch_mean, batch_var) = {
        let _g = crate::no_grad();
        crate::_native_batch_norm_legit_functional(input, weight, bias, rm, rv, training, m, eps)?
    };
    // An empty batch leaves the running statistics as they are (the kernel's rule).
    if training && input.numel() > 0 {
        for (stat, value) in [(running_mean, &batch_mean), (running_var, &batch_var)] {
            if let Some(s) = stat {
                update_stat(s, value, momentum)?;
            }
        }
    }
    Ok((out, save_mean, save_invstd))
}

/// `layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)`: normalizes over
/// the trailing `normalized_shape` dims (`native_layer_norm`).
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    cudnn_enable: bool,
) -> Result<Tensor> {
    let _ = cudnn_enable;
    let op = "layer_norm";
    check_float(op, input)?;
    trailing_dims(op, input, normalized_shape)?;
    for (name, v) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = v {
            if i64s(t.shape()) != normalized_shape {
                return Err(Error::op(
                    op,
                    format!("Expected {name} to be of same shape as normalized_shape, but got {name} of shape {:?} and normalized_shape = {normalized_shape:?}", t.shape()),
                ));
            }
        }
    }
    let (y, _, _) = crate::native_layer_norm(input, normalized_shape, weight, bias, eps)?;
    Ok(y)
}

/// `group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)`: normalizes each group
/// of channels over the group's channels and the spatial dims (`native_group_norm`).
pub fn group_norm(
    input: &Tensor,
    num_groups: i64,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    let _ = cudnn_enabled;
    let op = "group_norm";
    check_float(op, input)?;
    if input.dim() < 2 {
        return Err(Error::op(
            op,
            format!(
                "Expected at least 2 dimensions for input tensor but received {}",
                input.dim()
            ),
        ));
    }
    let (n, c) = (input.shape()[0], input.shape()[1]);
    if c == 0 {
        return Err(Error::op(
            op,
            "Expected number of channels to be greater than 0, got 0",
        ));
    }
    if num_groups <= 0 {
        return Err(Error::op(
            op,
            format!("Expected num groups to be greater than 0, got {num_groups}"),
        ));
    }
    if c as i64 % num_groups != 0 {
        return Err(Error::op(
            op,
            format!(
                "Expected number of channels in input to be divisible by num_groups, but got input of shape {:?} and num_groups={num_groups}",
                input.shape()
            ),
        ));
    }
    for (name, v) in [("weight", weight), ("bias", bias)] {
        check_channels(op, name, v, c)?;
    }
    let hxw = prod(&input.shape()[2..]);
    if hxw == 0 {
        return Err(Error::op(op, "Expected HxW to be greater than 0, got 0"));
    }
    // Any C-element parameter shape is accepted here, as before; the kernel takes vectors.
    let flat = |v: Option<&Tensor>| v.map(|t| t.reshape([-1])).transpose();
    let (w, b) = (flat(weight)?, flat(bias)?);
    let (y, _, _) = crate::native_group_norm(
        input,
        w.as_ref(),
        b.as_ref(),
        n as i64,
        c as i64,
        hxw as i64,
        num_groups,
        eps,
    )?;
    Ok(y)
}

/// `instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
/// eps, cudnn_enabled)`: batch norm of each sample on its own (the running statistics are
/// updated with the mean over the batch).
#[allow(clippy::too_many_arguments)]
pub fn instance_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    let op = "instance_norm";
    if input.dim() < 3 {
        return Err(Error::op(
            op,
            format!(
                "expected an input with at least 3 dims [N, C, *], got {:?}",
                input.shape()
            ),
        ));
    }
    let (n, c) = (input.shape()[0], input.shape()[1]);
    let mut shape = vec![1i64, n.saturating_mul(c) as i64];
    shape.extend(i64s(&input.shape()[2..]));
    let x = input.reshape(&shape)?;
    let repeat = |v: Option<&Tensor>| -> Result<Option<Tensor>> {
        v.map(|t| t.repeat([n as i64])).transpose()
    };
    let (rm, rv) = (repeat(running_mean)?, repeat(running_var)?);
    // As PyTorch: the affine parameters repeated per instance go into the one batch norm
    // (a half input is then rounded once, not again after a separate scale and shift).
    let (w, b) = (repeat(weight)?, repeat(bias)?);
    let y = batch_norm(
        &x,
        w.as_ref(),
        b.as_ref(),
        rm.as_ref(),
        rv.as_ref(),
        use_input_stats,
        momentum,
        eps,
        cudnn_enabled,
    )?;
    // Fold the per-instance running statistics back into the per-channel ones.
    for (stat, rep) in [(running_mean, &rm), (running_var, &rv)] {
        if let (Some(s), Some(r)) = (stat, rep) {
            let _g = crate::no_grad();
            let mean = crate::mean_dim_with(&r.reshape([n as i64, c as i64])?, &[0], false, None)?;
            s.copy_data_from(&mean)?;
        }
    }
    y.reshape(i64s(input.shape()))
}

/// `rms_norm(input, normalized_shape, weight, eps)`: `x / sqrt(mean(x²) + eps) * weight`
/// over the trailing dims (`_fused_rms_norm`); `eps` defaults to the input dtype's machine
/// epsilon.
pub fn rms_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    let op = "rms_norm";
    check_float(op, input)?;
    trailing_dims(op, input, normalized_shape)?;
    let eps = eps.unwrap_or(match input.dtype() {
        DType::F16 => 0.0009765625,
        DType::BF16 => 0.0078125,
        DType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    });
    let (y, _) = crate::_fused_rms_norm(input, normalized_shape, weight, Some(eps))?;
    Ok(y)
}

// ---------------------------------------------------------------------------------------
// Gradient formulas (derivatives.yaml)
// ---------------------------------------------------------------------------------------

/// A normalization as its gradient formulas see it: the input `x` viewed so that the
/// statistics (`mean`, `rstd`, kept dims of size 1) and the parameter `w` broadcast against
/// it; `row_dims` are the dims one statistic covers (`n` elements), `w_dims` the dims a
/// parameter gradient sums over.
struct NormView {
    x: Tensor,
    /// `None` for RMS norm, whose rows are not centred.
    mean: Option<Tensor>,
    rstd: Tensor,
    w: Option<Tensor>,
    row_dims: Vec<i64>,
    w_dims: Vec<i64>,
    n: f64,
}

/// The five gradients of a backward kernel `(g, x, mean, rstd, w) -> (dx, dw, db)`:
/// `[d grad_out, d input, d mean, d rstd, d weight]`, each `None` when nothing flows to it.
type NormVjp = [Option<Tensor>; 5];

fn add_into(slot: &mut Option<Tensor>, t: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        Some(s) => s.add(&t)?,
        None => t,
    });
    Ok(())
}

fn reshaped(t: Option<Tensor>, like: &[usize]) -> Result<Option<Tensor>> {
    t.map(|t| t.reshape(i64s(like))).transpose()
}

/// `grads[i]` of a backward op, when that op computed output `i` (`output_mask`), viewed as
/// `shape`.
fn masked_grad(
    grads: &[Option<Tensor>],
    output_mask: &[bool],
    i: usize,
    shape: &[i64],
) -> Result<Option<Tensor>> {
    match grads.get(i) {
        Some(Some(g)) if output_mask.get(i) == Some(&true) => g.reshape(shape).map(Some),
        _ => Ok(None),
    }
}

impl NormView {
    fn rsum(&self, t: &Tensor) -> Result<Tensor> {
        t.sum_dim_with(&self.row_dims, true, None)
    }

    fn centred(&self) -> Result<Tensor> {
        match &self.mean {
            Some(m) => self.x.sub(m),
            None => Ok(self.x.clone()),
        }
    }

    /// The input gradient the statistics outputs carry back: `d mean / dx = 1 / n` and
    /// `d rstd / dx = -rstd³ (x - mean) / n` (the variance's dependence on the mean cancels).
    fn stats_input_grad(&self, gm: Option<&Tensor>, gr: Option<&Tensor>) -> Result<Option<Tensor>> {
        let mut dx = None;
        if let Some(gm) = gm {
            add_into(&mut dx, gm.div_scalar(self.n)?.expand_as(&self.x)?)?;
        }
        if let Some(gr) = gr {
            let k = gr.mul(&self.rstd.pow_scalar(3)?)?.div_scalar(-self.n)?;
            add_into(&mut dx, self.centred()?.mul(&k)?)?;
        }
        Ok(dx)
    }

    /// The vector-Jacobian product of the backward kernel, with the statistics taken as
    /// independent inputs: `xhat = (x - mean) * rstd`, `a = g * w`, and
    /// `dx = rstd * (a - mean(a) - xhat * mean(a * xhat))` when `train` (RMS norm: no
    /// `mean(a)`), `dx = rstd * a` otherwise (batch norm in evaluation); `dw = Σ g * xhat`,
    /// `db = Σ g`. `u`, `v`, `z` are the gradients of `dx`, `dw`, `db`.
    fn backward_vjp(
        &self,
        g: &Tensor,
        train: bool,
        u: Option<&Tensor>,
        v: Option<&Tensor>,
        z: Option<&Tensor>,
    ) -> Result<NormVjp> {
        let n = self.n;
        let xc = self.centred()?;
        let xhat = xc.mul(&self.rstd)?;
        let a = match &self.w {
            Some(w) => g.mul(w)?,
            None => g.clone(),
        };
        let (mut dg, mut da, mut dxhat, mut drstd) = (None, None, None, None);
        if let Some(u) = u {
            let c = u.mul(&self.rstd)?;
            if train {
                let s2 = self.rsum(&a.mul(&xhat)?)?.div_scalar(n)?;
                let mut bracket = a.sub(&xhat.mul(&s2)?)?;
                add_into(&mut da, c.clone())?;
                if self.mean.is_some() {
                    bracket = bracket.sub(&self.rsum(&a)?.div_scalar(n)?)?;
                    add_into(&mut da, self.rsum(&c)?.div_scalar(-n)?.expand_as(&c)?)?;
                }
                add_into(&mut drstd, self.rsum(&u.mul(&bracket)?)?)?;
                let ds2 = self.rsum(&c.mul(&xhat)?)?.div_scalar(-n)?;
                add_into(&mut da, ds2.mul(&xhat)?)?;
                add_into(&mut dxhat, ds2.mul(&a)?.sub(&c.mul(&s2)?)?)?;
            } else {
                add_into(&mut drstd, self.rsum(&u.mul(&a)?)?)?;
                add_into(&mut da, c)?;
            }
        }
        if let Some(v) = v {
            add_into(&mut dg, v.mul(&xhat)?)?;
            add_into(&mut dxhat, v.mul(g)?)?;
        }
        if let Some(z) = z {
            add_into(&mut dg, z.expand_as(g)?)?;
        }
        let mut dw = None;
        if let Some(da) = da {
            if let Some(w) = &self.w {
                dw = Some(da.mul(g)?.sum_dim_with(&self.w_dims, true, None)?);
                add_into(&mut dg, da.mul(w)?)?;
            } else {
                add_into(&mut dg, da)?;
            }
        }
        let (mut dx, mut dmean) = (None, None);
        if let Some(dxhat) = dxhat {
            let d = dxhat.mul(&self.rstd)?;
            if self.mean.is_some() {
                dmean = Some(self.rsum(&d)?.neg()?);
            }
            add_into(&mut drstd, self.rsum(&dxhat.mul(&xc)?)?)?;
            dx = Some(d);
        }
        Ok([dg, dx, dmean, drstd, dw])
    }
}

/// `(M, N)` of a layer / RMS norm input: rows before the normalized dims, elements in them.
fn rows_of(input: &Tensor, normalized_shape: &[i64]) -> (i64, i64) {
    let axis = input.dim().saturating_sub(normalized_shape.len());
    let (m, n) = (prod(&input.shape()[..axis]), prod(&input.shape()[axis..]));
    (m as i64, n as i64)
}

fn rows_view(
    input: &Tensor,
    normalized_shape: &[i64],
    mean: Option<&Tensor>,
    rstd: &Tensor,
    weight: Option<&Tensor>,
) -> Result<NormView> {
    let (m, n) = rows_of(input, normalized_shape);
    Ok(NormView {
        x: input.reshape([m, n])?,
        mean: mean.map(|t| t.reshape([m, 1])).transpose()?,
        rstd: rstd.reshape([m, 1])?,
        w: weight.map(|t| t.reshape([1, n])).transpose()?,
        row_dims: vec![1],
        w_dims: vec![0],
        n: n as f64,
    })
}

/// `dx += (gradients of the statistics outputs)`, in the input's shape.
fn add_stats_grad(
    dx: Option<Tensor>,
    view: &NormView,
    input: &Tensor,
    gm: Option<&Tensor>,
    gr: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    // The statistics have the shape of `rstd` in the view.
    let stat = i64s(view.rstd.shape());
    let gm = gm.map(|g| g.reshape(&stat)).transpose()?;
    let gr = gr.map(|g| g.reshape(&stat)).transpose()?;
    let Some(extra) = view.stats_input_grad(gm.as_ref(), gr.as_ref())? else {
        return Ok(dx);
    };
    let extra = extra.reshape(i64s(input.shape()))?;
    Ok(Some(match dx {
        Some(d) => d.add(&extra)?,
        None => extra,
    }))
}

fn grad_at(grads: &[Option<Tensor>], i: usize) -> Option<&Tensor> {
    grads.get(i).and_then(Option::as_ref)
}

type Grads3 = (Option<Tensor>, Option<Tensor>, Option<Tensor>);
type Grads4 = (
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
);
type Grads5 = (
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
);
type Grads7 = (
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
    Option<Tensor>,
);

/// `native_layer_norm`'s gradients for (input, weight, bias): the backward kernel on the
/// output's gradient, plus the terms of the mean and rstd outputs' gradients.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_grads(
    grads: &[Option<Tensor>],
    input: &Tensor,
    normalized_shape: &[i64],
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    grad_input_mask: [bool; 3],
) -> Result<Grads3> {
    let (mut dx, mut dw, mut db) = (None, None, None);
    if let Some(g) = grad_at(grads, 0) {
        let (a, b, c) = crate::native_layer_norm_backward(
            g,
            input,
            normalized_shape,
            mean,
            rstd,
            weight,
            bias,
            &grad_input_mask,
        )?;
        dx = grad_input_mask[0].then_some(a);
        dw = grad_input_mask[1].then_some(b);
        db = grad_input_mask[2].then_some(c);
    }
    if grad_input_mask[0] {
        let view = rows_view(input, normalized_shape, Some(mean), rstd, None)?;
        dx = add_stats_grad(dx, &view, input, grad_at(grads, 1), grad_at(grads, 2))?;
    }
    Ok((dx, dw, db))
}

/// Gradients of `native_layer_norm_backward` for (grad_out, input, mean, rstd, weight), the
/// statistics taken as independent inputs (their dependence on the input reaches it
/// through `native_layer_norm`'s own formula).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_double_backward(
    grads: &[Option<Tensor>],
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[i64],
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    output_mask: &[bool],
) -> Result<Grads5> {
    let view = rows_view(input, normalized_shape, Some(mean), rstd, weight)?;
    let (m, n) = rows_of(input, normalized_shape);
    let u = masked_grad(grads, output_mask, 0, &[m, n])?;
    let v = masked_grad(grads, output_mask, 1, &[1, n])?;
    let z = masked_grad(grads, output_mask, 2, &[1, n])?;
    let g = grad_out.reshape([m, n])?;
    let [dg, dx, dm, dr, dw] = view.backward_vjp(&g, true, u.as_ref(), v.as_ref(), z.as_ref())?;
    Ok((
        reshaped(dg, grad_out.shape())?,
        reshaped(dx, input.shape())?,
        reshaped(dm, mean.shape())?,
        reshaped(dr, rstd.shape())?,
        match weight {
            Some(w) => reshaped(dw, w.shape())?,
            None => None,
        },
    ))
}

/// `_fused_rms_norm`'s gradients for (input, weight).
pub fn rms_norm_grads(
    grads: &[Option<Tensor>],
    input: &Tensor,
    normalized_shape: &[i64],
    rstd: &Tensor,
    weight: Option<&Tensor>,
    grad_input_mask: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (mut dx, mut dw) = (None, None);
    if let Some(g) = grad_at(grads, 0) {
        let (a, b) = crate::_fused_rms_norm_backward(
            g,
            input,
            normalized_shape,
            rstd,
            weight,
            &grad_input_mask,
        )?;
        dx = grad_input_mask[0].then_some(a);
        dw = grad_input_mask[1].then_some(b);
    }
    if grad_input_mask[0] {
        let view = rows_view(input, normalized_shape, None, rstd, None)?;
        dx = add_stats_grad(dx, &view, input, None, grad_at(grads, 1))?;
    }
    Ok((dx, dw))
}

/// Gradients of `_fused_rms_norm_backward` for (grad_out, input, rstd, weight).
pub fn rms_norm_double_backward(
    grads: &[Option<Tensor>],
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[i64],
    rstd: &Tensor,
    weight: Option<&Tensor>,
    output_mask: &[bool],
) -> Result<Grads4> {
    let view = rows_view(input, normalized_shape, None, rstd, weight)?;
    let (m, n) = rows_of(input, normalized_shape);
    let u = masked_grad(grads, output_mask, 0, &[m, n])?;
    let v = masked_grad(grads, output_mask, 1, &[1, n])?;
    let g = grad_out.reshape([m, n])?;
    let [dg, dx, _, dr, dw] = view.backward_vjp(&g, true, u.as_ref(), v.as_ref(), None)?;
    Ok((
        reshaped(dg, grad_out.shape())?,
        reshaped(dx, input.shape())?,
        reshaped(dr, rstd.shape())?,
        match weight {
            Some(w) => reshaped(dw, w.shape())?,
            None => None,
        },
    ))
}

/// Group norm as `[N, group, C / group, HxW]`, statistics `[N, group, 1, 1]`, the weight
/// `[1, group, C / group, 1]`.
#[allow(clippy::too_many_arguments)]
fn group_view(
    input: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
) -> Result<NormView> {
    let cg = c / group.max(1);
    Ok(NormView {
        x: input.reshape([n, group, cg, hxw])?,
        mean: Some(mean.reshape([n, group, 1, 1])?),
        rstd: rstd.reshape([n, group, 1, 1])?,
        w: weight.map(|t| t.reshape([1, group, cg, 1])).transpose()?,
        row_dims: vec![2, 3],
        w_dims: vec![0, 3],
        n: cg.saturating_mul(hxw) as f64,
    })
}

/// `native_group_norm`'s gradients for (input, weight, bias).
#[allow(clippy::too_many_arguments, non_snake_case)]
pub fn group_norm_grads(
    grads: &[Option<Tensor>],
    input: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    N: i64,
    C: i64,
    HxW: i64,
    group: i64,
    grad_input_mask: [bool; 3],
) -> Result<Grads3> {
    let (mut dx, mut dw, mut db) = (None, None, None);
    if let Some(g) = grad_at(grads, 0) {
        let (a, b, c) = crate::native_group_norm_backward(
            g,
            input,
            mean,
            rstd,
            weight,
            N,
            C,
            HxW,
            group,
            &grad_input_mask,
        )?;
        dx = grad_input_mask[0].then_some(a);
        dw = grad_input_mask[1].then_some(b);
        db = grad_input_mask[2].then_some(c);
    }
    if grad_input_mask[0] {
        let view = group_view(input, mean, rstd, None, N, C, HxW, group)?;
        dx = add_stats_grad(dx, &view, input, grad_at(grads, 1), grad_at(grads, 2))?;
    }
    Ok((dx, dw, db))
}

/// Gradients of `native_group_norm_backward` for (grad_out, input, mean, rstd, weight).
#[allow(clippy::too_many_arguments, non_snake_case)]
pub fn group_norm_double_backward(
    grads: &[Option<Tensor>],
    grad_out: &Tensor,
    input: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    N: i64,
    C: i64,
    HxW: i64,
    group: i64,
    output_mask: &[bool],
) -> Result<Grads5> {
    let view = group_view(input, mean, rstd, weight, N, C, HxW, group)?;
    let cg = C / group.max(1);
    let x4 = [N, group, cg, HxW];
    let w4 = [1, group, cg, 1];
    let u = masked_grad(grads, output_mask, 0, &x4)?;
    let v = masked_grad(grads, output_mask, 1, &w4)?;
    let z = masked_grad(grads, output_mask, 2, &w4)?;
    let g = grad_out.reshape(x4)?;
    let [dg, dx, dm, dr, dw] = view.backward_vjp(&g, true, u.as_ref(), v.as_ref(), z.as_ref())?;
    Ok((
        reshaped(dg, grad_out.shape())?,
        reshaped(dx, input.shape())?,
        reshaped(dm, mean.shape())?,
        reshaped(dr, rstd.shape())?,
        match weight {
            Some(w) => reshaped(dw, w.shape())?,
            None => None,
        },
    ))
}

/// `(N, C, HxW)` of a batch norm input.
fn batch_dims(input: &Tensor) -> (i64, i64, i64) {
    let s = input.shape();
    let hxw = s.get(2..).map_or(1, prod);
    (
        s.first().copied().unwrap_or(0) as i64,
        s.get(1).copied().unwrap_or(0) as i64,
        hxw as i64,
    )
}

/// Batch norm as `[N, C, HxW]` with per-channel `[1, C, 1]` statistics and weight.
fn batch_view(
    input: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
) -> Result<NormView> {
    let (n, c, hxw) = batch_dims(input);
    let ch = [1, c, 1];
    Ok(NormView {
        x: input.reshape([n, c, hxw])?,
        mean: Some(mean.reshape(ch)?),
        rstd: rstd.reshape(ch)?,
        w: weight.map(|t| t.reshape(ch)).transpose()?,
        row_dims: vec![0, 2],
        w_dims: vec![0, 2],
        n: n.saturating_mul(hxw) as f64,
    })
}

/// `(running_var + eps)^(-1/2)`, differentiable in `running_var`.
fn running_invstd(running_var: &Tensor, eps: f64) -> Result<Tensor> {
    running_var.add_scalar(eps)?.rsqrt()
}

/// Gradients of `native_batch_norm` and `_native_batch_norm_legit_functional` for (input,
/// weight, bias, running_mean, running_var). `grads` holds the output's and the saved
/// statistics' gradients, then (functional op) those of the new running statistics:
/// `(1 - momentum) * running + momentum * batch statistic`, the variance unbiased. In
/// evaluation the output depends on the running statistics, which get their gradients.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_grads(
    grads: &[Option<Tensor>],
    input: &Tensor,
    weight: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    save_mean: &Tensor,
    save_invstd: &Tensor,
    training: bool,
    momentum: f64,
    eps: f64,
    grad_input_mask: [bool; 5],
) -> Result<Grads5> {
    let mask3 = [grad_input_mask[0], grad_input_mask[1], grad_input_mask[2]];
    let (mut dx, mut dw, mut db) = (None, None, None);
    let g0 = grad_at(grads, 0);
    if let Some(g) = g0 {
        let (a, b, c) = crate::native_batch_norm_backward(
            g,
            input,
            weight,
            running_mean,
            running_var,
            Some(save_mean),
            Some(save_invstd),
            training,
            eps,
            &mask3,
        )?;
        dx = mask3[0].then_some(a);
        dw = mask3[1].then_some(b);
        db = mask3[2].then_some(c);
    }
    let (mut drm, mut drv) = (None, None);
    // Without running statistics their outputs are `[0]` and carry nothing.
    let gm_out = grad_at(grads, 3).filter(|_| running_mean.is_some());
    let gv_out = grad_at(grads, 4).filter(|_| running_var.is_some());
    let (n, c, hxw) = batch_dims(input);
    let ch = [1, c, 1];
    if training {
        if grad_input_mask[0] {
            let view = batch_view(input, save_mean, save_invstd, None)?;
            dx = add_stats_grad(dx, &view, input, grad_at(grads, 1), grad_at(grads, 2))?;
            // The new running statistics: d mean / dx = 1 / n, d unbiased var / dx =
            // 2 (x - mean) / (n - 1).
            let cnt = n.saturating_mul(hxw) as f64;
            let mut extra = None;
            if let Some(gm) = gm_out {
                let k = gm.reshape(ch)?.mul_scalar(momentum / cnt)?;
                add_into(&mut extra, k.expand_as(&view.x)?)?;
            }
            if let Some(gv) = gv_out {
                let k = gv.reshape(ch)?.mul_scalar(2.0 * momentum / (cnt - 1.0))?;
                add_into(&mut extra, view.centred()?.mul(&k)?)?;
            }
            if let Some(e) = extra {
                let e = e.reshape(i64s(input.shape()))?;
                dx = Some(match dx {
                    Some(d) => d.add(&e)?,
                    None => e,
                });
            }
        }
        if let Some(gm) = gm_out {
            drm = Some(gm.mul_scalar(1.0 - momentum)?);
        }
        if let Some(gv) = gv_out {
            drv = Some(gv.mul_scalar(1.0 - momentum)?);
        }
    } else {
        if let (Some(g), Some(rm), Some(rv)) = (g0, running_mean, running_var) {
            if grad_input_mask[3] || grad_input_mask[4] {
                let inv = running_invstd(rv, eps)?.reshape(ch)?;
                let g3 = g.reshape([n, c, hxw])?;
                let a = match weight {
                    Some(w) => g3.mul(&w.reshape(ch)?)?,
                    None => g3,
                };
                let dims = [0i64, 2];
                if grad_input_mask[3] {
                    let t = a.sum_dim_with(&dims, true, None)?.mul(&inv)?.neg()?;
                    drm = Some(t.reshape(i64s(rm.shape()))?);
                }
                if grad_input_mask[4] {
                    let xc = input.reshape([n, c, hxw])?.sub(&rm.reshape(ch)?)?;
                    let t = a
                        .mul(&xc)?
                        .sum_dim_with(&dims, true, None)?
                        .mul(&inv.pow_scalar(3)?)?
                        .mul_scalar(-0.5)?;
                    drv = Some(t.reshape(i64s(rv.shape()))?);
                }
            }
        }
        // The functional op returns the running statistics unchanged.
        if let Some(gm) = gm_out {
            add_into(&mut drm, gm.clone())?;
        }
        if let Some(gv) = gv_out {
            add_into(&mut drv, gv.clone())?;
        }
    }
    let keep = |t: Option<Tensor>, like: Option<&Tensor>, i: usize| -> Result<Option<Tensor>> {
        match (t, like) {
            (Some(t), Some(l)) if grad_input_mask[i] => t.reshape(i64s(l.shape())).map(Some),
            _ => Ok(None),
        }
    };
    Ok((
        dx,
        dw,
        db,
        keep(drm, running_mean, 3)?,
        keep(drv, running_var, 4)?,
    ))
}

/// Gradients of `native_batch_norm_backward` for (grad_out, input, weight, running_mean,
/// running_var, save_mean, save_invstd): in training the saved statistics are the
/// independent inputs, in evaluation the running ones (through `(running_var + eps)^-1/2`).
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_double_backward(
    grads: &[Option<Tensor>],
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
) -> Result<Grads7> {
    let (n, c, hxw) = batch_dims(input);
    let missing = || Error::op("native_batch_norm_backward", "batch statistics missing");
    let (mean, rstd) = if train {
        (
            save_mean.ok_or_else(missing)?.clone(),
            save_invstd.ok_or_else(missing)?.clone(),
        )
    } else {
        (
            running_mean.ok_or_else(missing)?.clone(),
            running_invstd(running_var.ok_or_else(missing)?, eps)?,
        )
    };
    let view = batch_view(input, &mean, &rstd, weight)?;
    let x3 = [n, c, hxw];
    let ch = [1, c, 1];
    let u = masked_grad(grads, output_mask, 0, &x3)?;
    let v = masked_grad(grads, output_mask, 1, &ch)?;
    let z = masked_grad(grads, output_mask, 2, &ch)?;
    let g = grad_out.reshape(x3)?;
    let [dg, dx, dm, dr, dw] = view.backward_vjp(&g, train, u.as_ref(), v.as_ref(), z.as_ref())?;
    let like = |t: Option<Tensor>, l: Option<&Tensor>| -> Result<Option<Tensor>> {
        match l {
            Some(l) => reshaped(t, l.shape()),
            None => Ok(None),
        }
    };
    let (drm, drv, dsm, dsi) = if train {
        (None, None, like(dm, save_mean)?, like(dr, save_invstd)?)
    } else {
        // d rstd / d running_var = -rstd³ / 2.
        let drv = dr
            .map(|d| d.mul(&view.rstd.pow_scalar(3)?)?.mul_scalar(-0.5))
            .transpose()?;
        (like(dm, running_mean)?, like(drv, running_var)?, None, None)
    };
    Ok((
        reshaped(dg, grad_out.shape())?,
        reshaped(dx, input.shape())?,
        like(dw, weight)?,
        drm,
        drv,
        dsm,
        dsi,
    ))
}
