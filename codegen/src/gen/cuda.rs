//! CUDA C++ sources: every `.cu.j2` template in `kernels/cuda/` rendered with minijinja, and
//! one module per pointwise op from `pointwise.cu.j2` around the op's `__device__` scalar fn.
//! The result is a Rust table of `(module name, source)` that kiln compiles with NVRTC at
//! run time (and CI compiles to PTX without a GPU).

use crate::model::{BackendKey, DType, Fixed, Kind, Model, Op, Promote};
use crate::paths::CUDA_KERNELS_DIR;
use crate::types::ArgKind;
use minijinja::{context, Environment, Value};
use proc_macro2::TokenStream;
use quote::quote;
use std::path::Path;

fn dtype_values(dtypes: &[DType]) -> Vec<Value> {
    dtypes
        .iter()
        .map(|d| {
            Value::from_serialize(context! {
                name => d.short(),
                ctype => d.ctype(),
                acc => d.cuda_acc_type(),
                compute => d.cuda_compute_type(),
            })
        })
        .collect()
}

/// The C++ name of a schema argument (`self` reads as `self_`, like the Rust side).
fn cname(name: &str) -> String {
    match name {
        "self" => "self_".to_string(),
        other => other.to_string(),
    }
}

/// The context of `pointwise.cu.j2` for one op.
fn pointwise_context(op: &Op, module: &str, func: &str) -> Result<Value, String> {
    let mut tensors = Vec::new();
    let mut scalars = Vec::new();
    let mut call_args = Vec::new();
    for a in op.args() {
        let name = cname(&a.name);
        match a.kind {
            ArgKind::Tensor => {
                let fixed = match op.fixed.get(&a.name) {
                    Some(Fixed::DType(d)) => d.ctype(),
                    // model::build rejects `opmath` operands of pointwise ops.
                    Some(Fixed::Opmath) | None => "",
                };
                tensors.push(context! { name => name.clone(), fixed => fixed });
            }
            ArgKind::Scalar | ArgKind::Float => {
                scalars.push(context! { name => name.clone(), kind => "scalar" })
            }
            ArgKind::OptScalar => {
                scalars.push(context! { name => name.clone(), kind => "opt_scalar" })
            }
            ArgKind::Str => scalars.push(context! { name => name.clone(), kind => "str" }),
            other => {
                return Err(format!(
                    "{}: a pointwise CUDA kernel cannot take an argument of kind {other:?} ('{}')",
                    op.schema, a.name
                ))
            }
        }
        call_args.push(name);
    }
    let dtypes = op
        .backend(BackendKey::Cuda)
        .map(|b| b.dtypes.clone())
        .unwrap_or_default();
    Ok(Value::from_serialize(context! {
        op => op.rust.clone(),
        dtypes => dtype_values(&dtypes),
        tensors => tensors,
        scalars => scalars,
        call => format!("{module}::{func}({})", call_args.join(", ")),
        bool_out => op.promote == Promote::Comparison,
    }))
}

fn read(dir: &Path, name: &str) -> Result<String, String> {
    std::fs::read_to_string(dir.join(name))
        .map_err(|e| format!("cannot read {CUDA_KERNELS_DIR}/{name}: {e}"))
}

/// The names of the `<name>.cu.j2` templates in `cuda_dir`, sorted.
fn template_names(cuda_dir: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(cuda_dir)
        .map_err(|e| format!("cannot list {}: {e}", cuda_dir.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", cuda_dir.display()))?;
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(name) = file.strip_suffix(".cu.j2") {
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// Every CUDA module as `(name, full source)`, prelude included: one per template but
/// `pointwise.cu.j2` (rendered with `dtypes`, every dtype, and `floating`, the float ones;
/// a template loops over the set its kernels take), then one per pointwise op.
pub fn modules(model: &Model, cuda_dir: &Path) -> Result<Vec<(String, String)>, String> {
    let prelude = read(cuda_dir, "prelude.cuh")?;
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    let templates = template_names(cuda_dir)?;
    let texts: Vec<(String, String)> = templates
        .iter()
        .map(|t| Ok((t.clone(), read(cuda_dir, &format!("{t}.cu.j2"))?)))
        .collect::<Result<_, String>>()?;
    for (name, text) in &texts {
        env.add_template(name, text)
            .map_err(|e| format!("{CUDA_KERNELS_DIR}/{name}.cu.j2: {e}"))?;
    }
    let render = |name: &str, ctx: Value| -> Result<String, String> {
        env.get_template(name)
            .and_then(|t| t.render(ctx))
            .map_err(|e| format!("{CUDA_KERNELS_DIR}/{name}.cu.j2: {e:#}"))
    };
    let mut out = Vec::new();
    for t in templates.iter().filter(|t| *t != "pointwise") {
        let body = render(
            t,
            Value::from_serialize(context! {
                dtypes => dtype_values(&DType::ALL),
                floating => dtype_values(&DType::FLOATING),
            }),
        )?;
        out.push((t.clone(), format!("{prelude}\n{body}")));
    }
    for op in &model.ops {
        let (Kind::Pointwise { .. }, Some(cuda)) = (&op.kind, op.backend(BackendKey::Cuda)) else {
            continue;
        };
        let (module, func) = (&cuda.kernel.module, &cuda.kernel.name);
        let scalar_fns = read(cuda_dir, &format!("{module}.cuh"))?;
        let body = render("pointwise", pointwise_context(op, module, func)?)?;
        out.push((
            format!("pointwise_{}", op.rust),
            format!("{prelude}\n{scalar_fns}\n{body}"),
        ));
    }
    Ok(out)
}

/// Generated CUDA files: `cuda_sources.rs` (the module table) and, from the kernels those
/// modules define, `cuda_kernels.rs` and `cuda_launchers.rs` (see [`super::cuda_kernels`]).
pub struct Generated {
    pub sources: TokenStream,
    pub kernels: String,
    pub launchers: String,
}

pub fn generate(model: &Model, cuda_dir: &Path) -> Result<Generated, String> {
    let modules = modules(model, cuda_dir)?;
    let (kernels, launchers) = super::cuda_kernels::generate(&modules)?;
    let entries = modules.iter().map(|(name, src)| quote!((#name, #src)));
    let sources = quote! {
        // @generated by kiln-codegen from kernels/cuda/. Do not edit.
        /// Every CUDA module kiln compiles with NVRTC: `(name, CUDA C++ source)`.
        pub static CUDA_MODULES: &[(&str, &str)] = &[#(#entries),*];
    };
    Ok(Generated {
        sources,
        kernels,
        launchers,
    })
}
