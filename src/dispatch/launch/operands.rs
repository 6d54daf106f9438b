//! An op's operands and output: broadcast shape, common device, output tensor, cast inputs.

use crate::dispatch::memory::device_mix;
use crate::{DType, Device, Error, Layout, Result, Tensor};
use smallvec::SmallVec;
use std::borrow::Cow;

/// `a == b` for the few dims of a shape, without the call to `memcmp` that slice equality
/// compiles to (a large share of a small op's time when it runs several times per op).
#[inline]
pub(crate) fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The broadcast shape of all tensor operands: borrowed from the first when all agree (most
/// ops), so the common case copies no shape.
#[inline]
pub(crate) fn broadcast_shapes<'t>(op: &str, tensors: &[&'t Tensor]) -> Result<Shape<'t>> {
    if let Some((first, rest)) = tensors.split_first() {
        if rest.iter().all(|t| same_dims(t.shape(), first.shape())) {
            return Ok(Shape::Same(first.shape()));
        }
    }
    broadcast_all(op, tensors).map(Shape::Broadcast)
}

/// An op's output shape: an operand's own, or one worked out by broadcasting.
pub(crate) enum Shape<'t> {
    Same(&'t [usize]),
    Broadcast(kiln_kernels::Dims),
}

impl std::ops::Deref for Shape<'_> {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        match self {
            Shape::Same(s) => s,
            Shape::Broadcast(d) => d,
        }
    }
}

fn broadcast_all(op: &str, tensors: &[&Tensor]) -> Result<kiln_kernels::Dims> {
    let mut shape = kiln_kernels::Dims::new();
    for t in tensors {
        shape = kiln_kernels::layout::broadcast_shapes(&shape, t.shape())
            .map_err(|m| Error::op(op, m))?;
    }
    Ok(shape)
}

/// The device every tensor operand is on, or PyTorch's error for a mix.
pub(crate) fn device_of(op: &str, tensors: &[&Tensor]) -> Result<Device> {
    let first = tensors.first().map_or(Device::Cpu, |t| t.device());
    match tensors.iter().find(|t| t.device() != first) {
        Some(t) => Err(device_mix(op, first, t.device())),
        None => Ok(first),
    }
}

/// The device of a pointwise op given each operand's `(device, ndim)`: as [`device_of`],
/// except that a 0-d CPU tensor may join tensors on another device (PyTorch's TensorIterator
/// treats it as a scalar), so `x_cuda * torch.tensor(2.0)` works. Returns the two devices at
/// fault otherwise.
fn common_device(
    operands: impl Iterator<Item = (Device, usize)>,
) -> Result<Device, (Device, Device)> {
    let mut common: Option<Device> = None;
    for (device, ndim) in operands {
        if device == Device::Cpu && ndim == 0 {
            continue;
        }
        match common {
            None => common = Some(device),
            Some(c) if c != device => return Err((c, device)),
            Some(_) => {}
        }
    }
    Ok(common.unwrap_or(Device::Cpu))
}

/// [`common_device`] of a pointwise op's tensor operands. An in-place op's `self` is its
/// output, and an output must be on the op's device, so a 0-d CPU `self` with GPU operands
/// is still an error.
#[inline]
pub(crate) fn pointwise_device(
    op: &str,
    tensors: &[&Tensor],
    dest: Option<&Tensor>,
) -> Result<Device> {
    let cpu = |t: &Tensor| t.device() == Device::Cpu;
    if tensors.iter().all(|t| cpu(t)) && dest.is_none_or(cpu) {
        return Ok(Device::Cpu);
    }
    mixed_device(op, tensors, dest)
}

fn mixed_device(op: &str, tensors: &[&Tensor], dest: Option<&Tensor>) -> Result<Device> {
    let device = common_device(tensors.iter().map(|t| (t.device(), t.dim())))
        .map_err(|(a, b)| device_mix(op, a, b))?;
    match dest {
        Some(d) if d.device() != device => Err(device_mix(op, device, d.device())),
        _ => Ok(device),
    }
}

/// The tensor a pointwise kernel writes: `dest` itself when it already has the result's shape
/// and dtype and no two of its indices share memory, else fresh storage on `device` (the
/// caller copies) laid out in the memory order of `inputs`, as PyTorch's TensorIterator
/// allocates its outputs: `x.t() + y.t()` is itself transposed, so all three walk memory
/// in one sequential pass.
pub(crate) fn output(
    op: &str,
    dest: Option<&Tensor>,
    shape: &[usize],
    dtype: DType,
    device: Device,
    inputs: &[&Tensor],
) -> Result<Tensor> {
    match dest {
        Some(d)
            if d.shape() == shape && d.dtype() == dtype && !d.layout().has_internal_overlap() =>
        {
            Ok(d.clone())
        }
        _ => {
            let out = Tensor::alloc_empty_on(op, shape, dtype, device)?;
            Ok(match memory_order(shape, inputs) {
                Some(order) => out.with_layout(Layout::dense_in_order(shape, &order)),
                None => out,
            })
        }
    }
}

/// The dim order (outermost first) of `inputs` broadcast to `shape`, when it is not
/// row-major.
fn memory_order(shape: &[usize], inputs: &[&Tensor]) -> Option<Vec<usize>> {
    if shape.len() < 2 || inputs.iter().all(|t| t.is_contiguous()) {
        return None;
    }
    let layouts: Vec<Layout> = inputs
        .iter()
        .filter_map(|t| t.layout().broadcast_to(shape).ok())
        .collect();
    if layouts.is_empty() {
        return None;
    }
    let refs: Vec<&Layout> = layouts.iter().collect();
    let order = Layout::iteration_order(&refs);
    order
        .iter()
        .enumerate()
        .any(|(i, &d)| i != d)
        .then_some(order)
}

/// An input cast to the compute dtype and broadcast to the output shape. Reading it while
/// writing `out` is made safe by the `map*` loops (`loops.rs`).
#[inline]
pub(crate) fn operand<'t>(
    t: &'t Tensor,
    compute: DType,
    shape: &[usize],
    device: Device,
) -> Result<Cow<'t, Tensor>> {
    if t.dtype() == compute && t.device() == device && same_dims(t.shape(), shape) {
        // The common case: borrowed as it is, not even a reference count touched.
        return Ok(Cow::Borrowed(t));
    }
    converted_operand(t, compute, shape, device).map(Cow::Owned)
}

fn converted_operand(
    t: &Tensor,
    compute: DType,
    shape: &[usize],
    device: Device,
) -> Result<Tensor> {
    // A 0-d CPU operand of a GPU op (see `pointwise_device`) goes over as one element.
    let moved;
    let t = if t.device() == device {
        t
    } else {
        moved = t.to_device(device)?;
        &moved
    };
    let t = cast(t, compute)?;
    let layout = t
        .layout()
        .broadcast_to(shape)
        .map_err(|m| Error::op("broadcast", m))?;
    Ok(t.with_layout(layout))
}

/// A fixed-dtype input (a mask, a condition) broadcast to the output shape.
pub(crate) fn fixed_operand(
    op: &str,
    name: &str,
    t: &Tensor,
    dtype: DType,
    shape: &[usize],
    device: Device,
) -> Result<Tensor> {
    let t = fixed_input(op, name, t, dtype)?;
    Ok(operand(&t, dtype, shape, device)?.into_owned())
}

/// Checks a fixed-dtype input. An int64 index also accepts int32 (converted), as PyTorch's
/// indexing ops do.
pub(crate) fn fixed_input(op: &str, name: &str, t: &Tensor, dtype: DType) -> Result<Tensor> {
    if dtype == DType::I64 && t.dtype() == DType::I32 {
        return t.cast_copy(DType::I64);
    }
    // ATen's `scatter_gather_dtype_check` looks at the index's dtype only when it has
    // elements: an empty index of any dtype is an empty int64 one.
    if dtype == DType::I64
        && t.numel() == 0
        && matches!(op, "gather" | "scatter" | "scatter_add" | "scatter_reduce")
    {
        return t.cast_copy(DType::I64);
    }
    if dtype == DType::I64 && t.dtype() != DType::I64 {
        return Err(Error::dtype(
            op,
            format!("Expected dtype int32/int64 for {name}"),
        ));
    }
    if t.dtype() != dtype {
        return Err(Error::dtype(
            op,
            format!(
                "expected {name} to have dtype {dtype}, but got {}",
                t.dtype()
            ),
        ));
    }
    Ok(t.clone())
}

/// `t` in dtype `d`: the same tensor when it already is, else a converted copy.
pub(crate) fn cast(t: &Tensor, d: DType) -> Result<Tensor> {
    if t.dtype() == d {
        Ok(t.clone())
    } else {
        t.cast_copy(d)
    }
}

/// Replaces inputs that share storage with `out` by private copies, so the kernel never
/// reads a buffer it is writing.
pub(super) fn unalias<'t>(
    inputs: &[&'t Tensor],
    out: &Tensor,
) -> Result<SmallVec<[Cow<'t, Tensor>; 4]>> {
    let mut v = SmallVec::new();
    for &t in inputs {
        v.push(if t.shares_storage_with(out) {
            Cow::Owned(t.fresh_copy()?)
        } else {
            Cow::Borrowed(t)
        });
    }
    Ok(v)
}

/// The layout an op's outputs follow (`memory_format:` in the YAML): the first of `inputs`
/// that is channels-last gives its format, else row-major.
pub(crate) fn followed_format(inputs: &[&Tensor]) -> crate::MemoryFormat {
    inputs
        .iter()
        .map(|t| t.suggest_memory_format())
        .find(|&f| f != crate::MemoryFormat::Contiguous)
        .unwrap_or(crate::MemoryFormat::Contiguous)
}

/// A fresh output re-laid out in `format` when it has that format's rank (the storage is
/// the same size: only the strides change), else as it is.
pub(crate) fn in_format(t: Tensor, format: crate::MemoryFormat) -> Tensor {
    match format {
        crate::MemoryFormat::Contiguous | crate::MemoryFormat::Preserve => t,
        f if f.dim_order(t.dim()).is_some() => {
            let layout = Layout::in_format(t.shape(), f);
            t.with_layout(layout)
        }
        _ => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: Device = Device::Cuda(0);

    #[test]
    fn a_cpu_scalar_tensor_may_join_gpu_operands() {
        // (device, ndim) per operand, as `pointwise_device` sees them.
        assert_eq!(
            common_device([(GPU, 2), (Device::Cpu, 0)].into_iter()),
            Ok(GPU)
        );
        assert_eq!(
            common_device([(Device::Cpu, 0), (GPU, 1)].into_iter()),
            Ok(GPU)
        );
        assert_eq!(
            common_device([(Device::Cpu, 0), (Device::Cpu, 0)].into_iter()),
            Ok(Device::Cpu)
        );
        assert_eq!(common_device([(GPU, 0), (GPU, 0)].into_iter()), Ok(GPU));
    }

    #[test]
    fn other_mixes_name_both_devices() {
        assert_eq!(
            common_device([(Device::Cpu, 1), (GPU, 1)].into_iter()),
            Err((Device::Cpu, GPU))
        );
        // Only CPU scalars are special: a 0-d GPU tensor does not join CPU operands.
        assert_eq!(
            common_device([(Device::Cpu, 2), (GPU, 0)].into_iter()),
            Err((Device::Cpu, GPU))
        );
        assert_eq!(
            common_device([(GPU, 1), (Device::Cpu, 0), (Device::Cuda(1), 3)].into_iter()),
            Err((GPU, Device::Cuda(1)))
        );
    }

    #[test]
    fn a_device_mix_is_a_device_error() {
        let e = device_mix("add", Device::Cpu, GPU);
        assert_eq!(e.kind(), crate::ErrorKind::Device);
        assert_eq!(
            e.to_string(),
            "add: Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!"
        );
    }
}
