//! Basic indexing, Python's `x[1:3, None, ..., -1]`: [`Tensor::i`] and the [`s!`](crate::s)
//! macro.
//!
//! Every form is a view made by the view ops (`select`, `slice`, `unsqueeze`), so the result
//! shares `x`'s storage and has their autograd history.
//!
//! | Python | Rust (tuple) | Rust (`s!`) |
//! |---|---|---|
//! | `x[-1]` | `x.i(-1)` | `x.i(s![-1])` |
//! | `x[1:3]` | `x.i(1..3)` | `x.i(s![1..3])` |
//! | `x[1:]`, `x[:3]`, `x[:]` | `x.i(1..)`, `x.i(..3)`, `x.i(..)` | same in `s![..]` |
//! | `x[1:3+1]` | `x.i(1..=3)` | `s![1..=3]` |
//! | `x[:, ::2]` | `x.i((.., TensorIndexer::slice(None, None, 2)))` | `x.i(s![.., ..;2])` |
//! | `x[1:7:3]` | `x.i(TensorIndexer::slice(1, 7, 3))` | `x.i(s![1..7;3])` |
//! | `x[..., 0]` | `x.i((Ellipsis, 0))` | `x.i(s![..., 0])` |
//! | `x[1:3, None]` | `x.i((1..3, NewAxis))` | `x.i(s![1..3, None])` |
//!
//! Indices and range bounds may be negative, counting from the end as in Python; a slice's
//! bounds are clamped to the dimension like Python's, while an integer index out of range is
//! an error. A step must be positive (a negative step is an error in PyTorch too). Integer
//! indices may be `i64`, `i32`, `isize` or `usize`.
//!
//! A range with a negative end such as `1..-1` (Python's `1:-1`) is fine here, but clippy's
//! `reversed_empty_ranges` (deny by default) takes it for an empty Rust range: allow that lint
//! where you write one, or write `TensorIndexer::slice(1, -1, 1)`.
//!
//! One deviation: a second `...` is an error here (numpy's), where PyTorch accepts it and
//! expands it to the dimensions left after the first, which is rarely what was meant.

use crate::Tensor;
use crate::{Error, Result};
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// Python's `None` in an index: a new dimension of size 1 (`unsqueeze`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAxis;

/// Python's `...` in an index: as many full slices as the other indices leave dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ellipsis;

/// One item of a basic index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorIndexer {
    /// `x[i]`: removes the dimension (`select`).
    Select(i64),
    /// `x[start:end:step]` (`slice`); `None` bounds are the ends of the dimension.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    },
    /// `None`: inserts a dimension of size 1 (`unsqueeze`).
    NewAxis,
    /// `...`.
    Ellipsis,
}

impl TensorIndexer {
    /// `start:end:step`, for the steps Rust's ranges cannot write.
    pub fn slice(start: impl Into<Option<i64>>, end: impl Into<Option<i64>>, step: i64) -> Self {
        TensorIndexer::Slice {
            start: start.into(),
            end: end.into(),
            step,
        }
    }
}

/// A Rust range as a slice index (`a..b` is `a:b`); used by [`s!`](crate::s) for `range;step`.
pub trait SliceRange {
    /// The `(start, end)` bounds in Python's sense.
    fn bounds(self) -> (Option<i64>, Option<i64>);
    /// The slice `start:end:step`.
    fn stepped(self, step: i64) -> TensorIndexer
    where
        Self: Sized,
    {
        let (start, end) = self.bounds();
        TensorIndexer::Slice { start, end, step }
    }
}

impl SliceRange for RangeFull {
    fn bounds(self) -> (Option<i64>, Option<i64>) {
        (None, None)
    }
}

/// `..=e` ends after `e`; `..=-1` is "to the end", as the last element is index -1.
fn inclusive_end(e: i64) -> Option<i64> {
    if e == -1 {
        None
    } else {
        Some(e.saturating_add(1))
    }
}

macro_rules! index_ints {
    ($($t:ty),*) => {$(
        impl From<$t> for TensorIndexer {
            fn from(i: $t) -> Self {
                TensorIndexer::Select(i64::try_from(i).unwrap_or(i64::MAX))
            }
        }
        impl SliceRange for Range<$t> {
            fn bounds(self) -> (Option<i64>, Option<i64>) {
                (Some(to_i64(self.start)), Some(to_i64(self.end)))
            }
        }
        impl SliceRange for RangeFrom<$t> {
            fn bounds(self) -> (Option<i64>, Option<i64>) {
                (Some(to_i64(self.start)), None)
            }
        }
        impl SliceRange for RangeTo<$t> {
            fn bounds(self) -> (Option<i64>, Option<i64>) {
                (None, Some(to_i64(self.end)))
            }
        }
        impl SliceRange for RangeInclusive<$t> {
            fn bounds(self) -> (Option<i64>, Option<i64>) {
                (Some(to_i64(*self.start())), inclusive_end(to_i64(*self.end())))
            }
        }
        impl SliceRange for RangeToInclusive<$t> {
            fn bounds(self) -> (Option<i64>, Option<i64>) {
                (None, inclusive_end(to_i64(self.end)))
            }
        }
        impl From<Range<$t>> for TensorIndexer {
            fn from(r: Range<$t>) -> Self { r.stepped(1) }
        }
        impl From<RangeFrom<$t>> for TensorIndexer {
            fn from(r: RangeFrom<$t>) -> Self { r.stepped(1) }
        }
        impl From<RangeTo<$t>> for TensorIndexer {
            fn from(r: RangeTo<$t>) -> Self { r.stepped(1) }
        }
        impl From<RangeInclusive<$t>> for TensorIndexer {
            fn from(r: RangeInclusive<$t>) -> Self { r.stepped(1) }
        }
        impl From<RangeToInclusive<$t>> for TensorIndexer {
            fn from(r: RangeToInclusive<$t>) -> Self { r.stepped(1) }
        }
    )*};
}

fn to_i64<T: TryInto<i64>>(x: T) -> i64 {
    x.try_into().unwrap_or(i64::MAX)
}

index_ints!(i64, i32, isize, usize);

impl From<RangeFull> for TensorIndexer {
    fn from(_: RangeFull) -> Self {
        TensorIndexer::Slice {
            start: None,
            end: None,
            step: 1,
        }
    }
}
impl From<NewAxis> for TensorIndexer {
    fn from(_: NewAxis) -> Self {
        TensorIndexer::NewAxis
    }
}
impl From<Ellipsis> for TensorIndexer {
    fn from(_: Ellipsis) -> Self {
        TensorIndexer::Ellipsis
    }
}

/// What [`Tensor::i`] accepts: one index item (an integer, a range, [`NewAxis`],
/// [`Ellipsis`], a [`TensorIndexer`]), a tuple of up to eight of them, or a list of
/// [`TensorIndexer`]s such as [`s!`](crate::s) makes.
pub trait IntoIndices {
    /// The items in order.
    fn into_indices(self) -> Vec<TensorIndexer>;
}

macro_rules! single {
    ($($t:ty),*) => {$(
        impl IntoIndices for $t {
            fn into_indices(self) -> Vec<TensorIndexer> {
                vec![self.into()]
            }
        }
    )*};
}
single!(
    TensorIndexer,
    NewAxis,
    Ellipsis,
    RangeFull,
    i64,
    i32,
    isize,
    usize
);
macro_rules! single_ranges {
    ($($t:ty),*) => {$(
        single!(Range<$t>, RangeFrom<$t>, RangeTo<$t>, RangeInclusive<$t>, RangeToInclusive<$t>);
    )*};
}
single_ranges!(i64, i32, isize, usize);

impl IntoIndices for () {
    fn into_indices(self) -> Vec<TensorIndexer> {
        Vec::new()
    }
}
impl IntoIndices for Vec<TensorIndexer> {
    fn into_indices(self) -> Vec<TensorIndexer> {
        self
    }
}
impl IntoIndices for &[TensorIndexer] {
    fn into_indices(self) -> Vec<TensorIndexer> {
        self.to_vec()
    }
}
impl<const N: usize> IntoIndices for [TensorIndexer; N] {
    fn into_indices(self) -> Vec<TensorIndexer> {
        self.to_vec()
    }
}

macro_rules! tuples {
    ($(($($T:ident),+)),*) => {$(
        impl<$($T: Into<TensorIndexer>),+> IntoIndices for ($($T,)+) {
            #[allow(non_snake_case)]
            fn into_indices(self) -> Vec<TensorIndexer> {
                let ($($T,)+) = self;
                vec![$($T.into()),+]
            }
        }
    )*};
}
tuples!(
    (A),
    (A, B),
    (A, B, C),
    (A, B, C, D),
    (A, B, C, D, E),
    (A, B, C, D, E, F),
    (A, B, C, D, E, F, G),
    (A, B, C, D, E, F, G, H)
);

/// Builds a basic index, numpy/ndarray style: items separated by commas, each one of
/// `i` (an integer, `x[i]`), a range `a..b`, `a..`, `..b`, `..`, `a..=b` (`x[a:b]`),
/// a range with a step `a..b;s` (`x[a:b:s]`, `..;2` is `::2`), `None` (a new axis) and
/// `...` (Python's ellipsis). Use it with [`Tensor::i`]:
///
/// ```
/// use kiln::{s, Tensor};
/// let x = Tensor::arange(0., 24., 1., kiln::DType::F32)?.reshape([2, 3, 4])?;
/// assert_eq!(x.i(s![.., ..;2])?.shape(), &[2, 2, 4]); // x[:, ::2]
/// assert_eq!(x.i(s![..., 0])?.shape(), &[2, 3]); // x[..., 0]
/// assert_eq!(x.i(s![1..3, None])?.shape(), &[1, 1, 3, 4]); // x[1:3, None]
/// assert_eq!(x.i(s![-1, 1, -2])?.to_vec::<f32>()?, vec![18.]); // x[-1, 1, -2]
/// # Ok::<(), kiln::Error>(())
/// ```
#[macro_export]
macro_rules! s {
    (@acc [$($done:expr,)*]) => {
        [$($done,)*]
    };
    (@acc [$($done:expr,)*] ... $(, $($rest:tt)*)?) => {
        $crate::s!(@acc [$($done,)* $crate::TensorIndexer::Ellipsis,] $($($rest)*)?)
    };
    (@acc [$($done:expr,)*] None $(, $($rest:tt)*)?) => {
        $crate::s!(@acc [$($done,)* $crate::TensorIndexer::NewAxis,] $($($rest)*)?)
    };
    (@acc [$($done:expr,)*] $r:expr ; $step:expr $(, $($rest:tt)*)?) => {
        $crate::s!(@acc [$($done,)* $crate::SliceRange::stepped($r, $step),] $($($rest)*)?)
    };
    (@acc [$($done:expr,)*] $e:expr $(, $($rest:tt)*)?) => {
        $crate::s!(@acc [$($done,)* $crate::TensorIndexer::from($e),] $($($rest)*)?)
    };
    ($($t:tt)*) => {
        $crate::s!(@acc [] $($t)*)
    };
}

impl Tensor {
    /// Basic indexing, Python's `x[...]`: an integer, a range, [`NewAxis`], [`Ellipsis`], a
    /// tuple of them, or an [`s!`](crate::s) list; the table in
    /// [`tensor::indexing`](crate::tensor::indexing) maps each Rust form to its Python one.
    /// The result is a view of `self` (it shares storage) with autograd through `select`,
    /// `slice` and `unsqueeze`. Errors are Python indexing's: an integer index out of range
    /// (`index 5 is out of bounds for dimension 0 with size 2`), a step that is not positive
    /// (`step must be greater than zero`), too many indices, two ellipses.
    ///
    /// ```
    /// use kiln::{Ellipsis, NewAxis, Tensor};
    /// let x = Tensor::from([[1f32, 2., 3.], [4., 5., 6.]]);
    /// assert_eq!(x.i(-1)?.to_vec::<f32>()?, vec![4., 5., 6.]); // x[-1]
    /// assert_eq!(x.i((.., 1..))?.to_vec::<f32>()?, vec![2., 3., 5., 6.]); // x[:, 1:]
    /// assert_eq!(x.i((Ellipsis, 0))?.to_vec::<f32>()?, vec![1., 4.]); // x[..., 0]
    /// assert_eq!(x.i((0, NewAxis))?.shape(), &[1, 3]); // x[0, None]
    /// assert!(x.i(..)?.shares_storage_with(&x));
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn i(&self, index: impl IntoIndices) -> Result<Tensor> {
        let items = index.into_indices();
        let ellipses = items
            .iter()
            .filter(|t| matches!(t, TensorIndexer::Ellipsis))
            .count();
        if ellipses > 1 {
            return Err(Error::value(
                "index",
                "an index can only have a single ellipsis ('...')",
            ));
        }
        let consumed = items
            .iter()
            .filter(|t| matches!(t, TensorIndexer::Select(_) | TensorIndexer::Slice { .. }))
            .count();
        let ndim = self.dim();
        if ndim == 0 && consumed > 0 {
            return Err(Error::index(
                "index",
                "invalid index of a 0-dim tensor. Use `tensor.item::<T>()` to convert a 0-dim \
                 tensor to a number",
            ));
        }
        if consumed > ndim {
            return Err(Error::index(
                "index",
                format!("too many indices for tensor of dimension {ndim}"),
            ));
        }
        // `x[...]` and `x[()]` alias `x` in PyTorch: a full slice of the whole tensor, or
        // of the inserted axis for a 0-dim tensor, keeps that.
        let mut result = if ndim > 0 {
            self.slice_with(0, None, None, 1)?
        } else {
            self.unsqueeze(0)?.squeeze_dim(0)?
        };
        let mut dim: i64 = 0;
        for (position, item) in items.into_iter().enumerate() {
            match item {
                TensorIndexer::Select(i) => {
                    // Python indexing's wording (`at::indexing::applySelect`), not `select`'s;
                    // like PyTorch it names the item's position in the index as the dimension.
                    let size = result.shape()[dim as usize] as i64;
                    if i < -size || i >= size {
                        return Err(Error::index(
                            "index",
                            format!(
                                "index {i} is out of bounds for dimension {position} with size {size}"
                            ),
                        ));
                    }
                    result = result.select(dim, i)?;
                }
                TensorIndexer::Slice { start, end, step } => {
                    if step <= 0 {
                        // Python's `x[::-1]`: a ValueError in PyTorch.
                        return Err(Error::value("index", "step must be greater than zero"));
                    }
                    result = result.slice_with(dim, start, end, step)?;
                    dim += 1;
                }
                TensorIndexer::NewAxis => {
                    result = result.unsqueeze(dim)?;
                    dim += 1;
                }
                TensorIndexer::Ellipsis => dim += (ndim - consumed) as i64,
            }
        }
        Ok(result)
    }
}
