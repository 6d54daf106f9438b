//! sort and mode on CUDA (kernels/cuda/sort.cu.j2): a segmented bitonic sort of each row of
//! the [lines, n] view (the sorted dim moved last, no copy), stable because entries compare
//! on (value, original index); mode takes the longest run of each stably sorted row.

use super::scan::lines;
use super::{alloc, gpu_of, grid, operand_with, rows, KilnTensor};
use crate::backends::cuda::launchers::sort as kernels;
use crate::backends::cuda::runtime::Gpu;
use crate::{DType, Error, Layout, Result, Tensor};
use cudarc::driver::LaunchConfig;

/// Entries one `sort_tile` block sorts in shared memory: KILN_SORT_TILE in sort.cu.j2.
const TILE: usize = 2048;
/// Threads of a `sort_tile` block: KILN_SORT_THREADS in sort.cu.j2.
const THREADS: u32 = 512;

/// The device address of a fresh contiguous CUDA tensor's first element.
fn ptr(op: &str, t: &Tensor) -> Result<u64> {
    t.storage()
        .device_ptr()
        .ok_or_else(|| Error::device(op, "kiln internal error: scratch buffer not on CUDA"))
}

/// One `sort_tile_<T>` launch: stages k = k_lo ..= k_hi on every tile of the virtual
/// [count, p] array (see the kernel for `from_input` / `to_output`).
struct Tile<'a> {
    op: &'a str,
    gpu: &'a Gpu,
    dtype: DType,
    input: &'a KilnTensor,
    values: &'a KilnTensor,
    indices: &'a KilnTensor,
    scratch: (u64, u64),
    count: usize,
    n: usize,
    p: usize,
    descending: bool,
}

impl Tile<'_> {
    fn launch(&self, k_lo: usize, k_hi: usize, from_input: bool, to_output: bool) -> Result<()> {
        let tiles = (self.count * self.p).div_ceil(TILE);
        let cfg = LaunchConfig {
            grid_dim: (tiles.clamp(1, 65_535) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (keys, idx) = self.scratch;
        let (c, n, p) = (self.count as i64, self.n as i64, self.p as i64);
        let (lo, hi) = (k_lo as i64, k_hi as i64);
        // SAFETY: matches `sort_tile_<T>(KilnTensor values, KilnTensor indices, KilnTensor
        // in, unsigned long long keys, unsigned long long idx, long long lines, long long n,
        // long long p, long long k_lo, long long k_hi, bool from_input, bool to_output, bool
        // descending)`. `in`, `values` and `indices` are valid [count, n] views of live
        // tensors of T, T and int64 (the outputs fresh, so not overlapping `in`); the scratch
        // pointers, read or written only when !from_input / !to_output, which happens only
        // when p > TILE, head live buffers of count * p elements of T and int64.
        unsafe {
            kernels::sort_tile(
                self.gpu,
                self.op,
                self.dtype,
                cfg,
                self.values,
                self.indices,
                self.input,
                keys,
                idx,
                c,
                n,
                p,
                lo,
                hi,
                from_input,
                to_output,
                self.descending,
            )
        }
    }
}

/// Sorts each row of `input` (a [count, n] view of dtype `dtype`) into the [count, n] views
/// `values` and `indices`: stable, NaN above every number.
#[allow(clippy::too_many_arguments)]
fn sort_rows(
    op: &str,
    gpu: &Gpu,
    dtype: DType,
    ordinal: usize,
    input: &KilnTensor,
    (count, n): (usize, usize),
    descending: bool,
    values: &KilnTensor,
    indices: &KilnTensor,
) -> Result<()> {
    let too_big = || {
        Error::shape(
            op,
            format!("{count} rows of {n} elements are too many to sort"),
        )
    };
    let p = n.checked_next_power_of_two().ok_or_else(too_big)?;
    let total = count.checked_mul(p).ok_or_else(too_big)?;
    let mut tile = Tile {
        op,
        gpu,
        dtype,
        input,
        values,
        indices,
        scratch: (0, 0),
        count,
        n,
        p,
        descending,
    };
    if p <= TILE {
        // Whole rows fit a tile: one launch from the input to the outputs.
        return tile.launch(2, p, true, true);
    }
    // Scratch for the padded rows; freed when this returns, which is safe: the caching
    // allocator hands a block out again only to work queued after these kernels on the
    // same stream.
    let keys = alloc(op, &[total], dtype, ordinal)?;
    let idx = alloc(op, &[total], DType::I64, ordinal)?;
    tile.scratch = (ptr(op, &keys)?, ptr(op, &idx)?);
    tile.launch(2, TILE, true, false)?;
    let (total_i, p_i) = (total as i64, p as i64);
    let mut k = 2 * TILE;
    while k <= p {
        let mut j = k / 2;
        while j >= TILE {
            let (k_i, j_i) = (k as i64, j as i64);
            // SAFETY: matches `sort_merge_<T>(unsigned long long keys, unsigned long long
            // idx, long long total, long long p, long long k, long long j, bool
            // descending)`; both pointers head live buffers of `total` elements of T and
            // int64, and every pair (a, a + j) it touches lies below `total` (j < p, p
            // divides total).
            unsafe {
                kernels::sort_merge(
                    gpu,
                    op,
                    dtype,
                    grid(total / 2),
                    tile.scratch.0,
                    tile.scratch.1,
                    total_i,
                    p_i,
                    k_i,
                    j_i,
                    descending,
                )
            }?;
            j /= 2;
        }
        tile.launch(k, k, false, k == p)?;
        k *= 2;
    }
    Ok(())
}

pub fn sort(
    op: &str,
    self_: &Tensor,
    dim: i64,
    descending: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let (layout, count, n) = lines(op, self_, dim)?;
    if count == 0 || n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, self_)?;
    let x = operand_with(op, self_, &layout)?;
    let v = operand_with(op, values, &lines(op, values, dim)?.0)?;
    let i = operand_with(op, indices, &lines(op, indices, dim)?.0)?;
    sort_rows(
        op,
        &gpu,
        self_.dtype(),
        self_.device().index(),
        &x,
        (count, n),
        descending,
        &v,
        &i,
    )
}

pub fn mode(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _keepdim: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let (layout, count, n) = lines(op, self_, dim)?;
    if count == 0 || n == 0 {
        return Ok(()); // the meta function rejects n == 0; count == 0 has no outputs
    }
    let gpu = gpu_of(op, self_)?;
    let (dtype, ordinal) = (self_.dtype(), self_.device().index());
    let x = operand_with(op, self_, &layout)?;
    // Each row sorted ascending and stably into contiguous [count, n] buffers.
    let numel = count * n;
    let keys = alloc(op, &[numel], dtype, ordinal)?;
    let idx = alloc(op, &[numel], DType::I64, ordinal)?;
    let flat = Layout::contiguous(&[numel]);
    sort_rows(
        op,
        &gpu,
        dtype,
        ordinal,
        &x,
        (count, n),
        false,
        &operand_with(op, &keys, &flat)?,
        &operand_with(op, &idx, &flat)?,
    )?;
    let out = Layout::contiguous(&[count]);
    let (vals, ids) = (
        operand_with(op, values, &out)?,
        operand_with(op, indices, &out)?,
    );
    let (keys_p, idx_p) = (ptr(op, &keys)?, ptr(op, &idx)?);
    let (c, nn) = (count as i64, n as i64);
    // SAFETY: matches `mode_<T>(KilnTensor values, KilnTensor indices, unsigned long long
    // keys, unsigned long long idx, long long lines, long long n)` launched with
    // KILN_MODE_THREADS (256, `rows`) threads; `keys`/`idx` head live contiguous buffers of
    // count * n elements of T and int64 (n > 0), `values` and `indices` are fresh contiguous
    // tensors of `count` elements of T and int64.
    unsafe {
        kernels::mode(
            &gpu,
            op,
            dtype,
            rows(count),
            &vals,
            &ids,
            keys_p,
            idx_p,
            c,
            nn,
        )
    }
}
