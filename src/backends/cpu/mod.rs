//! The CPU backend: host memory (kiln's [`CpuBuffer`]s, reused through the buffer cache),
//! the locking that lets kernels read and write it, and the CPU side of the [`Backend`]
//! trait. The CPU kernels themselves live in `kiln_kernels::cpu`; generated dispatch calls
//! them through `crate::dispatch::launch`.

pub(crate) mod access;
mod amp;
mod optim;

use crate::tensor::{Backend, BufferElement, FusedStep};
use crate::{DType, Device, Result, Tensor};
use access::{dst, src, with_buffers};
use kiln_kernels::cpu::{pointwise, strided};
use kiln_kernels::random::{element, uniform_bits, Distribution};
use kiln_kernels::{with_dtype, Element};

/// The CPU's [`Backend`].
pub(crate) struct CpuBackend;

impl Backend for CpuBackend {
    fn unavailable_reason(&self, _: Device) -> Option<String> {
        None
    }

    fn alloc(
        &self,
        op: &str,
        shape: &[usize],
        dtype: DType,
        _: Device,
        zeroed: bool,
    ) -> Result<Tensor> {
        if zeroed {
            Tensor::alloc(op, shape, dtype)
        } else {
            Tensor::alloc_empty(op, shape, dtype)
        }
    }

    fn copy(&self, _: &str, src_t: &Tensor, out: &Tensor) -> Result<()> {
        with_buffers(&[src_t], &[out], |ins, mut outs| {
            let o = outs.pop().expect("output locked");
            with_dtype!(src_t.dtype(), S, {
                with_dtype!(out.dtype(), O, {
                    pointwise::copy_cast(src::<S>(ins[0], src_t), dst::<O>(o, out));
                })
            })
        });
        Ok(())
    }

    fn to_host(&self, t: &Tensor, dtype: DType) -> Result<Tensor> {
        t.cast_copy(dtype)
    }

    fn upload(&self, host: &Tensor, _: DType, _: Device) -> Result<Tensor> {
        Ok(host.clone())
    }

    fn fill_random(
        &self,
        _: &str,
        out: &Tensor,
        dist: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<()> {
        let bits = uniform_bits(out.dtype());
        with_buffers(&[], &[out], |_, mut outs| {
            let o = outs.pop().expect("output locked");
            with_dtype!(out.dtype(), T, {
                let s = access::elems_mut::<T>(o, out);
                for (i, x) in s.iter_mut().enumerate() {
                    *x = element::<T>(dist, bits, seed, offset, i);
                }
            })
        });
        Ok(())
    }

    fn fused_step(&self, _: &str, group: &[&Tensor], step: FusedStep<'_>) -> Result<()> {
        match step {
            FusedStep::AmpUnscale => amp::unscale(group),
            FusedStep::AmpUpdateScale(h) => amp::update(group, h),
            _ => optim::step(group, step),
        }
        Ok(())
    }

    fn synchronize(&self, _: Device) -> Result<()> {
        Ok(())
    }
}

/// [`Tensor::to_vec`] of a CPU tensor.
pub(crate) fn to_vec<T: BufferElement>(t: &Tensor) -> Result<Vec<T>> {
    // Reserved fallibly: an expanded view may have far more elements than memory holds.
    let n = t.numel();
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(n).map_err(|_| {
        crate::tensor::storage::out_of_memory(
            "to_vec",
            n as u128 * std::mem::size_of::<T>() as u128,
        )
    })?;
    with_buffers(&[t], &[], |ins, _| {
        with_dtype!(t.dtype(), S, {
            let s = src::<S>(ins[0], t);
            match s.as_contiguous() {
                Some(c) => out.extend(c.iter().map(|x| x.cast::<T>())),
                None => strided::for_each_offset(s.layout, |o| out.push(s.data[o].cast())),
            }
        })
    });
    Ok(out)
}
