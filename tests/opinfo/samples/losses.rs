//! Samples for the margin and embedding losses (src/ops/losses.rs) and the regression losses
//! (mse, l1, smooth_l1, huber, kl_div) with their backward ops. Targets compared with
//! `== 1` / `!= -1` (hinge, cosine embedding) are int64 in the gradcheck samples: a finite
//! difference of a float target at exactly 1 would cross the comparison.

use super::{err, from_f64, make, two, uniform, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Scalar, Tensor};

/// ±1 labels of `dtype`, deterministic from `seed`.
fn signs(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = uniform(n, seed)
        .iter()
        .map(|&u| if u < 0.5 { -1.0 } else { 1.0 })
        .collect();
    from_f64(&v, shape, dtype)
}

/// Class indices in `[0, c)`.
fn classes(shape: &[usize], c: usize, seed: u64) -> Tensor {
    make(shape, DType::I64, 0.0, c as f64, seed)
}

fn reduction(r: i64) -> Arg {
    Arg::Int(r)
}

fn bad_reduction(tensors: Vec<Tensor>) -> ErrorSample {
    err(
        Sample::new("reduction 3", tensors).arg("reduction", reduction(3)),
        ErrorKind::Value,
        "3 is not a valid value for reduction",
    )
}

pub fn margin_ranking_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let y = |s: &[usize], seed| signs(s, dtype, seed);
    vec![
        Sample::new("[6] mean", vec![x(&[6], 1), x(&[6], 2), y(&[6], 3)]),
        Sample::new(
            "[6] none margin 0.5",
            vec![x(&[6], 4), x(&[6], 5), y(&[6], 6)],
        )
        .arg("margin", Arg::Float(0.5))
        .arg("reduction", reduction(0)),
        Sample::new(
            "[2,3] sum margin 0.25, y [3] broadcast",
            vec![x(&[2, 3], 7), x(&[2, 3], 8), y(&[3], 9)],
        )
        .arg("margin", Arg::Float(0.25))
        .arg("reduction", reduction(2)),
        Sample::new("[0] mean", vec![x(&[0], 10), x(&[0], 11), y(&[0], 12)]).edge(),
        Sample::new("0-d", vec![x(&[], 13), x(&[], 14), y(&[], 15)]).edge(),
    ]
}

pub fn margin_ranking_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        bad_reduction(vec![vals(&[3], f, 1), vals(&[3], f, 2), signs(&[3], f, 3)]),
        err(
            Sample::new(
                "[2,3] with [2,4]",
                vec![
                    vals(&[2, 3], f, 4),
                    vals(&[2, 4], f, 5),
                    signs(&[2, 3], f, 6),
                ],
            ),
            ErrorKind::Shape,
            "must match the size of tensor b",
        ),
    ]
}

pub fn hinge_embedding_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    // -1, 0 or 1: a 0 label takes both terms, as in PyTorch.
    let three = |s: &[usize], seed| make(s, DType::I64, -1.0, 2.0, seed);
    vec![
        Sample::new(
            "[3,4] mean",
            vec![x(&[3, 4], 1), signs(&[3, 4], DType::I64, 2)],
        ),
        Sample::new("[6] none margin 0.5", vec![x(&[6], 3), three(&[6], 4)])
            .arg("margin", Arg::Float(0.5))
            .arg("reduction", reduction(0)),
        Sample::new(
            "[2,3] sum margin 2, y [3]",
            vec![x(&[2, 3], 5), signs(&[3], DType::I64, 6)],
        )
        .arg("margin", Arg::Float(2.0))
        .arg("reduction", reduction(2)),
        Sample::new("[5] float labels", vec![x(&[5], 7), signs(&[5], dtype, 8)]),
        Sample::new("[0] mean", vec![x(&[0], 9), signs(&[0], DType::I64, 10)]).edge(),
        Sample::new("0-d", vec![x(&[], 11), signs(&[], DType::I64, 12)]).edge(),
    ]
}

pub fn hinge_embedding_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![bad_reduction(vec![vals(&[3], f, 1), signs(&[3], f, 2)])]
}

pub fn soft_margin_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let y = |s: &[usize], seed| signs(s, dtype, seed);
    vec![
        Sample::new("[3,4] mean", vec![x(&[3, 4], 1), y(&[3, 4], 2)]),
        Sample::new("[6] none", vec![x(&[6], 3), y(&[6], 4)]).arg("reduction", reduction(0)),
        Sample::new("[2,3] sum", vec![x(&[2, 3], 5), y(&[2, 3], 6)]).arg("reduction", reduction(2)),
        Sample::new(
            "[3] large margins",
            vec![
                from_f64(&[30.0, -30.0, 0.5], &[3], dtype),
                from_f64(&[-1.0, -1.0, 1.0], &[3], dtype),
            ],
        )
        .arg("reduction", reduction(0)),
        Sample::new("[0] mean", vec![x(&[0], 7), y(&[0], 8)]).edge(),
        Sample::new("0-d", vec![x(&[], 9), y(&[], 10)]).edge(),
    ]
}

pub fn soft_margin_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![bad_reduction(vec![vals(&[3], f, 1), signs(&[3], f, 2)])]
}

pub fn cosine_embedding_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let y = |s: &[usize], seed| signs(s, DType::I64, seed);
    vec![
        Sample::new("[4,5] mean", vec![x(&[4, 5], 1), x(&[4, 5], 2), y(&[4], 3)]),
        Sample::new(
            "[5] 0-d target margin 0.3 none",
            vec![
                x(&[5], 4),
                x(&[5], 5),
                Tensor::scalar_tensor(-1, DType::I64).unwrap(),
            ],
        )
        .arg("margin", Arg::Float(0.3))
        .arg("reduction", reduction(0)),
        Sample::new(
            "[3,4] sum margin -0.2",
            vec![x(&[3, 4], 6), x(&[3, 4], 7), y(&[3], 8)],
        )
        .arg("margin", Arg::Float(-0.2))
        .arg("reduction", reduction(2)),
        Sample::new(
            "[3,4] float labels none",
            vec![x(&[3, 4], 9), x(&[3, 4], 10), signs(&[3], dtype, 11)],
        )
        .arg("reduction", reduction(0)),
        Sample::new("[0,5]", vec![x(&[0, 5], 12), x(&[0, 5], 13), y(&[0], 14)]).edge(),
    ]
}

pub fn cosine_embedding_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        bad_reduction(vec![
            vals(&[2, 3], f, 1),
            vals(&[2, 3], f, 2),
            signs(&[2], f, 3),
        ]),
        err(
            Sample::new(
                "2-d target",
                vec![
                    vals(&[2, 3], f, 4),
                    vals(&[2, 3], f, 5),
                    signs(&[2, 3], f, 6),
                ],
            ),
            ErrorKind::Shape,
            "0D or 1D target tensor expected, multi-target not supported",
        ),
        err(
            Sample::new(
                "1-d target, 1-d inputs",
                vec![vals(&[3], f, 7), vals(&[3], f, 8), signs(&[3], f, 9)],
            ),
            ErrorKind::Shape,
            "1D target tensor expects 2D input tensors, but found inputs with sizes [3] and [3].",
        ),
        err(
            Sample::new(
                "0-d target, 2-d inputs",
                vec![
                    vals(&[2, 3], f, 10),
                    vals(&[2, 3], f, 11),
                    signs(&[], f, 12),
                ],
            ),
            ErrorKind::Shape,
            "0D target tensor expects 1D input tensors",
        ),
    ]
}

pub fn triplet_margin_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let three = |s: &[usize], seed| vec![x(s, seed), x(s, seed + 1), x(s, seed + 2)];
    vec![
        Sample::new("[4,5] mean", three(&[4, 5], 1)).arg("margin", Arg::Float(2.0)),
        Sample::new("[4,5] p 1 swap none", three(&[4, 5], 4))
            .arg("margin", Arg::Float(1.5))
            .arg("p", Arg::Float(1.0))
            .arg("swap", Arg::Bool(true))
            .arg("reduction", reduction(0)),
        Sample::new("[5] p 3 sum eps 0.01", three(&[5], 7))
            .arg("margin", Arg::Float(3.0))
            .arg("p", Arg::Float(3.0))
            .arg("eps", Arg::Float(0.01))
            .arg("reduction", reduction(2)),
        Sample::new("[3,4] default margin, swap", three(&[3, 4], 10)).arg("swap", Arg::Bool(true)),
        Sample::new("[0,5]", three(&[0, 5], 13)).edge(),
    ]
}

pub fn triplet_margin_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        bad_reduction(vec![vals(&[2, 3], f, 1), vals(&[2, 3], f, 2), vals(&[2, 3], f, 3)]),
        err(
            Sample::new(
                "2-d, 2-d, 1-d",
                vec![vals(&[2, 3], f, 4), vals(&[2, 3], f, 5), vals(&[3], f, 6)],
            ),
            ErrorKind::Shape, "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor 2D, positive 2D, and negative 1D inputs",
        ),
    ]
}

fn poisson(s: Sample, log_input: bool, full: bool, eps: f64, r: i64) -> Sample {
    s.arg("log_input", Arg::Bool(log_input))
        .arg("full", Arg::Bool(full))
        .arg("eps", Arg::Float(eps))
        .arg("reduction", reduction(r))
}

pub fn poisson_nll_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let rate = |s: &[usize], seed| make(s, dtype, 0.5, 3.0, seed);
    let counts = |s: &[usize], seed| make(s, dtype, 0.2, 4.0, seed);
    vec![
        poisson(
            Sample::new(
                "[3,4] log_input mean",
                vec![x(&[3, 4], 1), counts(&[3, 4], 2)],
            ),
            true,
            false,
            1e-8,
            1,
        ),
        poisson(
            Sample::new("[6] rates full none", vec![rate(&[6], 3), counts(&[6], 4)]),
            false,
            true,
            1e-8,
            0,
        ),
        poisson(
            Sample::new(
                "[2,3] log_input full sum",
                vec![x(&[2, 3], 5), counts(&[2, 3], 6)],
            ),
            true,
            true,
            1e-8,
            2,
        ),
        poisson(
            Sample::new(
                "[4] zero targets, eps 0.5",
                vec![rate(&[4], 7), from_f64(&[0.0, 1.0, 0.0, 3.0], &[4], dtype)],
            ),
            false,
            true,
            0.5,
            0,
        ),
        poisson(
            Sample::new("[0] mean", vec![x(&[0], 9), counts(&[0], 10)]),
            true,
            false,
            1e-8,
            1,
        )
        .edge(),
    ]
}

pub fn poisson_nll_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        poisson(
            Sample::new("reduction 3", vec![vals(&[3], f, 1), vals(&[3], f, 2)]),
            true,
            false,
            1e-8,
            3,
        ),
        ErrorKind::Value,
        "3 is not a valid value for reduction",
    )]
}

pub fn multi_margin_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |s: &[usize], seed| make(s, dtype, 0.5, 2.0, seed);
    vec![
        Sample::new("[4,5] mean", vec![x(&[4, 5], 1), classes(&[4], 5, 2)]),
        Sample::new(
            "[4,5] p 2 margin 0.5 weight sum",
            vec![x(&[4, 5], 3), classes(&[4], 5, 4), w(&[5], 5)],
        )
        .arg("p", Arg::Scalar(Scalar::Int(2)))
        .arg("margin", Arg::Scalar(Scalar::Float(0.5)))
        .arg("reduction", reduction(2)),
        Sample::new(
            "[5] 0-d target none",
            vec![x(&[5], 6), Tensor::scalar_tensor(3, DType::I64).unwrap()],
        )
        .arg("reduction", reduction(0)),
        Sample::new(
            "[3,4] weight none",
            vec![x(&[3, 4], 7), classes(&[3], 4, 8), w(&[4], 9)],
        )
        .arg("reduction", reduction(0)),
        Sample::new("[0,5] mean", vec![x(&[0, 5], 10), classes(&[0], 5, 11)]).edge(),
    ]
}

pub fn multi_margin_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("p 3", vec![vals(&[2, 3], f, 1), classes(&[2], 3, 2)])
                .arg("p", Arg::Scalar(Scalar::Int(3))),
            ErrorKind::Value, "only p == 1 and p == 2 supported",
        ),
        err(
            Sample::new("float target", vec![vals(&[2, 3], f, 3), vals(&[2], f, 4)]),
            ErrorKind::DType, "expected scalar type Long but found Float",
        ),
        err(
            Sample::new("target [3] for [2,3]", vec![vals(&[2, 3], f, 5), classes(&[3], 3, 6)]),
            ErrorKind::Shape, "inconsistent target size, expected 2 but got [3]",
        ),
        err(
            Sample::new(
                "weight [2] for 3 classes",
                vec![vals(&[2, 3], f, 7), classes(&[2], 3, 8), vals(&[2], f, 9)],
            ),
            ErrorKind::Shape, "inconsistent weight size, expected 3 but got [2]",
        ),
        err(
            Sample::new("3-d input", vec![vals(&[2, 3, 2], f, 10), classes(&[2], 3, 11)]),
            ErrorKind::Shape, "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 2]",
        ),
    ]
}

/// Lists of target classes, each row ended by -1 (or full).
fn class_lists(rows: &[&[i64]]) -> Tensor {
    let c = rows[0].len();
    let v: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_vec(v, &[rows.len(), c]).unwrap()
}

pub fn multilabel_margin_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] mean",
            vec![
                x(&[3, 4], 1),
                class_lists(&[&[3, 0, -1, 1], &[1, 2, 3, 0], &[-1, 2, 0, 0]]),
            ],
        ),
        Sample::new(
            "[2,5] none, repeated class",
            vec![
                x(&[2, 5], 2),
                class_lists(&[&[4, 4, -1, 0, 0], &[0, -1, 1, 2, 3]]),
            ],
        )
        .arg("reduction", reduction(0)),
        Sample::new(
            "[4] unbatched sum",
            vec![
                x(&[4], 3),
                Tensor::from_vec(vec![2i64, 1, -1, 3], &[4]).unwrap(),
            ],
        )
        .arg("reduction", reduction(2)),
        Sample::new(
            "[4] unbatched none",
            vec![
                x(&[4], 4),
                Tensor::from_vec(vec![0i64, -1, 1, 3], &[4]).unwrap(),
            ],
        )
        .arg("reduction", reduction(0)),
        Sample::new("[0,3]", vec![x(&[0, 3], 5), classes(&[0, 3], 3, 6)]).edge(),
    ]
}

pub fn multilabel_margin_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        bad_reduction(vec![vals(&[2, 3], f, 1), classes(&[2, 3], 3, 2)]),
        err(
            Sample::new(
                "target [2,2] for [2,3]",
                vec![vals(&[2, 3], f, 3), classes(&[2, 2], 3, 4)],
            ),
            ErrorKind::Shape,
            "inconsistent target size: [2, 2] for input of size: [2, 3]",
        ),
        err(
            Sample::new(
                "float target",
                vec![vals(&[2, 3], f, 5), vals(&[2, 3], f, 6)],
            ),
            ErrorKind::DType,
            "expected scalar type Long but found Float",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Regression losses and KL divergence
// ---------------------------------------------------------------------------------------

/// Input/target pairs for the regression losses, each reduction, plus a broadcast target.
pub fn loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] mean", vec![x(&[3, 4], 1), x(&[3, 4], 2)]),
        Sample::new("[3,4] none", vec![x(&[3, 4], 3), x(&[3, 4], 4)]).arg("reduction", Arg::Int(0)),
        Sample::new("[2,3,2] sum", vec![x(&[2, 3, 2], 5), x(&[2, 3, 2], 6)])
            .arg("reduction", Arg::Int(2)),
        Sample::new("0-d", vec![x(&[], 7), x(&[], 8)]).edge(),
    ]
}

/// `(grad_output, self, target)` of a pointwise loss's backward: the `loss` samples with
/// the gradient of their result (0-d for `mean` and `sum`), plus a broadcast target.
pub fn loss_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let mut v: Vec<Sample> = loss(dtype)
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let shape = if s.int("reduction") == Some(0) {
                s.t(0).shape().to_vec()
            } else {
                vec![]
            };
            let mut tensors = vec![x(&shape, 50 + i as u64)];
            tensors.extend(s.tensors.iter().cloned());
            let s = Sample { tensors, ..s };
            // The backward's `reduction` has no default.
            match s.int("reduction") {
                Some(_) => s,
                None => s.arg("reduction", Arg::Int(1)),
            }
        })
        .collect();
    v.push(
        Sample::new(
            "[2,3,2] none, target [3,2] broadcast",
            vec![x(&[2, 3, 2], 60), x(&[2, 3, 2], 61), x(&[3, 2], 62)],
        )
        .arg("reduction", Arg::Int(0)),
    );
    v.push(
        Sample::new(
            "[3,2] mean, target [2,3,2] broadcast",
            vec![x(&[], 63), x(&[3, 2], 64), x(&[2, 3, 2], 65)],
        )
        .arg("reduction", Arg::Int(1)),
    );
    v
}

pub fn loss_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "reduction 3",
            vec![
                vals(&[], DType::F32, 143),
                vals(&[3], DType::F32, 144),
                vals(&[3], DType::F32, 145),
            ],
        )
        .arg("reduction", Arg::Int(3)),
        ErrorKind::Value,
        "3 is not a valid value for reduction",
    )]
}

/// With `beta`: the loss backward samples, a smaller beta, and beta 0.
pub fn smooth_l1_loss_backward(dtype: DType) -> Vec<Sample> {
    let mut v = loss_backward(dtype);
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    v.push(
        Sample::new("beta 0.5", vec![x(&[], 66), x(&[3, 4], 67), x(&[3, 4], 68)])
            .arg("reduction", Arg::Int(1))
            .arg("beta", Arg::Float(0.5)),
    );
    v.push(
        Sample::new("beta 0 (L1)", vec![x(&[5], 69), x(&[5], 70), x(&[5], 71)])
            .arg("beta", Arg::Float(0.0))
            .arg("reduction", Arg::Int(0)),
    );
    v.into_iter()
        .map(|s| {
            if s.float("beta").is_some() {
                s
            } else {
                s.arg("beta", Arg::Float(1.0))
            }
        })
        .collect()
}

pub fn smooth_l1_loss_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "beta -1",
            vec![
                vals(&[], DType::F32, 146),
                vals(&[3], DType::F32, 147),
                vals(&[3], DType::F32, 148),
            ],
        )
        .arg("reduction", Arg::Int(1))
        .arg("beta", Arg::Float(-1.0)),
        ErrorKind::Value,
        "smooth_l1_loss does not support negative values for beta.",
    )]
}

/// With `delta`: the loss backward samples and a smaller delta.
pub fn huber_loss_backward(dtype: DType) -> Vec<Sample> {
    let mut v = loss_backward(dtype);
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    v.push(
        Sample::new(
            "delta 0.5",
            vec![x(&[], 72), x(&[3, 4], 73), x(&[3, 4], 74)],
        )
        .arg("reduction", Arg::Int(1))
        .arg("delta", Arg::Float(0.5)),
    );
    v.into_iter()
        .map(|s| {
            if s.float("delta").is_some() {
                s
            } else {
                s.arg("delta", Arg::Float(1.0))
            }
        })
        .collect()
}

pub fn huber_loss_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "delta 0",
            vec![
                vals(&[], DType::F32, 149),
                vals(&[3], DType::F32, 150),
                vals(&[3], DType::F32, 151),
            ],
        )
        .arg("reduction", Arg::Int(1))
        .arg("delta", Arg::Float(0.0)),
        ErrorKind::Value,
        "huber_loss does not support non-positive values for delta.",
    )]
}

pub fn loss_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("reduction 3", two(&[3], &[3], DType::F32, 140)).arg("reduction", Arg::Int(3)),
        ErrorKind::Value,
        "3 is not a valid value for reduction",
    )]
}

pub fn smooth_l1_loss(dtype: DType) -> Vec<Sample> {
    let mut v = loss(dtype);
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    v.push(Sample::new("beta 0.5", two(&[3, 4], &[3, 4], dtype, 9)).arg("beta", Arg::Float(0.5)));
    v.push(
        Sample::new("beta 0 (L1)", vec![x(&[5], 11), x(&[5], 12)])
            .arg("beta", Arg::Float(0.0))
            .arg("reduction", Arg::Int(0)),
    );
    v
}

pub fn smooth_l1_loss_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("beta -1", two(&[3], &[3], DType::F32, 141)).arg("beta", Arg::Float(-1.0)),
        ErrorKind::Value,
        "smooth_l1_loss does not support negative values for beta.",
    )]
}

pub fn huber_loss(dtype: DType) -> Vec<Sample> {
    let mut v = loss(dtype);
    v.push(Sample::new("delta 0.5", two(&[3, 4], &[3, 4], dtype, 9)).arg("delta", Arg::Float(0.5)));
    v
}

pub fn huber_loss_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("delta 0", two(&[3], &[3], DType::F32, 142)).arg("delta", Arg::Float(0.0)),
        ErrorKind::Value,
        "huber_loss does not support non-positive values for delta.",
    )]
}

/// kl_div: log-probabilities against positive probabilities or log-probabilities.
pub fn kl_div(dtype: DType) -> Vec<Sample> {
    let logp = |s: &[usize], seed| make(s, dtype, -3.0, -0.1, seed);
    let p = |s: &[usize], seed| {
        let n: usize = s.iter().product();
        let u = uniform(n, seed);
        // Strictly positive: at a zero target the loss's gradient in the target is undefined.
        let v: Vec<f64> = u.iter().map(|&r| 0.05 + 0.95 * r).collect();
        from_f64(&v, s, dtype)
    };
    vec![
        Sample::new("[3,4] mean", vec![logp(&[3, 4], 1), p(&[3, 4], 2)]),
        Sample::new("[3,4] none", vec![logp(&[3, 4], 3), p(&[3, 4], 4)])
            .arg("reduction", Arg::Int(0)),
        Sample::new(
            "[3,4] sum, log_target",
            vec![logp(&[3, 4], 5), logp(&[3, 4], 6)],
        )
        .arg("reduction", Arg::Int(2))
        .arg("log_target", Arg::Bool(true)),
        Sample::new("0-d", vec![logp(&[], 7), p(&[], 8)]).edge(),
    ]
}

pub fn kl_div_errors() -> Vec<ErrorSample> {
    loss_errors()
}
