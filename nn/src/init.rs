//! `nn.init`: in-place initialisers with PyTorch's formulas and defaults. Each runs under
//! `no_grad` and returns the tensor, like PyTorch's.

use kiln_core::{no_grad, Error, Result, Tensor};

/// Non-linearities `calculate_gain` knows, with their parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nonlinearity {
    Linear,
    Conv,
    Sigmoid,
    Tanh,
    Relu,
    /// `leaky_relu` with its negative slope (PyTorch's default for kaiming is 0.01 via
    /// `param=None`; `kaiming_uniform_(a=√5)` passes √5).
    LeakyRelu(f64),
    Selu,
}

/// The recommended gain for a non-linearity (`nn.init.calculate_gain`).
pub fn calculate_gain(nl: Nonlinearity) -> f64 {
    match nl {
        Nonlinearity::Linear | Nonlinearity::Conv | Nonlinearity::Sigmoid => 1.0,
        Nonlinearity::Tanh => 5.0 / 3.0,
        Nonlinearity::Relu => 2f64.sqrt(),
        Nonlinearity::LeakyRelu(a) => (2.0 / (1.0 + a * a)).sqrt(),
        Nonlinearity::Selu => 0.75,
    }
}

/// `(fan_in, fan_out)` of a weight `[out, in, *kernel]` (`_calculate_fan_in_and_fan_out`).
pub fn calculate_fan_in_and_fan_out(t: &Tensor) -> Result<(usize, usize)> {
    if t.dim() < 2 {
        return Err(Error::shape(
            "init",
            format!(
                "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got shape {:?})",
                t.shape()
            ),
        ));
    }
    let receptive: usize = t.shape()[2..].iter().product();
    Ok((t.shape()[1] * receptive, t.shape()[0] * receptive))
}

/// Which fan kaiming initialisation scales by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    FanIn,
    FanOut,
}

/// U(a, b) (`nn.init.uniform_`).
pub fn uniform_(t: &Tensor, a: f64, b: f64) -> Result<Tensor> {
    let _g = no_grad();
    t.uniform_(a, b)
}

/// N(mean, std²) (`nn.init.normal_`).
pub fn normal_(t: &Tensor, mean: f64, std: f64) -> Result<Tensor> {
    let _g = no_grad();
    t.normal_(mean, std)
}

/// Fills with `value` (`nn.init.constant_`).
pub fn constant_(t: &Tensor, value: f64) -> Result<Tensor> {
    let _g = no_grad();
    t.fill_(value)
}

/// Fills with zeros (`nn.init.zeros_`).
pub fn zeros_(t: &Tensor) -> Result<Tensor> {
    constant_(t, 0.0)
}

/// Fills with ones (`nn.init.ones_`).
pub fn ones_(t: &Tensor) -> Result<Tensor> {
    constant_(t, 1.0)
}

/// U(-a, a) with a = gain·√(6 / (fan_in + fan_out)) (`nn.init.xavier_uniform_`).
pub fn xavier_uniform_(t: &Tensor, gain: f64) -> Result<Tensor> {
    let (fi, fo) = calculate_fan_in_and_fan_out(t)?;
    let a = gain * (6.0 / (fi + fo) as f64).sqrt();
    uniform_(t, -a, a)
}

/// N(0, std²) with std = gain·√(2 / (fan_in + fan_out)) (`nn.init.xavier_normal_`).
pub fn xavier_normal_(t: &Tensor, gain: f64) -> Result<Tensor> {
    let (fi, fo) = calculate_fan_in_and_fan_out(t)?;
    normal_(t, 0.0, gain * (2.0 / (fi + fo) as f64).sqrt())
}

fn kaiming_std(t: &Tensor, a: f64, mode: FanMode, nl: Nonlinearity) -> Result<f64> {
    let (fi, fo) = calculate_fan_in_and_fan_out(t)?;
    let fan = if mode == FanMode::FanIn { fi } else { fo };
    if fan == 0 {
        return Err(Error::shape(
            "init",
            format!(
                "Initializing zero-element tensors is a no-op (shape {:?})",
                t.shape()
            ),
        ));
    }
    let nl = match nl {
        Nonlinearity::LeakyRelu(_) => Nonlinearity::LeakyRelu(a),
        other => other,
    };
    Ok(calculate_gain(nl) / (fan as f64).sqrt())
}

/// U(-b, b) with b = gain·√(3 / fan) (`nn.init.kaiming_uniform_(a, mode, nonlinearity)`;
/// PyTorch's defaults are `a = 0`, `FanIn`, `LeakyRelu`).
pub fn kaiming_uniform_(t: &Tensor, a: f64, mode: FanMode, nl: Nonlinearity) -> Result<Tensor> {
    if t.numel() == 0 {
        return Ok(t.clone());
    }
    let bound = 3f64.sqrt() * kaiming_std(t, a, mode, nl)?;
    uniform_(t, -bound, bound)
}

/// N(0, std²) with std = gain / √fan (`nn.init.kaiming_normal_`).
pub fn kaiming_normal_(t: &Tensor, a: f64, mode: FanMode, nl: Nonlinearity) -> Result<Tensor> {
    if t.numel() == 0 {
        return Ok(t.clone());
    }
    let std = kaiming_std(t, a, mode, nl)?;
    normal_(t, 0.0, std)
}

/// A (semi-)orthogonal matrix scaled by `gain`, from the QR of a normal sample with R's
/// diagonal signs folded into Q (`nn.init.orthogonal_`); dims past the first are flattened.
pub fn orthogonal_(t: &Tensor, gain: f64) -> Result<Tensor> {
    if t.dim() < 2 {
        return Err(Error::shape(
            "orthogonal_",
            format!(
                "Only tensors with 2 or more dimensions are supported (got shape {:?})",
                t.shape()
            ),
        ));
    }
    if t.numel() == 0 {
        return Ok(t.clone());
    }
    let _g = no_grad();
    let rows = t.shape()[0];
    let cols = t.numel() / rows;
    let flat = Tensor::randn_on([rows, cols], kiln_core::DType::F64, kiln_core::Device::Cpu)?;
    let flat = if rows < cols { flat.t()? } else { flat };
    let (q, r) = kiln_core::linalg_qr(&flat)?;
    // QR's R already has a non-negative diagonal in kiln, so Q is the uniformly distributed
    // factor PyTorch's sign fix produces.
    let _ = r;
    let q = if rows < cols { q.t()? } else { q };
    let q = q
        .mul_scalar(gain)?
        .reshape(t.shape().iter().map(|&s| s as i64).collect::<Vec<_>>())?;
    t.copy_(&q.to_device(t.device())?)
}
