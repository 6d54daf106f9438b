//! Generates the operator API, dispatch, autograd nodes and OpInfo tests from the YAML.

fn main() {
    let root = std::path::PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // Every source the YAML names is read to check it (kernel signatures, composite fns).
    // The OpInfo samples and refs, and the `Tensor` API under `src/` that formulas call, are
    // read too but not listed: a rerun here rebuilds the library, which an edit of those
    // alone should not cost; their names are checked whenever the YAML changes, and by
    // `cargo run -p kiln-codegen -- check`.
    // The paths live in `kiln_codegen::paths`, where the generator reads them.
    for p in kiln_codegen::paths::WATCHED {
        println!("cargo:rerun-if-changed={p}");
    }
    if let Err(e) = kiln_codegen::generate(&root, &out) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
