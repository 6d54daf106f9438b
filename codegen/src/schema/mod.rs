//! Parser and printer for PyTorch's function-schema language.
//!
//! Every operator in kiln's `native_functions.yaml` is declared with a
//! schema string in the same language PyTorch uses, for example
//!
//! ```text
//! add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
//! ```
//!
//! [`FunctionSchema::parse`] turns such a string into a typed model and the
//! [`Display`](std::fmt::Display) implementations print the model back in
//! canonical form, so that for every valid schema written canonically
//! `FunctionSchema::parse(s)?.to_string() == s`.
//!
//! The grammar, informally:
//!
//! ```text
//! schema    := name ['.' overload] '(' [args] ')' ' -> ' returns
//! args      := arg (', ' arg)*          -- one bare '*' may appear in place of an arg
//! arg       := type ' ' ident ['=' default]
//! returns   := ret | '(' [ret (', ' ret)*] ')'
//! ret       := type [' ' ident]
//! type      := base ['(' alias ')'] ('[' [size] ']' | '?')*
//! alias     := set ['!'] [' -> ' set]   -- set: 'a', 'a|b' or '*'
//! ```
//!
//! Defaults are kept as the raw text that follows `=` (`None`, `1e-05`,
//! `[0,1]`, `"mean"`, `'none'`, `contiguous_format`, ...); brackets and
//! quoted strings inside a default are honoured when looking for the `,` or
//! `)` that ends it. The parser accepts extra whitespace between tokens but
//! prints the canonical spacing shown above. It never panics: every input
//! either parses or yields a [`SchemaError`] naming what is wrong and where.

mod parse;
#[cfg(test)]
mod tests;

use std::fmt;

/// A parsed operator schema such as
/// `max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSchema {
    /// The operator name without overload, e.g. `add` or `add_` (a trailing
    /// underscore marks the in-place variant).
    pub name: String,
    /// The overload name, e.g. `Tensor` in `add.Tensor`; `None` when absent.
    pub overload: Option<String>,
    /// The arguments in declaration order. Those written after the bare `*`
    /// have [`Argument::kwarg_only`] set.
    pub arguments: Vec<Argument>,
    /// The returned values, in order (empty for `-> ()`).
    pub returns: Vec<Return>,
    /// Whether the returns were written in parentheses, as in
    /// `-> (Tensor values, Tensor indices)` or `-> ()`.
    pub tuple_returns: bool,
}

/// One argument of a [`FunctionSchema`], e.g. `int[1]? dim` or `bool keepdim=False`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argument {
    /// The argument's type.
    pub ty: Type,
    /// The argument's name.
    pub name: String,
    /// The default value exactly as written after `=`, e.g. `None`, `-1`,
    /// `[0,1]` or `"mean"` (quotes included); `None` when there is no default.
    pub default: Option<String>,
    /// Whether the argument follows the bare `*` and so is keyword-only.
    pub kwarg_only: bool,
}

/// One returned value of a [`FunctionSchema`], e.g. `Tensor(a!) values`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Return {
    /// The returned value's type.
    pub ty: Type,
    /// The returned value's name, when one is given.
    pub name: Option<String>,
}

/// A type in the schema language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    /// `Tensor`, optionally with an alias annotation: `Tensor(a)`, `Tensor(a!)`, `Tensor(a -> *)`.
    Tensor {
        /// The alias annotation in parentheses, if any.
        alias: Option<Alias>,
    },
    /// `Scalar`: a number of any dtype.
    Scalar,
    /// `int`: a 64-bit integer.
    Int,
    /// `SymInt`: a possibly symbolic integer.
    SymInt,
    /// `float`: a double-precision float.
    Float,
    /// `bool`.
    Bool,
    /// `str`.
    Str,
    /// `ScalarType`: a dtype.
    ScalarType,
    /// `Layout`: a tensor layout (strided, sparse, ...).
    Layout,
    /// `Device`.
    Device,
    /// `Generator`: a random-number generator.
    Generator,
    /// `MemoryFormat`: e.g. `contiguous_format`.
    MemoryFormat,
    /// `Dimname`: a named dimension.
    Dimname,
    /// `Storage`: a tensor's storage (e.g. `set_.source_Storage`).
    Storage,
    /// `Stream`: a device stream (e.g. `record_stream`).
    Stream,
    /// `QScheme`: a quantization scheme.
    QScheme,
    /// `DeviceIndex`: the index of a device.
    DeviceIndex,
    /// `SymBool`: a possibly symbolic boolean.
    SymBool,
    /// A list: `int[]`, `int[2]`, `Tensor[]`, `Tensor(a)[]`, `Tensor?[]`.
    List {
        /// The element type.
        elem: Box<Type>,
        /// The fixed size written in the brackets, e.g. `2` in `int[2]`.
        size: Option<usize>,
    },
    /// An optional value: `int?`, `Tensor?`, `int[1]?`, `ScalarType?`.
    Optional(Box<Type>),
}

/// An alias annotation on a `Tensor` type, the part in parentheses of
/// `Tensor(a)`, `Tensor(a!)` or `Tensor(a -> *)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// The alias set, e.g. `a`; several sets are joined with `|` (`a|b`).
    pub set: String,
    /// Whether the value is written to (the `!`).
    pub is_write: bool,
    /// The alias set after the call, e.g. `*` in `Tensor(a -> *)`; `None` when absent.
    pub after: Option<String>,
}

/// Why a schema string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// What is wrong, e.g. `unknown type 'Tensr'`.
    pub message: String,
    /// The 1-based column (counted in characters) where the problem starts.
    pub column: usize,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for SchemaError {}

impl FunctionSchema {
    /// Whether this is an in-place operator, i.e. its name ends with `_`
    /// (as in `add_`). Dunder names follow Python instead: the augmented
    /// assignments such as `__iand__` are in-place, `__and__` is not.
    pub fn is_inplace(&self) -> bool {
        match self
            .name
            .strip_prefix("__")
            .and_then(|n| n.strip_suffix("__"))
        {
            Some(dunder) => dunder
                .strip_prefix('i')
                .is_some_and(|op| AUGMENTED_ASSIGNMENT_OPS.contains(&op)),
            None => self.name.ends_with('_'),
        }
    }

    /// Whether this is an out= variant: it has a keyword-only argument whose
    /// Tensor alias annotation is a write (`*, Tensor(a!) out`).
    pub fn is_out(&self) -> bool {
        self.out_arguments().next().is_some()
    }

    /// The out= arguments: keyword-only arguments whose type is written to.
    pub fn out_arguments(&self) -> impl Iterator<Item = &Argument> {
        self.arguments
            .iter()
            .filter(|a| a.kwarg_only && a.is_write())
    }

    /// The full name, `name.overload` or just `name` when there is no overload.
    pub fn full_name(&self) -> String {
        match &self.overload {
            Some(overload) => format!("{}.{}", self.name, overload),
            None => self.name.clone(),
        }
    }
}

impl Argument {
    /// Whether the argument's Tensor alias annotation is a write (`Tensor(a!)`,
    /// also through lists and optionals such as `Tensor(a!)[]`).
    pub fn is_write(&self) -> bool {
        self.ty.alias().is_some_and(|a| a.is_write)
    }

    /// Whether this is an `out=` argument: keyword-only and written to. A positional
    /// argument written to is an input the op mutates (`_amp_update_scale_`'s
    /// `Tensor(b!) growth_tracker`).
    pub fn is_out(&self) -> bool {
        self.kwarg_only && self.is_write()
    }
}

impl Type {
    /// Whether this is a Tensor or holds Tensors: `Tensor`, `Tensor?`,
    /// `Tensor[]`, `Tensor?[]` and so on.
    pub fn is_tensor_like(&self) -> bool {
        match self {
            Type::Tensor { .. } => true,
            Type::List { elem, .. } => elem.is_tensor_like(),
            Type::Optional(inner) => inner.is_tensor_like(),
            _ => false,
        }
    }

    /// The Tensor alias annotation, looking through lists and optionals.
    pub fn alias(&self) -> Option<&Alias> {
        match self {
            Type::Tensor { alias } => alias.as_ref(),
            Type::List { elem, .. } => elem.alias(),
            Type::Optional(inner) => inner.alias(),
            _ => None,
        }
    }

    /// Whether this is an optional type (`T?`).
    pub fn is_optional(&self) -> bool {
        matches!(self, Type::Optional(_))
    }

    /// The type named by a base-type keyword such as `int` or `Tensor`.
    fn from_base_name(name: &str) -> Option<Type> {
        Some(match name {
            "Tensor" => Type::Tensor { alias: None },
            "Scalar" => Type::Scalar,
            "int" => Type::Int,
            "SymInt" => Type::SymInt,
            "float" => Type::Float,
            "bool" => Type::Bool,
            "str" => Type::Str,
            "ScalarType" => Type::ScalarType,
            "Layout" => Type::Layout,
            "Device" => Type::Device,
            "Generator" => Type::Generator,
            "MemoryFormat" => Type::MemoryFormat,
            "Dimname" => Type::Dimname,
            "Storage" => Type::Storage,
            "Stream" => Type::Stream,
            "QScheme" => Type::QScheme,
            "DeviceIndex" => Type::DeviceIndex,
            "SymBool" => Type::SymBool,
            _ => return None,
        })
    }
}

impl fmt::Display for FunctionSchema {
    /// Prints the canonical form. Returns are parenthesised when
    /// `tuple_returns` is set or when there is not exactly one return.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(overload) = &self.overload {
            write!(f, ".{overload}")?;
        }
        f.write_str("(")?;
        let mut kwarg_marker_written = false;
        for (i, arg) in self.arguments.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if arg.kwarg_only && !kwarg_marker_written {
                f.write_str("*, ")?;
                kwarg_marker_written = true;
            }
            write!(f, "{arg}")?;
        }
        f.write_str(") -> ")?;
        if self.tuple_returns || self.returns.len() != 1 {
            f.write_str("(")?;
            for (i, ret) in self.returns.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{ret}")?;
            }
            f.write_str(")")
        } else {
            self.returns.iter().try_for_each(|ret| write!(f, "{ret}"))
        }
    }
}

impl fmt::Display for Argument {
    /// Prints `type name` or `type name=default` (the `*` marker belongs to
    /// the schema, not the argument).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.ty, self.name)?;
        if let Some(default) = &self.default {
            write!(f, "={default}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Return {
    /// Prints `type` or `type name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ty)?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Type {
    /// Prints the type as written in schemas, e.g. `Tensor(a!)`, `int[1]?`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor { alias: None } => f.write_str("Tensor"),
            Type::Tensor { alias: Some(alias) } => write!(f, "Tensor({alias})"),
            Type::Scalar => f.write_str("Scalar"),
            Type::Int => f.write_str("int"),
            Type::SymInt => f.write_str("SymInt"),
            Type::Float => f.write_str("float"),
            Type::Bool => f.write_str("bool"),
            Type::Str => f.write_str("str"),
            Type::ScalarType => f.write_str("ScalarType"),
            Type::Layout => f.write_str("Layout"),
            Type::Device => f.write_str("Device"),
            Type::Generator => f.write_str("Generator"),
            Type::MemoryFormat => f.write_str("MemoryFormat"),
            Type::Dimname => f.write_str("Dimname"),
            Type::Storage => f.write_str("Storage"),
            Type::Stream => f.write_str("Stream"),
            Type::QScheme => f.write_str("QScheme"),
            Type::DeviceIndex => f.write_str("DeviceIndex"),
            Type::SymBool => f.write_str("SymBool"),
            Type::List { elem, size: None } => write!(f, "{elem}[]"),
            Type::List {
                elem,
                size: Some(n),
            } => write!(f, "{elem}[{n}]"),
            Type::Optional(inner) => write!(f, "{inner}?"),
        }
    }
}

impl fmt::Display for Alias {
    /// Prints the annotation without parentheses: `a`, `a!`, `a -> *`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.set)?;
        if self.is_write {
            f.write_str("!")?;
        }
        if let Some(after) = &self.after {
            write!(f, " -> {after}")?;
        }
        Ok(())
    }
}

/// The operators whose dunder methods have an in-place `__i<op>__` form.
const AUGMENTED_ASSIGNMENT_OPS: &[&str] = &[
    "add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or",
];
