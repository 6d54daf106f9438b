//! Samples for the view ops (view, reshape, permute, transpose, squeeze, expand, narrow,
//! select, slice, as_strided, flatten, unflatten) and the backward ops of slicing. Regular
//! samples must also be valid on the non-contiguous copy the harness makes.

use super::{err, ints, symmetric, vals};
use crate::harness::{noncontiguous, Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind};

// ---------------------------------------------------------------------------------------
// Views. Regular samples must also be valid on the non-contiguous copy the harness makes
// (last two dims transposed in memory; 1-d tensors with stride 2).
// ---------------------------------------------------------------------------------------

/// view(size): splits and merges that stay expressible on the transposed-in-memory copy.
pub fn view(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let size = |v: &[i64]| ints(v);
    vec![
        Sample::new("[2,3,4] to [2,3,2,2]", vec![x(&[2, 3, 4], 1)])
            .arg("size", size(&[2, 3, 2, 2])),
        Sample::new("[12] to [3,4]", vec![x(&[12], 2)]).arg("size", size(&[3, 4])),
        Sample::new("[4,6] to [2,2,6]", vec![x(&[4, 6], 3)]).arg("size", size(&[2, 2, 6])),
        Sample::new("[2,3,4] to [1,2,3,4]", vec![x(&[2, 3, 4], 4)])
            .arg("size", size(&[1, 2, 3, 4])),
        Sample::new("[2,3,4] to [-1,3,4]", vec![x(&[2, 3, 4], 5)]).arg("size", size(&[-1, 3, 4])),
        Sample::new("[12] to [2,-1]", vec![x(&[12], 6)]).arg("size", size(&[2, -1])),
        Sample::new("0-d to [1]", vec![x(&[], 7)])
            .arg("size", size(&[1]))
            .edge(),
        Sample::new("0-d to []", vec![x(&[], 8)])
            .arg("size", size(&[]))
            .edge(),
        Sample::new("empty [0,3] to [3,0]", vec![x(&[0, 3], 9)])
            .arg("size", size(&[3, 0]))
            .edge(),
        Sample::new("empty [0,3] to [-1]", vec![x(&[0, 3], 10)])
            .arg("size", size(&[-1]))
            .edge(),
    ]
}

pub fn view_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("6 elements to [5]", vec![vals(&[2, 3], f, 166)]).arg("size", ints(&[5])),
            ErrorKind::Shape,
            "shape '[5]' is invalid for input of size 6",
        ),
        err(
            Sample::new(
                "transposed [3,4] to [12]",
                vec![noncontiguous(&vals(&[3, 4], f, 167))],
            )
            .arg("size", ints(&[12])),
            ErrorKind::Shape,
            "view size is not compatible with input tensor's size and stride",
        ),
    ]
}

/// reshape(shape): anything with the right number of elements (a copy when not a view).
pub fn reshape(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let shape = |v: &[i64]| ints(v);
    vec![
        Sample::new("[2,3,4] to [6,4]", vec![x(&[2, 3, 4], 1)]).arg("shape", shape(&[6, 4])),
        Sample::new("[3,4] to [12]", vec![x(&[3, 4], 2)]).arg("shape", shape(&[12])),
        Sample::new("[12] to [2,2,3]", vec![x(&[12], 3)]).arg("shape", shape(&[2, 2, 3])),
        Sample::new("[2,3,4] to [4,-1]", vec![x(&[2, 3, 4], 4)]).arg("shape", shape(&[4, -1])),
        Sample::new("[4,6] to [3,8]", vec![x(&[4, 6], 5)]).arg("shape", shape(&[3, 8])),
        Sample::new("0-d to [1]", vec![x(&[], 6)])
            .arg("shape", shape(&[1]))
            .edge(),
        Sample::new("0-d to []", vec![x(&[], 7)])
            .arg("shape", shape(&[]))
            .edge(),
        Sample::new("empty [0,3] to [3,0]", vec![x(&[0, 3], 8)])
            .arg("shape", shape(&[3, 0]))
            .edge(),
        Sample::new("empty [0,3] to [-1]", vec![x(&[0, 3], 9)])
            .arg("shape", shape(&[-1]))
            .edge(),
    ]
}

pub fn reshape_errors() -> Vec<ErrorSample> {
    let x = || vals(&[2, 3], DType::F32, 168);
    vec![
        err(
            Sample::new("6 elements to [5]", vec![x()]).arg("shape", ints(&[5])),
            ErrorKind::Shape,
            "shape '[5]' is invalid for input of size 6",
        ),
        err(
            Sample::new("two -1", vec![x()]).arg("shape", ints(&[-1, -1])),
            ErrorKind::Shape,
            "only one dimension can be inferred",
        ),
    ]
}

/// permute(dims), including negative dims and the identity.
pub fn permute(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,4] dims [2,0,1]", vec![x(&[2, 3, 4], 1)]).arg("dims", ints(&[2, 0, 1])),
        Sample::new("[3,4] dims [1,0]", vec![x(&[3, 4], 2)]).arg("dims", ints(&[1, 0])),
        Sample::new("[2,3,4] dims [-1,0,1]", vec![x(&[2, 3, 4], 3)]).arg("dims", ints(&[-1, 0, 1])),
        Sample::new("[2,3,4] identity", vec![x(&[2, 3, 4], 4)]).arg("dims", ints(&[0, 1, 2])),
        Sample::new("0-d dims []", vec![x(&[], 5)])
            .arg("dims", ints(&[]))
            .edge(),
        Sample::new("empty [0,3] dims [1,0]", vec![x(&[0, 3], 6)])
            .arg("dims", ints(&[1, 0]))
            .edge(),
    ]
}

pub fn permute_errors() -> Vec<ErrorSample> {
    let x = || vals(&[2, 3], DType::F32, 169);
    vec![
        err(
            Sample::new("1 dim for a 2-d tensor", vec![x()]).arg("dims", ints(&[0])),
            ErrorKind::Shape,
            "number of dims don't match in permute",
        ),
        err(
            Sample::new("repeated dim", vec![x()]).arg("dims", ints(&[0, -2])),
            ErrorKind::Shape,
            "repeated dim in permute",
        ),
    ]
}

/// transpose(dim0, dim1), including negative and equal dims.
pub fn transpose(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let d = |a: i64, b: i64, s: Sample| s.arg("dim0", Arg::Int(a)).arg("dim1", Arg::Int(b));
    vec![
        d(0, 1, Sample::new("[3,4] (0,1)", vec![x(&[3, 4], 1)])),
        d(0, 2, Sample::new("[2,3,4] (0,2)", vec![x(&[2, 3, 4], 2)])),
        d(-1, 1, Sample::new("[2,3,4] (-1,1)", vec![x(&[2, 3, 4], 3)])),
        d(1, 1, Sample::new("[3,4] (1,1)", vec![x(&[3, 4], 4)])),
        d(0, -1, Sample::new("0-d (0,-1)", vec![x(&[], 5)]).edge()),
        d(
            0,
            1,
            Sample::new("empty [0,3] (0,1)", vec![x(&[0, 3], 6)]).edge(),
        ),
    ]
}

pub fn transpose_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "dim 2 of a 2-d tensor",
            vec![vals(&[3, 4], DType::F32, 170)],
        )
        .arg("dim0", Arg::Int(0))
        .arg("dim1", Arg::Int(2)),
        ErrorKind::Index,
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    )]
}

/// t(): 2-d, 1-d and (edge) 0-d and empty inputs.
pub fn matrix_or_less(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("2-d [3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("1-d [5]", vec![x(&[5], 2)]),
        Sample::new("2-d [2,3]", vec![x(&[2, 3], 3)]),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 5)]).edge(),
        Sample::new("empty [0]", vec![x(&[0], 6)]).edge(),
    ]
}

pub fn matrix_or_less_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("3-d", vec![vals(&[2, 3, 4], DType::F32, 171)]),
        ErrorKind::Shape,
        "t() expects a tensor with <= 2 dimensions, but self is 3D",
    )]
}

/// unsqueeze(dim) for dims from -(n+1) to n.
pub fn unsqueeze(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let dim = |d: i64| Arg::Int(d);
    vec![
        Sample::new("[3,4] dim 0", vec![x(&[3, 4], 1)]).arg("dim", dim(0)),
        Sample::new("[3,4] dim 2 (new last dim)", vec![x(&[3, 4], 2)]).arg("dim", dim(2)),
        Sample::new("[2,3,4] dim 1", vec![x(&[2, 3, 4], 3)]).arg("dim", dim(1)),
        Sample::new("[3,4] dim -1", vec![x(&[3, 4], 4)]).arg("dim", dim(-1)),
        Sample::new("[3,4] dim -3", vec![x(&[3, 4], 5)]).arg("dim", dim(-3)),
        Sample::new("[5] dim -2", vec![x(&[5], 6)]).arg("dim", dim(-2)),
        Sample::new("0-d dim 0", vec![x(&[], 7)])
            .arg("dim", dim(0))
            .edge(),
        Sample::new("0-d dim -1", vec![x(&[], 8)])
            .arg("dim", dim(-1))
            .edge(),
        Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 9)])
            .arg("dim", dim(1))
            .edge(),
    ]
}

pub fn unsqueeze_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "dim 3 of a 2-d tensor",
            vec![vals(&[3, 4], DType::F32, 172)],
        )
        .arg("dim", Arg::Int(3)),
        ErrorKind::Index,
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)",
    )]
}

/// squeeze(): size-1 dims in leading and middle positions (see the module notes), a
/// one-element tensor, and a tensor with nothing to squeeze.
pub fn squeeze(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,1,3,4]", vec![x(&[2, 1, 3, 4], 1)]),
        Sample::new("[1,3,4]", vec![x(&[1, 3, 4], 2)]),
        Sample::new("[1,2,1,3,2]", vec![x(&[1, 2, 1, 3, 2], 3)]),
        Sample::new("[3,4] (nothing to squeeze)", vec![x(&[3, 4], 4)]),
        Sample::new("[1,1] to 0-d", vec![x(&[1, 1], 5)]),
        Sample::new("0-d", vec![x(&[], 6)]).edge(),
        Sample::new("empty [0,1,3]", vec![x(&[0, 1, 3], 7)]).edge(),
        Sample::new("[3,1] (trailing size-1 dim)", vec![x(&[3, 1], 8)]).edge(),
    ]
}

/// squeeze() accepts every tensor: nothing to reject.
pub fn squeeze_errors() -> Vec<ErrorSample> {
    vec![]
}

/// squeeze(dim): size-1 dims (positive and negative) and no-op dims.
pub fn squeeze_dim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let dim = |d: i64| Arg::Int(d);
    vec![
        Sample::new("[2,1,3,4] dim 1", vec![x(&[2, 1, 3, 4], 1)]).arg("dim", dim(1)),
        Sample::new("[1,3,4] dim 0", vec![x(&[1, 3, 4], 2)]).arg("dim", dim(0)),
        Sample::new("[2,1,3,4] dim -3", vec![x(&[2, 1, 3, 4], 3)]).arg("dim", dim(-3)),
        Sample::new("[3,4] dim 0 (not size 1: no-op)", vec![x(&[3, 4], 4)]).arg("dim", dim(0)),
        Sample::new("[2,1,3,4] dim -1 (no-op)", vec![x(&[2, 1, 3, 4], 5)]).arg("dim", dim(-1)),
        Sample::new("0-d dim 0", vec![x(&[], 6)])
            .arg("dim", dim(0))
            .edge(),
        Sample::new("0-d dim -1", vec![x(&[], 7)])
            .arg("dim", dim(-1))
            .edge(),
        Sample::new("empty [0,1,3] dim 1", vec![x(&[0, 1, 3], 8)])
            .arg("dim", dim(1))
            .edge(),
    ]
}

pub fn squeeze_dim_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "dim 2 of a 2-d tensor",
            vec![vals(&[3, 4], DType::F32, 173)],
        )
        .arg("dim", Arg::Int(2)),
        ErrorKind::Index,
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    )]
}

/// expand(size): new leading dims, size-1 dims broadcast, -1 keeping a size.
pub fn expand(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let size = |v: &[i64]| ints(v);
    vec![
        Sample::new("[4] to [3,4]", vec![x(&[4], 1)]).arg("size", size(&[3, 4])),
        Sample::new("[1,2,3] to [4,2,3]", vec![x(&[1, 2, 3], 2)]).arg("size", size(&[4, 2, 3])),
        Sample::new("[2,1,2,3] to [2,3,2,3]", vec![x(&[2, 1, 2, 3], 3)])
            .arg("size", size(&[2, 3, 2, 3])),
        Sample::new("[1,2,3] to [2,-1,-1]", vec![x(&[1, 2, 3], 4)]).arg("size", size(&[2, -1, -1])),
        Sample::new("[1,1] to [3,4]", vec![x(&[1, 1], 5)]).arg("size", size(&[3, 4])),
        Sample::new("[3,4] to [2,3,4]", vec![x(&[3, 4], 6)]).arg("size", size(&[2, 3, 4])),
        Sample::new("0-d to [2,3]", vec![x(&[], 7)])
            .arg("size", size(&[2, 3]))
            .edge(),
        Sample::new("0-d to []", vec![x(&[], 8)])
            .arg("size", size(&[]))
            .edge(),
        Sample::new("empty [0,3] to [2,0,3]", vec![x(&[0, 3], 9)])
            .arg("size", size(&[2, 0, 3]))
            .edge(),
        Sample::new("[3,1] to [3,4] (trailing size-1 dim)", vec![x(&[3, 1], 10)])
            .arg("size", size(&[3, 4]))
            .edge(),
    ]
}

pub fn expand_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("[3] to [4]", vec![vals(&[3], f, 174)]).arg("size", ints(&[4])),
            ErrorKind::Shape, "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 0",
        ),
        err(
            Sample::new("fewer sizes than dims", vec![vals(&[2, 3], f, 175)]).arg("size", ints(&[3])),
            ErrorKind::Shape, "the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)",
        ),
    ]
}

/// narrow(dim, start, length), including a negative start.
pub fn narrow(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let n = |d: i64, st: i64, len: i64, s: Sample| {
        s.arg("dim", Arg::Int(d))
            .arg("start", Arg::Int(st))
            .arg("length", Arg::Int(len))
    };
    vec![
        n(
            1,
            1,
            3,
            Sample::new("[4,6] dim 1 start 1 length 3", vec![x(&[4, 6], 1)]),
        ),
        n(
            0,
            -3,
            2,
            Sample::new("[4,6] dim 0 start -3 length 2", vec![x(&[4, 6], 2)]),
        ),
        n(
            -1,
            0,
            2,
            Sample::new("[2,3,4] dim -1 start 0 length 2", vec![x(&[2, 3, 4], 3)]),
        ),
        n(
            0,
            2,
            3,
            Sample::new("[5] dim 0 start 2 length 3", vec![x(&[5], 4)]),
        ),
        n(1, 2, 0, Sample::new("length 0", vec![x(&[4, 6], 5)]).edge()),
        n(
            1,
            1,
            2,
            Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 6)]).edge(),
        ),
    ]
}

pub fn narrow_errors() -> Vec<ErrorSample> {
    let n = |s: Sample| {
        s.arg("dim", Arg::Int(0))
            .arg("start", Arg::Int(0))
            .arg("length", Arg::Int(1))
    };
    vec![
        err(
            Sample::new(
                "start 4 + length 3 > 6",
                vec![vals(&[4, 6], DType::F32, 176)],
            )
            .arg("dim", Arg::Int(1))
            .arg("start", Arg::Int(4))
            .arg("length", Arg::Int(3)),
            ErrorKind::Shape,
            "start (4) + length (3) exceeds dimension size (6).",
        ),
        err(
            n(Sample::new("0-d", vec![vals(&[], DType::F32, 177)])),
            ErrorKind::Shape,
            "narrow() cannot be applied to a 0-dim tensor.",
        ),
    ]
}

/// select(dim, index), including negative index and a 1-d input (0-d result).
pub fn select(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let sel = |d: i64, i: i64, s: Sample| s.arg("dim", Arg::Int(d)).arg("index", Arg::Int(i));
    vec![
        sel(
            0,
            1,
            Sample::new("[4,6] dim 0 index 1", vec![x(&[4, 6], 1)]),
        ),
        sel(
            1,
            -1,
            Sample::new("[4,6] dim 1 index -1", vec![x(&[4, 6], 2)]),
        ),
        sel(
            1,
            2,
            Sample::new("[2,3,4] dim 1 index 2", vec![x(&[2, 3, 4], 3)]),
        ),
        sel(
            0,
            3,
            Sample::new("[5] dim 0 index 3 (0-d result)", vec![x(&[5], 4)]),
        ),
        sel(
            -1,
            0,
            Sample::new("[2,3,4] dim -1 index 0", vec![x(&[2, 3, 4], 5)]),
        ),
        sel(
            1,
            2,
            Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 6)]).edge(),
        ),
        sel(
            0,
            -1,
            Sample::new("empty [2,0] dim 0", vec![x(&[2, 0], 7)]).edge(),
        ),
    ]
}

pub fn select_errors() -> Vec<ErrorSample> {
    let sel = |d: i64, i: i64, s: Sample| s.arg("dim", Arg::Int(d)).arg("index", Arg::Int(i));
    vec![
        err(
            sel(
                0,
                4,
                Sample::new("index 4 of size 4", vec![vals(&[4, 6], DType::F32, 178)]),
            ),
            ErrorKind::Index,
            "select(): index 4 out of range for tensor of size [4, 6] at dimension 0",
        ),
        err(
            sel(0, 0, Sample::new("0-d", vec![vals(&[], DType::F32, 179)])),
            ErrorKind::Index,
            "select() cannot be applied to a 0-dim tensor.",
        ),
    ]
}

/// slice(dim, start, end, step): step 2, negative start, end past the size, defaults.
pub fn slice(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let so = |v: i64| Arg::OptInt(Some(v));
    vec![
        Sample::new("[6,4] dim 0 1:5:2", vec![x(&[6, 4], 1)])
            .arg("dim", Arg::Int(0))
            .arg("start", so(1))
            .arg("end", so(5))
            .arg("step", Arg::Int(2)),
        Sample::new("[4,6] dim 1 -3:", vec![x(&[4, 6], 2)])
            .arg("dim", Arg::Int(1))
            .arg("start", so(-3)),
        Sample::new("[2,3,4] dim -1 :3:2", vec![x(&[2, 3, 4], 3)])
            .arg("dim", Arg::Int(-1))
            .arg("end", so(3))
            .arg("step", Arg::Int(2)),
        Sample::new("[5] 0:100 (end clamped)", vec![x(&[5], 4)])
            .arg("start", so(0))
            .arg("end", so(100)),
        Sample::new("[4,6] defaults (everything)", vec![x(&[4, 6], 5)]),
        Sample::new("[4,6] dim 1 -5:-1:3", vec![x(&[4, 6], 6)])
            .arg("dim", Arg::Int(1))
            .arg("start", so(-5))
            .arg("end", so(-1))
            .arg("step", Arg::Int(3)),
        Sample::new("start after end: empty result", vec![x(&[4, 6], 7)])
            .arg("dim", Arg::Int(1))
            .arg("start", so(4))
            .arg("end", so(2))
            .edge(),
        Sample::new("bounds below the start: empty result", vec![x(&[4, 6], 8)])
            .arg("start", so(-100))
            .arg("end", so(-90))
            .edge(),
        Sample::new("empty [0,3] dim 0 1:", vec![x(&[0, 3], 9)])
            .arg("start", so(1))
            .edge(),
    ]
}

pub fn slice_errors() -> Vec<ErrorSample> {
    let x = || vals(&[4, 6], DType::F32, 180);
    vec![
        err(
            Sample::new("step 0", vec![x()]).arg("step", Arg::Int(0)),
            ErrorKind::Value,
            "slice step must be positive",
        ),
        err(
            Sample::new("dim 2 of a 2-d tensor", vec![x()]).arg("dim", Arg::Int(2)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
        err(
            Sample::new("0-d", vec![vals(&[], DType::F32, 181)]),
            ErrorKind::Index,
            "slice() cannot be applied to a 0-dim tensor.",
        ),
    ]
}

/// as_strided(size, stride, storage_offset) on contiguous inputs whose trailing matrices are
/// symmetric: the harness's non-contiguous copy stores such a matrix transposed, i.e. with
/// the same storage contents, so the same geometry reads the same values from it. The
/// reference reads the input's row-major values as the storage.
pub fn as_strided(dtype: DType) -> Vec<Sample> {
    let sym = |batch, n, seed| symmetric(batch, n, dtype, seed);
    let g = |s: Sample, size: &[i64], stride: &[i64], off: Option<i64>| {
        let s = s.arg("size", ints(size)).arg("stride", ints(stride));
        match off {
            Some(o) => s.arg("storage_offset", Arg::OptInt(Some(o))),
            None => s,
        }
    };
    vec![
        g(
            Sample::new("[4,4]: [2,2] block", vec![sym(1, 4, 1)]),
            &[2, 2],
            &[4, 1],
            None,
        ),
        g(
            Sample::new("[4,4]: [3,2] transposed with offset 1", vec![sym(1, 4, 2)]),
            &[3, 2],
            &[1, 4],
            Some(1),
        ),
        g(
            Sample::new("[4,4]: overlapping [3,3] windows", vec![sym(1, 4, 3)]),
            &[3, 3],
            &[1, 1],
            None,
        ),
        g(
            Sample::new("[4,4]: 3-d [2,2,2]", vec![sym(1, 4, 4)]),
            &[2, 2, 2],
            &[8, 1, 4],
            Some(0),
        ),
        g(
            Sample::new("[2,3,3]: [2,2] across batches", vec![sym(2, 3, 5)]),
            &[2, 2],
            &[9, 4],
            None,
        ),
        g(
            Sample::new("[4,4]: 0-d at offset 5", vec![sym(1, 4, 6)]),
            &[],
            &[],
            Some(5),
        ),
        g(
            Sample::new("[4,4]: stride 0 broadcast [2,3]", vec![sym(1, 4, 7)]),
            &[2, 3],
            &[0, 2],
            Some(3),
        ),
        g(
            Sample::new("empty result [0]", vec![sym(1, 4, 8)]),
            &[0],
            &[1],
            None,
        )
        .edge(),
        g(
            Sample::new("empty result [2,0]", vec![sym(1, 4, 9)]),
            &[2, 0],
            &[1, 1],
            Some(2),
        )
        .edge(),
        g(
            Sample::new("0-d input to 0-d", vec![vals(&[], dtype, 10)]),
            &[],
            &[],
            None,
        )
        .edge(),
    ]
}

pub fn as_strided_errors() -> Vec<ErrorSample> {
    let x = || vals(&[2, 2], DType::F32, 182);
    vec![
        err(
            Sample::new("reads past the storage", vec![x()])
                .arg("size", ints(&[3, 3]))
                .arg("stride", ints(&[3, 1])),
            ErrorKind::Shape,
            "out of bounds for storage of size 4",
        ),
        err(
            Sample::new("2 sizes, 1 stride", vec![x()])
                .arg("size", ints(&[2, 2]))
                .arg("stride", ints(&[1])),
            ErrorKind::Shape,
            "mismatch in length of strides and shape",
        ),
    ]
}

/// flatten(start_dim, end_dim).
pub fn flatten(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,4] all dims", vec![x(&[2, 3, 4], 1)]),
        Sample::new("[2,3,4] from dim 1", vec![x(&[2, 3, 4], 2)]).arg("start_dim", Arg::Int(1)),
        Sample::new("[2,3,4] dims 0..1", vec![x(&[2, 3, 4], 3)])
            .arg("start_dim", Arg::Int(0))
            .arg("end_dim", Arg::Int(1)),
        Sample::new("[3,4] dims 1..1 (no-op)", vec![x(&[3, 4], 4)])
            .arg("start_dim", Arg::Int(1))
            .arg("end_dim", Arg::Int(1)),
        Sample::new("[2,3,4] dims -2..-1", vec![x(&[2, 3, 4], 5)])
            .arg("start_dim", Arg::Int(-2))
            .arg("end_dim", Arg::Int(-1)),
        Sample::new("0-d", vec![x(&[], 6)]).edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 7)]).edge(),
    ]
}

pub fn flatten_errors() -> Vec<ErrorSample> {
    let x = || vals(&[2, 3, 4], DType::F32, 183);
    vec![
        err(
            Sample::new("start_dim after end_dim", vec![x()])
                .arg("start_dim", Arg::Int(2))
                .arg("end_dim", Arg::Int(1)),
            ErrorKind::Shape,
            "flatten() has invalid args: start_dim cannot come after end_dim",
        ),
        err(
            Sample::new("start_dim 3 of a 3-d tensor", vec![x()]).arg("start_dim", Arg::Int(3)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}

/// unflatten(dim, sizes), including a -1 size.
pub fn unflatten(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let u = |d: i64, sizes: &[i64], s: Sample| s.arg("dim", Arg::Int(d)).arg("sizes", ints(sizes));
    vec![
        u(
            0,
            &[2, 3],
            Sample::new("[6,4] dim 0 to [2,3]", vec![x(&[6, 4], 1)]),
        ),
        u(
            1,
            &[2, 4],
            Sample::new("[3,8] dim 1 to [2,4]", vec![x(&[3, 8], 2)]),
        ),
        u(
            -1,
            &[3, -1],
            Sample::new("[2,12] dim -1 to [3,-1]", vec![x(&[2, 12], 3)]),
        ),
        u(
            0,
            &[3, 4],
            Sample::new("[12] dim 0 to [3,4]", vec![x(&[12], 4)]),
        ),
        u(
            1,
            &[2, 3],
            Sample::new("empty [0,6] dim 1 to [2,3]", vec![x(&[0, 6], 5)]).edge(),
        ),
        u(
            0,
            &[0, 2],
            Sample::new("empty [0,3] dim 0 to [0,2]", vec![x(&[0, 3], 6)]).edge(),
        ),
    ]
}

pub fn unflatten_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "[4,2] does not multiply to 6",
            vec![vals(&[6, 4], DType::F32, 184)],
        )
        .arg("dim", Arg::Int(0))
        .arg("sizes", ints(&[4, 2])),
        ErrorKind::Shape,
        "don't multiply up to the size of dim 0 (6) in the input tensor",
    )]
}

/// slice_backward(grad_output, input_sizes, dim, start, end, step): grad_output has the
/// slice's shape.
pub fn slice_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let sb = |sizes: &[i64], d: i64, st: i64, e: i64, step: i64, s: Sample| {
        s.arg("input_sizes", ints(sizes))
            .arg("dim", Arg::Int(d))
            .arg("start", Arg::Int(st))
            .arg("end", Arg::Int(e))
            .arg("step", Arg::Int(step))
    };
    vec![
        sb(
            &[4, 6],
            1,
            1,
            5,
            2,
            Sample::new("[4,6] dim 1 1:5:2", vec![x(&[4, 2], 1)]),
        ),
        sb(
            &[4, 6],
            0,
            0,
            3,
            1,
            Sample::new("[4,6] dim 0 0:3", vec![x(&[3, 6], 2)]),
        ),
        sb(
            &[2, 3, 4],
            -1,
            1,
            4,
            1,
            Sample::new("[2,3,4] dim -1 1:4", vec![x(&[2, 3, 3], 3)]),
        ),
        sb(
            &[5, 2],
            0,
            0,
            4,
            2,
            Sample::new("[5,2] dim 0 0:4:2", vec![x(&[2, 2], 4)]),
        ),
        sb(&[7], 0, 2, 7, 3, Sample::new("[7] 2:7:3", vec![x(&[2], 5)])),
        sb(
            &[4, 6],
            1,
            2,
            2,
            1,
            Sample::new("empty slice", vec![x(&[4, 0], 6)]).edge(),
        ),
        sb(
            &[0, 3],
            0,
            0,
            0,
            1,
            Sample::new("empty input [0,3]", vec![x(&[0, 3], 7)]).edge(),
        ),
    ]
}

pub fn slice_backward_errors() -> Vec<ErrorSample> {
    let sb = |sizes: &[i64], d: i64, st: i64, e: i64, step: i64, s: Sample| {
        s.arg("input_sizes", ints(sizes))
            .arg("dim", Arg::Int(d))
            .arg("start", Arg::Int(st))
            .arg("end", Arg::Int(e))
            .arg("step", Arg::Int(step))
    };
    vec![
        err(
            sb(
                &[4, 6],
                1,
                0,
                2,
                1,
                Sample::new(
                    "grad [3,3] for a [4,2] slice",
                    vec![vals(&[3, 3], DType::F32, 185)],
                ),
            ),
            ErrorKind::Shape,
            "The expanded size of the tensor",
        ),
        err(
            sb(
                &[4, 6],
                1,
                0,
                2,
                0,
                Sample::new("step 0", vec![vals(&[4, 2], DType::F32, 186)]),
            ),
            ErrorKind::Value,
            "slice step must be positive",
        ),
    ]
}

/// select_backward(grad_output, input_sizes, dim, index): grad_output has the selection's
/// shape.
pub fn select_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let sb = |sizes: &[i64], d: i64, i: i64, s: Sample| {
        s.arg("input_sizes", ints(sizes))
            .arg("dim", Arg::Int(d))
            .arg("index", Arg::Int(i))
    };
    vec![
        sb(
            &[4, 6],
            0,
            2,
            Sample::new("[4,6] dim 0 index 2", vec![x(&[6], 1)]),
        ),
        sb(
            &[4, 6],
            1,
            -1,
            Sample::new("[4,6] dim 1 index -1", vec![x(&[4], 2)]),
        ),
        sb(
            &[2, 3, 4],
            1,
            1,
            Sample::new("[2,3,4] dim 1 index 1", vec![x(&[2, 4], 3)]),
        ),
        sb(
            &[2, 3, 4],
            -1,
            3,
            Sample::new("[2,3,4] dim -1 index 3", vec![x(&[2, 3], 4)]),
        ),
        sb(
            &[3],
            0,
            1,
            Sample::new("[3] index 1: 0-d grad", vec![x(&[], 5)]).edge(),
        ),
        sb(
            &[0, 3],
            1,
            2,
            Sample::new("empty input [0,3]", vec![x(&[0], 6)]).edge(),
        ),
    ]
}

pub fn select_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("index 4 of size 4", vec![vals(&[6], DType::F32, 187)])
            .arg("input_sizes", ints(&[4, 6]))
            .arg("dim", Arg::Int(0))
            .arg("index", Arg::Int(4)),
        ErrorKind::Index,
        "select(): index 4 out of range",
    )]
}
