//! How schema types become Rust types: in the public signature, in a backward node's fields,
//! and as locals inside a backward formula.

use crate::schema::Type;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The argument types kiln's generator supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    Tensor,
    OptTensor,
    TensorList,
    /// `Tensor?[]`: a list whose elements may be absent (`index.Tensor`'s `indices`).
    OptTensorList,
    Scalar,
    OptScalar,
    Int,
    OptInt,
    IntList,
    OptIntList,
    /// `bool[N]`: PyTorch's `output_mask` of backward ops, a `&[bool]` in Rust.
    BoolList,
    Bool,
    OptBool,
    Float,
    OptFloat,
    ScalarType,
    OptScalarType,
    Device,
    OptDevice,
    Str,
    OptStr,
}

impl ArgKind {
    /// Classifies a schema type, or says why it is unsupported.
    pub fn of(ty: &Type) -> Result<ArgKind, String> {
        use Type as T;
        Ok(match ty {
            T::Tensor { .. } => ArgKind::Tensor,
            T::Scalar => ArgKind::Scalar,
            T::Int | T::SymInt => ArgKind::Int,
            T::Bool => ArgKind::Bool,
            T::Float => ArgKind::Float,
            T::ScalarType => ArgKind::ScalarType,
            T::Str => ArgKind::Str,
            T::Device => ArgKind::Device,
            T::List { elem, .. } => match &**elem {
                T::Tensor { .. } => ArgKind::TensorList,
                T::Optional(inner) if matches!(**inner, T::Tensor { .. }) => ArgKind::OptTensorList,
                T::Int | T::SymInt => ArgKind::IntList,
                T::Bool => ArgKind::BoolList,
                other => {
                    return Err(format!(
                        "lists of {other} are not supported by kiln's generator"
                    ))
                }
            },
            T::Optional(inner) => match ArgKind::of(inner)? {
                ArgKind::Tensor => ArgKind::OptTensor,
                ArgKind::Scalar => ArgKind::OptScalar,
                ArgKind::Int => ArgKind::OptInt,
                ArgKind::IntList => ArgKind::OptIntList,
                ArgKind::Bool => ArgKind::OptBool,
                ArgKind::Float => ArgKind::OptFloat,
                ArgKind::ScalarType => ArgKind::OptScalarType,
                ArgKind::Device => ArgKind::OptDevice,
                ArgKind::Str => ArgKind::OptStr,
                _ => return Err(format!("type {ty} is not supported by kiln's generator")),
            },
            other => return Err(format!("type {other} is not supported by kiln's generator")),
        })
    }

    /// True for tensor-valued arguments.
    pub fn is_tensor(self) -> bool {
        matches!(
            self,
            ArgKind::Tensor | ArgKind::OptTensor | ArgKind::TensorList | ArgKind::OptTensorList
        )
    }

    /// The parameter type in the public function. `required_opt_list` marks an `int[]?`
    /// without default, which the public API takes as a plain slice.
    pub fn param_type(self, required_opt_list: bool) -> TokenStream {
        match self {
            ArgKind::Tensor => quote!(&Tensor),
            ArgKind::OptTensor => quote!(Option<&Tensor>),
            ArgKind::TensorList => quote!(&[Tensor]),
            // Borrowed like `Tensor?`, so a call reads `x.index(&[None, Some(&i)])`.
            ArgKind::OptTensorList => quote!(&[Option<&Tensor>]),
            ArgKind::Scalar => quote!(impl Into<Scalar>),
            ArgKind::OptScalar => quote!(Option<Scalar>),
            ArgKind::Int => quote!(i64),
            ArgKind::OptInt => quote!(Option<i64>),
            ArgKind::IntList => quote!(&[i64]),
            ArgKind::OptIntList if required_opt_list => quote!(&[i64]),
            ArgKind::OptIntList => quote!(Option<&[i64]>),
            ArgKind::BoolList => quote!(&[bool]),
            ArgKind::Bool => quote!(bool),
            ArgKind::OptBool => quote!(Option<bool>),
            ArgKind::Float => quote!(f64),
            ArgKind::OptFloat => quote!(Option<f64>),
            ArgKind::ScalarType => quote!(DType),
            ArgKind::OptScalarType => quote!(Option<DType>),
            ArgKind::Device => quote!(Device),
            ArgKind::OptDevice => quote!(Option<Device>),
            ArgKind::Str => quote!(&str),
            ArgKind::OptStr => quote!(Option<&str>),
        }
    }

    /// The type inside the generated code after normalisation (`Scalar` instead of
    /// `impl Into<Scalar>`); also the type a formula sees.
    pub fn inner_type(self) -> TokenStream {
        match self {
            ArgKind::Scalar => quote!(Scalar),
            other => other.param_type(false),
        }
    }

    /// The owned type a backward node stores for a non-tensor argument.
    pub fn owned_type(self) -> TokenStream {
        match self {
            ArgKind::IntList => quote!(Vec<i64>),
            ArgKind::OptIntList => quote!(Option<Vec<i64>>),
            ArgKind::BoolList => quote!(Vec<bool>),
            ArgKind::Str => quote!(String),
            ArgKind::OptStr => quote!(Option<String>),
            other => other.inner_type(),
        }
    }

    /// Converts a normalised local `name` into the owned field value.
    pub fn to_owned(self, name: &syn::Ident) -> TokenStream {
        match self {
            ArgKind::IntList | ArgKind::BoolList => quote!(#name.to_vec()),
            ArgKind::OptIntList => quote!(#name.map(|d| d.to_vec())),
            ArgKind::Str => quote!(#name.to_string()),
            ArgKind::OptStr => quote!(#name.map(|s| s.to_string())),
            _ => quote!(#name),
        }
    }

    /// Borrows the node's field `self.name` as the formula-visible local type.
    pub fn from_field(self, name: &syn::Ident) -> TokenStream {
        match self {
            ArgKind::IntList | ArgKind::BoolList => quote!(self.#name.as_slice()),
            ArgKind::OptIntList => quote!(self.#name.as_deref()),
            ArgKind::Str => quote!(self.#name.as_str()),
            ArgKind::OptStr => quote!(self.#name.as_deref()),
            _ => quote!(self.#name),
        }
    }

    /// True for `T?` kinds, whose default may be `None`.
    pub fn is_optional(self) -> bool {
        matches!(
            self,
            ArgKind::OptTensor
                | ArgKind::OptScalar
                | ArgKind::OptInt
                | ArgKind::OptIntList
                | ArgKind::OptBool
                | ArgKind::OptFloat
                | ArgKind::OptScalarType
                | ArgKind::OptDevice
        )
    }

    /// The type a CPU kernel, meta or check function, or a CUDA launcher, receives for a
    /// non-tensor argument (`kernel_value` in `gen::api` makes it): a `Scalar` arrives as
    /// `f64`, everything else as its normalised type.
    pub fn kernel_type(self) -> TokenStream {
        match self {
            ArgKind::Scalar => quote!(f64),
            ArgKind::OptScalar => quote!(Option<f64>),
            other => other.inner_type(),
        }
    }

    /// A schema default as a Rust expression of the inner type, or what is wrong with it.
    pub fn default_expr(self, default: &str) -> Result<TokenStream, String> {
        let bad = |expected: &str| format!("default '{default}' is not valid here: {expected}");
        if default == "None" {
            if self.is_optional() {
                return Ok(quote!(None));
            }
            return Err(bad(
                "None is a default only for an optional type (write the type with `?`)",
            ));
        }
        Ok(match self {
            ArgKind::Bool | ArgKind::OptBool => {
                let b = match default {
                    "True" => true,
                    "False" => false,
                    _ => return Err(bad("expected True or False")),
                };
                if self == ArgKind::Bool {
                    quote!(#b)
                } else {
                    quote!(Some(#b))
                }
            }
            ArgKind::Int | ArgKind::OptInt => {
                // PyTorch's `at::Reduction` constants, as loss schemas write them.
                let v: i64 = match default {
                    "Mean" => 1,
                    "Sum" => 2,
                    _ => default.parse().map_err(|_| {
                        bad("expected an integer, or Mean / Sum (PyTorch's reduction constants)")
                    })?,
                };
                if self == ArgKind::Int {
                    quote!(#v)
                } else {
                    quote!(Some(#v))
                }
            }
            ArgKind::Float | ArgKind::OptFloat => {
                let v: f64 = default
                    .parse()
                    .map_err(|_| bad("expected a number such as 0.5 or 1e-05"))?;
                if self == ArgKind::Float {
                    quote!(#v)
                } else {
                    quote!(Some(#v))
                }
            }
            ArgKind::Scalar | ArgKind::OptScalar => {
                let s = if let Ok(i) = default.parse::<i64>() {
                    quote!(Scalar::Int(#i))
                } else if let Ok(f) = default.parse::<f64>() {
                    quote!(Scalar::Float(#f))
                } else {
                    return Err(bad("expected a number such as 1 or 0.5"));
                };
                if self == ArgKind::Scalar {
                    s
                } else {
                    quote!(Some(#s))
                }
            }
            ArgKind::IntList | ArgKind::OptIntList => {
                let inner = default.trim_start_matches('[').trim_end_matches(']');
                let vals: Result<Vec<i64>, _> = inner
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.trim().parse::<i64>())
                    .collect();
                let vals = vals.map_err(|_| bad("expected a list of integers such as [0,1]"))?;
                if self == ArgKind::IntList {
                    quote!(&[#(#vals),*])
                } else {
                    quote!(Some(&[#(#vals),*]))
                }
            }
            ArgKind::BoolList => {
                let inner = default.trim_start_matches('[').trim_end_matches(']');
                let vals: Result<Vec<bool>, _> = inner
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| match s.trim() {
                        "True" => Ok(true),
                        "False" => Ok(false),
                        _ => Err(()),
                    })
                    .collect();
                let vals =
                    vals.map_err(|_| bad("expected a list of booleans such as [True,False]"))?;
                quote!(&[#(#vals),*])
            }
            ArgKind::Str => {
                let s = default.trim_matches(|c| c == '\'' || c == '"');
                quote!(#s)
            }
            _ => return Err(bad("only None is supported as a default for this type")),
        })
    }
}

/// The Rust name of a schema name (`self` → `self_`, keywords get a trailing `_`).
pub fn ident_str(name: &str) -> String {
    match name {
        "self" | "type" | "where" | "in" | "fn" | "match" | "ref" | "move" => format!("{name}_"),
        _ => name.to_string(),
    }
}

/// A Rust identifier for a schema name (see [`ident_str`]); `model::build` has checked that
/// every argument's name makes one.
pub fn ident(name: &str) -> syn::Ident {
    format_ident!("{}", ident_str(name))
}
