//! How a collective combines the ranks' values (PyTorch's `ReduceOp`).

use kiln_core::DType;

/// The reduction of `all_reduce`, `reduce` and `reduce_scatter_tensor`.
///
/// On bool tensors `Sum` and `Max` are logical or, `Product` and `Min` logical and (as
/// PyTorch's NCCL backend has them); `Avg` is the sum divided by the group's size, rounded
/// toward zero on integer tensors (as NCCL's `ncclAvg`), and not defined on bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Avg,
    Product,
    Min,
    Max,
}

impl ReduceOp {
    /// PyTorch's name (`ReduceOp.SUM`), as in error messages.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "SUM",
            ReduceOp::Avg => "AVG",
            ReduceOp::Product => "PRODUCT",
            ReduceOp::Min => "MIN",
            ReduceOp::Max => "MAX",
        }
    }

    /// PyTorch's refusal of `Avg` on bool tensors.
    pub(crate) fn check(self, op: &str, dtype: DType) -> kiln_core::Result<()> {
        if self == ReduceOp::Avg && dtype == DType::Bool {
            return Err(kiln_core::Error::dtype(
                op,
                "Cannot use ReduceOp.AVG with boolean inputs",
            ));
        }
        Ok(())
    }

    pub(crate) fn code(self) -> i64 {
        self as i64
    }
}
