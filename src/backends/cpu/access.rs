//! The CPU backend's access to tensor memory: locking storages for a kernel, in an order
//! that cannot deadlock, and typed views of the locked buffers.

use crate::tensor::storage::Buffer;
use crate::tensor::{BufferElement, CpuBuffer, Storage, Tensor};
use kiln_kernels::{Dst, Src};
use smallvec::SmallVec;
use std::sync::{Arc, RwLockReadGuard, RwLockWriteGuard};

/// The CPU buffer inside a locked storage. Callers reach here only for CPU tensors: every
/// op routes other devices' tensors to their backend first.
fn cpu(b: &Buffer) -> &CpuBuffer {
    match b {
        Buffer::Cpu(c) => c,
        Buffer::Device(_) | Buffer::Meta => {
            panic!("kiln internal error: a storage of another device reached a CPU kernel")
        }
    }
}

fn cpu_mut(b: &mut Buffer) -> &mut CpuBuffer {
    match b {
        Buffer::Cpu(c) => c,
        Buffer::Device(_) | Buffer::Meta => {
            panic!("kiln internal error: a storage of another device reached a CPU kernel")
        }
    }
}

/// The locked output buffers a kernel body receives, in `outs` order.
pub(crate) type OutBufs<'a> = SmallVec<[&'a mut CpuBuffer; 4]>;

fn key(s: &Arc<Storage>) -> *const Storage {
    Arc::as_ptr(s)
}

/// Locks the storages of `inputs` for reading and of `outs` for writing, always in address
/// order so two threads writing into each other's inputs cannot deadlock, then runs `f` with
/// the input buffers (in `inputs` order) and output buffers (in `outs` order).
///
/// Callers guarantee that no output shares storage with an input or another output (ops copy
/// such inputs first), so no `&mut` buffer ever coexists with another reference to it.
pub(crate) fn with_buffers<R>(
    inputs: &[&Tensor],
    outs: &[&Tensor],
    f: impl FnOnce(&[&CpuBuffer], OutBufs<'_>) -> R,
) -> R {
    // The locking below is the same for every caller; only this shim is generic, so the
    // sort and the lock bookkeeping are compiled once rather than once per kernel × dtype.
    let mut f = Some(f);
    let mut result = None;
    lock_and_run(inputs, outs, &mut |ins, out_bufs| {
        if let Some(f) = f.take() {
            result = Some(f(ins, out_bufs));
        }
    });
    result.expect("kiln internal error: lock_and_run calls its body exactly once")
}

fn lock_and_run(
    inputs: &[&Tensor],
    outs: &[&Tensor],
    f: &mut dyn FnMut(&[&CpuBuffer], OutBufs<'_>),
) {
    for (i, o) in outs.iter().enumerate() {
        assert!(
            inputs.iter().all(|t| !t.shares_storage_with(o))
                && outs[..i].iter().all(|p| !p.shares_storage_with(o)),
            "kiln internal error: a kernel output aliases another operand"
        );
    }
    // Every operand slot (inputs first, then outputs) by storage address: locks are taken in
    // that order, each storage once. Inline vectors: this runs on every op
    // (`push` loops rather than `collect`: `SmallVec`'s `Extend` is not inlined, and its
    // moves cost more than the locks.)
    let ni = inputs.len();
    let mut order: SmallVec<[(*const Storage, usize); 8]> = SmallVec::new();
    for (slot, t) in inputs.iter().chain(outs).enumerate() {
        order.push((key(t.storage()), slot));
    }
    order.sort_unstable_by_key(|&(k, slot)| (k, slot));
    let mut reads: SmallVec<[Option<RwLockReadGuard<'_, Buffer>>; 8]> = SmallVec::new();
    let mut owner: SmallVec<[usize; 8]> = SmallVec::new();
    for i in 0..ni {
        reads.push(None);
        owner.push(i);
    }
    let mut writes: SmallVec<[Option<RwLockWriteGuard<'_, Buffer>>; 4]> = SmallVec::new();
    for _ in outs {
        writes.push(None);
    }
    // `owner[i]`: the input slot whose guard input `i` reads through (itself, or the first
    // input on the same storage).
    let mut prev: Option<(*const Storage, usize)> = None;
    for &(k, slot) in &order {
        match prev {
            // Only inputs share a storage (checked above), and the lowest slot comes first.
            Some((pk, first)) if pk == k => owner[slot] = first,
            _ => {
                if slot < ni {
                    reads[slot] = Some(inputs[slot].storage().read());
                } else {
                    writes[slot - ni] = Some(outs[slot - ni].storage().write());
                }
                prev = Some((k, slot));
            }
        }
    }
    let mut ins: SmallVec<[&CpuBuffer; 8]> = SmallVec::new();
    for &o in &owner {
        ins.push(cpu(reads[o]
            .as_ref()
            .expect("every input storage was locked")));
    }
    let mut out_bufs = OutBufs::new();
    for g in writes.iter_mut() {
        out_bufs.push(cpu_mut(
            g.as_mut().expect("every output storage was locked"),
        ));
    }
    f(&ins, out_bufs);
}

/// The contiguous fast path of the pointwise loops: when every operand is contiguous and no
/// input shares the output's storage — most ops — locks `inputs` for reading and `out` for
/// writing (without waiting, or else in address order, each storage once, as
/// [`with_buffers`] does) and runs `f` on
/// each operand's own elements, skipping the layout walk, de-aliasing and the general lock
/// set. `None` (nothing run) otherwise. Operands broadcast to one shape, so equal lengths.
pub(crate) fn with_dense<const N: usize, R>(
    inputs: [&Tensor; N],
    out: &Tensor,
    f: impl FnOnce([&CpuBuffer; N], &mut CpuBuffer) -> R,
) -> Option<R> {
    if !out.is_contiguous()
        || inputs
            .iter()
            .any(|t| !t.is_contiguous() || t.shares_storage_with(out))
    {
        return None;
    }
    // First without ordering: a try-lock never blocks, so taking them in any order cannot
    // deadlock, and uncontended (nearly always) every one succeeds. On a miss all are let go
    // and taken again in address order, blocking.
    {
        let reads: [Option<RwLockReadGuard<'_, Buffer>>; N] =
            std::array::from_fn(|i| inputs[i].storage().try_read());
        if reads.iter().all(Option::is_some) {
            if let Some(mut write) = out.storage().try_write() {
                let bufs = std::array::from_fn(|i| {
                    cpu(reads[i].as_ref().expect("every input storage was locked"))
                });
                return Some(f(bufs, cpu_mut(&mut write)));
            }
        }
    }
    let out_key = key(out.storage());
    // Insertion sort by (address, slot): N is at most 2 inputs, where the library sort's
    // call costs more than the sorting.
    let mut order: [usize; N] = std::array::from_fn(|i| i);
    for i in 1..N {
        let mut j = i;
        while j > 0 && key(inputs[order[j - 1]].storage()) > key(inputs[order[j]].storage()) {
            order.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut reads: [Option<RwLockReadGuard<'_, Buffer>>; N] = std::array::from_fn(|_| None);
    // `owner[i]`: the input whose guard input `i` reads through.
    let mut owner: [usize; N] = std::array::from_fn(|i| i);
    let mut write: Option<RwLockWriteGuard<'_, Buffer>> = None;
    let mut prev: Option<(*const Storage, usize)> = None;
    for &i in &order {
        let k = key(inputs[i].storage());
        if write.is_none() && out_key < k {
            write = Some(out.storage().write());
        }
        match prev {
            Some((pk, first)) if pk == k => owner[i] = first,
            _ => {
                reads[i] = Some(inputs[i].storage().read());
                prev = Some((k, i));
            }
        }
    }
    let mut write = write.unwrap_or_else(|| out.storage().write());
    let bufs = std::array::from_fn(|i| {
        cpu(reads[owner[i]]
            .as_ref()
            .expect("every input storage was locked"))
    });
    Some(f(bufs, cpu_mut(&mut write)))
}

/// A contiguous tensor's own elements in its locked buffer (see [`with_dense`]).
/// (An empty view's offset may lie past its storage's end, so it gets an empty slice.)
pub(crate) fn elems<'a, T: BufferElement>(buf: &'a CpuBuffer, t: &Tensor) -> &'a [T] {
    let data = T::slice(buf).expect("dispatch matched the buffer's dtype");
    match t.numel() {
        0 => &[],
        n => &data[t.storage_offset()..][..n],
    }
}

/// [`elems`], mutably.
pub(crate) fn elems_mut<'a, T: BufferElement>(buf: &'a mut CpuBuffer, t: &Tensor) -> &'a mut [T] {
    let data = T::slice_mut(buf).expect("dispatch matched the buffer's dtype");
    match t.numel() {
        0 => &mut [],
        n => &mut data[t.storage_offset()..][..n],
    }
}

/// A typed read view of `t` inside a `with_buffers` call.
pub(crate) fn src<'a, T: BufferElement>(buf: &'a CpuBuffer, t: &'a Tensor) -> Src<'a, T> {
    Src::new(
        T::slice(buf).expect("dispatch matched the buffer's dtype"),
        t.layout(),
    )
}

/// A typed write view of `t` inside a `with_buffers` call.
pub(crate) fn dst<'a, T: BufferElement>(buf: &'a mut CpuBuffer, t: &'a Tensor) -> Dst<'a, T> {
    Dst::new(
        T::slice_mut(buf).expect("dispatch matched the buffer's dtype"),
        t.layout(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use std::sync::mpsc;
    use std::time::Duration;

    fn sum_into(a: &Tensor, b: &Tensor, out: &Tensor) -> Option<()> {
        with_dense([a, b], out, |[x, y], o| {
            let (x, y) = (elems::<f32>(x, a), elems::<f32>(y, b));
            for ((o, x), y) in elems_mut::<f32>(o, out).iter_mut().zip(x).zip(y) {
                *o = x + y;
            }
        })
    }

    #[test]
    fn runs_on_free_storages_and_on_one_storage_read_twice() {
        let a = Tensor::from([1f32, 2., 3.]);
        let b = Tensor::from([10f32, 20., 30.]);
        let out = Tensor::alloc("test", &[3], DType::F32).unwrap();
        assert!(sum_into(&a, &b, &out).is_some());
        assert_eq!(out.to_vec::<f32>().unwrap(), [11., 22., 33.]);
        // Both inputs on one storage: two read guards on one lock.
        assert!(sum_into(&a, &a, &out).is_some());
        assert_eq!(out.to_vec::<f32>().unwrap(), [2., 4., 6.]);
    }

    /// A storage held by another thread makes the try-locks miss: the ordered, blocking path
    /// then waits for it and still computes the right values.
    #[test]
    fn waits_when_a_storage_is_held_elsewhere() {
        let a = Tensor::from([1f32, 2.]);
        let b = Tensor::from([3f32, 4.]);
        let out = Tensor::alloc("test", &[2], DType::F32).unwrap();
        for (held, write) in [(&out, false), (&a, true)] {
            let (locked_tx, locked_rx) = mpsc::channel();
            let (release_tx, release_rx) = mpsc::channel::<()>();
            let storage = held.storage().clone();
            let holder = std::thread::spawn(move || {
                if write {
                    let _g = storage.write();
                    locked_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                } else {
                    let _g = storage.read();
                    locked_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                }
            });
            locked_rx.recv().unwrap();
            // The held lock blocks a try-lock now.
            assert!(if write {
                held.storage().try_read().is_none()
            } else {
                held.storage().try_write().is_none()
            });
            let releaser = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                release_tx.send(()).unwrap();
            });
            assert!(sum_into(&a, &b, &out).is_some());
            assert_eq!(out.to_vec::<f32>().unwrap(), [4., 6.]);
            holder.join().unwrap();
            releaser.join().unwrap();
        }
    }

    #[test]
    fn declines_strided_or_aliased_operands() {
        let a = Tensor::from([[1f32, 2.], [3., 4.]]);
        let out = Tensor::alloc("test", &[2, 2], DType::F32).unwrap();
        let t = a.t().unwrap();
        assert!(sum_into(&t, &a, &out).is_none());
        assert!(sum_into(&out, &a, &out).is_none());
    }
}
