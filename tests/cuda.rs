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
    let e = Tensor::full_on(&[2], 1.0, DType::F32, Device::Cuda(0))
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

/// Every generated module compiles with NVRTC. CI installs NVRTC from its PyPI wheel and sets
/// KILN_REQUIRE_NVRTC=1, so there a missing library fails instead of skipping.
#[cfg(feature = "cuda")]
#[test]
fn every_generated_cuda_kernel_compiles_to_ptx() {
    if !kiln::cuda::nvrtc_available() {
        assert!(
            std::env::var_os("KILN_REQUIRE_NVRTC").is_none(),
            "KILN_REQUIRE_NVRTC is set but libnvrtc could not be loaded (LD_LIBRARY_PATH?)"
        );
        eprintln!("CUDA PTX check skipped: NVRTC library not found (see .ci/run)");
        return;
    }
    let names = kiln::cuda::module_names();
    assert!(names.len() > 40, "{} modules", names.len());
    let mut failures = Vec::new();
    for name in &names {
        match kiln::cuda::compile_ptx(name, "compute_70") {
            Ok(ptx) => assert!(ptx.contains(".entry"), "{name}: PTX without kernels"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    eprintln!("{} CUDA modules compiled to PTX", names.len());
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
    let a = Tensor::randn(&[33, 17], DType::F32)?;
    let b = Tensor::randn(&[17, 9], DType::F32)?;
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
    let e = a.add(&gb).unwrap_err().to_string();
    assert!(
        e.contains("Expected all tensors to be on the same device"),
        "{e}"
    );
    // Autograd through CUDA ops leaves the gradient on the device.
    let x = ga.detach().requires_grad_(true)?;
    x.exp()?.sum()?.backward()?;
    let g = x.grad().expect("grad");
    assert_eq!(g.device(), gpu);
    close(&g.cpu()?, &a.exp()?, 1e-5)?;
    Ok(())
}
