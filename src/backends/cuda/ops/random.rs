//! rand / randn / randint on CUDA: one Philox4x32-10 block per element
//! (kernels/cuda/random.cu.j2), the same stream the CPU draws from (kiln_kernels::philox).

use super::{gpu_of, grid, operand};
use crate::backends::cuda::launchers::random as kernels;
use crate::{Result, Tensor};
use kiln_kernels::random::{uniform_bits, Distribution};

/// Fills `out` (fresh, contiguous, on a GPU) with draw `(seed, offset)` of `dist`.
pub(crate) fn fill(
    op: &str,
    out: &Tensor,
    dist: Distribution,
    seed: u64,
    offset: u64,
) -> Result<()> {
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let o = operand(op, out)?;
    let dtype = out.dtype();
    let n_i = n as i64;
    let bits = uniform_bits(dtype) as i32;
    let cfg = grid(n);
    debug_assert!(dtype.is_floating_point() || matches!(dist, Distribution::Int { .. }));
    // SAFETY: `out` holds n elements of `dtype` on this GPU, fresh and contiguous; the
    // kernels write element i from Philox block (seed, offset + i) and read nothing else.
    unsafe {
        match dist {
            Distribution::Uniform => {
                kernels::rand_uniform(&gpu, op, dtype, cfg, &o, seed, offset, n_i, bits)
            }
            Distribution::Normal => {
                kernels::rand_normal(&gpu, op, dtype, cfg, &o, seed, offset, n_i)
            }
            Distribution::Int { low, range } => {
                kernels::rand_int(&gpu, op, dtype, cfg, &o, seed, offset, n_i, low, range)
            }
        }
    }?;
    Ok(())
}
