//! Compiled CUDA modules kept on disk between processes, as PyTorch's and Triton's kernel
//! caches do: assembling every module costs minutes of ptxas, and a process that only trains
//! a small model would otherwise pay seconds of it at every start.
//!
//! The key hashes the module's source, the NVRTC options (target architecture included) and
//! NVRTC's version, so an edited kernel, another GPU or another NVRTC never reads a stale
//! image. Location: `$KILN_KERNEL_CACHE_PATH`, else `$XDG_CACHE_HOME/kiln/kernels`, else
//! `~/.cache/kiln/kernels`; `KILN_KERNEL_CACHE=0` turns it off. A cache that cannot be read
//! or written is skipped silently: it only ever saves time.

use std::path::PathBuf;

/// The cache folder, or `None` when caching is off or no home folder is known.
pub fn dir() -> Option<PathBuf> {
    if std::env::var_os("KILN_KERNEL_CACHE").is_some_and(|v| v == "0") {
        return None;
    }
    if let Some(p) = std::env::var_os("KILN_KERNEL_CACHE_PATH") {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("kiln").join("kernels"))
}

/// FNV-1a over the key's parts, each followed by a separator so that ("ab", "c") and
/// ("a", "bc") differ. 64 bits: collisions among a few hundred entries are out of reach,
/// and the module name is in the file name as well.
fn hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The file that holds module `name` compiled from `source` with `options` by NVRTC
/// `version`; `tag` (e.g. `sm_90.cubin`) ends the name.
pub fn entry(
    name: &str,
    source: &str,
    options: &[String],
    version: (i32, i32),
    tag: &str,
) -> String {
    let v = format!("nvrtc-{}.{}", version.0, version.1);
    let mut parts: Vec<&[u8]> = vec![source.as_bytes(), v.as_bytes()];
    parts.extend(options.iter().map(|o| o.as_bytes()));
    format!("{name}-{:016x}-{tag}", hash(&parts))
}

pub fn load(file: &str) -> Option<Vec<u8>> {
    std::fs::read(dir()?.join(file))
        .ok()
        .filter(|b| !b.is_empty())
}

/// Writes through a temporary file and a rename, so a reader in another process never sees
/// half an image.
pub fn store(file: &str, image: &[u8]) {
    let Some(dir) = dir() else { return };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let tmp = dir.join(format!("{file}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, image).is_ok() && std::fs::rename(&tmp, dir.join(file)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Drops an entry the driver refused (a truncated or foreign file).
pub fn remove(file: &str) {
    if let Some(dir) = dir() {
        let _ = std::fs::remove_file(dir.join(file));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_of_the_key_changes_the_entry() {
        let o = vec!["--gpu-architecture=sm_90".to_string()];
        let base = entry("copy", "src", &o, (12, 4), "sm_90.cubin");
        assert!(
            base.starts_with("copy-") && base.ends_with("-sm_90.cubin"),
            "{base}"
        );
        assert_ne!(base, entry("copy", "src2", &o, (12, 4), "sm_90.cubin"));
        assert_ne!(base, entry("copy", "src", &o, (13, 0), "sm_90.cubin"));
        let o2 = vec!["--gpu-architecture=sm_80".to_string()];
        assert_ne!(base, entry("copy", "src", &o2, (12, 4), "sm_90.cubin"));
        // Part boundaries count: the same bytes split differently are another key.
        assert_ne!(hash(&[b"ab", b"c"]), hash(&[b"a", b"bc"]));
        // Stable across runs, builds and platforms: FNV-1a-64 of the bytes "a", 0xff
        // (computed independently with Python's integers).
        assert_eq!(hash(&[b"a"]), 0x089b_c907_b544_c769);
    }
}
