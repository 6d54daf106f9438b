//! The CPU caching allocator (`kiln::cpu`): large freed buffers back later allocations of the
//! same dtype and size class, zeros are still zeros, dtypes never share buffers, and the
//! limit holds. One test function: the cache is process-wide state.

use kiln::{DType, Tensor};

const N: usize = 1 << 20; // 4 MiB of f32: far above the caching threshold

#[test]
fn cache_reuses_large_buffers_and_keeps_its_rules() {
    kiln::cpu::empty_cache();
    kiln::cpu::set_cache_limit(1 << 30);
    assert_eq!(kiln::cpu::cached_bytes(), 0);

    // A freed large buffer waits in the cache ...
    let a = Tensor::full([N], 7.0, DType::F32).unwrap();
    drop(a);
    let cached = kiln::cpu::cached_bytes();
    assert!(
        cached >= 4 * N,
        "cached {cached} bytes after freeing {} bytes",
        4 * N
    );

    // ... and backs the next buffer of its dtype and size class (here 5 fewer elements).
    let z = Tensor::zeros([N - 5], DType::F32).unwrap();
    assert_eq!(kiln::cpu::cached_bytes(), 0);
    // A reused buffer is zero-filled for `zeros`: the 7s are gone.
    assert!(z.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0));
    drop(z);
    assert_eq!(kiln::cpu::cached_bytes(), cached);

    // Another dtype of the same byte size does not take it.
    let i = Tensor::zeros([N], DType::I32).unwrap();
    assert_eq!(kiln::cpu::cached_bytes(), cached);
    assert!(i.to_vec::<i32>().unwrap().iter().all(|&v| v == 0));

    // An op's output may reuse a buffer that held other values: its result is still exact.
    let x = Tensor::arange(0, N as i64, 1, DType::F32).unwrap();
    for round in 0..3 {
        let y = x.add(&x).unwrap();
        let v = y.to_vec::<f32>().unwrap();
        assert!(
            v.iter().enumerate().all(|(k, &e)| e == 2.0 * k as f32),
            "round {round}"
        );
    }
    let bools = Tensor::ones([4 * N], DType::Bool).unwrap();
    drop(bools);
    let cmp = x.lt_scalar(10.0).unwrap();
    let v = cmp.to_vec::<bool>().unwrap();
    assert_eq!(v.iter().filter(|&&b| b).count(), 10);

    // Small buffers are never cached.
    drop(i);
    let before = kiln::cpu::cached_bytes();
    drop(Tensor::zeros([16], DType::F32).unwrap());
    assert_eq!(kiln::cpu::cached_bytes(), before);

    // The limit: lowering it evicts, zero turns caching off.
    kiln::cpu::set_cache_limit(0);
    assert_eq!(kiln::cpu::cached_bytes(), 0);
    drop(Tensor::zeros([N], DType::F32).unwrap());
    assert_eq!(kiln::cpu::cached_bytes(), 0);
    assert_eq!(kiln::cpu::cache_limit(), 0);

    kiln::cpu::set_cache_limit(1 << 30);
    drop(Tensor::zeros([N], DType::F64).unwrap());
    assert!(kiln::cpu::cached_bytes() >= 8 * N);
    kiln::cpu::empty_cache();
    assert_eq!(kiln::cpu::cached_bytes(), 0);
}
