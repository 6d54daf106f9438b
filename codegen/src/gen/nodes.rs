//! Backward nodes: one struct per derivative entry holding exactly what its formulas read,
//! and its `Node` impl.

use crate::model::Op;
use crate::types::{ident, ArgKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// A field of a backward node.
pub struct Field {
    pub name: syn::Ident,
    pub ty: TokenStream,
    /// Initialiser, evaluated in the op's record function.
    pub init: TokenStream,
    /// How a field holding saved tensors releases them after a backward pass without
    /// `retain_graph`; `None` for values that hold no tensor.
    pub release: Option<TokenStream>,
    /// The initialiser refers to the node itself (`weak`): a saved output, which must not
    /// keep its own node alive.
    pub self_ref: bool,
}

/// The fields of `op`'s node, in a stable order.
pub fn fields(op: &Op) -> Vec<Field> {
    let Some(d) = &op.derivative else {
        return vec![];
    };
    let args = op.args();
    let outputs = op.outputs();
    let mut names = std::collections::BTreeSet::new();
    let mut metas = std::collections::BTreeSet::new();
    for f in &d.formulas {
        names.extend(f.uses.names.iter().cloned());
        metas.extend(f.uses.metas.iter().cloned());
    }
    let mut out = Vec::new();
    for a in &args {
        let id = ident(&a.name);
        let n = &a.name;
        if names.contains(&a.name) {
            match a.kind {
                ArgKind::Tensor => {
                    let init = if a.name == "self" {
                        quote!(SavedTensor::input(original_self.unwrap_or(self_), #n))
                    } else {
                        quote!(SavedTensor::input_beside(#id, #n, inplace))
                    };
                    out.push(Field {
                        name: id.clone(),
                        ty: quote!(SavedTensor),
                        init,
                        release: Some(quote!(self.#id.release();)),
                        self_ref: false,
                    });
                }
                ArgKind::OptTensor | ArgKind::TensorList => {
                    out.push(Field {
                        name: id.clone(),
                        ty: quote!(Vec<SavedTensor>),
                        init: quote!(#id.iter().map(|t| SavedTensor::input_beside(t, #n, inplace)).collect()),
                        release: Some(quote!(self.#id.iter().for_each(|s| s.release());)),
                        self_ref: false,
                    });
                }
                // Absent entries stay `None`, so the formula sees the list as it was passed.
                ArgKind::OptTensorList => {
                    out.push(Field {
                        name: id.clone(),
                        ty: quote!(Vec<Option<SavedTensor>>),
                        init: quote!(#id.iter().map(|t| t.map(|t| SavedTensor::input_beside(t, #n, inplace))).collect()),
                        release: Some(quote!(self.#id.iter().flatten().for_each(|s| s.release());)),
                        self_ref: false,
                    });
                }
                k => {
                    let ty = k.owned_type();
                    let init = k.to_owned(&id);
                    out.push(Field {
                        name: id.clone(),
                        ty,
                        init,
                        release: None,
                        self_ref: false,
                    });
                }
            }
        }
        for (recv, method) in metas.iter().filter(|(r, _)| r == &a.name) {
            let name = format_ident!("{}_{}", recv, method);
            let src = if a.name == "self" {
                quote!(original_self.unwrap_or(self_))
            } else {
                quote!(#id)
            };
            let list = a.kind == ArgKind::TensorList;
            let (ty, init) = match (method.as_str(), list) {
                ("sizes", false) => (quote!(Vec<usize>), quote!(#src.sizes().to_vec())),
                ("sizes", true) => (
                    quote!(Vec<Vec<usize>>),
                    quote!(#src.iter().map(|t| t.sizes().to_vec()).collect()),
                ),
                ("dtype", false) => (quote!(DType), quote!(#src.dtype())),
                ("dtype", true) => (
                    quote!(Vec<DType>),
                    quote!(#src.iter().map(|t| t.dtype()).collect()),
                ),
                ("device", false) => (quote!(Device), quote!(#src.device())),
                ("dim", false) => (quote!(usize), quote!(#src.dim())),
                ("strides", false) => (quote!(Vec<usize>), quote!(#src.strides().to_vec())),
                ("storage_offset", false) => (quote!(usize), quote!(#src.storage_offset())),
                ("numel", false) => (quote!(usize), quote!(#src.numel())),
                (m, _) => (
                    quote!(usize),
                    quote!(compile_error!(concat!("unsupported list metadata ", #m))),
                ),
            };
            out.push(Field {
                name,
                ty,
                init,
                release: None,
                self_ref: false,
            });
        }
        if a.kind == ArgKind::TensorList && d.formulas.iter().any(|f| f.inputs.contains(&a.name)) {
            let name = format_ident!("{}_len", a.name);
            out.push(Field {
                name,
                ty: quote!(usize),
                init: quote!(#id.len()),
                release: None,
                self_ref: false,
            });
        }
    }
    for (i, o) in outputs.iter().enumerate() {
        if names.contains(o) {
            let id = ident(o);
            out.push(Field {
                name: id.clone(),
                ty: quote!(SavedTensor),
                init: quote!(SavedTensor::output(outs[#i], weak.clone(), #i, #o)),
                release: Some(quote!(self.#id.release();)),
                self_ref: true,
            });
        }
    }
    out
}

/// Locals a formula sees: unpacked tensors, borrowed values, metadata.
fn bindings(op: &Op, f: &crate::formula::Formula) -> Vec<TokenStream> {
    let args = op.args();
    let mut out = Vec::new();
    for name in &f.uses.names {
        let id = ident(name);
        match args.iter().find(|a| &a.name == name) {
            Some(a) if a.kind == ArgKind::Tensor => out.push(quote!(let #id = self.#id.unpack(NAME)?;)),
            Some(a) if a.kind == ArgKind::OptTensorList => out.push(quote! {
                let #id: Vec<Option<Tensor>> = self.#id.iter().map(|s| s.as_ref().map(|s| s.unpack(NAME)).transpose()).collect::<Result<_>>()?;
            }),
            Some(a) if a.kind.is_tensor() => {
                out.push(quote!(let #id: Vec<Tensor> = self.#id.iter().map(|s| s.unpack(NAME)).collect::<Result<_>>()?;))
            }
            Some(a) => {
                let v = a.kind.from_field(&id);
                out.push(quote!(let #id = #v;));
            }
            None => out.push(quote!(let #id = self.#id.unpack(NAME)?;)),
        }
    }
    for (recv, method) in &f.uses.metas {
        let id = format_ident!("{}_{}", recv, method);
        let list = args
            .iter()
            .any(|a| &a.name == recv && a.kind == ArgKind::TensorList);
        out.push(match (method.as_str(), list) {
            ("sizes", false) | ("strides", false) => quote!(let #id: &[usize] = &self.#id;),
            ("sizes", true) => quote!(let #id: &[Vec<usize>] = &self.#id;),
            ("dtype", true) => quote!(let #id: &[DType] = &self.#id;),
            _ => quote!(let #id = self.#id;),
        });
    }
    out
}

/// The node struct and its `Node` impl.
pub fn node(op: &Op) -> TokenStream {
    let Some(d) = &op.derivative else {
        return quote!();
    };
    let name = format_ident!("{}", d.node);
    let name_lit = &d.node;
    let fs = fields(op);
    let decls = fs.iter().map(|f| {
        let (n, t) = (&f.name, &f.ty);
        quote!(pub(crate) #n: #t,)
    });
    let releases = fs.iter().filter_map(|f| f.release.as_ref());
    // Each differentiable input's first slot among the node's edges (a list takes one slot
    // per tensor), then one block per formula.
    let slot_of = |name: &str| format_ident!("slot_{}", name);
    let mut offsets = Vec::new();
    for a in op.differentiable_inputs() {
        let s = slot_of(&a.name);
        let width = if a.kind == ArgKind::TensorList {
            let len = format_ident!("{}_len", a.name);
            quote!(self.#len)
        } else {
            quote!(1)
        };
        offsets.push(quote! {
            let #s = slot;
            slot += #width;
        });
    }
    let mut slots = Vec::new();
    for f in &d.formulas {
        let expr = &f.expr;
        let binds = bindings(op, f);
        if f.inputs.len() > 1 {
            // Several inputs' gradients from one call, returned as a tuple of
            // `Option<Tensor>`; `grad_input_mask` says which are needed.
            let ss: Vec<syn::Ident> = f.inputs.iter().map(|n| slot_of(n)).collect();
            let gs: Vec<syn::Ident> = (0..ss.len()).map(|i| format_ident!("g{}", i)).collect();
            let n = ss.len();
            slots.push(quote! {
                {
                    let grad_input_mask: [bool; #n] = [#(self.base.needs_input_grad(#ss)),*];
                    if grad_input_mask.iter().any(|&m| m) {
                        #(#binds)*
                        let gs: [Option<Tensor>; #n] = {
                            let (#(#gs),*) = #expr;
                            [#(#gs),*]
                        };
                        for ((s, m), g) in [#(#ss),*].into_iter().zip(grad_input_mask).zip(gs) {
                            if m {
                                out[s] = g;
                            }
                        }
                    }
                }
            });
            continue;
        }
        let a = op
            .args()
            .into_iter()
            .find(|a| a.name == f.input)
            .expect("model::build checked the formula's input");
        let s = slot_of(&a.name);
        let list = a.kind == ArgKind::TensorList;
        let width = if list {
            let len = format_ident!("{}_len", a.name);
            quote!(self.#len)
        } else {
            quote!(1)
        };
        let store = if list {
            quote! {
                let gs: Vec<Tensor> = #expr;
                for (i, g) in range.zip(gs) { out[i] = Some(g); }
            }
        } else {
            quote! {
                let g: Tensor = #expr;
                out[range.start] = Some(g);
            }
        };
        let mask = if f.uses_grad_input_mask() {
            quote!(let grad_input_mask: [bool; 1] = [true];)
        } else {
            quote!()
        };
        slots.push(quote! {
            {
                let range = #s..#s + #width;
                if range.clone().any(|i| self.base.needs_input_grad(i)) {
                    #mask
                    #(#binds)*
                    #store
                }
            }
        });
    }
    let doc = format!("Backward of `{}`.", op.schema);
    // `grad` is the first output's gradient; a formula over several outputs (linalg_qr)
    // reads `grads`, one `Option` per output, and runs when any of them is defined.
    let uses_grads = d.formulas.iter().any(|f| f.uses_grads());
    let preamble = if uses_grads {
        quote! {
            let grads: Vec<Option<Tensor>> = grads;
            if grads.iter().all(|g| g.is_none()) { return Ok(out) }
        }
    } else {
        quote! {
            let Some(grad) = grads.into_iter().next().flatten() else { return Ok(out) };
        }
    };
    // `apply`'s allows, for code written once for every op: `NAME` is read only where a
    // formula unpacks a saved tensor (dead_code); an input's slot, and `grad`, go unread when
    // no formula needs them (unused_variables) and the last `slot += n` is never read
    // (unused_assignments); a formula's `&x` or `.clone()` is needless for some argument types.
    quote! {
        #[doc = #doc]
        pub struct #name {
            pub(crate) base: NodeBase,
            #(#decls)*
        }

        impl Node for #name {
            fn name(&self) -> &'static str { #name_lit }
            fn base(&self) -> &NodeBase { &self.base }
            fn release_variables(&self) { #(#releases)* }
            #[allow(dead_code, unused_variables, unused_assignments, clippy::needless_borrow, clippy::redundant_clone)]
            fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
                const NAME: &str = #name_lit;
                let mut out: Vec<Option<Tensor>> = vec![None; self.base.next_edges.len()];
                #preamble
                let mut slot = 0usize;
                #(#offsets)*
                #(#slots)*
                Ok(out)
            }
        }
    }
}
