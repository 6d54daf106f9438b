//! Making tensors: from Rust data, filled, ranges, identity.

use crate::dispatch::with_buffers;
use crate::tensor::dims::{new_shape, IntoDims};
use crate::tensor::{storage_numel, BufferElement, CpuBuffer, Tensor};
use crate::{DType, Device, Error, Result, Scalar};
use kiln_kernels::{with_dtype, Element};

/// Rust data that can become a tensor: a scalar (0-d), an array, nested arrays, a `Vec`.
/// The dtype follows the element type (`f32` → float32, `i64` → int64, ...).
pub trait TensorData {
    /// The element type.
    type Elem: BufferElement;
    /// The shape of the data.
    fn shape(&self) -> Vec<usize>;
    /// Appends the elements in row-major order.
    fn flatten_into(&self, out: &mut Vec<Self::Elem>);
}

impl<T: BufferElement> TensorData for T {
    type Elem = T;
    fn shape(&self) -> Vec<usize> {
        vec![]
    }
    fn flatten_into(&self, out: &mut Vec<T>) {
        out.push(*self)
    }
}

impl<D: TensorData, const N: usize> TensorData for [D; N] {
    type Elem = D::Elem;
    fn shape(&self) -> Vec<usize> {
        let mut s = vec![N];
        s.extend(self.first().map(|d| d.shape()).unwrap_or_default());
        s
    }
    fn flatten_into(&self, out: &mut Vec<D::Elem>) {
        self.iter().for_each(|d| d.flatten_into(out))
    }
}

impl<T: BufferElement> TensorData for Vec<T> {
    type Elem = T;
    fn shape(&self) -> Vec<usize> {
        vec![self.len()]
    }
    fn flatten_into(&self, out: &mut Vec<T>) {
        out.extend_from_slice(self)
    }
}

impl<D: TensorData> From<D> for Tensor {
    fn from(d: D) -> Tensor {
        let mut v = Vec::new();
        d.flatten_into(&mut v);
        Tensor::from_vec(v, &d.shape()).expect("nested arrays are rectangular by construction")
    }
}

fn check_device(op: &str, device: Device) -> Result<()> {
    device
        .ensure_available()
        .map_err(|e| Error::device(op, e.to_string()))
}

impl Tensor {
    /// A tensor owning `data`, viewed with `shape`.
    ///
    /// ```
    /// let x = kiln::Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
    /// assert_eq!(x.shape(), &[2, 3]);
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn from_vec<T: BufferElement>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        if kiln_kernels::layout::checked_numel(shape) != Some(data.len()) {
            return Err(Error::shape(
                "from_vec",
                format!(
                    "shape {shape:?} is invalid for input of size {}",
                    data.len()
                ),
            ));
        }
        Ok(Tensor::from_buffer(T::wrap(data), shape))
    }

    /// A tensor copying `data`, viewed with `shape`.
    pub fn from_slice<T: BufferElement>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape)
    }

    /// A 0-d tensor holding `value` as `dtype`; like `full`, an error when the value does
    /// not fit the dtype.
    pub fn scalar_tensor(value: impl Into<Scalar>, dtype: DType) -> Result<Tensor> {
        Tensor::full((), value, dtype).map_err(|e| match e {
            Error::Op { kind, msg, .. } => Error::new(kind, "scalar_tensor", msg),
            other => other,
        })
    }

    /// Uninitialised in PyTorch; zero-filled here, since kiln never exposes uninitialised memory.
    pub fn empty(shape: impl IntoDims, dtype: DType) -> Result<Tensor> {
        Tensor::alloc("empty", &new_shape("empty", shape)?, dtype)
    }

    /// A tensor of zeros.
    pub fn zeros(shape: impl IntoDims, dtype: DType) -> Result<Tensor> {
        Tensor::alloc("zeros", &new_shape("zeros", shape)?, dtype)
    }

    /// A tensor of ones.
    pub fn ones(shape: impl IntoDims, dtype: DType) -> Result<Tensor> {
        Tensor::full(new_shape("ones", shape)?, 1, dtype)
    }

    /// A tensor filled with `value`.
    pub fn full(shape: impl IntoDims, value: impl Into<Scalar>, dtype: DType) -> Result<Tensor> {
        let shape = &new_shape("full", shape)?;
        let value = value.into();
        value.check_fits(dtype).map_err(|m| Error::op("full", m))?;
        let t = Tensor::alloc("full", shape, dtype)?;
        with_buffers(&[], &[&t], |_, mut o| {
            with_dtype!(dtype, T, {
                let v: T = match value {
                    Scalar::Bool(b) => T::from_i64(b as i64),
                    Scalar::Int(i) => T::from_i64(i),
                    Scalar::Float(f) => T::from_f64(f),
                };
                T::slice_mut(o[0]).expect("allocated as dtype").fill(v);
            })
        });
        Ok(t)
    }

    /// Like [`Tensor::full`], on the given device.
    pub fn full_on(
        shape: impl IntoDims,
        value: impl Into<Scalar>,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        check_device("full", device)?;
        if device.is_meta() {
            let value = value.into();
            value.check_fits(dtype).map_err(|m| Error::op("full", m))?;
            return Tensor::alloc_meta("full", &new_shape("full", shape)?, dtype);
        }
        Tensor::full(shape, value, dtype)?.to_device(device)
    }

    /// Like [`Tensor::empty`], on the given device (on the meta device, no memory at all).
    pub fn empty_on(shape: impl IntoDims, dtype: DType, device: Device) -> Result<Tensor> {
        check_device("empty", device)?;
        Tensor::alloc_empty_on("empty", &new_shape("empty", shape)?, dtype, device)
    }

    /// Zeros with `self`'s shape, dtype and device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::alloc_on("zeros_like", self.shape(), self.dtype(), self.device())
    }

    /// Ones with `self`'s shape, dtype and device.
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::full_on(self.shape(), 1, self.dtype(), self.device())
    }

    /// `value` with `self`'s shape, dtype and device.
    pub fn full_like(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        Tensor::full_on(self.shape(), value, self.dtype(), self.device())
    }

    /// `[start, end)` in steps of `step`, as `dtype` (PyTorch's `arange`).
    ///
    /// ```
    /// let x = kiln::Tensor::arange(0, 5, 2, kiln::DType::I64)?;
    /// assert_eq!(x.to_vec::<i64>()?, vec![0, 2, 4]);
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: DType,
    ) -> Result<Tensor> {
        Tensor::arange_on(start, end, step, dtype, Device::Cpu)
    }

    /// Like [`Tensor::arange`], on the given device (on meta: the checks and the shape, no
    /// values).
    pub fn arange_on(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        check_device("arange", device)?;
        let (s, e, st) = (
            start.into().to_f64(),
            end.into().to_f64(),
            step.into().to_f64(),
        );
        // PyTorch's `step > 0 || step < 0` check, which a NaN step fails too.
        if st == 0.0 || st.is_nan() {
            return Err(Error::value("arange", "step must be nonzero"));
        }
        if !(s.is_finite() && e.is_finite()) {
            return Err(Error::value(
                "arange",
                format!("unsupported range: {s} -> {e}"),
            ));
        }
        if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
            return Err(Error::value(
                "arange",
                "upper bound and larger bound inconsistent with step sign",
            ));
        }
        let n = ((e - s) / st).ceil();
        if !(0.0..=i64::MAX as f64).contains(&n) {
            return Err(Error::shape("arange", "invalid size, possible overflow?"));
        }
        let n = n as usize;
        storage_numel("arange", &[n], dtype)?;
        if device.is_meta() {
            return Tensor::alloc_meta("arange", &[n], dtype);
        }
        let buf = with_dtype!(dtype, T, {
            CpuBuffer::from_fn("arange", n, |i| T::from_f64(s + i as f64 * st))?
        });
        Tensor::from_buffer(buf, &[n]).to_device(device)
    }

    /// `steps` evenly spaced values from `start` to `end` inclusive.
    pub fn linspace(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        let step = if steps > 1 {
            (end - start) / (steps - 1) as f64
        } else {
            0.0
        };
        // Fill from both ends like PyTorch, so the last value is exactly `end`.
        // With one step the value is `start`; otherwise split at the middle.
        let half = if steps == 1 { 1 } else { steps / 2 };
        let val = |i: usize| {
            if i < half {
                start + step * i as f64
            } else {
                end - step * (steps - 1 - i) as f64
            }
        };
        storage_numel("linspace", &[steps], dtype)?;
        let buf = with_dtype!(dtype, T, {
            CpuBuffer::from_fn("linspace", steps, |i| T::from_f64(val(i)))?
        });
        Ok(Tensor::from_buffer(buf, &[steps]))
    }

    /// An `n × m` matrix with ones on the diagonal.
    pub fn eye(n: usize, m: Option<usize>, dtype: DType) -> Result<Tensor> {
        let m = m.unwrap_or(n);
        let t = Tensor::alloc("eye", &[n, m], dtype)?;
        with_buffers(&[], &[&t], |_, mut o| {
            with_dtype!(dtype, T, {
                let v = T::slice_mut(o[0]).expect("allocated as dtype");
                for i in 0..n.min(m) {
                    v[i * m + i] = T::from_i64(1);
                }
            })
        });
        Ok(t)
    }
}
