//! CUDA sort (segmented bitonic, kernels/cuda/sort.cu.j2) and everything built on it (topk,
//! kthvalue, median, mode) against stable-sort references written here: every row length
//! class (one tile, tile boundaries, the global merge path, a 2^20 row), many short rows,
//! strided inputs, sorting along a non-last dim, and every dtype sort and mode list.

use kiln::{DType, Device, Result, Tensor};
use std::cmp::Ordering;
use std::collections::BTreeMap;

const GPU: Device = Device::Cuda(0);

/// Deterministic xorshift64* numbers.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A CPU tensor of `shape` and `dtype` with about `distinct` different values (many ties),
/// NaN, ±inf and -0.0 among floats, the extremes among integers.
fn data(shape: &[usize], dtype: DType, distinct: u64, seed: u64) -> Result<Tensor> {
    let len: usize = shape.iter().product();
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    if dtype.is_floating_point() {
        let v: Vec<f64> = (0..len)
            .map(|_| {
                let x = r.next();
                match x % 32 {
                    0 | 1 => f64::NAN,
                    2 => f64::INFINITY,
                    3 => f64::NEG_INFINITY,
                    4 => -0.0,
                    // Quarter steps (exact in every float dtype) for few distinct
                    // values; else spread over [-1000, 1000) (ties only by rounding).
                    _ if distinct <= 1 << 16 => {
                        ((x >> 8) % distinct) as f64 / 4.0 - distinct as f64 / 8.0
                    }
                    _ => (x >> 11) as f64 * 2f64.powi(-53) * 2000.0 - 1000.0,
                }
            })
            .collect();
        return Tensor::from_vec(v, shape)?.to_dtype(dtype);
    }
    let (lo, hi): (i64, i64) = match dtype {
        DType::Bool => (0, 1),
        DType::U8 => (0, 255),
        DType::I8 => (-128, 127),
        DType::I16 => (-32768, 32767),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN, i64::MAX),
    };
    let v: Vec<i64> = (0..len)
        .map(|_| {
            let x = r.next();
            match x % 32 {
                0 => lo,
                1 => hi,
                // Around zero, wrapped into the dtype's range.
                _ => {
                    let v = ((x >> 8) % distinct) as i128 - (distinct / 2) as i128;
                    let span = hi as i128 - lo as i128 + 1;
                    (lo as i128 + (v - lo as i128).rem_euclid(span)) as i64
                }
            }
        })
        .collect();
    Tensor::from_vec(v, shape)?.to_dtype(dtype)
}

/// NaN above every number (kiln's and PyTorch's sort order).
fn rank(a: &f64, b: &f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(b).expect("numbers compare"),
    }
}

/// The positions of `row` in stable sorted order (std's `sort_by` is stable).
fn stable_order<K>(row: &[K], descending: bool, cmp: impl Fn(&K, &K) -> Ordering) -> Vec<i64> {
    let mut o: Vec<usize> = (0..row.len()).collect();
    o.sort_by(|&a, &b| {
        if descending {
            cmp(&row[b], &row[a])
        } else {
            cmp(&row[a], &row[b])
        }
    });
    o.into_iter().map(|i| i as i64).collect()
}

/// Floats as a key that is equal exactly when the values are identical (NaN == NaN, and
/// -0.0 != 0.0), to check that values are the input's elements bit for bit.
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// `t` on the CPU with `dim` moved last, the other dims in order: row r is the line of
/// output element r of a reduction over `dim`.
fn dim_last(t: &Tensor, dim: i64) -> Result<Tensor> {
    let nd = t.dim() as i64;
    let d = if dim < 0 { dim + nd } else { dim };
    let order: Vec<i64> = (0..nd).filter(|&k| k != d).chain([d]).collect();
    t.cpu()?.permute(&order)
}

/// The rows of `t` along `dim`, as f64 or i64 values.
fn rows_f64(t: &Tensor, dim: i64) -> Result<Vec<f64>> {
    dim_last(t, dim)?.to_vec::<f64>()
}
fn rows_i64(t: &Tensor, dim: i64) -> Result<Vec<i64>> {
    dim_last(t, dim)?.to_vec::<i64>()
}

/// `t` itself when on the GPU (a strided view stays one), else a copy there.
fn on_gpu(t: &Tensor) -> Result<Tensor> {
    if t.device() == GPU {
        Ok(t.clone())
    } else {
        t.to_device(GPU)
    }
}

/// `t.sort(dim, descending)` on the GPU against the stable reference: exact indices (so
/// stability and NaN placement), values bit for bit.
fn check_sort(t: &Tensor, dim: i64, descending: bool) -> Result<()> {
    let what = format!(
        "sort {:?} {:?} dim {dim} descending {descending}",
        t.dtype(),
        t.shape()
    );
    let d = if dim < 0 { dim + t.dim() as i64 } else { dim } as usize;
    let n = t.shape()[d];
    let (v, i) = on_gpu(t)?.sort_with(dim, descending)?;
    assert_eq!(v.device(), GPU);
    assert_eq!(v.shape(), t.shape(), "{what}");
    assert_eq!(i.shape(), t.shape(), "{what}");
    assert_eq!(v.dtype(), t.dtype(), "{what}");
    let got_i = rows_i64(&i, dim)?;
    if n == 0 || t.numel() == 0 {
        assert!(got_i.is_empty());
        return Ok(());
    }
    let float = t.dtype().is_floating_point();
    let (xf, vf) = if float {
        (rows_f64(t, dim)?, rows_f64(&v, dim)?)
    } else {
        (vec![], vec![])
    };
    let (xi, vi) = if float {
        (vec![], vec![])
    } else {
        (rows_i64(t, dim)?, rows_i64(&v, dim)?)
    };
    for r in 0..t.numel() / n {
        let want = if float {
            stable_order(&xf[r * n..][..n], descending, rank)
        } else {
            stable_order(&xi[r * n..][..n], descending, Ord::cmp)
        };
        let got = &got_i[r * n..][..n];
        if let Some(k) = (0..n).find(|&k| got[k] != want[k]) {
            panic!(
                "{what}: row {r}, position {k}: index {} where the stable order has {}",
                got[k], want[k]
            );
        }
        for (k, &w) in want.iter().enumerate() {
            let ok = if float {
                same(vf[r * n + k], xf[r * n + w as usize])
            } else {
                vi[r * n + k] == xi[r * n + w as usize]
            };
            assert!(ok, "{what}: row {r}, position {k}: wrong value");
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA device"]
fn cuda_sort_rows_of_every_length_class() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    // 1..3: trivial networks; 2047/2048/2049: around one shared-memory tile; 5000 and
    // 100_000: padded rows through the global merge; 2^20: a power of two, no padding.
    for (rows, n) in [
        (3, 1),
        (5, 2),
        (7, 3),
        (4, 2047),
        (4, 2048),
        (4, 2049),
        (3, 5000),
        (2, 100_000),
        (1, 1 << 20),
    ] {
        for descending in [false, true] {
            // Few distinct values (long runs of ties) and many.
            for distinct in [7, 1 << 40] {
                let t = data(&[rows, n], DType::F32, distinct, n as u64 + rows as u64)?;
                check_sort(&t, -1, descending)?;
            }
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA device"]
fn cuda_sort_many_short_rows_and_strided_inputs() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    for shape in [[100_000, 3], [20_000, 17], [3000, 300]] {
        check_sort(&data(&shape, DType::F32, 5, 1)?, 1, false)?;
        check_sort(&data(&shape, DType::F32, 5, 2)?, 1, true)?;
    }
    // Not the last dim, and a permuted (non-contiguous) view, both with rows of one tile
    // and rows through the global merge.
    let t = data(&[6, 3000, 5], DType::F64, 11, 3)?;
    check_sort(&t, 1, false)?;
    check_sort(&t, 0, true)?;
    let p = data(&[5, 6, 3000], DType::F32, 11, 4)?
        .to_device(GPU)?
        .permute(&[2, 0, 1])?;
    assert!(!p.is_contiguous());
    check_sort(&p, 0, false)?;
    check_sort(&p, 2, true)?;
    let s = data(&[40, 50], DType::F32, 11, 4)?
        .to_device(GPU)?
        .narrow(1, 3, 41)?;
    check_sort(&s, 1, true)?;
    // Empty rows and no rows.
    check_sort(&data(&[0, 5], DType::F32, 3, 5)?, 1, false)?;
    check_sort(&data(&[5, 0], DType::F32, 3, 5)?, 1, false)?;
    Ok(())
}

#[test]
#[ignore = "needs a CUDA device"]
fn cuda_sort_every_dtype() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    for dtype in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::Bool,
    ] {
        for (shape, distinct) in [([9, 300], 13u64), ([3, 5000], 1 << 20)] {
            for descending in [false, true] {
                let t = data(&shape, dtype, distinct, shape[1] as u64)?;
                check_sort(&t, -1, descending)?;
            }
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA device"]
fn cuda_topk_kthvalue_median_through_the_sort() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    // topk over a 50k vocabulary: the 5 largest (smallest) in stable sorted order.
    let t = data(&[8, 50_000], DType::F32, 1 << 12, 6)?;
    let g = t.to_device(GPU)?;
    let x = rows_f64(&t, -1)?;
    for largest in [true, false] {
        let (v, i) = g.topk_with(5, -1, largest, true)?;
        assert_eq!(v.shape(), &[8, 5]);
        let (v, i) = (v.cpu()?.to_vec::<f64>()?, i.cpu()?.to_vec::<i64>()?);
        for r in 0..8 {
            let row = &x[r * 50_000..][..50_000];
            let want = &stable_order(row, largest, rank)[..5];
            assert_eq!(&i[r * 5..][..5], want, "topk largest={largest} row {r}");
            for k in 0..5 {
                assert!(same(v[r * 5 + k], row[want[k] as usize]), "topk row {r}");
            }
        }
    }
    // kthvalue along a non-last dim of odd length 3001 (global merge path).
    let t = data(&[3001, 4], DType::F64, 97, 7)?;
    let (v, i) = t.to_device(GPU)?.kthvalue_with(1500, 0, false)?;
    let (v, i) = (v.cpu()?.to_vec::<f64>()?, i.cpu()?.to_vec::<i64>()?);
    let x = rows_f64(&t, 0)?;
    for c in 0..4 {
        let row = &x[c * 3001..][..3001];
        let w = stable_order(row, false, rank)[1499];
        assert_eq!(i[c], w, "kthvalue column {c}");
        assert!(same(v[c], row[w as usize]), "kthvalue column {c}");
    }
    // median of a whole [1000, 1000] tensor: one row of 10^6 through the global merge. No
    // NaN here: the lower median of the sorted numbers.
    let mut r = Rng(8);
    let vals: Vec<f64> = (0..1_000_000)
        .map(|_| (r.next() % 100_000) as f64 / 8.0)
        .collect();
    let t = Tensor::from_vec(vals.clone(), &[1000, 1000])?;
    let m = t.to_device(GPU)?.median()?.cpu()?.item::<f64>()?;
    let mut sorted = vals;
    sorted.sort_by(rank);
    assert_eq!(m, sorted[499_999], "median");
    // median(dim) of rows of even length gives the lower median and its stable index; a
    // row holding NaN gives its first NaN and that NaN's index, as PyTorch's does. The data
    // has a NaN in about one element of 16, so rows 0-4 hold some; row 5 has them zeroed.
    let t = kiln::cat(&[
        data(&[5, 4096], DType::F32, 50, 9)?,
        data(&[1, 4096], DType::F32, 50, 12)?.nan_to_num()?,
    ])?;
    let (v, i) = t.to_device(GPU)?.median_dim_with(1, true)?;
    assert_eq!(v.shape(), &[6, 1]);
    let (v, i) = (v.cpu()?.to_vec::<f64>()?, i.cpu()?.to_vec::<i64>()?);
    let x = rows_f64(&t, 1)?;
    let mut kinds = [0; 2];
    for r in 0..6 {
        let row = &x[r * 4096..][..4096];
        let first_nan = row.iter().position(|x| x.is_nan());
        kinds[first_nan.is_some() as usize] += 1;
        let w = match first_nan {
            Some(n) => n as i64,
            None => stable_order(row, false, rank)[2047],
        };
        assert_eq!(i[r], w, "median_dim row {r}");
        assert!(same(v[r], row[w as usize]));
    }
    assert_eq!(kinds, [1, 5], "rows without and with NaN");
    Ok(())
}

/// Floats mapped to integers in their numeric order, with -0.0 and 0.0 one key (they are
/// equal, so one value for mode).
fn order_key(x: f64) -> i64 {
    let b = if x == 0.0 { 0 } else { x.to_bits() as i64 };
    if b < 0 {
        b ^ i64::MAX
    } else {
        b
    }
}

/// mode's reference on one row, without sorting: counts per distinct value (NaN counts
/// once each, so it wins only in a row of nothing but NaN, as its first); the most frequent
/// value, the smallest of equally frequent ones, and its last occurrence.
fn mode_ref(keys: &[Option<i64>]) -> usize {
    let mut counts: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for (k, key) in keys.iter().enumerate() {
        if let Some(key) = key {
            let e = counts.entry(*key).or_insert((0, k));
            *e = (e.0 + 1, k);
        }
    }
    let mut best: Option<(usize, usize)> = None;
    for &(c, last) in counts.values() {
        if best.is_none_or(|(bc, _)| c > bc) {
            best = Some((c, last));
        }
    }
    match best {
        Some((_, last)) => last,
        None => 0, // all NaN: the first one
    }
}

/// `t.mode(dim)` on the GPU against `mode_ref` on every row.
fn check_mode(t: &Tensor, dim: i64) -> Result<()> {
    let what = format!("mode {:?} {:?} dim {dim}", t.dtype(), t.shape());
    let d = if dim < 0 { dim + t.dim() as i64 } else { dim } as usize;
    let n = t.shape()[d];
    let (v, i) = on_gpu(t)?.mode_with(dim, false)?;
    let (gv, gi) = (v.cpu()?.to_vec::<f64>()?, i.cpu()?.to_vec::<i64>()?);
    let float = t.dtype().is_floating_point();
    let x = rows_f64(t, dim)?;
    let keys: Vec<Option<i64>> = if float {
        x.iter()
            .map(|&v| (!v.is_nan()).then(|| order_key(v)))
            .collect()
    } else {
        rows_i64(t, dim)?.into_iter().map(Some).collect()
    };
    assert_eq!(gi.len(), t.numel() / n, "{what}");
    for r in 0..gi.len() {
        let w = mode_ref(&keys[r * n..][..n]);
        assert_eq!(gi[r], w as i64, "{what}: row {r}");
        assert!(same(gv[r], x[r * n + w]), "{what}: row {r} value");
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA device"]
fn cuda_mode_with_ties_and_nan() -> Result<()> {
    if !kiln::cuda::is_available() {
        return Ok(());
    }
    // Ties in frequency (the smallest value wins), NaN among numbers, rows of one element.
    let nan = f64::NAN;
    let rows = [
        vec![3.0, 1.0, 3.0, 1.0, 2.0, nan, nan],
        vec![nan, nan, nan, nan, nan, nan, nan],
        vec![nan, 5.0, nan, 4.0, nan, 6.0, nan],
        vec![-0.0, 0.0, 1.0, 1.0, 0.0, -0.0, 2.0],
        vec![7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0],
        vec![2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
    ];
    let t = Tensor::from_vec(rows.concat(), &[6, 7])?;
    check_mode(&t, 1)?;
    let (v, i) = t.to_device(GPU)?.mode_with(1, false)?;
    assert_eq!(i.cpu()?.to_vec::<i64>()?, vec![3, 0, 3, 5, 6, 6]);
    let v = v.cpu()?.to_vec::<f64>()?;
    assert!(v[1].is_nan() && v[3] == 0.0 && v[3].is_sign_negative());
    check_mode(&data(&[4, 1], DType::F32, 3, 10)?, 1)?;
    for dtype in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::U8,
        DType::Bool,
    ] {
        // Short rows of few values, rows through the global merge, and many distinct
        // values (often a tie of counts 1 or 2).
        check_mode(&data(&[64, 300], dtype, 9, 11)?, -1)?;
        check_mode(&data(&[3, 5000], dtype, 40, 12)?, 1)?;
        check_mode(&data(&[8, 3000], dtype, 1 << 30, 13)?, 1)?;
    }
    // One row of 100_000, a non-last dim and a permuted view.
    check_mode(&data(&[1, 100_000], DType::F32, 1000, 14)?, 1)?;
    check_mode(&data(&[100_000, 2], DType::F64, 5000, 15)?, 0)?;
    let p = data(&[4, 5, 2100], DType::F32, 60, 16)?
        .to_device(GPU)?
        .permute(&[2, 1, 0])?;
    assert!(!p.is_contiguous());
    check_mode(&p, 0)?;
    check_mode(&p, 2)?;
    Ok(())
}
