//! Samples for sliding blocks (im2col/col2im) and convolutions (src/ops/nn.rs).

use super::{err, ints, small, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind};

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
        // 3x8 image, k 2x3 dil (1,3) pad (1,3) stride (1,3): blocks 4 x 3; the outer
        // kernel columns' taps fall off the left or right edge for some blocks.
        with(
            geometry(
                Sample::new(
                    "[1,6,12] -> [1,1,3,8] wide dilation",
                    vec![x(&[1, 6, 12], 5)],
                ),
                &[2, 3],
                &[1, 3],
                &[1, 3],
                &[1, 3],
            ),
            &[3, 8],
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
// Convolution
// ---------------------------------------------------------------------------------------

fn conv_args(s: Sample, stride: &[i64], padding: &[i64], dilation: &[i64], groups: i64) -> Sample {
    s.arg("stride", ints(stride))
        .arg("padding", ints(padding))
        .arg("dilation", ints(dilation))
        .arg("groups", Arg::Int(groups))
}

fn fwd_args(s: Sample, stride: &[i64], padding: &[i64], dilation: &[i64]) -> Sample {
    s.arg("stride", ints(stride))
        .arg("padding", ints(padding))
        .arg("dilation", ints(dilation))
}

/// `_conv_forward` (batched, one group): 1-, 2- and 3-d; a contraction over two `k` blocks
/// of the implicit GEMM (C*K = 261 > 256) and more output positions than one column block
/// (361 > 256, ragged); strides and dilations; padding wider than the kernel (the input
/// gradient then takes the col2im path); an empty batch.
pub fn conv_forward(dtype: DType) -> Vec<Sample> {
    let (x, w) = (
        |s: &[usize], seed| vals(s, dtype, seed),
        |s: &[usize], seed| small(s, dtype, seed),
    );
    let bias = |mut s: Sample, o: usize, seed| {
        s.tensors.push(small(&[o], dtype, seed));
        s
    };
    // A trailing `Tensor?` left out is None.
    let none = |s: Sample| s;
    vec![
        fwd_args(
            bias(
                Sample::new(
                    "[2,3,5,6] * [4,3,3,3] pad 1 bias",
                    vec![x(&[2, 3, 5, 6], 1), w(&[4, 3, 3, 3], 2)],
                ),
                4,
                3,
            ),
            &[1],
            &[1],
            &[1],
        ),
        fwd_args(
            bias(
                Sample::new(
                    "[2,2,6,5] * [3,2,3,3] stride 2 pad (1,2) bias",
                    vec![x(&[2, 2, 6, 5], 4), w(&[3, 2, 3, 3], 5)],
                ),
                3,
                6,
            ),
            &[2],
            &[1, 2],
            &[1],
        ),
        fwd_args(
            none(Sample::new(
                "[2,4,5,5] * [5,4,3,2] stride (2,1) dilation (1,2)",
                vec![x(&[2, 4, 5, 5], 7), w(&[5, 4, 3, 2], 8)],
            )),
            &[2, 1],
            &[0],
            &[1, 2],
        ),
        fwd_args(
            bias(
                Sample::new(
                    "[1,2,7] 1-d * [3,2,3] dilation 2 pad 2",
                    vec![x(&[1, 2, 7], 9), w(&[3, 2, 3], 10)],
                ),
                3,
                11,
            ),
            &[1],
            &[2],
            &[2],
        ),
        fwd_args(
            none(Sample::new(
                "[1,2,3,4,4] 3-d * [2,2,2,2,2] pad 1",
                vec![x(&[1, 2, 3, 4, 4], 12), w(&[2, 2, 2, 2, 2], 13)],
            )),
            &[1],
            &[1],
            &[1],
        ),
        fwd_args(
            bias(
                Sample::new(
                    "[1,29,4,4] * [7,29,3,3] pad 1: two k blocks",
                    vec![x(&[1, 29, 4, 4], 14), w(&[7, 29, 3, 3], 15)],
                ),
                7,
                16,
            ),
            &[1],
            &[1],
            &[1],
        ),
        fwd_args(
            none(Sample::new(
                "[1,2,20,19] * [2,2,2,3] pad (0,1): two column blocks",
                vec![x(&[1, 2, 20, 19], 17), w(&[2, 2, 2, 3], 18)],
            )),
            &[1],
            &[0, 1],
            &[1],
        ),
        fwd_args(
            bias(
                Sample::new(
                    "[1,2,4,4] * [3,2,1,1] pad 1",
                    vec![x(&[1, 2, 4, 4], 19), w(&[3, 2, 1, 1], 20)],
                ),
                3,
                21,
            ),
            &[1],
            &[1],
            &[1],
        ),
        fwd_args(
            none(Sample::new(
                "[0,3,4,4] empty batch",
                vec![x(&[0, 3, 4, 4], 22), w(&[2, 3, 2, 2], 23)],
            )),
            &[1],
            &[0],
            &[1],
        )
        .edge(),
    ]
}

pub fn conv_forward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            fwd_args(Sample::new("channel mismatch", vec![vals(&[1, 4, 5, 5], f, 120), vals(&[2, 3, 2, 2], f, 121)]), &[1], &[0], &[1]),
            ErrorKind::Shape, "Given groups=1, weight of size [2, 3, 2, 2], expected input[1, 4, 5, 5] to have 3 channels, but got 4 channels instead",
        ),
        err(
            fwd_args(Sample::new("unbatched input", vec![vals(&[4, 5, 5], f, 122), vals(&[2, 4, 2, 2], f, 123)]), &[1], &[0], &[1]),
            ErrorKind::Shape, "_conv_forward: expected a batched input [B, C, *S]",
        ),
        err(
            fwd_args(Sample::new("bias size", vec![vals(&[1, 4, 5, 5], f, 124), vals(&[2, 4, 2, 2], f, 125), vals(&[3], f, 126)]), &[1], &[0], &[1]),
            ErrorKind::Shape, "expected bias to be 1-dimensional with 2 elements, but got bias of size [3] instead",
        ),
        err(
            fwd_args(Sample::new("kernel larger than the input", vec![vals(&[1, 1, 2, 2], f, 127), vals(&[1, 1, 3, 3], f, 128)]), &[1], &[0], &[1]),
            ErrorKind::Shape, "calculated shape of the array of sliding blocks is non-positive",
        ),
    ]
}

/// `_conv_weight_backward`: the geometries of `conv_forward`'s samples, each with an output
/// gradient of the output's shape (the 361 positions of one take two `k` blocks here).
pub fn conv_weight_backward(dtype: DType) -> Vec<Sample> {
    #[allow(clippy::type_complexity)]
    let cases: [(&str, &[usize], usize, &[i64], &[i64], &[i64], &[i64]); 8] = [
        (
            "[2,3,5,6] k 3x3 pad 1",
            &[2, 3, 5, 6],
            4,
            &[3, 3],
            &[1],
            &[1],
            &[1],
        ),
        (
            "[2,2,6,5] k 3x3 stride 2 pad (1,2)",
            &[2, 2, 6, 5],
            3,
            &[3, 3],
            &[2],
            &[1, 2],
            &[1],
        ),
        (
            "[2,4,5,5] k 3x2 stride (2,1) dilation (1,2)",
            &[2, 4, 5, 5],
            5,
            &[3, 2],
            &[2, 1],
            &[0],
            &[1, 2],
        ),
        (
            "[1,2,7] 1-d k 3 dilation 2 pad 2",
            &[1, 2, 7],
            3,
            &[3],
            &[1],
            &[2],
            &[2],
        ),
        (
            "[1,2,3,4,4] 3-d k 2 pad 1",
            &[1, 2, 3, 4, 4],
            2,
            &[2, 2, 2],
            &[1],
            &[1],
            &[1],
        ),
        (
            "[1,29,4,4] k 3x3 pad 1",
            &[1, 29, 4, 4],
            7,
            &[3, 3],
            &[1],
            &[1],
            &[1],
        ),
        (
            "[1,2,20,19] k 2x3 pad (0,1): two k blocks",
            &[1, 2, 20, 19],
            2,
            &[2, 3],
            &[1],
            &[0, 1],
            &[1],
        ),
        (
            "[0,3,4,4] empty batch",
            &[0, 3, 4, 4],
            2,
            &[2, 2],
            &[1],
            &[0],
            &[1],
        ),
    ];
    cases
        .iter()
        .enumerate()
        .map(|(i, &(desc, xs, o, k, st, pd, dl))| {
            let n = k.len();
            let at = |v: &[i64], d: usize| if v.len() == 1 { v[0] } else { v[d] };
            let mut gs = vec![xs[0], o];
            gs.extend((0..n).map(|d| {
                ((xs[2 + d] as i64 + 2 * at(pd, d) - at(dl, d) * (k[d] - 1) - 1) / at(st, d) + 1)
                    as usize
            }));
            let seed = 40 + 2 * i as u64;
            let s = Sample::new(
                desc,
                vec![vals(&gs, dtype, seed), vals(xs, dtype, seed + 1)],
            )
            .arg("kernel_size", ints(k))
            .arg("stride", ints(st))
            .arg("padding", ints(pd))
            .arg("dilation", ints(dl));
            if xs[0] == 0 {
                s.edge()
            } else {
                s
            }
        })
        .collect()
}

pub fn conv_weight_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "grad_output of the wrong size",
            vec![vals(&[1, 2, 3, 3], f, 130), vals(&[1, 3, 4, 4], f, 131)],
        )
        .arg("kernel_size", ints(&[3, 3]))
        .arg("stride", ints(&[1]))
        .arg("padding", ints(&[0]))
        .arg("dilation", ints(&[1])),
        ErrorKind::Shape,
        "_conv_weight_backward: expected grad_output of size [1, O, 2, 2]",
    )]
}

/// `_conv_grouped`'s geometries: depthwise (one channel per group, with and without a
/// channel multiplier), narrow groups with strides and dilation, 1- and 3-d, a row longer
/// than two eight-lane blocks (21) and a strided one longer than one (9), padding wider than the kernel (output rows that read
/// only padding), an empty batch, no output channels. `(desc, input, weight, stride, padding, dilation, groups,
/// bias)`.
#[allow(clippy::type_complexity)]
const GROUPED: [(&str, &[usize], &[usize], &[i64], &[i64], &[i64], i64, bool); 10] = [
    (
        "[2,4,5,6] * [4,1,3,3] depthwise pad 1 bias",
        &[2, 4, 5, 6],
        &[4, 1, 3, 3],
        &[1],
        &[1],
        &[1],
        4,
        true,
    ),
    (
        "[2,3,6,5] * [6,1,3,3] depthwise x2 stride 2 pad (1,2) bias",
        &[2, 3, 6, 5],
        &[6, 1, 3, 3],
        &[2],
        &[1, 2],
        &[1],
        3,
        true,
    ),
    (
        "[2,4,5,5] * [6,2,3,2] groups 2 stride (2,1) dilation (1,2)",
        &[2, 4, 5, 5],
        &[6, 2, 3, 2],
        &[2, 1],
        &[0],
        &[1, 2],
        2,
        false,
    ),
    (
        "[1,4,9] 1-d * [4,2,3] groups 2 dilation 2 pad 2 bias",
        &[1, 4, 9],
        &[4, 2, 3],
        &[1],
        &[2],
        &[2],
        2,
        true,
    ),
    (
        "[1,2,3,4,4] 3-d * [4,1,2,2,2] groups 2 pad 1",
        &[1, 2, 3, 4, 4],
        &[4, 1, 2, 2, 2],
        &[1],
        &[1],
        &[1],
        2,
        false,
    ),
    (
        "[1,2,3,21] * [2,1,1,3] depthwise pad (0,1): rows of 21",
        &[1, 2, 3, 21],
        &[2, 1, 1, 3],
        &[1],
        &[0, 1],
        &[1],
        2,
        true,
    ),
    (
        "[1,2,4,19] * [2,1,3,3] depthwise stride 2 pad 1 dilation (1,2): rows of 9",
        &[1, 2, 4, 19],
        &[2, 1, 3, 3],
        &[2],
        &[1],
        &[1, 2],
        2,
        true,
    ),
    (
        "[1,2,4,4] * [2,1,2,2] depthwise pad 3 bias: rows of padding only",
        &[1, 2, 4, 4],
        &[2, 1, 2, 2],
        &[1],
        &[3],
        &[1],
        2,
        true,
    ),
    (
        "[0,2,4,4] * [2,1,2,2] empty batch",
        &[0, 2, 4, 4],
        &[2, 1, 2, 2],
        &[1],
        &[0],
        &[1],
        2,
        false,
    ),
    (
        "[1,2,4,4] * [0,1,2,2] no output channels",
        &[1, 2, 4, 4],
        &[0, 1, 2, 2],
        &[1],
        &[0],
        &[1],
        2,
        false,
    ),
];

/// Output positions of a `GROUPED` geometry: `[B, O, *L]`.
fn grouped_out(x: &[usize], w: &[usize], st: &[i64], pd: &[i64], dl: &[i64]) -> Vec<usize> {
    let at = |v: &[i64], d: usize| if v.len() == 1 { v[0] } else { v[d] };
    let mut shape = vec![x[0], w[0]];
    shape.extend((0..w.len() - 2).map(|d| {
        ((x[2 + d] as i64 + 2 * at(pd, d) - at(dl, d) * (w[2 + d] as i64 - 1) - 1) / at(st, d) + 1)
            as usize
    }));
    shape
}

fn grouped_sample(
    s: Sample,
    [x, w]: [&[usize]; 2],
    [st, pd, dl]: [&[i64]; 3],
    groups: i64,
) -> Sample {
    let s = conv_args(s, st, pd, dl, groups);
    if x[0] == 0 || w[0] == 0 {
        s.edge()
    } else {
        s
    }
}

pub fn conv_grouped(dtype: DType) -> Vec<Sample> {
    GROUPED
        .iter()
        .enumerate()
        .map(|(i, &(desc, xs, ws, st, pd, dl, groups, bias))| {
            let seed = 140 + 3 * i as u64;
            let mut t = vec![vals(xs, dtype, seed), small(ws, dtype, seed + 1)];
            if bias {
                t.push(small(&[ws[0]], dtype, seed + 2));
            }
            grouped_sample(Sample::new(desc, t), [xs, ws], [st, pd, dl], groups)
        })
        .collect()
}

pub fn conv_grouped_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let x = vals(&[1, 4, 5, 5], f, 170);
    vec![
        err(
            conv_args(Sample::new("channels not groups x weight channels", vec![x.clone(), vals(&[4, 2, 2, 2], f, 171)]), &[1], &[0], &[1], 4),
            ErrorKind::Shape, "Given groups=4, weight of size [4, 2, 2, 2], expected input[1, 4, 5, 5] to have 8 channels, but got 4 channels instead",
        ),
        err(
            conv_args(Sample::new("outputs not divisible by groups", vec![x.clone(), vals(&[3, 2, 2, 2], f, 172)]), &[1], &[0], &[1], 2),
            ErrorKind::Shape, "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 2, 2] instead",
        ),
        err(
            conv_args(Sample::new("bias size", vec![x.clone(), vals(&[4, 1, 2, 2], f, 173), vals(&[3], f, 174)]), &[1], &[0], &[1], 4),
            ErrorKind::Shape, "expected bias to be 1-dimensional with 4 elements, but got bias of size [3] instead",
        ),
        err(
            conv_args(Sample::new("groups 0", vec![x, vals(&[4, 1, 2, 2], f, 175)]), &[1], &[0], &[1], 0),
            ErrorKind::Value, "non-positive groups is not supported",
        ),
    ]
}

/// `_conv_grouped_input_backward`: `GROUPED`'s geometries, an output gradient of the
/// output's shape and the weight.
pub fn conv_grouped_input_backward(dtype: DType) -> Vec<Sample> {
    GROUPED
        .iter()
        .enumerate()
        .map(|(i, &(desc, xs, ws, st, pd, dl, groups, _))| {
            let seed = 180 + 2 * i as u64;
            let gy = grouped_out(xs, ws, st, pd, dl);
            let t = vec![vals(&gy, dtype, seed), small(ws, dtype, seed + 1)];
            let sizes: Vec<i64> = xs.iter().map(|&v| v as i64).collect();
            let s = Sample::new(desc, t).arg("input_size", ints(&sizes));
            grouped_sample(s, [xs, ws], [st, pd, dl], groups)
        })
        .collect()
}

pub fn conv_grouped_input_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        conv_args(
            Sample::new(
                "grad_output of the wrong size",
                vec![vals(&[1, 4, 3, 3], f, 176), vals(&[4, 1, 2, 2], f, 177)],
            )
            .arg("input_size", ints(&[1, 4, 5, 5])),
            &[1],
            &[0],
            &[1],
            4,
        ),
        ErrorKind::Shape,
        "_conv_grouped_input_backward: expected grad_output of size [1, 4, 4, 4]",
    )]
}

/// `_conv_grouped_weight_backward`: `GROUPED`'s geometries, an output gradient of the
/// output's shape and the input.
pub fn conv_grouped_weight_backward(dtype: DType) -> Vec<Sample> {
    GROUPED
        .iter()
        .enumerate()
        .map(|(i, &(desc, xs, ws, st, pd, dl, groups, _))| {
            let seed = 200 + 2 * i as u64;
            let gy = grouped_out(xs, ws, st, pd, dl);
            let t = vec![vals(&gy, dtype, seed), vals(xs, dtype, seed + 1)];
            let k: Vec<i64> = ws[2..].iter().map(|&v| v as i64).collect();
            let s = Sample::new(desc, t).arg("kernel_size", ints(&k));
            grouped_sample(s, [xs, ws], [st, pd, dl], groups)
        })
        .collect()
}

pub fn conv_grouped_weight_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        conv_args(
            Sample::new(
                "grad_output of the wrong size",
                vec![vals(&[1, 4, 3, 3], f, 178), vals(&[1, 4, 5, 5], f, 179)],
            )
            .arg("kernel_size", ints(&[2, 2])),
            &[1],
            &[0],
            &[1],
            4,
        ),
        ErrorKind::Shape,
        "_conv_grouped_weight_backward: expected grad_output of size [1, 4, 4, 4]",
    )]
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
        // Wide groups: each runs on `_conv_forward` over channel slices.
        conv_args(
            Sample::new(
                "[1,32,4,4] * [32,16,2,2] groups 2 pad 1 bias",
                vec![x(&[1, 32, 4, 4], 11), w(&[32, 16, 2, 2], 12), w(&[32], 13)],
            ),
            &[1],
            &[1],
            &[1],
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
