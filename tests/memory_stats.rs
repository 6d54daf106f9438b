//! CPU memory statistics (`kiln::cpu::memory_allocated`, `max_memory_allocated`,
//! `reset_peak_memory_stats`): live storage bytes, not views, not the buffer cache. One
//! test function: the counters are process-wide.

use kiln::{DType, Tensor};

#[test]
fn counts_live_storage_and_its_peak() {
    let before = kiln::cpu::memory_allocated();
    let a = Tensor::zeros([1000], DType::F32).unwrap();
    assert_eq!(kiln::cpu::memory_allocated() - before, 4000);

    // Views share the storage: nothing more.
    let v = a.narrow(0, 10, 100).unwrap().reshape([10, 10]).unwrap();
    assert_eq!(kiln::cpu::memory_allocated() - before, 4000);
    drop(a);
    assert_eq!(
        kiln::cpu::memory_allocated() - before,
        4000,
        "the view keeps it alive"
    );
    drop(v);
    assert_eq!(kiln::cpu::memory_allocated(), before);

    // A large buffer freed into the cache is no longer counted, and counts again once reused.
    kiln::cpu::set_cache_limit(1 << 30);
    let big = Tensor::ones([1 << 20], DType::F64).unwrap();
    assert_eq!(kiln::cpu::memory_allocated() - before, 8 << 20);
    drop(big);
    assert!(kiln::cpu::cached_bytes() >= 8 << 20);
    assert_eq!(kiln::cpu::memory_allocated(), before);
    let again = Tensor::zeros([1 << 20], DType::F64).unwrap();
    assert_eq!(kiln::cpu::memory_allocated() - before, 8 << 20);

    // The peak: reset to what is alive, raised by a temporary, kept after it is freed.
    kiln::cpu::reset_peak_memory_stats();
    assert_eq!(
        kiln::cpu::max_memory_allocated(),
        kiln::cpu::memory_allocated()
    );
    let tmp = again.add_scalar(1.0).unwrap();
    drop(tmp);
    // The temporary, and perhaps the scalar wrapped as a tensor for the op.
    let above = kiln::cpu::max_memory_allocated() - kiln::cpu::memory_allocated();
    assert!((8 << 20..(8 << 20) + 64).contains(&above), "{above}");
    drop(again);
    assert_eq!(kiln::cpu::memory_allocated(), before);
    kiln::cpu::reset_peak_memory_stats();
    assert_eq!(kiln::cpu::max_memory_allocated(), before);

    // Small tensors, held inline, count their bytes too; meta tensors count nothing.
    let s = Tensor::from(1.5f64);
    assert_eq!(kiln::cpu::memory_allocated() - before, 8);
    let m = Tensor::empty_on([1 << 20], DType::F32, kiln::Device::Meta).unwrap();
    assert_eq!(kiln::cpu::memory_allocated() - before, 8);
    drop((s, m));
}
