//! The Module trait and its derive: dotted names, buffers, children, containers, state_dict
//! round trips and PyTorch's load errors, train/eval, dtype conversion.

use kiln_core::{DType, Tensor};
use kiln_nn::{Forward, Linear, Module, ModuleDict, ModuleList, Sequential, StateDict};

#[derive(Module)]
#[module(crate = kiln_nn)]
struct Block {
    fc: Linear,
    scale: Tensor,
    #[module(buffer)]
    count: Tensor,
    width: usize,
    training: bool,
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct Net {
    stem: Linear,
    blocks: Vec<Block>,
    head: Option<Linear>,
    #[module(skip)]
    _note: std::cell::Cell<u8>,
}

fn block(n: usize) -> Block {
    Block {
        fc: Linear::new(n, n).unwrap(),
        scale: Tensor::ones([n], DType::F32)
            .unwrap()
            .requires_grad_(true)
            .unwrap(),
        count: Tensor::zeros((), DType::I64).unwrap(),
        width: n,
        training: true,
    }
}

fn net() -> Net {
    Net {
        stem: Linear::new(3, 4).unwrap(),
        blocks: vec![block(4), block(4)],
        head: Some(Linear::with_options(4, 2, false, DType::F32).unwrap()),
        _note: Default::default(),
    }
}

#[test]
fn derived_names_follow_fields_like_pytorch() {
    let n = net();
    let names: Vec<String> = n.named_parameters().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        names,
        [
            "stem.weight",
            "stem.bias",
            "blocks.0.fc.weight",
            "blocks.0.fc.bias",
            "blocks.0.scale",
            "blocks.1.fc.weight",
            "blocks.1.fc.bias",
            "blocks.1.scale",
            "head.weight",
        ]
    );
    let buffers: Vec<String> = n.named_buffers().into_iter().map(|(k, _)| k).collect();
    assert_eq!(buffers, ["blocks.0.count", "blocks.1.count"]);
    assert_eq!(n.state_dict().len(), 11);
    assert_eq!(n.num_parameters(), 3 * 4 + 4 + 2 * (16 + 4 + 4) + 8);
    assert_eq!(n.blocks[0].width, 4);
}

#[test]
fn train_eval_reaches_every_flag() {
    let mut n = net();
    assert!(n.is_training());
    n.eval();
    assert!(!n.is_training() && !n.blocks[1].training);
    n.train(true);
    assert!(n.blocks[0].training && n.blocks[1].training);
}

#[test]
fn state_dict_round_trip_and_strictness() {
    let a = net();
    let mut b = net();
    assert_ne!(
        a.stem.weight.to_vec::<f32>().unwrap(),
        b.stem.weight.to_vec::<f32>().unwrap()
    );
    let keys = b.load_state_dict(&a.state_dict(), true).unwrap();
    assert!(keys.missing_keys.is_empty() && keys.unexpected_keys.is_empty());
    for ((ka, ta), (kb, tb)) in a.state_dict().iter().zip(b.state_dict().iter()) {
        assert_eq!(ka, kb);
        assert_eq!(ta.to_vec::<f64>().unwrap(), tb.to_vec::<f64>().unwrap());
        // Loaded by copying: b's tensors are its own, still leaves that require grad.
        assert!(!ta.shares_storage_with(tb));
    }
    assert!(b.stem.weight.requires_grad() && b.stem.weight.is_leaf());

    let mut partial = a.state_dict();
    partial.remove("head.weight");
    partial.insert("extra.bias", Tensor::zeros([2], DType::F32).unwrap());
    let err = b.load_state_dict(&partial, true).unwrap_err().to_string();
    assert!(
        err.contains("Missing key(s) in state_dict: \"head.weight\".")
            && err.contains("Unexpected key(s) in state_dict: \"extra.bias\"."),
        "{err}"
    );
    let keys = b.load_state_dict(&partial, false).unwrap();
    assert_eq!(keys.missing_keys, ["head.weight"]);
    assert_eq!(keys.unexpected_keys, ["extra.bias"]);

    let mut wrong: StateDict = a.state_dict();
    wrong.insert("stem.bias", Tensor::zeros([5], DType::F32).unwrap());
    let before = b.stem.weight.to_vec::<f32>().unwrap();
    let err = b.load_state_dict(&wrong, false).unwrap_err().to_string();
    assert!(err.contains("size mismatch for stem.bias: copying a param with shape [5] from checkpoint, the shape in current model is [4]."), "{err}");
    // Nothing was written: the shapes are checked first.
    assert_eq!(b.stem.weight.to_vec::<f32>().unwrap(), before);
}

#[test]
fn load_casts_to_the_module_dtype() {
    let mut fc = Linear::new(2, 2).unwrap();
    let mut sd = StateDict::new();
    sd.insert("weight", Tensor::from([[1f64, 2.], [3., 4.]]));
    sd.insert("bias", Tensor::from([0.5f64, -0.5]));
    fc.load_state_dict(&sd, true).unwrap();
    assert_eq!(fc.weight.dtype(), DType::F32);
    assert_eq!(fc.weight.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
    let y = fc.forward(&Tensor::from([[1f32, 1.]])).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [3.5, 6.5]);
}

#[test]
fn to_dtype_keeps_leaves_and_integer_buffers() {
    let mut n = net();
    n.to_dtype(DType::F64).unwrap();
    for (k, t) in n.state_dict().iter() {
        if k.ends_with("count") {
            assert_eq!(t.dtype(), DType::I64);
        } else {
            assert_eq!(t.dtype(), DType::F64, "{k}");
        }
    }
    assert!(n
        .parameters()
        .iter()
        .all(|p| p.is_leaf() && p.requires_grad()));
    let err = n.to_dtype(DType::I32).unwrap_err().to_string();
    assert!(
        err.contains("nn.Module.to only accepts floating point dtypes"),
        "{err}"
    );
}

#[test]
fn zero_grad_clears_and_containers_name_children() {
    let seq = Sequential::new()
        .add(Linear::new(3, 5).unwrap())
        .add(Linear::new(5, 1).unwrap());
    let y = seq
        .forward(&Tensor::ones([2, 3], DType::F32).unwrap())
        .unwrap();
    y.sum().unwrap().backward().unwrap();
    assert!(seq.parameters().iter().all(|p| p.grad().is_some()));
    seq.zero_grad();
    assert!(seq.parameters().iter().all(|p| p.grad().is_none()));
    let names: Vec<String> = seq.state_dict().keys().map(String::from).collect();
    assert_eq!(names, ["0.weight", "0.bias", "1.weight", "1.bias"]);

    let list: ModuleList<Linear> = (0..2).map(|_| Linear::new(1, 1).unwrap()).collect();
    assert_eq!(
        list.state_dict().keys().collect::<Vec<_>>(),
        ["0.weight", "0.bias", "1.weight", "1.bias"]
    );
    let mut dict: ModuleDict<Linear> = ModuleDict::new();
    dict.insert("q", Linear::new(1, 1).unwrap());
    dict.insert("k", Linear::with_options(1, 1, false, DType::F32).unwrap());
    assert_eq!(
        dict.state_dict().keys().collect::<Vec<_>>(),
        ["q.weight", "q.bias", "k.weight"]
    );
}

#[test]
fn linear_matches_a_float64_loop_and_pytorch_init_bounds() {
    let fc = Linear::new(50, 7).unwrap();
    // kaiming_uniform(a=√5) on fan_in 50: bound = gain·√3/√50 with gain = √(2/(1+5)) → 1/√50.
    let bound = 1.0 / 50f64.sqrt();
    let w = fc.weight.to_vec::<f32>().unwrap();
    assert!(w.iter().all(|&v| (v as f64).abs() <= bound));
    assert!(w.iter().any(|&v| (v as f64).abs() > 0.8 * bound));
    let x = Tensor::randn([3, 50], DType::F32).unwrap();
    let y = fc.forward(&x).unwrap().to_vec::<f32>().unwrap();
    let (xs, b) = (
        x.to_vec::<f32>().unwrap(),
        fc.bias.as_ref().unwrap().to_vec::<f32>().unwrap(),
    );
    for i in 0..3 {
        for o in 0..7 {
            let mut acc = b[o] as f64;
            for k in 0..50 {
                acc += xs[i * 50 + k] as f64 * w[o * 50 + k] as f64;
            }
            assert!((acc - y[i * 7 + o] as f64).abs() < 1e-4);
        }
    }
}

#[test]
fn children_and_modules_are_walked_with_pytorchs_names() {
    let n = net();
    assert_eq!(n.children_names(), ["stem", "blocks.0", "blocks.1", "head"]);
    let mut types = Vec::new();
    n.for_each_child(&mut |name, m| {
        types.push((name.to_string(), m.type_name(), m.num_parameters()))
    });
    assert_eq!(
        types[0],
        (
            "stem".to_string(),
            std::any::type_name::<Linear>(),
            3 * 4 + 4
        )
    );
    assert_eq!(types[3].2, 8);
    let mut all = Vec::new();
    n.for_each_module(&mut |name, _| all.push(name.to_string()));
    assert_eq!(
        all,
        [
            "stem",
            "blocks.0",
            "blocks.0.fc",
            "blocks.1",
            "blocks.1.fc",
            "head"
        ]
    );
    let seq = Sequential::new()
        .add(Linear::new(1, 2).unwrap())
        .add(Linear::new(2, 1).unwrap());
    let mut kinds = Vec::new();
    seq.for_each_child(&mut |name, m| kinds.push(format!("{name}: {}", m.type_name())));
    assert_eq!(kinds[1], format!("1: {}", std::any::type_name::<Linear>()));
}
