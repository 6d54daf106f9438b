//! The gradient scaler's CUDA kernels (kernels/cuda/amp.cu.j2) against expectations written
//! here: the unscale of every floating dtype, on a transposed view and an offset slice, with
//! and without an inf or NaN, leaves `found_inf` on the device; the scale update follows
//! PyTorch's rule over a sequence of steps.

use kiln::{DType, Device, Result, Tensor};

const GPU: Device = Device::Cuda(0);

/// `[found_inf, inv_scale]` on the GPU.
fn scalars(found: f32, inv: f32) -> Result<(Tensor, Tensor)> {
    Ok((
        Tensor::from([found]).to_device(GPU)?,
        Tensor::from([inv]).to_device(GPU)?,
    ))
}

#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test cuda -- --ignored"]
fn amp_unscale_on_cuda_scales_in_place_and_flags_non_finite_values() -> Result<()> {
    assert!(kiln::cuda::is_available(), "CUDA tests need a device");
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        // Values exact in every dtype, times a power of two: the expected products are exact.
        let base: Vec<f64> = (0..60).map(|i| (i as f64 - 30.0) * 0.25).collect();
        for poison in [
            None,
            Some(f64::INFINITY),
            Some(f64::NAN),
            Some(f64::NEG_INFINITY),
        ] {
            let mut v = base.clone();
            if let Some(p) = poison {
                v[17] = p;
            }
            let whole = Tensor::from(v.clone())
                .reshape([6, 10])?
                .to_dtype(dtype)?
                .to_device(GPU)?;
            // A transposed view and an offset slice of one storage: two gradients, disjoint.
            let t = whole.narrow(0, 0, 3)?.t()?; // rows 0..3, transposed: [10, 3]
            let s = whole.narrow(0, 3, 3)?; // rows 3..6, offset 30
            let (found, inv) = scalars(0.0, 0.125)?;
            kiln::_amp_foreach_non_finite_check_and_unscale_(
                &[t.clone(), s.clone()],
                &found,
                &inv,
            )?;
            let got = whole.cpu()?.to_dtype(DType::F64)?.to_vec::<f64>()?;
            for (i, (g, x)) in got.iter().zip(&v).enumerate() {
                let want = x * 0.125;
                assert!(
                    g == &want || (g.is_nan() && want.is_nan()),
                    "{dtype:?}, poison {poison:?}: element {i} is {g}, expected {want}"
                );
            }
            let flag = found.cpu()?.item::<f32>()?;
            assert_eq!(
                flag,
                if poison.is_some() { 1.0 } else { 0.0 },
                "{dtype:?}, poison {poison:?}: found_inf"
            );
        }
    }
    // A flag already set stays set; a scale of 1 leaves the gradient bit for bit.
    let g = Tensor::from([1.0f64 / 3.0, 2.0]).to_device(GPU)?;
    let (found, inv) = scalars(1.0, 1.0)?;
    kiln::_amp_foreach_non_finite_check_and_unscale_(std::slice::from_ref(&g), &found, &inv)?;
    assert_eq!(g.cpu()?.to_vec::<f64>()?, [1.0 / 3.0, 2.0]);
    assert_eq!(found.cpu()?.item::<f32>()?, 1.0);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test cuda -- --ignored"]
fn amp_update_scale_on_cuda_follows_the_growth_and_backoff_rule() -> Result<()> {
    assert!(kiln::cuda::is_available(), "CUDA tests need a device");
    let scale = Tensor::from([1024.0f32]).to_device(GPU)?;
    let tracker = Tensor::from([0i32]).to_device(GPU)?;
    // (inf this step?, scale after, tracker after) with growth 2, backoff 0.5, interval 3:
    // written from PyTorch's rule, not from kiln's kernels.
    let steps = [
        (false, 1024.0, 1),
        (false, 1024.0, 2),
        (false, 2048.0, 0),
        (true, 1024.0, 0),
        (false, 1024.0, 1),
        (true, 512.0, 0),
        (false, 512.0, 1),
        (false, 512.0, 2),
        (false, 1024.0, 0),
    ];
    for (i, (inf, want_scale, want_tracker)) in steps.into_iter().enumerate() {
        let found = Tensor::from([if inf { 1.0f32 } else { 0.0 }]).to_device(GPU)?;
        kiln::_amp_update_scale_(&scale, &tracker, &found, 2.0, 0.5, 3)?;
        assert_eq!(
            (scale.cpu()?.item::<f32>()?, tracker.cpu()?.item::<i32>()?),
            (want_scale, want_tracker),
            "step {i}"
        );
    }
    // Growth that would overflow float32 keeps the scale (and resets the tracker).
    let big = Tensor::from([3.0e38f32]).to_device(GPU)?;
    let t = Tensor::from([0i32]).to_device(GPU)?;
    let zero = Tensor::from([0.0f32]).to_device(GPU)?;
    kiln::_amp_update_scale_(&big, &t, &zero, 2.0, 0.5, 1)?;
    assert_eq!(
        (big.cpu()?.item::<f32>()?, t.cpu()?.item::<i32>()?),
        (3.0e38, 0)
    );
    Ok(())
}
