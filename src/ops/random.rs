//! Random tensors from a seedable [`Generator`], and the global default generator that
//! [`manual_seed`] reseeds.
//!
//! Every device draws from one counter-based stream (Philox4x32-10, see
//! `kiln_kernels::philox`): element `i` of a generator's `n`-th draw depends only on the seed,
//! `n` and `i`. So a seed gives the same numbers on the CPU and on a GPU, and
//! `rand_on(shape, dtype, cuda)` equals `rand(shape, dtype).to_device(cuda)`; PyTorch uses two
//! unrelated generators there (mt19937 and Philox).

use crate::dispatch::backend;
use crate::tensor::dims::{new_shape, IntoDims};
use crate::tensor::{storage_numel, BufferElement, CpuBuffer, Tensor};
use crate::{DType, Device, Error, Result};
use kiln_kernels::philox;
use kiln_kernels::random::Distribution;
use std::sync::Mutex;

/// PyTorch's default seed, so an unseeded program is still reproducible.
const DEFAULT_SEED: u64 = 67280421310721;

/// A source of random numbers. Two generators with the same seed give the same tensors, on
/// every device.
#[derive(Clone, Debug)]
pub struct Generator {
    seed: u64,
    /// How many draws this generator has made: the next draw's Philox counter offset.
    offset: u64,
}

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Generator { seed, offset: 0 }
    }

    /// Reseeds in place.
    pub fn manual_seed(&mut self, seed: u64) {
        *self = Generator::new(seed);
    }

    /// The seed this generator started from (PyTorch's `initial_seed`).
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    /// The generator's whole state (PyTorch's `Generator.get_state`).
    pub fn get_state(&self) -> RngState {
        RngState {
            seed: self.seed,
            offset: self.offset,
        }
    }

    /// Puts the generator back in `state` (PyTorch's `Generator.set_state`): the draws that
    /// follow repeat those that followed when the state was taken.
    pub fn set_state(&mut self, state: RngState) {
        self.seed = state.seed;
        self.offset = state.offset;
    }

    /// The `(seed, offset)` of a new draw; later draws get later offsets.
    fn next_draw(&mut self) -> (u64, u64) {
        let offset = self.offset;
        self.offset = self.offset.wrapping_add(1);
        (self.seed, offset)
    }
}

/// A [`Generator`]'s state: PyTorch's `torch.get_rng_state()` returns it as a byte tensor
/// (mt19937's 5 KB); kiln's counter-based generator is wholly described by its seed and the
/// number of draws it has made (the next draw's Philox offset), so the state is these two
/// numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RngState {
    /// The seed the generator started from.
    pub seed: u64,
    /// How many draws it has made since.
    pub offset: u64,
}

static DEFAULT: Mutex<Option<Generator>> = Mutex::new(None);

/// The global generator's state (PyTorch's `torch.get_rng_state()`).
///
/// ```
/// let state = kiln::get_rng_state();
/// let a = kiln::Tensor::rand([3], kiln::DType::F32)?;
/// kiln::set_rng_state(state);
/// let b = kiln::Tensor::rand([3], kiln::DType::F32)?;
/// assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?);
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn get_rng_state() -> RngState {
    with_default(|g| g.get_state())
}

/// Puts the global generator in `state` (PyTorch's `torch.set_rng_state()`).
pub fn set_rng_state(state: RngState) {
    with_default(|g| g.set_state(state))
}

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
        Err(Error::dtype(
            op,
            format!(
                "\"{op}\" not implemented for '{}'",
                dtype.scalar_type_name()
            ),
        ))
    }
}

/// A fresh `shape` tensor of `dtype` on `device` holding one draw of `dist` from `gen`.
fn sample(
    op: &str,
    shape: &[usize],
    dtype: DType,
    device: Device,
    dist: Distribution,
    gen: &mut Generator,
) -> Result<Tensor> {
    let out = Tensor::alloc_empty_on(op, shape, dtype, device)?;
    // A meta tensor has no values to draw, and draws nothing from the stream (as PyTorch).
    if device.is_meta() {
        return Ok(out);
    }
    let (seed, offset) = gen.next_draw();
    backend(device).fill_random(op, &out, dist, seed, offset)?;
    Ok(out)
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
            return Err(Error::value(
                "randint",
                format!("{name} is out of bounds for {}", dtype.scalar_type_name()),
            ));
        }
    }
    Ok(())
}

/// `randint`'s argument checks; the range as a `Distribution`.
fn int_range(low: i64, high: i64, dtype: DType) -> Result<Distribution> {
    if low >= high {
        return Err(Error::value(
            "randint",
            format!("random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"),
        ));
    }
    check_randint_bounds(low, high, dtype)?;
    Ok(Distribution::Int {
        low,
        range: high.wrapping_sub(low) as u64,
    })
}

impl Tensor {
    /// Uniform samples from `[0, 1)`, from the global generator.
    pub fn rand(shape: impl IntoDims, dtype: DType) -> Result<Tensor> {
        Tensor::rand_on(shape, dtype, Device::Cpu)
    }

    /// Uniform samples from `[0, 1)` on `device`, from the global generator.
    pub fn rand_on(shape: impl IntoDims, dtype: DType, device: Device) -> Result<Tensor> {
        let shape = &new_shape("rand", shape)?;
        float_only("uniform_", dtype)?;
        with_default(|g| sample("rand", shape, dtype, device, Distribution::Uniform, g))
    }

    /// Uniform samples from `[0, 1)`, from `gen`.
    pub fn rand_with(shape: impl IntoDims, dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        let shape = &new_shape("rand", shape)?;
        float_only("uniform_", dtype)?;
        sample(
            "rand",
            shape,
            dtype,
            Device::Cpu,
            Distribution::Uniform,
            gen,
        )
    }

    /// Standard normal samples, from the global generator.
    pub fn randn(shape: impl IntoDims, dtype: DType) -> Result<Tensor> {
        Tensor::randn_on(shape, dtype, Device::Cpu)
    }

    /// Standard normal samples on `device`, from the global generator.
    pub fn randn_on(shape: impl IntoDims, dtype: DType, device: Device) -> Result<Tensor> {
        let shape = &new_shape("randn", shape)?;
        float_only("normal_", dtype)?;
        with_default(|g| sample("randn", shape, dtype, device, Distribution::Normal, g))
    }

    /// Standard normal samples, from `gen`.
    pub fn randn_with(shape: impl IntoDims, dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        let shape = &new_shape("randn", shape)?;
        float_only("normal_", dtype)?;
        sample(
            "randn",
            shape,
            dtype,
            Device::Cpu,
            Distribution::Normal,
            gen,
        )
    }

    /// Integers uniform in `[low, high)`, from the global generator.
    pub fn randint(low: i64, high: i64, shape: impl IntoDims, dtype: DType) -> Result<Tensor> {
        Tensor::randint_on(low, high, shape, dtype, Device::Cpu)
    }

    /// Integers uniform in `[low, high)` on `device`, from the global generator.
    pub fn randint_on(
        low: i64,
        high: i64,
        shape: impl IntoDims,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let shape = &new_shape("randint", shape)?;
        let dist = int_range(low, high, dtype)?;
        with_default(|g| sample("randint", shape, dtype, device, dist, g))
    }

    /// Integers uniform in `[low, high)`, from `gen`.
    pub fn randint_with(
        low: i64,
        high: i64,
        shape: impl IntoDims,
        dtype: DType,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        let shape = &new_shape("randint", shape)?;
        let dist = int_range(low, high, dtype)?;
        sample("randint", shape, dtype, Device::Cpu, dist, gen)
    }

    /// A random permutation of `0..n` as int64, from the global generator.
    pub fn randperm(n: usize) -> Result<Tensor> {
        storage_numel("randperm", &[n], DType::I64)?;
        let mut buf = CpuBuffer::from_fn("randperm", n, |i| i as i64)?;
        let v = i64::slice_mut(&mut buf).expect("allocated as int64");
        let (seed, offset) = with_default(|g| g.next_draw());
        // Fisher–Yates; swap partner j in 0..=i from element i of the draw, scaled by a
        // 64x64 -> 128-bit multiply (unbiased to 2^-64 per value).
        for i in (1..n).rev() {
            let w = philox::block(seed, offset, i as u64);
            let x = (u64::from(w[1]) << 32) | u64::from(w[0]);
            let j = ((u128::from(x) * (i as u128 + 1)) >> 64) as usize;
            v.swap(i, j);
        }
        Ok(Tensor::from_buffer(buf, &[n]))
    }
}
