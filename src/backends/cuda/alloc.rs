//! A caching device allocator, after PyTorch's CUDACachingAllocator: freed blocks go to a
//! free list keyed by size class and are handed out again without a driver call. kiln runs
//! all work on one stream per device, so a block freed after its last kernel was queued is
//! safe to reuse by the next kernel on that stream.

use kiln_kernels::KernelError;
use std::collections::BTreeMap;

/// Blocks under 1 MiB round up to 512 bytes; larger ones to 2 MiB.
pub(crate) fn size_class(bytes: usize) -> usize {
    const SMALL: usize = 512;
    const LARGE: usize = 2 << 20;
    let b = bytes.max(1);
    if b < (1 << 20) {
        b.div_ceil(SMALL) * SMALL
    } else {
        b.div_ceil(LARGE) * LARGE
    }
}

/// One device's free lists and counters.
#[derive(Default)]
pub(crate) struct Caching {
    free: BTreeMap<usize, Vec<u64>>,
    /// Bytes in blocks held by live buffers.
    pub allocated: usize,
    /// Bytes held from the driver, live or cached.
    pub reserved: usize,
}

impl Caching {
    /// A block of `class` bytes: a cached one, else a new one from the driver; on
    /// out-of-memory the cache is emptied and the driver asked once more.
    pub fn take(&mut self, class: usize) -> Result<u64, KernelError> {
        if let Some(p) = self.free.get_mut(&class).and_then(Vec::pop) {
            self.allocated += class;
            return Ok(p);
        }
        // SAFETY: the caller's context is bound to this thread (the buffer code binds it);
        // the memory is uninitialised bytes, which kiln zeroes or overwrites before reading.
        let ptr = match unsafe { cudarc::driver::result::malloc_sync(class) } {
            Ok(p) => p,
            Err(_) => {
                // Cached blocks may still be read by queued kernels: wait for them first.
                cudarc::driver::result::ctx::synchronize().map_err(|e| {
                    KernelError::device(format!("CUDA error while freeing cached memory: {e:?}"))
                })?;
                self.release_cached();
                // SAFETY: as above.
                unsafe { cudarc::driver::result::malloc_sync(class) }.map_err(|e| {
                    KernelError::out_of_memory(format!(
                        "CUDA out of memory. Tried to allocate {class} bytes ({} bytes already allocated by kiln): {e:?}",
                        self.allocated
                    ))
                })?
            }
        };
        self.allocated += class;
        self.reserved += class;
        Ok(ptr)
    }

    /// Returns a block to its free list.
    pub fn give(&mut self, ptr: u64, class: usize) {
        self.allocated -= class;
        self.free.entry(class).or_default().push(ptr);
    }

    /// Frees every cached block (the caller has synchronised the stream).
    pub fn release_cached(&mut self) {
        for (class, ptrs) in std::mem::take(&mut self.free) {
            for p in ptrs {
                // SAFETY: `p` came from `malloc_sync`, is in no live buffer (it is on the
                // free list) and no queued kernel uses it (the stream was synchronised).
                if unsafe { cudarc::driver::result::free_sync(p) }.is_ok() {
                    self.reserved -= class;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_round_up() {
        assert_eq!(size_class(0), 512);
        assert_eq!(size_class(1), 512);
        assert_eq!(size_class(513), 1024);
        assert_eq!(size_class((1 << 20) - 1), 1 << 20);
        assert_eq!(size_class(1 << 20), 2 << 20);
        assert_eq!(size_class((2 << 20) + 1), 4 << 20);
    }
}
