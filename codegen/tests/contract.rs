//! The YAML stage checks what the generated code will call: kernel, meta, check and CUDA
//! signatures against the schema, composite functions, OpInfo sample sets and references,
//! and default values. Each test breaks one thing in a small, otherwise valid repository and
//! checks the message names the YAML line, the op, the function and what differs.

use kiln_codegen::kernels_index::KernelIndex;
use kiln_codegen::model::{build, DType, Model, ModelError};

const BINARY_RS: &str = r#"
pub fn mul<T: Arith>(a: T, b: T) -> T { a * b }
pub fn eq<T: PartialOrd>(a: T, b: T) -> bool { a == b }
pub fn pow_scalar<T: Pow>(a: T, exponent: T) -> T { a.pow(exponent) }
pub fn pow_scalar_check(compute: DType, exponent: f64) -> KResult<()> { Ok(()) }
pub fn pow_scalar_f32(self_: &[f32], out: &mut [f32], exponent: f32) {}
pub fn pow_scalar_f32_(self_: &mut [f32], exponent: f32) {}
"#;

const REDUCE_RS: &str = r#"
pub fn sum_dim_meta(
    self_: &[usize],
    dim: Option<&[i64]>,
    keepdim: bool,
    _dtype: Option<DType>,
) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![])
}

pub fn sum_dim<T: Element>(
    self_: Src<'_, T>,
    dim: Option<&[i64]>,
    keepdim: bool,
    _dtype: Option<DType>,
    out: Dst<'_, T>,
) -> KResult<()> {
    Ok(())
}

pub fn transpose_meta(self_: &[usize], dim0: i64, dim1: i64) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![])
}

pub fn transpose<T: Element>(self_: Src<'_, T>, dim0: i64, dim1: i64, out: Dst<'_, T>) -> KResult<()> {
    Ok(())
}
"#;

const BINARY_CUH: &str = "\
template <typename T> __device__ inline T mul(T a, T b) { return a * b; }
template <typename T> __device__ inline bool eq(T a, T b) { return a == b; }
template <typename T> __device__ inline T pow_scalar(T a, T e) { return kiln_pow(a, e); }
";

const REDUCE_LAUNCHERS_RS: &str = r#"
pub fn sum_dim(
    op: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    _keepdim: bool,
    _dtype: Option<DType>,
    out: &Tensor,
) -> Result<()> {
    Ok(())
}

pub fn transpose(op: &str, self_: &Tensor, dim0: i64, dim1: i64, out: &Tensor) -> Result<()> {
    Ok(())
}
"#;

// Fixture sources: only their signatures are read (with syn); they are never compiled.
const COMPOSITE_RS: &str = r#"
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    Ok(tensors[0].clone())
}

fn unsqueeze_all(tensors: &[Tensor], dim: i64) -> Result<Vec<Tensor>> {
    Ok(tensors.to_vec())
}
"#;

const EXPLICIT_RS: &str = r#"
pub fn view(t: &Tensor, size: &[i64]) -> Result<Tensor> {
    Ok(t.clone())
}
"#;

const SAMPLES_RS: &str = r#"
pub fn binary(dtype: DType) -> Vec<Sample> { vec![] }
pub fn binary_errors() -> Vec<ErrorSample> { vec![] }
pub fn reduce_dim(dtype: DType) -> Vec<Sample> { vec![] }
pub fn reduce_dim_errors() -> Vec<ErrorSample> { vec![] }
pub fn stack(dtype: DType) -> Vec<Sample> { vec![] }
pub fn stack_errors() -> Vec<ErrorSample> { vec![] }
pub fn unary_scalar(dtype: DType) -> Vec<Sample> { vec![] }
"#;

const REFS_RS: &str = r#"
pub fn sum_dim(s: &Sample) -> Vec<RefTensor> { vec![] }
pub fn stack(s: &Sample) -> Vec<RefTensor> { vec![] }
pub fn transpose(s: &Sample) -> Vec<RefTensor> { vec![] }
pub fn view(s: &Sample) -> Vec<RefTensor> { vec![] }
"#;

/// The sources of a small repository; each test replaces one string in one of them.
#[derive(Clone)]
struct Sources {
    binary_rs: String,
    reduce_rs: String,
    binary_cuh: String,
    reduce_launchers_rs: String,
    composite_rs: String,
    explicit_rs: String,
    samples_rs: String,
    refs_rs: String,
}

impl Default for Sources {
    fn default() -> Self {
        Sources {
            binary_rs: BINARY_RS.into(),
            reduce_rs: REDUCE_RS.into(),
            binary_cuh: BINARY_CUH.into(),
            reduce_launchers_rs: REDUCE_LAUNCHERS_RS.into(),
            composite_rs: COMPOSITE_RS.into(),
            explicit_rs: EXPLICIT_RS.into(),
            samples_rs: SAMPLES_RS.into(),
            refs_rs: REFS_RS.into(),
        }
    }
}

impl Sources {
    fn index(&self) -> KernelIndex {
        let mut k = KernelIndex::default();
        k.add_cpu_source("binary", "kernels/src/cpu/binary.rs", &self.binary_rs)
            .unwrap();
        k.add_cpu_source("reduce", "kernels/src/cpu/reduce.rs", &self.reduce_rs)
            .unwrap();
        k.add_cuda_header("binary", "kernels/cuda/binary.cuh", &self.binary_cuh);
        k.add_cuda_launchers(
            "reduce",
            "src/backends/cuda/ops/reduce.rs",
            &self.reduce_launchers_rs,
        )
        .unwrap();
        k.add_rust_ops("composite", "src/ops/composite.rs", &self.composite_rs)
            .unwrap();
        k.add_rust_ops("explicit", "src/ops/explicit.rs", &self.explicit_rs)
            .unwrap();
        let no_modules = |_: &str| None;
        k.add_samples("tests/opinfo/samples.rs", &self.samples_rs, &no_modules)
            .unwrap();
        k.add_refs("tests/opinfo/refs.rs", &self.refs_rs, &no_modules)
            .unwrap();
        k
    }
}

// Line 2: mul. Line 9: eq. Line 17: pow.Tensor_Scalar. Line 24: sum.dim_IntList. Line 29:
// transpose. Line 34: stack. Line 38: view. An error about one key is at that key's line
// (mul's `dispatch:` is line 4).
const NATIVE: &str = r#"
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch: {CPU: binary::mul, CUDA: binary::mul}
  tags: [pointwise]
  dtypes: all
  opinfo: {samples: binary, ref: "|a, b| a * b"}

- func: eq.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch: {CPU: binary::eq, CUDA: binary::eq}
  tags: [pointwise]
  promote: comparison
  dtypes: all
  opinfo: {samples: binary, ref: "|a, b| a == b"}

- func: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
  variants: function, method
  dispatch: {CPU: binary::pow_scalar, CUDA: binary::pow_scalar}
  tags: [pointwise]
  dtypes: all
  opinfo: {samples: unary_scalar, ref: "|a, e| a.powf(e)", errors: false}

- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  dispatch: {CPU: reduce::sum_dim, CUDA: reduce::sum_dim}
  dtypes: floating
  opinfo: {samples: reduce_dim, ref: sum_dim}

- func: transpose.int(Tensor self, int dim0, int dim1) -> Tensor
  dispatch: {CPU: reduce::transpose, CUDA: reduce::transpose}
  dtypes: floating
  opinfo: {samples: reduce_dim, ref: transpose}

- func: stack(Tensor[] tensors, int dim=0) -> Tensor
  dispatch: {CompositeImplicitAutograd: composite::stack}
  opinfo: {samples: stack, ref: stack}

- func: view(Tensor(a) self, SymInt[] size) -> Tensor(a)
  variants: method
  dispatch: {CompositeExplicitAutograd: explicit::view}
  opinfo: {samples: reduce_dim, ref: view}
"#;

const DERIVS: &str = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad.mul(&other)?
  other: grad.mul(&self)?
- name: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
  self: grad.clone()
- name: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  self: grad.clone()
- name: transpose.int(Tensor self, int dim0, int dim1) -> Tensor
  self: grad.transpose(dim0, dim1)?
- name: view(Tensor(a) self, SymInt[] size) -> Tensor(a)
  self: grad.reshape(self.sizes())?
"#;

fn build_with(native: &str, sources: &Sources) -> Result<Model, Vec<ModelError>> {
    build(native, DERIVS, &sources.index())
}

/// The single error of `native` with `sources`.
fn error(native: &str, sources: &Sources) -> ModelError {
    let mut errors = build_with(native, sources).expect_err("the repository is broken");
    assert_eq!(errors.len(), 1, "one mistake, one error: {errors:#?}");
    errors.remove(0)
}

/// The single error with the YAML as is and one source edited by `edit`.
fn source_error(edit: impl FnOnce(&mut Sources)) -> ModelError {
    let mut s = Sources::default();
    edit(&mut s);
    error(NATIVE, &s)
}

fn yaml_error(from: &str, to: &str) -> ModelError {
    assert!(NATIVE.contains(from), "{from}");
    error(&NATIVE.replacen(from, to, 1), &Sources::default())
}

fn assert_contains(e: &ModelError, parts: &[&str]) {
    for p in parts {
        assert!(e.message.contains(p), "missing {p:?} in:\n{e}");
    }
}

#[test]
fn the_small_repository_is_valid() {
    let m = build_with(NATIVE, &Sources::default()).unwrap();
    assert_eq!(m.ops.len(), 7);
}

// ---------------------------------------------------------------- structured kernels

#[test]
fn structured_kernel_parameter_of_the_wrong_type() {
    let e = source_error(|s| {
        s.reduce_rs = s.reduce_rs.replacen(
            "    keepdim: bool,\n    _dtype: Option<DType>,\n    out",
            "    keepdim: i64,\n    _dtype: Option<DType>,\n    out",
            1,
        )
    });
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 25));
    assert_contains(
        &e,
        &[
            "sum.dim_IntList(",
            "CPU kernel `reduce::sum_dim` (kernels/src/cpu/reduce.rs:11)",
            "parameter 3 `keepdim: i64` should be `keepdim: bool` (schema argument `bool keepdim=False`)",
            "expected: fn sum_dim<T>(self_: Src<T>, dim: Option<&[i64]>, keepdim: bool, dtype: Option<DType>, result: Dst<T>) -> KResult<()>",
            "found:    fn sum_dim<T>(self_: Src<T>, dim: Option<&[i64]>, keepdim: i64, _dtype: Option<DType>, out: Dst<T>) -> KResult<()>",
        ],
    );
}

#[test]
fn structured_check_function_of_the_wrong_type() {
    let e = source_error(|s| {
        s.reduce_rs
            .push_str("pub fn transpose_check(compute: DType, dim0: i64, dim1: bool) -> KResult<()> { Ok(()) }\n")
    });
    assert_eq!(e.line, 30);
    assert_contains(
        &e,
        &[
            "check function `reduce::transpose_check` (kernels/src/cpu/reduce.rs:",
            "parameter 3 `dim1: bool` should be `dim1: i64` (schema argument `int dim1`)",
        ],
    );
}

#[test]
fn structured_kernel_without_its_output_parameter() {
    let e = source_error(|s| {
        s.reduce_rs = s.reduce_rs.replacen(
            "    _dtype: Option<DType>,\n    out: Dst<'_, T>,\n",
            "    _dtype: Option<DType>,\n",
            1,
        )
    });
    assert_eq!(e.line, 25);
    assert_contains(
        &e,
        &[
            "CPU kernel `reduce::sum_dim`",
            "it takes 4 parameter(s), the generated code passes 5; missing `result: Dst<T>` (output `result`)",
        ],
    );
}

#[test]
fn structured_kernel_needs_one_type_parameter() {
    let e = source_error(|s| {
        s.reduce_rs = s.reduce_rs.replace(
            "pub fn transpose<T: Element>(self_: Src<'_, T>, dim0: i64, dim1: i64, out: Dst<'_, T>)",
            "pub fn transpose(self_: Src<'_, f32>, dim0: i64, dim1: i64, out: Dst<'_, f32>)",
        )
    });
    assert_eq!(e.line, 30);
    assert_contains(&e, &["it has 0 type parameter(s)", "`transpose::<T>(..)`"]);
}

#[test]
fn structured_kernel_parameters_in_another_order() {
    let e = source_error(|s| {
        s.reduce_rs = s.reduce_rs.replace(
            "transpose<T: Element>(self_: Src<'_, T>, dim0: i64, dim1: i64,",
            "transpose<T: Element>(self_: Src<'_, T>, dim1: i64, dim0: i64,",
        )
    });
    assert_eq!(e.line, 30);
    assert_contains(
        &e,
        &["parameter 2 is named `dim1` but receives schema argument `int dim0`; `dim1` is passed as parameter 3: the order differs from the schema"],
    );
}

#[test]
fn meta_function_of_the_wrong_shape() {
    let e = source_error(|s| {
        s.reduce_rs = s.reduce_rs.replace(
            "    self_: &[usize],\n    dim: Option<&[i64]>,",
            "    self_: &[usize],\n    dim: &[i64],",
        )
    });
    assert_eq!(e.line, 25);
    assert_contains(
        &e,
        &[
            "meta function `reduce::sum_dim_meta` (kernels/src/cpu/reduce.rs:2)",
            "parameter 2 `dim: &[i64]` should be `dim: Option<&[i64]>` (schema argument `int[1]? dim`)",
        ],
    );
}

#[test]
fn structured_op_takes_an_optional_tensor_as_an_option() {
    let e = yaml_error(
        "transpose.int(Tensor self, int dim0, int dim1) -> Tensor",
        "transpose.int(Tensor self, int dim0, int dim1, Tensor? weight=None) -> Tensor",
    );
    assert_eq!(e.line, 30);
    assert_contains(
        &e,
        &["expected: fn transpose<T>(self_: Src<T>, dim0: i64, dim1: i64, weight: Option<Src<T>>, result: Dst<T>)"],
    );
}

#[test]
fn structured_op_with_optional_and_opmath_tensors_and_a_bool_list() {
    let native = NATIVE.replacen(
        "transpose.int(Tensor self, int dim0, int dim1) -> Tensor\n",
        "transpose.int(Tensor self, int dim0, int dim1, Tensor? weight, bool[2] mask) -> (Tensor, Tensor)\n  fixed: {weight: opmath, result1: opmath}\n",
        1,
    );
    let mut s = Sources::default();
    s.reduce_rs = s
        .reduce_rs
        .replace(
            "transpose_meta(self_: &[usize], dim0: i64, dim1: i64)",
            "transpose_meta(self_: &[usize], dim0: i64, dim1: i64, weight: Option<&[usize]>, mask: &[bool])",
        )
        .replace(
            "dim1: i64, out: Dst<'_, T>)",
            "dim1: i64, weight: Option<Src<'_, T::Compute>>, mask: &[bool], out: Dst<'_, T>, stat: Dst<'_, T::Compute>)",
        );
    s.reduce_launchers_rs = s.reduce_launchers_rs.replace(
        "dim1: i64, out: &Tensor)",
        "dim1: i64, weight: Option<&Tensor>, mask: &[bool], out: &Tensor, stat: &Tensor)",
    );
    let derivs = DERIVS.replace(
        "- name: transpose.int(Tensor self, int dim0, int dim1) -> Tensor\n  self: grad.transpose(dim0, dim1)?",
        "- name: transpose.int(Tensor self, int dim0, int dim1, Tensor? weight, bool[2] mask) -> (Tensor, Tensor)\n  self, weight: (Some(grad.clone()), grad_input_mask[1].then(|| grad.clone()))",
    );
    let m = build(&native, &derivs, &s.index()).unwrap();
    let t = m.ops.iter().find(|o| o.schema.name == "transpose").unwrap();
    assert_eq!(
        t.derivative.as_ref().unwrap().formulas[0].inputs,
        ["self", "weight"]
    );
    // The opmath tensor is `Src<T::Compute>`, not `Src<T>`.
    s.reduce_rs = s.reduce_rs.replace(
        "weight: Option<Src<'_, T::Compute>>",
        "weight: Option<Src<'_, T>>",
    );
    let mut errors = build(&native, &derivs, &s.index()).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = errors.remove(0);
    assert_contains(
        &e,
        &["parameter 4 `weight: Option<Src<T>>` should be `weight: Option<Src<T::Compute>>`"],
    );
}

// ---------------------------------------------------------------- pointwise kernels

#[test]
fn pointwise_kernel_with_a_missing_parameter() {
    let e = source_error(|s| {
        s.binary_rs = s
            .binary_rs
            .replace("mul<T: Arith>(a: T, b: T)", "mul<T: Arith>(a: T)")
    });
    assert_eq!(e.line, 4);
    assert_contains(
        &e,
        &[
            "mul.Tensor(",
            "CPU kernel `binary::mul` (kernels/src/cpu/binary.rs:2)",
            "it takes 1 parameter(s), the generated code passes 2; missing `other: T` (schema argument `Tensor other`)",
        ],
    );
}

#[test]
fn comparison_kernel_must_return_bool() {
    let e = source_error(|s| {
        s.binary_rs = s.binary_rs.replace(
            "eq<T: PartialOrd>(a: T, b: T) -> bool",
            "eq<T: PartialOrd>(a: T, b: T) -> T",
        )
    });
    assert_eq!(e.line, 11);
    assert_contains(&e, &["it returns `T`, the generated code needs `bool`"]);
}

#[test]
fn check_function_of_the_wrong_type() {
    let e = source_error(|s| {
        s.binary_rs = s.binary_rs.replace(
            "pow_scalar_check(compute: DType, exponent: f64)",
            "pow_scalar_check(compute: DType, exponent: i64)",
        )
    });
    assert_eq!(e.line, 19);
    assert_contains(
        &e,
        &[
            "check function `binary::pow_scalar_check` (kernels/src/cpu/binary.rs:5)",
            "parameter 2 `exponent: i64` should be `exponent: f64` (schema argument `Scalar exponent`)",
        ],
    );
}

#[test]
fn pointwise_op_cannot_take_an_int_list() {
    let e = yaml_error(
        "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
        "pow.Tensor_Scalar(Tensor self, Scalar exponent, int[] dims=[]) -> Tensor",
    );
    assert_eq!(e.line, 17);
    assert_contains(&e, &["a pointwise kernel takes tensors, Scalar, Scalar?, float and str arguments; argument `dims` is IntList"]);
}

#[test]
fn pointwise_output_cannot_be_fixed() {
    let e = yaml_error(
        "  opinfo: {samples: binary, ref: \"|a, b| a * b\"}",
        "  fixed: {result: i64}\n  opinfo: {samples: binary, ref: \"|a, b| a * b\"}",
    );
    assert_eq!(e.line, 7);
    assert_contains(
        &e,
        &["a pointwise op's output `result` takes the compute dtype"],
    );
}

// ---------------------------------------------------------------- CUDA

#[test]
fn cuda_device_function_with_the_wrong_arity() {
    let e = source_error(|s| {
        s.binary_cuh = s
            .binary_cuh
            .replace("inline T mul(T a, T b)", "inline T mul(T a)")
    });
    assert_eq!(e.line, 4);
    assert_contains(
        &e,
        &["CUDA kernel `binary::mul` does not fit the schema: the generated kernel calls it with 2 argument(s) (self, other), but it takes 1 parameter(s) at kernels/cuda/binary.cuh:1"],
    );
}

#[test]
fn cuda_launcher_with_a_missing_parameter() {
    let e = source_error(|s| {
        s.reduce_launchers_rs = s.reduce_launchers_rs.replace(
            "dim0: i64, dim1: i64, out: &Tensor",
            "dim0: i64, out: &Tensor",
        )
    });
    assert_eq!(e.line, 30);
    assert_contains(
        &e,
        &[
            "CUDA launcher `reduce::transpose` (src/backends/cuda/ops/reduce.rs:13)",
            "it takes 4 parameter(s), the generated code passes 5",
            "expected: fn transpose(op: &str, self_: &Tensor, dim0: i64, dim1: i64, result: &Tensor) -> Result<()>",
        ],
    );
}

#[test]
fn pointwise_op_needs_a_device_function_not_a_launcher() {
    let e = yaml_error(
        "{CPU: binary::mul, CUDA: binary::mul}",
        "{CPU: binary::mul, CUDA: reduce::sum_dim}",
    );
    assert_contains(
        &e,
        &["of a pointwise op must be a `__device__` scalar function in kernels/cuda/reduce.cuh"],
    );
}

// ---------------------------------------------------------------- composite functions

#[test]
fn misspelt_composite_function() {
    let e = yaml_error("composite::stack}", "composite::stak}");
    assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 35));
    assert_contains(
        &e,
        &["stack(Tensor[] tensors, int dim=0) -> Tensor: CompositeImplicitAutograd names `composite::stak`, but src/ops/composite.rs has no `pub fn stak` (did you mean `composite::stack`?)"],
    );
}

#[test]
fn misspelt_explicit_function() {
    let e = yaml_error("explicit::view}", "explicit::veiw}");
    assert_eq!(e.line, 40);
    assert_contains(
        &e,
        &["CompositeExplicitAutograd names `explicit::veiw`, but src/ops/explicit.rs has no `pub fn veiw` (did you mean `explicit::view`?)"],
    );
}

#[test]
fn private_composite_function() {
    let e = yaml_error("composite::stack}", "composite::unsqueeze_all}");
    assert_contains(
        &e,
        &["`composite::unsqueeze_all` (src/ops/composite.rs:6) does not fit the schema: it is private"],
    );
}

#[test]
fn composite_function_of_the_wrong_signature() {
    let e = source_error(|s| {
        s.composite_rs = s.composite_rs.replace(
            "pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor>",
            "pub fn stack(tensors: &[Tensor]) -> Tensor",
        )
    });
    assert_eq!(e.line, 35);
    assert_contains(
        &e,
        &[
            "CompositeImplicitAutograd function `composite::stack` (src/ops/composite.rs:2)",
            "missing `dim: i64` (schema argument `int dim=0`)",
        ],
    );
    let e = source_error(|s| {
        s.composite_rs = s.composite_rs.replace(
            "pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor>",
            "pub fn stack(tensors: &[Tensor], dim: i64) -> Tensor",
        )
    });
    assert_contains(
        &e,
        &["it returns `Tensor`, the generated code needs `Result<Tensor>`"],
    );
}

#[test]
fn composite_returning_a_tensor_list_returns_a_vec() {
    let native = format!(
        "{NATIVE}\n- func: unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]\n  dispatch: {{CompositeImplicitAutograd: composite::unbind}}\n  opinfo: {{samples: stack, ref: stack}}\n"
    );
    let mut s = Sources::default();
    s.composite_rs.push_str(
        "pub fn unbind(t: &Tensor, dim: i64) -> Result<Vec<Tensor>> { Ok(vec![t.clone()]) }\n",
    );
    assert!(build_with(&native, &s).is_ok());
    s.composite_rs = s
        .composite_rs
        .replace("Result<Vec<Tensor>>", "Result<Tensor>");
    let e = error(&native, &s);
    assert_eq!(e.line, 44);
    assert_contains(
        &e,
        &["it returns `Result<Tensor>`, the generated code needs `Result<Vec<Tensor>>`"],
    );
}

#[test]
fn composite_op_gets_no_inplace_or_out_variant() {
    let e = yaml_error(
        "- func: stack(Tensor[] tensors, int dim=0) -> Tensor\n",
        "- func: stack(Tensor[] tensors, int dim=0) -> Tensor\n  variants: function, out\n",
    );
    assert_contains(&e, &["gets no generated in-place or out= form"]);
}

// ---------------------------------------------------------------- OpInfo sample sets and references

#[test]
fn misspelt_sample_set() {
    let e = yaml_error("samples: stack, ref: stack", "samples: stak, ref: stack");
    assert_eq!(e.line, 36);
    assert_contains(
        &e,
        &["opinfo samples: stak, but tests/opinfo/samples.rs has no `pub fn stak` (did you mean `stack`?)"],
    );
}

#[test]
fn sample_set_without_error_samples() {
    let mut s = Sources::default();
    s.samples_rs = s
        .samples_rs
        .replace("pub fn stack_errors", "pub fn stack_errs");
    let e = error(NATIVE, &s);
    assert_eq!(e.line, 36);
    assert_contains(
        &e,
        &["samples: stack needs `stack_errors()`, the inputs the op must reject (or `errors: false` when no input can make it fail), but tests/opinfo/samples.rs has no `pub fn stack_errors`"],
    );
    // `errors: false` needs none (pow's `unary_scalar` has no `_errors` either).
    let native = NATIVE.replace(
        "{samples: stack, ref: stack}",
        "{samples: stack, ref: stack, errors: false}",
    );
    assert!(build_with(&native, &s).is_ok());
}

#[test]
fn sample_set_of_the_wrong_signature() {
    let e = source_error(|s| {
        s.samples_rs = s
            .samples_rs
            .replace("pub fn stack(dtype: DType)", "pub fn stack()")
    });
    assert_contains(
        &e,
        &[
            "sample set `samples::stack` (tests/opinfo/samples.rs:6)",
            "missing `dtype: DType`",
        ],
    );
}

#[test]
fn misspelt_reference() {
    let e = yaml_error("ref: sum_dim", "ref: sum_dims");
    assert_eq!(e.line, 27);
    assert_contains(
        &e,
        &["opinfo ref: sum_dims, but tests/opinfo/refs.rs has no `pub fn sum_dims` (did you mean `sum_dim`?)"],
    );
}

#[test]
fn non_pointwise_reference_is_a_name() {
    let e = yaml_error("ref: sum_dim", "ref: \"|a| a\"");
    assert_contains(&e, &["the ref of a non-pointwise op names a float64 function in tests/opinfo/refs.rs; found '|a| a'"]);
}

#[test]
fn pointwise_reference_is_a_closure_of_the_ops_arity() {
    let e = yaml_error("ref: \"|a, b| a * b\"", "ref: \"|a| a * a\"");
    assert_eq!(e.line, 7);
    assert_contains(
        &e,
        &["ref closure takes 1 parameter(s), but the op has 2 argument(s) (self, other)"],
    );
    let e = yaml_error("ref: \"|a, b| a * b\"", "ref: mul");
    assert_contains(&e, &["the ref of a pointwise op is a float64 closure"]);
    let e = yaml_error("ref: \"|a, b| a * b\"", "ref: \"|a, b| a * \"");
    assert_contains(&e, &["ref '|a, b| a *' is not a Rust closure"]);
}

// ---------------------------------------------------------------- defaults and names

#[test]
fn bad_defaults_are_errors_not_panics() {
    for (schema, part) in [
        (
            "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=none) -> Tensor",
            "argument `ScalarType? dtype=none`: default 'none' is not valid here: only None is supported as a default for this type",
        ),
        (
            "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=true, *, ScalarType? dtype=None) -> Tensor",
            "argument `bool keepdim=true`: default 'true' is not valid here: expected True or False",
        ),
        (
            "sum.dim_IntList(Tensor self, int[1]? dim=abc, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
            "argument `int[1]? dim=abc`: default 'abc' is not valid here: expected a list of integers such as [0,1]",
        ),
    ] {
        let native = NATIVE.replacen(
            "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
            schema,
            1,
        );
        // The derivative entry names the old schema; its error is not the one under test.
        let errors = build_with(&native, &Sources::default()).unwrap_err();
        let e = &errors[0];
        assert_eq!((e.file.as_str(), e.line), ("native_functions.yaml", 24));
        assert!(e.message.contains(part), "missing {part:?} in:\n{e}");
        assert_eq!(errors.len(), 1, "{errors:#?}");
    }
    let e = yaml_error(
        "transpose.int(Tensor self, int dim0, int dim1)",
        "transpose.int(Tensor self, int dim0, int dim1=abc)",
    );
    assert_contains(
        &e,
        &["argument `int dim1=abc`: default 'abc' is not valid here: expected an integer"],
    );
    let e = yaml_error(
        "transpose.int(Tensor self, int dim0, int dim1)",
        "transpose.int(Tensor self, int dim0, int dim1=None)",
    );
    assert_contains(
        &e,
        &["default 'None' is not valid here: None is a default only for an optional type"],
    );
}

#[test]
fn keyword_argument_names_are_errors() {
    let e = yaml_error(
        "transpose.int(Tensor self, int dim0, int dim1)",
        "transpose.int(Tensor self, int loop, int dim1)",
    );
    assert_contains(&e, &["argument 'loop' cannot be a Rust parameter name"]);
}

#[test]
fn invalid_rust_name_is_an_error() {
    let e = yaml_error(
        "- func: stack(Tensor[] tensors, int dim=0) -> Tensor\n",
        "- func: stack(Tensor[] tensors, int dim=0) -> Tensor\n  rust: stack-all\n",
    );
    assert_contains(&e, &["'stack-all' is not a Rust identifier"]);
}

#[test]
fn promote_arg_names_a_dtype_argument() {
    let e = yaml_error(
        "  dispatch: {CPU: reduce::transpose",
        "  promote: arg:dim0\n  dispatch: {CPU: reduce::transpose",
    );
    assert_contains(
        &e,
        &["promote: arg:dim0 needs an argument 'dim0' of type ScalarType or ScalarType?"],
    );
}

#[test]
fn promote_sum_needs_a_dtype_argument() {
    let e = yaml_error(
        "  dispatch: {CPU: reduce::transpose",
        "  promote: sum\n  dispatch: {CPU: reduce::transpose",
    );
    assert_eq!(e.line, 30);
    assert_contains(
        &e,
        &["promote: sum reads an argument `ScalarType? dtype`, which the schema lacks"],
    );
}

// ---------------------------------------------------------------- all errors at once

#[test]
fn every_mistake_is_reported_in_file_order() {
    let native = NATIVE
        .replace("composite::stack}", "composite::stak}")
        .replace("ref: sum_dim", "ref: sum_dims")
        .replace("ref: \"|a, b| a == b\"", "ref: \"|a| a\"");
    let errors = build_with(&native, &Sources::default()).unwrap_err();
    let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [15, 27, 35], "{errors:#?}");
}

// ---------------------------------------------------------------- the real repository

#[test]
fn the_repository_passes_every_check() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = kiln_codegen::load(&root).unwrap_or_else(|e| panic!("error: {e}"));
    assert!(model.ops.len() >= 150);
    // The scan read signatures, so the checks above ran on real kernels.
    let index = KernelIndex::scan_repo(&root).unwrap();
    let sig = index
        .cpu_signature("reduce", "sum_dim")
        .expect("reduce::sum_dim");
    assert!(sig.location.starts_with("kernels/src/cpu/reduce.rs:"));
    assert!(index
        .rust_ops
        .as_ref()
        .is_some_and(|o| o.contains_key("split_join::stack")));
    assert!(index
        .samples
        .as_ref()
        .is_some_and(|s| s.contains_key("binary_errors")));
    assert!(index
        .refs
        .as_ref()
        .is_some_and(|r| r.contains_key("sum_dim")));
}

// ---------------------------------------------------------------- vectorized slice kernels

const POW: &str = "  dispatch: {CPU: binary::pow_scalar, CUDA: binary::pow_scalar}\n";

fn vectorized_pow(spec: &str) -> String {
    NATIVE.replacen(POW, &format!("{POW}  vectorized: {spec}\n"), 1)
}

#[test]
fn vectorized_names_the_slice_kernels_that_exist() {
    let m = build_with(&vectorized_pow("binary::pow_scalar"), &Sources::default()).unwrap();
    let op = m
        .ops
        .iter()
        .find(|o| o.rust == "pow_tensor_scalar")
        .unwrap();
    let v = op.vectorized.as_ref().unwrap();
    assert_eq!(v.elems, [DType::F32]);
    assert_eq!(
        v.inplace_name(DType::F32).as_deref(),
        Some("pow_scalar_f32_")
    );
    // f32 and the half types take the f32 kernel; f64 and the rest the scalar one.
    assert_eq!(v.elem_for(DType::F16), Some(DType::F32));
    assert_eq!(v.elem_for(DType::F32), Some(DType::F32));
    assert_eq!(v.elem_for(DType::F64), None);
    assert_eq!(v.elem_for(DType::I64), None);
    let code = kiln_codegen::gen::format(kiln_codegen::gen::api::op_file(op)).unwrap();
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    for part in [
        "DType::F32=>{typeT=f32;letexponent=exponent.to::<<TasElement>::Compute>();launch::map1_slice::<T",
        "DType::F16=>{typeT=half::f16;letexponent=exponent.to::<<TasElement>::Compute>();launch::map1_slice_f32::<T",
        "kiln_kernels::cpu::binary::pow_scalar_f32(a,o,exponent",
        "Some(&|x:&mut[f32]|kiln_kernels::cpu::binary::pow_scalar_f32_(x,exponent",
        // Other dtypes keep the scalar kernel.
        "DType::F64=>{typeT=f64;letexponent=exponent.to::<<TasElement>::Compute>();launch::map1_same::<T",
    ] {
        assert!(code.contains(part), "{part} in {code}");
    }
}

#[test]
fn vectorized_slice_kernel_of_the_wrong_type() {
    let mut s = Sources::default();
    s.binary_rs = s.binary_rs.replacen(
        "out: &mut [f32], exponent: f32",
        "out: &mut [f32], exponent: f64",
        1,
    );
    let e = error(&vectorized_pow("binary::pow_scalar"), &s);
    // The `vectorized:` line, after pow's `dispatch:` (line 19).
    assert_eq!(e.line, 20);
    assert_contains(
        &e,
        &[
            "vectorized slice kernel `binary::pow_scalar_f32`",
            "parameter 3 `exponent: f64` should be `exponent: f32`",
        ],
    );
    let mut s = Sources::default();
    s.binary_rs = s
        .binary_rs
        .replacen("_f32_(self_: &mut [f32]", "_f32_(self_: &[f32]", 1);
    let e = error(&vectorized_pow("binary::pow_scalar"), &s);
    assert_contains(
        &e,
        &[
            "vectorized in-place slice kernel `binary::pow_scalar_f32_`",
            "parameter 1 `self_: &[f32]` should be `self_: &mut [f32]`",
        ],
    );
}

#[test]
fn vectorized_without_a_kernel_is_an_error() {
    let e = error(&vectorized_pow("binary::pow"), &Sources::default());
    assert_contains(
        &e,
        &[
            "names no slice kernel",
            "neither `pub fn pow_f32` nor `pub fn pow_f64`",
        ],
    );
    let e = error(&vectorized_pow("pow_scalar"), &Sources::default());
    assert_contains(&e, &["must be written as <module>::<stem>"]);
}

#[test]
fn vectorized_serves_unary_pointwise_ops_only() {
    let mul = "  dispatch: {CPU: binary::mul, CUDA: binary::mul}\n";
    let native = NATIVE.replacen(mul, &format!("{mul}  vectorized: binary::pow_scalar\n"), 1);
    let e = error(&native, &Sources::default());
    assert_contains(&e, &["mul.Tensor", "one tensor argument"]);
    let sum = "  dispatch: {CPU: reduce::sum_dim, CUDA: reduce::sum_dim}\n";
    let native = NATIVE.replacen(sum, &format!("{sum}  vectorized: binary::pow_scalar\n"), 1);
    let e = error(&native, &Sources::default());
    assert_contains(&e, &["sum.dim_IntList", "slice kernels of a pointwise op"]);
}
