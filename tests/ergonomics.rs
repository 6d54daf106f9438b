//! Operator overloading, size lists (`IntoDims`), basic indexing (`i` / `s!`) and the
//! prelude. Expected values are written out by hand (or computed by a separate f64 loop).

use kiln::prelude::*;
use kiln::TensorIndexer as TI;

fn v32(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn v64(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

/// The panic message of `f`, which must panic.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("expected a panic");
    if let Some(s) = err.downcast_ref::<String>() {
        s.clone()
    } else {
        err.downcast_ref::<&str>().unwrap().to_string()
    }
}

// ---- operators ----

#[test]
fn tensor_tensor_operators() {
    let a = Tensor::from([1f32, 2., 3.]);
    let b = Tensor::from([4f32, 5., 6.]);
    assert_eq!(v32(&(&a + &b)), vec![5., 7., 9.]);
    assert_eq!(v32(&(&a - &b)), vec![-3., -3., -3.]);
    assert_eq!(v32(&(&a * &b)), vec![4., 10., 18.]);
    assert_eq!(v32(&(&a / &b)), vec![0.25, 0.4, 0.5]);
    assert_eq!(v32(&(&b % &a)), vec![0., 1., 0.]);
    assert_eq!(v32(&(-&a)), vec![-1., -2., -3.]);
    // Owned and mixed operands.
    assert_eq!(v32(&(a.clone() + b.clone())), vec![5., 7., 9.]);
    assert_eq!(v32(&(a.clone() * &b)), vec![4., 10., 18.]);
    assert_eq!(v32(&(&a - b.clone())), vec![-3., -3., -3.]);
    assert_eq!(v32(&(-a.clone())), vec![-1., -2., -3.]);
    // Broadcasting as the op: [2, 1] + [3].
    let c = Tensor::from([[10f32], [20.]]);
    assert_eq!(v32(&(&c + &a)), vec![11., 12., 13., 21., 22., 23.]);
    // Python's % takes the divisor's sign (remainder, not fmod).
    let n = Tensor::from([-7i64, 7]);
    assert_eq!((&n % 3).to_vec::<i64>().unwrap(), vec![2, 1]);
    assert_eq!((&n % -3).to_vec::<i64>().unwrap(), vec![-1, -2]);
}

#[test]
fn tensor_scalar_operators() {
    let a = Tensor::from([1f32, 2., 4.]);
    assert_eq!(v32(&(&a + 1.0)), vec![2., 3., 5.]);
    assert_eq!(v32(&(1.0 + &a)), vec![2., 3., 5.]);
    assert_eq!(v32(&(&a - 1)), vec![0., 1., 3.]);
    assert_eq!(v32(&(1.0 - &a)), vec![0., -1., -3.]);
    assert_eq!(v32(&(&a * 2.0f32)), vec![2., 4., 8.]);
    assert_eq!(v32(&(2i64 * &a)), vec![2., 4., 8.]);
    assert_eq!(v32(&(&a / 2.0)), vec![0.5, 1., 2.]);
    assert_eq!(v32(&(4.0 / &a)), vec![4., 2., 1.]);
    assert_eq!(v32(&(&a % 3.0)), vec![1., 2., 1.]);
    assert_eq!(v32(&(a.clone() * 3)), vec![3., 6., 12.]);
    assert_eq!(v32(&(3 - a.clone())), vec![2., 1., -1.]);
    assert_eq!(v32(&(8 / a.clone())), vec![8., 4., 2.]);
}

#[test]
fn operator_promotion_is_pytorchs() {
    let i = Tensor::from([1i64, 2, 3]);
    // A float scalar makes an integer tensor the default float dtype.
    let f = &i * 2.5;
    assert_eq!(f.dtype(), DType::F32);
    assert_eq!(v32(&f), vec![2.5, 5., 7.5]);
    // An int scalar keeps the tensor's dtype; so does a wider int scalar (a Python number).
    assert_eq!((&i * 2).dtype(), DType::I64);
    let i32t = Tensor::from([1i32, 2]);
    assert_eq!((&i32t + 5i64).dtype(), DType::I32);
    // True division of integers is float; scalar / tensor too.
    let d = &i / 2;
    assert_eq!(d.dtype(), DType::F32);
    assert_eq!(v32(&d), vec![0.5, 1., 1.5]);
    let r = 3 / &i;
    assert_eq!(r.dtype(), DType::F32);
    assert_eq!(v32(&r), vec![3., 1.5, 1.]);
    let rs = 1.0 - &i;
    assert_eq!(rs.dtype(), DType::F32);
    assert_eq!(v32(&rs), vec![0., -1., -2.]);
    // A float scalar does not widen a float16 tensor.
    let h = Tensor::from([1f32, 2.]).to_dtype(DType::F16).unwrap();
    assert_eq!((&h * 2.0).dtype(), DType::F16);
    // Tensor with tensor: the wider dtype.
    let x = Tensor::from([1f64, 2., 3.]);
    assert_eq!((&i + &x).dtype(), DType::F64);
}

#[test]
fn assign_operators_are_in_place() {
    let a = Tensor::from([1f32, 2., 3.]);
    let mut h = a.clone(); // a handle to the same tensor
    h += &Tensor::from([1f32, 1., 1.]);
    assert_eq!(v32(&a), vec![2., 3., 4.]);
    h *= 2.0;
    assert_eq!(v32(&a), vec![4., 6., 8.]);
    h -= Tensor::from([1f32, 2., 3.]);
    assert_eq!(v32(&a), vec![3., 4., 5.]);
    h /= 2;
    assert_eq!(v32(&a), vec![1.5, 2., 2.5]);
    h %= 2.0;
    assert_eq!(v32(&a), vec![1.5, 0., 0.5]);
    h -= 1;
    h += 0.5f32;
    assert_eq!(v32(&a), vec![1., -0.5, 0.]);
}

#[test]
fn operators_record_autograd() {
    let x = Tensor::from([1f64, 2., 4.]).requires_grad_(true).unwrap();
    // y = ((x*x + 2x - 1) / 2) + (1 - x) + 3/x - (-x)
    // dy/dx = (2x + 2)/2 - 1 - 3/x² + 1 = x + 1 - 3/x²
    let y = (&x * &x + 2.0 * &x - 1.0) / 2.0 + (1.0 - &x) + 3.0 / &x - (-&x);
    y.sum().unwrap().backward().unwrap();
    let expected: Vec<f64> = [1f64, 2., 4.]
        .iter()
        .map(|&x| x + 1. - 3. / (x * x))
        .collect();
    let g = v64(&x.grad().unwrap());
    for (g, e) in g.iter().zip(&expected) {
        assert!((g - e).abs() < 1e-12, "{g} vs {e}");
    }
}

#[test]
fn operator_panics_with_the_ops_message() {
    let a = Tensor::from([1f32, 2., 3.]);
    let b = Tensor::from([1f32, 2., 3., 4.]);
    let expected = a.add(&b).unwrap_err().to_string();
    assert!(expected.starts_with("add: "), "{expected}");
    let (a2, b2) = (a.clone(), b.clone());
    assert_eq!(panic_message(move || drop(&a2 + &b2)), expected);
    let expected = a.mul(&b).unwrap_err().to_string();
    let (a2, b2) = (a.clone(), b.clone());
    assert_eq!(panic_message(move || drop(&a2 * &b2)), expected);
    // An in-place op whose result dtype cannot go back into self: int64 += 2.5.
    let i = Tensor::from([1i64, 2]);
    let expected = i.add_scalar_(2.5).unwrap_err().to_string();
    let mut i2 = i.clone();
    assert_eq!(panic_message(move || i2 += 2.5), expected);
    // neg of a bool tensor.
    let m = Tensor::from([true, false]);
    let expected = m.neg().unwrap_err().to_string();
    assert_eq!(panic_message(move || drop(-&m)), expected);
}

#[test]
#[should_panic(expected = "The size of tensor a (3) must match the size of tensor b (4)")]
fn shape_mismatch_panics() {
    let a = Tensor::from([1f32, 2., 3.]);
    let b = Tensor::from([1f32, 2., 3., 4.]);
    let _ = &a - &b;
}

// ---- size lists ----

#[test]
fn size_lists_take_every_form() {
    let x = Tensor::arange(0, 12, 1, DType::F32).unwrap();
    let want = [3usize, 4];
    let shape: &[usize] = &want;
    assert_eq!(x.view([3, 4]).unwrap().shape(), shape);
    assert_eq!(x.view([3, -1]).unwrap().shape(), shape);
    assert_eq!(x.view([3, -1]).unwrap().shape(), shape);
    assert_eq!(x.view([-1_i64, 4]).unwrap().shape(), shape);
    assert_eq!(x.view(vec![3_i64, -1]).unwrap().shape(), shape);
    assert_eq!(x.view(vec![3usize, 4]).unwrap().shape(), shape);
    assert_eq!(x.view(shape).unwrap().shape(), shape);
    assert_eq!(x.view(want).unwrap().shape(), shape);
    let dyn_i64: &[i64] = &[-1, 4];
    assert_eq!(x.reshape(dyn_i64).unwrap().shape(), shape);
    let y = x.reshape([3, 4]).unwrap();
    assert_eq!(x.reshape(y.shape()).unwrap().shape(), shape);
    // 0-dim: `()` for PyTorch's empty size list.
    let one = Tensor::from([5f32]);
    assert_eq!(one.reshape(()).unwrap().shape(), &[] as &[usize]);
    assert_eq!(one.view(()).unwrap().to_vec::<f32>().unwrap(), vec![5.]);
    // expand / broadcast_to; -1 keeps a size.
    let col = x.view([3, 1, 4]).unwrap();
    assert_eq!(col.expand([3, 2, -1]).unwrap().shape(), &[3, 2, 4]);
    assert_eq!(col.expand(vec![3usize, 2, 4]).unwrap().shape(), &[3, 2, 4]);
    assert_eq!(y.broadcast_to([2, 3, 4]).unwrap().shape(), &[2, 3, 4]);
    assert_eq!(y.repeat([2, 1]).unwrap().shape(), &[6, 4]);
    // Values: view is row-major reinterpretation.
    assert_eq!(
        v32(&x.view([2, -1]).unwrap().select(0, 1).unwrap()),
        (6..12).map(|v| v as f32).collect::<Vec<_>>()
    );
}

#[test]
fn factories_take_size_lists() {
    let x = Tensor::ones([2, 3], DType::F32).unwrap();
    assert_eq!(x.shape(), &[2, 3]);
    assert_eq!(
        Tensor::zeros(x.shape(), DType::F64).unwrap().shape(),
        &[2, 3]
    );
    assert_eq!(Tensor::zeros([2, 3], DType::F64).unwrap().shape(), &[2, 3]);
    assert_eq!(
        Tensor::empty(vec![4_i64], DType::I64).unwrap().shape(),
        &[4]
    );
    assert_eq!(
        Tensor::full(vec![2usize], 7, DType::I32)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![7, 7]
    );
    assert_eq!(Tensor::rand([5], DType::F32).unwrap().shape(), &[5]);
    assert_eq!(
        Tensor::randn((), DType::F32).unwrap().shape(),
        &[] as &[usize]
    );
    assert_eq!(
        Tensor::randint(0, 3, [2, 2], DType::I64).unwrap().shape(),
        &[2, 2]
    );
}

#[test]
fn negative_sizes_give_pytorchs_errors() {
    let x = Tensor::arange(0, 12, 1, DType::F32).unwrap();
    let e = x.view([-1, -1]).unwrap_err().to_string();
    assert!(e.contains("only one dimension can be inferred"), "{e}");
    let e = x.reshape([-2, 6]).unwrap_err().to_string();
    assert!(e.contains("invalid shape dimension -2"), "{e}");
    let e = x.view([5, -1]).unwrap_err().to_string();
    assert!(
        e.contains("shape '[5, -1]' is invalid for input of size 12"),
        "{e}"
    );
    // torch.zeros(-1, 2), torch.ones(2, -3), torch.rand(-1) in PyTorch 2.15.
    let e = Tensor::zeros([-1, 2], DType::F32).unwrap_err().to_string();
    assert_eq!(e, "zeros: Dimension size must be non-negative.");
    let e = Tensor::rand([-1], DType::F32).unwrap_err().to_string();
    assert_eq!(
        e,
        "rand: Trying to create tensor with negative dimension -1: [-1]"
    );
    let e = Tensor::ones(vec![2_i64, -3], DType::F32)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "ones: Trying to create tensor with negative dimension -3: [2, -3]"
    );
    let e = x
        .view([3, 1, 4])
        .unwrap()
        .expand([-1, -1, -1, 4])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not allowed in a leading, non-existing dimension 0"),
        "{e}"
    );
}

// ---- indexing ----

/// x = arange(24).reshape(2, 3, 4): x[i, j, k] = 12 i + 4 j + k.
fn cube() -> Tensor {
    Tensor::arange(0, 24, 1, DType::F32)
        .unwrap()
        .reshape([2, 3, 4])
        .unwrap()
}

/// The elements of `x` at the given index lists, in row-major order, from the formula.
fn pick(is: &[usize], js: &[usize], ks: &[usize]) -> Vec<f32> {
    let mut out = Vec::new();
    for &i in is {
        for &j in js {
            for &k in ks {
                out.push((12 * i + 4 * j + k) as f32);
            }
        }
    }
    out
}

#[test]
// `1..-1` is Python's `1:-1`, not an empty Rust range.
#[allow(clippy::reversed_empty_ranges)]
fn indexing_matches_python() {
    let x = cube();
    // x[:, ::2]
    let a = x.i(s![.., ..;2]).unwrap();
    assert_eq!(a.shape(), &[2, 2, 4]);
    assert_eq!(v32(&a), pick(&[0, 1], &[0, 2], &[0, 1, 2, 3]));
    // x[..., 0]
    let b = x.i(s![..., 0]).unwrap();
    assert_eq!(b.shape(), &[2, 3]);
    assert_eq!(v32(&b), pick(&[0, 1], &[0, 1, 2], &[0]));
    assert_eq!(v32(&x.i((Ellipsis, 0)).unwrap()), v32(&b));
    // x[1:3, None]: the slice is clamped to the size 2.
    let c = x.i(s![1..3, None]).unwrap();
    assert_eq!(c.shape(), &[1, 1, 3, 4]);
    assert_eq!(v32(&c), pick(&[1], &[0, 1, 2], &[0, 1, 2, 3]));
    assert_eq!(x.i((1..3, NewAxis)).unwrap().shape(), &[1, 1, 3, 4]);
    // x[-1]
    let d = x.i(-1).unwrap();
    assert_eq!(d.shape(), &[3, 4]);
    assert_eq!(v32(&d), pick(&[1], &[0, 1, 2], &[0, 1, 2, 3]));
    assert_eq!(v32(&x.i(s![-1]).unwrap()), v32(&d));
    // x[:, -1, 1::2]
    let e = x.i(s![.., -1, 1..;2]).unwrap();
    assert_eq!(e.shape(), &[2, 2]);
    assert_eq!(v32(&e), pick(&[0, 1], &[2], &[1, 3]));
    // x[-2:, :2] (..=1 is :2), x[0, 1:-1]
    let f = x.i((-2.., ..=1)).unwrap();
    assert_eq!(f.shape(), &[2, 2, 4]);
    assert_eq!(v32(&f), pick(&[0, 1], &[0, 1], &[0, 1, 2, 3]));
    assert_eq!(
        v32(&x.i((0, 1..-1)).unwrap()),
        pick(&[0], &[1], &[0, 1, 2, 3])
    );
    // x[1, :, 0:7:3] (end clamped), x[None, ..., None]
    let g = x.i(s![1, .., 0..7;3]).unwrap();
    assert_eq!(v32(&g), pick(&[1], &[0, 1, 2], &[0, 3]));
    assert_eq!(
        v32(&x.i((1usize, .., TI::slice(0, 7, 3))).unwrap()),
        v32(&g)
    );
    assert_eq!(x.i(s![None, ..., None]).unwrap().shape(), &[1, 2, 3, 4, 1]);
    // x[..., 1, :] and x[1, 2, 3] (0-dim), x[()]
    assert_eq!(
        v32(&x.i(s![..., 1, ..]).unwrap()),
        pick(&[0, 1], &[1], &[0, 1, 2, 3])
    );
    let h = x.i((1, 2, 3)).unwrap();
    assert_eq!(h.shape(), &[] as &[usize]);
    assert_eq!(v32(&h), vec![23.]);
    assert_eq!(x.i(()).unwrap().shape(), &[2, 3, 4]);
    // Out-of-range slices are empty, as Python's.
    assert_eq!(x.i(s![5..]).unwrap().shape(), &[0, 3, 4]);
    // A 0-dim tensor: x[None], x[...].
    assert_eq!(h.i(NewAxis).unwrap().shape(), &[1]);
    assert_eq!(h.i(Ellipsis).unwrap().shape(), &[] as &[usize]);
}

#[test]
fn indexing_makes_views() {
    let x = cube();
    for v in [
        x.i(s![.., ..;2]).unwrap(),
        x.i(s![..., 0]).unwrap(),
        x.i(s![1..3, None]).unwrap(),
        x.i(-1).unwrap(),
        x.i(..).unwrap(),
        x.i(()).unwrap(),
    ] {
        assert!(v.shares_storage_with(&x));
    }
    // Writing through the view writes x: x[:, 0, ::3] = 0 (elements k = 0, 3).
    x.i(s![.., 0, ..;3]).unwrap().zero_().unwrap();
    let mut expected: Vec<f32> = (0..24).map(|v| v as f32).collect();
    for i in 0..2 {
        for k in [0, 3] {
            expected[12 * i + k] = 0.;
        }
    }
    assert_eq!(v32(&x), expected);
}

#[test]
fn indexing_errors_are_pytorchs() {
    let x = cube();
    let e = x.i(TI::slice(None, None, -1)).unwrap_err().to_string();
    assert_eq!(e, "index: step must be greater than zero");
    let e = x.i((0, 0, 0, 0)).unwrap_err().to_string();
    assert_eq!(e, "index: too many indices for tensor of dimension 3");
    let e = x.i((Ellipsis, 0, Ellipsis)).unwrap_err().to_string();
    assert_eq!(e, "index: an index can only have a single ellipsis ('...')");
    let e = x.i(2).unwrap_err().to_string();
    assert_eq!(
        e,
        "index: index 2 is out of bounds for dimension 0 with size 2"
    );
    let e = x.i((.., -4)).unwrap_err().to_string();
    assert_eq!(
        e,
        "index: index -4 is out of bounds for dimension 1 with size 3"
    );
    // PyTorch names the item's position in the index: x[0, 5], x[None, 5], x[0, None, 7].
    let e = x.i((0, 5)).unwrap_err().to_string();
    assert_eq!(
        e,
        "index: index 5 is out of bounds for dimension 1 with size 3"
    );
    let e = x.i(s![None, 5]).unwrap_err().to_string();
    assert_eq!(
        e,
        "index: index 5 is out of bounds for dimension 1 with size 2"
    );
    let e = x.i(s![0, None, 7]).unwrap_err().to_string();
    assert_eq!(
        e,
        "index: index 7 is out of bounds for dimension 2 with size 3"
    );
    let e = x.i((1, 2, 3)).unwrap().i(0).unwrap_err().to_string();
    assert!(
        e.starts_with("index: invalid index of a 0-dim tensor."),
        "{e}"
    );
}

#[test]
fn indexing_records_autograd() {
    let x = Tensor::from([[1f64, 2., 3., 4.], [5., 6., 7., 8.]])
        .requires_grad_(true)
        .unwrap();
    // sum(x[:, 1::2] * 3) + sum(x[-1, None] ** 2 as x*x)
    let a = x.i(s![.., 1..;2]).unwrap();
    let b = x.i(s![-1, None]).unwrap();
    let y = (&a * 3.0).sum().unwrap() + (&b * &b).sum().unwrap();
    y.backward().unwrap();
    let xs = [[1f64, 2., 3., 4.], [5., 6., 7., 8.]];
    let mut expected = vec![0f64; 8];
    for i in 0..2 {
        for k in 0..4 {
            let mut g = 0.;
            if k % 2 == 1 {
                g += 3.;
            }
            if i == 1 {
                g += 2. * xs[i][k];
            }
            expected[4 * i + k] = g;
        }
    }
    assert_eq!(v64(&x.grad().unwrap()), expected);
}

// ---- prelude and clone docs ----

#[test]
fn clone_is_a_handle_clone_tensor_is_a_copy() {
    let x = Tensor::from([1f64, 2.]).requires_grad_(true).unwrap();
    let handle = x.clone();
    assert!(handle.shares_storage_with(&x));
    let copy = x.clone_tensor().unwrap();
    assert!(!copy.shares_storage_with(&x));
    // The copy is differentiable: d/dx sum(3 * copy) = 3.
    (&copy * 3.0).sum().unwrap().backward().unwrap();
    assert_eq!(v64(&handle.grad().unwrap()), vec![3., 3.]);
}

#[test]
fn prelude_names_resolve() {
    manual_seed(1);
    let lin = Linear::new(3, 2).unwrap();
    let x = Tensor::randn([4, 3], DType::F32).unwrap();
    let y = lin.forward(&x).unwrap();
    assert_eq!(y.shape(), &[4, 2]);
    assert!(!lin.parameters().is_empty());
    let _g = no_grad();
    let r: Result<Tensor> = x.view([-1]);
    assert_eq!(r.unwrap().shape(), &[12]);
    let _: Option<Error> = None;
    let _: Device = x.device();
    let _ = TensorIndexer::NewAxis;
}
