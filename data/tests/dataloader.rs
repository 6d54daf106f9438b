//! DataLoader: batch contents and order against hand-computed values, shuffling, drop_last,
//! worker threads (same batches as without, bounded prefetch, clean early drop) and errors.

use kiln_core::{DType, Error, Generator, Result, Tensor};
use kiln_data::{
    random_split, DataLoader, Dataset, IterableDataLoader, IterableDataset, TensorDataset,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type R = Result<()>;

/// x[i] = [2i, 2i + 1] (float32), y[i] = i (int64).
fn xy(n: usize) -> Result<TensorDataset<(Tensor, Tensor)>> {
    let x = Tensor::arange(0.0, (2 * n) as f64, 1.0, DType::F32)?.reshape([n as i64, 2])?;
    let y = Tensor::arange(0.0, n as f64, 1.0, DType::I64)?;
    TensorDataset::new((x, y))
}

/// The labels of every batch of one epoch.
fn epoch<D, C>(loader: &DataLoader<D, C>) -> Result<Vec<Vec<i64>>>
where
    D: Dataset + 'static,
    C: kiln_data::CollateFn<D::Item, Batch = (Tensor, Tensor)>,
{
    let mut out = Vec::new();
    for batch in loader {
        let (x, y) = batch?;
        let labels = y.to_vec::<i64>()?;
        // Every row of x must be the row of its label: [2y, 2y + 1].
        let expect: Vec<f32> = labels
            .iter()
            .flat_map(|&l| [2.0 * l as f32, 2.0 * l as f32 + 1.0])
            .collect();
        assert_eq!(x.shape(), &[labels.len(), 2]);
        assert_eq!(x.to_vec::<f32>()?, expect);
        out.push(labels);
    }
    Ok(out)
}

#[test]
fn batches_in_order() -> R {
    let loader = DataLoader::builder(xy(10)?).batch_size(3).build()?;
    assert_eq!(loader.len(), 4);
    assert_eq!(
        epoch(&loader)?,
        [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8], vec![9]]
    );
    // Defaults: batch_size 1, in order.
    let loader = DataLoader::new(xy(3)?);
    assert_eq!(loader.len(), 3);
    let (x, y) = loader.iter().next().unwrap()?;
    assert_eq!(x.shape(), &[1, 2]);
    assert_eq!(y.to_vec::<i64>()?, [0]);
    Ok(())
}

#[test]
fn drop_last() -> R {
    let loader = DataLoader::builder(xy(10)?)
        .batch_size(3)
        .drop_last(true)
        .build()?;
    assert_eq!(loader.len(), 3);
    assert_eq!(
        epoch(&loader)?,
        [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8]]
    );
    let loader = DataLoader::builder(xy(2)?)
        .batch_size(3)
        .drop_last(true)
        .build()?;
    assert!(loader.is_empty());
    assert_eq!(loader.iter().count(), 0);
    Ok(())
}

fn is_permutation(batches: &[Vec<i64>], n: usize) -> bool {
    let mut all: Vec<i64> = batches.concat();
    all.sort();
    all == (0..n as i64).collect::<Vec<_>>()
}

#[test]
fn shuffle_is_seeded_and_reshuffles_each_epoch() -> R {
    let make = |seed| {
        DataLoader::builder(xy(50).unwrap())
            .batch_size(8)
            .shuffle(true)
            .generator(Generator::new(seed))
            .build()
    };
    let (a, b, c) = (make(7)?, make(7)?, make(8)?);
    let a1 = epoch(&a)?;
    let a2 = epoch(&a)?;
    assert_eq!(a1.len(), 7);
    assert_eq!(a1.last().unwrap().len(), 2);
    assert!(is_permutation(&a1, 50) && is_permutation(&a2, 50));
    assert_ne!(a1, a2, "each epoch draws a new order");
    assert_ne!(a1.concat(), (0..50).collect::<Vec<i64>>());
    // Same seed: the same sequence of epochs.
    assert_eq!(epoch(&b)?, a1);
    assert_eq!(epoch(&b)?, a2);
    assert_ne!(epoch(&c)?, a1);
    // `seed(s)` is `generator(Generator::new(s))`.
    let d = DataLoader::builder(xy(50)?)
        .batch_size(8)
        .shuffle(true)
        .seed(7)
        .build()?;
    assert_eq!(epoch(&d)?, a1);
    Ok(())
}

#[test]
fn shuffle_without_generator_follows_manual_seed() -> R {
    // The only test in this binary that touches the global generator.
    let loader = DataLoader::builder(xy(30)?)
        .batch_size(4)
        .shuffle(true)
        .build()?;
    kiln_core::manual_seed(123);
    let first = epoch(&loader)?;
    let second = epoch(&loader)?;
    kiln_core::manual_seed(123);
    assert_eq!(epoch(&loader)?, first);
    assert_ne!(first, second);
    assert!(is_permutation(&first, 30));
    Ok(())
}

#[test]
fn workers_give_the_same_batches() -> R {
    let reference = epoch(
        &DataLoader::builder(xy(37)?)
            .batch_size(5)
            .shuffle(true)
            .seed(11)
            .build()?,
    )?;
    for (workers, prefetch) in [(1, 1), (2, 2), (3, 1), (4, 3), (16, 2)] {
        let loader = DataLoader::builder(xy(37)?)
            .batch_size(5)
            .shuffle(true)
            .seed(11)
            .num_workers(workers)
            .prefetch_factor(prefetch)
            .build()?;
        assert_eq!(epoch(&loader)?, reference, "{workers} workers");
    }
    Ok(())
}

/// Items are `i` as a 1-element tensor; counts `get` calls; optionally slow, failing or
/// panicking at one index. No `get_batch`, so every item goes through `get`.
struct Probe {
    n: usize,
    calls: Arc<AtomicUsize>,
    delay: Duration,
    fail_at: Option<usize>,
    panic_at: Option<usize>,
}

impl Probe {
    fn new(n: usize) -> Self {
        Probe {
            n,
            calls: Arc::new(AtomicUsize::new(0)),
            delay: Duration::ZERO,
            fail_at: None,
            panic_at: None,
        }
    }
}

impl Dataset for Probe {
    type Item = Tensor;
    fn len(&self) -> usize {
        self.n
    }
    fn get(&self, index: usize) -> Result<Tensor> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.delay);
        if Some(index) == self.fail_at {
            return Err(Error::value("Probe", format!("cannot read sample {index}")));
        }
        if Some(index) == self.panic_at {
            panic!("sample {index} is cursed");
        }
        Tensor::from_vec(vec![index as i64], &[1])
    }
}

#[test]
fn default_collate_without_fast_path_stacks() -> R {
    let loader = DataLoader::builder(Probe::new(5)).batch_size(2).build()?;
    let batches: Vec<Tensor> = loader.iter().collect::<Result<_>>()?;
    assert_eq!(batches.len(), 3);
    assert_eq!(batches[0].shape(), &[2, 1]);
    assert_eq!(batches[1].to_vec::<i64>()?, [2, 3]);
    assert_eq!(batches[2].shape(), &[1, 1]);
    Ok(())
}

#[test]
fn prefetch_is_bounded() -> R {
    let probe = Probe::new(200);
    let calls = Arc::clone(&probe.calls);
    let loader = DataLoader::builder(probe)
        .num_workers(2)
        .prefetch_factor(2)
        .build()?;
    let mut it = loader.iter();
    it.next().unwrap()?;
    std::thread::sleep(Duration::from_millis(300));
    // Consumed 1; each worker holds at most prefetch_factor finished or blocked batches.
    let fetched = calls.load(Ordering::SeqCst);
    assert!(fetched <= 1 + 2 * 2, "fetched {fetched} batches ahead");
    assert!(fetched >= 2, "workers should prefetch, fetched {fetched}");
    Ok(())
}

#[test]
fn dropping_mid_epoch_stops_the_workers() -> R {
    // prefetch_factor 1 makes each worker's queue a rendezvous channel.
    for prefetch in [1, 2, 3] {
        let mut probe = Probe::new(10_000);
        probe.delay = Duration::from_millis(2);
        let calls = Arc::clone(&probe.calls);
        let loader = DataLoader::builder(probe)
            .batch_size(4)
            .num_workers(4)
            .prefetch_factor(prefetch)
            .build()?;
        let mut it = loader.iter();
        for _ in 0..3 {
            it.next().unwrap()?;
        }
        assert!(
            Arc::strong_count(loader.dataset()) > 1,
            "workers hold the dataset"
        );
        let start = Instant::now();
        drop(it);
        assert!(start.elapsed() < Duration::from_secs(5));
        // Every worker was joined: none holds a handle to the dataset any more.
        assert_eq!(Arc::strong_count(loader.dataset()), 1);
        let after_drop = calls.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            after_drop,
            "no work after drop"
        );
    }
    // A whole epoch also ends with the workers joined.
    let small = DataLoader::builder(Probe::new(9))
        .batch_size(2)
        .num_workers(3)
        .build()?;
    assert_eq!(small.iter().count(), 5);
    assert_eq!(Arc::strong_count(small.dataset()), 1);
    Ok(())
}

#[test]
fn errors_are_items_not_panics() -> R {
    for workers in [0, 2] {
        let mut probe = Probe::new(10);
        probe.fail_at = Some(4);
        probe.panic_at = Some(7);
        let mut b = DataLoader::builder(probe).batch_size(3);
        if workers > 0 {
            b = b.num_workers(workers);
        }
        let results: Vec<Result<Tensor>> = b.build()?.iter().collect();
        assert_eq!(results.len(), 4, "later batches still come");
        assert_eq!(results[0].as_ref().unwrap().to_vec::<i64>()?, [0, 1, 2]);
        let e = results[1].as_ref().unwrap_err().to_string();
        assert!(e.contains("cannot read sample 4"), "{e}");
        let e = results[2].as_ref().unwrap_err().to_string();
        assert!(
            e.contains("Caught a panic") && e.contains("sample 7 is cursed"),
            "{e}"
        );
        assert_eq!(results[3].as_ref().unwrap().to_vec::<i64>()?, [9]);
    }
    Ok(())
}

/// Samples of different lengths: default collate cannot stack them.
struct Ragged;
impl Dataset for Ragged {
    type Item = Tensor;
    fn len(&self) -> usize {
        4
    }
    fn get(&self, index: usize) -> Result<Tensor> {
        Tensor::zeros([index + 1], DType::F32)
    }
}

#[test]
fn collate_errors_and_custom_collate_fn() -> R {
    let loader = DataLoader::builder(Ragged)
        .batch_size(2)
        .num_workers(1)
        .build()?;
    for batch in &loader {
        let e = batch.unwrap_err().to_string();
        assert!(e.contains("default_collate") && e.contains("stack"), "{e}");
    }
    // A collate_fn that pads to the longest sample and returns the lengths too.
    let loader = DataLoader::builder(Ragged)
        .batch_size(3)
        .collate_fn(|items: Vec<Tensor>| -> Result<(Tensor, Vec<usize>)> {
            let lens: Vec<usize> = items.iter().map(|t| t.shape()[0]).collect();
            let max = *lens.iter().max().unwrap();
            let mut data = Vec::new();
            for t in &items {
                let mut v = t.to_vec::<f32>()?;
                v.iter_mut().for_each(|x| *x = 1.0);
                v.resize(max, 0.0);
                data.extend(v);
            }
            Ok((Tensor::from_vec(data, &[items.len(), max])?, lens))
        })
        .build()?;
    let batches: Vec<_> = loader.iter().collect::<Result<_>>()?;
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0].1, [1, 2, 3]);
    assert_eq!(
        batches[0].0.to_vec::<f32>()?,
        [1., 0., 0., 1., 1., 0., 1., 1., 1.]
    );
    assert_eq!(batches[1].1, [4]);
    Ok(())
}

#[test]
fn invalid_options() -> R {
    let e = DataLoader::builder(xy(3)?)
        .batch_size(0)
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("batch_size should be a positive integer value"),
        "{e}"
    );
    let e = DataLoader::builder(xy(3)?)
        .prefetch_factor(2)
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("prefetch_factor option could only be specified in multiprocessing"),
        "{e}"
    );
    assert!(DataLoader::builder(xy(3)?)
        .num_workers(1)
        .prefetch_factor(0)
        .build()
        .is_err());
    Ok(())
}

#[test]
fn random_split_subsets_load() -> R {
    let parts = random_split(xy(20)?, [0.75, 0.25], &mut Generator::new(1))?;
    let test_idx: Vec<i64> = parts[1].indices().iter().map(|&i| i as i64).collect();
    let mut parts = parts.into_iter();
    let (train, test) = (parts.next().unwrap(), parts.next().unwrap());
    let loader = DataLoader::builder(test).batch_size(2).build()?;
    // Subset forwards to TensorDataset's index_select path; rows must match labels.
    assert_eq!(epoch(&loader)?.concat(), test_idx);
    let loader = DataLoader::builder(train)
        .batch_size(4)
        .shuffle(true)
        .seed(0)
        .num_workers(2)
        .build()?;
    assert_eq!(epoch(&loader)?.concat().len(), 15);
    Ok(())
}

/// 0, 1, ..., n-1 with an error at `bad`.
struct Stream {
    n: i64,
    bad: Option<i64>,
}
impl IterableDataset for Stream {
    type Item = (Tensor, i64);
    fn iter(&self) -> Box<dyn Iterator<Item = Result<(Tensor, i64)>> + Send + '_> {
        Box::new((0..self.n).map(move |i| {
            if Some(i) == self.bad {
                Err(Error::value("Stream", format!("bad record {i}")))
            } else {
                Ok((Tensor::from([i as f32, -(i as f32)]), i))
            }
        }))
    }
}

#[test]
fn iterable_dataset_batches() -> R {
    let loader = IterableDataLoader::new(Stream { n: 7, bad: None }).batch_size(3)?;
    let batches: Vec<_> = loader.iter().collect::<Result<_>>()?;
    assert_eq!(batches.len(), 3);
    assert_eq!(batches[1].0.to_vec::<f32>()?, [3., -3., 4., -4., 5., -5.]);
    assert_eq!(batches[2].1.to_vec::<i64>()?, [6]);
    // A second pass starts over.
    assert_eq!(loader.iter().count(), 3);
    let loader = IterableDataLoader::new(Stream { n: 7, bad: None })
        .batch_size(3)?
        .drop_last(true);
    assert_eq!(loader.iter().count(), 2);
    let loader = IterableDataLoader::new(Stream { n: 8, bad: Some(4) }).batch_size(3)?;
    let results: Vec<_> = loader.iter().collect();
    assert_eq!(results.len(), 3);
    assert!(results[1]
        .as_ref()
        .err()
        .unwrap()
        .to_string()
        .contains("bad record 4"));
    assert_eq!(results[2].as_ref().unwrap().1.to_vec::<i64>()?, [6, 7]);
    let loader = IterableDataLoader::new(Stream { n: 4, bad: None })
        .batch_size(2)?
        .collate_fn(|items: Vec<(Tensor, i64)>| -> Result<i64> {
            Ok(items.iter().map(|(_, i)| i).sum())
        });
    assert_eq!(loader.iter().collect::<Result<Vec<_>>>()?, [1, 5]);
    assert!(IterableDataLoader::new(Stream { n: 1, bad: None })
        .batch_size(0)
        .is_err());
    Ok(())
}

/// Forwards to a TensorDataset, counting `get` and `get_batch` calls.
struct Counted {
    inner: TensorDataset<(Tensor, Tensor)>,
    gets: AtomicUsize,
    batches: AtomicUsize,
}
impl Dataset for Counted {
    type Item = (Tensor, Tensor);
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn get(&self, index: usize) -> Result<(Tensor, Tensor)> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(index)
    }
    fn get_batch(&self, indices: &[usize]) -> Option<Result<(Tensor, Tensor)>> {
        self.batches.fetch_add(1, Ordering::SeqCst);
        self.inner.get_batch(indices)
    }
}

#[test]
fn default_collate_takes_the_gather_fast_path() -> R {
    let counted = || -> Result<Counted> {
        Ok(Counted {
            inner: xy(10)?,
            gets: AtomicUsize::new(0),
            batches: AtomicUsize::new(0),
        })
    };
    let fast = DataLoader::builder(counted()?)
        .batch_size(4)
        .shuffle(true)
        .seed(5)
        .build()?;
    let fast_batches = epoch(&fast)?;
    assert_eq!(fast.dataset().batches.load(Ordering::SeqCst), 3);
    assert_eq!(fast.dataset().gets.load(Ordering::SeqCst), 0);
    // A collate_fn gets the samples one by one; default_collate over them stacks, and the
    // batches are the same as the gathered ones.
    let slow = DataLoader::builder(counted()?)
        .batch_size(4)
        .shuffle(true)
        .seed(5)
        .collate_fn(kiln_data::default_collate::<(Tensor, Tensor)>)
        .build()?;
    assert_eq!(epoch(&slow)?, fast_batches);
    assert_eq!(slow.dataset().batches.load(Ordering::SeqCst), 0);
    assert_eq!(slow.dataset().gets.load(Ordering::SeqCst), 10);
    Ok(())
}
