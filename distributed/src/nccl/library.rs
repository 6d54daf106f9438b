//! libnccl, loaded at run time (cudarc's `dynamic-loading`): whether it can be loaded (an
//! error naming the files tried, instead of cudarc's panic), its version, and NCCL's result
//! codes as kiln errors.

use cudarc::nccl::sys;
use kiln_core::{Error, Result};
use std::ffi::CStr;

/// The oldest NCCL kiln calls: `ncclAvg` and bfloat16 arrived in 2.10, and every other
/// entry point kiln uses is older, except `ncclCommSplit` (2.18) and `ncclGetLastError`
/// (2.13), which are looked up before use.
const MIN_VERSION: i32 = 21000;

/// The name NCCL's packages install the library under (`libnccl2`, the `nvidia-nccl-*`
/// wheels); cudarc's loader does not try it.
const SONAME: &str = "libnccl.so.2";

/// The file names cudarc tries for libnccl.
fn tried() -> String {
    cudarc::get_lib_name_candidates("nccl")
        .into_iter()
        .filter(|n| n.contains(".so"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why the NCCL library cannot be used (missing, or older than kiln needs), or `None`.
pub(crate) fn unavailable_reason() -> Option<String> {
    // SAFETY: only probes whether libnccl can be loaded; no NCCL call is made.
    if !unsafe { sys::is_culib_present() } {
        // SAFETY: loading libnccl runs only its initialisers (no NCCL call); the handle is
        // dropped at once.
        let only_so_2 = unsafe { libloading::Library::new(SONAME) }.is_ok();
        return Some(if only_so_2 {
            format!(
                "{SONAME} is installed, but the NCCL library is loaded under the names {} (cudarc's), and none of them is there: link one to it, e.g. `mkdir -p ~/.kiln/nccl && ln -sf /path/to/{SONAME} ~/.kiln/nccl/libnccl.so`, and add that folder to LD_LIBRARY_PATH",
                tried()
            )
        } else {
            format!(
                "the NCCL library could not be loaded (tried {} and {SONAME}); install NCCL (`apt-get install libnccl2 libnccl-dev`, or NVIDIA's `nvidia-nccl-cu12` / `nvidia-nccl-cu13` wheel, linking its {SONAME} as libnccl.so) and add its lib folder to LD_LIBRARY_PATH",
                tried()
            )
        });
    }
    match version() {
        Ok(v) if v >= MIN_VERSION => None,
        Ok(v) => Some(format!(
            "the NCCL library found is version {}, older than the 2.10 kiln needs",
            version_string(v)
        )),
        Err(e) => Some(format!("ncclGetVersion failed: {e}")),
    }
}

/// NCCL's version code (`NCCL_VERSION_CODE`: 21903 for 2.19.3). Needs the library present.
pub(crate) fn version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: the library is loaded (checked by the caller) and ncclGetVersion, present in
    // every NCCL 2 release, only writes the int it is given.
    let r = unsafe { sys::ncclGetVersion(&mut v) };
    check("ncclGetVersion", r, None)?;
    Ok(v)
}

/// `2.19.3` for 21903 (codes from 2.9 on), `2.8.4` for 2804 (older ones).
fn version_string(code: i32) -> String {
    if code >= 20900 {
        format!("{}.{}.{}", code / 10000, code / 100 % 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, code / 100 % 10, code % 100)
    }
}

/// Whether the loaded libnccl exports `symbol` (entry points newer than 2.10), so that
/// calling it cannot hit cudarc's panic on a missing symbol.
pub(crate) fn has_symbol(symbol: &str) -> bool {
    // SAFETY: the library is loaded (callers run after `unavailable_reason` said so); the
    // symbol is only looked up, never called through this type.
    unsafe {
        sys::culib()
            .get::<unsafe extern "C" fn()>(symbol.as_bytes())
            .is_ok()
    }
}

/// Ok for `ncclSuccess`; otherwise PyTorch's "NCCL error in: …" with NCCL's own words and,
/// where the library has it, its last error on `comm`.
pub(crate) fn check(call: &str, r: sys::ncclResult_t, comm: Option<sys::ncclComm_t>) -> Result<()> {
    if r == sys::ncclResult_t::ncclSuccess {
        return Ok(());
    }
    // SAFETY: ncclGetErrorString returns a pointer to a static NUL-terminated string for
    // every result code.
    let what = unsafe { CStr::from_ptr(sys::ncclGetErrorString(r)) }
        .to_string_lossy()
        .into_owned();
    let last = if has_symbol("ncclGetLastError") {
        // SAFETY: `comm` is a live communicator or null (allowed: the last error of any);
        // the result is a NUL-terminated string NCCL owns, copied at once.
        let p = unsafe { sys::ncclGetLastError(comm.unwrap_or(std::ptr::null_mut())) };
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: as above, a non-null NUL-terminated string.
            let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
            if s.is_empty() {
                s
            } else {
                format!("\nLast error:\n{s}")
            }
        }
    } else {
        String::new()
    };
    let version = version().map(version_string).unwrap_or_default();
    Err(Error::distributed(
        call,
        format!(
            "NCCL error in: {call}, {what} (run with NCCL_DEBUG=INFO for details), NCCL version {version}\n{r:?}{last}"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_codes_read_as_nccl_prints_them() {
        assert_eq!(version_string(21903), "2.19.3");
        assert_eq!(version_string(22305), "2.23.5");
        assert_eq!(version_string(2804), "2.8.4");
    }

    /// Where libnccl is missing (this crate's CI has none), the reason names the files
    /// tried and the fix, and nothing panics.
    #[test]
    fn a_missing_library_is_a_reason_that_names_it() {
        if let Some(why) = unavailable_reason() {
            if !why.contains("version") {
                for want in ["libnccl.so", "LD_LIBRARY_PATH"] {
                    assert!(why.contains(want), "{want} not in: {why}");
                }
            }
        }
    }
}
