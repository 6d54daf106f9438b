//! Padding: `pad` (PyTorch's `F.pad`) in the constant, reflect, replicate and circular modes.

use crate::ops::shaping::{copied, host_vec, index, size_overflow};
use crate::{DType, Error, Result, Scalar, Tensor};

/// Source index for output position `j` (from `-left`) of a dim of `n` in a non-constant
/// padding mode (`n > 0`). In i128: `j` runs from `-left`, which may be `-i64::MIN`.
fn pad_source(mode: &str, j: i128, n: i64) -> i64 {
    let n = n as i128;
    let src = match mode {
        "reflect" => {
            let period = 2 * (n - 1);
            let m = j.rem_euclid(period.max(1));
            if m < n {
                m
            } else {
                period - m
            }
        }
        _ => j.clamp(0, n - 1), // replicate
    };
    src as i64 // in 0..n
}

/// `pad(pad, mode, value)`: PyTorch's `F.pad`. `pad` lists (left, right) pairs from the last
/// dim backwards; negative amounts crop. Modes: constant (with `value`, default 0), reflect,
/// replicate, circular (those three on the last 1–3 dims of a batched or unbatched input).
pub fn pad(t: &Tensor, pad: &[i64], mode: &str, value: Option<f64>) -> Result<Tensor> {
    let op = "pad";
    if !pad.len().is_multiple_of(2) {
        return Err(Error::shape(op, "Padding length must be divisible by 2"));
    }
    if pad.len() > 2 * t.dim() {
        return Err(Error::shape(
            op,
            format!(
                "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {}",
                pad.len(),
                t.dim()
            ),
        ));
    }
    if !["constant", "reflect", "replicate", "circular"].contains(&mode) {
        return Err(Error::value(
            op,
            format!("Unrecognised padding mode {mode}"),
        ));
    }
    if mode != "constant" {
        if value.is_some_and(|v| v != 0.0) {
            return Err(Error::value(
                op,
                format!("Padding mode \"{mode}\" doesn't take in value argument"),
            ));
        }
        let k = pad.len() / 2;
        if k == 0 || t.dim() < k + 1 || t.dim() > k + 2 {
            return Err(Error::shape(
                op,
                format!(
                    "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now (got a {}D input and padding for {k} dims)",
                    t.dim()
                ),
            ));
        }
    }
    let mut r = t.clone();
    for (i, pair) in pad.chunks(2).enumerate() {
        let d = t.dim() - 1 - i;
        let (left, right) = (pair[0], pair[1]);
        let n = t.shape()[d] as i64;
        if left == 0 && right == 0 {
            continue;
        }
        let out = n
            .checked_add(left)
            .and_then(|v| v.checked_add(right))
            .ok_or_else(|| {
                size_overflow(
                    op,
                    format!("padding ({left}, {right}) of dimension {d} of size {n}"),
                )
            })?;
        if out < 0 {
            return Err(Error::shape(
                op,
                if mode == "circular" {
                    "Negative padding value is resulting in an empty dimension".to_string()
                } else {
                    format!("The input size {n}, plus negative padding {left} and {right} resulted in a negative output size, which is invalid. Check dimension {d} of your input.")
                },
            ));
        }
        if mode == "constant" {
            r = pad_constant(&r, d, left, right, value.unwrap_or(0.0))?;
            continue;
        }
        if mode == "circular" {
            // PyTorch crops the negative amounts first, then wraps around what is left (its
            // check is against the uncropped size; wrapping further than the cropped size
            // reads its own uninitialised output there, so it is an error here).
            let lo = left.saturating_neg().max(0);
            let kept = out - left.max(0) - right.max(0);
            if left > n || right > n || left > kept || right > kept {
                return Err(Error::value(
                    op,
                    "Padding value causes wrapping around more than once.",
                ));
            }
            let mut src = host_vec(op, out as usize)?;
            src.extend((0..out).map(|i| lo + (i - left.max(0)).rem_euclid(kept.max(1))));
            r = r.index_select(d as i64, &index(src, t.device())?)?;
            continue;
        }
        let bad = match mode {
            "reflect" => left >= n || right >= n,
            _ => n == 0,
        };
        if bad {
            return Err(Error::shape(
                op,
                format!("Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({left}, {right}) at dimension {d} of input {:?}", t.shape()),
            ));
        }
        // As long as the padded dim: a huge amount is an allocation error here.
        let mut src = host_vec(op, out as usize)?;
        src.extend((0..out).map(|i| pad_source(mode, i as i128 - left as i128, n)));
        r = r.index_select(d as i64, &index(src, t.device())?)?;
    }
    copied(t, r)
}

/// Constant padding of one dim: crop negative amounts, then concatenate filled blocks.
fn pad_constant(t: &Tensor, d: usize, left: i64, right: i64, value: f64) -> Result<Tensor> {
    let n = t.shape()[d] as i64;
    // Saturating: `-i64::MIN` only reaches `narrow`, which rejects it.
    let (lo, hi) = (left.saturating_neg().max(0), right.saturating_neg().max(0));
    let core = t.narrow(d as i64, lo, (n - lo - hi).max(0))?;
    let core_shape = core.shape().to_vec();
    let fill = |k: i64| -> Result<Tensor> {
        let mut shape = core_shape.clone();
        shape[d] = k as usize;
        let v = match t.dtype() {
            DType::Bool => Scalar::Bool(value != 0.0),
            dt if dt.is_floating_point() => Scalar::Float(value),
            _ => Scalar::Int(value as i64),
        };
        Tensor::full_on(&shape, v, t.dtype(), t.device())
    };
    let mut parts = Vec::with_capacity(3);
    if left > 0 {
        parts.push(fill(left)?);
    }
    parts.push(core);
    if right > 0 {
        parts.push(fill(right)?);
    }
    if parts.len() == 1 {
        return Ok(parts.pop().expect("one part"));
    }
    crate::cat_with(&parts, d as i64)
}
