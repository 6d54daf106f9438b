//! Autocast regions: per-thread state (enabled and dtype per device type, nesting, the cast
//! cache), the guard that enters and leaves a region, and suspension while an op runs.

use crate::{DType, Device, Error, Result, Tensor};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;

/// The device types autocast knows, as bits of [`ENABLED`] and [`SUSPENDED`].
pub(crate) const CPU: u8 = 1;
pub(crate) const CUDA: u8 = 2;

/// The bit of `device`'s type; `None` for meta, which autocast never casts on (as PyTorch).
pub(crate) fn device_bit(device: Device) -> Option<u8> {
    match device {
        Device::Cpu => Some(CPU),
        Device::Cuda(_) => Some(CUDA),
        Device::Meta => None,
    }
}

struct Regions {
    /// The dtype each device type's region lowers to (PyTorch's defaults: bf16 on the CPU,
    /// f16 on CUDA), kept while no region is open.
    cpu_dtype: DType,
    cuda_dtype: DType,
    cache_enabled: bool,
    /// Open `autocast` guards, enabled or not: the cache is cleared when the last closes.
    nesting: usize,
    /// Casts of leaf float32 tensors that require grad (weights), by the original's address,
    /// reused for the rest of the region as PyTorch does; the original is held so the address
    /// stays its own.
    cache: HashMap<usize, (Tensor, Tensor)>,
}

thread_local! {
    /// Device types with an enabled region on this thread.
    static ENABLED: Cell<u8> = const { Cell::new(0) };
    /// Device types whose autocast is off while an op that already cast runs (and during
    /// backward).
    static SUSPENDED: Cell<u8> = const { Cell::new(0) };
    static REGIONS: RefCell<Regions> = RefCell::new(Regions {
        cpu_dtype: DType::BF16,
        cuda_dtype: DType::F16,
        cache_enabled: true,
        nesting: 0,
        cache: HashMap::new(),
    });
}

/// True when some device type has an enabled, unsuspended region on this thread: the only
/// question an op with a policy asks outside regions.
#[inline]
pub fn armed() -> bool {
    ENABLED.with(Cell::get) & !SUSPENDED.with(Cell::get) != 0
}

/// Whether `bit`'s region is enabled and not suspended.
pub(crate) fn active(bit: u8) -> bool {
    ENABLED.with(Cell::get) & !SUSPENDED.with(Cell::get) & bit != 0
}

/// The dtype `bit`'s region lowers to.
pub(crate) fn region_dtype(bit: u8) -> DType {
    REGIONS.with(|r| {
        let r = r.borrow();
        if bit == CPU {
            r.cpu_dtype
        } else {
            r.cuda_dtype
        }
    })
}

/// Whether casts of weights are cached in the current region.
pub(crate) fn cache_enabled() -> bool {
    REGIONS.with(|r| r.borrow().cache_enabled)
}

/// `t` cast by `cast`, through the region's cache.
pub(crate) fn cached(t: &Tensor, cast: impl FnOnce() -> Result<Tensor>) -> Result<Tensor> {
    let key = std::sync::Arc::as_ptr(&t.0) as usize;
    if let Some(hit) = REGIONS.with(|r| r.borrow().cache.get(&key).map(|(_, c)| c.clone())) {
        return Ok(hit);
    }
    // The borrow is released while casting: the cast is an op of its own.
    let c = cast()?;
    REGIONS.with(|r| r.borrow_mut().cache.insert(key, (t.clone(), c.clone())));
    Ok(c)
}

/// Turns autocast off for the device types in a mask until dropped.
#[must_use = "autocast is suspended only while the guard lives"]
pub struct SuspendGuard {
    previous: u8,
    _thread: PhantomData<*const ()>,
}

impl SuspendGuard {
    pub(crate) fn new(mask: u8) -> Self {
        let previous = SUSPENDED.with(|s| s.replace(s.get() | mask));
        SuspendGuard {
            previous,
            _thread: PhantomData,
        }
    }
}

impl Drop for SuspendGuard {
    fn drop(&mut self) {
        SUSPENDED.with(|s| s.set(self.previous));
    }
}

/// Autocast off on every device type until dropped: the backward pass runs each op in the
/// dtypes its forward recorded (PyTorch: "backward ops run in the same type that autocast
/// used for corresponding forward ops").
pub fn suspend_all() -> SuspendGuard {
    SuspendGuard::new(CPU | CUDA)
}

/// A region's settings, as `torch.autocast(device_type, dtype=None, enabled=True,
/// cache_enabled=None)` takes them; [`Autocast::enter`] opens it.
#[derive(Clone, Copy, Debug)]
pub struct Autocast {
    device: Device,
    dtype: Option<DType>,
    enabled: bool,
    cache_enabled: Option<bool>,
}

impl Autocast {
    /// A region on `device`'s type (any CUDA index means CUDA), in that type's default
    /// dtype: bf16 on the CPU, f16 on CUDA.
    pub fn new(device: Device) -> Self {
        Autocast {
            device,
            dtype: None,
            enabled: true,
            cache_enabled: None,
        }
    }

    /// The dtype `lower` ops run in.
    pub fn dtype(mut self, dtype: DType) -> Self {
        self.dtype = Some(dtype);
        self
    }

    /// `enabled=False` opens a region in which nothing is cast, even inside an enabled one.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Whether casts of weights are reused within the region (default: as the enclosing
    /// region, else true).
    pub fn cache_enabled(mut self, cache_enabled: bool) -> Self {
        self.cache_enabled = Some(cache_enabled);
        self
    }

    /// Opens the region on this thread until the guard drops. An unsupported dtype opens a
    /// disabled region with PyTorch's warning; the meta device is an error.
    pub fn enter(self) -> Result<AutocastGuard> {
        let Some(bit) = device_bit(self.device) else {
            return Err(Error::device(
                "autocast",
                format!(
                    "User specified an unsupported autocast device_type '{}'",
                    self.device
                ),
            ));
        };
        let mut enabled = self.enabled;
        let dtype = self.dtype.unwrap_or_else(|| region_dtype(bit));
        if enabled && !matches!(dtype, DType::BF16 | DType::F16) {
            let (name, device) = if bit == CPU {
                ("CPU", "CPU")
            } else {
                ("CUDA", "CUDA")
            };
            crate::warn(format!(
                "In {name} autocast, but the target dtype is not supported. Disabling autocast.\n{device} Autocast only supports dtype of torch.bfloat16, torch.float16 currently."
            ));
            enabled = false;
        }
        let previous_enabled = ENABLED.with(Cell::get);
        let (previous_dtype, previous_cache) = REGIONS.with(|r| {
            let mut r = r.borrow_mut();
            let previous_dtype = if bit == CPU {
                std::mem::replace(&mut r.cpu_dtype, dtype)
            } else {
                std::mem::replace(&mut r.cuda_dtype, dtype)
            };
            let previous_cache = r.cache_enabled;
            if let Some(c) = self.cache_enabled {
                r.cache_enabled = c;
            }
            r.nesting += 1;
            (previous_dtype, previous_cache)
        });
        ENABLED.with(|e| {
            e.set(if enabled {
                previous_enabled | bit
            } else {
                previous_enabled & !bit
            })
        });
        Ok(AutocastGuard {
            bit,
            previous_enabled,
            previous_dtype,
            previous_cache,
            _thread: PhantomData,
        })
    }
}

/// `torch.autocast(device_type, dtype)`: ops on `device`'s type run in mixed precision until
/// the guard drops. Regions nest; an inner one with another dtype or `enabled(false)` (see
/// [`Autocast`]) overrides the outer one until it closes.
///
/// ```
/// use kiln::{DType, Device, Tensor};
/// let a = Tensor::randn(&[4, 3][..], DType::F32)?;
/// let b = Tensor::randn(&[3, 2][..], DType::F32)?;
/// {
///     let _region = kiln::autocast(Device::Cpu, DType::BF16)?;
///     assert_eq!(a.mm(&b)?.dtype(), DType::BF16); // `lower`: matmuls in bf16
///     assert_eq!(a.mm(&b)?.sum()?.dtype(), DType::BF16); // no CPU policy: as it is
/// }
/// assert_eq!(a.mm(&b)?.dtype(), DType::F32);
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn autocast(device: Device, dtype: DType) -> Result<AutocastGuard> {
    Autocast::new(device).dtype(dtype).enter()
}

/// An open autocast region; dropping it restores the enclosing settings (and clears the
/// cast cache when it was the outermost region).
#[must_use = "the region closes when the guard drops"]
pub struct AutocastGuard {
    bit: u8,
    previous_enabled: u8,
    previous_dtype: DType,
    previous_cache: bool,
    /// Regions are per thread: the guard must drop on the thread that opened it.
    _thread: PhantomData<*const ()>,
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        ENABLED.with(|e| e.set(self.previous_enabled));
        // Taken out before it drops: a tensor's drop never reenters this state.
        let stale = REGIONS.with(|r| {
            let mut r = r.borrow_mut();
            if self.bit == CPU {
                r.cpu_dtype = self.previous_dtype;
            } else {
                r.cuda_dtype = self.previous_dtype;
            }
            r.cache_enabled = self.previous_cache;
            r.nesting -= 1;
            if r.nesting == 0 {
                std::mem::take(&mut r.cache)
            } else {
                HashMap::new()
            }
        });
        drop(stale);
    }
}

/// Whether ops on `device`'s type are autocast on this thread (`torch.is_autocast_enabled`).
pub fn is_autocast_enabled(device: Device) -> bool {
    device_bit(device).is_some_and(|b| ENABLED.with(Cell::get) & b != 0)
}

/// The dtype `lower` ops on `device`'s type run in (`torch.get_autocast_dtype`); meta has
/// none and answers the CPU's.
pub fn get_autocast_dtype(device: Device) -> DType {
    region_dtype(device_bit(device).unwrap_or(CPU))
}

/// Whether casts of weights are cached (`torch.is_autocast_cache_enabled`).
pub fn is_autocast_cache_enabled() -> bool {
    cache_enabled()
}

/// Drops the cached casts of this thread (`torch.clear_autocast_cache`); the outermost
/// region's guard does it when it closes.
pub fn clear_autocast_cache() {
    let stale = REGIONS.with(|r| std::mem::take(&mut r.borrow_mut().cache));
    drop(stale);
}

/// This thread's autocast settings, captured to be put back later: what activation
/// checkpointing records at forward so the recomputation in backward casts as the forward
/// did (PyTorch's checkpoint keeps the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutocastState {
    cpu: (bool, DType),
    cuda: (bool, DType),
    cache_enabled: bool,
}

impl AutocastState {
    /// The settings now (a suspension while an op or backward runs reads as disabled).
    pub fn capture() -> Self {
        AutocastState {
            cpu: (active(CPU), region_dtype(CPU)),
            cuda: (active(CUDA), region_dtype(CUDA)),
            cache_enabled: cache_enabled(),
        }
    }

    /// Whether any device type is autocast in this state.
    pub fn is_enabled(&self) -> bool {
        self.cpu.0 || self.cuda.0
    }

    /// Applies these settings until the returned guard drops, also inside backward (where
    /// autocast is otherwise suspended).
    pub fn enter(&self) -> Result<AutocastStateGuard> {
        let region = |device: Device, (enabled, dtype): (bool, DType)| {
            Autocast::new(device)
                .dtype(dtype)
                .enabled(enabled)
                .cache_enabled(self.cache_enabled)
                .enter()
        };
        // Lifted first, restored last (fields drop in declaration order, guards first).
        let resumed = SUSPENDED.with(|s| s.replace(0));
        let cpu = region(Device::Cpu, self.cpu);
        let cuda = region(Device::Cuda(0), self.cuda);
        match (cpu, cuda) {
            (Ok(cpu), Ok(cuda)) => Ok(AutocastStateGuard {
                _cuda: cuda,
                _cpu: cpu,
                suspended: resumed,
            }),
            (cpu, cuda) => {
                drop((cpu, cuda));
                SUSPENDED.with(|s| s.set(resumed));
                Err(Error::value(
                    "autocast",
                    "cannot restore the autocast state",
                ))
            }
        }
    }
}

/// Settings applied by [`AutocastState::enter`]; dropping it restores the previous ones.
#[must_use = "the settings apply only while the guard lives"]
pub struct AutocastStateGuard {
    _cuda: AutocastGuard,
    _cpu: AutocastGuard,
    suspended: u8,
}

impl Drop for AutocastStateGuard {
    fn drop(&mut self) {
        // The region guards drop after this body, in field order: CUDA's, then the CPU's,
        // the reverse of how they were entered. The suspension is a setting of its own, so
        // it can come back first.
        let suspended = self.suspended;
        SUSPENDED.with(|s| s.set(suspended));
    }
}
