//! `CpuBuffer`: the elements of one CPU storage, of one dtype, and the element types that
//! name its variants. How buffers are allocated and reused is the cache's and the storage's.

use crate::DType;
use half::{bf16, f16};
use kiln_kernels::Element;
use smallvec::SmallVec;

/// The elements of a [`CpuBuffer`]: up to 16 bytes of them are stored inline (in the space
/// a `Vec`'s pointer and length take), so a scalar or a one-element tensor — a loss, a
/// step count, a PyTorch "wrapped number" — costs no allocation of its own.
pub type Elems<T, const N: usize> = SmallVec<[T; N]>;

/// A CPU buffer of one dtype.
#[derive(Clone, Debug)]
pub enum CpuBuffer {
    Bool(Elems<bool, 16>),
    U8(Elems<u8, 16>),
    I8(Elems<i8, 16>),
    I16(Elems<i16, 8>),
    I32(Elems<i32, 4>),
    I64(Elems<i64, 2>),
    F16(Elems<f16, 8>),
    BF16(Elems<bf16, 8>),
    F32(Elems<f32, 4>),
    F64(Elems<f64, 2>),
}

/// An [`Element`] that knows its [`CpuBuffer`] variant.
pub trait BufferElement: Element {
    /// How many elements a buffer holds without allocating.
    const INLINE: usize;
    /// Wraps a vector as a buffer.
    fn wrap(v: Vec<Self>) -> CpuBuffer;
    /// A buffer of `len` zeros held inline; `len` is at most [`BufferElement::INLINE`].
    fn inline_zeros(len: usize) -> CpuBuffer;
    /// The buffer's elements; `None` when the buffer holds another dtype.
    fn slice(b: &CpuBuffer) -> Option<&[Self]>;
    /// The buffer's elements, mutably.
    fn slice_mut(b: &mut CpuBuffer) -> Option<&mut [Self]>;
}

macro_rules! buffer_element {
    ($($t:ty => $v:ident, $n:literal),*) => {
        $(impl BufferElement for $t {
            const INLINE: usize = $n;
            fn wrap(v: Vec<Self>) -> CpuBuffer { CpuBuffer::$v(SmallVec::from_vec(v)) }
            #[inline]
            fn inline_zeros(len: usize) -> CpuBuffer {
                CpuBuffer::$v(SmallVec::from_buf_and_len([<$t>::default(); $n], len))
            }
            #[inline]
            fn slice(b: &CpuBuffer) -> Option<&[Self]> {
                match b { CpuBuffer::$v(v) => Some(v), _ => None }
            }
            #[inline]
            fn slice_mut(b: &mut CpuBuffer) -> Option<&mut [Self]> {
                match b { CpuBuffer::$v(v) => Some(v), _ => None }
            }
        })*

        impl CpuBuffer {
            /// The dtype of the elements.
            pub fn dtype(&self) -> DType {
                match self { $(CpuBuffer::$v(_) => <$t as Element>::DTYPE),* }
            }
            /// Number of elements.
            pub fn len(&self) -> usize {
                match self { $(CpuBuffer::$v(v) => v.len()),* }
            }
            /// True when the buffer holds no element.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// Elements the allocation has room for.
            pub(crate) fn capacity(&self) -> usize {
                match self { $(CpuBuffer::$v(v) => v.capacity()),* }
            }
            /// Shrinks to `len` elements, or grows to it with zeros, within the capacity.
            pub(crate) fn set_len(&mut self, len: usize) {
                match self { $(CpuBuffer::$v(v) => v.resize(len, <$t>::default())),* }
            }
            /// Sets every element to zero (`false`).
            pub(super) fn fill_zero(&mut self) {
                match self { $(CpuBuffer::$v(v) => v.fill(<$t>::default())),* }
            }
            /// Debug builds fill buffers handed out without zeroing with a value no kernel
            /// produces by accident (NaN, or a large integer pattern), so a kernel that
            /// claims to overwrite its output but misses an element fails its tests.
            #[cfg(debug_assertions)]
            pub(super) fn poison(&mut self) {
                match self { $(CpuBuffer::$v(v) => v.fill(<$t as PoisonValue>::POISON)),* }
            }
        }
    };
}
buffer_element!(bool => Bool, 16, u8 => U8, 16, i8 => I8, 16, i16 => I16, 8, i32 => I32, 4,
                i64 => I64, 2, f16 => F16, 8, bf16 => BF16, 8, f32 => F32, 4, f64 => F64, 2);

/// Element types whose all-zero bit pattern is a valid value (false, 0, +0.0).
///
/// # Safety
/// Implement only for types where every value made of zero bytes is initialised and valid.
pub(super) unsafe trait ZeroIsValid: BufferElement {}

macro_rules! zero_is_valid {
    ($($t:ty),*) => { $(
        // SAFETY: a zeroed bool is `false`, a zeroed integer is 0, a zeroed IEEE float
        // (f16, bf16, f32, f64) is +0.0.
        unsafe impl ZeroIsValid for $t {}
    )* };
}
zero_is_valid!(bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64);

/// The debug-build fill of [`CpuBuffer::empty`] buffers.
#[cfg(debug_assertions)]
trait PoisonValue: Sized {
    const POISON: Self;
}

#[cfg(debug_assertions)]
macro_rules! poison_value {
    ($($t:ty => $v:expr),*) => { $(impl PoisonValue for $t { const POISON: Self = $v; })* };
}
#[cfg(debug_assertions)]
poison_value!(bool => true, u8 => 0xA5, i8 => -91, i16 => -23131, i32 => -1515870811,
              i64 => -6510615555426900571, f16 => f16::NAN, bf16 => bf16::NAN,
              f32 => f32::NAN, f64 => f64::NAN);

/// `len` zeros in an allocation with room for `cap >= len` (all of it zeroed), or the number
/// of bytes that could not be allocated. Zeroed pages come straight from the allocator
/// (`calloc`), so a large buffer costs no fill pass, and an impossible size is an `Err`
/// rather than an abort.
pub(super) fn zeroed_vec<T: ZeroIsValid>(len: usize, cap: usize) -> Result<Vec<T>, u128> {
    debug_assert!(cap >= len);
    let bytes = cap as u128 * std::mem::size_of::<T>() as u128;
    if cap == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(cap).map_err(|_| bytes)?;
    // SAFETY: `layout` has a non-zero size: `len > 0` and every `ZeroIsValid` type is at
    // least one byte.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(bytes);
    }
    // SAFETY: `ptr` comes from the global allocator with `T`'s alignment and the layout of
    // exactly `cap` values (so capacity = `cap`), `len <= cap`, and zero bytes are a valid
    // `T` (`ZeroIsValid`), so the first `len` elements (indeed all `cap`) are initialised.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, cap) })
}
