//! Float64 references for pooling: a max or mean over each window.

use super::{as_batched, full, input, ints_or, numel, tensor, unbatch, unravel};
use crate::harness::{RefTensor, Sample};

/// The windows of a pooling op: for each output position, the input positions it covers
/// (`None` for padding), with PyTorch's output-size rule (including `ceil_mode`).
#[allow(clippy::type_complexity)]
fn windows(
    size: &[usize],
    k: &[i64],
    st: &[i64],
    pd: &[i64],
    dl: &[i64],
    ceil: bool,
    given: Option<Vec<usize>>,
) -> (Vec<usize>, Vec<Vec<(Option<Vec<usize>>, bool)>>) {
    let n = size.len();
    let out: Vec<usize> = given.unwrap_or_else(|| {
        (0..n)
            .map(|i| {
                let span = dl[i] * (k[i] - 1) + 1;
                let avail = size[i] as i64 + 2 * pd[i] - span;
                let mut o = if ceil {
                    (avail + st[i] - 1) / st[i] + 1
                } else {
                    avail / st[i] + 1
                };
                if ceil && (o - 1) * st[i] >= size[i] as i64 + pd[i] {
                    o -= 1;
                }
                o as usize
            })
            .collect()
    });
    let ku: Vec<usize> = k.iter().map(|&v| v as usize).collect();
    let wins = (0..numel(&out))
        .map(|f| {
            let q = unravel(f, &out);
            (0..numel(&ku))
                .map(|kf| {
                    let kk = unravel(kf, &ku);
                    let pos: Vec<i64> = (0..n)
                        .map(|i| q[i] as i64 * st[i] - pd[i] + kk[i] as i64 * dl[i])
                        .collect();
                    let inside = pos
                        .iter()
                        .zip(size)
                        .all(|(&p, &sz)| p >= 0 && (p as usize) < sz);
                    // Inside the padded input (counted by count_include_pad) but maybe not the image.
                    let in_pad = pos
                        .iter()
                        .zip(size)
                        .zip(pd)
                        .all(|((&p, &sz), &pp)| p >= -pp && p < sz as i64 + pp);
                    (
                        inside.then(|| pos.iter().map(|&p| p as usize).collect()),
                        in_pad,
                    )
                })
                .collect()
        })
        .collect();
    (out, wins)
}

fn pool(s: &Sample, max: bool, n: usize) -> (RefTensor, RefTensor, bool) {
    pool_to(s, max, n, None)
}

/// `pool` with the number of windows per dim given (`_max_pool2d`) instead of computed.
fn pool_to(
    s: &Sample,
    max: bool,
    n: usize,
    given: Option<Vec<usize>>,
) -> (RefTensor, RefTensor, bool) {
    let x0 = input(s, 0);
    let kernel = s.ints("kernel_size").expect("kernel_size");
    let (x, batched) = as_batched(x0, n);
    let k = full(kernel, n);
    let st = match s.ints("stride") {
        Some(v) if !v.is_empty() => full(v, n),
        _ => k.clone(),
    };
    let pd = ints_or(s, "padding", &[0], n);
    let dl = ints_or(s, "dilation", &[1], n);
    let ceil = s.flag("ceil_mode").unwrap_or(false);
    let include_pad = s.flag("count_include_pad").unwrap_or(true);
    let divisor = s.opt_int("divisor_override").flatten();
    let (b, c) = (x.shape[0], x.shape[1]);
    let size = x.shape[2..].to_vec();
    let (out, wins) = windows(&size, &k, &st, &pd, &dl, ceil, given);
    let mut shape = vec![b, c];
    shape.extend(&out);
    let mut vals = Vec::new();
    let mut idx = Vec::new();
    for bi in 0..b {
        for ci in 0..c {
            for win in &wins {
                let mut best = (f64::NEG_INFINITY, 0usize);
                let (mut sum, mut count) = (0.0, 0usize);
                for (pos, in_pad) in win {
                    if let Some(p) = pos {
                        let mut full_ix = vec![bi, ci];
                        full_ix.extend(p);
                        let v = x.data[x.ravel(&full_ix)];
                        let flat = p.iter().zip(&size).fold(0, |a, (&q, &sz)| a * sz + q);
                        if v > best.0 || v.is_nan() {
                            best = (v, flat);
                        }
                        sum += v;
                        count += 1;
                    } else if *in_pad && include_pad {
                        count += 1;
                    }
                }
                vals.push(if max {
                    best.0
                } else {
                    sum / divisor.map_or(count as f64, |d| d as f64)
                });
                idx.push(best.1 as f64);
            }
        }
    }
    (tensor(shape.clone(), vals), tensor(shape, idx), batched)
}

pub fn max_pool1d(s: &Sample) -> Vec<RefTensor> {
    let (v, _, batched) = pool(s, true, 1);
    vec![unbatch(v, batched)]
}

pub fn max_pool2d(s: &Sample) -> Vec<RefTensor> {
    let (v, _, batched) = pool(s, true, 2);
    vec![unbatch(v, batched)]
}

pub fn max_pool2d_with_indices(s: &Sample) -> Vec<RefTensor> {
    let (v, i, batched) = pool(s, true, 2);
    vec![unbatch(v, batched), unbatch(i, batched)]
}

/// `_max_pool2d`: the max over each of the `output_size` windows, as `max_pool2d_with_indices`.
pub fn max_pool2d_kernel(s: &Sample) -> Vec<RefTensor> {
    let out = s.ints("output_size").expect("output_size");
    let (v, i, _) = pool_to(s, true, 2, Some(out.iter().map(|&o| o as usize).collect()));
    vec![v, i]
}

/// Each plane of zeros gets every cell's gradient added at the cell's index.
pub fn max_pool2d_backward(s: &Sample) -> Vec<RefTensor> {
    let (g, ix) = (input(s, 0), input(s, 1));
    let hw = s.ints("input_size").expect("input_size");
    let (planes, cells) = (g.shape[0] * g.shape[1], g.shape[2] * g.shape[3]);
    let plane = (hw[0] * hw[1]) as usize;
    let mut data = vec![0.0; planes * plane];
    for p in 0..planes {
        for c in 0..cells {
            data[p * plane + ix.data[p * cells + c] as usize] += g.data[p * cells + c];
        }
    }
    vec![tensor(
        vec![g.shape[0], g.shape[1], hw[0] as usize, hw[1] as usize],
        data,
    )]
}

pub fn avg_pool1d(s: &Sample) -> Vec<RefTensor> {
    let (v, _, batched) = pool(s, false, 1);
    vec![unbatch(v, batched)]
}

pub fn avg_pool2d(s: &Sample) -> Vec<RefTensor> {
    let (v, _, batched) = pool(s, false, 2);
    vec![unbatch(v, batched)]
}

pub fn adaptive_avg_pool(s: &Sample) -> Vec<RefTensor> {
    let out: Vec<usize> = s
        .ints("output_size")
        .expect("output_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let n = out.len();
    let x = input(s, 0);
    let lead = x.shape.len() - n;
    let size = x.shape[lead..].to_vec();
    let mut shape = x.shape[..lead].to_vec();
    shape.extend(&out);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let ranges: Vec<(usize, usize)> = (0..n)
                .map(|i| {
                    (
                        ix[lead + i] * size[i] / out[i],
                        ((ix[lead + i] + 1) * size[i]).div_ceil(out[i]),
                    )
                })
                .collect();
            let cells: Vec<usize> = ranges.iter().map(|(a, b)| b - a).collect();
            let mut sum = 0.0;
            for c in 0..numel(&cells) {
                let cc = unravel(c, &cells);
                let mut j = ix[..lead].to_vec();
                j.extend((0..n).map(|i| ranges[i].0 + cc[i]));
                sum += x.data[x.ravel(&j)];
            }
            sum / numel(&cells) as f64
        })
        .collect();
    vec![tensor(shape, data)]
}

pub fn adaptive_max_pool2d(s: &Sample) -> Vec<RefTensor> {
    let out: Vec<usize> = s
        .ints("output_size")
        .expect("output_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let x = input(s, 0);
    let lead = x.shape.len() - 2;
    let (h, w) = (x.shape[lead], x.shape[lead + 1]);
    let mut shape = x.shape[..lead].to_vec();
    shape.extend(&out);
    let (mut vals, mut idx) = (Vec::new(), Vec::new());
    for f in 0..numel(&shape) {
        let ix = unravel(f, &shape);
        let (i, j) = (ix[lead], ix[lead + 1]);
        let (h0, h1) = (i * h / out[0], ((i + 1) * h).div_ceil(out[0]));
        let (w0, w1) = (j * w / out[1], ((j + 1) * w).div_ceil(out[1]));
        let mut best: Option<(f64, usize)> = None;
        for r in h0..h1 {
            for c in w0..w1 {
                let mut p = ix[..lead].to_vec();
                p.extend([r, c]);
                let v = x.data[x.ravel(&p)];
                // A NaN wins its window: the first one, in row-major order.
                let take = match best {
                    None => true,
                    Some((b, _)) => !b.is_nan() && (v.is_nan() || v > b),
                };
                if take {
                    best = Some((v, r * w + c));
                }
            }
        }
        let (v, k) = best.expect("adaptive windows are never empty");
        vals.push(v);
        idx.push(k as f64);
    }
    vec![tensor(shape.clone(), vals), tensor(shape, idx)]
}

/// `adaptive_max_pool1d`: the 2-d reference over a height-1 image.
pub fn adaptive_max_pool1d(s: &Sample) -> Vec<RefTensor> {
    let n = s.ints("output_size").expect("output_size")[0] as usize;
    let x = input(s, 0);
    let len = *x.shape.last().expect("1-d or more");
    let lead: usize = x.shape[..x.shape.len() - 1].iter().product();
    let (mut vals, mut idx) = (Vec::new(), Vec::new());
    for p in 0..lead {
        for i in 0..n {
            let (a, b) = (i * len / n, ((i + 1) * len).div_ceil(n));
            let mut best = (x.data[p * len + a], a);
            for k in a..b {
                let v = x.data[p * len + k];
                if v > best.0 {
                    best = (v, k);
                }
            }
            vals.push(best.0);
            idx.push(best.1 as f64);
        }
    }
    let mut shape = x.shape[..x.shape.len() - 1].to_vec();
    shape.push(n);
    vec![tensor(shape.clone(), vals), tensor(shape, idx)]
}
