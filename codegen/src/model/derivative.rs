//! derivatives.yaml entries: checked against their op and attached to it as [`Derivative`].

use super::error::{derr, ModelError};
use super::op::{Derivative, Kind, Op};
use crate::formula::{self, Formula};
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

/// Checks derivatives.yaml entry `d` (at `line`) and attaches it to `op`.
pub(super) fn attach_derivative(
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
