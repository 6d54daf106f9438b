//! The NCCL engine: CUDA tensors' collectives through NCCL, bootstrapped over MPI as
//! Horovod does. `init_process_group(Backend::Nccl)` starts the MPI engine (which gives the
//! world's ranks), rank 0 makes NCCL's unique id, MPI broadcasts it, and every rank joins
//! the communicator on its GPU: device = local rank (`OMPI_COMM_WORLD_LOCAL_RANK`) modulo
//! the device count.
//!
//! One thread runs the jobs in the order the program submitted them. Each collective first
//! exchanges fingerprints through the MPI engine (the same handshake as the MPI backend's,
//! against the group's timeout: ranks that run different collectives, shapes or dtypes, or
//! a rank that never arrives, fail with an error instead of a hang), then enqueues the NCCL
//! call on kiln's own stream for the device, so that it runs after the kernels that made its
//! inputs and before those that read its outputs, and waits for it by polling an event. A
//! collective still running after the timeout aborts the communicator (`ncclCommAbort`)
//! and fails with PyTorch's watchdog error; the group is unusable afterwards.

mod comm;
mod library;
mod ops;
mod types;

use crate::engine::{Engine, Job, Op};
use crate::mpi::MpiEngine;
use crate::work::Work;
use crate::Backend;
use comm::{Communicator, ID_BYTES};
use kiln_core::{DType, Device, Error, Result, Tensor};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The work type PyTorch's NCCL errors name.
const WORK: &str = "WorkNCCL";

enum Msg {
    Job(Job),
    Split {
        comm: usize,
        ranks: Vec<usize>,
        timeout: Duration,
        reply: mpsc::Sender<Result<Option<usize>>>,
    },
    Shutdown(mpsc::Sender<Result<()>>),
}

pub(crate) struct NcclEngine {
    mpi: Arc<MpiEngine>,
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    rank: usize,
    size: usize,
}

/// Why this process cannot run the NCCL backend (no GPU, no libnccl), or `None`.
fn unavailable_reason() -> Option<String> {
    let mut why = Vec::new();
    if let Err(e) = Device::Cuda(0).ensure_available() {
        why.push(format!("it needs a CUDA GPU, and {e}"));
    }
    if let Some(e) = library::unavailable_reason() {
        why.push(format!("it needs libnccl, and {e}"));
    }
    (!why.is_empty()).then(|| {
        format!(
            "the NCCL backend cannot run in this process: {}",
            why.join("; ")
        )
    })
}

/// This rank's GPU: its local rank on the host (Open MPI's `OMPI_COMM_WORLD_LOCAL_RANK`,
/// 0 without it) modulo the devices there are.
fn local_device() -> usize {
    let local = std::env::var("OMPI_COMM_WORLD_LOCAL_RANK")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(0);
    local % kiln_core::cuda::device_count().max(1)
}

impl NcclEngine {
    /// Checks for a GPU and libnccl (before MPI starts, so a failure leaves MPI untouched),
    /// starts the MPI engine, and makes the world's communicator.
    pub(crate) fn start(timeout: Duration) -> Result<Arc<NcclEngine>> {
        if let Some(why) = unavailable_reason() {
            return Err(Error::distributed("init_process_group", why));
        }
        let device = local_device();
        let mpi = MpiEngine::start()?;
        let (rank, size) = mpi.world();
        let (tx, rx) = mpsc::channel();
        let (init_tx, init_rx) = mpsc::channel();
        let worker = Worker {
            mpi: mpi.clone(),
            device,
            groups: Vec::new(),
        };
        let spawned = std::thread::Builder::new()
            .name("kiln-nccl".into())
            .spawn(move || worker.main(rx, init_tx, rank, size, timeout));
        let started = match spawned {
            Err(e) => Err(Error::distributed(
                "init_process_group",
                format!("cannot start NCCL's thread: {e}"),
            )),
            Ok(thread) => match init_rx.recv() {
                Ok(Ok(())) => Ok(thread),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(Error::distributed(
                    "init_process_group",
                    "NCCL's thread ended while making the communicator",
                )),
            },
        };
        match started {
            Ok(thread) => Ok(Arc::new(NcclEngine {
                mpi,
                tx: Mutex::new(Some(tx)),
                thread: Mutex::new(Some(thread)),
                rank,
                size,
            })),
            Err(e) => {
                let _ = mpi.shutdown();
                Err(e)
            }
        }
    }

    fn send(&self, msg: Msg) -> std::result::Result<(), Msg> {
        match &*self.tx.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(tx) => tx.send(msg).map_err(|e| e.0),
            None => Err(msg),
        }
    }
}

fn destroyed(op: &str) -> Error {
    Error::distributed(
        op,
        "the process group has been destroyed (destroy_process_group)",
    )
}

impl Engine for NcclEngine {
    fn backend(&self) -> Backend {
        Backend::Nccl
    }

    fn world(&self) -> (usize, usize) {
        (self.rank, self.size)
    }

    fn submit(&self, job: Job) {
        if let Err(Msg::Job(job)) = self.send(Msg::Job(job)) {
            job.done.complete(Err(destroyed(job.op.name())));
        }
    }

    fn split(&self, comm: usize, ranks: &[usize], timeout: Duration) -> Result<Option<usize>> {
        let (reply, rx) = mpsc::channel();
        self.send(Msg::Split {
            comm,
            ranks: ranks.to_vec(),
            timeout,
            reply,
        })
        .map_err(|_| destroyed("new_group"))?;
        rx.recv().map_err(|_| destroyed("new_group"))?
    }

    fn shutdown(&self) -> Result<()> {
        let (reply, rx) = mpsc::channel();
        let sent = self.send(Msg::Shutdown(reply)).is_ok();
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if !sent {
            return Err(destroyed("destroy_process_group"));
        }
        let nccl = rx
            .recv()
            .unwrap_or_else(|_| Err(destroyed("destroy_process_group")));
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
        // MPI is finalized even when a communicator failed to be destroyed.
        let mpi = self.mpi.shutdown();
        nccl.and(mpi)
    }
}

/// A process group's communicators: the MPI engine's (for handshakes and bootstrapping)
/// and NCCL's (for the payload).
struct Group {
    /// The group's communicator id in the MPI engine.
    mpi: usize,
    /// `None` once aborted after a timeout, or destroyed.
    nccl: Option<Communicator>,
    rank: usize,
    size: usize,
}

/// The engine thread's state.
struct Worker {
    mpi: Arc<MpiEngine>,
    device: usize,
    /// By the id process groups hold (`Job::comm`); 0 is the world.
    groups: Vec<Group>,
}

impl Worker {
    fn main(
        mut self,
        rx: mpsc::Receiver<Msg>,
        init: mpsc::Sender<Result<()>>,
        rank: usize,
        size: usize,
        timeout: Duration,
    ) {
        let world = self.join(0, rank, size, timeout, "init_process_group");
        match world {
            Ok(nccl) => {
                self.groups.push(Group {
                    mpi: 0,
                    nccl: Some(nccl),
                    rank,
                    size,
                });
                let _ = init.send(Ok(()));
            }
            Err(e) => {
                let _ = init.send(Err(e));
                return;
            }
        }
        let reply = loop {
            match rx.recv() {
                Ok(Msg::Job(job)) => {
                    let r = self.run(&job);
                    job.done.complete(r);
                }
                Ok(Msg::Split {
                    comm,
                    ranks,
                    timeout,
                    reply,
                }) => {
                    let _ = reply.send(self.split(comm, &ranks, timeout));
                }
                Ok(Msg::Shutdown(reply)) => break Some(reply),
                Err(_) => break None,
            }
        };
        while let Ok(msg) = rx.try_recv() {
            if let Msg::Job(job) = msg {
                job.done.complete(Err(destroyed(job.op.name())));
            }
        }
        let mut r = Ok(());
        let device = self.device;
        for g in self.groups.drain(..) {
            if let Some(c) = g.nccl {
                let destroyed = kiln_core::cuda::with_stream(device, |_| c.destroy());
                r = r.and(destroyed.and_then(|d| d));
            }
        }
        if let Some(reply) = reply {
            let _ = reply.send(r);
        }
    }

    /// The NCCL communicator of the `size` ranks of MPI communicator `mpi`, as `rank`: its
    /// rank 0 makes the unique id, MPI broadcasts it, every rank joins on this process's
    /// device.
    fn join(
        &self,
        mpi: usize,
        rank: usize,
        size: usize,
        timeout: Duration,
        op: &'static str,
    ) -> Result<Communicator> {
        // Byte 0 says whether rank 0 made an id (so a failure there fails every rank
        // instead of leaving them waiting), the rest is the id.
        let mut bytes = [0u8; ID_BYTES + 1];
        let mine = if rank == 0 {
            let made =
                kiln_core::cuda::with_stream(self.device, |_| comm::unique_id()).and_then(|r| r);
            if let Ok(id) = &made {
                bytes[0] = 1;
                bytes[1..].copy_from_slice(id);
            }
            Some(made)
        } else {
            None
        };
        let t = Tensor::from_vec(bytes.to_vec(), &[ID_BYTES + 1])?;
        let (work, done) = Work::pending("broadcast", timeout);
        self.mpi.submit(Job {
            op: Op::Broadcast {
                tensor: t.clone(),
                src: 0,
            },
            comm: mpi,
            seq: 0,
            rank,
            size,
            timeout,
            done,
        });
        work.wait()?;
        if let Some(Err(e)) = mine {
            return Err(e);
        }
        let got = t.to_vec::<u8>()?;
        if got[0] != 1 {
            return Err(Error::distributed(
                op,
                "rank 0 could not make NCCL's unique id (see its error)",
            ));
        }
        let id: [u8; ID_BYTES] = got[1..].try_into().expect("ID_BYTES bytes after the flag");
        kiln_core::cuda::with_stream(self.device, |_| Communicator::init(size, &id, rank))?
    }

    fn group(&self, op: &str, id: usize) -> Result<&Group> {
        match self.groups.get(id) {
            Some(g) if g.nccl.is_some() => Ok(g),
            Some(_) => Err(Error::distributed(
                op,
                "the process group is unusable: an earlier collective on it timed out and its NCCL communicator was aborted",
            )),
            None => Err(destroyed(op)),
        }
    }

    /// `new_group`: the MPI engine splits its communicator, then NCCL's is split
    /// (`ncclCommSplit`, NCCL 2.18 on), or made from a unique id over the new MPI one.
    fn split(&mut self, id: usize, ranks: &[usize], timeout: Duration) -> Result<Option<usize>> {
        let parent = self.group("new_group", id)?;
        let key = ranks.iter().position(|&r| r == parent.rank);
        let sub = self.mpi.split(parent.mpi, ranks, timeout)?;
        let nccl = if comm::can_split() {
            let c = parent.nccl.as_ref().expect("group() returned a live group");
            kiln_core::cuda::with_stream(self.device, |_| c.split(key))??
        } else {
            match (sub, key) {
                (Some(sub), Some(k)) => {
                    Some(self.join(sub, k, ranks.len(), timeout, "new_group")?)
                }
                _ => None,
            }
        };
        Ok(match (sub, key, nccl) {
            (Some(sub), Some(k), Some(nccl)) => {
                self.groups.push(Group {
                    mpi: sub,
                    nccl: Some(nccl),
                    rank: k,
                    size: ranks.len(),
                });
                Some(self.groups.len() - 1)
            }
            (None, None, None) => None,
            (_, _, stray) => {
                if let Some(c) = stray {
                    let _ = kiln_core::cuda::with_stream(self.device, |_| c.destroy());
                }
                return Err(Error::distributed(
                    "new_group",
                    "MPI and NCCL disagree on this rank's membership of the new group",
                ));
            }
        })
    }

    /// The MPI engine's fingerprint exchange for `job` on MPI communicator `mpi`.
    fn handshake(&self, job: &Job, mpi: usize) -> Result<()> {
        let (work, done) = Work::pending(job.op.name(), job.timeout);
        self.mpi.handshake(
            Job {
                op: job.op.clone(),
                comm: mpi,
                seq: job.seq,
                rank: job.rank,
                size: job.size,
                timeout: job.timeout,
                done,
            },
            WORK,
        );
        work.wait()
    }

    /// `all_to_all_single`'s check that what every rank sends this one is what it expects
    /// (NCCL would hang or fail on a mismatch): the splits, all-gathered over MPI.
    fn check_splits(&self, job: &Job, mpi: usize, sends: &[usize], recvs: &[usize]) -> Result<()> {
        let op = job.op.name();
        let mine = Tensor::from_vec(
            sends.iter().map(|&s| s as i64).collect::<Vec<_>>(),
            &[job.size],
        )?;
        let all = Tensor::zeros(&[job.size * job.size][..], DType::I64)?;
        let (work, done) = Work::pending(op, job.timeout);
        self.mpi.submit(Job {
            op: Op::AllGatherIntoTensor {
                output: all.clone(),
                input: mine,
            },
            comm: mpi,
            seq: job.seq,
            rank: job.rank,
            size: job.size,
            timeout: job.timeout,
            done,
        });
        work.wait()?;
        let all = all.to_vec::<i64>()?;
        let incoming: Vec<usize> = (0..job.size)
            .map(|j| all[j * job.size + job.rank] as usize)
            .collect();
        if incoming != recvs {
            return Err(Error::shape(
                op,
                format!(
                    "output split sizes {recvs:?} (in elements) do not match what the ranks send to rank {}: {incoming:?}",
                    job.rank
                ),
            ));
        }
        Ok(())
    }

    /// Runs one job: handshake (collectives), local checks, NCCL calls on kiln's stream,
    /// the wait.
    fn run(&mut self, job: &Job) -> Result<()> {
        let name = job.op.name();
        let g = self.group(name, job.comm)?;
        let (mpi, rank, size) = (g.mpi, g.rank, g.size);
        let point_to_point = matches!(job.op, Op::Send { .. } | Op::Recv { .. });
        if !point_to_point {
            self.handshake(job, mpi)?;
        }
        // After the handshake the ranks agree on dtypes, so they all fail here together.
        let here = Device::Cuda(self.device);
        for t in tensors(&job.op) {
            types::datatype(name, t.dtype())?;
            if t.device() != here {
                return Err(Error::device(
                    name,
                    format!(
                        "Tensor found on device {} but this rank's NCCL process group uses {here} (device = local rank modulo the GPU count)",
                        t.device()
                    ),
                ));
            }
        }
        if let Op::AllToAllSingle {
            input_splits,
            output_splits,
            ..
        } = &job.op
        {
            self.check_splits(job, mpi, input_splits, output_splits)?;
        }
        // A barrier is a one-element all_reduce; all_gather gathers into one flat tensor.
        let op = match &job.op {
            Op::Barrier => Op::AllReduce {
                tensor: Tensor::zeros(&[1][..], DType::U8)?.to_device(here)?,
                op: crate::ReduceOp::Sum,
            },
            other => other.clone(),
        };
        let scratch = match &op {
            Op::AllGather { input, .. } => Some(Tensor::empty_on(
                &[size * input.numel()][..],
                input.dtype(),
                here,
            )?),
            _ => None,
        };
        let g = self.group(name, job.comm)?;
        let comm = g.nccl.as_ref().expect("group() returned a live group");
        let finished = kiln_core::cuda::with_stream(self.device, |stream| {
            let launch = ops::Launch {
                comm,
                stream,
                rank,
                size,
            };
            launch.enqueue(&op, scratch.as_ref())?;
            launch.wait(name, job.timeout)
        })??;
        if finished {
            if let Op::Recv {
                src: Some(s),
                source,
                ..
            } = &job.op
            {
                source.store(*s, std::sync::atomic::Ordering::Release);
            }
            return Ok(());
        }
        // Timed out: NCCL's kernels may never finish; aborting the communicator stops them.
        if let Some(c) = self.groups[job.comm].nccl.take() {
            let _ = kiln_core::cuda::with_stream(self.device, |_| c.abort());
        }
        Err(match job.op {
            Op::Send { .. } | Op::Recv { .. } => Error::distributed(
                name,
                format!(
                    "[Rank {rank}] {name} timed out after {} ms: the peer rank never posted the matching {}; the NCCL communicator was aborted",
                    job.timeout.as_millis(),
                    if name == "send" { "recv" } else { "send" }
                ),
            ),
            _ => crate::mpi::timed_out(
                WORK,
                name,
                job.seq,
                crate::mpi::job_numel(&job.op),
                job.timeout,
                rank,
            ),
        })
    }
}

/// Every tensor `op` reads or writes.
fn tensors(op: &Op) -> Vec<&Tensor> {
    match op {
        Op::AllReduce { tensor, .. }
        | Op::Broadcast { tensor, .. }
        | Op::Reduce { tensor, .. }
        | Op::Send { tensor, .. }
        | Op::Recv { tensor, .. } => vec![tensor],
        Op::AllGather { outputs, input } => outputs.iter().chain([input]).collect(),
        Op::AllGatherIntoTensor { output, input }
        | Op::ReduceScatterTensor { output, input, .. }
        | Op::AllToAllSingle { output, input, .. } => vec![output, input],
        Op::Barrier => Vec::new(),
    }
}
