//! Samplers: the order in which a [`DataLoader`](crate::DataLoader) visits a dataset's
//! indices each epoch (PyTorch's `torch.utils.data.Sampler` and its subclasses).
//!
//! A loader without a sampler of its own uses a [`SequentialSampler`], or a
//! [`RandomSampler`] with `shuffle(true)`; give it a [`DistributedSampler`] to train on one
//! shard of the data per process.

use crate::dataset::randperm;
use kiln_core::{DType, Error, Generator, Result, Tensor};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The order of one epoch's sample indices: a [`DataLoader`](crate::DataLoader) asks for it
/// once per epoch and cuts it into batches.
///
/// `Send + Sync` because the loader shares its sampler with the code that drives the epochs
/// (see [`Sampler::set_epoch`]).
pub trait Sampler: Send + Sync {
    /// The indices of the next epoch, in the order the loader visits them.
    fn indices(&self) -> Result<Vec<usize>>;

    /// How many indices an epoch has (`len(sampler)`); the loader's batch count follows
    /// from it.
    fn len(&self) -> usize;

    /// Whether an epoch has no indices.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tells a sampler whose order depends on the epoch (a shuffling
    /// [`DistributedSampler`]) which epoch comes next; the others ignore it. On the trait so
    /// that `loader.sampler().set_epoch(e)` works as PyTorch's
    /// `loader.sampler.set_epoch(e)` does.
    fn set_epoch(&self, epoch: u64) {
        let _ = epoch;
    }
}

/// `0, 1, …, len - 1` every epoch (PyTorch's `SequentialSampler`): a loader's order when it
/// neither shuffles nor has a sampler.
#[derive(Clone, Copy, Debug)]
pub struct SequentialSampler {
    len: usize,
}

impl SequentialSampler {
    /// The indices of a dataset of `len` samples, in order.
    pub fn new(len: usize) -> Self {
        SequentialSampler { len }
    }
}

impl Sampler for SequentialSampler {
    fn indices(&self) -> Result<Vec<usize>> {
        Ok((0..self.len).collect())
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// PyTorch's `RandomSampler` error for an empty dataset; a shuffling `DataLoader` raises it
/// as its own.
pub(crate) const NO_SAMPLES: &str =
    "num_samples should be a positive integer value, but got num_samples=0";

/// A new permutation of `0..len` every epoch (PyTorch's `RandomSampler` without
/// replacement): a loader's order with `shuffle(true)`.
///
/// With a generator, each epoch draws from it, so a seed gives the same sequence of epochs.
/// Without one, each epoch seeds a fresh generator from kiln's global generator, as PyTorch
/// does, so `kiln::manual_seed` makes runs repeatable.
#[derive(Debug)]
pub struct RandomSampler {
    len: usize,
    generator: Option<Mutex<Generator>>,
}

impl RandomSampler {
    /// Permutations of a dataset of `len` samples; PyTorch's error for an empty one (there is
    /// nothing to draw from).
    pub fn new(len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::value("RandomSampler", NO_SAMPLES));
        }
        Ok(RandomSampler {
            len,
            generator: None,
        })
    }

    /// Draws every epoch's permutation from `generator` instead of the global generator.
    pub fn generator(mut self, generator: Generator) -> Self {
        self.generator = Some(Mutex::new(generator));
        self
    }
}

impl Sampler for RandomSampler {
    fn indices(&self) -> Result<Vec<usize>> {
        match &self.generator {
            Some(g) => {
                let mut g = g.lock().unwrap_or_else(|e| e.into_inner());
                randperm(self.len, &mut g)
            }
            None => {
                let seed = Tensor::randint(i64::MIN, i64::MAX, (), DType::I64)?.item::<i64>()?;
                randperm(self.len, &mut Generator::new(seed as u64))
            }
        }
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// The share of a dataset that process `rank` of `num_replicas` trains on (PyTorch's
/// `torch.utils.data.distributed.DistributedSampler`).
///
/// Every epoch the indices `0..dataset_len` — permuted by a generator seeded with
/// `seed + epoch` when shuffling, the same permutation on every rank — are padded by
/// repeating their head until every rank gets the same count ([`num_samples`]), or with
/// `drop_last` cut to a multiple of `num_replicas`; rank `r` then takes every
/// `num_replicas`-th index starting at `r`. The ranks together see each sample once per
/// epoch, up to the padding.
///
/// Call [`set_epoch`](Self::set_epoch) before each epoch, or every epoch repeats the same
/// order. Clones share the epoch, so a clone kept outside the loader steers the one inside:
///
/// ```
/// use kiln_core::{DType, Tensor};
/// use kiln_data::{DataLoader, DistributedSampler, TensorDataset};
/// let y = Tensor::arange(0.0, 10.0, 1.0, DType::I64)?;
/// let (num_replicas, rank) = (4, 1);
/// let sampler = DistributedSampler::new(10, num_replicas, rank)?.shuffle(false);
/// let loader = DataLoader::builder(TensorDataset::new(y)?)
///     .batch_size(2)
///     .sampler(sampler.clone())
///     .build()?;
/// assert_eq!(loader.len(), 2); // 3 samples for this rank: 1, 5, 9
/// for epoch in 0..2 {
///     sampler.set_epoch(epoch);
///     let labels: Vec<Vec<i64>> = loader
///         .iter()
///         .map(|b| b?.to_vec::<i64>())
///         .collect::<kiln_core::Result<_>>()?;
///     assert_eq!(labels, [vec![1, 5], vec![9]]);
/// }
/// # Ok::<(), kiln_core::Error>(())
/// ```
///
/// kiln's permutation for a seed is its own (the one `DataLoader` shuffling draws), not
/// the one PyTorch's `randperm` gives for that seed; every other step is PyTorch's.
///
/// [`num_samples`]: Self::num_samples
#[derive(Clone, Debug)]
pub struct DistributedSampler {
    dataset_len: usize,
    num_replicas: usize,
    rank: usize,
    shuffle: bool,
    seed: u64,
    drop_last: bool,
    epoch: Arc<AtomicU64>,
}

impl DistributedSampler {
    /// The share of rank `rank` among `num_replicas` processes of a dataset of `dataset_len`
    /// samples, with PyTorch's defaults: shuffled, seed 0, padded rather than dropped.
    /// PyTorch's error unless `rank < num_replicas`.
    pub fn new(dataset_len: usize, num_replicas: usize, rank: usize) -> Result<Self> {
        if rank >= num_replicas {
            return Err(Error::value(
                "DistributedSampler",
                format!(
                    "Invalid rank {rank}, rank should be in the interval [0, {}]",
                    num_replicas as i128 - 1
                ),
            ));
        }
        Ok(DistributedSampler {
            dataset_len,
            num_replicas,
            rank,
            shuffle: true,
            seed: 0,
            drop_last: false,
            epoch: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Whether each epoch permutes the indices before they are shared out (default `true`).
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// The base of each epoch's seed, `seed + epoch`; it must be the same on every rank
    /// (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Whether to drop the tail that does not split evenly across the ranks instead of
    /// padding it with repeated samples (default `false`).
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// Sets the epoch the next [`Sampler::indices`] shuffles for; shared with every clone.
    pub fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Relaxed);
    }

    /// The epoch the next [`Sampler::indices`] shuffles for (0 until
    /// [`set_epoch`](Self::set_epoch)).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// The indices this rank gets per epoch: `ceil(dataset_len / num_replicas)`, or with
    /// `drop_last` and a remainder, `ceil((dataset_len - num_replicas) / num_replicas)`.
    pub fn num_samples(&self) -> usize {
        if self.drop_last && !self.dataset_len.is_multiple_of(self.num_replicas) {
            // PyTorch's ceil((len - R) / R), which is floor(len / R) when R does not divide
            // len (and 0 for len < R, where len - R is negative).
            self.dataset_len / self.num_replicas
        } else {
            self.dataset_len.div_ceil(self.num_replicas)
        }
    }

    /// The indices of all ranks together per epoch: `num_samples * num_replicas`.
    pub fn total_size(&self) -> usize {
        self.num_samples() * self.num_replicas
    }

    /// The number of processes the dataset is shared among.
    pub fn num_replicas(&self) -> usize {
        self.num_replicas
    }

    /// This process's share, in `0..num_replicas`.
    pub fn rank(&self) -> usize {
        self.rank
    }
}

impl Sampler for DistributedSampler {
    fn indices(&self) -> Result<Vec<usize>> {
        let mut indices = if self.shuffle {
            let seed = self.seed.wrapping_add(self.epoch());
            randperm(self.dataset_len, &mut Generator::new(seed))?
        } else {
            (0..self.dataset_len).collect()
        };
        let total_size = self.total_size();
        if self.drop_last {
            indices.truncate(total_size);
        } else {
            // Pad with the head of the list, wrapping round as often as it takes.
            let padding = total_size - indices.len();
            let head: Vec<usize> = indices.iter().copied().cycle().take(padding).collect();
            indices.extend(head);
        }
        Ok(indices
            .into_iter()
            .skip(self.rank)
            .step_by(self.num_replicas)
            .collect())
    }

    fn len(&self) -> usize {
        self.num_samples()
    }

    fn set_epoch(&self, epoch: u64) {
        DistributedSampler::set_epoch(self, epoch);
    }
}
