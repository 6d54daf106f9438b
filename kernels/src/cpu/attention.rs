//! Fused attention on the CPU: `_scaled_dot_product_flash_attention_for_cpu` and its
//! backward, PyTorch's CPU flash-attention ops.
//!
//! `softmax(q kᵀ · scale + mask) v` for each (batch, head), tiled over blocks of query rows
//! and key columns so the `[L, S]` score matrix never exists whole: a block of scores is one
//! small GEMM, its softmax is folded into running row maxima and sums (the online softmax),
//! and the block's probabilities multiply the value block straight into the output
//! accumulator. The forward saves each row's `logsumexp`; the backward recomputes a block's
//! probabilities from it (`p = exp(s - lse)`) instead of storing them, and takes
//! `delta = Σ dO · O` per row for the softmax gradient.
//!
//! Everything runs in `T::Compute` (f32 for f16/bf16, which are widened block by block and
//! rounded once at the end). A fully masked row — every score `-inf` — gives zeros and a
//! `-inf` logsumexp, as PyTorch. The products are the `gemm` crate's on the calling thread;
//! (batch, head) pairs are spread over kiln's pool.

use crate::cpu::matmul::Blas;
use crate::cpu::{narrow, vmath};
use crate::element::{same_type, same_type_mut};
use crate::parallel::{fan_out, par_chunks_mut2_by, par_chunks_mut_many_by};
use crate::{Arith, Dst, Element, FloatMath, KResult, KernelError, Src};
use half::bf16;

/// Query rows per block.
const QB: usize = 64;
/// Key columns per block.
const KB: usize = 256;
/// Multiply-adds below which the (batch, head) loop stays on the calling thread.
const PARALLEL_WORK: usize = 1 << 16;

/// The sizes every check and loop uses: batch, heads, query length, key length, query/key
/// embedding and value embedding.
#[derive(Debug, Clone, Copy)]
struct Dims {
    b: usize,
    h: usize,
    l: usize,
    s: usize,
    e: usize,
    ev: usize,
}

fn check_qkv(query: &[usize], key: &[usize], value: &[usize]) -> KResult<Dims> {
    if query.len() != 4 || key.len() != 4 || value.len() != 4 {
        return Err(KernelError::shape(format!(
            "expected query, key and value to be 4-D (batch, heads, sequence, embedding), but got query {query:?}, key {key:?} and value {value:?}"
        )));
    }
    if query[..2] != key[..2] || query[..2] != value[..2] {
        return Err(KernelError::shape(format!(
            "expected query, key and value to have the same batch size and number of heads, but got query {query:?}, key {key:?} and value {value:?}"
        )));
    }
    if key[2] != value[2] {
        return Err(KernelError::shape(format!(
            "expected key and value to have the same sequence length, but got key {key:?} and value {value:?}"
        )));
    }
    if query[3] != key[3] {
        return Err(KernelError::shape(format!(
            "Expected query and key to have the same embedding size, but got {query:?} and {key:?}"
        )));
    }
    Ok(Dims {
        b: query[0],
        h: query[1],
        l: query[2],
        s: key[2],
        e: query[3],
        ev: value[3],
    })
}

/// An attention mask broadcasts to `[B, H, L, S]` (trailing dims aligned, each 1 or equal).
fn check_mask(mask: Option<&[usize]>, d: Dims) -> KResult<()> {
    let Some(m) = mask else { return Ok(()) };
    let full = [d.b, d.h, d.l, d.s];
    let fits = m.len() <= 4
        && m.iter()
            .rev()
            .zip(full.iter().rev())
            .all(|(&a, &f)| a == 1 || a == f);
    if !fits {
        return Err(KernelError::shape(format!(
            "attn_mask of shape {m:?} does not broadcast to the attention scores' shape {full:?}"
        )));
    }
    Ok(())
}

fn check_dropout(dropout_p: f64) -> KResult<()> {
    if dropout_p != 0.0 {
        return Err(KernelError::value(format!(
            "the CPU flash-attention kernel has no dropout; dropout_p must be 0, but got {dropout_p}"
        )));
    }
    Ok(())
}

/// Output shapes of `_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key,
/// Tensor value, float dropout_p=0.0, bool is_causal=False, *, Tensor? attn_mask=None,
/// float? scale=None) -> (Tensor output, Tensor logsumexp)`: `[B, H, L, Ev]` and `[B, H, L]`.
pub fn flash_attention_meta(
    query: &[usize],
    key: &[usize],
    value: &[usize],
    dropout_p: f64,
    _is_causal: bool,
    attn_mask: Option<&[usize]>,
    _scale: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    let d = check_qkv(query, key, value)?;
    check_mask(attn_mask, d)?;
    check_dropout(dropout_p)?;
    Ok(vec![vec![d.b, d.h, d.l, d.ev], vec![d.b, d.h, d.l]])
}

/// Output shapes of `_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out,
/// Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p,
/// bool is_causal, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query,
/// Tensor grad_key, Tensor grad_value)`: the shapes of query, key and value.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention_backward_meta(
    grad_out: &[usize],
    query: &[usize],
    key: &[usize],
    value: &[usize],
    out: &[usize],
    logsumexp: &[usize],
    dropout_p: f64,
    _is_causal: bool,
    attn_mask: Option<&[usize]>,
    _scale: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    let d = check_qkv(query, key, value)?;
    check_mask(attn_mask, d)?;
    check_dropout(dropout_p)?;
    let o = [d.b, d.h, d.l, d.ev];
    for (name, got) in [("grad_out", grad_out), ("out", out)] {
        if got != o {
            return Err(KernelError::shape(format!(
                "expected {name} of the output's shape {o:?}, but got {got:?}"
            )));
        }
    }
    if logsumexp != [d.b, d.h, d.l] {
        return Err(KernelError::shape(format!(
            "expected logsumexp of shape {:?}, but got {logsumexp:?}",
            [d.b, d.h, d.l]
        )));
    }
    Ok(vec![query.to_vec(), key.to_vec(), value.to_vec()])
}

/// A 4-D strided operand read per (batch, head): `rows x cols` blocks widened to `C`.
struct Operand<'a, T> {
    data: &'a [T],
    offset: usize,
    strides: [usize; 4],
}

impl<'a, T: Element> Operand<'a, T> {
    fn of(x: &Src<'a, T>) -> Self {
        let st = &x.layout.strides;
        Operand {
            data: x.data,
            offset: x.layout.offset,
            strides: [st[0], st[1], st[2], st[3]],
        }
    }

    /// Rows `r0..r0 + rows` of (batch `b`, head `h`) as a row-major `rows x cols` buffer of
    /// `T::Compute`, each element times `scale`.
    fn widen(
        &self,
        (b, h): (usize, usize),
        (r0, rows): (usize, usize),
        cols: usize,
        scale: T::Compute,
        out: &mut Vec<T::Compute>,
    ) {
        out.clear();
        let [sb, sh, sr, sc] = self.strides;
        let base = self.offset + b * sb + h * sh;
        if sc != 1 && cols > 1 {
            for i in r0..r0 + rows {
                let row = base + i * sr;
                out.extend((0..cols).map(|j| self.data[row + j * sc].up().mul(scale)));
            }
            return;
        }
        // Unit-stride rows: whole-row copies or vectorised widening.
        out.resize(rows * cols, <T::Compute as Arith>::zero());
        for (r, dst) in out.chunks_exact_mut(cols.max(1)).take(rows).enumerate() {
            let row = base + (r0 + r) * sr;
            widen_row(&self.data[row..row + cols], dst);
        }
        if scale != <T::Compute as Arith>::one() {
            out.iter_mut().for_each(|x| *x = x.mul(scale));
        }
    }
}

/// `dst = src` widened to the compute type: a copy for f32/f64, vectorised for bf16.
fn widen_row<T: Element>(src: &[T], dst: &mut [T::Compute]) {
    if let (Some(s), Some(d)) = (
        same_type::<T, bf16>(src),
        same_type_mut::<T::Compute, f32>(dst),
    ) {
        return narrow::bf16_to_f32(s, d);
    }
    if let Some(s) = same_type::<T, T::Compute>(src) {
        return dst.copy_from_slice(s);
    }
    dst.iter_mut().zip(src).for_each(|(d, &x)| *d = x.up());
}

/// `dst = src` rounded to `T` once: a copy for f32/f64, vectorised for bf16.
fn narrow_row<T: Element>(src: &[T::Compute], dst: &mut [T]) {
    if let (Some(s), Some(d)) = (
        same_type::<T::Compute, f32>(src),
        same_type_mut::<T, bf16>(dst),
    ) {
        return narrow::f32_to_bf16(s, d);
    }
    if let Some(s) = same_type::<T::Compute, T>(src) {
        return dst.copy_from_slice(s);
    }
    dst.iter_mut().zip(src).for_each(|(d, &x)| *d = T::down(x));
}

/// The mask as strides over `[B, H, L, S]`: 0 along its broadcast dims.
struct Mask<'a, C> {
    data: &'a [C],
    offset: usize,
    strides: [usize; 4],
}

impl<'a, C: Copy> Mask<'a, C> {
    fn of(m: &Src<'a, C>) -> Self {
        let (sizes, st) = (&m.layout.sizes, &m.layout.strides);
        let pad = 4 - sizes.len();
        let mut strides = [0; 4];
        for (k, s) in strides.iter_mut().enumerate().skip(pad) {
            if sizes[k - pad] != 1 {
                *s = st[k - pad];
            }
        }
        Mask {
            data: m.data,
            offset: m.layout.offset,
            strides,
        }
    }

    /// Element `(i, j)` of (batch `b`, head `h`).
    #[inline(always)]
    fn at(&self, b: usize, h: usize, i: usize, j: usize) -> C {
        let [sb, sh, si, sj] = self.strides;
        self.data[self.offset + b * sb + h * sh + i * si + j * sj]
    }
}

/// `c (m x n, row-major) = a @ b`, or with `acc = Some(s)`, `c += s * (a @ b)`; `a` and `b`
/// given as slices with (row, column) strides. On the calling thread.
#[allow(clippy::too_many_arguments)]
fn mm<C: Blas + Arith>(
    (m, k, n): (usize, usize, usize),
    a: &[C],
    (rsa, csa): (usize, usize),
    b: &[C],
    (rsb, csb): (usize, usize),
    c: &mut [C],
    acc: Option<C>,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if acc.is_none() {
            c[..m * n].fill(C::zero());
        }
        return;
    }
    // The last element each operand reads: the bounds the raw call relies on.
    let last = |r: usize, cc: usize, rs: usize, cs: usize| (r - 1) * rs + (cc - 1) * cs;
    assert!(
        last(m, k, rsa, csa) < a.len() && last(k, n, rsb, csb) < b.len() && m * n <= c.len(),
        "internal error: attention block exceeds its buffer"
    );
    // SAFETY: the assertion above puts every element `a[i * rsa + l * csa]` (i < m, l < k),
    // `b[l * rsb + j * csb]` (l < k, j < n) and `c[i * n + j]` inside its slice; every stride
    // is an in-bounds offset, so it fits isize; `c` is a unique borrow, so it overlaps
    // neither input and no two (i, j) share an address.
    unsafe {
        C::gemm_raw(
            m,
            k,
            n,
            a.as_ptr(),
            rsa as isize,
            csa as isize,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            c.as_mut_ptr(),
            n as isize,
            1,
            acc,
            gemm::Parallelism::None,
        )
    }
}

/// `out = e^x` in place, by [`vmath`]'s vectorised exp for f32 and f64.
fn exp_in_place<C: FloatMath>(x: &mut [C]) {
    if let Some(v) = same_type_mut::<C, f32>(x) {
        return vmath::exp_f32_(v);
    }
    if let Some(v) = same_type_mut::<C, f64>(x) {
        return vmath::exp_f64_(v);
    }
    x.iter_mut().for_each(|v| *v = v.exp());
}

/// Adds the mask and the causal cut (`j > i` is `-inf`: PyTorch's top-left `tril`) to a
/// `rows x cols` score block whose first element is query row `i0`, key column `j0`.
#[allow(clippy::too_many_arguments)]
fn mask_block<C: FloatMath>(
    s: &mut [C],
    (rows, cols): (usize, usize),
    (i0, j0): (usize, usize),
    (b, h): (usize, usize),
    mask: Option<&Mask<'_, C>>,
    is_causal: bool,
) {
    for (r, row) in s.chunks_exact_mut(cols).take(rows).enumerate() {
        let i = i0 + r;
        if let Some(m) = mask {
            for (c, v) in row.iter_mut().enumerate() {
                *v = v.add(m.at(b, h, i, j0 + c));
            }
        }
        if is_causal {
            // Columns j0 + c > i.
            let keep = (i + 1).saturating_sub(j0).min(cols);
            row[keep..].fill(C::infinity().neg());
        }
    }
}

/// How many key columns a causal query block `i0..i1` sees at all.
fn key_extent(s: usize, i1: usize, is_causal: bool) -> usize {
    if is_causal {
        s.min(i1)
    } else {
        s
    }
}

fn resolve_scale<C: Arith>(scale: Option<f64>, e: usize) -> C {
    C::from_f64(scale.unwrap_or(1.0 / (e as f64).sqrt()))
}

/// The largest of `init` and the row's values (NaN-blind, as a softmax's maximum is).
fn row_max<C: Arith>(row: &[C], init: C) -> C {
    if let Some(r) = same_type::<C, f32>(row) {
        // Eight running maxima: the loop vectorises.
        let mut lanes = [f32::NEG_INFINITY; 8];
        let chunks = r.chunks_exact(8);
        let tail = chunks.remainder();
        for c in chunks {
            for (l, &x) in lanes.iter_mut().zip(c) {
                *l = if x > *l { x } else { *l };
            }
        }
        let m = lanes
            .iter()
            .chain(tail)
            .fold(f32::NEG_INFINITY, |a, &x| if x > a { x } else { a });
        let m = C::from_f64(m as f64);
        return if init > m { init } else { m };
    }
    row.iter().fold(init, |a, &x| if x > a { x } else { a })
}

fn is_neg_inf<C: FloatMath>(x: C) -> bool {
    x == C::infinity().neg()
}

/// `_scaled_dot_product_flash_attention_for_cpu`: the attention output and each query
/// row's `logsumexp` of its (scaled, masked) scores.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention<T: Element>(
    query: Src<'_, T>,
    key: Src<'_, T>,
    value: Src<'_, T>,
    dropout_p: f64,
    is_causal: bool,
    attn_mask: Option<Src<'_, T::Compute>>,
    scale: Option<f64>,
    mut output: Dst<'_, T>,
    mut logsumexp: Dst<'_, T::Compute>,
) -> KResult<()>
where
    T::Compute: FloatMath + Blas,
{
    let d = check_qkv(&query.layout.sizes, &key.layout.sizes, &value.layout.sizes)?;
    check_mask(attn_mask.as_ref().map(|m| &m.layout.sizes[..]), d)?;
    check_dropout(dropout_p)?;
    let (out, lse) = match (output.as_contiguous_mut(), logsumexp.as_contiguous_mut()) {
        (Some(o), Some(l)) => (o, l),
        _ => {
            return Err(KernelError::shape(
                "internal error: attention outputs must be contiguous",
            ))
        }
    };
    if d.b * d.h * d.l == 0 {
        return Ok(());
    }
    let (q, k, v) = (Operand::of(&query), Operand::of(&key), Operand::of(&value));
    let mask = attn_mask.as_ref().map(Mask::of);
    let scale: T::Compute = resolve_scale(scale, d.e);
    let body = |bh: usize, out: &mut [T], lse: &mut [T::Compute]| {
        forward_head::<T>(
            d,
            (bh / d.h, bh % d.h),
            &q,
            &k,
            &v,
            mask.as_ref(),
            is_causal,
            scale,
            out,
            lse,
        )
    };
    let work = d.l * d.s * (d.e + d.ev);
    // Pieces split in step need a non-empty output row (`Ev > 0`).
    if d.ev > 0 && fan_out(d.b * d.h > 1 && d.b * d.h * work >= PARALLEL_WORK) {
        par_chunks_mut2_by(out, d.l * d.ev, lse, d.l, &|bh, o, l| body(bh, o, l));
    } else {
        let (o, l) = (d.l * d.ev, d.l);
        for bh in 0..d.b * d.h {
            body(
                bh,
                &mut out[bh * o..(bh + 1) * o],
                &mut lse[bh * l..(bh + 1) * l],
            );
        }
    }
    Ok(())
}

/// The forward of one (batch, head): query blocks in turn, each against the key blocks it
/// sees, with running row maxima `m`, sums `z` and the output accumulator.
#[allow(clippy::too_many_arguments)]
fn forward_head<T: Element>(
    d: Dims,
    (b, h): (usize, usize),
    q: &Operand<'_, T>,
    k: &Operand<'_, T>,
    v: &Operand<'_, T>,
    mask: Option<&Mask<'_, T::Compute>>,
    is_causal: bool,
    scale: T::Compute,
    out: &mut [T],
    lse: &mut [T::Compute],
) where
    T::Compute: FloatMath + Blas,
{
    let one = <T::Compute as Arith>::one();
    let zero = <T::Compute as Arith>::zero();
    let neg_inf = <T::Compute as FloatMath>::infinity().neg();
    let (mut kf, mut vf, mut qf) = (Vec::new(), Vec::new(), Vec::new());
    k.widen((b, h), (0, d.s), d.e, one, &mut kf);
    v.widen((b, h), (0, d.s), d.ev, one, &mut vf);
    let mut s = vec![zero; QB * KB.min(d.s.max(1))];
    let mut acc = vec![zero; QB * d.ev];
    let (mut m, mut z) = (vec![neg_inf; QB], vec![zero; QB]);
    for i0 in (0..d.l).step_by(QB) {
        let rows = QB.min(d.l - i0);
        q.widen((b, h), (i0, rows), d.e, scale, &mut qf);
        acc[..rows * d.ev].fill(zero);
        m[..rows].fill(neg_inf);
        z[..rows].fill(zero);
        let extent = key_extent(d.s, i0 + rows, is_causal);
        for j0 in (0..extent).step_by(KB) {
            let cols = KB.min(extent - j0);
            let sb = &mut s[..rows * cols];
            // Scores: (q · scale) kᵀ for this block.
            mm(
                (rows, d.e, cols),
                &qf,
                (d.e, 1),
                &kf[j0 * d.e..],
                (1, d.e),
                sb,
                None,
            );
            mask_block(sb, (rows, cols), (i0, j0), (b, h), mask, is_causal);
            // Online softmax: rescale what the row has so far to the new maximum.
            for r in 0..rows {
                let row = &mut sb[r * cols..(r + 1) * cols];
                let mx = row_max(row, m[r]);
                if is_neg_inf(mx) {
                    // Nothing unmasked yet: the row contributes nothing.
                    row.fill(zero);
                    continue;
                }
                let alpha = if is_neg_inf(m[r]) {
                    zero
                } else {
                    m[r].sub(mx).exp()
                };
                row.iter_mut().for_each(|x| *x = x.sub(mx));
                m[r] = mx;
                z[r] = z[r].mul(alpha);
                if alpha != one {
                    acc[r * d.ev..(r + 1) * d.ev]
                        .iter_mut()
                        .for_each(|a| *a = a.mul(alpha));
                }
            }
            exp_in_place(sb);
            for r in 0..rows {
                if !is_neg_inf(m[r]) {
                    let row = &sb[r * cols..(r + 1) * cols];
                    z[r] = row.iter().fold(z[r], |a, &x| a.add(x));
                }
            }
            // A row still fully masked was zeroed above, and exp(0) made it ones: clear it.
            for r in 0..rows {
                if is_neg_inf(m[r]) {
                    sb[r * cols..(r + 1) * cols].fill(zero);
                }
            }
            mm(
                (rows, cols, d.ev),
                sb,
                (cols, 1),
                &vf[j0 * d.ev..],
                (d.ev, 1),
                &mut acc,
                Some(one),
            );
        }
        for r in 0..rows {
            let i = i0 + r;
            let orow = &mut out[i * d.ev..(i + 1) * d.ev];
            if z[r] == zero {
                orow.fill(T::down(zero));
                lse[i] = neg_inf;
                continue;
            }
            let inv = z[r].recip();
            let arow = &mut acc[r * d.ev..(r + 1) * d.ev];
            arow.iter_mut().for_each(|a| *a = a.mul(inv));
            narrow_row(arow, orow);
            lse[i] = m[r].add(z[r].ln());
        }
    }
}

/// `_scaled_dot_product_flash_attention_for_cpu_backward`: the gradients of query, key and
/// value from the output's gradient, the forward's output and its `logsumexp`.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention_backward<T: Element>(
    grad_out: Src<'_, T>,
    query: Src<'_, T>,
    key: Src<'_, T>,
    value: Src<'_, T>,
    out: Src<'_, T>,
    logsumexp: Src<'_, T::Compute>,
    dropout_p: f64,
    is_causal: bool,
    attn_mask: Option<Src<'_, T::Compute>>,
    scale: Option<f64>,
    mut grad_query: Dst<'_, T>,
    mut grad_key: Dst<'_, T>,
    mut grad_value: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath + Blas,
{
    let d = check_qkv(&query.layout.sizes, &key.layout.sizes, &value.layout.sizes)?;
    flash_attention_backward_meta(
        &grad_out.layout.sizes,
        &query.layout.sizes,
        &key.layout.sizes,
        &value.layout.sizes,
        &out.layout.sizes,
        &logsumexp.layout.sizes,
        dropout_p,
        is_causal,
        attn_mask.as_ref().map(|m| &m.layout.sizes[..]),
        scale,
    )?;
    let bufs = [
        grad_query.as_contiguous_mut(),
        grad_key.as_contiguous_mut(),
        grad_value.as_contiguous_mut(),
    ];
    let [Some(dq), Some(dk), Some(dv)] = bufs else {
        return Err(KernelError::shape(
            "internal error: attention gradients must be contiguous",
        ));
    };
    if d.b * d.h == 0 {
        return Ok(());
    }
    let ops = Backward {
        d,
        go: Operand::of(&grad_out),
        q: Operand::of(&query),
        k: Operand::of(&key),
        v: Operand::of(&value),
        o: Operand::of(&out),
        lse: logsumexp,
        mask: attn_mask.as_ref().map(Mask::of),
        is_causal,
        scale: resolve_scale(scale, d.e),
    };
    let sizes = [d.l * d.e, d.s * d.e, d.s * d.ev];
    let body = |bh: usize, pieces: &mut [&mut [T]]| {
        if let [dq, dk, dv] = pieces {
            ops.head((bh / d.h, bh % d.h), dq, dk, dv);
        }
    };
    let work = d.l * d.s * (d.e + d.ev);
    let parallel = fan_out(d.b * d.h > 1 && d.b * d.h * work >= PARALLEL_WORK);
    if parallel && sizes.iter().all(|&n| n > 0) {
        let bufs: Vec<(&mut [T], usize)> = vec![(dq, sizes[0]), (dk, sizes[1]), (dv, sizes[2])];
        par_chunks_mut_many_by(bufs, &body);
    } else {
        let [a, b, c] = sizes;
        for bh in 0..d.b * d.h {
            ops.head(
                (bh / d.h, bh % d.h),
                &mut dq[bh * a..(bh + 1) * a],
                &mut dk[bh * b..(bh + 1) * b],
                &mut dv[bh * c..(bh + 1) * c],
            );
        }
    }
    Ok(())
}

/// The operands of one backward call.
struct Backward<'a, T: Element> {
    d: Dims,
    go: Operand<'a, T>,
    q: Operand<'a, T>,
    k: Operand<'a, T>,
    v: Operand<'a, T>,
    o: Operand<'a, T>,
    lse: Src<'a, T::Compute>,
    mask: Option<Mask<'a, T::Compute>>,
    is_causal: bool,
    scale: T::Compute,
}

impl<T: Element> Backward<'_, T>
where
    T::Compute: FloatMath + Blas,
{
    /// The gradients of one (batch, head), written (rounded once) to its pieces of the
    /// three outputs.
    fn head(&self, (b, h): (usize, usize), dq_out: &mut [T], dk_out: &mut [T], dv_out: &mut [T]) {
        let d = self.d;
        let one = <T::Compute as Arith>::one();
        let zero = <T::Compute as Arith>::zero();
        let (mut qs, mut kf, mut vf, mut go, mut o) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        self.q.widen((b, h), (0, d.l), d.e, self.scale, &mut qs);
        self.k.widen((b, h), (0, d.s), d.e, one, &mut kf);
        self.v.widen((b, h), (0, d.s), d.ev, one, &mut vf);
        self.go.widen((b, h), (0, d.l), d.ev, one, &mut go);
        self.o.widen((b, h), (0, d.l), d.ev, one, &mut o);
        // delta_i = Σ_c dO[i, c] · O[i, c]: the softmax gradient's row term.
        let delta: Vec<T::Compute> = (0..d.l)
            .map(|i| {
                let r = i * d.ev..(i + 1) * d.ev;
                go[r.clone()]
                    .iter()
                    .zip(&o[r])
                    .fold(zero, |a, (&g, &x)| a.add(g.mul(x)))
            })
            .collect();
        let ls = &self.lse.layout;
        let lse_at = |i: usize| {
            self.lse.data[ls.offset + b * ls.strides[0] + h * ls.strides[1] + i * ls.strides[2]]
        };
        let mut dq = vec![zero; d.l * d.e];
        let mut dk = vec![zero; d.s * d.e];
        let mut dv = vec![zero; d.s * d.ev];
        let mut p = vec![zero; QB * KB.min(d.s.max(1))];
        let mut dp = p.clone();
        for i0 in (0..d.l).step_by(QB) {
            let rows = QB.min(d.l - i0);
            let extent = key_extent(d.s, i0 + rows, self.is_causal);
            let (qb, gb) = (
                &qs[i0 * d.e..(i0 + rows) * d.e],
                &go[i0 * d.ev..(i0 + rows) * d.ev],
            );
            for j0 in (0..extent).step_by(KB) {
                let cols = KB.min(extent - j0);
                let (pb, dpb) = (&mut p[..rows * cols], &mut dp[..rows * cols]);
                mm(
                    (rows, d.e, cols),
                    qb,
                    (d.e, 1),
                    &kf[j0 * d.e..],
                    (1, d.e),
                    pb,
                    None,
                );
                mask_block(
                    pb,
                    (rows, cols),
                    (i0, j0),
                    (b, h),
                    self.mask.as_ref(),
                    self.is_causal,
                );
                // p = exp(s - lse), zero on a fully masked row.
                for r in 0..rows {
                    let l = lse_at(i0 + r);
                    let row = &mut pb[r * cols..(r + 1) * cols];
                    if is_neg_inf(l) {
                        row.fill(<T::Compute as FloatMath>::infinity().neg());
                    } else {
                        row.iter_mut().for_each(|x| *x = x.sub(l));
                    }
                }
                exp_in_place(pb);
                // dV += pᵀ dO.
                mm(
                    (cols, rows, d.ev),
                    pb,
                    (1, cols),
                    gb,
                    (d.ev, 1),
                    &mut dv[j0 * d.ev..],
                    Some(one),
                );
                // dP = dO vᵀ, then dS = p ⊙ (dP - delta) in place.
                mm(
                    (rows, d.ev, cols),
                    gb,
                    (d.ev, 1),
                    &vf[j0 * d.ev..],
                    (1, d.ev),
                    dpb,
                    None,
                );
                for r in 0..rows {
                    let dl = delta[i0 + r];
                    let (pr, dr) = (
                        &pb[r * cols..(r + 1) * cols],
                        &mut dpb[r * cols..(r + 1) * cols],
                    );
                    dr.iter_mut()
                        .zip(pr)
                        .for_each(|(x, &pv)| *x = pv.mul(x.sub(dl)));
                }
                // dQ += scale · dS k;  dK += dSᵀ (q · scale).
                mm(
                    (rows, cols, d.e),
                    dpb,
                    (cols, 1),
                    &kf[j0 * d.e..],
                    (d.e, 1),
                    &mut dq[i0 * d.e..],
                    Some(self.scale),
                );
                mm(
                    (cols, rows, d.e),
                    dpb,
                    (1, cols),
                    qb,
                    (d.e, 1),
                    &mut dk[j0 * d.e..],
                    Some(one),
                );
            }
        }
        for (dst, src) in [(dq_out, &dq), (dk_out, &dk), (dv_out, &dv)] {
            narrow_row(src, dst);
        }
    }
}
