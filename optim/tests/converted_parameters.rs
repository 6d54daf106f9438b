//! An optimizer built before `Module::to_dtype` / `to_device` holds the tensors the model
//! replaced. PyTorch converts parameters in place (`param.data = ...`), so its optimizer
//! keeps updating the model; kiln's tensors keep their dtype and storage for life, so the
//! conversion marks the old parameters and such an optimizer's `step()` fails, naming the
//! parameter, instead of silently updating tensors nothing uses. The state carries over to
//! an optimizer built after converting through `load_state_dict` (cast to the new dtype, as
//! PyTorch does); numbers from `tests/data/gen_converted_parameters.py`.

mod common;
use kiln_core::{no_grad, DType, Tensor};
use kiln_nn::{Forward, Linear, Module};
use kiln_optim::*;
use std::collections::HashMap;

fn reference() -> HashMap<String, Vec<f64>> {
    common::reference(include_str!("data/converted_parameters_ref.txt"))
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], rtol: f64, what: &str) {
    common::assert_close(got, want, rtol, 1e-6, what)
}

/// The script's Linear(3, 2) in float32.
fn model() -> Linear {
    let m = Linear::new(3, 2).unwrap();
    let _g = no_grad();
    let w: Vec<f32> = (0..2)
        .flat_map(|i| (0..3).map(move |j| ((i * 3 + j + 1) as f32).sin() / 2.0))
        .collect();
    m.weight
        .copy_(&Tensor::from(w).reshape([2, 3]).unwrap())
        .unwrap();
    m.bias
        .as_ref()
        .unwrap()
        .copy_(&Tensor::from([0.1f32, -0.2]))
        .unwrap();
    m
}

fn loss(m: &Linear) -> Tensor {
    let x: Vec<f64> = (0..12).map(|k| (0.5 * k as f64).cos()).collect();
    let x = Tensor::from(x)
        .reshape([4, 3])
        .unwrap()
        .to_dtype(m.weight.dtype())
        .unwrap();
    let d = m.forward(&x).unwrap().sub_scalar(0.3).unwrap();
    d.mul(&d).unwrap().mean().unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.detach()
        .to_dtype(DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

const STALE: &str =
    "was converted by Module::to_dtype or Module::to_device after the optimizer was built";

#[test]
fn optimizer_built_before_to_dtype_fails_to_step() {
    let mut m = model();
    let mut opt = Adam::new(m.parameters(), AdamOptions::default()).unwrap();
    m.to_dtype(DType::F64).unwrap();
    loss(&m).backward().unwrap();
    let before = values(&m.weight);
    let err = opt.step().unwrap_err().to_string();
    assert!(err.contains(STALE), "{err}");
    assert!(err.contains("parameter 0"), "{err}");
    assert_eq!(values(&m.weight), before);
}

#[test]
fn every_optimizer_built_before_conversion_fails_to_step() {
    type Build = fn(Vec<Tensor>) -> kiln_core::Result<Box<dyn Optimizer>>;
    let builds: [(&str, Build); 5] = [
        ("SGD", |p| Ok(Box::new(SGD::new(p, Default::default())?))),
        ("Adam", |p| Ok(Box::new(Adam::new(p, Default::default())?))),
        ("AdamW", |p| {
            Ok(Box::new(AdamW::new(p, AdamOptions::adamw())?))
        }),
        ("RMSprop", |p| {
            Ok(Box::new(RMSprop::new(p, Default::default())?))
        }),
        ("Adagrad", |p| {
            Ok(Box::new(Adagrad::new(p, Default::default())?))
        }),
    ];
    for (name, build) in builds {
        let mut m = model();
        let mut opt = build(m.parameters()).unwrap();
        m.to_dtype(DType::F64).unwrap();
        loss(&m).backward().unwrap();
        let err = opt.step().expect_err(name).to_string();
        assert!(err.contains(STALE), "{name}: {err}");
    }
}

#[test]
fn optimizer_built_before_a_no_op_conversion_still_trains() {
    // Converting to the dtype / device the model already has keeps every tensor itself.
    let mut m = model();
    let mut opt = SGD::new(
        m.parameters(),
        SGDOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    m.to_dtype(DType::F32).unwrap();
    m.to_device(kiln_core::Device::Cpu).unwrap();
    loss(&m).backward().unwrap();
    let before = values(&m.weight);
    opt.step().unwrap();
    assert_ne!(values(&m.weight), before);
}

#[test]
fn adam_state_carries_over_to_an_optimizer_built_after_to_dtype() {
    let r = reference();
    let mut m = model();
    let opts = AdamOptions {
        lr: 0.1,
        ..Default::default()
    };
    let mut opt = Adam::new(m.parameters(), opts.clone()).unwrap();
    for s in 1..=2 {
        opt.zero_grad().unwrap();
        loss(&m).backward().unwrap();
        opt.step().unwrap();
        assert_close(
            &values(&m.weight),
            &r[&format!("f32.{s}.weight")],
            1e-5,
            "f32 weight",
        );
        assert_close(
            &values(m.bias.as_ref().unwrap()),
            &r[&format!("f32.{s}.bias")],
            1e-5,
            "f32 bias",
        );
    }
    m.to_dtype(DType::F64).unwrap();
    let mut opt2 = Adam::new(m.parameters(), opts).unwrap();
    opt2.load_state_dict(&opt.state_dict().unwrap()).unwrap();
    assert_eq!(r["f64.state_dtype_is_f64"], [1.0]);
    assert_eq!(
        opt2.param_state(0, 0).unwrap().bufs["exp_avg"].dtype(),
        DType::F64
    );
    for s in 3..=4 {
        opt2.zero_grad().unwrap();
        loss(&m).backward().unwrap();
        opt2.step().unwrap();
        assert_close(
            &values(&m.weight),
            &r[&format!("f64.{s}.weight")],
            1e-5,
            "f64 weight",
        );
        assert_close(
            &values(m.bias.as_ref().unwrap()),
            &r[&format!("f64.{s}.bias")],
            1e-5,
            "f64 bias",
        );
    }
}
