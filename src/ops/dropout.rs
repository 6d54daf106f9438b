//! Dropout: `dropout`, its mask drawn from the global generator.

use crate::{DType, Error, Result, Tensor};

/// `dropout(p, train)`: zeroes each element with probability `p` (from the global generator)
/// and scales the rest by `1 / (1 - p)`; the identity when not training.
pub fn dropout(t: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::value(
            "dropout",
            format!("dropout probability has to be between 0 and 1, but got {p}"),
        ));
    }
    if !train || p == 0.0 {
        return Ok(t.clone());
    }
    if p == 1.0 {
        return t.mul(&t.zeros_like()?);
    }
    let compute = if t.dtype().is_floating_point() {
        t.dtype()
    } else {
        DType::F32
    };
    let keep = Tensor::rand_on(t.shape(), compute, t.device())?.ge_scalar(p)?;
    t.mul(&keep.to_dtype(t.dtype())?)?.div_scalar(1.0 - p)
}
