//! Special functions the `libm` crate lacks.

/// The inverse error function: Giles' single-precision approximation ("Approximating the
/// erfinv function", GPU Computing Gems, 2011) refined by two Newton steps on `erf` to full
/// double precision. `±1` give `±inf`, values outside `[-1, 1]` give NaN.
pub fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let p = if w < 5.0 {
        let w = w - 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, &c| c + p * w)
    } else {
        let w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, &c| c + p * w)
    };
    let mut x = p * y;
    // Newton on erf(x) = y: the derivative of erf is 2/sqrt(pi) e^{-x^2}.
    let k = 2.0 / std::f64::consts::PI.sqrt();
    for _ in 0..2 {
        let step = (libm::erf(x) - y) / (k * (-x * x).exp());
        if step.is_finite() {
            x -= step;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::erfinv;

    #[test]
    fn inverts_erf() {
        for &x in &[-3.5, -1.2, -0.3, 0.0, 1e-5, 0.7, 2.0, 4.0] {
            let y = libm::erf(x);
            assert!((erfinv(y) - x).abs() < 1e-9 * x.abs().max(1.0), "x = {x}");
        }
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert!(erfinv(1.5).is_nan());
    }
}
