//! Matrix products: `matmul` (with its broadcasting rules), `mv`, `dot`, `outer`, and the
//! BLAS-style products with a bias, `addmv`, `baddbmm`, `addbmm` (`addmm` is a kernel:
//! kernels/src/cpu/matmul.rs).

use crate::ops::backward::i64s;
use crate::{DType, Error, Result, Scalar, Tensor};

/// `matmul`: PyTorch's rank cases — dot, matrix-vector, vector-matrix, matrix-matrix, and
/// batched with broadcasting of the batch dims.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (da, db) = (a.dim(), b.dim());
    if da == 0 || db == 0 {
        return Err(Error::shape(
            "matmul",
            format!(
                "both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
            ),
        ));
    }
    match (da, db) {
        (1, 1) => {
            if a.shape()[0] != b.shape()[0] {
                return Err(Error::shape(
                    "matmul",
                    format!(
                        "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                        a.shape()[0], b.shape()[0], a.shape()[0], b.shape()[0]
                    ),
                ));
            }
            a.unsqueeze(0)?.mm(&b.unsqueeze(1)?)?.reshape(())
        }
        (2, 1) => a.mm(&b.unsqueeze(1)?)?.squeeze_dim(1),
        (1, 2) => a.unsqueeze(0)?.mm(b)?.squeeze_dim(0),
        (2, 2) => a.mm(b),
        _ => {
            // Batched: promote vectors to matrices, broadcast batch dims, bmm, then drop the
            // dims the vectors added.
            let a2 = if da == 1 { a.unsqueeze(0)? } else { a.clone() };
            let b2 = if db == 1 { b.unsqueeze(1)? } else { b.clone() };
            let (ba, bb) = (&a2.shape()[..a2.dim() - 2], &b2.shape()[..b2.dim() - 2]);
            let batch = kiln_kernels::layout::broadcast_shapes(ba, bb)
                .map_err(|m| Error::op("matmul", m))?;
            let (n, k) = (a2.shape()[a2.dim() - 2], a2.shape()[a2.dim() - 1]);
            let (k2, m) = (b2.shape()[b2.dim() - 2], b2.shape()[b2.dim() - 1]);
            if k != k2 {
                return Err(Error::shape(
                    "matmul",
                    format!("mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})"),
                ));
            }
            // Broadcasting two (expanded) batches can give more matrices than an int64 counts.
            let nb = kiln_kernels::layout::checked_numel(&batch)
                .filter(|&nb| i64::try_from(nb).is_ok())
                .ok_or_else(|| batch_overflow(&batch, a, b))?;
            let mut ea = i64s(&batch);
            ea.extend([n as i64, k as i64]);
            let mut eb = i64s(&batch);
            eb.extend([k2 as i64, m as i64]);
            let a3 = a2.expand(&ea)?.reshape([nb as i64, n as i64, k as i64])?;
            let b3 = b2.expand(&eb)?.reshape([nb as i64, k as i64, m as i64])?;
            let mut out_shape = i64s(&batch);
            out_shape.extend([n as i64, m as i64]);
            let mut out = a3.bmm(&b3)?.reshape(&out_shape)?;
            if da == 1 {
                out = out.squeeze_dim(-2)?;
            }
            if db == 1 {
                out = out.squeeze_dim(-1)?;
            }
            Ok(out)
        }
    }
}

fn batch_overflow(batch: &[usize], a: &Tensor, b: &Tensor) -> Error {
    Error::shape(
        "matmul",
        format!(
            "the broadcast batch {batch:?} of {:?} and {:?} overflows int64 (numel: integer multiplication overflow)",
            a.shape(),
            b.shape()
        ),
    )
}

fn scaled(t: Tensor, by: Scalar) -> Result<Tensor> {
    if by.to::<f64>() == 1.0 {
        Ok(t)
    } else {
        t.mul_scalar(by)
    }
}

/// A coefficient (`alpha`, `beta`) of an integer product: PyTorch converts it to the
/// product's dtype, truncating a float (`1.9` is 1), and rejects one out of int64's range.
pub(crate) fn integral_coefficient(op: &str, c: Scalar, dtype: DType) -> Result<Scalar> {
    match c {
        Scalar::Float(f) if dtype.is_integral() => {
            c.check_fits(DType::I64).map_err(|m| Error::op(op, m))?;
            Ok(Scalar::Int(f as i64))
        }
        _ => Ok(c),
    }
}

/// `beta * base + alpha * product`, where `beta = 0` ignores `base` (NaN included). An
/// integer product keeps its dtype: float coefficients are truncated, as PyTorch's are.
fn blend(op: &str, base: &Tensor, product: Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let dtype = product.dtype().promote(base.dtype());
    let beta = integral_coefficient(op, beta, dtype)?;
    let alpha = integral_coefficient(op, alpha, dtype)?;
    let p = scaled(product, alpha)?;
    let base = base.expand(i64s(p.shape()))?;
    if beta.to::<f64>() == 0.0 {
        return p.add(&base.zeros_like()?);
    }
    p.add(&scaled(base.clone(), beta)?)
}

/// `mv(vec)`: matrix × vector.
pub fn mv(t: &Tensor, vec: &Tensor) -> Result<Tensor> {
    if t.dim() != 2 || vec.dim() != 1 {
        return Err(Error::shape(
            "mv",
            format!(
                "vector + matrix @ vector expected, got 1, {}, {}",
                t.dim(),
                vec.dim()
            ),
        ));
    }
    // PyTorch's mv is addmv into a result with `vec`'s options, hence its message.
    same_dtype_addmv(vec.dtype(), t, vec)?;
    // A kernel of its own in PyTorch: `matmul`'s autocast policy must not apply inside it
    // (an autocast region that has none for `mv` runs it in the inputs' dtype).
    let _native = crate::amp::suspend_autocast();
    t.matmul(vec)
}

/// addmv's operands share one dtype (PyTorch's check, so mixed dtypes fail in an autocast
/// region too, where no policy casts them).
fn same_dtype_addmv(result: DType, mat: &Tensor, vec: &Tensor) -> Result<()> {
    if result == mat.dtype() && mat.dtype() == vec.dtype() {
        return Ok(());
    }
    Err(Error::dtype(
        "addmv",
        format!(
            "addmv input tensors must have the same dtype, but got {}, {}, and {}",
            result.scalar_type_name(),
            mat.dtype().scalar_type_name(),
            vec.dtype().scalar_type_name()
        ),
    ))
}

/// `addmv(mat, vec, beta, alpha)`: `beta * self + alpha * (mat @ vec)`.
pub fn addmv(
    t: &Tensor,
    mat: &Tensor,
    vec: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    same_dtype_addmv(t.dtype(), mat, vec)?;
    blend("addmv", t, mv(mat, vec)?, beta, alpha)
}

fn check_batches(op: &str, b1: &Tensor, b2: &Tensor) -> Result<()> {
    if b1.dim() != 3 || b2.dim() != 3 {
        return Err(Error::shape(
            op,
            format!(
                "batch1 must be a 3D tensor, batch2 must be a 3D tensor, but got {:?} and {:?}",
                b1.shape(),
                b2.shape()
            ),
        ));
    }
    Ok(())
}

/// `baddbmm(batch1, batch2, beta, alpha)`: `beta * self + alpha * (batch1 @ batch2)`.
pub fn baddbmm(
    t: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_batches("baddbmm", batch1, batch2)?;
    blend("baddbmm", t, batch1.bmm(batch2)?, beta, alpha)
}

/// `addbmm(batch1, batch2, beta, alpha)`: `beta * self + alpha * Σ_b batch1[b] @ batch2[b]`.
pub fn addbmm(
    t: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_batches("addbmm", batch1, batch2)?;
    let p = crate::sum_dim_with(&batch1.bmm(batch2)?, &[0], false, None)?;
    blend("addbmm", t, p, beta, alpha)
}

/// `dot(tensor)`: the inner product of two 1-D tensors of one dtype.
pub fn dot(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    if t.dim() != 1 || other.dim() != 1 {
        return Err(Error::shape(
            "dot",
            format!(
                "1D tensors expected, but got {}D and {}D tensors",
                t.dim(),
                other.dim()
            ),
        ));
    }
    if t.numel() != other.numel() {
        return Err(Error::shape(
            "dot",
            format!(
                "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                t.numel(),
                other.numel(),
                t.numel(),
                other.numel()
            ),
        ));
    }
    if t.dtype() != other.dtype() {
        return Err(Error::dtype(
            "dot",
            format!(
                "dot : expected both vectors to have same dtype, but found {} and {}",
                t.dtype().scalar_type_name(),
                other.dtype().scalar_type_name()
            ),
        ));
    }
    t.mul(other)?.sum()
}

/// `outer(vec2)`: `self[i] * vec2[j]`.
pub fn outer(t: &Tensor, vec2: &Tensor) -> Result<Tensor> {
    for (name, v) in [("self", t), ("vec2", vec2)] {
        if v.dim() != 1 {
            return Err(Error::shape(
                "outer",
                format!("outer: Expected 1-D argument {name}, but got {}-D", v.dim()),
            ));
        }
    }
    t.unsqueeze(1)?.mul(&vec2.unsqueeze(0)?)
}
