//! Selecting and scattering elements with index or mask tensors: `take`, `take_along_dim`,
//! `one_hot`, `nonzero` (an explicit op: it reads values to size its output), `argwhere`,
//! `masked_select`, `masked_fill` and `masked_scatter` with tensors, `scatter` with a value,
//! `where(condition)`.

use crate::ops::backward::i64s;
use crate::ops::shaping::{size_overflow, wrap};
use crate::ops::split_join::unbind;
use crate::{DType, Error, Result, Scalar, Tensor};

fn check_long(op: &str, what: &str, t: &Tensor) -> Result<()> {
    if t.dtype() == DType::I64 {
        Ok(())
    } else {
        Err(Error::dtype(
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
    if index.numel() > 0 && crate::ops::has_values(index) {
        let idx = index.to_vec::<i64>()?;
        if let Some(&bad) = idx.iter().find(|&&i| i < -n || i >= n) {
            return Err(Error::index(
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
        return Err(Error::shape(
            op,
            format!(
                "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                t.dim(),
                indices.dim()
            ),
        ));
    }
    if indices.dtype() != DType::I64 {
        return Err(Error::dtype(
            op,
            format!(
                "torch.take_along_dim(): dtype of indices should be Long but got {}",
                indices.dtype().scalar_type_name()
            ),
        ));
    }
    let d = wrap(op, dim, t.dim())?;
    if t.dim() == 0 {
        return Err(Error::index(
            op,
            format!("Dimension specified as {d} but tensor has no dimensions"),
        ));
    }
    let n = t.shape()[d] as i64;
    if n == 0 && indices.numel() > 0 {
        // PyTorch's `indices % size` with a zero size.
        return Err(Error::value(op, "ZeroDivisionError"));
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
        return Err(Error::dtype(
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
                return Err(Error::shape(
                    op,
                    "Can not infer total number of classes from empty tensor.",
                ))
            }
        }
    } else {
        num_classes
    };
    if vals.iter().any(|&v| v < 0) {
        return Err(Error::value(op, "Class values must be non-negative."));
    }
    if vals.iter().any(|&v| v >= classes) {
        return Err(Error::value(
            op,
            "Class values must be smaller than num_classes.",
        ));
    }
    if classes < 0 {
        // Only reachable for an empty input (any value would be >= classes).
        return Err(Error::shape(
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
        Err(Error::dtype(
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
        return Err(Error::shape(
            "masked_fill",
            format!(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.dim()
            ),
        ));
    }
    if mask.dtype() != DType::Bool {
        return Err(Error::dtype(
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
        return Err(Error::dtype(
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
    // How many elements `source` needs depends on the mask's values (unknown on meta).
    if crate::ops::has_values(&m) {
        let hits = m.to_dtype(DType::I64)?.sum()?.item::<i64>()?;
        if hits as usize > source.numel() {
            return Err(Error::shape(
                op,
                format!("masked_scatter: expected source to have at least {hits} elements (the number of true mask entries), but it has {}", source.numel()),
            ));
        }
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
