//! The element types a tensor can hold.

use std::fmt;

/// A tensor's element type. Names and promotion order follow PyTorch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

/// Coarse category used by type promotion: bool < integral < floating.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Integral,
    Floating,
}

impl DType {
    /// Every dtype, in promotion order.
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// True for the four floating types.
    pub fn is_floating_point(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// True for the integer types, `bool` excluded.
    pub fn is_integral(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64
        )
    }

    /// The promotion category of this dtype.
    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            d if d.is_floating_point() => Category::Floating,
            _ => Category::Integral,
        }
    }

    /// PyTorch's name for this dtype, as in `torch.float32`.
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "torch.bool",
            DType::U8 => "torch.uint8",
            DType::I8 => "torch.int8",
            DType::I16 => "torch.int16",
            DType::I32 => "torch.int32",
            DType::I64 => "torch.int64",
            DType::F16 => "torch.float16",
            DType::BF16 => "torch.bfloat16",
            DType::F32 => "torch.float32",
            DType::F64 => "torch.float64",
        }
    }

    /// The C++-style name PyTorch uses in "not implemented for 'Float'" messages.
    pub fn scalar_type_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }

    /// The C++ type name some PyTorch messages print (`c10::BFloat16 != float`).
    pub fn cpp_type_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "unsigned char",
            DType::I8 => "signed char",
            DType::I16 => "short int",
            DType::I32 => "int",
            DType::I64 => "long int",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }

    /// Short Rust-style name (`f32`, `i64`, ...), as used in kiln's YAML.
    pub fn short_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Parses a short name (`f32`, `bf16`, ...).
    pub fn from_short_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.short_name() == s)
    }

    /// PyTorch's `promote_types`: the smallest dtype both `self` and `other` convert to.
    pub fn promote(self, other: DType) -> DType {
        use DType::*;
        if self == other {
            return self;
        }
        let (a, b) = if self <= other {
            (self, other)
        } else {
            (other, self)
        };
        match (a, b) {
            (Bool, x) => x,
            // uint8 with a signed integer needs the next wider signed type.
            (U8, I8) => I16,
            (U8, x) => x,
            // f16 and bf16 have no common 16-bit type.
            (F16, BF16) => F32,
            (_, x) => x,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.torch_name())
    }
}

#[cfg(test)]
mod tests {
    use super::DType::*;

    #[test]
    fn promotion_matches_pytorch_table() {
        assert_eq!(U8.promote(I8), I16);
        assert_eq!(Bool.promote(U8), U8);
        assert_eq!(I32.promote(F16), F16);
        assert_eq!(F16.promote(BF16), F32);
        assert_eq!(I64.promote(F32), F32);
        assert_eq!(F32.promote(F64), F64);
        assert_eq!(U8.promote(I64), I64);
    }
}
