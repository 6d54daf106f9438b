//! Which functions the YAML can name, and their signatures as written: CPU kernels
//! (`kernels/src/cpu/*.rs`), CUDA kernels (`__device__` fns of `kernels/cuda/*.cuh`, launchers
//! in `src/backends/cuda/ops/*.rs`), composite and explicit ops (`src/ops/*.rs`), and the OpInfo
//! sample sets and references (`tests/opinfo/samples.rs`, `tests/opinfo/refs.rs`), and what
//! derivatives.yaml formulas call ([`FormulaScope`]). Rust files are read with `syn`, so a
//! misspelt name or a kernel whose parameters do not fit its schema is a YAML error with a
//! line number, not a link error or a rustc error in generated code.

use crate::paths;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One parameter of an indexed function: its name and its type in canonical form (see
/// [`canonical_type`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub ty: String,
}

/// A function's signature as written in its source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FnSig {
    /// Where it is defined: `kernels/src/cpu/reduce.rs:281`.
    pub location: String,
    /// Its type parameters (`T` in `fn sum<T: Element>`), in order.
    pub generics: Vec<String>,
    pub params: Vec<Param>,
    /// The return type in canonical form; `()` when none is written.
    pub ret: String,
    /// `pub` or `pub(crate)`/`pub(super)`: callable from the generated code.
    pub public: bool,
}

/// One `__device__` declaration in a `.cuh` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFn {
    /// `kernels/cuda/unary.cuh:17`.
    pub location: String,
    /// Its parameter count, when the parameter list closes on the declaration's line.
    pub arity: Option<usize>,
}

/// The hand-written names a derivatives.yaml formula may call, beside the generated API
/// (which the model adds): a formula is compiled inside the generated code, so a misspelt
/// call would otherwise be a rustc error in `OUT_DIR`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FormulaScope {
    /// The `pub` / `pub(crate)` fns of the inherent `impl Tensor` blocks under `src/`
    /// (`sizes`, `zeros_like`, and associated fns such as `zeros`). Trait impls are left out:
    /// their traits are not in scope in the generated code.
    pub tensor_fns: BTreeSet<String>,
    /// The backward helpers (`pow_backward_scalar`): `pub` / `pub(crate)` fns of
    /// `src/ops/backward/*.rs` and the names its `mod.rs` re-exports.
    pub helpers: BTreeSet<String>,
    /// What `crate::<name>` reaches besides the generated functions: the fns and re-exported
    /// names of the crate root and of `ops` (`crate::no_grad`).
    pub crate_fns: BTreeSet<String>,
}

impl FormulaScope {
    /// Adds the hand-written `Tensor` fns of the Rust source `text` at `file`.
    pub fn add_tensor_source(&mut self, file: &str, text: &str) -> Result<(), String> {
        let ast = syn::parse_file(text).map_err(|e| syn_error(file, &e))?;
        tensor_impl_fns(&ast.items, &mut self.tensor_fns);
        Ok(())
    }

    /// Adds the helpers of a file of `src/ops/backward/`: its fns, and the names it
    /// re-exports (`mod.rs` brings some from beside their forward ops).
    pub fn add_helpers(&mut self, file: &str, text: &str) -> Result<(), String> {
        let ast = syn::parse_file(text).map_err(|e| syn_error(file, &e))?;
        for item in &ast.items {
            match item {
                syn::Item::Fn(f) if crate_visible(&f.vis) => {
                    self.helpers.insert(f.sig.ident.to_string());
                }
                syn::Item::Use(u) if crate_visible(&u.vis) => use_names(&u.tree, &mut self.helpers),
                _ => {}
            }
        }
        Ok(())
    }

    /// Adds the crate-root names of `src/lib.rs` or `src/ops/mod.rs`.
    pub fn add_crate_root(&mut self, file: &str, text: &str) -> Result<(), String> {
        let ast = syn::parse_file(text).map_err(|e| syn_error(file, &e))?;
        for item in &ast.items {
            match item {
                syn::Item::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                    self.crate_fns.insert(f.sig.ident.to_string());
                }
                syn::Item::Use(u) if matches!(u.vis, syn::Visibility::Public(_)) => {
                    use_names(&u.tree, &mut self.crate_fns)
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `pub` or `pub(crate)`: reachable from the generated code (in `crate::ops`) wherever the
/// item is defined. `pub(super)` and narrower are not, wherever they are re-exported.
fn crate_visible(vis: &syn::Visibility) -> bool {
    match vis {
        syn::Visibility::Public(_) => true,
        syn::Visibility::Restricted(r) => r.in_token.is_none() && r.path.is_ident("crate"),
        syn::Visibility::Inherited => false,
    }
}

/// The fns of the inherent `impl Tensor` blocks among `items` and their inline modules.
fn tensor_impl_fns(items: &[syn::Item], out: &mut BTreeSet<String>) {
    for item in items {
        match item {
            syn::Item::Impl(i) if i.trait_.is_none() && is_tensor(&i.self_ty) => {
                for f in &i.items {
                    if let syn::ImplItem::Fn(f) = f {
                        if crate_visible(&f.vis) {
                            out.insert(f.sig.ident.to_string());
                        }
                    }
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    tensor_impl_fns(inner, out);
                }
            }
            _ => {}
        }
    }
}

fn is_tensor(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Tensor"))
}

/// The names a `use` tree brings in by name (`a::{b, c as d}`: `b`, `d`); globs add none.
fn use_names(tree: &syn::UseTree, out: &mut BTreeSet<String>) {
    match tree {
        syn::UseTree::Path(p) => use_names(&p.tree, out),
        syn::UseTree::Name(n) => {
            out.insert(n.ident.to_string());
        }
        syn::UseTree::Rename(r) => {
            out.insert(r.rename.to_string());
        }
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_names(t, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// `fn name → module` for every public function in the CPU kernel modules, and for every
/// CUDA kernel: the `__device__` scalar functions of `kernels/cuda/<module>.cuh` (pointwise
/// ops) and the host launchers `pub fn` in `src/backends/cuda/ops/<module>.rs` (every other op); with
/// the signatures of those read from source. A name registered without a signature (as the
/// generator's own tests do) is resolved but its parameters are not checked; likewise
/// `rust_ops`, `samples` and `refs` are `None` until their files are read, and their names
/// are then not checked.
#[derive(Debug, Default)]
pub struct KernelIndex {
    pub functions: BTreeMap<String, Vec<String>>,
    pub cuda: BTreeMap<String, Vec<String>>,
    /// `(module, name)` → signature of a CPU kernel, meta or check function.
    pub cpu_signatures: BTreeMap<(String, String), FnSig>,
    /// `(module, name)` → signature of a CUDA launcher in `src/backends/cuda/ops/<module>.rs`.
    pub cuda_signatures: BTreeMap<(String, String), FnSig>,
    /// `(module, name)` → every `__device__` declaration of that name in `<module>.cuh`.
    pub device_fns: BTreeMap<(String, String), Vec<DeviceFn>>,
    /// `module::name` (`composite::stack`) → signature, for every fn in `src/ops/*.rs`.
    pub rust_ops: Option<BTreeMap<String, FnSig>>,
    /// Sample sets: every `pub fn` of `tests/opinfo/samples.rs`.
    pub samples: Option<BTreeMap<String, FnSig>>,
    /// References: every `pub fn` of `tests/opinfo/refs.rs`.
    pub refs: Option<BTreeMap<String, FnSig>>,
    /// What formulas call besides the generated API; `None` (names unchecked) until read.
    pub formula_scope: Option<FormulaScope>,
}

impl KernelIndex {
    /// Reads every source the YAML can name, under the repository root `root`. Missing
    /// `src/ops` or `tests/opinfo` files leave their names unchecked (a crate packaged
    /// without its tests still builds); an unreadable or unparsable file is an error.
    pub fn scan_repo(root: &Path) -> Result<Self, String> {
        let mut index = KernelIndex::default();
        let cpu = root.join(paths::CPU_KERNELS_DIR);
        if !cpu.is_dir() {
            return Err(format!("cannot read {}: not a folder", cpu.display()));
        }
        for (path, text) in files_with_ext(&cpu, "rs")? {
            index.add_cpu_source(&stem(&path), &label(root, &path), &text)?;
        }
        for (path, text) in files_with_ext(&root.join(paths::CUDA_KERNELS_DIR), "cuh")? {
            index.add_cuda_header(&stem(&path), &label(root, &path), &text);
        }
        for (path, text) in files_with_ext(&root.join(paths::CUDA_LAUNCHERS_DIR), "rs")? {
            index.add_cuda_launchers(&stem(&path), &label(root, &path), &text)?;
        }
        let ops = root.join(paths::RUST_OPS_DIR);
        if ops.is_dir() {
            index.rust_ops = Some(BTreeMap::new());
            for (path, text) in files_with_ext(&ops, "rs")? {
                index.add_rust_ops(&stem(&path), &label(root, &path), &text)?;
            }
        }
        // Files of `mod x;` declarations, read as rustc would find them.
        let load = |file: &str| std::fs::read_to_string(root.join(file)).ok();
        for (file, slot) in [
            (paths::SAMPLES_FILE, &mut index.samples),
            (paths::REFS_FILE, &mut index.refs),
        ] {
            if let Some(text) = load(file) {
                *slot = Some(visible_fns(file, &text, &load)?);
            }
        }
        let library = root.join(paths::LIBRARY_DIR);
        if library.is_dir() {
            index.formula_scope = Some(formula_scope(root, &library)?);
        }
        Ok(index)
    }

    /// Adds the `pub fn`s of CPU kernel module `module`, whose source `text` is at `file`.
    pub fn add_cpu_source(&mut self, module: &str, file: &str, text: &str) -> Result<(), String> {
        for (name, sig) in top_level_fns(file, text)? {
            if !sig.public {
                continue;
            }
            let list = self.functions.entry(name.clone()).or_default();
            if !list.iter().any(|m| m == module) {
                list.push(module.to_string());
            }
            self.cpu_signatures.insert((module.to_string(), name), sig);
        }
        Ok(())
    }

    /// Adds the `__device__` functions of `kernels/cuda/<module>.cuh`, whose text is at `file`.
    pub fn add_cuda_header(&mut self, module: &str, file: &str, text: &str) {
        for (i, line) in text.lines().enumerate() {
            if !line.contains("__device__") {
                continue;
            }
            // `template <...> __device__ inline T name(args)`: the identifier before `(`.
            let Some((head, rest)) = line.split_once('(') else {
                continue;
            };
            let Some(name) = head.split_whitespace().last() else {
                continue;
            };
            let list = self.cuda.entry(name.to_string()).or_default();
            if !list.iter().any(|m| m == module) {
                list.push(module.to_string());
            }
            self.device_fns
                .entry((module.to_string(), name.to_string()))
                .or_default()
                .push(DeviceFn {
                    location: format!("{file}:{}", i + 1),
                    arity: c_arity(rest),
                });
        }
    }

    /// Adds the `pub fn` launchers of `src/backends/cuda/ops/<module>.rs`, whose text is at `file`.
    pub fn add_cuda_launchers(
        &mut self,
        module: &str,
        file: &str,
        text: &str,
    ) -> Result<(), String> {
        for (name, sig) in top_level_fns(file, text)? {
            if !sig.public {
                continue;
            }
            let list = self.cuda.entry(name.clone()).or_default();
            if !list.iter().any(|m| m == module) {
                list.push(module.to_string());
            }
            self.cuda_signatures.insert((module.to_string(), name), sig);
        }
        Ok(())
    }

    /// Adds the functions of `src/ops/<module>.rs` (and of its inline `mod`s, as
    /// `module::inner::name`), public or not: a private one is reported as such.
    pub fn add_rust_ops(&mut self, module: &str, file: &str, text: &str) -> Result<(), String> {
        let ast = syn::parse_file(text).map_err(|e| syn_error(file, &e))?;
        let ops = self.rust_ops.get_or_insert_with(BTreeMap::new);
        collect_fns(file, module, &ast.items, ops);
        Ok(())
    }

    /// Adds the functions `samples::<name>` reaches in `tests/opinfo/samples.rs`, whose text
    /// is at `file`: its `pub fn`s and those its `pub use` re-exports from the modules that
    /// `load` (a file's path → its text) gives.
    pub fn add_samples(
        &mut self,
        file: &str,
        text: &str,
        load: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String> {
        let fns = visible_fns(file, text, load)?;
        self.samples.get_or_insert_with(BTreeMap::new).extend(fns);
        Ok(())
    }

    /// Adds the functions `refs::<name>` reaches in `tests/opinfo/refs.rs`, as
    /// [`add_samples`](Self::add_samples) does.
    pub fn add_refs(
        &mut self,
        file: &str,
        text: &str,
        load: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String> {
        let fns = visible_fns(file, text, load)?;
        self.refs.get_or_insert_with(BTreeMap::new).extend(fns);
        Ok(())
    }

    /// Resolves a CUDA kernel `module::name` to `(module, name)`.
    pub fn resolve_cuda(&self, spec: &str) -> Result<(String, String), String> {
        let Some((module, name)) = spec.split_once("::") else {
            return Err(format!(
                "CUDA kernel '{spec}' must be written as module::name"
            ));
        };
        match self.cuda.get(name) {
            Some(ms) if ms.iter().any(|m| m == module) => Ok((module.to_string(), name.to_string())),
            _ => Err(format!(
                "unknown CUDA kernel '{spec}': no `__device__` function {name} in {}/{module}.cuh and no `pub fn {name}` in {}/{module}.rs",
                paths::CUDA_KERNELS_DIR,
                paths::CUDA_LAUNCHERS_DIR
            )),
        }
    }

    /// Resolves `name` or `module::name` to `(module, name)`.
    pub fn resolve(&self, spec: &str) -> Result<(String, String), String> {
        let (module, name) = match spec.split_once("::") {
            Some((m, n)) => (Some(m), n),
            None => (None, spec),
        };
        let mods = self.functions.get(name).cloned().unwrap_or_default();
        match (module, mods.as_slice()) {
            (Some(m), ms) if ms.iter().any(|x| x == m) => Ok((m.to_string(), name.to_string())),
            (None, [m]) => Ok((m.clone(), name.to_string())),
            (None, [_, ..]) => Err(format!(
                "kernel '{name}' is defined in several modules ({}); write it as module::{name}",
                mods.join(", ")
            )),
            _ => Err(format!(
                "unknown CPU kernel '{spec}': no `pub fn {name}` in {}/",
                paths::CPU_KERNELS_DIR
            )),
        }
    }

    /// True when `module::name` exists.
    pub fn has(&self, module: &str, name: &str) -> bool {
        self.functions
            .get(name)
            .is_some_and(|ms| ms.iter().any(|m| m == module))
    }

    /// True when CUDA sources were read (not only names registered), so a CUDA kernel's kind
    /// (`__device__` fn or launcher) and parameters can be checked.
    pub fn has_cuda_sources(&self) -> bool {
        !self.device_fns.is_empty() || !self.cuda_signatures.is_empty()
    }

    /// The signature of CPU function `module::name`, when it was read from source.
    pub fn cpu_signature(&self, module: &str, name: &str) -> Option<&FnSig> {
        self.cpu_signatures
            .get(&(module.to_string(), name.to_string()))
    }

    /// The signature of CUDA launcher `module::name`, when it was read from source.
    pub fn cuda_signature(&self, module: &str, name: &str) -> Option<&FnSig> {
        self.cuda_signatures
            .get(&(module.to_string(), name.to_string()))
    }

    /// The `__device__` declarations of `name` in `<module>.cuh` (none when absent).
    pub fn device_fns(&self, module: &str, name: &str) -> &[DeviceFn] {
        self.device_fns
            .get(&(module.to_string(), name.to_string()))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// A type as the contract compares it: the last segment of each path (`crate::DType` is
/// `DType`), lifetimes dropped (`Src<'_, T>` is `Src<T>`), every type parameter of the
/// function written `T`, and Rust's spacing (`&[i64]`, `Option<&[i64]>`, `(Tensor, Tensor)`).
pub fn canonical_type(ty: &syn::Type, generics: &[String]) -> String {
    match ty {
        syn::Type::Reference(r) => {
            let m = if r.mutability.is_some() { "mut " } else { "" };
            format!("&{m}{}", canonical_type(&r.elem, generics))
        }
        syn::Type::Slice(s) => format!("[{}]", canonical_type(&s.elem, generics)),
        syn::Type::Array(a) => {
            let len = &a.len;
            format!(
                "[{}; {}]",
                canonical_type(&a.elem, generics),
                quote::quote!(#len)
            )
        }
        syn::Type::Tuple(t) => {
            let items: Vec<String> = t
                .elems
                .iter()
                .map(|e| canonical_type(e, generics))
                .collect();
            format!("({})", items.join(", "))
        }
        syn::Type::Paren(p) => canonical_type(&p.elem, generics),
        syn::Type::Group(g) => canonical_type(&g.elem, generics),
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return String::new();
            };
            let name = last.ident.to_string();
            if p.path.segments.len() == 1 && generics.contains(&name) {
                return "T".to_string();
            }
            // `T::Compute`: an associated type of the element type parameter.
            if p.path.segments.len() == 2
                && generics.contains(&p.path.segments[0].ident.to_string())
                && last.arguments.is_none()
            {
                return format!("T::{name}");
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) => {
                    let args: Vec<String> = a
                        .args
                        .iter()
                        .filter_map(|g| match g {
                            syn::GenericArgument::Type(t) => Some(canonical_type(t, generics)),
                            syn::GenericArgument::Lifetime(_) => None,
                            other => Some(tokens(other)),
                        })
                        .collect();
                    if args.is_empty() {
                        name
                    } else {
                        format!("{name}<{}>", args.join(", "))
                    }
                }
                _ => name,
            }
        }
        other => tokens(other),
    }
}

fn tokens(t: &impl quote::ToTokens) -> String {
    t.to_token_stream().to_string()
}

/// The signature of `f`, found at `file:line`.
fn signature(file: &str, sig: &syn::Signature, vis: &syn::Visibility) -> FnSig {
    let generics: Vec<String> = sig
        .generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    let params = sig
        .inputs
        .iter()
        .map(|arg| match arg {
            syn::FnArg::Receiver(_) => Param {
                name: "self".into(),
                ty: "Self".into(),
            },
            syn::FnArg::Typed(t) => Param {
                name: match &*t.pat {
                    syn::Pat::Ident(i) => i.ident.to_string(),
                    other => tokens(other),
                },
                ty: canonical_type(&t.ty, &generics),
            },
        })
        .collect();
    let ret = match &sig.output {
        syn::ReturnType::Default => "()".to_string(),
        syn::ReturnType::Type(_, t) => canonical_type(t, &generics),
    };
    FnSig {
        location: format!("{file}:{}", sig.ident.span().start().line),
        generics,
        params,
        ret,
        public: !matches!(vis, syn::Visibility::Inherited),
    }
}

/// Every top-level `fn` of a Rust file, with its signature.
fn top_level_fns(file: &str, text: &str) -> Result<Vec<(String, FnSig)>, String> {
    let ast = syn::parse_file(text).map_err(|e| syn_error(file, &e))?;
    Ok(ast
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => Some((f.sig.ident.to_string(), signature(file, &f.sig, &f.vis))),
            _ => None,
        })
        .collect())
}

/// The `pub fn`s a path `module::name` reaches in the module whose source `text` is at
/// `file`: its own, and those it re-exports with `pub use sub::*` or `pub use sub::{a, b}`
/// from a submodule declared `mod sub;` (found, as rustc does, at its `#[path]` or at
/// `<dir>/<file stem>/sub.rs`, and read with `load`) or written inline.
fn visible_fns(
    file: &str,
    text: &str,
    load: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, FnSig>, String> {
    let ast = syn::parse_file(text).map_err(|e| syn_error(file, &e))?;
    items_fns(file, &ast.items, load, 0)
}

fn items_fns(
    file: &str,
    items: &[syn::Item],
    load: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> Result<BTreeMap<String, FnSig>, String> {
    let mut own = BTreeMap::new();
    let mut modules: BTreeMap<String, BTreeMap<String, FnSig>> = BTreeMap::new();
    for item in items {
        match item {
            syn::Item::Fn(f) if !matches!(f.vis, syn::Visibility::Inherited) => {
                own.insert(f.sig.ident.to_string(), signature(file, &f.sig, &f.vis));
            }
            // Depth-limited: a `#[path]` cycle must not recurse for ever.
            syn::Item::Mod(m) if depth < 8 => {
                let fns = match &m.content {
                    Some((_, inner)) => items_fns(file, inner, load, depth + 1)?,
                    None => {
                        let sub = module_file(file, m);
                        match load(&sub) {
                            Some(text) => {
                                let ast =
                                    syn::parse_file(&text).map_err(|e| syn_error(&sub, &e))?;
                                items_fns(&sub, &ast.items, load, depth + 1)?
                            }
                            None => BTreeMap::new(),
                        }
                    }
                };
                modules.insert(m.ident.to_string(), fns);
            }
            syn::Item::Use(u) if !matches!(u.vis, syn::Visibility::Inherited) => {
                reexport(&u.tree, &modules, &mut own);
            }
            _ => {}
        }
    }
    Ok(own)
}

/// Adds to `out` what `pub use <tree>` re-exports from `modules`.
fn reexport(
    tree: &syn::UseTree,
    modules: &BTreeMap<String, BTreeMap<String, FnSig>>,
    out: &mut BTreeMap<String, FnSig>,
) {
    let syn::UseTree::Path(p) = tree else {
        return;
    };
    if p.ident == "self" {
        return reexport(&p.tree, modules, out);
    }
    let Some(fns) = modules.get(&p.ident.to_string()) else {
        return;
    };
    let mut add = |t: &syn::UseTree| match t {
        syn::UseTree::Glob(_) => out.extend(fns.iter().map(|(k, v)| (k.clone(), v.clone()))),
        syn::UseTree::Name(n) => {
            if let Some(sig) = fns.get(&n.ident.to_string()) {
                out.insert(n.ident.to_string(), sig.clone());
            }
        }
        syn::UseTree::Rename(r) => {
            if let Some(sig) = fns.get(&r.ident.to_string()) {
                out.insert(r.rename.to_string(), sig.clone());
            }
        }
        _ => {}
    };
    match &*p.tree {
        syn::UseTree::Group(g) => g.items.iter().for_each(&mut add),
        other => add(other),
    }
}

/// Where rustc looks for `mod name;` declared in `file`: its `#[path = ".."]` relative to
/// `file`'s folder, else `<folder>/<file stem>/<name>.rs` (`<folder>/<name>.rs` from a
/// `mod.rs`).
fn module_file(file: &str, m: &syn::ItemMod) -> String {
    let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
    let join = |rel: &str| {
        if dir.is_empty() {
            rel.to_string()
        } else {
            format!("{dir}/{rel}")
        }
    };
    for attr in &m.attrs {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if nv.path.is_ident("path") {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
                {
                    return join(&s.value());
                }
            }
        }
    }
    let stem = file
        .rsplit('/')
        .next()
        .unwrap_or(file)
        .trim_end_matches(".rs");
    if stem == "mod" {
        join(&format!("{}.rs", m.ident))
    } else {
        join(&format!("{stem}/{}.rs", m.ident))
    }
}

/// Adds every fn of `items` as `prefix::name`, descending into inline modules.
fn collect_fns(file: &str, prefix: &str, items: &[syn::Item], out: &mut BTreeMap<String, FnSig>) {
    for item in items {
        match item {
            syn::Item::Fn(f) => {
                out.insert(
                    format!("{prefix}::{}", f.sig.ident),
                    signature(file, &f.sig, &f.vis),
                );
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    collect_fns(file, &format!("{prefix}::{}", m.ident), inner, out);
                }
            }
            _ => {}
        }
    }
}

/// Reads the [`FormulaScope`] of the library whose sources are `library`, under `root`.
fn formula_scope(root: &Path, library: &Path) -> Result<FormulaScope, String> {
    let mut scope = FormulaScope::default();
    let mut files = Vec::new();
    rs_files_under(library, &mut files)?;
    files.sort();
    let helpers = root.join(paths::BACKWARD_HELPERS_DIR);
    for path in files {
        let text = read(&path)?;
        let file = label(root, &path);
        if path.parent() == Some(helpers.as_path()) {
            scope.add_helpers(&file, &text)?;
        }
        if paths::CRATE_ROOT_FILES.contains(&file.as_str()) {
            scope.add_crate_root(&file, &text)?;
        }
        // Parsing is most of the cost: only files that may hold an `impl Tensor` block.
        let impls_tensor = text.lines().any(|l| {
            let l = l.trim();
            l.starts_with("impl") && l.trim_end_matches('{').trim_end().ends_with("Tensor")
        });
        if impls_tensor {
            scope.add_tensor_source(&file, &text)?;
        }
    }
    Ok(scope)
}

/// Every `*.rs` file below `dir`, recursively.
fn rs_files_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            rs_files_under(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn syn_error(file: &str, e: &syn::Error) -> String {
    let at = e.span().start();
    format!("{file}:{}:{}: {e}", at.line, at.column + 1)
}

/// The number of parameters of a C declaration whose text after the name's `(` is `rest`,
/// or `None` when the list does not close on this line.
fn c_arity(rest: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut commas = 0usize;
    let mut empty = true;
    for c in rest.chars() {
        match c {
            ')' if depth == 0 => return Some(if empty { 0 } else { commas + 1 }),
            '(' | '<' | '[' => depth += 1,
            ')' | '>' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => commas += 1,
            _ => {}
        }
        empty &= c.is_whitespace();
    }
    None
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string()
}

/// `path` relative to the repository root, for messages (`kernels/src/cpu/unary.rs`).
fn label(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// `(path, text)` of every `*.ext` file in `dir` but `mod.rs`, sorted; a missing folder has
/// none.
fn files_with_ext(dir: &Path, ext: &str) -> Result<Vec<(std::path::PathBuf, String)>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext) && !p.ends_with("mod.rs"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = read(&p)?;
            Ok((p, text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(ty: &str, generics: &[&str]) -> String {
        let g: Vec<String> = generics.iter().map(|s| s.to_string()).collect();
        canonical_type(&syn::parse_str(ty).unwrap(), &g)
    }

    #[test]
    fn canonical_types_drop_paths_lifetimes_and_generic_names() {
        assert_eq!(canon("Src<'_, E>", &["E"]), "Src<T>");
        assert_eq!(canon("crate::DType", &[]), "DType");
        assert_eq!(canon("&'a [kiln_kernels::Src<'a, T>]", &["T"]), "&[Src<T>]");
        assert_eq!(canon("Option<&[i64]>", &[]), "Option<&[i64]>");
        assert_eq!(canon("half::f16", &[]), "f16");
        assert_eq!(
            canon("crate::Result<(Tensor, Tensor)>", &[]),
            "Result<(Tensor, Tensor)>"
        );
        assert_eq!(canon("&mut [T]", &["T"]), "&mut [T]");
    }

    #[test]
    fn c_arity_counts_top_level_parameters() {
        assert_eq!(c_arity("T x) { return x; }"), Some(1));
        assert_eq!(c_arity("T x, const KilnStr& s) {"), Some(2));
        assert_eq!(c_arity(") {"), Some(0));
        assert_eq!(c_arity("kiln_opt<C, D> a, T b)"), Some(2));
        assert_eq!(c_arity("T x,"), None);
    }

    #[test]
    fn sample_sets_reexported_from_path_modules_are_visible() {
        let main = "#[path = \"samples/shaping.rs\"]\nmod shaping;\nmod hidden;\npub use shaping::*;\npub use self::hidden::{one, two as deux};\npub fn binary(d: DType) -> Vec<Sample> { vec![] }\nfn helper() {}\n";
        let load = |f: &str| match f {
            "tests/opinfo/samples/shaping.rs" => {
                Some("pub fn flip(d: DType) -> Vec<Sample> { vec![] }\nfn private() {}\n".into())
            }
            "tests/opinfo/samples/hidden.rs" => {
                Some("pub fn one() {}\npub fn two() {}\npub fn three() {}\n".into())
            }
            _ => None,
        };
        let mut k = KernelIndex::default();
        k.add_samples("tests/opinfo/samples.rs", main, &load)
            .unwrap();
        let names: Vec<&str> = k
            .samples
            .as_ref()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, ["binary", "deux", "flip", "one"]);
        let flip = &k.samples.as_ref().unwrap()["flip"];
        assert_eq!(flip.location, "tests/opinfo/samples/shaping.rs:1");
    }

    #[test]
    fn formula_scope_reads_inherent_tensor_fns_and_reexported_helpers() {
        let mut s = FormulaScope::default();
        let tensor = "impl Tensor { pub fn sizes(&self) {} pub(crate) fn zeros_like(&self) {} pub(super) fn narrow(&self) {} fn private(&self) {} }\nimpl Clone for Tensor { fn clone(&self) -> Self { Tensor(self.0.clone()) } }\nmod inner { impl crate::Tensor { pub fn nested(&self) {} } }\n";
        s.add_tensor_source("src/tensor/mod.rs", tensor).unwrap();
        let tensor_fns: Vec<&str> = s.tensor_fns.iter().map(String::as_str).collect();
        assert_eq!(tensor_fns, ["nested", "sizes", "zeros_like"]);
        let helpers = "pub fn i64s() {}\npub(super) fn hidden() {}\nfn private() {}\n";
        s.add_helpers("src/ops/backward/shaping.rs", helpers)
            .unwrap();
        let mod_rs = "mod shaping;\npub(crate) use shaping::*;\npub(crate) use crate::ops::indexing::{index_backward, put as index_put_backward};\n";
        s.add_helpers("src/ops/backward/mod.rs", mod_rs).unwrap();
        let helpers: Vec<&str> = s.helpers.iter().map(String::as_str).collect();
        assert_eq!(helpers, ["i64s", "index_backward", "index_put_backward"]);
    }

    #[test]
    fn signatures_record_location_generics_and_params() {
        let mut k = KernelIndex::default();
        let text =
            "//! doc\n\npub fn add<E: Arith>(a: E, b: E, alpha: E) -> E { a }\nfn private() {}\n";
        k.add_cpu_source("binary", "kernels/src/cpu/binary.rs", text)
            .unwrap();
        let s = k.cpu_signature("binary", "add").unwrap();
        assert_eq!(s.location, "kernels/src/cpu/binary.rs:3");
        assert_eq!(s.generics, ["E"]);
        let tys: Vec<&str> = s.params.iter().map(|p| p.ty.as_str()).collect();
        assert_eq!(tys, ["T", "T", "T"]);
        assert_eq!(s.ret, "T");
        assert!(!k.has("binary", "private"));
    }
}
