//! A PyTorch checkpoint loaded into a model made of kiln's real layers: the safetensors file
//! and the expected eval-mode output come from `data/tests/data/make_checkpoint.py` (a
//! `Conv2d → BatchNorm2d → relu → Linear → relu → Linear` net). The kiln model, declared
//! with `#[derive(Module)]`, must reproduce PyTorch's output, then save itself and reload.

use kiln::data::safetensors::{load_file, save_file};
use kiln::nn::{BatchNorm2d, Conv2d, ConvOptions, Forward, Linear, Module};
use kiln::{no_grad, DType, Result, Tensor};
use serde_json::Value;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../data/tests/data")
        .join(name)
}

#[derive(Module)]
struct Tiny {
    conv: Conv2d,
    bn: BatchNorm2d,
    fc1: Linear,
    fc2: Linear,
}

impl Tiny {
    fn new() -> Result<Self> {
        Ok(Tiny {
            conv: Conv2d::with_options(1, 2, 3, ConvOptions::default().padding(1))?,
            bn: BatchNorm2d::new(2)?,
            fc1: Linear::new(2 * 4 * 4, 4)?,
            fc2: Linear::new(4, 3)?,
        })
    }
}

impl Forward for Tiny {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.bn.forward(&self.conv.forward(x)?)?.relu()?;
        let x = self.fc1.forward(&x.flatten_with(1, -1)?)?.relu()?;
        self.fc2.forward(&x)
    }
}

fn list(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn sizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("a shape")
        .iter()
        .map(|x| x.as_u64().expect("a size") as usize)
        .collect()
}

/// The model's eval-mode output for PyTorch's input, checked against PyTorch's output.
fn check_output(model: &Tiny, reference: &Value) -> Result<()> {
    let input: Vec<f32> = list(&reference["input"])
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let x = Tensor::from_vec(input, &sizes(&reference["input_shape"]))?;
    let y = {
        let _g = no_grad();
        model.forward(&x)?
    };
    assert_eq!(y.shape(), sizes(&reference["output_shape"]).as_slice());
    let want = list(&reference["output"]);
    for (i, (got, want)) in y.to_vec::<f32>()?.iter().zip(&want).enumerate() {
        let got = *got as f64;
        assert!(
            (got - want).abs() <= 1e-5 + 1e-5 * want.abs(),
            "output[{i}]: kiln {got} vs PyTorch {want}"
        );
    }
    Ok(())
}

#[test]
fn pytorch_checkpoint_in_real_layers_matches_and_round_trips() -> Result<()> {
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(data("tiny.json")).expect("tiny.json"))
            .expect("valid JSON");
    let state = load_file(data("tiny.safetensors"))?;

    let mut model = Tiny::new()?;
    // The derived state_dict has PyTorch's keys, in PyTorch's order.
    let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
    let want_keys: Vec<String> = reference["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, want_keys);

    let report = model.load_state_dict(&state, true)?;
    assert!(report.missing_keys.is_empty() && report.unexpected_keys.is_empty());
    model.eval();
    // The buffers came along: PyTorch's running statistics, not the fresh zeros/ones.
    let running_var = model.bn.running_var.as_ref().unwrap().to_vec::<f32>()?;
    let want_var = state.get("bn.running_var").unwrap().to_vec::<f32>()?;
    assert_eq!(running_var, want_var);
    assert_ne!(running_var, vec![1.0f32; 2]);
    check_output(&model, &reference)?;

    // Save kiln's model, reload into a fresh one: same tensors, same output.
    let path = std::env::temp_dir().join(format!(
        "kiln-checkpoint-{}.safetensors",
        std::process::id()
    ));
    save_file(&model.state_dict(), &path, None)?;
    let reloaded_state = load_file(&path)?;
    std::fs::remove_file(&path).ok();
    let sorted = |s: &kiln::nn::StateDict| {
        let mut k: Vec<String> = s.keys().map(String::from).collect();
        k.sort();
        k
    };
    assert_eq!(sorted(&reloaded_state), sorted(&state));
    for (name, t) in state.iter() {
        let r = reloaded_state.get(name).unwrap();
        assert_eq!(r.dtype(), t.dtype(), "{name}");
        assert_eq!(r.shape(), t.shape(), "{name}");
        let values = |t: &Tensor| t.to_dtype(DType::F64)?.to_vec::<f64>();
        assert_eq!(values(r)?, values(t)?, "{name} changed in the round trip");
    }
    let mut fresh = Tiny::new()?;
    fresh.load_state_dict(&reloaded_state, true)?;
    fresh.eval();
    check_output(&fresh, &reference)?;
    Ok(())
}
