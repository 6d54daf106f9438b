//! Samples for linear algebra (src/ops/linalg.rs): well-conditioned matrices; matrix products
//! (mm, bmm, matmul, dot, outer, addmm, mv, addmv, baddbmm, addbmm) and linear layers.

use super::{err, float, ints, small, two, vals};
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
    ),
    err(
        Sample::new("float32 . float64", vec![vals(&[2, 3], DType::F32, 180), vals(&[3, 2], DType::F64, 181)])
            .arg("dims_self", ints(&[1]))
            .arg("dims_other", ints(&[0])),
        ErrorKind::DType, "both inputs should have same dtype",
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

// ---------------------------------------------------------------------------------------
// Linear algebra
// ---------------------------------------------------------------------------------------

/// mm: [n,k] x [k,m]; edges with k = 0, n = 0 and m = 0.
pub fn mm(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[3,4] x [4,2]", two(&[3, 4], &[4, 2], dtype, 1)),
        Sample::new("[2,5] x [5,3]", two(&[2, 5], &[5, 3], dtype, 3)),
        Sample::new("[4,2] x [2,4]", two(&[4, 2], &[2, 4], dtype, 5)),
        Sample::new("[3,3] x [3,3]", two(&[3, 3], &[3, 3], dtype, 7)),
        Sample::new("k = 0: [2,0] x [0,3]", two(&[2, 0], &[0, 3], dtype, 9)).edge(),
        Sample::new("n = 0: [0,3] x [3,2]", two(&[0, 3], &[3, 2], dtype, 11)).edge(),
        Sample::new("m = 0: [2,3] x [3,0]", two(&[2, 3], &[3, 0], dtype, 13)).edge(),
    ]
}

pub fn mm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("[2,3] x [4,5]", two(&[2, 3], &[4, 5], f, 124)),
            ErrorKind::Shape,
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
        err(
            Sample::new("3-d self", two(&[2, 3, 4], &[4, 5], f, 126)),
            ErrorKind::Shape,
            "self must be a matrix",
        ),
        err(
            Sample::new(
                "float32 x float64",
                vec![vals(&[2, 3], f, 128), vals(&[3, 2], DType::F64, 129)],
            ),
            ErrorKind::DType,
            "expected m1 and m2 to have the same dtype, but got: Float != Double",
        ),
    ]
}

/// bmm: [b,n,k] x [b,k,m]; edges with b = 0 and k = 0.
pub fn bmm(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[2,3,4] x [2,4,2]", two(&[2, 3, 4], &[2, 4, 2], dtype, 1)),
        Sample::new("[3,2,2] x [3,2,3]", two(&[3, 2, 2], &[3, 2, 3], dtype, 3)),
        Sample::new("[1,2,3] x [1,3,2]", two(&[1, 2, 3], &[1, 3, 2], dtype, 5)),
        Sample::new(
            "b = 0: [0,2,3] x [0,3,2]",
            two(&[0, 2, 3], &[0, 3, 2], dtype, 7),
        )
        .edge(),
        Sample::new(
            "k = 0: [2,3,0] x [2,0,2]",
            two(&[2, 3, 0], &[2, 0, 2], dtype, 9),
        )
        .edge(),
    ]
}

pub fn bmm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(Sample::new("2-d self", two(&[2, 3], &[2, 3, 4], f, 130)), ErrorKind::Shape, "batch1 must be a 3D tensor"),
        err(
            Sample::new("[2,3,4] x [2,5,2]", two(&[2, 3, 4], &[2, 5, 2], f, 132)),
            ErrorKind::Shape, "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].",
        ),
    ]
}

/// matmul: every rank case — dot, matrix-vector, vector-matrix, matrix-matrix, batched with
/// broadcast batch dims, vector with a batch, 4-d broadcast.
pub fn matmul(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("2-d x 2-d [3,4] x [4,2]", two(&[3, 4], &[4, 2], dtype, 1)),
        Sample::new(
            "3-d x 2-d [2,3,4] x [4,2] (batch broadcast)",
            two(&[2, 3, 4], &[4, 2], dtype, 3),
        ),
        Sample::new("1-d x 2-d [4] x [4,3]", two(&[4], &[4, 3], dtype, 5)),
        Sample::new("1-d x 1-d [4] x [4]", two(&[4], &[4], dtype, 7)),
        Sample::new("2-d x 1-d [3,4] x [4]", two(&[3, 4], &[4], dtype, 9)),
        Sample::new("1-d x 3-d [4] x [2,4,3]", two(&[4], &[2, 4, 3], dtype, 11)),
        Sample::new("3-d x 1-d [2,3,4] x [4]", two(&[2, 3, 4], &[4], dtype, 13)),
        Sample::new(
            "4-d x 3-d [2,1,2,3] x [3,3,2]",
            two(&[2, 1, 2, 3], &[3, 3, 2], dtype, 15),
        ),
        Sample::new(
            "3-d x 3-d [2,2,3] x [2,3,2]",
            two(&[2, 2, 3], &[2, 3, 2], dtype, 17),
        ),
        Sample::new("empty dot [0] x [0]", two(&[0], &[0], dtype, 19)).edge(),
        Sample::new("empty rows [0,3] x [3,2]", two(&[0, 3], &[3, 2], dtype, 21)).edge(),
        Sample::new(
            "empty batch [0,2,3] x [3,2]",
            two(&[0, 2, 3], &[3, 2], dtype, 23),
        )
        .edge(),
    ]
}

pub fn matmul_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("0-d operand", two(&[], &[3], f, 134)),
            ErrorKind::Shape,
            "both arguments to matmul need to be at least 1D",
        ),
        err(
            Sample::new("[2,3] x [4,5]", two(&[2, 3], &[4, 5], f, 136)),
            ErrorKind::Shape,
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
        err(
            Sample::new("[3] x [4]", two(&[3], &[4], f, 138)),
            ErrorKind::Shape,
            "inconsistent tensor size",
        ),
        err(
            Sample::new("[2,2,3] x [2,4,5]", two(&[2, 2, 3], &[2, 4, 5], f, 140)),
            ErrorKind::Shape,
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
    ]
}

pub fn dot(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[5] . [5]", two(&[5], &[5], dtype, 1)),
        Sample::new("[0] . [0]", two(&[0], &[0], dtype, 3)).edge(),
    ]
}

pub fn dot_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("2-d operands", two(&[2, 2], &[2, 2], f, 125)),
            ErrorKind::Shape,
            "1D tensors expected, but got 2D and 2D tensors",
        ),
        err(
            Sample::new("[3] . [4]", two(&[3], &[4], f, 127)),
            ErrorKind::Shape,
            "inconsistent tensor size",
        ),
        err(
            Sample::new(
                "float32 . float64",
                vec![vals(&[3], f, 129), vals(&[3], DType::F64, 130)],
            ),
            ErrorKind::DType,
            "dot : expected both vectors to have same dtype, but found Float and Double",
        ),
    ]
}

pub fn outer(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[3] x [4]", two(&[3], &[4], dtype, 1)),
        Sample::new("[0] x [2]", two(&[0], &[2], dtype, 3)).edge(),
    ]
}

pub fn outer_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("2-d self", two(&[2, 2], &[3], DType::F32, 131)),
        ErrorKind::Shape,
        "outer: Expected 1-D argument self, but got 2-D",
    )]
}

/// addmm: full and broadcast `self`, with default and explicit beta/alpha (beta 0 ignores
/// a NaN in `self`).
pub fn addmm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,2] + [3,4] @ [4,2]",
            vec![x(&[3, 2], 1), x(&[3, 4], 2), x(&[4, 2], 3)],
        ),
        Sample::new(
            "[2] + [3,4] @ [4,2]",
            vec![x(&[2], 4), x(&[3, 4], 5), x(&[4, 2], 6)],
        ),
        Sample::new(
            "beta 0.5 alpha -2",
            vec![x(&[3, 2], 7), x(&[3, 4], 8), x(&[4, 2], 9)],
        )
        .arg("beta", float(0.5))
        .arg("alpha", float(-2.0)),
        Sample::new(
            "[3,1] + [4,3]ᵀ @ [2,4]ᵀ",
            vec![
                x(&[3, 1], 13),
                x(&[4, 3], 14).t().unwrap(),
                x(&[2, 4], 15).t().unwrap(),
            ],
        ),
        Sample::new(
            "0-d + [5,6] @ [6,7] beta 2",
            vec![x(&[], 16), x(&[5, 6], 17), x(&[6, 7], 18)],
        )
        .arg("beta", float(2.0)),
        Sample::new(
            "k = 0: [2,3] + [2,0] @ [0,3]",
            vec![x(&[2, 3], 10), x(&[2, 0], 11), x(&[0, 3], 12)],
        )
        .edge(),
    ]
}

pub fn addmm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new(
                "[2,3] @ [4,5]",
                vec![vals(&[2, 5], f, 132), vals(&[2, 3], f, 133), vals(&[4, 5], f, 134)],
            ),
            ErrorKind::Shape,
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
        err(
            Sample::new(
                "1-d mat1",
                vec![vals(&[2], f, 135), vals(&[3], f, 136), vals(&[3, 2], f, 137)],
            ),
            ErrorKind::Shape,
            "addmm: self must be a matrix, got 1-D tensor",
        ),
        err(
            Sample::new(
                "self [3] for a [2,2] product",
                vec![vals(&[3], f, 138), vals(&[2, 3], f, 139), vals(&[3, 2], f, 140)],
            ),
            ErrorKind::Shape,
            "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 2].  Tensor sizes: [3]",
        ),
        err(
            Sample::new(
                "float64 self",
                vec![vals(&[2], DType::F64, 141), vals(&[2, 3], f, 142), vals(&[3, 2], f, 143)],
            ),
            ErrorKind::DType,
            "addmm: self, mat1 and mat2 must have the same dtype",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Linear layers and batched products
// ---------------------------------------------------------------------------------------

pub fn linear(dtype: DType) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    vec![
        Sample::new(
            "[3,4] * [5,4]ᵀ + [5]",
            vec![x(&[3, 4], 1), w(&[5, 4], 2), w(&[5], 3)],
        ),
        Sample::new("[2,3,4] * [2,4]ᵀ", vec![x(&[2, 3, 4], 4), w(&[2, 4], 5)]),
        Sample::new(
            "[4] * [3,4]ᵀ + [3]",
            vec![x(&[4], 6), w(&[3, 4], 7), w(&[3], 8)],
        ),
        Sample::new("[0,4] * [2,4]ᵀ", vec![x(&[0, 4], 9), w(&[2, 4], 10)]).edge(),
    ]
}

pub fn linear_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "in_features mismatch",
            vec![vals(&[3, 4], f, 122), vals(&[5, 3], f, 123)],
        ),
        ErrorKind::Shape,
        "cannot be multiplied",
    )]
}

pub fn bilinear(dtype: DType) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    vec![
        Sample::new(
            "[3,4] [3,5] W [2,4,5] + [2]",
            vec![x(&[3, 4], 1), x(&[3, 5], 2), w(&[2, 4, 5], 3), w(&[2], 4)],
        ),
        Sample::new(
            "[2,3,2] [2,3,3] W [4,2,3]",
            vec![x(&[2, 3, 2], 5), x(&[2, 3, 3], 6), w(&[4, 2, 3], 7)],
        ),
        Sample::new(
            "[4] [3] W [2,4,3]",
            vec![x(&[4], 8), x(&[3], 9), w(&[2, 4, 3], 10)],
        ),
        Sample::new(
            "[0,4] [0,3] W [2,4,3]",
            vec![x(&[0, 4], 11), x(&[0, 3], 12), w(&[2, 4, 3], 13)],
        )
        .edge(),
    ]
}

pub fn bilinear_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "input2 features mismatch",
            vec![
                vals(&[3, 4], f, 124),
                vals(&[3, 2], f, 125),
                vals(&[2, 4, 5], f, 126),
            ],
        ),
        ErrorKind::Shape,
        "do not match weight",
    ),
    err(
        Sample::new(
            "float64 input1",
            vec![
                vals(&[3, 4], DType::F64, 132),
                vals(&[3, 5], f, 133),
                vals(&[2, 4, 5], f, 134),
            ],
        ),
        ErrorKind::DType,
        "All tensors must have the same dtype, got input1: double, input2: float, weight: float",
    )]
}

pub fn mv(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] @ [4]", vec![x(&[3, 4], 1), x(&[4], 2)]),
        Sample::new("[2,5] @ [5]", vec![x(&[2, 5], 3), x(&[5], 4)]),
        Sample::new("[4,2] @ [2]", vec![x(&[4, 2], 5), x(&[2], 6)]),
        Sample::new("[0,3] @ [3]", vec![x(&[0, 3], 7), x(&[3], 8)]).edge(),
    ]
}

pub fn mv_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new(
                "vector @ vector",
                vec![vals(&[3], DType::F32, 127), vals(&[3], DType::F32, 128)],
            ),
            ErrorKind::Shape,
            "vector + matrix @ vector expected, got 1, 1, 1",
        ),
        err(
            Sample::new(
                "float32 @ float64",
                vec![vals(&[3, 4], DType::F32, 135), vals(&[4], DType::F64, 136)],
            ),
            ErrorKind::DType,
            "addmv input tensors must have the same dtype, but got Double, Float, and Double",
        ),
    ]
}

pub fn addmv(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let f = |v: f64| Arg::Scalar(kiln::Scalar::Float(v));
    vec![
        Sample::new(
            "[3] + [3,4] @ [4]",
            vec![x(&[3], 1), x(&[3, 4], 2), x(&[4], 3)],
        ),
        Sample::new(
            "0-d + [2,5] @ [5] beta 0.5 alpha 2",
            vec![x(&[], 4), x(&[2, 5], 5), x(&[5], 6)],
        )
        .arg("beta", f(0.5))
        .arg("alpha", f(2.0)),
        Sample::new(
            "[4] + [4,2] @ [2] beta 0",
            vec![x(&[4], 7), x(&[4, 2], 8), x(&[2], 9)],
        )
        .arg("beta", f(0.0)),
        Sample::new(
            "[0] + [0,3] @ [3]",
            vec![x(&[0], 10), x(&[0, 3], 11), x(&[3], 12)],
        )
        .edge(),
    ]
}

pub fn addmv_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new(
                "vec as matrix",
                vec![
                    vals(&[3], f, 129),
                    vals(&[3, 4], f, 130),
                    vals(&[4, 1], f, 131),
                ],
            ),
            ErrorKind::Shape,
            "vector + matrix @ vector expected",
        ),
        err(
            Sample::new(
                "float64 self",
                vec![
                    vals(&[3], DType::F64, 137),
                    vals(&[3, 4], f, 138),
                    vals(&[4], f, 139),
                ],
            ),
            ErrorKind::DType,
            "addmv input tensors must have the same dtype, but got Double, Float, and Float",
        ),
    ]
}

pub fn baddbmm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let f = |v: f64| Arg::Scalar(kiln::Scalar::Float(v));
    vec![
        Sample::new(
            "[2,3,5] + [2,3,4] @ [2,4,5]",
            vec![x(&[2, 3, 5], 1), x(&[2, 3, 4], 2), x(&[2, 4, 5], 3)],
        ),
        Sample::new(
            "[5] + [2,3,4] @ [2,4,5] beta 0.5 alpha -1",
            vec![x(&[5], 4), x(&[2, 3, 4], 5), x(&[2, 4, 5], 6)],
        )
        .arg("beta", f(0.5))
        .arg("alpha", f(-1.0)),
        Sample::new(
            "[3,2] + [3,3,2] @ [3,2,2]",
            vec![x(&[3, 2], 7), x(&[3, 3, 2], 8), x(&[3, 2, 2], 9)],
        ),
        Sample::new(
            "[0,2,2] empty batch",
            vec![x(&[0, 2, 2], 10), x(&[0, 2, 3], 11), x(&[0, 3, 2], 12)],
        )
        .edge(),
    ]
}

pub fn baddbmm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "2-d batch1",
            vec![
                vals(&[3, 5], f, 132),
                vals(&[3, 4], f, 133),
                vals(&[2, 4, 5], f, 134),
            ],
        ),
        ErrorKind::Shape,
        "batch1 must be a 3D tensor",
    )]
}

pub fn addbmm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let f = |v: f64| Arg::Scalar(kiln::Scalar::Float(v));
    vec![
        Sample::new(
            "[3,5] + Σ [2,3,4] @ [2,4,5]",
            vec![x(&[3, 5], 1), x(&[2, 3, 4], 2), x(&[2, 4, 5], 3)],
        ),
        Sample::new(
            "[5] + Σ [3,2,4] @ [3,4,5] beta 2 alpha 0.5",
            vec![x(&[5], 4), x(&[3, 2, 4], 5), x(&[3, 4, 5], 6)],
        )
        .arg("beta", f(2.0))
        .arg("alpha", f(0.5)),
        Sample::new(
            "[2,2] + Σ [1,2,3] @ [1,3,2]",
            vec![x(&[2, 2], 7), x(&[1, 2, 3], 8), x(&[1, 3, 2], 9)],
        ),
        Sample::new(
            "[2,2] + Σ of no batches",
            vec![x(&[2, 2], 10), x(&[0, 2, 3], 11), x(&[0, 3, 2], 12)],
        )
        .edge(),
    ]
}

pub fn addbmm_errors() -> Vec<ErrorSample> {
    baddbmm_errors()
}
