//! Fused optimizer updates (PyTorch's `_fused_adam_`, `_fused_adamw_`, `_fused_sgd_`,
//! `_fused_adagrad_` CPU kernels, `aten/src/ATen/native/FusedAdam.cpp` / `FusedSGD.cpp` /
//! `FusedAdagrad.cpp`, and an RMSprop one PyTorch does not have): one pass over a
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

/// RMSprop's hyper-parameters for one step (PyTorch's names; `momentum > 0` uses a
/// momentum buffer, `centered` a gradient average, as in `torch.optim.RMSprop`).
#[derive(Clone, Copy, Debug)]
pub struct RmspropStep {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub centered: bool,
    pub maximize: bool,
}

/// Adagrad's hyper-parameters for one step. `step` is the step count after this step's
/// increment (1 on the first step).
#[derive(Clone, Copy, Debug)]
pub struct AdagradStep {
    pub lr: f64,
    pub lr_decay: f64,
    pub weight_decay: f64,
    pub eps: f64,
    pub step: f64,
    pub maximize: bool,
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

/// Calls `$f::<$t, flags...>(args)` with each runtime bool in `[...]` turned into a const
/// generic argument, so every combination of an optimizer's options gets its own
/// branch-free (vectorizable) loop.
macro_rules! with_flags {
    ($f:ident::<$t:ty>($($arg:expr),*); []; [$($done:tt),*]) => {
        $f::<$t, $($done),*>($($arg),*)
    };
    ($f:ident::<$t:ty>($($arg:expr),*); [$b:expr $(, $rest:expr)*]; [$($done:tt),*]) => {
        if $b {
            with_flags!($f::<$t>($($arg),*); [$($rest),*]; [$($done,)* true])
        } else {
            with_flags!($f::<$t>($($arg),*); [$($rest),*]; [$($done,)* false])
        }
    };
}

/// Adam's per-step coefficients in the compute type.
struct AdamCoef<C> {
    step_size: C,
    bc2_sqrt: C,
    beta2: C,
    one_m_beta1: C,
    one_m_beta2: C,
    wd: C,
    decay: C,
    eps: C,
}

/// One piece of an Adam step; `b` = [param, exp_avg, exp_avg_sq, (max_exp_avg_sq)].
#[inline(never)]
fn adam_piece<
    T: Element,
    const MAXIMIZE: bool,
    const WD: bool,
    const DECOUPLED: bool,
    const AMSGRAD: bool,
>(
    b: &mut [&mut [T]],
    g: &[T],
    k: &AdamCoef<T::Compute>,
) where
    T::Compute: FloatMath,
{
    let (p, rest) = b.split_first_mut().expect("param piece");
    let (m, rest) = rest.split_first_mut().expect("exp_avg piece");
    let (v, rest) = rest.split_first_mut().expect("exp_avg_sq piece");
    let update = |pv: T, gv: T, mv: T, vv: T| {
        let mut gv = gv.up();
        if MAXIMIZE {
            gv = gv.neg();
        }
        let mut pv = pv.up();
        if WD {
            if DECOUPLED {
                pv = pv.mul(k.decay);
            } else {
                gv = gv.add(pv.mul(k.wd));
            }
        }
        // exp_avg.lerp_(grad, 1 - beta1)
        let mv = mv.up();
        let mv = mv.add(k.one_m_beta1.mul(gv.sub(mv)));
        let vv = k.beta2.mul(vv.up()).add(k.one_m_beta2.mul(gv).mul(gv));
        (pv, mv, vv)
    };
    let finish = |pv: T::Compute, mv: T::Compute, second: T::Compute| {
        let denom = second.sqrt().div(k.bc2_sqrt).add(k.eps);
        T::down(pv.sub(k.step_size.mul(mv).div(denom)))
    };
    if AMSGRAD {
        let mx = &mut rest[0];
        let it = p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut());
        for ((((p, &gv), m), v), mx) in it.zip(mx.iter_mut()) {
            let (pv, mv, vv) = update(*p, gv, *m, *v);
            *m = T::down(mv);
            *v = T::down(vv);
            let old = mx.up();
            let second = if vv > old || vv.is_nan() { vv } else { old };
            *mx = T::down(second);
            *p = finish(pv, mv, second);
        }
    } else {
        for (((p, &gv), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
            let (pv, mv, vv) = update(*p, gv, *m, *v);
            *m = T::down(mv);
            *v = T::down(vv);
            *p = finish(pv, mv, vv);
        }
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
    let c = |v: f64| <T::Compute as Arith>::from_f64(v);
    let bias_correction1 = 1.0 - h.beta1.powf(h.step);
    let bias_correction2 = 1.0 - h.beta2.powf(h.step);
    let k = AdamCoef {
        step_size: c(h.lr / bias_correction1),
        bc2_sqrt: c(bias_correction2.sqrt()),
        beta2: c(h.beta2),
        one_m_beta1: c(1.0 - h.beta1),
        one_m_beta2: c(1.0 - h.beta2),
        wd: c(h.weight_decay),
        decay: c(1.0 - h.lr * h.weight_decay),
        eps: c(h.eps),
    };
    let (wd, decoupled, maximize) = (h.weight_decay != 0.0, h.decoupled, h.maximize);
    let mut bufs = vec![param, exp_avg, exp_avg_sq];
    let amsgrad = max_exp_avg_sq.is_some();
    if let Some(m) = max_exp_avg_sq {
        bufs.push(m);
    }
    run(
        bufs,
        grad,
        &|b, g| with_flags!(adam_piece::<T>(b, g, &k); [maximize, wd, decoupled, amsgrad]; []),
    );
}

/// SGD's per-step coefficients in the compute type.
struct SgdCoef<C> {
    lr: C,
    wd: C,
    momentum: C,
    one_m_damp: C,
}

/// One piece of an SGD step; `b` = [param, (momentum_buffer)].
#[inline(never)]
fn sgd_piece<
    T: Element,
    const MAXIMIZE: bool,
    const WD: bool,
    const MOMENTUM: bool,
    const FIRST: bool,
    const NESTEROV: bool,
>(
    b: &mut [&mut [T]],
    g: &[T],
    k: &SgdCoef<T::Compute>,
) where
    T::Compute: FloatMath,
{
    let (p, rest) = b.split_first_mut().expect("param piece");
    let decayed = |pv: T::Compute, gv: T| {
        let mut gv = gv.up();
        if MAXIMIZE {
            gv = gv.neg();
        }
        if WD {
            gv = gv.add(pv.mul(k.wd));
        }
        gv
    };
    if MOMENTUM {
        let buf = &mut rest[0];
        for ((p, &gv), b) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
            let pv = p.up();
            let gv = decayed(pv, gv);
            let bv = if FIRST {
                gv
            } else {
                b.up().mul(k.momentum).add(gv.mul(k.one_m_damp))
            };
            *b = T::down(bv);
            let step = if NESTEROV {
                gv.add(k.momentum.mul(bv))
            } else {
                bv
            };
            *p = T::down(pv.sub(k.lr.mul(step)));
        }
    } else {
        for (p, &gv) in p.iter_mut().zip(g) {
            let pv = p.up();
            *p = T::down(pv.sub(k.lr.mul(decayed(pv, gv))));
        }
    }
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
    let c = |v: f64| <T::Compute as Arith>::from_f64(v);
    let k = SgdCoef {
        lr: c(h.lr),
        wd: c(h.weight_decay),
        momentum: c(h.momentum),
        one_m_damp: c(1.0 - h.dampening),
    };
    let (wd, maximize, nesterov, first) =
        (h.weight_decay != 0.0, h.maximize, h.nesterov, h.first_step);
    let mut bufs = vec![param];
    let has_mom = momentum_buffer.is_some();
    if let Some(m) = momentum_buffer {
        bufs.push(m);
    }
    run(
        bufs,
        grad,
        &|b, g| with_flags!(sgd_piece::<T>(b, g, &k); [maximize, wd, has_mom, first, nesterov]; []),
    );
}

/// RMSprop's per-step coefficients in the compute type.
struct RmspropCoef<C> {
    lr: C,
    alpha: C,
    one_m_alpha: C,
    eps: C,
    wd: C,
    momentum: C,
}

/// One piece of an RMSprop step; `b` = [param, square_avg, (grad_avg), (momentum_buffer)]
/// (PyTorch's `_single_tensor_rmsprop`, in one pass).
#[inline(never)]
fn rmsprop_piece<
    T: Element,
    const MAXIMIZE: bool,
    const WD: bool,
    const CENTERED: bool,
    const MOMENTUM: bool,
>(
    b: &mut [&mut [T]],
    g: &[T],
    k: &RmspropCoef<T::Compute>,
) where
    T::Compute: FloatMath,
{
    let (p, rest) = b.split_first_mut().expect("param piece");
    let (sq, rest) = rest.split_first_mut().expect("square_avg piece");
    let (ga, rest) = if CENTERED {
        let (ga, rest) = rest.split_first_mut().expect("grad_avg piece");
        (Some(ga), rest)
    } else {
        (None, rest)
    };
    let mb = if MOMENTUM {
        Some(rest.first_mut().expect("momentum_buffer piece"))
    } else {
        None
    };
    let update = |p: &mut T, gv: T, sq: &mut T, ga: Option<&mut T>, mb: Option<&mut T>| {
        let pv = p.up();
        let mut gv = gv.up();
        if MAXIMIZE {
            gv = gv.neg();
        }
        if WD {
            gv = gv.add(pv.mul(k.wd));
        }
        // square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        let sqv = k.alpha.mul(sq.up()).add(k.one_m_alpha.mul(gv).mul(gv));
        *sq = T::down(sqv);
        let avg = match ga {
            Some(ga) => {
                // grad_avg.lerp_(grad, 1 - alpha); avg = sqrt(square_avg - grad_avg^2) + eps
                let gav = ga.up();
                let gav = gav.add(k.one_m_alpha.mul(gv.sub(gav)));
                *ga = T::down(gav);
                sqv.sub(gav.mul(gav)).sqrt().add(k.eps)
            }
            None => sqv.sqrt().add(k.eps),
        };
        let step = gv.div(avg);
        let step = match mb {
            // buf.mul_(momentum).addcdiv_(grad, avg)
            Some(mb) => {
                let bv = k.momentum.mul(mb.up()).add(step);
                *mb = T::down(bv);
                bv
            }
            None => step,
        };
        *p = T::down(pv.sub(k.lr.mul(step)));
    };
    let pg = p.iter_mut().zip(g).zip(sq.iter_mut());
    match (ga, mb) {
        (Some(ga), Some(mb)) => {
            for ((((p, &gv), sq), ga), mb) in pg.zip(ga.iter_mut()).zip(mb.iter_mut()) {
                update(p, gv, sq, Some(ga), Some(mb));
            }
        }
        (Some(ga), None) => {
            for (((p, &gv), sq), ga) in pg.zip(ga.iter_mut()) {
                update(p, gv, sq, Some(ga), None);
            }
        }
        (None, Some(mb)) => {
            for (((p, &gv), sq), mb) in pg.zip(mb.iter_mut()) {
                update(p, gv, sq, None, Some(mb));
            }
        }
        (None, None) => {
            for ((p, &gv), sq) in pg {
                update(p, gv, sq, None, None);
            }
        }
    }
}

/// One RMSprop step over `param` with gradient `grad` and state `square_avg`, `grad_avg`
/// (when `h.centered`) and `momentum_buffer` (when `h.momentum > 0`). All slices have one
/// length.
pub fn fused_rmsprop<T: Element>(
    param: &mut [T],
    grad: &[T],
    square_avg: &mut [T],
    grad_avg: Option<&mut [T]>,
    momentum_buffer: Option<&mut [T]>,
    h: &RmspropStep,
) where
    T::Compute: FloatMath,
{
    let c = |v: f64| <T::Compute as Arith>::from_f64(v);
    let k = RmspropCoef {
        lr: c(h.lr),
        alpha: c(h.alpha),
        one_m_alpha: c(1.0 - h.alpha),
        eps: c(h.eps),
        wd: c(h.weight_decay),
        momentum: c(h.momentum),
    };
    let (maximize, wd) = (h.maximize, h.weight_decay != 0.0);
    let (centered, has_mom) = (grad_avg.is_some(), momentum_buffer.is_some());
    let mut bufs = vec![param, square_avg];
    bufs.extend(grad_avg);
    bufs.extend(momentum_buffer);
    run(
        bufs,
        grad,
        &|b, g| with_flags!(rmsprop_piece::<T>(b, g, &k); [maximize, wd, centered, has_mom]; []),
    );
}

/// Adagrad's per-step coefficients in the compute type.
struct AdagradCoef<C> {
    clr: C,
    wd: C,
    eps: C,
}

/// One piece of an Adagrad step; `b` = [param, state_sum].
#[inline(never)]
fn adagrad_piece<T: Element, const MAXIMIZE: bool, const WD: bool>(
    b: &mut [&mut [T]],
    g: &[T],
    k: &AdagradCoef<T::Compute>,
) where
    T::Compute: FloatMath,
{
    let (p, rest) = b.split_first_mut().expect("param piece");
    let sum = rest.first_mut().expect("state_sum piece");
    for ((p, &gv), s) in p.iter_mut().zip(g).zip(sum.iter_mut()) {
        let pv = p.up();
        let mut gv = gv.up();
        if MAXIMIZE {
            gv = gv.neg();
        }
        if WD {
            gv = gv.add(pv.mul(k.wd));
        }
        // state_sum.addcmul_(grad, grad); std = state_sum.sqrt() + eps
        let sv = s.up().add(gv.mul(gv));
        *s = T::down(sv);
        let std = sv.sqrt().add(k.eps);
        *p = T::down(pv.sub(k.clr.mul(gv.div(std))));
    }
}

/// One Adagrad step over `param` with gradient `grad` and state `state_sum`. All slices
/// have one length.
pub fn fused_adagrad<T: Element>(param: &mut [T], grad: &[T], state_sum: &mut [T], h: &AdagradStep)
where
    T::Compute: FloatMath,
{
    let c = |v: f64| <T::Compute as Arith>::from_f64(v);
    let k = AdagradCoef {
        clr: c(adagrad_clr(h)),
        wd: c(h.weight_decay),
        eps: c(h.eps),
    };
    let (maximize, wd) = (h.maximize, h.weight_decay != 0.0);
    run(
        vec![param, state_sum],
        grad,
        &|b, g| with_flags!(adagrad_piece::<T>(b, g, &k); [maximize, wd]; []),
    );
}

/// Adagrad's decayed learning rate for step `h.step`: `lr / (1 + (step - 1) * lr_decay)`.
pub fn adagrad_clr(h: &AdagradStep) -> f64 {
    h.lr / (1.0 + (h.step - 1.0) * h.lr_decay)
}
