//! The fuzz table: for every op, a function that draws each schema argument from the fuzzer's
//! argument source (`kiln_fuzz::Args`) and calls one of the op's public forms.
//!
//! The forms and their Rust names mirror [`super::api`]: `op` / `op_with` (when some argument
//! has a default), the `Tensor` method, the in-place `_` method and `op_out`. Every form draws
//! the same arguments first, so one byte string reproduces one call.

use crate::model::{Arg, Kind, Op};
use crate::types::{ident, ArgKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// `let <name> = a.<draw>("<name>");` for one argument.
fn draw(arg: &Arg) -> TokenStream {
    let id = ident(&arg.name);
    let n = &arg.name;
    let method = format_ident!(
        "{}",
        match arg.kind {
            ArgKind::Tensor => "tensor",
            ArgKind::OptTensor => "opt_tensor",
            ArgKind::TensorList => "tensor_list",
            ArgKind::OptTensorList => "opt_tensor_list",
            ArgKind::Scalar => "scalar",
            ArgKind::OptScalar => "opt_scalar",
            ArgKind::Int => "int",
            ArgKind::OptInt => "opt_int",
            ArgKind::IntList => "int_list",
            // A required `int[]?` is a plain slice in the public API (see `ArgKind::param_type`).
            ArgKind::OptIntList if arg.default.is_none() => "int_list",
            ArgKind::OptIntList => "opt_int_list",
            ArgKind::BoolList => "bool_list",
            ArgKind::Bool => "bool",
            ArgKind::OptBool => "opt_bool",
            ArgKind::Float => "float",
            ArgKind::OptFloat => "opt_float",
            ArgKind::ScalarType => "dtype",
            ArgKind::OptScalarType => "opt_dtype",
            ArgKind::Device => "device",
            ArgKind::OptDevice => "opt_device",
            ArgKind::Str => "string",
            ArgKind::OptStr => "opt_string",
        }
    );
    quote!(let #id = a.#method(#n);)
}

/// The drawn local as the public parameter type expects it.
fn pass(arg: &Arg) -> TokenStream {
    let id = ident(&arg.name);
    match arg.kind {
        ArgKind::Tensor
        | ArgKind::TensorList
        | ArgKind::IntList
        | ArgKind::BoolList
        | ArgKind::Str => quote!(&#id),
        ArgKind::OptIntList if arg.default.is_none() => quote!(&#id),
        ArgKind::OptTensor => quote!(#id.as_ref()),
        ArgKind::OptTensorList => quote!(&#id.iter().map(Option::as_ref).collect::<Vec<_>>()),
        ArgKind::OptIntList | ArgKind::OptStr => quote!(#id.as_deref()),
        _ => quote!(#id),
    }
}

/// `a.finish(&[&r])`, or `&[&r.0, &r.1]` for several outputs.
fn finish(n_out: usize) -> TokenStream {
    if n_out == 1 {
        quote!(a.finish(&[&r]);)
    } else {
        let idx = (0..n_out).map(syn::Index::from);
        quote!(a.finish(&[#(&r.#idx),*]);)
    }
}

/// The forms of one op: (a label for reports, draws only this form needs, the call).
fn forms(op: &Op) -> Vec<(String, TokenStream, TokenStream)> {
    let args = op.args();
    let has_defaults = args.iter().any(|a| a.default.is_some());
    let composite = matches!(op.kind, Kind::Composite { .. });
    let mut out = Vec::new();
    // (suffix, include defaulted args)
    let mut names = vec![(String::new(), !has_defaults)];
    if has_defaults {
        names.push(("_with".to_string(), true));
    }
    for (suffix, all) in &names {
        let used: Vec<&Arg> = args
            .iter()
            .filter(|a| *all || a.default.is_none())
            .collect();
        let rest: Vec<TokenStream> = used
            .iter()
            .filter(|a| a.name != "self")
            .map(|a| pass(a))
            .collect();
        let fname = format!("{}{suffix}", op.rust);
        if op.variants.function {
            let f = format_ident!("{}", fname);
            let ps = used.iter().map(|a| pass(a));
            out.push((
                format!("kiln::{fname}"),
                quote!(),
                quote!(kiln_core::#f(#(#ps),*)),
            ));
        }
        if op.variants.method {
            let f = format_ident!("{}", fname);
            out.push((
                format!("Tensor::{fname}"),
                quote!(),
                quote!(self_.#f(#(#rest),*)),
            ));
        }
        if op.variants.inplace && !composite {
            let f = format_ident!("{}_", fname);
            out.push((
                format!("Tensor::{fname}_"),
                quote!(),
                quote!(self_.#f(#(#rest),*)),
            ));
        }
    }
    if op.variants.out && !composite {
        let f = format_ident!("{}_out", op.rust);
        let ps = args.iter().map(pass);
        let outs: Vec<syn::Ident> = op
            .outputs()
            .iter()
            .map(|o| format_ident!("out_{}", o))
            .collect();
        let names = outs.iter().map(|o| o.to_string());
        out.push((
            format!("kiln::{}_out", op.rust),
            quote!(#(let #outs = a.tensor(#names);)*),
            quote!(kiln_core::#f(#(#ps,)* #(&#outs),*)),
        ));
    }
    out
}

/// `fuzz_<op>`; `_softmax` gives `fuzz_priv_softmax` (snake case, distinct from `softmax`).
fn fn_name(op: &Op) -> syn::Ident {
    match op.rust.strip_prefix('_') {
        Some(rest) => format_ident!("fuzz_priv_{}", rest),
        None => format_ident!("fuzz_{}", op.rust),
    }
}

/// `fn fuzz_<op>(a: &mut Args) -> kiln_core::Result<()>`.
fn fuzz_fn(op: &Op) -> TokenStream {
    let name = fn_name(op);
    let doc = format!("Fuzzes `{}`.", op.schema);
    let draws = op.args().iter().map(draw).collect::<Vec<_>>();
    let forms = forms(op);
    // A form with in-place semantics returns `self`: one output.
    let n_out = op.outputs().len();
    let labels = forms.iter().map(|(l, _, _)| l);
    let arms: Vec<TokenStream> = forms
        .iter()
        .map(|(label, pre, call)| {
            if op.schema.returns.is_empty() {
                // An op that mutates its inputs and returns nothing.
                return quote!({
                    #pre
                    a.call();
                    #call?;
                    a.finish(&[]);
                });
            }
            let fin = if label.ends_with('_') {
                finish(1)
            } else if op.returns_list() {
                // A `Tensor[]` return is a `Vec<Tensor>`: every element is an output.
                quote!(a.finish(&r.iter().collect::<Vec<_>>());)
            } else {
                finish(n_out)
            };
            quote!({
                #pre
                a.call();
                let r = #call?;
                #fin
            })
        })
        .collect();
    let body = if arms.len() == 1 {
        let arm = &arms[0];
        quote!(a.form(&[#(#labels),*]); #arm)
    } else {
        let last = arms.len() - 1;
        let idx = 0..last;
        let (init, tail) = (&arms[..last], &arms[last]);
        quote! {
            match a.form(&[#(#labels),*]) {
                #(#idx => #init)*
                _ => #tail
            }
        }
    };
    quote! {
        #[doc = #doc]
        pub fn #name(a: &mut Args) -> kiln_core::Result<()> {
            #(#draws)*
            #body
            Ok(())
        }
    }
}

/// The whole `fuzz_ops.rs`: one function per op and the table `OPS`.
pub fn generate(model: &crate::model::Model) -> TokenStream {
    let fns = model.ops.iter().map(fuzz_fn);
    let entries = model.ops.iter().map(|op| {
        let n = op.full_name();
        let f = fn_name(op);
        quote!((#n, #f))
    });
    quote! {
        // @generated by kiln-codegen from native_functions.yaml. Do not edit.
        #(#fns)*

        /// Every op in `native_functions.yaml`: (schema name, fuzz function).
        pub static OPS: &[(&str, FuzzFn)] = &[#(#entries),*];
    }
}
