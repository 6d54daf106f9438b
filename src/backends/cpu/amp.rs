//! The CPU side of the gradient scaler's two updates (`crate::ops::amp` checks the
//! arguments): `kiln_kernels::cpu::amp` on each gradient in its own dtype and layout, and the
//! scale update on the two host scalars.

use super::access::{dst, src, with_buffers};
use crate::tensor::{AmpScaleUpdate, BufferElement};
use crate::{DType, Tensor};
use kiln_kernels::cpu::amp::{non_finite_check_and_unscale, update_scale};

/// The one element of a 1-element tensor `t` of type `T` (at its offset, whatever its
/// strides).
fn scalar<T: BufferElement>(t: &Tensor) -> T {
    with_buffers(&[t], &[], |ins, _| {
        let s = src::<T>(ins[0], t);
        s.data[s.layout.offset]
    })
}

fn set_scalar<T: BufferElement>(t: &Tensor, v: T) {
    with_buffers(&[], &[t], |_, mut outs| {
        let o = outs.pop().expect("one output locked");
        let d = dst::<T>(o, t);
        d.data[d.layout.offset] = v;
    })
}

/// `[grad, found_inf, inv_scale]`: unscales `grad` in place; `found_inf = 1` on an inf/NaN.
pub(super) fn unscale(group: &[&Tensor]) {
    let (g, found_inf, inv_scale) = (group[0], group[1], group[2]);
    let inv = scalar::<f32>(inv_scale);
    let found = with_buffers(&[], &[g], |_, mut outs| {
        let o = outs.pop().expect("one output locked");
        match g.dtype() {
            DType::F32 => non_finite_check_and_unscale(dst::<f32>(o, g), inv),
            DType::F64 => non_finite_check_and_unscale(dst::<f64>(o, g), inv),
            DType::F16 => non_finite_check_and_unscale(dst::<half::f16>(o, g), inv),
            DType::BF16 => non_finite_check_and_unscale(dst::<half::bf16>(o, g), inv),
            other => unreachable!("amp unscale on {other}: floating dtype checked by the op"),
        }
    });
    if found {
        set_scalar(found_inf, 1.0f32);
    }
}

/// `[scale, growth_tracker, found_inf]`: the loss-scale update.
pub(super) fn update(group: &[&Tensor], h: &AmpScaleUpdate) {
    let (scale, tracker) = update_scale(
        scalar::<f32>(group[0]),
        scalar::<i32>(group[1]),
        scalar::<f32>(group[2]),
        h.growth_factor,
        h.backoff_factor,
        h.growth_interval,
    );
    set_scalar(group[0], scale);
    set_scalar(group[1], tracker);
}
