//! Host side of the CUDA kernels: operands described as `KilnTensor`s (address, sizes,
//! strides), launch shapes, and the launchers generated dispatch calls. A launcher gets
//! tensors already on one device, cast to the compute dtype and checked by the op's meta
//! function, like the CPU kernels.

pub(crate) mod amp;
pub(crate) mod attention;
pub(crate) mod conv;
pub(crate) mod fold;
pub(crate) mod index;
pub(crate) mod loss;
pub(crate) mod matmul;
pub(crate) mod norm;
pub(crate) mod optim;
pub(crate) mod pool;
pub(crate) mod random;
pub(crate) mod reduce;
pub(crate) mod scan;
pub(crate) mod shape;
pub(crate) mod softmax;
pub(crate) mod sort;
pub(crate) mod upsample;

pub(crate) use super::args::{KilnStr, KilnTensor, MAX_DIMS};
use super::kernels::Family1;
use super::launchers;
use super::runtime::{driver_error, Gpu};
use crate::tensor::storage::Buffer;
use crate::{DType, Device, Error, Layout, Result, Scalar, Tensor};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// The device and GPU all `tensors` live on.
pub(crate) fn gpu_of(op: &str, t: &Tensor) -> Result<Arc<Gpu>> {
    match t.device() {
        Device::Cuda(i) => {
            let g = super::runtime::gpu(i)?;
            g.ctx.bind_to_thread().map_err(|e| driver_error(op, e))?;
            Ok(g)
        }
        other => Err(Error::device(
            op,
            format!("kiln internal error: a tensor on {other} reached a CUDA kernel"),
        )),
    }
}

/// `t` as a kernel operand with layout `layout` (defaults to its own).
pub(crate) fn operand_with(op: &str, t: &Tensor, layout: &Layout) -> Result<KilnTensor> {
    if layout.ndim() > MAX_DIMS {
        return Err(Error::shape(
            op,
            format!(
                "CUDA kernels take tensors of at most {MAX_DIMS} dims, got {}",
                layout.ndim()
            ),
        ));
    }
    let base = match &*t.storage().read() {
        Buffer::Device(b) if t.device().is_cuda() => b.ptr(),
        _ => {
            return Err(Error::device(
                op,
                format!(
                    "kiln internal error: a tensor on {} reached a CUDA kernel",
                    t.device()
                ),
            ))
        }
    };
    let mut k = KilnTensor {
        data: base + (layout.offset * t.dtype().size_in_bytes()) as u64,
        ndim: layout.ndim() as i32,
        sizes: [1; MAX_DIMS],
        strides: [0; MAX_DIMS],
    };
    for (d, (&s, &st)) in layout.sizes.iter().zip(&layout.strides).enumerate() {
        k.sizes[d] = s as i64;
        k.strides[d] = st as i64;
    }
    Ok(k)
}

pub(crate) fn operand(op: &str, t: &Tensor) -> Result<KilnTensor> {
    operand_with(op, t, t.layout())
}

/// A grid-stride launch over `n` elements.
pub(crate) fn grid(n: usize) -> LaunchConfig {
    let threads = 256u32;
    let blocks = n.div_ceil(threads as usize).clamp(1, 65_535 * 8) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// One block of 256 threads per output row (the reduction kernels' shape).
pub(crate) fn rows(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.clamp(1, 65_535) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A non-tensor argument of a pointwise kernel.
pub(crate) enum Arg<'a> {
    Scalar(Scalar),
    OptScalar(Option<Scalar>),
    Str(&'a str),
}

/// Kernel parameter values, kept alive (and unmoved) until the launch.
enum Param {
    Tensor(Box<KilnTensor>),
    F32(f32),
    F64(f64),
    I64(i64),
    I32(i32),
    I16(i16),
    I8(i8),
    U8(u8),
    Bool(bool),
    Str(KilnStr),
}

/// `s` as a value of compute dtype `d` (f32 for the 16-bit floats, as the kernels compute).
fn scalar_param(d: DType, s: Scalar) -> Param {
    match d {
        DType::F16 | DType::BF16 | DType::F32 => Param::F32(s.to::<f32>()),
        DType::F64 => Param::F64(s.to::<f64>()),
        DType::I64 => Param::I64(s.to::<i64>()),
        DType::I32 => Param::I32(s.to::<i32>()),
        DType::I16 => Param::I16(s.to::<i16>()),
        DType::I8 => Param::I8(s.to::<i8>()),
        DType::U8 => Param::U8(s.to::<u8>()),
        DType::Bool => Param::Bool(s.to::<bool>()),
    }
}

fn push<'a>(b: &mut cudarc::driver::LaunchArgs<'a>, p: &'a Param) {
    match p {
        Param::Tensor(t) => b.arg(&**t),
        Param::F32(v) => b.arg(v),
        Param::F64(v) => b.arg(v),
        Param::I64(v) => b.arg(v),
        Param::I32(v) => b.arg(v),
        Param::I16(v) => b.arg(v),
        Param::I8(v) => b.arg(v),
        Param::U8(v) => b.arg(v),
        Param::Bool(v) => b.arg(v),
        Param::Str(v) => b.arg(v),
    };
}

/// Runs the generated pointwise kernel of `family` for `compute` over inputs already
/// broadcast to `out`'s shape. Its arguments follow the op's schema, so they are built here
/// rather than by a typed launcher.
pub(crate) fn pointwise(
    op: &str,
    family: &Family1,
    compute: DType,
    inputs: &[&Tensor],
    args: &[Arg<'_>],
    out: &Tensor,
) -> Result<()> {
    let gpu = gpu_of(op, out)?;
    // An input that overlaps the output without being it would be read after being written.
    let inputs: Vec<Tensor> = inputs
        .iter()
        .map(|t| {
            if t.shares_storage_with(out) && !crate::dispatch::launch::is_output(t, out) {
                t.fresh_copy()
            } else {
                Ok((*t).clone())
            }
        })
        .collect::<Result<_>>()?;
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let mut params = vec![Param::Tensor(Box::new(operand(op, out)?))];
    for t in &inputs {
        params.push(Param::Tensor(Box::new(operand(op, t)?)));
    }
    for a in args {
        match a {
            Arg::Scalar(s) => params.push(scalar_param(compute, *s)),
            Arg::OptScalar(s) => {
                params.push(Param::Bool(s.is_some()));
                params.push(scalar_param(compute, s.unwrap_or(Scalar::Int(0))));
            }
            Arg::Str(s) => params.push(Param::Str(KilnStr::new(op, s)?)),
        }
    }
    params.push(Param::I64(n as i64));
    let f = gpu.kernel(op, family.get(op, compute)?)?;
    let mut b = gpu.stream.launch_builder(f);
    for p in &params {
        push(&mut b, p);
    }
    // SAFETY: the parameters match the generated kernel's signature (out, the inputs, the
    // scalar arguments in schema order, n), every KilnTensor addresses live device memory of
    // its dtype within its storage (layouts were bounds-checked when the views were made),
    // and `out` does not partially overlap an input (copied above).
    unsafe { b.launch(grid(n)) }.map_err(|e| driver_error(op, e))?;
    Ok(())
}

/// Copies `src` (already broadcast to `dst`'s shape) into `dst`, converting the dtype.
pub(crate) fn copy(op: &str, src: &Tensor, dst: &Tensor) -> Result<()> {
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, dst)?;
    let (d, s) = (operand(op, dst)?, operand(op, src)?);
    // SAFETY: both operands address live device memory of their dtypes (the ones the kernel
    // reads and writes), and the caller made `src` not overlap `dst`.
    unsafe {
        launchers::copy::copy(
            &gpu,
            op,
            (src.dtype(), dst.dtype()),
            grid(n),
            &d,
            &s,
            n as i64,
        )
    }
}

/// A fresh contiguous tensor of zeros on `device`.
pub(crate) fn alloc(op: &str, shape: &[usize], dtype: DType, ordinal: usize) -> Result<Tensor> {
    let n = crate::tensor::storage_numel(op, shape, dtype)?;
    let buf = super::CudaBuffer::zeros(op, ordinal, dtype, n)?;
    Ok(Tensor::from_storage(
        Arc::new(crate::tensor::Storage::on_device(
            Box::new(buf),
            n,
            Device::Cuda(ordinal),
        )),
        Layout::contiguous(shape),
        dtype,
    ))
}

/// Copies `t` to `device` as `dtype` (a contiguous copy in fresh storage).
pub(crate) fn transfer(t: &Tensor, dtype: DType, device: Device) -> Result<Tensor> {
    const OP: &str = "to";
    match (t.device(), device) {
        (Device::Cpu, Device::Cuda(i)) => {
            let dense = t.is_contiguous()
                && t.dtype() == dtype
                && t.storage_offset() == 0
                && t.storage().len() == t.numel();
            let host = if dense {
                t.clone()
            } else {
                t.cast_copy(dtype)?
            };
            let out = alloc(OP, t.shape(), dtype, i)?;
            gpu_of(OP, &out)?; // binds the device's context to this thread
            let dst = out.storage().device_ptr().expect("allocated on CUDA");
            let src = host.storage().read();
            let Buffer::Cpu(c) = &*src else {
                return Err(Error::device(
                    OP,
                    "kiln internal error: host copy not on the CPU",
                ));
            };
            kiln_kernels::with_dtype!(dtype, T, {
                let s = <T as crate::BufferElement>::slice(c).expect("buffer has dtype");
                // SAFETY: `dst` heads a live device block of `s.len()` elements of T; the copy
                // is synchronous, so `s` outlives it.
                unsafe { cudarc::driver::result::memcpy_htod_sync(dst, s) }
                    .map_err(|e| driver_error(OP, e))?;
            });
            drop(src);
            Ok(out)
        }
        (Device::Cuda(_), Device::Cpu) => {
            let dev = if t.is_contiguous()
                && t.dtype() == dtype
                && t.storage_offset() == 0
                && t.storage().len() == t.numel()
            {
                t.clone()
            } else {
                let d = alloc(OP, t.shape(), dtype, t.device().index())?;
                copy(OP, t, &d)?;
                d
            };
            gpu_of(OP, &dev)?; // binds the device's context to this thread
            let src = dev.storage().device_ptr().expect("on CUDA");
            let mut host = crate::tensor::CpuBuffer::zeros(OP, dtype, t.numel())?;
            kiln_kernels::with_dtype!(dtype, T, {
                let s =
                    <T as crate::BufferElement>::slice_mut(&mut host).expect("buffer has dtype");
                // SAFETY: `src` heads live device memory of `s.len()` elements of T; the copy
                // on the legacy stream waits for every kernel queued on this device first.
                unsafe { cudarc::driver::result::memcpy_dtoh_sync(s, src) }
                    .map_err(|e| driver_error(OP, e))?;
            });
            Ok(Tensor::from_buffer(host, t.shape()))
        }
        (Device::Cuda(_), Device::Cuda(j)) => {
            let host = transfer(t, dtype, Device::Cpu)?;
            transfer(&host, dtype, Device::Cuda(j))
        }
        (Device::Cpu, Device::Cpu) => t.cast_copy(dtype),
        (from, to) => Err(Error::device(
            OP,
            format!("kiln internal error: no CUDA transfer from {from} to {to}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cuda::args::KilnFold;
    use crate::backends::cuda::nvrtc::{self, Target};

    /// The structs passed to kernels by value have the same size and alignment in Rust and
    /// in CUDA C++: checked by NVRTC evaluating `static_assert`s written from Rust's
    /// `size_of` / `align_of` against the generated sources (no GPU needed; skipped without
    /// NVRTC, which CI provides).
    #[test]
    fn kernel_argument_structs_have_the_c_layout() {
        if !crate::backends::cuda::nvrtc_available() {
            eprintln!("layout check skipped: NVRTC library not found");
            return;
        }
        let fold = crate::backends::cuda::module_source("fold").expect("the fold module");
        // NVRTC has no offsetof (no standard headers, no __builtin_offsetof), so sizes and
        // alignments: a field of another width or padding in another place changes them.
        let checks = format!(
            "{fold}\n\
             static_assert(sizeof(KilnTensor) == {}, \"KilnTensor size\");\n\
             static_assert(alignof(KilnTensor) == {}, \"KilnTensor align\");\n\
             static_assert(sizeof(KilnStr) == {}, \"KilnStr size\");\n\
             static_assert(sizeof(KilnFold) == {}, \"KilnFold size\");\n\
             static_assert(sizeof(kiln_f16) == 2 && sizeof(kiln_bf16) == 2, \"half size\");\n",
            std::mem::size_of::<KilnTensor>(),
            std::mem::align_of::<KilnTensor>(),
            std::mem::size_of::<KilnStr>(),
            std::mem::size_of::<KilnFold>(),
        );
        let target = Target::Ptx(75);
        let r = nvrtc::compile("layout", &checks, target, &nvrtc::options(target, false));
        if let Err(e) = r {
            panic!("Rust and CUDA disagree on a kernel argument's layout:\n{e}");
        }
    }
}
