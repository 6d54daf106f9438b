//! What a derivatives.yaml formula calls is checked against the `Tensor` API at the YAML
//! stage: a misspelt method or helper is an error naming the formula's line, with a
//! suggestion, instead of a rustc error inside the generated `OUT_DIR/ops/<op>.rs`.

use kiln_codegen::kernels_index::{FormulaScope, KernelIndex};
use kiln_codegen::model::{build, Model, ModelError};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The kernels of `MUL` and `ADD`, and a formula scope as `scan_repo` reads it from `src/`.
fn kernels() -> KernelIndex {
    let mut k = KernelIndex::default();
    for name in ["mul", "add"] {
        k.functions.insert(name.into(), vec!["binary".into()]);
        k.cuda.insert(name.into(), vec!["binary".into()]);
    }
    k.formula_scope = Some(FormulaScope {
        // `full`: one edit from `mull` too.
        tensor_fns: names(&["sizes", "zeros_like", "to_dtype", "zeros", "full"]),
        helpers: names(&["pow_backward_scalar", "reshape_to", "index_backward"]),
        crate_fns: names(&["no_grad"]),
    });
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

/// An op with a default (so `add_with` too) and every variant.
const ADD: &str = r#"
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method, inplace, out
  dispatch: {CPU: add, CUDA: binary::add}
  tags: [pointwise]
  dtypes: all
  opinfo: {samples: binary, ref: "|a, b, alpha| a + alpha * b"}
"#;

const ADD_D: &str = r#"
- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: grad.clone()
  other: grad.clone()
"#;

fn ok(native: &str, derivs: &str) -> Model {
    build(native, derivs, &kernels()).unwrap_or_else(|e| panic!("{e:#?}"))
}

/// The one error `build` reports.
fn err(native: &str, derivs: &str) -> ModelError {
    let mut errors = build(native, derivs, &kernels()).expect_err("the YAML is invalid");
    assert_eq!(errors.len(), 1, "one mistake, one error: {errors:#?}");
    errors.remove(0)
}

#[test]
fn misspelt_tensor_method_names_the_formula_line() {
    let e = err(
        MUL,
        &MUL_D.replace("grad.mul(&other)?", "grad.mull(&other)?"),
    );
    assert_eq!((e.file.as_str(), e.line), ("derivatives.yaml", 3));
    assert!(
        e.message.contains("formula for 'self' calls `.mull(..)`"),
        "{e}"
    );
    assert!(e.message.contains("(did you mean `mul`?)"), "{e}");

    // Inside an argument, on the entry's second formula.
    let e = err(
        MUL,
        &MUL_D.replace(
            "grad.mul(&self)?",
            "grad.mul(&self.to_dtyp(self.dtype())?)?",
        ),
    );
    assert_eq!((e.file.as_str(), e.line), ("derivatives.yaml", 4));
    assert!(e.message.contains("(did you mean `to_dtype`?)"), "{e}");
}

#[test]
fn misspelt_backward_helper_is_an_error() {
    let e = err(
        MUL,
        &MUL_D.replace("grad.mul(&other)?", "pow_backward_scalr(&grad, &other, 2)?"),
    );
    assert_eq!((e.file.as_str(), e.line), ("derivatives.yaml", 3));
    assert!(
        e.message
            .contains("calls `pow_backward_scalr(..)`, which is neither a backward helper"),
        "{e}"
    );
    assert!(
        e.message.contains("(did you mean `pow_backward_scalar`?)"),
        "{e}"
    );
}

#[test]
fn misspelt_crate_and_tensor_functions_are_errors() {
    let native = format!("{MUL}{ADD}");
    let e = err(
        &native,
        &format!(
            "{}{ADD_D}",
            MUL_D.replace("grad.mul(&other)?", "crate::add_wth(&grad, &other, 2)?")
        ),
    );
    assert!(e.message.contains("(did you mean `add_with`?)"), "{e}");
    let e = err(
        &native,
        &format!(
            "{}{ADD_D}",
            MUL_D.replace("grad.mul(&other)?", "Tensor::zero(grad.sizes())?")
        ),
    );
    assert!(e.message.contains("calls `Tensor::zero(..)`"), "{e}");
    assert!(e.message.contains("(did you mean `zeros`?)"), "{e}");
}

#[test]
fn hand_written_std_and_generated_calls_pass() {
    let native = format!("{MUL}{ADD}");
    let d = MUL_D
        .replace(
            "grad.mul(&other)?",
            // Hand-written (`sizes`, `zeros_like`), a helper, a method of `Vec`, `Tensor::`.
            "reshape_to(&grad.mul(&other)?.zeros_like()?, grad.sizes().to_vec().as_slice())?",
        )
        .replace(
            "grad.mul(&self)?",
            // Generated: a method, a `_with` form, its in-place form, `crate::` functions.
            "crate::add_out(&grad.clone().add_with(&self, 2)?.add_with_(&self, 1)?, &crate::mul(&grad, &Tensor::zeros(&[1])?)?)?",
        );
    ok(&native, &format!("{d}{ADD_D}"));
}

#[test]
fn calls_of_a_failed_entry_are_not_reported_again() {
    let native = format!("{MUL}{}", ADD.replace("CPU: add,", "CPU: ad,"));
    let d = MUL_D.replace("grad.mul(&other)?", "grad.add_with_(&other, 2)?.clone()");
    let e = err(&native, &d);
    assert_eq!(e.file, "native_functions.yaml");
    assert!(e.message.contains("unknown CPU kernel 'ad'"), "{e}");
}

#[test]
fn without_sources_calls_are_unchecked() {
    let mut k = kernels();
    k.formula_scope = None;
    build(MUL, &MUL_D.replace(".mul(", ".mull("), &k).unwrap();
}

/// The names the check accepts are those the generator emits.
#[test]
fn generated_names_are_what_the_generator_emits() {
    let model = ok(&format!("{MUL}{ADD}"), &format!("{MUL_D}{ADD_D}"));
    for op in &model.ops {
        let mut methods = Vec::new();
        let free = kiln_codegen::gen::api::op_items(op, &mut methods);
        let file: syn::File =
            syn::parse2(quote::quote!(impl Tensor { #(#methods)* } #free)).unwrap();
        let public = |vis: &syn::Visibility| matches!(vis, syn::Visibility::Public(_));
        let (mut emitted_methods, mut emitted_fns) = (BTreeSet::new(), BTreeSet::new());
        for item in &file.items {
            match item {
                syn::Item::Impl(i) => {
                    for f in &i.items {
                        if let syn::ImplItem::Fn(f) = f {
                            emitted_methods.insert(f.sig.ident.to_string());
                        }
                    }
                }
                syn::Item::Fn(f) if public(&f.vis) => {
                    emitted_fns.insert(f.sig.ident.to_string());
                }
                _ => {}
            }
        }
        let listed = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
        assert_eq!(emitted_methods, listed(op.method_names()), "{}", op.rust);
        assert_eq!(emitted_fns, listed(op.function_names()), "{}", op.rust);
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The real YAML and sources, with one formula misspelt.
#[test]
fn misspelt_method_in_the_real_derivatives_yaml() {
    let read = |f: &str| std::fs::read_to_string(root().join(f)).unwrap();
    let (native, derivs) = (read("native_functions.yaml"), read("derivatives.yaml"));
    let formula = "  self: grad.mul(&other)?\n";
    let at = derivs.find(formula).expect("mul's formula");
    let line = derivs[..at].lines().count() + 1;
    let derivs = derivs.replacen(formula, "  self: grad.mull(&other)?\n", 1);
    let kernels = KernelIndex::scan_repo(&root()).unwrap();
    let errors = build(&native, &derivs, &kernels).expect_err("mull is no method");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        (errors[0].file.as_str(), errors[0].line),
        ("derivatives.yaml", line)
    );
    assert!(
        errors[0].message.contains("calls `.mull(..)`"),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].message.contains("(did you mean `mul`?)"),
        "{}",
        errors[0]
    );
}

/// What `scan_repo` reads from the library's sources.
#[test]
fn the_library_sources_give_the_formula_scope() {
    let k = KernelIndex::scan_repo(&root()).unwrap();
    let s = k.formula_scope.expect("src/ was read");
    for f in ["sizes", "dtype", "zeros_like", "zeros", "requires_grad"] {
        assert!(s.tensor_fns.contains(f), "Tensor::{f}");
    }
    // A trait's method, whose trait is not in scope in generated code.
    assert!(!s.tensor_fns.contains("fmt"));
    for f in [
        "pow_backward_scalar",
        "layer_norm_grads",
        "i64s",
        "index_backward",
    ] {
        assert!(s.helpers.contains(f), "helper {f}");
    }
    assert!(s.crate_fns.contains("no_grad"));
}
