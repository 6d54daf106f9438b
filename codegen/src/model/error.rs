//! The model's error type and the helpers every part of validation shares.

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

pub(crate) fn nerr(line: usize, message: String) -> ModelError {
    ModelError {
        file: crate::paths::NATIVE_FUNCTIONS.into(),
        line,
        message,
    }
}

pub(crate) fn derr(line: usize, message: String) -> ModelError {
    ModelError {
        file: crate::paths::DERIVATIVES.into(),
        line,
        message,
    }
}

/// True when `name` is a Rust identifier (not a keyword).
pub(crate) fn is_rust_ident(name: &str) -> bool {
    syn::parse_str::<syn::Ident>(name).is_ok()
}

/// `" (did you mean `x`?)"` when one of `names` is a small edit away from `name`.
pub(crate) fn did_you_mean<'a>(name: &str, names: impl Iterator<Item = &'a String>) -> String {
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
