//! Regression tests for kiln's reliability: threads, deep graphs, size arithmetic, allocation
//! failure, and inputs that used to give silently wrong results.

use kiln::{DType, Tensor};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on its own thread and fails the test if it has not finished after `secs` (a
/// deadlock would otherwise hang the whole test run).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("did not finish within {secs} s: deadlock"))
}

fn err_text<T: std::fmt::Debug>(r: kiln::Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

mod threads {
    use super::*;
    use rayon::prelude::*;

    /// Large enough that every kernel fans out (kiln's threshold is 32 Ki elements).
    const N: usize = 1 << 16;
    const TASKS: usize = 8;
    const STEPS: usize = 500;

    /// A user pool as the issue describes: more threads than cores, many queued jobs.
    fn user_pool() -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(TASKS)
            .build()
            .unwrap()
    }

    /// One training-like step of task `t` on the shared leaves: forward, backward.
    fn step(w: &Tensor, b: &Tensor, t: usize) -> kiln::Result<()> {
        let x = Tensor::full(w.shape(), (t + 1) as f64, DType::F32)?;
        let loss = w.mul(&x)?.add(b)?.sum()?.add(&w.mul(&x)?.sum()?)?;
        loss.backward()
    }

    fn leaves(n: usize) -> (Tensor, Tensor) {
        let w = Tensor::ones([n], DType::F32)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let b = Tensor::zeros([n], DType::F32)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        (w, b)
    }

    #[test]
    fn rayon_tasks_training_shared_leaves_match_sequential_grads() {
        // Every gradient is a small integer, so sums are exact in any order and "the same"
        // means bit-identical. Task t runs STEPS steps; the jobs are queued one step each.
        let (sw, sb) = leaves(N);
        for _ in 0..STEPS {
            for t in 0..TASKS {
                step(&sw, &sb, t).unwrap();
            }
        }
        let (w, b) = leaves(N);
        let (w2, b2) = (w.clone(), b.clone());
        within(600, move || {
            user_pool().install(|| {
                (0..TASKS * STEPS)
                    .into_par_iter()
                    .with_max_len(1)
                    .for_each(|i| {
                        step(&w2, &b2, i % TASKS).expect("forward and backward from a rayon task")
                    })
            })
        });
        let got = w.grad().unwrap().to_vec::<f32>().unwrap();
        let want = sw.grad().unwrap().to_vec::<f32>().unwrap();
        assert!(got == want, "parallel grads differ from sequential ones");
        // Independent check: d/dw of sum(w x) + sum(w x) is 2x, summed over tasks and steps.
        let per_step: f64 = 2.0 * (1..=TASKS).map(|t| t as f64).sum::<f64>();
        assert!(got.iter().all(|&g| g as f64 == per_step * STEPS as f64));
        let gb = b.grad().unwrap().to_vec::<f32>().unwrap();
        assert!(gb.iter().all(|&g| g == (TASKS * STEPS) as f32));
    }

    #[test]
    fn rayon_tasks_running_inplace_ops_on_shared_tensors_finish() {
        // Before kiln had its own pool this deadlocked every time: `add_` held the write lock
        // while its kernel's `join` stole another queued `add_` of the same tensor.
        let a = Tensor::zeros([1 << 20], DType::F32).unwrap();
        let one = Tensor::ones([1 << 20], DType::F32).unwrap();
        let (a2, one2) = (a.clone(), one.clone());
        within(600, move || {
            for _ in 0..4 {
                user_pool().install(|| {
                    (0..256).into_par_iter().with_max_len(1).for_each(|_| {
                        for _ in 0..4 {
                            a2.add_(&one2).unwrap();
                        }
                    })
                })
            }
        });
        let got = a.to_vec::<f32>().unwrap();
        assert!(got.iter().all(|&v| v == 4096.0));
    }

    #[test]
    fn backward_in_a_rayon_task_does_not_leak_grad_mode_into_other_tasks() {
        // While one job's backward runs its kernels (grad mode off on that thread), a forward
        // it stole used to run without recording and fail to backpropagate.
        let (w, b) = leaves(1 << 18);
        within(600, move || {
            user_pool().install(|| {
                (0..512).into_par_iter().with_max_len(1).for_each(|t| {
                    for _ in 0..4 {
                        step(&w, &b, t % TASKS).expect("a forward lost grad mode");
                    }
                })
            })
        });
    }

    #[test]
    fn num_threads_is_settable() {
        assert!(kiln::get_num_threads() >= 1);
        assert!(kiln::set_num_threads(0).is_err());
    }
}

mod deep_graphs {
    use super::*;

    /// `depth` ops in a chain from a leaf; `neg` saves nothing, so memory stays small.
    fn chain(depth: usize) -> (Tensor, Tensor) {
        let x = Tensor::from([1f32]).requires_grad_(true).unwrap();
        let mut y = x.clone();
        for _ in 0..depth {
            y = y.neg().unwrap();
        }
        (x, y)
    }

    #[test]
    fn dropping_a_million_op_chain_does_not_overflow_the_stack() {
        let (_x, y) = chain(1_000_000);
        drop(y);
    }

    #[test]
    fn dropping_a_million_op_chain_on_a_2_mib_thread() {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| drop(chain(1_000_000)))
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn dropping_a_chain_held_through_saved_tensors_on_a_2_mib_thread() {
        // Without backward the saved inputs are still held: each node frees the previous
        // one through a saved tensor's `grad_fn`, not only through its edge.
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let c = Tensor::from([1f64]).requires_grad_(true).unwrap();
                let mut y = Tensor::from([1f64]).requires_grad_(true).unwrap();
                for _ in 0..100_000 {
                    y = y.mul(&c).unwrap();
                }
                drop(y);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn backward_then_drop_of_a_chain_with_saved_tensors() {
        // `mul` saves both inputs: the chain also runs through saved tensors' `grad_fn`s.
        let x = Tensor::from([1f64]).requires_grad_(true).unwrap();
        let c = Tensor::from([1f64]).requires_grad_(true).unwrap();
        let mut y = x.clone();
        for _ in 0..100_000 {
            y = y.mul(&c).unwrap();
        }
        y.backward().unwrap();
        assert_eq!(x.grad().unwrap().item::<f64>().unwrap(), 1.0);
        assert_eq!(c.grad().unwrap().item::<f64>().unwrap(), 100_000.0);
        drop(y);
    }
}

mod sizes {
    use super::*;

    const BIG: usize = 1 << 32;

    #[test]
    fn zeros_whose_element_count_overflows_is_an_error() {
        let e = err_text(Tensor::zeros([BIG, BIG], DType::F32));
        assert!(
            e.contains("Storage size calculation overflowed with sizes=[4294967296, 4294967296]"),
            "{e}"
        );
        // Elements fit but bytes do not.
        assert!(err_text(Tensor::zeros([1i64 << 62], DType::F32)).contains("overflowed"));
    }

    #[test]
    fn from_vec_checks_the_shape_product_without_wrapping() {
        let e = err_text(Tensor::from_vec(vec![0f32; 4], &[(1 << 62) + 1, 4]));
        assert!(e.contains("is invalid for input of size 4"), "{e}");
    }

    #[test]
    fn view_reshape_and_expand_to_overflowing_shapes_are_errors() {
        let x = Tensor::zeros([4], DType::F32).unwrap();
        let huge = (1i64 << 62) + 1;
        for e in [
            err_text(x.view([huge, 4])),
            err_text(x.reshape([huge, 4])),
            err_text(x.reshape([huge, -1])),
        ] {
            assert!(e.contains("is invalid for input of size 4"), "{e}");
        }
        let one = Tensor::zeros([1], DType::F32).unwrap();
        let e = err_text(one.expand([1i64 << 62, 1i64 << 62]));
        assert!(e.contains("numel: integer multiplication overflow"), "{e}");
        // A huge expanded view is fine (no memory); computing on it is an allocation error.
        let wide = one.expand([1i64 << 40]).unwrap();
        assert_eq!(wide.shape(), &[1 << 40]);
        assert!(err_text(wide.neg()).contains("not enough memory"));
    }

    #[test]
    fn eye_too_large_is_an_error() {
        assert!(err_text(Tensor::eye(BIG, None, DType::F32)).contains("overflowed"));
        assert!(err_text(Tensor::eye(1 << 22, None, DType::F32)).contains("not enough memory"));
    }

    #[test]
    fn narrow_with_a_huge_length_is_pytorchs_error() {
        let x = Tensor::zeros([4], DType::F32).unwrap();
        let e = err_text(x.narrow(0, 1, i64::MAX));
        assert!(
            e.contains("start (1) + length (9223372036854775807) exceeds dimension size (4)."),
            "{e}"
        );
    }

    #[test]
    fn slice_with_a_huge_step_takes_the_first_element() {
        let x = Tensor::from([[1f32, 2., 3.], [4., 5., 6.]]);
        let s = x.slice_with(1, None, None, i64::MAX).unwrap();
        assert_eq!(s.shape(), &[2, 1]);
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![1., 4.]);
        assert_eq!(
            s.mul_scalar(2).unwrap().to_vec::<f32>().unwrap(),
            vec![2., 8.]
        );
        let s = x.slice_with(0, Some(1), None, i64::MAX).unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![4., 5., 6.]);
    }

    #[test]
    fn as_strided_outside_the_storage_is_an_error() {
        let x = Tensor::zeros([8], DType::F32).unwrap();
        for (size, stride, offset) in [
            (vec![2i64, 2], vec![1i64 << 62, 1], None),
            (vec![8], vec![i64::MAX], None),
            (vec![3], vec![4], None),
            (vec![1], vec![1], Some(8)),
        ] {
            let e = err_text(x.as_strided_with(&size, &stride, offset));
            assert!(e.contains("out of bounds for storage of size 8"), "{e}");
        }
        let e = err_text(x.as_strided_with([2], [1], Some(-1)));
        assert!(e.contains("invalid storage offset -1"), "{e}");
        let e = err_text(x.as_strided([2], [-1]));
        assert!(e.contains("Negative strides are not supported"), "{e}");
        // Empty views may reach anywhere; they address no element.
        assert_eq!(x.as_strided([0, 3], [1i64 << 62, 1]).unwrap().numel(), 0);
    }
}

mod out_of_memory {
    use super::*;

    #[test]
    fn zeros_too_large_for_memory_is_an_error() {
        let e = err_text(Tensor::zeros([1i64 << 40], DType::F32));
        assert!(
            e.contains("not enough memory: you tried to allocate 4398046511104 bytes"),
            "{e}"
        );
        assert!(err_text(Tensor::ones([1i64 << 40], DType::F64)).contains("not enough memory"));
        assert!(err_text(Tensor::randn([1i64 << 40], DType::F32)).contains("not enough memory"));
    }

    #[test]
    fn reading_out_a_huge_expanded_view_is_an_error() {
        let wide = Tensor::zeros([1], DType::F32)
            .unwrap()
            .expand([1i64 << 40])
            .unwrap();
        assert!(err_text(wide.to_vec::<f32>()).contains("not enough memory"));
    }

    #[test]
    fn index_tensors_broadcasting_to_a_huge_shape_are_an_allocation_error() {
        // x[i, j] with i [2^20, 1] and j [2^21]: 2^41 picks, numbered on the host first.
        let x = Tensor::zeros([2, 2], DType::F32).unwrap();
        let i = Tensor::zeros([1 << 20, 1], DType::I64).unwrap();
        let j = Tensor::zeros([1 << 21], DType::I64).unwrap();
        let e = err_text(x.index(&[Some(&i), Some(&j)]));
        assert!(e.contains("not enough memory"), "{e}");
    }

    #[test]
    fn a_huge_arange_is_an_error() {
        let e = err_text(Tensor::arange(0, 1e15, 1, DType::F32));
        assert!(e.contains("not enough memory"), "{e}");
        let e = err_text(Tensor::arange(0., 1e30, 1., DType::F32));
        assert!(e.contains("invalid size, possible overflow?"), "{e}");
    }
}

mod wrong_results {
    use super::*;

    #[test]
    fn integer_to_a_negative_integer_power_is_an_error() {
        let x = Tensor::from([2i64, 3]);
        let e = err_text(x.pow_scalar(-1));
        assert!(
            e.contains("Integers to negative integer powers are not allowed."),
            "{e}"
        );
        assert!(err_text(Tensor::from([true]).pow_scalar(-2)).contains("negative integer"));
        // A float exponent promotes to float: no error.
        let y = x.pow_scalar(-1.0).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.5, 1.0 / 3.0]);
    }

    #[test]
    fn integer_pow_uses_the_whole_exponent() {
        let x = Tensor::from([1i64, -1, 2, 0, 3]);
        let e = (1i64 << 32) + 1; // `as u32` would make this 1
                                  // 3^(2^32) by squaring 32 times, then one more factor of 3 (all mod 2^64).
        let mut three = 3i64;
        for _ in 0..32 {
            three = three.wrapping_mul(three);
        }
        let want = vec![1, -1, 0, 0, three.wrapping_mul(3)];
        assert_eq!(x.pow_scalar(e).unwrap().to_vec::<i64>().unwrap(), want);
        let e = err_text(Tensor::from([2i32]).pow_scalar(1i64 << 32));
        assert!(
            e.contains("value cannot be converted to type int without overflow"),
            "{e}"
        );
    }

    #[test]
    fn randint_beyond_2_pow_53_stays_in_range() {
        let (lo, hi) = (i64::MAX - 10, i64::MAX);
        let v = Tensor::randint(lo, hi, [2000], DType::I64)
            .unwrap()
            .to_vec::<i64>()
            .unwrap();
        assert!(v.iter().all(|&x| (lo..hi).contains(&x)), "{v:?}");
        let v = Tensor::randint(i64::MIN, i64::MIN + 3, [200], DType::I64)
            .unwrap()
            .to_vec::<i64>()
            .unwrap();
        assert!(v.iter().all(|&x| x < i64::MIN + 3));
    }

    #[test]
    fn randint_and_full_outside_the_dtype_are_errors() {
        let e = err_text(Tensor::randint(0, 300, [2], DType::U8));
        assert!(e.contains("to - 1 is out of bounds for Byte"), "{e}");
        let e = err_text(Tensor::randint(-1, 5, [2], DType::U8));
        assert!(e.contains("from is out of bounds for Byte"), "{e}");
        assert!(Tensor::randint(0, 256, [2], DType::U8).is_ok());
        let e = err_text(Tensor::full([2], 300, DType::U8));
        assert!(
            e.contains("value cannot be converted to type uint8_t without overflow"),
            "{e}"
        );
        assert!(err_text(Tensor::full([2], 1e6, DType::F16)).contains("at::Half"));
        assert!(err_text(Tensor::full([2], f64::NAN, DType::I32)).contains("type int "));
        assert!(err_text(Tensor::full([2], 1e19, DType::I64)).contains("int64_t"));
        // PyTorch lets a negative integer wrap into an unsigned dtype once, and infinities
        // into float dtypes.
        assert_eq!(
            Tensor::full([1], -1, DType::U8)
                .unwrap()
                .to_vec::<u8>()
                .unwrap(),
            vec![255]
        );
        assert!(Tensor::full([1], f64::INFINITY, DType::F16).is_ok());
    }

    #[test]
    fn scalar_tensor_outside_the_dtype_is_an_error() {
        let e = err_text(Tensor::scalar_tensor(1e308, DType::F32));
        assert!(
            e.starts_with("scalar_tensor: value cannot be converted to type float"),
            "{e}"
        );
        let t = Tensor::scalar_tensor(-3, DType::I8).unwrap();
        assert_eq!(t.item::<i8>().unwrap(), -3);
    }

    #[test]
    fn arange_with_a_nan_step_is_an_error() {
        let e = err_text(Tensor::arange(0., 5., f64::NAN, DType::F32));
        assert!(e.contains("step must be nonzero"), "{e}");
    }

    #[test]
    fn set_grad_of_the_wrong_shape_or_dtype_is_an_error() {
        let x = Tensor::zeros([2], DType::F32).unwrap();
        let e = err_text(x.set_grad(Some(Tensor::zeros([3], DType::F32).unwrap())));
        assert!(
            e.contains("assign a gradient of size '[3]' to a tensor of size '[2]'"),
            "{e}"
        );
        let e = err_text(x.set_grad(Some(Tensor::zeros([2], DType::F64).unwrap())));
        assert!(e.contains("with dtype 'torch.float64'"), "{e}");
        x.set_grad(Some(Tensor::ones([2], DType::F32).unwrap()))
            .unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1., 1.]);
    }

    #[test]
    fn hooks_returning_the_wrong_shape_are_errors() {
        let x = Tensor::from([1f64, 2.]).requires_grad_(true).unwrap();
        x.register_hook(|_| Some(Tensor::zeros([3], DType::F64).unwrap()))
            .unwrap();
        let e = err_text(x.mul_scalar(2).unwrap().sum().unwrap().backward());
        assert!(
            e.contains("hook has changed the size of value (was [2] got [3])"),
            "{e}"
        );

        let x = Tensor::from([1f64, 2.]).requires_grad_(true).unwrap();
        let y = x.mul_scalar(2).unwrap();
        y.register_hook(|_| Some(Tensor::zeros([2], DType::F32).unwrap()))
            .unwrap();
        let e = err_text(y.sum().unwrap().backward());
        assert!(e.contains("hook has changed the type of value"), "{e}");
    }

    #[test]
    fn to_the_same_dtype_returns_self_so_inplace_ops_reach_its_grad() {
        let a = Tensor::from([1f32, 1., 1.]).requires_grad_(true).unwrap();
        let x = a.mul_scalar(1).unwrap();
        let y = x.to_dtype(DType::F32).unwrap();
        assert!(y.is_same(&x));
        y.mul_scalar_(2).unwrap();
        x.sum().unwrap().backward().unwrap();
        assert_eq!(a.grad().unwrap().to_vec::<f32>().unwrap(), vec![2., 2., 2.]);
        // Another dtype is a recorded copy.
        let z = a.to_dtype(DType::F64).unwrap();
        assert!(!z.shares_storage_with(&a));
        assert_eq!(z.grad_fn().unwrap().name(), "ToCopyBackward0");
    }
}

mod index_dtypes {
    use super::*;

    #[test]
    fn int32_indices_work_like_int64() {
        let x = Tensor::from([[1f32, 2.], [3., 4.], [5., 6.]]);
        let i64s = Tensor::from([2i64, 0]);
        let i32s = Tensor::from([2i32, 0]);
        let a = x.index_select(0, &i32s).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(a, vec![5., 6., 1., 2.]);
        assert_eq!(
            a,
            x.index_select(0, &i64s).unwrap().to_vec::<f32>().unwrap()
        );
        let g = Tensor::from([[1i32, 0], [0, 1]]);
        assert_eq!(
            x.gather(1, &g).unwrap().to_vec::<f32>().unwrap(),
            vec![2., 1., 3., 4.]
        );
        let z = Tensor::zeros([3], DType::F32).unwrap();
        let s = z
            .scatter_add(
                0,
                &Tensor::from([0i32, 0, 2]),
                &Tensor::from([1f32, 2., 3.]),
            )
            .unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![3., 0., 3.]);
        let s = z
            .index_add(0, &Tensor::from([1i32, 1]), &Tensor::from([1f32, 2.]))
            .unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![0., 3., 0.]);
        let e = err_text(x.index_select(0, &Tensor::from([0i16])));
        assert!(e.contains("Expected dtype int32/int64 for index"), "{e}");
    }

    #[test]
    fn scatter_add_index_add_and_sign_work_on_bool() {
        let z = Tensor::from([false, false, true]);
        let s = z
            .scatter_add(0, &Tensor::from([0i64, 0]), &Tensor::from([true, false]))
            .unwrap();
        assert_eq!(s.to_vec::<bool>().unwrap(), vec![true, false, true]);
        let s = z
            .index_add(0, &Tensor::from([1i64]), &Tensor::from([true]))
            .unwrap();
        assert_eq!(s.to_vec::<bool>().unwrap(), vec![false, true, true]);
        let s = Tensor::from([true, false]).sign().unwrap();
        assert_eq!(s.dtype(), DType::Bool);
        assert_eq!(s.to_vec::<bool>().unwrap(), vec![true, false]);
    }

    #[test]
    fn scatter_add_and_gather_reject_mismatched_dtypes() {
        let z = Tensor::zeros([3], DType::F32).unwrap();
        let e = err_text(z.scatter_add(0, &Tensor::from([0i64]), &Tensor::from([1f64])));
        assert!(
            e.contains("Expected self.dtype to be equal to src.dtype"),
            "{e}"
        );
        let x = Tensor::from([1f32, 2.]);
        let out = Tensor::zeros([1], DType::F64).unwrap();
        let e = err_text(kiln::gather_out(&x, 0, &Tensor::from([1i64]), false, &out));
        assert!(
            e.contains("Expected self.dtype to be equal to src.dtype"),
            "{e}"
        );
    }

    #[test]
    fn sign_records_a_zero_gradient() {
        let x = Tensor::from([-2f64, 0.5, 3.]).requires_grad_(true).unwrap();
        let y = x.sign().unwrap();
        assert_eq!(y.grad_fn().unwrap().name(), "SignBackward0");
        y.sum().unwrap().backward().unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![0., 0., 0.]);
    }
}

mod fuzz_findings {
    use super::*;

    #[test]
    fn cat_of_legacy_empty_tensors_with_any_dim_backpropagates() {
        for dim in [1, -2, 1 << 32] {
            let a = Tensor::zeros([0], DType::F32)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            let y = kiln::cat_with(&[a.clone(), a.clone()], dim).unwrap();
            assert_eq!(y.shape(), &[0]);
            y.sum().unwrap().backward().unwrap();
            assert_eq!(a.grad().unwrap().shape(), &[0]);
        }
        // Mixed with a real tensor, the empty one is skipped and gets an empty gradient.
        let e = Tensor::zeros([0], DType::F64)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let x = Tensor::from([[1f64, 2.]]).requires_grad_(true).unwrap();
        kiln::cat_with(&[e.clone(), x.clone()], 1)
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![1., 1.]);
        assert_eq!(e.grad().unwrap().numel(), 0);
    }

    #[test]
    fn unflatten_of_a_0d_tensor_or_empty_sizes_is_an_error() {
        let s = Tensor::from(1f32);
        assert!(err_text(s.unflatten(-1, ())).contains("sizes must be non-empty"));
        assert!(err_text(s.unflatten(-1, [1])).contains("has no dimensions"));
    }

    /// `err_text`, also checking that the message names `op`.
    fn op_err<T: std::fmt::Debug>(op: &str, r: kiln::Result<T>) -> String {
        let e = err_text(r);
        assert!(e.starts_with(&format!("{op}: ")), "{e}");
        e
    }

    fn v(t: &Tensor) -> Vec<f64> {
        t.to_vec::<f64>().unwrap()
    }

    #[test]
    fn split_and_chunk_with_huge_sizes_give_one_piece_per_element() {
        let x = Tensor::from([[1f64, 2.]]);
        let pieces = x.split_with(i64::MAX, -1).unwrap();
        assert_eq!(pieces.len(), 1);
        assert_eq!(v(&pieces[0]), vec![1., 2.]);
        // ceil(5 / chunks) = 1 for any huge count: five pieces of one.
        let y = Tensor::from([1f64, 2., 3., 4., 5.]);
        let pieces = y.chunk(i64::MAX).unwrap();
        assert_eq!(pieces.len(), 5);
        assert_eq!(v(&pieces[4]), vec![5.]);
        let e = op_err("split_with_sizes", y.split_with_sizes([i64::MAX, 2, 1]));
        assert!(e.contains("to sum exactly to 5"), "{e}");
    }

    #[test]
    fn chunk_of_an_empty_dim_into_a_huge_count_is_an_allocation_error() {
        let x = Tensor::zeros([0, 5], DType::F32).unwrap();
        assert_eq!(x.chunk(3).unwrap().len(), 3);
        let e = within(60, move || err_text(x.chunk(i64::MAX)));
        assert!(e.contains("not enough memory"), "{e}");
    }

    #[test]
    fn unbind_and_flip_of_a_huge_expanded_dim_are_allocation_errors() {
        let wide = Tensor::zeros([1], DType::F32)
            .unwrap()
            .expand([1i64 << 50])
            .unwrap();
        let w2 = wide.clone();
        let e = within(60, move || err_text(w2.unbind()));
        assert!(e.contains("not enough memory"), "{e}");
        let e = within(60, move || err_text(wide.flip(&[0])));
        assert!(e.contains("not enough memory"), "{e}");
    }

    #[test]
    fn repeat_and_tile_whose_size_overflows_are_errors() {
        let x = Tensor::zeros([2, 3], DType::F32).unwrap();
        let e = op_err("repeat", x.repeat([2, 1i64 << 62]));
        assert!(e.contains("overflow"), "{e}");
        let e = op_err("repeat", x.tile([i64::MAX, 3]));
        assert!(e.contains("overflow"), "{e}");
    }

    #[test]
    fn tile_to_an_empty_tensor_with_huge_dims_backpropagates() {
        // [3] tiled by [MAX, 0] is [MAX, 0]: empty, but its dims multiply past usize.
        let x = Tensor::from([1f32, 2., 3.]).requires_grad_(true).unwrap();
        let y = x.tile([i64::MAX, 0]).unwrap();
        assert_eq!(y.shape(), &[i64::MAX as usize, 0]);
        y.sum().unwrap().backward().unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![0., 0., 0.]);
    }

    #[test]
    fn pad_amounts_that_overflow_are_errors() {
        let x = Tensor::zeros([1, 3], DType::F32).unwrap();
        let e = op_err("pad", kiln::pad(&x, [i64::MAX, 1]));
        assert!(e.contains("overflow"), "{e}");
        let e = op_err(
            "pad",
            kiln::pad_with(&x, [i64::MIN, i64::MIN], "constant", None),
        );
        assert!(e.contains("overflow"), "{e}");
        // A crop of -i64::MIN with a matching pad: narrow rejects the start.
        assert!(kiln::pad(&x, [i64::MIN, i64::MAX]).is_err());
        let e = within(60, move || {
            err_text(kiln::pad_with(&x, [1i64 << 40, 0], "replicate", None))
        });
        assert!(e.contains("not enough memory"), "{e}");
    }

    #[test]
    fn pad_of_an_empty_tensor_by_a_huge_amount_is_empty() {
        let x = Tensor::zeros([0, 4, 0, 3], DType::F32).unwrap();
        let y = kiln::pad(&x, [0, 4, 0, 1i64 << 62]).unwrap();
        assert_eq!(y.shape(), &[0, 4, 1 << 62, 7]);
    }

    #[test]
    fn diag_with_a_huge_offset_is_an_error() {
        let x = Tensor::from([1f32, 2.]);
        for k in [i64::MIN, i64::MAX] {
            let e = op_err("diag", x.diag_with(k));
            assert!(e.contains("overflow"), "{e}");
        }
        assert_eq!(x.diag_with(-1).unwrap().shape(), &[3, 3]);
    }

    #[test]
    fn unfold_with_a_huge_step_has_one_window() {
        // Along dim 0 (stride 2), `stride * step` overflowed.
        let x = Tensor::from([[1f64, 2.], [3., 4.], [5., 6.], [7., 8.]]);
        let w = x.unfold(0, 2, i64::MAX).unwrap();
        assert_eq!(w.shape(), &[1, 2, 2]);
        // Window 0 holds rows 0 and 1, as the last dim: w[0, c, k] = x[k, c].
        assert_eq!(v(&w), vec![1., 3., 2., 4.]);
    }

    #[test]
    fn one_hot_of_the_largest_int64_or_a_negative_class_count_is_an_error() {
        let x = Tensor::from([0i64, i64::MAX]);
        let e = op_err("one_hot", kiln::one_hot(&x));
        assert!(e.contains("overflow"), "{e}");
        let empty = Tensor::zeros([0], DType::I64).unwrap();
        let e = op_err("one_hot", kiln::one_hot_with(&empty, -5));
        assert!(e.contains("negative dimension -5"), "{e}");
        assert_eq!(kiln::one_hot_with(&empty, 3).unwrap().shape(), &[0, 3]);
    }

    #[test]
    fn repeat_interleave_with_huge_counts_is_an_error_not_an_abort() {
        let x = Tensor::from(1f32);
        let big = Tensor::from(1i64 << 40);
        let e = within(60, move || {
            err_text(kiln::repeat_interleave_tensor_with(&x, &big, Some(0), None))
        });
        assert!(e.contains("not enough memory"), "{e}");
        let y = Tensor::from([1f32, 2.]);
        let e = op_err("repeat_interleave", y.repeat_interleave(i64::MAX));
        assert!(e.contains("overflow"), "{e}");
        let e = op_err(
            "repeat_interleave",
            kiln::repeat_interleave_with(&y, 3, None, Some(5)),
        );
        assert!(
            e.contains("output_size=5, but the repeats add up to 6"),
            "{e}"
        );
    }

    #[test]
    fn prelu_follows_pytorchs_weight_checks() {
        let w2 = Tensor::from([0.5f32, 0.25]);
        // A 1-d input has one channel.
        let e = op_err("prelu", Tensor::from([-1f32, 2.]).prelu(&w2));
        assert!(
            e.contains("parameter numbers = 2 and channel size = 1"),
            "{e}"
        );
        let e = op_err("prelu", Tensor::from(-1f32).prelu(&w2));
        assert!(e.contains("Not allow zero-dim input tensor."), "{e}");
        let empty = Tensor::zeros([0], DType::F32).unwrap();
        assert!(Tensor::zeros([0], DType::F32)
            .unwrap()
            .prelu(&empty)
            .is_err());
        let e = op_err(
            "prelu",
            Tensor::from([-2f32]).prelu(&Tensor::from([[0.5f32]])),
        );
        assert!(e.contains("ndim = 2"), "{e}");
        // One weight for any input; one per channel for dim 1.
        let y = Tensor::from([-2f32, 2.])
            .prelu(&Tensor::from([0.5f32]))
            .unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![-1., 2.]);
        let y = Tensor::from([[-4f32, -4.]]).prelu(&w2).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![-2., -1.]);
        assert_eq!(
            Tensor::zeros([3, 0], DType::F32)
                .unwrap()
                .prelu(&empty)
                .unwrap()
                .shape(),
            &[3, 0]
        );
    }

    #[test]
    fn convolution_with_huge_groups_or_strides_is_an_error() {
        let x = Tensor::zeros([4, 3], DType::F32).unwrap();
        let w = Tensor::zeros([0, 4, 5], DType::F32).unwrap();
        let e = op_err(
            "conv1d",
            kiln::conv1d_with(&x, &w, None, [1], [0], [1], 1 << 62),
        );
        assert!(e.contains("channels"), "{e}");
        let x = Tensor::zeros([1, 1, 2, 2], DType::F32).unwrap();
        let w = Tensor::zeros([1, 1, 2, 2], DType::F32).unwrap();
        let e = op_err(
            "conv_transpose2d",
            kiln::conv_transpose2d_with(&x, &w, None, [i64::MAX], [0], [0], 1, [1]),
        );
        assert!(e.contains("overflows int64"), "{e}");
        let e = op_err(
            "max_pool2d",
            kiln::max_pool2d_with(&x, &[i64::MAX], &[1], &[1 << 62], &[i64::MAX], false),
        );
        assert!(e.contains("overflow"), "{e}");
    }

    #[test]
    fn col2im_with_a_kernel_whose_product_overflows_is_an_error() {
        let cols = Tensor::zeros([2, 3, 1], DType::F32).unwrap();
        let e = op_err(
            "col2im",
            kiln::col2im(&cols, [1, 3], [1i64 << 62], [1], [0], [1]),
        );
        assert!(e.contains("overflow"), "{e}");
        let img = Tensor::zeros([0, 2, 3], DType::F32).unwrap();
        let e = op_err(
            "im2col",
            kiln::im2col(&img, [1i64 << 40, 1i64 << 40], [1], [1i64 << 40], [1]),
        );
        assert!(e.contains("overflow int64"), "{e}");
    }

    #[test]
    fn resampling_to_huge_sizes_is_an_error_not_an_abort() {
        let x = Tensor::zeros([2, 3, 4], DType::F32).unwrap();
        let (a, b) = (x.clone(), x.clone());
        let e = within(60, move || {
            err_text(kiln::adaptive_avg_pool1d(&a, &[i64::MAX]))
        });
        assert!(e.contains("overflow"), "{e}");
        let e = within(60, move || {
            err_text(kiln::upsample_nearest1d(&b, [1i64 << 40]))
        });
        assert!(e.contains("not enough memory"), "{e}");
        // Two output sizes for one spatial dim.
        let e = op_err("upsample_nearest1d", kiln::upsample_nearest1d(&x, [2, 5]));
        assert!(e.contains("output_size must be 1 positive values"), "{e}");
        let empty = Tensor::zeros([1, 5, 3, 0], DType::F32).unwrap();
        let e = op_err(
            "upsample_bilinear2d",
            kiln::upsample_bilinear2d(&empty, [3, 4], false),
        );
        assert!(
            e.contains("Input and output sizes should be greater than 0"),
            "{e}"
        );
    }

    #[test]
    fn pixel_shuffle_with_a_huge_factor_is_an_error() {
        let x = Tensor::zeros([5, 5, 3], DType::F32).unwrap();
        let e = op_err("pixel_shuffle", kiln::pixel_shuffle(&x, 1 << 62));
        assert!(e.contains("not divisible by 4611686018427387904^2"), "{e}");
        let empty = Tensor::zeros([2, 0, 0], DType::F32).unwrap();
        let e = op_err("pixel_unshuffle", kiln::pixel_unshuffle(&empty, 1 << 32));
        assert!(e.contains("overflow"), "{e}");
        // r² overflows, but divides 0 channels: [0, 1, 0] becomes [0, r, 0].
        let y = kiln::pixel_shuffle(&Tensor::zeros([0, 1, 0], DType::F32).unwrap(), 1 << 62);
        assert_eq!(y.unwrap().shape(), &[0, 1 << 62, 0]);
    }

    #[test]
    fn cross_entropy_with_zero_classes_and_probability_targets() {
        let x = Tensor::zeros([1, 0], DType::F32).unwrap();
        let y = kiln::cross_entropy_loss(&x, &x).unwrap();
        assert_eq!(y.item::<f32>().unwrap(), 0.0);
        let x = Tensor::zeros([0, 3], DType::F32).unwrap();
        assert!(kiln::cross_entropy_loss(&x, &x)
            .unwrap()
            .item::<f32>()
            .unwrap()
            .is_nan());
    }

    #[test]
    fn matmul_of_batches_broadcasting_past_int64_is_an_error() {
        let a = Tensor::zeros([1, 1, 0, 2], DType::F32)
            .unwrap()
            .expand([1i64 << 40, 1, 0, 2])
            .unwrap();
        let b = Tensor::zeros([1, 1, 2, 0], DType::F32)
            .unwrap()
            .expand([1, 1i64 << 40, 2, 0])
            .unwrap();
        let e = op_err("matmul", a.matmul(&b));
        assert!(e.contains("overflow"), "{e}");
    }

    #[test]
    fn var_over_a_repeated_dim_is_pytorchs_error_and_over_huge_empty_dims_is_empty() {
        let x = Tensor::zeros([1], DType::F32)
            .unwrap()
            .expand([1i64 << 40])
            .unwrap();
        let e = op_err("var", kiln::var_with(&x, Some(&[0, 0]), None, false));
        assert!(e.contains("dim 0 appears multiple times"), "{e}");
        // An empty tensor's reduced dims may multiply past usize (2^62 * 7).
        let empty = Tensor::zeros([0, 4, 1i64 << 62, 7], DType::F32).unwrap();
        let r = kiln::var_with(&empty, Some(&[2, 3]), None, false).unwrap();
        assert_eq!(r.shape(), &[0, 4]);
    }

    #[test]
    fn cumprod_backward_with_zeros_is_exact_and_linear() {
        // out = [2, 0, 0, 0, 0]; d/dx_0 of Σ out = 1; d/dx_1 = 2 + 2·3 + 2·3·0 + 0 = 8; the
        // later positions sit behind x_1 = 0.
        let x = Tensor::from([2f64, 0., 3., 0., 5.])
            .requires_grad_(true)
            .unwrap();
        x.cumprod(0).unwrap().sum().unwrap().backward().unwrap();
        assert_eq!(v(&x.grad().unwrap()), vec![1., 8., 0., 0., 0.]);
        // Along dim 1 of a matrix, one row without zeros: d/dx_i Σ_j Π_{k≤j} x_k.
        let m = Tensor::from([[1f64, 2., 3.], [4., 0., 0.]])
            .requires_grad_(true)
            .unwrap();
        m.cumprod(1).unwrap().sum().unwrap().backward().unwrap();
        assert_eq!(v(&m.grad().unwrap()), vec![9., 4., 2., 1., 4., 0.]);
        // It used to loop over every position (O(n²)).
        let n = 200_000;
        let mut data = vec![1f64; n];
        data[7] = 0.0;
        let long = Tensor::from_vec(data, &[n])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let l2 = long.clone();
        within(60, move || {
            l2.cumprod(0).unwrap().sum().unwrap().backward().unwrap();
        });
        let g = v(&long.grad().unwrap());
        // Position i < 7 reaches the outputs i..=6; position 7 reaches all from 7 on.
        assert_eq!(g[..8], [7., 6., 5., 4., 3., 2., 1., (n - 7) as f64]);
        assert!(g[8..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn backward_helpers_with_huge_or_negative_sizes_are_errors() {
        let g = Tensor::zeros([1, 5], DType::F32).unwrap();
        assert!(kiln::select_backward(&g, [5, 1 << 31, 1 << 31], 2, 2).is_err());
        let g0 = Tensor::zeros([0], DType::F32).unwrap();
        assert!(kiln::select_backward(&g0, [i64::MAX], -1, -1).is_err());
        assert!(kiln::slice_backward(&g0, [-1], 0, 0, 0, 1).is_err());
    }
}

#[test]
fn tensordot_of_a_0d_tensor_over_a_dim_is_an_error() {
    // Found by the fuzzer: the wrapped dim indexed an empty shape.
    let a = kiln::Tensor::from(1.0f32);
    let b = kiln::Tensor::from(vec![1.0f32]);
    let err = kiln::tensordot(&a, &b, &[-1], &[0])
        .unwrap_err()
        .to_string();
    assert!(err.contains("tensor has no dimensions"), "{err}");
}

#[test]
fn vector_norm_of_a_0d_tensor_over_dim_0_has_a_0d_gradient() {
    let x = kiln::Tensor::from(-3.0f64).requires_grad_(true).unwrap();
    let n = kiln::linalg_vector_norm_with(&x, kiln::Scalar::Float(2.0), Some(&[0]), false, None)
        .unwrap();
    assert_eq!(n.item::<f64>().unwrap(), 3.0);
    n.backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.shape(), &[] as &[usize]);
    assert_eq!(g.item::<f64>().unwrap(), -1.0);
}
