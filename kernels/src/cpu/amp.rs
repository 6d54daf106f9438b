//! Gradient scaling for mixed precision (PyTorch's `_amp_foreach_non_finite_check_and_unscale_`
//! and `_amp_update_scale_` CPU kernels, `aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp`),
//! what `GradScaler` runs once per step.

use crate::cpu::strided::for_each_offset;
use crate::element::{Arith, Classify, Element, FloatMath};
use crate::parallel::{fan_out, par_chunks_mut};
use crate::view::Dst;
use std::sync::atomic::{AtomicBool, Ordering};

/// Slices at least this long fan out over kiln's pool.
const PARALLEL_MIN: usize = 1 << 15;
/// Elements per parallel task.
const CHUNK: usize = 1 << 13;

/// One element: unscaled in the opmath type (f32 for f16/bf16, as PyTorch), `true` when it
/// was inf or NaN. `inv_scale == 1` leaves the value untouched, as PyTorch does.
#[inline(always)]
fn unscale_one<T: Element>(x: &mut T, inv_scale: T::Compute, identity: bool) -> bool
where
    T::Compute: FloatMath + Classify,
{
    let v = x.up();
    if !identity {
        *x = T::down(v.mul(inv_scale));
    }
    v.is_nan() || v.is_inf()
}

fn unscale_slice<T: Element>(s: &mut [T], inv_scale: T::Compute, identity: bool) -> bool
where
    T::Compute: FloatMath + Classify,
{
    // No early exit: every element is unscaled even after an inf is seen, like PyTorch.
    s.iter_mut().fold(false, |found, x| {
        unscale_one(x, inv_scale, identity) | found
    })
}

/// Multiplies every element of `grad` by `inv_scale` in place (computing in the opmath type)
/// and returns whether any element was inf or NaN before the multiply. `grad` must not
/// overlap itself (each element is written once). Strided layouts are walked element by
/// element; a dense one (contiguous or permuted) as one block in storage order.
pub fn non_finite_check_and_unscale<T: Element>(grad: Dst<'_, T>, inv_scale: f32) -> bool
where
    T::Compute: FloatMath + Classify,
{
    let identity = inv_scale == 1.0;
    let inv = <T::Compute as Arith>::from_f64(inv_scale as f64);
    let layout = grad.layout;
    let n = layout.numel();
    if n == 0 {
        return false;
    }
    if layout.is_non_overlapping_and_dense() {
        // A dense layout's elements are the `n` slots from its offset (strides are positive).
        let block = &mut grad.data[layout.offset..layout.offset + n];
        if fan_out(n >= PARALLEL_MIN) {
            let found = AtomicBool::new(false);
            par_chunks_mut(block, CHUNK, &|_, piece| {
                if unscale_slice(piece, inv, identity) {
                    found.store(true, Ordering::Relaxed);
                }
            });
            return found.into_inner();
        }
        return unscale_slice(block, inv, identity);
    }
    let data = grad.data;
    let mut found = false;
    for_each_offset(layout, |o| {
        found |= unscale_one(&mut data[o], inv, identity)
    });
    found
}

/// The scale after one step (PyTorch's `_amp_update_scale_cpu_`): on `found_inf != 0`
/// (NaN included) the scale is multiplied by `backoff_factor` and the tracker reset;
/// otherwise the tracker counts the step, and when it reaches `growth_interval` the scale
/// is multiplied by `growth_factor` (kept only if the result is finite in f32) and the
/// tracker reset. Products are computed in f64 and rounded to f32, as PyTorch's
/// `float * double` does. Returns `(scale, growth_tracker)`.
pub fn update_scale(
    scale: f32,
    growth_tracker: i32,
    found_inf: f32,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: i64,
) -> (f32, i32) {
    if found_inf != 0.0 {
        return ((scale as f64 * backoff_factor) as f32, 0);
    }
    let successful = growth_tracker.wrapping_add(1);
    if i64::from(successful) == growth_interval {
        let grown = (scale as f64 * growth_factor) as f32;
        (if grown.is_finite() { grown } else { scale }, 0)
    } else {
        (scale, successful)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layout;

    #[test]
    fn update_scale_follows_pytorch() {
        assert_eq!(update_scale(4.0, 1, 1.0, 2.0, 0.5, 3), (2.0, 0));
        assert_eq!(update_scale(4.0, 1, f32::NAN, 2.0, 0.5, 3), (2.0, 0));
        assert_eq!(update_scale(4.0, 1, 0.0, 2.0, 0.5, 3), (4.0, 2));
        assert_eq!(update_scale(4.0, 2, 0.0, 2.0, 0.5, 3), (8.0, 0));
        assert_eq!(update_scale(3e38, 2, 0.0, 2.0, 0.5, 3), (3e38, 0));
        assert_eq!(update_scale(1.0, 5, 0.0, 2.0, 0.5, 3), (1.0, 6));
    }

    #[test]
    fn unscale_walks_a_strided_layout() {
        // A [2, 2] view with row stride 3 into 6 slots; slot 2 (not in the view) holds inf.
        let mut data = [2.0f32, 4.0, f32::INFINITY, 6.0, 8.0, 10.0];
        let layout = Layout {
            sizes: crate::layout::dims(&[2, 2]),
            strides: crate::layout::dims(&[3, 1]),
            offset: 0,
        };
        let found = non_finite_check_and_unscale(Dst::new(&mut data, &layout), 0.5);
        assert!(!found);
        assert_eq!(data, [1.0, 2.0, f32::INFINITY, 3.0, 4.0, 10.0]);
    }
}
