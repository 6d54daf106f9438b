//! "The same loss curve as PyTorch for 10 steps": a 6-16-16-3 MLP (fc1 → tanh → fc2 → relu
//! → head, cross-entropy) built from `kiln::nn`, loaded with PyTorch's initial weights and
//! trained for 10 full-batch steps with each optimizer; every loss must match PyTorch's.
//! The reference (data, weights, losses) comes from `kiln/tests/data/make_loss_curve.py` (torch).

use kiln::nn::{functional as F, Forward, Linear, Module, StateDict};
use kiln::optim::{
    Adagrad, AdagradOptions, Adam, AdamOptions, AdamW, Optimizer, RMSprop, RMSpropOptions,
    SGDOptions, SGD,
};
use kiln::{Result, Tensor};
use serde_json::Value;

const REFERENCE: &str = include_str!("data/loss_curve.json");

#[derive(Module)]
struct Net {
    fc1: Linear,
    fc2: Linear,
    head: Linear,
}

impl Net {
    fn new() -> Result<Self> {
        Ok(Net {
            fc1: Linear::new(6, 16)?,
            fc2: Linear::new(16, 16)?,
            head: Linear::new(16, 3)?,
        })
    }
}

impl Forward for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.fc1.forward(x)?.tanh()?;
        let h = self.fc2.forward(&h)?.relu()?;
        self.head.forward(&h)
    }
}

struct Reference {
    x: Tensor,
    y: Tensor,
    init: StateDict,
    losses: Value,
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().expect("a number") as f32)
        .collect()
}

fn shape(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("a shape")
        .iter()
        .map(|s| s.as_u64().expect("a size") as usize)
        .collect()
}

fn reference() -> Reference {
    let r: Value = serde_json::from_str(REFERENCE).expect("valid JSON");
    let x = Tensor::from_vec(f32s(&r["x"]), &shape(&r["x_shape"])).unwrap();
    let ys: Vec<i64> = r["y"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let n = ys.len();
    let y = Tensor::from_vec(ys, &[n]).unwrap();
    let mut init = StateDict::new();
    for (name, t) in r["init"].as_object().unwrap() {
        init.insert(
            name.clone(),
            Tensor::from_vec(f32s(&t["data"]), &shape(&t["shape"])).unwrap(),
        );
    }
    Reference {
        x,
        y,
        init,
        losses: r["losses"].clone(),
    }
}

/// Trains a fresh net from PyTorch's initial weights for 10 steps with the optimizer `make`
/// builds, and returns the largest relative difference from PyTorch's losses for `name`
/// (`variant` names the update path in messages).
fn max_rel_diff(
    name: &str,
    variant: &str,
    make: impl FnOnce(Vec<Tensor>) -> Result<Box<dyn Optimizer>>,
) -> Result<f64> {
    let r = reference();
    let mut net = Net::new()?;
    let missing = net.load_state_dict(&r.init, true)?;
    assert!(missing.missing_keys.is_empty() && missing.unexpected_keys.is_empty());
    let mut opt = make(net.parameters())?;
    let expected = f32s(&r.losses[name]);
    assert_eq!(expected.len(), 10);
    let mut worst = 0.0f64;
    for (step, &want) in expected.iter().enumerate() {
        opt.zero_grad()?;
        let loss = F::cross_entropy(&net.forward(&r.x)?, &r.y)?;
        loss.backward()?;
        opt.step()?;
        let got = loss.item::<f64>()?;
        let rel = (got - want as f64).abs() / (want as f64).abs();
        assert!(
            rel < 1e-5,
            "{name} ({variant}): step {step}: loss {got} vs PyTorch's {want} (relative difference {rel:e})"
        );
        worst = worst.max(rel);
    }
    println!("{name} ({variant}): max relative difference {worst:e}");
    Ok(worst)
}

fn path(fused: bool) -> &'static str {
    if fused {
        "fused"
    } else {
        "composite"
    }
}

#[test]
fn sgd_nesterov_weight_decay() -> Result<()> {
    for fused in [true, false] {
        max_rel_diff("sgd", path(fused), |p| {
            Ok(Box::new(SGD::new(
                p,
                SGDOptions {
                    lr: 0.1,
                    momentum: 0.9,
                    nesterov: true,
                    weight_decay: 1e-3,
                    fused,
                    ..Default::default()
                },
            )?))
        })?;
    }
    Ok(())
}

#[test]
fn adam() -> Result<()> {
    for fused in [true, false] {
        max_rel_diff("adam", path(fused), |p| {
            Ok(Box::new(Adam::new(
                p,
                AdamOptions {
                    lr: 1e-2,
                    fused,
                    ..Default::default()
                },
            )?))
        })?;
    }
    Ok(())
}

#[test]
fn adamw_amsgrad() -> Result<()> {
    for fused in [true, false] {
        max_rel_diff("adamw", path(fused), |p| {
            Ok(Box::new(AdamW::new(
                p,
                AdamOptions {
                    lr: 1e-2,
                    weight_decay: 0.05,
                    amsgrad: true,
                    fused,
                    ..Default::default()
                },
            )?))
        })?;
    }
    Ok(())
}

#[test]
fn rmsprop_centered_momentum() -> Result<()> {
    max_rel_diff("rmsprop", "composite", |p| {
        Ok(Box::new(RMSprop::new(
            p,
            RMSpropOptions {
                lr: 1e-3,
                momentum: 0.5,
                centered: true,
                ..Default::default()
            },
        )?))
    })?;
    Ok(())
}

#[test]
fn adagrad() -> Result<()> {
    max_rel_diff("adagrad", "composite", |p| {
        Ok(Box::new(Adagrad::new(
            p,
            AdagradOptions {
                lr: 0.05,
                ..Default::default()
            },
        )?))
    })?;
    Ok(())
}
