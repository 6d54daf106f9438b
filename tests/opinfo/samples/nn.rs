//! Samples for sliding blocks (im2col/col2im) and the nn ops built on them (src/ops/nn.rs).

use super::{err, index, ints, mask, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

fn geometry(s: Sample, k: &[i64], d: &[i64], p: &[i64], st: &[i64]) -> Sample {
    s.arg("kernel_size", ints(k))
        .arg("dilation", ints(d))
        .arg("padding", ints(p))
        .arg("stride", ints(st))
}

pub fn im2col(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        geometry(
            Sample::new("[2,3,4,5] k 2x3 pad 1", vec![x(&[2, 3, 4, 5], 1)]),
            &[2, 3],
            &[1],
            &[1],
            &[1],
        ),
        geometry(
            Sample::new(
                "[2,5,6] unbatched k 3 stride 2 dil 2",
                vec![x(&[2, 5, 6], 2)],
            ),
            &[3, 2],
            &[2, 1],
            &[1, 0],
            &[2],
        ),
        geometry(
            Sample::new("[2,2,7] 1-d k 3 stride 2 pad 1", vec![x(&[2, 2, 7], 3)]),
            &[3],
            &[1],
            &[1],
            &[2],
        ),
        geometry(
            Sample::new("[1,2,3,4,4] 3-d k 2", vec![x(&[1, 2, 3, 4, 4], 4)]),
            &[2, 2, 2],
            &[1],
            &[0],
            &[1],
        ),
        geometry(
            Sample::new("[0,2,3,3] empty batch", vec![x(&[0, 2, 3, 3], 5)]),
            &[2, 2],
            &[1],
            &[0],
            &[1],
        )
        .edge(),
    ]
}

pub fn im2col_errors() -> Vec<ErrorSample> {
    let x = vals(&[1, 2, 3, 3], DType::F32, 90);
    vec![
        err(
            geometry(
                Sample::new("kernel larger than image", vec![x.clone()]),
                &[4, 4],
                &[1],
                &[0],
                &[1],
            ),
            ErrorKind::Shape,
            "calculated shape of the array of sliding blocks is non-positive",
        ),
        err(
            geometry(
                Sample::new("stride 0", vec![x.clone()]),
                &[2, 2],
                &[1],
                &[0],
                &[0],
            ),
            ErrorKind::Value,
            "stride should be greater than zero",
        ),
        err(
            geometry(
                Sample::new(
                    "2-d input for 2-d kernel",
                    vec![vals(&[3, 3], DType::F32, 91)],
                ),
                &[2, 2],
                &[1],
                &[0],
                &[1],
            ),
            ErrorKind::Shape,
            "Expected 3D (unbatched) or 4D (batched) input to im2col",
        ),
    ]
}

/// Columns whose block count matches `output_size` for the geometry.
pub fn col2im(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let with = |s: Sample, out: &[i64]| s.arg("output_size", ints(out));
    vec![
        // 4x5 image, k 2x3, pad 1: blocks (4+2-2+1) x (5+2-3+1) = 5 x 5.
        with(
            geometry(
                Sample::new("[2,18,25] -> [2,3,4,5]", vec![x(&[2, 18, 25], 1)]),
                &[2, 3],
                &[1],
                &[1],
                &[1],
            ),
            &[4, 5],
        ),
        // 5x6 image, k 3x2 dil (2,1) pad (1,0) stride 2: blocks 2 x 3.
        with(
            geometry(
                Sample::new("[12,6] unbatched -> [2,5,6]", vec![x(&[12, 6], 2)]),
                &[3, 2],
                &[2, 1],
                &[1, 0],
                &[2],
            ),
            &[5, 6],
        ),
        // 1-d: 7 long, k 3 pad 1 stride 2: 4 blocks.
        with(
            geometry(
                Sample::new("[2,6,4] -> [2,2,7]", vec![x(&[2, 6, 4], 3)]),
                &[3],
                &[1],
                &[1],
                &[2],
            ),
            &[7],
        ),
        with(
            geometry(
                Sample::new("[0,8,4] empty batch", vec![x(&[0, 8, 4], 4)]),
                &[2, 2],
                &[1],
                &[0],
                &[1],
            ),
            &[3, 3],
        )
        .edge(),
    ]
}

pub fn col2im_errors() -> Vec<ErrorSample> {
    vec![err(
        geometry(
            Sample::new(
                "block count mismatch",
                vec![vals(&[1, 8, 5], DType::F32, 92)],
            ),
            &[2, 2],
            &[1],
            &[0],
            &[1],
        )
        .arg("output_size", ints(&[3, 3])),
        ErrorKind::Shape,
        "expected size of input's dimension 2 to match the calculated number of sliding blocks 4",
    )]
}

// ---------------------------------------------------------------------------------------
// Convolution and pooling
// ---------------------------------------------------------------------------------------

/// Small weights so half-precision sums stay accurate.
fn small(s: &[usize], dtype: DType, seed: u64) -> Tensor {
    super::make(s, dtype, -0.5, 0.5, seed)
}

fn conv_args(s: Sample, stride: &[i64], padding: &[i64], dilation: &[i64], groups: i64) -> Sample {
    s.arg("stride", ints(stride))
        .arg("padding", ints(padding))
        .arg("dilation", ints(dilation))
        .arg("groups", Arg::Int(groups))
}

pub fn conv1d(dtype: DType) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    vec![
        conv_args(
            Sample::new(
                "[2,4,7] * [6,2,3] groups 2 stride 2 pad 1 bias",
                vec![x(&[2, 4, 7], 1), w(&[6, 2, 3], 2), w(&[6], 3)],
            ),
            &[2],
            &[1],
            &[1],
            2,
        ),
        conv_args(
            Sample::new(
                "[3,5] unbatched * [4,3,2] dilation 2",
                vec![x(&[3, 5], 4), w(&[4, 3, 2], 5)],
            ),
            &[1],
            &[0],
            &[2],
            1,
        ),
        conv_args(
            Sample::new(
                "[2,3,6] * [4,3,2]",
                vec![x(&[2, 3, 6], 6), w(&[4, 3, 2], 7)],
            ),
            &[1],
            &[0],
            &[1],
            1,
        ),
        conv_args(
            Sample::new(
                "[0,3,5] empty batch",
                vec![x(&[0, 3, 5], 8), w(&[2, 3, 2], 9)],
            ),
            &[1],
            &[0],
            &[1],
            1,
        )
        .edge(),
    ]
}

pub fn conv1d_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            conv_args(Sample::new("channel mismatch", vec![vals(&[2, 4, 5], f, 100), vals(&[2, 3, 2], f, 101)]), &[1], &[0], &[1], 1),
            ErrorKind::Shape, "Given groups=1, weight of size [2, 3, 2], expected input[2, 4, 5] to have 3 channels, but got 4 channels instead",
        ),
        err(
            conv_args(Sample::new("4-d input", vec![vals(&[1, 2, 3, 4], f, 102), vals(&[2, 2, 2], f, 103)]), &[1], &[0], &[1], 1),
            ErrorKind::Shape, "Expected 2D (unbatched) or 3D (batched) input to conv1d",
        ),
    ]
}

pub fn conv2d(dtype: DType) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    vec![
        conv_args(
            Sample::new(
                "[2,3,5,6] * [4,3,3,3] pad 1 bias",
                vec![x(&[2, 3, 5, 6], 1), w(&[4, 3, 3, 3], 2), w(&[4], 3)],
            ),
            &[1],
            &[1],
            &[1],
            1,
        ),
        conv_args(
            Sample::new(
                "[2,4,5,5] * [6,2,3,2] groups 2 stride (2,1) dilation (1,2)",
                vec![x(&[2, 4, 5, 5], 4), w(&[6, 2, 3, 2], 5)],
            ),
            &[2, 1],
            &[0],
            &[1, 2],
            2,
        ),
        conv_args(
            Sample::new(
                "[3,4,4] unbatched * [2,3,2,2]",
                vec![x(&[3, 4, 4], 6), w(&[2, 3, 2, 2], 7)],
            ),
            &[1],
            &[0],
            &[1],
            1,
        ),
        conv_args(
            Sample::new(
                "[2,2,6,5] * [3,2,3,3] stride 2 pad (1,2)",
                vec![x(&[2, 2, 6, 5], 8), w(&[3, 2, 3, 3], 9), w(&[3], 10)],
            ),
            &[2],
            &[1, 2],
            &[1],
            1,
        ),
        conv_args(
            Sample::new(
                "[0,3,4,4] empty batch",
                vec![x(&[0, 3, 4, 4], 11), w(&[2, 3, 2, 2], 12)],
            ),
            &[1],
            &[0],
            &[1],
            1,
        )
        .edge(),
    ]
}

fn mode_args(s: Sample, padding: &'static str, dilation: &[i64], groups: i64) -> Sample {
    s.arg("stride", ints(&[1]))
        .arg("padding", Arg::Str(padding))
        .arg("dilation", ints(dilation))
        .arg("groups", Arg::Int(groups))
}

/// String padding: 'same' with odd and even kernels (the even ones pad one more on the
/// right) and dilation, 'valid', and an empty batch.
fn conv_padding(dtype: DType, n: usize) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    let shape = |lead: &[usize], spatial: &[usize]| {
        let mut v = lead.to_vec();
        v.extend(&spatial[3 - n..]);
        v
    };
    let (k3, k2) = ([3, 3, 3], [2, 2, 2]);
    let img = if n == 3 { [3, 4, 4] } else { [4, 5, 6] };
    vec![
        mode_args(
            Sample::new(
                "same, odd kernel, bias",
                vec![
                    x(&shape(&[2, 3], &img), 1),
                    w(&shape(&[4, 3], &k3), 2),
                    w(&[4], 3),
                ],
            ),
            "same",
            &[1],
            1,
        ),
        mode_args(
            Sample::new(
                "same, even kernel, dilation 2, groups 2",
                vec![x(&shape(&[2, 4], &img), 4), w(&shape(&[2, 2], &k2), 5)],
            ),
            "same",
            &[2],
            2,
        ),
        mode_args(
            Sample::new(
                "valid",
                vec![x(&shape(&[2, 2], &img), 6), w(&shape(&[3, 2], &k2), 7)],
            ),
            "valid",
            &[1],
            1,
        ),
        mode_args(
            Sample::new(
                "same, even kernel, unbatched",
                vec![x(&shape(&[3], &img), 8), w(&shape(&[2, 3], &k2), 9)],
            ),
            "same",
            &[1],
            1,
        ),
        mode_args(
            Sample::new(
                "same, empty batch",
                vec![x(&shape(&[0, 2], &img), 10), w(&shape(&[3, 2], &k3), 11)],
            ),
            "same",
            &[1],
            1,
        )
        .edge(),
    ]
}

pub fn conv1d_padding(dtype: DType) -> Vec<Sample> {
    conv_padding(dtype, 1)
}

pub fn conv2d_padding(dtype: DType) -> Vec<Sample> {
    conv_padding(dtype, 2)
}

pub fn conv3d_padding(dtype: DType) -> Vec<Sample> {
    conv_padding(dtype, 3)
}

fn conv_padding_errors(n: usize) -> Vec<ErrorSample> {
    let f = DType::F32;
    let (mut xs, mut ws) = (vec![1, 2], vec![2, 2]);
    xs.extend(std::iter::repeat_n(5, n));
    ws.extend(std::iter::repeat_n(3, n));
    vec![
        err(
            Sample::new("unknown string", vec![vals(&xs, f, 196), vals(&ws, f, 197)])
                .arg("padding", Arg::Str("full")),
            ErrorKind::Value,
            "Invalid padding string: 'full'",
        ),
        err(
            Sample::new(
                "same with stride 2",
                vec![vals(&xs, f, 198), vals(&ws, f, 199)],
            )
            .arg("stride", ints(&[2]))
            .arg("padding", Arg::Str("same")),
            ErrorKind::Value,
            "padding='same' is not supported for strided convolutions",
        ),
    ]
}

pub fn conv1d_padding_errors() -> Vec<ErrorSample> {
    conv_padding_errors(1)
}

pub fn conv2d_padding_errors() -> Vec<ErrorSample> {
    conv_padding_errors(2)
}

pub fn conv3d_padding_errors() -> Vec<ErrorSample> {
    conv_padding_errors(3)
}

pub fn conv2d_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            conv_args(
                Sample::new(
                    "groups do not divide channels",
                    vec![vals(&[1, 4, 5, 5], f, 104), vals(&[3, 2, 2, 2], f, 105)],
                ),
                &[1],
                &[0],
                &[1],
                2,
            ),
            ErrorKind::Shape,
            "expected weight to be divisible by 2 at dimension 0",
        ),
        err(
            conv_args(
                Sample::new(
                    "kernel larger than padded input",
                    vec![vals(&[1, 1, 2, 2], f, 106), vals(&[1, 1, 3, 3], f, 107)],
                ),
                &[1],
                &[0],
                &[1],
                1,
            ),
            ErrorKind::Shape,
            "calculated shape of the array of sliding blocks is non-positive",
        ),
        err(
            conv_args(
                Sample::new(
                    "stride with 3 values",
                    vec![vals(&[1, 1, 4, 4], f, 108), vals(&[1, 1, 2, 2], f, 109)],
                ),
                &[1, 1, 1],
                &[0],
                &[1],
                1,
            ),
            ErrorKind::Value,
            "expected stride to be a single integer value or a list of 2 values",
        ),
    ]
}

pub fn conv3d(dtype: DType) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    vec![
        conv_args(
            Sample::new(
                "[1,2,3,4,4] * [3,2,2,2,2] pad 1 stride 2 bias",
                vec![x(&[1, 2, 3, 4, 4], 1), w(&[3, 2, 2, 2, 2], 2), w(&[3], 3)],
            ),
            &[2],
            &[1],
            &[1],
            1,
        ),
        conv_args(
            Sample::new(
                "[2,2,3,3,3] * [2,2,1,2,2]",
                vec![x(&[2, 2, 3, 3, 3], 4), w(&[2, 2, 1, 2, 2], 5)],
            ),
            &[1],
            &[0],
            &[1],
            1,
        ),
        conv_args(
            Sample::new(
                "[2,3,3,3] unbatched * [2,2,2,2,2]",
                vec![x(&[2, 3, 3, 3], 6), w(&[2, 2, 2, 2, 2], 7)],
            ),
            &[1],
            &[0],
            &[1],
            1,
        ),
        conv_args(
            Sample::new(
                "[0,2,2,2,2] empty batch",
                vec![x(&[0, 2, 2, 2, 2], 8), w(&[1, 2, 1, 1, 1], 9)],
            ),
            &[1],
            &[0],
            &[1],
            1,
        )
        .edge(),
    ]
}

pub fn conv3d_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        conv_args(
            Sample::new(
                "2-d weight",
                vec![vals(&[1, 1, 2, 2, 2], f, 110), vals(&[1, 1], f, 111)],
            ),
            &[1],
            &[0],
            &[1],
            1,
        ),
        ErrorKind::Shape,
        "expected a 5-d weight",
    )]
}

fn transpose_args(
    s: Sample,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Sample {
    conv_args(s, stride, padding, dilation, groups).arg("output_padding", ints(output_padding))
}

pub fn conv_transpose1d(dtype: DType) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    vec![
        transpose_args(
            Sample::new(
                "[2,4,5] * [4,3,3] stride 2 pad 1 out_pad 1 bias",
                vec![x(&[2, 4, 5], 1), w(&[4, 3, 3], 2), w(&[3], 3)],
            ),
            &[2],
            &[1],
            &[1],
            1,
            &[1],
        ),
        transpose_args(
            Sample::new(
                "[2,4,5] * [4,2,3] groups 2",
                vec![x(&[2, 4, 5], 4), w(&[4, 2, 3], 5)],
            ),
            &[1],
            &[0],
            &[0],
            2,
            &[1],
        ),
        transpose_args(
            Sample::new(
                "[3,4] unbatched * [3,2,2] dilation 2",
                vec![x(&[3, 4], 6), w(&[3, 2, 2], 7)],
            ),
            &[1],
            &[0],
            &[0],
            1,
            &[2],
        ),
        transpose_args(
            Sample::new(
                "[0,2,3] empty batch",
                vec![x(&[0, 2, 3], 8), w(&[2, 2, 2], 9)],
            ),
            &[1],
            &[0],
            &[0],
            1,
            &[1],
        )
        .edge(),
    ]
}

pub fn conv_transpose1d_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        transpose_args(
            Sample::new(
                "output_padding 2 with stride 2",
                vec![vals(&[1, 2, 3], f, 112), vals(&[2, 2, 2], f, 113)],
            ),
            &[2],
            &[0],
            &[2],
            1,
            &[1],
        ),
        ErrorKind::Value,
        "output padding must be smaller than either stride or dilation",
    )]
}

pub fn conv_transpose2d(dtype: DType) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    vec![
        transpose_args(
            Sample::new(
                "[2,3,3,4] * [3,2,3,3] stride 2 pad 1 out_pad 1 bias",
                vec![x(&[2, 3, 3, 4], 1), w(&[3, 2, 3, 3], 2), w(&[2], 3)],
            ),
            &[2],
            &[1],
            &[1],
            1,
            &[1],
        ),
        transpose_args(
            Sample::new(
                "[2,4,3,3] * [4,2,2,2] groups 2",
                vec![x(&[2, 4, 3, 3], 4), w(&[4, 2, 2, 2], 5)],
            ),
            &[1],
            &[0],
            &[0],
            2,
            &[1],
        ),
        transpose_args(
            Sample::new(
                "[2,3,3] unbatched * [2,3,2,2] dilation 2",
                vec![x(&[2, 3, 3], 6), w(&[2, 3, 2, 2], 7)],
            ),
            &[1],
            &[0],
            &[0],
            1,
            &[2],
        ),
        transpose_args(
            Sample::new(
                "[0,2,3,3] empty batch",
                vec![x(&[0, 2, 3, 3], 8), w(&[2, 2, 2, 2], 9)],
            ),
            &[1],
            &[0],
            &[0],
            1,
            &[1],
        )
        .edge(),
    ]
}

pub fn conv_transpose2d_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        transpose_args(
            Sample::new(
                "channel mismatch",
                vec![vals(&[1, 3, 3, 3], f, 114), vals(&[2, 2, 2, 2], f, 115)],
            ),
            &[1],
            &[0],
            &[0],
            1,
            &[1],
        ),
        ErrorKind::Shape,
        "expected input[1, 3, 3, 3] to have 2 channels, but got 3 channels instead",
    )]
}

fn pool_args(s: Sample, k: &[i64], stride: &[i64], padding: &[i64]) -> Sample {
    s.arg("kernel_size", ints(k))
        .arg("stride", ints(stride))
        .arg("padding", ints(padding))
}

pub fn max_pool1d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::distinct(s, dtype, seed);
    vec![
        pool_args(
            Sample::new("[2,3,8] k 3 stride 2 pad 1", vec![x(&[2, 3, 8], 1)]),
            &[3],
            &[2],
            &[1],
        ),
        pool_args(
            Sample::new("[3,7] unbatched k 2 ceil_mode", vec![x(&[3, 7], 2)]),
            &[2],
            &[],
            &[0],
        )
        .arg("ceil_mode", Arg::Bool(true)),
        pool_args(
            Sample::new("[2,2,9] k 3 dilation 2", vec![x(&[2, 2, 9], 3)]),
            &[3],
            &[1],
            &[0],
        )
        .arg("dilation", ints(&[2])),
        pool_args(
            Sample::new("[0,2,5] empty batch", vec![x(&[0, 2, 5], 4)]),
            &[2],
            &[],
            &[0],
        )
        .edge(),
    ]
}

pub fn max_pool1d_errors() -> Vec<ErrorSample> {
    vec![err(
        pool_args(Sample::new("pad 2 for kernel 3", vec![vals(&[1, 2, 6], DType::F32, 116)]), &[3], &[], &[2]),
        ErrorKind::Value, "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1",
    )]
}

pub fn max_pool2d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::distinct(s, dtype, seed);
    vec![
        pool_args(
            Sample::new(
                "[2,3,6,7] k (3,2) stride (2,1) pad (1,0)",
                vec![x(&[2, 3, 6, 7], 1)],
            ),
            &[3, 2],
            &[2, 1],
            &[1, 0],
        ),
        pool_args(
            Sample::new("[3,5,5] unbatched k 2 ceil_mode", vec![x(&[3, 5, 5], 2)]),
            &[2],
            &[],
            &[0],
        )
        .arg("ceil_mode", Arg::Bool(true)),
        pool_args(
            Sample::new(
                "[1,2,7,7] k 3 stride 2 dilation 2 pad 1",
                vec![x(&[1, 2, 7, 7], 3)],
            ),
            &[3],
            &[2],
            &[1],
        )
        .arg("dilation", ints(&[2])),
        pool_args(
            Sample::new("[0,2,4,4] empty batch", vec![x(&[0, 2, 4, 4], 4)]),
            &[2],
            &[],
            &[0],
        )
        .edge(),
    ]
}

pub fn max_pool2d_errors() -> Vec<ErrorSample> {
    vec![err(
        pool_args(
            Sample::new("2-d input", vec![vals(&[4, 4], DType::F32, 117)]),
            &[2],
            &[],
            &[0],
        ),
        ErrorKind::Shape,
        "Expected 3D (unbatched) or 4D (batched) input to max_pool2d",
    )]
}

pub fn avg_pool1d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        pool_args(
            Sample::new("[2,3,8] k 3 stride 2 pad 1", vec![x(&[2, 3, 8], 1)]),
            &[3],
            &[2],
            &[1],
        ),
        pool_args(
            Sample::new("[3,7] k 2 ceil_mode, pad not counted", vec![x(&[3, 7], 2)]),
            &[2],
            &[],
            &[1],
        )
        .arg("ceil_mode", Arg::Bool(true))
        .arg("count_include_pad", Arg::Bool(false)),
        pool_args(
            Sample::new("[2,2,9] k 4 stride 3", vec![x(&[2, 2, 9], 3)]),
            &[4],
            &[3],
            &[0],
        ),
        pool_args(
            Sample::new("[0,2,5] empty batch", vec![x(&[0, 2, 5], 4)]),
            &[2],
            &[],
            &[0],
        )
        .edge(),
    ]
}

pub fn avg_pool1d_errors() -> Vec<ErrorSample> {
    vec![err(
        pool_args(
            Sample::new("kernel 0", vec![vals(&[1, 2, 6], DType::F32, 118)]),
            &[0],
            &[],
            &[0],
        ),
        ErrorKind::Value,
        "kernel_size, stride and dilation must be greater than zero",
    )]
}

pub fn avg_pool2d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        pool_args(
            Sample::new(
                "[2,3,6,7] k (3,2) stride (2,1) pad (1,0)",
                vec![x(&[2, 3, 6, 7], 1)],
            ),
            &[3, 2],
            &[2, 1],
            &[1, 0],
        ),
        pool_args(
            Sample::new(
                "[3,5,5] k 2 pad 1 ceil_mode, pad not counted",
                vec![x(&[3, 5, 5], 2)],
            ),
            &[2],
            &[],
            &[1],
        )
        .arg("ceil_mode", Arg::Bool(true))
        .arg("count_include_pad", Arg::Bool(false)),
        pool_args(
            Sample::new(
                "[1,2,6,6] k 3 stride 3 divisor 4",
                vec![x(&[1, 2, 6, 6], 3)],
            ),
            &[3],
            &[3],
            &[0],
        )
        .arg("divisor_override", super::opt_int(Some(4))),
        pool_args(
            Sample::new(
                "[2,2,5,5] k 3 stride 2 pad 1 ceil_mode",
                vec![x(&[2, 2, 5, 5], 4)],
            ),
            &[3],
            &[2],
            &[1],
        )
        .arg("ceil_mode", Arg::Bool(true)),
        pool_args(
            Sample::new("[0,2,4,4] empty batch", vec![x(&[0, 2, 4, 4], 5)]),
            &[2],
            &[],
            &[0],
        )
        .edge(),
    ]
}

pub fn avg_pool2d_errors() -> Vec<ErrorSample> {
    vec![err(
        pool_args(
            Sample::new("divisor 0", vec![vals(&[1, 2, 4, 4], DType::F32, 119)]),
            &[2],
            &[],
            &[0],
        )
        .arg("divisor_override", super::opt_int(Some(0))),
        ErrorKind::Value,
        "divisor must be not zero",
    )]
}

pub fn adaptive_avg_pool1d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,7] -> 3", vec![x(&[2, 3, 7], 1)]).arg("output_size", ints(&[3])),
        Sample::new("[3,5] -> 5", vec![x(&[3, 5], 2)]).arg("output_size", ints(&[5])),
        Sample::new("[2,2,4] -> 6 (upsampling)", vec![x(&[2, 2, 4], 3)])
            .arg("output_size", ints(&[6])),
        Sample::new("[0,2,4] empty batch", vec![x(&[0, 2, 4], 4)])
            .arg("output_size", ints(&[2]))
            .edge(),
    ]
}

pub fn adaptive_avg_pool1d_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64", vec![vals(&[1, 2, 4], DType::I64, 120)])
            .arg("output_size", ints(&[2])),
        ErrorKind::DType,
        "not implemented for 'Long'",
    )]
}

pub fn adaptive_avg_pool2d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,7,5] -> (3,2)", vec![x(&[2, 3, 7, 5], 1)])
            .arg("output_size", ints(&[3, 2])),
        Sample::new("[3,4,4] -> (4,4)", vec![x(&[3, 4, 4], 2)]).arg("output_size", ints(&[4, 4])),
        Sample::new("[2,3,5,6] -> (1,1)", vec![x(&[2, 3, 5, 6], 3)])
            .arg("output_size", ints(&[1, 1])),
        Sample::new("[0,2,4,4] empty batch", vec![x(&[0, 2, 4, 4], 4)])
            .arg("output_size", ints(&[2, 2]))
            .edge(),
    ]
}

pub fn adaptive_avg_pool2d_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("2-d input", vec![vals(&[4, 4], DType::F32, 121)])
            .arg("output_size", ints(&[2, 2])),
        ErrorKind::Shape,
        "Expected 3D or 4D tensor",
    )]
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
    vec![err(
        Sample::new(
            "vector @ vector",
            vec![vals(&[3], DType::F32, 127), vals(&[3], DType::F32, 128)],
        ),
        ErrorKind::Shape,
        "vector + matrix @ vector expected, got 1, 1, 1",
    )]
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
    vec![err(
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
    )]
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

// ---------------------------------------------------------------------------------------
// Resampling, embedding, dropout, attention
// ---------------------------------------------------------------------------------------

pub fn upsample_nearest1d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,4] -> 7", vec![x(&[2, 3, 4], 1)]).arg("output_size", ints(&[7])),
        Sample::new("[2,2,5] -> 3", vec![x(&[2, 2, 5], 2)]).arg("output_size", ints(&[3])),
        Sample::new("[1,2,3] -> 6 scale 2", vec![x(&[1, 2, 3], 3)])
            .arg("output_size", ints(&[6]))
            .arg("scales", Arg::Float(2.0)),
        Sample::new("[0,2,3] empty batch", vec![x(&[0, 2, 3], 4)])
            .arg("output_size", ints(&[5]))
            .edge(),
    ]
}

pub fn upsample_nearest1d_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("2-d input", vec![vals(&[2, 3], DType::F32, 135)])
            .arg("output_size", ints(&[4])),
        ErrorKind::Shape,
        "expected a 3D input",
    )]
}

pub fn upsample_nearest2d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,3,4] -> (5,8)", vec![x(&[2, 3, 3, 4], 1)])
            .arg("output_size", ints(&[5, 8])),
        Sample::new("[1,2,5,6] -> (2,3)", vec![x(&[1, 2, 5, 6], 2)])
            .arg("output_size", ints(&[2, 3])),
        Sample::new("[2,2,2,3] -> (4,6)", vec![x(&[2, 2, 2, 3], 3)])
            .arg("output_size", ints(&[4, 6])),
        Sample::new("[0,2,2,2] empty batch", vec![x(&[0, 2, 2, 2], 4)])
            .arg("output_size", ints(&[3, 3]))
            .edge(),
    ]
}

pub fn upsample_nearest2d_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("output size 0", vec![vals(&[1, 1, 2, 2], DType::F32, 136)])
            .arg("output_size", ints(&[0, 2])),
        ErrorKind::Shape,
        "output_size must be 2 positive values",
    )]
}

pub fn upsample_bilinear2d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,3,4] -> (5,7)", vec![x(&[2, 3, 3, 4], 1)])
            .arg("output_size", ints(&[5, 7]))
            .arg("align_corners", Arg::Bool(false)),
        Sample::new(
            "[1,2,4,3] -> (7,5) align_corners",
            vec![x(&[1, 2, 4, 3], 2)],
        )
        .arg("output_size", ints(&[7, 5]))
        .arg("align_corners", Arg::Bool(true)),
        Sample::new("[2,2,6,5] -> (3,2) downsampling", vec![x(&[2, 2, 6, 5], 3)])
            .arg("output_size", ints(&[3, 2]))
            .arg("align_corners", Arg::Bool(false)),
        Sample::new("[0,2,2,2] empty batch", vec![x(&[0, 2, 2, 2], 4)])
            .arg("output_size", ints(&[3, 3]))
            .arg("align_corners", Arg::Bool(false))
            .edge(),
    ]
}

pub fn upsample_bilinear2d_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64", vec![vals(&[1, 1, 2, 2], DType::I64, 137)])
            .arg("output_size", ints(&[3, 3]))
            .arg("align_corners", Arg::Bool(false)),
        ErrorKind::DType,
        "not implemented for 'Long'",
    )]
}

/// The gradient of an upsampling to `output_size` of an input of `input_size`.
fn resize_backward(desc: &str, dtype: DType, input: &[i64], output: &[i64], seed: u64) -> Sample {
    let mut shape: Vec<usize> = input[..2].iter().map(|&v| v as usize).collect();
    shape.extend(output.iter().map(|&v| v as usize));
    Sample::new(desc, vec![vals(&shape, dtype, seed)])
        .arg("output_size", ints(output))
        .arg("input_size", ints(input))
}

pub fn upsample_nearest1d_backward(dtype: DType) -> Vec<Sample> {
    vec![
        resize_backward("[2,3,7] to [2,3,4]", dtype, &[2, 3, 4], &[7], 1),
        resize_backward("[2,2,3] to [2,2,5]", dtype, &[2, 2, 5], &[3], 2),
        resize_backward("[1,2,6] to [1,2,3] scale 2", dtype, &[1, 2, 3], &[6], 3)
            .arg("scales", Arg::Float(2.0)),
        resize_backward("[0,2,5] empty batch", dtype, &[0, 2, 3], &[5], 4).edge(),
    ]
}

/// A gradient of `shape` with the given `output_size` and `input_size`.
fn resize_error(desc: &str, shape: &[usize], output: &[i64], input: &[i64], seed: u64) -> Sample {
    Sample::new(desc, vec![vals(shape, DType::F32, seed)])
        .arg("output_size", ints(output))
        .arg("input_size", ints(input))
}

pub fn upsample_nearest1d_backward_errors() -> Vec<ErrorSample> {
    vec![
        err(
            resize_error("grad_output [1,1,5] for output 4", &[1, 1, 5], &[4], &[1, 1, 2], 138),
            ErrorKind::Shape, "Expected grad_output to have the same shape as output; output.size(2) = 4 but got grad_output.size(2) = 5",
        ),
        err(
            resize_error("input_size of 2 dims", &[1, 1, 4], &[4], &[1, 2], 139),
            ErrorKind::Shape, "It is expected input_size equals to 3, but got size 2",
        ),
    ]
}

pub fn upsample_nearest2d_backward(dtype: DType) -> Vec<Sample> {
    vec![
        resize_backward("[2,3,5,8] to [2,3,3,4]", dtype, &[2, 3, 3, 4], &[5, 8], 1),
        resize_backward("[1,2,2,3] to [1,2,5,6]", dtype, &[1, 2, 5, 6], &[2, 3], 2),
        resize_backward("[2,2,4,6] to [2,2,2,3]", dtype, &[2, 2, 2, 3], &[4, 6], 3),
        resize_backward(
            "[1,2,6,6] to [1,2,3,2] scales 2, 3",
            dtype,
            &[1, 2, 3, 2],
            &[6, 6],
            4,
        )
        .arg("scales_h", Arg::Float(2.0))
        .arg("scales_w", Arg::Float(3.0)),
        resize_backward("[0,2,3,3] empty batch", dtype, &[0, 2, 2, 2], &[3, 3], 5).edge(),
    ]
}

pub fn upsample_nearest2d_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        resize_error(
            "grad_output [1,1,4,5] for output (4,4)",
            &[1, 1, 4, 5],
            &[4, 4],
            &[1, 1, 2, 2],
            140,
        ),
        ErrorKind::Shape,
        "output.size(3) = 4 but got grad_output.size(3) = 5",
    )]
}

pub fn upsample_bilinear2d_backward(dtype: DType) -> Vec<Sample> {
    let align = |s: Sample, a: bool| s.arg("align_corners", Arg::Bool(a));
    vec![
        align(
            resize_backward("[2,3,5,7] to [2,3,3,4]", dtype, &[2, 3, 3, 4], &[5, 7], 1),
            false,
        ),
        align(
            resize_backward(
                "[1,2,7,5] to [1,2,4,3] align_corners",
                dtype,
                &[1, 2, 4, 3],
                &[7, 5],
                2,
            ),
            true,
        ),
        align(
            resize_backward(
                "[2,2,3,2] to [2,2,6,5] downsampling",
                dtype,
                &[2, 2, 6, 5],
                &[3, 2],
                3,
            ),
            false,
        ),
        align(
            resize_backward(
                "[1,2,6,6] to [1,2,3,2] scales 2, 3",
                dtype,
                &[1, 2, 3, 2],
                &[6, 6],
                4,
            ),
            false,
        )
        .arg("scales_h", Arg::Float(2.0))
        .arg("scales_w", Arg::Float(3.0)),
        align(
            resize_backward("[0,2,3,3] empty batch", dtype, &[0, 2, 2, 2], &[3, 3], 5),
            false,
        )
        .edge(),
    ]
}

pub fn upsample_bilinear2d_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        resize_error(
            "grad_output of 3 dims",
            &[1, 1, 4],
            &[4, 4],
            &[1, 1, 2, 2],
            141,
        )
        .arg("align_corners", Arg::Bool(false)),
        ErrorKind::Shape,
        "Expected grad_output to be a tensor of dimension 4 but got: dimension 3",
    )]
}

pub fn pixel_shuffle(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,8,2,3] r 2", vec![x(&[2, 8, 2, 3], 1)]).arg("upscale_factor", Arg::Int(2)),
        Sample::new("[9,2,2] r 3", vec![x(&[9, 2, 2], 2)]).arg("upscale_factor", Arg::Int(3)),
        Sample::new("[2,2,4,3,2] r 1", vec![x(&[2, 2, 4, 3, 2], 3)])
            .arg("upscale_factor", Arg::Int(1)),
        Sample::new("[0,4,2,2] empty batch", vec![x(&[0, 4, 2, 2], 4)])
            .arg("upscale_factor", Arg::Int(2))
            .edge(),
    ]
}

pub fn pixel_shuffle_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("5 channels r 2", vec![vals(&[1, 5, 2, 2], DType::F32, 138)])
            .arg("upscale_factor", Arg::Int(2)),
        ErrorKind::Shape,
        "input.size(-3)=5 is not divisible by 4",
    )]
}

pub fn pixel_unshuffle(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,2,4,6] r 2", vec![x(&[2, 2, 4, 6], 1)])
            .arg("downscale_factor", Arg::Int(2)),
        Sample::new("[1,6,6] r 3", vec![x(&[1, 6, 6], 2)]).arg("downscale_factor", Arg::Int(3)),
        Sample::new("[3,2,2] r 1", vec![x(&[3, 2, 2], 3)]).arg("downscale_factor", Arg::Int(1)),
        Sample::new("[0,1,2,2] empty batch", vec![x(&[0, 1, 2, 2], 4)])
            .arg("downscale_factor", Arg::Int(2))
            .edge(),
    ]
}

pub fn pixel_unshuffle_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("height 3 r 2", vec![vals(&[1, 1, 3, 4], DType::F32, 139)])
            .arg("downscale_factor", Arg::Int(2)),
        ErrorKind::Shape,
        "expects height and width to be divisible by downscale_factor",
    )]
}

/// The first three samples are gradchecked, so they have no padding_idx (its row gets no
/// gradient by definition, which finite differences cannot see); tests/nn.rs checks that.
pub fn embedding(dtype: DType) -> Vec<Sample> {
    let w = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[5,3] by [2,4]",
            vec![w(&[5, 3], 1), index(&[0, 4, 2, 2, 1, 0, 3, 4], &[2, 4])],
        ),
        Sample::new("[4,3] by 0-d", vec![w(&[4, 3], 3), Tensor::from(2i64)]),
        Sample::new(
            "[6,2] by [5]",
            vec![w(&[6, 2], 2), index(&[1, 3, 1, 5, 0], &[5])],
        ),
        Sample::new(
            "[6,2] by [5] padding_idx 1",
            vec![w(&[6, 2], 2), index(&[1, 3, 1, 5, 0], &[5])],
        )
        .arg("padding_idx", Arg::Int(1)),
        Sample::new(
            "[4,3] by [3] padding_idx -2",
            vec![w(&[4, 3], 3), index(&[2, 0, 2], &[3])],
        )
        .arg("padding_idx", Arg::Int(-2)),
        Sample::new("[4,3] by [0]", vec![w(&[4, 3], 4), index(&[], &[0])]).edge(),
    ]
}

pub fn embedding_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "index 5 of 5",
            vec![vals(&[5, 2], DType::F32, 140), index(&[5], &[1])],
        ),
        ErrorKind::Index,
        "index out of range in self",
    )]
}

/// Deterministic cases only (no mask drawn): p = 0, evaluation mode, p = 1. The random
/// mask is tested in tests/nn.rs against its expected statistics.
pub fn dropout(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] p 0 train", vec![x(&[3, 4], 1)])
            .arg("p", Arg::Float(0.0))
            .arg("train", Arg::Bool(true)),
        Sample::new("[2,3] p 0.5 eval", vec![x(&[2, 3], 2)])
            .arg("p", Arg::Float(0.5))
            .arg("train", Arg::Bool(false)),
        Sample::new("[4] p 1 train", vec![x(&[4], 3)])
            .arg("p", Arg::Float(1.0))
            .arg("train", Arg::Bool(true)),
        Sample::new("0-d p 0 train", vec![x(&[], 4)])
            .arg("p", Arg::Float(0.0))
            .arg("train", Arg::Bool(true))
            .edge(),
    ]
}

pub fn dropout_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("p 1.5", vec![vals(&[3], DType::F32, 141)])
            .arg("p", Arg::Float(1.5))
            .arg("train", Arg::Bool(true)),
        ErrorKind::Value,
        "dropout probability has to be between 0 and 1, but got 1.5",
    )]
}

pub fn sdpa(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "q [2,3,4] k [2,5,4] v [2,5,6]",
            vec![x(&[2, 3, 4], 1), x(&[2, 5, 4], 2), x(&[2, 5, 6], 3)],
        ),
        Sample::new(
            "[2,2,4,3] causal",
            vec![
                x(&[2, 2, 4, 3], 4),
                x(&[2, 2, 4, 3], 5),
                x(&[2, 2, 4, 3], 6),
            ],
        )
        .arg("is_causal", Arg::Bool(true)),
        Sample::new(
            "[3,4] float mask [3,5] scale 0.3",
            vec![x(&[3, 4], 7), x(&[5, 4], 8), x(&[5, 2], 9), x(&[3, 5], 10)],
        )
        .arg("scale", Arg::Float(0.3)),
        Sample::new(
            "[2,3,4] bool mask [3,5]",
            vec![
                x(&[2, 3, 4], 11),
                x(&[2, 5, 4], 12),
                x(&[2, 5, 3], 13),
                mask_rows(&[3, 5], 14),
            ],
        ),
        Sample::new(
            "gqa q [1,4,3,2] kv [1,2,3,2]",
            vec![
                x(&[1, 4, 3, 2], 15),
                x(&[1, 2, 3, 2], 16),
                x(&[1, 2, 3, 2], 17),
            ],
        )
        .arg("enable_gqa", Arg::Bool(true)),
        Sample::new(
            "[0,3,4] empty batch",
            vec![x(&[0, 3, 4], 18), x(&[0, 2, 4], 19), x(&[0, 2, 4], 20)],
        )
        .edge(),
    ]
}

/// A bool mask with at least one `true` per row (a fully masked row is NaN in PyTorch too).
fn mask_rows(shape: &[usize], seed: u64) -> Tensor {
    let m = mask(shape, seed);
    let first = Tensor::zeros(shape, DType::Bool)
        .expect("zeros")
        .index_fill_first_col();
    m.logical_or(&first).expect("or")
}

trait FirstCol {
    fn index_fill_first_col(self) -> Tensor;
}

impl FirstCol for Tensor {
    /// `true` in column 0 of every row.
    fn index_fill_first_col(self) -> Tensor {
        let (r, c) = (self.shape()[0], self.shape()[1]);
        let v: Vec<bool> = (0..r * c).map(|i| i % c == 0).collect();
        Tensor::from_vec(v, &[r, c]).expect("shape")
    }
}

pub fn sdpa_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "causal with mask",
            vec![
                vals(&[2, 3], f, 142),
                vals(&[2, 3], f, 143),
                vals(&[2, 3], f, 144),
                vals(&[2, 2], f, 145),
            ],
        )
        .arg("is_causal", Arg::Bool(true)),
        ErrorKind::Value,
        "Explicit attn_mask should not be set when is_causal=True",
    )]
}

// ---------------------------------------------------------------------------------------
// Normalization
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

// ---------------------------------------------------------------------------------------
// Losses and distances
// ---------------------------------------------------------------------------------------

fn reduction(r: i64) -> Arg {
    Arg::Int(r)
}

/// `reduction` and `ignore_index` given explicitly (nll_loss_forward/backward have no
/// defaults).
fn nll_args(s: Sample, reduction: i64, ignore_index: i64) -> Sample {
    s.arg("reduction", Arg::Int(reduction))
        .arg("ignore_index", Arg::Int(ignore_index))
}

pub fn nll_loss_forward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |c: usize, seed| super::make(&[c], dtype, 0.5, 2.0, seed);
    vec![
        nll_args(
            Sample::new(
                "[4,5] mean",
                vec![x(&[4, 5], 1), index(&[0, 4, 2, 2], &[4])],
            ),
            1,
            -100,
        ),
        nll_args(
            Sample::new(
                "[4,3] weight, ignore 1, sum",
                vec![x(&[4, 3], 2), index(&[1, 0, 2, 1], &[4]), w(3, 3)],
            ),
            2,
            1,
        ),
        nll_args(
            Sample::new(
                "[2,3,4] weight none",
                vec![
                    x(&[2, 3, 4], 4),
                    index(&[0, 2, 1, 1, 2, 0, 0, 1], &[2, 4]),
                    w(3, 5),
                ],
            ),
            0,
            -100,
        ),
        nll_args(
            Sample::new(
                "[5] unbatched weighted mean",
                vec![x(&[5], 6), Tensor::from(3i64), w(5, 7)],
            ),
            1,
            -100,
        ),
        nll_args(
            Sample::new(
                "[2,3,2,2] weight mean, ignore 0",
                vec![
                    x(&[2, 3, 2, 2], 8),
                    index(&[1, 0, 2, 2, 0, 1, 1, 2], &[2, 2, 2]),
                    w(3, 9),
                ],
            ),
            1,
            0,
        ),
        nll_args(
            Sample::new("[3] unbatched none", vec![x(&[3], 10), Tensor::from(1i64)]),
            0,
            -100,
        ),
        nll_args(
            Sample::new(
                "[0,3] empty batch sum",
                vec![x(&[0, 3], 11), index(&[], &[0])],
            ),
            2,
            -100,
        )
        .edge(),
    ]
}

pub fn nll_loss_forward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            nll_args(
                Sample::new(
                    "target 5 of 5 classes",
                    vec![vals(&[2, 5], f, 151), index(&[0, 5], &[2])],
                ),
                1,
                -100,
            ),
            ErrorKind::Index, "Target 5 is out of bounds.",
        ),
        err(
            nll_args(
                Sample::new(
                    "batch mismatch",
                    vec![vals(&[3, 5], f, 152), index(&[0, 1], &[2])],
                ),
                1,
                -100,
            ),
            ErrorKind::Shape, "size mismatch (got input: [3, 5], target: [2])",
        ),
        err(
            nll_args(
                Sample::new(
                    "weight of 4 for 5 classes",
                    vec![
                        vals(&[2, 5], f, 153),
                        index(&[0, 1], &[2]),
                        vals(&[4], f, 154),
                    ],
                ),
                1,
                -100,
            ),
            ErrorKind::Shape, "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of shape: [4]",
        ),
        err(
            nll_args(
                Sample::new(
                    "reduction 3",
                    vec![vals(&[2, 5], f, 155), index(&[0, 1], &[2])],
                ),
                3,
                -100,
            ),
            ErrorKind::Value, "3 is not a valid value for reduction",
        ),
    ]
}

pub fn nll_loss_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |c: usize, seed| super::make(&[c], dtype, 0.5, 2.0, seed);
    let total = |seed| super::make(&[], dtype, 1.0, 3.0, seed);
    vec![
        nll_args(
            Sample::new(
                "[4,5] mean",
                vec![
                    x(&[], 1),
                    x(&[4, 5], 2),
                    index(&[0, 4, 2, 2], &[4]),
                    total(3),
                ],
            )
            .absent(3),
            1,
            -100,
        ),
        nll_args(
            Sample::new(
                "[4,3] weight, ignore 1, sum",
                vec![
                    x(&[], 4),
                    x(&[4, 3], 5),
                    index(&[1, 0, 2, 1], &[4]),
                    w(3, 6),
                    total(7),
                ],
            ),
            2,
            1,
        ),
        nll_args(
            Sample::new(
                "[2,3,4] weight none",
                vec![
                    x(&[2, 4], 8),
                    x(&[2, 3, 4], 9),
                    index(&[0, 2, 1, 1, 2, 0, 0, 1], &[2, 4]),
                    w(3, 10),
                    total(11),
                ],
            ),
            0,
            -100,
        ),
        nll_args(
            Sample::new(
                "[5] unbatched weighted mean",
                vec![
                    x(&[], 12),
                    x(&[5], 13),
                    Tensor::from(3i64),
                    w(5, 14),
                    total(15),
                ],
            ),
            1,
            -100,
        ),
        nll_args(
            Sample::new(
                "[2,3,2,2] none, ignore 0",
                vec![
                    x(&[2, 2, 2], 16),
                    x(&[2, 3, 2, 2], 17),
                    index(&[1, 0, 2, 2, 0, 1, 1, 2], &[2, 2, 2]),
                    total(18),
                ],
            )
            .absent(3),
            0,
            0,
        ),
        nll_args(
            Sample::new(
                "[0,3] empty batch sum",
                vec![x(&[], 19), x(&[0, 3], 20), index(&[], &[0]), total(21)],
            )
            .absent(3)
            .edge(),
            2,
            -100,
        ),
    ]
}

pub fn nll_loss_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let case = |desc: &str, go: &[usize], tw: &[usize], t: &[i64]| {
        Sample::new(
            desc,
            vec![
                vals(go, f, 156),
                vals(&[2, 5], f, 157),
                index(t, &[2]),
                vals(tw, f, 158),
            ],
        )
        .absent(3)
    };
    vec![
        err(
            nll_args(
                case("grad_output [2] for a mean", &[2], &[], &[0, 1]),
                1,
                -100,
            ),
            ErrorKind::Shape,
            "Expected a single element grad_output tensor, but got: [2]",
        ),
        err(
            nll_args(case("total_weight [2]", &[], &[2], &[0, 1]), 2, -100),
            ErrorKind::Shape,
            "expected total_weight to be a single element tensor, got: [2] (2 elements)",
        ),
        err(
            nll_args(case("target 7 of 5 classes", &[], &[], &[0, 7]), 2, -100),
            ErrorKind::Index,
            "Target 7 is out of bounds.",
        ),
    ]
}

pub fn nll_loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |c: usize, seed| super::make(&[c], dtype, 0.5, 2.0, seed);
    vec![
        Sample::new(
            "[4,5] mean",
            vec![x(&[4, 5], 1), index(&[0, 4, 2, 2], &[4])],
        ),
        Sample::new(
            "[4,3] weight, ignore 1, sum",
            vec![x(&[4, 3], 2), index(&[1, 0, 2, 1], &[4]), w(3, 3)],
        )
        .arg("ignore_index", Arg::Int(1))
        .arg("reduction", reduction(2)),
        Sample::new(
            "[2,3,4] none",
            vec![x(&[2, 3, 4], 4), index(&[0, 2, 1, 1, 2, 0, 0, 1], &[2, 4])],
        )
        .arg("reduction", reduction(0)),
        Sample::new(
            "[5] unbatched weighted mean",
            vec![x(&[5], 5), Tensor::from(3i64), w(5, 6)],
        ),
        Sample::new(
            "[0,3] empty batch sum",
            vec![x(&[0, 3], 7), index(&[], &[0])],
        )
        .arg("reduction", reduction(2))
        .edge(),
    ]
}

pub fn nll_loss_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new(
                "target 5 of 5 classes",
                vec![vals(&[2, 5], f, 151), index(&[0, 5], &[2])],
            ),
            ErrorKind::Index,
            "Target 5 is out of bounds.",
        ),
        err(
            Sample::new(
                "batch mismatch",
                vec![vals(&[3, 5], f, 152), index(&[0, 1], &[2])],
            ),
            ErrorKind::Shape,
            "Expected input batch_size (3) to match target batch_size (2).",
        ),
    ]
}

pub fn cross_entropy(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let w = |c: usize, seed| super::make(&[c], dtype, 0.5, 2.0, seed);
    let probs = |s: &[usize], seed| x(s, seed).softmax(1).expect("softmax");
    vec![
        Sample::new(
            "[4,5] indices mean",
            vec![x(&[4, 5], 1), index(&[0, 4, 2, 2], &[4])],
        ),
        Sample::new(
            "[4,3] weight, smoothing 0.2, ignore 1",
            vec![x(&[4, 3], 2), index(&[1, 0, 2, 1], &[4]), w(3, 3)],
        )
        .arg("ignore_index", Arg::Int(1))
        .arg("label_smoothing", Arg::Float(0.2)),
        Sample::new(
            "[3,4] probabilities, smoothing 0.1, sum",
            vec![x(&[3, 4], 4), probs(&[3, 4], 5)],
        )
        .arg("label_smoothing", Arg::Float(0.1))
        .arg("reduction", reduction(2)),
        Sample::new(
            "[2,3,4] indices none",
            vec![x(&[2, 3, 4], 6), index(&[0, 2, 1, 1, 2, 0, 0, 1], &[2, 4])],
        )
        .arg("reduction", reduction(0)),
        Sample::new(
            "[3,4] smoothing 0.3 mean no weight",
            vec![x(&[3, 4], 7), index(&[3, 0, 1], &[3])],
        )
        .arg("label_smoothing", Arg::Float(0.3)),
        Sample::new(
            "[0,3] empty batch sum",
            vec![x(&[0, 3], 8), index(&[], &[0])],
        )
        .arg("reduction", reduction(2))
        .edge(),
    ]
}

pub fn cross_entropy_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "smoothing 1.5",
            vec![vals(&[2, 3], DType::F32, 153), index(&[0, 1], &[2])],
        )
        .arg("label_smoothing", Arg::Float(1.5)),
        ErrorKind::Value,
        "label_smoothing must be between 0.0 and 1.0. Got: 1.5",
    )]
}

pub fn bce(dtype: DType) -> Vec<Sample> {
    let p = |s: &[usize], seed| super::make(s, dtype, 0.05, 0.95, seed);
    let t = |s: &[usize], seed| super::make(s, dtype, 0.0, 1.0, seed);
    vec![
        Sample::new("[3,4] mean", vec![p(&[3, 4], 1), t(&[3, 4], 2)]),
        Sample::new(
            "[5] weight sum",
            vec![
                p(&[5], 3),
                t(&[5], 4),
                super::make(&[5], dtype, 0.5, 2.0, 5),
            ],
        )
        .arg("reduction", reduction(2)),
        Sample::new("[2,3] none", vec![p(&[2, 3], 6), t(&[2, 3], 7)])
            .arg("reduction", reduction(0)),
        Sample::new("[0] mean of nothing", vec![p(&[0], 8), t(&[0], 9)])
            .arg("reduction", reduction(2))
            .edge(),
    ]
}

pub fn bce_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new(
                "input above 1",
                vec![super::make(&[3], f, 1.5, 2.0, 154), vals(&[3], f, 155)],
            ),
            ErrorKind::Value,
            "all elements of input should be between 0 and 1",
        ),
        err(
            Sample::new(
                "shape mismatch",
                vec![super::make(&[2, 3], f, 0.1, 0.9, 156), vals(&[3], f, 157)],
            ),
            ErrorKind::Value,
            "Please ensure they have the same size.",
        ),
    ]
}

pub fn bce_backward(dtype: DType) -> Vec<Sample> {
    let g = |s: &[usize], seed| vals(s, dtype, seed);
    let p = |s: &[usize], seed| super::make(s, dtype, 0.05, 0.95, seed);
    let t = |s: &[usize], seed| super::make(s, dtype, 0.0, 1.0, seed);
    vec![
        Sample::new("[3,4] mean", vec![g(&[], 1), p(&[3, 4], 2), t(&[3, 4], 3)]),
        Sample::new(
            "[5] weight sum",
            vec![
                g(&[], 4),
                p(&[5], 5),
                t(&[5], 6),
                super::make(&[5], dtype, 0.5, 2.0, 7),
            ],
        )
        .arg("reduction", reduction(2)),
        Sample::new(
            "[2,3] none, weight [3]",
            vec![
                g(&[2, 3], 8),
                p(&[2, 3], 9),
                t(&[2, 3], 10),
                super::make(&[3], dtype, 0.5, 2.0, 11),
            ],
        )
        .arg("reduction", reduction(0)),
        Sample::new(
            "[0] sum of nothing",
            vec![g(&[], 12), p(&[0], 13), t(&[0], 14)],
        )
        .arg("reduction", reduction(2))
        .edge(),
    ]
}

pub fn bce_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "shape mismatch",
            vec![
                vals(&[], f, 159),
                super::make(&[2, 3], f, 0.1, 0.9, 160),
                vals(&[3], f, 161),
            ],
        ),
        ErrorKind::Value,
        "Please ensure they have the same size.",
    )]
}

pub fn bce_logits(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let t = |s: &[usize], seed| super::make(s, dtype, 0.0, 1.0, seed);
    let pos = |s: &[usize], seed| super::make(s, dtype, 0.5, 3.0, seed);
    vec![
        Sample::new("[3,4] mean", vec![x(&[3, 4], 1), t(&[3, 4], 2)]),
        Sample::new(
            "[2,3] weight + pos_weight [3] sum",
            vec![x(&[2, 3], 3), t(&[2, 3], 4), pos(&[2, 3], 5), pos(&[3], 6)],
        )
        .arg("reduction", reduction(2)),
        Sample::new("[5] none", vec![x(&[5], 7), t(&[5], 8)]).arg("reduction", reduction(0)),
        Sample::new("0-d mean", vec![x(&[], 9), t(&[], 10)]).edge(),
    ]
}

pub fn bce_logits_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "shape mismatch",
            vec![vals(&[2, 3], f, 158), vals(&[2], f, 159)],
        ),
        ErrorKind::Value,
        "Please ensure they have the same size.",
    )]
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

/// Distinct values, so each window has one maximum (its gradient has one destination).
pub fn adaptive_max_pool2d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::distinct(s, dtype, seed);
    vec![
        Sample::new("[2,3,7,5] -> (3,2)", vec![x(&[2, 3, 7, 5], 1)])
            .arg("output_size", ints(&[3, 2])),
        Sample::new("[3,4,4] -> (4,4)", vec![x(&[3, 4, 4], 2)]).arg("output_size", ints(&[4, 4])),
        Sample::new(
            "[2,2,5,6] -> (2,4) overlapping windows",
            vec![x(&[2, 2, 5, 6], 3)],
        )
        .arg("output_size", ints(&[2, 4])),
        Sample::new("[0,2,4,4] empty batch", vec![x(&[0, 2, 4, 4], 4)])
            .arg("output_size", ints(&[2, 2]))
            .edge(),
        Sample::new(
            "[2,5,6] with NaN and ±inf",
            vec![with_nan(&[2, 5, 6], dtype)],
        )
        .arg("output_size", ints(&[2, 3]))
        .edge(),
        Sample::new("[2,3,3] -> (0,2) no cells", vec![x(&[2, 3, 3], 5)])
            .arg("output_size", ints(&[0, 2]))
            .edge(),
    ]
}

/// Values `0..n` with NaN at every 7th element and ±inf at a few others, so some adaptive
/// windows hold a NaN (which wins) and some an infinity.
fn with_nan(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| match i % 7 {
            3 => f64::NAN,
            5 => f64::INFINITY,
            6 => f64::NEG_INFINITY,
            _ => ((i * 5) % 11) as f64 - 5.0,
        })
        .collect();
    Tensor::from_vec(v, shape)
        .and_then(|t| t.to_dtype(dtype))
        .expect("NaN sample")
}

pub fn adaptive_max_pool2d_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("2-d input", vec![vals(&[4, 4], DType::F32, 190)])
                .arg("output_size", ints(&[2, 2])),
            ErrorKind::Shape,
            "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [4, 4]",
        ),
        err(
            Sample::new("empty height", vec![vals(&[2, 0, 4], DType::F32, 191)])
                .arg("output_size", ints(&[2, 2])),
            ErrorKind::Shape,
            "with dimension 1 being empty",
        ),
        err(
            Sample::new(
                "negative output size",
                vec![vals(&[2, 3, 4], DType::F32, 192)],
            )
            .arg("output_size", ints(&[-1, 2])),
            ErrorKind::Value,
            "elements of output_size must be greater than or equal to 0",
        ),
        err(
            Sample::new("integer input", vec![index(&[1; 24], &[2, 3, 4])])
                .arg("output_size", ints(&[2, 2])),
            ErrorKind::DType,
            "not implemented for 'Long'",
        ),
    ]
}

pub fn adaptive_max_pool1d(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::distinct(s, dtype, seed);
    vec![
        Sample::new("[2,3,7] -> 3", vec![x(&[2, 3, 7], 11)]).arg("output_size", ints(&[3])),
        Sample::new("[4,5] -> 5 (unbatched)", vec![x(&[4, 5], 12)]).arg("output_size", ints(&[5])),
        Sample::new("[2,2,6] -> 4 overlapping", vec![x(&[2, 2, 6], 13)])
            .arg("output_size", ints(&[4])),
        Sample::new("[0,2,4] empty batch", vec![x(&[0, 2, 4], 14)])
            .arg("output_size", ints(&[2]))
            .edge(),
    ]
}

pub fn adaptive_max_pool1d_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("4-d input", vec![vals(&[1, 2, 3, 4], DType::F32, 194)])
                .arg("output_size", ints(&[2])),
            ErrorKind::Shape, "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)",
        ),
        err(
            Sample::new("two output sizes", vec![vals(&[2, 3, 4], DType::F32, 195)])
                .arg("output_size", ints(&[2, 2])),
            ErrorKind::Shape, "adaptive_max_pool1d() argument 'output_size' should contain one int (got 2)",
        ),
    ]
}

/// embedding_bag(weight, indices, offsets, ..., per_sample_weights, ...): sums (weighted),
/// means and column maxima of bags, with padding, empty bags and `include_last_offset`. The
/// gradcheck samples come first; `scale_grad_by_freq` scales the gradient on purpose, so its
/// samples come later (tests/nn.rs checks that gradient).
pub fn embedding_bag(dtype: DType) -> Vec<Sample> {
    let w = |s: &[usize], seed| vals(s, dtype, seed);
    // Pairwise distinct, so a bag's column maximum is never tied.
    let wd = |s: &[usize], seed| super::distinct(s, dtype, seed);
    let i32s = |v: &[i32]| Tensor::from_vec(v.to_vec(), &[v.len()]).expect("index");
    let bag = |desc: &str, tensors: Vec<Tensor>, mode: i64| {
        Sample::new(desc, tensors).arg("mode", Arg::Int(mode))
    };
    vec![
        bag(
            "sum [5,3] bags [0,2,2,5] of 6, per-sample weights",
            vec![
                w(&[5, 3], 1),
                index(&[4, 0, 2, 2, 1, 0], &[6]),
                index(&[0, 2, 2, 5], &[4]),
                w(&[6], 2),
            ],
            0,
        ),
        bag(
            "mean [6,2] bags [0,3,4] of 7, padding_idx 1",
            vec![
                w(&[6, 2], 3),
                index(&[1, 3, 5, 1, 0, 2, 4], &[7]),
                index(&[0, 3, 4], &[3]),
            ],
            1,
        )
        .arg("padding_idx", Arg::OptInt(Some(1))),
        bag(
            "max [5,3] bags [0,2,5] of 6",
            vec![
                wd(&[5, 3], 4),
                index(&[0, 3, 1, 4, 2, 3], &[6]),
                index(&[0, 2, 5], &[3]),
            ],
            2,
        ),
        bag(
            "sum [4,3] include_last_offset [0,2,4,6]",
            vec![
                w(&[4, 3], 5),
                index(&[3, 0, 1, 1, 2, 0], &[6]),
                index(&[0, 2, 4, 6], &[4]),
            ],
            0,
        )
        .arg("include_last_offset", Arg::Bool(true)),
        bag(
            "mean [4,3] empty first bag, scale_grad_by_freq",
            vec![
                w(&[4, 3], 6),
                index(&[2, 2, 3], &[3]),
                index(&[0, 0, 1], &[3]),
            ],
            1,
        )
        .arg("scale_grad_by_freq", Arg::Bool(true)),
        bag(
            "sum [5,2] int32 indices and offsets, padding_idx -1",
            vec![w(&[5, 2], 7), i32s(&[4, 1, 4, 0]), i32s(&[0, 1])],
            0,
        )
        .arg("padding_idx", Arg::OptInt(Some(-1))),
        bag(
            "max [5,3] bag of padding only, padding_idx 2",
            vec![
                wd(&[5, 3], 8),
                index(&[2, 2, 0, 4, 1], &[5]),
                index(&[0, 2], &[2]),
            ],
            2,
        )
        .arg("padding_idx", Arg::OptInt(Some(2))),
        bag(
            "sum [3,2] per-sample weights, scale_grad_by_freq, one bag",
            vec![
                w(&[3, 2], 9),
                index(&[1, 1, 2], &[3]),
                index(&[0], &[1]),
                w(&[3], 10),
            ],
            0,
        )
        .arg("scale_grad_by_freq", Arg::Bool(true)),
        bag(
            "mean [3,2] no indices, one empty bag",
            vec![w(&[3, 2], 11), index(&[], &[0]), index(&[0], &[1])],
            1,
        )
        .edge(),
        bag(
            "max [3,2] no bags",
            vec![w(&[3, 2], 12), index(&[], &[0]), index(&[], &[0])],
            2,
        )
        .edge(),
    ]
}

pub fn embedding_bag_errors() -> Vec<ErrorSample> {
    let w = || vals(&[5, 2], DType::F32, 180);
    let bag = |desc: &str, idx: Tensor, offs: Tensor| Sample::new(desc, vec![w(), idx, offs]);
    vec![
        err(
            bag("index 5 of 5", index(&[0, 5], &[2]), index(&[0], &[1])),
            ErrorKind::Index, "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 5",
        ),
        err(
            bag("offsets[0] = 1", index(&[0, 1], &[2]), index(&[1], &[1])),
            ErrorKind::Value, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got 1",
        ),
        err(
            bag("offsets[-1] = 3 of 2", index(&[0, 1], &[2]), index(&[0, 3], &[2])),
            ErrorKind::Value, "offsets[-1] can not be greater than input's length 2 but got offsets[-1] of 3",
        ),
        err(
            bag("decreasing offsets", index(&[0, 1, 2], &[3]), index(&[0, 2, 1], &[3])),
            ErrorKind::Value, "offsets has to be non-decreasing, but offsets[2] = 1 is less than offsets[1] = 2",
        ),
        err(
            bag(
                "float indices",
                Tensor::from(vec![0.0f32, 1.0]),
                index(&[0], &[1]),
            ),
            ErrorKind::DType, "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got Float instead",
        ),
        err(
            bag("2-d indices", index(&[0, 1, 1, 0], &[2, 2]), index(&[0], &[1])),
            ErrorKind::Shape, "if input is 2D, then offsets has to be None",
        ),
        err(
            Sample::new(
                "1-d weight",
                vec![vals(&[5], DType::F32, 181), index(&[0], &[1]), index(&[0], &[1])],
            ),
            ErrorKind::Shape, "weight has to be a 2D Tensor, but got Tensor of dimension 1",
        ),
        err(
            Sample::new(
                "per-sample weights in mean mode",
                vec![
                    w(),
                    index(&[0, 1], &[2]),
                    index(&[0], &[1]),
                    vals(&[2], DType::F32, 185),
                ],
            )
            .arg("mode", Arg::Int(1)),
            ErrorKind::Value, "embedding_bag: per_sample_weights only supported with mode='sum'",
        ),
        err(
            bag("padding_idx 5 of 5", index(&[0, 1], &[2]), index(&[0], &[1]))
                .arg("padding_idx", Arg::OptInt(Some(5))),
            ErrorKind::Value, "padding_idx must be within the number of embeddings, -5 through 4, but got 5",
        ),
        err(
            bag("mode 3", index(&[0, 1], &[2]), index(&[0], &[1])).arg("mode", Arg::Int(3)),
            ErrorKind::Value, "mode has to be one of sum (0), mean (1) or max (2), but got 3",
        ),
        err(
            bag("sparse", index(&[0, 1], &[2]), index(&[0], &[1])).arg("sparse", Arg::Bool(true)),
            ErrorKind::NotImplemented, "sparse gradients are not supported by kiln",
        ),
        err(
            bag("include_last_offset without offsets", index(&[], &[0]), index(&[], &[0]))
                .arg("include_last_offset", Arg::Bool(true)),
            ErrorKind::Value, "include_last_offset: number of offset should be at least 1",
        ),
    ]
}

/// embedding_bag_functional(input, weight, offsets, ..., mode, ...): F.embedding_bag, with
/// 2-D inputs (a bag per row) and string modes; default mode "mean".
pub fn embedding_bag_functional(dtype: DType) -> Vec<Sample> {
    let w = |s: &[usize], seed| vals(s, dtype, seed);
    let wd = |s: &[usize], seed| super::distinct(s, dtype, seed);
    vec![
        Sample::new(
            "[2,3] input, mean",
            vec![index(&[0, 4, 2, 3, 3, 1], &[2, 3]), w(&[5, 3], 1)],
        ),
        Sample::new(
            "1-d input, offsets, sum with per-sample weights",
            vec![
                index(&[1, 0, 3, 2], &[4]),
                w(&[4, 2], 2),
                index(&[0, 1], &[2]),
                w(&[4], 3),
            ],
        )
        .arg("mode", Arg::Str("sum")),
        Sample::new(
            "[3,2] input, max",
            vec![index(&[0, 1, 2, 3, 4, 0], &[3, 2]), wd(&[5, 3], 4)],
        )
        .arg("mode", Arg::Str("max")),
        Sample::new(
            "[2,3] input, sum, padding_idx 0",
            vec![index(&[0, 1, 2, 0, 0, 0], &[2, 3]), w(&[3, 2], 5)],
        )
        .arg("mode", Arg::Str("sum"))
        .arg("padding_idx", Arg::OptInt(Some(0))),
        Sample::new(
            "[2,0] input: two empty bags",
            vec![index(&[], &[2, 0]), w(&[3, 2], 6)],
        )
        .edge(),
    ]
}

pub fn embedding_bag_functional_errors() -> Vec<ErrorSample> {
    let w = || vals(&[5, 2], DType::F32, 182);
    vec![
        err(
            Sample::new(
                "2-d input with offsets",
                vec![index(&[0, 1, 1, 0], &[2, 2]), w(), index(&[0], &[1])],
            ),
            ErrorKind::Shape, "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. However, found offsets of type Tensor",
        ),
        err(
            Sample::new("1-d input without offsets", vec![index(&[0, 1], &[2]), w()]),
            ErrorKind::Value, "offsets has to be a 1D Tensor but got None",
        ),
        err(
            Sample::new("3-d input", vec![index(&[0; 8], &[2, 2, 2]), w()]),
            ErrorKind::Shape, "input has to be 1D or 2D Tensor, but got Tensor of dimension 3",
        ),
        err(
            Sample::new("mode min", vec![index(&[0, 1, 1, 0], &[2, 2]), w()])
                .arg("mode", Arg::Str("min")),
            ErrorKind::Value, "mode has to be one of sum, mean or max",
        ),
        err(
            Sample::new("max with scale_grad_by_freq", vec![index(&[0, 1, 1, 0], &[2, 2]), w()])
                .arg("mode", Arg::Str("max"))
                .arg("scale_grad_by_freq", Arg::Bool(true)),
            ErrorKind::Value, "max mode does not support scaling the gradient by the frequency",
        ),
        err(
            Sample::new(
                "per-sample weights of another shape",
                vec![
                    index(&[0, 1], &[2]),
                    w(),
                    index(&[0], &[1]),
                    vals(&[3], DType::F32, 183),
                ],
            )
            .arg("mode", Arg::Str("sum")),
            ErrorKind::Shape, "embedding_bag: If per_sample_weights ([3]) is not None, then it must have the same shape as the input ([2])",
        ),
        err(
            Sample::new(
                "per-sample weights in mean mode",
                vec![
                    index(&[0, 1], &[2]),
                    w(),
                    index(&[0], &[1]),
                    vals(&[2], DType::F32, 184),
                ],
            ),
            ErrorKind::Value, "per_sample_weights is only supported for mode='sum' (got mode='mean')",
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
