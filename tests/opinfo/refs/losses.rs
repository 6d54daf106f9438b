//! Float64 references for the margin and embedding losses and the regression losses (with
//! their backward ops): per-element or per-row loops
//! over the definitions in PyTorch's documentation, then the reduction.

use super::{broadcast2, input, numel, opt, reduce, scalar, tensor, unravel};
use crate::harness::{RefTensor, Sample};

/// The broadcast shape of several shapes (numpy rules).
fn broadcast_shape(shapes: &[&[usize]]) -> Vec<usize> {
    let n = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            shapes
                .iter()
                .map(|s| {
                    let lead = n - s.len();
                    if i < lead {
                        1
                    } else {
                        s[i - lead]
                    }
                })
                .fold(1, |acc, d| if d == 1 { acc } else { d })
        })
        .collect()
}

/// The value of `x` at the broadcast output index `ix`.
fn bcast_at(x: &RefTensor, ix: &[usize]) -> f64 {
    let lead = ix.len() - x.shape.len();
    let mut flat = 0;
    for (d, &size) in x.shape.iter().enumerate() {
        let i = if size == 1 { 0 } else { ix[lead + d] };
        flat = flat * size + i;
    }
    x.data[flat]
}

/// `f` over the broadcast elements of the inputs, with the output shape.
fn pointwise(xs: &[RefTensor], f: impl Fn(&[f64]) -> f64) -> (Vec<usize>, Vec<f64>) {
    let shapes: Vec<&[usize]> = xs.iter().map(|x| x.shape.as_slice()).collect();
    let shape = broadcast_shape(&shapes);
    let n: usize = shape.iter().product();
    let mut data = Vec::with_capacity(n);
    for flat in 0..n {
        let mut ix = vec![0; shape.len()];
        let mut r = flat;
        for d in (0..shape.len()).rev() {
            ix[d] = r % shape[d];
            r /= shape[d];
        }
        let vals: Vec<f64> = xs.iter().map(|x| bcast_at(x, &ix)).collect();
        data.push(f(&vals));
    }
    (shape, data)
}

/// PyTorch's reduction (0 none, 1 mean, 2 sum) of per-element losses.
fn reduced(s: &Sample, shape: Vec<usize>, loss: Vec<f64>) -> Vec<RefTensor> {
    let total: f64 = loss.iter().sum();
    let n = loss.len() as f64;
    let out = match s.int("reduction").unwrap_or(1) {
        0 => RefTensor { shape, data: loss },
        1 => RefTensor {
            shape: vec![],
            data: vec![total / n],
        },
        _ => RefTensor {
            shape: vec![],
            data: vec![total],
        },
    };
    vec![out]
}

pub fn margin_ranking_loss(s: &Sample) -> Vec<RefTensor> {
    let margin = s.float("margin").unwrap_or(0.0);
    let (shape, loss) = pointwise(&[input(s, 0), input(s, 1), input(s, 2)], |v| {
        (-v[2] * (v[0] - v[1]) + margin).max(0.0)
    });
    reduced(s, shape, loss)
}

pub fn hinge_embedding_loss(s: &Sample) -> Vec<RefTensor> {
    let margin = s.float("margin").unwrap_or(1.0);
    let (shape, loss) = pointwise(&[input(s, 0), input(s, 1)], |v| {
        let (x, y) = (v[0], v[1]);
        let mut l = 0.0;
        if y != 1.0 {
            l += (margin - x).max(0.0);
        }
        if y != -1.0 {
            l += x;
        }
        l
    });
    reduced(s, shape, loss)
}

pub fn soft_margin_loss(s: &Sample) -> Vec<RefTensor> {
    let (shape, loss) = pointwise(&[input(s, 0), input(s, 1)], |v| {
        let z = -v[0] * v[1];
        // log(1 + e^z) without overflow.
        z.max(0.0) + (-z.abs()).exp().ln_1p()
    });
    reduced(s, shape, loss)
}

/// Rows of a `[N, D]` (or one row of a `[D]`) tensor.
fn rows(x: &RefTensor) -> Vec<&[f64]> {
    let d = *x.shape.last().unwrap_or(&1);
    if d == 0 {
        return vec![&[][..]; x.shape.first().copied().unwrap_or(0)];
    }
    x.data.chunks(d).collect()
}

pub fn cosine_embedding_loss(s: &Sample) -> Vec<RefTensor> {
    let margin = s.float("margin").unwrap_or(0.0);
    let (a, b, y) = (input(s, 0), input(s, 1), input(s, 2));
    let loss: Vec<f64> = rows(&a)
        .iter()
        .zip(rows(&b))
        .zip(&y.data)
        .map(|((u, v), &label)| {
            let dot: f64 = u.iter().zip(v).map(|(p, q)| p * q).sum();
            let m1: f64 = u.iter().map(|p| p * p).sum::<f64>() + 1e-12;
            let m2: f64 = v.iter().map(|q| q * q).sum::<f64>() + 1e-12;
            let cos = dot / (m1 * m2).sqrt();
            if label == 1.0 {
                1.0 - cos
            } else if label == -1.0 {
                (cos - margin).max(0.0)
            } else {
                0.0
            }
        })
        .collect();
    reduced(s, y.shape.clone(), loss)
}

fn distance(u: &[f64], v: &[f64], p: f64, eps: f64) -> f64 {
    u.iter()
        .zip(v)
        .map(|(a, b)| (a - b + eps).abs().powf(p))
        .sum::<f64>()
        .powf(1.0 / p)
}

pub fn triplet_margin_loss(s: &Sample) -> Vec<RefTensor> {
    let margin = s.float("margin").unwrap_or(1.0);
    let p = s.float("p").unwrap_or(2.0);
    let eps = s.float("eps").unwrap_or(1e-6);
    let swap = s.flag("swap").unwrap_or(false);
    let (a, pos, neg) = (input(s, 0), input(s, 1), input(s, 2));
    let loss: Vec<f64> = rows(&a)
        .iter()
        .zip(rows(&pos))
        .zip(rows(&neg))
        .map(|((x, xp), xn)| {
            let d_pos = distance(x, xp, p, eps);
            let mut d_neg = distance(x, xn, p, eps);
            if swap {
                d_neg = d_neg.min(distance(xp, xn, p, eps));
            }
            (margin + d_pos - d_neg).max(0.0)
        })
        .collect();
    let shape = a.shape[..a.shape.len().saturating_sub(1)].to_vec();
    reduced(s, shape, loss)
}

pub fn poisson_nll_loss(s: &Sample) -> Vec<RefTensor> {
    let log_input = s.flag("log_input").expect("log_input");
    let full = s.flag("full").expect("full");
    let eps = s.float("eps").expect("eps");
    let (shape, loss) = pointwise(&[input(s, 0), input(s, 1)], |v| {
        let (x, t) = (v[0], v[1]);
        let mut l = if log_input {
            x.exp() - t * x
        } else {
            x - t * (x + eps).ln()
        };
        if full && t > 1.0 {
            l += t * t.ln() - t + 0.5 * (2.0 * std::f64::consts::PI * t).ln();
        }
        l
    });
    reduced(s, shape, loss)
}

pub fn multi_margin_loss(s: &Sample) -> Vec<RefTensor> {
    let p = s.scalar("p").map_or(1.0, |v| v.to::<f64>());
    let margin = s.scalar("margin").map_or(1.0, |v| v.to::<f64>());
    let (x, y) = (input(s, 0), input(s, 1));
    let w = s.opt_t(2).map(RefTensor::of);
    let c = x.shape.last().copied().unwrap_or(1);
    let loss: Vec<f64> = y
        .data
        .iter()
        .enumerate()
        .map(|(n, &label)| {
            let row = &x.data[n * c..(n + 1) * c];
            let t = label as usize;
            let scale = w.as_ref().map_or(1.0, |w| w.data[t]);
            let mut sum = 0.0;
            for (i, &xi) in row.iter().enumerate() {
                if i != t {
                    sum += scale * (margin - row[t] + xi).max(0.0).powf(p);
                }
            }
            sum / c as f64
        })
        .collect();
    reduced(s, y.shape.clone(), loss)
}

pub fn multilabel_margin_loss(s: &Sample) -> Vec<RefTensor> {
    let (x, y) = (input(s, 0), input(s, 1));
    let c = x.shape.last().copied().unwrap_or(1);
    let n = if x.shape.len() == 2 { x.shape[0] } else { 1 };
    let loss: Vec<f64> = (0..n)
        .map(|r| {
            let row = &x.data[r * c..(r + 1) * c];
            let mut listed = vec![];
            for &t in &y.data[r * c..(r + 1) * c] {
                if t < 0.0 {
                    break;
                }
                listed.push(t as usize);
            }
            let mut sum = 0.0;
            for &j in &listed {
                for (i, &xi) in row.iter().enumerate() {
                    if !listed.contains(&i) {
                        sum += (1.0 - (row[j] - xi)).max(0.0);
                    }
                }
            }
            sum / c as f64
        })
        .collect();
    let shape = if x.shape.len() == 2 { vec![n] } else { vec![] };
    reduced(s, shape, loss)
}

// ---------------------------------------------------------------------------------------
// Regression losses and KL divergence
// ---------------------------------------------------------------------------------------

/// Applies `f` to (input, target) pairs after broadcasting, then PyTorch's reduction.
fn loss_ref(s: &Sample, f: impl Fn(f64, f64) -> f64) -> Vec<RefTensor> {
    let per = broadcast2(s, f).remove(0);
    match s.int("reduction").unwrap_or(1) {
        0 => vec![per],
        1 => vec![scalar(per.data.iter().sum::<f64>() / per.data.len() as f64)],
        _ => vec![scalar(per.data.iter().sum())],
    }
}

pub fn mse_loss(s: &Sample) -> Vec<RefTensor> {
    loss_ref(s, |a, b| (a - b) * (a - b))
}

pub fn l1_loss(s: &Sample) -> Vec<RefTensor> {
    loss_ref(s, |a, b| (a - b).abs())
}

pub fn smooth_l1_loss(s: &Sample) -> Vec<RefTensor> {
    let beta = s.float("beta").unwrap_or(1.0);
    loss_ref(s, |a, b| {
        let d = (a - b).abs();
        if d < beta {
            0.5 * d * d / beta
        } else {
            d - 0.5 * beta
        }
    })
}

pub fn huber_loss(s: &Sample) -> Vec<RefTensor> {
    let delta = s.float("delta").unwrap_or(1.0);
    loss_ref(s, |a, b| {
        let d = (a - b).abs();
        if d <= delta {
            0.5 * d * d
        } else {
            delta * (d - 0.5 * delta)
        }
    })
}

pub fn kl_div(s: &Sample) -> Vec<RefTensor> {
    let log_target = s.flag("log_target").unwrap_or(false);
    loss_ref(s, |x, t| {
        if log_target {
            t.exp() * (t - x)
        } else if t > 0.0 {
            t * (t.ln() - x)
        } else {
            0.0
        }
    })
}

/// The shape `shapes` broadcast to.
fn broadcast_shapes(shapes: &[&[usize]]) -> Vec<usize> {
    let n = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1; n];
    for sh in shapes {
        for (k, &v) in sh.iter().enumerate() {
            let d = n - sh.len() + k;
            if v != 1 {
                out[d] = v;
            }
        }
    }
    out
}

/// `x` at multi-index `idx` of a shape it broadcasts to.
fn at_broadcast(x: &RefTensor, idx: &[usize]) -> f64 {
    let lead = idx.len() - x.shape.len();
    let j: Vec<usize> = (0..x.shape.len())
        .map(|d| if x.shape[d] == 1 { 0 } else { idx[lead + d] })
        .collect();
    x.data[x.ravel(&j)]
}

/// A pointwise loss's backward: `norm * slope(x, t, weight) * grad_output` over the shape
/// all operands broadcast to (sample tensors: grad_output, self, target[, weight]); `norm` is
/// `1 / n` for a mean (the default) over the `n` terms of `self` and `target` broadcast.
fn loss_backward_ref(s: &Sample, slope: impl Fn(f64, f64) -> f64) -> Vec<RefTensor> {
    let (g, x, t) = (input(s, 0), input(s, 1), input(s, 2));
    let w = opt(s, 3);
    let terms = numel(&broadcast_shapes(&[&x.shape, &t.shape]));
    let shape = broadcast_shapes(&[&g.shape, &x.shape, &t.shape]);
    let norm = if s.int("reduction").unwrap_or(1) == 1 {
        1.0 / terms as f64
    } else {
        1.0
    };
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let v =
                norm * slope(at_broadcast(&x, &ix), at_broadcast(&t, &ix)) * at_broadcast(&g, &ix);
            w.as_ref().map_or(v, |w| v * at_broadcast(w, &ix))
        })
        .collect();
    vec![tensor(shape, data)]
}

pub fn mse_loss_backward(s: &Sample) -> Vec<RefTensor> {
    loss_backward_ref(s, |x, t| 2.0 * (x - t))
}

pub fn smooth_l1_loss_backward(s: &Sample) -> Vec<RefTensor> {
    let beta = s.float("beta").expect("beta");
    loss_backward_ref(s, |x, t| {
        let d = x - t;
        if d.abs() < beta {
            d / beta
        } else if d == 0.0 {
            0.0
        } else {
            d.signum()
        }
    })
}

pub fn huber_loss_backward(s: &Sample) -> Vec<RefTensor> {
    let delta = s.float("delta").expect("delta");
    loss_backward_ref(s, |x, t| (x - t).clamp(-delta, delta))
}

pub fn bce_backward(s: &Sample) -> Vec<RefTensor> {
    loss_backward_ref(s, |x, t| (x - t) / (x * (1.0 - x)).max(1e-12))
}

pub fn bce_logits(s: &Sample) -> Vec<RefTensor> {
    let (x, t) = (input(s, 0), input(s, 1));
    let (w, pw) = (opt(s, 2), opt(s, 3));
    let reduction = s.int("reduction").unwrap_or(1);
    let loss: Vec<f64> = (0..x.data.len())
        .map(|i| {
            let (z, y) = (x.data[i], t.data[i]);
            let pos = pw.as_ref().map_or(1.0, |p| p.data[i % p.data.len()]);
            let sig = 1.0 / (1.0 + (-z).exp());
            let l = -(pos * y * sig.ln() + (1.0 - y) * (1.0 - sig).ln());
            l * w.as_ref().map_or(1.0, |w| w.data[i % w.data.len()])
        })
        .collect();
    let n = loss.len() as f64;
    vec![reduce(loss, x.shape.clone(), reduction, n)]
}
