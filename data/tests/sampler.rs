//! Samplers: `DistributedSampler` against PyTorch's algorithm written out as a plain loop
//! (and a few hand-computed cases), and a `DataLoader` taking its order from a sampler.

use kiln_core::{DType, ErrorKind, Result, Tensor};
use kiln_data::{
    DataLoader, DistributedSampler, RandomSampler, Sampler, SequentialSampler, TensorDataset,
};

type R = Result<()>;

/// PyTorch's `DistributedSampler.__iter__` after the permutation step, from its documented
/// algorithm: `base` is the epoch's order of `0..len` (`range(len)` or the permutation).
fn reference(base: &[usize], num_replicas: usize, rank: usize, drop_last: bool) -> Vec<usize> {
    let len = base.len() as i64;
    let r = num_replicas as i64;
    // num_samples = ceil((len - R) / R) with drop_last and a remainder, else ceil(len / R),
    // as Python's math.ceil of a float division.
    let num_samples = if drop_last && len % r != 0 {
        ((len - r) as f64 / r as f64).ceil() as i64
    } else {
        (len as f64 / r as f64).ceil() as i64
    };
    let total_size = (num_samples * r) as usize;
    let mut indices = base.to_vec();
    if !drop_last {
        let padding = total_size - indices.len();
        if padding <= indices.len() {
            // indices += indices[:padding_size]
            let head = indices[..padding].to_vec();
            indices.extend(head);
        } else {
            // indices += (indices * ceil(padding_size / len))[:padding_size]
            let times = (padding as f64 / indices.len() as f64).ceil() as usize;
            let mut repeated = Vec::new();
            for _ in 0..times {
                repeated.extend_from_slice(base);
            }
            indices.extend_from_slice(&repeated[..padding]);
        }
    } else {
        indices = indices[..total_size].to_vec();
    }
    assert_eq!(indices.len(), total_size);
    // indices[rank:total_size:num_replicas]
    let mut out = Vec::new();
    let mut i = rank;
    while i < total_size {
        out.push(indices[i]);
        i += num_replicas;
    }
    assert_eq!(out.len() as i64, num_samples);
    out
}

/// The permutation a shuffling `DataLoader` seeded with `seed` draws first: the documented
/// source of `DistributedSampler`'s permutation for `seed + epoch`.
fn loader_permutation(len: usize, seed: u64) -> Result<Vec<usize>> {
    let y = Tensor::arange(0.0, len as f64, 1.0, DType::I64)?;
    let loader = DataLoader::builder(TensorDataset::new(y)?)
        .batch_size(len)
        .shuffle(true)
        .seed(seed)
        .build()?;
    let mut order = Vec::new();
    for batch in &loader {
        order.extend(batch?.to_vec::<i64>()?.into_iter().map(|i| i as usize));
    }
    Ok(order)
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort();
    v
}

#[test]
fn unshuffled_two_and_four_replicas_by_hand() -> R {
    let rank = |len, replicas, rank| -> Result<Vec<usize>> {
        DistributedSampler::new(len, replicas, rank)?
            .shuffle(false)
            .indices()
    };
    assert_eq!(rank(10, 2, 0)?, [0, 2, 4, 6, 8]);
    assert_eq!(rank(10, 2, 1)?, [1, 3, 5, 7, 9]);
    // len 10, 4 replicas: num_samples 3, total 12, padded with 0 and 1.
    assert_eq!(rank(10, 4, 0)?, [0, 4, 8]);
    assert_eq!(rank(10, 4, 1)?, [1, 5, 9]);
    assert_eq!(rank(10, 4, 2)?, [2, 6, 0]);
    assert_eq!(rank(10, 4, 3)?, [3, 7, 1]);
    let s = DistributedSampler::new(10, 4, 3)?;
    assert_eq!((s.num_samples(), s.total_size(), s.len()), (3, 12, 3));
    assert_eq!((s.num_replicas(), s.rank(), s.epoch()), (4, 3, 0));
    Ok(())
}

#[test]
fn padding_wraps_round_when_it_exceeds_the_dataset() -> R {
    // len 3, 8 replicas: num_samples 1, total 8; padded list 0 1 2 0 1 2 0 1.
    let padded = [0, 1, 2, 0, 1, 2, 0, 1];
    for (rank, &expect) in padded.iter().enumerate() {
        let s = DistributedSampler::new(3, 8, rank)?.shuffle(false);
        assert_eq!((s.num_samples(), s.total_size()), (1, 8));
        assert_eq!(s.indices()?, [expect], "rank {rank}");
    }
    Ok(())
}

#[test]
fn drop_last_truncates_to_a_multiple_of_the_replicas() -> R {
    // len 10, 4 replicas: num_samples ceil(6 / 4) = 2, total 8; 8 and 9 are dropped.
    let expect = [[0, 4], [1, 5], [2, 6], [3, 7]];
    for (rank, e) in expect.iter().enumerate() {
        let s = DistributedSampler::new(10, 4, rank)?
            .shuffle(false)
            .drop_last(true);
        assert_eq!((s.num_samples(), s.total_size()), (2, 8));
        assert_eq!(s.indices()?, e);
    }
    // len 3, 8 replicas: ceil(-5 / 8) = 0 samples per rank.
    let s = DistributedSampler::new(3, 8, 5)?.drop_last(true);
    assert_eq!((s.num_samples(), s.total_size()), (0, 0));
    assert!(s.indices()?.is_empty() && s.is_empty());
    // Divisible: drop_last changes nothing.
    let s = DistributedSampler::new(12, 4, 1)?
        .shuffle(false)
        .drop_last(true);
    assert_eq!(s.indices()?, [1, 5, 9]);
    Ok(())
}

#[test]
fn unshuffled_matches_the_reference_everywhere() -> R {
    for len in 0..=13 {
        for replicas in 1..=9 {
            for drop_last in [false, true] {
                let base: Vec<usize> = (0..len).collect();
                for rank in 0..replicas {
                    let s = DistributedSampler::new(len, replicas, rank)?
                        .shuffle(false)
                        .drop_last(drop_last);
                    let expect = reference(&base, replicas, rank, drop_last);
                    let what = format!(
                        "len {len}, {replicas} replicas, rank {rank}, drop_last {drop_last}"
                    );
                    assert_eq!(s.indices()?, expect, "{what}");
                    assert_eq!(s.len(), expect.len(), "{what}");
                    assert_eq!(s.total_size(), s.num_samples() * replicas, "{what}");
                }
            }
        }
    }
    Ok(())
}

#[test]
fn shuffled_is_the_permutation_of_seed_plus_epoch_shared_out() -> R {
    for (len, replicas, seed, epoch) in [(10, 4, 0, 0), (10, 4, 0, 3), (7, 3, 42, 1), (3, 8, 5, 2)]
    {
        let base = loader_permutation(len, seed + epoch)?;
        for drop_last in [false, true] {
            for rank in 0..replicas {
                let s = DistributedSampler::new(len, replicas, rank)?
                    .seed(seed)
                    .drop_last(drop_last);
                s.set_epoch(epoch);
                assert_eq!(
                    s.indices()?,
                    reference(&base, replicas, rank, drop_last),
                    "len {len}, {replicas} replicas, rank {rank}, seed {seed}, epoch {epoch}"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn ranks_together_cover_every_index_once_when_divisible() -> R {
    let len = 24;
    for replicas in [1, 2, 3, 4, 6, 8] {
        for shuffle in [false, true] {
            // One sampler per "process", built independently as each rank would.
            let mut all = Vec::new();
            for rank in 0..replicas {
                let s = DistributedSampler::new(len, replicas, rank)?
                    .shuffle(shuffle)
                    .seed(9);
                s.set_epoch(4);
                let mine = s.indices()?;
                assert_eq!(mine.len(), len / replicas);
                all.extend(mine);
            }
            assert_eq!(
                sorted(all),
                (0..len).collect::<Vec<_>>(),
                "{replicas} replicas, shuffle {shuffle}"
            );
        }
    }
    Ok(())
}

#[test]
fn shuffle_changes_with_the_epoch_and_the_seed_not_between_calls() -> R {
    let s = DistributedSampler::new(40, 2, 0)?;
    let e0 = s.indices()?;
    assert_eq!(
        s.indices()?,
        e0,
        "an epoch's order depends only on (seed, epoch)"
    );
    assert_ne!(e0, (0..40).step_by(2).collect::<Vec<_>>());
    s.set_epoch(1);
    let e1 = s.indices()?;
    assert_ne!(e1, e0);
    s.set_epoch(0);
    assert_eq!(s.indices()?, e0);
    let other_seed = DistributedSampler::new(40, 2, 0)?.seed(1);
    assert_ne!(other_seed.indices()?, e0);
    // seed 1 epoch 0 and seed 0 epoch 1 both seed the generator with 1.
    assert_eq!(other_seed.indices()?, e1);
    Ok(())
}

#[test]
fn clones_share_the_epoch() -> R {
    let s = DistributedSampler::new(10, 2, 1)?;
    let kept = s.clone();
    kept.set_epoch(7);
    assert_eq!(s.epoch(), 7);
    // Through the trait, as `loader.sampler().set_epoch(e)` calls it.
    let dynamic: &dyn Sampler = &s;
    dynamic.set_epoch(8);
    assert_eq!(kept.epoch(), 8);
    Ok(())
}

#[test]
fn invalid_rank_is_pytorchs_value_error() {
    let e = DistributedSampler::new(10, 2, 2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Value);
    assert_eq!(
        e.to_string(),
        "DistributedSampler: Invalid rank 2, rank should be in the interval [0, 1]"
    );
    let e = DistributedSampler::new(10, 0, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "DistributedSampler: Invalid rank 0, rank should be in the interval [0, -1]"
    );
}

#[test]
fn sampler_and_shuffle_are_mutually_exclusive() -> R {
    let y = Tensor::arange(0.0, 4.0, 1.0, DType::I64)?;
    let e = DataLoader::builder(TensorDataset::new(y.clone())?)
        .shuffle(true)
        .sampler(DistributedSampler::new(4, 2, 0)?)
        .build()
        .err()
        .expect("shuffle with a sampler is refused");
    assert_eq!(e.kind(), ErrorKind::Value);
    assert_eq!(
        e.to_string(),
        "DataLoader: sampler option is mutually exclusive with shuffle"
    );
    // shuffle(false) said outright is the default, and allowed.
    DataLoader::builder(TensorDataset::new(y)?)
        .shuffle(false)
        .sampler(DistributedSampler::new(4, 2, 0)?)
        .build()?;
    Ok(())
}

/// The labels of every batch of one epoch of a loader over `TensorDataset(arange(len))`.
fn epoch(loader: &DataLoader<TensorDataset<Tensor>>) -> Result<Vec<Vec<usize>>> {
    let mut out = Vec::new();
    for batch in loader {
        out.push(
            batch?
                .to_vec::<i64>()?
                .into_iter()
                .map(|i| i as usize)
                .collect(),
        );
    }
    Ok(out)
}

fn labels(len: usize) -> Result<TensorDataset<Tensor>> {
    TensorDataset::new(Tensor::arange(0.0, len as f64, 1.0, DType::I64)?)
}

#[test]
fn loader_yields_this_ranks_samples_in_batches() -> R {
    // len 10, 4 replicas, rank 1: samples 1, 5, 9.
    let sampler = DistributedSampler::new(10, 4, 1)?.shuffle(false);
    for workers in [0, 2] {
        let mut builder = DataLoader::builder(labels(10)?)
            .batch_size(2)
            .num_workers(workers)
            .sampler(sampler.clone());
        if workers > 0 {
            builder = builder.prefetch_factor(1);
        }
        let loader = builder.build()?;
        assert_eq!(loader.len(), 2);
        assert_eq!(loader.sampler().len(), 3);
        assert_eq!(epoch(&loader)?, [vec![1, 5], vec![9]], "{workers} workers");
    }
    let loader = DataLoader::builder(labels(10)?)
        .batch_size(2)
        .drop_last(true)
        .sampler(sampler)
        .build()?;
    assert_eq!(loader.len(), 1);
    assert_eq!(epoch(&loader)?, [vec![1, 5]]);
    Ok(())
}

#[test]
fn loader_follows_set_epoch_on_its_sampler() -> R {
    let (len, replicas, rank, seed) = (23, 3, 2, 11);
    let sampler = DistributedSampler::new(len, replicas, rank)?.seed(seed);
    let loader = DataLoader::builder(labels(len)?)
        .batch_size(3)
        .sampler(sampler.clone())
        .build()?;
    assert_eq!(loader.len(), 3); // 8 samples: 3 + 3 + 2
    for epoch_no in 0..3u64 {
        // Through a clone kept outside, then through the loader's own handle.
        if epoch_no % 2 == 0 {
            sampler.set_epoch(epoch_no);
        } else {
            loader.sampler().set_epoch(epoch_no);
        }
        let base = loader_permutation(len, seed + epoch_no)?;
        let expect = reference(&base, replicas, rank, false);
        let got = epoch(&loader)?;
        assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 2]);
        assert_eq!(got.concat(), expect, "epoch {epoch_no}");
    }
    Ok(())
}

#[test]
fn default_samplers_are_sequential_or_random() -> R {
    let loader = DataLoader::builder(labels(5)?).batch_size(2).build()?;
    assert_eq!(loader.sampler().indices()?, [0, 1, 2, 3, 4]);
    assert_eq!(DataLoader::new(labels(5)?).sampler().len(), 5);
    assert_eq!(SequentialSampler::new(3).indices()?, [0, 1, 2]);

    let random = RandomSampler::new(30)?.generator(kiln_core::Generator::new(3));
    let first = random.indices()?;
    assert_eq!(first, loader_permutation(30, 3)?);
    assert_ne!(random.indices()?, first, "each epoch draws anew");
    let e = RandomSampler::new(0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Value);
    assert!(e
        .to_string()
        .contains("num_samples should be a positive integer value"));
    Ok(())
}

/// A sampler that names an index the dataset does not have.
struct PastTheEnd;

impl Sampler for PastTheEnd {
    fn indices(&self) -> Result<Vec<usize>> {
        Ok(vec![0, 1, 99])
    }
    fn len(&self) -> usize {
        3
    }
}

#[test]
fn an_index_past_the_dataset_is_that_batchs_error() -> R {
    let loader = DataLoader::builder(labels(4)?)
        .batch_size(2)
        .sampler(PastTheEnd)
        .build()?;
    let batches: Vec<Result<Tensor>> = loader.iter().collect();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0].as_ref().unwrap().to_vec::<i64>()?, [0, 1]);
    assert!(batches[1].is_err());
    Ok(())
}
