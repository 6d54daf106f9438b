//! Float64 references for the classification losses: nll_loss, cross_entropy, binary
//! cross-entropy.

use super::{input, numel, opt, reduce, tensor, unravel};
use crate::harness::{RefTensor, Sample};

/// For each target position: (position in the input with the class dim removed, target).
fn per_target(t: &RefTensor) -> Vec<(Vec<usize>, i64)> {
    (0..t.data.len())
        .map(|i| (unravel(i, &t.shape), t.data[i] as i64))
        .collect()
}

/// `x` at class `c` of target position `pos`.
fn class_at(x: &RefTensor, pos: &[usize], c: usize) -> f64 {
    let mut ix = pos.to_vec();
    ix.insert(if x.shape.len() == 1 { 0 } else { 1 }, c);
    x.data[x.ravel(&ix)]
}

pub fn nll_loss(s: &Sample) -> Vec<RefTensor> {
    let (x, t) = (input(s, 0), input(s, 1));
    let w = opt(s, 2);
    let ignore = s.int("ignore_index").unwrap_or(-100);
    let reduction = s.int("reduction").unwrap_or(1);
    let (mut loss, mut total) = (Vec::new(), 0.0);
    for (pos, c) in per_target(&t) {
        if c == ignore {
            loss.push(0.0);
            continue;
        }
        let wc = w.as_ref().map_or(1.0, |w| w.data[c as usize]);
        loss.push(-wc * class_at(&x, &pos, c as usize));
        total += wc;
    }
    vec![reduce(loss, t.shape.clone(), reduction, total)]
}

pub fn nll_loss_forward(s: &Sample) -> Vec<RefTensor> {
    let (x, t) = (input(s, 0), input(s, 1));
    let w = opt(s, 2);
    let ignore = s.int("ignore_index").expect("ignore_index");
    let reduction = s.int("reduction").expect("reduction");
    let (mut loss, mut total) = (Vec::new(), 0.0);
    for (pos, c) in per_target(&t) {
        if c == ignore {
            loss.push(0.0);
            continue;
        }
        let wc = w.as_ref().map_or(1.0, |w| w.data[c as usize]);
        loss.push(-wc * class_at(&x, &pos, c as usize));
        total += wc;
    }
    if reduction == 0 && x.shape.len() >= 2 {
        return vec![tensor(t.shape.clone(), loss), tensor(vec![], vec![0.0])];
    }
    let sum: f64 = loss.iter().sum();
    let out = if reduction == 1 { sum / total } else { sum };
    vec![tensor(vec![], vec![out]), tensor(vec![], vec![total])]
}

pub fn nll_loss_backward(s: &Sample) -> Vec<RefTensor> {
    let (go, x, t, tw) = (input(s, 0), input(s, 1), input(s, 2), input(s, 4));
    let w = opt(s, 3);
    let ignore = s.int("ignore_index").expect("ignore_index");
    let reduction = s.int("reduction").expect("reduction");
    let per_target_grad = reduction == 0 && x.shape.len() >= 2;
    let mut out = tensor(x.shape.clone(), vec![0.0; x.data.len()]);
    for (i, (pos, c)) in per_target(&t).into_iter().enumerate() {
        if c == ignore {
            continue;
        }
        let wc = w.as_ref().map_or(1.0, |w| w.data[c as usize]);
        let g = if per_target_grad {
            go.data[i]
        } else {
            go.data[0]
        };
        let scale = if reduction == 1 {
            1.0 / tw.data[0]
        } else {
            1.0
        };
        let mut ix = pos.clone();
        ix.insert(if x.shape.len() == 1 { 0 } else { 1 }, c as usize);
        let p = out.ravel(&ix);
        out.data[p] = -wc * g * scale;
    }
    vec![out]
}

/// log_softmax over the class dim at a target position.
fn log_probs(x: &RefTensor, pos: &[usize]) -> Vec<f64> {
    let c = if x.shape.len() == 1 {
        x.shape[0]
    } else {
        x.shape[1]
    };
    let row: Vec<f64> = (0..c).map(|k| class_at(x, pos, k)).collect();
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    row.iter().map(|v| v - lse).collect()
}

pub fn cross_entropy(s: &Sample) -> Vec<RefTensor> {
    let (x, t) = (input(s, 0), input(s, 1));
    let w = opt(s, 2);
    let ignore = s.int("ignore_index").unwrap_or(-100);
    let reduction = s.int("reduction").unwrap_or(1);
    let ls = s.float("label_smoothing").unwrap_or(0.0);
    let c = if x.shape.len() == 1 {
        x.shape[0]
    } else {
        x.shape[1]
    };
    let wt = |k: usize| w.as_ref().map_or(1.0, |w| w.data[k]);
    if s.t(1).dtype().is_floating_point() {
        // Probability targets: the target shaped like the input.
        let mut pos_shape = x.shape.clone();
        pos_shape.remove(if x.shape.len() == 1 { 0 } else { 1 });
        let n = numel(&pos_shape);
        let loss: Vec<f64> = (0..n)
            .map(|i| {
                let pos = unravel(i, &pos_shape);
                let lp = log_probs(&x, &pos);
                -(0..c)
                    .map(|k| wt(k) * (class_at(&t, &pos, k) * (1.0 - ls) + ls / c as f64) * lp[k])
                    .sum::<f64>()
            })
            .collect();
        let batch = if x.shape.len() == 1 { 1.0 } else { n as f64 };
        return vec![reduce(loss, pos_shape, reduction, batch)];
    }
    let (mut nll, mut smooth, mut total, mut count) = (Vec::new(), Vec::new(), 0.0, 0.0);
    for (pos, k) in per_target(&t) {
        if k == ignore {
            nll.push(0.0);
            smooth.push(0.0);
            continue;
        }
        let lp = log_probs(&x, &pos);
        nll.push(-wt(k as usize) * lp[k as usize]);
        smooth.push(-(0..c).map(|j| wt(j) * lp[j]).sum::<f64>());
        total += wt(k as usize);
        count += 1.0;
    }
    let shape = t.shape.clone();
    let a = reduce(nll, shape.clone(), reduction, total);
    let denom = if w.is_some() { total } else { count };
    let b = reduce(smooth, shape.clone(), reduction, denom);
    let data = a
        .data
        .iter()
        .zip(&b.data)
        .map(|(p, q)| (1.0 - ls) * p + ls / c as f64 * q)
        .collect();
    vec![tensor(a.shape, data)]
}

pub fn bce(s: &Sample) -> Vec<RefTensor> {
    let (x, t) = (input(s, 0), input(s, 1));
    let w = opt(s, 2);
    let reduction = s.int("reduction").unwrap_or(1);
    let loss: Vec<f64> = (0..x.data.len())
        .map(|i| {
            let (p, y) = (x.data[i], t.data[i]);
            let l = -(y * p.ln().max(-100.0) + (1.0 - y) * (1.0 - p).ln().max(-100.0));
            l * w.as_ref().map_or(1.0, |w| w.data[i])
        })
        .collect();
    let n = loss.len() as f64;
    vec![reduce(loss, x.shape.clone(), reduction, n)]
}
