//! Generators: pure functions from the validated [`Model`](crate::model::Model) to Rust code.

pub mod api;
pub mod cuda;
pub mod fuzz;
pub mod nodes;
pub mod tests;

use proc_macro2::TokenStream;

/// `f32` → `F32`, `bf16` → `BF16`, `bool` → `Bool`.
pub fn dtype_variant(short: &str) -> syn::Ident {
    let name = match short {
        "bool" => "Bool".to_string(),
        other => other.to_uppercase(),
    };
    quote::format_ident!("{}", name)
}

/// Formats generated tokens as a Rust file.
pub fn format(tokens: TokenStream) -> Result<String, String> {
    let file: syn::File = syn::parse2(tokens.clone())
        .map_err(|e| format!("generated code does not parse: {e}\n{tokens}"))?;
    Ok(prettyplease::unparse(&file))
}
