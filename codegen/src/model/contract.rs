//! The kernel contract: for each function an op's YAML entry names, the parameters the
//! generated code passes to it, derived from the op exactly as `gen::api` writes the
//! call, and the check of a signature read from source ([`FnSig`]) against them. A kernel
//! that does not fit its schema is then a YAML error on the op's line, not a rustc error in
//! `OUT_DIR/ops/<op>.rs`.
//!
//! Types are compared in [`canonical_type`] form: `Src<'_, E>` is `Src<T>`, `crate::DType`
//! is `DType`.

use super::dtype::{DType, Fixed};
use super::op::{Op, Promote};
use crate::kernels_index::{canonical_type, FnSig};
use crate::types::{ident_str, ArgKind};
use proc_macro2::TokenStream;

/// One parameter the generated code passes.
#[derive(Debug, Clone)]
pub struct Expected {
    /// The name a kernel would give it (`self_`, `dim`, `out`).
    pub name: String,
    /// Its type, canonical.
    pub ty: String,
    /// Other types the call compiles with too (`&Vec<Tensor>` for `&[Tensor]`).
    pub also: Vec<String>,
    /// What it carries, for messages: "schema argument `int dim`", "output `result`".
    pub what: String,
}

/// What the generated code needs of a function's return type.
#[derive(Debug, Clone)]
pub enum Ret {
    /// Exactly this type (canonical).
    Exactly(String),
    /// `Result<this>` or `Result<this, E>`.
    ResultOf(String),
    /// Shown in messages as the type to write, not checked (the kernels crate's `KResult`
    /// has aliases a canonical form cannot see through).
    Unchecked(&'static str),
}

/// A call the generated code makes to a function the YAML names.
#[derive(Debug, Clone)]
pub struct Call {
    /// "CPU kernel", "meta function", "check function", "CUDA launcher", ...
    pub role: &'static str,
    /// `reduce::sum_dim`.
    pub path: String,
    pub params: Vec<Expected>,
    /// `Some(n)`: the call names `n` type parameters (`kernel::<T>(..)`).
    pub type_params: Option<usize>,
    pub ret: Ret,
}

/// The canonical form of a type the generator writes.
fn canon(ts: TokenStream) -> String {
    let ty: syn::Type = syn::parse2(ts).expect("the generator's own types parse");
    canonical_type(&ty, &[])
}

fn expected(name: &str, ty: String, what: String) -> Expected {
    Expected {
        name: name.to_string(),
        ty,
        also: vec![],
        what,
    }
}

/// "schema argument `int dim`" for argument `name` of `op`.
fn argument(op: &Op, name: &str) -> String {
    match op.schema.arguments.iter().find(|a| a.name == name) {
        Some(a) => format!("schema argument `{a}`"),
        None => format!("schema argument `{name}`"),
    }
}

/// Every output: `(name, element type for a kernel's `Dst<_>`)`.
fn outputs(op: &Op) -> Vec<(String, String)> {
    op.outputs()
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let elem = match op.output_fixed_dtype(i) {
                Some(d) => fixed_canon(d),
                None => "T".to_string(),
            };
            (name, elem)
        })
        .collect()
}

/// The element type a structured kernel's `Src<_>` has for tensor argument `name`.
fn src_elem(op: &Op, name: &str) -> String {
    match op.fixed.get(name) {
        Some(d) => fixed_canon(*d),
        None => "T".to_string(),
    }
}

/// The canonical element type of a `fixed:` dtype: `i64`, or `T::Compute` for `opmath`.
fn fixed_canon(d: Fixed) -> String {
    match d {
        Fixed::Opmath => "T::Compute".to_string(),
        Fixed::DType(d) => canon(d.rust_type()),
    }
}

/// A pointwise op's scalar function: `kernel(x, y, alpha)` per element, each tensor operand
/// in the compute type `T` (or its fixed dtype), `Scalar` and `float` arguments converted to
/// `T`, returning `T` (`bool` for `promote: comparison`).
pub fn pointwise_kernel(op: &Op, module: &str, kernel: &str) -> Call {
    let params = op
        .args()
        .iter()
        .map(|a| {
            let ty = match a.kind {
                ArgKind::Tensor => src_elem(op, &a.name),
                ArgKind::Scalar | ArgKind::Float => "T".to_string(),
                ArgKind::OptScalar => "Option<T>".to_string(),
                other => canon(other.kernel_type()),
            };
            expected(&ident_str(&a.name), ty, argument(op, &a.name))
        })
        .collect();
    let ret = if op.promote == Promote::Comparison {
        "bool"
    } else {
        "T"
    };
    Call {
        role: "CPU kernel",
        path: format!("{module}::{kernel}"),
        params,
        type_params: None,
        ret: Ret::Exactly(ret.to_string()),
    }
}

/// A pointwise op's `vectorized:` slice kernel for element type `elem` (`f32`, `f64`):
/// `(self_: &[elem], out: &mut [elem], <non-tensor arguments>)`, or in place
/// `(self_: &mut [elem], <non-tensor arguments>)`, the non-tensor arguments as the scalar
/// kernel takes them with `T` = `elem`, returning nothing.
pub fn slice_kernel(op: &Op, module: &str, name: &str, elem: DType, inplace: bool) -> Call {
    let args = op.args();
    let input = args
        .iter()
        .find(|a| a.kind == ArgKind::Tensor)
        .map_or("self_".to_string(), |a| ident_str(&a.name));
    let mut params = if inplace {
        vec![expected(
            &input,
            format!("&mut [{elem}]"),
            "the input chunk, overwritten by the result".into(),
        )]
    } else {
        vec![
            expected(
                &input,
                format!("&[{elem}]"),
                "the input, a chunk at a time".into(),
            ),
            expected(
                "out",
                format!("&mut [{elem}]"),
                "the output chunk, as long as the input".into(),
            ),
        ]
    };
    params.extend(args.iter().filter(|a| !a.kind.is_tensor()).map(|a| {
        let ty = match a.kind {
            ArgKind::Scalar | ArgKind::Float => elem.to_string(),
            ArgKind::OptScalar => format!("Option<{elem}>"),
            other => canon(other.kernel_type()),
        };
        expected(&ident_str(&a.name), ty, argument(op, &a.name))
    }));
    Call {
        role: if inplace {
            "vectorized in-place slice kernel"
        } else {
            "vectorized slice kernel"
        },
        path: format!("{module}::{name}"),
        params,
        type_params: None,
        ret: Ret::Exactly("()".to_string()),
    }
}

/// A pointwise or structured op's `<kernel>_check(compute, <non-tensor arguments>)`.
pub fn kernel_check(op: &Op, module: &str, kernel: &str) -> Call {
    let mut params = vec![expected(
        "compute",
        "DType".into(),
        "the dtype the op computes in".into(),
    )];
    params.extend(op.args().iter().filter(|a| !a.kind.is_tensor()).map(|a| {
        expected(
            &ident_str(&a.name),
            canon(a.kind.kernel_type()),
            argument(op, &a.name),
        )
    }));
    Call {
        role: "check function",
        path: format!("{module}::{kernel}_check"),
        params,
        type_params: None,
        ret: Ret::Unchecked("KResult<()>"),
    }
}

/// A structured kernel: `kernel::<T>(<arguments>, <outputs>)`, tensors as `Src<T>` views
/// (`Option<Src<T>>` for a `Tensor?`), outputs as `Dst<T>` (or their fixed dtype).
pub fn structured_kernel(op: &Op, module: &str, kernel: &str) -> Call {
    let mut params: Vec<Expected> = op
        .args()
        .iter()
        .map(|a| {
            let what = argument(op, &a.name);
            let name = ident_str(&a.name);
            match a.kind {
                ArgKind::Tensor => expected(&name, format!("Src<{}>", src_elem(op, &a.name)), what),
                ArgKind::OptTensor => expected(
                    &name,
                    format!("Option<Src<{}>>", src_elem(op, &a.name)),
                    what,
                ),
                ArgKind::TensorList => Expected {
                    also: vec!["&Vec<Src<T>>".into()],
                    ..expected(&name, "&[Src<T>]".into(), what)
                },
                other => expected(&name, canon(other.kernel_type()), what),
            }
        })
        .collect();
    params.extend(
        outputs(op).into_iter().map(|(name, elem)| {
            expected(&name, format!("Dst<{elem}>"), format!("output `{name}`"))
        }),
    );
    Call {
        role: "CPU kernel",
        path: format!("{module}::{kernel}"),
        params,
        type_params: Some(1),
        ret: Ret::Unchecked("KResult<()>"),
    }
}

/// A structured kernel's `<kernel>_meta(<arguments>)`: tensors as their shapes, returning the
/// output shapes.
pub fn structured_meta(op: &Op, module: &str, kernel: &str) -> Call {
    let params = op
        .args()
        .iter()
        .map(|a| {
            let what = argument(op, &a.name);
            let name = ident_str(&a.name);
            match a.kind {
                ArgKind::Tensor => expected(&name, "&[usize]".into(), what),
                ArgKind::OptTensor => expected(&name, "Option<&[usize]>".into(), what),
                ArgKind::TensorList => Expected {
                    also: vec!["&Vec<&[usize]>".into()],
                    ..expected(&name, "&[&[usize]]".into(), what)
                },
                other => expected(&name, canon(other.kernel_type()), what),
            }
        })
        .collect();
    Call {
        role: "meta function",
        path: format!("{module}::{kernel}_meta"),
        params,
        type_params: None,
        ret: Ret::Unchecked("KResult<Vec<Vec<usize>>>"),
    }
}

/// A structured op's CUDA launcher in `src/backends/cuda/ops/<module>.rs`: `(op name, <arguments>,
/// <outputs>)`, tensors as `&Tensor`.
pub fn cuda_launcher(op: &Op, module: &str, name: &str) -> Call {
    let mut params = vec![expected(
        "op",
        "&str".into(),
        "the op's name, for error messages".into(),
    )];
    params.extend(op.args().iter().map(|a| {
        let what = argument(op, &a.name);
        let pname = ident_str(&a.name);
        match a.kind {
            ArgKind::Tensor => expected(&pname, "&Tensor".into(), what),
            ArgKind::OptTensor => expected(&pname, "Option<&Tensor>".into(), what),
            ArgKind::TensorList => Expected {
                also: vec!["&Vec<Tensor>".into()],
                ..expected(&pname, "&[Tensor]".into(), what)
            },
            other => expected(&pname, canon(other.kernel_type()), what),
        }
    }));
    params.extend(
        outputs(op)
            .into_iter()
            .map(|(n, _)| expected(&n, "&Tensor".into(), format!("output `{n}`"))),
    );
    Call {
        role: "CUDA launcher",
        path: format!("{module}::{name}"),
        params,
        type_params: None,
        ret: Ret::Unchecked("Result<()>"),
    }
}

/// A composite or explicit op's function in `src/ops/`: the normalised arguments (`&Tensor`,
/// `Scalar`, `i64`, ...), returning `Result<Tensor>` (a tuple for several outputs, a
/// `Vec<Tensor>` for a `Tensor[]` return).
pub fn rust_op(op: &Op, role: &'static str, path: &str) -> Call {
    let params = op
        .args()
        .iter()
        .map(|a| {
            expected(
                &ident_str(&a.name),
                canon(a.kind.inner_type()),
                argument(op, &a.name),
            )
        })
        .collect();
    let ret = match op.outputs().len() {
        _ if op.returns_list() => "Vec<Tensor>".to_string(),
        1 => "Tensor".to_string(),
        n => format!("({})", vec!["Tensor"; n].join(", ")),
    };
    Call {
        role,
        path: path.to_string(),
        params,
        type_params: None,
        ret: Ret::ResultOf(ret),
    }
}

/// `keepdim` for `_keepdim`, `self` for `self_`: the part of a name that says what it is.
fn stem(name: &str) -> &str {
    name.trim_matches('_')
}

fn render(name: &str, generics: &str, params: &[(String, String)], ret: &str) -> String {
    let ps: Vec<String> = params.iter().map(|(n, t)| format!("{n}: {t}")).collect();
    let ret = if ret == "()" {
        String::new()
    } else {
        format!(" -> {ret}")
    };
    format!("fn {name}{generics}({}){ret}", ps.join(", "))
}

impl Call {
    fn fn_name(&self) -> &str {
        self.path.rsplit("::").next().unwrap_or(&self.path)
    }

    /// The signature the generated code can call, as a kernel author would write it.
    pub fn expected_signature(&self) -> String {
        let generics = match self.type_params {
            Some(1) => "<T>".to_string(),
            Some(n) => format!("<{}>", vec!["_"; n].join(", ")),
            None if self.params.iter().any(|p| mentions_t(&p.ty))
                || matches!(&self.ret, Ret::Exactly(t) if mentions_t(t)) =>
            {
                "<T>".to_string()
            }
            None => String::new(),
        };
        let params: Vec<(String, String)> = self
            .params
            .iter()
            .map(|p| (p.name.clone(), p.ty.clone()))
            .collect();
        let ret = match &self.ret {
            Ret::Exactly(t) => t.clone(),
            Ret::ResultOf(t) => format!("Result<{t}>"),
            Ret::Unchecked(t) => t.to_string(),
        };
        render(self.fn_name(), &generics, &params, &ret)
    }

    /// Checks `sig` against the call; the error says what differs, and shows the expected
    /// and the found signature.
    pub fn check(&self, sig: &FnSig) -> Result<(), String> {
        let problem = self.first_problem(sig);
        let Some(problem) = problem else {
            return Ok(());
        };
        let found_generics = match sig.generics.len() {
            0 => String::new(),
            1 => "<T>".to_string(),
            _ => format!("<{}>", sig.generics.join(", ")),
        };
        let found_params: Vec<(String, String)> = sig
            .params
            .iter()
            .map(|p| (p.name.clone(), p.ty.clone()))
            .collect();
        Err(format!(
            "{} `{}` ({}) does not fit the schema: {problem}\n  expected: {}\n  found:    {}",
            self.role,
            self.path,
            sig.location,
            self.expected_signature(),
            render(self.fn_name(), &found_generics, &found_params, &sig.ret),
        ))
    }

    fn first_problem(&self, sig: &FnSig) -> Option<String> {
        if !sig.public {
            return Some(
                "it is private; the generated code calls it from another module, so make it `pub`"
                    .into(),
            );
        }
        if let Some(n) = self.type_params {
            if sig.generics.len() != n {
                return Some(format!(
                    "it has {} type parameter(s); the generated code calls it as `{}::<T>(..)` with the element type as its only one",
                    sig.generics.len(),
                    self.fn_name()
                ));
            }
        }
        if sig.params.len() != self.params.len() {
            let detail = if sig.params.len() > self.params.len() {
                let extra: Vec<String> = sig.params[self.params.len()..]
                    .iter()
                    .map(|p| format!("`{}: {}`", p.name, p.ty))
                    .collect();
                format!("; nothing is passed for {}", extra.join(", "))
            } else {
                let missing: Vec<String> = self.params[sig.params.len()..]
                    .iter()
                    .map(|p| format!("`{}: {}` ({})", p.name, p.ty, p.what))
                    .collect();
                format!("; missing {}", missing.join(", "))
            };
            return Some(format!(
                "it takes {} parameter(s), the generated code passes {}{detail}",
                sig.params.len(),
                self.params.len()
            ));
        }
        for (i, (p, e)) in sig.params.iter().zip(&self.params).enumerate() {
            if p.ty != e.ty && !e.also.contains(&p.ty) {
                return Some(format!(
                    "parameter {} `{}: {}` should be `{}: {}` ({})",
                    i + 1,
                    p.name,
                    p.ty,
                    e.name,
                    e.ty,
                    e.what
                ));
            }
        }
        // Same types in another order (two `i64` dims swapped): the names give it away.
        for (i, (p, e)) in sig.params.iter().zip(&self.params).enumerate() {
            if stem(&p.name) == stem(&e.name) {
                continue;
            }
            if let Some(j) = self
                .params
                .iter()
                .position(|other| stem(&other.name) == stem(&p.name))
            {
                return Some(format!(
                    "parameter {} is named `{}` but receives {}; `{}` is passed as parameter {}: the order differs from the schema",
                    i + 1,
                    p.name,
                    e.what,
                    self.params[j].name,
                    j + 1
                ));
            }
        }
        match &self.ret {
            Ret::Exactly(t) if &sig.ret != t => Some(format!(
                "it returns `{}`, the generated code needs `{t}`",
                sig.ret
            )),
            Ret::ResultOf(t) => {
                let ok = sig
                    .ret
                    .strip_prefix("Result<")
                    .and_then(|r| r.strip_prefix(t.as_str()))
                    .is_some_and(|rest| rest == ">" || rest.starts_with(", "));
                (!ok).then(|| {
                    format!(
                        "it returns `{}`, the generated code needs `Result<{t}>`",
                        sig.ret
                    )
                })
            }
            _ => None,
        }
    }
}

/// A function the OpInfo table names (a sample set or a reference): `params` as
/// `(name, canonical type, what)`, returning `ret`.
pub fn opinfo_fn(role: &'static str, path: &str, params: &[(&str, &str, &str)], ret: &str) -> Call {
    Call {
        role,
        path: path.to_string(),
        params: params
            .iter()
            .map(|(n, t, w)| expected(n, t.to_string(), w.to_string()))
            .collect(),
        type_params: None,
        ret: Ret::Exactly(ret.to_string()),
    }
}

/// True when canonical type `ty` mentions the element type parameter `T`.
fn mentions_t(ty: &str) -> bool {
    ty.split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|w| w == "T")
}
