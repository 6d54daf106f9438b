//! Backward formulas: parse with `syn`, find which names a formula reads, and rewrite it so
//! the node saves only those — metadata such as `self.sizes()` instead of the tensor.

use std::collections::BTreeSet;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

/// Metadata methods a formula may call on a tensor input without saving the tensor.
pub const META_METHODS: [&str; 7] = [
    "sizes",
    "strides",
    "device",
    "storage_offset",
    "dtype",
    "dim",
    "numel",
];

/// Methods of the non-tensor values formulas handle (`Option`, the `Vec` an optional tensor is
/// saved as, slices, iterators), which a formula may call besides `Tensor`'s: what
/// derivatives.yaml uses (`clone`, `len`, `first`) and their usual companions; add one when a
/// formula needs it. Only names are checked: types are rustc's business.
pub const STD_METHODS: [&str; 30] = [
    // Clone, slices, Vec
    "clone",
    "len",
    "is_empty",
    "first",
    "last",
    "get",
    "to_vec",
    "as_slice",
    "contains",
    // Option
    "unwrap",
    "expect",
    "unwrap_or",
    "unwrap_or_else",
    "unwrap_or_default",
    "is_some",
    "is_none",
    "as_ref",
    "as_deref",
    "cloned",
    "copied",
    "ok_or",
    // iterators
    "iter",
    "into_iter",
    "map",
    "zip",
    "enumerate",
    "collect",
    "rev",
    "all",
    "any",
];

/// What a formula calls, as written: checked by the model against the API (a misspelt
/// method is a YAML error with its line, not a rustc error in generated code).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Call {
    /// `x.name(..)`.
    Method(String),
    /// `name(..)`: a backward helper or a generated function, in scope in generated code.
    Function(String),
    /// `crate::name(..)`.
    Crate(String),
    /// `Tensor::name(..)`.
    Tensor(String),
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Call::Method(n) => write!(f, ".{n}(..)"),
            Call::Function(n) => write!(f, "{n}(..)"),
            Call::Crate(n) => write!(f, "crate::{n}(..)"),
            Call::Tensor(n) => write!(f, "Tensor::{n}(..)"),
        }
    }
}

/// The calls in `expr`, in source order. Calls through other paths (`Scalar::from`,
/// `std::mem::take`), of tuple structs and variants (`Some(..)`) and inside macros are
/// left to rustc.
pub fn calls(expr: &syn::Expr) -> Vec<Call> {
    struct Calls(Vec<Call>);
    impl<'ast> Visit<'ast> for Calls {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            self.visit_expr(&m.receiver);
            self.0.push(Call::Method(m.method.to_string()));
            m.args.iter().for_each(|a| self.visit_expr(a));
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                let plain = p.qself.is_none() && p.path.leading_colon.is_none();
                let segs: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                let call = match segs.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                    [n] if plain && n.starts_with(|c: char| c.is_lowercase() || c == '_') => {
                        Some(Call::Function(n.into()))
                    }
                    ["crate", n] if plain => Some(Call::Crate(n.into())),
                    ["Tensor", n] if plain => Some(Call::Tensor(n.into())),
                    _ => None,
                };
                self.0.extend(call);
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    let mut c = Calls(Vec::new());
    c.visit_expr(expr);
    c.0
}

/// What a formula reads.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Uses {
    /// Inputs or outputs read as whole tensors / values.
    pub names: BTreeSet<String>,
    /// `(input, method)` metadata reads, e.g. `("self", "sizes")`.
    pub metas: BTreeSet<(String, String)>,
}

/// A parsed, rewritten formula.
#[derive(Debug, Clone)]
pub struct Formula {
    /// The key as written: the input this formula computes the gradient of, or several
    /// (`input, weight, bias`) whose gradients it returns together as a tuple of
    /// `Option<Tensor>` (`None`: no gradient flows there).
    pub input: String,
    /// The inputs the key names, in its order.
    pub inputs: Vec<String>,
    /// The formula as written.
    pub text: String,
    /// Its line in derivatives.yaml.
    pub line: usize,
    /// The rewritten expression (`self` → `self_`, `x.sizes()` → `x_sizes`).
    pub expr: syn::Expr,
    pub uses: Uses,
}

impl Formula {
    /// Whether the formula reads `grads` (every output's gradient) rather than `grad`.
    pub fn uses_grads(&self) -> bool {
        self.mentions("grads")
    }

    /// Whether the formula reads `grad_input_mask`: which of its inputs need a gradient, as
    /// PyTorch's formulas pass it to backward kernels as their `output_mask`.
    pub fn uses_grad_input_mask(&self) -> bool {
        self.mentions("grad_input_mask")
    }

    /// Whether the plain name `name` appears in the formula.
    fn mentions(&self, name: &str) -> bool {
        let mut found = false;
        let mut check = |e: &syn::Expr| {
            if single_ident(e).as_deref() == Some(name) {
                found = true;
            }
        };
        struct Find<'f, F: FnMut(&syn::Expr)>(&'f mut F);
        impl<'ast, F: FnMut(&syn::Expr)> Visit<'ast> for Find<'_, F> {
            fn visit_expr(&mut self, e: &'ast syn::Expr) {
                (self.0)(e);
                syn::visit::visit_expr(self, e);
            }
        }
        Find(&mut check).visit_expr(&self.expr);
        found
    }
}

struct Collect<'a> {
    known: &'a BTreeSet<String>,
    uses: Uses,
    unknown: Vec<String>,
}

fn single_ident(e: &syn::Expr) -> Option<String> {
    if let syn::Expr::Path(p) = e {
        if p.qself.is_none() && p.path.segments.len() == 1 && p.path.leading_colon.is_none() {
            return Some(p.path.segments[0].ident.to_string());
        }
    }
    None
}

impl<'ast> Visit<'ast> for Collect<'_> {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if let Some(recv) = single_ident(&m.receiver) {
            let method = m.method.to_string();
            if m.args.is_empty()
                && META_METHODS.contains(&method.as_str())
                && self.known.contains(&recv)
            {
                self.uses.metas.insert((recv, method));
                return;
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        // The callee is a function name, not a value the formula reads.
        if single_ident(&c.func).is_none() {
            self.visit_expr(&c.func);
        }
        for a in &c.args {
            self.visit_expr(a);
        }
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(name) = single_ident(&syn::Expr::Path(p.clone())) {
            let lowercase = name
                .chars()
                .next()
                .is_some_and(|c| c.is_lowercase() || c == '_');
            if self.known.contains(&name) {
                self.uses.names.insert(name);
            } else if lowercase && !["grad", "grads", "grad_input_mask"].contains(&name.as_str()) {
                self.unknown.push(name);
            }
        }
    }
}

struct Rewrite<'a> {
    known: &'a BTreeSet<String>,
}

impl VisitMut for Rewrite<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::MethodCall(m) = e {
            if let Some(recv) = single_ident(&m.receiver) {
                let method = m.method.to_string();
                if m.args.is_empty()
                    && META_METHODS.contains(&method.as_str())
                    && self.known.contains(&recv)
                {
                    let id = quote::format_ident!("{}_{}", recv, method);
                    *e = syn::parse_quote!(#id);
                    return;
                }
            }
        }
        if let Some(name) = single_ident(e) {
            let id = crate::types::ident(&name);
            *e = syn::parse_quote!(#id);
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Parses `text` as the gradient formula for `input`. `known` are the names a formula may
/// read besides `grad`: the op's arguments and named outputs.
pub fn parse(
    input: &str,
    text: &str,
    line: usize,
    known: &BTreeSet<String>,
) -> Result<Formula, String> {
    let expr: syn::Expr = syn::parse_str(text)
        .map_err(|e| format!("formula for '{input}' is not a Rust expression: {e}"))?;
    let mut c = Collect {
        known,
        uses: Uses::default(),
        unknown: vec![],
    };
    c.visit_expr(&expr);
    if let Some(u) = c.unknown.first() {
        return Err(format!(
            "formula for '{input}' names '{u}', which is not an argument or output of the operator (known: grad, {})",
            known.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut rewritten = expr;
    Rewrite { known }.visit_expr_mut(&mut rewritten);
    Ok(Formula {
        input: input.to_string(),
        inputs: input.split(',').map(|n| n.trim().to_string()).collect(),
        text: text.to_string(),
        line,
        expr: rewritten,
        uses: c.uses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn metadata_reads_do_not_save_the_tensor() {
        let f = parse(
            "self",
            "sum_backward(&grad, self.sizes(), dim, keepdim)?",
            1,
            &known(&["self", "dim", "keepdim"]),
        )
        .unwrap();
        assert!(!f.uses.names.contains("self"));
        assert!(f.uses.metas.contains(&("self".into(), "sizes".into())));
        assert!(f.uses.names.contains("dim"));
    }

    #[test]
    fn self_is_renamed() {
        let f = parse("other", "grad.mul(&self)?", 1, &known(&["self", "other"])).unwrap();
        let e = &f.expr;
        assert_eq!(
            quote::quote!(#e).to_string().replace(' ', ""),
            "grad.mul(&self_)?"
        );
    }

    #[test]
    fn calls_are_listed_in_source_order() {
        let e: syn::Expr = syn::parse_str(
            "crate::f(&grad.mul(&x)?, Tensor::zeros(&[1])?, h(Some(1)), Scalar::from(1), vec![g(1)])",
        )
        .unwrap();
        assert_eq!(
            calls(&e),
            [
                Call::Crate("f".into()),
                Call::Method("mul".into()),
                Call::Tensor("zeros".into()),
                Call::Function("h".into()),
            ]
        );
    }

    #[test]
    fn unknown_name_is_an_error() {
        let e = parse("self", "grad.mul(&othr)?", 1, &known(&["self", "other"])).unwrap_err();
        assert!(e.contains("names 'othr'"), "{e}");
    }
}
