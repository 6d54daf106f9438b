//! A job's NCCL calls, enqueued on kiln's stream for the device (so they run in order with
//! kiln's kernels), and the wait for them against the group's timeout.

use super::comm::Communicator;
use super::library::check;
use super::types::{datatype, reduction};
use crate::engine::Op;
use cudarc::driver::{result as cu, sys as cusys};
use cudarc::nccl::sys;
use kiln_core::{Error, Result, Tensor};
use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

/// Where a job's calls go: the group's communicator, the device's stream, this rank's
/// place in the group.
pub(crate) struct Launch<'a> {
    pub comm: &'a Communicator,
    pub stream: *mut c_void,
    pub rank: usize,
    pub size: usize,
}

/// A tensor's device address for NCCL to read.
fn src(op: &str, t: &Tensor) -> Result<*const c_void> {
    Ok(t.data_ptr(op)? as usize as *const c_void)
}

/// A tensor's device address for NCCL to write (an in-place write autograd sees).
fn dst(op: &str, t: &Tensor) -> Result<*mut c_void> {
    Ok(t.data_ptr_mut(op)? as usize as *mut c_void)
}

fn int(op: &str, n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| Error::value(op, format!("rank {n} does not fit NCCL's int")))
}

impl Launch<'_> {
    fn stream(&self) -> sys::cudaStream_t {
        self.stream.cast()
    }

    fn check(&self, call: &str, r: sys::ncclResult_t) -> Result<()> {
        check(call, r, Some(self.comm.raw()))
    }

    /// Enqueues `op`. `scratch` is `all_gather`'s flat output (`size` times the input),
    /// copied into the output list after the gather.
    pub(crate) fn enqueue(&self, op: &Op, scratch: Option<&Tensor>) -> Result<()> {
        let name = op.name();
        let comm = self.comm.raw();
        match op {
            Op::AllReduce { tensor, op: red } => {
                if tensor.numel() == 0 {
                    return Ok(());
                }
                let p = dst(name, tensor)?;
                let (dt, ro) = (
                    datatype(name, tensor.dtype())?,
                    reduction(tensor.dtype(), *red),
                );
                // SAFETY: `p` addresses `numel` elements of a live contiguous device tensor,
                // kept alive by the job until the stream has run this call; in place is
                // allowed (send and receive buffers equal).
                let r = unsafe {
                    sys::ncclAllReduce(p, p, tensor.numel(), dt, ro, comm, self.stream())
                };
                self.check("ncclAllReduce", r)
            }
            Op::Broadcast { tensor, src: root } => {
                if tensor.numel() == 0 {
                    return Ok(());
                }
                let p = dst(name, tensor)?;
                let dt = datatype(name, tensor.dtype())?;
                let root = int(name, *root)?;
                // SAFETY: as for all_reduce.
                let r = unsafe {
                    sys::ncclBroadcast(p, p, tensor.numel(), dt, root, comm, self.stream())
                };
                self.check("ncclBroadcast", r)
            }
            Op::Reduce {
                tensor,
                dst: root,
                op: red,
            } => {
                if tensor.numel() == 0 {
                    return Ok(());
                }
                // Only the root's buffer is written; the others' stay as they were.
                let p = if self.rank == *root {
                    dst(name, tensor)?
                } else {
                    src(name, tensor)?.cast_mut()
                };
                let (dt, ro) = (
                    datatype(name, tensor.dtype())?,
                    reduction(tensor.dtype(), *red),
                );
                let root = int(name, *root)?;
                // SAFETY: as for all_reduce; NCCL writes the receive buffer on the root only.
                let r = unsafe {
                    sys::ncclReduce(p, p, tensor.numel(), dt, ro, root, comm, self.stream())
                };
                self.check("ncclReduce", r)
            }
            Op::AllGatherIntoTensor { output, input } => self.all_gather(name, output, input),
            Op::AllGather { outputs, input } => {
                let flat = scratch.expect("the engine allocates all_gather's flat output");
                self.all_gather(name, flat, input)?;
                let bytes = input.numel() * input.dtype().size_in_bytes();
                if bytes == 0 {
                    return Ok(());
                }
                let base = flat.data_ptr(name)?;
                for (r, o) in outputs.iter().enumerate() {
                    let to = o.data_ptr_mut(name)?;
                    // SAFETY: both ranges are `bytes` long inside live device tensors (the
                    // flat output holds `size` inputs), which the job keeps alive until the
                    // stream has run the copy.
                    unsafe {
                        cu::memcpy_dtod_async(
                            to,
                            base + (r * bytes) as u64,
                            bytes,
                            self.stream.cast(),
                        )
                    }
                    .map_err(|e| {
                        Error::distributed(
                            name,
                            format!("copying rank {r}'s part: CUDA error: {e:?}"),
                        )
                    })?;
                }
                Ok(())
            }
            Op::ReduceScatterTensor {
                output,
                input,
                op: red,
            } => {
                if output.numel() == 0 {
                    return Ok(());
                }
                let (dt, ro) = (
                    datatype(name, input.dtype())?,
                    reduction(input.dtype(), *red),
                );
                let (s, d) = (src(name, input)?, dst(name, output)?);
                // SAFETY: `s` holds `size * output.numel()` elements (checked when the op was
                // made), `d` holds `output.numel()`; both live until the stream has run it.
                let r = unsafe {
                    sys::ncclReduceScatter(s, d, output.numel(), dt, ro, comm, self.stream())
                };
                self.check("ncclReduceScatter", r)
            }
            Op::AllToAllSingle {
                output,
                input,
                output_splits,
                input_splits,
            } => {
                let dt = datatype(name, input.dtype())?;
                let esize = input.dtype().size_in_bytes() as u64;
                let (s, d) = (input.data_ptr(name)?, output.data_ptr_mut(name)?);
                let (mut so, mut ro) = (0u64, 0u64);
                self.grouped(|| {
                    for peer in 0..self.size {
                        let p = int(name, peer)?;
                        let (n_out, n_in) = (input_splits[peer], output_splits[peer]);
                        if n_out > 0 {
                            let at = (s + so * esize) as usize as *const c_void;
                            // SAFETY: the split lies inside the input (splits sum to its
                            // elements, checked when the op was made), live until the
                            // stream has run the group.
                            let r = unsafe { sys::ncclSend(at, n_out, dt, p, comm, self.stream()) };
                            self.check("ncclSend", r)?;
                        }
                        if n_in > 0 {
                            let at = (d + ro * esize) as usize as *mut c_void;
                            // SAFETY: as above, inside the output.
                            let r = unsafe { sys::ncclRecv(at, n_in, dt, p, comm, self.stream()) };
                            self.check("ncclRecv", r)?;
                        }
                        so += n_out as u64;
                        ro += n_in as u64;
                    }
                    Ok(())
                })
            }
            Op::Barrier => Err(Error::distributed(
                name,
                "the engine runs a barrier as a one-element all_reduce",
            )),
            Op::Send {
                tensor, dst: peer, ..
            } => {
                if tensor.numel() == 0 {
                    return Ok(());
                }
                let dt = datatype(name, tensor.dtype())?;
                let p = src(name, tensor)?;
                // SAFETY: `p` addresses `numel` elements of a live device tensor.
                let r = unsafe {
                    sys::ncclSend(
                        p,
                        tensor.numel(),
                        dt,
                        int(name, *peer)?,
                        comm,
                        self.stream(),
                    )
                };
                self.check("ncclSend", r)
            }
            Op::Recv {
                tensor, src: peer, ..
            } => {
                let peer = peer.ok_or_else(|| {
                    Error::distributed(name, "ProcessGroupNCCL does not support recvAnysource: NCCL receives from a named rank only (pass src)")
                })?;
                if tensor.numel() == 0 {
                    return Ok(());
                }
                let dt = datatype(name, tensor.dtype())?;
                let p = dst(name, tensor)?;
                // SAFETY: as for send; NCCL writes the buffer.
                let r = unsafe {
                    sys::ncclRecv(p, tensor.numel(), dt, int(name, peer)?, comm, self.stream())
                };
                self.check("ncclRecv", r)
            }
        }
    }

    fn all_gather(&self, name: &str, output: &Tensor, input: &Tensor) -> Result<()> {
        if input.numel() == 0 {
            return Ok(());
        }
        let dt = datatype(name, input.dtype())?;
        let (s, d) = (src(name, input)?, dst(name, output)?);
        // SAFETY: `d` holds `size * input.numel()` elements (checked when the op was made),
        // `s` holds `input.numel()`; both live until the stream has run it.
        let r =
            unsafe { sys::ncclAllGather(s, d, input.numel(), dt, self.comm.raw(), self.stream()) };
        self.check("ncclAllGather", r)
    }

    /// Runs `calls` between `ncclGroupStart` and `ncclGroupEnd` (ended even when a call
    /// fails), so NCCL schedules its sends and receives together.
    fn grouped(&self, calls: impl FnOnce() -> Result<()>) -> Result<()> {
        // SAFETY: no arguments; opens a group this thread closes below.
        check("ncclGroupStart", unsafe { sys::ncclGroupStart() }, None)?;
        let r = calls();
        // SAFETY: closes the group opened above.
        let end = check(
            "ncclGroupEnd",
            unsafe { sys::ncclGroupEnd() },
            Some(self.comm.raw()),
        );
        r.and(end)
    }

    /// Waits until the stream has run everything enqueued so far, polling an event against
    /// `timeout` and NCCL's asynchronous errors. `Ok(false)`: the time ran out (the caller
    /// aborts the communicator).
    pub(crate) fn wait(&self, op: &str, timeout: Duration) -> Result<bool> {
        let cuda = |call: &str, e: cu::DriverError| {
            Error::distributed(op, format!("{call}: CUDA error: {e:?}"))
        };
        let event = cu::event::create(cusys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| cuda("cuEventCreate", e))?;
        // SAFETY: `event` was just created in this context; the stream is kiln's live stream
        // for this device (the caller holds it open).
        let recorded = unsafe { cu::event::record(event, self.stream.cast()) }
            .map_err(|e| cuda("cuEventRecord", e));
        let outcome = recorded.and_then(|()| {
            let deadline = Instant::now() + timeout;
            let mut idle = 0u32;
            loop {
                // SAFETY: `event` is live until destroyed below.
                match unsafe { cu::event::query(event) } {
                    Ok(()) => return Ok(true),
                    Err(cu::DriverError(cusys::cudaError_enum::CUDA_ERROR_NOT_READY)) => {}
                    Err(e) => return Err(cuda("cuEventQuery", e)),
                }
                self.comm.async_error()?;
                if Instant::now() >= deadline {
                    return Ok(false);
                }
                crate::mpi::backoff(&mut idle);
            }
        });
        // SAFETY: the event is not used after this; destroying one still pending is allowed
        // (the driver frees it once it completes).
        let _ = unsafe { cu::event::destroy(event) };
        outcome
    }
}
