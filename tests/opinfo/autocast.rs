//! The autocast check: inside an autocast region each op with a policy returns the dtype
//! PyTorch's autocast returns, and native_functions.yaml's `autocast:` key names PyTorch's
//! policy. PyTorch's answers are `tests/data/autocast_pytorch.tsv`, written by
//! `scripts/amp/autocast_table.py` from PyTorch itself (CPU region bf16, CUDA region f16).

use crate::harness::{OpInfo, Sample};
use kiln::{DType, Device, Tensor};
use std::cell::Cell;

const TABLE: &str = include_str!("../data/autocast_pytorch.tsv");

/// One row of the table: PyTorch's policy, and the output dtype with every floating input
/// float32, every one in the region's dtype, and the first low with the rest float32.
struct Row {
    policy: &'static str,
    f32: &'static str,
    low: &'static str,
    mixed: &'static str,
}

fn device_type(device: Device) -> &'static str {
    if device.is_cuda() {
        "cuda"
    } else {
        "cpu"
    }
}

fn pytorch(op: &str, device: Device) -> Option<Row> {
    let dev = device_type(device);
    TABLE
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f.len() == 6 && f[0] == op && f[1] == dev)
        .map(|f| Row {
            policy: f[2],
            f32: f[3],
            low: f[4],
            mixed: f[5],
        })
}

fn declared(info: &OpInfo, device: Device) -> Option<&'static str> {
    if device.is_cuda() {
        info.autocast_cuda
    } else {
        info.autocast_cpu
    }
}

/// Whether the op has an autocast case on `device`: a policy in the YAML or in PyTorch.
pub fn applies(info: &OpInfo, device: Device) -> bool {
    !device.is_meta() && (declared(info, device).is_some() || pytorch(info.name, device).is_some())
}

/// The dtype class PyTorch's table tells apart: `fp32_set_opt_dtype` returns float32 as
/// `fp32` does (it sets the dtype instead of casting the input).
fn class(policy: &str) -> &str {
    match policy {
        "fp32_set_opt_dtype" => "fp32",
        p => p,
    }
}

fn dtype(name: &str) -> DType {
    match name {
        "f32" => DType::F32,
        "bf16" => DType::BF16,
        "f16" => DType::F16,
        "f64" => DType::F64,
        other => panic!("autocast_pytorch.tsv: unknown dtype '{other}'"),
    }
}

pub fn check_autocast(info: &OpInfo, device: Device) {
    let dev = device_type(device);
    let row = pytorch(info.name, device);
    let ctx = format!("{} [autocast {dev}] ({})", info.name, info.declared);
    let yaml = declared(info, device).map(class);
    // `none:<class>`: PyTorch registers no policy here; the YAML may declare none, or the
    // one whose dtypes match (the probes below decide).
    let agrees = match row.as_ref().map(|r| r.policy) {
        Some(p) => match p.strip_prefix("none:") {
            Some(like) => yaml.is_none() || yaml == Some(like),
            None => yaml == Some(p),
        },
        None => yaml.is_none(),
    };
    assert!(
        agrees,
        "{ctx}: native_functions.yaml's `autocast:` policy ({yaml:?}) is not PyTorch's ({:?})",
        row.as_ref().map(|r| r.policy)
    );
    let Some(row) = row else { return };
    let low = if device.is_cuda() {
        DType::F16
    } else {
        DType::BF16
    };
    let sample = (info.samples)(DType::F32)
        .into_iter()
        .find(|s| !s.edge)
        .unwrap_or_else(|| panic!("{ctx}: no sample"));
    // (what, PyTorch's output dtype, how many leading floating inputs are low).
    let probes = [
        ("float32 inputs", row.f32, 0),
        ("low-precision inputs", row.low, usize::MAX),
        ("the first input low, the rest float32", row.mixed, 1),
    ];
    for (what, expected, lows) in probes {
        let dtype_of = |i: usize| if i < lows { low } else { DType::F32 };
        let s = cast_floating(&sample, &dtype_of).on(device);
        let got = {
            let _region = kiln::autocast(device, low).expect("autocast on cpu/cuda");
            (info.call)(&s)
        };
        match (row.policy, got) {
            ("banned", Err(e)) => assert!(
                e.to_string().contains("unsafe to autocast"),
                "{ctx}: {what}: fails, but not with PyTorch's message: {e}"
            ),
            ("banned", Ok(_)) => panic!("{ctx}: {what}: runs; PyTorch refuses it in a region"),
            // PyTorch does not cast here and the op takes one dtype: it must refuse too.
            (_, Err(_)) if expected == "dtype_error" => {}
            (_, Ok(out)) if expected == "dtype_error" => panic!(
                "{ctx}: {what} ({}): returns {:?}; PyTorch refuses inputs of two dtypes here",
                s.desc,
                out[0].dtype()
            ),
            (_, Ok(out)) => assert_eq!(
                out[0].dtype(),
                dtype(expected),
                "{ctx}: {what} ({}): output dtype",
                s.desc
            ),
            (_, Err(e)) => panic!("{ctx}: {what} ({}): fails: {e}", s.desc),
        }
    }
}

/// `s` with its floating tensors, counted in the order the op takes them, cast to
/// `dtype_of(position)`.
fn cast_floating(s: &Sample, dtype_of: &dyn Fn(usize) -> DType) -> Sample {
    let n = Cell::new(0);
    s.map_tensors(&|t: &Tensor| {
        if !t.is_floating_point() {
            return t.clone();
        }
        let d = dtype_of(n.get());
        n.set(n.get() + 1);
        t.to_dtype(d).expect("a cast between floating dtypes")
    })
}
