//! Samples for dtype and device conversion (`to`).

use super::{discrete, ranged};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, Device, ErrorKind, Tensor};

/// to(dtype) from the test dtype to f64, i64, bool, f32, f16 and i32. Float inputs are
/// non-integers of both signs (truncation toward zero); the bool target sample includes
/// zeros. The first three targets (f64, i64, bool) give float64 gradcheck exact outputs
/// (no float32 rounding in the finite differences).
pub fn to_dtype(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| ranged(s, dtype, (-3.0, 3.0), (-4, 5), seed);
    let with_zeros = |s: &[usize], seed| {
        discrete(
            s,
            dtype,
            -4,
            5,
            if dtype.is_floating_point() { 0.5 } else { 1.0 },
            seed,
        )
    };
    let to = |d: DType| Arg::DType(d);
    vec![
        Sample::new("to float64", vec![x(&[3, 4], 1)]).arg("dtype", to(DType::F64)),
        Sample::new("to int64 (truncates)", vec![x(&[2, 3, 4], 2)]).arg("dtype", to(DType::I64)),
        Sample::new("to bool (zeros included)", vec![with_zeros(&[3, 4], 3)])
            .arg("dtype", to(DType::Bool)),
        Sample::new("to float32", vec![x(&[3, 4], 4)]).arg("dtype", to(DType::F32)),
        Sample::new("to float16", vec![x(&[7], 5)]).arg("dtype", to(DType::F16)),
        Sample::new("to int32", vec![x(&[2, 3], 6)]).arg("dtype", to(DType::I32)),
        Sample::new("to the same dtype", vec![x(&[2, 3], 7)]).arg("dtype", to(dtype)),
        Sample::new("0-d to float32", vec![x(&[], 8)])
            .arg("dtype", to(DType::F32))
            .edge(),
        Sample::new("empty [0,3] to int64", vec![x(&[0, 3], 9)])
            .arg("dtype", to(DType::I64))
            .edge(),
    ]
}

/// Every dtype converts to every dtype: nothing to reject.
pub fn to_dtype_errors() -> Vec<ErrorSample> {
    vec![]
}

/// to(device): the harness moves samples to the device under test, so `cpu` here means
/// "the device the input is on" only on the CPU run; both directions are covered.
pub fn to_device(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| ranged(s, dtype, (-3.0, 3.0), (-4, 5), seed);
    let to = |d: Device| Arg::Device(d);
    vec![
        Sample::new("to cpu", vec![x(&[3, 4], 1)]).arg("device", to(Device::Cpu)),
        Sample::new("0-d to cpu", vec![x(&[], 2)])
            .arg("device", to(Device::Cpu))
            .edge(),
        Sample::new("empty [0,3] to cpu", vec![x(&[0, 3], 3)])
            .arg("device", to(Device::Cpu))
            .edge(),
    ]
}

/// No machine has 65 GPUs: the device ordinal is rejected with or without CUDA.
pub fn to_device_errors() -> Vec<ErrorSample> {
    vec![ErrorSample {
        sample: Sample::new("to cuda:64", vec![Tensor::from([1f32, 2.])])
            .arg("device", Arg::Device(Device::Cuda(64))),
        kind: ErrorKind::Device,
        message: "cannot use device cuda:64",
    }]
}
