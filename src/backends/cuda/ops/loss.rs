//! Losses on CUDA (kernels/cuda/loss.cu.j2), with the CPU kernels' geometry and checks:
//! pointwise losses over operands broadcast to the loss's shape (a reduction is per-block
//! partial sums in the accumulate type, then one block adding them), and nll. Values the
//! CPU kernels check while they compute (target indices, probabilities in `[0, 1]`) are
//! checked on the host first, so a bad value is kiln's error with PyTorch's message rather
//! than a device-side assert.

use super::{alloc, gpu_of, grid, operand_with, KilnTensor};
use crate::backends::cuda::launchers::loss as kernels;
use crate::{DType, Error, Layout, Result, Tensor};
use cudarc::driver::LaunchConfig;
use kiln_kernels::cpu::loss::{nll_geometry, MEAN, NONE};

/// `kind` of kernels/cuda/loss.cu.j2.
#[derive(Clone, Copy)]
enum Loss {
    Mse = 0,
    SmoothL1 = 1,
    Huber = 2,
    Bce = 3,
}

/// Threads per block of the reduction kernels (`KILN_LBLOCK`).
const BLOCK: u32 = 256;

fn kernel_error(op: &str) -> impl Fn(kiln_kernels::KernelError) -> Error + '_ {
    move |m| Error::op(op, m)
}

/// `t` viewed with `shape` (broadcast).
fn broadcast(op: &str, t: &Tensor, shape: &[usize]) -> Result<KilnTensor> {
    let layout = t.layout().broadcast_to(shape).map_err(kernel_error(op))?;
    operand_with(op, t, &layout)
}

/// The shape `self` and `target` broadcast to, and its element count.
fn loss_shape(op: &str, x: &Tensor, t: &Tensor) -> Result<(Vec<usize>, usize)> {
    let shape =
        kiln_kernels::layout::broadcast_shapes(x.shape(), t.shape()).map_err(kernel_error(op))?;
    let n = kiln_kernels::cpu::loss::element_count(&shape);
    Ok((shape.to_vec(), n))
}

/// The accumulate dtype of a reduction over `dtype` (float, or double for float64).
fn acc_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// A pointwise loss: its terms (`none`), or their mean or sum.
#[allow(clippy::too_many_arguments)]
fn forward(
    op: &str,
    kind: Loss,
    x: &Tensor,
    t: &Tensor,
    w: Option<&Tensor>,
    reduction: i64,
    p: f64,
    out: &Tensor,
) -> Result<()> {
    let (shape, n) = loss_shape(op, x, t)?;
    let gpu = gpu_of(op, out)?;
    let (kx, kt) = (broadcast(op, x, &shape)?, broadcast(op, t, &shape)?);
    // Without a weight the kernel never reads `w`; `x` stands in.
    let kw = w.map_or(Ok(kx), |w| broadcast(op, w, &shape))?;
    let (has_w, kind, nn, dt) = (w.is_some(), kind as i32, n as i64, out.dtype());
    if reduction == NONE {
        if n == 0 {
            return Ok(());
        }
        let o = operand_with(op, out, &Layout::contiguous(&shape))?;
        // SAFETY: x, t (and w when has_w) are views of n elements of T broadcast to
        // `shape`, `out` is fresh contiguous storage of that shape.
        return unsafe {
            kernels::loss_none(&gpu, op, dt, grid(n), &o, &kx, &kt, &kw, has_w, kind, p, nn)
        };
    }
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 1024);
    let partial = alloc(op, &[blocks], acc_dtype(out.dtype()), out.device().index())?;
    let kp = operand_with(op, &partial, partial.layout())?;
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the operands as above; `partial` holds one accumulator per block launched.
    unsafe { kernels::loss_partial(&gpu, op, dt, cfg, &kp, &kx, &kt, &kw, has_w, kind, p, nn) }?;
    finish(
        op,
        &partial,
        blocks,
        if reduction == MEAN { n } else { 1 },
        out,
    )
}

/// `out = Σ partial / divisor`, one block.
fn finish(op: &str, partial: &Tensor, parts: usize, divisor: usize, out: &Tensor) -> Result<()> {
    let gpu = gpu_of(op, out)?;
    let (o, kp) = (
        operand_with(op, out, &Layout::contiguous(&[]))?,
        operand_with(op, partial, partial.layout())?,
    );
    let (parts, divisor) = (parts as i64, divisor as f64);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `partial` holds `parts` accumulators, `out` one element of T.
    unsafe { kernels::loss_finish(&gpu, op, out.dtype(), cfg, &o, &kp, parts, divisor) }
}

/// A pointwise loss's backward: `norm * slope(x, t) * grad_output (* w)`.
#[allow(clippy::too_many_arguments)]
fn backward(
    op: &str,
    kind: Loss,
    grad_output: &Tensor,
    x: &Tensor,
    t: &Tensor,
    w: Option<&Tensor>,
    reduction: i64,
    p: f64,
    out: &Tensor,
) -> Result<()> {
    let (_, terms) = loss_shape(op, x, t)?;
    let shape = out.shape().to_vec();
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let o = operand_with(op, out, &Layout::contiguous(&shape))?;
    let (kg, kx, kt) = (
        broadcast(op, grad_output, &shape)?,
        broadcast(op, x, &shape)?,
        broadcast(op, t, &shape)?,
    );
    let kw = w.map_or(Ok(kx), |w| broadcast(op, w, &shape))?;
    let norm = if reduction == MEAN {
        1.0 / terms as f64
    } else {
        1.0
    };
    let (has_w, kind, nn) = (w.is_some(), kind as i32, n as i64);
    // SAFETY: every input is a view of n elements of T broadcast to `out`'s shape (w read
    // only when has_w), `out` is fresh contiguous storage.
    unsafe {
        kernels::loss_backward(
            &gpu,
            op,
            out.dtype(),
            grid(n),
            &o,
            &kg,
            &kx,
            &kt,
            &kw,
            has_w,
            kind,
            p,
            norm,
            nn,
        )
    }
}

pub fn mse_loss(
    op: &str,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    out: &Tensor,
) -> Result<()> {
    forward(op, Loss::Mse, self_, target, None, reduction, 0.0, out)
}

pub fn mse_loss_backward(
    op: &str,
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    out: &Tensor,
) -> Result<()> {
    backward(
        op,
        Loss::Mse,
        grad_output,
        self_,
        target,
        None,
        reduction,
        0.0,
        out,
    )
}

pub fn smooth_l1_loss(
    op: &str,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
    out: &Tensor,
) -> Result<()> {
    forward(
        op,
        Loss::SmoothL1,
        self_,
        target,
        None,
        reduction,
        beta,
        out,
    )
}

pub fn smooth_l1_loss_backward(
    op: &str,
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
    out: &Tensor,
) -> Result<()> {
    let kind = Loss::SmoothL1;
    backward(
        op,
        kind,
        grad_output,
        self_,
        target,
        None,
        reduction,
        beta,
        out,
    )
}

pub fn huber_loss(
    op: &str,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
    out: &Tensor,
) -> Result<()> {
    forward(op, Loss::Huber, self_, target, None, reduction, delta, out)
}

pub fn huber_loss_backward(
    op: &str,
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
    out: &Tensor,
) -> Result<()> {
    let kind = Loss::Huber;
    backward(
        op,
        kind,
        grad_output,
        self_,
        target,
        None,
        reduction,
        delta,
        out,
    )
}

/// PyTorch's checks of binary cross entropy's values, on the device then read back.
fn check_probabilities(op: &str, input: &Tensor, target: &Tensor) -> Result<()> {
    let _no_grad = crate::no_grad();
    let inside = |t: &Tensor| -> Result<bool> {
        if t.numel() == 0 {
            return Ok(true);
        }
        t.ge_scalar(0)?
            .logical_and(&t.le_scalar(1)?)?
            .all()?
            .item::<bool>()
    };
    if !inside(input)? {
        return Err(Error::value(
            op,
            "all elements of input should be between 0 and 1",
        ));
    }
    if !inside(target)? {
        return Err(Error::value(
            op,
            "all elements of target should be between 0 and 1",
        ));
    }
    Ok(())
}

pub fn binary_cross_entropy(
    op: &str,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    out: &Tensor,
) -> Result<()> {
    check_probabilities(op, self_, target)?;
    forward(op, Loss::Bce, self_, target, weight, reduction, 0.0, out)
}

pub fn binary_cross_entropy_backward(
    op: &str,
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    out: &Tensor,
) -> Result<()> {
    let kind = Loss::Bce;
    backward(
        op,
        kind,
        grad_output,
        self_,
        target,
        weight,
        reduction,
        0.0,
        out,
    )
}

/// Every target is `ignore_index` or a class, else PyTorch's error (one device-to-host copy).
fn check_targets(op: &str, target: &Tensor, classes: usize, ignore_index: i64) -> Result<()> {
    kiln_kernels::cpu::loss::check_targets(&target.to_vec::<i64>()?, classes, ignore_index)
        .map_err(kernel_error(op))
}

fn contiguous(op: &str, t: &Tensor) -> Result<KilnTensor> {
    operand_with(op, t, &Layout::contiguous(t.shape()))
}

#[allow(clippy::too_many_arguments)]
pub fn nll_loss_forward(
    op: &str,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    output: &Tensor,
    total_weight: &Tensor,
) -> Result<()> {
    let (classes, inner) = nll_geometry(self_.shape());
    check_targets(op, target, classes, ignore_index)?;
    let gpu = gpu_of(op, output)?;
    let (kx, kt) = (
        operand_with(op, self_, self_.layout())?,
        operand_with(op, target, target.layout())?,
    );
    let kw = weight.map_or(Ok(kx), |w| operand_with(op, w, w.layout()))?;
    let (o, ktw) = (contiguous(op, output)?, contiguous(op, total_weight)?);
    let n = target.numel();
    let (has_w, c, i, ig, nn) = (
        weight.is_some(),
        classes as i64,
        inner as i64,
        ignore_index,
        n as i64,
    );
    let dt = output.dtype();
    if reduction == NONE && self_.dim() >= 2 {
        // SAFETY: `x` is the input (batch*classes*inner elements), `target` n int64 values
        // checked above to be ignore or in 0..classes, `w` (read only when has_w) `classes`
        // elements, `out` and `total_weight` fresh storage of n and 1 elements.
        return unsafe {
            kernels::nll_none(
                &gpu,
                op,
                dt,
                grid(n.max(1)),
                &o,
                &ktw,
                &kx,
                &kt,
                &kw,
                has_w,
                c,
                i,
                ig,
                nn,
            )
        };
    }
    let mean = reduction == MEAN;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: operands as for `nll_none`, `out` one element.
    unsafe {
        kernels::nll_reduce(
            &gpu, op, dt, cfg, &o, &ktw, &kx, &kt, &kw, has_w, c, i, ig, nn, mean,
        )
    }
}

#[allow(clippy::too_many_arguments)]
pub fn nll_loss_backward(
    op: &str,
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
    out: &Tensor,
) -> Result<()> {
    let (classes, inner) = nll_geometry(self_.shape());
    check_targets(op, target, classes, ignore_index)?;
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let (o, kg, kt, ktw) = (
        contiguous(op, out)?,
        operand_with(op, grad_output, grad_output.layout())?,
        operand_with(op, target, target.layout())?,
        operand_with(op, total_weight, total_weight.layout())?,
    );
    let kw = weight.map_or(Ok(kt), |w| operand_with(op, w, w.layout()))?;
    let per_target = reduction == NONE && self_.dim() >= 2;
    let (has_w, mean) = (weight.is_some(), reduction == MEAN);
    let (c, i, ig, nn) = (classes as i64, inner as i64, ignore_index, n as i64);
    // SAFETY: `out` is fresh contiguous storage of the input's n elements, `target` int64
    // values checked above, `go` target-shaped when per_target and one element otherwise
    // (checked by the meta function), `w` (read only when has_w) `classes` elements,
    // `total_weight` one element.
    unsafe {
        kernels::nll_backward(
            &gpu,
            op,
            out.dtype(),
            grid(n),
            &o,
            &kg,
            &kt,
            &kw,
            has_w,
            &ktw,
            c,
            i,
            ig,
            per_target,
            mean,
            nn,
        )
    }
}
