//! Float64 references for the view ops and the backward ops of slicing: every output element
//! located by index arithmetic on row-major values.

use super::{at, broadcast2, infer_sizes, input, numel, tabulate, with_shape, wrap};
use crate::harness::{RefTensor, Sample};

// ---------------------------------------------------------------------------------------
// Views and their backwards
// ---------------------------------------------------------------------------------------

/// view(size): the same row-major values with the new shape.
pub fn view(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shape = infer_sizes(s.ints("size").expect("sample provides size"), x.data.len());
    vec![with_shape(x, shape)]
}

/// reshape(shape): as view.
pub fn reshape(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shape = infer_sizes(
        s.ints("shape").expect("sample provides shape"),
        x.data.len(),
    );
    vec![with_shape(x, shape)]
}

/// permute(dims): `out[i_0, ..] = x[j]` with `j[dims[k]] = i_k`.
pub fn permute(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let dims: Vec<usize> = s
        .ints("dims")
        .expect("sample provides dims")
        .iter()
        .map(|&d| wrap(d, nd))
        .collect();
    let shape: Vec<usize> = dims.iter().map(|&d| x.shape[d]).collect();
    vec![tabulate(shape, |ix| {
        let mut j = vec![0; nd];
        for (k, &d) in dims.iter().enumerate() {
            j[d] = ix[k];
        }
        at(&x, &j)
    })]
}

fn swap_dims(x: RefTensor, a: usize, b: usize) -> RefTensor {
    let mut shape = x.shape.clone();
    shape.swap(a, b);
    tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j.swap(a, b);
        at(&x, &j)
    })
}

/// transpose(dim0, dim1).
pub fn transpose(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let (a, b) = (
        wrap(s.int("dim0").expect("dim0"), nd),
        wrap(s.int("dim1").expect("dim1"), nd),
    );
    if nd == 0 {
        return vec![x];
    }
    vec![swap_dims(x, a, b)]
}

/// t(): transpose of a matrix; 0-d and 1-d unchanged.
pub fn t(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    if x.shape.len() < 2 {
        return vec![x];
    }
    vec![swap_dims(x, 0, 1)]
}

/// unsqueeze(dim): a size-1 dim inserted at `dim` (which may be ndim).
pub fn unsqueeze(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(
        s.int("dim").expect("sample provides dim"),
        x.shape.len() + 1,
    );
    let mut shape = x.shape.clone();
    shape.insert(d, 1);
    vec![with_shape(x, shape)]
}

/// squeeze(): every size-1 dim dropped.
pub fn squeeze(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shape: Vec<usize> = x.shape.iter().copied().filter(|&n| n != 1).collect();
    vec![with_shape(x, shape)]
}

/// squeeze(dim): `dim` dropped if it has size 1.
pub fn squeeze_dim(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("sample provides dim"), x.shape.len());
    let mut shape = x.shape.clone();
    if !shape.is_empty() && shape[d] == 1 {
        shape.remove(d);
    }
    vec![with_shape(x, shape)]
}

/// expand(size): new leading dims and size-1 dims repeat; -1 keeps a size.
pub fn expand(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let size = s.ints("size").expect("sample provides size");
    let lead = size.len() - x.shape.len();
    let shape: Vec<usize> = size
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            if n == -1 {
                x.shape[i - lead]
            } else {
                n as usize
            }
        })
        .collect();
    vec![tabulate(shape, |ix| {
        let j: Vec<usize> = (0..x.shape.len())
            .map(|k| if x.shape[k] == 1 { 0 } else { ix[lead + k] })
            .collect();
        at(&x, &j)
    })]
}

/// narrow(dim, start, length): `length` entries from `start` (negative counts from the end).
pub fn narrow(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let start = s.int("start").expect("start");
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

/// select(dim, index): `dim` removed at `index` (negative counts from the end).
pub fn select(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let i = s.int("index").expect("index");
    let i = if i < 0 { i + x.shape[d] as i64 } else { i } as usize;
    let mut shape = x.shape.clone();
    shape.remove(d);
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j.insert(d, i);
        at(&x, &j)
    })]
}

/// Python's slice bounds for a dim of `size`: (start, number of elements).
fn slice_bounds(size: usize, start: Option<i64>, end: Option<i64>, step: i64) -> (usize, usize) {
    let n = size as i64;
    let clamp = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
    let b = clamp(start.unwrap_or(0));
    let e = clamp(end.unwrap_or(n)).max(b);
    (b as usize, ((e - b + step - 1) / step) as usize)
}

/// slice(dim=0, start=None, end=None, step=1) with Python's clamping.
pub fn slice(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let step = s.int("step").unwrap_or(1);
    let (b, len) = slice_bounds(
        x.shape[d],
        s.opt_int("start").unwrap_or(None),
        s.opt_int("end").unwrap_or(None),
        step,
    );
    let mut shape = x.shape.clone();
    shape[d] = len;
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j[d] = b + ix[d] * step as usize;
        at(&x, &j)
    })]
}

/// as_strided(size, stride, storage_offset): reads the input's row-major values as the
/// storage (samples pass contiguous inputs at offset 0).
pub fn as_strided(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let size: Vec<usize> = s
        .ints("size")
        .expect("size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let stride = s.ints("stride").expect("stride").to_vec();
    let offset = s.opt_int("storage_offset").unwrap_or(None).unwrap_or(0) as usize;
    vec![tabulate(size, |ix| {
        let p: usize = ix
            .iter()
            .zip(&stride)
            .map(|(&i, &st)| i * st as usize)
            .sum();
        x.data[offset + p]
    })]
}

/// flatten(start_dim=0, end_dim=-1); a 0-d input becomes [1].
pub fn flatten(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    if nd == 0 {
        return vec![with_shape(x, vec![1])];
    }
    let (a, b) = (
        wrap(s.int("start_dim").unwrap_or(0), nd),
        wrap(s.int("end_dim").unwrap_or(-1), nd),
    );
    let mut shape = x.shape[..a].to_vec();
    shape.push(numel(&x.shape[a..=b]));
    shape.extend_from_slice(&x.shape[b + 1..]);
    vec![with_shape(x, shape)]
}

/// unflatten(dim, sizes): `dim` split into `sizes` (one may be -1).
pub fn unflatten(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let inner = infer_sizes(s.ints("sizes").expect("sizes"), x.shape[d]);
    let mut shape = x.shape[..d].to_vec();
    shape.extend(inner);
    shape.extend_from_slice(&x.shape[d + 1..]);
    vec![with_shape(x, shape)]
}

fn input_sizes(s: &Sample) -> Vec<usize> {
    s.ints("input_sizes")
        .expect("sample provides input_sizes")
        .iter()
        .map(|&v| v as usize)
        .collect()
}

/// slice_backward: zeros of `input_sizes` with grad_output at `start, start + step, ...`.
pub fn slice_backward(s: &Sample) -> Vec<RefTensor> {
    let g = input(s, 0);
    let sizes = input_sizes(s);
    let d = wrap(s.int("dim").expect("dim"), sizes.len());
    let step = s.int("step").expect("step");
    let (b, _) = slice_bounds(sizes[d], s.int("start"), s.int("end"), step);
    let mut out = RefTensor {
        shape: sizes.clone(),
        data: vec![0.0; numel(&sizes)],
    };
    for (i, &v) in g.data.iter().enumerate() {
        let mut j = g.unravel(i);
        j[d] = b + j[d] * step as usize;
        let o = out.ravel(&j);
        out.data[o] = v;
    }
    vec![out]
}

/// select_backward: zeros of `input_sizes` with grad_output at `index` along `dim`.
pub fn select_backward(s: &Sample) -> Vec<RefTensor> {
    let g = input(s, 0);
    let sizes = input_sizes(s);
    let d = wrap(s.int("dim").expect("dim"), sizes.len());
    let i = s.int("index").expect("index");
    let i = if i < 0 { i + sizes[d] as i64 } else { i } as usize;
    let mut out = RefTensor {
        shape: sizes.clone(),
        data: vec![0.0; numel(&sizes)],
    };
    for (k, &v) in g.data.iter().enumerate() {
        let mut j = g.unravel(k);
        j.insert(d, i);
        let o = out.ravel(&j);
        out.data[o] = v;
    }
    vec![out]
}

pub fn expand_as(s: &Sample) -> Vec<RefTensor> {
    broadcast2(s, |a, _| a)
}

pub fn swapaxes(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let n = x.shape.len();
    let (a, b) = (
        wrap(s.int("axis0").expect("axis0"), n),
        wrap(s.int("axis1").expect("axis1"), n),
    );
    vec![swap_dims(x, a, b)]
}
