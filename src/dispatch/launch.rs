//! The runtime half of generated dispatch: promotion, broadcasting, output allocation,
//! de-aliasing, locking, and the in-place / `out=` commit rules. Generated code calls these so
//! that what each op's generated code holds is only what differs between ops. Everything is
//! reached as `launch::<name>` (the paths `codegen` writes), whichever file below holds it.

mod commit;
mod dtypes;
mod loops;
mod operands;

pub(crate) use commit::{
    check_inplace, check_out, commit_inplace, commit_out, commit_out_same_dtype,
    commit_view_inplace, Inplace,
};
pub(crate) use dtypes::{
    bool_to_long, check_alpha, int_to_float, not_implemented, opmath_dtype, result_type,
    same_dtype, sum_dtype, Opmath,
};
pub(crate) use loops::{map1, map1_same, map1_slice, map1_slice_f32, map2, map2_same, map3, run};
pub(crate) use operands::{
    broadcast_shapes, cast, device_of, fixed_input, fixed_operand, followed_format, in_format,
    operand, output, pointwise_device,
};

pub(crate) use crate::dispatch::{dst, src};

// Called only by the CUDA backend and its generated dispatch.
#[cfg(feature = "cuda")]
pub(crate) use dtypes::check_dtype;
#[cfg(feature = "cuda")]
pub(crate) use loops::is_output;
