//! Autocast regions (`kiln::autocast`): which ops cast, nesting and disabled regions, the
//! weight-cast cache, autograd through the casts, backward outside autocast, and the forms
//! PyTorch leaves alone. The per-op dtype table against PyTorch is the OpInfo runner's
//! `autocast/<op>/cpu` check; these are the region's own semantics.

mod common;
use common::assert_err_contains;
use kiln::amp::{self, Autocast, CastPlan, CastPolicy};
use kiln::{DType, Device, Result, Tensor};
use std::sync::Arc;

fn randn(shape: &[usize]) -> Tensor {
    Tensor::randn(shape, DType::F32).unwrap()
}

#[test]
fn lower_ops_run_in_the_region_dtype_and_ops_without_a_policy_as_they_are() -> Result<()> {
    let (a, b) = (randn(&[4, 3]), randn(&[3, 2]));
    assert!(!amp::is_autocast_enabled(Device::Cpu));
    {
        let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
        assert!(amp::is_autocast_enabled(Device::Cpu));
        assert!(!amp::is_autocast_enabled(Device::Cuda(0)));
        assert_eq!(amp::get_autocast_dtype(Device::Cpu), DType::BF16);
        let y = a.mm(&b)?;
        assert_eq!(y.dtype(), DType::BF16);
        // The product of the bf16-rounded inputs, rounded once.
        let want = a.to_dtype(DType::BF16)?.mm(&b.to_dtype(DType::BF16)?)?;
        assert_eq!(y.to_vec::<f32>()?, want.to_vec::<f32>()?);
        assert_eq!(a.add(&a)?.dtype(), DType::F32, "add has no policy");
        assert_eq!(
            y.add(&y.to_dtype(DType::F32)?)?.dtype(),
            DType::F32,
            "and promotes as always"
        );
        // float64 is never cast.
        let d = a.to_dtype(DType::F64)?;
        assert_eq!(d.mm(&b.to_dtype(DType::F64)?)?.dtype(), DType::F64);
    }
    assert!(!amp::is_autocast_enabled(Device::Cpu));
    assert_eq!(a.mm(&b)?.dtype(), DType::F32);
    Ok(())
}

#[test]
fn nested_regions_override_and_restore() -> Result<()> {
    let (a, b) = (randn(&[2, 3]), randn(&[3, 2]));
    let _outer = kiln::autocast(Device::Cpu, DType::BF16)?;
    {
        let _off = Autocast::new(Device::Cpu).enabled(false).enter()?;
        assert!(!amp::is_autocast_enabled(Device::Cpu));
        assert_eq!(a.mm(&b)?.dtype(), DType::F32);
        {
            let _f16 = kiln::autocast(Device::Cpu, DType::F16)?;
            assert_eq!(amp::get_autocast_dtype(Device::Cpu), DType::F16);
            assert_eq!(a.mm(&b)?.dtype(), DType::F16);
        }
        assert_eq!(a.mm(&b)?.dtype(), DType::F32);
    }
    assert!(amp::is_autocast_enabled(Device::Cpu));
    assert_eq!(amp::get_autocast_dtype(Device::Cpu), DType::BF16);
    assert_eq!(a.mm(&b)?.dtype(), DType::BF16);
    Ok(())
}

#[test]
fn fp32_ops_widen_half_inputs() -> Result<()> {
    let x = randn(&[5]).to_dtype(DType::BF16)?;
    let y = randn(&[5]).to_dtype(DType::BF16)?;
    assert_eq!(kiln::mse_loss(&x, &y)?.dtype(), DType::BF16);
    let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
    let loss = kiln::mse_loss(&x, &y)?;
    assert_eq!(loss.dtype(), DType::F32);
    // The mean of squares of the bf16 values, in float64.
    let (xv, yv) = (x.to_vec::<f64>()?, y.to_vec::<f64>()?);
    let want = xv
        .iter()
        .zip(&yv)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        / 5.0;
    assert!((loss.item::<f64>()? - want).abs() < 1e-6 * want.max(1.0));
    Ok(())
}

#[test]
fn promote_casts_every_input_to_the_widest() -> Result<()> {
    let lo = Tensor::from([1.5f32, -2.0]).to_dtype(DType::BF16)?;
    let hi = Tensor::from([0.1f32]);
    let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
    let c = kiln::cat(&[lo.clone(), hi])?;
    assert_eq!(c.dtype(), DType::F32);
    assert_eq!(c.to_vec::<f32>()?, vec![1.5, -2.0, 0.1]);
    assert_eq!(kiln::cat(&[lo.clone(), lo])?.dtype(), DType::BF16);
    Ok(())
}

#[test]
fn gradients_flow_through_the_casts_to_float32_leaves() -> Result<()> {
    let x = randn(&[4, 3]);
    let w = randn(&[3, 2]).requires_grad_(true)?;
    {
        let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
        let y = x.mm(&w)?;
        assert_eq!(y.dtype(), DType::BF16);
        y.to_dtype(DType::F32)?.sum()?.backward()?;
    }
    let g = w.grad().expect("w has a gradient");
    assert_eq!(g.dtype(), DType::F32);
    // d(sum(x w))/dw[k][j] = sum_i x[i][k], with x rounded to bf16 as the product saw it.
    let xb = x.to_dtype(DType::BF16)?.to_vec::<f64>()?;
    let got = g.to_vec::<f64>()?;
    for k in 0..3 {
        let want: f64 = (0..4).map(|i| xb[i * 3 + k]).sum();
        for j in 0..2 {
            let v = got[k * 2 + j];
            assert!(
                (v - want).abs() <= 0.02 * want.abs().max(1.0),
                "{v} vs {want}"
            );
        }
    }
    Ok(())
}

#[test]
fn backward_inside_a_region_is_not_autocast() -> Result<()> {
    let x = randn(&[4, 3]);
    let w = randn(&[3, 2]).requires_grad_(true)?;
    let loss = |w: &Tensor| -> Result<Tensor> {
        let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
        x.mm(w)?.to_dtype(DType::F32)?.sum()
    };
    loss(&w)?.backward()?;
    let outside = w.grad().unwrap().to_vec::<f32>()?;
    w.set_grad(None)?;
    let l = loss(&w)?;
    {
        let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
        l.backward()?;
    }
    assert_eq!(w.grad().unwrap().to_vec::<f32>()?, outside);
    Ok(())
}

/// The node the cast of `w` for `y = x.mm(w)` sends its gradient through.
fn cast_node(y: &Tensor) -> Arc<dyn kiln::autograd::Node> {
    y.grad_fn().unwrap().next_functions()[1].clone().unwrap().0
}

#[test]
fn a_weight_is_cast_once_per_region() -> Result<()> {
    let x = randn(&[2, 3]);
    let w = randn(&[3, 2]).requires_grad_(true)?;
    let (first, again) = {
        let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
        (cast_node(&x.mm(&w)?), cast_node(&x.mm(&w)?))
    };
    assert!(
        Arc::ptr_eq(&first, &again),
        "the cast is reused in the region"
    );
    let next = {
        let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
        cast_node(&x.mm(&w)?)
    };
    assert!(!Arc::ptr_eq(&first, &next), "a new region casts afresh");
    let _r = Autocast::new(Device::Cpu).cache_enabled(false).enter()?;
    assert!(!amp::is_autocast_cache_enabled());
    assert!(!Arc::ptr_eq(&cast_node(&x.mm(&w)?), &cast_node(&x.mm(&w)?)));
    Ok(())
}

#[test]
fn out_forms_are_not_cast() -> Result<()> {
    let (a, b) = (randn(&[3, 3]), randn(&[3, 3]));
    let want = a.mm(&b)?.to_vec::<f32>()?;
    let out = Tensor::zeros(&[3, 3][..], DType::F32)?;
    let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
    kiln::mm_out(&a, &b, &out)?;
    assert_eq!(
        out.to_vec::<f32>()?,
        want,
        "computed in float32, as outside a region"
    );
    Ok(())
}

#[test]
fn an_unsupported_dtype_warns_and_disables_the_region() -> Result<()> {
    let (a, b) = (randn(&[2, 2]), randn(&[2, 2]));
    let (guard, warnings) = kiln::catch_warnings(|| kiln::autocast(Device::Cpu, DType::F64));
    let _g = guard?;
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].starts_with(
        "In CPU autocast, but the target dtype is not supported. Disabling autocast."
    ));
    assert!(!amp::is_autocast_enabled(Device::Cpu));
    assert_eq!(a.mm(&b)?.dtype(), DType::F32);
    Ok(())
}

#[test]
fn the_meta_device_has_no_autocast() {
    assert_err_contains(
        kiln::autocast(Device::Meta, DType::BF16).map(drop),
        "User specified an unsupported autocast device_type 'meta'",
    );
}

#[test]
fn regions_belong_to_their_thread() -> Result<()> {
    let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
    let other = std::thread::spawn(|| {
        let (a, b) = (randn(&[2, 2]), randn(&[2, 2]));
        (
            amp::is_autocast_enabled(Device::Cpu),
            a.mm(&b).unwrap().dtype(),
        )
    })
    .join()
    .unwrap();
    assert_eq!(other, (false, DType::F32));
    Ok(())
}

#[test]
fn set_opt_dtype_and_banned_policies() -> Result<()> {
    // No CPU op has these policies (PyTorch's CUDA lists do); the plan is checked directly.
    let half = randn(&[3]).to_dtype(DType::BF16)?;
    let ints = Tensor::from([1i64, 2]);
    let _r = kiln::autocast(Device::Cpu, DType::BF16)?;
    let plan = |t: &Tensor, p| CastPlan::new("sum", &[t], Some(p), None);
    let p = plan(&half, CastPolicy::Fp32SetOptDtype)?.expect("a region applies");
    assert_eq!(p.opt_dtype(None), Some(DType::F32));
    assert_eq!(
        p.opt_dtype(Some(DType::F64)),
        Some(DType::F64),
        "a given dtype stays"
    );
    assert_eq!(p.cast(&half)?.dtype(), DType::BF16, "nothing is cast");
    let p = plan(&ints, CastPolicy::Fp32SetOptDtype)?.unwrap();
    assert_eq!(p.opt_dtype(None), None, "an integer input is not eligible");
    assert!(CastPlan::new("sum", &[&half], None, Some(CastPolicy::Fp32))?.is_none());
    assert_err_contains(
        CastPlan::new(
            "binary_cross_entropy",
            &[&half],
            Some(CastPolicy::Banned),
            None,
        )
        .map(drop),
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.",
    );
    let f16 = randn(&[3]).to_dtype(DType::F16)?;
    assert_err_contains(
        CastPlan::new("cat", &[&half, &f16], Some(CastPolicy::Promote), None).map(drop),
        "Unexpected floating ScalarType in at::autocast::prioritize",
    );
    Ok(())
}

#[test]
fn a_captured_state_comes_back_inside_backward() -> Result<()> {
    let state = {
        let _r = kiln::autocast(Device::Cpu, DType::F16)?;
        amp::AutocastState::capture()
    };
    assert!(state.is_enabled());
    assert!(!amp::AutocastState::capture().is_enabled());
    let (a, b) = (randn(&[2, 2]), randn(&[2, 2]));
    {
        // Inside backward autocast is suspended; the state applies there all the same.
        let _suspended = amp::suspend_autocast();
        assert_eq!(a.mm(&b)?.dtype(), DType::F32);
        let _g = state.enter()?;
        assert_eq!(a.mm(&b)?.dtype(), DType::F16);
    }
    assert!(!amp::is_autocast_enabled(Device::Cpu));
    assert_eq!(a.mm(&b)?.dtype(), DType::F32);
    Ok(())
}
