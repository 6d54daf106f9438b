//! DataLoader shutdown and construction edge cases from issue 21: dropping a loader while a
//! worker is inside a slow or never-returning `get` returns promptly (PyTorch's shutdown
//! gives up on a worker after its timeout; here the stuck thread is detached and its result
//! discarded), and `shuffle=True` over an empty dataset fails at construction with
//! RandomSampler's message.

use kiln_core::{DType, Result, Tensor};
use kiln_data::{DataLoader, Dataset, TensorDataset};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

type R = Result<()>;

/// Panics seen on DataLoader worker threads (user code's panics are caught and become
/// `Err` batches, but the hook still sees them; none of these datasets panics).
static WORKER_PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_worker_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let worker = std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("kiln-data-worker"));
            if worker {
                WORKER_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            prev(info)
        }));
    });
}

/// Samples below `fast` come at once; the others wait for a message on `gate` (or its
/// sender's drop), or sleep `sleep` when there is no gate.
struct Stuck {
    n: usize,
    fast: usize,
    gate: Option<Mutex<Receiver<()>>>,
    sleep: Duration,
    entered: Arc<AtomicUsize>,
    returned: Arc<AtomicUsize>,
}

impl Dataset for Stuck {
    type Item = Tensor;
    fn len(&self) -> usize {
        self.n
    }
    fn get(&self, index: usize) -> Result<Tensor> {
        if index >= self.fast {
            self.entered.fetch_add(1, Ordering::SeqCst);
            match &self.gate {
                Some(g) => {
                    let _ = g.lock().unwrap().recv();
                }
                None => std::thread::sleep(self.sleep),
            }
            self.returned.fetch_add(1, Ordering::SeqCst);
        }
        Tensor::from_vec(vec![index as i64], &[1])
    }
}

fn stuck(gate: Option<Receiver<()>>, sleep: Duration) -> Stuck {
    Stuck {
        n: 100,
        fast: 1,
        gate: gate.map(Mutex::new),
        sleep,
        entered: Arc::new(AtomicUsize::new(0)),
        returned: Arc::new(AtomicUsize::new(0)),
    }
}

/// Takes one batch, waits until a worker is inside a blocking `get`, then times dropping
/// the iterator and the loader.
fn drop_time(ds: Stuck, workers: usize) -> Result<(Duration, Arc<Stuck>)> {
    let entered = Arc::clone(&ds.entered);
    let loader = DataLoader::builder(ds)
        .batch_size(1)
        .num_workers(workers)
        .build()?;
    let dataset = Arc::clone(loader.dataset());
    let mut it = loader.iter();
    assert_eq!(it.next().unwrap()?.to_vec::<i64>()?, [0]);
    let wait = Instant::now();
    while entered.load(Ordering::SeqCst) == 0 {
        assert!(
            wait.elapsed() < Duration::from_secs(30),
            "no worker got stuck"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    drop(it);
    drop(loader);
    Ok((start.elapsed(), dataset))
}

#[test]
fn drop_returns_promptly_while_a_get_sleeps() -> R {
    count_worker_panics();
    for workers in [1, 3] {
        let (took, _) = drop_time(stuck(None, Duration::from_secs(20)), workers)?;
        assert!(took < Duration::from_secs(1), "drop took {took:?}");
    }
    Ok(())
}

#[test]
fn drop_returns_promptly_while_a_get_never_returns() -> R {
    count_worker_panics();
    let (tx, rx) = channel::<()>();
    let (took, _) = drop_time(stuck(Some(rx), Duration::ZERO), 2)?;
    assert!(took < Duration::from_secs(1), "drop took {took:?}");
    // Never sent to, never dropped: that `get` never returns.
    std::mem::forget(tx);
    Ok(())
}

#[test]
fn a_detached_worker_finishing_later_exits_quietly() -> R {
    count_worker_panics();
    let (tx, rx): (Sender<()>, _) = channel();
    let (took, dataset) = drop_time(stuck(Some(rx), Duration::ZERO), 2)?;
    assert!(took < Duration::from_secs(1), "drop took {took:?}");
    // The stuck worker still holds the dataset; let its `get` return into the closed
    // channel.
    assert!(Arc::strong_count(&dataset) > 1);
    let returned_before = dataset.returned.load(Ordering::SeqCst);
    drop(tx);
    let wait = Instant::now();
    while Arc::strong_count(&dataset) > 1 {
        assert!(
            wait.elapsed() < Duration::from_secs(30),
            "the detached worker never exited"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(dataset.returned.load(Ordering::SeqCst) > returned_before);
    // It ended without fetching more and without a panic.
    assert_eq!(
        dataset.entered.load(Ordering::SeqCst),
        dataset.returned.load(Ordering::SeqCst)
    );
    assert_eq!(WORKER_PANICS.load(Ordering::SeqCst), 0);
    Ok(())
}

#[test]
fn workers_that_finish_quickly_are_still_joined_on_drop() -> R {
    // A short `get`: drop waits for it rather than leaving the thread behind.
    let ds = stuck(None, Duration::from_millis(30));
    let (took, dataset) = drop_time(ds, 2)?;
    assert!(took < Duration::from_secs(1), "drop took {took:?}");
    assert_eq!(Arc::strong_count(&dataset), 1, "every worker was joined");
    Ok(())
}

fn empty() -> Result<TensorDataset<Tensor>> {
    TensorDataset::new(Tensor::zeros([0, 3], DType::F32)?)
}

#[test]
fn shuffle_over_an_empty_dataset_fails_at_construction() -> R {
    // PyTorch: `ValueError: num_samples should be a positive integer value, but got
    // num_samples=0` from RandomSampler, raised by DataLoader(..., shuffle=True).
    for workers in [0, 2] {
        for drop_last in [false, true] {
            let r = DataLoader::builder(empty()?)
                .shuffle(true)
                .batch_size(4)
                .drop_last(drop_last)
                .num_workers(workers)
                .build();
            let e = match r {
                Ok(_) => panic!("shuffle over an empty dataset must fail"),
                Err(e) => e.to_string(),
            };
            assert_eq!(
                e,
                "DataLoader: num_samples should be a positive integer value, but got num_samples=0"
            );
        }
    }
    // Without shuffle an empty dataset is fine: zero batches.
    for workers in [0, 2] {
        let loader = DataLoader::builder(empty()?)
            .batch_size(4)
            .num_workers(workers)
            .build()?;
        assert_eq!(loader.len(), 0);
        assert_eq!(loader.iter().count(), 0);
    }
    assert_eq!(DataLoader::new(empty()?).iter().count(), 0);
    Ok(())
}
