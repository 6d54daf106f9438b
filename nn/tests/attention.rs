//! LayerNorm, Dropout, MultiheadAttention and the Transformer layers against PyTorch
//! (`data/seq_reference.py`): outputs, input and parameter gradients, state_dict keys; masks,
//! batch_first, unbatched input, gradchecks, init, train/eval and shape errors.

#[path = "common/reference.rs"]
mod reference;

use kiln_core::autograd::{gradcheck, GradcheckOptions};
use kiln_core::{DType, Tensor};
use kiln_nn::{
    generate_square_subsequent_mask, Activation, AttentionArgs, DecoderArgs, Dropout, Dropout1d,
    Dropout2d, Forward, LayerNorm, Module, MultiheadAttention, MultiheadAttentionOptions,
    Transformer, TransformerArgs, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer, TransformerLayerOptions,
};
use reference::{assert_close, run_case, values, Reference};

fn mha_opts() -> MultiheadAttentionOptions {
    MultiheadAttentionOptions {
        dtype: DType::F64,
        ..Default::default()
    }
}

fn layer_opts() -> TransformerLayerOptions {
    TransformerLayerOptions {
        dim_feedforward: 16,
        dropout: 0.0,
        dtype: DType::F64,
        ..Default::default()
    }
}

fn err<T>(r: kiln_core::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn layer_norm_matches_pytorch() {
    let r = Reference::load();
    let mut m = LayerNorm::with_options(&[3, 4], 1e-5, true, true, DType::F64).unwrap();
    run_case(&r, "layer_norm", &mut m, |m, x| {
        Ok(vec![("y", m.forward(&x["x"])?)])
    });
    let mut m = LayerNorm::with_options(&[4], 1e-3, true, false, DType::F64).unwrap();
    run_case(&r, "layer_norm_nobias", &mut m, |m, x| {
        Ok(vec![("y", m.forward(&x["x"])?)])
    });
}

#[test]
fn layer_norm_init_and_errors() {
    let m = LayerNorm::new(&[5]).unwrap();
    assert_eq!(values(m.weight.as_ref().unwrap()), vec![1.0; 5]);
    assert_eq!(values(m.bias.as_ref().unwrap()), vec![0.0; 5]);
    let plain = LayerNorm::with_options(&[5], 1e-5, false, true, DType::F32).unwrap();
    assert!(plain.state_dict().is_empty());
    let e = err(m.forward(&Tensor::zeros([2, 4], DType::F32).unwrap()));
    assert!(
        e.contains("LayerNorm") && e.contains("[*, 5]") && e.contains("[2, 4]"),
        "{e}"
    );
}

#[test]
fn mha_cross_attention_with_key_padding_mask_matches_pytorch() {
    let r = Reference::load();
    let mut m = MultiheadAttention::with_options(8, 2, mha_opts()).unwrap();
    run_case(&r, "mha", &mut m, |m, x| {
        let (o, w) = m.forward(
            &x["q"],
            &x["k"],
            &x["v"],
            AttentionArgs {
                key_padding_mask: Some(&x["kpm"]),
                ..Default::default()
            },
        )?;
        Ok(vec![("output", o), ("weights", w.unwrap())])
    });
}

#[test]
fn mha_self_attention_causal_per_head_weights_match_pytorch() {
    let r = Reference::load();
    let mut m = MultiheadAttention::with_options(8, 2, mha_opts()).unwrap();
    run_case(&r, "mha_self_causal", &mut m, |m, x| {
        let (o, w) = m.forward(
            &x["x"],
            &x["x"],
            &x["x"],
            AttentionArgs {
                attn_mask: Some(&x["mask"]),
                average_attn_weights: false,
                ..Default::default()
            },
        )?;
        let w = w.unwrap();
        assert_eq!(w.shape(), &[2, 2, 4, 4]);
        Ok(vec![("output", o), ("weights", w)])
    });
}

#[test]
fn mha_kdim_vdim_bias_kv_zero_attn_batch_first_matches_pytorch() {
    let r = Reference::load();
    let mut m = MultiheadAttention::with_options(
        8,
        2,
        MultiheadAttentionOptions {
            kdim: Some(5),
            vdim: Some(6),
            batch_first: true,
            add_bias_kv: true,
            add_zero_attn: true,
            ..mha_opts()
        },
    )
    .unwrap();
    run_case(&r, "mha_kv", &mut m, |m, x| {
        // PyTorch's mask covers the 3 keys only; bias_k and the zero key get a 0 column each.
        let (o, w) = m.forward(
            &x["q"],
            &x["k"],
            &x["v"],
            AttentionArgs {
                attn_mask: Some(&x["mask"]),
                need_weights: false,
                ..Default::default()
            },
        )?;
        assert!(w.is_none());
        Ok(vec![("output", o)])
    });
}

#[test]
fn mha_unbatched_without_bias_matches_pytorch() {
    let r = Reference::load();
    let mut m = MultiheadAttention::with_options(
        6,
        3,
        MultiheadAttentionOptions {
            bias: false,
            ..mha_opts()
        },
    )
    .unwrap();
    run_case(&r, "mha_unbatched", &mut m, |m, x| {
        let (o, w) = m.forward(
            &x["q"],
            &x["k"],
            &x["v"],
            AttentionArgs {
                key_padding_mask: Some(&x["kpm"]),
                ..Default::default()
            },
        )?;
        Ok(vec![("output", o), ("weights", w.unwrap())])
    });
}

#[test]
fn mha_state_dict_keys_and_init_follow_pytorch() {
    let r = Reference::load();
    let m = MultiheadAttention::with_options(
        8,
        2,
        MultiheadAttentionOptions {
            kdim: Some(5),
            vdim: Some(6),
            add_bias_kv: true,
            ..Default::default()
        },
    )
    .unwrap();
    let got: Vec<(String, Vec<usize>)> = m
        .state_dict()
        .iter()
        .map(|(k, t)| (k.to_string(), t.shape().to_vec()))
        .collect();
    assert_eq!(got, r.keys("keys_mha_kv"));
    let m = MultiheadAttention::new(16, 4).unwrap();
    assert_eq!(
        m.state_dict().keys().collect::<Vec<_>>(),
        [
            "in_proj_weight",
            "in_proj_bias",
            "out_proj.weight",
            "out_proj.bias"
        ]
    );
    // xavier_uniform over [3E, E]: bound √(6 / (E + 3E)).
    let bound = (6.0f64 / 64.0).sqrt();
    let w = values(m.in_proj_weight.as_ref().unwrap());
    assert!(w.iter().all(|v| v.abs() <= bound + 1e-7));
    assert!(w.iter().any(|v| v.abs() > 0.8 * bound));
    assert!(values(m.in_proj_bias.as_ref().unwrap())
        .iter()
        .all(|&v| v == 0.0));
    assert!(values(m.out_proj.bias.as_ref().unwrap())
        .iter()
        .all(|&v| v == 0.0));
}

#[test]
fn mha_bool_masks_equal_their_float_forms() {
    kiln_core::manual_seed(7);
    let m = MultiheadAttention::with_options(8, 2, mha_opts()).unwrap();
    let x = Tensor::rand([4, 2, 8], DType::F64).unwrap();
    let bool_mask = Tensor::ones([4, 4], DType::Bool)
        .unwrap()
        .triu_with(1)
        .unwrap();
    let float_mask = generate_square_subsequent_mask(4, DType::F64).unwrap();
    assert_eq!(
        values(&float_mask),
        [
            0.0,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            0.0,
            0.0,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            0.0,
            0.0,
            0.0,
            f64::NEG_INFINITY,
            0.0,
            0.0,
            0.0,
            0.0
        ]
    );
    let run = |mask: &Tensor, need_weights: bool| {
        m.forward(
            &x,
            &x,
            &x,
            AttentionArgs {
                attn_mask: Some(mask),
                need_weights,
                is_causal: true,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let (a, wa) = run(&bool_mask, true);
    let (b, _) = run(&float_mask, false);
    assert_close("bool vs float mask", &a, &b, 1e-12);
    // Causal: no weight on later keys; rows sum to 1.
    let w = values(&wa.unwrap());
    for n in 0..2 {
        for i in 0..4 {
            let row = &w[(n * 4 + i) * 4..][..4];
            assert!(row[i + 1..].iter().all(|&v| v == 0.0), "{row:?}");
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }
    let e = err(m.forward(
        &x,
        &x,
        &x,
        AttentionArgs {
            is_causal: true,
            ..Default::default()
        },
    ));
    assert!(e.contains("Need attn_mask"), "{e}");
}

#[test]
fn mha_key_padding_mask_hides_keys_entirely() {
    kiln_core::manual_seed(8);
    let m = MultiheadAttention::with_options(4, 2, mha_opts()).unwrap();
    let q = Tensor::rand([3, 1, 4], DType::F64).unwrap();
    let k = Tensor::rand([5, 1, 4], DType::F64).unwrap();
    let v = Tensor::rand([5, 1, 4], DType::F64).unwrap();
    let kpm = Tensor::from_vec(vec![false, false, true, false, true], &[1, 5]).unwrap();
    let args = AttentionArgs {
        key_padding_mask: Some(&kpm),
        ..Default::default()
    };
    let (full, w) = m.forward(&q, &k, &v, args).unwrap();
    let w = values(&w.unwrap());
    for i in 0..3 {
        assert_eq!(w[i * 5 + 2], 0.0);
        assert_eq!(w[i * 5 + 4], 0.0);
    }
    // Dropping the masked keys gives the same result.
    let keep = Tensor::from_vec(vec![0i64, 1, 3], &[3]).unwrap();
    let (short, _) = m
        .forward(
            &q,
            &k.index_select(0, &keep).unwrap(),
            &v.index_select(0, &keep).unwrap(),
            AttentionArgs::default(),
        )
        .unwrap();
    assert_close("masked keys", &full, &short, 1e-12);
}

#[test]
fn gradcheck_mha() {
    kiln_core::manual_seed(9);
    let m = MultiheadAttention::with_options(
        4,
        2,
        MultiheadAttentionOptions {
            batch_first: true,
            ..mha_opts()
        },
    )
    .unwrap();
    let q = Tensor::rand([2, 3, 4], DType::F64).unwrap();
    let k = Tensor::rand([2, 2, 4], DType::F64).unwrap();
    let v = Tensor::rand([2, 2, 4], DType::F64).unwrap();
    let mask = Tensor::rand([3, 2], DType::F64).unwrap();
    gradcheck(
        &|t| {
            let (o, w) = m.forward(
                &t[0],
                &t[1],
                &t[2],
                AttentionArgs {
                    attn_mask: Some(&t[3]),
                    ..Default::default()
                },
            )?;
            Ok(vec![o, w.unwrap()])
        },
        &[q, k, v, mask],
        GradcheckOptions::default(),
    )
    .unwrap();
}

#[test]
fn mha_wrong_shapes_are_errors() {
    let m = MultiheadAttention::new(8, 2).unwrap();
    let x = Tensor::zeros([4, 2, 8], DType::F32).unwrap();
    let e = err(m.forward(
        &Tensor::zeros([4, 2, 6], DType::F32).unwrap(),
        &x,
        &x,
        AttentionArgs::default(),
    ));
    assert!(
        e.contains("MultiheadAttention") && e.contains("embedding dimension of 8, but got 6"),
        "{e}"
    );
    let e = err(m.forward(
        &x,
        &Tensor::zeros([4, 8], DType::F32).unwrap(),
        &x,
        AttentionArgs::default(),
    ));
    assert!(e.contains("expected `key` and `value` to be 3-D"), "{e}");
    let bad = Tensor::zeros([4, 5], DType::Bool).unwrap();
    let e = err(m.forward(
        &x,
        &x,
        &x,
        AttentionArgs {
            attn_mask: Some(&bad),
            ..Default::default()
        },
    ));
    assert!(
        e.contains("The shape of the 2D attn_mask is [4, 5], but should be [4, 4]"),
        "{e}"
    );
    let bad = Tensor::zeros([2, 3], DType::Bool).unwrap();
    let e = err(m.forward(
        &x,
        &x,
        &x,
        AttentionArgs {
            key_padding_mask: Some(&bad),
            ..Default::default()
        },
    ));
    assert!(
        e.contains("expecting key_padding_mask shape of [2, 4], but got [2, 3]"),
        "{e}"
    );
    let e = err(MultiheadAttention::new(10, 3));
    assert!(
        e.contains("embed_dim must be divisible by num_heads"),
        "{e}"
    );
}

#[test]
fn encoder_layer_post_norm_with_masks_matches_pytorch() {
    let r = Reference::load();
    let mut m = TransformerEncoderLayer::with_options(8, 2, layer_opts()).unwrap();
    run_case(&r, "enc_layer", &mut m, |m, x| {
        Ok(vec![(
            "y",
            m.forward_with(&x["x"], Some(&x["mask"]), Some(&x["kpm"]), false)?,
        )])
    });
}

#[test]
fn encoder_layer_norm_first_gelu_batch_first_matches_pytorch() {
    let r = Reference::load();
    let mut m = TransformerEncoderLayer::with_options(
        8,
        2,
        TransformerLayerOptions {
            activation: Activation::Gelu,
            batch_first: true,
            norm_first: true,
            ..layer_opts()
        },
    )
    .unwrap();
    run_case(&r, "enc_layer_nf", &mut m, |m, x| {
        Ok(vec![("y", m.forward(&x["x"])?)])
    });
}

#[test]
fn decoder_layers_match_pytorch() {
    let r = Reference::load();
    let mut m = TransformerDecoderLayer::with_options(8, 2, layer_opts()).unwrap();
    run_case(&r, "dec_layer", &mut m, |m, x| {
        Ok(vec![(
            "y",
            m.forward(
                &x["t"],
                &x["mem"],
                DecoderArgs {
                    tgt_mask: Some(&x["tmask"]),
                    memory_key_padding_mask: Some(&x["mkpm"]),
                    ..Default::default()
                },
            )?,
        )])
    });
    let mut m = TransformerDecoderLayer::with_options(
        8,
        2,
        TransformerLayerOptions {
            activation: Activation::Gelu,
            batch_first: true,
            norm_first: true,
            ..layer_opts()
        },
    )
    .unwrap();
    run_case(&r, "dec_layer_nf", &mut m, |m, x| {
        Ok(vec![(
            "y",
            m.forward(&x["t"], &x["mem"], DecoderArgs::default())?,
        )])
    });
}

#[test]
fn encoder_and_decoder_stacks_match_pytorch() {
    let r = Reference::load();
    let layer = TransformerEncoderLayer::with_options(8, 2, layer_opts()).unwrap();
    let norm = LayerNorm::with_options(&[8], 1e-5, true, true, DType::F64).unwrap();
    let mut m = TransformerEncoder::new(layer, 2, Some(norm)).unwrap();
    run_case(&r, "encoder", &mut m, |m, x| {
        Ok(vec![("y", m.forward(&x["x"])?)])
    });
    let layer = TransformerDecoderLayer::with_options(8, 2, layer_opts()).unwrap();
    let mut m = TransformerDecoder::new(layer, 2, None).unwrap();
    run_case(&r, "decoder", &mut m, |m, x| {
        Ok(vec![(
            "y",
            m.forward(&x["t"], &x["mem"], DecoderArgs::default())?,
        )])
    });
}

#[test]
fn stack_layers_are_independent_copies() {
    let layer = TransformerEncoderLayer::with_options(8, 2, layer_opts()).unwrap();
    let first = values(&layer.linear1.weight);
    let enc = TransformerEncoder::new(layer, 2, None).unwrap();
    assert_eq!(values(&enc.layers[0].linear1.weight), first);
    assert_eq!(values(&enc.layers[1].linear1.weight), first);
    assert!(!enc.layers[0]
        .linear1
        .weight
        .shares_storage_with(&enc.layers[1].linear1.weight));
}

#[test]
fn encoder_layer_keys_equal_pytorchs() {
    let r = Reference::load();
    let m = TransformerEncoderLayer::with_options(
        8,
        2,
        TransformerLayerOptions {
            bias: false,
            ..Default::default()
        },
    )
    .unwrap();
    let got: Vec<(String, Vec<usize>)> = m
        .state_dict()
        .iter()
        .map(|(k, t)| (k.to_string(), t.shape().to_vec()))
        .collect();
    assert_eq!(got, r.keys("keys_enc"));
}

#[test]
fn transformer_dropout_only_in_training() {
    kiln_core::manual_seed(10);
    let opts = TransformerLayerOptions {
        dim_feedforward: 16,
        dropout: 0.5,
        ..Default::default()
    };
    let layer = TransformerEncoderLayer::with_options(8, 2, opts).unwrap();
    let mut enc = TransformerEncoder::new(layer, 2, None).unwrap();
    let mut plain = TransformerEncoder::new(
        TransformerEncoderLayer::with_options(
            8,
            2,
            TransformerLayerOptions {
                dropout: 0.0,
                ..opts
            },
        )
        .unwrap(),
        2,
        None,
    )
    .unwrap();
    plain.load_state_dict(&enc.state_dict(), true).unwrap();
    plain.eval();
    let x = Tensor::rand([5, 3, 8], DType::F32).unwrap();
    assert!(enc.is_training() && enc.layers[1].dropout2.training);
    let a = enc.forward(&x).unwrap();
    let b = enc.forward(&x).unwrap();
    assert_ne!(values(&a), values(&b));
    enc.eval();
    assert!(!enc.layers[1].dropout2.training && !enc.layers[1].self_attn.training);
    assert_close(
        "eval",
        &enc.forward(&x).unwrap(),
        &plain.forward(&x).unwrap(),
        1e-5,
    );
}

#[test]
fn dropout_layers_train_and_eval() {
    kiln_core::manual_seed(11);
    let mut d = Dropout::new(0.25).unwrap();
    let x = Tensor::ones([1000], DType::F32).unwrap();
    let y = values(&d.forward(&x).unwrap());
    let zeros = y.iter().filter(|&&v| v == 0.0).count();
    assert!(y.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
    assert!((150..350).contains(&zeros), "{zeros}");
    d.eval();
    assert_eq!(values(&d.forward(&x).unwrap()), vec![1.0; 1000]);
    assert!(err(Dropout::new(1.5)).contains("between 0 and 1"));

    let d2 = Dropout2d::new(0.5).unwrap();
    let x = Tensor::ones([4, 8, 3, 3], DType::F32).unwrap();
    let y = values(&d2.forward(&x).unwrap());
    let mut dropped = 0;
    for ch in y.chunks(9) {
        assert!(ch.iter().all(|&v| v == ch[0]), "whole channels: {ch:?}");
        assert!(ch[0] == 0.0 || ch[0] == 2.0);
        dropped += usize::from(ch[0] == 0.0);
    }
    assert!((4..28).contains(&dropped), "{dropped}");
    let e = err(d2.forward(&Tensor::ones([2, 3], DType::F32).unwrap()));
    assert!(e.contains("Dropout2d") && e.contains("[2, 3]"), "{e}");
}

#[test]
fn full_transformer_matches_pytorch() {
    let r = Reference::load();
    let mut m = Transformer::with_options(8, 2, 1, 2, layer_opts()).unwrap();
    run_case(&r, "transformer", &mut m, |m, x| {
        Ok(vec![(
            "y",
            m.forward(
                &x["src"],
                &x["tgt"],
                TransformerArgs {
                    tgt_mask: Some(&x["tmask"]),
                    src_key_padding_mask: Some(&x["skpm"]),
                    memory_key_padding_mask: Some(&x["skpm"]),
                    ..Default::default()
                },
            )?,
        )])
    });
}

#[test]
fn full_transformer_keys_init_and_errors() {
    let r = Reference::load();
    let m = Transformer::with_options(
        8,
        2,
        2,
        1,
        TransformerLayerOptions {
            dim_feedforward: 16,
            ..Default::default()
        },
    )
    .unwrap();
    let got: Vec<(String, Vec<usize>)> = m
        .state_dict()
        .iter()
        .map(|(k, t)| (k.to_string(), t.shape().to_vec()))
        .collect();
    assert_eq!(got, r.keys("keys_transformer"));
    // Every matrix re-initialised with xavier_uniform: linear1 [16, 8] has bound √(6/24).
    let w = values(&m.encoder.layers[1].linear1.weight);
    assert!(w.iter().all(|v| v.abs() <= 0.5 + 1e-7));
    assert!(w.iter().any(|v| v.abs() > 0.4));
    // Layers of a stack are re-drawn independently.
    assert_ne!(w, values(&m.encoder.layers[0].linear1.weight));
    // Vectors keep their init: LayerNorm ones, attention biases zeros.
    assert_eq!(
        values(m.decoder.norm.as_ref().unwrap().weight.as_ref().unwrap()),
        vec![1.0; 8]
    );
    let src = Tensor::zeros([5, 2, 8], DType::F32).unwrap();
    let e = err(m.forward(
        &src,
        &Tensor::zeros([3, 3, 8], DType::F32).unwrap(),
        TransformerArgs::default(),
    ));
    assert!(
        e.contains("Transformer") && e.contains("batch number"),
        "{e}"
    );
    let e = err(m.forward(
        &src,
        &Tensor::zeros([3, 2, 6], DType::F32).unwrap(),
        TransformerArgs::default(),
    ));
    assert!(e.contains("d_model (8)") && e.contains("[3, 2, 6]"), "{e}");
}

#[test]
fn dropout1d_drops_whole_channels_of_unbatched_input() {
    kiln_core::manual_seed(12);
    let d = Dropout1d::new(0.5).unwrap();
    let x = Tensor::ones([16, 5], DType::F64).unwrap();
    let y = values(&d.forward(&x).unwrap());
    let mut kinds = std::collections::HashSet::new();
    for ch in y.chunks(5) {
        assert!(ch.iter().all(|&v| v == ch[0]));
        kinds.insert(ch[0].to_bits());
    }
    assert_eq!(kinds.len(), 2, "some channels dropped, some kept (×2)");
}

#[test]
fn float32_encoder_layer_agrees_with_pytorch_to_1e5() {
    let r = Reference::load();
    let mut m = TransformerEncoderLayer::with_options(
        8,
        2,
        TransformerLayerOptions {
            dim_feedforward: 16,
            dropout: 0.0,
            ..Default::default()
        },
    )
    .unwrap();
    m.load_state_dict(&r.state("enc_layer"), true).unwrap();
    let x = r.inputs("enc_layer");
    let y = m
        .forward_with(
            &x["x"].detach().to_dtype(DType::F32).unwrap(),
            Some(&x["mask"]),
            Some(&x["kpm"]),
            false,
        )
        .unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_close("y", &y, &r.tensor("enc_layer", "output", "y"), 1e-5);
}

#[test]
fn mha_attention_dropout_follows_train_and_eval() {
    kiln_core::manual_seed(14);
    let mut m = MultiheadAttention::with_options(
        8,
        2,
        MultiheadAttentionOptions {
            dropout: 0.5,
            ..Default::default()
        },
    )
    .unwrap();
    let x = Tensor::rand([6, 2, 8], DType::F32).unwrap();
    let run = |m: &MultiheadAttention| {
        let (o, w) = m.forward(&x, &x, &x, AttentionArgs::default()).unwrap();
        (values(&o), values(&w.unwrap()))
    };
    let (o1, w1) = run(&m);
    let (o2, _) = run(&m);
    assert_ne!(o1, o2);
    // Dropout acts on the returned weights: some are zero (dropped in both heads).
    assert!(w1.contains(&0.0));
    m.eval();
    let (e1, ew) = run(&m);
    let (e2, _) = run(&m);
    assert_eq!(e1, e2);
    for row in ew.chunks(6) {
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-5);
    }
}
