//! The validated model: every operator with its schema, kind, backend table, dtypes,
//! derivative and OpInfo. All YAML errors are raised here, once, with the file and line;
//! dtypes, tags, dispatch keys and promotion rules are enums from here on. Generators only
//! read the model; the model never imports a generator.
//!
//! - [`dtype`]: [`DType`] and the `fixed:` dtype [`Fixed`].
//! - [`backend`]: the dispatch table ([`BackendKey`] → [`BackendKernel`]).
//! - [`op`]: [`Op`] and its enums ([`Kind`], [`Tag`], [`Promote`]).
//! - `entry`: one `native_functions.yaml` entry → [`Op`], a function per part of the entry.
//! - `validate`: the op against the sources it names (through [`contract`]).
//! - `derivative`: derivatives.yaml entries, attached to their ops.
//! - `error`: [`ModelError`] and the helpers validation shares.

pub mod autocast;
pub mod backend;
pub mod contract;
mod derivative;
pub mod dtype;
mod entry;
mod error;
pub mod op;
mod validate;

pub use autocast::{Autocast, CastPolicy};
pub use backend::{BackendKernel, BackendKey, Backends, DispatchKey, KernelRef};
pub use dtype::{DType, Fixed};
pub use error::ModelError;
pub use op::{Arg, Derivative, Kind, Model, Op, OpInfo, Promote, Tag, Variants, Vectorized};

use crate::kernels_index::KernelIndex;
use crate::schema::FunctionSchema;
use crate::yaml::{self, RawDerivative, RawOp};
use error::{derr, nerr};
use std::collections::{BTreeMap, BTreeSet};

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
        match entry::op_entry(r, line, kernels, &mut seen_rust) {
            Ok(op) => ops.push(op),
            Err(e) => {
                errors.push(e.at_key_line(native));
                failed.push(full_name_of(&func));
            }
        }
    }

    // What formulas may call, when the sources were read: the generated API and theirs.
    // Every name an entry took, built or not, and the bare names of failed entries: the
    // failed ones' calls pass, their mistake already reported.
    let names = seen_rust.iter().map(String::as_str);
    let names = names.chain(
        failed
            .iter()
            .map(|f| f.split_once('.').map_or(f.as_str(), |(name, _)| name)),
    );
    let callables = kernels
        .formula_scope
        .as_ref()
        .map(|scope| derivative::Callables::new(scope, &ops, names));

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
        if let Err(e) = derivative::attach_derivative(
            &mut ops[index],
            &d,
            derivs,
            line,
            &mut counters,
            callables.as_ref(),
        ) {
            errors.push(e);
            bad_derivative.insert(index);
        }
    }

    for (i, op) in ops.iter().enumerate() {
        let takes_tensor = op.args().iter().any(|a| a.kind.is_tensor());
        let explicit = !matches!(op.kind, Kind::Composite { .. });
        let float_capable =
            op.dtypes.iter().any(|d| d.is_floating()) || op.promote == Promote::IntToFloat;
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
        errors.sort_by_key(|e| (e.file != crate::paths::NATIVE_FUNCTIONS, e.line));
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
