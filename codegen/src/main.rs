//! `cargo run -p kiln-codegen -- show <op>`: prints what the generator emits for one op.
//! `cargo run -p kiln-codegen -- check`: validates the YAML and every source it names
//! (kernel, meta, check and CUDA signatures, composite fns, OpInfo sample sets and refs, what
//! formulas call) without building the library; prints every error with its file:line and
//! exits non-zero, or prints a summary.
//! `cargo run -p kiln-codegen -- cuda <dir>`: writes every generated CUDA module as
//! `<dir>/<module>.cu`, to read or to compile by hand (`nvcc -ptx`, NVRTC).
//! `cargo run -p kiln-codegen -- gen <dir>`: writes everything `build.rs` (and the fuzz
//! crate's) would write into `OUT_DIR`, to diff the generated code before and after a change.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["show", name] => kiln_codegen::show(&root, name),
        ["check"] => kiln_codegen::load(&root).map(|m| {
            let nodes = m.ops.iter().filter(|o| o.derivative.is_some()).count();
            format!("{} operators, {} backward nodes: OK", m.ops.len(), nodes)
        }),
        ["cuda", dir] => kiln_codegen::load(&root).and_then(|m| {
            let modules = kiln_codegen::gen::cuda::modules(&m, &root.join(kiln_codegen::paths::CUDA_KERNELS_DIR))?;
            std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: {e}"))?;
            for (name, src) in &modules {
                let path = PathBuf::from(dir).join(format!("{name}.cu"));
                std::fs::write(&path, src).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok(format!("{} CUDA modules written to {dir}", modules.len()))
        }),
        ["gen", dir] => {
            let dir = PathBuf::from(dir);
            kiln_codegen::generate(&root, &dir)
                .and_then(|()| kiln_codegen::generate_fuzz(&root, &dir))
                .map(|()| format!("generated code written to {}", dir.display()))
        }
        _ => Err(
            "usage: kiln-codegen show <op> | kiln-codegen check | kiln-codegen cuda <dir> | kiln-codegen gen <dir>"
                .into(),
        ),
    };
    match result {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
