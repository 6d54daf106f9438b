//! One `Gpu` per device: its context and stream, the kernels compiled for it, its allocator
//! and cuBLAS handle. Created on first use; the driver library is loaded at run time.

use super::alloc::Caching;
use crate::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A CUDA device kiln has opened.
pub(crate) struct Gpu {
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    /// All of kiln's work on this device runs on this one stream, so work is ordered and a
    /// block freed to the allocator is safe to hand out again at once.
    pub stream: Arc<CudaStream>,
    arch: &'static str,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    pub alloc: Mutex<Caching>,
    pub blas: Mutex<Option<super::ops::matmul::Blas>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A driver error as kiln's error, in PyTorch's "CUDA error: …" form.
pub(crate) fn driver_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Device(format!("{what}: CUDA error: {e:?}"))
}

fn driver_present() -> bool {
    // SAFETY: only probes whether libcuda can be loaded; no CUDA call is made.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

pub(crate) fn nvrtc_available() -> bool {
    // SAFETY: only probes whether libnvrtc can be loaded.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Number of devices, 0 when the driver library or a GPU is missing.
pub(crate) fn device_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        if !driver_present() {
            return 0;
        }
        match cudarc::driver::result::init() {
            Ok(()) => CudaContext::device_count()
                .map(|n| n.max(0) as usize)
                .unwrap_or(0),
            Err(_) => 0,
        }
    })
}

pub(crate) fn unavailable_reason(index: usize) -> Option<String> {
    if !driver_present() {
        return Some("Found no NVIDIA driver on your system (libcuda could not be loaded)".into());
    }
    match device_count() {
        0 => Some("no CUDA-capable device is detected".into()),
        n if index >= n => Some(format!(
            "CUDA error: invalid device ordinal (this machine has {n} CUDA device{})",
            if n == 1 { "" } else { "s" }
        )),
        _ => None,
    }
}

type Slot = OnceLock<std::result::Result<Arc<Gpu>, String>>;

fn slots() -> &'static [Slot] {
    static SLOTS: OnceLock<Vec<Slot>> = OnceLock::new();
    SLOTS.get_or_init(|| (0..device_count()).map(|_| OnceLock::new()).collect())
}

/// The opened device `ordinal`.
pub(crate) fn gpu(ordinal: usize) -> Result<Arc<Gpu>> {
    if let Some(why) = unavailable_reason(ordinal) {
        return Err(Error::Device(format!(
            "cannot use device cuda:{ordinal}: {why}"
        )));
    }
    slots()[ordinal]
        .get_or_init(|| open(ordinal).map(Arc::new))
        .clone()
        .map_err(Error::Device)
}

fn open(ordinal: usize) -> std::result::Result<Gpu, String> {
    let ctx =
        CudaContext::new(ordinal).map_err(|e| format!("cuda:{ordinal}: CUDA error: {e:?}"))?;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| format!("cuda:{ordinal}: CUDA error: {e:?}"))?;
    // NVRTC wants a `&'static str`; one string per device for the life of the process.
    let arch: &'static str = Box::leak(format!("compute_{major}{minor}").into_boxed_str());
    Ok(Gpu {
        ordinal,
        stream: ctx.default_stream(),
        ctx,
        arch,
        modules: Mutex::new(HashMap::new()),
        functions: Mutex::new(HashMap::new()),
        alloc: Mutex::new(Caching::default()),
        blas: Mutex::new(None),
    })
}

/// Compiles generated module `name` with NVRTC.
pub(crate) fn compile(name: &str, arch: &'static str) -> Result<Ptx> {
    let src = super::module_source(name)
        .ok_or_else(|| Error::Device(format!("no generated CUDA module named '{name}'")))?;
    if !nvrtc_available() {
        return Err(Error::Device(
            "cannot compile CUDA kernels: the NVRTC library (libnvrtc.so.12) could not be loaded; install the `nvidia-cuda-nvrtc-cu12` wheel or a CUDA toolkit and add its lib folder to LD_LIBRARY_PATH".into(),
        ));
    }
    let opts = CompileOptions {
        arch: Some(arch),
        name: Some(format!("{name}.cu")),
        // #186: "pointless comparison of unsigned integer with zero" from generic templates.
        options: vec!["--diag-suppress=186".into()],
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| match e {
        CompileError::CompileError { log, .. } => Error::Device(format!(
            "NVRTC failed to compile CUDA module '{name}':\n{}",
            log.to_string_lossy()
        )),
        other => Error::Device(format!("NVRTC failed on CUDA module '{name}': {other:?}")),
    })
}

impl Gpu {
    /// Kernel `function` of generated module `module`, compiled for this device on first use.
    pub fn function(&self, module: &str, function: &str) -> Result<CudaFunction> {
        let key = format!("{module}/{function}");
        if let Some(f) = lock(&self.functions).get(&key) {
            return Ok(f.clone());
        }
        let name: &'static str = super::module_names()
            .into_iter()
            .find(|n| *n == module)
            .ok_or_else(|| Error::Device(format!("no generated CUDA module named '{module}'")))?;
        let mut modules = lock(&self.modules);
        let m = match modules.get(name) {
            Some(m) => m.clone(),
            None => {
                let ptx = compile(name, self.arch)?;
                let m = self
                    .ctx
                    .load_module(ptx)
                    .map_err(|e| driver_error(&format!("loading CUDA module '{name}'"), e))?;
                modules.insert(name, m.clone());
                m
            }
        };
        drop(modules);
        let f = m
            .load_function(function)
            .map_err(|e| driver_error(&format!("CUDA kernel '{function}' in '{module}'"), e))?;
        lock(&self.functions).insert(key, f.clone());
        Ok(f)
    }

    /// Waits for all work queued on this device.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| driver_error("synchronize", e))
    }
}

/// `(allocated, reserved)` bytes on `device`.
pub(crate) fn memory_stats(device: usize) -> (usize, usize) {
    match slots().get(device).and_then(|s| s.get()) {
        Some(Ok(g)) => {
            let a = lock(&g.alloc);
            (a.allocated, a.reserved)
        }
        _ => (0, 0),
    }
}

pub(crate) fn empty_cache() -> Result<()> {
    for slot in slots() {
        if let Some(Ok(g)) = slot.get() {
            g.synchronize()?;
            g.ctx
                .bind_to_thread()
                .map_err(|e| driver_error("empty_cache", e))?;
            lock(&g.alloc).release_cached();
        }
    }
    Ok(())
}

pub(crate) fn lock_alloc(g: &Gpu) -> MutexGuard<'_, Caching> {
    lock(&g.alloc)
}
