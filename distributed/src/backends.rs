//! Which engine a backend name starts; a build without the backend's feature says how to
//! get it.

use crate::engine::Engine;
use crate::Backend;
use kiln_core::Result;
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn start(backend: Backend, timeout: Duration) -> Result<Arc<dyn Engine>> {
    match backend {
        #[cfg(feature = "mpi")]
        Backend::Mpi => Ok(crate::mpi::MpiEngine::start()? as Arc<dyn Engine>),
        #[cfg(not(feature = "mpi"))]
        Backend::Mpi => Err(kiln_core::Error::distributed(
            "init_process_group",
            "Distributed package doesn't have MPI built in: build with kiln's `mpi` feature (`kiln = { features = [\"mpi\"] }`, or kiln-distributed's), on a host with Open MPI installed (`apt-get install libopenmpi-dev openmpi-bin libclang-dev`)",
        )),
        #[cfg(feature = "nccl")]
        Backend::Nccl => Ok(crate::nccl::NcclEngine::start(timeout)? as Arc<dyn Engine>),
        #[cfg(not(feature = "nccl"))]
        Backend::Nccl => {
            let _ = timeout;
            Err(kiln_core::Error::distributed(
                "init_process_group",
                "Distributed package doesn't have NCCL built in: build kiln-distributed with its `nccl` feature",
            ))
        }
    }
}
