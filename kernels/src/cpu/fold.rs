//! `im2col` (PyTorch's `F.unfold`) and `col2im` (`F.fold`): sliding blocks of a 1-, 2- or
//! 3-d image as columns, and back (summing where blocks overlap). Convolutions and pooling
//! are built on them (im2col + GEMM), and each is the other's backward.
//!
//! Internally every image has three spatial dims (missing leading ones have size 1 and a
//! 1-wide kernel), so one loop nest serves 1-, 2- and 3-d.

use crate::cpu::shape::{contiguous_out, row_major};
use crate::parallel::{fan_out, par_chunks_mut};
use crate::KernelError;
use crate::{Arith, Dst, Element, KResult, Src};

/// The shape of a sliding-block computation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// Number of spatial dims as the caller wrote them (1, 2 or 3).
    pub dims: usize,
    pub batched: bool,
    pub batch: usize,
    pub channels: usize,
    /// Image size, padded to three dims with leading 1s; likewise below.
    pub size: [usize; 3],
    pub kernel: [usize; 3],
    pub dilation: [usize; 3],
    pub padding: [usize; 3],
    pub stride: [usize; 3],
    /// Number of block positions along each dim.
    pub blocks: [usize; 3],
}

/// `v` as `n` values: one value is repeated (PyTorch's `int[2] stride=1`).
fn expand(name: &str, v: &[i64], n: usize, min: i64) -> KResult<Vec<usize>> {
    let full: Vec<i64> = match v.len() {
        1 => vec![v[0]; n],
        k if k == n => v.to_vec(),
        _ => {
            return Err(KernelError::value(format!(
                "expected {name} to be a single integer value or a list of {n} values, but got {name}={v:?}"
            )))
        }
    };
    if let Some(bad) = full.iter().find(|&&x| x < min) {
        let what = if min > 0 {
            "greater than zero"
        } else {
            "non-negative"
        };
        return Err(KernelError::value(format!(
            "{name} should be {what}, but got {name}={v:?} ({bad})"
        )));
    }
    Ok(full.into_iter().map(|x| x as usize).collect())
}

/// Pads `v` (length `n` ≤ 3) to three dims with leading `fill`s.
fn three(v: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[3 - v.len()..].copy_from_slice(v);
    out
}

impl Geometry {
    /// Checks the parameters against an image of `image` = `[B, C, *S]` or `[C, *S]` (the
    /// number of spatial dims is the kernel's), and computes the block counts.
    pub fn new(
        op: &str,
        image: &[usize],
        kernel_size: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> KResult<Geometry> {
        let n = kernel_size.len();
        if !(1..=3).contains(&n) {
            return Err(KernelError::shape(format!(
                "{op}: expected kernel_size with 1 to 3 values, but got kernel_size={kernel_size:?}"
            )));
        }
        if image.len() != n + 1 && image.len() != n + 2 {
            return Err(KernelError::shape(format!(
                "Expected {}D (unbatched) or {}D (batched) input to {op}, but got input of size: {image:?}",
                n + 1,
                n + 2
            )));
        }
        let kernel = expand("kernel_size", kernel_size, n, 1)?;
        let dil = expand("dilation", dilation, n, 1)?;
        let pad = expand("padding", padding, n, 0)?;
        let st = expand("stride", stride, n, 1)?;
        let batched = image.len() == n + 2;
        let (batch, channels) = if batched {
            (image[0], image[1])
        } else {
            (1, image[0])
        };
        let spatial = &image[image.len() - n..];
        let mut blocks = Vec::with_capacity(n);
        for d in 0..n {
            // Checked, and kept within i64 so `source` can subtract the padding.
            let span = dil[d]
                .checked_mul(kernel[d] - 1)
                .and_then(|v| v.checked_add(1))
                .filter(|&v| v <= i64::MAX as usize);
            let avail = pad[d]
                .checked_mul(2)
                .and_then(|v| v.checked_add(spatial[d]))
                .filter(|&v| v <= i64::MAX as usize);
            let (Some(span), Some(avail)) = (span, avail) else {
                return Err(KernelError::shape(format!(
                    "Given input with spatial size {spatial:?}, kernel_size={kernel:?}, dilation={dil:?}, padding={pad:?}: the dilated kernel or the padded input overflows int64 along dim {d}"
                )));
            };
            if avail < span {
                return Err(KernelError::shape(format!(
                    "Given input with spatial size {spatial:?}, kernel_size={kernel:?}, dilation={dil:?}, padding={pad:?}, calculated shape of the array of sliding blocks is non-positive along dim {d}: the padded input ({avail}) is smaller than the dilated kernel ({span})"
                )));
            }
            blocks.push((avail - span) / st[d] + 1);
        }
        // The image's plane and the columns' shape `[B, C*K, L]`: S, K, L, C*K and the
        // products must each fit an int64, even when B or C is 0.
        let fits = |v: &[usize]| {
            v.iter()
                .try_fold(1usize, |acc, &x| acc.checked_mul(x))
                .is_some_and(|p| p <= i64::MAX as usize)
        };
        let all: Vec<usize> = [batch, channels]
            .iter()
            .chain(&kernel)
            .chain(&blocks)
            .copied()
            .collect();
        let ck: Vec<usize> = [channels].iter().chain(&kernel).copied().collect();
        let sizes_fit = fits(spatial) && fits(&kernel) && fits(&blocks) && fits(&ck);
        if !(sizes_fit && fits(&all[1..]) && fits(&all)) {
            return Err(KernelError::shape(format!(
                "Given input of size {image:?}, kernel_size={kernel:?}, dilation={dil:?}, padding={pad:?}, stride={st:?}: the {blocks:?} sliding blocks' columns overflow int64"
            )));
        }
        Ok(Geometry {
            dims: n,
            batched,
            batch,
            channels,
            size: three(spatial, 1),
            kernel: three(&kernel, 1),
            dilation: three(&dil, 1),
            padding: three(&pad, 0),
            stride: three(&st, 1),
            blocks: three(&blocks, 1),
        })
    }

    /// Kernel positions per block.
    pub fn kernel_len(&self) -> usize {
        self.kernel.iter().product()
    }

    /// Blocks per image.
    pub fn block_len(&self) -> usize {
        self.blocks.iter().product()
    }

    /// `[B, C*K, L]` (or `[C*K, L]` unbatched): the columns' shape.
    pub fn cols_shape(&self) -> Vec<usize> {
        let mut s = vec![self.channels * self.kernel_len(), self.block_len()];
        if self.batched {
            s.insert(0, self.batch);
        }
        s
    }

    /// The input coordinate along dim `d` of block `o`, kernel offset `k`, if inside the image.
    #[inline(always)]
    pub(crate) fn source(&self, d: usize, o: usize, k: usize) -> Option<usize> {
        let p = (o * self.stride[d] + k * self.dilation[d]) as isize - self.padding[d] as isize;
        (p >= 0 && (p as usize) < self.size[d]).then_some(p as usize)
    }
}

/// `(batch, channel)` strides and the three spatial strides of an image layout.
pub(crate) fn image_strides(g: &Geometry, strides: &[usize]) -> (usize, usize, [usize; 3]) {
    let lead = if g.batched { 2 } else { 1 };
    let (sb, sc) = if g.batched {
        (strides[0], strides[1])
    } else {
        (0, strides[0])
    };
    (sb, sc, three(&strides[lead..], 0))
}

pub fn im2col_meta(
    self_: &[usize],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> KResult<Vec<Vec<usize>>> {
    let g = Geometry::new("im2col", self_, kernel_size, dilation, padding, stride)?;
    Ok(vec![g.cols_shape()])
}

/// `im2col`: `out[b, c*K + k, l]` is the image element under kernel offset `k` of block `l`
/// (0 in the padding). Parallel over `(b, c)` planes.
pub fn im2col<T: Element>(
    self_: Src<'_, T>,
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
    mut out: Dst<'_, T>,
) -> KResult<()> {
    let g = Geometry::new(
        "im2col",
        &self_.layout.sizes,
        kernel_size,
        dilation,
        padding,
        stride,
    )?;
    let o = contiguous_out(&mut out)?;
    let plane = g.kernel_len() * g.block_len();
    if o.is_empty() || plane == 0 {
        return Ok(());
    }
    let (sb, sc, ss) = image_strides(&g, &self_.layout.strides);
    let (data, base) = (self_.data, self_.layout.offset);
    let fill = |bc: usize, chunk: &mut [T]| {
        let (b, c) = (bc / g.channels, bc % g.channels);
        let origin = base + b * sb + c * sc;
        let mut w = 0;
        for kd in 0..g.kernel[0] {
            for kh in 0..g.kernel[1] {
                for kw in 0..g.kernel[2] {
                    for od in 0..g.blocks[0] {
                        let id = g.source(0, od, kd);
                        for oh in 0..g.blocks[1] {
                            let row = match (id, g.source(1, oh, kh)) {
                                (Some(i), Some(j)) => Some(origin + i * ss[0] + j * ss[1]),
                                _ => None,
                            };
                            for ow in 0..g.blocks[2] {
                                chunk[w] = match (row, g.source(2, ow, kw)) {
                                    (Some(r), Some(k)) => data[r + k * ss[2]],
                                    _ => T::default(),
                                };
                                w += 1;
                            }
                        }
                    }
                }
            }
        }
    };
    if fan_out(o.len() >= 1 << 15) {
        par_chunks_mut(o, plane, &fill);
    } else {
        o.chunks_mut(plane)
            .enumerate()
            .for_each(|(i, c)| fill(i, c));
    }
    Ok(())
}

/// The image shape `col2im` produces for columns `cols` and `output_size`.
fn col2im_geometry(
    cols: &[usize],
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> KResult<(Geometry, Vec<usize>)> {
    let n = output_size.len();
    if cols.len() != 2 && cols.len() != 3 {
        return Err(KernelError::shape(format!(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: {cols:?}"
        )));
    }
    if !(1..=3).contains(&n) || output_size.iter().any(|&s| s < 0) {
        return Err(KernelError::shape(format!(
            "expected output_size to have 1 to 3 non-negative values, but got output_size={output_size:?}"
        )));
    }
    let batched = cols.len() == 3;
    let rows = cols[cols.len() - 2];
    let kernel = expand("kernel_size", kernel_size, n, 1)?;
    let k = kernel
        .iter()
        .try_fold(1usize, |acc, &v| acc.checked_mul(v))
        .ok_or_else(|| {
            KernelError::shape(format!(
                "kernel_size={kernel_size:?} overflows: its product does not fit"
            ))
        })?;
    if !rows.is_multiple_of(k) {
        return Err(KernelError::shape(format!(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={rows} and kernel_size={kernel_size:?}"
        )));
    }
    let mut image: Vec<usize> = Vec::with_capacity(n + 2);
    if batched {
        image.push(cols[0]);
    }
    image.push(rows / k);
    image.extend(output_size.iter().map(|&s| s as usize));
    let full = |v: &[i64], name: &str, min| -> KResult<Vec<i64>> {
        Ok(expand(name, v, n, min)?
            .into_iter()
            .map(|x| x as i64)
            .collect())
    };
    let g = Geometry::new(
        "col2im",
        &image,
        &full(kernel_size, "kernel_size", 1)?,
        dilation,
        padding,
        stride,
    )?;
    let l = cols[cols.len() - 1];
    if l != g.block_len() {
        return Err(KernelError::shape(format!(
            "Given output_size={output_size:?}, kernel_size={kernel_size:?}, dilation={dilation:?}, padding={padding:?}, stride={stride:?}, expected size of input's dimension 2 to match the calculated number of sliding blocks {}, but got input.size(2)={l}.",
            g.block_len()
        )));
    }
    Ok((g, image))
}

pub fn col2im_meta(
    self_: &[usize],
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> KResult<Vec<Vec<usize>>> {
    let (_, image) = col2im_geometry(self_, output_size, kernel_size, dilation, padding, stride)?;
    Ok(vec![image])
}

/// `col2im`: the image whose element sums every column entry that `im2col` would have read
/// from it. Accumulates in `T::Compute`; parallel over `(b, c)` planes.
pub fn col2im<T: Element>(
    self_: Src<'_, T>,
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
    mut out: Dst<'_, T>,
) -> KResult<()> {
    let (g, _) = col2im_geometry(
        &self_.layout.sizes,
        output_size,
        kernel_size,
        dilation,
        padding,
        stride,
    )?;
    let cols = row_major(&self_);
    let o = contiguous_out(&mut out)?;
    let image: usize = g.size.iter().product();
    if o.is_empty() || image == 0 {
        return Ok(());
    }
    let plane = g.kernel_len() * g.block_len();
    let [_, h, w] = g.size;
    let (bw, sw) = (g.blocks[2], g.stride[2]);
    // Per kernel column `kw`: the input column of output column `ow` is
    // `ow * sw + shift[kw]`, inside the image for `ow` in `cols_in[kw]`.
    let shift: Vec<isize> = (0..g.kernel[2])
        .map(|kw| (kw * g.dilation[2]) as isize - g.padding[2] as isize)
        .collect();
    let cols_in: Vec<(usize, usize)> = shift
        .iter()
        .map(|&off| {
            let lo = if off >= 0 { 0 } else { (-off) as usize }
                .div_ceil(sw)
                .min(bw);
            let hi = (w as isize - off).max(0) as usize;
            (lo, hi.div_ceil(sw).min(bw))
        })
        .collect();
    let add = |bc: usize, chunk: &mut [T]| {
        let mut acc = vec![<T::Compute as Arith>::zero(); image];
        let src = &cols[bc * plane..(bc + 1) * plane];
        let mut r = 0;
        for kd in 0..g.kernel[0] {
            for kh in 0..g.kernel[1] {
                for kw in 0..g.kernel[2] {
                    for od in 0..g.blocks[0] {
                        let id = g.source(0, od, kd);
                        for oh in 0..g.blocks[1] {
                            let srow = &src[r..r + bw];
                            r += bw;
                            let (Some(i), Some(j)) = (id, g.source(1, oh, kh)) else {
                                continue;
                            };
                            // Columns `lo .. hi` land in the image, at `first + t * sw`.
                            let (lo, hi) = cols_in[kw];
                            if lo >= hi {
                                continue;
                            }
                            let first =
                                (i * h + j) * w + (lo as isize * sw as isize + shift[kw]) as usize;
                            if sw == 1 {
                                // Contiguous: a loop LLVM vectorises.
                                let dst = &mut acc[first..first + (hi - lo)];
                                for (a, v) in dst.iter_mut().zip(&srow[lo..hi]) {
                                    *a = a.add(v.up());
                                }
                            } else {
                                for (t, v) in srow[lo..hi].iter().enumerate() {
                                    let a = &mut acc[first + t * sw];
                                    *a = a.add(v.up());
                                }
                            }
                        }
                    }
                }
            }
        }
        chunk.iter_mut().zip(acc).for_each(|(o, a)| *o = T::down(a));
    };
    if fan_out(o.len() >= 1 << 15) {
        par_chunks_mut(o, image, &add);
    } else {
        o.chunks_mut(image).enumerate().for_each(|(i, c)| add(i, c));
    }
    Ok(())
}
