//! Loads `data/seq_reference.txt` (written by `data/seq_reference.py` with PyTorch) and runs a
//! case: load PyTorch's state_dict, run forward, compare outputs, then backward a fixed
//! weighted sum of the outputs and compare input and parameter gradients.

#![allow(dead_code)]

use kiln_core::{DType, Result, Tensor};
use kiln_nn::{Module, StateDict};
use std::collections::HashMap;

pub struct Reference {
    map: HashMap<String, (Vec<usize>, Vec<f64>)>,
    order: Vec<String>,
}

impl Reference {
    pub fn load() -> Reference {
        let text = include_str!("../data/seq_reference.txt");
        let mut map = HashMap::new();
        let mut order = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let mut parts = line.split('\t');
            let key = parts.next().unwrap().to_string();
            let shape: Vec<usize> = parts
                .next()
                .unwrap()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            let vals: Vec<f64> = parts
                .next()
                .unwrap_or("")
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            order.push(key.clone());
            map.insert(key, (shape, vals));
        }
        Reference { map, order }
    }

    fn entries(&self, case: &str, kind: &str) -> Vec<(String, Vec<usize>, Vec<f64>)> {
        let prefix = format!("{case}/{kind}/");
        self.order
            .iter()
            .filter_map(|k| {
                k.strip_prefix(&prefix).map(|n| {
                    let (s, v) = &self.map[k];
                    (n.to_string(), s.clone(), v.clone())
                })
            })
            .collect()
    }

    pub fn tensor(&self, case: &str, kind: &str, name: &str) -> Tensor {
        let (s, v) = self
            .map
            .get(&format!("{case}/{kind}/{name}"))
            .unwrap_or_else(|| panic!("no reference {case}/{kind}/{name}"));
        Tensor::from_vec(v.clone(), s).unwrap()
    }

    /// The state_dict PyTorch had, in its order.
    pub fn state(&self, case: &str) -> StateDict {
        self.entries(case, "param")
            .into_iter()
            .map(|(n, s, v)| (n, Tensor::from_vec(v, &s).unwrap()))
            .collect()
    }

    /// `(key, shape)` of a `keys_*` case.
    pub fn keys(&self, case: &str) -> Vec<(String, Vec<usize>)> {
        self.entries(case, "key")
            .into_iter()
            .map(|(n, s, _)| (n, s))
            .collect()
    }

    /// Inputs (float64, requiring grad) and masks (bool) by name.
    pub fn inputs(&self, case: &str) -> HashMap<String, Tensor> {
        let mut m = HashMap::new();
        for (n, s, v) in self.entries(case, "input") {
            let t = Tensor::from_vec(v, &s).unwrap();
            m.insert(n, t.requires_grad_(true).unwrap());
        }
        for (n, s, v) in self.entries(case, "mask") {
            let b: Vec<bool> = v.iter().map(|&x| x != 0.0).collect();
            m.insert(n, Tensor::from_vec(b, &s).unwrap());
        }
        m
    }
}

pub fn values(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

pub fn assert_close(what: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (values(got), values(want));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{i}]: got {a}, PyTorch {b}"
        );
    }
}

/// Loads the case's state into `m`, checks the key order equals PyTorch's, runs `f` on the
/// inputs, compares its named outputs, backpropagates `Σ_i Σ_j o_i[j]·sin(j + 1 + i)` and
/// compares the gradients of the inputs and parameters.
pub fn run_case<M: Module>(
    r: &Reference,
    case: &str,
    m: &mut M,
    f: impl Fn(&M, &HashMap<String, Tensor>) -> Result<Vec<(&'static str, Tensor)>>,
) {
    let state = r.state(case);
    let want_keys: Vec<&str> = state.keys().collect();
    let sd = m.state_dict();
    let got_keys: Vec<&str> = sd.keys().collect();
    assert_eq!(got_keys, want_keys, "{case}: state_dict keys");
    m.load_state_dict(&state, true).unwrap();
    m.eval();
    let ins = r.inputs(case);
    let outs = f(m, &ins).unwrap();
    let mut loss: Option<Tensor> = None;
    for (i, (name, o)) in outs.iter().enumerate() {
        let want = r.tensor(case, "output", name);
        assert_close(&format!("{case} output {name}"), o, &want, 1e-10);
        let w: Vec<f64> = (0..o.numel()).map(|j| ((j + 1 + i) as f64).sin()).collect();
        let w = Tensor::from_vec(w, o.shape()).unwrap();
        let l = o.mul(&w).unwrap().sum().unwrap();
        loss = Some(match loss {
            None => l,
            Some(acc) => acc.add(&l).unwrap(),
        });
    }
    loss.unwrap().backward().unwrap();
    for (n, t) in &ins {
        if t.dtype() == DType::Bool {
            continue;
        }
        let g = t
            .grad()
            .unwrap_or_else(|| panic!("{case}: no grad for input {n}"));
        assert_close(
            &format!("{case} grad of input {n}"),
            &g,
            &r.tensor(case, "grad", n),
            1e-10,
        );
    }
    for (n, p) in m.named_parameters() {
        let g = p
            .grad()
            .unwrap_or_else(|| panic!("{case}: no grad for parameter {n}"));
        assert_close(
            &format!("{case} grad of {n}"),
            &g,
            &r.tensor(case, "grad", &n),
            1e-10,
        );
    }
}
