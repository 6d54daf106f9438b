//! Float64 references for embedding, embedding_bag, dropout and scaled dot-product attention.

use super::{input, tensor};
use crate::harness::{RefTensor, Sample};

pub fn embedding(s: &Sample) -> Vec<RefTensor> {
    let (w, idx) = (input(s, 0), input(s, 1));
    let d = w.shape[1];
    let mut shape = idx.shape.clone();
    shape.push(d);
    let data = idx
        .data
        .iter()
        .flat_map(|&i| (0..d).map(move |k| (i as usize, k)))
        .map(|(i, k)| w.data[i * d + k])
        .collect();
    vec![tensor(shape, data)]
}

pub fn dropout(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (p, train) = (s.float("p").expect("p"), s.flag("train").expect("train"));
    if train && p == 1.0 {
        return vec![tensor(x.shape.clone(), vec![0.0; x.data.len()])];
    }
    vec![x]
}

/// Attention per batch row: scores, mask, softmax, weighted sum of values.
pub fn sdpa(s: &Sample) -> Vec<RefTensor> {
    let (q, k, v) = (input(s, 0), input(s, 1), input(s, 2));
    let mask = s
        .opt_t(3)
        .map(|m| (m.dtype() == kiln::DType::Bool, RefTensor::of(m)));
    let causal = s.flag("is_causal").unwrap_or(false);
    let gqa = s.flag("enable_gqa").unwrap_or(false);
    let nd = q.shape.len();
    let (l, e) = (q.shape[nd - 2], q.shape[nd - 1]);
    let (sl, ev) = (k.shape[k.shape.len() - 2], v.shape[v.shape.len() - 1]);
    let scale = s.float("scale").unwrap_or(1.0 / (e as f64).sqrt());
    let batch = q.data.len() / (l * e).max(1);
    let kv_batch = k.data.len() / (sl * e).max(1);
    let heads_q = if nd >= 3 { q.shape[nd - 3] } else { 1 };
    let heads_k = if k.shape.len() >= 3 {
        k.shape[k.shape.len() - 3]
    } else {
        1
    };
    let mut shape = q.shape[..nd - 1].to_vec();
    shape.push(ev);
    let mut out = vec![0.0; batch * l * ev];
    for bi in 0..batch {
        // The key/value row: the same batch index, or its head group under GQA.
        let kb = if gqa && heads_q != heads_k {
            let (outer, h) = (bi / heads_q, bi % heads_q);
            outer * heads_k + h / (heads_q / heads_k)
        } else if kv_batch == batch {
            bi
        } else {
            bi % kv_batch.max(1)
        };
        for i in 0..l {
            let mut scores: Vec<f64> = (0..sl)
                .map(|j| {
                    (0..e)
                        .map(|t| q.data[(bi * l + i) * e + t] * k.data[(kb * sl + j) * e + t])
                        .sum::<f64>()
                        * scale
                })
                .collect();
            for (j, sc) in scores.iter_mut().enumerate() {
                if causal && j > i {
                    *sc = f64::NEG_INFINITY;
                }
                if let Some((is_bool, m)) = &mask {
                    // A mask's batch rows repeat over the query's batch rows.
                    let rows = (m.data.len() / (l * sl).max(1)).max(1);
                    let mv = m.data[((bi % rows) * l + i) * sl + j];
                    if *is_bool {
                        if mv == 0.0 {
                            *sc = f64::NEG_INFINITY;
                        }
                    } else {
                        *sc += mv;
                    }
                }
            }
            let mx = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            if mx == f64::NEG_INFINITY {
                // Every position masked: zeros, as PyTorch (its `_safe_softmax`).
                continue;
            }
            let z: f64 = scores.iter().map(|sc| (sc - mx).exp()).sum();
            for c in 0..ev {
                out[(bi * l + i) * ev + c] = (0..sl)
                    .map(|j| (scores[j] - mx).exp() / z * v.data[(kb * sl + j) * ev + c])
                    .sum();
            }
        }
    }
    vec![tensor(shape, out)]
}

/// The four outputs of `embedding_bag` for weight `w` (`[num, D]`), indices `idx`, offsets
/// `offs`, per-sample weights `psw`, mode 0/1/2 and a wrapped `padding`: bag by bag, the
/// sum (weighted), mean or column maximum (first on ties) of the rows not equal to
/// `padding`, zeros for an empty bag.
fn bag_reduce(
    w: &RefTensor,
    idx: &[f64],
    offs: &[f64],
    psw: Option<&RefTensor>,
    mode: i64,
    include_last_offset: bool,
    padding: Option<i64>,
) -> Vec<RefTensor> {
    let (n, d) = (idx.len(), w.shape[1]);
    let bags = offs.len() - include_last_offset as usize;
    let mut out = vec![0.0; bags * d];
    let mut offset2bag = vec![0.0; n];
    let mut counts = vec![0.0; bags];
    let mut max_rows = vec![0.0; bags * d];
    for b in 0..bags {
        let start = offs[b] as usize;
        let end = if b + 1 < offs.len() {
            offs[b + 1] as usize
        } else {
            n
        };
        let mut first = true;
        for i in start..end {
            offset2bag[i] = b as f64;
            let row = idx[i] as usize;
            if Some(idx[i] as i64) == padding {
                continue;
            }
            counts[b] += 1.0;
            for c in 0..d {
                let v = w.data[row * d + c];
                let o = &mut out[b * d + c];
                match mode {
                    2 => {
                        if first || v > *o {
                            *o = v;
                            max_rows[b * d + c] = row as f64;
                        }
                    }
                    _ => *o += v * psw.map_or(1.0, |p| p.data[i]),
                }
            }
            first = false;
        }
        if mode == 1 && counts[b] > 0.0 {
            for c in 0..d {
                out[b * d + c] /= counts[b];
            }
        }
    }
    let bag_size = if mode == 0 { vec![0.0; bags] } else { counts };
    let max_indices = if mode == 2 {
        tensor(vec![bags, d], max_rows)
    } else {
        tensor(vec![bags], bag_size.clone())
    };
    vec![
        tensor(vec![bags, d], out),
        tensor(vec![n], offset2bag),
        tensor(vec![bags], bag_size),
        max_indices,
    ]
}

fn wrapped_padding(s: &Sample, num: usize) -> Option<i64> {
    s.opt_int("padding_idx")
        .flatten()
        .map(|p| if p < 0 { p + num as i64 } else { p })
}

/// embedding_bag(weight, indices, offsets, ...): its four outputs.
pub fn embedding_bag(s: &Sample) -> Vec<RefTensor> {
    let (w, idx, offs) = (input(s, 0), input(s, 1), input(s, 2));
    let psw = s.opt_t(3).map(RefTensor::of);
    bag_reduce(
        &w,
        &idx.data,
        &offs.data,
        psw.as_ref(),
        s.int("mode").unwrap_or(0),
        s.flag("include_last_offset").unwrap_or(false),
        wrapped_padding(s, w.shape[0]),
    )
}

/// embedding_bag_functional(input, weight, offsets, ...): the bags' reduction alone; a 2-D
/// input is one bag per row.
pub fn embedding_bag_functional(s: &Sample) -> Vec<RefTensor> {
    let (x, w) = (input(s, 0), input(s, 1));
    let offs: Vec<f64> = match s.opt_t(2) {
        Some(o) => RefTensor::of(o).data,
        None => (0..x.shape[0]).map(|r| (r * x.shape[1]) as f64).collect(),
    };
    let psw = s.opt_t(3).map(RefTensor::of);
    let mode = match s.string("mode").unwrap_or("mean") {
        "sum" => 0,
        "mean" => 1,
        _ => 2,
    };
    let mut outs = bag_reduce(
        &w,
        &x.data,
        &offs,
        psw.as_ref(),
        mode,
        s.flag("include_last_offset").unwrap_or(false),
        wrapped_padding(s, w.shape[0]),
    );
    vec![outs.remove(0)]
}

/// Element `idx` of `m` broadcast to a 4-D shape (trailing dims aligned).
fn broadcast_at(m: &RefTensor, idx: [usize; 4]) -> f64 {
    let pad = 4 - m.shape.len();
    let mut flat = 0;
    for (k, &n) in m.shape.iter().enumerate() {
        flat = flat * n + if n == 1 { 0 } else { idx[k + pad] };
    }
    m.data[flat]
}

/// The scores of one (batch, head) of `[B, H, *, *]` operands: `q kᵀ · scale + mask`, with
/// `-inf` above the diagonal when causal.
fn head_scores(
    s: &Sample,
    q: &RefTensor,
    k: &RefTensor,
    mask: Option<&RefTensor>,
    (b, h): (usize, usize),
) -> Vec<Vec<f64>> {
    let (hn, l, e, sl) = (q.shape[1], q.shape[2], q.shape[3], k.shape[2]);
    let scale = s.float("scale").unwrap_or(1.0 / (e as f64).sqrt());
    let causal = s.flag("is_causal").unwrap_or(false);
    let (qb, kb) = ((b * hn + h) * l * e, (b * hn + h) * sl * e);
    (0..l)
        .map(|i| {
            (0..sl)
                .map(|j| {
                    let dot: f64 = (0..e)
                        .map(|t| q.data[qb + i * e + t] * k.data[kb + j * e + t])
                        .sum();
                    let m = mask.map_or(0.0, |m| broadcast_at(m, [b, h, i, j]));
                    if causal && j > i {
                        f64::NEG_INFINITY
                    } else {
                        dot * scale + m
                    }
                })
                .collect()
        })
        .collect()
}

/// `_scaled_dot_product_flash_attention_for_cpu`: `(output, logsumexp)`, per (batch, head)
/// and query row; a fully masked row gives zeros and `-inf`.
pub fn flash_attention(s: &Sample) -> Vec<RefTensor> {
    let (q, k, v) = (input(s, 0), input(s, 1), input(s, 2));
    let mask = s.opt_t(3).map(RefTensor::of);
    let (bn, hn, l) = (q.shape[0], q.shape[1], q.shape[2]);
    let (sl, ev) = (k.shape[2], v.shape[3]);
    let mut out = vec![0.0; bn * hn * l * ev];
    let mut lse = vec![f64::NEG_INFINITY; bn * hn * l];
    for b in 0..bn {
        for h in 0..hn {
            let bh = b * hn + h;
            for (i, row) in head_scores(s, &q, &k, mask.as_ref(), (b, h))
                .iter()
                .enumerate()
            {
                let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                if mx == f64::NEG_INFINITY {
                    continue;
                }
                let z: f64 = row.iter().map(|x| (x - mx).exp()).sum();
                lse[bh * l + i] = mx + z.ln();
                for c in 0..ev {
                    out[(bh * l + i) * ev + c] = (0..sl)
                        .map(|j| (row[j] - mx).exp() / z * v.data[(bh * sl + j) * ev + c])
                        .sum();
                }
            }
        }
    }
    vec![
        tensor(vec![bn, hn, l, ev], out),
        tensor(vec![bn, hn, l], lse),
    ]
}

/// `_scaled_dot_product_flash_attention_for_cpu_backward`: with `p = exp(s - lse)` from the
/// given logsumexp and `delta_i = Σ dO · O` from the given output, `dV = pᵀ dO`,
/// `dS = p ⊙ (dO vᵀ - delta)`, `dQ = scale · dS k`, `dK = scale · dSᵀ q`.
pub fn flash_attention_backward(s: &Sample) -> Vec<RefTensor> {
    let (go, q, k, v, o, lse) = (
        input(s, 0),
        input(s, 1),
        input(s, 2),
        input(s, 3),
        input(s, 4),
        input(s, 5),
    );
    let mask = s.opt_t(6).map(RefTensor::of);
    let (bn, hn, l, e) = (q.shape[0], q.shape[1], q.shape[2], q.shape[3]);
    let (sl, ev) = (k.shape[2], v.shape[3]);
    let scale = s.float("scale").unwrap_or(1.0 / (e as f64).sqrt());
    let (mut dq, mut dk, mut dv) = (
        vec![0.0; q.data.len()],
        vec![0.0; k.data.len()],
        vec![0.0; v.data.len()],
    );
    for b in 0..bn {
        for h in 0..hn {
            let bh = b * hn + h;
            let sc = head_scores(s, &q, &k, mask.as_ref(), (b, h));
            for i in 0..l {
                let li = lse.data[bh * l + i];
                let gi = |c: usize| go.data[(bh * l + i) * ev + c];
                let delta: f64 = (0..ev).map(|c| gi(c) * o.data[(bh * l + i) * ev + c]).sum();
                for j in 0..sl {
                    let p = if li == f64::NEG_INFINITY {
                        0.0
                    } else {
                        (sc[i][j] - li).exp()
                    };
                    let dp: f64 = (0..ev)
                        .map(|c| gi(c) * v.data[(bh * sl + j) * ev + c])
                        .sum();
                    let ds = p * (dp - delta);
                    for c in 0..ev {
                        dv[(bh * sl + j) * ev + c] += p * gi(c);
                    }
                    for t in 0..e {
                        dq[(bh * l + i) * e + t] += scale * ds * k.data[(bh * sl + j) * e + t];
                        dk[(bh * sl + j) * e + t] += scale * ds * q.data[(bh * l + i) * e + t];
                    }
                }
            }
        }
    }
    vec![
        tensor(q.shape.clone(), dq),
        tensor(k.shape.clone(), dk),
        tensor(v.shape.clone(), dv),
    ]
}
