//! Splitting and joining: `split`, `split_with_sizes`, `chunk`, `unbind` (views of the input),
//! `meshgrid`, `stack`.

use crate::ops::shaping::{host_len, host_vec, wrap};
use crate::{Error, Result, Tensor};

/// `split(split_size, dim)`: consecutive pieces of `split_size` along `dim` (the last may be
/// smaller).
pub fn split(t: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    if t.dim() == 0 {
        return Err(Error::shape(
            "split",
            "split expects at least a 1-dimensional tensor",
        ));
    }
    if split_size < 0 {
        return Err(Error::shape(
            "split",
            format!("split expects split_size be non-negative, but got split_size={split_size}"),
        ));
    }
    let d = wrap("split", dim, t.dim())?;
    let n = t.shape()[d] as i64;
    if split_size == 0 && n != 0 {
        return Err(Error::shape(
            "split",
            format!(
                "split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            ),
        ));
    }
    // ceil(n / split_size) without forming `n + split_size`, which overflows for a huge
    // split_size.
    let pieces = if n == 0 { 1 } else { (n - 1) / split_size + 1 };
    let mut out = host_vec("split", pieces as usize)?;
    for i in 0..pieces {
        let start = i * split_size;
        out.push(t.narrow(d as i64, start, split_size.min(n - start))?);
    }
    Ok(out)
}

/// `split(split_sizes, dim)`: pieces of the given sizes, which must add up to the dim's size.
pub fn split_with_sizes(t: &Tensor, split_sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    if t.dim() == 0 {
        return Err(Error::shape(
            "split_with_sizes",
            "split expects at least a 1-dimensional tensor",
        ));
    }
    let d = wrap("split_with_sizes", dim, t.dim())?;
    let n = t.shape()[d] as i64;
    if split_sizes.iter().any(|&s| s < 0) {
        return Err(Error::shape(
            "split_with_sizes",
            format!("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={split_sizes:?}"),
        ));
    }
    let total = split_sizes
        .iter()
        .try_fold(0i64, |acc, &s| acc.checked_add(s));
    if total != Some(n) {
        return Err(Error::shape(
            "split_with_sizes",
            format!("split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), but got split_sizes={split_sizes:?}"),
        ));
    }
    let mut start = 0;
    split_sizes
        .iter()
        .map(|&s| {
            let piece = t.narrow(d as i64, start, s);
            start += s;
            piece
        })
        .collect()
}

/// `chunk(chunks, dim)`: at most `chunks` pieces of equal size (the last may be smaller).
pub fn chunk(t: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    if t.dim() == 0 {
        return Err(Error::shape(
            "chunk",
            "chunk expects at least a 1-dimensional tensor",
        ));
    }
    if chunks <= 0 {
        return Err(Error::value(
            "chunk",
            format!("chunk expects `chunks` to be greater than 0, got: {chunks}"),
        ));
    }
    let d = wrap("chunk", dim, t.dim())?;
    let n = t.shape()[d] as i64;
    // ceil(n / chunks) without forming `n + chunks`, which overflows for a huge count.
    let size = if n == 0 { 0 } else { (n - 1) / chunks + 1 };
    if size == 0 {
        // An empty dim still gives `chunks` (empty) pieces, as PyTorch: one tensor each,
        // so a huge count is an allocation error, not a loop that never ends.
        let mut pieces = host_vec::<Tensor>("chunk", host_len("chunk", chunks)?)?;
        for _ in 0..chunks {
            pieces.push(t.narrow(d as i64, 0, 0)?);
        }
        return Ok(pieces);
    }
    split(t, size, dim)
}

/// `unbind(dim)`: every slice along `dim`, with `dim` removed.
pub fn unbind(t: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    if t.dim() == 0 {
        return Err(Error::index(
            "unbind",
            "Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    let d = wrap("unbind", dim, t.dim())?;
    // One tensor per slice: an expanded dim may be far longer than memory allows.
    let mut out = host_vec("unbind", t.shape()[d])?;
    for i in 0..t.shape()[d] as i64 {
        out.push(t.select(d as i64, i)?);
    }
    Ok(out)
}

/// `meshgrid(tensors, indexing)`: coordinate grids from 0-d or 1-d tensors; `"ij"` indexes
/// the grid by input order, `"xy"` swaps the first two dims (NumPy's Cartesian indexing).
pub fn meshgrid(tensors: &[Tensor], indexing: &str) -> Result<Vec<Tensor>> {
    let op = "meshgrid";
    if tensors.is_empty() {
        return Err(Error::value(
            op,
            "torch.meshgrid: Expected at least one tensor",
        ));
    }
    if indexing != "ij" && indexing != "xy" {
        return Err(Error::value(
            op,
            format!("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}"),
        ));
    }
    for t in tensors {
        if t.dim() > 1 {
            return Err(Error::shape(
                op,
                format!(
                    "torch.meshgrid: Expected 0D or 1D tensor in the input list but got: {:?}",
                    t.shape()
                ),
            ));
        }
        if t.dtype() != tensors[0].dtype() {
            return Err(Error::dtype(
                op,
                "torch.meshgrid: Expected all tensors to have the same dtype.",
            ));
        }
        if t.device() != tensors[0].device() {
            return Err(Error::device(
                op,
                "torch.meshgrid: Expected all tensors to have the same device.",
            ));
        }
    }
    let swap = indexing == "xy" && tensors.len() >= 2;
    let pos = |i: usize| match (swap, i) {
        (true, 0) => 1,
        (true, 1) => 0,
        _ => i,
    };
    let mut shape = vec![0i64; tensors.len()];
    for (i, t) in tensors.iter().enumerate() {
        shape[pos(i)] = t.numel() as i64;
    }
    tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut view = vec![1i64; tensors.len()];
            view[pos(i)] = t.numel() as i64;
            t.reshape(&view)?.expand(&shape)
        })
        .collect()
}

/// `stack(tensors, dim)`: `cat` of the tensors each unsqueezed at `dim`.
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let first = tensors
        .first()
        .ok_or_else(|| Error::shape("stack", "stack expects a non-empty TensorList"))?;
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != first.shape() {
            return Err(Error::shape(
                "stack",
                format!("stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}", first.shape(), t.shape()),
            ));
        }
    }
    let d = kiln_kernels::layout::wrap_dim(dim, first.dim() + 1)
        .map_err(|m| Error::op("stack", m))? as i64;
    let parts: Vec<Tensor> = tensors
        .iter()
        .map(|t| t.unsqueeze(d))
        .collect::<Result<_>>()?;
    crate::cat_with(&parts, d)
}
