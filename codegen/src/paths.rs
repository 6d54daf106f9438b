//! Every path the generator reads or names, in one place: where the sources the YAML names
//! live (relative to the repository root), and the Rust paths generated code calls. Moving
//! one of them is one edit here.

/// The CPU kernels: `kernels/src/cpu/<module>.rs`, `kernels::cpu::<module>::<fn>`.
pub const CPU_KERNELS_DIR: &str = "kernels/src/cpu";
/// The CUDA templates (`*.cu.j2`) and `__device__` scalar functions (`<module>.cuh`).
pub const CUDA_KERNELS_DIR: &str = "kernels/cuda";
/// The CUDA launchers of non-pointwise ops: `<dir>/<module>.rs`.
pub const CUDA_LAUNCHERS_DIR: &str = "src/backends/cuda/ops";
/// Composite and explicit ops: `<dir>/<module>.rs`.
pub const RUST_OPS_DIR: &str = "src/ops";
/// The library's sources: the `impl Tensor` blocks anywhere below are the hand-written
/// `Tensor` API a derivatives.yaml formula may call (`sizes`, `zeros_like`).
pub const LIBRARY_DIR: &str = "src";
/// The backward helpers formulas call unqualified (`pow_backward_scalar(..)`): every
/// `<dir>/<family>.rs`, and what `<dir>/mod.rs` re-exports by name.
pub const BACKWARD_HELPERS_DIR: &str = "src/ops/backward";
/// The files defining the crate root's functions besides the generated ones, which a formula
/// calls as `crate::<name>`: the root itself and `ops`, which it glob re-exports.
pub const CRATE_ROOT_FILES: [&str; 2] = ["src/lib.rs", "src/ops/mod.rs"];
/// The OpInfo sample sets.
pub const SAMPLES_FILE: &str = "tests/opinfo/samples.rs";
/// The OpInfo float64 references of non-pointwise ops.
pub const REFS_FILE: &str = "tests/opinfo/refs.rs";

/// The YAML files.
pub const NATIVE_FUNCTIONS: &str = "native_functions.yaml";
pub const DERIVATIVES: &str = "derivatives.yaml";

/// What `build.rs` watches: a change to any of these reruns the generator. The rest of
/// [`LIBRARY_DIR`] is read (for the names formulas call) but not watched, as the OpInfo
/// files are not: an edit there alone should not rerun the generator and rebuild the library.
pub const WATCHED: [&str; 7] = [
    NATIVE_FUNCTIONS,
    DERIVATIVES,
    CPU_KERNELS_DIR,
    CUDA_KERNELS_DIR,
    CUDA_LAUNCHERS_DIR,
    RUST_OPS_DIR,
    "codegen/src",
];

/// The Rust module generated code reaches the CUDA launchers through (`<path>::pointwise`,
/// `<path>::<module>::<fn>`, `<path>::Arg`).
pub const CUDA_OPS_RUST: &str = "crate::backends::cuda::ops";
/// The generated CUDA kernel table (`cuda_kernels.rs`): one module per CUDA module.
pub const CUDA_KERNELS_RUST: &str = "crate::backends::cuda::kernels";
/// The Rust module composite and explicit ops are reached through (`<path>::<module>::<fn>`).
pub const RUST_OPS_RUST: &str = "crate::ops";
