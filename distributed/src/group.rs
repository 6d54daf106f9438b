//! Process groups: the default one `init_process_group` makes, sub-groups from
//! `new_group`, and the ranks and sizes they have (PyTorch's `torch.distributed` state).

use crate::engine::Engine;
use kiln_core::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A communication backend (PyTorch's `Backend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Open MPI: CPU tensors (CUDA tensors are staged through host memory), one process per
    /// rank under `mpirun`, any number of hosts.
    Mpi,
    /// NCCL for CUDA tensors, one GPU per rank; bootstrapped over MPI.
    Nccl,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Mpi => "mpi",
            Backend::Nccl => "nccl",
        })
    }
}

/// Options of [`init_process_group_with`]: the backend and how long a collective may wait
/// for the other ranks before it fails (PyTorch's `timeout`; default 30 minutes as for its
/// MPI and Gloo backends, 10 for NCCL). The environment variable `KILN_DIST_TIMEOUT_S`
/// overrides the default.
#[derive(Clone, Debug)]
pub struct InitOptions {
    pub backend: Backend,
    pub timeout: Duration,
}

impl InitOptions {
    /// The backend with its default timeout.
    pub fn new(backend: Backend) -> Self {
        let default = match backend {
            Backend::Mpi => Duration::from_secs(30 * 60),
            Backend::Nccl => Duration::from_secs(10 * 60),
        };
        let timeout = std::env::var("KILN_DIST_TIMEOUT_S")
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or(default);
        InitOptions { backend, timeout }
    }

    /// The same, with `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A set of ranks that run collectives together (PyTorch's `ProcessGroup`). Cheap to
/// clone; collectives are its methods (and free functions for the default group).
#[derive(Clone)]
pub struct ProcessGroup(pub(crate) Arc<GroupInner>);

pub(crate) struct GroupInner {
    pub engine: Arc<dyn Engine>,
    pub comm: usize,
    pub rank: usize,
    pub size: usize,
    /// World ranks of the members, in group-rank order.
    pub ranks: Vec<usize>,
    pub timeout: Duration,
    pub seq: AtomicU64,
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroup")
            .field("backend", &self.backend())
            .field("rank", &self.0.rank)
            .field("size", &self.0.size)
            .field("ranks", &self.0.ranks)
            .finish()
    }
}

impl ProcessGroup {
    /// This process's rank in the group.
    pub fn rank(&self) -> usize {
        self.0.rank
    }
    /// How many ranks the group has.
    pub fn size(&self) -> usize {
        self.0.size
    }
    /// The world ranks of the members, in group-rank order.
    pub fn ranks(&self) -> &[usize] {
        &self.0.ranks
    }
    /// The group's backend.
    pub fn backend(&self) -> Backend {
        self.0.engine.backend()
    }
    /// How long a collective waits for the other ranks.
    pub fn timeout(&self) -> Duration {
        self.0.timeout
    }
    pub(crate) fn next_seq(&self) -> u64 {
        self.0.seq.fetch_add(1, Ordering::Relaxed)
    }
}

/// The default group, set by `init_process_group`.
static DEFAULT: RwLock<Option<ProcessGroup>> = RwLock::new(None);

const NOT_INITIALIZED: &str =
    "Default process group has not been initialized, please make sure to call init_process_group.";

/// Sets up the default process group over `backend` (PyTorch's
/// `init_process_group(backend)`): every process launched by `mpirun` calls it once. The
/// world's ranks and size come from MPI.
pub fn init_process_group(backend: Backend) -> Result<()> {
    init_process_group_with(InitOptions::new(backend))
}

/// [`init_process_group`] with options (the timeout).
pub fn init_process_group_with(options: InitOptions) -> Result<()> {
    let mut slot = DEFAULT.write().unwrap_or_else(|e| e.into_inner());
    if slot.is_some() {
        return Err(Error::distributed(
            "init_process_group",
            "trying to initialize the default process group twice!",
        ));
    }
    let engine = crate::backends::start(options.backend, options.timeout)?;
    let (rank, size) = engine.world();
    *slot = Some(ProcessGroup(Arc::new(GroupInner {
        engine,
        comm: 0,
        rank,
        size,
        ranks: (0..size).collect(),
        timeout: options.timeout,
        seq: AtomicU64::new(0),
    })));
    Ok(())
}

/// Whether the default process group is set up.
pub fn is_initialized() -> bool {
    DEFAULT.read().unwrap_or_else(|e| e.into_inner()).is_some()
}

/// The default process group (PyTorch's `group.WORLD`).
pub fn default_group() -> Result<ProcessGroup> {
    DEFAULT
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .ok_or_else(|| Error::distributed("torch.distributed", NOT_INITIALIZED))
}

/// This process's rank in the default group (PyTorch's `get_rank()`).
pub fn rank() -> Result<usize> {
    default_group().map(|g| g.rank())
}

/// The number of ranks in the default group (PyTorch's `get_world_size()`).
pub fn world_size() -> Result<usize> {
    default_group().map(|g| g.size())
}

/// A group of the world ranks `ranks` (PyTorch's `new_group(ranks)`): every rank of the
/// world calls it, members or not, with the same list; members get the group (their rank
/// in it is their position in `ranks`), the others `None`.
pub fn new_group(ranks: &[usize]) -> Result<Option<ProcessGroup>> {
    new_group_with_timeout(ranks, default_group()?.timeout())
}

/// [`new_group`] whose collectives time out after `timeout` (PyTorch's `new_group(ranks,
/// timeout=...)`).
pub fn new_group_with_timeout(ranks: &[usize], timeout: Duration) -> Result<Option<ProcessGroup>> {
    let world = default_group()?;
    let mut seen = vec![false; world.size()];
    for &r in ranks {
        if r >= world.size() || std::mem::replace(&mut seen[r], true) {
            return Err(Error::value(
                "new_group",
                format!(
                    "ranks {ranks:?} must be distinct ranks of the world of size {}",
                    world.size()
                ),
            ));
        }
    }
    let comm = world.0.engine.split(world.0.comm, ranks, world.timeout())?;
    Ok(comm.map(|comm| {
        let rank = ranks
            .iter()
            .position(|&r| r == world.rank())
            .expect("the engine gave a communicator to a member only");
        ProcessGroup(Arc::new(GroupInner {
            engine: world.0.engine.clone(),
            comm,
            rank,
            size: ranks.len(),
            ranks: ranks.to_vec(),
            timeout,
            seq: AtomicU64::new(0),
        }))
    }))
}

/// Tears the default group down (PyTorch's `destroy_process_group()`): the backend is
/// finalized (MPI_Finalize), and every group made from it stops working. Call it once at
/// the end of each process.
pub fn destroy_process_group() -> Result<()> {
    let group = DEFAULT
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or_else(|| Error::distributed("destroy_process_group", NOT_INITIALIZED))?;
    group.0.engine.shutdown()
}
