//! The collectives and point-to-point ops, as `ProcessGroup` methods and as free functions
//! on the default group (PyTorch's `dist.all_reduce(t, op, group=None, async_op=False)` is
//! `all_reduce(&t, op)`, `group.all_reduce(&t, op)`, and the `_async` forms return a
//! [`Work`]). Tensors are checked here, on each rank, before anything is sent: the checks
//! across ranks (same op, shape, dtype) are the backend's handshake.
//!
//! Outputs are written in place through `&Tensor`, as PyTorch's collectives write their
//! tensor arguments; none of this records autograd history.

use crate::engine::{Job, Op};
use crate::group::{default_group, ProcessGroup};
use crate::{Backend, ReduceOp, Work};
use kiln_core::{DType, Device, Error, Result, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Every tensor argument must be contiguous and on a device the backend serves.
fn check_tensor(g: &ProcessGroup, op: &str, t: &Tensor) -> Result<()> {
    if !t.is_contiguous() {
        return Err(Error::value(op, "Tensors must be contiguous"));
    }
    match (g.backend(), t.device()) {
        (_, Device::Meta) => Err(Error::device(
            op,
            "meta tensors have no data to communicate",
        )),
        (Backend::Nccl, Device::Cpu) => Err(Error::device(op, "Tensors must be CUDA and dense")),
        _ => Ok(()),
    }
}

fn same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "output tensor must have the same type as input tensor (got {} and {})",
                a.dtype(),
                b.dtype()
            ),
        ));
    }
    if a.device() != b.device() {
        return Err(Error::device(
            op,
            format!(
                "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                a.device(),
                b.device()
            ),
        ));
    }
    Ok(())
}

fn check_rank(g: &ProcessGroup, op: &str, what: &str, r: usize) -> Result<()> {
    if r >= g.size() {
        return Err(Error::value(
            op,
            format!(
                "Invalid {what} rank {r}: the group has {} ranks (0 to {})",
                g.size(),
                g.size() - 1
            ),
        ));
    }
    Ok(())
}

impl ProcessGroup {
    fn submit(&self, op: Op) -> Work {
        let (work, done) = Work::pending(op.name(), self.timeout());
        let seq = match op {
            // Point-to-point ops do not take part in the collective sequence.
            Op::Send { .. } | Op::Recv { .. } => 0,
            _ => self.next_seq(),
        };
        self.0.engine.submit(Job {
            op,
            comm: self.0.comm,
            seq,
            rank: self.rank(),
            size: self.size(),
            timeout: self.timeout(),
            done,
        });
        work
    }

    /// Starts reducing `tensor` across the group in place: every rank ends with the
    /// reduction of every rank's values.
    pub fn all_reduce_async(&self, tensor: &Tensor, op: ReduceOp) -> Result<Work> {
        check_tensor(self, "all_reduce", tensor)?;
        op.check("all_reduce", tensor.dtype())?;
        Ok(self.submit(Op::AllReduce {
            tensor: tensor.clone(),
            op,
        }))
    }

    /// [`ProcessGroup::all_reduce_async`], waited for.
    pub fn all_reduce(&self, tensor: &Tensor, op: ReduceOp) -> Result<()> {
        self.all_reduce_async(tensor, op)?.wait()
    }

    /// Starts copying rank `src`'s `tensor` into every rank's `tensor`.
    pub fn broadcast_async(&self, tensor: &Tensor, src: usize) -> Result<Work> {
        check_tensor(self, "broadcast", tensor)?;
        check_rank(self, "broadcast", "source", src)?;
        Ok(self.submit(Op::Broadcast {
            tensor: tensor.clone(),
            src,
        }))
    }

    /// [`ProcessGroup::broadcast_async`], waited for.
    pub fn broadcast(&self, tensor: &Tensor, src: usize) -> Result<()> {
        self.broadcast_async(tensor, src)?.wait()
    }

    /// Starts reducing `tensor` into rank `dst`'s; the other ranks' tensors are unchanged.
    pub fn reduce_async(&self, tensor: &Tensor, dst: usize, op: ReduceOp) -> Result<Work> {
        check_tensor(self, "reduce", tensor)?;
        check_rank(self, "reduce", "destination", dst)?;
        op.check("reduce", tensor.dtype())?;
        Ok(self.submit(Op::Reduce {
            tensor: tensor.clone(),
            dst,
            op,
        }))
    }

    /// [`ProcessGroup::reduce_async`], waited for.
    pub fn reduce(&self, tensor: &Tensor, dst: usize, op: ReduceOp) -> Result<()> {
        self.reduce_async(tensor, dst, op)?.wait()
    }

    /// Starts gathering every rank's `input` into `outputs[rank]` (one tensor per rank, each
    /// shaped like `input`).
    pub fn all_gather_async(&self, outputs: &[Tensor], input: &Tensor) -> Result<Work> {
        let op = "all_gather";
        check_tensor(self, op, input)?;
        if outputs.len() != self.size() {
            return Err(Error::value(
                op,
                format!(
                    "Tensor list must be the same size as the world size: got {} tensors for a group of {}",
                    outputs.len(),
                    self.size()
                ),
            ));
        }
        for o in outputs {
            check_tensor(self, op, o)?;
            same_dtype(op, o, input)?;
            if o.shape() != input.shape() {
                return Err(Error::shape(
                    op,
                    format!(
                        "all tensors in the output list must have the input's size: got {:?} for input {:?}",
                        o.shape(),
                        input.shape()
                    ),
                ));
            }
        }
        Ok(self.submit(Op::AllGather {
            outputs: outputs.to_vec(),
            input: input.clone(),
        }))
    }

    /// [`ProcessGroup::all_gather_async`], waited for.
    pub fn all_gather(&self, outputs: &[Tensor], input: &Tensor) -> Result<()> {
        self.all_gather_async(outputs, input)?.wait()
    }

    /// Starts gathering every rank's `input` into `output`, concatenated in rank order
    /// along dim 0 (`output` has `size` times `input`'s elements).
    pub fn all_gather_into_tensor_async(&self, output: &Tensor, input: &Tensor) -> Result<Work> {
        let op = "all_gather_into_tensor";
        check_tensor(self, op, input)?;
        check_tensor(self, op, output)?;
        same_dtype(op, output, input)?;
        if output.numel() != input.numel() * self.size() {
            return Err(Error::value(
                op,
                format!(
                    "output tensor size must be equal to world_size times input tensor size (output {:?}, input {:?}, world_size {})",
                    output.shape(),
                    input.shape(),
                    self.size()
                ),
            ));
        }
        Ok(self.submit(Op::AllGatherIntoTensor {
            output: output.clone(),
            input: input.clone(),
        }))
    }

    /// [`ProcessGroup::all_gather_into_tensor_async`], waited for.
    pub fn all_gather_into_tensor(&self, output: &Tensor, input: &Tensor) -> Result<()> {
        self.all_gather_into_tensor_async(output, input)?.wait()
    }

    /// Starts reducing `input` (`size` blocks, one per rank, in rank order) across the
    /// group and leaving block `rank` of the result in `output`.
    pub fn reduce_scatter_tensor_async(
        &self,
        output: &Tensor,
        input: &Tensor,
        op: ReduceOp,
    ) -> Result<Work> {
        let name = "reduce_scatter_tensor";
        check_tensor(self, name, input)?;
        check_tensor(self, name, output)?;
        same_dtype(name, output, input)?;
        op.check(name, input.dtype())?;
        if input.numel() != output.numel() * self.size() {
            return Err(Error::value(
                name,
                format!(
                    "input tensor must be the same size as output size times world size (input {:?}, output {:?}, world_size {})",
                    input.shape(),
                    output.shape(),
                    self.size()
                ),
            ));
        }
        Ok(self.submit(Op::ReduceScatterTensor {
            output: output.clone(),
            input: input.clone(),
            op,
        }))
    }

    /// [`ProcessGroup::reduce_scatter_tensor_async`], waited for.
    pub fn reduce_scatter_tensor(
        &self,
        output: &Tensor,
        input: &Tensor,
        op: ReduceOp,
    ) -> Result<()> {
        self.reduce_scatter_tensor_async(output, input, op)?.wait()
    }

    /// Starts an all-to-all: `input` is cut along dim 0 into one slice per rank (equal, or
    /// `input_split_sizes` rows each), slice `j` goes to rank `j`, and `output` receives
    /// rank `j`'s slice for this rank at position `j` (equal, or `output_split_sizes` rows).
    pub fn all_to_all_single_async(
        &self,
        output: &Tensor,
        input: &Tensor,
        output_split_sizes: Option<&[usize]>,
        input_split_sizes: Option<&[usize]>,
    ) -> Result<Work> {
        let op = "all_to_all_single";
        check_tensor(self, op, input)?;
        check_tensor(self, op, output)?;
        same_dtype(op, output, input)?;
        let input_splits = splits(op, input, input_split_sizes, self.size())?;
        let output_splits = splits(op, output, output_split_sizes, self.size())?;
        Ok(self.submit(Op::AllToAllSingle {
            output: output.clone(),
            input: input.clone(),
            output_splits,
            input_splits,
        }))
    }

    /// [`ProcessGroup::all_to_all_single_async`], waited for.
    pub fn all_to_all_single(
        &self,
        output: &Tensor,
        input: &Tensor,
        output_split_sizes: Option<&[usize]>,
        input_split_sizes: Option<&[usize]>,
    ) -> Result<()> {
        self.all_to_all_single_async(output, input, output_split_sizes, input_split_sizes)?
            .wait()
    }

    /// Starts a barrier: completes once every rank of the group has reached it.
    pub fn barrier_async(&self) -> Result<Work> {
        Ok(self.submit(Op::Barrier))
    }

    /// Blocks until every rank of the group has reached the barrier.
    pub fn barrier(&self) -> Result<()> {
        self.barrier_async()?.wait()
    }

    /// Starts sending `tensor` to rank `dst` (PyTorch's `isend`).
    pub fn isend(&self, tensor: &Tensor, dst: usize, tag: i32) -> Result<Work> {
        check_tensor(self, "send", tensor)?;
        check_rank(self, "send", "destination", dst)?;
        if dst == self.rank() {
            return Err(Error::value(
                "send",
                "Invalid destination rank: destination rank should not be the same as the rank of the current process.",
            ));
        }
        Ok(self.submit(Op::Send {
            tensor: tensor.clone(),
            dst,
            tag,
        }))
    }

    /// Sends `tensor` to rank `dst`, waiting until it has gone.
    pub fn send(&self, tensor: &Tensor, dst: usize) -> Result<()> {
        self.isend(tensor, dst, 0)?.wait()
    }

    /// Starts receiving into `tensor` from rank `src` (`None`: whichever rank sends first),
    /// PyTorch's `irecv`. The returned cell holds the sender's rank once the work is done.
    pub fn irecv(
        &self,
        tensor: &Tensor,
        src: Option<usize>,
        tag: i32,
    ) -> Result<(Work, Arc<AtomicUsize>)> {
        check_tensor(self, "recv", tensor)?;
        if let Some(s) = src {
            check_rank(self, "recv", "source", s)?;
            if s == self.rank() {
                return Err(Error::value(
                    "recv",
                    "Invalid source rank: source rank should not be the same as the rank of the current process.",
                ));
            }
        }
        let source = Arc::new(AtomicUsize::new(usize::MAX));
        let work = self.submit(Op::Recv {
            tensor: tensor.clone(),
            src,
            tag,
            source: source.clone(),
        });
        Ok((work, source))
    }

    /// Receives into `tensor` from `src` (`None`: any rank); returns the sender's rank.
    pub fn recv(&self, tensor: &Tensor, src: Option<usize>) -> Result<usize> {
        let (work, source) = self.irecv(tensor, src, 0)?;
        work.wait()?;
        Ok(source.load(Ordering::Acquire))
    }
}

/// Split sizes in elements, one per rank: `sizes` rows each, or dim 0 cut equally.
fn splits(op: &str, t: &Tensor, sizes: Option<&[usize]>, n: usize) -> Result<Vec<usize>> {
    let rows = t.shape().first().copied().unwrap_or(1);
    let row = if t.dim() == 0 {
        1
    } else {
        t.numel() / rows.max(1)
    };
    match sizes {
        None => {
            if rows % n != 0 {
                return Err(Error::value(
                    op,
                    format!("Tensor's dim 0 does not divide equally across group size (dim 0 is {rows}, group size {n})"),
                ));
            }
            Ok(vec![rows / n * row; n])
        }
        Some(s) => {
            if s.len() != n {
                return Err(Error::value(
                    op,
                    format!(
                        "Number of tensor splits not equal to group size: {} splits for {n} ranks",
                        s.len()
                    ),
                ));
            }
            if s.iter().sum::<usize>() != rows {
                return Err(Error::value(
                    op,
                    format!("Split sizes doesn't match total dim 0 size: {s:?} sum to {}, dim 0 is {rows}", s.iter().sum::<usize>()),
                ));
            }
            Ok(s.iter().map(|&r| r * row).collect())
        }
    }
}

macro_rules! on_default {
    ($(#[$doc:meta] $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(#[$doc]
        pub fn $name($($arg: $ty),*) -> Result<$ret> {
            default_group()?.$name($($arg),*)
        })*
    };
}

on_default! {
    /// `all_reduce` on the default group.
    all_reduce(tensor: &Tensor, op: ReduceOp) -> ();
    /// `all_reduce_async` on the default group.
    all_reduce_async(tensor: &Tensor, op: ReduceOp) -> Work;
    /// `broadcast` on the default group.
    broadcast(tensor: &Tensor, src: usize) -> ();
    /// `broadcast_async` on the default group.
    broadcast_async(tensor: &Tensor, src: usize) -> Work;
    /// `reduce` on the default group.
    reduce(tensor: &Tensor, dst: usize, op: ReduceOp) -> ();
    /// `reduce_async` on the default group.
    reduce_async(tensor: &Tensor, dst: usize, op: ReduceOp) -> Work;
    /// `all_gather` on the default group.
    all_gather(outputs: &[Tensor], input: &Tensor) -> ();
    /// `all_gather_async` on the default group.
    all_gather_async(outputs: &[Tensor], input: &Tensor) -> Work;
    /// `all_gather_into_tensor` on the default group.
    all_gather_into_tensor(output: &Tensor, input: &Tensor) -> ();
    /// `all_gather_into_tensor_async` on the default group.
    all_gather_into_tensor_async(output: &Tensor, input: &Tensor) -> Work;
    /// `reduce_scatter_tensor` on the default group.
    reduce_scatter_tensor(output: &Tensor, input: &Tensor, op: ReduceOp) -> ();
    /// `reduce_scatter_tensor_async` on the default group.
    reduce_scatter_tensor_async(output: &Tensor, input: &Tensor, op: ReduceOp) -> Work;
    /// `all_to_all_single` on the default group.
    all_to_all_single(output: &Tensor, input: &Tensor, output_split_sizes: Option<&[usize]>, input_split_sizes: Option<&[usize]>) -> ();
    /// `all_to_all_single_async` on the default group.
    all_to_all_single_async(output: &Tensor, input: &Tensor, output_split_sizes: Option<&[usize]>, input_split_sizes: Option<&[usize]>) -> Work;
    /// `barrier` on the default group.
    barrier() -> ();
    /// `barrier_async` on the default group.
    barrier_async() -> Work;
    /// `send` on the default group.
    send(tensor: &Tensor, dst: usize) -> ();
    /// `isend` on the default group.
    isend(tensor: &Tensor, dst: usize, tag: i32) -> Work;
    /// `recv` on the default group: the sender's rank.
    recv(tensor: &Tensor, src: Option<usize>) -> usize;
    /// `irecv` on the default group.
    irecv(tensor: &Tensor, src: Option<usize>, tag: i32) -> (Work, Arc<AtomicUsize>);
}

/// The dtypes every backend's collectives take (all of kiln's).
pub const SUPPORTED_DTYPES: [DType; 10] = DType::ALL;
