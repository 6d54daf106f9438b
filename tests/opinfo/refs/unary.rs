//! Float64 references for the activations not written as a pointwise closure.

use super::input;
use crate::harness::{RefTensor, Sample};

fn map_input(s: &Sample, f: impl Fn(f64) -> f64) -> Vec<RefTensor> {
    let x = input(s, 0);
    vec![RefTensor {
        shape: x.shape.clone(),
        data: x.data.iter().map(|&v| f(v)).collect(),
    }]
}

/// relu6: `min(max(x, 0), 6)`.
pub fn relu6(s: &Sample) -> Vec<RefTensor> {
    map_input(s, |x| x.clamp(0.0, 6.0))
}

/// selu with the constants of Klambauer et al. (2017), to f64 precision.
pub fn selu(s: &Sample) -> Vec<RefTensor> {
    let alpha = 1.673_263_242_354_377_3;
    let scale = 1.050_700_987_355_480_5;
    map_input(s, |x| {
        if x > 0.0 {
            scale * x
        } else {
            scale * alpha * (x.exp() - 1.0)
        }
    })
}

/// celu: `max(0, x) + min(0, alpha (e^(x / alpha) - 1))`.
pub fn celu(s: &Sample) -> Vec<RefTensor> {
    let alpha = s.scalar("alpha").map_or(1.0, |a| a.to::<f64>());
    map_input(s, |x| {
        x.max(0.0) + (alpha * ((x / alpha).exp() - 1.0)).min(0.0)
    })
}
