//! Samples for pointwise binary ops (add, sub, mul, div, maximum, comparisons, pow) and the
//! pointwise ops taking a Scalar or a condition (add.Scalar ..., clamp, where, masked_fill).

use super::{
    err, float, int, make, mask, mismatched_pair, nonzero, quarters, ties, vals, BROADCAST_ERROR,
};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Scalar, Tensor};

// ---------------------------------------------------------------------------------------
// Pointwise binary: add, sub, mul, maximum, minimum (`binary`); div (`binary_nonzero`);
// comparisons (`binary_ties`); pow
// ---------------------------------------------------------------------------------------

/// Operands of binary arithmetic. For u8, `a` is in [6, 10) and `b` in [0, 3), so
/// `a - alpha * b` with alpha ≤ 2 never wraps.
fn binary_pair(sa: &[usize], sb: &[usize], dtype: DType, seed: u64) -> Vec<Tensor> {
    if dtype == DType::U8 {
        vec![
            make(sa, dtype, 6.0, 10.0, seed),
            make(sb, dtype, 0.0, 3.0, seed + 1),
        ]
    } else {
        vec![vals(sa, dtype, seed), vals(sb, dtype, seed + 1)]
    }
}

/// Makes a sample's operands from two shapes and a seed.
type PairFn<'a> = &'a dyn Fn(&[usize], &[usize], u64) -> Vec<Tensor>;

/// The common shape cases of a broadcasting binary op, with operands from `pair`.
fn binary_shapes(pair: PairFn<'_>) -> Vec<Sample> {
    vec![
        Sample::new("2-d [3,4] with [3,4]", pair(&[3, 4], &[3, 4], 1)),
        Sample::new("broadcast [3,4] with [4]", pair(&[3, 4], &[4], 2)),
        Sample::new(
            "mutual broadcast [2,1,3,2] with [1,3,3,2]",
            pair(&[2, 1, 3, 2], &[1, 3, 3, 2], 3),
        ),
        Sample::new("3-d [2,3,4] with [2,3,4]", pair(&[2, 3, 4], &[2, 3, 4], 4)),
        Sample::new("broadcast [4] with [2,3,4]", pair(&[4], &[2, 3, 4], 5)),
        Sample::new("0-d other: [3,4] with []", pair(&[3, 4], &[], 6)),
        Sample::new("1-d [5] with [5]", pair(&[5], &[5], 7)),
        Sample::new("0-d 0-d with []", pair(&[], &[], 8)).edge(),
        Sample::new("empty [0,3] with [3]", pair(&[0, 3], &[3], 9)).edge(),
        Sample::new("empty [0,3] with [0,3]", pair(&[0, 3], &[0, 3], 10)).edge(),
    ]
}

/// add/sub/mul/maximum/minimum: shape cases plus an `alpha` (ignored by ops without one).
pub fn binary(dtype: DType) -> Vec<Sample> {
    let mut v = binary_shapes(&|a, b, s| binary_pair(a, b, dtype, s));
    if dtype != DType::Bool {
        let alpha = if dtype.is_floating_point() {
            float(-1.5)
        } else {
            int(2)
        };
        v.push(
            Sample::new(
                "alpha with [3,4] and [3,4]",
                binary_pair(&[3, 4], &[3, 4], dtype, 11),
            )
            .arg("alpha", alpha),
        );
    }
    v
}

pub fn binary_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "shapes [2,3] and [2,4] do not broadcast",
            mismatched_pair(DType::F32),
        ),
        ErrorKind::Shape,
        BROADCAST_ERROR,
    )]
}

/// Comparisons: operands drawn from a small set so equal elements occur.
pub fn binary_ties(dtype: DType) -> Vec<Sample> {
    let mut v = binary_shapes(&|a, b, s| vec![ties(a, dtype, s), ties(b, dtype, s + 1)]);
    v.push(Sample::new(
        "identical operands [3,4]",
        vec![ties(&[3, 4], dtype, 12), ties(&[3, 4], dtype, 12)],
    ));
    v
}

pub fn binary_ties_errors() -> Vec<ErrorSample> {
    binary_errors()
}

/// div: the divisor is bounded away from zero (positive for u8).
pub fn binary_nonzero(dtype: DType) -> Vec<Sample> {
    binary_shapes(&|a, b, s| vec![vals(a, dtype, s), nonzero(b, dtype, s + 1)])
}

pub fn binary_nonzero_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "shapes [2,3] and [2,4] do not broadcast",
            vec![
                vals(&[2, 3], DType::F32, 92),
                nonzero(&[2, 4], DType::F32, 93),
            ],
        ),
        ErrorKind::Shape,
        BROADCAST_ERROR,
    )]
}

/// pow(Tensor, Tensor): positive bases in [0.5, 2) and exponents in [-2, 2) for floats;
/// bases in [0, 4) and exponents in [0, 3) for integers.
pub fn pow(dtype: DType) -> Vec<Sample> {
    let pair = |a: &[usize], b: &[usize], s: u64| {
        if dtype.is_floating_point() {
            vec![
                make(a, dtype, 0.5, 2.0, s),
                make(b, dtype, -2.0, 2.0, s + 1),
            ]
        } else {
            vec![make(a, dtype, 0.0, 4.0, s), make(b, dtype, 0.0, 3.0, s + 1)]
        }
    };
    binary_shapes(&pair)
}

pub fn pow_errors() -> Vec<ErrorSample> {
    let pair = vec![
        make(&[2, 3], DType::F32, 0.5, 2.0, 94),
        make(&[2, 4], DType::F32, 0.5, 2.0, 95),
    ];
    vec![
        err(
            Sample::new("shapes [2,3] and [2,4] do not broadcast", pair),
            ErrorKind::Shape,
            BROADCAST_ERROR,
        ),
        err(
            Sample::new("bool ** bool", vec![mask(&[3], 96), mask(&[3], 97)]),
            ErrorKind::DType,
            "\"pow\" not implemented for 'Bool'",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Pointwise with a Scalar: add/sub/mul/eq/le/gt/ge.Scalar (`unary_scalar`), div.Scalar
// (`unary_scalar_nonzero`), pow.Tensor_Scalar (`pow_scalar`), clamp, masked_fill
// ---------------------------------------------------------------------------------------

/// Tensor op Scalar: float scalars with float tensors, int scalars with integer tensors, an
/// int scalar with a float tensor and a float scalar with an integer tensor (promotes), a
/// scalar equal to some elements (comparisons), and an `alpha` (add/sub only). u8 tensors
/// are in [6, 10) and u8 scalars non-negative, so `self - alpha * other` never wraps. Bool
/// tensors never meet `True` (the `a + alpha * b` reference cannot express logical or).
pub fn unary_scalar(dtype: DType) -> Vec<Sample> {
    let x = |shape: &[usize], seed: u64| {
        if dtype == DType::U8 {
            make(shape, dtype, 6.0, 10.0, seed)
        } else {
            vals(shape, dtype, seed)
        }
    };
    let fl = dtype.is_floating_point();
    let (s1, s2) = match dtype {
        d if d.is_floating_point() => (float(1.5), float(-0.75)),
        DType::Bool => (int(2), Arg::Scalar(Scalar::Bool(false))),
        DType::U8 => (int(2), int(1)),
        _ => (int(2), int(-3)),
    };
    let tie = match dtype {
        d if d.is_floating_point() => float(0.5),
        DType::U8 => int(0),
        _ => int(1),
    };
    let mut v = vec![
        Sample::new("2-d [3,4]", vec![x(&[3, 4], 1)]).arg("other", s1.clone()),
        Sample::new("3-d [2,3,4]", vec![x(&[2, 3, 4], 2)]).arg("other", s2),
        Sample::new(
            "1-d [6] with elements equal to the scalar",
            vec![ties(&[6], dtype, 3)],
        )
        .arg("other", tie),
        if fl {
            Sample::new("int scalar with a float tensor", vec![x(&[3, 4], 4)]).arg("other", int(2))
        } else {
            Sample::new(
                "float scalar with an integer tensor (promotes to float)",
                vec![x(&[3, 4], 4)],
            )
            .arg("other", float(0.5))
        },
        Sample::new("0-d", vec![x(&[], 6)])
            .arg("other", s1.clone())
            .edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 7)])
            .arg("other", s1.clone())
            .edge(),
    ];
    if dtype != DType::Bool {
        let alpha = if fl { float(-0.5) } else { int(2) };
        v.push(
            Sample::new("alpha", vec![x(&[3, 4], 5)])
                .arg("other", s1)
                .arg("alpha", alpha),
        );
    }
    v
}

/// add/sub/mul/eq/le/gt/ge.Scalar accept every tensor and scalar: nothing to reject.
pub fn unary_scalar_errors() -> Vec<ErrorSample> {
    vec![]
}

/// div.Scalar: divisors bounded away from zero.
pub fn unary_scalar_nonzero(dtype: DType) -> Vec<Sample> {
    let fl = dtype.is_floating_point();
    let (s1, s2, s3) = if fl {
        (float(2.5), float(-0.5), int(3))
    } else {
        (int(2), int(-3), float(0.5))
    };
    vec![
        Sample::new("2-d [3,4]", vec![vals(&[3, 4], dtype, 1)]).arg("other", s1.clone()),
        Sample::new("3-d [2,3,4]", vec![vals(&[2, 3, 4], dtype, 2)]).arg("other", s2),
        Sample::new(
            if fl {
                "int scalar with a float tensor"
            } else {
                "float scalar with an integer tensor"
            },
            vec![vals(&[5], dtype, 3)],
        )
        .arg("other", s3),
        Sample::new("0-d", vec![vals(&[], dtype, 4)])
            .arg("other", s1.clone())
            .edge(),
        Sample::new("empty [0,3]", vec![vals(&[0, 3], dtype, 5)])
            .arg("other", s1)
            .edge(),
    ]
}

/// div.Scalar promotes every input to float and accepts every divisor: nothing to reject.
pub fn unary_scalar_nonzero_errors() -> Vec<ErrorSample> {
    vec![]
}

/// pow(Tensor, Scalar): bases as for `pow`; float, negative and int exponents for float
/// tensors, small int exponents (and 0.5, which promotes) for integer tensors.
pub fn pow_scalar(dtype: DType) -> Vec<Sample> {
    let fl = dtype.is_floating_point();
    let x = |shape: &[usize], seed: u64| {
        if fl {
            make(shape, dtype, 0.5, 2.0, seed)
        } else {
            make(shape, dtype, 0.0, 4.0, seed)
        }
    };
    let exps = if fl {
        vec![float(2.5), float(-1.5), int(2), int(-1), float(0.5)]
    } else {
        vec![int(2), int(3), int(0), float(0.5), int(1)]
    };
    let shapes: [&[usize]; 5] = [&[3, 4], &[2, 3, 4], &[5], &[3, 4], &[2, 3]];
    let mut v: Vec<Sample> = exps
        .into_iter()
        .zip(shapes)
        .enumerate()
        .map(|(i, (e, sh))| {
            Sample::new(format!("{sh:?} ** {e:?}"), vec![x(sh, i as u64 + 1)]).arg("exponent", e)
        })
        .collect();
    v.push(
        Sample::new("0-d", vec![x(&[], 10)])
            .arg("exponent", int(2))
            .edge(),
    );
    v.push(
        Sample::new("empty [0,3]", vec![x(&[0, 3], 11)])
            .arg("exponent", if fl { float(1.5) } else { int(2) })
            .edge(),
    );
    v
}

pub fn pow_scalar_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("bool tensor ** True", vec![mask(&[3], 98)])
            .arg("exponent", Arg::Scalar(Scalar::Bool(true))),
        ErrorKind::DType,
        "\"pow\" not implemented for 'Bool'",
    )]
}

/// clamp: min only, max only, both (min < max); bounds are exact in every dtype and never
/// equal to a float input, so the gradient is defined everywhere.
pub fn clamp(dtype: DType) -> Vec<Sample> {
    let some = |a: Arg| match a {
        Arg::Scalar(s) => Arg::OptScalar(Some(s)),
        other => other,
    };
    let (lo, hi, lo2, hi2) = match dtype {
        d if d.is_floating_point() => (float(-0.5), float(0.75), float(-1.0), float(1.25)),
        DType::U8 => (int(1), int(3), int(2), int(4)),
        _ => (int(-1), int(2), int(0), int(3)),
    };
    let x = |shape: &[usize], seed: u64| vals(shape, dtype, seed);
    let mut v = vec![
        Sample::new("min only", vec![x(&[3, 4], 1)]).arg("min", some(lo.clone())),
        Sample::new("max only", vec![x(&[3, 4], 2)]).arg("max", some(hi.clone())),
        Sample::new("min and max", vec![x(&[2, 3, 4], 3)])
            .arg("min", some(lo.clone()))
            .arg("max", some(hi.clone())),
        Sample::new("min and max, 1-d", vec![x(&[7], 4)])
            .arg("min", some(lo2))
            .arg("max", some(hi2)),
        Sample::new("0-d, min only", vec![x(&[], 6)])
            .arg("min", some(lo.clone()))
            .edge(),
        Sample::new("empty [0,3], min and max", vec![x(&[0, 3], 7)])
            .arg("min", some(lo))
            .arg("max", some(hi))
            .edge(),
    ];
    if dtype.is_floating_point() {
        v.push(
            Sample::new("int bounds with a float tensor", vec![x(&[3, 4], 5)])
                .arg("min", some(int(-1)))
                .arg("max", some(int(1))),
        );
    } else {
        v.push(
            Sample::new(
                "float bounds with an integer tensor (promotes)",
                vec![x(&[3, 4], 5)],
            )
            .arg("min", some(float(0.5)))
            .arg("max", some(float(2.5))),
        );
    }
    v
}

pub fn clamp_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("neither min nor max", vec![vals(&[3], DType::F32, 99)]),
            ErrorKind::Value,
            "At least one of 'min' or 'max' must not be None",
        ),
        err(
            Sample::new("bool tensor with bool bounds", vec![mask(&[3], 100)])
                .arg("min", Arg::OptScalar(Some(Scalar::Bool(false))))
                .arg("max", Arg::OptScalar(Some(Scalar::Bool(true)))),
            ErrorKind::DType,
            "\"clamp\" not implemented for 'Bool'",
        ),
    ]
}

/// where(condition, self, other): a bool condition (tensors[0]) and values, all broadcast.
pub fn where_cond(dtype: DType) -> Vec<Sample> {
    let t = |c: &[usize], a: &[usize], b: &[usize], s: u64| {
        vec![mask(c, s), vals(a, dtype, s + 1), vals(b, dtype, s + 2)]
    };
    vec![
        Sample::new("all [3,4]", t(&[3, 4], &[3, 4], &[3, 4], 1)),
        Sample::new(
            "self [4] broadcast to the condition [3,4]",
            t(&[3, 4], &[4], &[3, 4], 4),
        ),
        Sample::new(
            "mutual broadcast",
            t(&[1, 3, 3, 2], &[2, 1, 3, 2], &[3, 2], 7),
        ),
        Sample::new("3-d", t(&[2, 3, 4], &[2, 3, 4], &[2, 3, 4], 10)),
        Sample::new("condition [4], other 0-d", t(&[4], &[3, 4], &[], 13)),
        Sample::new("all 0-d", t(&[], &[], &[], 16)).edge(),
        Sample::new("empty [0,3]", t(&[0, 3], &[3], &[0, 3], 19)).edge(),
    ]
}

pub fn where_cond_errors() -> Vec<ErrorSample> {
    let f = |s: &[usize], seed| vals(s, DType::F32, seed);
    vec![
        err(
            Sample::new(
                "uint8 condition",
                vec![
                    make(&[3], DType::U8, 0.0, 2.0, 101),
                    f(&[3], 102),
                    f(&[3], 103),
                ],
            ),
            ErrorKind::DType,
            "expected condition to have dtype torch.bool, but got torch.uint8",
        ),
        err(
            Sample::new(
                "shapes do not broadcast",
                vec![mask(&[2, 3], 104), f(&[2, 3], 105), f(&[2, 4], 106)],
            ),
            ErrorKind::Shape,
            BROADCAST_ERROR,
        ),
    ]
}

/// masked_fill(self, mask, value): a bool mask broadcastable to self; the value is a float
/// for float tensors (plus an int value once), an int for integers, `True` for bool.
/// `threshold_backward`: `self` on a grid of quarters, so some elements sit exactly on the
/// threshold (their gradient is dropped).
pub fn threshold_backward(dtype: DType) -> Vec<Sample> {
    let t = |g: &[usize], x: &[usize], s: u64| vec![vals(g, dtype, s), quarters(x, dtype, s + 1)];
    let at = |v: f64| {
        if dtype.is_floating_point() {
            float(v)
        } else {
            int(v as i64)
        }
    };
    vec![
        Sample::new("[3,4] threshold 0", t(&[3, 4], &[3, 4], 1)).arg("threshold", at(0.0)),
        Sample::new("[2,3,4] threshold 0.5", t(&[2, 3, 4], &[2, 3, 4], 3))
            .arg("threshold", at(0.5)),
        Sample::new("self [4] broadcast to [3,4]", t(&[3, 4], &[4], 5)).arg("threshold", at(-1.0)),
        Sample::new("0-d", t(&[], &[], 7))
            .arg("threshold", at(0.0))
            .edge(),
        Sample::new("empty [0,3]", t(&[0, 3], &[0, 3], 9))
            .arg("threshold", at(0.0))
            .edge(),
    ]
}

pub fn threshold_backward_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("shapes do not broadcast", mismatched_pair(DType::F32))
                .arg("threshold", float(0.0)),
            ErrorKind::Shape,
            BROADCAST_ERROR,
        ),
        err(
            Sample::new(
                "bool",
                vec![
                    make(&[3], DType::Bool, 0.0, 2.0, 120),
                    make(&[3], DType::Bool, 0.0, 2.0, 121),
                ],
            )
            .arg("threshold", Arg::Scalar(Scalar::Bool(false))),
            ErrorKind::DType,
            "\"threshold_backward\" not implemented for 'Bool'",
        ),
    ]
}

pub fn masked_fill(dtype: DType) -> Vec<Sample> {
    let value = match dtype {
        d if d.is_floating_point() => float(-1.5),
        DType::Bool => Arg::Scalar(Scalar::Bool(true)),
        DType::U8 => int(7),
        _ => int(-3),
    };
    let t = |a: &[usize], m: &[usize], s: u64| vec![vals(a, dtype, s), mask(m, s + 1)];
    let mut v = vec![
        Sample::new("mask [3,4]", t(&[3, 4], &[3, 4], 1)).arg("value", value.clone()),
        Sample::new("mask [4] broadcast to [3,4]", t(&[3, 4], &[4], 3)).arg("value", value.clone()),
        Sample::new(
            "mask [1,3,4] broadcast to [2,3,4]",
            t(&[2, 3, 4], &[1, 3, 4], 5),
        )
        .arg("value", value.clone()),
        Sample::new("0-d mask", t(&[3, 4], &[], 7)).arg("value", value.clone()),
        Sample::new("0-d", t(&[], &[], 9))
            .arg("value", value.clone())
            .edge(),
        Sample::new("empty [0,3] with mask [3]", t(&[0, 3], &[3], 11))
            .arg("value", value)
            .edge(),
    ];
    if dtype.is_floating_point() {
        v.push(
            Sample::new("int value into a float tensor", t(&[3, 4], &[3, 4], 13))
                .arg("value", int(2)),
        );
    }
    v
}

pub fn masked_fill_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new(
                "uint8 mask",
                vec![
                    vals(&[3], DType::F32, 107),
                    make(&[3], DType::U8, 0.0, 2.0, 108),
                ],
            )
            .arg("value", float(1.0)),
            ErrorKind::DType,
            "expected mask to have dtype torch.bool, but got torch.uint8",
        ),
        err(
            Sample::new(
                "mask does not broadcast",
                vec![vals(&[2, 3], DType::F32, 109), mask(&[2, 4], 110)],
            )
            .arg("value", float(1.0)),
            ErrorKind::Shape,
            BROADCAST_ERROR,
        ),
    ]
}
