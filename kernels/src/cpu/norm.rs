//! Normalization layers as fused forward and backward kernels, as ATen writes them:
//! `native_layer_norm`, `native_group_norm`, `_native_batch_norm_legit_functional` (the
//! kernel behind `native_batch_norm`) and `_fused_rms_norm`, each with its backward.
//!
//! Every kernel computes in `T::Compute` (float32 for f16/bf16, float64 for f64: PyTorch's
//! opmath/acc type). Parameters (weight, bias, running statistics), the statistics a forward
//! returns (mean, rstd, the batch's mean and inverse std) and the parameter gradients are
//! in that type too (`fixed: {..: opmath}` in native_functions.yaml), so a half-precision
//! layer keeps float32 statistics and never rounds them before the backward reads them.
//!
//! Statistics are two-pass: the mean, then the mean of squared deviations, over a row that
//! is in cache by then. Sums run over eight independent lanes, which lets the adds vectorise
//! and keeps the rounding error growing with n/8 rather than n.
//!
//! Layouts, all row-major after `row_major`:
//! - layer and RMS norm: `M` rows of `N` elements (the trailing `normalized_shape` dims);
//! - group norm: `N * group` rows of `C / group * HxW` elements; channel `c` of a row is a
//!   run of `HxW` elements;
//! - batch norm: `N * C` planes of `HxW` elements (dims 2..), channel `c` is every plane
//!   `n * C + c`.
//!
//! Work is split over rows (planes for batch norm); parameter gradients, which sum over
//! rows, are accumulated into at most [`MAX_PARTS`] partial sums chosen from the sizes alone,
//! so results do not depend on the number of threads.

use crate::cpu::pointwise::PARALLEL_MIN;
use crate::cpu::shape::{contiguous_out, dense_out, row_major};
use crate::parallel::{fan_out, par_chunks_mut, par_chunks_mut2_by, Chunks2Fn};
use crate::KernelError;
use crate::{Arith, DType, Dst, Element, FloatMath, KResult, Src};
use std::borrow::Cow;

/// The compute type of `T`.
type Acc<T> = <T as Element>::Compute;

/// Independent accumulators of a row sum.
const LANES: usize = 8;
/// Input elements per parallel task when a task covers several rows.
const TASK_WORK: usize = 1 << 14;
/// The most row ranges whose parameter-gradient partial sums are kept.
const MAX_PARTS: usize = 64;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

#[inline(always)]
fn combine<C: Arith>(acc: [C; LANES]) -> C {
    let a = acc[0].add(acc[4]).add(acc[1].add(acc[5]));
    let b = acc[2].add(acc[6]).add(acc[3].add(acc[7]));
    a.add(b)
}

/// `Σ f(a[i])` over eight lanes.
#[inline(always)]
fn sum1<A: Copy, C: Arith>(a: &[A], f: impl Fn(A) -> C) -> C {
    let mut acc = [C::zero(); LANES];
    let mut it = a.chunks_exact(LANES);
    for ch in &mut it {
        for k in 0..LANES {
            acc[k] = acc[k].add(f(ch[k]));
        }
    }
    let mut tail = C::zero();
    for &v in it.remainder() {
        tail = tail.add(f(v));
    }
    combine(acc).add(tail)
}

/// `Σ f(a[i], b[i])` over eight lanes; `a` and `b` have the same length.
#[inline(always)]
fn sum2<A: Copy, B: Copy, C: Arith>(a: &[A], b: &[B], f: impl Fn(A, B) -> C) -> C {
    let mut acc = [C::zero(); LANES];
    let mut ia = a.chunks_exact(LANES);
    let mut ib = b.chunks_exact(LANES);
    for (ca, cb) in (&mut ia).zip(&mut ib) {
        for k in 0..LANES {
            acc[k] = acc[k].add(f(ca[k], cb[k]));
        }
    }
    let mut tail = C::zero();
    for (&x, &y) in ia.remainder().iter().zip(ib.remainder()) {
        tail = tail.add(f(x, y));
    }
    combine(acc).add(tail)
}

/// `f(i, piece)` for each `chunk`-element piece of `a`, over kiln's pool when `parallel`.
fn chunks1<A: Send>(
    parallel: bool,
    a: &mut [A],
    chunk: usize,
    f: &(dyn Fn(usize, &mut [A]) + Sync),
) {
    if a.is_empty() {
        return;
    }
    if parallel {
        par_chunks_mut(a, chunk, f);
    } else {
        a.chunks_mut(chunk).enumerate().for_each(|(i, p)| f(i, p));
    }
}

/// `f(i, piece_a, piece_b)` for pieces of `a` and `b` in step (`chunk_a` and `chunk_b`
/// elements), over kiln's pool when `parallel`.
fn chunks2<A: Send, B: Send>(
    parallel: bool,
    a: &mut [A],
    chunk_a: usize,
    b: &mut [B],
    chunk_b: usize,
    f: Chunks2Fn<'_, A, B>,
) {
    if a.is_empty() || b.is_empty() {
        return;
    }
    if parallel {
        par_chunks_mut2_by(a, chunk_a, b, chunk_b, f);
    } else {
        a.chunks_mut(chunk_a)
            .zip(b.chunks_mut(chunk_b))
            .enumerate()
            .for_each(|(i, (pa, pb))| f(i, pa, pb));
    }
}

/// The product of `sizes`, saturating (only reached for shapes whose tensors exist).
fn numel(sizes: &[usize]) -> usize {
    sizes.iter().fold(1usize, |a, &b| a.saturating_mul(b))
}

/// `0 / 0`: the statistics of an empty row.
fn nan<C: Arith>() -> C {
    C::zero().div(C::zero())
}

/// `[false, true, true]` from a `bool[n]` argument of length `n`.
fn mask<const N: usize>(output_mask: &[bool]) -> KResult<[bool; N]> {
    output_mask.try_into().map_err(|_| {
        KernelError::shape(format!(
            "output_mask must have {N} elements (one per output), got {}",
            output_mask.len()
        ))
    })
}

/// The shape of an output `mask` asks for, or `[0]` in place of one it does not (PyTorch
/// returns an undefined tensor there).
fn wanted(want: bool, shape: &[usize]) -> Vec<usize> {
    if want {
        shape.to_vec()
    } else {
        vec![0]
    }
}

fn same_shape(a: &[usize], b: &[i64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(&x, &y)| y >= 0 && x as u64 == y as u64)
}

/// PyTorch's `_check_layer_norm_inputs`: `normalized_shape` is not empty, the parameters
/// have that shape, and the input ends with it. Returns the first normalized dim.
fn check_normalized(
    input: &[usize],
    normalized_shape: &[i64],
    params: &[(&str, Option<&[usize]>)],
) -> KResult<usize> {
    if normalized_shape.is_empty() {
        return Err(KernelError::shape(format!("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = {normalized_shape:?}")));
    }
    for (name, p) in params {
        if let Some(s) = p {
            if !same_shape(s, normalized_shape) {
                return Err(KernelError::shape(format!("Expected {name} to be of same shape as normalized_shape, but got {name} of shape {s:?} and normalized_shape = {normalized_shape:?}")));
            }
        }
    }
    let (k, nd) = (normalized_shape.len(), input.len());
    if k > nd || !same_shape(&input[nd - k..], normalized_shape) {
        let dims: Vec<String> = normalized_shape.iter().map(|v| v.to_string()).collect();
        return Err(KernelError::shape(format!(
            "Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size{input:?}",
            dims.join(", ")
        )));
    }
    Ok(nd - k)
}

/// The input's leading dims with a 1 for each normalized dim: the shape of layer and RMS
/// norm statistics, as PyTorch returns them.
fn stat_shape(input: &[usize], axis: usize) -> Vec<usize> {
    input[..axis]
        .iter()
        .copied()
        .chain(std::iter::repeat_n(1, input.len() - axis))
        .collect()
}

fn check_same(what: &str, got: &[usize], input: &[usize]) -> KResult<()> {
    if got != input {
        return Err(KernelError::shape(format!(
            "Expected {what} of the input's shape {input:?}, but got {got:?}"
        )));
    }
    Ok(())
}

/// A statistic with one value per row (`rows` of them).
fn check_stat(name: &str, got: &[usize], rows: usize) -> KResult<()> {
    if numel(got) != rows {
        return Err(KernelError::shape(format!(
            "Expected {name} to hold {rows} values (one per normalized group), but got shape {got:?}"
        )));
    }
    Ok(())
}

/// A per-channel tensor (`c` elements), PyTorch's batch norm wording.
fn check_channels(name: &str, t: Option<&[usize]>, c: usize) -> KResult<()> {
    match t {
        Some(s) if numel(s) != c => Err(KernelError::shape(format!(
            "{name} should contain {c} elements not {}",
            numel(s)
        ))),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------
// Rows: layer norm and RMS norm
// ---------------------------------------------------------------------------------------

/// `y = (x - mu) * rs * w + b` over one row, each of `w`, `b` optional.
#[inline(always)]
fn normalize_row<T: Element>(
    x: &[T],
    mu: Acc<T>,
    rs: Acc<T>,
    w: Option<&[Acc<T>]>,
    b: Option<&[Acc<T>]>,
    y: &mut [T],
) {
    let xs = x.iter().map(|v| v.up().sub(mu).mul(rs));
    match (w, b) {
        (Some(w), Some(b)) => {
            for (((o, v), &w), &b) in y.iter_mut().zip(xs).zip(w).zip(b) {
                *o = T::down(v.mul(w).add(b));
            }
        }
        (Some(w), None) => {
            for ((o, v), &w) in y.iter_mut().zip(xs).zip(w) {
                *o = T::down(v.mul(w));
            }
        }
        (None, Some(b)) => {
            for ((o, v), &b) in y.iter_mut().zip(xs).zip(b) {
                *o = T::down(v.add(b));
            }
        }
        (None, None) => {
            for (o, v) in y.iter_mut().zip(xs) {
                *o = T::down(v);
            }
        }
    }
}

/// The `M x N` forward shared by layer norm (`mean` given: rows are centred) and RMS norm.
#[allow(clippy::too_many_arguments)]
fn rows_forward<T: Element>(
    input: &Src<'_, T>,
    weight: Option<Src<'_, Acc<T>>>,
    bias: Option<Src<'_, Acc<T>>>,
    eps: f64,
    (m, n): (usize, usize),
    out: &mut Dst<'_, T>,
    mean: Option<&mut Dst<'_, Acc<T>>>,
    rstd: &mut Dst<'_, Acc<T>>,
) -> KResult<()>
where
    Acc<T>: FloatMath,
{
    let center = mean.is_some();
    let y = contiguous_out(out)?;
    let ro = contiguous_out(rstd)?;
    let mut mo = match mean {
        Some(d) => Some(contiguous_out(d)?),
        None => None,
    };
    if m == 0 {
        return Ok(());
    }
    if n == 0 {
        ro.fill(nan());
        if let Some(mo) = mo.as_deref_mut() {
            mo.fill(nan());
        }
        return Ok(());
    }
    let x = row_major(input);
    let (w, b) = (weight.as_ref().map(row_major), bias.as_ref().map(row_major));
    let (w, b) = (w.as_deref(), b.as_deref());
    let eps = <Acc<T> as Arith>::from_f64(eps);
    let nf = <Acc<T> as Arith>::from_f64(n as f64);
    let per = (TASK_WORK / n).max(1);
    // (mean, rstd) of each row, written by the task that normalizes it.
    let mut stats = vec![<Acc<T> as Arith>::zero(); 2 * m];
    let body = |t: usize, ys: &mut [T], st: &mut [Acc<T>]| {
        for (k, (yr, s)) in ys.chunks_mut(n).zip(st.chunks_mut(2)).enumerate() {
            let r = t * per + k;
            let xr = &x[r * n..(r + 1) * n];
            let mu = if center {
                sum1(xr, |v: T| v.up()).div(nf)
            } else {
                <Acc<T> as Arith>::zero()
            };
            let var = sum1(xr, |v: T| {
                let d = v.up().sub(mu);
                d.mul(d)
            })
            .div(nf);
            let rs = var.add(eps).sqrt().recip();
            normalize_row(xr, mu, rs, w, b, yr);
            s[0] = mu;
            s[1] = rs;
        }
    };
    chunks2(
        fan_out(m * n >= PARALLEL_MIN),
        y,
        per * n,
        &mut stats,
        per * 2,
        &body,
    );
    for (i, s) in stats.chunks_exact(2).enumerate() {
        ro[i] = s[1];
        if let Some(mo) = mo.as_deref_mut() {
            mo[i] = s[0];
        }
    }
    Ok(())
}

/// The `M x N` backward shared by layer norm (`mean` given) and RMS norm: with `a = g * w`
/// and `xhat = (x - mean) * rstd`, `dx = rstd * (a - mean(a) - xhat * mean(a * xhat))`
/// (RMS norm: no `mean(a)` term), `dw = Σ_rows g * xhat`, `db = Σ_rows g`.
#[allow(clippy::too_many_arguments)]
fn rows_backward<T: Element>(
    grad_out: &Src<'_, T>,
    input: &Src<'_, T>,
    mean: Option<&Src<'_, Acc<T>>>,
    rstd: &Src<'_, Acc<T>>,
    weight: Option<Src<'_, Acc<T>>>,
    (m, n): (usize, usize),
    want: [bool; 3],
    grad_input: &mut Dst<'_, T>,
    grad_weight: &mut Dst<'_, Acc<T>>,
    grad_bias: Option<&mut Dst<'_, Acc<T>>>,
) -> KResult<()>
where
    Acc<T>: FloatMath,
{
    let dxo = contiguous_out(grad_input)?;
    let dwo = contiguous_out(grad_weight)?;
    let mut dbo = match grad_bias {
        Some(d) => Some(contiguous_out(d)?),
        None => None,
    };
    // Zero-filled outputs already hold the sums over no rows.
    if m == 0 || n == 0 {
        return Ok(());
    }
    let zero = <Acc<T> as Arith>::zero();
    let g = row_major(grad_out);
    let x = row_major(input);
    let mu = mean.map(row_major);
    let rs = row_major(rstd);
    let w = weight.as_ref().map(row_major);
    let (mu, w) = (mu.as_deref(), w.as_deref());
    let nf = <Acc<T> as Arith>::from_f64(n as f64);
    let params = want[1] || want[2];
    // With parameter gradients, at most MAX_PARTS row ranges, one partial sum each.
    let per = if params {
        m.div_ceil(MAX_PARTS.min(m))
    } else {
        (TASK_WORK / n).max(1)
    };
    let parts = m.div_ceil(per);
    let mut partial = vec![zero; if params { parts * 2 * n } else { 0 }];
    let body = |t: usize, dxs: Option<&mut [T]>, part: Option<&mut [Acc<T>]>| {
        let r0 = t * per;
        let rows = per.min(m - r0);
        let mut a = vec![zero; if dxs.is_some() { n } else { 0 }];
        let mut dxs = dxs;
        let mut part = part.map(|p| p.split_at_mut(n));
        for k in 0..rows {
            let r = r0 + k;
            let (gr, xr) = (&g[r * n..(r + 1) * n], &x[r * n..(r + 1) * n]);
            let m_r = mu.map_or(zero, |mu| mu[r]);
            let rs_r = rs[r];
            if let Some(dxs) = dxs.as_deref_mut() {
                match w {
                    Some(w) => a
                        .iter_mut()
                        .zip(gr)
                        .zip(w)
                        .for_each(|((a, g), &w)| *a = g.up().mul(w)),
                    None => a.iter_mut().zip(gr).for_each(|(a, g)| *a = g.up()),
                }
                let s1 = if mu.is_some() {
                    sum1(&a, |v| v).div(nf)
                } else {
                    zero
                };
                let s2 = sum2(&a, xr, |a, v: T| a.mul(v.up().sub(m_r)))
                    .mul(rs_r)
                    .div(nf);
                let dr = &mut dxs[k * n..(k + 1) * n];
                for ((o, &a), v) in dr.iter_mut().zip(&a).zip(xr) {
                    let xhat = v.up().sub(m_r).mul(rs_r);
                    *o = T::down(rs_r.mul(a.sub(s1).sub(xhat.mul(s2))));
                }
            }
            if let Some((pw, pb)) = part.as_mut() {
                for ((pw, pb), (gv, v)) in pw.iter_mut().zip(pb.iter_mut()).zip(gr.iter().zip(xr)) {
                    let gv = gv.up();
                    *pw = pw.add(gv.mul(v.up().sub(m_r).mul(rs_r)));
                    *pb = pb.add(gv);
                }
            }
        }
    };
    let parallel = fan_out(m * n >= PARALLEL_MIN);
    match (want[0], params) {
        (true, true) => chunks2(parallel, dxo, per * n, &mut partial, 2 * n, &|t, d, p| {
            body(t, Some(d), Some(p))
        }),
        (true, false) => chunks1(parallel, dxo, per * n, &|t, d| body(t, Some(d), None)),
        (false, true) => chunks1(parallel, &mut partial, 2 * n, &|t, p| {
            body(t, None, Some(p))
        }),
        (false, false) => {}
    }
    if params {
        for p in partial.chunks_exact(2 * n) {
            let (pw, pb) = p.split_at(n);
            if want[1] {
                dwo.iter_mut().zip(pw).for_each(|(o, &v)| *o = o.add(v));
            }
            if let (true, Some(dbo)) = (want[2], dbo.as_deref_mut()) {
                dbo.iter_mut().zip(pb).for_each(|(o, &v)| *o = o.add(v));
            }
        }
    }
    Ok(())
}

/// `(M, N)`: rows before `axis`, elements from it on.
fn rows_cols(sizes: &[usize], axis: usize) -> (usize, usize) {
    (numel(&sizes[..axis]), numel(&sizes[axis..]))
}

/// Output shapes of `native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor?
/// weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)`: the input's, then the mean
/// and rstd with a 1 for each normalized dim (`[*, 1, ..]`, as PyTorch).
pub fn native_layer_norm_meta(
    input: &[usize],
    normalized_shape: &[i64],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
    _eps: f64,
) -> KResult<Vec<Vec<usize>>> {
    let axis = check_normalized(
        input,
        normalized_shape,
        &[("weight", weight), ("bias", bias)],
    )?;
    let stat = stat_shape(input, axis);
    Ok(vec![input.to_vec(), stat.clone(), stat])
}

/// `native_layer_norm`: each row of the trailing `normalized_shape` dims normalized by its
/// mean and `rstd = 1 / sqrt(var + eps)` (biased variance), then `* weight + bias`.
#[allow(clippy::too_many_arguments)]
pub fn native_layer_norm<T: Element>(
    input: Src<'_, T>,
    normalized_shape: &[i64],
    weight: Option<Src<'_, T::Compute>>,
    bias: Option<Src<'_, T::Compute>>,
    eps: f64,
    mut out: Dst<'_, T>,
    mut mean: Dst<'_, T::Compute>,
    mut rstd: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let sizes = &input.layout.sizes;
    let axis = check_normalized(
        sizes,
        normalized_shape,
        &[
            ("weight", weight.map(|w| &w.layout.sizes[..])),
            ("bias", bias.map(|b| &b.layout.sizes[..])),
        ],
    )?;
    rows_forward(
        &input,
        weight,
        bias,
        eps,
        rows_cols(sizes, axis),
        &mut out,
        Some(&mut mean),
        &mut rstd,
    )
}

/// Output shapes of `native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[]
/// normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3]
/// output_mask) -> (Tensor, Tensor, Tensor)`: the input's, then `normalized_shape` twice;
/// `[0]` for an output `output_mask` leaves out.
#[allow(clippy::too_many_arguments)]
pub fn native_layer_norm_backward_meta(
    grad_out: &[usize],
    input: &[usize],
    normalized_shape: &[i64],
    mean: &[usize],
    rstd: &[usize],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
    output_mask: &[bool],
) -> KResult<Vec<Vec<usize>>> {
    let want = mask::<3>(output_mask)?;
    let axis = check_normalized(
        input,
        normalized_shape,
        &[("weight", weight), ("bias", bias)],
    )?;
    check_same("grad_out", grad_out, input)?;
    let (m, _) = rows_cols(input, axis);
    check_stat("mean", mean, m)?;
    check_stat("rstd", rstd, m)?;
    Ok(vec![
        wanted(want[0], input),
        wanted(want[1], &input[axis..]),
        wanted(want[2], &input[axis..]),
    ])
}

/// `native_layer_norm_backward`: the input, weight and bias gradients of layer norm from the
/// forward's saved mean and rstd, each computed only when `output_mask` asks for it.
#[allow(clippy::too_many_arguments)]
pub fn native_layer_norm_backward<T: Element>(
    grad_out: Src<'_, T>,
    input: Src<'_, T>,
    normalized_shape: &[i64],
    mean: Src<'_, T::Compute>,
    rstd: Src<'_, T::Compute>,
    weight: Option<Src<'_, T::Compute>>,
    bias: Option<Src<'_, T::Compute>>,
    output_mask: &[bool],
    mut grad_input: Dst<'_, T>,
    mut grad_weight: Dst<'_, T::Compute>,
    mut grad_bias: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let sizes = &input.layout.sizes;
    native_layer_norm_backward_meta(
        &grad_out.layout.sizes,
        sizes,
        normalized_shape,
        &mean.layout.sizes,
        &rstd.layout.sizes,
        weight.map(|w| &w.layout.sizes[..]),
        bias.map(|b| &b.layout.sizes[..]),
        output_mask,
    )?;
    let axis = sizes.len() - normalized_shape.len();
    rows_backward(
        &grad_out,
        &input,
        Some(&mean),
        &rstd,
        weight,
        rows_cols(sizes, axis),
        mask::<3>(output_mask)?,
        &mut grad_input,
        &mut grad_weight,
        Some(&mut grad_bias),
    )
}

/// PyTorch's default `eps` of `_fused_rms_norm`: the machine epsilon of the opmath type.
fn rms_eps<T: Element>(eps: Option<f64>) -> f64 {
    eps.unwrap_or(if T::DTYPE == DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    })
}

/// Output shapes of `_fused_rms_norm(Tensor input, int[] normalized_shape, Tensor? weight,
/// float? eps) -> (Tensor, Tensor)`: the input's, then rstd's `[*, 1, ..]`.
pub fn fused_rms_norm_meta(
    input: &[usize],
    normalized_shape: &[i64],
    weight: Option<&[usize]>,
    _eps: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    let axis = check_normalized(input, normalized_shape, &[("weight", weight)])?;
    Ok(vec![input.to_vec(), stat_shape(input, axis)])
}

/// `_fused_rms_norm`: each row of the trailing dims times `rstd = 1 / sqrt(mean(x²) + eps)`,
/// then `* weight`; `eps` defaults to the opmath type's machine epsilon, as in PyTorch.
pub fn fused_rms_norm<T: Element>(
    input: Src<'_, T>,
    normalized_shape: &[i64],
    weight: Option<Src<'_, T::Compute>>,
    eps: Option<f64>,
    mut out: Dst<'_, T>,
    mut rstd: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let sizes = &input.layout.sizes;
    let axis = check_normalized(
        sizes,
        normalized_shape,
        &[("weight", weight.map(|w| &w.layout.sizes[..]))],
    )?;
    rows_forward(
        &input,
        weight,
        None,
        rms_eps::<T>(eps),
        rows_cols(sizes, axis),
        &mut out,
        None,
        &mut rstd,
    )
}

/// Output shapes of `_fused_rms_norm_backward(Tensor grad_out, Tensor input, int[]
/// normalized_shape, Tensor rstd, Tensor? weight, bool[2] output_mask) -> (Tensor, Tensor)`.
pub fn fused_rms_norm_backward_meta(
    grad_out: &[usize],
    input: &[usize],
    normalized_shape: &[i64],
    rstd: &[usize],
    weight: Option<&[usize]>,
    output_mask: &[bool],
) -> KResult<Vec<Vec<usize>>> {
    let want = mask::<2>(output_mask)?;
    let axis = check_normalized(input, normalized_shape, &[("weight", weight)])?;
    check_same("grad_out", grad_out, input)?;
    check_stat("rstd", rstd, rows_cols(input, axis).0)?;
    Ok(vec![
        wanted(want[0], input),
        wanted(want[1], &input[axis..]),
    ])
}

/// `_fused_rms_norm_backward`: `dx = rstd * (a - xhat * mean(a * xhat))` with `a = g * w`,
/// `xhat = x * rstd`; `dw = Σ_rows g * xhat`.
#[allow(clippy::too_many_arguments)]
pub fn fused_rms_norm_backward<T: Element>(
    grad_out: Src<'_, T>,
    input: Src<'_, T>,
    normalized_shape: &[i64],
    rstd: Src<'_, T::Compute>,
    weight: Option<Src<'_, T::Compute>>,
    output_mask: &[bool],
    mut grad_input: Dst<'_, T>,
    mut grad_weight: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let sizes = &input.layout.sizes;
    fused_rms_norm_backward_meta(
        &grad_out.layout.sizes,
        sizes,
        normalized_shape,
        &rstd.layout.sizes,
        weight.map(|w| &w.layout.sizes[..]),
        output_mask,
    )?;
    let want = mask::<2>(output_mask)?;
    let axis = sizes.len() - normalized_shape.len();
    rows_backward(
        &grad_out,
        &input,
        None,
        &rstd,
        weight,
        rows_cols(sizes, axis),
        [want[0], want[1], false],
        &mut grad_input,
        &mut grad_weight,
        None,
    )
}

// ---------------------------------------------------------------------------------------
// Group norm
// ---------------------------------------------------------------------------------------

/// `(N, C, HxW, group)` as sizes, checked against the input and parameters with PyTorch's
/// messages (`check_group_norm_inputs`).
#[allow(clippy::too_many_arguments)]
fn check_group(
    input: &[usize],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
) -> KResult<(usize, usize, usize, usize)> {
    if group <= 0 {
        return Err(KernelError::value(format!(
            "Expected num groups to be greater than 0, got {group}"
        )));
    }
    if n < 0 || c < 0 || hxw < 0 {
        return Err(KernelError::value(format!(
            "Expected non-negative N, C and HxW, got N={n}, C={c}, HxW={hxw}"
        )));
    }
    if c % group != 0 {
        return Err(KernelError::shape(format!("Expected number of channels in input to be divisible by num_groups, but got input of shape {input:?} and num_groups={group}")));
    }
    for (name, p) in [("weight", weight), ("bias", bias)] {
        if let Some(s) = p {
            if s.len() != 1 || s[0] as u64 != c as u64 {
                return Err(KernelError::shape(format!("Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape {s:?} and input of shape {input:?}")));
            }
        }
    }
    let (n, c, hxw, g) = (n as usize, c as usize, hxw as usize, group as usize);
    if n.checked_mul(g).is_none_or(|rows| rows > i64::MAX as usize) {
        return Err(KernelError::value(format!(
            "Expected N * num_groups to fit the statistics, got N={n} and num_groups={g}"
        )));
    }
    let total = n.checked_mul(c).and_then(|v| v.checked_mul(hxw));
    if total != Some(numel(input)) {
        return Err(KernelError::shape(format!(
            "Expected an input of N * C * HxW = {n} * {c} * {hxw} elements, but got input of shape {input:?}"
        )));
    }
    Ok((n, c, hxw, g))
}

/// Output shapes of `native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N,
/// SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)`: the input's,
/// then the mean and rstd `[N, group]`.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm_meta(
    input: &[usize],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    _eps: f64,
) -> KResult<Vec<Vec<usize>>> {
    let (n, _, _, g) = check_group(input, weight, bias, n, c, hxw, group)?;
    Ok(vec![input.to_vec(), vec![n, g], vec![n, g]])
}

/// `native_group_norm`: the `C / group` channels of each group of each sample normalized
/// together (with their `HxW` elements), then a per-channel `* weight + bias`.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm<T: Element>(
    input: Src<'_, T>,
    weight: Option<Src<'_, T::Compute>>,
    bias: Option<Src<'_, T::Compute>>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    eps: f64,
    mut out: Dst<'_, T>,
    mut mean: Dst<'_, T::Compute>,
    mut rstd: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let (n, c, hxw, g) = check_group(
        &input.layout.sizes,
        weight.map(|w| &w.layout.sizes[..]),
        bias.map(|b| &b.layout.sizes[..]),
        n,
        c,
        hxw,
        group,
    )?;
    let y = contiguous_out(&mut out)?;
    let mo = contiguous_out(&mut mean)?;
    let ro = contiguous_out(&mut rstd)?;
    let (rows, cg) = (n * g, c / g);
    let d = cg * hxw;
    if rows == 0 {
        return Ok(());
    }
    if d == 0 {
        mo.fill(nan());
        ro.fill(nan());
        return Ok(());
    }
    let x = row_major(&input);
    let (w, b) = (weight.as_ref().map(row_major), bias.as_ref().map(row_major));
    let (w, b) = (w.as_deref(), b.as_deref());
    let one = <Acc<T> as Arith>::one();
    let zero = <Acc<T> as Arith>::zero();
    let eps = <Acc<T> as Arith>::from_f64(eps);
    let df = <Acc<T> as Arith>::from_f64(d as f64);
    let per = (TASK_WORK / d).max(1);
    let mut stats = vec![zero; 2 * rows];
    let body = |t: usize, ys: &mut [T], st: &mut [Acc<T>]| {
        for (k, (yr, s)) in ys.chunks_mut(d).zip(st.chunks_mut(2)).enumerate() {
            let r = t * per + k;
            let xr = &x[r * d..(r + 1) * d];
            let mu = sum1(xr, |v: T| v.up()).div(df);
            let var = sum1(xr, |v: T| {
                let e = v.up().sub(mu);
                e.mul(e)
            })
            .div(df);
            let rs = var.add(eps).sqrt().recip();
            let gi = r % g;
            for (ci, (yc, xc)) in yr.chunks_mut(hxw).zip(xr.chunks(hxw)).enumerate() {
                let ch = gi * cg + ci;
                let scale = rs.mul(w.map_or(one, |w| w[ch]));
                let shift = b.map_or(zero, |b| b[ch]);
                for (o, v) in yc.iter_mut().zip(xc) {
                    *o = T::down(v.up().sub(mu).mul(scale).add(shift));
                }
            }
            s[0] = mu;
            s[1] = rs;
        }
    };
    chunks2(
        fan_out(rows * d >= PARALLEL_MIN),
        y,
        per * d,
        &mut stats,
        per * 2,
        &body,
    );
    for (i, s) in stats.chunks_exact(2).enumerate() {
        mo[i] = s[0];
        ro[i] = s[1];
    }
    Ok(())
}

/// Output shapes of `native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean,
/// Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3]
/// output_mask) -> (Tensor, Tensor, Tensor)`: the input's, `[C]`, `[C]` (`[0]` where
/// `output_mask` leaves an output out).
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm_backward_meta(
    grad_out: &[usize],
    input: &[usize],
    mean: &[usize],
    rstd: &[usize],
    weight: Option<&[usize]>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    output_mask: &[bool],
) -> KResult<Vec<Vec<usize>>> {
    let want = mask::<3>(output_mask)?;
    let (n, c, _, g) = check_group(input, weight, None, n, c, hxw, group)?;
    check_same("grad_out", grad_out, input)?;
    check_stat("mean", mean, n * g)?;
    check_stat("rstd", rstd, n * g)?;
    Ok(vec![
        wanted(want[0], input),
        wanted(want[1], &[c]),
        wanted(want[2], &[c]),
    ])
}

/// `native_group_norm_backward`. Per row (sample, group) and channel, `ds = Σ g * x` and
/// `db = Σ g` over the channel's `HxW` elements give the row's `mean(a)` and
/// `mean(a * xhat)` (`a = g * w`), hence `dx`, and by a sum over samples `dw` and `db`.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm_backward<T: Element>(
    grad_out: Src<'_, T>,
    input: Src<'_, T>,
    mean: Src<'_, T::Compute>,
    rstd: Src<'_, T::Compute>,
    weight: Option<Src<'_, T::Compute>>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    output_mask: &[bool],
    mut grad_input: Dst<'_, T>,
    mut grad_weight: Dst<'_, T::Compute>,
    mut grad_bias: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    native_group_norm_backward_meta(
        &grad_out.layout.sizes,
        &input.layout.sizes,
        &mean.layout.sizes,
        &rstd.layout.sizes,
        weight.map(|w| &w.layout.sizes[..]),
        n,
        c,
        hxw,
        group,
        output_mask,
    )?;
    let want = mask::<3>(output_mask)?;
    let (n, c, hxw, g) = (n as usize, c as usize, hxw as usize, group as usize);
    let (rows, cg) = (n * g, c / g);
    let d = cg * hxw;
    let dxo = contiguous_out(&mut grad_input)?;
    let dwo = contiguous_out(&mut grad_weight)?;
    let dbo = contiguous_out(&mut grad_bias)?;
    if rows == 0 || d == 0 {
        return Ok(());
    }
    let zero = <Acc<T> as Arith>::zero();
    let one = <Acc<T> as Arith>::one();
    let gv = row_major(&grad_out);
    let x = row_major(&input);
    let (mu, rs) = (row_major(&mean), row_major(&rstd));
    let w = weight.as_ref().map(row_major);
    let w = w.as_deref();
    let df = <Acc<T> as Arith>::from_f64(d as f64);
    let per = (TASK_WORK / d).max(1);
    // Per row and channel of the row's group: (Σ g * x, Σ g).
    let mut sums = vec![zero; rows * 2 * cg];
    let body = |t: usize, dxs: Option<&mut [T]>, part: &mut [Acc<T>]| {
        let mut dxs = dxs;
        for (k, sr) in part.chunks_mut(2 * cg).enumerate() {
            let r = t * per + k;
            let gi = r % g;
            let (gr, xr) = (&gv[r * d..(r + 1) * d], &x[r * d..(r + 1) * d]);
            for (ci, s) in sr.chunks_mut(2).enumerate() {
                let (gc, xc) = (&gr[ci * hxw..(ci + 1) * hxw], &xr[ci * hxw..(ci + 1) * hxw]);
                s[0] = sum2(gc, xc, |a: T, b: T| a.up().mul(b.up()));
                s[1] = sum1(gc, |a: T| a.up());
            }
            let Some(dxs) = dxs.as_deref_mut() else {
                continue;
            };
            let (m_r, rs_r) = (mu[r], rs[r]);
            let (mut s1, mut s2) = (zero, zero);
            for (ci, s) in sr.chunks(2).enumerate() {
                let wc = w.map_or(one, |w| w[gi * cg + ci]);
                s1 = s1.add(wc.mul(s[1]));
                s2 = s2.add(wc.mul(s[0].sub(m_r.mul(s[1]))));
            }
            let (s1, s2) = (s1.div(df), s2.mul(rs_r).div(df));
            let dr = &mut dxs[k * d..(k + 1) * d];
            for (ci, (dc, (gc, xc))) in dr
                .chunks_mut(hxw)
                .zip(gr.chunks(hxw).zip(xr.chunks(hxw)))
                .enumerate()
            {
                let wc = w.map_or(one, |w| w[gi * cg + ci]);
                for (o, (gv, v)) in dc.iter_mut().zip(gc.iter().zip(xc)) {
                    let xhat = v.up().sub(m_r).mul(rs_r);
                    *o = T::down(rs_r.mul(gv.up().mul(wc).sub(s1).sub(xhat.mul(s2))));
                }
            }
        }
    };
    let parallel = fan_out(rows * d >= PARALLEL_MIN);
    if want[0] {
        chunks2(
            parallel,
            dxo,
            per * d,
            &mut sums,
            per * 2 * cg,
            &|t, a, b| body(t, Some(a), b),
        );
    } else if want[1] || want[2] {
        chunks1(parallel, &mut sums, per * 2 * cg, &|t, b| body(t, None, b));
    }
    // dw_c = Σ_n (Σ g x - mean Σ g) * rstd, db_c = Σ_n Σ g, summed over samples in order.
    for (r, sr) in sums.chunks_exact(2 * cg).enumerate() {
        let gi = r % g;
        for (ci, s) in sr.chunks_exact(2).enumerate() {
            let ch = gi * cg + ci;
            if want[1] {
                dwo[ch] = dwo[ch].add(s[0].sub(mu[r].mul(s[1])).mul(rs[r]));
            }
            if want[2] {
                dbo[ch] = dbo[ch].add(s[1]);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Batch norm
// ---------------------------------------------------------------------------------------

/// `(N, C, HxW)` of a batch norm input `[N, C, *]`.
fn batch_dims(input: &[usize]) -> KResult<(usize, usize, usize)> {
    if input.len() < 2 {
        return Err(KernelError::shape(format!(
            "expected 2D or higher input (got {}D input)",
            input.len()
        )));
    }
    Ok((input[0], input[1], numel(&input[2..])))
}

/// Output shapes of `_native_batch_norm_legit_functional(Tensor input, Tensor? weight,
/// Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum,
/// float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)`:
/// the input's; the saved mean and inverse std `[C]` in training, `[0]` in evaluation (as
/// PyTorch's CPU kernel); the new running statistics `[C]`, `[0]` where none were given.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_functional_meta(
    input: &[usize],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
    running_mean: Option<&[usize]>,
    running_var: Option<&[usize]>,
    training: bool,
    _momentum: f64,
    _eps: f64,
) -> KResult<Vec<Vec<usize>>> {
    let (n, c, hxw) = batch_dims(input)?;
    for (name, t) in [
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ] {
        check_channels(name, t, c)?;
    }
    if training {
        if n.saturating_mul(hxw) == 1 {
            return Err(KernelError::shape(format!(
                "Expected more than 1 value per channel when training, got input size {input:?}"
            )));
        }
    } else if running_mean.is_none() || running_var.is_none() {
        return Err(KernelError::value(
            "running_mean and running_var must be defined in evaluation mode",
        ));
    }
    let stat = wanted(training, &[c]);
    Ok(vec![
        input.to_vec(),
        stat.clone(),
        stat,
        wanted(running_mean.is_some(), &[c]),
        wanted(running_var.is_some(), &[c]),
    ])
}

/// How a batch norm's `[N, C, *S]` operands and outputs sit in memory: `N * C` planes of
/// `S` (row-major), or channels-last, `N * S` rows of `C` (`memory_format:` in the YAML).
#[derive(Clone, Copy)]
enum Batch {
    /// `(N, C, S)`.
    Planes(usize, usize, usize),
    /// `(N * S, C)`.
    Last(usize, usize),
}

/// Rows of a channels-last batch transposed per tile, so a channel's values are a slice.
const LAST_TILE: usize = 64;

/// A batch operand in `batch`'s memory order: borrowed when it is laid out so, else copied.
fn batch_data<'a, T: Element>(src: &Src<'a, T>, batch: Batch) -> Cow<'a, [T]> {
    let l = src.layout;
    match batch {
        Batch::Planes(..) => row_major(src),
        Batch::Last(..) if l.numel() == 0 => Cow::Borrowed(&[]),
        Batch::Last(..) if l.is_channels_last() => {
            Cow::Borrowed(&src.data[l.offset..l.offset + l.numel()])
        }
        Batch::Last(rows, c) => {
            // `[N, C, *S]` walked as `[N, *S, C]`.
            let spatial = &l.sizes[2..];
            let s: usize = spatial.iter().product();
            let n = rows / s.max(1);
            let mut out = Vec::with_capacity(l.numel());
            for b in 0..n {
                for q in 0..s {
                    let (mut at, mut rest) = (l.offset + b * l.strides[0], q);
                    for d in (0..spatial.len()).rev() {
                        at += (rest % spatial[d]) * l.strides[2 + d];
                        rest /= spatial[d];
                    }
                    out.extend((0..c).map(|ch| src.data[at + ch * l.strides[1]]));
                }
            }
            Cow::Owned(out)
        }
    }
}

/// The body of [`channel_sums`]: channel, one run of each input's values of that channel,
/// the channel's sums.
type ChannelFn<'f, A, B, C> = &'f (dyn Fn(usize, &[A], &[B], &mut [C]) + Sync);

/// Per channel `c`, `f(run)` summed over every run of `c`'s values, `k` sums per channel
/// into `out` (`k * C`), two inputs at a time. Planes: one task per channel, a plane per
/// run. Channels-last: rows split into at most [`MAX_PARTS`] parts chosen from the sizes
/// (so the sums do not depend on the thread count), each part transposed a tile of rows at
/// a time, its partial sums added in order.
fn channel_sums<A: Copy + Sync + Send, B: Copy + Sync + Send, C: Arith>(
    batch: Batch,
    xs: &[A],
    ys: &[B],
    out: &mut [C],
    k: usize,
    f: ChannelFn<'_, A, B, C>,
) {
    let (rows, c) = match batch {
        Batch::Planes(n, c, hxw) => {
            let body = |ch: usize, o: &mut [C]| {
                for b in 0..n {
                    let p = (b * c + ch) * hxw;
                    f(ch, &xs[p..p + hxw], &ys[p..p + hxw], o);
                }
            };
            chunks1(fan_out(n * c * hxw >= PARALLEL_MIN), out, k, &body);
            return;
        }
        Batch::Last(rows, c) => (rows, c),
    };
    if rows == 0 || c == 0 {
        return;
    }
    let parts = rows.div_ceil(TASK_WORK.div_ceil(c)).clamp(1, MAX_PARTS);
    let per = rows.div_ceil(parts);
    let mut partial = vec![C::zero(); parts * k * c];
    let body = |p: usize, o: &mut [C]| {
        let (mut tx, mut ty) = (vec![xs[0]; LAST_TILE * c], vec![ys[0]; LAST_TILE * c]);
        let end = ((p + 1) * per).min(rows);
        let mut r0 = p * per;
        while r0 < end {
            let t = LAST_TILE.min(end - r0);
            for r in 0..t {
                let (xr, yr) = (&xs[(r0 + r) * c..][..c], &ys[(r0 + r) * c..][..c]);
                for ch in 0..c {
                    tx[ch * LAST_TILE + r] = xr[ch];
                    ty[ch * LAST_TILE + r] = yr[ch];
                }
            }
            for ch in 0..c {
                let span = ch * LAST_TILE..ch * LAST_TILE + t;
                f(ch, &tx[span.clone()], &ty[span], &mut o[ch * k..][..k]);
            }
            r0 += t;
        }
    };
    chunks1(
        fan_out(rows * c >= PARALLEL_MIN),
        &mut partial,
        k * c,
        &body,
    );
    for part in partial.chunks_exact(k * c) {
        for (o, &v) in out.iter_mut().zip(part) {
            *o = o.add(v);
        }
    }
}

/// `out = f(channel, x, y)` element by element over a batch in `batch`'s order, in parallel
/// (`f` inlined into each loop, so the per-channel affine maps vectorise).
fn channel_map<A: Copy + Sync, B: Copy + Sync, T: Send, F: Fn(usize, A, B) -> T + Sync>(
    batch: Batch,
    xs: &[A],
    ys: &[B],
    out: &mut [T],
    f: &F,
) {
    match batch {
        Batch::Planes(_, c, hxw) => {
            if out.is_empty() || hxw == 0 {
                return;
            }
            let per = (TASK_WORK / hxw).max(1);
            let body = |t: usize, os: &mut [T]| {
                for (j, op) in os.chunks_mut(hxw).enumerate() {
                    let p = t * per + j;
                    let span = p * hxw..(p + 1) * hxw;
                    let ch = p % c;
                    for (o, (&x, &y)) in op.iter_mut().zip(xs[span.clone()].iter().zip(&ys[span])) {
                        *o = f(ch, x, y);
                    }
                }
            };
            chunks1(fan_out(out.len() >= PARALLEL_MIN), out, per * hxw, &body);
        }
        Batch::Last(_, c) => {
            if out.is_empty() || c == 0 {
                return;
            }
            let per = (TASK_WORK / c).max(1);
            let body = |t: usize, os: &mut [T]| {
                for (j, row) in os.chunks_mut(c).enumerate() {
                    let at = (t * per + j) * c;
                    let (xr, yr) = (&xs[at..at + c], &ys[at..at + c]);
                    for (ch, (o, (&x, &y))) in row.iter_mut().zip(xr.iter().zip(yr)).enumerate() {
                        *o = f(ch, x, y);
                    }
                }
            };
            chunks1(fan_out(out.len() >= PARALLEL_MIN), out, per * c, &body);
        }
    }
}

/// `_native_batch_norm_legit_functional`: batch norm over dim 1. In training, each channel's
/// batch mean and biased variance normalize it; the saved inverse std is
/// `1 / sqrt(var + eps)` and the new running statistics are `(1 - momentum) * running +
/// momentum * batch` with the unbiased variance (unchanged for an empty batch). In
/// evaluation, the running statistics normalize and are returned unchanged.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_functional<T: Element>(
    input: Src<'_, T>,
    weight: Option<Src<'_, T::Compute>>,
    bias: Option<Src<'_, T::Compute>>,
    running_mean: Option<Src<'_, T::Compute>>,
    running_var: Option<Src<'_, T::Compute>>,
    training: bool,
    momentum: f64,
    eps: f64,
    mut out: Dst<'_, T>,
    mut save_mean: Dst<'_, T::Compute>,
    mut save_invstd: Dst<'_, T::Compute>,
    mut running_mean_out: Dst<'_, T::Compute>,
    mut running_var_out: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let sizes = &input.layout.sizes;
    batch_norm_functional_meta(
        sizes,
        weight.map(|t| &t.layout.sizes[..]),
        bias.map(|t| &t.layout.sizes[..]),
        running_mean.map(|t| &t.layout.sizes[..]),
        running_var.map(|t| &t.layout.sizes[..]),
        training,
        momentum,
        eps,
    )?;
    let (n, c, hxw) = batch_dims(sizes)?;
    if c == 0 {
        // No channel: every output is empty.
        return Ok(());
    }
    let zero = <Acc<T> as Arith>::zero();
    let one = <Acc<T> as Arith>::one();
    let epsc = <Acc<T> as Arith>::from_f64(eps);
    let (y, channels_last) = dense_out(&mut out)?;
    let batch = if channels_last {
        Batch::Last(n * hxw, c)
    } else {
        Batch::Planes(n, c, hxw)
    };
    let x = batch_data(&input, batch);
    let w = weight.as_ref().map(row_major);
    let b = bias.as_ref().map(row_major);
    let rm = running_mean.as_ref().map(row_major);
    let rv = running_var.as_ref().map(row_major);
    let rmo = contiguous_out(&mut running_mean_out)?;
    let rvo = contiguous_out(&mut running_var_out)?;
    // Per channel: the mean subtracted and the inverse std.
    let (mean, invstd): (Vec<Acc<T>>, Vec<Acc<T>>) = if training {
        let cnt = n * hxw;
        let cf = <Acc<T> as Arith>::from_f64(cnt as f64);
        let mut mv = vec![zero; 2 * c];
        channel_sums(batch, &x, &x, &mut mv, 2, &|_, p, _, o| {
            o[0] = o[0].add(sum1(p, |v: T| v.up()));
        });
        // PyTorch's CPU kernel keeps the batch statistics of a half input in its dtype: the
        // mean is rounded before the variance is taken about it, and the inverse std below
        // too, and those rounded values normalize (`down` is the identity for f32 and f64).
        mv.chunks_exact_mut(2)
            .for_each(|o| o[0] = T::down(o[0].div(cf)).up());
        // (The variance's pass reads the means from here: a channels-last part's sums start
        // at zero, not at the mean.)
        let means: Vec<Acc<T>> = mv.chunks_exact(2).map(|o| o[0]).collect();
        channel_sums(batch, &x, &x, &mut mv, 2, &|ch, p, _, o| {
            let m = means[ch];
            o[1] = o[1].add(sum1(p, |v: T| {
                let d = v.up().sub(m);
                d.mul(d)
            }));
        });
        let mean: Vec<Acc<T>> = mv.chunks_exact(2).map(|o| o[0]).collect();
        let var: Vec<Acc<T>> = mv.chunks_exact(2).map(|o| o[1].div(cf)).collect();
        let invstd: Vec<Acc<T>> = var.iter().map(|v| v.add(epsc).sqrt().recip()).collect();
        let invstd: Vec<Acc<T>> = invstd.iter().map(|&v| T::down(v).up()).collect();
        contiguous_out(&mut save_mean)?.copy_from_slice(&mean);
        contiguous_out(&mut save_invstd)?.copy_from_slice(&invstd);
        let mom = <Acc<T> as Arith>::from_f64(momentum);
        let keep = one.sub(mom);
        let unbias = <Acc<T> as Arith>::from_f64(cnt as f64 / (cnt as f64 - 1.0));
        if let Some(rm) = rm.as_deref() {
            for ((o, &r), &m) in rmo.iter_mut().zip(rm).zip(&mean) {
                *o = if cnt == 0 {
                    r
                } else {
                    keep.mul(r).add(mom.mul(m))
                };
            }
        }
        if let Some(rv) = rv.as_deref() {
            for ((o, &r), &v) in rvo.iter_mut().zip(rv).zip(&var) {
                *o = if cnt == 0 {
                    r
                } else {
                    keep.mul(r).add(mom.mul(v.mul(unbias)))
                };
            }
        }
        (mean, invstd)
    } else {
        let (Some(rm), Some(rv)) = (rm.as_deref(), rv.as_deref()) else {
            return Err(KernelError::value(
                "running_mean and running_var must be defined in evaluation mode",
            ));
        };
        rmo.copy_from_slice(rm);
        rvo.copy_from_slice(rv);
        (
            rm.to_vec(),
            rv.iter().map(|v| v.add(epsc).sqrt().recip()).collect(),
        )
    };
    let scale: Vec<Acc<T>> = (0..c)
        .map(|ch| invstd[ch].mul(w.as_deref().map_or(one, |w| w[ch])))
        .collect();
    // PyTorch's `x * alpha + beta` with `beta = bias - mean * alpha`: the same value in exact
    // arithmetic, and the same rounding as PyTorch's where outputs cancel to near zero.
    let shift: Vec<Acc<T>> = (0..c)
        .map(|ch| {
            b.as_deref()
                .map_or(zero, |b| b[ch])
                .sub(mean[ch].mul(scale[ch]))
        })
        .collect();
    channel_map(batch, &x, &x, y, &|ch, v: T, _| {
        T::down(v.up().mul(scale[ch]).add(shift[ch]))
    });
    Ok(())
}

/// Output shapes of `native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor?
/// weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor?
/// save_invstd, bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)`:
/// the input's, `[C]`, `[C]` (`[0]` where `output_mask` leaves an output out).
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm_backward_meta(
    grad_out: &[usize],
    input: &[usize],
    weight: Option<&[usize]>,
    running_mean: Option<&[usize]>,
    running_var: Option<&[usize]>,
    save_mean: Option<&[usize]>,
    save_invstd: Option<&[usize]>,
    train: bool,
    _eps: f64,
    output_mask: &[bool],
) -> KResult<Vec<Vec<usize>>> {
    let want = mask::<3>(output_mask)?;
    let (_, c, _) = batch_dims(input)?;
    check_same("grad_out", grad_out, input)?;
    for (name, t) in [
        ("weight", weight),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ] {
        check_channels(name, t, c)?;
    }
    let (m, v, which) = if train {
        (
            save_mean,
            save_invstd,
            "save_mean and save_invstd must be defined in training mode",
        )
    } else {
        (
            running_mean,
            running_var,
            "running_mean and running_var must be defined in evaluation mode",
        )
    };
    let (Some(m), Some(v)) = (m, v) else {
        return Err(KernelError::value(which));
    };
    if train {
        check_channels("save_mean", Some(m), c)?;
        check_channels("save_invstd", Some(v), c)?;
    }
    Ok(vec![
        wanted(want[0], input),
        wanted(want[1], &[c]),
        wanted(want[2], &[c]),
    ])
}

/// `native_batch_norm_backward`. With `a = g * w`, `xhat = (x - mean) * invstd` per channel
/// (the saved batch statistics in training, the running ones in evaluation): in training
/// `dx = invstd * (a - mean(a) - xhat * mean(a * xhat))`, in evaluation `dx = invstd * a`;
/// `dw = Σ g * xhat`, `db = Σ g` over batch and spatial dims.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm_backward<T: Element>(
    grad_out: Src<'_, T>,
    input: Src<'_, T>,
    weight: Option<Src<'_, T::Compute>>,
    running_mean: Option<Src<'_, T::Compute>>,
    running_var: Option<Src<'_, T::Compute>>,
    save_mean: Option<Src<'_, T::Compute>>,
    save_invstd: Option<Src<'_, T::Compute>>,
    train: bool,
    eps: f64,
    output_mask: &[bool],
    mut grad_input: Dst<'_, T>,
    mut grad_weight: Dst<'_, T::Compute>,
    mut grad_bias: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let sizes = &input.layout.sizes;
    native_batch_norm_backward_meta(
        &grad_out.layout.sizes,
        sizes,
        weight.map(|t| &t.layout.sizes[..]),
        running_mean.map(|t| &t.layout.sizes[..]),
        running_var.map(|t| &t.layout.sizes[..]),
        save_mean.map(|t| &t.layout.sizes[..]),
        save_invstd.map(|t| &t.layout.sizes[..]),
        train,
        eps,
        output_mask,
    )?;
    let want = mask::<3>(output_mask)?;
    let (n, c, hxw) = batch_dims(sizes)?;
    if c == 0 {
        // No channel: every output is empty.
        return Ok(());
    }
    let zero = <Acc<T> as Arith>::zero();
    let one = <Acc<T> as Arith>::one();
    let epsc = <Acc<T> as Arith>::from_f64(eps);
    let (dxo, channels_last) = dense_out(&mut grad_input)?;
    let batch = if channels_last {
        Batch::Last(n * hxw, c)
    } else {
        Batch::Planes(n, c, hxw)
    };
    let g = batch_data(&grad_out, batch);
    let x = batch_data(&input, batch);
    let w = weight.as_ref().map(row_major);
    let (mean, invstd): (Vec<Acc<T>>, Vec<Acc<T>>) = match (
        train,
        save_mean.as_ref().zip(save_invstd.as_ref()),
        running_mean.as_ref().zip(running_var.as_ref()),
    ) {
        (true, Some((m, v)), _) => (row_major(m).to_vec(), row_major(v).to_vec()),
        (false, _, Some((m, v))) => (
            row_major(m).to_vec(),
            row_major(v)
                .iter()
                .map(|v| v.add(epsc).sqrt().recip())
                .collect(),
        ),
        _ => {
            return Err(KernelError::shape(
                "internal error: batch norm statistics missing",
            ))
        }
    };
    // Per channel: (Σ g * (x - mean), Σ g).
    let mut sums = vec![zero; 2 * c];
    if train || want[1] || want[2] {
        channel_sums(batch, &g, &x, &mut sums, 2, &|ch, gp, xp, o| {
            let m = mean[ch];
            o[0] = o[0].add(sum2(gp, xp, |a: T, b: T| a.up().mul(b.up().sub(m))));
            o[1] = o[1].add(sum1(gp, |a: T| a.up()));
        });
    }
    let dwo = contiguous_out(&mut grad_weight)?;
    let dbo = contiguous_out(&mut grad_bias)?;
    for ch in 0..c {
        if want[1] {
            dwo[ch] = sums[2 * ch].mul(invstd[ch]);
        }
        if want[2] {
            dbo[ch] = sums[2 * ch + 1];
        }
    }
    if !want[0] {
        return Ok(());
    }
    // dx = g * k_c + (x - mean_c) * q_c + z_c per channel.
    let cf = <Acc<T> as Arith>::from_f64((n * hxw) as f64);
    let mut k = vec![zero; c];
    let mut q = vec![zero; c];
    let mut z = vec![zero; c];
    for ch in 0..c {
        let wi = invstd[ch].mul(w.as_deref().map_or(one, |w| w[ch]));
        k[ch] = wi;
        if train {
            q[ch] = wi
                .mul(invstd[ch])
                .mul(invstd[ch])
                .mul(sums[2 * ch])
                .div(cf)
                .neg();
            z[ch] = wi.mul(sums[2 * ch + 1]).div(cf).neg();
        }
    }
    channel_map(batch, &g, &x, dxo, &|ch, gv: T, v: T| {
        T::down(
            gv.up()
                .mul(k[ch])
                .add(v.up().sub(mean[ch]).mul(q[ch]))
                .add(z[ch]),
        )
    });
    Ok(())
}
