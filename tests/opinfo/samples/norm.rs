//! Samples for the fused normalization kernels (`native_layer_norm`, `native_group_norm`,
//! `native_batch_norm`, `_fused_rms_norm` and their backward ops) and the normalization
//! functions (batch_norm, layer_norm, group_norm, instance_norm, rms_norm). Statistics given to a
//! backward op are 1-D (`[M]`, not `[M, 1]`): the ops accept any shape holding one value per
//! row, and a trailing size-1 dim would defeat the non-contiguous check.

use super::{err, ints, make, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

/// Means in [-0.5, 0.5).
fn means(n: usize, dtype: DType, seed: u64) -> Tensor {
    make(&[n], dtype, -0.5, 0.5, seed)
}

/// Inverse standard deviations in [0.5, 1.5).
fn rstds(n: usize, dtype: DType, seed: u64) -> Tensor {
    make(&[n], dtype, 0.5, 1.5, seed)
}

fn mask(m: &[bool]) -> Arg {
    Arg::Bools(m.to_vec())
}

fn eps(e: f64) -> Arg {
    Arg::Float(e)
}

// ---------------------------------------------------------------------------------------
// Layer norm
// ---------------------------------------------------------------------------------------

pub fn native_layer_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] over [4] affine",
            vec![x(&[3, 4], 1), x(&[4], 2), x(&[4], 3)],
        )
        .arg("normalized_shape", ints(&[4]))
        .arg("eps", eps(1e-5)),
        Sample::new(
            "[2,3,4] over [3,4] weight",
            vec![x(&[2, 3, 4], 4), x(&[3, 4], 5)],
        )
        .arg("normalized_shape", ints(&[3, 4]))
        .arg("eps", eps(1e-5)),
        Sample::new("[4,5] over [5] eps 0.1", vec![x(&[4, 5], 6)])
            .arg("normalized_shape", ints(&[5]))
            .arg("eps", eps(0.1)),
        Sample::new(
            "[3,2,67] over [67] affine (a row longer than the sum lanes)",
            vec![x(&[3, 2, 67], 7), x(&[67], 8), x(&[67], 9)],
        )
        .arg("normalized_shape", ints(&[67]))
        .arg("eps", eps(1e-5)),
        Sample::new("[0,3] over [3]", vec![x(&[0, 3], 10)])
            .arg("normalized_shape", ints(&[3]))
            .arg("eps", eps(1e-5))
            .edge(),
    ]
}

pub fn native_layer_norm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let s = |desc: &str, t: Vec<Tensor>, ns: &[i64]| {
        Sample::new(desc, t)
            .arg("normalized_shape", ints(ns))
            .arg("eps", eps(1e-5))
    };
    vec![
        err(
            s("shape mismatch", vec![vals(&[2, 3], f, 160)], &[4]),
            ErrorKind::Shape, "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]",
        ),
        err(
            s("empty normalized_shape", vec![vals(&[2, 3], f, 161)], &[]),
            ErrorKind::Shape, "Expected normalized_shape to be at least 1-dimensional",
        ),
        err(
            s(
                "weight of the wrong shape",
                vec![vals(&[2, 4], f, 162), vals(&[3], f, 163)],
                &[4],
            ),
            ErrorKind::Shape, "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and normalized_shape = [4]",
        ),
        err(
            s("integer input", vec![vals(&[2, 4], DType::I64, 164)], &[4]),
            ErrorKind::DType, "not implemented for 'Long'",
        ),
    ]
}

pub fn native_layer_norm_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] over [4] affine, every gradient",
            vec![
                x(&[3, 4], 1),
                x(&[3, 4], 2),
                means(3, dtype, 3),
                rstds(3, dtype, 4),
                x(&[4], 5),
                x(&[4], 6),
            ],
        )
        .arg("normalized_shape", ints(&[4]))
        .arg("output_mask", mask(&[true, true, true])),
        Sample::new(
            "[2,3,4] over [3,4] weight, input and weight gradients",
            vec![
                x(&[2, 3, 4], 7),
                x(&[2, 3, 4], 8),
                means(2, dtype, 9),
                rstds(2, dtype, 10),
                x(&[3, 4], 11),
            ],
        )
        .arg("normalized_shape", ints(&[3, 4]))
        .arg("output_mask", mask(&[true, true, false])),
        Sample::new(
            "[4,5] over [5] no affine, input gradient",
            vec![
                x(&[4, 5], 12),
                x(&[4, 5], 13),
                means(4, dtype, 14),
                rstds(4, dtype, 15),
            ],
        )
        .arg("normalized_shape", ints(&[5]))
        .arg("output_mask", mask(&[true, false, false])),
        Sample::new(
            "[2,2,67] over [67] affine, parameter gradients",
            vec![
                x(&[2, 2, 67], 16),
                x(&[2, 2, 67], 17),
                means(4, dtype, 18),
                rstds(4, dtype, 19),
                x(&[67], 20),
                x(&[67], 21),
            ],
        )
        .arg("normalized_shape", ints(&[67]))
        .arg("output_mask", mask(&[false, true, true])),
        Sample::new(
            "[0,3] over [3]",
            vec![
                x(&[0, 3], 22),
                x(&[0, 3], 23),
                means(0, dtype, 24),
                rstds(0, dtype, 25),
                x(&[3], 26),
                x(&[3], 27),
            ],
        )
        .arg("normalized_shape", ints(&[3]))
        .arg("output_mask", mask(&[true, true, true]))
        .edge(),
    ]
}

pub fn native_layer_norm_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let s = |desc: &str, mean: usize, m: &[bool]| {
        Sample::new(
            desc,
            vec![
                vals(&[3, 4], f, 165),
                vals(&[3, 4], f, 166),
                means(mean, f, 167),
                rstds(3, f, 168),
            ],
        )
        .arg("normalized_shape", ints(&[4]))
        .arg("output_mask", mask(m))
    };
    vec![
        err(
            s("two-element output_mask", 3, &[true, true]),
            ErrorKind::Shape,
            "output_mask must have 3 elements",
        ),
        err(
            s("mean of the wrong size", 2, &[true, true, true]),
            ErrorKind::Shape,
            "Expected mean to hold 3 values",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Group norm
// ---------------------------------------------------------------------------------------

/// `N`, `C`, `HxW`, `group` of an input `[N, C, *]`.
fn group_args(s: Sample, shape: &[usize], group: i64) -> Sample {
    let hxw: usize = shape[2..].iter().product();
    s.arg("N", Arg::Int(shape[0] as i64))
        .arg("C", Arg::Int(shape[1] as i64))
        .arg("HxW", Arg::Int(hxw as i64))
        .arg("group", Arg::Int(group))
}

pub fn native_group_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let case = |desc: &str, shape: &[usize], group: i64, params: usize, seed: u64| {
        let c = shape[1];
        let mut t = vec![x(shape, seed)];
        t.extend((0..params).map(|k| x(&[c], seed + 1 + k as u64)));
        group_args(Sample::new(desc, t), shape, group).arg("eps", eps(1e-5))
    };
    vec![
        case("[2,6,4] 3 groups affine", &[2, 6, 4], 3, 2, 1),
        case("[2,4,3,3] 2 groups", &[2, 4, 3, 3], 2, 0, 4),
        case("[3,4,2] 1 group weight", &[3, 4, 2], 1, 1, 5),
        case("[2,6,5,3] 2 groups affine", &[2, 6, 5, 3], 2, 2, 8),
        case("[0,4,2] empty batch", &[0, 4, 2], 2, 0, 11).edge(),
    ]
}

pub fn native_group_norm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let s = |desc: &str, shape: &[usize], n: i64, c: i64, hxw: i64, group: i64| {
        Sample::new(desc, vec![vals(shape, f, 170)])
            .arg("N", Arg::Int(n))
            .arg("C", Arg::Int(c))
            .arg("HxW", Arg::Int(hxw))
            .arg("group", Arg::Int(group))
            .arg("eps", eps(1e-5))
    };
    vec![
        err(
            s("6 channels, 4 groups", &[2, 6, 4], 2, 6, 4, 4),
            ErrorKind::Shape, "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 4] and num_groups=4",
        ),
        err(
            s("no groups", &[2, 6, 4], 2, 6, 4, 0),
            ErrorKind::Value, "Expected num groups to be greater than 0, got 0",
        ),
        err(
            s("N * C * HxW not the input's size", &[2, 6, 4], 2, 6, 5, 3),
            ErrorKind::Shape, "Expected an input of N * C * HxW = 2 * 6 * 5 elements",
        ),
        err(
            s("no channels, 2^62 groups", &[2, 0, 3], 2, 0, 3, 1 << 62),
            ErrorKind::Value, "Expected N * num_groups to fit the statistics",
        ),
    ]
}

pub fn native_group_norm_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let case = |desc: &str, shape: &[usize], group: i64, weight: bool, m: &[bool], seed: u64| {
        let rows = shape[0] * group as usize;
        let mut t = vec![
            x(shape, seed),
            x(shape, seed + 1),
            means(rows, dtype, seed + 2),
            rstds(rows, dtype, seed + 3),
        ];
        if weight {
            t.push(x(&[shape[1]], seed + 4));
        }
        group_args(Sample::new(desc, t), shape, group).arg("output_mask", mask(m))
    };
    vec![
        case(
            "[2,6,4] 3 groups weight, every gradient",
            &[2, 6, 4],
            3,
            true,
            &[true, true, true],
            1,
        ),
        case(
            "[2,4,3,3] 2 groups, input and bias gradients",
            &[2, 4, 3, 3],
            2,
            false,
            &[true, false, true],
            6,
        ),
        case(
            "[3,4,2] 1 group weight, parameter gradients",
            &[3, 4, 2],
            1,
            true,
            &[false, true, true],
            11,
        ),
        case(
            "[0,4,2] empty batch",
            &[0, 4, 2],
            2,
            true,
            &[true, true, true],
            16,
        )
        .edge(),
    ]
}

pub fn native_group_norm_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        group_args(
            Sample::new(
                "one-element output_mask",
                vec![
                    vals(&[2, 4, 3], f, 171),
                    vals(&[2, 4, 3], f, 172),
                    means(4, f, 173),
                    rstds(4, f, 174),
                ],
            ),
            &[2, 4, 3],
            2,
        )
        .arg("output_mask", mask(&[true])),
        ErrorKind::Shape,
        "output_mask must have 3 elements",
    )]
}

// ---------------------------------------------------------------------------------------
// Batch norm
// ---------------------------------------------------------------------------------------

/// Running statistics in float32 beside half inputs (PyTorch's mixed-type case), else in
/// the input's dtype.
fn stat_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

fn bn_args(s: Sample, training: bool) -> Sample {
    s.arg("training", Arg::Bool(training))
        .arg("momentum", Arg::Float(0.1))
        .arg("eps", eps(1e-5))
}

pub fn native_batch_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let st = |c: usize, seed| make(&[c], stat_dtype(dtype), 0.5, 1.5, seed);
    let full = |shape: &[usize], seed: u64| {
        let c = shape[1];
        vec![
            x(shape, seed),
            x(&[c], seed + 1),
            x(&[c], seed + 2),
            st(c, seed + 3),
            st(c, seed + 4),
        ]
    };
    vec![
        bn_args(
            Sample::new(
                "[4,3,5] training, affine, running stats",
                full(&[4, 3, 5], 1),
            ),
            true,
        ),
        bn_args(
            Sample::new("[3,2,4] eval with running stats", full(&[3, 2, 4], 6)),
            false,
        ),
        bn_args(
            Sample::new("[2,3,2,2] training, no affine", vec![x(&[2, 3, 2, 2], 11)]),
            true,
        ),
        bn_args(
            Sample::new(
                "[5,3] training 2-D, affine, running stats",
                full(&[5, 3], 12),
            ),
            true,
        ),
        bn_args(
            Sample::new("[2,3,4,2] eval 4-D", full(&[2, 3, 4, 2], 17)),
            false,
        ),
        bn_args(
            Sample::new("[0,3] eval on an empty batch", full(&[0, 3], 22)),
            false,
        )
        .edge(),
    ]
}

pub fn native_batch_norm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            bn_args(
                Sample::new("one value per channel", vec![vals(&[1, 3], f, 175)]),
                true,
            ),
            ErrorKind::Shape,
            "Expected more than 1 value per channel when training, got input size [1, 3]",
        ),
        err(
            bn_args(
                Sample::new("eval without running stats", vec![vals(&[2, 3], f, 176)]),
                false,
            ),
            ErrorKind::Value,
            "running_mean and running_var must be defined in evaluation mode",
        ),
        err(
            bn_args(
                Sample::new(
                    "weight of the wrong size",
                    vec![vals(&[2, 3], f, 177), vals(&[2], f, 178)],
                ),
                true,
            ),
            ErrorKind::Shape,
            "weight should contain 3 elements not 2",
        ),
        err(
            bn_args(Sample::new("1-d input", vec![vals(&[4], f, 179)]), true),
            ErrorKind::Shape,
            "expected 2D or higher input (got 1D input)",
        ),
    ]
}

pub fn native_batch_norm_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let st = |c: usize, seed| make(&[c], stat_dtype(dtype), 0.5, 1.5, seed);
    let case = |desc: &str, shape: &[usize], train: bool, m: &[bool], seed: u64| {
        let c = shape[1];
        let mut t = vec![
            x(shape, seed),
            x(shape, seed + 1),
            x(&[c], seed + 2),
            st(c, seed + 3),
            st(c, seed + 4),
        ];
        if train {
            t.push(means(c, stat_dtype(dtype), seed + 5));
            t.push(rstds(c, stat_dtype(dtype), seed + 6));
        }
        Sample::new(desc, t)
            .arg("train", Arg::Bool(train))
            .arg("eps", eps(1e-5))
            .arg("output_mask", mask(m))
    };
    vec![
        case(
            "[4,3,5] training, every gradient",
            &[4, 3, 5],
            true,
            &[true, true, true],
            1,
        ),
        case(
            "[3,2,4] eval, every gradient",
            &[3, 2, 4],
            false,
            &[true, true, true],
            8,
        ),
        case(
            "[2,3,2,2] training, input and bias gradients",
            &[2, 3, 2, 2],
            true,
            &[true, false, true],
            15,
        ),
        case(
            "[5,3] eval 2-D, parameter gradients",
            &[5, 3],
            false,
            &[false, true, true],
            22,
        ),
        case(
            "[0,3] eval on an empty batch",
            &[0, 3],
            false,
            &[true, true, true],
            29,
        )
        .edge(),
    ]
}

pub fn native_batch_norm_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "training without saved statistics",
            vec![vals(&[2, 3], f, 180), vals(&[2, 3], f, 181)],
        )
        .arg("train", Arg::Bool(true))
        .arg("eps", eps(1e-5))
        .arg("output_mask", mask(&[true, true, true])),
        ErrorKind::Value,
        "save_mean and save_invstd must be defined in training mode",
    )]
}

// ---------------------------------------------------------------------------------------
// RMS norm
// ---------------------------------------------------------------------------------------

pub fn fused_rms_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] over [4] weight, default eps",
            vec![x(&[3, 4], 1), x(&[4], 2)],
        )
        .arg("normalized_shape", ints(&[4]))
        .arg("eps", Arg::OptFloat(None)),
        Sample::new("[2,3,4] over [3,4] eps 0.01", vec![x(&[2, 3, 4], 3)])
            .arg("normalized_shape", ints(&[3, 4]))
            .arg("eps", eps(0.01)),
        Sample::new(
            "[4,5] over [5] weight eps 0.1",
            vec![x(&[4, 5], 4), x(&[5], 5)],
        )
        .arg("normalized_shape", ints(&[5]))
        .arg("eps", eps(0.1)),
        Sample::new(
            "[2,3,67] over [67] weight",
            vec![x(&[2, 3, 67], 6), x(&[67], 7)],
        )
        .arg("normalized_shape", ints(&[67]))
        .arg("eps", eps(1e-6)),
        Sample::new("[0,3] over [3]", vec![x(&[0, 3], 8)])
            .arg("normalized_shape", ints(&[3]))
            .arg("eps", Arg::OptFloat(None))
            .edge(),
    ]
}

pub fn fused_rms_norm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("shape mismatch", vec![vals(&[2, 3], f, 182)])
                .arg("normalized_shape", ints(&[2]))
                .arg("eps", Arg::OptFloat(None)),
            ErrorKind::Shape, "Given normalized_shape=[2], expected input with shape [*, 2]",
        ),
        err(
            Sample::new(
                "weight of the wrong shape",
                vec![vals(&[2, 3], f, 183), vals(&[2], f, 184)],
            )
            .arg("normalized_shape", ints(&[3]))
            .arg("eps", Arg::OptFloat(None)),
            ErrorKind::Shape, "Expected weight to be of same shape as normalized_shape, but got weight of shape [2] and normalized_shape = [3]",
        ),
    ]
}

pub fn fused_rms_norm_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] over [4] weight, every gradient",
            vec![x(&[3, 4], 1), x(&[3, 4], 2), rstds(3, dtype, 3), x(&[4], 4)],
        )
        .arg("normalized_shape", ints(&[4]))
        .arg("output_mask", mask(&[true, true])),
        Sample::new(
            "[2,3,4] over [3,4], input gradient",
            vec![x(&[2, 3, 4], 5), x(&[2, 3, 4], 6), rstds(2, dtype, 7)],
        )
        .arg("normalized_shape", ints(&[3, 4]))
        .arg("output_mask", mask(&[true, false])),
        Sample::new(
            "[4,5] over [5] weight, weight gradient",
            vec![
                x(&[4, 5], 8),
                x(&[4, 5], 9),
                rstds(4, dtype, 10),
                x(&[5], 11),
            ],
        )
        .arg("normalized_shape", ints(&[5]))
        .arg("output_mask", mask(&[false, true])),
        Sample::new(
            "[2,2,67] over [67] weight, every gradient",
            vec![
                x(&[2, 2, 67], 12),
                x(&[2, 2, 67], 13),
                rstds(4, dtype, 14),
                x(&[67], 15),
            ],
        )
        .arg("normalized_shape", ints(&[67]))
        .arg("output_mask", mask(&[true, true])),
        Sample::new(
            "[0,3] over [3]",
            vec![
                x(&[0, 3], 16),
                x(&[0, 3], 17),
                rstds(0, dtype, 18),
                x(&[3], 19),
            ],
        )
        .arg("normalized_shape", ints(&[3]))
        .arg("output_mask", mask(&[true, true]))
        .edge(),
    ]
}

pub fn fused_rms_norm_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "three-element output_mask",
            vec![
                vals(&[3, 4], f, 185),
                vals(&[3, 4], f, 186),
                rstds(3, f, 187),
            ],
        )
        .arg("normalized_shape", ints(&[4]))
        .arg("output_mask", mask(&[true, true, true])),
        ErrorKind::Shape,
        "output_mask must have 2 elements",
    )]
}

// ---------------------------------------------------------------------------------------
// Normalization functions
// ---------------------------------------------------------------------------------------

pub fn batch_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let stat = |c: usize, seed| super::make(&[c], DType::F32, 0.5, 1.5, seed);
    let args = |s: Sample, training: bool| {
        s.arg("training", Arg::Bool(training))
            .arg("momentum", Arg::Float(0.1))
            .arg("eps", Arg::Float(1e-5))
            .arg("cudnn_enabled", Arg::Bool(false))
    };
    let st = |c: usize, seed| {
        if dtype == DType::F64 {
            stat(c, seed).to_dtype(DType::F64).expect("cast")
        } else {
            stat(c, seed)
        }
    };
    vec![
        args(
            Sample::new(
                "[4,3,5] training, affine, running stats",
                vec![x(&[4, 3, 5], 1), x(&[3], 2), x(&[3], 3), st(3, 4), st(3, 5)],
            ),
            true,
        ),
        args(
            Sample::new(
                "[3,2,4] eval with running stats",
                vec![
                    x(&[3, 2, 4], 6),
                    x(&[2], 7),
                    x(&[2], 8),
                    st(2, 9),
                    st(2, 10),
                ],
            ),
            false,
        ),
        args(
            Sample::new("[2,3,2,2] training, no affine", vec![x(&[2, 3, 2, 2], 11)]),
            true,
        ),
        args(
            Sample::new(
                "[0,3] eval on an empty batch",
                vec![
                    x(&[0, 3], 12),
                    x(&[3], 13),
                    x(&[3], 14),
                    st(3, 15),
                    st(3, 16),
                ],
            ),
            false,
        )
        .edge(),
    ]
}

pub fn batch_norm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new("one value per channel", vec![vals(&[1, 3], f, 146)])
            .arg("training", Arg::Bool(true))
            .arg("momentum", Arg::Float(0.1))
            .arg("eps", Arg::Float(1e-5))
            .arg("cudnn_enabled", Arg::Bool(false)),
        ErrorKind::Shape,
        "Expected more than 1 value per channel when training, got input size [1, 3]",
    )]
}

pub fn layer_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] over [4] affine",
            vec![x(&[3, 4], 1), x(&[4], 2), x(&[4], 3)],
        )
        .arg("normalized_shape", ints(&[4])),
        Sample::new("[2,3,4] over [3,4]", vec![x(&[2, 3, 4], 4)])
            .arg("normalized_shape", ints(&[3, 4])),
        Sample::new("[5] over [5] weight eps 0.1", vec![x(&[5], 5), x(&[5], 6)])
            .arg("normalized_shape", ints(&[5]))
            .arg("eps", Arg::Float(0.1)),
        Sample::new("[0,3] over [3]", vec![x(&[0, 3], 7)])
            .arg("normalized_shape", ints(&[3]))
            .edge(),
    ]
}

pub fn layer_norm_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("shape mismatch", vec![vals(&[2, 3], DType::F32, 147)])
            .arg("normalized_shape", ints(&[4])),
        ErrorKind::Shape,
        "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]",
    )]
}

pub fn group_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[2,6,4] 3 groups affine",
            vec![x(&[2, 6, 4], 1), x(&[6], 2), x(&[6], 3)],
        )
        .arg("num_groups", Arg::Int(3)),
        Sample::new("[2,4,3,3] 2 groups", vec![x(&[2, 4, 3, 3], 4)]).arg("num_groups", Arg::Int(2)),
        Sample::new("[3,4,2] 1 group weight", vec![x(&[3, 4, 2], 5), x(&[4], 6)])
            .arg("num_groups", Arg::Int(1)),
        Sample::new("[0,4,2] empty batch", vec![x(&[0, 4, 2], 7)])
            .arg("num_groups", Arg::Int(2))
            .edge(),
    ]
}

pub fn group_norm_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("6 channels, 4 groups", vec![vals(&[2, 6, 4], DType::F32, 148)]).arg("num_groups", Arg::Int(4)),
        ErrorKind::Shape, "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 4] and num_groups=4",
    )]
}

pub fn instance_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let st = |c: usize, seed| super::make(&[c], dtype, 0.5, 1.5, seed);
    let args = |s: Sample, stats: bool| {
        s.arg("use_input_stats", Arg::Bool(stats))
            .arg("momentum", Arg::Float(0.1))
            .arg("eps", Arg::Float(1e-5))
            .arg("cudnn_enabled", Arg::Bool(false))
    };
    vec![
        args(
            Sample::new(
                "[2,3,5] affine",
                vec![x(&[2, 3, 5], 1), x(&[3], 2), x(&[3], 3)],
            ),
            true,
        ),
        args(Sample::new("[2,2,3,3]", vec![x(&[2, 2, 3, 3], 4)]), true),
        args(
            Sample::new(
                "[3,2,4] with running stats",
                vec![x(&[3, 2, 4], 5), x(&[2], 6), x(&[2], 7), st(2, 8), st(2, 9)],
            ),
            true,
        ),
        args(
            Sample::new("[0,2,3] empty batch", vec![x(&[0, 2, 3], 10)]),
            true,
        )
        .edge(),
    ]
}

pub fn instance_norm_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("2-d input", vec![vals(&[2, 3], DType::F32, 149)])
            .arg("use_input_stats", Arg::Bool(true))
            .arg("momentum", Arg::Float(0.1))
            .arg("eps", Arg::Float(1e-5))
            .arg("cudnn_enabled", Arg::Bool(false)),
        ErrorKind::Shape,
        "expected an input with at least 3 dims",
    )]
}

pub fn rms_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] over [4] weight", vec![x(&[3, 4], 1), x(&[4], 2)])
            .arg("normalized_shape", ints(&[4])),
        Sample::new("[2,3,4] over [3,4] eps 0.01", vec![x(&[2, 3, 4], 3)])
            .arg("normalized_shape", ints(&[3, 4]))
            .arg("eps", Arg::Float(0.01)),
        Sample::new("[5] over [5]", vec![x(&[5], 4)]).arg("normalized_shape", ints(&[5])),
        Sample::new("[0,3] over [3]", vec![x(&[0, 3], 5)])
            .arg("normalized_shape", ints(&[3]))
            .edge(),
    ]
}

pub fn rms_norm_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("shape mismatch", vec![vals(&[2, 3], DType::F32, 150)])
            .arg("normalized_shape", ints(&[2])),
        ErrorKind::Shape,
        "Given normalized_shape=[2], expected input with shape [*, 2]",
    )]
}
