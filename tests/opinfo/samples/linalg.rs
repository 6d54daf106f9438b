//! Samples for linear algebra (src/ops/linalg.rs): well-conditioned matrices.

use super::{err, ints, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

/// `[..batch, n, n]` random values plus `n` on the diagonal: diagonally dominant, so
/// invertible and well conditioned.
fn dominant(batch: &[usize], n: usize, dtype: DType, seed: u64) -> Tensor {
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    let eye = Tensor::eye(n, None, DType::F64)
        .expect("eye")
        .mul_scalar(n as f64)
        .expect("scale");
    vals(&shape, DType::F64, seed)
        .add(&eye)
        .expect("add")
        .to_dtype(dtype)
        .expect("cast")
}

/// `M Mᵀ + n I`: symmetric positive-definite.
fn spd(batch: &[usize], n: usize, dtype: DType, seed: u64) -> Tensor {
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    let m = vals(&shape, DType::F64, seed);
    let eye = Tensor::eye(n, None, DType::F64)
        .expect("eye")
        .mul_scalar(n as f64)
        .expect("scale");
    m.matmul(&m.transpose(-2, -1).expect("t"))
        .expect("mm")
        .add(&eye)
        .expect("add")
        .to_dtype(dtype)
        .expect("cast")
}

fn matrix_errors(op: &str) -> Vec<ErrorSample> {
    let _ = op;
    vec![
        err(
            Sample::new("2 x 3", vec![vals(&[2, 3], DType::F32, 170)]),
            ErrorKind::Shape,
            "must be batches of square matrices, but they are 2 by 3 matrices",
        ),
        err(
            Sample::new("int64", vec![vals(&[2, 2], DType::I64, 171)]),
            ErrorKind::DType,
            "Expected a floating point or complex tensor as input. Got Long",
        ),
    ]
}

pub fn square_matrices(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[3,3]", vec![dominant(&[], 3, dtype, 1)]),
        Sample::new("[2,4,4] batch", vec![dominant(&[2], 4, dtype, 2)]),
        Sample::new("[2,2]", vec![dominant(&[], 2, dtype, 3)]),
        Sample::new("[0,3,3] empty batch", vec![dominant(&[0], 3, dtype, 4)]).edge(),
    ]
}

pub fn square_matrices_errors() -> Vec<ErrorSample> {
    matrix_errors("square")
}

pub fn solve(dtype: DType) -> Vec<Sample> {
    let a = |b: &[usize], n, seed| dominant(b, n, dtype, seed);
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,3] \\ [3,2]", vec![a(&[], 3, 1), x(&[3, 2], 2)]),
        Sample::new(
            "[2,3,3] \\ [2,3] vectors",
            vec![a(&[2], 3, 3), x(&[2, 3], 4)],
        ),
        Sample::new(
            "[3,3] \\ [2,3,2] broadcast batch",
            vec![a(&[], 3, 5), x(&[2, 3, 2], 6)],
        ),
        Sample::new(
            "[2,2,3] / [3,3] left=false",
            vec![a(&[], 3, 7), x(&[2, 2, 3], 8)],
        )
        .arg("left", Arg::Bool(false)),
        Sample::new("[4,4] \\ [4] vector", vec![a(&[], 4, 9), x(&[4], 10)]),
        Sample::new(
            "[0,2,2] empty batch",
            vec![a(&[0], 2, 11), x(&[0, 2, 3], 12)],
        )
        .edge(),
    ]
}

pub fn solve_errors() -> Vec<ErrorSample> {
    let singular = Tensor::from_vec(vec![1.0f32, 2.0, 2.0, 4.0], &[2, 2]).expect("shape");
    vec![
        err(
            Sample::new("singular A", vec![singular, vals(&[2], DType::F32, 172)]),
            ErrorKind::Value,
            "linalg.solve: The solver failed because the input matrix is singular.",
        ),
        err(
            Sample::new(
                "B rows differ",
                vec![
                    dominant(&[], 3, DType::F32, 173),
                    vals(&[2, 2], DType::F32, 174),
                ],
            ),
            ErrorKind::Shape,
            "Incompatible shapes of A and B",
        ),
    ]
}

pub fn spd_matrices(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[3,3]", vec![spd(&[], 3, dtype, 1)]),
        Sample::new("[2,3,3] batch", vec![spd(&[2], 3, dtype, 2)]),
        Sample::new("[4,4] upper", vec![spd(&[], 4, dtype, 3)]).arg("upper", Arg::Bool(true)),
        Sample::new("[0,2,2] empty batch", vec![spd(&[0], 2, dtype, 4)]).edge(),
    ]
}

pub fn spd_matrices_errors() -> Vec<ErrorSample> {
    let indefinite = Tensor::from_vec(vec![1.0f32, 2.0, 2.0, 1.0], &[2, 2]).expect("shape");
    vec![err(
        Sample::new("indefinite", vec![indefinite]),
        ErrorKind::Value, "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order 2 is not positive-definite).",
    )]
}

/// Full-rank matrices (wide ones with a full-rank leading square block); the first three,
/// which the gradient checks take, are tall, wide and square.
pub fn qr(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[4,3]", vec![x(&[4, 3], 1)]),
        Sample::new("[2,3] wide", vec![x(&[2, 3], 4)]),
        Sample::new("[3,3]", vec![dominant(&[], 3, dtype, 2)]),
        Sample::new("[2,4,2] batch", vec![x(&[2, 4, 2], 3)]),
        Sample::new("[4,3] mode r", vec![x(&[4, 3], 5)]).arg("mode", Arg::Str("r")),
        // Complete Q of a tall matrix is not unique past column n: tests/tensor.rs checks it.
        Sample::new("[3,3] mode complete", vec![dominant(&[], 3, dtype, 7)])
            .arg("mode", Arg::Str("complete")),
        Sample::new("[2,2,4] wide mode complete", vec![x(&[2, 2, 4], 8)])
            .arg("mode", Arg::Str("complete")),
        Sample::new("[0,3,2] empty batch", vec![x(&[0, 3, 2], 6)]).edge(),
    ]
}

pub fn qr_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("mode full", vec![vals(&[3, 2], DType::F32, 175)])
            .arg("mode", Arg::Str("full")),
        ErrorKind::Value, "qr received unrecognized mode 'full' but expected one of 'reduced' (default), 'r', or 'complete'",
    )]
}

pub fn inner(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3] . [3]", vec![x(&[3], 1), x(&[3], 2)]),
        Sample::new("[2,3] . [4,3]", vec![x(&[2, 3], 3), x(&[4, 3], 4)]),
        Sample::new("[2,2,3] . [3]", vec![x(&[2, 2, 3], 5), x(&[3], 6)]),
        Sample::new("0-d . [3]", vec![x(&[], 7), x(&[3], 8)]).edge(),
    ]
}

pub fn inner_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "[3] . [4]",
            vec![vals(&[3], DType::F32, 176), vals(&[4], DType::F32, 177)],
        ),
        ErrorKind::Shape,
        "inner() the last dimension must match on both input tensors",
    )]
}

pub fn kron(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3] x [2,2]", vec![x(&[2, 3], 1), x(&[2, 2], 2)]),
        Sample::new("[3] x [2,2]", vec![x(&[3], 3), x(&[2, 2], 4)]),
        Sample::new("[2,2,2] x [3]", vec![x(&[2, 2, 2], 5), x(&[3], 6)]),
        Sample::new("0-d x [2]", vec![x(&[], 7), x(&[2], 8)]).edge(),
    ]
}

pub fn kron_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn tensordot(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[2,3,4] . [4,3,5] over (1,2)/(1,0)",
            vec![x(&[2, 3, 4], 1), x(&[4, 3, 5], 2)],
        )
        .arg("dims_self", ints(&[1, 2]))
        .arg("dims_other", ints(&[1, 0])),
        Sample::new("[3,4] . [4,5] over 1/0", vec![x(&[3, 4], 3), x(&[4, 5], 4)])
            .arg("dims_self", ints(&[1]))
            .arg("dims_other", ints(&[0])),
        Sample::new("[2,3] . [2,3] over all", vec![x(&[2, 3], 5), x(&[2, 3], 6)])
            .arg("dims_self", ints(&[0, 1]))
            .arg("dims_other", ints(&[0, 1])),
        Sample::new("[2] . [3] outer", vec![x(&[2], 7), x(&[3], 8)])
            .arg("dims_self", ints(&[]))
            .arg("dims_other", ints(&[])),
        Sample::new("[0,3] . [3,2]", vec![x(&[0, 3], 9), x(&[3, 2], 10)])
            .arg("dims_self", ints(&[1]))
            .arg("dims_other", ints(&[0]))
            .edge(),
    ]
}

pub fn tensordot_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("sizes differ", vec![vals(&[2, 3], DType::F32, 178), vals(&[4, 2], DType::F32, 179)])
            .arg("dims_self", ints(&[1]))
            .arg("dims_other", ints(&[0])),
        ErrorKind::Shape, "contracted dimensions need to match, but first has size 3 in dim 1 and second has size 4 in dim 0",
    )]
}

pub fn einsum(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let eq = |s: Sample, e: &'static str| s.arg("equation", Arg::Str(e));
    vec![
        eq(
            Sample::with_lists("ij,jk->ik", vec![vec![x(&[2, 3], 1), x(&[3, 4], 2)]]),
            "ij,jk->ik",
        ),
        eq(
            Sample::with_lists(
                "bij,bjk->bik",
                vec![vec![x(&[2, 3, 4], 3), x(&[2, 4, 2], 4)]],
            ),
            "bij,bjk->bik",
        ),
        eq(
            Sample::with_lists(
                "...ij,...jk batch broadcast, implicit",
                vec![vec![x(&[2, 1, 2, 3], 5), x(&[3, 3, 2], 6)]],
            ),
            "...ij,...jk",
        ),
        eq(
            Sample::with_lists("ii->i diagonal", vec![vec![x(&[3, 3], 7)]]),
            "ii->i",
        ),
        eq(
            Sample::with_lists("ij-> total", vec![vec![x(&[2, 3], 8)]]),
            "ij->",
        ),
        eq(
            Sample::with_lists("i,j->ij outer", vec![vec![x(&[2], 9), x(&[3], 10)]]),
            "i,j->ij",
        ),
        eq(
            Sample::with_lists(
                "ij,jk,kl->il chain",
                vec![vec![x(&[2, 3], 11), x(&[3, 2], 12), x(&[2, 4], 13)]],
            ),
            "ij,jk,kl->il",
        ),
        eq(
            Sample::with_lists(
                "bi,bi->b with an empty batch",
                vec![vec![x(&[0, 3], 14), x(&[0, 3], 15)]],
            ),
            "bi,bi->b",
        )
        .edge(),
    ]
}

pub fn einsum_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::with_lists(
                "two subscripts, one operand",
                vec![vec![vals(&[2, 2], DType::F32, 180)]],
            )
            .arg("equation", Arg::Str("ij,jk->ik")),
            ErrorKind::Value,
            "einsum(): fewer operands were provided than specified in the equation",
        ),
        err(
            Sample::with_lists("rank mismatch", vec![vec![vals(&[2, 2], DType::F32, 181)]])
                .arg("equation", Arg::Str("ijk->i")),
            ErrorKind::Shape,
            "does not match the number of dimensions",
        ),
    ]
}
