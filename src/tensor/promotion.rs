//! PyTorch's type promotion (`torch.result_type`).
//!
//! Operands fall into three classes — tensors with dims, 0-d tensors, and scalars — and a
//! lower class only changes the result when it is of a higher *category* (bool < integer <
//! float) than every higher class. So `int32 tensor * 2.5` is float32, `float16 tensor * 2.5`
//! stays float16, and `uint8 tensor + int64 0-d tensor` stays uint8.

use crate::{DType, Scalar, Tensor};

/// One operand of a promoting op.
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    Tensor(&'a Tensor),
    Scalar(Scalar),
}

fn merge(acc: Option<DType>, d: DType) -> Option<DType> {
    Some(acc.map_or(d, |a| a.promote(d)))
}

fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (Some(h), _) if h.is_floating_point() => Some(h),
        (Some(h), Some(l)) if h == DType::Bool || l.is_floating_point() => Some(h.promote(l)),
        (Some(h), _) => Some(h),
        (None, l) => l,
    }
}

/// The dtype an op computes in, given its operands.
#[inline]
pub fn result_type(operands: &[Operand<'_>]) -> DType {
    let (mut dim, mut zero, mut wrapped) = (None, None, None);
    for op in operands {
        match op {
            Operand::Tensor(t) if t.dim() > 0 => dim = merge(dim, t.dtype()),
            Operand::Tensor(t) => zero = merge(zero, t.dtype()),
            Operand::Scalar(s) => wrapped = merge(wrapped, s.natural_dtype()),
        }
    }
    combine(dim, combine(zero, wrapped)).unwrap_or(DType::F32)
}

/// `torch.can_cast(from, to)`: whether an in-place op may write a `from` result into `to`.
pub fn can_cast(from: DType, to: DType) -> bool {
    from.category() <= to.category()
}
