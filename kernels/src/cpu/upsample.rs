//! Resampling of `[N, C, *spatial]` images: `upsample_nearest1d/2d` and
//! `upsample_bilinear2d`, and their backward kernels, which are each forward's transpose.
//!
//! Each `(n, c)` plane is independent. Along each spatial dim, output index `o` reads
//! input `nearest_source(o)` (nearest) or the two inputs of [`linear_source`] with their
//! weights (bilinear); source indices never decrease with `o`, which the CUDA backward
//! kernels rely on to find the outputs that read an input by binary search. Positions are
//! computed in float64 (ATen uses the op's accumulate type); values are combined in
//! `T::Compute`. A 1-d image is a 2-d one of height 1.

use crate::cpu::shape::{contiguous_out, for_each_block, row_major};
use crate::KernelError;
use crate::{Arith, Dst, Element, KResult, Src};

/// PyTorch's `compute_scales_value`: `1 / scale` when a positive scale factor was given,
/// else `input / output`.
pub fn scale_ratio(scale: Option<f64>, input: usize, output: usize) -> f64 {
    match scale {
        Some(s) if s > 0.0 => 1.0 / s,
        _ => input as f64 / output as f64,
    }
}

/// The input index nearest-neighbour output `o` reads: `floor(o * ratio)`, at most the last.
pub fn nearest_source(o: usize, ratio: f64, input: usize) -> usize {
    ((o as f64 * ratio).floor() as usize).min(input - 1)
}

/// PyTorch's `area_pixel_compute_scale`: with `align_corners` the corner pixels of input
/// and output line up (the scale factor is ignored), else [`scale_ratio`].
pub fn linear_ratio(input: usize, output: usize, align_corners: bool, scale: Option<f64>) -> f64 {
    if align_corners {
        if output > 1 {
            (input as f64 - 1.0) / (output as f64 - 1.0)
        } else {
            0.0
        }
    } else {
        scale_ratio(scale, input, output)
    }
}

/// The two inputs linear interpolation reads for one output index, and their weights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearSource {
    pub i0: usize,
    pub i1: usize,
    pub w0: f64,
    pub w1: f64,
}

/// PyTorch's `area_pixel_compute_source_index` for output `o`: `ratio * o` with
/// `align_corners`, else `ratio * (o + 0.5) - 0.5` clamped at 0; its floor and the next
/// index (the same one at the last input), weighted by distance.
pub fn linear_source(o: usize, ratio: f64, input: usize, align_corners: bool) -> LinearSource {
    let src = if align_corners {
        ratio * o as f64
    } else {
        (ratio * (o as f64 + 0.5) - 0.5).max(0.0)
    };
    let i0 = (src.floor() as usize).min(input - 1);
    let i1 = if i0 + 1 < input { i0 + 1 } else { i0 };
    let w1 = src - i0 as f64;
    LinearSource {
        i0,
        i1,
        w0: 1.0 - w1,
        w1,
    }
}

// ---------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------

/// The planes of a batch: `input` `[h, w]` resampled to `output` `[h, w]`.
#[derive(Clone, Copy, Debug)]
struct Planes {
    input: [usize; 2],
    output: [usize; 2],
}

impl Planes {
    /// The spatial `sizes` of an `[N, C, *spatial]` tensor and the output's.
    fn new(sizes: &[usize], output: &[usize]) -> Planes {
        let two = |s: &[usize]| {
            if s.len() == 1 {
                [1, s[0]]
            } else {
                [s[0], s[1]]
            }
        };
        Planes {
            input: two(&sizes[2..]),
            output: two(output),
        }
    }
}

/// Checks an `[N, C, *spatial]` input with `dims` spatial dims and `output_size`; returns the
/// output shape.
fn forward_shape(self_: &[usize], output_size: &[i64], dims: usize) -> KResult<Vec<usize>> {
    if self_.len() != dims + 2 {
        return Err(KernelError::shape(format!(
            "expected a {}D input [N, C, *spatial], but got {self_:?}",
            dims + 2
        )));
    }
    if output_size.len() != dims || output_size.iter().any(|&o| o <= 0) {
        return Err(KernelError::shape(format!(
            "output_size must be {dims} positive values, but got {output_size:?}"
        )));
    }
    let spatial = &self_[2..];
    if spatial.contains(&0) {
        return Err(KernelError::shape(format!(
            "Input and output sizes should be greater than 0, but got input {spatial:?} and output {output_size:?}"
        )));
    }
    let mut shape = self_[..2].to_vec();
    shape.extend(output_size.iter().map(|&o| o as usize));
    Ok(shape)
}

/// Checks a backward's `output_size`, `input_size` and `grad_output` (which must have the
/// forward output's shape); returns the input gradient's shape, `input_size`.
fn backward_shape(
    grad_output: &[usize],
    output_size: &[i64],
    input_size: &[i64],
    dims: usize,
) -> KResult<Vec<usize>> {
    if output_size.len() != dims {
        return Err(KernelError::shape(format!(
            "It is expected output_size equals to {dims}, but got size {}",
            output_size.len()
        )));
    }
    if input_size.len() != dims + 2 {
        return Err(KernelError::shape(format!(
            "It is expected input_size equals to {}, but got size {}",
            dims + 2,
            input_size.len()
        )));
    }
    if input_size[..2].iter().any(|&s| s < 0)
        || input_size[2..].iter().any(|&s| s <= 0)
        || output_size.iter().any(|&s| s <= 0)
    {
        return Err(KernelError::shape(format!(
            "Input and output sizes should be greater than 0, but got input {:?} and output {output_size:?}",
            &input_size[2..]
        )));
    }
    let full: Vec<usize> = input_size[..2]
        .iter()
        .chain(output_size)
        .map(|&s| s as usize)
        .collect();
    if grad_output.len() != dims + 2 {
        return Err(KernelError::shape(format!(
            "Expected grad_output to be a tensor of dimension {} but got: dimension {}",
            dims + 2,
            grad_output.len()
        )));
    }
    for (i, (&want, &got)) in full.iter().zip(grad_output).enumerate() {
        if want != got {
            return Err(KernelError::shape(format!(
                "Expected grad_output to have the same shape as output; output.size({i}) = {want} but got grad_output.size({i}) = {got}"
            )));
        }
    }
    Ok(input_size.iter().map(|&s| s as usize).collect())
}

// ---------------------------------------------------------------------------------------
// The plane loops
// ---------------------------------------------------------------------------------------

/// Fills `out` plane by plane: `f(plane input, plane output)`.
fn per_plane<T: Element>(
    x: &[T],
    in_len: usize,
    out: &mut [T],
    out_len: usize,
    f: &(dyn Fn(&[T], &mut [T]) + Sync),
) {
    if out.is_empty() {
        return;
    }
    for_each_block(out, out_len, &|p, o| f(&x[p * in_len..][..in_len], o));
}

/// Nearest source indices along each spatial dim.
fn nearest_tables(p: &Planes, ratios: [f64; 2]) -> [Vec<usize>; 2] {
    [0, 1].map(|d| {
        (0..p.output[d])
            .map(|o| nearest_source(o, ratios[d], p.input[d]))
            .collect()
    })
}

/// Linear sources along each spatial dim.
fn linear_tables(p: &Planes, ratios: [f64; 2], align_corners: bool) -> [Vec<LinearSource>; 2] {
    [0, 1].map(|d| {
        (0..p.output[d])
            .map(|o| linear_source(o, ratios[d], p.input[d], align_corners))
            .collect()
    })
}

fn nearest_forward<T: Element>(
    x: Src<'_, T>,
    p: Planes,
    ratios: [f64; 2],
    mut out: Dst<'_, T>,
) -> KResult<()> {
    // An empty batch may come with any output size: no table for it.
    if out.layout.numel() == 0 {
        return Ok(());
    }
    let [th, tw] = nearest_tables(&p, ratios);
    let xs = row_major(&x);
    let o = contiguous_out(&mut out)?;
    let (w, ow) = (p.input[1], p.output[1]);
    per_plane(&xs, p.input[0] * w, o, p.output[0] * ow, &|xp, op| {
        for (orow, &h) in op.chunks_mut(ow).zip(&th) {
            let xrow = &xp[h * w..][..w];
            for (v, &c) in orow.iter_mut().zip(&tw) {
                *v = xrow[c];
            }
        }
    });
    Ok(())
}

fn nearest_backward<T: Element>(
    g: Src<'_, T>,
    p: Planes,
    ratios: [f64; 2],
    mut out: Dst<'_, T>,
) -> KResult<()> {
    if out.layout.numel() == 0 {
        return Ok(());
    }
    let [th, tw] = nearest_tables(&p, ratios);
    let gs = row_major(&g);
    let o = contiguous_out(&mut out)?;
    let (w, ow) = (p.input[1], p.output[1]);
    let zero = <T::Compute as Arith>::zero();
    // Planes of the input gradient, each summing its plane of `g` (hence `per_plane` over
    // the gradient with the roles of input and output swapped).
    per_plane(&gs, p.output[0] * ow, o, p.input[0] * w, &|gp, ip| {
        let mut acc = vec![zero; ip.len()];
        for (grow, &h) in gp.chunks(ow).zip(&th) {
            let arow = &mut acc[h * w..][..w];
            for (&v, &c) in grow.iter().zip(&tw) {
                arow[c] = arow[c].add(v.up());
            }
        }
        for (v, a) in ip.iter_mut().zip(acc) {
            *v = T::down(a);
        }
    });
    Ok(())
}

fn bilinear_forward<T: Element>(
    x: Src<'_, T>,
    p: Planes,
    ratios: [f64; 2],
    align_corners: bool,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    if out.layout.numel() == 0 {
        return Ok(());
    }
    let [sh, sw] = linear_tables(&p, ratios, align_corners);
    let c = |v: f64| <T::Compute as Arith>::from_f64(v);
    let xs = row_major(&x);
    let o = contiguous_out(&mut out)?;
    let (w, ow) = (p.input[1], p.output[1]);
    per_plane(&xs, p.input[0] * w, o, p.output[0] * ow, &|xp, op| {
        for (orow, h) in op.chunks_mut(ow).zip(&sh) {
            let (r0, r1) = (&xp[h.i0 * w..][..w], &xp[h.i1 * w..][..w]);
            let (h0, h1) = (c(h.w0), c(h.w1));
            for (v, s) in orow.iter_mut().zip(&sw) {
                let (w0, w1) = (c(s.w0), c(s.w1));
                let top = w0.mul(r0[s.i0].up()).add(w1.mul(r0[s.i1].up()));
                let bottom = w0.mul(r1[s.i0].up()).add(w1.mul(r1[s.i1].up()));
                *v = T::down(h0.mul(top).add(h1.mul(bottom)));
            }
        }
    });
    Ok(())
}

fn bilinear_backward<T: Element>(
    g: Src<'_, T>,
    p: Planes,
    ratios: [f64; 2],
    align_corners: bool,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    if out.layout.numel() == 0 {
        return Ok(());
    }
    let [sh, sw] = linear_tables(&p, ratios, align_corners);
    let c = |v: f64| <T::Compute as Arith>::from_f64(v);
    let gs = row_major(&g);
    let o = contiguous_out(&mut out)?;
    let (w, ow) = (p.input[1], p.output[1]);
    let zero = <T::Compute as Arith>::zero();
    per_plane(&gs, p.output[0] * ow, o, p.input[0] * w, &|gp, ip| {
        let mut acc = vec![zero; ip.len()];
        for (grow, h) in gp.chunks(ow).zip(&sh) {
            let (h0, h1) = (c(h.w0), c(h.w1));
            for (&v, s) in grow.iter().zip(&sw) {
                let v = v.up();
                let (w0, w1) = (c(s.w0), c(s.w1));
                let mut add = |row: usize, col: usize, wt: T::Compute| {
                    let a = &mut acc[row * w + col];
                    *a = a.add(wt.mul(v));
                };
                add(h.i0, s.i0, h0.mul(w0));
                add(h.i0, s.i1, h0.mul(w1));
                add(h.i1, s.i0, h1.mul(w0));
                add(h.i1, s.i1, h1.mul(w1));
            }
        }
        for (v, a) in ip.iter_mut().zip(acc) {
            *v = T::down(a);
        }
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The ops
// ---------------------------------------------------------------------------------------

/// Output shape of `upsample_nearest1d(Tensor self, SymInt[1] output_size, float?
/// scales=None)`: `[N, C, output_size[0]]`.
pub fn upsample_nearest1d_meta(
    self_: &[usize],
    output_size: &[i64],
    _scales: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![forward_shape(self_, output_size, 1)?])
}

/// `upsample_nearest1d`: output `o` takes input `floor(o * in / out)` (`/ scales` when given).
pub fn upsample_nearest1d<T: Element>(
    self_: Src<'_, T>,
    output_size: &[i64],
    scales: Option<f64>,
    out: Dst<'_, T>,
) -> KResult<()> {
    let shape = forward_shape(&self_.layout.sizes, output_size, 1)?;
    let p = Planes::new(&self_.layout.sizes, &shape[2..]);
    let ratios = [1.0, scale_ratio(scales, p.input[1], p.output[1])];
    nearest_forward(self_, p, ratios, out)
}

/// Output shape of `upsample_nearest2d(Tensor self, SymInt[2] output_size, float?
/// scales_h=None, float? scales_w=None)`.
pub fn upsample_nearest2d_meta(
    self_: &[usize],
    output_size: &[i64],
    _scales_h: Option<f64>,
    _scales_w: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![forward_shape(self_, output_size, 2)?])
}

/// `upsample_nearest2d`: nearest along each of the two spatial dims.
pub fn upsample_nearest2d<T: Element>(
    self_: Src<'_, T>,
    output_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: Dst<'_, T>,
) -> KResult<()> {
    let shape = forward_shape(&self_.layout.sizes, output_size, 2)?;
    let p = Planes::new(&self_.layout.sizes, &shape[2..]);
    let ratios = [
        scale_ratio(scales_h, p.input[0], p.output[0]),
        scale_ratio(scales_w, p.input[1], p.output[1]),
    ];
    nearest_forward(self_, p, ratios, out)
}

/// Output shape of `upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool
/// align_corners, float? scales_h=None, float? scales_w=None)`.
pub fn upsample_bilinear2d_meta(
    self_: &[usize],
    output_size: &[i64],
    _align_corners: bool,
    _scales_h: Option<f64>,
    _scales_w: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![forward_shape(self_, output_size, 2)?])
}

/// `upsample_bilinear2d`: linear interpolation along each spatial dim ([`linear_source`]).
pub fn upsample_bilinear2d<T: Element>(
    self_: Src<'_, T>,
    output_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: Dst<'_, T>,
) -> KResult<()> {
    let shape = forward_shape(&self_.layout.sizes, output_size, 2)?;
    let p = Planes::new(&self_.layout.sizes, &shape[2..]);
    let ratios = [
        linear_ratio(p.input[0], p.output[0], align_corners, scales_h),
        linear_ratio(p.input[1], p.output[1], align_corners, scales_w),
    ];
    bilinear_forward(self_, p, ratios, align_corners, out)
}

/// Output shape of `upsample_nearest1d_backward(Tensor grad_output, SymInt[1] output_size,
/// SymInt[3] input_size, float? scales=None)`: `input_size`.
pub fn upsample_nearest1d_backward_meta(
    grad_output: &[usize],
    output_size: &[i64],
    input_size: &[i64],
    _scales: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![backward_shape(
        grad_output,
        output_size,
        input_size,
        1,
    )?])
}

/// `upsample_nearest1d_backward`: each input sums the gradients of the outputs that read it.
pub fn upsample_nearest1d_backward<T: Element>(
    grad_output: Src<'_, T>,
    output_size: &[i64],
    input_size: &[i64],
    scales: Option<f64>,
    out: Dst<'_, T>,
) -> KResult<()> {
    let shape = backward_shape(&grad_output.layout.sizes, output_size, input_size, 1)?;
    let p = Planes::new(&shape, &grad_output.layout.sizes[2..]);
    let ratios = [1.0, scale_ratio(scales, p.input[1], p.output[1])];
    nearest_backward(grad_output, p, ratios, out)
}

/// Output shape of `upsample_nearest2d_backward(Tensor grad_output, SymInt[2] output_size,
/// SymInt[4] input_size, float? scales_h=None, float? scales_w=None)`: `input_size`.
pub fn upsample_nearest2d_backward_meta(
    grad_output: &[usize],
    output_size: &[i64],
    input_size: &[i64],
    _scales_h: Option<f64>,
    _scales_w: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![backward_shape(
        grad_output,
        output_size,
        input_size,
        2,
    )?])
}

/// `upsample_nearest2d_backward`: each input sums the gradients of the outputs that read it.
pub fn upsample_nearest2d_backward<T: Element>(
    grad_output: Src<'_, T>,
    output_size: &[i64],
    input_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: Dst<'_, T>,
) -> KResult<()> {
    let shape = backward_shape(&grad_output.layout.sizes, output_size, input_size, 2)?;
    let p = Planes::new(&shape, &grad_output.layout.sizes[2..]);
    let ratios = [
        scale_ratio(scales_h, p.input[0], p.output[0]),
        scale_ratio(scales_w, p.input[1], p.output[1]),
    ];
    nearest_backward(grad_output, p, ratios, out)
}

/// Output shape of `upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size,
/// SymInt[4] input_size, bool align_corners, float? scales_h=None, float? scales_w=None)`:
/// `input_size`.
pub fn upsample_bilinear2d_backward_meta(
    grad_output: &[usize],
    output_size: &[i64],
    input_size: &[i64],
    _align_corners: bool,
    _scales_h: Option<f64>,
    _scales_w: Option<f64>,
) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![backward_shape(
        grad_output,
        output_size,
        input_size,
        2,
    )?])
}

/// `upsample_bilinear2d_backward`: each output's gradient goes to the four inputs it read,
/// with the same weights.
pub fn upsample_bilinear2d_backward<T: Element>(
    grad_output: Src<'_, T>,
    output_size: &[i64],
    input_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: Dst<'_, T>,
) -> KResult<()> {
    let shape = backward_shape(&grad_output.layout.sizes, output_size, input_size, 2)?;
    let p = Planes::new(&shape, &grad_output.layout.sizes[2..]);
    let ratios = [
        linear_ratio(p.input[0], p.output[0], align_corners, scales_h),
        linear_ratio(p.input[1], p.output[1], align_corners, scales_w),
    ];
    bilinear_backward(grad_output, p, ratios, align_corners, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layout;

    fn run<T: Element>(shape: &[usize], f: impl FnOnce(Dst<'_, T>) -> KResult<()>) -> Vec<f64> {
        let l = Layout::contiguous(shape);
        let mut buf = vec![T::default(); l.numel()];
        f(Dst::new(&mut buf, &l)).unwrap();
        buf.iter().map(|v| v.to_f64()).collect()
    }

    #[test]
    fn nearest_1d_repeats_and_its_backward_sums() {
        let x = vec![1i64, 2, 3];
        let l = Layout::contiguous(&[1, 1, 3]);
        let y = run::<i64>(&[1, 1, 7], |o| {
            upsample_nearest1d(Src::new(&x, &l), &[7], None, o)
        });
        assert_eq!(y, vec![1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
        let g = vec![1.0f32; 7];
        let gl = Layout::contiguous(&[1, 1, 7]);
        let dx = run::<f32>(&[1, 1, 3], |o| {
            upsample_nearest1d_backward(Src::new(&g, &gl), &[7], &[1, 1, 3], None, o)
        });
        assert_eq!(dx, vec![3.0, 2.0, 2.0]);
    }

    #[test]
    fn bilinear_weights_sum_to_one_and_the_backward_is_the_transpose() {
        // <y, g> = <x, backward(g)> for any x, g: the backward is the forward's transpose.
        for align in [false, true] {
            let x: Vec<f64> = (0..12).map(|v| (v * 7 % 5) as f64 - 1.5).collect();
            let l = Layout::contiguous(&[1, 2, 2, 3]);
            let y = run::<f64>(&[1, 2, 5, 4], |o| {
                upsample_bilinear2d(Src::new(&x, &l), &[5, 4], align, None, None, o)
            });
            let g: Vec<f64> = (0..40).map(|v| (v * 3 % 7) as f64 * 0.25).collect();
            let gl = Layout::contiguous(&[1, 2, 5, 4]);
            let dx = run::<f64>(&[1, 2, 2, 3], |o| {
                upsample_bilinear2d_backward(
                    Src::new(&g, &gl),
                    &[5, 4],
                    &[1, 2, 2, 3],
                    align,
                    None,
                    None,
                    o,
                )
            });
            let lhs: f64 = y.iter().zip(&g).map(|(a, b)| a * b).sum();
            let rhs: f64 = x.iter().zip(&dx).map(|(a, b)| a * b).sum();
            assert!((lhs - rhs).abs() < 1e-12, "{lhs} vs {rhs}");
            let ones = vec![1.0f64; 12];
            let y1 = run::<f64>(&[1, 2, 5, 4], |o| {
                upsample_bilinear2d(Src::new(&ones, &l), &[5, 4], align, None, None, o)
            });
            assert!(y1.iter().all(|v| (v - 1.0).abs() < 1e-12));
        }
    }

    #[test]
    fn source_indices_never_decrease() {
        for (input, output) in [(3, 7), (7, 3), (5, 5), (4, 8), (1, 4)] {
            let r = scale_ratio(None, input, output);
            let n: Vec<usize> = (0..output).map(|o| nearest_source(o, r, input)).collect();
            assert!(n.windows(2).all(|w| w[0] <= w[1]) && n[output - 1] < input);
            for align in [false, true] {
                let r = linear_ratio(input, output, align, None);
                let s: Vec<LinearSource> = (0..output)
                    .map(|o| linear_source(o, r, input, align))
                    .collect();
                assert!(s.windows(2).all(|w| w[0].i0 <= w[1].i0));
                assert!(s
                    .iter()
                    .all(|s| s.i1 < input && (s.w0 + s.w1 - 1.0).abs() < 1e-12));
            }
        }
    }

    #[test]
    fn errors_name_the_sizes() {
        assert_eq!(
            upsample_nearest1d_meta(&[2, 3], &[4], None)
                .unwrap_err()
                .to_string(),
            "expected a 3D input [N, C, *spatial], but got [2, 3]"
        );
        assert_eq!(
            upsample_nearest2d_meta(&[1, 1, 2, 2], &[0, 2], None, None)
                .unwrap_err()
                .to_string(),
            "output_size must be 2 positive values, but got [0, 2]"
        );
        assert_eq!(
            upsample_nearest2d_backward_meta(&[1, 1, 4, 5], &[4, 4], &[1, 1, 2, 2], None, None)
                .unwrap_err().to_string(),
            "Expected grad_output to have the same shape as output; output.size(3) = 4 but got grad_output.size(3) = 5"
        );
        assert_eq!(
            upsample_bilinear2d_backward_meta(&[1, 1, 4], &[4], &[1, 1, 2], false, None, None)
                .unwrap_err()
                .to_string(),
            "It is expected output_size equals to 2, but got size 1"
        );
    }
}
