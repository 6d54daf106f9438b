//! Random tensors from a seedable [`Generator`] (ChaCha-based, via `rand`), and the global
//! default generator that [`manual_seed`] reseeds.

use super::{storage_numel, BufferElement, CpuBuffer, Tensor};
use crate::{DType, Error, Result};
use kiln_kernels::{with_dtype, Element};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use std::sync::Mutex;

/// PyTorch's default seed, so an unseeded program is still reproducible.
const DEFAULT_SEED: u64 = 67280421310721;

/// A source of random numbers. Two generators with the same seed give the same tensors.
pub struct Generator {
    rng: rand::rngs::StdRng,
}

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Generator {
            rng: rand::rngs::StdRng::seed_from_u64(seed),
        }
    }

    /// Reseeds in place.
    pub fn manual_seed(&mut self, seed: u64) {
        *self = Generator::new(seed);
    }
}

static DEFAULT: Mutex<Option<Generator>> = Mutex::new(None);

/// Reseeds the global generator used by `rand`, `randn`, `randint` and `nn` initialisers.
pub fn manual_seed(seed: u64) {
    *DEFAULT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Generator::new(seed));
}

/// Runs `f` with the global generator.
pub(crate) fn with_default<R>(f: impl FnOnce(&mut Generator) -> R) -> R {
    let mut g = DEFAULT.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(|| Generator::new(DEFAULT_SEED)))
}

fn float_only(op: &str, dtype: DType) -> Result<()> {
    if dtype.is_floating_point() {
        Ok(())
    } else {
        Err(Error::op(
            op,
            format!(
                "\"{op}\" not implemented for '{}'",
                dtype.scalar_type_name()
            ),
        ))
    }
}

fn build<T: BufferElement>(
    op: &str,
    shape: &[usize],
    mut sample: impl FnMut() -> T,
) -> Result<Tensor> {
    let n = storage_numel(op, shape, T::DTYPE)?;
    let buf = CpuBuffer::from_fn(op, n, |_| sample())?;
    Ok(Tensor::from_buffer(buf, shape))
}

/// PyTorch's bounds check on `randint`'s range for `dtype`.
fn check_randint_bounds(low: i64, high: i64, dtype: DType) -> Result<()> {
    let (min, max): (i64, i64) = match dtype {
        DType::Bool => (0, 1),
        DType::U8 => (0, u8::MAX as i64),
        DType::I8 => (i8::MIN as i64, i8::MAX as i64),
        DType::I16 => (i16::MIN as i64, i16::MAX as i64),
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        DType::I64 | DType::F32 | DType::F64 => (i64::MIN, i64::MAX),
        DType::F16 => (-65504, 65504),
        DType::BF16 => (i64::MIN, i64::MAX),
    };
    for (v, name) in [(low, "from"), (high - 1, "to - 1")] {
        if v < min || v > max {
            return Err(Error::op(
                "randint",
                format!("{name} is out of bounds for {}", dtype.scalar_type_name()),
            ));
        }
    }
    Ok(())
}

impl Tensor {
    /// Uniform samples from `[0, 1)`, from the global generator.
    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        with_default(|g| Tensor::rand_with(shape, dtype, g))
    }

    /// Uniform samples from `[0, 1)`, from `gen`.
    pub fn rand_with(shape: &[usize], dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        float_only("uniform_", dtype)?;
        with_dtype!(dtype, T, {
            build("rand", shape, || T::from_f64(gen.rng.random::<f64>()))
        })
    }

    /// Standard normal samples, from the global generator.
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        with_default(|g| Tensor::randn_with(shape, dtype, g))
    }

    /// Standard normal samples, from `gen`.
    pub fn randn_with(shape: &[usize], dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        float_only("normal_", dtype)?;
        with_dtype!(dtype, T, {
            build("randn", shape, || {
                T::from_f64(StandardNormal.sample(&mut gen.rng))
            })
        })
    }

    /// Integers uniform in `[low, high)`, from the global generator.
    pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
        with_default(|g| Tensor::randint_with(low, high, shape, dtype, g))
    }

    /// Integers uniform in `[low, high)`, from `gen`.
    pub fn randint_with(
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        if low >= high {
            return Err(Error::op(
                "randint",
                format!(
                    "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
                ),
            ));
        }
        check_randint_bounds(low, high, dtype)?;
        // Drawn as i64 and converted once: going through f64 would round values beyond 2^53
        // and could reach `high`.
        with_dtype!(dtype, T, {
            build("randint", shape, || {
                T::from_i64(gen.rng.random_range(low..high))
            })
        })
    }

    /// A random permutation of `0..n` as int64, from the global generator.
    pub fn randperm(n: usize) -> Result<Tensor> {
        storage_numel("randperm", &[n], DType::I64)?;
        let mut buf = CpuBuffer::from_fn("randperm", n, |i| i as i64)?;
        let v = i64::slice_mut(&mut buf).expect("allocated as int64");
        with_default(|g| {
            for i in (1..n).rev() {
                v.swap(i, g.rng.random_range(0..=i));
            }
        });
        Ok(Tensor::from_buffer(buf, &[n]))
    }
}
