//! Float64 references for sliding blocks and the nn ops: direct loops over the definitions
//! (a convolution is a sum over kernel offsets, pooling a max/mean over a window).

use super::{input, RefTensor};
use crate::harness::Sample;

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
