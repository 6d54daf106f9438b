//! cat on CUDA: each input copied into its slice of the output by the copy kernel.

use super::copy;
use crate::{Error, Result, Tensor};

pub fn cat(op: &str, tensors: &[Tensor], dim: i64, out: &Tensor) -> Result<()> {
    let d = kiln_kernels::layout::wrap_dim(dim, out.dim()).map_err(|m| Error::op(op, m))?;
    let mut at = 0usize;
    for t in tensors {
        // PyTorch skips legacy empty 1-d inputs ([0]) whatever `dim` is.
        if t.dim() == 1 && t.numel() == 0 && out.dim() != 1 {
            continue;
        }
        let len = t.shape()[d];
        let mut l = out.layout().clone();
        l.offset += at * l.strides[d];
        l.sizes[d] = len;
        copy(op, t, &out.with_layout(l))?;
        at += len;
    }
    Ok(())
}
