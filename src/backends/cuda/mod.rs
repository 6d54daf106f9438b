//! CUDA devices: whether one is usable, its memory pool, and (with the `cuda` feature) the
//! backend — NVRTC-compiled kernels generated from `kernels/cuda/`, cuBLAS for matmul, and a
//! caching allocator.
//!
//! Without the `cuda` feature, or on a machine without a GPU or driver, kiln still builds
//! and runs: asking for `Device::Cuda(i)` is then an error that says which one is missing.

#[cfg(feature = "cuda")]
mod alloc;
#[cfg(feature = "cuda")]
mod args;
mod backend;
#[cfg(feature = "cuda")]
mod blas;
#[cfg(feature = "cuda")]
mod buffer;
#[cfg(feature = "cuda")]
mod kernel_cache;
#[cfg(feature = "cuda")]
pub(crate) mod kernels;
#[cfg(feature = "cuda")]
mod launchers;
#[cfg(feature = "cuda")]
pub(crate) mod libs;
#[cfg(feature = "cuda")]
mod nvrtc;
#[cfg(feature = "cuda")]
pub(crate) mod ops;
#[cfg(feature = "cuda")]
mod runtime;

pub(crate) use backend::CudaBackend;
#[cfg(feature = "cuda")]
pub(crate) use buffer::CudaBuffer;

/// True when kiln was built with the `cuda` feature and a CUDA device is present.
pub fn is_available() -> bool {
    device_count() > 0
}

/// Number of CUDA devices kiln can use (0 without the `cuda` feature, driver or GPU).
pub fn device_count() -> usize {
    #[cfg(feature = "cuda")]
    {
        runtime::device_count()
    }
    #[cfg(not(feature = "cuda"))]
    {
        0
    }
}

/// Why `cuda:index` cannot hold tensors, or `None` when it can.
pub(crate) fn unavailable_reason(index: usize) -> Option<String> {
    #[cfg(feature = "cuda")]
    {
        runtime::unavailable_reason(index)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = index;
        Some(
            "Torch not compiled with CUDA enabled (kiln was built without the `cuda` feature)"
                .into(),
        )
    }
}

/// Bytes of device memory held by live tensors on `device` (PyTorch's
/// `torch.cuda.memory_allocated`); 0 for a device kiln has not used.
pub fn memory_allocated(device: usize) -> usize {
    #[cfg(feature = "cuda")]
    {
        runtime::memory_stats(device).0
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        0
    }
}

/// Bytes of device memory the caching allocator holds on `device`, in use or cached
/// (`torch.cuda.memory_reserved`).
pub fn memory_reserved(device: usize) -> usize {
    #[cfg(feature = "cuda")]
    {
        runtime::memory_stats(device).1
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        0
    }
}

/// Returns every cached, unused block to the driver (`torch.cuda.empty_cache`).
pub fn empty_cache() -> crate::Result<()> {
    #[cfg(feature = "cuda")]
    {
        runtime::empty_cache()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Ok(())
    }
}

/// Waits for all queued work on `device` (`torch.cuda.synchronize`).
pub fn synchronize(device: usize) -> crate::Result<()> {
    #[cfg(feature = "cuda")]
    {
        runtime::gpu(device)?.synchronize()
    }
    #[cfg(not(feature = "cuda"))]
    {
        crate::Device::Cuda(device).ensure_available()
    }
}

/// Runs `f` on this thread with `cuda:device`'s context current, giving it the raw handle
/// (a driver `CUstream`) of the one stream all of kiln's work on that device runs on, so that
/// a library such as NCCL enqueues its kernels in order with kiln's: work `f` puts on that
/// stream runs after every kiln kernel launched before it and before every one launched
/// after it. Errors when the device cannot be opened.
///
/// The handle is valid while `f` runs (the device stays open); `f` must not destroy the
/// stream, and should not keep the handle past its return.
#[cfg(feature = "cuda")]
pub fn with_stream<R>(
    device: usize,
    f: impl FnOnce(*mut std::ffi::c_void) -> R,
) -> crate::Result<R> {
    let gpu = runtime::gpu(device)?;
    gpu.ctx
        .bind_to_thread()
        .map_err(|e| runtime::driver_error(&format!("cuda:{device}: binding the context"), e))?;
    Ok(f(gpu.stream.cu_stream().cast()))
}

/// Names of every generated CUDA module (one per pointwise op, plus copy, reduce, softmax
/// and index), for tools and tests that compile them all.
pub fn module_names() -> Vec<&'static str> {
    sources::CUDA_MODULES.iter().map(|(n, _)| *n).collect()
}

/// The CUDA C++ source of generated module `name`.
pub fn module_source(name: &str) -> Option<&'static str> {
    sources::CUDA_MODULES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
}

/// Compiles and loads every CUDA module for `cuda:device` on `threads` threads, filling the
/// on-disk kernel cache, so that later ops start at once (a warm-up for a long run or a
/// container image). Returns how many modules were compiled or read from the cache.
#[cfg(feature = "cuda")]
pub fn precompile(device: usize, threads: usize) -> crate::Result<usize> {
    runtime::gpu(device)?.precompile(threads)
}

/// Compiles module `name` to PTX with NVRTC for `arch` (e.g. `compute_80`). Needs only the
/// NVRTC library, not a GPU.
#[cfg(feature = "cuda")]
pub fn compile_ptx(name: &str, arch: &str) -> crate::Result<String> {
    let n = arch
        .strip_prefix("compute_")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| {
            crate::Error::Device(format!(
                "compile_ptx: expected an architecture like 'compute_80', got '{arch}'"
            ))
        })?;
    let c = runtime::compile(name, nvrtc::Target::Ptx(n), false)?;
    Ok(String::from_utf8_lossy(&c.image)
        .trim_end_matches('\0')
        .to_string())
}

/// What ptxas reported when NVRTC assembled a module for one architecture.
#[cfg(feature = "cuda")]
#[derive(Debug, Clone)]
pub struct AssemblyReport {
    /// ptxas's `-v` output: per kernel, registers, stack frame, spills.
    pub log: String,
    /// The report's lines that show a problem (spills, resource errors), with their kernel.
    pub problems: Vec<String>,
    /// The most registers any kernel of the module uses.
    pub max_registers: u32,
    /// Size of the CUBIN in bytes.
    pub cubin_bytes: usize,
}

/// Assembles module `name` into a CUBIN for `sm_<arch>` (e.g. 90) with NVRTC, as a GPU run
/// does, and returns ptxas's report. Needs only the NVRTC library, not a GPU: CI uses it to
/// check every kernel for spills on the architectures kiln targets.
#[cfg(feature = "cuda")]
pub fn assemble(name: &str, arch: u32) -> crate::Result<AssemblyReport> {
    let c = runtime::compile(name, nvrtc::Target::Cubin(arch), true)?;
    Ok(AssemblyReport {
        problems: nvrtc::ptxas_problems(&c.log),
        max_registers: nvrtc::max_registers(&c.log),
        cubin_bytes: c.image.len(),
        log: c.log,
    })
}

/// The loaded NVRTC's `(major, minor)` version, and the real architectures it compiles for.
#[cfg(feature = "cuda")]
pub fn nvrtc_info() -> crate::Result<((i32, i32), Vec<u32>)> {
    Ok((nvrtc::version()?, nvrtc::supported_archs()?))
}

/// True when the NVRTC library can be loaded (from `LD_LIBRARY_PATH` or the system).
#[cfg(feature = "cuda")]
pub fn nvrtc_available() -> bool {
    runtime::nvrtc_available()
}

mod sources {
    include!(concat!(env!("OUT_DIR"), "/cuda_sources.rs"));
}
