//! Advanced indexing with tensors, `x[indices]` (PyTorch's TensorAdvancedIndexing.cpp):
//! `index.Tensor` and `index_put`. Both are explicit ops, differentiated by their
//! derivatives.yaml formulas as PyTorch's are, and computed from kernels every backend has.
//!
//! The index tensors are read on the host ([`AdvancedIndex::new`]): a bool or uint8 mask
//! becomes the `nonzero()` indices of the dims it covers, every index is checked against its
//! dim with PyTorch's message, and the broadcast indices become one int64 row number into
//! `self` viewed as `[indexed dims flattened, other dims...]`. `index` is then an
//! `index_select` of those rows, `index_put` an `index_add` (accumulate) or a `scatter` of
//! the values into them.

use crate::ops::backward::i64s;
use crate::ops::shaping::host_vec;
use crate::{DType, Device, Error, Result, Tensor};
use kiln_kernels::layout::{broadcast_shapes, checked_numel};

/// An index list resolved against a tensor (PyTorch's `AdvancedIndex`, after `make_info`).
struct AdvancedIndex {
    /// The tensor's shape with a size-1 dim where a 0-d mask stands (`x[True]` adds a dim, as
    /// in NumPy and PyTorch's Python indexing).
    work_shape: Vec<usize>,
    /// Dims of `work_shape`: the indexed ones in order, then the others (PyTorch's
    /// `transposeToFront`).
    perm: Vec<usize>,
    /// How many leading entries of `perm` are indexed.
    indexed: usize,
    /// The index tensors' broadcast shape: the dims that replace the indexed ones. `None`
    /// when a mask without values (on meta) hides how many positions it selects.
    index_shape: Option<Vec<usize>>,
    /// The number of elements of `index_shape` (0 when it is `None`).
    count: usize,
    /// For each element of `index_shape` (row-major), its row in the tensor permuted by
    /// `perm` and viewed as `[product of the indexed sizes, other sizes...]`. `None` when an
    /// index has no values (on meta).
    rows: Option<Vec<i64>>,
    /// Where the index dims go in the result: at the first indexed dim when the indexed dims
    /// are adjacent, else first (NumPy's rule, PyTorch's `hasContiguousSubspace`).
    insert_at: usize,
}

/// An index after mask expansion: its shape and int64 values (row-major). An index on the
/// meta device has no values; a mask there (when the caller can do without) has no shape
/// either, its number of true entries being unknown.
type HostIndex = (Option<Vec<usize>>, Option<Vec<i64>>);

/// Row-major strides of `shape` aligned to the right of `target` (which it broadcasts to),
/// 0 where it broadcasts.
fn broadcast_strides(shape: &[usize], target: &[usize]) -> Vec<usize> {
    let lead = target.len() - shape.len();
    let mut strides = vec![0; target.len()];
    let mut step = 1;
    for d in (0..shape.len()).rev() {
        if shape[d] != 1 {
            strides[lead + d] = step;
        }
        step *= shape[d];
    }
    strides
}

/// A permutation as the `i64` dims `permute` takes.
fn dims(perm: &[usize]) -> Vec<i64> {
    perm.iter().map(|&d| d as i64).collect()
}

/// The index tensors' broadcast shape (PyTorch's messages), given the indexed dims' sizes.
fn index_broadcast(op: &str, shapes: &[&[usize]], sizes: &[usize]) -> Result<Vec<usize>> {
    let mut index_shape: Vec<usize> = vec![];
    for shape in shapes {
        index_shape = broadcast_shapes(&index_shape, shape)
            .map(|s| s.to_vec())
            .map_err(|_| {
                let all: Vec<String> = shapes.iter().map(|s| format!("{s:?}")).collect();
                Error::index(
                    op,
                    format!(
                        "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                        all.join(", ")
                    ),
                )
            })?;
    }
    if sizes.contains(&0) && !index_shape.contains(&0) {
        return Err(Error::index(
            op,
            "index is out of bounds for dimension with size 0",
        ));
    }
    Ok(index_shape)
}

/// For each element of `index_shape` (row-major), the row its indices (`vals`, of `shapes`,
/// in range of `sizes`) pick in the indexed dims flattened.
fn flat_rows(
    op: &str,
    (index_shape, n): (&[usize], usize),
    shapes: &[&[usize]],
    vals: &[&[i64]],
    sizes: &[usize],
) -> Result<Vec<i64>> {
    let mut rows: Vec<i64> = host_vec(op, n)?;
    // Row strides of the indexed dims, and each index's strides over `index_shape`.
    let mut row_stride = vec![1i64; sizes.len()];
    for j in (0..sizes.len().saturating_sub(1)).rev() {
        row_stride[j] = row_stride[j + 1] * sizes[j + 1] as i64;
    }
    let strides: Vec<Vec<usize>> = shapes
        .iter()
        .map(|s| broadcast_strides(s, index_shape))
        .collect();
    let mut at = vec![0usize; index_shape.len()];
    let mut pos = vec![0usize; vals.len()];
    for e in 0..n {
        if e > 0 {
            for d in (0..index_shape.len()).rev() {
                at[d] += 1;
                for (p, st) in pos.iter_mut().zip(&strides) {
                    *p += st[d];
                }
                if at[d] < index_shape[d] {
                    break;
                }
                for (p, st) in pos.iter_mut().zip(&strides) {
                    *p -= st[d] * index_shape[d];
                }
                at[d] = 0;
            }
        }
        let row = vals
            .iter()
            .zip(&pos)
            .zip(sizes.iter().zip(&row_stride))
            .map(|((vals, &p), (&size, &stride))| {
                let v = vals[p];
                (if v < 0 { v + size as i64 } else { v }) * stride
            })
            .sum();
        rows.push(row);
    }
    Ok(rows)
}

impl AdvancedIndex {
    /// Checks `indices` against `t` and resolves them, with PyTorch's messages for `op`.
    /// Checks of the indices' values are skipped for indices on meta. A mask on meta is read
    /// (an error: the number of its true entries shapes the result) when `masks_counted`,
    /// else left uncounted, with `index_shape` `None`.
    fn new(
        op: &str,
        t: &Tensor,
        indices: &[Option<&Tensor>],
        masks_counted: bool,
    ) -> Result<AdvancedIndex> {
        if indices.is_empty() {
            return Err(Error::index(op, "at least one index must be provided"));
        }
        let self_shape = t.shape();
        // One entry per dim of `work_shape` the list covers; `true` marks a dim a 0-d mask adds.
        let mut expanded: Vec<(bool, Option<HostIndex>)> = Vec::new();
        let covered = |e: &[(bool, Option<HostIndex>)]| e.iter().filter(|(unit, _)| !unit).count();
        for ix in indices {
            let Some(ix) = ix else {
                expanded.push((false, None));
                continue;
            };
            if ix.device() != Device::Cpu && ix.device() != t.device() {
                return Err(Error::device(
                    op,
                    format!(
                        "indices should be either on cpu or on the same device as the indexed tensor ({})",
                        t.device()
                    ),
                ));
            }
            let uncounted = !masks_counted && !crate::ops::has_values(ix);
            match ix.dtype() {
                DType::I64 | DType::I32 => {
                    let vals = if crate::ops::has_values(ix) {
                        Some(ix.to_vec::<i64>()?)
                    } else {
                        None
                    };
                    expanded.push((false, Some((Some(ix.shape().to_vec()), vals))))
                }
                DType::Bool | DType::U8 if ix.dim() == 0 && uncounted => {
                    expanded.push((true, Some((None, None))));
                }
                DType::Bool | DType::U8 if ix.dim() == 0 => {
                    let hit = ix.to_vec::<i64>()?[0] != 0;
                    let (shape, vals) = if hit {
                        (vec![1], vec![0])
                    } else {
                        (vec![0], vec![])
                    };
                    expanded.push((true, Some((Some(shape), Some(vals)))));
                }
                DType::Bool | DType::U8 => {
                    let k = covered(&expanded);
                    if k + ix.dim() > t.dim() {
                        return Err(Error::index(
                            op,
                            format!(
                                "too many indices for tensor of dimension {} (got {})",
                                t.dim(),
                                k + ix.dim()
                            ),
                        ));
                    }
                    if let Some(j) = (0..ix.dim()).find(|&j| ix.shape()[j] != self_shape[k + j]) {
                        return Err(Error::index(
                            op,
                            format!(
                                "The shape of the mask {:?} at index {j} does not match the shape of the indexed tensor {:?} at index {}",
                                ix.shape(),
                                self_shape,
                                k + j
                            ),
                        ));
                    }
                    if uncounted {
                        expanded.extend((0..ix.dim()).map(|_| (false, Some((None, None)))));
                        continue;
                    }
                    // `nonzero()` is `[hits, dims]`, row-major: one column per dim it covers.
                    let hits = crate::ops::selection::nonzero(ix)?.to_vec::<i64>()?;
                    for j in 0..ix.dim() {
                        let col: Vec<i64> =
                            hits.iter().skip(j).step_by(ix.dim()).copied().collect();
                        expanded.push((false, Some((Some(vec![col.len()]), Some(col)))));
                    }
                }
                _ => {
                    return Err(Error::index(
                        op,
                        "tensors used as indices must be long, int, byte or bool tensors",
                    ))
                }
            }
        }
        let got = covered(&expanded);
        if got > t.dim() {
            return Err(Error::index(
                op,
                format!(
                    "too many indices for tensor of dimension {} (got {got})",
                    t.dim()
                ),
            ));
        }
        let mut self_dims = self_shape.iter();
        let mut work_shape: Vec<usize> = expanded
            .iter()
            .map(|(unit, _)| {
                if *unit {
                    1
                } else {
                    *self_dims.next().expect("counted above")
                }
            })
            .collect();
        work_shape.extend(self_dims);
        expanded.resize_with(work_shape.len(), || (false, None));
        let adv: Vec<usize> = (0..expanded.len())
            .filter(|&d| expanded[d].1.is_some())
            .collect();
        let values: Vec<&HostIndex> = expanded.iter().filter_map(|(_, e)| e.as_ref()).collect();

        let sizes: Vec<usize> = adv.iter().map(|&d| work_shape[d]).collect();
        let shapes: Option<Vec<&[usize]>> = values.iter().map(|(s, _)| s.as_deref()).collect();
        let index_shape = shapes
            .map(|shapes| index_broadcast(op, &shapes, &sizes))
            .transpose()?;
        // PyTorch numbers the dims among the index tensors (its `Indexer`).
        for (j, ((_, vals), &size)) in values.iter().zip(&sizes).enumerate() {
            let s = size as i64;
            if let Some(v) = vals.iter().flatten().find(|&&v| v < -s || v >= s) {
                return Err(Error::index(
                    op,
                    format!("index {v} is out of bounds for dimension {j} with size {size}"),
                ));
            }
        }
        let count = index_shape
            .as_deref()
            .map(|shape| {
                checked_numel(shape).ok_or_else(|| {
                    crate::ops::shaping::size_overflow(op, format!("indices of shape {shape:?}"))
                })
            })
            .transpose()?;
        let vals: Option<Vec<&[i64]>> = values.iter().map(|(_, v)| v.as_deref()).collect();
        let rows = match (&index_shape, count, vals) {
            (Some(shape), Some(n), Some(vals)) => {
                let shapes: Vec<&[usize]> =
                    values.iter().filter_map(|(s, _)| s.as_deref()).collect();
                Some(flat_rows(op, (shape, n), &shapes, &vals, &sizes)?)
            }
            _ => None,
        };

        let adjacent = adv
            .last()
            .zip(adv.first())
            .is_none_or(|(l, f)| l - f + 1 == adv.len());
        let insert_at = if adjacent {
            adv.first().copied().unwrap_or(0)
        } else {
            0
        };
        let mut perm = adv.clone();
        perm.extend((0..work_shape.len()).filter(|d| !adv.contains(d)));
        Ok(AdvancedIndex {
            work_shape,
            perm,
            indexed: adv.len(),
            index_shape,
            count: count.unwrap_or(0),
            rows,
            insert_at,
        })
    }

    /// Sizes of the dims no index covers, in order.
    fn rest(&self) -> Vec<usize> {
        self.perm[self.indexed..]
            .iter()
            .map(|&d| self.work_shape[d])
            .collect()
    }

    /// `index_shape` followed by the other sizes: the result before
    /// [`Self::index_dims_to_place`].
    fn rows_shape(&self, index_shape: &[usize]) -> Vec<usize> {
        let mut s = index_shape.to_vec();
        s.extend(self.rest());
        s
    }

    /// The shape of `t[indices]`, when the masks were counted.
    fn result_shape(&self) -> Option<Vec<usize>> {
        let index_shape = self.index_shape.as_ref()?;
        let rest = self.rest();
        let mut s = rest[..self.insert_at].to_vec();
        s.extend(index_shape);
        s.extend(&rest[self.insert_at..]);
        Some(s)
    }

    /// The row numbers as an int64 tensor on `device`: without values (on meta), an empty
    /// one of their number.
    fn rows_tensor(&self, device: Device) -> Result<Tensor> {
        match &self.rows {
            Some(rows) => crate::ops::shaping::index(rows.clone(), device),
            None => Tensor::empty_on([self.count], DType::I64, device),
        }
    }

    /// `t` (of the indexed tensor's shape) as `[rows, other sizes...]`.
    fn as_rows(&self, t: &Tensor) -> Result<Tensor> {
        let m: usize = self.perm[..self.indexed]
            .iter()
            .map(|&d| self.work_shape[d])
            .product();
        let mut shape = vec![m];
        shape.extend(self.rest());
        t.reshape(i64s(&self.work_shape))?
            .permute(&dims(&self.perm))?
            .reshape(i64s(&shape))
    }

    /// The inverse of [`Self::as_rows`]: `[rows, other sizes...]` back to `shape`.
    fn rows_back(&self, r: &Tensor, shape: &[usize]) -> Result<Tensor> {
        let permuted: Vec<usize> = self.perm.iter().map(|&d| self.work_shape[d]).collect();
        let mut inverse = vec![0; self.perm.len()];
        for (i, &d) in self.perm.iter().enumerate() {
            inverse[d] = i;
        }
        r.reshape(i64s(&permuted))?
            .permute(&dims(&inverse))?
            .reshape(i64s(shape))?
            .contiguous()
    }

    /// `[index dims, other dims]` (of [`Self::rows_shape`]) to the result's dim order.
    fn index_dims_to_place(&self, r: Tensor, index_shape: &[usize]) -> Result<Tensor> {
        let (nb, p) = (index_shape.len(), self.insert_at);
        if p == 0 {
            return Ok(r);
        }
        let order: Vec<usize> = (nb..nb + p).chain(0..nb).chain(nb + p..r.dim()).collect();
        r.permute(&dims(&order))
    }

    /// The inverse of [`Self::index_dims_to_place`].
    fn index_dims_to_front(&self, r: Tensor, index_shape: &[usize]) -> Result<Tensor> {
        let (nb, p) = (index_shape.len(), self.insert_at);
        if p == 0 {
            return Ok(r);
        }
        let order: Vec<usize> = (p..p + nb).chain(0..p).chain(p + nb..r.dim()).collect();
        r.permute(&dims(&order))
    }
}

/// `index(indices)`: `self[indices]` with a tensor (or `None` for a whole dim) per leading
/// dim, as PyTorch's `x[i, :, j]` with tensors `i`, `j`.
pub fn index(t: &Tensor, indices: &[Option<&Tensor>]) -> Result<Tensor> {
    let _no_grad = crate::no_grad(); // the generated wrapper records IndexBackward0
    let info = AdvancedIndex::new("index", t, indices, true)?;
    let index_shape = info
        .index_shape
        .as_deref()
        .expect("masks are counted for index");
    let picked = info
        .as_rows(t)?
        .index_select(0, &info.rows_tensor(t.device())?)?;
    info.index_dims_to_place(
        picked.reshape(i64s(&info.rows_shape(index_shape)))?,
        index_shape,
    )
}

/// The dtype `index_put(accumulate=True)` sums in: float32 for half floats (one rounding, as
/// PyTorch's opmath), int64 for the narrow integers and bool (wrapping, or "any", once cast
/// back), which also keeps every backend's `index_add` in its dtypes.
fn accumulate_dtype(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::F32,
        DType::Bool | DType::U8 | DType::I8 | DType::I16 => DType::I64,
        other => other,
    }
}

/// `index_put(indices, values, accumulate)`: a copy of `self` with `values` (broadcast to
/// the shape `self[indices]` has) written at the indexed positions, or added there with
/// `accumulate` (repeated positions then sum; without it one of them wins, the last on CPU).
pub fn index_put(
    t: &Tensor,
    indices: &[Option<&Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let op = "index_put";
    let _no_grad = crate::no_grad(); // the generated wrapper records IndexPutBackward0
    let info = AdvancedIndex::new(op, t, indices, false)?;
    let result_shape = info.result_shape();
    if let Some(result_shape) = &result_shape {
        if broadcast_shapes(values.shape(), result_shape)
            .ok()
            .as_deref()
            != Some(&result_shape[..])
        {
            return Err(Error::shape(
                op,
                format!(
                    "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {result_shape:?}",
                    values.shape()
                ),
            ));
        }
    }
    if values.dtype() != t.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
                t.dtype().scalar_type_name(),
                values.dtype().scalar_type_name()
            ),
        ));
    }
    // A 0-d CPU value joins a tensor on any device, as a Python scalar would.
    let values = if values.device() != t.device() && values.dim() == 0 {
        values.to_device(t.device())?
    } else {
        crate::dispatch::launch::device_of(op, &[t, values])?;
        values.clone()
    };
    let (Some(result_shape), Some(index_shape)) = (result_shape, info.index_shape.as_deref())
    else {
        // A mask on meta: neither how many positions it selects nor whether `values` fits
        // them is known (PyTorch's meta function checks neither); the result is `self`'s
        // shape, laid out as the written rows put back below.
        let src = info.as_rows(t)?;
        let written = Tensor::empty_on(src.shape(), t.dtype(), t.device())?;
        return info.rows_back(&written, t.shape());
    };
    let count = info.count;
    let mut flat = vec![count];
    flat.extend(info.rest());
    let vals = info
        .index_dims_to_front(values.expand(i64s(&result_shape))?, index_shape)?
        .reshape(i64s(&flat))?;
    let src = info.as_rows(t)?;
    let rows = info.rows_tensor(t.device())?;
    let written = if accumulate {
        let acc = accumulate_dtype(t.dtype());
        src.to_dtype(acc)?
            .index_add(0, &rows, &vals.to_dtype(acc)?)?
            .to_dtype(t.dtype())?
    } else {
        let mut unit = vec![1i64; vals.dim()];
        unit[0] = count as i64;
        let idx = rows.reshape(&unit)?.expand(i64s(vals.shape()))?;
        src.scatter(0, &idx, &vals)?
    };
    info.rows_back(&written, t.shape())
}

/// A formula's `Tensor?[]` (saved as owned tensors) borrowed as the ops take it.
fn borrowed(indices: &[Option<Tensor>]) -> Vec<Option<&Tensor>> {
    indices.iter().map(Option::as_ref).collect()
}

/// Backward of `index` (PyTorch's `index_backward`): the gradient summed into zeros of
/// `self`'s shape at the indexed positions.
pub fn index_backward(
    grad: &Tensor,
    self_sizes: &[usize],
    indices: &[Option<Tensor>],
) -> Result<Tensor> {
    Tensor::alloc_on("index_backward", self_sizes, grad.dtype(), grad.device())?.index_put_with(
        &borrowed(indices),
        grad,
        true,
    )
}

/// Backward of `index_put` for `self`: the gradient itself when accumulating, else the
/// gradient with the overwritten positions zeroed.
pub fn index_put_self_backward(
    grad: &Tensor,
    indices: &[Option<Tensor>],
    values_sizes: &[usize],
    accumulate: bool,
) -> Result<Tensor> {
    if accumulate {
        return Ok(grad.clone());
    }
    let zeros = Tensor::alloc_on(
        "index_put_backward",
        values_sizes,
        grad.dtype(),
        grad.device(),
    )?;
    grad.index_put_with(&borrowed(indices), &zeros, false)
}

/// Backward of `index_put` for `values`: the gradient at the indexed positions, summed down
/// to `values`' shape where it was broadcast.
pub fn index_put_values_backward(
    grad: &Tensor,
    indices: &[Option<Tensor>],
    values_sizes: &[usize],
) -> Result<Tensor> {
    grad.index(&borrowed(indices))?
        .sum_to_size(i64s(values_sizes))
}
