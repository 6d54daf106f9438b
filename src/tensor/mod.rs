//! `Tensor`: a cheap handle to a strided view of shared storage, plus its autograd state.

pub(crate) mod backend;
mod buffer;
pub mod cache;
mod device;
pub(crate) mod dims;
mod display;
pub mod memory_stats;
pub mod promotion;
mod raw;
mod scalar;
pub(crate) mod storage;

pub(crate) use backend::{AmpScaleUpdate, Backend, FusedStep};
pub use buffer::{BufferElement, CpuBuffer};
pub use device::Device;
pub use dims::{DimElem, IntoDims};
use kiln_kernels::Dims;
pub use kiln_kernels::{DType, Layout};
pub use scalar::Scalar;
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
pub(crate) use storage::DeviceMemory;
pub use storage::Storage;

use crate::autograd::{Hook, Node, PostAccumulateHook};
use crate::{Error, Result};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// An n-dimensional array with PyTorch's semantics.
///
/// # `clone()` is not PyTorch's `x.clone()`
///
/// Rust's [`Clone::clone`] (`y = x.clone()`) makes a new *handle* to the same tensor, like
/// Python's `y = x`: both handles see the same data, `.grad`, `requires_grad` and `grad_fn`,
/// and an in-place op through one is seen through the other. It is cheap (a reference count).
///
/// PyTorch's `y = x.clone()` is [`Tensor::clone_tensor`] here (the `clone` op of
/// `native_functions.yaml`, renamed because `clone` is taken by Rust's trait): a new tensor with
/// its own copy of the data, recorded by autograd, so gradients flow from `y` back into `x`.
/// [`Tensor::detach`] is PyTorch's `x.detach()` (the same data, no history); PyTorch's
/// `x.detach().clone()` is `x.detach().clone_tensor()`.
///
/// Views (`transpose`, `narrow`, [`Tensor::i`], …) are new tensors sharing the storage.
///
/// # Operators
///
/// `+ - * / %` and unary `-` work on tensors (owned or borrowed) and on `f64`/`f32`/`i64`/`i32`
/// scalars on either side, with PyTorch's promotion and autograd; they panic on an error
/// (see [`tensor::operators`](crate::tensor::operators)), where the methods (`a.add(&b)?`)
/// return it.
///
/// ```
/// use kiln::Tensor;
/// let x = Tensor::from([[1f32, 2.], [3., 4.]]);
/// assert_eq!(x.shape(), &[2, 2]);
/// assert_eq!(x.t()?.to_vec::<f32>()?, vec![1., 3., 2., 4.]);
/// # Ok::<(), kiln::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

pub(crate) struct TensorImpl {
    pub(crate) storage: Arc<Storage>,
    pub(crate) layout: Layout,
    /// `layout.is_contiguous()` and `layout.numel()`, worked out once: the layout never
    /// changes, and every op asks both of each operand, often more than once.
    pub(crate) contiguous: bool,
    pub(crate) numel: usize,
    pub(crate) dtype: DType,
    /// `requires_grad || grad_fn.is_some()` of the autograd state, kept beside it (written
    /// under its lock) so that every op can ask whether to record itself without the lock.
    pub(crate) requires_grad: AtomicBool,
    /// `grad_fn.is_some()`, likewise (a `grad_fn` is never taken away): with it a leaf's
    /// edge is found without the lock.
    pub(crate) has_grad_fn: AtomicBool,
    /// A leaf's gradient accumulator (autograd's `AccumulateGrad`, whose docs say why the
    /// leaf owns it), shared by every edge into it; made on first use. Held as a `dyn Node`
    /// so that the tensor core names no particular node.
    pub(crate) accumulator: OnceLock<Arc<dyn Node>>,
    /// For views made by view ops: the tensor they view (set once, as the view is made).
    pub(crate) view_base: OnceLock<Tensor>,
    pub(crate) autograd: Mutex<AutogradMeta>,
    /// Serialises read-add-write of `.grad` when several threads run backward into this leaf
    /// at once (their graphs share the leaf's one `AccumulateGrad`).
    pub(crate) accumulating: Mutex<()>,
}

impl TensorImpl {
    #[inline]
    fn new(
        storage: Arc<Storage>,
        layout: Layout,
        contiguous: bool,
        numel: usize,
        dtype: DType,
    ) -> TensorImpl {
        TensorImpl {
            storage,
            layout,
            contiguous,
            numel,
            dtype,
            requires_grad: AtomicBool::new(false),
            has_grad_fn: AtomicBool::new(false),
            accumulator: OnceLock::new(),
            view_base: OnceLock::new(),
            autograd: Mutex::new(AutogradMeta::default()),
            accumulating: Mutex::new(()),
        }
    }
}

// A panic cannot leave a tensor half-updated for a `catch_unwind` caller to see: its mutable
// state is behind locks (poisoning is ignored, each guarded value valid at all times),
// atomics, or set-once cells. The accumulator's cell holds an `Arc<dyn Node>` graph, which
// is not `RefUnwindSafe` by itself, so the auto trait has to be stated.
impl std::panic::RefUnwindSafe for TensorImpl {}
impl std::panic::UnwindSafe for TensorImpl {}

/// Per-tensor autograd state. Its `Drop` is autograd's (beside `release` in
/// `autograd::node`): the graph's owner decides how a `grad_fn` is let go.
#[derive(Default)]
pub(crate) struct AutogradMeta {
    /// Set by the user on leaves.
    pub requires_grad: bool,
    pub grad: Option<Tensor>,
    /// The node that produced this tensor; `None` for leaves.
    pub grad_fn: Option<Arc<dyn Node>>,
    /// Which output of `grad_fn` this tensor is.
    pub output_nr: usize,
    /// Hooks of a leaf, run on its gradient before accumulation.
    pub hooks: Vec<Hook>,
    /// Hooks of a leaf, run after a gradient was accumulated into its `.grad`, with an id
    /// each for [`crate::autograd::HookHandle::remove`].
    pub post_accumulate_hooks: Vec<(u64, PostAccumulateHook)>,
    /// Set when a module replaced this tensor with a converted copy (`Module::to_dtype`,
    /// `Module::to_device`): handles to it held elsewhere (an optimizer's) are stale. A byte
    /// in the struct's padding, so tensors are no larger for it.
    pub superseded: bool,
}

/// The element count of a new contiguous tensor of `shape`, or PyTorch's error when the
/// count overflows.
pub(crate) fn storage_numel(op: &str, shape: &[usize], dtype: DType) -> Result<usize> {
    kiln_kernels::layout::checked_numel(shape)
        .filter(|n| {
            n.checked_mul(dtype.size_in_bytes())
                .is_some_and(|b| b <= i64::MAX as usize)
        })
        .ok_or_else(|| {
            Error::shape(
                op,
                format!("Storage size calculation overflowed with sizes={shape:?}"),
            )
        })
}

impl Tensor {
    /// Wraps storage and a layout into a new tensor with no autograd history.
    #[inline]
    pub(crate) fn from_storage(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Tensor {
        let (contiguous, numel) = (layout.is_contiguous(), layout.numel());
        Tensor::from_parts(storage, layout, contiguous, numel, dtype)
    }

    /// [`Tensor::from_storage`] with the layout's contiguity and element count known.
    #[inline]
    fn from_parts(
        storage: Arc<Storage>,
        layout: Layout,
        contiguous: bool,
        numel: usize,
        dtype: DType,
    ) -> Tensor {
        debug_assert_eq!(contiguous, layout.is_contiguous());
        debug_assert_eq!(numel, layout.numel());
        Tensor(crate::arc_init::arc_new!(TensorImpl::new(
            storage, layout, contiguous, numel, dtype
        )))
    }

    /// A new row-major tensor of `shape` over `storage`, its layout written where it lies:
    /// built apart and moved in (every op's output), its words were read back with wide
    /// loads before their stores had landed.
    #[inline]
    fn contiguous_from_parts(
        storage: Arc<Storage>,
        shape: &[usize],
        numel: usize,
        dtype: DType,
    ) -> Tensor {
        let empty = Layout {
            sizes: Dims::new(),
            strides: Dims::new(),
            offset: 0,
        };
        Tensor(crate::arc_init::arc_new!(
            TensorImpl::new(storage, empty, true, numel, dtype),
            |t: &mut TensorImpl| {
                let l = &mut t.layout;
                for &d in shape {
                    l.sizes.push(d);
                    l.strides.push(0);
                }
                let mut acc = 1usize;
                for (st, &sz) in l.strides.iter_mut().zip(shape).rev() {
                    *st = acc;
                    acc = acc.saturating_mul(sz.max(1));
                }
                debug_assert_eq!(*l, Layout::contiguous(shape));
                debug_assert_eq!(numel, l.numel());
            }
        ))
    }

    /// A fresh contiguous tensor of zeros (the allocation every op output starts from), or
    /// `op`'s error when the shape is too large to count or to allocate.
    pub(crate) fn alloc(op: &str, shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::alloc_with(op, shape, dtype, CpuBuffer::zeros)
    }

    /// A fresh contiguous tensor for a kernel that writes every element (PyTorch's
    /// `empty`): on the CPU its values are whatever a cached buffer held (see
    /// [`CpuBuffer::empty`]), never uninitialised memory.
    pub(crate) fn alloc_empty(op: &str, shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::alloc_with(op, shape, dtype, CpuBuffer::empty)
    }

    fn alloc_with(
        op: &str,
        shape: &[usize],
        dtype: DType,
        buffer: impl FnOnce(&str, DType, usize) -> Result<CpuBuffer>,
    ) -> Result<Tensor> {
        let n = storage_numel(op, shape, dtype)?;
        Ok(Tensor::contiguous_from_parts(
            Arc::new(Storage::new(buffer(op, dtype, n)?)),
            shape,
            n,
            dtype,
        ))
    }

    /// A contiguous `shape` tensor of `dtype` on the meta device: no memory behind it.
    pub(crate) fn alloc_meta(op: &str, shape: &[usize], dtype: DType) -> Result<Tensor> {
        let n = storage_numel(op, shape, dtype)?;
        Ok(Tensor::contiguous_from_parts(
            Arc::new(Storage::meta(n)),
            shape,
            n,
            dtype,
        ))
    }

    /// A contiguous tensor over `buf`, which holds exactly the shape's element count.
    pub(crate) fn from_buffer(buf: CpuBuffer, shape: &[usize]) -> Tensor {
        let dtype = buf.dtype();
        debug_assert_eq!(Some(buf.len()), kiln_kernels::layout::checked_numel(shape));
        Tensor::from_storage(
            Arc::new(Storage::new(buf)),
            Layout::contiguous(shape),
            dtype,
        )
    }

    /// A view of the same storage with another layout, without autograd history.
    pub(crate) fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor::from_storage(self.0.storage.clone(), layout, self.0.dtype)
    }

    #[inline]
    pub(crate) fn meta(&self) -> MutexGuard<'_, AutogradMeta> {
        self.0.autograd.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The size of each dimension.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        &self.0.layout.sizes
    }

    /// Alias of [`Tensor::shape`], as PyTorch's `size()`.
    pub fn sizes(&self) -> &[usize] {
        &self.0.layout.sizes
    }

    /// The size of dimension `dim` (negative counts from the end).
    pub fn size(&self, dim: i64) -> Result<usize> {
        let d =
            kiln_kernels::layout::wrap_dim(dim, self.dim()).map_err(|m| Error::op("size", m))?;
        Ok(self.shape().get(d).copied().unwrap_or(1))
    }

    /// Strides in elements.
    pub fn strides(&self) -> &[usize] {
        &self.0.layout.strides
    }

    /// Offset of the first element in the storage, in elements.
    #[inline]
    pub fn storage_offset(&self) -> usize {
        self.0.layout.offset
    }

    /// Sizes, strides and offset.
    #[inline]
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }

    /// Number of dimensions.
    #[inline]
    pub fn dim(&self) -> usize {
        self.0.layout.ndim()
    }

    /// Number of elements.
    #[inline]
    pub fn numel(&self) -> usize {
        self.0.numel
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The device the storage lives on.
    #[inline]
    pub fn device(&self) -> Device {
        self.0.storage.device()
    }

    /// True when the elements are row-major with no gaps.
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.0.contiguous
    }

    /// True for f16, bf16, f32 and f64.
    pub fn is_floating_point(&self) -> bool {
        self.0.dtype.is_floating_point()
    }

    /// The storage's version counter (bumped by every in-place write to it or its views).
    pub fn version(&self) -> u64 {
        self.0.storage.version()
    }

    /// True when `self` and `other` view the same storage.
    #[inline]
    pub fn shares_storage_with(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }

    /// True when both handles are the same tensor (not merely equal values).
    pub fn is_same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Records that this tensor is a view of `base` (or of `base`'s own base).
    pub(crate) fn mark_view_of(&self, base: &Tensor) {
        let root = base.view_base().unwrap_or_else(|| base.clone());
        // Views are marked once, right after they are made.
        let first = self.0.view_base.set(root).is_ok();
        debug_assert!(first, "kiln internal error: a view marked twice");
    }

    /// The tensor this one is a view of, if it was made by a view op.
    pub fn view_base(&self) -> Option<Tensor> {
        self.0.view_base.get().cloned()
    }

    #[inline]
    pub(crate) fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }
}

// A tensor is shared across threads through `Arc`; storage access is guarded by a lock.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tensor>();
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout written in place is the row-major one (strides worked out separately).
    #[test]
    fn fresh_tensors_get_row_major_layouts() {
        let cases: [(&[usize], &[usize]); 6] = [
            (&[], &[]),
            (&[5], &[1]),
            (&[2, 3, 4], &[12, 4, 1]),
            (&[0, 3], &[3, 1]),
            (&[3, 1, 2], &[2, 2, 1]),
            (&[2, 1, 2, 1, 2, 1, 2], &[8, 8, 4, 4, 2, 2, 1]),
        ];
        for (shape, strides) in cases {
            let t = Tensor::alloc("test", shape, DType::F32).unwrap();
            assert_eq!(t.shape(), shape);
            assert_eq!(t.layout().strides.as_slice(), strides, "shape {shape:?}");
            assert_eq!(t.layout().offset, 0);
            assert!(t.is_contiguous());
            assert_eq!(t.numel(), shape.iter().product::<usize>());
        }
    }
}
