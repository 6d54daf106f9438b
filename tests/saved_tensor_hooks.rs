//! Saved-tensor hooks (`kiln::autograd::saved_tensors_hooks`, PyTorch's
//! `torch.autograd.graph.saved_tensors_hooks`): what pack sees, that unpack's tensor is the
//! one backward uses, that unpacked tensors keep their history (double backward, leaves'
//! `.grad`), nesting, and the thread-local scope. Expected gradients are worked out by hand.

use kiln::autograd::{grad, saved_tensors_hooks, GradOptions, Packed};
use kiln::{DType, Result, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn leaf<const N: usize>(v: [f64; N]) -> Tensor {
    Tensor::from(v).requires_grad_(true).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

/// Hooks that keep a copy of each saved tensor and count packs and unpacks.
fn copying_hooks(
    packs: Arc<AtomicUsize>,
    unpacks: Arc<AtomicUsize>,
) -> kiln::autograd::SavedTensorsHooksGuard {
    saved_tensors_hooks(
        move |t| {
            packs.fetch_add(1, Ordering::Relaxed);
            Box::new(t.clone_tensor().expect("a copy")) as Packed
        },
        move |p| {
            unpacks.fetch_add(1, Ordering::Relaxed);
            Ok(p.downcast_ref::<Tensor>().expect("a tensor").clone())
        },
    )
}

#[test]
fn pack_sees_each_saved_tensor_and_unpack_feeds_backward() -> Result<()> {
    let (packs, unpacks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let x = leaf([1.0, 2.0, 3.0]);
    let y = {
        let _h = copying_hooks(packs.clone(), unpacks.clone());
        // exp saves its output; mul saves both operands.
        x.exp()?.mul(&x)?
    };
    assert_eq!(packs.load(Ordering::Relaxed), 3);
    assert_eq!(unpacks.load(Ordering::Relaxed), 0);
    y.sum()?.backward()?;
    assert_eq!(unpacks.load(Ordering::Relaxed), 3);
    // d/dx (x eˣ) = eˣ (x + 1)
    let got = values(&x.grad().unwrap());
    for (g, v) in got.iter().zip([1f64, 2., 3.]) {
        let want = v.exp() * (v + 1.0);
        assert!((g - want).abs() <= 1e-14 * want, "{g} vs {want}");
    }

    // After the guard: nothing is packed.
    let before = packs.load(Ordering::Relaxed);
    x.exp()?.sum()?.backward()?;
    assert_eq!(packs.load(Ordering::Relaxed), before);
    Ok(())
}

#[test]
fn backward_uses_what_unpack_returns() -> Result<()> {
    // Unpack hands back twice the saved value: mul's gradient for x is then 2·w.
    let x = leaf([1.0, 2.0]);
    let w = Tensor::from([3.0f64, 5.0]);
    let y = {
        let _h = saved_tensors_hooks(
            |t| Box::new(t.clone()) as Packed,
            |p| {
                p.downcast_ref::<Tensor>()
                    .expect("a tensor")
                    .mul_scalar(2.0)
            },
        );
        x.mul(&w)?
    };
    y.sum()?.backward()?;
    assert_eq!(values(&x.grad().unwrap()), [6.0, 10.0]);
    Ok(())
}

#[test]
fn unpacked_tensors_keep_their_history_for_double_backward() -> Result<()> {
    let (packs, unpacks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let opts = GradOptions {
        create_graph: true,
        ..GradOptions::default()
    };
    // A non-leaf saved tensor: y = (2x)³, dy/dx = 24x², d²y/dx² = 48x.
    let x = leaf([1.5, -2.0]);
    let y = {
        let _h = copying_hooks(packs.clone(), unpacks.clone());
        x.mul_scalar(2.0)?.pow_scalar(3)?
    };
    let g = grad(&[y.sum()?], std::slice::from_ref(&x), &[], opts)?
        .remove(0)
        .unwrap();
    assert_eq!(values(&g), [54.0, 96.0]);
    g.sum()?.backward()?;
    assert_eq!(values(&x.grad().unwrap()), [72.0, -96.0]);

    // A saved leaf: z = Σ x·w; dz/dx = w (the unpacked copy of w), and its gradient must
    // reach w's own `.grad`.
    let x = leaf([1.0, 2.0]);
    let w = leaf([3.0, 4.0]);
    let z = {
        let _h = copying_hooks(packs, unpacks);
        x.mul(&w)?.sum()?
    };
    let g = grad(&[z], std::slice::from_ref(&x), &[], opts)?
        .remove(0)
        .unwrap();
    assert_eq!(values(&g), [3.0, 4.0]);
    g.mul_scalar(5.0)?.sum()?.backward()?;
    assert_eq!(values(&w.grad().unwrap()), [5.0, 5.0]);
    assert!(x.grad().is_none());
    Ok(())
}

#[test]
fn the_innermost_hooks_apply_and_pack_runs_without_hooks() -> Result<()> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let x = leaf([1.0, 2.0]);
    let (outer, inner) = (seen.clone(), seen.clone());
    let _o = saved_tensors_hooks(
        move |t| {
            outer.lock().unwrap().push("outer");
            // Ops inside pack save nothing through hooks (and record nothing).
            let copy = t.exp().unwrap().log().unwrap();
            assert!(!copy.requires_grad());
            Box::new(copy) as Packed
        },
        |p| Ok(p.downcast_ref::<Tensor>().expect("a tensor").clone()),
    );
    let a = x.sin()?;
    {
        let _i = saved_tensors_hooks(
            move |t| {
                inner.lock().unwrap().push("inner");
                Box::new(t.clone()) as Packed
            },
            |p| Ok(p.downcast_ref::<Tensor>().expect("a tensor").clone()),
        );
        let _b = a.cos()?;
    }
    let _c = a.tanh()?;
    assert_eq!(*seen.lock().unwrap(), ["outer", "inner", "outer"]);
    Ok(())
}

#[test]
fn hooks_are_per_thread() -> Result<()> {
    let packs = Arc::new(AtomicUsize::new(0));
    let p = packs.clone();
    let _h = saved_tensors_hooks(
        move |t| {
            p.fetch_add(1, Ordering::Relaxed);
            Box::new(t.clone()) as Packed
        },
        |p| Ok(p.downcast_ref::<Tensor>().expect("a tensor").clone()),
    );
    std::thread::spawn(|| -> Result<()> {
        let x = Tensor::randn([3], DType::F64)?.requires_grad_(true)?;
        x.exp()?.sum()?.backward()
    })
    .join()
    .expect("the thread ran")?;
    assert_eq!(packs.load(Ordering::Relaxed), 0);
    let x = leaf([0.5]);
    x.exp()?.sum()?.backward()?;
    assert_eq!(packs.load(Ordering::Relaxed), 1);
    Ok(())
}

#[test]
fn an_unpack_error_fails_backward() {
    let x = leaf([1.0]);
    let y = {
        let _h = saved_tensors_hooks(
            |t| Box::new(t.clone()) as Packed,
            |_| Err(kiln::Error::value("unpack", "offloaded copy lost")),
        );
        x.exp().unwrap()
    };
    let e = y.sum().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("offloaded copy lost"), "{e}");
}
