//! A tensor's memory as bytes or a device address, for communication libraries (MPI, NCCL)
//! that move it without knowing its dtype. Only contiguous tensors: a collective's buffer is
//! one span of memory.

use super::storage::Buffer;
use crate::{Device, Error, Result, Tensor};

impl Tensor {
    /// `op`'s error unless this tensor is contiguous (the device is checked by the caller).
    fn check_raw(&self, op: &str) -> Result<()> {
        if !self.is_contiguous() {
            return Err(Error::value(op, "Tensors must be contiguous"));
        }
        Ok(())
    }

    /// Runs `f` on the bytes of a contiguous CPU tensor (its elements in order, native
    /// endianness), under its storage's read lock. For MPI and the like; an error names `op`
    /// when the tensor is not contiguous or not on the CPU.
    pub fn with_bytes<R>(&self, op: &str, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        self.check_raw(op)?;
        let guard = self.storage().read();
        let Buffer::Cpu(buf) = &*guard else {
            return Err(cpu_only(op, self.device()));
        };
        let (start, n) = (self.storage_offset(), self.numel());
        kiln_kernels::with_dtype!(self.dtype(), T, {
            let s = &<T as super::BufferElement>::slice(buf).expect("buffer of the tensor's dtype")
                [start..start + n];
            // SAFETY: every dtype kiln stores is plain data without padding (bool is one byte
            // holding 0 or 1), so its elements' memory is `size_of_val(s)` initialised bytes,
            // borrowed for no longer than `s`.
            let bytes = unsafe {
                std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s))
            };
            Ok(f(bytes))
        })
    }

    /// Runs `f` on the bytes of a contiguous CPU tensor for writing, under its storage's
    /// write lock, and records an in-place write (the version bump autograd checks). A bool
    /// tensor's bytes are read back as `!= 0`, so `f` cannot leave an invalid bool behind.
    pub fn with_bytes_mut<R>(&self, op: &str, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        self.check_raw(op)?;
        let mut guard = self.storage().write();
        let Buffer::Cpu(buf) = &mut *guard else {
            return Err(cpu_only(op, self.device()));
        };
        let (start, n) = (self.storage_offset(), self.numel());
        let is_bool = self.dtype() == crate::DType::Bool;
        let r = kiln_kernels::with_dtype!(self.dtype(), T, {
            let s = &mut <T as super::BufferElement>::slice_mut(buf)
                .expect("buffer of the tensor's dtype")[start..start + n];
            // SAFETY: as in `with_bytes`, and every byte pattern is a valid value of the
            // numeric dtypes; bool, whose only valid bytes are 0 and 1, is normalised below
            // through this same byte view before anything reads it as bool.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    s.as_mut_ptr().cast::<u8>(),
                    std::mem::size_of_val(s),
                )
            };
            let r = f(bytes);
            if is_bool {
                bytes.iter_mut().for_each(|b| *b = (*b != 0) as u8);
            }
            r
        });
        drop(guard);
        self.storage().bump_version();
        Ok(r)
    }

    /// The device address of a contiguous accelerator tensor's first element (PyTorch's
    /// `data_ptr()`), for libraries such as NCCL that read and write device memory on the
    /// backend's stream.
    pub fn data_ptr(&self, op: &str) -> Result<u64> {
        self.check_raw(op)?;
        let base = self.storage().device_ptr().ok_or_else(|| {
            Error::device(
                op,
                format!(
                    "expected a tensor in an accelerator's memory, got one on {}",
                    self.device()
                ),
            )
        })?;
        Ok(base + (self.storage_offset() * self.dtype().size_in_bytes()) as u64)
    }

    /// [`Tensor::data_ptr`] for a library that will write the tensor's memory (NCCL's
    /// receive buffers): records an in-place write, the version bump autograd checks, as
    /// [`Tensor::with_bytes_mut`] does.
    pub fn data_ptr_mut(&self, op: &str) -> Result<u64> {
        let ptr = self.data_ptr(op)?;
        self.storage().bump_version();
        Ok(ptr)
    }
}

fn cpu_only(op: &str, device: Device) -> Error {
    Error::device(op, format!("expected a CPU tensor, got one on {device}"))
}

#[cfg(test)]
mod tests {
    use crate::{DType, Tensor};

    #[test]
    fn bytes_are_the_elements_of_a_view_in_order_and_writes_bump_the_version() {
        let base = Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[6]).unwrap();
        let v = base.narrow(0, 2, 3).unwrap();
        let bytes = v.with_bytes("test", |b| b.to_vec()).unwrap();
        let expect: Vec<u8> = [3i32, 4, 5].iter().flat_map(|x| x.to_ne_bytes()).collect();
        assert_eq!(bytes, expect);
        let before = base.version();
        v.with_bytes_mut("test", |b| b[..4].copy_from_slice(&9i32.to_ne_bytes()))
            .unwrap();
        assert_eq!(base.to_vec::<i32>().unwrap(), vec![1, 2, 9, 4, 5, 6]);
        assert!(base.version() > before);
    }

    #[test]
    fn a_bool_tensor_written_with_any_byte_reads_as_true() {
        let t = Tensor::zeros([3], DType::Bool).unwrap();
        t.with_bytes_mut("test", |b| b.copy_from_slice(&[0, 7, 255]))
            .unwrap();
        assert_eq!(t.to_vec::<bool>().unwrap(), vec![false, true, true]);
    }

    #[test]
    fn a_non_contiguous_or_cpu_tensor_is_refused_with_the_op_named() {
        let t = Tensor::zeros([2, 3], DType::F32).unwrap().t().unwrap();
        let e = t.with_bytes("all_reduce", |_| ()).unwrap_err().to_string();
        assert!(
            e.contains("all_reduce") && e.contains("Tensors must be contiguous"),
            "{e}"
        );
        let e = Tensor::zeros([2], DType::F32)
            .unwrap()
            .data_ptr("all_reduce")
            .unwrap_err();
        assert!(e.to_string().contains("accelerator"), "{e}");
    }
}
