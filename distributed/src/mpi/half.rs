//! Reductions of f16 and bf16 for MPI, which has no 16-bit float types: each element is
//! widened to f32, combined, and rounded back, as NCCL and Horovod do.

use super::raw::{self, MpiOp};
use crate::ReduceOp;
use half::{bf16, f16};
use kiln_core::Result;
use mpi::ffi;
use std::ffi::{c_int, c_void};

macro_rules! user_op {
    ($name:ident, $t:ty, |$a:ident, $b:ident| $body:expr) => {
        /// MPI user function: `inout[i] = inout[i] ⊕ in[i]` over `*len` elements.
        unsafe extern "C" fn $name(
            invec: *mut c_void,
            inout: *mut c_void,
            len: *mut c_int,
            _dt: *mut ffi::MPI_Datatype,
        ) {
            // SAFETY: MPI passes two buffers of `*len` elements of the datatype the op was
            // used with, which kiln only ever gives as this op's 16-bit type.
            let (a, b) = unsafe {
                let n = (*len).max(0) as usize;
                (
                    std::slice::from_raw_parts(invec.cast::<$t>(), n),
                    std::slice::from_raw_parts_mut(inout.cast::<$t>(), n),
                )
            };
            for (x, y) in a.iter().zip(b.iter_mut()) {
                let ($a, $b) = (x.to_f32(), y.to_f32());
                *y = <$t>::from_f32($body);
            }
        }
    };
}

user_op!(f16_sum, f16, |a, b| a + b);
user_op!(f16_prod, f16, |a, b| a * b);
user_op!(f16_min, f16, |a, b| if a.is_nan() || b.is_nan() {
    f32::NAN
} else {
    a.min(b)
});
user_op!(f16_max, f16, |a, b| if a.is_nan() || b.is_nan() {
    f32::NAN
} else {
    a.max(b)
});
user_op!(bf16_sum, bf16, |a, b| a + b);
user_op!(bf16_prod, bf16, |a, b| a * b);
user_op!(bf16_min, bf16, |a, b| if a.is_nan() || b.is_nan() {
    f32::NAN
} else {
    a.min(b)
});
user_op!(bf16_max, bf16, |a, b| if a.is_nan() || b.is_nan() {
    f32::NAN
} else {
    a.max(b)
});

/// The eight ops, created once after MPI_Init and freed before MPI_Finalize.
pub(crate) struct HalfOps {
    f16: [MpiOp; 4],
    bf16: [MpiOp; 4],
}

impl HalfOps {
    pub(crate) fn create() -> Result<HalfOps> {
        let mk = raw::op_create;
        Ok(HalfOps {
            f16: [
                mk(Some(f16_sum))?,
                mk(Some(f16_prod))?,
                mk(Some(f16_min))?,
                mk(Some(f16_max))?,
            ],
            bf16: [
                mk(Some(bf16_sum))?,
                mk(Some(bf16_prod))?,
                mk(Some(bf16_min))?,
                mk(Some(bf16_max))?,
            ],
        })
    }

    /// The op for `op` on bf16 (`bf16`) or f16 elements; `Avg` sums.
    pub(crate) fn get(&self, bf16: bool, op: ReduceOp) -> MpiOp {
        let ops = if bf16 { &self.bf16 } else { &self.f16 };
        ops[match op {
            ReduceOp::Sum | ReduceOp::Avg => 0,
            ReduceOp::Product => 1,
            ReduceOp::Min => 2,
            ReduceOp::Max => 3,
        }]
    }

    pub(crate) fn free(self) {
        for op in self.f16.into_iter().chain(self.bf16) {
            raw::op_free(op);
        }
    }
}
