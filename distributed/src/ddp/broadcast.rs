//! Making every rank's module identical: the model check and the coalesced broadcast of
//! parameters and buffers (PyTorch's `_verify_param_shape_across_processes` and
//! `_broadcast_coalesced`).

use crate::{ProcessGroup, ReduceOp};
use kiln_core::{no_grad, DType, Error, Result, Tensor};

/// PyTorch's `broadcast_bucket_size`: 250 MiB per coalesced broadcast.
pub(crate) const BROADCAST_BUCKET_BYTES: usize = 250 * 1024 * 1024;

const OP: &str = "DistributedDataParallel";

/// `t` seen through `flat[offset..offset + numel]`, shaped like `t`.
pub(crate) fn slot(flat: &Tensor, offset: usize, t: &Tensor) -> Result<Tensor> {
    let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    flat.narrow(0, offset as i64, t.numel() as i64)?
        .view(&shape)
}

/// Copies rank `src`'s values of `tensors` into every rank's, in place and without
/// autograd: consecutive tensors of one dtype and device travel in one flat buffer of at
/// most `cap_bytes` (a larger tensor alone).
pub(crate) fn broadcast_coalesced(
    group: &ProcessGroup,
    tensors: &[Tensor],
    src: usize,
    cap_bytes: usize,
) -> Result<()> {
    let _g = no_grad();
    let mut start = 0;
    while start < tensors.len() {
        let first = &tensors[start];
        let mut end = start + 1;
        let mut bytes = first.numel() * first.dtype().size_in_bytes();
        while end < tensors.len() {
            let t = &tensors[end];
            let b = t.numel() * t.dtype().size_in_bytes();
            if t.dtype() != first.dtype() || t.device() != first.device() || bytes + b > cap_bytes {
                break;
            }
            bytes += b;
            end += 1;
        }
        let chunk = &tensors[start..end];
        let numel: usize = chunk.iter().map(|t| t.numel()).sum();
        let flat = Tensor::empty_on([numel], first.dtype(), first.device())?;
        let mut offset = 0;
        for t in chunk {
            slot(&flat, offset, t)?.copy_(t)?;
            offset += t.numel();
        }
        group.broadcast(&flat, src)?;
        if group.rank() != src {
            let mut offset = 0;
            for t in chunk {
                t.copy_(&slot(&flat, offset, t)?)?;
                offset += t.numel();
            }
        }
        start = end;
    }
    Ok(())
}

/// Checks that every rank holds the same module states (names given for messages): the
/// same count, then the same shapes and dtypes as rank 0. Every rank fails together, each
/// with what it knows (PyTorch's "DDP expects same model across all ranks ...").
pub(crate) fn verify_same_model(group: &ProcessGroup, states: &[(String, Tensor)]) -> Result<()> {
    let rank = group.rank();
    let meta: Vec<i64> = states
        .iter()
        .flat_map(|(_, t)| {
            let mut m = vec![t.dim() as i64, dtype_code(t.dtype())];
            m.extend(t.shape().iter().map(|&s| s as i64));
            m
        })
        .collect();
    // Counts first, so the metadata broadcast below has one length on every rank.
    let mine = Tensor::from([states.len() as i64, meta.len() as i64]);
    let all = Tensor::zeros([2 * group.size()], DType::I64)?;
    group.all_gather_into_tensor(&all, &mine)?;
    let all = all.to_vec::<i64>()?;
    for (r, c) in all.chunks(2).enumerate() {
        if c[0] != states.len() as i64 {
            return Err(Error::distributed(
                OP,
                format!(
                    "DDP expects same model across all ranks, but Rank {rank} has {} params, while rank {r} has inconsistent {} params.",
                    states.len(),
                    c[0]
                ),
            ));
        }
        if c[1] != meta.len() as i64 {
            return Err(Error::distributed(
                OP,
                format!(
                    "DDP expects same model across all ranks, but the parameters and buffers of Rank {rank} have other numbers of dimensions than those of rank {r}."
                ),
            ));
        }
    }
    let control = Tensor::from_vec(meta.clone(), &[meta.len()])?;
    if !meta.is_empty() {
        group.broadcast(&control, 0)?;
    }
    let control = control.to_vec::<i64>()?;
    let mut mismatch = None;
    let mut at = 0;
    for (p, (name, t)) in states.iter().enumerate() {
        let n = 2 + t.dim();
        if control[at..at + n] != meta[at..at + n] {
            mismatch = Some(format!(
                "[{rank}]: params[{p}] (`{name}`) in this process with sizes {:?} and dtype {} appears not to match sizes of the same param in process 0.",
                t.shape(),
                t.dtype()
            ));
            break;
        }
        at += n;
    }
    let flag = Tensor::from([i64::from(mismatch.is_some())]);
    group.all_reduce(&flag, ReduceOp::Max)?;
    match (mismatch, flag.item::<i64>()? > 0) {
        (Some(msg), _) => Err(Error::distributed(OP, msg)),
        (None, true) => Err(Error::distributed(
            OP,
            format!("DDP expects same model across all ranks, but the parameters or buffers of another rank do not match those of rank 0 (Rank {rank}'s do; see the other ranks' errors)."),
        )),
        (None, false) => Ok(()),
    }
}

/// A number per dtype, for comparing models across ranks.
fn dtype_code(d: DType) -> i64 {
    DType::ALL
        .iter()
        .position(|&x| x == d)
        .map_or(-1, |i| i as i64)
}
