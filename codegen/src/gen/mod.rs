//! Generators: pure functions from the validated [`Model`](crate::model::Model) to Rust code.

pub mod api;
pub mod cuda;
pub mod cuda_kernels;
pub mod fuzz;
pub mod nodes;
pub mod tests;

use proc_macro2::TokenStream;

/// Formats generated tokens as a Rust file.
pub fn format(tokens: TokenStream) -> Result<String, String> {
    let file: syn::File = syn::parse2(tokens.clone())
        .map_err(|e| format!("generated code does not parse: {e}\n{tokens}"))?;
    Ok(prettyplease::unparse(&file))
}
