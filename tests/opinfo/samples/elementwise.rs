//! Samples for the elementwise composites of src/ops/elementwise.rs.

use super::{discrete, err, float, nonzero, positive, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

fn three(shapes: [&[usize]; 3], dtype: DType, seed: u64) -> Vec<Tensor> {
    vec![
        vals(shapes[0], dtype, seed),
        vals(shapes[1], dtype, seed + 1),
        vals(shapes[2], dtype, seed + 2),
    ]
}

pub fn lerp(dtype: DType) -> Vec<Sample> {
    let two = |a: &[usize], b: &[usize], seed| vec![vals(a, dtype, seed), vals(b, dtype, seed + 1)];
    vec![
        Sample::new("[3,4] w 0.25", two(&[3, 4], &[3, 4], 1)).arg("weight", float(0.25)),
        Sample::new("[2,3] w 0.75 broadcast [3]", two(&[2, 3], &[3], 3)).arg("weight", float(0.75)),
        Sample::new("[4] w 1.5", two(&[4], &[4], 5)).arg("weight", float(1.5)),
        Sample::new("[5] w 1 (exactly end)", two(&[5], &[5], 7)).arg("weight", float(1.0)),
        Sample::new("0-d w -0.5", two(&[], &[], 9))
            .arg("weight", float(-0.5))
            .edge(),
    ]
}

pub fn lerp_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "float32 with float64 end",
            vec![
                vals(&[3], DType::F32, 50),
                vals(&[3], DType::F64, 51),
                vals(&[3], DType::F32, 52),
            ],
        )
        .arg("weight", float(0.5)),
        ErrorKind::DType,
        "expected dtype float for `end` but got dtype double",
    )]
}

pub fn lerp_tensor(dtype: DType) -> Vec<Sample> {
    let w = |s: &[usize], seed| super::make(s, dtype, -0.4, 1.4, seed);
    let two = |a: &[usize], b: &[usize], seed| vec![vals(a, dtype, seed), vals(b, dtype, seed + 1)];
    let with = |mut v: Vec<Tensor>, t: Tensor| {
        v.push(t);
        v
    };
    vec![
        Sample::new(
            "[3,4] w [3,4]",
            with(two(&[3, 4], &[3, 4], 1), w(&[3, 4], 2)),
        ),
        Sample::new(
            "[2,3] end [3] w [2,3]",
            with(two(&[2, 3], &[3], 3), w(&[2, 3], 4)),
        ),
        Sample::new("[4] w 0-d", with(two(&[4], &[4], 5), w(&[], 6))),
        Sample::new("[0,2] w [2]", with(two(&[0, 2], &[2], 7), w(&[2], 8))).edge(),
    ]
}

pub fn lerp_tensor_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64", three([&[3], &[3], &[3]], DType::I64, 53)),
        ErrorKind::DType,
        "not implemented for 'Long'",
    )]
}

pub fn addc(dtype: DType) -> Vec<Sample> {
    // Divisors bounded away from zero, so addcdiv's gradcheck is well conditioned.
    let t = |s: &[usize], seed| vals(s, dtype, seed);
    let d = |s: &[usize], seed| nonzero(s, dtype, seed);
    let v = |x: f64| {
        if dtype.is_floating_point() {
            float(x)
        } else {
            super::int(x as i64)
        }
    };
    vec![
        Sample::new(
            "[3,4] value 1",
            vec![t(&[3, 4], 1), t(&[3, 4], 2), d(&[3, 4], 3)],
        ),
        Sample::new(
            "[2,3] [3] [2,3] value 2",
            vec![t(&[2, 3], 4), t(&[3], 5), d(&[2, 3], 6)],
        )
        .arg("value", v(2.0)),
        Sample::new(
            "[4] 0-d [4] value -1",
            vec![t(&[4], 7), t(&[], 8), d(&[4], 9)],
        )
        .arg("value", v(-1.0)),
        Sample::new(
            "[0,3] [3] [3]",
            vec![t(&[0, 3], 10), t(&[3], 11), d(&[3], 12)],
        )
        .edge(),
    ]
}

pub fn addc_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "int64 with float value",
            three([&[3], &[3], &[3]], DType::I64, 54),
        )
        .arg("value", float(0.5)),
        ErrorKind::DType,
        "For integral input tensors, argument alpha must not be a floating point number.",
    )]
}

pub fn addcdiv(dtype: DType) -> Vec<Sample> {
    addc(dtype)
}

pub fn addcdiv_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64 operands", three([&[3], &[3], &[3]], DType::I64, 59)),
        ErrorKind::DType,
        "Integer division with addcdiv is no longer supported",
    )]
}

pub fn xlogy(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| {
        discrete(
            s,
            dtype,
            -2,
            3,
            if dtype.is_floating_point() { 0.75 } else { 1.0 },
            seed,
        )
    };
    let y = |s: &[usize], seed| positive(s, dtype, seed);
    let mut v = vec![
        Sample::new(
            "[3,4] x [3,4]",
            vec![vals(&[3, 4], dtype, 1), y(&[3, 4], 2)],
        ),
        Sample::new("[2,3] x [3]", vec![vals(&[2, 3], dtype, 3), y(&[3], 4)]),
        Sample::new("[4] x 0-d", vec![vals(&[4], dtype, 5), y(&[], 6)]),
        Sample::new("[5] with zeros in x", vec![x(&[5], 7), y(&[5], 8)]),
        Sample::new("[0] x [0]", vec![x(&[0], 9), y(&[0], 10)]).edge(),
    ];
    if dtype.is_floating_point() {
        let special = Tensor::from(vec![0.0f64, 0.0, 1.0, 0.0])
            .to_dtype(dtype)
            .expect("cast");
        let ys = Tensor::from(vec![0.0f64, f64::NAN, 0.0, 2.0])
            .to_dtype(dtype)
            .expect("cast");
        v.push(Sample::new("x=0 with y in {0, nan}", vec![special, ys]));
    }
    v
}

pub fn xlogy_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn logit(dtype: DType) -> Vec<Sample> {
    let p = |s: &[usize], seed| super::make(s, dtype, 0.1, 0.9, seed);
    vec![
        Sample::new("[3,4]", vec![p(&[3, 4], 1)]),
        Sample::new("[2,3] eps 0.2", vec![p(&[2, 3], 2)]).arg("eps", Arg::Float(0.2)),
        Sample::new("[5]", vec![p(&[5], 3)]),
        Sample::new("[4] values beyond eps clamp", vec![vals(&[4], dtype, 4)])
            .arg("eps", Arg::Float(0.25)),
        Sample::new("0-d", vec![p(&[], 5)]).edge(),
        // eps > 0.5: lo = 0.7 > hi = 0.3; values away from both bounds.
        Sample::new(
            "[5] eps 0.7 (bounds cross)",
            vec![Tensor::from(vec![0.1f64, 0.2, 0.5, 0.8, 0.9])
                .to_dtype(dtype)
                .expect("cast")],
        )
        .arg("eps", Arg::Float(0.7)),
    ]
}

pub fn logit_errors() -> Vec<ErrorSample> {
    vec![]
}

/// Values away from the rounding ties of their scale (gradcheck's finite differences must
/// not cross one): `k + 0.3` steps of the scaled grid.
pub fn round_decimals(dtype: DType) -> Vec<Sample> {
    let grid = |shape: &[usize], step: f64, seed: u64| {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = super::uniform(n, seed)
            .iter()
            .map(|&r| ((r * 40.0).floor() - 20.0 + 0.3) * step)
            .collect();
        Tensor::from_vec(v, shape)
            .and_then(|t| t.to_dtype(dtype))
            .expect("round sample")
    };
    vec![
        Sample::new("[3,4] decimals 1", vec![grid(&[3, 4], 0.1, 1)]).arg("decimals", Arg::Int(1)),
        Sample::new("[2,3] decimals 2", vec![grid(&[2, 3], 0.01, 2)]).arg("decimals", Arg::Int(2)),
        Sample::new("[5] decimals -1", vec![grid(&[5], 10.0, 3)]).arg("decimals", Arg::Int(-1)),
        Sample::new("[4] decimals 0", vec![grid(&[4], 1.0, 4)]).arg("decimals", Arg::Int(0)),
        Sample::new("0-d decimals 3", vec![grid(&[], 0.001, 5)])
            .arg("decimals", Arg::Int(3))
            .edge(),
    ]
}

pub fn round_decimals_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64 with decimals", vec![Tensor::from(vec![15i64, 26])])
            .arg("decimals", Arg::Int(-1)),
        ErrorKind::DType,
        "\"round_cpu\" not implemented for 'Long'",
    )]
}

pub fn nan_to_num(dtype: DType) -> Vec<Sample> {
    let mut v = vec![
        Sample::new("[3,4] finite", vec![vals(&[3, 4], dtype, 1)]),
        Sample::new("[2,3] finite nan=1", vec![vals(&[2, 3], dtype, 2)])
            .arg("nan", Arg::Float(1.0)),
        Sample::new("[4] finite", vec![vals(&[4], dtype, 3)]),
        Sample::new("0-d", vec![vals(&[], dtype, 4)]).edge(),
    ];
    if dtype.is_floating_point() {
        let special = || {
            Tensor::from(vec![
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                1.5,
                -0.5,
                f64::NAN,
            ])
            .to_dtype(dtype)
            .expect("cast")
        };
        v.push(Sample::new("specials, defaults", vec![special()]));
        v.push(
            Sample::new("specials, nan 2 posinf 9 neginf -9", vec![special()])
                .arg("nan", Arg::Float(2.0))
                .arg("posinf", Arg::Float(9.0))
                .arg("neginf", Arg::Float(-9.0)),
        );
    }
    v
}

pub fn nan_to_num_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn sinc(dtype: DType) -> Vec<Sample> {
    let mut v = super::unary(dtype);
    if dtype.is_floating_point() {
        v.push(Sample::new(
            "with zeros",
            vec![Tensor::from(vec![0.0f64, 0.5, 0.0, -1.25])
                .to_dtype(dtype)
                .expect("cast")],
        ));
    }
    v
}

pub fn sinc_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn prelu(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| nonzero(s, dtype, seed);
    let w = |s: &[usize], seed| super::make(s, dtype, 0.1, 0.5, seed);
    vec![
        Sample::new(
            "[2,3,4] per-channel [3]",
            vec![x(&[2, 3, 4], 1), w(&[3], 2)],
        ),
        Sample::new("[3,4] one weight [1]", vec![x(&[3, 4], 3), w(&[1], 4)]),
        Sample::new("[5] one weight 0-d", vec![x(&[5], 5), w(&[], 6)]),
        Sample::new("[0,2] per-channel [2]", vec![x(&[0, 2], 7), w(&[2], 8)]).edge(),
    ]
}

pub fn prelu_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("3 weights for 4 channels", vec![vals(&[2, 4], DType::F32, 55), vals(&[3], DType::F32, 56)]),
        ErrorKind::Shape, "Mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and channel size = 4.",
    )]
}

/// Values at least 0.1 away from the shrink kinks at 0 and ±0.5 (and ±1 for lambd 1).
pub fn shrink(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| {
        // Quarters offset by 1/8: ±0.125, ±0.375, ±0.625, ... never on a kink.
        discrete(s, dtype, -8, 8, 0.25, seed)
            .add_scalar(0.125)
            .expect("shift")
    };
    vec![
        Sample::new("[3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("[2,3] lambd 1", vec![x(&[2, 3], 2)]).arg("lambd", float(1.0)),
        Sample::new("[5] lambd 0", vec![x(&[5], 3)]).arg("lambd", float(0.0)),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
    ]
}

pub fn shrink_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64", vec![vals(&[3], DType::I64, 57)]),
        ErrorKind::DType,
        "not implemented for 'Long'",
    )]
}

pub fn threshold(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::distinct(s, dtype, seed);
    let n = |v: f64| {
        if dtype.is_floating_point() {
            float(v)
        } else {
            super::int(v as i64)
        }
    };
    vec![
        Sample::new("[3,4] th 0.1 value -1", vec![x(&[3, 4], 1)])
            .arg("threshold", n(0.15))
            .arg("value", n(-1.0)),
        Sample::new("[2,3] th -0.5 value 2", vec![x(&[2, 3], 2)])
            .arg("threshold", n(-0.45))
            .arg("value", n(2.0)),
        Sample::new("[5] th 1 value 0", vec![x(&[5], 3)])
            .arg("threshold", n(1.05))
            .arg("value", n(0.0)),
        Sample::new("0-d", vec![x(&[], 4)])
            .arg("threshold", n(0.0))
            .arg("value", n(0.0))
            .edge(),
    ]
}

pub fn threshold_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn glu(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("[4,3] dim 0", vec![x(&[4, 3], 2)]).arg("dim", Arg::Int(0)),
        Sample::new("[2,6,2] dim 1", vec![x(&[2, 6, 2], 3)]).arg("dim", Arg::Int(1)),
        Sample::new("[0,2]", vec![x(&[0, 2], 4)]).edge(),
    ]
}

pub fn glu_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("odd size", vec![vals(&[2, 3], DType::F32, 58)]),
        ErrorKind::Shape,
        "Halving dimension must be even, but dimension 1 is size 3",
    )]
}

/// Integer (and bool) operands for bitwise ops and shifts: values in [-3, 4), so shift
/// counts include negative ones (PyTorch's out-of-range rule) and nothing overflows.
pub fn bitwise(dtype: DType) -> Vec<Sample> {
    super::binary_ties(dtype)
}

pub fn bitwise_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "float32 operands",
            vec![vals(&[3], DType::F32, 70), vals(&[3], DType::F32, 71)],
        ),
        ErrorKind::DType,
        "not implemented for 'Float'",
    )]
}

pub fn bitwise_unary(dtype: DType) -> Vec<Sample> {
    super::unary(dtype)
}

pub fn bitwise_unary_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("float32", vec![vals(&[3], DType::F32, 72)]),
        ErrorKind::DType,
        "not implemented for 'Float'",
    )]
}

/// Quotients with both signs (so trunc and floor differ), nonzero divisors.
pub fn div_mode(dtype: DType) -> Vec<Sample> {
    let a = |s: &[usize], seed| super::ranged(s, dtype, (-6.0, 6.0), (-9, 10), seed);
    let b = |s: &[usize], seed| nonzero(s, dtype, seed);
    let mode = |m: &'static str| Arg::Str(m);
    vec![
        Sample::new("[3,4] trunc", vec![a(&[3, 4], 1), b(&[3, 4], 2)])
            .arg("rounding_mode", mode("trunc")),
        Sample::new("[2,3] floor broadcast [3]", vec![a(&[2, 3], 3), b(&[3], 4)])
            .arg("rounding_mode", mode("floor")),
        Sample::new("[4] true division", vec![a(&[4], 5), b(&[4], 6)]),
        Sample::new("0-d floor", vec![a(&[], 7), b(&[], 8)])
            .arg("rounding_mode", mode("floor"))
            .edge(),
    ]
}

pub fn div_mode_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "mode round",
            vec![vals(&[3], DType::F32, 73), vals(&[3], DType::F32, 74)],
        )
        .arg("rounding_mode", Arg::Str("round")),
        ErrorKind::Value,
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
    )]
}
