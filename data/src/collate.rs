//! Turning a list of samples into a batch: the [`Collate`] trait behind
//! [`default_collate`], and [`CollateFn`], which the [`crate::DataLoader`] calls.

use crate::dataset::Dataset;
use kiln_core::{Error, Result, Tensor};

/// How [`default_collate`] batches samples of a type (PyTorch's `default_collate`): tensors
/// are stacked along a new dim 0, tuples and `Vec`s are batched element by element, numbers
/// become a 1-d tensor (`f64` → float64, `i64` → int64, as PyTorch; `f32`, `i32`, `u8`,
/// `bool` keep their dtype) and strings are gathered into a `Vec<String>`.
pub trait Collate: Sized + Send + 'static {
    /// What a batch of `Self` becomes.
    type Batch: Send + 'static;

    /// Batches `items` (at least one).
    fn collate(items: Vec<Self>) -> Result<Self::Batch>;

    /// A value already holding a whole batch, as built by [`Dataset::get_batch`], as a
    /// `Batch`: the identity for tensors and their tuples and `Vec`s, `None` for types whose
    /// batch has another type.
    fn item_as_batch(item: Self) -> Option<Self::Batch> {
        let _ = item;
        None
    }
}

/// Stacks tensors along a new dim 0, and batches tuples and `Vec`s element by element (see
/// [`Collate`]).
///
/// ```
/// use kiln_core::Tensor;
/// let batch = kiln_data::default_collate(vec![
///     (Tensor::from([1f32, 2.]), 0i64),
///     (Tensor::from([3f32, 4.]), 1i64),
/// ])?;
/// assert_eq!(batch.0.shape(), &[2, 2]);
/// assert_eq!(batch.1.to_vec::<i64>()?, [0, 1]);
/// # Ok::<(), kiln_core::Error>(())
/// ```
pub fn default_collate<T: Collate>(items: Vec<T>) -> Result<T::Batch> {
    if items.is_empty() {
        return Err(Error::value(
            "default_collate",
            "expected at least one sample, but got an empty batch",
        ));
    }
    T::collate(items)
}

impl Collate for Tensor {
    type Batch = Tensor;
    fn collate(items: Vec<Tensor>) -> Result<Tensor> {
        kiln_core::stack(&items).map_err(|e| Error::new(e.kind(), "default_collate", e.to_string()))
    }
    fn item_as_batch(item: Tensor) -> Option<Tensor> {
        Some(item)
    }
}

impl<T: Collate> Collate for Vec<T> {
    type Batch = Vec<T::Batch>;
    fn collate(items: Vec<Vec<T>>) -> Result<Vec<T::Batch>> {
        let n = items.first().map_or(0, Vec::len);
        if items.iter().any(|v| v.len() != n) {
            return Err(Error::shape(
                "default_collate",
                "each element in list of batch should be of equal size",
            ));
        }
        let mut columns: Vec<Vec<T>> = (0..n).map(|_| Vec::with_capacity(items.len())).collect();
        for row in items {
            for (col, x) in columns.iter_mut().zip(row) {
                col.push(x);
            }
        }
        columns.into_iter().map(T::collate).collect()
    }
    fn item_as_batch(item: Vec<T>) -> Option<Vec<T::Batch>> {
        item.into_iter().map(T::item_as_batch).collect()
    }
}

macro_rules! collate_tuple {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Collate),+> Collate for ($($name,)+) {
            type Batch = ($($name::Batch,)+);
            #[allow(non_snake_case)]
            fn collate(items: Vec<Self>) -> Result<Self::Batch> {
                $(let mut $name = Vec::with_capacity(items.len());)+
                for item in items {
                    $($name.push(item.$idx);)+
                }
                Ok(($($name::collate($name)?,)+))
            }
            fn item_as_batch(item: Self) -> Option<Self::Batch> {
                Some(($($name::item_as_batch(item.$idx)?,)+))
            }
        }
    };
}
collate_tuple!(A 0);
collate_tuple!(A 0, B 1);
collate_tuple!(A 0, B 1, C 2);
collate_tuple!(A 0, B 1, C 2, D 3);
collate_tuple!(A 0, B 1, C 2, D 3, E 4);

macro_rules! collate_number {
    ($($t:ty),*) => { $(
        impl Collate for $t {
            type Batch = Tensor;
            fn collate(items: Vec<$t>) -> Result<Tensor> {
                let n = items.len();
                Tensor::from_vec(items, &[n])
            }
        }
    )* };
}
collate_number!(f64, f32, i64, i32, u8, bool);

impl Collate for String {
    type Batch = Vec<String>;
    fn collate(items: Vec<String>) -> Result<Vec<String>> {
        Ok(items)
    }
}

/// Builds a batch from samples: [`DefaultCollate`] (stacking, with a fast path for
/// datasets that implement [`Dataset::get_batch`]) or any
/// `Fn(Vec<Item>) -> Result<Batch>` closure, like PyTorch's `collate_fn`.
pub trait CollateFn<T>: Send + Sync + 'static {
    /// What a batch becomes.
    type Batch: Send + 'static;

    /// Batches `items`.
    fn collate(&self, items: Vec<T>) -> Result<Self::Batch>;

    /// The batch of `dataset`'s samples at `indices`: by default, every sample fetched with
    /// [`Dataset::get`], then [`CollateFn::collate`].
    fn fetch<D: Dataset<Item = T> + ?Sized>(
        &self,
        dataset: &D,
        indices: &[usize],
    ) -> Result<Self::Batch> {
        let items = indices
            .iter()
            .map(|&i| dataset.get(i))
            .collect::<Result<Vec<T>>>()?;
        self.collate(items)
    }
}

/// The `DataLoader`'s default collate: [`default_collate`], taking a dataset's
/// [`Dataset::get_batch`] fast path when it has one.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultCollate;

impl<T: Collate> CollateFn<T> for DefaultCollate {
    type Batch = T::Batch;

    fn collate(&self, items: Vec<T>) -> Result<T::Batch> {
        default_collate(items)
    }

    fn fetch<D: Dataset<Item = T> + ?Sized>(
        &self,
        dataset: &D,
        indices: &[usize],
    ) -> Result<T::Batch> {
        if let Some(batch) = dataset.get_batch(indices) {
            if let Some(batch) = T::item_as_batch(batch?) {
                return Ok(batch);
            }
        }
        let items = indices
            .iter()
            .map(|&i| dataset.get(i))
            .collect::<Result<Vec<T>>>()?;
        default_collate(items)
    }
}

impl<T, B, F> CollateFn<T> for F
where
    F: Fn(Vec<T>) -> Result<B> + Send + Sync + 'static,
    B: Send + 'static,
{
    type Batch = B;
    fn collate(&self, items: Vec<T>) -> Result<B> {
        self(items)
    }
}
