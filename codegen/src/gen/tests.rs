//! The OpInfo table: for every op, adaptor functions from a generic `Sample` to each public
//! variant and to the float64 reference, and one `OpInfo` entry in `OPINFOS` holding them with
//! the data that picks the checks (dtypes, variants, gradcheck, errors). No test functions are
//! generated: `tests/opinfo/runner.rs` enumerates op × device × dtype × check at run time
//! (PyTorch's device-generic tests), and the checks live in `tests/opinfo/harness.rs`.

use crate::model::{Kind, Model, Op, OpInfo};
use crate::types::{ident, ArgKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// Which of a sample's tensors, tensor lists and optional-tensor lists the next argument of
/// each kind reads.
#[derive(Default)]
struct SampleSlots {
    tensor: usize,
    list: usize,
    opt_list: usize,
}

/// How a sample supplies argument `a`, taking the next slot of its kind from `slots`.
fn sample_arg(a: &crate::model::Arg, slots: &mut SampleSlots) -> TokenStream {
    let n = &a.name;
    let dflt = |k: ArgKind| -> TokenStream {
        match &a.default {
            Some(d) => {
                let e = k
                    .default_expr(d)
                    .expect("model::build checked every default");
                quote!(.unwrap_or(#e))
            }
            None => quote!(.expect(concat!("sample provides ", #n))),
        }
    };
    match a.kind {
        ArgKind::Tensor => {
            let i = slots.tensor;
            slots.tensor += 1;
            quote!(s.t(#i))
        }
        ArgKind::OptTensor => {
            let i = slots.tensor;
            slots.tensor += 1;
            quote!(s.opt_t(#i))
        }
        ArgKind::TensorList => {
            let i = slots.list;
            slots.list += 1;
            quote!(s.list(#i))
        }
        // `opt_list` gives a `Vec<Option<&Tensor>>`, borrowed for the call's duration.
        ArgKind::OptTensorList => {
            let i = slots.opt_list;
            slots.opt_list += 1;
            quote!(&s.opt_list(#i))
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
        ArgKind::BoolList => {
            let d = dflt(a.kind);
            quote!(s.bools(#n)#d)
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
        // Only `None` is a valid default of `str?`, and an absent argument reads as None.
        ArgKind::OptStr => quote!(s.string(#n)),
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
    if op.returns_list() {
        return quote!();
    }
    match op.outputs().len() {
        1 => quote!(.map(|r| vec![r])),
        n => {
            let idx = (0..n).map(syn::Index::from);
            quote!(.map(|r| vec![#(r.#idx),*]))
        }
    }
}

/// The public variants an op's adaptor module defines, as calls on a sample `s`.
struct Adaptors {
    call: TokenStream,
    method: Option<TokenStream>,
    inplace: Option<TokenStream>,
    out: Option<TokenStream>,
}

/// How each public variant of `op` is called with the arguments a sample supplies.
fn adaptors(op: &Op, exprs: &[TokenStream]) -> Adaptors {
    let args = op.args();
    let has_defaults = args.iter().any(|a| a.default.is_some());
    let fname = if has_defaults {
        format_ident!("{}_with", op.rust)
    } else {
        format_ident!("{}", op.rust)
    };
    let tv = to_vec(op);
    let self_expr = args
        .iter()
        .position(|a| a.name == "self")
        .map(|p| &exprs[p]);
    let non_self: Vec<&TokenStream> = exprs
        .iter()
        .zip(&args)
        .filter(|(_, a)| a.name != "self")
        .map(|(e, _)| e)
        .collect();
    let call = if op.variants.function {
        quote!(kiln::#fname(#(#exprs),*)#tv)
    } else {
        let se = self_expr.expect(
            "model::build checked that an OpInfo op has a function, or a method (so a self)",
        );
        quote!(#se.#fname(#(#non_self),*)#tv)
    };
    let method = self_expr
        .filter(|_| op.variants.method)
        .map(|se| quote!(#se.#fname(#(#non_self),*)#tv));
    // Composite ops get no generated in-place or out= forms.
    let composite = matches!(op.kind, Kind::Composite { .. });
    let inplace = self_expr
        .filter(|_| op.variants.inplace && !composite)
        .map(|se| {
            let iname = format_ident!("{}_", fname);
            quote!(#se.#iname(#(#non_self),*).map(|r| vec![r]))
        });
    let out = (op.variants.out && !composite).then(|| {
        let oname = format_ident!("{}_out", op.rust);
        let outs = (0..op.outputs().len()).map(|i| quote!(&outs[#i]));
        quote!(kiln::#oname(#(#exprs,)* #(#outs),*)#tv)
    });
    Adaptors {
        call,
        method,
        inplace,
        out,
    }
}

/// The float64 reference: the YAML's closure applied elementwise for pointwise ops, a named
/// plain-loop function in `tests/opinfo/refs.rs` otherwise.
fn reference_body(op: &Op, info: &OpInfo, exprs: &[TokenStream]) -> TokenStream {
    let args = op.args();
    if !matches!(op.kind, Kind::Pointwise { .. }) {
        let name = format_ident!("{}", info.reference);
        return quote!(refs::#name(s));
    }
    let mut closure: syn::Expr = syn::parse_str(&info.reference)
        .expect("model::build checked that a pointwise op's ref is a closure");
    annotate_closure(&mut closure, &args);
    let mut tensor_idx = 0usize;
    let mut call_args = Vec::new();
    let mut lets = Vec::new();
    for (a, e) in args.iter().zip(exprs) {
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
        #(#lets)*
        let f = #closure;
        vec![ref_pointwise(&[#(#tens),*], |v: &[f64]| RefValue::from(f(#(#call_args),*)))]
    }
}

/// `mod <op>`: a fn per public variant of the op and its float64 reference.
fn adaptor_module(op: &Op, m: &syn::Ident, a: &Adaptors, reference: TokenStream) -> TokenStream {
    let call = &a.call;
    let variant_fn = |name: &str, body: &Option<TokenStream>| {
        let f = format_ident!("{}", name);
        body.as_ref()
            .map(|b| quote!(pub fn #f(s: &Sample) -> Result<Vec<Tensor>> { #b }))
    };
    let method = variant_fn("method", &a.method);
    let inplace = variant_fn("inplace", &a.inplace);
    let out = a
        .out
        .as_ref()
        .map(|b| quote!(pub fn out(s: &Sample, outs: &[Tensor]) -> Result<Vec<Tensor>> { #b }));
    let doc = format!(" `{}`", op.schema);
    quote! {
        #[doc = #doc]
        #[allow(non_snake_case)] // `op__softmax`: the `op_` prefix keeps `std` and the like free
        mod #m {
            use super::*;
            pub fn call(s: &Sample) -> Result<Vec<Tensor>> { #call }
            #method
            #inplace
            #out
            pub fn reference(s: &Sample) -> Vec<RefTensor> { #reference }
        }
    }
}

/// The op's `OpInfo` in `OPINFOS`: its adaptors in module `m`, its sample families, and the
/// data that picks its checks.
fn table_entry(op: &Op, info: &OpInfo, m: &syn::Ident, a: &Adaptors) -> TokenStream {
    let some_if = |present: bool, f: &str| {
        let f = format_ident!("{}", f);
        if present {
            quote!(Some(#m::#f))
        } else {
            quote!(None)
        }
    };
    let method = some_if(a.method.is_some(), "method");
    let inplace = some_if(a.inplace.is_some(), "inplace");
    let out = some_if(a.out.is_some(), "out");
    let samples = format_ident!("{}", info.samples);
    // `errors: false`: the errors check does not run, and no `_errors` set is needed.
    let errors = if info.errors {
        let e = format_ident!("{}_errors", info.samples);
        quote!(samples::#e)
    } else {
        quote!(no_error_samples)
    };
    let composite = matches!(op.kind, Kind::Composite { .. });
    let differentiable =
        op.derivative.is_some() || (composite && op.has_float_output() && info.gradcheck);
    let name = op.full_name();
    let rust = &op.rust;
    let dtypes = info.dtypes.iter().map(|d| d.variant());
    let cuda_dtypes = info.cuda_dtypes.iter().map(|d| d.variant());
    let (variants, gradcheck, errors_check) = (info.variants, info.gradcheck, info.errors);
    let policy = |p: Option<crate::model::CastPolicy>| match p {
        Some(p) => {
            let n = p.name();
            quote!(Some(#n))
        }
        None => quote!(None),
    };
    let (autocast_cpu, autocast_cuda) = (policy(op.autocast.cpu), policy(op.autocast.cuda));
    let declared = format!("native_functions.yaml:{}", op.line);
    let gradient = gradient_source(op);
    let args = op.args();
    let tensor_args = args
        .iter()
        .filter(|a| matches!(a.kind, ArgKind::Tensor | ArgKind::OptTensor))
        .map(|a| a.name.as_str());
    let list_args = args
        .iter()
        .filter(|a| a.kind == ArgKind::TensorList)
        .map(|a| a.name.as_str());
    let opt_list_args = args
        .iter()
        .filter(|a| a.kind == ArgKind::OptTensorList)
        .map(|a| a.name.as_str());
    let memory_format = op.memory_format.iter().map(String::as_str);
    quote! {
        OpInfo {
            name: #name,
            rust: #rust,
            declared: #declared,
            gradient: #gradient,
            tensor_args: &[#(#tensor_args),*],
            list_args: &[#(#list_args),*],
            opt_list_args: &[#(#opt_list_args),*],
            dtypes: &[#(DType::#dtypes),*],
            cuda_dtypes: &[#(DType::#cuda_dtypes),*],
            call: #m::call,
            method: #method,
            inplace: #inplace,
            out: #out,
            reference: #m::reference,
            samples: samples::#samples,
            error_samples: #errors,
            differentiable: #differentiable,
            variants: #variants,
            gradcheck: #gradcheck,
            errors: #errors_check,
            autocast_cpu: #autocast_cpu,
            autocast_cuda: #autocast_cuda,
            memory_format: &[#(#memory_format),*],
        }
    }
}

/// Where the op's gradient is defined, for gradcheck failures: its derivatives.yaml entry
/// and formulas, each with its line, or the Rust function whose ops autograd records.
fn gradient_source(op: &Op) -> String {
    match (&op.derivative, &op.kind) {
        (Some(d), _) => {
            let mut s = format!("{} (derivatives.yaml:{})", d.node, d.line);
            for f in &d.formulas {
                s.push_str(&format!(
                    "\n    {}: {}    (derivatives.yaml:{})",
                    f.input, f.text, f.line
                ));
            }
            s
        }
        (None, Kind::Composite { path }) => format!(
            "no derivatives.yaml entry: CompositeImplicitAutograd `{path}` (src/ops/) is differentiated through the ops it calls"
        ),
        (None, _) => "no derivatives.yaml entry".to_string(),
    }
}

/// One op's adaptor module and its `OPINFOS` entry; `None` for an op with `skip_opinfo`.
fn op_entry(op: &Op) -> Option<(TokenStream, TokenStream)> {
    let info = op.opinfo.as_ref()?;
    let mut slots = SampleSlots::default();
    let exprs: Vec<TokenStream> = op
        .args()
        .iter()
        .map(|a| sample_arg(a, &mut slots))
        .collect();
    let adaptors = adaptors(op, &exprs);
    let m = format_ident!("op_{}", op.rust);
    let module = adaptor_module(op, &m, &adaptors, reference_body(op, info, &exprs));
    Some((module, table_entry(op, info, &m, &adaptors)))
}

/// The whole generated OpInfo file, `include!`d by `tests/opinfo.rs`: an adaptor module per
/// op and the table `OPINFOS` the harness enumerates at run time.
pub fn generate(model: &Model) -> TokenStream {
    let (modules, entries): (Vec<_>, Vec<_>) = model.ops.iter().filter_map(op_entry).unzip();
    let count = model.ops.len();
    let names = model
        .ops
        .iter()
        .map(|o| o.schema.name.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    quote! {
        // @generated by kiln-codegen. Do not edit.
        /// Operators (schemas, overloads counted apart) declared in native_functions.yaml.
        pub const OPERATOR_COUNT: usize = #count;
        /// Distinct operator names (`add.Tensor` and `add.Scalar` count once).
        pub const OPERATOR_NAME_COUNT: usize = #names;
        /// The error samples of an op with `errors: false`, whose errors check does not run.
        #[allow(dead_code)] // unused while every op has error samples
        fn no_error_samples() -> Vec<ErrorSample> {
            Vec::new()
        }
        #(#modules)*
        /// Every op with an `opinfo:` entry, in native_functions.yaml order.
        pub static OPINFOS: &[OpInfo] = &[#(#entries),*];
    }
}
