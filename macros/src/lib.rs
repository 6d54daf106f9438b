//! `#[derive(Module)]`: implements `kiln::nn::Module` for a struct by visiting its fields in
//! declaration order, so dotted names follow the field names as PyTorch's do the attribute
//! names.
//!
//! - a `Tensor` field is a parameter; `#[module(buffer)]` makes it a buffer;
//! - a field whose type is a module (or `Option`/`Vec` of one) is a child;
//! - plain data (`usize`, `f64`, `bool`, `String`, `DType`, …) is skipped, and
//!   `#[module(skip)]` skips any other field;
//! - a `training: bool` field is the module's training flag (`train()` / `eval()` set it).
//!
//! `#[module(crate = path)]` on the struct names where `Module` lives (default `::kiln::nn`).

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Fields, GenericParam, Type};

#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

enum Role {
    Field,
    Buffer,
    Skip,
    Training,
}

fn expand(input: DeriveInput) -> syn::Result<Tokens> {
    let mut krate: syn::Path = syn::parse_quote!(::kiln::nn);
    for attr in &input.attrs {
        if attr.path().is_ident("module") {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("crate") {
                    krate = meta.value()?.parse()?;
                    Ok(())
                } else {
                    Err(meta.error("expected `crate = path`"))
                }
            })?;
        }
    }
    let fields =
        match &input.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(f) => f.named.iter().collect::<Vec<_>>(),
                Fields::Unit => Vec::new(),
                Fields::Unnamed(_) => return Err(syn::Error::new_spanned(
                    &input.ident,
                    "#[derive(Module)] needs named fields: their names become the parameter names",
                )),
            },
            _ => {
                return Err(syn::Error::new_spanned(
                    &input.ident,
                    "#[derive(Module)] works on structs",
                ))
            }
        };
    let type_params: Vec<String> = input
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some(t.ident.to_string()),
            _ => None,
        })
        .collect();
    let mut visits = Vec::new();
    let mut visits_mut = Vec::new();
    let mut bounds = Vec::new();
    for f in fields {
        let ident = f.ident.as_ref().expect("named field");
        let name = ident.to_string();
        let mut role = if name == "training" && is_bool(&f.ty) {
            Role::Training
        } else {
            Role::Field
        };
        for attr in &f.attrs {
            if attr.path().is_ident("module") {
                attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("skip") {
                        role = Role::Skip;
                        Ok(())
                    } else if meta.path.is_ident("buffer") {
                        role = Role::Buffer;
                        Ok(())
                    } else {
                        Err(meta.error("expected `skip` or `buffer`"))
                    }
                })?;
            }
        }
        let ty = &f.ty;
        match role {
            Role::Skip => {}
            Role::Training => {
                visits.push(quote!(v.training(self.#ident);));
                visits_mut.push(quote!(v.training(&mut self.#ident);));
            }
            Role::Buffer => {
                visits.push(quote!(#krate::BufferField::visit_buffer(&self.#ident, #name, v);));
                visits_mut.push(
                    quote!(#krate::BufferField::visit_buffer_mut(&mut self.#ident, #name, v)?;),
                );
            }
            Role::Field => {
                visits.push(quote!(#krate::ModuleField::visit_field(&self.#ident, #name, v);));
                visits_mut.push(
                    quote!(#krate::ModuleField::visit_field_mut(&mut self.#ident, #name, v)?;),
                );
                let tys = quote!(#ty).to_string();
                if type_params.iter().any(|p| {
                    tys.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|w| w == p)
                }) {
                    bounds.push(quote!(#ty: #krate::ModuleField));
                }
            }
        }
    }
    let ident = &input.ident;
    let (impl_g, ty_g, where_clause) = input.generics.split_for_impl();
    let mut preds: Vec<Tokens> = where_clause
        .map(|w| w.predicates.iter().map(|p| quote!(#p)).collect())
        .unwrap_or_default();
    preds.extend(bounds);
    Ok(quote! {
        impl #impl_g #krate::Module for #ident #ty_g where #(#preds),* {
            fn visit(&self, v: &mut dyn #krate::Visitor) {
                #(#visits)*
            }
            fn visit_mut(&mut self, v: &mut dyn #krate::VisitorMut) -> #krate::Result<()> {
                #(#visits_mut)*
                Ok(())
            }
        }
    })
}

fn is_bool(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.is_ident("bool"))
}
