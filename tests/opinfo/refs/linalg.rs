//! Float64 references for linear algebra: Gauss-Jordan elimination, Laplace expansion,
//! Cholesky–Crout, modified Gram-Schmidt and brute-force index sums, each written here
//! independently of kernels/src/linalg.rs; matrix products and linear layers as index sums.

use super::{at, input, scalar, tabulate, tensor, unravel, with_shape};
use crate::harness::{RefTensor, Sample};

/// Splits `[..batch, r, c]` into its matrices.
fn matrices(x: &RefTensor) -> (Vec<usize>, usize, usize, Vec<Vec<f64>>) {
    let nd = x.shape.len();
    let (r, c) = (x.shape[nd - 2], x.shape[nd - 1]);
    let batch = x.shape[..nd - 2].to_vec();
    let mats = x.data.chunks(r * c).map(|m| m.to_vec()).collect::<Vec<_>>();
    let count: usize = batch.iter().product();
    (batch, r, c, if count == 0 { vec![] } else { mats })
}

/// Inverse by Gauss-Jordan elimination with partial pivoting on `[A | I]`.
fn gauss_jordan(a: &[f64], n: usize) -> Vec<f64> {
    let w = 2 * n;
    let mut m = vec![0.0; n * w];
    for i in 0..n {
        m[i * w..i * w + n].copy_from_slice(&a[i * n..(i + 1) * n]);
        m[i * w + n + i] = 1.0;
    }
    for col in 0..n {
        let p = (col..n)
            .max_by(|&i, &j| m[i * w + col].abs().total_cmp(&m[j * w + col].abs()))
            .expect("rows");
        for k in 0..w {
            m.swap(col * w + k, p * w + k);
        }
        let d = m[col * w + col];
        for k in 0..w {
            m[col * w + k] /= d;
        }
        for i in (0..n).filter(|&i| i != col) {
            let f = m[i * w + col];
            for k in 0..w {
                m[i * w + k] -= f * m[col * w + k];
            }
        }
    }
    (0..n)
        .flat_map(|i| m[i * w + n..(i + 1) * w].to_vec())
        .collect()
}

/// Determinant by cofactor expansion along the first row.
fn laplace(a: &[f64], n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    if n == 1 {
        return a[0];
    }
    (0..n)
        .map(|j| {
            let minor: Vec<f64> = (1..n)
                .flat_map(|i| (0..n).filter(move |&k| k != j).map(move |k| (i, k)))
                .map(|(i, k)| a[i * n + k])
                .collect();
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            sign * a[j] * laplace(&minor, n - 1)
        })
        .sum()
}

pub fn inv(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (_, n, _, mats) = matrices(&x);
    let data = mats.iter().flat_map(|m| gauss_jordan(m, n)).collect();
    vec![tensor(x.shape.clone(), data)]
}

pub fn det(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (batch, n, _, mats) = matrices(&x);
    vec![tensor(batch, mats.iter().map(|m| laplace(m, n)).collect())]
}

fn matmul_flat(a: &[f64], b: &[f64], n: usize, k: usize, m: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            c[i * m + j] = (0..k).map(|t| a[i * k + t] * b[t * m + j]).sum();
        }
    }
    c
}

fn transpose(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    (0..c)
        .flat_map(|j| (0..r).map(move |i| a[i * c + j]))
        .collect()
}

/// `X = A⁻¹ B` (or `B A⁻¹`), with the vector case and broadcast batches.
pub fn solve(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let left = s.flag("left").unwrap_or(true);
    let n = a.shape[a.shape.len() - 1];
    let vector = b.shape.len() == 1
        || (b.shape.len() == a.shape.len() - 1 && b.shape[..] == a.shape[..a.shape.len() - 1]);
    let (b_rows, b_cols) = if vector {
        (n, 1)
    } else {
        (b.shape[b.shape.len() - 2], b.shape[b.shape.len() - 1])
    };
    let b_batch: Vec<usize> = if vector {
        b.shape[..b.shape.len() - 1].to_vec()
    } else {
        b.shape[..b.shape.len() - 2].to_vec()
    };
    let a_batch = a.shape[..a.shape.len() - 2].to_vec();
    let batch = if b_batch.len() >= a_batch.len() {
        b_batch.clone()
    } else {
        a_batch.clone()
    };
    let count: usize = batch.iter().product();
    let a_count: usize = a_batch.iter().product();
    let b_count: usize = b_batch.iter().product();
    let mut data = Vec::new();
    for i in 0..count {
        let am = &a.data[(i % a_count.max(1)) * n * n..][..n * n];
        let bm = &b.data[(i % b_count.max(1)) * b_rows * b_cols..][..b_rows * b_cols];
        let inv = gauss_jordan(am, n);
        if left {
            data.extend(matmul_flat(&inv, bm, n, n, b_cols));
        } else {
            data.extend(matmul_flat(bm, &inv, b_rows, n, n));
        }
    }
    let mut shape = batch;
    if vector {
        shape.push(n);
    } else {
        shape.extend([b_rows, b_cols]);
    }
    vec![tensor(shape, data)]
}

/// Cholesky–Crout on the lower triangle (or the upper one, transposed back, when `upper`).
pub fn cholesky(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let upper = s.flag("upper").unwrap_or(false);
    let (_, n, _, mats) = matrices(&x);
    let mut data = Vec::new();
    for m in mats {
        let a = if upper { transpose(&m, n, n) } else { m };
        let mut l = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let s: f64 = (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum();
                l[i * n + j] = if i == j {
                    (a[i * n + i] - s).sqrt()
                } else {
                    (a[i * n + j] - s) / l[j * n + j]
                };
            }
        }
        data.extend(if upper { transpose(&l, n, n) } else { l });
    }
    vec![tensor(x.shape.clone(), data)]
}

/// QR by modified Gram-Schmidt (positive diagonal of R).
pub fn qr(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let mode = s.string("mode").unwrap_or("reduced");
    let (batch, m, n, mats) = matrices(&x);
    let k = m.min(n);
    let qc = if mode == "complete" { m } else { k };
    let (mut qs, mut rs) = (Vec::new(), Vec::new());
    // LAPACK's Householder QR (PyTorch's), with each reflector written out as an m × m
    // matrix: H_j = I - 2 v vᵀ / vᵀv for v = a - beta e_j (a: column j from row j on, after
    // the earlier reflectors), beta = -sign(a_j) ‖a‖; H_j = I when a is zero below row j.
    let mul = |a: &[f64], b: &[f64], cols: usize| -> Vec<f64> {
        let rows = a.len() / m;
        let mut c = vec![0.0; rows * cols];
        for i in 0..rows {
            for j in 0..cols {
                c[i * cols + j] = (0..m).map(|t| a[i * m + t] * b[t * cols + j]).sum();
            }
        }
        c
    };
    for a in mats {
        let mut r = a.clone();
        let mut q = (0..m * m)
            .map(|i| if i / m == i % m { 1.0 } else { 0.0 })
            .collect::<Vec<f64>>();
        for j in 0..k {
            let below: f64 = (j + 1..m).map(|i| r[i * n + j] * r[i * n + j]).sum();
            if below == 0.0 {
                continue;
            }
            let ajj = r[j * n + j];
            let beta = -(ajj * ajj + below).sqrt().copysign(ajj);
            let mut v = vec![0.0; m];
            for i in j..m {
                v[i] = r[i * n + j];
            }
            v[j] -= beta;
            let vv: f64 = v.iter().map(|t| t * t).sum();
            let h: Vec<f64> = (0..m * m)
                .map(|i| {
                    let (a, b) = (i / m, i % m);
                    (if a == b { 1.0 } else { 0.0 }) - 2.0 * v[a] * v[b] / vv
                })
                .collect();
            r = mul(&h, &r, n);
            q = mul(&q, &h, m);
        }
        qs.extend(
            (0..m)
                .flat_map(|i| (0..qc).map(move |c| (i, c)))
                .map(|(i, c)| q[i * m + c]),
        );
        rs.extend((0..qc * n).map(|i| if i % n < i / n { 0.0 } else { r[i] }));
    }
    let mut rshape = batch.clone();
    rshape.extend([if mode == "complete" { m } else { k }, n]);
    let q = if mode == "r" {
        tensor(vec![0], vec![])
    } else {
        let mut qshape = batch;
        qshape.extend([m, qc]);
        tensor(qshape, qs)
    };
    vec![q, tensor(rshape, rs)]
}

pub fn inner(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    if a.shape.is_empty() || b.shape.is_empty() {
        let (sc, t) = if a.shape.is_empty() {
            (a.data[0], b)
        } else {
            (b.data[0], a)
        };
        return vec![tensor(
            t.shape.clone(),
            t.data.iter().map(|v| v * sc).collect(),
        )];
    }
    let k = *a.shape.last().expect("dims");
    let (ra, rb) = (a.data.len() / k, b.data.len() / k);
    let mut shape = a.shape[..a.shape.len() - 1].to_vec();
    shape.extend(&b.shape[..b.shape.len() - 1]);
    let mut data = Vec::with_capacity(ra * rb);
    for i in 0..ra {
        for j in 0..rb {
            data.push((0..k).map(|t| a.data[i * k + t] * b.data[j * k + t]).sum());
        }
    }
    vec![tensor(shape, data)]
}

pub fn kron(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let nd = a.shape.len().max(b.shape.len());
    let pad = |x: &RefTensor| {
        let mut v = vec![1; nd - x.shape.len()];
        v.extend(&x.shape);
        v
    };
    let (sa, sb) = (pad(&a), pad(&b));
    let shape: Vec<usize> = sa.iter().zip(&sb).map(|(x, y)| x * y).collect();
    let ra = tensor(sa.clone(), a.data.clone());
    let rb = tensor(sb.clone(), b.data.clone());
    let frame = tensor(shape.clone(), vec![]);
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|f| {
            let ix = frame.unravel(f);
            let ia: Vec<usize> = (0..nd).map(|d| ix[d] / sb[d]).collect();
            let ib: Vec<usize> = (0..nd).map(|d| ix[d] % sb[d]).collect();
            ra.data[ra.ravel(&ia)] * rb.data[rb.ravel(&ib)]
        })
        .collect();
    vec![tensor(shape, data)]
}

/// A contraction by brute force over every assignment of the labels.
fn brute(operands: &[(RefTensor, Vec<char>)], output: &[char]) -> RefTensor {
    let mut labels: Vec<char> = output.to_vec();
    let mut sizes: Vec<usize> = Vec::new();
    let size_of = |c: char| -> usize {
        operands
            .iter()
            .flat_map(|(t, ls)| {
                ls.iter()
                    .zip(&t.shape)
                    .filter(move |(l, _)| **l == c)
                    .map(|(_, &s)| s)
            })
            .max()
            .unwrap_or(1)
    };
    for (_, ls) in operands {
        for &c in ls {
            if !labels.contains(&c) {
                labels.push(c);
            }
        }
    }
    for &c in &labels {
        sizes.push(size_of(c));
    }
    let out_shape: Vec<usize> = sizes[..output.len()].to_vec();
    let mut out = vec![0.0; out_shape.iter().product()];
    let total: usize = sizes.iter().product();
    let frame = tensor(sizes.clone(), vec![]);
    let oframe = tensor(out_shape.clone(), vec![]);
    for f in 0..total {
        let ix = frame.unravel(f);
        let mut p = 1.0;
        for (t, ls) in operands {
            let j: Vec<usize> = ls
                .iter()
                .enumerate()
                .map(|(d, c)| {
                    let v = ix[labels.iter().position(|l| l == c).expect("label")];
                    if t.shape[d] == 1 {
                        0
                    } else {
                        v
                    }
                })
                .collect();
            p *= t.data[t.ravel(&j)];
        }
        out[oframe.ravel(&ix[..output.len()])] += p;
    }
    tensor(out_shape, out)
}

pub fn einsum(s: &Sample) -> Vec<RefTensor> {
    let eq = s.string("equation").expect("equation");
    let xs: Vec<RefTensor> = s.list(0).iter().map(RefTensor::of).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq, None),
    };
    let specs: Vec<&str> = lhs.split(',').collect();
    let ell_n = specs
        .iter()
        .zip(&xs)
        .filter(|(sp, _)| sp.contains("..."))
        .map(|(sp, x)| x.shape.len() - sp.replace("...", "").len())
        .max()
        .unwrap_or(0);
    let ell: Vec<char> = (0..ell_n).map(|i| (b'A' + i as u8) as char).collect();
    let expand = |sp: &str, nd: usize| -> Vec<char> {
        match sp.split_once("...") {
            Some((a, b)) => {
                let k = nd - a.len() - b.len();
                a.chars()
                    .chain(ell[ell_n - k..].iter().copied())
                    .chain(b.chars())
                    .collect()
            }
            None => sp.chars().collect(),
        }
    };
    let operands: Vec<(RefTensor, Vec<char>)> = specs
        .iter()
        .zip(&xs)
        .map(|(sp, x)| (x.clone(), expand(sp, x.shape.len())))
        .collect();
    let output: Vec<char> = match rhs {
        Some(r) => expand(r, r.replace("...", "").len() + ell_n),
        None => {
            let mut once: Vec<char> = operands
                .iter()
                .flat_map(|(_, l)| l.iter().copied())
                .filter(|c| c.is_ascii_lowercase())
                .collect();
            once.sort_unstable();
            let single: Vec<char> = once
                .iter()
                .copied()
                .filter(|c| once.iter().filter(|d| *d == c).count() == 1)
                .collect();
            ell.iter().copied().chain(single).collect()
        }
    };
    // A repeated label within one operand reads its diagonal: the brute force handles it.
    vec![brute(&operands, &output)]
}

pub fn tensordot(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let da = s.ints("dims_self").expect("dims_self");
    let db = s.ints("dims_other").expect("dims_other");
    let la: Vec<char> = (0..a.shape.len())
        .map(|i| (b'a' + i as u8) as char)
        .collect();
    let mut lb: Vec<char> = (0..b.shape.len())
        .map(|i| (b'n' + i as u8) as char)
        .collect();
    for (&x, &y) in da.iter().zip(db) {
        lb[y as usize] = la[x as usize];
    }
    let contracted: Vec<char> = da.iter().map(|&x| la[x as usize]).collect();
    let output: Vec<char> = la
        .iter()
        .chain(&lb)
        .filter(|c| !contracted.contains(c))
        .copied()
        .collect();
    vec![brute(&[(a, la), (b, lb)], &output)]
}

// ---------------------------------------------------------------------------------------
// Linear algebra
// ---------------------------------------------------------------------------------------

/// mm: `out[i][j] = Σ_k a[i][k] b[k][j]`.
pub fn mm(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let (k, m) = (a.shape[1], b.shape[1]);
    vec![tabulate(vec![a.shape[0], m], |ix| {
        (0..k)
            .map(|kk| at(&a, &[ix[0], kk]) * at(&b, &[kk, ix[1]]))
            .sum()
    })]
}

/// bmm: one mm per batch entry.
pub fn bmm(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let k = a.shape[2];
    vec![tabulate(vec![a.shape[0], a.shape[1], b.shape[2]], |ix| {
        (0..k)
            .map(|kk| at(&a, &[ix[0], ix[1], kk]) * at(&b, &[ix[0], kk, ix[2]]))
            .sum()
    })]
}

/// matmul with NumPy semantics: a 1-d first operand is a row, a 1-d second a column (both
/// dropped from the result), and the leading batch dims broadcast.
pub fn matmul(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let (da, db) = (a.shape.len(), b.shape.len());
    let a = if da == 1 {
        with_shape(a.clone(), vec![1, a.shape[0]])
    } else {
        a
    };
    let b = if db == 1 {
        with_shape(b.clone(), vec![b.shape[0], 1])
    } else {
        b
    };
    let (ra, rb) = (a.shape.len(), b.shape.len());
    let (n, k, m) = (a.shape[ra - 2], a.shape[ra - 1], b.shape[rb - 1]);
    let (ba, bb) = (&a.shape[..ra - 2], &b.shape[..rb - 2]);
    let nb = ba.len().max(bb.len());
    let dim_of = |sh: &[usize], i: usize| {
        if i + sh.len() >= nb {
            sh[i + sh.len() - nb]
        } else {
            1
        }
    };
    let batch: Vec<usize> = (0..nb)
        .map(|i| {
            let (x, y) = (dim_of(ba, i), dim_of(bb, i));
            if x == 1 {
                y
            } else {
                x
            }
        })
        .collect();
    // Index into an operand's batch dims for an output batch index (size-1 dims broadcast).
    let batch_idx = |sh: &[usize], bi: &[usize]| -> Vec<usize> {
        let lead = nb - sh.len();
        (0..sh.len())
            .map(|j| if sh[j] == 1 { 0 } else { bi[lead + j] })
            .collect()
    };
    let mut shape = batch.clone();
    shape.extend([n, m]);
    let full = tabulate(shape, |ix| {
        let bi = &ix[..nb];
        let (i, j) = (ix[nb], ix[nb + 1]);
        let mut ia = batch_idx(ba, bi);
        ia.extend([i, 0]);
        let mut ib = batch_idx(bb, bi);
        ib.extend([0, j]);
        (0..k)
            .map(|kk| {
                ia[ra - 1] = kk;
                ib[rb - 2] = kk;
                at(&a, &ia) * at(&b, &ib)
            })
            .sum()
    });
    let mut out_shape = batch;
    if da != 1 {
        out_shape.push(n);
    }
    if db != 1 {
        out_shape.push(m);
    }
    vec![with_shape(full, out_shape)]
}

pub fn dot(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    vec![scalar(a.data.iter().zip(&b.data).map(|(x, y)| x * y).sum())]
}

pub fn outer(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    vec![tabulate(vec![a.data.len(), b.data.len()], |ix| {
        a.data[ix[0]] * b.data[ix[1]]
    })]
}

/// addmm: `beta * self + alpha * mat1 @ mat2`, `self` broadcast; beta 0 drops `self`.
pub fn addmm(s: &Sample) -> Vec<RefTensor> {
    let (c, a, b) = (input(s, 0), input(s, 1), input(s, 2));
    // An integer product truncates float coefficients (PyTorch: 1.9 is 1).
    let integral = !s.tensors[0].dtype().is_floating_point();
    let coef = |name| {
        let v = s.scalar(name).map_or(1.0, |v| v.to::<f64>());
        if integral {
            v.trunc()
        } else {
            v
        }
    };
    let (beta, alpha) = (coef("beta"), coef("alpha"));
    let (n, k, m) = (a.shape[0], a.shape[1], b.shape[1]);
    vec![tabulate(vec![n, m], |ix| {
        let p: f64 = (0..k)
            .map(|kk| at(&a, &[ix[0], kk]) * at(&b, &[kk, ix[1]]))
            .sum();
        let lead = 2 - c.shape.len();
        let j: Vec<usize> = (0..c.shape.len())
            .map(|d| if c.shape[d] == 1 { 0 } else { ix[lead + d] })
            .collect();
        let base = if beta == 0.0 { 0.0 } else { beta * at(&c, &j) };
        base + alpha * p
    })]
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
