//! The CPU loops generated kernels run in: the pointwise `map*` loops and structured `run`.

use super::operands::{same_dims, unalias};
use crate::dispatch::{dst, elems, elems_mut, src, with_buffers, with_dense, OutBufs};
use crate::tensor::{BufferElement, CpuBuffer};
use crate::{Result, Tensor};
use kiln_kernels::{cpu::pointwise, KResult};

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
