//! One `Gpu` per device: its context and stream, the kernels compiled for it, its allocator
//! and cuBLAS handle. Created on first use; the driver library is loaded at run time.

use super::alloc::Caching;
use super::kernels::{KernelId, COUNT, KERNELS};
use super::nvrtc::Target;
use super::{kernel_cache, nvrtc};
use crate::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A CUDA device kiln has opened.
pub(crate) struct Gpu {
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    /// All of kiln's work on this device runs on this one stream, so work is ordered and a
    /// block freed to the allocator is safe to hand out again at once.
    pub stream: Arc<CudaStream>,
    /// What NVRTC compiles this device's modules to (its own CUBIN where NVRTC knows it).
    target: Option<Target>,
    /// Loaded modules, by index in `CUDA_MODULES`.
    modules: Box<[OnceLock<Arc<CudaModule>>]>,
    /// Loaded kernels, by [`KernelId`]: a launch reads its handle here without a lock.
    functions: Box<[OnceLock<CudaFunction>]>,
    /// Held while a module loads, so two threads do not compile one module twice.
    loading: Mutex<()>,
    /// Compute capability `(major, minor)`.
    capability: (u32, u32),
    pub alloc: Mutex<Caching>,
    pub blas: Mutex<Option<super::blas::Blas>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A driver error as kiln's error, in PyTorch's "CUDA error: …" form.
pub(crate) fn driver_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Device(format!("{what}: CUDA error: {e:?}"))
}

use super::libs::driver_present;

pub(crate) fn nvrtc_available() -> bool {
    super::libs::nvrtc_present()
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
    // Without NVRTC the device still holds tensors and runs cuBLAS; the first kernel then
    // fails with the error that names the missing library.
    let target = nvrtc::supported_archs()
        .ok()
        .and_then(|archs| nvrtc::target_for(major as u32, minor as u32, &archs));
    Ok(Gpu {
        ordinal,
        stream: ctx.default_stream(),
        ctx,
        target,
        capability: (major as u32, minor as u32),
        modules: super::module_names()
            .iter()
            .map(|_| OnceLock::new())
            .collect(),
        functions: (0..COUNT).map(|_| OnceLock::new()).collect(),
        loading: Mutex::new(()),
        alloc: Mutex::new(Caching::default()),
        blas: Mutex::new(None),
    })
}

/// Compiles generated module `name` for `target` with NVRTC (no cache): the image and
/// NVRTC's log.
pub(crate) fn compile(name: &str, target: Target, verbose: bool) -> Result<nvrtc::Compiled> {
    let src = super::module_source(name)
        .ok_or_else(|| Error::Device(format!("no generated CUDA module named '{name}'")))?;
    let options = nvrtc::options(target, verbose);
    nvrtc::compile(name, src, target, &options)
}

impl Gpu {
    /// Kernel `id`, loaded (its module compiled or read from the kernel cache) on first use.
    /// After that a lookup is an index and an atomic load.
    #[inline]
    pub fn kernel(&self, op: &str, id: KernelId) -> Result<&CudaFunction> {
        let slot = &self.functions[id.0 as usize];
        match slot.get() {
            Some(f) => Ok(f),
            None => self.load_kernel(op, id, slot),
        }
    }

    #[cold]
    fn load_kernel<'a>(
        &self,
        op: &str,
        id: KernelId,
        slot: &'a OnceLock<CudaFunction>,
    ) -> Result<&'a CudaFunction> {
        let (m, symbol) = KERNELS[id.0 as usize];
        let module = self.module(m)?;
        let f = module.load_function(symbol).map_err(|e| {
            driver_error(
                &format!(
                    "{op}: CUDA kernel '{symbol}' in '{}'",
                    super::module_names()[m]
                ),
                e,
            )
        })?;
        Ok(slot.get_or_init(|| f))
    }

    /// Module `index` of `CUDA_MODULES`, loaded on first use.
    fn module(&self, index: usize) -> Result<Arc<CudaModule>> {
        if let Some(m) = self.modules[index].get() {
            return Ok(m.clone());
        }
        let _guard = lock(&self.loading);
        if let Some(m) = self.modules[index].get() {
            return Ok(m.clone());
        }
        let m = self.load(super::module_names()[index])?;
        Ok(self.modules[index].get_or_init(|| m).clone())
    }

    /// Module `name` loaded on this device: from the on-disk kernel cache when an image for
    /// this source, NVRTC and architecture is there, else compiled now (and stored).
    fn load(&self, name: &'static str) -> Result<Arc<CudaModule>> {
        let (major, minor) = self.capability;
        let target = match self.target {
            Some(t) => t,
            None => {
                super::libs::require_nvrtc()?;
                return Err(Error::Device(format!(
                    "cuda:{}: NVRTC {} cannot compile for this GPU (compute capability \
                     {major}.{minor}); it supports sm_{}",
                    self.ordinal,
                    nvrtc::version()
                        .map(|(a, b)| format!("{a}.{b}"))
                        .unwrap_or_default(),
                    nvrtc::supported_archs()?
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", sm_")
                )));
            }
        };
        let src = super::module_source(name)
            .ok_or_else(|| Error::Device(format!("no generated CUDA module named '{name}'")))?;
        let options = nvrtc::options(target, false);
        let file = kernel_cache::entry(name, src, &options, nvrtc::version()?, &target.tag());
        let load = |image: Vec<u8>| self.ctx.load_module(Ptx::from_binary(image));
        if let Some(image) = kernel_cache::load(&file) {
            match load(image) {
                Ok(m) => return Ok(m),
                // A damaged entry: compile afresh below and replace it.
                Err(_) => kernel_cache::remove(&file),
            }
        }
        let compiled = nvrtc::compile(name, src, target, &options)?;
        let m = load(compiled.image.clone()).map_err(|e| {
            driver_error(
                &format!(
                    "loading CUDA module '{name}' ({}, NVRTC {}) on cuda:{}",
                    target.tag(),
                    nvrtc::version()
                        .map(|(a, b)| format!("{a}.{b}"))
                        .unwrap_or_default(),
                    self.ordinal
                ),
                e,
            )
        })?;
        kernel_cache::store(&file, &compiled.image);
        Ok(m)
    }

    /// Loads every generated module not loaded yet, compiling on `threads` threads (and
    /// filling the kernel cache): a process about to run many ops pays NVRTC's time once, in
    /// parallel, instead of module by module at first use. Returns how many were loaded.
    pub fn precompile(&self, threads: usize) -> Result<usize> {
        let names = super::module_names();
        let todo: Vec<usize> = (0..names.len())
            .filter(|&i| self.modules[i].get().is_none())
            .collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let errors = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..threads.clamp(1, todo.len().max(1)) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&m) = todo.get(i) else { break };
                    // Compiles outside `loading`, so the threads work in parallel; a module
                    // loaded meanwhile by an op keeps its first image.
                    match self.load(names[m]) {
                        Ok(module) => {
                            self.modules[m].get_or_init(|| module);
                        }
                        Err(e) => lock(&errors).push(e.to_string()),
                    }
                });
            }
        });
        let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
        if !errors.is_empty() {
            return Err(Error::Device(errors.join("\n")));
        }
        Ok(todo.len())
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
