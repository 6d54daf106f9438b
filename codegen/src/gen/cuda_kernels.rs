//! The CUDA kernels kiln's Rust code may launch, read from the rendered modules themselves:
//! every `extern "C" __global__` function, its module and its C parameters. From them come
//! `cuda_kernels.rs` (a dense id per kernel, and per kernel family a constant that maps a
//! dtype to its id) and `cuda_launchers.rs` (per family whose instantiations share one C
//! signature, a typed Rust function that forwards its arguments to the kernel). A launcher
//! naming a kernel that no template defines, or passing arguments of other types or in
//! another number, is therefore a Rust build error, not a failure on a GPU.

use crate::model::DType;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One `extern "C" __global__` function of a rendered module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub symbol: String,
    /// `(C type, parameter name)`, whitespace normalised.
    pub params: Vec<(String, String)>,
}

/// The kernels defined in `source`, in order. Comments are skipped; `__launch_bounds__(…)`
/// may stand between `void` and the name.
pub fn scan(module: &str, source: &str) -> Result<Vec<Kernel>, String> {
    let text = strip_comments(source);
    let mut out = Vec::new();
    let marker = "extern \"C\"";
    let mut rest = text.as_str();
    while let Some(at) = rest.find(marker) {
        rest = &rest[at + marker.len()..];
        let mut s = rest.trim_start();
        let Some(after) = s.strip_prefix("__global__") else {
            continue; // an extern "C" device function or variable: not launchable
        };
        s = after.trim_start();
        s = s
            .strip_prefix("void")
            .ok_or_else(|| format!("CUDA module '{module}': a __global__ kernel must return void"))?
            .trim_start();
        if let Some(after) = s.strip_prefix("__launch_bounds__") {
            let (_, tail) = balanced(module, after.trim_start())?;
            s = tail.trim_start();
        }
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        let symbol = s[..end].to_string();
        if symbol.is_empty() {
            return Err(format!(
                "CUDA module '{module}': cannot read a kernel name after `extern \"C\" __global__ void`"
            ));
        }
        let (inner, _) = balanced(module, s[end..].trim_start())
            .map_err(|e| format!("{e} (kernel '{symbol}')"))?;
        let params = split_params(inner)
            .into_iter()
            .filter(|p| !p.is_empty() && p != "void")
            .map(|p| parse_param(module, &symbol, &p))
            .collect::<Result<_, _>>()?;
        out.push(Kernel { symbol, params });
    }
    Ok(out)
}

/// `text` without `//` and `/* */` comments (string literals hold no comment markers here).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '/' && chars.peek() == Some(&'/') {
            for c in chars.by_ref() {
                if c == '\n' {
                    out.push('\n');
                    break;
                }
            }
        } else if c == '/' && chars.peek() == Some(&'*') {
            chars.next();
            let mut prev = ' ';
            for c in chars.by_ref() {
                if prev == '*' && c == '/' {
                    break;
                }
                prev = c;
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` starts with `(`: the text inside the matching `)`, and what follows it.
fn balanced<'a>(module: &str, s: &'a str) -> Result<(&'a str, &'a str), String> {
    if !s.starts_with('(') {
        return Err(format!(
            "CUDA module '{module}': expected '(' in a kernel declaration"
        ));
    }
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Ok((&s[1..i], &s[i + 1..]));
                }
            }
            _ => {}
        }
    }
    Err(format!(
        "CUDA module '{module}': unbalanced '(' in a kernel declaration"
    ))
}

/// Splits a parameter list at top-level commas (not inside `<>` or `()`).
fn split_params(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in s.chars() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur.trim().to_string());
    out
}

fn parse_param(module: &str, symbol: &str, p: &str) -> Result<(String, String), String> {
    let words: Vec<&str> = p.split_whitespace().collect();
    match words.split_last() {
        Some((name, ty)) if !ty.is_empty() => Ok((ty.join(" "), name.to_string())),
        _ => Err(format!(
            "CUDA module '{module}', kernel '{symbol}': cannot read parameter '{p}' as `type name`"
        )),
    }
}

/// The Rust type a C parameter type is passed as, and whether it goes by reference (the
/// structs). The C types are those the templates use; another is a codegen error here, so
/// that no kernel is launched with a guessed layout.
fn rust_type(c: &str) -> Option<(&'static str, bool)> {
    Some(match c {
        "KilnTensor" => ("KilnTensor", true),
        "KilnStr" => ("KilnStr", true),
        "KilnFold" => ("KilnFold", true),
        "long long" => ("i64", false),
        "unsigned long long" => ("u64", false),
        "int" => ("i32", false),
        "unsigned int" | "unsigned" => ("u32", false),
        "short" => ("i16", false),
        "signed char" => ("i8", false),
        "unsigned char" => ("u8", false),
        "bool" => ("bool", false),
        "float" => ("f32", false),
        "double" => ("f64", false),
        _ => return None,
    })
}

/// A kernel name split into its family stem and the dtypes its name ends with: `copy_f32_f64`
/// → (`copy`, [f32, f64]); `scatter_count` → (`scatter_count`, []).
pub fn split_symbol(symbol: &str) -> (String, Vec<DType>) {
    let mut parts: Vec<&str> = symbol.split('_').collect();
    let mut dtypes = Vec::new();
    while dtypes.len() < 2 && parts.len() > 1 {
        match DType::parse(parts[parts.len() - 1]) {
            Some(d) => {
                dtypes.insert(0, d);
                parts.pop();
            }
            None => break,
        }
    }
    (parts.join("_"), dtypes)
}

/// One kernel of a family: the dtypes in its name, its id, its C parameters.
type Member = (Vec<DType>, usize, Vec<(String, String)>);

/// A family: one stem in one module, instantiated for dtypes (or dtype pairs).
struct Family {
    module: String,
    stem: String,
    members: Vec<Member>,
}

impl Family {
    fn arity(&self) -> usize {
        self.members[0].0.len()
    }

    /// The family's C signature: per parameter, its name and either the one C type every
    /// member has or (a scalar in the compute type, say) the C type per dtype. `None` when
    /// the members disagree on names or count, or a per-dtype type is not a number.
    fn signature(&self) -> Option<Vec<(String, ParamType)>> {
        let first = &self.members[0].2;
        if self
            .members
            .iter()
            .any(|m| m.2.len() != first.len() || m.2.iter().zip(first).any(|(a, b)| a.1 != b.1))
        {
            return None;
        }
        let mut out = Vec::new();
        for (i, (ty, name)) in first.iter().enumerate() {
            if self.members.iter().all(|m| m.2[i].0 == *ty) {
                out.push((name.clone(), ParamType::Uniform(ty.clone())));
            } else if self.arity() == 1
                && self
                    .members
                    .iter()
                    .all(|m| rust_type(&m.2[i].0).is_some_and(|(_, by_ref)| !by_ref))
            {
                let per = self
                    .members
                    .iter()
                    .map(|m| (m.0[0], m.2[i].0.clone()))
                    .collect();
                out.push((name.clone(), ParamType::PerDType(per)));
            } else {
                return None;
            }
        }
        Some(out)
    }
}

/// A kernel parameter's C type across a family.
enum ParamType {
    Uniform(String),
    /// A number whose C type follows the kernel's dtype; the launcher takes a `Scalar`.
    PerDType(Vec<(DType, String)>),
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "box", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "async", "await", "gen", "try", "yield", "op", "gpu", "cfg", "dtype", "f",
    "b",
];

/// A C parameter name as a Rust identifier: snake case (`HxW` → `hxw`), and `_` after
/// keywords, the launcher's own names and a name that lower-casing made collide with
/// another parameter's.
fn rust_ident(name: &str, all: &[(String, ParamType)]) -> String {
    let lower = name.to_lowercase();
    let clash = lower != name && all.iter().any(|(other, _)| *other == lower);
    if RUST_KEYWORDS.contains(&lower.as_str()) || clash {
        format!("{lower}_")
    } else {
        lower
    }
}

/// The generated table and launchers for `modules` (`(name, source)` in `CUDA_MODULES`
/// order): `(cuda_kernels.rs, cuda_launchers.rs)`.
pub fn generate(modules: &[(String, String)]) -> Result<(String, String), String> {
    let mut symbols: Vec<(usize, String)> = Vec::new();
    let mut families: BTreeMap<(String, String), Family> = BTreeMap::new();
    for (mi, (module, source)) in modules.iter().enumerate() {
        for k in scan(module, source)? {
            let id = symbols.len();
            symbols.push((mi, k.symbol.clone()));
            let (stem, dtypes) = split_symbol(&k.symbol);
            let fam = families
                .entry((module.clone(), stem.clone()))
                .or_insert_with(|| Family {
                    module: module.clone(),
                    stem: stem.clone(),
                    members: Vec::new(),
                });
            if !fam.members.is_empty() && fam.arity() != dtypes.len() {
                return Err(format!(
                    "CUDA module '{module}': kernel '{}' ends with {} dtype name(s), the other \
                     '{stem}' kernels with {}",
                    k.symbol,
                    dtypes.len(),
                    fam.arity()
                ));
            }
            fam.members.push((dtypes, id, k.params));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (_, s) in &symbols {
        if !seen.insert(s) {
            // Not an error for CUDA (each module is its own namespace), but a family constant
            // names one module, so report it: two modules defining one symbol is a typo.
            let owners: Vec<&str> = symbols
                .iter()
                .filter(|(_, t)| t == s)
                .map(|(m, _)| modules[*m].0.as_str())
                .collect();
            return Err(format!(
                "CUDA kernel '{s}' is defined by several modules: {}",
                owners.join(", ")
            ));
        }
    }

    let mut table = String::new();
    table.push_str(
        "// @generated by kiln-codegen from the rendered kernels/cuda/ modules. Do not edit.\n\n",
    );
    let _ = writeln!(table, "/// How many kernels the CUDA modules define.");
    let _ = writeln!(
        table,
        "pub(crate) const COUNT: usize = {};\n",
        symbols.len()
    );
    let _ = writeln!(
        table,
        "/// Per kernel id: the index of its module in `CUDA_MODULES`, and its symbol."
    );
    let _ = writeln!(
        table,
        "pub(crate) static KERNELS: [(usize, &str); COUNT] = ["
    );
    for (m, s) in &symbols {
        let _ = writeln!(table, "    ({m}, {s:?}),");
    }
    table.push_str("];\n");
    // The tables below index by `DType as usize`: fail the build if that order ever changes.
    table.push_str("\nconst _: () = assert!(");
    let checks: Vec<String> = DType::ALL
        .iter()
        .enumerate()
        .map(|(i, d)| format!("crate::DType::{} as usize == {i}", d.variant()))
        .collect();
    table.push_str(&checks.join(" && "));
    table.push_str(");\n");

    let mut launchers = String::new();
    launchers.push_str(
        "// @generated by kiln-codegen from the rendered kernels/cuda/ modules. Do not edit.\n",
    );

    let mut by_module: BTreeMap<&str, Vec<&Family>> = BTreeMap::new();
    for f in families.values() {
        by_module.entry(f.module.as_str()).or_default().push(f);
    }
    for (module, fams) in &by_module {
        let _ = writeln!(table, "\n/// The kernels of CUDA module `{module}`.");
        let _ = writeln!(table, "pub(crate) mod {module} {{");
        let _ = writeln!(table, "    #[allow(unused_imports)]");
        let _ = writeln!(table, "    use super::{{Family0, Family1, Family2, NONE}};");
        let mut launch_items = String::new();
        for f in fams {
            let konst = f.stem.to_uppercase();
            let _ = write!(table, "{}", family_const(f, &konst));
            // Pointwise kernels are launched by one generic launcher that builds their
            // arguments from the op's schema; every other family gets a typed one.
            if module.starts_with("pointwise_") {
                continue;
            }
            if let Some(sig) = f.signature() {
                launch_items.push_str(&launcher(f, &konst, module, &sig)?);
            }
        }
        table.push_str("}\n");
        if !launch_items.is_empty() {
            let _ = writeln!(
                launchers,
                "\n/// Typed launchers of CUDA module `{module}`."
            );
            let _ = writeln!(launchers, "pub(crate) mod {module} {{");
            let _ = writeln!(launchers, "    #[allow(unused_imports)]");
            let _ = writeln!(
                launchers,
                "    use super::{{driver_error, DType, Gpu, KilnFold, KilnStr, KilnTensor, LaunchConfig, PushKernelArg, Result, Scalar}};"
            );
            let _ = writeln!(launchers, "    use super::kernels::{module} as k;");
            launchers.push_str(&launch_items);
            launchers.push_str("}\n");
        }
    }
    Ok((table, launchers))
}

fn family_const(f: &Family, konst: &str) -> String {
    let members = f
        .members
        .iter()
        .map(|(d, _, _)| d.iter().map(|d| d.short()).collect::<Vec<_>>().join("×"))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    let mut s = String::new();
    let doc = if members.is_empty() {
        format!("    /// `{}`.\n", f.stem)
    } else {
        format!("    /// `{}_<dtype>` for {members}.\n", f.stem)
    };
    s.push_str(&doc);
    match f.arity() {
        0 => {
            let _ = writeln!(
                s,
                "    pub(crate) const {konst}: Family0 = Family0 {{ id: {} }};",
                f.members[0].1
            );
        }
        1 => {
            let mut ids = vec!["NONE".to_string(); 10];
            for (d, id, _) in &f.members {
                ids[d[0].index()] = id.to_string();
            }
            let _ = writeln!(
                s,
                "    pub(crate) const {konst}: Family1 = Family1 {{ name: {:?}, ids: [{}] }};",
                f.stem,
                ids.join(", ")
            );
        }
        _ => {
            let mut ids = vec![vec!["NONE".to_string(); 10]; 10];
            for (d, id, _) in &f.members {
                ids[d[0].index()][d[1].index()] = id.to_string();
            }
            let rows: Vec<String> = ids.iter().map(|r| format!("[{}]", r.join(", "))).collect();
            let _ = writeln!(
                s,
                "    pub(crate) const {konst}: Family2 = Family2 {{ name: {:?}, ids: [{}] }};",
                f.stem,
                rows.join(", ")
            );
        }
    }
    s
}

fn launcher(
    f: &Family,
    konst: &str,
    module: &str,
    sig: &[(String, ParamType)],
) -> Result<String, String> {
    let unmapped = |name: &str, ty: &str| {
        format!(
            "CUDA module '{module}', kernel family '{}': parameter '{name}' has C type '{ty}', \
             which codegen/src/gen/cuda_kernels.rs does not map to a Rust type",
            f.stem
        )
    };
    let (mut params, mut lets, mut pushes, mut c_sig) = (vec![], vec![], vec![], vec![]);
    for (name, ty) in sig {
        let id = rust_ident(name, sig);
        match ty {
            ParamType::Uniform(ty) => {
                let (rt, by_ref) = rust_type(ty).ok_or_else(|| unmapped(name, ty))?;
                if by_ref {
                    params.push(format!("{id}: &{rt}"));
                    pushes.push(format!(".arg({id})"));
                } else {
                    params.push(format!("{id}: {rt}"));
                    pushes.push(format!(".arg(&{id})"));
                }
                c_sig.push(format!("{ty} {name}"));
            }
            ParamType::PerDType(per) => {
                // The launcher takes a `Scalar` and converts it to each C type the family
                // uses before building the launch, so that every push borrows a local of
                // exactly the type that dtype's kernel declares.
                params.push(format!("{id}: Scalar"));
                let mut types: Vec<&str> = Vec::new();
                let mut arms = Vec::new();
                for (d, ty) in per {
                    let (rt, _) = rust_type(ty).ok_or_else(|| unmapped(name, ty))?;
                    if !types.contains(&rt) {
                        types.push(rt);
                        lets.push(format!("        let {id}_{rt}: {rt} = {id}.to::<{rt}>();"));
                    }
                    arms.push(format!(
                        "            DType::{} => b.arg(&{id}_{rt}),",
                        d.variant()
                    ));
                }
                if per.len() < DType::ALL.len() {
                    // Unreachable: `get` above found a kernel for `dtype`.
                    arms.push(
                        "            _ => return Err(crate::Error::not_implemented(op, \"no CUDA kernel for this dtype\")),"
                            .to_string(),
                    );
                }
                pushes.push(format!(
                    ";\n        match dtype {{\n{}\n        }};\n        b",
                    arms.join("\n")
                ));
                c_sig.push(format!("<compute type> {name}"));
            }
        }
    }
    let (dtype_params, pick) = match f.arity() {
        0 => (String::new(), format!("k::{konst}.id()")),
        1 => (
            "dtype: DType, ".to_string(),
            format!("k::{konst}.get(op, dtype)?"),
        ),
        _ => (
            "dtypes: (DType, DType), ".to_string(),
            format!("k::{konst}.get(op, dtypes.0, dtypes.1)?"),
        ),
    };
    let which = match f.arity() {
        0 => f.stem.clone(),
        1 => format!("{}_<dtype>", f.stem),
        _ => format!("{}_<dtypes.0>_<dtypes.1>", f.stem),
    };
    let mut s = String::new();
    // The launcher's type, for code that picks one of several same-shaped kernels at run
    // time (im2col or col2im, sum or max) and passes it on as a function pointer.
    let camel: String = f
        .stem
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|h| h.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    let types: Vec<&str> = params
        .iter()
        .map(|p| p.split_once(": ").map_or("", |(_, t)| t))
        .collect();
    let dtype_ty = match f.arity() {
        0 => "",
        1 => "DType, ",
        _ => "(DType, DType), ",
    };
    let _ = writeln!(
        s,
        "\n    /// The type of [`{}`].\n    #[allow(dead_code)]\n    pub(crate) type {camel} = unsafe fn(&Gpu, &str, {dtype_ty}LaunchConfig, {}) -> Result<()>;",
        f.stem,
        types.join(", ")
    );
    let _ = writeln!(
        s,
        "\n    /// Launches `{which}({})` on `gpu`'s stream.",
        c_sig.join(", ")
    );
    let _ = writeln!(s, "    ///");
    let _ = writeln!(s, "    /// # Safety");
    let _ = writeln!(
        s,
        "    /// Every `KilnTensor` addresses live device memory on `gpu` of the dtype the kernel \
         reads it as, large enough for every index the kernel computes from the other arguments \
         and `cfg`; outputs do not partially overlap inputs."
    );
    let _ = writeln!(s, "    #[allow(clippy::too_many_arguments, dead_code)]");
    let _ = writeln!(
        s,
        "    pub(crate) unsafe fn {}(gpu: &Gpu, op: &str, {dtype_params}cfg: LaunchConfig, {}) -> Result<()> {{",
        f.stem,
        params.join(", ")
    );
    let _ = writeln!(s, "        let f = gpu.kernel(op, {pick})?;");
    for l in &lets {
        let _ = writeln!(s, "{l}");
    }
    let _ = writeln!(s, "        let mut b = gpu.stream.launch_builder(f);");
    let _ = writeln!(s, "        b{};", pushes.join(""));
    let _ = writeln!(
        s,
        "        // SAFETY: the arguments are the kernel's parameters, typed and ordered as its C \
         signature (read from the rendered module at build time); the caller vouches for the \
         memory they address (see # Safety)."
    );
    let _ = writeln!(
        s,
        "        unsafe {{ b.launch(cfg) }}.map(drop).map_err(|e| driver_error(op, e))"
    );
    let _ = writeln!(s, "    }}");
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_names_and_parameters() {
        let src = "// extern \"C\" __global__ void commented_out(int x)\n\
                   extern \"C\" __device__ int helper(int a);\n\
                   extern \"C\" __global__ void __launch_bounds__(KILN(256)) sort_tile_f32(\n\
                     KilnTensor values, unsigned long long keys_, /* note */ long long n, bool b) {}\n\
                   extern \"C\" __global__ void scatter_count(KilnTensor out) {}";
        let k = scan("m", src).unwrap();
        assert_eq!(k.len(), 2);
        assert_eq!(k[0].symbol, "sort_tile_f32");
        assert_eq!(
            k[0].params,
            vec![
                ("KilnTensor".into(), "values".into()),
                ("unsigned long long".into(), "keys_".into()),
                ("long long".into(), "n".into()),
                ("bool".into(), "b".into()),
            ]
        );
        assert_eq!(k[1].symbol, "scatter_count");
    }

    #[test]
    fn splits_dtype_suffixes() {
        assert_eq!(
            split_symbol("copy_f32_bf16"),
            ("copy".into(), vec![DType::F32, DType::BF16])
        );
        assert_eq!(
            split_symbol("argmax_fin_i8"),
            ("argmax_fin".into(), vec![DType::I8])
        );
        assert_eq!(
            split_symbol("scatter_count"),
            ("scatter_count".into(), vec![])
        );
        assert_eq!(
            split_symbol("logical_not_bool"),
            ("logical_not".into(), vec![DType::Bool])
        );
    }

    #[test]
    fn a_scalar_in_the_compute_type_is_taken_as_a_scalar() {
        let m = vec![(
            "index".to_string(),
            "extern \"C\" __global__ void add_f32(KilnTensor o, float a) {}\n\
             extern \"C\" __global__ void add_f64(KilnTensor o, double a) {}\n\
             extern \"C\" __global__ void fill_f32(KilnTensor o, long long n) {}\n\
             extern \"C\" __global__ void fill_f64(KilnTensor o, long long n) {}"
                .to_string(),
        )];
        let (table, launchers) = generate(&m).unwrap();
        assert!(table.contains("pub(crate) const ADD: Family1"), "{table}");
        assert!(table.contains("pub(crate) const FILL: Family1"), "{table}");
        assert!(
            launchers.contains("a: Scalar")
                && launchers.contains("DType::F32 => b.arg(&a_f32)")
                && launchers.contains("DType::F64 => b.arg(&a_f64)"),
            "{launchers}"
        );
        assert!(
            launchers.contains("unsafe fn fill(gpu: &Gpu, op: &str, dtype: DType, cfg: LaunchConfig, o: &KilnTensor, n: i64)"),
            "{launchers}"
        );
    }

    #[test]
    fn an_unknown_c_type_is_an_error_naming_the_kernel() {
        let m = vec![(
            "m".to_string(),
            "extern \"C\" __global__ void k_f32(half2 x) {}".to_string(),
        )];
        let e = generate(&m).unwrap_err();
        assert!(e.contains("'k'") && e.contains("half2"), "{e}");
    }
}
