//! Generates the operator API, dispatch, autograd nodes and OpInfo tests from the YAML.

fn main() {
    let root = std::path::PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for p in [
        "native_functions.yaml",
        "derivatives.yaml",
        "kernels/src/cpu",
        "kernels/cuda",
        "src/cuda/ops",
        "codegen/src",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
    if let Err(e) = kiln_codegen::generate(&root, &out) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
