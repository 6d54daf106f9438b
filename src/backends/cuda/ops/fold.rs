//! im2col and col2im on CUDA (kernels/cuda/fold.cu.j2), with the geometry checked and
//! computed by the CPU module's `Geometry`.

use super::{gpu_of, grid, operand_with};
use crate::backends::cuda::args::KilnFold;
use crate::backends::cuda::launchers::fold as kernels;
use crate::{Error, Layout, Result, Tensor};
use kiln_kernels::cpu::fold::Geometry;

/// `im2col_<T>` or `col2im_<T>`: both take `(out, in, geometry, n)`.
type Kernel = kernels::Im2col;

fn pack(g: &Geometry) -> KilnFold {
    let w = |a: [usize; 3]| a.map(|x| x as i64);
    KilnFold {
        size: w(g.size),
        kernel: w(g.kernel),
        dilation: w(g.dilation),
        padding: w(g.padding),
        stride: w(g.stride),
        blocks: w(g.blocks),
        channels: g.channels as i64,
    }
}

/// `t`'s layout as `[B, C, D, H, W]`: a missing batch and leading spatial dims get size 1.
fn image_layout(t: &Tensor, g: &Geometry) -> Layout {
    let l = t.layout();
    let lead = if g.batched { 2 } else { 1 };
    let (sb, sc) = if g.batched {
        (l.strides[0], l.strides[1])
    } else {
        (0, l.strides[0])
    };
    let mut strides = vec![sb, sc, 0, 0, 0];
    let n = l.ndim() - lead;
    strides[5 - n..].copy_from_slice(&l.strides[lead..]);
    Layout {
        sizes: smallvec::smallvec![g.batch, g.channels, g.size[0], g.size[1], g.size[2]],
        strides: strides.into(),
        offset: l.offset,
    }
}

/// `t`'s layout as `[B, C*K, L]`.
fn cols_layout(t: &Tensor) -> Layout {
    let l = t.layout();
    if l.ndim() == 3 {
        return l.clone();
    }
    Layout {
        sizes: smallvec::smallvec![1, l.sizes[0], l.sizes[1]],
        strides: smallvec::smallvec![0, l.strides[0], l.strides[1]],
        offset: l.offset,
    }
}

fn launch(
    op: &str,
    kernel: Kernel,
    input: (&Tensor, Layout),
    out: &Tensor,
    g: &Geometry,
) -> Result<()> {
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let o = operand_with(op, out, out.layout())?;
    let x = operand_with(op, input.0, &input.1)?;
    // SAFETY: the geometry was validated against both shapes, so every offset the kernel
    // forms from the views' strides lies inside their storages, of `out`'s dtype; `out` is
    // a fresh tensor of n elements.
    unsafe { kernel(&gpu, op, out.dtype(), grid(n), &o, &x, &pack(g), n as i64) }
}

pub fn im2col(
    op: &str,
    self_: &Tensor,
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
    out: &Tensor,
) -> Result<()> {
    let g = Geometry::new(op, self_.shape(), kernel_size, dilation, padding, stride)
        .map_err(|m| Error::op(op, m))?;
    launch(
        op,
        kernels::im2col,
        (self_, image_layout(self_, &g)),
        out,
        &g,
    )
}

#[allow(clippy::too_many_arguments)]
pub fn col2im(
    op: &str,
    self_: &Tensor,
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
    out: &Tensor,
) -> Result<()> {
    let n = output_size.len();
    let full = |v: &[i64]| {
        if v.len() == 1 {
            vec![v[0]; n]
        } else {
            v.to_vec()
        }
    };
    let g = Geometry::new(
        op,
        out.shape(),
        &full(kernel_size),
        dilation,
        padding,
        stride,
    )
    .map_err(|m| Error::op(op, m))?;
    launch(op, kernels::col2im, (self_, cols_layout(self_)), out, &g)
}
