//! Pooling: max pooling (1d and 2d) through the `_max_pool2d` kernel, average pooling over
//! `im2col` windows, adaptive average and adaptive max pooling.

use crate::ops::backward::i64s;
use crate::ops::convolution::{batched, blocks, expand_param, product, unbatched};
use crate::ops::shaping::host_vec;
use crate::{DType, Device, Error, Result, Scalar, Tensor};

/// The padding `pad` list (last dim first) that adds `before[d]` / `after[d]` to each of
/// the `n` spatial dims.
fn pad_list(before: &[i64], after: &[i64]) -> Vec<i64> {
    (0..before.len())
        .rev()
        .flat_map(|d| [before[d], after[d]])
        .collect()
}

/// Checked pooling parameters: kernel, stride (default: the kernel), padding, dilation.
struct Pool {
    k: Vec<i64>,
    s: Vec<i64>,
    p: Vec<i64>,
    d: Vec<i64>,
}

impl Pool {
    fn new(
        op: &str,
        n: usize,
        kernel: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
    ) -> Result<Pool> {
        let k = expand_param(op, "kernel_size", kernel, n)?;
        let s = if stride.is_empty() {
            k.clone()
        } else {
            expand_param(op, "stride", stride, n)?
        };
        let p = expand_param(op, "padding", padding, n)?;
        let d = expand_param(op, "dilation", dilation, n)?;
        if k.iter().chain(&s).chain(&d).any(|&v| v <= 0) {
            return Err(Error::value(
                op,
                format!("kernel_size, stride and dilation must be greater than zero, but got kernel_size={k:?}, stride={s:?}, dilation={d:?}"),
            ));
        }
        for i in 0..n {
            // In i128: a huge kernel or dilation must not overflow the span.
            let span = d[i] as i128 * (k[i] as i128 - 1) + 1;
            if p[i] < 0 || p[i] as i128 > span / 2 {
                return Err(Error::value(
                    op,
                    format!(
                        "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
                        p[i], k[i], d[i]
                    ),
                ));
            }
        }
        Ok(Pool { k, s, p, d })
    }

    /// Extra padding after each dim so `ceil_mode` windows fit (PyTorch drops a last window
    /// that would start in the right padding).
    fn ceil_extra(&self, spatial: &[usize], ceil_mode: bool) -> Vec<i64> {
        (0..self.k.len())
            .map(|i| {
                if !ceil_mode {
                    return 0;
                }
                // In i128: the parameters may be anywhere in i64.
                let (size, k, s, p, d) = (
                    spatial[i] as i128,
                    self.k[i] as i128,
                    self.s[i] as i128,
                    self.p[i] as i128,
                    self.d[i] as i128,
                );
                let span = d * (k - 1) + 1;
                let avail = size + 2 * p - span;
                if avail < 0 {
                    return 0;
                }
                let mut out = (avail + s - 1) / s + 1;
                if (out - 1) * s >= size + p {
                    out -= 1;
                }
                // Less than one stride, so it fits in i64.
                ((out - 1) * s + span - (size + 2 * p)).max(0) as i64
            })
            .collect()
    }

    /// The padding after each dim: `padding` plus the `ceil_mode` extra, or `op`'s error when
    /// that overflows.
    fn after(&self, op: &str, spatial: &[usize], ceil_mode: bool) -> Result<(Vec<i64>, Vec<i64>)> {
        let extra = self.ceil_extra(spatial, ceil_mode);
        let after = self
            .p
            .iter()
            .zip(&extra)
            .zip(spatial)
            // The padded size, `size + padding + after`, must fit too.
            .map(|((&p, &e), &n)| {
                let after = p.checked_add(e)?;
                (n as i64).checked_add(p)?.checked_add(after)?;
                Some(after)
            })
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| {
                Error::shape(
                    op,
                    format!(
                        "the input of spatial size {spatial:?} padded by {:?} (and the ceil_mode overhang {extra:?}) overflows int64",
                        self.p
                    ),
                )
            })?;
        Ok((extra, after))
    }
}

/// PyTorch's pooling check that every dim but an optional batch dim is non-empty (an input
/// of `n + 1` dims has no batch dim). `as_2d`: a 1-d op that runs as its 2-d form over the
/// input with a size-1 dim inserted before the last, as PyTorch's `avg_pool1d` does, reports
/// that shape and the 2-d wording.
fn check_pool_input(op: &str, n: usize, input: &Tensor, as_2d: bool) -> Result<()> {
    let shape = input.shape();
    let first = if shape.len() == n + 2 { 1 } else { 0 };
    if (shape.len() != n + 1 && shape.len() != n + 2) || !shape[first..].contains(&0) {
        return Ok(());
    }
    let (mut shown, mut dims) = (shape.to_vec(), n);
    if as_2d {
        shown.insert(shown.len() - 1, 1);
        dims += 1;
    }
    Err(Error::shape(
        op,
        format!(
            "Expected {}D or {}D (batch mode) tensor with optional 0 dim batch size for input, but got:{shown:?}",
            dims + 1,
            dims + 2
        ),
    ))
}

/// Max pooling over `n` (1 or 2) spatial dims: the checks and window geometry here, the
/// pass over the planes in `_max_pool2d` (a 1-d pool runs over a height-1 image).
#[allow(clippy::too_many_arguments)]
fn max_pool(
    op: &str,
    n: usize,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    check_pool_input(op, n, input, false)?;
    let (x, was_batched) = batched(op, input, n)?;
    let pool = Pool::new(op, n, kernel_size, stride, padding, dilation)?;
    let spatial: Vec<usize> = x.shape()[2..].to_vec();
    let (_, after) = pool.after(op, &spatial, ceil_mode)?;
    // The windows over the input padded by `padding` before and `after` after each dim.
    let mut padded = x.shape()[..2].to_vec();
    for i in 0..n {
        padded.push(spatial[i] + (pool.p[i] + after[i]) as usize);
    }
    let zeros = vec![0i64; n];
    let out_size = blocks(op, &padded, &pool.k, &pool.d, &zeros, &pool.s)?;
    // Flat indices into a plane: its size must fit (an empty input may have huge dims).
    product(op, "input spatial sizes", &i64s(&spatial))?;
    let two = |v: &[i64], one: i64| if n == 1 { vec![one, v[0]] } else { v.to_vec() };
    let x2 = if n == 1 { x.unsqueeze(2)? } else { x };
    let (mut values, mut indices) = crate::_max_pool2d(
        &x2,
        &two(&pool.k, 1),
        &two(&pool.s, 1),
        &two(&pool.p, 0),
        &two(&pool.d, 1),
        &two(&out_size, 1),
    )?;
    if n == 1 {
        values = values.squeeze_dim(2)?;
        indices = indices.squeeze_dim(2)?;
    }
    Ok((
        unbatched(values, was_batched)?,
        unbatched(indices, was_batched)?,
    ))
}

/// `max_pool1d(kernel_size, stride, padding, dilation, ceil_mode)`.
pub fn max_pool1d(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool(
        "max_pool1d",
        1,
        t,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )?
    .0)
}

/// `max_pool2d(kernel_size, stride, padding, dilation, ceil_mode)`.
pub fn max_pool2d(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool(
        "max_pool2d",
        2,
        t,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )?
    .0)
}

/// `max_pool2d_with_indices(...)`: the maxima and their flat indices into each input plane.
pub fn max_pool2d_with_indices(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    max_pool(
        "max_pool2d_with_indices",
        2,
        t,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )
}

#[allow(clippy::too_many_arguments)]
fn avg_pool(
    op: &str,
    n: usize,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    check_pool_input(op, n, input, n == 1)?;
    // PyTorch's CPU kernel (`avg_pool2d`, which `avg_pool1d` calls) covers the float dtypes
    // and int64, which averages in int64 and divides with C++'s truncating division.
    let dt = input.dtype();
    if dt == DType::Bool || (dt.is_integral() && dt != DType::I64) {
        return Err(Error::dtype(
            op,
            format!(
                "\"avg_pool2d\" not implemented for '{}'",
                dt.scalar_type_name()
            ),
        ));
    }
    let integral = dt == DType::I64;
    let divide = |sums: &Tensor, by: &Tensor| {
        if integral {
            sums.div_mode(by, Some("trunc"))
        } else {
            sums.div(by)
        }
    };
    let (x, was_batched) = batched(op, input, n)?;
    let pool = Pool::new(op, n, kernel_size, stride, padding, &[1])?;
    if divisor_override == Some(0) {
        return Err(Error::value(op, "divisor must be not zero"));
    }
    let spatial: Vec<usize> = x.shape()[2..].to_vec();
    let (extra, after) = pool.after(op, &spatial, ceil_mode)?;
    let xp = crate::pad(&x, pad_list(&pool.p, &after))?;
    let (ones, zeros) = (vec![1i64; n], vec![0i64; n]);
    let out_size = blocks(op, xp.shape(), &pool.k, &ones, &zeros, &pool.s)?;
    let (b, c) = (x.shape()[0] as i64, x.shape()[1] as i64);
    let kk = product(op, "kernel_size", &pool.k)?;
    let cols = crate::im2col(&xp, &pool.k, &ones, &zeros, &pool.s)?;
    let l = cols.shape()[2] as i64;
    let sums = crate::sum_dim_with(&cols.reshape([b, c, kk, l])?, &[2], false, None)?;
    let avg = match divisor_override {
        Some(dv) if integral => divide(
            &sums,
            &Tensor::full_on(Vec::<i64>::new(), Scalar::Int(dv), DType::I64, x.device())?,
        )?,
        Some(dv) => sums.div_scalar(dv)?,
        None => {
            // Each window's divisor: its positions inside the input (and, with
            // count_include_pad, inside the padding), never the ceil_mode overhang.
            let mut region_shape = vec![1usize, 1];
            let (lo, hi): (Vec<i64>, Vec<i64>) = if count_include_pad {
                region_shape.extend(
                    spatial
                        .iter()
                        .zip(&pool.p)
                        .map(|(&s, &p)| s + 2 * p as usize),
                );
                (vec![0; n], extra.clone())
            } else {
                region_shape.extend(&spatial);
                (pool.p.clone(), after.clone())
            };
            let region = Tensor::ones(&region_shape, x.dtype())?.to_device(x.device())?;
            let region = crate::pad(&region, pad_list(&lo, &hi))?;
            let counts = crate::im2col(&region, &pool.k, &ones, &zeros, &pool.s)?;
            let counts = crate::sum_dim_with(&counts.reshape([1, 1, kk, l])?, &[2], false, None)?;
            divide(&sums, &counts)?
        }
    };
    let mut shape = vec![b, c];
    shape.extend(&out_size);
    unbatched(avg.reshape(&shape)?, was_batched)
}

/// `avg_pool1d(kernel_size, stride, padding, ceil_mode, count_include_pad)`.
pub fn avg_pool1d(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
) -> Result<Tensor> {
    avg_pool(
        "avg_pool1d",
        1,
        t,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        None,
    )
}

/// `avg_pool2d(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)`.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    avg_pool(
        "avg_pool2d",
        2,
        t,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
}

/// The `[out, size]` matrix averaging each adaptive window: output `i` covers
/// `floor(i * size / out) .. ceil((i + 1) * size / out)`.
fn adaptive_matrix(
    op: &str,
    out: usize,
    size: usize,
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    // `i * size` and `(i + 1) * size` below are at most `out * size`.
    let len = out.checked_mul(size).ok_or_else(|| {
        Error::shape(
            op,
            format!("{op}: an output size of {out} over an input of {size} overflows"),
        )
    })?;
    let mut m = host_vec(op, len)?;
    m.resize(len, 0.0f64);
    for i in 0..out {
        let (start, end) = (i * size / out, ((i + 1) * size).div_ceil(out));
        for j in start..end {
            m[i * size + j] = 1.0 / (end - start) as f64;
        }
    }
    Tensor::from_vec(m, &[out, size])?
        .to_dtype(dtype)?
        .to_device(device)
}

fn adaptive_avg_pool(op: &str, n: usize, t: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    if output_size.len() != n || output_size.iter().any(|&o| o < 0) {
        return Err(Error::shape(
            op,
            format!("{op}: output_size must be {n} non-negative values, but got {output_size:?}"),
        ));
    }
    if t.dim() != n + 1 && t.dim() != n + 2 {
        return Err(Error::shape(
            op,
            format!(
                "{op}(): Expected {}D or {}D tensor, but got {:?}",
                n + 1,
                n + 2,
                t.shape()
            ),
        ));
    }
    if !t.dtype().is_floating_point() {
        return Err(Error::dtype(
            op,
            format!(
                "\"{op}\" not implemented for '{}'",
                t.dtype().scalar_type_name()
            ),
        ));
    }
    let mut y = t.clone();
    for (i, &out) in output_size.iter().enumerate() {
        let dim = (t.dim() - n + i) as i64;
        let size = t.shape()[dim as usize];
        if size == 0 {
            return Err(Error::shape(
                op,
                format!("{op}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {:?}", t.shape()),
            ));
        }
        let m = adaptive_matrix(op, out as usize, size, t.dtype(), t.device())?;
        // Contract dim `dim` with the matrix: move it last, multiply by mᵀ, move it back.
        y = y
            .movedim(&[dim], &[-1])?
            .matmul(&m.t()?)?
            .movedim(&[-1], &[dim])?;
    }
    Ok(y)
}

/// `adaptive_avg_pool1d(output_size)`.
pub fn adaptive_avg_pool1d(t: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    adaptive_avg_pool("adaptive_avg_pool1d", 1, t, output_size)
}

/// `adaptive_avg_pool2d(output_size)`: separable, as a matrix product per spatial dim.
pub fn adaptive_avg_pool2d(t: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    adaptive_avg_pool("adaptive_avg_pool2d", 2, t, output_size)
}

/// `adaptive_max_pool1d(output_size)`: `adaptive_max_pool2d` over a height-1 image, as
/// PyTorch does; the indices are positions along the length.
pub fn adaptive_max_pool1d(t: &Tensor, output_size: &[i64]) -> Result<(Tensor, Tensor)> {
    let op = "adaptive_max_pool1d";
    if t.dim() != 2 && t.dim() != 3 {
        return Err(Error::shape(
            op,
            format!(
                "Expected 2 to 3 dimensions, but got {}-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)",
                t.dim()
            ),
        ));
    }
    if output_size.len() != 1 {
        return Err(Error::shape(
            op,
            format!(
                "adaptive_max_pool1d() argument 'output_size' should contain one int (got {})",
                output_size.len()
            ),
        ));
    }
    let (v, i) = crate::adaptive_max_pool2d(&t.unsqueeze(-2)?, &[1, output_size[0]])?;
    Ok((v.squeeze_dim(-2)?, i.squeeze_dim(-2)?))
}
