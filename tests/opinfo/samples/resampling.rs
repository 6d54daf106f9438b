//! Samples for upsampling (nearest, bilinear) and its backward ops, pixel (un)shuffle.

use super::{err, ints, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind};

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
