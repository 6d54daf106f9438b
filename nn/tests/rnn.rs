//! RNN / LSTM / GRU and their cells against PyTorch (`data/seq_reference.py`): outputs, input
//! and parameter gradients, state_dict keys; finite-difference gradchecks; batch_first,
//! unbatched input, inter-layer dropout, init ranges and shape errors.

#[path = "common/reference.rs"]
mod reference;

use kiln_core::autograd::{gradcheck, gradgradcheck, GradcheckOptions};
use kiln_core::{DType, Tensor};
use kiln_nn::{GRUCell, LSTMCell, Module, RNNCell, RnnNonlinearity, RnnOptions, GRU, LSTM, RNN};
use reference::{assert_close, run_case, values, Reference};

fn f64_opts() -> RnnOptions {
    RnnOptions {
        dtype: DType::F64,
        ..Default::default()
    }
}

#[test]
fn lstm_two_layer_bidirectional_matches_pytorch() {
    let r = Reference::load();
    let mut m = LSTM::with_options(
        3,
        4,
        RnnOptions {
            num_layers: 2,
            bidirectional: true,
            ..f64_opts()
        },
    )
    .unwrap();
    run_case(&r, "lstm", &mut m, |m, x| {
        let (o, (h, c)) = m.forward(&x["x"], Some((&x["h0"], &x["c0"])))?;
        Ok(vec![("output", o), ("h_n", h), ("c_n", c)])
    });
}

#[test]
fn lstm_proj_batch_first_no_bias_matches_pytorch() {
    let r = Reference::load();
    let mut m = LSTM::with_options(
        3,
        5,
        RnnOptions {
            proj_size: 2,
            batch_first: true,
            bias: false,
            ..f64_opts()
        },
    )
    .unwrap();
    run_case(&r, "lstm_proj", &mut m, |m, x| {
        let (o, (h, c)) = m.forward(&x["x"], None)?;
        Ok(vec![("output", o), ("h_n", h), ("c_n", c)])
    });
}

#[test]
fn gru_bidirectional_batch_first_matches_pytorch() {
    let r = Reference::load();
    let mut m = GRU::with_options(
        3,
        4,
        RnnOptions {
            num_layers: 2,
            bidirectional: true,
            batch_first: true,
            ..f64_opts()
        },
    )
    .unwrap();
    run_case(&r, "gru", &mut m, |m, x| {
        let (o, h) = m.forward(&x["x"], Some(&x["h0"]))?;
        Ok(vec![("output", o), ("h_n", h)])
    });
}

#[test]
fn gru_unbatched_matches_pytorch() {
    let r = Reference::load();
    let mut m = GRU::with_options(3, 4, f64_opts()).unwrap();
    run_case(&r, "gru_unbatched", &mut m, |m, x| {
        let (o, h) = m.forward(&x["x"], None)?;
        assert_eq!(o.shape(), &[5, 4]);
        assert_eq!(h.shape(), &[1, 4]);
        Ok(vec![("output", o), ("h_n", h)])
    });
}

#[test]
fn rnn_relu_matches_pytorch() {
    let r = Reference::load();
    let mut m = RNN::with_options(
        3,
        4,
        RnnOptions {
            num_layers: 2,
            nonlinearity: RnnNonlinearity::Relu,
            ..f64_opts()
        },
    )
    .unwrap();
    run_case(&r, "rnn_relu", &mut m, |m, x| {
        let (o, h) = m.forward(&x["x"], None)?;
        Ok(vec![("output", o), ("h_n", h)])
    });
}

#[test]
fn cells_match_pytorch() {
    let r = Reference::load();
    let mut m = LSTMCell::with_options(3, 4, true, DType::F64).unwrap();
    run_case(&r, "lstm_cell", &mut m, |m, x| {
        let (h, c) = m.forward(&x["x"], Some((&x["h"], &x["c"])))?;
        Ok(vec![("h", h), ("c", c)])
    });
    let mut m = GRUCell::with_options(3, 4, true, DType::F64).unwrap();
    run_case(&r, "gru_cell", &mut m, |m, x| {
        Ok(vec![("h", m.forward(&x["x"], Some(&x["h"]))?)])
    });
    let mut m = RNNCell::with_options(3, 4, true, RnnNonlinearity::Tanh, DType::F64).unwrap();
    run_case(&r, "rnn_cell", &mut m, |m, x| {
        let h = m.forward(&x["x"], None)?;
        assert_eq!(h.shape(), &[4]);
        Ok(vec![("h", h)])
    });
}

#[test]
fn state_dict_keys_and_shapes_equal_pytorchs() {
    let r = Reference::load();
    let check = |case: &str, m: &dyn Fn() -> Vec<(String, Vec<usize>)>| {
        assert_eq!(m(), r.keys(case), "{case}");
    };
    let shapes = |sd: kiln_nn::StateDict| {
        sd.iter()
            .map(|(k, t)| (k.to_string(), t.shape().to_vec()))
            .collect::<Vec<_>>()
    };
    check("keys_lstm", &|| {
        shapes(
            LSTM::with_options(
                3,
                4,
                RnnOptions {
                    num_layers: 2,
                    bidirectional: true,
                    proj_size: 2,
                    ..Default::default()
                },
            )
            .unwrap()
            .state_dict(),
        )
    });
    check("keys_gru", &|| {
        shapes(
            GRU::with_options(
                3,
                4,
                RnnOptions {
                    num_layers: 2,
                    bias: false,
                    ..Default::default()
                },
            )
            .unwrap()
            .state_dict(),
        )
    });
    let cell = LSTMCell::new(3, 4).unwrap();
    assert_eq!(
        cell.state_dict().keys().collect::<Vec<_>>(),
        ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    );
}

#[test]
fn init_is_uniform_within_one_over_sqrt_hidden() {
    let m = LSTM::with_options(
        5,
        16,
        RnnOptions {
            num_layers: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let bound = 1.0 / 4.0;
    let mut all = Vec::new();
    for (n, p) in m.named_parameters() {
        assert!(p.requires_grad(), "{n}");
        all.extend(values(&p));
    }
    assert!(all.iter().all(|v| v.abs() <= bound));
    // Spread over the range, not constant.
    let max = all.iter().cloned().fold(f64::MIN, f64::max);
    let min = all.iter().cloned().fold(f64::MAX, f64::min);
    assert!(max > 0.8 * bound && min < -0.8 * bound);
}

fn gc() -> GradcheckOptions {
    GradcheckOptions::default()
}

#[test]
fn gradcheck_lstm_bidirectional() {
    kiln_core::manual_seed(1);
    let m = LSTM::with_options(
        2,
        3,
        RnnOptions {
            bidirectional: true,
            ..f64_opts()
        },
    )
    .unwrap();
    let x = Tensor::rand([3, 2, 2], DType::F64).unwrap();
    let h = Tensor::rand([2, 2, 3], DType::F64).unwrap();
    let c = Tensor::rand([2, 2, 3], DType::F64).unwrap();
    gradcheck(
        &|t| {
            let (o, (h, c)) = m.forward(&t[0], Some((&t[1], &t[2])))?;
            Ok(vec![o, h, c])
        },
        &[x, h, c],
        gc(),
    )
    .unwrap();
}

#[test]
fn gradcheck_gru_and_cells() {
    kiln_core::manual_seed(2);
    let m = GRU::with_options(
        2,
        3,
        RnnOptions {
            num_layers: 2,
            batch_first: true,
            ..f64_opts()
        },
    )
    .unwrap();
    let x = Tensor::rand([2, 3, 2], DType::F64).unwrap();
    let h = Tensor::rand([2, 2, 3], DType::F64).unwrap();
    gradcheck(
        &|t| {
            let (o, h) = m.forward(&t[0], Some(&t[1]))?;
            Ok(vec![o, h])
        },
        &[x, h],
        gc(),
    )
    .unwrap();
    let cell = GRUCell::with_options(2, 3, true, DType::F64).unwrap();
    let x = Tensor::rand([2, 2], DType::F64).unwrap();
    let h = Tensor::rand([2, 3], DType::F64).unwrap();
    gradcheck(
        &|t| Ok(vec![cell.forward(&t[0], Some(&t[1]))?]),
        &[x, h],
        gc(),
    )
    .unwrap();
}

#[test]
fn batch_first_is_a_transpose_of_seq_first() {
    kiln_core::manual_seed(3);
    let a = LSTM::with_options(3, 4, f64_opts()).unwrap();
    let mut b = LSTM::with_options(
        3,
        4,
        RnnOptions {
            batch_first: true,
            ..f64_opts()
        },
    )
    .unwrap();
    b.load_state_dict(&a.state_dict(), true).unwrap();
    let x = Tensor::rand([5, 2, 3], DType::F64).unwrap();
    let (oa, (ha, _)) = a.forward(&x, None).unwrap();
    let (ob, (hb, _)) = b.forward(&x.transpose(0, 1).unwrap(), None).unwrap();
    assert_close("output", &ob.transpose(0, 1).unwrap(), &oa, 1e-12);
    assert_close("h_n", &hb, &ha, 1e-12);
}

/// An independent float64 loop for one GRU step, from PyTorch's documented equations.
#[test]
fn gru_cell_follows_documented_equations() {
    kiln_core::manual_seed(4);
    let cell = GRUCell::with_options(2, 2, true, DType::F64).unwrap();
    let x = [0.3, -0.7];
    let h = [0.5, 0.1];
    let w_ih = values(&cell.weight_ih);
    let w_hh = values(&cell.weight_hh);
    let b_ih = values(cell.bias_ih.as_ref().unwrap());
    let b_hh = values(cell.bias_hh.as_ref().unwrap());
    let row =
        |w: &[f64], b: &[f64], v: &[f64; 2], r: usize| b[r] + w[2 * r] * v[0] + w[2 * r + 1] * v[1];
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let mut want = [0.0; 2];
    for j in 0..2 {
        let r = sig(row(&w_ih, &b_ih, &x, j) + row(&w_hh, &b_hh, &h, j));
        let z = sig(row(&w_ih, &b_ih, &x, 2 + j) + row(&w_hh, &b_hh, &h, 2 + j));
        let n = (row(&w_ih, &b_ih, &x, 4 + j) + r * row(&w_hh, &b_hh, &h, 4 + j)).tanh();
        want[j] = (1.0 - z) * n + z * h[j];
    }
    let got = cell
        .forward(
            &Tensor::from_vec(x.to_vec(), &[1, 2]).unwrap(),
            Some(&Tensor::from_vec(h.to_vec(), &[1, 2]).unwrap()),
        )
        .unwrap();
    let got = values(&got);
    for j in 0..2 {
        assert!((got[j] - want[j]).abs() < 1e-12, "{got:?} vs {want:?}");
    }
}

#[test]
fn dropout_between_layers_only_in_training() {
    kiln_core::manual_seed(5);
    let mut m = LSTM::with_options(
        3,
        8,
        RnnOptions {
            num_layers: 2,
            dropout: 0.5,
            ..Default::default()
        },
    )
    .unwrap();
    let mut plain = LSTM::with_options(
        3,
        8,
        RnnOptions {
            num_layers: 2,
            ..Default::default()
        },
    )
    .unwrap();
    plain.load_state_dict(&m.state_dict(), true).unwrap();
    let x = Tensor::rand([6, 2, 3], DType::F32).unwrap();
    assert!(m.is_training());
    let (train_a, _) = m.forward(&x, None).unwrap();
    let (train_b, _) = m.forward(&x, None).unwrap();
    assert_ne!(values(&train_a), values(&train_b), "dropout draws differ");
    let (reference, _) = plain.forward(&x, None).unwrap();
    assert_ne!(values(&train_a), values(&reference));
    m.eval();
    assert!(!m.is_training());
    let (eval, _) = m.forward(&x, None).unwrap();
    assert_close("eval", &eval, &reference, 1e-6);
}

fn err<T>(r: kiln_core::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn wrong_shapes_are_errors_naming_the_layer() {
    let m = LSTM::with_options(
        3,
        4,
        RnnOptions {
            num_layers: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let e = err(m.forward(&Tensor::zeros([1, 2, 3, 4], DType::F32).unwrap(), None));
    assert!(
        e.contains("LSTM") && e.contains("Expected input to be 2D or 3D, got 4D"),
        "{e}"
    );
    let e = err(m.forward(&Tensor::zeros([5, 2, 7], DType::F32).unwrap(), None));
    assert!(
        e.contains("LSTM") && e.contains("Expected 3, got 7") && e.contains("[5, 2, 7]"),
        "{e}"
    );
    let x = Tensor::zeros([5, 2, 3], DType::F32).unwrap();
    let h = Tensor::zeros([2, 2, 5], DType::F32).unwrap();
    let c = Tensor::zeros([2, 2, 4], DType::F32).unwrap();
    let e = err(m.forward(&x, Some((&h, &c))));
    assert!(
        e.contains("LSTM") && e.contains("Expected hidden[0] size (2, 2, 4), got [2, 2, 5]"),
        "{e}"
    );
    let g = GRU::new(3, 4).unwrap();
    let e = err(g.forward(&x, Some(&Tensor::zeros([1, 4], DType::F32).unwrap())));
    assert!(e.contains("GRU") && e.contains("3-D"), "{e}");
    let cell = LSTMCell::new(3, 4).unwrap();
    let e = err(cell.forward(&Tensor::zeros([2, 5], DType::F32).unwrap(), None));
    assert!(
        e.contains("LSTMCell") && e.contains("got 5 expected 3"),
        "{e}"
    );
    let e = err(RNN::with_options(
        3,
        4,
        RnnOptions {
            dropout: 1.5,
            ..Default::default()
        },
    ));
    assert!(e.contains("RNN") && e.contains("dropout"), "{e}");
    let e = err(GRU::with_options(
        3,
        4,
        RnnOptions {
            proj_size: 2,
            ..Default::default()
        },
    ));
    assert!(e.contains("proj_size"), "{e}");
}

#[test]
fn double_backward_through_lstm_cell() {
    kiln_core::manual_seed(6);
    let cell = LSTMCell::with_options(2, 2, true, DType::F64).unwrap();
    let x = Tensor::rand([2, 2], DType::F64).unwrap();
    let h = Tensor::rand([2, 2], DType::F64).unwrap();
    let c = Tensor::rand([2, 2], DType::F64).unwrap();
    gradgradcheck(
        &|t| {
            let (h, c) = cell.forward(&t[0], Some((&t[1], &t[2])))?;
            Ok(vec![h, c])
        },
        &[x, h, c],
        GradcheckOptions::default(),
    )
    .unwrap();
}

#[test]
fn float32_lstm_agrees_with_pytorch_to_1e5() {
    let r = Reference::load();
    let mut m = LSTM::with_options(
        3,
        4,
        RnnOptions {
            num_layers: 2,
            bidirectional: true,
            ..Default::default()
        },
    )
    .unwrap();
    // load_state_dict casts PyTorch's float64 values to the layer's float32.
    m.load_state_dict(&r.state("lstm"), true).unwrap();
    let f32_of = |n: &str| r.tensor("lstm", "input", n).to_dtype(DType::F32).unwrap();
    let (o, (h, c)) = m
        .forward(&f32_of("x"), Some((&f32_of("h0"), &f32_of("c0"))))
        .unwrap();
    assert_eq!(o.dtype(), DType::F32);
    assert_close("output", &o, &r.tensor("lstm", "output", "output"), 1e-5);
    assert_close("h_n", &h, &r.tensor("lstm", "output", "h_n"), 1e-5);
    assert_close("c_n", &c, &r.tensor("lstm", "output", "c_n"), 1e-5);
}

#[test]
fn unbatched_input_and_state_equal_a_batch_of_one() {
    kiln_core::manual_seed(13);
    let m = LSTM::with_options(
        3,
        4,
        RnnOptions {
            num_layers: 2,
            bidirectional: true,
            ..f64_opts()
        },
    )
    .unwrap();
    let x = Tensor::rand([5, 3], DType::F64).unwrap();
    let h = Tensor::rand([4, 4], DType::F64).unwrap();
    let c = Tensor::rand([4, 4], DType::F64).unwrap();
    let (o, (hn, cn)) = m.forward(&x, Some((&h, &c))).unwrap();
    assert_eq!(o.shape(), &[5, 8]);
    assert_eq!(hn.shape(), &[4, 4]);
    let b = |t: &Tensor| t.unsqueeze(1).unwrap();
    let (ob, (hb, cb)) = m.forward(&b(&x), Some((&b(&h), &b(&c)))).unwrap();
    assert_close("output", &o, &ob.squeeze_dim(1).unwrap(), 1e-12);
    assert_close("h_n", &hn, &hb.squeeze_dim(1).unwrap(), 1e-12);
    assert_close("c_n", &cn, &cb.squeeze_dim(1).unwrap(), 1e-12);
}
