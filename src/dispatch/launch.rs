//! The runtime half of generated dispatch: promotion, broadcasting, output allocation,
//! de-aliasing, locking, and the in-place / `out=` commit rules. Generated code calls these so
//! that what each op's generated code holds is only what differs between ops.

use super::memory::device_mix;
use super::OutBufs;
use crate::autograd;
use crate::tensor::promotion::{self, Operand};
use crate::tensor::{BufferElement, CpuBuffer};
use crate::{DType, Device, Error, Layout, Result, Scalar, Tensor};
use kiln_kernels::{cpu::pointwise, KResult};
use smallvec::SmallVec;
use std::borrow::Cow;

pub(crate) use crate::dispatch::{dst, src, with_buffers};
use crate::dispatch::{elems, elems_mut, with_dense};

/// `torch.result_type` of the operands.
#[inline]
pub(crate) fn result_type(operands: &[Operand<'_>]) -> DType {
    promotion::result_type(operands)
}

/// Integer and bool results of float-valued ops become the default float dtype.
pub(crate) fn int_to_float(d: DType) -> DType {
    if d.is_floating_point() {
        d
    } else {
        DType::F32
    }
}

/// `promote: bool_to_long`: int64 for bool, the dtype itself otherwise.
pub(crate) fn bool_to_long(d: DType) -> DType {
    if d == DType::Bool {
        DType::I64
    } else {
        d
    }
}

/// PyTorch's opmath type of a compute dtype: float32 for the 16-bit floats, the dtype itself
/// otherwise. `fixed: {x: opmath}` arguments and outputs of a structured kernel have it.
pub(crate) fn opmath_dtype(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// The one dtype all tensor operands share, or PyTorch's error: the op's own `message` when
/// the YAML gives one, else `mm`'s.
pub(crate) fn same_dtype(
    op: &str,
    message: Option<&str>,
    operands: &[Operand<'_>],
) -> Result<DType> {
    let mut dtypes = operands.iter().filter_map(|o| match o {
        Operand::Tensor(t) => Some(t.dtype()),
        Operand::Scalar(_) => None,
    });
    let first = dtypes
        .next()
        .ok_or_else(|| Error::value(op, "expected at least one tensor"))?;
    if let Some(other) = dtypes.find(|d| *d != first) {
        return Err(Error::dtype(
            op,
            match message {
                Some(m) => m.to_string(),
                None => format!(
                    "expected m1 and m2 to have the same dtype, but got: {} != {}",
                    first.scalar_type_name(),
                    other.scalar_type_name()
                ),
            },
        ));
    }
    Ok(first)
}

/// `sum`'s result dtype: the requested one, int64 for integers and bool, else the input's.
pub(crate) fn sum_dtype(input: DType, requested: Option<DType>) -> DType {
    requested.unwrap_or(if input.is_floating_point() {
        input
    } else {
        DType::I64
    })
}

/// PyTorch's `alpha_check`: an integral computation takes no float `alpha`, bool no
/// non-bool one.
#[inline]
pub(crate) fn check_alpha(op: &str, compute: DType, alpha: Scalar) -> Result<()> {
    if !compute.is_floating_point() && alpha.is_floating_point() {
        return Err(Error::dtype(
            op,
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    if compute == DType::Bool && !matches!(alpha, Scalar::Bool(_)) && alpha.to_f64() != 1.0 {
        return Err(Error::dtype(
            op,
            "Boolean alpha only supported for Boolean results.",
        ));
    }
    Ok(())
}

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

/// `"op" not implemented for 'dtype'` unless the backend's kernel covers `dtype`.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn check_dtype(
    op: &str,
    backend: &str,
    dtype: DType,
    supported: &[DType],
) -> Result<()> {
    if supported.contains(&dtype) {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!(
                "\"{op}_{backend}\" not implemented for '{}'",
                dtype.scalar_type_name()
            ),
        ))
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
/// writing `out` is made safe by `map*` below.
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
fn unalias<'t>(inputs: &[&'t Tensor], out: &Tensor) -> Result<SmallVec<[Cow<'t, Tensor>; 4]>> {
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

// The `map*` functions take the op's scalar kernel as a closure and wrap it in slice
// functions (`&dyn Fn`) for `kernels::cpu::pointwise`; everything heavy — locking,
// de-aliasing, the contiguous/strided/parallel loops — lives in the `*_slices` functions,
// generic over element types only, so it is compiled once per dtype rather than once per
// op × dtype. Only the small closures below are per op.

/// Runs a pointwise loop over one input.
pub(crate) fn map1<A: BufferElement, O: BufferElement>(
    a: &Tensor,
    out: &Tensor,
    f: impl Fn(A) -> O + Sync,
) -> Result<()> {
    map1_slices(a, out, &|a: &[A], o: &mut [O]| {
        o.iter_mut().zip(a).for_each(|(o, &x)| *o = f(x))
    })
}

fn map1_slices<A: BufferElement, O: BufferElement>(
    a: &Tensor,
    out: &Tensor,
    f: pointwise::Slice1<'_, A, O>,
) -> Result<()> {
    let dense = with_dense([a], out, |[x], o| {
        pointwise::dense1(elems::<A>(x, a), elems_mut::<O>(o, out), f)
    });
    if dense.is_some() {
        return Ok(());
    }
    let ins = unalias(&[a], out)?;
    with_buffers(&[&ins[0]], &[out], |b, mut o| {
        pointwise::map1(
            src::<A>(b[0], &ins[0]),
            dst::<O>(o.pop().expect("one output"), out),
            f,
        )
    });
    Ok(())
}

/// Runs a pointwise loop over two inputs.
pub(crate) fn map2<A: BufferElement, B: BufferElement, O: BufferElement>(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    f: impl Fn(A, B) -> O + Sync,
) -> Result<()> {
    map2_slices(a, b, out, &|a: &[A], b: &[B], o: &mut [O]| {
        o.iter_mut()
            .zip(a.iter().zip(b))
            .for_each(|(o, (&x, &y))| *o = f(x, y))
    })
}

fn map2_slices<A: BufferElement, B: BufferElement, O: BufferElement>(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    f: pointwise::Slice2<'_, A, B, O>,
) -> Result<()> {
    let dense = with_dense([a, b], out, |[x, y], o| {
        pointwise::dense2(
            elems::<A>(x, a),
            elems::<B>(y, b),
            elems_mut::<O>(o, out),
            f,
        )
    });
    if dense.is_some() {
        return Ok(());
    }
    let ins = unalias(&[a, b], out)?;
    with_buffers(&[&ins[0], &ins[1]], &[out], |bufs, mut o| {
        pointwise::map2(
            src::<A>(bufs[0], &ins[0]),
            src::<B>(bufs[1], &ins[1]),
            dst::<O>(o.pop().expect("one output"), out),
            f,
        )
    });
    Ok(())
}

/// True when `a` is exactly the output (an in-place op's `self`): same storage, same layout.
#[inline]
pub(crate) fn is_output(a: &Tensor, out: &Tensor) -> bool {
    let (l, o) = (a.layout(), out.layout());
    a.shares_storage_with(out)
        && l.offset == o.offset
        && same_dims(&l.sizes, &o.sizes)
        && same_dims(&l.strides, &o.strides)
        && a.dtype() == out.dtype()
}

/// `map1` for ops whose result has the input's type: when the input is the output itself
/// (`x.exp_()`), updates in place instead of copying the input first.
pub(crate) fn map1_same<T: BufferElement>(
    a: &Tensor,
    out: &Tensor,
    f: impl Fn(T) -> T + Sync,
) -> Result<()> {
    map1_same_slices(
        a,
        out,
        &|a: &[T], o: &mut [T]| o.iter_mut().zip(a).for_each(|(o, &x)| *o = f(x)),
        &|o: &mut [T]| o.iter_mut().for_each(|o| *o = f(*o)),
    )
}

fn map1_same_slices<T: BufferElement>(
    a: &Tensor,
    out: &Tensor,
    f: pointwise::Slice1<'_, T, T>,
    assign: pointwise::Assign1<'_, T>,
) -> Result<()> {
    if !is_output(a, out) {
        return map1_slices(a, out, f);
    }
    let dense = with_dense([], out, |[], o| {
        pointwise::dense_assign1(elems_mut::<T>(o, out), assign)
    });
    if dense.is_some() {
        return Ok(());
    }
    with_buffers(&[], &[out], |_, mut o| {
        pointwise::map1_assign(dst::<T>(o.pop().expect("one output"), out), assign)
    });
    Ok(())
}

/// Elements a slice kernel sees at a time where they pass through a stack buffer: an
/// in-place op (the kernel reads and writes distinct slices) and a half type converted to
/// f32. Small enough for L1, large enough that the dynamic call and the vector loop's
/// remainder cost nothing.
const SLICE_BUF: usize = 512;

/// `map1_same` for an op whose YAML names a `vectorized:` CPU slice kernel in its own compute
/// type (f32, f64): `f` maps whole chunks, as the pointwise loops hand them over. In place
/// (`x.exp_()`) the kernel's in-place form `inplace` runs, or without one, `f` through a
/// stack buffer.
pub(crate) fn map1_slice<T: BufferElement>(
    a: &Tensor,
    out: &Tensor,
    f: pointwise::Slice1<'_, T, T>,
    inplace: Option<pointwise::Assign1<'_, T>>,
) -> Result<()> {
    let buffered = |o: &mut [T]| in_place_through_buffer(o, f);
    map1_same_slices(a, out, f, inplace.unwrap_or(&buffered))
}

/// `map1_same` for f16 and bf16 through an f32 slice kernel `f`: each chunk is widened to
/// f32, mapped and rounded back, as the scalar kernel computes them in f32 too.
pub(crate) fn map1_slice_f32<T: BufferElement<Compute = f32>>(
    a: &Tensor,
    out: &Tensor,
    f: pointwise::Slice1<'_, f32, f32>,
) -> Result<()> {
    let through_f32 = |a: &[T], o: &mut [T]| {
        let (mut x, mut y) = ([0f32; SLICE_BUF], [0f32; SLICE_BUF]);
        for (a, o) in a.chunks(SLICE_BUF).zip(o.chunks_mut(SLICE_BUF)) {
            let (x, y) = (&mut x[..a.len()], &mut y[..a.len()]);
            x.iter_mut().zip(a).for_each(|(x, v)| *x = v.up());
            f(x, y);
            o.iter_mut()
                .zip(y.iter())
                .for_each(|(o, &v)| *o = T::down(v));
        }
    };
    map1_same_slices(a, out, &through_f32, &|o: &mut [T]| {
        in_place_through_buffer(o, &through_f32)
    })
}

/// Runs a mapping slice kernel `f` (distinct input and output) in place over `o`, a
/// [`SLICE_BUF`] chunk at a time through a stack copy.
fn in_place_through_buffer<T: BufferElement>(o: &mut [T], f: pointwise::Slice1<'_, T, T>) {
    let mut buf = [T::default(); SLICE_BUF];
    for c in o.chunks_mut(SLICE_BUF) {
        let b = &mut buf[..c.len()];
        b.copy_from_slice(c);
        f(b, c);
    }
}

/// `map2` for ops whose result has the first input's type: when that input is the output
/// itself (`x.add_(&y)`), reads and writes it in one pass instead of copying it first.
pub(crate) fn map2_same<T: BufferElement, B: BufferElement>(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    f: impl Fn(T, B) -> T + Sync,
) -> Result<()> {
    map2_same_slices(
        a,
        b,
        out,
        &|a: &[T], b: &[B], o: &mut [T]| {
            o.iter_mut()
                .zip(a.iter().zip(b))
                .for_each(|(o, (&x, &y))| *o = f(x, y))
        },
        &|o: &mut [T], b: &[B]| o.iter_mut().zip(b).for_each(|(o, &y)| *o = f(*o, y)),
    )
}

fn map2_same_slices<T: BufferElement, B: BufferElement>(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    f: pointwise::Slice2<'_, T, B, T>,
    assign: pointwise::Assign2<'_, T, B>,
) -> Result<()> {
    if !is_output(a, out) {
        return map2_slices(a, b, out, f);
    }
    let dense = with_dense([b], out, |[y], o| {
        pointwise::dense1(elems::<B>(y, b), elems_mut::<T>(o, out), &|y, o| {
            assign(o, y)
        })
    });
    if dense.is_some() {
        return Ok(());
    }
    let ins = unalias(&[b], out)?;
    with_buffers(&[&ins[0]], &[out], |bufs, mut o| {
        pointwise::map2_assign(
            dst::<T>(o.pop().expect("one output"), out),
            src::<B>(bufs[0], &ins[0]),
            assign,
        )
    });
    Ok(())
}

/// Runs a pointwise loop over three inputs.
pub(crate) fn map3<A: BufferElement, B: BufferElement, C: BufferElement, O: BufferElement>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    out: &Tensor,
    f: impl Fn(A, B, C) -> O + Sync,
) -> Result<()> {
    map3_slices(a, b, c, out, &|a: &[A], b: &[B], c: &[C], o: &mut [O]| {
        o.iter_mut()
            .zip(a.iter().zip(b.iter().zip(c)))
            .for_each(|(o, (&x, (&y, &z)))| *o = f(x, y, z))
    })
}

fn map3_slices<A: BufferElement, B: BufferElement, C: BufferElement, O: BufferElement>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    out: &Tensor,
    f: pointwise::Slice3<'_, A, B, C, O>,
) -> Result<()> {
    let ins = unalias(&[a, b, c], out)?;
    with_buffers(&[&ins[0], &ins[1], &ins[2]], &[out], |bufs, mut o| {
        pointwise::map3(
            src::<A>(bufs[0], &ins[0]),
            src::<B>(bufs[1], &ins[1]),
            src::<C>(bufs[2], &ins[2]),
            dst::<O>(o.pop().expect("one output"), out),
            f,
        )
    });
    Ok(())
}

/// Locks inputs and fresh outputs and runs a structured kernel.
pub(crate) fn run<const N: usize>(
    inputs: &[Tensor],
    outs: &[Tensor; N],
    f: impl FnOnce(&[&CpuBuffer], OutBufs<'_>) -> KResult<()>,
) -> KResult<()> {
    let ins: Vec<&Tensor> = inputs.iter().collect();
    let os: Vec<&Tensor> = outs.iter().collect();
    with_buffers(&ins, &os, f)
}

/// How an in-place op must be recorded.
pub(crate) enum Inplace {
    /// No autograd recording (grad mode off, or nothing requires grad).
    Untracked,
    /// Record the op's node on `target`, whose history it rewrites.
    Record,
    /// `target` is a view of `base` and the op takes part in autograd: compute out of place,
    /// write the result through the view, and rewrite the base's history
    /// (see [`commit_view_inplace`]).
    ViewOf(Tensor),
}

/// Checks an in-place op on `target` may run and says how autograd must record it.
pub(crate) fn check_inplace(op: &str, target: &Tensor, others: &[&Tensor]) -> Result<Inplace> {
    let grad = autograd::is_grad_enabled()
        && (target.requires_grad() || others.iter().any(|t| t.requires_grad()));
    if !grad {
        return Ok(Inplace::Untracked);
    }
    if target.is_leaf() && target.requires_grad() {
        return Err(Error::Autograd(format!(
            "{op}: a leaf Variable that requires grad is being used in an in-place operation."
        )));
    }
    match target.view_base() {
        Some(base) if base.is_leaf() && base.requires_grad() => Err(Error::Autograd(format!(
            "{op}: a view of a leaf Variable that requires grad is being used in an in-place operation."
        ))),
        Some(base) => Ok(Inplace::ViewOf(base)),
        None => Ok(Inplace::Record),
    }
}

/// Finishes an in-place op on a view that takes part in autograd (PyTorch's CopySlices):
/// `result` (computed out of place, with history) is written through `view`; the base's
/// history becomes `as_strided_scatter(base, result)`, and the view's becomes a fresh
/// `as_strided` of the new base, so gradients flow to both the old base and the op's inputs.
pub(crate) fn commit_view_inplace(
    op: &str,
    view: &Tensor,
    base: &Tensor,
    result: &Tensor,
) -> Result<()> {
    if !base.is_contiguous() || base.storage_offset() != 0 {
        return Err(Error::Autograd(format!(
            "{op}: in-place operations on a view are only tracked by autograd when the viewed tensor is contiguous from the start of its storage"
        )));
    }
    check_writable(op, view, result)?;
    let l = view.layout();
    let (size, stride) = (
        crate::ops::backward::i64s(&l.sizes),
        crate::ops::backward::i64s(&l.strides),
    );
    let offset = Some(l.offset as i64);
    let new_base = crate::as_strided_scatter_with(base, result, &size, &stride, offset)?;
    view.copy_data_from(result)?;
    view.storage().bump_version();
    if let Some(f) = new_base.grad_fn() {
        base.set_grad_fn(f, 0);
    }
    let new_view = base.as_strided_with(&size, &stride, offset)?;
    if let Some(f) = new_view.grad_fn() {
        view.set_grad_fn(f, 0);
    }
    Ok(())
}

fn check_writable(op: &str, target: &Tensor, result: &Tensor) -> Result<()> {
    if target.shape() != result.shape() {
        return Err(Error::shape(
            op,
            format!(
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                target.shape(),
                result.shape()
            ),
        ));
    }
    if !promotion::can_cast(result.dtype(), target.dtype()) {
        return Err(Error::dtype(
            op,
            format!(
                "result type {} can't be cast to the desired output type {}",
                result.dtype().scalar_type_name(),
                target.dtype().scalar_type_name()
            ),
        ));
    }
    if target.layout().has_internal_overlap() {
        return Err(Error::value(
            op,
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

/// Makes `result` the new value of `target` (an in-place op's `self`) and bumps its version.
pub(crate) fn commit_inplace(op: &str, target: &Tensor, result: &Tensor) -> Result<()> {
    if !result.is_same(target) {
        check_writable(op, target, result)?;
        target.copy_data_from(result)?;
    }
    target.storage().bump_version();
    Ok(())
}

/// Writes `result` into an `out=` tensor that must have the result's dtype exactly.
pub(crate) fn commit_out_same_dtype(
    op: &str,
    message: &str,
    out: &Tensor,
    result: &Tensor,
) -> Result<()> {
    if out.dtype() != result.dtype() {
        return Err(Error::dtype(op, message));
    }
    commit_out(op, out, result)
}

/// Writes `result` into an `out=` tensor.
pub(crate) fn commit_out(op: &str, out: &Tensor, result: &Tensor) -> Result<()> {
    if autograd::is_grad_enabled() && out.requires_grad() {
        return Err(Error::autograd(
            op,
            "functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.",
        ));
    }
    check_writable(op, out, result)?;
    out.copy_data_from(result)?;
    out.storage().bump_version();
    Ok(())
}

/// PyTorch's error for a dtype a backend's kernel does not cover.
pub(crate) fn not_implemented(op: &str, dtype: DType) -> Error {
    Error::dtype(
        op,
        format!(
            "\"{op}\" not implemented for '{}'",
            dtype.scalar_type_name()
        ),
    )
}

/// PyTorch's "opmath" type, for composites declared `opmath: true`: f16/bf16 inputs are
/// computed in float32 and the float32 results rounded back once, instead of after every
/// inner op.
pub(crate) struct Opmath;

impl Opmath {
    /// The half dtype every floating input shares, if they share one: mixed inputs (f16 with
    /// f32) are left to the composite's own promotion, so the result dtype never changes.
    pub(crate) fn common_half(inputs: &[&Tensor]) -> Option<DType> {
        let mut floats = inputs
            .iter()
            .map(|t| t.dtype())
            .filter(|d| d.is_floating_point());
        let first = floats.next()?;
        (matches!(first, DType::F16 | DType::BF16) && floats.all(|d| d == first)).then_some(first)
    }

    /// `t` in float32 when it is half, else itself.
    pub(crate) fn widen(t: &Tensor) -> Result<Tensor> {
        match t.dtype() {
            DType::F16 | DType::BF16 => t.to_dtype(DType::F32),
            _ => Ok(t.clone()),
        }
    }

    /// The float32 outputs of `r` rounded to `half`.
    pub(crate) fn narrow<R: Narrow>(r: R, half: DType) -> Result<R> {
        r.narrow_to(half)
    }
}

/// Op results whose float32 tensors [`Opmath`] rounds back to a half dtype.
pub(crate) trait Narrow: Sized {
    fn narrow_to(self, half: DType) -> Result<Self>;
}

impl Narrow for Tensor {
    fn narrow_to(self, half: DType) -> Result<Tensor> {
        if self.dtype() == DType::F32 {
            self.to_dtype(half)
        } else {
            Ok(self)
        }
    }
}

impl Narrow for (Tensor, Tensor) {
    fn narrow_to(self, half: DType) -> Result<Self> {
        Ok((self.0.narrow_to(half)?, self.1.narrow_to(half)?))
    }
}

impl Narrow for Vec<Tensor> {
    fn narrow_to(self, half: DType) -> Result<Self> {
        self.into_iter().map(|t| t.narrow_to(half)).collect()
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
