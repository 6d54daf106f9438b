//! The public API of every op: functions, `Tensor` methods, in-place and `out=` variants,
//! the dtype dispatch around the kernel ([`compute`]), and the autograd recording.

mod compute;
mod sig;

use crate::model::{Arg, Kind, Op, Tag};
use crate::types::{ident, ArgKind};
use compute::compute_fn;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sig::{call_args, compute_params, rebind_tensors, ret_type, tensor_inputs};

/// Output tensors of a returned value `r` as a `Vec<&Tensor>` expression.
fn outputs_of(op: &Op, r: &TokenStream) -> TokenStream {
    match op.outputs().len() {
        1 => quote!([&#r]),
        n => {
            let items = (0..n).map(syn::Index::from).map(|i| quote!(&#r.#i));
            quote!([#(#items),*])
        }
    }
}

/// Public parameter list for `args`, with `with_defaults` false dropping defaulted args.
fn params(args: &[Arg], include_defaulted: bool, skip_self: bool) -> Vec<TokenStream> {
    args.iter()
        .filter(|a| include_defaulted || a.default.is_none())
        .filter(|a| !(skip_self && a.name == "self"))
        .map(|a| {
            let id = ident(&a.name);
            let ty = if a.dims {
                quote!(impl crate::IntoDims)
            } else {
                a.kind.param_type(a.default.is_none())
            };
            quote!(#id: #ty)
        })
        .collect()
}

/// Statements turning public parameters into normalised locals (`Into<Scalar>`, defaults).
fn normalise(args: &[Arg], include_defaulted: bool) -> Vec<TokenStream> {
    args.iter()
        .map(|a| {
            let id = ident(&a.name);
            let ty = a.kind.inner_type();
            if !include_defaulted && a.default.is_some() {
                let d = a
                    .kind
                    .default_expr(a.default.as_deref().unwrap_or_default())
                    .expect("model::build checked every default");
                return quote!(let #id: #ty = #d;);
            }
            if a.dims {
                // The size list is owned by a local the normalised slice borrows.
                let owned = format_ident!("{}_dims", a.name);
                return quote! {
                    let #owned: Vec<i64> = crate::IntoDims::into_dims(#id);
                    let #id: &[i64] = &#owned;
                };
            }
            match a.kind {
                ArgKind::Scalar => quote!(let #id: Scalar = #id.into();),
                ArgKind::OptIntList if a.default.is_none() => {
                    quote!(let #id: Option<&[i64]> = Some(#id);)
                }
                _ => quote!(),
            }
        })
        .collect()
}

/// `fn __<op>_record(...)`: builds the backward node and attaches it to the outputs.
fn record_fn(op: &Op) -> TokenStream {
    let Some(d) = &op.derivative else {
        return quote!();
    };
    let name = format_ident!("__{}_record", op.rust);
    let node = format_ident!("{}", d.node);
    let params = compute_params(op);
    let diff = op.differentiable_inputs();
    let any_requires = diff.iter().map(|a| {
        let id = ident(&a.name);
        match a.kind {
            ArgKind::Tensor => quote!(#id.requires_grad()),
            ArgKind::OptTensor => quote!(#id.is_some_and(|t| t.requires_grad())),
            _ => quote!(#id.iter().any(|t| t.requires_grad())),
        }
    });
    // The edges, in the order the node's formulas fill their slots (schema order): a
    // `vec![..]` up to the first list, which (and what follows it) extends it.
    let lead = diff
        .iter()
        .take_while(|a| a.kind != ArgKind::TensorList)
        .count();
    let first = diff[..lead].iter().map(|a| {
        let id = ident(&a.name);
        match a.kind {
            ArgKind::OptTensor => quote!(#id),
            _ => quote!(Some(#id)),
        }
    });
    let rest: Vec<TokenStream> = diff[lead..]
        .iter()
        .map(|a| {
            let id = ident(&a.name);
            match a.kind {
                ArgKind::Tensor => quote!(edges.push(Some(#id));),
                ArgKind::OptTensor => quote!(edges.push(#id);),
                _ => quote!(edges.extend(#id.iter().map(Some));),
            }
        })
        .collect();
    let edges = if rest.is_empty() {
        // An array: no allocation when recording the op.
        quote!(let edges = [#(#first),*];)
    } else {
        quote!(let mut edges: Vec<Option<&Tensor>> = vec![#(#first),*]; #(#rest)*)
    };
    let fs = super::nodes::fields(op);
    let inits = fs.iter().map(|f| {
        let (n, i) = (&f.name, &f.init);
        // Field init shorthand where the value is the local of the same name.
        if *n == i.to_string() {
            quote!(#n,)
        } else {
            quote!(#n: #i,)
        }
    });
    // Only a node saving its own output needs a handle to itself (`new_cyclic`).
    let make_node = if fs.iter().any(|f| f.self_ref) {
        quote! {
            let node = Arc::new_cyclic(|weak: &Weak<#node>| {
                let weak: Weak<dyn Node> = weak.clone();
                #node { base: NodeBase::new(&edges, outs), #(#inits)* }
            });
        }
    } else {
        quote!(let node: Arc<#node> = crate::arc_init::arc_new!(
            #node { base: NodeBase::default(), #(#inits)* },
            |n: &mut #node| n.base.record(&edges, outs)
        );)
    };
    let any_requires: Vec<TokenStream> = any_requires.collect();
    let requires = if any_requires.is_empty() {
        quote!(false)
    } else {
        quote!(#(#any_requires)||*)
    };
    quote! {
        #[allow(unused_variables, clippy::too_many_arguments)]
        fn #name(#(#params,)* outs: &[&Tensor], original_self: Option<&Tensor>, inplace: Option<autograd::InplaceTarget<'_>>) {
            // The flags first: they are plain loads, the grad mode a thread-local.
            if !(#requires) || !autograd::is_grad_enabled() {
                return;
            }
            #edges
            #make_node
            // The last output takes the node itself: one reference count fewer to touch.
            if let Some((last, rest)) = outs.split_last() {
                for (i, o) in rest.iter().enumerate() {
                    if o.is_floating_point() {
                        o.set_grad_fn(node.clone(), i);
                    }
                }
                if last.is_floating_point() {
                    last.set_grad_fn(node, rest.len());
                }
            }
        }
    }
}

fn doc_lines(op: &Op, variant: &str) -> TokenStream {
    let mut text = op
        .doc
        .clone()
        .unwrap_or_else(|| format!("PyTorch's `{}`.", op.schema.name));
    text.push_str(&format!("\n\n{variant}Schema: `{}`", op.schema));
    quote!(#[doc = #text])
}

/// Public functions, methods, in-place and out variants.
fn public(op: &Op) -> (TokenStream, TokenStream) {
    let args = op.args();
    let ret = ret_type(op);
    let compute = format_ident!("__{}_compute", op.rust);
    let record = format_ident!("__{}_record", op.rust);
    let pointwise = matches!(op.kind, Kind::Pointwise { .. });
    let composite = matches!(op.kind, Kind::Composite { .. });
    let has_record = op.derivative.is_some();
    let forms = op.forms();
    let a = call_args(&args);
    let dest_none = if pointwise { quote!(, None) } else { quote!() };
    let is_view = op.has_tag(Tag::View);
    // `call`: the op itself (compute, view marking, autograd recording), like torchgen's
    // `at::_ops::<op>::call`. Every functional form normalises its arguments and forwards here.
    let rec = if has_record {
        let outs = outputs_of(op, &quote!(result));
        quote!(#record(#(#a,)* &#outs, None, None);)
    } else {
        quote!()
    };
    let view = if is_view {
        quote!(result.mark_view_of(self_);)
    } else {
        quote!()
    };
    let call_params = compute_params(op);
    // A `-> ()` op (one that mutates its inputs) returns what its function returns.
    let body = if op.schema.returns.is_empty() {
        quote!(#compute(#(#a),* #dest_none))
    } else {
        quote! {
            let result = #compute(#(#a),* #dest_none)?;
            #view
            #rec
            Ok(result)
        }
    };
    let mut free = vec![quote! {
        /// The op with normalised arguments; every public form of it forwards here.
        pub(crate) fn call(#(#call_params),*) -> Result<#ret> {
            #body
        }
    }];
    // An op with an `autocast:` policy enters through its casts; in-place and `out=` forms
    // do not (PyTorch's lists name functional overloads only).
    let entry = if op.autocast.is_empty() {
        quote!(call)
    } else {
        free.push(autocast_fn(op));
        quote!(autocast_call)
    };
    let functional_body = |all: bool| {
        let norm = normalise(&args, all);
        quote! {
            #(#norm)*
            #entry(#(#a),*)
        }
    };
    let mut methods = Vec::new();
    for (fname, all) in &forms {
        let fid = format_ident!("{}", fname);
        let body = functional_body(*all);
        let doc = doc_lines(op, "");
        if op.variants.function {
            let ps = params(&args, *all, false);
            free.push(quote! {
                #doc
                pub fn #fid(#(#ps),*) -> Result<#ret> { #body }
            });
        }
        if op.variants.method {
            let ps = params(&args, *all, true);
            methods.push(quote! {
                #doc
                pub fn #fid(&self, #(#ps),*) -> Result<#ret> {
                    let self_ = self;
                    #body
                }
            });
        }
        if op.has_inplace() {
            methods.push(inplace_method(op, fname, *all));
        }
    }
    if op.variants.out && !composite {
        free.push(out_fn(op));
    }
    (quote!(#(#free)*), quote!(#(#methods)*))
}

/// `autocast_call`: inside an autocast region for the inputs' device type, casts the
/// arguments as the op's policy there says, then runs `call` with autocast suspended for that
/// device type (PyTorch excludes the autocast key while the op runs, so the ops it is made of
/// are not cast again).
fn autocast_fn(op: &Op) -> TokenStream {
    let args = op.args();
    let a = call_args(&args);
    let params = compute_params(op);
    let ret = ret_type(op);
    let op_lit = op.schema.name.as_str();
    let policy = |p: Option<crate::model::CastPolicy>| match p {
        Some(p) => {
            let v = format_ident!("{}", p.variant());
            quote!(Some(crate::amp::CastPolicy::#v))
        }
        None => quote!(None),
    };
    let (cpu, cuda) = (policy(op.autocast.cpu), policy(op.autocast.cuda));
    let inputs = tensor_inputs(&args);
    let casts = rebind_tensors(&args, &quote!(cast));
    // `fp32_set_opt_dtype`: the model checked there is a `dtype: Option<DType>`.
    let set_dtype = if [op.autocast.cpu, op.autocast.cuda]
        .contains(&Some(crate::model::CastPolicy::Fp32SetOptDtype))
    {
        quote!(let dtype = plan.opt_dtype(dtype);)
    } else {
        quote!()
    };
    quote! {
        /// `call` through the op's autocast policy (native_functions.yaml's `autocast:`).
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn autocast_call(#(#params),*) -> Result<#ret> {
            // Outside every region this is one thread-local load.
            if !crate::amp::autocast_armed() {
                return call(#(#a),*);
            }
            #inputs
            let Some(plan) = crate::amp::CastPlan::new(#op_lit, &inputs, #cpu, #cuda)? else {
                return call(#(#a),*);
            };
            let cast = |t: &Tensor| plan.cast(t);
            #(#casts)*
            #set_dtype
            let _suspended = plan.suspend();
            call(#(#a),*)
        }
    }
}

/// The in-place method `<form>_` (`add_`): checks `self` may be written, computes (into
/// `self` for a pointwise op), commits and records with `self` as the in-place target.
fn inplace_method(op: &Op, fname: &str, all: bool) -> TokenStream {
    let args = op.args();
    let a = call_args(&args);
    let compute = format_ident!("__{}_compute", op.rust);
    let record = format_ident!("__{}_record", op.rust);
    let pointwise = matches!(op.kind, Kind::Pointwise { .. });
    let has_record = op.derivative.is_some();
    let dest_none = if pointwise { quote!(, None) } else { quote!() };
    let iid = format_ident!("{}_", fname);
    let ps = params(&args, all, true);
    let norm = normalise(&args, all);
    let tensor_inputs: Vec<TokenStream> = args
        .iter()
        .filter(|x| x.kind == ArgKind::Tensor && x.name != "self")
        .map(|x| {
            let id = ident(&x.name);
            quote!(#id)
        })
        .collect();
    let needs_original = op
        .derivative
        .as_ref()
        .is_some_and(|d| d.formulas.iter().any(|f| f.uses.names.contains("self")));
    // `record` and `original` feed the autograd recording only: an op without a
    // derivative (bitwise_and_, ...) binds neither, so nothing is left unused.
    let original = if !has_record {
        quote!()
    } else if needs_original {
        quote!(let original = if record { Some(self.detached_copy()?) } else { None };)
    } else {
        quote!(let original: Option<Tensor> = None;)
    };
    let record_var = if has_record {
        quote!(record)
    } else {
        quote!(_)
    };
    let dest = if pointwise {
        quote!(, Some(self))
    } else {
        quote!()
    };
    let rec = if has_record {
        quote!(if record { #record(#(#a,)* &[self], original.as_ref(), Some(autograd::InplaceTarget { tensor: self, written: true })); })
    } else {
        quote!()
    };
    // On the view path `self` is overwritten after recording: a formula reading
    // `self` gets a copy of the original, and inputs sharing its storage are saved
    // without their history (see `SavedTensor::input_beside`).
    let rec_fresh = if has_record {
        let outs = outputs_of(op, &quote!(result));
        let orig = if needs_original {
            quote!(Some(&self.detached_copy()?))
        } else {
            quote!(None)
        };
        quote!(#record(#(#a,)* &#outs, #orig, Some(autograd::InplaceTarget { tensor: self, written: false }));)
    } else {
        quote!()
    };
    let op_lit = format!("{}_", op.schema.name);
    quote! {
        #[doc = "In-place version; returns `self`."]
        pub fn #iid(&self, #(#ps),*) -> Result<Tensor> {
            let self_ = self;
            #(#norm)*
            let #record_var = match launch::check_inplace(#op_lit, self, &[#(#tensor_inputs),*])? {
                launch::Inplace::ViewOf(base) => {
                    // A view in the graph: compute out of place, then write through.
                    let result = #compute(#(#a),* #dest_none)?;
                    #rec_fresh
                    launch::commit_view_inplace(#op_lit, self, &base, &result)?;
                    return Ok(self.clone());
                }
                launch::Inplace::Record => true,
                launch::Inplace::Untracked => false,
            };
            #original
            let result = #compute(#(#a),* #dest)?;
            launch::commit_inplace(#op_lit, self, &result)?;
            #rec
            Ok(self.clone())
        }
    }
}

/// `<op>_out`: computes without recording, then writes into the `out` tensors.
fn out_fn(op: &Op) -> TokenStream {
    let args = op.args();
    let a = call_args(&args);
    let ret = ret_type(op);
    let oid = format_ident!("{}_out", op.rust);
    let ps = params(&args, true, false);
    let outs: Vec<syn::Ident> = op
        .outputs()
        .iter()
        .map(|o| format_ident!("out_{}", o))
        .collect();
    let norm = normalise(&args, true);
    let op_lit = format!("{}_out", op.rust);
    let n = outs.len();
    let result_list = if n == 1 {
        quote!([&result])
    } else {
        let idx = (0..n).map(syn::Index::from);
        quote!([#(&result.#idx),*])
    };
    // An op that insists on one dtype also rejects an `out=` of another (PyTorch's
    // gather / scatter); others cast into `out` when the cast is safe.
    let commit = match &op.same_dtype_error {
        Some(m) => quote!(launch::commit_out_same_dtype(#op_lit, #m, o, r)?;),
        None => quote!(launch::commit_out(#op_lit, o, r)?;),
    };
    let ret_val = if n == 1 {
        let o = &outs[0];
        quote!(#o.clone())
    } else {
        quote!((#(#outs.clone()),*))
    };
    // A pointwise kernel writes `out` itself when it has the result's shape and dtype
    // (as the in-place form writes `self`); otherwise into fresh storage, copied below.
    // The grad check comes first: a refused `out` keeps its values.
    let (check, compute) = if n == 1 && matches!(op.kind, Kind::Pointwise { .. }) {
        let cid = format_ident!("__{}_compute", op.rust);
        let o = &outs[0];
        (
            quote!(launch::check_out(#op_lit, #o)?;),
            quote!(#cid(#(#a),*, Some(#o))?),
        )
    } else {
        (quote!(), quote!(call(#(#a),*)?))
    };
    quote! {
        #[doc = "`out=` version: writes the result into `out` (which must have the result's shape) and returns it."]
        pub fn #oid(#(#ps,)* #(#outs: &Tensor),*) -> Result<#ret> {
            #(#norm)*
            #check
            // `out=` forms are not differentiable: compute without recording a node.
            let result = {
                let _no_grad = crate::no_grad();
                #compute
            };
            for (o, r) in [#(#outs),*].into_iter().zip(#result_list) {
                #commit
            }
            Ok(#ret_val)
        }
    }
}

/// The whole generated `ops.rs`.
pub fn generate(model: &crate::model::Model) -> TokenStream {
    let mods = model.ops.iter().map(|op| {
        let m = format_ident!("op_{}", op.rust);
        let file = format!("/ops/{}.rs", op.rust);
        let doc = format!("`{}` (native_functions.yaml:{})", op.schema, op.line);
        // A method-only op (`unfold`) may define nothing outside its `impl Tensor` to
        // re-export, which leaves its `pub use` unused.
        let allow_unused = if op.variants.function {
            quote!()
        } else {
            quote!(#[allow(unused_imports)])
        };
        quote! {
            #[doc = #doc]
            #[allow(non_snake_case)] // `op__softmax` for `_softmax`
            mod #m {
                use super::*;
                include!(concat!(env!("OUT_DIR"), #file));
            }
            #allow_unused
            pub use #m::*;
        }
    });
    quote! {
        // @generated by kiln-codegen from native_functions.yaml and derivatives.yaml. Do not edit.
        // One module per operator (its file is `ops/<name>.rs` beside this one).
        #(#mods)*
    }
}

/// The file of one op: its public functions and `Tensor` methods, dispatch, autograd
/// recording and backward node.
pub fn op_file(op: &Op) -> TokenStream {
    let mut methods = Vec::new();
    let items = op_items(op, &mut methods);
    let node = super::nodes::node(op);
    quote! {
        impl Tensor {
            #(#methods)*
        }
        #items
        #node
    }
}

/// Everything generated for one op; its methods go into `methods`.
pub fn op_items(op: &Op, methods: &mut Vec<TokenStream>) -> TokenStream {
    let compute = compute_fn(op);
    let record = record_fn(op);
    let (free, meths) = public(op);
    methods.push(meths);
    quote! {
        #free
        #compute
        #record
    }
}
