//! Samples for softmax, log_softmax and their backward ops.

use super::{err, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind};

// ---------------------------------------------------------------------------------------
// Softmax
// ---------------------------------------------------------------------------------------

/// The dims softmax is taken over, on values in [-2, 2).
fn softmax_cases(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 1)]).arg("dim", Arg::Int(1)),
        Sample::new("[3,4] dim 0", vec![x(&[3, 4], 2)]).arg("dim", Arg::Int(0)),
        Sample::new("[2,3,4] dim -1", vec![x(&[2, 3, 4], 3)]).arg("dim", Arg::Int(-1)),
        Sample::new("[2,3,4] dim 1", vec![x(&[2, 3, 4], 4)]).arg("dim", Arg::Int(1)),
        Sample::new("[7] dim 0", vec![x(&[7], 5)]).arg("dim", Arg::Int(0)),
        Sample::new("0-d dim 0", vec![x(&[], 6)])
            .arg("dim", Arg::Int(0))
            .edge(),
        Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 7)])
            .arg("dim", Arg::Int(1))
            .edge(),
        Sample::new("empty [0,3] dim 0", vec![x(&[0, 3], 8)])
            .arg("dim", Arg::Int(0))
            .edge(),
    ]
}

/// _softmax / _log_softmax(self, dim, half_to_float=false).
pub fn softmax_raw(dtype: DType) -> Vec<Sample> {
    softmax_cases(dtype)
        .into_iter()
        .map(|s| s.arg("half_to_float", Arg::Bool(false)))
        .collect()
}

pub fn softmax_raw_errors() -> Vec<ErrorSample> {
    let x = || vals(&[3, 4], DType::F32, 122);
    vec![
        err(
            Sample::new("dim 2 of a 2-d tensor", vec![x()])
                .arg("dim", Arg::Int(2))
                .arg("half_to_float", Arg::Bool(false)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
        err(
            Sample::new("half_to_float on CPU", vec![x()])
                .arg("dim", Arg::Int(1))
                .arg("half_to_float", Arg::Bool(true)),
            ErrorKind::DType,
            "with half to float conversion is not supported on CPU",
        ),
    ]
}

/// softmax / log_softmax(self, dim, dtype=None), plus one sample with dtype=float64.
pub fn softmax(dtype: DType) -> Vec<Sample> {
    let mut v = softmax_cases(dtype);
    v.push(
        Sample::new("[3,4] dim 1 dtype=float64", vec![vals(&[3, 4], dtype, 9)])
            .arg("dim", Arg::Int(1))
            .arg("dtype", Arg::OptDType(Some(DType::F64))),
    );
    v
}

pub fn softmax_errors() -> Vec<ErrorSample> {
    let x = || vals(&[3, 4], DType::F32, 123);
    vec![
        err(
            Sample::new("dim 2 of a 2-d tensor", vec![x()]).arg("dim", Arg::Int(2)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
        err(
            Sample::new("dtype=int64", vec![x()])
                .arg("dim", Arg::Int(1))
                .arg("dtype", Arg::OptDType(Some(DType::I64))),
            ErrorKind::DType,
            "not implemented for 'Long'",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Softmax backward
// ---------------------------------------------------------------------------------------

/// `_softmax_backward_data` / `_log_softmax_backward_data(grad_output, output, dim,
/// input_dtype)`: a random gradient and a softmax output along `dim`.
pub fn softmax_backward_data(dtype: DType) -> Vec<Sample> {
    let case = |desc: &str, shape: &[usize], dim: i64, seed| {
        let y = vals(shape, dtype, seed + 100)
            .softmax(dim)
            .expect("softmax of a sample");
        Sample::new(desc, vec![vals(shape, dtype, seed), y])
            .arg("dim", Arg::Int(dim))
            .arg("input_dtype", Arg::DType(dtype))
    };
    vec![
        case("[3,4] dim 1", &[3, 4], 1, 1),
        case("[3,4] dim 0", &[3, 4], 0, 2),
        case("[2,3,4] dim -1", &[2, 3, 4], -1, 3),
        case("[2,3,4] dim 1", &[2, 3, 4], 1, 4),
        case("[7] dim 0", &[7], 0, 5),
        case("0-d dim 0", &[], 0, 6).edge(),
        case("empty [0,3] dim 1", &[0, 3], 1, 7).edge(),
    ]
}

pub fn softmax_backward_data_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let args = |s: Sample, dim: i64, input_dtype: DType| {
        s.arg("dim", Arg::Int(dim))
            .arg("input_dtype", Arg::DType(input_dtype))
    };
    vec![
        err(
            args(
                Sample::new(
                    "shapes differ",
                    vec![vals(&[2, 3], f, 124), vals(&[3, 2], f, 125)],
                ),
                0,
                f,
            ),
            ErrorKind::Shape,
            "but [2, 3] does not equal [3, 2]",
        ),
        err(
            args(
                Sample::new(
                    "dim 2 of a 2-d tensor",
                    vec![vals(&[2, 3], f, 126), vals(&[2, 3], f, 127)],
                ),
                2,
                f,
            ),
            ErrorKind::Index,
            "Dimension out of range",
        ),
        err(
            args(
                Sample::new(
                    "input_dtype half",
                    vec![vals(&[2, 3], f, 128), vals(&[2, 3], f, 129)],
                ),
                1,
                DType::F16,
            ),
            ErrorKind::DType,
            "with half to float conversion is not supported",
        ),
    ]
}
