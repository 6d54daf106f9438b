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
    // The `dispatch:` line, not the entry's first.
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 4));
    assert!(e.message.contains("unknown CPU kernel 'mull'"), "{e}");
    assert!(e.message.ends_with("(did you mean `binary::mul`?)"), "{e}");
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
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 5));
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
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 4));
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
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 6));
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
    assert_eq!(e.line, 7);
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
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 5));
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
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 4));
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

// ---------------------------------------------------------------- the line of the key at fault

#[test]
fn an_error_about_a_key_is_at_that_keys_line() {
    // MUL: line 2 `- func:`, 3 `variants:`, 4 `dispatch:`, 5 `tags:`, 6 `dtypes:`, 7
    // `opinfo:`; a key added after `dtypes:` is line 7.
    let after_dtypes =
        |key: &str| MUL.replace("  dtypes: all\n", &format!("  dtypes: all\n{key}\n"));
    let cases = [
        (
            MUL.replace("dtypes: all", "dtypes: [f32, f128]"),
            6,
            "unknown dtype 'f128'",
        ),
        (
            MUL.replace("dtypes: all", "dtypes: {CPU: all, TPU: all}"),
            6,
            "unknown backend 'TPU'",
        ),
        (
            MUL.replace("variants: function, method", "variants: function, methd"),
            3,
            "unknown variant 'methd'",
        ),
        (
            MUL.replace("variants: function, method", "variants: out"),
            3,
            "add one of them to variants",
        ),
        (
            MUL.replace("CUDA: binary::mul", "CUDA: binary::mull"),
            4,
            "unknown CUDA kernel 'binary::mull'",
        ),
        (
            MUL.replace("{CPU: mul, CUDA: binary::mul}", "{CPU: mul}"),
            4,
            "no CUDA kernel",
        ),
        (
            MUL.replace("tags: [pointwise]", "tags: [pointwize]"),
            5,
            "unknown tag 'pointwize'",
        ),
        (
            after_dtypes("  promote: int_to_flaot"),
            7,
            "unknown promote rule 'int_to_flaot'",
        ),
        (
            after_dtypes("  promote: sum"),
            7,
            "promote: sum reads an argument `ScalarType? dtype`",
        ),
        (
            after_dtypes("  operands: [self, othr]"),
            7,
            "'othr' is not an argument or output",
        ),
        (
            after_dtypes("  fixed: {othr: i64}"),
            7,
            "'othr' is not an argument or output",
        ),
        (
            after_dtypes("  fixed: {other: i46}"),
            7,
            "unknown dtype 'i46' in fixed:",
        ),
        (
            after_dtypes("  saturate: [other]"),
            7,
            "`saturate:` names `other`",
        ),
        (
            after_dtypes("  rust: mul-tensor"),
            7,
            "'mul-tensor' is not a Rust identifier",
        ),
        (
            after_dtypes("  same_dtype_error: \"differ\""),
            7,
            "same_dtype_error needs promote: same",
        ),
        (
            after_dtypes("  autocast: lowr"),
            7,
            "unknown autocast policy 'lowr' (did you mean `lower`?)",
        ),
        (
            after_dtypes("  autocast: {CPU: lower, TPU: fp32}"),
            7,
            "unknown device type 'TPU'",
        ),
        (
            after_dtypes("  autocast: fp32_set_opt_dtype"),
            7,
            "fp32_set_opt_dtype needs a `ScalarType? dtype` argument",
        ),
        (
            after_dtypes("  vectorized: binary::mul"),
            7,
            "names no slice kernel",
        ),
        (
            MUL.replace("ref: \"|a, b| a * b\"", "ref: \"|a| a\""),
            7,
            "ref closure takes 1 parameter(s)",
        ),
        (
            MUL.replace(
                "ref: \"|a, b| a * b\"}",
                "ref: \"|a, b| a * b\", dtypes: [f128]}",
            ),
            7,
            "opinfo: unknown dtype 'f128'",
        ),
    ];
    for (native, line, part) in cases {
        let e = err(&native, MUL_D);
        assert_eq!(
            (e.file.as_str(), e.line),
            ("native_functions.yaml", line),
            "{e}"
        );
        assert!(e.message.contains(part), "missing {part:?} in {e}");
    }
}

#[test]
fn a_schema_error_stays_at_the_entrys_first_line() {
    let e = err(&MUL.replace("Tensor other)", "int[] other=abc)"), MUL_D);
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.contains("default 'abc' is not valid here"), "{e}");
}

#[test]
fn a_key_in_a_doc_text_is_not_the_key() {
    // `dtypes:` inside the `doc: |` text (lines 4-5) is not the entry's `dtypes:` (line 9).
    let native = MUL
        .replace(
            "  variants:",
            "  doc: |\n    Multiplies.\n    dtypes: every one\n  variants:",
        )
        .replace("dtypes: all", "dtypes: [f32, f128]");
    let e = err(&native, MUL_D);
    assert_eq!(e.line, 9, "{e}");
    assert!(e.message.contains("unknown dtype 'f128'"), "{e}");
}

#[test]
fn an_entry_on_one_line_reports_its_line() {
    let native = "\n- {func: \"mul.Tensor(Tensor self, Tensor other) -> Tensor\", variants: \"function, methd\", dispatch: {CPU: mul, CUDA: binary::mul}, tags: [pointwise], dtypes: all, opinfo: {samples: binary, ref: \"|a, b| a * b\"}}\n";
    let e = err(native, MUL_D);
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.contains("unknown variant 'methd'"), "{e}");
}

// ---------------------------------------------------------------- misspelt kernels and functions

const EXPM1: &str = r#"
- func: expm1(Tensor self) -> Tensor
  variants: function, method
  dispatch: {CPU: unary::expm1, CUDA: unary::expm1}
  tags: [pointwise]
  promote: int_to_float
  dtypes: floating
  opinfo: {samples: unary, ref: "|a| a.exp_m1()"}
"#;

const FLATTEN: &str = r#"
- func: flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)
  variants: function, method
  dispatch: {CompositeImplicitAutograd: shaping::flatten}
  opinfo: {samples: flatten, ref: flatten}
"#;

/// [`kernels`] with `unary::expm1` (CPU and CUDA), `exp` also in `binary`, and the composite
/// `shaping::flatten`.
fn more_kernels() -> KernelIndex {
    let mut k = kernels();
    k.functions
        .entry("expm1".into())
        .or_default()
        .push("unary".into());
    k.functions.get_mut("exp").unwrap().push("binary".into());
    k.cuda
        .entry("expm1".into())
        .or_default()
        .push("unary".into());
    k.add_rust_ops(
        "shaping",
        "src/ops/shaping.rs",
        "pub fn flatten(t: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> { Ok(t.clone()) }\n",
    )
    .unwrap();
    k
}

/// The one error of `native` (whose entry fails, so no derivative is needed) with
/// [`more_kernels`].
fn more_err(native: &str) -> ModelError {
    let mut errors = build(native, "", &more_kernels()).expect_err("the YAML is invalid");
    assert_eq!(errors.len(), 1, "one mistake, one error: {errors:#?}");
    errors.remove(0)
}

#[test]
fn the_misspelt_entries_are_valid_when_spelt_right() {
    let derivs =
        "\n- name: expm1(Tensor self) -> Tensor\n  self: grad.mul(&result.add_scalar(1)?)?\n";
    let m = build(&format!("{EXPM1}{FLATTEN}"), derivs, &more_kernels()).unwrap();
    assert_eq!(m.ops.len(), 2);
}

#[test]
fn misspelt_kernels_and_functions_get_a_suggestion() {
    for (from, to, part) in [
        // A close name in the same module.
        (
            "CPU: unary::expm1,",
            "CPU: unary::expm11,",
            "unknown CPU kernel 'unary::expm11': no `pub fn expm11` in kernels/src/cpu/ (did you mean `unary::expm1`?)",
        ),
        (
            "CUDA: unary::expm1}",
            "CUDA: unary::expm11}",
            "unknown CUDA kernel 'unary::expm11'",
        ),
        // The same name in another module.
        (
            "CPU: unary::expm1,",
            "CPU: binary::expm1,",
            "unknown CPU kernel 'binary::expm1'",
        ),
        (
            "CUDA: unary::expm1}",
            "CUDA: binary::expm1}",
            "unknown CUDA kernel 'binary::expm1'",
        ),
        // No module: a close name in any.
        ("CPU: unary::expm1,", "CPU: expm11,", "unknown CPU kernel 'expm11'"),
        (
            "CUDA: unary::expm1}",
            "CUDA: expm1}",
            "CUDA kernel 'expm1' must be written as module::name",
        ),
    ] {
        let e = more_err(&EXPM1.replace(from, to));
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains(part), "missing {part:?} in {e}");
        assert!(
            e.message.ends_with(" (did you mean `unary::expm1`?)"),
            "{e}"
        );
    }
    for (to, part) in [
        (
            "shaping::flattn",
            "src/ops/shaping.rs has no `pub fn flattn`",
        ),
        ("views::flatten", "src/ops/views.rs has no `pub fn flatten`"),
    ] {
        let e = more_err(&FLATTEN.replace("shaping::flatten", to));
        assert_eq!(e.line, 4, "{e}");
        assert!(
            e.message.contains(&format!(
                "CompositeImplicitAutograd names `{to}`, but {part}"
            )),
            "{e}"
        );
        assert!(
            e.message.ends_with(" (did you mean `shaping::flatten`?)"),
            "{e}"
        );
    }
}

#[test]
fn no_suggestion_when_none_is_close_or_the_name_is_ambiguous() {
    let e = more_err(&EXPM1.replace("CPU: unary::expm1,", "CPU: unary::logit,"));
    assert!(
        e.message.contains("unknown CPU kernel 'unary::logit'"),
        "{e}"
    );
    assert!(!e.message.contains("did you mean"), "{e}");
    // `exp` is in `unary` and `binary`: the message asks for the module instead.
    let e = more_err(&EXPM1.replace("CPU: unary::expm1,", "CPU: exp,"));
    assert!(e.message.contains("defined in several modules"), "{e}");
    assert!(!e.message.contains("did you mean"), "{e}");
}

/// A schema that writes a positional argument (torchgen's "mutable" kind, as PyTorch's
/// `_amp_update_scale_`) builds as a CompositeImplicitAutograd function that takes the
/// written argument like any other; with a method form or another dispatch it is an error.
#[test]
fn an_op_mutating_its_inputs_is_an_implicit_composite_function() {
    const SCALE: &str = r#"
- func: _amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float scale_growth_factor, float scale_backoff_factor, int growth_interval) -> Tensor(a!)
  variants: function
  dispatch: {CompositeImplicitAutograd: amp::update_scale}
  skip_opinfo: "in place, on 1-element tensors"
"#;
    let mut k = kernels();
    k.add_rust_ops(
        "amp",
        "src/ops/amp.rs",
        "pub fn update_scale(s: &Tensor, g: &Tensor, f: &Tensor, a: f64, b: f64, n: i64) -> Result<Tensor> { Ok(s.clone()) }\n",
    )
    .unwrap();
    let m = build(SCALE, "", &k).unwrap();
    let names: Vec<String> = m.ops[0].args().iter().map(|a| a.name.clone()).collect();
    assert_eq!(
        names,
        [
            "self",
            "growth_tracker",
            "found_inf",
            "scale_growth_factor",
            "scale_backoff_factor",
            "growth_interval"
        ]
    );
    for bad in [
        SCALE.replace("variants: function", "variants: function, method"),
        SCALE.replace(
            "CompositeImplicitAutograd: amp::update_scale",
            "CompositeExplicitAutograd: amp::update_scale",
        ),
    ] {
        let mut errors = build(&bad, "", &k).expect_err("the YAML is invalid");
        let e = errors.remove(0);
        assert!(
            e.message.contains("argument 'self' is written (`(a!)`): an op that mutates its inputs is a `CompositeImplicitAutograd` function with `variants: function`"),
            "{e}"
        );
    }
}

#[test]
fn memory_format_is_for_structured_ops_and_plain_tensor_arguments() {
    let e = err(
        &MUL.replace(
            "  dtypes: all\n",
            "  dtypes: all\n  memory_format: [self]\n",
        ),
        MUL_D,
    );
    assert!(
        e.message.contains("`memory_format:` is for structured ops"),
        "{e}"
    );
    let sum = r#"
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  dispatch: {CPU: sum_dim, CUDA: reduce::sum_dim}
  memory_format: [dim]
  dtypes: floating
  opinfo: {samples: reduce_dim, ref: sum_dim}
"#;
    let e = err(sum, "");
    assert!(
        e.message
            .contains("`memory_format:` names 'dim', which is not a plain Tensor argument"),
        "{e}"
    );
    // A plain tensor argument is accepted.
    let ok = sum.replace("memory_format: [dim]", "memory_format: [self]");
    let derivs = r#"
- name: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  self: sum_backward(&grad, self.sizes(), dim, keepdim)?
"#;
    let m = build(&ok, derivs, &kernels()).unwrap();
    assert_eq!(m.ops[0].memory_format, ["self"]);
}
