//! Samples for distances and similarities: cosine_similarity, pairwise_distance, cdist.

use super::{err, two, vals, BROADCAST_ERROR};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind};

pub fn cosine_similarity(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 1), x(&[3, 4], 2)]),
        Sample::new("[2,3,4] dim -1", vec![x(&[2, 3, 4], 3), x(&[2, 3, 4], 4)])
            .arg("dim", Arg::Int(-1)),
        Sample::new(
            "broadcast [3,4] with [4] dim 1",
            vec![x(&[3, 4], 5), x(&[4], 6)],
        ),
        Sample::new("[0,4] dim 1", vec![x(&[0, 4], 7), x(&[0, 4], 8)]).edge(),
    ]
}

pub fn cosine_similarity_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("[2,3] with [2,4]", two(&[2, 3], &[2, 4], DType::F32, 143)),
        ErrorKind::Shape,
        BROADCAST_ERROR,
    )]
}

pub fn pairwise_distance(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] p 2", vec![x(&[3, 4], 1), x(&[3, 4], 2)]),
        Sample::new("[3,4] p 1 keepdim", vec![x(&[3, 4], 3), x(&[3, 4], 4)])
            .arg("p", Arg::Float(1.0))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,5] p 3", vec![x(&[2, 5], 5), x(&[2, 5], 6)]).arg("p", Arg::Float(3.0)),
        Sample::new("[0,4]", vec![x(&[0, 4], 7), x(&[0, 4], 8)]).edge(),
    ]
}

pub fn pairwise_distance_errors() -> Vec<ErrorSample> {
    cosine_similarity_errors()
}

pub fn cdist(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] to [5,4] p 2", vec![x(&[3, 4], 1), x(&[5, 4], 2)]),
        Sample::new(
            "[2,3,4] to [2,2,4] p 1",
            vec![x(&[2, 3, 4], 3), x(&[2, 2, 4], 4)],
        )
        .arg("p", Arg::Float(1.0)),
        Sample::new("[4,2] to [3,2] p 3", vec![x(&[4, 2], 5), x(&[3, 2], 6)])
            .arg("p", Arg::Float(3.0)),
        Sample::new("[0,3] to [2,3]", vec![x(&[0, 3], 7), x(&[2, 3], 8)]).edge(),
    ]
}

pub fn cdist_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "columns differ",
            vec![vals(&[3, 4], f, 160), vals(&[3, 5], f, 161)],
        ),
        ErrorKind::Shape,
        "X1 and X2 must have the same number of columns. X1: 4 X2: 5",
    )]
}
