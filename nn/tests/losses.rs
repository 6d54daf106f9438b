//! Every loss module against real PyTorch (`data/layers_ref.txt`): value, gradients of input
//! and (float) target, the `weight` / `pos_weight` buffers in the state_dict; gradcheck;
//! `Reduction` parsing; errors naming the loss.

mod common;

use common::{check, gradcheck_module, inputs};
use kiln_core::{DType, Result, Tensor};
use kiln_nn::*;

macro_rules! loss_case {
    ($name:expr, $m:expr) => {{
        let mut m = $m;
        let f = |m: &_, x: &[Tensor]| -> Result<Tensor> { call(m, x) };
        let c = check($name, &mut m, f);
        gradcheck_module(m, &inputs(&c), f);
    }};
}

/// The two-input forward every loss has, as a trait so one macro serves them all.
trait Loss {
    fn run(&self, input: &Tensor, target: &Tensor) -> Result<Tensor>;
}

macro_rules! impl_loss {
    ($($t:ty),*) => {$(
        impl Loss for $t {
            fn run(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
                self.forward(input, target)
            }
        }
    )*};
}
impl_loss!(
    MSELoss,
    L1Loss,
    SmoothL1Loss,
    HuberLoss,
    BCELoss,
    BCEWithLogitsLoss,
    NLLLoss,
    CrossEntropyLoss,
    KLDivLoss,
    HingeEmbeddingLoss,
    SoftMarginLoss,
    PoissonNLLLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    MultiLabelMarginLoss
);

/// The losses of three tensors (`forward(a, b, c)`).
trait Loss3 {
    fn run3(&self, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor>;
}

macro_rules! impl_loss3 {
    ($($t:ty),*) => {$(
        impl Loss3 for $t {
            fn run3(&self, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
                self.forward(a, b, c)
            }
        }
    )*};
}
impl_loss3!(
    MarginRankingLoss,
    CosineEmbeddingLoss,
    TripletMarginLoss,
    GaussianNLLLoss
);

fn call3<L: Loss3>(m: &L, x: &[Tensor]) -> Result<Tensor> {
    m.run3(&x[0], &x[1], &x[2])
}

macro_rules! loss3_case {
    ($name:expr, $m:expr) => {{
        let mut m = $m;
        let f = |m: &_, x: &[Tensor]| -> Result<Tensor> { call3(m, x) };
        let c = check($name, &mut m, f);
        gradcheck_module(m, &inputs(&c), f);
    }};
}

fn call<L: Loss>(m: &L, x: &[Tensor]) -> Result<Tensor> {
    m.run(&x[0], &x[1])
}

fn w5() -> Option<Tensor> {
    Some(Tensor::zeros([5], DType::F64).unwrap())
}

#[test]
fn regression_losses_match_pytorch() {
    for (suffix, r) in [
        ("mean", Reduction::Mean),
        ("sum", Reduction::Sum),
        ("none", Reduction::None),
    ] {
        loss_case!(&format!("mse_{suffix}"), MSELoss::new().reduction(r));
        loss_case!(&format!("l1_{suffix}"), L1Loss::new().reduction(r));
    }
    loss_case!("smooth_l1", SmoothL1Loss::new().beta(0.5));
    loss_case!(
        "smooth_l1_sum",
        SmoothL1Loss::new().reduction(Reduction::Sum)
    );
    loss_case!("huber", HuberLoss::new().delta(0.7));
    loss_case!(
        "huber_none",
        HuberLoss::new().reduction(Reduction::None).delta(1.2)
    );
}

#[test]
fn binary_losses_match_pytorch() {
    loss_case!("bce", BCELoss::new());
    loss_case!(
        "bce_weight",
        BCELoss::new().weight(w5()).reduction(Reduction::Sum)
    );
    loss_case!("bce_logits", BCEWithLogitsLoss::new());
    loss_case!(
        "bce_logits_weights",
        BCEWithLogitsLoss::new().weight(w5()).pos_weight(w5())
    );
}

#[test]
fn classification_losses_match_pytorch() {
    loss_case!("nll", NLLLoss::new());
    loss_case!("nll_weight_ignore", NLLLoss::new().weight(w5()));
    loss_case!(
        "nll_sum_ignore3",
        NLLLoss::new().reduction(Reduction::Sum).ignore_index(3)
    );
    loss_case!("cross_entropy", CrossEntropyLoss::new());
    loss_case!(
        "cross_entropy_full",
        CrossEntropyLoss::new()
            .weight(w5())
            .ignore_index(4)
            .label_smoothing(0.1)
    );
    loss_case!(
        "cross_entropy_none",
        CrossEntropyLoss::new()
            .reduction(Reduction::None)
            .label_smoothing(0.2)
    );
    loss_case!("cross_entropy_probs", CrossEntropyLoss::new());
    loss_case!("cross_entropy_spatial", CrossEntropyLoss::new());
    loss_case!(
        "kl_div_batchmean",
        KLDivLoss::new().reduction(KLDivReduction::BatchMean)
    );
    loss_case!(
        "kl_div_log_target_sum",
        KLDivLoss::new()
            .reduction(KLDivReduction::Sum)
            .log_target(true)
    );
    loss_case!("kl_div_mean", KLDivLoss::new());
}

#[test]
fn reduction_parses_pytorch_strings() {
    assert_eq!("mean".parse::<Reduction>().unwrap(), Reduction::Mean);
    assert_eq!("sum".parse::<Reduction>().unwrap(), Reduction::Sum);
    assert_eq!("none".parse::<Reduction>().unwrap(), Reduction::None);
    assert_eq!(Reduction::default(), Reduction::Mean);
    assert_eq!(
        [Reduction::None, Reduction::Mean, Reduction::Sum].map(Reduction::as_int),
        [0, 1, 2]
    );
    let e = "avg".parse::<Reduction>().unwrap_err().to_string();
    assert!(e.contains("avg is not a valid value for reduction"), "{e}");
    assert_eq!(
        "batchmean".parse::<KLDivReduction>().unwrap(),
        KLDivReduction::BatchMean
    );
    assert_eq!(
        "sum".parse::<KLDivReduction>().unwrap(),
        KLDivReduction::Sum
    );
}

#[test]
fn losses_are_modules() {
    // No parameters; weights are buffers under PyTorch's names.
    assert!(MSELoss::new().state_dict().is_empty());
    assert!(CrossEntropyLoss::new().state_dict().is_empty());
    let l = BCEWithLogitsLoss::new().weight(w5()).pos_weight(w5());
    assert_eq!(
        l.state_dict().keys().collect::<Vec<_>>(),
        ["weight", "pos_weight"]
    );
    assert!(l.named_parameters().is_empty());
    #[derive(Module)]
    #[module(crate = kiln_nn)]
    struct Model {
        fc: Linear,
        criterion: CrossEntropyLoss,
    }
    let m = Model {
        fc: Linear::new(3, 5).unwrap(),
        criterion: CrossEntropyLoss::new().weight(Some(Tensor::ones([5], DType::F32).unwrap())),
    };
    assert_eq!(
        m.state_dict().keys().collect::<Vec<_>>(),
        ["fc.weight", "fc.bias", "criterion.weight"]
    );
    let y =
        m.fc.forward(&Tensor::ones([2, 3], DType::F32).unwrap())
            .unwrap();
    let loss = m.criterion.forward(&y, &Tensor::from([1i64, 4])).unwrap();
    loss.backward().unwrap();
    assert!(m.fc.weight.grad().is_some());
}

fn err<T>(r: Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_shapes_name_the_loss() {
    let a = Tensor::ones([2, 3], DType::F32).unwrap();
    let b = Tensor::ones([3, 2], DType::F32).unwrap();
    for (name, e) in [
        ("MSELoss", err(MSELoss::new().forward(&a, &b))),
        ("L1Loss", err(L1Loss::new().forward(&a, &b))),
        ("HuberLoss", err(HuberLoss::new().forward(&a, &b))),
        ("SmoothL1Loss", err(SmoothL1Loss::new().forward(&a, &b))),
        ("BCELoss", err(BCELoss::new().forward(&a, &b))),
        (
            "BCEWithLogitsLoss",
            err(BCEWithLogitsLoss::new().forward(&a, &b)),
        ),
        ("KLDivLoss", err(KLDivLoss::new().forward(&a, &b))),
    ] {
        assert!(e.contains(name) && e.contains("[3, 2]"), "{e}");
    }
    let t = Tensor::from([0i64, 1, 2]);
    let e = err(CrossEntropyLoss::new().forward(&a, &t));
    assert!(
        e.contains("CrossEntropyLoss") && e.contains("[2, 3]") && e.contains("[3]"),
        "{e}"
    );
    let e = err(NLLLoss::new().forward(&a, &t));
    assert!(e.contains("NLLLoss"), "{e}");
}

#[test]
fn margin_losses_match_pytorch() {
    loss3_case!("margin_ranking", MarginRankingLoss::new());
    loss3_case!(
        "margin_ranking_sum",
        MarginRankingLoss::new()
            .margin(0.5)
            .reduction(Reduction::Sum)
    );
    loss3_case!(
        "margin_ranking_none",
        MarginRankingLoss::new()
            .margin(0.3)
            .reduction(Reduction::None)
    );
    loss_case!("hinge_embedding", HingeEmbeddingLoss::new());
    loss_case!(
        "hinge_embedding_none",
        HingeEmbeddingLoss::new()
            .margin(0.5)
            .reduction(Reduction::None)
    );
    loss_case!("soft_margin", SoftMarginLoss::new());
    loss_case!(
        "soft_margin_sum",
        SoftMarginLoss::new().reduction(Reduction::Sum)
    );
    loss3_case!("cosine_embedding", CosineEmbeddingLoss::new().margin(0.2));
    loss3_case!(
        "cosine_embedding_unbatched",
        CosineEmbeddingLoss::new()
            .margin(-0.5)
            .reduction(Reduction::None)
    );
    loss3_case!("triplet", TripletMarginLoss::new());
    loss3_case!(
        "triplet_swap_p1",
        TripletMarginLoss::new()
            .margin(2.0)
            .p(1.0)
            .swap(true)
            .reduction(Reduction::None)
    );
    loss_case!("multi_margin", MultiMarginLoss::new());
    loss_case!(
        "multi_margin_p2_weight",
        MultiMarginLoss::new()
            .p(2)
            .margin(0.7)
            .weight(w5())
            .reduction(Reduction::None)
    );
    loss_case!("multilabel_margin", MultiLabelMarginLoss::new());
    loss_case!(
        "multilabel_margin_unbatched",
        MultiLabelMarginLoss::new().reduction(Reduction::None)
    );
    loss_case!("multilabel_soft_margin", MultiLabelSoftMarginLoss::new());
    loss_case!(
        "multilabel_soft_margin_weight",
        MultiLabelSoftMarginLoss::new()
            .weight(w5())
            .reduction(Reduction::None)
    );
}

#[test]
fn likelihood_losses_match_pytorch() {
    loss_case!("poisson_nll", PoissonNLLLoss::new());
    loss_case!(
        "poisson_nll_full_rates",
        PoissonNLLLoss::new()
            .log_input(false)
            .full(true)
            .eps(1e-3)
            .reduction(Reduction::Sum)
    );
    loss3_case!("gaussian_nll", GaussianNLLLoss::new());
    loss3_case!(
        "gaussian_nll_homo",
        GaussianNLLLoss::new().full(true).reduction(Reduction::Sum)
    );
    loss3_case!(
        "gaussian_nll_homo_last1",
        GaussianNLLLoss::new().reduction(Reduction::None)
    );
    // Variances below eps are clamped in value while the gradient passes through, as in
    // PyTorch; a finite difference there sees the clamp, so this case has no gradcheck.
    let mut m = GaussianNLLLoss::new().eps(0.1).reduction(Reduction::None);
    check(
        "gaussian_nll_clamp",
        &mut m,
        |m: &GaussianNLLLoss, x: &[Tensor]| call3(m, x),
    );
}

#[test]
fn new_losses_check_arguments_like_pytorch() {
    let a = Tensor::ones([2, 3], DType::F64).unwrap();
    let v = Tensor::ones([3], DType::F64).unwrap();
    let e = err(MarginRankingLoss::new().forward(&a, &a, &v));
    assert!(
        e.contains("All input tensors should have same dimension") && e.contains("[3]"),
        "{e}"
    );
    let e = err(TripletMarginLoss::new().margin(0.0).forward(&a, &a, &a));
    assert!(e.contains("margin must be greater than 0, got 0"), "{e}");
    let e = err(TripletMarginLoss::new().forward(&a, &a, &v));
    assert!(e.contains("anchor 2D, positive 2D, and negative 1D"), "{e}");
    let e = err(GaussianNLLLoss::new().forward(&a, &a, &v.neg().unwrap()));
    assert!(e.contains("var has negative entry/entries"), "{e}");
    let bad_var = Tensor::ones([3, 2], DType::F64).unwrap();
    let e = err(GaussianNLLLoss::new().forward(&a, &a, &bad_var));
    assert!(e.contains("var is of incorrect size"), "{e}");
    // var one dim short of the input, or with one mismatched dim, broadcasts.
    for shape in [vec![2], vec![2, 1], vec![1, 3]] {
        let var = Tensor::ones(shape.as_slice(), DType::F64).unwrap();
        GaussianNLLLoss::new().forward(&a, &a, &var).unwrap();
    }
    let t = Tensor::from([0i64, 2]);
    let e = err(MultiMarginLoss::new().p(3).forward(&a, &t));
    assert!(e.contains("only p == 1 and p == 2 supported"), "{e}");
    let w = Some(Tensor::ones([1, 3], DType::F64).unwrap());
    let e = err(MultiMarginLoss::new().weight(w).forward(&a, &t));
    assert!(e.contains("weight must be one-dimensional"), "{e}");
    let e = err(CosineEmbeddingLoss::new().forward(&v, &v, &t));
    assert!(
        e.contains("1D target tensor expects 2D input tensors"),
        "{e}"
    );
}

#[test]
fn functional_forms_agree_with_modules() {
    use kiln_nn::functional as F;
    let c = common::case("triplet_swap_p1");
    let x = inputs(&c);
    let want = common::get(&c, "out").unwrap();
    let got =
        F::triplet_margin_loss_with(&x[0], &x[1], &x[2], 2.0, 1.0, 1e-6, true, Reduction::None)
            .unwrap();
    common::assert_close("F::triplet_margin_loss", &got, want);
    let c = common::case("gaussian_nll_homo");
    let x = inputs(&c);
    let got = F::gaussian_nll_loss_with(&x[0], &x[1], &x[2], true, 1e-6, Reduction::Sum).unwrap();
    common::assert_close(
        "F::gaussian_nll_loss",
        &got,
        common::get(&c, "out").unwrap(),
    );
    let c = common::case("multilabel_soft_margin");
    let x = inputs(&c);
    let got = F::multilabel_soft_margin_loss(&x[0], &x[1]).unwrap();
    common::assert_close(
        "F::multilabel_soft_margin_loss",
        &got,
        common::get(&c, "out").unwrap(),
    );
    let c = common::case("poisson_nll");
    let x = inputs(&c);
    let got = F::poisson_nll_loss(&x[0], &x[1]).unwrap();
    common::assert_close("F::poisson_nll_loss", &got, common::get(&c, "out").unwrap());
    let c = common::case("margin_ranking");
    let x = inputs(&c);
    let got = F::margin_ranking_loss(&x[0], &x[1], &x[2]).unwrap();
    common::assert_close(
        "F::margin_ranking_loss",
        &got,
        common::get(&c, "out").unwrap(),
    );
    let c = common::case("cosine_embedding");
    let x = inputs(&c);
    let got = F::cosine_embedding_loss_with(&x[0], &x[1], &x[2], 0.2, Reduction::Mean).unwrap();
    common::assert_close(
        "F::cosine_embedding_loss",
        &got,
        common::get(&c, "out").unwrap(),
    );
    let c = common::case("hinge_embedding");
    let x = inputs(&c);
    let got = F::hinge_embedding_loss(&x[0], &x[1]).unwrap();
    common::assert_close(
        "F::hinge_embedding_loss",
        &got,
        common::get(&c, "out").unwrap(),
    );
    let c = common::case("soft_margin_sum");
    let x = inputs(&c);
    let got = F::soft_margin_loss_with(&x[0], &x[1], Reduction::Sum).unwrap();
    common::assert_close("F::soft_margin_loss", &got, common::get(&c, "out").unwrap());
    let c = common::case("multi_margin");
    let x = inputs(&c);
    let got = F::multi_margin_loss(&x[0], &x[1]).unwrap();
    common::assert_close(
        "F::multi_margin_loss",
        &got,
        common::get(&c, "out").unwrap(),
    );
}
