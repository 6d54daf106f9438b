//! The CPU side of the fused optimizer steps (`crate::ops::optim` checks the arguments):
//! each parameter's tensors updated as one flat block by `kiln_kernels::cpu::optim`.

use super::access::with_buffers;
use crate::tensor::{BufferElement, FusedStep};
use crate::{DType, Tensor};
use kiln_kernels::cpu::optim::{
    fused_adagrad, fused_adam, fused_rmsprop, fused_sgd, AdagradStep, AdamStep, RmspropStep,
    SgdStep,
};

/// Runs `step` on `group` (the parameter, its gradient, its state), in the parameter's dtype.
pub(super) fn step(group: &[&Tensor], step: FusedStep<'_>) {
    macro_rules! each_float {
        ($one:ident, $h:expr) => {
            match group[0].dtype() {
                DType::F32 => $one::<f32>(group, $h),
                DType::F64 => $one::<f64>(group, $h),
                DType::F16 => $one::<half::f16>(group, $h),
                DType::BF16 => $one::<half::bf16>(group, $h),
                other => unreachable!("fused optimizer on {other}: dtype checked by the op"),
            }
        };
    }
    match step {
        FusedStep::Adam(h) => each_float!(adam_one, h),
        FusedStep::Sgd(h) => each_float!(sgd_one, h),
        FusedStep::Rmsprop(h) => each_float!(rmsprop_one, h),
        FusedStep::Adagrad(h) => each_float!(adagrad_one, h),
        FusedStep::AmpUnscale | FusedStep::AmpUpdateScale(_) => {
            unreachable!("the CPU backend sends the gradient scaler's updates to cpu::amp")
        }
    }
}

/// The dense block of `t` (all its elements, in storage order) inside its buffer.
fn block<'a, T: BufferElement>(buf: &'a [T], t: &Tensor) -> &'a [T] {
    let start = t.storage_offset();
    &buf[start..start + t.numel()]
}

fn block_mut<'a, T: BufferElement>(buf: &'a mut [T], t: &Tensor) -> &'a mut [T] {
    let start = t.storage_offset();
    &mut buf[start..start + t.numel()]
}

fn adam_one<T: BufferElement>(group: &[&Tensor], h: &AdamStep)
where
    T::Compute: kiln_kernels::FloatMath,
{
    let (param, grad) = (group[0], group[1]);
    let outs: Vec<&Tensor> = std::iter::once(param)
        .chain(group[2..].iter().copied())
        .collect();
    with_buffers(&[grad], &outs, |ins, bufs| {
        let g = block(T::slice(ins[0]).expect("checked dtype"), grad);
        let mut it = bufs.into_iter().zip(outs.iter());
        let mut next = || {
            let (b, t) = it.next().expect("one buffer per tensor");
            block_mut(T::slice_mut(b).expect("checked dtype"), t)
        };
        let p = next();
        let m = next();
        let v = next();
        let mx = if h.amsgrad { Some(next()) } else { None };
        fused_adam(p, g, m, v, mx, h);
    });
}

fn sgd_one<T: BufferElement>(group: &[&Tensor], h: &SgdStep)
where
    T::Compute: kiln_kernels::FloatMath,
{
    let (param, grad) = (group[0], group[1]);
    let outs: Vec<&Tensor> = std::iter::once(param)
        .chain(group[2..].iter().copied())
        .collect();
    with_buffers(&[grad], &outs, |ins, bufs| {
        let g = block(T::slice(ins[0]).expect("checked dtype"), grad);
        let mut it = bufs.into_iter().zip(outs.iter());
        let (pb, pt) = it.next().expect("param buffer");
        let p = block_mut(T::slice_mut(pb).expect("checked dtype"), pt);
        let m = it
            .next()
            .map(|(b, t)| block_mut(T::slice_mut(b).expect("checked dtype"), t));
        fused_sgd(p, g, m, h);
    });
}

fn rmsprop_one<T: BufferElement>(group: &[&Tensor], h: &RmspropStep)
where
    T::Compute: kiln_kernels::FloatMath,
{
    let (param, grad) = (group[0], group[1]);
    let outs: Vec<&Tensor> = std::iter::once(param)
        .chain(group[2..].iter().copied())
        .collect();
    with_buffers(&[grad], &outs, |ins, bufs| {
        let g = block(T::slice(ins[0]).expect("checked dtype"), grad);
        let mut it = bufs.into_iter().zip(outs.iter());
        let mut next = || {
            let (b, t) = it.next().expect("one buffer per tensor");
            block_mut(T::slice_mut(b).expect("checked dtype"), t)
        };
        let p = next();
        let sq = next();
        let ga = if h.centered { Some(next()) } else { None };
        let mb = if h.momentum > 0.0 { Some(next()) } else { None };
        fused_rmsprop(p, g, sq, ga, mb, h);
    });
}

fn adagrad_one<T: BufferElement>(group: &[&Tensor], h: &AdagradStep)
where
    T::Compute: kiln_kernels::FloatMath,
{
    let (param, grad, sum) = (group[0], group[1], group[2]);
    with_buffers(&[grad], &[param, sum], |ins, bufs| {
        let g = block(T::slice(ins[0]).expect("checked dtype"), grad);
        let mut it = bufs.into_iter();
        let p = block_mut(
            T::slice_mut(it.next().expect("param buffer")).expect("checked dtype"),
            param,
        );
        let s = block_mut(
            T::slice_mut(it.next().expect("state_sum buffer")).expect("checked dtype"),
            sum,
        );
        fused_adagrad(p, g, s, h);
    });
}
