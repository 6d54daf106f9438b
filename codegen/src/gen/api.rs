//! The public API of every op: functions, `Tensor` methods, in-place and `out=` variants,
//! the dtype dispatch around the kernel, and the autograd recording.

use super::dtype_variant;
use crate::model::{Arg, Kind, Op, Promote, OPMATH};
use crate::types::{ident, ArgKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

fn op_name_lit(op: &Op) -> String {
    op.schema.name.clone()
}

/// The return type of the op's functions.
fn ret_type(op: &Op) -> TokenStream {
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
fn ret_from_vec(op: &Op, v: &syn::Ident) -> TokenStream {
    match op.outputs().len() {
        1 => quote!(#v[0].clone()),
        n => {
            let items = (0..n).map(|i| quote!(#v[#i].clone()));
            quote!((#(#items),*))
        }
    }
}

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

fn call_args(args: &[Arg]) -> Vec<TokenStream> {
    args.iter()
        .map(|a| {
            let id = ident(&a.name);
            quote!(#id)
        })
        .collect()
}

fn has_defaults(op: &Op) -> bool {
    op.args().iter().any(|a| a.default.is_some())
}

/// The promotion expression giving `compute: DType`.
fn promote_expr(op: &Op) -> TokenStream {
    let args = op.args();
    let mut pushes = Vec::new();
    for name in &op.operands {
        let Some(a) = args.iter().find(|a| &a.name == name) else {
            continue;
        };
        let id = ident(&a.name);
        pushes.push(match a.kind {
            ArgKind::Tensor => quote!(operands.push(Operand::Tensor(#id));),
            ArgKind::OptTensor => {
                quote!(if let Some(t) = #id { operands.push(Operand::Tensor(t)); })
            }
            ArgKind::TensorList => quote!(operands.extend(#id.iter().map(Operand::Tensor));),
            ArgKind::Scalar => quote!(operands.push(Operand::Scalar(#id));),
            ArgKind::OptScalar => {
                quote!(if let Some(s) = #id { operands.push(Operand::Scalar(s)); })
            }
            _ => quote!(),
        });
    }
    let collect = quote! {
        let mut operands: Vec<Operand<'_>> = Vec::new();
        #(#pushes)*
    };
    // Plain operands (tensors, scalars) make a `vec![..]`; optional ones and lists follow.
    let simple: Vec<TokenStream> = op
        .operands
        .iter()
        .filter_map(|name| args.iter().find(|a| &a.name == name))
        .filter_map(|a| {
            let id = ident(&a.name);
            match a.kind {
                ArgKind::Tensor => Some(quote!(Operand::Tensor(#id))),
                ArgKind::Scalar => Some(quote!(Operand::Scalar(#id))),
                _ => None,
            }
        })
        .collect();
    let all_simple = op.operands.iter().all(|name| {
        args.iter()
            .find(|a| &a.name == name)
            .is_none_or(|a| matches!(a.kind, ArgKind::Tensor | ArgKind::Scalar))
    });
    let n_simple = simple.len();
    let collect = if all_simple {
        // An array: no allocation on the per-op path.
        quote!(let operands: [Operand<'_>; #n_simple] = [#(#simple),*];)
    } else {
        collect
    };
    match &op.promote {
        Promote::Default | Promote::Comparison => {
            quote!({ #collect launch::result_type(&operands) })
        }
        Promote::IntToFloat => {
            quote!({ #collect launch::int_to_float(launch::result_type(&operands)) })
        }
        Promote::BoolToLong => {
            quote!({ #collect launch::bool_to_long(launch::result_type(&operands)) })
        }
        Promote::Same => {
            let msg = match &op.same_dtype_error {
                Some(m) => quote!(Some(#m)),
                None => quote!(None),
            };
            quote!({ #collect launch::same_dtype(OP, #msg, &operands)? })
        }
        Promote::SelfType => quote!(self_.dtype()),
        Promote::Sum => quote!(launch::sum_dtype(self_.dtype(), dtype)),
        Promote::Arg(name) => {
            let id = ident(name);
            let a = args.iter().find(|a| &a.name == name);
            match a.map(|a| a.kind) {
                Some(ArgKind::OptScalarType) => quote!(#id.unwrap_or(self_.dtype())),
                _ => quote!(#id),
            }
        }
    }
}

/// The CPU dtype dispatch: one `match` arm per dtype the kernel supports, each binding `T` to
/// the element type and running `body`; any other dtype is PyTorch's "not implemented" error.
fn dtype_match(op: &Op, body: TokenStream) -> TokenStream {
    dtype_match_each(op, |_| body.clone())
}

/// As [`dtype_match`] with a body per dtype (`d` its short name).
fn dtype_match_each(op: &Op, body_for: impl Fn(&str) -> TokenStream) -> TokenStream {
    let arms = op.dtypes.iter().map(|d| {
        let v = dtype_variant(d);
        let t = elem_type(d);
        let body = body_for(d);
        quote! {
            DType::#v => {
                type T = #t;
                #body
            }
        }
    });
    quote! {
        match compute {
            #(#arms)*
            #[allow(unreachable_patterns)]
            other => return Err(launch::not_implemented(OP, other)),
        }
    }
}

fn cuda_dtype_list(op: &Op) -> Vec<syn::Ident> {
    op.cuda_dtypes.iter().map(|d| dtype_variant(d)).collect()
}

/// A non-tensor argument as passed to a kernel, meta or check function: a value of
/// [`ArgKind::kernel_type`], which `contract` checks kernel signatures against.
fn kernel_value(a: &Arg) -> TokenStream {
    let id = ident(&a.name);
    match a.kind {
        ArgKind::Scalar => quote!(#id.to_f64()),
        ArgKind::OptScalar => quote!(#id.map(|s| s.to_f64())),
        _ => quote!(#id),
    }
}

fn compute_params(op: &Op) -> Vec<TokenStream> {
    op.args()
        .iter()
        .map(|a| {
            let id = ident(&a.name);
            let ty = a.kind.inner_type();
            quote!(#id: #ty)
        })
        .collect()
}

/// `fn __<op>_compute(...)`: checks, meta, dispatch, kernel. No autograd.
fn compute_fn(op: &Op) -> TokenStream {
    let name = format_ident!("__{}_compute", op.rust);
    let op_lit = op_name_lit(op);
    let params = compute_params(op);
    let ret = ret_type(op);
    let args = op.args();
    match &op.kind {
        Kind::Explicit { path } | Kind::Composite { path } => {
            let path: syn::Path = syn::parse_str(&format!("crate::ops::{path}"))
                .expect("model::build checked the path is <module>::<fn>");
            let a = call_args(&args);
            if !op.opmath {
                return quote! {
                    fn #name(#(#params),*) -> Result<#ret> {
                        #path(#(#a),*)
                    }
                };
            }
            // opmath: f16/bf16 tensors go in as float32; floating outputs come back narrowed.
            let tensors: Vec<TokenStream> = args
                .iter()
                .filter(|x| x.kind.is_tensor())
                .map(|x| {
                    let id = ident(&x.name);
                    match x.kind {
                        ArgKind::Tensor => quote!(.chain(std::iter::once(#id))),
                        ArgKind::OptTensor => quote!(.chain(#id)),
                        ArgKind::OptTensorList => quote!(.chain(#id.iter().flatten().copied())),
                        _ => quote!(.chain(#id.iter())),
                    }
                })
                .collect();
            let widen = args.iter().filter(|x| x.kind.is_tensor()).map(|x| {
                let id = ident(&x.name);
                match x.kind {
                    ArgKind::Tensor => quote!(let #id = &launch::Opmath::widen(#id)?;),
                    ArgKind::OptTensor => quote! {
                        let #id = #id.map(launch::Opmath::widen).transpose()?;
                        let #id = #id.as_ref();
                    },
                    ArgKind::OptTensorList => quote! {
                        let #id = #id.iter().map(|t| t.map(launch::Opmath::widen).transpose()).collect::<Result<Vec<Option<Tensor>>>>()?;
                        let #id = &#id.iter().map(Option::as_ref).collect::<Vec<Option<&Tensor>>>();
                        let #id = #id.as_slice();
                    },
                    _ => quote! {
                        let #id = &#id.iter().map(launch::Opmath::widen).collect::<Result<Vec<Tensor>>>()?;
                        let #id = #id.as_slice();
                    },
                }
            });
            quote! {
                fn #name(#(#params),*) -> Result<#ret> {
                    let inputs: Vec<&Tensor> = std::iter::empty() #(#tensors)* .collect();
                    let half: Option<DType> = launch::Opmath::common_half(&inputs);
                    let Some(half) = half else {
                        return #path(#(#a),*);
                    };
                    #(#widen)*
                    launch::Opmath::narrow(#path(#(#a),*)?, half)
                }
            }
        }
        Kind::Pointwise {
            module,
            kernel,
            check,
        } => {
            let module = format_ident!("{}", module);
            let kernel = format_ident!("{}", kernel);
            let promote = promote_expr(op);
            let tensors: Vec<&Arg> = args.iter().filter(|a| a.kind == ArgKind::Tensor).collect();
            let tnames: Vec<syn::Ident> = tensors.iter().map(|a| ident(&a.name)).collect();
            let out_dtype = if op.promote == Promote::Comparison {
                quote!(DType::Bool)
            } else {
                quote!(compute)
            };
            // PyTorch's alpha_check: a float alpha cannot scale integer tensors. An op that
            // computes only in floating dtypes rejects integer tensors by dtype instead.
            let integral_kernel = op
                .dtypes
                .iter()
                .any(|d| !matches!(d.as_str(), "f16" | "bf16" | "f32" | "f64"));
            let alpha_check = if integral_kernel
                && args
                    .iter()
                    .any(|a| a.name == "alpha" && a.kind == ArgKind::Scalar)
            {
                quote!(launch::check_alpha(OP, compute, alpha)?;)
            } else {
                quote!()
            };
            let check = if *check {
                let f = format_ident!("{}_check", kernel);
                let vals = args
                    .iter()
                    .filter(|a| !a.kind.is_tensor())
                    .map(kernel_value);
                quote!(kiln_kernels::cpu::#module::#f(compute, #(#vals),*).map_err(|m| Error::op(OP, m))?;)
            } else {
                quote!()
            };
            // Bounds saturate at an integer compute dtype's range instead of wrapping.
            let saturate = args
                .iter()
                .filter(|a| op.saturate.contains(&a.name))
                .map(|a| {
                    let id = ident(&a.name);
                    if a.kind == ArgKind::OptScalar {
                        quote!(let #id = #id.map(|s| s.saturate(compute));)
                    } else {
                        quote!(let #id = #id.saturate(compute);)
                    }
                });
            // Each tensor operand: cast to the compute dtype (or check a fixed dtype), broadcast.
            let prep = tensors.iter().map(|a| {
                let id = ident(&a.name);
                let n = &a.name;
                match op.fixed.get(&a.name) {
                    Some(d) => {
                        let v = dtype_variant(d);
                        quote!(let #id = launch::fixed_operand(OP, #n, #id, DType::#v, &shape, device)?;)
                    }
                    None => quote!(let #id = launch::operand(#id, compute, &shape, device)?;),
                }
            });
            let elem_ty = |a: &Arg| -> TokenStream {
                match op.fixed.get(&a.name) {
                    Some(d) => {
                        let t = elem_type(d);
                        quote!(#t)
                    }
                    None => quote!(T),
                }
            };
            let in_tys: Vec<TokenStream> = tensors.iter().map(|a| elem_ty(a)).collect();
            let out_ty = if op.promote == Promote::Comparison {
                quote!(bool)
            } else {
                quote!(T)
            };
            // Scalar arguments become compute-type constants captured by the closure.
            let consts = args.iter().filter(|a| !a.kind.is_tensor()).map(|a| {
                let id = ident(&a.name);
                match a.kind {
                    ArgKind::Scalar => quote!(let #id = #id.to::<<T as Element>::Compute>();),
                    ArgKind::OptScalar => quote!(let #id = #id.map(|s| s.to::<<T as Element>::Compute>());),
                    ArgKind::Float => quote!(let #id = <<T as Element>::Compute as kiln_kernels::Arith>::from_f64(#id);),
                    _ => quote!(),
                }
            });
            let kargs = args.iter().map(|a| {
                let id = ident(&a.name);
                if a.kind == ArgKind::Tensor && !op.fixed.contains_key(&a.name) {
                    quote!(#id.up())
                } else {
                    quote!(#id)
                }
            });
            let body = if op.promote == Promote::Comparison {
                quote!(kiln_kernels::cpu::#module::#kernel(#(#kargs),*))
            } else {
                quote!(T::down(kiln_kernels::cpu::#module::#kernel(#(#kargs),*)))
            };
            // When the result has the first operand's type, `map*_same` lets an in-place op
            // update `self` in one pass instead of copying it first.
            let first_is_t = tensors
                .first()
                .is_some_and(|a| !op.fixed.contains_key(&a.name));
            let same = op.promote != Promote::Comparison && first_is_t && tensors.len() <= 2;
            let map = if same {
                format_ident!("map{}_same", tensors.len())
            } else {
                format_ident!("map{}", tensors.len())
            };
            let generics = if same {
                let rest = &in_tys[1..];
                quote!(<T #(, #rest)*>)
            } else {
                quote!(<#(#in_tys,)* #out_ty>)
            };
            let consts: Vec<TokenStream> = consts.collect();
            let scalar = quote! {
                #(#consts)*
                launch::#map::#generics(#(&#tnames,)* &out, move |#(#tnames),*| #body)?;
            };
            // `vectorized:` dtypes call the slice kernel on whole chunks instead (model.rs has
            // checked that the op is unary and keeps its dtype, so `tnames` is `[self_]`).
            let vectorized = |d: &str| -> Option<TokenStream> {
                let v = op.vectorized.as_ref()?;
                let elem = v.elem_for(d)?;
                let vmod = format_ident!("{}", v.module);
                let kname = format_ident!("{}", v.name(elem));
                let ety = format_ident!("{}", elem);
                let vals: Vec<syn::Ident> = args
                    .iter()
                    .filter(|a| !a.kind.is_tensor())
                    .map(|a| ident(&a.name))
                    .collect();
                let map = quote! {
                    &|a: &[#ety], o: &mut [#ety]| kiln_kernels::cpu::#vmod::#kname(a, o #(, #vals)*)
                };
                if elem != d {
                    return Some(quote! {
                        #(#consts)*
                        launch::map1_slice_f32::<T>(#(&#tnames,)* &out, #map)?;
                    });
                }
                let inplace = match v.inplace_name(elem) {
                    Some(name) => {
                        let iname = format_ident!("{}", name);
                        quote!(Some(&|x: &mut [#ety]| kiln_kernels::cpu::#vmod::#iname(x #(, #vals)*)))
                    }
                    None => quote!(None),
                };
                Some(quote! {
                    #(#consts)*
                    launch::map1_slice::<T>(#(&#tnames,)* &out, #map, #inplace)?;
                })
            };
            let dispatch =
                dtype_match_each(op, |d| vectorized(d).unwrap_or_else(|| scalar.clone()));
            let cuda = match &op.cuda {
                Some((_, func)) => {
                    let cuda_dts = cuda_dtype_list(op);
                    let module = format!("pointwise_{}", op.rust);
                    let kernel = op.rust.clone();
                    let _ = func;
                    let cargs = args.iter().filter(|a| !a.kind.is_tensor()).map(|a| {
                        let id = ident(&a.name);
                        match a.kind {
                            ArgKind::Scalar => quote!(crate::cuda::ops::Arg::Scalar(#id)),
                            ArgKind::OptScalar => quote!(crate::cuda::ops::Arg::OptScalar(#id)),
                            ArgKind::Float => {
                                quote!(crate::cuda::ops::Arg::Scalar(Scalar::Float(#id)))
                            }
                            _ => quote!(crate::cuda::ops::Arg::Str(#id)),
                        }
                    });
                    quote! {
                        #[cfg(feature = "cuda")]
                        if device.is_cuda() {
                            launch::check_dtype(OP, "cuda", compute, &[#(DType::#cuda_dts),*])?;
                            crate::cuda::ops::pointwise(OP, #module, #kernel, compute, &[#(&#tnames),*], &[#(#cargs),*], &out)?;
                            return Ok(out);
                        }
                    }
                }
                None => quote!(),
            };
            quote! {
                fn #name(#(#params,)* dest: Option<&Tensor>) -> Result<#ret> {
                    const OP: &str = #op_lit;
                    let compute: DType = #promote;
                    #check
                    #alpha_check
                    #(#saturate)*
                    // One array for the three calls: separate ones were built with two
                    // pointer stores each and copied with one wide load (a
                    // store-forwarding stall on every op).
                    let tensors = [#(#tnames),*];
                    let device = launch::pointwise_device(OP, &tensors, dest)?;
                    let shape = launch::broadcast_shapes(OP, &tensors)?;
                    let out = launch::output(OP, dest, &shape, #out_dtype, device, &tensors)?;
                    #(#prep)*
                    #cuda
                    #dispatch
                    Ok(out)
                }
            }
        }
        Kind::Structured { module, kernel } => {
            let module = format_ident!("{}", module);
            let kernel_id = format_ident!("{}", kernel);
            let meta = format_ident!("{}_meta", kernel);
            let promote = promote_expr(op);
            let mut prep = Vec::new();
            // `inputs: Vec<Tensor>` in argument order: `(extends, expression)`, where a list
            // or an optional tensor extends it by an iterator.
            let mut inputs: Vec<(bool, TokenStream)> = Vec::new();
            let mut meta_args = Vec::new();
            let mut src_args = Vec::new();
            for a in &args {
                let id = ident(&a.name);
                let n = &a.name;
                match a.kind {
                    ArgKind::Tensor | ArgKind::OptTensor => {
                        // Cast to the compute dtype, or to the opmath dtype, or check a
                        // fixed dtype; the kernel sees the matching element type.
                        let fixed = op.fixed.get(&a.name).map(String::as_str);
                        let prepare = |x: TokenStream| match fixed {
                            Some(d) if d == OPMATH => {
                                quote!(launch::cast(#x, launch::opmath_dtype(compute)))
                            }
                            Some(d) => {
                                let v = dtype_variant(d);
                                quote!(launch::fixed_input(OP, #n, #x, DType::#v))
                            }
                            None => quote!(launch::cast(#x, compute)),
                        };
                        let t = fixed.map_or(quote!(T), fixed_elem);
                        if a.kind == ArgKind::Tensor {
                            let conv = prepare(quote!(#id));
                            prep.push(quote!(let #id: Tensor = #conv?;));
                            src_args.push(quote!({
                                let i = next();
                                launch::src::<#t>(bufs[i], &inputs[i])
                            }));
                            inputs.push((false, quote!(#id.clone())));
                            meta_args.push(quote!(#id.shape()));
                        } else {
                            // An absent tensor takes no place in `inputs`.
                            let conv = prepare(quote!(t));
                            prep.push(
                                quote!(let #id: Option<Tensor> = #id.map(|t| #conv).transpose()?;),
                            );
                            src_args.push(quote!(#id.as_ref().map(|_| {
                                let i = next();
                                launch::src::<#t>(bufs[i], &inputs[i])
                            })));
                            inputs.push((true, quote!(#id.iter().cloned())));
                            meta_args.push(quote!(#id.as_ref().map(|t| t.shape())));
                        }
                    }
                    ArgKind::TensorList => {
                        prep.push(quote!(let #id: Vec<Tensor> = #id.iter().map(|t| launch::cast(t, compute)).collect::<Result<_>>()?;));
                        inputs.push((true, quote!(#id.iter().cloned())));
                        meta_args.push(quote!(&#id.iter().map(|t| t.shape()).collect::<Vec<_>>()));
                        src_args.push(quote!(&(0..#id.len()).map(|_| { let i = next(); launch::src::<T>(bufs[i], &inputs[i]) }).collect::<Vec<_>>()));
                    }
                    ArgKind::OptTensorList => {
                        unreachable!(
                            "model::build rejects lists of optional tensors in structured kernels"
                        )
                    }
                    _ => {
                        let v = kernel_value(a);
                        meta_args.push(v.clone());
                        src_args.push(v);
                    }
                }
            }
            let outs = op.outputs();
            // `tags: [overwrites]`: the kernel writes every element of its outputs, so they
            // need not start zeroed (a reused cached buffer is handed over as it is).
            let alloc = if op.tags.iter().any(|t| t == "overwrites") {
                quote!(alloc_empty_on)
            } else {
                quote!(alloc_on)
            };
            let out_allocs = (0..outs.len()).map(|i| match op.output_fixed_dtype(i) {
                Some(d) => {
                    let dt = fixed_dtype_expr(&d);
                    quote!(Tensor::#alloc(OP, &shapes[#i], #dt, device)?)
                }
                None => quote!(Tensor::#alloc(OP, &shapes[#i], compute, device)?),
            });
            // Every tensor operand, for the device check.
            let dev_plain: Vec<TokenStream> = args
                .iter()
                .filter(|a| a.kind == ArgKind::Tensor)
                .map(|a| {
                    let id = ident(&a.name);
                    quote!(#id)
                })
                .collect();
            let dev_extra: Vec<TokenStream> = args
                .iter()
                .filter(|a| matches!(a.kind, ArgKind::TensorList | ArgKind::OptTensor))
                .map(|a| {
                    let id = ident(&a.name);
                    match a.kind {
                        ArgKind::TensorList => quote!(devs.extend(#id.iter());),
                        _ => quote!(devs.extend(#id);),
                    }
                })
                .collect();
            let devs = if dev_extra.is_empty() {
                quote!(let devs: Vec<&Tensor> = vec![#(#dev_plain),*];)
            } else {
                quote!(let mut devs: Vec<&Tensor> = vec![#(#dev_plain),*]; #(#dev_extra)*)
            };
            // The leading plain tensors make a `vec![..]`; a list (or what follows it) extends.
            let lead = inputs.iter().take_while(|(list, _)| !list).count();
            let first: Vec<&TokenStream> = inputs[..lead].iter().map(|(_, e)| e).collect();
            let rest: Vec<TokenStream> = inputs[lead..]
                .iter()
                .map(|(list, e)| {
                    if *list {
                        quote!(inputs.extend(#e);)
                    } else {
                        quote!(inputs.push(#e);)
                    }
                })
                .collect();
            let inputs = if rest.is_empty() {
                quote!(let inputs: Vec<Tensor> = vec![#(#first),*];)
            } else {
                quote!(let mut inputs: Vec<Tensor> = vec![#(#first),*]; #(#rest)*)
            };
            let cuda = match &op.cuda {
                Some((cmod, cfn)) => {
                    let cmod = format_ident!("{}", cmod);
                    let cfn = format_ident!("{}", cfn);
                    let cuda_dts = cuda_dtype_list(op);
                    let cargs = args.iter().map(|a| {
                        let id = ident(&a.name);
                        match a.kind {
                            ArgKind::Tensor | ArgKind::TensorList => quote!(&#id),
                            ArgKind::OptTensor => quote!(#id.as_ref()),
                            _ => kernel_value(a),
                        }
                    });
                    let couts = (0..outs.len()).map(|i| quote!(&outs[#i]));
                    let ret_val = ret_from_vec(op, &format_ident!("outs"));
                    quote! {
                        #[cfg(feature = "cuda")]
                        if device.is_cuda() {
                            launch::check_dtype(OP, "cuda", compute, &[#(DType::#cuda_dts),*])?;
                            crate::cuda::ops::#cmod::#cfn(OP, #(#cargs,)* #(#couts),*)?;
                            return Ok(#ret_val);
                        }
                    }
                }
                None => quote!(),
            };
            let dst_args = (0..outs.len()).map(|i| {
                let t = match op.output_fixed_dtype(i) {
                    Some(d) => fixed_elem(&d),
                    None => quote!(T),
                };
                quote!(launch::dst::<#t>(obufs.next().expect("one buffer per output"), &outs[#i]))
            });
            let dispatch = dtype_match(
                op,
                quote! {
                    launch::run(&inputs, &outs, |bufs, obufs| {
                        let mut k = 0usize;
                        let mut next = || { k += 1; k - 1 };
                        let mut obufs = obufs.into_iter();
                        kiln_kernels::cpu::#module::#kernel_id::<T>(#(#src_args,)* #(#dst_args),*)
                    }).map_err(|m| Error::op(OP, m))?;
                },
            );
            let ret = ret_from_vec(op, &format_ident!("outs"));
            let n_out = outs.len();
            let ret_ty = ret_type(op);
            quote! {
                fn #name(#(#params),*) -> Result<#ret_ty> {
                    const OP: &str = #op_lit;
                    let compute: DType = #promote;
                    let device = {
                        #devs
                        launch::device_of(OP, &devs)?
                    };
                    #(#prep)*
                    let shapes = kiln_kernels::cpu::#module::#meta(#(#meta_args),*).map_err(|m| Error::op(OP, m))?;
                    let outs: [Tensor; #n_out] = [#(#out_allocs),*];
                    #cuda
                    #inputs
                    #dispatch
                    Ok(#ret)
                }
            }
        }
    }
}

/// The element type a kernel sees for a `fixed:` dtype: its Rust type, or for `opmath` the
/// compute type of `T` (`f32` for the 16-bit floats, `T` otherwise).
pub fn fixed_elem(d: &str) -> TokenStream {
    if d == OPMATH {
        quote!(<T as Element>::Compute)
    } else {
        elem_type(d)
    }
}

/// The `DType` of a `fixed:` dtype, given `compute: DType` in scope.
fn fixed_dtype_expr(d: &str) -> TokenStream {
    if d == OPMATH {
        quote!(launch::opmath_dtype(compute))
    } else {
        let v = dtype_variant(d);
        quote!(DType::#v)
    }
}

/// The Rust element type for a short dtype name.
pub fn elem_type(d: &str) -> TokenStream {
    match d {
        "f16" => quote!(half::f16),
        "bf16" => quote!(half::bf16),
        other => {
            let id = format_ident!("{}", other);
            quote!(#id)
        }
    }
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
    let forms: Vec<(String, bool)> = if has_defaults(op) {
        vec![
            (op.rust.clone(), false),
            (format!("{}_with", op.rust), true),
        ]
    } else {
        vec![(op.rust.clone(), true)]
    };
    let a = call_args(&args);
    let dest_none = if pointwise { quote!(, None) } else { quote!() };
    let is_view = op.tags.iter().any(|t| t == "view");
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
    let mut free = vec![quote! {
        /// The op with normalised arguments; every public form of it forwards here.
        pub(crate) fn call(#(#call_params),*) -> Result<#ret> {
            let result = #compute(#(#a),* #dest_none)?;
            #view
            #rec
            Ok(result)
        }
    }];
    let functional_body = |all: bool| {
        let norm = normalise(&args, all);
        quote! {
            #(#norm)*
            call(#(#a),*)
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
        if op.variants.inplace && !composite {
            let iid = format_ident!("{}_", fname);
            let ps = params(&args, *all, true);
            let norm = normalise(&args, *all);
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
            methods.push(quote! {
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
            });
        }
    }
    if op.variants.out && !composite {
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
        free.push(quote! {
            #[doc = "`out=` version: writes the result into `out` (which must have the result's shape) and returns it."]
            pub fn #oid(#(#ps,)* #(#outs: &Tensor),*) -> Result<#ret> {
                #(#norm)*
                // `out=` forms are not differentiable: compute without recording a node.
                let result = {
                    let _no_grad = crate::no_grad();
                    call(#(#a),*)?
                };
                for (o, r) in [#(#outs),*].into_iter().zip(#result_list) {
                    #commit
                }
                Ok(#ret_val)
            }
        });
    }
    (quote!(#(#free)*), quote!(#(#methods)*))
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
