//! kiln-optim against real PyTorch (numbers from `tests/data/make_reference.py`, committed
//! in `tests/data/reference.txt`) and against float64 reference loops written here.

mod common;
use kiln_core::{no_grad, DType, Result, Tensor};
use kiln_optim::lr_scheduler::*;
use kiln_optim::*;
use std::collections::HashMap;

fn reference() -> HashMap<String, Vec<f64>> {
    common::reference(include_str!("data/reference.txt"))
}

use common::assert_close;

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The problem of make_reference.py: loss = mean((x @ W.t() + b - y)^2).
struct Problem {
    w: Tensor,
    b: Tensor,
    x: Tensor,
    y: Tensor,
}

fn problem() -> Problem {
    let w: Vec<f64> = (0..3)
        .flat_map(|i| (0..4).map(move |j| ((i * 4 + j + 1) as f64).sin() * 0.5))
        .collect();
    let b: Vec<f64> = (0..3).map(|i| (i as f64).cos() * 0.3).collect();
    let x: Vec<f64> = (0..20).map(|k| (0.7 * k as f64).cos()).collect();
    let y: Vec<f64> = (0..15).map(|k| (0.3 * k as f64).sin()).collect();
    Problem {
        w: Tensor::from_vec(w, &[3, 4])
            .unwrap()
            .requires_grad_(true)
            .unwrap(),
        b: Tensor::from_vec(b, &[3])
            .unwrap()
            .requires_grad_(true)
            .unwrap(),
        x: Tensor::from_vec(x, &[5, 4]).unwrap(),
        y: Tensor::from_vec(y, &[5, 3]).unwrap(),
    }
}

impl Problem {
    fn backward(&self) -> Result<()> {
        let r = self.x.matmul(&self.w.t()?)?.add(&self.b)?.sub(&self.y)?;
        r.mul(&r)?.mean()?.backward()
    }
    fn values(&self) -> Vec<f64> {
        let mut v = vals(&self.w);
        v.extend(vals(&self.b));
        v
    }
}

fn check_against_torch(case: &str, make: &dyn Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>>) {
    let refs = reference();
    let p = problem();
    let mut opt = make(vec![p.w.clone(), p.b.clone()]).unwrap();
    for s in 1..=5 {
        opt.zero_grad().unwrap();
        p.backward().unwrap();
        opt.step().unwrap();
        let want = &refs[&format!("opt.{case}.{s}")];
        assert_close(&p.values(), want, 1e-10, 1e-12, &format!("{case} step {s}"));
    }
}

fn sgd(o: SGDOptions) -> impl Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>> {
    move |p| Ok(Box::new(SGD::new(p, o.clone())?) as Box<dyn Optimizer>)
}
fn adam(o: AdamOptions) -> impl Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>> {
    move |p| Ok(Box::new(Adam::new(p, o.clone())?) as Box<dyn Optimizer>)
}
fn adamw(o: AdamOptions) -> impl Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>> {
    move |p| Ok(Box::new(AdamW::new(p, o.clone())?) as Box<dyn Optimizer>)
}

#[test]
fn sgd_matches_torch_fused_and_composite() {
    for fused in [true, false] {
        let base = SGDOptions {
            lr: 0.1,
            fused,
            ..Default::default()
        };
        check_against_torch("sgd", &sgd(base.clone()));
        check_against_torch(
            "sgd_momentum",
            &sgd(SGDOptions {
                momentum: 0.9,
                ..base.clone()
            }),
        );
        check_against_torch(
            "sgd_damp_wd",
            &sgd(SGDOptions {
                momentum: 0.9,
                dampening: 0.1,
                weight_decay: 0.01,
                ..base.clone()
            }),
        );
        check_against_torch(
            "sgd_nesterov",
            &sgd(SGDOptions {
                momentum: 0.9,
                nesterov: true,
                weight_decay: 0.01,
                ..base.clone()
            }),
        );
        check_against_torch(
            "sgd_maximize",
            &sgd(SGDOptions {
                lr: 0.05,
                momentum: 0.5,
                maximize: true,
                ..base.clone()
            }),
        );
    }
}

#[test]
fn adam_and_adamw_match_torch_fused_and_composite() {
    for fused in [true, false] {
        let base = AdamOptions {
            lr: 0.01,
            fused,
            ..Default::default()
        };
        check_against_torch("adam", &adam(base.clone()));
        check_against_torch(
            "adam_amsgrad_wd",
            &adam(AdamOptions {
                betas: (0.8, 0.99),
                weight_decay: 0.1,
                amsgrad: true,
                ..base.clone()
            }),
        );
        check_against_torch(
            "adam_maximize",
            &adam(AdamOptions {
                maximize: true,
                ..base.clone()
            }),
        );
        let w = AdamOptions {
            lr: 0.01,
            fused,
            ..AdamOptions::adamw()
        };
        check_against_torch("adamw", &adamw(w.clone()));
        check_against_torch(
            "adamw_amsgrad",
            &adamw(AdamOptions {
                lr: 0.02,
                weight_decay: 0.1,
                amsgrad: true,
                ..w
            }),
        );
    }
    assert_eq!(AdamW::default_options().weight_decay, 0.01);
    assert_eq!(Adam::default_options().weight_decay, 0.0);
}

#[test]
fn rmsprop_and_adagrad_match_torch_fused_and_composite() {
    for fused in [true, false] {
        check_against_torch("rmsprop", &|p| {
            Ok(Box::new(RMSprop::new(
                p,
                RMSpropOptions {
                    lr: 0.01,
                    fused,
                    ..Default::default()
                },
            )?))
        });
        check_against_torch("rmsprop_full", &|p| {
            Ok(Box::new(RMSprop::new(
                p,
                RMSpropOptions {
                    lr: 0.01,
                    alpha: 0.9,
                    momentum: 0.9,
                    centered: true,
                    weight_decay: 0.01,
                    fused,
                    ..Default::default()
                },
            )?))
        });
        check_against_torch("adagrad", &|p| {
            Ok(Box::new(Adagrad::new(
                p,
                AdagradOptions {
                    lr: 0.1,
                    fused,
                    ..Default::default()
                },
            )?))
        });
        check_against_torch("adagrad_full", &|p| {
            Ok(Box::new(Adagrad::new(
                p,
                AdagradOptions {
                    lr: 0.1,
                    lr_decay: 0.01,
                    weight_decay: 0.01,
                    initial_accumulator_value: 0.1,
                    fused,
                    ..Default::default()
                },
            )?))
        });
    }
}

#[test]
fn param_groups_with_their_own_options_match_torch() {
    check_against_torch("sgd_groups", &|p| {
        let d = SGDOptions {
            lr: 0.1,
            ..Default::default()
        };
        let g1 = SGDOptions {
            lr: 0.01,
            momentum: 0.5,
            ..d.clone()
        };
        Ok(Box::new(SGD::with_groups(
            vec![
                ParamGroup::new(vec![p[0].clone()], d.clone()),
                ParamGroup::new(vec![p[1].clone()], g1),
            ],
            d,
        )?))
    });
    check_against_torch("adam_groups", &|p| {
        let d = AdamOptions {
            lr: 0.01,
            ..Default::default()
        };
        let mut opt = Adam::new(
            vec![p[0].clone()],
            AdamOptions {
                lr: 0.05,
                ..d.clone()
            },
        )?;
        // add_param_group, as PyTorch's.
        opt.add_param_group(ParamGroup::new(vec![p[1].clone()], d))?;
        Ok(Box::new(opt))
    });
}

#[test]
fn group_options_are_readable_and_writable() -> Result<()> {
    let p = problem();
    let mut opt = SGD::new(vec![p.w.clone()], SGDOptions::default())?;
    assert_eq!(opt.lr(0), 1e-3);
    opt.set_lr(0, 0.5);
    assert_eq!(opt.param_groups()[0].options.lr, 0.5);
    let mut a = Adam::new(vec![p.b.clone()], AdamOptions::default())?;
    a.param_groups_mut()[0].options.betas.0 = 0.5;
    assert_eq!(a.momentum(0), Some(0.5));
    assert_eq!(a.defaults().lr, 1e-3);
    assert_eq!(a.state_dict()?.metadata["optimizer"], "Adam");
    let w = AdamW::new(vec![p.x.clone()], AdamW::default_options())?;
    assert_eq!(w.state_dict()?.metadata["optimizer"], "AdamW");
    opt.param_groups_mut()[0].options.momentum = 0.25;
    assert_eq!(opt.momentum(0), Some(0.25));
    assert_eq!(opt.group_options(0)["nesterov"], "false");
    // A parameter in two groups is refused, as PyTorch does.
    let err = opt
        .add_param_group(ParamGroup::new(vec![p.w.clone()], SGDOptions::default()))
        .unwrap_err();
    assert!(
        err.to_string().contains("more than one parameter group"),
        "{err}"
    );
    let err = SGD::new(
        vec![p.b.clone()],
        SGDOptions {
            nesterov: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("Nesterov momentum requires"),
        "{err}"
    );
    let err = Adam::new(
        vec![p.b.clone()],
        AdamOptions {
            betas: (1.0, 0.9),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("Invalid beta parameter at index 0"),
        "{err}"
    );
    Ok(())
}

#[test]
fn params_without_grad_are_skipped_and_zero_grad_works() -> Result<()> {
    let p = problem();
    let mut opt = Adam::new(vec![p.w.clone(), p.b.clone()], AdamOptions::default())?;
    let before_b = vals(&p.b);
    // Only W gets a gradient.
    let r = p.x.matmul(&p.w.t()?)?.sub(&p.y)?;
    r.mul(&r)?.mean()?.backward()?;
    assert!(p.b.grad().is_none());
    opt.step()?;
    assert_eq!(vals(&p.b), before_b);
    assert!(opt.param_state(0, 1).unwrap().bufs.is_empty());
    assert_eq!(opt.param_state(0, 0).unwrap().step, Some(1.0));
    opt.zero_grad_with(false)?;
    assert_eq!(vals(&p.w.grad().unwrap()), vec![0.0; 12]);
    opt.zero_grad()?;
    assert!(p.w.grad().is_none());
    Ok(())
}

// ---------------------------------------------------------------------------------------
// State dict
// ---------------------------------------------------------------------------------------

fn clone_leaf(t: &Tensor) -> Tensor {
    t.detach()
        .clone_tensor()
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn round_trip(make: &dyn Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>>, names: &[&str]) {
    let p = problem();
    let mut opt = make(vec![p.w.clone(), p.b.clone()]).unwrap();
    for _ in 0..3 {
        opt.zero_grad().unwrap();
        p.backward().unwrap();
        opt.step().unwrap();
    }
    let state = opt.state_dict().unwrap();
    for n in names {
        assert!(
            state.tensors.contains_key(&format!("state.0.{n}")),
            "missing {n}"
        );
        assert!(
            state.tensors.contains_key(&format!("state.1.{n}")),
            "missing {n}"
        );
    }
    assert_eq!(state.tensors.len(), 2 * names.len());
    assert_eq!(state.metadata["param_groups"], "1");
    assert_eq!(state.metadata["param_groups.0.params"], "0,1");
    // A fresh optimizer over copies of the parameters, restored, continues identically.
    let q = Problem {
        w: clone_leaf(&p.w),
        b: clone_leaf(&p.b),
        x: p.x.clone(),
        y: p.y.clone(),
    };
    let mut opt2 = make(vec![q.w.clone(), q.b.clone()]).unwrap();
    opt2.set_lr(0, 123.0); // overwritten by the load
    opt2.load_state_dict(&state).unwrap();
    assert_eq!(opt2.lr(0), opt.lr(0));
    for _ in 0..2 {
        for (pr, o) in [(&p, &mut opt), (&q, &mut opt2)] {
            o.zero_grad().unwrap();
            pr.backward().unwrap();
            o.step().unwrap();
        }
        assert_eq!(p.values(), q.values());
    }
}

#[test]
fn state_dict_round_trip_continues_identically() {
    round_trip(
        &sgd(SGDOptions {
            lr: 0.1,
            momentum: 0.9,
            ..Default::default()
        }),
        &["momentum_buffer"],
    );
    round_trip(
        &adam(AdamOptions {
            lr: 0.01,
            amsgrad: true,
            ..Default::default()
        }),
        &["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"],
    );
    round_trip(
        &adamw(AdamOptions::adamw()),
        &["step", "exp_avg", "exp_avg_sq"],
    );
    round_trip(
        &|p| {
            Ok(Box::new(RMSprop::new(
                p,
                RMSpropOptions {
                    momentum: 0.9,
                    centered: true,
                    ..Default::default()
                },
            )?))
        },
        &["step", "square_avg", "momentum_buffer", "grad_avg"],
    );
    round_trip(
        &|p| Ok(Box::new(Adagrad::new(p, AdagradOptions::default())?)),
        &["step", "sum"],
    );
}

#[test]
fn state_dict_layout_and_load_errors() -> Result<()> {
    let p = problem();
    let mut opt = Adam::new(vec![p.w.clone(), p.b.clone()], AdamOptions::default())?;
    p.backward()?;
    opt.step()?;
    let state = opt.state_dict()?;
    let step = state.tensors.get("state.1.step").unwrap();
    assert_eq!(step.dtype(), DType::F32);
    assert_eq!(step.shape(), &[] as &[usize]);
    assert_eq!(state.metadata["optimizer"], "Adam");
    assert_eq!(state.metadata["param_groups.0.betas"], "0.9,0.999");
    assert_eq!(
        state.metadata["param_groups.0.lr"].parse::<f64>().unwrap(),
        1e-3
    );

    // Wrong kind of optimizer.
    let mut sgd = SGD::new(
        vec![clone_leaf(&p.w), clone_leaf(&p.b)],
        SGDOptions::default(),
    )?;
    let e = sgd.load_state_dict(&state).unwrap_err().to_string();
    assert!(e.contains("for a Adam optimizer"), "{e}");
    // Wrong shapes.
    let mut other = Adam::new(
        vec![clone_leaf(&p.b), clone_leaf(&p.w)],
        AdamOptions::default(),
    )?;
    let e = other.load_state_dict(&state).unwrap_err().to_string();
    assert!(e.contains("size mismatch for state.0.exp_avg"), "{e}");
    // Wrong group sizes.
    let mut fewer = Adam::new(vec![clone_leaf(&p.w)], AdamOptions::default())?;
    let e = fewer.load_state_dict(&state).unwrap_err().to_string();
    assert!(
        e.contains("doesn't match the size of optimizer's group"),
        "{e}"
    );
    // Wrong group count.
    let mut two = Adam::with_groups(
        vec![
            ParamGroup::new(vec![clone_leaf(&p.w)], AdamOptions::default()),
            ParamGroup::new(vec![clone_leaf(&p.b)], AdamOptions::default()),
        ],
        AdamOptions::default(),
    )?;
    let e = two.load_state_dict(&state).unwrap_err().to_string();
    assert!(e.contains("different number of parameter groups"), "{e}");
    // A key naming no parameter.
    let mut extra = state.clone();
    extra
        .tensors
        .insert("state.7.exp_avg", Tensor::zeros([3], DType::F64)?);
    let mut ok = Adam::new(
        vec![clone_leaf(&p.w), clone_leaf(&p.b)],
        AdamOptions::default(),
    )?;
    let e = ok.load_state_dict(&extra).unwrap_err().to_string();
    assert!(e.contains("unexpected key"), "{e}");
    ok.load_state_dict(&state)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Fused == composite == a float64 loop written here
// ---------------------------------------------------------------------------------------

/// Adam/AdamW in float64, straight from the paper's formulas as PyTorch writes them.
#[allow(clippy::too_many_arguments)]
fn adam_reference(
    p0: &[f64],
    grads: &[Vec<f64>],
    lr: f64,
    (b1, b2): (f64, f64),
    eps: f64,
    wd: f64,
    amsgrad: bool,
    decoupled: bool,
) -> Vec<f64> {
    let mut p = p0.to_vec();
    let n = p.len();
    let (mut m, mut v, mut vmax) = (vec![0.0f64; n], vec![0.0f64; n], vec![0.0f64; n]);
    for (t, g) in grads.iter().enumerate() {
        let t = (t + 1) as f64;
        for i in 0..n {
            let mut gi = g[i];
            if decoupled {
                p[i] *= 1.0 - lr * wd;
            } else {
                gi += wd * p[i];
            }
            m[i] = b1 * m[i] + (1.0 - b1) * gi;
            v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
            let mhat = m[i] / (1.0 - b1.powf(t));
            let vv = if amsgrad {
                vmax[i] = vmax[i].max(v[i]);
                vmax[i]
            } else {
                v[i]
            };
            let vhat = vv / (1.0 - b2.powf(t));
            p[i] -= lr * mhat / (vhat.sqrt() + eps);
        }
    }
    p
}

fn sgd_reference(
    p0: &[f64],
    grads: &[Vec<f64>],
    lr: f64,
    momentum: f64,
    dampening: f64,
    wd: f64,
    nesterov: bool,
) -> Vec<f64> {
    let mut p = p0.to_vec();
    let mut buf: Option<Vec<f64>> = None;
    for g in grads {
        let d: Vec<f64> = g.iter().zip(&p).map(|(g, p)| g + wd * p).collect();
        let step = if momentum != 0.0 {
            let b = match buf.take() {
                None => d.clone(),
                Some(b) => b
                    .iter()
                    .zip(&d)
                    .map(|(b, d)| momentum * b + (1.0 - dampening) * d)
                    .collect(),
            };
            let s = if nesterov {
                d.iter().zip(&b).map(|(d, b)| d + momentum * b).collect()
            } else {
                b.clone()
            };
            buf = Some(b);
            s
        } else {
            d
        };
        for (p, s) in p.iter_mut().zip(step) {
            *p -= lr * s;
        }
    }
    p
}

/// Deterministic pseudo-random values in [-1, 1).
fn pseudo(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Runs `make`'s optimizer for `grads.len()` steps on a parameter of `shape` (built by
/// `layout` from a contiguous tensor holding `p0`), setting each gradient directly.
fn run_with_grads(
    p0: &[f64],
    shape: &[usize],
    dtype: DType,
    layout: &dyn Fn(Tensor) -> Tensor,
    grads: &[Vec<f64>],
    make: &dyn Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>>,
) -> Vec<f64> {
    let base = Tensor::from_vec(p0.to_vec(), shape)
        .unwrap()
        .to_dtype(dtype)
        .unwrap();
    let p = layout(base).detach().requires_grad_(true).unwrap();
    let mut opt = make(vec![p.clone()]).unwrap();
    for g in grads {
        let gt = Tensor::from_vec(g.clone(), shape)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        // The gradient takes the parameter's layout, as the layout contract gives it.
        let gl = {
            let _g = no_grad();
            let z = layout(
                Tensor::zeros(shape, dtype)
                    .unwrap()
                    .reshape(shape.iter().map(|&s| s as i64).collect::<Vec<_>>())
                    .unwrap(),
            );
            let z = z.detach();
            z.copy_(&gt).unwrap();
            z
        };
        p.set_grad(Some(gl)).unwrap();
        opt.step().unwrap();
    }
    vals(&p)
}

#[test]
fn fused_equals_composite_equals_f64_loop() {
    // Large enough for the parallel path (> 2^15 elements), odd so chunks are ragged.
    let shape = [181usize, 191];
    let n = shape[0] * shape[1];
    let p0 = pseudo(n, 1);
    let grads: Vec<Vec<f64>> = (0..4).map(|s| pseudo(n, 10 + s)).collect();
    let id = |t: Tensor| t;
    for amsgrad in [false, true] {
        for decoupled in [false, true] {
            let o = AdamOptions {
                lr: 0.01,
                betas: (0.85, 0.995),
                eps: 1e-6,
                weight_decay: 0.05,
                amsgrad,
                ..Default::default()
            };
            let want = adam_reference(
                &p0,
                &grads,
                0.01,
                (0.85, 0.995),
                1e-6,
                0.05,
                amsgrad,
                decoupled,
            );
            for dtype in [DType::F64, DType::F32] {
                let tol = if dtype == DType::F64 { 1e-12 } else { 2e-6 };
                let mut results = Vec::new();
                for fused in [true, false] {
                    let o = AdamOptions { fused, ..o.clone() };
                    let got = if decoupled {
                        run_with_grads(&p0, &shape, dtype, &id, &grads, &adamw(o))
                    } else {
                        run_with_grads(&p0, &shape, dtype, &id, &grads, &adam(o))
                    };
                    assert_close(
                        &got,
                        &want,
                        tol,
                        tol,
                        &format!(
                            "adam {dtype:?} fused={fused} amsgrad={amsgrad} decoupled={decoupled}"
                        ),
                    );
                    results.push(got);
                }
                assert_close(&results[0], &results[1], tol, tol, "fused vs composite");
            }
        }
    }
    for (momentum, dampening, wd, nesterov) in [
        (0.0, 0.0, 0.0, false),
        (0.9, 0.1, 0.01, false),
        (0.9, 0.0, 0.01, true),
    ] {
        let want = sgd_reference(&p0, &grads, 0.1, momentum, dampening, wd, nesterov);
        for dtype in [DType::F64, DType::F32] {
            let tol = if dtype == DType::F64 { 1e-12 } else { 2e-6 };
            for fused in [true, false] {
                let o = SGDOptions {
                    lr: 0.1,
                    momentum,
                    dampening,
                    weight_decay: wd,
                    nesterov,
                    maximize: false,
                    fused,
                };
                let got = run_with_grads(&p0, &shape, dtype, &id, &grads, &sgd(o));
                assert_close(
                    &got,
                    &want,
                    tol,
                    tol,
                    &format!("sgd {dtype:?} fused={fused} m={momentum}"),
                );
            }
        }
    }
}

#[test]
fn fused_half_types_compute_in_f32() {
    let shape = [64usize, 33];
    let n = shape[0] * shape[1];
    let p0 = pseudo(n, 3);
    let grads: Vec<Vec<f64>> = (0..3).map(|s| pseudo(n, 30 + s)).collect();
    let want = adam_reference(&p0, &grads, 0.01, (0.9, 0.999), 1e-8, 0.0, false, false);
    let want_sgd = sgd_reference(&p0, &grads, 0.1, 0.9, 0.0, 0.0, false);
    for (dtype, tol) in [(DType::F16, 4e-3), (DType::BF16, 3e-2)] {
        // Adam in half precision is checked on the fused path only: the composite one
        // rounds every intermediate to the half type, where `eps = 1e-8` and small
        // `exp_avg_sq` values flush to zero and the step divides by zero (as PyTorch's
        // single-tensor path does); the fused kernel computes in f32.
        let got = run_with_grads(
            &p0,
            &shape,
            dtype,
            &|t| t,
            &grads,
            &adam(AdamOptions {
                lr: 0.01,
                ..Default::default()
            }),
        );
        assert_close(&got, &want, tol, tol, &format!("adam {dtype:?} fused"));
        for fused in [true, false] {
            let got = run_with_grads(
                &p0,
                &shape,
                dtype,
                &|t| t,
                &grads,
                &sgd(SGDOptions {
                    lr: 0.1,
                    momentum: 0.9,
                    fused,
                    ..Default::default()
                }),
            );
            assert_close(
                &got,
                &want_sgd,
                tol,
                tol,
                &format!("sgd {dtype:?} fused={fused}"),
            );
        }
    }
}

#[test]
fn permuted_and_strided_params_take_the_right_path() {
    // A transposed (dense) parameter: the fused kernel runs on it; a strided slice (not
    // dense): the composite path. Both must give the reference values, read in the
    // parameter's logical order.
    let shape = [6usize, 10];
    let n = 60;
    let p0 = pseudo(n, 5);
    let grads: Vec<Vec<f64>> = (0..3).map(|s| pseudo(n, 50 + s)).collect();
    let want = adam_reference(&p0, &grads, 0.01, (0.9, 0.999), 1e-8, 0.0, false, false);
    // Transposed: hold p0 in a [10, 6] buffer and view it as [6, 10] through .t().
    let transposed = |t: Tensor| {
        let c = t.t().unwrap().contiguous().unwrap();
        c.t().unwrap()
    };
    let got = run_with_grads(
        &p0,
        &shape,
        DType::F64,
        &transposed,
        &grads,
        &adam(AdamOptions {
            lr: 0.01,
            ..Default::default()
        }),
    );
    assert_close(&got, &want, 1e-12, 1e-12, "transposed param");
    // Strided: every other column of a [6, 20] buffer.
    let strided = |t: Tensor| {
        let wide = Tensor::zeros([6, 20], t.dtype()).unwrap();
        let view = wide.as_strided([6, 10], [20, 2]).unwrap();
        view.copy_(&t).unwrap();
        view
    };
    let got = run_with_grads(
        &p0,
        &shape,
        DType::F64,
        &strided,
        &grads,
        &adam(AdamOptions {
            lr: 0.01,
            ..Default::default()
        }),
    );
    assert_close(&got, &want, 1e-12, 1e-12, "strided param");
}

#[test]
fn fused_ops_check_their_arguments() -> Result<()> {
    let p = Tensor::zeros([3], DType::F32)?;
    let g = Tensor::ones([3], DType::F32)?;
    let m = Tensor::zeros([3], DType::F32)?;
    let v = Tensor::zeros([4], DType::F32)?;
    let e = kiln_core::_fused_adam_(
        std::slice::from_ref(&p),
        std::slice::from_ref(&g),
        std::slice::from_ref(&m),
        &[v],
        &[],
        &[1.0],
        0.1,
        0.9,
        0.999,
        0.0,
        1e-8,
        false,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("exp_avg_sqs[0] must match params[0]"), "{e}");
    let e = kiln_core::_fused_sgd_(
        std::slice::from_ref(&p),
        &[],
        &[],
        0.0,
        0.0,
        0.1,
        0.0,
        false,
        false,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("same number of elements"), "{e}");
    let e = kiln_core::_fused_sgd_(
        std::slice::from_ref(&p),
        std::slice::from_ref(&p),
        &[],
        0.0,
        0.0,
        0.1,
        0.0,
        false,
        false,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("share memory"), "{e}");
    let leaf = Tensor::zeros([3], DType::F32)?.requires_grad_(true)?;
    let e = kiln_core::_fused_sgd_(
        std::slice::from_ref(&leaf),
        std::slice::from_ref(&g),
        &[],
        0.0,
        0.0,
        0.1,
        0.0,
        false,
        false,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("leaf Variable that requires grad"), "{e}");
    // Under no_grad it runs: p -= 0.1 * 1.
    {
        let _g = no_grad();
        kiln_core::_fused_sgd_(
            std::slice::from_ref(&leaf),
            std::slice::from_ref(&g),
            &[],
            0.0,
            0.0,
            0.1,
            0.0,
            false,
            false,
            false,
        )?;
    }
    assert_close(&vals(&leaf), &[-0.1; 3], 1e-7, 0.0, "fused sgd");
    let ints = Tensor::zeros([3], DType::I64)?;
    let e = kiln_core::_fused_sgd_(
        std::slice::from_ref(&ints),
        std::slice::from_ref(&ints),
        &[],
        0.0,
        0.0,
        0.1,
        0.0,
        false,
        false,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("floating-point"), "{e}");
    Ok(())
}

/// RMSprop in float64, element by element, as `torch.optim.RMSprop` documents it.
fn rmsprop_reference(p0: &[f64], grads: &[Vec<f64>], o: &RMSpropOptions) -> Vec<f64> {
    let mut p = p0.to_vec();
    let n = p.len();
    let (mut sq, mut ga, mut buf) = (vec![0.0f64; n], vec![0.0f64; n], vec![0.0f64; n]);
    for g in grads {
        for i in 0..n {
            let mut gi = if o.maximize { -g[i] } else { g[i] };
            gi += o.weight_decay * p[i];
            sq[i] = o.alpha * sq[i] + (1.0 - o.alpha) * gi * gi;
            let mut v = sq[i];
            if o.centered {
                ga[i] = o.alpha * ga[i] + (1.0 - o.alpha) * gi;
                v -= ga[i] * ga[i];
            }
            let d = gi / (v.sqrt() + o.eps);
            if o.momentum > 0.0 {
                buf[i] = o.momentum * buf[i] + d;
                p[i] -= o.lr * buf[i];
            } else {
                p[i] -= o.lr * d;
            }
        }
    }
    p
}

/// Adagrad in float64, element by element, as `torch.optim.Adagrad` documents it.
fn adagrad_reference(p0: &[f64], grads: &[Vec<f64>], o: &AdagradOptions) -> Vec<f64> {
    let mut p = p0.to_vec();
    let mut sum = vec![o.initial_accumulator_value; p.len()];
    for (t, g) in grads.iter().enumerate() {
        let clr = o.lr / (1.0 + t as f64 * o.lr_decay);
        for i in 0..p.len() {
            let mut gi = if o.maximize { -g[i] } else { g[i] };
            gi += o.weight_decay * p[i];
            sum[i] += gi * gi;
            p[i] -= clr * gi / (sum[i].sqrt() + o.eps);
        }
    }
    p
}

fn rmsprop(o: RMSpropOptions) -> impl Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>> {
    move |p| Ok(Box::new(RMSprop::new(p, o.clone())?) as Box<dyn Optimizer>)
}
fn adagrad(o: AdagradOptions) -> impl Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>> {
    move |p| Ok(Box::new(Adagrad::new(p, o.clone())?) as Box<dyn Optimizer>)
}

#[test]
fn fused_rmsprop_and_adagrad_equal_composite_equal_f64_loop() {
    // Large enough for the parallel path (> 2^15 elements), odd so chunks are ragged.
    let shape = [181usize, 191];
    let n = shape[0] * shape[1];
    let p0 = pseudo(n, 2);
    let grads: Vec<Vec<f64>> = (0..3).map(|s| pseudo(n, 20 + s)).collect();
    let id = |t: Tensor| t;
    for centered in [false, true] {
        for momentum in [0.0, 0.8] {
            for (weight_decay, maximize) in [(0.0, false), (0.05, true)] {
                let o = RMSpropOptions {
                    lr: 0.01,
                    alpha: 0.9,
                    eps: 1e-6,
                    weight_decay,
                    momentum,
                    centered,
                    maximize,
                    fused: true,
                };
                let want = rmsprop_reference(&p0, &grads, &o);
                for dtype in [DType::F64, DType::F32] {
                    // f32: the centered variance sq - avg^2 cancels, so allow a little more.
                    let tol = if dtype == DType::F64 { 1e-12 } else { 2e-5 };
                    let mut results = Vec::new();
                    for fused in [true, false] {
                        let o = RMSpropOptions { fused, ..o.clone() };
                        let got = run_with_grads(&p0, &shape, dtype, &id, &grads, &rmsprop(o));
                        let what = format!(
                            "rmsprop {dtype:?} fused={fused} centered={centered} \
                             momentum={momentum} wd={weight_decay} maximize={maximize}"
                        );
                        assert_close(&got, &want, tol, tol, &what);
                        results.push(got);
                    }
                    assert_close(&results[0], &results[1], tol, tol, "fused vs composite");
                }
            }
        }
    }
    for (lr_decay, weight_decay, initial_accumulator_value, maximize) in [
        (0.0, 0.0, 0.0, false),
        (0.05, 0.0, 0.0, true),
        (0.0, 0.05, 0.3, false),
        (0.1, 0.05, 0.3, true),
    ] {
        let o = AdagradOptions {
            lr: 0.1,
            lr_decay,
            weight_decay,
            initial_accumulator_value,
            eps: 1e-10,
            maximize,
            fused: true,
        };
        let want = adagrad_reference(&p0, &grads, &o);
        for dtype in [DType::F64, DType::F32] {
            let tol = if dtype == DType::F64 { 1e-12 } else { 2e-6 };
            let mut results = Vec::new();
            for fused in [true, false] {
                let o = AdagradOptions { fused, ..o.clone() };
                let got = run_with_grads(&p0, &shape, dtype, &id, &grads, &adagrad(o));
                let what = format!(
                    "adagrad {dtype:?} fused={fused} lr_decay={lr_decay} wd={weight_decay} \
                     init={initial_accumulator_value} maximize={maximize}"
                );
                assert_close(&got, &want, tol, tol, &what);
                results.push(got);
            }
            assert_close(&results[0], &results[1], tol, tol, "fused vs composite");
        }
    }
}

#[test]
fn fused_rmsprop_and_adagrad_in_half_types_compute_in_f32() {
    let shape = [64usize, 33];
    let n = shape[0] * shape[1];
    let p0 = pseudo(n, 4);
    let grads: Vec<Vec<f64>> = (0..3).map(|s| pseudo(n, 40 + s)).collect();
    let ro = RMSpropOptions {
        lr: 0.01,
        momentum: 0.5,
        centered: true,
        weight_decay: 0.01,
        eps: 1e-3,
        ..Default::default()
    };
    let ao = AdagradOptions {
        lr: 0.1,
        lr_decay: 0.01,
        initial_accumulator_value: 0.1,
        ..Default::default()
    };
    let want_r = rmsprop_reference(&p0, &grads, &ro);
    let want_a = adagrad_reference(&p0, &grads, &ao);
    for (dtype, tol) in [(DType::F16, 4e-3), (DType::BF16, 3e-2)] {
        for fused in [true, false] {
            let o = RMSpropOptions {
                fused,
                ..ro.clone()
            };
            let got = run_with_grads(&p0, &shape, dtype, &|t| t, &grads, &rmsprop(o));
            let what = format!("rmsprop {dtype:?} fused={fused}");
            assert_close(&got, &want_r, tol, tol, &what);
            let o = AdagradOptions {
                fused,
                ..ao.clone()
            };
            let got = run_with_grads(&p0, &shape, dtype, &|t| t, &grads, &adagrad(o));
            assert_close(
                &got,
                &want_a,
                tol,
                tol,
                &format!("adagrad {dtype:?} fused={fused}"),
            );
        }
    }
}

#[test]
fn rmsprop_and_adagrad_on_permuted_and_strided_params() {
    // Values: a transposed (dense) float64 parameter and a strided slice both give the
    // reference values, read in the parameter's logical order.
    let shape = [6usize, 10];
    let n = 60;
    let p0 = pseudo(n, 6);
    let grads: Vec<Vec<f64>> = (0..3).map(|s| pseudo(n, 60 + s)).collect();
    let transposed = |t: Tensor| {
        let c = t.t().unwrap().contiguous().unwrap();
        c.t().unwrap()
    };
    let strided = |t: Tensor| {
        let wide = Tensor::zeros([6, 20], t.dtype()).unwrap();
        let view = wide.as_strided([6, 10], [20, 2]).unwrap();
        view.copy_(&t).unwrap();
        view
    };
    let ro = RMSpropOptions {
        centered: true,
        momentum: 0.9,
        ..Default::default()
    };
    let ao = AdagradOptions {
        lr_decay: 0.01,
        ..Default::default()
    };
    let (want_r, want_a) = (
        rmsprop_reference(&p0, &grads, &ro),
        adagrad_reference(&p0, &grads, &ao),
    );
    for (name, layout) in [
        ("transposed", &transposed as &dyn Fn(Tensor) -> Tensor),
        ("strided", &strided),
    ] {
        let got = run_with_grads(
            &p0,
            &shape,
            DType::F64,
            layout,
            &grads,
            &rmsprop(ro.clone()),
        );
        assert_close(&got, &want_r, 1e-12, 1e-12, &format!("rmsprop {name}"));
        let got = run_with_grads(
            &p0,
            &shape,
            DType::F64,
            layout,
            &grads,
            &adagrad(ao.clone()),
        );
        assert_close(&got, &want_a, 1e-12, 1e-12, &format!("adagrad {name}"));
    }
    // Which path ran: in float16 with a gradient of 1e-4 and PyTorch's default eps, the
    // composite update rounds g*g (and eps) to zero and divides by zero, the fused kernel
    // keeps them in f32 and takes a finite step. So a finite result shows the fused path.
    let tiny = vec![vec![1e-4; n]];
    let p0 = vec![0.5; n];
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    for (name, layout, fused_path) in [
        ("transposed", &transposed as &dyn Fn(Tensor) -> Tensor, true),
        ("strided", &strided, false),
    ] {
        let r = rmsprop(RMSpropOptions::default());
        let got = run_with_grads(&p0, &shape, DType::F16, layout, &tiny, &r);
        assert_eq!(finite(&got), fused_path, "rmsprop {name}: {:?}", &got[..3]);
        let a = adagrad(AdagradOptions::default());
        let got = run_with_grads(&p0, &shape, DType::F16, layout, &tiny, &a);
        assert_eq!(finite(&got), fused_path, "adagrad {name}: {:?}", &got[..3]);
    }
    // And `fused: false` forces the composite path on a dense parameter.
    let r = rmsprop(RMSpropOptions {
        fused: false,
        ..Default::default()
    });
    let got = run_with_grads(&p0, &shape, DType::F16, &transposed, &tiny, &r);
    assert!(!finite(&got), "rmsprop fused=false: {:?}", &got[..3]);
}

#[test]
fn fused_rmsprop_and_adagrad_check_their_arguments() -> Result<()> {
    let p = Tensor::zeros([3], DType::F32)?;
    let g = Tensor::ones([3], DType::F32)?;
    let sq = Tensor::zeros([3], DType::F32)?;
    let wrong = Tensor::zeros([4], DType::F32)?;
    let one = std::slice::from_ref;
    let rms = |square_avgs: &[Tensor], grad_avgs: &[Tensor], bufs: &[Tensor], centered| {
        kiln_core::_fused_rmsprop_(
            one(&p),
            one(&g),
            square_avgs,
            grad_avgs,
            bufs,
            0.01,
            0.99,
            1e-8,
            0.0,
            0.9,
            centered,
            false,
        )
        .unwrap_err()
        .to_string()
    };
    // centered without grad_avgs.
    let e = rms(one(&sq), &[], one(&Tensor::zeros([3], DType::F32)?), true);
    assert!(e.contains("_fused_rmsprop_"), "{e}");
    assert!(e.contains("grad_avgs has 0"), "{e}");
    // A momentum buffer of the wrong shape.
    let e = rms(one(&sq), &[], one(&wrong), false);
    assert!(
        e.contains("momentum_buffer_list[0] must match params[0]"),
        "{e}"
    );
    // A momentum buffer that is the square average.
    let e = rms(one(&sq), &[], one(&sq), false);
    assert!(e.contains("share memory"), "{e}");
    // A float64 state for a float32 parameter.
    let e = rms(
        one(&Tensor::zeros([3], DType::F64)?),
        &[],
        one(&wrong),
        false,
    );
    assert!(e.contains("square_avgs[0] must match params[0]"), "{e}");
    // A transposed state for a contiguous parameter.
    let p2 = Tensor::zeros([2, 3], DType::F32)?;
    let g2 = Tensor::ones([2, 3], DType::F32)?;
    let st = Tensor::zeros([3, 2], DType::F32)?.t()?;
    let e = kiln_core::_fused_adagrad_(
        one(&p2),
        one(&g2),
        one(&st),
        &[1.0],
        0.1,
        0.0,
        0.0,
        1e-10,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("_fused_adagrad_"), "{e}");
    assert!(
        e.contains("state_sums[0] must have the strides of params[0]"),
        "{e}"
    );
    let ada = |steps: &[f64]| {
        kiln_core::_fused_adagrad_(
            one(&p),
            one(&g),
            one(&sq),
            steps,
            0.1,
            0.0,
            0.0,
            1e-10,
            false,
        )
    };
    let e = ada(&[]).unwrap_err().to_string();
    assert!(e.contains("state_steps has 0"), "{e}");
    let e = ada(&[0.0]).unwrap_err().to_string();
    assert!(e.contains("state_steps[0] must be >= 1"), "{e}");
    let e = ada(&[f64::NAN]).unwrap_err().to_string();
    assert!(e.contains("state_steps[0] must be >= 1"), "{e}");
    // Nothing was written by the refused calls.
    assert_eq!(vals(&p), vec![0.0; 3]);
    assert_eq!(vals(&sq), vec![0.0; 3]);
    // A valid call: sum = 1, p = -0.1 * 1 / (1 + 1e-10).
    ada(&[1.0])?;
    assert_close(&vals(&sq), &[1.0; 3], 0.0, 0.0, "adagrad sum");
    assert_close(&vals(&p), &[-0.1; 3], 1e-7, 0.0, "adagrad param");
    // A leaf that requires grad is refused outside no_grad.
    let leaf = Tensor::zeros([3], DType::F32)?.requires_grad_(true)?;
    let e = kiln_core::_fused_adagrad_(
        one(&leaf),
        one(&g),
        one(&Tensor::zeros([3], DType::F32)?),
        &[1.0],
        0.1,
        0.0,
        0.0,
        1e-10,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("leaf Variable that requires grad"), "{e}");
    let ints = Tensor::zeros([3], DType::I64)?;
    let e = kiln_core::_fused_rmsprop_(
        one(&ints),
        one(&ints),
        one(&ints),
        &[],
        &[],
        0.01,
        0.99,
        1e-8,
        0.0,
        0.0,
        false,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("floating-point"), "{e}");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// LR schedulers against torch
// ---------------------------------------------------------------------------------------

fn one_param_sgd() -> SGD {
    let w = Tensor::zeros([1], DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    SGD::new(
        vec![w],
        SGDOptions {
            lr: 0.1,
            momentum: 0.9,
            ..Default::default()
        },
    )
    .unwrap()
}

fn one_param_adam() -> Adam {
    let w = Tensor::zeros([1], DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    Adam::new(
        vec![w],
        AdamOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap()
}

fn check_sched<O: Optimizer>(
    case: &str,
    mut opt: O,
    make: &dyn Fn(&mut O) -> Box<dyn LRScheduler>,
    steps: usize,
) {
    let refs = reference();
    let mut s = make(&mut opt);
    let mut lrs = vec![opt.lr(0)];
    let mut moms = vec![opt.momentum(0).unwrap()];
    for _ in 0..steps {
        opt.step().unwrap();
        s.step(&mut opt).unwrap();
        lrs.push(opt.lr(0));
        moms.push(opt.momentum(0).unwrap());
        assert_eq!(s.get_last_lr(), &[opt.lr(0)]);
    }
    assert_close(&lrs, &refs[&format!("sched.{case}.lr")], 1e-12, 1e-15, case);
    if let Some(m) = refs.get(&format!("sched.{case}.mom")) {
        assert_close(&moms, m, 1e-12, 1e-15, &format!("{case} momentum"));
    }
}

#[test]
fn schedulers_match_torch() {
    check_sched(
        "step",
        one_param_sgd(),
        &|o| Box::new(StepLR::new(o, 3, 0.5).unwrap()),
        12,
    );
    check_sched(
        "multistep",
        one_param_sgd(),
        &|o| Box::new(MultiStepLR::new(o, &[2, 5, 5, 8], 0.3).unwrap()),
        12,
    );
    check_sched(
        "exponential",
        one_param_sgd(),
        &|o| Box::new(ExponentialLR::new(o, 0.9).unwrap()),
        12,
    );
    check_sched(
        "cosine",
        one_param_sgd(),
        &|o| Box::new(CosineAnnealingLR::new(o, 5, 0.01).unwrap()),
        12,
    );
    check_sched(
        "linear",
        one_param_sgd(),
        &|o| Box::new(LinearLR::new(o, 0.25, 1.0, 4).unwrap()),
        12,
    );
    check_sched(
        "linear_default",
        one_param_sgd(),
        &|o| Box::new(LinearLR::with_defaults(o).unwrap()),
        12,
    );
    check_sched(
        "onecycle_cos",
        one_param_sgd(),
        &|o| {
            Box::new(
                OneCycleLR::new(
                    o,
                    OneCycleOptions {
                        max_lr: 1.0,
                        total_steps: Some(20),
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        },
        19,
    );
    check_sched(
        "onecycle_linear",
        one_param_sgd(),
        &|o| {
            Box::new(
                OneCycleLR::new(
                    o,
                    OneCycleOptions {
                        max_lr: 1.0,
                        total_steps: Some(20),
                        anneal_strategy: AnnealStrategy::Linear,
                        pct_start: 0.25,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        },
        19,
    );
    check_sched(
        "onecycle_three",
        one_param_adam(),
        &|o| {
            Box::new(
                OneCycleLR::new(
                    o,
                    OneCycleOptions {
                        max_lr: 0.5,
                        epochs: Some(4),
                        steps_per_epoch: Some(5),
                        three_phase: true,
                        div_factor: 10.0,
                        final_div_factor: 100.0,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        },
        19,
    );
    check_sched(
        "onecycle_nomom",
        one_param_sgd(),
        &|o| {
            Box::new(
                OneCycleLR::new(
                    o,
                    OneCycleOptions {
                        max_lr: 1.0,
                        total_steps: Some(10),
                        cycle_momentum: false,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        },
        9,
    );
    check_sched(
        "sequential",
        one_param_sgd(),
        &|o| {
            let a = LinearLR::new(o, 0.1, 1.0, 3).unwrap();
            let b = CosineAnnealingLR::new(o, 6, 0.0).unwrap();
            Box::new(SequentialLR::new(o, vec![Box::new(a), Box::new(b)], &[3]).unwrap())
        },
        12,
    );
    check_sched(
        "sequential3",
        one_param_sgd(),
        &|o| {
            let a = ExponentialLR::new(o, 0.5).unwrap();
            let b = StepLR::new(o, 2, 0.1).unwrap();
            let c = ExponentialLR::new(o, 1.0).unwrap();
            Box::new(
                SequentialLR::new(o, vec![Box::new(a), Box::new(b), Box::new(c)], &[2, 6]).unwrap(),
            )
        },
        10,
    );
}

#[test]
fn one_cycle_refuses_steps_past_the_end() {
    let mut opt = one_param_sgd();
    let mut s = OneCycleLR::new(
        &mut opt,
        OneCycleOptions {
            total_steps: Some(3),
            ..Default::default()
        },
    )
    .unwrap();
    for _ in 0..3 {
        s.step(&mut opt).unwrap();
    }
    let e = s.step(&mut opt).unwrap_err().to_string();
    assert!(
        e.contains("Tried to step 4 times. The specified number of total steps is 3"),
        "{e}"
    );
    let mut ada = Adagrad::new(
        vec![Tensor::zeros([1], DType::F64).unwrap()],
        AdagradOptions::default(),
    )
    .unwrap();
    let e = OneCycleLR::new(
        &mut ada,
        OneCycleOptions {
            total_steps: Some(3),
            ..Default::default()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("must support momentum or beta1"), "{e}");
}

#[test]
fn reduce_on_plateau_matches_torch() {
    let refs = reference();
    let metrics = [
        1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.85, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9,
        0.9, 0.9, 0.9,
    ];
    let cases = [
        (
            "plateau_min",
            PlateauOptions {
                patience: 2,
                cooldown: 1,
                min_lr: vec![0.002],
                ..Default::default()
            },
        ),
        (
            "plateau_max_abs",
            PlateauOptions {
                mode: PlateauMode::Max,
                factor: 0.5,
                patience: 1,
                threshold: 0.05,
                threshold_mode: ThresholdMode::Abs,
                ..Default::default()
            },
        ),
    ];
    for (case, o) in cases {
        let mut opt = one_param_sgd();
        let mut s = ReduceLROnPlateau::new(&mut opt, o).unwrap();
        let mut lrs = vec![opt.lr(0)];
        for m in metrics {
            s.step_with(&mut opt, m).unwrap();
            lrs.push(opt.lr(0));
        }
        assert_close(&lrs, &refs[&format!("sched.{case}.lr")], 1e-12, 1e-15, case);
    }
}

// ---------------------------------------------------------------------------------------
// Gradient clipping against float64 loops
// ---------------------------------------------------------------------------------------

fn with_grads(gs: &[Vec<f64>]) -> Vec<Tensor> {
    gs.iter()
        .map(|g| {
            let p = Tensor::zeros([g.len()], DType::F64)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            p.set_grad(Some(Tensor::from_vec(g.clone(), &[g.len()]).unwrap()))
                .unwrap();
            p
        })
        .collect()
}

#[test]
fn clip_grad_norm_matches_a_reference_loop() {
    let gs = vec![vec![3.0, -4.0, 1.0], vec![0.5, 2.0], vec![-6.0]];
    for norm_type in [2.0, 1.0, 3.0, f64::INFINITY] {
        let all: Vec<f64> = gs.iter().flatten().copied().collect();
        let total = if norm_type.is_infinite() {
            all.iter().fold(0.0f64, |m, v| m.max(v.abs()))
        } else {
            all.iter()
                .map(|v| v.abs().powf(norm_type))
                .sum::<f64>()
                .powf(1.0 / norm_type)
        };
        for max_norm in [1.0, 100.0] {
            let mut params = with_grads(&gs);
            // A parameter without grad is skipped.
            params.push(
                Tensor::zeros([2], DType::F64)
                    .unwrap()
                    .requires_grad_(true)
                    .unwrap(),
            );
            let got = clip_grad_norm_(&params, max_norm, norm_type).unwrap();
            assert_close(&vals(&got), &[total], 1e-12, 0.0, "total norm");
            let coef = (max_norm / (total + 1e-6)).min(1.0);
            for (p, g) in params.iter().zip(&gs) {
                let want: Vec<f64> = g.iter().map(|v| v * coef).collect();
                assert_close(&vals(&p.grad().unwrap()), &want, 1e-12, 0.0, "clipped grad");
            }
        }
    }
    let params = with_grads(&[vec![1.0, f64::NAN]]);
    let e = clip_grad_norm_with(&params, 1.0, 2.0, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("is non-finite, so it cannot be clipped"), "{e}");
    assert_eq!(vals(&params[0].grad().unwrap())[0], 1.0);
    assert_eq!(vals(&clip_grad_norm_(&[], 1.0, 2.0).unwrap()), vec![0.0]);
}

#[test]
fn clip_grad_value_clamps() {
    let params = with_grads(&[vec![3.0, -4.0, 0.25], vec![-0.5]]);
    clip_grad_value_(&params, 0.5).unwrap();
    assert_eq!(vals(&params[0].grad().unwrap()), vec![0.5, -0.5, 0.25]);
    assert_eq!(vals(&params[1].grad().unwrap()), vec![-0.5]);
}
