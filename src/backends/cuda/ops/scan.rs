//! cumsum, cumprod, logcumsumexp, cummax and cummin on CUDA (kernels/cuda/scan.cu.j2): each
//! tensor is viewed with the scanned dim last and scanned in parallel (a thread, a warp or a
//! block per line, by the line's length). (sort is in sort.rs.)

use super::{gpu_of, operand_with};
use crate::backends::cuda::launchers::scan as kernels;
use crate::{DType, Error, Layout, Result, Tensor};
use cudarc::driver::LaunchConfig;

/// `t`'s layout with `dim` moved last (0-d as `[1]`), and the number of lines.
pub(super) fn lines(op: &str, t: &Tensor, dim: i64) -> Result<(Layout, usize, usize)> {
    let l = t.layout();
    if l.ndim() == 0 {
        let one = Layout {
            sizes: smallvec::smallvec![1],
            strides: smallvec::smallvec![1],
            offset: l.offset,
        };
        return Ok((one, 1, 1));
    }
    let d = kiln_kernels::layout::wrap_dim(dim, l.ndim()).map_err(|m| Error::op(op, m))?;
    let order: Vec<usize> = (0..l.ndim()).filter(|&k| k != d).chain([d]).collect();
    let layout = Layout {
        sizes: order.iter().map(|&k| l.sizes[k]).collect(),
        strides: order.iter().map(|&k| l.strides[k]).collect(),
        offset: l.offset,
    };
    let n = l.sizes[d];
    let count = l.numel().checked_div(n).unwrap_or(0);
    Ok((layout, count, n))
}

/// Threads per block of the scan kernels (`KILN_SCAN_THREADS` in scan.cu.j2).
const SCAN_THREADS: u32 = 256;

/// How a cumulative op walks its lines: `KILN_SCAN_THREAD`, `KILN_SCAN_WARP` or
/// `KILN_SCAN_BLOCK` of scan.cu.j2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScanShape {
    Thread = 0,
    Warp = 1,
    Block = 2,
}

/// The shape for `lines` lines of `n` elements: a line of at most 32 is cheapest walked by
/// one thread; up to 256 (two chunks of a warp) a warp per line wastes little; longer lines
/// get a block each unless there are enough lines (4096 warps, half an H100 full) for a
/// warp each to keep the GPU busy with fewer barriers.
fn scan_shape(lines: usize, n: usize) -> ScanShape {
    if n <= 32 {
        ScanShape::Thread
    } else if n <= 256 || lines >= 4096 {
        ScanShape::Warp
    } else {
        ScanShape::Block
    }
}

/// The launch for `shape` over `lines` lines.
fn scan_config(shape: ScanShape, lines: usize) -> LaunchConfig {
    let per_block = match shape {
        ScanShape::Thread => SCAN_THREADS as usize,
        ScanShape::Warp => SCAN_THREADS as usize / 32,
        ScanShape::Block => 1,
    };
    LaunchConfig {
        // Every shape strides over the lines, so the clamp only bounds the grid.
        grid_dim: (lines.div_ceil(per_block).clamp(1, 65_535 * 8) as u32, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `<kind>_<T>(out, in, lines, n, mode)`.
type Single = kernels::Cumsum;
/// `<kind>_<T>(values, indices, in, lines, n, mode)`.
type Pair = kernels::Cummax;

/// A scan kernel, with one output or values and indices.
#[derive(Clone, Copy)]
enum Kernel {
    One(Single),
    Two(Pair),
}

/// Launches the cumulative op `kernel` (`<kind>_<dtype>(outs..., in, lines, n, mode)`).
fn cumulative(op: &str, kernel: Kernel, input: &Tensor, outs: &[&Tensor], dim: i64) -> Result<()> {
    let (layout, count, n) = lines(op, input, dim)?;
    if count == 0 || n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, input)?;
    let x = operand_with(op, input, &layout)?;
    let ks = outs
        .iter()
        .map(|o| operand_with(op, o, &lines(op, o, dim)?.0))
        .collect::<Result<Vec<_>>>()?;
    let shape = scan_shape(count, n);
    let (c, nn, mode) = (count as i64, n as i64, shape as i32);
    let (cfg, dt) = (scan_config(shape, count), input.dtype());
    // SAFETY: matches `<kind>_<T>(KilnTensor outs..., KilnTensor in, long long lines, long
    // long n, int mode)` in scan.cu.j2, launched with its KILN_SCAN_THREADS threads per block;
    // every view is a permutation of a valid layout with `lines * n` elements and the
    // scanned dim last (n >= 1), outputs are fresh tensors of the input's shape.
    unsafe {
        match (kernel, ks.as_slice()) {
            (Kernel::One(k), [o]) => k(&gpu, op, dt, cfg, o, &x, c, nn, mode),
            (Kernel::Two(k), [v, i]) => k(&gpu, op, dt, cfg, v, i, &x, c, nn, mode),
            _ => Err(Error::value(
                op,
                format!(
                    "kiln internal error: a scan kernel given {} outputs",
                    ks.len()
                ),
            )),
        }
    }
}

pub fn cumsum(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _dtype: Option<DType>,
    out: &Tensor,
) -> Result<()> {
    cumulative(op, Kernel::One(kernels::cumsum), self_, &[out], dim)
}

pub fn cumprod(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _dtype: Option<DType>,
    out: &Tensor,
) -> Result<()> {
    cumulative(op, Kernel::One(kernels::cumprod), self_, &[out], dim)
}

pub fn logcumsumexp(op: &str, self_: &Tensor, dim: i64, out: &Tensor) -> Result<()> {
    cumulative(op, Kernel::One(kernels::logcumsumexp), self_, &[out], dim)
}

pub fn cummax(op: &str, self_: &Tensor, dim: i64, values: &Tensor, indices: &Tensor) -> Result<()> {
    cumulative(
        op,
        Kernel::Two(kernels::cummax),
        self_,
        &[values, indices],
        dim,
    )
}

pub fn cummin(op: &str, self_: &Tensor, dim: i64, values: &Tensor, indices: &Tensor) -> Result<()> {
    cumulative(
        op,
        Kernel::Two(kernels::cummin),
        self_,
        &[values, indices],
        dim,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_shapes_follow_line_length_and_count() {
        assert_eq!(scan_shape(1, 1), ScanShape::Thread);
        assert_eq!(scan_shape(1_000_000, 32), ScanShape::Thread);
        assert_eq!(scan_shape(1, 33), ScanShape::Warp);
        assert_eq!(scan_shape(1, 256), ScanShape::Warp);
        assert_eq!(scan_shape(1, 257), ScanShape::Block);
        assert_eq!(scan_shape(4095, 100_000), ScanShape::Block);
        assert_eq!(scan_shape(4096, 100_000), ScanShape::Warp);
    }

    #[test]
    fn scan_grids_cover_every_line_within_limits() {
        let g = |s, lines| scan_config(s, lines).grid_dim.0;
        assert_eq!(g(ScanShape::Thread, 1), 1);
        assert_eq!(g(ScanShape::Thread, 257), 2);
        assert_eq!(g(ScanShape::Warp, 9), 2);
        assert_eq!(g(ScanShape::Block, 3), 3);
        assert_eq!(g(ScanShape::Block, usize::MAX), 65_535 * 8);
        assert_eq!(scan_config(ScanShape::Warp, 5).block_dim.0, SCAN_THREADS);
    }
}
