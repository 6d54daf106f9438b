//! Every mistake the generator catches in the YAML is a build error naming the file, the line
//! and what is wrong. Each test feeds one bad snippet and checks the message.

use kiln_codegen::kernels_index::KernelIndex;
use kiln_codegen::model::{build, BackendKey, DType, ModelError};

fn kernels() -> KernelIndex {
    let mut k = KernelIndex::default();
    for (name, module) in [
        ("mul", "binary"),
        ("exp", "unary"),
        ("sum_dim", "reduce"),
        ("sum_dim_meta", "reduce"),
    ] {
        k.functions
            .entry(name.to_string())
            .or_default()
            .push(module.to_string());
    }
    for (name, module) in [("mul", "binary"), ("exp", "unary"), ("sum_dim", "reduce")] {
        k.cuda
            .entry(name.to_string())
            .or_default()
            .push(module.to_string());
    }
    k
}

const MUL: &str = r#"
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch: {CPU: mul, CUDA: binary::mul}
  tags: [pointwise]
  dtypes: all
  opinfo: {samples: binary, ref: "|a, b| a * b"}
"#;

const MUL_D: &str = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad.mul(&other)?
  other: grad.mul(&self)?
"#;

/// The one error `build` reports for a YAML with one mistake (a mistake never cascades
/// into errors about other entries).
fn err(native: &str, derivs: &str) -> ModelError {
    let mut errors = build(native, derivs, &kernels()).expect_err("the YAML is invalid");
    assert_eq!(errors.len(), 1, "one mistake, one error: {errors:#?}");
    errors.remove(0)
}

#[test]
fn valid_yaml_builds() {
    let m = build(MUL, MUL_D, &kernels()).unwrap();
    assert_eq!(m.ops.len(), 1);
    assert_eq!(m.ops[0].derivative.as_ref().unwrap().node, "MulBackward0");
}

#[test]
fn unknown_kernel_names_the_line() {
    let e = err(&MUL.replace("CPU: mul,", "CPU: mull,"), MUL_D);
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 2));
    assert!(e.message.contains("unknown CPU kernel 'mull'"), "{e}");
}

#[test]
fn formula_naming_a_missing_argument_is_an_error() {
    let e = err(MUL, &MUL_D.replace("grad.mul(&other)?", "grad.mul(&othr)?"));
    // The formula's own line, inside the entry that starts on line 2.
    assert_eq!((e.file.as_str(), e.line), ("derivatives.yaml", 3));
    assert!(
        e.message.contains("names 'othr', which is not an argument"),
        "{e}"
    );
}

#[test]
fn one_formula_may_give_several_inputs_gradients() {
    let d = MUL_D.replace(
        "  self: grad.mul(&other)?\n  other: grad.mul(&self)?\n",
        "  self, other: (Some(grad.mul(&other)?), Some(grad.mul(&self)?))\n",
    );
    let m = build(MUL, &d, &kernels()).unwrap();
    let f = &m.ops[0].derivative.as_ref().unwrap().formulas;
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].inputs, ["self", "other"]);
    let e = err(
        MUL,
        &MUL_D.replace(
            "  other: grad.mul(&self)?\n",
            "  other, self: (Some(grad.clone()), None)\n",
        ),
    );
    assert!(e.message.contains("'self' has another formula"), "{e}");
}

#[test]
fn opmath_is_a_fixed_dtype_of_structured_kernels_only() {
    let e = err(
        &MUL.replace(
            "  dtypes: all\n",
            "  dtypes: all\n  fixed: {other: opmath}\n",
        ),
        MUL_D,
    );
    assert!(
        e.message
            .contains("`other: opmath` needs a structured kernel"),
        "{e}"
    );
}

#[test]
fn saturate_names_scalar_arguments_only() {
    let e = err(
        &MUL.replace("  dtypes: all\n", "  dtypes: all\n  saturate: [other]\n"),
        MUL_D,
    );
    assert!(
        e.message
            .contains("`saturate:` names `other`, which is not a Scalar or Scalar? argument"),
        "{e}"
    );
}

#[test]
fn formula_for_an_input_the_schema_lacks_is_an_error() {
    let e = err(MUL, &format!("{MUL_D}  input: grad.clone()\n"));
    assert!(e.message.contains("has no argument named 'input'"), "{e}");
}

#[test]
fn differentiable_op_without_derivative_is_an_error() {
    let e = err(MUL, "");
    assert_eq!(e.line, 2);
    assert!(
        e.message.contains("is differentiable") && e.message.contains("no entry"),
        "{e}"
    );
}

#[test]
fn op_without_opinfo_or_reason_is_an_error() {
    let native = MUL.replace("  opinfo: {samples: binary, ref: \"|a, b| a * b\"}\n", "");
    let e = err(&native, MUL_D);
    assert!(
        e.message.contains("no `opinfo:` entry and no `skip_opinfo"),
        "{e}"
    );
    let with_reason = format!("{native}  skip_opinfo: \"covered by tests/mul.rs\"\n");
    assert!(build(&with_reason, MUL_D, &kernels()).is_ok());
}

#[test]
fn malformed_schema_is_an_error_with_the_column() {
    let e = err(&MUL.replace("Tensor other)", "Tensr other)"), MUL_D);
    assert_eq!(e.line, 2);
    assert!(
        e.message.contains("malformed schema") && e.message.contains("unknown type 'Tensr'"),
        "{e}"
    );
}

#[test]
fn derivative_for_unknown_op_is_an_error() {
    // Both sides of the mistake are reported: the entry names no op, and mul lacks one.
    let errors = build(MUL, &MUL_D.replace("mul.Tensor", "mul.Tenser"), &kernels()).unwrap_err();
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(messages[0].starts_with("native_functions.yaml:2: mul.Tensor is differentiable"));
    assert!(
        messages[1].starts_with("derivatives.yaml:2: no operator 'mul.Tenser"),
        "{messages:#?}"
    );
}

#[test]
fn structured_kernel_without_meta_is_an_error() {
    let native = r#"
- func: exp(Tensor self) -> Tensor
  dispatch: {CPU: exp, CUDA: unary::exp}
  dtypes: floating
  opinfo: {samples: unary, ref: exp}
"#;
    let e = err(native, "");
    assert!(e.message.contains("has no `pub fn exp_meta`"), "{e}");
}

#[test]
fn unknown_dtype_is_an_error() {
    let e = err(&MUL.replace("dtypes: all", "dtypes: [f32, f128]"), MUL_D);
    assert!(e.message.contains("unknown dtype 'f128'"), "{e}");
}

#[test]
fn unknown_yaml_key_is_an_error() {
    let e = err(&MUL.replace("  tags:", "  tagz:"), MUL_D);
    assert!(e.message.contains("unknown field `tagz`"), "{e}");
}

#[test]
fn unknown_tag_is_an_error() {
    let e = err(
        &MUL.replace("tags: [pointwise]", "tags: [pointwise, overwrite]"),
        MUL_D,
    );
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 2));
    assert!(e.message.contains("unknown tag 'overwrite'"), "{e}");
}

#[test]
fn composite_op_takes_no_derivative() {
    let native = MUL
        .replace(
            "{CPU: mul, CUDA: binary::mul}",
            "{CompositeImplicitAutograd: composite::mul}",
        )
        .replace("ref: \"|a, b| a * b\"", "ref: mul");
    let e = err(&native, MUL_D);
    assert!(e.message.contains("CompositeImplicitAutograd"), "{e}");
}

#[test]
fn metadata_reads_are_saved_instead_of_tensors() {
    let native = r#"
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  dispatch: {CPU: sum_dim, CUDA: reduce::sum_dim}
  dtypes: floating
  opinfo: {samples: reduce_dim, ref: sum_dim}
"#;
    let derivs = r#"
- name: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  self: sum_backward(&grad, self.sizes(), dim, keepdim)?
"#;
    let m = build(native, derivs, &kernels()).unwrap();
    let names: Vec<String> = kiln_codegen::gen::nodes::fields(&m.ops[0])
        .iter()
        .map(|f| f.name.to_string())
        .collect();
    assert_eq!(names, vec!["self_sizes", "dim", "keepdim"]);
    assert_eq!(m.ops[0].derivative.as_ref().unwrap().node, "SumBackward0");
}

#[test]
fn same_dtype_error_needs_promote_same() {
    let native = MUL.replace(
        "  dtypes: all\n",
        "  dtypes: all\n  same_dtype_error: \"mul(): Expected self.dtype to be equal to other.dtype\"\n",
    );
    let e = err(&native, MUL_D);
    assert!(
        e.message.contains("same_dtype_error needs promote: same"),
        "{e}"
    );
    let ok = native.replace("  dtypes: all\n", "  dtypes: all\n  promote: same\n");
    let m = build(&ok, MUL_D, &kernels()).unwrap();
    assert!(m.ops[0].same_dtype_error.is_some());
}

#[test]
fn a_cpu_kernel_without_a_cuda_kernel_is_an_error() {
    let e = err(&MUL.replace(", CUDA: binary::mul", ""), MUL_D);
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 2));
    assert!(e.message.contains("no CUDA kernel"), "{e}");
}

#[test]
fn unknown_cuda_kernel_is_an_error() {
    let e = err(
        &MUL.replace("CUDA: binary::mul", "CUDA: binary::mull"),
        MUL_D,
    );
    assert!(
        e.message.contains("unknown CUDA kernel 'binary::mull'"),
        "{e}"
    );
}

#[test]
fn per_backend_dtypes() {
    let native = MUL.replace("dtypes: all", "dtypes: {CPU: all, CUDA: floating}");
    let m = build(&native, MUL_D, &kernels()).unwrap();
    let op = &m.ops[0];
    assert_eq!(op.dtypes.len(), 10);
    assert_eq!(op.cpu().dtypes, DType::ALL);
    let cuda = op.backend(BackendKey::Cuda).unwrap();
    assert_eq!(cuda.dtypes, DType::FLOATING);
    assert_eq!(cuda.kernel.to_string(), "binary::mul");
    let e = err(
        &MUL.replace("dtypes: all", "dtypes: {CPU: all, TPU: all}"),
        MUL_D,
    );
    assert!(e.message.contains("unknown backend 'TPU'"), "{e}");
}

#[test]
fn per_backend_opinfo_dtypes() {
    // One list: every device runs it.
    let m = build(MUL, MUL_D, &kernels()).unwrap();
    let info = m.ops[0].opinfo.as_ref().unwrap();
    assert_eq!(info.cuda_dtypes, info.dtypes);
    // PyTorch's dtypesIfCUDA: CUDA runs its own list, CPU (and meta) the other.
    let native = MUL.replace(
        "ref: \"|a, b| a * b\"}",
        "ref: \"|a, b| a * b\", dtypes: {CPU: [f32, i64], CUDA: floating}}",
    );
    let m = build(&native, MUL_D, &kernels()).unwrap();
    let info = m.ops[0].opinfo.as_ref().unwrap();
    assert_eq!(info.dtypes, [DType::F32, DType::I64]);
    assert_eq!(info.cuda_dtypes, DType::FLOATING);
    // A device left out takes CPU's list.
    let native = MUL.replace(
        "ref: \"|a, b| a * b\"}",
        "ref: \"|a, b| a * b\", dtypes: {CPU: [f32, i64]}}",
    );
    let m = build(&native, MUL_D, &kernels()).unwrap();
    let info = m.ops[0].opinfo.as_ref().unwrap();
    assert_eq!(info.cuda_dtypes, [DType::F32, DType::I64]);
    let e = err(
        &MUL.replace(
            "ref: \"|a, b| a * b\"}",
            "ref: \"|a, b| a * b\", dtypes: {CPU: all, CUDA: floatin}}",
        ),
        MUL_D,
    );
    assert!(
        e.message.contains("opinfo: unknown dtype group 'floatin'"),
        "{e}"
    );
    assert!(e.message.contains("did you mean"), "{e}");
}

#[test]
fn a_composite_op_takes_no_backend_key() {
    let native = MUL.replace(
        "{CPU: mul, CUDA: binary::mul}",
        "{CompositeExplicitAutograd: explicit::mul, CUDA: binary::mul}",
    );
    let e = err(&native, MUL_D);
    assert!(e.message.contains("takes no CPU or CUDA key"), "{e}");
}

#[test]
fn every_kernel_op_has_cpu_cuda_and_an_implicit_meta_entry() {
    let m = build(MUL, MUL_D, &kernels()).unwrap();
    let op = &m.ops[0];
    let keys: Vec<BackendKey> = op.backends.keys().copied().collect();
    assert_eq!(keys, [BackendKey::Meta, BackendKey::Cuda, BackendKey::Cpu]);
    let meta = op.backend(BackendKey::Meta).unwrap();
    assert_eq!(meta.dtypes, DType::ALL, "nothing runs on meta: every dtype");
    assert_eq!(op.cpu().kernel.to_string(), "binary::mul");
}

#[test]
fn unknown_dtype_is_an_error_with_a_suggestion() {
    let e = err(&MUL.replace("dtypes: all", "dtypes: [f32, f46]"), MUL_D);
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 2));
    assert!(e.message.contains("unknown dtype 'f46'"), "{e}");
    assert!(
        e.message.contains("did you mean `f16`?") || e.message.contains("did you mean `f64`?"),
        "{e}"
    );
    let e = err(&MUL.replace("dtypes: all", "dtypes: floatin"), MUL_D);
    assert!(
        e.message
            .contains("unknown dtype group 'floatin' (did you mean `floating`?)"),
        "{e}"
    );
    let e = err(
        &MUL.replace(
            r#"ref: "|a, b| a * b"}"#,
            r#"ref: "|a, b| a * b", dtypes: [f32, int]}"#,
        ),
        MUL_D,
    );
    assert!(e.message.contains("unknown dtype 'int'"), "{e}");
}

#[test]
fn unknown_fixed_dtype_is_an_error() {
    let native = MUL.replace("  dtypes: all\n", "  dtypes: all\n  fixed: {other: i46}\n");
    let e = err(&native, MUL_D);
    assert_eq!(e.line, 2);
    assert!(
        e.message
            .contains("unknown dtype 'i46' in fixed: (did you mean `i16`?)")
            || e.message
                .contains("unknown dtype 'i46' in fixed: (did you mean `i64`?)"),
        "{e}"
    );
}

#[test]
fn unknown_tag_is_an_error_with_a_suggestion() {
    let e = err(
        &MUL.replace("tags: [pointwise]", "tags: [pointwize]"),
        MUL_D,
    );
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 2));
    assert!(
        e.message
            .contains("unknown tag 'pointwize' (did you mean `pointwise`?)"),
        "{e}"
    );
}

#[test]
fn unknown_dispatch_key_is_an_error_with_a_suggestion() {
    let e = err(
        &MUL.replace("CUDA: binary::mul", "CUDa: binary::mul"),
        MUL_D,
    );
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 2));
    assert!(
        e.message
            .contains("unknown dispatch key 'CUDa' (did you mean `CUDA`?)"),
        "{e}"
    );
    let e = err(&MUL.replace("CUDA: binary::mul", "TPU: binary::mul"), MUL_D);
    assert!(e.message.contains("unknown dispatch key 'TPU'"), "{e}");
}

#[test]
fn meta_is_implied_not_written() {
    let e = err(
        &MUL.replace(
            "CUDA: binary::mul}",
            "CUDA: binary::mul, Meta: binary::mul}",
        ),
        MUL_D,
    );
    assert!(e.message.contains("`Meta` is implied"), "{e}");
}
