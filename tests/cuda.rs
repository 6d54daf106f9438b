//! The device axis: CUDA requests without the feature or without a GPU fail with clear
//! errors; every generated CUDA kernel compiles to PTX (NVRTC needs no GPU); and, on a GPU
//! (`-- --ignored`), CUDA results match the CPU's.

use kiln::{DType, Device, Result, Tensor};

#[test]
fn cuda_without_a_usable_device_is_a_clear_error() {
    if kiln::cuda::is_available() {
        return; // the GPU tests below cover this machine
    }
    let x = Tensor::from([1f32, 2., 3.]);
    let e = x.to_device(Device::Cuda(0)).unwrap_err().to_string();
    assert!(e.contains("cannot use device cuda:0"), "{e}");
    #[cfg(not(feature = "cuda"))]
    assert!(e.contains("Torch not compiled with CUDA enabled"), "{e}");
    #[cfg(feature = "cuda")]
    assert!(
        e.contains("NVIDIA driver") || e.contains("no CUDA-capable device"),
        "{e}"
    );
    let e = Tensor::full_on([2], 1.0, DType::F32, Device::Cuda(0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot use device cuda:0"), "{e}");
    assert_eq!(kiln::cuda::device_count(), 0);
    assert_eq!(kiln::cuda::memory_allocated(0), 0);
}

#[test]
fn an_invalid_device_ordinal_is_an_error_everywhere() {
    let x = Tensor::from([1f32, 2.]);
    let e = x.to_device(Device::Cuda(64)).unwrap_err().to_string();
    assert!(e.contains("cannot use device cuda:64"), "{e}");
}

#[test]
fn to_device_on_the_same_device_returns_self() -> Result<()> {
    let x = Tensor::from([1f32, 2.]);
    assert!(x.to_device(Device::Cpu)?.is_same(&x));
    Ok(())
}

/// Every module the launchers in src/backends/cuda/ops load kernels from is generated: `scan` and
/// `fold` once were not, so cumsum, sort and the convolutions failed on a GPU with "no
/// generated CUDA module named 'scan'" while the PTX check below, which compiles only what
/// exists, passed.
#[cfg(feature = "cuda")]
#[test]
fn every_module_the_launchers_use_is_generated() {
    let names = kiln::cuda::module_names();
    for m in [
        "copy", "reduce", "softmax", "index", "random", "scan", "fold", "optim", "sort",
    ] {
        assert!(names.contains(&m), "no CUDA module '{m}' in {names:?}");
    }
}

/// Every generated module compiles with NVRTC and assembles (NVRTC's built-in ptxas, the
/// path a GPU run takes) for Ampere and Hopper without register spills. CI installs NVRTC
/// from its PyPI wheel and sets KILN_REQUIRE_NVRTC=1, so there a missing library fails
/// instead of skipping. `KILN_ASSEMBLE_ARCHS=80,90` (the default) picks the architectures;
/// `KILN_CUDA_MODULES=expm1,softmax` only the modules whose names contain one of the words
/// (`scripts/cuda-check` sets both).
#[cfg(feature = "cuda")]
#[test]
fn every_generated_cuda_kernel_assembles_without_spills() {
    if !kiln::cuda::nvrtc_available() {
        assert!(
            std::env::var_os("KILN_REQUIRE_NVRTC").is_none(),
            "KILN_REQUIRE_NVRTC is set but libnvrtc could not be loaded (LD_LIBRARY_PATH?)"
        );
        eprintln!("CUDA assembly check skipped: NVRTC library not found (see .ci/run)");
        return;
    }
    let ((major, minor), supported) = kiln::cuda::nvrtc_info().expect("NVRTC's version");
    // Empty: compile every module to PTX only (NVRTC's front end, no ptxas), a quick check
    // of another NVRTC version.
    let archs: Vec<u32> = std::env::var("KILN_ASSEMBLE_ARCHS")
        .unwrap_or_else(|_| "80,90".into())
        .split(',')
        .filter(|a| !a.trim().is_empty())
        .map(|a| {
            a.trim()
                .parse()
                .expect("KILN_ASSEMBLE_ARCHS: numbers like 80,90")
        })
        .collect();
    for a in &archs {
        assert!(
            supported.contains(a),
            "NVRTC {major}.{minor} cannot build sm_{a}"
        );
    }
    let names = kiln::cuda::module_names();
    assert!(names.len() > 40, "{} modules", names.len());
    let wanted: Vec<String> = std::env::var("KILN_CUDA_MODULES")
        .unwrap_or_default()
        .split(',')
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty())
        .collect();
    let names: Vec<&str> = names
        .into_iter()
        .filter(|n| wanted.is_empty() || wanted.iter().any(|w| n.contains(w.as_str())))
        .collect();
    assert!(
        !names.is_empty(),
        "KILN_CUDA_MODULES={wanted:?} names no module; they are: {:?}",
        kiln::cuda::module_names()
    );
    if archs.is_empty() {
        for name in &names {
            let ptx = kiln::cuda::compile_ptx(name, "compute_75")
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(ptx.contains(".entry"), "{name}: PTX without kernels");
        }
        eprintln!(
            "{} CUDA modules compiled to PTX by NVRTC {major}.{minor}",
            names.len()
        );
        return;
    }
    let jobs: Vec<(&str, u32)> = names
        .iter()
        .flat_map(|n| archs.iter().map(move |&a| (*n, a)))
        .collect();
    // NVRTC programs are independent: assemble on every core (ptxas dominates).
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(name, arch)) = jobs.get(i) else {
                    break;
                };
                let r = kiln::cuda::assemble(name, arch);
                results.lock().unwrap().push((name, arch, r));
            });
        }
    });
    let mut failures = Vec::new();
    let mut max_regs = 0;
    for (name, arch, r) in results.into_inner().unwrap() {
        match r {
            Ok(rep) => {
                assert!(rep.cubin_bytes > 0, "{name} sm_{arch}: empty CUBIN");
                failures.extend(
                    rep.problems
                        .iter()
                        .map(|p| format!("{name} sm_{arch}: {p}")),
                );
                max_regs = max_regs.max(rep.max_registers);
            }
            Err(e) => failures.push(format!("{name} sm_{arch}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // PTX too, for the oldest architecture both CUDA 12 and 13 build (Turing).
    let ptx = kiln::cuda::compile_ptx("copy", "compute_75").expect("PTX for compute_75");
    assert!(ptx.contains(".entry"), "PTX without kernels");
    eprintln!(
        "{} CUDA modules assembled by NVRTC {major}.{minor} for sm_{archs:?}: no spills, \
         at most {max_regs} registers per thread",
        names.len()
    );
}

/// CUDA against the CPU. Ignored by default so that a machine without a GPU counts it as
/// skipped, not passed; on a GPU run `cargo test --features cuda --test cuda -- --ignored`
/// (the OpInfo runner covers every op on CUDA by itself).
#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test cuda -- --ignored"]
fn cuda_matches_cpu_where_a_gpu_exists() -> Result<()> {
    assert!(
        kiln::cuda::is_available(),
        "CUDA tests need a device: {}",
        Device::Cuda(0).ensure_available().unwrap_err()
    );
    let gpu = Device::Cuda(0);
    // Own generators: the random-stream test below reseeds the global one.
    let mut g = kiln::Generator::new(1);
    let a = Tensor::randn_with([33, 17], DType::F32, &mut g)?;
    let b = Tensor::randn_with([17, 9], DType::F32, &mut g)?;
    let (ga, gb) = (a.to_device(gpu)?, b.to_device(gpu)?);
    let close = |x: &Tensor, y: &Tensor, tol: f64| -> Result<()> {
        let (x, y) = (x.to_vec::<f64>()?, y.to_vec::<f64>()?);
        assert_eq!(x.len(), y.len());
        for (p, q) in x.iter().zip(&y) {
            assert!((p - q).abs() <= tol * (1.0 + q.abs()), "{p} vs {q}");
        }
        Ok(())
    };
    close(&ga.exp()?.cpu()?, &a.exp()?, 1e-5)?;
    close(&ga.add(&ga.t()?.t()?)?.cpu()?, &a.add(&a)?, 1e-6)?;
    close(&ga.mm(&gb)?.cpu()?, &a.mm(&b)?, 1e-4)?;
    close(&ga.sum_dim(&[1])?.cpu()?, &a.sum_dim(&[1])?, 1e-4)?;
    close(&ga.softmax(1)?.cpu()?, &a.softmax(1)?, 1e-5)?;
    close(
        &ga.argmax_with(Some(0), false)?.cpu()?,
        &a.argmax_with(Some(0), false)?,
        0.0,
    )?;
    let e = a.add(&gb).unwrap_err();
    assert_eq!(e.kind(), kiln::ErrorKind::Device);
    let e = e.to_string();
    assert!(
        e.contains("Expected all tensors to be on the same device"),
        "{e}"
    );
    // A 0-d CPU tensor joins a GPU pointwise op as a scalar (PyTorch's rule), and its
    // gradient comes back to the CPU; as the output of an in-place op it is still an error.
    let s = Tensor::scalar_tensor(2.5, DType::F32)?.requires_grad_(true)?;
    let y = ga.mul(&s)?;
    assert_eq!(y.device(), gpu);
    close(&y.cpu()?, &a.mul_scalar(2.5)?, 1e-6)?;
    y.sum()?.backward()?;
    let gs = s.grad().expect("grad of the CPU scalar");
    assert_eq!(gs.device(), Device::Cpu);
    close(&gs, &a.sum()?, 1e-4)?;
    let e = Tensor::scalar_tensor(1.0, DType::F32)?
        .add_(&ga.sum()?)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Expected all tensors to be on the same device"),
        "{e}"
    );
    assert!(ga.mm(&Tensor::ones((), DType::F32)?).is_err());
    // Autograd through CUDA ops leaves the gradient on the device.
    let x = ga.detach().requires_grad_(true)?;
    x.exp()?.sum()?.backward()?;
    let g = x.grad().expect("grad");
    assert_eq!(g.device(), gpu);
    close(&g.cpu()?, &a.exp()?, 1e-5)?;
    Ok(())
}

/// On a GPU, a seed gives the CPU's random numbers bit for bit: the device runs the same
/// Philox stream, and normal samples the same libm-free Box–Muller
/// (`kiln_kernels::box_muller`). tests/cuda/random_bits.rs checks this more widely.
#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test cuda -- --ignored"]
fn cuda_random_streams_match_the_cpu_where_a_gpu_exists() -> Result<()> {
    assert!(kiln::cuda::is_available(), "CUDA tests need a device");
    #[cfg(feature = "cuda")]
    let _l = random_bits::global_rng_lock();
    let gpu = Device::Cuda(0);
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        kiln::manual_seed(11);
        let cpu = Tensor::rand([1000, 3], dtype)?.to_vec::<f64>()?;
        kiln::manual_seed(11);
        let dev = Tensor::rand_on([1000, 3], dtype, gpu)?;
        assert_eq!(dev.device(), gpu);
        assert_eq!(dev.to_vec::<f64>()?, cpu, "rand {dtype:?}");

        kiln::manual_seed(12);
        let cpu = Tensor::randn([4096], dtype)?.to_vec::<f64>()?;
        kiln::manual_seed(12);
        let dev = Tensor::randn_on([4096], dtype, gpu)?.to_vec::<f64>()?;
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&dev), bits(&cpu), "randn {dtype:?}");
    }
    for dtype in [DType::Bool, DType::U8, DType::I32, DType::I64, DType::F32] {
        let (low, high) = if dtype == DType::Bool {
            (0, 2)
        } else {
            (-3, 100)
        };
        let low = if dtype == DType::U8 { 0 } else { low };
        kiln::manual_seed(13);
        let cpu = Tensor::randint(low, high, [999], dtype)?.to_vec::<f64>()?;
        kiln::manual_seed(13);
        let dev = Tensor::randint_on(low, high, [999], dtype, gpu)?.to_vec::<f64>()?;
        assert_eq!(dev, cpu, "randint {dtype:?}");
    }
    kiln::manual_seed(14);
    let cpu = Tensor::randint(i64::MIN, i64::MAX, [64], DType::I64)?.to_vec::<i64>()?;
    kiln::manual_seed(14);
    let dev = Tensor::randint_on(i64::MIN, i64::MAX, [64], DType::I64, gpu)?;
    assert_eq!(dev.to_vec::<i64>()?, cpu);
    Ok(())
}

/// `to` keeps a dense tensor's strides between devices, as PyTorch's `preserve_format`
/// does: a permuted tensor arrives permuted (so `view` fails on it there as here), with its
/// values, cast on the way or not; a strided slice, not dense, arrives contiguous.
#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test cuda -- --ignored"]
fn to_device_keeps_a_dense_tensors_strides_where_a_gpu_exists() -> Result<()> {
    assert!(kiln::cuda::is_available(), "CUDA tests need a device");
    let gpu = Device::Cuda(0);
    let x = Tensor::arange(0, 24, 1, DType::F32)?.reshape([2, 3, 4])?;
    let p = x.permute(&[2, 0, 1])?;
    assert_eq!(p.strides(), &[1, 12, 4]);
    let want = p.to_vec::<f64>()?;
    for dtype in [DType::F32, DType::F16, DType::I64] {
        let g = p.to_copy_with(Some(dtype), Some(gpu))?;
        assert_eq!(
            (g.device(), g.strides()),
            (gpu, &[1, 12, 4][..]),
            "{dtype:?}"
        );
        assert_eq!(g.to_vec::<f64>()?, want, "{dtype:?}");
        let back = g.cpu()?;
        assert_eq!(back.strides(), &[1, 12, 4], "{dtype:?}");
        assert_eq!(back.to_vec::<f64>()?, want, "{dtype:?}");
    }
    let t = x.reshape([6, 4])?.t()?.to_device(gpu)?;
    let e = t.view([24]).unwrap_err().to_string();
    assert!(e.contains("view size is not compatible"), "{e}");
    let s = x.slice_with(2, Some(0), None, 2)?;
    let g = s.to_device(gpu)?;
    assert!(g.is_contiguous());
    assert_eq!(g.to_vec::<f64>()?, s.to_vec::<f64>()?);
    Ok(())
}

/// `copy_` takes a source on another device, as PyTorch's does (the MPI backend writes its
/// host staging copies back to CUDA tensors with it): broadcast and cast on the way, both
/// directions, into a view, and the gradient flows back to a CPU leaf.
#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test cuda -- --ignored"]
fn copy_takes_a_source_on_another_device_where_a_gpu_exists() -> Result<()> {
    assert!(kiln::cuda::is_available(), "CUDA tests need a device");
    let gpu = Device::Cuda(0);
    let row = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    let g = Tensor::zeros([2, 3], DType::F64)?.to_device(gpu)?;
    g.copy_(&row)?;
    assert_eq!(g.device(), gpu);
    assert_eq!(g.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    let c = Tensor::zeros([3, 2], DType::F32)?;
    c.t()?.copy_(&g.mul_scalar(2.0)?)?;
    assert_eq!(c.to_vec::<f64>()?, vec![2.0, 2.0, 4.0, 4.0, 6.0, 6.0]);
    let leaf = Tensor::from_vec(vec![1.0f32, -1.0], &[2])?.requires_grad_(true)?;
    let dst = Tensor::zeros([3, 2], DType::F32)?.to_device(gpu)?;
    dst.copy_(&leaf.mul_scalar(3.0)?)?;
    dst.sum()?.backward()?;
    assert_eq!(leaf.grad().unwrap().to_vec::<f64>()?, vec![9.0, 9.0]);
    Ok(())
}

#[test]
fn random_tensors_on_a_missing_cuda_device_are_errors() {
    if kiln::cuda::is_available() {
        return;
    }
    for r in [
        Tensor::rand_on([2], DType::F32, Device::Cuda(0)),
        Tensor::randn_on([2], DType::F32, Device::Cuda(0)),
        Tensor::randint_on(0, 5, [2], DType::I64, Device::Cuda(0)),
    ] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("cannot use device cuda:0"), "{e}");
    }
}

/// The fused optimizer kernels on CUDA against the CPU's (src/ops/optim.rs), for every
/// floating dtype, with weight decay, amsgrad, nesterov momentum (Adam, SGD), centered
/// momentum RMSprop and lr-decayed Adagrad. Ignored like the test
/// above: it needs a GPU.
#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test cuda -- --ignored"]
fn fused_optimizer_steps_match_the_cpu_where_a_gpu_exists() -> Result<()> {
    assert!(kiln::cuda::is_available(), "CUDA tests need a device");
    let gpu = Device::Cuda(0);
    let mut g = kiln::Generator::new(7);
    for (dtype, tol) in [
        (DType::F64, 1e-12),
        (DType::F32, 1e-5),
        (DType::F16, 2e-3),
        (DType::BF16, 2e-2),
    ] {
        let mk = |g: &mut kiln::Generator| -> Result<Tensor> {
            Tensor::randn_with([37, 41], DType::F32, g)?.to_dtype(dtype)
        };
        let (p, gr, m) = (mk(&mut g)?, mk(&mut g)?, mk(&mut g)?.abs()?);
        let (v, vmax) = (m.mul(&m)?, m.mul(&m)?.mul_scalar(1.5)?);
        // RMSprop's state: square_avg >= grad_avg^2 keeps the centered variance positive.
        let (ga, mb) = (mk(&mut g)?.mul_scalar(0.5)?, mk(&mut g)?);
        let sq = ga.mul(&ga)?.add_scalar(0.1)?;
        let sum = mk(&mut g)?.abs()?;
        let all = [&p, &gr, &m, &v, &vmax, &sq, &ga, &mb, &sum];
        let cpu: Vec<Tensor> = all
            .iter()
            .map(|t| t.clone_tensor())
            .collect::<Result<_>>()?;
        let dev: Vec<Tensor> = all
            .iter()
            .map(|t| t.to_device(gpu))
            .collect::<Result<_>>()?;
        for ts in [&cpu, &dev] {
            kiln::_fused_adamw_(
                &ts[0..1],
                &ts[1..2],
                &ts[2..3],
                &ts[3..4],
                &ts[4..5],
                &[3.0],
                0.01,
                0.9,
                0.999,
                0.1,
                1e-8,
                true,
                false,
            )?;
            kiln::_fused_sgd_(
                &ts[0..1],
                &ts[1..2],
                &ts[2..3],
                0.01,
                0.9,
                0.1,
                0.0,
                true,
                true,
                false,
            )?;
            kiln::_fused_rmsprop_(
                &ts[0..1],
                &ts[1..2],
                &ts[5..6],
                &ts[6..7],
                &ts[7..8],
                0.01,
                0.9,
                1e-8,
                0.1,
                0.9,
                true,
                true,
            )?;
            kiln::_fused_adagrad_(
                &ts[0..1],
                &ts[1..2],
                &ts[8..9],
                &[3.0],
                0.1,
                0.01,
                0.1,
                1e-10,
                false,
            )?;
        }
        for (c, d) in cpu.iter().zip(&dev) {
            let (x, y) = (d.cpu()?.to_vec::<f64>()?, c.to_vec::<f64>()?);
            for (a, b) in x.iter().zip(&y) {
                assert!(
                    (a - b).abs() <= tol * (1.0 + b.abs()),
                    "{dtype:?}: {a} vs {b}"
                );
            }
        }
    }
    Ok(())
}
#[cfg(feature = "cuda")]
#[path = "cuda/amp.rs"]
mod amp;
#[cfg(feature = "cuda")]
#[path = "cuda/random_bits.rs"]
mod random_bits;
#[cfg(feature = "cuda")]
#[path = "cuda/scan_reduce.rs"]
mod scan_reduce;
#[cfg(feature = "cuda")]
#[path = "cuda/sort.rs"]
mod sort;
