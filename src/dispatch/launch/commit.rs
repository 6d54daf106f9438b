//! The in-place and `out=` rules: when an in-place op may run, how it is recorded, the write-back.

use crate::autograd;
use crate::tensor::promotion;
use crate::{Error, Result, Tensor};

/// How an in-place op must be recorded.
pub(crate) enum Inplace {
    /// No autograd recording (grad mode off, or nothing requires grad).
    Untracked,
    /// Record the op's node on `target`, whose history it rewrites.
    Record,
    /// `target` is a view of `base` and the op takes part in autograd: compute out of place,
    /// write the result through the view, and rewrite the base's history
    /// (see [`commit_view_inplace`]).
    ViewOf(Tensor),
}

/// Checks an in-place op on `target` may run and says how autograd must record it.
pub(crate) fn check_inplace(op: &str, target: &Tensor, others: &[&Tensor]) -> Result<Inplace> {
    let grad = autograd::is_grad_enabled()
        && (target.requires_grad() || others.iter().any(|t| t.requires_grad()));
    if !grad {
        return Ok(Inplace::Untracked);
    }
    if target.is_leaf() && target.requires_grad() {
        return Err(Error::Autograd(format!(
            "{op}: a leaf Variable that requires grad is being used in an in-place operation."
        )));
    }
    match target.view_base() {
        Some(base) if base.is_leaf() && base.requires_grad() => Err(Error::Autograd(format!(
            "{op}: a view of a leaf Variable that requires grad is being used in an in-place operation."
        ))),
        Some(base) => Ok(Inplace::ViewOf(base)),
        None => Ok(Inplace::Record),
    }
}

/// Finishes an in-place op on a view that takes part in autograd (PyTorch's CopySlices):
/// `result` (computed out of place, with history) is written through `view`; the base's
/// history becomes `as_strided_scatter(base, result)`, and the view's becomes a fresh
/// `as_strided` of the new base, so gradients flow to both the old base and the op's inputs.
pub(crate) fn commit_view_inplace(
    op: &str,
    view: &Tensor,
    base: &Tensor,
    result: &Tensor,
) -> Result<()> {
    if !base.is_contiguous() || base.storage_offset() != 0 {
        return Err(Error::Autograd(format!(
            "{op}: in-place operations on a view are only tracked by autograd when the viewed tensor is contiguous from the start of its storage"
        )));
    }
    check_writable(op, view, result)?;
    let l = view.layout();
    let (size, stride) = (
        crate::ops::backward::i64s(&l.sizes),
        crate::ops::backward::i64s(&l.strides),
    );
    let offset = Some(l.offset as i64);
    let new_base = crate::as_strided_scatter_with(base, result, &size, &stride, offset)?;
    view.copy_data_from(result)?;
    view.storage().bump_version();
    if let Some(f) = new_base.grad_fn() {
        base.set_grad_fn(f, 0);
    }
    let new_view = base.as_strided_with(&size, &stride, offset)?;
    if let Some(f) = new_view.grad_fn() {
        view.set_grad_fn(f, 0);
    }
    Ok(())
}

fn check_writable(op: &str, target: &Tensor, result: &Tensor) -> Result<()> {
    if target.shape() != result.shape() {
        return Err(Error::shape(
            op,
            format!(
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                target.shape(),
                result.shape()
            ),
        ));
    }
    if !promotion::can_cast(result.dtype(), target.dtype()) {
        return Err(Error::dtype(
            op,
            format!(
                "result type {} can't be cast to the desired output type {}",
                result.dtype().scalar_type_name(),
                target.dtype().scalar_type_name()
            ),
        ));
    }
    if target.layout().has_internal_overlap() {
        return Err(Error::value(
            op,
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

/// Makes `result` the new value of `target` (an in-place op's `self`) and bumps its version.
pub(crate) fn commit_inplace(op: &str, target: &Tensor, result: &Tensor) -> Result<()> {
    if !result.is_same(target) {
        check_writable(op, target, result)?;
        target.copy_data_from(result)?;
    }
    target.storage().bump_version();
    Ok(())
}

/// Writes `result` into an `out=` tensor that must have the result's dtype exactly.
pub(crate) fn commit_out_same_dtype(
    op: &str,
    message: &str,
    out: &Tensor,
    result: &Tensor,
) -> Result<()> {
    if out.dtype() != result.dtype() {
        return Err(Error::dtype(op, message));
    }
    commit_out(op, out, result)
}

/// Refuses an `out=` tensor that autograd would have to track. Checked before a pointwise
/// kernel writes `out` directly, so a refused `out` keeps its values.
pub(crate) fn check_out(op: &str, out: &Tensor) -> Result<()> {
    if autograd::is_grad_enabled() && out.requires_grad() {
        return Err(Error::autograd(
            op,
            "functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.",
        ));
    }
    Ok(())
}

/// Writes `result` into an `out=` tensor (nothing to write when the kernel wrote `out`
/// itself).
pub(crate) fn commit_out(op: &str, out: &Tensor, result: &Tensor) -> Result<()> {
    check_out(op, out)?;
    if !result.is_same(out) {
        check_writable(op, out, result)?;
        out.copy_data_from(result)?;
    }
    out.storage().bump_version();
    Ok(())
}
