//! A tensor registered in two places (a language model's head tied to its embedding, a
//! buffer shared by two layers) is one parameter, as in PyTorch: `parameters()`,
//! `named_parameters()`, `named_buffers()` and the parameter count list it once, under the
//! name it was first reached by (`remove_duplicate=True`), while `state_dict()` keeps every
//! key; loading such a state dict and converting the model keep the tie.

use kiln_core::{DType, Tensor};
use kiln_nn::{Embedding, Forward, Linear, Module, StateDict};

#[derive(Module)]
#[module(crate = kiln_nn)]
struct TiedLm {
    emb: Embedding,
    proj: Linear,
    head: Linear,
}

fn tied_lm() -> TiedLm {
    let emb = Embedding::new(6, 4).unwrap();
    let proj = Linear::new(4, 4).unwrap();
    let mut head = Linear::with_options(4, 6, false, DType::F32).unwrap();
    head.weight = emb.weight.clone();
    TiedLm { emb, proj, head }
}

#[test]
fn tied_weight_is_listed_once_by_named_parameters() {
    let m = tied_lm();
    let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
    // PyTorch: ['emb.weight', 'proj.weight', 'proj.bias'].
    assert_eq!(names, ["emb.weight", "proj.weight", "proj.bias"]);
    let params = m.parameters();
    assert_eq!(params.len(), 3);
    assert!(params[0].is_same(&m.head.weight));
}

#[test]
fn tied_weight_is_counted_once_by_num_parameters() {
    // PyTorch: sum(p.numel() for p in model.parameters()) == 6*4 + 4*4 + 4 == 44.
    assert_eq!(tied_lm().num_parameters(), 44);
}

#[test]
fn state_dict_keeps_both_keys_of_a_tied_weight() {
    let m = tied_lm();
    let sd = m.state_dict();
    let keys: Vec<&str> = sd.keys().collect();
    assert_eq!(
        keys,
        ["emb.weight", "proj.weight", "proj.bias", "head.weight"]
    );
    assert!(sd.get("head.weight").unwrap().is_same(&m.emb.weight));
}

#[test]
fn load_state_dict_with_both_keys_keeps_the_tie() {
    let mut m = tied_lm();
    let src = tied_lm();
    let sd: StateDict = src.state_dict();
    m.load_state_dict(&sd, true).unwrap();
    assert!(m.head.weight.is_same(&m.emb.weight));
    assert_eq!(
        m.head.weight.to_vec::<f32>().unwrap(),
        src.emb.weight.to_vec::<f32>().unwrap()
    );
    assert_eq!(m.parameters().len(), 3);
}

#[test]
fn to_dtype_keeps_a_tied_weight_tied() {
    // PyTorch converts in place (`param.data = ...`), so the tie survives `model.double()`.
    let mut m = tied_lm();
    m.to_dtype(DType::F64).unwrap();
    assert!(m.head.weight.is_same(&m.emb.weight));
    assert_eq!(m.head.weight.dtype(), DType::F64);
    assert_eq!(m.parameters().len(), 3);
    assert!(m.emb.weight.requires_grad() && m.emb.weight.is_leaf());
}

#[test]
fn gradient_of_a_tied_weight_collects_both_uses() {
    let m = tied_lm();
    let tokens = Tensor::from([0i64, 3, 5]);
    let h = m.proj.forward(&m.emb.forward(&tokens).unwrap()).unwrap();
    let logits = m.head.forward(&h.tanh().unwrap()).unwrap();
    logits.sum().unwrap().backward().unwrap();
    let grads: Vec<Tensor> = m.parameters().iter().filter_map(|p| p.grad()).collect();
    assert_eq!(grads.len(), 3);
    assert!(m
        .head
        .weight
        .grad()
        .unwrap()
        .is_same(&m.emb.weight.grad().unwrap()));
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct Norm {
    #[module(buffer)]
    stats: Tensor,
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct SharedStats {
    a: Norm,
    b: Norm,
}

#[test]
fn shared_buffer_is_listed_once_by_named_buffers() {
    let stats = Tensor::zeros([3], DType::F32).unwrap();
    let m = SharedStats {
        a: Norm {
            stats: stats.clone(),
        },
        b: Norm { stats },
    };
    let names: Vec<String> = m.named_buffers().into_iter().map(|(n, _)| n).collect();
    // PyTorch: named_buffers() -> ['a.stats']; state_dict() keeps 'a.stats' and 'b.stats'.
    assert_eq!(names, ["a.stats"]);
    let keys: Vec<String> = m.state_dict().keys().map(String::from).collect();
    assert_eq!(keys, ["a.stats", "b.stats"]);
}
