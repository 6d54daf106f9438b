//! The dispatch table: which backends run an op, with which kernel and in which dtypes
//! (torchgen's BackendIndex, per op). Adding a backend is one [`BackendKey`] variant here,
//! its YAML key in [`BackendKey::yaml_key`], its resolution in `model::entry::kernel_backends`
//! and one arm in `gen::api::backend_branch`: the compiler lists each `match` to extend.

use super::dtype::DType;
use std::collections::BTreeMap;
use std::fmt;

/// A backend an op's kernels run on. The order is the order of the generated branches after
/// the outputs are allocated: `Meta` returns them as they are, `Cuda` launches, `Cpu` is the
/// fallthrough dtype `match`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BackendKey {
    /// Nothing runs: the outputs' shapes and dtypes come from promotion and broadcasting or
    /// from the `<kernel>_meta` shape function, and the meta tensors are returned.
    Meta,
    Cuda,
    Cpu,
}

impl BackendKey {
    pub const ALL: [BackendKey; 3] = [BackendKey::Meta, BackendKey::Cuda, BackendKey::Cpu];

    /// The key as `dispatch:` and per-backend `dtypes:` write it.
    pub fn yaml_key(self) -> &'static str {
        match self {
            BackendKey::Cpu => "CPU",
            BackendKey::Cuda => "CUDA",
            BackendKey::Meta => "Meta",
        }
    }

    pub fn parse(s: &str) -> Option<BackendKey> {
        BackendKey::ALL.into_iter().find(|k| k.yaml_key() == s)
    }
}

impl fmt::Display for BackendKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.yaml_key())
    }
}

/// A `dispatch:` key: a backend, or one of the composite kinds that run on every backend
/// through the ops they call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchKey {
    Backend(BackendKey),
    /// `CompositeExplicitAutograd`: Rust over tensors, with a derivative from the YAML.
    CompositeExplicit,
    /// `CompositeImplicitAutograd` (or `Composite`): Rust from other ops, no derivative.
    CompositeImplicit,
}

impl DispatchKey {
    /// Every key a YAML may write, for messages and "did you mean".
    pub const NAMES: [&'static str; 6] = [
        "CPU",
        "CUDA",
        "Meta",
        "CompositeExplicitAutograd",
        "CompositeImplicitAutograd",
        "Composite",
    ];

    pub fn parse(s: &str) -> Option<DispatchKey> {
        match s {
            "CompositeExplicitAutograd" => Some(DispatchKey::CompositeExplicit),
            "CompositeImplicitAutograd" | "Composite" => Some(DispatchKey::CompositeImplicit),
            other => BackendKey::parse(other).map(DispatchKey::Backend),
        }
    }

    pub fn is_composite(self) -> bool {
        !matches!(self, DispatchKey::Backend(_))
    }
}

/// A function a backend entry names: `module::name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRef {
    pub module: String,
    pub name: String,
}

impl KernelRef {
    pub fn new(module: impl Into<String>, name: impl Into<String>) -> Self {
        KernelRef {
            module: module.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for KernelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}::{}", self.module, self.name)
    }
}

/// One backend's entry for an op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendKernel {
    /// CPU: the scalar function (pointwise) or the structured kernel in
    /// `kernels::cpu::<module>`. CUDA: the `__device__` scalar function (pointwise) or the
    /// launcher. Meta: the shape function (`<kernel>_meta` of a structured op; for a
    /// pointwise op, [`KernelRef`] `launch::broadcast_shapes`, promotion and broadcasting).
    pub kernel: KernelRef,
    /// The dtypes it computes in. Meta computes nothing, so it takes every dtype.
    pub dtypes: Vec<DType>,
}

/// An op's dispatch table.
pub type Backends = BTreeMap<BackendKey, BackendKernel>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_composites_are_not_backends() {
        for k in BackendKey::ALL {
            assert_eq!(BackendKey::parse(k.yaml_key()), Some(k));
            assert_eq!(
                DispatchKey::parse(k.yaml_key()),
                Some(DispatchKey::Backend(k))
            );
        }
        for name in DispatchKey::NAMES {
            assert!(DispatchKey::parse(name).is_some(), "{name}");
        }
        assert!(DispatchKey::parse("Composite").unwrap().is_composite());
        assert_eq!(DispatchKey::parse("cpu"), None);
    }
}
