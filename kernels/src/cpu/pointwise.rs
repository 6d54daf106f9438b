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
use crate::{Dst, Element, Layout, Src};

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

/// How an elementwise loop walks its operands.
enum Walk<const N: usize> {
    /// Every operand, walked in one memory order, is a single dense run: element `i` (in that
    /// order) of operand `k` is `data[offsets[k] + i]`. True for contiguous operands and for
    /// operands permuted alike (`x.t() + y.t()` into a result that follows their order),
    /// which then take the contiguous path.
    Dense([usize; N]),
    /// Otherwise: the layouts with their dims in the order that walks memory most
    /// sequentially (the output's order first; see [`Layout::iteration_order`]). An
    /// elementwise loop may visit elements in any order.
    Strided([Layout; N]),
}

fn walk<const N: usize>(layouts: [&Layout; N]) -> Walk<N> {
    let offsets = std::array::from_fn(|k| layouts[k].offset);
    if layouts.iter().all(|l| l.is_contiguous()) {
        return Walk::Dense(offsets);
    }
    let order = Layout::iteration_order(&layouts);
    let ordered = layouts.map(|l| l.reordered(&order));
    let refs: [&Layout; N] = std::array::from_fn(|k| &ordered[k]);
    let (sizes, strides) = Layout::coalesce(&refs);
    if sizes.len() <= 1 && strides.iter().all(|s| s.iter().all(|&x| x == 1)) {
        Walk::Dense(offsets)
    } else {
        Walk::Strided(ordered)
    }
}

/// `out[i] = f(a[i])`.
pub fn map1<A: Element, O: Element>(a: Src<A>, out: Dst<O>, f: Slice1<'_, A, O>) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let [lo, la] = match walk([out.layout, a.layout]) {
        Walk::Dense([oo, ao]) => {
            let (o, a) = (&mut out.data[oo..oo + n], &a.data[ao..ao + n]);
            if fan_out(n >= PARALLEL_MIN) {
                par_chunks_mut(o, CHUNK, &|i, o| f(&a[i * CHUNK..][..o.len()], o));
            } else {
                f(a, o);
            }
            return;
        }
        Walk::Strided(layouts) => layouts,
    };
    let od = &mut *out.data;
    let (mut ab, mut ob) = (Vec::with_capacity(BLOCK), [O::default(); BLOCK]);
    for_each_run([&lo, &la], |[oo, ao], len, [os, as_]| {
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
    out: Dst<O>,
    f: Slice2<'_, A, B, O>,
) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let [lo, la, lb] = match walk([out.layout, a.layout, b.layout]) {
        Walk::Dense([oo, ao, bo]) => {
            let o = &mut out.data[oo..oo + n];
            let (a, b) = (&a.data[ao..ao + n], &b.data[bo..bo + n]);
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
        Walk::Strided(layouts) => layouts,
    };
    let od = &mut *out.data;
    let (mut ab, mut bb) = (Vec::with_capacity(BLOCK), Vec::with_capacity(BLOCK));
    let mut ob = [O::default(); BLOCK];
    for_each_run([&lo, &la, &lb], |[oo, ao, bo], len, [os, as_, bs]| {
        blocks(len, |s, l| {
            let a = run(&mut ab, a.data, ao + s * as_, as_, l);
            let b = run(&mut bb, b.data, bo + s * bs, bs, l);
            write_run(od, &mut ob, oo + s * os, os, l, |o| f(a, b, o));
        });
    });
}

/// `out[i] = f(a[i], b[i], c[i])`.
pub fn map3<A: Element, B: Element, C: Element, O: Element>(
    a: Src<A>,
    b: Src<B>,
    c: Src<C>,
    out: Dst<O>,
    f: Slice3<'_, A, B, C, O>,
) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let [lo, la, lb, lc] = match walk([out.layout, a.layout, b.layout, c.layout]) {
        Walk::Dense([oo, ao, bo, co]) => {
            let o = &mut out.data[oo..oo + n];
            f(
                &a.data[ao..ao + n],
                &b.data[bo..bo + n],
                &c.data[co..co + n],
                o,
            );
            return;
        }
        Walk::Strided(layouts) => layouts,
    };
    let od = &mut *out.data;
    let (mut ab, mut bb, mut cb) = (
        Vec::with_capacity(BLOCK),
        Vec::with_capacity(BLOCK),
        Vec::with_capacity(BLOCK),
    );
    let mut ob = [O::default(); BLOCK];
    for_each_run(
        [&lo, &la, &lb, &lc],
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
pub fn fill<O: Element>(out: Dst<O>, v: O) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let [lo] = match walk([out.layout]) {
        Walk::Dense([oo]) => {
            out.data[oo..oo + n].fill(v);
            return;
        }
        Walk::Strided(layouts) => layouts,
    };
    let od = &mut *out.data;
    for_each_run([&lo], |[oo], len, [os]| {
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
pub fn map1_assign<O: Element>(out: Dst<O>, f: Assign1<'_, O>) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let [lo] = match walk([out.layout]) {
        Walk::Dense([oo]) => {
            let o = &mut out.data[oo..oo + n];
            if fan_out(n >= PARALLEL_MIN) {
                par_chunks_mut(o, CHUNK, &|_, o| f(o));
            } else {
                f(o);
            }
            return;
        }
        Walk::Strided(layouts) => layouts,
    };
    let od = &mut *out.data;
    let mut ob = Vec::with_capacity(BLOCK);
    for_each_run([&lo], |[oo], len, [os]| {
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
pub fn map2_assign<O: Element, B: Element>(out: Dst<O>, b: Src<B>, f: Assign2<'_, O, B>) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let [lo, lb] = match walk([out.layout, b.layout]) {
        Walk::Dense([oo, bo]) => {
            let (o, b) = (&mut out.data[oo..oo + n], &b.data[bo..bo + n]);
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
        Walk::Strided(layouts) => layouts,
    };
    let od = &mut *out.data;
    let (mut ob, mut bb) = (Vec::with_capacity(BLOCK), Vec::with_capacity(BLOCK));
    for_each_run([&lo, &lb], |[oo, bo], len, [os, bs]| {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Row-major multi-indices of `sizes`.
    fn indices(sizes: &[usize]) -> Vec<Vec<usize>> {
        let mut all = vec![vec![]];
        for &s in sizes {
            all = all
                .into_iter()
                .flat_map(|p| {
                    (0..s).map(move |i| {
                        let mut q = p.clone();
                        q.push(i);
                        q
                    })
                })
                .collect();
        }
        all
    }

    fn at(l: &Layout, idx: &[usize]) -> usize {
        l.offset
            + idx
                .iter()
                .zip(&l.strides)
                .map(|(i, s)| i * s)
                .sum::<usize>()
    }

    /// Operand layouts of logical shape `[r, c]` over a storage of `len` elements: row-major,
    /// transposed, a broadcast row, every other column of a wider matrix, and a result
    /// laid out column-major (what a transposed pair now produces).
    fn layouts(r: usize, c: usize) -> Vec<(&'static str, Layout, usize)> {
        vec![
            ("contiguous", Layout::contiguous(&[r, c]), r * c),
            (
                "transposed",
                Layout::contiguous(&[c, r]).transpose(0, 1).unwrap(),
                r * c,
            ),
            (
                "broadcast row",
                Layout::contiguous(&[1, c])
                    .expand(&[r as i64, c as i64])
                    .unwrap(),
                c,
            ),
            (
                "step 2",
                Layout::contiguous(&[r, 2 * c])
                    .slice(1, Some(1), None, 2)
                    .unwrap(),
                2 * r * c,
            ),
            (
                "column-major",
                Layout::dense_in_order(&[r, c], &[1, 0]),
                r * c,
            ),
        ]
    }

    #[test]
    fn map2_and_in_place_forms_match_an_elementwise_reference_on_every_layout() {
        // Small (serial) and large (split over threads) shapes.
        for (r, c) in [(7, 9), (300, 200)] {
            let ls = layouts(r, c);
            let dense_outs = [&ls[0], &ls[1], &ls[4]];
            for (an, la, alen) in &ls {
                let a: Vec<f64> = (0..*alen).map(|v| v as f64 * 0.5).collect();
                for (bn, lb, blen) in &ls {
                    let b: Vec<f64> = (0..*blen).map(|v| 1000.0 - v as f64).collect();
                    for (on, lo, olen) in dense_outs {
                        let mut o = vec![f64::NAN; *olen];
                        let f = |a: &[f64], b: &[f64], o: &mut [f64]| {
                            o.iter_mut()
                                .zip(a.iter().zip(b))
                                .for_each(|(o, (&a, &b))| *o = 2.0 * a + b)
                        };
                        map2(Src::new(&a, la), Src::new(&b, lb), Dst::new(&mut o, lo), &f);
                        for idx in indices(&[r, c]) {
                            let want = 2.0 * a[at(la, &idx)] + b[at(lb, &idx)];
                            assert_eq!(o[at(lo, &idx)], want, "{an} + {bn} -> {on} at {idx:?}");
                        }
                        // In place: o = o - b.
                        let before = o.clone();
                        let g = |o: &mut [f64], b: &[f64]| {
                            o.iter_mut().zip(b).for_each(|(o, &b)| *o -= b)
                        };
                        map2_assign(Dst::new(&mut o, lo), Src::new(&b, lb), &g);
                        for idx in indices(&[r, c]) {
                            let (p, q) = (at(lo, &idx), at(lb, &idx));
                            assert_eq!(o[p], before[p] - b[q], "{on} -= {bn} at {idx:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn map1_fill_and_assign_cover_strided_outputs() {
        let (r, c) = (5, 6);
        for (on, lo, olen) in layouts(r, c).iter().filter(|l| l.0 != "broadcast row") {
            let a: Vec<f32> = (0..r * c).map(|v| v as f32).collect();
            let la = Layout::contiguous(&[c, r]).transpose(0, 1).unwrap();
            let mut o = vec![-1.0f32; *olen];
            let neg = |a: &[f32], o: &mut [f32]| o.iter_mut().zip(a).for_each(|(o, &x)| *o = -x);
            map1(Src::new(&a, &la), Dst::new(&mut o, lo), &neg);
            for idx in indices(&[r, c]) {
                assert_eq!(o[at(lo, &idx)], -a[at(&la, &idx)], "{on} at {idx:?}");
            }
            map1_assign(Dst::new(&mut o, lo), &|o: &mut [f32]| {
                o.iter_mut().for_each(|x| *x *= 3.0)
            });
            for idx in indices(&[r, c]) {
                assert_eq!(o[at(lo, &idx)], -3.0 * a[at(&la, &idx)], "{on} at {idx:?}");
            }
            fill(Dst::new(&mut o, lo), 9.0);
            for idx in indices(&[r, c]) {
                assert_eq!(o[at(lo, &idx)], 9.0, "{on} at {idx:?}");
            }
            // Elements outside a strided output are never written.
            if *on == "step 2" {
                assert!(o.iter().step_by(2).all(|&x| x == -1.0));
            }
        }
    }
}
