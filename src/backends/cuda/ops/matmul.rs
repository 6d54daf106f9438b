//! mm, addmm and bmm on CUDA through cuBLAS (`cublasGemmStridedBatchedEx`): f32 and f64 compute in
//! their own type, f16 and bf16 accumulate in f32, as PyTorch does by default.

use super::{copy, gpu_of};
use crate::backends::cuda::blas::Blas;
use crate::backends::cuda::runtime::{driver_error, Gpu};
use crate::{DType, Error, Result, Tensor};
use cudarc::cublas::{result as blas, sys};
use std::ffi::c_void;

/// `t` as a row-major matrix stack: itself when contiguous from its offset, else a copy.
fn row_major(op: &str, t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        return Ok(t.clone());
    }
    let c = super::alloc(op, t.shape(), t.dtype(), t.device().index())?;
    copy(op, t, &c)?;
    Ok(c)
}

fn ptr(op: &str, t: &Tensor) -> Result<u64> {
    let base = t
        .storage()
        .device_ptr()
        .ok_or_else(|| Error::device(op, "kiln internal error: a CPU tensor reached cuBLAS"))?;
    Ok(base + (t.storage_offset() * t.dtype().size_in_bytes()) as u64)
}

/// out[b] = alpha * a[b] @ m[b] + beta * out[b] for `batch` row-major [m, k] @ [k, n]
/// matrices, in the compute type (f32 for the half types, rounded once); `beta = 0` does not
/// read `out`.
#[allow(clippy::too_many_arguments)]
fn gemm(
    op: &str,
    gpu: &Gpu,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    batch: usize,
    (m, k, n): (usize, usize, usize),
    (alpha, beta): (f64, f64),
) -> Result<()> {
    if batch == 0 || m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        // An empty sum: `out` is fresh zeros, or holds `self` to scale by beta.
        if beta != 0.0 && beta != 1.0 {
            copy(op, &out.mul_scalar(beta)?, out)?;
        }
        return Ok(());
    }
    let int = |v: usize| {
        i32::try_from(v)
            .map_err(|_| Error::shape(op, format!("matrix dimension {v} is too large for cuBLAS")))
    };
    let (mi, ki, ni, bi) = (int(m)?, int(k)?, int(n)?, int(batch)?);
    let (ty, compute) = match a.dtype() {
        DType::F32 => (
            sys::cudaDataType::CUDA_R_32F,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        DType::F64 => (
            sys::cudaDataType::CUDA_R_64F,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_64F,
        ),
        DType::F16 => (
            sys::cudaDataType::CUDA_R_16F,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        DType::BF16 => (
            sys::cudaDataType::CUDA_R_16BF,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        other => {
            return Err(Error::dtype(
                op,
                format!(
                    "\"{op}_cuda\" not implemented for '{}'",
                    other.scalar_type_name()
                ),
            ))
        }
    };
    let (alpha32, beta32) = (alpha as f32, beta as f32);
    let (alpha, beta): (*const c_void, *const c_void) = if a.dtype() == DType::F64 {
        (&alpha as *const f64 as _, &beta as *const f64 as _)
    } else {
        (&alpha32 as *const f32 as _, &beta32 as *const f32 as _)
    };
    let (pa, pb, pc) = (ptr(op, a)?, ptr(op, b)?, ptr(op, out)?);
    let mut guard = gpu.blas.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        // cudarc panics when a library is missing; check first and name what is missing.
        crate::backends::cuda::libs::require_cublas(op)?;
        let h = blas::create_handle().map_err(|e| driver_error(op, e))?;
        // SAFETY: `h` is a fresh handle; the stream belongs to this device's context.
        unsafe { blas::set_stream(h, gpu.stream.cu_stream() as _) }
            .map_err(|e| driver_error(op, e))?;
        *guard = Some(Blas(h));
    }
    let h = guard.as_ref().expect("created above").0;
    // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, with n and m swapped.
    // SAFETY: a, b and out are contiguous device matrices of the given sizes and dtype;
    // alpha/beta point at host values of the compute type and live across the call.
    unsafe {
        blas::gemm_strided_batched_ex(
            h,
            sys::cublasOperation_t::CUBLAS_OP_N,
            sys::cublasOperation_t::CUBLAS_OP_N,
            ni,
            mi,
            ki,
            alpha,
            pb as *const c_void,
            ty,
            ni,
            (k * n) as i64,
            pa as *const c_void,
            ty,
            ki,
            (m * k) as i64,
            beta,
            pc as *mut c_void,
            ty,
            ni,
            (m * n) as i64,
            bi,
            compute,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| driver_error(op, e))
}

pub fn mm(op: &str, self_: &Tensor, mat2: &Tensor, out: &Tensor) -> Result<()> {
    let gpu = gpu_of(op, out)?;
    let (a, b) = (row_major(op, self_)?, row_major(op, mat2)?);
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    gemm(op, &gpu, &a, &b, out, 1, (m, k, n), (1.0, 0.0))
}

/// `beta * self + alpha * (mat1 @ mat2)`: `self` broadcast into `out`, then one cuBLAS call
/// that scales and adds it in the compute type, so a half result is rounded once.
pub fn addmm(
    op: &str,
    self_: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: f64,
    alpha: f64,
    out: &Tensor,
) -> Result<()> {
    let gpu = gpu_of(op, out)?;
    let (a, b) = (row_major(op, mat1)?, row_major(op, mat2)?);
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    if beta != 0.0 && m > 0 && n > 0 {
        copy(op, &self_.expand([m as i64, n as i64])?, out)?;
    }
    gemm(op, &gpu, &a, &b, out, 1, (m, k, n), (alpha, beta))
}

pub fn bmm(op: &str, self_: &Tensor, mat2: &Tensor, out: &Tensor) -> Result<()> {
    let gpu = gpu_of(op, out)?;
    let (a, b) = (row_major(op, self_)?, row_major(op, mat2)?);
    let (batch, m, k, n) = (a.shape()[0], a.shape()[1], a.shape()[2], b.shape()[2]);
    gemm(op, &gpu, &a, &b, out, batch, (m, k, n), (1.0, 0.0))
}
