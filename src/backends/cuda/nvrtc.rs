//! Compiling generated CUDA modules with NVRTC: to a CUBIN for the device's own `sm_XY`
//! where this NVRTC knows that architecture, else to PTX for the newest one it knows below
//! it (which the driver finishes at load). A CUBIN needs no driver-side JIT, so an NVRTC
//! newer than the driver still works, and a module loads without a PTX-assembly pause.

use super::libs;
use crate::{Error, Result};
use cudarc::nvrtc::{result as rtc, sys};
use std::ffi::{CStr, CString};
use std::sync::OnceLock;

/// What NVRTC is asked to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Machine code for `sm_<arch>` (e.g. 90 for an H100).
    Cubin(u32),
    /// PTX for `compute_<arch>`, assembled by the driver when the module is loaded.
    Ptx(u32),
}

impl Target {
    fn flag(self) -> String {
        match self {
            Target::Cubin(a) => format!("--gpu-architecture=sm_{a}"),
            Target::Ptx(a) => format!("--gpu-architecture=compute_{a}"),
        }
    }

    /// Part of the kernel cache's key and file name.
    pub fn tag(self) -> String {
        match self {
            Target::Cubin(a) => format!("sm_{a}.cubin"),
            Target::Ptx(a) => format!("compute_{a}.ptx"),
        }
    }
}

/// NVRTC's `(major, minor)` version.
pub fn version() -> Result<(i32, i32)> {
    libs::require_nvrtc()?;
    static VERSION: OnceLock<(i32, i32)> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-parameters of the documented types.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| Error::Device(format!("nvrtcVersion failed: {e:?}")))?;
    Ok(*VERSION.get_or_init(|| (major, minor)))
}

/// The real architectures this NVRTC can compile for (e.g. `[75, 80, …, 90, 100, 120]`).
pub fn supported_archs() -> Result<Vec<u32>> {
    libs::require_nvrtc()?;
    let mut n = 0;
    // SAFETY: out-parameter; then a buffer of exactly the count NVRTC reported.
    unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) }
        .result()
        .map_err(|e| Error::Device(format!("nvrtcGetNumSupportedArchs failed: {e:?}")))?;
    let mut archs = vec![0i32; n.max(0) as usize];
    // SAFETY: `archs` holds `n` ints, as nvrtcGetSupportedArchs writes.
    unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .map_err(|e| Error::Device(format!("nvrtcGetSupportedArchs failed: {e:?}")))?;
    Ok(archs.into_iter().map(|a| a.max(0) as u32).collect())
}

/// The target for a device of compute capability `major.minor` given the architectures
/// NVRTC supports: its own CUBIN when listed, else PTX for the newest listed one below it.
pub fn target_for(major: u32, minor: u32, supported: &[u32]) -> Option<Target> {
    let sm = major * 10 + minor;
    if supported.contains(&sm) {
        return Some(Target::Cubin(sm));
    }
    supported
        .iter()
        .copied()
        .filter(|&a| a < sm)
        .max()
        .map(Target::Ptx)
}

/// The options every module is compiled with. Part of the cache key.
pub fn options(target: Target, verbose: bool) -> Vec<String> {
    let mut o = vec![
        target.flag(),
        // #186: "pointless comparison of unsigned integer with zero" from generic templates.
        "--diag-suppress=186".to_string(),
    ];
    if verbose {
        // ptxas's report (registers, spills, stack) in the program log, for the CI check.
        o.push("--ptxas-options=-v".to_string());
    }
    o
}

/// A compiled module: the image (CUBIN bytes, or PTX text with its NUL) and NVRTC's log.
pub struct Compiled {
    pub image: Vec<u8>,
    pub log: String,
}

/// Compiles `src` (module `name`) with `options`; `target` says which image to take.
pub fn compile(name: &str, src: &str, target: Target, options: &[String]) -> Result<Compiled> {
    libs::require_nvrtc()?;
    let fail = |what: &str, e: rtc::NvrtcError| {
        Error::Device(format!(
            "NVRTC {what} failed on CUDA module '{name}': {e:?}"
        ))
    };
    let csrc = CString::new(src)
        .map_err(|_| Error::Device(format!("CUDA module '{name}' contains a NUL byte")))?;
    let cname = CString::new(format!("{name}.cu")).expect("module names have no NUL");
    let prog = rtc::create_program(&csrc, Some(&cname)).map_err(|e| fail("create", e))?;
    // SAFETY: `prog` was created above and is destroyed once, below, on every path;
    // `csrc`/`cname` outlive it.
    let result = unsafe { build(prog, name, target, options) };
    // SAFETY: as above.
    let _ = unsafe { rtc::destroy_program(prog) };
    result
}

/// # Safety
/// `prog` must be a live program from `create_program`.
unsafe fn build(
    prog: sys::nvrtcProgram,
    name: &str,
    target: Target,
    options: &[String],
) -> Result<Compiled> {
    // SAFETY: `prog` is a live program (this function's contract).
    let compiled = unsafe { rtc::compile_program(prog, options) };
    // SAFETY: as above; the log is read after compiling, as NVRTC requires.
    let log = unsafe { rtc::get_program_log(prog) }
        .map(|l| {
            // SAFETY: NVRTC's log is NUL-terminated.
            unsafe { CStr::from_ptr(l.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    if compiled.is_err() {
        return Err(Error::Device(format!(
            "NVRTC failed to compile CUDA module '{name}':\n{log}"
        )));
    }
    let image = match target {
        Target::Cubin(_) => {
            let mut size = 0usize;
            // SAFETY: `prog` is a live, compiled program; `size` is a valid out-pointer.
            unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }
                .result()
                .map_err(|e| Error::Device(format!("nvrtcGetCUBINSize on '{name}': {e:?}")))?;
            let mut bytes = vec![0u8; size];
            // SAFETY: `bytes` holds the `size` bytes NVRTC just reported for this program's
            // CUBIN, which it writes in full.
            unsafe { sys::nvrtcGetCUBIN(prog, bytes.as_mut_ptr().cast()) }
                .result()
                .map_err(|e| Error::Device(format!("nvrtcGetCUBIN on '{name}': {e:?}")))?;
            bytes
        }
        // SAFETY: `prog` is a live, compiled program.
        Target::Ptx(_) => unsafe { rtc::get_ptx(prog) }
            .map_err(|e| Error::Device(format!("nvrtcGetPTX on '{name}': {e:?}")))?
            .into_iter()
            .map(|c| c as u8)
            .collect(),
    };
    Ok(Compiled { image, log })
}

/// The lines of ptxas's `-v` report that show a problem (register spills, a resource
/// error), each prefixed with its kernel's name.
pub fn ptxas_problems(log: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut kernel = String::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            kernel = rest.split('\'').next().unwrap_or_default().to_string();
        }
        if line.contains("spill stores") {
            let nums: Vec<u64> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|t| t.parse().ok())
                .collect();
            // "N bytes stack frame, S bytes spill stores, L bytes spill loads"
            if nums.len() >= 3 && (nums[1] > 0 || nums[2] > 0) {
                problems.push(format!("{kernel}: {}", line.trim()));
            }
        }
        if line.contains("error") || line.contains("uses too much") {
            problems.push(format!("{kernel}: {}", line.trim()));
        }
    }
    problems
}

/// The most registers any kernel in ptxas's `-v` report uses.
pub fn max_registers(log: &str) -> u32 {
    log.lines()
        .filter_map(|l| l.split("Used ").nth(1))
        .filter_map(|r| r.split_whitespace().next()?.parse().ok())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_architecture_gets_its_own_cubin() {
        let nvrtc_12_4 = [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
        assert_eq!(target_for(9, 0, &nvrtc_12_4), Some(Target::Cubin(90)));
        assert_eq!(target_for(8, 0, &nvrtc_12_4), Some(Target::Cubin(80)));
        // Blackwell on an NVRTC that predates it: PTX for Hopper, finished by the driver.
        assert_eq!(target_for(10, 0, &nvrtc_12_4), Some(Target::Ptx(90)));
        assert_eq!(target_for(12, 1, &nvrtc_12_4), Some(Target::Ptx(90)));
        // NVRTC 13 dropped Maxwell and Pascal.
        let nvrtc_13 = [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];
        assert_eq!(target_for(6, 0, &nvrtc_13), None);
        assert_eq!(target_for(7, 0, &nvrtc_13), None);
        assert_eq!(target_for(10, 0, &nvrtc_13), Some(Target::Cubin(100)));
    }

    #[test]
    fn ptxas_reports_are_read_for_spills_and_registers() {
        let clean = "ptxas info    : Compiling entry function 'k_f32' for 'sm_90'\n\
                     ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
                     ptxas info    : Used 32 registers, used 0 barriers\n";
        assert!(ptxas_problems(clean).is_empty());
        assert_eq!(max_registers(clean), 32);
        let spilled = "ptxas info    : Compiling entry function 'sort_f64' for 'sm_80'\n\
                       ptxas         .     8 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
                       ptxas info    : Used 255 registers\n";
        let p = ptxas_problems(spilled);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("sort_f64: "), "{p:?}");
        assert_eq!(max_registers(spilled), 255);
    }
}
