//! rand / randn / randint on CUDA: one Philox4x32-10 block per element
//! (kernels/cuda/random.cu.j2), the same stream the CPU draws from (kiln_kernels::philox).

use super::{gpu_of, grid, operand};
use crate::backends::cuda::runtime::driver_error;
use crate::{Result, Tensor};
use cudarc::driver::PushKernelArg;
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
    let (name, low, range) = match dist {
        Distribution::Uniform => ("rand_uniform", 0i64, 0u64),
        Distribution::Normal => ("rand_normal", 0, 0),
        Distribution::Int { low, range } => ("rand_int", low, range),
    };
    let f = gpu.function("random", &format!("{name}_{}", dtype.short_name()))?;
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&o).arg(&seed).arg(&offset).arg(&n_i);
    match dist {
        Distribution::Uniform => {
            b.arg(&bits);
        }
        Distribution::Normal => {}
        Distribution::Int { .. } => {
            b.arg(&low).arg(&range);
        }
    }
    debug_assert!(dtype.is_floating_point() || matches!(dist, Distribution::Int { .. }));
    // SAFETY: the parameters match the kernel's signature in random.cu.j2 for this
    // distribution (`KilnTensor, u64 seed, u64 offset, i64 n` then `int bits` for uniform or
    // `i64 low, u64 range` for integers); `out` holds n elements of `dtype` on this GPU.
    unsafe { b.launch(grid(n)) }.map_err(|e| driver_error(op, e))?;
    Ok(())
}
