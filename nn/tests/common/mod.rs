//! Shared by the layer and loss tests: the PyTorch reference data (`data/layers_ref.txt`,
//! written by `data/gen_layers.py`, and `data/losses_ref.txt`, by `data/gen_losses.py`) and the checks every layer goes through.
#![allow(dead_code)]

use kiln_core::autograd::{gradcheck, GradcheckOptions};
use kiln_core::{DType, Result, Tensor};
use kiln_nn::{Module, StateDict, TensorKind, VisitorMut};
use std::cell::RefCell;
use std::collections::HashMap;

/// One case's tensors, in the file's order.
pub type Case = Vec<(String, Tensor)>;

fn parse() -> HashMap<String, Case> {
    let texts = [
        include_str!("../data/layers_ref.txt"),
        include_str!("../data/losses_ref.txt"),
    ];
    let mut cases: HashMap<String, Case> = HashMap::new();
    for line in texts
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut it = line.split(' ');
        let (case, key, dt, shape) = (
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap(),
        );
        let shape: Vec<usize> = if shape == "scalar" {
            vec![]
        } else {
            shape.split('x').map(|s| s.parse().unwrap()).collect()
        };
        let t = if dt == "i64" {
            Tensor::from_vec(it.map(|v| v.parse::<i64>().unwrap()).collect(), &shape)
        } else {
            Tensor::from_vec(it.map(|v| v.parse::<f64>().unwrap()).collect(), &shape)
        }
        .unwrap();
        cases
            .entry(case.to_string())
            .or_default()
            .push((key.to_string(), t));
    }
    cases
}

/// One case's tensors (parsed afresh: tensors are not shared across test threads).
pub fn case(name: &str) -> Case {
    let mut all = parse();
    all.remove(name)
        .unwrap_or_else(|| panic!("no reference case {name}"))
}

pub fn get<'a>(c: &'a Case, key: &str) -> Option<&'a Tensor> {
    c.iter().find(|(k, _)| k == key).map(|(_, t)| t)
}

/// Values and shape equal to within float64 rounding.
pub fn assert_close(what: &str, got: &Tensor, want: &Tensor) {
    assert_close_tol(what, got, want, 1e-9)
}

/// As [`assert_close`], within `tol` absolute plus `tol` relative.
pub fn assert_close_tol(what: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    if want.dtype() == DType::I64 {
        assert_eq!(
            got.to_dtype(DType::I64).unwrap().to_vec::<i64>().unwrap(),
            want.to_vec::<i64>().unwrap(),
            "{what}"
        );
        return;
    }
    assert_eq!(got.dtype(), DType::F64, "{what}: dtype");
    let g = got.contiguous().unwrap().to_vec::<f64>().unwrap();
    let w = want.to_vec::<f64>().unwrap();
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol + tol * b.abs(),
            "{what}[{i}]: got {a}, PyTorch {b}\n got {g:?}\nwant {w:?}"
        );
    }
}

/// The case's inputs `in0, in1, …`; float ones with a recorded gradient require grad.
pub fn inputs(c: &Case) -> Vec<Tensor> {
    let mut out = Vec::new();
    for i in 0.. {
        let Some(t) = get(c, &format!("in{i}")) else {
            break;
        };
        let t = t.detach();
        if get(c, &format!("grad.in{i}")).is_some() {
            out.push(t.requires_grad_(true).unwrap());
        } else {
            out.push(t);
        }
    }
    out
}

/// The `state.*` entries as a StateDict.
pub fn state(c: &Case) -> StateDict {
    let mut sd = StateDict::new();
    for (k, t) in c {
        if let Some(name) = k.strip_prefix("state.") {
            sd.insert(name, t.clone());
        }
    }
    sd
}

/// The reference check every layer goes through:
/// 1. its state_dict keys are PyTorch's, in PyTorch's order, and it loads PyTorch's state
///    (strict) and hands the same values back;
/// 2. forward on the same inputs matches PyTorch's output;
/// 3. backpropagating the same cotangent gives PyTorch's input and parameter gradients.
pub fn check<M: Module>(
    name: &str,
    m: &mut M,
    f: impl Fn(&M, &[Tensor]) -> Result<Tensor>,
) -> Case {
    check_tol(name, m, f, 1e-9)
}

/// As [`check`], comparing gradients within `grad_tol` (outputs stay within 1e-9).
pub fn check_tol<M: Module>(
    name: &str,
    m: &mut M,
    f: impl Fn(&M, &[Tensor]) -> Result<Tensor>,
    grad_tol: f64,
) -> Case {
    let c = case(name);
    let sd = state(&c);
    let ours = m.state_dict();
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        sd.keys().collect::<Vec<_>>(),
        "{name}: state_dict keys"
    );
    let missing = m.load_state_dict(&sd, true).unwrap();
    assert!(missing.missing_keys.is_empty() && missing.unexpected_keys.is_empty());
    for (k, t) in m.state_dict().iter() {
        assert_close(
            &format!("{name}: state_dict round trip {k}"),
            t,
            sd.get(k).unwrap(),
        );
    }
    let ins = inputs(&c);
    let out = f(m, &ins).unwrap();
    assert_close(&format!("{name}: forward"), &out, get(&c, "out").unwrap());
    if out.requires_grad() {
        let cot = get(&c, "cot").unwrap();
        out.mul(cot).unwrap().sum().unwrap().backward().unwrap();
        for (i, x) in ins.iter().enumerate() {
            if let Some(g) = get(&c, &format!("grad.in{i}")) {
                assert_close_tol(
                    &format!("{name}: grad of input {i}"),
                    &x.grad().unwrap(),
                    g,
                    grad_tol,
                );
            }
        }
        for (k, p) in m.named_parameters() {
            match get(&c, &format!("grad.{k}")) {
                Some(g) => assert_close_tol(
                    &format!("{name}: grad of {k}"),
                    &p.grad().unwrap(),
                    g,
                    grad_tol,
                ),
                None => assert!(p.grad().is_none(), "{name}: {k} got a grad PyTorch has not"),
            }
            p.set_grad(None).unwrap();
        }
    }
    c
}

/// Gradcheck (finite differences in float64) of the layer's output with respect to its
/// float inputs that require grad and every parameter.
pub fn gradcheck_module<M: Module>(
    m: M,
    ins: &[Tensor],
    f: impl Fn(&M, &[Tensor]) -> Result<Tensor>,
) {
    struct Swap<'a>(&'a [Tensor], usize);
    impl VisitorMut for Swap<'_> {
        fn tensor(&mut self, _: &str, kind: TensorKind, t: &mut Tensor) -> Result<()> {
            if kind == TensorKind::Parameter {
                *t = self.0[self.1].clone();
                self.1 += 1;
            }
            Ok(())
        }
    }
    let n_in = ins.len();
    let mut all: Vec<Tensor> = ins
        .iter()
        .map(|t| {
            if t.requires_grad() {
                t.detach().requires_grad_(true).unwrap()
            } else {
                t.detach()
            }
        })
        .collect();
    all.extend(
        m.parameters()
            .iter()
            .map(|p| p.detach().requires_grad_(p.requires_grad()).unwrap()),
    );
    let cell = RefCell::new(m);
    let func = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let mut m = cell.borrow_mut();
        m.visit_mut(&mut Swap(&xs[n_in..], 0))?;
        Ok(vec![f(&m, &xs[..n_in])?])
    };
    gradcheck(&func, &all, GradcheckOptions::default()).unwrap();
}
