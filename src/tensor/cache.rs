//! The CPU caching allocator: large buffers freed by a dropped storage wait in a free list
//! and back the next buffer of the same dtype and size class, instead of going back to the
//! system and coming out again as fresh zeroed pages.
//!
//! Why: glibc serves large blocks with `mmap` and returns them with `munmap`, so every large
//! op output used to fault its pages in one by one (the kernel zeroes each page on first
//! touch); on a VM a page fault costs more than the kernel's own work for most elementwise
//! ops. A training loop allocates the same shapes every step, so nearly every large buffer is
//! served from the free list after the first step.
//!
//! Rules:
//! - Only buffers of at least [`MIN_BYTES`] are cached; smaller ones come from malloc's own
//!   arenas, which already reuse memory without faults.
//! - Sizes are rounded up to a class (8 per power of two, so at most 12.5 % slack), and a
//!   free buffer of the same dtype and class is reused whatever the element count it held.
//! - Free lists are per dtype, so a reused buffer always holds valid values of its type
//!   (`bool` buffers only ever hold `false`/`true`): stale values, never uninitialised memory.
//! - The cache holds at most [`limit`] bytes (1 GiB unless [`set_limit`] or the
//!   `KILN_CPU_CACHE_BYTES` environment variable says otherwise); a buffer that would exceed
//!   it is freed. [`empty_cache`] frees everything cached, like `torch.cuda.empty_cache`.

use super::buffer::CpuBuffer;
use crate::DType;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Buffers smaller than this are not cached.
pub const MIN_BYTES: usize = 64 << 10;
const DEFAULT_LIMIT: usize = 1 << 30;

struct Cache {
    free: HashMap<(DType, usize), Vec<CpuBuffer>>,
    bytes: usize,
    limit: Option<usize>,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Cache>> {
    // A panic while the lock was held cannot leave the free lists inconsistent (every update
    // is a single push or pop plus a counter), so a poisoned lock is still usable.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

fn with_cache<R>(f: impl FnOnce(&mut Cache) -> R) -> R {
    let mut guard = lock();
    let cache = guard.get_or_insert_with(|| Cache {
        free: HashMap::new(),
        bytes: 0,
        limit: None,
    });
    f(cache)
}

fn env_limit() -> usize {
    std::env::var("KILN_CPU_CACHE_BYTES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_LIMIT)
}

/// The capacity, in elements of `elem_bytes` each, that a buffer of `len` elements is
/// allocated with: `len` itself below [`MIN_BYTES`], else the size class above it.
pub(crate) fn class_len(len: usize, elem_bytes: usize) -> usize {
    let bytes = len.saturating_mul(elem_bytes);
    if bytes < MIN_BYTES || elem_bytes == 0 {
        return len;
    }
    // Eight classes per power of two: round up to a multiple of a sixteenth of the next
    // power of two (at least 4 KiB, so classes are whole pages).
    let step = (bytes.next_power_of_two() / 16).max(4096);
    let class_bytes = bytes.div_ceil(step).saturating_mul(step);
    class_bytes / elem_bytes
}

/// A cached buffer of `dtype` whose capacity is the class of `len`, holding `len` elements
/// (its old values, or zeros where it grew), if one is free.
#[inline]
pub(crate) fn take(dtype: DType, len: usize) -> Option<CpuBuffer> {
    if len.saturating_mul(dtype.size_in_bytes()) < MIN_BYTES {
        return None;
    }
    take_class(dtype, class_len(len, dtype.size_in_bytes()), len)
}

fn take_class(dtype: DType, class: usize, len: usize) -> Option<CpuBuffer> {
    let mut buf = with_cache(|c| {
        let list = c.free.get_mut(&(dtype, class))?;
        let buf = list.pop()?;
        c.bytes -= class * dtype.size_in_bytes();
        Some(buf)
    })?;
    buf.set_len(len);
    Some(buf)
}

/// Offers a buffer being freed to the cache; it is kept when it is large, was allocated
/// with a class capacity, and fits under the limit, else freed here.
#[inline]
pub(crate) fn give(buf: CpuBuffer) {
    if keeps(&buf) {
        let (dtype, cap) = (buf.dtype(), buf.capacity());
        keep(buf, dtype, cap, cap.saturating_mul(dtype.size_in_bytes()));
    }
}

/// Whether [`give`] would keep `buf`: small buffers (most tensors of a small model) go
/// straight back to malloc, and only a buffer of a size class's exact capacity is kept.
#[inline]
pub(crate) fn keeps(buf: &CpuBuffer) -> bool {
    let size = buf.dtype().size_in_bytes();
    let cap = buf.capacity();
    cap.saturating_mul(size) >= MIN_BYTES && class_len(cap, size) == cap
}

fn keep(buf: CpuBuffer, dtype: DType, cap: usize, bytes: usize) {
    let rejected = with_cache(|c| {
        let limit = *c.limit.get_or_insert_with(env_limit);
        if c.bytes + bytes > limit {
            return Some(buf);
        }
        c.bytes += bytes;
        c.free.entry((dtype, cap)).or_default().push(buf);
        None
    });
    // Freed outside the lock: returning a large block to the system can take a while.
    drop(rejected);
}

/// Heap buffers handed out so far (fresh from the allocator or reused from the cache).
static ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts one heap buffer handed out.
#[inline]
pub(crate) fn count_allocation() {
    ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many CPU buffers of more than 16 bytes kiln has handed out since the program started,
/// fresh or from the cache (smaller ones live inside the tensor and allocate nothing). Like
/// PyTorch's `memory_stats()["allocation.all.allocated"]`: compare two readings to see
/// whether code allocated, e.g. a model run on the meta device.
pub fn allocation_count() -> u64 {
    ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Frees every cached CPU buffer (PyTorch's `torch.cuda.empty_cache`, for kiln's CPU cache).
/// Tensors alive keep their memory.
pub fn empty_cache() {
    let free = with_cache(|c| {
        c.bytes = 0;
        std::mem::take(&mut c.free)
    });
    drop(free);
}

/// Bytes held by free buffers in the cache (not counting buffers in use).
pub fn cached_bytes() -> usize {
    with_cache(|c| c.bytes)
}

/// The most bytes the cache keeps.
pub fn limit() -> usize {
    with_cache(|c| *c.limit.get_or_insert_with(env_limit))
}

/// Sets the most bytes the cache keeps; `0` turns caching off. Buffers cached beyond the
/// new limit are freed.
pub fn set_limit(bytes: usize) {
    let evicted = with_cache(|c| {
        c.limit = Some(bytes);
        let mut evicted = Vec::new();
        let keys: Vec<(DType, usize)> = c.free.keys().copied().collect();
        for key in keys {
            while c.bytes > bytes {
                let Some(buf) = c.free.get_mut(&key).and_then(Vec::pop) else {
                    break;
                };
                c.bytes -= key.1 * key.0.size_in_bytes();
                evicted.push(buf);
            }
        }
        c.free.retain(|_, v| !v.is_empty());
        evicted
    });
    drop(evicted);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_buffers_keep_their_length() {
        for len in [0, 1, 7, 1000, MIN_BYTES / 4 - 1] {
            assert_eq!(class_len(len, 4), len);
        }
    }

    #[test]
    fn classes_bound_the_slack_and_grow_with_the_length() {
        let mut prev = 0;
        for len in (MIN_BYTES / 8..1 << 22).step_by(997) {
            let c = class_len(len, 8);
            assert!(c >= len, "class {c} below {len}");
            // At most an eighth of slack (a sixteenth of the next power of two is at most an
            // eighth of the length), or one 4 KiB page for the smallest classes.
            let slack = (c - len) * 8;
            assert!(slack <= (len * 8 / 8).max(4096), "len {len}: class {c}");
            assert!(
                c >= prev,
                "classes must not shrink: {len} -> {c} after {prev}"
            );
            assert_eq!(class_len(c, 8), c, "a class length is its own class");
            prev = c;
        }
    }
}
