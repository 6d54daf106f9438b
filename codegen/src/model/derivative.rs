//! derivatives.yaml entries: checked against their op and attached to it as [`Derivative`].

use super::error::{derr, did_you_mean, ModelError};
use super::op::{Derivative, Kind, Op};
use crate::formula::{self, Call, Formula};
use crate::kernels_index::FormulaScope;
use crate::types::ArgKind;
use crate::yaml::{self, RawDerivative};
use std::collections::{BTreeMap, BTreeSet};

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

/// Every name a formula may call: the generated API and the hand-written [`FormulaScope`].
pub(super) struct Callables {
    /// `Tensor` methods and associated fns, generated or hand-written.
    tensor: BTreeSet<String>,
    /// [`formula::STD_METHODS`].
    std_methods: BTreeSet<String>,
    /// What a formula calls unqualified: backward helpers and generated functions.
    free: BTreeSet<String>,
    /// What `crate::<name>` reaches: generated functions and the crate root's own.
    crate_fns: BTreeSet<String>,
    /// The names of entries that failed validation and of their forms, accepted anywhere:
    /// their mistake is reported once, not again at each formula calling them.
    failed: BTreeSet<String>,
}

impl Callables {
    /// `failed`: Rust names (or bare schema names) of native_functions.yaml entries, of
    /// which those not among `ops` failed.
    pub(super) fn new<'a>(
        scope: &FormulaScope,
        ops: &[Op],
        failed: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut tensor = scope.tensor_fns.clone();
        let mut functions = BTreeSet::new();
        for op in ops {
            tensor.extend(op.method_names());
            functions.extend(op.function_names());
        }
        let mut free = scope.helpers.clone();
        free.extend(functions.iter().cloned());
        let mut crate_fns = scope.crate_fns.clone();
        crate_fns.extend(functions);
        let failed = failed
            .into_iter()
            .filter(|f| !ops.iter().any(|o| o.rust == *f))
            .flat_map(|f| ["", "_", "_with", "_with_", "_out"].map(|s| format!("{f}{s}")))
            .collect();
        Callables {
            tensor,
            std_methods: formula::STD_METHODS.iter().map(|m| m.to_string()).collect(),
            free,
            crate_fns,
            failed,
        }
    }

    /// Checks every call of `f` (formula for `key`) against the API.
    fn check(&self, key: &str, f: &Formula) -> Result<(), String> {
        for call in formula::calls(&f.expr) {
            let (name, among, what) = match &call {
                Call::Method(n) => (
                    n,
                    vec![&self.tensor, &self.std_methods],
                    "neither a `Tensor` method (generated from native_functions.yaml, or `pub` in an `impl Tensor` under src/) nor a method of the other types formulas use (`STD_METHODS` in codegen/src/formula.rs)",
                ),
                Call::Function(n) => (
                    n,
                    vec![&self.free],
                    "neither a backward helper (`pub fn` in src/ops/backward/) nor a generated function",
                ),
                Call::Crate(n) => (
                    n,
                    vec![&self.crate_fns],
                    "neither a generated function nor a function of the crate root",
                ),
                Call::Tensor(n) => (
                    n,
                    vec![&self.tensor],
                    "not a `Tensor` function (generated from native_functions.yaml, or `pub` in an `impl Tensor` under src/)",
                ),
            };
            if self.failed.contains(name) || among.iter().any(|s| s.contains(name)) {
                continue;
            }
            return Err(format!(
                "formula for '{key}' calls `{call}`, which is {what}{}",
                suggest(name, among.into_iter().flatten())
            ));
        }
        Ok(())
    }
}

/// [`did_you_mean`], first among the names that start as `name` does: a typo is rarer in
/// the first letter, and `mull` is one edit from both `mul` and `full`.
fn suggest<'a>(name: &str, names: impl Iterator<Item = &'a String> + Clone) -> String {
    let first = name.chars().next();
    let hint = did_you_mean(name, names.clone().filter(|n| n.chars().next() == first));
    if hint.is_empty() {
        did_you_mean(name, names)
    } else {
        hint
    }
}

/// Checks derivatives.yaml entry `d` (at `line`) and attaches it to `op`; `callables`, when
/// the sources were read, checks what its formulas call.
pub(super) fn attach_derivative(
    op: &mut Op,
    d: &RawDerivative,
    text: &str,
    line: usize,
    counters: &mut BTreeMap<String, usize>,
    callables: Option<&Callables>,
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
        if let Some(c) = callables {
            c.check(key, &parsed).map_err(|m| derr(at, m))?;
        }
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
