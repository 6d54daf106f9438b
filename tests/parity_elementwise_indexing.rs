//! PyTorch parity of elementwise and indexing ops (issue 21): `logit` with `eps > 0.5`,
//! `hardtanh` / `relu6` on integers and its `min > max` check, `square` on bool,
//! `take_along_dim` with negative indices, `gather` / `scatter` with an empty index of any
//! dtype, `masked_fill(Tensor)` / `masked_scatter` broadcasting `self`, `roll` of a 0-d
//! tensor, `sum_to_size` to an empty size, `median` of lines holding NaN, `prod` of empty
//! floats and of bools with `dtype=bool`, and `amax` / `amin` / `aminmax` over more than 64
//! dims.
//!
//! Every expected value and error text was printed by PyTorch 2.15 from
//! `tests/data/gen_parity_elementwise_indexing.py` (the line it printed is quoted above each
//! check); none is computed by kiln.

mod common;
use common::assert_err_contains;
use kiln::autograd::{grad, GradOptions};
use kiln::{DType, Result, Scalar, Tensor};

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "got {got:?}, want {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "got {got:?}, want {want:?}");
    }
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

fn i64s(t: &Tensor) -> Vec<i64> {
    t.to_dtype(DType::I64).unwrap().to_vec::<i64>().unwrap()
}

/// 0, 1, ..., 11 as f32 [3, 4] (PyTorch's `torch.arange(12.).reshape(3, 4)`).
fn a34() -> Tensor {
    Tensor::from_vec((0..12).map(|i| i as f32).collect::<Vec<_>>(), &[3, 4]).unwrap()
}

fn long(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

/// The gradient of `out` with respect to `inputs` for an upstream gradient 0, 1, 2, ... in
/// `out`'s shape (as the generator script's `grads`).
fn arange_grads(out: &Tensor, inputs: &[&Tensor]) -> Vec<Tensor> {
    let n = out.numel();
    let g = Tensor::from_vec((0..n).map(|i| i as f64).collect::<Vec<_>>(), out.shape())
        .unwrap()
        .to_dtype(out.dtype())
        .unwrap();
    let outs = [out.clone()];
    let ins: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
    grad(&outs, &ins, &[Some(g)], GradOptions::default())
        .unwrap()
        .into_iter()
        .map(|t| t.expect("a gradient"))
        .collect()
}

// ------------------------------------------------------------------------------- 1. logit

const LOGIT_X: [f64; 5] = [0.1, 0.3, 0.5, 0.7, 0.9];
const L: f64 = 0.4054651081081642;

#[test]
fn logit_eps_above_half_clamps_low_bound_first() -> Result<()> {
    let x = Tensor::from(LOGIT_X).requires_grad_(true)?;
    // logit eps=0.6 torch.float64 [5] [0.405.., 0.405.., 0.405.., -0.405.., -0.405..]
    let y = x.logit_with(Some(0.6))?;
    assert_close(&f64s(&y), &[L, L, L, -L, -L], 1e-15);
    // logit eps=0.6 grad[0] [5] [0.0, 0.0, 0.0, 0.0, 0.0]
    let g = arange_grads(&y, &[&x]);
    assert_close(&f64s(&g[0]), &[0.0; 5], 0.0);
    // logit f32 eps=0.6 torch.float32 [5] [0.40546518564224243, ... -0.40546518564224243]
    let y32 = x.detach().to_dtype(DType::F32)?.logit_with(Some(0.6))?;
    assert_eq!(y32.dtype(), DType::F32);
    let l32 = 0.40546518564224243;
    assert_close(&f64s(&y32), &[l32, l32, l32, -l32, -l32], 1e-7);
    Ok(())
}

#[test]
fn logit_eps_gradient_is_zero_outside_the_bounds() -> Result<()> {
    let x = Tensor::from(LOGIT_X).requires_grad_(true)?;
    // logit eps=0.4 torch.float64 [5] [-0.405.., -0.405.., 0.0, 0.405.., 0.405..]
    let y = x.logit_with(Some(0.4))?;
    assert_close(&f64s(&y), &[-L, -L, 0.0, L, L], 1e-15);
    // logit eps=0.4 grad[0] [5] [0.0, 0.0, 8.0, 0.0, 0.0]
    assert_close(
        &f64s(&arange_grads(&y, &[&x])[0]),
        &[0., 0., 8., 0., 0.],
        1e-12,
    );
    // logit eps=0.5 torch.float64 [5] [0.0, 0.0, 0.0, 0.0, 0.0]
    let y = x.logit_with(Some(0.5))?;
    assert_close(&f64s(&y), &[0.0; 5], 1e-15);
    // logit eps=0.5 grad[0] [5] [0.0, 0.0, 8.0, 0.0, 0.0]
    assert_close(
        &f64s(&arange_grads(&y, &[&x])[0]),
        &[0., 0., 8., 0., 0.],
        1e-12,
    );
    Ok(())
}

// ------------------------------------------------------- 2. hardtanh / relu6 / square dtypes

fn ints() -> Tensor {
    long(&[-3, 0, 2, 5, 9], &[5])
}

#[test]
fn hardtanh_on_integers_keeps_the_integer_dtype() -> Result<()> {
    // hardtanh i64 torch.int64 [5] [-1, 0, 1, 1, 1]
    let r = kiln::hardtanh(&ints())?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I64, vec![-1, 0, 1, 1, 1]));
    // hardtanh i64 -2 4 torch.int64 [5] [-2, 0, 2, 4, 4]
    let r = kiln::hardtanh_with(&ints(), -2, 4)?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I64, vec![-2, 0, 2, 4, 4]));
    // hardtanh i32 -1.5 1.5 torch.int32 [5] [-1, 0, 1, 1, 1]
    let r = kiln::hardtanh_with(&ints().to_dtype(DType::I32)?, -1.5, 1.5)?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I32, vec![-1, 0, 1, 1, 1]));
    // in place on an integer tensor
    let t = ints();
    t.hardtanh_with_(-2, 4)?;
    assert_eq!(i64s(&t), vec![-2, 0, 2, 4, 4]);
    Ok(())
}

#[test]
fn relu6_on_integers_keeps_the_integer_dtype() -> Result<()> {
    // relu6 i64 torch.int64 [5] [0, 0, 2, 5, 6]
    let r = kiln::relu6(&ints())?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I64, vec![0, 0, 2, 5, 6]));
    // relu6 u8 torch.uint8 [5] [6, 0, 2, 5, 6]
    let u = Tensor::from_slice(&[253u8, 0, 2, 5, 9], &[5])?;
    let r = kiln::relu6(&u)?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::U8, vec![6, 0, 2, 5, 6]));
    Ok(())
}

#[test]
fn integer_bounds_beyond_the_dtype_saturate_or_raise_as_pytorch() -> Result<()> {
    let u = Tensor::from_slice(&[0u8, 1, 2, 200], &[4])?;
    let c = Tensor::from_slice(&[-3i8, 0, 5, 100], &[4])?;
    let check = |r: Tensor, dtype: DType, want: &[i64]| {
        assert_eq!((r.dtype(), i64s(&r)), (dtype, want.to_vec()));
    };
    // hardtanh u8 torch.uint8 [4] [0, 1, 1, 1]  (the default min -1 clamps nothing)
    check(kiln::hardtanh(&u)?, DType::U8, &[0, 1, 1, 1]);
    // hardtanh u8 -5 300 torch.uint8 [4] [0, 1, 2, 200]
    check(
        kiln::hardtanh_with(&u, -5, 300)?,
        DType::U8,
        &[0, 1, 2, 200],
    );
    // relu6 u8 torch.uint8 [4] [0, 1, 2, 6]
    check(kiln::relu6(&u)?, DType::U8, &[0, 1, 2, 6]);
    // hardtanh i8 -200 50 torch.int8 [4] [-3, 0, 5, 50]
    check(
        kiln::hardtanh_with(&c, -200, 50)?,
        DType::I8,
        &[-3, 0, 5, 50],
    );
    // clamp u8 -1 1 torch.uint8 [4] [0, 1, 1, 1]  (kiln wrapped -1 to 255 before)
    check(
        u.clamp_with(Some(Scalar::Int(-1)), Some(Scalar::Int(1)))?,
        DType::U8,
        &[0, 1, 1, 1],
    );
    // clamp i8 -200 300 torch.int8 [4] [-3, 0, 5, 100]
    check(
        c.clamp_with(Some(Scalar::Int(-200)), Some(Scalar::Int(300)))?,
        DType::I8,
        &[-3, 0, 5, 100],
    );
    // clamp_ i8 min=-200 max=4 torch.int8 [4] [-3, 0, 4, 4]
    let t = c.clone_tensor()?;
    t.clamp_with_(Some(Scalar::Int(-200)), Some(Scalar::Int(4)))?;
    check(t, DType::I8, &[-3, 0, 4, 4]);
    // clamp u8 max=-1 raises RuntimeError Clamp max value -1 is outside the representable range of Byte
    assert_err_contains(
        u.clamp_with(None, Some(Scalar::Int(-1))),
        "Clamp max value -1 is outside the representable range of Byte",
    );
    assert_err_contains(
        kiln::hardtanh_with(&u, 300, 400),
        "Clamp min value 300 is outside the representable range of Byte",
    );
    Ok(())
}

#[test]
fn hardtanh_on_bool_raises_pytorch_error() -> Result<()> {
    // hardtanh bool raises NotImplementedError Bool inputs not supported for hardtanh
    let b = Tensor::from_slice(&[true, false], &[2])?;
    assert_err_contains(kiln::hardtanh(&b), "Bool inputs not supported for hardtanh");
    assert_err_contains(kiln::relu6(&b), "Bool inputs not supported for hardtanh");
    Ok(())
}

#[test]
fn square_of_bool_is_int64() -> Result<()> {
    let b = Tensor::from_slice(&[true, false], &[2])?;
    // square bool torch.int64 [2] [1, 0]
    let r = b.square()?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I64, vec![1, 0]));
    // square_ bool raises RuntimeError result type Long can't be cast to the desired output type Bool
    assert_err_contains(
        b.square_(),
        "result type Long can't be cast to the desired output type Bool",
    );
    // square i8 torch.int8 [2] [9, 16]
    let r = Tensor::from_slice(&[3i8, -4], &[2])?.square()?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I8, vec![9, 16]));
    Ok(())
}

// ------------------------------------------------------------------ 3. hardtanh min > max

#[test]
fn hardtanh_min_greater_than_max_raises() -> Result<()> {
    let x = Tensor::from_slice(&[-3.0f32, 0.0, 3.0], &[3])?;
    // hardtanh min>max raises ValueError min_val cannot be greater than max_val
    assert_err_contains(
        kiln::hardtanh_with(&x, 2.0, 1.0),
        "min_val cannot be greater than max_val",
    );
    // hardtanh_ min>max raises ValueError min_val cannot be greater than max_val
    assert_err_contains(
        x.hardtanh_with_(2.0, 1.0),
        "min_val cannot be greater than max_val",
    );
    assert_eq!(
        f64s(&x),
        vec![-3.0, 0.0, 3.0],
        "hardtanh_ wrote before failing"
    );
    let out = Tensor::zeros([3], DType::F32)?;
    assert_err_contains(
        kiln::hardtanh_out(&x, 2, 1, &out),
        "min_val cannot be greater than max_val",
    );
    assert_err_contains(
        kiln::hardtanh_with(&ints(), 2, 1),
        "min_val cannot be greater than max_val",
    );
    // hardtanh min==max torch.float32 [3] [1.0, 1.0, 1.0]
    assert_eq!(f64s(&kiln::hardtanh_with(&x, 1.0, 1.0)?), vec![1.0; 3]);
    Ok(())
}

// ------------------------------------------------------------------- 4. take_along_dim

#[test]
fn take_along_dim_wraps_negative_indices() -> Result<()> {
    // tad neg torch.float32 [3, 2] [3.0, 0.0, 4.0, 5.0, 10.0, 10.0]
    let r = a34().take_along_dim_with(&long(&[-1, 0, -4, 1, 2, -2], &[3, 2]), Some(1))?;
    assert_eq!(r.shape(), &[3, 2]);
    assert_eq!(f64s(&r), vec![3., 0., 4., 5., 10., 10.]);
    // tad wrap torch.float32 [3, 1] [1.0, 7.0, 8.0]   (indices are taken modulo the size)
    let r = a34().take_along_dim_with(&long(&[5, -9, 4], &[3, 1]), Some(1))?;
    assert_eq!(f64s(&r), vec![1., 7., 8.]);
    // tad dim0 torch.float32 [3, 4] [8.0, ..., 7.0]
    let r = a34().take_along_dim_with(&long(&[-4, -9, 4], &[3, 1]), Some(0))?;
    assert_eq!(r.shape(), &[3, 4]);
    assert_eq!(
        f64s(&r),
        vec![8., 9., 10., 11., 0., 1., 2., 3., 4., 5., 6., 7.]
    );
    Ok(())
}

#[test]
fn take_along_dim_negative_index_gradient() -> Result<()> {
    let a = a34().to_dtype(DType::F64)?.requires_grad_(true)?;
    let r = a.take_along_dim_with(&long(&[-1, 3, -4, 5, 2, -2], &[3, 2]), Some(1))?;
    // tad neg grad[0] [3, 4] [0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0, 9.0, 0.0]
    let g = arange_grads(&r, &[&a]);
    assert_eq!(
        f64s(&g[0]),
        vec![0., 0., 0., 1., 2., 3., 0., 0., 0., 0., 9., 0.]
    );
    Ok(())
}

#[test]
fn take_along_dim_errors_and_flat_form() -> Result<()> {
    // tad none neg raises RuntimeError index -1 is out of bounds for dimension 0 with size 12
    assert_err_contains(
        a34().take_along_dim(&long(&[1, -1], &[2])),
        "index -1 is out of bounds for dimension 0 with size 12",
    );
    // tad none i32 torch.float32 [2] [1.0, 11.0]
    let i32s = Tensor::from_slice(&[1i32, 11], &[2])?;
    assert_eq!(f64s(&a34().take_along_dim(&i32s)?), vec![1., 11.]);
    // tad i32 dim raises RuntimeError torch.take_along_dim(): dtype of indices should be Long but got Int
    let i32s = Tensor::from_slice(&[1i32], &[1, 1])?;
    assert_err_contains(
        a34().take_along_dim_with(&i32s, Some(1)),
        "torch.take_along_dim(): dtype of indices should be Long but got Int",
    );
    // tad zero size raises RuntimeError ZeroDivisionError
    let e = Tensor::zeros([3, 0], DType::F32)?;
    assert_err_contains(
        e.take_along_dim_with(&long(&[0], &[1, 1]), Some(1)),
        "ZeroDivisionError",
    );
    // tad 0-d raises IndexError Dimension specified as 0 but tensor has no dimensions
    let s = Tensor::from(5.0f32);
    for d in [0, -1] {
        assert_err_contains(
            s.take_along_dim_with(&Tensor::from(0i64), Some(d)),
            "Dimension specified as 0 but tensor has no dimensions",
        );
    }
    Ok(())
}

// ------------------------------------------------------------------------------ 5. gather

#[test]
fn gather_and_scatter_accept_an_empty_index_of_any_dtype() -> Result<()> {
    for dt in [DType::F32, DType::Bool, DType::I16, DType::U8, DType::I8] {
        // gather empty <dt> torch.float32 [3, 0] []
        let r = a34().gather(1, &Tensor::zeros([3, 0], dt)?)?;
        assert_eq!(
            (r.shape(), r.dtype()),
            (&[3usize, 0][..], DType::F32),
            "{dt:?}"
        );
        // gather empty 0,5 <dt> torch.float32 [0, 5] []
        let r = a34().gather(1, &Tensor::zeros([0, 5], dt)?)?;
        assert_eq!(r.shape(), &[0, 5], "{dt:?}");
        // scatter empty <dt> / scatter_add empty <dt> torch.float32 [3, 4] [0.0, ..., 11.0]
        let src = Tensor::zeros([3, 0], DType::F32)?;
        let idx = Tensor::zeros([3, 0], dt)?;
        let want: Vec<f64> = (0..12).map(|i| i as f64).collect();
        assert_eq!(f64s(&a34().scatter(1, &idx, &src)?), want, "{dt:?}");
        assert_eq!(f64s(&a34().scatter_add(1, &idx, &src)?), want, "{dt:?}");
    }
    // gather i16 raises RuntimeError gather(): Expected dtype int32/int64 for index
    assert_err_contains(
        a34().gather(1, &Tensor::zeros([3, 1], DType::I16)?),
        "Expected dtype int32/int64 for index",
    );
    // The gradient through an empty float index is zero.
    let a = a34().to_dtype(DType::F64)?.requires_grad_(true)?;
    let r = a.gather(1, &Tensor::zeros([3, 0], DType::F32)?)?;
    let g = grad(
        &[r.sum()?],
        std::slice::from_ref(&a),
        &[],
        GradOptions::default(),
    )?;
    assert_eq!(f64s(g[0].as_ref().unwrap()), vec![0.0; 12]);
    Ok(())
}

// ----------------------------------------------------- 6. masked_fill / masked_scatter

fn s5() -> Tensor {
    Tensor::from([0.0f64, 1.0, 2.0, 3.0, 4.0])
        .requires_grad_(true)
        .unwrap()
}

fn eye5() -> Tensor {
    let v: Vec<bool> = (0..25).map(|i| i % 6 == 0).collect();
    Tensor::from_vec(v, &[5, 5]).unwrap()
}

const FILLED: [f64; 25] = [
    -1.0, 1.0, 2.0, 3.0, 4.0, 0.0, -1.0, 2.0, 3.0, 4.0, 0.0, 1.0, -1.0, 3.0, 4.0, 0.0, 1.0, 2.0,
    -1.0, 4.0, 0.0, 1.0, 2.0, 3.0, -1.0,
];

#[test]
fn masked_fill_tensor_value_broadcasts_self_to_the_mask() -> Result<()> {
    let (s, v) = (s5(), Tensor::from(-1.0f64).requires_grad_(true)?);
    // masked_fill tensor torch.float64 [5, 5] [-1.0, 1.0, ...]
    let r = s.masked_fill_tensor(&eye5(), &v)?;
    assert_eq!(r.shape(), &[5, 5]);
    assert_eq!(f64s(&r), FILLED.to_vec());
    // masked_fill tensor grad[0] [5] [50.0, 49.0, 48.0, 47.0, 46.0]
    // masked_fill tensor grad[1] [] [60.0]
    let g = arange_grads(&r, &[&s, &v]);
    assert_eq!(g[0].shape(), &[5]);
    assert_eq!(f64s(&g[0]), vec![50., 49., 48., 47., 46.]);
    assert_eq!((g[1].shape(), f64s(&g[1])), (&[][..], vec![60.0]));
    // masked_fill scalar torch.float64 [5, 5] (the Scalar overload agrees)
    assert_eq!(
        f64s(&s.detach().masked_fill(&eye5(), -1.0)?),
        FILLED.to_vec()
    );
    Ok(())
}

#[test]
fn masked_scatter_broadcasts_self_to_the_mask() -> Result<()> {
    let s = s5();
    let src = Tensor::from_vec((0..10).map(|i| 10.0 * i as f64).collect::<Vec<_>>(), &[10])?
        .requires_grad_(true)?;
    // masked_scatter torch.float64 [5, 5] [0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 10.0, ...]
    let r = s.masked_scatter(&eye5(), &src)?;
    assert_eq!(r.shape(), &[5, 5]);
    let want: Vec<f64> = (0..25)
        .map(|k| {
            if k % 6 == 0 {
                10.0 * (k / 6) as f64
            } else {
                (k % 5) as f64
            }
        })
        .collect();
    assert_eq!(f64s(&r), want);
    // masked_scatter grad[0] [5] [50.0, 49.0, 48.0, 47.0, 46.0]
    // masked_scatter grad[1] [10] [0.0, 6.0, 12.0, 18.0, 24.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    let g = arange_grads(&r, &[&s, &src]);
    assert_eq!(f64s(&g[0]), vec![50., 49., 48., 47., 46.]);
    assert_eq!(f64s(&g[1]), vec![0., 6., 12., 18., 24., 0., 0., 0., 0., 0.]);
    // masked_scatter col torch.float32 [5, 3] [100.0, 0.0, 101.0, 102.0, 1.0, 103.0, ...]
    let col = Tensor::from_vec((0..5).map(|i| i as f32).collect::<Vec<_>>(), &[5, 1])?;
    let src = Tensor::from_vec((0..20).map(|i| 100.0 + i as f32).collect::<Vec<_>>(), &[20])?;
    let r = col.masked_scatter(&Tensor::from_slice(&[true, false, true], &[3])?, &src)?;
    assert_eq!(r.shape(), &[5, 3]);
    assert_eq!(
        f64s(&r),
        vec![100., 0., 101., 102., 1., 103., 104., 2., 105., 106., 3., 107., 108., 4., 109.]
    );
    Ok(())
}

#[test]
fn masked_fill_shape_errors_match_pytorch() -> Result<()> {
    // masked_fill_ grows raises RuntimeError output with shape [5] doesn't match the broadcast shape [5, 5]
    let s = s5().detach();
    assert_err_contains(
        s.masked_fill_(&eye5(), -1.0),
        "output with shape [5] doesn't match the broadcast shape [5, 5]",
    );
    // masked_fill tensor bad / masked_scatter bad raise RuntimeError The size of tensor a (4)
    // must match the size of tensor b (2) at non-singleton dimension 0
    let ones = Tensor::ones([2, 3], DType::F32)?;
    let m = Tensor::ones([4, 3], DType::Bool)?;
    let msg =
        "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 0";
    assert_err_contains(ones.masked_fill_tensor(&m, &Tensor::from(1.0f32)), msg);
    let src = Tensor::zeros([20], DType::F32)?;
    assert_err_contains(ones.masked_scatter(&m, &src), msg);
    Ok(())
}

// -------------------------------------------------------------------------------- 7. roll

#[test]
fn roll_of_a_0d_tensor_along_a_dim_raises() -> Result<()> {
    let s = Tensor::from(3.0f32);
    // roll 0-d 0 raises IndexError Dimension specified as 0 but tensor has no dimensions
    assert_err_contains(
        s.roll_with([1], &[0]),
        "Dimension specified as 0 but tensor has no dimensions",
    );
    // roll 0-d -1 raises IndexError Dimension specified as -1 but tensor has no dimensions
    assert_err_contains(
        s.roll_with([1], &[-1]),
        "Dimension specified as -1 but tensor has no dimensions",
    );
    // roll 0-d flat torch.float32 [] [3.0]
    let r = s.roll([1])?;
    assert_eq!((r.shape(), f64s(&r)), (&[][..], vec![3.0]));
    // roll empty bad dim torch.float32 [0, 3] []
    let r = Tensor::zeros([0, 3], DType::F32)?.roll_with([1], &[5])?;
    assert_eq!(r.shape(), &[0, 3]);
    Ok(())
}

// ------------------------------------------------------------------------- 8. sum_to_size

#[test]
fn sum_to_size_of_0d_integers_and_bool_is_int64() -> Result<()> {
    let empty: [i64; 0] = [];
    // sum_to_size 0-d bool torch.int64 [] [1]
    let r = Tensor::from(true).sum_to_size(empty)?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I64, vec![1]));
    // sum_to_size 0-d i32 torch.int64 [] [3]
    let r = Tensor::from(3i32).sum_to_size(empty)?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I64, vec![3]));
    // sum_to_size 0-d u8 torch.int64 [] [3]
    let r = Tensor::from(3u8).sum_to_size(empty)?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::I64, vec![3]));
    // sum_to_size [1] u8 torch.uint8 [1] [3]
    let r = Tensor::from_slice(&[3u8], &[1])?.sum_to_size([1])?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::U8, vec![3]));
    // sum_to_size [[1]] bool torch.int64 [1] [1]
    let r = Tensor::from_slice(&[true], &[1, 1])?.sum_to_size([1])?;
    assert_eq!(
        (r.dtype(), r.shape(), i64s(&r)),
        (DType::I64, &[1usize][..], vec![1])
    );
    Ok(())
}

// -------------------------------------------------------------------------------- 9. prod

#[test]
fn prod_of_empty_floats_is_differentiable() -> Result<()> {
    let e = Tensor::zeros([0], DType::F64)?.requires_grad_(true)?;
    // prod empty torch.float64 [] [1.0]; prod empty grad [0]
    let p = e.prod()?;
    assert_eq!((p.shape(), f64s(&p)), (&[][..], vec![1.0]));
    let g = grad(&[p], std::slice::from_ref(&e), &[], GradOptions::default())?;
    assert_eq!(g[0].as_ref().unwrap().shape(), &[0]);
    // prod_dim empty torch.float64 [2] [1.0, 1.0]; prod_dim empty grad [2, 0]
    let e2 = Tensor::zeros([2, 0], DType::F64)?.requires_grad_(true)?;
    let p = e2.prod_dim(1)?;
    assert_eq!(f64s(&p), vec![1.0, 1.0]);
    let g = grad(
        &[p.sum()?],
        std::slice::from_ref(&e2),
        &[],
        GradOptions::default(),
    )?;
    assert_eq!(g[0].as_ref().unwrap().shape(), &[2, 0]);
    Ok(())
}

#[test]
fn prod_with_dtype_bool() -> Result<()> {
    let b = Tensor::from_slice(&[true, false, true, true], &[2, 2])?;
    // prod bool dim bool torch.bool [2] [False, True]
    let r = b.prod_dim_with(1, false, Some(DType::Bool))?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::Bool, vec![0, 1]));
    // prod bool bool torch.bool [] [False]
    let r = b.prod_with(Some(DType::Bool))?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::Bool, vec![0]));
    // prod u8 dim bool torch.bool [] [True]
    let u = Tensor::from_slice(&[2u8, 3], &[2])?;
    let r = u.prod_dim_with(0, false, Some(DType::Bool))?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::Bool, vec![1]));
    // prod f32 dim bool torch.bool [] [True]  (cast to bool before multiplying)
    let f = Tensor::from_slice(&[1e-30f32, 1e-30], &[2])?;
    let r = f.prod_dim_with(0, false, Some(DType::Bool))?;
    assert_eq!((r.dtype(), i64s(&r)), (DType::Bool, vec![1]));
    Ok(())
}

// ---------------------------------------------------------------- 10. more than 64 dims

#[test]
fn amax_amin_aminmax_over_more_than_64_dims_raise() -> Result<()> {
    let x = Tensor::ones(vec![1usize; 65].as_slice(), DType::F32)?;
    let msg = "only tensors with up to 64 dims are supported";
    // amax 65 dim / amin 65 dim / aminmax 65 dim raise RuntimeError only tensors with up to 64 dims are supported
    assert_err_contains(x.amax_with(&[0], false), msg);
    assert_err_contains(x.amin_with(&[-1], false), msg);
    assert_err_contains(x.aminmax_with(Some(0), false).map(|_| ()), msg);
    assert_err_contains(x.aminmax_with(Some(0), false).map(|_| ()), "aminmax:");
    // amax 65 all torch.float32 [] [1.0]; aminmax 65 all [1.0] [1.0]
    assert_eq!(f64s(&x.amax()?), vec![1.0]);
    let (lo, hi) = x.aminmax()?;
    assert_eq!((f64s(&lo), f64s(&hi)), (vec![1.0], vec![1.0]));
    Ok(())
}

/// `median` propagates NaN as PyTorch does: a line holding a NaN gives its first NaN and that
/// NaN's index (kiln used to return the lower median of the other values).
#[test]
fn median_propagates_nan_with_the_first_nans_index() -> Result<()> {
    let nan = f32::NAN;
    let m = Tensor::from_vec(
        vec![
            1., nan, 2., 0., 5., 4., nan, nan, 1., 2., 3., 4., nan, 1., nan, 2.,
        ],
        &[4, 4],
    )?;
    let same = |got: &[f64], want: &[f64]| {
        assert_eq!(got.len(), want.len(), "got {got:?}, want {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                g == w || (g.is_nan() && w.is_nan()),
                "got {got:?}, want {want:?}"
            );
        }
    };
    // median_dim nan[0] torch.float32 [4] [nan, nan, 2.0, nan]
    // median_dim nan[1] torch.int64 [4] [1, 2, 1, 0]
    let (v, i) = m.median_dim(1)?;
    same(&f64s(&v), &[f64::NAN, f64::NAN, 2.0, f64::NAN]);
    assert_eq!(i64s(&i), [1, 2, 1, 0]);
    // median_dim nan keepdim[0] torch.float32 [1, 4] [nan, nan, 2.0, nan]
    // median_dim nan keepdim[1] torch.int64 [1, 4] [1, 2, 1, 0]
    let (v, i) = m.t()?.median_dim_with(0, true)?;
    assert_eq!(v.shape(), [1, 4]);
    same(&f64s(&v), &[f64::NAN, f64::NAN, 2.0, f64::NAN]);
    assert_eq!(i64s(&i), [1, 2, 1, 0]);
    // median nan torch.float32 [] [nan]
    assert!(m.median()?.item::<f64>()?.is_nan());
    // median no nan torch.float32 [] [2.0]
    assert_eq!(m.select(0, 2)?.median()?.item::<f64>()?, 2.0);
    // median_dim nan grad[0] [4, 4] [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 0.0,
    //   0.0, 3.0, 0.0, 0.0, 0.0]
    let x = m.detach().requires_grad_(true)?;
    let out = x.median_dim(1)?.0;
    let g = Tensor::from_vec(vec![0f32, 1., 2., 3.], &[4])?;
    let gx = grad(&[out], &[x], &[Some(g)], GradOptions::default())?;
    let gx = gx[0].as_ref().expect("a gradient for x");
    assert_eq!(
        f64s(gx),
        [0., 0., 0., 0., 0., 0., 1., 0., 0., 2., 0., 0., 3., 0., 0., 0.]
    );
    Ok(())
}
