//! Ops that rearrange whole tensors (`cat`), plus the small layout helpers the other
//! structured kernels share: a row-major view of any input, the contiguous output slice, the
//! `[outer, dim, inner]` split of a shape, and a parallel loop over output blocks.

use crate::cpu::pointwise::PARALLEL_MIN;
use crate::layout::wrap_dim;
use crate::parallel::{fan_out, par_chunks_mut};
use crate::KernelError;
use crate::{Dst, Element, KResult, Src};
use std::borrow::Cow;

/// The elements of `src` in row-major order: borrowed when the layout is already contiguous,
/// copied otherwise (transposed, sliced or stride-0 broadcast inputs).
pub(crate) fn row_major<'a, T: crate::cpu::pointwise::Plain>(src: &Src<'a, T>) -> Cow<'a, [T]> {
    if src.layout.numel() == 0 {
        // An empty view may carry any offset; never slice the buffer with it.
        return Cow::Borrowed(&[]);
    }
    match src.as_contiguous() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(src.to_vec()),
    }
}

/// The output buffer as one row-major slice. Structured kernels always get a fresh contiguous
/// output; this only turns a broken caller contract into an error instead of a panic.
pub(crate) fn contiguous_out<'b, T: Copy>(out: &'b mut Dst<'_, T>) -> KResult<&'b mut [T]> {
    out.as_contiguous_mut()
        .ok_or_else(|| KernelError::shape("internal error: output tensor must be contiguous"))
}

/// The output buffer as one dense slice and whether it is channels-last (`[N, *S, C]` in
/// memory rather than `[N, C, *S]`): the two layouts a structured op with `memory_format:`
/// in the YAML allocates. Anything else is the same internal error as [`contiguous_out`].
pub(crate) fn dense_out<'b, T: Copy>(out: &'b mut Dst<'_, T>) -> KResult<(&'b mut [T], bool)> {
    let l = out.layout;
    if l.numel() > 0 && !l.is_contiguous() && l.is_channels_last() {
        let (at, n) = (l.offset, l.numel());
        return Ok((&mut out.data[at..at + n], true));
    }
    contiguous_out(out).map(|s| (s, false))
}

/// Calls `f(b, block)` for each consecutive `block`-element block of `out` (the last may be
/// shorter), spread over kiln's pool when `out` is large, several blocks per task when they
/// are small. `block` must be non-zero.
pub(crate) fn for_each_block<T: Send>(
    out: &mut [T],
    block: usize,
    f: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    const TASK_WORK: usize = 1 << 12;
    if fan_out(out.len() >= PARALLEL_MIN) {
        let per = (TASK_WORK / block).max(1);
        par_chunks_mut(out, per * block, &|t, blocks| {
            for (k, b) in blocks.chunks_mut(block).enumerate() {
                f(t * per + k, b);
            }
        });
    } else {
        out.chunks_mut(block)
            .enumerate()
            .for_each(|(b, piece)| f(b, piece));
    }
}

/// Splits a row-major shape around `dim` into `(outer, size, inner)`: the element at
/// `(o, i, j)` sits at `(o * size + i) * inner + j`. A 0-d shape is treated as `[1]`. An
/// empty shape gives outer and inner 0: its other dims may multiply past `usize`, and there
/// is no element to address.
pub(crate) fn split_at_dim(sizes: &[usize], dim: usize) -> (usize, usize, usize) {
    if sizes.is_empty() {
        return (1, 1, 1);
    }
    if sizes.contains(&0) {
        return (0, sizes[dim], 0);
    }
    (
        sizes[..dim].iter().product(),
        sizes[dim],
        sizes[dim + 1..].iter().product(),
    )
}

/// PyTorch's legacy rule: a 1-d empty tensor (`torch.tensor([])`) may be concatenated with
/// anything and contributes nothing.
fn skipped(shape: &[usize]) -> bool {
    shape.len() == 1 && shape[0] == 0
}

/// Checks `cat`'s inputs in PyTorch's order and returns the output shape plus the wrapped
/// dim, which is `None` when every input is skipped (the result is then `[0]`).
fn cat_plan(tensors: &[&[usize]], dim: i64) -> KResult<(Vec<usize>, Option<usize>)> {
    if tensors.is_empty() {
        return Err(KernelError::shape(
            "torch.cat(): expected a non-empty list of Tensors",
        ));
    }
    if let Some(i) = tensors.iter().position(|s| s.is_empty()) {
        return Err(KernelError::shape(format!(
            "zero-dimensional tensor (at position {i}) cannot be concatenated"
        )));
    }
    let Some(first) = tensors.iter().position(|s| !skipped(s)) else {
        return Ok((vec![0], None));
    };
    let reference = tensors[first];
    let d = wrap_dim(dim, reference.len())?;
    let mut total = 0;
    for (i, shape) in tensors.iter().enumerate() {
        if skipped(shape) {
            continue;
        }
        if shape.len() != reference.len() {
            return Err(KernelError::shape(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                reference.len(),
                shape.len()
            )));
        }
        for (e, (&want, &got)) in reference.iter().zip(shape.iter()).enumerate() {
            if e != d && want != got {
                return Err(KernelError::shape(format!(
                    "Sizes of tensors must match except in dimension {d}. Expected size {want} but got size {got} for tensor number {i} in the list."
                )));
            }
        }
        total += shape[d];
    }
    let mut out = reference.to_vec();
    out[d] = total;
    Ok((out, Some(d)))
}

/// One input of `cat`, seen as `[outer, width]`.
struct CatPart<'a, T: Clone> {
    /// The input's elements, row-major.
    data: Cow<'a, [T]>,
    /// Elements per outer row: the input's size along `dim` times the inner size.
    width: usize,
    /// Where this input's columns start in each output row.
    start: usize,
}

/// Output shape of `cat(Tensor[] tensors, int dim=0)`, with PyTorch's checks and its legacy
/// skipping of 1-d empty inputs.
pub fn cat_meta(tensors: &[&[usize]], dim: i64) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![cat_plan(tensors, dim)?.0])
}

/// `cat(tensors, dim)`: joins the inputs along `dim`. Viewing every tensor as
/// `[outer, size_t * inner]`, each outer row of the output is the concatenation of the inputs'
/// rows, so the copy is a handful of `memcpy`s per row (parallel over rows when large).
pub fn cat<T: Element>(tensors: &[Src<'_, T>], dim: i64, mut out: Dst<'_, T>) -> KResult<()> {
    let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.layout.sizes.as_slice()).collect();
    let (shape, d) = cat_plan(&shapes, dim)?;
    let Some(d) = d else { return Ok(()) };
    let (outer, total, inner) = split_at_dim(&shape, d);
    let row = total * inner;
    let o = contiguous_out(&mut out)?;
    if o.len() != outer * row {
        return Err(KernelError::shape(format!(
            "internal error: cat output has {} elements, expected {}",
            o.len(),
            outer * row
        )));
    }
    if o.is_empty() {
        return Ok(());
    }
    let mut parts = Vec::with_capacity(tensors.len());
    let mut start = 0;
    for t in tensors.iter().filter(|t| !skipped(&t.layout.sizes)) {
        let width = t.layout.sizes[d] * inner;
        parts.push(CatPart {
            data: row_major(t),
            width,
            start,
        });
        start += width;
    }
    let copy_row = |oi: usize, dst: &mut [T]| {
        for p in &parts {
            dst[p.start..p.start + p.width]
                .copy_from_slice(&p.data[oi * p.width..(oi + 1) * p.width]);
        }
    };
    if fan_out(o.len() >= PARALLEL_MIN && outer > 1) {
        par_chunks_mut(o, row, &copy_row);
    } else {
        o.chunks_mut(row)
            .enumerate()
            .for_each(|(oi, dst)| copy_row(oi, dst));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::half::f16;
    use crate::Layout;

    /// Runs `cat` into a fresh buffer of the meta shape.
    fn run<T: Element>(inputs: &[(&[T], &Layout)], dim: i64) -> KResult<(Vec<usize>, Vec<T>)> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|(_, l)| l.sizes.as_slice()).collect();
        let shape = cat_meta(&shapes, dim)?.remove(0);
        let srcs: Vec<Src<T>> = inputs.iter().map(|(d, l)| Src::new(d, l)).collect();
        let ol = Layout::contiguous(&shape);
        let mut buf = vec![T::default(); ol.numel()];
        cat(&srcs, dim, Dst::new(&mut buf, &ol))?;
        Ok((shape, buf))
    }

    /// A logical 2-d input: rows, columns and `value(i, j)`.
    type Part<'a> = (usize, usize, &'a dyn Fn(usize, usize) -> f64);

    /// Naive reference for 2-d inputs.
    fn naive_cat2(parts: &[Part<'_>], dim: usize) -> Vec<f64> {
        let mut out = vec![];
        if dim == 0 {
            for (r, c, f) in parts {
                for i in 0..*r {
                    for j in 0..*c {
                        out.push(f(i, j));
                    }
                }
            }
        } else {
            let rows = parts[0].0;
            for i in 0..rows {
                for (_, c, f) in parts {
                    for j in 0..*c {
                        out.push(f(i, j));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn cat_dim1_with_transposed_and_broadcast_inputs() {
        // a: contiguous 2x3; b: 2x2 stored as its 2x2 transpose; c: [1,4] expanded to 2x4.
        let a: Vec<f64> = (0..6).map(|v| v as f64).collect();
        let la = Layout::contiguous(&[2, 3]);
        let b = vec![10.0, 11.0, 12.0, 13.0];
        let lb = Layout::contiguous(&[2, 2]).transpose(0, 1).unwrap();
        let c = vec![20.0, 21.0, 22.0, 23.0];
        let lc = Layout::contiguous(&[1, 4]).expand(&[2, 4]).unwrap();
        let (shape, got) = run(&[(&a, &la), (&b, &lb), (&c, &lc)], -1).unwrap();
        assert_eq!(shape, vec![2, 9]);
        let fa = |i: usize, j: usize| (i * 3 + j) as f64;
        let fb = |i: usize, j: usize| 10.0 + (j * 2 + i) as f64;
        let fc = |_: usize, j: usize| 20.0 + j as f64;
        let want = naive_cat2(&[(2, 3, &fa), (2, 2, &fb), (2, 4, &fc)], 1);
        assert_eq!(got, want);
    }

    #[test]
    fn cat_dim0_f16_and_i32() {
        let a: Vec<f16> = (0..4).map(|v| f16::from_f64(v as f64 * 0.5)).collect();
        let b: Vec<f16> = (0..2).map(|v| f16::from_f64(-(v as f64))).collect();
        let (la, lb) = (Layout::contiguous(&[2, 2]), Layout::contiguous(&[1, 2]));
        let (shape, got) = run(&[(&a, &la), (&b, &lb)], 0).unwrap();
        assert_eq!(shape, vec![3, 2]);
        let fa = |i: usize, j: usize| (i * 2 + j) as f64 * 0.5;
        let fb = |_: usize, j: usize| -(j as f64);
        let want = naive_cat2(&[(2, 2, &fa), (1, 2, &fb)], 0);
        assert_eq!(got.iter().map(|v| v.to_f64()).collect::<Vec<_>>(), want);

        let x = vec![1i32, 2, 3];
        let y = vec![4i32];
        let (lx, ly) = (Layout::contiguous(&[3]), Layout::contiguous(&[1]));
        assert_eq!(
            run(&[(&x, &lx), (&y, &ly)], 0).unwrap(),
            (vec![4], vec![1, 2, 3, 4])
        );
    }

    #[test]
    fn cat_skips_legacy_empty_and_handles_empty_dims() {
        let a = vec![1.0f32, 2.0, 3.0, 4.0];
        let la = Layout::contiguous(&[2, 2]);
        let e: Vec<f32> = vec![];
        let le = Layout::contiguous(&[0]);
        let (shape, got) = run(&[(&e, &le), (&a, &la), (&e, &le)], 1).unwrap();
        assert_eq!((shape, got), (vec![2, 2], a.clone()));
        // Only skipped inputs: the result is [0] and dim is not even checked.
        assert_eq!(
            run::<f32>(&[(&e, &le), (&e, &le)], 5).unwrap(),
            (vec![0], vec![])
        );
        // A [2, 0] input contributes no columns.
        let l20 = Layout::contiguous(&[2, 0]);
        assert_eq!(run(&[(&a, &la), (&e, &l20)], 1).unwrap(), (vec![2, 2], a));
    }

    #[test]
    fn cat_large_runs_in_parallel_and_matches() {
        let rows = 300;
        let a: Vec<f32> = (0..rows * 100).map(|v| v as f32).collect();
        let b: Vec<f32> = (0..rows * 60).map(|v| -(v as f32)).collect();
        let (la, lb) = (
            Layout::contiguous(&[rows, 100]),
            Layout::contiguous(&[rows, 60]),
        );
        let (_, got) = run(&[(&a, &la), (&b, &lb)], 1).unwrap();
        let fa = |i: usize, j: usize| (i * 100 + j) as f64;
        let fb = |i: usize, j: usize| -((i * 60 + j) as f64);
        let want = naive_cat2(&[(rows, 100, &fa), (rows, 60, &fb)], 1);
        assert_eq!(got.iter().map(|&v| v as f64).collect::<Vec<_>>(), want);
    }

    #[test]
    fn cat_errors_match_pytorch() {
        let err = |shapes: &[&[usize]], dim| cat_meta(shapes, dim).unwrap_err().to_string();
        assert_eq!(
            err(&[], 0),
            "torch.cat(): expected a non-empty list of Tensors"
        );
        assert_eq!(
            err(&[&[2, 2], &[3, 2]], 1),
            "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list."
        );
        assert_eq!(
            err(&[&[2, 2], &[2, 2, 1]], 0),
            "Tensors must have same number of dimensions: got 2 and 3"
        );
        assert_eq!(
            err(&[&[], &[2]], 0),
            "zero-dimensional tensor (at position 0) cannot be concatenated"
        );
        assert_eq!(
            err(&[&[2, 2]], 2),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
        );
    }
}
