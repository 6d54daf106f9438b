//! Fused optimizer updates (PyTorch's `_fused_adam_`, `_fused_adamw_`, `_fused_sgd_` CPU
//! kernels, `aten/src/ATen/native/FusedAdam.cpp` / `FusedSGD.cpp`): one pass over a
//! parameter's elements that reads its gradient and updates the parameter and its state
//! buffers in place, with no temporaries. All buffers are one dense block each, in the same
//! element order. Half types compute in `f32` (opmath) and round once on store; the step's
//! scalar coefficients are computed in `f64` and cast to the compute type, as PyTorch does.

use crate::element::{Arith, Element, FloatMath};
use crate::parallel::{fan_out, par_chunks_mut_many};

/// Loops at least this long fan out over kiln's pool.
const PARALLEL_MIN: usize = 1 << 15;
/// Elements per parallel task.
const CHUNK: usize = 1 << 13;

/// Adam's and AdamW's hyper-parameters for one step. `step` is the step count after this
/// step's increment (1 on the first step).
#[derive(Clone, Copy, Debug)]
pub struct AdamStep {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub weight_decay: f64,
    pub eps: f64,
    pub step: f64,
    pub amsgrad: bool,
    pub maximize: bool,
    /// AdamW: decoupled weight decay (`param *= 1 - lr * weight_decay`) instead of adding
    /// `weight_decay * param` to the gradient.
    pub decoupled: bool,
}

/// SGD's hyper-parameters for one step.
#[derive(Clone, Copy, Debug)]
pub struct SgdStep {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
    /// The momentum buffer holds nothing yet: it becomes the (decayed) gradient.
    pub first_step: bool,
}

/// The loop body: the pieces of the written buffers and the matching gradient piece.
type Body<'f, T> = &'f (dyn Fn(&mut [&mut [T]], &[T]) + Sync);

fn run<T: Element>(bufs: Vec<&mut [T]>, grad: &[T], body: Body<'_, T>) {
    let n = grad.len();
    debug_assert!(bufs.iter().all(|b| b.len() == n));
    if fan_out(n >= PARALLEL_MIN) {
        par_chunks_mut_many(bufs, CHUNK, &|i, pieces| {
            let start = i * CHUNK;
            let len = pieces[0].len();
            body(pieces, &grad[start..start + len])
        });
    } else {
        let mut bufs = bufs;
        body(&mut bufs, grad);
    }
}

/// One Adam/AdamW step over `param` with gradient `grad` and state `exp_avg`,
/// `exp_avg_sq` (and `max_exp_avg_sq` when `h.amsgrad`). All slices have one length.
pub fn fused_adam<T: Element>(
    param: &mut [T],
    grad: &[T],
    exp_avg: &mut [T],
    exp_avg_sq: &mut [T],
    max_exp_avg_sq: Option<&mut [T]>,
    h: &AdamStep,
) where
    T::Compute: FloatMath,
{
    type C<T> = <T as Element>::Compute;
    let c = |v: f64| <C<T> as Arith>::from_f64(v);
    let bias_correction1 = 1.0 - h.beta1.powf(h.step);
    let bias_correction2 = 1.0 - h.beta2.powf(h.step);
    let step_size = c(h.lr / bias_correction1);
    let bc2_sqrt = c(bias_correction2.sqrt());
    let beta2 = c(h.beta2);
    let (one_m_beta1, one_m_beta2) = (c(1.0 - h.beta1), c(1.0 - h.beta2));
    let wd = c(h.weight_decay);
    let decay = c(1.0 - h.lr * h.weight_decay);
    let eps = c(h.eps);
    let (has_wd, decoupled, maximize) = (h.weight_decay != 0.0, h.decoupled, h.maximize);
    let mut bufs = vec![param, exp_avg, exp_avg_sq];
    let amsgrad = max_exp_avg_sq.is_some();
    if let Some(m) = max_exp_avg_sq {
        bufs.push(m);
    }
    run(bufs, grad, &|b, g| {
        let n = g.len();
        for i in 0..n {
            let mut gv = g[i].up();
            if maximize {
                gv = gv.neg();
            }
            let mut p = b[0][i].up();
            if has_wd {
                if decoupled {
                    p = p.mul(decay);
                } else {
                    gv = gv.add(p.mul(wd));
                }
            }
            // exp_avg.lerp_(grad, 1 - beta1)
            let m = b[1][i].up();
            let m = m.add(one_m_beta1.mul(gv.sub(m)));
            let v = beta2.mul(b[2][i].up()).add(one_m_beta2.mul(gv).mul(gv));
            b[1][i] = T::down(m);
            b[2][i] = T::down(v);
            let second = if amsgrad {
                let old = b[3][i].up();
                let mx = if v > old || v.is_nan() { v } else { old };
                b[3][i] = T::down(mx);
                mx
            } else {
                v
            };
            let denom = second.sqrt().div(bc2_sqrt).add(eps);
            p = p.sub(step_size.mul(m).div(denom));
            b[0][i] = T::down(p);
        }
    });
}

/// One SGD step over `param` with gradient `grad` and, when `h.momentum != 0`, its
/// momentum buffer. All slices have one length.
pub fn fused_sgd<T: Element>(
    param: &mut [T],
    grad: &[T],
    momentum_buffer: Option<&mut [T]>,
    h: &SgdStep,
) where
    T::Compute: FloatMath,
{
    type C<T> = <T as Element>::Compute;
    let c = |v: f64| <C<T> as Arith>::from_f64(v);
    let (lr, wd, mom) = (c(h.lr), c(h.weight_decay), c(h.momentum));
    let one_m_damp = c(1.0 - h.dampening);
    let (has_wd, maximize, nesterov, first) =
        (h.weight_decay != 0.0, h.maximize, h.nesterov, h.first_step);
    let mut bufs = vec![param];
    let has_mom = momentum_buffer.is_some();
    if let Some(m) = momentum_buffer {
        bufs.push(m);
    }
    run(bufs, grad, &|b, g| {
        for i in 0..g.len() {
            let mut gv = g[i].up();
            if maximize {
                gv = gv.neg();
            }
            let p = b[0][i].up();
            if has_wd {
                gv = gv.add(p.mul(wd));
            }
            if has_mom {
                let buf = if first {
                    gv
                } else {
                    b[1][i].up().mul(mom).add(gv.mul(one_m_damp))
                };
                b[1][i] = T::down(buf);
                gv = if nesterov { gv.add(mom.mul(buf)) } else { buf };
            }
            b[0][i] = T::down(p.sub(lr.mul(gv)));
        }
    });
}
