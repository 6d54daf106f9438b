//! Float64 references for joining and splitting: cat, stack, split, chunk, unbind, meshgrid.

use super::{at, input, tabulate, wrap};
use crate::harness::{RefTensor, Sample};

/// cat(tensors, dim): 1-d empty inputs are skipped (PyTorch's legacy rule).
pub fn cat(s: &Sample) -> Vec<RefTensor> {
    let parts: Vec<RefTensor> = s
        .list(0)
        .iter()
        .map(RefTensor::of)
        .filter(|r| !(r.shape.len() == 1 && r.shape[0] == 0))
        .collect();
    if parts.is_empty() {
        return vec![RefTensor {
            shape: vec![0],
            data: vec![],
        }];
    }
    let d = wrap(s.int("dim").unwrap_or(0), parts[0].shape.len());
    let mut shape = parts[0].shape.clone();
    shape[d] = parts.iter().map(|p| p.shape[d]).sum();
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        for p in &parts {
            if j[d] < p.shape[d] {
                return at(p, &j);
            }
            j[d] -= p.shape[d];
        }
        unreachable!("index inside the concatenation")
    })]
}

/// stack(tensors, dim): a new dim at `dim` indexing the tensors.
pub fn stack(s: &Sample) -> Vec<RefTensor> {
    let parts: Vec<RefTensor> = s.list(0).iter().map(RefTensor::of).collect();
    let d = wrap(s.int("dim").unwrap_or(0), parts[0].shape.len() + 1);
    let mut shape = parts[0].shape.clone();
    shape.insert(d, parts.len());
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        let k = j.remove(d);
        at(&parts[k], &j)
    })]
}

/// Pieces of `x` along `d` with the given sizes.
fn pieces(x: &RefTensor, d: usize, sizes: &[usize]) -> Vec<RefTensor> {
    let mut start = 0;
    sizes
        .iter()
        .map(|&n| {
            let mut shape = x.shape.clone();
            shape[d] = n;
            let s0 = start;
            start += n;
            tabulate(shape, |ix| {
                let mut j = ix.to_vec();
                j[d] += s0;
                at(x, &j)
            })
        })
        .collect()
}

fn even_sizes(n: usize, size: usize) -> Vec<usize> {
    if n == 0 {
        return vec![0];
    }
    (0..n.div_ceil(size))
        .map(|i| size.min(n - i * size))
        .collect()
}

pub fn split(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let size = s.int("split_size").expect("split_size") as usize;
    pieces(&x, d, &even_sizes(x.shape[d], size))
}

pub fn split_with_sizes(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let sizes: Vec<usize> = s
        .ints("split_sizes")
        .expect("split_sizes")
        .iter()
        .map(|&v| v as usize)
        .collect();
    pieces(&x, d, &sizes)
}

pub fn chunk(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let chunks = s.int("chunks").expect("chunks") as usize;
    let n = x.shape[d];
    if n == 0 {
        return pieces(&x, d, &vec![0; chunks]);
    }
    pieces(&x, d, &even_sizes(n, n.div_ceil(chunks)))
}

pub fn unbind(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let mut shape = x.shape.clone();
    shape.remove(d);
    (0..x.shape[d])
        .map(|i| {
            tabulate(shape.clone(), |ix| {
                let mut j = ix.to_vec();
                j.insert(d, i);
                at(&x, &j)
            })
        })
        .collect()
}

pub fn meshgrid(s: &Sample) -> Vec<RefTensor> {
    let xs: Vec<RefTensor> = s.list(0).iter().map(RefTensor::of).collect();
    let xy = s.string("indexing") == Some("xy") && xs.len() >= 2;
    let pos = |i: usize| match (xy, i) {
        (true, 0) => 1,
        (true, 1) => 0,
        _ => i,
    };
    let mut shape = vec![0; xs.len()];
    for (i, x) in xs.iter().enumerate() {
        shape[pos(i)] = x.data.len();
    }
    xs.iter()
        .enumerate()
        .map(|(i, x)| tabulate(shape.clone(), |ix| x.data[ix[pos(i)]]))
        .collect()
}
