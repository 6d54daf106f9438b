//! Float64 references for copies and dtype/device conversion.

use super::input;
use crate::harness::{RefTensor, Sample};
use kiln::DType;

/// clone, contiguous: the input's values.
pub fn identity(s: &Sample) -> Vec<RefTensor> {
    vec![input(s, 0)]
}

/// to(dtype): integers truncate toward zero, bool is `x != 0`, floats keep the value (the
/// comparison tolerance covers rounding to the target).
/// to(device) moves values without changing them.
pub fn to_device(s: &Sample) -> Vec<RefTensor> {
    vec![input(s, 0)]
}

pub fn to_dtype(s: &Sample) -> Vec<RefTensor> {
    let target = s.dtype("dtype").expect("sample provides dtype");
    let mut x = input(s, 0);
    for v in &mut x.data {
        *v = match target {
            DType::Bool => (*v != 0.0) as u8 as f64,
            d if d.is_floating_point() => *v,
            _ => v.trunc(),
        };
    }
    vec![x]
}
