//! Every loss module against real PyTorch (`data/layers_ref.txt`): value, gradients of input
//! and (float) target, the `weight` / `pos_weight` buffers in the state_dict; gradcheck;
//! `Reduction` parsing; errors naming the loss.

mod common;

use common::{check, gradcheck_module, inputs};
use kiln::{DType, Result, Tensor};
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
    KLDivLoss
);

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
