//! Shape and indexing ops built from views, `index_select`, `gather` and `cat` (PyTorch's
//! CompositeImplicitAutograd): autograd and every backend come from the ops they call.
//! `nonzero` is the one explicit op here: it reads values to size its output.

use crate::ops::backward::i64s;
use crate::{DType, Device, Error, Result, Scalar, Tensor};
use kiln_kernels::layout::wrap_dim;

fn wrap(op: &str, dim: i64, nd: usize) -> Result<usize> {
    wrap_dim(dim, nd).map_err(|m| Error::op(op, m))
}

/// An int64 index vector on `device`.
pub(crate) fn index(vals: Vec<i64>, device: Device) -> Result<Tensor> {
    let n = vals.len();
    Tensor::from_vec(vals, &[n])?.to_device(device)
}

/// An empty vector with room for `len` values, or PyTorch's out-of-memory error for `op`:
/// host-side index lists sized by a user's argument (a repeat count, a padding amount, an
/// output size) must fail like a tensor allocation rather than abort the process.
pub(crate) fn host_vec<T>(op: &str, len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        crate::tensor::storage::out_of_memory(
            op,
            len as u128 * std::mem::size_of::<T>().max(1) as u128,
        )
    })?;
    Ok(v)
}

/// `n` as a host length, or `op`'s error when it does not fit this machine's `usize`.
pub(crate) fn host_len(op: &str, n: i64) -> Result<usize> {
    usize::try_from(n).map_err(|_| {
        Error::op(
            op,
            format!("Trying to create tensor with negative dimension {n}"),
        )
    })
}

/// PyTorch's error for a result size that overflows int64.
pub(crate) fn size_overflow(op: &str, what: impl std::fmt::Display) -> Error {
    Error::op(
        op,
        format!("{what}: integer overflow computing the result's size (numel overflow)"),
    )
}

/// Wrapped dims, or PyTorch's error when one is named twice.
fn distinct_dims(op: &str, dims: &[i64], nd: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let w = wrap(op, d, nd)?;
        if out.contains(&w) {
            return Err(Error::op(
                op,
                format!("dim {w} appears multiple times in the list of dims"),
            ));
        }
        out.push(w);
    }
    Ok(out)
}

/// A fresh tensor: ops documented to return a copy never hand back `t`'s storage.
fn copied(t: &Tensor, r: Tensor) -> Result<Tensor> {
    if r.shares_storage_with(t) {
        r.clone_tensor()
    } else {
        Ok(r)
    }
}

fn size_at(t: &Tensor, d: usize) -> usize {
    if t.dim() == 0 {
        1
    } else {
        t.shape()[d]
    }
}

// ---------------------------------------------------------------------------------------
// Reordering elements
// ---------------------------------------------------------------------------------------

/// `flip(dims)`: reverses the order of elements along each of `dims` (a copy).
pub fn flip(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let dims = distinct_dims("flip", dims, t.dim())?;
    let mut r = t.clone();
    for d in dims.into_iter().filter(|_| t.dim() > 0) {
        let n = t.shape()[d] as i64;
        if n > 1 {
            // Built as a tensor, so a huge (expanded) dim is an allocation error.
            let rev = Tensor::arange(n - 1, -1, -1, DType::I64)?.to_device(t.device())?;
            r = r.index_select(d as i64, &rev)?;
        }
    }
    copied(t, r)
}

/// `fliplr()`: flips dim 1 of a tensor with at least 2 dims.
pub fn fliplr(t: &Tensor) -> Result<Tensor> {
    if t.dim() < 2 {
        return Err(Error::op("fliplr", "Input must be >= 2-d."));
    }
    flip(t, &[1])
}

/// `flipud()`: flips dim 0 of a tensor with at least 1 dim.
pub fn flipud(t: &Tensor) -> Result<Tensor> {
    if t.dim() < 1 {
        return Err(Error::op("flipud", "Input must be >= 1-d."));
    }
    flip(t, &[0])
}

/// `roll(shifts, dims)`: elements shifted cyclically along each dim; with no dims, along
/// the flattened tensor.
pub fn roll(t: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if shifts.is_empty() {
        return Err(Error::op("roll", "`shifts` required"));
    }
    if dims.is_empty() && shifts.len() == 1 {
        let flat = roll(&t.flatten()?, shifts, &[0])?;
        return flat.view(i64s(t.shape()));
    }
    if shifts.len() != dims.len() {
        return Err(Error::op(
            "roll",
            format!(
                "shifts and dimensions must align. shifts: {}, dims:{}",
                shifts.len(),
                dims.len()
            ),
        ));
    }
    // As ATen's `roll`: an empty tensor is copied before any dim is looked at; otherwise each
    // dim is `self.size(dim)`, which a 0-d tensor has none of.
    if t.numel() == 0 {
        return t.clone_tensor();
    }
    if t.dim() == 0 {
        return Err(Error::op(
            "roll",
            format!(
                "Dimension specified as {} but tensor has no dimensions",
                dims[0]
            ),
        ));
    }
    let mut r = t.clone();
    for (&s, &d) in shifts.iter().zip(dims) {
        let w = wrap("roll", d, t.dim())?;
        let n = size_at(t, w) as i64;
        if n == 0 {
            continue;
        }
        let s = s.rem_euclid(n);
        if s != 0 {
            r = crate::cat_with(&[r.narrow(d, n - s, s)?, r.narrow(d, 0, n - s)?], d)?;
        }
    }
    copied(t, r)
}

/// `rot90(k, dims)`: rotates by 90 degrees `k` times in the plane of `dims`, from the first
/// towards the second.
pub fn rot90(t: &Tensor, k: i64, dims: &[i64]) -> Result<Tensor> {
    if dims.len() != 2 {
        return Err(Error::op(
            "rot90",
            format!(
                "expected total rotation dims == 2, but got dims = {}",
                dims.len()
            ),
        ));
    }
    if t.dim() < 2 {
        return Err(Error::op(
            "rot90",
            format!("expected total dims >= 2, but got total dims = {}", t.dim()),
        ));
    }
    let (d0, d1) = (
        wrap("rot90", dims[0], t.dim())?,
        wrap("rot90", dims[1], t.dim())?,
    );
    if d0 == d1 {
        return Err(Error::op(
            "rot90",
            format!("expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"),
        ));
    }
    let (a, b) = (d0 as i64, d1 as i64);
    match k.rem_euclid(4) {
        1 => flip(t, &[b])?.transpose(a, b),
        2 => flip(t, &[a, b]),
        3 => flip(t, &[a])?.transpose(a, b),
        _ => t.clone_tensor(),
    }
}

// ---------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------

/// `diagonal(offset, dim1, dim2)`: a view of the diagonal of each `dim1` × `dim2` plane,
/// appended as the last dim.
pub fn diagonal(t: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let nd = t.dim();
    let (d1, d2) = (wrap("diagonal", dim1, nd)?, wrap("diagonal", dim2, nd)?);
    if d1 == d2 {
        return Err(Error::op(
            "diagonal",
            format!("diagonal dimensions cannot be identical {dim1}, {dim2}"),
        ));
    }
    let (n1, n2) = (t.shape()[d1] as i64, t.shape()[d2] as i64);
    let (s1, s2) = (t.strides()[d1] as i64, t.strides()[d2] as i64);
    let len = if offset >= 0 {
        n1.min(n2 - offset)
    } else {
        (n1 + offset).min(n2)
    }
    .max(0);
    let mut start = t.storage_offset() as i64;
    if len > 0 {
        start += if offset >= 0 {
            offset * s2
        } else {
            -offset * s1
        };
    }
    let mut sizes = Vec::with_capacity(nd - 1);
    let mut strides = Vec::with_capacity(nd - 1);
    for d in (0..nd).filter(|&d| d != d1 && d != d2) {
        sizes.push(t.shape()[d] as i64);
        strides.push(t.strides()[d] as i64);
    }
    sizes.push(len);
    strides.push(s1 + s2);
    t.as_strided_with(&sizes, &strides, Some(start))
}

/// `diag(diagonal)`: the matrix with a 1-D input on its `diagonal`-th diagonal, or a copy
/// of a matrix's `diagonal`-th diagonal.
pub fn diag(t: &Tensor, diagonal_: i64) -> Result<Tensor> {
    match t.dim() {
        1 => {
            let n = t.shape()[0];
            let on = Tensor::eye(n, None, DType::Bool)?.to_device(t.device())?;
            let square = t
                .unsqueeze(0)?
                .expand([n as i64, n as i64])?
                .where_cond(&on, &t.zeros_like()?.unsqueeze(0)?)?;
            // The result is `n + |diagonal|` square: that must fit an int64.
            let k = diagonal_
                .checked_abs()
                .filter(|k| k.checked_add(n as i64).is_some())
                .ok_or_else(|| {
                    size_overflow("diag", format!("diagonal {diagonal_} of a {n}-vector"))
                })?;
            let pad = if diagonal_ >= 0 {
                [k, 0, 0, k]
            } else {
                [0, k, k, 0]
            };
            crate::pad(&square, pad)
        }
        2 => diagonal(t, diagonal_, 0, 1)?.clone_tensor(),
        d => Err(Error::op(
            "diag",
            format!("diag(): Supports 1D or 2D tensors. Got {d}D"),
        )),
    }
}

/// `trace()`: the sum of a matrix's main diagonal.
pub fn trace(t: &Tensor) -> Result<Tensor> {
    if t.dim() != 2 {
        return Err(Error::op(
            "trace",
            format!(
                "trace: expected a matrix, but got tensor with dim {}",
                t.dim()
            ),
        ));
    }
    diagonal(t, 0, 0, 1)?.sum()
}

/// `movedim(source, destination)`: dims `source` moved to positions `destination`, the
/// others kept in order.
pub fn movedim(t: &Tensor, source: &[i64], destination: &[i64]) -> Result<Tensor> {
    let nd = t.dim();
    if source.len() != destination.len() {
        return Err(Error::op(
            "movedim",
            format!(
                "movedim: Invalid source or destination dims: source ({source:?} dims) should contain the same number of dims as destination ({destination:?} dims)"
            ),
        ));
    }
    let repeated = |name: &str, dims: &[i64]| -> Result<Vec<usize>> {
        distinct_dims("movedim", dims, nd).map_err(|e| match e {
            Error::Op { .. } if dims.iter().all(|&d| wrap_dim(d, nd).is_ok()) => Error::op(
                "movedim",
                format!("movedim: repeated dim in `{name}` ({dims:?})"),
            ),
            other => other,
        })
    };
    let (src, dst) = (
        repeated("source", source)?,
        repeated("destination", destination)?,
    );
    let mut perm: Vec<Option<usize>> = vec![None; nd.max(1)];
    for (&s, &d) in src.iter().zip(&dst) {
        perm[d] = Some(s);
    }
    let mut rest = (0..nd).filter(|d| !src.contains(d));
    let perm: Vec<i64> = perm
        .into_iter()
        .take(nd)
        .map(|p| p.or_else(|| rest.next()).unwrap_or(0) as i64)
        .collect();
    t.permute(&perm)
}

/// `broadcast_to(size)`: NumPy's name for `expand`.
pub fn broadcast_to(t: &Tensor, size: &[i64]) -> Result<Tensor> {
    t.expand(size)
}

/// `unfold(dimension, size, step)`: a view of every window of `size` elements along
/// `dimension`, `step` apart, as a new last dim.
pub fn unfold(t: &Tensor, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    if t.dim() == 0 {
        let one = t.reshape([1])?;
        return unfold(&one, dimension, size, step)?.squeeze_dim(0);
    }
    let d = wrap("unfold", dimension, t.dim())?;
    let n = t.shape()[d] as i64;
    if size > n {
        return Err(Error::op(
            "unfold",
            format!("maximum size for tensor at dimension {d} is {n} but size is {size}"),
        ));
    }
    if size < 0 {
        return Err(Error::op(
            "unfold",
            format!("size is {size} but must be >= 0"),
        ));
    }
    if step <= 0 {
        return Err(Error::op(
            "unfold",
            format!("step is {step} but must be > 0"),
        ));
    }
    let mut sizes = i64s(t.shape());
    let mut strides = i64s(t.strides());
    let s = strides[d];
    sizes[d] = (n - size) / step + 1;
    // With one window the stride is never stepped; a huge `step` must not overflow it.
    strides[d] = if sizes[d] > 1 { s * step } else { s };
    sizes.push(size);
    strides.push(s);
    t.as_strided_with(&sizes, &strides, Some(t.storage_offset() as i64))
}

/// `squeeze(dims)`: drops each of `dims` that has size 1.
pub fn squeeze_dims(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let mut ds = distinct_dims("squeeze", dims, t.dim())?;
    ds.sort_unstable_by(|a, b| b.cmp(a));
    let mut r = t.clone();
    for d in ds {
        r = r.squeeze_dim(d as i64)?;
    }
    if r.shares_storage_with(t) && r.shape() == t.shape() {
        // Like every view op, hand back a new tensor object, not `t` itself.
        return t.view(i64s(t.shape()));
    }
    Ok(r)
}

/// `narrow(dim, start, length)` with a 0-d integer tensor `start`.
pub fn narrow_tensor(t: &Tensor, dim: i64, start: &Tensor, length: i64) -> Result<Tensor> {
    if start.dim() != 0 || start.dtype().is_floating_point() || start.dtype() == DType::Bool {
        return Err(Error::op(
            "narrow",
            "start must be an 0-dim integral Tensor.",
        ));
    }
    t.narrow(dim, start.item::<i64>()?, length)
}

// ---------------------------------------------------------------------------------------
// Splitting and joining
// ---------------------------------------------------------------------------------------

/// `split(split_size, dim)`: consecutive pieces of `split_size` along `dim` (the last may be
/// smaller).
pub fn split(t: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    if t.dim() == 0 {
        return Err(Error::op(
            "split",
            "split expects at least a 1-dimensional tensor",
        ));
    }
    if split_size < 0 {
        return Err(Error::op(
            "split",
            format!("split expects split_size be non-negative, but got split_size={split_size}"),
        ));
    }
    let d = wrap("split", dim, t.dim())?;
    let n = t.shape()[d] as i64;
    if split_size == 0 && n != 0 {
        return Err(Error::op(
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
        return Err(Error::op(
            "split_with_sizes",
            "split expects at least a 1-dimensional tensor",
        ));
    }
    let d = wrap("split_with_sizes", dim, t.dim())?;
    let n = t.shape()[d] as i64;
    if split_sizes.iter().any(|&s| s < 0) {
        return Err(Error::op(
            "split_with_sizes",
            format!("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={split_sizes:?}"),
        ));
    }
    let total = split_sizes
        .iter()
        .try_fold(0i64, |acc, &s| acc.checked_add(s));
    if total != Some(n) {
        return Err(Error::op(
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
        return Err(Error::op(
            "chunk",
            "chunk expects at least a 1-dimensional tensor",
        ));
    }
    if chunks <= 0 {
        return Err(Error::op(
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
        return Err(Error::op(
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
        return Err(Error::op(
            op,
            "torch.meshgrid: Expected at least one tensor",
        ));
    }
    if indexing != "ij" && indexing != "xy" {
        return Err(Error::op(
            op,
            format!("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}"),
        ));
    }
    for t in tensors {
        if t.dim() > 1 {
            return Err(Error::op(
                op,
                format!(
                    "torch.meshgrid: Expected 0D or 1D tensor in the input list but got: {:?}",
                    t.shape()
                ),
            ));
        }
        if t.dtype() != tensors[0].dtype() {
            return Err(Error::op(
                op,
                "torch.meshgrid: Expected all tensors to have the same dtype.",
            ));
        }
        if t.device() != tensors[0].device() {
            return Err(Error::op(
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

// ---------------------------------------------------------------------------------------
// Indexing with tensors
// ---------------------------------------------------------------------------------------

fn check_long(op: &str, what: &str, t: &Tensor) -> Result<()> {
    if t.dtype() == DType::I64 {
        Ok(())
    } else {
        Err(Error::op(
            op,
            format!("{what}, but got {}", t.dtype().scalar_type_name()),
        ))
    }
}

/// `take(index)`: elements of the flattened tensor at `index` (negative counts from the end),
/// shaped like `index`.
pub fn take(t: &Tensor, index: &Tensor) -> Result<Tensor> {
    check_long("take", "take(): Expected a long tensor for index", index)?;
    let n = t.numel() as i64;
    if index.numel() > 0 {
        let idx = index.to_vec::<i64>()?;
        if let Some(&bad) = idx.iter().find(|&&i| i < -n || i >= n) {
            return Err(Error::op(
                "take",
                format!("out of range: tried to access index {bad} on a tensor of {n} elements."),
            ));
        }
    }
    let flat = index.reshape([-1])?;
    let wrapped = flat.add(&flat.lt_scalar(0)?.to_dtype(DType::I64)?.mul_scalar(n)?)?;
    t.reshape([-1])?
        .index_select(0, &wrapped)?
        .reshape(i64s(index.shape()))
}

/// `take_along_dim(indices, dim)`: `gather` with `self` and `indices` broadcast against each
/// other outside `dim`, the indices taken modulo `self`'s size along `dim` (so negative ones
/// count from the end, as in PyTorch); with no dim, `gather` over the flattened tensor (which
/// takes int32 indices and no negative ones, as PyTorch's does).
pub fn take_along_dim(t: &Tensor, indices: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let op = "take_along_dim";
    let Some(dim) = dim else {
        return t.reshape([-1])?.gather(0, &indices.reshape([-1])?);
    };
    if t.dim() != indices.dim() {
        return Err(Error::op(
            op,
            format!(
                "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                t.dim(),
                indices.dim()
            ),
        ));
    }
    if indices.dtype() != DType::I64 {
        return Err(Error::op(
            op,
            format!(
                "torch.take_along_dim(): dtype of indices should be Long but got {}",
                indices.dtype().scalar_type_name()
            ),
        ));
    }
    let d = wrap(op, dim, t.dim())?;
    if t.dim() == 0 {
        return Err(Error::op(
            op,
            format!("Dimension specified as {d} but tensor has no dimensions"),
        ));
    }
    let n = t.shape()[d] as i64;
    if n == 0 && indices.numel() > 0 {
        // PyTorch's `indices % size` with a zero size.
        return Err(Error::op(op, "ZeroDivisionError"));
    }
    let indices = if n > 0 {
        indices.remainder_scalar(n)?
    } else {
        indices.clone()
    };
    let mut self_sizes = t.shape().to_vec();
    self_sizes[d] = indices.shape()[d];
    let shape = kiln_kernels::layout::broadcast_shapes(&self_sizes, indices.shape())
        .map_err(|m| Error::op(op, m))?;
    let idx = indices.expand(i64s(&shape))?;
    let mut src_shape = shape.clone();
    src_shape[d] = t.shape()[d];
    t.expand(i64s(&src_shape))?.gather(d as i64, &idx)
}

/// `one_hot(num_classes)`: int64 one-hot vectors of the class indices in `self` (a new last
/// dim of `num_classes`, inferred as max + 1 when -1).
pub fn one_hot(t: &Tensor, num_classes: i64) -> Result<Tensor> {
    let op = "one_hot";
    if t.dtype() != DType::I64 {
        return Err(Error::op(
            op,
            "one_hot is only applicable to index tensor of type LongTensor.",
        ));
    }
    let vals = t.to_vec::<i64>()?;
    let classes = if num_classes == -1 {
        match vals.iter().max() {
            Some(&m) => m.checked_add(1).ok_or_else(|| {
                size_overflow(op, format!("the largest class value {m} plus one"))
            })?,
            None => {
                return Err(Error::op(
                    op,
                    "Can not infer total number of classes from empty tensor.",
                ))
            }
        }
    } else {
        num_classes
    };
    if vals.iter().any(|&v| v < 0) {
        return Err(Error::op(op, "Class values must be non-negative."));
    }
    if vals.iter().any(|&v| v >= classes) {
        return Err(Error::op(
            op,
            "Class values must be smaller than num_classes.",
        ));
    }
    if classes < 0 {
        // Only reachable for an empty input (any value would be >= classes).
        return Err(Error::op(
            op,
            format!("Trying to create tensor with negative dimension {classes}"),
        ));
    }
    let range = Tensor::arange(0, classes, 1, DType::I64)?.to_device(t.device())?;
    t.unsqueeze(-1)?.eq(&range)?.to_dtype(DType::I64)
}

/// `nonzero()`: the coordinates of the nonzero elements, one row each, in row-major order.
/// Reads the values (on the host for a CUDA tensor) to learn how many rows there are.
pub fn nonzero(t: &Tensor) -> Result<Tensor> {
    let hits = t.ne_scalar(0)?.to_vec::<bool>()?;
    let shape = t.shape().to_vec();
    let nd = shape.len();
    let mut coords: Vec<i64> = Vec::new();
    let mut at = vec![0usize; nd];
    for (i, &h) in hits.iter().enumerate() {
        if i > 0 {
            // Advance the row-major multi-index by one.
            for d in (0..nd).rev() {
                at[d] += 1;
                if at[d] < shape[d] {
                    break;
                }
                at[d] = 0;
            }
        }
        if h {
            coords.extend(at.iter().map(|&c| c as i64));
        }
    }
    let rows = coords.len() / nd.max(1);
    let rows = if nd == 0 {
        hits.iter().filter(|&&h| h).count()
    } else {
        rows
    };
    Tensor::from_vec(coords, &[rows, nd])?.to_device(t.device())
}

/// `argwhere()`: NumPy's name for `nonzero`.
pub fn argwhere(t: &Tensor) -> Result<Tensor> {
    nonzero(t)
}

fn check_bool_mask(op: &str, mask: &Tensor) -> Result<()> {
    if mask.dtype() == DType::Bool {
        Ok(())
    } else {
        Err(Error::op(
            op,
            format!(
                "{op}: expected BoolTensor for mask, but got {}",
                mask.dtype().scalar_type_name()
            ),
        ))
    }
}

/// `masked_select(mask)`: the elements where `mask` (broadcast with `self`) is true, as a
/// 1-D tensor.
pub fn masked_select(t: &Tensor, mask: &Tensor) -> Result<Tensor> {
    check_bool_mask("masked_select", mask)?;
    let shape = crate::dispatch::launch::broadcast_shapes("masked_select", &[t, mask])?;
    let m = mask.expand(i64s(&shape))?.reshape([-1])?;
    let idx = nonzero(&m)?.reshape([-1])?;
    t.expand(i64s(&shape))?.reshape([-1])?.index_select(0, &idx)
}

/// `masked_fill(mask, value)` with a 0-d tensor `value` (which receives the gradient of the
/// filled elements). `self` and `mask` broadcast: the result has their broadcast shape, as
/// PyTorch's out-of-place form does, and `self`'s gradient is summed back to its shape.
pub fn masked_fill_tensor(t: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    if value.dim() != 0 {
        return Err(Error::op(
            "masked_fill",
            format!(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.dim()
            ),
        ));
    }
    if mask.dtype() != DType::Bool {
        return Err(Error::op(
            "masked_fill",
            format!(
                "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                mask.dtype().scalar_type_name()
            ),
        ));
    }
    let shape = crate::dispatch::launch::broadcast_shapes("masked_fill", &[mask, t])?;
    let mask = mask.expand(i64s(&shape))?;
    let v = value.to_dtype(t.dtype())?.to_device(t.device())?;
    v.where_cond(&mask, &t.expand(i64s(&shape))?)
}

/// `clamp(min, max)` with tensor bounds (broadcast, promoted); a missing bound is no bound.
pub fn clamp_tensor(t: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::op(
            "clamp",
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    let mut r = t.clone();
    if let Some(lo) = min {
        r = r.maximum(lo)?;
    }
    if let Some(hi) = max {
        r = r.minimum(hi)?;
    }
    Ok(r)
}

/// `to(other)`: converted to `other`'s dtype and moved to its device.
pub fn to_other(t: &Tensor, other: &Tensor, non_blocking: bool, copy: bool) -> Result<Tensor> {
    let _ = non_blocking; // copies are synchronous
    let r = t.to_dtype(other.dtype())?.to_device(other.device())?;
    if copy && r.shares_storage_with(t) {
        return r.clone_tensor();
    }
    Ok(r)
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
        return Err(Error::op(
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
        return Err(Error::op(op, "repeats must be 0-dim or 1-dim tensor"));
    }
    if repeats.dtype().is_floating_point() || repeats.dtype() == DType::Bool {
        return Err(Error::op(
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
        return Err(Error::op(
            op,
            format!(
                "repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size({}) = {n}",
                counts.len(),
                dim.unwrap_or(0)
            ),
        ));
    };
    if counts.iter().any(|&c| c < 0) {
        return Err(Error::op(op, "repeats can not be negative"));
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
            return Err(Error::op(
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

// ---------------------------------------------------------------------------------------
// Padding
// ---------------------------------------------------------------------------------------

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
        return Err(Error::op(op, "Padding length must be divisible by 2"));
    }
    if pad.len() > 2 * t.dim() {
        return Err(Error::op(
            op,
            format!(
                "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {}",
                pad.len(),
                t.dim()
            ),
        ));
    }
    if !["constant", "reflect", "replicate", "circular"].contains(&mode) {
        return Err(Error::op(op, format!("Unrecognised padding mode {mode}")));
    }
    if mode != "constant" {
        if value.is_some_and(|v| v != 0.0) {
            return Err(Error::op(
                op,
                format!("Padding mode \"{mode}\" doesn't take in value argument"),
            ));
        }
        let k = pad.len() / 2;
        if k == 0 || t.dim() < k + 1 || t.dim() > k + 2 {
            return Err(Error::op(
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
            return Err(Error::op(
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
                return Err(Error::op(
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
            return Err(Error::op(
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

// ---------------------------------------------------------------------------------------
// Scattering
// ---------------------------------------------------------------------------------------

/// `scatter(dim, index, value)`: `value` written at the indexed positions.
pub fn scatter_value(t: &Tensor, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
    let src = Tensor::full_on(index.shape(), value, t.dtype(), t.device())?;
    t.scatter(dim, index, &src)
}

/// `scatter(dim, index, value, reduce=)`: `value` added or multiplied in once per index
/// position, as `scatter(dim, index, src, reduce=)` with a `src` full of `value`.
pub fn scatter_value_reduce(
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    value: Scalar,
    reduce: &str,
) -> Result<Tensor> {
    let src = Tensor::full_on(index.shape(), value, t.dtype(), t.device())?;
    t.scatter_src_reduce(dim, index, &src, reduce)
}

/// `masked_scatter(mask, source)`: the positions where `mask` (broadcast with `self`) is true
/// take `source`'s elements in order; elsewhere `self`.
pub fn masked_scatter(t: &Tensor, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
    let op = "masked_scatter";
    check_bool_mask(op, mask)?;
    if source.dtype() != t.dtype() {
        return Err(Error::op(
            op,
            format!(
                "masked_scatter_: expected self and source to have same dtypes but got {} and {}",
                t.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            ),
        ));
    }
    // Out of place, `self` broadcasts with the mask (PyTorch's `masked_scatter` expands both).
    // (PyTorch's message names the mask as tensor a.)
    let shape = crate::dispatch::launch::broadcast_shapes(op, &[mask, t])?;
    let t = &t.expand(i64s(&shape))?;
    let m = mask.expand(i64s(&shape))?.reshape([-1])?;
    let hits = m.to_dtype(DType::I64)?.sum()?.item::<i64>()?;
    if hits as usize > source.numel() {
        return Err(Error::op(
            op,
            format!("masked_scatter: expected source to have at least {hits} elements (the number of true mask entries), but it has {}", source.numel()),
        ));
    }
    if t.numel() == 0 {
        return t.clone_tensor();
    }
    // Position k of the flattened output reads source[(number of trues before k)].
    let rank = m
        .to_dtype(DType::I64)?
        .cumsum(0)?
        .sub_scalar(1)?
        .clamp_with(Some(Scalar::Int(0)), None)?;
    let flat_src = source.reshape([-1])?;
    let picked = if flat_src.numel() == 0 {
        t.reshape([-1])?
    } else {
        flat_src.index_select(0, &rank)?
    };
    picked
        .where_cond(&m, &t.reshape([-1])?)?
        .reshape(i64s(t.shape()))
}

/// `where(condition)`: `nonzero(condition)` as one index tensor per dim.
pub fn where_nonzero(condition: &Tensor) -> Result<Vec<Tensor>> {
    let nz = nonzero(condition)?;
    if condition.dim() == 0 {
        return Ok(vec![]);
    }
    unbind(&nz, 1)
}
