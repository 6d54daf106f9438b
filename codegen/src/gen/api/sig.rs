//! The op's signature as the generated functions spell it: return type, arguments, name.

use crate::model::{Arg, Op};
use crate::types::{ident, ArgKind};
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

/// `let inputs: Vec<&Tensor> = ...;`: every tensor the op takes (lists flattened, absent
/// optionals left out), in schema order.
pub(super) fn tensor_inputs(args: &[Arg]) -> TokenStream {
    let chain = args.iter().filter(|x| x.kind.is_tensor()).map(|x| {
        let id = ident(&x.name);
        match x.kind {
            ArgKind::Tensor => quote!(.chain(std::iter::once(#id))),
            ArgKind::OptTensor => quote!(.chain(#id)),
            ArgKind::OptTensorList => quote!(.chain(#id.iter().flatten().copied())),
            _ => quote!(.chain(#id.iter())),
        }
    });
    quote!(let inputs: Vec<&Tensor> = std::iter::empty() #(#chain)* .collect();)
}

/// Statements rebinding each tensor argument to `f(tensor)?` (`f`: a path or a local
/// closure, `Fn(&Tensor) -> Result<Tensor>`), keeping the argument's borrowed type.
pub(super) fn rebind_tensors(args: &[Arg], f: &TokenStream) -> Vec<TokenStream> {
    args.iter()
        .filter(|x| x.kind.is_tensor())
        .map(|x| {
            let id = ident(&x.name);
            match x.kind {
                ArgKind::Tensor => quote!(let #id = &#f(#id)?;),
                ArgKind::OptTensor => quote! {
                    let #id = #id.map(#f).transpose()?;
                    let #id = #id.as_ref();
                },
                ArgKind::OptTensorList => quote! {
                    let #id = #id.iter().map(|t| t.map(#f).transpose()).collect::<Result<Vec<Option<Tensor>>>>()?;
                    let #id = &#id.iter().map(Option::as_ref).collect::<Vec<Option<&Tensor>>>();
                    let #id = #id.as_slice();
                },
                _ => quote! {
                    let #id = &#id.iter().map(#f).collect::<Result<Vec<Tensor>>>()?;
                    let #id = #id.as_slice();
                },
            }
        })
        .collect()
}
