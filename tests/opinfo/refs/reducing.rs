//! Float64 references for the reductions (sum, mean, max/min, mode, argmax, var/std,
//! logsumexp, all/any): plain loops over the reduced dims.

use super::{
    correction, extreme, grouped, groups, input, keepdim, numel, opt_dims, reduced_mask, scalar,
    variance,
};
use crate::harness::{RefTensor, Sample};

/// sum(): the sum of every element (0 when empty).
pub fn sum_all(s: &Sample) -> Vec<RefTensor> {
    vec![scalar(input(s, 0).data.iter().sum())]
}

/// mean(): the sum over the count (NaN when empty).
pub fn mean_all(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    vec![scalar(x.data.iter().sum::<f64>() / x.data.len() as f64)]
}

fn reduce_dims(s: &Sample, f: impl Fn(&[f64]) -> f64) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dims = s.ints("dim").expect("sample provides dim");
    let (shape, gs) = groups(&x, &reduced_mask(dims, x.shape.len()), keepdim(s));
    vec![RefTensor {
        shape,
        data: gs.iter().map(|g| f(g)).collect(),
    }]
}

/// sum(dim, keepdim).
pub fn sum_dim(s: &Sample) -> Vec<RefTensor> {
    reduce_dims(s, |g| g.iter().sum())
}

/// mean(dim, keepdim): NaN for an empty group.
pub fn mean_dim(s: &Sample) -> Vec<RefTensor> {
    reduce_dims(s, |g| g.iter().sum::<f64>() / g.len() as f64)
}

fn extreme_all(s: &Sample, max: bool) -> Vec<RefTensor> {
    vec![scalar(extreme(&input(s, 0).data, max).1)]
}

/// max(): the largest element.
pub fn max_all(s: &Sample) -> Vec<RefTensor> {
    extreme_all(s, true)
}

/// min(): the smallest element.
pub fn min_all(s: &Sample) -> Vec<RefTensor> {
    extreme_all(s, false)
}

fn extreme_dim(s: &Sample, max: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dim = s.int("dim").expect("sample provides dim");
    let (shape, gs) = groups(&x, &reduced_mask(&[dim], x.shape.len()), keepdim(s));
    let picks: Vec<(usize, f64)> = gs.iter().map(|g| extreme(g, max)).collect();
    vec![
        RefTensor {
            shape: shape.clone(),
            data: picks.iter().map(|p| p.1).collect(),
        },
        RefTensor {
            shape,
            data: picks.iter().map(|p| p.0 as f64).collect(),
        },
    ]
}

/// max(dim, keepdim): values and indices (first occurrence on ties).
pub fn max_dim(s: &Sample) -> Vec<RefTensor> {
    extreme_dim(s, true)
}

/// min(dim, keepdim): values and indices (first occurrence on ties).
pub fn min_dim(s: &Sample) -> Vec<RefTensor> {
    extreme_dim(s, false)
}

/// mode(dim=-1, keepdim): per group, the value occurring most often (the smallest of the
/// most frequent; a NaN equals nothing, so counts once, and ranks above every number) and
/// its last position, counted pairwise.
pub fn mode(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dim = s.int("dim").unwrap_or(-1);
    let (shape, gs) = groups(&x, &reduced_mask(&[dim], x.shape.len()), keepdim(s));
    let mut values = vec![];
    let mut indices = vec![];
    for g in &gs {
        // (count, value, position) of the best candidate so far.
        let mut best: Option<(usize, f64, usize)> = None;
        for (i, &v) in g.iter().enumerate() {
            let count = g.iter().filter(|&&w| w == v).count(); // 0 for NaN
            let count = count.max(1);
            let better = match best {
                None => true,
                Some((bc, _, _)) if count != bc => count > bc,
                Some((_, bv, _)) if bv.is_nan() => !v.is_nan(),
                Some((_, bv, _)) => !v.is_nan() && v <= bv,
            };
            if better {
                best = Some((count, v, i));
            }
        }
        let (_, v, i) = best.expect("mode of a non-empty group");
        values.push(v);
        indices.push(i as f64);
    }
    vec![
        RefTensor {
            shape: shape.clone(),
            data: values,
        },
        RefTensor {
            shape,
            data: indices,
        },
    ]
}

fn arg_extreme(s: &Sample, max: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    match s.opt_int("dim").unwrap_or(None) {
        None => {
            let i = extreme(&x.data, max).0 as f64;
            let shape = if keepdim(s) { vec![1; nd] } else { vec![] };
            vec![RefTensor {
                shape,
                data: vec![i],
            }]
        }
        Some(d) => {
            let (shape, gs) = groups(&x, &reduced_mask(&[d], nd), keepdim(s));
            vec![RefTensor {
                shape,
                data: gs.iter().map(|g| extreme(g, max).0 as f64).collect(),
            }]
        }
    }
}

/// argmax(dim, keepdim): into the flattened tensor when `dim` is None.
pub fn argmax(s: &Sample) -> Vec<RefTensor> {
    arg_extreme(s, true)
}

/// argmin(dim, keepdim): into the flattened tensor when `dim` is None.
pub fn argmin(s: &Sample) -> Vec<RefTensor> {
    arg_extreme(s, false)
}

/// sum_to_size(size): each element added into the target position it broadcasts from.
pub fn sum_to_size(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let target: Vec<usize> = s
        .ints("size")
        .expect("sample provides size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let lead = x.shape.len() - target.len();
    let mut out = RefTensor {
        shape: target.clone(),
        data: vec![0.0; numel(&target)],
    };
    for (i, &v) in x.data.iter().enumerate() {
        let idx = x.unravel(i);
        let oidx: Vec<usize> = (0..target.len())
            .map(|j| if target[j] == 1 { 0 } else { idx[lead + j] })
            .collect();
        let p = out.ravel(&oidx);
        out.data[p] += v;
    }
    vec![out]
}

pub fn var(s: &Sample) -> Vec<RefTensor> {
    let c = correction(s);
    grouped(s, &opt_dims(s), |g| variance(g, c))
}

pub fn std_dev(s: &Sample) -> Vec<RefTensor> {
    let c = correction(s);
    grouped(s, &opt_dims(s), |g| variance(g, c).sqrt())
}

/// logsumexp, shifted by the group maximum in f64.
pub fn logsumexp(s: &Sample) -> Vec<RefTensor> {
    let dims = s.ints("dim").expect("sample provides dim").to_vec();
    grouped(s, &dims, |g| {
        let m = g.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        m + g.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
    })
}

/// all/any return bool (uint8 for uint8 input; the comparison reads values, so 0/1 either way).
pub fn all(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    vec![scalar(if x.data.iter().all(|&v| v != 0.0) {
        1.0
    } else {
        0.0
    })]
}

pub fn any(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    vec![scalar(if x.data.iter().any(|&v| v != 0.0) {
        1.0
    } else {
        0.0
    })]
}
