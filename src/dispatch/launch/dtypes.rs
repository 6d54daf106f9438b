//! The dtype rules of generated dispatch: promotion, opmath, `alpha`, unsupported-dtype errors.

use crate::tensor::promotion::{self, Operand};
use crate::{DType, Error, Result, Scalar, Tensor};

/// `torch.result_type` of the operands.
#[inline]
pub(crate) fn result_type(operands: &[Operand<'_>]) -> DType {
    promotion::result_type(operands)
}

/// Integer and bool results of float-valued ops become the default float dtype.
pub(crate) fn int_to_float(d: DType) -> DType {
    if d.is_floating_point() {
        d
    } else {
        DType::F32
    }
}

/// `promote: bool_to_long`: int64 for bool, the dtype itself otherwise.
pub(crate) fn bool_to_long(d: DType) -> DType {
    if d == DType::Bool {
        DType::I64
    } else {
        d
    }
}

/// PyTorch's opmath type of a compute dtype: float32 for the 16-bit floats, the dtype itself
/// otherwise. `fixed: {x: opmath}` arguments and outputs of a structured kernel have it.
pub(crate) fn opmath_dtype(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// The one dtype all tensor operands share, or PyTorch's error: the op's own `message` when
/// the YAML gives one, else `mm`'s.
pub(crate) fn same_dtype(
    op: &str,
    message: Option<&str>,
    operands: &[Operand<'_>],
) -> Result<DType> {
    let mut dtypes = operands.iter().filter_map(|o| match o {
        Operand::Tensor(t) => Some(t.dtype()),
        Operand::Scalar(_) => None,
    });
    let first = dtypes
        .next()
        .ok_or_else(|| Error::value(op, "expected at least one tensor"))?;
    if let Some(other) = dtypes.find(|d| *d != first) {
        return Err(Error::dtype(
            op,
            match message {
                Some(m) => m.to_string(),
                None => format!(
                    "expected m1 and m2 to have the same dtype, but got: {} != {}",
                    first.scalar_type_name(),
                    other.scalar_type_name()
                ),
            },
        ));
    }
    Ok(first)
}

/// `sum`'s result dtype: the requested one, int64 for integers and bool, else the input's.
pub(crate) fn sum_dtype(input: DType, requested: Option<DType>) -> DType {
    requested.unwrap_or(if input.is_floating_point() {
        input
    } else {
        DType::I64
    })
}

/// PyTorch's `alpha_check`: an integral computation takes no float `alpha`, bool no
/// non-bool one.
#[inline]
pub(crate) fn check_alpha(op: &str, compute: DType, alpha: Scalar) -> Result<()> {
    if !compute.is_floating_point() && alpha.is_floating_point() {
        return Err(Error::dtype(
            op,
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    if compute == DType::Bool && !matches!(alpha, Scalar::Bool(_)) && alpha.to_f64() != 1.0 {
        return Err(Error::dtype(
            op,
            "Boolean alpha only supported for Boolean results.",
        ));
    }
    Ok(())
}

/// `"op" not implemented for 'dtype'` unless the backend's kernel covers `dtype`.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn check_dtype(
    op: &str,
    backend: &str,
    dtype: DType,
    supported: &[DType],
) -> Result<()> {
    if supported.contains(&dtype) {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!(
                "\"{op}_{backend}\" not implemented for '{}'",
                dtype.scalar_type_name()
            ),
        ))
    }
}

/// PyTorch's error for a dtype a backend's kernel does not cover.
pub(crate) fn not_implemented(op: &str, dtype: DType) -> Error {
    Error::dtype(
        op,
        format!(
            "\"{op}\" not implemented for '{}'",
            dtype.scalar_type_name()
        ),
    )
}

/// PyTorch's "opmath" type, for composites declared `opmath: true`: f16/bf16 inputs are
/// computed in float32 and the float32 results rounded back once, instead of after every
/// inner op.
pub(crate) struct Opmath;

impl Opmath {
    /// The half dtype every floating input shares, if they share one: mixed inputs (f16 with
    /// f32) are left to the composite's own promotion, so the result dtype never changes.
    pub(crate) fn common_half(inputs: &[&Tensor]) -> Option<DType> {
        let mut floats = inputs
            .iter()
            .map(|t| t.dtype())
            .filter(|d| d.is_floating_point());
        let first = floats.next()?;
        (matches!(first, DType::F16 | DType::BF16) && floats.all(|d| d == first)).then_some(first)
    }

    /// `t` in float32 when it is half, else itself.
    pub(crate) fn widen(t: &Tensor) -> Result<Tensor> {
        match t.dtype() {
            DType::F16 | DType::BF16 => t.to_dtype(DType::F32),
            _ => Ok(t.clone()),
        }
    }

    /// The float32 outputs of `r` rounded to `half`.
    pub(crate) fn narrow<R: Narrow>(r: R, half: DType) -> Result<R> {
        r.narrow_to(half)
    }
}

/// Op results whose float32 tensors [`Opmath`] rounds back to a half dtype.
pub(crate) trait Narrow: Sized {
    fn narrow_to(self, half: DType) -> Result<Self>;
}

impl Narrow for Tensor {
    fn narrow_to(self, half: DType) -> Result<Tensor> {
        if self.dtype() == DType::F32 {
            self.to_dtype(half)
        } else {
            Ok(self)
        }
    }
}

impl Narrow for (Tensor, Tensor) {
    fn narrow_to(self, half: DType) -> Result<Self> {
        Ok((self.0.narrow_to(half)?, self.1.narrow_to(half)?))
    }
}

impl Narrow for Vec<Tensor> {
    fn narrow_to(self, half: DType) -> Result<Self> {
        self.into_iter().map(|t| t.narrow_to(half)).collect()
    }
}
