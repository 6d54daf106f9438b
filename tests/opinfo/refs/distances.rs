//! Float64 references for distances and similarities: cosine_similarity, pairwise_distance,
//! cdist.

use super::{broadcast2, groups, input, keepdim, tensor, wrap};
use crate::harness::{RefTensor, Sample};

/// Matching rows of two tensors.
type RowPairs = Vec<(Vec<f64>, Vec<f64>)>;

/// Rows along `dim` of two broadcast tensors, as (output shape, pairs of rows).
fn rows_along(s: &Sample, dim: i64, keepdim: bool) -> (Vec<usize>, RowPairs) {
    let a = broadcast2(s, |a, _| a).remove(0);
    let b = broadcast2(s, |_, b| b).remove(0);
    let d = wrap(dim, a.shape.len());
    let mut mask = vec![false; a.shape.len()];
    mask[d] = true;
    let (shape, ga) = groups(&a, &mask, keepdim);
    let (_, gb) = groups(&b, &mask, keepdim);
    (shape, ga.into_iter().zip(gb).collect())
}

pub fn cosine_similarity(s: &Sample) -> Vec<RefTensor> {
    let dim = s.int("dim").unwrap_or(1);
    let eps = s.float("eps").unwrap_or(1e-8);
    let (shape, rows) = rows_along(s, dim, false);
    let data = rows
        .iter()
        .map(|(x, y)| {
            let dot: f64 = x.iter().zip(y).map(|(p, q)| p * q).sum();
            let nx: f64 = x.iter().map(|p| p * p).sum();
            let ny: f64 = y.iter().map(|q| q * q).sum();
            dot / (nx * ny).max(eps * eps).sqrt()
        })
        .collect();
    vec![RefTensor { shape, data }]
}

pub fn pairwise_distance(s: &Sample) -> Vec<RefTensor> {
    let p = s.float("p").unwrap_or(2.0);
    let eps = s.float("eps").unwrap_or(1e-6);
    let (shape, rows) = rows_along(s, -1, keepdim(s));
    let data = rows
        .iter()
        .map(|(x, y)| {
            x.iter()
                .zip(y)
                .map(|(a, b)| (a - b + eps).abs().powf(p))
                .sum::<f64>()
                .powf(1.0 / p)
        })
        .collect();
    vec![RefTensor { shape, data }]
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
