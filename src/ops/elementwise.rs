//! Elementwise ops composed from pointwise kernels (PyTorch's CompositeImplicitAutograd):
//! interpolation, fused multiply-adds, safe logs, the activations `torch.nn.functional`
//! defines in terms of others (softmax among them), and `maximum` / `minimum` / `clamp` with
//! tensors. Autograd and every backend come from the ops they call.

use crate::{DType, Error, Result, Scalar, Tensor};

/// Integer and bool inputs computed in the default float dtype, as PyTorch's float-only
/// unary ops promote them.
fn floating(t: &Tensor) -> Result<Tensor> {
    if t.dtype().is_floating_point() {
        Ok(t.clone())
    } else {
        t.to_dtype(DType::F32)
    }
}

/// A 0-d tensor of `v` with `t`'s dtype and device, to combine without changing its dtype.
fn constant(t: &Tensor, v: f64) -> Result<Tensor> {
    Tensor::full_on((), v, t.dtype(), t.device())
}

fn check_float(op: &str, kernel: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!(
                "\"{kernel}\" not implemented for '{}'",
                t.dtype().scalar_type_name()
            ),
        ))
    }
}

fn check_same_dtype(op: &str, what: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() == b.dtype() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!(
                "expected dtype {} for `{what}` but got dtype {}",
                a.dtype().scalar_type_name().to_lowercase(),
                b.dtype().scalar_type_name().to_lowercase()
            ),
        ))
    }
}

// ---------------------------------------------------------------------------------------
// Interpolation and fused multiply-adds
// ---------------------------------------------------------------------------------------

/// `lerp(end, weight)`: `self + weight * (end - self)`, evaluated from whichever end is
/// nearer (`|weight| < 0.5`) as PyTorch does, so `weight = 1` gives exactly `end`.
pub fn lerp(t: &Tensor, end: &Tensor, weight: Scalar) -> Result<Tensor> {
    check_float("lerp", "lerp_kernel_scalar", t)?;
    check_same_dtype("lerp", "end", t, end)?;
    let w = weight.to::<f64>();
    let diff = end.sub(t)?;
    if w.abs() < 0.5 {
        t.add(&diff.mul_scalar(w)?)
    } else {
        end.sub(&diff.mul_scalar(1.0 - w)?)
    }
}

/// `lerp(end, weight)` with a tensor weight (broadcast with both ends).
pub fn lerp_tensor(t: &Tensor, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
    check_float("lerp", "lerp_kernel_tensor", t)?;
    check_same_dtype("lerp", "end", t, end)?;
    check_same_dtype("lerp", "weight", t, weight)?;
    let diff = end.sub(t)?;
    let near_start = weight.abs()?.lt_scalar(0.5)?;
    let from_start = t.add(&weight.mul(&diff)?)?;
    let from_end = end.sub(&diff.mul(&weight.rsub_one()?)?)?;
    from_start.where_cond(&near_start, &from_end)
}

trait RsubOne {
    fn rsub_one(&self) -> Result<Tensor>;
}

impl RsubOne for Tensor {
    /// `1 - self`.
    fn rsub_one(&self) -> Result<Tensor> {
        self.neg()?.add_scalar(1)
    }
}

/// PyTorch's check that a float multiplier does not scale integer tensors.
fn check_value(op: &str, t: &Tensor, value: Scalar) -> Result<()> {
    if !t.dtype().is_floating_point() && value.is_floating_point() {
        return Err(Error::dtype(
            op,
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    Ok(())
}

/// `addcmul(tensor1, tensor2, value)`: `self + value * tensor1 * tensor2`.
pub fn addcmul(t: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    let p = tensor1.mul(tensor2)?;
    check_value("addcmul", &p, value)?;
    t.add(&p.mul_scalar(value)?)
}

/// `addcdiv(tensor1, tensor2, value)`: `self + value * tensor1 / tensor2` (floating only).
pub fn addcdiv(t: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    if !tensor1.dtype().is_floating_point() && !tensor2.dtype().is_floating_point() {
        return Err(Error::dtype(
            "addcdiv",
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.",
        ));
    }
    t.add(&tensor1.div(tensor2)?.mul_scalar(value)?)
}

// ---------------------------------------------------------------------------------------
// Logs and limits
// ---------------------------------------------------------------------------------------

/// `xlogy(other)`: `self * log(other)`, defined as 0 where `self == 0` (unless `other` is
/// NaN).
pub fn xlogy(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    let (x, y) = (floating(t)?, floating(other)?);
    let prod = x.mul(&y.log()?)?;
    let zero = x.eq_scalar(0)?.logical_and(&y.isnan()?.logical_not()?)?;
    prod.zeros_like()?.where_cond(&zero, &prod)
}

/// `logit(eps)`: `log(p / (1 - p))`, with `p` clamped to `[eps, 1 - eps]` when `eps` is
/// given and not negative. The clamp is ATen's `x < lo ? lo : (x > hi ? hi : x)` (`lo =
/// eps`, `hi = 1 - eps`): the low bound wins when `eps > 0.5` makes `lo > hi`, and the
/// gradient is 0 wherever a bound replaced `x` (`logit_backward`'s `x < lo || x > hi`).
pub fn logit(t: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let x = floating(t)?;
    let p = match eps {
        Some(e) if e >= 0.0 => {
            let (lo, hi) = (constant(&x, e)?, constant(&x, 1.0 - e)?);
            let upper = hi.where_cond(&x.gt_scalar(1.0 - e)?, &x)?;
            lo.where_cond(&x.lt_scalar(e)?, &upper)?
        }
        _ => x,
    };
    p.div(&p.rsub_one()?)?.log()
}

/// `round(decimals)`: `nearbyint(x·10^d) / 10^d`, or `nearbyint(x / 10^-d)·10^-d` for
/// negative `d`, in the compute type (PyTorch's `round_decimals_kernel`).
pub fn round_decimals(t: &Tensor, decimals: i64) -> Result<Tensor> {
    if decimals == 0 {
        return t.round();
    }
    if !t.dtype().is_floating_point() {
        return Err(Error::dtype(
            "round",
            format!(
                "\"round_cpu\" not implemented for '{}'",
                t.dtype().scalar_type_name()
            ),
        ));
    }
    let p = 10f64.powi(decimals.unsigned_abs().min(400) as i32);
    if decimals > 0 {
        t.mul_scalar(p)?.round()?.div_scalar(p)
    } else {
        t.div_scalar(p)?.round()?.mul_scalar(p)
    }
}

/// The largest finite value of a floating dtype.
fn finite_max(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 65504.0,
        DType::BF16 => 3.3895313892515355e38,
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// `nan_to_num(nan, posinf, neginf)`: NaN → `nan` (0), ±inf → `posinf`/`neginf` (the
/// dtype's largest finite values by default). Integers are returned unchanged (a copy).
pub fn nan_to_num(
    t: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    if !t.dtype().is_floating_point() {
        return t.clone_tensor();
    }
    let big = finite_max(t.dtype());
    let fill = |v: f64| constant(t, v);
    let r = fill(nan.unwrap_or(0.0))?.where_cond(&t.isnan()?, t)?;
    let r = fill(posinf.unwrap_or(big))?.where_cond(&t.eq_scalar(f64::INFINITY)?, &r)?;
    fill(neginf.unwrap_or(-big))?.where_cond(&t.eq_scalar(f64::NEG_INFINITY)?, &r)
}

/// `logaddexp2(other)`: `log2(2^self + 2^other)` without overflow.
pub fn logaddexp2(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    check_float("logaddexp2", "logaddexp2_cpu", t)?;
    let ln2 = std::f64::consts::LN_2;
    crate::logaddexp(
        &floating(t)?.mul_scalar(ln2)?,
        &floating(other)?.mul_scalar(ln2)?,
    )?
    .div_scalar(ln2)
}

/// `sinc()`: `sin(πx) / (πx)`, 1 at 0 (with gradient 0 there).
pub fn sinc(t: &Tensor) -> Result<Tensor> {
    let x = floating(t)?;
    let at_zero = x.eq_scalar(0)?;
    let safe = constant(&x, 1.0)?.where_cond(&at_zero, &x)?;
    let px = safe.mul_scalar(std::f64::consts::PI)?;
    let v = px.sin()?.div(&px)?;
    constant(&x, 1.0)?.where_cond(&at_zero, &v)
}

/// `deg2rad()`.
pub fn deg2rad(t: &Tensor) -> Result<Tensor> {
    floating(t)?.mul_scalar(std::f64::consts::PI / 180.0)
}

/// `rad2deg()`.
pub fn rad2deg(t: &Tensor) -> Result<Tensor> {
    floating(t)?.mul_scalar(180.0 / std::f64::consts::PI)
}

// ---------------------------------------------------------------------------------------
// Activations torch.nn.functional composes
// ---------------------------------------------------------------------------------------

/// `prelu(weight)`: `max(0, x) + weight * min(0, x)`, with one weight or one per channel
/// (dim 1; a 1-D input has one channel), as PyTorch's checks define it.
pub fn prelu(t: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let op = "prelu";
    if weight.dim() > 1 {
        return Err(Error::shape(
            op,
            format!(
                "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {}",
                weight.dim()
            ),
        ));
    }
    let n = weight.numel();
    let w = if n == 1 {
        weight.reshape(())?
    } else {
        if t.dim() == 0 {
            return Err(Error::shape(op, "Not allow zero-dim input tensor."));
        }
        let channels = if t.dim() >= 2 { t.shape()[1] } else { 1 };
        if n != channels {
            return Err(Error::shape(
                op,
                format!("Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} and channel size = {channels}."),
            ));
        }
        // Here `t` has at least 2 dims: a 1-D input has one channel and `n != 1`.
        let mut shape = vec![1i64; t.dim()];
        shape[1] = n as i64;
        weight.reshape(&shape)?
    };
    t.where_cond(&t.gt_scalar(0)?, &w.mul(t)?)
}

/// `log_sigmoid()`: `-softplus(-x)`.
pub fn log_sigmoid(t: &Tensor) -> Result<Tensor> {
    check_float("log_sigmoid", "log_sigmoid_forward", t)?;
    crate::softplus(&t.neg()?)?.neg()
}

/// `softsign()`: `x / (1 + |x|)`.
pub fn softsign(t: &Tensor) -> Result<Tensor> {
    let x = floating(t)?;
    x.div(&x.abs()?.add_scalar(1)?)
}

/// `tanhshrink()`: `x - tanh(x)`.
pub fn tanhshrink(t: &Tensor) -> Result<Tensor> {
    let x = floating(t)?;
    x.sub(&x.tanh()?)
}

/// `hardshrink(lambd)`: `x` where `|x| > lambd`, else 0.
pub fn hardshrink(t: &Tensor, lambd: Scalar) -> Result<Tensor> {
    check_float("hardshrink", "hardshrink_cpu", t)?;
    t.where_cond(&t.abs()?.gt_scalar(lambd)?, &t.zeros_like()?)
}

/// `softshrink(lambd)`: `x ∓ lambd` beyond `±lambd`, else 0.
pub fn softshrink(t: &Tensor, lambd: Scalar) -> Result<Tensor> {
    check_float("softshrink", "softshrink_cpu", t)?;
    let l = lambd.to::<f64>();
    if l < 0.0 {
        return Err(Error::value(
            "softshrink",
            format!("lambda must be greater or equal to 0, but found to be {lambd}."),
        ));
    }
    let r = t
        .sub_scalar(l)?
        .where_cond(&t.gt_scalar(l)?, &t.zeros_like()?)?;
    t.add_scalar(l)?.where_cond(&t.lt_scalar(-l)?, &r)
}

/// `threshold(threshold, value)`: `x` where `x > threshold`, else `value`.
pub fn threshold(t: &Tensor, threshold: Scalar, value: Scalar) -> Result<Tensor> {
    t.where_cond(&t.gt_scalar(threshold)?, &t.full_like(value)?)
}

/// `glu(dim)`: `a * sigmoid(b)` for the two halves `a`, `b` of `dim`.
pub fn glu(t: &Tensor, dim: i64) -> Result<Tensor> {
    if t.dim() == 0 {
        return Err(Error::shape(
            "glu",
            "glu does not support scalars because halving size must be even",
        ));
    }
    let d = kiln_kernels::layout::wrap_dim(dim, t.dim()).map_err(|m| Error::op("glu", m))?;
    let n = t.shape()[d] as i64;
    if n % 2 != 0 {
        return Err(Error::shape(
            "glu",
            format!("Halving dimension must be even, but dimension {d} is size {n}"),
        ));
    }
    let a = t.narrow(d as i64, 0, n / 2)?;
    let b = t.narrow(d as i64, n / 2, n / 2)?;
    a.mul(&b.sigmoid()?)
}

/// `softmin(dim, dtype)`: `softmax(-x)`.
pub fn softmin(t: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let x = match dtype {
        Some(d) => t.to_dtype(d)?,
        None => t.clone(),
    };
    x.neg()?.softmax(dim)
}

/// `softmax(dim, dtype)`: optional cast, then `_softmax`.
pub fn softmax(t: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let x = match dtype {
        Some(d) => t.to_dtype(d)?,
        None => t.clone(),
    };
    x._softmax(dim, false)
}

/// `log_softmax(dim, dtype)`: optional cast, then `_log_softmax`.
pub fn log_softmax(t: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let x = match dtype {
        Some(d) => t.to_dtype(d)?,
        None => t.clone(),
    };
    x._log_softmax(dim, false)
}

/// `relu6(x) = hardtanh(x, 0, 6)`, as PyTorch defines it.
pub fn relu6(t: &Tensor) -> Result<Tensor> {
    crate::hardtanh_with(t, 0, 6)
}

/// `selu`: `elu` with the self-normalising constants of Klambauer et al. (2017).
pub fn selu(t: &Tensor) -> Result<Tensor> {
    const ALPHA: f64 = 1.673_263_242_354_377_3;
    const SCALE: f64 = 1.050_700_987_355_480_5;
    crate::elu_with(t, ALPHA, SCALE, 1)
}

/// `celu(x, alpha) = elu(x, alpha, 1, 1 / alpha)`; PyTorch rejects `alpha == 0`.
pub fn celu(t: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let a = alpha.to::<f64>();
    if a == 0.0 {
        return Err(Error::value("celu", "ZeroDivisionError"));
    }
    crate::elu_with(t, alpha, 1, 1.0 / a)
}

/// `div(other, rounding_mode)`: true division, or its quotient rounded toward zero
/// (`"trunc"`) or down (`"floor"`). With a rounding mode, integers stay integers (computed
/// exactly through float64 for magnitudes below 2^53) and a zero integer divisor is
/// PyTorch's ZeroDivisionError.
pub fn div_mode(t: &Tensor, other: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
    let op = "div";
    let Some(mode) = rounding_mode else {
        return t.div(other);
    };
    if mode != "trunc" && mode != "floor" {
        return Err(Error::value(
            op,
            format!("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'"),
        ));
    }
    let result = crate::tensor::promotion::result_type(&[
        crate::tensor::promotion::Operand::Tensor(t),
        crate::tensor::promotion::Operand::Tensor(other),
    ]);
    let round = |q: Tensor| {
        if mode == "trunc" {
            q.trunc()
        } else {
            q.floor()
        }
    };
    if result.is_floating_point() {
        let (a, b) = (t.to_dtype(result)?, other.to_dtype(result)?);
        if matches!(result, DType::F16 | DType::BF16) {
            // PyTorch's CPU kernels: 'trunc' truncates the quotient already rounded to the
            // half dtype (`trunc(a / b)` on half scalars); 'floor' computes
            // `div_floor_floating` in float32 and rounds once.
            if mode == "trunc" {
                return a.div(&b)?.trunc();
            }
            let q = a.to_dtype(DType::F32)?.div(&b.to_dtype(DType::F32)?)?;
            return round(q)?.to_dtype(result);
        }
        return round(a.div(&b)?);
    }
    if other.numel() > 0
        && crate::ops::has_values(other)
        && other.eq_scalar(0)?.any()?.item::<bool>()?
    {
        return Err(Error::value(op, "ZeroDivisionError"));
    }
    let q = t.to_dtype(DType::F64)?.div(&other.to_dtype(DType::F64)?)?;
    round(q)?.to_dtype(result)
}

/// `max(other)`: PyTorch's alias of `maximum`.
pub fn max_other(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::maximum(t, other)
}

/// `min(other)`: PyTorch's alias of `minimum`.
pub fn min_other(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::minimum(t, other)
}

/// `clamp(min, max)` with tensor bounds (broadcast, promoted); a missing bound is no bound.
pub fn clamp_tensor(t: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::value(
            "clamp",
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    let mut r = t.clone();
    if let Some(lo) = min {
        r = r.maximum(lo)?;
    }
    if let Some(hi) = max {
        r = r.minimum(hi)?;
    }
    Ok(r)
}
