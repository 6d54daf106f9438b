//! Generates `fuzz_ops.rs`, the table of every op in `native_functions.yaml`.

fn main() {
    let manifest = std::path::PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let root = manifest.join("..");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for p in [
        "native_functions.yaml",
        "derivatives.yaml",
        "kernels/src/cpu",
        "codegen/src",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    if let Err(e) = kiln_codegen::generate_fuzz(&root, &out) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
