//! The model's error type and the helpers every part of validation shares.

/// A build error: `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    pub file: String,
    pub line: usize,
    pub message: String,
    /// The `native_functions.yaml` key (`dispatch`) an entry's error is about, set while
    /// `line` is still the entry's first line; `build` moves `line` to that key's.
    pub(crate) key: Option<&'static str>,
}

impl ModelError {
    /// Marks this entry error as one about `key`, so it is reported at that key's line.
    pub(crate) fn at_key(self, key: &'static str) -> Self {
        ModelError {
            key: Some(key),
            ..self
        }
    }

    /// Moves an error marked [`at_key`](Self::at_key), at the first line of its entry in
    /// `text`, to the line of its key (the entry's line when the key is not on a line of
    /// its own).
    pub(crate) fn at_key_line(mut self, text: &str) -> Self {
        if let Some(key) = self.key.take() {
            self.line = crate::yaml::key_line(text, self.line, key);
        }
        self
    }
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
        key: None,
    }
}

pub(crate) fn derr(line: usize, message: String) -> ModelError {
    ModelError {
        file: crate::paths::DERIVATIVES.into(),
        line,
        message,
        key: None,
    }
}

/// True when `name` is a Rust identifier (not a keyword).
pub(crate) fn is_rust_ident(name: &str) -> bool {
    syn::parse_str::<syn::Ident>(name).is_ok()
}

/// `" (did you mean `x`?)"` when one of `names` is a small edit away from `name`.
pub(crate) fn did_you_mean<'a>(name: &str, names: impl Iterator<Item = &'a String>) -> String {
    suggestion(closest(name, names))
}

/// [`did_you_mean`] for a function path `module::name` among the `paths` that exist: the
/// same name in another module (`binary::expm1` → `unary::expm1`), else a close name in the
/// same module (in any module when `spec` names none), else a close path.
pub(crate) fn did_you_mean_path(spec: &str, paths: &[String]) -> String {
    let (module, name) = match spec.rsplit_once("::") {
        Some((m, n)) => (Some(m), n),
        None => (None, spec),
    };
    let same_name = paths
        .iter()
        .find(|p| p.rsplit_once("::").is_some_and(|(_, n)| n == name));
    let close_name = || {
        paths
            .iter()
            .filter_map(|p| p.rsplit_once("::").map(|(m, n)| (m, n, p)))
            .filter(|(m, _, _)| module.is_none_or(|module| module == *m))
            .map(|(_, n, p)| (edit_distance(name, n), p, n))
            .filter(|(d, _, n)| close(name, n, *d))
            .min()
            .map(|(_, p, _)| p)
    };
    suggestion(
        same_name
            .or_else(close_name)
            .or_else(|| closest(spec, paths.iter())),
    )
}

/// The name of `names` closest to `name`, when it is a small edit away.
fn closest<'a>(name: &str, names: impl Iterator<Item = &'a String>) -> Option<&'a String> {
    names
        .map(|n| (edit_distance(name, n), n))
        .filter(|(d, n)| close(name, n, *d))
        .min()
        .map(|(_, n)| n)
}

/// An edit of `distance` from `name` to `candidate` is small enough to be a typo.
fn close(name: &str, candidate: &str, distance: usize) -> bool {
    distance <= 2.max(name.len() / 4) && distance < candidate.len()
}

fn suggestion(best: Option<&String>) -> String {
    match best {
        Some(n) => format!(" (did you mean `{n}`?)"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_suggestion_prefers_the_same_name_then_the_same_module() {
        let paths: Vec<String> = ["unary::expm1", "unary::exp", "binary::exp", "binary::mul"]
            .map(String::from)
            .to_vec();
        let hint = |spec| did_you_mean_path(spec, &paths);
        assert_eq!(hint("binary::expm1"), " (did you mean `unary::expm1`?)");
        assert_eq!(hint("unary::expm11"), " (did you mean `unary::expm1`?)");
        assert_eq!(hint("binary::mull"), " (did you mean `binary::mul`?)");
        assert_eq!(hint("mull"), " (did you mean `binary::mul`?)");
        assert_eq!(hint("unary::mul"), " (did you mean `binary::mul`?)");
        assert_eq!(hint("unary::logit"), "");
    }
}
