//! Float64 references for sliding blocks and the nn ops: direct loops over the definitions
//! (a convolution is a sum over kernel offsets, pooling a max/mean over a window).

use super::{input, RefTensor};
use crate::harness::{Arg, Sample};

/// `v` written out for `n` dims (one value is repeated).
fn full(v: &[i64], n: usize) -> Vec<i64> {
    if v.len() == 1 {
        vec![v[0]; n]
    } else {
        v.to_vec()
    }
}

struct Blocks {
    k: Vec<i64>,
    d: Vec<i64>,
    p: Vec<i64>,
    s: Vec<i64>,
}

impl Blocks {
    fn of(s: &Sample, n: usize) -> Blocks {
        Blocks {
            k: full(s.ints("kernel_size").expect("kernel_size"), n),
            d: full(s.ints("dilation").expect("dilation"), n),
            p: full(s.ints("padding").expect("padding"), n),
            s: full(s.ints("stride").expect("stride"), n),
        }
    }
    fn count(&self, size: &[usize]) -> Vec<usize> {
        (0..size.len())
            .map(|i| {
                ((size[i] as i64 + 2 * self.p[i] - self.d[i] * (self.k[i] - 1) - 1) / self.s[i] + 1)
                    as usize
            })
            .collect()
    }
}

/// Row-major multi-index of flat `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut v = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        v[d] = i % shape[d].max(1);
        i /= shape[d].max(1);
    }
    v
}

/// Image [B, C, *S] (a missing batch dim added), its spatial sizes and whether it was batched.
fn as_batched(x: RefTensor, n: usize) -> (RefTensor, bool) {
    if x.shape.len() == n + 2 {
        return (x, true);
    }
    let mut shape = x.shape.clone();
    shape.insert(0, 1);
    (
        RefTensor {
            shape,
            data: x.data,
        },
        false,
    )
}

pub fn im2col(s: &Sample) -> Vec<RefTensor> {
    let n = s.ints("kernel_size").expect("kernel_size").len();
    let (x, batched) = as_batched(input(s, 0), n);
    let g = Blocks::of(s, n);
    let (b, c) = (x.shape[0], x.shape[1]);
    let size = x.shape[2..].to_vec();
    let blocks = g.count(&size);
    let (kn, ln): (usize, usize) = (
        g.k.iter().product::<i64>() as usize,
        blocks.iter().product(),
    );
    let mut data = vec![0.0; b * c * kn * ln];
    for bi in 0..b {
        for ci in 0..c {
            for k in 0..kn {
                let kk = unravel(k, &g.k.iter().map(|&v| v as usize).collect::<Vec<_>>());
                for l in 0..ln {
                    let ll = unravel(l, &blocks);
                    let pos: Vec<i64> = (0..n)
                        .map(|i| ll[i] as i64 * g.s[i] - g.p[i] + kk[i] as i64 * g.d[i])
                        .collect();
                    if pos
                        .iter()
                        .zip(&size)
                        .all(|(&p, &sz)| p >= 0 && (p as usize) < sz)
                    {
                        let mut idx = vec![bi, ci];
                        idx.extend(pos.iter().map(|&p| p as usize));
                        data[((bi * c + ci) * kn + k) * ln + l] = x.data[x.ravel(&idx)];
                    }
                }
            }
        }
    }
    let mut shape = vec![c * kn, ln];
    if batched {
        shape.insert(0, b);
    }
    vec![RefTensor { shape, data }]
}

pub fn col2im(s: &Sample) -> Vec<RefTensor> {
    let out: Vec<usize> = s
        .ints("output_size")
        .expect("output_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let n = out.len();
    let cols = input(s, 0);
    let batched = cols.shape.len() == 3;
    let (b, rows, ln) = if batched {
        (cols.shape[0], cols.shape[1], cols.shape[2])
    } else {
        (1, cols.shape[0], cols.shape[1])
    };
    let g = Blocks::of(s, n);
    let kn = g.k.iter().product::<i64>() as usize;
    let c = rows / kn;
    let blocks = g.count(&out);
    let img: usize = out.iter().product();
    let mut data = vec![0.0; b * c * img];
    for bi in 0..b {
        for ci in 0..c {
            for k in 0..kn {
                let kk = unravel(k, &g.k.iter().map(|&v| v as usize).collect::<Vec<_>>());
                for l in 0..ln {
                    let ll = unravel(l, &blocks);
                    let pos: Vec<i64> = (0..n)
                        .map(|i| ll[i] as i64 * g.s[i] - g.p[i] + kk[i] as i64 * g.d[i])
                        .collect();
                    if pos
                        .iter()
                        .zip(&out)
                        .all(|(&p, &sz)| p >= 0 && (p as usize) < sz)
                    {
                        let flat = pos
                            .iter()
                            .zip(&out)
                            .fold(0, |acc, (&p, &sz)| acc * sz + p as usize);
                        data[(bi * c + ci) * img + flat] +=
                            cols.data[((bi * rows) + ci * kn + k) * ln + l];
                    }
                }
            }
        }
    }
    let mut shape = vec![c];
    shape.extend(&out);
    if batched {
        shape.insert(0, b);
    }
    vec![RefTensor { shape, data }]
}

// ---------------------------------------------------------------------------------------
// Convolution and pooling
// ---------------------------------------------------------------------------------------

fn tensor(shape: Vec<usize>, data: Vec<f64>) -> RefTensor {
    RefTensor { shape, data }
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn ints_or(s: &Sample, name: &str, default: &[i64], n: usize) -> Vec<i64> {
    full(s.ints(name).unwrap_or(default), n)
}

/// Drops the batch dim added by [`as_batched`].
fn unbatch(t: RefTensor, batched: bool) -> RefTensor {
    if batched {
        return t;
    }
    RefTensor {
        shape: t.shape[1..].to_vec(),
        data: t.data,
    }
}

/// Direct convolution: `out[b, o, q] = bias[o] + Σ_{c in o's group, k} x[b, c, q*s - p + k*d]
/// * w[o, c, k]`.
pub fn conv(s: &Sample) -> Vec<RefTensor> {
    let w = input(s, 1);
    let n = w.shape.len() - 2;
    let (x, batched) = as_batched(input(s, 0), n);
    let bias = s.opt_t(2).map(RefTensor::of);
    let (st, dl) = (
        ints_or(s, "stride", &[1], n),
        ints_or(s, "dilation", &[1], n),
    );
    let groups = s.int("groups").unwrap_or(1) as usize;
    let (b, o, cg) = (x.shape[0], w.shape[0], w.shape[1]);
    let size = &x.shape[2..];
    let k: Vec<usize> = w.shape[2..].to_vec();
    // Padding before and after each dim: the ints, or PyTorch's string modes ('same' puts
    // the odd element of dilation·(k-1) after).
    let mode = match s.get("padding") {
        Some(Arg::Str(m)) => Some(*m),
        _ => None,
    };
    let (pd, pr): (Vec<i64>, Vec<i64>) = match mode {
        Some("valid") => (vec![0; n], vec![0; n]),
        Some("same") => (0..n)
            .map(|i| {
                let total = dl[i] * (k[i] as i64 - 1);
                (total / 2, total - total / 2)
            })
            .unzip(),
        Some(other) => panic!("conv reference: unknown padding '{other}'"),
        None => {
            let pd = ints_or(s, "padding", &[0], n);
            (pd.clone(), pd)
        }
    };
    let out: Vec<usize> = (0..n)
        .map(|i| {
            ((size[i] as i64 + pd[i] + pr[i] - dl[i] * (k[i] as i64 - 1) - 1) / st[i] + 1) as usize
        })
        .collect();
    let mut shape = vec![b, o];
    shape.extend(&out);
    let og = o / groups;
    let mut data = vec![0.0; numel(&shape)];
    for (flat, v) in data.iter_mut().enumerate() {
        let ix = unravel(flat, &shape);
        let (bi, oi) = (ix[0], ix[1]);
        let g = oi / og;
        let mut acc = bias.as_ref().map_or(0.0, |bb| bb.data[oi]);
        for ci in 0..cg {
            for kf in 0..numel(&k) {
                let kk = unravel(kf, &k);
                let pos: Vec<i64> = (0..n)
                    .map(|i| ix[2 + i] as i64 * st[i] - pd[i] + kk[i] as i64 * dl[i])
                    .collect();
                if pos
                    .iter()
                    .zip(size)
                    .all(|(&p, &sz)| p >= 0 && (p as usize) < sz)
                {
                    let mut xi = vec![bi, g * cg + ci];
                    xi.extend(pos.iter().map(|&p| p as usize));
                    let mut wi = vec![oi, ci];
                    wi.extend(&kk);
                    acc += x.data[x.ravel(&xi)] * w.data[w.ravel(&wi)];
                }
            }
        }
        *v = acc;
    }
    vec![unbatch(tensor(shape, data), batched)]
}

/// Direct transposed convolution: every input element scatters `x * w` to
/// `q*s - p + k*d`.
pub fn conv_transpose(s: &Sample) -> Vec<RefTensor> {
    let w = input(s, 1);
    let n = w.shape.len() - 2;
    let (x, batched) = as_batched(input(s, 0), n);
    let bias = s.opt_t(2).map(RefTensor::of);
    let (st, pd, dl, op) = (
        ints_or(s, "stride", &[1], n),
        ints_or(s, "padding", &[0], n),
        ints_or(s, "dilation", &[1], n),
        ints_or(s, "output_padding", &[0], n),
    );
    let groups = s.int("groups").unwrap_or(1) as usize;
    let (b, cin, og) = (x.shape[0], x.shape[1], w.shape[1]);
    let cg = cin / groups;
    let size = x.shape[2..].to_vec();
    let k: Vec<usize> = w.shape[2..].to_vec();
    let out: Vec<usize> = (0..n)
        .map(|i| {
            ((size[i] as i64 - 1) * st[i] - 2 * pd[i] + dl[i] * (k[i] as i64 - 1) + op[i] + 1)
                as usize
        })
        .collect();
    let mut shape = vec![b, og * groups];
    shape.extend(&out);
    let mut data = vec![0.0; numel(&shape)];
    for flat in 0..x.data.len() {
        let ix = unravel(flat, &x.shape);
        let (bi, ci) = (ix[0], ix[1]);
        let g = ci / cg;
        for o in 0..og {
            for kf in 0..numel(&k) {
                let kk = unravel(kf, &k);
                let pos: Vec<i64> = (0..n)
                    .map(|i| ix[2 + i] as i64 * st[i] - pd[i] + kk[i] as i64 * dl[i])
                    .collect();
                if pos
                    .iter()
                    .zip(&out)
                    .all(|(&p, &sz)| p >= 0 && (p as usize) < sz)
                {
                    let mut oi = vec![bi, g * og + o];
                    oi.extend(pos.iter().map(|&p| p as usize));
                    let mut wi = vec![ci, o];
                    wi.extend(&kk);
                    let at = RefTensor {
                        shape: shape.clone(),
                        data: vec![],
                    }
                    .ravel(&oi);
                    data[at] += x.data[flat] * w.data[w.ravel(&wi)];
                }
            }
        }
    }
    if let Some(bb) = bias {
        let per: usize = numel(&out);
        for (i, v) in data.iter_mut().enumerate() {
            *v += bb.data[(i / per) % (og * groups)];
        }
    }
    vec![unbatch(tensor(shape, data), batched)]
}

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
) -> (Vec<usize>, Vec<Vec<(Option<Vec<usize>>, bool)>>) {
    let n = size.len();
    let out: Vec<usize> = (0..n)
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
        .collect();
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
    let (out, wins) = windows(&size, &k, &st, &pd, &dl, ceil);
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

// ---------------------------------------------------------------------------------------
// Linear layers
// ---------------------------------------------------------------------------------------

/// `a [.., n] · W [o, n]ᵀ` over the last dim.
fn rows_times(a: &RefTensor, w: &RefTensor) -> RefTensor {
    let n = *a.shape.last().unwrap_or(&1);
    let o = w.shape[0];
    let rows = a.data.len() / n.max(1);
    let mut shape = a.shape[..a.shape.len() - 1].to_vec();
    shape.push(o);
    let mut data = vec![0.0; rows * o];
    for r in 0..rows {
        for j in 0..o {
            data[r * o + j] = (0..n).map(|i| a.data[r * n + i] * w.data[j * n + i]).sum();
        }
    }
    tensor(shape, data)
}

fn plus_bias(mut y: RefTensor, b: Option<RefTensor>) -> RefTensor {
    if let Some(b) = b {
        let o = b.data.len();
        for (i, v) in y.data.iter_mut().enumerate() {
            *v += b.data[i % o];
        }
    }
    y
}

pub fn linear(s: &Sample) -> Vec<RefTensor> {
    let y = rows_times(&input(s, 0), &input(s, 1));
    vec![plus_bias(y, s.opt_t(2).map(RefTensor::of))]
}

pub fn bilinear(s: &Sample) -> Vec<RefTensor> {
    let (a, b, w) = (input(s, 0), input(s, 1), input(s, 2));
    let (o, i1, i2) = (w.shape[0], w.shape[1], w.shape[2]);
    let rows = a.data.len() / i1;
    let mut shape = a.shape[..a.shape.len() - 1].to_vec();
    shape.push(o);
    let mut data = vec![0.0; rows * o];
    for r in 0..rows {
        for k in 0..o {
            let mut acc = 0.0;
            for i in 0..i1 {
                for j in 0..i2 {
                    acc += a.data[r * i1 + i] * w.data[(k * i1 + i) * i2 + j] * b.data[r * i2 + j];
                }
            }
            data[r * o + k] = acc;
        }
    }
    vec![plus_bias(
        tensor(shape, data),
        s.opt_t(3).map(RefTensor::of),
    )]
}

pub fn mv(s: &Sample) -> Vec<RefTensor> {
    let (m, v) = (input(s, 0), input(s, 1));
    vec![rows_times(&v, &m)]
}

fn beta_alpha(s: &Sample) -> (f64, f64) {
    (
        s.scalar("beta").map_or(1.0, |v| v.to::<f64>()),
        s.scalar("alpha").map_or(1.0, |v| v.to::<f64>()),
    )
}

/// `beta * base (broadcast) + alpha * p`; `beta = 0` ignores the base.
fn blend(base: &RefTensor, p: RefTensor, s: &Sample) -> RefTensor {
    let (beta, alpha) = beta_alpha(s);
    let data = (0..p.data.len())
        .map(|i| {
            let ix = unravel(i, &p.shape);
            let lead = ix.len() - base.shape.len();
            let j: Vec<usize> = (0..base.shape.len())
                .map(|d| if base.shape[d] == 1 { 0 } else { ix[lead + d] })
                .collect();
            let b = if beta == 0.0 {
                0.0
            } else {
                beta * base.data[base.ravel(&j)]
            };
            b + alpha * p.data[i]
        })
        .collect();
    tensor(p.shape, data)
}

pub fn addmv(s: &Sample) -> Vec<RefTensor> {
    let p = rows_times(&input(s, 2), &input(s, 1));
    vec![blend(&input(s, 0), p, s)]
}

/// `b1 [B, n, k] @ b2 [B, k, m]`.
fn batched_mm(b1: &RefTensor, b2: &RefTensor) -> RefTensor {
    let (bn, n, k, m) = (b1.shape[0], b1.shape[1], b1.shape[2], b2.shape[2]);
    let mut data = vec![0.0; bn * n * m];
    for b in 0..bn {
        for i in 0..n {
            for j in 0..m {
                data[(b * n + i) * m + j] = (0..k)
                    .map(|t| b1.data[(b * n + i) * k + t] * b2.data[(b * k + t) * m + j])
                    .sum();
            }
        }
    }
    tensor(vec![bn, n, m], data)
}

pub fn baddbmm(s: &Sample) -> Vec<RefTensor> {
    let p = batched_mm(&input(s, 1), &input(s, 2));
    vec![blend(&input(s, 0), p, s)]
}

pub fn addbmm(s: &Sample) -> Vec<RefTensor> {
    let p = batched_mm(&input(s, 1), &input(s, 2));
    let (bn, n, m) = (p.shape[0], p.shape[1], p.shape[2]);
    let mut sum = vec![0.0; n * m];
    for b in 0..bn {
        for (i, v) in sum.iter_mut().enumerate() {
            *v += p.data[b * n * m + i];
        }
    }
    vec![blend(&input(s, 0), tensor(vec![n, m], sum), s)]
}

// ---------------------------------------------------------------------------------------
// Resampling, embedding, dropout, attention
// ---------------------------------------------------------------------------------------

/// Each output dim reads input `floor(dst * in / out)` (or `/ scale`).
pub fn upsample_nearest(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let out: Vec<usize> = s
        .ints("output_size")
        .expect("output_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let n = out.len();
    let scales: Vec<Option<f64>> = match n {
        1 => vec![s.float("scales")],
        _ => vec![s.float("scales_h"), s.float("scales_w")],
    };
    let mut shape = x.shape[..2].to_vec();
    shape.extend(&out);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let mut j = ix[..2].to_vec();
            for i in 0..n {
                let size = x.shape[2 + i];
                let r = scales[i].map_or(size as f64 / out[i] as f64, |sc| 1.0 / sc);
                j.push(((ix[2 + i] as f64 * r).floor() as usize).min(size - 1));
            }
            x.data[x.ravel(&j)]
        })
        .collect();
    vec![tensor(shape, data)]
}

/// Bilinear: the source coordinate per dim, then the four neighbours weighted.
pub fn upsample_bilinear2d(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let out: Vec<usize> = s
        .ints("output_size")
        .expect("output_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let align = s.flag("align_corners").expect("align_corners");
    let src = |o: usize, size: usize, out: usize| -> (usize, usize, f64) {
        let v = if align {
            if out > 1 {
                o as f64 * (size - 1) as f64 / (out - 1) as f64
            } else {
                0.0
            }
        } else {
            ((o as f64 + 0.5) * size as f64 / out as f64 - 0.5).max(0.0)
        };
        let i0 = (v.floor() as usize).min(size - 1);
        (i0, (i0 + 1).min(size - 1), v - i0 as f64)
    };
    let mut shape = x.shape[..2].to_vec();
    shape.extend(&out);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let (h0, h1, lh) = src(ix[2], x.shape[2], out[0]);
            let (w0, w1, lw) = src(ix[3], x.shape[3], out[1]);
            let at = |h: usize, w: usize| x.data[x.ravel(&[ix[0], ix[1], h, w])];
            (1.0 - lh) * ((1.0 - lw) * at(h0, w0) + lw * at(h0, w1))
                + lh * ((1.0 - lw) * at(h1, w0) + lw * at(h1, w1))
        })
        .collect();
    vec![tensor(shape, data)]
}

/// The `(input index, weight)` pairs output `o` of a resampled dim reads: the input
/// `floor(o * ratio)` (nearest), or the two around PyTorch's source position (linear).
fn taps(
    o: usize,
    size: usize,
    out: usize,
    scale: Option<f64>,
    linear: Option<bool>,
) -> Vec<(usize, f64)> {
    let ratio = |align: bool| {
        if align {
            if out > 1 {
                (size - 1) as f64 / (out - 1) as f64
            } else {
                0.0
            }
        } else {
            match scale {
                Some(sc) if sc > 0.0 => 1.0 / sc,
                _ => size as f64 / out as f64,
            }
        }
    };
    match linear {
        None => vec![(
            ((o as f64 * ratio(false)).floor() as usize).min(size - 1),
            1.0,
        )],
        Some(align) => {
            let v = if align {
                ratio(true) * o as f64
            } else {
                (ratio(false) * (o as f64 + 0.5) - 0.5).max(0.0)
            };
            let i0 = (v.floor() as usize).min(size - 1);
            let l = v - i0 as f64;
            vec![(i0, 1.0 - l), ((i0 + 1).min(size - 1), l)]
        }
    }
}

/// The gradient of a resampling: each element of `grad_output` (sample tensor 0) added, with
/// the weights of the taps it read along each spatial dim, into a zero tensor of
/// `input_size`.
fn resample_backward(s: &Sample, scales: &[Option<f64>], linear: Option<bool>) -> Vec<RefTensor> {
    let g = input(s, 0);
    let shape: Vec<usize> = s
        .ints("input_size")
        .expect("input_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let mut out = tensor(shape.clone(), vec![0.0; numel(&shape)]);
    let n = shape.len() - 2;
    for f in 0..g.data.len() {
        let ix = unravel(f, &g.shape);
        let per_dim: Vec<Vec<(usize, f64)>> = (0..n)
            .map(|d| taps(ix[2 + d], shape[2 + d], g.shape[2 + d], scales[d], linear))
            .collect();
        let mut combos: Vec<(Vec<usize>, f64)> = vec![(ix[..2].to_vec(), 1.0)];
        for dim_taps in &per_dim {
            combos = combos
                .iter()
                .flat_map(|(j, w)| {
                    dim_taps.iter().map(move |&(i, tw)| {
                        let mut j = j.clone();
                        j.push(i);
                        (j, w * tw)
                    })
                })
                .collect();
        }
        for (j, w) in combos {
            let p = out.ravel(&j);
            out.data[p] += w * g.data[f];
        }
    }
    vec![out]
}

/// upsample_nearest1d_backward / upsample_nearest2d_backward.
pub fn upsample_nearest_backward(s: &Sample) -> Vec<RefTensor> {
    let scales = match s.ints("output_size").expect("output_size").len() {
        1 => vec![s.float("scales")],
        _ => vec![s.float("scales_h"), s.float("scales_w")],
    };
    resample_backward(s, &scales, None)
}

pub fn upsample_bilinear2d_backward(s: &Sample) -> Vec<RefTensor> {
    let align = s.flag("align_corners").expect("align_corners");
    resample_backward(s, &[s.float("scales_h"), s.float("scales_w")], Some(align))
}

pub fn pixel_shuffle(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let r = s.int("upscale_factor").expect("upscale_factor") as usize;
    let nd = x.shape.len();
    let (c, h, w) = (x.shape[nd - 3], x.shape[nd - 2], x.shape[nd - 1]);
    let mut shape = x.shape[..nd - 3].to_vec();
    shape.extend([c / (r * r), h * r, w * r]);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let (co, ho, wo) = (ix[nd - 3], ix[nd - 2], ix[nd - 1]);
            let mut j = ix[..nd - 3].to_vec();
            j.extend([co * r * r + (ho % r) * r + wo % r, ho / r, wo / r]);
            x.data[x.ravel(&j)]
        })
        .collect();
    vec![tensor(shape, data)]
}

pub fn pixel_unshuffle(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let r = s.int("downscale_factor").expect("downscale_factor") as usize;
    let nd = x.shape.len();
    let (c, h, w) = (x.shape[nd - 3], x.shape[nd - 2], x.shape[nd - 1]);
    let mut shape = x.shape[..nd - 3].to_vec();
    shape.extend([c * r * r, h / r, w / r]);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let (co, ho, wo) = (ix[nd - 3], ix[nd - 2], ix[nd - 1]);
            let (ci, off) = (co / (r * r), co % (r * r));
            let mut j = ix[..nd - 3].to_vec();
            j.extend([ci, ho * r + off / r, wo * r + off % r]);
            x.data[x.ravel(&j)]
        })
        .collect();
    vec![tensor(shape, data)]
}

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
                    let mv = m.data[(i * sl + j) % m.data.len()];
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

// ---------------------------------------------------------------------------------------
// Normalization
// ---------------------------------------------------------------------------------------

/// Normalizes groups of `x` (elements with the same `key(index)`), then applies per-element
/// `scale`/`shift`.
fn normalize_by(
    x: &RefTensor,
    key: impl Fn(&[usize]) -> usize,
    stats: Option<(&[f64], &[f64])>,
    eps: f64,
    affine: impl Fn(&[usize], f64) -> f64,
) -> RefTensor {
    let keys: Vec<usize> = (0..x.data.len())
        .map(|i| key(&unravel(i, &x.shape)))
        .collect();
    let groups = keys.iter().max().map_or(0, |m| m + 1);
    let (mut sum, mut cnt) = (vec![0.0; groups], vec![0.0; groups]);
    for (i, &g) in keys.iter().enumerate() {
        sum[g] += x.data[i];
        cnt[g] += 1.0;
    }
    let mean: Vec<f64> = (0..groups).map(|g| sum[g] / cnt[g]).collect();
    let mut sq = vec![0.0; groups];
    for (i, &g) in keys.iter().enumerate() {
        sq[g] += (x.data[i] - mean[g]).powi(2);
    }
    let var: Vec<f64> = (0..groups).map(|g| sq[g] / cnt[g]).collect();
    let data = (0..x.data.len())
        .map(|i| {
            let g = keys[i];
            let (m, v) = match stats {
                Some((rm, rv)) => (rm[g], rv[g]),
                None => (mean[g], var[g]),
            };
            affine(&unravel(i, &x.shape), (x.data[i] - m) / (v + eps).sqrt())
        })
        .collect();
    tensor(x.shape.clone(), data)
}

fn opt(s: &Sample, i: usize) -> Option<RefTensor> {
    s.opt_t(i).map(RefTensor::of)
}

pub fn batch_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (w, b, rm, rv) = (opt(s, 1), opt(s, 2), opt(s, 3), opt(s, 4));
    let training = s.flag("training").expect("training");
    let eps = s.float("eps").expect("eps");
    let stats = if training {
        None
    } else {
        Some((
            rm.as_ref().expect("rm").data.as_slice(),
            rv.as_ref().expect("rv").data.as_slice(),
        ))
    };
    let y = normalize_by(
        &x,
        |ix| ix[1],
        stats,
        eps,
        |ix, v| {
            v * w.as_ref().map_or(1.0, |w| w.data[ix[1]])
                + b.as_ref().map_or(0.0, |b| b.data[ix[1]])
        },
    );
    vec![y]
}

/// Layer/RMS norm helpers: the flat index within the trailing `k` dims, and the row.
fn trailing(ix: &[usize], shape: &[usize], k: usize) -> (usize, usize) {
    let nd = shape.len();
    let inner = ix[nd - k..]
        .iter()
        .zip(&shape[nd - k..])
        .fold(0, |a, (&i, &s)| a * s + i);
    let row = ix[..nd - k]
        .iter()
        .zip(&shape[..nd - k])
        .fold(0, |a, (&i, &s)| a * s + i);
    (row, inner)
}

pub fn layer_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let k = s.ints("normalized_shape").expect("normalized_shape").len();
    let (w, b) = (opt(s, 1), opt(s, 2));
    let eps = s.float("eps").unwrap_or(1e-5);
    let shape = x.shape.clone();
    let y = normalize_by(
        &x,
        |ix| trailing(ix, &shape, k).0,
        None,
        eps,
        |ix, v| {
            let i = trailing(ix, &shape, k).1;
            v * w.as_ref().map_or(1.0, |w| w.data[i]) + b.as_ref().map_or(0.0, |b| b.data[i])
        },
    );
    vec![y]
}

pub fn group_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let g = s.int("num_groups").expect("num_groups") as usize;
    let (w, b) = (opt(s, 1), opt(s, 2));
    let eps = s.float("eps").unwrap_or(1e-5);
    let per = x.shape[1] / g;
    let y = normalize_by(
        &x,
        |ix| ix[0] * g + ix[1] / per,
        None,
        eps,
        |ix, v| {
            v * w.as_ref().map_or(1.0, |w| w.data[ix[1]])
                + b.as_ref().map_or(0.0, |b| b.data[ix[1]])
        },
    );
    vec![y]
}

pub fn instance_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (w, b) = (opt(s, 1), opt(s, 2));
    let eps = s.float("eps").expect("eps");
    let c = x.shape[1];
    let y = normalize_by(
        &x,
        |ix| ix[0] * c + ix[1],
        None,
        eps,
        |ix, v| {
            v * w.as_ref().map_or(1.0, |w| w.data[ix[1]])
                + b.as_ref().map_or(0.0, |b| b.data[ix[1]])
        },
    );
    vec![y]
}

pub fn rms_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let k = s.ints("normalized_shape").expect("normalized_shape").len();
    let w = opt(s, 1);
    let eps = s.float("eps").unwrap_or(match s.t(0).dtype() {
        kiln::DType::F16 => 0.0009765625,
        kiln::DType::BF16 => 0.0078125,
        kiln::DType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    });
    let shape = x.shape.clone();
    let rows = x.data.len() / numel(&shape[shape.len() - k..]).max(1);
    let mut ms = vec![0.0; rows];
    let per = numel(&shape[shape.len() - k..]) as f64;
    for i in 0..x.data.len() {
        let (r, _) = trailing(&unravel(i, &shape), &shape, k);
        ms[r] += x.data[i] * x.data[i] / per;
    }
    let data = (0..x.data.len())
        .map(|i| {
            let (r, inner) = trailing(&unravel(i, &shape), &shape, k);
            x.data[i] / (ms[r] + eps).sqrt() * w.as_ref().map_or(1.0, |w| w.data[inner])
        })
        .collect();
    vec![tensor(shape, data)]
}

// ---------------------------------------------------------------------------------------
// Losses and distances
// ---------------------------------------------------------------------------------------

fn reduce(loss: Vec<f64>, shape: Vec<usize>, reduction: i64, denom: f64) -> RefTensor {
    match reduction {
        0 => tensor(shape, loss),
        2 => tensor(vec![], vec![loss.iter().sum()]),
        _ => tensor(vec![], vec![loss.iter().sum::<f64>() / denom]),
    }
}

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

/// The shape `shapes` broadcast to.
fn broadcast_shape(shapes: &[&[usize]]) -> Vec<usize> {
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
    let terms = numel(&broadcast_shape(&[&x.shape, &t.shape]));
    let shape = broadcast_shape(&[&g.shape, &x.shape, &t.shape]);
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

pub fn cdist(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let p = s.float("p").unwrap_or(2.0);
    let (nd, m) = (a.shape.len(), *a.shape.last().expect("2-d"));
    let (pn, rn) = (a.shape[nd - 2], b.shape[b.shape.len() - 2]);
    let batch = a.data.len() / (pn * m).max(1);
    let mut shape = a.shape[..nd - 1].to_vec();
    shape.push(rn);
    let mut data = Vec::with_capacity(batch * pn * rn);
    for bi in 0..batch {
        for i in 0..pn {
            for j in 0..rn {
                let s: f64 = (0..m)
                    .map(|k| {
                        (a.data[(bi * pn + i) * m + k] - b.data[(bi * rn + j) * m + k])
                            .abs()
                            .powf(p)
                    })
                    .sum();
                data.push(s.powf(1.0 / p));
            }
        }
    }
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
