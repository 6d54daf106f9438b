//! kiln's error type.

/// Everything that can go wrong in kiln. Messages name the op and the shapes, dtypes or
/// devices at fault, in PyTorch's wording where PyTorch has one.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operator rejected its inputs.
    #[error("{op}: {msg}")]
    Op { op: String, msg: String },
    /// The autograd engine or a grad-related accessor failed.
    #[error("{0}")]
    Autograd(String),
    /// A device was asked for that this build or machine does not have.
    #[error("{0}")]
    Device(String),
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl Error {
    /// An error from operator `op`.
    pub fn op(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Op {
            op: op.into(),
            msg: msg.into(),
        }
    }
}

/// `Result` with kiln's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Returns early with an [`Error::Op`].
#[macro_export]
macro_rules! bail {
    ($op:expr, $($arg:tt)*) => {
        return Err($crate::Error::op($op, format!($($arg)*)))
    };
}
