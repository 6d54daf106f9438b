//! Samples for pointwise unary ops and activations.

use super::{
    binary_nonzero, binary_nonzero_errors, err, float, from_f64, make, mask, nonzero, positive,
    ranged, uniform, vals,
};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

// ---------------------------------------------------------------------------------------
// Pointwise unary: `unary` (neg, exp, sin, cos, tanh, sigmoid, erf, silu, sign, clone,
// contiguous), `unary_nonzero` (abs, relu), `unary_positive` (log, log1p, sqrt, rsqrt), gelu
// ---------------------------------------------------------------------------------------

/// The shape cases of a unary op, with values from `x`.
fn unary_shapes(x: &dyn Fn(&[usize], u64) -> Tensor) -> Vec<Sample> {
    vec![
        Sample::new("2-d [3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("3-d [2,3,4]", vec![x(&[2, 3, 4], 2)]),
        Sample::new("1-d [7]", vec![x(&[7], 3)]),
        // A transpose of its last two dims is contiguous again: the non-contiguous check
        // needs the strided layout here (it once failed without naming the sample).
        Sample::new("column [5,1]", vec![x(&[5, 1], 6)]),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 5)]).edge(),
    ]
}

/// Values in [-2, 2) (integers in [-4, 5), [0, 5) for u8; random bools).
pub fn unary(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| vals(s, dtype, seed))
}

/// `unary` serves clone, contiguous and float functions that promote every dtype: nothing
/// to reject.
pub fn unary_errors() -> Vec<ErrorSample> {
    vec![]
}

/// |x| in [0.5, 2) with random signs: away from the kinks of abs and relu.
pub fn unary_nonzero(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| nonzero(s, dtype, seed))
}

/// square: `unary_nonzero`'s values; bool is accepted (it squares in int64).
pub fn square(dtype: DType) -> Vec<Sample> {
    unary_nonzero(dtype)
}

pub fn square_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn unary_nonzero_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("bool input", vec![mask(&[3], 111)]),
        ErrorKind::DType,
        "not implemented for 'Bool'",
    )]
}

/// Strictly positive values, inside the domain of log and sqrt.
pub fn unary_positive(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| positive(s, dtype, seed))
}

/// log/log1p/sqrt/rsqrt promote every dtype to float and accept any value: nothing to reject.
pub fn unary_positive_errors() -> Vec<ErrorSample> {
    vec![]
}

/// Values in (-0.9, 0.9), inside the domains of asin, acos and atanh and away from tan's
/// poles; integers are 0 (the one integer inside every such domain).
pub fn unary_unit(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| ranged(s, dtype, (-0.9, 0.9), (0, 1), seed))
}

/// asin, acos, atan, tan, atanh promote every dtype to float: nothing to reject.
pub fn unary_unit_errors() -> Vec<ErrorSample> {
    vec![]
}

/// Values in [1.25, 3) (integers in [2, 5)), inside acosh's domain and away from its kink.
pub fn unary_above_one(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| ranged(s, dtype, (1.25, 3.0), (2, 5), seed))
}

pub fn unary_above_one_errors() -> Vec<ErrorSample> {
    vec![]
}

/// General values for ops that compute only in floating dtypes and keep the input's dtype
/// (frac): integers are rejected.
pub fn unary_floating(dtype: DType) -> Vec<Sample> {
    unary(dtype)
}

pub fn unary_floating_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64 input", vec![vals(&[3], DType::I64, 112)]),
        ErrorKind::DType,
        "not implemented for 'Long'",
    )]
}

/// Floats with NaN, ±inf, ±0 and finite values mixed in (the classification ops); other
/// dtypes get general values.
pub fn unary_special(dtype: DType) -> Vec<Sample> {
    if !dtype.is_floating_point() {
        return unary(dtype);
    }
    let special = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1.5,
        -2.25,
    ];
    let x = |shape: &[usize], seed: u64| {
        let n: usize = shape.iter().product();
        let u = uniform(n, seed);
        let v: Vec<f64> = u
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                if i % 2 == 0 {
                    special[(r * 7.0) as usize % 7]
                } else {
                    4.0 * r - 2.0
                }
            })
            .collect();
        from_f64(&v, shape, dtype)
    };
    unary_shapes(&x)
}

/// isnan/isinf/isfinite/logical_not take every dtype: nothing to reject.
pub fn unary_special_errors() -> Vec<ErrorSample> {
    vec![]
}

/// Binary ops that compute only in floating dtypes and keep them (hypot, logaddexp):
/// general values, the second bounded away from zero; integers are rejected.
pub fn binary_floating(dtype: DType) -> Vec<Sample> {
    binary_nonzero(dtype)
}

pub fn binary_floating_errors() -> Vec<ErrorSample> {
    let mut v = binary_nonzero_errors();
    v.push(err(
        Sample::new(
            "int64 operands",
            vec![vals(&[3], DType::I64, 94), vals(&[3], DType::I64, 95)],
        ),
        ErrorKind::DType,
        "not implemented for 'Long'",
    ));
    v
}

/// Activations: floats in [-4, 4), across every piece of the piecewise ones (hardsigmoid's
/// and hardswish's ±3 included); integers are rejected.
pub fn activation(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| make(s, dtype, -4.0, 4.0, seed))
}

pub fn activation_errors() -> Vec<ErrorSample> {
    unary_floating_errors()
}

/// `activation` plus one sample with non-default arguments.
fn activation_with(dtype: DType, args: &[(&'static str, f64)]) -> Vec<Sample> {
    let mut v = activation(dtype);
    let mut s = Sample::new(
        "non-default arguments",
        vec![make(&[3, 4], dtype, -4.0, 4.0, 13)],
    );
    for &(name, value) in args {
        s = s.arg(name, float(value));
    }
    v.push(s);
    v
}

pub fn leaky_relu(dtype: DType) -> Vec<Sample> {
    activation_with(dtype, &[("negative_slope", 0.2)])
}

pub fn leaky_relu_errors() -> Vec<ErrorSample> {
    activation_errors()
}

/// hardtanh; integer dtypes get integer bounds (the kernel converts them to the integer type,
/// which the float64 reference does not) and, for uint8, none below 0.
pub fn hardtanh(dtype: DType) -> Vec<Sample> {
    if dtype == DType::U8 {
        let mut v = vec![Sample::new(
            "[3,4] bounds 1, 3",
            vec![make(&[3, 4], dtype, 0.0, 6.0, 13)],
        )
        .arg("min_val", float(1.0))
        .arg("max_val", float(3.0))];
        v.push(
            Sample::new("[5] relu6 bounds", vec![make(&[5], dtype, 0.0, 9.0, 14)])
                .arg("min_val", float(0.0))
                .arg("max_val", float(6.0)),
        );
        for (name, shape) in [("0-d", &[][..]), ("[0]", &[0][..])] {
            v.push(
                Sample::new(name, vec![make(shape, dtype, 0.0, 6.0, 15)])
                    .arg("min_val", float(1.0))
                    .arg("max_val", float(3.0))
                    .edge(),
            );
        }
        return v;
    }
    if !dtype.is_floating_point() {
        return activation_with(dtype, &[("min_val", -2.0), ("max_val", 3.0)]);
    }
    activation_with(dtype, &[("min_val", -0.5), ("max_val", 1.5)])
}

pub fn hardtanh_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("bool input", vec![vals(&[3], DType::Bool, 112)]),
            ErrorKind::DType,
            "Bool inputs not supported for hardtanh",
        ),
        err(
            Sample::new("min_val > max_val", vec![vals(&[3], DType::F32, 113)])
                .arg("min_val", float(2.0))
                .arg("max_val", float(1.0)),
            ErrorKind::Value,
            "min_val cannot be greater than max_val",
        ),
    ]
}

/// relu6: `activation`'s values; integers too.
pub fn relu6(dtype: DType) -> Vec<Sample> {
    activation(dtype)
}

pub fn relu6_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("bool input", vec![vals(&[3], DType::Bool, 114)]),
        ErrorKind::DType,
        "Bool inputs not supported for hardtanh",
    )]
}

pub fn elu(dtype: DType) -> Vec<Sample> {
    activation_with(
        dtype,
        &[("alpha", 0.5), ("scale", 1.5), ("input_scale", 2.0)],
    )
}

pub fn elu_errors() -> Vec<ErrorSample> {
    activation_errors()
}

/// softplus; the extra sample's threshold (1) falls inside the values, so both branches run.
pub fn softplus(dtype: DType) -> Vec<Sample> {
    activation_with(dtype, &[("beta", 2.0), ("threshold", 1.0)])
}

pub fn softplus_errors() -> Vec<ErrorSample> {
    activation_errors()
}

pub fn celu(dtype: DType) -> Vec<Sample> {
    activation_with(dtype, &[("alpha", 0.5)])
}

pub fn celu_errors() -> Vec<ErrorSample> {
    let mut v = activation_errors();
    v.push(err(
        Sample::new("alpha = 0", vec![make(&[3], DType::F32, -1.0, 1.0, 14)])
            .arg("alpha", float(0.0)),
        ErrorKind::Value,
        "ZeroDivisionError",
    ));
    v
}

/// gelu, exact and tanh-approximated, on [-3, 3).
pub fn gelu(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| make(s, dtype, -3.0, 3.0, seed);
    vec![
        Sample::new("2-d, approximate='none'", vec![x(&[3, 4], 1)])
            .arg("approximate", Arg::Str("none")),
        Sample::new("2-d, approximate='tanh'", vec![x(&[3, 4], 2)])
            .arg("approximate", Arg::Str("tanh")),
        Sample::new("3-d, default approximate", vec![x(&[2, 3, 4], 3)]),
        Sample::new("1-d, approximate='tanh'", vec![x(&[7], 4)])
            .arg("approximate", Arg::Str("tanh")),
        Sample::new("0-d, approximate='tanh'", vec![x(&[], 5)])
            .arg("approximate", Arg::Str("tanh"))
            .edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 6)]).edge(),
    ]
}

pub fn gelu_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("approximate='fast'", vec![vals(&[3], DType::F32, 112)])
                .arg("approximate", Arg::Str("fast")),
            ErrorKind::Value,
            "approximate argument must be either none or tanh, got 'fast'",
        ),
        err(
            Sample::new("int64 input", vec![vals(&[3], DType::I64, 113)]),
            ErrorKind::DType,
            "\"gelu\" not implemented for 'Long'",
        ),
    ]
}
