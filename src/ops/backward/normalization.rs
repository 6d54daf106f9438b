//! Gradients of the normalization kernels (`native_batch_norm`, `native_layer_norm`,
//! `native_group_norm`, `_fused_rms_norm`): the forward ops' gradients call the backward kernels
//! and add the terms of their statistics outputs; the backward kernels' own gradients (double
//! backward) are composites of differentiable ops.

use super::shaping::i64s;
use crate::ops::normalization::prod;
use crate::{Error, Result, Tensor};

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

pub(super) fn grad_at(grads: &[Option<Tensor>], i: usize) -> Option<&Tensor> {
    grads.get(i).and_then(Option::as_ref)
}

pub(super) type Grads3 = (Option<Tensor>, Option<Tensor>, Option<Tensor>);

pub(super) type Grads4 = (
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
    let missing = || Error::shape("native_batch_norm_backward", "batch statistics missing");
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
