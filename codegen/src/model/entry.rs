//! One `native_functions.yaml` entry → an [`Op`]: a function per part of the entry (schema
//! arguments, name, variants, tags, dispatch table, dtypes, promotion, operands, OpInfo), each
//! raising its own errors with the entry's line, marked with the key they are about
//! ([`ModelError::at_key`]) when there is one.

use super::backend::{BackendKernel, BackendKey, Backends, DispatchKey, KernelRef};
use super::dtype::{dtype_set, DType, Fixed};
use super::error::{did_you_mean, did_you_mean_path, is_rust_ident, nerr, ModelError};
use super::op::{Kind, Op, OpInfo, Promote, Tag, Variants};
use super::validate::{check_opinfo, check_sources, vectorized_entry};
use crate::kernels_index::KernelIndex;
use crate::schema::FunctionSchema;
use crate::types::{ident_str, ArgKind};
use crate::yaml::{BackendDTypes, RawOp};
use std::collections::{BTreeMap, BTreeSet};

/// Validates one `native_functions.yaml` entry, at `line`, into an [`Op`].
pub(super) fn op_entry(
    r: RawOp,
    line: usize,
    kernels: &KernelIndex,
    seen_rust: &mut BTreeSet<String>,
) -> Result<Op, ModelError> {
    let func = r.func.as_str();
    let schema = FunctionSchema::parse(func)
        .map_err(|e| nerr(line, format!("malformed schema '{func}': {e}")))?;
    check_arguments(func, line, &schema)?;
    let rust = rust_name(&r, line, &schema, seen_rust)?;
    let has_self = schema.arguments.iter().any(|a| a.name == "self");
    let variants = variants(&r, line, has_self)?;
    let dispatch = dispatch_keys(&r, line)?;
    check_list_return(func, line, &schema, &dispatch)?;
    let tags = tags(&r, line)?;
    check_mutated_inputs(func, line, &schema, &dispatch, variants)?;
    let (kind, kernels_of) = match dispatch.as_slice() {
        [(key, target)] if key.is_composite() => (
            composite_kind(func, line, *key, target, variants, kernels)?,
            None,
        ),
        _ => {
            let (kind, cpu, cuda) = kernel_kind(func, line, &dispatch, &tags, kernels)?;
            (kind, Some((cpu, cuda)))
        }
    };
    let (cpu_dtypes, cuda_dtypes) = backend_dtypes(&r, line)?;
    let dtypes = match cpu_dtypes.clone() {
        Some(d) => d,
        None if kernels_of.is_some() => {
            return Err(nerr(
                line,
                format!("{func}: a CPU kernel needs a `dtypes:` list"),
            ))
        }
        None => DType::ALL.to_vec(),
    };
    let backends = match kernels_of {
        Some((cpu, cuda)) => kernel_backends(&kind, cpu, cuda, &dtypes, cuda_dtypes),
        None => Backends::new(),
    };
    let promote = promote(&r, line, &schema, has_self)?;
    let operands = operands(&r, line, &schema)?;
    let fixed = fixed(&r, line)?;
    let opinfo = opinfo(&r, line, &dtypes)?;
    let autocast = super::autocast::autocast(r.autocast.as_ref(), func, line, &schema)?;
    check_kind_options(&r, line, &kind, opinfo.is_some())?;
    let vectorized = match r.vectorized.as_deref() {
        None => None,
        Some(spec) => Some(
            vectorized_entry(func, line, spec, &kind, kernels)
                .map_err(|e| e.at_key("vectorized"))?,
        ),
    };
    let memory_format = memory_format_args(&r, line, &schema)?;
    let op = Op {
        schema,
        line,
        rust,
        variants,
        kind,
        backends,
        dtypes,
        promote,
        same_dtype_error: r.same_dtype_error.clone(),
        operands,
        fixed,
        opinfo,
        skip_opinfo: r.skip_opinfo,
        derivative: None,
        non_differentiable: false,
        doc: r.doc,
        tags,
        opmath: r.opmath,
        saturate: r.saturate,
        vectorized,
        autocast,
        memory_format,
    };
    check_sources(&op, &r.func, kernels)?;
    check_opinfo(&op, &r.func, kernels)?;
    Ok(op)
}

/// Every input argument has a supported type, a name Rust accepts and a default that parses.
fn check_arguments(func: &str, line: usize, schema: &FunctionSchema) -> Result<(), ModelError> {
    for a in &schema.arguments {
        if a.is_out() {
            continue;
        }
        let kind = ArgKind::of(&a.ty)
            .map_err(|m| nerr(line, format!("{func}: argument '{}': {m}", a.name)))?;
        if !is_rust_ident(&ident_str(&a.name)) {
            return Err(nerr(
                line,
                format!(
                    "{func}: argument '{}' cannot be a Rust parameter name (a keyword); rename it",
                    a.name
                ),
            ));
        }
        if let Some(d) = &a.default {
            kind.default_expr(d)
                .map_err(|m| nerr(line, format!("{func}: argument `{a}`: {m}")))?;
        }
    }
    Ok(())
}

fn default_rust_name(schema: &FunctionSchema) -> String {
    match schema.overload.as_deref() {
        None | Some("Tensor") | Some("self") | Some("int") | Some("Tensor_Tensor") => {
            schema.name.clone()
        }
        Some(o) => format!("{}_{}", schema.name, o.to_lowercase()),
    }
}

/// The public Rust name: `rust:`, or the schema's name (with its overload); unique.
fn rust_name(
    r: &RawOp,
    line: usize,
    schema: &FunctionSchema,
    seen_rust: &mut BTreeSet<String>,
) -> Result<String, ModelError> {
    let rust = r.rust.clone().unwrap_or_else(|| default_rust_name(schema));
    if !is_rust_ident(&rust) {
        return Err(nerr(
            line,
            format!(
                "{}: '{rust}' is not a Rust identifier; give the op a `rust:` name",
                r.func
            ),
        )
        .at_key("rust"));
    }
    if !seen_rust.insert(rust.clone()) {
        return Err(nerr(
            line,
            format!("two operators would both be named '{rust}' in Rust; give one a `rust:` name"),
        )
        .at_key("rust"));
    }
    Ok(rust)
}

fn variants(r: &RawOp, line: usize, has_self: bool) -> Result<Variants, ModelError> {
    let mut variants = Variants::default();
    for v in r
        .variants
        .as_deref()
        .unwrap_or("function")
        .split(',')
        .map(str::trim)
    {
        match v {
            "function" => variants.function = true,
            "method" => variants.method = true,
            "inplace" => variants.inplace = true,
            "out" => variants.out = true,
            other => {
                return Err(nerr(
                    line,
                    format!("unknown variant '{other}' (expected function, method, inplace, out)"),
                )
                .at_key("variants"))
            }
        }
    }
    if (variants.method || variants.inplace) && !has_self {
        return Err(nerr(
            line,
            format!(
                "{}: method and inplace variants need an argument named 'self'",
                r.func
            ),
        )
        .at_key("variants"));
    }
    Ok(variants)
}

/// The `dispatch:` table, its keys parsed: backends alone, or one composite key alone.
fn dispatch_keys(r: &RawOp, line: usize) -> Result<Vec<(DispatchKey, String)>, ModelError> {
    let mut keys = Vec::new();
    for (key, target) in &r.dispatch {
        let Some(k) = DispatchKey::parse(key) else {
            let names: Vec<String> = DispatchKey::NAMES.iter().map(|s| s.to_string()).collect();
            return Err(nerr(line, format!(
                "{}: unknown dispatch key '{key}'{} (expected CPU and CUDA, or one of CompositeExplicitAutograd, CompositeImplicitAutograd)",
                r.func,
                did_you_mean(key, names.iter())
            )).at_key("dispatch"));
        };
        if k == DispatchKey::Backend(BackendKey::Meta) {
            return Err(nerr(line, format!(
                "{}: `Meta` is implied: every op with a CPU kernel has a Meta entry, its shape computation (promotion and broadcasting, or `<kernel>_meta`); drop the key",
                r.func
            )).at_key("dispatch"));
        }
        keys.push((k, target.trim().to_string()));
    }
    if keys.iter().any(|(k, _)| k.is_composite()) && keys.len() != 1 {
        return Err(nerr(line, format!("{}: a composite op runs on every backend through the ops it calls; it takes no CPU or CUDA key", r.func)).at_key("dispatch"));
    }
    Ok(keys)
}

/// A `Tensor[]` return only as the single return of a CompositeImplicitAutograd op.
fn check_list_return(
    func: &str,
    line: usize,
    schema: &FunctionSchema,
    dispatch: &[(DispatchKey, String)],
) -> Result<(), ModelError> {
    let list_return = schema
        .returns
        .iter()
        .any(|ret| matches!(ret.ty, crate::schema::Type::List { .. }));
    let implicit = matches!(dispatch, [(DispatchKey::CompositeImplicit, _)]);
    if list_return && (schema.returns.len() != 1 || !implicit) {
        return Err(nerr(line, format!("{func}: a `Tensor[]` return is supported only as the single return of a CompositeImplicitAutograd op")));
    }
    Ok(())
}

/// Tags change what the generator emits, so a misspelt one must not pass silently.
fn tags(r: &RawOp, line: usize) -> Result<Vec<Tag>, ModelError> {
    r.tags
        .iter()
        .map(|t| {
            Tag::parse(t).ok_or_else(|| {
                let names: Vec<String> = Tag::ALL.iter().map(|t| t.name().to_string()).collect();
                nerr(
                    line,
                    format!(
                        "{}: unknown tag '{t}'{} (expected one of {})",
                        r.func,
                        did_you_mean(t, names.iter()),
                        names.join(", ")
                    ),
                )
                .at_key("tags")
            })
        })
        .collect()
}

/// An op that writes a positional argument (`Tensor(a!)[] self, Tensor(b!) found_inf`,
/// torchgen's "mutable" schema kind) is a hand-written CompositeImplicitAutograd function,
/// called as it is: no derivative, no generated in-place or out= form.
fn check_mutated_inputs(
    func: &str,
    line: usize,
    schema: &FunctionSchema,
    dispatch: &[(DispatchKey, String)],
    variants: Variants,
) -> Result<(), ModelError> {
    let Some(a) = schema
        .arguments
        .iter()
        .find(|a| a.is_write() && !a.kwarg_only)
    else {
        return Ok(());
    };
    let implicit = matches!(dispatch, [(DispatchKey::CompositeImplicit, _)]);
    if !implicit || variants.method || variants.inplace || variants.out {
        return Err(nerr(
            line,
            format!(
                "{func}: argument '{}' is written (`(a!)`): an op that mutates its inputs is a `CompositeImplicitAutograd` function with `variants: function` (write its functional form instead to get generated in-place and out= forms)",
                a.name
            ),
        ));
    }
    Ok(())
}

/// A composite op: its function, which `src/ops/` must define.
fn composite_kind(
    func: &str,
    line: usize,
    key: DispatchKey,
    path: &str,
    variants: Variants,
    kernels: &KernelIndex,
) -> Result<Kind, ModelError> {
    let implicit = key == DispatchKey::CompositeImplicit;
    let key_name = if implicit {
        "CompositeImplicitAutograd"
    } else {
        "CompositeExplicitAutograd"
    };
    let (module, name) = match path.rsplit_once("::") {
        Some((m, n)) if syn::parse_str::<syn::Path>(path).is_ok() && is_rust_ident(n) => {
            (m.to_string(), n.to_string())
        }
        _ => {
            return Err(nerr(
                line,
                format!(
                    "{func}: {key_name} target '{path}' must be written as <module>::<fn>, a function in {}/<module>.rs",
                    crate::paths::RUST_OPS_DIR
                ),
            )
            .at_key("dispatch"))
        }
    };
    if implicit && (variants.inplace || variants.out) {
        return Err(nerr(
            line,
            format!(
                "{func}: a CompositeImplicitAutograd op gets no generated in-place or out= form; drop `inplace` and `out` from variants"
            ),
        )
        .at_key("variants"));
    }
    if let Some(ops) = &kernels.rust_ops {
        if !ops.contains_key(path) {
            let file = format!(
                "{}/{}.rs",
                crate::paths::RUST_OPS_DIR,
                module.replace("::", "/")
            );
            let paths: Vec<String> = ops.keys().cloned().collect();
            return Err(nerr(
                line,
                format!(
                    "{func}: {key_name} names `{path}`, but {file} has no `pub fn {name}`{}",
                    did_you_mean_path(path, &paths)
                ),
            )
            .at_key("dispatch"));
        }
    }
    let path = path.to_string();
    Ok(if implicit {
        Kind::Composite { path }
    } else {
        Kind::Explicit { path }
    })
}

/// An op with kernels: pointwise (tagged) or structured, its CPU and CUDA kernels resolved.
fn kernel_kind(
    func: &str,
    line: usize,
    dispatch: &[(DispatchKey, String)],
    tags: &[Tag],
    kernels: &KernelIndex,
) -> Result<(Kind, KernelRef, KernelRef), ModelError> {
    let target = |key: BackendKey| {
        dispatch
            .iter()
            .find(|(k, _)| *k == DispatchKey::Backend(key))
            .map(|(_, t)| t.as_str())
    };
    let Some(cpu_target) = target(BackendKey::Cpu) else {
        return Err(nerr(line, format!("{func}: dispatch needs CPU (and CUDA), or one of CompositeExplicitAutograd, CompositeImplicitAutograd")).at_key("dispatch"));
    };
    let Some(cuda_target) = target(BackendKey::Cuda) else {
        return Err(nerr(line, format!(
            "{func}: no CUDA kernel: add `CUDA: <module>::<fn>` to dispatch (a `__device__` fn in {}/<module>.cuh for a pointwise op, else a launcher in {}/<module>.rs)",
            crate::paths::CUDA_KERNELS_DIR,
            crate::paths::CUDA_LAUNCHERS_DIR
        )).at_key("dispatch"));
    };
    let (module, kernel) = kernels.resolve(cpu_target).map_err(|m| {
        // A bare name in several modules is known: the message asks for its module.
        let ambiguous = !cpu_target.contains("::") && kernels.functions.contains_key(cpu_target);
        let hint = if ambiguous {
            String::new()
        } else {
            did_you_mean_path(cpu_target, &paths(&kernels.functions))
        };
        nerr(line, format!("{func}: {m}{hint}")).at_key("dispatch")
    })?;
    let (cuda_module, cuda_kernel) = kernels.resolve_cuda(cuda_target).map_err(|m| {
        let hint = did_you_mean_path(cuda_target, &paths(&kernels.cuda));
        nerr(line, format!("{func}: {m}{hint}")).at_key("dispatch")
    })?;
    let kind = if tags.contains(&Tag::Pointwise) {
        Kind::Pointwise {
            check: kernels.has(&module, &format!("{kernel}_check")),
        }
    } else {
        if !kernels.has(&module, &format!("{kernel}_meta")) {
            return Err(nerr(line, format!(
                "{func}: structured kernel '{module}::{kernel}' has no `pub fn {kernel}_meta` computing output shapes"
            )).at_key("dispatch"));
        }
        Kind::Structured {
            check: kernels.has(&module, &format!("{kernel}_check")),
        }
    };
    Ok((
        kind,
        KernelRef::new(module, kernel),
        KernelRef::new(cuda_module, cuda_kernel),
    ))
}

/// Every `module::name` of an index's `name → modules` map.
fn paths(index: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    index
        .iter()
        .flat_map(|(name, modules)| modules.iter().map(move |m| format!("{m}::{name}")))
        .collect()
}

/// The table of an op with kernels: CPU and CUDA as resolved, and Meta implicitly, whose
/// "kernel" is the shape computation (nothing runs, so every dtype).
fn kernel_backends(
    kind: &Kind,
    cpu: KernelRef,
    cuda: KernelRef,
    cpu_dtypes: &[DType],
    cuda_dtypes: Option<Vec<DType>>,
) -> Backends {
    let meta = match kind {
        Kind::Structured { .. } => KernelRef::new(cpu.module.clone(), format!("{}_meta", cpu.name)),
        _ => KernelRef::new("launch", "broadcast_shapes"),
    };
    BTreeMap::from([
        (
            BackendKey::Cpu,
            BackendKernel {
                kernel: cpu,
                dtypes: cpu_dtypes.to_vec(),
            },
        ),
        (
            BackendKey::Cuda,
            BackendKernel {
                kernel: cuda,
                dtypes: cuda_dtypes.unwrap_or_else(|| cpu_dtypes.to_vec()),
            },
        ),
        (
            BackendKey::Meta,
            BackendKernel {
                kernel: meta,
                dtypes: DType::ALL.to_vec(),
            },
        ),
    ])
}

/// `dtypes:`: `(CPU, CUDA)`, each `None` when not given (CUDA then takes CPU's).
type DTypePair = (Option<Vec<DType>>, Option<Vec<DType>>);

fn backend_dtypes(r: &RawOp, line: usize) -> Result<DTypePair, ModelError> {
    dtype_pair(&r.dtypes, line, &r.func).map_err(|e| e.at_key("dtypes"))
}

/// A `dtypes:` value (an op's or its OpInfo's) as `(CPU, CUDA)`; `what` starts its errors.
fn dtype_pair(
    spec: &Option<BackendDTypes>,
    line: usize,
    what: &str,
) -> Result<DTypePair, ModelError> {
    match spec {
        Some(BackendDTypes::Shared(d)) => {
            let d = dtype_set(d).map_err(|m| nerr(line, format!("{what}: {m}")))?;
            Ok((Some(d.clone()), Some(d)))
        }
        Some(BackendDTypes::PerBackend(m)) => {
            let mut cpu = None;
            let mut cuda = None;
            for (k, d) in m {
                let slot = match BackendKey::parse(k) {
                    Some(BackendKey::Cpu) => &mut cpu,
                    Some(BackendKey::Cuda) => &mut cuda,
                    _ => {
                        return Err(nerr(
                            line,
                            format!(
                                "{what}: dtypes for unknown backend '{k}' (expected CPU, CUDA)"
                            ),
                        ))
                    }
                };
                *slot = Some(dtype_set(d).map_err(|m| nerr(line, format!("{what}: {m}")))?);
            }
            Ok((cpu, cuda))
        }
        None => Ok((None, None)),
    }
}

/// `promote:`, with the arguments its rule reads.
fn promote(
    r: &RawOp,
    line: usize,
    schema: &FunctionSchema,
    has_self: bool,
) -> Result<Promote, ModelError> {
    let func = &r.func;
    let promote = match r.promote.as_deref().unwrap_or("default") {
        "default" => Promote::Default,
        "int_to_float" => Promote::IntToFloat,
        "bool_to_long" => Promote::BoolToLong,
        "comparison" => Promote::Comparison,
        "self" => Promote::SelfType,
        "sum" => Promote::Sum,
        "same" => Promote::Same,
        s if s.starts_with("arg:") => {
            let name = &s[4..];
            let ok = schema.arguments.iter().any(|a| {
                a.name == name
                    && matches!(
                        ArgKind::of(&a.ty),
                        Ok(ArgKind::ScalarType | ArgKind::OptScalarType)
                    )
            });
            if !ok {
                return Err(nerr(
                    line,
                    format!(
                        "{func}: promote: {s} needs an argument '{name}' of type ScalarType or ScalarType?"
                    ),
                )
                .at_key("promote"));
            }
            Promote::Arg(name.to_string())
        }
        other => {
            return Err(nerr(
                line,
                format!("unknown promote rule '{other}' (expected default, int_to_float, bool_to_long, comparison, self, same, sum or arg:<name>)"),
            )
            .at_key("promote"))
        }
    };
    // `self`, `sum` and `arg:<x>` with a `ScalarType?` read `self`'s dtype.
    let reads_self = match &promote {
        Promote::SelfType | Promote::Sum => true,
        Promote::Arg(name) => schema
            .arguments
            .iter()
            .any(|a| &a.name == name && matches!(ArgKind::of(&a.ty), Ok(ArgKind::OptScalarType))),
        _ => false,
    };
    if reads_self && !has_self {
        return Err(nerr(
            line,
            format!(
                "{func}: promote: {} falls back on the dtype of the argument 'self', which the schema lacks",
                r.promote.as_deref().unwrap_or_default()
            ),
        )
        .at_key("promote"));
    }
    let sum_dtype = schema
        .arguments
        .iter()
        .any(|a| a.name == "dtype" && matches!(ArgKind::of(&a.ty), Ok(ArgKind::OptScalarType)));
    if promote == Promote::Sum && !sum_dtype {
        return Err(nerr(
            line,
            format!(
                "{func}: promote: sum reads an argument `ScalarType? dtype`, which the schema lacks"
            ),
        )
        .at_key("promote"));
    }
    if r.same_dtype_error.is_some() && promote != Promote::Same {
        return Err(nerr(
            line,
            format!("{func}: same_dtype_error needs promote: same"),
        )
        .at_key("same_dtype_error"));
    }
    Ok(promote)
}

/// `operands:` (default: every tensor argument without a fixed dtype); every name there and
/// in `fixed:` is an argument or an output.
fn operands(r: &RawOp, line: usize, schema: &FunctionSchema) -> Result<Vec<String>, ModelError> {
    let tensor_args: Vec<String> = schema
        .arguments
        .iter()
        .filter(|a| !a.is_out() && a.ty.is_tensor_like())
        .map(|a| a.name.clone())
        .collect();
    let operands = r.operands.clone().unwrap_or_else(|| {
        tensor_args
            .iter()
            .filter(|n| !r.fixed.contains_key(*n))
            .cloned()
            .collect()
    });
    // Defaults are arguments: a name in error was written under `operands:` or `fixed:`.
    let written = r.operands.iter().flatten().map(|o| (o, "operands"));
    for (o, key) in written.chain(r.fixed.keys().map(|o| (o, "fixed"))) {
        // Outputs as `Op::outputs` names them: `result`, or `result0`, `result1`, ... for
        // unnamed returns of a tuple.
        let is_output = schema
            .returns
            .iter()
            .enumerate()
            .any(|(i, ret)| match &ret.name {
                Some(n) => n == o,
                None if schema.returns.len() == 1 => o == "result",
                None => *o == format!("result{i}"),
            });
        if !is_output && !schema.arguments.iter().any(|a| &a.name == o) {
            return Err(nerr(
                line,
                format!("{}: '{o}' is not an argument or output", r.func),
            )
            .at_key(key));
        }
    }
    Ok(operands)
}

/// `memory_format:`: each name a plain (not optional, not list) tensor argument.
fn memory_format_args(
    r: &RawOp,
    line: usize,
    schema: &FunctionSchema,
) -> Result<Vec<String>, ModelError> {
    for name in &r.memory_format {
        let plain = schema.arguments.iter().any(|a| {
            &a.name == name && !a.is_out() && matches!(a.ty, crate::schema::Type::Tensor { .. })
        });
        if !plain {
            return Err(nerr(
                line,
                format!(
                    "{}: `memory_format:` names '{name}', which is not a plain Tensor argument",
                    r.func
                ),
            )
            .at_key("memory_format"));
        }
    }
    Ok(r.memory_format.clone())
}

/// `fixed:` dtypes, parsed.
fn fixed(r: &RawOp, line: usize) -> Result<BTreeMap<String, Fixed>, ModelError> {
    r.fixed
        .iter()
        .map(|(name, d)| {
            let fixed = Fixed::parse(d).ok_or_else(|| {
                let names: Vec<String> = DType::ALL.iter().map(|d| d.short().to_string()).collect();
                nerr(
                    line,
                    format!(
                        "{}: unknown dtype '{d}' in fixed:{} (expected one of {}, or {})",
                        r.func,
                        did_you_mean(d, names.iter()),
                        names.join(", "),
                        Fixed::OPMATH
                    ),
                )
                .at_key("fixed")
            })?;
            Ok((name.clone(), fixed))
        })
        .collect()
}

/// `opinfo:`; its dtypes default to the op's.
fn opinfo(r: &RawOp, line: usize, dtypes: &[DType]) -> Result<Option<OpInfo>, ModelError> {
    let Some(o) = &r.opinfo else {
        return Ok(None);
    };
    let (cpu, cuda) = dtype_pair(&o.dtypes, line, &format!("{}: opinfo", r.func))
        .map_err(|e| e.at_key("opinfo"))?;
    let cpu = cpu.unwrap_or_else(|| dtypes.to_vec());
    Ok(Some(OpInfo {
        samples: o.samples.trim().to_string(),
        reference: o.reference.trim().to_string(),
        cuda_dtypes: cuda.unwrap_or_else(|| cpu.clone()),
        dtypes: cpu,
        gradcheck: o.gradcheck.unwrap_or(true),
        variants: o.variants.unwrap_or(true),
        errors: o.errors.unwrap_or(true),
    }))
}

/// Options that only some kinds take, and the OpInfo entry or the reason for its absence.
fn check_kind_options(
    r: &RawOp,
    line: usize,
    kind: &Kind,
    has_opinfo: bool,
) -> Result<(), ModelError> {
    if !r.saturate.is_empty() && !matches!(kind, Kind::Pointwise { .. }) {
        return Err(nerr(
            line,
            format!("{}: `saturate:` is for pointwise ops (a structured kernel receives its Scalars as f64)", r.func),
        )
        .at_key("saturate"));
    }
    if r.opmath && !matches!(kind, Kind::Composite { .. }) {
        return Err(nerr(
            line,
            format!("{}: `opmath: true` is for CompositeImplicitAutograd ops (a kernel picks its own accumulation type)", r.func),
        )
        .at_key("opmath"));
    }
    if !r.memory_format.is_empty() && !matches!(kind, Kind::Structured { .. }) {
        return Err(nerr(
            line,
            format!("{}: `memory_format:` is for structured ops (whose outputs the generated code allocates)", r.func),
        )
        .at_key("memory_format"));
    }
    if !has_opinfo && r.skip_opinfo.as_deref().is_none_or(|s| s.trim().is_empty()) {
        return Err(nerr(
            line,
            format!(
                "{}: no `opinfo:` entry and no `skip_opinfo: \"<reason>\"`",
                r.func
            ),
        )
        // An empty reason is on its key's line; a missing one, the entry's.
        .at_key("skip_opinfo"));
    }
    Ok(())
}
