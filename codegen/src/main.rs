//! `cargo run -p kiln-codegen -- show <op>`: prints what the generator emits for one op.
//! `cargo run -p kiln-codegen -- check`: validates the YAML and prints a summary.

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
        _ => Err("usage: kiln-codegen show <op> | kiln-codegen check".into()),
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
