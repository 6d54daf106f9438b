//! Hand-written tests of the `torch.nn.functional` composites: behaviour the OpInfo matrix
//! cannot check (randomness, in-place running statistics, gradients that must be exactly
//! zero, index outputs, adjointness, equivalent call forms).
//!
//! Expected values are worked out by hand, computed with plain float64 loops in this file, or
//! taken from PyTorch's documented behaviour; no test compares a kiln kernel against itself.

use kiln::{DType, Tensor};
use std::sync::Mutex;

/// Tests that use the global generator hold this lock, so no other test draws from it
/// between a reseed and the draws that follow.
static GLOBAL_RNG: Mutex<()> = Mutex::new(());

fn global_rng_lock() -> std::sync::MutexGuard<'static, ()> {
    GLOBAL_RNG.lock().unwrap_or_else(|e| e.into_inner())
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn tensor(data: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(data, shape).unwrap()
}

/// Deterministic values in [-1, 1) from Rust arithmetic (no kernel, no generator).
fn wave(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            // xorshift64*
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let r = s.wrapping_mul(0x2545_F491_4F6C_DD1D);
            (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}\n got: {got:?}\nwant: {want:?}"
        );
    }
}

mod dropout {
    use super::*;

    const N: usize = 100_000;
    const P: f64 = 0.3;

    fn input() -> Tensor {
        // Nonzero values, so output / input recovers the mask.
        let x: Vec<f64> = (0..N).map(|i| 1.0 + (i % 7) as f64).collect();
        tensor(x, &[N])
    }

    #[test]
    fn keeps_about_one_minus_p_scaled_by_its_inverse_and_zeroes_the_rest() {
        let _g = global_rng_lock();
        kiln::manual_seed(7);
        let x = input();
        let y = kiln::dropout(&x, P, true).unwrap();
        let (xs, ys) = (f64s(&x), f64s(&y));
        let mut kept = 0usize;
        for (&xi, &yi) in xs.iter().zip(&ys) {
            if yi == 0.0 {
                continue;
            }
            kept += 1;
            assert_eq!(yi, xi / (1.0 - P), "a kept value is x / (1 - p)");
        }
        // Binomial(N, 1 - p): standard deviation sqrt(p (1 - p) / N) of the fraction.
        let frac = kept as f64 / N as f64;
        let sd = (P * (1.0 - P) / N as f64).sqrt();
        assert!(
            (frac - (1.0 - P)).abs() < 5.0 * sd,
            "kept fraction {frac}, expected {} ± {}",
            1.0 - P,
            5.0 * sd
        );
    }

    #[test]
    fn gradient_is_the_mask_over_one_minus_p() {
        let _g = global_rng_lock();
        kiln::manual_seed(11);
        let x = input().requires_grad_(true).unwrap();
        let y = kiln::dropout(&x, P, true).unwrap();
        y.sum().unwrap().backward().unwrap();
        let (xs, ys, gs) = (f64s(&x), f64s(&y), f64s(&x.grad().unwrap()));
        for i in 0..N {
            // d y_i / d x_i = y_i / x_i: 0 where dropped, 1 / (1 - p) where kept.
            let want = if ys[i] == 0.0 { 0.0 } else { 1.0 / (1.0 - P) };
            assert_eq!(gs[i], want, "element {i}");
            assert!((gs[i] - ys[i] / xs[i]).abs() < 1e-12, "element {i}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_mask() {
        let _g = global_rng_lock();
        let x = input();
        let mask = |seed| {
            kiln::manual_seed(seed);
            let y = f64s(&kiln::dropout(&x, 0.5, true).unwrap());
            y.iter().map(|&v| v != 0.0).collect::<Vec<bool>>()
        };
        let a = mask(3);
        assert_eq!(a, mask(3));
        assert_ne!(a, mask(4), "another seed gives another mask");
    }

    #[test]
    fn evaluation_p_zero_and_p_one() {
        let x = input();
        assert_eq!(f64s(&kiln::dropout(&x, 0.9, false).unwrap()), f64s(&x));
        assert_eq!(f64s(&kiln::dropout(&x, 0.0, true).unwrap()), f64s(&x));
        assert!(f64s(&kiln::dropout(&x, 1.0, true).unwrap())
            .iter()
            .all(|&v| v == 0.0));
        let e = kiln::dropout(&x, 1.5, true).unwrap_err().to_string();
        assert!(
            e.contains("dropout probability has to be between 0 and 1, but got 1.5"),
            "{e}"
        );
    }
}

mod embedding {
    use super::*;

    /// 5 rows of 3: row r is [10r, 10r + 1, 10r + 2].
    fn weight() -> Tensor {
        let w: Vec<f64> = (0..5)
            .flat_map(|r| (0..3).map(move |c| (10 * r + c) as f64))
            .collect();
        tensor(w, &[5, 3]).requires_grad_(true).unwrap()
    }

    /// Indices [[0, 2, 0], [4, 2, 3]]: row 0 twice, row 2 twice, rows 3 and 4 once, row 1 never.
    fn indices() -> Tensor {
        Tensor::from([[0i64, 2, 0], [4, 2, 3]])
    }

    fn grad_rows(padding_idx: i64) -> Vec<f64> {
        let w = weight();
        let y = kiln::embedding_with(&w, &indices(), padding_idx, false, false).unwrap();
        assert_eq!(y.shape(), &[2, 3, 3]);
        // The forward still reads the padding row (PyTorch only freezes its gradient).
        let want_rows = [0, 2, 0, 4, 2, 3];
        let want: Vec<f64> = want_rows
            .iter()
            .flat_map(|&r| (0..3).map(move |c| (10 * r + c) as f64))
            .collect();
        assert_eq!(f64s(&y), want);
        y.sum().unwrap().backward().unwrap();
        f64s(&w.grad().unwrap())
    }

    /// The gradient of `sum(embedding(w, indices))`: each row counts its uses, except the
    /// padding row, which gets none.
    fn counted(padding_row: Option<usize>) -> Vec<f64> {
        let counts = [2.0, 0.0, 2.0, 1.0, 1.0];
        (0..5)
            .flat_map(|r| {
                let c = if Some(r) == padding_row {
                    0.0
                } else {
                    counts[r]
                };
                [c; 3]
            })
            .collect()
    }

    #[test]
    fn the_padding_row_gets_exactly_zero_gradient() {
        assert_eq!(grad_rows(2), counted(Some(2)));
    }

    #[test]
    fn a_negative_padding_idx_counts_from_the_end() {
        // -2 is row 5 - 2 = 3, as F.embedding converts it.
        assert_eq!(grad_rows(-2), counted(Some(3)));
        assert_eq!(grad_rows(-5), counted(Some(0)));
    }

    #[test]
    fn padding_idx_minus_one_is_no_padding() {
        // torch.embedding's own default: -1 means no padding row.
        assert_eq!(grad_rows(-1), counted(None));
    }

    #[test]
    fn gradient_accumulates_the_upstream_values_per_row() {
        let w = weight();
        let y = kiln::embedding_with(&w, &indices(), 0, false, false).unwrap();
        // Upstream gradient g[i, j, c] = 100 i + 10 j + c.
        let g: Vec<f64> = (0..2)
            .flat_map(|i| {
                (0..3).flat_map(move |j| (0..3).map(move |c| (100 * i + 10 * j + c) as f64))
            })
            .collect();
        y.mul(&tensor(g, &[2, 3, 3]))
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        // Row 2 gets positions (0,1) and (1,1): [10, 11, 12] + [110, 111, 112]; row 4 gets
        // (1,0): [100, 101, 102]; row 3 gets (1,2): [120, 121, 122]; row 0 is padding.
        let want = vec![
            0., 0., 0., //
            0., 0., 0., //
            120., 122., 124., //
            120., 121., 122., //
            100., 101., 102.,
        ];
        assert_eq!(f64s(&w.grad().unwrap()), want);
    }

    #[test]
    fn padding_idx_outside_the_table_is_an_error() {
        let e = kiln::embedding_with(&weight(), &indices(), 5, false, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Padding_idx must be within num_embeddings"),
            "{e}"
        );
    }
}

mod embedding_bag {
    use super::*;

    /// `embedding_bag(w, indices, offsets)` in `mode`, with `upstream` (`[bags, D]`)
    /// backpropagated: (output, `w`'s gradient, max_indices).
    fn weight_grad(
        w: &Tensor,
        indices: &[i64],
        offsets: &[i64],
        mode: i64,
        scale_grad_by_freq: bool,
        upstream: Vec<f64>,
    ) -> (Vec<f64>, Vec<f64>, Tensor) {
        let (out, _, _, max_indices) = kiln::embedding_bag_with(
            w,
            &Tensor::from(indices.to_vec()),
            &Tensor::from(offsets.to_vec()),
            scale_grad_by_freq,
            mode,
            false,
            None,
            false,
            None,
        )
        .unwrap();
        let g = tensor(upstream, out.shape());
        out.mul(&g).unwrap().sum().unwrap().backward().unwrap();
        (f64s(&out), f64s(&w.grad().unwrap()), max_indices)
    }

    #[test]
    fn scale_grad_by_freq_divides_each_rows_gradient_by_its_count() {
        // Bags [0, 0] and [1, 2, 0]: row 0 occurs 3 times, rows 1 and 2 once.
        let w = tensor(vec![1., 2., 3., 4., 5., 6., 7., 8.], &[4, 2])
            .requires_grad_(true)
            .unwrap();
        let (out, grad, _) = weight_grad(
            &w,
            &[0, 0, 1, 2, 0],
            &[0, 2],
            0,
            true,
            vec![1., 2., 10., 20.],
        );
        // The forward is the plain sum.
        assert_eq!(out, vec![2., 4., 9., 12.]);
        // Row 0: (g0 + g0 + g1) / 3 (each use scaled by 1/3); rows 1 and 2: g1; row 3: unused.
        assert_close(&grad, &[4., 8., 10., 20., 10., 20., 0., 0.], 1e-12);
    }

    #[test]
    fn max_mode_sends_each_gradient_to_the_row_its_maximum_came_from() {
        // Bag 0 = rows [0, 1, 2]: column maxima 5 (row 1) and 8 (row 0). Bag 1 is empty: zeros,
        // and its upstream gradient must not reach row 0 through its max index 0.
        let w = tensor(vec![1., 8., 5., 2., 3., 3.], &[3, 2])
            .requires_grad_(true)
            .unwrap();
        let (out, grad, max_indices) =
            weight_grad(&w, &[0, 1, 2], &[0, 3], 2, false, vec![10., 20., 7., 7.]);
        assert_eq!(out, vec![5., 8., 0., 0.]);
        assert_eq!(max_indices.to_vec::<i64>().unwrap(), vec![1, 0, 0, 0]);
        assert_eq!(grad, vec![0., 20., 10., 0., 0., 0.]);
    }

    #[test]
    fn half_weights_are_summed_in_float32() {
        // 2048 + 1 + 1: in float16 each addition of 1 rounds back to 2048 (ties to even);
        // accumulated in float32 and rounded once, as PyTorch's CPU kernel does, it is 2050.
        let w = Tensor::from_vec(vec![2048f32, 1.], &[2, 1])
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        let out = kiln::embedding_bag_with(
            &w,
            &Tensor::from(vec![0i64, 1, 1]),
            &Tensor::from(vec![0i64]),
            false,
            0,
            false,
            None,
            false,
            None,
        )
        .unwrap()
        .0;
        assert_eq!(out.dtype(), DType::F16);
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![2050.]);
    }

    #[test]
    fn the_functional_form_takes_a_2d_batch_as_equal_bags() {
        // F.embedding_bag(input=[[0, 2], [1, 1]], weight, mode="sum").
        let w = tensor(vec![1., 10., 100.], &[3, 1]);
        let out = kiln::embedding_bag_functional_with(
            &Tensor::from([[0i64, 2], [1, 1]]),
            &w,
            None,
            false,
            "sum",
            false,
            None,
            false,
            None,
        )
        .unwrap();
        assert_eq!(f64s(&out), vec![101., 20.]);
    }
}

mod normalization {
    use super::*;

    const MOMENTUM: f64 = 0.1;
    const EPS: f64 = 1e-5;

    /// Per-channel (dim 1) mean, biased and unbiased variance of an `[N, C, L]` input, by loops.
    fn channel_stats(x: &[f64], n: usize, c: usize, l: usize) -> Vec<(f64, f64, f64)> {
        (0..c)
            .map(|ch| {
                let vals: Vec<f64> = (0..n)
                    .flat_map(|b| (0..l).map(move |i| (b, i)))
                    .map(|(b, i)| x[(b * c + ch) * l + i])
                    .collect();
                let m = vals.iter().sum::<f64>() / vals.len() as f64;
                let ss: f64 = vals.iter().map(|v| (v - m) * (v - m)).sum();
                (m, ss / vals.len() as f64, ss / (vals.len() - 1) as f64)
            })
            .collect()
    }

    #[test]
    fn batch_norm_training_updates_running_stats_with_pytorchs_rule() {
        let (n, c, l) = (4, 2, 3);
        let x: Vec<f64> = wave(n * c * l, 1).iter().map(|v| 3.0 * v + 0.5).collect();
        let (rm0, rv0) = (vec![0.5, -1.0], vec![2.0, 0.25]);
        let (w, b) = (vec![1.5, -0.5], vec![0.1, 0.2]);
        let rm = tensor(rm0.clone(), &[c]);
        let rv = tensor(rv0.clone(), &[c]);
        let y = kiln::batch_norm(
            &tensor(x.clone(), &[n, c, l]),
            Some(&tensor(w.clone(), &[c])),
            Some(&tensor(b.clone(), &[c])),
            Some(&rm),
            Some(&rv),
            true,
            MOMENTUM,
            EPS,
            false,
        )
        .unwrap();
        let stats = channel_stats(&x, n, c, l);
        // running = (1 - momentum) running + momentum batch, the variance unbiased.
        let want_rm: Vec<f64> = (0..c)
            .map(|ch| (1.0 - MOMENTUM) * rm0[ch] + MOMENTUM * stats[ch].0)
            .collect();
        let want_rv: Vec<f64> = (0..c)
            .map(|ch| (1.0 - MOMENTUM) * rv0[ch] + MOMENTUM * stats[ch].2)
            .collect();
        assert_close(&f64s(&rm), &want_rm, 1e-12);
        assert_close(&f64s(&rv), &want_rv, 1e-12);
        // The output is normalized with the batch's biased variance.
        let want_y: Vec<f64> = (0..n * c * l)
            .map(|k| {
                let ch = (k / l) % c;
                let (m, var, _) = stats[ch];
                (x[k] - m) / (var + EPS).sqrt() * w[ch] + b[ch]
            })
            .collect();
        assert_close(&f64s(&y), &want_y, 1e-12);
    }

    #[test]
    fn batch_norm_evaluation_uses_and_keeps_the_running_stats() {
        let (n, c, l) = (3, 2, 2);
        let x = wave(n * c * l, 2);
        let (rm0, rv0) = (vec![0.25, -0.5], vec![4.0, 0.5]);
        let rm = tensor(rm0.clone(), &[c]);
        let rv = tensor(rv0.clone(), &[c]);
        let y = kiln::batch_norm(
            &tensor(x.clone(), &[n, c, l]),
            None,
            None,
            Some(&rm),
            Some(&rv),
            false,
            MOMENTUM,
            EPS,
            false,
        )
        .unwrap();
        let want: Vec<f64> = (0..n * c * l)
            .map(|k| {
                let ch = (k / l) % c;
                (x[k] - rm0[ch]) / (rv0[ch] + EPS).sqrt()
            })
            .collect();
        assert_close(&f64s(&y), &want, 1e-12);
        assert_eq!(f64s(&rm), rm0);
        assert_eq!(f64s(&rv), rv0);
    }

    #[test]
    fn batch_norm_running_stats_do_not_take_part_in_autograd() {
        let x = tensor(wave(12, 3), &[3, 2, 2])
            .requires_grad_(true)
            .unwrap();
        let rm = tensor(vec![0.0, 0.0], &[2]);
        let rv = tensor(vec![1.0, 1.0], &[2]);
        let y =
            kiln::batch_norm(&x, None, None, Some(&rm), Some(&rv), true, 0.1, EPS, false).unwrap();
        assert!(!rm.requires_grad() && !rv.requires_grad());
        y.sum().unwrap().backward().unwrap();
        // Normalized values sum to zero per channel whatever x is: the gradient of their sum
        // is 0.
        assert_close(&f64s(&x.grad().unwrap()), &[0.0; 12], 1e-9);
    }

    #[test]
    fn instance_norm_updates_running_stats_with_the_mean_of_the_instances() {
        // PyTorch's instance_norm: batch norm of the input viewed as [1, N*C, *] with the
        // running stats repeated N times, then each running stat is the mean over the batch
        // of its N updated copies: (1 - m) running + m mean_n(stat of instance n).
        let (n, c, l) = (2, 3, 4);
        let x: Vec<f64> = wave(n * c * l, 4).iter().map(|v| 2.0 * v - 0.3).collect();
        let (rm0, rv0) = (vec![0.1, 0.2, 0.3], vec![1.0, 2.0, 3.0]);
        let rm = tensor(rm0.clone(), &[c]);
        let rv = tensor(rv0.clone(), &[c]);
        let (w, b) = (vec![2.0, 1.0, 0.5], vec![0.0, -1.0, 1.0]);
        let y = kiln::instance_norm(
            &tensor(x.clone(), &[n, c, l]),
            Some(&tensor(w.clone(), &[c])),
            Some(&tensor(b.clone(), &[c])),
            Some(&rm),
            Some(&rv),
            true,
            MOMENTUM,
            EPS,
            false,
        )
        .unwrap();
        // Per instance (b, ch): stats over its l values.
        let inst = |bi: usize, ch: usize| {
            let v = &x[(bi * c + ch) * l..(bi * c + ch + 1) * l];
            let m = v.iter().sum::<f64>() / l as f64;
            let ss: f64 = v.iter().map(|t| (t - m) * (t - m)).sum();
            (m, ss / l as f64, ss / (l - 1) as f64)
        };
        let want_rm: Vec<f64> = (0..c)
            .map(|ch| {
                let mean_of_means = (0..n).map(|bi| inst(bi, ch).0).sum::<f64>() / n as f64;
                (1.0 - MOMENTUM) * rm0[ch] + MOMENTUM * mean_of_means
            })
            .collect();
        let want_rv: Vec<f64> = (0..c)
            .map(|ch| {
                let mean_of_vars = (0..n).map(|bi| inst(bi, ch).2).sum::<f64>() / n as f64;
                (1.0 - MOMENTUM) * rv0[ch] + MOMENTUM * mean_of_vars
            })
            .collect();
        assert_close(&f64s(&rm), &want_rm, 1e-12);
        assert_close(&f64s(&rv), &want_rv, 1e-12);
        let want_y: Vec<f64> = (0..n * c * l)
            .map(|k| {
                let (bi, ch) = (k / (c * l), (k / l) % c);
                let (m, var, _) = inst(bi, ch);
                (x[k] - m) / (var + EPS).sqrt() * w[ch] + b[ch]
            })
            .collect();
        assert_close(&f64s(&y), &want_y, 1e-12);
    }

    #[test]
    fn instance_norm_without_input_stats_uses_the_running_stats() {
        let (n, c, l) = (2, 2, 3);
        let x = wave(n * c * l, 5);
        let (rm0, rv0) = (vec![0.5, -0.5], vec![0.25, 4.0]);
        let rm = tensor(rm0.clone(), &[c]);
        let rv = tensor(rv0.clone(), &[c]);
        let y = kiln::instance_norm(
            &tensor(x.clone(), &[n, c, l]),
            None,
            None,
            Some(&rm),
            Some(&rv),
            false,
            MOMENTUM,
            EPS,
            false,
        )
        .unwrap();
        let want: Vec<f64> = (0..n * c * l)
            .map(|k| {
                let ch = (k / l) % c;
                (x[k] - rm0[ch]) / (rv0[ch] + EPS).sqrt()
            })
            .collect();
        assert_close(&f64s(&y), &want, 1e-12);
        assert_close(&f64s(&rm), &rm0, 1e-15);
        assert_close(&f64s(&rv), &rv0, 1e-15);
    }

    /// Elements sharing statistics: `group[i]` and the parameter index `param[i]` of
    /// element i, `count` groups.
    struct Grouping {
        group: Vec<usize>,
        param: Vec<usize>,
        count: usize,
    }

    /// Loop reference of a normalization: `y`, and the gradients of `Σ go * y` with
    /// respect to x, w, b, for statistics over each group (biased variance; `center`: mean
    /// subtracted) or, when `running` is given, those fixed statistics (mean, variance).
    #[allow(clippy::too_many_arguments)]
    fn reference(
        gr: &Grouping,
        x: &[f64],
        w: &[f64],
        b: &[f64],
        go: &[f64],
        eps: f64,
        center: bool,
        running: Option<(&[f64], &[f64])>,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut k = vec![0.0; gr.count];
        let mut mean = vec![0.0; gr.count];
        for (i, &g) in gr.group.iter().enumerate() {
            k[g] += 1.0;
            mean[g] += x[i];
        }
        for g in 0..gr.count {
            mean[g] = if center { mean[g] / k[g] } else { 0.0 };
        }
        let mut var = vec![0.0; gr.count];
        for (i, &g) in gr.group.iter().enumerate() {
            var[g] += (x[i] - mean[g]).powi(2) / k[g];
        }
        if let Some((rm, rv)) = running {
            mean = rm.to_vec();
            var = rv.to_vec();
        }
        let rstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let xhat: Vec<f64> = (0..x.len())
            .map(|i| (x[i] - mean[gr.group[i]]) * rstd[gr.group[i]])
            .collect();
        let y = (0..x.len())
            .map(|i| xhat[i] * w[gr.param[i]] + b[gr.param[i]])
            .collect();
        let a: Vec<f64> = (0..x.len()).map(|i| go[i] * w[gr.param[i]]).collect();
        let (mut s1, mut s2) = (vec![0.0; gr.count], vec![0.0; gr.count]);
        for (i, &g) in gr.group.iter().enumerate() {
            s1[g] += a[i] / k[g];
            s2[g] += a[i] * xhat[i] / k[g];
        }
        let dx = (0..x.len())
            .map(|i| {
                let g = gr.group[i];
                let v = match (running, center) {
                    (Some(_), _) => a[i],
                    (None, true) => a[i] - s1[g] - xhat[i] * s2[g],
                    (None, false) => a[i] - xhat[i] * s2[g],
                };
                rstd[g] * v
            })
            .collect();
        let (mut dw, mut db) = (vec![0.0; w.len()], vec![0.0; w.len()]);
        for i in 0..x.len() {
            dw[gr.param[i]] += go[i] * xhat[i];
            db[gr.param[i]] += go[i];
        }
        (y, dx, dw, db)
    }

    fn leaf(data: Vec<f64>, shape: &[usize]) -> Tensor {
        tensor(data, shape).requires_grad_(true).unwrap()
    }

    /// Runs `f(x, w, b)` forward and backward with output gradient `go`.
    fn run(
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        go: &[f64],
        f: impl Fn(&Tensor, &Tensor, &Tensor) -> Tensor,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let y = f(x, w, b);
        y.backward_with(Some(&tensor(go.to_vec(), y.shape())), false, false)
            .unwrap();
        let grad = |t: &Tensor| t.grad().map_or(vec![0.0; t.numel()], |g| f64s(&g));
        (f64s(&y), grad(x), grad(w), grad(b))
    }

    #[track_caller]
    fn check(
        got: (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>),
        want: (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>),
    ) {
        assert_close(&got.0, &want.0, 1e-10);
        assert_close(&got.1, &want.1, 1e-9);
        assert_close(&got.2, &want.2, 1e-9);
        assert_close(&got.3, &want.3, 1e-9);
    }

    #[test]
    fn fused_kernels_split_over_threads_match_loops() {
        // Every input is past the size at which the kernels fan out over threads, and the
        // row counts exceed the 64 partial sums of the parameter gradients.
        let (m, n) = (130, 257);
        let rows = Grouping {
            group: (0..m * n).map(|i| i / n).collect(),
            param: (0..m * n).map(|i| i % n).collect(),
            count: m,
        };
        let (x, go) = (wave(m * n, 11), wave(m * n, 12));
        let (w, b) = (wave(n, 13), wave(n, 14));
        let no_bias = vec![0.0; n];
        let (xt, wt, bt) = (
            leaf(x.clone(), &[m, n]),
            leaf(w.clone(), &[n]),
            leaf(b.clone(), &[n]),
        );
        let got = run(&xt, &wt, &bt, &go, |x, w, b| {
            kiln::layer_norm_with(x, [n as i64], Some(w), Some(b), 1e-5, true).unwrap()
        });
        check(got, reference(&rows, &x, &w, &b, &go, 1e-5, true, None));

        let (xt, wt, bt) = (
            leaf(x.clone(), &[m, n]),
            leaf(w.clone(), &[n]),
            leaf(no_bias.clone(), &[n]),
        );
        let got = run(&xt, &wt, &bt, &go, |x, w, _| {
            kiln::rms_norm_with(x, [n as i64], Some(w), Some(1e-6)).unwrap()
        });
        let want = reference(&rows, &x, &w, &no_bias, &go, 1e-6, false, None);
        check(got, (want.0, want.1, want.2, vec![0.0; n]));

        // Group norm: [3, 8, 1400] in 4 groups.
        let (nb, c, hxw, groups) = (3, 8, 1400, 4);
        let total = nb * c * hxw;
        let gr = Grouping {
            group: (0..total)
                .map(|i| (i / (c * hxw)) * groups + (i / hxw % c) / (c / groups))
                .collect(),
            param: (0..total).map(|i| i / hxw % c).collect(),
            count: nb * groups,
        };
        let (x, go) = (wave(total, 21), wave(total, 22));
        let (w, b) = (wave(c, 23), wave(c, 24));
        let (xt, wt, bt) = (
            leaf(x.clone(), &[nb, c, hxw]),
            leaf(w.clone(), &[c]),
            leaf(b.clone(), &[c]),
        );
        let got = run(&xt, &wt, &bt, &go, |x, w, b| {
            kiln::group_norm_with(x, groups as i64, Some(w), Some(b), 1e-5, true).unwrap()
        });
        check(got, reference(&gr, &x, &w, &b, &go, 1e-5, true, None));

        // Batch norm: [40, 3, 300], training and evaluation.
        let (nb, c, hxw) = (40, 3, 300);
        let total = nb * c * hxw;
        let gr = Grouping {
            group: (0..total).map(|i| i / hxw % c).collect(),
            param: (0..total).map(|i| i / hxw % c).collect(),
            count: c,
        };
        let (x, go) = (wave(total, 31), wave(total, 32));
        let (w, b) = (wave(c, 33), wave(c, 34));
        let (rm, rv) = (vec![0.1, -0.2, 0.3], vec![0.5, 1.5, 2.0]);
        for training in [true, false] {
            let (xt, wt, bt) = (
                leaf(x.clone(), &[nb, c, hxw]),
                leaf(w.clone(), &[c]),
                leaf(b.clone(), &[c]),
            );
            let (rmt, rvt) = (tensor(rm.clone(), &[c]), tensor(rv.clone(), &[c]));
            let got = run(&xt, &wt, &bt, &go, |x, w, b| {
                kiln::batch_norm(
                    x,
                    Some(w),
                    Some(b),
                    Some(&rmt),
                    Some(&rvt),
                    training,
                    0.1,
                    1e-5,
                    false,
                )
                .unwrap()
            });
            let running = (!training).then_some((&rm[..], &rv[..]));
            check(got, reference(&gr, &x, &w, &b, &go, 1e-5, true, running));
        }
    }

    #[test]
    fn half_precision_layers_keep_float32_statistics() {
        // PyTorch's opmath type: an f16 layer computes in f32 and returns f32 mean / rstd.
        let x = tensor(wave(24, 41), &[4, 6]).to_dtype(DType::F16).unwrap();
        let (y, mean, rstd) = kiln::native_layer_norm(&x, [6], None, None, 1e-5).unwrap();
        assert_eq!(
            (y.dtype(), mean.dtype(), rstd.dtype()),
            (DType::F16, DType::F32, DType::F32)
        );
        assert_eq!((mean.shape(), rstd.shape()), (&[4, 1][..], &[4, 1][..]));
        let xs = f64s(&x);
        for r in 0..4 {
            let row = &xs[r * 6..(r + 1) * 6];
            let m = row.iter().sum::<f64>() / 6.0;
            let v = row.iter().map(|a| (a - m).powi(2)).sum::<f64>() / 6.0;
            assert_close(&f64s(&mean)[r..r + 1], &[m], 1e-6);
            assert_close(&f64s(&rstd)[r..r + 1], &[1.0 / (v + 1e-5).sqrt()], 1e-5);
        }
    }
}

mod pooling_and_convolution {
    use super::*;

    /// 1 x 1 x 4 x 4; the flat index of each value in its plane is row * 4 + col.
    fn plane() -> Tensor {
        let x = vec![
            1., 5., 2., 0., //
            3., 4., 8., 7., //
            9., 0., 1., 2., //
            6., 11., 3., 10.,
        ];
        tensor(x, &[1, 1, 4, 4]).requires_grad_(true).unwrap()
    }

    #[test]
    fn max_pool2d_indices_are_flat_positions_in_the_input_plane() {
        let x = plane();
        let (v, i) = kiln::max_pool2d_with_indices_with(&x, &[2], &[2], &[0], &[1], false).unwrap();
        // Windows {1,5,3,4}, {2,0,8,7}, {9,0,6,11}, {1,2,3,10}.
        assert_eq!(v.shape(), &[1, 1, 2, 2]);
        assert_eq!(f64s(&v), vec![5., 8., 11., 10.]);
        assert_eq!(i.dtype(), DType::I64);
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 6, 13, 15]);
    }

    /// The 2x2 stride-2 pool (its own loop) on an odd-sized input, with ties and NaNs,
    /// against a float64 scan with PyTorch's CPU rule: taps in row-major order, a strictly
    /// larger value or a NaN takes over (the first of equal maxima, the last NaN).
    #[test]
    fn max_pool2d_2x2_keeps_the_first_tie_and_the_last_nan() {
        let (planes, h, w) = (6, 7, 9);
        let mut xs: Vec<f64> = (0..planes * h * w)
            .map(|i| ((i * 7 + i / 5) % 4) as f64)
            .collect();
        // Two NaNs in one window (plane 0, window (0, 0)), one in another (plane 2).
        for at in [1, w, 2 * h * w + 3 * w + 5] {
            xs[at] = f64::NAN;
        }
        let x = tensor(xs.clone(), &[2, 3, h, w]);
        let (v, i) = kiln::max_pool2d_with_indices_with(&x, &[2], &[2], &[0], &[1], false).unwrap();
        let (oh, ow) = (h / 2, w / 2);
        assert_eq!(v.shape(), &[2, 3, oh, ow]);
        let (mut want_v, mut want_i) = (Vec::new(), Vec::new());
        for p in 0..planes {
            for a in 0..oh {
                for b in 0..ow {
                    let mut best = (f64::NEG_INFINITY, -1i64);
                    for r in 2 * a..2 * a + 2 {
                        for c in 2 * b..2 * b + 2 {
                            let val = xs[p * h * w + r * w + c];
                            if best.1 < 0 || val > best.0 || val.is_nan() {
                                best = (val, (r * w + c) as i64);
                            }
                        }
                    }
                    want_v.push(best.0);
                    want_i.push(best.1);
                }
            }
        }
        assert_eq!(i.to_vec::<i64>().unwrap(), want_i);
        assert_eq!(want_i[0], w as i64, "the last of two NaNs");
        let got = f64s(&v);
        assert!(got
            .iter()
            .zip(&want_v)
            .all(|(g, w)| g == w || (g.is_nan() && w.is_nan())));
    }

    #[test]
    fn max_pool2d_with_padding_indexes_the_unpadded_input_and_routes_gradients() {
        let x = plane();
        // 3x3 windows, stride 2, padding 1: rows/cols {-1..1} and {1..3}.
        let (v, i) = kiln::max_pool2d_with_indices_with(&x, &[3], &[2], &[1], &[1], false).unwrap();
        assert_eq!(f64s(&v), vec![5., 8., 11., 11.]);
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 6, 13, 13]);
        v.sum().unwrap().backward().unwrap();
        let mut want = vec![0.0; 16];
        want[1] = 1.0;
        want[6] = 1.0;
        want[13] = 2.0; // the maximum of two windows
        assert_eq!(f64s(&x.grad().unwrap()), want);
    }

    /// 1 x 1 x 3 x 3 holding 1..9 row by row.
    fn image() -> Tensor {
        tensor((1..=9).map(f64::from).collect(), &[1, 1, 3, 3])
    }

    #[test]
    fn conv2d_with_the_identity_kernel_is_the_identity() {
        let mut k = vec![0.0; 9];
        k[4] = 1.0;
        let y =
            kiln::conv2d_with(&image(), &tensor(k, &[1, 1, 3, 3]), None, [1], [1], [1], 1).unwrap();
        assert_eq!(y.shape(), &[1, 1, 3, 3]);
        assert_eq!(f64s(&y), f64s(&image()));
    }

    #[test]
    fn conv2d_with_a_laplacian_kernel_and_zero_padding() {
        let lap = tensor(vec![0., 1., 0., 1., -4., 1., 0., 1., 0.], &[1, 1, 3, 3]);
        let y = kiln::conv2d_with(&image(), &lap, None, [1], [1], [1], 1).unwrap();
        // out(i, j) = up + down + left + right - 4 centre, outside the image 0.
        let want = vec![2., 1., -4., -3., 0., -7., -16., -11., -22.];
        assert_eq!(f64s(&y), want);
        // Stride 2 keeps the corners; a bias is added to every output.
        let bias = tensor(vec![0.5], &[1]);
        let y = kiln::conv2d_with(&image(), &lap, Some(&bias), [2], [1], [1], 1).unwrap();
        assert_eq!(f64s(&y), vec![2.5, -3.5, -15.5, -21.5]);
    }

    #[test]
    fn conv2d_is_a_cross_correlation() {
        // Not flipped: out(i, j) = x(i, j) - x(i + 1, j + 1) = -4 everywhere on 1..9.
        let k = tensor(vec![1., 0., 0., -1.], &[1, 1, 2, 2]);
        let y = kiln::conv2d(&image(), &k).unwrap();
        assert_eq!(f64s(&y), vec![-4.; 4]);
        // Two output channels from two input channels: channel o sums its kernel over both.
        let x2 = kiln::cat_with(&[image(), image().mul_scalar(10).unwrap()], 1).unwrap();
        let w = tensor(
            vec![
                1., 0., 0., 0., 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0., 0.,
            ],
            &[2, 2, 2, 2],
        );
        // o = 0: x0(i, j) + 10 x0(i + 1, j + 1); o = 1: x0(i + 1, j + 1).
        let y = kiln::conv2d(&x2, &w).unwrap();
        assert_eq!(f64s(&y), vec![51., 62., 84., 95., 5., 6., 8., 9.]);
    }

    fn dot(a: &Tensor, b: &Tensor) -> f64 {
        f64s(a).iter().zip(f64s(b)).map(|(x, y)| x * y).sum()
    }

    /// ⟨conv2d(x, w), y⟩ = ⟨x, conv_transpose2d(y, w)⟩ with the same stride, padding, dilation
    /// and groups: the transposed convolution is the adjoint (and the gradient) of the
    /// convolution.
    #[allow(clippy::too_many_arguments)]
    fn check_adjoint(
        x_shape: [usize; 4],
        w_shape: [usize; 4],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        groups: i64,
        output_padding: &[i64],
        seed: u64,
    ) {
        let numel = |s: &[usize]| s.iter().product::<usize>();
        let x = tensor(wave(numel(&x_shape), seed), &x_shape);
        let w = tensor(wave(numel(&w_shape), seed + 1), &w_shape);
        let cx = kiln::conv2d_with(&x, &w, None, stride, padding, dilation, groups).unwrap();
        let y = tensor(wave(cx.numel(), seed + 2), cx.shape());
        let ty = kiln::conv_transpose2d_with(
            &y,
            &w,
            None,
            stride,
            padding,
            output_padding,
            groups,
            dilation,
        )
        .unwrap();
        assert_eq!(
            ty.shape(),
            x.shape(),
            "conv_transpose2d gives back x's shape"
        );
        let (lhs, rhs) = (dot(&cx, &y), dot(&x, &ty));
        assert!(
            (lhs - rhs).abs() <= 1e-12 * (1.0 + lhs.abs()),
            "<conv(x), y> = {lhs} but <x, conv_transpose(y)> = {rhs}"
        );
    }

    #[test]
    fn conv_transpose2d_is_the_adjoint_of_conv2d() {
        // Stride 2, padding 1, a 3x2 kernel: outputs [3, 4] of inputs [5, 6].
        check_adjoint([2, 3, 5, 6], [4, 3, 3, 2], &[2], &[1], &[1], 1, &[0], 10);
        // Groups 2, dilation 2.
        check_adjoint([1, 4, 7, 7], [6, 2, 3, 3], &[1], &[1], &[2], 2, &[0], 20);
        // Stride 2 over a [6, 6] input leaves the last padded row and column unread, so the
        // transposed output is [5, 5] unless output_padding 1 asks for [6, 6].
        check_adjoint([1, 2, 6, 6], [3, 2, 3, 3], &[2], &[1], &[1], 1, &[1], 30);
    }
}

mod losses {
    use super::*;

    /// log Σ_c exp(row_c), directly.
    fn lse(row: &[f64]) -> f64 {
        row.iter().map(|v| v.exp()).sum::<f64>().ln()
    }

    const LOGITS: [[f64; 3]; 2] = [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]];
    const TARGET: [i64; 2] = [2, 1];

    fn logits() -> Tensor {
        Tensor::from(LOGITS)
    }

    #[test]
    fn cross_entropy_of_a_2x3_example() {
        // -log softmax(x)[t] = lse(x) - x[t], averaged over the two rows.
        let want = (0..2)
            .map(|i| lse(&LOGITS[i]) - LOGITS[i][TARGET[i] as usize])
            .sum::<f64>()
            / 2.0;
        // The first row by hand: 3 + ln(1 + e^-1 + e^-2) - 3 = 0.40760596444...
        assert!((lse(&LOGITS[0]) - 3.0 - 0.407_605_964_444_380_7).abs() < 1e-12);
        let got = kiln::cross_entropy_loss(&logits(), &Tensor::from(TARGET))
            .unwrap()
            .item::<f64>()
            .unwrap();
        assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
    }

    #[test]
    fn cross_entropy_with_label_smoothing() {
        // PyTorch: the target is (1 - ε) one_hot + ε / C, so per row
        // (1 - ε) (lse - x[t]) + ε / C Σ_c (lse - x[c]); mean over rows.
        let (eps, c) = (0.1, 3.0);
        let want = (0..2)
            .map(|i| {
                let l = lse(&LOGITS[i]);
                let nll = l - LOGITS[i][TARGET[i] as usize];
                let smooth: f64 = LOGITS[i].iter().map(|x| l - x).sum();
                (1.0 - eps) * nll + eps / c * smooth
            })
            .sum::<f64>()
            / 2.0;
        let got =
            kiln::cross_entropy_loss_with(&logits(), &Tensor::from(TARGET), None, 1, -100, eps)
                .unwrap()
                .item::<f64>()
                .unwrap();
        assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
        // The same smoothing through probability targets.
        let probs: Vec<f64> = (0..2)
            .flat_map(|i| {
                (0..3).map(move |k| {
                    let one = if k == TARGET[i] as usize { 1.0 } else { 0.0 };
                    (1.0 - eps) * one + eps / c
                })
            })
            .collect();
        let got = kiln::cross_entropy_loss(&logits(), &tensor(probs, &[2, 3]))
            .unwrap()
            .item::<f64>()
            .unwrap();
        assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
    }

    #[test]
    fn cross_entropy_sum_none_and_ignore_index() {
        let per_row: Vec<f64> = (0..2)
            .map(|i| lse(&LOGITS[i]) - LOGITS[i][TARGET[i] as usize])
            .collect();
        let t = Tensor::from(TARGET);
        let none = kiln::cross_entropy_loss_with(&logits(), &t, None, 0, -100, 0.0).unwrap();
        assert_close(&f64s(&none), &per_row, 1e-12);
        let sum = kiln::cross_entropy_loss_with(&logits(), &t, None, 2, -100, 0.0).unwrap();
        assert_close(
            &[sum.item::<f64>().unwrap()],
            &[per_row[0] + per_row[1]],
            1e-12,
        );
        // Ignoring row 1's target: the mean is over the remaining row only.
        let mean = kiln::cross_entropy_loss_with(&logits(), &t, None, 1, 1, 0.0).unwrap();
        assert_close(&[mean.item::<f64>().unwrap()], &[per_row[0]], 1e-12);
    }

    #[test]
    fn cross_entropy_runs_the_nll_and_softmax_backward_kernels() {
        // As PyTorch: log_softmax, then nll_loss_forward; backward nll_loss_backward, then
        // _log_softmax_backward_data, giving (softmax - onehot) / N.
        let x = logits().requires_grad_(true).unwrap();
        let loss = kiln::cross_entropy_loss(&x, &Tensor::from(TARGET)).unwrap();
        assert_eq!(loss.grad_fn().unwrap().name(), "NllLossForwardBackward0");
        loss.backward().unwrap();
        let want: Vec<f64> = (0..2)
            .flat_map(|i| {
                let l = lse(&LOGITS[i]);
                (0..3).map(move |k| {
                    let one = if k == TARGET[i] as usize { 1.0 } else { 0.0 };
                    ((LOGITS[i][k] - l).exp() - one) / 2.0
                })
            })
            .collect();
        assert_close(&f64s(&x.grad().unwrap()), &want, 1e-12);
    }

    #[test]
    fn nll_loss_of_a_4d_input_is_the_mean_over_pixels_in_one_kernel() {
        // [N=1, C=2, 2, 2]: each pixel picks its class; a weighted mean over total weight.
        let x = tensor(
            (0..8).map(|v| v as f64 * 0.5 - 1.0).collect(),
            &[1, 2, 2, 2],
        );
        let t = Tensor::from_vec(vec![0i64, 1, 1, 0], &[1, 2, 2]).unwrap();
        let w = Tensor::from([2.0f64, 3.0]);
        // Picked (weight × input): 2 × x[0,0,0,0] = 2 × -1, 3 × x[0,1,0,1] = 3 × 1.5,
        // 3 × x[0,1,1,0] = 3 × 2, 2 × x[0,0,1,1] = 2 × 0.5.
        let picked = [(2.0, -1.0), (3.0, 1.5), (3.0, 2.0), (2.0, 0.5)];
        let loss = -picked.iter().map(|(w, x)| w * x).sum::<f64>();
        let total = 10.0;
        let (out, tw) = kiln::nll_loss_forward(&x, &t, Some(&w), 1, -100).unwrap();
        assert_close(&f64s(&out), &[loss / total], 1e-12);
        assert_close(&f64s(&tw), &[total], 1e-12);
        let got = kiln::nll_loss_with(&x, &t, Some(&w), 1, -100).unwrap();
        assert_close(&f64s(&got), &[loss / total], 1e-12);
    }

    #[test]
    fn nll_loss_gives_its_class_weight_a_gradient() {
        // PyTorch does not differentiate `weight`; kiln does. For a sum, d/dw_c is minus the
        // sum of the inputs picked by targets of class c.
        let x = tensor(vec![0.5, -1.0, 2.0, 1.5], &[2, 2]);
        let t = Tensor::from([1i64, 1]);
        let w = Tensor::from([2.0f64, 3.0]).requires_grad_(true).unwrap();
        let loss = kiln::nll_loss_with(&x, &t, Some(&w), 2, -100).unwrap();
        loss.backward().unwrap();
        assert_close(&f64s(&w.grad().unwrap()), &[0.0, -(-1.0 + 1.5)], 1e-12);
    }
}

mod attention {
    use super::*;

    /// softmax(q kᵀ / sqrt(E) + mask) v for one head, by loops; `causal` keeps key j for
    /// query i when j <= i (PyTorch's top-left aligned causal mask).
    fn reference(
        q: &[f64],
        k: &[f64],
        v: &[f64],
        l: usize,
        s: usize,
        e: usize,
        ev: usize,
    ) -> Vec<f64> {
        let mut out = vec![0.0; l * ev];
        for i in 0..l {
            let scores: Vec<f64> = (0..s)
                .map(|j| {
                    if j > i {
                        f64::NEG_INFINITY
                    } else {
                        (0..e).map(|d| q[i * e + d] * k[j * e + d]).sum::<f64>() / (e as f64).sqrt()
                    }
                })
                .collect();
            let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = scores.iter().map(|x| (x - m).exp()).collect();
            let z: f64 = w.iter().sum();
            for (j, wj) in w.iter().enumerate() {
                for d in 0..ev {
                    out[i * ev + d] += wj / z * v[j * ev + d];
                }
            }
        }
        out
    }

    #[test]
    fn is_causal_equals_an_explicit_lower_triangular_mask() {
        let (b, h, l, s, e, ev) = (2, 3, 4, 5, 8, 6);
        let q = tensor(wave(b * h * l * e, 1), &[b, h, l, e]);
        let k = tensor(wave(b * h * s * e, 2), &[b, h, s, e]);
        let v = tensor(wave(b * h * s * ev, 3), &[b, h, s, ev]);
        let causal =
            kiln::scaled_dot_product_attention_with(&q, &k, &v, None, 0.0, true, None, false)
                .unwrap();
        let keep = Tensor::ones([l, s], DType::Bool).unwrap().tril().unwrap();
        let masked = kiln::scaled_dot_product_attention_with(
            &q,
            &k,
            &v,
            Some(&keep),
            0.0,
            false,
            None,
            false,
        )
        .unwrap();
        assert_eq!(causal.shape(), &[b, h, l, ev]);
        assert_close(&f64s(&causal), &f64s(&masked), 1e-14);
        // An additive float mask: 0 where kept, -inf elsewhere.
        let add: Vec<f64> = (0..l)
            .flat_map(|i| (0..s).map(move |j| if j <= i { 0.0 } else { f64::NEG_INFINITY }))
            .collect();
        let added = kiln::scaled_dot_product_attention_with(
            &q,
            &k,
            &v,
            Some(&tensor(add, &[l, s])),
            0.0,
            false,
            None,
            false,
        )
        .unwrap();
        assert_close(&f64s(&causal), &f64s(&added), 1e-14);
        // And against the loops, head by head.
        let (qs, ks, vs, got) = (f64s(&q), f64s(&k), f64s(&v), f64s(&causal));
        for bh in 0..b * h {
            let want = reference(
                &qs[bh * l * e..][..l * e],
                &ks[bh * s * e..][..s * e],
                &vs[bh * s * ev..][..s * ev],
                l,
                s,
                e,
                ev,
            );
            assert_close(&got[bh * l * ev..][..l * ev], &want, 1e-12);
        }
    }

    #[test]
    fn is_causal_with_an_explicit_mask_is_an_error() {
        let q = tensor(wave(8, 4), &[1, 2, 4]);
        let keep = Tensor::ones([2, 2], DType::Bool).unwrap();
        let e = kiln::scaled_dot_product_attention_with(
            &q,
            &q,
            &q,
            Some(&keep),
            0.0,
            true,
            None,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("Explicit attn_mask should not be set when is_causal=True"),
            "{e}"
        );
    }
}
