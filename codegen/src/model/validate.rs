//! Checks of an op against the sources its entry names: kernel, meta, check and CUDA
//! signatures, composite functions, vectorised slice kernels, OpInfo sample sets and refs.

use super::backend::BackendKey;
use super::contract;
use super::dtype::Fixed;
use super::error::{did_you_mean, is_rust_ident, nerr, ModelError};
use super::op::Vectorized;
use super::op::{Arg, Kind, Op, OpInfo, Promote};
use crate::kernels_index::{FnSig, KernelIndex};
use crate::paths::{
    CPU_KERNELS_DIR, CUDA_KERNELS_DIR, CUDA_LAUNCHERS_DIR, REFS_FILE, SAMPLES_FILE,
};
use crate::types::ArgKind;

/// Checks `sig`, when the index read it, against what the generated code passes; a
/// mismatch is reported at `key`, the entry's key that names the function.
fn check_call(
    line: usize,
    key: &'static str,
    func: &str,
    call: &contract::Call,
    sig: Option<&FnSig>,
) -> Result<(), ModelError> {
    match sig {
        Some(sig) => call
            .check(sig)
            .map_err(|m| nerr(line, format!("{func}: {m}")).at_key(key)),
        None => Ok(()),
    }
}

/// Argument kinds the pointwise loops and `kernels/cuda/pointwise.cu.j2` can pass to a
/// scalar function.
fn pointwise_kind(kind: ArgKind) -> bool {
    matches!(
        kind,
        ArgKind::Tensor | ArgKind::Scalar | ArgKind::OptScalar | ArgKind::Float | ArgKind::Str
    )
}

/// Resolves `vectorized: <module>::<stem>` to the slice kernels that exist.
pub(super) fn vectorized_entry(
    func: &str,
    line: usize,
    spec: &str,
    kind: &Kind,
    kernels: &KernelIndex,
) -> Result<Vectorized, ModelError> {
    if !matches!(kind, Kind::Pointwise { .. }) {
        return Err(nerr(
            line,
            format!("{func}: `vectorized:` names slice kernels of a pointwise op (tags: [pointwise] with a CPU kernel)"),
        ));
    }
    let Some((module, stem)) = spec
        .trim()
        .split_once("::")
        .filter(|(m, s)| is_rust_ident(m) && is_rust_ident(s))
    else {
        return Err(nerr(
            line,
            format!("{func}: vectorized '{spec}' must be written as <module>::<stem>, naming `<stem>_f32` and/or `<stem>_f64` in {CPU_KERNELS_DIR}/<module>.rs"),
        ));
    };
    let elems: Vec<_> = Vectorized::ELEMS
        .into_iter()
        .filter(|e| kernels.has(module, &format!("{stem}_{e}")))
        .collect();
    if elems.is_empty() {
        return Err(nerr(
            line,
            format!("{func}: vectorized '{spec}' names no slice kernel: {CPU_KERNELS_DIR}/{module}.rs has neither `pub fn {stem}_f32` nor `pub fn {stem}_f64`"),
        ));
    }
    let inplace = elems
        .iter()
        .filter(|e| kernels.has(module, &format!("{stem}_{e}_")))
        .copied()
        .collect();
    Ok(Vectorized {
        module: module.to_string(),
        stem: stem.to_string(),
        elems,
        inplace,
    })
}

/// The functions `op` names in Rust and CUDA sources take what the generated code passes:
/// its CPU kernel (by kind) or composite function, then its CUDA kernel.
pub(super) fn check_sources(op: &Op, func: &str, kernels: &KernelIndex) -> Result<(), ModelError> {
    match &op.kind {
        Kind::Pointwise { check } => check_pointwise(op, func, *check, kernels)?,
        Kind::Structured { check } => check_structured(op, func, *check, kernels)?,
        Kind::Composite { path } | Kind::Explicit { path } => {
            let role = if matches!(op.kind, Kind::Composite { .. }) {
                "CompositeImplicitAutograd function"
            } else {
                "CompositeExplicitAutograd function"
            };
            let call = contract::rust_op(op, role, path);
            let sig = kernels.rust_ops.as_ref().and_then(|o| o.get(path));
            check_call(op.line, "dispatch", func, &call, sig)?;
        }
    }
    check_cuda(op, func, kernels)
}

/// A pointwise op: its arguments, `saturate:` and `fixed:`, the scalar kernel, the
/// `vectorized:` slice kernels and the `_check`.
fn check_pointwise(
    op: &Op,
    func: &str,
    check: bool,
    kernels: &KernelIndex,
) -> Result<(), ModelError> {
    let line = op.line;
    let args = op.args();
    let (module, kernel) = (&op.cpu().kernel.module, &op.cpu().kernel.name);
    if let Some(a) = args.iter().find(|a| !pointwise_kind(a.kind)) {
        return Err(nerr(
            line,
            format!(
                "{func}: a pointwise kernel takes tensors, Scalar, Scalar?, float and str arguments; argument `{}` is {:?} (drop the pointwise tag and write a structured kernel)",
                a.name, a.kind
            ),
        ));
    }
    if let Some(s) = op.saturate.iter().find(|s| {
        !args
            .iter()
            .any(|a| &a.name == *s && matches!(a.kind, ArgKind::Scalar | ArgKind::OptScalar))
    }) {
        return Err(nerr(
            line,
            format!("{func}: `saturate:` names `{s}`, which is not a Scalar or Scalar? argument"),
        )
        .at_key("saturate"));
    }
    let outputs = op.outputs();
    if let Some((a, _)) = op.fixed.iter().find(|(_, d)| **d == Fixed::Opmath) {
        return Err(nerr(
            line,
            format!(
                "{func}: `{a}: opmath` needs a structured kernel; a pointwise kernel computes every operand in `T`'s compute type already"
            ),
        )
        .at_key("fixed"));
    }
    if let Some(o) = op.fixed.keys().find(|k| outputs.contains(k)) {
        return Err(nerr(
            line,
            format!(
                "{func}: a pointwise op's output `{o}` takes the compute dtype (bool with promote: comparison); `fixed:` applies to its inputs only"
            ),
        )
        .at_key("fixed"));
    }
    let call = contract::pointwise_kernel(op, module, kernel);
    check_call(
        line,
        "dispatch",
        func,
        &call,
        kernels.cpu_signature(module, kernel),
    )?;
    if check {
        let name = format!("{kernel}_check");
        let call = contract::kernel_check(op, module, kernel);
        check_call(
            line,
            "dispatch",
            func,
            &call,
            kernels.cpu_signature(module, &name),
        )?;
    }
    if let Some(v) = &op.vectorized {
        check_vectorized(op, func, v, kernels)?;
    }
    Ok(())
}

/// `vectorized:` serves a unary op that keeps its dtype; each slice kernel fits.
fn check_vectorized(
    op: &Op,
    func: &str,
    v: &Vectorized,
    kernels: &KernelIndex,
) -> Result<(), ModelError> {
    let line = op.line;
    let args = op.args();
    let tensors: Vec<&Arg> = args.iter().filter(|a| a.kind == ArgKind::Tensor).collect();
    let unary_same = matches!(tensors.as_slice(), [t] if !op.fixed.contains_key(&t.name))
        && op.promote != Promote::Comparison;
    if !unary_same {
        return Err(nerr(
            line,
            format!("{func}: `vectorized:` slice kernels serve ops with one tensor argument whose result has its dtype (not fixed, not promote: comparison)"),
        )
        .at_key("vectorized"));
    }
    for &elem in &v.elems {
        let name = v.name(elem);
        let call = contract::slice_kernel(op, &v.module, &name, elem, false);
        check_call(
            line,
            "vectorized",
            func,
            &call,
            kernels.cpu_signature(&v.module, &name),
        )?;
        if let Some(name) = v.inplace_name(elem) {
            let call = contract::slice_kernel(op, &v.module, &name, elem, true);
            check_call(
                line,
                "vectorized",
                func,
                &call,
                kernels.cpu_signature(&v.module, &name),
            )?;
        }
    }
    Ok(())
}

/// A structured op: arguments it can take, the kernel and its `_meta`.
fn check_structured(
    op: &Op,
    func: &str,
    check: bool,
    kernels: &KernelIndex,
) -> Result<(), ModelError> {
    let line = op.line;
    let args = op.args();
    let (module, kernel) = (&op.cpu().kernel.module, &op.cpu().kernel.name);
    if let Some(a) = args.iter().find(|a| a.kind == ArgKind::OptTensorList) {
        return Err(nerr(
            line,
            format!(
                "{func}: a structured kernel cannot take a list of optional tensors (`{}`): absent entries and bool masks change the output's shape with the data; write the op as CompositeExplicitAutograd over kernels (as `index.Tensor` is)",
                a.name
            ),
        ));
    }
    if let Some(a) = args
        .iter()
        .find(|a| a.kind == ArgKind::TensorList && op.fixed.contains_key(&a.name))
    {
        return Err(nerr(
            line,
            format!(
                "{func}: `fixed:` applies to tensors and outputs, not to the tensor list `{}`",
                a.name
            ),
        )
        .at_key("fixed"));
    }
    let call = contract::structured_kernel(op, module, kernel);
    check_call(
        line,
        "dispatch",
        func,
        &call,
        kernels.cpu_signature(module, kernel),
    )?;
    let meta = format!("{kernel}_meta");
    let call = contract::structured_meta(op, module, kernel);
    check_call(
        line,
        "dispatch",
        func,
        &call,
        kernels.cpu_signature(module, &meta),
    )?;
    if check {
        let name = format!("{kernel}_check");
        let call = contract::kernel_check(op, module, kernel);
        check_call(
            line,
            "dispatch",
            func,
            &call,
            kernels.cpu_signature(module, &name),
        )?;
    }
    Ok(())
}

/// The CUDA entry: a `__device__` scalar function of the right arity for a pointwise op, a
/// launcher that fits otherwise.
fn check_cuda(op: &Op, func: &str, kernels: &KernelIndex) -> Result<(), ModelError> {
    let Some(cuda) = op.backend(BackendKey::Cuda) else {
        return Ok(());
    };
    if !kernels.has_cuda_sources() {
        return Ok(());
    }
    let line = op.line;
    let args = op.args();
    let (module, name) = (&cuda.kernel.module, &cuda.kernel.name);
    if !matches!(op.kind, Kind::Pointwise { .. }) {
        let Some(sig) = kernels.cuda_signature(module, name) else {
            return Err(nerr(
                line,
                format!(
                    "{func}: CUDA kernel `{module}::{name}` of a non-pointwise op must be a launcher `pub fn {name}` in {CUDA_LAUNCHERS_DIR}/{module}.rs; {CUDA_KERNELS_DIR}/{module}.cuh has a `__device__` function of that name, which serves pointwise ops"
                ),
            )
            .at_key("dispatch"));
        };
        let call = contract::cuda_launcher(op, module, name);
        check_call(line, "dispatch", func, &call, Some(sig))?;
        return Ok(());
    }
    let device = kernels.device_fns(module, name);
    if device.is_empty() {
        return Err(nerr(
            line,
            format!(
                "{func}: CUDA kernel `{module}::{name}` of a pointwise op must be a `__device__` scalar function in {CUDA_KERNELS_DIR}/{module}.cuh; {CUDA_LAUNCHERS_DIR}/{module}.rs has a launcher of that name, which serves non-pointwise ops"
            ),
        )
        .at_key("dispatch"));
    }
    let n = args.len();
    let known: Vec<&crate::kernels_index::DeviceFn> =
        device.iter().filter(|d| d.arity.is_some()).collect();
    if !known.is_empty() && !known.iter().any(|d| d.arity == Some(n)) {
        let found: Vec<String> = known
            .iter()
            .map(|d| {
                format!(
                    "{} parameter(s) at {}",
                    d.arity.unwrap_or_default(),
                    d.location
                )
            })
            .collect();
        return Err(nerr(
            line,
            format!(
                "{func}: CUDA kernel `{module}::{name}` does not fit the schema: the generated kernel calls it with {n} argument(s) ({}), but it takes {}",
                args.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
                found.join(", ")
            ),
        )
        .at_key("dispatch"));
    }
    Ok(())
}

/// The OpInfo entry names sample sets and references that exist and fit.
pub(super) fn check_opinfo(op: &Op, func: &str, kernels: &KernelIndex) -> Result<(), ModelError> {
    let Some(info) = &op.opinfo else {
        return Ok(());
    };
    let line = op.line;
    if !op.variants.function && !op.variants.method {
        return Err(nerr(
            line,
            format!("{func}: the OpInfo tests call the op through its function or method; add one of them to variants"),
        )
        .at_key("variants"));
    }
    opinfo_names(op, info, func, kernels).map_err(|e| e.at_key("opinfo"))
}

/// The sample set and reference an OpInfo entry names exist and fit the op.
fn opinfo_names(
    op: &Op,
    info: &OpInfo,
    func: &str,
    kernels: &KernelIndex,
) -> Result<(), ModelError> {
    let line = op.line;
    if !is_rust_ident(&info.samples) {
        return Err(nerr(
            line,
            format!(
                "{func}: opinfo samples '{}' must name a function in {SAMPLES_FILE}",
                info.samples
            ),
        ));
    }
    if let Some(samples) = &kernels.samples {
        let check = |name: &str, call: contract::Call, why: &str| -> Result<(), ModelError> {
            match samples.get(name) {
                Some(sig) => check_call(line, "opinfo", func, &call, Some(sig)),
                None => Err(nerr(
                    line,
                    format!(
                        "{func}: opinfo {why}, but {SAMPLES_FILE} has no `pub fn {name}`{}",
                        did_you_mean(name, samples.keys())
                    ),
                )),
            }
        };
        let s = &info.samples;
        check(
            s,
            contract::opinfo_fn(
                "sample set",
                &format!("samples::{s}"),
                &[("dtype", "DType", "the dtype to make samples in")],
                "Vec<Sample>",
            ),
            &format!("samples: {s}"),
        )?;
        if info.errors {
            let e = format!("{s}_errors");
            check(
                &e,
                contract::opinfo_fn("error samples", &format!("samples::{e}"), &[], "Vec<ErrorSample>"),
                &format!("samples: {s} needs `{e}()`, the inputs the op must reject (or `errors: false` when no input can make it fail)"),
            )?;
        }
    }
    let args = op.args();
    if matches!(op.kind, Kind::Pointwise { .. }) {
        let closure = match syn::parse_str::<syn::Expr>(&info.reference) {
            Ok(syn::Expr::Closure(c)) => c,
            Ok(_) => {
                return Err(nerr(
                    line,
                    format!(
                        "{func}: the ref of a pointwise op is a float64 closure over its arguments, like \"|a, b| a * b\"; found '{}'",
                        info.reference
                    ),
                ))
            }
            Err(e) => {
                return Err(nerr(
                    line,
                    format!("{func}: ref '{}' is not a Rust closure: {e}", info.reference),
                ))
            }
        };
        if closure.inputs.len() != args.len() {
            return Err(nerr(
                line,
                format!(
                    "{func}: ref closure takes {} parameter(s), but the op has {} argument(s) ({}), which the harness passes in order",
                    closure.inputs.len(),
                    args.len(),
                    args.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        return Ok(());
    }
    if !is_rust_ident(&info.reference) {
        return Err(nerr(
            line,
            format!(
                "{func}: the ref of a non-pointwise op names a float64 function in {REFS_FILE}; found '{}'",
                info.reference
            ),
        ));
    }
    if let Some(refs) = &kernels.refs {
        let name = &info.reference;
        let Some(sig) = refs.get(name) else {
            return Err(nerr(
                line,
                format!(
                    "{func}: opinfo ref: {name}, but {REFS_FILE} has no `pub fn {name}`{}",
                    did_you_mean(name, refs.keys())
                ),
            ));
        };
        let call = contract::opinfo_fn(
            "reference",
            &format!("refs::{name}"),
            &[("s", "&Sample", "the sample")],
            "Vec<RefTensor>",
        );
        check_call(line, "opinfo", func, &call, Some(sig))?;
    }
    Ok(())
}
