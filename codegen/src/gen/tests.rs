//! The OpInfo matrix: for every op, adaptor functions from a generic `Sample` to each public
//! variant, the reference, and one `#[test]` per check × dtype. The checks themselves live in
//! `tests/opinfo/harness.rs`.

use super::dtype_variant;
use crate::model::{Kind, Model, Op};
use crate::types::{ident, ArgKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// How a sample supplies argument `a` (the `ti`-th tensor / `li`-th list).
fn sample_arg(a: &crate::model::Arg, ti: &mut usize, li: &mut usize) -> TokenStream {
    let n = &a.name;
    let dflt = |k: ArgKind| -> TokenStream {
        match &a.default {
            Some(d) => {
                let e = k.default_expr(d).expect("validated default");
                quote!(.unwrap_or(#e))
            }
            None => quote!(.expect(concat!("sample provides ", #n))),
        }
    };
    match a.kind {
        ArgKind::Tensor => {
            let i = *ti;
            *ti += 1;
            quote!(s.t(#i))
        }
        ArgKind::OptTensor => {
            let i = *ti;
            *ti += 1;
            quote!(s.opt_t(#i))
        }
        ArgKind::TensorList => {
            let i = *li;
            *li += 1;
            quote!(s.list(#i))
        }
        ArgKind::Scalar => {
            let d = dflt(a.kind);
            quote!(s.scalar(#n)#d)
        }
        ArgKind::OptScalar => {
            let d = dflt(a.kind);
            quote!(s.opt_scalar(#n)#d)
        }
        ArgKind::Int => {
            let d = dflt(a.kind);
            quote!(s.int(#n)#d)
        }
        ArgKind::OptInt => {
            let d = dflt(a.kind);
            quote!(s.opt_int(#n)#d)
        }
        ArgKind::IntList => {
            let d = dflt(a.kind);
            quote!(s.ints(#n)#d)
        }
        ArgKind::OptIntList => {
            if a.default.is_none() {
                quote!(s.ints(#n).expect(concat!("sample provides ", #n)))
            } else {
                let d = dflt(a.kind);
                quote!(s.opt_ints(#n)#d)
            }
        }
        ArgKind::Bool => {
            let d = dflt(a.kind);
            quote!(s.flag(#n)#d)
        }
        ArgKind::OptBool => {
            let d = dflt(a.kind);
            quote!(s.opt_flag(#n)#d)
        }
        ArgKind::Float => {
            let d = dflt(a.kind);
            quote!(s.float(#n)#d)
        }
        ArgKind::OptFloat => {
            let d = dflt(a.kind);
            quote!(s.opt_float(#n)#d)
        }
        ArgKind::ScalarType => {
            let d = dflt(a.kind);
            quote!(s.dtype(#n)#d)
        }
        ArgKind::OptScalarType => {
            let d = dflt(a.kind);
            quote!(s.opt_dtype(#n)#d)
        }
        ArgKind::Device => {
            let d = dflt(a.kind);
            quote!(s.device(#n)#d)
        }
        ArgKind::OptDevice => {
            let d = dflt(a.kind);
            quote!(s.opt_device(#n)#d)
        }
        ArgKind::Str => {
            let d = dflt(a.kind);
            quote!(s.string(#n)#d)
        }
    }
}

/// Gives the reference closure's untyped parameters the types the harness passes: f64 for
/// tensor elements and scalars, `Option<f64>` for optional scalars, the Rust type otherwise.
fn annotate_closure(closure: &mut syn::Expr, args: &[crate::model::Arg]) {
    let syn::Expr::Closure(c) = closure else {
        return;
    };
    for (pat, a) in c.inputs.iter_mut().zip(args) {
        if let syn::Pat::Ident(_) = pat {
            let ty: syn::Type = match a.kind {
                ArgKind::Tensor | ArgKind::Scalar | ArgKind::Float => syn::parse_quote!(f64),
                ArgKind::OptScalar => syn::parse_quote!(Option<f64>),
                ArgKind::Str => syn::parse_quote!(&str),
                ArgKind::Int => syn::parse_quote!(i64),
                ArgKind::Bool => syn::parse_quote!(bool),
                _ => continue,
            };
            let inner = pat.clone();
            *pat = syn::Pat::Type(syn::PatType {
                attrs: vec![],
                pat: Box::new(inner),
                colon_token: Default::default(),
                ty: Box::new(ty),
            });
        }
    }
}

fn to_vec(op: &Op) -> TokenStream {
    match op.outputs().len() {
        1 => quote!(.map(|r| vec![r])),
        n => {
            let idx = (0..n).map(syn::Index::from);
            quote!(.map(|r| vec![#(r.#idx),*]))
        }
    }
}

fn op_module(op: &Op) -> TokenStream {
    let Some(info) = &op.opinfo else {
        return quote!();
    };
    let args = op.args();
    let (mut ti, mut li) = (0, 0);
    let exprs: Vec<TokenStream> = args
        .iter()
        .map(|a| sample_arg(a, &mut ti, &mut li))
        .collect();
    let has_defaults = args.iter().any(|a| a.default.is_some());
    let fname = if has_defaults {
        format_ident!("{}_with", op.rust)
    } else {
        format_ident!("{}", op.rust)
    };
    let tv = to_vec(op);
    let self_pos = args.iter().position(|a| a.name == "self");
    let non_self: Vec<&TokenStream> = exprs
        .iter()
        .zip(&args)
        .filter(|(_, a)| a.name != "self")
        .map(|(e, _)| e)
        .collect();
    let self_expr = self_pos.map(|p| exprs[p].clone());

    let call = if op.variants.function {
        quote!(kiln::#fname(#(#exprs),*)#tv)
    } else {
        let se = self_expr.clone().expect("method ops have self");
        quote!(#se.#fname(#(#non_self),*)#tv)
    };
    let method = match (&self_expr, op.variants.method) {
        (Some(se), true) => {
            quote!(Some({ fn method(s: &Sample) -> Result<Vec<Tensor>> { #se.#fname(#(#non_self),*)#tv } method }))
        }
        _ => quote!(None),
    };
    let composite = matches!(op.kind, Kind::Composite { .. });
    let inplace = match (&self_expr, op.variants.inplace && !composite) {
        (Some(se), true) => {
            let iname = format_ident!("{}_", fname);
            quote!(Some({ fn inplace(s: &Sample) -> Result<Vec<Tensor>> { #se.#iname(#(#non_self),*).map(|r| vec![r]) } inplace }))
        }
        _ => quote!(None),
    };
    let out = if op.variants.out && !composite {
        let oname = format_ident!("{}_out", op.rust);
        let outs = (0..op.outputs().len()).map(|i| quote!(&outs[#i]));
        quote!(Some({ fn out(s: &Sample, outs: &[Tensor]) -> Result<Vec<Tensor>> { kiln::#oname(#(#exprs,)* #(#outs),*)#tv } out }))
    } else {
        quote!(None)
    };
    // Reference: a float64 closure for pointwise ops, a named plain-loop function otherwise.
    let reference = if matches!(op.kind, Kind::Pointwise { .. }) {
        let mut closure: syn::Expr =
            syn::parse_str(&info.reference).expect("validated reference closure");
        annotate_closure(&mut closure, &args);
        let mut tensor_idx = 0usize;
        let mut call_args = Vec::new();
        let mut lets = Vec::new();
        for (a, e) in args.iter().zip(&exprs) {
            let id = ident(&a.name);
            match a.kind {
                ArgKind::Tensor => {
                    call_args.push(quote!(v[#tensor_idx]));
                    tensor_idx += 1;
                }
                ArgKind::Scalar => {
                    lets.push(quote!(let #id: f64 = #e.to_f64();));
                    call_args.push(quote!(#id));
                }
                ArgKind::OptScalar => {
                    lets.push(quote!(let #id: Option<f64> = #e.map(|x| x.to_f64());));
                    call_args.push(quote!(#id));
                }
                _ => {
                    lets.push(quote!(let #id = #e;));
                    call_args.push(quote!(#id));
                }
            }
        }
        let tens = (0..tensor_idx).map(|i| quote!(s.t(#i)));
        quote! {
            fn reference(s: &Sample) -> Vec<RefTensor> {
                #(#lets)*
                let f = #closure;
                vec![ref_pointwise(&[#(#tens),*], |v: &[f64]| RefValue::from(f(#(#call_args),*)))]
            }
        }
    } else {
        let path: syn::Path =
            syn::parse_str(&format!("refs::{}", info.reference)).expect("validated reference path");
        quote!(fn reference(s: &Sample) -> Vec<RefTensor> { #path(s) })
    };
    let samples: syn::Path =
        syn::parse_str(&format!("samples::{}", info.samples)).expect("valid sample name");
    let errors: syn::Path =
        syn::parse_str(&format!("samples::{}_errors", info.samples)).expect("valid sample name");
    let differentiable =
        op.derivative.is_some() || (composite && op.has_float_output() && info.gradcheck);
    let name = op.full_name();
    let mut tests = Vec::new();
    for d in &info.dtypes {
        let v = dtype_variant(d);
        for check in ["forward", "edge", "noncontiguous", "variants"] {
            if check == "variants" && !info.variants {
                continue;
            }
            let t = format_ident!("{}_{}", check, d);
            let f = format_ident!("check_{}", check);
            tests.push(quote!(#[test] fn #t() { #f(&INFO, DType::#v) }));
        }
    }
    if differentiable && info.gradcheck {
        tests.push(quote!(
            #[test]
            fn gradcheck() {
                check_gradcheck(&INFO)
            }
        ));
        tests.push(quote!(
            #[test]
            fn gradgradcheck() {
                check_gradgradcheck(&INFO)
            }
        ));
    }
    if info.errors {
        tests.push(quote!(
            #[test]
            fn errors() {
                check_errors(&INFO)
            }
        ));
    }
    let module = format_ident!("{}", op.rust);
    quote! {
        mod #module {
            use super::*;
            fn call(s: &Sample) -> Result<Vec<Tensor>> { #call }
            #reference
            const INFO: OpInfo = OpInfo {
                name: #name,
                call,
                method: #method,
                inplace: #inplace,
                out: #out,
                reference,
                samples: #samples,
                error_samples: #errors,
                differentiable: #differentiable,
            };
            #(#tests)*
        }
    }
}

/// The whole generated OpInfo file, `include!`d by `tests/opinfo.rs`.
pub fn generate(model: &Model) -> TokenStream {
    let mods = model.ops.iter().map(op_module);
    let count = model.ops.len();
    quote! {
        // @generated by kiln-codegen. Do not edit.
        /// Operators declared in native_functions.yaml.
        pub const OPERATOR_COUNT: usize = #count;
        #(#mods)*
    }
}
