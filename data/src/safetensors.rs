//! Checkpoints in the safetensors format, with the names `safetensors.torch` uses:
//! [`save_file`] / [`load_file`] for files, [`save`] / [`load`] for bytes.
//!
//! ```
//! use kiln_data::safetensors;
//! use kiln_nn::{Linear, Module};
//! let fc = Linear::new(3, 2)?;
//! let bytes = safetensors::save(&fc.state_dict(), None)?;
//! let mut other = Linear::new(3, 2)?;
//! other.load_state_dict(&safetensors::load(&bytes)?, true)?;
//! assert_eq!(other.weight.to_vec::<f32>()?, fc.weight.to_vec::<f32>()?);
//! # Ok::<(), kiln_core::Error>(())
//! ```
//!
//! Files are interchangeable with PyTorch's `safetensors.torch.save_file` / `load_file`.
//! Tensors are written contiguous (views are copied), from the CPU (CUDA tensors are copied
//! to the host first), without autograd history. Tensors that share storage (tied weights)
//! are each written in full, where `safetensors.torch.save_file` refuses them.
//!
//! Order: the format does not keep insertion order. A file lists its tensors by descending
//! dtype alignment, then by name (the writer sorts them), and loading returns them in that
//! (file) order, as `safetensors.torch.load_file` does; `Module::load_state_dict` matches by
//! name, so the order does not matter there.
//!
//! Loading validates the whole file before building any tensor: header length, JSON, dtype
//! names, shapes against data offsets, offsets against the file size (the `safetensors`
//! crate's checks), plus the dtypes kiln has and the bytes of bool tensors. Every failure is
//! an `Err` naming the file; a tensor's data always lies inside the file, so no corruption
//! can ask for a larger allocation than the file itself.

use ::safetensors::tensor::{Dtype, SafeTensorError, SafeTensors, View};
use half::{bf16, f16};
use kiln_core::KernelError;
use kiln_core::{DType, Error, Result, Tensor};
use kiln_nn::StateDict;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

/// Free-form `__metadata__` strings stored in a file's header.
pub type Metadata = HashMap<String, String>;

/// A tensor's bytes in the file's little-endian layout.
struct Bytes {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Bytes {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn st_dtype(d: DType) -> Dtype {
    match d {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
    }
}

fn le_bytes<T, const N: usize>(v: Vec<T>, f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * N);
    for x in v {
        out.extend_from_slice(&f(x));
    }
    out
}

/// `t`'s elements in row-major order as little-endian bytes (`to_vec` gathers a
/// non-contiguous view and copies a CUDA tensor to the host).
fn tensor_bytes(t: &Tensor) -> Result<Vec<u8>> {
    let t = t.detach();
    Ok(match t.dtype() {
        DType::Bool => t.to_vec::<bool>()?.into_iter().map(u8::from).collect(),
        DType::U8 => t.to_vec::<u8>()?,
        DType::I8 => le_bytes(t.to_vec::<i8>()?, i8::to_le_bytes),
        DType::I16 => le_bytes(t.to_vec::<i16>()?, i16::to_le_bytes),
        DType::I32 => le_bytes(t.to_vec::<i32>()?, i32::to_le_bytes),
        DType::I64 => le_bytes(t.to_vec::<i64>()?, i64::to_le_bytes),
        DType::F16 => le_bytes(t.to_vec::<f16>()?, f16::to_le_bytes),
        DType::BF16 => le_bytes(t.to_vec::<bf16>()?, bf16::to_le_bytes),
        DType::F32 => le_bytes(t.to_vec::<f32>()?, f32::to_le_bytes),
        DType::F64 => le_bytes(t.to_vec::<f64>()?, f64::to_le_bytes),
    })
}

fn serialize(op: &str, state: &StateDict, metadata: Option<&Metadata>) -> Result<Vec<u8>> {
    let mut views = Vec::with_capacity(state.len());
    for (name, t) in state.iter() {
        let data = tensor_bytes(t)
            .map_err(|e| Error::new(e.kind(), op, format!("tensor \"{name}\": {e}")))?;
        views.push((
            name.to_string(),
            Bytes {
                dtype: st_dtype(t.dtype()),
                shape: t.shape().to_vec(),
                data,
            },
        ));
    }
    ::safetensors::serialize(
        views.iter().map(|(n, b)| (n.as_str(), b)),
        metadata.cloned(),
    )
    .map_err(|e| Error::value(op, e.to_string()))
}

/// The file's bytes for `state` and optional `__metadata__` (PyTorch's
/// `safetensors.torch.save`).
pub fn save(state: &StateDict, metadata: Option<&Metadata>) -> Result<Vec<u8>> {
    serialize("safetensors::save", state, metadata)
}

/// Writes `state` to `path` (PyTorch's `safetensors.torch.save_file`), with optional
/// `__metadata__` strings.
pub fn save_file(
    state: &StateDict,
    path: impl AsRef<Path>,
    metadata: Option<&Metadata>,
) -> Result<()> {
    let path = path.as_ref();
    let op = format!("save_file: {}", path.display());
    let bytes = serialize(&op, state, metadata)?;
    std::fs::write(path, bytes).map_err(|source| Error::Io {
        context: op,
        source,
    })
}

fn from_le<T, const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunks_exact yields N bytes")))
        .collect()
}

fn to_tensor(name: &str, dtype: Dtype, shape: &[usize], data: &[u8]) -> Result<Tensor> {
    // The crate checked numel * size == data.len(); also make sure every extent product fits,
    // so no stride computation can overflow on a shape with a zero extent.
    let fits = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .is_some_and(|n| n <= isize::MAX as usize / 8);
    if !fits {
        return Err(Error::shape(
            "safetensors",
            format!("tensor \"{name}\": shape {shape:?} is too large"),
        ));
    }
    match dtype {
        Dtype::BOOL => {
            if let Some(b) = data.iter().find(|&&b| b > 1) {
                return Err(Error::value(
                    "safetensors",
                    format!("tensor \"{name}\": invalid bool byte {b:#04x} (expected 0 or 1)"),
                ));
            }
            Tensor::from_vec(data.iter().map(|&b| b == 1).collect::<Vec<bool>>(), shape)
        }
        Dtype::U8 => Tensor::from_vec(data.to_vec(), shape),
        Dtype::I8 => Tensor::from_vec(from_le(data, i8::from_le_bytes), shape),
        Dtype::I16 => Tensor::from_vec(from_le(data, i16::from_le_bytes), shape),
        Dtype::I32 => Tensor::from_vec(from_le(data, i32::from_le_bytes), shape),
        Dtype::I64 => Tensor::from_vec(from_le(data, i64::from_le_bytes), shape),
        Dtype::F16 => Tensor::from_vec(from_le(data, f16::from_le_bytes), shape),
        Dtype::BF16 => Tensor::from_vec(from_le(data, bf16::from_le_bytes), shape),
        Dtype::F32 => Tensor::from_vec(from_le(data, f32::from_le_bytes), shape),
        Dtype::F64 => Tensor::from_vec(from_le(data, f64::from_le_bytes), shape),
        other => Err(Error::not_implemented(
            "safetensors",
            format!("tensor \"{name}\": dtype {other:?} is not supported by kiln (it has BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64)"),
        )),
    }
}

/// A malformed file is a [`kiln_core::ErrorKind::Value`] error; a tensor kiln cannot hold keeps
/// the kind `to_tensor` gave it.
fn deserialize(bytes: &[u8]) -> Result<(StateDict, Option<Metadata>), KernelError> {
    let bad = |e: SafeTensorError| KernelError::value(e.to_string());
    let st = SafeTensors::deserialize(bytes).map_err(bad)?;
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(bad)?;
    let mut state = StateDict::new();
    for name in header.offset_keys() {
        let view = st.tensor(&name).map_err(bad)?;
        let t = to_tensor(&name, view.dtype(), view.shape(), view.data()).map_err(|e| match e {
            Error::Op { kind, msg, .. } => KernelError::new(kind, msg),
            e => KernelError::new(e.kind(), e.to_string()),
        })?;
        state.insert(name, t);
    }
    Ok((state, header.metadata().clone()))
}

/// The tensors in a file's bytes (PyTorch's `safetensors.torch.load`), in file order.
pub fn load(bytes: &[u8]) -> Result<StateDict> {
    load_with_metadata(bytes).map(|(s, _)| s)
}

/// As [`load`], with the header's `__metadata__` (if any).
pub fn load_with_metadata(bytes: &[u8]) -> Result<(StateDict, Option<Metadata>)> {
    deserialize(bytes).map_err(|m| Error::op("safetensors::load", m))
}

/// The tensors in the file at `path` (PyTorch's `safetensors.torch.load_file`), on the
/// CPU, in file order (see the module docs).
pub fn load_file(path: impl AsRef<Path>) -> Result<StateDict> {
    load_file_with_metadata(path).map(|(s, _)| s)
}

/// As [`load_file`], with the header's `__metadata__` (if any; PyTorch reads it with
/// `safe_open(path, "pt").metadata()`).
pub fn load_file_with_metadata(path: impl AsRef<Path>) -> Result<(StateDict, Option<Metadata>)> {
    let path = path.as_ref();
    let op = format!("load_file: {}", path.display());
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        context: op.clone(),
        source,
    })?;
    deserialize(&bytes).map_err(|m| Error::op(op, m))
}
