//! `Tensor?[]` arguments (`index.Tensor(Tensor self, Tensor?[] indices)`): what each stage
//! of the generator makes of them — the kind, the composite contract, the public API, the
//! backward node and formula, the OpInfo adaptor and the fuzz draw — and the YAML errors for
//! the places they cannot go.

use kiln_codegen::gen;
use kiln_codegen::kernels_index::KernelIndex;
use kiln_codegen::model::{build, Model, ModelError};
use kiln_codegen::schema::Type;
use kiln_codegen::types::ArgKind;

// Fixture sources: only their signatures are read (with syn); they are never compiled.
const INDEXING_RS: &str = r#"
pub fn index(t: &Tensor, indices: &[Option<&Tensor>]) -> Result<Tensor> {
    Ok(t.clone())
}
"#;

const SAMPLES_RS: &str = r#"
pub fn index_tensor(dtype: DType) -> Vec<Sample> { vec![] }
pub fn index_tensor_errors() -> Vec<ErrorSample> { vec![] }
"#;

const REFS_RS: &str = r#"
pub fn index(s: &Sample) -> Vec<RefTensor> { vec![] }
"#;

/// Line 2.
const NATIVE: &str = r#"
- func: index.Tensor(Tensor self, Tensor?[] indices) -> Tensor
  variants: function, method
  dispatch: {CompositeExplicitAutograd: indexing::index}
  opinfo: {samples: index_tensor, ref: index}
"#;

/// Line 2 (the entry), line 3 (the formula).
const DERIVS: &str = r#"
- name: index.Tensor(Tensor self, Tensor?[] indices) -> Tensor
  self: index_backward(&grad, self.sizes(), &indices)?
"#;

fn kernels(indexing_rs: &str) -> KernelIndex {
    let mut k = KernelIndex::default();
    k.add_rust_ops("indexing", "src/ops/indexing.rs", indexing_rs)
        .unwrap();
    let no_modules = |_: &str| None;
    k.add_samples("tests/opinfo/samples.rs", SAMPLES_RS, &no_modules)
        .unwrap();
    k.add_refs("tests/opinfo/refs.rs", REFS_RS, &no_modules)
        .unwrap();
    k
}

fn model() -> Model {
    build(NATIVE, DERIVS, &kernels(INDEXING_RS)).unwrap_or_else(|e| panic!("{e:#?}"))
}

/// The single error of a repository with one mistake.
fn error(native: &str, derivs: &str, indexing_rs: &str) -> ModelError {
    let mut errors = build(native, derivs, &kernels(indexing_rs)).expect_err("invalid");
    assert_eq!(errors.len(), 1, "one mistake, one error: {errors:#?}");
    errors.remove(0)
}

/// Generated tokens as one line without spaces, for `contains` checks.
fn flat(ts: proc_macro2::TokenStream) -> String {
    ts.to_string().replace(' ', "")
}

#[test]
fn a_list_of_optional_tensors_has_its_own_kind() {
    let ty = Type::parse("Tensor?[]").unwrap();
    assert_eq!(ArgKind::of(&ty), Ok(ArgKind::OptTensorList));
    assert_eq!(ty.to_string(), "Tensor?[]");
    assert!(ArgKind::OptTensorList.is_tensor());
    assert!(!ArgKind::OptTensorList.is_optional());
    assert_eq!(
        flat(ArgKind::OptTensorList.param_type(true)),
        "&[Option<&Tensor>]"
    );
    // Other optional lists stay unsupported, with the type named.
    let e = ArgKind::of(&Type::parse("int?[]").unwrap()).unwrap_err();
    assert!(e.contains("lists of int? are not supported"), "{e}");
}

#[test]
fn the_public_api_borrows_the_optional_tensors() {
    let m = model();
    let mut methods = Vec::new();
    let items = flat(gen::api::op_items(&m.ops[0], &mut methods));
    let methods = flat(quote::quote!(#(#methods)*));
    assert!(
        items.contains("pubfnindex(self_:&Tensor,indices:&[Option<&Tensor>])->Result<Tensor>"),
        "{items}"
    );
    assert!(
        methods.contains("pubfnindex(&self,indices:&[Option<&Tensor>])->Result<Tensor>"),
        "{methods}"
    );
    assert!(
        items.contains("crate::ops::indexing::index(self_,indices)"),
        "{items}"
    );
}

#[test]
fn the_node_saves_each_present_tensor_and_the_formula_reads_the_list() {
    let m = model();
    let fields = gen::nodes::fields(&m.ops[0]);
    let names: Vec<String> = fields.iter().map(|f| f.name.to_string()).collect();
    assert_eq!(names, ["self_sizes", "indices"]);
    let indices = &fields[1];
    assert_eq!(flat(indices.ty.clone()), "Vec<Option<SavedTensor>>");
    assert!(flat(indices.init.clone()).contains(
        "indices.iter().map(|t|t.map(|t|SavedTensor::input_beside(t,\"indices\",inplace))).collect()"
    ));
    let node = flat(gen::nodes::node(&m.ops[0]));
    assert!(
        node.contains("self.indices.iter().flatten().for_each(|s|s.release());"),
        "{node}"
    );
    assert!(
        node.contains("letindices:Vec<Option<Tensor>>=self.indices.iter().map(|s|s.as_ref().map(|s|s.unpack(NAME)).transpose()).collect::<Result<_>>()?;"),
        "{node}"
    );
    // No gradient edge for the indices: only `self` has a formula.
    let record = flat(gen::api::op_items(&m.ops[0], &mut Vec::new()));
    assert!(record.contains("letedges=[Some(self_)];"), "{record}");
}

#[test]
fn opinfo_and_fuzz_pass_the_list_as_borrowed_options() {
    let m = model();
    let tests = flat(gen::tests::generate(&m));
    assert!(
        tests.contains("kiln::index(s.t(0usize),&s.opt_list(0usize))"),
        "{tests}"
    );
    assert!(tests.contains("opt_list_args:&[\"indices\"]"), "{tests}");
    let fuzz = flat(gen::fuzz::generate(&m));
    assert!(
        fuzz.contains("letindices=a.opt_tensor_list(\"indices\");"),
        "{fuzz}"
    );
    assert!(
        fuzz.contains(
            "kiln_core::index(&self_,&indices.iter().map(Option::as_ref).collect::<Vec<_>>())"
        ),
        "{fuzz}"
    );
}

#[test]
fn a_composite_must_take_a_slice_of_borrowed_options() {
    let e = error(
        NATIVE,
        DERIVS,
        &INDEXING_RS.replace("indices: &[Option<&Tensor>]", "indices: &[Tensor]"),
    );
    // The `dispatch:` line, which names the function.
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 4));
    assert!(
        e.message.contains("parameter 2 `indices: &[Tensor]` should be `indices: &[Option<&Tensor>]` (schema argument `Tensor?[] indices`)"),
        "{e}"
    );
}

#[test]
fn a_structured_kernel_cannot_take_a_list_of_optional_tensors() {
    let native = NATIVE.replace(
        "{CompositeExplicitAutograd: indexing::index}",
        "{CPU: index::index, CUDA: index::index}\n  dtypes: all",
    );
    let mut k = kernels(INDEXING_RS);
    for name in ["index", "index_meta"] {
        k.functions
            .entry(name.to_string())
            .or_default()
            .push("index".to_string());
    }
    k.cuda
        .entry("index".to_string())
        .or_default()
        .push("index".to_string());
    let errors = build(&native, DERIVS, &k).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].line, 2);
    assert!(
        errors[0]
            .message
            .contains("a structured kernel cannot take a list of optional tensors (`indices`)"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_pointwise_kernel_cannot_take_one_either() {
    let native = NATIVE.replace(
        "  dispatch: {CompositeExplicitAutograd: indexing::index}",
        "  dispatch: {CPU: unary::index, CUDA: unary::index}\n  tags: [pointwise]\n  dtypes: all",
    );
    let mut k = kernels(INDEXING_RS);
    k.functions
        .entry("index".to_string())
        .or_default()
        .push("unary".to_string());
    k.cuda
        .entry("index".to_string())
        .or_default()
        .push("unary".to_string());
    let errors = build(&native, DERIVS, &k).unwrap_err();
    assert!(
        errors[0]
            .message
            .contains("argument `indices` is OptTensorList"),
        "{errors:#?}"
    );
}

#[test]
fn the_list_gets_no_formula_of_its_own() {
    let derivs = format!("{DERIVS}  indices: grad.clone()\n");
    let e = error(NATIVE, &derivs, INDEXING_RS);
    assert_eq!((e.file.as_str(), e.line), ("derivatives.yaml", 4));
    assert!(
        e.message
            .contains("formula for 'indices', a `Tensor?[]` argument: kiln gives no gradient"),
        "{e}"
    );
}

#[test]
fn a_formula_reads_the_list_not_its_metadata() {
    let derivs = DERIVS.replace("&indices)?", "indices.sizes())?");
    let e = error(NATIVE, &derivs, INDEXING_RS);
    assert_eq!((e.file.as_str(), e.line), ("derivatives.yaml", 3));
    assert!(
        e.message
            .contains("reads `indices.sizes()`, but `indices` is a `Tensor?[]`"),
        "{e}"
    );
}
