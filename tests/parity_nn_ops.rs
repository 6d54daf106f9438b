//! Parity with PyTorch for nn-style ops (issue 21): circular padding with negative pads,
//! transposed convolution with dilation and output padding, integer convolution and
//! pooling, empty inputs of the pooling and norm layers, `tensordot` over size-1 dims,
//! integer `addmv` / `addbmm` / `baddbmm` / `addmm`, and `linalg_qr` (LAPACK's signs and
//! the gradient of wide matrices).
//!
//! Numbers come from real PyTorch (`data/parity_nn_ops_ref.txt`, written by
//! `data/gen_parity_nn_ops.py`); error texts are PyTorch's; gradients are also checked by
//! finite differences (kiln's public gradcheck).

mod common;
use common::{ref_lines, RefLine};
use kiln::autograd::{grad, gradcheck, GradOptions, GradcheckOptions};
use kiln::{DType, Result, Tensor};
use std::collections::HashMap;

/// One case's tensors by key (`in0`, `out`, `cot`, `grad.in0`, ...).
type Case = HashMap<String, Tensor>;

fn case(name: &str) -> Case {
    let mut c = Case::new();
    for RefLine {
        case: n,
        key,
        kind: dt,
        shape,
        values: it,
    } in ref_lines(include_str!("data/parity_nn_ops_ref.txt"))
    {
        if n != name {
            continue;
        }
        let t = if dt == "i64" {
            Tensor::from_vec(it.map(|v| v.parse::<i64>().unwrap()).collect(), &shape)
        } else {
            Tensor::from_vec(it.map(|v| v.parse::<f64>().unwrap()).collect(), &shape)
        }
        .unwrap();
        c.insert(key.to_string(), t);
    }
    assert!(!c.is_empty(), "no reference case {name}");
    c
}

fn t<'a>(c: &'a Case, key: &str) -> &'a Tensor {
    c.get(key).unwrap_or_else(|| panic!("no {key}"))
}

/// Same shape and dtype, values within `tol` (absolute plus relative); integer tensors exactly.
fn assert_close(what: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    if want.dtype() == DType::I64 {
        assert_eq!(
            got.contiguous().unwrap().to_vec::<i64>().unwrap(),
            want.to_vec::<i64>().unwrap(),
            "{what}"
        );
        return;
    }
    let g = got.contiguous().unwrap().to_vec::<f64>().unwrap();
    let w = want.to_vec::<f64>().unwrap();
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}: element {i}: got {a}, want {b}"
        );
    }
}

/// Runs `f` on the case's inputs (the float ones requiring grad), checks the outputs and,
/// where the case has them, the input gradients for the recorded cotangents.
fn check_case(name: &str, n_in: usize, f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>, tol: f64) {
    let c = case(name);
    let ins: Vec<Tensor> = (0..n_in)
        .map(|i| {
            let x = t(&c, &format!("in{i}")).clone();
            if x.is_floating_point() {
                x.requires_grad_(true).unwrap()
            } else {
                x
            }
        })
        .collect();
    let outs = f(&ins).unwrap_or_else(|e| panic!("{name}: {e}"));
    let single = outs.len() == 1;
    let key = |base: &str, j: usize| {
        if single {
            base.to_string()
        } else {
            format!("{base}{j}")
        }
    };
    for (j, o) in outs.iter().enumerate() {
        assert_close(
            &format!("{name} {}", key("out", j)),
            o,
            t(&c, &key("out", j)),
            tol,
        );
    }
    let (mut ys, mut cots) = (vec![], vec![]);
    for (j, o) in outs.iter().enumerate() {
        if let Some(cot) = c.get(&key("cot", j)) {
            ys.push(o.clone());
            cots.push(Some(cot.clone()));
        }
    }
    if ys.is_empty() {
        return;
    }
    let wrt: Vec<usize> = (0..n_in)
        .filter(|i| c.contains_key(&format!("grad.in{i}")))
        .collect();
    let xs: Vec<Tensor> = wrt.iter().map(|&i| ins[i].clone()).collect();
    let opts = GradOptions {
        allow_unused: true,
        ..GradOptions::default()
    };
    let gs = grad(&ys, &xs, &cots, opts).unwrap_or_else(|e| panic!("{name} backward: {e}"));
    for (g, &i) in gs.iter().zip(&wrt) {
        let want = t(&c, &format!("grad.in{i}"));
        let g = match g {
            Some(g) => g.clone(),
            None => want.zeros_like().unwrap(),
        };
        assert_close(&format!("{name} grad.in{i}"), &g, want, tol);
    }
}

fn err_text<T: std::fmt::Debug>(r: Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn f32s(data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

fn i64s(data: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

// ---- 1. pad(mode='circular') with negative pads ---------------------------------------

#[test]
fn pad_circular_negative_pads_crop_before_wrapping() {
    for (name, pads) in [
        ("pad_circular_2d", vec![-1i64, 1, -2, 1]),
        ("pad_circular_1d_a", vec![-1, 2]),
        ("pad_circular_1d_b", vec![2, -1]),
        ("pad_circular_3d", vec![1, -2, -1, 2, 2, -1]),
        ("pad_circular_unbatched", vec![-1, 2]),
    ] {
        check_case(
            name,
            1,
            |x| {
                Ok(vec![kiln::pad_with(
                    &x[0],
                    pads.as_slice(),
                    "circular",
                    None,
                )?])
            },
            1e-12,
        );
    }
    // The issue's example: the first row of the first plane is [9, 10, 11, 9].
    let x = Tensor::arange(0, 48, 1, DType::F32)
        .unwrap()
        .reshape([1, 3, 4, 4])
        .unwrap();
    let y = kiln::pad_with(&x, [-1i64, 1, -2, 1], "circular", None).unwrap();
    assert_eq!(
        y.reshape([-1]).unwrap().to_vec::<f32>().unwrap()[..9],
        [9.0, 10.0, 11.0, 9.0, 13.0, 14.0, 15.0, 13.0, 9.0]
    );
}

#[test]
fn pad_circular_negative_pads_gradcheck_and_errors() {
    let x = Tensor::from_vec(
        (0..60).map(|v| (v as f64 * 0.37).sin()).collect(),
        &[1, 3, 4, 5],
    )
    .unwrap()
    .requires_grad_(true)
    .unwrap();
    gradcheck(
        &|xs: &[Tensor]| {
            Ok(vec![kiln::pad_with(
                &xs[0],
                [2i64, -1, -2, 1],
                "circular",
                None,
            )?])
        },
        &[x],
        GradcheckOptions::default(),
    )
    .unwrap();
    let x = f32s(&[0.0, 1.0, 2.0, 3.0], &[1, 1, 4]);
    // Cropped to 2 elements, a pad of 3 would wrap more than once.
    let e = err_text(kiln::pad_with(&x, [3i64, -2], "circular", None));
    assert_eq!(
        e,
        "pad: Padding value causes wrapping around more than once."
    );
    let e = err_text(kiln::pad_with(&x, [-3i64, -2], "circular", None));
    assert_eq!(
        e,
        "pad: Negative padding value is resulting in an empty dimension"
    );
    // Cropping everything away is an empty dimension, not an error.
    let y = kiln::pad_with(&x, [-2i64, -2], "circular", None).unwrap();
    assert_eq!(y.shape(), &[1, 1, 0]);
}

// ---- 2. conv_transpose with dilation and output_padding --------------------------------

#[test]
fn conv_transpose_dilation_and_output_padding_match_pytorch() {
    check_case(
        "conv_transpose2d_dil_outpad",
        3,
        |x| {
            let y = kiln::conv_transpose2d_with(
                &x[0],
                &x[1],
                Some(&x[2]),
                [3i64, 2],
                [1i64, 2],
                [2i64, 3],
                2,
                [4i64, 4],
            )?;
            assert_eq!(y.shape(), &[2, 4, 22, 22]);
            Ok(vec![y])
        },
        1e-10,
    );
    check_case(
        "conv_transpose1d_dil_outpad",
        3,
        |x| {
            Ok(vec![kiln::conv_transpose1d_with(
                &x[0],
                &x[1],
                Some(&x[2]),
                [2i64],
                [1i64],
                [2i64],
                1,
                [3i64],
            )?])
        },
        1e-10,
    );
    check_case(
        "conv_transpose1d_outpad_past_pad",
        2,
        |x| {
            Ok(vec![kiln::conv_transpose1d_with(
                &x[0],
                &x[1],
                None,
                [1i64],
                [0i64],
                [1i64],
                1,
                [2i64],
            )?])
        },
        1e-10,
    );
}

#[test]
fn conv_transpose_output_padding_past_stride_gradchecks() {
    let x = Tensor::from_vec(
        (0..8).map(|v| (v as f64 * 0.91).cos()).collect(),
        &[1, 2, 2, 2],
    )
    .unwrap()
    .requires_grad_(true)
    .unwrap();
    let w = Tensor::from_vec(
        (0..16).map(|v| (v as f64 * 0.53).sin()).collect(),
        &[2, 2, 2, 2],
    )
    .unwrap()
    .requires_grad_(true)
    .unwrap();
    gradcheck(
        &|xs: &[Tensor]| {
            Ok(vec![kiln::conv_transpose2d_with(
                &xs[0],
                &xs[1],
                None,
                [1i64, 2],
                [1i64, 0],
                [2i64, 1],
                1,
                [3i64, 2],
            )?])
        },
        &[x, w],
        GradcheckOptions::default(),
    )
    .unwrap();
}

// ---- 3. integer convolution ------------------------------------------------------------

#[test]
fn integer_conv_computes_in_the_integer_dtype() {
    check_case(
        "conv2d_i64",
        3,
        |x| {
            Ok(vec![kiln::conv2d_with(
                &x[0],
                &x[1],
                Some(&x[2]),
                [2i64, 1],
                [1i64],
                [1i64, 2],
                2,
            )?])
        },
        0.0,
    );
    check_case(
        "conv_transpose1d_i64",
        3,
        |x| {
            Ok(vec![kiln::conv_transpose1d_with(
                &x[0],
                &x[1],
                Some(&x[2]),
                [2i64],
                [1i64],
                [1i64],
                1,
                [1i64],
            )?])
        },
        0.0,
    );
}

#[test]
fn conv_rejects_mismatched_bias_and_weight_dtypes() {
    let xi = i64s(&[1; 9], &[1, 1, 3, 3]);
    let wi = i64s(&[1; 4], &[1, 1, 2, 2]);
    let bf = f32s(&[1.0], &[1]);
    let e = err_text(kiln::conv2d_with(
        &xi,
        &wi,
        Some(&bf),
        [1i64],
        [0i64],
        [1i64],
        1,
    ));
    assert_eq!(
        e,
        "conv2d: Input type (long int) and bias type (float) should be the same"
    );
    let xf = f32s(&[1.0; 9], &[1, 1, 3, 3]);
    let wf = f32s(&[1.0; 4], &[1, 1, 2, 2]);
    let bd = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    let e = err_text(kiln::conv2d_with(
        &xf,
        &wf,
        Some(&bd),
        [1i64],
        [0i64],
        [1i64],
        1,
    ));
    assert_eq!(
        e,
        "conv2d: Input type (float) and bias type (double) should be the same"
    );
    let e = err_text(kiln::conv2d_with(&xi, &wf, None, [1i64], [0i64], [1i64], 1));
    assert_eq!(e, "conv2d: expected scalar type Long but found Float");
    let e = err_text(kiln::conv2d_with(&xf, &wi, None, [1i64], [0i64], [1i64], 1));
    assert_eq!(e, "conv2d: expected scalar type Float but found Long");
    let x1 = i64s(&[1; 3], &[1, 1, 3]);
    let w1 = i64s(&[1; 2], &[1, 1, 2]);
    let e = err_text(kiln::conv1d_with(
        &x1,
        &w1,
        Some(&bf),
        [1i64],
        [0i64],
        [1i64],
        1,
    ));
    assert_eq!(
        e,
        "conv1d: Input type (long int) and bias type (float) should be the same"
    );
    let e = err_text(kiln::conv1d_padding_with(
        &x1,
        &w1,
        Some(&bf),
        [1i64],
        "same",
        [1i64],
        1,
    ));
    assert_eq!(
        e,
        "conv1d: Input type (long int) and bias type (float) should be the same"
    );
    let e = err_text(kiln::conv_transpose2d_with(
        &xi,
        &wi,
        Some(&bf),
        [1i64],
        [0i64],
        [0i64],
        1,
        [1i64],
    ));
    assert_eq!(
        e,
        "conv_transpose2d: result type Float can't be cast to the desired output type Long"
    );
    let e = err_text(kiln::conv_transpose2d_with(
        &xi,
        &wf,
        None,
        [1i64],
        [0i64],
        [0i64],
        1,
        [1i64],
    ));
    assert_eq!(
        e,
        "conv_transpose2d: expected scalar type Long but found Float"
    );
}

#[test]
fn conv_dtype_coverage_follows_pytorch_cpu() {
    // Bool has no convolution kernel; transposed convolution covers int64 among the
    // integers; a bias that casts to the input's dtype is added in it.
    let xb = Tensor::from_vec(vec![true; 9], &[1, 1, 3, 3]).unwrap();
    let wb = Tensor::from_vec(vec![true; 4], &[1, 1, 2, 2]).unwrap();
    let e = err_text(kiln::conv2d(&xb, &wb));
    assert_eq!(e, "conv2d: \"slow_conv2d_cpu\" not implemented for 'Bool'");
    let xi = Tensor::from_vec(vec![1i32; 3], &[1, 1, 3]).unwrap();
    let wi = Tensor::from_vec(vec![1i32; 2], &[1, 1, 2]).unwrap();
    let e = err_text(kiln::conv_transpose1d(&xi, &wi));
    assert_eq!(
        e,
        "conv_transpose1d: \"slow_conv_transpose2d_out_cpu\" not implemented for 'Int'"
    );
    // conv1d on int32 computes in int32: [1, 1, 1] * [1, 1] = [2, 2].
    let y = kiln::conv1d(&xi, &wi).unwrap();
    assert_eq!(
        (y.dtype(), y.to_vec::<i32>().unwrap()),
        (DType::I32, vec![2, 2])
    );
    let xf = f32s(&[1.0; 9], &[1, 1, 3, 3]);
    let wf = f32s(&[1.0; 4], &[1, 1, 2, 2]);
    let bd = Tensor::from_vec(vec![0.5f64], &[1]).unwrap();
    let y = kiln::conv_transpose2d_with(&xf, &wf, Some(&bd), [1i64], [0i64], [0i64], 1, [1i64])
        .unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(
        y.reshape([-1]).unwrap().to_vec::<f32>().unwrap()[..4],
        [1.5, 2.5, 2.5, 1.5]
    );
}

// ---- 4. avg_pool on int64 ----------------------------------------------------------------

#[test]
fn avg_pool_int64_stays_int64_and_truncates() {
    for (name, k, s, p, ceil, include) in [
        ("avg_pool1d_i64", 3i64, 2i64, 1i64, false, true),
        ("avg_pool1d_i64_nopad", 3, 2, 1, false, false),
        ("avg_pool1d_i64_ceil", 2, 3, 1, true, false),
    ] {
        check_case(
            name,
            1,
            |x| {
                Ok(vec![kiln::avg_pool1d_with(
                    &x[0],
                    &[k],
                    &[s],
                    &[p],
                    ceil,
                    include,
                )?])
            },
            0.0,
        );
    }
    for (name, k, s, p, ceil, include, div) in [
        ("avg_pool2d_i64", 3i64, 2i64, 1i64, false, true, None),
        ("avg_pool2d_i64_nopad", 3, 2, 1, false, false, None),
        ("avg_pool2d_i64_div", 3, 2, 1, false, true, Some(4)),
        ("avg_pool2d_i64_div_ceil", 2, 2, 0, true, true, Some(3)),
    ] {
        check_case(
            name,
            1,
            |x| {
                Ok(vec![kiln::avg_pool2d_with(
                    &x[0],
                    &[k],
                    &[s],
                    &[p],
                    ceil,
                    include,
                    div,
                )?])
            },
            0.0,
        );
    }
    // PyTorch's CPU kernel takes int64 only among the integer dtypes.
    let x = Tensor::from_vec(vec![1i32; 4], &[1, 1, 4]).unwrap();
    let e = err_text(kiln::avg_pool1d(&x, &[2]));
    assert_eq!(e, "avg_pool1d: \"avg_pool2d\" not implemented for 'Int'");
    let x = Tensor::from_vec(vec![true; 4], &[1, 2, 2]).unwrap();
    let e = err_text(kiln::avg_pool2d(&x, &[2]));
    assert_eq!(e, "avg_pool2d: \"avg_pool2d\" not implemented for 'Bool'");
}

// ---- 4b. max pooling's NaN, tie and -inf rules ------------------------------------------

/// Values and indices of `max_pool2d_with_indices` over a `[1, 1, 1, n]` row.
fn pool_row(row: &[f32], k: i64, s: i64, p: i64) -> (Vec<f32>, Vec<i64>) {
    let x = Tensor::from_slice(row, &[1, 1, 1, row.len()]).unwrap();
    let (v, i) =
        kiln::max_pool2d_with_indices_with(&x, &[1, k], &[1, s], &[0, p], &[1], false).unwrap();
    (v.to_vec::<f32>().unwrap(), i.to_vec::<i64>().unwrap())
}

/// PyTorch 2.x CPU's answers: the last NaN of a window wins, the first of equal maxima is
/// reported, a window of -inf reports its first tap inside the input; integer images pool too.
#[test]
fn max_pool_nan_tie_and_inf_rules_match_pytorch() {
    let nan = f32::NAN;
    let (v, i) = pool_row(&[nan, 1.0, nan, 2.0], 4, 4, 0);
    assert!(v[0].is_nan());
    assert_eq!(i, [2]);
    let (v, i) = pool_row(&[3.0, 3.0, 1.0, 3.0], 4, 4, 0);
    assert_eq!((v, i), (vec![3.0], vec![0]));
    let (v, i) = pool_row(&[f32::NEG_INFINITY; 4], 3, 1, 1);
    assert_eq!(v, [f32::NEG_INFINITY; 4]);
    assert_eq!(i, [0, 0, 1, 2]);
    let x = Tensor::from_slice(&[5i64, -7, 9, 9, 2, 1], &[1, 1, 2, 3]).unwrap();
    let (v, i) = kiln::max_pool2d_with_indices_with(&x, &[2], &[1], &[0], &[1], false).unwrap();
    assert_eq!(v.to_vec::<i64>().unwrap(), [9, 9]);
    assert_eq!(i.to_vec::<i64>().unwrap(), [3, 2]);
    // A channels-last image pools as its contiguous copy does.
    let x = Tensor::arange(0, 2 * 3 * 4 * 4, 1, DType::F32)
        .unwrap()
        .reshape([2, 3, 4, 4])
        .unwrap();
    let nhwc = x
        .permute(&[0, 2, 3, 1])
        .unwrap()
        .contiguous()
        .unwrap()
        .permute(&[0, 3, 1, 2])
        .unwrap();
    let a = kiln::max_pool2d_with_indices_with(&x, &[2], &[1], &[1], &[1], false).unwrap();
    let b = kiln::max_pool2d_with_indices_with(&nhwc, &[2], &[1], &[1], &[1], false).unwrap();
    assert_eq!(a.0.to_vec::<f32>().unwrap(), b.0.to_vec::<f32>().unwrap());
    assert_eq!(a.1.to_vec::<i64>().unwrap(), b.1.to_vec::<i64>().unwrap());
}

// ---- 5. pooling over inputs with empty non-batch dims -----------------------------------

#[test]
fn pooling_rejects_empty_non_batch_dims() {
    let e = err_text(kiln::max_pool1d(
        &Tensor::zeros([0, 10], DType::F32).unwrap(),
        &[2],
    ));
    assert_eq!(
        e,
        "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[0, 10]"
    );
    let e = err_text(kiln::max_pool1d(
        &Tensor::zeros([2, 3, 0], DType::F32).unwrap(),
        &[2],
    ));
    assert_eq!(
        e,
        "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 3, 0]"
    );
    let e = err_text(kiln::max_pool2d(
        &Tensor::zeros([0, 10, 10], DType::F32).unwrap(),
        &[2],
    ));
    assert_eq!(
        e,
        "max_pool2d: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[0, 10, 10]"
    );
    let e = err_text(kiln::avg_pool2d(
        &Tensor::zeros([1, 0, 4, 4], DType::F32).unwrap(),
        &[2],
    ));
    assert_eq!(
        e,
        "avg_pool2d: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 4, 4]"
    );
    // avg_pool1d runs as avg_pool2d over [N, C, 1, L] (or [C, 1, L]), as PyTorch's does.
    let e = err_text(kiln::avg_pool1d(
        &Tensor::zeros([0, 10], DType::F32).unwrap(),
        &[2],
    ));
    assert_eq!(
        e,
        "avg_pool1d: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[0, 1, 10]"
    );
    // An empty batch is fine.
    let y = kiln::max_pool1d(&Tensor::zeros([0, 3, 10], DType::F32).unwrap(), &[2]).unwrap();
    assert_eq!(y.shape(), &[0, 3, 5]);
    let y = kiln::avg_pool2d(&Tensor::zeros([0, 3, 4, 4], DType::F32).unwrap(), &[2]).unwrap();
    assert_eq!(y.shape(), &[0, 3, 2, 2]);
}

// ---- 6. batch_norm on empty inputs -------------------------------------------------------

#[test]
fn batch_norm_of_an_empty_input_is_an_empty_copy() {
    // PyTorch's batch_norm returns `input.clone() (* weight[0]) (+ bias[0])` for an empty
    // input, whatever its rank, and leaves the running statistics alone.
    let y = kiln::batch_norm(
        &Tensor::zeros([0], DType::F32).unwrap(),
        None,
        None,
        None,
        None,
        true,
        0.1,
        1e-5,
        false,
    )
    .unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[0usize][..], DType::F32));
    let x = Tensor::zeros([0, 3], DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let w = Tensor::from_vec(vec![2.0f64, 3.0, 4.0], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let b = Tensor::from_vec(vec![5.0f64, 6.0, 7.0], &[3]).unwrap();
    let rm = Tensor::from_vec(vec![0.5f64, 1.0, 1.5], &[3]).unwrap();
    let rv = Tensor::from_vec(vec![2.0f64, 2.5, 3.0], &[3]).unwrap();
    let y = kiln::batch_norm(
        &x,
        Some(&w),
        Some(&b),
        Some(&rm),
        Some(&rv),
        true,
        0.1,
        1e-5,
        false,
    )
    .unwrap();
    assert_eq!(y.shape(), &[0, 3]);
    assert_eq!(rm.to_vec::<f64>().unwrap(), [0.5, 1.0, 1.5]);
    assert_eq!(rv.to_vec::<f64>().unwrap(), [2.0, 2.5, 3.0]);
    let g = grad(&[y.sum().unwrap()], &[w], &[], GradOptions::default()).unwrap();
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f64>().unwrap(),
        [0.0, 0.0, 0.0]
    );
    // Evaluation without running statistics, and a 3-d empty input, too.
    let y = kiln::batch_norm(
        &Tensor::zeros([0, 2, 3], DType::F32).unwrap(),
        None,
        None,
        None,
        None,
        false,
        0.1,
        1e-5,
        false,
    )
    .unwrap();
    assert_eq!(y.shape(), &[0, 2, 3]);
}

// ---- 7. group_norm with no channels ------------------------------------------------------

#[test]
fn group_norm_rejects_zero_channels_groups_and_spatial_size() {
    let gn = |shape: &[usize], g: i64| {
        err_text(kiln::group_norm(
            &Tensor::zeros(shape, DType::F32).unwrap(),
            g,
        ))
    };
    assert_eq!(
        gn(&[2, 0, 4], 1),
        "group_norm: Expected number of channels to be greater than 0, got 0"
    );
    assert_eq!(
        gn(&[2, 0], 0),
        "group_norm: Expected number of channels to be greater than 0, got 0"
    );
    assert_eq!(
        gn(&[2, 3], 0),
        "group_norm: Expected num groups to be greater than 0, got 0"
    );
    assert_eq!(
        gn(&[2, 3, 0], 3),
        "group_norm: Expected HxW to be greater than 0, got 0"
    );
    let y = kiln::group_norm(&Tensor::zeros([0, 3, 4], DType::F32).unwrap(), 3).unwrap();
    assert_eq!(y.shape(), &[0, 3, 4]);
}

// ---- 8. tensordot over a size-1 dim ------------------------------------------------------

#[test]
fn tensordot_sums_a_size_one_contracted_dim_away() {
    check_case(
        "tensordot_size1_a",
        2,
        |x| Ok(vec![kiln::tensordot(&x[0], &x[1], &[0], &[0])?]),
        1e-12,
    );
    check_case(
        "tensordot_size1_b",
        2,
        |x| Ok(vec![kiln::tensordot(&x[0], &x[1], &[2, 0], &[0, 1])?]),
        1e-12,
    );
    check_case(
        "tensordot_size1_both",
        2,
        |x| Ok(vec![kiln::tensordot(&x[0], &x[1], &[1], &[1])?]),
        1e-12,
    );
    let e = err_text(kiln::tensordot(
        &Tensor::zeros([3, 2], DType::F32).unwrap(),
        &Tensor::zeros([4, 2], DType::F32).unwrap(),
        &[0],
        &[0],
    ));
    assert_eq!(
        e,
        "tensordot: contracted dimensions need to match, but first has size 3 in dim 0 and second has size 4 in dim 0"
    );
}

// ---- 9. integer addmv / addbmm / baddbmm / addmm ---------------------------------------

#[test]
fn integer_matrix_products_truncate_float_alpha_and_beta() {
    let betas_alphas = [(0.5, 1.5), (1.9, 2.7), (2.5, -1.5)];
    for (k, &(beta, alpha)) in betas_alphas.iter().enumerate() {
        check_case(
            &format!("addmv_i64_{k}"),
            3,
            |x| Ok(vec![kiln::addmv_with(&x[0], &x[1], &x[2], beta, alpha)?]),
            0.0,
        );
        check_case(
            &format!("addbmm_i64_{k}"),
            3,
            |x| Ok(vec![kiln::addbmm_with(&x[0], &x[1], &x[2], beta, alpha)?]),
            0.0,
        );
        check_case(
            &format!("baddbmm_i64_{k}"),
            3,
            |x| Ok(vec![kiln::baddbmm_with(&x[0], &x[1], &x[2], beta, alpha)?]),
            0.0,
        );
        check_case(
            &format!("addmm_i64_{k}"),
            3,
            |x| Ok(vec![kiln::addmm_with(&x[0], &x[1], &x[2], beta, alpha)?]),
            0.0,
        );
    }
    let c = case("addmv_i64_0");
    let e = err_text(kiln::addmv_with(
        t(&c, "in0"),
        t(&c, "in1"),
        t(&c, "in2"),
        1,
        1e30,
    ));
    assert_eq!(
        e,
        "addmv: value cannot be converted to type int64_t without overflow"
    );
    let e = err_text(kiln::addmv_with(
        t(&c, "in0"),
        t(&c, "in1"),
        t(&c, "in2"),
        f64::NAN,
        1,
    ));
    assert_eq!(
        e,
        "addmv: value cannot be converted to type int64_t without overflow"
    );
}

// ---- 10. linalg_qr: LAPACK's signs, and the gradient of wide matrices -------------------

#[test]
fn linalg_qr_matches_lapack_signs() {
    for name in ["tall", "square", "wide", "tri", "zdiag"] {
        for mode in ["reduced", "complete", "r"] {
            check_case(
                &format!("qr_{name}_{mode}"),
                1,
                |x| {
                    let _g = kiln::no_grad();
                    let (q, r) = kiln::linalg_qr_with(&x[0], mode)?;
                    Ok(vec![q, r])
                },
                1e-12,
            );
        }
    }
    check_case(
        "qr_batched",
        1,
        |x| {
            let _g = kiln::no_grad();
            let (q, r) = kiln::linalg_qr(&x[0])?;
            Ok(vec![q, r])
        },
        1e-12,
    );
}

#[test]
fn linalg_qr_gradients_match_pytorch() {
    for (name, mode) in [
        ("qr_grad_tall", "reduced"),
        ("qr_grad_square_complete", "complete"),
        ("qr_grad_wide", "reduced"),
        ("qr_grad_wide_complete", "complete"),
        ("qr_grad_wide_batched", "reduced"),
    ] {
        check_case(
            name,
            1,
            |x| {
                let (q, r) = kiln::linalg_qr_with(&x[0], mode)?;
                Ok(vec![q, r])
            },
            1e-10,
        );
    }
    check_case(
        "qr_grad_wide_r_only",
        1,
        |x| Ok(vec![kiln::linalg_qr(&x[0])?.1]),
        1e-10,
    );
    check_case(
        "qr_grad_wide_q_only",
        1,
        |x| Ok(vec![kiln::linalg_qr(&x[0])?.0]),
        1e-10,
    );
}

#[test]
fn linalg_qr_wide_gradcheck() {
    let a = Tensor::from_vec(
        // A quadratic phase: a plain `sin(a v + b)` fill has rank 2.
        (0..2 * 3 * 5)
            .map(|v| {
                let v = v as f64;
                (v * v * 0.377 + v * 0.77 + 0.2).sin()
            })
            .collect(),
        &[2, 3, 5],
    )
    .unwrap()
    .requires_grad_(true)
    .unwrap();
    for mode in ["reduced", "complete"] {
        gradcheck(
            &|xs: &[Tensor]| {
                let (q, r) = kiln::linalg_qr_with(&xs[0], mode)?;
                Ok(vec![q, r])
            },
            std::slice::from_ref(&a),
            GradcheckOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{mode}: {e}"));
    }
}
