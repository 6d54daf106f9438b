//! Samples for sliding blocks (im2col/col2im) and the nn ops built on them (src/ops/nn.rs).

use super::{err, ints, vals};
use crate::harness::{ErrorSample, Sample};
use kiln::DType;

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
        "expected size of input's dimension 2 to match the calculated number of sliding blocks 4",
    )]
}
