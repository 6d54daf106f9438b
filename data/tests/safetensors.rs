//! safetensors checkpoints: files PyTorch wrote (tests/data/make_checkpoint.py) load into an
//! equivalent kiln model that reproduces PyTorch's output; every dtype round-trips; corrupt
//! files are errors, never panics.

use kiln_core::{DType, Result, Tensor};
use kiln_data::safetensors::{load, load_file, load_file_with_metadata, save, save_file};
use kiln_nn::{Forward, Linear, Module, StateDict};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

type R = Result<()>;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn json(name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(data(name)).unwrap()).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kiln-data-{}-{name}", std::process::id()))
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct Conv {
    weight: Tensor,
    bias: Tensor,
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct BatchNorm {
    weight: Tensor,
    bias: Tensor,
    #[module(buffer)]
    running_mean: Tensor,
    #[module(buffer)]
    running_var: Tensor,
    #[module(buffer)]
    num_batches_tracked: Tensor,
}

/// make_checkpoint.py's `Tiny`: conv(1→2, 3x3, pad 1) → bn → relu → flatten → fc1 → relu → fc2.
#[derive(Module)]
#[module(crate = kiln_nn)]
struct Tiny {
    conv: Conv,
    bn: BatchNorm,
    fc1: Linear,
    fc2: Linear,
}

impl Tiny {
    fn new() -> Result<Self> {
        let z = |s: &[usize]| Tensor::zeros(s, DType::F32);
        Ok(Tiny {
            conv: Conv {
                weight: z(&[2, 1, 3, 3])?,
                bias: z(&[2])?,
            },
            bn: BatchNorm {
                weight: z(&[2])?,
                bias: z(&[2])?,
                running_mean: z(&[2])?,
                running_var: z(&[2])?,
                num_batches_tracked: Tensor::zeros((), DType::I64)?,
            },
            fc1: Linear::new(32, 4)?,
            fc2: Linear::new(4, 3)?,
        })
    }
}

impl Forward for Tiny {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = kiln_core::conv2d_with(
            x,
            &self.conv.weight,
            Some(&self.conv.bias),
            [1, 1],
            [1, 1],
            [1, 1],
            1,
        )?;
        let bn = &self.bn;
        let h = kiln_core::batch_norm(
            &h,
            Some(&bn.weight),
            Some(&bn.bias),
            Some(&bn.running_mean),
            Some(&bn.running_var),
            false,
            0.1,
            1e-5,
            false,
        )?
        .relu()?;
        let n = h.shape()[0] as i64;
        let h = self.fc1.forward(&h.reshape([n, -1])?)?.relu()?;
        self.fc2.forward(&h)
    }
}

fn usizes(v: &serde_json::Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn f64s(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| match x {
            serde_json::Value::String(s) => s.parse::<f64>().unwrap(),
            x => x.as_f64().unwrap(),
        })
        .collect()
}

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::U8 => "uint8",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        DType::F32 => "float32",
        DType::F64 => "float64",
    }
}

#[test]
fn pytorch_checkpoint_loads_into_an_equivalent_model() -> R {
    let expect = json("tiny.json");
    let state = load_file(data("tiny.safetensors"))?;
    let keys = expect["keys"].as_array().unwrap();
    assert_eq!(state.len(), keys.len());
    for (i, k) in keys.iter().enumerate() {
        let t = state.get(k.as_str().unwrap()).expect("key in file");
        assert_eq!(t.shape(), usizes(&expect["shapes"][i]).as_slice(), "{k}");
        assert_eq!(
            dtype_name(t.dtype()),
            expect["dtypes"][i].as_str().unwrap(),
            "{k}"
        );
    }
    // The batch norm ran three training steps in PyTorch.
    assert_eq!(
        state.get("bn.num_batches_tracked").unwrap().item::<i64>()?,
        3
    );

    let mut model = Tiny::new()?;
    // kiln's names for the equivalent model are PyTorch's, in the same order.
    let ours: Vec<String> = model.state_dict().keys().map(String::from).collect();
    let theirs: Vec<String> = keys
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ours, theirs);
    let missing = model.load_state_dict(&state, true)?;
    assert!(missing.missing_keys.is_empty() && missing.unexpected_keys.is_empty());

    let x = Tensor::from_vec(
        f64s(&expect["input"]).iter().map(|&v| v as f32).collect(),
        &usizes(&expect["input_shape"]),
    )?;
    let y = model.forward(&x)?;
    assert_eq!(y.shape(), usizes(&expect["output_shape"]).as_slice());
    let want = f64s(&expect["output"]);
    for (got, want) in y.to_vec::<f64>()?.iter().zip(&want) {
        assert!(
            (got - want).abs() <= 1e-5 + 1e-5 * want.abs(),
            "{got} vs {want}"
        );
    }
    Ok(())
}

/// The header's JSON and the data section of a safetensors file.
fn split(bytes: &[u8]) -> (serde_json::Value, &[u8]) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    (header, &bytes[8 + n..])
}

#[test]
fn pytorch_file_round_trips_byte_for_byte() -> R {
    // Same tensors, same (sorted) order, same header: kiln writes the bytes PyTorch wrote.
    let bytes = std::fs::read(data("tiny.safetensors")).unwrap();
    assert_eq!(save(&load(&bytes)?, None)?, bytes);
    // With `__metadata__` the key order inside it follows a HashMap, so compare the header
    // as JSON and the data section as bytes.
    let bytes = std::fs::read(data("dtypes.safetensors")).unwrap();
    let (state, meta) = kiln_data::safetensors::load_with_metadata(&bytes)?;
    let ours = save(&state, meta.as_ref())?;
    assert_eq!(ours.len(), bytes.len());
    assert_eq!(split(&ours), split(&bytes));
    Ok(())
}

#[test]
fn pytorch_dtypes_and_metadata() -> R {
    let expect = json("dtypes.json");
    let (state, meta) = load_file_with_metadata(data("dtypes.safetensors"))?;
    let want_meta: HashMap<String, String> =
        serde_json::from_value(expect["metadata"].clone()).unwrap();
    assert_eq!(meta, Some(want_meta));
    let tensors = expect["tensors"].as_object().unwrap();
    assert_eq!(state.len(), tensors.len());
    for (name, e) in tensors {
        let t = state.get(name).unwrap();
        assert_eq!(
            dtype_name(t.dtype()),
            e["dtype"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(t.shape(), usizes(&e["shape"]).as_slice(), "{name}");
        if t.is_floating_point() {
            let got = t.to_vec::<f64>()?;
            let want = f64s(&e["values"]);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                // Exact, including the sign of zero.
                assert_eq!(g.to_bits(), w.to_bits(), "{name}: {g} vs {w}");
            }
        } else {
            let want: Vec<i64> = e["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            assert_eq!(t.to_vec::<i64>()?, want, "{name}");
        }
    }
    // File order: descending dtype alignment, then name (the writer's sort).
    let order: Vec<&str> = state.keys().collect();
    assert_eq!(
        order,
        ["i64", "f64", "empty", "f32", "scalar", "i32", "bf16", "f16", "i16", "i8", "u8", "bool"]
    );
    Ok(())
}

/// One tensor per kiln dtype, each a non-contiguous view: t_<d> = arange(6).reshape(3, 2).T,
/// i.e. [[0, 2, 4], [1, 3, 5]] (bool: odd).
fn all_dtypes() -> Result<StateDict> {
    let mut s = StateDict::new();
    for d in [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::Bool,
    ] {
        let base = Tensor::arange(0.0, 6.0, 1.0, DType::I64)?.reshape([3, 2])?;
        let base = if d == DType::Bool {
            Tensor::from_vec(vec![false, true, false, true, false, true], &[3, 2])?
        } else {
            base.to_dtype(d)?
        };
        let t = base.t()?;
        assert!(!t.is_contiguous());
        s.insert(format!("t_{}", dtype_name(d)), t);
    }
    s.insert("scalar", Tensor::scalar_tensor(-1.25, DType::F32)?);
    s.insert("empty", Tensor::zeros([0, 4], DType::F16)?);
    Ok(s)
}

#[test]
fn every_dtype_round_trips_through_a_file() -> R {
    let state = all_dtypes()?;
    let meta: HashMap<String, String> = [("epoch".to_string(), "3".to_string())].into();
    let path = tmp("all-dtypes.safetensors");
    save_file(&state, &path, Some(&meta))?;
    if let Ok(out) = std::env::var("KILN_CHECKPOINT_OUT") {
        // For tests/data/check_kiln_checkpoint.py (PyTorch reading kiln's file).
        save_file(&state, out, Some(&meta))?;
    }
    let (back, back_meta) = load_file_with_metadata(&path)?;
    std::fs::remove_file(&path).ok();
    assert_eq!(back_meta, Some(meta));
    assert_eq!(back.len(), state.len());
    for (name, t) in state.iter() {
        let b = back.get(name).unwrap();
        assert_eq!(b.dtype(), t.dtype(), "{name}");
        assert_eq!(b.shape(), t.shape(), "{name}");
        assert!(b.is_contiguous());
        if name.starts_with("t_") {
            let want: Vec<f64> = if t.dtype() == DType::Bool {
                vec![0., 0., 0., 1., 1., 1.]
            } else {
                vec![0., 2., 4., 1., 3., 5.]
            };
            assert_eq!(b.to_vec::<f64>()?, want, "{name}");
        }
    }
    assert_eq!(back.get("scalar").unwrap().item::<f32>()?, -1.25);
    assert_eq!(back.get("empty").unwrap().shape(), &[0, 4]);
    // Without metadata there is none.
    let bytes = save(&state, None)?;
    assert_eq!(kiln_data::safetensors::load_with_metadata(&bytes)?.1, None);
    Ok(())
}

#[test]
fn linear_state_dict_round_trips() -> R {
    let fc = Linear::new(5, 3)?;
    let bytes = save(&fc.state_dict(), None)?;
    let mut other = Linear::new(5, 3)?;
    other.load_state_dict(&load(&bytes)?, true)?;
    assert_eq!(other.weight.to_vec::<f32>()?, fc.weight.to_vec::<f32>()?);
    assert_eq!(
        other.bias.as_ref().unwrap().to_vec::<f32>()?,
        fc.bias.as_ref().unwrap().to_vec::<f32>()?
    );
    Ok(())
}

/// A file whose header is `header` (padded to 8 bytes) followed by `data`.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    h.resize(h.len().next_multiple_of(8), b' ');
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend_from_slice(data);
    out
}

fn load_err(bytes: &[u8]) -> String {
    load(bytes)
        .expect_err("corrupt file must be an Err")
        .to_string()
}

#[test]
fn corrupt_files_are_errors() {
    let ok = file(
        r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
        &[0; 8],
    );
    assert_eq!(load(&ok).unwrap().get("x").unwrap().shape(), &[2]);

    assert!(load_err(&[]).contains("header too small"));
    assert!(load_err(&u64::MAX.to_le_bytes()).contains("header too large"));
    let e = load_err(&file("not json", &[]));
    assert!(
        e.starts_with("safetensors::load: ") && e.contains("JSON"),
        "{e}"
    );
    // Offsets that run past the data, or leave a gap.
    let e = load_err(&file(
        r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
        &[0; 4],
    ));
    assert!(e.contains("incomplete metadata"), "{e}");
    let e = load_err(&file(
        r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
        &[0; 12],
    ));
    assert!(e.contains("invalid offset"), "{e}");
    // A shape that lies about the data size, or overflows.
    let e = load_err(&file(
        r#"{"x":{"dtype":"F32","shape":[1000000000000],"data_offsets":[0,8]}}"#,
        &[0; 8],
    ));
    assert!(e.contains("invalid shape"), "{e}");
    let e = load_err(&file(
        r#"{"x":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}}"#,
        &[0; 8],
    ));
    assert!(e.contains("overflow"), "{e}");
    // A zero extent with huge others: no data, but no tensor kiln could index either.
    let e = load_err(&file(
        r#"{"x":{"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}}"#,
        &[],
    ));
    assert!(e.contains("too large"), "{e}");
    // Unknown dtype names, dtypes kiln lacks, and bool bytes other than 0/1.
    let e = load_err(&file(
        r#"{"x":{"dtype":"F99","shape":[2],"data_offsets":[0,8]}}"#,
        &[0; 8],
    ));
    assert!(e.contains("unknown variant"), "{e}");
    let e = load_err(&file(
        r#"{"x":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}}"#,
        &[0; 4],
    ));
    assert!(
        e.contains("tensor \"x\": dtype U16 is not supported by kiln"),
        "{e}"
    );
    let e = load_err(&file(
        r#"{"x":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
    ));
    assert!(e.contains("invalid bool byte 0x02"), "{e}");
}

#[test]
fn load_file_errors_name_the_file() {
    let path = tmp("corrupt.safetensors");
    std::fs::write(
        &path,
        file(
            r#"{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
            &[0; 8],
        ),
    )
    .unwrap();
    let e = load_file(&path).err().unwrap().to_string();
    std::fs::remove_file(&path).ok();
    assert!(
        e.starts_with(&format!("load_file: {}: ", path.display())),
        "{e}"
    );
    let missing = tmp("does-not-exist.safetensors");
    let e = load_file(&missing).err().unwrap().to_string();
    assert!(
        e.starts_with(&format!("load_file: {}: ", missing.display())),
        "{e}"
    );
    let e = save_file(&StateDict::new(), "/nonexistent-dir/x.safetensors", None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("save_file: /nonexistent-dir/x.safetensors: "),
        "{e}"
    );
}

#[test]
fn fuzzed_corruptions_never_panic() {
    let bytes = std::fs::read(data("tiny.safetensors")).unwrap();
    // Every truncation is an error.
    for cut in (0..bytes.len()).step_by(7) {
        assert!(load(&bytes[..cut]).is_err(), "truncated at {cut} loaded");
    }
    // Flipped bits in the length and the header: an error, or (a flip inside a name or the
    // padding) a file that still describes the same data, never a panic.
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut errors = 0;
    for i in 0..8 + n {
        for mask in [0x01u8, 0x04, 0x20, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            match load(&b) {
                Err(_) => errors += 1,
                Ok(s) => {
                    let total: usize = s.iter().map(|(_, t)| t.numel()).sum();
                    assert!(total <= bytes.len(), "flip at {i} gave {total} elements");
                }
            }
        }
    }
    assert!(errors > (8 + n) * 2, "only {errors} flips were errors");
    // Flipped bits in the data change values, nothing else.
    let mut b = bytes.clone();
    for i in (8 + n..b.len()).step_by(3) {
        b[i] ^= 0x10;
    }
    assert_eq!(load(&b).unwrap().len(), 11);
}
