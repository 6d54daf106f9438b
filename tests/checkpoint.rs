//! Activation checkpointing (`kiln::utils::checkpoint`): gradients equal a plain run's bit
//! for bit (dropout included: the generator is put back for the recomputation), inputs that
//! do not require grad, parameters captured by the function, several outputs, nesting,
//! `checkpoint_sequential`, the errors, and the memory it saves.
//!
//! The tests share the global generator and the memory counters, so they take one lock.

mod common;
use common::assert_err_contains;
use kiln::autograd::{grad, GradOptions};
use kiln::nn::{Forward, Linear, Module};
use kiln::utils::{checkpoint, checkpoint_one, checkpoint_sequential, SegmentFn};
use kiln::{DType, Result, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

fn grad_bits(t: &Tensor) -> Vec<u32> {
    bits(&t.grad().expect("a gradient"))
}

/// A layer: linear, GELU, dropout (the mask drawn from the global generator).
fn layer(lin: &Arc<Linear>, x: &Tensor) -> Result<Tensor> {
    kiln::dropout(&lin.forward(x)?.gelu()?, 0.3, true)
}

fn linears(n: usize, width: usize) -> Vec<Arc<Linear>> {
    (0..n)
        .map(|_| Arc::new(Linear::new(width, width).unwrap()))
        .collect()
}

fn zero_grads(ls: &[Arc<Linear>]) {
    for l in ls {
        l.zero_grad();
    }
}

fn param_grads(ls: &[Arc<Linear>]) -> Vec<Vec<u32>> {
    ls.iter()
        .flat_map(|l| l.parameters())
        .map(|p| grad_bits(&p))
        .collect()
}

#[test]
fn gradients_equal_the_plain_run_bitwise_with_dropout() -> Result<()> {
    let _s = serial();
    kiln::manual_seed(0);
    let ls = linears(3, 16);
    let x = Tensor::randn([8, 16], DType::F32)?.requires_grad_(true)?;

    kiln::manual_seed(7);
    let mut h = x.clone();
    for l in &ls {
        h = layer(l, &h)?;
    }
    h.pow_scalar(2)?.sum()?.backward()?;
    let (plain_x, plain_p) = (grad_bits(&x), param_grads(&ls));
    let plain_out = bits(&h);
    let plain_rng = kiln::get_rng_state();

    x.zero_grad();
    zero_grads(&ls);
    kiln::manual_seed(7);
    let mut h = x.clone();
    for l in &ls {
        let l = l.clone();
        h = checkpoint_one(move |x| layer(&l, x), &h)?;
    }
    assert_eq!(bits(&h), plain_out);
    // Dropping more masks between forward and backward must not change the recomputation.
    let _ = Tensor::rand([100], DType::F32)?;
    let rng_before_backward = kiln::get_rng_state();
    h.pow_scalar(2)?.sum()?.backward()?;
    assert_eq!(grad_bits(&x), plain_x);
    assert_eq!(param_grads(&ls), plain_p);
    // Backward put the generator back where it was.
    assert_eq!(kiln::get_rng_state(), rng_before_backward);
    assert_ne!(rng_before_backward, plain_rng);
    Ok(())
}

#[test]
fn parameters_get_gradients_when_no_input_requires_grad() -> Result<()> {
    let _s = serial();
    kiln::manual_seed(1);
    let ls = linears(2, 8);
    let x = Tensor::randn([4, 8], DType::F32)?; // data: no grad

    kiln::manual_seed(3);
    layer(&ls[1], &layer(&ls[0], &x)?)?.sum()?.backward()?;
    let plain = param_grads(&ls);

    zero_grads(&ls);
    kiln::manual_seed(3);
    let (l0, l1) = (ls[0].clone(), ls[1].clone());
    let h = checkpoint_one(move |x| layer(&l0, x), &x)?;
    assert!(h.requires_grad());
    let y = checkpoint_one(move |x| layer(&l1, x), &h)?;
    y.sum()?.backward()?;
    assert_eq!(param_grads(&ls), plain);

    // Nothing requires grad at all: the outputs do not either.
    let c = Tensor::from([1f32, 2.]);
    let y = checkpoint_one(|x| x.exp(), &c)?;
    assert!(!y.requires_grad() && y.grad_fn().is_none());
    Ok(())
}

#[test]
fn inputs_that_do_not_require_grad_get_none() -> Result<()> {
    let _s = serial();
    let a = Tensor::from([1f64, 2., 3.]).requires_grad_(true)?;
    let b = Tensor::from([4f64, 5., 6.]);
    let ab = [a.clone(), b.clone()];
    let out = checkpoint(|xs| Ok(vec![xs[0].mul(&xs[1])?.sin()?]), &ab)?;
    out[0].sum()?.backward()?;
    let expected: Vec<f64> = [1f64, 2., 3.]
        .iter()
        .zip([4f64, 5., 6.])
        .map(|(a, b)| (a * b).cos() * b)
        .collect();
    assert_eq!(a.grad().unwrap().to_vec::<f64>()?, expected);
    assert!(b.grad().is_none());
    Ok(())
}

#[test]
fn several_outputs_and_an_integer_one() -> Result<()> {
    let _s = serial();
    let run = |x: &Tensor, w: &Tensor, ckpt: bool| -> Result<(Vec<Tensor>, Vec<u32>, Vec<u32>)> {
        x.zero_grad();
        w.zero_grad();
        let f = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
            let h = xs[0].matmul(&xs[1])?;
            Ok(vec![h.tanh()?, h.argmax_with(Some(1), false)?, h.exp()?])
        };
        let inputs = [x.clone(), w.clone()];
        let outs = if ckpt {
            checkpoint(f, &inputs)?
        } else {
            f(&inputs)?
        };
        // Only the first output is used: the third gets no gradient.
        outs[0].mul_scalar(2.0)?.sum()?.backward()?;
        Ok((outs, grad_bits(x), grad_bits(w)))
    };
    kiln::manual_seed(2);
    let x = Tensor::randn([3, 4], DType::F32)?.requires_grad_(true)?;
    let w = Tensor::randn([4, 5], DType::F32)?.requires_grad_(true)?;
    let (plain, px, pw) = run(&x, &w, false)?;
    let (ck, cx, cw) = run(&x, &w, true)?;
    assert_eq!((cx, cw), (px, pw));
    assert_eq!(ck[1].dtype(), DType::I64);
    assert!(!ck[1].requires_grad());
    assert_eq!(ck[1].to_vec::<i64>()?, plain[1].to_vec::<i64>()?);
    assert!(ck[2].requires_grad());

    // Both float outputs used.
    x.zero_grad();
    let outs = checkpoint(
        |xs| Ok(vec![xs[0].sin()?, xs[0].mul_scalar(3.0)?]),
        std::slice::from_ref(&x),
    )?;
    outs[0].add(&outs[1])?.sum()?.backward()?;
    let expected: Vec<f32> = x.to_vec::<f32>()?.iter().map(|v| v.cos() + 3.0).collect();
    assert_eq!(x.grad().unwrap().to_vec::<f32>()?, expected);
    Ok(())
}

#[test]
fn an_output_that_is_an_input_keeps_the_input_a_leaf() -> Result<()> {
    let _s = serial();
    let x = Tensor::from([1f64, 2.]).requires_grad_(true)?;
    let out = checkpoint(|xs| Ok(vec![xs[0].clone()]), std::slice::from_ref(&x))?;
    assert!(x.is_leaf());
    out[0].mul_scalar(5.0)?.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![5.0, 5.0]);
    Ok(())
}

#[test]
fn nested_checkpoints_equal_the_plain_run() -> Result<()> {
    let _s = serial();
    kiln::manual_seed(4);
    let ls = linears(3, 8);
    let x = Tensor::randn([5, 8], DType::F32)?.requires_grad_(true)?;

    kiln::manual_seed(11);
    let y = layer(&ls[2], &layer(&ls[1], &layer(&ls[0], &x)?)?)?;
    y.sum()?.backward()?;
    let (px, pp) = (grad_bits(&x), param_grads(&ls));

    x.zero_grad();
    zero_grads(&ls);
    kiln::manual_seed(11);
    let inner_ls = ls.clone();
    let y = checkpoint_one(
        move |x| {
            let (a, b) = (inner_ls[0].clone(), inner_ls[1].clone());
            let h = layer(&a, x)?;
            let h = checkpoint_one(move |h| layer(&b, h), &h)?;
            layer(&inner_ls[2], &h)
        },
        &x,
    )?;
    y.sum()?.backward()?;
    assert_eq!(grad_bits(&x), px);
    assert_eq!(param_grads(&ls), pp);
    Ok(())
}

#[test]
fn checkpoint_sequential_equals_the_plain_run() -> Result<()> {
    let _s = serial();
    kiln::manual_seed(5);
    let ls = linears(5, 8);
    let x = Tensor::randn([3, 8], DType::F32)?.requires_grad_(true)?;
    let fns: Vec<SegmentFn> = ls
        .iter()
        .map(|l| {
            let l = l.clone();
            Arc::new(move |x: &Tensor| layer(&l, x)) as SegmentFn
        })
        .collect();

    kiln::manual_seed(12);
    let mut h = x.clone();
    for f in &fns {
        h = f(&h)?;
    }
    h.sum()?.backward()?;
    let (px, pp) = (grad_bits(&x), param_grads(&ls));

    for segments in [1, 2, 3, 5] {
        x.zero_grad();
        zero_grads(&ls);
        kiln::manual_seed(12);
        checkpoint_sequential(&fns, segments, &x)?
            .sum()?
            .backward()?;
        assert_eq!(grad_bits(&x), px, "{segments} segments");
        assert_eq!(param_grads(&ls), pp, "{segments} segments");
    }
    assert_err_contains(
        checkpoint_sequential(&fns, 0, &x),
        "checkpoint_sequential: segments must be between 1 and the number of functions (5), but got 0",
    );
    assert_err_contains(checkpoint_sequential(&fns, 6, &x), "but got 6");
    Ok(())
}

#[test]
fn with_grad_mode_off_the_function_just_runs() -> Result<()> {
    let _s = serial();
    let x = Tensor::from([1f32, 2.]).requires_grad_(true)?;
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let y = {
        let _g = kiln::no_grad();
        checkpoint_one(
            move |x| {
                c.fetch_add(1, Ordering::Relaxed);
                x.exp()
            },
            &x,
        )?
    };
    assert!(!y.requires_grad());
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    Ok(())
}

#[test]
fn errors() -> Result<()> {
    let _s = serial();
    let x = Tensor::from([1f64, 2.]).requires_grad_(true)?;

    // The function's own error, at forward.
    assert_err_contains(
        checkpoint_one(|x| x.matmul(&Tensor::from([1f64, 2., 3.])), &x),
        "matmul",
    );

    // Twice without retain_graph: the inputs were let go; with it, fine.
    let y = checkpoint_one(|x| x.exp(), &x)?.sum()?;
    x.zero_grad();
    y.backward_with(None, true, false)?;
    y.backward()?;
    assert_err_contains(
        y.backward(),
        "Trying to backward through the graph a second time",
    );

    // An input modified in place after the forward.
    let a = Tensor::from([1f64, 2.]).requires_grad_(true)?;
    let h = a.mul_scalar(1.0)?;
    let y = checkpoint_one(|x| x.exp(), &h)?.sum()?;
    {
        let _g = kiln::no_grad();
        h.add_scalar_(1.0)?;
    }
    assert_err_contains(y.backward(), "modified by an inplace operation");

    // A recomputation that returns another number of outputs.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let out = checkpoint(
        move |xs| {
            let n = c.fetch_add(1, Ordering::Relaxed);
            let mut v = vec![xs[0].exp()?];
            if n > 0 {
                v.push(xs[0].sin()?);
            }
            Ok(v)
        },
        std::slice::from_ref(&x),
    )?;
    assert_err_contains(
        out[0].sum()?.backward(),
        "checkpoint: A different number of tensors was saved during the original forward and recomputation.\nNumber of tensors saved during forward: 1\nNumber of tensors saved during recomputation: 2",
    );

    // A recomputation that saves a tensor of another shape.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let out = checkpoint_one(
        move |x| {
            let n = if c.fetch_add(1, Ordering::Relaxed) == 0 {
                2
            } else {
                1
            };
            x.narrow(0, 0, n)?.exp()
        },
        &x,
    )?;
    assert_err_contains(
        out.sum()?.backward(),
        "checkpoint: Recomputed values for the following tensors have different metadata than during the forward pass.\ntensor at position 0:\nsaved metadata: {'shape': [2], 'dtype': torch.float64}\nrecomputed metadata: {'shape': [1], 'dtype': torch.float64}",
    );
    Ok(())
}

/// `autograd::grad` through checkpoints: the same gradients as the plain run, bit for bit
/// (dropout included), and no `.grad` touched, by the recomputation either.
#[test]
fn autograd_grad_through_checkpoints_equals_the_plain_run() -> Result<()> {
    let _s = serial();
    kiln::manual_seed(8);
    let ls = linears(2, 8);
    let x = Tensor::randn([4, 8], DType::F32)?.requires_grad_(true)?;
    let params: Vec<Tensor> = ls.iter().flat_map(|l| l.parameters()).collect();
    let mut wrt = vec![x.clone()];
    wrt.extend(params.iter().cloned());
    let run = |ckpt: bool| -> Result<Vec<Vec<u32>>> {
        kiln::manual_seed(13);
        let mut h = x.clone();
        for l in &ls {
            let l = l.clone();
            h = if ckpt {
                checkpoint_one(move |x| layer(&l, x), &h)?
            } else {
                layer(&l, &h)?
            };
        }
        let gs = grad(&[h.sum()?], &wrt, &[], GradOptions::default())?;
        Ok(gs
            .iter()
            .map(|g| bits(g.as_ref().expect("a gradient")))
            .collect())
    };
    let plain = run(false)?;
    assert_eq!(run(true)?, plain);
    assert!(x.grad().is_none() && params.iter().all(|p| p.grad().is_none()));
    Ok(())
}

/// Double backward through a checkpoint: the second derivative of sum(x·sin x) is
/// 2 cos x − x sin x, computed here in f64 from the formula; and for layers with dropout,
/// the plain run's, bit for bit.
#[test]
fn double_backward_through_a_checkpoint() -> Result<()> {
    let _s = serial();
    let xs = [0.3f64, -1.2, 2.5];
    let x = Tensor::from(xs).requires_grad_(true)?;
    let y = checkpoint_one(|x| x.mul(&x.sin()?), &x)?.sum()?;
    let opts = GradOptions {
        create_graph: true,
        ..GradOptions::default()
    };
    let g = grad(&[y], std::slice::from_ref(&x), &[], opts)?
        .remove(0)
        .expect("a gradient");
    assert!(g.requires_grad());
    g.sum()?.backward()?;
    let got = x.grad().unwrap().to_vec::<f64>()?;
    for (v, want) in got.iter().zip(xs.map(|x| 2.0 * x.cos() - x * x.sin())) {
        assert!((v - want).abs() <= 1e-12, "{v} vs {want}");
    }

    kiln::manual_seed(9);
    let ls = linears(2, 6);
    let x = Tensor::randn([3, 6], DType::F32)?.requires_grad_(true)?;
    let run = |ckpt: bool| -> Result<(Vec<u32>, Vec<Vec<u32>>)> {
        x.zero_grad();
        zero_grads(&ls);
        kiln::manual_seed(14);
        let mut h = x.clone();
        for l in &ls {
            let l = l.clone();
            let f = move |x: &Tensor| kiln::dropout(&l.forward(x)?.tanh()?, 0.3, true);
            h = if ckpt { checkpoint_one(f, &h)? } else { f(&h)? };
        }
        let g = grad(&[h.sum()?], std::slice::from_ref(&x), &[], opts)?
            .remove(0)
            .expect("a gradient");
        g.pow_scalar(2)?.sum()?.backward()?;
        Ok((grad_bits(&x), param_grads(&ls)))
    };
    let plain = run(false)?;
    assert_eq!(run(true)?, plain);
    Ok(())
}

/// Peak memory of forward + backward of a 12-layer MLP (linear + GELU, width 512, batch
/// 1024), plain and checkpointed per layer, above what was alive before (parameters and
/// data). A plain run keeps each layer's input and GELU input (2 × 2 MiB a layer); the
/// checkpointed one keeps each layer's input, plus one layer's activations during its
/// recomputation; both end with 12 MiB of weight gradients. Measured (debug build, 2-core
/// VM, twice the same): plain 58.0 MiB, checkpointed 39.0 MiB (0.67×); asserted < 0.75×.
#[test]
fn checkpointing_lowers_peak_memory() -> Result<()> {
    let _s = serial();
    kiln::manual_seed(6);
    let ls: Vec<Arc<Linear>> = linears(12, 512);
    let x = Tensor::randn([1024, 512], DType::F32)?;
    let step = |ckpt: bool| -> Result<usize> {
        zero_grads(&ls);
        let base = kiln::cpu::memory_allocated();
        kiln::cpu::reset_peak_memory_stats();
        let mut h = x.clone();
        for l in &ls {
            let l = l.clone();
            let f = move |x: &Tensor| l.forward(x)?.gelu();
            h = if ckpt { checkpoint_one(f, &h)? } else { f(&h)? };
        }
        h.mean()?.backward()?;
        drop(h);
        Ok(kiln::cpu::max_memory_allocated() - base)
    };
    let plain = step(false)?;
    let ckpt = step(true)?;
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    eprintln!(
        "peak above baseline: plain {:.1} MiB, checkpointed {:.1} MiB ({:.2}x)",
        mib(plain),
        mib(ckpt),
        ckpt as f64 / plain as f64
    );
    assert!(
        (ckpt as f64) < 0.75 * plain as f64,
        "checkpointed peak {ckpt} bytes is not below 0.75x the plain {plain}"
    );
    Ok(())
}

#[test]
fn the_recomputation_casts_as_the_autocast_forward_did() -> Result<()> {
    use kiln::Device;
    let x = Tensor::randn([4, 3], DType::F32)?.requires_grad_(true)?;
    let w = Tensor::randn([3, 2], DType::F32)?.requires_grad_(true)?;
    let run = |ckpt: bool| -> Result<(Vec<f32>, Vec<f32>)> {
        x.set_grad(None)?;
        w.set_grad(None)?;
        let y = {
            let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
            if ckpt {
                let wf = w.clone();
                checkpoint(move |xs| Ok(vec![xs[0].mm(&wf)?]), std::slice::from_ref(&x))?.remove(0)
            } else {
                x.mm(&w)?
            }
        };
        assert_eq!(y.dtype(), DType::BF16);
        // Backward outside the region: the recomputation must open it again.
        y.to_dtype(DType::F32)?.sum()?.backward()?;
        Ok((x.grad().unwrap().to_vec()?, w.grad().unwrap().to_vec()?))
    };
    assert_eq!(run(true)?, run(false)?);
    Ok(())
}
