//! Layer edge cases from issue 21: `Embedding` with `max_norm` / `scale_grad_by_freq` on
//! large vocabularies and out-of-range ids, BatchNorm state dicts without
//! `num_batches_tracked`, BatchNorm shared between threads, and error messages that name
//! the layer once. Numbers from real PyTorch (`data/gen_layer_edge_cases.py` wrote
//! `data/layer_edge_cases_ref.txt`), float64 loops written here, and PyTorch's error text.

use kiln_core::{no_grad, DType, Tensor};
use kiln_nn::functional as F;
use kiln_nn::*;
use std::collections::HashMap;

const F64: DType = DType::F64;

/// `(shape, values)` of `<case> <key>` in the reference file; a fresh tensor each call.
fn reference(case: &str, key: &str) -> Tensor {
    for line in include_str!("data/layer_edge_cases_ref.txt").lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let mut it = line.split(' ');
        let (c, k, dt, shape) = (
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap(),
        );
        if c != case || k != key {
            continue;
        }
        let shape: Vec<usize> = if shape == "scalar" {
            vec![]
        } else {
            shape.split('x').map(|s| s.parse().unwrap()).collect()
        };
        return if dt == "i64" {
            Tensor::from_vec(it.map(|v| v.parse::<i64>().unwrap()).collect(), &shape)
        } else {
            Tensor::from_vec(it.map(|v| v.parse::<f64>().unwrap()).collect(), &shape)
        }
        .unwrap();
    }
    panic!("no {case} {key} in layer_edge_cases_ref.txt")
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.contiguous()
        .unwrap()
        .to_dtype(F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

fn assert_close(what: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (vals(got), vals(want));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol + tol * b.abs(),
            "{what}[{i}]: got {a}, PyTorch {b}\n got {g:?}\nwant {w:?}"
        );
    }
}

fn err<T>(r: kiln_core::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

// ---- 1. Embedding: max_norm and scale_grad_by_freq against PyTorch ---------------------

/// `(case, padding_idx, max_norm, norm_type, scale_grad_by_freq)` as gen_layer_edge_cases.py.
/// `(case, padding_idx, max_norm, norm_type, scale_grad_by_freq)`.
type EmbeddingCase = (&'static str, Option<i64>, Option<f64>, f64, bool);

const EMBEDDING_CASES: [EmbeddingCase; 4] = [
    ("emb_l2_freq_pad", Some(0), Some(1.0), 2.0, true),
    ("emb_l1_freq_negpad", Some(-1), Some(0.8), 1.0, true),
    ("emb_p3_nofreq", None, Some(0.9), 3.0, false),
    ("emb_freq_only", None, None, 2.0, true),
];

#[test]
fn embedding_max_norm_and_freq_match_pytorch() {
    for (case, pad, max_norm, p, freq) in EMBEDDING_CASES {
        let opts = EmbeddingOptions::default()
            .padding_idx(pad)
            .max_norm(max_norm)
            .norm_type(p)
            .scale_grad_by_freq(freq);
        // The layer.
        let m = Embedding::from_pretrained(&reference(case, "weight0"), false, opts).unwrap();
        let ids = reference(case, "ids");
        let out = m.forward(&ids).unwrap();
        assert_close(
            &format!("{case}: out"),
            &out,
            &reference(case, "out"),
            1e-12,
        );
        assert_close(
            &format!("{case}: renormalised weight"),
            &m.weight,
            &reference(case, "weight1"),
            1e-12,
        );
        out.mul(&reference(case, "cot"))
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        assert_close(
            &format!("{case}: weight grad"),
            &m.weight.grad().unwrap(),
            &reference(case, "grad"),
            1e-12,
        );
        // F.embedding, with int32 ids.
        let w = reference(case, "weight0").requires_grad_(true).unwrap();
        let ids32 = ids.to_dtype(DType::I32).unwrap();
        let out = F::embedding_with(&ids32, &w, pad, max_norm, p, freq).unwrap();
        assert_close(
            &format!("{case}: F out"),
            &out,
            &reference(case, "out"),
            1e-12,
        );
        assert_close(
            &format!("{case}: F weight"),
            &w,
            &reference(case, "weight1"),
            1e-12,
        );
        out.mul(&reference(case, "cot"))
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        assert_close(
            &format!("{case}: F grad"),
            &w.grad().unwrap(),
            &reference(case, "grad"),
            1e-12,
        );
    }
}

/// A float64 loop over the rows the ids read: PyTorch's `embedding_renorm_` (scale
/// `max_norm / (norm + 1e-7)` when the row's L2 norm exceeds `max_norm`).
fn renormed_row(row: &[f32], max_norm: f64) -> Vec<f64> {
    let norm = row
        .iter()
        .map(|&v| (v as f64) * (v as f64))
        .sum::<f64>()
        .sqrt();
    let s = if norm > max_norm {
        max_norm / (norm + 1e-7)
    } else {
        1.0
    };
    row.iter().map(|&v| v as f64 * s).collect()
}

/// A dense `ids × vocabulary` one-hot of these sizes needs 100_000 × 2_000_000 int64s
/// (1.6 TB): only a path that touches the rows read can run this.
#[test]
fn embedding_max_norm_and_freq_touch_only_the_rows_read() {
    let (vocab, dim, n_ids) = (2_000_000usize, 4usize, 100_000usize);
    let opts = EmbeddingOptions::default()
        .max_norm(Some(1.0))
        .scale_grad_by_freq(true)
        .padding_idx(Some(7));
    let m = Embedding::with_options(vocab, dim, opts).unwrap();
    // Ids spread over the vocabulary with repeats of varying counts; 7 is the padding row.
    let ids: Vec<i64> = (0..n_ids as i64)
        .map(|i| (i * i * 7919 + 13 * i) % (vocab as i64 / 8) * 8 + 7 * (i % 3 == 0) as i64)
        .collect();
    let mut counts: HashMap<i64, usize> = HashMap::new();
    for &i in &ids {
        *counts.entry(i).or_default() += 1;
    }
    assert!(counts.values().any(|&c| c > 1) && counts.len() > 1000);
    let before = m.weight.detach().to_vec::<f32>().unwrap();
    let idx = Tensor::from_vec(ids.clone(), &[n_ids / 100, 100]).unwrap();
    let out = m.forward(&idx).unwrap();
    assert_eq!(out.shape(), &[n_ids / 100, 100, dim]);
    // Every row read is renormalised; no other row changes.
    let after = m.weight.detach().to_vec::<f32>().unwrap();
    for r in (0..vocab)
        .step_by(997)
        .chain(counts.keys().map(|&k| k as usize))
    {
        let old = &before[r * dim..(r + 1) * dim];
        let new = &after[r * dim..(r + 1) * dim];
        if counts.contains_key(&(r as i64)) {
            let want = renormed_row(old, 1.0);
            for (a, b) in new.iter().zip(&want) {
                assert!(
                    (*a as f64 - b).abs() <= 1e-6,
                    "row {r}: {new:?} vs {want:?}"
                );
            }
        } else {
            assert_eq!(old, new, "row {r} is not read and must not change");
        }
    }
    // With a cotangent of ones, each row read gets count / count = 1 per element, the
    // padding row and unread rows 0.
    out.sum().unwrap().backward().unwrap();
    let g = m.weight.grad().unwrap().to_vec::<f32>().unwrap();
    for r in (0..vocab)
        .step_by(997)
        .chain(counts.keys().map(|&k| k as usize))
    {
        let want = if r != 7 && counts.contains_key(&(r as i64)) {
            1.0
        } else {
            0.0
        };
        for v in &g[r * dim..(r + 1) * dim] {
            assert!((*v - want).abs() <= 1e-6, "grad row {r}: {v}, want {want}");
        }
    }
    let total: f64 = g.iter().map(|&v| v as f64).sum();
    let used = counts.keys().filter(|&&k| k != 7).count();
    assert!((total - (used * dim) as f64).abs() < 1e-2 * used as f64);
}

/// No ids: an empty lookup, nothing renormalised, a zero gradient (as PyTorch).
#[test]
fn embedding_max_norm_and_freq_with_no_ids() {
    let opts = EmbeddingOptions::default()
        .max_norm(Some(0.5))
        .scale_grad_by_freq(true)
        .dtype(F64);
    let m = Embedding::with_options(5, 3, opts).unwrap();
    let before = vals(&m.weight);
    let out = m
        .forward(&Tensor::from_vec(Vec::<i64>::new(), &[1, 0]).unwrap())
        .unwrap();
    assert_eq!(out.shape(), &[1, 0, 3]);
    assert_eq!(vals(&m.weight), before);
    out.sum().unwrap().backward().unwrap();
    assert_eq!(vals(&m.weight.grad().unwrap()), [0.0; 15]);
}

/// The sizes: a 200_000 × 64 table read at 8 ids.
#[test]
fn embedding_max_norm_large_table_few_ids() {
    let opts = EmbeddingOptions::default()
        .max_norm(Some(2.0))
        .scale_grad_by_freq(true);
    let m = Embedding::with_options(200_000, 64, opts).unwrap();
    let ids = Tensor::from([199_999i64, 3, 3, 150_000, 0, 3, 77_777, 199_999]);
    let before = m.weight.detach().to_vec::<f32>().unwrap();
    let out = m.forward(&ids).unwrap();
    let after = m.weight.detach().to_vec::<f32>().unwrap();
    for r in [199_999usize, 3, 150_000, 0, 77_777] {
        let want = renormed_row(&before[r * 64..(r + 1) * 64], 2.0);
        for (a, b) in after[r * 64..(r + 1) * 64].iter().zip(&want) {
            assert!((*a as f64 - b).abs() <= 1e-6);
        }
    }
    assert_eq!(before[64 * 5..64 * 6], after[64 * 5..64 * 6]);
    out.sum().unwrap().backward().unwrap();
    let g = m.weight.grad().unwrap();
    // Row 3 is read three times: its gradient is 3 / 3 = 1.
    assert_eq!(g.select(0, 3).unwrap().to_vec::<f32>().unwrap(), [1.0; 64]);
    assert_eq!(g.select(0, 4).unwrap().to_vec::<f32>().unwrap(), [0.0; 64]);
}

// ---- 2. out-of-range ids with max_norm ------------------------------------------------

#[test]
fn embedding_max_norm_out_of_range_ids_error_as_pytorch() {
    let m = Embedding::with_options(5, 3, EmbeddingOptions::default().max_norm(Some(1.0))).unwrap();
    let before = vals(&m.weight);
    // PyTorch's embedding_renorm_ visits the ids sorted and selects each row:
    // `IndexError: select(): index 7 out of range for tensor of size [5, 3] at dimension 0`.
    for (ids, bad) in [
        (vec![1i64, 7], 7),
        (vec![7, 1, 9], 7),
        (vec![-9, 7], -9),
        (vec![5], 5),
    ] {
        let n = ids.len();
        let e = err(m.forward(&Tensor::from_vec(ids, &[n]).unwrap()));
        assert_eq!(
            e,
            format!(
                "embedding_renorm_: select(): index {bad} out of range for tensor of size [5, 3] at dimension 0"
            )
        );
        assert!(!e.contains("one_hot"), "{e}");
    }
    // A negative id PyTorch's select wraps ends in the lookup's
    // `IndexError: index out of range in self`.
    let e = err(m.forward(&Tensor::from([1i64, -1])));
    assert!(e.ends_with("index out of range in self"), "{e}");
    let e = err(F::embedding_with(
        &Tensor::from([2i64, 6]),
        &m.weight,
        None,
        Some(1.0),
        2.0,
        false,
    ));
    assert_eq!(
        e,
        "embedding_renorm_: select(): index 6 out of range for tensor of size [5, 3] at dimension 0"
    );
    // Float ids: PyTorch's `Expected tensor for argument #2 'indices' to have one of the
    // following scalar types: Long, Int; but got torch.FloatTensor instead (while checking
    // arguments for embedding_renorm_)`.
    let e = err(F::embedding_with(
        &Tensor::from([1.0f32, 2.0]),
        &m.weight,
        None,
        Some(1.0),
        2.0,
        false,
    ));
    assert!(
        e.starts_with("embedding_renorm_: Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got"),
        "{e}"
    );
    // Nothing was renormalised by a failing call (PyTorch may have rescaled the rows it
    // visited before the bad id; kiln checks every id first).
    assert_eq!(vals(&m.weight), before);
}

// ---- 3. BatchNorm state dicts without num_batches_tracked -------------------------------

fn bn_state_without_counter<M: Module>(m: &M) -> StateDict {
    m.state_dict()
        .into_iter()
        .filter(|(k, _)| !k.ends_with("num_batches_tracked"))
        .map(|(k, t)| (k, t.to_dtype(F64).unwrap().add_scalar(0.5).unwrap()))
        .collect()
}

fn check_bn_load<M: Module>(mut target: M, source: &M, prefix: &str) {
    let counter = format!("{prefix}num_batches_tracked");
    let state = bn_state_without_counter(source);
    assert!(!state.contains_key(&counter));
    // The module's own counter stays (PyTorch's _NormBase._load_from_state_dict puts the
    // module's current value in the state dict before loading).
    let before = target.state_dict();
    before.get(&counter).unwrap().fill_(7i64).unwrap();
    let r = target.load_state_dict(&state, true).unwrap();
    assert_eq!(r, IncompatibleKeys::default());
    let after = target.state_dict();
    assert_eq!(after.get(&counter).unwrap().item::<i64>().unwrap(), 7);
    let rm = format!("{prefix}running_mean");
    assert_eq!(
        vals(after.get(&rm).unwrap()),
        vals(state.get(&rm).unwrap()),
        "the other buffers are loaded"
    );
    // Not strict: not reported missing either.
    let r = target.load_state_dict(&state, false).unwrap();
    assert!(r.missing_keys.is_empty(), "{r:?}");
    // Other keys are still required.
    let mut partial = state.clone();
    partial.remove(&rm);
    let e = err(target.load_state_dict(&partial, true));
    assert!(
        e.contains(&format!("Missing key(s) in state_dict: \"{rm}\".")),
        "{e}"
    );
    assert!(!e.contains("num_batches_tracked"), "{e}");
}

#[test]
fn batchnorm_loads_state_dicts_without_num_batches_tracked() {
    check_bn_load(
        BatchNorm1d::new(3).unwrap(),
        &BatchNorm1d::new(3).unwrap(),
        "",
    );
    check_bn_load(
        BatchNorm2d::new(4).unwrap(),
        &BatchNorm2d::new(4).unwrap(),
        "",
    );
    check_bn_load(
        BatchNorm3d::new(2).unwrap(),
        &BatchNorm3d::new(2).unwrap(),
        "",
    );
    let seq = || {
        Sequential::new()
            .add(Linear::new(2, 3).unwrap())
            .add(BatchNorm1d::new(3).unwrap())
    };
    check_bn_load(seq(), &seq(), "1.");
    // A fresh module keeps its 0.
    let mut bn = BatchNorm2d::new(4).unwrap();
    bn.load_state_dict(
        &bn_state_without_counter(&BatchNorm2d::new(4).unwrap()),
        true,
    )
    .unwrap();
    assert_eq!(
        bn.num_batches_tracked
            .as_ref()
            .unwrap()
            .item::<i64>()
            .unwrap(),
        0
    );
    // Without running stats there is no counter to miss.
    let opts = BatchNormOptions::default().track_running_stats(false);
    let mut bn = BatchNorm1d::with_options(3, opts).unwrap();
    let state = BatchNorm1d::with_options(3, opts).unwrap().state_dict();
    assert_eq!(state.keys().collect::<Vec<_>>(), ["weight", "bias"]);
    bn.load_state_dict(&state, true).unwrap();
    // A module that is not a BatchNorm still needs its keys, whatever they are called.
    #[derive(Module)]
    #[module(crate = kiln_nn)]
    struct Counter {
        #[module(buffer)]
        num_batches_tracked: Tensor,
    }
    let mut c = Counter {
        num_batches_tracked: Tensor::zeros((), DType::I64).unwrap(),
    };
    let e = err(c.load_state_dict(&StateDict::new(), true));
    assert!(
        e.contains("Missing key(s) in state_dict: \"num_batches_tracked\"."),
        "{e}"
    );
}

// ---- 4. one BatchNorm shared by threads ------------------------------------------------

#[test]
fn shared_batchnorm_counts_every_pass() {
    let bn = BatchNorm1d::new(2).unwrap();
    let x = Tensor::ones([2, 2], DType::F32).unwrap();
    let (threads, passes) = (8, 300);
    let start = std::sync::Barrier::new(threads as usize);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                start.wait();
                for _ in 0..passes {
                    let _g = no_grad();
                    bn.forward(&x).unwrap();
                }
            });
        }
    });
    assert_eq!(
        bn.num_batches_tracked
            .as_ref()
            .unwrap()
            .item::<i64>()
            .unwrap(),
        threads * passes
    );
}

#[test]
fn shared_batchnorm_running_stats_match_sequential_pytorch() {
    // 4 threads x 16 passes over one batch must end where PyTorch's 64 sequential passes
    // do: each update reads and writes the running statistics at once.
    // x[i, c] = (7i + 3c) % 11 + c / 2, as gen_layer_edge_cases.py.
    let x: Vec<f64> = (0..2048)
        .flat_map(|i| (0..3).map(move |c| ((7 * i + 3 * c) % 11) as f64 + c as f64 / 2.0))
        .collect();
    let x = Tensor::from_vec(x, &[2048, 3]).unwrap();
    for _ in 0..5 {
        let bn = BatchNorm1d::with_options(3, BatchNormOptions::default().dtype(F64)).unwrap();
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..16 {
                        bn.forward(&x).unwrap();
                    }
                });
            }
        });
        assert_eq!(
            bn.num_batches_tracked
                .as_ref()
                .unwrap()
                .item::<i64>()
                .unwrap(),
            64
        );
        assert_close(
            "running_mean",
            bn.running_mean.as_ref().unwrap(),
            &reference("bn_shared", "running_mean"),
            1e-12,
        );
        assert_close(
            "running_var",
            bn.running_var.as_ref().unwrap(),
            &reference("bn_shared", "running_var"),
            1e-12,
        );
    }
}

// ---- 5. error messages name the layer once --------------------------------------------

#[test]
fn layer_errors_name_the_layer_once() {
    let z = |s: &[usize]| Tensor::zeros(s, DType::F32).unwrap();
    // PyTorch: `ValueError: LSTM: Expected input to be 2D or 3D, got 4D instead`.
    let e = err(LSTM::new(3, 4).unwrap().forward(&z(&[1, 2, 3, 3]), None));
    assert_eq!(
        e,
        "LSTM: Expected input to be 2D or 3D, got 4D instead (input of shape [1, 2, 3, 3])"
    );
    let e = err(GRU::new(3, 4).unwrap().forward(&z(&[1, 2, 3, 3]), None));
    assert_eq!(
        e,
        "GRU: Expected input to be 2D or 3D, got 4D instead (input of shape [1, 2, 3, 3])"
    );
    // PyTorch's RNN says "tensor" here.
    let e = err(RNN::new(3, 4).unwrap().forward(&z(&[3]), None));
    assert_eq!(
        e,
        "RNN: Expected input to be 2D or 3D, got 1D tensor instead (input of shape [3])"
    );
    // PyTorch: `ValueError: GRUCell: Expected input to be 1D or 2D, got 3D instead`.
    let e = err(GRUCell::new(3, 4).unwrap().forward(&z(&[1, 2, 3]), None));
    assert_eq!(
        e,
        "GRUCell: Expected input to be 1D or 2D, got 3D instead (input of shape [1, 2, 3])"
    );
    let e = err(LSTMCell::new(3, 4).unwrap().forward(&z(&[1, 2, 3]), None));
    assert_eq!(
        e,
        "LSTMCell: Expected input to be 1D or 2D, got 3D instead (input of shape [1, 2, 3])"
    );
    // Hidden states: PyTorch's `hidden0 has inconsistent hidden_size: got 5, expected 4`
    // and `Input batch size 2 doesn't match hidden1 batch size 3`.
    let e = err(GRUCell::new(3, 4)
        .unwrap()
        .forward(&z(&[2, 3]), Some(&z(&[2, 5]))));
    assert_eq!(
        e,
        "GRUCell: hidden0 has inconsistent hidden_size: got 5, expected 4"
    );
    let e = err(RNNCell::new(3, 4)
        .unwrap()
        .forward(&z(&[2, 3]), Some(&z(&[3, 4]))));
    assert_eq!(
        e,
        "RNNCell: Input batch size 2 doesn't match hidden0 batch size 3"
    );
    let e = err(LSTMCell::new(3, 4)
        .unwrap()
        .forward(&z(&[2, 3]), Some((&z(&[2, 4]), &z(&[3, 4])))));
    assert_eq!(
        e,
        "LSTMCell: Input batch size 2 doesn't match hidden1 batch size 3"
    );
    // Dropout1d/2d/3d (PyTorch: `dropout1d: Expected 2D or 3D input, but received a 4D input`).
    let e = err(Dropout1d::new(0.5).unwrap().forward(&z(&[2, 3, 4, 5])));
    assert_eq!(
        e,
        "Dropout1d: Expected 2D or 3D input, but received a 4D input of size [2, 3, 4, 5]"
    );
    let e = err(Dropout3d::new(0.5).unwrap().forward(&z(&[2, 3])));
    assert_eq!(
        e,
        "Dropout3d: Expected 4D or 5D input, but received a 2D input of size [2, 3]"
    );
    // F.batch_norm / F.instance_norm through the core ops.
    let e = err(F::batch_norm_with(
        &z(&[3]),
        None,
        None,
        None,
        None,
        true,
        0.1,
        1e-5,
    ));
    assert_eq!(e, "batch_norm: expected 2D or higher input (got 1D input)");
    // No message anywhere starts with its op twice.
    for e in [
        err(LSTM::new(3, 4).unwrap().forward(&z(&[3, 5]), None)),
        err(GRUCell::new(3, 4).unwrap().forward(&z(&[2, 5]), None)),
        err(BatchNorm2d::new(3).unwrap().forward(&z(&[2, 3]))),
    ] {
        let head = e.split(": ").next().unwrap();
        assert!(!e[head.len() + 2..].starts_with(head), "{e}");
    }
}
