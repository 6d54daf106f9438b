//! The validated model: every operator with its schema, kind, dtypes, derivative and OpInfo.
//! All YAML errors are raised here, once, with the file and line. Generators only read it.

use crate::contract;
use crate::formula::{self, Formula};
use crate::kernels_index::{FnSig, KernelIndex};
use crate::schema::FunctionSchema;
use crate::types::{ident_str, ArgKind};
use crate::yaml::{self, DTypes, RawDerivative, RawOp};
use std::collections::{BTreeMap, BTreeSet};

/// Short dtype names in promotion order.
pub const ALL_DTYPES: [&str; 10] = [
    "bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64",
];

/// A build error: `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// Which public variants an op gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Variants {
    pub function: bool,
    pub method: bool,
    pub inplace: bool,
    pub out: bool,
}

/// How the op is computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Elementwise: a scalar function in `kernels::cpu::<module>` mapped by the pointwise loops.
    Pointwise {
        module: String,
        kernel: String,
        check: bool,
    },
    /// A `<kernel>_meta` + `<kernel>` pair in `kernels::cpu::<module>` over strided buffers.
    Structured { module: String, kernel: String },
    /// Written in Rust over tensors (`src/ops/explicit/`), with a derivative from the YAML.
    Explicit { path: String },
    /// Written in Rust from other ops (`src/ops/composite/`); autograd comes from those ops.
    Composite { path: String },
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
    pub elems: Vec<String>,
    /// Those of `elems` that also have the in-place form.
    pub inplace: Vec<String>,
}

impl Vectorized {
    /// The element type of the slice kernel that computes dtype `d`, if one does.
    pub fn elem_for(&self, d: &str) -> Option<&str> {
        let want = match d {
            "f16" | "bf16" => "f32",
            other => other,
        };
        self.elems.iter().map(String::as_str).find(|e| *e == want)
    }

    /// The slice kernel's name for element type `elem`: `exp_f32`.
    pub fn name(&self, elem: &str) -> String {
        format!("{}_{elem}", self.stem)
    }

    /// The in-place slice kernel's name for element type `elem`, if it has one: `exp_f32_`.
    pub fn inplace_name(&self, elem: &str) -> Option<String> {
        self.inplace
            .iter()
            .any(|e| e == elem)
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
    pub dtypes: Vec<String>,
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
    /// dtypes the CPU kernel computes in.
    pub dtypes: Vec<String>,
    /// The CUDA kernel `(module, name)`; `None` for composite ops.
    pub cuda: Option<(String, String)>,
    /// dtypes the CUDA kernel computes in.
    pub cuda_dtypes: Vec<String>,
    pub promote: Promote,
    /// Arguments that take part in type promotion.
    pub operands: Vec<String>,
    /// Arguments and outputs with a fixed dtype (`index: i64`).
    pub fixed: BTreeMap<String, String>,
    /// For `promote: same`: the op's own message when dtypes differ; `out=` must match too.
    pub same_dtype_error: Option<String>,
    pub opinfo: Option<OpInfo>,
    pub skip_opinfo: Option<String>,
    pub derivative: Option<Derivative>,
    pub non_differentiable: bool,
    pub doc: Option<String>,
    pub tags: Vec<String>,
    /// Composite computed in float32 for f16/bf16 inputs (`opmath: true`).
    pub opmath: bool,
    /// Scalar arguments (bounds) that saturate at the compute dtype's range (`saturate:`).
    pub saturate: Vec<String>,
    /// Vectorised CPU slice kernels of a pointwise op (`vectorized: <module>::<stem>`).
    pub vectorized: Option<Vectorized>,
}

/// The `fixed:` value naming the opmath dtype of the computation (PyTorch's `opmath_type`:
/// float32 for f16/bf16, the compute dtype otherwise). A structured kernel sees such an
/// argument or output as `Src<T::Compute>` / `Dst<T::Compute>`: statistics and parameters of
/// the normalization kernels stay in float32 for half inputs.
pub const OPMATH: &str = "opmath";

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
    /// The schema's non-out arguments, classified.
    pub fn args(&self) -> Vec<Arg> {
        self.schema
            .arguments
            .iter()
            .filter(|a| !a.is_write())
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
    pub fn output_fixed_dtype(&self, i: usize) -> Option<String> {
        if self.promote == Promote::Comparison {
            return Some("bool".into());
        }
        self.fixed.get(&self.outputs()[i]).cloned()
    }

    /// True when some output can be floating point, so gradients can flow.
    pub fn has_float_output(&self) -> bool {
        (0..self.outputs().len()).any(|i| match self.output_fixed_dtype(i) {
            Some(d) => d.starts_with('f') || d == "bf16" || d == OPMATH,
            None => true,
        })
    }
}

/// The whole model.
#[derive(Debug, Clone)]
pub struct Model {
    pub ops: Vec<Op>,
}

fn dtype_set(spec: &DTypes) -> Result<Vec<String>, String> {
    let v: Vec<String> = match spec {
        DTypes::Group(g) => match g.as_str() {
            "all" => ALL_DTYPES.iter().map(|s| s.to_string()).collect(),
            "numeric" => ALL_DTYPES[1..].iter().map(|s| s.to_string()).collect(),
            "floating" => ["f16", "bf16", "f32", "f64"].iter().map(|s| s.to_string()).collect(),
            "integral" => ["u8", "i8", "i16", "i32", "i64"].iter().map(|s| s.to_string()).collect(),
            other => return Err(format!("unknown dtype group '{other}' (expected all, numeric, floating, integral or a list)")),
        },
        DTypes::List(l) => l.clone(),
    };
    for d in &v {
        if !ALL_DTYPES.contains(&d.as_str()) {
            return Err(format!(
                "unknown dtype '{d}' (expected one of {})",
                ALL_DTYPES.join(", ")
            ));
        }
    }
    Ok(v)
}

fn default_rust_name(schema: &FunctionSchema) -> String {
    match schema.overload.as_deref() {
        None | Some("Tensor") | Some("self") | Some("int") | Some("Tensor_Tensor") => {
            schema.name.clone()
        }
        Some(o) => format!("{}_{}", schema.name, o.to_lowercase()),
    }
}

/// `mul` → `Mul`, `log_softmax` → `LogSoftmax`.
fn camel(name: &str) -> String {
    name.split('_')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn nerr(line: usize, message: String) -> ModelError {
    ModelError {
        file: "native_functions.yaml".into(),
        line,
        message,
    }
}

fn derr(line: usize, message: String) -> ModelError {
    ModelError {
        file: "derivatives.yaml".into(),
        line,
        message,
    }
}

/// True when `name` is a Rust identifier (not a keyword).
fn is_rust_ident(name: &str) -> bool {
    syn::parse_str::<syn::Ident>(name).is_ok()
}

/// `" (did you mean `x`?)"` when one of `names` is a small edit away from `name`.
fn did_you_mean<'a>(name: &str, names: impl Iterator<Item = &'a String>) -> String {
    let best = names
        .map(|n| (edit_distance(name, n), n))
        .filter(|(d, n)| *d <= 2.max(name.len() / 4) && *d < n.len())
        .min();
    match best {
        Some((_, n)) => format!(" (did you mean `{n}`?)"),
        None => String::new(),
    }
}

/// Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(cur)
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// Checks `sig`, when the index read it, against what the generated code passes.
fn check_call(
    line: usize,
    func: &str,
    call: &contract::Call,
    sig: Option<&FnSig>,
) -> Result<(), ModelError> {
    match sig {
        Some(sig) => call
            .check(sig)
            .map_err(|m| nerr(line, format!("{func}: {m}"))),
        None => Ok(()),
    }
}

/// Argument kinds the pointwise loops and `kernels/cuda/pointwise.cu.j2` can pass to a
/// scalar function.
fn pointwise_kind(kind: ArgKind) -> bool {
    matches!(
        kind,
        ArgKind::Tensor | ArgKind::Scalar | ArgKind::OptScalar | ArgKind::Float | ArgKind::Str
    )
}

/// The tags an op may carry: `pointwise` (a scalar kernel mapped by the shared loops),
/// `view` (the result shares the input's storage), `overwrites` (a structured kernel writes
/// every element of its outputs, so they need no zero-fill).
const TAGS: [&str; 3] = ["pointwise", "view", "overwrites"];

/// Validates one `native_functions.yaml` entry, at `line`, into an [`Op`].
fn op_entry(
    r: RawOp,
    line: usize,
    kernels: &KernelIndex,
    seen_rust: &mut BTreeSet<String>,
) -> Result<Op, ModelError> {
    let schema = FunctionSchema::parse(&r.func)
        .map_err(|e| nerr(line, format!("malformed schema '{}': {e}", r.func)))?;
    for a in &schema.arguments {
        if a.is_write() {
            continue;
        }
        let kind = ArgKind::of(&a.ty)
            .map_err(|m| nerr(line, format!("{}: argument '{}': {m}", r.func, a.name)))?;
        if !is_rust_ident(&ident_str(&a.name)) {
            return Err(nerr(
                line,
                format!(
                    "{}: argument '{}' cannot be a Rust parameter name (a keyword); rename it",
                    r.func, a.name
                ),
            ));
        }
        if let Some(d) = &a.default {
            kind.default_expr(d)
                .map_err(|m| nerr(line, format!("{}: argument `{a}`: {m}", r.func)))?;
        }
    }
    let rust = r.rust.clone().unwrap_or_else(|| default_rust_name(&schema));
    if !is_rust_ident(&rust) {
        return Err(nerr(
            line,
            format!(
                "{}: '{rust}' is not a Rust identifier; give the op a `rust:` name",
                r.func
            ),
        ));
    }
    if !seen_rust.insert(rust.clone()) {
        return Err(nerr(
            line,
            format!("two operators would both be named '{rust}' in Rust; give one a `rust:` name"),
        ));
    }
    let mut variants = Variants::default();
    for v in r
        .variants
        .as_deref()
        .unwrap_or("function")
        .split(',')
        .map(str::trim)
    {
        match v {
            "function" => variants.function = true,
            "method" => variants.method = true,
            "inplace" => variants.inplace = true,
            "out" => variants.out = true,
            other => {
                return Err(nerr(
                    line,
                    format!("unknown variant '{other}' (expected function, method, inplace, out)"),
                ))
            }
        }
    }
    let has_self = schema.arguments.iter().any(|a| a.name == "self");
    if (variants.method || variants.inplace) && !has_self {
        return Err(nerr(
            line,
            format!(
                "{}: method and inplace variants need an argument named 'self'",
                r.func
            ),
        ));
    }
    let composite_keys = [
        "CompositeExplicitAutograd",
        "CompositeImplicitAutograd",
        "Composite",
    ];
    for key in r.dispatch.keys() {
        if !["CPU", "CUDA"].contains(&key.as_str()) && !composite_keys.contains(&key.as_str()) {
            return Err(nerr(line, format!("{}: unknown dispatch key '{key}' (expected CPU and CUDA, or one of CompositeExplicitAutograd, CompositeImplicitAutograd)", r.func)));
        }
    }
    let composite = r
        .dispatch
        .iter()
        .find(|(k, _)| composite_keys.contains(&k.as_str()));
    if composite.is_some() && r.dispatch.len() != 1 {
        return Err(nerr(line, format!("{}: a composite op runs on every backend through the ops it calls; it takes no CPU or CUDA key", r.func)));
    }
    let list_return = schema
        .returns
        .iter()
        .any(|ret| matches!(ret.ty, crate::schema::Type::List { .. }));
    if list_return
        && (schema.returns.len() != 1
            || !matches!(composite, Some((k, _)) if k != "CompositeExplicitAutograd"))
    {
        return Err(nerr(line, format!("{}: a `Tensor[]` return is supported only as the single return of a CompositeImplicitAutograd op", r.func)));
    }
    // Tags change what the generator emits, so a misspelt one must not pass silently.
    if let Some(t) = r.tags.iter().find(|t| !TAGS.contains(&t.as_str())) {
        return Err(nerr(
            line,
            format!(
                "{}: unknown tag '{t}' (expected one of {})",
                r.func,
                TAGS.join(", ")
            ),
        ));
    }
    let pointwise = r.tags.iter().any(|t| t == "pointwise");
    let (kind, cuda) = match composite {
        Some((key, target)) => {
            let path = target.trim().to_string();
            let implicit = key != "CompositeExplicitAutograd";
            let (module, name) = match path.rsplit_once("::") {
                Some((m, n)) if syn::parse_str::<syn::Path>(&path).is_ok() && is_rust_ident(n) => {
                    (m.to_string(), n.to_string())
                }
                _ => {
                    return Err(nerr(
                        line,
                        format!(
                            "{}: {key} target '{path}' must be written as <module>::<fn>, a function in src/ops/<module>.rs",
                            r.func
                        ),
                    ))
                }
            };
            if implicit && (variants.inplace || variants.out) {
                return Err(nerr(
                    line,
                    format!(
                        "{}: a CompositeImplicitAutograd op gets no generated in-place or out= form; drop `inplace` and `out` from variants",
                        r.func
                    ),
                ));
            }
            if let Some(ops) = &kernels.rust_ops {
                if !ops.contains_key(&path) {
                    let file = format!("src/ops/{}.rs", module.replace("::", "/"));
                    let prefix = format!("{module}::");
                    let names: Vec<String> = ops
                        .keys()
                        .filter_map(|k| k.strip_prefix(&prefix))
                        .map(str::to_string)
                        .collect();
                    return Err(nerr(
                        line,
                        format!(
                            "{}: {key} names `{path}`, but {file} has no `pub fn {name}`{}",
                            r.func,
                            did_you_mean(&name, names.iter())
                        ),
                    ));
                }
            }
            let kind = if implicit {
                Kind::Composite { path }
            } else {
                Kind::Explicit { path }
            };
            (kind, None)
        }
        None => {
            let Some(target) = r.dispatch.get("CPU") else {
                return Err(nerr(line, format!("{}: dispatch needs CPU (and CUDA), or one of CompositeExplicitAutograd, CompositeImplicitAutograd", r.func)));
            };
            let Some(cuda_target) = r.dispatch.get("CUDA") else {
                return Err(nerr(line, format!("{}: no CUDA kernel: add `CUDA: <module>::<fn>` to dispatch (a `__device__` fn in kernels/cuda/<module>.cuh for a pointwise op, else a launcher in src/backends/cuda/ops/<module>.rs)", r.func)));
            };
            let (module, kernel) = kernels
                .resolve(target)
                .map_err(|m| nerr(line, format!("{}: {m}", r.func)))?;
            let cuda = kernels
                .resolve_cuda(cuda_target)
                .map_err(|m| nerr(line, format!("{}: {m}", r.func)))?;
            let kind = if pointwise {
                let check = kernels.has(&module, &format!("{kernel}_check"));
                Kind::Pointwise {
                    module,
                    kernel,
                    check,
                }
            } else {
                if !kernels.has(&module, &format!("{kernel}_meta")) {
                    return Err(nerr(line, format!(
                        "{}: structured kernel '{module}::{kernel}' has no `pub fn {kernel}_meta` computing output shapes",
                        r.func
                    )));
                }
                Kind::Structured { module, kernel }
            };
            (kind, Some(cuda))
        }
    };
    let (cpu_dtypes, cuda_dtypes) = match &r.dtypes {
        Some(yaml::BackendDTypes::Shared(d)) => {
            let d = dtype_set(d).map_err(|m| nerr(line, m))?;
            (Some(d.clone()), Some(d))
        }
        Some(yaml::BackendDTypes::PerBackend(m)) => {
            if let Some(k) = m.keys().find(|k| !["CPU", "CUDA"].contains(&k.as_str())) {
                return Err(nerr(
                    line,
                    format!(
                        "{}: dtypes for unknown backend '{k}' (expected CPU, CUDA)",
                        r.func
                    ),
                ));
            }
            let get = |k: &str| -> Result<Option<Vec<String>>, ModelError> {
                m.get(k)
                    .map(|d| dtype_set(d).map_err(|e| nerr(line, e)))
                    .transpose()
            };
            (get("CPU")?, get("CUDA")?)
        }
        None => (None, None),
    };
    let cuda_dtypes = cuda_dtypes
        .or_else(|| cpu_dtypes.clone())
        .unwrap_or_default();
    let dtypes = match cpu_dtypes {
        Some(d) => d,
        None if matches!(kind, Kind::Pointwise { .. } | Kind::Structured { .. }) => {
            return Err(nerr(
                line,
                format!("{}: a CPU kernel needs a `dtypes:` list", r.func),
            ))
        }
        None => ALL_DTYPES.iter().map(|s| s.to_string()).collect(),
    };
    let promote = match r.promote.as_deref().unwrap_or("default") {
        "default" => Promote::Default,
        "int_to_float" => Promote::IntToFloat,
        "bool_to_long" => Promote::BoolToLong,
        "comparison" => Promote::Comparison,
        "self" => Promote::SelfType,
        "sum" => Promote::Sum,
        "same" => Promote::Same,
        s if s.starts_with("arg:") => {
            let name = &s[4..];
            let ok = schema.arguments.iter().any(|a| {
                a.name == name
                    && matches!(
                        ArgKind::of(&a.ty),
                        Ok(ArgKind::ScalarType | ArgKind::OptScalarType)
                    )
            });
            if !ok {
                return Err(nerr(
                    line,
                    format!(
                        "{}: promote: {s} needs an argument '{name}' of type ScalarType or ScalarType?",
                        r.func
                    ),
                ));
            }
            Promote::Arg(name.to_string())
        }
        other => {
            return Err(nerr(
                line,
                format!("unknown promote rule '{other}' (expected default, int_to_float, bool_to_long, comparison, self, same, sum or arg:<name>)"),
            ))
        }
    };
    // `self`, `sum` and `arg:<x>` with a `ScalarType?` read `self`'s dtype.
    let reads_self = match &promote {
        Promote::SelfType | Promote::Sum => true,
        Promote::Arg(name) => schema
            .arguments
            .iter()
            .any(|a| &a.name == name && matches!(ArgKind::of(&a.ty), Ok(ArgKind::OptScalarType))),
        _ => false,
    };
    if reads_self && !has_self {
        return Err(nerr(
            line,
            format!(
                "{}: promote: {} falls back on the dtype of the argument 'self', which the schema lacks",
                r.func,
                r.promote.as_deref().unwrap_or_default()
            ),
        ));
    }
    let sum_dtype = schema
        .arguments
        .iter()
        .any(|a| a.name == "dtype" && matches!(ArgKind::of(&a.ty), Ok(ArgKind::OptScalarType)));
    if promote == Promote::Sum && !sum_dtype {
        return Err(nerr(
            line,
            format!(
                "{}: promote: sum reads an argument `ScalarType? dtype`, which the schema lacks",
                r.func
            ),
        ));
    }
    if r.same_dtype_error.is_some() && promote != Promote::Same {
        return Err(nerr(
            line,
            format!("{}: same_dtype_error needs promote: same", r.func),
        ));
    }
    let tensor_args: Vec<String> = schema
        .arguments
        .iter()
        .filter(|a| !a.is_write() && a.ty.is_tensor_like())
        .map(|a| a.name.clone())
        .collect();
    let operands = r.operands.clone().unwrap_or_else(|| {
        tensor_args
            .iter()
            .filter(|n| !r.fixed.contains_key(*n))
            .cloned()
            .collect()
    });
    for o in operands.iter().chain(r.fixed.keys()) {
        // Outputs as `Op::outputs` names them: `result`, or `result0`, `result1`, ... for
        // unnamed returns of a tuple.
        let is_output = schema
            .returns
            .iter()
            .enumerate()
            .any(|(i, ret)| match &ret.name {
                Some(n) => n == o,
                None if schema.returns.len() == 1 => o == "result",
                None => *o == format!("result{i}"),
            });
        if !is_output && !schema.arguments.iter().any(|a| &a.name == o) {
            return Err(nerr(
                line,
                format!("{}: '{o}' is not an argument or output", r.func),
            ));
        }
    }
    for d in r.fixed.values() {
        if !ALL_DTYPES.contains(&d.as_str()) && d != OPMATH {
            return Err(nerr(
                line,
                format!(
                    "{}: unknown dtype '{d}' in fixed: (expected one of {}, or {OPMATH})",
                    r.func,
                    ALL_DTYPES.join(", ")
                ),
            ));
        }
    }
    let opinfo = match r.opinfo {
        Some(o) => Some(OpInfo {
            samples: o.samples.trim().to_string(),
            reference: o.reference.trim().to_string(),
            dtypes: match &o.dtypes {
                Some(d) => dtype_set(d).map_err(|m| nerr(line, m))?,
                None => dtypes.clone(),
            },
            gradcheck: o.gradcheck.unwrap_or(true),
            variants: o.variants.unwrap_or(true),
            errors: o.errors.unwrap_or(true),
        }),
        None => None,
    };
    if !r.saturate.is_empty() && !matches!(kind, Kind::Pointwise { .. }) {
        return Err(nerr(
            line,
            format!("{}: `saturate:` is for pointwise ops (a structured kernel receives its Scalars as f64)", r.func),
        ));
    }
    if r.opmath && !matches!(kind, Kind::Composite { .. }) {
        return Err(nerr(
            line,
            format!("{}: `opmath: true` is for CompositeImplicitAutograd ops (a kernel picks its own accumulation type)", r.func),
        ));
    }
    if opinfo.is_none() && r.skip_opinfo.as_deref().is_none_or(|s| s.trim().is_empty()) {
        return Err(nerr(
            line,
            format!(
                "{}: no `opinfo:` entry and no `skip_opinfo: \"<reason>\"`",
                r.func
            ),
        ));
    }
    let vectorized = match r.vectorized.as_deref() {
        None => None,
        Some(spec) => Some(vectorized_entry(&r.func, line, spec, &kind, kernels)?),
    };
    let op = Op {
        schema,
        line,
        rust,
        variants,
        kind,
        dtypes,
        cuda,
        cuda_dtypes,
        promote,
        same_dtype_error: r.same_dtype_error.clone(),
        operands,
        fixed: r.fixed,
        opinfo,
        skip_opinfo: r.skip_opinfo,
        derivative: None,
        non_differentiable: false,
        doc: r.doc,
        tags: r.tags,
        opmath: r.opmath,
        saturate: r.saturate,
        vectorized,
    };
    check_sources(&op, &r.func, kernels)?;
    check_opinfo(&op, &r.func, kernels)?;
    Ok(op)
}

/// Resolves `vectorized: <module>::<stem>` to the slice kernels that exist.
fn vectorized_entry(
    func: &str,
    line: usize,
    spec: &str,
    kind: &Kind,
    kernels: &KernelIndex,
) -> Result<Vectorized, ModelError> {
    if !matches!(kind, Kind::Pointwise { .. }) {
        return Err(nerr(
            line,
            format!("{func}: `vectorized:` names slice kernels of a pointwise op (tags: [pointwise] with a CPU kernel)"),
        ));
    }
    let Some((module, stem)) = spec
        .trim()
        .split_once("::")
        .filter(|(m, s)| is_rust_ident(m) && is_rust_ident(s))
    else {
        return Err(nerr(
            line,
            format!("{func}: vectorized '{spec}' must be written as <module>::<stem>, naming `<stem>_f32` and/or `<stem>_f64` in kernels/src/cpu/<module>.rs"),
        ));
    };
    let elems: Vec<String> = ["f32", "f64"]
        .into_iter()
        .filter(|e| kernels.has(module, &format!("{stem}_{e}")))
        .map(str::to_string)
        .collect();
    if elems.is_empty() {
        return Err(nerr(
            line,
            format!("{func}: vectorized '{spec}' names no slice kernel: kernels/src/cpu/{module}.rs has neither `pub fn {stem}_f32` nor `pub fn {stem}_f64`"),
        ));
    }
    let inplace = elems
        .iter()
        .filter(|e| kernels.has(module, &format!("{stem}_{e}_")))
        .cloned()
        .collect();
    Ok(Vectorized {
        module: module.to_string(),
        stem: stem.to_string(),
        elems,
        inplace,
    })
}

/// The functions `op` names in Rust and CUDA sources take what the generated code passes.
fn check_sources(op: &Op, func: &str, kernels: &KernelIndex) -> Result<(), ModelError> {
    let line = op.line;
    let args = op.args();
    match &op.kind {
        Kind::Pointwise {
            module,
            kernel,
            check,
        } => {
            if let Some(a) = args.iter().find(|a| !pointwise_kind(a.kind)) {
                return Err(nerr(
                    line,
                    format!(
                        "{func}: a pointwise kernel takes tensors, Scalar, Scalar?, float and str arguments; argument `{}` is {:?} (drop the pointwise tag and write a structured kernel)",
                        a.name, a.kind
                    ),
                ));
            }
            if let Some(s) = op.saturate.iter().find(|s| {
                !args.iter().any(|a| {
                    &a.name == *s && matches!(a.kind, ArgKind::Scalar | ArgKind::OptScalar)
                })
            }) {
                return Err(nerr(
                    line,
                    format!("{func}: `saturate:` names `{s}`, which is not a Scalar or Scalar? argument"),
                ));
            }
            let outputs = op.outputs();
            if let Some((a, _)) = op.fixed.iter().find(|(_, d)| d.as_str() == OPMATH) {
                return Err(nerr(
                    line,
                    format!(
                        "{func}: `{a}: opmath` needs a structured kernel; a pointwise kernel computes every operand in `T`'s compute type already"
                    ),
                ));
            }
            if let Some(o) = op.fixed.keys().find(|k| outputs.contains(k)) {
                return Err(nerr(
                    line,
                    format!(
                        "{func}: a pointwise op's output `{o}` takes the compute dtype (bool with promote: comparison); `fixed:` applies to its inputs only"
                    ),
                ));
            }
            let call = contract::pointwise_kernel(op, module, kernel);
            check_call(line, func, &call, kernels.cpu_signature(module, kernel))?;
            if let Some(v) = &op.vectorized {
                let tensors: Vec<&Arg> =
                    args.iter().filter(|a| a.kind == ArgKind::Tensor).collect();
                let unary_same = matches!(tensors.as_slice(), [t] if !op.fixed.contains_key(&t.name))
                    && op.promote != Promote::Comparison;
                if !unary_same {
                    return Err(nerr(
                        line,
                        format!("{func}: `vectorized:` slice kernels serve ops with one tensor argument whose result has its dtype (not fixed, not promote: comparison)"),
                    ));
                }
                for elem in &v.elems {
                    let name = v.name(elem);
                    let call = contract::slice_kernel(op, &v.module, &name, elem, false);
                    check_call(line, func, &call, kernels.cpu_signature(&v.module, &name))?;
                    if let Some(name) = v.inplace_name(elem) {
                        let call = contract::slice_kernel(op, &v.module, &name, elem, true);
                        check_call(line, func, &call, kernels.cpu_signature(&v.module, &name))?;
                    }
                }
            }
            if *check {
                let name = format!("{kernel}_check");
                let call = contract::pointwise_check(op, module, kernel);
                check_call(line, func, &call, kernels.cpu_signature(module, &name))?;
            }
        }
        Kind::Structured { module, kernel } => {
            if let Some(a) = args.iter().find(|a| a.kind == ArgKind::OptTensorList) {
                return Err(nerr(
                    line,
                    format!(
                        "{func}: a structured kernel cannot take a list of optional tensors (`{}`): absent entries and bool masks change the output's shape with the data; write the op as CompositeExplicitAutograd over kernels (as `index.Tensor` is)",
                        a.name
                    ),
                ));
            }
            if let Some(a) = args
                .iter()
                .find(|a| a.kind == ArgKind::TensorList && op.fixed.contains_key(&a.name))
            {
                return Err(nerr(
                    line,
                    format!(
                        "{func}: `fixed:` applies to tensors and outputs, not to the tensor list `{}`",
                        a.name
                    ),
                ));
            }
            let call = contract::structured_kernel(op, module, kernel);
            check_call(line, func, &call, kernels.cpu_signature(module, kernel))?;
            let meta = format!("{kernel}_meta");
            let call = contract::structured_meta(op, module, kernel);
            check_call(line, func, &call, kernels.cpu_signature(module, &meta))?;
        }
        Kind::Composite { path } | Kind::Explicit { path } => {
            let role = if matches!(op.kind, Kind::Composite { .. }) {
                "CompositeImplicitAutograd function"
            } else {
                "CompositeExplicitAutograd function"
            };
            let call = contract::rust_op(op, role, path);
            let sig = kernels.rust_ops.as_ref().and_then(|o| o.get(path));
            check_call(line, func, &call, sig)?;
        }
    }
    let Some((module, name)) = &op.cuda else {
        return Ok(());
    };
    if !kernels.has_cuda_sources() {
        return Ok(());
    }
    let device = kernels.device_fns(module, name);
    if matches!(op.kind, Kind::Pointwise { .. }) {
        if device.is_empty() {
            return Err(nerr(
                line,
                format!(
                    "{func}: CUDA kernel `{module}::{name}` of a pointwise op must be a `__device__` scalar function in kernels/cuda/{module}.cuh; src/backends/cuda/ops/{module}.rs has a launcher of that name, which serves non-pointwise ops"
                ),
            ));
        }
        let n = args.len();
        let known: Vec<&crate::kernels_index::DeviceFn> =
            device.iter().filter(|d| d.arity.is_some()).collect();
        if !known.is_empty() && !known.iter().any(|d| d.arity == Some(n)) {
            let found: Vec<String> = known
                .iter()
                .map(|d| {
                    format!(
                        "{} parameter(s) at {}",
                        d.arity.unwrap_or_default(),
                        d.location
                    )
                })
                .collect();
            return Err(nerr(
                line,
                format!(
                    "{func}: CUDA kernel `{module}::{name}` does not fit the schema: the generated kernel calls it with {n} argument(s) ({}), but it takes {}",
                    args.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
                    found.join(", ")
                ),
            ));
        }
    } else {
        let Some(sig) = kernels.cuda_signature(module, name) else {
            return Err(nerr(
                line,
                format!(
                    "{func}: CUDA kernel `{module}::{name}` of a non-pointwise op must be a launcher `pub fn {name}` in src/backends/cuda/ops/{module}.rs; kernels/cuda/{module}.cuh has a `__device__` function of that name, which serves pointwise ops"
                ),
            ));
        };
        let call = contract::cuda_launcher(op, module, name);
        check_call(line, func, &call, Some(sig))?;
    }
    Ok(())
}

/// The OpInfo entry names sample sets and references that exist and fit.
fn check_opinfo(op: &Op, func: &str, kernels: &KernelIndex) -> Result<(), ModelError> {
    let Some(info) = &op.opinfo else {
        return Ok(());
    };
    let line = op.line;
    if !op.variants.function && !op.variants.method {
        return Err(nerr(
            line,
            format!("{func}: the OpInfo tests call the op through its function or method; add one of them to variants"),
        ));
    }
    if !is_rust_ident(&info.samples) {
        return Err(nerr(
            line,
            format!(
                "{func}: opinfo samples '{}' must name a function in tests/opinfo/samples.rs",
                info.samples
            ),
        ));
    }
    if let Some(samples) = &kernels.samples {
        let check = |name: &str, call: contract::Call, why: &str| -> Result<(), ModelError> {
            match samples.get(name) {
                Some(sig) => check_call(line, func, &call, Some(sig)),
                None => Err(nerr(
                    line,
                    format!(
                        "{func}: opinfo {why}, but tests/opinfo/samples.rs has no `pub fn {name}`{}",
                        did_you_mean(name, samples.keys())
                    ),
                )),
            }
        };
        let s = &info.samples;
        check(
            s,
            contract::opinfo_fn(
                "sample set",
                &format!("samples::{s}"),
                &[("dtype", "DType", "the dtype to make samples in")],
                "Vec<Sample>",
            ),
            &format!("samples: {s}"),
        )?;
        if info.errors {
            let e = format!("{s}_errors");
            check(
                &e,
                contract::opinfo_fn("error samples", &format!("samples::{e}"), &[], "Vec<ErrorSample>"),
                &format!("samples: {s} needs `{e}()`, the inputs the op must reject (or `errors: false` when no input can make it fail)"),
            )?;
        }
    }
    let args = op.args();
    if matches!(op.kind, Kind::Pointwise { .. }) {
        let closure = match syn::parse_str::<syn::Expr>(&info.reference) {
            Ok(syn::Expr::Closure(c)) => c,
            Ok(_) => {
                return Err(nerr(
                    line,
                    format!(
                        "{func}: the ref of a pointwise op is a float64 closure over its arguments, like \"|a, b| a * b\"; found '{}'",
                        info.reference
                    ),
                ))
            }
            Err(e) => {
                return Err(nerr(
                    line,
                    format!("{func}: ref '{}' is not a Rust closure: {e}", info.reference),
                ))
            }
        };
        if closure.inputs.len() != args.len() {
            return Err(nerr(
                line,
                format!(
                    "{func}: ref closure takes {} parameter(s), but the op has {} argument(s) ({}), which the harness passes in order",
                    closure.inputs.len(),
                    args.len(),
                    args.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        return Ok(());
    }
    if !is_rust_ident(&info.reference) {
        return Err(nerr(
            line,
            format!(
                "{func}: the ref of a non-pointwise op names a float64 function in tests/opinfo/refs.rs; found '{}'",
                info.reference
            ),
        ));
    }
    if let Some(refs) = &kernels.refs {
        let name = &info.reference;
        let Some(sig) = refs.get(name) else {
            return Err(nerr(
                line,
                format!(
                    "{func}: opinfo ref: {name}, but tests/opinfo/refs.rs has no `pub fn {name}`{}",
                    did_you_mean(name, refs.keys())
                ),
            ));
        };
        let call = contract::opinfo_fn(
            "reference",
            &format!("refs::{name}"),
            &[("s", "&Sample", "the sample")],
            "Vec<RefTensor>",
        );
        check_call(line, func, &call, Some(sig))?;
    }
    Ok(())
}

/// Reads, parses and validates both YAML texts against the kernel index. Every entry is
/// checked: the error is the list of all mistakes, in file order, each with its line.
pub fn build(native: &str, derivs: &str, kernels: &KernelIndex) -> Result<Model, Vec<ModelError>> {
    let raw: Vec<RawOp> = serde_yaml_ng::from_str(native).map_err(|e| {
        vec![nerr(
            e.location().map(|l| l.line()).unwrap_or(0),
            format!("invalid YAML: {e}"),
        )]
    })?;
    let lines = yaml::item_lines(native);
    let raw_d: Vec<RawDerivative> = serde_yaml_ng::from_str::<Option<Vec<RawDerivative>>>(derivs)
        .map_err(|e| {
            vec![derr(
                e.location().map(|l| l.line()).unwrap_or(0),
                format!("invalid YAML: {e}"),
            )]
        })?
        .unwrap_or_default();
    let dlines = yaml::item_lines(derivs);

    let mut errors = Vec::new();
    let mut ops = Vec::new();
    // `name.overload` of entries that failed: their derivative entries are not checked (the
    // mistake is reported once).
    let mut failed: Vec<String> = Vec::new();
    let mut seen_rust = BTreeSet::new();
    for (i, r) in raw.into_iter().enumerate() {
        let line = lines.get(i).copied().unwrap_or(0);
        let func = r.func.clone();
        match op_entry(r, line, kernels, &mut seen_rust) {
            Ok(op) => ops.push(op),
            Err(e) => {
                errors.push(e);
                failed.push(full_name_of(&func));
            }
        }
    }

    // Derivatives: attach to ops, name nodes like PyTorch (per base name, numbered in order).
    let mut counters: BTreeMap<String, usize> = BTreeMap::new();
    let mut bad_derivative: BTreeSet<usize> = BTreeSet::new();
    for (i, d) in raw_d.into_iter().enumerate() {
        let line = dlines.get(i).copied().unwrap_or(0);
        let schema = match FunctionSchema::parse(&d.name) {
            Ok(s) => s,
            Err(e) => {
                errors.push(derr(line, format!("malformed schema '{}': {e}", d.name)));
                continue;
            }
        };
        let Some(index) = ops.iter().position(|o| o.schema == schema) else {
            if !failed.contains(&full_name_of(&d.name)) {
                errors.push(derr(
                    line,
                    format!("no operator '{}' in native_functions.yaml", d.name),
                ));
            }
            continue;
        };
        if let Err(e) = attach_derivative(&mut ops[index], &d, derivs, line, &mut counters) {
            errors.push(e);
            bad_derivative.insert(index);
        }
    }

    for (i, op) in ops.iter().enumerate() {
        let takes_tensor = op.args().iter().any(|a| a.kind.is_tensor());
        let explicit = !matches!(op.kind, Kind::Composite { .. });
        let float_capable = op.dtypes.iter().any(|d| d.starts_with('f') || d == "bf16")
            || op.promote == Promote::IntToFloat;
        if explicit
            && takes_tensor
            && float_capable
            && op.has_float_output()
            && op.derivative.is_none()
            && !op.non_differentiable
            && !bad_derivative.contains(&i)
        {
            errors.push(nerr(op.line, format!(
                "{} is differentiable (it takes and returns floating tensors) but derivatives.yaml has no entry for it; add one, or an entry with `non_differentiable: true`",
                op.full_name()
            )));
        }
    }
    if errors.is_empty() {
        Ok(Model { ops })
    } else {
        errors.sort_by_key(|e| (e.file != "native_functions.yaml", e.line));
        Err(errors)
    }
}

/// `add.Tensor` of a schema string, read even when the rest does not parse.
fn full_name_of(func: &str) -> String {
    func.split('(')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Checks derivatives.yaml entry `d` (at `line`) and attaches it to `op`.
fn attach_derivative(
    op: &mut Op,
    d: &RawDerivative,
    text: &str,
    line: usize,
    counters: &mut BTreeMap<String, usize>,
) -> Result<(), ModelError> {
    if op.derivative.is_some() || op.non_differentiable {
        return Err(derr(line, format!("second entry for '{}'", d.name)));
    }
    if matches!(op.kind, Kind::Composite { .. }) {
        return Err(derr(line, format!(
            "'{}' is CompositeImplicitAutograd: its gradient comes from the ops it calls, so it takes no derivative entry",
            d.name
        )));
    }
    let mut known: BTreeSet<String> = op.args().iter().map(|a| a.name.clone()).collect();
    known.extend(op.outputs());
    let mut formulas = Vec::new();
    let mut non_differentiable = false;
    for (key, value) in &d.formulas {
        if key == "non_differentiable" {
            non_differentiable = true;
            continue;
        }
        let at = yaml::key_line(text, line, key);
        let formula = match value {
            serde_yaml_ng::Value::String(s) => s.clone(),
            _ => return Err(derr(at, format!("formula for '{key}' must be a string"))),
        };
        // `input, weight, bias: f(...)` gives several inputs' gradients as one tuple.
        let names: Vec<&str> = key.split(',').map(str::trim).collect();
        for name in &names {
            let Some(arg) = op.args().into_iter().find(|a| a.name == *name) else {
                return Err(derr(
                    at,
                    format!(
                        "formula for '{key}', but {} has no argument named '{name}'",
                        d.name
                    ),
                ));
            };
            if !arg.kind.is_tensor() {
                return Err(derr(
                    at,
                    format!("formula for '{key}': '{name}' is not a tensor argument"),
                ));
            }
            if names.len() > 1 && arg.kind == ArgKind::TensorList {
                return Err(derr(
                    at,
                    format!(
                        "formula for '{key}': the tensor list '{name}' needs a formula of its own"
                    ),
                ));
            }
            let twice = names.iter().filter(|n| *n == name).count() > 1
                || formulas
                    .iter()
                    .any(|f: &Formula| f.inputs.iter().any(|i| i == name));
            if twice {
                return Err(derr(
                    at,
                    format!("formula for '{key}': '{name}' has another formula"),
                ));
            }
            if arg.kind == ArgKind::OptTensorList {
                return Err(derr(
                    at,
                    format!("formula for '{name}', a `Tensor?[]` argument: kiln gives no gradient to lists of optional tensors (PyTorch's are integer indices); drop the formula"),
                ));
            }
        }
        let parsed = formula::parse(key, &formula, at, &known).map_err(|m| derr(at, m))?;
        let opt_lists: Vec<String> = op
            .args()
            .into_iter()
            .filter(|a| a.kind == ArgKind::OptTensorList)
            .map(|a| a.name)
            .collect();
        if let Some((recv, method)) = parsed
            .uses
            .metas
            .iter()
            .find(|(r, _)| opt_lists.contains(r))
        {
            return Err(derr(
                at,
                format!("formula for '{key}' reads `{recv}.{method}()`, but `{recv}` is a `Tensor?[]`, whose metadata is not saved; read `{recv}` itself (a `Vec<Option<Tensor>>`)"),
            ));
        }
        formulas.push(parsed);
    }
    if non_differentiable {
        op.non_differentiable = true;
        return Ok(());
    }
    let base = op.schema.name.trim_end_matches('_').to_string();
    let n = counters.entry(base.clone()).or_insert(0);
    op.derivative = Some(Derivative {
        line,
        node: format!("{}Backward{}", camel(&base), n),
        formulas,
    });
    *n += 1;
    Ok(())
}
