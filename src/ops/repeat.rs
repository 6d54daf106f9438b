//! Repeating: `repeat`, `tile`, `repeat_interleave`.

use crate::ops::shaping::{host_len, host_vec, index, size_at, size_overflow, wrap};
use crate::{DType, Error, Result, Tensor};

/// `repeat(repeats)`: the tensor tiled `repeats[d]` times along each dim (leading 1s are
/// added when `repeats` is longer), as one expand of an interleaved view and a reshape.
pub fn repeat(t: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    if repeats.len() < t.dim() {
        return Err(Error::shape(
            "repeat",
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        ));
    }
    if let Some(r) = repeats.iter().find(|&&r| r < 0) {
        return Err(Error::shape(
            "repeat",
            format!("Trying to create tensor with negative dimension {r}: {repeats:?}"),
        ));
    }
    let pad = repeats.len() - t.dim();
    let sizes: Vec<i64> = std::iter::repeat_n(1, pad)
        .chain(t.shape().iter().map(|&s| s as i64))
        .collect();
    let paired: Vec<i64> = sizes.iter().flat_map(|&s| [1, s]).collect();
    let expanded: Vec<i64> = repeats
        .iter()
        .zip(&sizes)
        .flat_map(|(&r, &s)| [r, s])
        .collect();
    let out = repeats
        .iter()
        .zip(&sizes)
        .map(|(&r, &s)| r.checked_mul(s))
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(|| {
            Error::shape(
                "repeat",
                format!(
                    "repeats {repeats:?} of a tensor of size {:?} overflow int64 (numel: integer multiplication overflow)",
                    t.shape()
                ),
            )
        })?;
    t.reshape(&paired)?.expand(&expanded)?.reshape(&out)
}

/// `tile(dims)`: `repeat` with `dims` padded with leading 1s to the tensor's rank.
pub fn tile(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let pad = t.dim().saturating_sub(dims.len());
    let full: Vec<i64> = std::iter::repeat_n(1, pad)
        .chain(dims.iter().copied())
        .collect();
    repeat(t, &full)
}

/// `repeat_interleave(repeats, dim)`: each element (slice along `dim`) repeated `repeats`
/// times in place; with no dim, over the flattened tensor.
pub fn repeat_interleave(
    t: &Tensor,
    repeats: i64,
    dim: Option<i64>,
    output_size: Option<i64>,
) -> Result<Tensor> {
    if repeats < 0 {
        return Err(Error::value(
            "repeat_interleave",
            "repeats can not be negative",
        ));
    }
    let (x, d) = interleave_input(t, dim)?;
    let n = size_at(&x, d);
    let mut counts = host_vec("repeat_interleave", n)?;
    counts.resize(n, repeats);
    interleave(&x, d, counts, output_size)
}

/// `repeat_interleave(repeats, dim)` with a 0-d or 1-d tensor of per-slice counts.
pub fn repeat_interleave_tensor(
    t: &Tensor,
    repeats: &Tensor,
    dim: Option<i64>,
    output_size: Option<i64>,
) -> Result<Tensor> {
    let op = "repeat_interleave";
    if repeats.dim() > 1 {
        return Err(Error::shape(op, "repeats must be 0-dim or 1-dim tensor"));
    }
    if repeats.dtype().is_floating_point() || repeats.dtype() == DType::Bool {
        return Err(Error::dtype(
            op,
            format!(
                "repeats has to be Long or Int tensor, but got {}",
                repeats.dtype().scalar_type_name()
            ),
        ));
    }
    let (x, d) = interleave_input(t, dim)?;
    let n = size_at(&x, d);
    let counts = repeats.to_vec::<i64>()?;
    let counts = if repeats.dim() == 0 {
        let mut all = host_vec(op, n)?;
        all.resize(n, counts[0]);
        all
    } else if counts.len() == n {
        counts
    } else {
        return Err(Error::shape(
            op,
            format!(
                "repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size({}) = {n}",
                counts.len(),
                dim.unwrap_or(0)
            ),
        ));
    };
    if counts.iter().any(|&c| c < 0) {
        return Err(Error::value(op, "repeats can not be negative"));
    }
    interleave(&x, d, counts, output_size)
}

/// The tensor and wrapped dim `repeat_interleave` works on (flattened when `dim` is None).
fn interleave_input(t: &Tensor, dim: Option<i64>) -> Result<(Tensor, usize)> {
    match dim {
        None => Ok((t.reshape([-1])?, 0)),
        Some(d) => Ok((t.clone(), wrap("repeat_interleave", d, t.dim())?)),
    }
}

/// Slice `i` of `x` along `d` repeated `counts[i]` (non-negative) times.
fn interleave(x: &Tensor, d: usize, counts: Vec<i64>, output_size: Option<i64>) -> Result<Tensor> {
    let op = "repeat_interleave";
    let total = counts
        .iter()
        .try_fold(0i64, |acc, &c| acc.checked_add(c))
        .ok_or_else(|| size_overflow(op, "the repeats' sum"))?;
    if let Some(o) = output_size {
        if o != total {
            return Err(Error::shape(
                op,
                format!("allocated size does not match required size: output_size={o}, but the repeats add up to {total}"),
            ));
        }
    }
    // The index list is as long as the result: a huge count is an allocation error here.
    let mut idx = host_vec(op, host_len(op, total)?)?;
    for (i, &c) in counts.iter().enumerate() {
        idx.extend(std::iter::repeat_n(i as i64, c as usize));
    }
    if x.dim() == 0 {
        return x.reshape([1])?.index_select(0, &index(idx, x.device())?);
    }
    x.index_select(d as i64, &index(idx, x.device())?)
}
