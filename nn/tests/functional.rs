//! `kiln::nn::functional` (PyTorch's `F`): the wrappers reorder arguments and convert
//! `reduction`, so each is checked against PyTorch's numbers for the same call
//! (`data/layers_ref.txt`) or a float64 loop written here.

mod common;

use common::{assert_close, case, get, Case};
use kiln_core::{DType, Tensor};
use kiln_nn::functional as F;
use kiln_nn::{KLDivReduction, Reduction};

fn t<'a>(c: &'a Case, k: &str) -> &'a Tensor {
    get(c, k).unwrap_or_else(|| panic!("no {k}"))
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.contiguous().unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn conv_and_pool_wrappers_match_pytorch() {
    let c = case("conv2d");
    let y = F::conv2d_with(
        t(&c, "in0"),
        t(&c, "state.weight"),
        Some(t(&c, "state.bias")),
        [2, 1],
        [1, 0],
        [1, 1],
        1,
    )
    .unwrap();
    assert_close("F::conv2d_with", &y, t(&c, "out"));
    let c = case("conv1d_same");
    let y = F::conv1d_padding_with(
        t(&c, "in0"),
        t(&c, "state.weight"),
        Some(t(&c, "state.bias")),
        [1],
        "same",
        [2],
        1,
    )
    .unwrap();
    assert_close("F::conv1d_padding_with", &y, t(&c, "out"));
    let c = case("adaptive_max_pool1d");
    let (v, i) = F::adaptive_max_pool1d_with_indices(t(&c, "in0"), &[4]).unwrap();
    assert_close("F::adaptive_max_pool1d", &v, t(&c, "out"));
    assert_close("F::adaptive_max_pool1d indices", &i, t(&c, "idx"));
    assert_close(
        "F::adaptive_max_pool1d",
        &F::adaptive_max_pool1d(t(&c, "in0"), &[4]).unwrap(),
        t(&c, "out"),
    );
    let c = case("adaptive_max_pool2d");
    assert_close(
        "F::adaptive_max_pool2d",
        &F::adaptive_max_pool2d(t(&c, "in0"), &[3, 2]).unwrap(),
        t(&c, "out"),
    );
    let c = case("avg_pool2d");
    assert_close(
        "F::avg_pool2d_with",
        &F::avg_pool2d_with(t(&c, "in0"), &[3, 3], &[2, 2], &[1, 1], false, true, None).unwrap(),
        t(&c, "out"),
    );
}

#[test]
fn normalization_wrappers_match_pytorch() {
    // F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    // PyTorch's order, training updates the given running stats in place.
    let c = case("batch_norm2d");
    let (rm, rv) = (
        t(&c, "state.running_mean").clone(),
        t(&c, "state.running_var").clone(),
    );
    let y = F::batch_norm_with(
        t(&c, "in0"),
        Some(&rm),
        Some(&rv),
        Some(t(&c, "state.weight")),
        Some(t(&c, "state.bias")),
        true,
        0.1,
        1e-5,
    )
    .unwrap();
    assert_close("F::batch_norm_with", &y, t(&c, "out"));
    assert_close(
        "F::batch_norm_with running_mean",
        &rm,
        t(&c, "step1.running_mean"),
    );
    assert_close(
        "F::batch_norm_with running_var",
        &rv,
        t(&c, "step1.running_var"),
    );
    // Evaluation with the stats after the second step reproduces the eval output.
    let (rm2, rv2) = (t(&c, "step2.running_mean"), t(&c, "step2.running_var"));
    let y = F::batch_norm_with(
        t(&c, "in0"),
        Some(rm2),
        Some(rv2),
        Some(t(&c, "state.weight")),
        Some(t(&c, "state.bias")),
        false,
        0.1,
        1e-5,
    )
    .unwrap();
    assert_close("F::batch_norm_with eval", &y, t(&c, "out_eval"));

    let c = case("group_norm");
    let y = F::group_norm_with(
        t(&c, "in0"),
        2,
        Some(t(&c, "state.weight")),
        Some(t(&c, "state.bias")),
        1e-5,
    )
    .unwrap();
    assert_close("F::group_norm_with", &y, t(&c, "out"));

    let c = case("rms_norm");
    let y = F::rms_norm_with(t(&c, "in0"), [3, 4], Some(t(&c, "state.weight")), None).unwrap();
    assert_close("F::rms_norm_with", &y, t(&c, "out"));

    // layer_norm and instance_norm against float64 loops.
    let x: Vec<f64> = (0..24).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.3).collect();
    let xt = Tensor::from_vec(x.clone(), &[2, 3, 4]).unwrap();
    let w = Tensor::from_vec((0..4).map(|i| 0.5 + i as f64 * 0.25).collect(), &[4]).unwrap();
    let b = Tensor::from_vec((0..4).map(|i| i as f64 * 0.1 - 0.2).collect(), &[4]).unwrap();
    let norm = |chunk: &[f64], eps: f64| -> Vec<f64> {
        let n = chunk.len() as f64;
        let m = chunk.iter().sum::<f64>() / n;
        let v = chunk.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / n;
        chunk.iter().map(|a| (a - m) / (v + eps).sqrt()).collect()
    };
    let want: Vec<f64> = x
        .chunks(4)
        .flat_map(|ch| norm(ch, 1e-5))
        .enumerate()
        .map(|(i, v)| v * (0.5 + (i % 4) as f64 * 0.25) + ((i % 4) as f64 * 0.1 - 0.2))
        .collect();
    let got = F::layer_norm_with(&xt, &[4], Some(&w), Some(&b), 1e-5).unwrap();
    for (g, w) in vals(&got).iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "layer_norm {g} {w}");
    }
    // instance_norm over [N=2, C=3, L=4]: each (n, c) row of 4 on its own.
    let want: Vec<f64> = x.chunks(4).flat_map(|ch| norm(ch, 1e-5)).collect();
    for (g, w) in vals(&F::instance_norm(&xt).unwrap()).iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "instance_norm {g} {w}");
    }
}

#[test]
fn embedding_wrapper_takes_input_first() {
    let c = case("embedding_padding");
    let y = F::embedding_with(
        t(&c, "in0"),
        t(&c, "state.weight"),
        Some(2),
        None,
        2.0,
        false,
    )
    .unwrap();
    assert_close("F::embedding_with", &y, t(&c, "out"));
    let y = F::embedding(t(&c, "in0"), t(&c, "state.weight")).unwrap();
    assert_close("F::embedding", &y, t(&c, "out"));
    let c = case("embedding_freq");
    let w = t(&c, "state.weight").detach().requires_grad_(true).unwrap();
    let y = F::embedding_with(t(&c, "in0"), &w, None, None, 2.0, true).unwrap();
    y.mul(t(&c, "cot"))
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_close(
        "F::embedding_with scale_grad_by_freq grad",
        &w.grad().unwrap(),
        t(&c, "grad.weight"),
    );
    assert!(F::embedding_with(t(&c, "in0"), &w, Some(6), None, 2.0, false).is_err());
    // max_norm renormalises the given weight in place, as PyTorch's F.embedding.
    let c = case("embedding_max_norm");
    let w = t(&c, "state.weight").detach();
    let y = F::embedding_with(t(&c, "in0"), &w, None, Some(1.0), 2.0, false).unwrap();
    assert_close("F::embedding_with max_norm", &y, t(&c, "out"));
    assert_close(
        "F::embedding_with max_norm weight",
        &w,
        t(&c, "after.weight"),
    );
}

#[test]
fn loss_wrappers_match_pytorch() {
    let c = case("cross_entropy_full");
    let y = F::cross_entropy_with(
        t(&c, "in0"),
        t(&c, "in1"),
        Some(t(&c, "state.weight")),
        4,
        Reduction::Mean,
        0.1,
    )
    .unwrap();
    assert_close("F::cross_entropy_with", &y, t(&c, "out"));
    let c = case("cross_entropy");
    assert_close(
        "F::cross_entropy",
        &F::cross_entropy(t(&c, "in0"), t(&c, "in1")).unwrap(),
        t(&c, "out"),
    );
    let c = case("nll_sum_ignore3");
    let y = F::nll_loss_with(t(&c, "in0"), t(&c, "in1"), None, 3, Reduction::Sum).unwrap();
    assert_close("F::nll_loss_with", &y, t(&c, "out"));
    let c = case("nll");
    assert_close(
        "F::nll_loss",
        &F::nll_loss(t(&c, "in0"), t(&c, "in1")).unwrap(),
        t(&c, "out"),
    );
    let c = case("mse_sum");
    let y = F::mse_loss_with(t(&c, "in0"), t(&c, "in1"), Reduction::Sum).unwrap();
    assert_close("F::mse_loss_with", &y, t(&c, "out"));
    let c = case("mse_mean");
    assert_close(
        "F::mse_loss",
        &F::mse_loss(t(&c, "in0"), t(&c, "in1")).unwrap(),
        t(&c, "out"),
    );
    let c = case("l1_none");
    let y = F::l1_loss_with(t(&c, "in0"), t(&c, "in1"), Reduction::None).unwrap();
    assert_close("F::l1_loss_with", &y, t(&c, "out"));
    let c = case("smooth_l1");
    let y = F::smooth_l1_loss_with(t(&c, "in0"), t(&c, "in1"), Reduction::Mean, 0.5).unwrap();
    assert_close("F::smooth_l1_loss_with", &y, t(&c, "out"));
    let c = case("huber_none");
    let y = F::huber_loss_with(t(&c, "in0"), t(&c, "in1"), Reduction::None, 1.2).unwrap();
    assert_close("F::huber_loss_with", &y, t(&c, "out"));
    let c = case("bce_weight");
    let y = F::binary_cross_entropy_with(
        t(&c, "in0"),
        t(&c, "in1"),
        Some(t(&c, "state.weight")),
        Reduction::Sum,
    )
    .unwrap();
    assert_close("F::binary_cross_entropy_with", &y, t(&c, "out"));
    let c = case("bce_logits_weights");
    let y = F::binary_cross_entropy_with_logits_with(
        t(&c, "in0"),
        t(&c, "in1"),
        Some(t(&c, "state.weight")),
        Reduction::Mean,
        Some(t(&c, "state.pos_weight")),
    )
    .unwrap();
    assert_close("F::binary_cross_entropy_with_logits_with", &y, t(&c, "out"));
    let c = case("kl_div_batchmean");
    let y = F::kl_div_with(t(&c, "in0"), t(&c, "in1"), KLDivReduction::BatchMean, false).unwrap();
    assert_close("F::kl_div_with batchmean", &y, t(&c, "out"));
    let c = case("kl_div_mean");
    assert_close(
        "F::kl_div",
        &F::kl_div(t(&c, "in0"), t(&c, "in1")).unwrap(),
        t(&c, "out"),
    );
}

#[test]
fn activation_wrappers_match_pytorch() {
    for (name, f) in [
        (
            "softmin",
            (|x: &Tensor| F::softmin(x, -1)) as fn(&Tensor) -> kiln_core::Result<Tensor>,
        ),
        ("elu", |x| F::elu_with(x, 0.7)),
        ("log_sigmoid", F::logsigmoid),
        ("relu", F::relu),
        ("gelu_tanh", |x| F::gelu_with(x, "tanh")),
        ("softmax", |x| F::softmax(x, 1)),
        ("leaky_relu", |x| F::leaky_relu_with(x, 0.2)),
        ("selu", F::selu),
    ] {
        let c = case(name);
        assert_close(
            &format!("F::{name}"),
            &f(t(&c, "in0")).unwrap(),
            t(&c, "out"),
        );
    }
}

#[test]
fn normalize_matches_a_float64_loop() {
    let x: Vec<f64> = vec![3.0, -4.0, 0.5, 1.0, 2.0, -2.0, 0.0, 0.0, 0.0];
    let xt = Tensor::from_vec(x.clone(), &[3, 3]).unwrap();
    // dim 1, p = 2: rows; the zero row stays zero (divided by eps).
    let got = vals(&F::normalize(&xt).unwrap());
    for r in 0..3 {
        let row = &x[3 * r..3 * r + 3];
        let n = row.iter().map(|a| a * a).sum::<f64>().sqrt().max(1e-12);
        for j in 0..3 {
            assert!((got[3 * r + j] - row[j] / n).abs() < 1e-15);
        }
    }
    // dim 0, p = 1.
    let got = vals(&F::normalize_with(&xt, 1.0, 0, 1e-12).unwrap());
    for j in 0..3 {
        let n = (0..3).map(|r| x[3 * r + j].abs()).sum::<f64>().max(1e-12);
        for r in 0..3 {
            assert!((got[3 * r + j] - x[3 * r + j] / n).abs() < 1e-15);
        }
    }
}

#[test]
fn shape_helpers() {
    let i = Tensor::from([0i64, 2, 1]);
    let oh = F::one_hot_with(&i, 4).unwrap();
    assert_eq!(oh.shape(), &[3, 4]);
    assert_eq!(
        oh.to_vec::<i64>().unwrap(),
        [1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0]
    );
    let x = Tensor::ones([1, 2], DType::F64).unwrap();
    let p = F::pad_with(&x, [1, 2], "constant", Some(5.0)).unwrap();
    assert_eq!(p.to_vec::<f64>().unwrap(), [5.0, 1.0, 1.0, 5.0, 5.0]);
    // dropout outside training is the identity; p = 0 in training too.
    let x = Tensor::from([1.0f64, 2.0, 3.0]);
    assert_eq!(
        F::dropout(&x, 0.5, false).unwrap().to_vec::<f64>().unwrap(),
        [1.0, 2.0, 3.0]
    );
    assert_eq!(
        F::dropout(&x, 0.0, true).unwrap().to_vec::<f64>().unwrap(),
        [1.0, 2.0, 3.0]
    );
}
