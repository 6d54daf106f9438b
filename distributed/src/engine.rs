//! The seam between the process-group API and a communication library: what a collective
//! asks for ([`Job`]) and what a backend does with it ([`Engine`]).

use crate::work::Completion;
use crate::{Backend, ReduceOp};
use kiln_core::{Result, Tensor};
use std::time::Duration;

/// One collective or point-to-point operation, its tensors already checked locally.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    AllReduce {
        tensor: Tensor,
        op: ReduceOp,
    },
    Broadcast {
        tensor: Tensor,
        src: usize,
    },
    Reduce {
        tensor: Tensor,
        dst: usize,
        op: ReduceOp,
    },
    /// `all_gather`: one output per rank.
    AllGather {
        outputs: Vec<Tensor>,
        input: Tensor,
    },
    AllGatherIntoTensor {
        output: Tensor,
        input: Tensor,
    },
    ReduceScatterTensor {
        output: Tensor,
        input: Tensor,
        op: ReduceOp,
    },
    /// Splits in elements (rows × row size), one per rank.
    AllToAllSingle {
        output: Tensor,
        input: Tensor,
        output_splits: Vec<usize>,
        input_splits: Vec<usize>,
    },
    Barrier,
    Send {
        tensor: Tensor,
        dst: usize,
        tag: i32,
    },
    /// `src: None` receives from any rank; the sender's rank is written to `source`.
    Recv {
        tensor: Tensor,
        src: Option<usize>,
        tag: i32,
        source: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    },
}

impl Op {
    /// PyTorch's name of the op, as errors and fingerprints show it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::AllReduce { .. } => "all_reduce",
            Op::Broadcast { .. } => "broadcast",
            Op::Reduce { .. } => "reduce",
            Op::AllGather { .. } => "all_gather",
            Op::AllGatherIntoTensor { .. } => "all_gather_into_tensor",
            Op::ReduceScatterTensor { .. } => "reduce_scatter_tensor",
            Op::AllToAllSingle { .. } => "all_to_all_single",
            Op::Barrier => "barrier",
            Op::Send { .. } => "send",
            Op::Recv { .. } => "recv",
        }
    }
}

/// An op with what the backend needs to run it on one group.
#[derive(Debug)]
pub(crate) struct Job {
    pub op: Op,
    /// The group's communicator in its engine.
    pub comm: usize,
    /// The group's count of collectives so far: ranks must agree on it.
    pub seq: u64,
    pub rank: usize,
    pub size: usize,
    pub timeout: Duration,
    pub done: Completion,
}

/// A communication library under process groups: runs jobs in the order given, finishing
/// each job's [`Completion`]. Implemented by the MPI engine (CPU tensors, and CUDA tensors
/// staged through host memory) and the NCCL engine (CUDA tensors).
pub(crate) trait Engine: Send + Sync {
    /// Which backend this is.
    fn backend(&self) -> Backend;
    /// This process's rank and the world's size.
    fn world(&self) -> (usize, usize);
    /// Queues `job`; its completion reports the outcome.
    fn submit(&self, job: Job);
    /// A communicator for `ranks` (world ranks, in their group order) out of `comm`; every
    /// rank of `comm` calls it. `None` for a rank outside `ranks`.
    fn split(&self, comm: usize, ranks: &[usize], timeout: Duration) -> Result<Option<usize>>;
    /// Ends the engine (MPI_Finalize, communicators destroyed); later jobs fail.
    fn shutdown(&self) -> Result<()>;
}
