//! The loops behind every pointwise op: `map1`, `map2`, `map3`, `fill`.
//!
//! Inputs arrive already broadcast to the output's shape (stride-0 dims). When every operand is
//! contiguous the loop is a zip over plain slices — no index arithmetic, so it vectorises — and
//! splits across rayon's pool above [`PARALLEL_MIN`] elements. Otherwise the strided walker
//! runs the innermost dim as a strided run.

use crate::cpu::strided::for_each_run;
use crate::parallel::{fan_out, install};
use crate::{Dst, Element, Src};
use rayon::prelude::*;

/// Below this many elements a loop stays on the calling thread.
pub const PARALLEL_MIN: usize = 1 << 15;
const CHUNK: usize = 1 << 13;

/// `out[i] = f(a[i])`.
pub fn map1<A: Element, O: Element>(a: Src<A>, mut out: Dst<O>, f: impl Fn(A) -> O + Sync) {
    let n = out.layout.numel();
    if let (Some(a), Some(o)) = (a.as_contiguous(), out.as_contiguous_mut()) {
        if fan_out(n >= PARALLEL_MIN) {
            install(|| {
                o.par_chunks_mut(CHUNK)
                    .zip(a.par_chunks(CHUNK))
                    .for_each(|(o, a)| {
                        o.iter_mut().zip(a).for_each(|(o, &a)| *o = f(a));
                    });
            })
        } else {
            o.iter_mut().zip(a).for_each(|(o, &a)| *o = f(a));
        }
        return;
    }
    let od = &mut *out.data;
    for_each_run([out.layout, a.layout], |[oo, ao], len, [os, as_]| {
        for i in 0..len {
            od[oo + i * os] = f(a.data[ao + i * as_]);
        }
    });
}

/// `out[i] = f(a[i], b[i])`.
pub fn map2<A: Element, B: Element, O: Element>(
    a: Src<A>,
    b: Src<B>,
    mut out: Dst<O>,
    f: impl Fn(A, B) -> O + Sync,
) {
    let n = out.layout.numel();
    if let (Some(a), Some(b), Some(o)) = (
        a.as_contiguous(),
        b.as_contiguous(),
        out.as_contiguous_mut(),
    ) {
        if fan_out(n >= PARALLEL_MIN) {
            install(|| {
                o.par_chunks_mut(CHUNK)
                    .zip(a.par_chunks(CHUNK).zip(b.par_chunks(CHUNK)))
                    .for_each(|(o, (a, b))| {
                        o.iter_mut()
                            .zip(a.iter().zip(b))
                            .for_each(|(o, (&a, &b))| *o = f(a, b));
                    });
            })
        } else {
            o.iter_mut()
                .zip(a.iter().zip(b))
                .for_each(|(o, (&a, &b))| *o = f(a, b));
        }
        return;
    }
    // A scalar-like operand (all strides 0) is common: hoist its load out of the loop.
    let od = &mut *out.data;
    for_each_run(
        [out.layout, a.layout, b.layout],
        |[oo, ao, bo], len, [os, as_, bs]| {
            for i in 0..len {
                od[oo + i * os] = f(a.data[ao + i * as_], b.data[bo + i * bs]);
            }
        },
    );
}

/// `out[i] = f(a[i], b[i], c[i])`.
pub fn map3<A: Element, B: Element, C: Element, O: Element>(
    a: Src<A>,
    b: Src<B>,
    c: Src<C>,
    mut out: Dst<O>,
    f: impl Fn(A, B, C) -> O + Sync,
) {
    if let (Some(a), Some(b), Some(c), Some(o)) = (
        a.as_contiguous(),
        b.as_contiguous(),
        c.as_contiguous(),
        out.as_contiguous_mut(),
    ) {
        o.iter_mut()
            .zip(a.iter().zip(b.iter().zip(c)))
            .for_each(|(o, (&a, (&b, &c)))| *o = f(a, b, c));
        return;
    }
    let od = &mut *out.data;
    for_each_run(
        [out.layout, a.layout, b.layout, c.layout],
        |[oo, ao, bo, co], len, [os, as_, bs, cs]| {
            for i in 0..len {
                od[oo + i * os] = f(
                    a.data[ao + i * as_],
                    b.data[bo + i * bs],
                    c.data[co + i * cs],
                );
            }
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
    map1(a, out, |x| x.cast::<O>());
}

/// `out[i] = f(out[i])`: an in-place op whose first operand is the output itself.
pub fn map1_assign<O: Element>(mut out: Dst<O>, f: impl Fn(O) -> O + Sync) {
    let n = out.layout.numel();
    if let Some(o) = out.as_contiguous_mut() {
        if fan_out(n >= PARALLEL_MIN) {
            install(|| {
                o.par_chunks_mut(CHUNK)
                    .for_each(|o| o.iter_mut().for_each(|o| *o = f(*o)));
            })
        } else {
            o.iter_mut().for_each(|o| *o = f(*o));
        }
        return;
    }
    let od = &mut *out.data;
    for_each_run([out.layout], |[oo], len, [os]| {
        for i in 0..len {
            od[oo + i * os] = f(od[oo + i * os]);
        }
    });
}

/// `out[i] = f(out[i], b[i])`: an in-place binary op such as `x.add_(&y)`.
pub fn map2_assign<O: Element, B: Element>(
    mut out: Dst<O>,
    b: Src<B>,
    f: impl Fn(O, B) -> O + Sync,
) {
    let n = out.layout.numel();
    if let (Some(b), Some(o)) = (b.as_contiguous(), out.as_contiguous_mut()) {
        if fan_out(n >= PARALLEL_MIN) {
            install(|| {
                o.par_chunks_mut(CHUNK)
                    .zip(b.par_chunks(CHUNK))
                    .for_each(|(o, b)| {
                        o.iter_mut().zip(b).for_each(|(o, &b)| *o = f(*o, b));
                    });
            })
        } else {
            o.iter_mut().zip(b).for_each(|(o, &b)| *o = f(*o, b));
        }
        return;
    }
    let od = &mut *out.data;
    for_each_run([out.layout, b.layout], |[oo, bo], len, [os, bs]| {
        for i in 0..len {
            od[oo + i * os] = f(od[oo + i * os], b.data[bo + i * bs]);
        }
    });
}
