//! TensorDataset, Subset, random_split and default_collate against hand-computed values.

use kiln_core::{DType, Generator, Tensor};
use kiln_data::{default_collate, random_split, Dataset, Lengths, Subset, TensorDataset};
use std::collections::HashSet;

type R = kiln_core::Result<()>;

/// x[i] = [2i, 2i + 1] (float32), y[i] = 100 + i (int64).
fn xy(n: usize) -> kiln_core::Result<TensorDataset<(Tensor, Tensor)>> {
    let x = Tensor::arange(0.0, (2 * n) as f64, 1.0, DType::F32)?.reshape([n as i64, 2])?;
    let y = Tensor::arange(100.0, (100 + n) as f64, 1.0, DType::I64)?;
    TensorDataset::new((x, y))
}

#[test]
fn tensor_dataset_get() -> R {
    let ds = xy(5)?;
    assert_eq!(ds.len(), 5);
    let (x, y) = ds.get(3)?;
    assert_eq!(x.shape(), &[2]);
    assert_eq!(x.to_vec::<f32>()?, [6.0, 7.0]);
    assert_eq!(y.shape(), &[] as &[usize]);
    assert_eq!(y.item::<i64>()?, 103);
    let e = ds.get(5).unwrap_err().to_string();
    assert!(
        e.contains("index 5 is out of bounds for dimension 0 with size 5"),
        "{e}"
    );
    Ok(())
}

#[test]
fn tensor_dataset_single_and_vec() -> R {
    let ds = TensorDataset::new(Tensor::from([[1f64, 2.], [3., 4.], [5., 6.]]))?;
    assert_eq!(ds.get(2)?.to_vec::<f64>()?, [5.0, 6.0]);
    let ds = TensorDataset::new(vec![
        Tensor::from([1i64, 2, 3]),
        Tensor::from([4i64, 5, 6]),
        Tensor::from([7i64, 8, 9]),
    ])?;
    let item = ds.get(1)?;
    let vals: Vec<i64> = item.iter().map(|t| t.item::<i64>().unwrap()).collect();
    assert_eq!(vals, [2, 5, 8]);
    Ok(())
}

#[test]
fn tensor_dataset_size_mismatch() -> R {
    let e = TensorDataset::new((
        Tensor::zeros([4, 2], DType::F32)?,
        Tensor::zeros([3], DType::I64)?,
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("Size mismatch between tensors"), "{e}");
    let e = TensorDataset::new(Tensor::scalar_tensor(1.0, DType::F32)?)
        .unwrap_err()
        .to_string();
    assert!(e.contains("Size mismatch between tensors"), "{e}");
    assert!(TensorDataset::new(Vec::<Tensor>::new()).is_err());
    Ok(())
}

#[test]
fn tensor_dataset_get_batch_is_index_select() -> R {
    let ds = xy(6)?;
    let (x, y) = ds
        .get_batch(&[4, 0, 4, 2])
        .expect("TensorDataset has a fast path")?;
    assert_eq!(x.shape(), &[4, 2]);
    assert_eq!(x.to_vec::<f32>()?, [8.0, 9.0, 0.0, 1.0, 8.0, 9.0, 4.0, 5.0]);
    assert_eq!(y.to_vec::<i64>()?, [104, 100, 104, 102]);
    assert!(ds.get_batch(&[1, 6]).unwrap().is_err());
    Ok(())
}

#[test]
fn subset_maps_indices() -> R {
    let ds = std::sync::Arc::new(xy(6)?);
    let sub = Subset::new(ds.clone(), vec![5, 1, 3])?;
    assert_eq!(sub.len(), 3);
    assert_eq!(sub.get(0)?.1.item::<i64>()?, 105);
    assert_eq!(sub.get(2)?.1.item::<i64>()?, 103);
    assert!(sub.get(3).is_err());
    let (_, y) = sub.get_batch(&[2, 0]).unwrap()?;
    assert_eq!(y.to_vec::<i64>()?, [103, 105]);
    assert!(sub.get_batch(&[3]).unwrap().is_err());
    let e = Subset::new(ds, vec![0, 6]).unwrap_err().to_string();
    assert!(
        e.contains("index 6 is out of range for a dataset of length 6"),
        "{e}"
    );
    Ok(())
}

fn labels(sub: &Subset<TensorDataset<(Tensor, Tensor)>>) -> Vec<i64> {
    (0..sub.len())
        .map(|i| sub.get(i).unwrap().1.item::<i64>().unwrap())
        .collect()
}

#[test]
fn random_split_counts_are_disjoint_and_cover() -> R {
    let parts = random_split(xy(20)?, [5, 8, 7], &mut Generator::new(3))?;
    assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [5, 8, 7]);
    let mut seen = HashSet::new();
    for p in &parts {
        for y in labels(p) {
            assert!(seen.insert(y), "label {y} in two subsets");
        }
    }
    assert_eq!(seen, (100..120).collect::<HashSet<i64>>());
    // Same seed, same split; another seed, another split.
    let again = random_split(xy(20)?, [5, 8, 7], &mut Generator::new(3))?;
    let other = random_split(xy(20)?, [5, 8, 7], &mut Generator::new(4))?;
    assert_eq!(parts[0].indices(), again[0].indices());
    assert_eq!(parts[1].indices(), again[1].indices());
    assert_ne!(
        parts
            .iter()
            .map(|p| p.indices().to_vec())
            .collect::<Vec<_>>(),
        other
            .iter()
            .map(|p| p.indices().to_vec())
            .collect::<Vec<_>>()
    );
    // Not the identity order (20! permutations; a fixed seed that gave 0..20 would be a bug).
    let all: Vec<usize> = parts.iter().flat_map(|p| p.indices().to_vec()).collect();
    assert_ne!(all, (0..20).collect::<Vec<_>>());
    Ok(())
}

#[test]
fn random_split_fractions_follow_pytorch() -> R {
    // PyTorch: floor(11 * [0.5, 0.3, 0.2]) = [5, 3, 2], the remaining 1 goes to the first.
    let parts = random_split(xy(11)?, [0.5, 0.3, 0.2], &mut Generator::new(0))?;
    assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [6, 3, 2]);
    // floor(10 * [0.34, 0.33, 0.33]) = [3, 3, 3], remainder 1 -> [4, 3, 3].
    let parts = random_split(xy(10)?, vec![0.34, 0.33, 0.33], &mut Generator::new(0))?;
    assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [4, 3, 3]);
    let union: HashSet<usize> = parts.iter().flat_map(|p| p.indices().to_vec()).collect();
    assert_eq!(union.len(), 10);
    Ok(())
}

#[test]
fn random_split_errors() -> R {
    let e = random_split(xy(10)?, [3, 3], &mut Generator::new(0))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Sum of input lengths does not equal the length of the input dataset!"),
        "{e}"
    );
    assert!(random_split(xy(10)?, [0.5, 0.6], &mut Generator::new(0)).is_err());
    assert!(random_split(xy(10)?, [1.5, -0.5], &mut Generator::new(0)).is_err());
    assert_eq!(Lengths::from([1usize, 2]), Lengths::Counts(vec![1, 2]));
    Ok(())
}

#[test]
fn default_collate_structures() -> R {
    let b = default_collate(vec![Tensor::from([1f32, 2.]), Tensor::from([3f32, 4.])])?;
    assert_eq!(b.shape(), &[2, 2]);
    assert_eq!(b.to_vec::<f32>()?, [1.0, 2.0, 3.0, 4.0]);

    let (a, n, f, s) = default_collate(vec![
        (Tensor::from([1i64]), 7i64, 0.5f64, "a".to_string()),
        (Tensor::from([2i64]), 8i64, 1.5f64, "b".to_string()),
        (Tensor::from([3i64]), 9i64, 2.5f64, "c".to_string()),
    ])?;
    assert_eq!(a.shape(), &[3, 1]);
    assert_eq!(a.to_vec::<i64>()?, [1, 2, 3]);
    assert_eq!((n.dtype(), n.to_vec::<i64>()?), (DType::I64, vec![7, 8, 9]));
    assert_eq!(
        (f.dtype(), f.to_vec::<f64>()?),
        (DType::F64, vec![0.5, 1.5, 2.5])
    );
    assert_eq!(s, ["a", "b", "c"]);

    let v = default_collate(vec![
        vec![Tensor::from([1f32]), Tensor::from([true])],
        vec![Tensor::from([2f32]), Tensor::from([false])],
    ])?;
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].to_vec::<f32>()?, [1.0, 2.0]);
    assert_eq!(v[1].to_vec::<bool>()?, [true, false]);

    let e = default_collate(vec![vec![1i64, 2], vec![3]])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("each element in list of batch should be of equal size"),
        "{e}"
    );
    assert!(default_collate(vec![Tensor::from([1f32]), Tensor::from([1f32, 2.])]).is_err());
    assert!(default_collate(Vec::<Tensor>::new()).is_err());
    Ok(())
}
