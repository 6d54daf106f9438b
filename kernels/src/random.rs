//! The distributions of kiln's random tensors, element by element: what the CPU backend
//! computes per element and kernels/cuda/random.cu.j2 repeats, from one Philox stream
//! ([`crate::philox`]), so a seed gives the same numbers on every device.

use crate::philox;
use crate::{DType, Element};

/// What one element of a draw is.
#[derive(Clone, Copy, Debug)]
pub enum Distribution {
    /// Uniform in `[0, 1)`.
    Uniform,
    /// Standard normal.
    Normal,
    /// Uniform over the integers `[low, low + range)`.
    Int { low: i64, range: u64 },
}

/// Bits of uniform resolution for `dtype`: its precision, so every value is exact in it.
pub fn uniform_bits(dtype: DType) -> u32 {
    match dtype {
        DType::F16 => 11,
        DType::BF16 => 8,
        _ => 24,
    }
}

/// `v` as a floating `T`, rounded once to nearest even as a GPU's f32 -> f16/bf16 conversion
/// does. Not `T::from_f64`: the half crate's `from_f64` rounds bf16 (and f16 on CPUs
/// without F16C) from the top 20 mantissa bits only, which rounds about one normal sample in
/// 20,000 the other way.
fn from_f32<T: Element>(v: f32) -> T {
    match T::DTYPE {
        DType::F16 => T::from_f64(half::f16::from_f32(v).to_f64()),
        DType::BF16 => T::from_f64(half::bf16::from_f32(v).to_f64()),
        _ => T::from_f64(f64::from(v)),
    }
}

/// Element `i` of draw `(seed, offset)` as a `T`. kernels/cuda/random.cu.j2 converts the
/// same way (for randint into bf16, `kiln_i64_to_bf16_as_cpu` repeats `T::from_i64`).
pub fn element<T: Element>(dist: Distribution, bits: u32, seed: u64, offset: u64, i: usize) -> T {
    let w = philox::block(seed, offset, i as u64);
    match dist {
        Distribution::Uniform if T::DTYPE == DType::F64 => {
            T::from_f64(philox::uniform_f64(w[0], w[1]))
        }
        Distribution::Uniform => from_f32(philox::uniform_f32(w[0], bits)),
        Distribution::Normal if T::DTYPE == DType::F64 => T::from_f64(philox::normal_f64(w)),
        Distribution::Normal => from_f32(philox::normal_f32(w)),
        Distribution::Int { low, range } => T::from_i64(philox::int_in(w, low, range)),
    }
}
