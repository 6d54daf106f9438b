//! Shape ops built from views, `index_select` and `cat` (PyTorch's CompositeImplicitAutograd):
//! reordering (`flip`, `roll`, `rot90`), views (`diagonal`, `movedim`, `unfold`, `flatten` …),
//! triangles; and the helpers the other shape files share. Autograd and every backend come
//! from the ops they call.

use crate::ops::backward::i64s;
use crate::{DType, Device, Error, Result, Tensor};
use kiln_kernels::layout::wrap_dim;

pub(crate) fn wrap(op: &str, dim: i64, nd: usize) -> Result<usize> {
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
        Error::shape(
            op,
            format!("Trying to create tensor with negative dimension {n}"),
        )
    })
}

/// PyTorch's error for a result size that overflows int64.
pub(crate) fn size_overflow(op: &str, what: impl std::fmt::Display) -> Error {
    Error::shape(
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
            return Err(Error::shape(
                op,
                format!("dim {w} appears multiple times in the list of dims"),
            ));
        }
        out.push(w);
    }
    Ok(out)
}

/// A fresh tensor: ops documented to return a copy never hand back `t`'s storage.
pub(crate) fn copied(t: &Tensor, r: Tensor) -> Result<Tensor> {
    if r.shares_storage_with(t) {
        r.clone_tensor()
    } else {
        Ok(r)
    }
}

pub(crate) fn size_at(t: &Tensor, d: usize) -> usize {
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
        return Err(Error::shape("fliplr", "Input must be >= 2-d."));
    }
    flip(t, &[1])
}

/// `flipud()`: flips dim 0 of a tensor with at least 1 dim.
pub fn flipud(t: &Tensor) -> Result<Tensor> {
    if t.dim() < 1 {
        return Err(Error::shape("flipud", "Input must be >= 1-d."));
    }
    flip(t, &[0])
}

/// `roll(shifts, dims)`: elements shifted cyclically along each dim; with no dims, along
/// the flattened tensor.
pub fn roll(t: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if shifts.is_empty() {
        return Err(Error::value("roll", "`shifts` required"));
    }
    if dims.is_empty() && shifts.len() == 1 {
        let flat = roll(&t.flatten()?, shifts, &[0])?;
        return flat.view(i64s(t.shape()));
    }
    if shifts.len() != dims.len() {
        return Err(Error::shape(
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
        return Err(Error::index(
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
        return Err(Error::shape(
            "rot90",
            format!(
                "expected total rotation dims == 2, but got dims = {}",
                dims.len()
            ),
        ));
    }
    if t.dim() < 2 {
        return Err(Error::shape(
            "rot90",
            format!("expected total dims >= 2, but got total dims = {}", t.dim()),
        ));
    }
    let (d0, d1) = (
        wrap("rot90", dims[0], t.dim())?,
        wrap("rot90", dims[1], t.dim())?,
    );
    if d0 == d1 {
        return Err(Error::shape(
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
        return Err(Error::shape(
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
        d => Err(Error::shape(
            "diag",
            format!("diag(): Supports 1D or 2D tensors. Got {d}D"),
        )),
    }
}

/// `trace()`: the sum of a matrix's main diagonal.
pub fn trace(t: &Tensor) -> Result<Tensor> {
    if t.dim() != 2 {
        return Err(Error::shape(
            "trace",
            format!(
                "trace: expected a matrix, but got tensor with dim {}",
                t.dim()
            ),
        ));
    }
    // A kernel of its own in PyTorch: `sum`'s autocast policy must not apply inside it (a
    // CUDA region, which has none for `trace`, returns the input's dtype).
    let _native = crate::amp::suspend_autocast();
    diagonal(t, 0, 0, 1)?.sum()
}

/// `movedim(source, destination)`: dims `source` moved to positions `destination`, the
/// others kept in order.
pub fn movedim(t: &Tensor, source: &[i64], destination: &[i64]) -> Result<Tensor> {
    let nd = t.dim();
    if source.len() != destination.len() {
        return Err(Error::shape(
            "movedim",
            format!(
                "movedim: Invalid source or destination dims: source ({source:?} dims) should contain the same number of dims as destination ({destination:?} dims)"
            ),
        ));
    }
    let repeated = |name: &str, dims: &[i64]| -> Result<Vec<usize>> {
        distinct_dims("movedim", dims, nd).map_err(|e| match e {
            Error::Op { .. } if dims.iter().all(|&d| wrap_dim(d, nd).is_ok()) => Error::shape(
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
        return Err(Error::shape(
            "unfold",
            format!("maximum size for tensor at dimension {d} is {n} but size is {size}"),
        ));
    }
    if size < 0 {
        return Err(Error::shape(
            "unfold",
            format!("size is {size} but must be >= 0"),
        ));
    }
    if step <= 0 {
        return Err(Error::value(
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
        return Err(Error::dtype(
            "narrow",
            "start must be an 0-dim integral Tensor.",
        ));
    }
    t.narrow(dim, start.item::<i64>()?, length)
}

/// `flatten(start_dim, end_dim)` as a reshape.
pub fn flatten(t: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    if t.dim() == 0 {
        return t.reshape([1]);
    }
    let wrap = |d| kiln_kernels::layout::wrap_dim(d, t.dim()).map_err(|m| Error::op("flatten", m));
    let (s, e) = (wrap(start_dim)?, wrap(end_dim)?);
    if s > e {
        return Err(Error::shape(
            "flatten",
            "flatten() has invalid args: start_dim cannot come after end_dim",
        ));
    }
    let mut shape = i64s(&t.shape()[..s]);
    shape.push(t.shape()[s..=e].iter().product::<usize>() as i64);
    shape.extend(i64s(&t.shape()[e + 1..]));
    t.reshape(&shape)
}

/// `unflatten(dim, sizes)` as a reshape.
pub fn unflatten(t: &Tensor, dim: i64, sizes: &[i64]) -> Result<Tensor> {
    if sizes.is_empty() {
        return Err(Error::shape(
            "unflatten",
            "unflatten: sizes must be non-empty",
        ));
    }
    if t.dim() == 0 {
        return Err(Error::index(
            "unflatten",
            format!("dimension specified as {dim} but tensor has no dimensions"),
        ));
    }
    let d = kiln_kernels::layout::wrap_dim(dim, t.dim()).map_err(|m| Error::op("unflatten", m))?;
    let n = t.shape()[d];
    let inner = crate::Layout::infer_size(sizes, n).map_err(|_| {
        Error::shape(
            "unflatten",
            format!("unflatten: Provided sizes {sizes:?} don't multiply up to the size of dim {dim} ({n}) in the input tensor"),
        )
    })?;
    let mut shape = i64s(&t.shape()[..d]);
    shape.extend(i64s(&inner));
    shape.extend(i64s(&t.shape()[d + 1..]));
    t.reshape(&shape)
}

/// `expand_as(other)`: `expand(other.shape())`.
pub fn expand_as(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    t.expand(i64s(other.shape()))
}

/// `swapaxes(axis0, axis1)`: NumPy's name for `transpose`.
pub fn swapaxes(t: &Tensor, axis0: i64, axis1: i64) -> Result<Tensor> {
    t.transpose(axis0, axis1)
}

/// `tril`/`triu`: keep element `(i, j)` of each trailing matrix when `j - i` is at most
/// (`lower`) or at least `diagonal`.
fn triangle(op: &str, t: &Tensor, diagonal: i64, lower: bool) -> Result<Tensor> {
    if t.dim() < 2 {
        return Err(Error::shape(
            op,
            format!("{op}: input tensor must have at least 2 dimensions"),
        ));
    }
    let (r, c) = (t.shape()[t.dim() - 2], t.shape()[t.dim() - 1]);
    let rows = Tensor::arange(0, r as i64, 1, DType::I64)?.reshape([r as i64, 1])?;
    let cols = Tensor::arange(0, c as i64, 1, DType::I64)?.reshape([1, c as i64])?;
    let offset = cols.sub(&rows)?;
    let keep = if lower {
        offset.le_scalar(diagonal)?
    } else {
        offset.ge_scalar(diagonal)?
    };
    let keep = keep.to_device(t.device())?;
    t.where_cond(&keep, &t.zeros_like()?)
}

/// `tril(diagonal)`: the lower triangle of the last two dims.
pub fn tril(t: &Tensor, diagonal: i64) -> Result<Tensor> {
    triangle("tril", t, diagonal, true)
}

/// `triu(diagonal)`: the upper triangle of the last two dims.
pub fn triu(t: &Tensor, diagonal: i64) -> Result<Tensor> {
    triangle("triu", t, diagonal, false)
}
