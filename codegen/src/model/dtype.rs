//! Element types: the [`DType`] enum, parsed once from its short YAML name (`f32`), and what
//! each generator needs to know of it (variant, Rust type, CUDA C types).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::fmt;

/// A tensor element type, in promotion order (the order of PyTorch's `ScalarType`s that
/// kiln has, and of `ALL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

    /// The floating dtypes (the `floating` group, the `floating` set of CUDA templates).
    pub const FLOATING: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

    /// The short name the YAML writes: `bool`, `u8`, ..., `f64`.
    pub fn short(self) -> &'static str {
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

    /// Position in [`DType::ALL`], which is also the runtime enum's discriminant (the
    /// generated CUDA kernel table asserts it).
    pub fn index(self) -> usize {
        DType::ALL
            .iter()
            .position(|d| *d == self)
            .expect("every dtype is in ALL")
    }

    /// Parses a short name.
    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.short() == s)
    }

    /// The variant of kiln's `DType`: `F32`, `BF16`, `Bool`.
    pub fn variant(self) -> syn::Ident {
        let name = match self {
            DType::Bool => "Bool".to_string(),
            other => other.short().to_uppercase(),
        };
        format_ident!("{}", name)
    }

    /// The Rust element type: `f32`, `half::bf16`.
    pub fn rust_type(self) -> TokenStream {
        match self {
            DType::F16 => quote!(half::f16),
            DType::BF16 => quote!(half::bf16),
            other => {
                let id = format_ident!("{}", other.short());
                quote!(#id)
            }
        }
    }

    /// True for `f16`, `bf16`, `f32`, `f64`.
    pub fn is_floating(self) -> bool {
        DType::FLOATING.contains(&self)
    }

    /// The C++ type kiln's CUDA kernels store it as.
    pub fn ctype(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "unsigned char",
            DType::I8 => "signed char",
            DType::I16 => "short",
            DType::I32 => "int",
            DType::I64 => "long long",
            DType::F16 => "kiln_f16",
            DType::BF16 => "kiln_bf16",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }

    /// The C++ type CUDA sums accumulate in.
    pub fn cuda_acc_type(self) -> &'static str {
        match self {
            DType::F16 | DType::BF16 | DType::F32 => "float",
            DType::F64 => "double",
            _ => "long long",
        }
    }

    /// The C++ type a CUDA kernel computes in (float for the 16-bit floats, as `kiln_compute`
    /// in the prelude).
    pub fn cuda_compute_type(self) -> &'static str {
        match self {
            DType::F16 | DType::BF16 => "float",
            other => other.ctype(),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short())
    }
}

/// The `fixed:` dtype of an argument or output: a dtype, or the opmath dtype of the
/// computation (PyTorch's `opmath_type`: float32 for f16/bf16, the compute dtype otherwise).
/// A structured kernel sees an `opmath` argument or output as `Src<T::Compute>` /
/// `Dst<T::Compute>`: statistics and parameters of the normalization kernels stay in float32
/// for half inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixed {
    DType(DType),
    Opmath,
}

impl Fixed {
    /// The YAML's word for the opmath dtype.
    pub const OPMATH: &'static str = "opmath";

    pub fn parse(s: &str) -> Option<Fixed> {
        if s == Self::OPMATH {
            return Some(Fixed::Opmath);
        }
        DType::parse(s).map(Fixed::DType)
    }

    /// True when the dtype can be floating point (so gradients can flow through it).
    pub fn can_be_floating(self) -> bool {
        match self {
            Fixed::DType(d) => d.is_floating(),
            Fixed::Opmath => true,
        }
    }

    /// The element type a kernel sees: its Rust type, or for `opmath` the compute type of `T`
    /// (`f32` for the 16-bit floats, `T` otherwise).
    pub fn elem(self) -> TokenStream {
        match self {
            Fixed::DType(d) => d.rust_type(),
            Fixed::Opmath => quote!(<T as Element>::Compute),
        }
    }
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fixed::DType(d) => d.fmt(f),
            Fixed::Opmath => f.write_str(Self::OPMATH),
        }
    }
}

/// The names a dtype set may be written as, besides a list.
const GROUPS: [&str; 4] = ["all", "numeric", "floating", "integral"];

/// A `dtypes:` value: a group (`all`, `numeric`, `floating`, `integral`) or a list of short
/// names. The error says what is unknown and, where one is close, what was meant.
pub fn dtype_set(spec: &crate::yaml::DTypes) -> Result<Vec<DType>, String> {
    use crate::yaml::DTypes;
    match spec {
        DTypes::Group(g) => match g.as_str() {
            "all" => Ok(DType::ALL.to_vec()),
            "numeric" => Ok(DType::ALL[1..].to_vec()),
            "floating" => Ok(DType::FLOATING.to_vec()),
            "integral" => Ok(DType::ALL[1..6].to_vec()),
            other => {
                let names: Vec<String> = GROUPS.iter().map(|s| s.to_string()).collect();
                Err(format!(
                    "unknown dtype group '{other}'{} (expected all, numeric, floating, integral or a list)",
                    super::error::did_you_mean(other, names.iter())
                ))
            }
        },
        DTypes::List(l) => l.iter().map(|d| parse_dtype(d)).collect(),
    }
}

/// One short dtype name.
pub fn parse_dtype(d: &str) -> Result<DType, String> {
    DType::parse(d).ok_or_else(|| {
        let names: Vec<String> = DType::ALL.iter().map(|d| d.short().to_string()).collect();
        format!(
            "unknown dtype '{d}'{} (expected one of {})",
            super::error::did_you_mean(d, names.iter()),
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips_through_its_short_name() {
        for d in DType::ALL {
            assert_eq!(DType::parse(d.short()), Some(d));
            assert_eq!(Fixed::parse(d.short()), Some(Fixed::DType(d)));
        }
        assert_eq!(Fixed::parse("opmath"), Some(Fixed::Opmath));
        assert_eq!(DType::parse("float32"), None);
        assert_eq!(DType::BF16.variant().to_string(), "BF16");
        assert_eq!(DType::Bool.variant().to_string(), "Bool");
        assert_eq!(DType::F16.rust_type().to_string(), "half :: f16");
        assert_eq!(DType::I64.ctype(), "long long");
        assert!(DType::BF16.is_floating() && !DType::U8.is_floating());
    }

    #[test]
    fn an_unknown_dtype_suggests_the_closest() {
        let e = parse_dtype("bf61").unwrap_err();
        assert!(
            e.starts_with("unknown dtype 'bf61' (did you mean `bf16`?)"),
            "{e}"
        );
    }
}
