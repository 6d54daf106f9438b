//! Backward formulas of the linear-algebra factorizations (src/ops/linalg.rs), built from
//! differentiable ops so that double backward works.

use crate::{Error, Result, Tensor};

/// The matrix transpose of the last two dims.
fn mt(t: &Tensor) -> Result<Tensor> {
    t.transpose(-2, -1)
}

/// Backward of `linalg_inv`: `-A⁻ᵀ grad A⁻ᵀ`.
pub fn inv_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    let r = mt(result)?;
    r.matmul(grad)?.matmul(&r)?.neg()
}

/// Backward of `linalg_det`: `grad · det · A⁻ᵀ` (A must be invertible).
pub fn det_backward(grad: &Tensor, a: &Tensor, result: &Tensor) -> Result<Tensor> {
    let scale = grad.mul(result)?.unsqueeze(-1)?.unsqueeze(-1)?;
    mt(&crate::linalg_inv(a)?)?.mul(&scale)
}

/// Backward of `linalg_solve` for `A`: `-gB Xᵀ` (with the vector case's outer product), where
/// `gB = solve(Aᵀ, grad)` is `B`'s gradient.
pub fn solve_backward_a(grad: &Tensor, a: &Tensor, result: &Tensor, left: bool) -> Result<Tensor> {
    if !left {
        // X A = B: gA = -Xᵀ gB with gB = solve(Aᵀ, grad, left=false).
        let gb = crate::linalg_solve_with(&mt(a)?, grad, false)?;
        return mt(result)?.matmul(&gb)?.neg();
    }
    let gb = solve_backward_b(grad, a, left)?;
    if result.dim() == a.dim() - 1 {
        return gb.unsqueeze(-1)?.matmul(&result.unsqueeze(-2)?)?.neg();
    }
    gb.matmul(&mt(result)?)?.neg()
}

/// Backward of `linalg_solve` for `B`: `solve(Aᵀ, grad)`.
pub fn solve_backward_b(grad: &Tensor, a: &Tensor, left: bool) -> Result<Tensor> {
    crate::linalg_solve_with(&mt(a)?, grad, left)
}

/// `Φ(X)`: the lower triangle with the diagonal halved.
fn phi(x: &Tensor) -> Result<Tensor> {
    let l = x.tril()?;
    let n = x.shape()[x.dim() - 1];
    let half = Tensor::eye(n, None, x.dtype())?
        .to_device(x.device())?
        .mul_scalar(0.5)?;
    l.sub(&l.mul(&half)?)
}

/// Backward of `linalg_cholesky`. With `G = L⁻ᵀ Φ(Lᵀ gL) L⁻¹`, the gradient for a symmetric
/// `A` is `sym(G)` (PyTorch returns that); kiln returns the exact derivative of what the op
/// reads, `Φ(G + Gᵀ)` in the triangle read and 0 in the other. Both give the same gradient
/// to any `X` a symmetric `A` was built from (e.g. `A = X Xᵀ`), and this one passes gradcheck
/// on unsymmetric perturbations.
pub fn cholesky_backward(grad: &Tensor, result: &Tensor, upper: bool) -> Result<Tensor> {
    let (l, gl) = if upper {
        (mt(result)?, mt(grad)?)
    } else {
        (result.clone(), grad.clone())
    };
    let linv = crate::linalg_inv(&l)?;
    let p = phi(&mt(&l)?.matmul(&gl)?)?;
    let g = mt(&linv)?.matmul(&p)?.matmul(&linv)?;
    let exact = phi(&g.add(&mt(&g)?)?)?;
    if upper {
        mt(&exact)
    } else {
        Ok(exact)
    }
}

/// Backward of `linalg_qr`, PyTorch's `linalg_qr_backward`. With `M = gR Rᵀ - Qᵀ gQ`
/// (`k × k`, `k = min(m, n)`):
/// - `m ≥ n`: `gA = (gQ + Q copyltu(M)) R⁻ᵀ`, where `copyltu(M) = triu(M) + triu(M)ᵀ` with
///   the diagonal counted once;
/// - `m < n` (`A = [X | Y]` with `X` square, `R = [U | V]`, so `X = Q U` and `Y = Q V`):
///   `gA = [Q tril(Mᵀ - M) U⁻ᵀ | 0] + Q gR`, PyTorch's form of `gX = (gQ' + Q copyltu(M'))
///   U⁻ᵀ` for `gQ' = gQ + Y gVᵀ` and `gY = Q gV`.
pub fn qr_backward(
    grads: &[Option<Tensor>],
    a: &Tensor,
    q: &Tensor,
    r: &Tensor,
    mode: &str,
) -> Result<Tensor> {
    let op = "linalg_qr_backward";
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    if mode == "r" {
        return Err(Error::autograd(
            op,
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.",
        ));
    }
    if mode == "complete" && m > n {
        return Err(Error::autograd(
            op,
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.",
        ));
    }
    let (gq, gr) = (
        grads.first().cloned().flatten(),
        grads.get(1).cloned().flatten(),
    );
    let qt_gq = gq.as_ref().map(|g| mt(q)?.matmul(g)).transpose()?;
    let gr_rt = gr.as_ref().map(|g| g.matmul(&mt(r)?)).transpose()?;
    let mm = match (gr_rt, qt_gq) {
        (Some(a), Some(b)) => a.sub(&b)?,
        (Some(a), None) => a,
        (None, Some(b)) => b.neg()?,
        (None, None) => return a.zeros_like(),
    };
    let k = m.min(n);
    if m >= n {
        let upper = mm.triu()?;
        let eye = Tensor::eye(k, None, mm.dtype())?.to_device(mm.device())?;
        let sym = upper.add(&mt(&upper)?)?.sub(&upper.mul(&eye)?)?;
        let mut ga = q.matmul(&sym)?;
        if let Some(g) = &gq {
            ga = ga.add(g)?;
        }
        // X R⁻ᵀ, as (R⁻¹ Xᵀ)ᵀ.
        return ga.matmul(&mt(&crate::linalg_inv(r)?)?);
    }
    // Wide: the strictly lower part of Mᵀ - M (its diagonal is zero).
    let skew = mt(&mm)?.sub(&mm)?.tril()?;
    let u = r.narrow(-1, 0, m as i64)?;
    let gx = q.matmul(&skew)?.matmul(&mt(&crate::linalg_inv(&u)?)?)?;
    let mut pad = vec![0i64; 2];
    pad[1] = (n - m) as i64;
    let mut ga = crate::pad(&gx, pad)?;
    if let Some(g) = &gr {
        ga = ga.add(&q.matmul(g)?)?;
    }
    Ok(ga)
}

/// PyTorch's `maybe_multiply`: `t * s`, skipping the pass when `s` is 1 (`addmm`'s `beta`
/// and `alpha`).
pub fn maybe_multiply(t: &Tensor, s: crate::Scalar) -> Result<Tensor> {
    if s.to_f64() == 1.0 {
        Ok(t.clone())
    } else {
        t.mul_scalar(s)
    }
}
