//! `Display` and `Debug` for tensors, in PyTorch's format.

use super::Tensor;
use std::fmt;

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.to_vec::<f64>().map_err(|_| fmt::Error)?;
        write!(f, "tensor({v:?})")
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
