//! Float64 references for src/ops/shaping.rs: every output element located by index
//! arithmetic on row-major values.

use super::{at, at_broadcast, broadcast, input, nonzero, scalar, tabulate, with_shape, wrap};
use crate::harness::{RefTensor, Sample};

fn opt_wrap(d: i64, n: usize) -> usize {
    wrap(d, n)
}

/// `x` with the coordinate along each of `dims` reversed.
fn flipped(x: &RefTensor, dims: &[usize]) -> RefTensor {
    tabulate(x.shape.clone(), |ix| {
        let mut j = ix.to_vec();
        for &d in dims {
            j[d] = x.shape[d] - 1 - j[d];
        }
        at(x, &j)
    })
}

pub fn flip(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    if x.shape.is_empty() {
        return vec![x];
    }
    let dims: Vec<usize> = s
        .ints("dims")
        .expect("dims")
        .iter()
        .map(|&d| opt_wrap(d, x.shape.len()))
        .collect();
    vec![flipped(&x, &dims)]
}

pub fn fliplr(s: &Sample) -> Vec<RefTensor> {
    vec![flipped(&input(s, 0), &[1])]
}

pub fn flipud(s: &Sample) -> Vec<RefTensor> {
    vec![flipped(&input(s, 0), &[0])]
}

pub fn roll(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shifts = s.ints("shifts").expect("shifts");
    let dims = s.ints("dims").unwrap_or(&[]);
    if dims.is_empty() {
        let n = x.data.len() as i64;
        let k = shifts[0];
        let data = (0..n)
            .map(|i| x.data[(i - k).rem_euclid(n.max(1)) as usize])
            .collect();
        return vec![RefTensor {
            shape: x.shape.clone(),
            data,
        }];
    }
    let pairs: Vec<(usize, i64)> = dims
        .iter()
        .zip(shifts)
        .map(|(&d, &k)| (wrap(d, x.shape.len()), k))
        .collect();
    vec![tabulate(x.shape.clone(), |ix| {
        let mut j = ix.to_vec();
        for &(d, k) in &pairs {
            let n = x.shape[d] as i64;
            j[d] = (ix[d] as i64 - k).rem_euclid(n) as usize;
        }
        at(&x, &j)
    })]
}

/// rot90: `out` is `x` turned k quarter turns from dims[0] towards dims[1]; each turn maps
/// `out[.., i, .., j, ..] = x[.., j, .., n - 1 - i, ..]` over the plane.
pub fn rot90(s: &Sample) -> Vec<RefTensor> {
    let mut x = input(s, 0);
    let dims = s.ints("dims").unwrap_or(&[0, 1]);
    let (a, b) = (wrap(dims[0], x.shape.len()), wrap(dims[1], x.shape.len()));
    let k = s.int("k").unwrap_or(1).rem_euclid(4);
    for _ in 0..k {
        let mut shape = x.shape.clone();
        shape.swap(a, b);
        let src = x.clone();
        x = tabulate(shape, |ix| {
            let mut j = ix.to_vec();
            j[a] = ix[b];
            j[b] = src.shape[b] - 1 - ix[a];
            at(&src, &j)
        });
    }
    vec![x]
}

fn diagonal_of(x: &RefTensor, offset: i64, d1: usize, d2: usize) -> RefTensor {
    let (n1, n2) = (x.shape[d1] as i64, x.shape[d2] as i64);
    let len = if offset >= 0 {
        n1.min(n2 - offset)
    } else {
        (n1 + offset).min(n2)
    }
    .max(0) as usize;
    let rest: Vec<usize> = (0..x.shape.len()).filter(|&d| d != d1 && d != d2).collect();
    let mut shape: Vec<usize> = rest.iter().map(|&d| x.shape[d]).collect();
    shape.push(len);
    tabulate(shape, |ix| {
        let k = ix[ix.len() - 1] as i64;
        let mut j = vec![0; x.shape.len()];
        for (p, &d) in rest.iter().enumerate() {
            j[d] = ix[p];
        }
        let (r, c) = if offset >= 0 {
            (k, k + offset)
        } else {
            (k - offset, k)
        };
        j[d1] = r as usize;
        j[d2] = c as usize;
        at(x, &j)
    })
}

pub fn diagonal(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let d1 = wrap(s.int("dim1").unwrap_or(0), nd);
    let d2 = wrap(s.int("dim2").unwrap_or(1), nd);
    vec![diagonal_of(&x, s.int("offset").unwrap_or(0), d1, d2)]
}

pub fn diag(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let k = s.int("diagonal").unwrap_or(0);
    if x.shape.len() == 2 {
        return vec![diagonal_of(&x, k, 0, 1)];
    }
    let n = x.shape[0] + k.unsigned_abs() as usize;
    vec![tabulate(vec![n, n], |ix| {
        let (r, c) = (ix[0] as i64, ix[1] as i64);
        if c - r != k {
            return 0.0;
        }
        x.data[r.min(c) as usize]
    })]
}

pub fn trace(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let n = x.shape[0].min(x.shape[1]);
    vec![scalar((0..n).map(|i| at(&x, &[i, i])).sum())]
}

pub fn movedim(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let src: Vec<usize> = s
        .ints("source")
        .expect("source")
        .iter()
        .map(|&d| wrap(d, nd))
        .collect();
    let dst: Vec<usize> = s
        .ints("destination")
        .expect("destination")
        .iter()
        .map(|&d| wrap(d, nd))
        .collect();
    if nd == 0 {
        return vec![x];
    }
    // order[p] = the input dim that lands at output position p.
    let mut order: Vec<Option<usize>> = vec![None; nd];
    for (&a, &b) in src.iter().zip(&dst) {
        order[b] = Some(a);
    }
    let mut rest = (0..nd).filter(|d| !src.contains(d));
    let order: Vec<usize> = order
        .into_iter()
        .map(|o| o.unwrap_or_else(|| rest.next().expect("enough dims")))
        .collect();
    let shape: Vec<usize> = order.iter().map(|&d| x.shape[d]).collect();
    vec![tabulate(shape, |ix| {
        let mut j = vec![0; nd];
        for (p, &d) in order.iter().enumerate() {
            j[d] = ix[p];
        }
        at(&x, &j)
    })]
}

pub fn broadcast_to(s: &Sample) -> Vec<RefTensor> {
    super::expand(s)
}

pub fn unfold(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let x = if x.shape.is_empty() {
        with_shape(x, vec![1])
    } else {
        x
    };
    let was_scalar = input(s, 0).shape.is_empty();
    let d = wrap(s.int("dimension").expect("dimension"), x.shape.len());
    let (size, step) = (
        s.int("size").expect("size") as usize,
        s.int("step").expect("step") as usize,
    );
    let mut shape = x.shape.clone();
    shape[d] = (x.shape[d] - size) / step + 1;
    shape.push(size);
    let r = tabulate(shape, |ix| {
        let mut j = ix[..ix.len() - 1].to_vec();
        j[d] = ix[d] * step + ix[ix.len() - 1];
        at(&x, &j)
    });
    if was_scalar {
        let n = r.data.len();
        return vec![with_shape(r, vec![n])];
    }
    vec![r]
}

pub fn squeeze_dims(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let dims: Vec<usize> = s
        .ints("dim")
        .expect("dim")
        .iter()
        .map(|&d| wrap(d, nd))
        .collect();
    let shape: Vec<usize> = (0..nd)
        .filter(|d| !(dims.contains(d) && x.shape[*d] == 1))
        .map(|d| x.shape[d])
        .collect();
    vec![with_shape(x, shape)]
}

pub fn narrow_tensor(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let start = input(s, 1).data[0] as i64;
    let start = if start < 0 {
        start + x.shape[d] as i64
    } else {
        start
    } as usize;
    let mut shape = x.shape.clone();
    shape[d] = s.int("length").expect("length") as usize;
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j[d] += start;
        at(&x, &j)
    })]
}

pub fn masked_fill_tensor(s: &Sample) -> Vec<RefTensor> {
    let (x, m, v) = (input(s, 0), input(s, 1), input(s, 2).data[0]);
    vec![tabulate(broadcast(&x.shape, &m.shape), |ix| {
        if at_broadcast(&m, ix) != 0.0 {
            v
        } else {
            at_broadcast(&x, ix)
        }
    })]
}

pub fn clamp_tensor(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let lo = s.opt_t(1).map(RefTensor::of);
    let hi = s.opt_t(2).map(RefTensor::of);
    let mut shape = x.shape.clone();
    for b in lo.iter().chain(hi.iter()) {
        shape = broadcast(&shape, &b.shape);
    }
    vec![tabulate(shape, |ix| {
        let mut v = at_broadcast(&x, ix);
        if let Some(l) = &lo {
            v = v.max(at_broadcast(l, ix));
        }
        if let Some(h) = &hi {
            v = v.min(at_broadcast(h, ix));
        }
        v
    })]
}

/// to(other): the values, rounded as `other`'s dtype rounds (compared at that dtype's
/// tolerance by the harness).
pub fn to_other(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let target = s.t(1).dtype();
    let data = x
        .data
        .iter()
        .map(|&v| {
            if target == kiln::DType::I64 {
                v.trunc()
            } else {
                v
            }
        })
        .collect();
    vec![RefTensor {
        shape: x.shape,
        data,
    }]
}

fn interleaved(x: &RefTensor, dim: Option<usize>, counts: &[usize]) -> RefTensor {
    let (x, d) = match dim {
        Some(d) => (x.clone(), d),
        None => (with_shape(x.clone(), vec![x.data.len()]), 0),
    };
    let x = if x.shape.is_empty() {
        with_shape(x, vec![1])
    } else {
        x
    };
    let src: Vec<usize> = counts
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| std::iter::repeat_n(i, c))
        .collect();
    let mut shape = x.shape.clone();
    shape[d] = src.len();
    tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j[d] = src[ix[d]];
        at(&x, &j)
    })
}

pub fn repeat_interleave(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let r = s.int("repeats").expect("repeats") as usize;
    let dim = s
        .opt_int("dim")
        .unwrap_or(None)
        .map(|d| wrap(d, x.shape.len()));
    let n = match dim {
        Some(d) if !x.shape.is_empty() => x.shape[d],
        _ => x.data.len(),
    };
    vec![interleaved(&x, dim, &vec![r; n])]
}

pub fn repeat_interleave_tensor(s: &Sample) -> Vec<RefTensor> {
    let (x, reps) = (input(s, 0), input(s, 1));
    let dim = s
        .opt_int("dim")
        .unwrap_or(None)
        .map(|d| wrap(d, x.shape.len()));
    let n = match dim {
        Some(d) if !x.shape.is_empty() => x.shape[d],
        _ => x.data.len(),
    };
    let counts: Vec<usize> = if reps.shape.is_empty() {
        vec![reps.data[0] as usize; n]
    } else {
        reps.data.iter().map(|&c| c as usize).collect()
    };
    vec![interleaved(&x, dim, &counts)]
}

/// pad: each output coordinate maps back to a source coordinate (or to the fill value).
pub fn pad(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let pad = s.ints("pad").expect("pad");
    let mode = s.string("mode").unwrap_or("constant");
    let value = s.float("value").unwrap_or(0.0);
    let nd = x.shape.len();
    let mut before = vec![0i64; nd];
    let mut after = vec![0i64; nd];
    for (i, p) in pad.chunks(2).enumerate() {
        before[nd - 1 - i] = p[0];
        after[nd - 1 - i] = p[1];
    }
    let shape: Vec<usize> = (0..nd)
        .map(|d| (x.shape[d] as i64 + before[d] + after[d]) as usize)
        .collect();
    vec![tabulate(shape, |ix| {
        let mut j = vec![0usize; nd];
        for d in 0..nd {
            let n = x.shape[d] as i64;
            let p = ix[d] as i64 - before[d];
            let src = match mode {
                "constant" => {
                    if p < 0 || p >= n {
                        return value;
                    }
                    p
                }
                "reflect" => {
                    let mut q = p;
                    while q < 0 || q >= n {
                        q = if q < 0 { -q } else { 2 * (n - 1) - q };
                    }
                    q
                }
                "replicate" => p.clamp(0, n - 1),
                _ => {
                    // Circular: PyTorch crops the negative amounts first and wraps around
                    // what is left.
                    let (lo, hi) = ((-before[d]).max(0), (-after[d]).max(0));
                    lo + (ix[d] as i64 - before[d].max(0)).rem_euclid(n - lo - hi)
                }
            };
            j[d] = src as usize;
        }
        at(&x, &j)
    })]
}

pub fn where_nonzero(s: &Sample) -> Vec<RefTensor> {
    let nz = nonzero(s).remove(0);
    let (rows, nd) = (nz.shape[0], nz.shape[1]);
    (0..nd)
        .map(|d| RefTensor {
            shape: vec![rows],
            data: (0..rows).map(|r| nz.data[r * nd + d]).collect(),
        })
        .collect()
}

fn triangle(s: &Sample, lower: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = s.int("diagonal").unwrap_or(0);
    let n = x.shape.len();
    vec![tabulate(x.shape.clone(), |ix| {
        let off = ix[n - 1] as i64 - ix[n - 2] as i64;
        let keep = if lower { off <= d } else { off >= d };
        if keep {
            at(&x, ix)
        } else {
            0.0
        }
    })]
}

pub fn tril(s: &Sample) -> Vec<RefTensor> {
    triangle(s, true)
}

pub fn triu(s: &Sample) -> Vec<RefTensor> {
    triangle(s, false)
}

fn repeat_by(x: &RefTensor, reps: &[i64]) -> RefTensor {
    let lead = reps.len() - x.shape.len();
    let src: Vec<usize> = (0..reps.len())
        .map(|i| if i < lead { 1 } else { x.shape[i - lead] })
        .collect();
    let shape: Vec<usize> = src
        .iter()
        .zip(reps)
        .map(|(&s, &r)| s * r as usize)
        .collect();
    tabulate(shape, |ix| {
        let j: Vec<usize> = (lead..reps.len()).map(|i| ix[i] % src[i]).collect();
        at(x, &j)
    })
}

pub fn repeat(s: &Sample) -> Vec<RefTensor> {
    vec![repeat_by(&input(s, 0), s.ints("repeats").expect("repeats"))]
}

pub fn tile(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dims = s.ints("dims").expect("dims");
    let pad = x.shape.len().saturating_sub(dims.len());
    let reps: Vec<i64> = std::iter::repeat_n(1, pad)
        .chain(dims.iter().copied())
        .collect();
    vec![repeat_by(&x, &reps)]
}
