//! Map-style and iterable datasets (PyTorch's `Dataset`, `IterableDataset`), `TensorDataset`,
//! `Subset` and `random_split`.

use kiln_core::{DType, Error, Generator, Result, Tensor};
use std::sync::Arc;

/// A map-style dataset (PyTorch's `torch.utils.data.Dataset`): `len()` items, fetched by
/// index. Items are usually a [`Tensor`], a tuple of tensors such as `(input, target)`, or a
/// `Vec<Tensor>`; the default collate stacks those (see [`crate::Collate`]).
///
/// Datasets are shared with the [`crate::DataLoader`]'s worker threads, so they are
/// `Send + Sync`; `get` takes `&self`.
pub trait Dataset: Send + Sync {
    /// One sample.
    type Item: Send + 'static;

    /// The number of samples (`__len__`).
    fn len(&self) -> usize;

    /// Whether the dataset has no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sample `index` (`__getitem__`); an `Err` for an index `>= len()`.
    fn get(&self, index: usize) -> Result<Self::Item>;

    /// The samples at `indices` already collated the way [`crate::default_collate`] would
    /// (every tensor stacked along a new dim 0), when the dataset can build that faster than
    /// fetching and stacking the samples one by one. For tensor items a batch has the same
    /// type as one sample, so it is returned as a `Self::Item`. `None` (the default) means the
    /// dataset has no such fast path. [`TensorDataset`] gathers a batch with one
    /// `index_select` per tensor; [`Subset`] forwards to its dataset.
    fn get_batch(&self, indices: &[usize]) -> Option<Result<Self::Item>> {
        let _ = indices;
        None
    }
}

impl<D: Dataset + ?Sized> Dataset for Arc<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, index: usize) -> Result<Self::Item> {
        (**self).get(index)
    }
    fn get_batch(&self, indices: &[usize]) -> Option<Result<Self::Item>> {
        (**self).get_batch(indices)
    }
}

impl<D: Dataset + ?Sized> Dataset for &D {
    type Item = D::Item;
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, index: usize) -> Result<Self::Item> {
        (**self).get(index)
    }
    fn get_batch(&self, indices: &[usize]) -> Option<Result<Self::Item>> {
        (**self).get_batch(indices)
    }
}

/// A dataset read as a stream (PyTorch's `IterableDataset`): each call to `iter` starts a
/// new pass over the samples. Batch one with [`crate::IterableDataLoader`].
pub trait IterableDataset: Send + Sync {
    /// One sample.
    type Item: Send + 'static;

    /// A fresh pass over the samples (`__iter__`); an `Err` item reports a sample that could
    /// not be read.
    fn iter(&self) -> Box<dyn Iterator<Item = Result<Self::Item>> + Send + '_>;
}

/// The tensors a [`TensorDataset`] indexes: one [`Tensor`], a tuple of up to four, or a
/// `Vec<Tensor>`. A sample (and a default-collated batch) has the same type.
pub trait Tensors: Clone + Send + Sync + 'static {
    /// The tensors, in order.
    fn tensors(&self) -> Vec<&Tensor>;
    /// The same structure with `f` applied to each tensor, in order.
    fn try_map(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self>;
}

impl Tensors for Tensor {
    fn tensors(&self) -> Vec<&Tensor> {
        vec![self]
    }
    fn try_map(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        f(self)
    }
}

impl Tensors for Vec<Tensor> {
    fn tensors(&self) -> Vec<&Tensor> {
        self.iter().collect()
    }
    fn try_map(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        self.iter().map(f).collect()
    }
}

macro_rules! tensors_tuple {
    ($($name:ident),+) => {
        impl Tensors for ($(tensors_tuple!(@ty $name),)+) {
            fn tensors(&self) -> Vec<&Tensor> {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                vec![$($name),+]
            }
            fn try_map(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                Ok(($(f($name)?,)+))
            }
        }
    };
    (@ty $name:ident) => { Tensor };
}
tensors_tuple!(A);
tensors_tuple!(A, B);
tensors_tuple!(A, B, C);
tensors_tuple!(A, B, C, D);

/// Samples are slices of tensors along their first dimension (PyTorch's `TensorDataset`):
/// sample `i` of `TensorDataset::new((x, y))?` is `(x[i], y[i])`.
///
/// ```
/// use kiln_data::{Dataset, TensorDataset};
/// use kiln_core::{DType, Tensor};
/// let x = Tensor::arange(0.0, 6.0, 1.0, DType::F32)?.reshape(&[3, 2])?;
/// let y = Tensor::from([10i64, 11, 12]);
/// let ds = TensorDataset::new((x, y))?;
/// let (xi, yi) = ds.get(1)?;
/// assert_eq!(xi.to_vec::<f32>()?, [2.0, 3.0]);
/// assert_eq!(yi.item::<i64>()?, 11);
/// # Ok::<(), kiln_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TensorDataset<T: Tensors> {
    tensors: T,
    len: usize,
}

impl<T: Tensors> TensorDataset<T> {
    /// Checks that every tensor has at least one dimension and that all agree on the first.
    pub fn new(tensors: T) -> Result<Self> {
        let ts = tensors.tensors();
        let Some(first) = ts.first() else {
            return Err(Error::value(
                "TensorDataset",
                "expected at least one tensor, but got none",
            ));
        };
        for t in &ts {
            if t.dim() == 0 {
                return Err(Error::shape(
                    "TensorDataset",
                    "Size mismatch between tensors: every tensor needs a first dimension, but got a 0-dim tensor",
                ));
            }
        }
        let len = first.shape()[0];
        if ts.iter().any(|t| t.shape()[0] != len) {
            let shapes: Vec<_> = ts.iter().map(|t| t.shape().to_vec()).collect();
            return Err(Error::shape(
                "TensorDataset",
                format!(
                    "Size mismatch between tensors: first dimensions differ in shapes {shapes:?}"
                ),
            ));
        }
        Ok(TensorDataset { tensors, len })
    }

    /// The tensors the dataset indexes.
    pub fn tensors(&self) -> &T {
        &self.tensors
    }
}

fn out_of_range(what: &str, index: usize, len: usize) -> Error {
    Error::index(
        what,
        format!("index {index} is out of bounds for dimension 0 with size {len}"),
    )
}

impl<T: Tensors> Dataset for TensorDataset<T> {
    type Item = T;

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, index: usize) -> Result<T> {
        if index >= self.len {
            return Err(out_of_range("TensorDataset", index, self.len));
        }
        self.tensors.try_map(&mut |t| t.select(0, index as i64))
    }

    /// One `index_select` along dim 0 per tensor.
    fn get_batch(&self, indices: &[usize]) -> Option<Result<T>> {
        Some((|| {
            let mut idx = Vec::with_capacity(indices.len());
            for &i in indices {
                if i >= self.len {
                    return Err(out_of_range("TensorDataset", i, self.len));
                }
                idx.push(i as i64);
            }
            let index = Tensor::from_vec(idx, &[indices.len()])?;
            // One index tensor per device, made on first use.
            let mut on_device: Vec<Tensor> = vec![index];
            self.tensors.try_map(&mut |t| {
                let index = match on_device.iter().find(|i| i.device() == t.device()) {
                    Some(i) => i.clone(),
                    None => {
                        let i = on_device[0].to_device(t.device())?;
                        on_device.push(i.clone());
                        i
                    }
                };
                t.index_select(0, &index)
            })
        })())
    }
}

/// The samples of `dataset` at `indices`, in that order (PyTorch's `Subset`).
#[derive(Debug)]
pub struct Subset<D: ?Sized> {
    dataset: Arc<D>,
    indices: Vec<usize>,
}

impl<D: ?Sized> Clone for Subset<D> {
    fn clone(&self) -> Self {
        Subset {
            dataset: Arc::clone(&self.dataset),
            indices: self.indices.clone(),
        }
    }
}

impl<D: Dataset + ?Sized> Subset<D> {
    /// Checks every index against `dataset.len()`. To share a dataset between subsets,
    /// pass an `Arc` of it (an `Arc<D>` is a dataset too).
    pub fn new(dataset: D, indices: Vec<usize>) -> Result<Self>
    where
        D: Sized,
    {
        let dataset = Arc::new(dataset);
        let n = dataset.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= n) {
            return Err(Error::index(
                "Subset",
                format!("index {bad} is out of range for a dataset of length {n}"),
            ));
        }
        Ok(Subset { dataset, indices })
    }

    /// The indices into the underlying dataset.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// The underlying dataset.
    pub fn dataset(&self) -> &Arc<D> {
        &self.dataset
    }
}

impl<D: Dataset + ?Sized> Dataset for Subset<D> {
    type Item = D::Item;

    fn len(&self) -> usize {
        self.indices.len()
    }

    fn get(&self, index: usize) -> Result<D::Item> {
        match self.indices.get(index) {
            Some(&i) => self.dataset.get(i),
            None => Err(out_of_range("Subset", index, self.indices.len())),
        }
    }

    fn get_batch(&self, indices: &[usize]) -> Option<Result<D::Item>> {
        let mut mapped = Vec::with_capacity(indices.len());
        for &i in indices {
            match self.indices.get(i) {
                Some(&j) => mapped.push(j),
                None => return Some(Err(out_of_range("Subset", i, self.indices.len()))),
            }
        }
        self.dataset.get_batch(&mapped)
    }
}

/// The lengths [`random_split`] cuts a dataset into: counts that add up to its length, or
/// fractions that add up to 1.
#[derive(Clone, Debug, PartialEq)]
pub enum Lengths {
    Counts(Vec<usize>),
    Fractions(Vec<f64>),
}

impl From<Vec<usize>> for Lengths {
    fn from(v: Vec<usize>) -> Self {
        Lengths::Counts(v)
    }
}
impl From<&[usize]> for Lengths {
    fn from(v: &[usize]) -> Self {
        Lengths::Counts(v.to_vec())
    }
}
impl<const N: usize> From<[usize; N]> for Lengths {
    fn from(v: [usize; N]) -> Self {
        Lengths::Counts(v.to_vec())
    }
}
impl From<Vec<f64>> for Lengths {
    fn from(v: Vec<f64>) -> Self {
        Lengths::Fractions(v)
    }
}
impl From<&[f64]> for Lengths {
    fn from(v: &[f64]) -> Self {
        Lengths::Fractions(v.to_vec())
    }
}
impl<const N: usize> From<[f64; N]> for Lengths {
    fn from(v: [f64; N]) -> Self {
        Lengths::Fractions(v.to_vec())
    }
}

/// Splits `dataset` into non-overlapping random [`Subset`]s of the given lengths (PyTorch's
/// `random_split`). Fractions are turned into counts as PyTorch does: `floor(n * f)` each,
/// then the remainder handed out one by one, round-robin from the first subset. The
/// permutation comes from `generator`, so a seed gives the same split.
///
/// ```
/// use kiln_data::{random_split, Dataset, TensorDataset};
/// let ds = TensorDataset::new(kiln_core::Tensor::zeros(&[10, 2], kiln_core::DType::F32)?)?;
/// let parts = random_split(ds, [0.7, 0.3], &mut kiln_core::Generator::new(42))?;
/// assert_eq!((parts[0].len(), parts[1].len()), (7, 3));
/// # Ok::<(), kiln_core::Error>(())
/// ```
pub fn random_split<D: Dataset>(
    dataset: D,
    lengths: impl Into<Lengths>,
    generator: &mut Generator,
) -> Result<Vec<Subset<D>>> {
    let dataset = Arc::new(dataset);
    let n = dataset.len();
    let counts = match lengths.into() {
        Lengths::Counts(c) => c,
        Lengths::Fractions(f) => {
            let sum: f64 = f.iter().sum();
            if (sum - 1.0).abs() > 1e-9 || f.iter().any(|x| !(0.0..=1.0).contains(x)) {
                return Err(Error::value(
                    "random_split",
                    format!("fractions must be in [0, 1] and sum up to 1, but got {f:?}"),
                ));
            }
            let mut c: Vec<usize> = f.iter().map(|x| (n as f64 * x).floor() as usize).collect();
            let remainder = n - c.iter().sum::<usize>().min(n);
            let k = c.len();
            for i in 0..remainder {
                c[i % k] += 1;
            }
            c
        }
    };
    if counts.iter().sum::<usize>() != n {
        return Err(Error::value(
            "random_split",
            format!(
                "Sum of input lengths does not equal the length of the input dataset! (lengths {counts:?}, dataset length {n})"
            ),
        ));
    }
    let perm = randperm(n, generator)?;
    let mut out = Vec::with_capacity(counts.len());
    let mut offset = 0;
    for c in counts {
        out.push(Subset {
            dataset: Arc::clone(&dataset),
            indices: perm[offset..offset + c].to_vec(),
        });
        offset += c;
    }
    Ok(out)
}

/// A uniformly random permutation of `0..n` drawn from `generator` (one draw of `n` 64-bit
/// integers, then Fisher–Yates with a 64x64 -> 128-bit multiply to pick each partner).
pub(crate) fn randperm(n: usize, generator: &mut Generator) -> Result<Vec<usize>> {
    let mut perm: Vec<usize> = (0..n).collect();
    if n < 2 {
        return Ok(perm);
    }
    let words =
        Tensor::randint_with(i64::MIN, i64::MAX, [n], DType::I64, generator)?.to_vec::<i64>()?;
    for i in (1..n).rev() {
        let x = words[i] as u64;
        let j = ((u128::from(x) * (i as u128 + 1)) >> 64) as usize;
        perm.swap(i, j);
    }
    Ok(perm)
}
