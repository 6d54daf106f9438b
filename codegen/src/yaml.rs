//! The two YAML files as written, before validation. Only `model` reads these.

use serde::Deserialize;
use std::collections::BTreeMap;

/// One entry of `native_functions.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOp {
    pub func: String,
    #[serde(default)]
    pub variants: Option<String>,
    #[serde(default)]
    pub rust: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub dispatch: BTreeMap<String, String>,
    #[serde(default)]
    pub dtypes: Option<BackendDTypes>,
    /// Pointwise ops only: `<module>::<stem>`, CPU slice kernels `<stem>_f32` / `<stem>_f64`
    /// in `kernels/src/cpu/<module>.rs` that map a whole slice (vectorised), used instead of
    /// the scalar kernel for those dtypes (the f32 one also for f16 and bf16).
    #[serde(default)]
    pub vectorized: Option<String>,
    #[serde(default)]
    pub promote: Option<String>,
    #[serde(default)]
    pub operands: Option<Vec<String>>,
    #[serde(default)]
    pub fixed: BTreeMap<String, String>,
    #[serde(default)]
    pub opinfo: Option<RawOpInfo>,
    #[serde(default)]
    pub skip_opinfo: Option<String>,
    /// With `promote: same`: PyTorch's message when operands (or `out=`) differ in dtype.
    #[serde(default)]
    pub same_dtype_error: Option<String>,
    #[serde(default)]
    pub doc: Option<String>,
    /// Composite ops only: f16/bf16 inputs are computed in float32 and floating outputs cast
    /// back (PyTorch's "opmath" type), instead of rounding after every inner op.
    #[serde(default)]
    pub opmath: bool,
    /// Pointwise ops only: Scalar bounds converted to an integer compute dtype by saturating
    /// at its range rather than wrapping (`clamp(uint8, min=-1)` clamps at 0, as PyTorch).
    #[serde(default)]
    pub saturate: Vec<String>,
    /// The cast an autocast region applies at the op's entry: a policy for CPU and CUDA
    /// alike, or one per device type (see `model::autocast`).
    #[serde(default)]
    pub autocast: Option<RawAutocast>,
    /// Structured ops only: tensor arguments whose layout the outputs follow. When one of
    /// them is channels-last (`suggest_memory_format`), every CPU output of its rank is
    /// allocated channels-last too, as PyTorch's convolution, pooling and batch norm do.
    #[serde(default)]
    pub memory_format: Vec<String>,
}

/// An entry's `autocast:`: `lower`, or `{CPU: promote, CUDA: none}`.
#[derive(Debug, Deserialize, Clone)]
#[serde(untagged)]
pub enum RawAutocast {
    Shared(String),
    PerDevice(BTreeMap<String, String>),
}

/// A dtype set: a named group (`all`, `numeric`, `floating`, `integral`) or a list.
#[derive(Debug, Deserialize, Clone)]
#[serde(untagged)]
pub enum DTypes {
    Group(String),
    List(Vec<String>),
}

/// An op's `dtypes:`: one set for every backend, or one per backend (`{CPU: all, CUDA:
/// floating}`), as torchgen's BackendIndex keeps per-backend kernels.
#[derive(Debug, Deserialize, Clone)]
#[serde(untagged)]
pub enum BackendDTypes {
    Shared(DTypes),
    PerBackend(BTreeMap<String, DTypes>),
}

/// The `opinfo:` block of an entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOpInfo {
    pub samples: String,
    #[serde(rename = "ref")]
    pub reference: String,
    /// One list for every device, or one per backend (`{CPU: [f32, i64], CUDA: floating}`,
    /// PyTorch's `dtypesIfCUDA`): a device missing from the map takes CPU's.
    #[serde(default)]
    pub dtypes: Option<BackendDTypes>,
    #[serde(default)]
    pub gradcheck: Option<bool>,
    #[serde(default)]
    pub variants: Option<bool>,
    /// `false` for ops no input can make fail (no error test is generated).
    #[serde(default)]
    pub errors: Option<bool>,
}

/// One entry of `derivatives.yaml`: `name:` plus one formula per input (or a marker).
#[derive(Debug, Deserialize)]
pub struct RawDerivative {
    pub name: String,
    #[serde(flatten)]
    pub formulas: BTreeMap<String, serde_yaml_ng::Value>,
}

/// 1-based line numbers of the top-level list items (`- ` at column 0), in order.
pub fn item_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("- "))
        .map(|(i, _)| i + 1)
        .collect()
}

/// The 1-based line of key `key` inside the top-level list item that starts at line `item`
/// (as [`item_lines`] gives it): the first line of that item, after its first, that starts
/// with `key:` at the indentation of the item's own keys (so not a line of a `doc: |` text
/// or a nested mapping). `item` itself when none does (a flow-style `{...}` item).
pub fn key_line(text: &str, item: usize, key: &str) -> usize {
    let prefix = format!("{key}:");
    let lines: Vec<&str> = text.lines().collect();
    // `- func: ...`: the item's keys start where `func` does.
    let indent = lines
        .get(item.wrapping_sub(1))
        .and_then(|l| l.strip_prefix('-'))
        .map_or(2, |rest| 1 + rest.len() - rest.trim_start().len());
    lines
        .iter()
        .enumerate()
        .skip(item)
        .take_while(|(_, l)| !l.starts_with("- "))
        .find(|(_, l)| {
            let body = l.trim_start_matches(' ');
            l.len() - body.len() == indent && body.starts_with(&prefix)
        })
        .map(|(i, _)| i + 1)
        .unwrap_or(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_line_finds_a_formula_inside_its_item() {
        let text = "# c\n- name: a(Tensor self) -> Tensor\n  self: grad\n- name: b(Tensor self) -> Tensor\n  result: x\n  self: grad\n";
        assert_eq!(item_lines(text), [2, 4]);
        assert_eq!(key_line(text, 2, "self"), 3);
        assert_eq!(key_line(text, 4, "self"), 6);
        assert_eq!(key_line(text, 2, "other"), 2);
    }

    #[test]
    fn key_line_skips_nested_and_block_text_lines() {
        let text = "- func: a(Tensor self) -> Tensor\n  doc: |\n    dtypes: not a key\n  opinfo:\n    dtypes: [f32]\n  dtypes: all\n";
        assert_eq!(key_line(text, 1, "dtypes"), 6);
        assert_eq!(key_line(text, 1, "opinfo"), 4);
    }
}
