//! What the optimizer test files share: the reader of the reference files their PyTorch
//! scripts write (`<name> <values…>` a line) and a tolerance check that prints both vectors.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::HashMap;

/// The vectors of a reference file by name (`#` lines are comments).
pub fn reference(text: &str) -> HashMap<String, Vec<f64>> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next().expect("a name").to_string();
            (
                name,
                it.map(|v| v.parse::<f64>().expect("a number")).collect(),
            )
        })
        .collect()
}

/// `|got - want| <= atol + rtol * |want|` element by element.
#[track_caller]
pub fn assert_close(got: &[f64], want: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "{what}[{i}]: got {g}, want {w}\n got  {got:?}\n want {want:?}"
        );
    }
}
