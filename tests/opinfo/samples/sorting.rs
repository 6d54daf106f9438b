//! Samples for scans (cumsum ...), sort and the order statistics built on it, and prod.

use super::{distinct, err, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

fn dim_cases(x: &dyn Fn(&[usize], u64) -> Tensor) -> Vec<Sample> {
    vec![
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 1)]).arg("dim", Arg::Int(1)),
        Sample::new("[4,3] dim 0", vec![x(&[4, 3], 2)]).arg("dim", Arg::Int(0)),
        Sample::new("[2,3,4] dim -2", vec![x(&[2, 3, 4], 3)]).arg("dim", Arg::Int(-2)),
        Sample::new("[5] dim 0", vec![x(&[5], 4)]).arg("dim", Arg::Int(0)),
        Sample::new("0-d dim 0", vec![x(&[], 5)])
            .arg("dim", Arg::Int(0))
            .edge(),
        Sample::new("[0,3] dim 0", vec![x(&[0, 3], 6)])
            .arg("dim", Arg::Int(0))
            .edge(),
    ]
}

fn dim_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("dim 2 of 2-d", vec![vals(&[2, 3], DType::F32, 80)]).arg("dim", Arg::Int(2)),
        ErrorKind::Index,
        "Dimension out of range",
    )]
}

pub fn scan(dtype: DType) -> Vec<Sample> {
    let mut v = dim_cases(&|s, seed| vals(s, dtype, seed));
    if dtype == DType::F32 {
        v.push(
            Sample::new("[3,2] dim 0 dtype=float64", vec![vals(&[3, 2], dtype, 7)])
                .arg("dim", Arg::Int(0))
                .arg("dtype", Arg::OptDType(Some(DType::F64))),
        );
    }
    v
}

pub fn scan_errors() -> Vec<ErrorSample> {
    dim_errors()
}

/// Factors near 1 in size (so products stay small), with exact zeros for the zero-safe
/// backward in one regular sample.
pub fn scan_product(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::nonzero(s, dtype, seed);
    let mut v = dim_cases(&x);
    let z = Tensor::from(vec![1.5f64, 0.0, -2.0, 0.5, 0.0, 1.25, 0.75, -1.0])
        .reshape([2, 4])
        .expect("shape")
        .to_dtype(dtype)
        .expect("cast");
    v.insert(
        1,
        Sample::new("[2,4] with zeros dim 1", vec![z]).arg("dim", Arg::Int(1)),
    );
    v
}

pub fn scan_product_errors() -> Vec<ErrorSample> {
    dim_errors()
}

/// Distinct values, so every running extreme has one source index.
pub fn scan_distinct(dtype: DType) -> Vec<Sample> {
    let mut v = dim_cases(&|s, seed| distinct(s, dtype, seed));
    if dtype.is_floating_point() {
        let t = Tensor::from(vec![1.0f64, f64::NAN, 3.0, 0.5, 2.0, 2.0])
            .to_dtype(dtype)
            .expect("cast");
        v.push(Sample::new("[6] with NaN and ties", vec![t]).arg("dim", Arg::Int(0)));
    }
    v
}

pub fn scan_distinct_errors() -> Vec<ErrorSample> {
    dim_errors()
}

pub fn sort(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    let mut v = vec![
        Sample::new("[3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("[4,3] dim 0 descending", vec![x(&[4, 3], 2)])
            .arg("dim", Arg::Int(0))
            .arg("descending", Arg::Bool(true)),
        Sample::new("[2,3,4] dim 1", vec![x(&[2, 3, 4], 3)]).arg("dim", Arg::Int(1)),
        Sample::new("[6] with ties (stable)", vec![super::ties(&[6], dtype, 4)]),
        Sample::new("0-d", vec![x(&[], 5)]).edge(),
        Sample::new("[0,3]", vec![x(&[0, 3], 6)]).edge(),
    ];
    if dtype.is_floating_point() {
        let t = Tensor::from(vec![1.0f64, f64::NAN, -3.0, 0.5])
            .to_dtype(dtype)
            .expect("cast");
        v.push(Sample::new("[4] with NaN descending", vec![t]).arg("descending", Arg::Bool(true)));
    }
    v
}

pub fn sort_errors() -> Vec<ErrorSample> {
    dim_errors()
}

pub fn msort(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("[4,3]", vec![x(&[4, 3], 1)]),
        Sample::new("[5]", vec![x(&[5], 2)]),
        Sample::new("[3,2,2]", vec![x(&[3, 2, 2], 3)]),
        Sample::new("[0,2]", vec![x(&[0, 2], 4)]).edge(),
    ]
}

pub fn msort_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn topk(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("[3,5] k 2", vec![x(&[3, 5], 1)]).arg("k", Arg::Int(2)),
        Sample::new("[4,3] k 3 dim 0 smallest", vec![x(&[4, 3], 2)])
            .arg("k", Arg::Int(3))
            .arg("dim", Arg::Int(0))
            .arg("largest", Arg::Bool(false)),
        Sample::new("[2,3,4] k 1 dim 1", vec![x(&[2, 3, 4], 3)])
            .arg("k", Arg::Int(1))
            .arg("dim", Arg::Int(1)),
        Sample::new("[4] k 0", vec![x(&[4], 4)])
            .arg("k", Arg::Int(0))
            .edge(),
    ]
}

pub fn topk_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("k 4 of 3", vec![vals(&[3], DType::F32, 82)]).arg("k", Arg::Int(4)),
        ErrorKind::Value,
        "selected index k out of range",
    )]
}

pub fn kthvalue(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("[3,5] k 2", vec![x(&[3, 5], 1)]).arg("k", Arg::Int(2)),
        Sample::new("[4,3] k 4 dim 0 keepdim", vec![x(&[4, 3], 2)])
            .arg("k", Arg::Int(4))
            .arg("dim", Arg::Int(0))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,3,4] k 1 dim 1", vec![x(&[2, 3, 4], 3)])
            .arg("k", Arg::Int(1))
            .arg("dim", Arg::Int(1)),
        Sample::new("0-d k 1", vec![x(&[], 4)])
            .arg("k", Arg::Int(1))
            .edge(),
    ]
}

pub fn kthvalue_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("k 0", vec![vals(&[3], DType::F32, 83)]).arg("k", Arg::Int(0)),
        ErrorKind::Value,
        "kthvalue(): selected number k out of range for dimension -1",
    )]
}

pub fn median(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("[3,4] (even count: lower median)", vec![x(&[3, 4], 1)]),
        Sample::new("[5]", vec![x(&[5], 2)]),
        Sample::new("[3,3]", vec![x(&[3, 3], 3)]),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
    ]
}

pub fn median_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("empty", vec![vals(&[0], DType::F32, 84)]),
        ErrorKind::Shape,
        "median() input tensor cannot be empty",
    )]
}

pub fn median_dim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 1)]).arg("dim", Arg::Int(1)),
        Sample::new("[5,2] dim 0 keepdim", vec![x(&[5, 2], 2)])
            .arg("dim", Arg::Int(0))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,3,4] dim -1", vec![x(&[2, 3, 4], 3)]).arg("dim", Arg::Int(-1)),
        Sample::new("0-d dim 0", vec![x(&[], 4)])
            .arg("dim", Arg::Int(0))
            .edge(),
    ]
}

pub fn median_dim_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("empty dim", vec![vals(&[0, 2], DType::F32, 85)]).arg("dim", Arg::Int(0)),
        ErrorKind::Index,
        "Expected reduction dim 0 to have non-zero size.",
    )]
}

pub fn prod(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::nonzero(s, dtype, seed);
    let mut v = vec![
        Sample::new("[3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("[5]", vec![x(&[5], 2)]),
        Sample::new("[2,3]", vec![x(&[2, 3], 3)]),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
        Sample::new("[0] (empty product is 1)", vec![x(&[0], 5)]).edge(),
    ];
    if dtype == DType::I32 {
        v.push(
            Sample::new("[4] dtype=float64", vec![x(&[4], 6)])
                .arg("dtype", Arg::OptDType(Some(DType::F64))),
        );
    }
    v
}

pub fn prod_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn prod_dim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::nonzero(s, dtype, seed);
    vec![
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 1)]).arg("dim", Arg::Int(1)),
        Sample::new("[4,3] dim 0 keepdim", vec![x(&[4, 3], 2)])
            .arg("dim", Arg::Int(0))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,3,2] dim -2", vec![x(&[2, 3, 2], 3)]).arg("dim", Arg::Int(-2)),
        Sample::new("[0,3] dim 0", vec![x(&[0, 3], 4)])
            .arg("dim", Arg::Int(0))
            .edge(),
    ]
}

pub fn prod_dim_errors() -> Vec<ErrorSample> {
    dim_errors()
}
