//! Samples for the classification losses: nll_loss, cross_entropy, binary cross-entropy.

use super::{err, index, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

fn reduction(r: i64) -> Arg {
    Arg::Int(r)
}

/// `reduction` and `ignore_index` given explicitly (nll_loss_forward/backward have no
/// defaults).
fn nll_args(s: Sample, reduction: i64, ignore_index: i64) -> Sample {
    s.arg("reduction", Arg::Int(reduction))
        .arg("ignore_index", Arg::Int(ignore_index))
}

pub fn nll_loss_forward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |c: usize, seed| super::make(&[c], dtype, 0.5, 2.0, seed);
    vec![
        nll_args(
            Sample::new(
                "[4,5] mean",
                vec![x(&[4, 5], 1), index(&[0, 4, 2, 2], &[4])],
            ),
            1,
            -100,
        ),
        nll_args(
            Sample::new(
                "[4,3] weight, ignore 1, sum",
                vec![x(&[4, 3], 2), index(&[1, 0, 2, 1], &[4]), w(3, 3)],
            ),
            2,
            1,
        ),
        nll_args(
            Sample::new(
                "[2,3,4] weight none",
                vec![
                    x(&[2, 3, 4], 4),
                    index(&[0, 2, 1, 1, 2, 0, 0, 1], &[2, 4]),
                    w(3, 5),
                ],
            ),
            0,
            -100,
        ),
        nll_args(
            Sample::new(
                "[5] unbatched weighted mean",
                vec![x(&[5], 6), Tensor::from(3i64), w(5, 7)],
            ),
            1,
            -100,
        ),
        nll_args(
            Sample::new(
                "[2,3,2,2] weight mean, ignore 0",
                vec![
                    x(&[2, 3, 2, 2], 8),
                    index(&[1, 0, 2, 2, 0, 1, 1, 2], &[2, 2, 2]),
                    w(3, 9),
                ],
            ),
            1,
            0,
        ),
        nll_args(
            Sample::new("[3] unbatched none", vec![x(&[3], 10), Tensor::from(1i64)]),
            0,
            -100,
        ),
        nll_args(
            Sample::new(
                "[0,3] empty batch sum",
                vec![x(&[0, 3], 11), index(&[], &[0])],
            ),
            2,
            -100,
        )
        .edge(),
    ]
}

pub fn nll_loss_forward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            nll_args(
                Sample::new(
                    "target 5 of 5 classes",
                    vec![vals(&[2, 5], f, 151), index(&[0, 5], &[2])],
                ),
                1,
                -100,
            ),
            ErrorKind::Index, "Target 5 is out of bounds.",
        ),
        err(
            nll_args(
                Sample::new(
                    "batch mismatch",
                    vec![vals(&[3, 5], f, 152), index(&[0, 1], &[2])],
                ),
                1,
                -100,
            ),
            ErrorKind::Shape, "size mismatch (got input: [3, 5], target: [2])",
        ),
        err(
            nll_args(
                Sample::new(
                    "weight of 4 for 5 classes",
                    vec![
                        vals(&[2, 5], f, 153),
                        index(&[0, 1], &[2]),
                        vals(&[4], f, 154),
                    ],
                ),
                1,
                -100,
            ),
            ErrorKind::Shape, "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of shape: [4]",
        ),
        err(
            nll_args(
                Sample::new(
                    "reduction 3",
                    vec![vals(&[2, 5], f, 155), index(&[0, 1], &[2])],
                ),
                3,
                -100,
            ),
            ErrorKind::Value, "3 is not a valid value for reduction",
        ),
    ]
}

pub fn nll_loss_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |c: usize, seed| super::make(&[c], dtype, 0.5, 2.0, seed);
    let total = |seed| super::make(&[], dtype, 1.0, 3.0, seed);
    vec![
        nll_args(
            Sample::new(
                "[4,5] mean",
                vec![
                    x(&[], 1),
                    x(&[4, 5], 2),
                    index(&[0, 4, 2, 2], &[4]),
                    total(3),
                ],
            )
            .absent(3),
            1,
            -100,
        ),
        nll_args(
            Sample::new(
                "[4,3] weight, ignore 1, sum",
                vec![
                    x(&[], 4),
                    x(&[4, 3], 5),
                    index(&[1, 0, 2, 1], &[4]),
                    w(3, 6),
                    total(7),
                ],
            ),
            2,
            1,
        ),
        nll_args(
            Sample::new(
                "[2,3,4] weight none",
                vec![
                    x(&[2, 4], 8),
                    x(&[2, 3, 4], 9),
                    index(&[0, 2, 1, 1, 2, 0, 0, 1], &[2, 4]),
                    w(3, 10),
                    total(11),
                ],
            ),
            0,
            -100,
        ),
        nll_args(
            Sample::new(
                "[5] unbatched weighted mean",
                vec![
                    x(&[], 12),
                    x(&[5], 13),
                    Tensor::from(3i64),
                    w(5, 14),
                    total(15),
                ],
            ),
            1,
            -100,
        ),
        nll_args(
            Sample::new(
                "[2,3,2,2] none, ignore 0",
                vec![
                    x(&[2, 2, 2], 16),
                    x(&[2, 3, 2, 2], 17),
                    index(&[1, 0, 2, 2, 0, 1, 1, 2], &[2, 2, 2]),
                    total(18),
                ],
            )
            .absent(3),
            0,
            0,
        ),
        nll_args(
            Sample::new(
                "[0,3] empty batch sum",
                vec![x(&[], 19), x(&[0, 3], 20), index(&[], &[0]), total(21)],
            )
            .absent(3)
            .edge(),
            2,
            -100,
        ),
    ]
}

pub fn nll_loss_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let case = |desc: &str, go: &[usize], tw: &[usize], t: &[i64]| {
        Sample::new(
            desc,
            vec![
                vals(go, f, 156),
                vals(&[2, 5], f, 157),
                index(t, &[2]),
                vals(tw, f, 158),
            ],
        )
        .absent(3)
    };
    vec![
        err(
            nll_args(
                case("grad_output [2] for a mean", &[2], &[], &[0, 1]),
                1,
                -100,
            ),
            ErrorKind::Shape,
            "Expected a single element grad_output tensor, but got: [2]",
        ),
        err(
            nll_args(case("total_weight [2]", &[], &[2], &[0, 1]), 2, -100),
            ErrorKind::Shape,
            "expected total_weight to be a single element tensor, got: [2] (2 elements)",
        ),
        err(
            nll_args(case("target 7 of 5 classes", &[], &[], &[0, 7]), 2, -100),
            ErrorKind::Index,
            "Target 7 is out of bounds.",
        ),
    ]
}

pub fn nll_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |c: usize, seed| super::make(&[c], dtype, 0.5, 2.0, seed);
    vec![
        Sample::new(
            "[4,5] mean",
            vec![x(&[4, 5], 1), index(&[0, 4, 2, 2], &[4])],
        ),
        Sample::new(
            "[4,3] weight, ignore 1, sum",
            vec![x(&[4, 3], 2), index(&[1, 0, 2, 1], &[4]), w(3, 3)],
        )
        .arg("ignore_index", Arg::Int(1))
        .arg("reduction", reduction(2)),
        Sample::new(
            "[2,3,4] none",
            vec![x(&[2, 3, 4], 4), index(&[0, 2, 1, 1, 2, 0, 0, 1], &[2, 4])],
        )
        .arg("reduction", reduction(0)),
        Sample::new(
            "[5] unbatched weighted mean",
            vec![x(&[5], 5), Tensor::from(3i64), w(5, 6)],
        ),
        Sample::new(
            "[0,3] empty batch sum",
            vec![x(&[0, 3], 7), index(&[], &[0])],
        )
        .arg("reduction", reduction(2))
        .edge(),
    ]
}

pub fn nll_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new(
                "target 5 of 5 classes",
                vec![vals(&[2, 5], f, 151), index(&[0, 5], &[2])],
            ),
            ErrorKind::Index,
            "Target 5 is out of bounds.",
        ),
        err(
            Sample::new(
                "batch mismatch",
                vec![vals(&[3, 5], f, 152), index(&[0, 1], &[2])],
            ),
            ErrorKind::Shape,
            "Expected input batch_size (3) to match target batch_size (2).",
        ),
    ]
}

pub fn cross_entropy(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |c: usize, seed| super::make(&[c], dtype, 0.5, 2.0, seed);
    let probs = |s: &[usize], seed| x(s, seed).softmax(1).expect("softmax");
    vec![
        Sample::new(
            "[4,5] indices mean",
            vec![x(&[4, 5], 1), index(&[0, 4, 2, 2], &[4])],
        ),
        Sample::new(
            "[4,3] weight, smoothing 0.2, ignore 1",
            vec![x(&[4, 3], 2), index(&[1, 0, 2, 1], &[4]), w(3, 3)],
        )
        .arg("ignore_index", Arg::Int(1))
        .arg("label_smoothing", Arg::Float(0.2)),
        Sample::new(
            "[3,4] probabilities, smoothing 0.1, sum",
            vec![x(&[3, 4], 4), probs(&[3, 4], 5)],
        )
        .arg("label_smoothing", Arg::Float(0.1))
        .arg("reduction", reduction(2)),
        Sample::new(
            "[2,3,4] indices none",
            vec![x(&[2, 3, 4], 6), index(&[0, 2, 1, 1, 2, 0, 0, 1], &[2, 4])],
        )
        .arg("reduction", reduction(0)),
        Sample::new(
            "[3,4] smoothing 0.3 mean no weight",
            vec![x(&[3, 4], 7), index(&[3, 0, 1], &[3])],
        )
        .arg("label_smoothing", Arg::Float(0.3)),
        Sample::new(
            "[0,3] empty batch sum",
            vec![x(&[0, 3], 8), index(&[], &[0])],
        )
        .arg("reduction", reduction(2))
        .edge(),
    ]
}

pub fn cross_entropy_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "smoothing 1.5",
            vec![vals(&[2, 3], DType::F32, 153), index(&[0, 1], &[2])],
        )
        .arg("label_smoothing", Arg::Float(1.5)),
        ErrorKind::Value,
        "label_smoothing must be between 0.0 and 1.0. Got: 1.5",
    )]
}

pub fn bce(dtype: DType) -> Vec<Sample> {
    let p = |s: &[usize], seed| super::make(s, dtype, 0.05, 0.95, seed);
    let t = |s: &[usize], seed| super::make(s, dtype, 0.0, 1.0, seed);
    vec![
        Sample::new("[3,4] mean", vec![p(&[3, 4], 1), t(&[3, 4], 2)]),
        Sample::new(
            "[5] weight sum",
            vec![
                p(&[5], 3),
                t(&[5], 4),
                super::make(&[5], dtype, 0.5, 2.0, 5),
            ],
        )
        .arg("reduction", reduction(2)),
        Sample::new("[2,3] none", vec![p(&[2, 3], 6), t(&[2, 3], 7)])
            .arg("reduction", reduction(0)),
        Sample::new("[0] mean of nothing", vec![p(&[0], 8), t(&[0], 9)])
            .arg("reduction", reduction(2))
            .edge(),
    ]
}

pub fn bce_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new(
                "input above 1",
                vec![super::make(&[3], f, 1.5, 2.0, 154), vals(&[3], f, 155)],
            ),
            ErrorKind::Value,
            "all elements of input should be between 0 and 1",
        ),
        err(
            Sample::new(
                "shape mismatch",
                vec![super::make(&[2, 3], f, 0.1, 0.9, 156), vals(&[3], f, 157)],
            ),
            ErrorKind::Value,
            "Please ensure they have the same size.",
        ),
    ]
}

pub fn bce_backward(dtype: DType) -> Vec<Sample> {
    let g = |s: &[usize], seed| vals(s, dtype, seed);
    let p = |s: &[usize], seed| super::make(s, dtype, 0.05, 0.95, seed);
    let t = |s: &[usize], seed| super::make(s, dtype, 0.0, 1.0, seed);
    vec![
        Sample::new("[3,4] mean", vec![g(&[], 1), p(&[3, 4], 2), t(&[3, 4], 3)]),
        Sample::new(
            "[5] weight sum",
            vec![
                g(&[], 4),
                p(&[5], 5),
                t(&[5], 6),
                super::make(&[5], dtype, 0.5, 2.0, 7),
            ],
        )
        .arg("reduction", reduction(2)),
        Sample::new(
            "[2,3] none, weight [3]",
            vec![
                g(&[2, 3], 8),
                p(&[2, 3], 9),
                t(&[2, 3], 10),
                super::make(&[3], dtype, 0.5, 2.0, 11),
            ],
        )
        .arg("reduction", reduction(0)),
        Sample::new(
            "[0] sum of nothing",
            vec![g(&[], 12), p(&[0], 13), t(&[0], 14)],
        )
        .arg("reduction", reduction(2))
        .edge(),
    ]
}

pub fn bce_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "shape mismatch",
            vec![
                vals(&[], f, 159),
                super::make(&[2, 3], f, 0.1, 0.9, 160),
                vals(&[3], f, 161),
            ],
        ),
        ErrorKind::Value,
        "Please ensure they have the same size.",
    )]
}

pub fn bce_logits(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let t = |s: &[usize], seed| super::make(s, dtype, 0.0, 1.0, seed);
    let pos = |s: &[usize], seed| super::make(s, dtype, 0.5, 3.0, seed);
    vec![
        Sample::new("[3,4] mean", vec![x(&[3, 4], 1), t(&[3, 4], 2)]),
        Sample::new(
            "[2,3] weight + pos_weight [3] sum",
            vec![x(&[2, 3], 3), t(&[2, 3], 4), pos(&[2, 3], 5), pos(&[3], 6)],
        )
        .arg("reduction", reduction(2)),
        Sample::new("[5] none", vec![x(&[5], 7), t(&[5], 8)]).arg("reduction", reduction(0)),
        Sample::new("0-d mean", vec![x(&[], 9), t(&[], 10)]).edge(),
    ]
}

pub fn bce_logits_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "shape mismatch",
            vec![vals(&[2, 3], f, 158), vals(&[2], f, 159)],
        ),
        ErrorKind::Value,
        "Please ensure they have the same size.",
    )]
}
