//! kiln's error type.

pub use kiln_kernels::{ErrorKind, KernelError};

/// Everything that can go wrong in kiln. Messages name the op and the shapes, dtypes or
/// devices at fault, in PyTorch's wording where PyTorch has one; [`Error::kind`] says what
/// kind of error it is (see [`ErrorKind`] for how the kinds map to PyTorch's exception
/// classes), so callers can match on the kind instead of on the message.
///
/// ```
/// use kiln::{ErrorKind, Tensor};
/// let a = Tensor::from([1f32, 2., 3.]);
/// let b = Tensor::from([1f32, 2.]);
/// let e = a.add(&b).unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::Shape);
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operator rejected its inputs.
    #[error("{op}: {msg}")]
    Op {
        op: String,
        kind: ErrorKind,
        msg: String,
    },
    /// The autograd engine or a grad-related accessor failed ([`ErrorKind::Autograd`]).
    #[error("{0}")]
    Autograd(String),
    /// A device was asked for that this build or machine does not have
    /// ([`ErrorKind::Device`]).
    #[error("{0}")]
    Device(String),
    /// Reading or writing a file failed ([`ErrorKind::Io`]).
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl Error {
    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Op { kind, .. } => *kind,
            Error::Autograd(_) => ErrorKind::Autograd,
            Error::Device(_) => ErrorKind::Device,
            Error::Io { .. } => ErrorKind::Io,
        }
    }

    /// A kernel's error `e` from operator `op`; `e`'s kind is kept. Hand-written errors use
    /// the constructor of their kind ([`Error::shape`], [`Error::dtype`], …): a plain
    /// message has no kind of its own, so it does not convert.
    pub fn op(op: impl Into<String>, e: KernelError) -> Self {
        let kind = e.kind();
        Error::Op {
            op: op.into(),
            kind,
            msg: e.into_message(),
        }
    }

    /// An error of kind `kind` from operator `op`.
    pub fn new(kind: ErrorKind, op: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Op {
            op: op.into(),
            kind,
            msg: msg.into(),
        }
    }

    /// Sizes or numbers of dimensions that do not fit `op` ([`ErrorKind::Shape`]).
    pub fn shape(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Shape, op, msg)
    }

    /// A dtype `op` does not accept ([`ErrorKind::DType`]).
    pub fn dtype(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::DType, op, msg)
    }

    /// Tensors on different devices, or a device `op` cannot use ([`ErrorKind::Device`]).
    pub fn device(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Device, op, msg)
    }

    /// An index or dimension out of range ([`ErrorKind::Index`]).
    pub fn index(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Index, op, msg)
    }

    /// An allocation failed ([`ErrorKind::OutOfMemory`]).
    pub fn out_of_memory(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::OutOfMemory, op, msg)
    }

    /// Something kiln does not implement ([`ErrorKind::NotImplemented`]).
    pub fn not_implemented(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotImplemented, op, msg)
    }

    /// A failed collective across processes ([`ErrorKind::Distributed`]).
    pub fn distributed(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Distributed, op, msg)
    }

    /// An invalid argument value ([`ErrorKind::Value`]).
    pub fn value(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Value, op, msg)
    }

    /// An autograd error raised by operator `op` ([`ErrorKind::Autograd`]); errors of the
    /// engine itself, without an op name, are [`Error::Autograd`].
    pub fn autograd(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Autograd, op, msg)
    }

    /// The same error raised by operator `op` instead (kind and message kept); errors that
    /// name no op are returned unchanged.
    pub fn with_op(self, op: impl Into<String>) -> Self {
        match self {
            Error::Op { kind, msg, .. } => Error::Op {
                op: op.into(),
                kind,
                msg,
            },
            e => e,
        }
    }
}

/// `Result` with kiln's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Returns early with an [`Error::Op`] of the given kind:
/// `bail!(Shape, op, "format", args…)` returns `Err(Error::shape(op, format!(…)))`.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $op:expr, $($arg:tt)*) => {
        return Err($crate::Error::new($crate::ErrorKind::$kind, $op, format!($($arg)*)))
    };
}
