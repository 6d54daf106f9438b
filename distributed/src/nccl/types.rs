//! kiln's dtypes and reductions as NCCL's: PyTorch's table (`getNcclDataType`,
//! `getNcclReduceOp`), bool as bytes reduced with max (or) and min (and).

use crate::ReduceOp;
use cudarc::nccl::sys::{ncclDataType_t as Nd, ncclRedOp_t as Nr};
use kiln_core::{DType, Error, Result};

/// NCCL's type for `dtype`; int16, which NCCL lacks, is PyTorch's "not supported" error.
pub(crate) fn datatype(op: &str, dtype: DType) -> Result<Nd> {
    Ok(match dtype {
        DType::Bool | DType::U8 => Nd::ncclUint8,
        DType::I8 => Nd::ncclInt8,
        DType::I32 => Nd::ncclInt32,
        DType::I64 => Nd::ncclInt64,
        DType::F16 => Nd::ncclFloat16,
        DType::BF16 => Nd::ncclBfloat16,
        DType::F32 => Nd::ncclFloat32,
        DType::F64 => Nd::ncclFloat64,
        DType::I16 => {
            return Err(Error::dtype(
                op,
                format!(
                    "Input tensor data type is not supported for NCCL process group: {dtype} (NCCL has no 16-bit integer type; convert the tensor, e.g. to int32, or use the MPI backend)"
                ),
            ))
        }
    })
}

/// NCCL's reduction for `op` on `dtype`: on bool, sum and max are or (max of bytes 0/1),
/// product and min are and (min). `Avg` is `ncclAvg` (rounding toward zero on integers).
pub(crate) fn reduction(dtype: DType, op: ReduceOp) -> Nr {
    if dtype == DType::Bool {
        return match op {
            ReduceOp::Sum | ReduceOp::Max | ReduceOp::Avg => Nr::ncclMax,
            ReduceOp::Product | ReduceOp::Min => Nr::ncclMin,
        };
    }
    match op {
        ReduceOp::Sum => Nr::ncclSum,
        ReduceOp::Avg => Nr::ncclAvg,
        ReduceOp::Product => Nr::ncclProd,
        ReduceOp::Min => Nr::ncclMin,
        ReduceOp::Max => Nr::ncclMax,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int16_is_refused_naming_the_dtype_and_every_other_dtype_maps() {
        for d in DType::ALL {
            match datatype("all_reduce", d) {
                Ok(_) => assert_ne!(d, DType::I16),
                Err(e) => {
                    assert_eq!(d, DType::I16);
                    let e = e.to_string();
                    assert!(e.contains("not supported for NCCL"), "{e}");
                    assert!(e.contains(&d.to_string()), "{e}");
                }
            }
        }
    }

    #[test]
    fn bool_reduces_as_or_and_and() {
        assert_eq!(reduction(DType::Bool, ReduceOp::Sum), Nr::ncclMax);
        assert_eq!(reduction(DType::Bool, ReduceOp::Product), Nr::ncclMin);
        assert_eq!(reduction(DType::F32, ReduceOp::Avg), Nr::ncclAvg);
    }
}
