//! Degenerate arguments to the optimizers and learning-rate schedulers, against real
//! PyTorch (`tests/data/gen_degenerate_args.py` → `degenerate_args_ref.txt`): zero and
//! negative periods, `T_max=0`, `total_iters=0`, gamma edge cases, huge OneCycleLR lengths,
//! an empty parameter list. Where PyTorch produces rates kiln produces the same ones (never
//! NaN from a 0/0); where PyTorch raises ValueError / RuntimeError kiln fails at the same
//! point with the same message; where PyTorch fails on a division by zero kiln fails at the
//! same point or earlier (at construction, when the arguments alone decide it).

use kiln_core::{Result, Tensor};
use kiln_optim::lr_scheduler::*;
use kiln_optim::*;
use std::collections::HashMap;

struct Reference {
    values: HashMap<String, Vec<f64>>,
    /// case -> (step at which PyTorch failed, "Type: message")
    errors: HashMap<String, (usize, String)>,
    ok: Vec<String>,
}

fn reference() -> Reference {
    let mut r = Reference {
        values: HashMap::new(),
        errors: HashMap::new(),
        ok: Vec::new(),
    };
    for line in include_str!("data/degenerate_args_ref.txt").lines() {
        let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
        if let Some(case) = name.strip_prefix("err.") {
            let (k, msg) = rest.split_once(' ').unwrap();
            r.errors
                .insert(case.to_string(), (k.parse().unwrap(), msg.to_string()));
        } else if let Some(case) = name.strip_prefix("ok.") {
            r.ok.push(case.to_string());
        } else {
            let v = rest.split(' ').map(|v| v.parse().unwrap()).collect();
            r.values.insert(name.to_string(), v);
        }
    }
    r
}

fn optimizer() -> SGD {
    let w = Tensor::zeros([2], kiln_core::DType::F64)
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

/// `ReduceLROnPlateau` stepped with a metric that stays at 1.0, as the script does.
struct Flat(ReduceLROnPlateau);

impl LRScheduler for Flat {
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        self.0.step_with(opt, 1.0)
    }
    fn get_last_lr(&self) -> &[f64] {
        self.0.get_last_lr()
    }
    fn last_epoch(&self) -> i64 {
        self.0.last_epoch()
    }
}

type Make = Box<dyn Fn(&mut SGD) -> Result<Box<dyn LRScheduler>>>;

fn boxed<S: LRScheduler + 'static>(s: Result<S>) -> Result<Box<dyn LRScheduler>> {
    Ok(Box::new(s?))
}

fn plateau(o: &mut SGD, opts: PlateauOptions) -> Result<Box<dyn LRScheduler>> {
    Ok(Box::new(Flat(ReduceLROnPlateau::new(o, opts)?)))
}

fn cases() -> Vec<(&'static str, usize, Make)> {
    let one = |o: OneCycleOptions| OneCycleOptions { max_lr: 1.0, ..o };
    let seq = |o: &mut SGD, a: Box<dyn EpochSchedule>, b: Box<dyn EpochSchedule>, m: i64| {
        boxed(SequentialLR::new(o, vec![a, b], &[m]))
    };
    let d = OneCycleOptions::default;
    let pd = PlateauOptions::default;
    vec![
        ("step.size0", 8, Box::new(|o| boxed(StepLR::new(o, 0, 0.5)))),
        (
            "step.size_neg2",
            8,
            Box::new(|o| boxed(StepLR::new(o, -2, 0.5))),
        ),
        (
            "step.gamma0",
            8,
            Box::new(|o| boxed(StepLR::new(o, 2, 0.0))),
        ),
        (
            "step.gamma_neg",
            8,
            Box::new(|o| boxed(StepLR::new(o, 1, -0.5))),
        ),
        (
            "step.gamma_big",
            8,
            Box::new(|o| boxed(StepLR::new(o, 3, 1.5))),
        ),
        (
            "multistep.neg_zero_dup",
            8,
            Box::new(|o| boxed(MultiStepLR::new(o, &[-1, 0, 2, 2, 5], 0.5))),
        ),
        (
            "multistep.unsorted",
            8,
            Box::new(|o| boxed(MultiStepLR::new(o, &[4, 1], 0.5))),
        ),
        (
            "multistep.empty",
            8,
            Box::new(|o| boxed(MultiStepLR::new(o, &[], 0.5))),
        ),
        (
            "multistep.gamma0",
            8,
            Box::new(|o| boxed(MultiStepLR::new(o, &[3], 0.0))),
        ),
        (
            "exp.gamma0",
            8,
            Box::new(|o| boxed(ExponentialLR::new(o, 0.0))),
        ),
        (
            "exp.gamma_neg",
            8,
            Box::new(|o| boxed(ExponentialLR::new(o, -0.5))),
        ),
        (
            "exp.gamma1",
            8,
            Box::new(|o| boxed(ExponentialLR::new(o, 1.0))),
        ),
        (
            "cos.tmax0",
            8,
            Box::new(|o| boxed(CosineAnnealingLR::new(o, 0, 0.0))),
        ),
        (
            "cos.tmax_neg3",
            8,
            Box::new(|o| boxed(CosineAnnealingLR::new(o, -3, 0.01))),
        ),
        (
            "cos.tmax1",
            8,
            Box::new(|o| boxed(CosineAnnealingLR::new(o, 1, 0.01))),
        ),
        (
            "cos.eta_above_base",
            8,
            Box::new(|o| boxed(CosineAnnealingLR::new(o, 3, 0.5))),
        ),
        (
            "linear.iters0",
            8,
            Box::new(|o| boxed(LinearLR::new(o, 0.5, 1.0, 0))),
        ),
        (
            "linear.iters_neg2",
            8,
            Box::new(|o| boxed(LinearLR::new(o, 0.5, 0.25, -2))),
        ),
        (
            "linear.iters1",
            8,
            Box::new(|o| boxed(LinearLR::new(o, 0.5, 1.0, 1))),
        ),
        (
            "linear.end0",
            8,
            Box::new(|o| boxed(LinearLR::new(o, 1.0, 0.0, 4))),
        ),
        (
            "linear.start0",
            8,
            Box::new(|o| boxed(LinearLR::new(o, 0.0, 1.0, 5))),
        ),
        (
            "linear.start_big",
            8,
            Box::new(|o| boxed(LinearLR::new(o, 1.5, 1.0, 5))),
        ),
        (
            "linear.end_neg",
            8,
            Box::new(|o| boxed(LinearLR::new(o, 1.0 / 3.0, -0.1, 5))),
        ),
        (
            "linear.end_big",
            8,
            Box::new(|o| boxed(LinearLR::new(o, 1.0 / 3.0, 1.5, 5))),
        ),
        (
            "seq.milestone0",
            8,
            Box::new(move |o| {
                let a = Box::new(ExponentialLR::new(o, 0.5)?);
                let b = Box::new(LinearLR::new(o, 0.5, 1.0, 2)?);
                seq(o, a, b, 0)
            }),
        ),
        (
            "seq.milestone_neg",
            8,
            Box::new(move |o| {
                let a = Box::new(ExponentialLR::new(o, 0.5)?);
                let b = Box::new(StepLR::new(o, 2, 0.1)?);
                seq(o, a, b, -2)
            }),
        ),
        (
            "seq.empty",
            8,
            Box::new(|o| boxed(SequentialLR::new(o, vec![], &[]))),
        ),
        (
            "seq.count",
            8,
            Box::new(|o| {
                let a: Box<dyn EpochSchedule> = Box::new(ExponentialLR::new(o, 0.5)?);
                boxed(SequentialLR::new(o, vec![a], &[1]))
            }),
        ),
        (
            "onecycle.huge_epochs",
            4,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        epochs: Some(1 << 62),
                        steps_per_epoch: Some(4),
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.total1",
            2,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(1),
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.pct0",
            6,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(5),
                        pct_start: 0.0,
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.pct1",
            6,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(5),
                        pct_start: 1.0,
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.pct_half_total2",
            8,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(2),
                        pct_start: 0.5,
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.three_phase_pct0",
            5,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(4),
                        pct_start: 0.0,
                        three_phase: true,
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.three_phase_quarter",
            8,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(4),
                        pct_start: 0.25,
                        three_phase: true,
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.div0",
            8,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(5),
                        div_factor: 0.0,
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.final_div0",
            8,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(5),
                        final_div_factor: 0.0,
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.total0",
            8,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(0),
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.epochs0",
            8,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        epochs: Some(0),
                        steps_per_epoch: Some(3),
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.spe_neg",
            8,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        epochs: Some(2),
                        steps_per_epoch: Some(-1),
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.pct_big",
            8,
            Box::new(move |o| {
                boxed(OneCycleLR::new(
                    o,
                    one(OneCycleOptions {
                        total_steps: Some(5),
                        pct_start: 1.5,
                        ..d()
                    }),
                ))
            }),
        ),
        (
            "onecycle.no_length",
            8,
            Box::new(move |o| boxed(OneCycleLR::new(o, one(d())))),
        ),
        (
            "plateau.factor1",
            8,
            Box::new(move |o| {
                plateau(
                    o,
                    PlateauOptions {
                        factor: 1.0,
                        ..pd()
                    },
                )
            }),
        ),
        (
            "plateau.factor_neg",
            8,
            Box::new(move |o| {
                plateau(
                    o,
                    PlateauOptions {
                        factor: -0.5,
                        patience: 0,
                        ..pd()
                    },
                )
            }),
        ),
        (
            "plateau.factor_nan",
            8,
            Box::new(move |o| {
                plateau(
                    o,
                    PlateauOptions {
                        factor: f64::NAN,
                        patience: 0,
                        ..pd()
                    },
                )
            }),
        ),
        (
            "plateau.patience_neg",
            8,
            Box::new(move |o| {
                plateau(
                    o,
                    PlateauOptions {
                        factor: 0.5,
                        patience: -1,
                        ..pd()
                    },
                )
            }),
        ),
        (
            "plateau.cooldown_neg",
            8,
            Box::new(move |o| {
                plateau(
                    o,
                    PlateauOptions {
                        factor: 0.5,
                        patience: 1,
                        cooldown: -1,
                        ..pd()
                    },
                )
            }),
        ),
        (
            "plateau.min_lrs_len",
            8,
            Box::new(move |o| {
                plateau(
                    o,
                    PlateauOptions {
                        min_lr: vec![0.0, 0.0],
                        ..pd()
                    },
                )
            }),
        ),
    ]
}

/// Builds and steps a case as the script does: the lr (and momentum) after construction
/// and after each step, and the error with the step it came at, if any.
fn run(make: &Make, steps: usize) -> (Vec<f64>, Vec<f64>, Option<(usize, String)>) {
    let mut opt = optimizer();
    let (mut lrs, mut moms) = (Vec::new(), Vec::new());
    let mut sched = match make(&mut opt) {
        Ok(s) => s,
        Err(e) => return (lrs, moms, Some((0, e.to_string()))),
    };
    for k in 0..=steps {
        if k > 0 {
            if let Err(e) = sched.step(&mut opt) {
                return (lrs, moms, Some((k, e.to_string())));
            }
        }
        lrs.push(opt.lr(0));
        moms.push(opt.momentum(0).unwrap());
    }
    (lrs, moms, None)
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-14 + 1e-12 * w.abs(),
            "{what}[{i}]: got {g}, want {w}\n got  {got:?}\n want {want:?}"
        );
    }
}

#[test]
fn schedulers_with_degenerate_arguments_match_pytorch() {
    let r = reference();
    let mut failures = Vec::new();
    for (case, steps, make) in cases() {
        let (lrs, moms, err) = run(&make, steps);
        let want_lr = r
            .values
            .get(&format!("lr.{case}"))
            .cloned()
            .unwrap_or_default();
        let want_mom = r.values.get(&format!("mom.{case}"));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match (r.errors.get(case), &err) {
                (None, None) => {
                    assert_close(&lrs, &want_lr, &format!("{case} lr"));
                    if let Some(m) = want_mom {
                        assert_close(&moms, m, &format!("{case} momentum"));
                    }
                }
                (None, Some((k, e))) => {
                    panic!("{case}: PyTorch accepts it, kiln failed at step {k}: {e}")
                }
                (Some((k, e)), None) => {
                    panic!("{case}: PyTorch fails at step {k} ({e}), kiln does not: {lrs:?}")
                }
                (Some((k, want)), Some((got_k, got))) => {
                    let (ty, msg) = want.split_once(": ").unwrap();
                    if ty == "ZeroDivisionError" {
                        // Same point or earlier, never a NaN or infinite rate.
                        assert!(
                            got_k <= k,
                            "{case}: PyTorch fails at step {k}, kiln at {got_k}: {got}"
                        );
                        assert!(lrs.iter().all(|v| v.is_finite()), "{case}: {lrs:?}");
                    } else {
                        assert_eq!(
                            got_k, k,
                            "{case}: PyTorch fails at step {k} ({want}), kiln at {got_k}: {got}"
                        );
                        assert!(
                            got.ends_with(msg),
                            "{case}: want message {msg:?}, got {got:?}"
                        );
                    }
                    assert_close(
                        &lrs,
                        &want_lr[..lrs.len().min(want_lr.len())],
                        &format!("{case} lr"),
                    );
                }
            }
        }));
        if let Err(p) = outcome {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(msg);
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) differ from PyTorch:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn linear_lr_with_zero_total_iters_keeps_start_factor_times_lr() {
    // The case: PyTorch keeps start_factor * lr; 0/0 made it NaN.
    let mut opt = optimizer();
    let mut s = LinearLR::new(&mut opt, 0.5, 1.0, 0).unwrap();
    for _ in 0..3 {
        s.step(&mut opt).unwrap();
        assert_eq!(opt.lr(0), 0.05);
    }
}

#[test]
fn one_cycle_lr_with_an_epoch_count_overflowing_i64_runs() {
    let r = reference();
    let mut opt = optimizer();
    let s = OneCycleLR::new(
        &mut opt,
        OneCycleOptions {
            max_lr: 1.0,
            epochs: Some(i64::MAX / 2),
            steps_per_epoch: Some(4),
            ..Default::default()
        },
    );
    let s = s.unwrap();
    assert_close(
        s.get_last_lr(),
        &r.values["lr.onecycle.huge_epochs"][..1],
        "lr",
    );
}

fn extra_group(opt: &mut SGD, lr: f64) {
    let w = Tensor::zeros([1], kiln_core::DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let opts = SGDOptions {
        lr,
        momentum: 0.9,
        ..Default::default()
    };
    opt.add_param_group(ParamGroup::new(vec![w], opts)).unwrap();
}

#[test]
fn reduce_lr_on_plateau_after_a_group_is_added() {
    // One min_lr extends to a group added later (PyTorch's scalar `min_lr`); one per group
    // is PyTorch's list, and a later group is PyTorch's RuntimeError (it was an index
    // out of bounds panic).
    let r = reference();
    for (case, min_lr) in [
        ("plateau.added_group_scalar", vec![0.0]),
        ("plateau.added_group_list", vec![0.0, 0.0]),
    ] {
        let mut opt = optimizer();
        if min_lr.len() == 2 {
            extra_group(&mut opt, 0.1);
        }
        let opts = PlateauOptions {
            factor: 0.5,
            patience: 0,
            min_lr,
            ..Default::default()
        };
        let mut s = ReduceLROnPlateau::new(&mut opt, opts).unwrap();
        extra_group(&mut opt, 0.4);
        let last = opt.num_param_groups() - 1;
        let mut lrs = Vec::new();
        let mut err = None;
        for k in 1..=3 {
            match s.step_with(&mut opt, 1.0) {
                Ok(()) => lrs.push(opt.lr(last)),
                Err(e) => {
                    err = Some((k, e.to_string()));
                    break;
                }
            }
        }
        match r.errors.get(case) {
            None => {
                assert!(err.is_none(), "{case}: {err:?}");
                assert_close(&lrs, &r.values[&format!("lr.{case}")], case);
            }
            Some((k, want)) => {
                let (got_k, got) = err.unwrap_or_else(|| panic!("{case}: no error, lrs {lrs:?}"));
                assert_eq!(got_k, *k, "{case}: {got}");
                assert!(
                    got.ends_with(want.split_once(": ").unwrap().1),
                    "{case}: {got}"
                );
            }
        }
    }
}

#[test]
fn every_optimizer_rejects_an_empty_parameter_list() {
    let r = reference();
    let results: [(&str, Result<()>); 5] = [
        ("SGD", SGD::new(vec![], Default::default()).map(|_| ())),
        ("Adam", Adam::new(vec![], Default::default()).map(|_| ())),
        (
            "AdamW",
            AdamW::new(vec![], AdamOptions::adamw()).map(|_| ()),
        ),
        (
            "RMSprop",
            RMSprop::new(vec![], Default::default()).map(|_| ()),
        ),
        (
            "Adagrad",
            Adagrad::new(vec![], Default::default()).map(|_| ()),
        ),
    ];
    for (name, res) in results {
        let want = &r.errors[&format!("{name}.empty_list")].1;
        let want = want.split_once(": ").unwrap().1;
        let err = res.expect_err(name).to_string();
        assert!(err.ends_with(want), "{name}: {err}");
        assert!(err.starts_with(name), "{name}: {err}");
    }
    // The options are checked first, as PyTorch's constructors do.
    let err = Adam::new(
        vec![],
        AdamOptions {
            lr: -1.0,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("Invalid learning rate: -1"),
        "{err}"
    );
    assert!(r.errors["Adam.empty_list_bad_lr"]
        .1
        .contains("Invalid learning rate: -1"));
}

#[test]
fn every_optimizer_accepts_an_empty_parameter_group() {
    // PyTorch accepts `Adam([{"params": []}])` and `add_param_group({"params": []})`.
    let r = reference();
    let w = || {
        Tensor::zeros([2], kiln_core::DType::F64)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    macro_rules! check {
        ($ty:ident, $opts:expr) => {{
            let name = stringify!($ty);
            assert!(r.ok.contains(&format!("{name}.empty_group")));
            assert!(r.ok.contains(&format!("{name}.add_empty_group")));
            let mut opt =
                $ty::with_groups(vec![ParamGroup::new(vec![], $opts)], $opts).expect(name);
            opt.step().expect(name);
            let mut opt = $ty::new(vec![w()], $opts).expect(name);
            opt.add_param_group(ParamGroup::new(vec![], $opts))
                .expect(name);
            assert_eq!(opt.num_param_groups(), 2);
            opt.step().expect(name);
        }};
    }
    check!(SGD, SGDOptions::default());
    check!(Adam, AdamOptions::default());
    check!(AdamW, AdamOptions::adamw());
    check!(RMSprop, RMSpropOptions::default());
    check!(Adagrad, AdagradOptions::default());
}
