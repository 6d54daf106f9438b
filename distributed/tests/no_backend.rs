//! What a process gets without a process group, and without the MPI backend built in: errors
//! that say what to do, never a panic. (With the `mpi` feature the collectives are tested
//! under mpirun by tests/mpi.rs.)

use kiln_core::{ErrorKind, Tensor};
use kiln_distributed::{self as dist, ReduceOp};

#[test]
fn collectives_before_init_process_group_say_so() {
    assert!(!dist::is_initialized());
    let t = Tensor::from([1f32]);
    for e in [
        dist::all_reduce(&t, ReduceOp::Sum).unwrap_err(),
        dist::barrier().unwrap_err(),
        dist::rank().map(|_| ()).unwrap_err(),
        dist::destroy_process_group().unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::Distributed);
        assert!(
            e.to_string().contains(
                "Default process group has not been initialized, please make sure to call init_process_group."
            ),
            "{e}"
        );
    }
}

#[cfg(not(feature = "mpi"))]
#[test]
fn the_mpi_backend_without_its_feature_says_how_to_get_it() {
    let e = dist::init_process_group(dist::Backend::Mpi).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Distributed);
    assert!(
        e.to_string().contains("doesn't have MPI built in")
            && e.to_string().contains("`mpi` feature"),
        "{e}"
    );
    assert!(!dist::is_initialized());
}
