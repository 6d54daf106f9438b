//! `nn.init` against PyTorch's documented formulas: gains, bounds, standard deviations, and
//! orthogonality checked with float64 loops.

use kiln_core::{DType, Tensor};
use kiln_nn::init::{self, FanMode, Nonlinearity};

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn calculate_gain_matches_pytorchs_table() {
    use Nonlinearity::*;
    assert_eq!(init::calculate_gain(Linear), 1.0);
    assert_eq!(init::calculate_gain(Sigmoid), 1.0);
    assert_eq!(init::calculate_gain(Tanh), 5.0 / 3.0);
    assert_eq!(init::calculate_gain(Relu), 2f64.sqrt());
    assert_eq!(init::calculate_gain(Selu), 0.75);
    let lr = init::calculate_gain(LeakyRelu(0.01));
    assert!((lr - (2.0 / (1.0 + 0.01f64 * 0.01)).sqrt()).abs() < 1e-15);
}

#[test]
fn fans_of_linear_and_conv_weights() {
    let w = Tensor::zeros([16, 3, 5, 5], DType::F32).unwrap();
    assert_eq!(init::calculate_fan_in_and_fan_out(&w).unwrap(), (75, 400));
    let err = init::calculate_fan_in_and_fan_out(&Tensor::zeros([4], DType::F32).unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("fewer than 2 dimensions"), "{err}");
}

#[test]
fn uniform_initialisers_stay_in_their_bounds() {
    kiln_core::manual_seed(7);
    let w = Tensor::zeros([200, 300], DType::F64).unwrap();
    init::xavier_uniform_(&w, 2.0).unwrap();
    let a = 2.0 * (6.0f64 / 500.0).sqrt();
    let v = values(&w);
    assert!(v.iter().all(|x| x.abs() <= a));
    // U(-a, a) has std a/√3.
    let (m, s) = mean_std(&v);
    assert!(
        m.abs() < 0.01 * a && (s / (a / 3f64.sqrt()) - 1.0).abs() < 0.02,
        "{m} {s}"
    );

    init::kaiming_uniform_(&w, 0.0, FanMode::FanOut, Nonlinearity::Relu).unwrap();
    let bound = 2f64.sqrt() * (3.0f64 / 200.0).sqrt();
    let v = values(&w);
    assert!(v.iter().all(|x| x.abs() <= bound));
    assert!(v.iter().any(|x| x.abs() > 0.99 * bound));
}

#[test]
fn normal_initialisers_have_pytorchs_std() {
    kiln_core::manual_seed(8);
    let w = Tensor::zeros([300, 400], DType::F64).unwrap();
    init::xavier_normal_(&w, 1.0).unwrap();
    let (m, s) = mean_std(&values(&w));
    let want = (2.0f64 / 700.0).sqrt();
    assert!(
        m.abs() < 0.01 * want && (s / want - 1.0).abs() < 0.02,
        "{m} {s}"
    );

    init::kaiming_normal_(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu).unwrap();
    let (_, s) = mean_std(&values(&w));
    let want = 2f64.sqrt() / 400f64.sqrt();
    assert!((s / want - 1.0).abs() < 0.02, "{s} vs {want}");

    init::normal_(&w, 3.0, 0.5).unwrap();
    let (m, s) = mean_std(&values(&w));
    assert!((m - 3.0).abs() < 0.01 && (s - 0.5).abs() < 0.01, "{m} {s}");
}

#[test]
fn constants() {
    let w = Tensor::ones([2, 3], DType::F32).unwrap();
    init::zeros_(&w).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), [0.0; 6]);
    init::constant_(&w, 2.5).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), [2.5; 6]);
    init::ones_(&w).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), [1.0; 6]);
}

/// Rows (when rows ≤ cols) or columns (otherwise) of the flattened weight are orthonormal
/// after dividing by the gain.
fn assert_orthogonal(shape: &[usize], gain: f64) {
    let w = Tensor::zeros(shape, DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    init::orthogonal_(&w, gain).unwrap();
    assert!(w.is_leaf() && w.requires_grad());
    let rows = shape[0];
    let cols: usize = shape[1..].iter().product();
    let v = values(&w.detach().to_dtype(DType::F64).unwrap());
    let by_rows = rows <= cols;
    let (n, len) = if by_rows { (rows, cols) } else { (cols, rows) };
    let at = |i: usize, k: usize| {
        if by_rows {
            v[i * cols + k]
        } else {
            v[k * cols + i]
        }
    };
    for i in 0..n {
        for j in 0..n {
            let dot: f64 = (0..len).map(|k| at(i, k) * at(j, k)).sum::<f64>() / (gain * gain);
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((dot - want).abs() < 1e-5, "{shape:?} ({i}, {j}): {dot}");
        }
    }
}

#[test]
fn orthogonal_gives_orthonormal_rows_or_columns() {
    kiln_core::manual_seed(9);
    assert_orthogonal(&[6, 10], 1.0);
    assert_orthogonal(&[10, 6], 1.0);
    assert_orthogonal(&[4, 2, 3], 2.0);
    let err = init::orthogonal_(&Tensor::zeros([3], DType::F32).unwrap(), 1.0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Only tensors with 2 or more dimensions"),
        "{err}"
    );
}
