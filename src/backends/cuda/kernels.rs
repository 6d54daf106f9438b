//! Every CUDA kernel by id, generated from the rendered modules (`cuda_kernels.rs`): a
//! launcher names a kernel family through a constant, so a kernel no template defines is a
//! build error, and a launch finds its function by indexing the device's handle table with
//! the id — no name formatting, no map, no lock once the kernel is loaded.

use crate::{DType, Error, Result};

/// A kernel's index in [`KERNELS`] and in each device's handle table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KernelId(pub(crate) u16);

/// A family's entry for a dtype it has no kernel for.
pub(crate) const NONE: u16 = u16::MAX;

/// PyTorch's wording for a dtype without a kernel, plus the kernel family that lacks it.
fn missing(op: &str, name: &str, dtypes: &str) -> Error {
    Error::dtype(
        op,
        format!("\"{op}_cuda\" not implemented for '{dtypes}' (no CUDA kernel {name}_<dtype>)"),
    )
}

/// A kernel that takes no dtype (its name has no dtype suffix).
pub(crate) struct Family0 {
    pub id: u16,
}

impl Family0 {
    pub(crate) const fn id(&self) -> KernelId {
        KernelId(self.id)
    }
}

/// Kernels `<name>_<dtype>`, indexed by `DType as usize`.
pub(crate) struct Family1 {
    pub name: &'static str,
    pub ids: [u16; 10],
}

impl Family1 {
    /// The kernel for `dtype`, or PyTorch's "not implemented for" error naming it.
    #[inline]
    pub(crate) fn get(&self, op: &str, dtype: DType) -> Result<KernelId> {
        match self.ids[dtype as usize] {
            NONE => Err(missing(op, self.name, dtype.scalar_type_name())),
            id => Ok(KernelId(id)),
        }
    }
}

/// Kernels `<name>_<from>_<to>` (the dtype conversions), indexed by both dtypes.
pub(crate) struct Family2 {
    pub name: &'static str,
    pub ids: [[u16; 10]; 10],
}

impl Family2 {
    #[inline]
    pub(crate) fn get(&self, op: &str, a: DType, b: DType) -> Result<KernelId> {
        match self.ids[a as usize][b as usize] {
            NONE => Err(missing(
                op,
                self.name,
                &format!("{}, {}", a.scalar_type_name(), b.scalar_type_name()),
            )),
            id => Ok(KernelId(id)),
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/cuda_kernels.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    /// The table agrees with the modules it was read from: each id's symbol is declared as a
    /// kernel in its module's source (checked independently of the generator's parser, by
    /// plain text search), and the families resolve to the names launchers ask for.
    #[test]
    fn every_id_names_a_kernel_of_its_module() {
        let modules = super::super::module_names();
        // Every module defines kernels, and the scanner found some in each.
        let owners: std::collections::HashSet<usize> = KERNELS.iter().map(|k| k.0).collect();
        assert_eq!(owners.len(), modules.len(), "modules without kernels");
        for (m, sym) in KERNELS.iter() {
            let src = super::super::module_source(modules[*m]).expect("module");
            assert!(
                src.contains(&format!(" {sym}(")) || src.contains(&format!(") {sym}(")),
                "{sym} not in module {}",
                modules[*m]
            );
        }
        let f = pool::ADAPTIVE_MAX_POOL2D.get("t", DType::F32).unwrap();
        assert_eq!(KERNELS[f.0 as usize].1, "adaptive_max_pool2d_f32");
        assert_eq!(modules[KERNELS[f.0 as usize].0], "pool");
        let c = copy::COPY.get("t", DType::I64, DType::BF16).unwrap();
        assert_eq!(KERNELS[c.0 as usize].1, "copy_i64_bf16");
        let e = pool::ADAPTIVE_MAX_POOL2D
            .get("adaptive_max_pool2d", DType::I64)
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::DType);
        assert!(
            e.to_string()
                .contains("\"adaptive_max_pool2d_cuda\" not implemented for 'Long'"),
            "{e}"
        );
    }
}
