//! Float64 references for the elementwise composites (src/ops/elementwise.rs) and the
//! reductions of src/ops/reducing.rs; maximum/minimum.

use super::{
    broadcast2, correction, grouped, groups, input, keepdim, opt_dims, reduced_mask, variance, wrap,
};
use crate::harness::{ref_pointwise, RefTensor, RefValue, Sample};

fn map1(s: &Sample, f: impl Fn(f64) -> f64) -> Vec<RefTensor> {
    vec![ref_pointwise(&[s.t(0)], |v| RefValue::from(f(v[0])))]
}

fn map2(s: &Sample, f: impl Fn(f64, f64) -> f64) -> Vec<RefTensor> {
    vec![ref_pointwise(&[s.t(0), s.t(1)], |v| {
        RefValue::from(f(v[0], v[1]))
    })]
}

fn map3(s: &Sample, f: impl Fn(f64, f64, f64) -> f64) -> Vec<RefTensor> {
    vec![ref_pointwise(&[s.t(0), s.t(1), s.t(2)], |v| {
        RefValue::from(f(v[0], v[1], v[2]))
    })]
}

fn scalar_arg(s: &Sample, name: &str, default: f64) -> f64 {
    s.scalar(name).map_or(default, |v| v.to::<f64>())
}

pub fn lerp(s: &Sample) -> Vec<RefTensor> {
    let w = scalar_arg(s, "weight", 0.0);
    map2(s, |a, b| a + w * (b - a))
}

pub fn lerp_tensor(s: &Sample) -> Vec<RefTensor> {
    map3(s, |a, b, w| a + w * (b - a))
}

pub fn addcmul(s: &Sample) -> Vec<RefTensor> {
    let v = scalar_arg(s, "value", 1.0);
    map3(s, |a, b, c| a + v * b * c)
}

pub fn addcdiv(s: &Sample) -> Vec<RefTensor> {
    let v = scalar_arg(s, "value", 1.0);
    map3(s, |a, b, c| a + v * b / c)
}

pub fn xlogy(s: &Sample) -> Vec<RefTensor> {
    map2(s, |x, y| {
        if x == 0.0 && !y.is_nan() {
            0.0
        } else {
            x * y.ln()
        }
    })
}

pub fn logit(s: &Sample) -> Vec<RefTensor> {
    let eps = s.float("eps");
    map1(s, |p| {
        // ATen: `x < lo ? lo : (x > hi ? hi : x)`, no clamp for a negative eps.
        let p = match eps {
            Some(e) if e >= 0.0 => {
                if p < e {
                    e
                } else if p > 1.0 - e {
                    1.0 - e
                } else {
                    p
                }
            }
            _ => p,
        };
        (p / (1.0 - p)).ln()
    })
}

pub fn round_decimals(s: &Sample) -> Vec<RefTensor> {
    let d = s.int("decimals").expect("decimals");
    let p = 10f64.powi(d.unsigned_abs() as i32);
    map1(s, |a| {
        if d >= 0 {
            (a * p).round_ties_even() / p
        } else {
            (a / p).round_ties_even() * p
        }
    })
}

pub fn nan_to_num(s: &Sample) -> Vec<RefTensor> {
    let big = match s.t(0).dtype() {
        kiln::DType::F16 => 65504.0,
        kiln::DType::BF16 => 3.3895313892515355e38,
        kiln::DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    };
    let nan = s.float("nan").unwrap_or(0.0);
    let pos = s.float("posinf").unwrap_or(big);
    let neg = s.float("neginf").unwrap_or(-big);
    map1(s, |x| {
        if x.is_nan() {
            nan
        } else if x == f64::INFINITY {
            pos
        } else if x == f64::NEG_INFINITY {
            neg
        } else {
            x
        }
    })
}

pub fn logaddexp2(s: &Sample) -> Vec<RefTensor> {
    map2(s, |a, b| {
        let m = a.max(b);
        m + ((a - m).exp2() + (b - m).exp2()).log2()
    })
}

pub fn sinc(s: &Sample) -> Vec<RefTensor> {
    map1(s, |x| {
        if x == 0.0 {
            1.0
        } else {
            let p = std::f64::consts::PI * x;
            p.sin() / p
        }
    })
}

pub fn deg2rad(s: &Sample) -> Vec<RefTensor> {
    map1(s, f64::to_radians)
}

pub fn rad2deg(s: &Sample) -> Vec<RefTensor> {
    map1(s, f64::to_degrees)
}

pub fn prelu(s: &Sample) -> Vec<RefTensor> {
    let (x, w) = (input(s, 0), input(s, 1));
    let data = (0..x.data.len())
        .map(|i| {
            let v = x.data[i];
            let c = if w.data.len() == 1 {
                0
            } else {
                x.unravel(i)[1]
            };
            if v > 0.0 {
                v
            } else {
                w.data[c] * v
            }
        })
        .collect();
    vec![RefTensor {
        shape: x.shape,
        data,
    }]
}

pub fn log_sigmoid(s: &Sample) -> Vec<RefTensor> {
    // -log(1 + e^-x), arranged not to overflow for large |x|.
    map1(s, |x| x.min(0.0) - (-x.abs()).exp().ln_1p())
}

pub fn softsign(s: &Sample) -> Vec<RefTensor> {
    map1(s, |x| x / (1.0 + x.abs()))
}

pub fn tanhshrink(s: &Sample) -> Vec<RefTensor> {
    map1(s, |x| x - x.tanh())
}

pub fn hardshrink(s: &Sample) -> Vec<RefTensor> {
    let l = scalar_arg(s, "lambd", 0.5);
    map1(s, |x| if x.abs() > l { x } else { 0.0 })
}

pub fn softshrink(s: &Sample) -> Vec<RefTensor> {
    let l = scalar_arg(s, "lambd", 0.5);
    map1(s, |x| {
        if x > l {
            x - l
        } else if x < -l {
            x + l
        } else {
            0.0
        }
    })
}

pub fn threshold(s: &Sample) -> Vec<RefTensor> {
    let (th, v) = (scalar_arg(s, "threshold", 0.0), scalar_arg(s, "value", 0.0));
    map1(s, |x| if x > th { x } else { v })
}

pub fn glu(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(-1), x.shape.len());
    let half = x.shape[d] / 2;
    let mut shape = x.shape.clone();
    shape[d] = half;
    vec![super::tabulate(shape, |ix| {
        let a = super::at(&x, ix);
        let mut j = ix.to_vec();
        j[d] += half;
        let b = super::at(&x, &j);
        a / (1.0 + (-b).exp())
    })]
}

pub fn softmin(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let n = if x.shape.is_empty() { 1 } else { x.shape[d] };
    let frame = x.clone();
    let data = (0..x.data.len())
        .map(|i| {
            let ix = frame.unravel(i);
            let row: Vec<f64> = (0..n)
                .map(|k| {
                    let mut j = ix.clone();
                    if !j.is_empty() {
                        j[d] = k;
                    }
                    -super::at(&x, &j)
                })
                .collect();
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
            (-x.data[i] - m).exp() / z
        })
        .collect();
    vec![RefTensor {
        shape: x.shape,
        data,
    }]
}

// ---------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------

fn dims_arg(s: &Sample) -> Vec<i64> {
    s.ints("dim").map(|d| d.to_vec()).unwrap_or_default()
}

fn max_of(g: &[f64]) -> f64 {
    g.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}

fn min_of(g: &[f64]) -> f64 {
    g.iter().cloned().fold(f64::INFINITY, f64::min)
}

pub fn amax(s: &Sample) -> Vec<RefTensor> {
    grouped(s, &dims_arg(s), max_of)
}

pub fn amin(s: &Sample) -> Vec<RefTensor> {
    grouped(s, &dims_arg(s), min_of)
}

pub fn aminmax(s: &Sample) -> Vec<RefTensor> {
    let dims: Vec<i64> = s.opt_int("dim").flatten().into_iter().collect();
    let mut r = grouped(s, &dims, min_of);
    r.extend(grouped(s, &dims, max_of));
    r
}

pub fn nansum(s: &Sample) -> Vec<RefTensor> {
    grouped(s, &opt_dims(s), |g| g.iter().filter(|v| !v.is_nan()).sum())
}

pub fn nanmean(s: &Sample) -> Vec<RefTensor> {
    grouped(s, &opt_dims(s), |g| {
        let kept: Vec<f64> = g.iter().cloned().filter(|v| !v.is_nan()).collect();
        kept.iter().sum::<f64>() / kept.len() as f64
    })
}

fn nonzeros(g: &[f64]) -> f64 {
    g.iter().filter(|&&v| v != 0.0).count() as f64
}

pub fn count_nonzero_dims(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (shape, gs) = groups(&x, &reduced_mask(&dims_arg(s), x.shape.len()), false);
    vec![RefTensor {
        shape,
        data: gs.iter().map(|g| nonzeros(g)).collect(),
    }]
}

pub fn count_nonzero(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dims: Vec<i64> = s.opt_int("dim").flatten().into_iter().collect();
    let (shape, gs) = groups(&x, &reduced_mask(&dims, x.shape.len()), false);
    vec![RefTensor {
        shape,
        data: gs.iter().map(|g| nonzeros(g)).collect(),
    }]
}

pub fn var_mean(s: &Sample) -> Vec<RefTensor> {
    let c = correction(s);
    let mut r = grouped(s, &opt_dims(s), |g| variance(g, c));
    r.extend(grouped(s, &opt_dims(s), |g| {
        g.iter().sum::<f64>() / g.len() as f64
    }));
    r
}

pub fn std_mean(s: &Sample) -> Vec<RefTensor> {
    let c = correction(s);
    let mut r = grouped(s, &opt_dims(s), |g| variance(g, c).sqrt());
    r.extend(grouped(s, &opt_dims(s), |g| {
        g.iter().sum::<f64>() / g.len() as f64
    }));
    r
}

fn p_norm(g: &[f64], p: f64) -> f64 {
    let a = g.iter().map(|v| v.abs());
    if p == f64::INFINITY {
        a.fold(0.0, f64::max)
    } else if p == f64::NEG_INFINITY {
        a.fold(f64::INFINITY, f64::min)
    } else if p == 0.0 {
        nonzeros(g)
    } else {
        a.map(|v| v.powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

pub fn vector_norm(s: &Sample) -> Vec<RefTensor> {
    let p = s.scalar("ord").map_or(2.0, |v| v.to::<f64>());
    grouped(s, &opt_dims(s), |g| p_norm(g, p))
}

pub fn norm_all(s: &Sample) -> Vec<RefTensor> {
    let p = s.scalar("p").map_or(2.0, |v| v.to::<f64>());
    let _ = keepdim(s);
    grouped(s, &[], |g| p_norm(g, p))
}

pub fn norm_dim(s: &Sample) -> Vec<RefTensor> {
    let p = s.opt_scalar("p").flatten().map_or(2.0, |v| v.to::<f64>());
    grouped(s, &dims_arg(s), |g| p_norm(g, p))
}

pub fn div_mode(s: &Sample) -> Vec<RefTensor> {
    let mode = s.string("rounding_mode");
    map2(s, |a, b| match mode {
        Some("trunc") => (a / b).trunc(),
        Some("floor") => (a / b).floor(),
        _ => a / b,
    })
}

/// max(other): the larger element, NaN if either is NaN.
pub fn max_other(s: &Sample) -> Vec<RefTensor> {
    broadcast2(s, |a, b| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    })
}

pub fn min_other(s: &Sample) -> Vec<RefTensor> {
    broadcast2(s, |a, b| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.min(b)
        }
    })
}
