//! `IntoDims`: the one input type of size lists (`view`, `reshape`, `expand`, `zeros`, …).

use crate::{Error, Result};

/// Anything that can be a list of sizes: what [`Tensor::shape`](crate::Tensor::shape)
/// returns (`&[usize]`), `&[i64]` (which may hold PyTorch's `-1`), `Vec`s and arrays of
/// `usize`, `i64`, `i32`, `isize` or `u32`, by value or by reference, and `()` for the
/// empty size list of a 0-dim tensor. So all of these compile:
///
/// ```
/// use kiln::{DType, Tensor};
/// let x = Tensor::zeros([2, 6], DType::F32)?;
/// let a = x.view([3, -1])?; // x.view(3, -1)
/// let b = x.view(&[3, -1])?;
/// let c = x.reshape(vec![4_i64, 3])?;
/// let d = x.expand(x.shape())?;
/// let e = Tensor::ones(a.shape(), DType::F32)?.sum()?.reshape(())?; // reshape([])
/// assert_eq!((a.shape(), b.shape(), c.shape(), d.shape()), (&[3, 4][..], &[3, 4][..], &[4, 3][..], &[2, 6][..]));
/// assert_eq!(e.shape(), &[] as &[usize]);
/// # Ok::<(), kiln::Error>(())
/// ```
///
/// Which values are valid is the op's business: `view` and `reshape` accept one `-1`,
/// `expand` accepts `-1` for "keep this size", the factories accept none, each with
/// PyTorch's error. An empty literal `&[]` has no element type for Rust to infer: write
/// `()` (or `&[] as &[usize]`) instead; and as integer literals in an array default to
/// `i32`, a size above `i32::MAX` needs a suffix (`&[1i64 << 40]`), which the compiler asks for.
pub trait IntoDims {
    /// The sizes as `i64`s (a `usize` above `i64::MAX`, which no tensor can have, saturates).
    fn into_dims(self) -> Vec<i64>;
}

/// One element of a size list.
pub trait DimElem: Copy {
    /// The element as an `i64` (saturating).
    fn to_dim(self) -> i64;
}

macro_rules! dim_elem {
    ($($t:ty),*) => {$(
        impl DimElem for $t {
            #[inline]
            fn to_dim(self) -> i64 {
                i64::try_from(self).unwrap_or(i64::MAX)
            }
        }
    )*};
}
dim_elem!(usize, isize, i64, i32, u32);

impl<T: DimElem> IntoDims for &[T] {
    fn into_dims(self) -> Vec<i64> {
        self.iter().map(|d| d.to_dim()).collect()
    }
}
impl<T: DimElem> IntoDims for &mut [T] {
    fn into_dims(self) -> Vec<i64> {
        self.iter().map(|d| d.to_dim()).collect()
    }
}
impl<T: DimElem, const N: usize> IntoDims for [T; N] {
    fn into_dims(self) -> Vec<i64> {
        self.iter().map(|d| d.to_dim()).collect()
    }
}
impl<T: DimElem, const N: usize> IntoDims for &[T; N] {
    fn into_dims(self) -> Vec<i64> {
        self.iter().map(|d| d.to_dim()).collect()
    }
}
impl<T: DimElem> IntoDims for Vec<T> {
    fn into_dims(self) -> Vec<i64> {
        self.iter().map(|d| d.to_dim()).collect()
    }
}
impl<T: DimElem> IntoDims for &Vec<T> {
    fn into_dims(self) -> Vec<i64> {
        self.iter().map(|d| d.to_dim()).collect()
    }
}
impl IntoDims for () {
    fn into_dims(self) -> Vec<i64> {
        Vec::new()
    }
}

/// The sizes of a new tensor made by factory `op`, or PyTorch's error for a negative size.
pub(crate) fn new_shape(op: &str, dims: impl IntoDims) -> Result<Vec<usize>> {
    let dims = dims.into_dims();
    dims.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                // PyTorch 2.x's wordings: `zeros` checks first, with its own.
                let msg = if op == "zeros" {
                    "Dimension size must be non-negative.".to_string()
                } else {
                    format!("Trying to create tensor with negative dimension {d}: {dims:?}")
                };
                Error::shape(op, msg)
            })
        })
        .collect()
}
