//! Max pooling on CUDA (kernels/cuda/pool.cu.j2), one thread per output cell; the shapes
//! were checked by the CPU module's meta function.

use super::index::{check, with_op};
use super::{gpu_of, grid, operand_with};
use crate::backends::cuda::launchers::pool as kernels;
use crate::{Layout, Result, Tensor};

/// `t`'s layout as `[B, C, H, W]`: an unbatched image gets a size-1 batch.
fn image_layout(t: &Tensor) -> Layout {
    let l = t.layout();
    if l.ndim() == 4 {
        return l.clone();
    }
    let mut sizes = vec![1];
    sizes.extend(&l.sizes);
    let mut strides = vec![0];
    strides.extend(&l.strides);
    Layout {
        sizes: sizes.into(),
        strides: strides.into(),
        offset: l.offset,
    }
}

pub fn adaptive_max_pool2d(
    op: &str,
    self_: &Tensor,
    output_size: &[i64],
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let n = values.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, self_)?;
    let x = operand_with(op, self_, &image_layout(self_))?;
    let v = operand_with(op, values, values.layout())?;
    let ix = operand_with(op, indices, indices.layout())?;
    let (oh, ow, nn) = (output_size[0], output_size[1], n as i64);
    // SAFETY: matches `adaptive_max_pool2d_<T>(KilnTensor values, KilnTensor indices,
    // KilnTensor in, long long oh, long long ow, long long n)`; the meta function checked that
    // `in` has non-empty H and W and that the outputs are fresh `[.., oh, ow]` tensors of `n`
    // elements, and every window lies inside the H × W plane.
    unsafe {
        kernels::adaptive_max_pool2d(&gpu, op, self_.dtype(), grid(n), &v, &ix, &x, oh, ow, nn)
    }?;
    Ok(())
}

/// `_max_pool2d` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d(
    op: &str,
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    output_size: &[i64],
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let n = values.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, self_)?;
    let x = operand_with(op, self_, self_.layout())?;
    let v = operand_with(op, values, values.layout())?;
    let ix = operand_with(op, indices, indices.layout())?;
    let (k, s, p, d, o) = (kernel_size, stride, padding, dilation, output_size);
    // SAFETY: matches `max_pool2d_<T>(KilnTensor values, KilnTensor indices, KilnTensor in,
    // long long kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, n)`; the meta function checked that
    // `in` is `[B, C, H, W]`, every parameter positive (padding non-negative) and every
    // window's first tap inside the plane's rows and columns or past them, and the outputs
    // are fresh `[B, C, oh, ow]` tensors of `n` elements; reads stay in `[0, H) × [0, W)`.
    unsafe {
        kernels::max_pool2d(
            &gpu,
            op,
            self_.dtype(),
            grid(n),
            &v,
            &ix,
            &x,
            k[0],
            k[1],
            s[0],
            s[1],
            p[0],
            p[1],
            d[0],
            d[1],
            o[0],
            o[1],
            n as i64,
        )
    }?;
    Ok(())
}

/// `_max_pool2d_backward` on CUDA: the output is a fresh (so zeroed) `[B, C, H, W]`
/// tensor; indices are range-checked on the host first, as the indexing ops do.
pub fn max_pool2d_backward(
    op: &str,
    grad_output: &Tensor,
    indices: &Tensor,
    input_size: &[i64],
    out: &Tensor,
) -> Result<()> {
    let n = grad_output.numel();
    if n == 0 {
        return Ok(());
    }
    let plane = (input_size[0] * input_size[1]) as usize;
    let (h, w) = (input_size[0], input_size[1]);
    with_op(
        op,
        check(indices, plane, |i| {
            format!("index {i} is out of bounds for an input plane of {h} x {w} = {plane} elements")
        }),
    )?;
    let gpu = gpu_of(op, grad_output)?;
    let g = operand_with(op, grad_output, grad_output.layout())?;
    let ix = operand_with(op, indices, indices.layout())?;
    let o = operand_with(op, out, out.layout())?;
    // SAFETY: matches `max_pool2d_backward_<T>(KilnTensor grad_in, KilnTensor grad,
    // KilnTensor indices, long long n)`; the meta function checked that `grad` and `indices`
    // are `[B, C, oh, ow]` of `n` elements and `out` is a fresh contiguous zeroed
    // `[B, C, H, W]`, and every index was just checked to lie in `0 .. H·W`.
    unsafe {
        kernels::max_pool2d_backward(
            &gpu,
            op,
            grad_output.dtype(),
            grid(n),
            &o,
            &g,
            &ix,
            n as i64,
        )
    }?;
    Ok(())
}
