//! Which kernels exist: the `pub fn`s of `kernels/src/cpu/*.rs`, read with `syn`, so the
//! YAML can name a kernel by function name and a typo is a build error, not a link error.

use std::collections::BTreeMap;
use std::path::Path;

/// `fn name → module` for every public function in the CPU kernel modules, and for every
/// CUDA kernel: the `__device__` scalar functions of `kernels/cuda/<module>.cuh` (pointwise
/// ops) and the host launchers `pub fn` in `src/cuda/ops/<module>.rs` (every other op).
#[derive(Debug, Default)]
pub struct KernelIndex {
    pub functions: BTreeMap<String, Vec<String>>,
    pub cuda: BTreeMap<String, Vec<String>>,
}

impl KernelIndex {
    /// Scans `dir` (the `kernels/src/cpu` folder).
    pub fn scan(dir: &Path) -> Result<Self, String> {
        let mut index = KernelIndex::default();
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs") && !p.ends_with("mod.rs"))
            .collect();
        entries.sort();
        for path in entries {
            let module = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let file = syn::parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            for item in file.items {
                if let syn::Item::Fn(f) = item {
                    if matches!(f.vis, syn::Visibility::Public(_)) {
                        index
                            .functions
                            .entry(f.sig.ident.to_string())
                            .or_default()
                            .push(module.clone());
                    }
                }
            }
        }
        Ok(index)
    }

    /// Adds the CUDA kernels: `__device__` functions of `<cuda_dir>/*.cuh` and `pub fn`s of
    /// `<host_dir>/*.rs`.
    pub fn scan_cuda(&mut self, cuda_dir: &Path, host_dir: &Path) -> Result<(), String> {
        for (path, text) in files_with_ext(cuda_dir, "cuh")? {
            let module = stem(&path);
            for line in text.lines().filter(|l| l.contains("__device__")) {
                // `template <...> __device__ inline T name(args)`: the identifier before `(`.
                let head = line.split('(').next().unwrap_or_default();
                if let Some(name) = head.split_whitespace().last() {
                    let list = self.cuda.entry(name.to_string()).or_default();
                    if !list.contains(&module) {
                        list.push(module.clone());
                    }
                }
            }
        }
        for (path, text) in files_with_ext(host_dir, "rs")? {
            let module = stem(&path);
            let file = syn::parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            for item in file.items {
                if let syn::Item::Fn(f) = item {
                    if matches!(f.vis, syn::Visibility::Public(_)) {
                        self.cuda
                            .entry(f.sig.ident.to_string())
                            .or_default()
                            .push(module.clone());
                    }
                }
            }
        }
        Ok(())
    }

    /// Resolves a CUDA kernel `module::name` to `(module, name)`.
    pub fn resolve_cuda(&self, spec: &str) -> Result<(String, String), String> {
        let Some((module, name)) = spec.split_once("::") else {
            return Err(format!(
                "CUDA kernel '{spec}' must be written as module::name"
            ));
        };
        match self.cuda.get(name) {
            Some(ms) if ms.iter().any(|m| m == module) => Ok((module.to_string(), name.to_string())),
            _ => Err(format!(
                "unknown CUDA kernel '{spec}': no `__device__` function {name} in kernels/cuda/{module}.cuh and no `pub fn {name}` in src/cuda/ops/{module}.rs"
            )),
        }
    }

    /// Resolves `name` or `module::name` to `(module, name)`.
    pub fn resolve(&self, spec: &str) -> Result<(String, String), String> {
        let (module, name) = match spec.split_once("::") {
            Some((m, n)) => (Some(m), n),
            None => (None, spec),
        };
        let mods = self.functions.get(name).cloned().unwrap_or_default();
        match (module, mods.as_slice()) {
            (Some(m), ms) if ms.iter().any(|x| x == m) => Ok((m.to_string(), name.to_string())),
            (None, [m]) => Ok((m.clone(), name.to_string())),
            (None, [_, ..]) => Err(format!(
                "kernel '{name}' is defined in several modules ({}); write it as module::{name}",
                mods.join(", ")
            )),
            _ => Err(format!(
                "unknown CPU kernel '{spec}': no `pub fn {name}` in kernels/src/cpu/"
            )),
        }
    }

    /// True when `module::name` exists.
    pub fn has(&self, module: &str, name: &str) -> bool {
        self.functions
            .get(name)
            .is_some_and(|ms| ms.iter().any(|m| m == module))
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string()
}

/// `(path, text)` of every `*.ext` file in `dir`, sorted; a missing folder has none.
fn files_with_ext(dir: &Path, ext: &str) -> Result<Vec<(std::path::PathBuf, String)>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext) && !p.ends_with("mod.rs"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            Ok((p, text))
        })
        .collect()
}
