//! Float64 references for softmax, log_softmax and their backward ops.

use super::{at, input, tabulate, tensor, unravel, wrap};
use crate::harness::{RefTensor, Sample};

// ---------------------------------------------------------------------------------------
// Softmax
// ---------------------------------------------------------------------------------------

/// softmax (or its log) along `dim`, max-shifted for stability. A 0-d input is a group of
/// one.
fn softmax_impl(s: &Sample, log: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let d = wrap(s.int("dim").expect("sample provides dim"), nd);
    let out = tabulate(x.shape.clone(), |idx| {
        let line: Vec<f64> = if nd == 0 {
            vec![x.data[0]]
        } else {
            (0..x.shape[d])
                .map(|k| {
                    let mut j = idx.to_vec();
                    j[d] = k;
                    at(&x, &j)
                })
                .collect()
        };
        let m = line.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = line.iter().map(|v| (v - m).exp()).sum();
        let v = at(&x, idx);
        if log {
            v - m - z.ln()
        } else {
            (v - m).exp() / z
        }
    });
    vec![out]
}

/// softmax / _softmax along `dim`.
pub fn softmax(s: &Sample) -> Vec<RefTensor> {
    softmax_impl(s, false)
}

/// log_softmax / _log_softmax along `dim`.
pub fn log_softmax(s: &Sample) -> Vec<RefTensor> {
    softmax_impl(s, true)
}

// ---------------------------------------------------------------------------------------
// Softmax backward
// ---------------------------------------------------------------------------------------

/// The input gradient of softmax (`log`: log-softmax) from `(grad_output, output)` along
/// `dim`: `y (g - Σ g y)`, or `g - exp(y) Σ g`, each sum over the line through the element.
fn softmax_backward_ref(s: &Sample, log: bool) -> Vec<RefTensor> {
    let (g, y) = (input(s, 0), input(s, 1));
    let nd = g.shape.len();
    let dim = s.int("dim").expect("dim");
    let d = if dim < 0 { dim + nd.max(1) as i64 } else { dim } as usize;
    let data = (0..g.data.len())
        .map(|f| {
            let ix = unravel(f, &g.shape);
            let line: Vec<usize> = if nd == 0 {
                vec![0]
            } else {
                (0..g.shape[d])
                    .map(|k| {
                        let mut j = ix.clone();
                        j[d] = k;
                        g.ravel(&j)
                    })
                    .collect()
            };
            if log {
                let sum: f64 = line.iter().map(|&p| g.data[p]).sum();
                g.data[f] - y.data[f].exp() * sum
            } else {
                let sum: f64 = line.iter().map(|&p| g.data[p] * y.data[p]).sum();
                y.data[f] * (g.data[f] - sum)
            }
        })
        .collect();
    vec![tensor(g.shape.clone(), data)]
}

pub fn softmax_backward_data(s: &Sample) -> Vec<RefTensor> {
    softmax_backward_ref(s, false)
}

pub fn log_softmax_backward_data(s: &Sample) -> Vec<RefTensor> {
    softmax_backward_ref(s, true)
}
