//! Hand-written behaviour tests of `Tensor` itself: views and storage sharing, in-place
//! writes and aliasing, version counters, type promotion, broadcasting, creation, conversion,
//! printing, devices, threads, error reporting and matmul's rank cases.
//!
//! Expected values are worked out by hand or taken from PyTorch's documented behaviour; no
//! test compares a kiln kernel against itself.

use half::{bf16, f16};
use kiln::tensor::promotion::{result_type, Operand};
use kiln::{DType, Device, Generator, Result, Tensor};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// Tests that use the global generator hold this lock, so no other test draws from it
/// between a reseed and the draws that follow.
static GLOBAL_RNG: Mutex<()> = Mutex::new(());

fn global_rng_lock() -> std::sync::MutexGuard<'static, ()> {
    GLOBAL_RNG.lock().unwrap_or_else(|e| e.into_inner())
}

/// The error's message, failing the test if `r` is not an error.
fn err_msg<T: std::fmt::Debug>(r: Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.to_string(),
    }
}

/// Asserts that `r` failed with a message containing `needle`.
#[track_caller]
fn assert_err_contains<T: std::fmt::Debug>(r: Result<T>, needle: &str) {
    let msg = err_msg(r);
    assert!(
        msg.contains(needle),
        "error message {msg:?} does not contain {needle:?}"
    );
}

/// 0., 1., ..., n-1 as f32 with the given shape (built from Rust data, not by a kernel).
fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Views share storage and never copy
// ---------------------------------------------------------------------------------------------

#[test]
fn view_shares_storage_with_base() -> Result<()> {
    let a = iota(&[2, 3]);
    assert!(a.view([3, 2])?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn reshape_of_contiguous_shares_storage_with_base() -> Result<()> {
    let a = iota(&[2, 3]);
    assert!(a.reshape([6])?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn permute_shares_storage_with_base() -> Result<()> {
    let a = iota(&[2, 3, 4]);
    assert!(a.permute(&[2, 0, 1])?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn transpose_shares_storage_with_base() -> Result<()> {
    let a = iota(&[2, 3]);
    assert!(a.transpose(0, 1)?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn t_shares_storage_with_base() -> Result<()> {
    let a = iota(&[2, 3]);
    assert!(a.t()?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn unsqueeze_shares_storage_with_base() -> Result<()> {
    let a = iota(&[2, 3]);
    assert!(a.unsqueeze(1)?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn squeeze_shares_storage_with_base() -> Result<()> {
    let a = iota(&[1, 3, 1]);
    assert!(a.squeeze()?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn expand_shares_storage_with_base() -> Result<()> {
    let a = iota(&[3, 1]);
    assert!(a.expand([3, 4])?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn narrow_shares_storage_with_base() -> Result<()> {
    let a = iota(&[5]);
    assert!(a.narrow(0, 1, 3)?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn select_shares_storage_with_base() -> Result<()> {
    let a = iota(&[2, 3]);
    assert!(a.select(1, 2)?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn step_slice_shares_storage_with_base() -> Result<()> {
    let a = iota(&[6]);
    assert!(a.slice_with(0, Some(0), None, 2)?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn flatten_of_contiguous_shares_storage_with_base() -> Result<()> {
    let a = iota(&[2, 3, 4]);
    assert!(a.flatten()?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn unflatten_shares_storage_with_base() -> Result<()> {
    let a = iota(&[6]);
    assert!(a.unflatten(0, [2, 3])?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn as_strided_shares_storage_with_base() -> Result<()> {
    let a = iota(&[4]);
    assert!(a.as_strided([2, 2], [1, 2])?.shares_storage_with(&a));
    Ok(())
}

#[test]
fn step_slice_reads_every_other_element() -> Result<()> {
    let a = iota(&[7]);
    assert_eq!(
        a.slice_with(0, Some(1), None, 2)?.to_vec::<f32>()?,
        vec![1., 3., 5.]
    );
    Ok(())
}

#[test]
fn as_strided_reads_the_requested_geometry() -> Result<()> {
    // size [2, 2], stride [1, 2] over [0, 1, 2, 3]: element (i, j) is storage[i + 2j].
    let a = iota(&[4]);
    assert_eq!(
        a.as_strided([2, 2], [1, 2])?.to_vec::<f32>()?,
        vec![0., 2., 1., 3.]
    );
    Ok(())
}

#[test]
fn reshape_of_transposed_tensor_does_not_share_storage() -> Result<()> {
    let a = iota(&[2, 3]);
    let r = a.t()?.reshape([6])?;
    assert!(!r.shares_storage_with(&a));
    Ok(())
}

#[test]
fn reshape_of_transposed_tensor_gives_transposed_values() -> Result<()> {
    // a = [[0, 1, 2], [3, 4, 5]]; a.t() = [[0, 3], [1, 4], [2, 5]].
    let a = iota(&[2, 3]);
    assert_eq!(
        a.t()?.reshape([6])?.to_vec::<f32>()?,
        vec![0., 3., 1., 4., 2., 5.]
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// In-place writes through views
// ---------------------------------------------------------------------------------------------

#[test]
fn inplace_through_narrow_view_is_visible_in_base() -> Result<()> {
    let a = iota(&[4]);
    let b = a.narrow(0, 1, 2)?;
    b.mul_scalar_(10)?;
    assert_eq!(a.to_vec::<f32>()?, vec![0., 10., 20., 3.]);
    Ok(())
}

#[test]
fn inplace_through_transposed_view_is_visible_in_base() -> Result<()> {
    // a = [[0, 1, 2], [3, 4, 5]]; a.t()[i][j] = a[j][i] gets + add[i][j].
    let a = iota(&[2, 3]);
    let add = Tensor::from([[10f32, 20.], [30., 40.], [50., 60.]]);
    a.t()?.add_(&add)?;
    assert_eq!(a.to_vec::<f32>()?, vec![10., 31., 52., 23., 44., 65.]);
    Ok(())
}

#[test]
fn inplace_through_step2_slice_view_is_visible_in_base() -> Result<()> {
    let a = Tensor::from([1f32, 2., 3., 4., 5., 6.]);
    a.slice_with(0, Some(0), None, 2)?.mul_scalar_(-1)?;
    assert_eq!(a.to_vec::<f32>()?, vec![-1., 2., -3., 4., -5., 6.]);
    Ok(())
}

#[test]
fn inplace_through_select_view_is_visible_in_base() -> Result<()> {
    let a = Tensor::from([[1f32, 2.], [3., 4.]]);
    a.select(1, 0)?.add_scalar_(100)?;
    assert_eq!(a.to_vec::<f32>()?, vec![101., 2., 103., 4.]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// In-place ops whose inputs overlap the output
// ---------------------------------------------------------------------------------------------

#[test]
fn add_inplace_with_itself_doubles() -> Result<()> {
    let x = Tensor::from([1f32, -2., 3.5]);
    x.add_(&x)?;
    assert_eq!(x.to_vec::<f32>()?, vec![2., -4., 7.]);
    Ok(())
}

#[test]
fn mul_inplace_with_itself_squares() -> Result<()> {
    let x = Tensor::from([1f32, -2., 3.]);
    x.mul_(&x)?;
    assert_eq!(x.to_vec::<f32>()?, vec![1., 4., 9.]);
    Ok(())
}

#[test]
fn inplace_add_of_overlapping_shifted_view_uses_original_values() -> Result<()> {
    // a[1:4] += a[0:3] with a = [0, 1, 2, 3]: [1, 2, 3] + [0, 1, 2] = [1, 3, 5] from the
    // original values (no running sum through the overlap).
    let a = Tensor::arange(0., 4., 1., DType::F32)?;
    a.narrow(0, 1, 3)?.add_(&a.narrow(0, 0, 3)?)?;
    assert_eq!(a.to_vec::<f32>()?, vec![0., 1., 3., 5.]);
    Ok(())
}

#[test]
fn inplace_add_of_transposed_self_uses_original_values() -> Result<()> {
    // a += a.t() with a = [[0, 1], [2, 3]]: [[0, 3], [3, 6]].
    let a = iota(&[2, 2]);
    a.add_(&a.t()?)?;
    assert_eq!(a.to_vec::<f32>()?, vec![0., 3., 3., 6.]);
    Ok(())
}

// Contiguous operands take the short path (one lock per storage, whole slices): inputs that
// are the same storage, or views of one storage at different offsets, read through one lock.

#[test]
fn out_of_place_ops_on_views_of_one_storage() -> Result<()> {
    let a = Tensor::arange(0., 6., 1., DType::F32)?;
    // Same tensor twice, then two disjoint views of its storage, then a view and the base.
    assert_eq!(a.add(&a)?.to_vec::<f32>()?, vec![0., 2., 4., 6., 8., 10.]);
    let (lo, hi) = (a.narrow(0, 0, 3)?, a.narrow(0, 3, 3)?);
    assert_eq!(lo.mul(&hi)?.to_vec::<f32>()?, vec![0., 4., 10.]);
    assert_eq!(hi.sub(&lo)?.to_vec::<f32>()?, vec![3., 3., 3.]);
    for (got, x) in hi.exp()?.to_vec::<f32>()?.into_iter().zip([3f64, 4., 5.]) {
        assert!(
            (got as f64 - x.exp()).abs() <= 1e-6 * x.exp(),
            "exp({x}) = {got}"
        );
    }
    // In place through one view, reading the other: the base sees it.
    lo.add_(&hi)?;
    assert_eq!(a.to_vec::<f32>()?, vec![3., 5., 7., 3., 4., 5.]);
    // Empty views, one at an offset at the storage's end.
    let (e0, e1) = (a.narrow(0, 0, 0)?, a.narrow(0, 6, 0)?);
    assert_eq!(e0.add(&e1)?.shape(), &[0]);
    Ok(())
}

// Large enough (more than 2^15 elements) that the kernels walk tiles and split the loop
// over threads; the shapes are not multiples of any tile.

#[test]
fn large_transposed_views_copy_add_and_sum_elementwise() -> Result<()> {
    let (r, c) = (301, 203);
    let at = iota(&[r, c]).t()?; // at[j][i] = i * c + j
    let got = at.contiguous()?.to_vec::<f32>()?;
    let row = iota(&[1, r]); // broadcast over at's rows: + i
    let plus_row = at.add(&row)?.to_vec::<f32>()?;
    for j in 0..c {
        for i in 0..r {
            let v = (i * c + j) as f32;
            assert_eq!(got[j * r + i], v, "contiguous() at [{j}, {i}]");
            assert_eq!(plus_row[j * r + i], v + i as f32, "add at [{j}, {i}]");
        }
    }
    // A step-2 slice, transposed: [c/2 of the odd columns, r].
    let odd = iota(&[r, c]).slice_with(1, Some(1), None, 2)?.t()?;
    let got = odd.contiguous()?.to_vec::<f32>()?;
    for k in 0..c / 2 {
        for i in 0..r {
            assert_eq!(got[k * r + i], (i * c + 2 * k + 1) as f32, "[{k}, {i}]");
        }
    }
    // Sums over each dim (exact: integers below 2^24).
    let rows = at.sum_dim(&[1])?.to_vec::<f32>()?;
    let cols = at.sum_dim(&[0])?.to_vec::<f32>()?;
    for (j, &s) in rows.iter().enumerate() {
        assert_eq!(s, (c * r * (r - 1) / 2 + r * j) as f32, "row sum {j}");
    }
    for (i, &s) in cols.iter().enumerate() {
        assert_eq!(s, (c * c * i + c * (c - 1) / 2) as f32, "column sum {i}");
    }
    // One row-major and one transposed operand.
    let n = 257;
    let m = iota(&[n, n]);
    let got = m.add(&m.t()?)?.to_vec::<f32>()?;
    for i in 0..n {
        for j in 0..n {
            assert_eq!(got[i * n + j], ((i * n + j) + (j * n + i)) as f32);
        }
    }
    Ok(())
}

#[test]
fn inplace_ops_on_a_large_transposed_view_reach_the_base() -> Result<()> {
    let (r, c) = (260, 190);
    let a = Tensor::zeros([r, c], DType::F32)?;
    a.t()?.add_(&iota(&[c, r]))?; // a[i][j] += (j * r + i)
    a.t()?.mul_scalar_(2)?;
    let got = a.to_vec::<f32>()?;
    for i in 0..r {
        for j in 0..c {
            assert_eq!(got[i * c + j], (2 * (j * r + i)) as f32, "[{i}, {j}]");
        }
    }
    Ok(())
}

#[test]
fn inplace_add_of_large_transposed_self_uses_original_values() -> Result<()> {
    let n = 200;
    let want = |p: usize, q: usize| ((p * n + q) + (q * n + p)) as f32;
    let a = iota(&[n, n]);
    a.add_(&a.t()?)?;
    let b = iota(&[n, n]);
    b.t()?.add_(&b)?; // b[q][p] += b[p][q], all from the original values
    let (a, b) = (a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    for p in 0..n {
        for q in 0..n {
            assert_eq!(a[p * n + q], want(p, q), "a[{p}, {q}]");
            assert_eq!(b[p * n + q], want(p, q), "b[{p}, {q}]");
        }
    }
    Ok(())
}

#[test]
fn inplace_write_into_expanded_tensor_errors() -> Result<()> {
    let e = Tensor::zeros([1], DType::F32)?.expand([3])?;
    assert_err_contains(
        e.add_scalar_(1),
        "more than one element of the written-to tensor refers to a single memory location",
    );
    Ok(())
}

#[test]
fn out_variant_into_expanded_tensor_errors() -> Result<()> {
    let out = Tensor::zeros([1], DType::F32)?.expand([3])?;
    let a = Tensor::from([1f32, 2., 3.]);
    assert_err_contains(
        kiln::add_out(&a, &a, 1, &out),
        "more than one element of the written-to tensor refers to a single memory location",
    );
    Ok(())
}

#[test]
fn add_out_writes_into_out_tensor() -> Result<()> {
    let a = Tensor::from([1f32, 2.]);
    let b = Tensor::from([10f32, 20.]);
    let out = Tensor::zeros([2], DType::F32)?;
    kiln::add_out(&a, &b, 2, &out)?;
    assert_eq!(out.to_vec::<f32>()?, vec![21., 42.]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Version counter
// ---------------------------------------------------------------------------------------------

#[test]
fn fresh_tensor_is_at_version_zero() {
    assert_eq!(Tensor::from([1f32, 2.]).version(), 0);
}

#[test]
fn inplace_op_bumps_version() -> Result<()> {
    let a = Tensor::from([1f32, 2.]);
    a.add_scalar_(1)?;
    a.mul_scalar_(2)?;
    assert_eq!(a.version(), 2);
    Ok(())
}

#[test]
fn out_of_place_op_does_not_bump_version() -> Result<()> {
    let a = Tensor::from([1f32, 2.]);
    let _ = a.add_scalar(1)?;
    assert_eq!(a.version(), 0);
    Ok(())
}

#[test]
fn inplace_op_through_view_bumps_base_version() -> Result<()> {
    let a = Tensor::from([1f32, 2., 3.]);
    a.narrow(0, 0, 2)?.mul_scalar_(2)?;
    assert_eq!(a.version(), 1);
    Ok(())
}

#[test]
fn version_counter_is_shared_by_base_and_views() -> Result<()> {
    let a = Tensor::from([1f32, 2., 3.]);
    let v = a.narrow(0, 1, 2)?;
    a.add_scalar_(1)?;
    v.add_scalar_(1)?;
    assert_eq!((a.version(), v.version()), (2, 2));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Type promotion
// ---------------------------------------------------------------------------------------------

#[test]
fn result_type_int_tensor_and_float_zero_dim_tensor_is_float32() {
    let a = Tensor::from([1i32, 2]);
    let b = Tensor::from(0.5f32);
    assert_eq!(
        result_type(&[Operand::Tensor(&a), Operand::Tensor(&b)]),
        DType::F32
    );
}

#[test]
fn int32_tensor_plus_float32_zero_dim_tensor_is_float32() -> Result<()> {
    let r = Tensor::from([1i32, 2]).add(&Tensor::from(0.5f32))?;
    assert_eq!(
        (r.dtype(), r.to_vec::<f64>()?),
        (DType::F32, vec![1.5, 2.5])
    );
    Ok(())
}

#[test]
fn result_type_uint8_tensor_and_int64_zero_dim_tensor_is_uint8() {
    let a = Tensor::from([1u8, 2]);
    let b = Tensor::from(10i64);
    assert_eq!(
        result_type(&[Operand::Tensor(&a), Operand::Tensor(&b)]),
        DType::U8
    );
}

#[test]
fn uint8_tensor_plus_int64_zero_dim_tensor_stays_uint8_and_wraps() -> Result<()> {
    // PyTorch: tensor([250, 1], dtype=uint8) + tensor(10) == tensor([4, 11], dtype=uint8).
    let r = Tensor::from([250u8, 1]).add(&Tensor::from(10i64))?;
    assert_eq!((r.dtype(), r.to_vec::<i64>()?), (DType::U8, vec![4, 11]));
    Ok(())
}

#[test]
fn float16_tensor_times_float_scalar_stays_float16() -> Result<()> {
    let r = Tensor::from([f16::from_f32(2.0), f16::from_f32(-1.0)]).mul_scalar(2.5)?;
    assert_eq!(
        (r.dtype(), r.to_vec::<f64>()?),
        (DType::F16, vec![5.0, -2.5])
    );
    Ok(())
}

#[test]
fn result_type_int64_tensor_and_float_scalar_is_float32() {
    let a = Tensor::from([1i64, 3]);
    assert_eq!(
        result_type(&[Operand::Tensor(&a), Operand::Scalar(2.5.into())]),
        DType::F32
    );
}

#[test]
fn int64_tensor_times_float_scalar_is_float32() -> Result<()> {
    let r = Tensor::from([1i64, 3]).mul_scalar(2.5)?;
    assert_eq!(
        (r.dtype(), r.to_vec::<f64>()?),
        (DType::F32, vec![2.5, 7.5])
    );
    Ok(())
}

#[test]
fn int32_tensor_plus_int64_tensor_is_int64() -> Result<()> {
    let r = Tensor::from([1i32, 2]).add(&Tensor::from([3i64, 4]))?;
    assert_eq!((r.dtype(), r.to_vec::<i64>()?), (DType::I64, vec![4, 6]));
    Ok(())
}

#[test]
fn bool_plus_bool_is_bool() -> Result<()> {
    // PyTorch: tensor([True, True, False]) + tensor([True, False, False]) ==
    // tensor([True, True, False]).
    let r = Tensor::from([true, true, false]).add(&Tensor::from([true, false, false]))?;
    assert_eq!(
        (r.dtype(), r.to_vec::<bool>()?),
        (DType::Bool, vec![true, true, false])
    );
    Ok(())
}

#[test]
fn uint8_plus_int8_is_int16() -> Result<()> {
    let r = Tensor::from([200u8, 1]).add(&Tensor::from([-1i8, -2]))?;
    assert_eq!((r.dtype(), r.to_vec::<i64>()?), (DType::I16, vec![199, -1]));
    Ok(())
}

#[test]
fn float16_plus_bfloat16_is_float32() -> Result<()> {
    let r = Tensor::from([f16::from_f32(1.5)]).add(&Tensor::from([bf16::from_f32(0.25)]))?;
    assert_eq!((r.dtype(), r.to_vec::<f64>()?), (DType::F32, vec![1.75]));
    Ok(())
}

#[test]
fn int_tensor_div_int_tensor_is_float32_true_division() -> Result<()> {
    let r = Tensor::from([1i64, 2, 7, -7]).div(&Tensor::from([2i64, 2, 2, 2]))?;
    assert_eq!(
        (r.dtype(), r.to_vec::<f64>()?),
        (DType::F32, vec![0.5, 1.0, 3.5, -3.5])
    );
    Ok(())
}

#[test]
fn inplace_float_result_into_int_tensor_errors() -> Result<()> {
    // PyTorch: "result type Float can't be cast to the desired output type Long".
    let a = Tensor::from([1i64, 2]);
    assert_err_contains(
        a.mul_scalar_(2.5),
        "can't be cast to the desired output type",
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Broadcasting
// ---------------------------------------------------------------------------------------------

#[test]
fn broadcasting_column_and_row_gives_outer_shape() -> Result<()> {
    let r = Tensor::from([[1f32], [2.], [3.]]).add(&Tensor::from([10f32, 20., 30., 40.]))?;
    assert_eq!(r.shape(), &[3, 4]);
    Ok(())
}

#[test]
fn broadcasting_column_and_row_gives_outer_sum_values() -> Result<()> {
    let r = Tensor::from([[1f32], [2.]]).add(&Tensor::from([10f32, 20., 30.]))?;
    assert_eq!(r.to_vec::<f32>()?, vec![11., 21., 31., 12., 22., 32.]);
    Ok(())
}

#[test]
fn broadcasting_prepends_leading_dims() -> Result<()> {
    let r = Tensor::zeros([2, 1, 3], DType::F32)?.mul(&Tensor::zeros([4, 1], DType::F32)?)?;
    assert_eq!(r.shape(), &[2, 4, 3]);
    Ok(())
}

#[test]
fn broadcasting_mismatch_errors_with_pytorch_message() -> Result<()> {
    let a = Tensor::zeros([2, 3], DType::F32)?;
    let b = Tensor::zeros([2, 4], DType::F32)?;
    assert_err_contains(
        a.add(&b),
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Creation
// ---------------------------------------------------------------------------------------------

#[test]
fn from_nested_arrays_gives_shape() {
    let t = Tensor::from([[[1i64, 2], [3, 4], [5, 6]]]);
    assert_eq!(t.shape(), &[1, 3, 2]);
}

#[test]
fn from_nested_arrays_gives_row_major_values() -> Result<()> {
    let t = Tensor::from([[1i64, 2, 3], [4, 5, 6]]);
    assert_eq!(t.to_vec::<i64>()?, vec![1, 2, 3, 4, 5, 6]);
    Ok(())
}

#[test]
fn from_nested_arrays_dtype_follows_element_type() {
    assert_eq!(
        [
            Tensor::from([1f32]).dtype(),
            Tensor::from([1f64]).dtype(),
            Tensor::from([1i64]).dtype(),
            Tensor::from([true]).dtype(),
        ],
        [DType::F32, DType::F64, DType::I64, DType::Bool]
    );
}

#[test]
fn from_scalar_is_zero_dim() {
    assert_eq!(Tensor::from(3.5f32).shape(), &[] as &[usize]);
}

#[test]
fn from_vec_with_wrong_shape_errors() {
    assert_err_contains(
        Tensor::from_vec(vec![1f32, 2., 3.], &[2, 2]),
        "shape [2, 2] is invalid for input of size 3",
    );
}

#[test]
fn zeros_are_all_zero() -> Result<()> {
    assert_eq!(
        Tensor::zeros([2, 2], DType::I32)?.to_vec::<i64>()?,
        vec![0; 4]
    );
    Ok(())
}

#[test]
fn ones_are_all_one() -> Result<()> {
    assert_eq!(
        Tensor::ones([3], DType::F64)?.to_vec::<f64>()?,
        vec![1.0; 3]
    );
    Ok(())
}

#[test]
fn full_fills_value_and_dtype() -> Result<()> {
    let t = Tensor::full([2, 3], 7.5, DType::F64)?;
    assert_eq!((t.dtype(), t.to_vec::<f64>()?), (DType::F64, vec![7.5; 6]));
    Ok(())
}

#[test]
fn arange_integer_steps() -> Result<()> {
    assert_eq!(
        Tensor::arange(2, 11, 3, DType::I64)?.to_vec::<i64>()?,
        vec![2, 5, 8]
    );
    Ok(())
}

#[test]
fn arange_negative_step_counts_down() -> Result<()> {
    assert_eq!(
        Tensor::arange(10, 0, -3, DType::I64)?.to_vec::<i64>()?,
        vec![10, 7, 4, 1]
    );
    Ok(())
}

#[test]
fn arange_negative_float_step() -> Result<()> {
    assert_eq!(
        Tensor::arange(5.0, 0.0, -1.5, DType::F64)?.to_vec::<f64>()?,
        vec![5.0, 3.5, 2.0, 0.5]
    );
    Ok(())
}

#[test]
fn arange_float_step_point_one_has_ten_elements() -> Result<()> {
    // torch.arange(0, 1, 0.1) has 10 elements (the end is excluded).
    assert_eq!(Tensor::arange(0.0, 1.0, 0.1, DType::F32)?.numel(), 10);
    Ok(())
}

#[test]
fn arange_step_sign_inconsistent_with_bounds_errors() {
    assert_err_contains(
        Tensor::arange(0, 5, -1, DType::I64),
        "upper bound and larger bound inconsistent with step sign",
    );
}

#[test]
fn arange_zero_step_errors() {
    assert_err_contains(Tensor::arange(0, 5, 0, DType::I64), "step must be nonzero");
}

#[test]
fn linspace_has_evenly_spaced_values() -> Result<()> {
    assert_eq!(
        Tensor::linspace(0.0, 1.0, 5, DType::F64)?.to_vec::<f64>()?,
        vec![0.0, 0.25, 0.5, 0.75, 1.0]
    );
    Ok(())
}

#[test]
fn linspace_endpoints_are_exact() -> Result<()> {
    let v = Tensor::linspace(-1.3, 2.9, 7, DType::F64)?.to_vec::<f64>()?;
    assert_eq!((v[0], v[6]), (-1.3, 2.9));
    Ok(())
}

#[test]
fn eye_rectangular_has_ones_on_the_diagonal() -> Result<()> {
    let e = Tensor::eye(2, Some(3), DType::F32)?;
    assert_eq!(
        (e.shape().to_vec(), e.to_vec::<f32>()?),
        (vec![2, 3], vec![1., 0., 0., 0., 1., 0.])
    );
    Ok(())
}

#[test]
fn eye_square_by_default() -> Result<()> {
    let e = Tensor::eye(3, None, DType::I64)?;
    assert_eq!(e.to_vec::<i64>()?, vec![1, 0, 0, 0, 1, 0, 0, 0, 1]);
    Ok(())
}

#[test]
fn zeros_like_keeps_shape_and_dtype() -> Result<()> {
    let z = Tensor::from([[1i32, 2, 3]]).zeros_like()?;
    assert_eq!(
        (z.shape().to_vec(), z.dtype(), z.to_vec::<i64>()?),
        (vec![1, 3], DType::I32, vec![0, 0, 0])
    );
    Ok(())
}

#[test]
fn full_like_keeps_shape_and_dtype() -> Result<()> {
    let f = Tensor::from([[1f64], [2.]]).full_like(-4.25)?;
    assert_eq!(
        (f.shape().to_vec(), f.dtype(), f.to_vec::<f64>()?),
        (vec![2, 1], DType::F64, vec![-4.25, -4.25])
    );
    Ok(())
}

#[test]
fn rand_values_lie_in_zero_one() -> Result<()> {
    let mut g = Generator::new(1);
    let v = Tensor::rand_with([10_000], DType::F64, &mut g)?.to_vec::<f64>()?;
    assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
    Ok(())
}

#[test]
fn rand_from_global_generator_lies_in_zero_one() -> Result<()> {
    let _l = global_rng_lock();
    let v = Tensor::rand([10_000], DType::F32)?.to_vec::<f32>()?;
    assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
    Ok(())
}

#[test]
fn rand_is_reproducible_with_manual_seed() -> Result<()> {
    let _l = global_rng_lock();
    kiln::manual_seed(1234);
    let a = Tensor::rand([16], DType::F32)?.to_vec::<f32>()?;
    kiln::manual_seed(1234);
    let b = Tensor::rand([16], DType::F32)?.to_vec::<f32>()?;
    assert_eq!(a, b);
    Ok(())
}

#[test]
fn rand_is_reproducible_with_generator_seed() -> Result<()> {
    let a = Tensor::rand_with([16], DType::F32, &mut Generator::new(99))?.to_vec::<f32>()?;
    let b = Tensor::rand_with([16], DType::F32, &mut Generator::new(99))?.to_vec::<f32>()?;
    assert_eq!(a, b);
    Ok(())
}

#[test]
fn rand_differs_between_seeds() -> Result<()> {
    let a = Tensor::rand_with([16], DType::F32, &mut Generator::new(1))?.to_vec::<f32>()?;
    let b = Tensor::rand_with([16], DType::F32, &mut Generator::new(2))?.to_vec::<f32>()?;
    assert_ne!(a, b);
    Ok(())
}

#[test]
fn rand_of_int_dtype_errors() {
    assert_err_contains(Tensor::rand([2], DType::I64), "not implemented for 'Long'");
}

#[test]
fn randn_has_mean_near_zero_and_std_near_one() -> Result<()> {
    let _l = global_rng_lock();
    kiln::manual_seed(7);
    let v = Tensor::randn([10_000], DType::F64)?.to_vec::<f64>()?;
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let std = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    assert!(
        mean.abs() < 0.05 && (std - 1.0).abs() < 0.05,
        "mean {mean}, std {std}"
    );
    Ok(())
}

#[test]
fn randint_values_lie_in_low_high_and_cover_it() -> Result<()> {
    let mut g = Generator::new(5);
    let v = Tensor::randint_with(3, 7, [1000], DType::I64, &mut g)?.to_vec::<i64>()?;
    let mut seen: Vec<i64> = v.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen, vec![3, 4, 5, 6]);
    Ok(())
}

#[test]
fn half_precision_rand_never_rounds_up_to_one() -> Result<()> {
    // Drawing in f64 and rounding would give 1.0 about once in 4096 f16 samples.
    let mut g = Generator::new(3);
    for dtype in [DType::F16, DType::BF16] {
        let v = Tensor::rand_with([1 << 20], dtype, &mut g)?.to_vec::<f64>()?;
        assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)), "{dtype:?}");
        assert!(v.iter().any(|&x| x > 0.99), "{dtype:?}");
    }
    Ok(())
}

#[test]
fn rand_fills_sixteen_bins_evenly() -> Result<()> {
    let n = 160_000;
    let v = Tensor::rand_with([n], DType::F32, &mut Generator::new(4))?.to_vec::<f32>()?;
    let mut bins = [0usize; 16];
    v.iter().for_each(|&x| bins[(x * 16.0) as usize] += 1);
    let expected = n as f64 / 16.0;
    let chi2: f64 = bins
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    // 15 degrees of freedom: P(chi2 > 40) is about 5e-4.
    assert!(chi2 < 40.0, "chi2 {chi2}, bins {bins:?}");
    Ok(())
}

#[test]
fn randn_f32_and_f16_have_normal_moments() -> Result<()> {
    let mut g = Generator::new(8);
    for dtype in [DType::F32, DType::F16] {
        let v = Tensor::randn_with([200_000], dtype, &mut g)?.to_vec::<f64>()?;
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let kurt = v.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n / var.powi(2);
        assert!(mean.abs() < 0.01, "{dtype:?} mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "{dtype:?} var {var}");
        assert!((kurt - 3.0).abs() < 0.1, "{dtype:?} kurtosis {kurt}");
    }
    Ok(())
}

/// An f16/bf16 normal sample is the f32 sample rounded once to nearest even, as a GPU rounds
/// it (kiln once rounded bf16 from f64 through the half crate, which looks at only 20
/// mantissa bits and so rounded about one sample in 20,000 the other way).
#[test]
fn half_precision_randn_is_the_f32_sample_rounded_once() -> Result<()> {
    let n = 1 << 20;
    let wide = Tensor::randn_with([n], DType::F32, &mut Generator::new(6))?.to_vec::<f32>()?;
    let f16s = Tensor::randn_with([n], DType::F16, &mut Generator::new(6))?.to_vec::<f64>()?;
    let bf16s = Tensor::randn_with([n], DType::BF16, &mut Generator::new(6))?.to_vec::<f64>()?;
    for (i, &w) in wide.iter().enumerate() {
        assert_eq!(f16s[i], f16::from_f32(w).to_f64(), "f16 at {i}: {w}");
        assert_eq!(bf16s[i], bf16::from_f32(w).to_f64(), "bf16 at {i}: {w}");
    }
    Ok(())
}

#[test]
fn successive_draws_from_one_generator_differ() -> Result<()> {
    let mut g = Generator::new(9);
    let a = Tensor::rand_with([16], DType::F32, &mut g)?.to_vec::<f32>()?;
    let b = Tensor::rand_with([16], DType::F32, &mut g)?.to_vec::<f32>()?;
    assert_ne!(a, b);
    assert_eq!(g.initial_seed(), 9);
    Ok(())
}

#[test]
fn rand_on_cpu_is_rand() -> Result<()> {
    let _l = global_rng_lock();
    kiln::manual_seed(21);
    let a = Tensor::rand([8], DType::F64)?.to_vec::<f64>()?;
    kiln::manual_seed(21);
    let b = Tensor::rand_on([8], DType::F64, Device::Cpu)?.to_vec::<f64>()?;
    assert_eq!(a, b);
    Ok(())
}

#[test]
fn randint_spans_all_of_int64_and_both_bools() -> Result<()> {
    let mut g = Generator::new(10);
    let v =
        Tensor::randint_with(i64::MIN, i64::MAX, [1000], DType::I64, &mut g)?.to_vec::<i64>()?;
    assert!(v.iter().any(|&x| x < i64::MIN / 2) && v.iter().any(|&x| x > i64::MAX / 2));
    let b = Tensor::randint_with(0, 2, [64], DType::Bool, &mut g)?.to_vec::<bool>()?;
    assert!(b.contains(&true) && b.contains(&false));
    Ok(())
}

#[test]
fn randperm_is_a_permutation() -> Result<()> {
    let _l = global_rng_lock();
    kiln::manual_seed(5);
    let mut p = Tensor::randperm(1000)?.to_vec::<i64>()?;
    let q = Tensor::randperm(1000)?.to_vec::<i64>()?;
    assert_ne!(p, q);
    assert_ne!(p, (0..1000).collect::<Vec<i64>>());
    p.sort();
    assert_eq!(p, (0..1000).collect::<Vec<i64>>());
    Ok(())
}

#[test]
fn randint_with_low_not_below_high_errors() {
    assert_err_contains(
        Tensor::randint(5, 5, [3], DType::I64),
        "random_ expects 'from' to be less than 'to', but got from=5 >= to=5",
    );
}

// ---------------------------------------------------------------------------------------------
// Result layout of pointwise ops (PyTorch's TensorIterator: results follow the inputs'
// memory order)
// ---------------------------------------------------------------------------------------------

fn matrix(r: usize, c: usize) -> Result<Tensor> {
    Tensor::from_vec((0..r * c).map(|v| v as f32).collect::<Vec<_>>(), &[r, c])
}

#[test]
fn pointwise_results_of_transposed_inputs_are_transposed() -> Result<()> {
    let m = matrix(3, 4)?;
    let s = m.t()?.add(&m.t()?)?;
    // torch: (m.t() + m.t()).stride() == (1, 3)
    assert_eq!(
        (s.shape(), s.strides()),
        (&[4usize, 3][..], &[1usize, 4][..])
    );
    let e = m.t()?.exp()?;
    assert_eq!(e.strides(), &[1, 4]);
    let want: Vec<f32> = m.t()?.to_vec::<f32>()?.iter().map(|v| 2.0 * v).collect();
    assert_eq!(s.to_vec::<f32>()?, want);
    // Like PyTorch, such a result needs `reshape` (a copy), not `view`, to flatten.
    assert!(s.view([12]).is_err());
    assert_eq!(s.reshape([12])?.to_vec::<f32>()?, want);
    Ok(())
}

#[test]
fn pointwise_result_layout_is_decided_by_the_first_operand_that_can() -> Result<()> {
    let m = matrix(3, 4)?;
    let n = matrix(4, 3)?;
    // Row-major first operand: row-major result, whatever the second is.
    assert!(n.add(&m.t()?)?.is_contiguous());
    // A transposed first operand decides for a row-major second one.
    assert_eq!(m.t()?.mul(&n)?.strides(), &[1, 4]);
    // A broadcast row decides nothing; the transposed operand does.
    let row = Tensor::from_vec(vec![1f32, 2., 3.], &[1, 3])?;
    let r = row.add(&m.t()?)?;
    assert_eq!(r.strides(), &[1, 4]);
    let got = r.to_vec::<f32>()?;
    let mt = m.t()?.to_vec::<f32>()?;
    for (k, (g, x)) in got.iter().zip(&mt).enumerate() {
        assert_eq!(*g, x + (k % 3 + 1) as f32);
    }
    // Inputs that are all contiguous (even broadcast) give a contiguous result.
    assert!(row.add(&n)?.is_contiguous());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Conversion
// ---------------------------------------------------------------------------------------------

#[test]
fn to_vec_converts_element_type() -> Result<()> {
    assert_eq!(
        Tensor::from([1.5f32, -2.0]).to_vec::<f64>()?,
        vec![1.5, -2.0]
    );
    Ok(())
}

#[test]
fn to_vec_of_a_view_follows_view_order() -> Result<()> {
    let a = Tensor::from([[1i64, 2], [3, 4]]);
    assert_eq!(a.t()?.to_vec::<i64>()?, vec![1, 3, 2, 4]);
    Ok(())
}

#[test]
fn item_of_one_element_tensor() -> Result<()> {
    assert_eq!(Tensor::from([[2.5f64]]).item::<f64>()?, 2.5);
    Ok(())
}

#[test]
fn item_of_two_element_tensor_errors() {
    assert_err_contains(
        Tensor::from([1f32, 2.]).item::<f32>(),
        "a Tensor with 2 elements cannot be converted to Scalar",
    );
}

#[test]
fn to_dtype_float_to_int_truncates_toward_zero() -> Result<()> {
    assert_eq!(
        Tensor::from([2.7f32, -2.7, 0.9])
            .to_dtype(DType::I64)?
            .to_vec::<i64>()?,
        vec![2, -2, 0]
    );
    Ok(())
}

#[test]
fn to_dtype_float_300_to_uint8_wraps_like_c() -> Result<()> {
    // PyTorch on CPU: torch.tensor([300.]).to(torch.uint8) == tensor([44], dtype=torch.uint8).
    assert_eq!(
        Tensor::from([300f32])
            .to_dtype(DType::U8)?
            .to_vec::<i64>()?,
        vec![44]
    );
    Ok(())
}

#[test]
fn to_dtype_int64_300_to_uint8_wraps() -> Result<()> {
    assert_eq!(
        Tensor::from([300i64, -1])
            .to_dtype(DType::U8)?
            .to_vec::<i64>()?,
        vec![44, 255]
    );
    Ok(())
}

#[test]
fn to_dtype_float_to_bool_is_nonzero_test() -> Result<()> {
    assert_eq!(
        Tensor::from([0f32, 0.5, -1.0, -0.0])
            .to_dtype(DType::Bool)?
            .to_vec::<bool>()?,
        vec![false, true, true, false]
    );
    Ok(())
}

#[test]
fn to_dtype_bool_to_float_gives_zero_and_one() -> Result<()> {
    assert_eq!(
        Tensor::from([true, false])
            .to_dtype(DType::F32)?
            .to_vec::<f32>()?,
        vec![1.0, 0.0]
    );
    Ok(())
}

#[test]
fn to_dtype_float32_to_float16_rounds_to_nearest() -> Result<()> {
    // 1 + 2^-11 is halfway between f16 neighbours 1 and 1 + 2^-10: ties round to even (1.0);
    // 1 + 3·2^-12 rounds up to 1 + 2^-10.
    let v = Tensor::from([1.0f32 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-12)])
        .to_dtype(DType::F16)?
        .to_vec::<f64>()?;
    assert_eq!(v, vec![1.0, 1.0 + 2f64.powi(-10)]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Display
// ---------------------------------------------------------------------------------------------

#[test]
fn display_matches_pytorch_repr_for_2x2_float() {
    assert_eq!(
        format!("{}", Tensor::from([[1f32, 2.], [3., 4.]])),
        "tensor([[1., 2.],\n        [3., 4.]])"
    );
}

#[test]
fn display_shows_grad_fn_of_recorded_op() -> Result<()> {
    let x = Tensor::from([1f32, 2.]).requires_grad_(true)?;
    assert_eq!(
        format!("{}", x.add(&x)?),
        "tensor([2., 4.], grad_fn=<AddBackward0>)"
    );
    Ok(())
}

#[test]
fn display_shows_non_default_dtype() {
    assert_eq!(
        format!("{}", Tensor::from([1i32, 2])),
        "tensor([1, 2], dtype=torch.int32)"
    );
}

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------

#[test]
fn cuda_request_is_a_clean_error() {
    if kiln::cuda::is_available() {
        return; // tests/cuda.rs covers machines with a GPU
    }
    assert_err_contains(
        Tensor::full_on([2], 1.0, DType::F32, Device::Cuda(0)),
        "cannot use device cuda:0",
    );
}

#[test]
fn cpu_request_via_full_on_works() -> Result<()> {
    let t = Tensor::full_on([2], 1.0, DType::F32, Device::Cpu)?;
    assert_eq!(t.to_vec::<f32>()?, vec![1.0, 1.0]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Send + Sync
// ---------------------------------------------------------------------------------------------

#[test]
fn tensor_moved_into_thread_is_usable_there() -> Result<()> {
    let t = Tensor::from([1f64, 2., 3.]);
    let s = std::thread::spawn(move || t.mul_scalar(2.0)?.sum()?.item::<f64>())
        .join()
        .expect("thread panicked")?;
    assert_eq!(s, 12.0);
    Ok(())
}

#[test]
fn concurrent_inplace_adds_into_each_others_inputs_do_not_deadlock() -> Result<()> {
    let a = Tensor::zeros([64], DType::F32)?;
    let b = Tensor::ones([64], DType::F32)?;
    let (tx, rx) = mpsc::channel();
    for flip in [false, true] {
        let (x, y, tx) = (a.clone(), b.clone(), tx.clone());
        std::thread::spawn(move || {
            let (dst, src) = if flip { (y, x) } else { (x, y) };
            let r: Result<()> = (0..1000).try_for_each(|_| dst.add_(&src).map(|_| ()));
            let _ = tx.send(r);
        });
    }
    drop(tx);
    for _ in 0..2 {
        rx.recv_timeout(Duration::from_secs(60))
            .expect("a thread did not finish within 60 s (deadlock?)")?;
    }
    Ok(())
}

#[test]
fn tensors_can_be_shared_by_reference_across_scoped_threads() -> Result<()> {
    let t = Tensor::from([1f32, 2., 3., 4.]);
    let sums: Vec<f32> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| t.sum().and_then(|x| x.item::<f32>())))
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Result<_>>()
    })?;
    assert_eq!(sums, vec![10.0; 4]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Errors, not panics, on bad input
// ---------------------------------------------------------------------------------------------

#[test]
fn sum_dim_out_of_range_errors() {
    assert_err_contains(iota(&[2, 3]).sum_dim(&[2]), "Dimension out of range");
}

#[test]
fn transpose_dim_out_of_range_errors() {
    assert_err_contains(iota(&[2, 3]).transpose(0, 2), "Dimension out of range");
}

#[test]
fn unsqueeze_dim_out_of_range_errors() {
    // Valid dims for unsqueeze of a 2-d tensor are [-3, 2].
    assert_err_contains(iota(&[2, 3]).unsqueeze(3), "Dimension out of range");
}

#[test]
fn unsqueeze_at_last_new_position_is_allowed() -> Result<()> {
    assert_eq!(iota(&[2, 3]).unsqueeze(2)?.shape(), &[2, 3, 1]);
    Ok(())
}

#[test]
fn view_incompatible_with_strides_errors() -> Result<()> {
    let a = iota(&[2, 3]);
    assert_err_contains(a.t()?.view([6]), "view size is not compatible");
    Ok(())
}

#[test]
fn view_with_wrong_numel_errors() {
    assert_err_contains(iota(&[2, 3]).view([4]), "invalid");
}

#[test]
fn narrow_beyond_size_errors() {
    assert_err_contains(
        iota(&[3]).narrow(0, 1, 3),
        "start (1) + length (3) exceeds dimension size (3).",
    );
}

#[test]
fn select_index_out_of_range_errors() {
    assert_err_contains(iota(&[2, 3]).select(1, 3), "out of range");
}

#[test]
fn matmul_of_zero_dim_errors() {
    assert_err_contains(
        Tensor::from(2f32).matmul(&iota(&[2])),
        "both arguments to matmul need to be at least 1D",
    );
}

#[test]
fn mm_shape_mismatch_errors() {
    assert_err_contains(
        iota(&[2, 3]).mm(&iota(&[4, 5])),
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    );
}

#[test]
fn gather_with_out_of_bounds_index_errors() {
    let idx = Tensor::from([[0i64, 3]]);
    assert_err_contains(
        iota(&[2, 3]).gather(1, &idx),
        "index 3 is out of bounds for dimension 1 with size 3",
    );
}

#[test]
fn index_select_with_float_index_errors() {
    let idx = Tensor::from([0f32, 1.]);
    assert_err_contains(iota(&[2, 3]).index_select(0, &idx), "index");
}

#[test]
fn index_select_with_out_of_range_index_errors() {
    let idx = Tensor::from([0i64, 2]);
    assert_err_contains(
        iota(&[2, 3]).index_select(0, &idx),
        "index out of range in self",
    );
}

#[test]
fn expand_to_incompatible_size_errors() {
    assert!(iota(&[3]).expand([4]).is_err());
}

// ---------------------------------------------------------------------------------------------
// matmul rank cases
// ---------------------------------------------------------------------------------------------

#[test]
fn matmul_vector_vector_is_zero_dim_dot() -> Result<()> {
    let r = Tensor::from([1f32, 2., 3.]).matmul(&Tensor::from([4f32, 5., 6.]))?;
    assert_eq!((r.dim(), r.item::<f32>()?), (0, 32.0));
    Ok(())
}

#[test]
fn matmul_matrix_vector() -> Result<()> {
    let r = Tensor::from([[1f32, 2.], [3., 4.]]).matmul(&Tensor::from([5f32, 6.]))?;
    assert_eq!(
        (r.shape().to_vec(), r.to_vec::<f32>()?),
        (vec![2], vec![17., 39.])
    );
    Ok(())
}

#[test]
fn matmul_vector_matrix() -> Result<()> {
    let r = Tensor::from([5f32, 6.]).matmul(&Tensor::from([[1f32, 2.], [3., 4.]]))?;
    assert_eq!(
        (r.shape().to_vec(), r.to_vec::<f32>()?),
        (vec![2], vec![23., 34.])
    );
    Ok(())
}

#[test]
fn matmul_matrix_matrix() -> Result<()> {
    let r = Tensor::from([[1f32, 2.], [3., 4.]]).matmul(&Tensor::from([[5f32, 6.], [7., 8.]]))?;
    assert_eq!(r.to_vec::<f32>()?, vec![19., 22., 43., 50.]);
    Ok(())
}

#[test]
fn matmul_batched_3d_by_2d_broadcasts_the_matrix() -> Result<()> {
    // [[1,2],[3,4]]·[[1,0],[1,1]] = [[3,2],[7,4]]; [[5,6],[7,8]]·[[1,0],[1,1]] = [[11,6],[15,8]].
    let a = Tensor::from([[[1f32, 2.], [3., 4.]], [[5., 6.], [7., 8.]]]);
    let b = Tensor::from([[1f32, 0.], [1., 1.]]);
    let r = a.matmul(&b)?;
    assert_eq!(
        (r.shape().to_vec(), r.to_vec::<f32>()?),
        (vec![2, 2, 2], vec![3., 2., 7., 4., 11., 6., 15., 8.])
    );
    Ok(())
}

#[test]
fn matmul_4d_by_3d_broadcasts_batch_shape() -> Result<()> {
    let a = Tensor::ones([2, 1, 3, 4], DType::F32)?;
    let b = iota(&[5, 4, 6]);
    assert_eq!(a.matmul(&b)?.shape(), &[2, 5, 3, 6]);
    Ok(())
}

#[test]
fn matmul_4d_by_3d_broadcast_values() -> Result<()> {
    // out[i, j, r, c] = Σ_k b[j, k, c] = Σ_k (24j + 6k + c) = 96j + 36 + 4c.
    let a = Tensor::ones([2, 1, 3, 4], DType::F32)?;
    let b = iota(&[5, 4, 6]);
    let got = a.matmul(&b)?.to_vec::<f32>()?;
    let mut want = Vec::new();
    for _i in 0..2 {
        for j in 0..5 {
            for _r in 0..3 {
                for c in 0..6 {
                    want.push((96 * j + 36 + 4 * c) as f32);
                }
            }
        }
    }
    assert_eq!(got, want);
    Ok(())
}

#[test]
fn matmul_vector_by_batched_matrix() -> Result<()> {
    // [1, 1]·[[1,2],[3,4]] = [4, 6]; [1, 1]·[[5,6],[7,8]] = [12, 14].
    let a = Tensor::from([1f32, 1.]);
    let b = Tensor::from([[[1f32, 2.], [3., 4.]], [[5., 6.], [7., 8.]]]);
    let r = a.matmul(&b)?;
    assert_eq!(
        (r.shape().to_vec(), r.to_vec::<f32>()?),
        (vec![2, 2], vec![4., 6., 12., 14.])
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// More edge cases
// ---------------------------------------------------------------------------------------------

#[test]
fn linspace_with_one_step_is_start() -> Result<()> {
    // torch.linspace(2, 5, 1) == tensor([2.]).
    assert_eq!(
        Tensor::linspace(2.0, 5.0, 1, DType::F64)?.to_vec::<f64>()?,
        vec![2.0]
    );
    Ok(())
}

#[test]
fn linspace_with_zero_steps_is_empty() -> Result<()> {
    assert_eq!(Tensor::linspace(2.0, 5.0, 0, DType::F64)?.numel(), 0);
    Ok(())
}

#[test]
fn bool_tensor_plus_int_scalar_is_int64() -> Result<()> {
    // PyTorch: tensor([True, False]) + 1 == tensor([2, 1]).
    let r = Tensor::from([true, false]).add_scalar(1)?;
    assert_eq!((r.dtype(), r.to_vec::<i64>()?), (DType::I64, vec![2, 1]));
    Ok(())
}

#[test]
fn int32_tensor_plus_int_scalar_stays_int32() -> Result<()> {
    let r = Tensor::from([1i32, 2]).add_scalar(5)?;
    assert_eq!((r.dtype(), r.to_vec::<i64>()?), (DType::I32, vec![6, 7]));
    Ok(())
}

#[test]
fn float32_tensor_plus_float64_zero_dim_tensor_stays_float32() -> Result<()> {
    let r = Tensor::from([1f32, 2.]).add(&Tensor::from(0.5f64))?;
    assert_eq!(r.dtype(), DType::F32);
    Ok(())
}

#[test]
fn zero_dim_tensors_promote_among_themselves() -> Result<()> {
    // Only 0-d operands: ordinary promotion, int32 + float64 -> float64.
    let r = Tensor::from(1i32).add(&Tensor::from(0.5f64))?;
    assert_eq!((r.dtype(), r.item::<f64>()?), (DType::F64, 1.5));
    Ok(())
}

#[test]
fn uint8_tensor_times_negative_int_scalar_wraps() -> Result<()> {
    // PyTorch: tensor([3], dtype=uint8) * -1 == tensor([253], dtype=uint8).
    let r = Tensor::from([3u8]).mul_scalar(-1)?;
    assert_eq!((r.dtype(), r.to_vec::<i64>()?), (DType::U8, vec![253]));
    Ok(())
}

#[test]
fn int_tensor_div_by_zero_gives_inf() -> Result<()> {
    let r = Tensor::from([1i64, -1]).div(&Tensor::from([0i64, 0]))?;
    assert_eq!(r.to_vec::<f64>()?, vec![f64::INFINITY, f64::NEG_INFINITY]);
    Ok(())
}

#[test]
fn sum_of_int32_is_int64() -> Result<()> {
    let s = Tensor::from([1i32, 2, 3]).sum()?;
    assert_eq!((s.dtype(), s.item::<i64>()?), (DType::I64, 6));
    Ok(())
}

#[test]
fn sum_of_bool_counts_trues_as_int64() -> Result<()> {
    let s = Tensor::from([true, false, true, true]).sum()?;
    assert_eq!((s.dtype(), s.item::<i64>()?), (DType::I64, 3));
    Ok(())
}

#[test]
fn sum_of_float16_ones_accumulates_beyond_2048() -> Result<()> {
    // Accumulating in f16 would stall at 2048 (2048 + 1 rounds back to 2048); PyTorch
    // accumulates in float and gives exactly 4096.
    let s = Tensor::ones([4096], DType::F16)?.sum()?;
    assert_eq!(s.item::<f64>()?, 4096.0);
    Ok(())
}

#[test]
fn sum_dim_with_keepdim_keeps_reduced_dims() -> Result<()> {
    let s = iota(&[2, 3, 4]).sum_dim_with(&[0, 2], true, None)?;
    // Σ over i, k of 12i + 4j + k = 2·4·4j + 4·12 + 2·6 = 32j + 60.
    assert_eq!(
        (s.shape().to_vec(), s.to_vec::<f32>()?),
        (vec![1, 3, 1], vec![60., 92., 124.])
    );
    Ok(())
}

#[test]
fn sum_dim_with_negative_dim() -> Result<()> {
    let s = iota(&[2, 3]).sum_dim(&[-1])?;
    assert_eq!(s.to_vec::<f32>()?, vec![3., 12.]);
    Ok(())
}

#[test]
fn mean_of_int_tensor_errors() {
    assert_err_contains(
        Tensor::from([1i64, 2]).mean(),
        "mean(): could not infer output dtype",
    );
}

#[test]
fn max_propagates_nan() -> Result<()> {
    let m = Tensor::from([1f32, f32::NAN, 3.]).max()?;
    assert!(m.item::<f32>()?.is_nan());
    Ok(())
}

#[test]
fn max_dim_propagates_nan_and_points_at_it() -> Result<()> {
    let (v, i) = Tensor::from([[1f32, f32::NAN, 3.]]).max_dim(1)?;
    assert_eq!((v.item::<f32>()?.is_nan(), i.item::<i64>()?), (true, 1));
    Ok(())
}

#[test]
fn argmax_of_ties_is_first_index() -> Result<()> {
    let i = Tensor::from([1f32, 3., 3., 2.]).argmax()?;
    assert_eq!(i.item::<i64>()?, 1);
    Ok(())
}

#[test]
fn argmax_with_dim() -> Result<()> {
    let i = Tensor::from([[1f32, 9., 3.], [7., 2., 8.]]).argmax_with(Some(1), false)?;
    assert_eq!(i.to_vec::<i64>()?, vec![1, 2]);
    Ok(())
}

#[test]
fn log_softmax_is_stable_for_large_logits() -> Result<()> {
    let v = Tensor::from([1000f32, 0.])
        .log_softmax(0)?
        .to_vec::<f32>()?;
    assert_eq!(v, vec![0.0, -1000.0]);
    Ok(())
}

#[test]
fn softmax_rows_sum_to_one() -> Result<()> {
    // softmax([0, ln 3]) = [1/4, 3/4].
    let v = Tensor::from([0f64, 3f64.ln()])
        .softmax(0)?
        .to_vec::<f64>()?;
    assert!(
        (v[0] - 0.25).abs() < 1e-12 && (v[1] - 0.75).abs() < 1e-12,
        "{v:?}"
    );
    Ok(())
}

#[test]
fn inplace_add_with_broadcast_that_grows_self_errors() -> Result<()> {
    let a = Tensor::zeros([3], DType::F32)?;
    let b = Tensor::zeros([2, 3], DType::F32)?;
    assert_err_contains(
        a.add_(&b),
        "output with shape [3] doesn't match the broadcast shape [2, 3]",
    );
    Ok(())
}

#[test]
fn inplace_add_broadcasts_smaller_other() -> Result<()> {
    let a = Tensor::zeros([2, 2], DType::F32)?;
    a.add_(&Tensor::from([1f32, 2.]))?;
    assert_eq!(a.to_vec::<f32>()?, vec![1., 2., 1., 2.]);
    Ok(())
}

#[test]
fn narrow_with_negative_start_counts_from_end() -> Result<()> {
    assert_eq!(iota(&[5]).narrow(0, -2, 2)?.to_vec::<f32>()?, vec![3., 4.]);
    Ok(())
}

#[test]
fn slice_clamps_out_of_range_bounds() -> Result<()> {
    assert_eq!(
        iota(&[5])
            .slice_with(0, Some(-3), Some(100), 1)?
            .to_vec::<f32>()?,
        vec![2., 3., 4.]
    );
    Ok(())
}

#[test]
fn select_with_negative_index_counts_from_end() -> Result<()> {
    assert_eq!(
        iota(&[2, 3]).select(0, -1)?.to_vec::<f32>()?,
        vec![3., 4., 5.]
    );
    Ok(())
}

#[test]
fn view_infers_minus_one() -> Result<()> {
    assert_eq!(iota(&[2, 3, 4]).view([-1, 4])?.shape(), &[6, 4]);
    Ok(())
}

#[test]
fn expand_with_minus_one_keeps_size() -> Result<()> {
    assert_eq!(iota(&[3, 1]).expand([-1, 5])?.shape(), &[3, 5]);
    Ok(())
}

#[test]
fn squeeze_dim_of_non_unit_dim_is_a_no_op() -> Result<()> {
    assert_eq!(iota(&[2, 3]).squeeze_dim(0)?.shape(), &[2, 3]);
    Ok(())
}

#[test]
fn permute_with_repeated_dim_errors() {
    assert!(iota(&[2, 3]).permute(&[0, 0]).is_err());
}

#[test]
fn permute_reorders_values() -> Result<()> {
    // a[i][j][k] = 6i + 3j + k over [2, 2, 3]; permute(2, 0, 1)[k][i][j] = a[i][j][k].
    let p = iota(&[2, 2, 3]).permute(&[2, 0, 1])?;
    assert_eq!(
        p.to_vec::<f32>()?,
        vec![0., 3., 6., 9., 1., 4., 7., 10., 2., 5., 8., 11.]
    );
    Ok(())
}

#[test]
fn contiguous_of_transposed_copies_into_row_major() -> Result<()> {
    let a = iota(&[2, 3]);
    let c = a.t()?.contiguous()?;
    assert_eq!(
        (
            c.is_contiguous(),
            c.shares_storage_with(&a),
            c.strides().to_vec()
        ),
        (true, false, vec![2, 1])
    );
    Ok(())
}

#[test]
fn transpose_swaps_strides() -> Result<()> {
    assert_eq!(iota(&[2, 3]).t()?.strides(), &[1, 3]);
    Ok(())
}

#[test]
fn expand_gives_zero_stride() -> Result<()> {
    assert_eq!(iota(&[3, 1]).expand([3, 4])?.strides(), &[1, 0]);
    Ok(())
}

#[test]
fn display_summarises_more_than_1000_elements() -> Result<()> {
    // PyTorch: repr(torch.arange(2000)).
    assert_eq!(
        format!("{}", Tensor::arange(0, 2000, 1, DType::I64)?),
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    );
    Ok(())
}

#[test]
fn display_fixed_point_floats_use_four_decimals() {
    assert_eq!(
        format!("{}", Tensor::from([1.5f32, 2.25])),
        "tensor([1.5000, 2.2500])"
    );
}

#[test]
fn display_zero_dim_float64() {
    assert_eq!(
        format!("{}", Tensor::from(3f64)),
        "tensor(3., dtype=torch.float64)"
    );
}

#[test]
fn display_bool_tensor() {
    assert_eq!(
        format!("{}", Tensor::from([true, false])),
        "tensor([ True, False])"
    );
}

#[test]
fn display_of_leaf_requiring_grad() -> Result<()> {
    let x = Tensor::from([1f32, 2.]).requires_grad_(true)?;
    assert_eq!(format!("{x}"), "tensor([1., 2.], requires_grad=True)");
    Ok(())
}

#[test]
fn out_variant_bumps_version_of_out() -> Result<()> {
    let a = Tensor::from([1f32, 2.]);
    let out = Tensor::zeros([2], DType::F32)?;
    kiln::mul_out(&a, &a, &out)?;
    assert_eq!(out.version(), 1);
    Ok(())
}

#[test]
fn out_variant_with_out_aliasing_an_input() -> Result<()> {
    // out = a + 10·a written into a itself: computed from the original values.
    let a = Tensor::from([1f32, 2., 3.]);
    kiln::add_out(&a, &a, 10, &a)?;
    assert_eq!(a.to_vec::<f32>()?, vec![11., 22., 33.]);
    Ok(())
}

#[test]
fn out_variant_into_a_transposed_alias_of_an_input() -> Result<()> {
    // out = a·aᵀ elementwise, written into aᵀ's storage (a itself): the pointwise kernel
    // writes `out` directly, so it must read every element before overwriting it.
    let a = Tensor::from_vec((1..=9).map(f64::from).collect::<Vec<_>>(), &[3, 3])?;
    let want: Vec<f64> = (0..9)
        .map(|k| {
            let (i, j) = (k / 3, k % 3);
            let v = |r: usize, c: usize| (r * 3 + c + 1) as f64;
            v(j, i) * v(i, j)
        })
        .collect();
    let at = a.t()?;
    kiln::mul_out(&at, &a, &at)?;
    // `at` holds the products in its own (transposed) order.
    assert_eq!(at.contiguous()?.to_vec::<f64>()?, want);
    Ok(())
}

#[test]
fn out_variant_of_a_wider_dtype_gets_the_cast_result() -> Result<()> {
    let a = Tensor::from([1.5f32, -2.25]);
    let out = Tensor::zeros([2], DType::F64)?;
    kiln::mul_out(&a, &a, &out)?;
    assert_eq!(out.to_vec::<f64>()?, vec![2.25, 5.0625]);
    let narrow = Tensor::zeros([2], DType::I32)?;
    assert_err_contains(
        kiln::mul_out(&a, &a, &narrow),
        "result type Float can't be cast to the desired output type Int",
    );
    Ok(())
}

#[test]
fn out_variant_refuses_an_out_that_requires_grad_and_leaves_it_alone() -> Result<()> {
    let a = Tensor::from([2f32, 3.]);
    let out = Tensor::from([7f32, 8.]).requires_grad_(true)?;
    assert_err_contains(
        kiln::mul_out(&a, &a, &out),
        "functions with out=... arguments don't support automatic differentiation",
    );
    assert_eq!(out.to_vec::<f32>()?, vec![7., 8.]);
    assert_eq!(out.version(), 0);
    Ok(())
}

#[test]
fn display_pads_floats_to_common_width() {
    // PyTorch: repr(torch.tensor([-1.5, 100.])).
    assert_eq!(
        format!("{}", Tensor::from([-1.5f32, 100.])),
        "tensor([ -1.5000, 100.0000])"
    );
}

#[test]
fn display_uses_scientific_notation_for_wide_ranges() {
    // PyTorch: repr(torch.tensor([1e-5, 1.])).
    assert_eq!(
        format!("{}", Tensor::from([1e-5f32, 1.])),
        "tensor([1.0000e-05, 1.0000e+00])"
    );
}

#[test]
fn as_strided_beyond_storage_errors() {
    assert_err_contains(
        iota(&[4]).as_strided([3, 2], [2, 1]),
        "out of bounds for storage of size 4",
    );
}

#[test]
fn bitwise_not_of_bool_and_uint8() -> Result<()> {
    // PyTorch: ~torch.tensor([True, False]) == [False, True]; ~torch.tensor([0, 5], uint8) == [255, 250].
    assert_eq!(
        Tensor::from(vec![true, false])
            .bitwise_not()?
            .to_vec::<bool>()?,
        vec![false, true]
    );
    let u = Tensor::from(vec![0u8, 5]).bitwise_not()?;
    assert_eq!(u.dtype(), DType::U8);
    assert_eq!(u.to_vec::<u8>()?, vec![255, 250]);
    Ok(())
}

#[test]
fn integer_remainder_and_fmod_by_zero_give_zero() -> Result<()> {
    // Documented difference: PyTorch raises ZeroDivisionError on CPU; kiln never panics.
    let a = Tensor::from(vec![7i64, -7, 7]);
    let b = Tensor::from(vec![0i64, 3, -3]);
    assert_eq!(a.remainder(&b)?.to_vec::<i64>()?, vec![0, 2, -2]);
    assert_eq!(a.fmod(&b)?.to_vec::<i64>()?, vec![0, -1, 1]);
    let m = Tensor::from(vec![i64::MIN]);
    assert_eq!(
        m.remainder(&Tensor::from(vec![-1i64]))?.to_vec::<i64>()?,
        vec![0]
    );
    Ok(())
}

#[test]
fn opmath_composites_keep_promotion_for_mixed_inputs() -> Result<()> {
    // addcmul is computed in float32 for half inputs and rounded back once; with a float32
    // operand the result is float32, as PyTorch promotes.
    let h = Tensor::from(vec![1.0f32, 2.0]).to_dtype(DType::F16)?;
    let f = Tensor::from(vec![0.5f32, 0.25]);
    assert_eq!(kiln::addcmul(&h, &f, &f)?.dtype(), DType::F32);
    let r = kiln::addcmul(&h, &h, &h)?;
    assert_eq!(r.dtype(), DType::F16);
    assert_eq!(r.to_vec::<f32>()?, vec![2.0, 6.0]);
    Ok(())
}

#[test]
fn complete_qr_of_a_tall_matrix() -> Result<()> {
    // Q's columns past n are any orthonormal completion, so check the properties that pin the
    // factorization down: Q orthogonal, Q R = A, R upper triangular with zero rows past n, and
    // the first n columns of Q equal to the reduced Q.
    let a = Tensor::from_vec(
        vec![
            2.0f64, -1.0, 0.5, 1.0, 3.0, 2.0, -2.0, 1.0, 4.0, 0.0, 1.0, -3.0,
        ],
        &[4, 3],
    )?;
    let (q, r) = kiln::linalg_qr_with(&a, "complete")?;
    assert_eq!((q.shape(), r.shape()), (&[4, 4][..], &[4, 3][..]));
    let close = |x: &Tensor, y: &Tensor| -> Result<bool> {
        let (x, y) = (x.to_vec::<f64>()?, y.to_vec::<f64>()?);
        Ok(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 1e-12))
    };
    let eye = Tensor::eye(4, None, DType::F64)?;
    assert!(close(&q.t()?.matmul(&q)?, &eye)?, "QᵀQ = I");
    assert!(close(&q.matmul(&r)?, &a)?, "QR = A");
    let rv = r.to_vec::<f64>()?;
    assert!(rv[9..].iter().all(|&x| x == 0.0), "last row of R is zero");
    assert!(
        [3usize, 6, 7].iter().all(|&i| rv[i] == 0.0),
        "R is upper triangular"
    );
    let (q_reduced, r_reduced) = kiln::linalg_qr(&a)?;
    assert!(close(&q.narrow(1, 0, 3)?.contiguous()?, &q_reduced)?);
    assert!(close(&r.narrow(0, 0, 3)?.contiguous()?, &r_reduced)?);
    // PyTorch: not differentiable for tall inputs in complete mode.
    let x = a.clone_tensor()?.requires_grad_(true)?;
    let (q, _) = kiln::linalg_qr_with(&x, "complete")?;
    let err = q.sum()?.backward().unwrap_err().to_string();
    assert!(
        err.contains("not differentiable when mode='complete' and nrows > ncols"),
        "{err}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Advanced indexing (`index.Tensor`, `index_put`): PyTorch's `x[...]` spelled with a list
// ---------------------------------------------------------------------------------------------

#[test]
fn index_reads_like_pytorch_subscripts() -> Result<()> {
    // x = torch.arange(12.).reshape(3, 4)
    let x = iota(&[3, 4]);
    let cols = Tensor::from(vec![0i64, -1]);
    // x[:, [0, -1]]
    let y = x.index(&[None, Some(&cols)])?;
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(y.to_vec::<f32>()?, vec![0., 3., 4., 7., 8., 11.]);
    // x[[0, 2], [1, 3]]: one element per pair.
    let rows = Tensor::from(vec![0i64, 2]);
    let picks = Tensor::from(vec![1i64, 3]);
    assert_eq!(
        x.index(&[Some(&rows), Some(&picks)])?.to_vec::<f32>()?,
        vec![1., 11.]
    );
    // x[x > 5]
    let mask = x.gt_scalar(5)?;
    assert_eq!(
        x.index(&[Some(&mask)])?.to_vec::<f32>()?,
        vec![6., 7., 8., 9., 10., 11.]
    );
    Ok(())
}

#[test]
fn separated_index_tensors_put_their_dims_first() -> Result<()> {
    // x[i, :, j] with i, j of shape [2] on [3, 4, 5] is [2, 4], not [4, 2] (NumPy's rule).
    let x = iota(&[3, 4, 5]);
    let i = Tensor::from(vec![0i64, 2]);
    let j = Tensor::from(vec![1i64, 4]);
    let y = x.index(&[Some(&i), None, Some(&j)])?;
    assert_eq!(y.shape(), &[2, 4]);
    // y[k, c] = x[i[k], c, j[k]] = 20 i[k] + 5 c + j[k].
    let want: Vec<f32> = [(0., 1.), (2., 4.)]
        .iter()
        .flat_map(|&(a, b)| (0..4).map(move |c| 20. * a + 5. * c as f32 + b))
        .collect();
    assert_eq!(y.to_vec::<f32>()?, want);
    Ok(())
}

#[test]
fn index_put_accumulates_repeated_positions() -> Result<()> {
    let i = Tensor::from(vec![0i64, 0, 2, -1]);
    let ones = Tensor::from(vec![1f32, 1., 1., 1.]);
    let x = Tensor::zeros([3], DType::F32)?;
    // x.index_put_((i,), ones, accumulate=True)
    x.index_put_with_(&[Some(&i)], &ones, true)?;
    assert_eq!(x.to_vec::<f32>()?, vec![2., 0., 2.]);
    // Without accumulate every write lands on its position; x[mask] = 0-d value broadcasts.
    let mask = Tensor::from(vec![true, false, true]);
    x.index_put_(&[Some(&mask)], &Tensor::from(5f32))?;
    assert_eq!(x.to_vec::<f32>()?, vec![5., 0., 5.]);
    Ok(())
}

#[test]
fn index_errors_use_pytorchs_messages() {
    let x = iota(&[3, 4]);
    let five = Tensor::from(vec![5i64]);
    assert_err_contains(
        x.index(&[Some(&five)]),
        "index: index 5 is out of bounds for dimension 0 with size 3",
    );
    let f = Tensor::from(vec![1f32]);
    assert_err_contains(
        x.index(&[Some(&f)]),
        "tensors used as indices must be long, int, byte or bool tensors",
    );
    let v = Tensor::from(vec![1f64; 4]);
    assert_err_contains(
        x.index_put(&[Some(&Tensor::from(vec![0i64]))], &v),
        "Index put requires the source and destination dtypes match, got Float for the destination and Double for the source.",
    );
}

/// Tensors cross `catch_unwind` (and threads): the auto traits hold.
#[test]
fn tensor_is_send_sync_and_unwind_safe() {
    fn check<T: Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
    check::<kiln::Tensor>();
}
