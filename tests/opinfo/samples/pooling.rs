//! Samples for max, average and adaptive pooling.

use super::{err, index, ints, quarters, rand_index, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

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

/// `_max_pool2d`'s arguments, every list written out.
fn kernel_args(
    s: Sample,
    k: [i64; 2],
    st: [i64; 2],
    p: [i64; 2],
    d: [i64; 2],
    out: [i64; 2],
) -> Sample {
    s.arg("kernel_size", ints(&k))
        .arg("stride", ints(&st))
        .arg("padding", ints(&p))
        .arg("dilation", ints(&d))
        .arg("output_size", ints(&out))
}

/// `_max_pool2d`: overlapping windows (one element the maximum of two), a `ceil_mode`
/// overhang, padding with dilation, the small CNN's 2×2 pool, an empty batch.
pub fn max_pool2d_kernel(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::distinct(s, dtype, seed);
    vec![
        kernel_args(
            Sample::new(
                "[2,3,6,7] k (3,2) stride (2,1) pad (1,0)",
                vec![x(&[2, 3, 6, 7], 11)],
            ),
            [3, 2],
            [2, 1],
            [1, 0],
            [1, 1],
            [3, 6],
        ),
        kernel_args(
            Sample::new(
                "[1,2,5,5] k 2 ceil_mode overhang",
                vec![x(&[1, 2, 5, 5], 12)],
            ),
            [2, 2],
            [2, 2],
            [0, 0],
            [1, 1],
            [3, 3],
        ),
        kernel_args(
            Sample::new(
                "[1,2,7,7] k 3 stride 2 pad 1 dilation 2",
                vec![x(&[1, 2, 7, 7], 13)],
            ),
            [3, 3],
            [2, 2],
            [1, 1],
            [2, 2],
            [3, 3],
        ),
        kernel_args(
            Sample::new("[2,4,8,8] k 2 stride 2", vec![x(&[2, 4, 8, 8], 14)]),
            [2, 2],
            [2, 2],
            [0, 0],
            [1, 1],
            [4, 4],
        ),
        kernel_args(
            Sample::new("[0,2,4,4] empty batch", vec![x(&[0, 2, 4, 4], 15)]),
            [2, 2],
            [2, 2],
            [0, 0],
            [1, 1],
            [2, 2],
        )
        .edge(),
    ]
}

pub fn max_pool2d_kernel_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            kernel_args(Sample::new("unbatched input", vec![vals(&[2, 4, 4], f, 130)]), [2, 2], [2, 2], [0, 0], [1, 1], [2, 2]),
            ErrorKind::Shape, "_max_pool2d: expected a batched input [B, C, H, W], but got [2, 4, 4]",
        ),
        err(
            kernel_args(Sample::new("a window past the input", vec![vals(&[1, 1, 4, 4], f, 131)]), [2, 2], [2, 2], [0, 0], [1, 1], [3, 2]),
            ErrorKind::Shape, "_max_pool2d: output_size [3, 2] does not fit the input [1, 1, 4, 4]",
        ),
        err(
            kernel_args(Sample::new("pad 2 for kernel 3", vec![vals(&[1, 1, 6, 6], f, 132)]), [3, 3], [1, 1], [2, 0], [1, 1], [8, 4]),
            ErrorKind::Value, "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1",
        ),
        err(
            kernel_args(Sample::new("zero stride", vec![vals(&[1, 1, 4, 4], f, 133)]), [2, 2], [0, 1], [0, 0], [1, 1], [2, 3]),
            ErrorKind::Value, "_max_pool2d: kernel_size, stride and dilation must be positive",
        ),
    ]
}

/// `_max_pool2d_backward`: random indices into the plane, so several cells of a plane may
/// pick one element (overlapping windows) and must add up there.
pub fn max_pool2d_backward(dtype: DType) -> Vec<Sample> {
    // Quarters: a GPU's atomic adds round every step, and these sums are exact.
    let g = |s: &[usize], seed| quarters(s, dtype, seed);
    let case = |name: &str, cells: &[usize], plane: [i64; 2], seed: u64| {
        Sample::new(
            name,
            vec![
                g(cells, seed),
                rand_index(cells, plane[0] * plane[1], seed + 1),
            ],
        )
        .arg("input_size", ints(&plane))
    };
    vec![
        case("[2,3,3,4] into 6x7", &[2, 3, 3, 4], [6, 7], 1),
        case(
            "[1,2,4,4] into 3x3 (many collisions)",
            &[1, 2, 4, 4],
            [3, 3],
            3,
        ),
        case("[2,4,8,8] into 16x16", &[2, 4, 8, 8], [16, 16], 5),
        case("[0,2,2,2] empty batch", &[0, 2, 2, 2], [4, 4], 7).edge(),
    ]
}

pub fn max_pool2d_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let case = |name: &str, g: &[usize], ix: Tensor, plane: &[i64]| {
        Sample::new(name, vec![vals(g, f, 140), ix]).arg("input_size", ints(plane))
    };
    vec![
        err(
            case("index past the plane", &[1, 1, 2, 2], index(&[0, 3, 16, 1], &[1, 1, 2, 2]), &[4, 4]),
            ErrorKind::Index, "_max_pool2d_backward: index 16 is out of bounds for an input plane of 4 x 4 = 16 elements",
        ),
        err(
            case("negative index", &[1, 1, 1, 2], index(&[-1, 0], &[1, 1, 1, 2]), &[2, 2]),
            ErrorKind::Index, "_max_pool2d_backward: index -1 is out of bounds",
        ),
        err(
            case("indices of another shape", &[1, 1, 2, 2], index(&[0, 1, 2], &[1, 1, 1, 3]), &[4, 4]),
            ErrorKind::Shape, "_max_pool2d_backward: expected grad_output and indices of one batched shape [B, C, oh, ow], but got grad_output [1, 1, 2, 2] and indices [1, 1, 1, 3]",
        ),
        err(
            case("empty input_size", &[1, 1, 1, 1], index(&[0], &[1, 1, 1, 1]), &[0, 4]),
            ErrorKind::Value, "_max_pool2d_backward: input_size must be two positive sizes [H, W], but got [0, 4]",
        ),
    ]
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
