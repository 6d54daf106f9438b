//! Python-style numbers passed to ops (`x.mul_scalar(2.0)`), which take part in type
//! promotion weakly.

use crate::DType;
use kiln_kernels::Arith;
use std::fmt;

/// A number that is not a tensor: a bool, an integer or a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    /// The dtype this scalar has on its own: bool, int64, or the default float dtype.
    pub fn natural_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
        }
    }

    /// The value as f64.
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// The value clamped into an integer `dtype`'s range (a bound of `clamp` / `hardtanh`,
    /// which PyTorch saturates: `clamp(uint8, min=-1)` clamps at 0, not at 255). Floating and
    /// bool dtypes take every value unchanged.
    pub fn saturate(self, dtype: DType) -> Scalar {
        let (lo, hi): (i64, i64) = match dtype {
            DType::U8 => (0, u8::MAX as i64),
            DType::I8 => (i8::MIN as i64, i8::MAX as i64),
            DType::I16 => (i16::MIN as i64, i16::MAX as i64),
            DType::I32 => (i32::MIN as i64, i32::MAX as i64),
            DType::I64 => (i64::MIN, i64::MAX),
            _ => return self,
        };
        match self {
            Scalar::Int(i) => Scalar::Int(i.clamp(lo, hi)),
            // NaN has no integer value; it is left for the conversion to report.
            Scalar::Float(f) if !f.is_nan() => Scalar::Float(f.clamp(lo as f64, hi as f64)),
            s => s,
        }
    }

    /// Converts into a kernel compute type, keeping integers exact.
    pub fn to<C: Arith>(self) -> C {
        match self {
            Scalar::Bool(b) => C::from_i64(b as i64),
            Scalar::Int(i) => C::from_i64(i),
            Scalar::Float(f) => C::from_f64(f),
        }
    }

    /// Checks that this value converts to `dtype` without overflow, with PyTorch's error
    /// (`torch.full((2,), 300, dtype=torch.uint8)` fails). Infinities and NaN fit every float
    /// dtype; a negative integer fits an unsigned dtype while it wraps at most once, as in
    /// PyTorch; every value converts to bool.
    pub(crate) fn check_fits(self, dtype: DType) -> Result<(), kiln_kernels::KernelError> {
        let (lo, hi, name) = match dtype {
            DType::Bool => return Ok(()),
            DType::U8 => (-255.0, 255.0, "uint8_t"),
            DType::I8 => (-128.0, 127.0, "int8_t"),
            DType::I16 => (-32768.0, 32767.0, "int16_t"),
            DType::I32 => (-2147483648.0, 2147483647.0, "int"),
            DType::I64 => (i64::MIN as f64, i64::MAX as f64, "int64_t"),
            DType::F16 => (-65504.0, 65504.0, "at::Half"),
            DType::BF16 => (
                -3.3895313892515355e38,
                3.3895313892515355e38,
                "at::BFloat16",
            ),
            DType::F32 => (f32::MIN as f64, f32::MAX as f64, "float"),
            DType::F64 => return Ok(()),
        };
        let fits = match self {
            Scalar::Bool(_) => true,
            // Exact for every integer dtype's bounds but int64's, which any i64 fits.
            Scalar::Int(i) => dtype == DType::I64 || (lo..=hi).contains(&(i as f64)),
            Scalar::Float(f) if dtype.is_floating_point() => {
                f.is_nan() || f.is_infinite() || (lo..=hi).contains(&f)
            }
            // A float into an integer dtype: NaN and infinities never fit; the i64 upper
            // bound as f64 is 2^63, itself out of range.
            Scalar::Float(f) => {
                let lo = if dtype == DType::U8 { 0.0 } else { lo };
                f >= lo && (f < hi || (dtype != DType::I64 && f == hi))
            }
        };
        if fits {
            Ok(())
        } else {
            Err(kiln_kernels::KernelError::value(format!(
                "value cannot be converted to type {name} without overflow"
            )))
        }
    }

    /// True for a float scalar.
    pub fn is_floating_point(self) -> bool {
        matches!(self, Scalar::Float(_))
    }
}

macro_rules! scalar_from {
    ($($t:ty => $v:ident as $c:ty),*) => {
        $(impl From<$t> for Scalar {
            fn from(x: $t) -> Self { Scalar::$v(x as $c) }
        })*
    };
}
scalar_from!(i8 => Int as i64, i16 => Int as i64, i32 => Int as i64, i64 => Int as i64,
             u8 => Int as i64, u16 => Int as i64, u32 => Int as i64, usize => Int as i64,
             f32 => Float as f64, f64 => Float as f64);

impl From<bool> for Scalar {
    fn from(b: bool) -> Self {
        Scalar::Bool(b)
    }
}
impl From<half::f16> for Scalar {
    fn from(x: half::f16) -> Self {
        Scalar::Float(x.to_f64())
    }
}
impl From<half::bf16> for Scalar {
    fn from(x: half::bf16) -> Self {
        Scalar::Float(x.to_f64())
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
        }
    }
}
