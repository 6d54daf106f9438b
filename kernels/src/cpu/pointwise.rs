//! The loops behind every pointwise op: `map1`, `map2`, `map3`, the in-place `map*_assign`,
//! `fill` and `copy_cast`.
//!
//! An op supplies a *slice function*: its scalar kernel applied over equal-length slices
//! (`|a, out| for (o, &x) in out.iter_mut().zip(a) { *o = exp(x) }`), as a `&dyn Fn`. The
//! loops here — contiguous or strided, serial or split across kiln's pool — are therefore
//! compiled once per element type, not once per op × element type, which is most of what
//! kiln's build used to spend its time on. The slice function stays a tight loop the
//! compiler vectorises; the dynamic call happens once per chunk or row, not per element.
//!
//! Inputs arrive already broadcast to the output's shape (stride-0 dims). Contiguous
//! operands are handed over in chunks of [`CHUNK`]. Otherwise the loop follows a
//! [`Plan`]: the dims in the output's memory order, merged where possible, walked in
//! [`Tile`]s. Each tile row is borrowed in place for an operand whose row is adjacent in
//! memory, gathered into a small buffer for one whose row is not (or, for the output,
//! computed there and scattered back) — and an operand read *across* its memory order (a
//! transposed input) is transposed a whole tile at a time, so each cache line it touches is
//! read once for all the tile's rows instead of once per element.
//!
//! Large strided loops are split over kiln's pool along the output's outermost dim: each task
//! gets the `&mut` slice of storage that holds its rows, so tasks provably write disjoint
//! memory without any raw pointers (when that dim's rows interleave in memory the loop stays
//! serial).

use crate::cpu::strided::{Plan, Tile, TileShape};
use crate::cpu::transpose::{transpose, transpose_with, Block};
use crate::element::same_type;
use crate::parallel::{fan_out, num_threads, par_chunks_mut};
use crate::{DType, Dst, Element, Layout, Src};

/// What the loops need of an element: plain data shared across threads (every [`Element`],
/// and the compute types kernels keep intermediate results in).
pub trait Plain: Copy + Send + Sync + 'static {}
impl<T: Copy + Send + Sync + 'static> Plain for T {}

/// Below this many elements a loop stays on the calling thread.
pub const PARALLEL_MIN: usize = 1 << 15;
/// Elements per parallel task (at least).
const CHUNK: usize = 1 << 13;
/// Elements per call of a slice function on a strided path that needs no tiles.
const BLOCK: usize = 512;
/// Tiles when an operand is read across its memory order (see [`Plan::tile_dim`]): the
/// transposed operand's tile is copied into a buffer, [`TILE_ACROSS_BYTES`] of each of its
/// memory rows (two cache lines, each read once), then handed to the slice function one
/// tile row of [`TILE_LEN`] elements at a time. Long tile rows keep the other operands'
/// reads and the output's writes long sequential runs. (Chosen by measurement on a 4096²
/// and a 1024² f32 `m + m.t()`.)
const TILE_ACROSS_BYTES: usize = 128;
const TILE_LEN: usize = 1024;
/// Tiles of a transposing copy, which moves elements straight from source to output: long
/// stretches of each source row ([`COPY_ACROSS_BYTES`]), which the hardware prefetches
/// well, by [`COPY_TILE_LEN`] elements of each output row. (Measured on a 4096² f32
/// `x.t().contiguous()`: 1 KiB × 64 ran in 9.7 ms on one thread where 128 B × 64 took 14.3.)
const COPY_ACROSS_BYTES: usize = 1024;
const COPY_TILE_LEN: usize = 64;

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

/// The loop over one piece of the output: its plan (the output's offset counted from the
/// piece's start) and the piece.
type Body<'f, O, const N: usize> = &'f (dyn Fn(&Plan<N>, &mut [O]) + Sync);

/// Replaces `buf`'s contents with the `len` elements of `data` at `off`, `stride` apart.
fn gather<T: Plain>(buf: &mut Vec<T>, data: &[T], off: usize, stride: usize, len: usize) {
    buf.clear();
    if stride == 0 {
        buf.resize(len, data[off]);
    } else {
        buf.extend(data[off..].iter().step_by(stride).take(len));
    }
    debug_assert_eq!(buf.len(), len, "a run reaches past its buffer");
}

/// Writes `vals` to the elements of `data` at `off`, `stride` apart.
fn scatter<T: Plain>(data: &mut [T], off: usize, stride: usize, vals: &[T]) {
    if stride == 0 {
        // Not produced by kiln (an output never overlaps itself); the last write wins.
        if let Some(&v) = vals.last() {
            data[off] = v;
        }
    } else {
        data[off..]
            .iter_mut()
            .step_by(stride)
            .zip(vals)
            .for_each(|(d, &v)| *d = v);
    }
}

/// Reads the `rows × len` block of `data` at `off` (`row_stride` between rows, `stride`
/// along a row) into `buf`, row `r` at `buf[r * buf_row(len)..][..len]` — one pass along
/// each of the `len` stretches that are close in memory (`row_stride < stride`), so each
/// cache line is read once.
fn transpose_in<T: Plain>(
    buf: &mut Vec<T>,
    data: &[T],
    off: usize,
    row_stride: usize,
    stride: usize,
    rows: usize,
    len: usize,
) {
    let step = buf_row(len);
    // Every element read back is written below: the buffer only ever grows.
    if buf.len() < rows * step {
        buf.resize(rows * step, data[off]);
    }
    if row_stride == 1 {
        let block = Block {
            rows,
            len,
            src: off,
            src_stride: stride,
            dst: 0,
            dst_stride: step,
        };
        transpose(data, buf, block);
        return;
    }
    for i in 0..len {
        let col = data[off + i * stride..].iter().step_by(row_stride);
        for (dst, &x) in buf[..rows * step].chunks_exact_mut(step).zip(col) {
            dst[i] = x;
        }
    }
}

/// The distance between rows of a transposed tile in its buffer: the row length rounded up
/// to 16 elements plus 16 more, so rows start on different cache sets rather than all on
/// one when the length is a power of two (which would evict each row's lines from the L1
/// cache while the next rows are written).
fn buf_row(len: usize) -> usize {
    len.next_multiple_of(16) + 16
}

/// How an input's rows are found within the current tile.
#[derive(Clone, Copy)]
enum Fetch {
    /// Adjacent in memory: borrowed from the storage.
    InPlace,
    /// Read across: the whole tile was transposed into the buffer.
    Transposed,
    /// Neither: each row is gathered into the buffer when asked for.
    Gathered,
}

/// One input operand of a strided loop: its storage and a buffer for rows that are not
/// adjacent in it.
struct Rows<'a, T> {
    data: &'a [T],
    buf: Vec<T>,
    fetch: Fetch,
}

impl<'a, T: Plain> Rows<'a, T> {
    fn new(data: &'a [T]) -> Self {
        Rows {
            data,
            buf: Vec::new(),
            fetch: Fetch::InPlace,
        }
    }

    /// Prepares tile `t` for operand `k`.
    fn load<const N: usize>(&mut self, t: &Tile<N>, k: usize) {
        let (rs, s) = (t.row_strides[k], t.strides[k]);
        self.fetch = if s == 1 {
            Fetch::InPlace
        } else if t.rows > 1 && rs != 0 && rs < s {
            transpose_in(&mut self.buf, self.data, t.offsets[k], rs, s, t.rows, t.len);
            Fetch::Transposed
        } else {
            Fetch::Gathered
        };
    }

    /// Row `r` of the tile last loaded for operand `k`.
    fn row<const N: usize>(&mut self, t: &Tile<N>, k: usize, r: usize) -> &[T] {
        let off = t.offsets[k] + r * t.row_strides[k];
        match self.fetch {
            Fetch::InPlace => &self.data[off..off + t.len],
            Fetch::Transposed => &self.buf[r * buf_row(t.len)..][..t.len],
            Fetch::Gathered => {
                gather(&mut self.buf, self.data, off, t.strides[k], t.len);
                &self.buf
            }
        }
    }
}

/// Calls `f` on row `r` of the output tile `t` (operand 0): in place when adjacent, else
/// through `buf` — filled from the output first when `load` (an in-place op reads it) — and
/// scattered back.
fn with_out_row<O: Plain, const N: usize>(
    od: &mut [O],
    buf: &mut Vec<O>,
    t: &Tile<N>,
    r: usize,
    load: bool,
    f: impl FnOnce(&mut [O]),
) {
    let (off, s) = (t.offsets[0] + r * t.row_strides[0], t.strides[0]);
    if s == 1 {
        f(&mut od[off..off + t.len]);
        return;
    }
    if load {
        gather(buf, od, off, s, t.len);
    } else {
        buf.clear();
        buf.resize(t.len, od[off]);
    }
    f(buf);
    scatter(od, off, s, buf);
}

/// Tile sizes for a loop that hands rows to a slice function, over operands of these
/// element sizes (bytes): [`TILE_ACROSS_BYTES`] of a transposed operand per tile row
/// and [`TILE_LEN`] elements per row.
fn tile_shape(elem_sizes: &[usize]) -> TileShape {
    let widest = elem_sizes.iter().copied().max().unwrap_or(1).max(1);
    TileShape {
        rows: (TILE_ACROSS_BYTES / widest).max(4),
        len: TILE_LEN,
        run: BLOCK,
    }
}

/// Tile sizes for a transposing copy of `elem_size`-byte elements: see [`COPY_ACROSS_BYTES`].
fn copy_tile_shape(elem_size: usize) -> TileShape {
    TileShape {
        rows: (COPY_ACROSS_BYTES / elem_size.max(1)).max(4),
        len: COPY_TILE_LEN,
        run: BLOCK,
    }
}

/// Runs `body` over `plan`, split over kiln's pool when the loop is large: along the
/// output's outermost dim, each task getting the `&mut` piece of `od` that holds its rows.
/// Pieces of a tiled dim 0 hold whole tiles of `shape`.
fn split<O: Plain, const N: usize>(
    plan: &Plan<N>,
    od: &mut [O],
    shape: TileShape,
    body: Body<'_, O, N>,
) {
    let nd = plan.sizes.len();
    if nd == 0 || !fan_out(plan.numel() >= PARALLEL_MIN) {
        return body(plan, od);
    }
    let (size0, s0) = (plan.sizes[0], plan.strides[0][0]);
    // The pieces are consecutive stretches of `s0 * rows` storage elements. They hold their
    // rows' elements only when everything below dim 0 lies within `s0` of a row's start;
    // otherwise rows interleave (an unusual strided output) and the loop stays serial.
    let below: usize = (1..nd)
        .map(|d| (plan.sizes[d] - 1) * plan.strides[0][d])
        .sum();
    if below >= s0 {
        return body(plan, od);
    }
    let start = plan.offsets[0];
    // Covers every row: the last one ends within `s0` of its start and inside `od`.
    let end = (start + size0 * s0).min(od.len());
    let region = &mut od[start..end];
    let tiled0 = plan.tile_dim() == Some(0);
    if size0 < 4 && nd > 1 && !tiled0 {
        // Too few rows to share out: one task per row, each split again along its own dims.
        par_chunks_mut(region, s0, &|i, piece| {
            split(&plan.row(i), piece, shape, body)
        });
        return;
    }
    let row_len = plan.numel() / size0;
    let mut per = CHUNK.div_ceil(row_len);
    if tiled0 {
        // Whole tiles.
        per = per.next_multiple_of(shape.rows);
    }
    // At least two pieces per thread, so an uneven split still keeps every thread busy.
    let per = per.min(size0 / (2 * num_threads())).max(1);
    par_chunks_mut(region, per * s0, &|i, piece| {
        let first = i * per;
        body(&plan.rows(first, per.min(size0 - first)), piece)
    });
}

/// How an elementwise loop walks its operands.
enum Walk<const N: usize> {
    /// Every operand, walked in one memory order, is a single dense run: element `i` (in that
    /// order) of operand `k` is `data[offsets[k] + i]`. True for contiguous operands and for
    /// operands permuted alike (`x.t() + y.t()` into a result that follows their order),
    /// which then take the contiguous path.
    Dense([usize; N]),
    /// Otherwise: the walk's plan. An elementwise loop may visit elements in any order.
    Strided(Plan<N>),
}

fn walk<const N: usize>(layouts: [&Layout; N]) -> Walk<N> {
    if layouts.iter().all(|l| l.is_contiguous()) {
        return Walk::Dense(layouts.map(|l| l.offset));
    }
    let plan = Plan::new(layouts);
    if plan.is_dense() {
        Walk::Dense(plan.offsets)
    } else {
        Walk::Strided(plan)
    }
}

/// The dense case of [`map1`] and [`copy_with`]: `f` over the whole run, in [`CHUNK`]s
/// across kiln's pool when it is large.
pub fn dense1<A: Sync, O: Send>(a: &[A], o: &mut [O], f: Slice1<'_, A, O>) {
    if fan_out(o.len() >= PARALLEL_MIN) {
        par_chunks_mut(o, CHUNK, &|i, o| f(&a[i * CHUNK..][..o.len()], o));
    } else {
        f(a, o);
    }
}

/// The dense case of [`map2`], as [`dense1`].
pub fn dense2<A: Sync, B: Sync, O: Send>(a: &[A], b: &[B], o: &mut [O], f: Slice2<'_, A, B, O>) {
    if fan_out(o.len() >= PARALLEL_MIN) {
        par_chunks_mut(o, CHUNK, &|i, o| {
            let r = i * CHUNK..i * CHUNK + o.len();
            f(&a[r.clone()], &b[r], o)
        });
    } else {
        f(a, b, o);
    }
}

/// `out[i] = f(a[i])`.
pub fn map1<A: Element, O: Element>(a: Src<A>, out: Dst<O>, f: Slice1<'_, A, O>) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let plan = match walk([out.layout, a.layout]) {
        Walk::Dense([oo, ao]) => {
            dense1(&a.data[ao..ao + n], &mut out.data[oo..oo + n], f);
            return;
        }
        Walk::Strided(plan) => plan,
    };
    let shape = tile_shape(&[size_of::<A>()]);
    split(&plan, out.data, shape, &|plan, od| {
        let (mut ra, mut ob) = (Rows::new(a.data), Vec::new());
        plan.for_each_tile(shape, |t| {
            ra.load(t, 1);
            for r in 0..t.rows {
                let x = ra.row(t, 1, r);
                with_out_row(od, &mut ob, t, r, false, |o| f(x, o));
            }
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
    let plan = match walk([out.layout, a.layout, b.layout]) {
        Walk::Dense([oo, ao, bo]) => {
            let o = &mut out.data[oo..oo + n];
            return dense2(&a.data[ao..ao + n], &b.data[bo..bo + n], o, f);
        }
        Walk::Strided(plan) => plan,
    };
    let shape = tile_shape(&[size_of::<A>(), size_of::<B>()]);
    split(&plan, out.data, shape, &|plan, od| {
        let (mut ra, mut rb, mut ob) = (Rows::new(a.data), Rows::new(b.data), Vec::new());
        plan.for_each_tile(shape, |t| {
            ra.load(t, 1);
            rb.load(t, 2);
            for r in 0..t.rows {
                let (x, y) = (ra.row(t, 1, r), rb.row(t, 2, r));
                with_out_row(od, &mut ob, t, r, false, |o| f(x, y, o));
            }
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
    let plan = match walk([out.layout, a.layout, b.layout, c.layout]) {
        Walk::Dense([oo, ao, bo, co]) => {
            let o = &mut out.data[oo..oo + n];
            let (a, b, c) = (
                &a.data[ao..ao + n],
                &b.data[bo..bo + n],
                &c.data[co..co + n],
            );
            if fan_out(n >= PARALLEL_MIN) {
                par_chunks_mut(o, CHUNK, &|i, o| {
                    let r = i * CHUNK..i * CHUNK + o.len();
                    f(&a[r.clone()], &b[r.clone()], &c[r], o)
                });
            } else {
                f(a, b, c, o);
            }
            return;
        }
        Walk::Strided(plan) => plan,
    };
    let shape = tile_shape(&[size_of::<A>(), size_of::<B>(), size_of::<C>()]);
    split(&plan, out.data, shape, &|plan, od| {
        let (mut ra, mut rb, mut rc) = (Rows::new(a.data), Rows::new(b.data), Rows::new(c.data));
        let mut ob = Vec::new();
        plan.for_each_tile(shape, |t| {
            ra.load(t, 1);
            rb.load(t, 2);
            rc.load(t, 3);
            for r in 0..t.rows {
                let (x, y, z) = (ra.row(t, 1, r), rb.row(t, 2, r), rc.row(t, 3, r));
                with_out_row(od, &mut ob, t, r, false, |o| f(x, y, z, o));
            }
        });
    });
}

/// `out[i] = v`.
pub fn fill<O: Element>(out: Dst<O>, v: O) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let plan = match walk([out.layout]) {
        Walk::Dense([oo]) => {
            let o = &mut out.data[oo..oo + n];
            if fan_out(n >= PARALLEL_MIN) {
                par_chunks_mut(o, CHUNK, &|_, o| o.fill(v));
            } else {
                o.fill(v);
            }
            return;
        }
        Walk::Strided(plan) => plan,
    };
    let shape = tile_shape(&[size_of::<O>()]);
    split(&plan, out.data, shape, &|plan, od| {
        plan.for_each_tile(shape, |t| {
            for r in 0..t.rows {
                let (off, s) = (t.offsets[0] + r * t.row_strides[0], t.strides[0]);
                if s == 0 {
                    od[off] = v;
                } else {
                    od[off..]
                        .iter_mut()
                        .step_by(s)
                        .take(t.len)
                        .for_each(|o| *o = v);
                }
            }
        });
    });
}

/// `o` as a slice of `A` when `O` is `A`.
fn same_type_mut<A: 'static, O: 'static>(o: &mut [O]) -> Option<&mut [A]> {
    if std::any::TypeId::of::<A>() != std::any::TypeId::of::<O>() {
        return None;
    }
    // SAFETY: `A` and `O` are the same type, so this is the same slice.
    Some(unsafe { std::slice::from_raw_parts_mut(o.as_mut_ptr().cast::<A>(), o.len()) })
}

/// `out[i] = conv(a[i])` across layouts: the loop behind [`copy`] and [`copy_cast`]. A
/// transposed copy (`x.t().contiguous()`) moves each tile straight from the source to the
/// output — through SIMD registers when `O` is `A`, where `conv` must be the identity.
fn copy_with<A: Plain, O: Plain>(a: Src<A>, out: Dst<O>, conv: impl Fn(A) -> O + Copy + Sync) {
    copy_with_slices(a, out, conv, |a, o| {
        o.iter_mut().zip(a).for_each(|(o, &x)| *o = conv(x))
    })
}

/// [`copy_with`], with `f` converting whole runs of contiguous elements (as `conv` would).
fn copy_with_slices<A: Plain, O: Plain>(
    a: Src<A>,
    out: Dst<O>,
    conv: impl Fn(A) -> O + Copy + Sync,
    f: impl Fn(&[A], &mut [O]) + Sync,
) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let plan = match walk([out.layout, a.layout]) {
        Walk::Dense([oo, ao]) => {
            dense1(&a.data[ao..ao + n], &mut out.data[oo..oo + n], &f);
            return;
        }
        Walk::Strided(plan) => plan,
    };
    let shape = copy_tile_shape(size_of::<A>());
    split(&plan, out.data, shape, &|plan, od| {
        let (mut ra, mut ob) = (Rows::new(a.data), Vec::new());
        plan.for_each_tile(shape, |t| {
            if t.rows > 1 && t.row_strides[1] == 1 && t.strides[1] > 1 && t.strides[0] == 1 {
                let block = Block {
                    rows: t.rows,
                    len: t.len,
                    src: t.offsets[1],
                    src_stride: t.strides[1],
                    dst: t.offsets[0],
                    dst_stride: t.row_strides[0],
                };
                match same_type_mut::<A, O>(od) {
                    Some(od) => transpose(a.data, od, block),
                    None => transpose_with(a.data, od, block, conv),
                }
                return;
            }
            ra.load(t, 1);
            for r in 0..t.rows {
                let x = ra.row(t, 1, r);
                with_out_row(od, &mut ob, t, r, false, |o| f(x, o));
            }
        });
    });
}

/// `out[i] = a[i]`: a copy across layouts (`contiguous()`, `clone`), of any plain element
/// type.
pub fn copy<T: Plain>(a: Src<T>, out: Dst<T>) {
    copy_with(a, out, |x| x);
}

/// `out[i] = a[i]` converted to `O` (a copy across layouts and dtypes; a plain [`copy`] when
/// the dtypes match).
pub fn copy_cast<A: Element, O: Element>(a: Src<A>, out: Dst<O>) {
    let layout = out.layout;
    match same_type_mut::<A, O>(out.data) {
        Some(data) => copy(a, Dst { data, layout }),
        // float32 ↔ bfloat16, the casts autocast makes most: vectorised conversions.
        None if A::DTYPE == DType::F32 && O::DTYPE == DType::BF16 => {
            copy_runs(a, out, crate::cpu::narrow::f32_to_bf16)
        }
        None if A::DTYPE == DType::BF16 && O::DTYPE == DType::F32 => {
            copy_runs(a, out, crate::cpu::narrow::bf16_to_f32)
        }
        // A mask to numbers (backward formulas multiply by them): two constants, not a
        // round trip through f64 per element.
        None if A::DTYPE == DType::Bool => {
            let (one, zero) = (O::from_i64(1), O::from_i64(0));
            copy_with(a, out, move |x: A| if x.to_i64() != 0 { one } else { zero })
        }
        None => copy_with(a, out, |x: A| x.cast::<O>()),
    }
}

/// [`copy_cast`] where `A` is `X` and `O` is `Y`: contiguous runs go through `f`.
fn copy_runs<A: Element, O: Element, X: 'static, Y: 'static>(
    a: Src<A>,
    out: Dst<O>,
    f: fn(&[X], &mut [Y]),
) {
    copy_with_slices(
        a,
        out,
        |x: A| x.cast::<O>(),
        move |a: &[A], o: &mut [O]| match (same_type::<A, X>(a), same_type_mut::<Y, O>(o)) {
            (Some(a), Some(o)) => f(a, o),
            _ => unreachable!("the caller matched the dtypes"),
        },
    )
}

/// The dense case of [`map1_assign`], as [`dense1`].
pub fn dense_assign1<O: Send>(o: &mut [O], f: Assign1<'_, O>) {
    if fan_out(o.len() >= PARALLEL_MIN) {
        par_chunks_mut(o, CHUNK, &|_, o| f(o));
    } else {
        f(o);
    }
}

/// `out[i] = f(out[i])`: an in-place op whose first operand is the output itself.
pub fn map1_assign<O: Element>(out: Dst<O>, f: Assign1<'_, O>) {
    let n = out.layout.numel();
    if n == 0 {
        return;
    }
    let plan = match walk([out.layout]) {
        Walk::Dense([oo]) => return dense_assign1(&mut out.data[oo..oo + n], f),
        Walk::Strided(plan) => plan,
    };
    let shape = tile_shape(&[size_of::<O>()]);
    split(&plan, out.data, shape, &|plan, od| {
        let mut ob = Vec::new();
        plan.for_each_tile(shape, |t| {
            for r in 0..t.rows {
                with_out_row(od, &mut ob, t, r, true, f);
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
    let plan = match walk([out.layout, b.layout]) {
        Walk::Dense([oo, bo]) => {
            let (o, b) = (&mut out.data[oo..oo + n], &b.data[bo..bo + n]);
            return dense1(b, o, &|b, o| f(o, b));
        }
        Walk::Strided(plan) => plan,
    };
    let shape = tile_shape(&[size_of::<O>(), size_of::<B>()]);
    split(&plan, out.data, shape, &|plan, od| {
        let (mut rb, mut ob) = (Rows::new(b.data), Vec::new());
        plan.for_each_tile(shape, |t| {
            rb.load(t, 1);
            for r in 0..t.rows {
                let y = rb.row(t, 1, r);
                with_out_row(od, &mut ob, t, r, true, |o| f(o, y));
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

    /// Storage offsets of every element of `l`, row-major over its logical shape: a plain
    /// odometer, independent of the kernels' plans.
    fn offsets_of(l: &Layout) -> Vec<usize> {
        let n: usize = l.sizes.iter().product();
        let mut idx = vec![0usize; l.ndim()];
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(at(l, &idx));
            for d in (0..l.ndim()).rev() {
                idx[d] += 1;
                if idx[d] < l.sizes[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    }

    /// Views of logical shape `sizes`, each over a storage of the given length: contiguous
    /// at an offset; the storage of the reversed shape read backwards (a transpose, or a
    /// reversed permutation in more dims); the storage of a rotated shape permuted back; every
    /// other element of a wider last dim (offset 1); a stride-0 broadcast of the first dim.
    fn views(sizes: &[usize]) -> Vec<(String, Layout, usize)> {
        let nd = sizes.len();
        let numel: usize = sizes.iter().product();
        let permuted = |perm: Vec<usize>, name: &str| {
            let stored: Vec<usize> = perm.iter().map(|&d| sizes[d]).collect();
            let mut inv = vec![0i64; nd];
            perm.iter()
                .enumerate()
                .for_each(|(i, &d)| inv[d] = i as i64);
            let mut l = Layout::contiguous(&stored).permute(&inv).unwrap();
            l.offset = 5;
            (name.to_string(), l, numel + 5)
        };
        let mut v = vec![(
            "contiguous+3".to_string(),
            Layout {
                offset: 3,
                ..Layout::contiguous(sizes)
            },
            numel + 3,
        )];
        if nd >= 2 {
            v.push(permuted((0..nd).rev().collect(), "reversed dims"));
        }
        if nd >= 3 {
            v.push(permuted((1..nd).chain([0]).collect(), "rotated dims"));
        }
        if nd >= 1 {
            let mut wide = sizes.to_vec();
            wide[nd - 1] *= 2;
            let l = Layout::contiguous(&wide)
                .slice(nd as i64 - 1, Some(1), None, 2)
                .unwrap();
            v.push((
                "step 2".to_string(),
                l,
                wide.iter().product::<usize>().max(1),
            ));
            let mut one = sizes.to_vec();
            one[0] = 1;
            let target: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
            let l = Layout::contiguous(&one).expand(&target).unwrap();
            v.push((
                "broadcast dim 0".to_string(),
                l,
                one.iter().product::<usize>(),
            ));
        }
        v
    }

    /// Shapes that cross the tile edges of both tile shapes (not multiples of the tiles, a
    /// row longer than `TILE_LEN`), take the parallel split (more than `PARALLEL_MIN`
    /// elements, with few or many rows in the outermost dim), have size-1 and size-0 dims,
    /// and 3 or 4 dims.
    const SHAPES: &[&[usize]] = &[
        &[0, 5],
        &[4, 0, 3],
        &[1, 1],
        &[7, 9],
        &[1, 37],
        &[37, 1],
        &[33, 1030],
        &[300, 70],
        &[3, 17, 40],
        &[2, 150, 120],
        &[5, 1, 200, 41],
        &[3, 5, 7, 9],
    ];

    #[test]
    fn strided_map2_and_map2_assign_match_an_index_by_index_reference() {
        let f = |a: &[f64], b: &[f32], o: &mut [f64]| {
            o.iter_mut()
                .zip(a.iter().zip(b))
                .for_each(|(o, (&a, &b))| *o = 2.0 * a + b as f64)
        };
        let g = |o: &mut [f64], b: &[f32]| o.iter_mut().zip(b).for_each(|(o, &b)| *o -= b as f64);
        for &sizes in SHAPES {
            let vs = views(sizes);
            // Outputs must not overlap themselves: every view but the broadcast one.
            let outs: Vec<_> = vs
                .iter()
                .filter(|v| !v.0.starts_with("broadcast"))
                .collect();
            for (an, la, alen) in &vs {
                let a: Vec<f64> = (0..*alen).map(|v| v as f64 * 0.5 + 1.0).collect();
                let ao = offsets_of(la);
                for (bn, lb, blen) in &vs {
                    let b: Vec<f32> = (0..*blen).map(|v| 7.0 - v as f32).collect();
                    let bo = offsets_of(lb);
                    for (on, lo, olen) in &outs {
                        let mut o = vec![f64::NAN; *olen];
                        map2(Src::new(&a, la), Src::new(&b, lb), Dst::new(&mut o, lo), &f);
                        let oo = offsets_of(lo);
                        for (i, &p) in oo.iter().enumerate() {
                            let want = 2.0 * a[ao[i]] + b[bo[i]] as f64;
                            assert_eq!(o[p], want, "{sizes:?}: {an} + {bn} -> {on}, element {i}");
                        }
                        let untouched = o.iter().filter(|x| x.is_nan()).count();
                        assert_eq!(untouched, olen - oo.len(), "{sizes:?}: {on} wrote outside");
                        // In place: o -= b.
                        let before = o.clone();
                        map2_assign(Dst::new(&mut o, lo), Src::new(&b, lb), &g);
                        for (i, &p) in oo.iter().enumerate() {
                            let want = before[p] - b[bo[i]] as f64;
                            assert_eq!(o[p], want, "{sizes:?}: {on} -= {bn}, element {i}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn strided_map1_map3_fill_and_map1_assign_match_an_index_by_index_reference() {
        for &sizes in SHAPES {
            let vs = views(sizes);
            let outs: Vec<_> = vs
                .iter()
                .filter(|v| !v.0.starts_with("broadcast"))
                .collect();
            for (on, lo, olen) in &outs {
                let oo = offsets_of(lo);
                for (an, la, alen) in &vs {
                    let a: Vec<f32> = (0..*alen).map(|v| v as f32 - 3.0).collect();
                    let ao = offsets_of(la);
                    let mut o = vec![f32::NAN; *olen];
                    let neg =
                        |a: &[f32], o: &mut [f32]| o.iter_mut().zip(a).for_each(|(o, &x)| *o = -x);
                    map1(Src::new(&a, la), Dst::new(&mut o, lo), &neg);
                    for (i, &p) in oo.iter().enumerate() {
                        assert_eq!(o[p], -a[ao[i]], "{sizes:?}: -{an} -> {on}, element {i}");
                    }
                    map1_assign(Dst::new(&mut o, lo), &|o: &mut [f32]| {
                        o.iter_mut().for_each(|x| *x = *x * 3.0 + 1.0)
                    });
                    for (i, &p) in oo.iter().enumerate() {
                        let want = -a[ao[i]] * 3.0 + 1.0;
                        assert_eq!(o[p], want, "{sizes:?}: {on} assign, element {i}");
                    }
                    // map3 with the same view three times over different storages.
                    let (b, c): (Vec<i32>, Vec<f64>) =
                        (0..*alen).map(|v| (v as i32 % 7, v as f64 * 0.25)).unzip();
                    let h = |a: &[f32], b: &[i32], c: &[f64], o: &mut [f32]| {
                        for (o, ((&a, &b), &c)) in o.iter_mut().zip(a.iter().zip(b).zip(c)) {
                            *o = a * b as f32 + c as f32;
                        }
                    };
                    let (sa, sb, sc) = (Src::new(&a, la), Src::new(&b, la), Src::new(&c, la));
                    map3(sa, sb, sc, Dst::new(&mut o, lo), &h);
                    for (i, &p) in oo.iter().enumerate() {
                        let q = ao[i];
                        let want = a[q] * b[q] as f32 + c[q] as f32;
                        assert_eq!(o[p], want, "{sizes:?}: map3 {an} -> {on}, element {i}");
                    }
                }
                let mut o = vec![f32::NAN; *olen];
                fill(Dst::new(&mut o, lo), 9.5);
                for &p in &oo {
                    assert_eq!(o[p], 9.5, "{sizes:?}: fill {on}");
                }
                let untouched = o.iter().filter(|x| x.is_nan()).count();
                assert_eq!(
                    untouched,
                    olen - oo.len(),
                    "{sizes:?}: fill {on} wrote outside"
                );
            }
        }
    }

    /// `copy` of one element type over every pair of views, against the reference.
    fn check_copy<T: Plain + PartialEq + std::fmt::Debug>(sizes: &[usize], make: fn(usize) -> T) {
        let vs = views(sizes);
        for (an, la, alen) in &vs {
            let a: Vec<T> = (0..*alen).map(make).collect();
            let ao = offsets_of(la);
            for (on, lo, olen) in vs.iter().filter(|v| !v.0.starts_with("broadcast")) {
                let sentinel = make(usize::MAX >> 33);
                let mut o = vec![sentinel; *olen];
                copy(Src::new(&a, la), Dst::new(&mut o, lo));
                let oo = offsets_of(lo);
                for (i, &p) in oo.iter().enumerate() {
                    assert_eq!(o[p], a[ao[i]], "{sizes:?}: copy {an} -> {on}, element {i}");
                }
                let mut written = vec![false; *olen];
                oo.iter().for_each(|&p| written[p] = true);
                for (p, x) in o.iter().enumerate().filter(|(p, _)| !written[*p]) {
                    assert_eq!(*x, sentinel, "{sizes:?}: copy {an} -> {on} wrote at {p}");
                }
            }
        }
    }

    #[test]
    fn strided_copies_of_every_element_width_match_an_index_by_index_reference() {
        for &sizes in SHAPES {
            check_copy::<f32>(sizes, |v| v as f32 * 0.5);
            check_copy::<f64>(sizes, |v| v as f64 - 1.5);
            check_copy::<i64>(sizes, |v| v as i64 * 3);
            check_copy::<u8>(sizes, |v| (v % 251) as u8);
            check_copy::<half::f16>(sizes, |v| half::f16::from_f32((v % 2000) as f32));
        }
    }

    #[test]
    fn transposing_casts_convert_each_element() {
        for &sizes in &[&[33usize, 1030][..], &[300, 70], &[3, 17, 40], &[7, 9]] {
            for (an, la, alen) in &views(sizes) {
                let a: Vec<i32> = (0..*alen as i32).map(|v| v * 3 - 100).collect();
                let ao = offsets_of(la);
                for (on, lo, olen) in views(sizes).iter().filter(|v| !v.0.starts_with("broad")) {
                    let mut o = vec![0f64; *olen];
                    copy_cast(Src::new(&a, la), Dst::new(&mut o, lo));
                    for (i, &p) in offsets_of(lo).iter().enumerate() {
                        assert_eq!(o[p], a[ao[i]] as f64, "{sizes:?}: {an} -> {on}, {i}");
                    }
                    let mut b = vec![false; *olen];
                    copy_cast(Src::new(&a, la), Dst::new(&mut b, lo));
                    for (i, &p) in offsets_of(lo).iter().enumerate() {
                        assert_eq!(b[p], a[ao[i]] != 0, "{sizes:?}: {an} -> bool {on}, {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn an_output_whose_rows_interleave_in_memory_is_still_written_exactly() {
        // Dims [2, 2, 10000] at strides [1, 38002, 4]: non-overlapping (the second dim's
        // step is 2 mod 4), but each of its rows spans past the next one's start, so no
        // split of the storage separates them. Large enough to ask for a parallel split.
        let lo = Layout {
            sizes: smallvec::smallvec![2, 2, 10000],
            strides: smallvec::smallvec![1, 38002, 4],
            offset: 2,
        };
        let mut seen = std::collections::HashSet::new();
        assert!(offsets_of(&lo).into_iter().all(|p| seen.insert(p)));
        let la = Layout::contiguous(&[10000, 2, 2])
            .permute(&[2, 1, 0])
            .unwrap();
        let len = lo.storage_extent().unwrap() + 3;
        let a: Vec<f32> = (0..40000).map(|v| v as f32).collect();
        let mut o = vec![f32::NAN; len];
        let neg = |a: &[f32], o: &mut [f32]| o.iter_mut().zip(a).for_each(|(o, &x)| *o = -x);
        map1(Src::new(&a, &la), Dst::new(&mut o, &lo), &neg);
        let (ao, oo) = (offsets_of(&la), offsets_of(&lo));
        for (i, &p) in oo.iter().enumerate() {
            assert_eq!(o[p], -a[ao[i]], "element {i}");
        }
        assert_eq!(o.iter().filter(|x| x.is_nan()).count(), len - oo.len());
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
