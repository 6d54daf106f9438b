//! `GradScaler` against PyTorch's `torch.amp.GradScaler` (numbers from
//! `scripts/amp/grad_scaler_reference.py`, committed in `tests/data/grad_scaler_reference.txt`),
//! its two ops against float64 loops written here, its errors and its state_dict.

mod common;
use common::assert_close;
use kiln_core::{
    _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_, DType, Device, ErrorKind,
    Result, Tensor,
};
use kiln_optim::{GradScaler, GradScalerState, Optimizer, SGDOptions, SGD};
use std::collections::HashMap;

fn reference() -> HashMap<String, Vec<f64>> {
    common::reference(include_str!("data/grad_scaler_reference.txt"))
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

fn f32_tensor(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
}

/// Writes `value` at flat index `i` of `t`'s gradient.
fn poke_grad(t: &Tensor, i: usize, value: f64) {
    let _g = kiln_core::no_grad();
    let g = t.grad().expect("a gradient");
    g.reshape([-1i64])
        .unwrap()
        .narrow(0, i as i64, 1)
        .unwrap()
        .fill_(value)
        .unwrap();
}

#[test]
fn replays_pytorchs_sequence_with_growth_backoff_and_skipped_steps() {
    let r = reference();
    let c = &r["config"];
    let (init_scale, growth, backoff, interval, lr, momentum, steps) =
        (c[0], c[1], c[2], c[3] as i64, c[4], c[5], c[6] as usize);
    let x = f32_tensor(&r["x"], &[4, 3]);
    let y = f32_tensor(&r["y"], &[4, 2]);
    let w = f32_tensor(&r["w0"], &[2, 3]).requires_grad_(true).unwrap();
    let b = f32_tensor(&r["b0"], &[2]).requires_grad_(true).unwrap();
    let mut opt = SGD::new(
        vec![w.clone(), b.clone()],
        SGDOptions {
            lr,
            momentum,
            ..Default::default()
        },
    )
    .unwrap();
    let mut scaler = GradScaler::builder(Device::Cpu)
        .init_scale(init_scale)
        .growth_factor(growth)
        .backoff_factor(backoff)
        .growth_interval(interval)
        .build()
        .unwrap();
    let params = [w.clone(), b.clone()];
    for k in 0..steps {
        opt.zero_grad().unwrap();
        let d = x
            .matmul(&w.t().unwrap())
            .unwrap()
            .add(&b)
            .unwrap()
            .sub(&y)
            .unwrap();
        let loss = d.mul(&d).unwrap().mean().unwrap();
        let scale_before = scaler.get_scale().unwrap();
        scaler.scale(&loss).unwrap().backward().unwrap();
        if let Some(inj) = r.get(&format!("inject.{k}")) {
            poke_grad(&params[inj[0] as usize], inj[1] as usize, inj[2]);
        }
        if let Some(want) = r.get(&format!("unscale.{k}")) {
            scaler.unscale_(&opt).unwrap();
            assert_close(
                &vals(&w.grad().unwrap()),
                want,
                1e-5,
                1e-6,
                &format!("unscaled grad at step {k}"),
            );
        }
        let stepped = scaler.step(&mut opt).unwrap();
        scaler.update().unwrap();
        let got = [
            scale_before,
            stepped as u8 as f64,
            scaler.get_scale().unwrap(),
            scaler.get_growth_tracker().unwrap() as f64,
        ];
        assert_eq!(
            &got[..],
            &r[&format!("step.{k}")][..],
            "step {k}: [scale before, stepped, scale after, growth tracker]"
        );
        assert_close(
            &vals(&w),
            &r[&format!("w.{k}")],
            1e-5,
            1e-6,
            &format!("weight after step {k}"),
        );
        assert_close(
            &vals(&b),
            &r[&format!("b.{k}")],
            1e-5,
            1e-6,
            &format!("bias after step {k}"),
        );
    }
    let s = scaler.state_dict().unwrap();
    let got: Vec<f64> = [
        "scale",
        "growth_factor",
        "backoff_factor",
        "growth_interval",
        "_growth_tracker",
    ]
    .iter()
    .map(|k| s[*k])
    .collect();
    assert_eq!(got, r["state"]);
}

/// The element `v` of dtype `dtype` times `inv` as the kernel must compute it: in float64,
/// then rounded to float32 for f32/f16/bf16 (their opmath type), then to the dtype.
fn unscale_ref(v: f64, inv: f32, dtype: DType) -> f64 {
    let p = v * inv as f64;
    let stored = Tensor::from_vec(
        vec![if dtype == DType::F64 {
            p
        } else {
            p as f32 as f64
        }],
        &[1],
    )
    .unwrap();
    vals(&stored.to_dtype(dtype).unwrap())[0]
}

/// Values with an inf or NaN (`poison`) in the middle.
fn grad_values(n: usize, poison: Option<f64>) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n)
        .map(|i| ((i as f64) * 0.37).sin() * 3.0 + 0.01 * i as f64)
        .collect();
    if let Some(p) = poison {
        v[n / 2] = p;
    }
    v
}

/// Checks the fused op on one gradient (a view `make` builds over a base of `base_len`
/// values) for each floating dtype and two inverse scales, against a float64 loop.
fn check_unscale(
    what: &str,
    base_len: usize,
    make: &dyn Fn(&Tensor) -> Tensor,
    poison: Option<f64>,
) {
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        // 0.25 multiplies exactly; 1/3 rounds.
        for inv in [0.25f32, (1.0f64 / 3.0) as f32] {
            let base = Tensor::from_vec(grad_values(base_len, poison), &[base_len])
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let g = make(&base);
            let before_base = vals(&base);
            let before = vals(&g);
            let found_inf = Tensor::zeros([1], DType::F32).unwrap();
            let inv_t = Tensor::from_vec(vec![inv], &[1]).unwrap();
            _amp_foreach_non_finite_check_and_unscale_(
                std::slice::from_ref(&g),
                &found_inf,
                &inv_t,
            )
            .unwrap();
            let want: Vec<f64> = before.iter().map(|&v| unscale_ref(v, inv, dtype)).collect();
            let got = vals(&g);
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    a == b || (a.is_nan() && b.is_nan()),
                    "{what} {dtype:?} inv {inv}: element {i} is {a}, want {b}"
                );
            }
            let want_found = before.iter().any(|v| !v.is_finite());
            assert_eq!(
                found_inf.item::<f32>().unwrap(),
                want_found as u8 as f32,
                "{what} {dtype:?} found_inf"
            );
            // Elements of the base outside the view are left alone.
            let touched = base_len - g.numel();
            let unchanged = vals(&base)
                .iter()
                .zip(&before_base)
                .filter(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
                .count();
            assert!(
                unchanged >= touched,
                "{what} {dtype:?}: wrote outside the view"
            );
        }
    }
}

#[test]
fn unscale_matches_a_float64_loop_for_every_floating_dtype_and_layout() {
    let contiguous = |t: &Tensor| t.reshape([6i64, 7]).unwrap();
    let transposed = |t: &Tensor| t.reshape([6i64, 7]).unwrap().t().unwrap();
    // Every other column of a [6, 8]: not dense.
    let strided = |t: &Tensor| {
        t.reshape([6i64, 8])
            .unwrap()
            .as_strided_with([6i64, 4], [8i64, 2], Some(1))
            .unwrap()
    };
    for poison in [
        None,
        Some(f64::INFINITY),
        Some(f64::NEG_INFINITY),
        Some(f64::NAN),
    ] {
        check_unscale("contiguous", 42, &contiguous, poison);
        check_unscale("transposed", 42, &transposed, poison);
        check_unscale("strided", 48, &strided, poison);
    }
}

#[test]
fn unscale_of_a_large_gradient_finds_an_inf_in_any_chunk() {
    // Past the kernel's parallel threshold, with the inf in the last chunk.
    let n = 1 << 17;
    let mut v = vec![2.0f32; n];
    v[n - 3] = f32::INFINITY;
    let g = Tensor::from_vec(v, &[n]).unwrap();
    let found_inf = Tensor::zeros([1], DType::F32).unwrap();
    _amp_foreach_non_finite_check_and_unscale_(
        std::slice::from_ref(&g),
        &found_inf,
        &Tensor::from([0.5f32]),
    )
    .unwrap();
    assert_eq!(found_inf.item::<f32>().unwrap(), 1.0);
    let got = g.to_vec::<f32>().unwrap();
    assert_eq!((got[0], got[n - 1], got[n - 3]), (1.0, 1.0, f32::INFINITY));
}

#[test]
fn unscale_takes_a_list_of_mixed_dtypes_and_never_clears_found_inf() {
    let a = Tensor::from([4.0f32, 8.0]);
    let b = Tensor::from([2.0f64, 6.0]);
    let c = Tensor::from([1.0f32, 3.0]).to_dtype(DType::BF16).unwrap();
    let found_inf = Tensor::from([1.0f32]);
    _amp_foreach_non_finite_check_and_unscale_(
        &[a.clone(), b.clone(), c.clone()],
        &found_inf,
        &Tensor::from([0.5f32]),
    )
    .unwrap();
    assert_eq!(vals(&a), [2.0, 4.0]);
    assert_eq!(vals(&b), [1.0, 3.0]);
    assert_eq!(vals(&c), [0.5, 1.5]);
    assert_eq!(
        found_inf.item::<f32>().unwrap(),
        1.0,
        "an earlier inf is kept"
    );
    // Written in place: autograd sees the new version of each gradient's storage.
    let v = a.version();
    _amp_foreach_non_finite_check_and_unscale_(
        std::slice::from_ref(&a),
        &found_inf,
        &Tensor::from([0.5f32]),
    )
    .unwrap();
    assert!(a.version() > v, "the version counter moved");
    // An empty list is fine, as in PyTorch.
    _amp_foreach_non_finite_check_and_unscale_(&[], &found_inf, &Tensor::from([0.5f32])).unwrap();
}

/// PyTorch's rule, written out in float64.
fn update_ref(
    scale: f64,
    tracker: i64,
    found: bool,
    growth: f64,
    backoff: f64,
    interval: i64,
) -> (f64, i64) {
    if found {
        return ((scale * backoff) as f32 as f64, 0);
    }
    if tracker + 1 == interval {
        let grown = (scale * growth) as f32;
        (
            if grown.is_finite() {
                grown as f64
            } else {
                scale
            },
            0,
        )
    } else {
        (scale, tracker + 1)
    }
}

#[test]
fn update_scale_follows_pytorchs_rule() {
    let cases = [
        (65536.0, 0, 0.0, 2.0, 0.5, 3),
        (65536.0, 2, 0.0, 2.0, 0.5, 3),
        (65536.0, 2, 1.0, 2.0, 0.5, 3),
        (65536.0, 1, f64::NAN, 2.0, 0.5, 3),
        (3.0e38, 1, 0.0, 2.0, 0.5, 2),
        (1.0, 5, 0.0, 2.0, 0.5, 3),
        (10.0, 0, 2.0, 3.0, 0.1, 1),
        (10.0, 0, 0.0, 3.0, 0.1, 1),
    ];
    for (scale, tracker, found, growth, backoff, interval) in cases {
        let s = Tensor::from([scale as f32]);
        let t = Tensor::from([tracker as i32]);
        let out = _amp_update_scale_(
            &s,
            &t,
            &Tensor::from([found as f32]),
            growth,
            backoff,
            interval,
        )
        .unwrap();
        assert!(out.is_same(&s), "returns self");
        let want = update_ref(
            scale as f32 as f64,
            tracker,
            found != 0.0,
            growth,
            backoff,
            interval,
        );
        assert_eq!(
            (vals(&s)[0], t.item::<i32>().unwrap() as i64),
            want,
            "scale {scale} tracker {tracker} found_inf {found}"
        );
    }
}

#[test]
fn ops_refuse_pytorchs_bad_arguments() {
    let g = [Tensor::from([1.0f32, 2.0])];
    let f = Tensor::from([0.0f32]);
    let inv = Tensor::from([1.0f32]);
    let unscale_err = |g: &[Tensor], f: &Tensor, inv: &Tensor| {
        _amp_foreach_non_finite_check_and_unscale_(g, f, inv)
            .unwrap_err()
            .to_string()
    };
    let e = unscale_err(&g, &Tensor::zeros([2], DType::F32).unwrap(), &inv);
    assert!(e.contains("found_inf must be a 1-element tensor."), "{e}");
    let e = unscale_err(&g, &f, &Tensor::ones([2], DType::F32).unwrap());
    assert!(e.contains("inv_scale must be a 1-element tensor."), "{e}");
    let e = unscale_err(&g, &Tensor::from([0.0f64]), &inv);
    assert!(e.contains("found_inf must be a float tensor."), "{e}");
    let e = unscale_err(&g, &f, &Tensor::from([1.0f64]));
    assert!(e.contains("inv_scale must be a float tensor."), "{e}");
    let e = _amp_foreach_non_finite_check_and_unscale_(&[Tensor::from([1i64, 2])], &f, &inv)
        .unwrap_err();
    assert!(e.to_string().contains("not implemented for 'Long'"), "{e}");
    assert_eq!(e.kind(), ErrorKind::DType);
    let expanded = Tensor::from([1.0f32]).expand([3i64]).unwrap();
    let e = unscale_err(&[expanded], &f, &inv);
    assert!(e.contains("more than one element"), "{e}");
    let e = unscale_err(
        &g,
        &Tensor::from([0.0f32]).to_device(Device::Meta).unwrap(),
        &inv,
    );
    assert!(
        e.starts_with("_amp_foreach_non_finite_check_and_unscale_:"),
        "{e}"
    );

    let s = Tensor::from([4.0f32]);
    let t = Tensor::from([0i32]);
    let update_err = |s: &Tensor, t: &Tensor, f: &Tensor| {
        _amp_update_scale_(s, t, f, 2.0, 0.5, 3)
            .unwrap_err()
            .to_string()
    };
    let e = update_err(&s, &Tensor::from([0i64]), &f);
    assert!(e.contains("growth_tracker must be an int tensor."), "{e}");
    let e = update_err(&Tensor::from([4.0f64]), &t, &f);
    assert!(e.contains("current_scale must be a float tensor."), "{e}");
    let e = update_err(&s, &t, &Tensor::from([0.0f64]));
    assert!(e.contains("found_inf must be a float tensor."), "{e}");
    let e = update_err(&Tensor::ones([2], DType::F32).unwrap(), &t, &f);
    assert!(
        e.contains("current_scale must be a 1-element tensor."),
        "{e}"
    );
    let e = update_err(&s, &Tensor::zeros([2], DType::I32).unwrap(), &f);
    assert!(
        e.contains("growth_tracker must be a 1-element tensor."),
        "{e}"
    );
    assert!(e.starts_with("_amp_update_scale_:"), "{e}");
}

/// One float32 parameter `[1, -2]` with SGD(lr 0.1), and `loss = sum(w * w)`.
fn one_param() -> (Tensor, SGD) {
    let w = Tensor::from([1.0f32, -2.0]).requires_grad_(true).unwrap();
    let opt = SGD::new(
        vec![w.clone()],
        SGDOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    (w, opt)
}

fn backward(scaler: &mut GradScaler, w: &Tensor) {
    scaler
        .scale(&w.mul(w).unwrap().sum().unwrap())
        .unwrap()
        .backward()
        .unwrap();
}

#[track_caller]
fn assert_err(r: Result<impl std::fmt::Debug>, msg: &str) {
    let e = r.unwrap_err();
    assert!(e.to_string().contains(msg), "got `{e}`, want `{msg}`");
}

#[test]
fn scaler_refuses_out_of_order_calls_with_pytorchs_messages() {
    let (w, mut opt) = one_param();
    let mut scaler = GradScaler::new(Device::Cpu);
    let fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.";
    assert_err(
        scaler.unscale_(&opt),
        &format!("Attempted unscale_ but _scale is None.  {fix}"),
    );
    assert_err(
        scaler.step(&mut opt),
        &format!("Attempted step but _scale is None.  {fix}"),
    );
    assert_err(
        scaler.update(),
        &format!("Attempted update but _scale is None.  {fix}"),
    );

    // Scaled, but no gradient yet.
    scaler.scale(&w.sum().unwrap()).unwrap();
    assert_err(
        scaler.step(&mut opt),
        "No inf checks were recorded for this optimizer.",
    );

    let mut scaler = GradScaler::new(Device::Cpu);
    backward(&mut scaler, &w);
    scaler.unscale_(&opt).unwrap();
    assert_err(
        scaler.unscale_(&opt),
        "unscale_() has already been called on this optimizer since the last update().",
    );
    assert!(scaler.step(&mut opt).unwrap());
    assert_err(
        scaler.step(&mut opt),
        "step() has already been called since the last update().",
    );
    assert_err(
        scaler.unscale_(&opt),
        "unscale_() is being called after step().",
    );
    scaler.update().unwrap();
    // A new iteration: allowed again.
    opt.zero_grad().unwrap();
    backward(&mut scaler, &w);
    scaler.unscale_(&opt).unwrap();

    let mut fresh = GradScaler::new(Device::Cpu);
    fresh.scale(&w.sum().unwrap()).unwrap();
    assert_err(
        fresh.update(),
        "No inf checks were recorded prior to update.",
    );
}

#[test]
fn scaler_refuses_bad_factors_and_fp16_gradients() {
    assert_err(
        GradScaler::builder(Device::Cpu).growth_factor(1.0).build(),
        "The growth factor must be > 1.0.",
    );
    assert_err(
        GradScaler::builder(Device::Cpu).backoff_factor(1.0).build(),
        "The backoff factor must be < 1.0.",
    );
    // A disabled scaler checks nothing.
    assert!(GradScaler::builder(Device::Cpu)
        .growth_factor(0.5)
        .enabled(false)
        .build()
        .is_ok());

    let w = Tensor::from([1.0f32, 2.0])
        .to_dtype(DType::F16)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let mut opt = SGD::new(
        vec![w.clone()],
        SGDOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    let mut scaler = GradScaler::new(Device::Cpu);
    scaler
        .scale(&w.to_dtype(DType::F32).unwrap().sum().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    assert_err(
        scaler.step(&mut opt),
        "Attempting to unscale FP16 gradients.",
    );
}

#[test]
fn an_inf_in_one_optimizer_skips_only_that_step_and_backs_off_the_scale() {
    let (w1, mut opt1) = one_param();
    let (w2, mut opt2) = one_param();
    let mut scaler = GradScaler::new(Device::Cpu);
    let loss = w1
        .mul(&w1)
        .unwrap()
        .sum()
        .unwrap()
        .add(&w2.mul(&w2).unwrap().sum().unwrap())
        .unwrap();
    scaler.scale(&loss).unwrap().backward().unwrap();
    poke_grad(&w2, 0, f64::INFINITY);
    assert!(scaler.step(&mut opt1).unwrap());
    assert!(!scaler.step(&mut opt2).unwrap());
    scaler.update().unwrap();
    assert_close(&vals(&w1), &[0.8, -1.6], 1e-6, 0.0, "stepped");
    assert_eq!(vals(&w2), [1.0, -2.0], "skipped");
    assert_eq!(scaler.get_scale().unwrap(), 32768.0);
    assert_eq!(scaler.get_growth_tracker().unwrap(), 0);
}

#[test]
fn scale_is_differentiable_and_keeps_a_half_output_half() {
    let mut scaler = GradScaler::builder(Device::Cpu)
        .init_scale(8.0)
        .build()
        .unwrap();
    let x = Tensor::from([1.5f32, -2.0]).to_dtype(DType::F16).unwrap();
    let y = scaler.scale(&x).unwrap();
    assert_eq!(y.dtype(), DType::F16);
    assert_eq!(vals(&y), [12.0, -16.0]);
    let w = Tensor::from([3.0f32]).requires_grad_(true).unwrap();
    scaler
        .scale(&w.mul(&w).unwrap().sum().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(vals(&w.grad().unwrap()), [48.0]);
    let all = scaler
        .scale_all(&[Tensor::from([1.0f32]), Tensor::from([2.0f64])])
        .unwrap();
    assert_eq!((vals(&all[0]), vals(&all[1])), (vec![8.0], vec![16.0]));
}

#[test]
fn disabled_scaler_passes_everything_through() {
    let (w, mut opt) = one_param();
    let mut scaler = GradScaler::builder(Device::Cpu)
        .enabled(false)
        .build()
        .unwrap();
    assert!(!scaler.is_enabled());
    let loss = w.mul(&w).unwrap().sum().unwrap();
    let scaled = scaler.scale(&loss).unwrap();
    assert!(scaled.is_same(&loss));
    scaled.backward().unwrap();
    scaler.unscale_(&opt).unwrap();
    assert!(scaler.step(&mut opt).unwrap());
    scaler.update().unwrap();
    assert_eq!(vals(&w.grad().unwrap()), [2.0, -4.0]);
    assert_eq!(scaler.get_scale().unwrap(), 1.0);
    assert!(scaler.state_dict().unwrap().is_empty());
    scaler.load_state_dict(&GradScalerState::new()).unwrap();
}

#[test]
fn update_with_sets_the_scale() {
    let (w, mut opt) = one_param();
    let mut scaler = GradScaler::new(Device::Cpu);
    backward(&mut scaler, &w);
    scaler.step(&mut opt).unwrap();
    scaler.update_with(1024.0).unwrap();
    assert_eq!(scaler.get_scale().unwrap(), 1024.0);
    assert_eq!(scaler.get_growth_tracker().unwrap(), 0, "left as it was");
    opt.zero_grad().unwrap();
    backward(&mut scaler, &w);
    scaler.step(&mut opt).unwrap();
    scaler
        .update_with_tensor(&Tensor::from([512.0f32]))
        .unwrap();
    assert_eq!(scaler.get_scale().unwrap(), 512.0);
    assert_err(
        scaler.update_with_tensor(&Tensor::ones([2], DType::F32).unwrap()),
        "new_scale should be a float or a 1-element",
    );
}

#[test]
fn state_dict_round_trips_with_pytorchs_keys() {
    let (w, mut opt) = one_param();
    let mut scaler = GradScaler::builder(Device::Cpu)
        .init_scale(256.0)
        .growth_factor(4.0)
        .backoff_factor(0.25)
        .growth_interval(5)
        .build()
        .unwrap();
    for _ in 0..3 {
        opt.zero_grad().unwrap();
        backward(&mut scaler, &w);
        scaler.step(&mut opt).unwrap();
        scaler.update().unwrap();
    }
    let state = scaler.state_dict().unwrap();
    let keys: Vec<&str> = state.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "_growth_tracker",
            "backoff_factor",
            "growth_factor",
            "growth_interval",
            "scale"
        ]
    );
    assert_eq!(
        (
            state["scale"],
            state["growth_factor"],
            state["backoff_factor"],
            state["growth_interval"],
            state["_growth_tracker"]
        ),
        (256.0, 4.0, 0.25, 5.0, 3.0)
    );

    // Into a fresh scaler (before its first scale) and into one already in use.
    let mut fresh = GradScaler::new(Device::Cpu);
    fresh.load_state_dict(&state).unwrap();
    assert_eq!(fresh.state_dict().unwrap(), state);
    let mut used = GradScaler::new(Device::Cpu);
    backward(&mut used, &w);
    used.load_state_dict(&state).unwrap();
    assert_eq!(used.state_dict().unwrap(), state);
    // Two more clean steps reach the loaded growth interval: the scale grows by the loaded factor.
    for _ in 0..2 {
        opt.zero_grad().unwrap();
        backward(&mut used, &w);
        used.step(&mut opt).unwrap();
        used.update().unwrap();
    }
    assert_eq!(
        (
            used.get_scale().unwrap(),
            used.get_growth_tracker().unwrap()
        ),
        (1024.0, 0)
    );

    assert_err(
        GradScaler::new(Device::Cpu).load_state_dict(&GradScalerState::new()),
        "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.",
    );
    let mut partial = state.clone();
    partial.remove("growth_interval");
    assert_err(
        GradScaler::new(Device::Cpu).load_state_dict(&partial),
        "no 'growth_interval' entry",
    );
}
