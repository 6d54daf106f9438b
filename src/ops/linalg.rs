//! Linear algebra. The factorizations (`linalg_inv`, `linalg_det`, `linalg_solve`,
//! `linalg_cholesky`, `linalg_qr`) are explicit ops: each matrix of a batch is factored in
//! float64 by `kiln_kernels::linalg` on the host (a CUDA tensor makes the round trip), and
//! the derivatives come from derivatives.yaml (formulas in `backward/linalg.rs`). On the
//! meta device they run every check that reads no values and return outputs of the result's
//! shape. The products (`vdot`, `inner`, `kron`, `tensordot`, `einsum`) are composites over
//! `matmul`, `mul` and views.

use crate::ops::backward::i64s;
use crate::{Error, Result, Tensor};
use kiln_kernels::linalg::{cholesky, qr, Lu};

/// A batch of matrices read as float64: (values, batch shape, rows, cols).
struct Matrices {
    data: Vec<f64>,
    batch: Vec<usize>,
    rows: usize,
    cols: usize,
}

impl Matrices {
    /// PyTorch's checks of a (batch of) matrices, which read no values: `(batch shape, rows,
    /// cols)`. The meta device runs these and no more.
    fn check(op: &str, t: &Tensor, square: bool) -> Result<(Vec<usize>, usize, usize)> {
        if !t.dtype().is_floating_point() {
            return Err(Error::dtype(
                op,
                format!(
                    "{}: Expected a floating point or complex tensor as input. Got {}",
                    pretty(op),
                    t.dtype().scalar_type_name()
                ),
            ));
        }
        if t.dim() < 2 {
            return Err(Error::shape(
                op,
                format!(
                    "{}: The input tensor A must have at least 2 dimensions.",
                    pretty(op)
                ),
            ));
        }
        let nd = t.dim();
        let (rows, cols) = (t.shape()[nd - 2], t.shape()[nd - 1]);
        if square && rows != cols {
            return Err(Error::shape(
                op,
                format!(
                    "{}: A must be batches of square matrices, but they are {rows} by {cols} matrices",
                    pretty(op)
                ),
            ));
        }
        Ok((t.shape()[..nd - 2].to_vec(), rows, cols))
    }

    /// The checks, then the values.
    fn read(op: &str, t: &Tensor, square: bool) -> Result<Matrices> {
        let (batch, rows, cols) = Matrices::check(op, t, square)?;
        Ok(Matrices {
            data: t.to_vec::<f64>()?,
            batch,
            rows,
            cols,
        })
    }

    fn count(&self) -> usize {
        self.batch.iter().product()
    }

    fn matrix(&self, b: usize) -> &[f64] {
        let n = self.rows * self.cols;
        &self.data[b * n..(b + 1) * n]
    }
}

/// `linalg_inv` → `linalg.inv`, PyTorch's spelling in messages.
fn pretty(op: &str) -> String {
    op.replacen("linalg_", "linalg.", 1)
}

/// PyTorch's prefix for an error in one matrix of a batch.
fn batch_prefix(m: &Matrices, b: usize) -> String {
    if m.batch.is_empty() {
        String::new()
    } else {
        format!("(Batch element {b}): ")
    }
}

/// A float64 result with `shape`, returned in `like`'s dtype and device.
fn output(data: Vec<f64>, shape: &[usize], like: &Tensor) -> Result<Tensor> {
    Tensor::from_vec(data, shape)?
        .to_dtype(like.dtype())?
        .to_device(like.device())
}

/// On the meta device there is nothing to factor: once [`Matrices::check`] and the op's
/// other shape checks passed, the result of `shape` is all there is (PyTorch's linalg meta
/// functions). `None` for a tensor with values.
fn meta_output(a: &Tensor, shape: &[usize]) -> Option<Result<Tensor>> {
    (!crate::ops::has_values(a)).then(|| Tensor::empty_on(shape, a.dtype(), a.device()))
}

fn with_batch(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    batch.iter().chain(tail).copied().collect()
}

/// `linalg.inv(A)`: the inverse of each square matrix.
pub fn linalg_inv(a: &Tensor) -> Result<Tensor> {
    let op = "linalg_inv";
    let _g = crate::no_grad();
    Matrices::check(op, a, true)?;
    if let Some(out) = meta_output(a, a.shape()) {
        return out;
    }
    let m = Matrices::read(op, a, true)?;
    let n = m.rows;
    let mut out = Vec::with_capacity(m.data.len());
    for b in 0..m.count() {
        let lu = Lu::new(m.matrix(b), n);
        if let Some(k) = lu.zero_pivot() {
            return Err(Error::value(
                op,
                format!("{}linalg.inv: The diagonal element {k} is zero, the inversion could not be completed because the input matrix is singular.", batch_prefix(&m, b)),
            ));
        }
        let mut eye = vec![0.0; n * n];
        (0..n).for_each(|i| eye[i * n + i] = 1.0);
        lu.solve(&mut eye, n);
        out.extend(eye);
    }
    output(out, a.shape(), a)
}

/// `linalg.det(A)`: the determinant of each square matrix.
pub fn linalg_det(a: &Tensor) -> Result<Tensor> {
    let _g = crate::no_grad();
    let (batch, _, _) = Matrices::check("linalg_det", a, true)?;
    if let Some(out) = meta_output(a, &batch) {
        return out;
    }
    let m = Matrices::read("linalg_det", a, true)?;
    let dets = (0..m.count())
        .map(|b| Lu::new(m.matrix(b), m.rows).det())
        .collect();
    output(dets, &m.batch, a)
}

/// `linalg.solve(A, B, left)`: `X` with `A X = B` (or `X A = B` when not `left`). `B` may be
/// a batch of vectors (`[*, n]`); batch dims broadcast.
pub fn linalg_solve(a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    let op = "linalg_solve";
    let _g = crate::no_grad();
    if !left {
        // X A = B  ⇔  Aᵀ Xᵀ = Bᵀ.
        let x = linalg_solve(&a.transpose(-2, -1)?, &b.transpose(-2, -1)?, true)?;
        return x.transpose(-2, -1);
    }
    Matrices::check(op, a, true)?;
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "linalg.solve: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
                a.dtype().scalar_type_name(),
                b.dtype().scalar_type_name()
            ),
        ));
    }
    if a.device() != b.device() {
        return Err(crate::dispatch::memory::device_mix(
            op,
            a.device(),
            b.device(),
        ));
    }
    let n = a.shape()[a.dim() - 1];
    // PyTorch's rule: B is a (batch of) vector(s) when it has one dim fewer than A.
    let vector = b.dim() == 1 || (b.dim() == a.dim() - 1 && b.shape() == &a.shape()[..a.dim() - 1]);
    let bm = if vector { b.unsqueeze(-1)? } else { b.clone() };
    if bm.dim() < 2 || bm.shape()[bm.dim() - 2] != n {
        return Err(Error::shape(
            op,
            format!(
                "linalg.solve: Incompatible shapes of A and B for the equation AX = B ({:?} and {:?})",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let k = bm.shape()[bm.dim() - 1];
    let batch = kiln_kernels::layout::broadcast_shapes(
        &a.shape()[..a.dim() - 2],
        &bm.shape()[..bm.dim() - 2],
    )
    .map_err(|m| Error::op(op, m))?;
    let ae = a.expand(i64s(&with_batch(&batch, &[n, n])))?;
    let be = bm.expand(i64s(&with_batch(&batch, &[n, k])))?;
    if let Some(x) = meta_output(a, &with_batch(&batch, &[n, k])) {
        return if vector { x?.squeeze_dim(-1) } else { x };
    }
    let am = Matrices::read(op, &ae, true)?;
    let rhs = be.to_vec::<f64>()?;
    let mut out = Vec::with_capacity(rhs.len());
    for i in 0..am.count() {
        let lu = Lu::new(am.matrix(i), n);
        if lu.is_singular() {
            return Err(Error::value(
                op,
                format!(
                    "{}linalg.solve: The solver failed because the input matrix is singular.",
                    batch_prefix(&am, i)
                ),
            ));
        }
        let mut x = rhs[i * n * k..(i + 1) * n * k].to_vec();
        lu.solve(&mut x, k);
        out.extend(x);
    }
    let x = output(out, &with_batch(&batch, &[n, k]), a)?;
    if vector {
        x.squeeze_dim(-1)
    } else {
        Ok(x)
    }
}

/// `linalg.cholesky(A, upper)`: `L` with `A = L Lᵀ`, reading only `A`'s lower triangle (or
/// `U = Lᵀ` from the upper triangle when `upper`).
pub fn linalg_cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    let op = "linalg_cholesky";
    let _g = crate::no_grad();
    // `upper` reads A's upper triangle: the lower one of Aᵀ.
    let src = if upper {
        a.transpose(-2, -1)?
    } else {
        a.clone()
    };
    Matrices::check(op, &src, true)?;
    let l = match meta_output(a, a.shape()) {
        Some(l) => l?,
        None => cholesky_lower(op, &src, a)?,
    };
    if upper {
        l.transpose(-2, -1)?.contiguous()
    } else {
        Ok(l)
    }
}

/// The lower Cholesky factors of `src` (checked), in `a`'s dtype and device.
fn cholesky_lower(op: &str, src: &Tensor, a: &Tensor) -> Result<Tensor> {
    let m = Matrices::read(op, src, true)?;
    let n = m.rows;
    let mut out = Vec::with_capacity(m.data.len());
    for b in 0..m.count() {
        match cholesky(m.matrix(b), n) {
            Ok(l) => out.extend(l),
            Err(k) => {
                return Err(Error::value(
                    op,
                    format!("{}linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order {k} is not positive-definite).", batch_prefix(&m, b)),
                ))
            }
        }
    }
    output(out, a.shape(), a)
}

/// `linalg.qr(A, mode)`: `Q` with orthonormal columns and upper-triangular `R`, with the
/// signs LAPACK's Householder QR gives (PyTorch's). Modes: `"reduced"` (`Q` is `m × k`, `R` is `k × n`, `k = min(m,
/// n)`), `"complete"` (`Q` is `m × m`, `R` is `m × n`) and `"r"` (`Q` empty, `R` reduced).
pub fn linalg_qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    let op = "linalg_qr";
    let _g = crate::no_grad();
    if !["reduced", "complete", "r"].contains(&mode) {
        return Err(Error::value(
            op,
            format!("qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"),
        ));
    }
    let (batch, rows, cols) = Matrices::check(op, a, false)?;
    let complete = mode == "complete";
    let k = if complete { rows } else { rows.min(cols) };
    if !crate::ops::has_values(a) {
        let q_shape = if mode == "r" {
            vec![0]
        } else {
            with_batch(&batch, &[rows, k])
        };
        let empty = |shape: &[usize]| Tensor::empty_on(shape, a.dtype(), a.device());
        return Ok((empty(&q_shape)?, empty(&with_batch(&batch, &[k, cols]))?));
    }
    let m = Matrices::read(op, a, false)?;
    let (mut qs, mut rs) = (Vec::new(), Vec::new());
    for b in 0..m.count() {
        let (q, r) = qr(m.matrix(b), rows, cols, complete);
        qs.extend(q);
        rs.extend(r);
    }
    let r = output(rs, &with_batch(&m.batch, &[k, cols]), a)?;
    let q = if mode == "r" {
        Tensor::zeros([0], a.dtype())?.to_device(a.device())?
    } else {
        output(qs, &with_batch(&m.batch, &[rows, k]), a)?
    };
    Ok((q, r))
}

// ---------------------------------------------------------------------------------------
// Products
// ---------------------------------------------------------------------------------------

/// `vdot(other)`: the dot product of two 1-D tensors (no conjugation for real dtypes).
pub fn vdot(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::dot(t, other)
}

/// `inner(other)`: the sum of products over the last dim of both (a product with a scalar).
pub fn inner(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    if t.dim() == 0 || other.dim() == 0 {
        return t.mul(other);
    }
    let (a, b) = (t.shape()[t.dim() - 1], other.shape()[other.dim() - 1]);
    if a != b {
        return Err(Error::shape(
            "inner",
            format!(
                "inner() the last dimension must match on both input tensors but got shapes {:?} and {:?}",
                t.shape(),
                other.shape()
            ),
        ));
    }
    tensordot(t, other, &[-1], &[-1])
}

/// `kron(other)`: the Kronecker product (blocks `self[i] * other`).
pub fn kron(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    let nd = t.dim().max(other.dim());
    let pad = |x: &Tensor| -> Vec<i64> {
        let mut s = vec![1i64; nd - x.dim()];
        s.extend(i64s(x.shape()));
        s
    };
    let (sa, sb) = (pad(t), pad(other));
    // a as [a0, 1, a1, 1, ...], b as [1, b0, 1, b1, ...]: their product interleaves the dims.
    let ra: Vec<i64> = sa.iter().flat_map(|&s| [s, 1]).collect();
    let rb: Vec<i64> = sb.iter().flat_map(|&s| [1, s]).collect();
    let out: Vec<i64> = sa.iter().zip(&sb).map(|(x, y)| x * y).collect();
    t.reshape(&ra)?.mul(&other.reshape(&rb)?)?.reshape(&out)
}

/// `tensordot(other, dims_self, dims_other)`: contracts the listed dims pairwise, as one
/// matrix product of the permuted, flattened operands.
pub fn tensordot(
    t: &Tensor,
    other: &Tensor,
    dims_self: &[i64],
    dims_other: &[i64],
) -> Result<Tensor> {
    let op = "tensordot";
    if t.dtype() != other.dtype() {
        return Err(Error::dtype(op, "both inputs should have same dtype"));
    }
    if dims_self.len() != dims_other.len() {
        return Err(Error::shape(
            op,
            "both dimension lists should have same length",
        ));
    }
    for (x, dims) in [(t, dims_self), (other, dims_other)] {
        if x.dim() == 0 && !dims.is_empty() {
            return Err(Error::index(
                op,
                format!(
                    "Dimension specified as {} but tensor has no dimensions",
                    dims[0]
                ),
            ));
        }
    }
    let wrap =
        |d: i64, nd: usize| kiln_kernels::layout::wrap_dim(d, nd).map_err(|m| Error::op(op, m));
    let ca: Vec<usize> = dims_self
        .iter()
        .map(|&d| wrap(d, t.dim()))
        .collect::<Result<_>>()?;
    let cb: Vec<usize> = dims_other
        .iter()
        .map(|&d| wrap(d, other.dim()))
        .collect::<Result<_>>()?;
    // A contracted dim of size 1 on one side broadcasts against the other's, which is
    // summed away first (keeping the dim, in its dtype), as PyTorch's tensordot does.
    let (mut t, mut other) = (t.clone(), other.clone());
    for (&x, &y) in ca.iter().zip(&cb) {
        let (s1, s2) = (t.shape()[x], other.shape()[y]);
        if s2 == 1 {
            t = crate::sum_dim_with(&t, &[x as i64], true, Some(t.dtype()))?;
        } else if s1 == 1 {
            other = crate::sum_dim_with(&other, &[y as i64], true, Some(other.dtype()))?;
        } else if s1 != s2 {
            return Err(Error::shape(
                op,
                format!(
                    "contracted dimensions need to match, but first has size {s1} in dim {x} and second has size {s2} in dim {y}",
                ),
            ));
        }
    }
    let (t, other) = (&t, &other);
    let fa: Vec<usize> = (0..t.dim()).filter(|d| !ca.contains(d)).collect();
    let fb: Vec<usize> = (0..other.dim()).filter(|d| !cb.contains(d)).collect();
    let size = |x: &Tensor, ds: &[usize]| ds.iter().map(|&d| x.shape()[d] as i64).product::<i64>();
    let pa: Vec<i64> = fa.iter().chain(&ca).map(|&d| d as i64).collect();
    let pb: Vec<i64> = cb.iter().chain(&fb).map(|&d| d as i64).collect();
    let k = size(t, &ca);
    let a2 = t.permute(&pa)?.reshape([size(t, &fa), k])?;
    let b2 = other.permute(&pb)?.reshape([k, size(other, &fb)])?;
    let mut shape: Vec<i64> = fa.iter().map(|&d| t.shape()[d] as i64).collect();
    shape.extend(fb.iter().map(|&d| other.shape()[d] as i64));
    a2.mm(&b2)?.reshape(&shape)
}

/// One operand of `einsum`: its tensor and a label per dim.
struct Term {
    t: Tensor,
    labels: Vec<char>,
}

/// `einsum(equation, tensors)`: Einstein summation. Supports explicit (`ij,jk->ik`) and
/// implicit output, `...` for broadcast dims, repeated labels within an operand (diagonals)
/// and labels summed away; pairs of operands contract through `matmul`.
pub fn einsum(equation: &str, tensors: &[Tensor], path: Option<&[i64]>) -> Result<Tensor> {
    let op = "einsum";
    let _ = path; // contraction order is left to right
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let specs: Vec<&str> = lhs.split(',').collect();
    if specs.len() != tensors.len() {
        let which = if tensors.len() > specs.len() {
            "more"
        } else {
            "fewer"
        };
        return Err(Error::value(
            op,
            format!("einsum(): {which} operands were provided than specified in the equation ({} subscripts for {} operands)", specs.len(), tensors.len()),
        ));
    }
    // `...` becomes fresh labels (uppercase Greek-free private range) per broadcast dim.
    let ell_dims = specs
        .iter()
        .zip(tensors)
        .filter(|(s, _)| s.contains("..."))
        .map(|(s, t)| t.dim().saturating_sub(s.replace("...", "").chars().count()))
        .max()
        .unwrap_or(0);
    let ell: Vec<char> = (0..ell_dims)
        .map(|i| char::from_u32(0x100 + i as u32).unwrap_or('?'))
        .collect();
    let mut terms = Vec::with_capacity(tensors.len());
    for (s, t) in specs.iter().zip(tensors) {
        let explicit: Vec<char> = s.replace("...", "").chars().collect();
        if let Some(c) = explicit.iter().find(|c| !c.is_ascii_alphabetic()) {
            return Err(Error::value(
                op,
                format!(
                    "einsum(): invalid subscript given at index {}: '{c}'",
                    s.find(*c).unwrap_or(0)
                ),
            ));
        }
        let mut labels = Vec::new();
        if let Some((before, after)) = s.split_once("...") {
            let n = t.dim().checked_sub(explicit.len()).ok_or_else(|| {
                Error::shape(op, format!("einsum(): the number of subscripts in the equation ({}) is more than the number of dimensions ({}) for operand", explicit.len(), t.dim()))
            })?;
            labels.extend(before.chars());
            labels.extend(&ell[ell_dims - n..]);
            labels.extend(after.chars());
        } else {
            labels = explicit.clone();
        }
        if labels.len() != t.dim() {
            return Err(Error::shape(
                op,
                format!("einsum(): the number of subscripts in the equation ({}) does not match the number of dimensions ({}) for operand and no ellipsis was given", labels.len(), t.dim()),
            ));
        }
        terms.push(diagonals(
            op,
            Term {
                t: t.clone(),
                labels,
            },
        )?);
    }
    // Output labels: explicit, or the ellipsis dims then the labels seen once, sorted.
    let output: Vec<char> = match rhs {
        Some(r) => {
            let mut v = Vec::new();
            if let Some((before, after)) = r.split_once("...") {
                v.extend(before.chars());
                v.extend(&ell);
                v.extend(after.chars());
            } else {
                v.extend(r.chars());
            }
            for c in &v {
                if !terms.iter().any(|t| t.labels.contains(c)) {
                    return Err(Error::value(op, format!("einsum(): output subscript {c} does not appear in the equation for any input operand")));
                }
            }
            v
        }
        None => {
            let mut once: Vec<char> = ('a'..='z')
                .chain('A'..='Z')
                .filter(|c| {
                    terms
                        .iter()
                        .map(|t| t.labels.iter().filter(|l| *l == c).count())
                        .sum::<usize>()
                        == 1
                })
                .collect();
            once.sort_unstable();
            ell.iter().copied().chain(once).collect()
        }
    };
    // Sizes per label must agree (1 broadcasts).
    let mut sizes: Vec<(char, usize)> = Vec::new();
    for term in &terms {
        for (d, &c) in term.labels.iter().enumerate() {
            let n = term.t.shape()[d];
            match sizes.iter_mut().find(|(l, _)| *l == c) {
                Some((_, s)) if *s == 1 => *s = n,
                Some((_, s)) if n != 1 && *s != n => {
                    return Err(Error::shape(op, format!("einsum(): operands do not broadcast with remapped shapes (original->remapped): subscript {c} has size {s} for one operand and {n} for another")));
                }
                Some(_) => {}
                None => sizes.push((c, n)),
            }
        }
    }
    let size_of = |c: char| sizes.iter().find(|(l, _)| *l == c).map_or(1, |p| p.1);
    // Fold the operands left to right; keep a label while the output or a later operand needs it.
    let mut acc = sum_private(terms.remove(0), &terms, &output)?;
    while !terms.is_empty() {
        let next = terms.remove(0);
        acc = contract(acc, next, &terms, &output, &size_of)?;
    }
    // Arrange as the output: permute, expanding broadcast labels.
    let perm: Vec<i64> = output
        .iter()
        .map(|c| acc.labels.iter().position(|l| l == c).map(|p| p as i64))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::value(op, "einsum(): internal error: an output label was lost"))?;
    let r = acc.t.permute(&perm)?;
    let full: Vec<i64> = output.iter().map(|&c| size_of(c) as i64).collect();
    r.expand(&full)?.contiguous()
}

/// Takes the diagonal for every label repeated within one operand.
fn diagonals(op: &str, mut term: Term) -> Result<Term> {
    loop {
        let dup = term.labels.iter().enumerate().find_map(|(i, c)| {
            term.labels[i + 1..]
                .iter()
                .position(|d| d == c)
                .map(|j| (i, i + 1 + j))
        });
        let Some((i, j)) = dup else { return Ok(term) };
        if term.t.shape()[i] != term.t.shape()[j] {
            return Err(Error::shape(
                op,
                format!("einsum(): subscript {} is repeated for operand but the sizes don't match, {} != {}", term.labels[i], term.t.shape()[i], term.t.shape()[j]),
            ));
        }
        let c = term.labels[i];
        term.t = term.t.diagonal_with(0, i as i64, j as i64)?;
        term.labels.remove(j);
        term.labels.remove(i);
        term.labels.push(c);
    }
}

/// Sums away the labels of `term` that neither the output nor `rest` needs.
fn sum_private(term: Term, rest: &[Term], output: &[char]) -> Result<Term> {
    sum_unneeded(term, &|c| {
        output.contains(c) || rest.iter().any(|t| t.labels.contains(c))
    })
}

/// Sums away the labels of `term` for which `needed` is false.
fn sum_unneeded(term: Term, needed: &dyn Fn(&char) -> bool) -> Result<Term> {
    let dims: Vec<i64> = term
        .labels
        .iter()
        .enumerate()
        .filter(|(_, c)| !needed(c))
        .map(|(d, _)| d as i64)
        .collect();
    if dims.is_empty() {
        return Ok(term);
    }
    let labels = term.labels.iter().filter(|c| needed(c)).copied().collect();
    Ok(Term {
        t: crate::sum_dim_with(&term.t, &dims, false, None)?,
        labels,
    })
}

/// Contracts two operands: labels in both and needed later are batch dims; in both and not
/// needed are summed by the matrix product; the rest stay.
fn contract(
    a: Term,
    b: Term,
    rest: &[Term],
    output: &[char],
    size_of: &dyn Fn(char) -> usize,
) -> Result<Term> {
    let needed = |c: &char| output.contains(c) || rest.iter().any(|t| t.labels.contains(c));
    // b's own labels that nothing else reads are summed first (a's labels are read here).
    let b = sum_unneeded(b, &|c| needed(c) || a.labels.contains(c))?;
    let batch: Vec<char> = a
        .labels
        .iter()
        .filter(|c| b.labels.contains(c) && needed(c))
        .copied()
        .collect();
    let summed: Vec<char> = a
        .labels
        .iter()
        .filter(|c| b.labels.contains(c) && !needed(c))
        .copied()
        .collect();
    let a_only: Vec<char> = a
        .labels
        .iter()
        .filter(|c| !b.labels.contains(c))
        .copied()
        .collect();
    let b_only: Vec<char> = b
        .labels
        .iter()
        .filter(|c| !a.labels.contains(c))
        .copied()
        .collect();
    let arrange = |term: &Term, order: &[&[char]]| -> Result<Tensor> {
        let labels: Vec<char> = order.iter().flat_map(|g| g.iter().copied()).collect();
        let perm: Vec<i64> = labels
            .iter()
            .map(|c| term.labels.iter().position(|l| l == c).unwrap_or(0) as i64)
            .collect();
        let shape: Vec<i64> = labels.iter().map(|&c| size_of(c) as i64).collect();
        let t = term.t.permute(&perm)?.expand(&shape)?;
        let grouped: Vec<i64> = order
            .iter()
            .map(|g| g.iter().map(|&c| size_of(c) as i64).product())
            .collect();
        t.reshape(&grouped)
    };
    let am = arrange(&a, &[&batch, &a_only, &summed])?;
    let bm = arrange(&b, &[&batch, &summed, &b_only])?;
    let prod = am.matmul(&bm)?;
    let mut shape: Vec<i64> = batch.iter().map(|&c| size_of(c) as i64).collect();
    shape.extend(a_only.iter().map(|&c| size_of(c) as i64));
    shape.extend(b_only.iter().map(|&c| size_of(c) as i64));
    let labels = batch
        .iter()
        .chain(&a_only)
        .chain(&b_only)
        .copied()
        .collect();
    Ok(Term {
        t: prod.reshape(&shape)?,
        labels,
    })
}
