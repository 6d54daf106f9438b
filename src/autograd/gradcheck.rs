//! Finite-difference checks of gradients, public so users can test their own functions.
//!
//! `gradcheck` compares the Jacobian autograd computes with central differences in float64;
//! `gradgradcheck` does the same for the function that maps inputs and output gradients to
//! input gradients, which checks double backward.

use super::{grad, GradOptions};
use crate::{no_grad, DType, Error, Result, Tensor};

/// Tolerances and step of the finite differences.
#[derive(Clone, Copy, Debug)]
pub struct GradcheckOptions {
    pub eps: f64,
    pub atol: f64,
    pub rtol: f64,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        // PyTorch's gradcheck defaults.
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
        }
    }
}

type Func<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a;

fn float_outputs(outs: Vec<Tensor>) -> Vec<Tensor> {
    outs.into_iter().filter(|t| t.is_floating_point()).collect()
}

fn flat(t: &Tensor) -> Result<Vec<f64>> {
    t.to_vec::<f64>()
}

/// `J[out][in]`: rows = output elements, columns = input elements, per (output, input) pair.
type Jacobians = Vec<Vec<Vec<Vec<f64>>>>;

fn numerical(f: &Func<'_>, inputs: &[Tensor], checked: &[usize], eps: f64) -> Result<Jacobians> {
    let _g = no_grad();
    let base_outs = float_outputs(f(inputs)?);
    let mut jac: Jacobians = base_outs
        .iter()
        .map(|o| {
            checked
                .iter()
                .map(|&i| vec![vec![0.0; inputs[i].numel()]; o.numel()])
                .collect()
        })
        .collect();
    for (ci, &i) in checked.iter().enumerate() {
        let x = flat(&inputs[i])?;
        for j in 0..x.len() {
            let eval = |delta: f64| -> Result<Vec<Vec<f64>>> {
                let mut v = x.clone();
                v[j] += delta;
                let mut ins = inputs.to_vec();
                ins[i] = Tensor::from_vec(v, inputs[i].shape())?.to_device(inputs[i].device())?;
                float_outputs(f(&ins)?).iter().map(flat).collect()
            };
            let (plus, minus) = (eval(eps)?, eval(-eps)?);
            for (o, (p, m)) in plus.iter().zip(&minus).enumerate() {
                for k in 0..p.len() {
                    jac[o][ci][k][j] = (p[k] - m[k]) / (2.0 * eps);
                }
            }
        }
    }
    Ok(jac)
}

fn analytical(f: &Func<'_>, inputs: &[Tensor], checked: &[usize]) -> Result<Jacobians> {
    let outs = float_outputs(f(inputs)?);
    let wrt: Vec<Tensor> = checked.iter().map(|&i| inputs[i].clone()).collect();
    let mut jac: Jacobians = outs
        .iter()
        .map(|o| {
            checked
                .iter()
                .map(|&i| vec![vec![0.0; inputs[i].numel()]; o.numel()])
                .collect()
        })
        .collect();
    for (oi, o) in outs.iter().enumerate() {
        if !o.requires_grad() {
            continue;
        }
        for k in 0..o.numel() {
            let mut onehot = vec![0.0f64; o.numel()];
            onehot[k] = 1.0;
            let go = Tensor::from_vec(onehot, o.shape())?
                .to_dtype(o.dtype())?
                .to_device(o.device())?;
            let opts = GradOptions {
                retain_graph: true,
                create_graph: false,
                allow_unused: true,
            };
            let gs = grad(std::slice::from_ref(o), &wrt, &[Some(go)], opts)?;
            for (ci, g) in gs.iter().enumerate() {
                if let Some(g) = g {
                    jac[oi][ci][k] = flat(g)?;
                }
            }
        }
    }
    Ok(jac)
}

fn compare(
    num: &Jacobians,
    ana: &Jacobians,
    checked: &[usize],
    opts: GradcheckOptions,
) -> Result<()> {
    for (o, (no, ao)) in num.iter().zip(ana).enumerate() {
        for (ci, (nm, am)) in no.iter().zip(ao).enumerate() {
            for (k, (row_n, row_a)) in nm.iter().zip(am).enumerate() {
                for (j, (n, a)) in row_n.iter().zip(row_a).enumerate() {
                    if (n - a).abs() > opts.atol + opts.rtol * n.abs() || n.is_nan() != a.is_nan() {
                        // Whole Jacobians only while they are small enough to read.
                        let entries = nm.len() * row_n.len();
                        let matrices = if entries <= 64 {
                            format!("\nnumerical:{nm:?}\nanalytical:{am:?}")
                        } else {
                            format!(" ({} x {} Jacobians not shown)", nm.len(), row_n.len())
                        };
                        return Err(Error::Autograd(format!(
                            "Jacobian mismatch for output {o} with respect to input {}: d output[{k}] / d input[{j}] is {a} from autograd but {n} from finite differences{matrices}",
                            checked[ci]
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Checks autograd's gradients of `f` against central differences, with respect to every
/// input that requires grad (those must be float64). `Ok(())` when they agree.
///
/// ```
/// use kiln::{autograd::{gradcheck, GradcheckOptions}, Tensor};
/// let x = Tensor::from([0.5f64, -1.0, 2.0]).requires_grad_(true)?;
/// gradcheck(&|xs: &[Tensor]| Ok(vec![xs[0].tanh()?]), &[x], GradcheckOptions::default())?;
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn gradcheck(f: &Func<'_>, inputs: &[Tensor], opts: GradcheckOptions) -> Result<()> {
    let checked: Vec<usize> = (0..inputs.len())
        .filter(|&i| inputs[i].requires_grad())
        .collect();
    for &i in &checked {
        if inputs[i].dtype() != DType::F64 {
            return Err(Error::Autograd(format!(
                "gradcheck: input {i} is {}; gradcheck needs float64 inputs to be meaningful",
                inputs[i].dtype()
            )));
        }
    }
    // Perturbed copies are fresh leaves; re-mark them so the function sees the same flags.
    let relabel = |ins: &[Tensor]| -> Result<Vec<Tensor>> {
        ins.iter()
            .enumerate()
            .map(|(i, t)| {
                if checked.contains(&i) && t.is_leaf() && !t.requires_grad() {
                    t.clone().requires_grad_(true)
                } else {
                    Ok(t.clone())
                }
            })
            .collect()
    };
    let g = |ins: &[Tensor]| f(&relabel(ins)?);
    let num = numerical(&g, inputs, &checked, opts.eps)?;
    let ana = analytical(&g, inputs, &checked)?;
    compare(&num, &ana, &checked, opts)
}

/// Checks second derivatives: gradcheck of `(inputs, v) ↦ vᵀ ∂f/∂inputs`.
pub fn gradgradcheck(f: &Func<'_>, inputs: &[Tensor], opts: GradcheckOptions) -> Result<()> {
    let checked: Vec<usize> = (0..inputs.len())
        .filter(|&i| inputs[i].requires_grad())
        .collect();
    let outs = float_outputs(f(inputs)?);
    let n_in = inputs.len();
    // Fixed, non-trivial output gradients, deterministic so the check is repeatable: drawn
    // on the CPU (the same numbers on every device), then put on each output's device.
    let mut gen = crate::Generator::new(0);
    let vs: Vec<Tensor> = outs
        .iter()
        .map(|o| {
            Tensor::randn_with(o.shape(), DType::F64, &mut gen)?
                .to_device(o.device())?
                .requires_grad_(true)
        })
        .collect::<Result<_>>()?;
    let mut all = inputs.to_vec();
    all.extend(vs);
    let second = move |ins: &[Tensor]| -> Result<Vec<Tensor>> {
        let outs = float_outputs(f(&ins[..n_in])?);
        let wrt: Vec<Tensor> = checked.iter().map(|&i| ins[i].clone()).collect();
        let pairs: Vec<(Tensor, Tensor)> = outs
            .into_iter()
            .zip(ins[n_in..].iter().cloned())
            .filter(|(o, _)| o.requires_grad())
            .collect();
        if pairs.is_empty() {
            return Ok(vec![]);
        }
        let (os, gs): (Vec<Tensor>, Vec<Tensor>) = pairs.into_iter().unzip();
        let gs: Vec<Option<Tensor>> = gs.into_iter().map(Some).collect();
        let opts = GradOptions {
            retain_graph: true,
            create_graph: true,
            allow_unused: true,
        };
        let r = grad(&os, &wrt, &gs, opts)?;
        r.into_iter()
            .zip(&wrt)
            .map(|(g, w)| match g {
                Some(g) => Ok(g),
                None => w.zeros_like(),
            })
            .collect()
    };
    gradcheck(&second, &all, opts)
}
