//! Snapshots of what the generator emits for representative ops of the real YAML: a
//! pointwise op, a structured one, a composite, a view, a multi-output op and one CUDA
//! kernel module. A change to the generated code is a diff of `tests/snapshots/*.snap` to
//! review; `INSTA_UPDATE=always cargo test -p kiln-codegen --test snapshots` rewrites them.
//!
//! Each snapshot holds the op's generated file (`ops/<op>.rs`: public functions, methods,
//! compute with its backend branches, autograd recording and node), without YAML line
//! numbers, so that an edit of another op leaves it as it is.

use kiln_codegen::model::{Model, Op};
use kiln_codegen::paths;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn model() -> Model {
    kiln_codegen::load(&root()).expect("the real YAML validates")
}

/// The op's generated file, as `build.rs` writes it.
fn op_file(full_name: &str) -> String {
    let model = model();
    let op: &Op = model
        .ops
        .iter()
        .find(|o| o.full_name() == full_name)
        .unwrap_or_else(|| panic!("no op {full_name} in native_functions.yaml"));
    let text = kiln_codegen::gen::format(kiln_codegen::gen::api::op_file(op)).unwrap();
    format!("// {}\n{text}", op.schema)
}

#[test]
fn pointwise_mul_tensor() {
    insta::assert_snapshot!("mul.Tensor", op_file("mul.Tensor"));
}

#[test]
fn structured_sum_dim() {
    insta::assert_snapshot!("sum.dim_IntList", op_file("sum.dim_IntList"));
}

#[test]
fn composite_implicit_mean() {
    insta::assert_snapshot!("mean", op_file("mean"));
}

#[test]
fn view_transpose() {
    insta::assert_snapshot!("transpose.int", op_file("transpose.int"));
}

#[test]
fn multi_output_max_dim() {
    insta::assert_snapshot!("max.dim", op_file("max.dim"));
}

#[test]
fn multi_output_fixed_dtype_sort() {
    insta::assert_snapshot!("sort", op_file("sort"));
}

/// The generated CUDA module of a pointwise op, without the prelude and the scalar functions
/// it starts with (those are hand-written files, not generated).
#[test]
fn cuda_pointwise_module_mul() {
    let cuda_dir = root().join(paths::CUDA_KERNELS_DIR);
    let modules = kiln_codegen::gen::cuda::modules(&model(), &cuda_dir).unwrap();
    let (_, src) = modules
        .iter()
        .find(|(name, _)| name == "pointwise_mul")
        .expect("mul.Tensor has a generated CUDA module");
    let prelude = std::fs::read_to_string(cuda_dir.join("prelude.cuh")).unwrap();
    let scalar_fns = std::fs::read_to_string(cuda_dir.join("binary.cuh")).unwrap();
    let head = format!("{prelude}\n{scalar_fns}\n");
    let body = src
        .strip_prefix(&head)
        .expect("a pointwise module is the prelude, the scalar fns, then the generated kernel");
    insta::assert_snapshot!("cuda_pointwise_mul", body);
}

/// The kernel table entry and typed launcher generated for a structured kernel family, and
/// the guarantee call sites rely on: every family outside the pointwise modules (which share
/// one schema-driven launcher) gets a typed launcher, so no launch builds its arguments by
/// hand.
#[test]
fn cuda_kernel_table_and_launchers() {
    let cuda_dir = root().join(paths::CUDA_KERNELS_DIR);
    let modules = kiln_codegen::gen::cuda::modules(&model(), &cuda_dir).unwrap();
    let (table, launchers) = kiln_codegen::gen::cuda_kernels::generate(&modules).unwrap();
    let section = |text: &str, start: &str| -> String {
        let at = text
            .find(start)
            .unwrap_or_else(|| panic!("{start} not generated"));
        let rest = &text[at..];
        rest[..rest.find("\n}\n").map_or(rest.len(), |e| e + 3)].to_string()
    };
    insta::assert_snapshot!(
        "cuda_pool_kernels",
        format!(
            "{}\n{}",
            section(&table, "pub(crate) mod pool {"),
            section(&launchers, "pub(crate) mod pool {")
        )
    );
    for (name, src) in modules.iter().filter(|(n, _)| !n.starts_with("pointwise_")) {
        let own = section(&launchers, &format!("pub(crate) mod {name} {{"));
        for k in kiln_codegen::gen::cuda_kernels::scan(name, src).unwrap() {
            let (stem, _) = kiln_codegen::gen::cuda_kernels::split_symbol(&k.symbol);
            assert!(
                own.contains(&format!("pub(crate) unsafe fn {stem}(")),
                "CUDA kernel {} of module {name} has no typed launcher",
                k.symbol
            );
        }
    }
}
