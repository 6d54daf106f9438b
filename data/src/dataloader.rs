//! `DataLoader`: batches of a dataset, in order or shuffled, built on the calling thread or
//! by worker threads that prefetch ahead (PyTorch's `torch.utils.data.DataLoader`).

use crate::collate::{CollateFn, DefaultCollate};
use crate::dataset::{Dataset, IterableDataset};
use crate::sampler::{RandomSampler, Sampler, SequentialSampler, NO_SAMPLES};
use kiln_core::{Error, Generator, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Batches of a map-style [`Dataset`].
///
/// ```
/// use kiln_data::{DataLoader, TensorDataset};
/// use kiln_core::{DType, Tensor};
/// let x = Tensor::arange(0.0, 10.0, 1.0, DType::F32)?.reshape(&[5, 2])?;
/// let y = Tensor::arange(0.0, 5.0, 1.0, DType::I64)?;
/// let loader = DataLoader::builder(TensorDataset::new((x, y))?)
///     .batch_size(2)
///     .shuffle(true)
///     .generator(kiln_core::Generator::new(0))
///     .build()?;
/// assert_eq!(loader.len(), 3); // 2 + 2 + 1
/// for batch in &loader {
///     let (xb, yb) = batch?;
///     assert_eq!(xb.shape()[1], 2);
///     assert_eq!(xb.shape()[0], yb.shape()[0]);
/// }
/// # Ok::<(), kiln_core::Error>(())
/// ```
///
/// Each call to [`DataLoader::iter`] (each `for` loop) is one epoch, in the order its
/// [`Sampler`] gives: with `shuffle` every epoch draws a new order from the loader's
/// generator, so the same seed gives the same sequence of epochs. Without a generator each
/// epoch seeds a fresh one from kiln's global generator (as PyTorch's `RandomSampler`), so
/// `kiln::manual_seed` makes runs repeatable. A sampler of one's own, such as a
/// [`DistributedSampler`](crate::DistributedSampler), takes the place of both.
///
/// With `num_workers > 0`, batch `b` is built by worker thread `b % num_workers`, each worker
/// running at most `prefetch_factor` batches ahead of the consumer; batches still arrive in
/// order. Dropping the iterator mid-epoch stops the workers and joins them, except one still
/// inside a `get` after a short grace period: that thread is detached and its batch
/// discarded, so the drop returns promptly. An error while
/// building a batch (a failing `get`, a mismatched `collate`, even a panic in user code) is
/// that batch's `Err`; later batches still come.
pub struct DataLoader<D, C = DefaultCollate> {
    dataset: Arc<D>,
    collate: Arc<C>,
    sampler: Arc<dyn Sampler>,
    batch_size: usize,
    drop_last: bool,
    num_workers: usize,
    prefetch_factor: usize,
}

/// Options for a [`DataLoader`], with PyTorch's defaults: `batch_size` 1, no shuffle, keep the
/// last partial batch, no workers, `prefetch_factor` 2 (allowed only with workers).
pub struct DataLoaderBuilder<D, C = DefaultCollate> {
    dataset: Arc<D>,
    collate: C,
    batch_size: usize,
    shuffle: bool,
    sampler: Option<Arc<dyn Sampler>>,
    drop_last: bool,
    num_workers: usize,
    prefetch_factor: Option<usize>,
    generator: Option<Generator>,
}

impl<D: Dataset + 'static> DataLoader<D, DefaultCollate> {
    /// A loader with the default options (batches of one sample, in order).
    pub fn new(dataset: D) -> Self {
        DataLoader {
            sampler: Arc::new(SequentialSampler::new(dataset.len())),
            dataset: Arc::new(dataset),
            collate: Arc::new(DefaultCollate),
            batch_size: 1,
            drop_last: false,
            num_workers: 0,
            prefetch_factor: 2,
        }
    }

    /// Options to set before [`DataLoaderBuilder::build`].
    pub fn builder(dataset: D) -> DataLoaderBuilder<D, DefaultCollate> {
        DataLoaderBuilder {
            dataset: Arc::new(dataset),
            collate: DefaultCollate,
            batch_size: 1,
            shuffle: false,
            sampler: None,
            drop_last: false,
            num_workers: 0,
            prefetch_factor: None,
            generator: None,
        }
    }
}

impl<D: Dataset + 'static, C> DataLoaderBuilder<D, C> {
    /// Samples per batch (default 1).
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self
    }
    /// Whether each epoch visits the samples in a new random order (default `false`).
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }
    /// Takes each epoch's order from `sampler` (PyTorch's `sampler=`), for example a
    /// [`DistributedSampler`](crate::DistributedSampler) to load one process's share.
    /// `build` refuses it together with `shuffle(true)`, as PyTorch does; the loader's
    /// `generator` then goes unused.
    pub fn sampler(mut self, sampler: impl Sampler + 'static) -> Self {
        self.sampler = Some(Arc::new(sampler));
        self
    }
    /// Whether to skip the last batch when it is smaller than `batch_size`.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }
    /// Worker threads building batches in the background (default 0: built on the
    /// calling thread as they are asked for).
    pub fn num_workers(mut self, num_workers: usize) -> Self {
        self.num_workers = num_workers;
        self
    }
    /// Batches each worker builds ahead (default 2; only with `num_workers > 0`).
    pub fn prefetch_factor(mut self, prefetch_factor: usize) -> Self {
        self.prefetch_factor = Some(prefetch_factor);
        self
    }
    /// The generator `shuffle` draws each epoch's order from.
    pub fn generator(mut self, generator: Generator) -> Self {
        self.generator = Some(generator);
        self
    }
    /// Shorthand for `generator(Generator::new(seed))`.
    pub fn seed(self, seed: u64) -> Self {
        self.generator(Generator::new(seed))
    }
    /// Builds batches with `collate` instead of [`crate::default_collate`]: any
    /// `Fn(Vec<Item>) -> Result<Batch>` (PyTorch's `collate_fn`).
    pub fn collate_fn<C2: CollateFn<D::Item>>(self, collate: C2) -> DataLoaderBuilder<D, C2> {
        DataLoaderBuilder {
            dataset: self.dataset,
            collate,
            batch_size: self.batch_size,
            shuffle: self.shuffle,
            sampler: self.sampler,
            drop_last: self.drop_last,
            num_workers: self.num_workers,
            prefetch_factor: self.prefetch_factor,
            generator: self.generator,
        }
    }

    /// Checks the options as PyTorch does.
    pub fn build(self) -> Result<DataLoader<D, C>>
    where
        C: CollateFn<D::Item>,
    {
        if self.batch_size == 0 {
            return Err(Error::value(
                "DataLoader",
                "batch_size should be a positive integer value, but got batch_size=0",
            ));
        }
        if self.num_workers == 0 && self.prefetch_factor.is_some() {
            return Err(Error::value(
                "DataLoader",
                "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.",
            ));
        }
        if self.prefetch_factor == Some(0) {
            return Err(Error::value(
                "DataLoader",
                "prefetch_factor should be a positive integer value, but got prefetch_factor=0",
            ));
        }
        let sampler: Arc<dyn Sampler> = match (self.sampler, self.shuffle) {
            (Some(_), true) => {
                return Err(Error::value(
                    "DataLoader",
                    "sampler option is mutually exclusive with shuffle",
                ))
            }
            (Some(sampler), false) => sampler,
            // PyTorch's RandomSampler rejects an empty dataset when the loader is built.
            (None, true) => {
                let random = RandomSampler::new(self.dataset.len())
                    .map_err(|_| Error::value("DataLoader", NO_SAMPLES))?;
                match self.generator {
                    Some(g) => Arc::new(random.generator(g)),
                    None => Arc::new(random),
                }
            }
            (None, false) => Arc::new(SequentialSampler::new(self.dataset.len())),
        };
        Ok(DataLoader {
            dataset: self.dataset,
            collate: Arc::new(self.collate),
            sampler,
            batch_size: self.batch_size,
            drop_last: self.drop_last,
            num_workers: self.num_workers,
            prefetch_factor: self.prefetch_factor.unwrap_or(2),
        })
    }
}

/// One epoch's order, cut into batches.
struct Batches {
    order: Vec<usize>,
    batch_size: usize,
    count: usize,
}

impl Batches {
    fn get(&self, b: usize) -> &[usize] {
        let start = b * self.batch_size;
        let end = (start + self.batch_size).min(self.order.len());
        &self.order[start..end]
    }
}

fn batch_count(n: usize, batch_size: usize, drop_last: bool) -> usize {
    if drop_last {
        n / batch_size
    } else {
        n.div_ceil(batch_size)
    }
}

impl<D: Dataset + 'static, C: CollateFn<D::Item>> DataLoader<D, C> {
    /// The number of batches in an epoch (PyTorch's `len(loader)`).
    pub fn len(&self) -> usize {
        batch_count(self.sampler.len(), self.batch_size, self.drop_last)
    }

    /// Whether an epoch has no batches.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dataset.
    pub fn dataset(&self) -> &Arc<D> {
        &self.dataset
    }

    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Where each epoch's order comes from (PyTorch's `loader.sampler`): the sampler given
    /// to the builder, else a [`SequentialSampler`] or, with `shuffle`, a [`RandomSampler`].
    /// `loader.sampler().set_epoch(e)` steers a [`DistributedSampler`](crate::DistributedSampler)
    /// the loader owns.
    pub fn sampler(&self) -> &Arc<dyn Sampler> {
        &self.sampler
    }

    /// One epoch of batches.
    pub fn iter(&self) -> DataLoaderIter<D, C> {
        let order = match self.sampler.indices() {
            Ok(o) => o,
            Err(e) => {
                return DataLoaderIter {
                    state: State::Failed(Some(e)),
                    next: 0,
                    count: 1,
                }
            }
        };
        let count = batch_count(order.len(), self.batch_size, self.drop_last);
        let batches = Arc::new(Batches {
            order,
            batch_size: self.batch_size,
            count,
        });
        let state = if self.num_workers == 0 {
            State::Inline {
                dataset: Arc::clone(&self.dataset),
                collate: Arc::clone(&self.collate),
                batches,
            }
        } else {
            let workers = self.num_workers.min(count.max(1));
            let stop = Arc::new(AtomicBool::new(false));
            let finished = Arc::new((Mutex::new(0usize), Condvar::new()));
            let mut receivers = Vec::with_capacity(workers);
            let mut handles = Vec::with_capacity(workers);
            for w in 0..workers {
                let (tx, rx) = sync_channel(self.prefetch_factor - 1);
                let dataset = Arc::clone(&self.dataset);
                let collate = Arc::clone(&self.collate);
                let batches = Arc::clone(&batches);
                let worker_stop = Arc::clone(&stop);
                let done = Finished(Arc::clone(&finished));
                let spawned = std::thread::Builder::new()
                    .name(format!("kiln-data-worker-{w}"))
                    .spawn(move || {
                        for b in (w..batches.count).step_by(workers) {
                            if worker_stop.load(Ordering::Relaxed) {
                                break;
                            }
                            let r = build_batch(&*dataset, &*collate, batches.get(b), Some(w));
                            // After a shutdown the receiver is gone: the batch is dropped.
                            if tx.send(r).is_err() {
                                break;
                            }
                        }
                        // Let go of the dataset before saying so.
                        drop((dataset, collate, batches, tx));
                        drop(done);
                    });
                match spawned {
                    Ok(h) => {
                        receivers.push(rx);
                        handles.push(h);
                    }
                    Err(e) => {
                        let mut started = Workers {
                            receivers,
                            handles,
                            stop,
                            finished,
                        };
                        started.shut_down();
                        return DataLoaderIter {
                            state: State::Failed(Some(Error::value(
                                "DataLoader",
                                format!("could not start worker thread {w}: {e}"),
                            ))),
                            next: 0,
                            count: 1,
                        };
                    }
                }
            }
            State::Workers(Workers {
                receivers,
                handles,
                stop,
                finished,
            })
        };
        DataLoaderIter {
            state,
            next: 0,
            count,
        }
    }
}

/// Fetches and collates one batch, turning a panic in user code into an `Err`.
fn build_batch<D: Dataset + ?Sized, C: CollateFn<D::Item>>(
    dataset: &D,
    collate: &C,
    indices: &[usize],
    worker: Option<usize>,
) -> Result<C::Batch> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        collate.fetch(dataset, indices)
    }))
    .unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with a non-string payload".into());
        let place = match worker {
            Some(w) => format!("DataLoader worker {w}"),
            None => "the DataLoader".to_string(),
        };
        Err(Error::value(
            "DataLoader",
            format!("Caught a panic in {place}: {msg}"),
        ))
    })
}

impl<D: Dataset + 'static, C: CollateFn<D::Item>> IntoIterator for &DataLoader<D, C> {
    type Item = Result<C::Batch>;
    type IntoIter = DataLoaderIter<D, C>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// How long a shutdown waits for workers to finish the batch they are building before
/// leaving them behind (PyTorch waits up to its `MP_STATUS_CHECK_INTERVAL` per worker and
/// then terminates it; a thread cannot be terminated).
const SHUTDOWN_GRACE: Duration = Duration::from_millis(250);

/// Counts finished workers; a worker's guard adds one when the worker ends, even by a panic.
struct Finished(Arc<(Mutex<usize>, Condvar)>);

impl Drop for Finished {
    fn drop(&mut self) {
        let (count, cv) = &*self.0;
        *count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        cv.notify_all();
    }
}

struct Workers<B> {
    receivers: Vec<Receiver<Result<B>>>,
    handles: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    finished: Arc<(Mutex<usize>, Condvar)>,
}

impl<B> Workers<B> {
    /// Tells the workers to stop and unblocks any waiting to send (by dropping the
    /// receivers); waits up to [`SHUTDOWN_GRACE`] for them to finish the batch they are
    /// building, joins those that did, and detaches the rest: a worker stuck in a slow or
    /// never-returning `get` is left to finish on its own (it then finds the channel closed,
    /// drops its batch and exits). Returns promptly either way.
    fn shut_down(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.receivers.clear();
        if self.handles.is_empty() {
            return;
        }
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        let (count, cv) = &*self.finished;
        let mut done = count.lock().unwrap_or_else(|e| e.into_inner());
        while *done < self.handles.len() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            done = cv
                .wait_timeout(done, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let all_done = *done >= self.handles.len();
        drop(done);
        for h in self.handles.drain(..) {
            if all_done || h.is_finished() {
                // Workers catch panics from user code, so a join error cannot carry one.
                let _ = h.join();
            } else {
                // Finished its work or not, it holds nothing the caller waits on; dropping
                // the handle detaches it.
                drop(h);
            }
        }
    }
}

enum State<D, C: CollateFn<<D as Dataset>::Item>>
where
    D: Dataset,
{
    Inline {
        dataset: Arc<D>,
        collate: Arc<C>,
        batches: Arc<Batches>,
    },
    Workers(Workers<C::Batch>),
    Failed(Option<Error>),
}

/// One epoch of a [`DataLoader`]: yields `Result<Batch>` in order.
pub struct DataLoaderIter<D: Dataset, C: CollateFn<D::Item>> {
    state: State<D, C>,
    next: usize,
    count: usize,
}

impl<D: Dataset, C: CollateFn<D::Item>> Iterator for DataLoaderIter<D, C> {
    type Item = Result<C::Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.count {
            if let State::Workers(w) = &mut self.state {
                w.shut_down();
            }
            return None;
        }
        let b = self.next;
        self.next += 1;
        match &mut self.state {
            State::Inline {
                dataset,
                collate,
                batches,
            } => Some(build_batch(&**dataset, &**collate, batches.get(b), None)),
            State::Workers(w) => {
                let k = w.receivers.len();
                match w.receivers[b % k].recv() {
                    Ok(r) => Some(r),
                    Err(_) => {
                        self.next = self.count;
                        Some(Err(Error::value(
                            "DataLoader",
                            format!("DataLoader worker {} exited unexpectedly", b % k),
                        )))
                    }
                }
            }
            State::Failed(e) => {
                self.next = self.count;
                e.take().map(Err)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.count - self.next;
        (left, Some(left))
    }
}

impl<D: Dataset, C: CollateFn<D::Item>> Drop for DataLoaderIter<D, C> {
    fn drop(&mut self) {
        if let State::Workers(w) = &mut self.state {
            w.shut_down();
        }
    }
}

/// Batches of an [`IterableDataset`], read in the dataset's order on the calling thread
/// (PyTorch's `DataLoader` over an `IterableDataset` with `num_workers=0`).
///
/// ```
/// use kiln_data::{IterableDataLoader, IterableDataset};
/// struct Count(i64);
/// impl IterableDataset for Count {
///     type Item = i64;
///     fn iter(&self) -> Box<dyn Iterator<Item = kiln_core::Result<i64>> + Send + '_> {
///         Box::new((0..self.0).map(Ok))
///     }
/// }
/// let loader = IterableDataLoader::new(Count(5)).batch_size(2)?;
/// let batches: Vec<_> = loader.iter().collect::<kiln_core::Result<_>>()?;
/// assert_eq!(batches.len(), 3);
/// assert_eq!(batches[2].to_vec::<i64>()?, [4]);
/// # Ok::<(), kiln_core::Error>(())
/// ```
pub struct IterableDataLoader<D, C = DefaultCollate> {
    dataset: D,
    collate: C,
    batch_size: usize,
    drop_last: bool,
}

impl<D: IterableDataset> IterableDataLoader<D, DefaultCollate> {
    /// Batches of one sample, collated with [`crate::default_collate`].
    pub fn new(dataset: D) -> Self {
        IterableDataLoader {
            dataset,
            collate: DefaultCollate,
            batch_size: 1,
            drop_last: false,
        }
    }
}

impl<D: IterableDataset, C> IterableDataLoader<D, C> {
    /// Samples per batch (positive).
    pub fn batch_size(mut self, batch_size: usize) -> Result<Self> {
        if batch_size == 0 {
            return Err(Error::value(
                "DataLoader",
                "batch_size should be a positive integer value, but got batch_size=0",
            ));
        }
        self.batch_size = batch_size;
        Ok(self)
    }
    /// Whether to skip a last batch smaller than `batch_size`.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }
    /// Builds batches with `collate` (PyTorch's `collate_fn`).
    pub fn collate_fn<C2: CollateFn<D::Item>>(self, collate: C2) -> IterableDataLoader<D, C2> {
        IterableDataLoader {
            dataset: self.dataset,
            collate,
            batch_size: self.batch_size,
            drop_last: self.drop_last,
        }
    }

    /// One pass over the dataset, in batches. A sample's `Err` becomes its batch's `Err`
    /// (the rest of that batch is skipped).
    pub fn iter(&self) -> impl Iterator<Item = Result<C::Batch>> + '_
    where
        C: CollateFn<D::Item>,
    {
        let mut items = self.dataset.iter();
        let mut done = false;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            let mut batch = Vec::with_capacity(self.batch_size);
            while batch.len() < self.batch_size {
                match items.next() {
                    Some(Ok(x)) => batch.push(x),
                    Some(Err(e)) => {
                        // Skip what is left of this batch so the next one starts aligned.
                        for _ in batch.len() + 1..self.batch_size {
                            if items.next().is_none() {
                                done = true;
                                break;
                            }
                        }
                        return Some(Err(e));
                    }
                    None => {
                        done = true;
                        break;
                    }
                }
            }
            if batch.is_empty() || (self.drop_last && batch.len() < self.batch_size) {
                return None;
            }
            Some(self.collate.collate(batch))
        })
    }
}
