//! `_softmax` and `_log_softmax` along one dim, and their backward kernels
//! `_softmax_backward_data` / `_log_softmax_backward_data`, computed in `T::Compute` (f32
//! for half types).
//!
//! Both subtract the slice's maximum before exponentiating so that large inputs cannot
//! overflow `exp`: `softmax(x) = exp(x - m) / Σ exp(x - m)` and
//! `log_softmax(x) = x - m - ln Σ exp(x - m)`.
//!
//! Viewing the input as `[outer, n, inner]` around `dim`, each of the `outer * inner`
//! slices is independent. When `inner == 1` the slices are contiguous rows; otherwise they
//! are gathered into rows of a scratch matrix first, so both cases share one row routine,
//! [`rows`], and parallelise over slices. In f32 and f64 that routine is
//! [`vmath`]'s vectorised one (a max pass, an exp pass, a sum pass and a scale pass over each
//! row, while it sits in L1); half types convert a task's rows to f32 and use it too. The
//! log-softmax backward exponentiates with [`vmath`]'s `exp` as well.

use crate::cpu::pointwise::PARALLEL_MIN;
use crate::cpu::shape::{contiguous_out, for_each_block, row_major, split_at_dim};
use crate::cpu::vmath;
use crate::element::{same_type, same_type_mut};
use crate::layout::wrap_dim;
use crate::parallel::{fan_out, par_chunks_mut};
use crate::KernelError;
use crate::{Arith, DType, Dst, Element, FloatMath, KResult, Src};

/// Input elements per parallel task when a task covers several rows.
const TASK_WORK: usize = 1 << 12;

/// Softmax (log-softmax when `LOG`) of each `n`-element row of `x` into `out`, in the
/// compute type: [`vmath`]'s vectorised rows for f32 and f64.
fn rows<C: FloatMath, const LOG: bool>(x: &[C], out: &mut [C], n: usize) {
    if let (Some(x), Some(o)) = (same_type::<C, f32>(x), same_type_mut::<C, f32>(out)) {
        return if LOG {
            vmath::log_softmax_f32(x, o, n)
        } else {
            vmath::softmax_f32(x, o, n)
        };
    }
    if let (Some(x), Some(o)) = (same_type::<C, f64>(x), same_type_mut::<C, f64>(out)) {
        return if LOG {
            vmath::log_softmax_f64(x, o, n)
        } else {
            vmath::softmax_f64(x, o, n)
        };
    }
    out.copy_from_slice(x);
    out.chunks_mut(n).for_each(normalize::<C, LOG>);
}

/// Log-softmax of each `n`-element row of a half type's values (widened to `T::Compute`), as
/// PyTorch's CPU last-dim kernel computes it: the maximum and `Σ exp(x - max)` in float32,
/// that sum rounded to `T` and its log rounded to `T` (PyTorch keeps both in the input's
/// dtype), then `x - max - log_sum` in float32, which the caller rounds once. A row whose
/// maximum dominates so gives exactly 0 at the maximum, as in PyTorch. (PyTorch's kernel
/// along other dims, and its CUDA kernel, keep everything in float32, as kiln's do.)
fn log_softmax_half_rows<T: Element>(x: &[T::Compute], out: &mut [T::Compute], n: usize)
where
    T::Compute: FloatMath,
{
    for (xr, or) in x.chunks(n).zip(out.chunks_mut(n)) {
        let mut max = T::Compute::infinity().neg();
        for &v in xr {
            if v > max {
                max = v;
            }
        }
        let mut sum = <T::Compute as Arith>::zero();
        for &v in xr {
            sum = sum.add(v.sub(max).exp());
        }
        let log_sum = T::down(T::down(sum).up().ln()).up();
        for (o, &v) in or.iter_mut().zip(xr) {
            *o = v.sub(max).sub(log_sum);
        }
    }
}

/// Normalises one slice in place: softmax, or log-softmax when `LOG` (the scalar routine,
/// for compute types [`rows`] has no vectorised kernel for).
fn normalize<C: FloatMath, const LOG: bool>(row: &mut [C]) {
    let mut max = C::infinity().neg();
    for &v in row.iter() {
        if v > max {
            max = v;
        }
    }
    // A NaN never becomes `max`, but it still poisons the sum below, so the whole slice is
    // NaN, as in PyTorch.
    let mut sum = C::zero();
    for v in row.iter_mut() {
        let shifted = v.sub(max);
        let e = shifted.exp();
        sum = sum.add(e);
        *v = if LOG { shifted } else { e };
    }
    if LOG {
        let log_sum = sum.ln();
        row.iter_mut().for_each(|v| *v = v.sub(log_sum));
    } else {
        row.iter_mut().for_each(|v| *v = v.div(sum));
    }
}

/// Shared body of both ops.
fn run<T: Element, const LOG: bool>(src: Src<'_, T>, dim: i64, mut out: Dst<'_, T>) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let sizes = &src.layout.sizes;
    let d = wrap_dim(dim, sizes.len())?;
    let (outer, n, inner) = split_at_dim(sizes, d);
    let x = row_major(&src);
    let o = contiguous_out(&mut out)?;
    if o.is_empty() {
        return Ok(());
    }
    let parallel = fan_out(o.len() >= PARALLEL_MIN);
    // Whole rows per task, so that each task calls the row kernel (and allocates) once.
    let per = (TASK_WORK / n).max(1) * n;
    if inner == 1 {
        if let (Some(x), Some(o)) = (
            same_type::<T, T::Compute>(&x[..]),
            same_type_mut::<T, T::Compute>(o),
        ) {
            // f32 and f64: straight from the input rows into the output rows.
            if parallel {
                par_chunks_mut(o, per, &|t, o| {
                    rows::<_, LOG>(&x[t * per..][..o.len()], o, n)
                });
            } else {
                rows::<_, LOG>(x, o, n);
            }
            return Ok(());
        }
        // Half types: a task's rows through compute-type buffers.
        let task = |t: usize, o: &mut [T]| {
            let xs: Vec<T::Compute> = x[t * per..][..o.len()].iter().map(|v| v.up()).collect();
            let mut ys = vec![<T::Compute as Arith>::zero(); o.len()];
            if LOG {
                log_softmax_half_rows::<T>(&xs, &mut ys, n);
            } else {
                rows::<_, LOG>(&xs, &mut ys, n);
            }
            o.iter_mut().zip(ys).for_each(|(o, c)| *o = T::down(c));
        };
        if parallel {
            par_chunks_mut(o, per, &task);
        } else {
            o.chunks_mut(per).enumerate().for_each(|(t, o)| task(t, o));
        }
        return Ok(());
    }
    // Slice r = (oi, j) holds x[(oi * n + k) * inner + j] for k in 0..n; gather it into row r
    // of `g`, then normalise `g`'s rows into `cols`.
    let zero = <T::Compute as Arith>::zero();
    let mut g = vec![zero; outer * inner * n];
    let gather = |r: usize, col: &mut [T::Compute]| {
        let base = (r / inner) * n * inner + r % inner;
        for (k, c) in col.iter_mut().enumerate() {
            *c = x[base + k * inner].up();
        }
    };
    let mut cols = vec![zero; g.len()];
    if parallel {
        par_chunks_mut(&mut g, n, &gather);
        par_chunks_mut(&mut cols, per, &|t, c| {
            rows::<_, LOG>(&g[t * per..][..c.len()], c, n)
        });
    } else {
        g.chunks_mut(n).enumerate().for_each(|(r, c)| gather(r, c));
        rows::<_, LOG>(&g, &mut cols, n);
    }
    // Output row q = (oi, k) of length `inner` reads entry k of slices (oi, 0..inner).
    let scatter = |(q, row): (usize, &mut [T])| {
        let (oi, k) = (q / n, q % n);
        for (j, o) in row.iter_mut().enumerate() {
            *o = T::down(cols[(oi * inner + j) * n + k]);
        }
    };
    if parallel {
        par_chunks_mut(o, inner, &|q, row| scatter((q, row)));
    } else {
        o.chunks_mut(inner).enumerate().for_each(scatter);
    }
    Ok(())
}

/// Shape checks shared by both ops. CPU kernels cannot widen half to float in the same
/// call (the output has the input's dtype), exactly like PyTorch's CPU backend.
fn meta(self_: &[usize], dim: i64, half_to_float: bool, name: &str) -> KResult<Vec<Vec<usize>>> {
    if half_to_float {
        return Err(KernelError::dtype(format!(
            "{name} with half to float conversion is not supported on CPU"
        )));
    }
    wrap_dim(dim, self_.len())?;
    Ok(vec![self_.to_vec()])
}

/// Output shape of `_softmax(Tensor self, int dim, bool half_to_float)`: the input's shape.
/// `half_to_float = true` is rejected, as on PyTorch's CPU backend.
pub fn softmax_meta(self_: &[usize], dim: i64, half_to_float: bool) -> KResult<Vec<Vec<usize>>> {
    meta(self_, dim, half_to_float, "softmax")
}

/// `_softmax(self, dim, half_to_float)`: `exp(x - max) / Σ exp(x - max)` along `dim`, in
/// `T::Compute`. A 0-d input gives 1.
pub fn softmax<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    half_to_float: bool,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    meta(&self_.layout.sizes, dim, half_to_float, "softmax")?;
    run::<T, false>(self_, dim, out)
}

/// Output shape of `_log_softmax(Tensor self, int dim, bool half_to_float)`: the input's
/// shape. `half_to_float = true` is rejected, as on PyTorch's CPU backend.
pub fn log_softmax_meta(
    self_: &[usize],
    dim: i64,
    half_to_float: bool,
) -> KResult<Vec<Vec<usize>>> {
    meta(self_, dim, half_to_float, "log_softmax")
}

/// `_log_softmax(self, dim, half_to_float)`: `x - max - ln Σ exp(x - max)` along `dim`, in
/// `T::Compute`. A 0-d input gives 0.
pub fn log_softmax<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    half_to_float: bool,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    meta(&self_.layout.sizes, dim, half_to_float, "log_softmax")?;
    run::<T, true>(self_, dim, out)
}

// ---------------------------------------------------------------------------------------
// Backward: `_softmax_backward_data` and `_log_softmax_backward_data`
// ---------------------------------------------------------------------------------------

/// Shape checks shared by both backward ops (PyTorch's `checkSameSize` and dim check).
fn backward_meta(
    grad_output: &[usize],
    output: &[usize],
    dim: i64,
    name: &str,
) -> KResult<Vec<Vec<usize>>> {
    if grad_output != output {
        return Err(KernelError::shape(format!(
            "Expected tensor for argument #1 'grad_output' to have the same size as tensor for argument #2 'output'; but {grad_output:?} does not equal {output:?} (while checking arguments for {name})"
        )));
    }
    wrap_dim(dim, output.len())?;
    Ok(vec![output.to_vec()])
}

/// `input_dtype` must be the gradient's own dtype: kiln's softmax never widens half to float
/// (the forward rejects `half_to_float`), so the backward has no narrowing to do either.
pub fn check_backward_input_dtype(grad: DType, input_dtype: DType, name: &str) -> KResult<()> {
    if grad != input_dtype {
        return Err(KernelError::dtype(format!(
            "{name} with half to float conversion is not supported: input_dtype is {} but grad_output is {}",
            input_dtype.scalar_type_name(),
            grad.scalar_type_name()
        )));
    }
    Ok(())
}

/// One slice's input gradient from its output `y` and output gradient `g` (`LOG`: of
/// log-softmax), with `sum` the slice's `Σ g·y` (softmax) or `Σ g` (log-softmax).
#[inline(always)]
fn backward_term<C: FloatMath, const LOG: bool>(g: C, y: C, sum: C) -> C {
    if LOG {
        g.sub(y.exp().mul(sum))
    } else {
        y.mul(g.sub(sum))
    }
}

/// `out = e^y` by [`vmath`]'s vectorised exp when `T` is f32 or f64, returning whether it
/// did (other types leave `out` alone).
fn exp_into<T: 'static>(y: &[T], out: &mut [T]) -> bool {
    if let (Some(y), Some(o)) = (same_type::<T, f32>(y), same_type_mut::<T, f32>(out)) {
        vmath::exp_f32(y, o);
        return true;
    }
    if let (Some(y), Some(o)) = (same_type::<T, f64>(y), same_type_mut::<T, f64>(out)) {
        vmath::exp_f64(y, o);
        return true;
    }
    false
}

/// What a slice sums: `g·y` for softmax, `g` for log-softmax.
#[inline(always)]
fn backward_summand<C: FloatMath, const LOG: bool>(g: C, y: C) -> C {
    if LOG {
        g
    } else {
        g.mul(y)
    }
}

/// Shared body of both backward ops: each `[n]` slice along `dim` (an `[n, inner]` block per
/// outer index, rows of `inner` adjacent slices) sums, then writes, in `T::Compute`.
fn run_backward<T: Element, const LOG: bool>(
    grad_output: Src<'_, T>,
    output: Src<'_, T>,
    dim: i64,
    mut out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let sizes = grad_output.layout.sizes.clone();
    let d = wrap_dim(dim, sizes.len())?;
    let (_, n, inner) = split_at_dim(&sizes, d);
    let (g, y) = (row_major(&grad_output), row_major(&output));
    let o = contiguous_out(&mut out)?;
    if o.is_empty() {
        return Ok(());
    }
    let block = n * inner;
    let zero = <T::Compute as Arith>::zero();
    let one_block = |b: usize, ob: &mut [T]| {
        let (gb, yb) = (&g[b * block..][..block], &y[b * block..][..block]);
        if inner == 1 {
            let sum = gb.iter().zip(yb).fold(zero, |s, (&g, &y)| {
                s.add(backward_summand::<_, LOG>(g.up(), y.up()))
            });
            // Log-softmax in f32/f64: `o = e^y` vectorised, then `o = g - o Σg`.
            if LOG && exp_into(yb, ob) {
                for (o, &g) in ob.iter_mut().zip(gb) {
                    *o = T::down(g.up().sub(o.up().mul(sum)));
                }
                return;
            }
            for ((o, &g), &y) in ob.iter_mut().zip(gb).zip(yb) {
                *o = T::down(backward_term::<_, LOG>(g.up(), y.up(), sum));
            }
            return;
        }
        let mut sums = vec![zero; inner];
        for (gr, yr) in gb.chunks(inner).zip(yb.chunks(inner)) {
            for ((s, &g), &y) in sums.iter_mut().zip(gr).zip(yr) {
                *s = s.add(backward_summand::<_, LOG>(g.up(), y.up()));
            }
        }
        for ((or, gr), yr) in ob
            .chunks_mut(inner)
            .zip(gb.chunks(inner))
            .zip(yb.chunks(inner))
        {
            if LOG && exp_into(yr, or) {
                for ((o, &g), &s) in or.iter_mut().zip(gr).zip(&sums) {
                    *o = T::down(g.up().sub(o.up().mul(s)));
                }
                continue;
            }
            for (((o, &g), &y), &s) in or.iter_mut().zip(gr).zip(yr).zip(&sums) {
                *o = T::down(backward_term::<_, LOG>(g.up(), y.up(), s));
            }
        }
    };
    for_each_block(o, block, &one_block);
    Ok(())
}

/// Output shape of `_softmax_backward_data(Tensor grad_output, Tensor output, int dim,
/// ScalarType input_dtype)`: `output`'s, which `grad_output` must share.
pub fn softmax_backward_data_meta(
    grad_output: &[usize],
    output: &[usize],
    dim: i64,
    _input_dtype: DType,
) -> KResult<Vec<Vec<usize>>> {
    backward_meta(grad_output, output, dim, "softmax_backward")
}

/// The dtype check of `_softmax_backward_data` (see [`check_backward_input_dtype`]), which
/// the kernel makes first and the meta device makes too: `_meta` sees shapes only.
pub fn softmax_backward_data_check(compute: DType, _dim: i64, input_dtype: DType) -> KResult<()> {
    check_backward_input_dtype(compute, input_dtype, "softmax backward")
}

/// `_softmax_backward_data`: the input gradient of `softmax` from its output `y` and the
/// output gradient `g`, `y * (g - Σ g·y)` along `dim`, in `T::Compute`.
pub fn softmax_backward_data<T: Element>(
    grad_output: Src<'_, T>,
    output: Src<'_, T>,
    dim: i64,
    input_dtype: DType,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    softmax_backward_data_check(T::DTYPE, dim, input_dtype)?;
    run_backward::<T, false>(grad_output, output, dim, out)
}

/// Output shape of `_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim,
/// ScalarType input_dtype)`: `output`'s, which `grad_output` must share.
pub fn log_softmax_backward_data_meta(
    grad_output: &[usize],
    output: &[usize],
    dim: i64,
    _input_dtype: DType,
) -> KResult<Vec<Vec<usize>>> {
    backward_meta(grad_output, output, dim, "log_softmax_backward")
}

/// The dtype check of `_log_softmax_backward_data` (see [`check_backward_input_dtype`]),
/// which the kernel makes first and the meta device makes too: `_meta` sees shapes only.
pub fn log_softmax_backward_data_check(
    compute: DType,
    _dim: i64,
    input_dtype: DType,
) -> KResult<()> {
    check_backward_input_dtype(compute, input_dtype, "log_softmax backward")
}

/// `_log_softmax_backward_data`: the input gradient of `log_softmax` from its output `y`
/// and the output gradient `g`, `g - exp(y) * Σ g` along `dim`, in `T::Compute`.
pub fn log_softmax_backward_data<T: Element>(
    grad_output: Src<'_, T>,
    output: Src<'_, T>,
    dim: i64,
    input_dtype: DType,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    log_softmax_backward_data_check(T::DTYPE, dim, input_dtype)?;
    run_backward::<T, true>(grad_output, output, dim, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::half::{bf16, f16};
    use crate::Layout;

    /// Naive reference on logical row-major f64 values: for every position, loops over its
    /// slice along `dim` directly (no max shift; inputs are small).
    fn naive(shape: &[usize], values: &[f64], dim: usize, log: bool) -> Vec<f64> {
        let stride: usize = shape[dim + 1..].iter().product();
        let n = shape[dim];
        (0..values.len())
            .map(|p| {
                let k = (p / stride) % n;
                let first = p - k * stride;
                let denom: f64 = (0..n).map(|i| values[first + i * stride].exp()).sum();
                if log {
                    values[p] - denom.ln()
                } else {
                    values[p].exp() / denom
                }
            })
            .collect()
    }

    fn run_op<T: Element>(data: &[T], layout: &Layout, dim: i64, log: bool) -> KResult<Vec<f64>>
    where
        T::Compute: FloatMath,
    {
        let shape = if log {
            log_softmax_meta(&layout.sizes, dim, false)?
        } else {
            softmax_meta(&layout.sizes, dim, false)?
        };
        let ol = Layout::contiguous(&shape[0]);
        let mut buf = vec![T::default(); ol.numel()];
        let (src, dst) = (Src::new(data, layout), Dst::new(&mut buf, &ol));
        if log {
            log_softmax(src, dim, false, dst)?;
        } else {
            softmax(src, dim, false, dst)?;
        }
        Ok(buf.iter().map(|v| v.to_f64()).collect())
    }

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    #[test]
    fn every_dim_of_a_transposed_input() {
        // Logical [3, 2, 4] = permutation of a contiguous [4, 3, 2] store.
        let store: Vec<f64> = (0..24).map(|v| ((v * 5) % 13) as f64 * 0.3 - 1.5).collect();
        let layout = Layout::contiguous(&[4, 3, 2]).permute(&[1, 2, 0]).unwrap();
        let mut logical = vec![];
        for a in 0..3 {
            for b in 0..2 {
                for c in 0..4 {
                    logical.push(store[c * 6 + a * 2 + b]);
                }
            }
        }
        for dim in 0..3 {
            for log in [false, true] {
                let got = run_op(&store, &layout, dim as i64 - 3, log).unwrap();
                close(&got, &naive(&[3, 2, 4], &logical, dim, log), 1e-12);
            }
        }
    }

    #[test]
    fn broadcast_f32_input_is_stable_for_large_values() {
        // A stride-0 column: every row is [1000, 1001, 1002], which would overflow a naive exp.
        let row = vec![1000.0f32, 1001.0, 1002.0];
        let l = Layout::contiguous(&[1, 3]).expand(&[5, 3]).unwrap();
        let shifted: Vec<f64> = (0..5).flat_map(|_| [0.0, 1.0, 2.0]).collect();
        close(
            &run_op(&row, &l, 1, false).unwrap(),
            &naive(&[5, 3], &shifted, 1, false),
            1e-6,
        );
        let want: Vec<f64> = naive(&[5, 3], &shifted, 1, true);
        close(&run_op(&row, &l, 1, true).unwrap(), &want, 1e-6);
        // Over the broadcast dim every entry is equal: 1/5 each.
        close(&run_op(&row, &l, 0, false).unwrap(), &[0.2; 15], 1e-6);
    }

    #[test]
    fn half_types_compute_in_f32() {
        let vals = [0.5, -1.0, 2.0, 0.0, 3.0, -2.5];
        let h: Vec<f16> = vals.iter().map(|&v| f16::from_f64(v)).collect();
        let l = Layout::contiguous(&[2, 3]);
        close(
            &run_op(&h, &l, 1, false).unwrap(),
            &naive(&[2, 3], &vals, 1, false),
            1e-3,
        );
        let b: Vec<bf16> = vals.iter().map(|&v| bf16::from_f64(v)).collect();
        close(
            &run_op(&b, &l, 0, true).unwrap(),
            &naive(&[2, 3], &vals, 0, true),
            1e-2,
        );
    }

    #[test]
    fn large_inputs_use_the_parallel_paths() {
        let (r, c) = (300, 200);
        let vals: Vec<f64> = (0..r * c).map(|v| ((v * 31) % 17) as f64 * 0.1).collect();
        let l = Layout::contiguous(&[r, c]);
        for dim in 0..2 {
            close(
                &run_op(&vals, &l, dim as i64, false).unwrap(),
                &naive(&[r, c], &vals, dim, false),
                1e-12,
            );
            close(
                &run_op(&vals, &l, dim as i64, true).unwrap(),
                &naive(&[r, c], &vals, dim, true),
                1e-12,
            );
        }
    }

    #[test]
    fn zero_dim_empty_and_nan() {
        let s = vec![3.5f64];
        let sl = Layout::contiguous(&[]);
        assert_eq!(run_op(&s, &sl, 0, false).unwrap(), vec![1.0]);
        assert_eq!(run_op(&s, &sl, -1, true).unwrap(), vec![0.0]);
        let e: Vec<f32> = vec![];
        for shape in [[0usize, 3], [3, 0]] {
            assert_eq!(
                run_op(&e, &Layout::contiguous(&shape), 1, false).unwrap(),
                vec![]
            );
            assert_eq!(
                run_op(&e, &Layout::contiguous(&shape), 0, true).unwrap(),
                vec![]
            );
        }
        let nan = vec![1.0f32, f32::NAN, 0.0, 2.0];
        let got = run_op(&nan, &Layout::contiguous(&[2, 2]), 1, false).unwrap();
        assert!(got[0].is_nan() && got[1].is_nan());
        close(&got[2..], &naive(&[2], &[0.0, 2.0], 0, false), 1e-6);
    }

    /// The backward ops on `g` and `y` (logical row-major `shape`), against the formulas
    /// looped directly: `y (g - Σ g y)` and `g - exp(y) Σ g` along `dim`.
    fn check_backward(shape: &[usize], g: &[f64], y: &[f64], layout: &Layout, dim: usize) {
        let stride: usize = shape[dim + 1..].iter().product();
        let n = shape[dim];
        let slice = |p: usize| {
            let first = p - ((p / stride) % n) * stride;
            (0..n).map(move |i| first + i * stride)
        };
        let soft: Vec<f64> = (0..g.len())
            .map(|p| y[p] * (g[p] - slice(p).map(|q| g[q] * y[q]).sum::<f64>()))
            .collect();
        let log: Vec<f64> = (0..g.len())
            .map(|p| g[p] - y[p].exp() * slice(p).map(|q| g[q]).sum::<f64>())
            .collect();
        for (want, lg) in [(soft, false), (log, true)] {
            let ol = Layout::contiguous(shape);
            let mut buf = vec![0.0f64; ol.numel()];
            let (gs, ys) = (Src::new(g, layout), Src::new(y, layout));
            let o = Dst::new(&mut buf, &ol);
            if lg {
                log_softmax_backward_data(gs, ys, dim as i64, DType::F64, o).unwrap();
            } else {
                softmax_backward_data(gs, ys, dim as i64, DType::F64, o).unwrap();
            }
            close(&buf, &want, 1e-12);
        }
    }

    #[test]
    fn backward_along_every_dim() {
        let shape = [3, 4, 2];
        let g: Vec<f64> = (0..24).map(|v| ((v * 7) % 11) as f64 * 0.2 - 1.0).collect();
        let y: Vec<f64> = (0..24).map(|v| ((v * 5) % 13) as f64 * 0.05).collect();
        for dim in 0..3 {
            check_backward(&shape, &g, &y, &Layout::contiguous(&shape), dim);
        }
        // A large input takes the parallel path.
        let shape = [300, 200];
        let g: Vec<f64> = (0..60_000).map(|v| ((v * 7) % 11) as f64 * 0.1).collect();
        let y: Vec<f64> = (0..60_000).map(|v| ((v * 3) % 5) as f64 * 0.01).collect();
        check_backward(&shape, &g, &y, &Layout::contiguous(&shape), 1);
    }

    #[test]
    fn f32_forward_and_backward_take_the_vectorised_kernels() {
        // Serial ([7, 33]) and parallel ([300, 200]) inputs, along each dim (inner 1 or not).
        for (r, c) in [(7usize, 33usize), (300, 200)] {
            let v32: Vec<f32> = (0..r * c)
                .map(|v| ((v * 31) % 17) as f32 * 0.37 - 3.0)
                .collect();
            let vals: Vec<f64> = v32.iter().map(|&v| v as f64).collect();
            let l = Layout::contiguous(&[r, c]);
            for dim in 0..2 {
                for log in [false, true] {
                    let got = run_op(&v32, &l, dim as i64, log).unwrap();
                    close(&got, &naive(&[r, c], &vals, dim, log), 2e-6);
                }
            }
            // `g - e^y Σ g` along each dim, against the formula looped in float64.
            let y: Vec<f32> = v32.iter().map(|v| v * 0.1 - 0.5).collect();
            for dim in 0..2usize {
                let mut o = vec![0f32; r * c];
                log_softmax_backward_data(
                    Src::new(&v32, &l),
                    Src::new(&y, &l),
                    dim as i64,
                    DType::F32,
                    Dst::new(&mut o, &l),
                )
                .unwrap();
                for i in 0..r {
                    for j in 0..c {
                        let sum: f64 = if dim == 1 {
                            (0..c).map(|k| vals[i * c + k]).sum()
                        } else {
                            (0..r).map(|k| vals[k * c + j]).sum()
                        };
                        let p = i * c + j;
                        let want = vals[p] - (y[p] as f64).exp() * sum;
                        let tol = 1e-5 * (1.0 + sum.abs());
                        assert!((o[p] as f64 - want).abs() <= tol, "{} vs {want}", o[p]);
                    }
                }
            }
        }
    }

    #[test]
    fn backward_checks_shapes_and_input_dtype() {
        assert_eq!(
            softmax_backward_data_meta(&[2, 3], &[3, 2], 0, DType::F32).unwrap_err().to_string(),
            "Expected tensor for argument #1 'grad_output' to have the same size as tensor for argument #2 'output'; but [2, 3] does not equal [3, 2] (while checking arguments for softmax_backward)"
        );
        let (g, l) = (vec![0.5f32; 2], Layout::contiguous(&[2]));
        let mut o = vec![0f32; 2];
        let e = softmax_backward_data(
            Src::new(&g, &l),
            Src::new(&g, &l),
            0,
            DType::F16,
            Dst::new(&mut o, &l),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("input_dtype is Half but grad_output is Float"),
            "{e}"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            softmax_meta(&[2, 3], 2, false).unwrap_err().to_string(),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
        );
        assert_eq!(
            softmax_meta(&[2], 0, true).unwrap_err().to_string(),
            "softmax with half to float conversion is not supported on CPU"
        );
        assert_eq!(
            log_softmax_meta(&[2], 0, true).unwrap_err().to_string(),
            "log_softmax with half to float conversion is not supported on CPU"
        );
    }
}
