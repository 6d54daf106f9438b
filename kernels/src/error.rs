//! What kind of error an operation raised, and a kernel's typed error.
//!
//! [`ErrorKind`] lives here, in the lowest crate, so that a kernel can say what kind of
//! error it reports; the core re-exports it as `kiln::ErrorKind` and its `Error::kind()`
//! returns it.

use std::fmt;

/// What kind of error an operation raised, so that callers can match on it instead of on
/// message text. The kinds follow the exception classes PyTorch raises for the same input:
///
/// | kind | PyTorch raises |
/// | --- | --- |
/// | `Shape` | `RuntimeError` (size mismatch, broadcast failure, wrong number of dims, invalid view) |
/// | `DType` | `RuntimeError` (dtype mismatch, promotion or cast refused, and the dtype-dispatch error `"<op>" not implemented for '<dtype>'`), `TypeError` where PyTorch raises one for a dtype |
/// | `Device` | `RuntimeError` (`Expected all tensors to be on the same device …`, a device this build or machine lacks) |
/// | `Index` | `IndexError` (index or dimension out of range) |
/// | `OutOfMemory` | `torch.OutOfMemoryError` (`torch.cuda.OutOfMemoryError`) |
/// | `NotImplemented` | `NotImplementedError` (an operation or a combination of arguments kiln does not support) |
/// | `Value` | `ValueError`, and `RuntimeError` for an invalid argument value (`must be positive`, an unknown mode, an empty input that the op cannot reduce) |
/// | `Autograd` | `RuntimeError` raised by autograd (backward through a freed graph, a tensor that does not require grad, an in-place change of a saved tensor) |
/// | `Io` | `OSError` / `FileNotFoundError` (reading or writing a file) |
/// | `Distributed` | `DistError` / `DistBackendError` (a collective that timed out, ranks that disagree, no process group) |
///
/// PyTorch's `"add" not implemented for 'Bool'` is a `RuntimeError` from dtype dispatch:
/// kiln reports it as `DType`, as it is the dtype that is not supported; `NotImplemented`
/// is kept for what PyTorch raises `NotImplementedError` for.
///
/// New kinds may be added, so a `match` on it needs a wildcard arm.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Sizes or numbers of dimensions that do not fit the operation.
    Shape,
    /// A dtype the operation does not accept or cannot produce.
    DType,
    /// Tensors on different devices, or a device that is not available.
    Device,
    /// An index or dimension out of range (PyTorch's `IndexError`).
    Index,
    /// An allocation failed (PyTorch's `OutOfMemoryError`).
    OutOfMemory,
    /// Something kiln does not implement (PyTorch's `NotImplementedError`).
    NotImplemented,
    /// An invalid argument value (PyTorch's `ValueError`, or a `RuntimeError` about a value).
    Value,
    /// The autograd engine refused (a freed graph walked twice, no grad, …).
    Autograd,
    /// Reading or writing a file failed.
    Io,
    /// A collective across processes failed: it timed out, the ranks called different
    /// collectives or passed different shapes, or no process group is set up.
    Distributed,
}

impl ErrorKind {
    /// The kind's name, as written in Rust (`"Shape"`, `"OutOfMemory"`, …).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Shape => "Shape",
            ErrorKind::DType => "DType",
            ErrorKind::Device => "Device",
            ErrorKind::Index => "Index",
            ErrorKind::OutOfMemory => "OutOfMemory",
            ErrorKind::NotImplemented => "NotImplemented",
            ErrorKind::Value => "Value",
            ErrorKind::Autograd => "Autograd",
            ErrorKind::Io => "Io",
            ErrorKind::Distributed => "Distributed",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel's error: its [`ErrorKind`] and a message naming what is wrong; the caller adds
/// the op name. There is deliberately no `From<String>`: every error says its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    kind: ErrorKind,
    message: String,
}

impl KernelError {
    /// An error of kind `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        KernelError {
            kind,
            message: message.into(),
        }
    }
    /// [`ErrorKind::Shape`].
    pub fn shape(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Shape, message)
    }
    /// [`ErrorKind::DType`].
    pub fn dtype(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::DType, message)
    }
    /// [`ErrorKind::Device`].
    pub fn device(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Device, message)
    }
    /// [`ErrorKind::Index`].
    pub fn index(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Index, message)
    }
    /// [`ErrorKind::OutOfMemory`].
    pub fn out_of_memory(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OutOfMemory, message)
    }
    /// [`ErrorKind::NotImplemented`].
    pub fn not_implemented(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotImplemented, message)
    }
    /// [`ErrorKind::Value`].
    pub fn value(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Value, message)
    }
    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The message, without the op name.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The message, by value.
    pub fn into_message(self) -> String {
        self.message
    }
    /// The same kind with another message (to add context).
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> Self {
        KernelError {
            kind: self.kind,
            message: f(self.message),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KernelError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_and_message() {
        let e = KernelError::index("index 5 is out of bounds for dimension 0 with size 3");
        assert_eq!(e.kind(), ErrorKind::Index);
        assert_eq!(
            e.to_string(),
            "index 5 is out of bounds for dimension 0 with size 3"
        );
        assert_eq!(ErrorKind::OutOfMemory.to_string(), "OutOfMemory");
    }
}
