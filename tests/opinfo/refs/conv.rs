//! Float64 references for sliding blocks and convolutions: direct loops over the definitions
//! (a convolution is a sum over kernel offsets).

use super::{as_batched, full, input, ints_or, numel, tensor, unbatch, unravel};
use crate::harness::{Arg, RefTensor, Sample};

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
// Convolution
// ---------------------------------------------------------------------------------------

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

/// `_conv_weight_backward` and `_conv_grouped_weight_backward`: `dw[o, c, k] = sum over
/// images and output positions l of grad_output[b, o, l] * input[b, c', position of l under
/// kernel offset k]`, `c'` the `c`-th input channel of `o`'s group.
pub fn conv_weight_backward(s: &Sample) -> Vec<RefTensor> {
    let (gy, x) = (input(s, 0), input(s, 1));
    let n = x.shape.len() - 2;
    let g = Blocks::of(s, n);
    let groups = s.int("groups").unwrap_or(1) as usize;
    let (b, o) = (x.shape[0], gy.shape[1]);
    let (cg, og) = (x.shape[1] / groups, o / groups);
    let size = x.shape[2..].to_vec();
    let blocks = g.count(&size);
    let kdims: Vec<usize> = g.k.iter().map(|&v| v as usize).collect();
    let (kn, ln): (usize, usize) = (kdims.iter().product(), blocks.iter().product());
    let mut data = vec![0.0; o * cg * kn];
    for bi in 0..b {
        for oi in 0..o {
            for ci in 0..cg {
                for k in 0..kn {
                    let kk = unravel(k, &kdims);
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
                            let mut xi = vec![bi, (oi / og) * cg + ci];
                            xi.extend(pos.iter().map(|&p| p as usize));
                            let mut gi = vec![bi, oi];
                            gi.extend(&ll);
                            data[(oi * cg + ci) * kn + k] +=
                                gy.data[gy.ravel(&gi)] * x.data[x.ravel(&xi)];
                        }
                    }
                }
            }
        }
    }
    let mut shape = vec![o, cg];
    shape.extend(&kdims);
    vec![RefTensor { shape, data }]
}

/// `_conv_grouped_input_backward`: every output-gradient element scatters
/// `grad_output[b, o, l] * w[o, c, k]` to the input position `l` reads under offset `k`, for
/// each input channel `c` of `o`'s group; `input_size` gives the shape.
pub fn conv_input_backward(s: &Sample) -> Vec<RefTensor> {
    let (gy, w) = (input(s, 0), input(s, 1));
    let shape: Vec<usize> = s
        .ints("input_size")
        .expect("input_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let n = shape.len() - 2;
    let (st, pd, dl) = (
        ints_or(s, "stride", &[1], n),
        ints_or(s, "padding", &[0], n),
        ints_or(s, "dilation", &[1], n),
    );
    let groups = s.int("groups").unwrap_or(1) as usize;
    let (o, cg) = (w.shape[0], w.shape[1]);
    let og = o / groups;
    let k: Vec<usize> = w.shape[2..].to_vec();
    let size = &shape[2..];
    let mut data = vec![0.0; numel(&shape)];
    for flat in 0..gy.data.len() {
        let ix = unravel(flat, &gy.shape);
        let (bi, oi) = (ix[0], ix[1]);
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
                    let at = pos
                        .iter()
                        .zip(size)
                        .fold(bi * shape[1] + (oi / og) * cg + ci, |acc, (&p, &sz)| {
                            acc * sz + p as usize
                        });
                    let mut wi = vec![oi, ci];
                    wi.extend(&kk);
                    data[at] += gy.data[flat] * w.data[w.ravel(&wi)];
                }
            }
        }
    }
    vec![tensor(shape, data)]
}
