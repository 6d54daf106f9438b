//! One operator of the model and the enums that describe it.

use super::backend::{BackendKernel, BackendKey, Backends};
use super::dtype::{DType, Fixed};
use crate::formula::Formula;
use crate::schema::FunctionSchema;
use crate::types::ArgKind;
use std::collections::BTreeMap;
use std::fmt;

/// Which public variants an op gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Variants {
    pub function: bool,
    pub method: bool,
    pub inplace: bool,
    pub out: bool,
}

/// How the op is computed. The kernels of `Pointwise` and `Structured` ops are in the op's
/// backend table ([`Op::backends`]); composites run on every backend through the ops they
/// call, so they have none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Elementwise: a scalar function mapped by the pointwise loops (CPU) or by a generated
    /// kernel (CUDA); `check`: the CPU module has a `<kernel>_check` of the arguments.
    Pointwise { check: bool },
    /// A `<kernel>_meta` + `<kernel>` pair in `kernels::cpu::<module>` over strided buffers;
    /// `check`: the CPU module has a `<kernel>_check(compute, <non-tensor arguments>)`, the
    /// kernel's dtype checks that the shapes-only `_meta` cannot make, which the meta
    /// branch runs so meta fails where the CPU kernel does.
    Structured { check: bool },
    /// Written in Rust over tensors (`src/ops/explicit/`), with a derivative from the YAML.
    Explicit { path: String },
    /// Written in Rust from other ops (`src/ops/composite/`); autograd comes from those ops.
    Composite { path: String },
}

/// A tag (`tags:`): what the generator does differently for the op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tag {
    /// The kernel is a scalar function mapped elementwise.
    Pointwise,
    /// The result shares the input's storage.
    View,
    /// A structured kernel writes every element of its outputs, so they need no zero-fill.
    Overwrites,
}

impl Tag {
    pub const ALL: [Tag; 3] = [Tag::Pointwise, Tag::View, Tag::Overwrites];

    pub fn name(self) -> &'static str {
        match self {
            Tag::Pointwise => "pointwise",
            Tag::View => "view",
            Tag::Overwrites => "overwrites",
        }
    }

    pub fn parse(s: &str) -> Option<Tag> {
        Tag::ALL.into_iter().find(|t| t.name() == s)
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A pointwise op's `vectorized:` CPU slice kernels, `<module>::<stem>_f32` and/or
/// `<module>::<stem>_f64`: each maps a whole slice of its element type
/// (`fn(self_: &[f32], out: &mut [f32], <the scalar kernel's non-tensor arguments>)`), so
/// that it can be vectorised; the generated dispatch calls it for its dtype, the f32 one also
/// for f16 and bf16 (a chunk at a time through f32 buffers), and the scalar kernel for the
/// other dtypes. An optional in-place form `<stem>_f32_(self_: &mut [f32], <arguments>)`
/// serves the in-place op (`x.exp_()`); without one, chunks go through a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vectorized {
    pub module: String,
    pub stem: String,
    /// The element types with a slice kernel: `f32`, `f64` or both, in that order.
    pub elems: Vec<DType>,
    /// Those of `elems` that also have the in-place form.
    pub inplace: Vec<DType>,
}

impl Vectorized {
    /// The element types a slice kernel may have.
    pub const ELEMS: [DType; 2] = [DType::F32, DType::F64];

    /// The element type of the slice kernel that computes dtype `d`, if one does.
    pub fn elem_for(&self, d: DType) -> Option<DType> {
        let want = match d {
            DType::F16 | DType::BF16 => DType::F32,
            other => other,
        };
        self.elems.iter().copied().find(|e| *e == want)
    }

    /// The slice kernel's name for element type `elem`: `exp_f32`.
    pub fn name(&self, elem: DType) -> String {
        format!("{}_{elem}", self.stem)
    }

    /// The in-place slice kernel's name for element type `elem`, if it has one: `exp_f32_`.
    pub fn inplace_name(&self, elem: DType) -> Option<String> {
        self.inplace
            .contains(&elem)
            .then(|| format!("{}_{elem}_", self.stem))
    }
}

/// How the computation dtype and output dtype follow from the inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Promote {
    /// `result_type` of the operands.
    Default,
    /// Like `Default`, then integers and bool become float32.
    IntToFloat,
    /// Like `Default`, then bool becomes int64 (`square`, which PyTorch computes as `pow(x, 2)`).
    BoolToLong,
    /// Like `Default`; the output is bool.
    Comparison,
    /// The dtype of the `self` argument.
    SelfType,
    /// The named `ScalarType` argument.
    Arg(String),
    /// `sum`: the `dtype` argument if given, int64 for integer/bool inputs, else the input's.
    Sum,
    /// All operands must already share one dtype (`mm`, `cat` promote; `mm` does not).
    Same,
}

/// The OpInfo test entry.
#[derive(Debug, Clone)]
pub struct OpInfo {
    pub samples: String,
    pub reference: String,
    /// The dtypes its checks run in on the CPU (and meta).
    pub dtypes: Vec<DType>,
    /// The dtypes its checks run in on CUDA: `dtypes` unless the entry gives CUDA its own.
    pub cuda_dtypes: Vec<DType>,
    pub gradcheck: bool,
    pub variants: bool,
    pub errors: bool,
}

/// A derivatives.yaml entry.
#[derive(Debug, Clone)]
pub struct Derivative {
    pub line: usize,
    /// `MulBackward0`.
    pub node: String,
    pub formulas: Vec<Formula>,
}

/// One operator.
#[derive(Debug, Clone)]
pub struct Op {
    pub schema: FunctionSchema,
    pub line: usize,
    /// The public Rust name (`mul`, `mul_scalar`, `sum_dim`).
    pub rust: String,
    pub variants: Variants,
    pub kind: Kind,
    /// The dispatch table: `Cpu`, `Cuda` and `Meta` for an op with kernels, empty for a
    /// composite.
    pub backends: Backends,
    /// dtypes the op is declared for: its CPU kernel's; for a composite its `dtypes:`, or
    /// every dtype.
    pub dtypes: Vec<DType>,
    pub promote: Promote,
    /// Arguments that take part in type promotion.
    pub operands: Vec<String>,
    /// Arguments and outputs with a fixed dtype (`index: i64`).
    pub fixed: BTreeMap<String, Fixed>,
    /// For `promote: same`: the op's own message when dtypes differ; `out=` must match too.
    pub same_dtype_error: Option<String>,
    pub opinfo: Option<OpInfo>,
    pub skip_opinfo: Option<String>,
    pub derivative: Option<Derivative>,
    pub non_differentiable: bool,
    pub doc: Option<String>,
    pub tags: Vec<Tag>,
    /// Composite computed in float32 for f16/bf16 inputs (`opmath: true`).
    pub opmath: bool,
    /// Scalar arguments (bounds) that saturate at the compute dtype's range (`saturate:`).
    pub saturate: Vec<String>,
    /// Vectorised CPU slice kernels of a pointwise op (`vectorized: <module>::<stem>`).
    pub vectorized: Option<Vectorized>,
    /// The cast an autocast region applies at the op's entry, per device type.
    pub autocast: super::autocast::Autocast,
    /// Tensor arguments whose channels-last layout the outputs follow (`memory_format:`).
    pub memory_format: Vec<String>,
}

/// Argument info used everywhere.
#[derive(Debug, Clone)]
pub struct Arg {
    pub name: String,
    pub kind: ArgKind,
    pub default: Option<String>,
    /// A `SymInt[]` (a size list): the public API takes `impl IntoDims` for it.
    pub dims: bool,
}

impl Op {
    /// The op's entry for backend `key`, if it has one.
    pub fn backend(&self, key: BackendKey) -> Option<&BackendKernel> {
        self.backends.get(&key)
    }

    /// The CPU kernel of a pointwise or structured op.
    ///
    /// # Panics
    /// For a composite, which has none (the model gives every other op one).
    pub fn cpu(&self) -> &BackendKernel {
        self.backend(BackendKey::Cpu)
            .expect("model::build gives every pointwise and structured op a CPU kernel")
    }

    pub fn has_tag(&self, tag: Tag) -> bool {
        self.tags.contains(&tag)
    }

    /// The schema's non-out arguments (mutated inputs included), classified.
    pub fn args(&self) -> Vec<Arg> {
        self.schema
            .arguments
            .iter()
            .filter(|a| !a.is_out())
            .map(|a| Arg {
                name: a.name.clone(),
                kind: ArgKind::of(&a.ty).expect("validated in model::build"),
                default: a.default.clone(),
                dims: matches!(&a.ty, crate::schema::Type::List { elem, .. }
                    if matches!(**elem, crate::schema::Type::SymInt)),
            })
            .collect()
    }

    /// Output names (`result` for a single unnamed return).
    pub fn outputs(&self) -> Vec<String> {
        if self.schema.returns.len() == 1 && self.schema.returns[0].name.is_none() {
            return vec!["result".into()];
        }
        self.schema
            .returns
            .iter()
            .enumerate()
            .map(|(i, r)| r.name.clone().unwrap_or_else(|| format!("result{i}")))
            .collect()
    }

    /// The names of the op's public forms, each with whether it takes every argument: its
    /// Rust name, and `<name>_with` too when some arguments have defaults (the plain form
    /// then leaves them out).
    pub fn forms(&self) -> Vec<(String, bool)> {
        if self.args().iter().any(|a| a.default.is_some()) {
            vec![
                (self.rust.clone(), false),
                (format!("{}_with", self.rust), true),
            ]
        } else {
            vec![(self.rust.clone(), true)]
        }
    }

    /// The `Tensor` methods generated for the op: its forms (`variants: method`) and their
    /// in-place `<form>_` (`inplace`, not for an implicit composite).
    pub fn method_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for (f, _) in self.forms() {
            if self.has_inplace() {
                names.push(format!("{f}_"));
            }
            if self.variants.method {
                names.push(f);
            }
        }
        names
    }

    /// The free functions generated for the op (`crate::<name>`): its forms (`variants:
    /// function`) and `<rust>_out` (`out`, not for an implicit composite).
    pub fn function_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        if self.variants.function {
            names.extend(self.forms().into_iter().map(|(f, _)| f));
        }
        if self.variants.out && !matches!(self.kind, Kind::Composite { .. }) {
            names.push(format!("{}_out", self.rust));
        }
        names
    }

    /// Whether the op gets in-place methods: `variants: inplace`, unless it is an implicit
    /// composite (which autograd could not record as one op).
    pub fn has_inplace(&self) -> bool {
        self.variants.inplace && !matches!(self.kind, Kind::Composite { .. })
    }

    /// The op returns one `Tensor[]` (`split`, `unbind`): a `Vec<Tensor>` in Rust.
    pub fn returns_list(&self) -> bool {
        self.schema.returns.len() == 1
            && matches!(self.schema.returns[0].ty, crate::schema::Type::List { .. })
    }

    /// `add.Tensor`.
    pub fn full_name(&self) -> String {
        match &self.schema.overload {
            Some(o) => format!("{}.{}", self.schema.name, o),
            None => self.schema.name.clone(),
        }
    }

    /// Tensor arguments that gradients flow to (those with a formula).
    pub fn differentiable_inputs(&self) -> Vec<Arg> {
        let Some(d) = &self.derivative else {
            return vec![];
        };
        self.args()
            .into_iter()
            .filter(|a| d.formulas.iter().any(|f| f.inputs.contains(&a.name)))
            .collect()
    }

    /// The dtype of output `i` is fixed (`indices: i64`) or follows the computation.
    pub fn output_fixed_dtype(&self, i: usize) -> Option<Fixed> {
        if self.promote == Promote::Comparison {
            return Some(Fixed::DType(DType::Bool));
        }
        self.fixed.get(&self.outputs()[i]).copied()
    }

    /// True when some output can be floating point, so gradients can flow.
    pub fn has_float_output(&self) -> bool {
        (0..self.outputs().len()).any(|i| match self.output_fixed_dtype(i) {
            Some(d) => d.can_be_floating(),
            None => true,
        })
    }
}

/// The whole model.
#[derive(Debug, Clone)]
pub struct Model {
    pub ops: Vec<Op>,
}
