//! Embeddings: `embedding` (rows of the weight), and `embedding_bag`, an explicit op over
//! `index_select` and `index_add`, with its backward helpers.

use crate::ops::backward::i64s;
use crate::ops::shaping::{host_vec, index};
use crate::{DType, Device, Error, Result, Scalar, Tensor};

/// `embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)`: rows of `weight`;
/// the row at `padding_idx` gets no gradient.
pub fn embedding(
    weight: &Tensor,
    indices: &Tensor,
    padding_idx: i64,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> Result<Tensor> {
    let op = "embedding";
    if scale_grad_by_freq || sparse {
        return Err(Error::not_implemented(
            op,
            "scale_grad_by_freq and sparse gradients are not supported by kiln (it has no sparse tensors)",
        ));
    }
    if weight.dim() != 2 {
        return Err(Error::shape(op, "'weight' must be 2-D"));
    }
    if indices.dtype() != DType::I64 && indices.dtype() != DType::I32 {
        return Err(Error::dtype(
            op,
            format!(
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
                indices.dtype().scalar_type_name()
            ),
        ));
    }
    let idx = indices.to_dtype(DType::I64)?.reshape([-1])?;
    let mut shape = i64s(indices.shape());
    shape.push(weight.shape()[1] as i64);
    let rows = weight.index_select(0, &idx)?;
    let n = weight.shape()[0] as i64;
    let pad = if padding_idx < 0 {
        padding_idx + n
    } else {
        padding_idx
    };
    // -1 is aten's "no padding row" (F.embedding maps its negative indices before calling).
    let rows = if padding_idx != -1 {
        if !(0..n).contains(&pad) {
            return Err(Error::value(
                op,
                "Padding_idx must be within num_embeddings",
            ));
        }
        // The padding row's value without its gradient.
        let frozen = weight.detach().index_select(0, &idx)?;
        let hit = idx.eq_scalar(pad)?.unsqueeze(1)?;
        frozen.where_cond(&hit, &rows)?
    } else {
        rows
    };
    rows.reshape(&shape)
}

/// `embedding_bag`'s `mode`: PyTorch's MODE_SUM, MODE_MEAN and MODE_MAX.
const BAG_SUM: i64 = 0;

const BAG_MEAN: i64 = 1;

const BAG_MAX: i64 = 2;

/// PyTorch's `checkScalarTypes` for an int64/int32 argument of `embedding_bag`.
fn check_index_dtype(op: &str, name: &str, t: &Tensor) -> Result<()> {
    if matches!(t.dtype(), DType::I64 | DType::I32) {
        return Ok(());
    }
    Err(Error::dtype(
        op,
        format!(
            "Expected tensor for argument #1 '{name}' to have one of the following scalar types: Long, Int; but got {} instead",
            t.dtype().scalar_type_name()
        ),
    ))
}

/// `embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
/// per_sample_weights, include_last_offset, padding_idx)`: PyTorch's `aten::embedding_bag`.
/// Bag `b` holds `indices[offsets[b]..offsets[b + 1]]` (the last bag runs to the end, or with
/// `include_last_offset` the last offset closes it); each bag's rows of `weight` are summed
/// (mode 0, scaled by `per_sample_weights` if given), averaged (1) or maxed per column (2),
/// `padding_idx` left out, and an empty bag gives zeros. Returns `(output [bags, D],
/// offset2bag [N], bag_size [bags], max_indices)`, the last three in the index dtype:
/// `offset2bag` is each index's bag, `bag_size` the rows each bag reduced (zeros in sum
/// mode, as PyTorch's CPU kernel gives), `max_indices` the row each maximum came from in max
/// mode (`[bags, D]`) and a copy of `bag_size` otherwise. Sums and means of f16/bf16 weights
/// accumulate in float32. Explicit: the gradient to `weight` (dense) and to
/// `per_sample_weights` comes from derivatives.yaml.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    _scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let op = "embedding_bag";
    let _no_grad = crate::no_grad(); // the generated wrapper records EmbeddingBagBackward0
    if sparse {
        return Err(Error::not_implemented(
            op,
            "sparse gradients are not supported by kiln (it has no sparse tensors)",
        ));
    }
    check_index_dtype(op, "indices", indices)?;
    check_index_dtype(op, "offsets", offsets)?;
    if !weight.dtype().is_floating_point() {
        return Err(Error::dtype(
            op,
            format!(
                "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, Float, Double; but got {} instead",
                weight.dtype().scalar_type_name()
            ),
        ));
    }
    if weight.dim() != 2 {
        return Err(Error::shape(
            op,
            format!(
                "weight has to be a 2D Tensor, but got Tensor of dimension {}",
                weight.dim()
            ),
        ));
    }
    match indices.dim() {
        1 => {}
        2 => return Err(Error::shape(op, "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences (embedding_bag_functional takes it that way). However, found offsets of type Tensor")),
        d => {
            return Err(Error::shape(
                op,
                format!("input has to be 1D or 2D Tensor, but got Tensor of dimension {d}"),
            ))
        }
    }
    if offsets.dim() != 1 {
        return Err(Error::shape(
            op,
            format!(
                "offsets has to be a 1D Tensor, but got Tensor of dimension {}",
                offsets.dim()
            ),
        ));
    }
    if !(BAG_SUM..=BAG_MAX).contains(&mode) {
        return Err(Error::value(
            op,
            format!("mode has to be one of sum (0), mean (1) or max (2), but got {mode}"),
        ));
    }
    let (num, d) = (weight.shape()[0], weight.shape()[1]);
    let pad = match padding_idx {
        Some(p) if p < -(num as i64) || p >= num as i64 => {
            return Err(Error::value(
                op,
                format!(
                    "padding_idx must be within the number of embeddings, -{num} through {}, but got {p}",
                    num as i64 - 1
                ),
            ))
        }
        Some(p) if p < 0 => Some(p + num as i64),
        other => other,
    };
    let mut operands = vec![weight, indices, offsets];
    operands.extend(per_sample_weights);
    let device = crate::dispatch::launch::device_of(op, &operands)?;
    // On meta there are no values: the checks of them are skipped, the others all run.
    let values = if crate::ops::has_values(indices) {
        Some((indices.to_vec::<i64>()?, offsets.to_vec::<i64>()?))
    } else {
        None
    };
    let (n, n_offsets) = (indices.numel(), offsets.numel());
    if let Some((_, offs)) = &values {
        check_offsets(op, offs, n)?;
    }
    if include_last_offset && n_offsets == 0 {
        return Err(Error::value(
            op,
            "include_last_offset: number of offset should be at least 1",
        ));
    }
    let bags = n_offsets - include_last_offset as usize;
    if let Some((_, offs)) = &values {
        if include_last_offset && offs[bags] != n as i64 {
            return Err(Error::value(
                op,
                format!(
                    "with include_last_offset, the last offset closes the last bag and has to be the length of indices {n}, but got {}",
                    offs[bags]
                ),
            ));
        }
    }
    if bags == 0 && n > 0 {
        return Err(Error::value(
            op,
            format!("offsets holds no bag, so the {n} indices belong to none"),
        ));
    }
    if let Some(p) = per_sample_weights {
        if mode != BAG_SUM {
            return Err(Error::value(
                op,
                "embedding_bag: per_sample_weights only supported with mode='sum'",
            ));
        }
        if p.dtype() != weight.dtype() {
            return Err(Error::dtype(
                op,
                format!(
                    "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 'per_sample_weights'; but type {} does not equal {}",
                    weight.dtype().scalar_type_name(),
                    p.dtype().scalar_type_name()
                ),
            ));
        }
        if p.shape() != [n] {
            return Err(Error::shape(
                op,
                format!(
                    "embedding_bag: per_sample_weights ({:?}) has to be 1D and as long as indices ({n})",
                    p.shape()
                ),
            ));
        }
    }
    let out_index = if indices.dtype() == DType::I32 && offsets.dtype() == DType::I32 {
        DType::I32
    } else {
        DType::I64
    };
    let Some((idx, offs)) = values else {
        // The outputs' shapes need no values (PyTorch's meta function).
        let empty = |shape: &[usize], dtype| Tensor::empty_on(shape, dtype, device);
        let max_indices = if mode == BAG_MAX {
            empty(&[bags, d], out_index)?
        } else {
            empty(&[bags], out_index)?
        };
        return Ok((
            empty(&[bags, d], weight.dtype())?,
            empty(&[n], out_index)?,
            empty(&[bags], out_index)?,
            max_indices,
        ));
    };
    if let Some(&bad) = idx.iter().find(|&&i| i < 0 || i >= num as i64) {
        return Err(Error::index(
            op,
            format!("embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {bad}"),
        ));
    }

    // Each index's bag, and the indices each bag reduces (padding left out).
    let mut offset2bag: Vec<i64> = host_vec(op, n)?;
    for b in 0..bags {
        let end = offs.get(b + 1).map_or(n, |&e| e as usize);
        offset2bag.extend(std::iter::repeat_n(b as i64, end - offs[b] as usize));
    }
    let kept: Vec<usize> = (0..n).filter(|&i| Some(idx[i]) != pad).collect();
    let mut sizes = vec![0i64; bags];
    for &i in &kept {
        sizes[offset2bag[i] as usize] += 1;
    }
    let as_index = |v: Vec<i64>| index(v, device)?.to_dtype(out_index);
    let bag_size = if mode == BAG_SUM {
        vec![0; bags]
    } else {
        sizes.clone()
    };
    let (output, max_indices) = if mode == BAG_MAX {
        let (out, source) = embedding_bag_max(weight, &idx, &offset2bag, &kept, &sizes, device)?;
        (out, source.to_dtype(out_index)?)
    } else {
        let compute = match weight.dtype() {
            DType::F16 | DType::BF16 => DType::F32,
            other => other,
        };
        let pick = |f: &dyn Fn(usize) -> i64| index(kept.iter().map(|&i| f(i)).collect(), device);
        let mut rows = weight
            .to_dtype(compute)?
            .index_select(0, &pick(&|i| idx[i])?)?;
        if let Some(p) = per_sample_weights {
            let scale = p
                .to_dtype(compute)?
                .index_select(0, &pick(&|i| i as i64)?)?;
            rows = rows.mul(&scale.unsqueeze(1)?)?;
        }
        let mut out = Tensor::alloc_on(op, &[bags, d], compute, device)?.index_add(
            0,
            &pick(&|i| offset2bag[i])?,
            &rows,
        )?;
        if mode == BAG_MEAN {
            let counts: Vec<f64> = sizes.iter().map(|&c| c.max(1) as f64).collect();
            let counts = Tensor::from_vec(counts, &[bags, 1])?
                .to_device(device)?
                .to_dtype(compute)?;
            out = out.div(&counts)?;
        }
        (out.to_dtype(weight.dtype())?, as_index(bag_size.clone())?)
    };
    Ok((
        output,
        as_index(offset2bag)?,
        as_index(bag_size)?,
        max_indices,
    ))
}

/// `embedding_bag`'s checks of the offsets' values: they start at 0, do not decrease and
/// stay within the `n` indices.
fn check_offsets(op: &str, offs: &[i64], n: usize) -> Result<()> {
    if let (Some(&first), Some(&last)) = (offs.first(), offs.last()) {
        if first != 0 {
            return Err(Error::value(op, format!("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {first}")));
        }
        if last > n as i64 {
            return Err(Error::value(
                op,
                format!("offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {last}"),
            ));
        }
    }
    if let Some(i) = (1..offs.len()).find(|&i| offs[i] < offs[i - 1]) {
        return Err(Error::value(
            op,
            format!(
                "offsets has to be non-decreasing, but offsets[{i}] = {} is less than offsets[{}] = {}",
                offs[i],
                i - 1,
                offs[i - 1]
            ),
        ));
    }
    Ok(())
}

/// Max mode of `embedding_bag`: each bag's kept rows, padded with -inf to the longest bag,
/// reduced by `max.dim` (the first maximum on ties, as PyTorch's strict `>`); an empty bag
/// gives zeros and row 0. Returns the output and the rows its maxima came from (int64,
/// `[bags, D]`). Memory: bags x longest bag x D elements.
fn embedding_bag_max(
    weight: &Tensor,
    idx: &[i64],
    offset2bag: &[i64],
    kept: &[usize],
    sizes: &[i64],
    device: Device,
) -> Result<(Tensor, Tensor)> {
    let op = "embedding_bag";
    let (bags, d) = (sizes.len(), weight.shape()[1]);
    let longest = sizes.iter().copied().max().unwrap_or(0) as usize;
    if longest == 0 {
        return Ok((
            Tensor::alloc_on(op, &[bags, d], weight.dtype(), device)?,
            Tensor::alloc_on(op, &[bags, d], DType::I64, device)?,
        ));
    }
    let slots = bags
        .checked_mul(longest)
        .ok_or_else(|| crate::ops::shaping::size_overflow(op, "bags x longest bag"))?;
    let mut rows: Vec<i64> = host_vec(op, slots)?;
    rows.resize(slots, 0);
    let mut empty: Vec<bool> = host_vec(op, slots)?;
    empty.resize(slots, true);
    let mut fill = vec![0usize; bags];
    for &i in kept {
        let b = offset2bag[i] as usize;
        rows[b * longest + fill[b]] = idx[i];
        empty[b * longest + fill[b]] = false;
        fill[b] += 1;
    }
    let gathered = weight
        .index_select(0, &index(rows.clone(), device)?)?
        .reshape(i64s(&[bags, longest, d]))?;
    let empty = Tensor::from_vec(empty, &[bags, longest, 1])?.to_device(device)?;
    let (values, at) = gathered
        .masked_fill(&empty, f64::NEG_INFINITY)?
        .max_dim(1)?;
    let source = index(rows, device)?
        .reshape(i64s(&[bags, longest]))?
        .gather(1, &at)?;
    let filled: Vec<bool> = sizes.iter().map(|&s| s > 0).collect();
    let filled = Tensor::from_vec(filled, &[bags, 1])?.to_device(device)?;
    let zero = Tensor::alloc_on(op, &[], weight.dtype(), device)?;
    Ok((values.where_cond(&filled, &zero)?, source))
}

/// Backward of `embedding_bag` for `weight` (PyTorch's `_embedding_bag_dense_backward`):
/// max mode sends each output element's gradient to the row its maximum came from (none from
/// an empty bag); sum and mean send each bag's gradient to every row it reduced (padding left
/// out), scaled by the row's per-sample weight or by 1 / bag size, and with
/// `scale_grad_by_freq` by 1 / how often the row occurs in `indices`. Half gradients
/// accumulate in float32.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag_backward(
    grad: &Tensor,
    indices: &Tensor,
    offset2bag: &Tensor,
    bag_size: &Tensor,
    max_indices: &Tensor,
    weight_sizes: &[usize],
    scale_grad_by_freq: bool,
    mode: i64,
    per_sample_weights: &[Tensor],
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    let op = "embedding_bag_backward";
    let (num, d) = (weight_sizes[0], weight_sizes[1]);
    let g = match grad.dtype() {
        DType::F16 | DType::BF16 => grad.to_dtype(DType::F32)?,
        _ => grad.clone(),
    };
    let device = g.device();
    let zero = Tensor::alloc_on(op, &[], g.dtype(), device)?;
    let weight_grad = if mode == BAG_MAX {
        let filled = bag_size.gt_scalar(0)?.unsqueeze(1)?;
        let cols = Tensor::arange(0i64, d as i64, 1i64, DType::I64)?.to_device(device)?;
        let target = max_indices
            .to_dtype(DType::I64)?
            .mul_scalar(d as i64)?
            .add(&cols)?;
        Tensor::alloc_on(op, &[num * d], g.dtype(), device)?
            .index_add(
                0,
                &target.reshape([-1])?,
                &g.where_cond(&filled, &zero)?.reshape([-1])?,
            )?
            .reshape(i64s(weight_sizes))?
    } else {
        let idx = indices.to_dtype(DType::I64)?;
        let bags = offset2bag.to_dtype(DType::I64)?;
        let mut scale: Option<Tensor> = per_sample_weights
            .first()
            .map(|p| p.to_dtype(g.dtype()))
            .transpose()?;
        let times = |s: Option<Tensor>, by: Tensor| -> Result<Option<Tensor>> {
            Ok(Some(match s {
                Some(s) => s.mul(&by)?,
                None => by,
            }))
        };
        if mode == BAG_MEAN {
            let inv = bag_size
                .to_dtype(g.dtype())?
                .clamp_with(Some(Scalar::Int(1)), None)?
                .reciprocal()?
                .index_select(0, &bags)?;
            scale = times(scale, inv)?;
        }
        if scale_grad_by_freq {
            let ones = Tensor::ones([idx.numel()], g.dtype())?.to_device(device)?;
            let counts = Tensor::alloc_on(op, &[num], g.dtype(), device)?
                .index_add(0, &idx, &ones)?
                .index_select(0, &idx)?;
            scale = times(scale, counts.reciprocal()?)?;
        }
        let mut rows = g.index_select(0, &bags)?;
        if let Some(s) = scale {
            rows = rows.mul(&s.unsqueeze(1)?)?;
        }
        if let Some(p) = padding_idx {
            let p = if p < 0 { p + num as i64 } else { p };
            rows = rows.where_cond(&idx.ne_scalar(p)?.unsqueeze(1)?, &zero)?;
        }
        Tensor::alloc_on(op, weight_sizes, g.dtype(), device)?.index_add(0, &idx, &rows)?
    };
    weight_grad.to_dtype(grad.dtype())
}

/// Backward of `embedding_bag` for `per_sample_weights` (sum mode): each index's bag
/// gradient dotted with its row of `weight`, 0 at `padding_idx`.
pub fn embedding_bag_per_sample_weights_backward(
    grad: &Tensor,
    weight: &Tensor,
    indices: &Tensor,
    offset2bag: &Tensor,
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    let idx = indices.to_dtype(DType::I64)?;
    let dots = grad
        .index_select(0, &offset2bag.to_dtype(DType::I64)?)?
        .mul(&weight.index_select(0, &idx)?)?
        .sum_dim(&[1])?;
    match padding_idx {
        Some(p) => {
            let p = if p < 0 {
                p + weight.shape()[0] as i64
            } else {
                p
            };
            let zero =
                Tensor::alloc_on("embedding_bag_backward", &[], dots.dtype(), dots.device())?;
            dots.where_cond(&idx.ne_scalar(p)?, &zero)
        }
        None => Ok(dots),
    }
}

/// `torch.nn.functional.embedding_bag(input, weight, offsets, ...)`: the first output of
/// [`embedding_bag`], with F's argument order, `mode` as "sum", "mean" or "max", and its
/// checks. A 2-D `input` (offsets `None`) is a batch of equal-length bags, one per row; a 1-D
/// one needs `offsets`. (F's `max_norm` / `norm_type`, which renormalise `weight` in place,
/// are not taken.)
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag_functional(
    input: &Tensor,
    weight: &Tensor,
    offsets: Option<&Tensor>,
    scale_grad_by_freq: bool,
    mode: &str,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    let op = "embedding_bag";
    if let Some(p) = per_sample_weights {
        if p.shape() != input.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "embedding_bag: If per_sample_weights ({:?}) is not None, then it must have the same shape as the input ({:?})",
                    p.shape(),
                    input.shape()
                ),
            ));
        }
    }
    if weight.dim() != 2 {
        return Err(Error::shape(
            op,
            format!(
                "weight has to be a 2D Tensor, but got Tensor of dimension {}",
                weight.dim()
            ),
        ));
    }
    let (input, offsets, per_sample_weights) = match input.dim() {
        2 => {
            if offsets.is_some() {
                return Err(Error::shape(op, "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. However, found offsets of type Tensor"));
            }
            let (rows, len) = (input.shape()[0], input.shape()[1]);
            let starts: Vec<i64> = (0..rows).map(|r| (r * len) as i64).collect();
            let offsets = Tensor::from_vec(starts, &[rows])?
                .to_dtype(input.dtype())?
                .to_device(input.device())?;
            let psw = per_sample_weights.map(|p| p.reshape([-1])).transpose()?;
            (input.reshape([-1])?, offsets, psw)
        }
        1 => {
            let Some(offsets) = offsets else {
                return Err(Error::value(
                    op,
                    "offsets has to be a 1D Tensor but got None",
                ));
            };
            if offsets.dim() != 1 {
                return Err(Error::shape(op, "offsets has to be a 1D Tensor"));
            }
            (input.clone(), offsets.clone(), per_sample_weights.cloned())
        }
        d => {
            return Err(Error::shape(
                op,
                format!("input has to be 1D or 2D Tensor, but got Tensor of dimension {d}"),
            ))
        }
    };
    let mode_enum = match mode {
        "sum" => BAG_SUM,
        "mean" => BAG_MEAN,
        "max" if scale_grad_by_freq => {
            return Err(Error::value(
                op,
                "max mode does not support scaling the gradient by the frequency",
            ))
        }
        "max" if sparse => {
            return Err(Error::value(op, "max mode does not support sparse weights"))
        }
        "max" => BAG_MAX,
        _ => return Err(Error::value(op, "mode has to be one of sum, mean or max")),
    };
    if per_sample_weights.is_some() && mode_enum != BAG_SUM {
        return Err(Error::value(
            op,
            format!("embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{mode}'). Please open a feature request on GitHub."),
        ));
    }
    Ok(crate::embedding_bag_with(
        weight,
        &input,
        &offsets,
        scale_grad_by_freq,
        mode_enum,
        sparse,
        per_sample_weights.as_ref(),
        include_last_offset,
        padding_idx,
    )?
    .0)
}
