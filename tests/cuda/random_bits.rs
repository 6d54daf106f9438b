//! rand / randn / randint on CUDA give exactly the CPU's numbers: both devices run the same
//! Philox4x32-10 stream, and Box–Muller's log and cosine are `kiln_kernels::box_muller`'s
//! (correctly rounded operations only, mirrored line for line in kernels/cuda/random.cu.j2),
//! not the two platforms' libm. The CPU side is checked against f64 / double-double
//! references in kernels/src/box_muller.rs; these tests need a GPU (`-- --ignored`).

use kiln::{DType, Device, Generator, Result, Tensor};
use std::sync::{Mutex, MutexGuard};

/// Serialises the tests in this binary that reseed the global generator (`rand_on` and
/// friends draw from it), so one test's draws cannot advance another's stream.
pub(crate) fn global_rng_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

const SEEDS: [u64; 4] = [0, 1, 12345, u64::MAX];
const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

/// Every element's bits, widened losslessly: floats through f64 (exact for every float
/// dtype, and `to_bits` tells -0.0 from 0.0), integers through i64.
fn bits(t: &Tensor) -> Result<Vec<u64>> {
    let t = t.cpu()?;
    Ok(if t.dtype().is_floating_point() {
        t.to_vec::<f64>()?.into_iter().map(f64::to_bits).collect()
    } else {
        t.to_vec::<i64>()?.into_iter().map(|v| v as u64).collect()
    })
}

/// The first index where `gpu` and `cpu` differ, with both values, for the failure message.
fn first_difference(gpu: &[u64], cpu: &[u64]) -> String {
    match gpu.iter().zip(cpu).position(|(a, b)| a != b) {
        Some(i) => format!(
            "element {i} of {}: gpu {:#x} ({}) vs cpu {:#x} ({})",
            cpu.len(),
            gpu[i],
            f64::from_bits(gpu[i]),
            cpu[i],
            f64::from_bits(cpu[i])
        ),
        None => format!("lengths {} vs {}", gpu.len(), cpu.len()),
    }
}

fn assert_same(gpu: &Tensor, cpu: &Tensor, what: &str) -> Result<()> {
    assert_eq!(gpu.device(), Device::Cuda(0), "{what}");
    assert_eq!(gpu.shape(), cpu.shape(), "{what}");
    assert_eq!(gpu.dtype(), cpu.dtype(), "{what}");
    let (g, c) = (bits(gpu)?, bits(cpu)?);
    assert!(g == c, "{what}: {}", first_difference(&g, &c));
    Ok(())
}

/// Shapes for seed number `k`: empty, tiny, non-powers of two across block boundaries, and
/// for one seed per dtype a large draw (about 1M elements).
fn shapes(k: usize, big: bool) -> Vec<Vec<usize>> {
    let mut s = vec![vec![0], vec![1], vec![255], vec![257, 3], vec![33, 17, 5]];
    if big {
        s.push(vec![(1 << 20) + 7]);
    } else {
        s.push(vec![65_537 + k]);
    }
    s
}

/// A GPU draw from the global generator seeded with `seed` against the CPU's draw from the
/// global generator and from `Generator::new(seed)` (the `*_with` variants).
fn check_first_draw(
    seed: u64,
    what: &str,
    on: impl Fn(Device) -> Result<Tensor>,
    with: impl Fn(&mut Generator) -> Result<Tensor>,
) -> Result<()> {
    kiln::manual_seed(seed);
    let gpu = on(Device::Cuda(0))?;
    kiln::manual_seed(seed);
    let cpu = on(Device::Cpu)?;
    let cpu_with = with(&mut Generator::new(seed))?;
    assert_same(&gpu, &cpu, &format!("{what}, seed {seed}"))?;
    assert_same(&gpu, &cpu_with, &format!("{what} vs *_with, seed {seed}"))
}

#[test]
#[ignore = "needs a CUDA device"]
fn rand_and_randn_on_cuda_are_the_cpus_bits() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    let _l = global_rng_lock();
    for (k, &seed) in SEEDS.iter().enumerate() {
        for (j, &dtype) in FLOATS.iter().enumerate() {
            for shape in shapes(k, j == k) {
                let s = shape.as_slice();
                check_first_draw(
                    seed,
                    &format!("rand {dtype:?} {shape:?}"),
                    |d| Tensor::rand_on(s, dtype, d),
                    |g| Tensor::rand_with(s, dtype, g),
                )?;
                check_first_draw(
                    seed,
                    &format!("randn {dtype:?} {shape:?}"),
                    |d| Tensor::randn_on(s, dtype, d),
                    |g| Tensor::randn_with(s, dtype, g),
                )?;
            }
        }
    }
    Ok(())
}

/// Box–Muller's arithmetic on many (u1, u2) pairs: 2^24 f32 samples reach about 63% of the
/// 2^24 cosine inputs, 2^22 f64 samples every binade of the log's.
#[test]
#[ignore = "needs a CUDA device"]
fn randn_on_cuda_is_the_cpus_bits_on_sixteen_million_samples() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    let _l = global_rng_lock();
    for (dtype, n) in [(DType::F32, 1usize << 24), (DType::F64, 1 << 22)] {
        check_first_draw(
            2024,
            &format!("randn {dtype:?} [{n}]"),
            |d| Tensor::randn_on([n], dtype, d),
            |g| Tensor::randn_with([n], dtype, g),
        )?;
    }
    Ok(())
}

/// `[low, high)` ranges for `dtype`: small, the dtype's full range, and (where the dtype
/// holds it) a range above 2^32 and all of int64.
fn ranges(dtype: DType) -> Vec<(i64, i64)> {
    let mut r = match dtype {
        DType::Bool => vec![(0, 2), (0, 1), (1, 2)],
        DType::U8 => vec![(0, 7), (0, 256), (250, 256)],
        DType::I8 => vec![(-3, 100), (-128, 128)],
        DType::I16 => vec![(-3, 100), (-32768, 32768)],
        DType::I32 => vec![(-3, 100), (i32::MIN as i64, i32::MAX as i64 + 1)],
        DType::F16 => vec![(-3, 100), (-65504, 65505), (2040, 2100)],
        _ => vec![(-3, 100), (i32::MIN as i64, i32::MAX as i64 + 1)],
    };
    if matches!(dtype, DType::I64 | DType::F32 | DType::F64 | DType::BF16) {
        r.extend([
            (-(1 << 40), 1 << 40),
            ((1 << 25) - 3, (1 << 25) + (1 << 18) + 5),
            (i64::MIN, i64::MAX),
            (i64::MIN / 3, i64::MAX / 2),
        ]);
    }
    r
}

#[test]
#[ignore = "needs a CUDA device"]
fn randint_on_cuda_is_the_cpus_bits() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    let _l = global_rng_lock();
    let dtypes = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];
    for (k, &seed) in SEEDS.iter().enumerate() {
        for (j, &dtype) in dtypes.iter().enumerate() {
            for (low, high) in ranges(dtype) {
                let shape = if j % 4 == k && low < 0 {
                    vec![1 << 20]
                } else {
                    vec![4099]
                };
                check_first_draw(
                    seed,
                    &format!("randint({low}, {high}) {dtype:?} {shape:?}"),
                    |d| Tensor::randint_on(low, high, shape.as_slice(), dtype, d),
                    |g| Tensor::randint_with(low, high, shape.as_slice(), dtype, g),
                )?;
            }
        }
    }
    Ok(())
}

/// Later draws: a generator's offset advances by one per draw whatever the device, so a
/// sequence of draws that mixes the GPU and the CPU equals the same sequence from a
/// `Generator` on the CPU alone.
#[test]
#[ignore = "needs a CUDA device"]
fn later_draws_on_cuda_advance_the_stream_as_on_the_cpu() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    let _l = global_rng_lock();
    let gpu = Device::Cuda(0);
    for seed in SEEDS {
        kiln::manual_seed(seed);
        let mixed = [
            Tensor::randn_on([1000], DType::F32, gpu)?,
            Tensor::rand_on([7, 9], DType::F64, Device::Cpu)?,
            Tensor::randint_on(-(1 << 40), 1 << 40, [513], DType::I64, gpu)?,
            Tensor::randn_on([31], DType::BF16, Device::Cpu)?,
            Tensor::randn_on([4097], DType::F64, gpu)?,
            Tensor::rand_on([300], DType::F16, gpu)?,
            Tensor::randint_on(0, 2, [77], DType::Bool, gpu)?,
            Tensor::randn_on([2049], DType::F16, gpu)?,
        ];
        let g = &mut Generator::new(seed);
        let cpu = [
            Tensor::randn_with([1000], DType::F32, g)?,
            Tensor::rand_with([7, 9], DType::F64, g)?,
            Tensor::randint_with(-(1 << 40), 1 << 40, [513], DType::I64, g)?,
            Tensor::randn_with([31], DType::BF16, g)?,
            Tensor::randn_with([4097], DType::F64, g)?,
            Tensor::rand_with([300], DType::F16, g)?,
            Tensor::randint_with(0, 2, [77], DType::Bool, g)?,
            Tensor::randn_with([2049], DType::F16, g)?,
        ];
        for (n, (m, c)) in mixed.iter().zip(&cpu).enumerate() {
            let what = format!("draw {n}, seed {seed}");
            assert_eq!(m.device().is_cuda(), n != 1 && n != 3, "{what}");
            let (a, b) = (bits(m)?, bits(c)?);
            assert!(a == b, "{what}: {}", first_difference(&a, &b));
        }
        // A draw after all of these lands on the same offset too.
        let next_gpu = Tensor::randn_on([100], DType::F32, gpu)?;
        let next_cpu = Tensor::randn_with([100], DType::F32, g)?;
        assert_same(&next_gpu, &next_cpu, &format!("ninth draw, seed {seed}"))?;
    }
    Ok(())
}

/// The same normal sample on both devices, cast to every float dtype, including values that
/// sit where half-precision rounding is delicate: the GPU rounds f32 to f16/bf16 once, to
/// nearest even, and so must the CPU.
#[test]
#[ignore = "needs a CUDA device"]
fn half_precision_randn_rounds_once_on_both_devices() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    let _l = global_rng_lock();
    let gpu = Device::Cuda(0);
    for dtype in [DType::F16, DType::BF16] {
        kiln::manual_seed(77);
        let wide = Tensor::randn_on([1 << 20], DType::F32, gpu)?;
        kiln::manual_seed(77);
        let narrow = Tensor::randn_on([1 << 20], dtype, gpu)?;
        // The GPU's f32 -> half cast is round-to-nearest-even (prelude.cuh), so the half draw
        // is the f32 draw rounded once.
        assert_same(&narrow, &wide.to_dtype(dtype)?, &format!("{dtype:?}"))?;
        let cpu = Tensor::randn_with([1 << 20], dtype, &mut Generator::new(77))?;
        assert_same(&narrow, &cpu, &format!("{dtype:?} vs cpu"))?;
    }
    Ok(())
}
