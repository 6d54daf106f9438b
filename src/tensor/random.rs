//! Random tensors from a seedable [`Generator`] (ChaCha-based, via `rand`), and the global
//! default generator that [`manual_seed`] reseeds.

use super::{BufferElement, Storage, Tensor};
use crate::{DType, Error, Layout, Result};
use kiln_kernels::{with_dtype, Element};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use std::sync::{Arc, Mutex};

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

fn build(shape: &[usize], dtype: DType, mut sample: impl FnMut() -> f64) -> Tensor {
    let n: usize = shape.iter().product();
    let buf = with_dtype!(dtype, T, {
        T::wrap((0..n).map(|_| T::from_f64(sample())).collect())
    });
    Tensor::from_storage(
        Arc::new(Storage::new(buf)),
        Layout::contiguous(shape),
        dtype,
    )
}

impl Tensor {
    /// Uniform samples from `[0, 1)`, from the global generator.
    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        with_default(|g| Tensor::rand_with(shape, dtype, g))
    }

    /// Uniform samples from `[0, 1)`, from `gen`.
    pub fn rand_with(shape: &[usize], dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        float_only("uniform_", dtype)?;
        Ok(build(shape, dtype, || gen.rng.random::<f64>()))
    }

    /// Standard normal samples, from the global generator.
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        with_default(|g| Tensor::randn_with(shape, dtype, g))
    }

    /// Standard normal samples, from `gen`.
    pub fn randn_with(shape: &[usize], dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        float_only("normal_", dtype)?;
        Ok(build(shape, dtype, || StandardNormal.sample(&mut gen.rng)))
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
        Ok(build(shape, dtype, || {
            gen.rng.random_range(low..high) as f64
        }))
    }

    /// A random permutation of `0..n` as int64, from the global generator.
    pub fn randperm(n: usize) -> Result<Tensor> {
        with_default(|g| {
            let mut v: Vec<i64> = (0..n as i64).collect();
            for i in (1..n).rev() {
                v.swap(i, g.rng.random_range(0..=i));
            }
            Tensor::from_vec(v, &[n])
        })
    }
}
