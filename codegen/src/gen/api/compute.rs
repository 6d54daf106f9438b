//! `fn __<op>_compute(...)`: checks, promotion, output allocation, then one branch per
//! backend of the op's table ([`backend_branch`]). A function per op kind.

use super::sig::{
    call_args, compute_params, op_name_lit, rebind_tensors, ret_from_vec, ret_type, tensor_inputs,
};
use crate::model::{Arg, BackendKey, DType, Fixed, Kind, Op, Promote, Tag};
use crate::paths::{CUDA_KERNELS_RUST, CUDA_OPS_RUST, RUST_OPS_RUST};
use crate::types::{ident, ArgKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

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
/// the element type and running the body `body_for` gives for that dtype; any other dtype is
/// PyTorch's "not implemented" error.
fn dtype_match(op: &Op, body_for: impl Fn(DType) -> TokenStream) -> TokenStream {
    let arms = op.cpu().dtypes.iter().map(|&d| {
        let v = d.variant();
        let t = d.rust_type();
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

/// The `DType` of a `fixed:` dtype, given `compute: DType` in scope.
fn fixed_dtype_expr(d: Fixed) -> TokenStream {
    match d {
        Fixed::Opmath => quote!(launch::opmath_dtype(compute)),
        Fixed::DType(d) => {
            let v = d.variant();
            quote!(DType::#v)
        }
    }
}

/// A path under one of the crate's modules that `paths` names: `crate::cuda::ops::Arg`.
fn crate_path(base: &str, rest: &str) -> syn::Path {
    syn::parse_str(&format!("{base}::{rest}")).expect("paths are Rust paths")
}

/// `fn __<op>_compute(...)`: checks, meta, dispatch, kernel. No autograd.
pub(super) fn compute_fn(op: &Op) -> TokenStream {
    match &op.kind {
        Kind::Explicit { path } | Kind::Composite { path } => composite_compute(op, path),
        Kind::Pointwise { check } => pointwise_compute(op, *check),
        Kind::Structured { .. } => structured_compute(op),
    }
}

/// What the compute function returns once its outputs are allocated: `out` for a pointwise
/// op, the `outs` array's tensors for a structured one.
fn outputs_value(op: &Op) -> TokenStream {
    match op.kind {
        Kind::Pointwise { .. } => quote!(out),
        _ => ret_from_vec(op, &format_ident!("outs")),
    }
}

/// The branch of backend `key` in the compute function of a pointwise or structured op,
/// emitted after the outputs are allocated: `Meta` returns them (nothing runs), `Cuda`
/// checks the dtype and launches, `Cpu` is the fallthrough dtype `match` around the kernel.
fn backend_branch(op: &Op, key: BackendKey) -> TokenStream {
    if op.backend(key).is_none() {
        return quote!();
    }
    match key {
        BackendKey::Meta => {
            // The CPU's dtype checks, so meta fails exactly where the CPU does.
            let dtypes = op.cpu().dtypes.iter().map(|d| d.variant());
            let ret = outputs_value(op);
            let (operands, kernel) = meta_checks(op);
            quote! {
                if device.is_meta() {
                    #operands
                    if !matches!(compute, #(DType::#dtypes)|*) {
                        return Err(launch::not_implemented(OP, compute));
                    }
                    #kernel
                    return Ok(#ret);
                }
            }
        }
        BackendKey::Cuda => {
            let dtypes = op
                .backend(key)
                .map(|b| b.dtypes.iter().map(|d| d.variant()).collect::<Vec<_>>())
                .unwrap_or_default();
            let launch = match op.kind {
                Kind::Pointwise { .. } => pointwise_cuda_launch(op),
                _ => structured_cuda_launch(op),
            };
            let ret = outputs_value(op);
            quote! {
                #[cfg(feature = "cuda")]
                if device.is_cuda() {
                    launch::check_dtype(OP, "cuda", compute, &[#(DType::#dtypes),*])?;
                    #launch
                    return Ok(#ret);
                }
            }
        }
        BackendKey::Cpu => match op.kind {
            Kind::Pointwise { .. } => pointwise_cpu_dispatch(op),
            _ => structured_cpu_dispatch(op),
        },
    }
}

/// What the CPU checks after the outputs are allocated, checked by the meta branch too, in
/// the CPU's order around its dtype `match`: before it, a pointwise op's fixed-dtype
/// operands (the CPU's `fixed_operand`); after it, a structured kernel's `<kernel>_check`
/// (the dtype checks the CPU kernel makes first thing).
fn meta_checks(op: &Op) -> (TokenStream, TokenStream) {
    match op.kind {
        Kind::Pointwise { .. } => {
            let fixed = op.args().into_iter().filter_map(|a| {
                let d = op.fixed.get(&a.name)?;
                let (id, n, v) = (ident(&a.name), &a.name, fixed_dtype_variant(*d));
                (a.kind == ArgKind::Tensor)
                    .then(|| quote!(launch::fixed_input(OP, #n, #id, DType::#v)?;))
            });
            (quote!(#(#fixed)*), quote!())
        }
        Kind::Structured { check: true } => {
            let kernel = &op.cpu().kernel;
            let module = format_ident!("{}", kernel.module);
            let f = format_ident!("{}_check", kernel.name);
            let vals = op
                .args()
                .into_iter()
                .filter(|a| !a.kind.is_tensor())
                .map(|a| kernel_value(&a))
                .collect::<Vec<_>>();
            (
                quote!(),
                quote!(kiln_kernels::cpu::#module::#f(compute, #(#vals),*).map_err(|m| Error::op(OP, m))?;),
            )
        }
        _ => (quote!(), quote!()),
    }
}

/// A composite or explicit op: its Rust function, through float32 for half inputs with
/// `opmath: true`.
fn composite_compute(op: &Op, path: &str) -> TokenStream {
    let name = format_ident!("__{}_compute", op.rust);
    let params = compute_params(op);
    let ret = ret_type(op);
    let path = crate_path(RUST_OPS_RUST, path);
    let a = call_args(&op.args());
    if !op.opmath {
        return quote! {
            fn #name(#(#params),*) -> Result<#ret> {
                #path(#(#a),*)
            }
        };
    }
    opmath_compute(op, &name, &params, &ret, &path)
}

/// `opmath: true`: f16/bf16 tensors go in as float32; floating outputs come back narrowed.
fn opmath_compute(
    op: &Op,
    name: &syn::Ident,
    params: &[TokenStream],
    ret: &TokenStream,
    path: &syn::Path,
) -> TokenStream {
    let args = op.args();
    let a = call_args(&args);
    let inputs = tensor_inputs(&args);
    let widen = rebind_tensors(&args, &quote!(launch::Opmath::widen));
    quote! {
        fn #name(#(#params),*) -> Result<#ret> {
            #inputs
            let half: Option<DType> = launch::Opmath::common_half(&inputs);
            let Some(half) = half else {
                return #path(#(#a),*);
            };
            #(#widen)*
            launch::Opmath::narrow(#path(#(#a),*)?, half)
        }
    }
}

/// A pointwise op: promotion, argument checks, broadcast output, then the backends.
fn pointwise_compute(op: &Op, check: bool) -> TokenStream {
    let name = format_ident!("__{}_compute", op.rust);
    let op_lit = op_name_lit(op);
    let params = compute_params(op);
    let ret = ret_type(op);
    let args = op.args();
    let promote = promote_expr(op);
    let tnames: Vec<syn::Ident> = args
        .iter()
        .filter(|a| a.kind == ArgKind::Tensor)
        .map(|a| ident(&a.name))
        .collect();
    let out_dtype = if op.promote == Promote::Comparison {
        quote!(DType::Bool)
    } else {
        quote!(compute)
    };
    let checks = pointwise_checks(op, check);
    // Each tensor operand: cast to the compute dtype (or check a fixed dtype), broadcast.
    let prep = args.iter().filter(|a| a.kind == ArgKind::Tensor).map(|a| {
        let id = ident(&a.name);
        let n = &a.name;
        match op.fixed.get(&a.name) {
            Some(d) => {
                let v = fixed_dtype_variant(*d);
                quote!(let #id = launch::fixed_operand(OP, #n, #id, DType::#v, &shape, device)?;)
            }
            None => quote!(let #id = launch::operand(#id, compute, &shape, device)?;),
        }
    });
    let meta = backend_branch(op, BackendKey::Meta);
    let cuda = backend_branch(op, BackendKey::Cuda);
    let cpu = backend_branch(op, BackendKey::Cpu);
    quote! {
        fn #name(#(#params,)* dest: Option<&Tensor>) -> Result<#ret> {
            const OP: &str = #op_lit;
            let compute: DType = #promote;
            #checks
            // One array for the three calls: separate ones were built with two
            // pointer stores each and copied with one wide load (a
            // store-forwarding stall on every op).
            let tensors = [#(#tnames),*];
            let device = launch::pointwise_device(OP, &tensors, dest)?;
            let shape = launch::broadcast_shapes(OP, &tensors)?;
            let out = launch::output(OP, dest, &shape, #out_dtype, device, &tensors)?;
            #meta
            #(#prep)*
            #cuda
            #cpu
            Ok(out)
        }
    }
}

/// A pointwise operand's fixed dtype (a pointwise op has no `opmath` operand;
/// `model::validate` checked).
fn fixed_dtype_variant(d: Fixed) -> syn::Ident {
    match d {
        Fixed::DType(d) => d.variant(),
        Fixed::Opmath => unreachable!("model::build rejects `opmath` operands of pointwise ops"),
    }
}

/// The kernel's `_check`, PyTorch's `alpha_check`, and saturating bounds.
fn pointwise_checks(op: &Op, check: bool) -> TokenStream {
    let args = op.args();
    let kernel = &op.cpu().kernel;
    let module = format_ident!("{}", kernel.module);
    // PyTorch's alpha_check: a float alpha cannot scale integer tensors. An op that
    // computes only in floating dtypes rejects integer tensors by dtype instead.
    let integral_kernel = op.cpu().dtypes.iter().any(|d| !d.is_floating());
    let alpha_check = if integral_kernel
        && args
            .iter()
            .any(|a| a.name == "alpha" && a.kind == ArgKind::Scalar)
    {
        quote!(launch::check_alpha(OP, compute, alpha)?;)
    } else {
        quote!()
    };
    let check = if check {
        let f = format_ident!("{}_check", kernel.name);
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
    quote! {
        #check
        #alpha_check
        #(#saturate)*
    }
}

/// The CPU branch of a pointwise op: the scalar kernel mapped over the operands, or its
/// `vectorized:` slice kernels for their dtypes.
fn pointwise_cpu_dispatch(op: &Op) -> TokenStream {
    let args = op.args();
    let kernel = &op.cpu().kernel;
    let module = format_ident!("{}", kernel.module);
    let kernel = format_ident!("{}", kernel.name);
    let tensors: Vec<&Arg> = args.iter().filter(|a| a.kind == ArgKind::Tensor).collect();
    let tnames: Vec<syn::Ident> = tensors.iter().map(|a| ident(&a.name)).collect();
    let elem_ty = |a: &Arg| -> TokenStream {
        match op.fixed.get(&a.name) {
            Some(d) => d.elem(),
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
    let consts: Vec<TokenStream> = args
        .iter()
        .filter(|a| !a.kind.is_tensor())
        .map(|a| {
            let id = ident(&a.name);
            match a.kind {
                ArgKind::Scalar => quote!(let #id = #id.to::<<T as Element>::Compute>();),
                ArgKind::OptScalar => {
                    quote!(let #id = #id.map(|s| s.to::<<T as Element>::Compute>());)
                }
                ArgKind::Float => {
                    quote!(let #id = <<T as Element>::Compute as kiln_kernels::Arith>::from_f64(#id);)
                }
                _ => quote!(),
            }
        })
        .collect();
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
    let scalar = quote! {
        #(#consts)*
        launch::#map::#generics(#(&#tnames,)* &out, move |#(#tnames),*| #body)?;
    };
    dtype_match(op, |d| {
        vectorized_body(op, d, &consts, &tnames).unwrap_or_else(|| scalar.clone())
    })
}

/// The body of dtype `d`'s arm when a `vectorized:` slice kernel computes it: whole chunks
/// instead of the scalar kernel (`model::validate` has checked that the op is unary and keeps
/// its dtype, so `tnames` is `[self_]`).
fn vectorized_body(
    op: &Op,
    d: DType,
    consts: &[TokenStream],
    tnames: &[syn::Ident],
) -> Option<TokenStream> {
    let v = op.vectorized.as_ref()?;
    let elem = v.elem_for(d)?;
    let vmod = format_ident!("{}", v.module);
    let kname = format_ident!("{}", v.name(elem));
    let ety = format_ident!("{}", elem.short());
    let vals: Vec<syn::Ident> = op
        .args()
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
}

/// The CUDA launch of a pointwise op: its generated module `pointwise_<op>`.
fn pointwise_cuda_launch(op: &Op) -> TokenStream {
    let args = op.args();
    let tnames: Vec<syn::Ident> = args
        .iter()
        .filter(|a| a.kind == ArgKind::Tensor)
        .map(|a| ident(&a.name))
        .collect();
    // The family constant generated from the rendered module (gen/cuda_kernels.rs): a kernel
    // the module does not define fails to resolve here, at build time.
    let family = crate_path(
        CUDA_KERNELS_RUST,
        &format!("pointwise_{}::{}", op.rust, op.rust.to_uppercase()),
    );
    let arg = crate_path(CUDA_OPS_RUST, "Arg");
    let cargs = args.iter().filter(|a| !a.kind.is_tensor()).map(|a| {
        let id = ident(&a.name);
        match a.kind {
            ArgKind::Scalar => quote!(#arg::Scalar(#id)),
            ArgKind::OptScalar => quote!(#arg::OptScalar(#id)),
            ArgKind::Float => quote!(#arg::Scalar(Scalar::Float(#id))),
            _ => quote!(#arg::Str(#id)),
        }
    });
    let pointwise = crate_path(CUDA_OPS_RUST, "pointwise");
    quote! {
        #pointwise(OP, &#family, compute, &[#(&#tnames),*], &[#(#cargs),*], &out)?;
    }
}

/// The CUDA launch of a structured op: its launcher, with the prepared inputs and `outs`.
fn structured_cuda_launch(op: &Op) -> TokenStream {
    let cuda = &op
        .backend(BackendKey::Cuda)
        .expect("backend_branch checked")
        .kernel;
    let launcher = crate_path(CUDA_OPS_RUST, &format!("{}::{}", cuda.module, cuda.name));
    let cargs = op.args().into_iter().map(|a| {
        let id = ident(&a.name);
        match a.kind {
            ArgKind::Tensor | ArgKind::TensorList => quote!(&#id),
            ArgKind::OptTensor => quote!(#id.as_ref()),
            _ => kernel_value(&a),
        }
    });
    let couts = (0..op.outputs().len()).map(|i| quote!(&outs[#i]));
    quote! {
        #launcher(OP, #(#cargs,)* #(#couts),*)?;
    }
}

/// How a structured op's arguments reach the meta function and the kernel.
#[derive(Default)]
struct StructuredArgs {
    /// Statements casting each tensor to the compute (or opmath, or fixed) dtype.
    prep: Vec<TokenStream>,
    /// `inputs: Vec<Tensor>` in argument order: `(extends, expression)`, where a list or an
    /// optional tensor extends it by an iterator.
    inputs: Vec<(bool, TokenStream)>,
    meta_args: Vec<TokenStream>,
    src_args: Vec<TokenStream>,
}

fn structured_args(op: &Op) -> StructuredArgs {
    let mut s = StructuredArgs::default();
    for a in &op.args() {
        let id = ident(&a.name);
        let n = &a.name;
        match a.kind {
            ArgKind::Tensor | ArgKind::OptTensor => {
                // Cast to the compute dtype, or to the opmath dtype, or check a
                // fixed dtype; the kernel sees the matching element type.
                let fixed = op.fixed.get(&a.name).copied();
                let prepare = |x: TokenStream| match fixed {
                    Some(Fixed::Opmath) => {
                        quote!(launch::cast(#x, launch::opmath_dtype(compute)))
                    }
                    Some(Fixed::DType(d)) => {
                        let v = d.variant();
                        quote!(launch::fixed_input(OP, #n, #x, DType::#v))
                    }
                    None => quote!(launch::cast(#x, compute)),
                };
                let t = fixed.map_or(quote!(T), Fixed::elem);
                if a.kind == ArgKind::Tensor {
                    let conv = prepare(quote!(#id));
                    s.prep.push(quote!(let #id: Tensor = #conv?;));
                    s.src_args.push(quote!({
                        let i = next();
                        launch::src::<#t>(bufs[i], &inputs[i])
                    }));
                    s.inputs.push((false, quote!(#id.clone())));
                    s.meta_args.push(quote!(#id.shape()));
                } else {
                    // An absent tensor takes no place in `inputs`.
                    let conv = prepare(quote!(t));
                    s.prep
                        .push(quote!(let #id: Option<Tensor> = #id.map(|t| #conv).transpose()?;));
                    s.src_args.push(quote!(#id.as_ref().map(|_| {
                        let i = next();
                        launch::src::<#t>(bufs[i], &inputs[i])
                    })));
                    s.inputs.push((true, quote!(#id.iter().cloned())));
                    s.meta_args.push(quote!(#id.as_ref().map(|t| t.shape())));
                }
            }
            ArgKind::TensorList => {
                s.prep.push(quote!(let #id: Vec<Tensor> = #id.iter().map(|t| launch::cast(t, compute)).collect::<Result<_>>()?;));
                s.inputs.push((true, quote!(#id.iter().cloned())));
                s.meta_args
                    .push(quote!(&#id.iter().map(|t| t.shape()).collect::<Vec<_>>()));
                s.src_args.push(quote!(&(0..#id.len()).map(|_| { let i = next(); launch::src::<T>(bufs[i], &inputs[i]) }).collect::<Vec<_>>()));
            }
            ArgKind::OptTensorList => {
                unreachable!("model::build rejects lists of optional tensors in structured kernels")
            }
            _ => {
                let v = kernel_value(a);
                s.meta_args.push(v.clone());
                s.src_args.push(v);
            }
        }
    }
    s
}

/// `let devs: Vec<&Tensor>`: every tensor operand, for the device check.
fn structured_devices(op: &Op) -> TokenStream {
    let args = op.args();
    let plain: Vec<TokenStream> = args
        .iter()
        .filter(|a| a.kind == ArgKind::Tensor)
        .map(|a| {
            let id = ident(&a.name);
            quote!(#id)
        })
        .collect();
    let extra: Vec<TokenStream> = args
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
    if extra.is_empty() {
        quote!(let devs: Vec<&Tensor> = vec![#(#plain),*];)
    } else {
        quote!(let mut devs: Vec<&Tensor> = vec![#(#plain),*]; #(#extra)*)
    }
}

/// `let inputs: Vec<Tensor>`: the leading plain tensors make a `vec![..]`; a list (or what
/// follows it) extends it.
fn structured_inputs(inputs: &[(bool, TokenStream)]) -> TokenStream {
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
    if rest.is_empty() {
        quote!(let inputs: Vec<Tensor> = vec![#(#first),*];)
    } else {
        quote!(let mut inputs: Vec<Tensor> = vec![#(#first),*]; #(#rest)*)
    }
}

/// The output allocations, from the meta function's `shapes`.
fn structured_allocs(op: &Op) -> Vec<TokenStream> {
    // `tags: [overwrites]`: the kernel writes every element of its outputs, so they
    // need not start zeroed (a reused cached buffer is handed over as it is).
    let alloc = if op.has_tag(Tag::Overwrites) {
        quote!(alloc_empty_on)
    } else {
        quote!(alloc_on)
    };
    (0..op.outputs().len())
        .map(|i| match op.output_fixed_dtype(i) {
            Some(d) => {
                let dt = fixed_dtype_expr(d);
                quote!(Tensor::#alloc(OP, &shapes[#i], #dt, device)?)
            }
            None => quote!(Tensor::#alloc(OP, &shapes[#i], compute, device)?),
        })
        .collect()
}

/// `memory_format: [..]`: on the CPU (and the meta device, which mirrors its strides), the
/// outputs are laid out channels-last when one of the named inputs is (the kernel writes
/// them so; PyTorch's convolution, pooling and batch norm keep the layout the same way).
fn follow_format(op: &Op) -> TokenStream {
    if op.memory_format.is_empty() {
        return TokenStream::new();
    }
    let args: Vec<_> = op.memory_format.iter().map(|a| ident(a)).collect();
    quote! {
        let outs = if matches!(device, Device::Cpu | Device::Meta) {
            let format = launch::followed_format(&[#(&#args),*]);
            outs.map(|t| launch::in_format(t, format))
        } else {
            outs
        };
    }
}

/// A structured op: promotion, device check, casts, the `<kernel>_meta` shapes, the
/// outputs, then the backends.
fn structured_compute(op: &Op) -> TokenStream {
    let name = format_ident!("__{}_compute", op.rust);
    let op_lit = op_name_lit(op);
    let params = compute_params(op);
    let kernel = &op.cpu().kernel;
    let module = format_ident!("{}", kernel.module);
    let meta = format_ident!("{}_meta", kernel.name);
    let promote = promote_expr(op);
    let StructuredArgs {
        prep,
        inputs,
        meta_args,
        ..
    } = structured_args(op);
    let devs = structured_devices(op);
    let out_allocs = structured_allocs(op);
    let n_out = out_allocs.len();
    let inputs = structured_inputs(&inputs);
    let meta_branch = backend_branch(op, BackendKey::Meta);
    let cuda = backend_branch(op, BackendKey::Cuda);
    let cpu = backend_branch(op, BackendKey::Cpu);
    let ret = ret_from_vec(op, &format_ident!("outs"));
    let ret_ty = ret_type(op);
    let follow_format = follow_format(op);
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
            #follow_format
            #meta_branch
            #cuda
            #inputs
            #cpu
            Ok(#ret)
        }
    }
}

/// The CPU branch of a structured op: the kernel over the input and output buffers.
fn structured_cpu_dispatch(op: &Op) -> TokenStream {
    let kernel = &op.cpu().kernel;
    let module = format_ident!("{}", kernel.module);
    let kernel_id = format_ident!("{}", kernel.name);
    let src_args = structured_args(op).src_args;
    let dst_args: Vec<TokenStream> = (0..op.outputs().len())
        .map(|i| {
            let t = match op.output_fixed_dtype(i) {
                Some(d) => d.elem(),
                None => quote!(T),
            };
            quote!(launch::dst::<#t>(obufs.next().expect("one buffer per output"), &outs[#i]))
        })
        .collect();
    dtype_match(op, |_| {
        quote! {
            launch::run(&inputs, &outs, |bufs, obufs| {
                let mut k = 0usize;
                let mut next = || { k += 1; k - 1 };
                let mut obufs = obufs.into_iter();
                kiln_kernels::cpu::#module::#kernel_id::<T>(#(#src_args,)* #(#dst_args),*)
            }).map_err(|m| Error::op(OP, m))?;
        }
    })
}
