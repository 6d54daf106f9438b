//! Where kernels run their parallel loops: kiln's own rayon pool, entered only in ways that
//! never let a waiting thread pick up unrelated work.
//!
//! A kernel runs while its caller holds the storage locks of its operands (and, in backward,
//! the engine's thread-local grad mode). rayon's `join` lets a waiting worker steal any
//! queued task of its pool; if that pool is the user's, the stolen task may be another kiln
//! op that wants the same lock (deadlock) or that reads the borrowed grad mode (wrong
//! result). So:
//!
//! - on a plain thread, parallel loops run inside kiln's pool; the caller blocks without
//!   running anything else meanwhile, and kiln's workers only ever run kernel chunks;
//! - on one of kiln's workers (a nested parallel loop), they run inline on that pool;
//! - on a worker of any other rayon pool — the user already runs work in parallel — kernels
//!   stay serial, as PyTorch's `parallel_for` does inside a parallel region.

use crate::{KResult, KernelError};
use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::cell::Cell;
use std::sync::{Arc, RwLock};

thread_local! {
    static KILN_WORKER: Cell<bool> = const { Cell::new(false) };
}

static POOL: RwLock<Option<Arc<ThreadPool>>> = RwLock::new(None);

fn build(threads: usize) -> KResult<ThreadPool> {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("kiln-worker-{i}"))
        .start_handler(|_| KILN_WORKER.with(|w| w.set(true)))
        .build()
        .map_err(|e| KernelError::value(format!("could not start kiln's thread pool: {e}")))
}

fn default_threads() -> usize {
    std::env::var("KILN_NUM_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn pool() -> Option<Arc<ThreadPool>> {
    if let Some(p) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return Some(p.clone());
    }
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    if slot.is_none() {
        // A pool that cannot start (no threads left) leaves kernels serial, not broken.
        *slot = build(default_threads()).ok().map(Arc::new);
    }
    slot.clone()
}

/// Sets how many threads kernels use (PyTorch's `torch.set_num_threads`). Kernels already
/// running finish on the old pool.
pub fn set_num_threads(threads: usize) -> KResult<()> {
    if threads == 0 {
        return Err(KernelError::value(
            "set_num_threads expects a positive integer",
        ));
    }
    let p = build(threads)?;
    *POOL.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(p));
    Ok(())
}

/// How many threads kernels use (PyTorch's `torch.get_num_threads`).
pub fn num_threads() -> usize {
    pool().map_or(1, |p| p.current_num_threads())
}

/// True on one of kiln's own workers.
fn on_kiln_worker() -> bool {
    KILN_WORKER.with(|w| w.get())
}

/// Whether a loop that is `large` should fan out from this thread: never on another rayon
/// pool's worker (see the module docs).
pub fn fan_out(large: bool) -> bool {
    // A pool of one thread only adds a hand-off (tens of microseconds) to serial work.
    large
        && (on_kiln_worker()
            || (rayon::current_thread_index().is_none()
                && pool().is_some_and(|p| p.current_num_threads() > 1)))
}

/// Runs `f`, whose rayon calls then use kiln's pool. Call only when [`fan_out`] said yes.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if on_kiln_worker() {
        return f();
    }
    match pool() {
        // From a thread outside every rayon pool, `install` blocks on a latch: the caller
        // runs nothing else while it waits.
        Some(p) if rayon::current_thread_index().is_none() => p.install(f),
        // Unreachable after `fan_out` said yes; inline is the safe fallback.
        _ => f(),
    }
}

/// Calls `f(i, piece)` for each consecutive `chunk`-element piece of `data` (the last may be
/// shorter), spread over kiln's pool. Call only when [`fan_out`] said yes; `chunk` must be
/// non-zero.
///
/// Kernels go through here rather than calling rayon's iterators themselves: this is generic
/// over the element type only, and `f` is a `&dyn Fn` called once per piece, so rayon's
/// scheduling code is compiled once per element type instead of once per kernel × dtype
/// (it was a fifth of kiln's release build).
pub fn par_chunks_mut<T: Send>(data: &mut [T], chunk: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    install(|| {
        data.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, piece)| f(i, piece))
    });
}

/// Calls `f(i)` for each `i` in `0..n`, spread over kiln's pool. Call only when
/// [`fan_out`] said yes.
pub fn par_for(n: usize, f: &(dyn Fn(usize) + Sync)) {
    install(|| (0..n).into_par_iter().for_each(f));
}

/// The body of [`par_chunks_mut2`]: piece index and the two pieces.
pub type Chunks2Fn<'f, A, B> = &'f (dyn Fn(usize, &mut [A], &mut [B]) + Sync);

/// As [`par_chunks_mut`] over two outputs split in step: `f(i, a_piece, b_piece)` where
/// both pieces cover the same index range (`a.len() == b.len()`).
pub fn par_chunks_mut2<A: Send, B: Send>(
    a: &mut [A],
    b: &mut [B],
    chunk: usize,
    f: Chunks2Fn<'_, A, B>,
) {
    install(|| {
        a.par_chunks_mut(chunk)
            .zip(b.par_chunks_mut(chunk))
            .enumerate()
            .for_each(|(i, (pa, pb))| f(i, pa, pb))
    });
}

/// As [`par_chunks_mut2`] with a chunk length per output: piece `i` of `a` (`chunk_a`
/// elements) goes with piece `i` of `b` (`chunk_b` elements), e.g. rows of a normalized
/// output with the statistics of those rows. Both must split into the same number of pieces;
/// both chunks must be non-zero.
pub fn par_chunks_mut2_by<A: Send, B: Send>(
    a: &mut [A],
    chunk_a: usize,
    b: &mut [B],
    chunk_b: usize,
    f: Chunks2Fn<'_, A, B>,
) {
    install(|| {
        a.par_chunks_mut(chunk_a)
            .zip(b.par_chunks_mut(chunk_b))
            .enumerate()
            .for_each(|(i, (pa, pb))| f(i, pa, pb))
    });
}

/// The body of [`par_chunks_mut_many`]: piece index and the pieces, one per buffer.
pub type ChunksManyFn<'f, T> = &'f (dyn Fn(usize, &mut [&mut [T]]) + Sync);

/// As [`par_chunks_mut2`] over any number of equally long buffers of one element type, split
/// in step: `f(i, pieces)` gets piece `i` of every buffer, in the order given (an
/// optimizer's parameter and its state buffers). `chunk` must be non-zero.
pub fn par_chunks_mut_many<T: Send>(bufs: Vec<&mut [T]>, chunk: usize, f: ChunksManyFn<'_, T>) {
    par_chunks_mut_many_by(bufs.into_iter().map(|b| (b, chunk)).collect(), f)
}

/// As [`par_chunks_mut_many`] with a chunk length per buffer: piece `i` of each buffer is
/// its `i`-th run of its own chunk length (the query, key and value gradients of one
/// attention head). Every chunk must be non-zero, and the first buffer sets how many
/// pieces there are (the others must have at least as many).
pub fn par_chunks_mut_many_by<T: Send>(bufs: Vec<(&mut [T], usize)>, f: ChunksManyFn<'_, T>) {
    let n = bufs.first().map_or(0, |(b, c)| b.len().div_ceil(*c));
    let mut pieces: Vec<Vec<&mut [T]>> = (0..n).map(|_| Vec::with_capacity(bufs.len())).collect();
    for (b, chunk) in bufs {
        for (piece, p) in pieces.iter_mut().zip(b.chunks_mut(chunk)) {
            piece.push(p);
        }
    }
    install(|| {
        pieces
            .into_par_iter()
            .enumerate()
            .for_each(|(i, mut p)| f(i, &mut p))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_loops_use_kiln_workers() {
        let on_worker = install(on_kiln_worker);
        assert!(on_worker);
        assert!(fan_out(true));
        assert!(!fan_out(false));
    }

    #[test]
    fn other_pools_stay_serial() {
        let user = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        user.install(|| {
            assert!(!fan_out(true));
            // Even a direct `install` runs inline rather than waiting on kiln's pool.
            assert!(!install(on_kiln_worker));
        });
    }
}
