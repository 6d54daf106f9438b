//! The loops behind every pointwise op: `map1`, `map2`, `map3`, the in-place `map*_assign`,
//! `fill` and `copy_cast`.
//!
//! An op supplies a *slice function*: its scalar kernel applied over equal-length slices
//! (`|a, out| for (o, &x) in out.iter_mut().zip(a) { *o = exp(x) }`), as a `&dyn Fn`. The
//! loops here — contiguous or strided, serial or split across kiln's pool — are therefore
//! compiled once per element type, not once per op × element type, which is most of what
//! kiln's build used to spend its time on. The slice function stays a tight loop the
//! compiler vectorises; the dynamic call happens once per chunk, not per element.
//!
//! Inputs arrive already broadcast to the output's shape (stride-0 dims). Contiguous
//! operands are handed over in chunks of [`CHUNK`]; otherwise the innermost dim is walked in
//! runs of up to [`BLOCK`], each operand borrowed in place when its run is adjacent and
//! gathered into a small buffer (or, for the output, scattered back) when it is not.

use crate::cpu::strided::for_each_run;
use crate::parallel::{fan_out, par_chunks_mut};
use crate::{Dst, Element, Src};

/// Below this many elements a loop stays on the calling thread.
pub const PARALLEL_MIN: usize = 1 << 15;
const CHUNK: usize = 1 << 13;
/// Elements gathered per call of a slice function on the strided path.
const BLOCK: usize = 512;

/// `out = f(a)` over slices.
pub type Slice1<'f, A, O> = &'f (dyn Fn(&[A], &mut [O]) + Sync);
/// `out = f(a, b)` over slices.
pub type Slice2<'f, A, B, O> = &'f (dyn Fn(&[A], &[B], &mut [O]) + Sync);
/// `out = f(a, b, c)` over slices.
pub type Slice3<'f, A, B, C, O> = &'f (dyn Fn(&[A], &[B], &[C], &mut [O]) + Sync);
/// `out = f(out)` over slices.
pub type Assign1<'f, O> = &'f (dyn Fn(&mut [O]) + Sync);
/// `out = f(out, b)` over slices.
pub type Assign2<'f, O, B> = &'f (dyn Fn(&mut [O], &[B]) + Sync);

/// Copies `len` elements of `data` starting at `off`, `stride` apart, into `buf`.
fn gather<T: Element>(buf: &mut Vec<T>, data: &[T], off: usize, stride: usize, len: usize) {
    buf.clear();
    buf.extend((0..len).map(|i| data[off + i * stride]));
}

/// The `len` elements at `off`, `stride` apart: borrowed straight from `data` when they are
/// adjacent, else gathered into `buf`.
fn run<'a, T: Element>(
    buf: &'a mut Vec<T>,
    data: &'a [T],
    off: usize,
    stride: usize,
    len: usize,
) -> &'a [T] {
    if stride == 1 {
        &data[off..off + len]
    } else {
        gather(buf, data, off, stride, len);
        buf
    }
}

/// Calls `f` on the output run at `off` (`stride` apart): in place when it is adjacent, else
/// through `buf` and scattered back.
fn write_run<O: Element>(
    od: &mut [O],
    buf: &mut [O],
    off: usize,
    stride: usize,
    len: usize,
    f: impl FnOnce(&mut [O]),
) {
    if stride == 1 {
        f(&mut od[off..off + len]);
    } else {
        f(&mut buf[..len]);
        (0..len).for_each(|i| od[off + i * stride] = buf[i]);
    }
}

/// Runs `f(start, len)` over `0..n` in blocks of [`BLOCK`].
fn blocks(n: usize, mut f: impl FnMut(usize, usize)) {
    let mut s = 0;
    while s < n {
        let l = BLOCK.min(n - s);
        f(s, l);
        s += l;
    }
}

/// `out[i] = f(a[i])`.
pub fn map1<A: Element, O: Element>(a: Src<A>, mut out: Dst<O>, f: Slice1<'_, A, O>) {
    let n = out.layout.numel();
    if let (Some(a), Some(o)) = (a.as_contiguous(), out.as_contiguous_mut()) {
        if fan_out(n >= PARALLEL_MIN) {
            par_chunks_mut(o, CHUNK, &|i, o| f(&a[i * CHUNK..][..o.len()], o));
        } else {
            f(a, o);
        }
        return;
    }
    let od = &mut *out.data;
    let (mut ab, mut ob) = (Vec::with_capacity(BLOCK), [O::default(); BLOCK]);
    for_each_run([out.layout, a.layout], |[oo, ao], len, [os, as_]| {
        blocks(len, |s, l| {
            let a = run(&mut ab, a.data, ao + s * as_, as_, l);
            write_run(od, &mut ob, oo + s * os, os, l, |o| f(a, o));
        });
    });
}

/// `out[i] = f(a[i], b[i])`.
pub fn map2<A: Element, B: Element, O: Element>(
    a: Src<A>,
    b: Src<B>,
    mut out: Dst<O>,
    f: Slice2<'_, A, B, O>,
) {
    let n = out.layout.numel();
    if let (Some(a), Some(b), Some(o)) = (
        a.as_contiguous(),
        b.as_contiguous(),
        out.as_contiguous_mut(),
    ) {
        if fan_out(n >= PARALLEL_MIN) {
            par_chunks_mut(o, CHUNK, &|i, o| {
                let r = i * CHUNK..i * CHUNK + o.len();
                f(&a[r.clone()], &b[r], o)
            });
        } else {
            f(a, b, o);
        }
        return;
    }
    let od = &mut *out.data;
    let (mut ab, mut bb) = (Vec::with_capacity(BLOCK), Vec::with_capacity(BLOCK));
    let mut ob = [O::default(); BLOCK];
    for_each_run(
        [out.layout, a.layout, b.layout],
        |[oo, ao, bo], len, [os, as_, bs]| {
            blocks(len, |s, l| {
                let a = run(&mut ab, a.data, ao + s * as_, as_, l);
                let b = run(&mut bb, b.data, bo + s * bs, bs, l);
                write_run(od, &mut ob, oo + s * os, os, l, |o| f(a, b, o));
            });
        },
    );
}

/// `out[i] = f(a[i], b[i], c[i])`.
pub fn map3<A: Element, B: Element, C: Element, O: Element>(
    a: Src<A>,
    b: Src<B>,
    c: Src<C>,
    mut out: Dst<O>,
    f: Slice3<'_, A, B, C, O>,
) {
    if let (Some(a), Some(b), Some(c), Some(o)) = (
        a.as_contiguous(),
        b.as_contiguous(),
        c.as_contiguous(),
        out.as_contiguous_mut(),
    ) {
        f(a, b, c, o);
        return;
    }
    let od = &mut *out.data;
    let (mut ab, mut bb, mut cb) = (
        Vec::with_capacity(BLOCK),
        Vec::with_capacity(BLOCK),
        Vec::with_capacity(BLOCK),
    );
    let mut ob = [O::default(); BLOCK];
    for_each_run(
        [out.layout, a.layout, b.layout, c.layout],
        |[oo, ao, bo, co], len, [os, as_, bs, cs]| {
            blocks(len, |s, l| {
                let a = run(&mut ab, a.data, ao + s * as_, as_, l);
                let b = run(&mut bb, b.data, bo + s * bs, bs, l);
                let c = run(&mut cb, c.data, co + s * cs, cs, l);
                write_run(od, &mut ob, oo + s * os, os, l, |o| f(a, b, c, o));
            });
        },
    );
}

/// `out[i] = v`.
pub fn fill<O: Element>(mut out: Dst<O>, v: O) {
    if let Some(o) = out.as_contiguous_mut() {
        o.fill(v);
        return;
    }
    let od = &mut *out.data;
    for_each_run([out.layout], |[oo], len, [os]| {
        for i in 0..len {
            od[oo + i * os] = v;
        }
    });
}

/// `out[i] = a[i]` converted to `O` (a copy across layouts and dtypes).
pub fn copy_cast<A: Element, O: Element>(a: Src<A>, out: Dst<O>) {
    map1(a, out, &|a: &[A], o: &mut [O]| {
        o.iter_mut().zip(a).for_each(|(o, &x)| *o = x.cast::<O>())
    });
}

/// `out[i] = f(out[i])`: an in-place op whose first operand is the output itself.
pub fn map1_assign<O: Element>(mut out: Dst<O>, f: Assign1<'_, O>) {
    let n = out.layout.numel();
    if let Some(o) = out.as_contiguous_mut() {
        if fan_out(n >= PARALLEL_MIN) {
            par_chunks_mut(o, CHUNK, &|_, o| f(o));
        } else {
            f(o);
        }
        return;
    }
    let od = &mut *out.data;
    let mut ob = Vec::with_capacity(BLOCK);
    for_each_run([out.layout], |[oo], len, [os]| {
        blocks(len, |s, l| {
            if os == 1 {
                f(&mut od[oo + s..oo + s + l]);
            } else {
                gather(&mut ob, od, oo + s * os, os, l);
                f(&mut ob);
                (0..l).for_each(|i| od[oo + (s + i) * os] = ob[i]);
            }
        });
    });
}

/// `out[i] = f(out[i], b[i])`: an in-place binary op such as `x.add_(&y)`.
pub fn map2_assign<O: Element, B: Element>(mut out: Dst<O>, b: Src<B>, f: Assign2<'_, O, B>) {
    let n = out.layout.numel();
    if let (Some(b), Some(o)) = (b.as_contiguous(), out.as_contiguous_mut()) {
        if fan_out(n >= PARALLEL_MIN) {
            par_chunks_mut(o, CHUNK, &|i, o| {
                let b = &b[i * CHUNK..][..o.len()];
                f(o, b)
            });
        } else {
            f(o, b);
        }
        return;
    }
    let od = &mut *out.data;
    let (mut ob, mut bb) = (Vec::with_capacity(BLOCK), Vec::with_capacity(BLOCK));
    for_each_run([out.layout, b.layout], |[oo, bo], len, [os, bs]| {
        blocks(len, |s, l| {
            let b = run(&mut bb, b.data, bo + s * bs, bs, l);
            if os == 1 {
                f(&mut od[oo + s..oo + s + l], b);
            } else {
                gather(&mut ob, od, oo + s * os, os, l);
                f(&mut ob, b);
                (0..l).for_each(|i| od[oo + (s + i) * os] = ob[i]);
            }
        });
    });
}
