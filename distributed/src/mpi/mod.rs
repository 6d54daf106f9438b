//! The MPI engine: one communication thread per process owns MPI (initialised on it, as
//! Horovod's background thread does; `MPI_THREAD_SERIALIZED`, so a program may also call
//! MPI itself while no kiln collective is in flight) and runs every job in
//! the order the program submitted it, so asynchronous collectives from any thread (DDP's
//! gradient hooks run inside backward) reach MPI in the same order on every rank.
//!
//! Each collective first exchanges fingerprints with a non-blocking all-gather polled
//! against the group's timeout: a rank that never arrives, or one that arrives with another
//! op, shape or dtype, fails the collective on every rank that did arrive, with an error,
//! instead of hanging or corrupting memory. The payload then moves with MPI's own blocking
//! collective (`MPI_Allreduce` in place, …), at the speed of a direct call. Point-to-point
//! ops are posted non-blocking and polled, so an `isend` and an `irecv` in flight do not
//! wait on each other.

mod half;
mod raw;

use crate::engine::{Engine, Job, Op};
use crate::fingerprint;
use crate::work::Completion;
use crate::{Backend, ReduceOp};
use kiln_core::{DType, Device, Error, Result, Tensor};
use raw::{Comm, Request};
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

enum Msg {
    Job(Job),
    Split {
        comm: usize,
        ranks: Vec<usize>,
        reply: mpsc::Sender<Result<Option<usize>>>,
    },
    /// Only the fingerprint exchange of a collective whose payload another engine moves
    /// (NCCL): `work` names that engine's work in the timeout error.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    Handshake {
        job: Box<Job>,
        work: &'static str,
    },
    Shutdown(mpsc::Sender<Result<()>>),
}

/// MPI can be initialised once per process.
static STARTED: AtomicBool = AtomicBool::new(false);

pub(crate) struct MpiEngine {
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    rank: usize,
    size: usize,
}

impl MpiEngine {
    /// Initialises MPI on a new communication thread.
    pub(crate) fn start() -> Result<Arc<MpiEngine>> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(Error::distributed(
                "init_process_group",
                "MPI has already been initialized in this process (MPI allows MPI_Init once per process, even after MPI_Finalize)",
            ));
        }
        // A rank's MPI calls run on this thread beside the threads that compute: Open MPI's
        // default busy-polling in a blocking call would take their core while it waits for a
        // peer (DDP's step on 2 ranks of a 2-core machine: 64% over a plain step with it,
        // 25% without). Yielding when idle is the better default here; a job that wants the
        // polling back sets `--mca mpi_yield_when_idle 0`. Read by MPI_Init, which runs
        // after this; set before this process starts a thread of its own for MPI.
        if std::env::var_os("OMPI_MCA_mpi_yield_when_idle").is_none() {
            std::env::set_var("OMPI_MCA_mpi_yield_when_idle", "1");
        }
        let (tx, rx) = mpsc::channel();
        let (init_tx, init_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("kiln-mpi".into())
            .spawn(move || comm_thread(rx, init_tx))
            .map_err(|e| {
                Error::distributed(
                    "init_process_group",
                    format!("cannot start MPI's thread: {e}"),
                )
            })?;
        let (rank, size) = init_rx.recv().map_err(|_| {
            Error::distributed("init_process_group", "MPI's thread ended during MPI_Init")
        })??;
        Ok(Arc::new(MpiEngine {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            rank,
            size,
        }))
    }

    /// Exchanges `job`'s fingerprint across its group (communicator `job.comm` of this
    /// engine) and completes `job.done` with the outcome, without moving any payload: the
    /// NCCL engine's check that every rank arrived, with the same op, shape and dtype,
    /// before it enqueues the collective. `work` names the caller's work type in the
    /// timeout error (`WorkNCCL`).
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn handshake(&self, job: Job, work: &'static str) {
        let job = Box::new(job);
        if let Err(Msg::Handshake { job, .. }) = self.send(Msg::Handshake { job, work }) {
            job.done.complete(Err(finalized(job.op.name())));
        }
    }

    fn send(&self, msg: Msg) -> std::result::Result<(), Msg> {
        match &*self.tx.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(tx) => tx.send(msg).map_err(|e| e.0),
            None => Err(msg),
        }
    }
}

fn finalized(op: &str) -> Error {
    Error::distributed(
        op,
        "the process group has been destroyed (destroy_process_group)",
    )
}

impl Engine for MpiEngine {
    fn backend(&self) -> Backend {
        Backend::Mpi
    }

    fn world(&self) -> (usize, usize) {
        (self.rank, self.size)
    }

    fn submit(&self, job: Job) {
        if let Err(Msg::Job(job)) = self.send(Msg::Job(job)) {
            job.done.complete(Err(finalized(job.op.name())));
        }
    }

    fn split(&self, comm: usize, ranks: &[usize], _timeout: Duration) -> Result<Option<usize>> {
        let (reply, rx) = mpsc::channel();
        self.send(Msg::Split {
            comm,
            ranks: ranks.to_vec(),
            reply,
        })
        .map_err(|_| finalized("new_group"))?;
        rx.recv().map_err(|_| finalized("new_group"))?
    }

    fn shutdown(&self) -> Result<()> {
        let (reply, rx) = mpsc::channel();
        let sent = self.send(Msg::Shutdown(reply)).is_ok();
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if !sent {
            return Err(finalized("destroy_process_group"));
        }
        let r = rx
            .recv()
            .unwrap_or_else(|_| Err(finalized("destroy_process_group")));
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
        r
    }
}

/// A send or receive in flight: its own byte buffer (so no tensor stays locked while it
/// waits), the request, and where the outcome goes.
struct P2p {
    req: Request,
    buf: Vec<u8>,
    /// For a receive: the tensor to fill and where the sender's rank goes.
    recv: Option<(Tensor, Arc<std::sync::atomic::AtomicUsize>)>,
    deadline: Instant,
    timeout: Duration,
    done: Completion,
}

/// A timed-out fingerprint exchange: its buffers and request, which MPI may still use.
type Abandoned = (Box<[i64]>, Box<[i64]>, Request);

struct State {
    /// Communicators by id; 0 is the world's duplicate. `None` once freed.
    comms: Vec<Option<Comm>>,
    /// Communicators a timed-out collective left with a request that will never complete:
    /// later collectives on them fail at once.
    broken: Vec<bool>,
    half: half::HalfOps,
    p2p: Vec<P2p>,
    /// Buffers and requests of timed-out exchanges, kept alive until MPI_Finalize
    /// because MPI may still write them.
    abandoned: Vec<Abandoned>,
}

fn comm_thread(rx: mpsc::Receiver<Msg>, init: mpsc::Sender<Result<(usize, usize)>>) {
    let Some((universe, _threading)) = mpi::initialize_with_threading(mpi::Threading::Serialized)
    else {
        let _ = init.send(Err(Error::distributed(
            "init_process_group",
            "MPI has already been initialized in this process",
        )));
        return;
    };
    let setup = || -> Result<(State, usize, usize)> {
        let world = raw::dup(raw::comm_world())?;
        let (rank, size) = raw::rank_size(world)?;
        let state = State {
            comms: vec![Some(world)],
            broken: vec![false],
            half: half::HalfOps::create()?,
            p2p: Vec::new(),
            abandoned: Vec::new(),
        };
        Ok((state, rank, size))
    };
    let mut state = match setup() {
        Ok((state, rank, size)) => {
            let _ = init.send(Ok((rank, size)));
            state
        }
        Err(e) => {
            let _ = init.send(Err(e));
            drop(universe);
            return;
        }
    };
    let mut idle = 0u32;
    let reply = loop {
        let msg = if state.p2p.is_empty() {
            match rx.recv() {
                Ok(m) => m,
                Err(_) => break None,
            }
        } else {
            state.poll_p2p();
            match rx.try_recv() {
                Ok(m) => m,
                Err(mpsc::TryRecvError::Empty) => {
                    backoff(&mut idle);
                    continue;
                }
                Err(mpsc::TryRecvError::Disconnected) => break None,
            }
        };
        idle = 0;
        match msg {
            Msg::Job(job) => state.run(job),
            Msg::Handshake { job, work } => {
                let r = state
                    .comm(job.op.name(), job.comm)
                    .and_then(|c| state.handshake(&job, c, work));
                job.done.complete(r);
            }
            Msg::Split { comm, ranks, reply } => {
                let _ = reply.send(state.split(comm, &ranks));
            }
            Msg::Shutdown(reply) => break Some(reply),
        }
    };
    // Jobs still queued or in flight fail; then everything MPI made is freed before
    // MPI_Finalize (the universe's drop).
    for p in state.p2p.drain(..) {
        p.done.complete(Err(finalized(p.done.op())));
    }
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Msg::Job(job) => job.done.complete(Err(finalized(job.op.name()))),
            Msg::Handshake { job, .. } => job.done.complete(Err(finalized(job.op.name()))),
            _ => {}
        }
    }
    for c in state.comms.drain(..).flatten() {
        raw::free(c);
    }
    state.half.free();
    // MPI_Finalize; the buffers of exchanges that timed out are freed only after it, when
    // MPI can no longer write them.
    drop(universe);
    drop(state.abandoned);
    if let Some(r) = reply {
        let _ = r.send(Ok(()));
    }
}

/// Waits a little longer each time nothing happened: spinning answers fast, but on an
/// oversubscribed machine (4 ranks on 2 cores in CI) a spinning thread starves the ranks it
/// waits for.
pub(crate) fn backoff(idle: &mut u32) {
    *idle += 1;
    if *idle < 64 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// The timeout error, in the words of PyTorch's watchdog; `work` is the backend's work type
/// (`WorkMPI`, `WorkNCCL`).
pub(crate) fn timed_out(
    work: &str,
    job_op: &str,
    seq: u64,
    numel: usize,
    timeout: Duration,
    rank: usize,
) -> Error {
    Error::distributed(
        job_op,
        format!(
            "[Rank {rank}] Watchdog caught collective operation timeout: {work}(SeqNum={seq}, OpType={}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={}) ran for {} milliseconds before timing out. A rank did not reach this collective: it returned early, crashed, or ran other collectives.",
            job_op.to_uppercase(),
            timeout.as_millis(),
            timeout.as_millis()
        ),
    )
}

/// The MPI reduction for `op` on `dtype` (f16/bf16: kiln's own; bool: logical or/and).
fn mpi_op(half: &half::HalfOps, dtype: DType, op: ReduceOp) -> raw::MpiOp {
    match dtype {
        DType::F16 => half.get(false, op),
        DType::BF16 => half.get(true, op),
        DType::Bool => match op {
            ReduceOp::Sum | ReduceOp::Max | ReduceOp::Avg => raw::system_op("lor"),
            ReduceOp::Product | ReduceOp::Min => raw::system_op("land"),
        },
        _ => raw::system_op(match op {
            ReduceOp::Sum | ReduceOp::Avg => "sum",
            ReduceOp::Product => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }),
    }
}

/// A tensor's CPU twin for MPI: itself on the CPU, else a host copy that `finish` writes
/// back (MPI here is not CUDA-aware; Gloo stages CUDA tensors the same way).
struct Host {
    host: Tensor,
    original: Option<Tensor>,
}

impl Host {
    fn of(t: &Tensor) -> Result<Host> {
        if t.device() == Device::Cpu {
            return Ok(Host {
                host: t.clone(),
                original: None,
            });
        }
        let _g = kiln_core::no_grad();
        Ok(Host {
            host: t.to_device(Device::Cpu)?.contiguous()?,
            original: Some(t.clone()),
        })
    }

    /// Writes the host copy back to the device tensor.
    fn finish(self) -> Result<()> {
        if let Some(t) = self.original {
            let _g = kiln_core::no_grad();
            t.copy_(&self.host)?;
        }
        Ok(())
    }
}

/// Divides `t` by `n` in place for `ReduceOp::Avg`: true division on floats, rounded
/// toward zero on integers.
fn average(t: &Tensor, n: usize) -> Result<()> {
    let _g = kiln_core::no_grad();
    if t.dtype().is_floating_point() {
        t.div_scalar_(n as f64)?;
    } else {
        let q = kiln_core::div_mode(
            t,
            &Tensor::scalar_tensor(n as i64, t.dtype())?,
            Some("trunc"),
        )?;
        t.copy_(&q)?;
    }
    Ok(())
}

impl State {
    fn comm(&self, op: &str, id: usize) -> Result<Comm> {
        match self.comms.get(id).copied().flatten() {
            Some(c) if !self.broken[id] => Ok(c),
            Some(_) => Err(Error::distributed(
                op,
                "the process group is unusable: an earlier collective on it timed out, and its ranks no longer agree on what runs next",
            )),
            None => Err(finalized(op)),
        }
    }

    fn run(&mut self, job: Job) {
        match job.op.clone() {
            Op::Send { tensor, dst, tag } => {
                if let Err(e) = self.start_send(&job, &tensor, dst, tag) {
                    job.done.complete(Err(e));
                }
            }
            Op::Recv {
                tensor,
                src,
                tag,
                source,
            } => {
                if let Err(e) = self.start_recv(&job, &tensor, src, tag, source) {
                    job.done.complete(Err(e));
                }
            }
            _ => {
                let r = self.collective(&job);
                job.done.complete(r);
            }
        }
    }

    fn start_send(&mut self, job: &Job, t: &Tensor, dst: usize, tag: i32) -> Result<()> {
        let comm = self.comm("send", job.comm)?;
        let host = Host::of(t)?;
        let buf = host.host.with_bytes("send", |b| b.to_vec())?;
        // SAFETY: `buf` moves into the P2p entry below with its heap block unmoved, and the
        // entry outlives the request (dropped only after MPI_Test reported completion, or
        // leaked on timeout).
        let req = unsafe { raw::isend("send", &buf, dst, tag, comm)? };
        self.p2p.push(P2p {
            req,
            buf,
            recv: None,
            deadline: Instant::now() + job.timeout,
            timeout: job.timeout,
            done: job.done.clone(),
        });
        Ok(())
    }

    fn start_recv(
        &mut self,
        job: &Job,
        t: &Tensor,
        src: Option<usize>,
        tag: i32,
        source: Arc<std::sync::atomic::AtomicUsize>,
    ) -> Result<()> {
        let comm = self.comm("recv", job.comm)?;
        let mut buf = vec![0u8; t.numel() * t.dtype().size_in_bytes()];
        // SAFETY: as in `start_send`; the buffer is read only after completion.
        let req = unsafe { raw::irecv("recv", &mut buf, src, tag, comm)? };
        self.p2p.push(P2p {
            req,
            buf,
            recv: Some((t.clone(), source)),
            deadline: Instant::now() + job.timeout,
            timeout: job.timeout,
            done: job.done.clone(),
        });
        Ok(())
    }

    /// Completes the point-to-point ops that have finished or timed out.
    fn poll_p2p(&mut self) {
        let mut i = 0;
        while i < self.p2p.len() {
            let p = &mut self.p2p[i];
            let op = if p.recv.is_some() { "recv" } else { "send" };
            let outcome = match raw::test(op, &mut p.req) {
                Err(e) => Some(Err(e)),
                Ok(Some(status)) => Some(match &p.recv {
                    None => Ok(()),
                    Some((t, source)) => {
                        let got = raw::received(&status, raw::datatype(DType::U8));
                        if got != p.buf.len() {
                            Err(Error::shape(
                                "recv",
                                format!(
                                    "received {got} bytes for a tensor of {} bytes: the sender's tensor has another size or dtype ({:?} {} here)",
                                    p.buf.len(),
                                    t.shape(),
                                    t.dtype()
                                ),
                            ))
                        } else {
                            source.store(raw::source(&status), Ordering::Release);
                            Host::of(t).and_then(|h| {
                                h.host
                                    .with_bytes_mut("recv", |b| b.copy_from_slice(&p.buf))?;
                                h.finish()
                            })
                        }
                    }
                }),
                Ok(None) if Instant::now() >= p.deadline => {
                    if p.recv.is_some() {
                        raw::cancel(&mut p.req);
                    }
                    Some(Err(Error::distributed(
                        op,
                        format!(
                            "{op} timed out after {} ms: the peer rank never posted the matching {}",
                            p.timeout.as_millis(),
                            if op == "send" { "recv" } else { "send" }
                        ),
                    )))
                }
                Ok(None) => None,
            };
            match outcome {
                Some(r) => {
                    let p = self.p2p.swap_remove(i);
                    if r.is_err() && p.recv.is_none() {
                        // A send MPI may still read: its buffer stays alive.
                        std::mem::forget(p.buf);
                    }
                    p.done.complete(r);
                }
                None => i += 1,
            }
        }
    }

    fn split(&mut self, comm: usize, ranks: &[usize]) -> Result<Option<usize>> {
        let parent = self.comm("new_group", comm)?;
        let (me, _) = raw::rank_size(parent)?;
        let key = ranks.iter().position(|&r| r == me);
        let new = raw::split(parent, key.is_some(), key.unwrap_or(0) as c_int)?;
        Ok(new.map(|c| {
            self.comms.push(Some(c));
            self.broken.push(false);
            self.comms.len() - 1
        }))
    }

    /// Exchanges fingerprints with every rank of the group, waiting at most the timeout.
    fn handshake(&mut self, job: &Job, comm: Comm, work: &str) -> Result<()> {
        let op = job.op.name();
        let mine: Box<[i64]> = fingerprint::of(job).to_vec().into_boxed_slice();
        let mut all: Box<[i64]> = vec![0i64; fingerprint::LEN * job.size].into_boxed_slice();
        // SAFETY: both boxes are kept until the request completes, or moved into
        // `abandoned` (freed after MPI_Finalize) if it does not.
        let mut req = unsafe {
            raw::iallgather_i64(
                op,
                mine.as_ptr(),
                fingerprint::LEN as c_int,
                all.as_mut_ptr(),
                comm,
            )?
        };
        let deadline = Instant::now() + job.timeout;
        let mut idle = 0u32;
        loop {
            if raw::test(op, &mut req)?.is_some() {
                break;
            }
            if !self.p2p.is_empty() {
                self.poll_p2p();
            }
            if Instant::now() >= deadline {
                self.broken[job.comm] = true;
                self.abandoned.push((mine, all, req));
                return Err(timed_out(
                    work,
                    op,
                    job.seq,
                    job_numel(&job.op),
                    job.timeout,
                    job.rank,
                ));
            }
            backoff(&mut idle);
        }
        match fingerprint::mismatch(job.rank, &all) {
            Some(m) => Err(Error::distributed(op, m)),
            None => Ok(()),
        }
    }

    fn collective(&mut self, job: &Job) -> Result<()> {
        let op = job.op.name();
        let comm = self.comm(op, job.comm)?;
        self.handshake(job, comm, "WorkMPI")?;
        match &job.op {
            Op::AllReduce { tensor, op: red } => {
                let h = Host::of(tensor)?;
                let dt = raw::datatype(tensor.dtype());
                let mop = mpi_op(&self.half, tensor.dtype(), *red);
                let esize = tensor.dtype().size_in_bytes();
                h.host.with_bytes_mut(op, |b| {
                    // Chunks MPI's int count can address.
                    for chunk in b.chunks_mut(c_int::MAX as usize / esize * esize) {
                        raw::allreduce_in_place(
                            op,
                            chunk,
                            (chunk.len() / esize) as c_int,
                            dt,
                            mop,
                            comm,
                        )?;
                    }
                    Ok::<_, Error>(())
                })??;
                if *red == ReduceOp::Avg {
                    average(&h.host, job.size)?;
                }
                h.finish()
            }
            Op::Broadcast { tensor, src } => {
                let h = Host::of(tensor)?;
                let dt = raw::datatype(tensor.dtype());
                let esize = tensor.dtype().size_in_bytes();
                h.host.with_bytes_mut(op, |b| {
                    for chunk in b.chunks_mut(c_int::MAX as usize / esize * esize) {
                        raw::bcast(op, chunk, (chunk.len() / esize) as c_int, dt, *src, comm)?;
                    }
                    Ok::<_, Error>(())
                })??;
                h.finish()
            }
            Op::Reduce {
                tensor,
                dst,
                op: red,
            } => {
                let h = Host::of(tensor)?;
                let dt = raw::datatype(tensor.dtype());
                let mop = mpi_op(&self.half, tensor.dtype(), *red);
                let esize = tensor.dtype().size_in_bytes();
                let root = job.rank == *dst;
                h.host.with_bytes_mut(op, |b| {
                    for chunk in b.chunks_mut(c_int::MAX as usize / esize * esize) {
                        raw::reduce(
                            op,
                            chunk,
                            (chunk.len() / esize) as c_int,
                            dt,
                            mop,
                            *dst,
                            root,
                            comm,
                        )?;
                    }
                    Ok::<_, Error>(())
                })??;
                if root && *red == ReduceOp::Avg {
                    average(&h.host, job.size)?;
                }
                // Only the root's tensor holds the result; elsewhere it is unchanged.
                if root {
                    h.finish()?;
                }
                Ok(())
            }
            Op::AllGatherIntoTensor { output, input } => {
                let src = Host::of(input)?.host.with_bytes(op, |b| b.to_vec())?;
                let n = raw::count(op, input.numel())?;
                let out = Host::of(output)?;
                let dt = raw::datatype(input.dtype());
                out.host
                    .with_bytes_mut(op, |b| raw::allgather(op, &src, n, b, dt, comm))??;
                out.finish()
            }
            Op::AllGather { outputs, input } => {
                let src = Host::of(input)?.host.with_bytes(op, |b| b.to_vec())?;
                let n = raw::count(op, input.numel())?;
                let mut all = vec![0u8; src.len() * job.size];
                raw::allgather(op, &src, n, &mut all, raw::datatype(input.dtype()), comm)?;
                for (o, part) in outputs.iter().zip(all.chunks(src.len().max(1))) {
                    let h = Host::of(o)?;
                    h.host
                        .with_bytes_mut(op, |b| b.copy_from_slice(&part[..b.len()]))?;
                    h.finish()?;
                }
                Ok(())
            }
            Op::ReduceScatterTensor {
                output,
                input,
                op: red,
            } => {
                let src = Host::of(input)?.host.with_bytes(op, |b| b.to_vec())?;
                let n = raw::count(op, output.numel())?;
                let out = Host::of(output)?;
                let dt = raw::datatype(input.dtype());
                let mop = mpi_op(&self.half, input.dtype(), *red);
                out.host.with_bytes_mut(op, |b| {
                    raw::reduce_scatter_block(op, &src, b, n, dt, mop, comm)
                })??;
                if *red == ReduceOp::Avg {
                    average(&out.host, job.size)?;
                }
                out.finish()
            }
            Op::AllToAllSingle {
                output,
                input,
                output_splits,
                input_splits,
            } => {
                let ints = |v: &[usize]| -> Result<Vec<c_int>> {
                    v.iter().map(|&x| raw::count(op, x)).collect()
                };
                let (scounts, rcounts) = (ints(input_splits)?, ints(output_splits)?);
                // Rank j's count for this rank must be what this rank expects from j.
                let sent_to = raw::allgather_ints(op, &scounts, comm, job.size)?;
                let incoming: Vec<c_int> = (0..job.size)
                    .map(|j| sent_to[j * job.size + job.rank])
                    .collect();
                if incoming != rcounts {
                    return Err(Error::shape(
                        op,
                        format!(
                            "output split sizes {:?} (in elements) do not match what the ranks send to rank {}: {:?}",
                            rcounts, job.rank, incoming
                        ),
                    ));
                }
                let displs = |c: &[c_int]| -> Vec<c_int> {
                    c.iter()
                        .scan(0 as c_int, |acc, &x| {
                            let d = *acc;
                            *acc += x;
                            Some(d)
                        })
                        .collect()
                };
                let (sd, rd) = (displs(&scounts), displs(&rcounts));
                let src = Host::of(input)?.host.with_bytes(op, |b| b.to_vec())?;
                let out = Host::of(output)?;
                let dt = raw::datatype(input.dtype());
                out.host.with_bytes_mut(op, |b| {
                    raw::alltoallv(op, &src, &scounts, &sd, b, &rcounts, &rd, dt, comm)
                })??;
                out.finish()
            }
            // The handshake was the barrier.
            Op::Barrier => Ok(()),
            Op::Send { .. } | Op::Recv { .. } => {
                unreachable!("point-to-point ops are not collectives")
            }
        }
    }
}

/// The element count a timeout error reports for `op`.
pub(crate) fn job_numel(op: &Op) -> usize {
    match op {
        Op::AllReduce { tensor, .. } | Op::Broadcast { tensor, .. } | Op::Reduce { tensor, .. } => {
            tensor.numel()
        }
        Op::AllGather { input, .. }
        | Op::AllGatherIntoTensor { input, .. }
        | Op::ReduceScatterTensor { input, .. }
        | Op::AllToAllSingle { input, .. } => input.numel(),
        _ => 0,
    }
}
