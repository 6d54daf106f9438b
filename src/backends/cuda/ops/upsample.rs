//! Resampling on CUDA (kernels/cuda/upsample.cu.j2): images viewed as `[planes, H, W]`,
//! with the ratios of the CPU module (`kiln_kernels::cpu::upsample`), so both backends pick
//! the same source pixels.

use super::{gpu_of, grid, operand_with};
use crate::backends::cuda::launchers::upsample as kernels;
use crate::{Result, Tensor};
use kiln_kernels::cpu::upsample::{linear_ratio, scale_ratio};

/// `[h, w]` of an `[N, C, *spatial]` shape (a 1-d image has height 1).
fn hw(shape: &[usize]) -> [usize; 2] {
    match shape.len() {
        3 => [1, shape[2]],
        _ => [shape[2], shape[3]],
    }
}

/// How a kernel resamples: the sizes and per-dim ratios, and for bilinear `align_corners`.
struct Resize {
    input: [usize; 2],
    output: [usize; 2],
    ratios: [f64; 2],
    align: Option<bool>,
}

impl Resize {
    fn nearest(input: &[usize], output: &[usize], scales: [Option<f64>; 2]) -> Resize {
        let (i, o) = (hw(input), hw(output));
        Resize {
            input: i,
            output: o,
            ratios: [0, 1].map(|d| scale_ratio(scales[d], i[d], o[d])),
            align: None,
        }
    }

    fn bilinear(
        input: &[usize],
        output: &[usize],
        align: bool,
        scales: [Option<f64>; 2],
    ) -> Resize {
        let (i, o) = (hw(input), hw(output));
        Resize {
            input: i,
            output: o,
            ratios: [0, 1].map(|d| linear_ratio(i[d], o[d], align, scales[d])),
            align: Some(align),
        }
    }
}

/// `<name>_<T>(out, src, in_h, in_w, out_h, out_w, rh, rw, n)`.
type Nearest = kernels::Nearest;
/// `<name>_<T>(out, src, in_h, in_w, out_h, out_w, rh, rw, align, n)`.
type Bilinear = kernels::Bilinear;

#[derive(Clone, Copy)]
enum Kernel {
    Nearest(Nearest),
    Bilinear(Bilinear),
}

/// Launches `kernel` with one thread per element of `out`.
fn launch(op: &str, kernel: Kernel, src: &Tensor, r: &Resize, out: &Tensor) -> Result<()> {
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let (o, s) = (
        operand_with(op, out, out.layout())?,
        operand_with(op, src, src.layout())?,
    );
    let [ih, iw] = r.input.map(|v| v as i64);
    let [oh, ow] = r.output.map(|v| v as i64);
    let [rh, rw] = r.ratios;
    let nn = n as i64;
    let align = r.align.unwrap_or(false);
    let (dt, cfg) = (out.dtype(), grid(n));
    // SAFETY: `src` and `out` are views of [planes, in_h, in_w] and [planes, out_h, out_w]
    // elements of T (the meta function checked the shapes), `out` is fresh storage.
    unsafe {
        match kernel {
            Kernel::Nearest(k) => k(&gpu, op, dt, cfg, &o, &s, ih, iw, oh, ow, rh, rw, nn),
            Kernel::Bilinear(k) => k(&gpu, op, dt, cfg, &o, &s, ih, iw, oh, ow, rh, rw, align, nn),
        }
    }
}

pub fn upsample_nearest1d(
    op: &str,
    self_: &Tensor,
    _output_size: &[i64],
    scales: Option<f64>,
    out: &Tensor,
) -> Result<()> {
    let r = Resize::nearest(self_.shape(), out.shape(), [None, scales]);
    launch(op, Kernel::Nearest(kernels::nearest), self_, &r, out)
}

pub fn upsample_nearest2d(
    op: &str,
    self_: &Tensor,
    _output_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: &Tensor,
) -> Result<()> {
    let r = Resize::nearest(self_.shape(), out.shape(), [scales_h, scales_w]);
    launch(op, Kernel::Nearest(kernels::nearest), self_, &r, out)
}

pub fn upsample_bilinear2d(
    op: &str,
    self_: &Tensor,
    _output_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: &Tensor,
) -> Result<()> {
    let r = Resize::bilinear(
        self_.shape(),
        out.shape(),
        align_corners,
        [scales_h, scales_w],
    );
    launch(op, Kernel::Bilinear(kernels::bilinear), self_, &r, out)
}

pub fn upsample_nearest1d_backward(
    op: &str,
    grad_output: &Tensor,
    _output_size: &[i64],
    _input_size: &[i64],
    scales: Option<f64>,
    out: &Tensor,
) -> Result<()> {
    let r = Resize::nearest(out.shape(), grad_output.shape(), [None, scales]);
    launch(
        op,
        Kernel::Nearest(kernels::nearest_backward),
        grad_output,
        &r,
        out,
    )
}

pub fn upsample_nearest2d_backward(
    op: &str,
    grad_output: &Tensor,
    _output_size: &[i64],
    _input_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: &Tensor,
) -> Result<()> {
    let r = Resize::nearest(out.shape(), grad_output.shape(), [scales_h, scales_w]);
    launch(
        op,
        Kernel::Nearest(kernels::nearest_backward),
        grad_output,
        &r,
        out,
    )
}

#[allow(clippy::too_many_arguments)]
pub fn upsample_bilinear2d_backward(
    op: &str,
    grad_output: &Tensor,
    _output_size: &[i64],
    _input_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: &Tensor,
) -> Result<()> {
    let r = Resize::bilinear(
        out.shape(),
        grad_output.shape(),
        align_corners,
        [scales_h, scales_w],
    );
    launch(
        op,
        Kernel::Bilinear(kernels::bilinear_backward),
        grad_output,
        &r,
        out,
    )
}
