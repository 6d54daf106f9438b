//! The op's signature as the generated functions spell it: return type, arguments, name.

use crate::model::{Arg, Op};
use crate::types::ident;
use proc_macro2::TokenStream;
use quote::quote;

pub(super) fn op_name_lit(op: &Op) -> String {
    op.schema.name.clone()
}

/// The return type of the op's functions.
pub(super) fn ret_type(op: &Op) -> TokenStream {
    if op.returns_list() {
        return quote!(Vec<Tensor>);
    }
    match op.outputs().len() {
        1 => quote!(Tensor),
        n => {
            let ts = (0..n).map(|_| quote!(Tensor));
            quote!((#(#ts),*))
        }
    }
}

/// `(Tensor, Tensor)` value from the vector of outputs `outs`.
pub(super) fn ret_from_vec(op: &Op, v: &syn::Ident) -> TokenStream {
    match op.outputs().len() {
        1 => quote!(#v[0].clone()),
        n => {
            let items = (0..n).map(|i| quote!(#v[#i].clone()));
            quote!((#(#items),*))
        }
    }
}

pub(super) fn call_args(args: &[Arg]) -> Vec<TokenStream> {
    args.iter()
        .map(|a| {
            let id = ident(&a.name);
            quote!(#id)
        })
        .collect()
}

pub(super) fn compute_params(op: &Op) -> Vec<TokenStream> {
    op.args()
        .iter()
        .map(|a| {
            let id = ident(&a.name);
            let ty = a.kind.inner_type();
            quote!(#id: #ty)
        })
        .collect()
}
