//! What the hand-written test files share: an error-message assertion and the reader of the
//! reference files the PyTorch scripts in `tests/data/` write, one tensor a line:
//! `<case> <key> <dtype or kind> <shape as AxBxC, or scalar> <values…>`.
#![allow(dead_code)] // each test binary uses its own subset

use kiln::Result;

/// `r` is an error whose message contains `needle`.
#[track_caller]
pub fn assert_err_contains<T: std::fmt::Debug>(r: Result<T>, needle: &str) {
    match r {
        Ok(v) => panic!("expected an error containing {needle:?}, got Ok({v:?})"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains(needle),
                "error message {msg:?} does not contain {needle:?}"
            );
        }
    }
}

/// One line of a reference file; `values` are the remaining words, unparsed.
pub struct RefLine<'a> {
    pub case: &'a str,
    pub key: &'a str,
    pub kind: &'a str,
    pub shape: Vec<usize>,
    pub values: std::str::SplitWhitespace<'a>,
}

/// The tensor lines of a reference file (blank lines and `#` comments skipped).
pub fn ref_lines(text: &str) -> impl Iterator<Item = RefLine<'_>> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|line| {
            let mut it = line.split_whitespace();
            let mut word = |what: &str| {
                it.next()
                    .unwrap_or_else(|| panic!("reference line without {what}: {line:.80}"))
            };
            let (case, key, kind, shape) = (word("case"), word("key"), word("kind"), word("shape"));
            let shape = if shape == "scalar" {
                vec![]
            } else {
                shape
                    .split('x')
                    .map(|s| s.parse().expect("a dimension"))
                    .collect()
            };
            RefLine {
                case,
                key,
                kind,
                shape,
                values: it,
            }
        })
}
