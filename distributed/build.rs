//! With the `mpi` feature: compiles `src/mpi/shim.c`, which hands Rust the values of MPI's
//! `MPI_IN_PLACE` macro (an implementation-defined address rsmpi does not expose), so
//! kiln's all-reduce works in place, as a direct `MPI_Allreduce` call does, instead of
//! copying every tensor into a send buffer first.

fn main() {
    println!("cargo:rerun-if-changed=src/mpi/shim.c");
    #[cfg(feature = "mpi")]
    {
        let lib = build_probe_mpi::probe().unwrap_or_else(|errs| {
            panic!(
                "kiln-distributed's `mpi` feature needs an MPI installation (Open MPI: \
                 `apt-get install libopenmpi-dev openmpi-bin`); probing found none: {errs:?}"
            )
        });
        let mut build = cc::Build::new();
        build.file("src/mpi/shim.c");
        for dir in &lib.include_paths {
            build.include(dir);
        }
        build.compile("kiln_mpi_shim");
    }
}
