//! The CUDA libraries kiln loads at run time (driver, NVRTC, cuBLAS), and errors that say
//! which one is missing and which file names were tried, instead of cudarc's panic.
//!
//! cudarc is built for CUDA 13 names (`cuda-13000`), so it tries `libX.so`, `libX.so.13`,
//! then `libX.so.12` and older: NVRTC and cuBLAS from CUDA 12 (CI's pinned wheel) and from
//! CUDA 13 (the PyTorch wheels on the GPU machines) are both found on `LD_LIBRARY_PATH`.

use crate::{Error, Result};

fn tried(lib: &str) -> String {
    cudarc::get_lib_name_candidates(lib)
        .into_iter()
        .filter(|n| n.contains(".so"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn driver_present() -> bool {
    // SAFETY: only probes whether libcuda can be loaded; no CUDA call is made.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

pub(crate) fn nvrtc_present() -> bool {
    // SAFETY: only probes whether libnvrtc can be loaded.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

pub(crate) fn cublas_present() -> bool {
    // SAFETY: only probes whether libcublas can be loaded.
    unsafe { cudarc::cublas::sys::is_culib_present() }
}

/// Ok when NVRTC can be loaded, else an error naming the files tried and how to get one.
pub(crate) fn require_nvrtc() -> Result<()> {
    if nvrtc_present() {
        return Ok(());
    }
    Err(Error::Device(format!(
        "cannot compile CUDA kernels: the NVRTC library could not be loaded (tried {}); \
         install a CUDA toolkit or NVIDIA's `nvidia-cuda-nvrtc-cu12` / `nvidia-cuda-nvrtc` \
         (CUDA 13) wheel and add its lib folder to LD_LIBRARY_PATH",
        tried("nvrtc")
    )))
}

/// Ok when cuBLAS can be loaded, else an error naming `op`, the files tried and the fix.
pub(crate) fn require_cublas(op: &str) -> Result<()> {
    if cublas_present() {
        return Ok(());
    }
    Err(Error::device(
        op,
        format!(
            "CUDA matmul needs cuBLAS, which could not be loaded (tried {}); install a CUDA \
             toolkit or NVIDIA's `nvidia-cublas-cu12` / `nvidia-cublas` (CUDA 13) wheel and \
             add its lib folder to LD_LIBRARY_PATH",
            tried("cublas")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where cuBLAS is missing (this crate's CI has none), matmul's check is an error that
    /// names the op, the files tried and the fix, not cudarc's panic.
    #[test]
    fn a_missing_library_is_an_error_that_names_it() {
        match require_cublas("mm") {
            Ok(()) => assert!(cublas_present()),
            Err(e) => {
                let e = e.to_string();
                for want in [
                    "mm",
                    "cuBLAS",
                    "libcublas.so.13",
                    "libcublas.so.12",
                    "LD_LIBRARY_PATH",
                ] {
                    assert!(e.contains(want), "{want} not in: {e}");
                }
            }
        }
        match require_nvrtc() {
            Ok(()) => assert!(nvrtc_present()),
            Err(e) => assert!(e.to_string().contains("libnvrtc.so.13"), "{e}"),
        }
    }

    #[test]
    fn cuda_12_and_13_library_names_are_both_tried() {
        let names = cudarc::get_lib_name_candidates("nvrtc");
        for want in ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"] {
            assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
        }
        let names = cudarc::get_lib_name_candidates("cublas");
        for want in ["libcublas.so.13", "libcublas.so.12"] {
            assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
        }
    }
}
