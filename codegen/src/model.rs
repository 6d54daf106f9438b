//! The validated model: every operator with its schema, kind, dtypes, derivative and OpInfo.
//! All YAML errors are raised here, once, with the file and line. Generators only read it.

use crate::formula::{self, Formula};
use crate::kernels_index::KernelIndex;
use crate::schema::FunctionSchema;
use crate::types::ArgKind;
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

/// How the computation dtype and output dtype follow from the inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Promote {
    /// `result_type` of the operands.
    Default,
    /// Like `Default`, then integers and bool become float32.
    IntToFloat,
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
}

/// Argument info used everywhere.
#[derive(Debug, Clone)]
pub struct Arg {
    pub name: String,
    pub kind: ArgKind,
    pub default: Option<String>,
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
            .filter(|a| d.formulas.iter().any(|f| f.input == a.name))
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
            Some(d) => d.starts_with('f') || d == "bf16",
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

/// Reads, parses and validates both YAML texts against the kernel index.
pub fn build(native: &str, derivs: &str, kernels: &KernelIndex) -> Result<Model, ModelError> {
    let nerr = |line: usize, message: String| ModelError {
        file: "native_functions.yaml".into(),
        line,
        message,
    };
    let derr = |line: usize, message: String| ModelError {
        file: "derivatives.yaml".into(),
        line,
        message,
    };

    let raw: Vec<RawOp> = serde_yaml_ng::from_str(native).map_err(|e| {
        nerr(
            e.location().map(|l| l.line()).unwrap_or(0),
            format!("invalid YAML: {e}"),
        )
    })?;
    let lines = yaml::item_lines(native);
    let raw_d: Vec<RawDerivative> = serde_yaml_ng::from_str::<Option<Vec<RawDerivative>>>(derivs)
        .map_err(|e| {
            derr(
                e.location().map(|l| l.line()).unwrap_or(0),
                format!("invalid YAML: {e}"),
            )
        })?
        .unwrap_or_default();
    let dlines = yaml::item_lines(derivs);

    let mut ops = Vec::new();
    let mut seen_rust = BTreeSet::new();
    for (i, r) in raw.into_iter().enumerate() {
        let line = lines.get(i).copied().unwrap_or(0);
        let schema = FunctionSchema::parse(&r.func)
            .map_err(|e| nerr(line, format!("malformed schema '{}': {e}", r.func)))?;
        for a in &schema.arguments {
            if !a.is_write() {
                ArgKind::of(&a.ty)
                    .map_err(|m| nerr(line, format!("{}: argument '{}': {m}", r.func, a.name)))?;
            }
        }
        let rust = r.rust.clone().unwrap_or_else(|| default_rust_name(&schema));
        if !seen_rust.insert(rust.clone()) {
            return Err(nerr(
                line,
                format!(
                    "two operators would both be named '{rust}' in Rust; give one a `rust:` name"
                ),
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
                        format!(
                            "unknown variant '{other}' (expected function, method, inplace, out)"
                        ),
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
        let pointwise = r.tags.iter().any(|t| t == "pointwise");
        let (kind, cuda) = match composite {
            Some((key, target)) if key == "CompositeExplicitAutograd" => (
                Kind::Explicit {
                    path: target.clone(),
                },
                None,
            ),
            Some((_, target)) => (
                Kind::Composite {
                    path: target.clone(),
                },
                None,
            ),
            None => {
                let Some(target) = r.dispatch.get("CPU") else {
                    return Err(nerr(line, format!("{}: dispatch needs CPU (and CUDA), or one of CompositeExplicitAutograd, CompositeImplicitAutograd", r.func)));
                };
                let Some(cuda_target) = r.dispatch.get("CUDA") else {
                    return Err(nerr(line, format!("{}: no CUDA kernel: add `CUDA: <module>::<fn>` to dispatch (a `__device__` fn in kernels/cuda/<module>.cuh for a pointwise op, else a launcher in src/cuda/ops/<module>.rs)", r.func)));
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
            "comparison" => Promote::Comparison,
            "self" => Promote::SelfType,
            "sum" => Promote::Sum,
            "same" => Promote::Same,
            s if s.starts_with("arg:") => Promote::Arg(s[4..].to_string()),
            other => return Err(nerr(line, format!("unknown promote rule '{other}'"))),
        };
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
            let is_output = schema
                .returns
                .iter()
                .any(|ret| ret.name.as_deref() == Some(o.as_str()))
                || (o == "result" && schema.returns.len() == 1);
            if !is_output && !schema.arguments.iter().any(|a| &a.name == o) {
                return Err(nerr(
                    line,
                    format!("{}: '{o}' is not an argument or output", r.func),
                ));
            }
        }
        for d in r.fixed.values() {
            if !ALL_DTYPES.contains(&d.as_str()) {
                return Err(nerr(line, format!("unknown dtype '{d}'")));
            }
        }
        let opinfo = match r.opinfo {
            Some(o) => Some(OpInfo {
                samples: o.samples,
                reference: o.reference,
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
        ops.push(Op {
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
        });
    }

    // Derivatives: attach to ops, name nodes like PyTorch (per base name, numbered in order).
    let mut counters: BTreeMap<String, usize> = BTreeMap::new();
    for (i, d) in raw_d.into_iter().enumerate() {
        let line = dlines.get(i).copied().unwrap_or(0);
        let schema = FunctionSchema::parse(&d.name)
            .map_err(|e| derr(line, format!("malformed schema '{}': {e}", d.name)))?;
        let Some(op) = ops.iter_mut().find(|o| o.schema == schema) else {
            return Err(derr(
                line,
                format!("no operator '{}' in native_functions.yaml", d.name),
            ));
        };
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
        for (key, value) in &d.formulas {
            if key == "non_differentiable" {
                op.non_differentiable = true;
                continue;
            }
            let text = match value {
                serde_yaml_ng::Value::String(s) => s.clone(),
                _ => return Err(derr(line, format!("formula for '{key}' must be a string"))),
            };
            let Some(arg) = op.args().into_iter().find(|a| &a.name == key) else {
                return Err(derr(
                    line,
                    format!(
                        "formula for '{key}', but {} has no argument named '{key}'",
                        d.name
                    ),
                ));
            };
            if !arg.kind.is_tensor() {
                return Err(derr(
                    line,
                    format!("formula for '{key}', which is not a tensor argument"),
                ));
            }
            formulas.push(formula::parse(key, &text, &known).map_err(|m| derr(line, m))?);
        }
        if !op.non_differentiable {
            let base = op.schema.name.trim_end_matches('_').to_string();
            let n = counters.entry(base.clone()).or_insert(0);
            op.derivative = Some(Derivative {
                line,
                node: format!("{}Backward{}", camel(&base), n),
                formulas,
            });
            *n += 1;
        }
    }

    for op in &ops {
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
        {
            return Err(nerr(op.line, format!(
                "{} is differentiable (it takes and returns floating tensors) but derivatives.yaml has no entry for it; add one, or an entry with `non_differentiable: true`",
                op.full_name()
            )));
        }
    }
    Ok(Model { ops })
}
