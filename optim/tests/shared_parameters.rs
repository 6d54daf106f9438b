//! Tied parameters (a language model's head sharing its embedding's weight) and tensors
//! passed twice: gradient clipping and the optimizers see each tensor once. Numbers from
//! real PyTorch (`tests/data/gen_shared_parameters.py` → `shared_parameters_ref.txt`).

mod common;
use kiln_core::{no_grad, DType, Tensor};
use kiln_nn::functional::cross_entropy;
use kiln_nn::{Embedding, EmbeddingOptions, Forward, Linear, Module};
use kiln_optim::*;
use std::collections::HashMap;

fn reference() -> HashMap<String, Vec<f64>> {
    common::reference(include_str!("data/shared_parameters_ref.txt"))
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], what: &str) {
    common::assert_close(got, want, 1e-9, 1e-10, what)
}

#[derive(kiln_nn::Module)]
#[module(crate = kiln_nn)]
struct TiedLm {
    emb: Embedding,
    proj: Linear,
    head: Linear,
}

impl TiedLm {
    /// The script's model, in float64, with its values.
    fn new() -> TiedLm {
        let emb =
            Embedding::with_options(6, 4, EmbeddingOptions::default().dtype(DType::F64)).unwrap();
        let proj = Linear::with_options(4, 4, true, DType::F64).unwrap();
        let mut head = Linear::with_options(4, 6, false, DType::F64).unwrap();
        head.weight = emb.weight.clone();
        let fill = |t: &Tensor, v: Vec<f64>| {
            let _g = no_grad();
            let src = Tensor::from(v)
                .reshape(t.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())
                .unwrap();
            t.copy_(&src).unwrap();
        };
        fill(
            &emb.weight,
            (0..24).map(|i| (0.9 * i as f64 + 0.3).sin()).collect(),
        );
        fill(
            &proj.weight,
            (0..16).map(|i| (0.7 * i as f64).cos() * 0.5).collect(),
        );
        fill(proj.bias.as_ref().unwrap(), vec![-0.2, 0.1, 0.05, 0.3]);
        TiedLm { emb, proj, head }
    }

    fn loss(&self) -> Tensor {
        let tokens = Tensor::from([0i64, 3, 5, 3, 1]);
        let targets = Tensor::from([1i64, 2, 0, 4, 5]);
        let h = self
            .proj
            .forward(&self.emb.forward(&tokens).unwrap())
            .unwrap();
        let logits = self.head.forward(&h.tanh().unwrap()).unwrap();
        cross_entropy(&logits, &targets)
            .unwrap()
            .mul_scalar(4.0)
            .unwrap()
    }
}

fn values(t: &Tensor) -> Vec<f64> {
    t.detach().contiguous().unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn clip_grad_norm_of_a_tied_model_counts_the_shared_weight_once() {
    let r = reference();
    let m = TiedLm::new();
    m.loss().backward().unwrap();
    let total = clip_grad_norm_(&m.parameters(), 1.0, 2.0).unwrap();
    assert_close(
        &[total.item::<f64>().unwrap()],
        &r["clip.total_norm"],
        "total norm",
    );
    for (name, p) in m.named_parameters() {
        assert_close(
            &values(&p.grad().unwrap()),
            &r[&format!("clip.grad.{name}")],
            &name,
        );
    }
}

#[test]
fn clip_grad_norm_counts_a_tensor_passed_twice_once() {
    // PyTorch would count (and scale) the repeated tensor twice; kiln takes the list as a
    // set, so the result is that of the unique list (PyTorch's numbers for it).
    let r = reference();
    let m = TiedLm::new();
    m.loss().backward().unwrap();
    let p = m.parameters();
    let dup = [
        p[0].clone(),
        p[1].clone(),
        p[2].clone(),
        m.head.weight.clone(),
    ];
    let total = clip_grad_norm_(&dup, 1.0, 2.0).unwrap();
    assert_close(
        &[total.item::<f64>().unwrap()],
        &r["clip.total_norm"],
        "total norm",
    );
    assert_close(
        &values(&m.emb.weight.grad().unwrap()),
        &r["clip.grad.emb.weight"],
        "emb.weight grad",
    );
}

#[test]
fn adamw_over_a_tied_model_parameters_matches_pytorch() {
    let r = reference();
    let m = TiedLm::new();
    let mut opt = AdamW::new(
        m.parameters(),
        AdamOptions {
            lr: 0.1,
            ..AdamOptions::adamw()
        },
    )
    .unwrap();
    for step in 1..=3 {
        opt.zero_grad().unwrap();
        m.loss().backward().unwrap();
        opt.step().unwrap();
        for (name, p) in m.named_parameters() {
            assert_close(
                &values(&p),
                &r[&format!("adamw.{step}.{name}")],
                &format!("step {step} {name}"),
            );
        }
    }
    assert!(m.head.weight.is_same(&m.emb.weight));
}

const DUPLICATE_WARNING: &str = "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more information";

fn param(v: [f64; 2]) -> Tensor {
    let p = Tensor::from(v).requires_grad_(true).unwrap();
    p.set_grad(Some(Tensor::from([1.0f64, 1.0]))).unwrap();
    p
}

#[test]
fn same_tensor_twice_in_a_group_warns_and_is_stepped_once() {
    let p = param([1.0, 2.0]);
    let q = param([0.0, 0.0]);
    let (opt, caught) = kiln_core::catch_warnings(|| {
        SGD::new(
            vec![p.clone(), q.clone(), p.clone()],
            SGDOptions {
                lr: 0.1,
                ..Default::default()
            },
        )
    });
    assert_eq!(caught, [DUPLICATE_WARNING]);
    let mut opt = opt.unwrap();
    assert_eq!(opt.param_groups()[0].params.len(), 2);
    opt.step().unwrap();
    // One SGD update: p - lr * grad.
    assert_eq!(p.to_vec::<f64>().unwrap(), [0.9, 1.9]);
}

#[test]
fn same_tensor_twice_warns_for_every_optimizer() {
    let p = param([1.0, 2.0]);
    let twice = || vec![p.clone(), p.clone()];
    let builds: Vec<Box<dyn Fn() -> kiln_core::Result<usize>>> = vec![
        Box::new(|| {
            Ok(SGD::new(twice(), Default::default())?.param_groups()[0]
                .params
                .len())
        }),
        Box::new(|| {
            Ok(Adam::new(twice(), Default::default())?.param_groups()[0]
                .params
                .len())
        }),
        Box::new(|| {
            Ok(AdamW::new(twice(), AdamOptions::adamw())?.param_groups()[0]
                .params
                .len())
        }),
        Box::new(|| {
            Ok(RMSprop::new(twice(), Default::default())?.param_groups()[0]
                .params
                .len())
        }),
        Box::new(|| {
            Ok(Adagrad::new(twice(), Default::default())?.param_groups()[0]
                .params
                .len())
        }),
    ];
    for build in builds {
        let (n, caught) = kiln_core::catch_warnings(build);
        assert_eq!(n.unwrap(), 1);
        assert_eq!(caught, [DUPLICATE_WARNING]);
    }
}

#[test]
fn same_tensor_in_two_groups_is_an_error() {
    let p = param([1.0, 2.0]);
    let groups = vec![
        ParamGroup::new(vec![p.clone()], AdamOptions::default()),
        ParamGroup::new(vec![p.clone()], AdamOptions::default()),
    ];
    let err = Adam::with_groups(groups, AdamOptions::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("some parameters appear in more than one parameter group"),
        "{err}"
    );
    let mut opt = Adam::new(vec![p.clone()], AdamOptions::default()).unwrap();
    let err = opt
        .add_param_group(ParamGroup::new(vec![p], AdamOptions::default()))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("some parameters appear in more than one parameter group"),
        "{err}"
    );
}
