//! kiln's operator code generator: YAML → typed model → generated Rust.
//!
//! `model::build` parses and validates `native_functions.yaml` and `derivatives.yaml` once;
//! each generator in [`gen`] is a pure function of that model.

pub mod formula;
pub mod gen;
pub mod kernels_index;
pub mod model;
pub mod paths;
pub mod schema;
pub mod types;
pub mod yaml;

pub use model::contract;

use std::path::Path;

/// Reads the YAML files under `root` and the sources they name, and validates them. The
/// error lists every mistake, one `file:line: message` each, joined by `"\nerror: "` so that
/// a caller printing `error: {e}` labels each one.
pub fn load(root: &Path) -> Result<model::Model, String> {
    let read =
        |name: &str| std::fs::read_to_string(root.join(name)).map_err(|e| format!("{name}: {e}"));
    let native = read(paths::NATIVE_FUNCTIONS)?;
    let derivs = read(paths::DERIVATIVES)?;
    let kernels = kernels_index::KernelIndex::scan_repo(root)?;
    model::build(&native, &derivs, &kernels).map_err(|errors| {
        let n = errors.len();
        let mut lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        if n > 1 {
            lines.push(format!("{n} errors"));
        }
        lines.join("\nerror: ")
    })
}

/// Writes into `out_dir`: `ops/<op>.rs` for every op (its functions, methods, dispatch and
/// backward node), `ops.rs` (one module per op), `opinfo.rs`, `cuda_sources.rs`,
/// `cuda_kernels.rs` and `cuda_launchers.rs`. A file is
/// rewritten only when its content changed, and each op has its own file, so editing one
/// YAML entry recompiles one small module instead of every op's generated code.
pub fn generate(root: &Path, out_dir: &Path) -> Result<(), String> {
    let model = load(root)?;
    let ops_dir = out_dir.join("ops");
    std::fs::create_dir_all(&ops_dir).map_err(|e| format!("{}: {e}", ops_dir.display()))?;
    for op in &model.ops {
        write_if_changed(
            &ops_dir.join(format!("{}.rs", op.rust)),
            gen::api::op_file(op),
        )?;
    }
    let cuda = gen::cuda::generate(&model, &root.join(paths::CUDA_KERNELS_DIR))?;
    let files = [
        ("ops.rs", gen::api::generate(&model)),
        ("opinfo.rs", gen::tests::generate(&model)),
        ("cuda_sources.rs", cuda.sources),
    ];
    write_all(out_dir, files)?;
    // Written as text, not tokens, so that they keep their comments (the launchers'
    // safety notes among them).
    write_text_if_changed(&out_dir.join("cuda_kernels.rs"), &cuda.kernels)?;
    write_text_if_changed(&out_dir.join("cuda_launchers.rs"), &cuda.launchers)
}

fn write_text_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Writes `fuzz_ops.rs` (the `kiln-fuzz` table of every op) into `out_dir`, rewriting it only
/// when its content changed.
pub fn generate_fuzz(root: &Path, out_dir: &Path) -> Result<(), String> {
    let model = load(root)?;
    write_all(out_dir, [("fuzz_ops.rs", gen::fuzz::generate(&model))])
}

fn write_all<const N: usize>(
    out_dir: &Path,
    files: [(&str, proc_macro2::TokenStream); N],
) -> Result<(), String> {
    for (name, tokens) in files {
        write_if_changed(&out_dir.join(name), tokens)?;
    }
    Ok(())
}

fn write_if_changed(path: &Path, tokens: proc_macro2::TokenStream) -> Result<(), String> {
    let text = gen::format(tokens)?;
    if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// The generated code for one op (by Rust name, schema name or full name), for `show`.
pub fn show(root: &Path, name: &str) -> Result<String, String> {
    let model = load(root)?;
    let ops: Vec<&model::Op> = model
        .ops
        .iter()
        .filter(|o| o.rust == name || o.schema.name == name || o.full_name() == name)
        .collect();
    if ops.is_empty() {
        return Err(format!(
            "no operator named '{name}' in native_functions.yaml"
        ));
    }
    let mut out = String::new();
    for op in ops {
        let mut methods = Vec::new();
        let items = gen::api::op_items(op, &mut methods);
        let api = gen::format(quote::quote!(impl Tensor { #(#methods)* } #items))?;
        let node = gen::format(gen::nodes::node(op))?;
        let one = model::Model {
            ops: vec![op.clone()],
        };
        let tests = gen::format(gen::tests::generate(&one))?;
        let fuzz = gen::format(gen::fuzz::generate(&one))?;
        let lines = |s: &str| s.lines().count();
        out.push_str(&format!(
            "// ==== {} (native_functions.yaml:{}) ====\n// autocast: {}\n// api: {} lines, node: {} lines, tests: {} lines\n\n{api}\n{node}\n{tests}\n{fuzz}\n",
            op.schema,
            op.line,
            op.autocast.describe(),
            lines(&api),
            lines(&node),
            lines(&tests)
        ));
    }
    Ok(out)
}
